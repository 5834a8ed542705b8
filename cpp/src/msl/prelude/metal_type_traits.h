// metalcall MSL prelude: the rest of metal_type_traits that public kernels use (MLX):
// the _v variable templates, is_convertible and is_arithmetic.
#pragma once

namespace metal {

template <class T> T&& mtl_declval();
namespace mtl_detail {
template <class To> void accept_conversion(To);
template <class From, class To, class = void> struct convertible : false_type {};
template <class From, class To>
struct convertible<From, To, decltype(accept_conversion<To>(mtl_declval<From>()))> : true_type {};
}  // namespace mtl_detail

template <class From, class To> struct is_convertible : mtl_detail::convertible<From, To> {};
template <class T>
struct is_arithmetic : integral_constant<bool, is_integral<T>::value || is_floating_point<T>::value> {};

template <class A, class B> constexpr bool is_same_v = is_same<A, B>::value;
template <class T> constexpr bool is_integral_v = is_integral<T>::value;
template <class T> constexpr bool is_floating_point_v = is_floating_point<T>::value;
template <class T> constexpr bool is_arithmetic_v = is_arithmetic<T>::value;
template <class T> constexpr bool is_signed_v = is_signed<T>::value;
template <class T> constexpr bool is_unsigned_v = is_unsigned<T>::value;
template <class From, class To> constexpr bool is_convertible_v = is_convertible<From, To>::value;

}  // namespace metal
