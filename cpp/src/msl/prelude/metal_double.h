// metalcall MSL prelude: double-precision math, an extension of the CPU and CUDA
// backends (Metal has no double; metalcall.numpy's float64 arrays need it).
//
// Only MSL's own function names get a double overload, so the front end's rules
// (docs/msl-rules.md) still accept exactly the Metal standard library's names. Each
// overload is a template enabled for double alone: under CUDA the global
// non-template sin(double) ... wins the tie and computes the same; on the CPU the
// compiler's builtins are libm without a header.
#pragma once
#include "metal_math.h"

#if METAL_CUDA
#define METAL_LIBM_DOUBLE(F) ::F
#else
#define METAL_LIBM_DOUBLE(F) __builtin_##F
#endif

namespace metal {
namespace mtl_detail {
template <class... A> using if_double = enable_if_t<(is_same<A, double>::value && ...), int>;
}  // namespace mtl_detail

#define METAL_DOUBLE1(NAME)                                                                              \
  template <class T, mtl_detail::if_double<T> = 0> METAL_FUNC double NAME(T x) { return METAL_LIBM_DOUBLE(NAME)(x); }
#define METAL_DOUBLE2(NAME)                                                                              \
  template <class A, class B, mtl_detail::if_double<A, B> = 0> METAL_FUNC double NAME(A x, B y) {        \
    return METAL_LIBM_DOUBLE(NAME)(x, y);                                                                \
  }

METAL_DOUBLE1(acos) METAL_DOUBLE1(acosh) METAL_DOUBLE1(asin) METAL_DOUBLE1(asinh) METAL_DOUBLE1(atan)
METAL_DOUBLE1(atanh) METAL_DOUBLE1(ceil) METAL_DOUBLE1(cos) METAL_DOUBLE1(cosh) METAL_DOUBLE1(exp)
METAL_DOUBLE1(exp2) METAL_DOUBLE1(fabs) METAL_DOUBLE1(floor) METAL_DOUBLE1(log) METAL_DOUBLE1(log2)
METAL_DOUBLE1(log10) METAL_DOUBLE1(rint) METAL_DOUBLE1(round) METAL_DOUBLE1(sin) METAL_DOUBLE1(sinh)
METAL_DOUBLE1(sqrt) METAL_DOUBLE1(tan) METAL_DOUBLE1(tanh) METAL_DOUBLE1(trunc)
METAL_DOUBLE2(atan2) METAL_DOUBLE2(copysign) METAL_DOUBLE2(fdim) METAL_DOUBLE2(fmax) METAL_DOUBLE2(fmin)
METAL_DOUBLE2(fmod) METAL_DOUBLE2(pow)

// abs of a double: the CUDA translation writes every abs call metal::abs (target_cuda.cpp).
template <class T, mtl_detail::if_double<T> = 0> METAL_FUNC double abs(T x) { return METAL_LIBM_DOUBLE(fabs)(x); }

template <class A, class B, class C, mtl_detail::if_double<A, B, C> = 0>
METAL_FUNC double fma(A x, B y, C z) { return METAL_LIBM_DOUBLE(fma)(x, y, z); }

// Classification (metal_relational.h's names).
template <class T, mtl_detail::if_double<T> = 0> METAL_FUNC bool isnan(T x) { return METAL_LIBM_DOUBLE(isnan)(x); }
template <class T, mtl_detail::if_double<T> = 0> METAL_FUNC bool isinf(T x) { return METAL_LIBM_DOUBLE(isinf)(x); }
template <class T, mtl_detail::if_double<T> = 0> METAL_FUNC bool isfinite(T x) { return METAL_LIBM_DOUBLE(isfinite)(x); }
template <class T, mtl_detail::if_double<T> = 0> METAL_FUNC bool signbit(T x) { return METAL_LIBM_DOUBLE(signbit)(x); }

#undef METAL_DOUBLE1
#undef METAL_DOUBLE2
}  // namespace metal
