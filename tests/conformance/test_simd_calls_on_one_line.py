"""SIMD-group functions called on one line in different arms of a conditional, nested in each
other's arguments, and with a helper that calls one: each call acts on the lanes that reach it
together, and after the conditional all lanes are together again. Checked against a NumPy
model of the active lanes, per SIMD-group of 32, on every device.

The CPU backend meets lanes by site, a call's line and function (docs/design.md, "SIMD-group
functions"), and ordered two calls of one line by the function alone: in
`((x != 0) ? x : simd_prefix_exclusive_sum(k)) == 1 ? 7u : simd_sum(1u)` the lanes at the
simd_sum went first without the lane still at the prefix sum (fuzz seed 9206, program 108:
31 expected, 30 given), two simd_sums of one line met as one, and lanes that passed a call of
the line went into a helper ahead of lanes still at it. A line's calls are now ordered as
they complete (msl/passes/simd_line_order.hpp). So are the calls of a functor whose operator()
calls one, through a temporary (`F{s}(c ? quad_or(k) : 1u, lid)`) or an object: they kept the
first rank, and the lanes that skipped the quad_or met in the functor without the others (fuzz
seed 31003, program 419: 34 of 64 shuffles from the wrong lane)."""

from __future__ import annotations

import numpy as np

from mcconf import KernelSet, assert_equal, written_for_32_lanes

KS = KernelSet([
    """
uint lane_total(uint v) { return simd_sum(v); }

kernel void simd_calls_on_one_line(const device int* in [[buffer(0)]], device uint* out [[buffer(1)]],
                                   uint gid [[thread_position_in_grid]], uint lane [[thread_index_in_simdgroup]]) {
    const int x = in[gid];
    out[5 * gid + 0] = (((x != 0) ? x : simd_prefix_exclusive_sum(41614160)) == 1) ? 7u : simd_sum(1u);
    out[5 * gid + 1] = uint((((x != 0) ? x : simd_sum(5)) == 1) ? 7 : simd_sum(1));
    out[5 * gid + 2] = simd_sum((x & 1) ? simd_prefix_inclusive_sum(1u) : 100u);
    uint m = (x > 2) ? simd_max(uint(lane)) : 0u, s = lane_total(uint(lane) + 1u);
    out[5 * gid + 3] = m;
    out[5 * gid + 4] = s;
}
""",
    """
struct first_of_group {
    threadgroup uint* shared;
    uint operator()(uint value, uint tid) const {
        shared[tid] = value;
        return simd_broadcast_first(value);
    }
};

kernel void simd_calls_in_functor_arguments(const device int* in [[buffer(0)]], device uint* out [[buffer(1)]],
                                            constant uint& k [[buffer(2)]], uint gid [[thread_position_in_grid]],
                                            uint lid [[thread_position_in_threadgroup]]) {
    threadgroup uint sh[32];
    const int x = in[gid];
    out[2 * gid + 0] = first_of_group{sh}((x > 0) ? quad_or(k) + simd_sum(1u) : 1u, lid);
    first_of_group f{sh};
    out[2 * gid + 1] = f((x < 2) ? simd_max(uint(x + 10)) : 3u, lid);
}
""",
])


def model(x: np.ndarray) -> np.ndarray:
    out = np.zeros((len(x), 5), np.int64)
    for base in range(0, len(x), 32):
        g = x[base:base + 32].astype(np.int64)
        lanes = np.arange(len(g))
        # 0: the lanes with x == 0 take a prefix sum of an even number, never 1
        hit = g == 1
        out[base:base + 32, 0] = np.where(hit, 7, np.count_nonzero(~hit))
        # 1: the same with a simd_sum in the inner arm
        out[base:base + 32, 1] = np.where(hit, 7, np.count_nonzero(~hit))
        # 2: the odd lanes' inclusive prefix count, the others 100, summed over all lanes
        odd = (g & 1) == 1
        v = np.where(odd, np.cumsum(odd), 100)
        out[base:base + 32, 2] = v.sum()
        # 3, 4: the largest lane above 2, then every lane's lane + 1 summed
        big = g > 2
        out[base:base + 32, 3] = np.where(big, lanes[big].max() if big.any() else 0, 0)
        out[base:base + 32, 4] = (lanes + 1).sum()
    return out


def test_simd_calls_on_one_line(device):
    rng = np.random.default_rng(9206108)
    x = rng.integers(-3, 6, 96).astype(np.int32)
    x[[5, 40, 70]] = 0
    x[[6, 41]] = 1
    out = np.zeros((len(x), 5), np.uint32)
    k = written_for_32_lanes(KS.get(device, "simd_calls_on_one_line"))
    k(len(x), x, out, threadgroup=32)
    assert_equal(out, model(x).astype(np.uint32))


def test_simd_calls_in_functor_arguments(device):
    rng = np.random.default_rng(31003419)
    x = rng.integers(-3, 5, 96).astype(np.int32)
    x[[0, 33]] = 1  # lane 0 of two groups takes the first conditional's call, not the second's
    x[64] = -1
    out = np.zeros((len(x), 2), np.uint32)
    k = written_for_32_lanes(KS.get(device, "simd_calls_in_functor_arguments"))
    k(len(x), x, out, np.uint32(1 << 20), threadgroup=32)
    want = np.zeros((len(x), 2), np.int64)
    for base in range(0, len(x), 32):
        g = x[base:base + 32].astype(np.int64)
        pos = g > 0
        # every lane's argument, then lane 0's (all lanes meet in the functor's broadcast)
        first = (1 << 20) + np.count_nonzero(pos) if pos[0] else 1
        want[base:base + 32, 0] = first
        low = g < 2
        want[base:base + 32, 1] = g[low].max() + 10 if low[0] else 3
    assert_equal(out, want.astype(np.uint32))
