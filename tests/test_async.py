"""Asynchronous execution: Completion, hazard tracking, batches, synchronize (DESIGN.md §2).

No test asserts a timing. Tests of "X waits for the work" read results through a
view taken *before* the call (a view taken after the call would wait by itself,
through hazard tracking), so they fail if the waiting is missing.
"""

from __future__ import annotations

import array
import gc
import threading
import weakref

import numpy as np
import pytest

import metalcall as mc
from mctest import GOOD_SRC, check_usable, slow_expected, with_sandbox_device


device = with_sandbox_device()  # these tests run on Device("cpu", sandbox=True) too

# The `slow` kernel over N_SLOW threads with ITERS iterations takes long enough
# (tens of milliseconds) to be still running when the call returns on an
# asynchronous device. Inputs repeat with period 97, so the NumPy model is cheap.
N_SLOW = 1 << 18
ITERS = 150
PERIOD = 97


def slow_inputs(dev):
    a = (np.arange(N_SLOW) % PERIOD).astype(np.float32) * np.float32(0.25)
    expected = slow_expected(a[:PERIOD], ITERS)[np.arange(N_SLOW) % PERIOD]
    return dev.asarray(a), expected


def assert_slow_result(got, expected):
    np.testing.assert_allclose(got, expected, rtol=1e-5)


def test_call_returns_completion(device):
    lib = device.compile(GOOD_SRC)
    out = device.empty(100, np.uint32)
    h = lib.iota(100, out)
    assert isinstance(h, mc.Completion)
    h.wait()
    assert h.done is True
    assert "done" in repr(h)
    h.wait()  # waiting twice is fine
    np.testing.assert_array_equal(np.asarray(out), np.arange(100))


def test_gpu_time_after_a_large_call(device):
    # CUDA times single calls only on a device opened with timing=True (docs/design.md).
    device = mc.Device(f"{device.backend}:{device.index}", timing=True)
    assert device.timing
    lib = device.compile(GOOD_SRC)
    a, expected = slow_inputs(device)
    out = device.empty(N_SLOW, np.float32)
    h = lib.slow(N_SLOW, a, out, ITERS)
    h.wait()
    assert h.done
    assert h.gpu_time > 0.0
    assert h.gpu_time < 600.0  # seconds, not some other unit
    assert_slow_result(np.asarray(out), expected)


def test_dropping_the_completion_waits(device):
    lib = device.compile(GOOD_SRC)
    a, expected = slow_inputs(device)
    out = device.empty(N_SLOW, np.float32)
    view = np.asarray(out)  # taken while idle: reading it later does not wait
    h = lib.slow(N_SLOW, a, out, ITERS)
    del h  # metalcompute's `del handle`: waits
    assert_slow_result(view, expected)


def test_call_as_a_statement_blocks(device):
    lib = device.compile(GOOD_SRC)
    a, expected = slow_inputs(device)
    out = device.empty(N_SLOW, np.float32)
    view = memoryview(out)
    lib.slow(N_SLOW, a, out, ITERS)  # the Completion is dropped at once
    assert_slow_result(np.frombuffer(view, np.float32), expected)


def test_wait_then_read_an_earlier_view(device):
    lib = device.compile(GOOD_SRC)
    a, expected = slow_inputs(device)
    out = device.empty(N_SLOW, np.float32)
    view = np.asarray(out)
    h = lib.slow(N_SLOW, a, out, ITERS)
    h.wait()
    assert h.done
    assert_slow_result(view, expected)


def test_completion_as_context_manager(device):
    lib = device.compile(GOOD_SRC)
    a, expected = slow_inputs(device)
    out = device.empty(N_SLOW, np.float32)
    view = np.asarray(out)
    with lib.slow(N_SLOW, a, out, ITERS) as h:
        pass
    assert h.done
    assert_slow_result(view, expected)


def test_hazard_tracking_view_waits_for_pending_work(device):
    # A kept Completion lets the call run on; taking a view of its output waits for it.
    lib = device.compile(GOOD_SRC)
    a, expected = slow_inputs(device)
    out = device.empty(N_SLOW, np.float32)
    h = lib.slow(N_SLOW, a, out, ITERS)
    got = np.asarray(out)  # waits for the call: never a half-written buffer
    assert_slow_result(got, expected)
    assert h.done
    del h


@pytest.mark.parametrize("how", ["asarray", "memoryview", "numpy", "wait"])
def test_hazard_tracking_every_way_of_reading(device, how):
    lib = device.compile(GOOD_SRC)
    a, expected = slow_inputs(device)
    out = device.empty(N_SLOW, np.float32)
    h = lib.slow(N_SLOW, a, out, ITERS)
    if how == "asarray":
        got = np.asarray(out)
    elif how == "memoryview":
        got = np.frombuffer(memoryview(out), np.float32)
    elif how == "numpy":
        got = out.numpy()
    else:
        view = np.frombuffer(memoryview(out), np.float32)  # may be taken... after waiting on `out`
        out.wait()
        got = view
    assert_slow_result(got, expected)
    del h


def test_large_call_on_buffers(device):
    # A large memory-bound call: returns as soon as it is queued, the view waits.
    n = 1 << 23
    lib = device.compile(GOOD_SRC)
    a = device.empty(n, np.float32)
    b = device.empty(n, np.float32)
    c = device.empty(n, np.float32)
    va, vb = np.asarray(a), np.asarray(b)
    va[:] = 1.5
    vb[:] = np.float32(-2.0)
    va[-1] = 3.0
    h = lib.mul(n, a, b, c)
    out = np.asarray(c)
    assert (out[:-1] == -3.0).all() and out[-1] == -6.0
    assert h.done
    del va, vb, out, h


def test_small_call_after_pending_large_call_is_ordered(device):
    # A small call (which may run at once when the queue is idle) must still run after
    # queued work it depends on: the queue is in order.
    lib = device.compile(GOOD_SRC)
    a, expected = slow_inputs(device)
    out = device.empty(N_SLOW, np.float32)
    h = lib.slow(N_SLOW, a, out, ITERS)  # pending, on Buffers only
    small = np.zeros(8, np.float32)
    lib.copy(8, out, small)  # a NumPy array: returns once written
    assert_slow_result(small, expected[:8])
    h2 = lib.twice_plus_one(8, out)  # Buffers only, small
    got = np.asarray(out)
    assert_slow_result(got[:8], expected[:8] * 2 + 1)
    assert_slow_result(got[8:], expected[8:])
    assert h.done and h2.done


def test_call_with_numpy_arrays_returns_after_they_are_written(device):
    lib = device.compile(GOOD_SRC)
    a_buf, expected = slow_inputs(device)
    a = np.asarray(a_buf).copy()
    out = np.zeros(N_SLOW, np.float32)
    h = lib.slow(N_SLOW, a, out, ITERS)
    assert h.done, "foreign memory is borrowed only for the duration of the call"
    assert_slow_result(out, expected)
    # Mixed: a Buffer input, a NumPy output.
    out2 = np.zeros(N_SLOW, np.float32)
    h2 = lib.slow(N_SLOW, a_buf, out2, ITERS)
    assert h2.done
    assert_slow_result(out2, expected)


def test_dependent_async_calls_run_in_order(device):
    lib = device.compile(GOOD_SRC)
    a, expected = slow_inputs(device)
    mid = device.empty(N_SLOW, np.float32)
    out = device.empty(N_SLOW, np.float32)
    handles = [lib.slow(N_SLOW, a, mid, ITERS), lib.twice_plus_one(N_SLOW, mid), lib.copy(N_SLOW, mid, out)]
    assert_slow_result(np.asarray(out), expected * 2 + 1)
    for h in handles:
        h.wait()
        assert h.done


def test_many_calls_kept_then_synchronize(device):
    lib = device.compile(GOOD_SRC)
    a, expected = slow_inputs(device)
    outs = [device.empty(N_SLOW, np.float32) for _ in range(3)]
    views = [np.asarray(o) for o in outs]
    x = device.zeros(N_SLOW, np.float32)
    xview = np.asarray(x)
    handles = [lib.slow(N_SLOW, a, o, ITERS) for o in outs]
    handles += [lib.twice_plus_one(N_SLOW, x) for _ in range(5)]  # x -> 2x+1, five times: 31
    device.synchronize()
    for h in handles:
        assert h.done
    for v in views:
        assert_slow_result(v, expected)
    assert (xview == 31.0).all()


def test_synchronize_with_nothing_pending(device):
    device.synchronize()
    device.synchronize()
    check_usable(device)


# ---- batches --------------------------------------------------------------------------


def test_batch_runs_dependent_calls_in_order(device):
    lib = device.compile(GOOD_SRC)
    n = 10_000
    a = device.asarray(np.arange(n, dtype=np.float32))
    b = device.empty(n, np.float32)
    c = device.empty(n, np.float32)
    with device.batch() as batch:
        assert isinstance(batch, mc.Batch)
        h1 = lib.copy(n, a, b)  # b = a
        h2 = lib.twice_plus_one(n, b)  # b = 2a + 1
        h3 = lib.mul(n, b, b, c)  # c = b * b
        h4 = lib.add_scalar(n, c, -1.0, c)  # c = b*b - 1
        assert len(batch) == 4
        for h in (h1, h2, h3, h4):
            assert isinstance(h, mc.Completion)
            assert not h.done, "nothing runs before the batch is committed"
    for h in (h1, h2, h3, h4):
        h.wait()
        assert h.done
    assert batch.done
    batch.wait()
    expected_b = np.arange(n, dtype=np.float32) * 2 + 1
    np.testing.assert_array_equal(np.asarray(b), expected_b)
    np.testing.assert_array_equal(np.asarray(c), expected_b * expected_b - 1)


def test_batch_with_numpy_arrays(device):
    lib = device.compile(GOOD_SRC)
    n = 4096
    x = np.arange(n, dtype=np.float32)
    out = np.zeros(n, np.float32)
    with device.batch():
        lib.twice_plus_one(n, x)
        lib.twice_plus_one(n, x)
        lib.copy(n, x, out)
        assert not out.any(), "recorded, not run yet"
    expected = (np.arange(n, dtype=np.float32) * 2 + 1) * 2 + 1
    np.testing.assert_array_equal(x, expected)  # written back when the block ends
    np.testing.assert_array_equal(out, expected)


def test_batch_keeps_numpy_arrays_alive(device):
    lib = device.compile(GOOD_SRC)
    n = 1 << 16
    out = device.empty(n, np.float32)
    raw = bytearray(4 * n)  # the other reference to the output memory
    with device.batch():
        a = np.arange(n, dtype=np.float32) + 1
        lib.mul(n, a, np.full(n, 2.0, np.float32), out)  # the second input is a temporary
        del a
        dst = np.frombuffer(raw, np.float32)
        lib.copy(n, out, dst)
        del dst
        gc.collect()
        # Reuse the freed memory, if it was freed: a kernel reading it would see garbage.
        junk = [np.full(n, -7.0, np.float32) for _ in range(8)]
    del junk
    expected = (np.arange(n, dtype=np.float32) + 1) * 2
    np.testing.assert_array_equal(np.asarray(out), expected)
    np.testing.assert_array_equal(np.frombuffer(raw, np.float32), expected)


def test_batch_is_the_only_reference_to_its_arguments(device):
    # Arguments made in the call itself: once it returns, only the batch holds them.
    lib = device.compile(GOOD_SRC)
    n = 1 << 14
    rng = np.random.default_rng(7)
    a_values = rng.integers(-100, 100, n).astype(np.float32)  # integers: every step is exact
    b_values = rng.integers(-100, 100, n).astype(np.float32)
    out = np.zeros(n, np.float32)
    with device.batch():
        lib.mul(n, a_values.copy(), array.array("f", b_values.tobytes()), out)
        a = a_values + 1
        watch = weakref.ref(a)
        lib.add_scalar(n, a, -1.0, a)  # a = a_values, written in place
        lib.mul(n, a, out, out)  # out = a_values * a_values * b_values
        del a
        gc.collect()
        assert watch() is not None, "the batch keeps the array alive"
        junk = [np.full(n, -7.0, np.float32) for _ in range(8)]  # reuse freed memory, if any was freed
        assert not out.any(), "recorded, not run yet"
    del junk
    gc.collect()
    assert watch() is None, "the batch lets go of the array after the commit"
    np.testing.assert_array_equal(out, a_values * a_values * b_values)


def test_batch_entered_and_dropped_without_exit_is_discarded(device):
    lib = device.compile(GOOD_SRC)
    x = device.asarray(np.ones(16, np.float32))
    b = device.batch()
    b.__enter__()
    lib.twice_plus_one(16, x)
    assert len(b) == 1
    del b
    gc.collect()
    np.testing.assert_array_equal(np.asarray(x), np.ones(16, np.float32))  # never ran
    lib.twice_plus_one(16, x)  # runs at once again
    np.testing.assert_array_equal(np.asarray(x), np.full(16, 3.0, np.float32))
    with device.batch():  # and a new batch can open on this thread
        lib.twice_plus_one(16, x)
    np.testing.assert_array_equal(np.asarray(x), np.full(16, 7.0, np.float32))


def test_exception_inside_batch_discards(device):
    lib = device.compile(GOOD_SRC)
    n = 1000
    x = device.asarray(np.arange(n, dtype=np.float32))
    y = np.arange(n, dtype=np.float32)
    with pytest.raises(ZeroDivisionError):
        with device.batch():
            h = lib.twice_plus_one(n, x)
            lib.twice_plus_one(n, y)
            1 / 0  # noqa: B018
    assert h.done  # discarded work counts as finished, not pending forever
    np.testing.assert_array_equal(np.asarray(x), np.arange(n, dtype=np.float32))
    np.testing.assert_array_equal(y, np.arange(n, dtype=np.float32))
    # The device and a new batch work afterwards.
    with device.batch():
        lib.twice_plus_one(n, x)
    np.testing.assert_array_equal(np.asarray(x), np.arange(n, dtype=np.float32) * 2 + 1)
    check_usable(device)


def test_nested_batches_are_an_argument_error(device):
    lib = device.compile(GOOD_SRC)
    x = device.asarray(np.ones(16, np.float32))
    with pytest.raises(mc.ArgumentError, match="nest"):
        with device.batch():
            lib.twice_plus_one(16, x)
            with device.batch():
                pass
    # The outer batch was discarded by the exception.
    np.testing.assert_array_equal(np.asarray(x), np.ones(16, np.float32))
    with device.batch():
        lib.twice_plus_one(16, x)
    np.testing.assert_array_equal(np.asarray(x), np.full(16, 3.0, np.float32))
    check_usable(device)


def test_waiting_inside_a_batch_is_an_argument_error(device):
    lib = device.compile(GOOD_SRC)
    x = device.asarray(np.ones(16, np.float32))
    with device.batch():
        h = lib.twice_plus_one(16, x)
        with pytest.raises(mc.ArgumentError, match="batch"):
            h.wait()
    h.wait()
    np.testing.assert_array_equal(np.asarray(x), np.full(16, 3.0, np.float32))


def test_bad_call_inside_a_batch_raises_at_once(device):
    lib = device.compile(GOOD_SRC)
    x = device.asarray(np.ones(16, np.float32))
    with device.batch():
        lib.twice_plus_one(16, x)
        with pytest.raises(mc.ArgumentError):
            lib.twice_plus_one(16, x, x)  # wrong count
        lib.twice_plus_one(16, x)
    np.testing.assert_array_equal(np.asarray(x), np.full(16, 7.0, np.float32))


def test_batch_object_is_single_use(device):
    b = device.batch()
    with b:
        pass
    with pytest.raises(mc.ArgumentError):
        with b:
            pass
    check_usable(device)


def test_empty_batch_and_empty_grid_in_batch(device):
    lib = device.compile(GOOD_SRC)
    with device.batch() as b:
        pass
    assert b.done
    x = device.asarray(np.ones(4, np.float32))
    with device.batch():
        lib.twice_plus_one(0, x)
    np.testing.assert_array_equal(np.asarray(x), np.ones(4, np.float32))


def test_batch_is_per_thread(device):
    # Calls from another thread while a batch is open on this one run on their own.
    lib = device.compile(GOOD_SRC)
    x = device.asarray(np.ones(8, np.float32))
    other = np.zeros(8, np.uint32)
    errors = []

    def worker():
        try:
            lib.iota(8, other)
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    with device.batch():
        lib.twice_plus_one(8, x)
        t = threading.Thread(target=worker)
        t.start()
        t.join(timeout=60)
        assert not t.is_alive()
        assert not errors, errors
        np.testing.assert_array_equal(other, np.arange(8))
    np.testing.assert_array_equal(np.asarray(x), np.full(8, 3.0, np.float32))


def test_calls_from_several_threads(device):
    lib = device.compile(GOOD_SRC)
    n = 20_000
    results = {}
    errors = []

    def worker(k):
        try:
            a = np.full(n, k, np.float32)
            buf = device.empty(n, np.float32)
            for _ in range(5):
                lib.mul(n, a, a, buf)
                lib.twice_plus_one(n, buf)
            results[k] = np.asarray(buf).copy()
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors, errors
    for k in range(4):
        np.testing.assert_array_equal(results[k], np.full(n, k * k * 2 + 1, np.float32))


def test_buffers_deleted_while_work_is_pending(device):
    # The work keeps its buffers alive: dropping every Python reference is safe.
    lib = device.compile(GOOD_SRC)
    a, expected = slow_inputs(device)
    out = device.empty(N_SLOW, np.float32)
    out_view = np.asarray(out)
    h = lib.slow(N_SLOW, a, out, ITERS)
    del a, out  # the input's memory would be unmapped if the work did not hold it
    gc.collect()
    h.wait()
    assert_slow_result(out_view, expected)


def test_exit_with_pending_work(run_python):
    # Leaving the interpreter with work in flight neither crashes nor hangs.
    code = (
        "import numpy as np, metalcall as mc\n"
        f"src = {GOOD_SRC!r}\n"
        "dev = mc.Device()\n"
        "lib = dev.compile(src)\n"
        f"a = dev.asarray(np.ones({N_SLOW}, np.float32))\n"
        f"outs = [dev.empty({N_SLOW}, np.float32) for _ in range(4)]\n"
        f"handles = [lib.slow({N_SLOW}, a, o, {ITERS}) for o in outs]\n"
        "with dev.batch():\n"
        f"    lib.slow({N_SLOW}, a, outs[0], {ITERS})\n"
        "print('leaving')\n"
    )
    r = run_python(code, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "leaving"


def test_batch_commit_is_asynchronous_but_safe(device):
    lib = device.compile(GOOD_SRC)
    a, expected = slow_inputs(device)
    out = device.empty(N_SLOW, np.float32)
    out2 = device.empty(N_SLOW, np.float32)
    early_view = np.asarray(out2)  # taken while idle: does not wait by itself
    with device.batch() as batch:
        lib.slow(N_SLOW, a, out, ITERS)
        lib.twice_plus_one(N_SLOW, out)
        lib.copy(N_SLOW, out, out2)
    assert_slow_result(np.asarray(out), expected * 2 + 1)  # hazard tracking covers batches
    batch.wait()
    assert batch.done and batch.gpu_time > 0
    assert_slow_result(early_view, expected * 2 + 1)


def test_synchronize_waits_for_a_batch(device):
    lib = device.compile(GOOD_SRC)
    a, expected = slow_inputs(device)
    out = device.empty(N_SLOW, np.float32)
    view = np.asarray(out)
    with device.batch():
        lib.slow(N_SLOW, a, out, ITERS)
    device.synchronize()
    assert_slow_result(view, expected)
