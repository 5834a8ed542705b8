// metalcall MSL prelude: the __metal_* builtins behind Apple's metal_stdlib that public
// kernels call directly (MLX's bf16_math.h defines its bfloat math with them), forwarded
// to the prelude's public functions. The trailing bool of the math ones is Apple's
// fast-math switch; the prelude's functions have one precision.
#pragma once

#define __METAL_MAYBE_FAST_MATH__ false
#define __METAL_FAST_MATH__ true
#define __METAL_PRECISE_MATH__ false

#define METALCALL_APPLE_UNARY(NAME, TARGET) \
  template <class T> METAL_FUNC T __metal_##NAME(T x, bool = false) { return metal::TARGET(x); }
#define METALCALL_APPLE_BINARY(NAME) \
  template <class T> METAL_FUNC T __metal_##NAME(T x, T y, bool = false) { return metal::NAME(x, y); }
#define METALCALL_APPLE_TERNARY(NAME) \
  template <class T> METAL_FUNC T __metal_##NAME(T x, T y, T z, bool = false) { return metal::NAME(x, y, z); }
METALCALL_APPLE_UNARY(fabs, fabs)
METALCALL_APPLE_UNARY(acos, acos)
METALCALL_APPLE_UNARY(acosh, acosh)
METALCALL_APPLE_UNARY(asin, asin)
METALCALL_APPLE_UNARY(asinh, asinh)
METALCALL_APPLE_UNARY(atan, atan)
METALCALL_APPLE_UNARY(atanh, atanh)
METALCALL_APPLE_UNARY(ceil, ceil)
METALCALL_APPLE_UNARY(cos, cos)
METALCALL_APPLE_UNARY(cosh, cosh)
METALCALL_APPLE_UNARY(cospi, cospi)
METALCALL_APPLE_UNARY(exp, exp)
METALCALL_APPLE_UNARY(exp10, exp10)
METALCALL_APPLE_UNARY(exp2, exp2)
METALCALL_APPLE_UNARY(floor, floor)
METALCALL_APPLE_UNARY(fract, fract)
METALCALL_APPLE_UNARY(log, log)
METALCALL_APPLE_UNARY(log10, log10)
METALCALL_APPLE_UNARY(log2, log2)
METALCALL_APPLE_UNARY(rint, rint)
METALCALL_APPLE_UNARY(round, round)
METALCALL_APPLE_UNARY(rsqrt, rsqrt)
METALCALL_APPLE_UNARY(sin, sin)
METALCALL_APPLE_UNARY(sinh, sinh)
METALCALL_APPLE_UNARY(sinpi, sinpi)
METALCALL_APPLE_UNARY(sqrt, sqrt)
METALCALL_APPLE_UNARY(tan, tan)
METALCALL_APPLE_UNARY(tanh, tanh)
METALCALL_APPLE_UNARY(tanpi, tanpi)
METALCALL_APPLE_UNARY(trunc, trunc)
METALCALL_APPLE_BINARY(atan2)
METALCALL_APPLE_BINARY(divide)
METALCALL_APPLE_BINARY(fmax)
METALCALL_APPLE_BINARY(fmin)
METALCALL_APPLE_BINARY(fmod)
METALCALL_APPLE_BINARY(pow)
METALCALL_APPLE_BINARY(powr)
METALCALL_APPLE_TERNARY(fmax3)
METALCALL_APPLE_TERNARY(fmin3)
METALCALL_APPLE_TERNARY(fmedian3)
#undef METALCALL_APPLE_UNARY
#undef METALCALL_APPLE_BINARY
#undef METALCALL_APPLE_TERNARY

template <class T> METAL_FUNC T __metal_fma(T x, T y, T z) { return metal::fma(x, y, z); }
template <class T> METAL_FUNC T __metal_frexp(T x, int* exponent) { return metal::frexp(x, *exponent); }
template <class T> METAL_FUNC T __metal_ldexp(T x, int k, bool = false) { return metal::ldexp(x, k); }
template <class T> METAL_FUNC T __metal_nextafter(T x, T y) { return metal::nextafter(x, y); }

// SIMD-group functions (lanes are ushort in Apple's signatures).
#define METALCALL_APPLE_SIMD1(NAME) \
  template <class T> METAL_FUNC T __metal_##NAME(T x METALCALL_SIMD_LINE_PARAM) { return metal::NAME(x METALCALL_SIMD_LINE); }
#define METALCALL_APPLE_SIMD2(NAME) \
  template <class T> METAL_FUNC T __metal_##NAME(T x, unsigned short n METALCALL_SIMD_LINE_PARAM) { \
    return metal::NAME(x, n METALCALL_SIMD_LINE);                                                   \
  }
METALCALL_APPLE_SIMD1(simd_sum)
METALCALL_APPLE_SIMD1(simd_product)
METALCALL_APPLE_SIMD1(simd_min)
METALCALL_APPLE_SIMD1(simd_max)
METALCALL_APPLE_SIMD1(simd_prefix_inclusive_sum)
METALCALL_APPLE_SIMD1(simd_prefix_exclusive_sum)
METALCALL_APPLE_SIMD1(simd_prefix_inclusive_product)
METALCALL_APPLE_SIMD1(simd_prefix_exclusive_product)
METALCALL_APPLE_SIMD2(simd_broadcast)
METALCALL_APPLE_SIMD2(simd_shuffle)
METALCALL_APPLE_SIMD2(simd_shuffle_up)
METALCALL_APPLE_SIMD2(simd_shuffle_down)
METALCALL_APPLE_SIMD2(simd_shuffle_xor)
METALCALL_APPLE_SIMD2(simd_shuffle_rotate_up)
METALCALL_APPLE_SIMD2(simd_shuffle_rotate_down)
#undef METALCALL_APPLE_SIMD1
#undef METALCALL_APPLE_SIMD2
// The bitwise reductions act on the bits, whatever the type (MLX instantiates them for float).
namespace metal::mtl_detail {
template <int Bytes> struct bits_of;
template <> struct bits_of<2> { typedef unsigned short type; };
template <> struct bits_of<4> { typedef unsigned int type; };
template <> struct bits_of<8> { typedef unsigned long type; };
}  // namespace metal::mtl_detail
#define METALCALL_APPLE_SIMD_BITS(NAME)                                                  \
  template <class T> METAL_FUNC T __metal_##NAME(T x METALCALL_SIMD_LINE_PARAM) {       \
    typedef typename metal::mtl_detail::bits_of<sizeof(T)>::type U;                     \
    return metal::as_type<T>(metal::NAME(metal::as_type<U>(x) METALCALL_SIMD_LINE));    \
  }
METALCALL_APPLE_SIMD_BITS(simd_and)
METALCALL_APPLE_SIMD_BITS(simd_or)
METALCALL_APPLE_SIMD_BITS(simd_xor)
#undef METALCALL_APPLE_SIMD_BITS
template <class T>
METAL_FUNC T __metal_simd_shuffle_and_fill_down(T data, T fill, unsigned short delta, unsigned short modulo METALCALL_SIMD_LINE_PARAM) {
  return metal::simd_shuffle_and_fill_down(data, fill, delta, modulo METALCALL_SIMD_LINE);
}
template <class T>
METAL_FUNC T __metal_simd_shuffle_and_fill_up(T data, T fill, unsigned short delta, unsigned short modulo METALCALL_SIMD_LINE_PARAM) {
  return metal::simd_shuffle_and_fill_up(data, fill, delta, modulo METALCALL_SIMD_LINE);
}
METAL_FUNC unsigned short __metal_get_simdgroup_size(unsigned short) {
  return (unsigned short)metal::mtl_rt::simd_width_now();
}
METAL_FUNC unsigned short __metal_get_thread_index_in_simdgroup(unsigned short) {
  return (unsigned short)metal::mtl_rt::simd_lane_now();
}

// Apple's constraint on the operand type of the SIMD-group functions, which production code
// asks to pick a reduction (candle's reduce.metal, `is_simd_t<T>`): scalars and vectors of
// bool, the 8-, 16- and 32-bit integers, half and float; not the 64-bit integers nor bfloat.
namespace metal {
namespace mtl_detail {
template <class T>
struct simdgroup_scalar
    : integral_constant<bool, (is_int_or_bool<T>::value && sizeof(T) <= 4) || is_same<T, float>::value ||
                                  is_same<T, mtl_half>::value> {};
template <class T, int N, bool P> struct simdgroup_scalar<mtl_vector<T, N, P>> : simdgroup_scalar<T> {};
}  // namespace mtl_detail
template <class T, class _E = void>
struct __is_valid_simdgroup_type : mtl_detail::simdgroup_scalar<remove_cv_t<T>> {};
}  // namespace metal

// Apple's encoding traits of the floating types, which public kernels read to test bits
// (mistral.rs's and MLX's software bfloat: `as_type<uint>(x) & ~_fp_encoding_traits<float>::sign_mask`).
namespace metal {
template <class T> struct _fp_encoding_traits_impl;
template <> struct _fp_encoding_traits_impl<float> {
  typedef uint32_t encoding_type;
  static constexpr encoding_type bit_width = 32;
  static constexpr encoding_type sign_mask = 0x80000000u;
  static constexpr encoding_type inf_mask = 0x7f800000u;
  static constexpr encoding_type min_mask = 0x00800000u;
};
template <> struct _fp_encoding_traits_impl<mtl_half> {
  typedef uint16_t encoding_type;
  static constexpr encoding_type bit_width = 16;
  static constexpr encoding_type sign_mask = 0x8000;
  static constexpr encoding_type inf_mask = 0x7c00;
  static constexpr encoding_type min_mask = 0x0400;
};
template <> struct _fp_encoding_traits_impl<mtl_bfloat> {
  typedef uint16_t encoding_type;
  static constexpr encoding_type bit_width = 16;
  static constexpr encoding_type sign_mask = 0x8000;
  static constexpr encoding_type inf_mask = 0x7f80;
  static constexpr encoding_type min_mask = 0x0080;
};
template <class T> struct _fp_encoding_traits : _fp_encoding_traits_impl<remove_cv_t<T>> {};
}  // namespace metal
