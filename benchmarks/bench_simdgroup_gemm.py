"""A GEMM written in MSL with SIMD-group matrices, against NumPy's BLAS (CPU, fp32) and
CuPy's matmul (CUDA, fp16), side by side.

    python benchmarks/bench_simdgroup_gemm.py [--device cpu|cuda] [--size N] [--quick]

The kernel (GEMM_SRC, also checked by tests/conformance/test_simdgroup_matrix.py) stages
BMx32 tiles of A and 32xBN tiles of B in threadgroup memory; each SIMD-group keeps a block of
C as FM x FN simdgroup_float8x8 accumulators and multiplies 8x8 tiles loaded with
simdgroup_load. A and B are float or half, C is float. On CUDA a few tilings are tried
(CUDA_CONFIGS) and the best is reported.
Results are checked before they are timed; times are the minimum over repeats.
"""

import argparse
import time

import numpy as np

import metalcall as mc

GEMM_SRC = """
#include <metal_stdlib>
using namespace metal;
// C[M,N] = A[M,K] * B[K,N], row-major; M, N multiples of the block and K of BK.
// A threadgroup of SG_ROWS x SG_COLS SIMD-groups computes a BM x BN block of C; each
// SIMD-group keeps FM x FN 8x8 float accumulators.
#ifndef SG_ROWS
#define SG_ROWS 2
#define SG_COLS 2
#define FM 4
#define FN 4
#endif
#define BM (SG_ROWS * FM * 8)
#define BN (SG_COLS * FN * 8)
#define BK 32
#define THREADS (32 * SG_ROWS * SG_COLS)
template <typename T>
kernel void sgm_gemm(device const T* A [[buffer(0)]], device const T* B [[buffer(1)]],
                     device float* C [[buffer(2)]], constant uint4& dims [[buffer(3)]],
                     uint2 tg [[threadgroup_position_in_grid]], uint tid [[thread_index_in_threadgroup]],
                     uint sg [[simdgroup_index_in_threadgroup]]) {
    threadgroup vec<T, 4> As4[BM * BK / 4];  // vectors: aligned for the 4-wide copies
    threadgroup vec<T, 4> Bs4[BK * BN / 4];
    threadgroup const T* As = (threadgroup const T*)As4;
    threadgroup const T* Bs = (threadgroup const T*)Bs4;
    const uint N = dims.y, K = dims.z;
    const uint row0 = tg.y * BM, col0 = tg.x * BN;
    const uint sr = (sg / SG_COLS) * FM * 8, sc = (sg % SG_COLS) * FN * 8;  // this SIMD-group's block
    simdgroup_float8x8 acc[FM][FN];
    #pragma unroll
    for (uint i = 0; i < FM; ++i)
        #pragma unroll
        for (uint j = 0; j < FN; ++j) acc[i][j] = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
    for (uint k0 = 0; k0 < K; k0 += BK) {
        for (uint i = tid; i < BM * BK / 4; i += THREADS)
            As4[i] = ((device const vec<T, 4>*)(A + (row0 + i / (BK / 4)) * K + k0))[i % (BK / 4)];
        for (uint i = tid; i < BK * BN / 4; i += THREADS)
            Bs4[i] = ((device const vec<T, 4>*)(B + (k0 + i / (BN / 4)) * N + col0))[i % (BN / 4)];
        threadgroup_barrier(mem_flags::mem_threadgroup);
        #pragma unroll
        for (uint kk = 0; kk < BK; kk += 8) {
            simdgroup_matrix<T, 8, 8> a[FM], b[FN];
            #pragma unroll
            for (uint i = 0; i < FM; ++i) simdgroup_load(a[i], As, BK, ulong2(kk, sr + 8 * i));
            #pragma unroll
            for (uint j = 0; j < FN; ++j) simdgroup_load(b[j], Bs, BN, ulong2(sc + 8 * j, kk));
            #pragma unroll
            for (uint i = 0; i < FM; ++i)
                #pragma unroll
                for (uint j = 0; j < FN; ++j) simdgroup_multiply_accumulate(acc[i][j], a[i], b[j], acc[i][j]);
        }
        threadgroup_barrier(mem_flags::mem_threadgroup);
    }
    for (uint i = 0; i < FM; ++i)
        for (uint j = 0; j < FN; ++j) simdgroup_store(acc[i][j], C, N, ulong2(col0 + sc + 8 * j, row0 + sr + 8 * i));
}
template [[host_name("sgm_gemm_float")]] kernel void sgm_gemm<float>(device const float*, device const float*,
    device float*, constant uint4&, uint2, uint, uint);
template [[host_name("sgm_gemm_half")]] kernel void sgm_gemm<half>(device const half*, device const half*,
    device float*, constant uint4&, uint2, uint, uint);
"""

# (SIMD-groups along M, along N, 8x8 tiles per SIMD-group along M, along N)
DEFAULT_CONFIG = (2, 2, 4, 4)
CUDA_CONFIGS = [(2, 2, 4, 4), (2, 4, 4, 4), (4, 2, 4, 4), (2, 2, 8, 4), (4, 4, 4, 4)]


def compile_gemm(dev, config=DEFAULT_CONFIG):
    names = ("SG_ROWS", "SG_COLS", "FM", "FN")
    return dev.compile(GEMM_SRC, defines=dict(zip(names, map(str, config)))), config


def gemm(dev, lib, a, b, c=None, config=DEFAULT_CONFIG):
    """Runs sgm_gemm on (M,K) x (K,N) arrays or Buffers; returns C (float32)."""
    m, k = a.shape
    n = b.shape[1]
    sg_rows, sg_cols, fm, fn = config
    bm, bn = sg_rows * fm * 8, sg_cols * fn * 8
    assert m % bm == 0 and n % bn == 0 and k % 32 == 0, f"M, N must be multiples of {bm}, {bn} and K of 32"
    name = "sgm_gemm_half" if np.dtype(a.dtype) == np.float16 else "sgm_gemm_float"
    if c is None:
        c = np.zeros((m, n), np.float32)
    dims = np.array([m, n, k, 0], np.uint32)
    threads = 32 * sg_rows * sg_cols
    getattr(lib, name)((n // bn * threads, m // bm), a, b, c, dims, threadgroup=(threads, 1)).wait()
    return c


def best_time(fn, repeats):
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default=None, help="cpu or cuda (default: every one present)")
    ap.add_argument("--size", type=int, default=None, help="square size (default: cpu 512, cuda 4096)")
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    kinds = [args.device] if args.device else [d.backend for d in mc.get_devices() if d.backend in ("cpu", "cuda")]
    repeats = 2 if args.quick else 5
    rng = np.random.default_rng(1)
    print(f"{'device':<8} {'dtype':<8} {'size':>6} {'metalcall GFLOP/s':>18} {'reference':>12} {'ref GFLOP/s':>12} {'ratio':>7}")
    for kind in dict.fromkeys(kinds):
        dev = mc.Device(kind)
        n = args.size or (256 if args.quick else 512) if kind == "cpu" else (args.size or 4096)
        dtype = np.float32 if kind == "cpu" else np.float16
        a_np = rng.standard_normal((n, n)).astype(dtype)
        b_np = rng.standard_normal((n, n)).astype(dtype)
        a, b = dev.empty((n, n), dtype), dev.empty((n, n), dtype)
        np.asarray(a)[...] = a_np
        np.asarray(b)[...] = b_np
        c = dev.empty((n, n), np.float32)
        expect = a_np.astype(np.float64) @ b_np.astype(np.float64)
        t, best = float("inf"), None
        for config in (CUDA_CONFIGS if kind == "cuda" else [DEFAULT_CONFIG]):
            lib, _ = compile_gemm(dev, config)
            np.asarray(c)[...] = 0
            gemm(dev, lib, a, b, c, config)
            err = np.abs(np.asarray(c) - expect).max() / np.abs(expect).max()
            assert err < 1e-3, f"{kind}: GEMM {config} is wrong (max relative error {err:.2e})"
            tc = best_time(lambda: gemm(dev, lib, a, b, c, config), repeats)
            print(f"  {kind} {config}: {2.0 * n ** 3 / tc / 1e9:.1f} GFLOP/s")
            if tc < t:
                t, best = tc, config
        flops = 2.0 * n ** 3
        if kind == "cuda":
            try:
                import cupy as cp  # the reference on the GPU
            except ImportError:
                print(f"{kind:<8} {np.dtype(dtype).name:<8} {n:>6} {flops / t / 1e9:>18.1f} {'(no cupy)':>12}")
                continue
            ga, gb = cp.asarray(a_np), cp.asarray(b_np)
            cp.matmul(ga, gb)
            cp.cuda.Device().synchronize()

            def ref():
                cp.matmul(ga, gb)
                cp.cuda.Device().synchronize()
            ref_name = "cupy"
        else:
            def ref():
                a_np @ b_np
            ref_name = "numpy"
        tr = best_time(ref, repeats)
        ours, theirs = flops / t / 1e9, flops / tr / 1e9
        print(f"{kind:<8} {np.dtype(dtype).name:<8} {n:>6} {ours:>18.1f} {ref_name:>12} {theirs:>12.1f} {ours / theirs:>7.3f}"
              f"  (tiles {best})")


if __name__ == "__main__":
    main()
