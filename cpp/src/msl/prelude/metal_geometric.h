// metalcall MSL prelude: geometric functions (MSL 6.5) on float and half vectors.
#pragma once
#include "metal_math.h"

namespace metal {

template <class T, int N, bool P, bool Q, mtl_detail::if_float<T> = 0>
METAL_FUNC T dot(const mtl_vector<T, N, P>& a, const mtl_vector<T, N, Q>& b) {
  T r = T(a.x * b.x + a.y * b.y);
  if constexpr (N > 2) r = T(r + a.z * b.z);
  if constexpr (N > 3) r = T(r + a.w * b.w);
  return r;
}
template <class T, bool P, bool Q, mtl_detail::if_float<T> = 0>
METAL_FUNC vec<T, 3> cross(const mtl_vector<T, 3, P>& a, const mtl_vector<T, 3, Q>& b) {
  return vec<T, 3>(T(a.y * b.z - a.z * b.y), T(a.z * b.x - a.x * b.z), T(a.x * b.y - a.y * b.x));
}
template <class T, int N, bool P, mtl_detail::if_float<T> = 0>
METAL_FUNC T length_squared(const mtl_vector<T, N, P>& a) { return metal::dot(a, a); }
template <class T, int N, bool P, mtl_detail::if_float<T> = 0>
METAL_FUNC T length(const mtl_vector<T, N, P>& a) { return metal::sqrt(metal::dot(a, a)); }
template <class T, int N, bool P, bool Q, mtl_detail::if_float<T> = 0>
METAL_FUNC T distance_squared(const mtl_vector<T, N, P>& a, const mtl_vector<T, N, Q>& b) {
  return metal::length_squared(a - b);
}
template <class T, int N, bool P, bool Q, mtl_detail::if_float<T> = 0>
METAL_FUNC T distance(const mtl_vector<T, N, P>& a, const mtl_vector<T, N, Q>& b) {
  return metal::length(a - b);
}
template <class T, int N, bool P, mtl_detail::if_float<T> = 0>
METAL_FUNC vec<T, N> normalize(const mtl_vector<T, N, P>& a) {
  return a * metal::rsqrt(metal::dot(a, a));
}
// reflect(I, N) = I - 2 dot(N, I) N, with N normalized by the caller.
template <class T, int N, bool P, bool Q, mtl_detail::if_float<T> = 0>
METAL_FUNC vec<T, N> reflect(const mtl_vector<T, N, P>& i, const mtl_vector<T, N, Q>& n) {
  return i - T(2) * metal::dot(n, i) * n;
}
template <class T, int N, bool P, bool Q, class E, mtl_detail::if_float<T> = 0>
METAL_FUNC vec<T, N> refract(const mtl_vector<T, N, P>& i, const mtl_vector<T, N, Q>& n, E eta_) {
  const T eta = mtl_detail::convert<T>(eta_);
  const T d = metal::dot(n, i);
  const T k = T(T(1) - eta * eta * (T(1) - d * d));
  if (k < T(0)) return vec<T, N>(T(0));
  return eta * i - (eta * d + metal::sqrt(k)) * n;
}
// faceforward(N, I, Nref): N if dot(Nref, I) < 0, else -N.
template <class T, int N, bool P, bool Q, bool R, mtl_detail::if_float<T> = 0>
METAL_FUNC vec<T, N> faceforward(const mtl_vector<T, N, P>& n, const mtl_vector<T, N, Q>& i,
                                 const mtl_vector<T, N, R>& nref) {
  return metal::dot(nref, i) < T(0) ? vec<T, N>(n) : vec<T, N>(-n);
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
