"""The Metal driver's paths that only a failure takes, run through the simulator's driver, which ends
command buffers with the same code as metal_queue.mm (metal_plan/command_buffer_end.hpp). The
simulator injects the failure METALCALL_METAL_SIM_FAULT names into the command buffers committed
while it is set (docs/metal-backend.md). P2.1 items 3, 7, 10 and 11; every value is checked."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import metalcall as mc

SRC = """
#include <metal_stdlib>
using namespace metal;
kernel void scale(device float* x [[buffer(0)]], constant float& s [[buffer(1)]],
                  uint i [[thread_position_in_grid]]) {
    x[i] = x[i] * s;
}
kernel void iota(device float* x [[buffer(0)]], uint i [[thread_position_in_grid]]) { x[i] = float(i); }
kernel void fill(device float* x [[buffer(0)]], constant float& v [[buffer(1)]], uint i [[thread_position_in_grid]]) {
    x[i] = v;
}
kernel void read_texture(texture2d<float, access::read> t [[texture(0)]], device float* out [[buffer(0)]],
                         uint2 g [[thread_position_in_grid]]) {
    out[g.y * t.get_width() + g.x] = t.read(g).x;
}
"""


@pytest.fixture(params=["apple7", "amd"])
def sim(request) -> mc.Device:
    return mc.Device("metal-sim", family=request.param)


def unaligned(values: np.ndarray) -> np.ndarray:
    """A copy of `values` 4 bytes into its allocation: staged, and copied back after the call."""
    raw = np.zeros(values.nbytes + 8, np.uint8)
    view = raw[4 : 4 + values.nbytes].view(values.dtype)
    view[:] = values
    return view


def synchronizes(dev: mc.Device) -> bool:
    """True when dev.synchronize() returns within 60 s (a queue that never hears of an end hangs)."""
    done = threading.Event()
    threading.Thread(target=lambda: (dev.synchronize(), done.set()), daemon=True).start()
    return done.wait(60)


def still_works(sim: mc.Device, lib: mc.Library) -> None:
    host = unaligned(np.arange(64, dtype=np.float32))
    lib.scale(64, host, np.float32(3.0))
    np.testing.assert_array_equal(host, np.arange(64, dtype=np.float32) * 3)
    buf = sim.asarray(np.ones(64, np.float32))
    lib.scale(64, buf, np.float32(5.0))
    np.testing.assert_array_equal(np.asarray(buf), np.full(64, 5.0, np.float32))


@pytest.mark.parametrize("step", ["copy-back", "release"])
def test_a_step_of_completion_that_fails_leaves_the_device_usable(sim, monkeypatch, step):
    """P2.1 item 7: an exception while a command buffer is ended (copying host memory back, releasing
    its resources) is the call's error; the Completion still finishes, waits on its Buffers return,
    synchronize() returns, and later calls run."""
    lib = sim.compile(SRC)
    host = unaligned(np.arange(64, dtype=np.float32))
    buf = sim.asarray(np.arange(64, dtype=np.float32))
    monkeypatch.setenv("METALCALL_METAL_SIM_FAULT", step)
    with pytest.raises(mc.ExecutionError, match=f"fault injected \\(METALCALL_METAL_SIM_FAULT={step}\\)"):
        lib.scale(64, host, np.float32(2.0))
    pending = lib.scale(64, buf, np.float32(2.0))  # asynchronous: its Completion holds the error
    monkeypatch.delenv("METALCALL_METAL_SIM_FAULT")
    with pytest.raises(mc.ExecutionError, match="fault injected"):
        pending.wait()
    assert synchronizes(sim)
    # The GPU ran the kernel: the Buffer holds its result (only the host copy-back was lost).
    np.testing.assert_array_equal(np.asarray(buf), np.arange(64, dtype=np.float32) * 2)
    if step == "release":  # the copy-back ran before the release failed
        np.testing.assert_array_equal(host, np.arange(64, dtype=np.float32) * 2)
    still_works(sim, lib)


def test_a_failed_batch_leaves_the_device_usable(sim, monkeypatch):
    lib = sim.compile(SRC)
    host = unaligned(np.ones(32, np.float32))
    monkeypatch.setenv("METALCALL_METAL_SIM_FAULT", "copy-back")
    with pytest.raises(mc.ExecutionError, match="a copy-back failed"):
        with sim.batch():
            lib.scale(32, host, np.float32(2.0))
            lib.scale(32, host, np.float32(3.0))
    monkeypatch.delenv("METALCALL_METAL_SIM_FAULT")
    np.testing.assert_array_equal(host, np.ones(32, np.float32))  # nothing copied back
    with sim.batch():
        lib.scale(32, host, np.float32(2.0))
        lib.scale(32, host, np.float32(3.0))
    np.testing.assert_array_equal(host, np.full(32, 6.0, np.float32))
    assert synchronizes(sim)


@pytest.mark.parametrize("kind", ["gpu:removed", "gpu:not-permitted"])
def test_a_lost_gpu_says_to_restart_the_process(sim, monkeypatch, kind):
    """P2.1 item 10: devices stay open for the whole process, so the advice for a GPU that is gone is to
    restart the process or use the CPU, never to open the device again. Host memory is not copied back
    from a failed command buffer."""
    lib = sim.compile(SRC)
    host = unaligned(np.arange(16, dtype=np.float32))
    monkeypatch.setenv("METALCALL_METAL_SIM_FAULT", kind)
    with pytest.raises(mc.ExecutionError) as failure:
        lib.scale(16, host, np.float32(2.0))
    monkeypatch.delenv("METALCALL_METAL_SIM_FAULT")
    text = str(failure.value)
    assert text.startswith("[metal-sim] the GPU failed while running kernel 'scale': ")
    assert text.endswith('The GPU is no longer available to this process: restart the process, or use mc.Device("cpu")')
    assert "again" not in text and "reopen" not in text
    np.testing.assert_array_equal(host, np.arange(16, dtype=np.float32))
    still_works(sim, lib)


def test_other_gpu_failures_say_what_to_do(sim, monkeypatch):
    lib = sim.compile(SRC)
    buf = sim.asarray(np.ones(8, np.float32))
    advice = {"gpu:page-fault": 'run the same call on mc.Device("cpu", checked=True)',
              "gpu:timeout": "split the grid over several calls",
              "gpu:out-of-memory": "free buffers you no longer need"}
    for kind, words in advice.items():
        monkeypatch.setenv("METALCALL_METAL_SIM_FAULT", kind)
        with pytest.raises(mc.ExecutionError, match=words.replace("(", "\\(").replace(")", "\\)")):
            with sim.batch():
                lib.scale(8, buf, np.float32(2.0))
                lib.scale(8, buf, np.float32(2.0))
        monkeypatch.delenv("METALCALL_METAL_SIM_FAULT")
    with pytest.raises(mc.DeviceError, match="names no fault"):
        monkeypatch.setenv("METALCALL_METAL_SIM_FAULT", "nonsense")
        lib.scale(8, buf, np.float32(2.0))
    monkeypatch.delenv("METALCALL_METAL_SIM_FAULT")
    still_works(sim, lib)


def texture_over_written_buffer(sim: mc.Device):
    """A texture whose memory a kernel writes through a buffer binding, and the values it must then read."""
    tex = sim.texture((8, 16), "r32float")  # 16 wide, 8 high
    floats_per_row = tex.row_pitch // 4
    expected = (np.arange(8)[:, None] * floats_per_row + np.arange(16)[None, :]).astype(np.float32)
    return tex, expected


def test_texture_over_a_buffer_written_in_the_same_batch(sim):
    """P2.1 item 3: a kernel writes a texture's memory through a buffer binding and the next call of the
    batch reads it through the texture: the planner puts them in separate compute passes (Apple: the
    two views are coherent only across passes), so the read sees the write."""
    lib = sim.compile(SRC)
    tex, expected = texture_over_written_buffer(sim)
    out = sim.empty(8 * 16, np.float32)
    with sim.batch():
        lib.iota(tex.nbytes // 4, tex)
        lib.read_texture((16, 8), out, textures=[tex])
    np.testing.assert_array_equal(np.asarray(out).reshape(8, 16), expected)


def test_texture_over_a_buffer_written_in_a_replay(sim):
    lib = sim.compile(SRC)
    tex, expected = texture_over_written_buffer(sim)
    out = sim.empty(8 * 16, np.float32)
    with sim.record() as graph:
        lib.iota(tex.nbytes // 4, tex)
        lib.read_texture((16, 8), out, textures=[tex])
        lib.scale(tex.nbytes // 4, tex, np.float32(0.0))  # clears it again: each replay must write first
    for _ in range(2):
        np.asarray(out)[:] = -1.0
        graph.replay()
        np.testing.assert_array_equal(np.asarray(out).reshape(8, 16), expected)
        np.testing.assert_array_equal(np.asarray(tex), np.zeros((8, 16, 1), np.float32))


def test_the_simulator_refuses_one_pass_for_both_views(sim, monkeypatch):
    """P2.1 item 3, the rule itself: handed a plan whose passes are merged, so that one compute pass
    writes the buffer and reads it through the texture, the simulator refuses it rather than running
    it; the device then works as before."""
    lib = sim.compile(SRC)
    tex, expected = texture_over_written_buffer(sim)
    out = sim.empty(8 * 16, np.float32)
    monkeypatch.setenv("METALCALL_METAL_SIM_FAULT", "merge-passes")
    with pytest.raises(mc.ExecutionError, match="used through a texture and through a buffer binding in one "
                                                "compute pass"):
        with sim.batch():
            lib.iota(tex.nbytes // 4, tex)
            lib.read_texture((16, 8), out, textures=[tex])
    # Merged passes that break no rule run: two writers of one buffer in one pass.
    host = sim.asarray(np.ones(16, np.float32))
    with sim.batch():
        lib.scale(16, host, np.float32(2.0))
        lib.scale(16, host, np.float32(3.0))
    monkeypatch.delenv("METALCALL_METAL_SIM_FAULT")
    np.testing.assert_array_equal(np.asarray(host), np.full(16, 6.0, np.float32))
    with sim.batch():
        lib.iota(tex.nbytes // 4, tex)
        lib.read_texture((16, 8), out, textures=[tex])
    np.testing.assert_array_equal(np.asarray(out).reshape(8, 16), expected)


def test_a_buffer_wait_covers_the_writer_queued_last(monkeypatch):
    """P2.1 item 11, made certain: two threads submit writers of one Buffer at once, and the simulator
    holds the first submission for 100 ms between core marking the Buffer and its queue taking it
    (slow-submit). Core marks and queues under one lock, so the second waits and the Buffer names the
    writer queued last: once the Buffer's wait returns, both calls are done. Without the lock the
    second writer would be marked last but queued first, and the wait would return before the held
    one had run (tests/test_threads.py has the same race left to chance, on every device)."""
    sim = mc.Device("metal-sim", family="apple7")
    fill = sim.compile(SRC).fill
    n = 1 << 22
    x = sim.empty(n, np.float32)
    monkeypatch.setenv("METALCALL_METAL_SIM_FAULT", "slow-submit")
    for round_ in range(10):  # without the lock a round fails unless the held one was marked last
        barrier = threading.Barrier(2)
        kept: list[mc.Completion] = []

        def writer(k: int) -> None:
            barrier.wait()
            kept.append(fill(n, x, np.float32(2 * round_ + k)))

        threads = [threading.Thread(target=writer, args=(k,)) for k in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert len(kept) == 2
        x.wait()
        assert all(c.done for c in kept), f"round {round_}: the Buffer's wait returned with a writer still queued"
        values = np.asarray(x)
        assert values[0] in (2 * round_, 2 * round_ + 1) and np.all(values == values[0])
    monkeypatch.delenv("METALCALL_METAL_SIM_FAULT")
    sim.synchronize()
