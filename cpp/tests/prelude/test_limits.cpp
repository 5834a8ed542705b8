// as_type, numeric_limits, MSL's constants, half and bfloat conversions.
#include "metal_stdlib.h"
#include "check.h"

#include <cmath>
#include <type_traits>

using namespace metal;

static void bit_casts() {
  CHECK(as_type<mtl_uint>(1.0f) == 0x3f800000u);
  CHECK(as_type<float>(0x40000000u) == 2.0f);
  CHECK(as_type<int>(-0.0f) == int(0x80000000u));
  mtl_uchar4 bytes = as_type<mtl_uchar4>(0x04030201u);
  CHECK(bytes.x == 1 && bytes.w == 4);
  CHECK(as_type<mtl_uint>(mtl_uchar4(1, 2, 3, 4)) == 0x04030201u);
  CHECK(as_type<mtl_ushort>(mtl_half(1.0f)) == 0x3c00);
  mtl_half2 h2 = as_type<mtl_half2>(0x3c004000u);
  CHECK(float(h2.x) == 2.0f && float(h2.y) == 1.0f);
  mtl_float2 f2 = as_type<mtl_float2>(mtl_uint2(0x3f800000u, 0xbf800000u));
  CHECK(f2.x == 1 && f2.y == -1);
  mtl_float4 f4 = as_type<mtl_float4>(mtl_float3(1, 2, 3));  // both 16 bytes
  CHECK(f4.z == 3);
}

static void limits() {
  CHECK(numeric_limits<int>::max() == 2147483647 && numeric_limits<int>::min() == -2147483647 - 1);
  CHECK(numeric_limits<mtl_uint>::max() == 0xffffffffu && numeric_limits<mtl_uint>::min() == 0);
  CHECK(numeric_limits<short>::lowest() == -32768 && numeric_limits<mtl_uchar>::max() == 255);
  CHECK(numeric_limits<long>::max() == 0x7fffffffffffffffl && numeric_limits<mtl_ulong>::max() == 0xfffffffffffffffful);
  CHECK(numeric_limits<int>::digits == 31 && numeric_limits<mtl_uint>::digits == 32 && numeric_limits<int>::digits10 == 9);
  CHECK(numeric_limits<int>::is_integer && numeric_limits<int>::is_signed && !numeric_limits<mtl_uint>::is_signed);
  CHECK(numeric_limits<float>::max() == 3.40282347e38f && numeric_limits<float>::min() == 1.17549435e-38f);
  CHECK(numeric_limits<float>::lowest() == -numeric_limits<float>::max());
  CHECK(numeric_limits<float>::epsilon() == 1.1920929e-7f && numeric_limits<float>::denorm_min() == 0x1p-149f);
  CHECK(std::isinf(numeric_limits<float>::infinity()) && std::isnan(numeric_limits<float>::quiet_NaN()));
  CHECK(numeric_limits<float>::digits == 24 && numeric_limits<float>::has_infinity && !numeric_limits<float>::is_integer);
  CHECK(float(numeric_limits<mtl_half>::max()) == 65504.0f && float(numeric_limits<mtl_half>::min()) == 0x1p-14f);
  CHECK(float(numeric_limits<mtl_half>::epsilon()) == 0x1p-10f && float(numeric_limits<mtl_half>::lowest()) == -65504.0f);
  CHECK(float(numeric_limits<mtl_half>::denorm_min()) == 0x1p-24f && numeric_limits<mtl_half>::digits == 11);
  CHECK(std::isinf(float(numeric_limits<mtl_half>::infinity())) && std::isnan(float(numeric_limits<mtl_half>::quiet_NaN())));
  CHECK(float(numeric_limits<mtl_bfloat>::max()) == 0x1.fep127f && float(numeric_limits<mtl_bfloat>::epsilon()) == 0x1p-7f);
  CHECK(std::isinf(float(numeric_limits<mtl_bfloat>::infinity())));
  static_assert(numeric_limits<float>::max() > 0 && numeric_limits<int>::max() > 0, "limits are constexpr");
}

static void constants() {
  CHECK(M_PI_F == 3.14159265358979f && M_PI_2_F == M_PI_F / 2 && M_PI_4_F == M_PI_F / 4);
  CHECK(M_E_F == 2.71828182845904f && M_LN2_F == 0.693147180559945f && M_LN10_F == 2.30258509299404f);
  CHECK(M_LOG2E_F == 1.44269504088896f && M_LOG10E_F == 0.434294481903251f);
  CHECK(M_1_PI_F == 0.318309886183790f && M_2_PI_F == 0.636619772367581f && M_2_SQRTPI_F == 1.12837916709551f);
  CHECK(M_SQRT2_F == 1.41421356237309f && M_SQRT1_2_F == 0.707106781186547f);
  CHECK(float(M_PI_H) == 3.140625f && float(M_SQRT2_H) == 1.4140625f && float(M_E_H) == 2.71875f);
  CHECK(std::isinf(INFINITY) && INFINITY > 0 && std::isnan(NAN) && std::isinf(HUGE_VALF));
  CHECK(MAXFLOAT == 3.40282347e38f && FLT_MAX == MAXFLOAT && FLT_MIN == 0x1p-126f && FLT_EPSILON == 0x1p-23f);
  CHECK(float(HALF_MAX) == 65504.0f && float(HALF_MIN) == 0x1p-14f && float(HALF_EPSILON) == 0x1p-10f);
  CHECK(INT_MAX == 2147483647 && INT_MIN == -2147483647 - 1 && UINT_MAX == 0xffffffffu);
  CHECK(SHRT_MAX == 32767 && USHRT_MAX == 65535 && CHAR_MAX == 127 && UCHAR_MAX == 255);
  CHECK(LONG_MAX == numeric_limits<long>::max() && ULONG_MAX == numeric_limits<mtl_ulong>::max());
  CHECK(FLT_MANT_DIG == 24 && HALF_MANT_DIG == 11 && FLT_MAX_EXP == 128 && HALF_MAX_EXP == 16);
}

static void half_and_bfloat() {
  // half: round to nearest even, overflow to infinity, subnormals.
  CHECK(float(mtl_half(1.0f + 0x1p-11f)) == 1.0f);                   // tie -> even
  CHECK(float(mtl_half(1.0f + 3 * 0x1p-11f)) == 1.0f + 0x1p-9f);     // tie -> even (up)
  CHECK(float(mtl_half(65519.0f)) == 65504.0f && std::isinf(float(mtl_half(65520.0f))));
  CHECK(float(mtl_half(0x1p-24f)) == 0x1p-24f && float(mtl_half(0x1p-26f)) == 0.0f);
  CHECK(float(mtl_half(-2.5f)) == -2.5f && std::isnan(float(mtl_half(NAN))));
  mtl_half h = mtl_half(1.5f);
  h += 1.0f;
  CHECK(float(h) == 2.5f && float(h * mtl_half(2.0f)) == 5.0f && h > mtl_half(2.0f));
  // bfloat: the upper half of a float, round to nearest even.
  CHECK(float(mtl_bfloat(1.0f)) == 1.0f && float(mtl_bfloat(3.140625f)) == 3.140625f);
  CHECK(float(mtl_bfloat(1.0f + 0x1p-8f)) == 1.0f);                 // tie -> even
  CHECK(float(mtl_bfloat(1.0f + 3 * 0x1p-8f)) == 1.0f + 0x1p-6f);   // tie -> even (up)
  CHECK(float(mtl_bfloat(1.0f + 0x1.8p-8f)) == 1.0f + 0x1p-7f);      // above tie -> up
  CHECK(std::isnan(float(mtl_bfloat(NAN))) && std::isinf(float(mtl_bfloat(INFINITY))));
  CHECK(as_type<mtl_ushort>(mtl_bfloat(-2.0f)) == 0xc000);
  mtl_bfloat b = 2.0f;
  b *= 3.0f;
  CHECK(float(b) == 6.0f && float(b + b) == 12.0f);
  CHECK(float(sqrt(mtl_bfloat(16.0f))) == 4.0f);
  static_assert(is_floating_point<mtl_half>::value && is_floating_point<mtl_bfloat>::value, "half, bfloat are floating");
}

int main() {
  bit_casts();
  limits();
  constants();
  half_and_bfloat();
  return finish("test_limits");
}
