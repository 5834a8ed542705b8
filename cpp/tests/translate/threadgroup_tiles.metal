// A K step of a GEMM over padded threadgroup tiles, as benchmarks/bench_simdgroup_gemm.py
// writes it: on CUDA (sm_75+) the B layouts of its 16-bit blocks come from ldmatrix, and the
// prelude's test for that (shared memory, 16-byte aligned rows) folds away, as the compiler
// knows the tile (check_translations.py reads the PTX).
#include <metal_stdlib>
using namespace metal;

constant constexpr uint AS = 40;  // rows of 32 halves padded by 8: 80 bytes
constant constexpr uint BS = 72;  // rows of 64 halves padded by 8: 144 bytes

kernel void k_step(device const half* a_in [[buffer(0)]], device float* out [[buffer(1)]], uint tid [[thread_index_in_threadgroup]],
                   uint sg [[simdgroup_index_in_threadgroup]]) {
    threadgroup uint4 tiles[(32 * AS + 32 * BS) * 2 / 16];  // uint4: 16-byte aligned
    threadgroup half* as = (threadgroup half*)tiles;
    threadgroup half* bs = as + 32 * AS;
    #pragma unroll
    for (uint c = 0; c < 7; ++c) tiles[tid + 64 * c] = ((device const uint4*)a_in)[tid + 64 * c];  // 448 pieces
    threadgroup_barrier(mem_flags::mem_threadgroup);
    threadgroup const half* bs_sg = bs + sg * 32;
    simdgroup_float8x8 acc[4][4];
    #pragma unroll
    for (uint i = 0; i < 4; ++i)
        #pragma unroll
        for (uint j = 0; j < 4; ++j) acc[i][j] = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
    #pragma unroll
    for (uint kk = 0; kk < 32; kk += 8) {
        simdgroup_half8x8 a[4], b[4];
        #pragma unroll
        for (uint i = 0; i < 4; ++i) simdgroup_load(a[i], as, AS, ulong2(kk, 8 * i));
        #pragma unroll
        for (uint j = 0; j < 4; ++j) simdgroup_load(b[j], bs_sg, BS, ulong2(8 * j, kk));
        #pragma unroll
        for (uint i = 0; i < 4; ++i)
            #pragma unroll
            for (uint j = 0; j < 4; ++j) simdgroup_multiply_accumulate(acc[i][j], a[i], b[j], acc[i][j]);
    }
    #pragma unroll
    for (uint i = 0; i < 4; ++i)
        #pragma unroll
        for (uint j = 0; j < 4; ++j) simdgroup_store(acc[i][j], out, 64, ulong2(sg * 32 + 8 * j, 8 * i));
}
