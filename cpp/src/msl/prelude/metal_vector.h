// metalcall MSL prelude: the vector template behind every MSL vector type.
//
// One class template, mtl_vector<T, N, Packed>, with storage specialised for
// N = 2, 3, 4. MSL spells it vec<T, N> and packed_vec<T, N>; the translator
// spells float4 as mtl_float4 (metal_types.h). Swizzles arrive from the
// translator as member template calls:
//   read  v.zyx      -> v.template mtl_swizzle<2, 1, 0>()
//   write v.xy = a   -> v.template mtl_swizzle_ref<0, 1>() = a
#pragma once
#include "metal_half.h"
#include "metal_division.h"
#include "metal_conversion.h"
#include "metal_negation.h"  // small_result, narrow_arg: char and short components in 32 bits on CUDA

// std::initializer_list, for braced vector initializers (`uint4 k = {a, b, c}`): the host
// compiler's header on the CPU; NVRTC has it built in where it defines
// __NV_BUILTIN_INITIALIZER_LIST (NVRTC 13), and has no standard headers, so otherwise the CUDA
// prelude declares it with libstdc++'s layout (a pointer and a length).
#if METAL_CUDA && defined(__NV_BUILTIN_INITIALIZER_LIST)
#elif METAL_CUDA
namespace std {
template <class E> class initializer_list {
  const E* mtl_array;
  unsigned long mtl_len;
  constexpr initializer_list(const E* a, unsigned long n) : mtl_array(a), mtl_len(n) {}

 public:
  constexpr initializer_list() : mtl_array(nullptr), mtl_len(0) {}
  constexpr unsigned long size() const { return mtl_len; }
  constexpr const E* begin() const { return mtl_array; }
  constexpr const E* end() const { return mtl_array + mtl_len; }
};
}  // namespace std
#else
#include <initializer_list>
#endif

namespace metal {

// MSL's own name for it (SPIRV-Cross's `operator=(initializer_list<vec<T, Rows>> cols)`).
using std::initializer_list;

template <class T, int N, bool Packed> struct mtl_vector;
template <class T, int N> using vec = mtl_vector<T, N, false>;
template <class T, int N> using packed_vec = mtl_vector<T, N, true>;

namespace mtl_detail {

// MSL layout: a 3-vector is sized and aligned like a 4-vector; packed vectors
// are tight with the alignment of their component.
template <class T, int N, bool Packed> struct vec_align {
  static constexpr int value = Packed ? int(alignof(T)) : int(sizeof(T)) * (N == 3 ? 4 : N);
};

// One anonymous union per component, so .x and .r name the same element
// (standard C++, unlike anonymous structs).
//
// On the CPU with clang the alignment comes from a zero-length member, not from
// alignas on the struct: the layout is the same, but clang then counts it as the
// type's natural alignment, which -fmax-type-align=8 (cpu_compiler.cpp) caps for
// accesses through pointers. MSL code casts 4-byte-aligned pointers to float4*
// (ggml's kernel_mul_mm) and Metal accepts it; an assumed 16 gives aligned moves
// (vmovaps) that fault on x86-64. Unaligned moves cost the same on aligned data.
#if defined(__clang__) && !METAL_CUDA
#define METAL_VEC_STORAGE(N) vec_storage
#define METAL_VEC_ALIGN_MEMBER(N) alignas(vec_align<T, N, P>::value) char mtl_align_[0];
#define METAL_VEC_ALIGN_INIT , {}  // the member's (empty) initializer: -Wmissing-field-initializers
#else
#define METAL_VEC_STORAGE(N) alignas(vec_align<T, N, P>::value) vec_storage
#define METAL_VEC_ALIGN_MEMBER(N)
#define METAL_VEC_ALIGN_INIT
#endif
template <class T, int N, bool P> struct vec_storage;
template <class T, bool P> struct METAL_VEC_STORAGE(2)<T, 2, P> {
  union { T x; T r; };
  union { T y; T g; };
  METAL_VEC_ALIGN_MEMBER(2)
};
template <class T, bool P> struct METAL_VEC_STORAGE(3)<T, 3, P> {
  union { T x; T r; };
  union { T y; T g; };
  union { T z; T b; };
  METAL_VEC_ALIGN_MEMBER(3)
};
template <class T, bool P> struct METAL_VEC_STORAGE(4)<T, 4, P> {
  union { T x; T r; };
  union { T y; T g; };
  union { T z; T b; };
  union { T w; T a; };
  METAL_VEC_ALIGN_MEMBER(4)
};
#undef METAL_VEC_STORAGE
#undef METAL_VEC_ALIGN_MEMBER

// Value conversion between component types. CUDA's __half converts cleanly
// only to and from float, so it goes through float there.
// A char or short component from an int or wider passes metal_negation.h's narrow_arg, so
// NVVM cannot narrow the arithmetic before it (`short3(x * -1)`: a neg.s16).
// A 32- or 64-bit integer component from a floating one passes metal_conversion.h's int_arg:
// NaN 0, out of range saturated, as MSL's GPUs convert (on CUDA only the NaNs NVRTC does not zero).
template <class To, class From> struct convert_impl {
  static METAL_FUNC constexpr To apply(const From& x) {
    if constexpr (is_int<To>::value && sizeof(To) < 4) return static_cast<To>(::metal::mtl_rt::narrow_arg(x));
    else if constexpr (is_int<To>::value) return static_cast<To>(::metal::mtl_rt::int_arg<To>(x));
    else return static_cast<To>(x);
  }
};
template <class T> struct convert_impl<T, T> {
  static METAL_FUNC constexpr T apply(const T& x) { return x; }
};
#if METAL_CUDA && METAL_HAS_BIT_CAST
// constexpr, so that a program-scope constant of half vectors (TNN's `constant half4 Zero4 =
// half4(0, 0, 0, 0)`) is initialised statically, as a __device__ variable must be; the same
// conversions as at run time (metal_half_cuda.h).
template <class To> struct convert_impl<To, __half> {
  static METAL_FUNC constexpr To apply(const __half& x) {
    if (__builtin_is_constant_evaluated()) return static_cast<To>(::metal::mtl_rt::half_value(x));
    return static_cast<To>(__half2float(x));
  }
};
template <class From> struct convert_impl<__half, From> {
  static METAL_FUNC constexpr __half apply(const From& x) { return ::metal::mtl_rt::half_lit(static_cast<float>(x)); }
};
template <> struct convert_impl<__half, __half> {
  static METAL_FUNC constexpr __half apply(const __half& x) { return x; }
};
#elif METAL_CUDA
template <class To> struct convert_impl<To, __half> {
  static METAL_FUNC To apply(const __half& x) { return static_cast<To>(__half2float(x)); }
};
template <class From> struct convert_impl<__half, From> {
  static METAL_FUNC __half apply(const From& x) { return __float2half_rn(static_cast<float>(x)); }
};
template <> struct convert_impl<__half, __half> {
  static METAL_FUNC __half apply(const __half& x) { return x; }
};
#endif
template <class To, class From> METAL_FUNC constexpr To convert(const From& x) {
  return convert_impl<To, From>::apply(x);
}

// What an argument contributes to a vector constructor: 1 component for a
// scalar, N for a vector, and a poison count for anything else.
template <class X> struct vec_info {
  static constexpr bool is_vec = false;
  static constexpr int size = is_scalar<X>::value ? 1 : -64;
  typedef X elem;
};
template <class T, int N, bool P> struct vec_info<mtl_vector<T, N, P>> {
  static constexpr bool is_vec = true;
  static constexpr int size = N;
  typedef T elem;
};
template <class... A> struct total_size { static constexpr int value = 0; };
template <class A, class... R> struct total_size<A, R...> {
  static constexpr int value = vec_info<A>::size + total_size<R...>::value;
};

// Component I of a vector, resolved at compile time.
template <int I, class T, int N, bool P> METAL_FUNC constexpr const T& elem(const mtl_vector<T, N, P>& v) {
  if constexpr (I == 0) return v.x;
  else if constexpr (I == 1) return v.y;
  else if constexpr (I == 2) return v.z;
  else return v.w;
}
template <int I, class T, int N, bool P> METAL_FUNC constexpr T& elem(mtl_vector<T, N, P>& v) {
  if constexpr (I == 0) return v.x;
  else if constexpr (I == 1) return v.y;
  else if constexpr (I == 2) return v.z;
  else return v.w;
}

// Component I of the concatenation of scalars and vectors (for float4(v.xy, 1, 2)).
template <int I, class X> METAL_FUNC constexpr const X& component(const X& s) { return s; }
template <int I, class T, int N, bool P> METAL_FUNC constexpr const T& component(const mtl_vector<T, N, P>& v) {
  return elem<I>(v);
}
template <int I, class X, class... R> METAL_FUNC constexpr auto pick(const X& x, const R&... r) {
  if constexpr (I < vec_info<X>::size) return component<I>(x);
  else return pick<I - vec_info<X>::size>(r...);
}

struct flatten_tag {};
struct broadcast_tag {};
struct list_tag {};
// The element type of a braced list: the component type; float for half and bfloat on CUDA,
// whose NVRTC (13.0) crashes on an initializer_list of a class type (__half, mtl_bfloat).
template <class T> struct list_element { typedef T type; };
#if METAL_CUDA
template <> struct list_element<mtl_half> { typedef float type; };
template <> struct list_element<mtl_bfloat> { typedef float type; };
#endif
struct elems_tag {};  // N components, already of type T

template <int N, int... I> METAL_FUNC constexpr bool indices_below() {
  const int idx[] = {I...};
  for (int i : idx)
    if (i < 0 || i >= N) return false;
  return true;
}
template <int... I> METAL_FUNC constexpr bool indices_distinct() {
  const int idx[] = {I...};
  for (unsigned i = 0; i < sizeof...(I); ++i)
    for (unsigned j = i + 1; j < sizeof...(I); ++j)
      if (idx[i] == idx[j]) return false;
  return true;
}

// A component read or written through a volatile pointer as an integer of its size: half,
// bfloat and __half have no volatile assignment of their own.
template <class T> struct volatile_bits {
  typedef conditional_t<sizeof(T) == 1, unsigned char,
                        conditional_t<sizeof(T) == 2, unsigned short,
                                      conditional_t<sizeof(T) == 4, unsigned int, unsigned long long>>>
      __attribute__((__may_alias__)) Bits;
  static METAL_FUNC void mtl_store(volatile T* p, const T& v) {
    *reinterpret_cast<volatile Bits*>(p) = *reinterpret_cast<const Bits*>(&v);
  }
  static METAL_FUNC T mtl_load(const volatile T* p) {
    const Bits b = *reinterpret_cast<const volatile Bits*>(p);
    return *reinterpret_cast<const T*>(&b);
  }
};
template <class V, int... I> struct swizzle_ref;
template <int Code, int... I> struct swizzle_code;
}  // namespace mtl_detail

template <class T, int N, bool Packed>
struct mtl_vector : mtl_detail::vec_storage<T, N, Packed> {
  typedef T value_type;
  typedef mtl_detail::vec_storage<T, N, Packed> storage;
  typedef typename mtl_detail::make_seq<N>::type seq;

  // Trivial, so vectors can live in __shared__/threadgroup memory; T() zeroes.
  mtl_vector() = default;
#if METAL_CUDA
  // Component-wise assignment: NVRTC 13 lost the low byte of every __half when
  // assigning a temporary half3 (from cross()) to device memory through the
  // implicit (union) copy. Copies of other types are unchanged in effect.
  // A vector of 32-bit components is read whole, through the trivial copy (one 8- or
  // 16-byte load, as `r = *(device const uint4*)p` in a GEMM's tile copies needs). Two or
  // four 16-bit components (no padding) move as one 4- or 8-byte integer: one store, not
  // one a component (a half4 result written to device memory).
  mtl_vector(const mtl_vector&) = default;
  METAL_FUNC mtl_vector& operator=(const mtl_vector& o) {
    if constexpr (!Packed && sizeof(T) == 2 && (N == 2 || N == 4)) {
      // may_alias: the integer access may touch the vector's components (no type-based
      // reordering against them).
      typedef conditional_t<N == 2, unsigned int, unsigned long long> __attribute__((__may_alias__)) Bits;
      *reinterpret_cast<Bits*>(this) = *reinterpret_cast<const Bits*>(&o);
    } else if constexpr (!Packed && sizeof(T) == 4 && N == 4) {
      // Through CUDA's own 16-byte vector of the same component type: one 16-byte store, where
      // one a component left NVVM four stores it did not merge (a float4 written to device memory).
      typedef conditional_t<is_same<T, float>::value, ::float4, conditional_t<is_signed<T>::value, ::int4, ::uint4>> Native;
      const mtl_vector whole(o);
      Native v;
      v.x = whole[0];
      v.y = whole[1];
      v.z = whole[2];
      v.w = whole[3];
      *reinterpret_cast<Native*>(this) = v;
    } else if constexpr (!Packed && sizeof(T) == 4) {
      const mtl_vector whole(o);
#pragma unroll
      for (int i = 0; i < N; ++i) (*this)[i] = whole[i];
    } else {
#pragma unroll
      for (int i = 0; i < N; ++i) (*this)[i] = o[i];
    }
    return *this;
  }
#endif

  // Through a volatile lvalue (SPIRV-Cross writes coherent buffers `volatile device S&`): the
  // components' bytes one by one. Templates, so that the vector stays trivially copyable (no
  // template is a copy constructor or a copy assignment), of this very vector type: a volatile
  // member is viable on any object, and one taking what converts would make `packed = vec` and
  // `v = 1.0f` ambiguous.
  template <class V, enable_if_t<is_same<V, mtl_vector>::value, int> = 0>
  METAL_FUNC void operator=(const V& v) volatile {
    for (int i = 0; i < N; ++i) mtl_detail::volatile_bits<T>::mtl_store(reinterpret_cast<volatile T*>(this) + i, v[i]);
  }
  template <class V, enable_if_t<is_same<V, mtl_vector>::value, int> = 0>
  METAL_FUNC mtl_vector& operator=(const volatile V& o) {
    return *this = mtl_vector(o);
  }
  template <class V, enable_if_t<is_same<V, mtl_vector>::value, int> = 0>
  METAL_FUNC mtl_vector(const volatile V& o) : mtl_vector() {
    for (int i = 0; i < N; ++i) (*this)[i] = mtl_detail::volatile_bits<T>::mtl_load(reinterpret_cast<const volatile T*>(&o) + i);
  }
  METAL_FUNC T operator[](int i) const volatile {
    const T* c = const_cast<const T*>(reinterpret_cast<const volatile T*>(this));
    return mtl_detail::volatile_bits<T>::mtl_load(&METAL_CHECKED_ELEMENT(c, i, N, "vector component"));
  }

  // float4(x): broadcast.
  template <class U, enable_if_t<mtl_detail::is_scalar<U>::value, int> = 0>
  METAL_FUNC constexpr mtl_vector(const U& s)
      : mtl_vector(mtl_detail::broadcast_tag{}, seq{}, mtl_detail::convert<T>(s)) {}

  // float4(a, b, c, d), float4(v.xy, 1, 2), float3(v2, 0): components in order.
  // Two named parameters: a pack-only template would count as a (non-trivial)
  // default constructor.
  template <class A0, class A1, class... A,
            enable_if_t<mtl_detail::total_size<A0, A1, A...>::value == N, int> = 0>
  METAL_FUNC constexpr mtl_vector(const A0& a0, const A1& a1, const A&... a)
      : mtl_vector(mtl_detail::flatten_tag{}, seq{}, a0, a1, a...) {}

  // uint4 k = {a, b, c}: a braced list sets the components in order and zeroes the rest, as
  // clang's vectors (the MSL compiler's) do; its elements are scalars of the component type
  // (C++'s narrowing rules apply), and `{x}` sets only .x (float4(x) broadcasts). A list
  // longer than the vector is an error in MSL; here its extra elements are not read.
  METAL_FUNC constexpr mtl_vector(std::initializer_list<typename mtl_detail::list_element<T>::type> list)
      : mtl_vector(mtl_detail::list_tag{}, seq{}, list.begin(), list.size()) {}

  // packed <-> aligned with the same component type: implicit, as in MSL.
  template <bool Q, enable_if_t<Q != Packed, int> = 0>
  METAL_FUNC constexpr mtl_vector(const mtl_vector<T, N, Q>& o)
      : mtl_vector(mtl_detail::flatten_tag{}, seq{}, o) {}

  // float3(int3): MSL requires the conversion to be explicit.
  template <class U, bool Q, enable_if_t<!is_same<U, T>::value, int> = 0>
  METAL_FUNC constexpr explicit mtl_vector(const mtl_vector<U, N, Q>& o)
      : mtl_vector(mtl_detail::flatten_tag{}, seq{}, o) {}

  template <class C0, class... C>
  METAL_FUNC constexpr mtl_vector(mtl_detail::elems_tag, const C0& c0, const C&... c) : storage{{c0}, {c}... METAL_VEC_ALIGN_INIT} {}

  // v[i]; the components are contiguous and the object is standard-layout.
  METAL_FUNC T& operator[](int i) { return METAL_CHECKED_ELEMENT(reinterpret_cast<T*>(this), i, N, "vector component"); }
  METAL_FUNC const T& operator[](int i) const {
    return METAL_CHECKED_ELEMENT(reinterpret_cast<const T*>(this), i, N, "vector component");
  }

  template <int... I> METAL_FUNC constexpr vec<T, sizeof...(I)> mtl_swizzle() const {
    static_assert(sizeof...(I) >= 2 && sizeof...(I) <= 4, "a swizzle has 2 to 4 components");
    static_assert(mtl_detail::indices_below<N, I...>(), "swizzle component beyond the vector's length");
    return vec<T, sizeof...(I)>(mtl_detail::elems_tag{}, mtl_detail::elem<I>(*this)...);
  }
  template <int... I> METAL_FUNC mtl_detail::swizzle_ref<mtl_vector, I...> mtl_swizzle_ref() {
    static_assert(sizeof...(I) >= 2 && sizeof...(I) <= 4, "a swizzle has 2 to 4 components");
    static_assert(mtl_detail::indices_below<N, I...>(), "swizzle component beyond the vector's length");
    static_assert(mtl_detail::indices_distinct<I...>(), "a swizzle that is assigned to names a component twice");
    return mtl_detail::swizzle_ref<mtl_vector, I...>(*this);
  }
  // The same swizzles without commas, for use inside macro arguments: the
  // digits after a leading 1 (2 for rgba) are the indices (v.zyx -> mtl_swz<1210>()).
  template <int Code> METAL_FUNC constexpr auto mtl_swz() const {
    return mtl_detail::swizzle_code<Code>::read(*this);
  }
  template <int Code> METAL_FUNC auto mtl_swz_ref() { return mtl_detail::swizzle_code<Code>::write(*this); }

 private:
  template <int... I>
  METAL_FUNC constexpr mtl_vector(mtl_detail::broadcast_tag, mtl_detail::int_seq<I...>, const T& s)
      : storage{{((void)I, s)}... METAL_VEC_ALIGN_INIT} {}
  template <int... I, class... A>
  METAL_FUNC constexpr mtl_vector(mtl_detail::flatten_tag, mtl_detail::int_seq<I...>, const A&... a)
      : storage{{mtl_detail::convert<T>(mtl_detail::pick<I>(a...))}... METAL_VEC_ALIGN_INIT} {}
  template <int... I, class E>
  METAL_FUNC constexpr mtl_vector(mtl_detail::list_tag, mtl_detail::int_seq<I...>, const E* items, unsigned long n)
      : storage{{mtl_detail::convert<T>((unsigned long)I < n ? items[I] : E(0))}... METAL_VEC_ALIGN_INIT} {}
};

namespace mtl_detail {

// `.x` … `.a` of a swizzle being written (`v.zy.x = 1` sets v.z): the vector's components.
template <class T, int K> struct swizzle_lanes;
template <class T> struct swizzle_lanes<T, 2> { T &x, &y, &r, &g; };
template <class T> struct swizzle_lanes<T, 3> { T &x, &y, &z, &r, &g, &b; };
template <class T> struct swizzle_lanes<T, 4> { T &x, &y, &z, &w, &r, &g, &b, &a; };
template <int J, int... I> METAL_FUNC constexpr int nth_index() {
  constexpr int idx[] = {I...};
  return idx[J];
}

// What mtl_swizzle_ref returns: writes go back into the named components.
template <class V, int... I> struct swizzle_ref : swizzle_lanes<typename V::value_type, sizeof...(I)> {
  typedef vec<typename V::value_type, sizeof...(I)> value_type;
  typedef swizzle_lanes<typename V::value_type, sizeof...(I)> lanes;
  V& v;

  METAL_FUNC explicit swizzle_ref(V& target)
      : lanes{elem<I>(target)..., elem<I>(target)...}, v(target) {}
  swizzle_ref(const swizzle_ref&) = default;

  METAL_FUNC value_type get() const { return v.template mtl_swizzle<I...>(); }
  METAL_FUNC operator value_type() const { return get(); }

  // value_type accepts the same-length vector, its packed form and a scalar
  // (broadcast). Taken by value: `v.ywxz = v` must read v before writing it.
  METAL_FUNC swizzle_ref& operator=(value_type s) {
    store(s, typename make_seq<sizeof...(I)>::type{});
    return *this;
  }
  METAL_FUNC swizzle_ref& operator=(const swizzle_ref& o) { return *this = o.get(); }

  // A scalar goes through the vector's own operator, which refuses a floating one for an
  // integer vector as Metal does (`k.xy *= 0.5f` computed `k.xy * 0` before 2026-12-05).
#define METAL_SWIZZLE_COMPOUND(OP)                                                              \
  METAL_FUNC swizzle_ref& operator OP##=(const value_type& s) { return *this = get() OP s; }   \
  template <class X, enable_if_t<is_scalar<X>::value, int> = 0>                                 \
  METAL_FUNC swizzle_ref& operator OP##=(const X& s) { return *this = get() OP s; }
  METAL_SWIZZLE_COMPOUND(+)
  METAL_SWIZZLE_COMPOUND(-)
  METAL_SWIZZLE_COMPOUND(*)
  METAL_SWIZZLE_COMPOUND(/)
  METAL_SWIZZLE_COMPOUND(%)
  METAL_SWIZZLE_COMPOUND(&)
  METAL_SWIZZLE_COMPOUND(|)
  METAL_SWIZZLE_COMPOUND(^)
  METAL_SWIZZLE_COMPOUND(<<)
  METAL_SWIZZLE_COMPOUND(>>)
#undef METAL_SWIZZLE_COMPOUND
  // v.xy++, --v.zw: as clang's vectors (Metal's) allow; the value is the old or the new one.
  METAL_FUNC swizzle_ref& operator++() { return *this += value_type(1); }
  METAL_FUNC swizzle_ref& operator--() { return *this -= value_type(1); }
  METAL_FUNC const value_type operator++(int) {  // const: `v.xy++ = a` is no lvalue
    const value_type old = get();
    *this += value_type(1);
    return old;
  }
  METAL_FUNC const value_type operator--(int) {
    const value_type old = get();
    *this -= value_type(1);
    return old;
  }

  // A swizzle or component of this swizzle, written (`v.zyx.xy = a` sets v.z and v.y,
  // `v.zy[k] = s`): the components it names of v.
  template <int... J> METAL_FUNC swizzle_ref<V, nth_index<J, I...>()...> mtl_swizzle_ref() {
    static_assert(indices_below<sizeof...(I), J...>(), "swizzle component beyond the vector's length");
    return v.template mtl_swizzle_ref<nth_index<J, I...>()...>();
  }
  template <int... J> METAL_FUNC constexpr vec<typename V::value_type, sizeof...(J)> mtl_swizzle() const {
    return get().template mtl_swizzle<J...>();
  }
  template <int Code> METAL_FUNC auto mtl_swz_ref() { return swizzle_code<Code>::write(*this); }
  template <int Code> METAL_FUNC constexpr auto mtl_swz() const { return swizzle_code<Code>::read(*this); }
  METAL_FUNC typename V::value_type& operator[](int k) {
    const int at[] = {I...};  // (checked mode: an index past them reads a zero)
    return v[METAL_CHECKED_ELEMENT(at, k, sizeof...(I), "vector component")];
  }

 private:
  template <int... K> METAL_FUNC void store(const value_type& s, int_seq<K...>) {
    ((elem<I>(v) = elem<K>(s)), ...);
  }
};

// Decodes mtl_swz<1210>() into mtl_swizzle<2, 1, 0>(), one digit at a time.
template <int Code, int... I> struct swizzle_code : swizzle_code<Code / 10, Code % 10, I...> {};
template <int... I> struct swizzle_code<1, I...> {
  template <class V> static METAL_FUNC constexpr auto read(const V& v) { return v.template mtl_swizzle<I...>(); }
  template <class V> static METAL_FUNC auto write(V& v) { return v.template mtl_swizzle_ref<I...>(); }
};
// A leading 2 is the rgba spelling (v.bgr -> mtl_swz<2210>()): the same components.
template <int... I> struct swizzle_code<2, I...> : swizzle_code<1, I...> {};
template <int... I> struct swizzle_code<0, I...> {
  static_assert(sizeof...(I) == 1000, "mtl_swz code must be 1 followed by the component digits, e.g. 1210");
};

// Element-wise application. Arguments are vectors of one length or scalars,
// which are broadcast after conversion to the vectors' component type E.
template <class E, int I, class X> METAL_FUNC constexpr E lane(const X& x) {
  if constexpr (vec_info<X>::is_vec) return elem<I>(x);
  else return convert<E>(x);
}
template <class E, int I, class F, class... A> METAL_FUNC constexpr auto call_lane(const F& f, const A&... a) {
  return f(lane<E, I>(a)...);
}
template <class E, class F, int I0, int... I, class... A>
METAL_FUNC constexpr auto zip_seq(const F& f, int_seq<I0, I...>, const A&... a) {
  typedef decltype(call_lane<E, 0>(f, a...)) R;
  return vec<R, 1 + sizeof...(I)>(elems_tag{}, call_lane<E, I0>(f, a...), call_lane<E, I>(f, a...)...);
}

// The vector type an element-wise call on arguments A... produces: defined
// when at least one argument is a vector, all vectors share length and
// component type, and the rest are scalars.
template <class... A> struct first_vec { typedef void type; };
template <class A, class... R> struct first_vec<A, R...> {
  typedef conditional_t<vec_info<A>::is_vec, A, typename first_vec<R...>::type> type;
};
template <class V, class X> struct lane_ok {
  static constexpr bool value = vec_info<X>::is_vec
                                    ? (vec_info<X>::size == vec_info<V>::size &&
                                       is_same<typename vec_info<X>::elem, typename vec_info<V>::elem>::value)
                                    : is_scalar<X>::value;
};
template <bool Ok, class V> struct zip_result_if {};
template <class V> struct zip_result_if<true, V> {
  typedef vec<typename vec_info<V>::elem, vec_info<V>::size> type;
};
// No `type` (not an error) where the lanes do not fit, so that a source's own overload for
// its own types (mistral.rs's fma(Bfloat4_, Bfloat4_, float4)) is chosen instead.
template <class... A>
struct zip_result_of
    : zip_result_if<(lane_ok<typename first_vec<A...>::type, A>::value && ...), typename first_vec<A...>::type> {};
template <class... A> struct zip_result_of_void {};  // no vector among A: no overload
template <class... A>
using zip_result_t = typename conditional_t<is_same<typename first_vec<A...>::type, void>::value,
                                            zip_result_of_void<A...>, zip_result_of<A...>>::type;

template <class F, class... A> METAL_FUNC constexpr auto zip(const F& f, const A&... a) {
  typedef zip_result_t<A...> V;
  return zip_seq<typename V::value_type>(f, typename make_seq<vec_info<V>::size>::type{}, a...);
}

// Operator bodies; T(a + b) keeps ushort4 + ushort4 a ushort4.
#define METAL_OP_FN(NAME, OP) \
  struct NAME { template <class T> METAL_FUNC constexpr T operator()(const T& a, const T& b) const { return T(a OP b); } };
METAL_OP_FN(op_add, +)
#undef METAL_OP_FN
// A char or short component subtracts and multiplies in int, through metal_negation.h's
// small_result (no neg.s16 for CUDA's ptxas to mistake), and multiplies unsigned: a ushort
// product promoted to int could overflow it.
template <class T> struct is_small_int : integral_constant<bool, is_integral<T>::value && (sizeof(T) < 4)> {};
struct op_sub {
  template <class T> METAL_FUNC constexpr T operator()(const T& a, const T& b) const {
    if constexpr (is_small_int<T>::value) return T(mtl_rt::small_result(int(a) - int(b)));
    else return T(a - b);
  }
};
struct op_mul {
  template <class T> METAL_FUNC constexpr T operator()(const T& a, const T& b) const {
    if constexpr (is_small_int<T>::value) return T(mtl_rt::small_result(int((unsigned)a * (unsigned)b)));
    else return T(a * b);
  }
};
// Integer components divide without trapping (metal_division.h).
struct op_div { template <class T> METAL_FUNC constexpr T operator()(const T& a, const T& b) const { return T(mtl_rt::div_value(a, b)); } };
struct op_mod { template <class T> METAL_FUNC constexpr T operator()(const T& a, const T& b) const { return T(mtl_rt::mod_value(a, b)); } };
#define METAL_OP_FN(NAME, OP) \
  struct NAME { template <class T> METAL_FUNC constexpr T operator()(const T& a, const T& b) const { return T(a OP b); } };
METAL_OP_FN(op_and, &)
METAL_OP_FN(op_or, |)
METAL_OP_FN(op_xor, ^)
METAL_OP_FN(op_shl, <<)
METAL_OP_FN(op_shr, >>)
#undef METAL_OP_FN
#define METAL_CMP_FN(NAME, OP) \
  struct NAME { template <class T> METAL_FUNC constexpr bool operator()(const T& a, const T& b) const { return bool(a OP b); } };
METAL_CMP_FN(op_eq, ==)
METAL_CMP_FN(op_ne, !=)
METAL_CMP_FN(op_lt, <)
METAL_CMP_FN(op_le, <=)
METAL_CMP_FN(op_gt, >)
METAL_CMP_FN(op_ge, >=)
METAL_CMP_FN(op_land, &&)
METAL_CMP_FN(op_lor, ||)
#undef METAL_CMP_FN
// Through metal_negation.h: a char or short component negated in 32 bits on CUDA (not neg.s16).
struct op_neg { template <class T> METAL_FUNC constexpr T operator()(const T& a) const { return T(mtl_rt::neg_tag{} - a); } };
struct op_bnot { template <class T> METAL_FUNC constexpr T operator()(const T& a) const { return T(~a); } };
struct op_lnot { template <class T> METAL_FUNC constexpr bool operator()(const T& a) const { return !bool(a); } };
}  // namespace mtl_detail

// Binary operators: vector-vector (packed or not, same component type and
// length), vector-scalar and scalar-vector. The scalar converts to the
// component type, so float4 * 2 and ushort4 + 1 work as in MSL. A direct
// expansion (not zip) keeps these, the most used functions, cheap to compile.
namespace mtl_detail {
template <class F, class T, int N, bool P, bool Q, int... I>
METAL_FUNC constexpr auto binop(const F& f, const mtl_vector<T, N, P>& a, const mtl_vector<T, N, Q>& b, int_seq<I...>) {
  return vec<decltype(f(a.x, b.x)), N>(elems_tag{}, f(elem<I>(a), elem<I>(b))...);
}
// clang's vector splat (the MSL compiler's): a floating scalar never converts to an integer
// vector's components ("cannot convert between vector values of different size"), so
// `int4 * 2.5f` is refused as Metal refuses it rather than computed as `int4 * 2`.
template <class T, class U> struct splat_allowed {
  static constexpr bool value = !is_integral<T>::value || is_integral<U>::value;
};
template <class F, class T, int N, bool P, int... I>
METAL_FUNC constexpr auto binop_vs(const F& f, const mtl_vector<T, N, P>& a, const T& s, int_seq<I...>) {
  return vec<decltype(f(a.x, s)), N>(elems_tag{}, f(elem<I>(a), s)...);
}
template <class F, class T, int N, bool P, int... I>
METAL_FUNC constexpr auto binop_sv(const F& f, const T& s, const mtl_vector<T, N, P>& b, int_seq<I...>) {
  return vec<decltype(f(s, b.x)), N>(elems_tag{}, f(s, elem<I>(b))...);
}
}  // namespace mtl_detail
#define METAL_VEC_BINOP(OP, FN)                                                              \
  template <class T, int N, bool P, bool Q>                                                  \
  METAL_FUNC constexpr auto operator OP(const mtl_vector<T, N, P>& a, const mtl_vector<T, N, Q>& b) { \
    return mtl_detail::binop(mtl_detail::FN{}, a, b, typename mtl_detail::make_seq<N>::type{}); \
  }                                                                                          \
  template <class T, int N, bool P, class U, enable_if_t<mtl_detail::is_scalar<U>::value, int> = 0> \
  METAL_FUNC constexpr auto operator OP(const mtl_vector<T, N, P>& a, const U& b) {          \
    static_assert(mtl_detail::splat_allowed<T, U>::value,                                    \
                  "cannot convert between an integer vector and a floating-point scalar");   \
    return mtl_detail::binop_vs(mtl_detail::FN{}, a, mtl_detail::convert<T>(b),              \
                                typename mtl_detail::make_seq<N>::type{});                    \
  }                                                                                          \
  template <class T, int N, bool P, class U, enable_if_t<mtl_detail::is_scalar<U>::value, int> = 0> \
  METAL_FUNC constexpr auto operator OP(const U& a, const mtl_vector<T, N, P>& b) {          \
    static_assert(mtl_detail::splat_allowed<T, U>::value,                                    \
                  "cannot convert between an integer vector and a floating-point scalar");   \
    return mtl_detail::binop_sv(mtl_detail::FN{}, mtl_detail::convert<T>(a), b,              \
                                typename mtl_detail::make_seq<N>::type{});                    \
  }
METAL_VEC_BINOP(+, op_add)
METAL_VEC_BINOP(-, op_sub)
METAL_VEC_BINOP(*, op_mul)
METAL_VEC_BINOP(/, op_div)
METAL_VEC_BINOP(%, op_mod)
METAL_VEC_BINOP(&, op_and)
METAL_VEC_BINOP(|, op_or)
METAL_VEC_BINOP(^, op_xor)
METAL_VEC_BINOP(<<, op_shl)
METAL_VEC_BINOP(>>, op_shr)
// Comparisons and && || give bool vectors, as in MSL.
METAL_VEC_BINOP(==, op_eq)
METAL_VEC_BINOP(!=, op_ne)
METAL_VEC_BINOP(<, op_lt)
METAL_VEC_BINOP(<=, op_le)
METAL_VEC_BINOP(>, op_gt)
METAL_VEC_BINOP(>=, op_ge)
METAL_VEC_BINOP(&&, op_land)
METAL_VEC_BINOP(||, op_lor)
#undef METAL_VEC_BINOP

// A shift's count may be a vector of another integer type (`int2 << uint2`, as naga writes
// WGSL's u32 counts): clang's vector shifts take it, and the result has the left operand's type.
#define METAL_VEC_MIXED_SHIFT(OP)                                                                     \
  template <class T, class U, int N, bool P, bool Q,                                                  \
            enable_if_t<!is_same<T, U>::value && is_integral<T>::value && is_integral<U>::value, int> = 0> \
  METAL_FUNC constexpr vec<T, N> operator OP(const mtl_vector<T, N, P>& a, const mtl_vector<U, N, Q>& b) { \
    return a OP vec<T, N>(b);                                                                         \
  }
METAL_VEC_MIXED_SHIFT(<<)
METAL_VEC_MIXED_SHIFT(>>)
#undef METAL_VEC_MIXED_SHIFT

template <class T, int N, bool P> METAL_FUNC constexpr vec<T, N> operator+(const mtl_vector<T, N, P>& a) { return a; }
template <class T, int N, bool P> METAL_FUNC constexpr auto operator-(const mtl_vector<T, N, P>& a) {
  return mtl_detail::zip(mtl_detail::op_neg{}, a);
}
template <class T, int N, bool P> METAL_FUNC constexpr auto operator~(const mtl_vector<T, N, P>& a) {
  return mtl_detail::zip(mtl_detail::op_bnot{}, a);
}
// Also serves MSL's not(bvec): `not` is the C++ alternative token for `!`.
template <class T, int N, bool P> METAL_FUNC constexpr auto operator!(const mtl_vector<T, N, P>& a) {
  return mtl_detail::zip(mtl_detail::op_lnot{}, a);
}

// Compound assignment and ++/--, as free templates so that instantiating a
// vector type stays cheap. The right side is a same-type vector (packed or
// not) or a scalar, as for the binary operators.
#define METAL_VEC_COMPOUND(OP)                                                               \
  template <class T, int N, bool P, class X>                                                 \
  METAL_FUNC auto operator OP##=(mtl_vector<T, N, P>& a, const X& b)->decltype(a OP b, a) {  \
    return a = a OP b;                                                                       \
  }
METAL_VEC_COMPOUND(+)
METAL_VEC_COMPOUND(-)
METAL_VEC_COMPOUND(*)
METAL_VEC_COMPOUND(/)
METAL_VEC_COMPOUND(%)
METAL_VEC_COMPOUND(&)
METAL_VEC_COMPOUND(|)
METAL_VEC_COMPOUND(^)
METAL_VEC_COMPOUND(<<)
METAL_VEC_COMPOUND(>>)
#undef METAL_VEC_COMPOUND
template <class T, int N, bool P> METAL_FUNC mtl_vector<T, N, P>& operator++(mtl_vector<T, N, P>& a) { return a += 1; }
template <class T, int N, bool P> METAL_FUNC mtl_vector<T, N, P>& operator--(mtl_vector<T, N, P>& a) { return a -= 1; }
template <class T, int N, bool P> METAL_FUNC mtl_vector<T, N, P> operator++(mtl_vector<T, N, P>& a, int) {
  const mtl_vector<T, N, P> old = a;
  a += 1;
  return old;
}
template <class T, int N, bool P> METAL_FUNC mtl_vector<T, N, P> operator--(mtl_vector<T, N, P>& a, int) {
  const mtl_vector<T, N, P> old = a;
  a -= 1;
  return old;
}

}  // namespace metal
