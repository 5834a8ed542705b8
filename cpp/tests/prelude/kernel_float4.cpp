// A small translated kernel (the shape the translator emits) for the
// compile-time budget: g++ -std=c++17 -O2 -shared -fPIC must stay well under 0.3 s.
#include "metal_stdlib.h"
using namespace metal;

static void saxpy4(const mtl_float4* x, mtl_float4* y, const float& a, mtl_uint gid) {
  mtl_float4 v = x[gid] * a + y[gid];
  v.template mtl_swizzle_ref<0, 1>() = v.template mtl_swizzle<1, 0>();
  y[gid] = clamp(v, 0.0f, 1.0f) + normalize(v) * length(v.template mtl_swizzle<0, 1, 2>());
}

extern "C" void metalcall_entry(const mtl_float4* x, mtl_float4* y, const float* a, unsigned int begin,
                                unsigned int end) {
  for (unsigned int i = begin; i < end; ++i) saxpy4(x, y, *a, mtl_uint(i));
}
