// expect: leading 1|mtl_swz code
#include "metal_stdlib.h"
mtl_float2 f(mtl_float4 v) { return v.template mtl_swz<23>(); }  // missing the leading 1
