// metalcall MSL prelude: the pack and unpack functions (the MSL specification's "Pack and
// Unpack Functions"), by its conversion rules for normalized integers, as the texture writes
// and reads of metal_texture_sampling.h apply them:
//   float to n-bit unorm: NaN is 0, clamp to [0, 1], times 2^n - 1 (in float), round to nearest
//   even; snorm: clamp to [-1, 1], times 2^(n-1) - 1; unorm to float: c / (2^n - 1);
//   snorm to float: max(c / (2^(n-1) - 1), -1), so both -128 and -127 give -1.
// sRGB: the specification's linear-to-sRGB and sRGB-to-linear formulas on the colour channels,
// alpha stays linear. Component 0 is in the lowest bits, as in every packed function (the
// 5-6-5 and 10-10-10-2 forms too). The half forms compute in float: a half times 255 or 65535
// is exact in float, so they give the float forms' codes.
#pragma once
#include "metal_math.h"

namespace metal {
namespace mtl_pack {

METAL_FUNC float mtl_clamp_nan0(float v, float lo, float hi) { return v != v ? 0.0f : v < lo ? lo : v > hi ? hi : v; }
METAL_FUNC unsigned mtl_unorm(float v, float m) {
  return unsigned(METAL_LIBM(rint)(mtl_clamp_nan0(v, 0.0f, 1.0f) * m));
}
METAL_FUNC unsigned mtl_snorm(float v, float m, unsigned mask) {
  return unsigned(int(METAL_LIBM(rint)(mtl_clamp_nan0(v, -1.0f, 1.0f) * m))) & mask;
}
// In double, then rounded once: c / m correctly rounded to float whatever the fast-math flags
// make of a float division (a reciprocal on the CPU, an approximation on CUDA).
METAL_FUNC float mtl_from_unorm(unsigned c, float m) { return float(double(c) / double(m)); }
METAL_FUNC float mtl_from_snorm(int c, float m) {
  const float v = float(double(c) / double(m));
  return v < -1.0f ? -1.0f : v;
}
METAL_FUNC float mtl_linear_to_srgb(float c) {
  if (c != c) return 0.0f;
  if (c > 1.0f) return 1.0f;
  if (c < 0.0f) return 0.0f;
  if (c < 0.0031308f) return 12.92f * c;
  return 1.055f * METAL_LIBM(pow)(c, 1.0f / 2.4f) - 0.055f;
}
METAL_FUNC float mtl_srgb_to_linear(float c) {
  return c <= 0.04045f ? c / 12.92f : METAL_LIBM(pow)((c + 0.055f) / 1.055f, 2.4f);
}
template <class T> METAL_FUNC float mtl_f(const T& x) { return mtl_detail::convert<float>(x); }
template <class T, int N> METAL_FUNC vec<T, N> mtl_cast(const vec<float, N>& v) {
  vec<T, N> r;
  for (int i = 0; i < N; ++i) r[i] = mtl_detail::convert<T>(v[i]);
  return r;
}

template <class T> METAL_FUNC unsigned mtl_unorm4x8(const vec<T, 4>& v) {
  return mtl_unorm(mtl_f(v.x), 255.0f) | mtl_unorm(mtl_f(v.y), 255.0f) << 8 | mtl_unorm(mtl_f(v.z), 255.0f) << 16 |
         mtl_unorm(mtl_f(v.w), 255.0f) << 24;
}
template <class T> METAL_FUNC unsigned mtl_snorm4x8(const vec<T, 4>& v) {
  return mtl_snorm(mtl_f(v.x), 127.0f, 0xffu) | mtl_snorm(mtl_f(v.y), 127.0f, 0xffu) << 8 |
         mtl_snorm(mtl_f(v.z), 127.0f, 0xffu) << 16 | mtl_snorm(mtl_f(v.w), 127.0f, 0xffu) << 24;
}
template <class T> METAL_FUNC unsigned mtl_srgb_unorm4x8(const vec<T, 4>& v) {
  return mtl_unorm(mtl_linear_to_srgb(mtl_f(v.x)), 255.0f) | mtl_unorm(mtl_linear_to_srgb(mtl_f(v.y)), 255.0f) << 8 |
         mtl_unorm(mtl_linear_to_srgb(mtl_f(v.z)), 255.0f) << 16 | mtl_unorm(mtl_f(v.w), 255.0f) << 24;
}
template <class T> METAL_FUNC unsigned mtl_unorm2x16(const vec<T, 2>& v) {
  return mtl_unorm(mtl_f(v.x), 65535.0f) | mtl_unorm(mtl_f(v.y), 65535.0f) << 16;
}
template <class T> METAL_FUNC unsigned mtl_snorm2x16(const vec<T, 2>& v) {
  return mtl_snorm(mtl_f(v.x), 32767.0f, 0xffffu) | mtl_snorm(mtl_f(v.y), 32767.0f, 0xffffu) << 16;
}
template <class T> METAL_FUNC unsigned mtl_unorm10a2(const vec<T, 4>& v) {
  return mtl_unorm(mtl_f(v.x), 1023.0f) | mtl_unorm(mtl_f(v.y), 1023.0f) << 10 |
         mtl_unorm(mtl_f(v.z), 1023.0f) << 20 | mtl_unorm(mtl_f(v.w), 3.0f) << 30;
}
template <class T> METAL_FUNC unsigned short mtl_unorm565(const vec<T, 3>& v) {
  return (unsigned short)(mtl_unorm(mtl_f(v.x), 31.0f) | mtl_unorm(mtl_f(v.y), 63.0f) << 5 |
         mtl_unorm(mtl_f(v.z), 31.0f) << 11);
}

METAL_FUNC vec<float, 4> mtl_from_unorm4x8(unsigned x) {
  return vec<float, 4>(mtl_from_unorm(x & 0xffu, 255.0f), mtl_from_unorm(x >> 8 & 0xffu, 255.0f),
                       mtl_from_unorm(x >> 16 & 0xffu, 255.0f), mtl_from_unorm(x >> 24, 255.0f));
}
METAL_FUNC vec<float, 4> mtl_from_snorm4x8(unsigned x) {
  return vec<float, 4>(mtl_from_snorm((signed char)(x & 0xffu), 127.0f),
                       mtl_from_snorm((signed char)(x >> 8 & 0xffu), 127.0f),
                       mtl_from_snorm((signed char)(x >> 16 & 0xffu), 127.0f),
                       mtl_from_snorm((signed char)(x >> 24), 127.0f));
}
METAL_FUNC vec<float, 4> mtl_from_srgb4x8(unsigned x) {
  const vec<float, 4> u = mtl_from_unorm4x8(x);
  return vec<float, 4>(mtl_srgb_to_linear(u.x), mtl_srgb_to_linear(u.y), mtl_srgb_to_linear(u.z), u.w);
}
METAL_FUNC vec<float, 2> mtl_from_unorm2x16(unsigned x) {
  return vec<float, 2>(mtl_from_unorm(x & 0xffffu, 65535.0f), mtl_from_unorm(x >> 16, 65535.0f));
}
METAL_FUNC vec<float, 2> mtl_from_snorm2x16(unsigned x) {
  return vec<float, 2>(mtl_from_snorm((short)(x & 0xffffu), 32767.0f), mtl_from_snorm((short)(x >> 16), 32767.0f));
}
METAL_FUNC vec<float, 4> mtl_from_unorm10a2(unsigned x) {
  return vec<float, 4>(mtl_from_unorm(x & 0x3ffu, 1023.0f), mtl_from_unorm(x >> 10 & 0x3ffu, 1023.0f),
                       mtl_from_unorm(x >> 20 & 0x3ffu, 1023.0f), mtl_from_unorm(x >> 30, 3.0f));
}
METAL_FUNC vec<float, 3> mtl_from_unorm565(unsigned x) {
  return vec<float, 3>(mtl_from_unorm(x & 0x1fu, 31.0f), mtl_from_unorm(x >> 5 & 0x3fu, 63.0f),
                       mtl_from_unorm(x >> 11 & 0x1fu, 31.0f));
}

}  // namespace mtl_pack

// One function per name and vector type, as MSL declares them (a packed_float4 argument converts);
// written out: a macro's plain arguments would count as library names for the front end.
METAL_FUNC mtl_uint pack_float_to_unorm4x8(const vec<float, 4>& v) { return mtl_pack::mtl_unorm4x8(v); }
METAL_FUNC mtl_uint pack_half_to_unorm4x8(const vec<mtl_half, 4>& v) { return mtl_pack::mtl_unorm4x8(v); }
METAL_FUNC mtl_uint pack_float_to_snorm4x8(const vec<float, 4>& v) { return mtl_pack::mtl_snorm4x8(v); }
METAL_FUNC mtl_uint pack_half_to_snorm4x8(const vec<mtl_half, 4>& v) { return mtl_pack::mtl_snorm4x8(v); }
METAL_FUNC mtl_uint pack_float_to_srgb_unorm4x8(const vec<float, 4>& v) { return mtl_pack::mtl_srgb_unorm4x8(v); }
METAL_FUNC mtl_uint pack_half_to_srgb_unorm4x8(const vec<mtl_half, 4>& v) { return mtl_pack::mtl_srgb_unorm4x8(v); }
METAL_FUNC mtl_uint pack_float_to_unorm2x16(const vec<float, 2>& v) { return mtl_pack::mtl_unorm2x16(v); }
METAL_FUNC mtl_uint pack_half_to_unorm2x16(const vec<mtl_half, 2>& v) { return mtl_pack::mtl_unorm2x16(v); }
METAL_FUNC mtl_uint pack_float_to_snorm2x16(const vec<float, 2>& v) { return mtl_pack::mtl_snorm2x16(v); }
METAL_FUNC mtl_uint pack_half_to_snorm2x16(const vec<mtl_half, 2>& v) { return mtl_pack::mtl_snorm2x16(v); }
METAL_FUNC mtl_uint pack_float_to_unorm10a2(const vec<float, 4>& v) { return mtl_pack::mtl_unorm10a2(v); }
METAL_FUNC mtl_uint pack_half_to_unorm10a2(const vec<mtl_half, 4>& v) { return mtl_pack::mtl_unorm10a2(v); }
METAL_FUNC mtl_ushort pack_float_to_unorm565(const vec<float, 3>& v) { return mtl_pack::mtl_unorm565(v); }
METAL_FUNC mtl_ushort pack_half_to_unorm565(const vec<mtl_half, 3>& v) { return mtl_pack::mtl_unorm565(v); }
METAL_FUNC vec<float, 4> unpack_unorm4x8_to_float(mtl_uint x) { return mtl_pack::mtl_from_unorm4x8(x); }
METAL_FUNC vec<mtl_half, 4> unpack_unorm4x8_to_half(mtl_uint x) {
  return mtl_pack::mtl_cast<mtl_half>(mtl_pack::mtl_from_unorm4x8(x));
}
METAL_FUNC vec<float, 4> unpack_snorm4x8_to_float(mtl_uint x) { return mtl_pack::mtl_from_snorm4x8(x); }
METAL_FUNC vec<mtl_half, 4> unpack_snorm4x8_to_half(mtl_uint x) {
  return mtl_pack::mtl_cast<mtl_half>(mtl_pack::mtl_from_snorm4x8(x));
}
METAL_FUNC vec<float, 4> unpack_unorm4x8_srgb_to_float(mtl_uint x) { return mtl_pack::mtl_from_srgb4x8(x); }
METAL_FUNC vec<mtl_half, 4> unpack_unorm4x8_srgb_to_half(mtl_uint x) {
  return mtl_pack::mtl_cast<mtl_half>(mtl_pack::mtl_from_srgb4x8(x));
}
METAL_FUNC vec<float, 2> unpack_unorm2x16_to_float(mtl_uint x) { return mtl_pack::mtl_from_unorm2x16(x); }
METAL_FUNC vec<mtl_half, 2> unpack_unorm2x16_to_half(mtl_uint x) {
  return mtl_pack::mtl_cast<mtl_half>(mtl_pack::mtl_from_unorm2x16(x));
}
METAL_FUNC vec<float, 2> unpack_snorm2x16_to_float(mtl_uint x) { return mtl_pack::mtl_from_snorm2x16(x); }
METAL_FUNC vec<mtl_half, 2> unpack_snorm2x16_to_half(mtl_uint x) {
  return mtl_pack::mtl_cast<mtl_half>(mtl_pack::mtl_from_snorm2x16(x));
}
METAL_FUNC vec<float, 4> unpack_unorm10a2_to_float(mtl_uint x) { return mtl_pack::mtl_from_unorm10a2(x); }
METAL_FUNC vec<mtl_half, 4> unpack_unorm10a2_to_half(mtl_uint x) {
  return mtl_pack::mtl_cast<mtl_half>(mtl_pack::mtl_from_unorm10a2(x));
}
METAL_FUNC vec<float, 3> unpack_unorm565_to_float(mtl_ushort x) { return mtl_pack::mtl_from_unorm565(x); }
METAL_FUNC vec<mtl_half, 3> unpack_unorm565_to_half(mtl_ushort x) {
  return mtl_pack::mtl_cast<mtl_half>(mtl_pack::mtl_from_unorm565(x));
}

}  // namespace metal
