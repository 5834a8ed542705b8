"""Soak (P1.5 item 8): 10^5 calls on the CPU, of every argument kind and with failing calls
mixed in, keep the process's resident memory flat. Marked slow; CI runs it (under 60 s)."""

from __future__ import annotations

import sys
import time

import numpy as np
import pytest

import metalcall as mc

SRC = """
#include <metal_stdlib>
using namespace metal;
kernel void axpy(const device float* x [[buffer(0)]], device float* y [[buffer(1)]],
                 constant float& a [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    y[i] = a * x[i] + y[i];
}
"""


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


def run_calls(kernel, dev, count: int) -> None:
    x = np.ones(256, np.float32)
    y = np.zeros(256, np.float32)
    bx = dev.asarray(x)
    by = dev.empty(256, np.float32)
    for k in range(count):
        which = k % 8
        if which == 0:
            kernel(256, x, y, 1.0)  # NumPy arrays in place
        elif which == 1:
            kernel(256, bx, by, np.float32(0.5))  # Buffers, a NumPy scalar
        elif which == 2:
            h = kernel(256, bx, by, 2.0)
            h.wait(timeout=10)
        elif which == 3:
            kernel(128, memoryview(x)[:128], by, 1.0)  # a memoryview
        elif which == 4:
            try:
                kernel(256, x, y, "bad")  # an error path
            except mc.ArgumentError:
                pass
        elif which == 5:
            try:
                kernel((2**32 - 1, 2**21, 2**21), x, y, 1.0)
            except mc.ArgumentError:
                pass
        elif which == 6:
            try:
                kernel(256, np.ones(256, np.complex64), y, 1.0)
            except mc.ArgumentError:
                pass
        else:
            with dev.batch():
                kernel(256, bx, by, 1.0)
    np.asarray(by)


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/statm")
def test_1e5_calls_keep_rss_flat(cpu_device):
    kernel = cpu_device.compile(SRC).axpy
    run_calls(kernel, cpu_device, 20_000)  # warm: caches, allocator pools, hypothesis-free steady state
    before = rss_bytes()
    start = time.monotonic()
    run_calls(kernel, cpu_device, 100_000)
    elapsed = time.monotonic() - start
    grown = rss_bytes() - before
    # 10^5 calls: 4 MiB is 40 bytes a call, far below any leak of a Python object or an Argument.
    assert grown < 4 * 2**20, f"RSS grew by {grown} bytes over 10^5 calls"
    assert elapsed < 60, f"10^5 calls took {elapsed:.1f} s"
    # Still exact.
    x = np.arange(16, dtype=np.float32)
    y = np.ones(16, np.float32)
    kernel(16, x, y, 2.0)
    np.testing.assert_array_equal(y, 2 * np.arange(16, dtype=np.float32) + 1)
