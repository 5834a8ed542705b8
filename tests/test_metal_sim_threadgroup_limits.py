"""The Metal simulator holds a kernel's own `threadgroup` variables, alone and with a call's
threadgroup_memory= lengths, to its GPU family's maxThreadgroupMemoryLength: 16 KB on apple3,
32 KB on the others. Metal refuses such a pipeline (staticThreadgroupMemoryLength over the limit)
or such a dispatch (static plus dynamic over it); the simulator's kernels run on the CPU build,
which checks as the group runs, so the call raises ExecutionError (docs/metal-backend.md)."""

from __future__ import annotations

import numpy as np
import pytest

import metalcall as mc

SRC = """
#include <metal_stdlib>
using namespace metal;
// N floats of the kernel's own, plus `extra` from the call; each group sums its slice of x.
kernel void tile_sum(const device float* x [[buffer(0)]], device float* out [[buffer(1)]],
                     threadgroup float* extra [[threadgroup(0)]],
                     uint i [[thread_position_in_grid]], uint t [[thread_position_in_threadgroup]],
                     uint g [[threadgroup_position_in_grid]], uint n [[threads_per_threadgroup]]) {
    threadgroup float tile[N];
    tile[t] = x[i];
    extra[t] = 1.0f;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (t == 0) {
        float s = 0;
        for (uint k = 0; k < n; ++k) s += tile[k] * extra[k];
        out[g] = s;
    }
}
"""

LIMITS = {"apple3": 16384, "apple7": 32768, "intel": 32768, "amd": 32768}


def run(family: str, static_floats: int, extra_bytes: int) -> np.ndarray:
    sim = mc.Device("metal-sim", family=family)
    assert sim.threadgroup_memory_length == LIMITS[family]
    lib = sim.compile(SRC, defines={"N": str(static_floats)})
    x = np.arange(256, dtype=np.float32)
    out = sim.zeros(4, np.float32)
    lib.tile_sum(256, x, out, threadgroup=64, threadgroup_memory=[extra_bytes])
    np.testing.assert_array_equal(np.asarray(out), x.reshape(4, 64).sum(axis=1))
    return np.asarray(out)


@pytest.mark.parametrize("family", sorted(LIMITS))
def test_static_threadgroup_memory_up_to_the_limit_runs(family):
    """Exactly the family's limit, the kernel's variable and the call's length together."""
    run(family, (LIMITS[family] - 256) // 4, 256)


@pytest.mark.parametrize("family", sorted(LIMITS))
def test_a_variable_over_the_limit_is_refused(family):
    limit = LIMITS[family]
    floats = limit // 4 + 4  # 16 bytes over
    with pytest.raises(mc.ExecutionError, match=f"threadgroup variable 'tile' takes {floats * 4} bytes, more than the "
                       f"{limit // 1024} KiB of threadgroup memory"):
        run(family, floats, 256)


@pytest.mark.parametrize("family", sorted(LIMITS))
def test_variables_and_the_call_together_over_the_limit_are_refused(family):
    """Each under the limit, both together 16 bytes over it."""
    limit = LIMITS[family]
    with pytest.raises(mc.ExecutionError, match=rf"threadgroup variable 'tile' \({limit // 2} bytes\) and the call's "
                       rf"threadgroup_memory \({limit // 2 + 16} bytes\) take {limit + 16} bytes together"):
        run(family, limit // 8, limit // 2 + 16)


def test_apple3_refuses_what_apple7_runs():
    """20 KB of the kernel's own: over an A9's 16 KB, within an M1's 32 KB."""
    run("apple7", 5120, 256)
    with pytest.raises(mc.ExecutionError, match="16 KiB of threadgroup memory the simulated GPU family gives"):
        run("apple3", 5120, 256)
