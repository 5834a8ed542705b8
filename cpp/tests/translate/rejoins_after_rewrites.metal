// Rejoins the CUDA translation must write (msl/passes/simd_reconvergence.hpp): each statement
// marked REJOIN is followed by `metal::mtl_rt::rejoin(...)` before the next one, since code after
// it calls a SIMD-group function: a block holding a loop whose trip count differs between lanes,
// and a switch written as guarded blocks (msl/passes/switch_fall_through.hpp), whose last block
// is run by part of the lanes.
#include <metal_stdlib>
using namespace metal;

kernel void k(device int* out [[buffer(0)]], device const int* x [[buffer(1)]],
              uint gid [[thread_position_in_grid]], uint sgid [[simdgroup_index_in_threadgroup]]) {
    int y = 0;
    {  // REJOIN
        uint i1 = 2u;
        while (i1 < (uint(x[gid]) & 7u)) { i1 += 1; }
    }
    out[gid] = 1;
    switch (sgid & 3u) {  // REJOIN
    case 0:
    case 1:
    {
        if (x[gid] > 0) { y = simd_sum(1); }
    }
        break;
    default:
    {
    }
    }
    out[gid] = y + simd_sum(2);
}

// No rejoin after a branch holding a barrier that lanes skip, nor after the statements that follow
// it (test_divergent_barriers.py): the lanes held at the barrier wait for those that skipped it.
kernel void after_barrier_branch(device const float* x [[buffer(0)]], device float* out [[buffer(1)]],
                                 uint sg [[simdgroup_index_in_threadgroup]], uint sl [[thread_index_in_simdgroup]]) {
    threadgroup float partial[2][32];
    float v = sl < 20u ? x[sl] : 0.0f;  // REJOIN
    v += simd_shuffle_down(v, 1);
    if (sl % 2 == 0) {
        partial[sg][sl] = v;
        threadgroup_barrier(mem_flags::mem_threadgroup);
    }
    float s = (sg == 0 && sl % 2 == 0) ? partial[0][sl] : 0.0f;
    if (s > 1.0f) { s = 1.0f; }
    out[sl] = s + simd_sum(s);
}

// Likewise where the branch holding the barrier lies in a loop of the block.
kernel void after_barrier_branch_in_loop(device const float* x [[buffer(0)]], device float* out [[buffer(1)]],
                                         uint sl [[thread_index_in_simdgroup]]) {
    threadgroup float partial[32];
    float v = 0.0f;
    for (uint k = 0; k < 4u; ++k) {
        if (sl % 2 == 0) {
            partial[sl] = x[k * 32u + sl];
            threadgroup_barrier(mem_flags::mem_threadgroup);
            v += partial[sl ^ 2u];
        }
    }
    float s = sl < 7u ? v : 0.0f;
    out[sl] = s + simd_sum(s);
}
