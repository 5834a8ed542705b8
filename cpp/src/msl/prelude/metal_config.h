// metalcall MSL prelude: function marker, fixed-width integers and the few type
// traits the prelude needs. No system headers: NVRTC has none, and the host
// compile must stay fast.
#pragma once

#if defined(__CUDACC__)
#define METAL_FUNC __device__ inline
#define METAL_CUDA 1
#else
#define METAL_FUNC inline
#define METAL_CUDA 0
#endif

// clang's __builtin_assume, which Metal's compiler takes (msl_rules allows it): g++ has
// none; like clang, the argument is not evaluated.
#if !defined(__CUDACC__) && !defined(__clang__) && !defined(__builtin_assume)
#define __builtin_assume(...) ((void)0)
#endif

// GNU's __extension__ (ggml-common.h marks its anonymous unions with it) only silences
// pedantic warnings; g++ and clang know it, NVRTC does not, so under NVRTC it is dropped.
#if defined(__CUDACC_RTC__) && !defined(__extension__)
#define __extension__
#endif

// A constexpr bit cast: g++, clang++ and NVRTC 12.9 / 13 have __builtin_bit_cast; without
// it CUDA builds float and bfloat bits through its run-time intrinsics.
#if defined(__has_builtin)
#if __has_builtin(__builtin_bit_cast)
#define METAL_HAS_BIT_CAST 1
#endif
#endif
#if !defined(METAL_HAS_BIT_CAST)
#define METAL_HAS_BIT_CAST 0
#endif

// Fixed-width integers, size_t and ptrdiff_t at global scope (MSL has them
// unqualified). On the host the compiler's own type macros are used, so a later
// <stdint.h>/<stddef.h> declares the very same typedefs (redeclaring a typedef to
// the same type is legal). A driver whose NVRTC setup already declares them
// defines METALCALL_HAVE_STDINT to skip this block.
#if !defined(METALCALL_HAVE_STDINT)
#if defined(__INT64_TYPE__) && defined(__SIZE_TYPE__) && defined(__PTRDIFF_TYPE__)
typedef __INT8_TYPE__ int8_t;
typedef __INT16_TYPE__ int16_t;
typedef __INT32_TYPE__ int32_t;
typedef __INT64_TYPE__ int64_t;
typedef __UINT8_TYPE__ uint8_t;
typedef __UINT16_TYPE__ uint16_t;
typedef __UINT32_TYPE__ uint32_t;
typedef __UINT64_TYPE__ uint64_t;
typedef __SIZE_TYPE__ size_t;
typedef __PTRDIFF_TYPE__ ptrdiff_t;
#else  // NVRTC without the GNU type macros: the LP64 choices of CUDA's headers
typedef signed char int8_t;
typedef short int16_t;
typedef int int32_t;
typedef long long int64_t;
typedef unsigned char uint8_t;
typedef unsigned short uint16_t;
typedef unsigned int uint32_t;
typedef unsigned long long uint64_t;
typedef unsigned long size_t;
typedef long ptrdiff_t;
#endif
#endif

namespace metal {
using ::int8_t;
using ::int16_t;
using ::int32_t;
using ::int64_t;
using ::uint8_t;
using ::uint16_t;
using ::uint32_t;
using ::uint64_t;
using ::size_t;
using ::ptrdiff_t;

// MSL's metal_type_traits offers std-like traits; these are the ones kernels
// actually use. Internal helpers live in mtl_detail.
template <bool B, class T = void> struct enable_if {};
template <class T> struct enable_if<true, T> { typedef T type; };
template <bool B, class T = void> using enable_if_t = typename enable_if<B, T>::type;

template <bool B, class T, class F> struct conditional { typedef T type; };
template <class T, class F> struct conditional<false, T, F> { typedef F type; };
template <bool B, class T, class F> using conditional_t = typename conditional<B, T, F>::type;

template <class T, T V> struct integral_constant {
  static constexpr T value = V;
};
typedef integral_constant<bool, true> true_type;
typedef integral_constant<bool, false> false_type;

template <class A, class B> struct is_same : false_type {};
template <class A> struct is_same<A, A> : true_type {};

template <class T> struct remove_cv { typedef T type; };
template <class T> struct remove_cv<const T> { typedef T type; };
template <class T> struct remove_cv<volatile T> { typedef T type; };
template <class T> struct remove_cv<const volatile T> { typedef T type; };
template <class T> using remove_cv_t = typename remove_cv<T>::type;

// MSL's integer types, bool excluded: what the integer functions (abs, clz, min ...) and
// numeric_limits take.
namespace mtl_detail {
template <class T> struct is_int : false_type {};
template <> struct is_int<char> : true_type {};
template <> struct is_int<signed char> : true_type {};
template <> struct is_int<unsigned char> : true_type {};
template <> struct is_int<short> : true_type {};
template <> struct is_int<unsigned short> : true_type {};
template <> struct is_int<int> : true_type {};
template <> struct is_int<unsigned int> : true_type {};
template <> struct is_int<long> : true_type {};
template <> struct is_int<unsigned long> : true_type {};
template <> struct is_int<long long> : true_type {};
template <> struct is_int<unsigned long long> : true_type {};
}  // namespace mtl_detail
namespace mtl_detail {
// The scalars the prelude's own overloads take (never vectors): integers and bool, and the
// floating types (float; half and bfloat where they are defined; not the double extension).
template <class T> struct is_int_or_bool : is_int<T> {};
template <> struct is_int_or_bool<bool> : true_type {};
template <class T> struct is_float : false_type {};
template <> struct is_float<float> : true_type {};
template <class T, bool = is_int<T>::value> struct signed_int : integral_constant<bool, (T(-1) < T(0))> {};
template <class T> struct signed_int<T, false> : false_type {};
}  // namespace mtl_detail

// MSL's <metal_type_traits>, shaped as Apple's: the public trait applies remove_cv and asks
// an _impl that production code may specialise; metal_vector_traits.h adds the vectors
// (is_integral<int4> is true, as in MSL). is_integral includes bool, as in C++.
template <class T> struct _is_integral_impl : mtl_detail::is_int_or_bool<T> {};
template <class T> struct is_integral : _is_integral_impl<remove_cv_t<T>> {};
template <class T> struct _is_floating_point_impl : mtl_detail::is_float<T> {};
template <class T> struct is_floating_point : _is_floating_point_impl<remove_cv_t<T>> {};
// Signed: the signed integers and the floating types; unsigned: the unsigned integers and bool.
template <class T>
struct _is_signed_impl
    : integral_constant<bool, mtl_detail::signed_int<T>::value || mtl_detail::is_float<T>::value> {};
template <class T> struct is_signed : _is_signed_impl<remove_cv_t<T>> {};
template <class T>
struct _is_unsigned_impl
    : integral_constant<bool, (mtl_detail::is_int_or_bool<T>::value && !mtl_detail::signed_int<T>::value)> {};
template <class T> struct is_unsigned : _is_unsigned_impl<remove_cv_t<T>> {};

template <class T> struct _make_unsigned_impl {};
template <> struct _make_unsigned_impl<char> { typedef unsigned char type; };
template <> struct _make_unsigned_impl<signed char> { typedef unsigned char type; };
template <> struct _make_unsigned_impl<unsigned char> { typedef unsigned char type; };
template <> struct _make_unsigned_impl<short> { typedef unsigned short type; };
template <> struct _make_unsigned_impl<unsigned short> { typedef unsigned short type; };
template <> struct _make_unsigned_impl<int> { typedef unsigned int type; };
template <> struct _make_unsigned_impl<unsigned int> { typedef unsigned int type; };
template <> struct _make_unsigned_impl<long> { typedef unsigned long type; };
template <> struct _make_unsigned_impl<unsigned long> { typedef unsigned long type; };
template <> struct _make_unsigned_impl<long long> { typedef unsigned long long type; };
template <> struct _make_unsigned_impl<unsigned long long> { typedef unsigned long long type; };
template <class T> struct make_unsigned : _make_unsigned_impl<remove_cv_t<T>> {};
template <class T> using make_unsigned_t = typename make_unsigned<T>::type;

template <class T> struct _make_signed_impl {};
template <> struct _make_signed_impl<char> { typedef signed char type; };
template <> struct _make_signed_impl<signed char> { typedef signed char type; };
template <> struct _make_signed_impl<unsigned char> { typedef signed char type; };
template <> struct _make_signed_impl<short> { typedef short type; };
template <> struct _make_signed_impl<unsigned short> { typedef short type; };
template <> struct _make_signed_impl<int> { typedef int type; };
template <> struct _make_signed_impl<unsigned int> { typedef int type; };
template <> struct _make_signed_impl<long> { typedef long type; };
template <> struct _make_signed_impl<unsigned long> { typedef long type; };
template <> struct _make_signed_impl<long long> { typedef long long type; };
template <> struct _make_signed_impl<unsigned long long> { typedef long long type; };
template <class T> struct make_signed : _make_signed_impl<remove_cv_t<T>> {};
template <class T> using make_signed_t = typename make_signed<T>::type;

namespace mtl_detail {
// A scalar that may be mixed with a vector or used as a component: MSL's scalar
// types plus double (unsuffixed literals like 0.5 appear in kernels).
template <class T> struct is_scalar
    : integral_constant<bool, is_int_or_bool<T>::value || is_float<T>::value> {};
template <> struct is_scalar<bool> : true_type {};
template <> struct is_scalar<double> : true_type {};

template <int... I> struct int_seq {};
template <int N> struct make_seq;
template <> struct make_seq<1> { typedef int_seq<0> type; };
template <> struct make_seq<2> { typedef int_seq<0, 1> type; };
template <> struct make_seq<3> { typedef int_seq<0, 1, 2> type; };
template <> struct make_seq<4> { typedef int_seq<0, 1, 2, 3> type; };
}  // namespace mtl_detail
}  // namespace metal

// Checked mode (metal_checked.h): arrays, vectors and matrices check their index
// too. The fault handler is defined there; these templates only need it declared.
#if defined(METALCALL_CHECKED) && !METAL_CUDA
namespace metal {
namespace mtl_rt {
inline void fault(const char* what, long long index, unsigned long long count, unsigned long long element_size);
template <class T> inline T& scratch();
// Element i of `data` (n elements), or a scratch element after recording the fault.
template <class T> METAL_FUNC T& checked_element(T* data, long long i, unsigned long long n, const char* what) {
  if (i < 0 || (unsigned long long)i >= n) {
    fault(what, i, n, sizeof(T));
    return scratch<T>();
  }
  return data[i];
}
}  // namespace mtl_rt
template <class T> struct mtl_checked;
namespace mtl_rt {
// A checked pointer over `data` (n elements): what metal::array's data(), begin() and end() give
// (before 2026-12-03 plain pointers, and `a.data()[k]` was unchecked).
template <class T> METAL_FUNC mtl_checked<T> checked_range(T* data, unsigned long long n, const char* what);
}  // namespace mtl_rt
}  // namespace metal
#define METAL_CHECKED_ELEMENT(DATA, I, N, WHAT) ::metal::mtl_rt::checked_element(DATA, (long long)(I), N, WHAT)
#define METAL_RANGE_POINTER(T) ::metal::mtl_checked<T>
#define METAL_CHECKED_RANGE(DATA, N, WHAT) ::metal::mtl_rt::checked_range(DATA, N, WHAT)
#else
#define METAL_CHECKED_ELEMENT(DATA, I, N, WHAT) (DATA)[I]
#define METAL_RANGE_POINTER(T) T*
#define METAL_CHECKED_RANGE(DATA, N, WHAT) (DATA)
#endif
