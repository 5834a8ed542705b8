"""Argument binding of a kernel call: fn(grid, *args) (DESIGN.md §2)."""

from __future__ import annotations

import array
import ctypes
import struct

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import metalcall as mc
from mctest import GOOD_SRC, check_usable, with_sandbox_device


device = with_sandbox_device()  # these tests run on Device("cpu", sandbox=True) too

# One kernel per scalar type: out[i] = v, where v is a `constant T&`.
SCALAR_TYPES = {
    "bool": np.bool_,
    "char": np.int8,
    "uchar": np.uint8,
    "short": np.int16,
    "ushort": np.uint16,
    "int": np.int32,
    "uint": np.uint32,
    "long": np.int64,
    "ulong": np.uint64,
    "half": np.float16,
    "float": np.float32,
}
SCALARS_SRC = "#include <metal_stdlib>\nusing namespace metal;\n" + "\n".join(
    f"kernel void s_{t}(constant {t}& v [[buffer(0)]], device {t}* out [[buffer(1)]],\n"
    f"                  uint i [[thread_position_in_grid]]) {{ out[i] = v; }}"
    for t in SCALAR_TYPES
)

STRUCT_SRC = """
#include <metal_stdlib>
using namespace metal;
struct Params {
    float scale;
    int offset;
    uint count;
    float bias;
};
kernel void use_struct(constant Params& p [[buffer(0)]], device float* out [[buffer(1)]],
                       uint i [[thread_position_in_grid]]) {
    out[i] = p.scale * float(i) + float(p.offset) + p.bias + float(p.count) * 1000.0f;
}
// The same struct through a pointer: one Params per thread.
kernel void use_struct_array(const device Params* ps [[buffer(0)]], device float* out [[buffer(1)]],
                             uint i [[thread_position_in_grid]]) {
    out[i] = ps[i].scale * float(ps[i].offset) + ps[i].bias - float(ps[i].count);
}
"""
PARAMS_DTYPE = np.dtype([("scale", "<f4"), ("offset", "<i4"), ("count", "<u4"), ("bias", "<f4")])


class ParamsC(ctypes.Structure):
    _fields_ = [("scale", ctypes.c_float), ("offset", ctypes.c_int32), ("count", ctypes.c_uint32), ("bias", ctypes.c_float)]


class ParamsShortC(ctypes.Structure):
    _fields_ = [("scale", ctypes.c_float), ("offset", ctypes.c_int32), ("count", ctypes.c_uint32)]


def struct_expected(n, scale, offset, count, bias):
    i = np.arange(n, dtype=np.float32)
    return np.float32(scale) * i + np.float32(offset) + np.float32(bias) + np.float32(count) * np.float32(1000)


# Many parameters: more than the CPU backend's 16 inline argument slots.
MANY_N = 18
MANY_SRC = (
    "kernel void many("
    + ", ".join(f"const device float* a{k} [[buffer({k})]]" for k in range(MANY_N))
    + f", device float* out [[buffer({MANY_N})]], uint i [[thread_position_in_grid]]) {{\n"
    + "    out[i] = " + " + ".join(f"a{k}[i] * {k + 1}.0f" for k in range(MANY_N)) + ";\n}\n"
)

# Parameters declared out of [[buffer(i)]] order bind by index, not by position.
ORDER_SRC = """
kernel void ordered(device float* out [[buffer(2)]], const device float* a [[buffer(0)]],
                    uint i [[thread_position_in_grid]], constant float& k [[buffer(1)]]) {
    out[i] = a[i] * k;
}
"""


# ---- buffers of every kind ----------------------------------------------------------


def test_numpy_arrays_are_used_in_place(device):
    lib = device.compile(GOOD_SRC)
    x = np.arange(1000, dtype=np.float32)
    expected = x * 2 + 1
    lib.twice_plus_one(len(x), x)  # writes into x
    np.testing.assert_array_equal(x, expected)


def test_numpy_2d_array_is_flat_memory(device):
    lib = device.compile(GOOD_SRC)
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    c = np.zeros((3, 4), np.float32)
    lib.mul(12, a, a, c)
    np.testing.assert_array_equal(c, a * a)


def test_mc_buffer_arguments(device):
    lib = device.compile(GOOD_SRC)
    a = device.asarray(np.arange(64, dtype=np.float32))
    b = device.asarray(np.full(64, 0.5, dtype=np.float32))
    c = device.empty(64, np.float32)
    lib.mul(64, a, b, c)
    np.testing.assert_array_equal(np.asarray(c), np.arange(64, dtype=np.float32) * 0.5)


def test_array_array_bytearray_memoryview(device):
    lib = device.compile(GOOD_SRC)
    n = 10
    a = array.array("f", range(n))
    b = bytearray(np.full(n, 2.0, np.float32).tobytes())
    out = bytearray(4 * n)
    lib.mul(n, a, b, out)
    np.testing.assert_array_equal(np.frombuffer(out, np.float32), np.arange(n) * 2.0)

    # memoryview in and out; the output memoryview writes into its bytearray.
    backing = bytearray(4 * n)
    lib.mul(n, memoryview(a), memoryview(b), memoryview(backing).cast("f"))
    np.testing.assert_array_equal(np.frombuffer(backing, np.float32), np.arange(n) * 2.0)

    # array.array as output.
    c = array.array("f", [0.0] * n)
    lib.mul(n, a, a, c)
    assert list(c) == [float(i * i) for i in range(n)]


def test_ctypes_array_argument(device):
    lib = device.compile(GOOD_SRC)
    a = (ctypes.c_float * 6)(*range(6))
    c = (ctypes.c_float * 6)()
    lib.mul(6, a, a, c)
    assert list(c) == [float(i * i) for i in range(6)]


def test_bytes_are_fine_for_const_params(device):
    lib = device.compile(GOOD_SRC)
    a = np.arange(8, dtype=np.float32)
    c = np.zeros(8, np.float32)
    lib.mul(8, a.tobytes(), bytes(np.full(8, 3.0, np.float32).tobytes()), c)
    np.testing.assert_array_equal(c, a * 3)


@pytest.mark.parametrize(
    "make_ro",
    [
        lambda n: bytes(4 * n),
        lambda n: np.frombuffer(bytes(4 * n), np.float32),
        lambda n: memoryview(bytes(4 * n)),
    ],
    ids=["bytes", "readonly-ndarray", "readonly-memoryview"],
)
def test_read_only_object_for_written_param_is_argument_error(device, make_ro):
    lib = device.compile(GOOD_SRC)
    a = np.arange(8, dtype=np.float32)
    with pytest.raises(mc.ArgumentError, match="read-only"):
        lib.mul(8, a, a, make_ro(8))
    check_usable(device)


def test_read_only_numpy_array_for_const_param(device):
    lib = device.compile(GOOD_SRC)
    a = np.arange(8, dtype=np.float32)
    a.flags.writeable = False
    c = np.zeros(8, np.float32)
    lib.mul(8, a, a, c)
    np.testing.assert_array_equal(c, a * a)


def test_raw_uint8_view_is_accepted(device):
    lib = device.compile(GOOD_SRC)
    a = np.arange(16, dtype=np.float32)
    c = np.zeros(16, np.float32)
    lib.mul(16, a.view(np.uint8), a, c.view(np.uint8))
    np.testing.assert_array_equal(c, a * a)


@pytest.mark.parametrize(
    "dtype",
    [
        np.float64,
        np.float16,
        np.int32,
        np.uint32,
        np.int64,
        np.bool_,
        np.int8,
        ">f4",
    ],
    ids=lambda d: np.dtype(d).str,
)
def test_wrong_element_type_is_argument_error(device, dtype):
    lib = device.compile(GOOD_SRC)
    a = np.arange(16).astype(dtype)
    c = np.zeros(16, np.float32)
    with pytest.raises(mc.ArgumentError) as info:
        lib.mul(16, a, np.ones(16, np.float32), c)
    assert "'a'" in str(info.value)
    check_usable(device)


@pytest.mark.parametrize(
    "make",
    [lambda: np.array([1.0, 2.0, None] * 4, dtype=object), lambda: np.zeros(4, [("a", "<f4"), ("o", object)])],
    ids=["object", "struct-with-object"],
)
def test_object_arrays_are_argument_errors(device, make):
    lib = device.compile(GOOD_SRC)
    with pytest.raises(mc.ArgumentError, match="object"):
        lib.mul(4, make(), np.ones(4, np.float32), np.zeros(4, np.float32))
    check_usable(device)


def test_numpy_array_subclasses_and_views(device):
    lib = device.compile(GOOD_SRC)
    base = np.arange(40, dtype=np.float32)
    out = np.zeros(40, np.float32)
    lib.mul(10, base[10:20], base[20:30], out[5:15])  # contiguous views with offsets
    np.testing.assert_array_equal(out[5:15], base[10:20] * base[20:30])
    assert not out[:5].any() and not out[15:].any()
    class Sub(np.ndarray):
        pass

    m = (np.ones((2, 5), np.float32) * 3).view(Sub)
    out2 = np.zeros(10, np.float32)
    lib.mul(10, m, m, out2)
    np.testing.assert_array_equal(out2, 9.0)


def test_typed_buffer_of_wrong_element_type_is_argument_error(device):
    lib = device.compile(GOOD_SRC)
    a = device.asarray(np.arange(8, dtype=np.float64))
    c = device.empty(8, np.float32)
    with pytest.raises(mc.ArgumentError):
        lib.mul(8, a, a, c)


def test_uint8_buffer_is_raw_bytes_for_any_type(device):
    lib = device.compile(GOOD_SRC)
    a = device.buffer(np.arange(8, dtype=np.float32))  # dev.buffer(data): uint8
    c = device.buffer(32)
    lib.mul(8, a, a, c)
    np.testing.assert_array_equal(np.asarray(c).view(np.float32), np.arange(8, dtype=np.float32) ** 2)


def test_wrong_element_type_for_uint_buffer(device):
    lib = device.compile(GOOD_SRC)
    with pytest.raises(mc.ArgumentError, match="uint32"):
        lib.inc_u32(4, np.arange(4, dtype=np.int32), np.zeros(4, np.uint32))
    with pytest.raises(mc.ArgumentError):
        lib.inc_u32(4, np.arange(4, dtype=np.uint32), np.zeros(4, np.float32))
    out = np.zeros(4, np.uint32)
    lib.inc_u32(4, np.arange(4, dtype=np.uint32), out)
    np.testing.assert_array_equal(out, [1, 2, 3, 4])


@pytest.mark.parametrize(
    "small",
    [lambda: np.zeros(0, np.float32), lambda: bytearray(3), lambda: np.zeros(3, np.uint8)],
    ids=["empty-array", "bytearray3", "uint8x3"],
)
def test_buffer_smaller_than_one_element(device, small):
    lib = device.compile(GOOD_SRC)
    with pytest.raises(mc.ArgumentError, match="at least one element"):
        lib.mul(1, small(), np.ones(1, np.float32), np.zeros(1, np.float32))
    with pytest.raises(mc.ArgumentError, match="at least one element"):
        lib.mul(1, device.buffer(2), np.ones(1, np.float32), np.zeros(1, np.float32))
    check_usable(device)


def test_misaligned_data_is_copied(device):
    """Host memory not aligned to its element type runs from an aligned copy (test_misaligned_host.py)."""
    lib = device.compile(GOOD_SRC)
    raw = bytearray(4 * 10 + 1)
    a = np.frombuffer(raw, dtype=np.float32, count=10, offset=1)
    assert a.ctypes.data % 4 != 0
    out = np.zeros(10, np.float32)
    lib.mul(10, a, np.ones(10, np.float32), out)
    np.testing.assert_array_equal(out, np.zeros(10, np.float32))
    out = np.frombuffer(bytearray(41), dtype=np.float32, count=10, offset=1)
    lib.mul(10, np.full(10, 2, np.float32), np.full(10, 3, np.float32), out)
    np.testing.assert_array_equal(out, np.full(10, 6, np.float32))
    check_usable(device)


@pytest.mark.parametrize(
    "make",
    [
        lambda: np.arange(20, dtype=np.float32)[::2],
        lambda: np.asfortranarray(np.ones((2, 5), np.float32)),
        lambda: np.ones((5, 4), np.float32)[:, :2],
        lambda: memoryview(np.arange(20, dtype=np.float32))[::2],
    ],
    ids=["strided", "fortran", "sliced-2d", "strided-memoryview"],
)
def test_non_contiguous_is_argument_error(device, make):
    lib = device.compile(GOOD_SRC)
    with pytest.raises(mc.ArgumentError, match="contiguous"):
        lib.mul(10, make(), np.ones(10, np.float32), np.zeros(10, np.float32))
    check_usable(device)


@pytest.mark.parametrize(
    "bad", [None, "abc", [1.0, 2.0], (1.0,), {"a": 1}, object()], ids=["None", "str", "list", "tuple", "dict", "object"]
)
def test_unsupported_python_objects(device, bad):
    lib = device.compile(GOOD_SRC)
    with pytest.raises(mc.ArgumentError, match="argument 0"):
        lib.mul(4, bad, np.ones(4, np.float32), np.zeros(4, np.float32))
    check_usable(device)


def test_scalar_for_pointer_param_is_argument_error(device):
    lib = device.compile(GOOD_SRC)
    for scalar in (1.0, 3, np.float32(2)):
        with pytest.raises(mc.ArgumentError, match="pointer"):
            lib.mul(4, scalar, np.ones(4, np.float32), np.zeros(4, np.float32))
    check_usable(device)


# ---- argument count --------------------------------------------------------------------


@pytest.mark.parametrize("count", [0, 1, 2, 4, 5])
def test_wrong_argument_count_names_the_parameters(device, count):
    lib = device.compile(GOOD_SRC)
    args = [np.ones(4, np.float32) for _ in range(count)]
    with pytest.raises(mc.ArgumentError) as info:
        lib.mul(4, *args)
    msg = str(info.value)
    assert "mul" in msg and "3" in msg and str(count) in msg
    for name in ("a:", "b:", "c:"):
        assert name in msg
    check_usable(device)


def test_no_grid_is_argument_error(device):
    lib = device.compile(GOOD_SRC)
    with pytest.raises(mc.ArgumentError, match="grid"):
        lib.mul()
    check_usable(device)


def test_unknown_keyword_is_argument_error(device):
    lib = device.compile(GOOD_SRC)
    a = np.ones(4, np.float32)
    with pytest.raises(mc.ArgumentError, match="threads"):
        lib.mul(4, a, a, a.copy(), threads=4)
    check_usable(device)


def test_vectorcall_and_tp_call_bind_alike(device):
    # A plain call goes through the Kernel's vectorcall; Kernel.__call__ (the slot wrapper) and
    # functools.partial with keywords go through tp_call or a keyword dict: same binding, same errors.
    import functools

    k = device.compile(GOOD_SRC).mul
    a = device.asarray(np.arange(64, dtype=np.float32))
    b = device.asarray(np.full(64, 0.5, dtype=np.float32))
    want = np.arange(64, dtype=np.float32) * 0.5
    calls = [lambda c: k(64, a, b, c, threadgroup=8),
             lambda c: type(k).__call__(k, 64, a, b, c, threadgroup=(8, 1, 1)),
             lambda c: functools.partial(k, 64, a)(b, c, threadgroup=[4]),
             lambda c: k(*(64, a, b, c), **{"threadgroup": 16})]
    for call in calls:
        c = device.zeros(64, np.float32)
        call(c).wait()
        np.testing.assert_array_equal(np.asarray(c), want)
    for call in (lambda: k(64, a, b, a, threads=4), lambda: type(k).__call__(k, 64, a, b, a, threads=4)):
        with pytest.raises(mc.ArgumentError, match="unknown keyword argument 'threads'"):
            call()
    with pytest.raises(mc.ArgumentError, match="grid"):
        type(k).__call__(k)
    check_usable(device)


def test_bind_by_buffer_index_not_declaration_order(device):
    k = device.compile(ORDER_SRC).ordered
    a = np.arange(10, dtype=np.float32)
    out = np.zeros(10, np.float32)
    k(10, a, 3.0, out)  # [[buffer(0)]], [[buffer(1)]], [[buffer(2)]]
    np.testing.assert_array_equal(out, a * 3)


def test_more_than_sixteen_arguments(device):
    k = device.compile(MANY_SRC).many
    n = 100
    inputs = [np.full(n, k_ + 0.5, np.float32) for k_ in range(MANY_N)]
    out = np.zeros(n, np.float32)
    k(n, *inputs, out)
    expected = sum(np.float64(k_ + 0.5) * (k_ + 1) for k_ in range(MANY_N))
    np.testing.assert_allclose(out, expected, rtol=1e-6)


# ---- scalars packed to constant T& ---------------------------------------------------------

SCALAR_CASES = [
    ("bool", True),
    ("bool", False),
    ("bool", 1),
    ("bool", 0),
    ("bool", np.bool_(True)),
    ("char", -128),
    ("char", 127),
    ("char", np.int8(-5)),
    ("uchar", 0),
    ("uchar", 255),
    ("uchar", np.uint8(200)),
    ("uchar", np.int64(17)),
    ("short", -32768),
    ("short", 32767),
    ("short", np.int16(-1234)),
    ("ushort", 65535),
    ("ushort", np.uint16(40000)),
    ("int", -(2**31)),
    ("int", 2**31 - 1),
    ("int", np.int32(-7)),
    ("uint", 2**32 - 1),
    ("uint", 0),
    ("uint", np.uint32(3_000_000_000)),
    ("uint", np.int64(12)),
    ("uint", True),
    ("long", -(2**63)),
    ("long", 2**63 - 1),
    ("long", np.int64(-(2**40))),
    ("ulong", 2**64 - 1),
    ("ulong", np.uint64(2**63 + 5)),
    ("half", 1.5),
    ("half", 0.1),
    ("half", -65504.0),
    ("half", 3),
    ("half", np.float16(0.333)),
    ("half", np.float32(2.25)),
    ("float", 0.1),
    ("float", -3.4e38),
    ("float", float(np.finfo(np.float32).max)),
    ("float", 7),
    ("float", np.float32(1.2345678)),
    ("float", np.float64(0.1)),
    ("float", np.int16(-3)),
    ("float", float("inf")),
    ("float", float("-inf")),
]


@pytest.mark.parametrize("type_name,value", SCALAR_CASES, ids=lambda v: repr(v)[:24])
def test_scalar_packing_is_exact(device, type_name, value):
    dtype = SCALAR_TYPES[type_name]
    k = device.compile(SCALARS_SRC).function(f"s_{type_name}")
    out = np.zeros(3, dtype)
    k(3, value, out)
    if dtype in (np.float16,):
        expected = np.float16(np.float32(value))
    else:
        expected = dtype(value)
    assert out.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(out, np.full(3, expected, dtype))


def test_float_literal_that_rounds_to_flt_max(device):
    out = np.zeros(1, np.float32)
    device.compile(SCALARS_SRC).s_float(1, 3.4028235e38, out)
    assert out[0] == np.finfo(np.float32).max


def test_nan_is_packed(device):
    out = np.zeros(2, np.float32)
    device.compile(SCALARS_SRC).s_float(2, float("nan"), out)
    assert np.isnan(out).all()


@given(st.integers(min_value=-(2**31), max_value=2**31 - 1), st.integers(min_value=0, max_value=2**32 - 1))
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_int_packing_roundtrip_hypothesis(cpu_device, i, u):
    lib = cpu_device.compile(SCALARS_SRC)
    out_i = np.zeros(1, np.int32)
    out_u = np.zeros(1, np.uint32)
    lib.s_int(1, i, out_i)
    lib.s_uint(1, u, out_u)
    assert int(out_i[0]) == i and int(out_u[0]) == u


@given(st.floats(width=32, allow_nan=False))
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_float_packing_roundtrip_hypothesis(cpu_device, f):
    out = np.zeros(1, np.float32)
    cpu_device.compile(SCALARS_SRC).s_float(1, f, out)
    assert out[0] == np.float32(f)


BAD_SCALARS = [
    ("uchar", 300, "does not fit"),
    ("uchar", -1, "does not fit"),
    ("char", 128, "does not fit"),
    ("char", -129, "does not fit"),
    ("short", 40000, "does not fit"),
    ("ushort", 65536, "does not fit"),
    ("int", 2**31, "does not fit"),
    ("uint", -1, "does not fit"),
    ("uint", 2**32, "does not fit"),
    ("long", 2**63, "does not fit"),
    ("ulong", -1, "does not fit"),
    ("ulong", 2**64, "64 bits"),
    ("int", -(2**70), "64 bits"),
    ("uint", np.uint64(2**40), "does not fit"),
    ("uchar", np.int16(-3), "does not fit"),
    ("uint", 1.0, "floating"),
    ("uint", 2.5, "floating"),
    ("int", np.float32(1.0), "floating"),
    ("bool", 2, "bool"),
    ("bool", 0.0, "floating"),
    ("half", 1e5, "range of half"),
    ("half", True, "bool"),
    ("float", 1e39, "range of float"),
    ("float", np.array([1.0]), "4 bytes"),  # float64 array of one element: 8 bytes
    ("int", np.complex64(1), "4 bytes"),
    ("uint", np.array([7], np.int32), "int"),
]


@pytest.mark.parametrize("type_name,value,message", BAD_SCALARS, ids=lambda v: repr(v)[:24])
def test_bad_scalars_are_argument_errors(device, type_name, value, message):
    k = device.compile(SCALARS_SRC).function(f"s_{type_name}")
    out = np.zeros(1, SCALAR_TYPES[type_name])
    with pytest.raises(mc.ArgumentError, match=message):
        k(1, value, out)
    assert out[0] == 0, "a rejected call must not run"
    check_usable(device)


def test_scalar_from_buffer_and_one_element_array(device):
    k = device.compile(GOOD_SRC).add_scalar
    a = np.arange(5, dtype=np.float32)
    out = np.zeros(5, np.float32)
    k(5, a, np.array([10.0], np.float32), out)
    np.testing.assert_array_equal(out, a + 10)
    s = device.asarray(np.array([-2.5], np.float32))
    k(5, a, s, out)  # a Buffer may back a constant T&
    np.testing.assert_array_equal(out, a - 2.5)


# ---- structs ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "make",
    [
        lambda: np.array((2.0, 3, 1, 0.5), dtype=PARAMS_DTYPE)[()],  # structured scalar (np.void)
        lambda: np.array((2.0, 3, 1, 0.5), dtype=PARAMS_DTYPE),  # 0-d structured array
        lambda: struct.pack("<fiIf", 2.0, 3, 1, 0.5),
        lambda: bytearray(struct.pack("<fiIf", 2.0, 3, 1, 0.5)),
        lambda: ParamsC(2.0, 3, 1, 0.5),
    ],
    ids=["np.void", "np-0d", "bytes", "bytearray", "ctypes"],
)
def test_struct_argument(device, make):
    k = device.compile(STRUCT_SRC).use_struct
    out = np.zeros(8, np.float32)
    k(8, make(), out)
    np.testing.assert_array_equal(out, struct_expected(8, 2.0, 3, 1, 0.5))


@pytest.mark.parametrize(
    "make",
    [
        lambda: struct.pack("<fiI", 2.0, 3, 1),
        lambda: ParamsShortC(2.0, 3, 1),
        lambda: bytes(20),
        lambda: np.zeros(2, PARAMS_DTYPE),
        lambda: 5,
        lambda: 2.0,
    ],
    ids=["bytes12", "ctypes12", "bytes20", "two-structs", "int", "float"],
)
def test_struct_of_wrong_size_is_argument_error(device, make):
    k = device.compile(STRUCT_SRC).use_struct
    out = np.zeros(4, np.float32)
    with pytest.raises(mc.ArgumentError, match="16 bytes"):
        k(4, make(), out)
    assert not out.any()
    check_usable(device)


def test_struct_array_through_pointer(device):
    k = device.compile(STRUCT_SRC).use_struct_array
    n = 50
    ps = np.zeros(n, PARAMS_DTYPE)
    ps["scale"] = np.linspace(0, 1, n)
    ps["offset"] = np.arange(n) - 10
    ps["count"] = np.arange(n) * 3
    ps["bias"] = 0.25
    out = np.zeros(n, np.float32)
    k(n, ps, out)
    expected = ps["scale"] * ps["offset"].astype(np.float32) + ps["bias"] - ps["count"].astype(np.float32)
    np.testing.assert_allclose(out, expected, rtol=1e-6)
