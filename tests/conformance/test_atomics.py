"""Atomics on device and threadgroup memory: atomic_int, atomic_uint, atomic_float,
atomic_bool; atomic_load/store/exchange/compare_exchange_weak and
fetch_add/sub/min/max/and/or/xor (_explicit, memory_order_relaxed)."""

from __future__ import annotations

import numpy as np
import pytest

from mcconf import KernelSet, assert_close, assert_equal

KS = KernelSet([
    # a global counter and a signed sum
    """
kernel void at_counter(const device int* in [[buffer(0)]], device atomic_uint* count [[buffer(1)]],
                       device atomic_int* sum [[buffer(2)]], uint gid [[thread_position_in_grid]]) {
    int x = in[gid];
    if (x > 0) atomic_fetch_add_explicit(count, 1u, memory_order_relaxed);
    atomic_fetch_add_explicit(sum, x, memory_order_relaxed);
    atomic_fetch_sub_explicit(sum, 1, memory_order_relaxed);
}
""",
    # min/max on device atomic_int and atomic_uint
    """
kernel void at_minmax(const device int* in [[buffer(0)]], device atomic_int* mm [[buffer(1)]],
                      device atomic_uint* um [[buffer(2)]], uint gid [[thread_position_in_grid]]) {
    int x = in[gid];
    atomic_fetch_min_explicit(&mm[0], x, memory_order_relaxed);
    atomic_fetch_max_explicit(&mm[1], x, memory_order_relaxed);
    atomic_fetch_max_explicit(&um[0], uint(x) * 2654435761u, memory_order_relaxed);
    atomic_fetch_min_explicit(&um[1], uint(x) * 2654435761u, memory_order_relaxed);
}
""",
    # bit operations building masks
    """
kernel void at_bits(const device uint* in [[buffer(0)]], device atomic_uint* masks [[buffer(1)]],
                    uint gid [[thread_position_in_grid]]) {
    uint x = in[gid];
    atomic_fetch_or_explicit(&masks[0], 1u << (x % 32), memory_order_relaxed);
    atomic_fetch_and_explicit(&masks[1], ~(1u << (x % 29)), memory_order_relaxed);
    atomic_fetch_xor_explicit(&masks[2], x, memory_order_relaxed);
}
""",
    # atomic_float sum (Metal 3)
    """
kernel void at_float(const device float* in [[buffer(0)]], device atomic_float* total [[buffer(1)]],
                     uint gid [[thread_position_in_grid]]) {
    atomic_fetch_add_explicit(total, in[gid], memory_order_relaxed);
    atomic_fetch_sub_explicit(total + 1, in[gid] * 0.5f, memory_order_relaxed);
}
""",
    # exchange hands out unique tickets; the old values form a permutation
    """
kernel void at_exchange(device atomic_uint* slot [[buffer(0)]], device uint* got [[buffer(1)]],
                        uint gid [[thread_position_in_grid]]) {
    got[gid] = atomic_exchange_explicit(slot, gid + 1, memory_order_relaxed);
}
""",
    # compare-exchange loop: a float max via atomic_uint bit patterns (positive floats)
    """
kernel void at_cas_max(const device float* in [[buffer(0)]], device atomic_uint* best [[buffer(1)]],
                       device atomic_int* retries [[buffer(2)]], uint gid [[thread_position_in_grid]]) {
    uint desired = as_type<uint>(in[gid]);
    uint expected = atomic_load_explicit(best, memory_order_relaxed);
    while (as_type<float>(expected) < in[gid]) {
        if (atomic_compare_exchange_weak_explicit(best, &expected, desired,
                                                  memory_order_relaxed, memory_order_relaxed)) {
            break;
        }
        atomic_fetch_add_explicit(retries, 1, memory_order_relaxed);
    }
}
""",
    # atomic_bool: a "found" flag, and load/store
    """
kernel void at_bool(const device int* in [[buffer(0)]], device atomic_bool* found [[buffer(1)]],
                    device atomic_int* where [[buffer(2)]], constant int& needle [[buffer(3)]],
                    uint gid [[thread_position_in_grid]]) {
    if (in[gid] == needle) {
        bool was = atomic_exchange_explicit(found, true, memory_order_relaxed);
        if (!was) atomic_store_explicit(where, int(gid), memory_order_relaxed);
    }
}
""",
    # threadgroup atomics: per-group count and max, then one device atomic per group
    """
kernel void at_threadgroup(const device uint* in [[buffer(0)]], device uint* group_count [[buffer(1)]],
                           device uint* group_max [[buffer(2)]], device atomic_uint* total [[buffer(3)]],
                           uint gid [[thread_position_in_grid]], uint lid [[thread_position_in_threadgroup]],
                           uint g [[threadgroup_position_in_grid]]) {
    threadgroup atomic_uint count;
    threadgroup atomic_uint mx;
    if (lid == 0) {
        atomic_store_explicit(&count, 0u, memory_order_relaxed);
        atomic_store_explicit(&mx, 0u, memory_order_relaxed);
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    uint x = in[gid];
    if (x % 3 == 0) atomic_fetch_add_explicit(&count, 1u, memory_order_relaxed);
    atomic_fetch_max_explicit(&mx, x, memory_order_relaxed);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (lid == 0) {
        uint c = atomic_load_explicit(&count, memory_order_relaxed);
        group_count[g] = c;
        group_max[g] = atomic_load_explicit(&mx, memory_order_relaxed);
        atomic_fetch_add_explicit(total, c, memory_order_relaxed);
    }
}
""",
    # threadgroup atomic_int array (bins) and atomic_float in threadgroup memory
    """
kernel void at_threadgroup_array(const device int* in [[buffer(0)]], device int* bins_out [[buffer(1)]],
                                 device float* fsum [[buffer(2)]],
                                 uint gid [[thread_position_in_grid]], uint lid [[thread_position_in_threadgroup]],
                                 uint g [[threadgroup_position_in_grid]]) {
    threadgroup atomic_int bins[8];
    threadgroup atomic_float acc;
    if (lid < 8) atomic_store_explicit(&bins[lid], 0, memory_order_relaxed);
    if (lid == 0) atomic_store_explicit(&acc, 0.0f, memory_order_relaxed);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    int x = in[gid];
    atomic_fetch_add_explicit(&bins[x & 7], 1, memory_order_relaxed);
    atomic_fetch_sub_explicit(&bins[(x >> 3) & 7], 2, memory_order_relaxed);
    atomic_fetch_add_explicit(&acc, float(x & 15) * 0.25f, memory_order_relaxed);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (lid < 8) bins_out[g * 8 + lid] = atomic_load_explicit(&bins[lid], memory_order_relaxed);
    if (lid == 0) fsum[g] = atomic_load_explicit(&acc, memory_order_relaxed);
}
""",
    # fetch_* return the previous value: every thread gets a distinct slot index
    """
kernel void at_compact(const device float* in [[buffer(0)]], device float* out [[buffer(1)]],
                       device atomic_uint* n [[buffer(2)]], uint gid [[thread_position_in_grid]]) {
    float x = in[gid];
    if (x > 0.5f) {
        uint slot = atomic_fetch_add_explicit(n, 1u, memory_order_relaxed);
        out[slot] = x;
    }
}
""",
    # a plain uint buffer used atomically through a cast (very common)
    """
kernel void at_cast(const device uchar* data [[buffer(0)]], device uint* counts [[buffer(1)]],
                    uint gid [[thread_position_in_grid]]) {
    atomic_fetch_add_explicit((device atomic_uint*)&counts[data[gid] & 15], 1u, memory_order_relaxed);
}
""",
    # the atomic<T> template spelling
    """
kernel void at_template_spelling(device atomic<uint>* counter [[buffer(0)]], device atomic<int>* low [[buffer(1)]],
                                 const device int* in [[buffer(2)]], uint gid [[thread_position_in_grid]]) {
    atomic_fetch_add_explicit(counter, 2u, memory_order_relaxed);
    atomic_fetch_min_explicit(low, in[gid], memory_order_relaxed);
}
""",
    # device references: a struct of atomics and a plain float
    """
struct Counters { atomic_uint hits; atomic_uint misses; atomic_int balance; };
kernel void at_struct_ref(const device float* in [[buffer(0)]], device Counters& c [[buffer(1)]],
                          device float& first [[buffer(2)]], uint gid [[thread_position_in_grid]]) {
    if (in[gid] > 0.0f) atomic_fetch_add_explicit(&c.hits, 1u, memory_order_relaxed);
    else atomic_fetch_add_explicit(&c.misses, 1u, memory_order_relaxed);
    atomic_fetch_sub_explicit(&c.balance, in[gid] > 0.0f ? -1 : 1, memory_order_relaxed);
    if (gid == 0) first = in[0] * 10.0f;
}
"""
])

N = 4096


def test_counter(device, rng):
    x = rng.integers(-100, 100, N).astype(np.int32)
    count = np.zeros(1, np.uint32)
    total = np.zeros(1, np.int32)
    KS.get(device, "at_counter")(N, x, count, total)
    assert count[0] == (x > 0).sum()
    assert total[0] == x.sum() - N


def test_minmax(device, rng):
    x = rng.integers(-10**6, 10**6, N).astype(np.int32)
    mm = np.array([np.iinfo(np.int32).max, np.iinfo(np.int32).min], np.int32)
    um = np.array([0, 0xFFFFFFFF], np.uint32)
    KS.get(device, "at_minmax")(N, x, mm, um)
    assert_equal(mm, np.array([x.min(), x.max()], np.int32))
    h = (x.view(np.uint32).astype(np.uint64) * np.uint64(2654435761)) & np.uint64(0xFFFFFFFF)
    assert_equal(um, np.array([h.max(), h.min()], np.uint32))


def test_bits(device, rng):
    x = rng.integers(0, 2**32, 200, dtype=np.uint64).astype(np.uint32)
    masks = np.array([0, 0xFFFFFFFF, 0x12345678], np.uint32)
    KS.get(device, "at_bits")(len(x), x, masks)
    orm = 0
    andm = 0xFFFFFFFF
    xorm = 0x12345678
    for v in x.tolist():
        orm |= 1 << (v % 32)
        andm &= ~(1 << (v % 29)) & 0xFFFFFFFF
        xorm ^= v
    assert_equal(masks, np.array([orm, andm, xorm], np.uint32))


def test_float_atomic(device, rng):
    x = (rng.integers(0, 64, N) / 8).astype(np.float32)  # exact sums in any order
    total = np.array([0.0, 100.0], np.float32)
    KS.get(device, "at_float")(N, x, total)
    assert_equal(total, np.array([x.sum(dtype=np.float64), 100 - 0.5 * x.sum(dtype=np.float64)], np.float32))


def test_exchange(device):
    n = 1000
    slot = np.zeros(1, np.uint32)
    got = np.zeros(n, np.uint32)
    KS.get(device, "at_exchange")(n, slot, got)
    # the chain 0 -> a -> b -> ... -> slot[0]: all old values distinct, plus the final value
    assert_equal(np.sort(np.concatenate([got, slot])), np.arange(n + 1, dtype=np.uint32))


def test_compare_exchange(device, rng):
    x = rng.uniform(0.0, 1000.0, N).astype(np.float32)
    best = np.zeros(1, np.uint32)
    retries = np.zeros(1, np.int32)
    KS.get(device, "at_cas_max")(N, x, best, retries)
    assert best.view(np.float32)[0] == x.max()


def test_atomic_bool(device, rng):
    x = rng.integers(0, 1000, N).astype(np.int32)
    x[x == 4242] = 0
    x[[100, 2000, 3000]] = 4242
    found = np.zeros(1, np.bool_)
    where = np.full(1, -1, np.int32)
    KS.get(device, "at_bool")(N, x, found, where, 4242)
    assert found[0]
    assert where[0] in (100, 2000, 3000)
    found2 = np.zeros(1, np.bool_)
    where2 = np.full(1, -1, np.int32)
    KS.get(device, "at_bool")(N, x, found2, where2, 999999)
    assert not found2[0] and where2[0] == -1


def test_threadgroup_atomics(device, rng):
    n, tg = 4096, 256
    x = rng.integers(0, 10**6, n).astype(np.uint32)
    gc = np.zeros(n // tg, np.uint32)
    gm = np.zeros(n // tg, np.uint32)
    total = np.zeros(1, np.uint32)
    KS.get(device, "at_threadgroup")(n, x, gc, gm, total, threadgroup=tg)
    blocks = x.reshape(-1, tg)
    assert_equal(gc, (blocks % 3 == 0).sum(1).astype(np.uint32))
    assert_equal(gm, blocks.max(1))
    assert total[0] == (x % 3 == 0).sum()


def test_threadgroup_atomic_array(device, rng):
    n, tg = 2048, 128
    x = rng.integers(0, 2**16, n).astype(np.int32)
    bins = np.zeros((n // tg, 8), np.int32)
    fsum = np.zeros(n // tg, np.float32)
    KS.get(device, "at_threadgroup_array")(n, x, bins, fsum, threadgroup=tg)
    blocks = x.reshape(-1, tg)
    exp = np.zeros((n // tg, 8), np.int64)
    for g, blk in enumerate(blocks):
        np.add.at(exp[g], blk & 7, 1)
        np.add.at(exp[g], (blk >> 3) & 7, -2)
    assert_equal(bins, exp.astype(np.int32))
    assert_equal(fsum, ((blocks & 15) * 0.25).sum(1).astype(np.float32))


def test_stream_compaction(device, rng):
    x = rng.random(N).astype(np.float32)
    out = np.zeros(N, np.float32)
    n = np.zeros(1, np.uint32)
    KS.get(device, "at_compact")(N, x, out, n)
    keep = x[x > 0.5]
    assert n[0] == len(keep)
    assert_equal(np.sort(out[: n[0]]), np.sort(keep))



def test_atomic_through_pointer_cast(device, rng):
    data = rng.integers(0, 256, N).astype(np.uint8)
    counts = np.zeros(16, np.uint32)
    KS.get(device, "at_cast")(N, data, counts)
    assert_equal(counts, np.bincount(data & 15, minlength=16).astype(np.uint32))


def test_atomic_template_spelling(device, rng):
    x = rng.integers(-1000, 1000, N).astype(np.int32)
    counter = np.zeros(1, np.uint32)
    low = np.array([10**6], np.int32)
    KS.get(device, "at_template_spelling")(N, counter, low, x)
    assert counter[0] == 2 * N
    assert low[0] == x.min()


def test_device_references(device, rng):
    x = rng.standard_normal(N).astype(np.float32)
    c = np.zeros(3, np.int32)  # hits, misses (uint) and balance (int): 12 bytes
    first = np.zeros(1, np.float32)
    KS.get(device, "at_struct_ref")(N, x, c, first)
    pos = int((x > 0).sum())
    assert_equal(c, np.array([pos, N - pos, pos - (N - pos)], np.int32))
    assert first[0] == x[0] * np.float32(10)
