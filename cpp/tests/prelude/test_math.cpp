// Math, common, geometric and relational functions on scalars and vectors,
// float and half, metal:: fast:: precise::, against known values.
#include "metal_stdlib.h"
#include "check.h"

#include <type_traits>

using namespace metal;

static void float_scalars() {
  float x = 0.5f;
  CHECK_NEAR(sin(x), 0.479425538604203, 1e-6);
  CHECK_NEAR(cos(x), 0.877582561890373, 1e-6);
  CHECK_NEAR(tan(x), 0.546302489843790, 1e-6);
  CHECK_NEAR(asin(x), 0.523598775598299, 1e-6);
  CHECK_NEAR(acos(x), 1.047197551196598, 1e-6);
  CHECK_NEAR(atan(x), 0.463647609000806, 1e-6);
  CHECK_NEAR(atan2(1.0f, -1.0f), 2.356194490192345, 1e-6);
  CHECK_NEAR(sinh(x), 0.521095305493747, 1e-6);
  CHECK_NEAR(cosh(x), 1.127625965206381, 1e-6);
  CHECK_NEAR(tanh(x), 0.462117157260010, 1e-6);
  CHECK_NEAR(asinh(x), 0.481211825059603, 1e-6);
  CHECK_NEAR(acosh(2.0f), 1.316957896924816, 1e-6);
  CHECK_NEAR(atanh(x), 0.549306144334055, 1e-6);
  CHECK_NEAR(exp(1.0f), 2.718281828459045, 1e-6);
  CHECK(exp2(10.0f) == 1024.0f);
  CHECK_NEAR(exp10(3.0f), 1000.0, 1e-6);
  CHECK_NEAR(log(10.0f), 2.302585092994046, 1e-6);
  CHECK(log2(1024.0f) == 10.0f);
  CHECK_NEAR(log10(1000.0f), 3.0, 1e-6);
  CHECK(pow(2.0f, 10.0f) == 1024.0f);
  CHECK(powr(4.0f, 0.5f) == 2.0f);
  CHECK(sqrt(16.0f) == 4.0f);
  CHECK(rsqrt(4.0f) == 0.5f);
  CHECK(fma(2.0f, 3.0f, 4.0f) == 10.0f);
  CHECK(fmin(1.0f, 2.0f) == 1.0f && fmax(1.0f, 2.0f) == 2.0f);
  CHECK(fmin(NAN, 2.0f) == 2.0f && fmax(3.0f, NAN) == 3.0f);  // NaN loses
  CHECK(fabs(-3.5f) == 3.5f && abs(-3.5f) == 3.5f);
  CHECK(fract(2.75f) == 0.75f && fract(-0.25f) == 0.75f);
  CHECK(fract(-1e-10f) < 1.0f);  // never rounds up to 1
  CHECK(trunc(-2.5f) == -2.0f && round(-2.5f) == -3.0f && rint(2.5f) == 2.0f && rint(3.5f) == 4.0f);
  CHECK(floor(-2.5f) == -3.0f && ceil(-2.5f) == -2.0f);
  CHECK(copysign(2.0f, -0.0f) == -2.0f);
  CHECK(fmod(7.5f, 2.0f) == 1.5f && fmod(-7.5f, 2.0f) == -1.5f);
  CHECK(fdim(5.0f, 3.0f) == 2.0f && fdim(3.0f, 5.0f) == 0.0f);
  CHECK(divide(1.0f, 4.0f) == 0.25f);
  CHECK(sinpi(1.0f) == 0.0f && sinpi(0.5f) == 1.0f && sinpi(-0.5f) == -1.0f && sinpi(2.0f) == 0.0f);
  CHECK_NEAR(sinpi(0.25f), 0.707106781186548, 1e-6);
  CHECK(cospi(0.5f) == 0.0f && cospi(1.0f) == -1.0f && cospi(0.0f) == 1.0f && cospi(3.0f) == -1.0f);
  CHECK_NEAR(cospi(1.0f / 3.0f), 0.5, 1e-6);
  CHECK_NEAR(tanpi(0.25f), 1.0, 1e-6);
  CHECK(nextafter(1.0f, 2.0f) == 1.0f + FLT_EPSILON);
  CHECK(nextafter(0.0f, -1.0f) == -0x1p-149f);
  CHECK(fmax3(1.0f, 5.0f, 3.0f) == 5.0f && fmin3(4.0f, 2.0f, 3.0f) == 2.0f && fmedian3(4.0f, 9.0f, 1.0f) == 4.0f);

  int e = 0;
  CHECK(frexp(48.0f, e) == 0.75f && e == 6);
  CHECK(ldexp(0.75f, 6) == 48.0f);
  CHECK(ilogb(48.0f) == 5);
  float ip = 0;
  CHECK(modf(-3.25f, ip) == -0.25f && ip == -3.0f);
  float c = 0;
  CHECK_NEAR(sincos(x, c), 0.479425538604203, 1e-6);
  CHECK_NEAR(c, 0.877582561890373, 1e-6);

  // Common functions.
  CHECK(clamp(1.5f, 0.0f, 1.0f) == 1.0f && clamp(-1.0f, 0.0f, 1.0f) == 0.0f);
  CHECK(clamp(0.25f, 0, 1) == 0.25f);  // int bounds mix with a float value
  CHECK(mix(2.0f, 4.0f, 0.25f) == 2.5f);
  CHECK(step(1.0f, 0.5f) == 0.0f && step(1.0f, 1.0f) == 1.0f);
  CHECK(smoothstep(0.0f, 1.0f, 0.5f) == 0.5f && smoothstep(0.0f, 1.0f, 2.0f) == 1.0f);
  CHECK(sign(-3.0f) == -1.0f && sign(2.0f) == 1.0f && sign(0.0f) == 0.0f && sign(NAN) == 0.0f);
  CHECK(saturate(1.5f) == 1.0f && saturate(-0.5f) == 0.0f && saturate(0.5f) == 0.5f);
  CHECK(min(3.0f, 2.0f) == 2.0f && max(3.0f, 2.0f) == 3.0f);
  CHECK(max(x, 0.75) == 0.75f);  // double literal mixes with float
  static_assert(std::is_same<decltype(max(x, 0.75)), float>::value, "max(float, double) is float");
  static_assert(std::is_same<decltype(min(x, 1)), float>::value, "min(float, int) is float");
}

static void integer_common() {
  CHECK(abs(-5) == 5 && abs(5u) == 5u);
  CHECK(min(3, 4) == 3 && max(3u, 4u) == 4u);
  CHECK(clamp(15, 0, 10) == 10 && clamp(-3, 0, 10) == 0);
  mtl_int4 v = mtl_int4(-5, 5, 20, -20);
  CHECK(same_vec(abs(v), mtl_int4(5, 5, 20, 20), 4));
  CHECK(same_vec(clamp(v, 0, 10), mtl_int4(0, 5, 10, 0), 4));
  CHECK(same_vec(min(v, mtl_int4(0)), mtl_int4(-5, 0, 0, -20), 4));
  CHECK(same_vec(max(v, 0), mtl_int4(0, 5, 20, 0), 4));
  mtl_ushort2 us = mtl_ushort2(3, 9);
  static_assert(std::is_same<decltype(max(us, us)), mtl_ushort2>::value, "max(ushort2, ushort2)");
}

static void float_vectors() {
  mtl_float4 v = mtl_float4(0.0f, 0.25f, 0.5f, 1.0f);
  mtl_float4 s = sin(v);
  for (int i = 0; i < 4; ++i) CHECK(s[i] == sin(v[i]));
  CHECK(same_vec(floor(mtl_float2(1.5f, -1.5f)), mtl_float2(1, -2), 2));
  CHECK(same_vec(sqrt(mtl_float3(4, 9, 16)), mtl_float3(2, 3, 4), 3));
  CHECK(same_vec(pow(mtl_float2(2, 3), 2.0f), mtl_float2(4, 9), 2));  // scalar broadcast
  CHECK(same_vec(fmax(v, 0.3f), mtl_float4(0.3f, 0.3f, 0.5f, 1.0f), 4));
  CHECK(same_vec(fmin(v, mtl_float4(0.1f)), mtl_float4(0.0f, 0.1f, 0.1f, 0.1f), 4));
  CHECK(same_vec(clamp(v * 2, 0.0f, 1.0f), mtl_float4(0, 0.5f, 1, 1), 4));
  CHECK(same_vec(clamp(v, mtl_float4(0.1f), mtl_float4(0.6f)), mtl_float4(0.1f, 0.25f, 0.5f, 0.6f), 4));
  CHECK(same_vec(mix(mtl_float2(0, 10), mtl_float2(10, 20), 0.5f), mtl_float2(5, 15), 2));
  CHECK(same_vec(mix(mtl_float2(0), mtl_float2(8), mtl_float2(0.25f, 0.5f)), mtl_float2(2, 4), 2));
  CHECK(same_vec(step(0.5f, v), mtl_float4(0, 0, 1, 1), 4));
  CHECK(same_vec(smoothstep(0.0f, 1.0f, v), mtl_float4(0, 0.15625f, 0.5f, 1), 4));
  CHECK(same_vec(sign(mtl_float3(-2, 0, 3)), mtl_float3(-1, 0, 1), 3));
  CHECK(same_vec(saturate(mtl_float2(-1, 2)), mtl_float2(0, 1), 2));
  CHECK(same_vec(abs(mtl_float2(-1, 2)), mtl_float2(1, 2), 2));
  CHECK(same_vec(min(v, 0.5f), mtl_float4(0, 0.25f, 0.5f, 0.5f), 4));
  CHECK(same_vec(fma(v, mtl_float4(2), mtl_float4(1)), mtl_float4(1, 1.5f, 2, 3), 4));
  CHECK(same_vec(fract(mtl_float2(1.25f, -0.5f)), mtl_float2(0.25f, 0.5f), 2));
  mtl_int2 ex;
  mtl_float2 m = frexp(mtl_float2(8, 0.5f), ex);
  CHECK(same_vec(m, mtl_float2(0.5f, 0.5f), 2) && ex.x == 4 && ex.y == 0);
  CHECK(same_vec(ldexp(m, ex), mtl_float2(8, 0.5f), 2));
  CHECK(same_vec(ilogb(mtl_float2(8, 0.5f)), mtl_int2(3, -1), 2));
  mtl_float2 ip;
  CHECK(same_vec(modf(mtl_float2(1.5f, -2.25f), ip), mtl_float2(0.5f, -0.25f), 2) && same_vec(ip, mtl_float2(1, -2), 2));
  mtl_float2 co;
  mtl_float2 si = sincos(mtl_float2(0, 0.5f), co);
  CHECK(si.x == 0 && co.x == 1 && si.y == sin(0.5f) && co.y == cos(0.5f));
  CHECK(same_vec(fmedian3(mtl_float2(1, 9), mtl_float2(5, 2), 3.0f), mtl_float2(3, 3), 2));
  CHECK(same_vec(atan2(mtl_float2(0, 1), mtl_float2(1, 0)), mtl_float2(0, M_PI_2_F), 2));
  // Works on swizzles and packed vectors too.
  mtl_packed_float3 p = mtl_packed_float3(4, 9, 16);
  CHECK(same_vec(sqrt(p), mtl_float3(2, 3, 4), 3));
  CHECK(same_vec(sqrt(mtl_float4(4, 9, 16, 25).template mtl_swizzle<3, 0>()), mtl_float2(5, 2), 2));
}

static void half_math() {
  mtl_half h = mtl_half(0.5f);
  CHECK_NEAR(float(sin(h)), 0.479425538604203, 1e-3);
  static_assert(std::is_same<decltype(sin(h)), mtl_half>::value, "sin(half) is half");
  CHECK(float(sqrt(mtl_half(16.0f))) == 4.0f);
  CHECK(float(fract(mtl_half(-0.0001f))) < 1.0f);  // below-one of half, not of float
  CHECK(float(fract(mtl_half(-0.0001f))) == 0.99951171875f);
  CHECK(float(nextafter(mtl_half(1.0f), mtl_half(2.0f))) == 1.0009765625f);  // half ulp
  CHECK(float(clamp(mtl_half(3.0f), mtl_half(0.0f), mtl_half(1.0f))) == 1.0f);
  CHECK(float(max(h, 0.75)) == 0.75f);
  mtl_half4 hv = mtl_half4(1.0f, 4.0f, 9.0f, 16.0f);
  mtl_half4 r = sqrt(hv);
  CHECK(float(r.x) == 1 && float(r.y) == 2 && float(r.z) == 3 && float(r.w) == 4);
  mtl_half3 n = normalize(mtl_half3(3.0f, 0.0f, 4.0f));
  CHECK_NEAR(float(n.x), 0.6, 1e-3);
  CHECK_NEAR(float(length(mtl_half2(3.0f, 4.0f))), 5.0, 1e-3);
  CHECK_NEAR(float(M_PI_H), 3.140625, 1e-6);
}

static void fast_and_precise() {
  float x = 0.3f;
  CHECK_NEAR(fast::sin(x), 0.295520206661340, 1e-5);
  CHECK_NEAR(precise::sin(x), 0.295520206661340, 1e-6);
  CHECK_NEAR(metal::fast::exp(1.0f), 2.718281828459045, 1e-5);
  CHECK(same_vec(fast::clamp(mtl_float2(-1, 2), 0.0f, 1.0f), mtl_float2(0, 1), 2));
  CHECK(same_vec(precise::sqrt(mtl_float2(4, 9)), mtl_float2(2, 3), 2));
  CHECK_NEAR(fast::length(mtl_float2(3, 4)), 5.0, 1e-6);
  CHECK(fast::max(1.0f, 2.0f) == 2.0f);
  CHECK(metal::precise::divide(1.0f, 8.0f) == 0.125f);
}

static void geometric() {
  mtl_float3 a = mtl_float3(1, 2, 3), b = mtl_float3(4, 5, 6);
  CHECK(dot(a, b) == 32.0f);
  CHECK(same_vec(cross(a, b), mtl_float3(-3, 6, -3), 3));
  CHECK(same_vec(cross(mtl_float3(1, 0, 0), mtl_float3(0, 1, 0)), mtl_float3(0, 0, 1), 3));
  CHECK(length(mtl_float2(3, 4)) == 5.0f);
  CHECK(length_squared(mtl_float2(3, 4)) == 25.0f);
  CHECK(distance(mtl_float2(1, 1), mtl_float2(4, 5)) == 5.0f);
  CHECK(distance_squared(mtl_float2(1, 1), mtl_float2(4, 5)) == 25.0f);
  mtl_float4 n = normalize(mtl_float4(2, 0, 0, 0));
  CHECK(same_vec(n, mtl_float4(1, 0, 0, 0), 4));
  CHECK_NEAR(length(normalize(a)), 1.0, 1e-6);
  CHECK(same_vec(reflect(mtl_float2(1, -1), mtl_float2(0, 1)), mtl_float2(1, 1), 2));
  mtl_float2 r = refract(mtl_float2(M_SQRT1_2_F, -M_SQRT1_2_F), mtl_float2(0, 1), 1.0f);
  CHECK_NEAR(r.x, M_SQRT1_2_F, 1e-6);
  CHECK_NEAR(r.y, -M_SQRT1_2_F, 1e-6);
  mtl_float2 tir = refract(mtl_float2(M_SQRT1_2_F, -M_SQRT1_2_F), mtl_float2(0, 1), 2.0f);  // total reflection
  CHECK(tir.x == 0 && tir.y == 0);
  CHECK(same_vec(faceforward(mtl_float2(0, 1), mtl_float2(0, 1), mtl_float2(0, 1)), mtl_float2(0, -1), 2));
  CHECK(same_vec(faceforward(mtl_float2(0, 1), mtl_float2(0, -1), mtl_float2(0, 1)), mtl_float2(0, 1), 2));
  mtl_packed_float3 p = a;
  CHECK(dot(p, b) == 32.0f);
}

static void relational() {
  CHECK(all(mtl_bool3(true, true, true)) && !all(mtl_bool2(true, false)));
  CHECK(any(mtl_bool4(false, false, true, false)) && !any(mtl_bool2(false, false)));
  CHECK(all(mtl_float2(1, 2) < mtl_float2(3, 4)) && !any(mtl_int3(1, 2, 3) > 5));
  CHECK(all(true) && !any(false));
  CHECK(select(1, 2, true) == 2 && select(1.0f, 2.0f, false) == 1.0f);
  CHECK(same_vec(select(mtl_int3(1, 2, 3), mtl_int3(4, 5, 6), mtl_bool3(true, false, true)), mtl_int3(4, 2, 6), 3));
  CHECK(same_vec(select(mtl_float2(1, 2), mtl_float2(3, 4), true), mtl_float2(3, 4), 2));
  const float inf = INFINITY, nan = NAN;
  CHECK(isnan(nan) && !isnan(1.0f) && isinf(-inf) && !isinf(FLT_MAX));
  CHECK(isfinite(FLT_MAX) && !isfinite(inf) && !isfinite(nan));
  CHECK(isnormal(FLT_MIN) && !isnormal(FLT_MIN / 2) && !isnormal(0.0f) && !isnormal(inf));
  CHECK(signbit(-0.0f) && !signbit(0.0f) && signbit(-inf));
  CHECK(isunordered(nan, 1.0f) && !isunordered(1.0f, 2.0f) && isordered(1.0f, 2.0f) && !isordered(1.0f, nan));
  CHECK(same_vec(isnan(mtl_float3(nan, 0, inf)), mtl_bool3(true, false, false), 3));
  CHECK(same_vec(isinf(mtl_float3(nan, 0, inf)), mtl_bool3(false, false, true), 3));
  CHECK(same_vec(signbit(mtl_float2(-1, 1)), mtl_bool2(true, false), 2));
  CHECK(same_vec(isordered(mtl_float2(nan, 1), mtl_float2(1, 1)), mtl_bool2(false, true), 2));
  CHECK(isnan(mtl_half(nan)) && isinf(numeric_limits<mtl_half>::infinity()));
  CHECK(isnormal(HALF_MIN) && !isnormal(mtl_half(0x1p-15f)));
  CHECK(all(not(mtl_bool2(false, false))));
}

int main() {
  float_scalars();
  integer_common();
  float_vectors();
  half_math();
  fast_and_precise();
  geometric();
  relational();
  return finish("test_math");
}
