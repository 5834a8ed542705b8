// metalcall MSL prelude: the rest of <metal_type_traits> (metal_config.h has the traits the
// prelude itself needs first): the _v variable templates, is_convertible, is_arithmetic,
// is_scalar, is_class, is_enum, is_const, underlying_type, bool_constant and the logical
// traits, with the _impl templates of Apple's header that production code specialises
// (_disjunction/_conjunction: MLX's atomic.h). The vector traits (is_vector, vec_elements,
// make_scalar) have their primaries here and their vector cases in metal_vector_traits.h.
#pragma once

namespace metal {

// Declared only, for unevaluated operands; device functions under CUDA, where NVRTC refuses
// host functions unless -default-device is given (the backend gives it; the umbrella check of
// cpp/tests/prelude/nvrtc_check.py does not).
#if METAL_CUDA
#define METAL_UNEVALUATED __device__
#else
#define METAL_UNEVALUATED
#endif
template <class T> METAL_UNEVALUATED T&& mtl_declval();
namespace mtl_detail {
template <class To> METAL_UNEVALUATED void accept_conversion(To);
template <class From, class To, class = void> struct convertible : false_type {};
template <class From, class To>
struct convertible<From, To, decltype(accept_conversion<To>(mtl_declval<From>()))> : true_type {};
}  // namespace mtl_detail

#undef METAL_UNEVALUATED

template <class From, class To> struct is_convertible : mtl_detail::convertible<From, To> {};
template <class T> struct _is_arithmetic_impl : integral_constant<bool, is_integral<T>::value || is_floating_point<T>::value> {};
template <class T> struct is_arithmetic : _is_arithmetic_impl<remove_cv_t<T>> {};

// Scalars as C++ counts them: MSL's arithmetic types, enumerations and pointers (not vectors).
template <class T>
struct _is_scalar_impl
    : integral_constant<bool, mtl_detail::is_int_or_bool<T>::value || mtl_detail::is_float<T>::value || __is_enum(T)> {};
template <> struct _is_scalar_impl<double> : true_type {};
template <> struct _is_scalar_impl<decltype(nullptr)> : true_type {};
template <class T> struct _is_scalar_impl<T*> : true_type {};
template <class T> struct is_scalar : _is_scalar_impl<remove_cv_t<T>> {};

// Vectors: metal_vector_traits.h gives the vector types' cases.
template <class T> struct _is_vector_impl : false_type {};
template <class T> struct is_vector : _is_vector_impl<remove_cv_t<T>> {};
template <class T> struct _vec_elements_impl : integral_constant<size_t, 0> {};  // 0: not a vector
template <class T> struct vec_elements : _vec_elements_impl<remove_cv_t<T>> {};
template <class T> struct _make_scalar_impl { typedef T type; };
template <class T> struct make_scalar : _make_scalar_impl<remove_cv_t<T>> {};
template <class T> using make_scalar_t = typename make_scalar<T>::type;

template <class T> struct is_class : integral_constant<bool, __is_class(T)> {};
template <class T> struct is_enum : integral_constant<bool, __is_enum(T)> {};
template <class T> struct is_const : false_type {};
template <class T> struct is_const<const T> : true_type {};
template <class T> struct underlying_type { typedef __underlying_type(T) type; };
template <class T> using underlying_type_t = typename underlying_type<T>::type;

template <class T> struct remove_const { typedef T type; };
template <class T> struct remove_const<const T> { typedef T type; };
template <class T> using remove_const_t = typename remove_const<T>::type;
template <class T> struct remove_volatile { typedef T type; };
template <class T> struct remove_volatile<volatile T> { typedef T type; };
template <class T> using remove_volatile_t = typename remove_volatile<T>::type;
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
template <class... B> constexpr bool disjunction_v = disjunction<B...>::value;
template <class... B> constexpr bool conjunction_v = conjunction<B...>::value;
template <class B> constexpr bool negation_v = negation<B>::value;

template <class A, class B> constexpr bool is_same_v = is_same<A, B>::value;
template <class T> constexpr bool is_integral_v = is_integral<T>::value;
template <class T> constexpr bool is_floating_point_v = is_floating_point<T>::value;
template <class T> constexpr bool is_arithmetic_v = is_arithmetic<T>::value;
template <class T> constexpr bool is_signed_v = is_signed<T>::value;
template <class T> constexpr bool is_unsigned_v = is_unsigned<T>::value;
template <class From, class To> constexpr bool is_convertible_v = is_convertible<From, To>::value;
template <class T> constexpr bool is_scalar_v = is_scalar<T>::value;
template <class T> constexpr bool is_vector_v = is_vector<T>::value;
template <class T> constexpr bool is_class_v = is_class<T>::value;
template <class T> constexpr bool is_enum_v = is_enum<T>::value;
template <class T> constexpr bool is_const_v = is_const<T>::value;

}  // namespace metal
