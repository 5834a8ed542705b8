// metalcall MSL prelude: relational functions (MSL 6.6): all, any, select,
// isnan, isinf, isfinite, isnormal, signbit, isordered, isunordered.
// MSL's not(bvec) needs nothing here: `not` is C++'s alternative token for `!`.
#pragma once
#include "metal_math.h"

namespace metal {

METAL_FUNC constexpr bool all(bool b) { return b; }
METAL_FUNC constexpr bool any(bool b) { return b; }
template <class T, int N, bool P> METAL_FUNC constexpr bool all(const mtl_vector<T, N, P>& v) {
  bool r = bool(v.x) && bool(v.y);
  if constexpr (N > 2) r = r && bool(v.z);
  if constexpr (N > 3) r = r && bool(v.w);
  return r;
}
template <class T, int N, bool P> METAL_FUNC constexpr bool any(const mtl_vector<T, N, P>& v) {
  bool r = bool(v.x) || bool(v.y);
  if constexpr (N > 2) r = r || bool(v.z);
  if constexpr (N > 3) r = r || bool(v.w);
  return r;
}

// select(a, b, c): c ? b : a, per component for vectors.
namespace mtl_detail {
template <class T, int N, bool P, bool Q, bool R, int... I>
METAL_FUNC vec<T, N> select_seq(const mtl_vector<T, N, P>& a, const mtl_vector<T, N, Q>& b,
                                const mtl_vector<bool, N, R>& c, int_seq<I...>) {
  return vec<T, N>(elems_tag{}, (elem<I>(c) ? elem<I>(b) : elem<I>(a))...);
}
}  // namespace mtl_detail
template <class T, mtl_detail::if_number<T> = 0> METAL_FUNC T select(T a, T b, bool c) { return c ? b : a; }
template <class T, int N, bool P, bool Q, bool R>
METAL_FUNC vec<T, N> select(const mtl_vector<T, N, P>& a, const mtl_vector<T, N, Q>& b,
                            const mtl_vector<bool, N, R>& c) {
  return mtl_detail::select_seq(a, b, c, typename mtl_detail::make_seq<N>::type{});
}
template <class T, int N, bool P, bool Q>
METAL_FUNC vec<T, N> select(const mtl_vector<T, N, P>& a, const mtl_vector<T, N, Q>& b, bool c) {
  return c ? vec<T, N>(b) : vec<T, N>(a);
}
// A scalar beside a vector converts to that vector, as MSL converts a scalar where a vector is
// expected (MNN's softmax: select(0, value, mask) with a float4 value).
template <class S, class T, int N, bool Q, class C, mtl_detail::if_number<S> = 0>
METAL_FUNC auto select(S a, const mtl_vector<T, N, Q>& b, const C& c) -> decltype(metal::select(vec<T, N>(b), b, c)) {
  return metal::select(vec<T, N>(T(a)), b, c);
}
template <class T, int N, bool P, class S, class C, mtl_detail::if_number<S> = 0>
METAL_FUNC auto select(const mtl_vector<T, N, P>& a, S b, const C& c) -> decltype(metal::select(a, vec<T, N>(a), c)) {
  return metal::select(a, vec<T, N>(T(b)), c);
}

// Classification, computed on the float value (exact for half and bfloat).
#define METAL_CLASSIFY(NAME, EXPR)                                                   \
  template <class T, mtl_detail::if_float<T> = 0> METAL_FUNC bool NAME(T x) {        \
    const float v = mtl_detail::f32(x);                                              \
    return EXPR;                                                                     \
  }                                                                                  \
  template <class T, int N, bool P, mtl_detail::if_float<T> = 0>                     \
  METAL_FUNC vec<bool, N> NAME(const mtl_vector<T, N, P>& x) {                       \
    return mtl_detail::zip([](T e) { return metal::NAME(e); }, x);                   \
  }
METAL_CLASSIFY(isnan, v != v)
METAL_CLASSIFY(isinf, METAL_LIBM(fabs)(v) == numeric_limits<float>::infinity())
METAL_CLASSIFY(isfinite, METAL_LIBM(fabs)(v) < numeric_limits<float>::infinity())
METAL_CLASSIFY(isnormal, METAL_LIBM(fabs)(v) >= mtl_detail::f32(numeric_limits<T>::min()) &&
                             METAL_LIBM(fabs)(v) < numeric_limits<float>::infinity())
METAL_CLASSIFY(signbit, (mtl_detail::float_bits(v) >> 31) != 0)
#undef METAL_CLASSIFY

template <class A, class B, class T = mtl_detail::common_scalar_t<A, B>, mtl_detail::if_float<T> = 0>
METAL_FUNC bool isunordered(A x, B y) {
  return metal::isnan(mtl_detail::convert<T>(x)) || metal::isnan(mtl_detail::convert<T>(y));
}
template <class A, class B, class T = mtl_detail::common_scalar_t<A, B>, mtl_detail::if_float<T> = 0>
METAL_FUNC bool isordered(A x, B y) {
  return !metal::isunordered(x, y);
}
template <class A, class B, class V = mtl_detail::zip_result_t<A, B>, mtl_detail::if_float<typename V::value_type> = 0>
METAL_FUNC vec<bool, mtl_detail::vec_info<V>::size> isunordered(const A& x, const B& y) {
  typedef typename V::value_type T;
  return mtl_detail::zip([](T a, T b) { return metal::isunordered(a, b); }, x, y);
}
template <class A, class B, class V = mtl_detail::zip_result_t<A, B>, mtl_detail::if_float<typename V::value_type> = 0>
METAL_FUNC vec<bool, mtl_detail::vec_info<V>::size> isordered(const A& x, const B& y) {
  typedef typename V::value_type T;
  return mtl_detail::zip([](T a, T b) { return metal::isordered(a, b); }, x, y);
}

}  // namespace metal
