// metalcall MSL prelude, CUDA only: MSL's mixed arithmetic of half with float and integers
// for CUDA's __half, whose many implicit conversions (CUDA >= 12.2) make `h * f` ambiguous.
#pragma once
#include "metal_config.h"

#if METAL_CUDA
// MSL's usual arithmetic conversions: half op float (or a double literal) is float, half op
// integer is half: the integer is rounded to half first (`h * 2049` is `h * 2048.0h`, and
// `h < 2049` false for h = 2048), as the CPU's _Float16 does. These sit in the global
// namespace, __half's own, so that argument-dependent lookup finds them from any namespace;
// half op half stays CUDA's operator.
template <class I>
METAL_FUNC float metal_int_as_half(I b) {  // b rounded to half once, as a float
  if constexpr (sizeof(I) < 8)
    return __half2float(I(-1) < I(0) ? __int2half_rn(int(b)) : __uint2half_rn((unsigned int)b));
  else
    return __half2float(I(-1) < I(0) ? __ll2half_rn((long long)b) : __ull2half_rn((unsigned long long)b));
}
#define METAL_HALF_MIXED(OP)                                                                                    \
  METAL_FUNC float operator OP(__half a, float b) { return __half2float(a) OP b; }                              \
  METAL_FUNC float operator OP(float a, __half b) { return a OP __half2float(b); }                              \
  METAL_FUNC float operator OP(__half a, double b) { return __half2float(a) OP float(b); }                       \
  METAL_FUNC float operator OP(double a, __half b) { return float(a) OP __half2float(b); }                      \
  template <class I, metal::enable_if_t<metal::mtl_detail::is_int_or_bool<I>::value, int> = 0>                                 \
  METAL_FUNC __half operator OP(__half a, I b) { return __float2half_rn(__half2float(a) OP metal_int_as_half(b)); } \
  template <class I, metal::enable_if_t<metal::mtl_detail::is_int_or_bool<I>::value, int> = 0>                                 \
  METAL_FUNC __half operator OP(I a, __half b) { return __float2half_rn(metal_int_as_half(a) OP __half2float(b)); }
METAL_HALF_MIXED(+)
METAL_HALF_MIXED(-)
METAL_HALF_MIXED(*)
METAL_HALF_MIXED(/)
#undef METAL_HALF_MIXED

// Comparisons of half with float compare the values in float; with an integer, the integer
// rounded to half first (MSL's usual arithmetic conversions).
#define METAL_HALF_COMPARE(OP)                                                                                  \
  METAL_FUNC bool operator OP(__half a, float b) { return __half2float(a) OP b; }                               \
  METAL_FUNC bool operator OP(float a, __half b) { return a OP __half2float(b); }                               \
  METAL_FUNC bool operator OP(__half a, double b) { return __half2float(a) OP float(b); }                       \
  METAL_FUNC bool operator OP(double a, __half b) { return float(a) OP __half2float(b); }                       \
  template <class I, metal::enable_if_t<metal::mtl_detail::is_int_or_bool<I>::value, int> = 0>                                 \
  METAL_FUNC bool operator OP(__half a, I b) { return __half2float(a) OP metal_int_as_half(b); }               \
  template <class I, metal::enable_if_t<metal::mtl_detail::is_int_or_bool<I>::value, int> = 0>                                 \
  METAL_FUNC bool operator OP(I a, __half b) { return metal_int_as_half(a) OP __half2float(b); }
METAL_HALF_COMPARE(<)
METAL_HALF_COMPARE(>)
METAL_HALF_COMPARE(<=)
METAL_HALF_COMPARE(>=)
METAL_HALF_COMPARE(==)
METAL_HALF_COMPARE(!=)
#undef METAL_HALF_COMPARE

// half op half. With __builtin_bit_cast, metal_half.h leaves out cuda_fp16's operators
// (__CUDA_NO_HALF_OPERATORS__) and these take their place: the same intrinsics at run time,
// and in a constant expression (`constexpr half x = -numeric_limits<half>::infinity()`,
// MLX's `static_assert((complex_t<half>{1.0h, 2.0h} * …).real == -5.0h)`, as on Metal) the
// value computed in float from the bits and rounded to half.
#if METAL_HAS_BIT_CAST
namespace metal {
namespace mtl_rt {
METAL_FUNC constexpr unsigned short half_bits(__half h) { return __builtin_bit_cast(unsigned short, h); }
METAL_FUNC constexpr __half half_of_bits(unsigned short b) { return __half(__half_raw{b}); }
METAL_FUNC constexpr float half_to_float_exact(unsigned short h) {
  const unsigned int sign = unsigned(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  if (e == 0) return sign ? -(float(m) * 0x1p-24f) : float(m) * 0x1p-24f;  // zero or subnormal
  if (e == 31) return __builtin_bit_cast(float, sign | 0x7f800000u | (m << 13));
  return __builtin_bit_cast(float, sign | ((e + 112u) << 23) | (m << 13));
}
// float → half, round to nearest even, in integers (constant expressions).
METAL_FUNC constexpr unsigned short half_from_float_exact(float f) {
  const unsigned int u = __builtin_bit_cast(unsigned int, f), sign = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return (unsigned short)(sign | 0x7e00u);  // NaN
  if (a >= 0x477ff000u) return (unsigned short)(sign | 0x7c00u);  // 65520 and above: infinity
  if (a < 0x38800000u) {  // below 2^-14: a multiple of 2^-24 (or zero)
    const unsigned int e = a >> 23;
    if (e < 102) return (unsigned short)sign;
    const unsigned int m = (a & 0x7fffffu) | 0x800000u, shift = 126u - e;
    unsigned int q = m >> shift;
    const unsigned int rest = m & ((1u << shift) - 1u), tie = 1u << (shift - 1u);
    if (rest > tie || (rest == tie && (q & 1u))) ++q;
    return (unsigned short)(sign | q);
  }
  const unsigned int r = a - 0x38000000u;  // rebias the exponent from 127 to 15
  return (unsigned short)(sign | ((r + 0xfffu + ((r >> 13) & 1u)) >> 13));
}
// The translator's `1.0h` (metal_half.h): constexpr, and __float2half_rn at run time.
METAL_FUNC constexpr __half half_lit(float f) {
  if (__builtin_is_constant_evaluated()) return half_of_bits(half_from_float_exact(f));
  return __float2half_rn(f);
}
METAL_FUNC constexpr float half_value(__half h) { return half_to_float_exact(half_bits(h)); }
// The translator's `U(0)`, `static_cast<U>(1.0f)`, `half(0)` (a literal to a template type
// parameter or half, msl/passes/literal_casts.hpp): X(v), constexpr when X is half.
template <class X>
struct literal_cast {
  template <class L>
  static METAL_FUNC constexpr X from(L v) {
    return X(v);
  }
  static METAL_FUNC constexpr X from(__half v) {  // U(1.0h) with U = float: through the value
    if (__builtin_is_constant_evaluated()) return X(half_value(v));
    return X(v);
  }
};
template <>
struct literal_cast<__half> {
  // Numbers convert in constant evaluation too (program-scope constants); anything else (a
  // class with its own conversion) as __half(v) does.
  template <class L>
  static METAL_FUNC constexpr __half from(L v) {
    if constexpr (metal::mtl_detail::is_scalar<L>::value) {
      if (__builtin_is_constant_evaluated()) return half_of_bits(half_from_float_exact(float(v)));
    }
    return __half(v);
  }
  static METAL_FUNC constexpr __half from(__half v) { return v; }  // U(1.0h): already half
};
}  // namespace mtl_rt
}  // namespace metal

namespace metal {
namespace mtl_rt {
// Half division correctly rounded, as MSL's table 8.3 asks in both math modes (it has no
// fast-math column for half) and as the CPU gives it: the float quotient rounded to nearest
// (div.rn, whatever NVRTC's flags), then to half, a double rounding that is exact since float
// carries more than twice half's 11 bits plus two. CUDA's __hdiv multiplies by rcp.approx's
// reciprocal and refines only tiny quotients.
METAL_FUNC __half half_divide(const __half a, const __half b) {
  return __float2half_rn(__fdiv_rn(__half2float(a), __half2float(b)));
}
}  // namespace mtl_rt
}  // namespace metal

#define METAL_HALF_ARITHMETIC(OP, INTRINSIC)                                                        \
  METAL_FUNC constexpr __half operator OP(const __half& a, const __half& b) {                      \
    if (__builtin_is_constant_evaluated())                                                          \
      return metal::mtl_rt::half_lit(metal::mtl_rt::half_value(a) OP metal::mtl_rt::half_value(b)); \
    return INTRINSIC(a, b);                                                                         \
  }
METAL_HALF_ARITHMETIC(+, __hadd)
METAL_HALF_ARITHMETIC(-, __hsub)
METAL_HALF_ARITHMETIC(*, __hmul)
METAL_HALF_ARITHMETIC(/, metal::mtl_rt::half_divide)
#undef METAL_HALF_ARITHMETIC
#define METAL_HALF_EQUALITY(OP, INTRINSIC)                                               \
  METAL_FUNC constexpr bool operator OP(const __half& a, const __half& b) {             \
    if (__builtin_is_constant_evaluated())                                               \
      return metal::mtl_rt::half_value(a) OP metal::mtl_rt::half_value(b);             \
    return INTRINSIC(a, b);                                                              \
  }
METAL_HALF_EQUALITY(==, __heq)
METAL_HALF_EQUALITY(!=, __hneu)
METAL_HALF_EQUALITY(<, __hlt)
METAL_HALF_EQUALITY(>, __hgt)
METAL_HALF_EQUALITY(<=, __hle)
METAL_HALF_EQUALITY(>=, __hge)
#undef METAL_HALF_EQUALITY
METAL_FUNC constexpr __half operator+(const __half& h) { return h; }
METAL_FUNC constexpr __half operator-(const __half& h) {
  if (__builtin_is_constant_evaluated()) return metal::mtl_rt::half_of_bits((unsigned short)(metal::mtl_rt::half_bits(h) ^ 0x8000u));
  return __hneg(h);
}
METAL_FUNC __half& operator+=(__half& a, const __half& b) { return a = __hadd(a, b); }
METAL_FUNC __half& operator-=(__half& a, const __half& b) { return a = __hsub(a, b); }
METAL_FUNC __half& operator*=(__half& a, const __half& b) { return a = __hmul(a, b); }
METAL_FUNC __half& operator/=(__half& a, const __half& b) { return a = metal::mtl_rt::half_divide(a, b); }
METAL_FUNC __half& operator++(__half& h) { return h = __hadd(h, metal::mtl_rt::half_of_bits(0x3c00)); }
METAL_FUNC __half& operator--(__half& h) { return h = __hsub(h, metal::mtl_rt::half_of_bits(0x3c00)); }
METAL_FUNC __half operator++(__half& h, int) {
  const __half old = h;
  ++h;
  return old;
}
METAL_FUNC __half operator--(__half& h, int) {
  const __half old = h;
  --h;
  return old;
}
#else
namespace metal {
namespace mtl_rt {
METAL_FUNC __half half_lit(float f) { return __float2half_rn(f); }
template <class X>
struct literal_cast {
  template <class L>
  static METAL_FUNC X from(L v) {
    return X(v);
  }
};
}  // namespace mtl_rt
}  // namespace metal
#endif

// float op= half: the built-in candidates for every arithmetic type tie without these.
METAL_FUNC float& operator+=(float& a, __half b) { return a += __half2float(b); }
METAL_FUNC float& operator-=(float& a, __half b) { return a -= __half2float(b); }
METAL_FUNC float& operator*=(float& a, __half b) { return a *= __half2float(b); }
METAL_FUNC float& operator/=(float& a, __half b) { return a /= __half2float(b); }
// half op= float is h = half(float(h) op f), one rounding to half; CUDA's __half op=(const
// __half&) took f rounded to half first: 1.0h + (2^-11 + 2^-22) is 1 + 2^-10, not the tie 1.0h.
// Only float and double: an integer stays on that path, rounded to half first as MSL says.
#define METAL_HALF_COMPOUND_FLOAT(OP)                                                                \
  template <class F, metal::enable_if_t<metal::is_same<F, float>::value || metal::is_same<F, double>::value, \
                                        int> = 0>                                                    \
  METAL_FUNC __half& operator OP##=(__half& a, F b) {                                                \
    return a = __float2half_rn(__half2float(a) OP float(b));                                         \
  }
METAL_HALF_COMPOUND_FLOAT(+)
METAL_HALF_COMPOUND_FLOAT(-)
METAL_HALF_COMPOUND_FLOAT(*)
METAL_HALF_COMPOUND_FLOAT(/)
#undef METAL_HALF_COMPOUND_FLOAT
#endif

#if METAL_CUDA
// log1p of a half. MSL has no log1p: MLX declares log1p(float), log1p(bfloat16_t) and
// log1p(complex64_t) and calls it with half (unary's Log1p, binary's and scan's LogAddExp).
// Metal promotes half to float; CUDA's __half, a class, reaches float by its conversion
// operator and complex64_t by complex_t's converting constructor, two user-defined
// conversions, so the call was ambiguous. This exact match takes Metal's path: the value in
// float, returned as float (the caller rounds it, as after the promotion). A template, so
// that a source's own non-template log1p(half) still wins; visible to unqualified calls
// through `using namespace metal`. CUDA only: the CPU's _Float16 promotes as Metal's half.
namespace metal {
template <class H, enable_if_t<is_same<H, __half>::value, int> = 0>
METAL_FUNC float log1p(H x) {
  return log1pf(__half2float(x));
}
namespace mtl_rt {
// `h = x` of a long or ulong, which the CUDA translation writes `h = half_arg(x)`
// (passes/small_negations.hpp): __half has constructors for them but no operator=, and its
// other operator= tie (`out[i] = as_type<ulong>(v)` into a half buffer: fuzz seed 9401).
template <class X> METAL_FUNC X&& half_arg(X&& x) { return static_cast<X&&>(x); }
METAL_FUNC __half half_arg(long x) { return __half(x); }
METAL_FUNC __half half_arg(unsigned long x) { return __half(x); }
}  // namespace mtl_rt
}  // namespace metal
#endif
