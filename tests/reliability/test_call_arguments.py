"""Calls that used to be accepted wrongly or to fail with the wrong error (P1.5 item 5):
element types match exactly, grids are checked without overflow, every bad argument is an
mc.Error naming what was wrong, sources are str or UTF-8 bytes."""

from __future__ import annotations

import numpy as np
import pytest

import metalcall as mc

SRC = """
#include <metal_stdlib>
using namespace metal;
struct Pair { float a; int b; };
kernel void scale(const device float* x [[buffer(0)]], device float* y [[buffer(1)]],
                  constant float& k [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    y[i] = x[i] * k;
}
kernel void pairs(const device Pair* p [[buffer(0)]], device float* y [[buffer(1)]],
                  uint i [[thread_position_in_grid]]) {
    y[i] = p[i].a + float(p[i].b);
}
kernel void shared(device float* y [[buffer(0)]], threadgroup float* t [[threadgroup(0)]],
                   uint i [[thread_position_in_grid]], uint l [[thread_position_in_threadgroup]]) {
    t[l] = float(l);
    y[i] = t[l];
}
"""

PAIR = np.dtype([("a", np.float32), ("b", np.int32)])

FOREIGN = [np.complex64, np.complex128, np.longdouble, "datetime64[ns]", "timedelta64[ms]", "U1", "S4", "V4", PAIR]


def test_argument_error_is_type_and_value_error():
    assert issubclass(mc.ArgumentError, mc.Error)
    assert issubclass(mc.ArgumentError, TypeError)
    assert issubclass(mc.ArgumentError, ValueError)


@pytest.mark.parametrize("dtype", FOREIGN, ids=[str(np.dtype(d)) for d in FOREIGN])
def test_foreign_element_types_are_refused_for_typed_pointers(device, dtype):
    lib = device.compile(SRC)
    if np.dtype(dtype) == np.longdouble and np.dtype(np.longdouble).itemsize == 8:
        pytest.skip("long double is double on this platform")
    x = np.zeros(8 * 16 // np.dtype(dtype).itemsize or 8, dtype)
    y = np.zeros(8, np.float32)
    with pytest.raises(mc.ArgumentError, match=r"kernel 'scale' argument 0 'x'.*elements") as info:
        lib.scale(1, x, y, 1.0)
    assert "float" in str(info.value)
    # As a Buffer too (datetimes cannot be Buffers: no buffer-protocol format).
    if np.dtype(dtype).kind in "Mm":
        with pytest.raises(mc.ArgumentError, match="buffers cannot hold"):
            device.asarray(x)
    else:
        with pytest.raises(mc.ArgumentError, match="argument 0 'x'"):
            lib.scale(1, device.asarray(x), y, 1.0)
    # Raw bytes still bind anywhere.
    lib.scale(1, x.view(np.uint8), y, 1.0)


def test_structured_dtype_binds_to_a_struct_pointer(device):
    lib = device.compile(SRC)
    p = np.zeros(4, PAIR)
    p["a"] = [1, 2, 3, 4]
    p["b"] = [10, 20, 30, 40]
    y = np.zeros(4, np.float32)
    lib.pairs(4, p, y)
    np.testing.assert_array_equal(y, [11, 22, 33, 44])
    with pytest.raises(mc.ArgumentError, match="argument 1 'y'"):
        lib.pairs(4, p, np.zeros(4, PAIR))
    if device.backend != "metal":  # the front end knows sizeof(Pair); Metal's reflection may not
        wrong = np.zeros(4, [("a", np.float32), ("b", np.int32), ("c", np.int32)])
        with pytest.raises(mc.ArgumentError, match="12 bytes but Pair is 8 bytes"):
            lib.pairs(4, wrong, y)
        lib.pairs(4, np.zeros(4, np.complex64), y)  # 8-byte elements: same size, reinterpreted as documented


def test_foreign_buffer_protocol_formats_are_refused(cpu_device):
    lib = cpu_device.compile(SRC)
    y = np.zeros(8, np.float32)
    complex_view = memoryview(np.zeros(8, np.complex64))  # format 'Zf'
    with pytest.raises(mc.ArgumentError, match="format 'Zf'"):
        lib.scale(1, complex_view, y, 1.0)


@pytest.mark.parametrize(
    "grid,pattern",
    [
        ((2**32 - 1, 2**21, 2**21), "2\\^48"),
        ((2**32 - 1,) * 3, "2\\^48"),
        ((2**24, 2**24, 2), "2\\^48"),
        (2**32, "2\\^32-1"),
        (2**100, "2\\^32-1"),
        ((4, 2**32), "dimension 1"),
        (-1, "negative"),
        ((4, -1), "negative"),
        (1.5, "got float"),
        ("8", "got str"),
        (None, "got NoneType"),
        ((), "1 to 3"),
    ],
)
def test_grids_are_checked_without_overflow(device, grid, pattern):
    lib = device.compile(SRC)
    x = np.zeros(8, np.float32)
    with pytest.raises(mc.ArgumentError, match=pattern) as info:
        lib.scale(grid, x, x.copy(), 1.0)
    assert "kernel 'scale'" in str(info.value)


def test_grid_near_2_32_runs_every_thread_on_the_cpu(cpu_device):
    # A threadgroup that does not divide 2^32-1: the group count used to wrap to zero.
    lib = cpu_device.compile("""
    #include <metal_stdlib>
    using namespace metal;
    kernel void last(device atomic_uint* n [[buffer(0)]], uint i [[thread_position_in_grid]]) {
        if (i >= 4294967290u) atomic_fetch_add_explicit(n, 1u, memory_order_relaxed);
    }""")
    n = np.zeros(1, np.uint32)
    lib.last((2**32 - 1, 1), n, threadgroup=1000)
    assert n[0] == 5


@pytest.mark.parametrize(
    "options,pattern",
    [
        ({"threadgroup_memory": 1.5}, "threadgroup_memory.*got float"),
        ({"threadgroup_memory": "16"}, "threadgroup_memory.*got str"),
        ({"threadgroup_memory": [16, 1.5]}, r"threadgroup_memory\[1\]"),
        ({"threadgroup_memory": [-16]}, "negative"),
        ({"threadgroup_memory": [2**70]}, "threadgroup_memory"),
        ({"threadgroup": 1.5}, "threadgroup.*got float"),
        ({"threadgroup": (0, 1)}, "threadgroup"),
        ({"threadgroup": 2**40}, "threadgroup"),
    ],
)
def test_bad_options_name_themselves(cpu_device, options, pattern):
    lib = cpu_device.compile(SRC)
    with pytest.raises(mc.ArgumentError, match=pattern) as info:
        lib.shared(16, np.zeros(16, np.float32), **options)
    assert "kernel 'shared'" in str(info.value)


def test_range_errors_name_the_argument_and_stay_short(cpu_device):
    lib = cpu_device.compile(SRC)
    x = np.zeros(8, np.float32)
    with pytest.raises(mc.ArgumentError) as info:
        lib.scale(8, x, x.copy(), 1e300)
    message = str(info.value)
    assert "kernel 'scale'" in message and "'k'" in message and "1e+300" in message
    assert len(message) < 300
    with pytest.raises(mc.ArgumentError) as info:
        lib.scale(8, x, x.copy(), 10**400)
    assert "'k'" in str(info.value) and len(str(info.value)) < 300
    with pytest.raises(mc.ArgumentError, match="argument 2 'k'"):
        lib.scale(8, x, x.copy(), "2")


def test_sources_are_str_or_utf8_bytes(cpu_device):
    from_str = cpu_device.compile(SRC)
    from_bytes = cpu_device.compile(SRC.encode())
    x = np.arange(4, dtype=np.float32)
    y1, y2 = np.zeros(4, np.float32), np.zeros(4, np.float32)
    from_str.scale(4, x, y1, 2.0)
    from_bytes.scale(4, x, y2, 2.0)
    np.testing.assert_array_equal(y1, y2)
    with pytest.raises(mc.ArgumentError, match="UTF-8"):
        cpu_device.compile(b"kernel void k(device float* a [[buffer(0)]]) { a[0] = 1; } // \xff\xfe")
    with pytest.raises(mc.ArgumentError, match="UTF-8"):
        cpu_device.compile("kernel void k() {} // \udcff")
    for bad in (None, 3, ["kernel"], object()):
        with pytest.raises(mc.ArgumentError, match="str") as info:
            cpu_device.compile(bad)
        assert isinstance(info.value, TypeError)
    with pytest.raises(mc.ArgumentError, match="str"):
        cpu_device.kernel(3)


@pytest.mark.parametrize(
    "call,pattern",
    [
        (lambda d: d.compile(SRC, fast_math="yes"), "fast_math"),
        (lambda d: d.compile(SRC, language_version=3.0), "language_version"),
        (lambda d: d.compile(SRC, defines=5), "defines"),
        (lambda d: d.compile(SRC, defines={"A": object()}), "defines"),
        (lambda d: d.compile(SRC, defines={1: 2}), "defines"),
        (lambda d: d.compile(SRC).function(3), "str"),
        (lambda d: d.compile(SRC)[None], "str"),
        (lambda d: d.empty(1.5), "shape"),
        (lambda d: d.empty(None), "shape"),
        (lambda d: d.empty(4, "no-such-dtype"), "dtype"),
        (lambda d: mc.Device("cpu", checked="yes"), "checked"),
        (lambda d: mc.Device("cpu", timing=None), "timing"),
        (lambda d: d.asarray([1, 2], "no-such-dtype"), "dtype"),
        (lambda d: d.asarray([1, 2], 1.5), "dtype"),
        (lambda d: d.load_library(3), "load_library"),
        (lambda d: d.load_library(None), "load_library"),
    ],
)
def test_bad_values_raise_argument_errors(cpu_device, call, pattern):
    with pytest.raises(mc.ArgumentError, match=pattern):
        call(cpu_device)


def test_membership_of_a_non_name_is_false(cpu_device):
    lib = cpu_device.compile(SRC)
    assert "scale" in lib
    assert 3 not in lib and None not in lib


def test_negative_device_index_is_the_default_device():
    default = mc.Device()
    assert mc.Device(-1) == default
    assert mc.Device(-7) == default
    assert mc.Device(np.int64(-1)) == default


def test_errors_in_generated_entry_points_point_at_the_kernel(device):
    # An instantiation with an undeclared type fails in code generated for the kernel; the
    # error used to point at "metalcall-generated-entry-points:1:110".
    src = """
#include <metal_stdlib>
using namespace metal;
template <typename T>
kernel void add(device T* a [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    a[i] = a[i] + 1;
}
template [[host_name("add_f")]] kernel void add<Nope>(device Nope*, uint);
"""
    with pytest.raises(mc.CompileError, match="Nope") as info:
        device.compile(src)
    assert info.value.line == 8
    assert "generated" not in str(info.value).split("\n")[0]


GRID_SRC = """
#include <metal_stdlib>
using namespace metal;
kernel void mul(const device float* a [[buffer(0)]], const device float* b [[buffer(1)]],
                device float* c [[buffer(2)]], constant float& k [[buffer(3)]],
                uint i [[thread_position_in_grid]]) {
    c[i] = a[i] * b[0] * k;
}
kernel void guarded(const device float* a [[buffer(0)]], device float* c [[buffer(1)]],
                    constant uint& n [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    if (i < n) c[i] = a[i];
}
kernel void moved(device float* c [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    i += 1;
    c[i] = 1.0f;
}
"""


def test_whole_grid_is_checked_for_simply_indexed_buffers(device):
    lib = device.compile(GRID_SRC)
    indexed = {p["name"]: p["grid_indexed"] for p in lib.mul.params if p["kind"] == "buffer"}
    if device.backend != "metal":
        assert indexed == {"a": True, "b": False, "c": True}
    a = np.ones(10, np.float32)
    one = np.ones(1, np.float32)
    c = np.zeros(11, np.float32)
    guard = np.zeros(4, np.float32)
    if device.backend != "metal":
        with pytest.raises(mc.ArgumentError, match=r"argument 0 'a'.*11 elements.*holds 10") as info:
            lib.mul(11, a, one, c, 1.0)
        assert "grid" in str(info.value)
        with pytest.raises(mc.ArgumentError, match="argument 2 'c'"):
            lib.mul(10, a, one, c[:9], 1.0)
        with pytest.raises(mc.ArgumentError, match="argument 0 'a'"):
            lib.mul((11, 2), a, one, c, 1.0)  # x is what i covers
    assert not guard.any()
    lib.mul(10, a, one, c, 2.0)  # b is read at [0] only: one element is enough
    np.testing.assert_array_equal(c[:10], 2.0)
    lib.mul((10, 3), a, one, c, 1.0)
    # Guarded or moved indices are not analysed: only the one-element check applies.
    assert not any(p.get("grid_indexed") for p in lib.guarded.params + lib.moved.params)
    lib.guarded(64, a, c, 10)
    # Checked mode reports the access instead of refusing the call.
    if device.backend == "cpu":
        checked = mc.Device("cpu", checked=True)
        with pytest.raises(mc.ExecutionError):
            checked.compile(GRID_SRC).mul(11, a, one, c, 1.0).wait()


@pytest.mark.parametrize("option", ["repeat", "warmup", "bytes", "flops"])
@pytest.mark.parametrize("value", [None, 1.5, "3", -1, True])
def test_benchmark_options_are_checked(cpu_device, option, value):
    if value is None and option in ("bytes", "flops"):
        return  # None is their default
    kernel = cpu_device.compile(SRC).scale
    x = np.ones(8, np.float32)
    with pytest.raises(mc.ArgumentError, match=option):
        kernel.benchmark(8, x, x.copy(), 1.0, **{option: value})
