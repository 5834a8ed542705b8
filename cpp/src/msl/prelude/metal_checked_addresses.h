// metalcall MSL prelude, checked mode: void pointers (`device void*`: byte bounds, usable
// after a cast) and the addresses the translator rewrites (`&t[i]`, `&x`) as checked pointers.
// Included by metal_checked.h after mtl_checked and mtl_checked_array.
#pragma once

#if defined(METALCALL_CHECKED) && !METAL_CUDA

namespace metal {

namespace mtl_rt {
template <class U> struct raw_element { typedef U type; };
template <> struct raw_element<void> { typedef unsigned char type; };
// A raw pointer's bytes as a checked pointer: its element's (from_raw), a void pointer's one byte.
template <class U> METAL_FUNC mtl_checked<unsigned char> raw_bytes(U* raw) {
  typedef typename raw_element<remove_cv_t<U>>::type E;
  const mtl_checked<E> p((E*)raw);
  mtl_checked<unsigned char> b((unsigned char*)p.mtl_base, p.mtl_count * sizeof(E), p.mtl_what);
  b.mtl_offset = p.mtl_offset * (long long)sizeof(E);
  return b;
}
}  // namespace mtl_rt

// A pointer to void (V: void with its const/volatile): the bytes of its memory, counted
// in bytes. It has no elements; a cast to T* (mtl_checked<T>'s cast constructor) makes a
// checked T pointer over the same bytes.
template <class V> struct mtl_checked_void : mtl_rt::checked_what {  // not standard-layout, as mtl_checked
  V* mtl_base;                   // start of the memory
  long long mtl_offset;          // this pointer's position, in bytes from mtl_base
  unsigned long long mtl_count;  // bytes the memory holds (~0: a raw pointer outside any argument)

  METAL_FUNC mtl_checked_void() : mtl_rt::checked_what{"null pointer"}, mtl_base(nullptr), mtl_offset(0), mtl_count(0) {}
  METAL_FUNC mtl_checked_void(V* base, unsigned long long bytes, const char* what)
      : mtl_rt::checked_what{what}, mtl_base(base), mtl_offset(0), mtl_count(bytes) {}
  METAL_FUNC mtl_checked_void(decltype(nullptr)) : mtl_checked_void() {}
  METAL_FUNC mtl_checked_void(mtl_rt::int_literal) : mtl_checked_void() {}  // `c ? v : 0`
  METAL_FUNC explicit mtl_checked_void(mtl_rt::integer_address) : mtl_checked_void() {}  // refused (metal_checked.h)
  // Any checked pointer whose element converts (float* → void*, void* → const void*): its bytes.
  template <class U, enable_if_t<mtl_rt::pointer_converts<U, V>::value, int> = 0>
  METAL_FUNC mtl_checked_void(const mtl_checked<U>& o)
      : mtl_rt::checked_what{o.mtl_what},
        mtl_base((V*)o.mtl_base),
        mtl_offset(o.mtl_offset * (long long)mtl_rt::element_bytes<U>::value),
        mtl_count(o.mtl_count * mtl_rt::element_bytes<U>::value) {
    static_assert(mtl_rt::views_bytes<U, V>::allowed, METALCALL_BYTES_VIEW_MESSAGE);
  }
  // A raw pointer: checked over the argument it points into, else one element's bytes
  // (mtl_checked's from_raw; a raw void pointer: one byte).
  template <class U, enable_if_t<mtl_rt::pointer_converts<U, V>::value, int> = 0>
  METAL_FUNC mtl_checked_void(U* raw) : mtl_checked_void(mtl_rt::raw_bytes(raw)) {
    static_assert(mtl_rt::views_bytes<U, V>::allowed, METALCALL_BYTES_VIEW_MESSAGE);
  }

  METAL_FUNC V* address() const { return (V*)((const volatile unsigned char*)mtl_base + mtl_offset); }
  METAL_FUNC operator V*() const { return address(); }
  template <class U, enable_if_t<!is_same<U, V>::value, int> = 0>
  METAL_FUNC explicit operator U*() const {  // `(thread uchar*)v`: plain
    static_assert(mtl_rt::views_bytes<U, V>::allowed, METALCALL_BYTES_VIEW_MESSAGE);
    return (U*)address();
  }
  METAL_FUNC bool operator==(const mtl_checked_void& o) const { return address() == o.address(); }
  METAL_FUNC bool operator!=(const mtl_checked_void& o) const { return address() != o.address(); }
  METAL_FUNC bool operator==(decltype(nullptr)) const { return address() == nullptr; }
  METAL_FUNC bool operator!=(decltype(nullptr)) const { return address() != nullptr; }
  METAL_FUNC explicit operator bool() const { return mtl_base != nullptr; }
};
template <> struct mtl_checked<void> : mtl_checked_void<void> {
  using mtl_checked_void<void>::mtl_checked_void;
};
template <> struct mtl_checked<const void> : mtl_checked_void<const void> {
  using mtl_checked_void<const void>::mtl_checked_void;
};
template <> struct mtl_checked<volatile void> : mtl_checked_void<volatile void> {
  using mtl_checked_void<volatile void>::mtl_checked_void;
};
template <> struct mtl_checked<const volatile void> : mtl_checked_void<const volatile void> {
  using mtl_checked_void<const volatile void>::mtl_checked_void;
};

// `const constant auto* p = q;` is written `metal::mtl_checked p = q;`: its element deduced
// from a checked pointer (the copy), a checked array or a raw pointer.
template <class T, unsigned long long N, int K> mtl_checked(mtl_checked_array<T, N, K>&) -> mtl_checked<T>;
template <class T, unsigned long long N, int K> mtl_checked(const mtl_checked_array<T, N, K>&) -> mtl_checked<const T>;
template <class U> mtl_checked(U*) -> mtl_checked<U>;

namespace mtl_rt {

// ---- `&t[i]`, `&t[i][j]`, `&s.a[i]` (the translator writes element_address(t, i, j)) ----

template <class A> struct is_checked_array : false_type {};
template <class T, unsigned long long N, int K> struct is_checked_array<mtl_checked_array<T, N, K>> : true_type {};

// A checked pointer over a checked array's rows as one run of elements (a T[N][M] is N*M
// T's), so that `&t[0][0]` may walk the whole array, as C allows in practice.
template <class T, unsigned long long M, int K>
METAL_FUNC mtl_checked<T> rows_as_elements(const mtl_checked<mtl_checked_array<T, M, K>>& p) {
  mtl_checked<T> r((T*)p.mtl_base, p.mtl_count * M, p.mtl_what);
  r.mtl_offset = p.mtl_offset * (long long)M;
  return r;
}
template <class T, unsigned long long M, int K>
METAL_FUNC mtl_checked<const T> rows_as_elements(const mtl_checked<const mtl_checked_array<T, M, K>>& p) {
  mtl_checked<const T> r((const T*)p.mtl_base, p.mtl_count * M, p.mtl_what);
  r.mtl_offset = p.mtl_offset * (long long)M;
  return r;
}

template <class A, class... I> METAL_FUNC auto element_address(A&& a, I... i);
template <class P, class I> METAL_FUNC P checked_offset(const P& p, I i) { return p + i; }
template <class T, class I, class J, class... R, enable_if_t<is_checked_array<remove_cv_t<T>>::value, int> = 0>
METAL_FUNC auto checked_offset(const mtl_checked<T>& p, I i, J j, R... r) {
  return checked_offset(rows_as_elements(p + i), j, r...);
}
// Rows that are no checked arrays (`float4 t[4]`: `&t[1][2]`): the row's own element address.
template <class T, class I, class J, class... R, enable_if_t<!is_checked_array<remove_cv_t<T>>::value, int> = 0>
METAL_FUNC auto checked_offset(const mtl_checked<T>& p, I i, J j, R... r) {
  return element_address(*(p + i), j, r...);
}

// The address of an element: a checked pointer with the array's bounds for a checked
// array, a vector, a metal::array, a matrix or a checked pointer, else `&a[i]…` as C++
// takes it (a raw pointer's: checked again against the argument it points into).
template <class T, unsigned long long N, int K> METAL_FUNC mtl_checked<T> whole_array(mtl_checked_array<T, N, K>& a) {
  return mtl_checked<T>(a.mtl_data, N, a.what());
}
template <class T, unsigned long long N, int K>
METAL_FUNC mtl_checked<const T> whole_array(const mtl_checked_array<T, N, K>& a) {
  return mtl_checked<const T>(a.mtl_data, N, a.what());
}
// The elements of a vector, a metal::array and a matrix's columns, as a checked pointer
// (their components are contiguous), so that `&v[i]` keeps their bounds too.
template <class T, int N, bool P> METAL_FUNC mtl_checked<T> whole_array(mtl_vector<T, N, P>& v) {
  return mtl_checked<T>(&v[0], N, "vector component");
}
template <class T, int N, bool P> METAL_FUNC mtl_checked<const T> whole_array(const mtl_vector<T, N, P>& v) {
  return mtl_checked<const T>(&v[0], N, "vector component");
}
template <class T, size_t N> METAL_FUNC mtl_checked<T> whole_array(array<T, N>& a) {
  return mtl_checked<T>(a.mtl_elements, N, "metal::array");
}
template <class T, size_t N> METAL_FUNC mtl_checked<const T> whole_array(const array<T, N>& a) {
  return mtl_checked<const T>(a.mtl_elements, N, "metal::array");
}
template <class T, int C, int R> METAL_FUNC mtl_checked<vec<T, R>> whole_array(matrix<T, C, R>& m) {
  return mtl_checked<vec<T, R>>(m.columns, C, "matrix column");
}
template <class T, int C, int R> METAL_FUNC mtl_checked<const vec<T, R>> whole_array(const matrix<T, C, R>& m) {
  return mtl_checked<const vec<T, R>>(m.columns, C, "matrix column");
}

// A checked pointer's element (`&p[i]`): the pointer moved, its bounds kept.
template <class T> METAL_FUNC mtl_checked<T> whole_array(const mtl_checked<T>& p) { return p; }

template <class A, bool Checked = is_checked_array<remove_cv_t<A>>::value> struct element_address_of {
  // whole_array's where A has one, else C++'s `&a[i]` (a pointer's: checked again against its argument).
  template <class X, class I> static METAL_FUNC auto pick(X& a, I i, int) -> decltype(whole_array(a) + i) {
    return whole_array(a) + i;
  }
  template <class X, class I> static METAL_FUNC auto pick(X& a, I i, long) -> decltype(&a[i]) { return &a[i]; }
  template <class I> static METAL_FUNC auto get(A& a, I i) -> decltype(pick(a, i, 0)) { return pick(a, i, 0); }
  template <class I, class J, class... R> static METAL_FUNC auto get(A& a, I i, J j, R... r) {
    return element_address_of<remove_reference_t<decltype(a[i])>>::get(a[i], j, r...);
  }
};
template <class A> struct element_address_of<A, true> {
  template <class... I> static METAL_FUNC auto get(A& a, I... i) { return checked_offset(whole_array(a), i...); }
};
template <class A, class... I> METAL_FUNC auto element_address(A&& a, I... i) {
  return element_address_of<remove_reference_t<A>>::get(a, i...);
}

// ---- `&*p` (the translator writes deref_address(p)) ----
// A checked pointer itself, a checked array's first element as a checked pointer, else `&*p`
// as C++ takes it (a raw pointer, a class with its own operator*).
template <class X> struct deref_checked : false_type {};
template <class T> struct deref_checked<mtl_checked<T>> : true_type {};
template <class T, unsigned long long N, int K> struct deref_checked<mtl_checked_array<T, N, K>> : true_type {};
template <class T> METAL_FUNC mtl_checked<T> deref_address(const mtl_checked<T>& p) { return p; }
template <class T, unsigned long long N, int K> METAL_FUNC mtl_checked<T> deref_address(mtl_checked_array<T, N, K>& a) {
  return whole_array(a);
}
template <class T, unsigned long long N, int K>
METAL_FUNC mtl_checked<const T> deref_address(const mtl_checked_array<T, N, K>& a) {
  return whole_array(a);
}
template <class X, enable_if_t<!deref_checked<remove_cv_t<remove_reference_t<X>>>::value, int> = 0>
METAL_FUNC auto deref_address(X&& x) -> decltype(&*x) {
  return &*x;
}

// ---- `f(t)`: a checked array passed whole (the translator writes array_arg(t)) ----
}  // namespace mtl_rt

// What the array decays to in MSL, a checked pointer to its first element, so that a
// parameter deduced by value (`template <class P> void f(P p)`, `[](auto p)`) gets a pointer
// that writes through to the array, not a copy of it; it still binds to an array
// reference parameter (`thread float (&a)[4]`: the checked array itself).
template <class E, class A> struct mtl_checked_array_arg : mtl_checked<E> {
  A* mtl_array;
  METAL_FUNC mtl_checked_array_arg(const mtl_checked<E>& p, A* a) : mtl_checked<E>(p), mtl_array(a) {}
  METAL_FUNC operator A&() const { return *mtl_array; }
};

// A pointer type given to a template is a checked pointer here (checked_mode.hpp): the traits
// asked of one (`is_scalar_v<device float*>`) answer as for the pointer it stands for.
template <class T> struct _is_scalar_impl<mtl_checked<T>> : true_type {};
template <class T> struct is_class<mtl_checked<T>> : false_type {};
template <class T> struct is_class<const mtl_checked<T>> : false_type {};
template <class T> struct remove_pointer<mtl_checked<T>> { typedef T type; };
template <class T> struct remove_pointer<const mtl_checked<T>> { typedef T type; };

namespace mtl_rt {
// as_type may not reinterpret what holds a checked pointer's bounds (metal_limits.h).
template <class T> struct holds_bounds<mtl_checked<T>> { static constexpr bool value = true; };
template <class V> struct holds_bounds<mtl_checked_void<V>> { static constexpr bool value = true; };
template <class E, class A> struct holds_bounds<mtl_checked_array_arg<E, A>> { static constexpr bool value = true; };

template <class T, unsigned long long N, int K>
METAL_FUNC mtl_checked_array_arg<T, mtl_checked_array<T, N, K>> array_arg(mtl_checked_array<T, N, K>& a) {
  return mtl_checked_array_arg<T, mtl_checked_array<T, N, K>>(whole_array(a), &a);
}
template <class T, unsigned long long N, int K>
METAL_FUNC mtl_checked_array_arg<const T, const mtl_checked_array<T, N, K>> array_arg(const mtl_checked_array<T, N, K>& a) {
  return mtl_checked_array_arg<const T, const mtl_checked_array<T, N, K>>(whole_array(a), &a);
}
template <class X> METAL_FUNC X&& array_arg(X&& x) { return static_cast<X&&>(x); }  // another variable of that name
// `c ? t : 0` (the translator writes branch_pointer(t)): the checked pointer the array decays
// to, which the literal branch (int_literal) converts to as a null one.
template <class T, unsigned long long N, int K> METAL_FUNC mtl_checked<T> branch_pointer(mtl_checked_array<T, N, K>& a) {
  return whole_array(a);
}
template <class T, unsigned long long N, int K>
METAL_FUNC mtl_checked<const T> branch_pointer(const mtl_checked_array<T, N, K>& a) {
  return whole_array(a);
}
template <class X> METAL_FUNC X&& branch_pointer(X&& x) { return static_cast<X&&>(x); }  // another variable of that name
// To a template's deduced `thread T*` / `const T*` parameter (checked_thread_params.hpp):
// the checked pointer, as for the array itself.
template <class E, class A> METAL_FUNC mtl_checked<E> thread_arg(mtl_checked_array_arg<E, A> a) { return a; }
template <class E, class A> METAL_FUNC mtl_checked<const E> thread_arg_const(mtl_checked_array_arg<E, A> a) {
  return mtl_checked<E>(a);
}

// ---- a template's `thread T (&a)[N]` whose N it deduces (checked_thread_params.hpp) ----
// The argument: a checked array's elements, a C array (SPIR-V Cross's `T (&)[N]`), as the extent
// deduces only from one; anything else as it is. A checked array of checked arrays gives
// `T[R][C]` (`(&t)[R][C]`), the same layout.
template <class A> struct raw_of { typedef A type; };
template <class T, unsigned long long N, int K> struct raw_of<mtl_checked_array<T, N, K>> {
  typedef typename raw_of<T>::type type[N];
};
template <class T, unsigned long long N, int K>
METAL_FUNC typename raw_of<mtl_checked_array<T, N, K>>::type& raw_array(mtl_checked_array<T, N, K>& a) {
  return *(typename raw_of<mtl_checked_array<T, N, K>>::type*)a.mtl_data;
}
template <class T, unsigned long long N, int K>
METAL_FUNC const typename raw_of<mtl_checked_array<T, N, K>>::type& raw_array(const mtl_checked_array<T, N, K>& a) {
  return *(const typename raw_of<mtl_checked_array<T, N, K>>::type*)a.mtl_data;
}
template <class E, class A> METAL_FUNC auto raw_array(mtl_checked_array_arg<E, A> a) -> decltype(raw_array(*a.mtl_array)) {
  return raw_array(*a.mtl_array);
}
template <class X> METAL_FUNC X&& raw_array(X&& x) { return static_cast<X&&>(x); }
// The parameter in the body: the checked array over the same elements (the same layout as T[N],
// T[R][C] a checked array of checked arrays), of kind K where the translator gives it (0: a
// threadgroup array), else private or constant.
template <class T> struct scalar_of { typedef T type; };
template <class T, unsigned long long N> struct scalar_of<T[N]> { typedef typename scalar_of<T>::type type; };
template <class T, int K> struct checked_of { typedef T type; };
template <class T, unsigned long long N, int K> struct checked_of<T[N], K> {
  typedef mtl_checked_array<typename checked_of<T, K>::type, N, K> type;
};
template <int K = -1, class T, unsigned long long N>
METAL_FUNC typename checked_of<T[N], K >= 0 ? K : is_const<typename scalar_of<T>::type>::value ? 3 : 1>::type& checked_view(
    T (&a)[N]) {
  // (an array of const T is const itself)
  return *(typename checked_of<T[N], K >= 0 ? K : is_const<typename scalar_of<T>::type>::value ? 3 : 1>::type*)&a;
}

// ---- a template's pointer-to-array parameter whose element or extents it deduces ----
// `template <int C> void f(thread float (*t)[C])` takes `mtl_checked_rows<float[C], 1, false> t`:
// a checked pointer to checked rows (kind K, const rows with Const) whose raw row type deduces
// the element type and the extents (an array bound deduces into any integer type, where
// mtl_checked_array's `unsigned long long` would not match `int C`). The call passes
// rows_arg<K, Const>(x), a value of exactly that type, from what x's rows are.
template <class Raw, int K, bool Const>
using mtl_checked_rows_base =
    mtl_checked<conditional_t<Const, const typename checked_of<Raw, K>::type, typename checked_of<Raw, K>::type>>;
}  // namespace mtl_rt
template <class Raw, int K, bool Const> struct mtl_checked_rows : mtl_rt::mtl_checked_rows_base<Raw, K, Const> {
  typedef mtl_rt::mtl_checked_rows_base<Raw, K, Const> base;
  METAL_FUNC mtl_checked_rows(const base& p) : base(p) {}
};
namespace mtl_rt {
// The raw row type, without const elements (constant data's rows have them; T deduces without).
template <class T> struct unconst_elements { typedef remove_cv_t<T> type; };
template <class T, unsigned long long N> struct unconst_elements<T[N]> { typedef typename unconst_elements<T>::type type[N]; };
template <class Row> struct row_layout { typedef typename unconst_elements<typename raw_of<remove_cv_t<Row>>::type>::type type; };
// The same rows seen as kind K (the layout is the one of the raw row type): offset and count kept.
template <int K, bool Const, class Row>
METAL_FUNC mtl_checked_rows<typename row_layout<Row>::type, K, Const> rows_of_kind(Row* base, long long offset,
                                                                                   unsigned long long count,
                                                                                   const char* what) {
  typedef mtl_checked_rows_base<typename row_layout<Row>::type, K, Const> P;
  typedef remove_pointer_t<decltype(P().mtl_base)> Target;
  static_assert(sizeof(Target) == sizeof(Row), "rows of one layout");
  return P((Target*)base, count, what) + offset;
}
// A checked array of rows (a 2-D array passed whole), a checked pointer to rows (`m + 1`, `&m[1]`,
// another such parameter), an array passed as array_arg; anything else as it is (another
// overload's argument, which the host compiler then matches or refuses).
// Rows whose elements are const (constant data's, a const array's) go only to const rows.
template <class Row> struct rows_are_const
    : bool_constant<is_const<Row>::value || is_const<typename scalar_of<typename raw_of<remove_cv_t<Row>>::type>::type>::value> {};
template <bool Const, class Row> struct rows_fit : bool_constant<is_checked_array<remove_cv_t<Row>>::value &&
                                                                 (Const || !rows_are_const<Row>::value)> {};
template <int K, bool Const, class Row, unsigned long long N, int K2, enable_if_t<rows_fit<Const, Row>::value, int> = 0>
METAL_FUNC auto rows_arg(mtl_checked_array<Row, N, K2>& a) {
  return rows_of_kind<K, Const>(a.mtl_data, 0, N, a.what());
}
template <int K, bool Const, class Row, unsigned long long N, int K2, enable_if_t<rows_fit<Const, const Row>::value, int> = 0>
METAL_FUNC auto rows_arg(const mtl_checked_array<Row, N, K2>& a) {
  return rows_of_kind<K, Const>(a.mtl_data, 0, N, a.what());
}
template <int K, bool Const, class Row, enable_if_t<rows_fit<Const, Row>::value, int> = 0>
METAL_FUNC auto rows_arg(mtl_checked<Row> p) {
  return rows_of_kind<K, Const>(p.mtl_base, p.mtl_offset, p.mtl_count, p.mtl_what);
}
template <int K, bool Const, class E, class A> METAL_FUNC auto rows_arg(mtl_checked_array_arg<E, A> a) {
  return rows_arg<K, Const>(*a.mtl_array);
}
template <class X> struct rows_source : false_type {};
template <class Row, unsigned long long N, int K> struct rows_source<mtl_checked_array<Row, N, K>>
    : is_checked_array<remove_cv_t<Row>> {};
template <class Row> struct rows_source<mtl_checked<Row>> : is_checked_array<remove_cv_t<Row>> {};
template <class E, class A> struct rows_source<mtl_checked_array_arg<E, A>> : true_type {};
template <class Raw, int K, bool Const> struct rows_source<mtl_checked_rows<Raw, K, Const>> : true_type {};
template <int K, bool Const, class X, enable_if_t<!rows_source<remove_cv_t<remove_reference_t<X>>>::value, int> = 0>
METAL_FUNC X&& rows_arg(X&& x) {
  return static_cast<X&&>(x);
}

// ---- `&x` (the translator writes variable_address(x)) ----
// A checked pointer to one element: the address of a private or threadgroup variable
// (extent 1), or, where x lies in a kernel's argument (a `device T&` to a buffer's
// element), that argument's bounds.
template <class T> METAL_FUNC mtl_checked<T> variable_address(T& x) {
  mtl_checked<T> p(&x);
  if (p.mtl_what == kOutsideBuffers) p.mtl_what = "variable";
  return p;
}

// `this` as a pointer value (the translator writes this_address(*this)): the Buffer or threadgroup
// memory the object lies in, else one element ("pointer outside every Buffer").
template <class T> METAL_FUNC mtl_checked<T> this_address(T& x) { return mtl_checked<T>(__builtin_addressof(x)); }

}  // namespace mtl_rt
}  // namespace metal

#endif
