// metalcall MSL prelude: unary minus as the CUDA translation writes it,
// `(metal::mtl_rt::neg_tag{} -x)` (msl/passes/small_negations.hpp). A char, short or bool
// (signed or not) is negated in 32 bits through a neg the optimiser cannot see into: NVVM
// narrowed `short(-x)` to PTX's neg.s16, and on the H200 the code after it took -(-32768) as
// +32768 where C++ and MSL wrap it to -32768 once converted back (fuzz seeds 7104-7114; abs in
// metal_math.h had the same fault). Anything else, and constant evaluation, is `-x` itself.
#pragma once
#include "metal_config.h"

namespace metal {
namespace mtl_rt {
struct neg_tag {};
template <class T>
METAL_FUNC constexpr auto operator-(neg_tag, T&& x) -> decltype(-static_cast<T&&>(x)) {
  return -static_cast<T&&>(x);
}
#if METAL_CUDA
METAL_FUNC int opaque_neg32(int v) {
  int r;
  asm("neg.s32 %0, %1;" : "=r"(r) : "r"(v));
  return r;
}
#endif
METAL_FUNC constexpr int neg_small(int v) {
#if METAL_CUDA
  if (!__builtin_is_constant_evaluated()) return opaque_neg32(v);
#endif
  return -v;
}
// A char or short result computed in int, kept from NVVM's narrowing: the vector operators'
// `short3(0) - v` and `ushort3(65535) * v` (a multiply by -1 once folded) became neg.s16 too
// (fuzz seeds 9202, 9205), which the H200's ptxas (13.0, and 12.9) re-sign-extends wrongly.
#if METAL_CUDA
METAL_FUNC int opaque_mov32(int v) {
  int r;
  asm("mov.b32 %0, %1;" : "=r"(r) : "r"(v));
  return r;
}
#endif
METAL_FUNC constexpr int small_result(int v) {
#if METAL_CUDA
  if (!__builtin_is_constant_evaluated()) return opaque_mov32(v);
#endif
  return v;
}
// The argument of a conversion to char or short (passes/small_negations.hpp, narrowing_casts):
// an int or wider integer as an int through small_result (its low bits are all the conversion
// keeps), anything else as it is (the exact overloads win over the template).
template <class X> METAL_FUNC constexpr X&& narrow_arg(X&& x) { return static_cast<X&&>(x); }
METAL_FUNC constexpr int narrow_arg(int x) { return small_result(x); }
METAL_FUNC constexpr int narrow_arg(unsigned int x) { return small_result(int(x)); }
METAL_FUNC constexpr int narrow_arg(long x) { return small_result(int(x)); }
METAL_FUNC constexpr int narrow_arg(unsigned long x) { return small_result(int(x)); }
METAL_FUNC constexpr int narrow_arg(long long x) { return small_result(int(x)); }
METAL_FUNC constexpr int narrow_arg(unsigned long long x) { return small_result(int(x)); }
// A compound assignment to a char or short the translation saw (`v *= short(-1)`, `out[i] -=
// x`): the promoted result through narrow_arg, then converted back, as `v = T(v op e)`.
template <class T> struct narrow_ref_t {
  T& r;
  template <class E> METAL_FUNC T& operator+=(const E& e) { return r = T(narrow_arg(r + e)); }
  template <class E> METAL_FUNC T& operator-=(const E& e) { return r = T(narrow_arg(r - e)); }
  template <class E> METAL_FUNC T& operator*=(const E& e) { return r = T(narrow_arg(r * e)); }
  template <class E> METAL_FUNC T& operator/=(const E& e) { return r = T(narrow_arg(r / e)); }
  template <class E> METAL_FUNC T& operator%=(const E& e) { return r = T(narrow_arg(r % e)); }
  template <class E> METAL_FUNC T& operator&=(const E& e) { return r = T(narrow_arg(r & e)); }
  template <class E> METAL_FUNC T& operator|=(const E& e) { return r = T(narrow_arg(r | e)); }
  template <class E> METAL_FUNC T& operator^=(const E& e) { return r = T(narrow_arg(r ^ e)); }
  template <class E> METAL_FUNC T& operator<<=(const E& e) { return r = T(narrow_arg(r << e)); }
  template <class E> METAL_FUNC T& operator>>=(const E& e) { return r = T(narrow_arg(r >> e)); }
};
template <class T> METAL_FUNC narrow_ref_t<T> narrow_ref(T& r) { return narrow_ref_t<T>{r}; }
// Exact matches, so they win over the template for these types (their promotion is int).
METAL_FUNC constexpr int operator-(neg_tag, bool x) { return neg_small(x); }
METAL_FUNC constexpr int operator-(neg_tag, char x) { return neg_small(x); }
METAL_FUNC constexpr int operator-(neg_tag, signed char x) { return neg_small(x); }
METAL_FUNC constexpr int operator-(neg_tag, unsigned char x) { return neg_small(x); }
METAL_FUNC constexpr int operator-(neg_tag, short x) { return neg_small(x); }
METAL_FUNC constexpr int operator-(neg_tag, unsigned short x) { return neg_small(x); }
}  // namespace mtl_rt
}  // namespace metal
