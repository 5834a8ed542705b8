"""A GEMM written in MSL with SIMD-group matrices, against NumPy's BLAS (CPU, fp32) and
CuPy's matmul (CUDA, fp16), side by side.

    python benchmarks/bench_simdgroup_gemm.py [--device cpu|cuda] [--size N] [--quick]

The kernel (GEMM_SRC, also checked by tests/conformance/test_simdgroup_matrix.py) stages
64x32 tiles of A and 32x64 tiles of B in threadgroup memory; each of the 4 SIMD-groups of a
threadgroup keeps a 32x32 block of C as 4x4 simdgroup_float8x8 accumulators and multiplies
8x8 tiles loaded with simdgroup_load. A and B are float or half (TYPE), C is float.
Results are checked before they are timed; times are the minimum over repeats.
"""

import argparse
import time

import numpy as np

import metalcall as mc

GEMM_SRC = """
#include <metal_stdlib>
using namespace metal;
// C[M,N] = A[M,K] * B[K,N], row-major; M, N multiples of 64 and K of 32.
// One threadgroup (128 threads, 4 SIMD-groups) computes a 64x64 block of C.
template <typename T>
kernel void sgm_gemm(device const T* A [[buffer(0)]], device const T* B [[buffer(1)]],
                     device float* C [[buffer(2)]], constant uint4& dims [[buffer(3)]],
                     uint2 tg [[threadgroup_position_in_grid]], uint tid [[thread_index_in_threadgroup]],
                     uint sg [[simdgroup_index_in_threadgroup]]) {
    constexpr uint BM = 64, BN = 64, BK = 32, THREADS = 128;
    threadgroup T As[BM * BK];
    threadgroup T Bs[BK * BN];
    const uint N = dims.y, K = dims.z;
    const uint row0 = tg.y * BM, col0 = tg.x * BN;
    const uint sr = (sg / 2) * 32, sc = (sg % 2) * 32;  // this SIMD-group's 32x32 block
    simdgroup_float8x8 acc[4][4];
    for (uint i = 0; i < 4; ++i)
        for (uint j = 0; j < 4; ++j) acc[i][j] = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
    for (uint k0 = 0; k0 < K; k0 += BK) {
        for (uint i = tid; i < BM * BK; i += THREADS) As[i] = A[(row0 + i / BK) * K + k0 + i % BK];
        for (uint i = tid; i < BK * BN; i += THREADS) Bs[i] = B[(k0 + i / BN) * N + col0 + i % BN];
        threadgroup_barrier(mem_flags::mem_threadgroup);
        for (uint kk = 0; kk < BK; kk += 8) {
            simdgroup_matrix<T, 8, 8> a[4], b[4];
            for (uint i = 0; i < 4; ++i) simdgroup_load(a[i], As, BK, ulong2(kk, sr + 8 * i));
            for (uint j = 0; j < 4; ++j) simdgroup_load(b[j], Bs, BN, ulong2(sc + 8 * j, kk));
            for (uint i = 0; i < 4; ++i)
                for (uint j = 0; j < 4; ++j) simdgroup_multiply_accumulate(acc[i][j], a[i], b[j], acc[i][j]);
        }
        threadgroup_barrier(mem_flags::mem_threadgroup);
    }
    for (uint i = 0; i < 4; ++i)
        for (uint j = 0; j < 4; ++j) simdgroup_store(acc[i][j], C, N, ulong2(col0 + sc + 8 * j, row0 + sr + 8 * i));
}
template [[host_name("sgm_gemm_float")]] kernel void sgm_gemm<float>(device const float*, device const float*,
    device float*, constant uint4&, uint2, uint, uint);
template [[host_name("sgm_gemm_half")]] kernel void sgm_gemm<half>(device const half*, device const half*,
    device float*, constant uint4&, uint2, uint, uint);
"""


def gemm(dev, lib, a, b, c=None):
    """Runs sgm_gemm on (M,K) x (K,N) arrays (or Buffers with shapes given by a/b); returns C."""
    m, k = a.shape
    n = b.shape[1]
    assert m % 64 == 0 and n % 64 == 0 and k % 32 == 0, "M, N must be multiples of 64 and K of 32"
    name = "sgm_gemm_half" if a.dtype == np.float16 else "sgm_gemm_float"
    if c is None:
        c = np.zeros((m, n), np.float32)
    dims = np.array([m, n, k, 0], np.uint32)
    getattr(lib, name)((n // 64 * 128, m // 64), a, b, c, dims, threadgroup=(128, 1)).wait()
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
        lib = dev.compile(GEMM_SRC)
        n = args.size or (256 if args.quick else 512) if kind == "cpu" else (args.size or 4096)
        dtype = np.float32 if kind == "cpu" else np.float16
        a_np = rng.standard_normal((n, n)).astype(dtype)
        b_np = rng.standard_normal((n, n)).astype(dtype)
        a, b = dev.empty((n, n), dtype), dev.empty((n, n), dtype)
        np.asarray(a)[...] = a_np
        np.asarray(b)[...] = b_np
        c = dev.empty((n, n), np.float32)
        gemm(dev, lib, a_np, b_np, c)
        expect = a_np.astype(np.float64) @ b_np.astype(np.float64)
        err = np.abs(np.asarray(c) - expect).max() / np.abs(expect).max()
        assert err < 1e-3, f"{kind}: GEMM is wrong (max relative error {err:.2e})"
        t = best_time(lambda: gemm(dev, lib, a, b, c), repeats)
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
        print(f"{kind:<8} {np.dtype(dtype).name:<8} {n:>6} {ours:>18.1f} {ref_name:>12} {theirs:>12.1f} {ours / theirs:>7.3f}")


if __name__ == "__main__":
    main()
