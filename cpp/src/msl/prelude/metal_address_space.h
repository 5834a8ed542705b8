// metalcall MSL prelude: pointers tagged with an MSL address space, for functions
// overloaded only by address space (the translator, msl/passes/address_space_overloads.cpp,
// gives their pointer parameters this type and tags the variables passed to them).
// Spaces: 0 thread, 1 device, 2 threadgroup, 3 constant.
#pragma once

namespace metal {

struct mtl_space_raw {};

#if defined(METALCALL_CHECKED) && !METAL_CUDA
// Checked mode (metal_checked.h): the tagged pointer holds a checked pointer, so the
// overloads' accesses stay bounds-checked.
template <class T> struct mtl_checked;
template <class T, unsigned long long N, int Kind> struct mtl_checked_array;
namespace mtl_rt {
template <class U, class T> struct pointer_converts;
}
template <class T> using mtl_space_storage = mtl_checked<T>;
#else
template <class T> using mtl_space_storage = T*;
#endif

template <class T, int S> struct mtl_space_ptr {
  mtl_space_storage<T> p;

  mtl_space_ptr() = default;
  METAL_FUNC constexpr mtl_space_ptr(mtl_space_raw, mtl_space_storage<T> q) : p(q) {}
  // A pointer whose address space the translator could not tell is taken as device.
  template <int S2 = S, enable_if_t<S2 == 1, int> = 0>
  METAL_FUNC constexpr mtl_space_ptr(mtl_space_storage<T> q) : p(q) {}
  // Same address space, more const.
  template <class U> METAL_FUNC constexpr mtl_space_ptr(const mtl_space_ptr<U, S>& o) : p(o.p) {}

  METAL_FUNC operator T*() const { return p; }
#if defined(METALCALL_CHECKED) && !METAL_CUDA
  // `const device float* q = p + 1;` in an overload: q is a checked pointer.
  template <class U, enable_if_t<mtl_rt::pointer_converts<T, U>::value, int> = 0>
  METAL_FUNC operator mtl_checked<U>() const { return p; }
#endif
  METAL_FUNC T& operator*() const { return *p; }
  METAL_FUNC T* operator->() const { return p; }
  template <class I> METAL_FUNC T& operator[](I i) const { return p[i]; }
  template <class I> METAL_FUNC mtl_space_ptr operator+(I i) const { return mtl_space_ptr(mtl_space_raw(), p + i); }
  template <class I> METAL_FUNC mtl_space_ptr operator-(I i) const { return mtl_space_ptr(mtl_space_raw(), p - i); }
  METAL_FUNC ptrdiff_t operator-(const mtl_space_ptr& o) const { return p - o.p; }
  template <class I> METAL_FUNC mtl_space_ptr& operator+=(I i) { p += i; return *this; }
  template <class I> METAL_FUNC mtl_space_ptr& operator-=(I i) { p -= i; return *this; }
  METAL_FUNC mtl_space_ptr& operator++() { ++p; return *this; }
  METAL_FUNC mtl_space_ptr& operator--() { --p; return *this; }
  METAL_FUNC mtl_space_ptr operator++(int) { mtl_space_ptr r = *this; ++p; return r; }
  METAL_FUNC mtl_space_ptr operator--(int) { mtl_space_ptr r = *this; --p; return r; }
};

// Functions overloaded only by the address space of reference parameters (a reference binds
// any object here) take first the spaces of those parameters as a type, and each call passes
// its arguments' spaces, so C++ picks the overload MSL would.
template <int... S> struct mtl_ref_spaces {};
// Another function of such a name, of as many parameters: it takes whatever tag a call passes.
struct mtl_ref_any {};
// What a call passes: a class derived from both, so that the tag converts to a tagged overload's
// mtl_ref_spaces and to another's mtl_ref_any alike (each a derived-to-base conversion, neither
// better) and the real arguments choose, as in MSL: `rd(n)`, n an int, calls `rd(int)` beside
// `rd(thread const float&)` (a user-defined conversion to mtl_ref_any made that call ambiguous).
template <int... S> struct mtl_ref_call : mtl_ref_spaces<S...>, mtl_ref_any {};

template <bool C, class T> struct mtl_space_const { typedef T type; };
template <class T> struct mtl_space_const<true, T> { typedef const T type; };

// x tagged with address space S; C: as a pointer to const (what the overloads take).
template <int S, bool C, class T> METAL_FUNC mtl_space_ptr<typename mtl_space_const<C, T>::type, S> mtl_space(T* p) {
  return mtl_space_ptr<typename mtl_space_const<C, T>::type, S>(mtl_space_raw(), p);
}
template <int S, bool C, class T, int S2>
METAL_FUNC mtl_space_ptr<typename mtl_space_const<C, T>::type, S> mtl_space(const mtl_space_ptr<T, S2>& p) {
  return mtl_space_ptr<typename mtl_space_const<C, T>::type, S>(mtl_space_raw(), p.p);
}
#if defined(METALCALL_CHECKED) && !METAL_CUDA
// Checked pointers and arrays (a kernel's buffer, a threadgroup or private array).
template <int S, bool C, class T>
METAL_FUNC mtl_space_ptr<typename mtl_space_const<C, T>::type, S> mtl_space(const mtl_checked<T>& p) {
  return mtl_space_ptr<typename mtl_space_const<C, T>::type, S>(mtl_space_raw(), p);
}
template <int S, bool C, class T, unsigned long long N, int K>
METAL_FUNC mtl_space_ptr<typename mtl_space_const<C, T>::type, S> mtl_space(mtl_checked_array<T, N, K>& a) {
  return mtl_space_ptr<typename mtl_space_const<C, T>::type, S>(mtl_space_raw(), mtl_checked<T>(a));
}
template <int S, bool C, class T, unsigned long long N, int K>
METAL_FUNC mtl_space_ptr<const T, S> mtl_space(const mtl_checked_array<T, N, K>& a) {
  return mtl_space_ptr<const T, S>(mtl_space_raw(), mtl_checked<const T>(a));
}
#endif

}  // namespace metal
