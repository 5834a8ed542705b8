// metalcall MSL prelude: conditionals whose branches mix half or bfloat with float, double or
// an integer. The translator writes `c ? X : Y` as `c ? METALCALL_COND_ARMS((X), (Y))`
// (msl/passes/conditional_literals.hpp), which casts each branch to
// cond_arm_t<decltype((it)), decltype((other))>: the branch's own type, reference and value
// category (a no-op cast) unless MSL's usual arithmetic conversions decide where C++ finds the
// conditional ambiguous (bfloat is a class on every target, half on CUDA and in the software
// half): half or bfloat with float (float), with double (double), with an integer (the 16-bit
// type), half with bfloat (float).
#pragma once
#include "metal_half.h"

namespace metal {
namespace mtl_rt {
template <class T> struct cond_bare { typedef T type; };  // without reference and cv
template <class T> struct cond_bare<T&> : cond_bare<T> {};
template <class T> struct cond_bare<T&&> : cond_bare<T> {};
template <class T> struct cond_bare<const T> : cond_bare<T> {};
template <class T> struct cond_bare<volatile T> : cond_bare<T> {};
template <class T> struct cond_bare<const volatile T> : cond_bare<T> {};
template <class T>
struct cond_is_16 : integral_constant<bool, is_same<T, mtl_half>::value || is_same<T, mtl_bfloat>::value> {};
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
                           typename conditional<mtl_detail::is_int<B>::value, A, void>::type>::type>::type
      type;
};
template <class A, class B>
struct cond_pick<A, B, false, true> : cond_pick<B, A, true, false> {};
// An integer literal branch (int_literal: it converts to the other branch's type) beside a bool,
// char or short: MSL promotes that one to int, so the literal stays an int (`c ? uchar(64) :
// 2030664764` is 2030664764, not 60: fuzz seed 9402, program 28).
template <class B>
struct cond_pick<int_literal, B, false, false> {
  typedef typename conditional<is_same<B, bool>::value || (mtl_detail::is_int<B>::value && sizeof(B) < 4), int, void>::type type;
};
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
// `(cond_arm_tag<A, O>{}, x)`: x converted to cond_arm_t<A, O>, or x itself with its own type
// and value category where that is a no-op. Not static_cast<decltype((x))>(x): inside a lambda
// of a const member function NVRTC's decltype((member)) drops the const, and the cast then
// casts it away, an error (fuzz seed 7114, program 437). A void x takes the built-in comma.
template <class Arm, class Other>
struct cond_arm_tag {};
template <class Arm, class Other, class T, class P = typename cond_arm<Arm, Other>::type>
struct cond_arm_out {
  typedef P type;
};
template <class Arm, class Other, class T>
struct cond_arm_out<Arm, Other, T, Arm> {
  typedef T type;  // T& for an lvalue (its const kept), T for an rvalue
};
template <class Arm, class Other, class T>
METAL_FUNC constexpr typename cond_arm_out<Arm, Other, T>::type operator,(cond_arm_tag<Arm, Other>, T&& x) {
  // Forwarded: a class prvalue is moved (an unaligned vector's reference can be moved, not copied).
  return static_cast<typename cond_arm_out<Arm, Other, T>::type>(static_cast<T&&>(x));
}
}  // namespace mtl_rt
}  // namespace metal
#define METALCALL_COND_ARMS(x, y)                                                  \
  (metal::mtl_rt::cond_arm_tag<decltype((x)), decltype((y))>{}, x) : \
  (metal::mtl_rt::cond_arm_tag<decltype((y)), decltype((x))>{}, y)
