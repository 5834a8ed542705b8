// Branch bodies holding a threadgroup barrier (msl/passes/branch_reconvergence.hpp): which ones the
// CUDA translation rejoins at their end (marked REJOIN) and which it leaves alone (KEEP).
#include <metal_stdlib>
using namespace metal;

kernel void barrier_branches(device float* out [[buffer(0)]], constant int& n [[buffer(1)]],
                             uint lid [[thread_position_in_threadgroup]]) {
    threadgroup float t[64];
    float r = 0.0f;
    if (int(lid) < n) {  // REJOIN: a barrier at the top level and one in a for loop
        t[lid] = 1.0f;
        threadgroup_barrier(mem_flags::mem_threadgroup);
        for (int k = 0; k < 4; ++k) {
            threadgroup_barrier(mem_flags::mem_none);
            r += t[(lid + k) % 64];
        }
    } else {  // REJOIN: the else branch too
        threadgroup_barrier(mem_flags::mem_threadgroup);
    }
    if (lid < 32) {  // KEEP: its barrier sits in a nested if ...
        if (lid < 16) { threadgroup_barrier(mem_flags::mem_none); }  // REJOIN: ... whose own body qualifies
    }
    if (lid < 8) {  // KEEP: a lane may leave early
        if (r > 2.0f) return;
        threadgroup_barrier(mem_flags::mem_none);
    }
    if (lid < 4) {  // KEEP: no barrier
        r += 1.0f;
    }
    out[lid] = r;
}
