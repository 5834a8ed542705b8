"""Shuffles under a lane test whose source lane skipped the call: `if (lane >= k) v +=
simd_shuffle_up(v, k);` (AppleNumericalComputing's prefix sums, checked at distance 0 against
the CPU on Apple GPUs). MSL leaves a read from an inactive lane undefined; Apple GPUs read that
lane's register, its current value of v, and metalcall now gives the same (the shuffle is
evaluated by every lane that reaches the test: passes/guarded_shuffles.cpp). Before, the fibers
returned the caller's own value there: wrong scans with no error. Each kernel against a NumPy
model of the SIMD-group's registers, on every device."""

from __future__ import annotations

import numpy as np

from mcconf import KernelSet

KS = KernelSet([
    """
kernel void ils_scan_up(device int* x [[buffer(0)]], uint lane [[thread_index_in_simdgroup]],
                        uint i [[thread_position_in_grid]]) {
    int v = x[i];
    if (lane >= 1) v += simd_shuffle_up(v, 1);
    if (lane >= 2) v += simd_shuffle_up(v, 2);
    if (lane >= 4) { v += simd_shuffle_up(v, 4); }
    if ( lane >=  8 ) v += simd_shuffle_up( v,  8 );
    if (lane >= 16)
        v += metal::simd_shuffle_up(v, 16);
    x[i] = v;
}
""",
    """
kernel void ils_tree_down(device float* x [[buffer(0)]], device float* lane0 [[buffer(1)]],
                          uint lane [[thread_index_in_simdgroup]], uint s [[simdgroup_index_in_threadgroup]],
                          uint g [[threadgroup_position_in_grid]], uint i [[thread_position_in_grid]]) {
    float v = x[i];
    for (ushort k = 16; k >= 1; k >>= 1) {
        if (lane < k) v += simd_shuffle_down(v, k);
    }
    x[i] = v;
    if (lane == 0) lane0[g * 2 + s] = v;
}
""",
    """
kernel void ils_broadcast_quads(device int* x [[buffer(0)]], device int* q [[buffer(1)]],
                                uint lane [[thread_index_in_simdgroup]], uint ql [[thread_index_in_quadgroup]],
                                uint i [[thread_position_in_grid]]) {
    int v = x[i];
    int w = v;
    if (lane != 3) v = simd_broadcast(v, 3) * 10 + v;
    if (ql >= 1) w += quad_shuffle_up(w, 1);
    if (ql >= 2) w += quad_shuffle_up(w, 2);
    x[i] = v;
    q[i] = w;
}
""",
    """
static inline void ils_scan_pair(thread ushort& a, thread ushort& b, uint lane) {
    for (ushort k = 1; k < 32; k <<= 1) {
        if (lane >= k) {
            a += simd_shuffle_up(a, k);
            b += simd_shuffle_up(b, k);
        }
    }
}
kernel void ils_scan_pairs(device ushort2* x [[buffer(0)]], uint lane [[thread_index_in_simdgroup]],
                           uint i [[thread_position_in_grid]]) {
    ushort a = x[i].x, b = x[i].y;
    ils_scan_pair(a, b, lane);
    x[i] = ushort2(a, b);
}
""",
    """
static inline int ils_pick(int v, uint lane) { return lane != 3 ? simd_broadcast(v, 3) * 10 + v : v; }
kernel void ils_conditionals(device int* x [[buffer(0)]], device float* y [[buffer(1)]], device int* z [[buffer(2)]],
                             device uint* b [[buffer(3)]], uint lane [[thread_index_in_simdgroup]],
                             uint i [[thread_position_in_grid]]) {
    int v = x[i];
    for (ushort k = 1; k < 32; k <<= 1) {
        v += lane >= k ? simd_shuffle_up(v, k) : 0;
    }
    float w = y[i];
    for (ushort k = 16; k >= 1; k >>= 1)
        w = lane < k ? w + simd_shuffle_down(w, k) : w;
    const int u = z[i];
    const bool odd = (u & 1) != 0;
    b[i] = lane > 0 && simd_shuffle_up(odd, 1);
    x[i] = v;
    y[i] = w;
    z[i] = ils_pick(u, lane);
}
""",
])


def _groups(a, width):
    return a.reshape(-1, width)


def test_scan_up(device, rng):
    x = rng.integers(-1000, 1000, 128).astype(np.int32)
    want = np.cumsum(_groups(x.astype(np.int64), 32), 1).ravel()
    KS.get(device, "ils_scan_up")(x.size, x, threadgroup=64)
    np.testing.assert_array_equal(x, want)


def test_tree_reduction(device, rng):
    x = (rng.integers(-64, 64, 128) / 4).astype(np.float32)  # sums exact in float
    sums = _groups(x.astype(np.float64), 32).sum(1)
    v = _groups(x.astype(np.float64), 32).copy()
    for k in (16, 8, 4, 2, 1):  # every lane's register, the lanes below k updated
        src = np.concatenate([v[:, k:], np.zeros((v.shape[0], k))], 1)  # lanes past 31: not read
        v[:, :k] = v[:, :k] + src[:, :k]
    lane0 = np.zeros(4, np.float32)
    KS.get(device, "ils_tree_down")(x.size, x, lane0, threadgroup=64)
    np.testing.assert_array_equal(x, v.ravel())
    np.testing.assert_array_equal(lane0, sums)  # lane 0: the SIMD-group's sum


def test_broadcast_and_quads(device, rng):
    x = rng.integers(-100, 100, 64).astype(np.int32)
    q = np.zeros(64, np.int32)
    orig = x.astype(np.int64)
    g = _groups(orig, 32)
    want = g + 10 * g[:, 3:4]
    want[:, 3] = g[:, 3]
    KS.get(device, "ils_broadcast_quads")(x.size, x, q, threadgroup=32)
    np.testing.assert_array_equal(x, want.ravel())
    np.testing.assert_array_equal(q, np.cumsum(_groups(orig, 4), 1).ravel())


def test_scan_pairs_in_a_helper(device, rng):
    """Two counters scanned in one braced body, through references (a radix sort's digit counts)."""
    x = rng.integers(0, 2000, (64, 2)).astype(np.uint16)
    want = np.cumsum(x.astype(np.int64).reshape(2, 32, 2), 1).reshape(64, 2) % 65536
    KS.get(device, "ils_scan_pairs")(64, x, threadgroup=64)
    np.testing.assert_array_equal(x, want)


def test_shuffles_in_conditionals(device, rng):
    """The same reads from a branch of `?:` (a scan, a tree reduction as an unbraced loop body, a
    broadcast in a helper's return) and after `&&`: every lane reaching the statement takes part."""
    x = rng.integers(-1000, 1000, 64).astype(np.int32)
    y = (rng.integers(-64, 64, 64) / 4).astype(np.float32)
    z = rng.integers(-100, 100, 64).astype(np.int32)
    b = np.full(64, 7, np.uint32)
    want_x = np.cumsum(_groups(x.astype(np.int64), 32), 1).ravel()
    w = _groups(y.astype(np.float64), 32).copy()
    for k in (16, 8, 4, 2, 1):
        w[:, :k] = w[:, :k] + w[:, k:2 * k]
    g = _groups(z.astype(np.int64), 32)
    want_z = g + 10 * g[:, 3:4]
    want_z[:, 3] = g[:, 3]
    odd = _groups(z.astype(np.int64) & 1, 32)
    want_b = np.concatenate([np.zeros((2, 1), np.int64), odd[:, :-1]], 1).ravel()
    KS.get(device, "ils_conditionals")(64, x, y, z, b, threadgroup=64)
    np.testing.assert_array_equal(x, want_x)
    np.testing.assert_array_equal(y, w.ravel())
    np.testing.assert_array_equal(z, want_z.ravel())
    np.testing.assert_array_equal(b, want_b)
