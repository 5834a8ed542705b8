// metalcall MSL prelude: as_type, numeric_limits and MSL's numeric constants.
#pragma once
#include "metal_types.h"

// __half special values are constexpr (cuda_fp16's constructor from __half_raw is, though
// its arithmetic is not: MLX's `constexpr half max = numeric_limits<half>::infinity()`);
// float's are constexpr where __builtin_bit_cast is (METAL_HOST_CONSTEXPR).
#define METAL_CONSTEXPR_LIMIT constexpr

namespace metal {

namespace mtl_rt {
// Checked mode's pointers (metal_checked.h marks them): their bits are their bounds, which
// as_type must not hand out or take in (MSL's as_type reinterprets scalars and vectors).
// In checked mode every class that is not standard-layout counts: a checked pointer keeps one
// member in a base of its own (mtl_rt::checked_what), so it and every class, array or template
// instance holding one, however deep, is not standard-layout.
template <class T> struct holds_bounds {
#if defined(METALCALL_CHECKED) && !METAL_CUDA
  static constexpr bool value = !__is_standard_layout(T);
#else
  static constexpr bool value = false;
#endif
};
template <class T> struct holds_bounds<const T> : holds_bounds<T> {};
template <class T> struct holds_bounds<volatile T> : holds_bounds<T> {};
template <class T> struct holds_bounds<const volatile T> : holds_bounds<T> {};
template <> struct holds_bounds<void> { static constexpr bool value = false; };
#if defined(METALCALL_CHECKED) && !METAL_CUDA
// A pointer the translation left plain (`thread float**`'s elements) holds an address: bytes
// written through a view of it (`(thread float**)&integer`) would be a pointer made from any bits.
template <class T> struct holds_bounds<T*> { static constexpr bool value = true; };
template <class T, unsigned long long N> struct holds_bounds<T[N]> : holds_bounds<T> {};
#endif
}  // namespace mtl_rt

#if METAL_CUDA
namespace mtl_rt {
// The half components of x (a half or a vector of them): their bits through a 32-bit register.
// NVVM otherwise stores a byte of the result straight from the half's f16 register (`char(as_type
// <int>(half2(v)))`, fuzz seed 3 program 263), and such a byte store lost the half's low byte on
// the H200 (as struct temporaries did: msl/passes/struct_temporaries.hpp).
template <class U> struct half_parts { static constexpr int count = 0; };
template <> struct half_parts<__half> { static constexpr int count = 1; };
template <int N, bool P> struct half_parts<mtl_vector<__half, N, P>> { static constexpr int count = N; };
// b zero-extended to 32 bits by an asm the optimiser cannot see into (the value then lives in a
// register of its own).
METAL_FUNC unsigned int small_int_widened(unsigned short b) {
  unsigned int w;
  asm("cvt.u32.u16 %0, %1;" : "=r"(w) : "h"(b));
  return w;
}
METAL_FUNC unsigned short half_bits_widened(unsigned short b) { return (unsigned short)small_int_widened(b); }
// The 1- and 2-byte integers of a value (char ... ushort, bool, or a vector of them): as_type
// makes their 32-bit words by widening each, not by NVVM's 16-bit pack (`mov.b32 %r, {%rs1,
// %rs2}`). ptxas (sm_90, CUDA 13.0 and 13.5) built that pack in place over the register its low
// half came from, while the wider value there was still live: `as_type<uint>(short2(v, c))` of a
// long v gave v bits 16-31 of c for what followed (fuzz seed 28101 #28, `v < 1` false for v = 0).
template <class U> struct small_int_parts {
  static constexpr int count = 0;
  typedef void element;
};
#define METALCALL_SMALL_INT_PART(E)       \
  template <> struct small_int_parts<E> { \
    static constexpr int count = 1;       \
    typedef E element;                    \
  };
METALCALL_SMALL_INT_PART(bool)
METALCALL_SMALL_INT_PART(char)
METALCALL_SMALL_INT_PART(signed char)
METALCALL_SMALL_INT_PART(unsigned char)
METALCALL_SMALL_INT_PART(short)
METALCALL_SMALL_INT_PART(unsigned short)
#undef METALCALL_SMALL_INT_PART
template <class E, int N, bool P> struct small_int_parts<mtl_vector<E, N, P>> {
  static constexpr int count = small_int_parts<E>::count ? N : 0;
  typedef E element;
};
// x's bytes as 32-bit words, each part widened (the words past x's parts zero).
template <class U, unsigned W> METAL_FUNC void small_int_words(const U& x, unsigned int (&words)[W]) {
  typedef typename small_int_parts<U>::element E;
  typedef typename conditional<sizeof(E) == 1, unsigned char, unsigned short>::type B;
  for (unsigned k = 0; k < W; ++k) words[k] = 0;
  const E* parts = reinterpret_cast<const E*>(&x);
  for (int k = 0; k < small_int_parts<U>::count; ++k) {
    B b;
    memcpy(&b, &parts[k], sizeof(E));
    words[k * sizeof(E) / 4] |= small_int_widened((unsigned short)b) << (8 * (k * sizeof(E) % 4));
  }
}
}  // namespace mtl_rt
#endif

// as_type<T>(x): reinterpret the bits of x as T; sizes must match (MSL rule).
template <class T, class U> METAL_FUNC T as_type(const U& x) {
  static_assert(sizeof(T) == sizeof(U), "as_type needs types of the same size");
  static_assert(!mtl_rt::holds_bounds<T>::value && !mtl_rt::holds_bounds<U>::value,
                "as_type reinterprets scalars and vectors, not pointers or what holds one "
                "[MSL rule: checked mode stays on]");
  T r;
#if METAL_CUDA
  if constexpr (mtl_rt::half_parts<U>::count > 0) {
    unsigned short bits[sizeof(U) / 2] = {};
    const __half* parts = reinterpret_cast<const __half*>(&x);
    for (int k = 0; k < mtl_rt::half_parts<U>::count; ++k) bits[k] = mtl_rt::half_bits_widened(__half_as_ushort(parts[k]));
    memcpy(&r, bits, sizeof(T));
  } else if constexpr (mtl_rt::small_int_parts<U>::count > 0) {
    unsigned int words[(sizeof(U) + 3) / 4];
    mtl_rt::small_int_words(x, words);
    memcpy(&r, words, sizeof(T));
  } else {
    memcpy(&r, &x, sizeof(T));
  }
#else
  __builtin_memcpy(&r, &x, sizeof(T));
#endif
  return r;
}

enum float_round_style {
  round_indeterminate = -1,
  round_toward_zero = 0,
  round_to_nearest = 1,
  round_toward_infinity = 2,
  round_toward_neg_infinity = 3
};
enum float_denorm_style { denorm_indeterminate = -1, denorm_absent = 0, denorm_present = 1 };

namespace mtl_detail {
METAL_FUNC METAL_CONSTEXPR_LIMIT mtl_half half_from_bits(unsigned short b) {
#if METAL_HALF_KIND == 0
  return __half(__half_raw{b});
#elif METAL_HALF_KIND == 1
  return __builtin_bit_cast(_Float16, b);
#else
  return mtl_half(half_bits_tag{}, b);
#endif
}
METAL_FUNC METAL_HOST_CONSTEXPR float float_from_bits(unsigned int b) {
#if METAL_CUDA && !METAL_HAS_BIT_CAST
  return __uint_as_float(b);
#else
  return __builtin_bit_cast(float, b);
#endif
}
METAL_FUNC constexpr mtl_bfloat bfloat_from_bits(unsigned short b) { return mtl_bfloat(bfloat_bits_tag{}, b); }

struct limits_common {
  static constexpr bool is_specialized = true;
  static constexpr int radix = 2;
  static constexpr bool is_bounded = true;
  static constexpr bool has_denorm_loss = false;
  static constexpr bool traps = false;
  static constexpr bool tinyness_before = false;
};
struct int_limits_common : limits_common {
  static constexpr float_denorm_style has_denorm = denorm_absent;
  static constexpr float_round_style round_style = round_toward_zero;
  static constexpr bool is_integer = true;
  static constexpr bool is_exact = true;
  static constexpr bool has_infinity = false;
  static constexpr bool has_quiet_NaN = false;
  static constexpr bool has_signaling_NaN = false;
  static constexpr bool is_iec559 = false;
  static constexpr int min_exponent = 0;
  static constexpr int min_exponent10 = 0;
  static constexpr int max_exponent = 0;
  static constexpr int max_exponent10 = 0;
  static constexpr int max_digits10 = 0;
};
struct float_limits_common : limits_common {
  static constexpr float_denorm_style has_denorm = denorm_present;
  static constexpr float_round_style round_style = round_to_nearest;
  static constexpr bool is_signed = true;
  static constexpr bool is_integer = false;
  static constexpr bool is_exact = false;
  static constexpr bool has_infinity = true;
  static constexpr bool has_quiet_NaN = true;
  static constexpr bool has_signaling_NaN = true;
  static constexpr bool is_iec559 = true;
  static constexpr bool is_modulo = false;
};
}  // namespace mtl_detail

}  // namespace metal
// as_type is an operator of the language, not a library name: MSL code without `using namespace
// metal` (naga's output) calls it unqualified.
using metal::as_type;

// numeric_limits<T> is _numeric_limits_impl<remove_cv_t<T>>, as in Apple's <metal_limits>:
// production code specialises the _impl for its own types (candle's
// `template <typename T> struct _numeric_limits_impl<indexed<T>>` after `using namespace
// metal`). The _impl lives in the global namespace, named into metal by a using-declaration,
// so that such a specialisation is in the template's own namespace, which every compiler
// takes (NVRTC refuses one of a template of namespace metal there). A type nobody
// specialised has every member, zero or T().
template <class T, class Enable = void> struct _numeric_limits_impl {
  static constexpr bool is_specialized = false;
  static constexpr bool is_signed = false;
  static constexpr bool is_integer = false;
  static constexpr bool is_exact = false;
  static constexpr bool has_infinity = false;
  static constexpr bool has_quiet_NaN = false;
  static constexpr bool has_signaling_NaN = false;
  static constexpr metal::float_denorm_style has_denorm = metal::denorm_absent;
  static constexpr bool has_denorm_loss = false;
  static constexpr metal::float_round_style round_style = metal::round_toward_zero;
  static constexpr bool is_iec559 = false;
  static constexpr bool is_bounded = false;
  static constexpr bool is_modulo = false;
  static constexpr int digits = 0;
  static constexpr int digits10 = 0;
  static constexpr int max_digits10 = 0;
  static constexpr int radix = 0;
  static constexpr int min_exponent = 0;
  static constexpr int min_exponent10 = 0;
  static constexpr int max_exponent = 0;
  static constexpr int max_exponent10 = 0;
  static constexpr bool traps = false;
  static constexpr bool tinyness_before = false;
  static METAL_FUNC constexpr T min() { return T(); }
  static METAL_FUNC constexpr T lowest() { return T(); }
  static METAL_FUNC constexpr T max() { return T(); }
  static METAL_FUNC constexpr T epsilon() { return T(); }
  static METAL_FUNC constexpr T round_error() { return T(); }
  static METAL_FUNC constexpr T infinity() { return T(); }
  static METAL_FUNC constexpr T quiet_NaN() { return T(); }
  static METAL_FUNC constexpr T signaling_NaN() { return T(); }
  static METAL_FUNC constexpr T denorm_min() { return T(); }
};

template <class T>
struct _numeric_limits_impl<T, metal::enable_if_t<metal::mtl_detail::is_int<T>::value>> : metal::mtl_detail::int_limits_common {
  static constexpr bool is_signed = T(-1) < T(0);
  static constexpr bool is_modulo = !is_signed;
  static constexpr int digits = int(sizeof(T) * 8) - (is_signed ? 1 : 0);
  static constexpr int digits10 = digits * 301 / 1000;  // floor(digits * log10(2))
  static METAL_FUNC constexpr T max() {
    return is_signed ? T(metal::make_unsigned_t<T>(~metal::make_unsigned_t<T>(0)) >> 1) : T(~T(0));
  }
  static METAL_FUNC constexpr T min() { return is_signed ? T(-max() - 1) : T(0); }
  static METAL_FUNC constexpr T lowest() { return min(); }
  static METAL_FUNC constexpr T epsilon() { return T(0); }
  static METAL_FUNC constexpr T round_error() { return T(0); }
  static METAL_FUNC constexpr T infinity() { return T(0); }
  static METAL_FUNC constexpr T quiet_NaN() { return T(0); }
  static METAL_FUNC constexpr T signaling_NaN() { return T(0); }
  static METAL_FUNC constexpr T denorm_min() { return T(0); }
};

template <> struct _numeric_limits_impl<bool> : metal::mtl_detail::int_limits_common {
  static constexpr bool is_signed = false;
  static constexpr bool is_modulo = false;
  static constexpr int digits = 1;
  static constexpr int digits10 = 0;
  static METAL_FUNC constexpr bool max() { return true; }
  static METAL_FUNC constexpr bool min() { return false; }
  static METAL_FUNC constexpr bool lowest() { return false; }
  static METAL_FUNC constexpr bool epsilon() { return false; }
  static METAL_FUNC constexpr bool round_error() { return false; }
  static METAL_FUNC constexpr bool infinity() { return false; }
  static METAL_FUNC constexpr bool quiet_NaN() { return false; }
  static METAL_FUNC constexpr bool signaling_NaN() { return false; }
  static METAL_FUNC constexpr bool denorm_min() { return false; }
};

template <> struct _numeric_limits_impl<float> : metal::mtl_detail::float_limits_common {
  static constexpr int digits = 24;
  static constexpr int digits10 = 6;
  static constexpr int max_digits10 = 9;
  static constexpr int min_exponent = -125;
  static constexpr int min_exponent10 = -37;
  static constexpr int max_exponent = 128;
  static constexpr int max_exponent10 = 38;
  static METAL_FUNC constexpr float min() { return 0x1p-126f; }
  static METAL_FUNC constexpr float max() { return 0x1.fffffep127f; }
  static METAL_FUNC constexpr float lowest() { return -0x1.fffffep127f; }
  static METAL_FUNC constexpr float epsilon() { return 0x1p-23f; }
  static METAL_FUNC constexpr float round_error() { return 0.5f; }
  static METAL_FUNC constexpr float denorm_min() { return 0x1p-149f; }
  static METAL_FUNC METAL_HOST_CONSTEXPR float infinity() { return metal::mtl_detail::float_from_bits(0x7f800000u); }
  static METAL_FUNC METAL_HOST_CONSTEXPR float quiet_NaN() { return metal::mtl_detail::float_from_bits(0x7fc00000u); }
  static METAL_FUNC METAL_HOST_CONSTEXPR float signaling_NaN() { return metal::mtl_detail::float_from_bits(0x7fa00000u); }
};

template <> struct _numeric_limits_impl<metal::mtl_half> : metal::mtl_detail::float_limits_common {
  static constexpr int digits = 11;
  static constexpr int digits10 = 3;
  static constexpr int max_digits10 = 5;
  static constexpr int min_exponent = -13;
  static constexpr int min_exponent10 = -4;
  static constexpr int max_exponent = 16;
  static constexpr int max_exponent10 = 4;
  static METAL_FUNC METAL_CONSTEXPR_LIMIT metal::mtl_half min() { return metal::mtl_detail::half_from_bits(0x0400); }
  static METAL_FUNC METAL_CONSTEXPR_LIMIT metal::mtl_half max() { return metal::mtl_detail::half_from_bits(0x7bff); }
  static METAL_FUNC METAL_CONSTEXPR_LIMIT metal::mtl_half lowest() { return metal::mtl_detail::half_from_bits(0xfbff); }
  static METAL_FUNC METAL_CONSTEXPR_LIMIT metal::mtl_half epsilon() { return metal::mtl_detail::half_from_bits(0x1400); }
  static METAL_FUNC METAL_CONSTEXPR_LIMIT metal::mtl_half round_error() { return metal::mtl_detail::half_from_bits(0x3800); }
  static METAL_FUNC METAL_CONSTEXPR_LIMIT metal::mtl_half denorm_min() { return metal::mtl_detail::half_from_bits(0x0001); }
  static METAL_FUNC METAL_CONSTEXPR_LIMIT metal::mtl_half infinity() { return metal::mtl_detail::half_from_bits(0x7c00); }
  static METAL_FUNC METAL_CONSTEXPR_LIMIT metal::mtl_half quiet_NaN() { return metal::mtl_detail::half_from_bits(0x7e00); }
  static METAL_FUNC METAL_CONSTEXPR_LIMIT metal::mtl_half signaling_NaN() { return metal::mtl_detail::half_from_bits(0x7d00); }
};

template <> struct _numeric_limits_impl<metal::mtl_bfloat> : metal::mtl_detail::float_limits_common {
  static constexpr int digits = 8;
  static constexpr int digits10 = 2;
  static constexpr int max_digits10 = 4;
  static constexpr int min_exponent = -125;
  static constexpr int min_exponent10 = -37;
  static constexpr int max_exponent = 128;
  static constexpr int max_exponent10 = 38;
  static METAL_FUNC constexpr metal::mtl_bfloat min() { return metal::mtl_detail::bfloat_from_bits(0x0080); }
  static METAL_FUNC constexpr metal::mtl_bfloat max() { return metal::mtl_detail::bfloat_from_bits(0x7f7f); }
  static METAL_FUNC constexpr metal::mtl_bfloat lowest() { return metal::mtl_detail::bfloat_from_bits(0xff7f); }
  static METAL_FUNC constexpr metal::mtl_bfloat epsilon() { return metal::mtl_detail::bfloat_from_bits(0x3c00); }
  static METAL_FUNC constexpr metal::mtl_bfloat round_error() { return metal::mtl_detail::bfloat_from_bits(0x3f00); }
  static METAL_FUNC constexpr metal::mtl_bfloat denorm_min() { return metal::mtl_detail::bfloat_from_bits(0x0001); }
  static METAL_FUNC constexpr metal::mtl_bfloat infinity() { return metal::mtl_detail::bfloat_from_bits(0x7f80); }
  static METAL_FUNC constexpr metal::mtl_bfloat quiet_NaN() { return metal::mtl_detail::bfloat_from_bits(0x7fc0); }
  static METAL_FUNC constexpr metal::mtl_bfloat signaling_NaN() { return metal::mtl_detail::bfloat_from_bits(0x7fa0); }
};


namespace metal {
using ::_numeric_limits_impl;
template <class T> struct numeric_limits : _numeric_limits_impl<remove_cv_t<T>> {};
}  // namespace metal

// MSL's constants (metal_stdlib defines them as macros). Each is guarded, in
// case the CUDA toolchain already defines it.
#ifndef INFINITY
#define INFINITY (metal::numeric_limits<float>::infinity())
#endif
#ifndef NAN
#define NAN (metal::numeric_limits<float>::quiet_NaN())
#endif
#ifndef HUGE_VALF
#define HUGE_VALF INFINITY
#endif
#ifndef MAXFLOAT
#define MAXFLOAT 0x1.fffffep127f
#endif
#ifndef HUGE_VALH
#define HUGE_VALH (metal::numeric_limits<mtl_half>::infinity())
#endif
#ifndef MAXHALF
#define MAXHALF (metal::numeric_limits<mtl_half>::max())
#endif

#ifndef FLT_MAX
#define FLT_DIG 6
#define FLT_MANT_DIG 24
#define FLT_MAX_10_EXP 38
#define FLT_MAX_EXP 128
#define FLT_MIN_10_EXP (-37)
#define FLT_MIN_EXP (-125)
#define FLT_RADIX 2
#define FLT_MAX 0x1.fffffep127f
#define FLT_MIN 0x1p-126f
#define FLT_EPSILON 0x1p-23f
#endif

#define HALF_DIG 3
#define HALF_MANT_DIG 11
#define HALF_MAX_10_EXP 4
#define HALF_MAX_EXP 16
#define HALF_MIN_10_EXP (-4)
#define HALF_MIN_EXP (-13)
#define HALF_RADIX 2
#define HALF_MAX (metal::numeric_limits<mtl_half>::max())
#define HALF_MIN (metal::numeric_limits<mtl_half>::min())
#define HALF_EPSILON (metal::numeric_limits<mtl_half>::epsilon())

#ifndef INT_MAX
#define CHAR_BIT 8
#define SCHAR_MAX 127
#define SCHAR_MIN (-128)
#define UCHAR_MAX 255
#define CHAR_MAX SCHAR_MAX  // MSL char is signed
#define CHAR_MIN SCHAR_MIN
#define USHRT_MAX 65535
#define SHRT_MAX 32767
#define SHRT_MIN (-32768)
#define UINT_MAX 0xffffffffu
#define INT_MAX 2147483647
#define INT_MIN (-2147483647 - 1)
#define ULONG_MAX 0xfffffffffffffffful
#define LONG_MAX 0x7fffffffffffffffl
#define LONG_MIN (-0x7fffffffffffffffl - 1)
#endif

#ifndef FP_ILOGB0
#define FP_ILOGB0 (-2147483647 - 1)
#define FP_ILOGBNAN (-2147483647 - 1)
#endif

#define M_E_F 2.71828182845904523536f
#define M_LOG2E_F 1.44269504088896340736f
#define M_LOG10E_F 0.434294481903251827651f
#define M_LN2_F 0.693147180559945309417f
#define M_LN10_F 2.30258509299404568402f
#define M_PI_F 3.14159265358979323846f
#define M_PI_2_F 1.57079632679489661923f
#define M_PI_4_F 0.785398163397448309616f
#define M_1_PI_F 0.318309886183790671538f
#define M_2_PI_F 0.636619772367581343076f
#define M_2_SQRTPI_F 1.12837916709551257390f
#define M_SQRT2_F 1.41421356237309504880f
#define M_SQRT1_2_F 0.707106781186547524401f

#define M_E_H mtl_half(M_E_F)
#define M_LOG2E_H mtl_half(M_LOG2E_F)
#define M_LOG10E_H mtl_half(M_LOG10E_F)
#define M_LN2_H mtl_half(M_LN2_F)
#define M_LN10_H mtl_half(M_LN10_F)
#define M_PI_H mtl_half(M_PI_F)
#define M_PI_2_H mtl_half(M_PI_2_F)
#define M_PI_4_H mtl_half(M_PI_4_F)
#define M_1_PI_H mtl_half(M_1_PI_F)
#define M_2_PI_H mtl_half(M_2_PI_F)
#define M_2_SQRTPI_H mtl_half(M_2_SQRTPI_F)
#define M_SQRT2_H mtl_half(M_SQRT2_F)
#define M_SQRT1_2_H mtl_half(M_SQRT1_2_F)
