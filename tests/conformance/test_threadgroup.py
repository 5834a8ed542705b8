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


def test_threadgroup_memory_too_small_is_an_error(device):
    """threadgroup_memory over the device's limit is an ArgumentError, not a crash."""
    x = np.zeros(256, np.int32)
    out = np.zeros(256, np.int32)
    k = KS.get(device, "tg_param")
    with pytest.raises(mc.ArgumentError):
        k(256, x, out, threadgroup=128, threadgroup_memory=[1 << 30])  # over the device's limit
