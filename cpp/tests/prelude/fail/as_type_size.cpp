// expect: same size
#include "metal_stdlib.h"
float f(short s) { return metal::as_type<float>(s); }
