"""The device allocator's cache (docs/design.md "Device memory"): freed Buffers' memory is
reused by size class, reused memory reads as zeros unless asked otherwise, memory_info()
counts it, empty_cache() frees it, and memory that queued or recorded work still uses is
never handed out again before that work is done. Runs on every device."""

from __future__ import annotations

import gc

import numpy as np
import pytest

import metalcall as mc
from mctest import with_sandbox_device

device = with_sandbox_device()

SRC = """
#include <metal_stdlib>
using namespace metal;
kernel void fill(device float* a [[buffer(0)]], constant float& v [[buffer(1)]],
                 uint i [[thread_position_in_grid]]) {
    a[i] = v + float(i);
}
kernel void copy_slow(const device float* a [[buffer(0)]], device float* out [[buffer(1)]],
                      constant uint& spin [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    float x = a[i];
    float acc = 0.0f;
    for (uint k = 0; k < spin; ++k) acc += x * 1e-30f;   // keeps the call busy a while
    out[i] = x + acc * 0.0f;
}
"""

N = 1 << 19  # 2 MiB of float32: over the CPU backend's 1 MiB threshold for cached blocks
CACHING_BACKENDS = ("cpu", "cuda")  # those with a cache of their own (the sandboxed CPU device has none)


def caches(device) -> bool:
    return device.backend in CACHING_BACKENDS and not device.sandbox


def address(buf: mc.Buffer) -> int:
    return np.asarray(buf).__array_interface__["data"][0]


def settle(device) -> None:
    """No work in flight and no garbage: memory_info moves only for what the test does."""
    device.synchronize()
    gc.collect()


def test_reused_memory_is_zeroed_and_independent(device):
    fill = device.compile(SRC).fill
    a = device.empty(N, np.float32)
    fill(N, a, np.float32(5.0))
    want = 5.0 + np.arange(N, dtype=np.float32)
    np.testing.assert_array_equal(np.asarray(a), want)
    first = address(a)
    del a
    settle(device)
    b = device.empty(N, np.float32)  # zero-filled by default, reused or not
    if caches(device):
        assert address(b) == first  # the freed block came back
    assert not np.asarray(b).any()
    z = device.zeros(N, np.float32)
    assert not np.asarray(z).any()
    fill(N, b, np.float32(1.0))
    fill(N, z, np.float32(2.0))
    np.testing.assert_array_equal(np.asarray(b), 1.0 + np.arange(N, dtype=np.float32))
    np.testing.assert_array_equal(np.asarray(z), 2.0 + np.arange(N, dtype=np.float32))


def test_uninitialized_buffer_holds_what_a_kernel_writes(device):
    fill = device.compile(SRC).fill
    for n in (1, 1000, N, N + 12345):
        u = device.empty(n, np.float32, uninitialized=True)
        assert u.shape == (n,) and u.nbytes == 4 * n
        fill(n, u, np.float32(-3.0))
        np.testing.assert_array_equal(np.asarray(u), -3.0 + np.arange(n, dtype=np.float32))
        del u
    with pytest.raises(mc.ArgumentError, match="uninitialized"):
        device.empty(4, np.float32, uninitialized="yes")


def test_memory_info_counts_buffers_and_the_cache(device):
    settle(device)
    device.empty_cache()
    info = device.memory_info()
    assert set(info) == {"in_use", "cached", "device_free", "device_total"}
    assert info["cached"] == 0
    assert info["device_total"] > 0 and 0 <= info["device_free"] <= info["device_total"]
    before = info["in_use"]
    bufs = [device.empty(N, np.float32), device.empty(N + 1, np.float32), device.buffer(100)]
    nbytes = 4 * N + 4 * (N + 1) + 100
    assert device.memory_info()["in_use"] == before + nbytes
    del bufs
    settle(device)
    after = device.memory_info()
    assert after["in_use"] == before
    if caches(device):
        # The two large blocks, each rounded up to its size class (at most 1/8 more).
        assert 8 * N <= after["cached"] <= 8 * N * 9 // 8 + (1 << 16)
    else:
        assert after["cached"] == 0
    device.empty_cache()
    assert device.memory_info()["cached"] == 0
    again = device.empty(N, np.float32)
    assert not np.asarray(again).any()


def test_exported_memory_is_not_reused(device):
    settle(device)
    device.empty_cache()
    b = device.empty(N, np.float32)
    capsule = b.__dlpack__()  # handed to another library in place
    del capsule, b
    settle(device)
    assert device.memory_info()["cached"] == 0


def test_queued_work_keeps_its_buffers_from_reuse(device):
    lib = device.compile(SRC)
    src_values = np.arange(N, dtype=np.float32) * 0.5
    a = device.asarray(src_values)
    out = device.empty(N, np.float32)
    first = address(a)
    # A call still queued (or running) holds `a`: freeing the Buffer must not hand its
    # memory to the next allocation, which the host then overwrites.
    h = lib.copy_slow(N, a, out, np.uint32(200))
    del a
    c = device.empty(N, np.float32)
    np.asarray(c)[:] = 7.0
    h.wait()
    np.testing.assert_array_equal(np.asarray(out), src_values)
    if not h.done:
        pytest.fail("the call's Completion is not done after wait()")
    del c
    # In a batch the calls have not even been submitted when the Buffer is freed.
    b = device.asarray(src_values + 1.0)
    out2 = device.empty(N, np.float32)
    with device.batch():
        lib.copy_slow(N, b, out2, np.uint32(1))
        del b
        d = device.empty(N, np.float32)
        np.asarray(d)[:] = -1.0
    device.synchronize()
    np.testing.assert_array_equal(np.asarray(out2), src_values + 1.0)
    np.testing.assert_array_equal(np.asarray(d), -1.0)


def test_recorded_work_keeps_its_buffers_from_reuse(device):
    lib = device.compile(SRC)
    values = np.arange(N, dtype=np.float32) + 0.25
    a = device.asarray(values)
    out = device.empty(N, np.float32)
    with device.record() as graph:
        lib.copy_slow(N, a, out, np.uint32(1))
    del a
    settle(device)
    for _ in range(3):  # new Buffers of a's size class, written on the host
        junk = device.empty(N, np.float32)
        np.asarray(junk)[:] = 9.0
    graph.replay().wait()
    np.testing.assert_array_equal(np.asarray(out), values)
