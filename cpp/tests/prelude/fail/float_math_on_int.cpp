// expect: sin
#include "metal_stdlib.h"
mtl_int2 f(mtl_int2 v) { return metal::sin(v); }
