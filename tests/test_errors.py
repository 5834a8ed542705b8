"""Bad input of every kind gives the right mc.Error subclass, and the process stays
usable: after every bad call a good kernel runs and its values are checked
(DESIGN.md §5)."""

from __future__ import annotations

import numpy as np
import pytest

import metalcall as mc
from mctest import GOOD_SRC, check_usable

TG_SRC = """
#include <metal_stdlib>
using namespace metal;
// Reverses each threadgroup's slice of `a` through threadgroup memory.
kernel void rev(const device float* a [[buffer(0)]], device float* out [[buffer(1)]],
                threadgroup float* tmp [[threadgroup(0)]],
                uint i [[thread_position_in_grid]], uint l [[thread_position_in_threadgroup]],
                uint n [[threads_per_threadgroup]]) {
    tmp[l] = a[i];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    out[i] = tmp[n - 1 - l];
}
"""

BROKEN_SRC = """
kernel void broken(device float* a [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    a[i] = undefined_thing;
}
"""


def test_error_hierarchy():
    for cls in (mc.CompileError, mc.ArgumentError, mc.ExecutionError, mc.DeviceError):
        assert issubclass(cls, mc.Error)
        assert cls is not mc.Error
    assert mc.error is mc.Error
    assert issubclass(mc.Error, Exception)
    assert mc.Error.__module__ == "metalcall"


def f32(n=8, v=1.0):
    return np.full(n, v, np.float32)


# (id, call(dev, lib), expected exception, message pattern)
BAD_CALLS = [
    # compile
    ("compile-undefined", lambda d, lib: d.compile(BROKEN_SRC), mc.CompileError, "undefined_thing"),
    ("compile-garbage", lambda d, lib: d.compile("kernel void (((( }"), mc.CompileError, ""),
    ("compile-unbalanced", lambda d, lib: d.compile("kernel void k(device float* a [[buffer(0)]]) {"), mc.CompileError, ""),
    ("compile-include", lambda d, lib: d.compile('#include "mine.h"\n' + GOOD_SRC), mc.CompileError, "mine.h"),
    ("defines-bad-name", lambda d, lib: d.compile(GOOD_SRC, defines={"1X": 1}), mc.ArgumentError, "macro"),
    ("defines-newline", lambda d, lib: d.compile(GOOD_SRC, defines={"X": "1\n2"}), mc.ArgumentError, "control character"),
    ("defines-bad-list", lambda d, lib: d.compile(GOOD_SRC, defines=["A", 3]), mc.ArgumentError, "defines"),
    # lookup
    ("function-missing", lambda d, lib: lib.function("nope"), mc.ArgumentError, "mul"),
    ("item-missing", lambda d, lib: lib["nope"], mc.ArgumentError, "mul"),
    ("constants-not-dict", lambda d, lib: lib.function("mul", constants=[1]), mc.ArgumentError, "dict"),
    # arguments
    ("too-few", lambda d, lib: lib.mul(8, f32(), f32()), mc.ArgumentError, "takes 3"),
    ("too-many", lambda d, lib: lib.mul(8, f32(), f32(), f32(), f32()), mc.ArgumentError, "takes 3"),
    ("no-grid", lambda d, lib: lib.mul(), mc.ArgumentError, "grid"),
    ("float64-array", lambda d, lib: lib.mul(8, np.ones(8), f32(), f32()), mc.ArgumentError, "float"),
    ("read-only-out", lambda d, lib: lib.mul(8, f32(), f32(), bytes(32)), mc.ArgumentError, "read-only"),
    ("non-contiguous", lambda d, lib: lib.mul(8, f32(16)[::2], f32(), f32()), mc.ArgumentError, "contiguous"),
    ("too-small", lambda d, lib: lib.mul(8, bytearray(2), f32(), f32()), mc.ArgumentError, "element"),
    (
        "misaligned-overlapping",
        lambda d, lib: lib.copy(8, *(np.frombuffer(raw, np.float32, 8, o) for raw in [bytearray(40)] for o in (1, 5))),
        mc.ArgumentError,
        "overlaps",
    ),
    ("str-arg", lambda d, lib: lib.mul(8, "x", f32(), f32()), mc.ArgumentError, "str"),
    ("scalar-for-pointer", lambda d, lib: lib.mul(8, 1.0, f32(), f32()), mc.ArgumentError, "pointer"),
    ("str-for-float-ref", lambda d, lib: lib.add_scalar(8, f32(), "1", f32()), mc.ArgumentError, ""),
    ("float-for-uint", lambda d, lib: lib.slow(8, f32(), f32(), 2.0), mc.ArgumentError, "floating"),
    ("negative-for-uint", lambda d, lib: lib.slow(8, f32(), f32(), -1), mc.ArgumentError, "does not fit"),
    ("huge-int", lambda d, lib: lib.slow(8, f32(), f32(), 2**65), mc.ArgumentError, "64 bits"),
    ("unknown-keyword", lambda d, lib: lib.iota(8, np.zeros(8, np.uint32), bogus=1), mc.ArgumentError, "bogus"),
    # grid / threadgroup
    ("grid-negative", lambda d, lib: lib.iota(-5, np.zeros(8, np.uint32)), mc.ArgumentError, "negative"),
    ("grid-too-large", lambda d, lib: lib.iota(2**32, np.zeros(8, np.uint32)), mc.ArgumentError, "2\\^32"),
    ("grid-4d", lambda d, lib: lib.iota((1, 1, 1, 1), np.zeros(8, np.uint32)), mc.ArgumentError, "1 to 3"),
    ("grid-float", lambda d, lib: lib.iota(8.0, np.zeros(8, np.uint32)), mc.ArgumentError, "grid"),
    ("tg-over-limit", lambda d, lib: lib.iota(8, np.zeros(8, np.uint32), threadgroup=4096), mc.ArgumentError, "limit"),
    ("tg-zero", lambda d, lib: lib.iota(8, np.zeros(8, np.uint32), threadgroup=0), mc.ArgumentError, "threadgroup"),
    (
        "tg-memory-without-params",
        lambda d, lib: lib.iota(8, np.zeros(8, np.uint32), threadgroup_memory=[16]),
        mc.ArgumentError,
        "threadgroup",
    ),
    # buffers
    ("buffer-negative", lambda d, lib: d.buffer(-1), mc.ArgumentError, "negative"),
    ("buffer-huge", lambda d, lib: d.buffer(2**62), mc.ArgumentError, ""),
    ("empty-negative-shape", lambda d, lib: d.empty((3, -1)), mc.ArgumentError, "negative"),
    ("empty-object-dtype", lambda d, lib: d.empty(3, object), mc.ArgumentError, "object"),
    # devices
    ("device-unknown", lambda d, lib: mc.Device("nonsense"), mc.DeviceError, "nonsense"),
    ("device-index", lambda d, lib: mc.Device(999), mc.DeviceError, "999"),
    ("device-bad-spec", lambda d, lib: mc.Device("cpu:abc"), mc.DeviceError, "cpu:abc"),
    ("device-type", lambda d, lib: mc.Device(3.5), mc.DeviceError, ""),
]


@pytest.mark.parametrize("call,exc,pattern", [c[1:] for c in BAD_CALLS], ids=[c[0] for c in BAD_CALLS])
def test_bad_input_raises_and_process_stays_usable(device, call, exc, pattern):
    lib = device.compile(GOOD_SRC)
    with pytest.raises(exc, match=pattern or None) as info:
        call(device, lib)
    assert type(info.value) is exc, f"expected exactly {exc.__name__}, got {type(info.value).__name__}"
    assert str(info.value)
    check_usable(device)


def test_many_bad_calls_in_a_row(device):
    # Errors do not leak state: a long run of failures, then good work.
    lib = device.compile(GOOD_SRC)
    for _ in range(200):
        with pytest.raises(mc.ArgumentError):
            lib.mul(8, f32(), f32())
        with pytest.raises(mc.ArgumentError):
            lib.mul(-1, f32(), f32(), f32())
    check_usable(device)


def test_compile_error_then_same_source_fixed(device):
    with pytest.raises(mc.CompileError):
        device.compile(BROKEN_SRC)
    with pytest.raises(mc.CompileError):  # the failure is not cached as a success
        device.compile(BROKEN_SRC)
    fixed = device.compile(BROKEN_SRC, defines={"undefined_thing": "42.0f"})
    x = np.zeros(4, np.float32)
    fixed.broken(4, x)
    np.testing.assert_array_equal(x, 42.0)
    check_usable(device)


def test_threadgroup_memory_errors(device):
    lib = device.compile(TG_SRC)
    a = np.arange(100, dtype=np.float32)
    out = np.zeros(100, np.float32)
    with pytest.raises(mc.ArgumentError, match="threadgroup_memory"):
        lib.rev(100, a, out, threadgroup=32)  # length missing
    with pytest.raises(mc.ArgumentError, match="multiple of 16"):
        lib.rev(100, a, out, threadgroup=32, threadgroup_memory=[100])
    with pytest.raises(mc.ArgumentError, match="threadgroup memory"):
        lib.rev(100, a, out, threadgroup=32, threadgroup_memory=[device.threadgroup_memory_length + 16])
    with pytest.raises(mc.ArgumentError, match="negative"):
        lib.rev(100, a, out, threadgroup=32, threadgroup_memory=[-16])
    with pytest.raises(mc.ArgumentError, match="ints"):
        lib.rev(100, a, out, threadgroup=32, threadgroup_memory=["a"])
    assert not out.any()
    # The right call works, partial last group included.
    lib.rev(100, a, out, threadgroup=32, threadgroup_memory=[128])
    expected = np.concatenate([a[k : k + 32][::-1] for k in range(0, 100, 32)])
    np.testing.assert_array_equal(out, expected)
    lib.rev(100, a, out, threadgroup=32, threadgroup_memory=128)  # an int for one parameter
    np.testing.assert_array_equal(out, expected)
    check_usable(device)


TG_DECL_SRC = """#include <metal_stdlib>
using namespace metal;
template <typename T, uint N>
kernel void stage(device float* out [[buffer(0)]], uint i [[thread_position_in_grid]],
                  uint l [[thread_index_in_threadgroup]]) {
    threadgroup T tile[N];
    for (uint j = l; j < N; j += 1024) tile[j] = T(i);  // threadgroups of 1024
    threadgroup_barrier(mem_flags::mem_threadgroup);
    out[i] = float(tile[N - 1 - l]);  // from lane 1023 - l (N = 8192)
}
template [[host_name("stage_fits")]] kernel void stage<float, 8192>(device float*, uint, uint);
template [[host_name("stage_over")]] kernel void stage<float, 8193>(device float*, uint, uint);
kernel void two(device float* o [[buffer(0)]], uint l [[thread_index_in_threadgroup]]) {
    threadgroup float a[4], b[8193];
    if (l == 0) { a[0] = 1; b[0] = 2; o[0] = a[0] + b[0]; }
}
"""


@pytest.mark.parametrize("checked", [False, True], ids=["cpu", "cpu-checked"])
def test_threadgroup_variable_over_apple_limit(cpu_device, checked):
    """A threadgroup variable over Apple GPUs' 32 KiB: Metal refuses to make that kernel's
    pipeline (its library compiles), so on the CPU calling it is an ExecutionError and the
    library's other kernels work."""
    dev = mc.Device("cpu", checked=True) if checked else cpu_device
    lib = dev.compile(TG_DECL_SRC)
    out = np.zeros(8192, np.float32)
    lane = np.arange(8192) % 1024
    lib.stage_fits(8192, out, threadgroup=1024)  # exactly 32 KiB
    np.testing.assert_array_equal(out, np.arange(8192) - lane + 1023 - lane)
    with pytest.raises(mc.ExecutionError, match="threadgroup variable 'tile' takes 32772 bytes.*32 KiB"):
        lib.stage_over(8192, out, threadgroup=1024).wait()
    o = np.zeros(1, np.float32)
    with pytest.raises(mc.ExecutionError, match="kernel 'two'.*threadgroup variable 'b' takes 32772 bytes"):
        lib.two(32, o).wait()
    out[:] = 0
    lib.stage_fits(8192, out, threadgroup=1024)
    np.testing.assert_array_equal(out, np.arange(8192) - lane + 1023 - lane)
    check_usable(dev)


TG_TOTAL_SRC = """#include <metal_stdlib>
using namespace metal;
// Two or three tiles that fit alone; together they exceed 32 KiB when N > 4096.
template <uint N>
kernel void pair(device float* out [[buffer(0)]], uint l [[thread_index_in_threadgroup]]) {
    threadgroup float a[N];
    threadgroup float b[N];
    a[l] = float(l);
    b[l] = 2.0f * float(l);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    out[l] = a[31 - l] + b[l];
}
template [[host_name("pair_fits")]] kernel void pair<4096>(device float*, uint);
template [[host_name("pair_over")]] kernel void pair<4097>(device float*, uint);
kernel void nested(device float* out [[buffer(0)]], uint l [[thread_index_in_threadgroup]]) {
    threadgroup float a[4096];
    if (l < 32) {
        threadgroup float c[1];
        a[l] = 1.0f;
        if (l == 0) c[0] = 5.0f;
        out[l] = a[l];
    }
}
kernel void siblings(device float* out [[buffer(0)]], uint l [[thread_index_in_threadgroup]]) {
    { threadgroup float a[6000]; a[l] = 1.0f; out[l] = a[l]; }
    { threadgroup float b[6000]; b[l] = 2.0f; out[l] += b[l]; }
}
"""


@pytest.mark.parametrize("checked", [False, True], ids=["cpu", "cpu-checked"])
def test_threadgroup_variables_over_apple_limit_together(cpu_device, checked):
    """Threadgroup variables in scope together count against the same 32 KiB (each one
    alone fits): calling such a kernel is an ExecutionError naming them; variables of
    blocks already closed are not added (docs/design.md)."""
    dev = mc.Device("cpu", checked=True) if checked else cpu_device
    lib = dev.compile(TG_TOTAL_SRC)
    out = np.zeros(32, np.float32)
    lib.pair_fits(32, out, threadgroup=32)  # 2 x 16 KiB: exactly 32 KiB
    np.testing.assert_array_equal(out, (31 - np.arange(32)) + 2 * np.arange(32))
    with pytest.raises(mc.ExecutionError, match="kernel 'pair_over'.*threadgroup variables a, b take 32776 bytes together"):
        lib.pair_over(32, out, threadgroup=32).wait()
    lib.nested(32, out, threadgroup=32).wait()  # 16 KiB + 4 bytes, in nested blocks: fits
    np.testing.assert_array_equal(out, np.ones(32))
    lib.siblings(32, out, threadgroup=32).wait()  # 2 x 24 KiB in sibling blocks: not added
    np.testing.assert_array_equal(out, np.full(32, 3.0))
    check_usable(dev)


TG_DYNAMIC_SRC = """#include <metal_stdlib>
using namespace metal;
kernel void mixed(device float* out [[buffer(0)]], threadgroup float* scratch [[threadgroup(0)]],
                  uint l [[thread_index_in_threadgroup]]) {
    threadgroup float tile[4096];  // 16 KiB
    tile[l] = float(l);
    scratch[l] = 2.0f;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    out[l] = tile[31 - l] + scratch[l];
}
"""


@pytest.mark.parametrize("checked", [False, True], ids=["cpu", "cpu-checked"])
def test_threadgroup_variables_and_call_lengths_over_apple_limit(cpu_device, checked):
    """A kernel's threadgroup variables and the call's threadgroup_memory lengths share
    Apple's 32 KiB: a call whose lengths take the total over it is an ExecutionError; the same
    kernel with smaller lengths works."""
    dev = mc.Device("cpu", checked=True) if checked else cpu_device
    lib = dev.compile(TG_DYNAMIC_SRC)
    out = np.zeros(32, np.float32)
    lib.mixed(32, out, threadgroup=32, threadgroup_memory=[16384])  # 16 + 16 KiB: fits
    np.testing.assert_array_equal(out, (31 - np.arange(32)) + 2.0)
    with pytest.raises(mc.ExecutionError, match=r"threadgroup variable 'tile' \(16384 bytes\) and the call's "
                                                r"threadgroup_memory \(16400 bytes\) take 32784 bytes together"):
        lib.mixed(32, out, threadgroup=32, threadgroup_memory=[16400]).wait()
    out[:] = 0
    lib.mixed(32, out, threadgroup=32, threadgroup_memory=[128])
    np.testing.assert_array_equal(out, (31 - np.arange(32)) + 2.0)
    check_usable(dev)


def test_checked_mode_reports_out_of_bounds(cpu_device):
    try:
        dev = mc.Device("cpu", checked=True)
    except mc.DeviceError as e:
        pytest.skip(f"checked mode is not available in this build: {e}")
    lib = dev.compile(GOOD_SRC)
    a = np.arange(10, dtype=np.float32)
    c = np.zeros(10, np.float32)
    with pytest.raises(mc.ExecutionError, match="mul"):
        lib.mul(11, a, a, c).wait()
    check_usable(dev)
    check_usable(cpu_device)


def test_checked_mode_only_on_cpu():
    for info in mc.get_devices():
        if info.backend != "cpu":
            with pytest.raises(mc.DeviceError, match="checked"):
                mc.Device(f"{info.backend}:{info.index}", checked=True)
    check_usable(mc.Device("cpu"))
