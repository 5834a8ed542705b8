// metalcall MSL prelude, CUDA only: MSL's mixed arithmetic of half with float and integers
// for CUDA's __half, whose many implicit conversions (CUDA >= 12.2) make `h * f` ambiguous.
#pragma once
#include "metal_config.h"

#if METAL_CUDA
// MSL's usual arithmetic conversions: half op float (or a double literal) is float, half op
// integer is half. These sit in the global namespace, __half's own, so that argument-
// dependent lookup finds them from any namespace; half op half stays CUDA's operator.
#define METAL_HALF_MIXED(OP)                                                                                    \
  METAL_FUNC float operator OP(__half a, float b) { return __half2float(a) OP b; }                              \
  METAL_FUNC float operator OP(float a, __half b) { return a OP __half2float(b); }                              \
  METAL_FUNC float operator OP(__half a, double b) { return __half2float(a) OP float(b); }                       \
  METAL_FUNC float operator OP(double a, __half b) { return float(a) OP __half2float(b); }                      \
  template <class I, metal::enable_if_t<metal::is_integral<I>::value, int> = 0>                                 \
  METAL_FUNC __half operator OP(__half a, I b) { return __float2half_rn(__half2float(a) OP float(b)); }         \
  template <class I, metal::enable_if_t<metal::is_integral<I>::value, int> = 0>                                 \
  METAL_FUNC __half operator OP(I a, __half b) { return __float2half_rn(float(a) OP __half2float(b)); }
METAL_HALF_MIXED(+)
METAL_HALF_MIXED(-)
METAL_HALF_MIXED(*)
METAL_HALF_MIXED(/)
#undef METAL_HALF_MIXED

// Comparisons of half with float or an integer compare the values in float.
#define METAL_HALF_COMPARE(OP)                                                                                  \
  METAL_FUNC bool operator OP(__half a, float b) { return __half2float(a) OP b; }                               \
  METAL_FUNC bool operator OP(float a, __half b) { return a OP __half2float(b); }                               \
  METAL_FUNC bool operator OP(__half a, double b) { return __half2float(a) OP float(b); }                       \
  METAL_FUNC bool operator OP(double a, __half b) { return float(a) OP __half2float(b); }                       \
  template <class I, metal::enable_if_t<metal::is_integral<I>::value, int> = 0>                                 \
  METAL_FUNC bool operator OP(__half a, I b) { return __half2float(a) OP float(b); }                            \
  template <class I, metal::enable_if_t<metal::is_integral<I>::value, int> = 0>                                 \
  METAL_FUNC bool operator OP(I a, __half b) { return float(a) OP __half2float(b); }
METAL_HALF_COMPARE(<)
METAL_HALF_COMPARE(>)
METAL_HALF_COMPARE(<=)
METAL_HALF_COMPARE(>=)
METAL_HALF_COMPARE(==)
METAL_HALF_COMPARE(!=)
#undef METAL_HALF_COMPARE

// float op= half: the built-in candidates for every arithmetic type tie without these.
METAL_FUNC float& operator+=(float& a, __half b) { return a += __half2float(b); }
METAL_FUNC float& operator-=(float& a, __half b) { return a -= __half2float(b); }
METAL_FUNC float& operator*=(float& a, __half b) { return a *= __half2float(b); }
METAL_FUNC float& operator/=(float& a, __half b) { return a /= __half2float(b); }
#endif

#if METAL_CUDA
namespace metal {
namespace mtl_rt {
// An integer literal that is a whole branch of `?:` (the CUDA translator wraps it:
// msl/conditional_literals.hpp). It converts to the other branch's type only, so
// `c ? h : 0` is half, as in MSL, where __half alone would convert both ways.
struct int_literal {
  long long value;
  template <class T>
  METAL_FUNC constexpr operator T() const {
    return T(value);
  }
};
}  // namespace mtl_rt
}  // namespace metal
#endif
