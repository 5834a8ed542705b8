"""Record once, replay many: ``with dev.record() as g:`` then ``g.replay()``.

Recorded calls do not run while recording; each replay runs them all again, in
order, as one submission, reading and writing the same memory. Checked against
NumPy on every device.
"""

from __future__ import annotations

import gc

import numpy as np
import pytest

import metalcall as mc
from mctest import GOOD_SRC

CONSTANTS_SRC = """
#include <metal_stdlib>
using namespace metal;
constant float scale [[function_constant(0)]];
kernel void scaled(device float* x [[buffer(0)]], uint i [[thread_position_in_grid]]) { x[i] = x[i] * scale; }
"""

OOB_SRC = """
#include <metal_stdlib>
using namespace metal;
kernel void past_end(device float* x [[buffer(0)]], uint i [[thread_position_in_grid]]) { x[i + 1] = 1.0f; }
"""


def test_recorded_calls_do_not_run_until_replayed(device):
    lib = device.compile(GOOD_SRC)
    x = device.zeros(64, np.float32)
    with device.record() as g:
        handle = lib.twice_plus_one(64, x)
        lib.twice_plus_one(64, x)
    assert len(g) == 2
    assert handle.done  # done, having done nothing
    np.testing.assert_array_equal(np.asarray(x), np.zeros(64, np.float32))
    for expected in (3.0, 15.0, 63.0):  # (0*2+1)*2+1 = 3, then 15, then 63
        g.replay().wait()
        np.testing.assert_array_equal(np.asarray(x), np.full(64, expected, np.float32))


def test_replay_sees_new_buffer_contents(device):
    lib = device.compile(GOOD_SRC)
    n = 1000
    a, b, c = device.empty(n, np.float32), device.empty(n, np.float32), device.empty(n, np.float32)
    with device.record() as g:
        lib.mul(n, a, b, c)
        lib.add_scalar(n, c, 0.5, c)
    rng = np.random.default_rng(7)
    for _ in range(3):
        av, bv = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
        np.asarray(a)[:] = av
        np.asarray(b)[:] = bv
        g.replay()  # dropped: waits
        np.testing.assert_array_equal(np.asarray(c), av * bv + np.float32(0.5))


def test_many_replays_of_many_calls(device):
    lib = device.compile(GOOD_SRC)
    x = device.zeros(1, np.float32)
    with device.record() as g:
        for _ in range(300):
            lib.add_scalar(1, x, 1.0, x)
    handles = [g.replay() for _ in range(10)]
    handles[-1].wait()
    assert all(h.done for h in handles)
    assert np.asarray(x)[0] == 3000.0


def test_replay_with_numpy_arguments_writes_them_back(device):
    lib = device.compile(GOOD_SRC)
    n = 257
    a = np.arange(n, dtype=np.float32)
    b = np.full(n, 2.0, np.float32)
    c = np.zeros(n, np.float32)
    with device.record() as g:
        lib.mul(n, a, b, c)
    assert not c.any()
    g.replay()
    np.testing.assert_array_equal(c, a * b)
    a *= 3
    g.replay()
    np.testing.assert_array_equal(c, a * b)


def test_the_graph_keeps_its_buffers_alive(device):
    lib = device.compile(GOOD_SRC)
    out = device.empty(16, np.float32)

    def record() -> mc.Graph:
        src = device.asarray(np.arange(16, dtype=np.float32))  # the graph is its only owner after this
        with device.record() as g:
            lib.copy(16, src, out)
        return g

    g = record()
    gc.collect()
    g.replay().wait()
    np.testing.assert_array_equal(np.asarray(out), np.arange(16, dtype=np.float32))


def test_replay_of_a_specialised_kernel(device):
    kernel = device.compile(CONSTANTS_SRC).function("scaled", constants={"scale": 3.0})
    x = device.asarray(np.ones(8, np.float32))
    with device.record() as g:
        kernel(8, x)
    g.replay()
    g.replay()
    np.testing.assert_array_equal(np.asarray(x), np.full(8, 9.0, np.float32))


def test_recordings_and_batches_do_not_nest(device):
    lib = device.compile(GOOD_SRC)
    x = device.zeros(4, np.float32)
    with device.batch():
        with pytest.raises(mc.ArgumentError, match="do not nest"):
            with device.record():
                pass
        lib.twice_plus_one(4, x)
    with device.record() as g:
        with pytest.raises(mc.ArgumentError, match="do not nest"):
            with device.batch():
                pass
        lib.twice_plus_one(4, x)
    np.testing.assert_array_equal(np.asarray(x), np.ones(4, np.float32))  # the batch ran, the recording not
    g.replay()
    np.testing.assert_array_equal(np.asarray(x), np.full(4, 3.0, np.float32))
    check_usable = lib.twice_plus_one(4, x)
    check_usable.wait()


def test_replay_before_the_end_and_after_an_error(device):
    lib = device.compile(GOOD_SRC)
    x = device.zeros(4, np.float32)
    with device.record() as g:
        lib.twice_plus_one(4, x)
        with pytest.raises(mc.ArgumentError, match="leave the"):
            g.replay()
    with pytest.raises(RuntimeError):
        with device.record() as bad:
            lib.twice_plus_one(4, x)
            raise RuntimeError("inside the recording")
    with pytest.raises(mc.ArgumentError, match="no graph"):
        bad.replay()
    g.replay()
    np.testing.assert_array_equal(np.asarray(x), np.ones(4, np.float32))


def test_a_recording_is_entered_once(device):
    r = device.record()
    with r:
        pass
    with pytest.raises(mc.ArgumentError, match="entered once"):
        with r:
            pass
    assert len(r) == 0
    r.replay().wait()  # an empty graph replays as nothing


def test_replay_in_checked_mode_reports_a_fault():
    if "cpu" not in mc.backends():
        pytest.skip("checked mode is a feature of the cpu backend")
    dev = mc.Device("cpu", checked=True)
    lib = dev.compile(OOB_SRC)
    x = dev.zeros(4, np.float32)
    with dev.record() as g:
        lib.past_end(4, x)
    with pytest.raises(mc.ExecutionError, match="past_end"):
        g.replay()
    y = dev.zeros(4, np.float32)
    lib2 = dev.compile(GOOD_SRC)
    lib2.twice_plus_one(4, y)
    np.testing.assert_array_equal(np.asarray(y), np.ones(4, np.float32))  # still usable


def test_update_rebinds_buffers_and_scalars(device):
    lib = device.compile(GOOD_SRC)
    n = 100
    a1 = device.asarray(np.arange(n, dtype=np.float32))
    a2 = device.asarray(np.full(n, 10.0, np.float32))
    out = device.empty(n, np.float32)
    with device.record() as g:
        lib.add_scalar(n, a1, 1.0, out)
    g.replay()
    np.testing.assert_array_equal(np.asarray(out), np.arange(n, dtype=np.float32) + 1)
    g.update(0, a2, 0.25, out)  # another input buffer and another scalar
    g.replay()
    np.testing.assert_array_equal(np.asarray(out), np.full(n, 10.25, np.float32))
    host_in = np.linspace(0, 1, n, dtype=np.float32)
    host_out = np.zeros(n, np.float32)
    g.update(0, host_in, 2.0, host_out)  # NumPy memory, read and written back by each replay
    del host_in
    g.replay()
    np.testing.assert_array_equal(host_out, np.linspace(0, 1, n, dtype=np.float32) + 2)


def test_update_errors_leave_the_graph_as_it_was(device):
    lib = device.compile(GOOD_SRC)
    x = device.asarray(np.zeros(8, np.float32))
    with device.record() as g:
        lib.twice_plus_one(8, x)
        with pytest.raises(mc.ArgumentError, match="leave the"):
            g.update(0, x)
    with pytest.raises(mc.ArgumentError, match="no call 5"):
        g.update(5, x)
    with pytest.raises(mc.ArgumentError):
        g.update(0, 1.5)  # a scalar where the kernel takes a buffer
    with pytest.raises(mc.ArgumentError):
        g.update(0, np.zeros(8, np.int32))  # the wrong element type
    with pytest.raises(mc.ArgumentError):
        g.update(0)  # too few arguments
    g.replay()
    np.testing.assert_array_equal(np.asarray(x), np.ones(8, np.float32))


def test_update_while_replays_are_in_flight(device):
    # Replays in flight keep the commands they were given (the CPU shares them with the graph
    # rather than copying them): an update changes the replays that come after it only.
    lib = device.compile(GOOD_SRC)
    x, y = device.zeros(1, np.float32), device.zeros(1, np.float32)
    with device.record() as g:
        for _ in range(200):
            lib.add_scalar(1, x, 1.0, x)
    before = [g.replay() for _ in range(5)]
    for k in range(200):
        g.update(k, y, 2.0, y)
    after = [g.replay() for _ in range(3)]
    for h in before + after:
        h.wait()
    assert np.asarray(x)[0] == 1000.0
    assert np.asarray(y)[0] == 1200.0
