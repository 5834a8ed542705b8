// metalcall MSL prelude: geometric functions (MSL 6.5) on float and half vectors.
#pragma once
#include "metal_math.h"

namespace metal {

// The functions of two (or three) vectors take them of one packedness, and a packed vector
// with an unpacked one in a second overload (`mixed`): so that each is more specialised than
// a source's own `template <typename T> float dot(T a, T b)`, which would otherwise be as good
// a match (mistral.rs's paged attention), as Apple's non-template overloads are.
namespace mtl_detail {
template <bool... P> struct mixed_packing : integral_constant<bool, !((P == true) && ...) && ((P == true) || ...)> {};
template <bool... P> using if_mixed = enable_if_t<mixed_packing<P...>::value, int>;
}  // namespace mtl_detail

template <class T, int N, bool P, mtl_detail::if_float<T> = 0>
METAL_FUNC T dot(const mtl_vector<T, N, P>& a, const mtl_vector<T, N, P>& b) {
  T r = T(a.x * b.x + a.y * b.y);
  if constexpr (N > 2) r = T(r + a.z * b.z);
  if constexpr (N > 3) r = T(r + a.w * b.w);
  return r;
}
template <class T, int N, bool P, bool Q, mtl_detail::if_mixed<P, Q> = 0, mtl_detail::if_float<T> = 0>
METAL_FUNC T dot(const mtl_vector<T, N, P>& a, const mtl_vector<T, N, Q>& b) {
  return metal::dot(vec<T, N>(a), vec<T, N>(b));
}
// A scalar where a vector is expected converts to one (MSL's implicit scalar-to-vector
// conversion, which Apple's non-template overloads take): TNN's `dot(s, 1)` sums s.
#define METALCALL_SCALAR_BROADCAST(NAME)                                                            \
  template <class T, int N, bool P, class S, enable_if_t<mtl_detail::is_scalar<S>::value, int> = 0, \
            mtl_detail::if_float<T> = 0>                                                           \
  METAL_FUNC T NAME(const mtl_vector<T, N, P>& a, S s) {                                            \
    return metal::NAME(vec<T, N>(a), vec<T, N>(mtl_detail::convert<T>(s)));                         \
  }                                                                                                 \
  template <class T, int N, bool P, class S, enable_if_t<mtl_detail::is_scalar<S>::value, int> = 0, \
            mtl_detail::if_float<T> = 0>                                                           \
  METAL_FUNC T NAME(S s, const mtl_vector<T, N, P>& b) {                                            \
    return metal::NAME(vec<T, N>(mtl_detail::convert<T>(s)), vec<T, N>(b));                         \
  }
METALCALL_SCALAR_BROADCAST(dot)
template <class T, bool P, mtl_detail::if_float<T> = 0>
METAL_FUNC vec<T, 3> cross(const mtl_vector<T, 3, P>& a, const mtl_vector<T, 3, P>& b) {
  return vec<T, 3>(T(a.y * b.z - a.z * b.y), T(a.z * b.x - a.x * b.z), T(a.x * b.y - a.y * b.x));
}
template <class T, bool P, bool Q, mtl_detail::if_mixed<P, Q> = 0, mtl_detail::if_float<T> = 0>
METAL_FUNC vec<T, 3> cross(const mtl_vector<T, 3, P>& a, const mtl_vector<T, 3, Q>& b) {
  return metal::cross(vec<T, 3>(a), vec<T, 3>(b));
}
template <class T, int N, bool P, mtl_detail::if_float<T> = 0>
METAL_FUNC T length_squared(const mtl_vector<T, N, P>& a) { return metal::dot(a, a); }
template <class T, int N, bool P, mtl_detail::if_float<T> = 0>
METAL_FUNC T length(const mtl_vector<T, N, P>& a) { return metal::sqrt(metal::dot(a, a)); }
template <class T, int N, bool P, mtl_detail::if_float<T> = 0>
METAL_FUNC T distance_squared(const mtl_vector<T, N, P>& a, const mtl_vector<T, N, P>& b) {
  return metal::length_squared(a - b);
}
template <class T, int N, bool P, bool Q, mtl_detail::if_mixed<P, Q> = 0, mtl_detail::if_float<T> = 0>
METAL_FUNC T distance_squared(const mtl_vector<T, N, P>& a, const mtl_vector<T, N, Q>& b) {
  return metal::length_squared(a - b);
}
template <class T, int N, bool P, mtl_detail::if_float<T> = 0>
METAL_FUNC T distance(const mtl_vector<T, N, P>& a, const mtl_vector<T, N, P>& b) {
  return metal::length(a - b);
}
template <class T, int N, bool P, bool Q, mtl_detail::if_mixed<P, Q> = 0, mtl_detail::if_float<T> = 0>
METAL_FUNC T distance(const mtl_vector<T, N, P>& a, const mtl_vector<T, N, Q>& b) {
  return metal::length(a - b);
}
METALCALL_SCALAR_BROADCAST(distance_squared)
METALCALL_SCALAR_BROADCAST(distance)
#undef METALCALL_SCALAR_BROADCAST
template <class T, int N, bool P, mtl_detail::if_float<T> = 0>
METAL_FUNC vec<T, N> normalize(const mtl_vector<T, N, P>& a) {
  return a * metal::rsqrt(metal::dot(a, a));
}
// reflect(I, N) = I - 2 dot(N, I) N, with N normalized by the caller.
template <class T, int N, bool P, mtl_detail::if_float<T> = 0>
METAL_FUNC vec<T, N> reflect(const mtl_vector<T, N, P>& i, const mtl_vector<T, N, P>& n) {
  return i - T(2) * metal::dot(n, i) * n;
}
template <class T, int N, bool P, bool Q, mtl_detail::if_mixed<P, Q> = 0, mtl_detail::if_float<T> = 0>
METAL_FUNC vec<T, N> reflect(const mtl_vector<T, N, P>& i, const mtl_vector<T, N, Q>& n) {
  return metal::reflect(vec<T, N>(i), vec<T, N>(n));
}
template <class T, int N, bool P, bool Q, class E, mtl_detail::if_mixed<P, Q> = 0, mtl_detail::if_float<T> = 0>
METAL_FUNC vec<T, N> refract(const mtl_vector<T, N, P>& i, const mtl_vector<T, N, Q>& n, E eta) {
  return metal::refract(vec<T, N>(i), vec<T, N>(n), eta);
}
template <class T, int N, bool P, class E, mtl_detail::if_float<T> = 0>
METAL_FUNC vec<T, N> refract(const mtl_vector<T, N, P>& i, const mtl_vector<T, N, P>& n, E eta_) {
  const T eta = mtl_detail::convert<T>(eta_);
  const T d = metal::dot(n, i);
  const T k = T(T(1) - eta * eta * (T(1) - d * d));
  if (k < T(0)) return vec<T, N>(T(0));
  return eta * i - (eta * d + metal::sqrt(k)) * n;
}
// faceforward(N, I, Nref): N if dot(Nref, I) < 0, else -N.
template <class T, int N, bool P, mtl_detail::if_float<T> = 0>
METAL_FUNC vec<T, N> faceforward(const mtl_vector<T, N, P>& n, const mtl_vector<T, N, P>& i,
                                 const mtl_vector<T, N, P>& nref) {
  return metal::dot(nref, i) < T(0) ? vec<T, N>(n) : vec<T, N>(-n);
}
template <class T, int N, bool P, bool Q, bool R, mtl_detail::if_mixed<P, Q, R> = 0, mtl_detail::if_float<T> = 0>
METAL_FUNC vec<T, N> faceforward(const mtl_vector<T, N, P>& n, const mtl_vector<T, N, Q>& i,
                                 const mtl_vector<T, N, R>& nref) {
  return metal::faceforward(vec<T, N>(n), vec<T, N>(i), vec<T, N>(nref));
}

namespace fast {
using metal::cross; using metal::distance; using metal::distance_squared; using metal::dot;
using metal::faceforward; using metal::length; using metal::length_squared; using metal::normalize;
using metal::reflect; using metal::refract;
}  // namespace fast
namespace precise {
using metal::cross; using metal::distance; using metal::distance_squared; using metal::dot;
using metal::faceforward; using metal::length; using metal::length_squared; using metal::normalize;
using metal::reflect; using metal::refract;
}  // namespace precise

}  // namespace metal
