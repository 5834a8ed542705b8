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

METAL_FUNC float clamp_nan0(float v, float lo, float hi) { return v != v ? 0.0f : v < lo ? lo : v > hi ? hi : v; }
METAL_FUNC unsigned unorm(float v, float m) { return unsigned(METAL_LIBM(rint)(clamp_nan0(v, 0.0f, 1.0f) * m)); }
METAL_FUNC unsigned snorm(float v, float m, unsigned mask) {
  return unsigned(int(METAL_LIBM(rint)(clamp_nan0(v, -1.0f, 1.0f) * m))) & mask;
}
// In double, then rounded once: c / m correctly rounded to float whatever the fast-math flags
// make of a float division (a reciprocal on the CPU, an approximation on CUDA).
METAL_FUNC float from_unorm(unsigned c, float m) { return float(double(c) / double(m)); }
METAL_FUNC float from_snorm(int c, float m) {
  const float v = float(double(c) / double(m));
  return v < -1.0f ? -1.0f : v;
}
METAL_FUNC float linear_to_srgb(float c) {
  if (c != c) return 0.0f;
  if (c > 1.0f) return 1.0f;
  if (c < 0.0f) return 0.0f;
  if (c < 0.0031308f) return 12.92f * c;
  return 1.055f * METAL_LIBM(pow)(c, 1.0f / 2.4f) - 0.055f;
}
METAL_FUNC float srgb_to_linear(float c) {
  return c <= 0.04045f ? c / 12.92f : METAL_LIBM(pow)((c + 0.055f) / 1.055f, 2.4f);
}
template <class T> METAL_FUNC float f(const T& x) { return mtl_detail::convert<float>(x); }
template <class T, int N> METAL_FUNC vec<T, N> cast(const vec<float, N>& v) {
  vec<T, N> r;
  for (int i = 0; i < N; ++i) r[i] = mtl_detail::convert<T>(v[i]);
  return r;
}

template <class T> METAL_FUNC unsigned unorm4x8(const vec<T, 4>& v) {
  return unorm(f(v.x), 255.0f) | unorm(f(v.y), 255.0f) << 8 | unorm(f(v.z), 255.0f) << 16 | unorm(f(v.w), 255.0f) << 24;
}
template <class T> METAL_FUNC unsigned snorm4x8(const vec<T, 4>& v) {
  return snorm(f(v.x), 127.0f, 0xffu) | snorm(f(v.y), 127.0f, 0xffu) << 8 | snorm(f(v.z), 127.0f, 0xffu) << 16 |
         snorm(f(v.w), 127.0f, 0xffu) << 24;
}
template <class T> METAL_FUNC unsigned srgb_unorm4x8(const vec<T, 4>& v) {
  return unorm(linear_to_srgb(f(v.x)), 255.0f) | unorm(linear_to_srgb(f(v.y)), 255.0f) << 8 |
         unorm(linear_to_srgb(f(v.z)), 255.0f) << 16 | unorm(f(v.w), 255.0f) << 24;
}
template <class T> METAL_FUNC unsigned unorm2x16(const vec<T, 2>& v) {
  return unorm(f(v.x), 65535.0f) | unorm(f(v.y), 65535.0f) << 16;
}
template <class T> METAL_FUNC unsigned snorm2x16(const vec<T, 2>& v) {
  return snorm(f(v.x), 32767.0f, 0xffffu) | snorm(f(v.y), 32767.0f, 0xffffu) << 16;
}
template <class T> METAL_FUNC unsigned unorm10a2(const vec<T, 4>& v) {
  return unorm(f(v.x), 1023.0f) | unorm(f(v.y), 1023.0f) << 10 | unorm(f(v.z), 1023.0f) << 20 | unorm(f(v.w), 3.0f) << 30;
}
template <class T> METAL_FUNC unsigned short unorm565(const vec<T, 3>& v) {
  return (unsigned short)(unorm(f(v.x), 31.0f) | unorm(f(v.y), 63.0f) << 5 | unorm(f(v.z), 31.0f) << 11);
}

METAL_FUNC vec<float, 4> from_unorm4x8(unsigned x) {
  return vec<float, 4>(from_unorm(x & 0xffu, 255.0f), from_unorm(x >> 8 & 0xffu, 255.0f),
                       from_unorm(x >> 16 & 0xffu, 255.0f), from_unorm(x >> 24, 255.0f));
}
METAL_FUNC vec<float, 4> from_snorm4x8(unsigned x) {
  return vec<float, 4>(from_snorm((signed char)(x & 0xffu), 127.0f), from_snorm((signed char)(x >> 8 & 0xffu), 127.0f),
                       from_snorm((signed char)(x >> 16 & 0xffu), 127.0f), from_snorm((signed char)(x >> 24), 127.0f));
}
METAL_FUNC vec<float, 4> from_srgb4x8(unsigned x) {
  const vec<float, 4> u = from_unorm4x8(x);
  return vec<float, 4>(srgb_to_linear(u.x), srgb_to_linear(u.y), srgb_to_linear(u.z), u.w);
}
METAL_FUNC vec<float, 2> from_unorm2x16(unsigned x) {
  return vec<float, 2>(from_unorm(x & 0xffffu, 65535.0f), from_unorm(x >> 16, 65535.0f));
}
METAL_FUNC vec<float, 2> from_snorm2x16(unsigned x) {
  return vec<float, 2>(from_snorm((short)(x & 0xffffu), 32767.0f), from_snorm((short)(x >> 16), 32767.0f));
}
METAL_FUNC vec<float, 4> from_unorm10a2(unsigned x) {
  return vec<float, 4>(from_unorm(x & 0x3ffu, 1023.0f), from_unorm(x >> 10 & 0x3ffu, 1023.0f),
                       from_unorm(x >> 20 & 0x3ffu, 1023.0f), from_unorm(x >> 30, 3.0f));
}
METAL_FUNC vec<float, 3> from_unorm565(unsigned x) {
  return vec<float, 3>(from_unorm(x & 0x1fu, 31.0f), from_unorm(x >> 5 & 0x3fu, 63.0f), from_unorm(x >> 11 & 0x1fu, 31.0f));
}

}  // namespace mtl_pack

// One function per name and vector type, as MSL declares them: a packed_float4 argument converts.
#define METAL_PACK_PAIR(KIND, N, RET)                                                                        \
  METAL_FUNC RET pack_float_to_##KIND(const vec<float, N>& v) { return mtl_pack::KIND(v); }                  \
  METAL_FUNC RET pack_half_to_##KIND(const vec<mtl_half, N>& v) { return mtl_pack::KIND(v); }
METAL_PACK_PAIR(unorm4x8, 4, mtl_uint)
METAL_PACK_PAIR(snorm4x8, 4, mtl_uint)
METAL_PACK_PAIR(srgb_unorm4x8, 4, mtl_uint)
METAL_PACK_PAIR(unorm2x16, 2, mtl_uint)
METAL_PACK_PAIR(snorm2x16, 2, mtl_uint)
METAL_PACK_PAIR(unorm10a2, 4, mtl_uint)
METAL_PACK_PAIR(unorm565, 3, mtl_ushort)
#undef METAL_PACK_PAIR

#define METAL_UNPACK_PAIR(NAME, FROM, N, ARG)                                                                 \
  METAL_FUNC vec<float, N> unpack_##NAME##_to_float(ARG x) { return mtl_pack::FROM(x); }                     \
  METAL_FUNC vec<mtl_half, N> unpack_##NAME##_to_half(ARG x) { return mtl_pack::cast<mtl_half>(mtl_pack::FROM(x)); }
METAL_UNPACK_PAIR(unorm4x8, from_unorm4x8, 4, mtl_uint)
METAL_UNPACK_PAIR(snorm4x8, from_snorm4x8, 4, mtl_uint)
METAL_UNPACK_PAIR(unorm4x8_srgb, from_srgb4x8, 4, mtl_uint)
METAL_UNPACK_PAIR(unorm2x16, from_unorm2x16, 2, mtl_uint)
METAL_UNPACK_PAIR(snorm2x16, from_snorm2x16, 2, mtl_uint)
METAL_UNPACK_PAIR(unorm10a2, from_unorm10a2, 4, mtl_uint)
METAL_UNPACK_PAIR(unorm565, from_unorm565, 3, mtl_ushort)
#undef METAL_UNPACK_PAIR

}  // namespace metal
