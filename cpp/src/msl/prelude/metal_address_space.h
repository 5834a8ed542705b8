// metalcall MSL prelude: pointers tagged with an MSL address space, for functions
// overloaded only by address space (the translator, msl/address_space_overloads.cpp,
// gives their pointer parameters this type and tags the variables passed to them).
// Spaces: 0 thread, 1 device, 2 threadgroup, 3 constant.
#pragma once

namespace metal {

struct mtl_space_raw {};

template <class T, int S> struct mtl_space_ptr {
  T* p;

  mtl_space_ptr() = default;
  METAL_FUNC constexpr mtl_space_ptr(mtl_space_raw, T* q) : p(q) {}
  // A pointer whose address space the translator could not tell is taken as device.
  template <int S2 = S, enable_if_t<S2 == 1, int> = 0> METAL_FUNC constexpr mtl_space_ptr(T* q) : p(q) {}
  // Same address space, more const.
  template <class U> METAL_FUNC constexpr mtl_space_ptr(const mtl_space_ptr<U, S>& o) : p(o.p) {}

  METAL_FUNC operator T*() const { return p; }
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

}  // namespace metal
