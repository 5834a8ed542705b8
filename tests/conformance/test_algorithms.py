"""Whole algorithms as users write them: tree and SIMD reductions, Hillis-Steele and
Blelloch scans, a 3-pass SIMD scan, histograms with device and threadgroup atomics,
bitonic sort, softmax, GEMV, naive and tiled matrix multiply, naive and tiled
transposes, a Jacobi stencil, a tiled Gaussian blur, a 1-D convolution, uchar4 image
kernels, a float3 sphere-tracing raymarcher, Mandelbrot and half-precision kernels."""

from __future__ import annotations

import numpy as np
import pytest

from mcconf import KernelSet, assert_close, assert_equal, written_for_32_lanes

# ---------------------------------------------------------------------------
# Reductions, scans, histograms, sorting
# ---------------------------------------------------------------------------
RED = KernelSet([
    """
kernel void alg_reduce_tree(const device float* in [[buffer(0)]], device float* partial [[buffer(1)]],
                            constant uint& n [[buffer(2)]], threadgroup float* shared [[threadgroup(0)]],
                            uint gid [[thread_position_in_grid]], uint lid [[thread_position_in_threadgroup]],
                            uint tgsize [[threads_per_threadgroup]], uint group [[threadgroup_position_in_grid]]) {
    shared[lid] = gid < n ? in[gid] : 0.0f;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    for (uint s = tgsize / 2; s > 0; s >>= 1) {
        if (lid < s) shared[lid] += shared[lid + s];
        threadgroup_barrier(mem_flags::mem_threadgroup);
    }
    if (lid == 0) partial[group] = shared[0];
}
""",
    """
kernel void alg_reduce_simd(const device float* in [[buffer(0)]], device atomic_float* total [[buffer(1)]],
                            device float* partial [[buffer(2)]], constant uint& n [[buffer(3)]],
                            uint gid [[thread_position_in_grid]], uint lane [[thread_index_in_simdgroup]],
                            uint sg [[simdgroup_index_in_threadgroup]], uint nsg [[simdgroups_per_threadgroup]],
                            uint group [[threadgroup_position_in_grid]]) {
    threadgroup float sums[32];
    float x = gid < n ? in[gid] : 0.0f;
    float s = simd_sum(x);
    if (lane == 0) sums[sg] = s;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (sg == 0) {
        float t = lane < nsg ? sums[lane] : 0.0f;
        t = simd_sum(t);
        if (lane == 0) {
            partial[group] = t;
            atomic_fetch_add_explicit(total, t, memory_order_relaxed);
        }
    }
}
""",
    # grid-stride loop, then SIMD reduction and one atomic per SIMD-group
    """
kernel void alg_reduce_gridstride(const device float* in [[buffer(0)]], device atomic_uint* max_bits [[buffer(1)]],
                                  device atomic_float* total [[buffer(2)]], constant uint& n [[buffer(3)]],
                                  uint gid [[thread_position_in_grid]], uint stride [[threads_per_grid]]) {
    float m = 0.0f;
    float s = 0.0f;
    for (uint i = gid; i < n; i += stride) {
        m = max(m, in[i]);
        s += in[i];
    }
    m = simd_max(m);
    s = simd_sum(s);
    if (simd_is_first()) {
        atomic_fetch_max_explicit(max_bits, as_type<uint>(m), memory_order_relaxed);  // m >= 0
        atomic_fetch_add_explicit(total, s, memory_order_relaxed);
    }
}
""",
    # Hillis-Steele inclusive scan with double buffering
    """
kernel void alg_scan_hillis(const device int* in [[buffer(0)]], device int* out [[buffer(1)]],
                            uint gid [[thread_position_in_grid]], uint lid [[thread_position_in_threadgroup]],
                            uint tgsize [[threads_per_threadgroup]]) {
    threadgroup int buf[2][256];
    uint pout = 0, pin = 1;
    buf[pout][lid] = in[gid];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    for (uint offset = 1; offset < tgsize; offset *= 2) {
        pout = 1 - pout;
        pin = 1 - pout;
        if (lid >= offset)
            buf[pout][lid] = buf[pin][lid] + buf[pin][lid - offset];
        else
            buf[pout][lid] = buf[pin][lid];
        threadgroup_barrier(mem_flags::mem_threadgroup);
    }
    out[gid] = buf[pout][lid];
}
""",
    # Blelloch work-efficient exclusive scan (GPU Gems 3, ch. 39): 2 elements per thread
    """
kernel void alg_scan_blelloch(const device int* in [[buffer(0)]], device int* out [[buffer(1)]],
                              threadgroup int* temp [[threadgroup(0)]],
                              uint lid [[thread_position_in_threadgroup]], uint tgsize [[threads_per_threadgroup]],
                              uint group [[threadgroup_position_in_grid]]) {
    const uint n = 2 * tgsize;
    const uint base = group * n;
    temp[2 * lid] = in[base + 2 * lid];
    temp[2 * lid + 1] = in[base + 2 * lid + 1];
    uint offset = 1;
    for (uint d = n >> 1; d > 0; d >>= 1) {   // up-sweep
        threadgroup_barrier(mem_flags::mem_threadgroup);
        if (lid < d) {
            uint ai = offset * (2 * lid + 1) - 1;
            uint bi = offset * (2 * lid + 2) - 1;
            temp[bi] += temp[ai];
        }
        offset *= 2;
    }
    if (lid == 0) temp[n - 1] = 0;
    for (uint d = 1; d < n; d *= 2) {         // down-sweep
        offset >>= 1;
        threadgroup_barrier(mem_flags::mem_threadgroup);
        if (lid < d) {
            uint ai = offset * (2 * lid + 1) - 1;
            uint bi = offset * (2 * lid + 2) - 1;
            int t = temp[ai];
            temp[ai] = temp[bi];
            temp[bi] += t;
        }
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    out[base + 2 * lid] = temp[2 * lid];
    out[base + 2 * lid + 1] = temp[2 * lid + 1];
}
""",
    # a large exclusive scan in 3 passes: block scan (SIMD prefix sums) -> scan of the
    # block sums -> add the offsets
    """
kernel void alg_scan_block(const device int* in [[buffer(0)]], device int* out [[buffer(1)]],
                           device int* block_sums [[buffer(2)]], constant uint& n [[buffer(3)]],
                           uint gid [[thread_position_in_grid]], uint lid [[thread_position_in_threadgroup]],
                           uint tgsize [[threads_per_threadgroup]], uint lane [[thread_index_in_simdgroup]],
                           uint sg [[simdgroup_index_in_threadgroup]], uint nsg [[simdgroups_per_threadgroup]],
                           uint group [[threadgroup_position_in_grid]]) {
    threadgroup int sg_totals[32];
    int x = gid < n ? in[gid] : 0;
    int incl = simd_prefix_inclusive_sum(x);
    if (lane == 31) sg_totals[sg] = incl;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (sg == 0) {
        int t = lane < nsg ? sg_totals[lane] : 0;
        sg_totals[lane] = simd_prefix_exclusive_sum(t);
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    int excl = incl - x + sg_totals[sg];
    if (gid < n) out[gid] = excl;
    if (lid == tgsize - 1) block_sums[group] = excl + x;
}
""",
    """
kernel void alg_scan_add(device int* out [[buffer(0)]], const device int* offsets [[buffer(1)]],
                         constant uint& n [[buffer(2)]], uint gid [[thread_position_in_grid]],
                         uint group [[threadgroup_position_in_grid]]) {
    if (gid < n) out[gid] += offsets[group];
}
""",
    """
kernel void alg_hist_device(const device uchar* data [[buffer(0)]], device atomic_uint* hist [[buffer(1)]],
                            uint gid [[thread_position_in_grid]]) {
    atomic_fetch_add_explicit(&hist[data[gid]], 1u, memory_order_relaxed);
}
""",
    """
kernel void alg_hist_threadgroup(const device uchar4* data [[buffer(0)]], device atomic_uint* hist [[buffer(1)]],
                                 constant uint& n4 [[buffer(2)]],
                                 uint gid [[thread_position_in_grid]], uint lid [[thread_position_in_threadgroup]],
                                 uint tgsize [[threads_per_threadgroup]], uint stride [[threads_per_grid]]) {
    threadgroup atomic_uint local[256];
    for (uint b = lid; b < 256; b += tgsize) atomic_store_explicit(&local[b], 0u, memory_order_relaxed);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    for (uint i = gid; i < n4; i += stride) {
        uchar4 v = data[i];
        atomic_fetch_add_explicit(&local[v.x], 1u, memory_order_relaxed);
        atomic_fetch_add_explicit(&local[v.y], 1u, memory_order_relaxed);
        atomic_fetch_add_explicit(&local[v.z], 1u, memory_order_relaxed);
        atomic_fetch_add_explicit(&local[v.w], 1u, memory_order_relaxed);
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    for (uint b = lid; b < 256; b += tgsize) {
        uint c = atomic_load_explicit(&local[b], memory_order_relaxed);
        if (c != 0) atomic_fetch_add_explicit(&hist[b], c, memory_order_relaxed);
    }
}
""",
    """
kernel void alg_bitonic_sort(device float* data [[buffer(0)]], uint gid [[thread_position_in_grid]],
                             uint lid [[thread_position_in_threadgroup]], uint tgsize [[threads_per_threadgroup]]) {
    threadgroup float s[256];
    s[lid] = data[gid];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    for (uint k = 2; k <= tgsize; k <<= 1) {
        for (uint j = k >> 1; j > 0; j >>= 1) {
            uint ixj = lid ^ j;
            if (ixj > lid) {
                bool ascending = (lid & k) == 0;
                float a = s[lid];
                float b = s[ixj];
                if ((a > b) == ascending) {
                    s[lid] = b;
                    s[ixj] = a;
                }
            }
            threadgroup_barrier(mem_flags::mem_threadgroup);
        }
    }
    data[gid] = s[lid];
}
""",
    # row softmax: one threadgroup per row, SIMD + threadgroup reductions
    """
kernel void alg_softmax(const device float* x [[buffer(0)]], device float* y [[buffer(1)]],
                        constant uint& D [[buffer(2)]],
                        uint row [[threadgroup_position_in_grid]], uint lid [[thread_position_in_threadgroup]],
                        uint tgsize [[threads_per_threadgroup]], uint lane [[thread_index_in_simdgroup]],
                        uint sg [[simdgroup_index_in_threadgroup]], uint nsg [[simdgroups_per_threadgroup]]) {
    threadgroup float scratch[32];
    const device float* xr = x + row * D;
    float m = -INFINITY;
    for (uint k = lid; k < D; k += tgsize) m = max(m, xr[k]);
    m = simd_max(m);
    if (lane == 0) scratch[sg] = m;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    m = scratch[0];
    for (uint s = 1; s < nsg; ++s) m = max(m, scratch[s]);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    float sum = 0.0f;
    for (uint k = lid; k < D; k += tgsize) sum += exp(xr[k] - m);
    sum = simd_sum(sum);
    if (lane == 0) scratch[sg] = sum;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    sum = 0.0f;
    for (uint s = 0; s < nsg; ++s) sum += scratch[s];
    const float inv = 1.0f / sum;
    for (uint k = lid; k < D; k += tgsize) y[row * D + k] = exp(xr[k] - m) * inv;
}
""",
    # GEMV: one SIMD-group per row
    """
kernel void alg_gemv(const device float* A [[buffer(0)]], const device float* x [[buffer(1)]],
                     device float* y [[buffer(2)]], constant uint& rows [[buffer(3)]], constant uint& cols [[buffer(4)]],
                     uint group [[threadgroup_position_in_grid]], uint sg [[simdgroup_index_in_threadgroup]],
                     uint nsg [[simdgroups_per_threadgroup]], uint lane [[thread_index_in_simdgroup]]) {
    uint row = group * nsg + sg;
    if (row >= rows) return;
    float acc = 0.0f;
    for (uint c = lane; c < cols; c += 32) acc = fma(A[row * cols + c], x[c], acc);
    acc = simd_sum(acc);
    if (lane == 0) y[row] = acc;
}
""",
    # "last block" reduction: every group writes its partial sum, takes a ticket, and
    # the group that finishes last adds the partial sums up
    """
kernel void alg_reduce_last_block(const device float* in [[buffer(0)]], device float* partial [[buffer(1)]],
                                  device atomic_uint* ticket [[buffer(2)]], device float* result [[buffer(3)]],
                                  uint gid [[thread_position_in_grid]], uint lid [[thread_position_in_threadgroup]],
                                  uint group [[threadgroup_position_in_grid]], uint ngroups [[threadgroups_per_grid]],
                                  uint tgsize [[threads_per_threadgroup]]) {
    threadgroup float s[256];
    threadgroup bool is_last;
    s[lid] = in[gid];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    for (uint k = tgsize / 2; k > 0; k >>= 1) {
        if (lid < k) s[lid] += s[lid + k];
        threadgroup_barrier(mem_flags::mem_threadgroup);
    }
    if (lid == 0) partial[group] = s[0];
    threadgroup_barrier(mem_flags::mem_device);   // make the partial sum visible first
    if (lid == 0) {
        uint t = atomic_fetch_add_explicit(ticket, 1u, memory_order_relaxed);
        is_last = (t == ngroups - 1);
    }
    threadgroup_barrier(mem_flags::mem_threadgroup | mem_flags::mem_device);
    if (is_last && lid == 0) {
        float total = 0.0f;
        for (uint g = 0; g < ngroups; ++g) total += partial[g];
        result[0] = total;
    }
}
"""
])

# ---------------------------------------------------------------------------
# Dense linear algebra, stencils, raymarcher, Mandelbrot, half
# ---------------------------------------------------------------------------
DENSE = KernelSet([
    """
kernel void alg_matmul_naive(const device float* A [[buffer(0)]], const device float* B [[buffer(1)]],
                             device float* C [[buffer(2)]], constant uint& M [[buffer(3)]],
                             constant uint& N [[buffer(4)]], constant uint& K [[buffer(5)]],
                             uint2 gid [[thread_position_in_grid]]) {
    uint row = gid.y, col = gid.x;
    if (row >= M || col >= N) return;
    float acc = 0.0f;
    for (uint k = 0; k < K; ++k) acc += A[row * K + k] * B[k * N + col];
    C[row * N + col] = acc;
}
""",
    """
struct MatDims { uint M; uint N; uint K; };
kernel void alg_matmul_tiled(const device float* A [[buffer(0)]], const device float* B [[buffer(1)]],
                             device float* C [[buffer(2)]], constant MatDims& d [[buffer(3)]],
                             uint2 gid [[thread_position_in_grid]], uint2 lid [[thread_position_in_threadgroup]]) {
    threadgroup float As[TILE][TILE];
    threadgroup float Bs[TILE][TILE];
    const uint row = gid.y, col = gid.x;
    float acc = 0.0f;
    for (uint t = 0; t < (d.K + TILE - 1) / TILE; ++t) {
        const uint ak = t * TILE + lid.x;
        const uint bk = t * TILE + lid.y;
        As[lid.y][lid.x] = (row < d.M && ak < d.K) ? A[row * d.K + ak] : 0.0f;
        Bs[lid.y][lid.x] = (bk < d.K && col < d.N) ? B[bk * d.N + col] : 0.0f;
        threadgroup_barrier(mem_flags::mem_threadgroup);
        for (uint k = 0; k < TILE; ++k) acc += As[lid.y][k] * Bs[k][lid.x];
        threadgroup_barrier(mem_flags::mem_threadgroup);
    }
    if (row < d.M && col < d.N) C[row * d.N + col] = acc;
}
""",
    """
kernel void alg_transpose_naive(const device float* in [[buffer(0)]], device float* out [[buffer(1)]],
                                constant uint& width [[buffer(2)]], constant uint& height [[buffer(3)]],
                                uint2 gid [[thread_position_in_grid]]) {
    if (gid.x < width && gid.y < height) out[gid.x * height + gid.y] = in[gid.y * width + gid.x];
}
""",
    """
kernel void alg_transpose_tiled(const device float* in [[buffer(0)]], device float* out [[buffer(1)]],
                                constant uint& width [[buffer(2)]], constant uint& height [[buffer(3)]],
                                uint2 gid [[thread_position_in_grid]], uint2 lid [[thread_position_in_threadgroup]],
                                uint2 group [[threadgroup_position_in_grid]]) {
    threadgroup float tile[TILE][TILE + 1];   // +1 avoids bank conflicts
    if (gid.x < width && gid.y < height) tile[lid.y][lid.x] = in[gid.y * width + gid.x];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    const uint ox = group.y * TILE + lid.x;
    const uint oy = group.x * TILE + lid.y;
    if (ox < height && oy < width) out[oy * height + ox] = tile[lid.x][lid.y];
}
""",
    """
kernel void alg_jacobi(const device float* u [[buffer(0)]], device float* v [[buffer(1)]],
                       constant uint2& size [[buffer(2)]], uint2 gid [[thread_position_in_grid]]) {
    if (gid.x >= size.x || gid.y >= size.y) return;
    const uint w = size.x;
    const uint i = gid.y * w + gid.x;
    if (gid.x == 0 || gid.y == 0 || gid.x == size.x - 1 || gid.y == size.y - 1) {
        v[i] = u[i];
        return;
    }
    v[i] = 0.25f * (u[i - 1] + u[i + 1] + u[i - w] + u[i + w]);
}
""",
    """
constant float kGauss[3][3] = {{1.0f, 2.0f, 1.0f}, {2.0f, 4.0f, 2.0f}, {1.0f, 2.0f, 1.0f}};
kernel void alg_blur_tiled(const device float* in [[buffer(0)]], device float* out [[buffer(1)]],
                           constant uint& W [[buffer(2)]], constant uint& H [[buffer(3)]],
                           uint2 gid [[thread_position_in_grid]], uint2 lid [[thread_position_in_threadgroup]],
                           uint2 group [[threadgroup_position_in_grid]]) {
    threadgroup float tile[TILE + 2][TILE + 2];
    const int2 origin = int2(group * TILE) - 1;
    for (uint idx = lid.y * TILE + lid.x; idx < (TILE + 2) * (TILE + 2); idx += TILE * TILE) {
        const int ty = int(idx / (TILE + 2));
        const int tx = int(idx % (TILE + 2));
        const int sx = clamp(origin.x + tx, 0, int(W) - 1);
        const int sy = clamp(origin.y + ty, 0, int(H) - 1);
        tile[ty][tx] = in[sy * int(W) + sx];
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (gid.x >= W || gid.y >= H) return;
    float s = 0.0f;
    for (int dy = 0; dy < 3; ++dy)
        for (int dx = 0; dx < 3; ++dx) s += kGauss[dy][dx] * tile[lid.y + dy][lid.x + dx];
    out[gid.y * W + gid.x] = s / 16.0f;
}
""",
    """
kernel void alg_conv1d(const device float* in [[buffer(0)]], constant float* weights [[buffer(1)]],
                       device float* out [[buffer(2)]], constant uint& n [[buffer(3)]],
                       constant uint& radius [[buffer(4)]], uint gid [[thread_position_in_grid]]) {
    if (gid >= n) return;
    float s = 0.0f;
    for (int k = -int(radius); k <= int(radius); ++k) {
        int j = int(gid) + k;
        if (j >= 0 && j < int(n)) s += weights[k + int(radius)] * in[j];
    }
    out[gid] = s;
}
""",
    """
kernel void alg_mandelbrot(device uint* iters [[buffer(0)]], constant uint2& size [[buffer(1)]],
                           constant uint& max_iter [[buffer(2)]], uint2 gid [[thread_position_in_grid]]) {
    if (any(gid >= size)) return;
    const float2 c = float2(-2.0f, -1.25f) + float2(gid) * float2(3.0f / float(size.x), 2.5f / float(size.y));
    float2 z = 0.0f;
    uint i = 0;
    while (i < max_iter && dot(z, z) <= 4.0f) {
        z = float2(z.x * z.x - z.y * z.y, 2.0f * z.x * z.y) + c;
        ++i;
    }
    iters[gid.y * size.x + gid.x] = i;
}
""",
    # sphere tracing of a sphere on a plane; float3 throughout
    """
struct Hit { float t; float shade; float hit; float steps; };
inline float scene_sdf(float3 p) {
    const float sphere = length(p - float3(0.0f, 0.0f, 3.0f)) - 1.0f;
    const float plane = p.y + 1.0f;
    return min(sphere, plane);
}
inline float3 scene_normal(float3 p) {
    const float e = 1e-3f;
    return normalize(float3(scene_sdf(p + float3(e, 0, 0)) - scene_sdf(p - float3(e, 0, 0)),
                            scene_sdf(p + float3(0, e, 0)) - scene_sdf(p - float3(0, e, 0)),
                            scene_sdf(p + float3(0, 0, e)) - scene_sdf(p - float3(0, 0, e))));
}
kernel void alg_raymarch(device Hit* out [[buffer(0)]], constant uint2& size [[buffer(1)]],
                         uint2 gid [[thread_position_in_grid]]) {
    if (gid.x >= size.x || gid.y >= size.y) return;
    const float2 uv = (float2(gid) + 0.5f) / float2(size) * 2.0f - 1.0f;
    const float aspect = float(size.x) / float(size.y);
    const float3 ro = float3(0.0f, 0.0f, 0.0f);
    const float3 rd = normalize(float3(uv.x * aspect * 0.6f, -uv.y * 0.6f, 1.0f));
    const float3 light = normalize(float3(1.0f, 1.0f, -1.0f));
    float t = 0.0f;
    Hit h = {0.0f, 0.0f, 0.0f, 0.0f};
    for (int i = 0; i < 96; ++i) {
        const float3 p = ro + rd * t;
        const float d = scene_sdf(p);
        if (d < 1e-3f) {
            const float3 n = scene_normal(p);
            h.t = t;
            h.shade = max(dot(n, light), 0.0f);
            h.hit = 1.0f;
            h.steps = float(i);
            break;
        }
        t += d;
        if (t > 20.0f) break;
    }
    out[gid.y * size.x + gid.x] = h;
}
""",
    # half kernels: RMS norm (float accumulation) and half4 axpby
    """
kernel void alg_half_rmsnorm(const device half* x [[buffer(0)]], const device half* w [[buffer(1)]],
                             device half* y [[buffer(2)]], constant uint& D [[buffer(3)]],
                             uint row [[thread_position_in_grid]]) {
    const device half* xr = x + row * D;
    float ss = 0.0f;
    for (uint k = 0; k < D; ++k) {
        const float v = float(xr[k]);
        ss += v * v;
    }
    const half scale = half(rsqrt(ss / float(D) + 1e-5f));
    for (uint k = 0; k < D; ++k) y[row * D + k] = xr[k] * scale * w[k];
}
""",
    """
kernel void alg_half4_axpby(const device half4* x [[buffer(0)]], const device half4* y [[buffer(1)]],
                            device half4* out [[buffer(2)]], constant half& a [[buffer(3)]],
                            constant half& b [[buffer(4)]], uint gid [[thread_position_in_grid]]) {
    out[gid] = a * x[gid] + b * y[gid];
}
""",
], defines={"TILE": 16})

# ---------------------------------------------------------------------------
# uchar4 image kernels
# ---------------------------------------------------------------------------
IMG = KernelSet([
    """
kernel void img_grayscale(const device uchar4* in [[buffer(0)]], device uchar4* out [[buffer(1)]],
                          uint gid [[thread_position_in_grid]]) {
    const float4 c = float4(in[gid]) / 255.0f;
    const float y = dot(c.rgb, float3(0.299f, 0.587f, 0.114f));
    const uchar g = uchar(saturate(y) * 255.0f + 0.5f);
    out[gid] = uchar4(g, g, g, in[gid].a);
}
""",
    """
kernel void img_brightness_contrast(const device uchar4* in [[buffer(0)]], device uchar4* out [[buffer(1)]],
                                    constant float& brightness [[buffer(2)]], constant float& contrast [[buffer(3)]],
                                    uint gid [[thread_position_in_grid]]) {
    const float4 c = float4(in[gid]) / 255.0f;
    const float3 rgb = saturate((c.rgb - 0.5f) * contrast + 0.5f + brightness);
    out[gid] = uchar4(uchar3(rgb * 255.0f + 0.5f), in[gid].a);
}
""",
    """
kernel void img_alpha_blend(const device uchar4* src [[buffer(0)]], const device uchar4* dst [[buffer(1)]],
                            device uchar4* out [[buffer(2)]], uint gid [[thread_position_in_grid]]) {
    const float4 s = float4(src[gid]) / 255.0f;
    const float4 d = float4(dst[gid]) / 255.0f;
    const float a = s.a + d.a * (1.0f - s.a);
    const float3 rgb = a > 0.0f ? (s.rgb * s.a + d.rgb * d.a * (1.0f - s.a)) / a : float3(0.0f);
    out[gid] = uchar4(uchar3(rgb * 255.0f + 0.5f), uchar(a * 255.0f + 0.5f));
}
""",
    """
inline float luminance(uchar4 p) { return dot(float3(p.rgb), float3(0.299f, 0.587f, 0.114f)); }
kernel void img_sobel(const device uchar4* in [[buffer(0)]], device float* mag [[buffer(1)]],
                      constant uint& W [[buffer(2)]], constant uint& H [[buffer(3)]],
                      uint2 gid [[thread_position_in_grid]]) {
    if (gid.x >= W || gid.y >= H) return;
    float l[3][3];
    for (int dy = -1; dy <= 1; ++dy) {
        for (int dx = -1; dx <= 1; ++dx) {
            const uint x = uint(clamp(int(gid.x) + dx, 0, int(W) - 1));
            const uint y = uint(clamp(int(gid.y) + dy, 0, int(H) - 1));
            l[dy + 1][dx + 1] = luminance(in[y * W + x]);
        }
    }
    const float gx = (l[0][2] + 2.0f * l[1][2] + l[2][2]) - (l[0][0] + 2.0f * l[1][0] + l[2][0]);
    const float gy = (l[2][0] + 2.0f * l[2][1] + l[2][2]) - (l[0][0] + 2.0f * l[0][1] + l[0][2]);
    mag[gid.y * W + gid.x] = length(float2(gx, gy));
}
""",
    """
kernel void img_threshold_invert(const device uchar4* in [[buffer(0)]], device uchar4* out [[buffer(1)]],
                                 constant uchar& threshold [[buffer(2)]], uint gid [[thread_position_in_grid]]) {
    const uchar4 p = in[gid];
    const uchar m = max(max(p.r, p.g), p.b);
    out[gid] = m > threshold ? uchar4(uchar3(255) - p.rgb, p.a) : p;
}
""",
])


def round_up(x, m):
    return -(-x // m) * m


# ---------------------------------------------------------------------------
# reductions and scans
# ---------------------------------------------------------------------------


def test_reduce_tree(device, rng):
    n, tg = 10000, 256
    x = rng.standard_normal(n).astype(np.float32)
    groups = -(-n // tg)
    partial = np.zeros(groups, np.float32)
    RED.get(device, "alg_reduce_tree")(groups * tg, x, partial, n, threadgroup=tg, threadgroup_memory=[tg * 4])
    exp = np.pad(x, (0, groups * tg - n)).astype(np.float64).reshape(groups, tg).sum(1)
    assert_close(partial, exp, rtol=1e-5, atol=1e-4)


def test_reduce_simd(device, rng):
    n, tg = 10000, 256
    x = rng.standard_normal(n).astype(np.float32)
    groups = -(-n // tg)
    total = np.zeros(1, np.float32)
    partial = np.zeros(groups, np.float32)
    written_for_32_lanes(RED.get(device, "alg_reduce_simd"))(groups * tg, x, total, partial, n, threadgroup=tg)
    exp = np.pad(x, (0, groups * tg - n)).astype(np.float64).reshape(groups, tg).sum(1)
    assert_close(partial, exp, rtol=1e-5, atol=1e-4)
    assert_close(total, [x.astype(np.float64).sum()], rtol=1e-4, atol=1e-3)


def test_reduce_gridstride(device, rng):
    n = 100003
    x = rng.random(n).astype(np.float32)
    max_bits = np.zeros(1, np.uint32)
    total = np.zeros(1, np.float32)
    RED.get(device, "alg_reduce_gridstride")(1024, x, max_bits, total, n, threadgroup=256)
    assert max_bits.view(np.float32)[0] == x.max()
    assert_close(total, [x.astype(np.float64).sum()], rtol=1e-4)


def test_scan_hillis_steele(device, rng):
    n, tg = 2048, 256
    x = rng.integers(-100, 100, n).astype(np.int32)
    out = np.zeros(n, np.int32)
    RED.get(device, "alg_scan_hillis")(n, x, out, threadgroup=tg)
    assert_equal(out, np.cumsum(x.reshape(-1, tg), axis=1).ravel().astype(np.int32))


def test_scan_blelloch(device, rng):
    n, tg = 4096, 128  # 256 elements per group
    x = rng.integers(-100, 100, n).astype(np.int32)
    out = np.zeros(n, np.int32)
    RED.get(device, "alg_scan_blelloch")(n // 2, x, out, threadgroup=tg, threadgroup_memory=[2 * tg * 4])
    blocks = x.reshape(-1, 2 * tg)
    assert_equal(out, (np.cumsum(blocks, axis=1) - blocks).ravel().astype(np.int32))


def test_scan_three_pass(device, rng):
    n, tg = 5000, 256
    x = rng.integers(0, 50, n).astype(np.int32)
    groups = -(-n // tg)
    out = np.zeros(n, np.int32)
    sums = np.zeros(groups, np.int32)
    scan_block = written_for_32_lanes(RED.get(device, "alg_scan_block"))
    scan_block(groups * tg, x, out, sums, n, threadgroup=tg)
    offsets = np.zeros(groups, np.int32)
    dummy = np.zeros(1, np.int32)
    scan_block(tg, sums, offsets, dummy, groups, threadgroup=tg)  # one group scans the block sums
    RED.get(device, "alg_scan_add")(groups * tg, out, offsets, n, threadgroup=tg)
    assert_equal(out, (np.cumsum(x) - x).astype(np.int32))


def test_histogram_device_atomics(device, rng):
    n = 50000
    data = rng.integers(0, 256, n).astype(np.uint8)
    hist = np.zeros(256, np.uint32)
    RED.get(device, "alg_hist_device")(n, data, hist)
    assert_equal(hist, np.bincount(data, minlength=256).astype(np.uint32))


def test_histogram_threadgroup_atomics(device, rng):
    n = 1 << 16
    data = (rng.standard_normal(n) * 30 + 128).clip(0, 255).astype(np.uint8)
    hist = np.zeros(256, np.uint32)
    RED.get(device, "alg_hist_threadgroup")(2048, data, hist, n // 4, threadgroup=128)
    assert_equal(hist, np.bincount(data, minlength=256).astype(np.uint32))


def test_bitonic_sort(device, rng):
    n, tg = 1024, 256
    x = rng.standard_normal(n).astype(np.float32)
    data = x.copy()
    RED.get(device, "alg_bitonic_sort")(n, data, threadgroup=tg)
    assert_equal(data, np.sort(x.reshape(-1, tg), axis=1).ravel())


def test_softmax(device, rng):
    rows, D, tg = 16, 1000, 128
    x = (rng.standard_normal((rows, D)) * 4).astype(np.float32)
    y = np.zeros((rows, D), np.float32)
    RED.get(device, "alg_softmax")(rows * tg, x, y, D, threadgroup=tg)
    X = x.astype(np.float64)
    e = np.exp(X - X.max(1, keepdims=True))
    assert_close(y, e / e.sum(1, keepdims=True), rtol=1e-4, atol=1e-7)


def test_gemv(device, rng):
    rows, cols, tg = 203, 300, 128  # 4 rows per threadgroup
    A = rng.standard_normal((rows, cols)).astype(np.float32)
    x = rng.standard_normal(cols).astype(np.float32)
    y = np.zeros(rows, np.float32)
    written_for_32_lanes(RED.get(device, "alg_gemv"))(round_up(rows, 4) * 32, A, x, y, rows, cols, threadgroup=tg)
    assert_close(y, A.astype(np.float64) @ x, rtol=1e-4, atol=1e-4)


# ---------------------------------------------------------------------------
# dense kernels
# ---------------------------------------------------------------------------


def test_matmul_naive(device, rng):
    M, N, K = 37, 53, 29
    A = rng.standard_normal((M, K)).astype(np.float32)
    B = rng.standard_normal((K, N)).astype(np.float32)
    C = np.zeros((M, N), np.float32)
    DENSE.get(device, "alg_matmul_naive")((N, M), A, B, C, M, N, K, threadgroup=(8, 8))
    assert_close(C, A.astype(np.float64) @ B, rtol=1e-4, atol=1e-4)


def test_matmul_tiled(device, rng):
    M, N, K = 70, 50, 45
    A = rng.standard_normal((M, K)).astype(np.float32)
    B = rng.standard_normal((K, N)).astype(np.float32)
    C = np.zeros((M, N), np.float32)
    dims = np.array((M, N, K), dtype=[("M", "<u4"), ("N", "<u4"), ("K", "<u4")])
    DENSE.get(device, "alg_matmul_tiled")((round_up(N, 16), round_up(M, 16)), A, B, C, dims[()], threadgroup=(16, 16))
    assert_close(C, A.astype(np.float64) @ B, rtol=1e-4, atol=1e-4)


def test_transpose_naive(device, rng):
    H, W = 45, 67
    x = rng.standard_normal((H, W)).astype(np.float32)
    out = np.zeros((W, H), np.float32)
    DENSE.get(device, "alg_transpose_naive")((W, H), x, out, W, H)
    assert_equal(out, x.T)


def test_transpose_tiled(device, rng):
    H, W = 45, 67
    x = rng.standard_normal((H, W)).astype(np.float32)
    out = np.zeros((W, H), np.float32)
    DENSE.get(device, "alg_transpose_tiled")((round_up(W, 16), round_up(H, 16)), x, out, W, H, threadgroup=(16, 16))
    assert_equal(out, x.T)


def test_jacobi_stencil(device, rng):
    H, W = 40, 60
    u = rng.standard_normal((H, W)).astype(np.float32)
    v = np.zeros_like(u)
    size = np.array([W, H], np.uint32)
    jac = DENSE.get(device, "alg_jacobi")
    ref = u.astype(np.float64)
    for _ in range(3):  # a few sweeps, ping-pong
        jac((W, H), u, v, size, threadgroup=(8, 8))
        u, v = v, u
        nxt = ref.copy()
        nxt[1:-1, 1:-1] = 0.25 * (ref[1:-1, :-2] + ref[1:-1, 2:] + ref[:-2, 1:-1] + ref[2:, 1:-1])
        ref = nxt
    assert_close(u, ref, rtol=1e-5, atol=1e-5)


def test_blur_tiled(device, rng):
    H, W = 37, 50
    x = rng.standard_normal((H, W)).astype(np.float32)
    out = np.zeros_like(x)
    DENSE.get(device, "alg_blur_tiled")((round_up(W, 16), round_up(H, 16)), x, out, W, H, threadgroup=(16, 16))
    p = np.pad(x.astype(np.float64), 1, mode="edge")
    k = np.array([[1, 2, 1], [2, 4, 2], [1, 2, 1]]) / 16
    exp = sum(k[dy, dx] * p[dy:dy + H, dx:dx + W] for dy in range(3) for dx in range(3))
    assert_close(out, exp, rtol=1e-5, atol=1e-5)


def test_conv1d(device, rng):
    n, r = 1000, 4
    x = rng.standard_normal(n).astype(np.float32)
    w = rng.standard_normal(2 * r + 1).astype(np.float32)
    out = np.zeros(n, np.float32)
    DENSE.get(device, "alg_conv1d")(n, x, w, out, n, r)
    exp = np.convolve(x.astype(np.float64), w[::-1].astype(np.float64), mode="same")
    assert_close(out, exp, rtol=1e-5, atol=1e-5)


def test_mandelbrot(device):
    W, H, max_iter = 96, 64, 200
    iters = np.zeros((H, W), np.uint32)
    DENSE.get(device, "alg_mandelbrot")((W, H), iters, np.array([W, H], np.uint32), max_iter, threadgroup=(16, 16))
    # NumPy model of the same iteration in float32
    gx, gy = np.meshgrid(np.arange(W, dtype=np.float32), np.arange(H, dtype=np.float32))
    cx = np.float32(-2.0) + gx * np.float32(3.0 / W)
    cy = np.float32(-1.25) + gy * np.float32(2.5 / H)
    zx = np.zeros_like(cx)
    zy = np.zeros_like(cy)
    it = np.zeros((H, W), np.uint32)
    for _ in range(max_iter):
        alive = zx * zx + zy * zy <= 4
        it += alive
        nzx = zx * zx - zy * zy + cx
        nzy = np.float32(2) * zx * zy + cy
        zx = np.where(alive, nzx, zx)
        zy = np.where(alive, nzy, zy)
    # chaotic near the set's boundary: ask for agreement on nearly every pixel
    same = iters == it
    assert same.mean() > 0.97, f"only {same.mean():.3f} of pixels agree"
    assert (iters == max_iter).sum() > 0.1 * W * H  # the set itself is there


def march_numpy(W, H):
    """NumPy (float32) model of alg_raymarch."""
    f = np.float32
    gx, gy = np.meshgrid(np.arange(W, dtype=f), np.arange(H, dtype=f))
    u = (gx + f(0.5)) / f(W) * f(2) - f(1)
    v = (gy + f(0.5)) / f(H) * f(2) - f(1)
    aspect = f(W) / f(H)
    rd = np.stack([u * aspect * f(0.6), -v * f(0.6), np.ones_like(u)], -1)
    rd /= np.linalg.norm(rd, axis=-1, keepdims=True)
    light = np.array([1, 1, -1], f) / np.sqrt(f(3))

    def sdf(p):
        sphere = np.linalg.norm(p - np.array([0, 0, 3], f), axis=-1) - f(1)
        return np.minimum(sphere, p[..., 1] + f(1))

    t = np.zeros((H, W), f)
    out = np.zeros((H, W, 4), f)
    active = np.ones((H, W), bool)
    for i in range(96):
        p = rd * t[..., None]
        d = sdf(p)
        hit = active & (d < f(1e-3))
        if hit.any():
            e = f(1e-3)
            ex, ey, ez = np.eye(3, dtype=f) * e
            n = np.stack([sdf(p + ex) - sdf(p - ex), sdf(p + ey) - sdf(p - ey), sdf(p + ez) - sdf(p - ez)], -1)
            n /= np.linalg.norm(n, axis=-1, keepdims=True)
            shade = np.maximum((n * light).sum(-1), 0)
            out[hit] = np.stack([t, shade, np.ones_like(t), np.full_like(t, i)], -1)[hit]
        active &= ~hit
        t = np.where(active, t + d, t)
        active &= ~(t > f(20))
    return out


def test_raymarcher(device):
    W, H = 64, 48
    hit_dt = np.dtype([("t", "<f4"), ("shade", "<f4"), ("hit", "<f4"), ("steps", "<f4")])
    out = np.zeros((H, W), hit_dt)
    DENSE.get(device, "alg_raymarch")((W, H), out, np.array([W, H], np.uint32), threadgroup=(8, 8))
    img = out.view(np.float32).reshape(H, W, 4)
    ref = march_numpy(W, H)
    hit_agree = img[..., 2] == ref[..., 2]
    assert hit_agree.mean() > 0.99
    assert ref[..., 2].mean() > 0.3  # the scene is in view
    both = hit_agree & (ref[..., 2] == 1)
    t_ok = np.abs(img[..., 0] - ref[..., 0]) < 1e-2
    shade_ok = np.abs(img[..., 1] - ref[..., 1]) < 2e-2
    assert (t_ok & shade_ok)[both].mean() > 0.99


def test_half_rmsnorm(device, rng):
    rows, D = 64, 96
    x = rng.standard_normal((rows, D)).astype(np.float16)
    w = rng.uniform(0.5, 1.5, D).astype(np.float16)
    y = np.zeros((rows, D), np.float16)
    DENSE.get(device, "alg_half_rmsnorm")(rows, x, w, y, D)
    X = x.astype(np.float64)
    scale = (1 / np.sqrt((X * X).mean(1) + 1e-5)).astype(np.float16).astype(np.float64)
    assert_close(y, X * scale[:, None] * w.astype(np.float64), rtol=4e-3, atol=4e-3)


def test_half4_axpby(device, rng):
    n = 512
    x = rng.uniform(-2, 2, (n, 4)).astype(np.float16)
    yv = rng.uniform(-2, 2, (n, 4)).astype(np.float16)
    out = np.zeros((n, 4), np.float16)
    DENSE.get(device, "alg_half4_axpby")(n, x, yv, out, np.float16(1.5), np.float16(-0.25))
    assert_close(out, 1.5 * x.astype(np.float64) - 0.25 * yv.astype(np.float64), rtol=3e-3, atol=3e-3)


# ---------------------------------------------------------------------------
# image kernels (uchar4 RGBA)
# ---------------------------------------------------------------------------

f32 = np.float32


def image(rng, n):
    return rng.integers(0, 256, (n, 4)).astype(np.uint8)


def to_u8(v):
    return np.floor(v.astype(np.float64) + 0.5).astype(np.int64).clip(0, 255)


def test_grayscale(device, rng):
    n = 4096
    px = image(rng, n)
    out = np.zeros((n, 4), np.uint8)
    IMG.get(device, "img_grayscale")(n, px, out)
    c = px.astype(f32) / f32(255)
    y = (c[:, :3] * np.array([0.299, 0.587, 0.114], f32)).sum(1, dtype=f32)
    g = to_u8(np.clip(y, 0, 1) * f32(255))
    assert np.abs(out[:, :3].astype(np.int64) - g[:, None]).max() <= 1  # rounding at exact .5 ties
    assert_equal(out[:, 3], px[:, 3])
    assert (out[:, 0] == out[:, 1]).all() and (out[:, 1] == out[:, 2]).all()


def test_brightness_contrast(device, rng):
    n = 4096
    px = image(rng, n)
    out = np.zeros((n, 4), np.uint8)
    IMG.get(device, "img_brightness_contrast")(n, px, out, 0.1, 1.5)
    c = px.astype(f32) / f32(255)
    rgb = np.clip((c[:, :3] - f32(0.5)) * f32(1.5) + f32(0.5) + f32(0.1), 0, 1)
    exp = to_u8(rgb * f32(255))
    assert np.abs(out[:, :3].astype(np.int64) - exp).max() <= 1
    assert_equal(out[:, 3], px[:, 3])


def test_alpha_blend(device, rng):
    n = 4096
    src, dst = image(rng, n), image(rng, n)
    src[:10, 3] = 0
    dst[:5, 3] = 0
    out = np.zeros((n, 4), np.uint8)
    IMG.get(device, "img_alpha_blend")(n, src, dst, out)
    s = src.astype(np.float64) / 255
    d = dst.astype(np.float64) / 255
    a = s[:, 3] + d[:, 3] * (1 - s[:, 3])
    with np.errstate(invalid="ignore", divide="ignore"):
        rgb = np.where(a[:, None] > 0, (s[:, :3] * s[:, 3:] + d[:, :3] * d[:, 3:] * (1 - s[:, 3:])) / a[:, None], 0)
    exp = np.concatenate([to_u8(rgb * 255), to_u8(a * 255)[:, None]], 1)
    assert np.abs(out.astype(np.int64) - exp).max() <= 1


def test_sobel(device, rng):
    H, W = 33, 47
    px = image(rng, H * W)
    mag = np.zeros((H, W), np.float32)
    IMG.get(device, "img_sobel")((W, H), px, mag, W, H, threadgroup=(16, 16))
    lum = (px[:, :3].astype(np.float64) @ np.array([0.299, 0.587, 0.114])).reshape(H, W)
    p = np.pad(lum, 1, mode="edge")
    L = lambda dy, dx: p[1 + dy:1 + dy + H, 1 + dx:1 + dx + W]  # noqa: E731
    gx = (L(-1, 1) + 2 * L(0, 1) + L(1, 1)) - (L(-1, -1) + 2 * L(0, -1) + L(1, -1))
    gy = (L(1, -1) + 2 * L(1, 0) + L(1, 1)) - (L(-1, -1) + 2 * L(-1, 0) + L(-1, 1))
    assert_close(mag, np.hypot(gx, gy), rtol=1e-5, atol=1e-3)


def test_threshold_invert(device, rng):
    n = 4096
    px = image(rng, n)
    out = np.zeros((n, 4), np.uint8)
    IMG.get(device, "img_threshold_invert")(n, px, out, np.uint8(128))
    m = px[:, :3].max(1)
    exp = px.copy()
    exp[m > 128, :3] = 255 - px[m > 128, :3]
    assert_equal(out, exp)


def test_reduce_last_block(device, rng):
    n, tg = 8192, 256
    x = rng.integers(-8, 8, n).astype(np.float32)  # exact sums
    partial = np.zeros(n // tg, np.float32)
    ticket = np.zeros(1, np.uint32)
    result = np.zeros(1, np.float32)
    RED.get(device, "alg_reduce_last_block")(n, x, partial, ticket, result, threadgroup=tg)
    assert ticket[0] == n // tg
    assert_equal(partial, x.reshape(-1, tg).sum(1))
    assert result[0] == x.sum()
