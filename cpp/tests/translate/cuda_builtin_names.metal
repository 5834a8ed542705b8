// A user's names that NVRTC declares globally (its builtin variables, dim3, y0): each is the user's
// own in MSL, so the CUDA translation spells it mtl_user_<name> (check_translations.py), also where
// a prelude part's CUDA code once spelled the builtin (metal_poison.h's threadIdx, 2026-12-06).
#include <metal_stdlib>
using namespace metal;

struct threadIdx { float v; };
struct blockDim { int w; };
namespace fn {
float blockIdx(float v) { return v + 1.0f; }
float gridDim(float v) { return v * 2.0f; }
}
constant float y0 = 3.0f;

kernel void dim3(device threadIdx* a [[buffer(0)]], device blockDim* b [[buffer(1)]],
                 threadgroup float* scratch [[threadgroup(0)]],
                 uint i [[thread_position_in_grid]], uint l [[thread_position_in_threadgroup]]) {
  scratch[l] = fn::blockIdx(a[i].v);
  threadgroup_barrier(mem_flags::mem_threadgroup);
  a[i].v = fn::gridDim(scratch[l]) + y0 + float(b[i].w);
}
