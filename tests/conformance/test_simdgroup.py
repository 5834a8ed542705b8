"""SIMD-group and quad-group (width 4) functions and builtins, including a partial last
threadgroup whose last SIMD-group has fewer lanes, and lanes that returned early (inactive
lanes take no part). SIMD-groups are 32 wide on Apple GPUs, CUDA and the CPU; the models take
each kernel's own width (Kernel.thread_execution_width), so that the Metal simulator's Intel
and AMD families (8, 16 and 64 wide pipelines) run these tests too."""

from __future__ import annotations

import numpy as np
import pytest

from mcconf import KernelSet, assert_close, assert_equal

KS = KernelSet([
    """
kernel void sg_builtins(device uint* out [[buffer(0)]],
                        uint gid [[thread_position_in_grid]],
                        uint lane [[thread_index_in_simdgroup]],
                        uint sg [[simdgroup_index_in_threadgroup]],
                        uint width [[threads_per_simdgroup]],
                        uint nsg [[simdgroups_per_threadgroup]],
                        uint dtg [[dispatch_threads_per_threadgroup]]) {
    out[5 * gid + 0] = lane;
    out[5 * gid + 1] = sg;
    out[5 * gid + 2] = width;
    out[5 * gid + 3] = nsg;
    out[5 * gid + 4] = dtg;
}
""",
    """
kernel void sg_quad_builtins(device uint* out [[buffer(0)]], uint gid [[thread_position_in_grid]],
                             ushort qlane [[thread_index_in_quadgroup]],
                             ushort quad [[quadgroup_index_in_threadgroup]],
                             ushort nquads [[quadgroups_per_threadgroup]]) {
    out[3 * gid + 0] = qlane;
    out[3 * gid + 1] = quad;
    out[3 * gid + 2] = nquads;
}
""",
    """
kernel void sg_exec_width(device uint* out [[buffer(0)]], uint gid [[thread_position_in_grid]],
                          uint w [[thread_execution_width]]) {
    out[gid] = w;
}
""",
    """
kernel void sg_reduce_float(const device float* in [[buffer(0)]], device float* out [[buffer(1)]],
                            uint gid [[thread_position_in_grid]]) {
    float x = in[gid];
    out[4 * gid + 0] = simd_sum(x);
    out[4 * gid + 1] = simd_product(x);
    out[4 * gid + 2] = simd_min(x);
    out[4 * gid + 3] = simd_max(x);
}
""",
    """
kernel void sg_reduce_int(const device int* in [[buffer(0)]], const device uint* bits [[buffer(1)]],
                          device int* oi [[buffer(2)]], device uint* ou [[buffer(3)]],
                          uint gid [[thread_position_in_grid]]) {
    int x = in[gid];
    uint b = bits[gid];
    oi[3 * gid + 0] = simd_sum(x);
    oi[3 * gid + 1] = simd_min(x);
    oi[3 * gid + 2] = simd_max(x);
    ou[3 * gid + 0] = simd_and(b);
    ou[3 * gid + 1] = simd_or(b);
    ou[3 * gid + 2] = simd_xor(b);
}
""",
    """
kernel void sg_prefix(const device float* in [[buffer(0)]], const device int* ii [[buffer(1)]],
                      device float* of [[buffer(2)]], device int* oi [[buffer(3)]],
                      uint gid [[thread_position_in_grid]]) {
    float x = in[gid];
    int k = ii[gid];
    of[4 * gid + 0] = simd_prefix_inclusive_sum(x);
    of[4 * gid + 1] = simd_prefix_exclusive_sum(x);
    of[4 * gid + 2] = simd_prefix_inclusive_product(x);
    of[4 * gid + 3] = simd_prefix_exclusive_product(x);
    oi[2 * gid + 0] = simd_prefix_inclusive_sum(k);
    oi[2 * gid + 1] = simd_prefix_exclusive_sum(k);
}
""",
    """
kernel void sg_broadcast(const device float* in [[buffer(0)]], device float* out [[buffer(1)]],
                         uint gid [[thread_position_in_grid]], uint lane [[thread_index_in_simdgroup]],
                         uint width [[threads_per_simdgroup]]) {
    float x = in[gid];
    out[4 * gid + 0] = simd_broadcast(x, 5);
    out[4 * gid + 1] = simd_broadcast_first(x);
    out[4 * gid + 2] = simd_shuffle(x, (lane * 7 + 3) % width);
    out[4 * gid + 3] = float(simd_broadcast(int(gid), ushort(width - 1)));
}
""",
    """
kernel void sg_shuffles(const device int* in [[buffer(0)]], device int* out [[buffer(1)]],
                        uint gid [[thread_position_in_grid]], uint width [[threads_per_simdgroup]]) {
    int x = in[gid];
    out[6 * gid + 0] = simd_shuffle_up(x, 3);
    out[6 * gid + 1] = simd_shuffle_down(x, 5);
    out[6 * gid + 2] = simd_shuffle_xor(x, 1);
    out[6 * gid + 3] = simd_shuffle_xor(x, ushort(18 & (width - 1)));
    out[6 * gid + 4] = simd_shuffle_rotate_up(x, 4);
    out[6 * gid + 5] = simd_shuffle_rotate_down(x, 6);
}
""",
    """
kernel void sg_vote(const device float* in [[buffer(0)]], device uint* out [[buffer(1)]],
                    uint gid [[thread_position_in_grid]]) {
    float x = in[gid];
    bool p = x > 0.0f;
    out[3 * gid + 0] = simd_all(p) ? 1 : 0;
    out[3 * gid + 1] = simd_any(x > 2.5f) ? 1 : 0;
    out[3 * gid + 2] = simd_is_first() ? 1 : 0;
}
""",
    """
kernel void sg_ballot(const device float* in [[buffer(0)]], device ulong* ballots [[buffer(1)]],
                      uint gid [[thread_position_in_grid]]) {
    simd_vote v = simd_ballot(in[gid] > 0.0f);
    ballots[gid] = static_cast<uint64_t>(v);
}
""",
    """
kernel void sg_quad(const device int* in [[buffer(0)]], device int* out [[buffer(1)]],
                    uint gid [[thread_position_in_grid]], uint lane [[thread_index_in_simdgroup]]) {
    int x = in[gid];
    uint q = lane % 4;
    out[8 * gid + 0] = quad_sum(x);
    out[8 * gid + 1] = quad_broadcast(x, 2);
    out[8 * gid + 2] = quad_shuffle(x, (q + 1) % 4);
    out[8 * gid + 3] = quad_shuffle_xor(x, 3);
    out[8 * gid + 4] = quad_shuffle_up(x, 1);
    out[8 * gid + 5] = quad_shuffle_down(x, 1);
    out[8 * gid + 6] = quad_prefix_exclusive_sum(x);
    out[8 * gid + 7] = quad_max(x) - quad_min(x) + (quad_all(x > -5) ? 1000 : 0) + (quad_any(x == 3) ? 10000 : 0);
}
""",
    # types other than float/int: vectors, half, uint
    """
kernel void sg_types(const device float4* v [[buffer(0)]], const device half* h [[buffer(1)]],
                     const device uint* u [[buffer(2)]], device float4* ov [[buffer(3)]],
                     device half* oh [[buffer(4)]], device uint* ou [[buffer(5)]],
                     uint gid [[thread_position_in_grid]], uint lane [[thread_index_in_simdgroup]],
                     uint width [[threads_per_simdgroup]]) {
    ov[2 * gid + 0] = simd_sum(v[gid]);
    ov[2 * gid + 1] = simd_shuffle(v[gid], ushort(width - 1 - lane));
    oh[gid] = simd_max(h[gid]);
    ou[gid] = simd_min(u[gid]) + simd_broadcast_first(u[gid]);
}
""",
    """
kernel void sg_half(const device half* h [[buffer(0)]], device half* oh [[buffer(1)]],
                    uint gid [[thread_position_in_grid]]) {
    half x = h[gid];
    oh[3 * gid + 0] = simd_max(x);
    oh[3 * gid + 1] = simd_min(x);
    oh[3 * gid + 2] = simd_broadcast(x, 7);
}
""",
    # partial last threadgroup: grid 100, threadgroup 64 -> the last group has 36 threads,
    # its second SIMD-group only 4 lanes
    """
kernel void sg_partial(const device float* in [[buffer(0)]], device float* out [[buffer(1)]],
                       device uint* info [[buffer(2)]],
                       uint gid [[thread_position_in_grid]], uint lane [[thread_index_in_simdgroup]],
                       uint nsg [[simdgroups_per_threadgroup]], uint width [[threads_per_simdgroup]]) {
    float x = in[gid];
    out[4 * gid + 0] = simd_sum(x);
    out[4 * gid + 1] = simd_prefix_exclusive_sum(x);
    out[4 * gid + 2] = simd_max(x);
    out[4 * gid + 3] = simd_broadcast_first(x);
    info[3 * gid + 0] = uint(simd_all(x < 100.0f)) + 2 * uint(simd_any(x > 100.0f));
    info[3 * gid + 1] = simd_is_first() ? 1000u + lane : 0u;
    info[3 * gid + 2] = nsg * 100 + width;
}
""",
    """
kernel void sg_partial_ballot(device uint* out [[buffer(0)]], uint gid [[thread_position_in_grid]]) {
    out[gid] = uint(static_cast<uint64_t>(simd_ballot(true)) & 0xffffffffu);
}
""",
    # the everyday bounds check: lanes past n return before the SIMD-group function
    """
kernel void sg_early_return(const device float* in [[buffer(0)]], device float* out [[buffer(1)]],
                            constant uint& n [[buffer(2)]], uint gid [[thread_position_in_grid]]) {
    if (gid >= n) return;
    float x = in[gid];
    float s = simd_sum(x);
    float m = simd_min(x);
    out[2 * gid + 0] = s;
    out[2 * gid + 1] = m;
}
""",
    # SIMD-group functions inside helper functions
    """
inline float warp_reduce_max(float v) { return simd_max(v); }
template <typename T> inline T warp_total(T v) { return simd_sum(v); }
kernel void sg_helper(const device float* in [[buffer(0)]], const device int* k [[buffer(1)]],
                      device float* out [[buffer(2)]], device int* ok [[buffer(3)]],
                      uint gid [[thread_position_in_grid]]) {
    out[gid] = warp_reduce_max(in[gid]);
    ok[gid] = warp_total(k[gid]);
}
""",
    # SIMD-group functions in divergent control flow, then again after reconvergence
    """
kernel void sg_divergent(const device float* in [[buffer(0)]], device float* out [[buffer(1)]],
                         constant uint& n [[buffer(2)]], uint gid [[thread_position_in_grid]],
                         uint lane [[thread_index_in_simdgroup]]) {
    float x = gid < n ? in[gid] : 0.0f;
    float partial = -1.0f;
    if (gid < n) {
        partial = simd_sum(x);           // the active lanes only
    }
    float total = simd_sum(x);           // every lane again
    float odd = 0.0f;
    if (lane & 1) odd = simd_max(x);     // odd lanes only
    out[3 * gid + 0] = partial;
    out[3 * gid + 1] = total;
    out[3 * gid + 2] = odd;
}
"""
])


def groups(n, tg, width):
    """Yields index arrays of each SIMD-group of a 1-D dispatch of n threads, threadgroup tg."""
    for g0 in range(0, n, tg):
        g1 = min(g0 + tg, n)
        for s0 in range(g0, g1, width):
            yield np.arange(s0, min(s0 + width, g1))


def per_group(x, n, tg, fn, width):
    out = np.empty(n, dtype=np.result_type(fn(x[:1])))
    for idx in groups(n, tg, width):
        out[idx] = fn(x[idx])
    return out


def test_builtins(device):
    n, tg = 200, 96  # groups of 96, 96, 8: at width 32 SIMD-groups of 32, 32, 32 | 32, 32, 32 | 8
    out = np.zeros((n, 5), np.uint32)
    k = KS.get(device, "sg_builtins")
    W = k.thread_execution_width
    k(n, out, threadgroup=tg)
    gid = np.arange(n)
    lid = gid % tg
    actual = np.minimum(tg, n - (gid // tg) * tg)
    exp = np.stack([lid % W, lid // W, np.full(n, W), -(-actual // W), np.full(n, tg)], 1)
    assert_equal(out, exp.astype(np.uint32))


def test_quad_builtins(device):
    n, tg = 200, 96
    out = np.zeros((n, 3), np.uint32)
    KS.get(device, "sg_quad_builtins")(n, out, threadgroup=tg)
    gid = np.arange(n)
    lid = gid % tg
    actual = np.minimum(tg, n - (gid // tg) * tg)
    exp = np.stack([lid % 4, lid // 4, -(-actual // 4)], 1)
    assert_equal(out, exp.astype(np.uint32))


def test_thread_execution_width(device):
    out = np.zeros(64, np.uint32)
    k = KS.get(device, "sg_exec_width")
    k(64, out, threadgroup=64)
    assert k.thread_execution_width in (8, 16, 32, 64)
    assert_equal(out, np.full(64, k.thread_execution_width, np.uint32))


def test_reduce_float(device, rng):
    n, tg = 256, 128
    x = rng.uniform(0.9, 1.1, n).astype(np.float32)
    x[::3] *= -1
    out = np.zeros((n, 4), np.float32)
    kern = KS.get(device, "sg_reduce_float")
    W = kern.thread_execution_width
    kern(n, x, out, threadgroup=tg)
    X = x.astype(np.float64)
    exp = np.stack([per_group(X, n, tg, np.sum, W), per_group(X, n, tg, np.prod, W), per_group(X, n, tg, np.min, W),
                    per_group(X, n, tg, np.max, W)], 1)
    assert_close(out, exp, rtol=1e-5, atol=1e-5)


def test_reduce_int(device, rng):
    n, tg = 256, 64
    x = rng.integers(-10**6, 10**6, n).astype(np.int32)
    b = rng.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32) | np.uint32(0x10)
    oi = np.zeros((n, 3), np.int32)
    ou = np.zeros((n, 3), np.uint32)
    kern = KS.get(device, "sg_reduce_int")
    W = kern.thread_execution_width
    kern(n, x, b, oi, ou, threadgroup=tg)
    exp_i = np.stack([per_group(x, n, tg, np.sum, W), per_group(x, n, tg, np.min, W),
                      per_group(x, n, tg, np.max, W)], 1)
    assert_equal(oi, exp_i.astype(np.int32))
    exp_u = np.stack([per_group(b, n, tg, np.bitwise_and.reduce, W), per_group(b, n, tg, np.bitwise_or.reduce, W),
                      per_group(b, n, tg, np.bitwise_xor.reduce, W)], 1)
    assert_equal(ou, exp_u.astype(np.uint32))


def test_prefix(device, rng):
    n, tg = 256, 64
    x = rng.uniform(0.8, 1.25, n).astype(np.float32)
    k = rng.integers(-1000, 1000, n).astype(np.int32)
    of = np.zeros((n, 4), np.float32)
    oi = np.zeros((n, 2), np.int32)
    kern = KS.get(device, "sg_prefix")
    W = kern.thread_execution_width
    kern(n, x, k, of, oi, threadgroup=tg)
    X = x.astype(np.float64)
    inc = per_group(X, n, tg, np.cumsum, W)
    prod = per_group(X, n, tg, np.cumprod, W)
    exp_f = np.stack([inc, inc - X, prod, prod / X], 1)
    assert_close(of, exp_f, rtol=1e-5, atol=1e-5)
    inc_i = per_group(k.astype(np.int64), n, tg, np.cumsum, W)
    assert_equal(oi, np.stack([inc_i, inc_i - k], 1).astype(np.int32))


def test_broadcast_shuffle(device, rng):
    n, tg = 128, 64
    x = rng.standard_normal(n).astype(np.float32)
    out = np.zeros((n, 4), np.float32)
    kern = KS.get(device, "sg_broadcast")
    W = kern.thread_execution_width
    kern(n, x, out, threadgroup=tg)
    gid = np.arange(n)
    base = gid - gid % W
    lane = gid % W
    exp = np.stack([x[base + 5], x[base], x[base + (lane * 7 + 3) % W], (base + W - 1).astype(np.float32)], 1)
    assert_equal(out, exp)


def test_shuffle_up_down_xor_rotate(device, rng):
    n, tg = 128, 128
    x = rng.integers(-10**6, 10**6, n).astype(np.int32)
    out = np.zeros((n, 6), np.int32)
    kern = KS.get(device, "sg_shuffles")
    W = kern.thread_execution_width
    kern(n, x, out, threadgroup=tg)
    gid = np.arange(n)
    base, lane = gid - gid % W, gid % W
    up = np.where(lane >= 3, x[base + lane - 3], x)          # lanes below delta keep their value
    down = np.where(lane + 5 < W, x[base + np.minimum(lane + 5, W - 1)], x)
    exp = np.stack([up, down, x[base + (lane ^ 1)], x[base + (lane ^ (18 & (W - 1)))], x[base + (lane - 4) % W],
                    x[base + (lane + 6) % W]], 1)
    assert_equal(out, exp)


def test_vote(device, rng):
    n, tg = 256, 64
    x = rng.uniform(-1, 3, n).astype(np.float32)
    x[0:32] = np.abs(x[0:32]) + 0.1   # first SIMD-group: all positive
    x[32:64] = -np.abs(x[32:64])      # second: none > 2.5 and none positive
    out = np.zeros((n, 3), np.uint32)
    kern = KS.get(device, "sg_vote")
    W = kern.thread_execution_width
    kern(n, x, out, threadgroup=tg)
    p = x > 0
    lane = np.arange(n) % W
    exp = np.stack([per_group(p, n, tg, lambda a: np.full(len(a), a.all()), W),
                    per_group(x > 2.5, n, tg, lambda a: np.full(len(a), a.any()), W), lane == 0], 1)
    assert_equal(out, exp.astype(np.uint32))


def test_ballot(device, rng):
    n, tg = 160, 64  # the last threadgroup has 32 threads
    x = rng.uniform(-1, 1, n).astype(np.float32)
    ballots = np.zeros(n, np.uint64)
    kern = KS.get(device, "sg_ballot")
    W = kern.thread_execution_width
    kern(n, x, ballots, threadgroup=tg)
    p = x > 0
    ball = per_group(p, n, tg, lambda a: np.full(len(a), sum(1 << i for i, v in enumerate(a) if v), np.uint64), W)
    assert_equal(ballots, ball.astype(np.uint64))


def test_quad(device, rng):
    n, tg = 128, 64
    x = rng.integers(-4, 8, n).astype(np.int32)
    out = np.zeros((n, 8), np.int32)
    KS.get(device, "sg_quad")(n, x, out, threadgroup=tg)
    gid = np.arange(n)
    base, q = gid - gid % 4, gid % 4
    qs = x.reshape(-1, 4)
    rep = lambda v: np.repeat(v, 4)  # noqa: E731
    excl = np.cumsum(qs, 1) - qs
    last = rep(qs.max(1) - qs.min(1) + np.where((qs > -5).all(1), 1000, 0) + np.where((qs == 3).any(1), 10000, 0))
    exp = np.stack([rep(qs.sum(1)), x[base + 2], x[base + (q + 1) % 4], x[base + (q ^ 3)],
                    np.where(q >= 1, x[base + q - 1], x), np.where(q <= 2, x[base + np.minimum(q + 1, 3)], x),
                    excl.ravel(), last], 1)
    assert_equal(out, exp)


def test_other_types(device, rng):
    n, tg = 64, 64
    v = rng.standard_normal((n, 4)).astype(np.float32)
    h = rng.uniform(-100, 100, n).astype(np.float16)
    u = rng.integers(0, 2**31, n).astype(np.uint32)
    ov = np.zeros((n, 2, 4), np.float32)
    oh = np.zeros(n, np.float16)
    ou = np.zeros(n, np.uint32)
    kern = KS.get(device, "sg_types")
    W = kern.thread_execution_width
    kern(n, v, h, u, ov, oh, ou, threadgroup=tg)
    gid = np.arange(n)
    base, lane = gid - gid % W, gid % W
    sums = np.repeat(v.astype(np.float64).reshape(-1, W, 4).sum(1), W, axis=0)
    assert_close(ov[:, 0], sums, rtol=1e-5, atol=1e-5)
    assert_equal(ov[:, 1], v[base + W - 1 - lane])
    assert_equal(oh, np.repeat(h.reshape(-1, W).max(1), W))
    assert_equal(ou, np.repeat(u.reshape(-1, W).min(1), W) + u[base])


def test_half(device, rng):
    n, tg = 128, 64
    h = rng.uniform(-100, 100, n).astype(np.float16)
    oh = np.zeros((n, 3), np.float16)
    kern = KS.get(device, "sg_half")
    W = kern.thread_execution_width
    kern(n, h, oh, threadgroup=tg)
    base = np.arange(n) - np.arange(n) % W
    hs = h.reshape(-1, W)
    exp = np.stack([np.repeat(hs.max(1), W), np.repeat(hs.min(1), W), h[base + 7]], 1)
    assert_equal(oh, exp)


def test_partial_last_simdgroup(device, rng):
    n, tg = 100, 64  # groups: [0, 64) and [64, 100): the last SIMD-group has lanes 96..99 only
    x = rng.standard_normal(n).astype(np.float32)
    out = np.zeros((n, 4), np.float32)
    info = np.zeros((n, 3), np.uint32)
    kern = KS.get(device, "sg_partial")
    W = kern.thread_execution_width
    kern(n, x, out, info, threadgroup=tg)
    X = x.astype(np.float64)
    exp = np.stack([per_group(X, n, tg, np.sum, W), per_group(X, n, tg, lambda a: np.cumsum(a) - a, W),
                    per_group(X, n, tg, np.max, W), per_group(X, n, tg, lambda a: np.full(len(a), a[0]), W)], 1)
    assert_close(out, exp, rtol=1e-5, atol=1e-5)
    first = per_group(np.arange(n), n, tg, lambda a: np.where(a == a[0], 1000 + (a % tg) % W, 0), W)
    actual = np.where(np.arange(n) < 64, 64, 36)
    nsg = -(-actual // W)  # at width 32: 2 in the last group too (ceil(36 / 32))
    assert_equal(info, np.stack([np.ones(n), first, nsg * 100 + W], 1).astype(np.uint32))


def test_partial_last_simdgroup_ballot(device):
    n, tg = 100, 64
    out = np.zeros(n, np.uint32)
    kern = KS.get(device, "sg_partial_ballot")
    W = kern.thread_execution_width
    kern(n, out, threadgroup=tg)
    ball = per_group(np.arange(n), n, tg, lambda a: np.full(len(a), ((1 << len(a)) - 1) & 0xFFFFFFFF, np.uint64), W)
    assert_equal(out, ball.astype(np.uint32))


def test_early_return_lanes_are_inactive(device, rng):
    n_grid, n = 128, 77  # lanes 77..127 return before the SIMD-group functions
    x = rng.standard_normal(n_grid).astype(np.float32)
    out = np.zeros((n_grid, 2), np.float32)
    kern = KS.get(device, "sg_early_return")
    W = kern.thread_execution_width
    kern(n_grid, x, out, n, threadgroup=64)
    X = x[:n].astype(np.float64)
    exp = np.stack([per_group(X, n, 64, np.sum, W), per_group(X, n, 64, np.min, W)], 1)
    assert_close(out[:n], exp, rtol=1e-5, atol=1e-5)
    assert_equal(out[n:], np.zeros((n_grid - n, 2), np.float32))


def test_simd_functions_in_helpers(device, rng):
    n, tg = 128, 64
    x = rng.standard_normal(n).astype(np.float32)
    k = rng.integers(-100, 100, n).astype(np.int32)
    out = np.zeros(n, np.float32)
    ok = np.zeros(n, np.int32)
    kern = KS.get(device, "sg_helper")
    W = kern.thread_execution_width
    kern(n, x, k, out, ok, threadgroup=tg)
    assert_equal(out, np.repeat(x.reshape(-1, W).max(1), W))
    assert_equal(ok, np.repeat(k.reshape(-1, W).sum(1), W).astype(np.int32))



def test_divergent_simd_functions(device, rng):
    n_grid, n = 128, 77
    x = rng.uniform(0, 1, n_grid).astype(np.float32)
    out = np.zeros((n_grid, 3), np.float32)
    kern = KS.get(device, "sg_divergent")
    W = kern.thread_execution_width
    kern(n_grid, x, out, n, threadgroup=64)
    X = np.where(np.arange(n_grid) < n, x, 0).astype(np.float64)
    gid = np.arange(n_grid)
    partial = np.where(gid < n, per_group(X[:n], n, 64, np.sum, W).tolist() + [0] * (n_grid - n), -1.0)
    total = np.repeat(X.reshape(-1, W).sum(1), W)
    odd_max = np.repeat(X.reshape(-1, W)[:, 1::2].max(1), W)
    odd = np.where(gid % 2 == 1, odd_max, 0)
    assert_close(out, np.stack([partial, total, odd], 1), rtol=1e-5, atol=1e-6)
