"""Threadgroup memory and barriers: arrays declared in the kernel body, [[threadgroup(i)]]
parameters sized by threadgroup_memory=, a threadgroup pointer parameter without an index,
threadgroup_barrier with each mem_flags combination, simdgroup_barrier, the grid and
threadgroup builtins in 1-, 2- and 3-D, and partial last threadgroups."""

from __future__ import annotations

import numpy as np
import pytest

import metalcall as mc
from mcconf import KernelSet, assert_close, assert_equal

KS = KernelSet([
    # array in the kernel body: reverse each group's block
    """
kernel void tg_reverse(const device float* in [[buffer(0)]], device float* out [[buffer(1)]],
                       uint gid [[thread_position_in_grid]], uint lid [[thread_position_in_threadgroup]],
                       uint tgsize [[threads_per_threadgroup]], uint group [[threadgroup_position_in_grid]]) {
    threadgroup float tile[256];
    tile[lid] = in[gid];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    out[gid] = tile[tgsize - 1 - lid];
}
""",
    # [[threadgroup(0)]] parameter sized by the host: rotate within the group
    """
kernel void tg_param(const device int* in [[buffer(0)]], device int* out [[buffer(1)]],
                     threadgroup int* scratch [[threadgroup(0)]],
                     uint gid [[thread_position_in_grid]], uint lid [[thread_index_in_threadgroup]],
                     uint n [[threads_per_threadgroup]]) {
    scratch[lid] = in[gid] * 2;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    out[gid] = scratch[(lid + 1) % n];
}
""",
    # two threadgroup parameters of different types
    """
kernel void tg_two_params(const device float* in [[buffer(0)]], device float* out [[buffer(1)]],
                          threadgroup float* a [[threadgroup(0)]], threadgroup uint* b [[threadgroup(1)]],
                          uint gid [[thread_position_in_grid]], uint lid [[thread_position_in_threadgroup]],
                          uint n [[threads_per_threadgroup]]) {
    a[lid] = in[gid];
    b[lid] = lid * lid;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    out[gid] = a[n - 1 - lid] + float(b[(lid + 3) % n]);
}
""",
    # a threadgroup pointer parameter without an index attribute (takes index 0)
    """
kernel void tg_no_index(const device float* in [[buffer(0)]], device float* out [[buffer(1)]],
                        threadgroup float* shared_data,
                        uint gid [[thread_position_in_grid]], uint lid [[thread_position_in_threadgroup]],
                        uint n [[threads_per_threadgroup]]) {
    shared_data[lid] = in[gid];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    float s = 0.0f;
    for (uint k = 0; k < n; ++k) s += shared_data[k];
    out[gid] = s;
}
""",
    # each mem_flags combination; the values flow through threadgroup and device memory
    """
kernel void tg_mem_flags(device uint* data [[buffer(0)]], device uint* out [[buffer(1)]],
                         uint gid [[thread_position_in_grid]], uint lid [[thread_position_in_threadgroup]],
                         uint n [[threads_per_threadgroup]], uint g [[threadgroup_position_in_grid]]) {
    threadgroup uint t[64];
    t[lid] = lid + 1;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    uint v = t[(lid + 1) % n];
    data[gid] = v;
    threadgroup_barrier(mem_flags::mem_device);
    uint w = data[g * n + (lid + 2) % n];
    threadgroup_barrier(mem_flags::mem_none);
    t[lid] = w * 10;
    threadgroup_barrier(mem_flags::mem_device | mem_flags::mem_threadgroup);
    uint x = t[(lid + 3) % n];
    threadgroup_barrier(mem_flags::mem_texture);
    t[lid] = x + 1;
    threadgroup_barrier(mem_flags::mem_threadgroup | mem_flags::mem_texture);
    uint y = t[n - 1 - lid];
    threadgroup_barrier(mem_flags::mem_device | mem_flags::mem_threadgroup | mem_flags::mem_texture);
    out[gid] = y;
    simdgroup_barrier(mem_flags::mem_threadgroup);
    simdgroup_barrier(mem_flags::mem_none);
}
""",
    # 2-D threadgroup tile with the 2-D builtins (uint2)
    """
kernel void tg_2d(const device float* in [[buffer(0)]], device float* out [[buffer(1)]],
                  constant uint& width [[buffer(2)]],
                  uint2 gid [[thread_position_in_grid]], uint2 lid [[thread_position_in_threadgroup]],
                  uint2 tsize [[threads_per_threadgroup]]) {
    threadgroup float tile[8][8];
    tile[lid.y][lid.x] = in[gid.y * width + gid.x];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    // sum of the row and column through this thread's element
    float s = 0.0f;
    for (uint k = 0; k < tsize.x; ++k) s += tile[lid.y][k];
    for (uint k = 0; k < tsize.y; ++k) s += tile[k][lid.x];
    out[gid.y * width + gid.x] = s;
}
""",
    # every grid builtin, 3-D
    """
kernel void tg_builtins3d(device uint* out [[buffer(0)]],
                          uint3 gid [[thread_position_in_grid]],
                          uint3 gsize [[threads_per_grid]],
                          uint3 lid [[thread_position_in_threadgroup]],
                          uint3 tsize [[threads_per_threadgroup]],
                          uint3 group [[threadgroup_position_in_grid]],
                          uint3 ngroups [[threadgroups_per_grid]],
                          uint lindex [[thread_index_in_threadgroup]],
                          uint3 dsize [[dispatch_threads_per_threadgroup]]) {
    uint flat = (gid.z * gsize.y + gid.y) * gsize.x + gid.x;
    device uint* o = out + 16 * flat;
    o[0] = gid.x; o[1] = gid.y; o[2] = gid.z;
    o[3] = lid.x; o[4] = lid.y; o[5] = lid.z;
    o[6] = group.x; o[7] = group.y; o[8] = group.z;
    o[9] = ngroups.x * 10000 + ngroups.y * 100 + ngroups.z;
    o[10] = tsize.x * 10000 + tsize.y * 100 + tsize.z;
    o[11] = gsize.x * 10000 + gsize.y * 100 + gsize.z;
    o[12] = lindex;
    o[13] = dsize.x * 10000 + dsize.y * 100 + dsize.z;
    o[14] = 0xabcd;
    o[15] = 0;
}
""",
    # partial last threadgroup with barriers: threads past the end must not deadlock
    """
kernel void tg_partial(const device float* in [[buffer(0)]], device float* out [[buffer(1)]],
                       constant uint& n [[buffer(2)]],
                       uint gid [[thread_position_in_grid]], uint lid [[thread_position_in_threadgroup]],
                       uint tsize [[threads_per_threadgroup]]) {
    threadgroup float buf[128];
    buf[lid] = in[gid];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    float left = lid > 0 ? buf[lid - 1] : 0.0f;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    buf[lid] = buf[lid] + left;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    out[gid] = buf[lid] + float(tsize);
}
""",
    # threadgroup arrays of structs and of vectors
    """
struct Cell { float2 pos; uint id; float w; };
kernel void tg_structs(const device float2* pos [[buffer(0)]], device float4* out [[buffer(1)]],
                       uint gid [[thread_position_in_grid]], uint lid [[thread_position_in_threadgroup]],
                       uint n [[threads_per_threadgroup]]) {
    threadgroup Cell cells[32];
    threadgroup float4 acc[32];
    cells[lid].pos = pos[gid];
    cells[lid].id = gid;
    cells[lid].w = 0.5f * float(lid);
    acc[lid] = float4(0.0f);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    Cell c = cells[n - 1 - lid];
    acc[lid] = float4(c.pos, float(c.id), c.w);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    out[gid] = acc[lid];
}
""",
    # a helper function that takes threadgroup memory and contains the barriers
    """
inline float block_sum(threadgroup float* s, uint lid, uint n) {
    for (uint stride = n / 2; stride > 0; stride >>= 1) {
        if (lid < stride) s[lid] += s[lid + stride];
        threadgroup_barrier(mem_flags::mem_threadgroup);
    }
    return s[0];
}
kernel void tg_helper_barrier(const device float* in [[buffer(0)]], device float* out [[buffer(1)]],
                              uint gid [[thread_position_in_grid]], uint lid [[thread_position_in_threadgroup]],
                              uint n [[threads_per_threadgroup]]) {
    threadgroup float s[128];
    s[lid] = in[gid];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    float total = block_sum(s, lid, n);
    out[gid] = in[gid] / total;
}
""",
    # threadgroup vectors with swizzle writes; ushort builtins
    """
kernel void tg_vectors_ushort(const device float4* in [[buffer(0)]], device float4* out [[buffer(1)]],
                              ushort lid [[thread_position_in_threadgroup]], ushort tgsize [[threads_per_threadgroup]],
                              uint gid [[thread_position_in_grid]]) {
    threadgroup float4 tile[64];
    tile[lid] = in[gid];
    tile[lid].xy = tile[lid].yx;
    tile[lid].w *= 2.0f;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    out[gid] = tile[ushort(tgsize - 1 - lid)];
}
""",
    # ushort2 2-D builtins and a 2-D threadgroup array of uchar
    """
kernel void tg_ushort2(device uint* out [[buffer(0)]], ushort2 lid [[thread_position_in_threadgroup]],
                       ushort2 group [[threadgroup_position_in_grid]], uint2 gid [[thread_position_in_grid]],
                       uint2 grid [[threads_per_grid]]) {
    threadgroup uchar mark[8][8];
    mark[lid.y][lid.x] = uchar(lid.x * 8 + lid.y);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    out[gid.y * grid.x + gid.x] = uint(mark[lid.x][lid.y]) + 1000u * uint(group.x) + 100000u * uint(group.y);
}
""",
    # a sizeable private (thread) array in a kernel with barriers: every thread of the
    # group keeps its own 16 KiB while the others run
    """
kernel void tg_big_private(const device float* in [[buffer(0)]], device float* out [[buffer(1)]],
                           uint gid [[thread_position_in_grid]], uint lid [[thread_position_in_threadgroup]],
                           uint n [[threads_per_threadgroup]]) {
    threadgroup float shared_vals[256];
    float scratch[4096];
    for (uint k = 0; k < 4096; ++k) scratch[k] = in[gid] * float(k % 7);
    shared_vals[lid] = scratch[4095];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    float acc = 0.0f;
    for (uint k = 0; k < 4096; k += 97) acc += scratch[k];
    out[gid] = acc + shared_vals[(lid + 1) % n];
}
""",
    # 3-D threadgroup with a barrier, indexed by thread_index_in_threadgroup
    """
kernel void tg_3d_barrier(device uint* out [[buffer(0)]], uint3 gid [[thread_position_in_grid]],
                          uint3 grid [[threads_per_grid]], uint idx [[thread_index_in_threadgroup]],
                          uint3 tsize [[threads_per_threadgroup]]) {
    threadgroup uint vals[256];
    vals[idx] = gid.x + 100 * gid.y + 10000 * gid.z;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    const uint total = tsize.x * tsize.y * tsize.z;
    out[(gid.z * grid.y + gid.y) * grid.x + gid.x] = vals[total - 1 - idx];
}
""",
    # an in-body threadgroup array next to a [[threadgroup(0)]] parameter: no aliasing
    """
kernel void tg_mixed(const device int* in [[buffer(0)]], device int* out [[buffer(1)]],
                     threadgroup int* param_mem [[threadgroup(0)]],
                     uint gid [[thread_position_in_grid]], uint lid [[thread_position_in_threadgroup]],
                     uint n [[threads_per_threadgroup]]) {
    threadgroup int body_mem[64];
    param_mem[lid] = in[gid];
    body_mem[lid] = -in[gid] * 2;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    out[gid] = param_mem[(lid + 1) % n] * 1000 + body_mem[(lid + 2) % n];
}
"""
])

N = 1024


def test_array_in_body(device, rng):
    x = rng.standard_normal(N).astype(np.float32)
    out = np.zeros(N, np.float32)
    KS.get(device, "tg_reverse")(N, x, out, threadgroup=256)
    assert_equal(out, x.reshape(-1, 256)[:, ::-1].ravel())


def test_threadgroup_param(device, rng):
    x = rng.integers(-1000, 1000, N).astype(np.int32)
    out = np.zeros(N, np.int32)
    tg = 128
    KS.get(device, "tg_param")(N, x, out, threadgroup=tg, threadgroup_memory=[tg * 4])
    assert_equal(out, np.roll((x * 2).reshape(-1, tg), -1, axis=1).ravel())


def test_two_threadgroup_params(device, rng):
    x = rng.standard_normal(N).astype(np.float32)
    out = np.zeros(N, np.float32)
    tg = 64
    KS.get(device, "tg_two_params")(N, x, out, threadgroup=tg, threadgroup_memory=[tg * 4, tg * 4])
    lid = np.arange(tg)
    exp = x.reshape(-1, tg)[:, ::-1] + (((lid + 3) % tg) ** 2).astype(np.float32)
    assert_equal(out, exp.ravel())


def test_threadgroup_pointer_without_index(device, rng):
    x = rng.standard_normal(N).astype(np.float32)
    out = np.zeros(N, np.float32)
    tg = 32
    KS.get(device, "tg_no_index")(N, x, out, threadgroup=tg, threadgroup_memory=[tg * 4])
    exp = np.repeat(x.reshape(-1, tg).astype(np.float64).sum(1), tg)
    assert_close(out, exp, rtol=1e-5, atol=1e-5)


def test_mem_flags(device):
    tg, n = 64, 512
    data = np.zeros(n, np.uint32)
    out = np.zeros(n, np.uint32)
    KS.get(device, "tg_mem_flags")(n, data, out, threadgroup=tg)
    lid = np.arange(tg)
    v = (lid + 1) % tg + 1          # t[(lid+1)%n] after t[lid] = lid + 1
    w = v[(lid + 2) % tg]           # data of the same group, shifted by 2
    x = (w * 10)[(lid + 3) % tg]
    y = (x + 1)[tg - 1 - lid]
    assert_equal(data, np.tile(v, n // tg).astype(np.uint32))
    assert_equal(out, np.tile(y, n // tg).astype(np.uint32))


def test_2d_tile(device, rng):
    W, H = 64, 32
    x = rng.standard_normal((H, W)).astype(np.float32)
    out = np.zeros((H, W), np.float32)
    KS.get(device, "tg_2d")((W, H), x, out, W, threadgroup=(8, 8))
    t = x.reshape(H // 8, 8, W // 8, 8).astype(np.float64)  # (by, ly, bx, lx)
    rows = t.sum(3, keepdims=True)
    cols = t.sum(1, keepdims=True)
    exp = (rows + cols).reshape(H, W)
    assert_close(out, exp, rtol=1e-5, atol=1e-5)


def test_builtins_3d(device):
    grid = (10, 6, 3)  # partial groups in x and y
    tg = (4, 4, 2)
    n = grid[0] * grid[1] * grid[2]
    out = np.zeros((n, 16), np.uint32)
    KS.get(device, "tg_builtins3d")(grid, out, threadgroup=tg)
    z, y, x = np.meshgrid(np.arange(grid[2]), np.arange(grid[1]), np.arange(grid[0]), indexing="ij")
    x, y, z = x.ravel(), y.ravel(), z.ravel()
    ng = [-(-g // t) for g, t in zip(grid, tg)]
    lx, ly, lz = x % tg[0], y % tg[1], z % tg[2]
    # threads_per_threadgroup: the size of this thread's own (possibly partial, at the grid's
    # edge) group; dispatch_threads_per_threadgroup: the size the dispatch asked for.
    ax = np.minimum(tg[0], grid[0] - (x // tg[0]) * tg[0])
    ay = np.minimum(tg[1], grid[1] - (y // tg[1]) * tg[1])
    az = np.minimum(tg[2], grid[2] - (z // tg[2]) * tg[2])
    enc = lambda a, b, c: a * 10000 + b * 100 + c  # noqa: E731
    exp = np.stack([x, y, z, lx, ly, lz, x // tg[0], y // tg[1], z // tg[2],
                    np.full(n, enc(*ng)), enc(ax, ay, az), np.full(n, enc(*grid)),
                    (lz * ay + ly) * ax + lx, np.full(n, enc(*tg)), np.full(n, 0xABCD), np.zeros(n)], 1)
    assert_equal(out, exp.astype(np.uint32))


def test_partial_threadgroup(device, rng):
    n, tg = 1000, 128  # last group has 104 threads
    x = rng.standard_normal(n).astype(np.float32)
    out = np.zeros(n, np.float32)
    KS.get(device, "tg_partial")(n, x, out, n, threadgroup=tg)
    exp = np.empty(n, np.float64)
    for g0 in range(0, n, tg):
        blk = x[g0:g0 + tg].astype(np.float64)
        left = np.concatenate([[0.0], blk[:-1]])
        exp[g0:g0 + tg] = blk + left + len(blk)  # threads_per_threadgroup: this group's own size
    assert_close(out, exp, rtol=1e-6, atol=1e-6)


def test_threadgroup_structs(device, rng):
    n, tg = 256, 32
    pos = rng.standard_normal((n, 2)).astype(np.float32)
    out = np.zeros((n, 4), np.float32)
    KS.get(device, "tg_structs")(n, pos, out, threadgroup=tg)
    g = np.arange(n)
    src = (g // tg) * tg + (tg - 1 - g % tg)
    exp = np.stack([pos[src, 0], pos[src, 1], src.astype(np.float32), 0.5 * (src % tg)], 1)
    assert_equal(out, exp.astype(np.float32))


def test_threadgroup_memory_over_the_limit_is_an_error(device):
    """threadgroup_memory over the device's limit is an ArgumentError, not a crash."""
    x = np.zeros(256, np.int32)
    out = np.zeros(256, np.int32)
    k = KS.get(device, "tg_param")
    with pytest.raises(mc.ArgumentError):
        k(256, x, out, threadgroup=128, threadgroup_memory=[1 << 30])  # over the device's limit


def test_barrier_in_helper_function(device, rng):
    n, tg = 1024, 128
    x = rng.uniform(0.5, 1.5, n).astype(np.float32)
    out = np.zeros(n, np.float32)
    KS.get(device, "tg_helper_barrier")(n, x, out, threadgroup=tg)
    sums = np.repeat(x.reshape(-1, tg).astype(np.float64).sum(1), tg)
    assert_close(out, x / sums, rtol=1e-5, atol=1e-7)


def test_threadgroup_vectors_ushort_builtins(device, rng):
    n, tg = 256, 64
    x = rng.standard_normal((n, 4)).astype(np.float32)
    out = np.zeros((n, 4), np.float32)
    KS.get(device, "tg_vectors_ushort")(n, x, out, threadgroup=tg)
    t = x.copy()
    t[:, [0, 1]] = x[:, [1, 0]]
    t[:, 3] *= 2
    exp = t.reshape(-1, tg, 4)[:, ::-1].reshape(-1, 4)
    assert_equal(out, exp)


def test_ushort2_builtins(device):
    W, H = 16, 24
    out = np.zeros((H, W), np.uint32)
    KS.get(device, "tg_ushort2")((W, H), out, threadgroup=(8, 8))
    y, x = np.mgrid[0:H, 0:W]
    lx, ly = x % 8, y % 8
    exp = ly * 8 + lx + 1000 * (x // 8) + 100000 * (y // 8)  # mark[lx][ly] = ly * 8 + lx
    assert_equal(out, exp.astype(np.uint32))


def test_big_private_array_with_barriers(device, rng):
    n, tg = 512, 256
    x = rng.standard_normal(n).astype(np.float32)
    out = np.zeros(n, np.float32)
    KS.get(device, "tg_big_private")(n, x, out, threadgroup=tg)
    ks = np.arange(0, 4096, 97)
    acc = (x[:, None].astype(np.float64) * (ks % 7)).sum(1)
    last = x * np.float32(4095 % 7)
    nxt = last.reshape(-1, tg)[:, (np.arange(tg) + 1) % tg].ravel()
    assert_close(out, acc + nxt, rtol=1e-5, atol=1e-4)


def test_3d_threadgroup_barrier(device):
    grid, tg = (8, 8, 8), (4, 4, 4)
    out = np.zeros(grid[::-1], np.uint32)
    KS.get(device, "tg_3d_barrier")(grid, out, threadgroup=tg)
    z, y, x = np.mgrid[0:8, 0:8, 0:8]
    # thread index idx = (lz*4 + ly)*4 + lx; it reads the value of index 63 - idx of its group,
    # i.e. local position (3 - lx, 3 - ly, 3 - lz)
    sx = (x // 4) * 4 + 3 - x % 4
    sy = (y // 4) * 4 + 3 - y % 4
    sz = (z // 4) * 4 + 3 - z % 4
    assert_equal(out, (sx + 100 * sy + 10000 * sz).astype(np.uint32))



def test_body_array_next_to_threadgroup_parameter(device, rng):
    n, tg = 256, 64
    x = rng.integers(-100, 100, n).astype(np.int32)
    out = np.zeros(n, np.int32)
    KS.get(device, "tg_mixed")(n, x, out, threadgroup=tg, threadgroup_memory=[tg * 4])
    b = x.reshape(-1, tg)
    exp = np.roll(b, -1, axis=1) * 1000 + np.roll(-2 * b, -2, axis=1)
    assert_equal(out, exp.ravel().astype(np.int32))
