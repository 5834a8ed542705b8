// Copies the CUDA translation hands to the prelude's mtl_async_copy (msl/passes/async_copies.hpp),
// marked ASYNC, and statements it leaves alone, marked KEEP.
#include <metal_stdlib>
using namespace metal;

kernel void copies(device const uint4* in [[buffer(0)]], device uint4* out [[buffer(1)]],
                   device float* f [[buffer(2)]], uint tid [[thread_position_in_threadgroup]]) {
    threadgroup uint4 tile[64];
    threadgroup float scalars[64];
    *(threadgroup uint4*)(tile + tid) = *(device const uint4*)(in + tid);  // ASYNC
    if (tid < 32) *(threadgroup float*)(scalars + tid) = *(device float*)(f + tid);  // ASYNC
    for (uint i = 0; i < 1; ++i)
        *(threadgroup uint4*)(&tile[(tid + 1) % 64]) = *(device const uint4*)(&in[64 + tid]);  // ASYNC
    *(threadgroup float*)(scalars + tid) = *(device const uint*)(in + tid);  // KEEP: another type
    *(device uint4*)(out + tid) = *(threadgroup uint4*)(tile + tid);  // KEEP: threadgroup to device
    tile[tid] = in[tid];  // KEEP: no casts
    scalars[tid] = 2.0f * *(device float*)(f + tid);  // KEEP: not a copy
    threadgroup_barrier(mem_flags::mem_threadgroup);
    out[tid] = tile[tid] + uint4(uint(scalars[tid]));
}
