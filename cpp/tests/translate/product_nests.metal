// Loop nests the CUDA translation hands to the prelude whole (msl/passes/product_nests.hpp): nests
// of products marked NEST (product_nest) and of loads marked LOADS (load_nest), and nests
// it leaves as written, marked KEEP with the reason.
#include <metal_stdlib>
using namespace metal;

inline uint twice(uint i) { return 2 * i; }

kernel void nests(device const half* in [[buffer(0)]], device float* out [[buffer(1)]]) {
    threadgroup half tile[64 * 32];
    simdgroup_half8x8 a[2][2], b[2][4], c[4];
    simdgroup_float8x8 acc[2][4], flat[4];
    #pragma unroll
    for (uint s = 0; s < 2; ++s)
        #pragma unroll
        for (uint i = 0; i < 2; ++i) simdgroup_load(a[s][i], tile, 32, ulong2(8 * s, 8 * i));  // LOADS
    for (uint j = 0; j < 4; ++j) {
        for (uint s = 0; s < 2; ++s) { simdgroup_load(b[s][j], in + 64 * (4 * s + j)); }  // LOADS
    }
    for (uint i = 0; i < 2; ++i)
        for (uint j = 0; j < 4; ++j) acc[i][j] = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
    for (uint i = 0; i < 4; ++i) flat[i] = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
    // step, row, column
    #pragma unroll
    for (uint s = 0; s < 2; ++s)
        #pragma unroll
        for (uint i = 0; i < 2; ++i)
            #pragma unroll
            for (uint j = 0; j < 4; ++j) simdgroup_multiply_accumulate(acc[i][j], a[s][i], b[s][j], acc[i][j]);  // NEST
    // row, step (the column order of a GEMM), inside a loop over the columns with a load
    for (uint j = 0; j < 4; ++j) {
        simdgroup_load(c[j], in + 64 * j);
        for (uint i = 0; i < 2; ++i) {
            for (int s = 0; s < 2; s++) simdgroup_multiply_accumulate(acc[i][j], a[s][i], b[s][j], acc[i][j]);  // NEST
        }
    }
    // rows only
    for (uint i = 0; i < 4; ++i) simdgroup_multiply_accumulate(flat[i], c[i], b[0][1], flat[i]);  // NEST
    for (uint i = 0; i < 2; ++i)
        for (uint j = 0; j < i + 1; ++j) simdgroup_multiply_accumulate(acc[i][j], a[0][i], b[0][j], acc[i][j]);  // KEEP: a bound names i
    for (uint i = 0; i < 2; ++i)
        for (uint j = 0; j < 2; ++j) simdgroup_multiply_accumulate(acc[i][j], a[0][i + j - j], b[0][j], acc[i][j]);  // KEEP: a names the column
    for (uint i = 0; i < 2; ++i)
        for (uint j = 0; j < 2; ++j) simdgroup_multiply_accumulate(acc[i][j + 1], a[0][i], b[0][j], acc[i][j + 1]);  // KEEP: j + 1 as a subscript
    for (uint i = 0; i < 2; ++i)
        for (uint j = 0; j < 2; ++j) simdgroup_multiply_accumulate(acc[i][j], a[0][twice(i) / 2], b[0][j], acc[i][j]);  // KEEP: a call in a
    for (uint j = 0; j < 4; ++j)
        for (uint s = 0; s < 2; ++s) simdgroup_multiply_accumulate(acc[0][j], a[s][0], b[s][j], acc[0][j]);  // KEEP: no row
    uint k = 0;
    for (k = 0; k < 4; ++k) simdgroup_multiply_accumulate(flat[k], c[k], b[0][0], flat[k]);  // KEEP: k outlives the loop
    for (uint i = 0; i < 4; ++i) {
        simdgroup_multiply_accumulate(flat[i], c[i], b[0][0], flat[i]);  // KEEP: two statements
        simdgroup_multiply_accumulate(flat[i], c[i], b[0][1], flat[i]);
    }
    for (uint i = 0; i < 4; ++i) simdgroup_load(c[i], tile + twice(i));  // KEEP: a call in an argument
    for (uint i = 0; i < 2; ++i)
        for (uint j = 0; j < 4; ++j) simdgroup_store(acc[i][j], out + 64 * (4 * i + j));
    for (uint i = 0; i < 4; ++i) simdgroup_store(flat[i], out + 512 + 64 * i);
}
