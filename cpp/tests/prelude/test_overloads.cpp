// Contract point 2: with `using namespace metal;`, unqualified sin(x), max(a, b),
// abs(i), min(a, b) must not be ambiguous with global overloads. On the host
// <math.h>/<stdlib.h> put sin(float), abs(int), isnan(float) ... in the global
// namespace; NVRTC adds max(int, int), min(float, float) and friends. Both are
// simulated here, before and after the prelude, as they would be seen.
#include <math.h>
#include <stdlib.h>

// What CUDA's headers declare globally (host definitions stand in).
int max(int a, int b) { return a > b ? a : b; }
unsigned int max(unsigned int a, unsigned int b) { return a > b ? a : b; }
float max(float a, float b) { return fmaxf(a, b); }
int min(int a, int b) { return a < b ? a : b; }
float min(float a, float b) { return fminf(a, b); }

#include "metal_stdlib.h"
#include "check.h"

#include <type_traits>

using namespace metal;

// A user helper with a name MSL also uses must still be callable.
static float saturate_user(float x) { return x < 0 ? 0 : (x > 1 ? 1 : x); }

int main() {
  float x = 0.5f;
  mtl_half h = mtl_half(0.5f);
  int i = -3;
  mtl_uint u = 7;

  CHECK(sin(x) == sinf(x));  // global sin(float) wins the tie, same result
  static_assert(std::is_same<decltype(sin(x)), float>::value, "sin(float) is float");
  CHECK(float(sin(h)) == float(mtl_half(sinf(0.5f))));  // metal's half overload
  static_assert(std::is_same<decltype(sin(h)), mtl_half>::value, "sin(half) is half");
  CHECK(cos(x) == cosf(x) && sqrt(x) == sqrtf(x) && exp(x) == expf(x) && pow(x, 2.0f) == powf(x, 2.0f));
  CHECK(fabs(-x) == x && floor(1.5f) == 1.0f && fmin(x, 1.0f) == x && fmax(x, 1.0f) == 1.0f);
  CHECK(abs(i) == 3 && abs(-2.5f) == 2.5f);
  CHECK(max(i, 2) == 2 && min(i, 2) == -3 && max(u, 9u) == 9u);
  CHECK(max(x, 0.25f) == x && min(x, 0.25f) == 0.25f);
  CHECK(max(x, 1) == 1.0f && min(x, 0.0) == 0.0f);  // mixed: metal's template wins (exact)
  CHECK(clamp(x, 0.0f, 0.25f) == 0.25f && clamp(i, 0, 5) == 0);
  CHECK(isnan(NAN) && !isnan(x) && isinf(INFINITY) && isfinite(x) && !signbit(x));
  CHECK(round(2.5f) == 3.0f && trunc(-1.5f) == -1.0f && fmod(5.0f, 3.0f) == 2.0f);
  CHECK(atan2(1.0f, 1.0f) == atan2f(1.0f, 1.0f) && ldexp(1.0f, 3) == 8.0f);
  int e = 0;
  CHECK(frexp(8.0f, &e) == 0.5f && e == 4);  // libm's pointer form is still there
  CHECK(saturate(1.5f) == 1.0f && saturate_user(-1.0f) == 0.0f);

  // Vectors always go to metal::, found also without `using namespace` (ADL).
  mtl_float2 v = mtl_float2(0.25f, 4.0f);
  CHECK(same_vec(metal::sqrt(v), mtl_float2(0.5f, 2.0f), 2) && same_vec(sqrt(v), mtl_float2(0.5f, 2.0f), 2));
  CHECK(same_vec(max(v, 1.0f), mtl_float2(1.0f, 4.0f), 2) && same_vec(min(mtl_int2(1, 5), 3), mtl_int2(1, 3), 2));
  CHECK(same_vec(abs(mtl_int2(-1, 1)), mtl_int2(1, 1), 2));

  // Type names: both spellings, and <stdint.h>-style names without ambiguity.
  metal::mtl_float4 q = mtl_float4(1.0f);
  metal::vec<float, 4> q2 = q;
  metal::packed_vec<float, 3> q3 = q2.template mtl_swizzle<0, 1, 2>();
  uint32_t a32 = 5;
  size_t sz = sizeof(q);
  int64_t a64 = -1;
  metal::uint8_t a8 = 255;
  CHECK(q3.z == 1 && a32 == 5 && sz == 16 && a64 == -1 && a8 == 255);
  return finish("test_overloads");
}
