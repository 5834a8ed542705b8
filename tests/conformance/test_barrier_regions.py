"""Barriers as work-item loops on the CPU backend (msl/passes/barrier_regions.hpp): a kernel
whose only synchronisation is `threadgroup_barrier` at its top level, or directly in loops whose
headers every thread of the group evaluates alike, runs its regions between barriers each as a
loop over the group's threads (`Kernel.thread_schedule == "regions"`); everything else keeps the
fibers. Each kernel gives NumPy's results on the CPU, checked CPU and the Metal simulator, in
the mode the rule gives it, and the same results as with the regions turned off
(METALCALL_BARRIER_REGIONS=0)."""

from __future__ import annotations

import numpy as np
import pytest

import metalcall as mc
from mcconf import assert_close, assert_equal, compile_once, register_source

SOURCE = register_source(r"""
#include <metal_stdlib>
using namespace metal;

// The classic tree reduction: a barrier per halving, in a loop over a uniform builtin.
kernel void rg_tree_sum(const device float* x [[buffer(0)]], device float* partial [[buffer(1)]],
                        uint tid [[thread_position_in_threadgroup]], uint gid [[thread_position_in_grid]],
                        uint group [[threadgroup_position_in_grid]], uint width [[threads_per_threadgroup]]) {
  threadgroup float shared[256];
  shared[tid] = x[gid];
  threadgroup_barrier(mem_flags::mem_threadgroup);
  for (uint s = width / 2; s > 0; s >>= 1) {
    if (tid < s) shared[tid] += shared[tid + s];
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
  if (tid == 0) partial[group] = shared[0];
}

// Any group size (not a power of two), a partial last group, a uniform local for the bound.
kernel void rg_pair_sum(const device float* x [[buffer(0)]], device float* partial [[buffer(1)]],
                        constant uint& n [[buffer(2)]],
                        uint tid [[thread_index_in_threadgroup]], uint gid [[thread_position_in_grid]],
                        uint group [[threadgroup_position_in_grid]], uint width [[threads_per_threadgroup]]) {
  threadgroup float shared[1024];
  const uint count = width;
  shared[tid] = gid < n ? x[gid] : 0.0f;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  for (uint s = 1; s < count; s *= 2) {
    if (tid % (2 * s) == 0 && tid + s < count) shared[tid] += shared[tid + s];
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
  if (tid == 0) partial[group] = shared[0];
}

// Inclusive scan (Hillis-Steele): a local read after the next barrier (kept per thread).
kernel void rg_scan(const device float* x [[buffer(0)]], device float* out [[buffer(1)]],
                    uint tid [[thread_position_in_threadgroup]], uint gid [[thread_position_in_grid]],
                    uint n [[threads_per_threadgroup]]) {
  threadgroup float buf[256];
  buf[tid] = x[gid];
  threadgroup_barrier(mem_flags::mem_threadgroup);
  for (uint off = 1; off < n; off <<= 1) {
    float v = tid >= off ? buf[tid - off] : 0.0f;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    buf[tid] += v;
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
  out[gid] = buf[tid];
}

// 16x16 tiles, two barriers a tile; the accumulator crosses every barrier; any n.
kernel void rg_matmul(const device float* A [[buffer(0)]], const device float* B [[buffer(1)]],
                      device float* C [[buffer(2)]], constant uint& n [[buffer(3)]],
                      uint2 g [[thread_position_in_grid]], uint2 t [[thread_position_in_threadgroup]]) {
  constexpr uint TILE = 16;
  threadgroup float As[TILE][TILE];
  threadgroup float Bs[TILE][TILE];
  float s = 0.0f;
  for (uint k0 = 0; k0 < n; k0 += TILE) {
    As[t.y][t.x] = g.y < n && k0 + t.x < n ? A[g.y * n + k0 + t.x] : 0.0f;
    Bs[t.y][t.x] = k0 + t.y < n && g.x < n ? B[(k0 + t.y) * n + g.x] : 0.0f;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    for (uint k = 0; k < TILE; ++k) s += As[t.y][k] * Bs[k][t.x];
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
  if (g.x < n && g.y < n) C[g.y * n + g.x] = s;
}

// A transpose through a padded tile; rows x cols not multiples of the group.
kernel void rg_transpose(const device float* in [[buffer(0)]], device float* out [[buffer(1)]],
                         constant uint2& shape [[buffer(2)]],
                         uint2 group [[threadgroup_position_in_grid]], uint2 t [[thread_position_in_threadgroup]],
                         uint2 size [[threads_per_threadgroup]]) {
  threadgroup float tile[16][17];
  const uint x = group.x * size.x + t.x, y = group.y * size.y + t.y;
  if (x < shape.x && y < shape.y) tile[t.y][t.x] = in[y * shape.x + x];
  threadgroup_barrier(mem_flags::mem_threadgroup);
  const uint ox = group.y * size.y + t.x, oy = group.x * size.x + t.y;
  if (ox < shape.y && oy < shape.x) out[oy * shape.y + ox] = tile[t.x][t.y];
}

// Scalars, vectors, arrays and a const crossing barriers.
kernel void rg_crossing(const device float4* x [[buffer(0)]], device float4* out [[buffer(1)]],
                        uint tid [[thread_index_in_threadgroup]], uint gid [[thread_position_in_grid]],
                        uint n [[threads_per_threadgroup]]) {
  threadgroup float4 tile[64];
  float4 v = x[gid];
  float a[3] = {v.x, v.y * 2.0f, v.z + 1.0f};
  uint2 idx = uint2(tid, n - 1 - tid);
  const float w = v.w;
  tile[tid] = v;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  float4 other = tile[idx.y];
  a[1] += other.x;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  out[gid] = float4(a[0], a[1], a[2], w) + other;
}

// Early return after the last barrier; 3-D groups.
kernel void rg_reverse_3d(const device uint* x [[buffer(0)]], device uint* out [[buffer(1)]],
                          uint3 t [[thread_position_in_threadgroup]], uint3 size [[threads_per_threadgroup]],
                          uint li [[thread_index_in_threadgroup]], uint3 group [[threadgroup_position_in_grid]],
                          uint3 groups [[threadgroups_per_grid]]) {
  threadgroup uint cells[512];
  const uint count = size.x * size.y * size.z;
  const uint base = ((group.z * groups.y + group.y) * groups.x + group.x) * count;
  cells[(t.z * size.y + t.y) * size.x + t.x] = x[base + li];
  threadgroup_barrier(mem_flags::mem_threadgroup);
  if (li % 2 == 1) return;
  out[base + li] = cells[count - 1 - li] * 10u + t.z;
}

// Several barriers per iteration of a uniform loop over a constant, and a template.
template <typename T>
kernel void rg_rounds(const device T* x [[buffer(0)]], device T* out [[buffer(1)]],
                      constant uint& rounds [[buffer(2)]],
                      uint tid [[thread_position_in_threadgroup]], uint gid [[thread_position_in_grid]],
                      uint n [[threads_per_threadgroup]]) {
  threadgroup T a[128];
  threadgroup T b[128];
  T mine = x[gid];
  for (uint r = 0; r < rounds; ++r) {
    a[tid] = mine;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    b[tid] = a[(tid + 1) % n] + a[(tid + n - 1) % n];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    mine = b[n - 1 - tid] - mine;
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
  out[gid] = mine;
}
template [[host_name("rg_rounds_int")]] kernel void rg_rounds<int>(const device int*, device int*, constant uint&,
                                                                  uint, uint, uint);

// Threadgroup atomics within a region (a histogram), then one thread per bin writes it out.
kernel void rg_histogram(const device uint* x [[buffer(0)]], device uint* out [[buffer(1)]],
                         uint tid [[thread_index_in_threadgroup]], uint gid [[thread_position_in_grid]],
                         uint group [[threadgroup_position_in_grid]]) {
  threadgroup atomic_uint bins[16];
  if (tid < 16) atomic_store_explicit(&bins[tid], 0u, memory_order_relaxed);
  threadgroup_barrier(mem_flags::mem_threadgroup);
  atomic_fetch_add_explicit(&bins[x[gid] % 16u], 1u, memory_order_relaxed);
  threadgroup_barrier(mem_flags::mem_threadgroup);
  if (tid < 16) out[group * 16 + tid] = atomic_load_explicit(&bins[tid], memory_order_relaxed);
}

// Bitonic sort: group loops nested in group loops, a local declared in the inner body.
kernel void rg_bitonic(device float* data [[buffer(0)]], uint gid [[thread_position_in_grid]],
                       uint lid [[thread_position_in_threadgroup]], uint size [[threads_per_threadgroup]]) {
  threadgroup float s[256];
  s[lid] = data[gid];
  threadgroup_barrier(mem_flags::mem_threadgroup);
  for (uint k = 2; k <= size; k <<= 1) {
    for (uint j = k >> 1; j > 0; j >>= 1) {
      const uint partner = lid ^ j;
      float mine = s[lid];
      threadgroup_barrier(mem_flags::mem_threadgroup);
      if (partner > lid) {
        const float other = s[partner];
        const bool ascending = (lid & k) == 0;
        if ((mine > other) == ascending) {
          s[lid] = other;
          s[partner] = mine;
        }
      }
      threadgroup_barrier(mem_flags::mem_threadgroup);
    }
  }
  data[gid] = s[lid];
}

// ---- outside the subset: fibers ----

// A barrier in a branch (uniform here, but the rule does not prove it).
kernel void rg_out_branch(const device float* x [[buffer(0)]], device float* out [[buffer(1)]],
                          constant uint& flag [[buffer(2)]],
                          uint tid [[thread_position_in_threadgroup]], uint gid [[thread_position_in_grid]],
                          uint n [[threads_per_threadgroup]]) {
  threadgroup float s[64];
  s[tid] = x[gid];
  if (flag != 0) {
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
  out[gid] = s[n - 1 - tid];
}

// A return before a barrier (never taken here).
kernel void rg_out_return(const device float* x [[buffer(0)]], device float* out [[buffer(1)]],
                          constant uint& count [[buffer(2)]],
                          uint tid [[thread_position_in_threadgroup]], uint gid [[thread_position_in_grid]],
                          uint n [[threads_per_threadgroup]]) {
  threadgroup float s[64];
  if (gid >= count) return;
  s[tid] = x[gid];
  threadgroup_barrier(mem_flags::mem_threadgroup);
  out[gid] = s[n - 1 - tid];
}

// A break out of the loop that holds the barrier.
kernel void rg_out_break(const device float* x [[buffer(0)]], device float* out [[buffer(1)]],
                         uint tid [[thread_position_in_threadgroup]], uint gid [[thread_position_in_grid]],
                         uint n [[threads_per_threadgroup]]) {
  threadgroup float s[64];
  s[tid] = x[gid];
  threadgroup_barrier(mem_flags::mem_threadgroup);
  for (uint k = 1; k < n; k *= 2) {
    const float v = s[(tid + k) % n];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    s[tid] += v;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (k >= 4) break;
  }
  out[gid] = s[tid];
}

// A SIMD-group function beside the barrier: since 2026-12-06 a region boundary too (simd_exchanges.hpp).
kernel void rg_out_simd(const device float* x [[buffer(0)]], device float* out [[buffer(1)]],
                        uint tid [[thread_position_in_threadgroup]], uint gid [[thread_position_in_grid]],
                        uint lane [[thread_index_in_simdgroup]], uint sg [[simdgroup_index_in_threadgroup]]) {
  threadgroup float sums[2];
  const float v = simd_sum(x[gid]);
  if (lane == 0) sums[sg] = v;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  out[gid] = sums[0] + sums[1];
}

// The barrier in a helper.
void rg_helper_sync(threadgroup float* s, uint tid, float v) {
  s[tid] = v;
  threadgroup_barrier(mem_flags::mem_threadgroup);
}
kernel void rg_out_helper(const device float* x [[buffer(0)]], device float* out [[buffer(1)]],
                          uint tid [[thread_position_in_threadgroup]], uint gid [[thread_position_in_grid]],
                          uint n [[threads_per_threadgroup]]) {
  threadgroup float s[64];
  rg_helper_sync(s, tid, x[gid]);
  threadgroup_barrier(mem_flags::mem_threadgroup);
  out[gid] = s[n - 1 - tid];
}

// The address of a local that crosses a barrier.
kernel void rg_out_address(const device float* x [[buffer(0)]], device float* out [[buffer(1)]],
                           uint tid [[thread_position_in_threadgroup]], uint gid [[thread_position_in_grid]],
                           uint n [[threads_per_threadgroup]]) {
  threadgroup float s[64];
  float acc = x[gid];
  thread float* p = &acc;
  s[tid] = acc;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  *p += s[n - 1 - tid];
  out[gid] = acc;
}

// A loop bound read from device memory (not provably uniform).
kernel void rg_out_device_bound(const device float* x [[buffer(0)]], device float* out [[buffer(1)]],
                                const device uint* rounds [[buffer(2)]],
                                uint tid [[thread_position_in_threadgroup]], uint gid [[thread_position_in_grid]],
                                uint n [[threads_per_threadgroup]]) {
  threadgroup float s[64];
  float v = x[gid];
  for (uint r = 0; r < rounds[0]; ++r) {
    s[tid] = v;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    v = s[n - 1 - tid] + 1.0f;
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
  out[gid] = v;
}

// A per-thread builtin changed through a reference before a barrier and read after it.
void rg_bump(thread uint& v) { v += 1u; }
kernel void rg_out_reference(const device float* x [[buffer(0)]], device float* out [[buffer(1)]],
                             uint tid [[thread_position_in_threadgroup]], uint gid [[thread_position_in_grid]],
                             uint n [[threads_per_threadgroup]]) {
  threadgroup float s[64];
  rg_bump(tid);
  s[tid - 1u] = x[gid];
  threadgroup_barrier(mem_flags::mem_threadgroup);
  out[gid] = s[n - tid];
}

// Locals with uniform initialisers that threads then change by a component, an element, a
// reference to a member or an array element: each thread's own (found by tools/msl_fuzz's region
// programs, seed 1 program 49: the group's one copy was changed by every thread).
void rg_add(thread float& a, float b) { a += b; }
kernel void rg_local_parts(const device float* x [[buffer(0)]], device float* out [[buffer(1)]],
                           uint lid [[thread_position_in_threadgroup]], uint gid [[thread_position_in_grid]],
                           uint tg [[threadgroup_position_in_grid]], uint n [[threads_per_threadgroup]]) {
  threadgroup float s[64];
  float2 v = float2(1.0f, float(tg));
  v.x += x[gid];
  v[1] -= 1.0f;
  float2 w = float2(2.0f);
  rg_add(w.y, x[gid]);
  float a[2] = {1.0f, 2.0f};
  a[lid % 2] += x[gid];
  s[lid] = v.x + 100.0f * (a[0] + a[1]);
  threadgroup_barrier(mem_flags::mem_threadgroup);
  out[gid] = s[n - 1 - lid] + 10.0f * v.x + v.y + 1000.0f * w.y;
}

// A local with a uniform initialiser named as a program-scope constant that its region read
// before it: the threads' (moved ahead of the region as the group's, it rebound that read).
constant uint RG_K = 7;
kernel void rg_shadowed_constant(device uint* out [[buffer(0)]], uint lid [[thread_position_in_threadgroup]],
                                 uint gid [[thread_position_in_grid]], uint tg [[threadgroup_position_in_grid]]) {
  threadgroup uint s[64];
  s[lid] = RG_K + lid;
  uint RG_K = tg + 1u;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  out[gid] = s[63 - lid] * 10u + RG_K;
}

// A region whose first statement declares a local array and reads no per-thread builtin: the
// region's opening macro and the declaration ran together, and checked mode took the macro
// for part of the array's type (fuzz seed 23, program 12: `a type specifier is required`).
kernel void rg_array_first(const device long* x [[buffer(0)]], device long* out [[buffer(1)]],
                           uint gid [[thread_position_in_grid]], uint tg [[threadgroup_position_in_grid]]) {
  long a[2] = {1l, -static_cast<long>(x[tg]) * 3};
  long s = a[1] - a[0];
  threadgroup_barrier(mem_flags::mem_threadgroup);
  out[gid] = s + long(gid);
}

// A group-uniform builtin parameter changed by a member: the threads' own (fibers).
kernel void rg_out_param_part(const device float* x [[buffer(0)]], device float* out [[buffer(1)]],
                              uint2 t [[thread_position_in_threadgroup]], uint2 g [[thread_position_in_grid]],
                              uint2 group [[threadgroup_position_in_grid]], uint2 size [[threads_per_threadgroup]]) {
  threadgroup float s[64];
  group.y += t.x;
  s[t.x] = x[g.x] + float(group.y);
  threadgroup_barrier(mem_flags::mem_threadgroup);
  out[g.x] = s[size.x - 1 - t.x];
}

// A lambda in the body.
kernel void rg_out_lambda(const device float* x [[buffer(0)]], device float* out [[buffer(1)]],
                          uint tid [[thread_position_in_threadgroup]], uint gid [[thread_position_in_grid]],
                          uint n [[threads_per_threadgroup]]) {
  threadgroup float s[64];
  auto twice = [](float v) { return 2.0f * v; };
  s[tid] = twice(x[gid]);
  threadgroup_barrier(mem_flags::mem_threadgroup);
  out[gid] = s[n - 1 - tid];
}
""")

REGIONS = {"rg_bitonic", "rg_histogram", "rg_tree_sum", "rg_pair_sum", "rg_scan", "rg_matmul", "rg_transpose", "rg_reverse_3d",
           "rg_rounds_int", "rg_local_parts", "rg_shadowed_constant", "rg_array_first", "rg_out_simd"}
FIBERS = {"rg_out_reference", "rg_out_branch", "rg_out_return", "rg_out_break", "rg_out_helper", "rg_out_address",
          "rg_out_device_bound", "rg_out_lambda", "rg_out_param_part",
          # an array crossing a barrier: its name decays to a pointer whose address space picks overloads
          "rg_crossing"}
# Checked mode's local arrays are classes: an array that crosses a barrier keeps the fibers there too.
CHECKED_FIBERS = {"rg_crossing"}
OFF = {"METALCALL_BARRIER_REGIONS": "0"}


def _devices():
    params = [pytest.param(("cpu", False), id="cpu"), pytest.param(("cpu", True), id="cpu-checked")]
    if "metal_sim" in mc.backends() or "metal-sim" in mc.backends():
        params.append(pytest.param(("metal-sim", False), id="metal-sim"))
    return params


@pytest.fixture(params=_devices())
def device(request):
    name, checked = request.param
    return mc.Device(name, checked=True) if checked else mc.Device(name)


def _is_checked(dev: mc.Device) -> bool:
    return bool(getattr(dev, "checked", False))


def kernel(dev: mc.Device, name: str, regions_off: bool = False) -> mc.Kernel:
    """The kernel, after asserting the mode the rule gives it on this device."""
    k = getattr(compile_once(dev, SOURCE, OFF if regions_off else None), name)
    if dev.backend != "cpu":
        assert k.thread_schedule is None
        return k
    if regions_off or name in FIBERS or (_is_checked(dev) and name in CHECKED_FIBERS):
        expected = "fibers"
    else:
        expected = "regions"
    assert k.thread_schedule == expected, name
    assert k.threads_synchronise is True
    return k


def _call(dev, name, grid, args, threadgroup, regions_off=False):
    kernel(dev, name, regions_off)(grid, *args, threadgroup=threadgroup).wait()


@pytest.mark.parametrize("regions_off", [False, True], ids=["rule", "off"])
def test_tree_sum(device, rng, regions_off):
    x = rng.random(4096, dtype=np.float32)
    partial = device.empty(16, np.float32)
    _call(device, "rg_tree_sum", 4096, (device.asarray(x), partial), 256, regions_off)
    assert_close(np.asarray(partial), x.reshape(16, 256).sum(axis=1, dtype=np.float64), rtol=1e-5)


@pytest.mark.parametrize("width", [1, 3, 100, 257, 700])
def test_pair_sum_any_group_size(device, rng, width):
    n = 2500
    x = rng.random(n, dtype=np.float32)
    groups = -(-n // width)
    partial = device.empty(groups, np.float32)
    _call(device, "rg_pair_sum", n, (device.asarray(x), partial, np.uint32(n)), width)
    padded = np.zeros(groups * width, np.float64)
    padded[:n] = x
    assert_close(np.asarray(partial), padded.reshape(groups, width).sum(axis=1), rtol=1e-5)


def test_scan(device, rng):
    x = rng.integers(0, 9, 1024).astype(np.float32)
    out = device.empty(1024, np.float32)
    _call(device, "rg_scan", 1024, (device.asarray(x), out), 256)
    assert_equal(np.asarray(out), np.cumsum(x.reshape(4, 256), axis=1).reshape(-1))


@pytest.mark.parametrize("n", [16, 48, 37])
def test_tiled_matmul(device, rng, n):
    a = rng.random((n, n), dtype=np.float32)
    b = rng.random((n, n), dtype=np.float32)
    c = device.empty((n, n), np.float32)
    whole = -(-n // 16) * 16  # whole groups: every tile is loaded by 16x16 threads
    _call(device, "rg_matmul", (whole, whole), (device.asarray(a), device.asarray(b), c, np.uint32(n)), (16, 16))
    assert_close(np.asarray(c), a.astype(np.float64) @ b.astype(np.float64), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("shape", [(16, 16), (35, 21), (7, 50)])
def test_transpose(device, rng, shape):
    cols, rows = shape
    m = rng.random((rows, cols), dtype=np.float32)
    out = device.empty((cols, rows), np.float32)
    grid = (-(-cols // 16) * 16, -(-rows // 16) * 16)
    _call(device, "rg_transpose", grid, (device.asarray(m), out, np.array([cols, rows], np.uint32)), (16, 16))
    assert_equal(np.asarray(out), m.T)


def test_locals_vectors_arrays_cross(device, rng):
    x = rng.random((128, 4), dtype=np.float32)
    out = device.empty((128, 4), np.float32)
    _call(device, "rg_crossing", 128, (device.asarray(x), out), 64)
    g = x.reshape(2, 64, 4)
    other = g[:, ::-1, :]
    a0, a1, a2 = g[..., 0], g[..., 1] * 2 + other[..., 0], g[..., 2] + 1
    want = np.stack([a0, a1, a2, g[..., 3]], axis=-1) + other
    assert_close(np.asarray(out), want.reshape(128, 4), rtol=1e-6)


@pytest.mark.parametrize("group", [(4, 2, 3), (8, 8, 8), (1, 5, 1)])
def test_early_return_3d(device, group):
    gx, gy, gz = group
    count = gx * gy * gz
    grid = (gx * 2, gy * 3, gz)
    total = count * 6
    x = np.arange(total, dtype=np.uint32)
    out = device.asarray(np.full(total, 7, np.uint32))
    _call(device, "rg_reverse_3d", grid, (device.asarray(x), out), group)
    want = np.full(total, 7, np.uint32)
    for g in range(6):
        base = g * count
        for li in range(0, count, 2):
            tz = li // (gx * gy)
            want[base + li] = x[base + count - 1 - li] * 10 + tz
    assert_equal(np.asarray(out), want)


@pytest.mark.parametrize("regions_off", [False, True], ids=["rule", "off"])
def test_several_barriers_per_iteration(device, rng, regions_off):
    n, rounds = 96, 5
    x = rng.integers(-50, 50, n * 2).astype(np.int32)
    out = device.empty(n * 2, np.int32)
    _call(device, "rg_rounds_int", n * 2, (device.asarray(x), out, np.uint32(rounds)), n, regions_off)
    want = x.reshape(2, n).astype(np.int64)
    for _ in range(rounds):
        b = np.roll(want, -1, axis=1) + np.roll(want, 1, axis=1)
        want = b[:, ::-1] - want
    assert_equal(np.asarray(out), want.reshape(-1).astype(np.int32))


@pytest.mark.parametrize("regions_off", [False, True], ids=["rule", "off"])
def test_nested_group_loops(device, rng, regions_off):
    x = rng.random(512, dtype=np.float32)
    data = device.asarray(x)
    _call(device, "rg_bitonic", 512, (data,), 256, regions_off)
    assert_equal(np.asarray(data), np.sort(x.reshape(2, 256), axis=1).reshape(-1))


def test_threadgroup_atomics_in_a_region(device, rng):
    x = rng.integers(0, 1000, 3 * 128).astype(np.uint32)
    out = device.empty(3 * 16, np.uint32)
    _call(device, "rg_histogram", 3 * 128, (device.asarray(x), out), 128)
    want = np.stack([np.bincount(g % 16, minlength=16) for g in x.reshape(3, 128)]).reshape(-1)
    assert_equal(np.asarray(out), want.astype(np.uint32))


def test_outside_the_subset_keep_fibers(device, rng):
    x = rng.random(128, dtype=np.float32)
    X = device.asarray(x)
    rev = x.reshape(2, 64)[:, ::-1].reshape(-1)
    for name, extra in (("rg_out_branch", (np.uint32(1),)), ("rg_out_return", (np.uint32(128),)),
                        ("rg_out_helper", ()), ("rg_out_lambda", ()), ("rg_out_reference", ())):
        out = device.empty(128, np.float32)
        args = (X, out) + extra
        _call(device, name, 128, args, 64)
        assert_close(np.asarray(out), rev * (2 if name == "rg_out_lambda" else 1), rtol=1e-6, err_msg=name)
    out = device.empty(128, np.float32)
    _call(device, "rg_out_address", 128, (X, out), 64)
    assert_close(np.asarray(out), x + rev, rtol=1e-6)
    out = device.empty(128, np.float32)
    _call(device, "rg_out_device_bound", 128, (X, out, device.asarray(np.array([3], np.uint32))), 64)
    want = x.reshape(2, 64)
    for _ in range(3):
        want = want[:, ::-1] + 1
    assert_close(np.asarray(out), want.reshape(-1), rtol=1e-6)
    out = device.empty(128, np.float32)
    _call(device, "rg_out_break", 128, (X, out), 64)
    s = x.reshape(2, 64).astype(np.float64)
    for k in (1, 2, 4):
        s = s + np.roll(s, -k, axis=1)
    assert_close(np.asarray(out), s.reshape(-1), rtol=1e-5)


@pytest.mark.parametrize("regions_off", [False, True], ids=["rule", "off"])
def test_simd_kernel(device, rng, regions_off):
    x = rng.random(64, dtype=np.float32)
    out = device.empty(64, np.float32)
    k = kernel(device, "rg_out_simd", regions_off)
    if k.thread_execution_width not in (0, 32) and device.backend != "cpu":
        pytest.skip("written for 32-lane SIMD-groups")
    k(64, device.asarray(x), out, threadgroup=64).wait()
    assert_close(np.asarray(out), np.full(64, x.sum(dtype=np.float64)), rtol=1e-5)


@pytest.mark.parametrize("regions_off", [False, True], ids=["rule", "off"])
def test_locals_changed_by_a_part_are_the_threads(device, rng, regions_off):
    x = rng.integers(0, 50, 128).astype(np.float32)
    out = device.empty(128, np.float32)
    _call(device, "rg_local_parts", 128, (device.asarray(x), out), 64, regions_off)
    g = x.reshape(2, 64)
    vx = 1 + g
    vy = np.array([[0.0], [1.0]]) - 1  # float(tg) - 1
    s = vx + 100 * (3 + g)
    want = s[:, ::-1] + 10 * vx + vy + 1000 * (2 + g)
    assert_equal(np.asarray(out), want.reshape(-1).astype(np.float32))


def test_parameter_changed_by_a_member_keeps_fibers(device, rng):
    x = rng.integers(0, 50, 128).astype(np.float32)
    out = device.empty(128, np.float32)
    _call(device, "rg_out_param_part", (128, 1), (device.asarray(x), out), (64, 1))
    t = np.arange(64, dtype=np.float32)
    want = (x.reshape(2, 64) + t)[:, ::-1]
    assert_equal(np.asarray(out), want.reshape(-1))


@pytest.mark.parametrize("regions_off", [False, True], ids=["rule", "off"])
def test_local_named_as_a_constant_read_before_it(device, regions_off):
    out = device.empty(128, np.uint32)
    _call(device, "rg_shadowed_constant", 128, (out,), 64, regions_off)
    lid = np.arange(64)
    want = (7 + lid[::-1]) * 10 + np.array([[1], [2]])
    assert_equal(np.asarray(out), want.reshape(-1).astype(np.uint32))


def test_local_array_declared_first_in_a_region(device):
    x = np.array([5, -7], np.int64)
    out = device.empty(128, np.int64)
    _call(device, "rg_array_first", 128, (device.asarray(x), out), 64)
    want = np.repeat(-3 * x - 1, 64) + np.arange(128)
    assert_equal(np.asarray(out), want)
