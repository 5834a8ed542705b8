"""SIMD-group functions as region boundaries on the CPU (msl/passes/simd_exchanges.hpp): a kernel
whose SIMD-group calls stand in statements at its body's top level (or in loops whose header
every thread evaluates alike) runs as loops over the group's threads, its values exchanged
between the loops, instead of as fibers. Each kernel is checked against a NumPy model of
Metal's lanes (thread_index_in_threadgroup split into SIMD-groups of the kernel's width, the
last one short where the threadgroup is) and against the fibers (the regions off), with
threadgroups that are not a multiple of the width; the schedule is asserted on the CPU: regions
for the kernels in the subset, fibers for those beside it (a call in a branch, in a
conditional's arm, a lane that differs between threads, an `auto` value).
"""

from __future__ import annotations

import numpy as np
import pytest

from mcconf import assert_equal, compile_once, register_source

SOURCE = r"""
#include <metal_stdlib>
using namespace metal;

kernel void sr_int_ops(const device int* x [[buffer(0)]], device int* out [[buffer(1)]],
                       uint gid [[thread_position_in_grid]]) {
    int v = x[gid];
    int r0 = simd_sum(v);
    int r1 = simd_product(v);
    int r2 = simd_min(v);
    int r3 = simd_max(v);
    const int r4 = simd_and(v | 16);
    int r5 = simd_or(v & 7);
    int r6 = simd_xor(v);
    int r7 = simd_prefix_inclusive_sum(v) + 1000 * simd_prefix_exclusive_sum(v);
    int r8 = simd_prefix_inclusive_product(v);
    int r9 = simd_prefix_exclusive_product(v);
    int r10 = quad_sum(v) + 100 * quad_prefix_exclusive_sum(v);
    device int* o = out + 11 * gid;
    o[0] = r0; o[1] = r1; o[2] = r2; o[3] = r3; o[4] = r4; o[5] = r5; o[6] = r6; o[7] = r7; o[8] = r8;
    o[9] = r9; o[10] = r10;
}

kernel void sr_shuffles(const device float* x [[buffer(0)]], device float* out [[buffer(1)]],
                        constant ushort& d [[buffer(2)]], uint gid [[thread_position_in_grid]]) {
    const float v = x[gid] * 2.0f;
    out[9 * gid + 0] = simd_shuffle_down(v, d);
    out[9 * gid + 1] = simd_shuffle_up(v, d);
    out[9 * gid + 2] = simd_shuffle_xor(v, d);
    out[9 * gid + 3] = simd_shuffle_rotate_down(v, d);
    out[9 * gid + 4] = simd_shuffle_rotate_up(v, d);
    out[9 * gid + 5] = simd_broadcast(v, d);
    out[9 * gid + 6] = simd_shuffle(x[gid], d + 1);
    out[9 * gid + 7] = simd_broadcast_first(v);
    out[9 * gid + 8] = quad_shuffle_down(v, 1) + quad_broadcast(v, 3);
}

kernel void sr_votes(const device float* x [[buffer(0)]], device ulong* out [[buffer(1)]],
                     uint gid [[thread_position_in_grid]]) {
    bool big = x[gid] > 0.5f;
    simd_vote b = simd_ballot(big);
    bool every = simd_all(big);
    bool some = simd_any(x[gid] > 0.9f);
    quad_vote q = quad_ballot(big);
    out[4 * gid + 0] = ulong(b);
    out[4 * gid + 1] = every;
    out[4 * gid + 2] = some;
    out[4 * gid + 3] = uint(q);
}

// The reduction users write: a butterfly in a loop every thread runs alike, the SIMD-groups'
// totals through threadgroup memory, a second sum over them.
kernel void sr_two_level_sum(const device float* x [[buffer(0)]], device float* out [[buffer(1)]],
                             uint gid [[thread_position_in_grid]], uint lid [[thread_index_in_threadgroup]],
                             uint lane [[thread_index_in_simdgroup]], uint sg [[simdgroup_index_in_threadgroup]],
                             uint groups [[simdgroups_per_threadgroup]], uint width [[threads_per_simdgroup]],
                             uint tg [[threadgroup_position_in_grid]]) {
    threadgroup float partial[64];
    float v = x[gid];
    for (uint o = width / 2; o > 0; o >>= 1)
        v += simd_shuffle_xor(v, o);
    if (lane == 0) partial[sg] = v;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    float t = lid < groups ? partial[lid] : 0.0f;
    float total = simd_sum(t);
    if (lid == 0) out[tg] = total;
}

// A scan in a braced loop: the shuffle's value crosses into the statement after it.
kernel void sr_scan_loop(const device float* x [[buffer(0)]], device float* out [[buffer(1)]],
                         uint gid [[thread_position_in_grid]], uint lane [[thread_index_in_simdgroup]],
                         uint width [[threads_per_simdgroup]]) {
    float v = x[gid];
    for (ushort d = 1; d < width; d <<= 1) {
        float u = simd_shuffle_up(v, d);
        v += lane >= d ? u : 0.0f;
    }
    out[gid] = v;
}

// Conditionals and logical operators in the statement, none of them able to skip the call: a
// masked value, a condition, a left operand.
kernel void sr_conditions(const device float* x [[buffer(0)]], device float* out [[buffer(1)]],
                          constant uint& n [[buffer(2)]], uint gid [[thread_position_in_grid]],
                          uint lane [[thread_index_in_simdgroup]]) {
    const float s = simd_sum(gid < n ? x[gid] : 0.0f);
    const float a = simd_all(x[gid] > -40.0f) ? 1.0f : 3.0f;
    const bool b = simd_any(x[gid] > 45.0f) && lane < 8;
    out[3 * gid + 0] = s;
    out[3 * gid + 1] = a;
    out[3 * gid + 2] = b ? 1.0f : 0.0f;
}

// Beside the subset: each keeps the fibers, with the same results.
kernel void sr_in_branch(const device float* x [[buffer(0)]], device float* out [[buffer(1)]],
                         uint gid [[thread_position_in_grid]], uint lane [[thread_index_in_simdgroup]]) {
    float v = x[gid];
    if (lane < 8) v = simd_sum(v);
    out[gid] = v;
}
kernel void sr_in_conditional(const device float* x [[buffer(0)]], device float* out [[buffer(1)]],
                              uint gid [[thread_position_in_grid]], uint lane [[thread_index_in_simdgroup]]) {
    float v = x[gid];
    out[gid] = lane < 8 ? simd_max(v) : v;
}
kernel void sr_right_operand(const device float* x [[buffer(0)]], device float* out [[buffer(1)]],
                             uint gid [[thread_position_in_grid]], uint lane [[thread_index_in_simdgroup]]) {
    const bool b = lane < 8 && simd_any(x[gid] > 45.0f);
    out[gid] = b ? 1.0f : 0.0f;
}
kernel void sr_thread_lane(const device float* x [[buffer(0)]], device float* out [[buffer(1)]],
                           uint gid [[thread_position_in_grid]], uint lane [[thread_index_in_simdgroup]]) {
    float v = x[gid];
    out[gid] = simd_shuffle(v, ushort(lane ^ 1));
}
kernel void sr_auto_value(const device float* x [[buffer(0)]], device float* out [[buffer(1)]],
                          uint gid [[thread_position_in_grid]]) {
    auto v = x[gid] + 1.0f;
    float s = simd_sum(v);
    out[gid] = s;
}
"""
register_source(SOURCE)

REGIONS = {"sr_int_ops", "sr_shuffles", "sr_votes", "sr_two_level_sum", "sr_scan_loop", "sr_conditions"}
OFF = {"METALCALL_BARRIER_REGIONS": "0"}


def kernel(dev, name, regions_off):
    k = getattr(compile_once(dev, SOURCE, OFF if regions_off else None), name)
    if dev.backend == "cpu":
        want = "regions" if name in REGIONS and not regions_off else "fibers"
        assert k.thread_schedule == want, name
    return k


def lanes(n, tg, width):
    """For each thread of a grid of n in threadgroups of tg: the first thread of its SIMD-group and
    the group's lane count (Metal's lanes by thread_index_in_threadgroup; the last group short)."""
    i = np.arange(n)
    start = (i // tg) * tg
    size = np.minimum(tg, n - start)
    local = i - start
    base = local // width * width
    count = np.minimum(width, size - base)
    return start + base, count, local - base


def per_group(x, n, tg, width, f):
    base, count, _ = lanes(n, tg, width)
    return np.array([f(x[b:b + c]) for b, c in zip(base, count)])


def per_lane(x, n, tg, width, f):
    base, count, me = lanes(n, tg, width)
    return np.array([f(x[b:b + c], m) for b, c, m in zip(base, count, me)])


GRIDS = [(100, 37), (96, 64), (40, 40)]


@pytest.mark.parametrize("regions_off", [False, True], ids=["regions", "fibers"])
@pytest.mark.parametrize("n,tg", GRIDS)
def test_reductions_and_scans(device, rng, regions_off, n, tg):
    k = kernel(device, "sr_int_ops", regions_off)
    w = k.thread_execution_width or 32
    x = rng.integers(-3, 4, n).astype(np.int32)
    out = np.zeros((n, 11), np.int32)
    k(n, x, out, threadgroup=tg).wait()
    x64 = x.astype(np.int64)

    def wrap(a):
        return ((np.asarray(a, np.int64) + 2**31) % 2**32 - 2**31).astype(np.int32)

    prod = lambda g: int(np.prod(g.astype(np.int64) % 2**32) % 2**32) if len(g) else 1  # noqa: E731
    want = np.stack([
        per_group(x64, n, tg, w, np.sum),
        wrap(per_group(x64, n, tg, w, prod)),
        per_group(x64, n, tg, w, np.min),
        per_group(x64, n, tg, w, np.max),
        per_group(x64 | 16, n, tg, w, np.bitwise_and.reduce),
        per_group(x64 & 7, n, tg, w, np.bitwise_or.reduce),
        per_group(x64, n, tg, w, np.bitwise_xor.reduce),
        per_lane(x64, n, tg, w, lambda g, m: g[:m + 1].sum() + 1000 * g[:m].sum()),
        wrap(per_lane(x64, n, tg, w, lambda g, m: prod(g[:m + 1]))),
        wrap(per_lane(x64, n, tg, w, lambda g, m: prod(g[:m]))),
        per_group(x64, n, tg, 4, np.sum) + 100 * per_lane(x64, n, tg, 4, lambda g, m: g[:m].sum()),
    ], axis=1)
    assert_equal(out, wrap(want))


@pytest.mark.parametrize("regions_off", [False, True], ids=["regions", "fibers"])
@pytest.mark.parametrize("d", [0, 1, 3, 7])
def test_shuffles(device, rng, regions_off, d):
    n, tg = 100, 37
    k = kernel(device, "sr_shuffles", regions_off)
    w = k.thread_execution_width or 32
    x = rng.integers(-50, 50, n).astype(np.float32)
    out = np.zeros((n, 9), np.float32)
    k(n, x, out, np.uint16(d), threadgroup=tg).wait()
    v = 2 * x

    def read(g, src, me):
        return g[src] if 0 <= src < len(g) else g[me]

    want = np.stack([
        per_lane(v, n, tg, w, lambda g, m: read(g, m + d if m + d < w else -1, m)),
        per_lane(v, n, tg, w, lambda g, m: read(g, m - d, m)),
        per_lane(v, n, tg, w, lambda g, m: read(g, (m ^ d) & (w - 1), m)),
        per_lane(v, n, tg, w, lambda g, m: read(g, (m + d) % w, m)),
        per_lane(v, n, tg, w, lambda g, m: read(g, (m + w - d % w) % w, m)),
        per_lane(v, n, tg, w, lambda g, m: read(g, d, m)),
        per_lane(x, n, tg, w, lambda g, m: read(g, d + 1, m)),
        per_lane(v, n, tg, w, lambda g, m: g[0]),
        per_lane(v, n, tg, 4, lambda g, m: read(g, m + 1 if m + 1 < 4 else -1, m) + read(g, 3, m)),
    ], axis=1)
    assert_equal(out, want.astype(np.float32))


@pytest.mark.parametrize("regions_off", [False, True], ids=["regions", "fibers"])
@pytest.mark.parametrize("n,tg", GRIDS)
def test_votes(device, rng, regions_off, n, tg):
    k = kernel(device, "sr_votes", regions_off)
    w = k.thread_execution_width or 32
    x = rng.random(n, dtype=np.float32)
    x[:10] = 0.7  # one group where every lane is big
    out = np.zeros((n, 4), np.uint64)
    k(n, x, out, threadgroup=tg).wait()
    big = x > 0.5
    bits = lambda g: sum(1 << i for i, b in enumerate(g) if b)  # noqa: E731
    want = np.stack([
        per_group(big, n, tg, w, bits),
        per_group(big, n, tg, w, np.all),
        per_group(x > 0.9, n, tg, w, np.any),
        per_group(big, n, tg, 4, bits),
    ], axis=1).astype(np.uint64)
    assert_equal(out, want)


@pytest.mark.parametrize("regions_off", [False, True], ids=["regions", "fibers"])
@pytest.mark.parametrize("tg", [256, 64, 96])
def test_two_level_sum(device, rng, regions_off, tg):
    k = kernel(device, "sr_two_level_sum", regions_off)
    groups = 5
    x = rng.integers(-100, 100, groups * tg).astype(np.float32)
    out = np.zeros(groups, np.float32)
    k(groups * tg, x, out, threadgroup=tg).wait()
    assert_equal(out, x.reshape(groups, tg).sum(axis=1))


@pytest.mark.parametrize("regions_off", [False, True], ids=["regions", "fibers"])
@pytest.mark.parametrize("n,tg", GRIDS)
def test_scan_in_a_loop(device, rng, regions_off, n, tg):
    k = kernel(device, "sr_scan_loop", regions_off)
    w = k.thread_execution_width or 32
    x = rng.integers(-50, 50, n).astype(np.float32)
    out = np.zeros(n, np.float32)
    k(n, x, out, threadgroup=tg).wait()
    # lanes past the short group's end give the reader its own value: d steps add v again there
    def scan(g, m):
        v = g.astype(np.float64).copy()
        d = 1
        while d < w:
            u = np.array([v[i - d] if i >= d else v[i] for i in range(len(v))])
            v = v + np.where(np.arange(len(v)) >= d, u, 0)
            d <<= 1
        return v[m]
    assert_equal(out, per_lane(x, n, tg, w, scan).astype(np.float32))


@pytest.mark.parametrize("regions_off", [False, True], ids=["regions", "fibers"])
@pytest.mark.parametrize("n,tg", GRIDS)
def test_conditions_that_skip_no_call(device, rng, regions_off, n, tg):
    k = kernel(device, "sr_conditions", regions_off)
    w = k.thread_execution_width or 32
    x = rng.integers(-50, 50, n).astype(np.float32)
    x[:8] = 0.0  # a group where every value is above -40
    out = np.zeros((n, 3), np.float32)
    k(n, x, out, np.uint32(n - 5), threadgroup=tg).wait()
    _, _, me = lanes(n, tg, w)
    masked = np.where(np.arange(n) < n - 5, x, 0)
    want = np.stack([
        per_group(masked, n, tg, w, np.sum),
        np.where(per_group(x > -40, n, tg, w, np.all), 1.0, 3.0),
        (per_group(x > 45, n, tg, w, np.any) & (me < 8)).astype(np.float64),
    ], axis=1)
    assert_equal(out, want.astype(np.float32))


@pytest.mark.parametrize("regions_off", [False, True], ids=["rule", "off"])
def test_calls_beside_the_subset_keep_the_fibers(device, rng, regions_off):
    n, tg = 100, 37
    x = rng.integers(-50, 50, n).astype(np.float32)
    w = kernel(device, "sr_in_branch", regions_off).thread_execution_width or 32
    _, _, me = lanes(n, tg, w)
    out = np.zeros(n, np.float32)
    kernel(device, "sr_in_branch", regions_off)(n, x, out, threadgroup=tg).wait()
    active = per_lane(x, n, tg, w, lambda g, m: g[:8].sum())
    assert_equal(out, np.where(me < 8, active, x).astype(np.float32))
    kernel(device, "sr_in_conditional", regions_off)(n, x, out, threadgroup=tg).wait()
    assert_equal(out, np.where(me < 8, per_lane(x, n, tg, w, lambda g, m: g[:8].max()), x).astype(np.float32))
    kernel(device, "sr_thread_lane", regions_off)(n, x, out, threadgroup=tg).wait()
    assert_equal(out, per_lane(x, n, tg, w, lambda g, m: g[m ^ 1] if (m ^ 1) < len(g) else g[m]).astype(np.float32))
    kernel(device, "sr_auto_value", regions_off)(n, x, out, threadgroup=tg).wait()
    assert_equal(out, per_group(x + 1, n, tg, w, np.sum).astype(np.float32))
    kernel(device, "sr_right_operand", regions_off)(n, x, out, threadgroup=tg).wait()
    some = per_lane(x, n, tg, w, lambda g, m: bool((g[:8] > 45).any()))
    assert_equal(out, np.where(me < 8, some, False).astype(np.float32))
