// metalcall MSL prelude: math and common functions (metal::, metal::fast::,
// metal::precise::) for float, half and bfloat scalars and vectors.
//
// Why every scalar overload is a template: user code says `using namespace
// metal;` and calls sin(x), max(a, b), abs(i). Under CUDA the global namespace
// already has non-template sin(float), max(int, int), abs(int) ... (and on the
// host <math.h> may add sin(float)). Were metal's overloads non-templates with
// the same signatures, those calls would be ambiguous. As templates they lose
// the tie to an exact non-template global overload, which computes the same
// result, and win wherever the global one needs a conversion (half, vectors,
// mixed float/int arguments).
//
// Half and bfloat are computed in float and rounded back, which is at least as
// accurate as MSL's half functions.
#pragma once
#include "metal_limits.h"

#if METAL_CUDA
#define METAL_LIBM(F) F##f  // CUDA device math: sinf, expf, ...
#else
#define METAL_LIBM(F) __builtin_##F##f  // libm through the compiler, no header needed
#endif

namespace metal {
namespace mtl_detail {

template <class... A> struct first_float { typedef void type; };
template <class A, class... R> struct first_float<A, R...> {
  typedef conditional_t<is_float<A>::value, A, typename first_float<R...>::type> type;
};
template <class X, class F> struct mixes_with {  // X may be converted to the float type F
  static constexpr bool value = is_same<X, F>::value || (is_scalar<X>::value && !is_float<X>::value);
};
// The type of a scalar call: all arguments of one scalar type, or one MSL
// floating type mixed with integers or double literals (fmax(x, 0.5), clamp(x, 0, 1)).
template <class A0, class... A> struct common_scalar_sel {
  typedef typename first_float<A0, A...>::type F;
  static constexpr bool same = is_scalar<A0>::value && (is_same<A0, A>::value && ...);
  static constexpr bool mixed = !is_same<F, void>::value && mixes_with<A0, F>::value && (mixes_with<A, F>::value && ...);
  static constexpr bool ok = same || mixed;
  typedef conditional_t<same, A0, F> type;
};
template <bool Ok, class T> struct type_if {};
template <class T> struct type_if<true, T> { typedef T type; };
template <class... A>
using common_scalar_t = typename type_if<common_scalar_sel<A...>::ok, typename common_scalar_sel<A...>::type>::type;

template <class T> using if_float = enable_if_t<is_float<T>::value, int>;
template <class T> using if_integer = enable_if_t<is_int<T>::value, int>;  // bool excluded
template <class T> using if_number = enable_if_t<is_int<T>::value || is_float<T>::value, int>;

template <class T> METAL_FUNC constexpr float f32(const T& x) { return convert<float>(x); }

// fma of half and bfloat rounds once, as the GPUs' fused multiply-add does. fmaf and
// then a conversion would round twice: 12 of 65536 products of halves near a tie came
// out one ulp off. The product of two float-held halves is exact in double; TwoSum gives
// the sum's error; the result is rounded to odd (an inexact value keeps an odd last bit)
// in double and then in float, after which rounding to half or bfloat (at most 11 bits of
// the float's 24) is that of the exact a * b + c (Boldo and Melquiond's round to odd).
METAL_FUNC unsigned long long bits64(double d) {
#if METAL_CUDA
  return (unsigned long long)__double_as_longlong(d);
#else
  return __builtin_bit_cast(unsigned long long, d);
#endif
}
METAL_FUNC double double64(unsigned long long u) {
#if METAL_CUDA
  return __longlong_as_double((long long)u);
#else
  return __builtin_bit_cast(double, u);
#endif
}
// Fast-math builds reassociate (clang: -fassociative-math), which folded TwoSum's error term to
// zero: bfloat fma(1.5, 1 + 2^-7, -2^-60) rounded up past the tie. Strict IEEE arithmetic here.
#if defined(__clang__) && !METAL_CUDA
#define METALCALL_STRICT_FP _Pragma("float_control(precise, on)")
#else
#define METALCALL_STRICT_FP  // g++ gets no -fassociative-math; NVRTC does not reassociate
#endif
METAL_FUNC float fma_to_odd(float a, float b, float c) {
  METALCALL_STRICT_FP
  const double p = double(a) * double(b), dc = double(c);
  double s = p + dc;
  if (!(s - s == 0.0)) return float(s);  // an infinity or NaN: nothing to round
  const double back = s - p, err = (p - (s - back)) + (dc - back);
  if (err != 0.0 && (bits64(s) & 1u) == 0) s = double64(bits64(s) + ((err > 0) == (s > 0) ? 1ull : ~0ull));
  float f = float(s);
  if (double(f) != s && (float_bits(f) & 1u) == 0 && f - f == 0.0f)  // step in magnitude, toward s (also from 0)
    f = bits_float(float_bits(f) + ((double(f) < s) == (s > 0) ? 1u : 0xffffffffu));
  return f;
}
// precise::divide is correctly rounded in fast-math libraries too (table 8.1), whatever flags a
// build passes: with -freciprocal-math (fast-math CPU builds until 2026-12-05) `x / 3.0f` and a
// division by a loop-invariant divisor became x * (1 / d), one ulp off for a third of quotients.
METAL_FUNC float divide_precise(float a, float b) {
  METALCALL_STRICT_FP
  return a / b;
}
template <class T> METAL_FUNC float fma_once(float a, float b, float c) {
  if constexpr (is_same<T, float>::value) return METAL_LIBM(fma)(a, b, c);
  else return fma_to_odd(a, b, c);
}

// The specification's rule, "returns y if y < x, otherwise x" (the other argument for a NaN):
// fmin(+0.0, -0.0) is +0.0 and fmin(-0.0, +0.0) is -0.0, on every target (CUDA's fminf and
// fmaxf order -0.0 below +0.0; on the CPU fminf would be a libm call).
METAL_FUNC float fmin_f(float a, float b) { return (b < a || a != a) ? b : a; }
METAL_FUNC float fmax_f(float a, float b) { return (a < b || a != a) ? b : a; }
// sin(pi x) with exact argument reduction, so sinpi(n) is exactly 0.
METAL_FUNC float sinpi_f(float x) {
#if METAL_CUDA
  return sinpif(x);
#else
  float y = x - 2.0f * __builtin_rintf(0.5f * x);  // exact, in [-1, 1]
  if (y > 0.5f) y = 1.0f - y;                      // sin(pi - t) = sin(t)
  else if (y < -0.5f) y = -1.0f - y;
  return __builtin_sinf(M_PI_F * y);
#endif
}
METAL_FUNC float cospi_f(float x) {
#if METAL_CUDA
  return cospif(x);
#else
  float a = __builtin_fabsf(x);
  a = __builtin_fabsf(a - 2.0f * __builtin_rintf(0.5f * a));  // in [0, 1]
  return __builtin_sinf(M_PI_F * (0.5f - a));                // cos(pi a) = sin(pi (1/2 - a))
#endif
}
// step's 0 or 1 through a register the optimiser cannot see into (CUDA): NVVM folded
// `step(e, x) * -1.0f` into a select of the constants -0.0 and -1.0, which ptxas (NVRTC 13.5,
// sm_90) compiles as an integer select and I2F, and so gives +0.0 for -0.0 (fuzz seed 7104,
// program 565). The multiply left in place, ptxas keeps the zero's sign.
METAL_FUNC float step_f(bool below) {
  float r = below ? 0.0f : 1.0f;
#if METAL_CUDA
  asm("mov.b32 %0, %0;" : "+f"(r));
#endif
  return r;
}
METAL_FUNC float smoothstep_f(float edge0, float edge1, float x) {
  const float t = fmin_f(fmax_f((x - edge0) / (edge1 - edge0), 0.0f), 1.0f);
  return t * t * (3.0f - 2.0f * t);
}
template <class T> METAL_FUNC float fract_f(float v) {
  // Largest value below 1 in T, so fract never rounds up to 1.0 in half.
  const float below_one = 1.0f - 0.5f * f32(numeric_limits<T>::epsilon());
  const float r = v - METAL_LIBM(floor)(v);
  return r > below_one ? below_one : r;
}
}  // namespace mtl_detail

// NAME(x) for floating scalars (computed in float from v) and vectors.
#define METAL_FLOAT1(NS, NAME, EXPR)                                               \
  template <class T, mtl_detail::if_float<T> = 0> METAL_FUNC T NAME(T x) {         \
    const float v = mtl_detail::f32(x);                                            \
    return mtl_detail::convert<T>(EXPR);                                           \
  }                                                                                \
  template <class T, int N, bool P, mtl_detail::if_float<T> = 0>                   \
  METAL_FUNC vec<T, N> NAME(const mtl_vector<T, N, P>& x) {                        \
    return mtl_detail::zip([](T e) { return NS::NAME(e); }, x);                    \
  }
// NAME(x, y): scalars of one floating type (or mixed with int/double), or
// vectors where scalars broadcast: fmax(v, 0.0f), pow(v, 2.0f).
#define METAL_FLOAT2(NS, NAME, EXPR)                                                        \
  template <class A, class B, class T = mtl_detail::common_scalar_t<A, B>, mtl_detail::if_float<T> = 0> \
  METAL_FUNC T NAME(A x, B y) {                                                             \
    const float a = mtl_detail::f32(mtl_detail::convert<T>(x));                            \
    const float b = mtl_detail::f32(mtl_detail::convert<T>(y));                            \
    return mtl_detail::convert<T>(EXPR);                                                    \
  }                                                                                         \
  template <class A, class B, class V = mtl_detail::zip_result_t<A, B>,                     \
            mtl_detail::if_float<typename V::value_type> = 0>                               \
  METAL_FUNC V NAME(const A& x, const B& y) {                                               \
    typedef typename V::value_type T;                                                       \
    return mtl_detail::zip([](T a, T b) { return NS::NAME(a, b); }, x, y);                  \
  }
#define METAL_FLOAT3(NS, NAME, EXPR)                                                        \
  template <class A, class B, class C, class T = mtl_detail::common_scalar_t<A, B, C>,      \
            mtl_detail::if_float<T> = 0>                                                    \
  METAL_FUNC T NAME(A x, B y, C z) {                                                        \
    const float a = mtl_detail::f32(mtl_detail::convert<T>(x));                            \
    const float b = mtl_detail::f32(mtl_detail::convert<T>(y));                            \
    const float c = mtl_detail::f32(mtl_detail::convert<T>(z));                            \
    return mtl_detail::convert<T>(EXPR);                                                    \
  }                                                                                         \
  template <class A, class B, class C, class V = mtl_detail::zip_result_t<A, B, C>,         \
            mtl_detail::if_float<typename V::value_type> = 0>                               \
  METAL_FUNC V NAME(const A& x, const B& y, const C& z) {                                   \
    typedef typename V::value_type T;                                                       \
    return mtl_detail::zip([](T a, T b, T c) { return NS::NAME(a, b, c); }, x, y, z);       \
  }

METAL_FLOAT1(metal, acos, METAL_LIBM(acos)(v))
METAL_FLOAT1(metal, acosh, METAL_LIBM(acosh)(v))
METAL_FLOAT1(metal, asin, METAL_LIBM(asin)(v))
METAL_FLOAT1(metal, asinh, METAL_LIBM(asinh)(v))
METAL_FLOAT1(metal, atan, METAL_LIBM(atan)(v))
METAL_FLOAT1(metal, atanh, METAL_LIBM(atanh)(v))
METAL_FLOAT1(metal, ceil, METAL_LIBM(ceil)(v))
METAL_FLOAT1(metal, cos, METAL_LIBM(cos)(v))
METAL_FLOAT1(metal, cosh, METAL_LIBM(cosh)(v))
METAL_FLOAT1(metal, cospi, mtl_detail::cospi_f(v))
METAL_FLOAT1(metal, exp, METAL_LIBM(exp)(v))
METAL_FLOAT1(metal, exp2, METAL_LIBM(exp2)(v))
#if METAL_CUDA
METAL_FLOAT1(metal, exp10, exp10f(v))
#else
METAL_FLOAT1(metal, exp10, __builtin_powf(10.0f, v))
#endif
// rsqrt is correctly rounded without fast math (MSL specification, table 8.1): 1.0f / sqrtf(v)
// rounds twice and was one ulp off for about a quarter of all floats (CUDA's rsqrtf, 2 ulp, for
// 22% of the test's). In double the root and the quotient are exact to 2^-52, and no float's
// inverse root lies that near a midpoint between two floats (every float in [1, 4), checked
// against an 80-bit computation: tests/conformance/test_audit_conversions.py), so the one
// rounding to float is the correct one. Fast math (a library's default; the compiler defines
// METALCALL_FAST_MATH) allows more error, and the double path took ten times as long there (2^20
// floats on the 2-core box: 475 against 48 µs): rsqrt is 1/sqrt in float then (CUDA: rsqrtf).
// precise::rsqrt is the correctly rounded one either way (below).
#if METAL_CUDA
// CUDA's intrinsics by name: `::sqrt` found metal's overloads through the translation's `using
// namespace metal` and took the root in float (1 ulp off at 0.5 on the H200).
#define METALCALL_RSQRT_PRECISE float(__drcp_rn(__dsqrt_rn(double(v))))
#define METALCALL_RSQRT_FAST rsqrtf(v)
#else
#define METALCALL_RSQRT_PRECISE float(1.0 / __builtin_sqrt(double(v)))
#define METALCALL_RSQRT_FAST 1.0f / __builtin_sqrtf(v)
#endif
#if METALCALL_FAST_MATH
METAL_FLOAT1(metal, rsqrt, METALCALL_RSQRT_FAST)
#else
METAL_FLOAT1(metal, rsqrt, METALCALL_RSQRT_PRECISE)
#endif
METAL_FLOAT1(metal, fabs, METAL_LIBM(fabs)(v))
METAL_FLOAT1(metal, floor, METAL_LIBM(floor)(v))
METAL_FLOAT1(metal, fract, mtl_detail::fract_f<T>(v))
METAL_FLOAT1(metal, log, METAL_LIBM(log)(v))
METAL_FLOAT1(metal, log2, METAL_LIBM(log2)(v))
METAL_FLOAT1(metal, log10, METAL_LIBM(log10)(v))
METAL_FLOAT1(metal, rint, METAL_LIBM(rint)(v))
METAL_FLOAT1(metal, round, METAL_LIBM(round)(v))
METAL_FLOAT1(metal, sin, METAL_LIBM(sin)(v))
METAL_FLOAT1(metal, sinh, METAL_LIBM(sinh)(v))
METAL_FLOAT1(metal, sinpi, mtl_detail::sinpi_f(v))
METAL_FLOAT1(metal, sqrt, METAL_LIBM(sqrt)(v))
METAL_FLOAT1(metal, tan, METAL_LIBM(tan)(v))
METAL_FLOAT1(metal, tanh, METAL_LIBM(tanh)(v))
METAL_FLOAT1(metal, tanpi, mtl_detail::sinpi_f(v) / mtl_detail::cospi_f(v))
METAL_FLOAT1(metal, trunc, METAL_LIBM(trunc)(v))
// Common functions (MSL 6.3).
METAL_FLOAT1(metal, saturate, mtl_detail::fmin_f(mtl_detail::fmax_f(v, 0.0f), 1.0f))
METAL_FLOAT1(metal, sign, v > 0.0f ? 1.0f : (v < 0.0f ? -1.0f : (v == 0.0f ? v : 0.0f)))

METAL_FLOAT2(metal, atan2, METAL_LIBM(atan2)(a, b))
METAL_FLOAT2(metal, copysign, METAL_LIBM(copysign)(a, b))
METAL_FLOAT2(metal, divide, a / b)
METAL_FLOAT2(metal, fdim, METAL_LIBM(fdim)(a, b))
METAL_FLOAT2(metal, fmax, mtl_detail::fmax_f(a, b))
METAL_FLOAT2(metal, fmin, mtl_detail::fmin_f(a, b))
METAL_FLOAT2(metal, fmod, METAL_LIBM(fmod)(a, b))
METAL_FLOAT2(metal, pow, METAL_LIBM(pow)(a, b))
METAL_FLOAT2(metal, powr, METAL_LIBM(pow)(a, b))
METAL_FLOAT2(metal, step, mtl_detail::step_f(b < a))  // step(edge, x)

METAL_FLOAT3(metal, fma, mtl_detail::fma_once<T>(a, b, c))
METAL_FLOAT3(metal, fmax3, mtl_detail::fmax_f(mtl_detail::fmax_f(a, b), c))
METAL_FLOAT3(metal, fmin3, mtl_detail::fmin_f(mtl_detail::fmin_f(a, b), c))
METAL_FLOAT3(metal, fmedian3,
             mtl_detail::fmax_f(mtl_detail::fmin_f(a, b), mtl_detail::fmin_f(mtl_detail::fmax_f(a, b), c)))
METAL_FLOAT3(metal, mix, a + (b - a) * c)
METAL_FLOAT3(metal, smoothstep, mtl_detail::smoothstep_f(a, b, c))

// nextafter steps one ulp of T (half steps in half ulps, not float ulps).
template <class A, class B, class T = mtl_detail::common_scalar_t<A, B>, mtl_detail::if_float<T> = 0>
METAL_FUNC T nextafter(A x_, B y_) {
  typedef conditional_t<sizeof(T) == 4, uint32_t, uint16_t> U;
  const T x = mtl_detail::convert<T>(x_), y = mtl_detail::convert<T>(y_);
  const float fx = mtl_detail::f32(x), fy = mtl_detail::f32(y);
  if (fx != fx || fy != fy) return mtl_detail::convert<T>(fx + fy);
  if (fx == fy) return y;
  U bits = as_type<U>(x);
  if (fx == 0.0f) bits = U(fy > 0.0f ? 1u : (1u | (1u << (sizeof(U) * 8 - 1))));
  else if ((fx < fy) == (fx > 0.0f)) ++bits;
  else --bits;
  return as_type<T>(bits);
}
template <class A, class B, class V = mtl_detail::zip_result_t<A, B>, mtl_detail::if_float<typename V::value_type> = 0>
METAL_FUNC V nextafter(const A& x, const B& y) {
  typedef typename V::value_type T;
  return mtl_detail::zip([](T a, T b) { return metal::nextafter(a, b); }, x, y);
}

// Functions with an output argument (MSL passes them as `thread T&`).
template <class T, mtl_detail::if_float<T> = 0> METAL_FUNC T frexp(T x, int& exponent) {
  return mtl_detail::convert<T>(METAL_LIBM(frexp)(mtl_detail::f32(x), &exponent));
}
template <class T, mtl_detail::if_float<T> = 0> METAL_FUNC T ldexp(T x, int k) {
  return mtl_detail::convert<T>(METAL_LIBM(ldexp)(mtl_detail::f32(x), k));
}
template <class T, mtl_detail::if_float<T> = 0> METAL_FUNC int ilogb(T x) {
  return METAL_LIBM(ilogb)(mtl_detail::f32(x));
}
template <class T, mtl_detail::if_float<T> = 0> METAL_FUNC T modf(T x, T& integral) {
  const float v = mtl_detail::f32(x), i = METAL_LIBM(trunc)(v);
  integral = mtl_detail::convert<T>(i);
  const bool inf = METAL_LIBM(fabs)(v) == numeric_limits<float>::infinity();
  return mtl_detail::convert<T>(METAL_LIBM(copysign)(inf ? 0.0f : v - i, v));
}
template <class T, mtl_detail::if_float<T> = 0> METAL_FUNC T sincos(T x, T& cosval) {
  cosval = metal::cos(x);
  return metal::sin(x);
}
template <class T, int N, bool P, mtl_detail::if_float<T> = 0>
METAL_FUNC vec<T, N> frexp(const mtl_vector<T, N, P>& x, vec<int, N>& exponent) {
  vec<T, N> r;
  for (int i = 0; i < N; ++i) r[i] = metal::frexp(x[i], exponent[i]);
  return r;
}
template <class T, int N, bool P, bool Q, mtl_detail::if_float<T> = 0>
METAL_FUNC vec<T, N> ldexp(const mtl_vector<T, N, P>& x, const mtl_vector<int, N, Q>& k) {
  vec<T, N> r;
  for (int i = 0; i < N; ++i) r[i] = metal::ldexp(x[i], k[i]);
  return r;
}
template <class T, int N, bool P, mtl_detail::if_float<T> = 0>
METAL_FUNC vec<int, N> ilogb(const mtl_vector<T, N, P>& x) {
  return mtl_detail::zip([](T e) { return metal::ilogb(e); }, x);
}
template <class T, int N, bool P, mtl_detail::if_float<T> = 0>
METAL_FUNC vec<T, N> modf(const mtl_vector<T, N, P>& x, vec<T, N>& integral) {
  vec<T, N> r;
  for (int i = 0; i < N; ++i) r[i] = metal::modf(x[i], integral[i]);
  return r;
}
template <class T, int N, bool P, mtl_detail::if_float<T> = 0>
METAL_FUNC vec<T, N> sincos(const mtl_vector<T, N, P>& x, vec<T, N>& cosval) {
  cosval = metal::cos(x);
  return metal::sin(x);
}

// abs, min, max, clamp take integers as well as floats. On floats min/max
// behave like fmin/fmax (a NaN argument yields the other one).
namespace mtl_detail {
#if METAL_CUDA
// |v| computed where neither optimiser sees an abs. For 8- and 16-bit integers the plain
// expression (and absdiff(x, 0)) becomes PTX's abs.s16, whose result for -32768 the code after
// it then takes as +32768: `short(absdiff(x, short(0))) >= 0` was true for x = -32768 (fuzz
// seed 1001, program 8; MSL wraps |-32768| to -32768, as the CPU does). An abs.s32 (the int
// abs, absdiff(x, 0) of ints) ptxas 13.0 and 12.9 take as never negative: `int(absdiff(x, 0))
// % d` lost its sign for x = INT_MIN (fuzz seed 9203, program 73). So (v ^ m) - m, m = v >> 31,
// in an asm: ptxas keeps the sign of that (read from its SASS).
// v, negated where the mask m is all ones (m 0 or -1): (v ^ m) - m.
METAL_FUNC int opaque_negate_masked(int v, int m) {
  int r;
  asm("{\n\t.reg .b32 t;\n\txor.b32 t, %1, %2;\n\tsub.s32 %0, t, %2;\n\t}" : "=r"(r) : "r"(v), "r"(m));
  return r;
}
METAL_FUNC int opaque_abs32(int v) { return opaque_negate_masked(v, v >> 31); }
// The same in 64 bits: NVVM makes abs.s64 of a long's |x|, the family above.
METAL_FUNC long long opaque_negate_masked64(long long v, long long m) {
  long long r;
  asm("{\n\t.reg .b64 t;\n\txor.b64 t, %1, %2;\n\tsub.s64 %0, t, %2;\n\t}" : "=l"(r) : "l"(v), "l"(m));
  return r;
}
#endif
}  // namespace mtl_detail
// |MIN| wraps to MIN, as MSL's abs of every width does on Apple GPUs: `x < 0 ? -x : x` overflowed
// for int and long, and clang then took `abs(x) < 0` as false and `abs(LONG_MIN) % 7` as positive
// (tests/conformance/test_integer_widths.py), so the negation is unsigned.
template <class T, mtl_detail::if_number<T> = 0> METAL_FUNC T abs(T x) {
  if constexpr (mtl_detail::is_float<T>::value) return metal::fabs(x);
#if METAL_CUDA
  else if constexpr (is_signed<T>::value && sizeof(T) <= 4) return T(mtl_detail::opaque_abs32(int(x)));
  else if constexpr (is_signed<T>::value) return T(mtl_detail::opaque_negate_masked64(x, x < T(0) ? -1 : 0));
#endif
  else if constexpr (is_signed<T>::value) return x < T(0) ? T(make_unsigned_t<T>(0) - make_unsigned_t<T>(x)) : x;
  else return x;
}
// abs of a bool (Paddle-Lite's `abs(x <= 1e-6) ? ...`): Apple's compiler promotes it to int.
template <class T, enable_if_t<is_same<T, bool>::value, int> = 0> METAL_FUNC int abs(T x) { return int(x); }
#if METAL_CUDA
namespace mtl_detail {
// Signed min and max up to 32 bits compared as unsigned ones biased by INT_MIN (same order):
// ptxas of CUDA 12 and 13.0 (the H200's NVRTC 13.0.88) fuses two signed ones into a 3-input
// VIMNMX3 and drops a negation of its first or second operand, so `min(min(x, -y), z)` took y
// (SASS); unsigned, it keeps the negation (min3/max3's minmax3_biased, metal_integer.h).
template <bool Max> METAL_FUNC constexpr int minmax_biased(int x, int y) {
  const unsigned s = 0x80000000u, a = unsigned(x) ^ s, b = unsigned(y) ^ s;
  return int((Max ? (a < b ? b : a) : (b < a ? b : a)) ^ s);
}
}  // namespace mtl_detail
#endif
template <class A, class B, class T = mtl_detail::common_scalar_t<A, B>, mtl_detail::if_number<T> = 0>
METAL_FUNC T min(A x_, B y_) {
  const T x = mtl_detail::convert<T>(x_), y = mtl_detail::convert<T>(y_);
  if constexpr (mtl_detail::is_float<T>::value) return metal::fmin(x, y);
#if METAL_CUDA
  else if constexpr (is_signed<T>::value && sizeof(T) <= 4) return T(mtl_detail::minmax_biased<false>(int(x), int(y)));
#endif
  else return y < x ? y : x;
}
template <class A, class B, class T = mtl_detail::common_scalar_t<A, B>, mtl_detail::if_number<T> = 0>
METAL_FUNC T max(A x_, B y_) {
  const T x = mtl_detail::convert<T>(x_), y = mtl_detail::convert<T>(y_);
  if constexpr (mtl_detail::is_float<T>::value) return metal::fmax(x, y);
#if METAL_CUDA
  else if constexpr (is_signed<T>::value && sizeof(T) <= 4) return T(mtl_detail::minmax_biased<true>(int(x), int(y)));
#endif
  else return x < y ? y : x;
}
// clamp(x, lo, hi) = min(max(x, lo), hi); undefined in MSL when lo > hi.
template <class A, class B, class C, class T = mtl_detail::common_scalar_t<A, B, C>, mtl_detail::if_number<T> = 0>
METAL_FUNC T clamp(A x, B lo, C hi) {
  return metal::min(metal::max(mtl_detail::convert<T>(x), mtl_detail::convert<T>(lo)), mtl_detail::convert<T>(hi));
}
template <class T, int N, bool P, mtl_detail::if_number<T> = 0> METAL_FUNC vec<T, N> abs(const mtl_vector<T, N, P>& x) {
  return mtl_detail::zip([](T e) { return metal::abs(e); }, x);
}
template <class A, class B, class V = mtl_detail::zip_result_t<A, B>> METAL_FUNC V min(const A& x, const B& y) {
  typedef typename V::value_type T;
  return mtl_detail::zip([](T a, T b) { return metal::min(a, b); }, x, y);
}
template <class A, class B, class V = mtl_detail::zip_result_t<A, B>> METAL_FUNC V max(const A& x, const B& y) {
  typedef typename V::value_type T;
  return mtl_detail::zip([](T a, T b) { return metal::max(a, b); }, x, y);
}
template <class A, class B, class C, class V = mtl_detail::zip_result_t<A, B, C>>
METAL_FUNC V clamp(const A& x, const B& lo, const C& hi) {
  typedef typename V::value_type T;
  return mtl_detail::zip([](T a, T b, T c) { return metal::clamp(a, b, c); }, x, lo, hi);
}

// precise:: is metal:: (the defaults here are the precise ones). fast:: uses
// CUDA's fast intrinsics where they exist; on the host it is metal:: too.
#define METAL_SAME_IN_FAST_AND_PRECISE \
  using metal::acos; using metal::acosh; using metal::asin; using metal::asinh; using metal::atan; \
  using metal::atan2; using metal::atanh; using metal::ceil; using metal::copysign; using metal::cosh; \
  using metal::cospi; using metal::fabs; using metal::abs; using metal::fdim; using metal::floor; \
  using metal::fma; using metal::fmax; using metal::fmax3; using metal::fmedian3; using metal::fmin; \
  using metal::fmin3; using metal::fmod; using metal::fract; using metal::frexp; using metal::ilogb; \
  using metal::ldexp; using metal::modf; using metal::nextafter; using metal::rint; using metal::round; \
  using metal::sinh; using metal::sinpi; using metal::sqrt; using metal::tanh; using metal::tanpi; \
  using metal::trunc; using metal::sincos; using metal::clamp; using metal::saturate; using metal::mix; \
  using metal::sign; using metal::smoothstep; using metal::step; using metal::min; using metal::max;
#define METAL_FAST_CANDIDATES_BUT_RSQRT \
  using metal::sin; using metal::cos; using metal::tan; using metal::exp; using metal::exp2; \
  using metal::exp10; using metal::log; using metal::log2; using metal::log10; using metal::pow; \
  using metal::powr;
#define METAL_FAST_CANDIDATES METAL_FAST_CANDIDATES_BUT_RSQRT using metal::rsqrt;

namespace precise {
METAL_SAME_IN_FAST_AND_PRECISE
METAL_FAST_CANDIDATES_BUT_RSQRT
METAL_FLOAT1(metal::precise, rsqrt, METALCALL_RSQRT_PRECISE)
METAL_FLOAT2(metal::precise, divide, mtl_detail::divide_precise(a, b))
}  // namespace precise

namespace fast {
METAL_SAME_IN_FAST_AND_PRECISE
#if METAL_CUDA
METAL_FLOAT1(metal::fast, sin, __sinf(v))
METAL_FLOAT1(metal::fast, cos, __cosf(v))
METAL_FLOAT1(metal::fast, tan, __tanf(v))
METAL_FLOAT1(metal::fast, exp, __expf(v))
METAL_FLOAT1(metal::fast, exp2, exp2f(v))
METAL_FLOAT1(metal::fast, exp10, __exp10f(v))
METAL_FLOAT1(metal::fast, log, __logf(v))
METAL_FLOAT1(metal::fast, log2, __log2f(v))
METAL_FLOAT1(metal::fast, log10, __log10f(v))
METAL_FLOAT1(metal::fast, rsqrt, rsqrtf(v))
METAL_FLOAT2(metal::fast, pow, __powf(a, b))
METAL_FLOAT2(metal::fast, powr, __powf(a, b))
METAL_FLOAT2(metal::fast, divide, __fdividef(a, b))
#else
METAL_FAST_CANDIDATES
using metal::divide;
#endif
}  // namespace fast
#undef METAL_SAME_IN_FAST_AND_PRECISE
#undef METAL_FAST_CANDIDATES
#undef METAL_FAST_CANDIDATES_BUT_RSQRT
#undef METALCALL_RSQRT_PRECISE

}  // namespace metal
