// Host side of the cross-backend check: prints the values of cross_body.inc.
#include "metal_matrix.h"
#include "metal_integer.h"
#include "cross_body.inc"
#include <cstdio>

int main() {
  float out[512];
  const int n = prelude_cross_body(out, 0.5f);
  for (int k = 0; k < n; ++k) std::printf("%.9g\n", out[k]);
  return 0;
}
