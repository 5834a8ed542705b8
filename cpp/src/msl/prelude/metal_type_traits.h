// metalcall MSL prelude: the rest of metal_type_traits that public kernels use (MLX):
// the _v variable templates, is_convertible, is_arithmetic, bool_constant and the
// logical traits (with Apple's internal _disjunction/_conjunction spellings, MLX's atomic.h).
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

template <class T> struct remove_const { typedef T type; };
template <class T> struct remove_const<const T> { typedef T type; };
template <class T> using remove_const_t = typename remove_const<T>::type;
template <class T> struct remove_reference { typedef T type; };
template <class T> struct remove_reference<T&> { typedef T type; };
template <class T> struct remove_reference<T&&> { typedef T type; };
template <class T> using remove_reference_t = typename remove_reference<T>::type;
template <class T> struct remove_pointer { typedef T type; };
template <class T> struct remove_pointer<T*> { typedef T type; };
template <class T> struct remove_pointer<T* const> { typedef T type; };
template <class T> using remove_pointer_t = typename remove_pointer<T>::type;

// Types carry no address space on the translated backends.
template <class T> struct remove_addrspace { typedef T type; };
template <class T> using remove_addrspace_t = typename remove_addrspace<T>::type;

template <bool B> using bool_constant = integral_constant<bool, B>;
template <class... B> struct disjunction : false_type {};
template <class B1, class... Bn> struct disjunction<B1, Bn...> : conditional_t<bool(B1::value), B1, disjunction<Bn...>> {};
template <class... B> struct conjunction : true_type {};
template <class B1, class... Bn> struct conjunction<B1, Bn...> : conditional_t<bool(B1::value), conjunction<Bn...>, B1> {};
template <class B> struct negation : bool_constant<!bool(B::value)> {};
template <class... B> using _disjunction = disjunction<B...>;
template <class... B> using _conjunction = conjunction<B...>;

template <class A, class B> constexpr bool is_same_v = is_same<A, B>::value;
template <class T> constexpr bool is_integral_v = is_integral<T>::value;
template <class T> constexpr bool is_floating_point_v = is_floating_point<T>::value;
template <class T> constexpr bool is_arithmetic_v = is_arithmetic<T>::value;
template <class T> constexpr bool is_signed_v = is_signed<T>::value;
template <class T> constexpr bool is_unsigned_v = is_unsigned<T>::value;
template <class From, class To> constexpr bool is_convertible_v = is_convertible<From, To>::value;

}  // namespace metal
