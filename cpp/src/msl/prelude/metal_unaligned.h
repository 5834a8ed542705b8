// metalcall MSL prelude: pointers made by a cast, whose address may be below the alignment of
// what they point to. torchao reads `reinterpret_cast<constant uchar3*>(bytes + 3 * i)[0]`: a
// uchar3 (size 4, alignment 4) at any byte. Apple GPUs load and store such vectors and structs;
// CUDA faults (CUDA_ERROR_MISALIGNED_ADDRESS, which kills the context) and C++ calls it
// undefined (the compiler may use aligned moves).
//
// The translator writes every cast to a pointer type (reinterpret_cast, static_cast,
// const_cast, C-style) as mtl_cast_pointer_t<T> (msl/translate/translator_pointer_casts.cpp),
// and so the pointer variables it initialises. For vectors and matrices that is mtl_unaligned_ptr<T>:
// a pointer whose accesses check the address. On CUDA an aligned one is the type's own (wide)
// load or store, a misaligned one goes component by component (or byte by byte, where even
// the component is misaligned). On the CPU every access is a memcpy: an unaligned move, which
// costs what an aligned one does. For everything else (scalars, structs) it is the plain T*.
#pragma once

namespace metal {

template <class T, int C, int R> struct matrix;

namespace mtl_detail {

// How a T is moved when its address is misaligned: `count` items of `item`, each of which
// needs only its own alignment; `whole`: an aligned T may move as one. `wraps`: a cast pointer
// to T gets the checking pointer: vectors and matrices (not packed vectors, aligned as their
// component, nor scalars or atomics). Not structs: production code takes the
// addresses of their members (ggml's `&x[ib].d`) and passes them to templates that deduce
// their type (MLX's `mlx_atomic<T>*`), which a pointer class cannot serve; their members need
// only their own alignment, which a struct's address has wherever it holds no vector.
template <class T> struct unaligned_layout {
  static constexpr bool wraps = false;
};
template <class T> struct unaligned_layout<const T> : unaligned_layout<T> {};
template <class E, int N> struct unaligned_layout<mtl_vector<E, N, false>> {
  static constexpr bool wraps = N > 1;
  typedef E item;
  static constexpr int count = N;  // a 3-vector's padding is neither read nor written
  static constexpr bool whole = N != 3;
};
template <class E, int C, int R> struct unaligned_layout<matrix<E, C, R>> {
  static constexpr bool wraps = true;
  typedef E item;
  static constexpr int count = int(sizeof(matrix<E, C, R>) / sizeof(E));
  static constexpr bool whole = true;
};

// An unsigned integer of N bytes, to move an item's bits without its class semantics (half).
template <int N> struct bits_of_size;
template <> struct bits_of_size<1> { typedef unsigned char type; };
template <> struct bits_of_size<2> { typedef unsigned short type; };
template <> struct bits_of_size<4> { typedef unsigned int type; };
template <> struct bits_of_size<8> { typedef unsigned long long type; };

METAL_FUNC bool aligned_to(const volatile void* p, unsigned long long alignment) {
  return ((unsigned long long)p & (alignment - 1)) == 0;
}

// Moves what `L` says of a T from `from` to `to`, either of them maybe misaligned.
template <class L> METAL_FUNC void move_items(unsigned char* to, const unsigned char* from) {
  typedef typename L::item I;
#if METAL_CUDA
  typedef typename bits_of_size<int(sizeof(I))>::type __attribute__((__may_alias__)) Bits;
  if (aligned_to(to, alignof(I)) && aligned_to(from, alignof(I))) {
#pragma unroll
    for (int k = 0; k < L::count; ++k) reinterpret_cast<Bits*>(to)[k] = reinterpret_cast<const Bits*>(from)[k];
  } else {
#pragma unroll
    for (int k = 0; k < L::count * int(sizeof(I)); ++k) to[k] = from[k];
  }
#else
  __builtin_memcpy(to, from, L::count * sizeof(I));
#endif
}

template <class T> METAL_FUNC T load_unaligned(const unsigned char* a) {
  typedef unaligned_layout<T> L;
#if METAL_CUDA
  if (L::whole && aligned_to(a, alignof(T))) return *reinterpret_cast<const T*>(a);
#endif
  T v{};
  move_items<L>(reinterpret_cast<unsigned char*>(&v), a);
  return v;
}

template <class T> METAL_FUNC void store_unaligned(unsigned char* a, const T& v) {
  typedef unaligned_layout<T> L;
#if METAL_CUDA
  if (L::whole && aligned_to(a, alignof(T))) {
    *reinterpret_cast<T*>(a) = v;
    return;
  }
#endif
  move_items<L>(a, reinterpret_cast<const unsigned char*>(&v));
}

// The items of `now` whose bits differ from `before`, stored at a (see unaligned_ref).
template <class T> METAL_FUNC void store_changed(unsigned char* a, const T& now, const T& before) {
  typedef unaligned_layout<T> L;
  typedef typename L::item I;
  const unsigned char* n = reinterpret_cast<const unsigned char*>(&now);
  const unsigned char* b = reinterpret_cast<const unsigned char*>(&before);
  for (int k = 0; k < L::count; ++k) {
    bool same = true;
    for (int j = 0; j < int(sizeof(I)); ++j) same = same && n[k * sizeof(I) + j] == b[k * sizeof(I) + j];
    if (!same)
      for (int j = 0; j < int(sizeof(I)); ++j) a[k * sizeof(I) + j] = n[k * sizeof(I) + j];
  }
}

}  // namespace mtl_detail

template <class T> struct mtl_unaligned_ptr;

// `p[i]` of a pointer to non-const T: a copy of the element that is also the element. Reads see
// the copy (it is a T, so T's operators and members apply); `p[i] = v` and compound
// assignments store at once; a member written through it (`p[i].x = 1`, `p[i].xy = v`) is
// stored when the expression ends, only the components that changed (so the neighbours that
// other threads write are left alone).
template <class T> struct mtl_unaligned_ref : T {
  METAL_FUNC explicit mtl_unaligned_ref(unsigned char* a)
      : T(mtl_detail::load_unaligned<T>(a)), before_(static_cast<const T&>(*this)), address_(a) {}
  mtl_unaligned_ref(const mtl_unaligned_ref&) = delete;
  // Moved as a conditional's arm (metal_conditional.h: `c ? *(device float4*)(p + i) : v`): the
  // new object stores what changes, the old one nothing.
  METAL_FUNC mtl_unaligned_ref(mtl_unaligned_ref&& o)
      : T(static_cast<const T&>(o)), before_(o.before_), address_(o.address_) {
    o.address_ = nullptr;
  }
  METAL_FUNC ~mtl_unaligned_ref() {
    if (address_) mtl_detail::store_changed<T>(address_, *this, before_);
  }

  METAL_FUNC mtl_unaligned_ref& operator=(const T& v) {
    mtl_detail::store_unaligned<T>(address_, v);
    static_cast<T&>(*this) = v;
    before_ = v;
    return *this;
  }
  METAL_FUNC mtl_unaligned_ref& operator=(const mtl_unaligned_ref& o) { return *this = static_cast<const T&>(o); }
  template <class U> METAL_FUNC mtl_unaligned_ref& operator=(const U& u) { return *this = T(u); }
#define METAL_UNALIGNED_COMPOUND(OP)                                            \
  template <class U> METAL_FUNC mtl_unaligned_ref& operator OP(const U& u) {    \
    T v = static_cast<const T&>(*this);                                         \
    v OP u;                                                                     \
    return *this = v;                                                           \
  }
  METAL_UNALIGNED_COMPOUND(+=)
  METAL_UNALIGNED_COMPOUND(-=)
  METAL_UNALIGNED_COMPOUND(*=)
  METAL_UNALIGNED_COMPOUND(/=)
  METAL_UNALIGNED_COMPOUND(%=)
  METAL_UNALIGNED_COMPOUND(&=)
  METAL_UNALIGNED_COMPOUND(|=)
  METAL_UNALIGNED_COMPOUND(^=)
  METAL_UNALIGNED_COMPOUND(<<=)
  METAL_UNALIGNED_COMPOUND(>>=)
#undef METAL_UNALIGNED_COMPOUND
  // `p->x`: the member of this copy.
  METAL_FUNC T* operator->() { return this; }

 private:
  T before_;
  unsigned char* address_;
};

// `p->x` of a pointer to const T: the member of a copy that lives to the end of the expression.
template <class T> struct mtl_unaligned_arrow {
  T value;
  METAL_FUNC const T* operator->() const { return &value; }
};

// The pointer: an address with T's arithmetic. It converts to a plain T* (a function taking
// `device T*`), which then assumes T's alignment again.
template <class T> struct mtl_unaligned_ptr {
  typedef conditional_t<is_same<const T, T>::value, const unsigned char, unsigned char> byte;
  typedef conditional_t<is_same<const T, T>::value, remove_cv_t<T>, mtl_unaligned_ref<T>> reference;
  byte* address;

  mtl_unaligned_ptr() = default;
  METAL_FUNC constexpr mtl_unaligned_ptr(decltype(nullptr)) : address(nullptr) {}
  METAL_FUNC mtl_unaligned_ptr(T* p) : address((byte*)p) {}
  // Casts: from any pointer, integer or other such pointer.
  template <class U> METAL_FUNC explicit mtl_unaligned_ptr(U* p) : address((byte*)p) {}
  template <class U> METAL_FUNC mtl_unaligned_ptr(const mtl_unaligned_ptr<U>& o) : address((byte*)o.address) {}
  template <class I, enable_if_t<mtl_detail::is_int<I>::value, int> = 0>
  METAL_FUNC explicit mtl_unaligned_ptr(I i) : address((byte*)(unsigned long long)i) {}

  METAL_FUNC operator T*() const { return (T*)address; }
  template <class U> METAL_FUNC explicit operator U*() const { return (U*)address; }

  METAL_FUNC reference operator*() const { return (*this)[0]; }
  template <class I> METAL_FUNC reference operator[](I i) const {
    byte* a = address + ptrdiff_t(i) * ptrdiff_t(sizeof(T));
    if constexpr (is_same<const T, T>::value) return mtl_detail::load_unaligned<remove_cv_t<T>>(a);
    else return reference(a);
  }
  METAL_FUNC auto operator->() const {
    if constexpr (is_same<const T, T>::value) return mtl_unaligned_arrow<remove_cv_t<T>>{(*this)[0]};
    else return reference(address);
  }

  template <class I> METAL_FUNC mtl_unaligned_ptr operator+(I i) const { return at(ptrdiff_t(i)); }
  template <class I> METAL_FUNC mtl_unaligned_ptr operator-(I i) const { return at(-ptrdiff_t(i)); }
  template <class I> METAL_FUNC friend mtl_unaligned_ptr operator+(I i, const mtl_unaligned_ptr& p) { return p + i; }
  METAL_FUNC ptrdiff_t operator-(const mtl_unaligned_ptr& o) const { return (address - o.address) / ptrdiff_t(sizeof(T)); }
  template <class I> METAL_FUNC mtl_unaligned_ptr& operator+=(I i) { return *this = *this + i; }
  template <class I> METAL_FUNC mtl_unaligned_ptr& operator-=(I i) { return *this = *this - i; }
  METAL_FUNC mtl_unaligned_ptr& operator++() { return *this += 1; }
  METAL_FUNC mtl_unaligned_ptr& operator--() { return *this -= 1; }
  METAL_FUNC mtl_unaligned_ptr operator++(int) { mtl_unaligned_ptr r = *this; *this += 1; return r; }
  METAL_FUNC mtl_unaligned_ptr operator--(int) { mtl_unaligned_ptr r = *this; *this -= 1; return r; }
  METAL_FUNC bool operator==(const mtl_unaligned_ptr& o) const { return address == o.address; }
  METAL_FUNC bool operator!=(const mtl_unaligned_ptr& o) const { return address != o.address; }
  METAL_FUNC bool operator<(const mtl_unaligned_ptr& o) const { return address < o.address; }
  METAL_FUNC bool operator>(const mtl_unaligned_ptr& o) const { return address > o.address; }
  METAL_FUNC bool operator<=(const mtl_unaligned_ptr& o) const { return address <= o.address; }
  METAL_FUNC bool operator>=(const mtl_unaligned_ptr& o) const { return address >= o.address; }

 private:
  METAL_FUNC mtl_unaligned_ptr at(ptrdiff_t i) const {
    mtl_unaligned_ptr r;
    r.address = address + i * ptrdiff_t(sizeof(T));
    return r;
  }
};

// What a cast to `T*` gives: T* itself unless T needs the checking pointer.
template <class T>
using mtl_cast_pointer_t =
    conditional_t<mtl_detail::unaligned_layout<remove_cv_t<T>>::wraps, mtl_unaligned_ptr<T>, T*>;

namespace mtl_detail {
// An address the optimiser cannot follow (Translator::launder_punned_addresses): what it points
// to is stored before, and read from memory after. Anything but a plain pointer passes through.
template <class P> METAL_FUNC P* opaque_address(P* p) {
#if METAL_CUDA
  asm volatile("" : "+l"(p) : : "memory");
#endif
  return p;
}
template <class Q> METAL_FUNC const Q& opaque_address(const Q& q) { return q; }

template <class P> METAL_FUNC P* address_of(P* p) { return p; }
template <class P> METAL_FUNC P* address_of(const mtl_unaligned_ptr<P>& p) { return (P*)p.address; }
template <class P, int S> METAL_FUNC P* address_of(const mtl_space_ptr<P, S>& p) { return p.p; }
template <class I, enable_if_t<is_int<I>::value, int> = 0> METAL_FUNC I address_of(I i) { return i; }
METAL_FUNC decltype(nullptr) address_of(decltype(nullptr)) { return nullptr; }
}  // namespace mtl_detail

// reinterpret_cast<device T*>(p) and const_cast: the same address as a T pointer.
template <class T, class P> METAL_FUNC mtl_cast_pointer_t<T> mtl_reinterpret_pointer(const P& p) {
  return mtl_cast_pointer_t<T>((T*)(mtl_detail::address_of(p)));
}
// static_cast<device T*>(p): C++'s conversion (void* to T*, a derived class to its base).
template <class T, class P> METAL_FUNC mtl_cast_pointer_t<T> mtl_static_pointer(const P& p) {
  return mtl_cast_pointer_t<T>(static_cast<T*>(mtl_detail::address_of(p)));
}

// The plain pointer, for a component or member of an element, or its address (the translator's
// `&q[i]`, `q[i].x = 1`): those need only the component's alignment.
template <class T> METAL_FUNC T* mtl_raw(T* p) { return p; }
template <class T> METAL_FUNC T* mtl_raw(const mtl_unaligned_ptr<T>& p) { return (T*)p.address; }

// `auto v = q[i];` (the translator): the element's value, not its reference class.
template <class T> METAL_FUNC T mtl_value(const mtl_unaligned_ref<T>& r) { return static_cast<const T&>(r); }
template <class T> METAL_FUNC T mtl_value(const T& v) { return v; }

// Passed to a function overloaded by address space (metal_address_space.h): a plain pointer.
template <int S, bool C, class T>
METAL_FUNC mtl_space_ptr<typename mtl_space_const<C, T>::type, S> mtl_space(const mtl_unaligned_ptr<T>& p) {
  return mtl_space_ptr<typename mtl_space_const<C, T>::type, S>(mtl_space_raw(), (T*)p.address);
}

}  // namespace metal
