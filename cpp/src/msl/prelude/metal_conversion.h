// metalcall MSL prelude: floating-point to integer conversions as MSL gives them, for the CPU and CUDA.
// A NaN converts to 0 (specification section 8.6, fast math or not), and a value beyond the
// integer's range saturates to its minimum or maximum, as Apple's and NVIDIA's GPUs convert (a
// negative value to an unsigned type gives 0). x86's cvttss2si gives INT_MIN for both, and
// clang's saturating conversions (-fno-strict-float-cast-overflow) are expanded lane by lane
// (8.5x slower). Here the argument is first made a NaN-free value in range (a maxps and a minps,
// and a NaN test for a signed type), so the conversion stays the one vectorised instruction
// (vcvttps2dq ...); a value at or above 2^bits (2^(bits-1) signed: no float below it converts to
// the maximum) takes the maximum by a compare and a select after it.
//
// The CPU translation writes each conversion to a 32- or 64-bit integer it sees as
// `metal::mtl_rt::int_arg<T>(x)` (msl/passes/conversion_sites.hpp): a float, double, half or
// bfloat x becomes that T, anything else is passed on as it is (constant expressions and class
// types with their own conversions included); a compound assignment `k += f` (which converts
// `k + f`) as `metal::mtl_rt::int_ref(k) += f`. The vectors' conversions (metal_vector.h's
// convert_impl) take their components through int_arg as well. On CUDA NVRTC's conversions
// saturate, and a NaN gives 0 from float to int or uint; from a double to those, and from any
// floating type to long or ulong, it gave the minimum (0x80000000, 2^63 as a ulong) on an H200
// (tests/conformance/test_audit_conversions.py), so int_arg zeroes a NaN there first; and it
// converts through the hardware's instruction, which NVVM cannot fold as undefined behaviour.
#pragma once
#include "metal_config.h"

#if !METAL_CUDA
// defines={"METALCALL_FLOAT_TO_INT_CONVERSIONS": "0"} (a prelude option: the caller's, never the
// source's) passes every argument on as it is, x86's conversions again, to measure what the
// conditioning costs in one process (benchmarks/bench_float_to_int.py).
#if defined(METALCALL_FLOAT_TO_INT_CONVERSIONS) && !METALCALL_FLOAT_TO_INT_CONVERSIONS
#define __METALCALL_CONDITIONS_FLOAT_TO_INT 0
#else
#define __METALCALL_CONDITIONS_FLOAT_TO_INT 1
#endif
#endif
#include "metal_half.h"
#include "metal_type_traits.h"
#include "metal_division.h"  // div_value: `k /= e` as the translation writes it (idiv_rhs on the CPU)

namespace metal {
namespace mtl_rt {
namespace conversion {
// The floating type a value is conditioned in: float and double as they are, half and bfloat
// as a float (exactly); void for any other type.
template <class X> struct floating { typedef void type; };
template <> struct floating<float> { typedef float type; };
template <> struct floating<double> { typedef double type; };
template <> struct floating<mtl_half> { typedef float type; };
template <> struct floating<mtl_bfloat> { typedef float type; };

#if METAL_CUDA
// The conversions whose NaN needs zeroing: to a 64-bit integer, or from a double to a 32-bit one.
template <class T, class F>
struct zeroes_nan
    : integral_constant<bool, mtl_detail::is_int<T>::value && (sizeof(T) == 8 || (sizeof(T) == 4 && is_same<F, double>::value))> {};

// The hardware's conversion (cvt.rzi, which saturates) of a float or double to a 32- or 64-bit
// T, as an intrinsic: a plain conversion of a value NVVM can fold is folded as C++'s undefined
// behaviour lets it (`uint c = 5e9f;` gave 705032704 on an H200, the CPU and Metal 2^32 - 1).
template <class T, class F> METAL_FUNC T hardware_convert(F v) {
  constexpr bool is_signed = T(-1) < T(0);
  if constexpr (is_same<F, double>::value) {
    if constexpr (sizeof(T) == 4) { if constexpr (is_signed) return __double2int_rz(v); else return __double2uint_rz(v); }
    else { if constexpr (is_signed) return __double2ll_rz(v); else return __double2ull_rz(v); }
  } else {
    if constexpr (sizeof(T) == 4) { if constexpr (is_signed) return __float2int_rz(v); else return __float2uint_rz(v); }
    else { if constexpr (is_signed) return __float2ll_rz(v); else return __float2ull_rz(v); }
  }
}
}  // namespace conversion

// The argument of a conversion to a 32- or 64-bit integer T: a floating value converted by the
// hardware, such a NaN zeroed first; anything else as it is. (A constant expression converts
// as C++ does: out of range it is no constant, as in Metal's compiler.)
template <class T, class X> METAL_FUNC constexpr decltype(auto) int_arg(X&& x) {
  typedef remove_cv_t<remove_reference_t<X>> D;
  typedef typename conversion::floating<D>::type F;
  typedef remove_cv_t<T> To;
  if constexpr (!is_same<F, void>::value && mtl_detail::is_int<To>::value && (sizeof(To) == 4 || sizeof(To) == 8)) {
    F v = static_cast<F>(x);
    if constexpr (conversion::zeroes_nan<To, F>::value) v = v == v ? v : F(0);
    if (__builtin_is_constant_evaluated()) return To(v);
    return conversion::hardware_convert<To>(v);
  } else if constexpr (is_same<To, mtl_half>::value && mtl_detail::is_int<D>::value && sizeof(D) == 8) {
    // T a template's parameter that is half here, x a long: __half has no operator= for it and
    // its others tie (`v = ulong(g) % k;` with `T v`, fuzz seed 28200 #534), as half_arg's case.
    return To(x);
  } else {
    return static_cast<X&&>(x);
  }
}
#else
// The integer types whose conversions are conditioned: 32 and 64 bits (a char or short converts
// through int, so its NaN gives INT_MIN's low bits, 0).
template <class T>
struct saturated : integral_constant<bool, mtl_detail::is_int<T>::value && (sizeof(T) == 4 || sizeof(T) == 8)> {};

// v as T: NaN 0, below the range T's minimum, at or above 2^bits (2^(bits-1) signed) its maximum.
template <class T, class F> METAL_FUNC constexpr T saturate(F v) {
  constexpr bool is_signed = T(-1) < T(0);
  constexpr T most = is_signed ? T(~(T(1) << (sizeof(T) * 8 - 1))) : T(~T(0));
  constexpr F top = F(most / 2 + 1) * F(2);                        // 2^31, 2^32, 2^63 or 2^64, exactly
  constexpr F half_ulp = sizeof(F) == 4 ? F(0x1p-24) : F(0x1p-53);  // 1 - half_ulp: the float below 1
  constexpr F below_top = top * (F(1) - half_ulp);                  // the largest F below top
  constexpr F low = is_signed ? -top : F(0);                        // T's minimum, exactly
  // Unsigned: `v > 0` is false for a NaN too (one maxps). Signed: the NaN test selects around the
  // maxps (a masked maxps on AVX-512). The fewest operations measured: 2^18 float4 to uint4, one
  // thread, 107 µs unconditioned, 149 so, 196 with the NaN zeroed first.
  const F b = is_signed ? (v == v ? (v > low ? v : low) : F(0)) : (v > low ? v : low);
  const F c = b < below_top ? b : below_top;
  const T r = T(c);
  return v >= top ? most : r;
}
}  // namespace conversion

// The argument of a conversion to T: a floating value saturated into T, anything else as it is.
template <class T, class X> METAL_FUNC constexpr decltype(auto) int_arg(X&& x) {
  typedef remove_cv_t<remove_reference_t<X>> D;
  typedef typename conversion::floating<D>::type F;
  typedef remove_cv_t<T> To;
  if constexpr (__METALCALL_CONDITIONS_FLOAT_TO_INT && conversion::saturated<To>::value && !is_same<F, void>::value)
    return conversion::saturate<To>(static_cast<F>(x));
  else
    return static_cast<X&&>(x);
}
#endif

// `k op= e` for a 32- or 64-bit integer k and op one of + - * / (the others take integers
// only): `k = T(k op e)`, the result (a float where e is one) through int_arg. `k /= e` comes as
// `k /= idiv_rhs() = e` on the CPU (metal_division.h), divided by div_value as there (CUDA's is `/`). constexpr: the
// translation cannot tell `s += k` of two ints from `s += f`, and a constexpr function's loop
// that sums must stay one (a program-scope constant from it was a load-time initialiser).
// Any other T (a template parameter's float, a class with its own operators) keeps its own `op=`.
template <class T> struct int_ref_t {
  T& r;
  static constexpr bool wide = mtl_detail::is_int<remove_cv_t<T>>::value;
  template <class E> METAL_FUNC constexpr T& operator+=(const E& e) {
    if constexpr (wide) return r = T(int_arg<T>(r + e)); else return r += e;
  }
  template <class E> METAL_FUNC constexpr T& operator-=(const E& e) {
    if constexpr (wide) return r = T(int_arg<T>(r - e)); else return r -= e;
  }
  template <class E> METAL_FUNC constexpr T& operator*=(const E& e) {
    if constexpr (wide) return r = T(int_arg<T>(r * e)); else return r *= e;
  }
  template <class E> METAL_FUNC constexpr T& operator/=(const E& e) {
    if constexpr (wide) return r = T(int_arg<T>(div_value(r, e))); else return r /= e;
  }
#if !METAL_CUDA
  template <class E> METAL_FUNC constexpr T& operator/=(const divisor<E>& d) {
    if constexpr (wide) return r = T(int_arg<T>(div_value(r, d.b))); else return r /= d;
  }
#endif
};
template <class T> METAL_FUNC constexpr int_ref_t<T> int_ref(T& r) { return int_ref_t<T>{r}; }
// An rvalue: the proxy an element of a pointer made by a cast is (metal_unaligned.h: ggml's
// `so4[j*PV4 + i] *= ms` of a `threadgroup o4_t*` made by a cast), which keeps its own `op=`.
// (An lvalue takes the overload above: partial ordering prefers T& to T&&.)
template <class T> METAL_FUNC constexpr T&& int_ref(T&& r) { return static_cast<T&&>(r); }
}  // namespace mtl_rt
}  // namespace metal
