"""A call that repeats the last call's grid and Buffers binds without re-checking them
(core/kernel.cpp, "Repeated calls"): every check must still hold for whatever differs, and
a new Buffer at a freed one's address (the allocator's cache) must be the one written."""

from __future__ import annotations

import gc

import numpy as np
import pytest

import metalcall as mc

SRC = """
#include <metal_stdlib>
using namespace metal;
kernel void mul(const device float* a [[buffer(0)]], const device float* b [[buffer(1)]],
                device float* c [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    c[i] = a[i] * b[i];
}
"""


def address(buf) -> int:
    return np.asarray(buf).__array_interface__["data"][0]


def test_repeats_and_changes_are_checked(device):
    mul = device.compile(SRC).mul
    n = 1000
    a = device.asarray(np.arange(n, dtype=np.float32))
    b = device.asarray(np.full(n, 2.0, np.float32))
    c = device.empty(n, np.float32)
    for _ in range(3):  # the first call binds, the next ones repeat
        mul(n, a, b, c)
    np.testing.assert_array_equal(np.asarray(c), np.arange(n, dtype=np.float32) * 2)
    with pytest.raises(mc.ArgumentError, match="grid"):  # a longer grid than the Buffers hold
        mul(n + 1, a, b, c)
    short = device.empty(n - 1, np.float32)
    with pytest.raises(mc.ArgumentError):  # a shorter Buffer
        mul(n, a, b, short)
    ints = device.empty(n, np.int32)
    with pytest.raises(mc.ArgumentError, match="int32|int"):  # another element type
        mul(n, a, b, ints)
    mul(n, a, b, c)  # and back to the remembered call
    mul(n // 2, b, b, c)  # same Buffers, another grid and order
    np.testing.assert_array_equal(np.asarray(c)[: n // 2], np.full(n // 2, 4.0, np.float32))
    np.testing.assert_array_equal(np.asarray(c)[n // 2:], np.arange(n // 2, n, dtype=np.float32) * 2)


def test_a_new_buffer_at_a_freed_address_is_the_one_written(device):
    mul = device.compile(SRC).mul
    n = 1 << 19  # a cached size class on the CPU and CUDA
    a = device.asarray(np.full(n, 3.0, np.float32))
    b = device.asarray(np.full(n, 5.0, np.float32))
    c = device.empty(n, np.float32)
    mul(n, a, b, c)
    old = address(c)
    del c
    device.synchronize()
    gc.collect()
    fresh = device.empty(n, np.float32)
    mul(n, a, b, fresh)  # the same key as the remembered call when the block was reused
    np.testing.assert_array_equal(np.asarray(fresh), np.full(n, 15.0, np.float32))
    if device.backend in ("cpu", "cuda") and not device.sandbox:
        assert address(fresh) == old


def test_calls_from_threads_stay_correct(device):
    import threading

    mul = device.compile(SRC).mul
    n = 256
    errors = []

    def work(k):
        try:
            a = device.asarray(np.full(n, float(k), np.float32))
            b = device.asarray(np.full(n, 2.0, np.float32))
            c = device.empty(n, np.float32)
            for _ in range(200):
                mul(n, a, b, c)
                if np.asarray(c)[0] != 2.0 * k:
                    errors.append(k)
                    return
        except Exception as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


SHAPE_SRC = """
#include <metal_stdlib>
using namespace metal;
kernel void shape(device uint* out [[buffer(0)]], uint i [[thread_position_in_grid]],
                  uint asked [[dispatch_threads_per_threadgroup]], uint tg [[threads_per_threadgroup]],
                  uint g [[threadgroup_position_in_grid]]) {
    out[4 * i] = i;
    out[4 * i + 1] = asked;
    out[4 * i + 2] = tg;
    out[4 * i + 3] = g;
}
kernel void reverse(device uint* out [[buffer(0)]], threadgroup uint* shared [[threadgroup(0)]],
                    uint i [[thread_position_in_threadgroup]], uint n [[threads_per_threadgroup]]) {
    shared[i] = i * 7;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    out[i] = shared[n - 1 - i];
}
"""


def test_a_repeat_binds_the_threadgroup_of_its_own_grid(device):
    # A repeated call reuses the automatic threadgroup chosen for the remembered grid: each grid's
    # threadgroup must be the one a first call of that grid gets, min(n, the backend's automatic
    # size), and so its threads_per_threadgroup (the last group's own size where it is partial:
    # 1000 threads in groups of 256 on CUDA) and group positions.
    shape = device.compile(SHAPE_SRC).shape
    out = device.zeros(4 * 4096, np.uint32)
    automatic = None
    for n in (4096, 1, 1000, 1, 7, 4096, 7):
        for call in ("binds", "repeats"):  # the grid changed, then the same call again
            shape(n, out)
            got = np.asarray(out)[: 4 * n].reshape(n, 4)
            automatic = automatic or int(got[0, 1])  # 4096 threads: the backend's whole automatic size
            asked = min(n, automatic)
            group = np.arange(n, dtype=np.uint32) // asked
            want = np.stack([np.arange(n), np.full(n, asked), np.minimum(asked, n - group * asked), group], 1)
            np.testing.assert_array_equal(got, want.astype(np.uint32), err_msg=f"grid {n}, the call that {call}")


def test_one_group_calls_around_threadgroup_memory(device):
    # One-group calls without threadgroup memory lay none out on the worker (dispatch id 0); calls
    # with it in between must get their own memory, of their own length, every time.
    lib = device.compile(SHAPE_SRC)
    out = device.zeros(4 * 4096, np.uint32)
    rev = device.zeros(256, np.uint32)
    for n in (1, 5, 64, 3, 256):
        lib.shape(1, out)
        np.testing.assert_array_equal(np.asarray(out)[:4], [0, 1, 1, 0])
        lib.reverse(n, rev, threadgroup=n, threadgroup_memory=(4 * n + 15) // 16 * 16)
        np.testing.assert_array_equal(np.asarray(rev)[:n], np.arange(n, dtype=np.uint32)[::-1] * 7)
        lib.shape(1, out)
        np.testing.assert_array_equal(np.asarray(out)[:4], [0, 1, 1, 0])
