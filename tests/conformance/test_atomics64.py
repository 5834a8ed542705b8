"""64-bit atomics (MSL 2.4): `atomic_ulong` / `atomic<ulong>` take atomic_min_explicit and
atomic_max_explicit (which return nothing), in device memory, as naga writes them for WGSL's
64-bit atomic min/max (through struct members and arrays of atomics). Checked against NumPy's
min and max of the values every thread offers; values above 2^32 and 2^63 (unsigned order).

Metal has them on Apple8 Macs (M2) and Apple9 GPUs only: the Metal simulator refuses the
pipeline on the other families (apple7, apple3, Intel's and AMD's), as Metal does, and builds
it on apple8 and apple9; a kernel of the same library without them builds everywhere.
"""

from __future__ import annotations

import numpy as np
import pytest

import metalcall as mc
from mcconf import assert_equal

SRC = """
#include <metal_stdlib>
using namespace metal;

struct a64_arr { metal::atomic_ulong inner[2]; };
struct a64_box { atomic<ulong> scalar; a64_arr arr; };

kernel void a64_minmax(const device ulong* x [[buffer(0)]], device atomic_ulong* mm [[buffer(1)]],
                       device a64_box& box [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    ulong v = x[i];
    atomic_max_explicit(&mm[0], v, memory_order_relaxed);
    atomic_min_explicit(&mm[1], v, memory_order_relaxed);
    metal::atomic_max_explicit(&box.scalar, v ^ 0x8000000000000000uL, metal::memory_order_relaxed);
    metal::atomic_min_explicit(&box.arr.inner[1], 1uL + v, metal::memory_order_relaxed);
    atomic_max_explicit(&box.arr.inner[0], static_cast<ulong>(i), memory_order_relaxed);
}

kernel void a64_plain(const device uint* x [[buffer(0)]], device atomic_uint* m [[buffer(1)]],
                      uint i [[thread_position_in_grid]]) {
    atomic_fetch_max_explicit(m, x[i], memory_order_relaxed);
}
"""

ALL64 = np.uint64(0xFFFFFFFFFFFFFFFF)


def values(rng, n):
    x = rng.integers(0, 2**64 - 1, n, dtype=np.uint64, endpoint=True)
    x[:4] = [0, 2**32, 2**63, 2**63 - 1]
    return x


def run_minmax(dev, rng, n=300):
    x = values(rng, n)
    mm = np.array([0, ALL64], np.uint64)
    box = np.array([0, 0, ALL64], np.uint64)  # scalar, inner[0], inner[1]
    dev.compile(SRC).a64_minmax(n, x, mm, box, threadgroup=64)
    assert_equal(mm, np.array([x.max(), x.min()], np.uint64))
    assert_equal(box, np.array([(x ^ np.uint64(2**63)).max(), n - 1, (x + np.uint64(1)).min()], np.uint64))


def sim_has_atomic64(dev) -> bool:
    return dev.backend != "metal-sim" or any(f"({fam}" in dev.name for fam in ("apple8", "apple9"))


def test_atomic_ulong_min_max(device, rng):
    if sim_has_atomic64(device):
        run_minmax(device, rng)
    else:  # the suite's simulator family (apple7 by default) has no 64-bit atomics
        with pytest.raises(mc.CompileError, match="64-bit atomics"):
            run_minmax(device, rng)


@pytest.mark.parametrize("family", ["apple8", "apple9"])
def test_metal_sim_families_with_64bit_atomics(family, rng):
    run_minmax(mc.Device("metal-sim", family=family), rng)


@pytest.mark.parametrize("family", ["apple3", "apple7", "intel", "amd"])
def test_metal_sim_families_without_64bit_atomics(family, rng):
    dev = mc.Device("metal-sim", family=family)
    lib = dev.compile(SRC)  # the library builds, as on Metal: the pipeline is what fails
    with pytest.raises(mc.CompileError, match=r"64-bit atomics .*family " + family):
        lib.function("a64_minmax")
    x = rng.integers(0, 2**32, 100, dtype=np.uint64).astype(np.uint32)
    m = np.zeros(1, np.uint32)
    lib.a64_plain(100, x, m)  # the library's other kernel builds and runs
    assert_equal(m, np.array([x.max()], np.uint32))
