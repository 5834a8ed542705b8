"""The queue's paths for mid-size calls: run on the calling thread, queued for the
executor, or run by a thread that waits for them (DESIGN.md §2).

Every device runs these; they were written for the CPU queue, whose path depends
on the work a kernel measured on earlier calls and on whether the queue is idle.
A long call kept pending in front makes the queue busy, so that the calls behind
it are queued. No test asserts a timing: each checks results that a lost, repeated
or reordered call, or a read that does not wait, would get wrong.
"""

from __future__ import annotations

import threading

import numpy as np

import metalcall as mc

SRC = """
#include <metal_stdlib>
using namespace metal;

kernel void add_one(device uint* x [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    x[i] += 1u;
}

kernel void times_three(device uint* x [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    x[i] *= 3u;
}

// x = x + 1 (op 0) or x * 3 (op 1) after `iters` turns of busy work: a small grid
// with a lot of work per thread.
kernel void step(device uint* x [[buffer(0)]], constant uint& op [[buffer(1)]],
                 constant uint& iters [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    float acc = float(x[i] & 1023u);
    for (uint k = 0; k < iters; ++k) acc = acc * 0.5f + 1.0f;
    uint v = acc < 0.0f ? 0u : x[i];  // acc stays >= 0: v is x[i], after the loop
    x[i] = op == 0u ? v + 1u : v * 3u;
}

// Keeps the queue busy for a while; its result is not checked.
kernel void busy(device float* y [[buffer(0)]], constant uint& iters [[buffer(1)]],
                 uint i [[thread_position_in_grid]]) {
    float acc = y[i];
    for (uint k = 0; k < iters; ++k) acc = acc * 0.5f + 1.0f;
    y[i] = acc;
}
"""

MID = 100_000  # over the old 32,768-thread inline limit, well under a millisecond of work
BUSY_N = 1 << 18
BUSY_ITERS = 400


def kernels(dev: mc.Device):
    lib = dev.compile(SRC)
    return lib.add_one, lib.times_three, lib.busy


def occupy(dev: mc.Device, busy) -> mc.Completion:
    """A long call left pending: the queue is busy while the next calls are made."""
    y = dev.empty(BUSY_N, np.float32)
    return busy(BUSY_N, y, BUSY_ITERS)


def test_kept_completions_run_in_order(device):
    add_one, times_three, busy = kernels(device)
    rng = np.random.default_rng(1)
    ops = rng.integers(0, 2, 120)
    x = device.asarray(np.arange(MID, dtype=np.uint32))
    want = np.arange(MID, dtype=np.uint32)
    for _ in range(2):  # the second round runs with the kernels' costs measured
        pending = [occupy(device, busy)]
        for op in ops:
            pending.append(add_one(MID, x) if op == 0 else times_three(MID, x))
            want = want + np.uint32(1) if op == 0 else want * np.uint32(3)
        for h in pending:
            h.wait()
        assert all(h.done for h in pending)
        np.testing.assert_array_equal(np.asarray(x), want)


def test_kept_long_calls_then_wait_on_the_last(device):
    # Long enough to be queued even on an idle queue, so that the waiting thread may
    # find several calls not started yet and run them itself, in order.
    step = device.compile(SRC).step
    n, iters = 4096, 300
    rng = np.random.default_rng(2)
    x = device.asarray(np.arange(n, dtype=np.uint32))
    want = np.arange(n, dtype=np.uint32)
    for _ in range(6):  # the first calls measure the kernel's cost
        ops = rng.integers(0, 2, 12)
        pending = [step(n, x, int(op), iters) for op in ops]
        for op in ops:
            want = want + np.uint32(1) if op == 0 else want * np.uint32(3)
        pending[-1].wait()
        np.testing.assert_array_equal(np.asarray(x), want)
        for h in pending:
            h.wait()


def test_waiting_on_a_middle_completion(device):
    add_one, _, busy = kernels(device)
    x = device.asarray(np.zeros(MID, np.uint32))
    view = np.asarray(x)  # taken while idle: reading it later does not wait
    first = occupy(device, busy)
    pending = [add_one(MID, x) for _ in range(50)]
    pending[24].wait()  # runs (or waits for) everything up to the 25th call, at least
    assert view.min() >= 25
    if device.backend == "cpu":  # the CPU queue finishes Completions in order, at once
        assert first.done and all(h.done for h in pending[:25])
    for h in pending:
        h.wait()
    np.testing.assert_array_equal(view, np.full(MID, 50, np.uint32))


def test_dropped_completion_waits_behind_queued_work(device):
    add_one, _, busy = kernels(device)
    x = device.asarray(np.zeros(MID, np.uint32))
    view = np.asarray(x)
    keep = occupy(device, busy)
    for k in range(1, 31):
        add_one(MID, x)  # a statement: the dropped Completion waits
        assert view[0] == k and view[-1] == k
    keep.wait()


def test_dropped_completions_back_to_back(device):
    add_one, _, _ = kernels(device)
    for n in (1, 1000, MID, 1 << 20):
        x = device.asarray(np.zeros(n, np.uint32))
        view = np.asarray(x)
        for k in range(1, 41):
            add_one(n, x)
            assert view[0] == k and view[-1] == k, f"{n} threads, call {k}"
        np.testing.assert_array_equal(view, np.full(n, 40, np.uint32))


def test_view_taken_while_work_is_pending_waits(device):
    add_one, times_three, busy = kernels(device)
    x = device.asarray(np.ones(MID, np.uint32))
    keep = [occupy(device, busy)]
    keep += [add_one(MID, x) for _ in range(20)]
    keep.append(times_three(MID, x))
    got = np.asarray(x)  # hazard tracking: waits for every pending call on x
    np.testing.assert_array_equal(got, np.full(MID, 63, np.uint32))
    keep.append(add_one(MID, x))
    assert memoryview(x).tobytes() == np.full(MID, 64, np.uint32).tobytes()


def test_synchronize_runs_queued_work(device):
    add_one, _, busy = kernels(device)
    x = device.asarray(np.zeros(MID, np.uint32))
    view = np.asarray(x)
    keep = [occupy(device, busy)] + [add_one(MID, x) for _ in range(30)]
    device.synchronize()
    assert all(h.done for h in keep)  # synchronize waits for all submitted work
    np.testing.assert_array_equal(view, np.full(MID, 30, np.uint32))


def test_numpy_arguments_behind_queued_work(device):
    add_one, _, busy = kernels(device)
    a = np.zeros(MID, np.uint32)
    keep = occupy(device, busy)
    for k in range(1, 11):
        add_one(MID, a).wait()  # foreign memory: written back before the call returns
        assert a[0] == k and a[-1] == k
    keep.wait()


def test_threads_calling_at_once(device):
    add_one, times_three, busy = kernels(device)
    errors: list[BaseException] = []
    shared = device.asarray(np.zeros(MID, np.uint32))
    lock = threading.Lock()

    def work(k: int) -> None:
        try:
            own = device.asarray(np.full(MID, k, np.uint32))
            view = np.asarray(own)
            pending = []
            for j in range(30):
                if j % 3 == 0:
                    add_one(MID, own)  # dropped: waits
                else:
                    pending.append(add_one(MID, own))
                if j == 10:
                    pending.append(occupy(device, busy))
            pending.append(times_three(MID, own))
            np.testing.assert_array_equal(np.asarray(own), np.full(MID, (k + 30) * 3, np.uint32))
            if device.backend == "cpu":  # the view above waited for the last use of `own`; the queue is in order
                assert all(h.done for h in pending)
            np.testing.assert_array_equal(view, np.full(MID, (k + 30) * 3, np.uint32))
            for _ in range(10):
                with lock:  # one thread at a time updates the shared buffer, in any order
                    add_one(MID, shared)
        except BaseException as e:  # noqa: BLE001 - reported by the test
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads), "a thread did not finish (deadlock?)"
    assert errors == []
    np.testing.assert_array_equal(np.asarray(shared), np.full(MID, 40, np.uint32))


def test_another_thread_waits_for_queued_work(device):
    add_one, _, busy = kernels(device)
    x = device.asarray(np.zeros(MID, np.uint32))
    keep = [occupy(device, busy)] + [add_one(MID, x) for _ in range(25)]
    seen: list[np.ndarray] = []
    reader = threading.Thread(target=lambda: seen.append(np.array(np.asarray(x))))
    reader.start()
    reader.join(timeout=120)
    assert not reader.is_alive()
    np.testing.assert_array_equal(seen[0], np.full(MID, 25, np.uint32))
    for h in keep:
        h.wait()
