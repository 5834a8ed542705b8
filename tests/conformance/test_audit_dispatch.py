"""Dispatch geometry audit: what test_grid.py, test_kernel_attributes.py and test_threadgroup.py
leave out, checked against NumPy models of `dispatchThreads` on every device.

* `ushort` threadgroup positions and counts that the dispatch overflows: they wrapped (the grid
  check looked at thread positions alone); refused like those, and exact up to the limit. A
  ushort position holds 65536 threads or groups (0 ... 65535), a count 65535, and a scalar
  attribute reads x alone: grids of 65536 threads, or taller than 65535 under a scalar
  `ushort` position, were refused before.
* `[[max_total_threads_per_threadgroup(x)]]` whose x is a template's expression (MLX's steel
  kernels: `WM * WN * 32`) or a named constant (`Cfg::threads` too): the limit was left out (1024), so the automatic
  threadgroup ran 1000 threads through a kernel written for 128 (`threadgroup T tile[WM*WN*32]`
  overflowed); and a declared limit over the device's (2048) let threadgroups of 2048 run on the
  CPU, where Metal's pipeline limit never exceeds the device's.
* Already right, kept: quad- and SIMD-group attributes and their `dispatch_` forms in partial
  3-D threadgroups as ushort, threads leaving before a barrier, parameters in any order with gaps
  in their indices, the refusals of duplicate indices, atomics and a struct by reference in
  `[[threadgroup(i)]]` memory with partial groups, and a helper's own `threadgroup` array used by
  many groups at once (each group its own, on every worker).
"""

from __future__ import annotations

import numpy as np
import pytest

import metalcall as mc
from mcconf import KernelSet, assert_equal

KS = KernelSet([
    """
kernel void ad_ushort_groups(device uint* out [[buffer(0)]], ushort g [[threadgroup_position_in_grid]],
                             ushort n [[threadgroups_per_grid]], uint i [[thread_position_in_grid]]) {
    out[2 * i] = g;
    out[2 * i + 1] = n;
}
""",
    """
kernel void ad_ushort2_groups(device uint* out [[buffer(0)]], ushort2 g [[threadgroup_position_in_grid]],
                              uint2 p [[thread_position_in_grid]], uint2 size [[threads_per_grid]]) {
    out[p.y * size.x + p.x] = uint(g.y) * 4u + g.x;
}
""",
    """
kernel void ad_ushort_group_position(device uint* out [[buffer(0)]], ushort g [[threadgroup_position_in_grid]],
                                     uint i [[thread_position_in_grid]]) {
    out[i] = g;
}
""",
    """
kernel void ad_ushort_x(device uint* out [[buffer(0)]], ushort x [[thread_position_in_grid]]) {
    out[x] = x + 1u;  // a scalar position is x alone, whatever the grid's height
}
""",
    """
kernel void ad_ushort_count(device uint* out [[buffer(0)]], ushort n [[threadgroups_per_grid]],
                            uint i [[thread_position_in_grid]]) {
    out[i] = n;
}
""",
    """
// MLX's steel GEMM writes its limit from its template parameters; the tile is sized by it.
template <int WM, int WN>
[[kernel, max_total_threads_per_threadgroup(WM * WN * 32)]] void ad_tiled(
    const device uint* x [[buffer(0)]], device uint* y [[buffer(1)]],
    uint gid [[thread_position_in_grid]], uint lid [[thread_position_in_threadgroup]],
    uint n [[threads_per_threadgroup]]) {
  threadgroup uint tile[WM * WN * 32];
  tile[lid] = x[gid];
  threadgroup_barrier(mem_flags::mem_threadgroup);
  y[gid] = tile[n - 1 - lid] * 1000u + n;
}
template [[host_name("ad_tiled_2_2")]] [[kernel]] void ad_tiled<2, 2>(const device uint*, device uint*, uint, uint, uint);
template [[host_name("ad_tiled_1_1")]] [[kernel]] void ad_tiled<1, 1>(const device uint*, device uint*, uint, uint, uint);
""",
    """
constant constexpr uint AD_BLOCK = 96;
[[max_total_threads_per_threadgroup(AD_BLOCK)]]
kernel void ad_named_limit(device uint* y [[buffer(0)]], uint gid [[thread_position_in_grid]],
                           uint n [[threads_per_threadgroup]]) {
  y[gid] = n;
}
""",
    """
constant constexpr uint AD_WHOLE = 96;
constexpr constant uint AD_HALF_BLOCK = AD_WHOLE / 2;
[[max_total_threads_per_threadgroup(AD_HALF_BLOCK + 16u)]]
kernel void ad_derived_limit(device uint* y [[buffer(0)]], uint gid [[thread_position_in_grid]],
                             uint n [[threads_per_threadgroup]]) {
  y[gid] = n;
}
""",
    """
struct AdConfig { static constant constexpr int threads = 80; };
[[max_total_threads_per_threadgroup(AdConfig::threads)]]
kernel void ad_member_limit(device uint* y [[buffer(0)]], uint gid [[thread_position_in_grid]],
                            uint n [[threads_per_threadgroup]]) {
  y[gid] = n;
}
""",
    """
[[max_total_threads_per_threadgroup(2048)]]
kernel void ad_over_device(device uint* y [[buffer(0)]], uint gid [[thread_position_in_grid]],
                           uint n [[threads_per_threadgroup]]) {
  y[gid] = n;
}
""",
    """
kernel void ad_quads(device uint* out [[buffer(0)]], uint3 p [[thread_position_in_grid]], uint3 g [[threads_per_grid]],
                     ushort q [[thread_index_in_quadgroup]], ushort qi [[quadgroup_index_in_threadgroup]],
                     ushort nq [[quadgroups_per_threadgroup]], ushort dnq [[dispatch_quadgroups_per_threadgroup]],
                     ushort dns [[dispatch_simdgroups_per_threadgroup]], ushort ns [[simdgroups_per_threadgroup]],
                     ushort lane [[thread_index_in_simdgroup]], ushort si [[simdgroup_index_in_threadgroup]],
                     ushort w [[threads_per_simdgroup]], ushort idx [[thread_index_in_threadgroup]]) {
    device uint* o = out + 10 * ((p.z * g.y + p.y) * g.x + p.x);
    o[0] = q; o[1] = qi; o[2] = nq; o[3] = dnq; o[4] = dns; o[5] = ns; o[6] = lane; o[7] = si; o[8] = w; o[9] = idx;
}
""",
    """
// `if (gid >= n) return;` before a barrier (common in tutorials): the threads that stay meet.
kernel void ad_early_exit(const device float* x [[buffer(0)]], device float* y [[buffer(1)]],
                          constant uint& n [[buffer(2)]], uint gid [[thread_position_in_grid]],
                          uint lid [[thread_position_in_threadgroup]], uint tg [[threads_per_threadgroup]]) {
    threadgroup float s[64];
    if (gid >= n) return;
    s[lid] = x[gid];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    uint m = min(tg, n - (gid - lid));
    y[gid] = s[(lid + 1) % m];
}
""",
    """
struct AdBins { atomic_uint c[16]; uint total; };
kernel void ad_histogram(const device uchar* x [[buffer(0)]], device uint* out [[buffer(1)]],
                         threadgroup atomic_int* h [[threadgroup(0)]], threadgroup AdBins& b [[threadgroup(1)]],
                         uint gid [[thread_position_in_grid]], ushort lid [[thread_index_in_threadgroup]],
                         ushort n [[threads_per_threadgroup]], uint g [[threadgroup_position_in_grid]]) {
    for (uint k = lid; k < 16; k += n) {
        atomic_store_explicit(&h[k], 0, memory_order_relaxed);
        atomic_store_explicit(&b.c[k], 0u, memory_order_relaxed);
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    atomic_fetch_add_explicit(&h[x[gid] & 15], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&b.c[x[gid] >> 4], 1u, memory_order_relaxed);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (lid < 16) out[g * 32 + lid] = uint(atomic_load_explicit(&h[lid], memory_order_relaxed));
    else if (lid < 32) out[g * 32 + lid] = atomic_load_explicit(&b.c[lid - 16], memory_order_relaxed);
}
""",
    """
float ad_group_sum(float v, uint lid, uint n) {
    threadgroup float buf[256];  // the helper's own: one per threadgroup
    buf[lid] = v;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    float s = 0.0f;
    for (uint k = 0; k < n; ++k) s += buf[k];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    return s;
}
kernel void ad_helper_tile(const device float* x [[buffer(0)]], device float* y [[buffer(1)]],
                           uint gid [[thread_position_in_grid]], uint lid [[thread_index_in_threadgroup]],
                           uint n [[threads_per_threadgroup]]) {
    y[gid] = ad_group_sum(x[gid], lid, n);
}
""",
    """
// Builtins first, buffers out of index order with a gap, a const builtin.
kernel void ad_order(const uint i [[thread_position_in_grid]], device float* y [[buffer(3)]],
                     ushort lid [[thread_index_in_threadgroup]], const device float* x [[buffer(1)]]) {
    y[i] = x[i] * 2.0f + float(lid);
}
""",
])


def _ceil(a, b):
    return -(-a // b)


def test_ushort_threadgroup_position_just_under_the_limit(device):
    n = 65535 * 2  # 65535 groups of 2: the last position and the count fit a ushort
    out = np.full(2 * n, 0xDEADBEEF, np.uint32)
    KS.get(device, "ad_ushort_groups")(n, out, threadgroup=2)
    i = np.arange(n)
    assert_equal(out[0::2], (i // 2).astype(np.uint32))
    assert_equal(out[1::2], np.full(n, 65535, np.uint32))


def test_ushort_positions_of_65536_threadgroups_fit(device):
    n = 65536 * 2  # positions 0 ... 65535: every one fits (the count, 65536, would not)
    out = np.zeros(n, np.uint32)
    KS.get(device, "ad_ushort_group_position")(n, out, threadgroup=2)
    assert_equal(out, (np.arange(n) // 2).astype(np.uint32))


def test_scalar_ushort_position_in_a_tall_grid(device):
    out = np.zeros(64, np.uint32)
    KS.get(device, "ad_ushort_x")((40, 70000), out)  # refused before: the grid's y is over 65535
    assert_equal(out[:40], np.arange(1, 41, dtype=np.uint32))
    assert not out[40:].any()


@pytest.mark.parametrize("kernel,grid,tg", [
    ("ad_ushort_groups", 70000, 1),          # 70000 groups: positions and count would wrap
    ("ad_ushort_groups", 65536 * 2, 2),      # 65536 groups: the count would be 0
    ("ad_ushort_count", 65536 * 3 + 1, 3),   # the count alone
    ("ad_ushort2_groups", (4, 70000), (4, 1)),  # the y dimension of a ushort2
    ("ad_ushort_group_position", 65537 * 2, 2),  # position 65536
])
def test_ushort_threadgroup_counts_over_the_limit_are_refused(device, kernel, grid, tg):
    size = int(np.prod(grid))
    out = np.zeros(2 * size, np.uint32)
    with pytest.raises(mc.ArgumentError, match="declared ushort.*threadgroups"):
        KS.get(device, kernel)(grid, out, threadgroup=tg)
    assert not out.any(), "nothing ran"


def test_ushort2_threadgroup_positions_in_2d(device):
    w, h = 8, 9000  # 2 x 4500 groups of (4, 2)
    out = np.zeros(w * h, np.uint32)
    KS.get(device, "ad_ushort2_groups")((w, h), out, threadgroup=(4, 2))
    y, x = np.mgrid[0:h, 0:w]
    assert_equal(out.reshape(h, w), ((y // 2) * 4 + x // 4).astype(np.uint32))


@pytest.mark.parametrize("name,limit", [("ad_tiled_2_2", 128), ("ad_tiled_1_1", 32)])
def test_template_max_total_threads_per_threadgroup(device, name, limit):
    kernel = KS.get(device, name)
    assert 0 < kernel.max_total_threads_per_threadgroup <= limit
    n = 1000
    x = np.arange(n, dtype=np.uint32) + 7
    y = np.zeros(n, np.uint32)
    kernel(n, x, y)  # the automatic threadgroup stays within the declared limit (the tile's size)
    t = int(y[0] % 1000)
    assert 0 < t <= limit
    gid = np.arange(n)
    base = gid - gid % t
    size = np.minimum(t, n - base)
    assert_equal(y, (x[base + size - 1 - gid % t] * 1000 + size).astype(np.uint32))
    with pytest.raises(mc.ArgumentError, match="limit"):
        kernel(n, x, y, threadgroup=2 * limit)


@pytest.mark.parametrize("name,limit", [("ad_named_limit", 96), ("ad_derived_limit", 64), ("ad_member_limit", 80)])
def test_max_total_threads_per_threadgroup_from_a_constant(device, name, limit):
    kernel = KS.get(device, name)
    assert 0 < kernel.max_total_threads_per_threadgroup <= limit
    y = np.zeros(1000, np.uint32)
    kernel(1000, y)
    assert 0 < y.max() <= limit
    with pytest.raises(mc.ArgumentError, match="limit"):
        kernel(1000, y, threadgroup=limit + 1)


def test_declared_limit_over_the_device_is_the_device(device):
    kernel = KS.get(device, "ad_over_device")
    assert kernel.max_total_threads_per_threadgroup <= device.max_threads_per_threadgroup <= 1024
    y = np.zeros(4096, np.uint32)
    with pytest.raises(mc.ArgumentError, match="limit"):
        kernel(4096, y, threadgroup=2048)
    assert not y.any()
    kernel(4096, y)
    assert 0 < y.max() <= device.max_threads_per_threadgroup


def test_quad_and_simd_attributes_in_partial_3d_groups(device):
    grid, tg = (11, 7, 3), (5, 3, 2)
    out = np.full(10 * 11 * 7 * 3, 0xDEADBEEF, np.uint32)
    kernel = KS.get(device, "ad_quads")
    kernel(grid, out, threadgroup=tg)
    w = kernel.thread_execution_width
    z, y, x = np.meshgrid(np.arange(3), np.arange(7), np.arange(11), indexing="ij")
    pos = np.stack([x, y, z], -1)
    t = np.array(tg)
    lpos, gpos = pos % t, pos // t
    actual = np.minimum(t, np.array(grid) - gpos * t)
    idx = (lpos[..., 2] * actual[..., 1] + lpos[..., 1]) * actual[..., 0] + lpos[..., 0]
    count = actual.prod(-1)
    full = int(np.prod(tg))
    expect = np.stack([idx % 4, idx // 4, _ceil(count, 4), np.full_like(idx, _ceil(full, 4)),
                       np.full_like(idx, _ceil(full, w)), _ceil(count, w), idx % w, idx // w,
                       np.full_like(idx, w), idx], -1)
    assert_equal(out.reshape(3, 7, 11, 10), expect.astype(np.uint32))


@pytest.mark.parametrize("grid", [256, 200, 230])
def test_threads_leaving_before_a_barrier(device, grid):
    n = 200
    x = np.arange(256, dtype=np.float32) * 0.5
    y = np.full(256, -1, np.float32)
    KS.get(device, "ad_early_exit")(grid, x, y, np.uint32(n), threadgroup=64)
    gid = np.arange(n)
    base = gid - gid % 64
    m = np.minimum(64, n - base)
    expect = np.full(256, -1, np.float32)
    expect[:n] = x[base + (gid % 64 + 1) % m]
    assert_equal(y, expect)


def test_parameters_in_any_order_with_index_gaps(device):
    kernel = KS.get(device, "ad_order")
    assert [p["binding"] for p in kernel.params if p["kind"] == "buffer"] == [3, 1]
    x = np.arange(40, dtype=np.float32)
    y = np.zeros(40, np.float32)
    kernel(40, x, y, threadgroup=8)  # bound by index: x is buffer(1), y buffer(3)
    assert_equal(y, x * 2 + np.arange(40) % 8)


@pytest.mark.parametrize("params", [
    "device uint* a [[buffer(0)]], device uint* b [[buffer(0)]]",
    "device uint* a [[buffer(0)]], threadgroup uint* s [[threadgroup(1)]], threadgroup uint* t [[threadgroup(1)]]",
])
def test_duplicate_indices_are_refused(device, params):
    src = ("#include <metal_stdlib>\nusing namespace metal;\n"
           f"kernel void ad_dup({params}, uint i [[thread_position_in_grid]]) {{ a[i] = i; }}\n")
    with pytest.raises(mc.CompileError, match="bound twice"):
        device.compile(src)


def test_atomics_and_a_struct_in_threadgroup_parameters(device, rng):
    n, tg = 1000, 96  # a partial last group of 40
    x = rng.integers(0, 256, n).astype(np.uint8)
    groups = _ceil(n, tg)
    out = np.zeros(groups * 32, np.uint32)
    KS.get(device, "ad_histogram")(n, x, out, threadgroup=tg, threadgroup_memory=[64, 80])
    for g, row in enumerate(out.reshape(groups, 32)):
        block = x[g * tg:(g + 1) * tg]
        expect = np.concatenate([np.bincount(block & 15, minlength=16), np.bincount(block >> 4, minlength=16)])
        assert_equal(row[:min(32, len(block))], expect[:min(32, len(block))].astype(np.uint32))


def test_helper_threadgroup_array_in_many_groups(device):
    n = 256 * 64  # groups run on every worker at once
    x = (np.arange(n) % 7).astype(np.float32)
    y = np.zeros(n, np.float32)
    kernel = KS.get(device, "ad_helper_tile")
    for _ in range(3):
        kernel(n, x, y, threadgroup=256)
        assert_equal(y, np.repeat(x.reshape(-1, 256).sum(1), 256))
