"""Audit of the Python API under bad and unusual input (session 24, area "inputs").

DESIGN.md's standard: bad input gives a clear `mc.Error` subclass and leaves the process usable;
nothing is silently clamped, dropped or reinterpreted; no memory is lost. Each test here failed
before its fix: NumPy datetime scalars bound as raw bytes, malformed `__dlpack_device__` answers
and out-of-range `Buffer.read` arguments raised pybind11's RuntimeError/TypeError, `dev.buffer`
copied the addresses of Python objects, and `dev.asarray` let NumPy's conversion errors through.
"""

from __future__ import annotations

import ctypes
import enum
import gc

import numpy as np
import pytest

import metalcall as mc
from mctest import device_params_with_checked, open_device_param


# Every device tests/conftest.py gives, plus the checked CPU device.
@pytest.fixture(params=device_params_with_checked(), ids=lambda p: f"{p[0]}-checked" if p[2] else p[0])
def device(request) -> mc.Device:
    return open_device_param(request.param)


SRC = """
#include <metal_stdlib>
using namespace metal;
kernel void store_long(device long* out [[buffer(0)]], long v [[buffer(1)]]) { out[0] = v; }
kernel void store_ulong(device ulong* out [[buffer(0)]], constant ulong& v [[buffer(1)]]) { out[0] = v; }
kernel void store_float2(device float2* out [[buffer(0)]], float2 v [[buffer(1)]]) { out[0] = v; }
kernel void store_int2(device int2* out [[buffer(0)]], constant int2& v [[buffer(1)]]) { out[0] = v; }
kernel void add_one(device float* a [[buffer(0)]], uint i [[thread_position_in_grid]]) { a[i] += 1.0f; }
"""

DATETIMES = [
    np.datetime64(5, "s"),
    np.datetime64("2024-01-02T03:04:05.123456789", "ns"),
    np.timedelta64(7, "ms"),
    np.timedelta64(-3, "D"),
]

# (kernel, output dtype): every parameter an 8-byte value could fill as raw bytes.
EIGHT_BYTE_PARAMS = [("store_long", np.int64), ("store_ulong", np.uint64), ("store_float2", np.float32),
                     ("store_int2", np.int32)]


@pytest.mark.parametrize("value", DATETIMES, ids=lambda v: str(v.dtype))
@pytest.mark.parametrize("kernel,out_dtype", EIGHT_BYTE_PARAMS, ids=[k for k, _ in EIGHT_BYTE_PARAMS])
def test_datetime_scalars_are_refused_like_their_arrays(device, value, kernel, out_dtype):
    # Their buffer protocol exports plain bytes ('B'), which bind to any parameter of their size:
    # np.datetime64(5, "s") was a long 5 (in the value's unit, which the kernel cannot know) or the
    # bits of two floats. Arrays of them are refused; the scalars now are too.
    fn = device.compile(SRC)[kernel]
    out = np.zeros(8 // np.dtype(out_dtype).itemsize, out_dtype)
    with pytest.raises(mc.ArgumentError, match=r"(?s)argument 1 'v'.*has no MSL type.*astype\(np.int64\)"):
        fn(1, out, value)
    assert not out.any()
    with pytest.raises(mc.ArgumentError):
        fn(1, out, np.array([value]))  # an array of one, as before
    if kernel == "store_long":  # the conversion the message suggests works
        fn(1, out, value.astype(np.int64))
        assert out[0] == int(value.astype(np.int64))


class _DLPackDevice:
    """A host array that reports its DLPack device as `where` (no buffer protocol of its own)."""

    def __init__(self, array, where):
        self._array, self._where = array, where

    def __dlpack__(self, **kwargs):
        return self._array.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self._where


class _DeviceType(enum.IntEnum):  # how torch and others spell DLPack's device types
    kDLCPU = 1


MALFORMED_DLPACK_DEVICES = ["cpu", None, 1, (1,), (1, 0, 0), [1, 0], (1.0, 0), (True, 0), (1, "0"), (2**40, 0),
                            (1, -(2**40)), (2**70, 0)]


@pytest.mark.parametrize("where", MALFORMED_DLPACK_DEVICES, ids=repr)
def test_malformed_dlpack_device_is_an_argument_error(device, where):
    # pybind11's cast of these raised "RuntimeError: Unable to cast Python instance of type ... to
    # C++ type '?'", naming neither the object nor what DLPack asks for.
    fn = device.compile(SRC).add_one
    x = _DLPackDevice(np.zeros(4, np.float32), where)
    pattern = r"_DLPackDevice.__dlpack_device__\(\) returned .*tuple \(device_type, device_id\)"
    with pytest.raises(mc.ArgumentError, match=pattern):
        fn(4, x)
    with pytest.raises(mc.ArgumentError, match=pattern):
        mc.from_dlpack(x)
    with pytest.raises(mc.ArgumentError, match=pattern):
        device.asarray(x)
    good = np.zeros(4, np.float32)
    fn(4, good)  # the process stays usable
    assert good.tolist() == [1.0] * 4


def test_well_formed_dlpack_devices_still_bind_in_place(device):
    fn = device.compile(SRC).add_one
    for where in [(1, 0), (np.int32(1), np.int64(0)), (_DeviceType.kDLCPU, 0)]:
        backing = np.arange(4, dtype=np.float32)
        fn(4, _DLPackDevice(backing, where))
        assert backing.tolist() == [1.0, 2.0, 3.0, 4.0], where
        b = mc.from_dlpack(_DLPackDevice(backing, where))
        assert np.asarray(b).tolist() == [1.0, 2.0, 3.0, 4.0]


OBJECT_DATA = [
    np.array([1, "a"], dtype=object),
    np.array([(1.0, None)], dtype=[("x", np.float64), ("o", object)]),
]


@pytest.mark.parametrize("data", OBJECT_DATA, ids=["object", "struct-with-object"])
def test_dev_buffer_refuses_python_objects(device, data):
    # dev.buffer copied the array's bytes, which are the objects' addresses (holding no
    # reference): kernel arguments, dev.empty and dev.asarray all refuse dtype=object.
    with pytest.raises(mc.ArgumentError, match="Python objects"):
        device.buffer(data)
    ok = device.buffer(np.arange(3, dtype=np.int32))
    assert np.asarray(ok).view(np.int32).tolist() == [0, 1, 2]


BAD_READS = [
    ((1.5,), "offset=...\\) takes an int, not float"),
    ((0, 2.5), "nbytes=...\\) takes an int, not float"),
    (("0",), "takes an int, not str"),
    ((None,), "takes an int, not NoneType"),
    ((True,), "takes an int, not bool"),
    ((0, 2**64), "outside the buffer"),
    ((2**63, 1), "outside the buffer"),
    ((-(2**70),), "outside the buffer"),
    ((0, 33), "outside the buffer's 32 bytes"),
    ((33,), "outside the buffer's 32 bytes"),
]


@pytest.mark.parametrize("args,message", BAD_READS, ids=[repr(a) for a, _ in BAD_READS])
def test_buffer_read_arguments_are_checked(device, args, message):
    # pybind11's own conversion answered a float with "TypeError: read(): incompatible function
    # arguments" and a number past 64 bits with "RuntimeError: Unable to cast".
    b = device.asarray(np.arange(8, dtype=np.float32))
    with pytest.raises(mc.ArgumentError, match=message):
        b.read(*args)
    expected = np.arange(8, dtype=np.float32).tobytes()
    assert b.read(np.int64(4), np.uint8(8)) == expected[4:12]
    assert b.read(offset=28) == expected[28:]
    assert b.read() == expected


def _numpy_refuses(data, dtype):
    try:
        np.asarray(data, dtype=dtype)
    except (TypeError, ValueError, OverflowError):
        return True
    return False


ASARRAY_DATA = [([[1, 2], [3]], None), ([300], np.uint8), ([-1], np.uint32), ([float("nan")], np.int32),
                (["x"], np.float32), ([1j], np.float32)]


@pytest.mark.parametrize("data,dtype", ASARRAY_DATA, ids=[f"{d!r}-{t}" for d, t in ASARRAY_DATA])
def test_asarray_of_data_numpy_refuses_is_an_argument_error(device, data, dtype):
    # NumPy's ValueError/OverflowError (ragged lists, 300 as uint8, NaN as int32) came through as is.
    if not _numpy_refuses(data, dtype):
        pytest.skip("this NumPy converts it (with a warning)")
    with pytest.raises(mc.ArgumentError, match="dev.asarray: NumPy cannot make an array of this list"):
        device.asarray(data, dtype=dtype)


@pytest.mark.parametrize("data", [None, object(), {1: 2}, [1, None]], ids=["None", "object", "dict", "list-None"])
def test_asarray_of_python_objects_names_the_input(device, data):
    # It said "buffers cannot hold Python objects (dtype=object)" of a None the user never called an array.
    with pytest.raises(mc.ArgumentError, match=f"dev.asarray: NumPy reads this {type(data).__name__} as Python objects"):
        device.asarray(data)
    assert np.asarray(device.asarray([1.5, 2.5], dtype=np.float32)).tolist() == [1.5, 2.5]


def _rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


def test_refused_inputs_leak_nothing(device):
    # 10^4 of each refused input: the process's resident memory stays put (a leaked Py_buffer,
    # capsule or exception per call would be megabytes).
    lib = device.compile(SRC)
    b = device.asarray(np.arange(8, dtype=np.float32))
    bad_dl = _DLPackDevice(np.zeros(4, np.float32), "cpu")
    out = np.zeros(1, np.int64)
    calls = [
        lambda: lib.store_long(1, out, np.datetime64(5, "s")),
        lambda: lib.add_one(4, bad_dl),
        lambda: b.read(0, 2**64),
        lambda: device.buffer(OBJECT_DATA[0]),
        lambda: device.asarray([[1, 2], [3]]),
    ]
    for call in calls:
        for _ in range(200):  # warm caches and allocator pools first
            with pytest.raises(mc.ArgumentError):
                call()
        gc.collect()
        before = _rss_bytes()
        for _ in range(10_000):
            try:
                call()
            except mc.ArgumentError:
                pass
        gc.collect()
        assert _rss_bytes() - before < 4 << 20, call


LONG_DOUBLE_SRC = """
#include <metal_stdlib>
using namespace metal;
kernel void store_float(device float* out [[buffer(0)]], constant float& v [[buffer(1)]]) { out[0] = v; }
kernel void store_half(device half* out [[buffer(0)]], half v [[buffer(1)]]) { out[0] = v; }
kernel void store_bfloat(device bfloat* out [[buffer(0)]], constant bfloat& v [[buffer(1)]]) { out[0] = v; }
"""

_WIDE_LONG_DOUBLE = np.finfo(np.longdouble).nmant > np.finfo(np.float64).nmant
needs_wide_long_double = pytest.mark.skipif(not _WIDE_LONG_DOUBLE, reason="np.longdouble is double here")


def _ld(*powers_of_two):
    """1 + the sum of 2**p, exactly, as an np.longdouble."""
    v = np.longdouble(1)
    for p in powers_of_two:
        v += np.longdouble(2) ** p
    return v


# (kernel, value, the correctly rounded result as the target's bits): each value lies just past a
# tie of the target type by 2^-60, which a double cannot hold: rounding it to double first made
# the tie, which rounded to even (down).
LONG_DOUBLES = [
    ("store_float", _ld(-24, -60), np.float32, np.float32(1 + 2**-23).view(np.uint32)),
    ("store_float", _ld(-24), np.float32, np.float32(1).view(np.uint32)),  # a true tie: to even
    ("store_float", -_ld(-24, -60), np.float32, np.float32(-(1 + 2**-23)).view(np.uint32)),
    ("store_half", _ld(-11, -60), np.float16, np.float16(1 + 2**-10).view(np.uint16)),
    ("store_half", _ld(-11), np.float16, np.float16(1).view(np.uint16)),
    ("store_bfloat", _ld(-8, -60), np.uint16, 0x3F81),
    ("store_bfloat", _ld(-8), np.uint16, 0x3F80),
]


@needs_wide_long_double
@pytest.mark.parametrize("kernel,value,out_dtype,bits", LONG_DOUBLES,
                         ids=[f"{k}-{i}" for i, (k, *_) in enumerate(LONG_DOUBLES)])
def test_long_double_scalars_round_once(device, kernel, value, out_dtype, bits):
    fn = device.compile(LONG_DOUBLE_SRC)[kernel]
    out = np.zeros(1, out_dtype)
    fn(1, out.view(np.uint8), value)
    got = out.view(np.uint32 if out.itemsize == 4 else np.uint16)[0]
    assert int(got) == int(bits), (repr(value), hex(int(got)), hex(int(bits)))


@needs_wide_long_double
@pytest.mark.parametrize("kernel", ["store_float", "store_half", "store_bfloat"])
def test_long_double_past_double_range_is_out_of_range(device, kernel):
    # float(np.longdouble("1e400")) is inf, which was packed as inf: a finite value out of the
    # parameter's range is an ArgumentError, as 1e300 (a Python float) is.
    if np.finfo(np.longdouble).max < np.longdouble("1e400"):
        pytest.skip("np.longdouble does not reach 1e400 here")
    fn = device.compile(LONG_DOUBLE_SRC)[kernel]
    dtype = {"store_float": np.float32, "store_half": np.float16, "store_bfloat": np.uint16}[kernel]
    out = np.zeros(1, dtype)
    for value in [np.longdouble("1e400"), -np.longdouble("1e400")]:
        with pytest.raises(mc.ArgumentError, match="out of the range of"):
            fn(1, out.view(np.uint8), value)
    fn(1, out.view(np.uint8), -np.longdouble("inf"))  # infinity itself stays infinity
    if kernel == "store_bfloat":
        assert out[0] == 0xFF80
    else:
        assert out[0] == -np.inf


WIDE_INTS_SRC = LONG_DOUBLE_SRC + """
kernel void store_uint(device uint* out [[buffer(0)]], constant uint& v [[buffer(1)]]) { out[0] = v; }
kernel void store_ulong(device ulong* out [[buffer(0)]], ulong v [[buffer(1)]]) { out[0] = v; }
"""

# (kernel, int past 64 bits, the correctly rounded value's bits), derived by hand: a float keeps 24
# significant bits, bfloat 8.
WIDE_INTS = [
    ("store_float", 2**64, np.float32(2.0**64).view(np.uint32)),
    ("store_float", 2**64 + 1, np.float32(2.0**64).view(np.uint32)),
    ("store_float", -(2**64) - 1, np.float32(-(2.0**64)).view(np.uint32)),
    # just past the tie between 2^100 and 2^100 + 2^77: a double holds only the tie, which rounds to even
    ("store_float", 2**100 + 2**76 + 1, np.float32(2.0**100 + 2.0**77).view(np.uint32)),
    ("store_float", 2**100 + 2**76, np.float32(2.0**100).view(np.uint32)),
    ("store_float", 2**127 * (2**24 - 1) // 2**23, np.float32(np.finfo(np.float32).max).view(np.uint32)),
    ("store_bfloat", 2**64 + 1, 0x5F80),
    ("store_bfloat", 2**70 + 2**62 + 1, 0x6281),
]


@pytest.mark.parametrize("kernel,value,bits", WIDE_INTS, ids=[f"{k}-{i}" for i, (k, *_) in enumerate(WIDE_INTS)])
def test_ints_past_64_bits_pass_to_floating_parameters(device, kernel, value, bits):
    # They were refused ("does not fit in 64 bits") for float parameters too, where 2**64 is an
    # ordinary value.
    fn = device.compile(WIDE_INTS_SRC)[kernel]
    out = np.zeros(1, np.uint32 if kernel == "store_float" else np.uint16)
    fn(1, out.view(np.uint8), value)
    assert int(out[0]) == int(bits), (value, hex(int(out[0])), hex(int(bits)))


@pytest.mark.parametrize("kernel,value,message", [
    ("store_float", 10**39, "out of the range of float"),
    ("store_float", -(2**128), "out of the range of float"),
    ("store_float", 2**5000, "out of the range of float"),
    ("store_half", 2**64, "out of the range of half"),
    # bfloat's own range was not checked first: the message named float's (3.40282347e+38)
    ("store_bfloat", 2**128, "out of the range of bfloat \\(largest 3.38953139e\\+38\\)"),
    ("store_bfloat", 3.5e38, "out of the range of bfloat \\(largest 3.38953139e\\+38\\)"),
    ("store_half", 1e39, "out of the range of half \\(largest 65504\\)"),
    ("store_uint", 2**64, "does not fit in 64 bits"),
    ("store_ulong", 2**64, "does not fit in 64 bits"),
    ("store_ulong", -(2**63) - 1, "does not fit in 64 bits"),
])
def test_values_past_a_parameters_range_are_refused_naming_its_type(device, kernel, value, message):
    fn = device.compile(WIDE_INTS_SRC)[kernel]
    with pytest.raises(mc.ArgumentError, match=message):
        fn(1, np.zeros(8, np.uint8)[: {"store_half": 2, "store_bfloat": 2, "store_ulong": 8}.get(kernel, 4)], value)


@pytest.mark.parametrize("args,kwargs,message", [
    ((), {"foo": 1}, "compile\\(\\) has no option 'foo'; it takes defines=, fast_math= and language_version="),
    ((), {"constants": {"n": 1}}, "lib.function\\(name, constants="),
    ((), {"fastmath": False}, "no option 'fastmath'"),
    (({"X": 1},), {}, "one positional argument"),
])
def test_unknown_compile_options_are_argument_errors(device, args, kwargs, message):
    # pybind11's overload answered with "TypeError: compile(): incompatible function arguments.
    # The following argument types are supported: ..." (not an mc.Error).
    with pytest.raises(mc.ArgumentError, match=message):
        device.compile(SRC, *args, **kwargs)
    lib = device.compile(SRC, defines={"UNUSED": 1}, fast_math=False, language_version="3.0")
    assert "add_one" in lib
    assert "add_one" in device.compile(source=SRC)


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int32), ("dtype", _DLDataType),
                ("shape", ctypes.POINTER(ctypes.c_int64)), ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("byte_offset", ctypes.c_uint64)]


class _DLManagedTensor(ctypes.Structure):  # DLPack's pre-1.0 capsule ("dltensor"), no deleter
    _fields_ = [("dl_tensor", _DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p)]


_capsule_new = ctypes.pythonapi.PyCapsule_New
_capsule_new.restype = ctypes.py_object
_capsule_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]


class _HandMadeDLPack:
    """A producer whose capsule says what the test wants of 16 float32s of host memory."""

    def __init__(self, shape, ndim=None):
        self.backing = np.arange(16, dtype=np.float32)
        self.shape = (ctypes.c_int64 * max(len(shape), 1))(*shape)
        self.managed = _DLManagedTensor()
        t = self.managed.dl_tensor
        t.data = self.backing.ctypes.data
        t.device = _DLDevice(1, 0)  # kDLCPU
        t.ndim = len(shape) if ndim is None else ndim
        t.dtype = _DLDataType(2, 32, 1)  # float32
        t.shape = ctypes.cast(self.shape, ctypes.POINTER(ctypes.c_int64))

    def __dlpack__(self, **kwargs):
        return _capsule_new(ctypes.addressof(self.managed), b"dltensor", None)

    def __dlpack_device__(self):
        return (1, 0)


@pytest.mark.parametrize("shape,ndim,message", [
    ((-1,), None, "negative extent"),
    ((4, -2), None, "negative extent"),
    ((2**62, 8), None, "more bytes than an address space"),
    ((2**31, 2**31, 2**31), None, "more bytes than an address space"),
    ((4,), -1, "ndim -1"),
])
def test_malformed_dlpack_shapes_are_refused(device, shape, ndim, message):
    # A negative extent made a Buffer of 2^64 - 4 bytes over 64 real ones: mc.from_dlpack segfaulted.
    # A product past 64 bits wrapped. Kernel arguments import DLPack producers the same way.
    fn = device.compile(SRC).add_one
    with pytest.raises(mc.ArgumentError, match="the DLPack tensor is malformed: .*" + message):
        mc.from_dlpack(_HandMadeDLPack(shape, ndim))
    with pytest.raises(mc.ArgumentError, match=message):
        fn(4, _HandMadeDLPack(shape, ndim))


@pytest.mark.parametrize("shape", [(4,), (2, 8), (0,), (0, 2**20), ()])
def test_hand_made_dlpack_shapes_that_are_valid_still_import(device, shape):
    p = _HandMadeDLPack(shape)
    b = mc.from_dlpack(p)
    assert b.shape == shape
    assert np.array_equal(np.asarray(b), p.backing[: int(np.prod(shape))].reshape(shape))
    if shape == (4,):
        device.compile(SRC).add_one(4, p)
        assert p.backing[:5].tolist() == [1.0, 2.0, 3.0, 4.0, 4.0]


# MSL's scalar types include ptrdiff_t (a signed 64-bit integer, as size_t is an unsigned one), and
# C++'s several-word spellings name the others. Reflection knew none of them: a Python int was
# refused ("takes 8 bytes: pass bytes ..."), and their arrays went unchecked.
SPELLINGS = [
    ("ptrdiff_t", np.int64, -(2**40)),
    ("signed char", np.int8, -5),
    ("signed short", np.int16, -300),
    ("short int", np.int16, -300),
    ("unsigned short int", np.uint16, 65535),
    ("signed int", np.int32, -(2**31)),
    ("signed", np.int32, -7),
    ("long int", np.int64, -(2**62)),
    ("unsigned long int", np.uint64, 2**64 - 1),
]


def _spelling_source(spelled: str) -> str:
    return f"""
#include <metal_stdlib>
using namespace metal;
kernel void by_value(device {spelled}* out [[buffer(0)]], {spelled} v [[buffer(1)]]) {{ out[0] = v; }}
kernel void by_reference(device {spelled}* out [[buffer(0)]], constant {spelled}& v [[buffer(1)]]) {{ out[0] = v; }}
"""


@pytest.mark.parametrize("spelled,dtype,value", SPELLINGS, ids=[s for s, *_ in SPELLINGS])
def test_every_spelling_of_an_integer_type_takes_python_ints(device, spelled, dtype, value):
    lib = device.compile(_spelling_source(spelled))
    info = np.iinfo(dtype)
    for kernel in (lib.by_value, lib.by_reference):
        out = np.zeros(1, dtype)
        kernel(1, out, value)
        assert int(out[0]) == value
        with pytest.raises(mc.ArgumentError, match="does not fit"):
            kernel(1, out, info.max + 1)
        with pytest.raises(mc.ArgumentError, match="floating-point value cannot be passed"):
            kernel(1, out, 1.0)
        wrong = np.float64 if dtype != np.float64 else np.int32
        with pytest.raises(mc.ArgumentError, match="the array holds double elements"):
            kernel(1, np.zeros(1, wrong), value)  # element types are checked, as for `long*`


MATRIX_SRC = """
#include <metal_stdlib>
using namespace metal;
kernel void m44_ref(device float4* out [[buffer(0)]], constant float4x4& m [[buffer(1)]]) {
    for (int c = 0; c < 4; ++c) out[c] = m[c];
}
kernel void m44_ptr(device float4* out [[buffer(0)]], const device metal::float4x4* m [[buffer(1)]]) {
    for (int c = 0; c < 4; ++c) out[c] = m[1][c];
}
kernel void h33_ref(device half4* out [[buffer(0)]], constant half3x3& m [[buffer(1)]]) {
    for (int c = 0; c < 3; ++c) out[c] = half4(m[c], 0.0h);
}
kernel void m22_tmpl(device float2* out [[buffer(0)]], constant matrix<float, 2, 2>& m [[buffer(1)]]) {
    out[0] = m[0]; out[1] = m[1];
}
"""


def test_matrix_parameters_check_their_component_type(device):
    # Reflection gives matrices no scalar type, so no element type was checked: 64 bytes of float64
    # bound to `constant float4x4&` ran with the doubles' bits read as floats.
    lib = device.compile(MATRIX_SRC)
    m = np.arange(16, dtype=np.float32).reshape(4, 4)
    cases = [
        (lib.m44_ref, np.zeros(16, np.float32), m, m.ravel()),
        (lib.m44_ptr, np.zeros(16, np.float32), np.stack([m, m + 100]), (m + 100).ravel()),
        (lib.h33_ref, np.zeros(12, np.float16), np.arange(12, dtype=np.float16),
         np.where(np.arange(12) % 4 == 3, 0, np.arange(12)).astype(np.float16)),  # half3 columns: 4 halves
        (lib.m22_tmpl, np.zeros(4, np.float32), np.float32([1, 2, 3, 4]), np.float32([1, 2, 3, 4])),
    ]
    for kernel, out, good, want in cases:
        nbytes = good.nbytes
        for wrong_dtype in (np.float64, np.int32, np.float16 if good.dtype != np.float16 else np.float32):
            wrong = np.zeros(nbytes // np.dtype(wrong_dtype).itemsize, wrong_dtype)  # the same size in bytes
            with pytest.raises(mc.ArgumentError, match="holds (double|int|half|float)"):
                kernel(1, out, wrong)
            with pytest.raises(mc.ArgumentError, match="holds (double|int|half|float)"):
                kernel(1, out, device.asarray(wrong))  # a Buffer of that dtype, too
        kernel(1, out, good)
        assert np.array_equal(out, want)
        out[:] = 0
        kernel(1, out, good.view(np.uint8))  # raw bytes still bind anywhere
        assert np.array_equal(out, want)
