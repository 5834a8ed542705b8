"""A GEMM written in MSL with SIMD-group matrices, against NumPy's BLAS (CPU, fp32) and
CuPy's matmul (CUDA, fp16), side by side.

    python benchmarks/bench_simdgroup_gemm.py [--device cpu|cuda] [--size N] [--quick]
        [--configs "2,2,8,8,32;1,2,8,8,32"] [--modes "nests;row pairs"] [--peak] [--parts]
        [--define NAME=VALUE] [--repeats R] [--calls N] [--clock wall|device] [--cold-l2]

The kernel (GEMM_SRC, also checked by tests/conformance/test_simdgroup_matrix.py) stages
BMxBK tiles of A and BKxBN tiles of B (BK/2 deep for float) in padded, double-buffered
threadgroup memory (--define STAGES=1: one stage, for deeper tiles; --define PIPELINE=1:
one stage, software-pipelined by one K step); each SIMD-group keeps a
block of C as FM x FN simdgroup_float8x8 accumulators and multiplies 8x8 tiles loaded with
simdgroup_load, each 16-deep K step a loop nest of loads and one of products (which the
CUDA translation hands to the prelude whole: two rows and two steps a dense mma, four blocks
an ldmatrix.x4). A and B are float or half; C is float, or half with --define C_HALF=1 (on
CUDA with half factors the default, as CuPy's fp16 matmul writes half; the accumulators
are float either way). A few tilings are tried
(CUDA_CONFIGS / CPU_CONFIGS, or --configs; on CUDA in the product modes of the prelude,
`variants`, or those --modes names) and the best is reported;
--parts times that tiling without its products, its tile fetches or its barrier; --peak
measures the rate of simdgroup_multiply_accumulate alone (PEAK_SRC), the ceiling of any
kernel built from 8x8 products.
Results are checked before they are timed; times are the minimum over repeats (20 on CUDA,
for both libraries), each one call and its wait (--calls N: N calls back to back; --clock
device on CUDA: the GPU's own time of a call, our Completion's gpu_time and CUDA events
around CuPy's). The ratio line times the best tiling and the reference again and gives
the ratio of the best times and of the medians (CuPy's best of 20 ranged over 581-704
TFLOP/s on H200s). --cold-l2 writes 512 MiB on the device before each timing, so that no
call finds its matrices in the L2 cache from the call before and the GPU is busy until
the call, and then times the two in turn (one call of each a round), so that both meet
the same clocks and temperatures. It is meant for GPUs: on the CPU, NumPy's BLAS threads
then start each call from idle, and its median falls far below its best.
"""

import argparse
import functools
import os
import re
import textwrap
import time

import numpy as np

import metalcall as mc

GEMM_SRC = """
#include <metal_stdlib>
using namespace metal;
// C[M,N] = A[M,K] * B[K,N], row-major; M, N multiples of the block (BM, BN) and K of KT.
// A threadgroup of SG_ROWS x SG_COLS SIMD-groups computes a BM x BN block of C; each
// SIMD-group keeps FM x FN 8x8 float accumulators. Tiles of A (BM x KT) and B (KT x BN)
// pass through threadgroup memory in STAGES stages: while the SIMD-groups multiply one
// stage, the next tiles travel from device memory into registers (16-byte copies), to
// go into the other stage, so one barrier per KT step suffices (STAGES 1: half the
// memory, for deeper tiles; a second barrier before the tiles are overwritten). Tile rows
// are padded by 8 elements: the 8 rows an 8x8 load reads fall into different banks.
#ifndef SG_ROWS
#define SG_ROWS 2
#define SG_COLS 2
#define FM 4
#define FN 4
#endif
#ifndef BK
#define BK 32
#endif
#ifndef STAGES
#define STAGES 2
#endif
#ifndef DIRECT_COPY
#define DIRECT_COPY 0  // 1: tiles copied straight from device to threadgroup memory, a step ahead
#endif
#ifndef COLUMN_ORDER
#define COLUMN_ORDER 0
#endif
#ifndef PIPELINE
#define PIPELINE 0
#endif
#ifndef FETCH_EARLY
#define FETCH_EARLY 1  // pipelined loop: the next tiles' device loads go out before the barrier after the
                       // stores, so they travel while the SIMD-groups wait there (0: after it)
#endif
#ifndef GEMM_FLOAT
#define GEMM_FLOAT 1  // 0: the half kernel alone (quicker to compile)
#endif
#ifndef C_HALF
#define C_HALF 0  // 1: C in half (rounded from the float accumulators through threadgroup memory)
#endif
#if C_HALF
#define CT half
#else
#define CT float
#endif
#ifndef TILE_ROW_SPREAD
#define TILE_ROW_SPREAD 1  // 0: a wavefront's rows of a tile copy next to each other
#endif
#define KT (BK * 2 / sizeof(T))  // tile depth: BK for half; float tiles are half as deep (same bytes)
#define PAD 8
#define K_PAIR(kk) (2 - (KT - (kk) < 16))  // 8-deep K steps from kk on, up to two
#define BM (SG_ROWS * FM * 8)
#define BN (SG_COLS * FN * 8)
#define AS (KT + PAD)  // padded row lengths (elements) of the A and B tiles
#define BS (BN + PAD)
#define THREADS (32 * SG_ROWS * SG_COLS)
#define VEC (16 / sizeof(T))  // elements per 16-byte copy
#define A_COPIES ((BM * KT / VEC + THREADS - 1) / THREADS)
#define B_COPIES ((KT * BN / VEC + THREADS - 1) / THREADS)

// Which rows a SIMD-group's copies of a tile with P 16-byte pieces a row take. The 8
// lanes of a 16-byte access's wavefront take 8 / P whole rows (whole 32-byte sectors of
// device memory); in threadgroup memory, rows of STRIDE bytes, those rows are SPREAD
// apart, so that they fall into different banks: two neighbouring 64-byte rows padded by
// 16 bytes overlap by 16 bytes (a 2-way conflict), rows 4 apart do not. The smallest
// spread whose rows start an odd multiple of 128 / (8 / P) bytes apart, mod 128.
constexpr uint row_spread(uint P, uint stride) {
    if (P >= 8 || TILE_ROW_SPREAD == 0) return 1;
    const uint span = 128 / (8 / P);
    for (uint d = 1; d <= 4; d *= 2)
        if ((d * stride) % span == 0 && ((d * stride) % 128 / span) % 2 == 1) return d;
    return 1;
}
// Row and first piece of thread tid's 16-byte pieces of a tile (each copy then takes
// THREADS / P rows, so the addresses are one base and constant steps): rows of 8 pieces or
// more, piece tid % P of row tid / P; shorter rows, lane i of the SIMD-group's quarter q
// takes piece i % P of row base(q) + D * (i / P), base(q) = q % D + (q / D) * D * 8 / P.
template <uint P, uint STRIDE> inline uint tile_row(uint tid) {
    constexpr uint D = row_spread(P, STRIDE), Q = 8 / P;
    const uint lane = tid % 32, q = lane / 8;
    return P >= 8 ? tid / P : (tid / 32) * (32 / P) + q % D + (q / D) * D * Q + D * ((lane % 8) / P);
}
template <uint P> inline uint tile_piece(uint tid) { return tid % P; }
template <typename T, uint ROWS, uint COLS, uint STRIDE, uint N>
inline void fetch_tile(thread uint4* r, device const T* src, uint ld, uint tid) {
    constexpr uint P = COLS / VEC;
    static_assert(THREADS % P == 0 && (P >= 8 || 8 % P == 0), "a tile row is a whole number of 16-byte pieces per thread row");
    device const T* p = src + tile_row<P, STRIDE * sizeof(T)>(tid) * ld + tile_piece<P>(tid) * VEC;
    #pragma unroll
    for (uint c = 0; c < N; ++c)
        if (ROWS * P % THREADS == 0 || tid + c * THREADS < ROWS * P)
            r[c] = *(device const uint4*)(p + c * (THREADS / P) * ld);
}
// ... and into a threadgroup tile with rows of STRIDE elements.
template <typename T, uint ROWS, uint COLS, uint STRIDE, uint N>
inline void stash_tile(threadgroup T* dst, thread const uint4* r, uint tid) {
    constexpr uint P = COLS / VEC;
    threadgroup T* p = dst + tile_row<P, STRIDE * sizeof(T)>(tid) * STRIDE + tile_piece<P>(tid) * VEC;
    #pragma unroll
    for (uint c = 0; c < N; ++c)
        if (ROWS * P % THREADS == 0 || tid + c * THREADS < ROWS * P)
            *(threadgroup uint4*)(p + c * (THREADS / P) * STRIDE) = r[c];
}
// DIRECT_COPY: this thread's pieces of a tile straight from `src` into `dst` (on CUDA with
// METALCALL_ASYNC_COPIES=1, asynchronous copies that the next barrier waits for).
template <typename T, uint ROWS, uint COLS, uint STRIDE, uint N>
inline void copy_tile(threadgroup T* dst, device const T* src, uint ld, uint tid) {
    constexpr uint P = COLS / VEC;
    device const T* ps = src + tile_row<P, STRIDE * sizeof(T)>(tid) * ld + tile_piece<P>(tid) * VEC;
    threadgroup T* pd = dst + tile_row<P, STRIDE * sizeof(T)>(tid) * STRIDE + tile_piece<P>(tid) * VEC;
    #pragma unroll
    for (uint c = 0; c < N; ++c)
        if (ROWS * P % THREADS == 0 || tid + c * THREADS < ROWS * P)
            *(threadgroup uint4*)(pd + c * (THREADS / P) * STRIDE) = *(device const uint4*)(ps + c * (THREADS / P) * ld);
}

template <typename T>
kernel void sgm_gemm(device const T* A [[buffer(0)]], device const T* B [[buffer(1)]],
                     device CT* C [[buffer(2)]], constant uint4& dims [[buffer(3)]],
                     uint2 tg [[threadgroup_position_in_grid]], uint tid [[thread_index_in_threadgroup]],
                     uint sg [[simdgroup_index_in_threadgroup]]) {
    threadgroup uint4 tiles[STAGES * (BM * AS + KT * BS) * sizeof(T) / 16];  // uint4: 16-byte aligned
    threadgroup T* As = (threadgroup T*)tiles;  // [STAGES][BM][AS]
    threadgroup T* Bs = As + STAGES * BM * AS;  // [STAGES][KT][BS]
    const uint N = dims.y, K = dims.z;
    const uint row0 = tg.y * BM, col0 = tg.x * BN;
    const uint sr = (sg / SG_COLS) * FM * 8, sc = (sg % SG_COLS) * FN * 8;  // this SIMD-group's block
    device const T* a_src = A + row0 * K;
    device const T* b_src = B + col0;
    simdgroup_float8x8 acc[FM][FN];
    #pragma unroll
    for (uint i = 0; i < FM; ++i)
        #pragma unroll
        for (uint j = 0; j < FN; ++j) acc[i][j] = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
#if DIRECT_COPY
    static_assert(STAGES >= 2, "direct copies fill one stage while another is multiplied");
    copy_tile<T, BM, KT, AS, A_COPIES>(As, a_src, K, tid);
    copy_tile<T, KT, BN, BS, B_COPIES>(Bs, b_src, N, tid);
#else
    uint4 ra[A_COPIES], rb[B_COPIES];
    fetch_tile<T, BM, KT, AS, A_COPIES>(ra, a_src, K, tid);
    fetch_tile<T, KT, BN, BS, B_COPIES>(rb, b_src, N, tid);
#endif
#if PIPELINE
    // Software-pipelined by one K step (two per tile: 16 deep for half, 8 for float): each
    // step's fragments are read while the step before is multiplied, across the barriers
    // too (the next tile's first step is read as soon as the tile is in, while the last
    // step's products run), so the products need not wait for their loads and a compiler
    // may run products of registers across the barriers.
    static_assert(STAGES == 1 && !DIRECT_COPY && !COLUMN_ORDER && BK == 32 && FM % 2 == 0,
                  "the pipelined loop takes one stage of two K steps, A's blocks two rows at a time");
    threadgroup const T* as_sg = As + sr * AS;
    threadgroup const T* bs_sg = Bs + sc;
    simdgroup_matrix<T, 8, 8> a0[2][FM], b0[2][FN], a1[2][FM], b1[2][FN];
    stash_tile<T, BM, KT, AS, A_COPIES>(As, ra, tid);
    stash_tile<T, KT, BN, BS, B_COPIES>(Bs, rb, tid);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (KT < K) {
        fetch_tile<T, BM, KT, AS, A_COPIES>(ra, a_src + KT, K, tid);
        fetch_tile<T, KT, BN, BS, B_COPIES>(rb, b_src + KT * N, N, tid);
    }
LOAD_STEP(a0, b0, 0)
    for (uint k0 = 0; k0 + KT < K; k0 += KT) {
LOAD_STEP(a1, b1, 1)
PRODUCT_STEP(a0, b0)
        threadgroup_barrier(mem_flags::mem_threadgroup);  // all done reading the tiles
        stash_tile<T, BM, KT, AS, A_COPIES>(As, ra, tid);
        stash_tile<T, KT, BN, BS, B_COPIES>(Bs, rb, tid);
#if !FETCH_EARLY
        threadgroup_barrier(mem_flags::mem_threadgroup);
#endif
        if (k0 + 2 * KT < K) {
            fetch_tile<T, BM, KT, AS, A_COPIES>(ra, a_src + k0 + 2 * KT, K, tid);
            fetch_tile<T, KT, BN, BS, B_COPIES>(rb, b_src + (k0 + 2 * KT) * N, N, tid);
        }
#if FETCH_EARLY
        threadgroup_barrier(mem_flags::mem_threadgroup);
#endif
LOAD_STEP(a0, b0, 0)
PRODUCT_STEP(a1, b1)
    }
LOAD_STEP(a1, b1, 1)
PRODUCT_STEP(a0, b0)
PRODUCT_STEP(a1, b1)
#else
    for (uint k0 = 0, stage = 0; k0 < K; k0 += KT, stage = (stage + 1) % STAGES) {
        threadgroup T* as = As + stage * (BM * AS);
        threadgroup T* bs = Bs + stage * (KT * BS);
        // This SIMD-group's rows of the A tile and columns of the B tile: the 8x8 blocks
        // then lie at constant offsets from two addresses.
        threadgroup const T* as_sg = as + sr * AS;
        threadgroup const T* bs_sg = bs + sc;
#if DIRECT_COPY
        // This stage's tiles are in, and every SIMD-group is done with the stage the next
        // copies fill (it multiplied it before this barrier).
        threadgroup_barrier(mem_flags::mem_threadgroup);
        if (k0 + KT < K) {
            const uint next = (stage + 1) % STAGES;
            copy_tile<T, BM, KT, AS, A_COPIES>(As + next * (BM * AS), a_src + k0 + KT, K, tid);
            copy_tile<T, KT, BN, BS, B_COPIES>(Bs + next * (KT * BS), b_src + (k0 + KT) * N, N, tid);
        }
#else
        if (STAGES == 1 && k0 != 0) threadgroup_barrier(mem_flags::mem_threadgroup);  // all done with the tiles
        stash_tile<T, BM, KT, AS, A_COPIES>(as, ra, tid);
        stash_tile<T, KT, BN, BS, B_COPIES>(bs, rb, tid);
        threadgroup_barrier(mem_flags::mem_threadgroup);
        if (k0 + KT < K) {  // the next tiles, in flight while this stage is multiplied
            fetch_tile<T, BM, KT, AS, A_COPIES>(ra, a_src + k0 + KT, K, tid);
            fetch_tile<T, KT, BN, BS, B_COPIES>(rb, b_src + (k0 + KT) * N, N, tid);
        }
#endif
#if COLUMN_ORDER
        // All of this SIMD-group's A blocks of the stage, then one column of B blocks at a
        // time, each accumulator taking its KT / 8 products in a row.
        simdgroup_matrix<T, 8, 8> a[KT / 8][FM];
        #pragma unroll
        for (uint kk = 0; kk < KT / 8; ++kk)
            #pragma unroll
            for (uint i = 0; i < FM; ++i) simdgroup_load(a[kk][i], as_sg, AS, ulong2(8 * kk, 8 * i));
        #pragma unroll
        for (uint j = 0; j < FN; ++j) {
            simdgroup_matrix<T, 8, 8> b[KT / 8];
            #pragma unroll
            for (uint kk = 0; kk < KT / 8; ++kk) simdgroup_load(b[kk], bs_sg, BS, ulong2(8 * j, 8 * kk));
            #pragma unroll
            for (uint i = 0; i < FM; ++i)
                #pragma unroll
                for (uint kk = 0; kk < KT / 8; ++kk) simdgroup_multiply_accumulate(acc[i][j], a[kk][i], b[kk], acc[i][j]);
        }
#else
        // Then the 8-deep steps one after another, written out below (K_STEPS): a compiler
        // may leave a loop over them rolled when its body is large, and a rolled loop would
        // index the accumulators at run time.
K_STEPS
#endif
    }
#endif
#if C_HALF
    // A SIMD-group rounds its block 8 rows at a time: the 8 x (FN * 8) float strip goes
    // into its own part of the tiles' memory (rows padded by 8 floats, so that the lanes'
    // 8-byte stores of a block fall into different banks), and each lane takes four
    // floats of a row at a time: a row's lanes write whole 128-byte lines of half.
    constexpr uint CS = FN * 8 + 8;  // strip row length (floats)
    static_assert(SG_ROWS * SG_COLS * 8 * CS * 4 <= STAGES * (BM * AS + KT * BS) * sizeof(T),
                  "each SIMD-group's strip fits in the tiles' memory");
    threadgroup_barrier(mem_flags::mem_threadgroup);  // every SIMD-group is done with the tiles
    threadgroup float* strip = (threadgroup float*)tiles + sg * 8 * CS;
    const uint lane = tid % 32;
    #pragma unroll
    for (uint i = 0; i < FM; ++i) {
        #pragma unroll
        for (uint j = 0; j < FN; ++j) simdgroup_store(acc[i][j], strip, CS, ulong2(8 * j, 0));
        simdgroup_barrier(mem_flags::mem_threadgroup);
        #pragma unroll
        for (uint u = 0; u < (16 * FN + 31) / 32; ++u) {  // 8 rows of 2 * FN float4
            const uint v = 32 * u + lane, r = v / (2 * FN), q = v % (2 * FN);
            if (16 * FN % 32 == 0 || v < 16 * FN)
                *(device half4*)(C + (row0 + sr + 8 * i + r) * N + col0 + sc + 4 * q) =
                    half4(*(threadgroup const float4*)(strip + r * CS + 4 * q));
        }
        simdgroup_barrier(mem_flags::mem_threadgroup);  // the strip is read before it is overwritten
    }
#else
    #pragma unroll
    for (uint i = 0; i < FM; ++i)
        #pragma unroll
        for (uint j = 0; j < FN; ++j) simdgroup_store(acc[i][j], C, N, ulong2(col0 + sc + 8 * j, row0 + sr + 8 * i));
#endif
}
#if GEMM_FLOAT
template [[host_name("sgm_gemm_float")]] kernel void sgm_gemm<float>(device const float*, device const float*,
    device CT*, constant uint4&, uint2, uint, uint);
#endif
template [[host_name("sgm_gemm_half")]] kernel void sgm_gemm<half>(device const half*, device const half*,
    device CT*, constant uint4&, uint2, uint, uint);
"""

# A K step's fragments, {steps} 8-deep steps from element {k0} of the tile, into the arrays
# {a}[step][row] and {b}[step][column] (load nests in the order of the tensor cores'
# operands: two rows by two steps of A, two steps of B; on CUDA each nest reads four blocks
# at a time), and their products (one nest: for each step s, row i, column j).
LOADS = """        #pragma unroll
        for (uint p = 0; p < FM / 2; ++p)
            #pragma unroll
            for (uint s = 0; s < {steps}; ++s)
                #pragma unroll
                for (uint h = 0; h < 2; ++h) simdgroup_load({a}[s][2 * p + h], as_sg, AS, ulong2({k0} + 8 * s, 8 * (2 * p + h)));
        #pragma unroll
        for (uint j = 0; j < FN; ++j)
            #pragma unroll
            for (uint s = 0; s < {steps}; ++s) simdgroup_load({b}[s][j], bs_sg, BS, ulong2(8 * j, {k0} + 8 * s));
"""
PRODUCTS = """        #pragma unroll
        for (uint s = 0; s < {steps}; ++s)
            #pragma unroll
            for (uint i = 0; i < FM; ++i)
                #pragma unroll
                for (uint j = 0; j < FN; ++j) simdgroup_multiply_accumulate(acc[i][j], {a}[s][i], {b}[s][j], acc[i][j]);
"""


def k_step(kk):
    """The row order's K step from element kk of the tile (see LOADS) in its own block: two
    8-deep steps, kk = 0, 16, 32, 48 written out; steps at or past the tile depth KT fold
    away (a depth of 8, float tiles of BK 16, takes one step)."""
    steps = f"K_PAIR({kk})"
    return (f"        if ({kk} < KT) {{\n            simdgroup_matrix<T, 8, 8> a[2][FM], b[2][FN];\n"
            + textwrap.indent(LOADS.format(a="a", b="b", steps=steps, k0=kk)
                              + PRODUCTS.format(a="a", b="b", steps=steps), "    ") + "        }\n")


# PIPELINE=1: the two K steps of a tile, half its depth each (KT / 16 8-deep steps), step
# {half} into {a}, {b}, as LOAD_STEP(a, b, half) and PRODUCT_STEP(a, b) lines.
GEMM_SRC = re.sub(r"LOAD_STEP\((\w+), (\w+), (\d+)\)\n",
                  lambda m: LOADS.format(a=m[1], b=m[2], steps="KT / 16", k0=f"{m[3]} * KT / 2"), GEMM_SRC)
GEMM_SRC = re.sub(r"PRODUCT_STEP\((\w+), (\w+)\)\n",
                  lambda m: PRODUCTS.format(a=m[1], b=m[2], steps="KT / 16"), GEMM_SRC)
assert GEMM_SRC.count("K_STEPS\n") == 1
GEMM_SRC = GEMM_SRC.replace("K_STEPS\n", "        static_assert(KT <= 64 && FM % 2 == 0, "
                            "\"K steps are written out up to 64, A's blocks loaded two rows at a time\");\n"
                            + "".join(k_step(kk) for kk in range(0, 64, 16)))

# The ceiling of the 8x8x8 product itself: each SIMD-group runs 2 x 4 independent
# accumulators, each getting four products per step (as in a GEMM's K loop of 32 halves),
# on matrices that stay in registers, `iters` steps; in loop nests (PEAK_NESTS=1, a nest of
# steps, rows and columns: product_nest on CUDA) or one call at a time.
PEAK_SRC = """
#include <metal_stdlib>
using namespace metal;
#ifndef FT
#define FT half
#endif
kernel void sgm_peak(device const FT* src [[buffer(0)]], device float* out [[buffer(1)]],
                     constant uint& iters [[buffer(2)]], uint gid [[thread_position_in_grid]]) {
    simdgroup_matrix<FT, 8, 8> a[2], b[4];
    simdgroup_float8x8 acc[2][4];
    #pragma unroll
    for (uint i = 0; i < 2; ++i) simdgroup_load(a[i], src + 64 * i);
    #pragma unroll
    for (uint j = 0; j < 4; ++j) simdgroup_load(b[j], src + 128 + 64 * j);
    #pragma unroll
    for (uint i = 0; i < 2; ++i)
        #pragma unroll
        for (uint j = 0; j < 4; ++j) acc[i][j] = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
    for (uint it = 0; it < iters; ++it) {
#if PEAK_NESTS
        // two nests of 2 steps x 2 rows x 4 columns (as a GEMM's K step writes them)
        #pragma unroll
        for (uint s = 0; s < 2; ++s)
            #pragma unroll
            for (uint i = 0; i < 2; ++i)
                #pragma unroll
                for (uint j = 0; j < 4; ++j) simdgroup_multiply_accumulate(acc[i][j], a[(s + i) % 2], b[(j + s) % 4], acc[i][j]);
        #pragma unroll
        for (uint s = 0; s < 2; ++s)
            #pragma unroll
            for (uint i = 0; i < 2; ++i)
                #pragma unroll
                for (uint j = 0; j < 4; ++j) simdgroup_multiply_accumulate(acc[i][j], a[(s + i + 1) % 2], b[(j + s + 2) % 4], acc[i][j]);
#else
        #pragma unroll
        for (uint i = 0; i < 2; ++i)
            #pragma unroll
            for (uint j = 0; j < 4; ++j) {
                simdgroup_multiply_accumulate(acc[i][j], a[0], b[j], acc[i][j]);
                simdgroup_multiply_accumulate(acc[i][j], a[1], b[(j + i) % 4], acc[i][j]);
                simdgroup_multiply_accumulate(acc[i][j], a[1], b[(j + 1) % 4], acc[i][j]);
                simdgroup_multiply_accumulate(acc[i][j], a[0], b[(j + i + 2) % 4], acc[i][j]);
            }
#endif
    }
    #pragma unroll
    for (uint i = 0; i < 2; ++i)
        #pragma unroll
        for (uint j = 0; j < 4; ++j) simdgroup_store(acc[i][j], out + ((gid / 32) * 8 + i * 4 + j) * 64);
}
"""

# (SIMD-groups along M, along N, 8x8 tiles per SIMD-group along M, along N, BK: the tile
# depth for half, float tiles being half as deep). Tilings whose two stages need more than
# Apple's 32 KiB of threadgroup memory (tile_bytes) run with one stage (STAGES=1) where
# that fits, else not at all: the kernel would not run on a Mac.
DEFAULT_CONFIG = (2, 2, 4, 4, 32)
# On the CPU each SIMD-group's leader runs its products, so larger blocks a SIMD-group
# (fewer lanes, so fewer fiber switches at the barriers, per product) do best (a 2-core
# AMD EPYC VM, 1024^2: (1,2,8,8,32) 71, (2,2,4,4,32) 46 GFLOP/s).
CPU_CONFIGS = [(1, 2, 8, 8, 32), (1, 1, 8, 8, 32), (2, 2, 8, 8, 16), (2, 2, 4, 4, 32)]
APPLE_THREADGROUP_BYTES = 32 * 1024  # what an Apple GPU gives a threadgroup


def tile_bytes(config, itemsize, stages=2):
    """Threadgroup memory GEMM_SRC declares for a tiling, element size and stage count."""
    sg_rows, sg_cols, fm, fn, bk = config
    bm, bn, kt = sg_rows * fm * 8, sg_cols * fn * 8, bk * 2 // itemsize
    return stages * (bm * (kt + 8) + kt * (bn + 8)) * itemsize


# On CUDA: none spills in fp16 (sm_90, NVRTC 13.0; 8x8 tiles a SIMD-group take 240-246
# registers with product nests or row pairs, and spill with quads, whose accumulators hold
# twice the registers). The fastest on an H100, 299-328 TFLOP/s with C in half: (2, 4, 8, 8,
# 32) and (2, 2, 8, 8, 32) pipelined, then (2, 2, 8, 8, 32) in one stage (benchmarks/RESULTS.md).
CUDA_CONFIGS = [(2, 2, 8, 8, 32), (2, 4, 8, 8, 32), (1, 2, 8, 8, 32), (2, 2, 8, 4, 32), (2, 2, 4, 8, 32), (4, 2, 4, 4, 32),
                (2, 4, 4, 4, 32), (2, 2, 4, 4, 32), (4, 4, 4, 4, 16), (2, 2, 8, 8, 16), (4, 2, 8, 4, 16),
                (2, 4, 4, 8, 16), (2, 2, 8, 4, 16),
                (2, 2, 4, 8, 64), (4, 2, 4, 8, 32)]
# On CUDA, with half or bfloat factors, each tiling runs in the product modes of the
# prelude that MODES names (--modes picks others): by default product nests (the
# translator hands each K step's loop nest over rows, columns and steps to the prelude's
# product_nest, which puts two rows and two steps in one dense mma.m16n8k16) in the row
# order and in the column order (COLUMN_ORDER=1: all A blocks of a stage, then a column
# of B blocks at a time, a nest over rows and steps for each), and pipelined (PIPELINE=1:
# one stage, each K step's fragments read while the step before is multiplied; BK 32). With nests off
# (METALCALL_SGM_PRODUCT_NESTS=0), each call on its own: row pairs (the kernel's acc[i][j]
# neighbours share one sparse mma, two products each) in both orders, pairs (two products
# of one accumulator a dense mma) and quads (four a sparse mma, K steps of 4n products, so
# BK 32 or 64), those two in the column order. Row pairs in the column order only up to
# BK 32 (there deeper K steps give an accumulator more than four products in a row: far
# slower, docs/design.md); 8x8 accumulators a SIMD-group in the row order only. The CPU
# takes the row order.
NESTS_OFF = {"METALCALL_SGM_PRODUCT_NESTS": "0"}
ROW_PAIRS = {"METALCALL_SGM_ROW_PAIRS": "1", **NESTS_OFF}
QUADS = {"METALCALL_SGM_QUAD_PRODUCTS": "1", **NESTS_OFF}
COLUMNS = {"COLUMN_ORDER": "1"}
PIPELINED = {"PIPELINE": "1", "STAGES": "1"}
MODES = {"nests": {}, "nests, column order": COLUMNS, "nests, pipelined": PIPELINED, "row pairs": ROW_PAIRS,
         "row pairs, column order": {**COLUMNS, **ROW_PAIRS}, "pairs": {**COLUMNS, **NESTS_OFF},
         "quads": {**COLUMNS, **QUADS}}
DEFAULT_MODES = ["nests", "nests, column order", "nests, pipelined"]


def mode_fits(config, name):
    """Whether a tiling runs in a product mode (registers, K steps; see MODES)."""
    column_order = "column order" in name or name in ("pairs", "quads")
    if column_order and config[2] * config[3] > 32:
        return False  # 64 accumulators: only the row order fits the registers
    if name == "row pairs, column order" and config[4] > 32:
        return False
    if name == "nests, pipelined" and (config[4] != 32 or config[2] % 2):
        return False
    return name != "quads" or config[4] % 32 == 0


def variants(kind, configs, dtype, modes=None):
    """(tiling, defines, mode name) triples to try on a device kind with factors of `dtype`."""
    if kind != "cuda":
        return [(config, {}, "") for config in configs]
    if np.dtype(dtype).itemsize != 2:
        return [(config, dict(COLUMNS), "") for config in configs]
    return [(config, dict(MODES[name]), name) for config in configs for name in (modes or DEFAULT_MODES)
            if mode_fits(config, name)]


def variant_name(kind, config, defines, mode=""):
    """A variant as the printout names it: tiling, products' mode on CUDA, one stage."""
    name = f"{config} {mode}" if kind == "cuda" and mode else f"{config}"
    return name + (" (one stage)" if defines.get("STAGES") == "1" else "") + (" C half" if defines.get("C_HALF") == "1" else "")


def compile_gemm(dev, config=DEFAULT_CONFIG, extra=None, src=None):
    names = ("SG_ROWS", "SG_COLS", "FM", "FN", "BK")
    return dev.compile(src or GEMM_SRC, defines={**dict(zip(names, map(str, config))), **(extra or {})}), config


def gemm(dev, lib, a, b, c=None, config=DEFAULT_CONFIG, c_dtype=np.float32, wait=True):
    """Runs sgm_gemm on (M,K) x (K,N) arrays or Buffers; returns C (c_dtype: float16 for a
    kernel compiled with C_HALF=1); with wait=False, the call's Completion at once."""
    m, k = a.shape
    n = b.shape[1]
    sg_rows, sg_cols, fm, fn, bk = config
    bm, bn = sg_rows * fm * 8, sg_cols * fn * 8
    assert m % bm == 0 and n % bn == 0 and k % bk == 0, f"M, N must be multiples of {bm}, {bn} and K of {bk}"
    name = "sgm_gemm_half" if np.dtype(a.dtype) == np.float16 else "sgm_gemm_float"
    if c is None:
        c = np.zeros((m, n), c_dtype)
    dims = np.array([m, n, k, 0], np.uint32).tobytes()  # by value: no buffer to stage
    threads = 32 * sg_rows * sg_cols
    done = getattr(lib, name)((n // bn * threads, m // bm), a, b, c, dims, threadgroup=(threads, 1))
    if not wait:
        return done  # the call's Completion: queued, maybe still running
    done.wait()
    return c


def peak(dev, repeats, extra=None):
    """GFLOP/s of simdgroup_multiply_accumulate alone, float accumulators: half factors on
    CUDA (8 SIMD-groups a threadgroup), float on the CPU (one a threadgroup, so that they
    spread over the worker threads)."""
    cuda = dev.backend == "cuda"
    factor = np.float16 if cuda else np.float32
    nests = (extra or {}).get("METALCALL_SGM_PRODUCT_NESTS", "1") != "0"
    lib = dev.compile(PEAK_SRC, defines={**(extra or {}), "FT": "half" if cuda else "float",
                                         "PEAK_NESTS": "1" if nests else "0"})
    sgs = 8 if cuda else 1
    groups, iters = (132 * 16, 4096) if cuda else (16 * (os.cpu_count() or 1), 2000)
    src = dev.empty(6 * 64, factor)
    np.asarray(src)[...] = np.random.default_rng(2).standard_normal(6 * 64).astype(factor) * 0.01
    out = dev.empty(groups * sgs * 8 * 64, np.float32)
    run = lambda: lib.sgm_peak(groups * sgs * 32, src, out, np.uint32(iters), threadgroup=sgs * 32).wait()
    run()
    return 2.0 * 512 * 32 * iters * groups * sgs / best_time(run, repeats) / 1e9


# --parts: GEMM_SRC with one part taken out (the results are then wrong and not checked),
# to see where a tiling's time goes.
PARTS = {
    "no products": ["simdgroup_multiply_accumulate(acc[i][j], a[s][i], b[s][j], acc[i][j]);",
                    "simdgroup_multiply_accumulate(acc[i][j], a[kk][i], b[kk], acc[i][j]);",
                    "simdgroup_multiply_accumulate(acc[i][j], a0[s][i], b0[s][j], acc[i][j]);",
                    "simdgroup_multiply_accumulate(acc[i][j], a1[s][i], b1[s][j], acc[i][j]);"],
    "no tile fetches": ["fetch_tile<T, BM, KT, AS, A_COPIES>(ra, a_src + k0 + KT, K, tid);",
                        "fetch_tile<T, KT, BN, BS, B_COPIES>(rb, b_src + (k0 + KT) * N, N, tid);",
                        "fetch_tile<T, BM, KT, AS, A_COPIES>(ra, a_src + k0 + 2 * KT, K, tid);",
                        "fetch_tile<T, KT, BN, BS, B_COPIES>(rb, b_src + (k0 + 2 * KT) * N, N, tid);"],
    "no barrier": ["threadgroup_barrier(mem_flags::mem_threadgroup);"],
}


def parts(dev, a, b, c, config, repeats, extra=None):
    """Prints the time of the whole GEMM and of GEMM_SRC without each of PARTS."""
    m, k = a.shape
    flops = 2.0 * m * b.shape[1] * k
    for name, cut in [("whole", [])] + list(PARTS.items()):
        src = GEMM_SRC
        for text in cut:
            assert text in src, text
            src = src.replace(text, ";")  # every cut is a statement
        lib, _ = compile_gemm(dev, config, extra, src)
        gemm(dev, lib, a, b, c, config)
        t = best_time(functools.partial(gemm, dev, lib, a, b, c, config), repeats)
        print(f"  {dev.backend} {config} {name:<16} {t * 1e3:9.2f} ms  ({flops / t / 1e9:.1f} GFLOP/s)", flush=True)


def per_call(launch, finish, calls):
    """A function that makes `calls` calls back to back (launch() each) and then waits for
    the last (finish(what the last launch returned)): timed, it gives the rate of calls
    that keep the device busy, the launch cost hidden behind the run before."""
    def run():
        pending = [launch() for _ in range(calls)]
        finish(pending[-1])
    return run


def best_time(fn, repeats):
    return min(wall_time(fn) for _ in range(repeats))


def wall_time(fn):
    """Seconds of wall time one fn() takes."""
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def device_time(launch):
    """Seconds the GPU spent on one call (its Completion's gpu_time: a device opened with
    timing=True)."""
    done = launch()
    done.wait()
    return done.gpu_time


def cupy_device_time(cp, fn):
    """Seconds between CUDA events recorded around one fn() on CuPy's stream."""
    start, end = cp.cuda.Event(), cp.cuda.Event()
    start.record()
    fn()
    end.record()
    end.synchronize()
    return cp.cuda.get_elapsed_time(start, end) / 1e3


FLUSH_SRC = """
kernel void flush_l2(device uint4* p [[buffer(0)]], uint i [[thread_position_in_grid]]) { p[i] = uint4(i); }
"""


def l2_flusher(dev, nbytes=512 << 20):
    """A function that writes `nbytes` (more than any GPU's L2 cache holds) on `dev` and
    waits: whatever a timing runs after it finds none of its data in the cache."""
    junk = dev.empty(nbytes // 4, np.uint32)
    kernel = dev.compile(FLUSH_SRC).flush_l2
    return lambda: kernel(nbytes // 16, junk).wait()


def after(first, timing):
    """timing(), run after first() (not timed)."""
    def run():
        first()
        return timing()
    return run


def interleaved(ours, theirs, rounds):
    """`rounds` timings of each, taken in turn (one of ours, one of theirs), so that both
    meet the same clocks and temperatures of the device."""
    times = [(ours(), theirs()) for _ in range(rounds)]
    return [t[0] for t in times], [t[1] for t in times]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default=None, help="cpu or cuda (default: every one present)")
    ap.add_argument("--size", type=int, default=None, help="square size (default: cpu 512, cuda 4096)")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--configs", default=None, help="tilings to try, e.g. '2,2,4,8,32;4,2,4,8,32'")
    ap.add_argument("--modes", help="CUDA: these product modes, e.g. 'nests;row pairs' (" + ", ".join(MODES) +
                    "; default: " + ", ".join(DEFAULT_MODES) + ")")
    ap.add_argument("--repeats", type=int, default=None,
                    help="timings per variant and reference, the minimum kept (default: cpu 5, cuda 20)")
    ap.add_argument("--calls", type=int, default=1,
                    help="calls a timing, back to back (one wait at the end; both libraries): "
                         "1 times each call with its launch and wait, more the rate of a busy device")
    ap.add_argument("--clock", default="wall", choices=["wall", "device"],
                    help="CUDA: wall time of each call with its launch and wait (default), or the GPU's "
                         "time (our calls' gpu_time, CUDA events around CuPy's)")
    ap.add_argument("--cold-l2", action="store_true",
                    help="before each timing (ours and the reference), write 512 MiB on the device, so that "
                         "neither finds its matrices in the L2 cache from the call before; the ratio then "
                         "comes from the two timed in turn. Meant for GPUs: on the CPU the flush leaves "
                         "NumPy's BLAS threads idle before each of its calls, which slows its median")
    ap.add_argument("--peak", action="store_true", help="also time simdgroup_multiply_accumulate alone")
    ap.add_argument("--parts", action="store_true",
                    help="also time the best tiling without its products, tile fetches or barrier")
    ap.add_argument("--cuda-dtype", default="float16", choices=["float16", "float32"],
                    help="the factors' type on CUDA (float32: exact fp32 products, or TF32 with "
                         "--define METALCALL_SGM_TF32=1; the reference is then CuPy's fp32 matmul)")
    ap.add_argument("--define", action="append", default=[], metavar="NAME=VALUE",
                    help="a macro for the kernels, e.g. METALCALL_SGM_PAIR_PRODUCTS=0 (CUDA: one mma per product)")
    args = ap.parse_args()
    if args.clock == "device" and args.calls != 1:
        ap.error("--clock device times one call at a time: leave out --calls")
    extra = dict(d.split("=", 1) for d in args.define)
    kinds = [args.device] if args.device else [d.backend for d in mc.get_devices() if d.backend in ("cpu", "cuda")]
    rng = np.random.default_rng(1)
    lines = []
    for kind in dict.fromkeys(kinds):
        device_clock = kind == "cuda" and args.clock == "device"
        dev = mc.Device(kind, timing=device_clock)
        flush = l2_flusher(dev) if args.cold_l2 else None
        # Minimum of repeats: a GPU's rate moves with its clock between calls (CuPy's best
        # of 5 ranged over 600-695 TFLOP/s on one H100), so more there, for both libraries.
        repeats = args.repeats or (2 if args.quick else 20 if kind == "cuda" else 5)
        n = args.size or (256 if args.quick else 512) if kind == "cpu" else (args.size or 4096)
        dtype = np.float32 if kind == "cpu" else np.dtype(args.cuda_dtype).type
        a_np = rng.standard_normal((n, n)).astype(dtype)
        b_np = rng.standard_normal((n, n)).astype(dtype)
        a, b = dev.empty((n, n), dtype), dev.empty((n, n), dtype)
        np.asarray(a)[...] = a_np
        np.asarray(b)[...] = b_np
        outs = {}  # C for each output type (float; half with C_HALF=1), made on first use
        expect = a_np.astype(np.float64) @ b_np.astype(np.float64)
        if args.configs:
            configs = [tuple(int(x) for x in cfg.split(",")) for cfg in args.configs.split(";")]
        else:
            configs = CUDA_CONFIGS if kind == "cuda" else CPU_CONFIGS
        t, best, best_defines, best_mode = float("inf"), None, {}, ""
        modes = args.modes.split(";") if args.modes else None
        for config, defines, mode in variants(kind, configs, dtype, modes):
            defines = {**defines, **extra}
            itemsize = np.dtype(dtype).itemsize
            if "STAGES" not in defines and tile_bytes(config, itemsize) > APPLE_THREADGROUP_BYTES >= tile_bytes(
                    config, itemsize, 1):
                defines = {**defines, "STAGES": "1"}
            if kind == "cuda" and itemsize == 2:  # C in half, as CuPy's fp16 matmul writes it
                defines = {"C_HALF": "1", **defines, "GEMM_FLOAT": "0"}
            name = variant_name(kind, config, defines, mode)
            need = tile_bytes(config, itemsize, int(defines.get("STAGES", 2)))
            if need > APPLE_THREADGROUP_BYTES:  # the kernel would not run on a Mac
                print(f"  {kind} {name}: not run: {need} bytes of threadgroup memory, "
                      f"more than Apple's {APPLE_THREADGROUP_BYTES}", flush=True)
                continue
            c_type = np.float16 if defines.get("C_HALF") == "1" else np.float32
            if c_type not in outs:
                outs[c_type] = dev.empty((n, n), c_type)
            c = outs[c_type]
            try:  # a tiling the device cannot take (registers, shared memory) is skipped
                lib, _ = compile_gemm(dev, config, defines)
                np.asarray(c)[...] = np.nan  # every element must be written
                gemm(dev, lib, a, b, c, config)
            except mc.Error as e:
                print(f"  {kind} {name}: not run: {str(e).splitlines()[0]}", flush=True)
                continue
            err = np.abs(np.asarray(c) - expect).max() / np.abs(expect).max()
            assert err < 1e-3, f"{kind}: GEMM {name} is wrong (max relative error {err:.2e})"
            print(f"  {kind} {name}: max error {err:.2e} of the largest |C|", flush=True)
            launch = functools.partial(gemm, dev, lib, a, b, c, config, wait=False)
            if device_clock:
                once = functools.partial(device_time, launch)
            else:
                once = functools.partial(wall_time, per_call(launch, lambda done: done.wait(), args.calls))
            if flush:
                once = after(flush, once)
            tc = min(once() for _ in range(repeats)) / args.calls
            print(f"  {kind} {name}: {2.0 * n ** 3 / tc / 1e9:.1f} GFLOP/s", flush=True)
            if tc < t:
                t, best, best_defines, best_mode, best_c, best_once = tc, config, defines, mode, c, once
        flops = 2.0 * n ** 3
        if best is None:
            lines.append(f"{kind:<8} {np.dtype(dtype).name:<8} {n:>6} {'(no tiling ran)':>18}")
            continue
        best_name = variant_name(kind, best, best_defines, best_mode)
        if args.parts:
            parts(dev, a, b, best_c, best, repeats, best_defines)
        if args.peak:
            factor = "float16" if kind == "cuda" else "float32"
            lines.append(f"{kind:<8} {factor:<8} {'8x8x8':>6} {peak(dev, repeats, best_defines):>18.1f}"
                         f"   (simdgroup_multiply_accumulate alone, matrices that stay put)")
        if kind == "cuda":
            try:
                import cupy as cp  # the reference on the GPU
            except ImportError:
                lines.append(f"{kind:<8} {np.dtype(dtype).name:<8} {n:>6} {flops / t / 1e9:>18.1f} {'(no cupy)':>12}")
                continue
            ga, gb = cp.asarray(a_np), cp.asarray(b_np)
            cp.matmul(ga, gb)
            cp.cuda.Device().synchronize()
            if device_clock:
                ref_once = functools.partial(cupy_device_time, cp, functools.partial(cp.matmul, ga, gb))
            else:
                ref_once = functools.partial(wall_time, per_call(functools.partial(cp.matmul, ga, gb),
                                                                 lambda _: cp.cuda.Device().synchronize(), args.calls))
            ref_name = "cupy"
        else:
            ref_once = functools.partial(wall_time, per_call(functools.partial(np.matmul, a_np, b_np),
                                                             lambda _: None, args.calls))
            ref_name = "numpy"
        # For the ratio, the best tiling and the reference timed again: each back to back
        # (a GPU-bound call after a call of its own), or with --cold-l2 in turn (each after
        # the flush). Not in turn without the flush: cuBLAS's kernel runs up to 25% slower
        # on a GPU that idled the instant before (benchmarks/RESULTS.md).
        if flush:
            ts, trs = interleaved(best_once, after(flush, ref_once), repeats)
        else:
            ts, trs = [best_once() for _ in range(repeats)], [ref_once() for _ in range(repeats)]
        ours, theirs = flops * args.calls / min(ts) / 1e9, flops * args.calls / min(trs) / 1e9
        medians_ratio = np.median(trs) / np.median(ts)
        clock = ("device" if device_clock else "wall") + (", cold L2, timed in turn" if flush else "")
        lines.append(f"{kind:<8} {np.dtype(dtype).name:<8} {n:>6} {ours:>18.1f} {ref_name:>12} {theirs:>12.1f}"
                     f" {ours / theirs:>7.3f}  (tiles {best_name}; medians' ratio {medians_ratio:.3f}; clock: {clock})")
    print(f"{'device':<8} {'dtype':<8} {'size':>6} {'metalcall GFLOP/s':>18} {'reference':>12} {'ref GFLOP/s':>12} {'ratio':>7}")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
