"""Checked mode (Device("cpu", checked=True)): every buffer and threadgroup access is
bounds-checked; a bad one raises ExecutionError naming the kernel, the argument and
the index, and no memory outside the buffers is touched."""

from __future__ import annotations

import numpy as np
import pytest

import metalcall as mc
from mctest import check_usable

CHECKED_SRC = """
#include <metal_stdlib>
using namespace metal;

float load(const device float* p, uint i) { return p[i]; }

kernel void shifted(const device float* a [[buffer(0)]], device float* c [[buffer(1)]],
                    constant int& shift [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    c[i] = load(a, i + shift) * 2.0f;
}

kernel void previous(const device float* a [[buffer(0)]], device float* c [[buffer(1)]],
                     uint i [[thread_position_in_grid]]) {
    const int k = int(i) - 1;
    c[i] = a[k];
}

kernel void pointer_walk(device float* a [[buffer(0)]], constant int& steps [[buffer(1)]],
                         uint i [[thread_position_in_grid]]) {
    device float* p = a + i;
    for (int k = 0; k < steps; ++k) p++;
    *p = 7.0f;
}

kernel void tile(device float* out [[buffer(0)]], constant uint& reach [[buffer(1)]],
                 uint i [[thread_position_in_grid]], uint l [[thread_position_in_threadgroup]]) {
    threadgroup float tmp[16];
    tmp[l] = float(i);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    out[i] = tmp[(l + reach) % 32];
}

kernel void scratch(device float* out [[buffer(0)]], threadgroup float* part [[threadgroup(0)]],
                    uint i [[thread_position_in_grid]], uint l [[thread_position_in_threadgroup]]) {
    part[l] = float(l);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    out[i] = part[l];
}

kernel void vectors(const device float4* v [[buffer(0)]], device float* out [[buffer(1)]],
                    uint i [[thread_position_in_grid]]) {
    out[i] = v[i].x + v[i].w;
}
"""


@pytest.fixture(scope="module")
def checked():
    if "cpu" not in mc.backends():
        pytest.skip("checked mode is a feature of the cpu backend")
    dev = mc.Device("cpu", checked=True)
    return dev, dev.compile(CHECKED_SRC)


def test_checked_device_properties(checked):
    dev, _ = checked
    assert dev.checked
    assert dev.backend == "cpu"
    assert not mc.Device("cpu").checked
    assert dev != mc.Device("cpu")


def test_in_bounds_results_match_numpy(checked):
    _, lib = checked
    a = np.arange(64, dtype=np.float32)
    c = np.zeros(63, np.float32)
    lib.shifted(63, a, c, 1)
    np.testing.assert_array_equal(c, a[1:] * 2)


def test_out_of_bounds_read_through_a_helper_raises_and_touches_nothing(checked):
    _, lib = checked
    # The kernel reads a[i + 1]: the last thread reads one past the end.
    backing = np.full(80, -1.0, np.float32)
    a = backing[8:72]  # guard zones on both sides
    a[:] = np.arange(64)
    c = np.zeros(64, np.float32)
    with pytest.raises(mc.ExecutionError) as info:
        lib.shifted(64, a, c, 1)
    message = str(info.value)
    assert "shifted" in message and "'a'" in message and "index 64" in message
    np.testing.assert_array_equal(c[:63], np.arange(1, 64) * 2)  # the good threads still ran
    np.testing.assert_array_equal(backing[:8], -1.0)
    np.testing.assert_array_equal(backing[72:], -1.0)


def test_negative_index_raises(checked):
    _, lib = checked
    a = np.arange(8, dtype=np.float32)
    c = np.zeros(8, np.float32)
    with pytest.raises(mc.ExecutionError, match="index -1 "):
        lib.previous(8, a, c)
    np.testing.assert_array_equal(c[1:], a[:-1])


def test_out_of_bounds_write_through_a_local_pointer(checked):
    _, lib = checked
    backing = np.zeros(48, np.float32)
    a = backing[8:40]
    with pytest.raises(mc.ExecutionError) as info:
        lib.pointer_walk(32, a, 1)  # thread 31 writes a[32]
    assert "pointer_walk" in str(info.value) and "index 32" in str(info.value)
    np.testing.assert_array_equal(a[1:], 7.0)
    np.testing.assert_array_equal(backing[:8], 0.0)
    np.testing.assert_array_equal(backing[40:], 0.0)


def test_threadgroup_array_bounds(checked):
    _, lib = checked
    out = np.zeros(32, np.float32)
    lib.tile(32, out, 0, threadgroup=16)
    np.testing.assert_array_equal(out, np.arange(32))
    with pytest.raises(mc.ExecutionError, match="threadgroup array"):
        lib.tile(32, out, 8, threadgroup=16)  # (l + 8) % 32 reaches 16..23


def test_threadgroup_parameter_bounds(checked):
    _, lib = checked
    out = np.zeros(32, np.float32)
    lib.scratch(32, out, threadgroup=16, threadgroup_memory=[64])
    np.testing.assert_array_equal(out, np.tile(np.arange(16), 2))
    with pytest.raises(mc.ExecutionError, match="'part'"):
        lib.scratch(32, out, threadgroup=16, threadgroup_memory=[32])  # room for 8 floats


def test_vector_elements_are_counted_in_elements(checked):
    _, lib = checked
    v = np.arange(16, dtype=np.float32).reshape(4, 4)
    out = np.zeros(4, np.float32)
    lib.vectors(4, v, out)
    np.testing.assert_array_equal(out, v[:, 0] + v[:, 3])
    with pytest.raises(mc.ExecutionError, match="16 bytes"):
        lib.vectors(5, v, np.zeros(5, np.float32))


def test_device_usable_after_faults(checked):
    dev, lib = checked
    with pytest.raises(mc.ExecutionError):
        lib.shifted(4, np.zeros(4, np.float32), np.zeros(4, np.float32), 100)
    check_usable(dev)
    check_usable(mc.Device("cpu"))


def test_checked_mode_only_on_cpu():
    others = [b for b in mc.backends() if b != "cpu"]
    for backend in others:
        if any(d.backend == backend for d in mc.get_devices()):
            with pytest.raises(mc.DeviceError, match="checked"):
                mc.Device(backend, checked=True)


TEMPLATE_FUNCTION_ARGUMENT_SRC = """
#include <metal_stdlib>
using namespace metal;
float twice(float x) { return 2.0f * x; }
float plus_one(float x) { return x + 1.0f; }
template <float (*F)(float)> float apply(float x) { return F(x); }
template <int N, float (*F)(float), float (*G)(float)> float both(float x) { return G(F(x)) + float(N); }
kernel void applied(device float* a [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    device float* p = &a[i];
    a[i] = apply<&twice>(a[i]) + both<3, &twice, &plus_one>(*p);
}
"""


def test_function_addresses_as_template_arguments(checked):
    # Checked mode wraps `&x` of data in a checked pointer; a function's address given to a
    # template (`apply<&twice>`) is no data, and was wrapped too (the call did not compile).
    a = np.arange(8, dtype=np.float32)
    expected = 2 * a + (2 * a + 1 + 3)
    dev, _ = checked
    dev.compile(TEMPLATE_FUNCTION_ARGUMENT_SRC).applied(8, a)
    np.testing.assert_array_equal(a, expected)
