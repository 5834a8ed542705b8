"""A GPU whose memory another library holds: a new metalcall Buffer is refused with a clear
DeviceError (and the process stays usable), where granting managed memory the GPU cannot place
made the first touch fault (CUDA_ERROR_ILLEGAL_ADDRESS) and left the context unusable for the
rest of the process. Needs a CUDA GPU and CuPy (to hold the memory); it fills the GPU, so it runs
only alone (without pytest -n), never next to other test processes."""

from __future__ import annotations

import os

import numpy as np
import pytest

import metalcall as mc

HAS_CUDA = "cuda" in mc.backends() and any(d.backend == "cuda" for d in mc.get_devices())

SRC = """
kernel void add_one(device float* a [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    a[i] = a[i] + 1.0f;
}
"""


def _hold_almost_all(cupy, leave: int) -> list[int]:
    """Device memory (not managed: the driver cannot move it away) until `leave` bytes are free."""
    held = []
    step = 1 << 30
    while step >= 1 << 20:
        free, _ = cupy.cuda.runtime.memGetInfo()
        if free <= leave:
            break
        try:
            held.append(cupy.cuda.runtime.malloc(min(step, free - leave)))
        except cupy.cuda.runtime.CUDARuntimeError:
            step //= 2
    return held


def test_a_full_gpu_refuses_new_buffers_and_the_process_stays_usable():
    if not HAS_CUDA:
        pytest.skip("no CUDA device (no NVIDIA driver/GPU, or no NVRTC)")
    if os.environ.get("PYTEST_XDIST_WORKER"):
        pytest.skip("fills the GPU's memory: run alone (without -n), not next to other test processes")
    cupy = pytest.importorskip("cupy", reason="CuPy holds the memory here")
    dev = mc.Device("cuda")
    kernel = dev.compile(SRC).add_one
    before = dev.asarray(np.arange(64, dtype=np.float32))
    kernel(64, before)
    dev.empty_cache()  # a new Buffer must ask the driver, not reuse a cached block
    held = _hold_almost_all(cupy, leave=64 << 20)
    try:
        for nbytes in (256, 1 << 16, 1 << 24):
            with pytest.raises(mc.DeviceError, match="cannot allocate"):
                dev.empty(nbytes // 4, np.float32)
        kernel(64, before)  # Buffers made before still work
    finally:
        for pointer in held:
            cupy.cuda.runtime.free(pointer)
    after = dev.asarray(np.arange(64, dtype=np.float32))
    kernel(64, after)
    np.testing.assert_array_equal(np.asarray(after), np.arange(64, dtype=np.float32) + 1)
    np.testing.assert_array_equal(np.asarray(before), np.arange(64, dtype=np.float32) + 2)
