"""Several Python threads using one device at once: calls, compiles and batches
from different threads must neither interfere nor deadlock."""

from __future__ import annotations

import threading

import numpy as np

import metalcall as mc

SRC = """
#include <metal_stdlib>
using namespace metal;
kernel void axpb(const device float* x [[buffer(0)]], device float* y [[buffer(1)]],
                 constant float& a [[buffer(2)]], constant float& b [[buffer(3)]],
                 uint i [[thread_position_in_grid]]) {
    y[i] = a * x[i] + b;
}
"""


def run_threads(target, count: int = 4) -> list[BaseException]:
    errors: list[BaseException] = []

    def guarded(k: int) -> None:
        try:
            target(k)
        except BaseException as e:  # noqa: BLE001 - reported by the test
            errors.append(e)

    threads = [threading.Thread(target=guarded, args=(k,)) for k in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads), "a thread did not finish (deadlock?)"
    return errors


def test_concurrent_calls_small_and_large(device):
    kernel = device.compile(SRC).axpb

    def work(k: int) -> None:
        rng = np.random.default_rng(k)
        for n in (1, 100, 70_000, 300_000):  # inline, pooled and queued paths
            x = rng.random(n, dtype=np.float32)
            y = device.empty(n, np.float32)
            for _ in range(5):
                kernel(n, x, y, float(k), 1.0)
                np.testing.assert_allclose(np.asarray(y), k * x + 1.0, rtol=1e-6)

    assert run_threads(work) == []


def test_concurrent_compiles_of_distinct_sources(device):
    def work(k: int) -> None:
        src = SRC.replace("axpb", f"axpb_thread{k}")
        kernel = device.compile(src).function(f"axpb_thread{k}")
        x = np.arange(64, dtype=np.float32)
        y = np.zeros(64, np.float32)
        kernel(64, x, y, 2.0, float(k))
        np.testing.assert_array_equal(y, 2 * x + k)

    assert run_threads(work) == []


def test_batches_are_per_thread(device):
    kernel = device.compile(SRC).axpb

    def work(k: int) -> None:
        x = device.asarray(np.full(1000, k, np.float32))
        y = device.empty(1000, np.float32)
        z = device.empty(1000, np.float32)
        with device.batch():
            kernel(1000, x, y, 2.0, 0.0)
            kernel(1000, y, z, 1.0, 1.0)  # reads what the first call wrote
        np.testing.assert_array_equal(np.asarray(z), 2.0 * k + 1.0)

    assert run_threads(work) == []


FILL_SRC = """
#include <metal_stdlib>
using namespace metal;
kernel void slow_fill(device uint* x [[buffer(0)]], constant uint& value [[buffer(1)]],
                      uint i [[thread_position_in_grid]]) {
    uint v = 0;
    for (uint k = 0; k < 64; ++k) v = v * 1664525u + 1013904223u;  // time for the other thread to go on
    x[i] = value + (v & 0u);
}
"""


def test_buffer_wait_covers_writers_submitted_from_two_threads(device):
    """A buffer names its uses in queue order: core marks and queues a submission under one lock
    (P2.1 item 11). Two threads submit writers of one buffer at once; a view taken after both calls
    returned waits for whichever of them the queue runs last, so it never changes afterwards. (A race:
    without the lock this fails only when the threads interleave in the few instructions between
    marking and queueing.)"""
    fill = device.compile(FILL_SRC).slow_fill
    n = 1 << 17  # over 2**15 threads: the calls release the GIL and may queue
    x = device.empty(n, np.uint32)
    for round_ in range(20):
        barrier = threading.Barrier(2)
        kept = []

        def writer(k: int) -> None:
            barrier.wait()
            kept.append(fill(n, x, np.uint32(2 * round_ + k)))

        assert run_threads(writer, count=2) == []
        first = np.asarray(x).copy()
        device.synchronize()
        assert np.all(first == first[0]) and first[0] in (2 * round_, 2 * round_ + 1)
        np.testing.assert_array_equal(np.asarray(x), first)
