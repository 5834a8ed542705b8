// expect: beyond the vector's length
#include "metal_stdlib.h"
mtl_float2 f(mtl_float2 v) { return v.template mtl_swizzle<0, 2>(); }  // v.xz on a float2
