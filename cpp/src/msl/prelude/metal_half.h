// metalcall MSL prelude: the 16-bit floating types half and bfloat.
// The translator renames `half` to `mtl_half`, `bfloat` to `mtl_bfloat`, and the
// literal `1.0h` to `mtl_half(1.0f)` (CUDA: `metal::mtl_rt::half_lit(1.0f)`, constexpr).
#pragma once
#include "metal_config.h"

#if METAL_CUDA
#if METAL_HAS_BIT_CAST
#define __CUDA_NO_HALF_OPERATORS__  // metal_half_cuda.h has them, constexpr
#endif
#include <cuda_fp16.h>
#define METAL_HALF_KIND 0  // __half
#elif defined(__FLT16_MAX__)
#define METAL_HALF_KIND 1  // _Float16: g++ >= 12, clang++ >= 15 (x86-64, arm64)
#else
#define METAL_HALF_KIND 2  // software half, e.g. clang++ 14 on x86-64
#endif

// bfloat constants (`constexpr bfloat x = bfloat(1.0f)`, as in MLX's limits) need
// constexpr conversions: __builtin_bit_cast where the compiler has it (NVRTC too);
// otherwise CUDA keeps its intrinsics.
#if METAL_CUDA && !METAL_HAS_BIT_CAST
#define METAL_HOST_CONSTEXPR
#else
#define METAL_HOST_CONSTEXPR constexpr
#endif

namespace metal {
namespace mtl_detail {
METAL_FUNC METAL_HOST_CONSTEXPR unsigned int float_bits(float f) {
#if METAL_CUDA && !METAL_HAS_BIT_CAST
  return __float_as_uint(f);
#else
  return __builtin_bit_cast(unsigned int, f);
#endif
}
METAL_FUNC METAL_HOST_CONSTEXPR float bits_float(unsigned int u) {
#if METAL_CUDA && !METAL_HAS_BIT_CAST
  return __uint_as_float(u);
#else
  return __builtin_bit_cast(float, u);
#endif
}
struct bfloat_bits_tag {};
struct half_bits_tag {};

// An integer as a float rounded to odd (a dropped nonzero bit sets the last kept one), so that
// rounding that float to bfloat's 8 bits rounds the integer once, as MSL converts. Through a
// float rounded to nearest it rounded twice: 2^24 + 2^16 + 1 gave 2^24, not 2^24 + 2^17.
template <class I>
METAL_FUNC METAL_HOST_CONSTEXPR float integer_to_float_odd(I i) {
  const bool negative = i < I(0);
  const unsigned long long v = (unsigned long long)i;
  const unsigned long long m = negative ? 0ull - v : v;  // |i|, LLONG_MIN's too
  int shift = 0;
  while ((m >> shift) >= (1ull << 24)) ++shift;
  unsigned long long kept = m >> shift;
  if (shift != 0 && (m & ((1ull << shift) - 1ull)) != 0) kept |= 1ull;
  const float f = float(kept) * float(1ull << shift);  // exact: kept < 2^24, shift <= 40
  return negative ? -f : f;
}

#if METAL_HALF_KIND == 2
// IEEE binary16 in software: storage plus conversions (round to nearest even);
// arithmetic goes through float and rounds back when stored.
struct soft_half {
  unsigned short bits;

  soft_half() = default;
  METAL_FUNC constexpr soft_half(half_bits_tag, unsigned short b) : bits(b) {}
  METAL_FUNC soft_half(float f) : bits(round_from(f)) {}
  METAL_FUNC operator float() const {
    const unsigned int sign = unsigned(bits & 0x8000u) << 16, e = (bits >> 10) & 0x1fu, m = bits & 0x3ffu;
    if (e == 0) {  // zero or subnormal: m * 2^-24
      const float v = float(m) * 0x1p-24f;
      return sign ? -v : v;
    }
    if (e == 31) return bits_float(sign | 0x7f800000u | (m << 13));
    return bits_float(sign | ((e + 112u) << 23) | (m << 13));
  }
  METAL_FUNC soft_half& operator+=(float o) { return *this = float(*this) + o; }
  METAL_FUNC soft_half& operator-=(float o) { return *this = float(*this) - o; }
  METAL_FUNC soft_half& operator*=(float o) { return *this = float(*this) * o; }
  METAL_FUNC soft_half& operator/=(float o) { return *this = float(*this) / o; }
  // h op= i: the integer rounded to half first, as h op i (mtl_bfloat's compound operators).
  template <class I, enable_if_t<is_int_or_bool<I>::value, int> = 0>
  METAL_FUNC soft_half& operator+=(I o) { return *this += float(soft_half(float(o))); }
  template <class I, enable_if_t<is_int_or_bool<I>::value, int> = 0>
  METAL_FUNC soft_half& operator-=(I o) { return *this -= float(soft_half(float(o))); }
  template <class I, enable_if_t<is_int_or_bool<I>::value, int> = 0>
  METAL_FUNC soft_half& operator*=(I o) { return *this *= float(soft_half(float(o))); }
  template <class I, enable_if_t<is_int_or_bool<I>::value, int> = 0>
  METAL_FUNC soft_half& operator/=(I o) { return *this /= float(soft_half(float(o))); }
  // half op half stays half, as in MSL (half op float is float, through the conversion).
  friend METAL_FUNC soft_half operator-(soft_half a) { return soft_half(half_bits_tag(), (unsigned short)(a.bits ^ 0x8000u)); }
  friend METAL_FUNC soft_half operator+(soft_half a) { return a; }
  friend METAL_FUNC soft_half operator+(soft_half a, soft_half b) { return soft_half(float(a) + float(b)); }
  friend METAL_FUNC soft_half operator-(soft_half a, soft_half b) { return soft_half(float(a) - float(b)); }
  friend METAL_FUNC soft_half operator*(soft_half a, soft_half b) { return soft_half(float(a) * float(b)); }
  friend METAL_FUNC soft_half operator/(soft_half a, soft_half b) { return soft_half(float(a) / float(b)); }

  static METAL_FUNC unsigned short round_from(float f) {
    const unsigned int u = float_bits(f), sign = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;
    if (a >= 0x7f800000u) return (unsigned short)(sign | (a > 0x7f800000u ? 0x7e00u : 0x7c00u));
    if (a >= 0x477ff000u) return (unsigned short)(sign | 0x7c00u);  // rounds to infinity
    if (a < 0x38800000u)  // below 2^-14: a multiple of 2^-24, rounded by rint
      return (unsigned short)(sign | unsigned(__builtin_rintf(bits_float(a) * 0x1p24f)));
    const unsigned int r = a - 0x38000000u;  // rebias the exponent from 127 to 15
    return (unsigned short)(sign | ((r + 0xfffu + ((r >> 13) & 1u)) >> 13));
  }
};
#endif
}  // namespace mtl_detail

#if METAL_HALF_KIND == 0
typedef __half mtl_half;
#elif METAL_HALF_KIND == 1
typedef _Float16 mtl_half;  // IEEE binary16 with native arithmetic, like MSL half
#else
typedef mtl_detail::soft_half mtl_half;
#endif
template <> struct mtl_detail::is_float<mtl_half> : true_type {};
// A function constant's half value (backends/translated/constant_literals.cpp): a constant
// expression, so `constant half h [[function_constant(0)]];` needs no dynamic initialisation
// (CUDA's __half(float) is not constexpr; half_lit is, in metal_half_cuda.h).
#if METAL_CUDA
#define METALCALL_HALF_CONSTANT(f) metal::mtl_rt::half_lit(f)
#else
#define METALCALL_HALF_CONSTANT(f) mtl_half(f)
#endif

// bfloat: the upper 16 bits of a float. Converting from float or an integer rounds to
// nearest even, once; arithmetic goes through float (as on GPUs without bfloat ALUs), and the
// result is rounded back when stored.
struct mtl_bfloat {
  unsigned short bits;

  mtl_bfloat() = default;
  METAL_FUNC constexpr mtl_bfloat(mtl_detail::bfloat_bits_tag, unsigned short b) : bits(b) {}
  METAL_FUNC METAL_HOST_CONSTEXPR mtl_bfloat(float f) : bits(round_from(f)) {}
  template <class I, enable_if_t<mtl_detail::is_int_or_bool<I>::value, int> = 0>
  METAL_FUNC METAL_HOST_CONSTEXPR mtl_bfloat(I i) : bits(round_from(mtl_detail::integer_to_float_odd(i))) {}
  METAL_FUNC METAL_HOST_CONSTEXPR operator float() const { return mtl_detail::bits_float(unsigned(bits) << 16); }

  METAL_FUNC mtl_bfloat& operator+=(float o) { return *this = float(*this) + o; }
  METAL_FUNC mtl_bfloat& operator-=(float o) { return *this = float(*this) - o; }
  METAL_FUNC mtl_bfloat& operator*=(float o) { return *this = float(*this) * o; }
  METAL_FUNC mtl_bfloat& operator/=(float o) { return *this = float(*this) / o; }
  // b op= i is b = b op i, the integer rounded to bfloat first (MSL's usual conversions): through
  // the float overloads `b += 257` gave 258 for b = 1, where b + 257 is 256.
#define METAL_BFLOAT_COMPOUND_INT(OP)                                        \
  template <class I, enable_if_t<mtl_detail::is_int_or_bool<I>::value, int> = 0> \
  METAL_FUNC mtl_bfloat& operator OP##=(I o) { return *this OP##= float(mtl_bfloat(o)); }
  METAL_BFLOAT_COMPOUND_INT(+)
  METAL_BFLOAT_COMPOUND_INT(-)
  METAL_BFLOAT_COMPOUND_INT(*)
  METAL_BFLOAT_COMPOUND_INT(/)
#undef METAL_BFLOAT_COMPOUND_INT
  METAL_FUNC mtl_bfloat& operator++() { return *this += 1.0f; }
  METAL_FUNC mtl_bfloat& operator--() { return *this -= 1.0f; }
  METAL_FUNC mtl_bfloat operator++(int) {
    const mtl_bfloat old = *this;
    *this += 1.0f;
    return old;
  }
  METAL_FUNC mtl_bfloat operator--(int) {
    const mtl_bfloat old = *this;
    *this -= 1.0f;
    return old;
  }
  // MSL's bfloat is a builtin type: a class that converts to a number (a mask struct with
  // `operator bool()`) may be assigned to it, a user-defined conversion then a standard
  // one. Here that would take two user-defined conversions, so assignment says it.
  template <class U, enable_if_t<__is_class(U), int> = 0,
            class = decltype(static_cast<float>(*static_cast<const U*>(nullptr)))>
  METAL_FUNC mtl_bfloat& operator=(const U& u) {
    return *this = mtl_bfloat(static_cast<float>(u));
  }

  // MSL's usual arithmetic conversions rank bfloat below float: bfloat op bfloat and
  // bfloat op integer are bfloat; bfloat op float (or half, or a double literal) is
  // float. Each is computed in float and rounded once. Without these, bfloat + bfloat
  // would be float here, and `c ? x : x + y` (x, y bfloat) an ambiguous conditional.
  friend METAL_FUNC METAL_HOST_CONSTEXPR mtl_bfloat operator-(mtl_bfloat a) {
    return mtl_bfloat(mtl_detail::bfloat_bits_tag(), (unsigned short)(a.bits ^ 0x8000u));
  }
  friend METAL_FUNC METAL_HOST_CONSTEXPR mtl_bfloat operator+(mtl_bfloat a) { return a; }
#define METAL_BFLOAT_ARITHMETIC(OP)                                                                                 \
  friend METAL_FUNC METAL_HOST_CONSTEXPR mtl_bfloat operator OP(mtl_bfloat a, mtl_bfloat b) {                       \
    return mtl_bfloat(float(a) OP float(b));                                                                        \
  }                                                                                                                 \
  friend METAL_FUNC METAL_HOST_CONSTEXPR float operator OP(mtl_bfloat a, float b) { return float(a) OP b; }         \
  friend METAL_FUNC METAL_HOST_CONSTEXPR float operator OP(float a, mtl_bfloat b) { return a OP float(b); }         \
  friend METAL_FUNC float operator OP(mtl_bfloat a, mtl_half b) { return float(a) OP float(b); }                    \
  friend METAL_FUNC float operator OP(mtl_half a, mtl_bfloat b) { return float(a) OP float(b); }                    \
  friend METAL_FUNC METAL_HOST_CONSTEXPR float operator OP(mtl_bfloat a, double b) { return float(a) OP float(b); } \
  friend METAL_FUNC METAL_HOST_CONSTEXPR float operator OP(double a, mtl_bfloat b) { return float(a) OP float(b); } \
  template <class I, enable_if_t<mtl_detail::is_int_or_bool<I>::value, int> = 0>                                                   \
  friend METAL_FUNC METAL_HOST_CONSTEXPR mtl_bfloat operator OP(mtl_bfloat a, I b) {                                \
    return mtl_bfloat(float(a) OP float(mtl_bfloat(b)));                                                           \
  }                                                                                                                 \
  template <class I, enable_if_t<mtl_detail::is_int_or_bool<I>::value, int> = 0>                                                   \
  friend METAL_FUNC METAL_HOST_CONSTEXPR mtl_bfloat operator OP(I a, mtl_bfloat b) {                                \
    return mtl_bfloat(float(mtl_bfloat(a)) OP float(b));                                                           \
  }
  METAL_BFLOAT_ARITHMETIC(+)
  METAL_BFLOAT_ARITHMETIC(-)
  METAL_BFLOAT_ARITHMETIC(*)
  METAL_BFLOAT_ARITHMETIC(/)
#undef METAL_BFLOAT_ARITHMETIC

  // A comparison with an integer rounds the integer to bfloat first, as arithmetic does (MSL's
  // usual arithmetic conversions: `u > bfloat(x)` compared u as a float before, fuzz seed 29208
  // #871); with bfloat, float, half or double the values compare in float.
#define METAL_BFLOAT_COMPARE(OP)                                                                   \
  template <class I, enable_if_t<mtl_detail::is_int_or_bool<I>::value, int> = 0>                   \
  friend METAL_FUNC METAL_HOST_CONSTEXPR bool operator OP(mtl_bfloat a, I b) {                     \
    return float(a) OP float(mtl_bfloat(b));                                                       \
  }                                                                                                \
  template <class I, enable_if_t<mtl_detail::is_int_or_bool<I>::value, int> = 0>                   \
  friend METAL_FUNC METAL_HOST_CONSTEXPR bool operator OP(I a, mtl_bfloat b) {                     \
    return float(mtl_bfloat(a)) OP float(b);                                                       \
  }
  METAL_BFLOAT_COMPARE(<)
  METAL_BFLOAT_COMPARE(>)
  METAL_BFLOAT_COMPARE(<=)
  METAL_BFLOAT_COMPARE(>=)
  METAL_BFLOAT_COMPARE(==)
  METAL_BFLOAT_COMPARE(!=)
#undef METAL_BFLOAT_COMPARE

  static METAL_FUNC METAL_HOST_CONSTEXPR unsigned short round_from(float f) {
    unsigned int u = mtl_detail::float_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((u >> 16) | 0x40u);  // quiet NaN
    u += 0x7fffu + ((u >> 16) & 1u);  // round to nearest, ties to even
    return (unsigned short)(u >> 16);
  }
};
template <> struct mtl_detail::is_float<mtl_bfloat> : true_type {};

namespace mtl_rt {
// An integer literal that is a whole branch of `?:` (the translator wraps it on CUDA and
// the CPU: msl/passes/conditional_literals.hpp). It converts to the other branch's type only, so
// `c ? h : 0` is half and `c ? b : 0` bfloat, as in MSL, where a class that converts both
// ways with int (CUDA's __half, bfloat) is ambiguous. Only to a type an integer builds: a
// checked array (checked mode, `c ? t : 0`) then decays to a pointer, as in MSL, and a
// checked pointer takes the literal as a null pointer (its own constructor, metal_checked.h).
struct int_literal {
  long long value;
  template <class T, class = decltype(T((long long)1))>
  METAL_FUNC constexpr operator T() const {
    return T(value);
  }
};
}  // namespace mtl_rt

}  // namespace metal

using metal::mtl_bfloat;
using metal::mtl_half;

#include "metal_half_cuda.h"  // half op float and half op integer on CUDA
