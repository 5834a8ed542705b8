// expect: operator\+|invalid operands
#include "metal_stdlib.h"
mtl_float4 f(mtl_float4 a, mtl_int4 b) { return a + b; }
