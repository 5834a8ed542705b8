// metalcall MSL prelude: the texel conversions of Metal's sRGB and packed pixel formats, which
// metal_texture_sampling.h's load() and store() apply (plain formats convert there).
//   sRGB (r8/rg8/rgba8/bgra8 unorm_srgb): r, g, b are read as the specification's sRGB-to-linear
//   function of c / 255 and written as round(255 x linear-to-sRGB(v)); alpha is plain unorm.
//   Both in double, rounded once: within the specification's tolerance, and the same on every
//   backend whatever the kernel's fast-math flag (a texture unit's conversion).
//   rgb10a2: 10-bit r, g, b and 2-bit a from the lowest bits, unorm (or uint) as the plain forms.
//   rg11b10float: unsigned floats, 5-bit exponent (bias 15), 6-bit (r, g) and 5-bit (b) mantissas,
//   denormals, infinity and NaN as in half; writes round to nearest even (as to half), negative
//   values and -infinity store 0, NaN a NaN, values past the largest finite infinity.
//   rgb9e5float: 9-bit mantissas with one 5-bit exponent, value m x 2^(e - 24); writes by the
//   shared-exponent algorithm of OpenGL's EXT_texture_shared_exponent (clamp to [0, 65408], NaN
//   to 0; the exponent of the largest component; mantissas rounded half up).
#pragma once

namespace metal {

namespace mtl_tex {

enum layout_kind { plain = 0, bgra = 1, rgb10a2 = 2, rg11b10 = 3, rgb9e5 = 4 };

// 2^n as a double, exactly (-1022 <= n <= 1023), without libm.
METAL_FUNC double pow2(int n) {
  const unsigned long long bits = (unsigned long long)(n + 1023) << 52;
  double d;
  for (unsigned i = 0; i < 8; ++i) reinterpret_cast<unsigned char*>(&d)[i] = reinterpret_cast<const unsigned char*>(&bits)[i];
  return d;
}
// floor(log2(v)) of a positive float from its exponent bits (-127 for float denormals: below every use).
METAL_FUNC int float_exponent(float v) {
  unsigned bits;
  for (unsigned i = 0; i < 4; ++i) reinterpret_cast<unsigned char*>(&bits)[i] = reinterpret_cast<const unsigned char*>(&v)[i];
  return int((bits >> 23) & 255u) - 127;
}
METAL_FUNC float float_from_bits(unsigned bits) {
  float v;
  for (unsigned i = 0; i < 4; ++i) reinterpret_cast<unsigned char*>(&v)[i] = reinterpret_cast<const unsigned char*>(&bits)[i];
  return v;
}

// sRGB code c (0..255) as linear float.
METAL_FUNC float srgb_to_linear(unsigned c) {
  const double s = double(c) / 255.0;
  return float(s <= 0.04045 ? s / 12.92 : METAL_LIBM_DOUBLE(pow)((s + 0.055) / 1.055, 2.4));
}
// Linear v as an sRGB code: NaN 0, clamped to [0, 1], encoded, scaled to 255 and rounded to nearest even.
METAL_FUNC unsigned linear_to_srgb(float v) {
  double c = v != v ? 0.0 : v < 0.0f ? 0.0 : v > 1.0f ? 1.0 : double(v);
  c = c < 0.0031308 ? 12.92 * c : 1.055 * METAL_LIBM_DOUBLE(pow)(c, 1.0 / 2.4) - 0.055;
  return unsigned(METAL_LIBM_DOUBLE(rint)(c * 255.0));
}

// An unsigned float of `m` mantissa bits and a 5-bit exponent (rg11b10's 11- and 10-bit fields).
METAL_FUNC float small_float_value(unsigned bits, unsigned m) {
  const unsigned e = bits >> m, mant = bits & ((1u << m) - 1u);
  if (e == 31u) return float_from_bits(mant ? 0x7fc00000u : 0x7f800000u);  // NaN, infinity
  return float(e == 0u ? double(mant) * pow2(-14 - int(m)) : double(mant + (1u << m)) * pow2(int(e) - 15 - int(m)));
}
METAL_FUNC unsigned small_float_bits(float v, unsigned m) {
  const unsigned inf = 31u << m;
  if (v != v) return inf | ((1u << m) - 1u);  // NaN
  if (!(v > 0.0f)) return 0u;                 // zero, negative, -infinity
  if (v > 3.402823466e+38f) return inf;
  int e = float_exponent(v);
  if (e < -14) e = -14;  // the denormal range: a fixed scale
  // v x 2^(m - e) lies in [0, 2^(m + 1)): rounded to nearest even in double (exact: a power of 2 scale).
  unsigned q = unsigned(METAL_LIBM_DOUBLE(rint)(double(v) * pow2(int(m) - e)));
  if (q == (2u << m)) q >>= 1, ++e;  // rounded up to the next power of two
  if (q < (1u << m)) return q;       // a denormal (e == -14)
  if (e > 15) return inf;            // past the largest finite value
  return unsigned(e + 15) << m | (q - (1u << m));
}

// A packed texel word as 4 floats (rgb10a2unorm, rg11b10float, rgb9e5float).
METAL_FUNC vec<float, 4> unpack_word(unsigned w, unsigned lay) {
  if (lay == rgb10a2) {
    return vec<float, 4>(float(double(w & 1023u) / 1023.0), float(double((w >> 10) & 1023u) / 1023.0),
                         float(double((w >> 20) & 1023u) / 1023.0), float(double(w >> 30) / 3.0));
  }
  if (lay == rg11b10)
    return vec<float, 4>(small_float_value(w & 2047u, 6), small_float_value((w >> 11) & 2047u, 6),
                         small_float_value(w >> 22, 5), 1.0f);
  const double scale = pow2(int(w >> 27) - 24);  // rgb9e5
  return vec<float, 4>(float(double(w & 511u) * scale), float(double((w >> 9) & 511u) * scale),
                       float(double((w >> 18) & 511u) * scale), 1.0f);
}

METAL_FUNC unsigned unorm_bits(float v, float m) {
  return unsigned(METAL_LIBM(rint)((v != v ? 0.0f : v < 0.0f ? 0.0f : v > 1.0f ? 1.0f : v) * m));
}
METAL_FUNC unsigned shared_mantissa(float v, double scale) {
  return unsigned(METAL_LIBM_DOUBLE(floor)(double(v) / scale + 0.5));
}
METAL_FUNC float rgb9e5_clamped(float v) { return v != v || v < 0.0f ? 0.0f : v > 65408.0f ? 65408.0f : v; }

// 4 floats as a packed texel word (rgb10a2unorm, rg11b10float, rgb9e5float).
METAL_FUNC unsigned pack_word(const vec<float, 4>& c, unsigned lay) {
  if (lay == rgb10a2)
    return unorm_bits(c.x, 1023.0f) | unorm_bits(c.y, 1023.0f) << 10 | unorm_bits(c.z, 1023.0f) << 20 | unorm_bits(c.w, 3.0f) << 30;
  if (lay == rg11b10) return small_float_bits(c.x, 6) | small_float_bits(c.y, 6) << 11 | small_float_bits(c.z, 5) << 22;
  const float r = rgb9e5_clamped(c.x), g = rgb9e5_clamped(c.y), b = rgb9e5_clamped(c.z);
  const float top = r > g ? (r > b ? r : b) : (g > b ? g : b);
  int e = top > 0.0f ? float_exponent(top) : -16;
  e = (e < -16 ? -16 : e) + 16;  // the biased shared exponent, before rounding
  double scale = pow2(e - 24);
  if (METAL_LIBM_DOUBLE(floor)(double(top) / scale + 0.5) == 512.0) ++e, scale *= 2.0;
  return shared_mantissa(r, scale) | shared_mantissa(g, scale) << 9 | shared_mantissa(b, scale) << 18 | unsigned(e) << 27;
}

// rgb10a2uint: the fields as integers; writes saturate (Metal leaves overflow undefined).
// Field i (0: r ... 3: a) of the word.
METAL_FUNC unsigned word_field(unsigned w, unsigned i) { return i < 3u ? (w >> (10u * i)) & 1023u : w >> 30; }
METAL_FUNC unsigned saturated_field(long long v, unsigned i) {
  const long long hi = i < 3u ? 1023 : 3;
  return unsigned(v < 0 ? 0 : v > hi ? hi : v) << (10u * i);
}

}  // namespace mtl_tex

}  // namespace metal
