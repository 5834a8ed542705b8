// metalcall MSL prelude: integer division and remainder that never trap.
//
// On the CPU an integer `/` or `%` by zero, or INT_MIN / -1, raises SIGFPE and
// kills the process; Metal gives some value instead. The CPU translator writes
//   a / b   as  a / metal::mtl_rt::idiv_tag() / b     (the tag shares the
//   a % b   as  a % metal::mtl_rt::imod_tag() % b      operator's precedence and
//   a /= b  as  a /= metal::mtl_rt::idiv_rhs() = b     left associativity, so
//   a %= b  as  a %= metal::mtl_rt::imod_rhs() = b     operands are unchanged)
// and these helpers give defined results (docs/design.md, "CPU runtime limits"):
//   x / 0 == 0, x % 0 == x, MIN / -1 == MAX (clamped, as the MSL spec says), MIN % -1 == 0.
// Floating-point and class operands divide as before; a constant divisor folds
// the checks away. Vector `/` and `%` come here component-wise (metal_vector.h).
// On CUDA (which does not trap) div_value/mod_value are plain operators.
#pragma once
#include "metal_config.h"

namespace metal {
namespace mtl_rt {

#if METAL_CUDA
// CUDA does not trap: the translation for CUDA keeps the plain operators, and
// vector components divide as before.
template <class A, class B> METAL_FUNC constexpr auto div_value(const A& a, const B& b) { return a / b; }
template <class A, class B> METAL_FUNC constexpr auto mod_value(const A& a, const B& b) { return a % b; }
#else

#if defined(METALCALL_CHECKED) && !METAL_CUDA
// Checked mode reports a division by zero (metal_checked.h).
void report_division_by_zero(bool remainder);
#endif

template <class T> struct int_operand : mtl_detail::is_int_or_bool<remove_cv_t<T>> {};
template <> struct int_operand<bool> : true_type {};
template <> struct int_operand<const bool> : true_type {};

// Both operands integers (or enums) and the result an integer: the guarded path.
template <class A, class B, class R>
struct guarded_division
    : integral_constant<bool, (int_operand<A>::value || __is_enum(A)) && (int_operand<B>::value || __is_enum(B)) &&
                                  mtl_detail::is_int_or_bool<remove_cv_t<R>>::value> {};

template <class R> METAL_FUNC constexpr R int_max() {
  return R(typename make_unsigned<R>::type(~typename make_unsigned<R>::type(0)) >> 1);
}

template <class R> METAL_FUNC constexpr R idiv(R a, R b) {
  if (b == R(0)) {
#if defined(METALCALL_CHECKED)
    report_division_by_zero(false);
#endif
    return R(0);
  }
  if constexpr (is_signed<R>::value) {
    if (b == R(-1)) return a < -int_max<R>() ? int_max<R>() : R(-a);
  }
  return R(a / b);
}

template <class R> METAL_FUNC constexpr R imod(R a, R b) {
  if (b == R(0)) {
#if defined(METALCALL_CHECKED)
    report_division_by_zero(true);
#endif
    return a;
  }
  if constexpr (is_signed<R>::value) {
    if (b == R(-1)) return R(0);
  }
  return R(a % b);
}

template <class A, class B> METAL_FUNC constexpr auto div_value(const A& a, const B& b) {
  typedef decltype(a / b) R;
  if constexpr (guarded_division<A, B, R>::value) return idiv<remove_cv_t<R>>(R(a), R(b));
  else return a / b;
}
template <class A, class B> METAL_FUNC constexpr auto mod_value(const A& a, const B& b) {
  typedef decltype(a % b) R;
  if constexpr (guarded_division<A, B, R>::value) return imod<remove_cv_t<R>>(R(a), R(b));
  else return a % b;
}

// `a / idiv_tag()` holds a; `(that) / b` divides.
struct idiv_tag {};
struct imod_tag {};
template <class T> struct dividend { T a; };
template <class T> struct modulend { T a; };
template <class T> METAL_FUNC constexpr dividend<T> operator/(const T& a, idiv_tag) { return {a}; }
template <class T> METAL_FUNC constexpr modulend<T> operator%(const T& a, imod_tag) { return {a}; }
template <class T, class U> METAL_FUNC constexpr auto operator/(const dividend<T>& p, const U& b) { return div_value(p.a, b); }
template <class T, class U> METAL_FUNC constexpr auto operator%(const modulend<T>& p, const U& b) { return mod_value(p.a, b); }

// `a /= (idiv_rhs() = b)`: the tag's assignment wraps b, and the compound operator divides.
template <class U> struct divisor { U b; };
template <class U> struct modulus { U b; };
struct idiv_rhs {
  template <class U> METAL_FUNC constexpr divisor<U> operator=(const U& b) const { return {b}; }
};
struct imod_rhs {
  template <class U> METAL_FUNC constexpr modulus<U> operator=(const U& b) const { return {b}; }
};
// A bit-field takes no reference (`s.bits /= 2` was refused until 2026-12-05): the translation
// writes `s.bits /= idiv_wide_rhs() = b` for a name declared as one somewhere, and C++'s own
// `/=` divides by b made 64 bits wide (the wrapper's one conversion), so that nothing narrower
// traps: an integer b as itself, zero as the widest value (x / 0 == 0 and x % 0 == x, as
// above, for bit-fields up to 62 bits); MIN / -1 is computed wide and wraps where it is stored,
// as C++'s promotion of a bit-field narrower than int does anyway. (No 128 bits: their division
// is a libgcc call the runtime lacks.) Anything else of that name that is not an integer (a
// vector, a float) divides through div_value, as it would without the wrapper.
template <class U> using wide_divisor_t = conditional_t<(sizeof(U) < 8), long long, U>;
struct no_wide_divisor {};
template <class U, bool Remainder> struct wide_divisor {
  U b;
  typedef conditional_t<mtl_detail::is_int_or_bool<remove_cv_t<U>>::value || __is_enum(U),
                        wide_divisor_t<remove_cv_t<U>>, no_wide_divisor> W;
  METAL_FUNC constexpr operator W() const {
    if constexpr (is_same<W, no_wide_divisor>::value) {
      return {};
    } else {
      if (b == U(0)) {
#if defined(METALCALL_CHECKED)
        report_division_by_zero(Remainder);
#endif
        return W(make_unsigned_t<W>(~make_unsigned_t<W>(0)) >> (is_signed<W>::value ? 1 : 0));
      }
      return W(b);
    }
  }
};
struct idiv_wide_rhs {
  template <class U> METAL_FUNC constexpr wide_divisor<U, false> operator=(const U& b) const { return {b}; }
};
struct imod_wide_rhs {
  template <class U> METAL_FUNC constexpr wide_divisor<U, true> operator=(const U& b) const { return {b}; }
};
template <class T, class U, enable_if_t<!mtl_detail::is_int_or_bool<remove_cv_t<T>>::value, int> = 0>
METAL_FUNC constexpr T& operator/=(T& a, const wide_divisor<U, false>& d) {
  a = div_value(a, d.b);
  return a;
}
template <class T, class U, enable_if_t<!mtl_detail::is_int_or_bool<remove_cv_t<T>>::value, int> = 0>
METAL_FUNC constexpr T& operator%=(T& a, const wide_divisor<U, true>& d) {
  a = mod_value(a, d.b);
  return a;
}

// A class's own compound operator, where it has one (a source's `S& operator/=(float)`, which
// `a = a / b` bypassed or, without an operator/, failed to compile before 2026-12-05); vectors
// reach div_value through their operator/ all the same, and scalars never come to the first one.
template <class T, class U>
METAL_FUNC constexpr auto compound_div(T& a, const U& b, int) -> decltype(a /= b, void()) { a /= b; }
template <class T, class U> METAL_FUNC constexpr void compound_div(T& a, const U& b, long) { a = div_value(a, b); }
template <class T, class U>
METAL_FUNC constexpr auto compound_mod(T& a, const U& b, int) -> decltype(a %= b, void()) { a %= b; }
template <class T, class U> METAL_FUNC constexpr void compound_mod(T& a, const U& b, long) { a = mod_value(a, b); }
template <class T, class U> METAL_FUNC constexpr T& operator/=(T& a, const divisor<U>& d) {
  if constexpr (__is_class(T)) compound_div(a, d.b, 0);
  else a = div_value(a, d.b);
  return a;
}
template <class T, class U> METAL_FUNC constexpr T& operator%=(T& a, const modulus<U>& d) {
  if constexpr (__is_class(T)) compound_mod(a, d.b, 0);
  else a = mod_value(a, d.b);
  return a;
}

#endif  // METAL_CUDA
}  // namespace mtl_rt
}  // namespace metal
