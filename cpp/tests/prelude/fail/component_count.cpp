// expect: mtl_vector
#include "metal_stdlib.h"
mtl_float4 f(float x) { return mtl_float4(x, x, x); }
