// metalcall MSL prelude: the vector cases of <metal_type_traits>, as in MSL: a vector of an
// integer type is integral (is_integral<int4>), a vector of floats floating point, signed or
// unsigned as its components; is_vector, vec_elements (0 for a scalar) and make_scalar;
// make_signed / make_unsigned keep the vector. Packed vectors count as vectors.
#pragma once
#include "metal_vector.h"

namespace metal {

template <class T, int N, bool P> struct _is_integral_impl<mtl_vector<T, N, P>> : _is_integral_impl<T> {};
template <class T, int N, bool P> struct _is_floating_point_impl<mtl_vector<T, N, P>> : _is_floating_point_impl<T> {};
template <class T, int N, bool P> struct _is_signed_impl<mtl_vector<T, N, P>> : _is_signed_impl<T> {};
template <class T, int N, bool P> struct _is_unsigned_impl<mtl_vector<T, N, P>> : _is_unsigned_impl<T> {};
template <class T, int N, bool P> struct _is_vector_impl<mtl_vector<T, N, P>> : true_type {};
template <class T, int N, bool P> struct _vec_elements_impl<mtl_vector<T, N, P>> : integral_constant<size_t, N> {};
template <class T, int N, bool P> struct _make_scalar_impl<mtl_vector<T, N, P>> { typedef T type; };
template <class T, int N, bool P> struct _make_signed_impl<mtl_vector<T, N, P>> {
  typedef mtl_vector<typename _make_signed_impl<T>::type, N, P> type;
};
template <class T, int N, bool P> struct _make_unsigned_impl<mtl_vector<T, N, P>> {
  typedef mtl_vector<typename _make_unsigned_impl<T>::type, N, P> type;
};

}  // namespace metal
