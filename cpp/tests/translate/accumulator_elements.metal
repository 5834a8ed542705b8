// Calls the CUDA translation sends to multiply_accumulate_element with the whole array
// (msl/passes/accumulator_elements.hpp), marked PAIRED, and calls it leaves alone, marked KEEP.
#include <metal_stdlib>
using namespace metal;

struct tile {
    simdgroup_float8x8 acc[2];
};

inline uint twice(uint i) { return 2 * i; }

kernel void accumulate(device const half* in [[buffer(0)]], device float* out [[buffer(1)]],
                       uint lane [[thread_index_in_simdgroup]]) {
    simdgroup_half8x8 a[2], b[2];
    simdgroup_load(a[0], in);
    simdgroup_load(a[1], in + 64);
    simdgroup_load(b[0], in + 128);
    simdgroup_load(b[1], in + 192);
    simdgroup_float8x8 acc[2][2], flat[4], single;
    tile t;
    for (uint i = 0; i < 2; ++i)
        for (uint j = 0; j < 2; ++j) acc[i][j] = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
    for (uint i = 0; i < 4; ++i) flat[i] = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
    single = t.acc[0] = t.acc[1] = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
    for (uint i = 2; i-- > 0;)  // (a loop counting down: not a product nest, product_nests.hpp)
        for (uint j = 0; j < 2; ++j) simdgroup_multiply_accumulate(acc[i][j], a[i], b[j], acc[i][j]);  // PAIRED
    metal::simdgroup_multiply_accumulate(flat[1 + 2], a[0], b[1], flat[1 + 2]);  // PAIRED
    simdgroup_multiply_accumulate(flat[(lane / 32) * 2], a[1], b[0], flat[(lane / 32) * 2]);  // PAIRED: an index known at run time
    simdgroup_multiply_accumulate(flat[0], a[0], b[0], flat[1]);  // KEEP: another element as C
    uint k = 0;
    simdgroup_multiply_accumulate(flat[k++], a[0], b[0], flat[k++]);  // KEEP: the index changes k
    simdgroup_multiply_accumulate(flat[twice(k)], a[0], b[0], flat[twice(k)]);  // KEEP: a call in the index
    simdgroup_multiply_accumulate(single, a[0], b[0], single);  // KEEP: no array
    simdgroup_multiply_accumulate(t.acc[0], a[0], b[0], t.acc[0]);  // KEEP: a member
    for (uint i = 0; i < 2; ++i)
        for (uint j = 0; j < 2; ++j) simdgroup_store(acc[i][j], out + 64 * (2 * i + j));
    for (uint i = 0; i < 4; ++i) simdgroup_store(flat[i], out + 256 + 64 * i);
    simdgroup_store(single, out + 512);
    simdgroup_store(t.acc[0], out + 576);
}
