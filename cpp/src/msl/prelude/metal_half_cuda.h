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

// -h of a half temporary, constexpr where __builtin_bit_cast is (MLX's Limits<half>:
// `constexpr half min = -numeric_limits<half>::infinity()`): a sign flip, as cuda_fp16's
// operator-(const __half&) computes it but not constexpr. An rvalue binds better to __half&&,
// so this one is chosen for temporaries; lvalues keep CUDA's.
#if METAL_HAS_BIT_CAST
METAL_FUNC constexpr __half operator-(__half&& h) {
  return __half(__half_raw{(unsigned short)(__builtin_bit_cast(unsigned short, h) ^ 0x8000u)});
}
#endif

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

// `c ? X : Y` with branches of mixed types: the CUDA translator writes it
// `c ? METALCALL_COND_ARMS((X), (Y))` (msl/conditional_literals.hpp), which casts each branch
// to cond_arm_t<decltype((it)), decltype((other))>: the branch's own type, reference and
// value category (a no-op cast) unless MSL's usual arithmetic conversions decide where
// CUDA's conditional is ambiguous: half or bfloat with float (float), with double (double),
// with an integer (the 16-bit type), half with bfloat (float).
template <class T> struct cond_bare { typedef T type; };  // without reference and cv
template <class T> struct cond_bare<T&> : cond_bare<T> {};
template <class T> struct cond_bare<T&&> : cond_bare<T> {};
template <class T> struct cond_bare<const T> : cond_bare<T> {};
template <class T> struct cond_bare<volatile T> : cond_bare<T> {};
template <class T> struct cond_bare<const volatile T> : cond_bare<T> {};
template <class T>
struct cond_is_16 : integral_constant<bool, is_same<T, __half>::value || is_same<T, mtl_bfloat>::value> {};
// The type MSL gives the pair (A, B), both bare, where CUDA's conditional is ambiguous; void: as written.
template <class A, class B, bool = cond_is_16<A>::value, bool = cond_is_16<B>::value>
struct cond_pick {
  typedef void type;
};
template <class A, class B>
struct cond_pick<A, B, true, true> {
  typedef typename conditional<is_same<A, B>::value, void, float>::type type;
};
template <class A, class B>
struct cond_pick<A, B, true, false> {
  typedef typename conditional<
      is_same<B, float>::value, float,
      typename conditional<is_same<B, double>::value, double,
                           typename conditional<is_integral<B>::value && !is_same<B, bool>::value, A, void>::type>::type>::type
      type;
};
template <class A, class B>
struct cond_pick<A, B, false, true> : cond_pick<B, A, true, false> {};
template <class Arm, class Other, class P = typename cond_pick<typename cond_bare<Arm>::type, typename cond_bare<Other>::type>::type>
struct cond_arm {
  typedef P type;
};
template <class Arm, class Other>
struct cond_arm<Arm, Other, void> {
  typedef Arm type;  // decltype((arm)): a cast to it changes nothing
};
template <class Arm, class Other>
using cond_arm_t = typename cond_arm<Arm, Other>::type;
}  // namespace mtl_rt
}  // namespace metal
#define METALCALL_COND_ARMS(x, y)                                       \
  static_cast<metal::mtl_rt::cond_arm_t<decltype((x)), decltype((y))>>(x) : \
  static_cast<metal::mtl_rt::cond_arm_t<decltype((y)), decltype((x))>>(y)
#endif
