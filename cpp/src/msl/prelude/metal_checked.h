// metalcall MSL prelude: checked mode (Device("cpu", checked=True)).
//
// The translator turns every device/constant/threadgroup pointer into
// mtl_checked<T> and every threadgroup array into mtl_checked_array<T, N>. An
// access outside the memory records a fault (the first one wins) and touches a
// scratch element instead, so the kernel never reads or writes memory it does
// not own; the runtime then raises ExecutionError with the message.
#pragma once

#if defined(METALCALL_CHECKED) && !METAL_CUDA

namespace metal {
namespace mtl_rt {

// launch, kernel_name, append, append_number and begin_fault: metal_sync.h.

// Records the first out-of-bounds access of the dispatch.
inline void fault(const char* what, long long index, unsigned long long count, unsigned long long element_size) {
  unsigned n;
  const metalcall_cpu_launch* L = begin_fault(n);
  if (!L) return;
  append(L->fault_message, L->fault_capacity, n, " ");
  append(L->fault_message, L->fault_capacity, n, what);
  append(L->fault_message, L->fault_capacity, n, ": index ");
  append_number(L->fault_message, L->fault_capacity, n, index);
  append(L->fault_message, L->fault_capacity, n, " is out of bounds (");
  append_number(L->fault_message, L->fault_capacity, n, (long long)count);
  append(L->fault_message, L->fault_capacity, n, " elements of ");
  append_number(L->fault_message, L->fault_capacity, n, (long long)element_size);
  append(L->fault_message, L->fault_capacity, n, " bytes); the access was not performed");
  L->fault_message[n] = 0;
}

// The memory of the launch's pointer arguments, so that a raw pointer into one
// (`&p[i]`, cast back to a device pointer) is checked against it again.
struct region {
  const void* base;
  unsigned long long bytes;
  const char* what;
};
static thread_local region regions[64];
static thread_local unsigned region_count = 0;
inline void add_region(const void* base, unsigned long long bytes, const char* what) {
  for (unsigned i = 0; i < region_count; ++i)
    if (regions[i].base == base) return;
  if (region_count < 64) regions[region_count++] = region{base, bytes, what};
}
// What a checked pointer made from a raw one outside every region reports (one element).
constexpr const char* kOutsideBuffers = "pointer outside every Buffer (one element)";
// The region holding `p`, or null (memory that is not an argument: one element).
inline const region* region_of(const void* p) {
  for (unsigned i = 0; i < region_count; ++i) {
    const unsigned char* b = static_cast<const unsigned char*>(regions[i].base);
    if (p >= static_cast<const void*>(b) && p < static_cast<const void*>(b + regions[i].bytes)) return &regions[i];
  }
  return nullptr;
}

// Checked mode reports an integer division by zero (metal_division.h gives the
// defined result; the runtime then raises ExecutionError).
inline void report_division_by_zero(bool remainder) {
  unsigned n;
  const metalcall_cpu_launch* L = begin_fault(n);
  if (!L) return;
  append(L->fault_message, L->fault_capacity, n,
         remainder ? ": integer remainder by zero (x % 0 gives x on the cpu backend)"
                   : ": integer division by zero (x / 0 gives 0 on the cpu backend)");
  L->fault_message[n] = 0;
}

// Where a faulting access goes instead: per worker thread, large enough for any element.
template <class T> inline T& scratch() {
  alignas(64) static thread_local unsigned char bytes[sizeof(T) < 256 ? 256 : sizeof(T)];
  return *reinterpret_cast<T*>(bytes);
}

}  // namespace mtl_rt

namespace mtl_rt {
// An index or offset: an integer, an enum, or a class that converts to an integer
// (MLX's `Int<1>{}`, an integral_constant: `src += str_y`).
template <class I> struct index_type
    : integral_constant<bool, (is_integral<remove_cv_t<I>>::value || __is_enum(I) ||
                               (__is_class(I) && is_convertible<I, long long>::value))> {};

// U* converts to T* implicitly (adds const or volatile): no cast needed.
// The bytes of an element (1 for void: a void pointer counts bytes).
template <class T> struct element_bytes { static constexpr unsigned long long value = sizeof(T); };
template <> struct element_bytes<void> { static constexpr unsigned long long value = 1; };
template <> struct element_bytes<const void> { static constexpr unsigned long long value = 1; };
template <> struct element_bytes<volatile void> { static constexpr unsigned long long value = 1; };
template <> struct element_bytes<const volatile void> { static constexpr unsigned long long value = 1; };

// An integer or enum cast to a checked pointer (`(device float*)s.addr`, `reinterpret_cast<device
// float*>(f(x))`, a template's or a macro's cast): refused by its type, as the front end refuses
// the integers its tokens show (msl/analysis/memory_rules.cpp). A checked pointer's bounds come
// from a Buffer, a variable or another pointer; an integer has none. Taken through this
// conversion, so a null pointer constant (`(device float*)0`) keeps nullptr's constructor.
template <class I> struct takes_no_integer_address : false_type {};
struct integer_address {
  template <class I, enable_if_t<is_integral<remove_cv_t<I>>::value || __is_enum(I), int> = 0>
  METAL_FUNC integer_address(I) {
    static_assert(takes_no_integer_address<I>::value,
                  "a pointer made from an integer: checked mode takes no integer as an address (it has no "
                  "bounds); pointers come from buffers, variables and other pointers, and Device(\"cpu\") without "
                  "checked=True takes GPU addresses [MSL rule: no pointers from integers]");
  }
};

// What a checked pointer reports ("kernel 'k' argument 'a'"), in a base of its own: a class with
// data members in a base and in itself is not standard-layout, nor is any class that holds one.
// holds_bounds (metal_limits.h) finds them so: a view of their bytes through a pointer cast, or
// as_type, would let a kernel rewrite a checked pointer's bounds.
struct checked_what {
  const char* mtl_what;
};
// A cast between element types U and T views bytes: neither may hold a checked pointer.
template <class U, class T> struct views_bytes {
  static constexpr bool allowed = !holds_bounds<U>::value && !holds_bounds<T>::value;
};
#define METALCALL_BYTES_VIEW_MESSAGE                                                                    \
  "a pointer cast to or from a type that holds a pointer would let the kernel rewrite a pointer or "  \
  "its bounds through the bytes [MSL rule: checked mode stays on]"

// A kernel argument's type, read from the caller's bytes (the entry point's static_assert,
// msl/targets/entry_points.cpp): one that holds a checked pointer would take its bounds from them.
// A checked pointer also has a user-provided default constructor, so a class holding one is neither
// standard-layout nor trivially default-constructible; asking both keeps plain structs that are
// merely not standard-layout (members in a base and in the class, mixed access) usable.
template <class T> struct argument_holds_bounds {
  static constexpr bool value = holds_bounds<T>::value && !__is_trivially_constructible(remove_cv_t<T>);
};
template <class T> struct argument_holds_bounds<T*> : holds_bounds<T*> {};
template <class T> struct argument_holds_bounds<T* const> : holds_bounds<T*> {};

template <class U, class T> struct pointer_converts {
  static char test(T*);
  static long test(...);
  static constexpr bool value = sizeof(test(static_cast<U*>(nullptr))) == 1;
};
}  // namespace mtl_rt

template <class T> struct mtl_checked : mtl_rt::checked_what {  // mtl_what: "kernel 'k' argument 'a'"
  T* mtl_base;                   // start of the memory
  long long mtl_offset;          // this pointer's position, in elements from mtl_base
  unsigned long long mtl_count;  // elements the memory holds

  METAL_FUNC mtl_checked() : mtl_rt::checked_what{"null pointer"}, mtl_base(nullptr), mtl_offset(0), mtl_count(0) {}
  METAL_FUNC mtl_checked(T* base, unsigned long long count, const char* what)
      : mtl_rt::checked_what{what}, mtl_base(base), mtl_offset(0), mtl_count(count) {}
  template <class U, enable_if_t<mtl_rt::pointer_converts<U, T>::value, int> = 0>
  METAL_FUNC mtl_checked(const mtl_checked<U>& o)  // float* → const float*
      : mtl_rt::checked_what{o.mtl_what}, mtl_base(o.mtl_base), mtl_offset(o.mtl_offset), mtl_count(o.mtl_count) {}
  // A pointer cast ((device uint*)p, (device float4*)p): the same bytes counted in
  // the new element type. An offset that is not a whole number of new elements
  // starts the new pointer there (it then cannot reach back before it).
  template <class U, enable_if_t<!mtl_rt::pointer_converts<U, T>::value, int> = 0>
  METAL_FUNC explicit mtl_checked(const mtl_checked<U>& o) : mtl_rt::checked_what{o.mtl_what} {
    static_assert(mtl_rt::views_bytes<U, T>::allowed, METALCALL_BYTES_VIEW_MESSAGE);
    unsigned char* bytes = (unsigned char*)o.mtl_base;
    const unsigned long long total = o.mtl_count * mtl_rt::element_bytes<U>::value;
    const long long at = o.mtl_offset * (long long)mtl_rt::element_bytes<U>::value;
    if (at % (long long)sizeof(T) == 0) {
      mtl_base = (T*)bytes;
      mtl_offset = at / (long long)sizeof(T);
      mtl_count = total / sizeof(T);
    } else {
      mtl_base = (T*)(bytes + at);
      mtl_offset = 0;
      mtl_count = at > 0 && (unsigned long long)at < total ? (total - (unsigned long long)at) / sizeof(T) : 0;
    }
  }

  // A raw pointer (`&p[i]`, `(device uint*)&p[i]`): checked again over the argument
  // it points into; a pointer to other memory (`this`, an address the translator left raw)
  // reaches one element, as `&x` does (before 2026-12-03 it had no bounds: count ~0).
  template <class U>
  METAL_FUNC mtl_checked(U* raw, enable_if_t<mtl_rt::pointer_converts<U, T>::value, int> = 0) { from_raw(raw); }
  template <class U, enable_if_t<!mtl_rt::pointer_converts<U, T>::value, int> = 0>
  METAL_FUNC explicit mtl_checked(U* raw) {
    static_assert(mtl_rt::views_bytes<U, T>::allowed, METALCALL_BYTES_VIEW_MESSAGE);
    from_raw(raw);
  }
  METAL_FUNC mtl_checked(decltype(nullptr)) : mtl_checked() {}
  // `c ? p : 0`: the literal branch (the translator's int_literal; MSL allows only 0 there).
  METAL_FUNC mtl_checked(mtl_rt::int_literal) : mtl_checked() {}
  METAL_FUNC explicit mtl_checked(mtl_rt::integer_address) : mtl_checked() {}  // refused: a static_assert

  METAL_FUNC void from_raw(const volatile void* raw) {
    const void* p = const_cast<const void*>(raw);
    const mtl_rt::region* r = mtl_rt::region_of(p);
    if (!r) {
      mtl_base = (T*)p;
      mtl_offset = 0;
      mtl_count = p ? 1 : 0;
      mtl_what = p ? mtl_rt::kOutsideBuffers : "null pointer";
      return;
    }
    const long long at = (const unsigned char*)p - (const unsigned char*)r->base;
    mtl_what = r->what;
    if (at % (long long)sizeof(T) == 0) {
      mtl_base = (T*)r->base;
      mtl_offset = at / (long long)sizeof(T);
      mtl_count = r->bytes / sizeof(T);
    } else {
      mtl_base = (T*)p;
      mtl_offset = 0;
      mtl_count = (r->bytes - (unsigned long long)at) / sizeof(T);
    }
  }

  METAL_FUNC T& at(long long i) const {
    const long long k = mtl_offset + i;
    if (k < 0 || (unsigned long long)k >= mtl_count) {
      mtl_rt::fault(mtl_what, k, mtl_count, sizeof(T));
      return mtl_rt::scratch<T>();
    }
    return mtl_base[k];
  }
  // Integer operands of any type match these exactly, so they beat the built-in
  // pointer operators reached through the conversion to T* below.
  template <class I, enable_if_t<mtl_rt::index_type<I>::value, int> = 0>
  METAL_FUNC T& operator[](I i) const { return at((long long)i); }
  METAL_FUNC T& operator*() const { return at(0); }
  METAL_FUNC T* operator->() const { return &at(0); }
  template <class I, enable_if_t<mtl_rt::index_type<I>::value, int> = 0>
  METAL_FUNC mtl_checked operator+(I i) const { mtl_checked r = *this; r.mtl_offset += (long long)i; return r; }
  template <class I, enable_if_t<mtl_rt::index_type<I>::value, int> = 0>
  METAL_FUNC mtl_checked operator-(I i) const { mtl_checked r = *this; r.mtl_offset -= (long long)i; return r; }
  METAL_FUNC long long operator-(const mtl_checked& o) const { return mtl_offset - o.mtl_offset; }
  template <class I, enable_if_t<mtl_rt::index_type<I>::value, int> = 0>
  METAL_FUNC mtl_checked& operator+=(I i) { mtl_offset += (long long)i; return *this; }
  template <class I, enable_if_t<mtl_rt::index_type<I>::value, int> = 0>
  METAL_FUNC mtl_checked& operator-=(I i) { mtl_offset -= (long long)i; return *this; }
  METAL_FUNC mtl_checked& operator++() { ++mtl_offset; return *this; }
  METAL_FUNC mtl_checked& operator--() { --mtl_offset; return *this; }
  METAL_FUNC mtl_checked operator++(int) { mtl_checked r = *this; ++mtl_offset; return r; }
  METAL_FUNC mtl_checked operator--(int) { mtl_checked r = *this; --mtl_offset; return r; }
  METAL_FUNC bool operator==(const mtl_checked& o) const { return mtl_base + mtl_offset == o.mtl_base + o.mtl_offset; }
  METAL_FUNC bool operator!=(const mtl_checked& o) const { return !(*this == o); }
  METAL_FUNC bool operator<(const mtl_checked& o) const { return mtl_base + mtl_offset < o.mtl_base + o.mtl_offset; }
  // p == nullptr (and p == 0): exact, so not ambiguous with the built-in through T*.
  METAL_FUNC bool operator==(decltype(nullptr)) const { return mtl_base + mtl_offset == nullptr; }
  METAL_FUNC bool operator!=(decltype(nullptr)) const { return mtl_base + mtl_offset != nullptr; }
  // p == &x where &x stayed a raw pointer: exact (a template, so `p == 0` still means nullptr).
  template <class U, enable_if_t<is_same<remove_cv_t<U>, remove_cv_t<T>>::value, int> = 0>
  METAL_FUNC bool operator==(U* raw) const { return mtl_base + mtl_offset == raw; }
  template <class U, enable_if_t<is_same<remove_cv_t<U>, remove_cv_t<T>>::value, int> = 0>
  METAL_FUNC bool operator!=(U* raw) const { return mtl_base + mtl_offset != raw; }
  template <class U, enable_if_t<is_same<remove_cv_t<U>, remove_cv_t<T>>::value, int> = 0>
  METAL_FUNC long long operator-(U* raw) const { return mtl_base + mtl_offset - raw; }
  METAL_FUNC explicit operator bool() const { return mtl_base != nullptr; }
  // To a plain pointer (a prelude function's `thread T*` parameter, modf's): unchecked from there.
  METAL_FUNC operator T*() const { return mtl_base + mtl_offset; }
  // A cast to a plain pointer of another type (`(thread const uchar*)&x`: a `thread` pointer
  // cast stays plain): the same address, unchecked from there.
  template <class U, enable_if_t<!is_same<U, T>::value, int> = 0>
  METAL_FUNC explicit operator U*() const {
    static_assert(mtl_rt::views_bytes<U, T>::allowed, METALCALL_BYTES_VIEW_MESSAGE);
    return (U*)(mtl_base + mtl_offset);
  }
};
template <class T, class I, enable_if_t<mtl_rt::index_type<I>::value, int> = 0>
METAL_FUNC mtl_checked<T> operator+(I i, const mtl_checked<T>& p) { return p + i; }
template <class U, class T, enable_if_t<is_same<remove_cv_t<U>, remove_cv_t<T>>::value, int> = 0>
METAL_FUNC bool operator==(U* raw, const mtl_checked<T>& p) { return p == raw; }
template <class U, class T, enable_if_t<is_same<remove_cv_t<U>, remove_cv_t<T>>::value, int> = 0>
METAL_FUNC bool operator!=(U* raw, const mtl_checked<T>& p) { return p != raw; }
template <class T> METAL_FUNC bool operator==(decltype(nullptr), const mtl_checked<T>& p) { return p == nullptr; }
template <class T> METAL_FUNC bool operator!=(decltype(nullptr), const mtl_checked<T>& p) { return p != nullptr; }

// An array (threadgroup, private, a struct's member, or constant data: a program-scope
// `constant` table, a `constexpr`/`static` one in a function): storage plus the same
// checks; the same size and alignment as T[N]. Aggregate, so that a `static
// thread_local` one needs no dynamic initialisation and `= {{1, 2, 3}}` (the translator
// adds the outer braces) works.
template <class T, unsigned long long N, int Kind> struct mtl_checked_array;
namespace mtl_rt {
// Checked rows of one layout and another kind (metal_checked_array's row conversion).
template <class A, class B> struct other_kind_rows : false_type {};
template <class U, unsigned long long M, int K1, int K2>
struct other_kind_rows<mtl_checked_array<U, M, K1>, mtl_checked_array<U, M, K2>> : bool_constant<K1 != K2> {};
// Checked arrays of one layout (kinds aside, and with Const, const elements added): a struct's
// member `float v[4]` bound to a `constant float (&t)[4]` (constant data's kind, const elements).
template <class A, class B, bool Const> struct same_array_layout : bool_constant<is_same<A, B>::value> {};
template <class A> struct same_array_layout<A, const A, true> : true_type {};
template <class T1, class T2, unsigned long long M, int K1, int K2, bool Const>
struct same_array_layout<mtl_checked_array<T1, M, K1>, mtl_checked_array<T2, M, K2>, Const>
    : same_array_layout<T1, T2, Const> {};
template <class A, class B, bool Const>
struct other_kind_array : bool_constant<!is_same<A, B>::value && same_array_layout<A, B, Const>::value> {};
}  // namespace mtl_rt

template <class T, unsigned long long N, int Kind = 0> struct mtl_checked_array {
  T mtl_data[N];
  static METAL_FUNC const char* what() {
    return Kind == 0 ? "threadgroup array" : Kind == 1 ? "private array" : Kind == 2 ? "struct array member"
                                                                                   : "constant array";
  }
  // constexpr: a `constexpr` table's elements stay constant expressions (in bounds).
  METAL_FUNC constexpr T& operator[](long long i) {
    if (i < 0 || (unsigned long long)i >= N) {
      mtl_rt::fault(what(), i, N, sizeof(T));
      return mtl_rt::scratch<T>();
    }
    return mtl_data[i];
  }
  METAL_FUNC constexpr const T& operator[](long long i) const {
    if (i < 0 || (unsigned long long)i >= N) {
      mtl_rt::fault(what(), i, N, sizeof(T));
      return mtl_rt::scratch<T>();
    }
    return mtl_data[i];
  }
  METAL_FUNC operator mtl_checked<T>() { return mtl_checked<T>(mtl_data, N, what()); }
  METAL_FUNC operator mtl_checked<const T>() const { return mtl_checked<const T>(mtl_data, N, what()); }
  // Rows of another kind (a struct member's `float m[2][4]` given to a `thread float (*t)[4]`
  // parameter, whose rows are private arrays): the same layout, each row checked as the parameter's.
  template <class R, enable_if_t<mtl_rt::other_kind_rows<T, remove_cv_t<R>>::value, int> = 0>
  METAL_FUNC operator mtl_checked<R>() { return mtl_checked<R>((R*)mtl_data, N, what()); }
  template <class R, enable_if_t<mtl_rt::other_kind_rows<T, remove_cv_t<R>>::value && is_const<R>::value, int> = 0>
  METAL_FUNC operator mtl_checked<R>() const { return mtl_checked<R>((R*)mtl_data, N, what()); }
  // The same elements as a checked array of another kind (a struct's member array given to a
  // `thread` or `constant` array reference, `constant float (&t)[4]`): the same layout.
  template <class A, enable_if_t<mtl_rt::other_kind_array<mtl_checked_array, A, false>::value, int> = 0>
  METAL_FUNC operator A&() { return *(A*)this; }
  template <class A, enable_if_t<mtl_rt::other_kind_array<mtl_checked_array, A, true>::value, int> = 0>
  METAL_FUNC operator const A&() const { return *(const A*)this; }
  // A cast to another element type (`(threadgroup const float*)float4_array`): the same
  // bytes, checked in the new element type (mtl_checked's cast constructor).
  template <class U, enable_if_t<!is_same<remove_cv_t<U>, remove_cv_t<T>>::value, int> = 0>
  METAL_FUNC explicit operator mtl_checked<U>() { return mtl_checked<U>(mtl_checked<T>(mtl_data, N, what())); }
  template <class U, enable_if_t<!is_same<remove_cv_t<U>, remove_cv_t<T>>::value, int> = 0>
  METAL_FUNC explicit operator mtl_checked<U>() const {
    return mtl_checked<U>(mtl_checked<const T>(mtl_data, N, what()));
  }
  // `t + i`: a checked pointer into the array (also where a `thread T*` parameter takes it).
  template <class I, enable_if_t<mtl_rt::index_type<I>::value, int> = 0>
  METAL_FUNC mtl_checked<T> operator+(I i) { return mtl_checked<T>(mtl_data, N, what()) + i; }
  template <class I, enable_if_t<mtl_rt::index_type<I>::value, int> = 0>
  METAL_FUNC mtl_checked<const T> operator+(I i) const { return mtl_checked<const T>(mtl_data, N, what()) + i; }
  // Decayed like an array (to a prelude function's `T*` parameter): unchecked from there.
  METAL_FUNC operator T*() { return mtl_data; }
  METAL_FUNC operator const T*() const { return mtl_data; }
  // A cast to a plain pointer of another type (`(thread const uchar*)t`: a `thread` pointer
  // cast stays plain): the same address, unchecked from there.
  template <class U, enable_if_t<!is_same<remove_cv_t<U>, remove_cv_t<T>>::value, int> = 0>
  METAL_FUNC explicit operator U*() {
    static_assert(mtl_rt::views_bytes<U, T>::allowed, METALCALL_BYTES_VIEW_MESSAGE);
    return (U*)mtl_data;
  }
  template <class U, enable_if_t<!is_same<remove_cv_t<U>, remove_cv_t<T>>::value, int> = 0>
  METAL_FUNC explicit operator U*() const {
    static_assert(mtl_rt::views_bytes<U, T>::allowed, METALCALL_BYTES_VIEW_MESSAGE);
    return (U*)mtl_data;
  }
  // Checked pointers (`for (float x : t)`, and `t.begin()[k]`, which MSL has not but C++ took:
  // plain pointers before 2026-12-03).
  METAL_FUNC mtl_checked<T> begin() { return mtl_checked<T>(mtl_data, N, what()); }
  METAL_FUNC mtl_checked<T> end() { return begin() + N; }
  METAL_FUNC mtl_checked<const T> begin() const { return mtl_checked<const T>(mtl_data, N, what()); }
  METAL_FUNC mtl_checked<const T> end() const { return begin() + N; }
};

namespace mtl_rt {
template <class T> METAL_FUNC mtl_checked<T> checked_range(T* data, unsigned long long n, const char* what) {
  return mtl_checked<T>(data, n, what);
}
// `&s` for a kernel's reference or value parameter (the translator writes it).
template <class T> METAL_FUNC mtl_checked<T> checked_address(T& r, unsigned long long count, const char* what) {
  return mtl_checked<T>(&r, count, what);
}
}  // namespace mtl_rt

namespace mtl_rt {
template <class P> struct raw_pointer : false_type {};
template <class T> struct raw_pointer<T*> : true_type {};
template <class T> struct raw_pointer<T* const> : true_type {};
template <class P> struct raw_pointer<P&> : raw_pointer<P> {};
template <class P> struct raw_pointer<P&&> : raw_pointer<P> {};

// An argument for a template's pointer parameter whose element type it deduces (`thread
// T* p`, `const device T* q`: checked mode makes them mtl_checked<T>, mtl_checked<const T>,
// and the translator wraps each call's argument): a checked pointer T deduces from.
// (By value and by reference to the array: more specialised than the last overload, so chosen.)
template <class T> METAL_FUNC mtl_checked<T> thread_arg(mtl_checked<T> p) { return p; }
template <class T, unsigned long long N, int K> METAL_FUNC mtl_checked<T> thread_arg(mtl_checked_array<T, N, K>& a) {
  return a;
}
template <class T, unsigned long long N, int K>
METAL_FUNC mtl_checked<const T> thread_arg(const mtl_checked_array<T, N, K>& a) { return a; }
// A raw pointer (`&x`: unchecked), not an array (an array of pointers passes as it is).
template <class P, enable_if_t<raw_pointer<P>::value, int> = 0>
METAL_FUNC mtl_checked<remove_pointer_t<remove_cv_t<remove_reference_t<P>>>> thread_arg(P&& p) { return p; }
template <class X, enable_if_t<!raw_pointer<X>::value, int> = 0>  // another overload's argument
METAL_FUNC X&& thread_arg(X&& x) { return static_cast<X&&>(x); }
// The same for a `const T*` parameter (mtl_checked<const T>).
template <class T> METAL_FUNC mtl_checked<const T> thread_arg_const(mtl_checked<T> p) { return p; }
template <class T, unsigned long long N, int K>
METAL_FUNC mtl_checked<const T> thread_arg_const(mtl_checked_array<T, N, K>& a) {
  return static_cast<const mtl_checked_array<T, N, K>&>(a);
}
template <class T, unsigned long long N, int K>
METAL_FUNC mtl_checked<const T> thread_arg_const(const mtl_checked_array<T, N, K>& a) { return a; }
template <class P, enable_if_t<raw_pointer<P>::value, int> = 0>
METAL_FUNC mtl_checked<const remove_pointer_t<remove_cv_t<remove_reference_t<P>>>> thread_arg_const(P&& p) {
  return p;
}
template <class X, enable_if_t<!raw_pointer<X>::value, int> = 0>
METAL_FUNC X&& thread_arg_const(X&& x) { return static_cast<X&&>(x); }
}  // namespace mtl_rt

// Atomics through a checked pointer: the element is checked, then the plain
// function runs on it (metal_atomic.h).
// The fetch-and-modify ones assert what metal_atomic.h's functions assert, here where the
// wrapper is instantiated from the user's call, so that the error names the user's line.
#define METAL_CHECKED_ATOMIC_AS(NAME, REQUIRE)                                                \
  template <class A, class... R> METAL_FUNC auto NAME(const mtl_checked<A>& p, R... r) {      \
    REQUIRE(typename mtl_detail::atomic_value_of<remove_cv_t<A>>::type, #NAME);              \
    return NAME(&p.at(0), r...);                                                              \
  }
#define METAL_ATOMIC_ANY_TYPE(V, NAME) static_assert(true, "")
#define METAL_CHECKED_ATOMIC(NAME) METAL_CHECKED_ATOMIC_AS(NAME, METAL_ATOMIC_ANY_TYPE)
METAL_CHECKED_ATOMIC(atomic_load_explicit)
METAL_CHECKED_ATOMIC(atomic_store_explicit)
METAL_CHECKED_ATOMIC(atomic_exchange_explicit)
METAL_CHECKED_ATOMIC(atomic_compare_exchange_weak_explicit)
METAL_CHECKED_ATOMIC(atomic_compare_exchange_strong_explicit)
METAL_CHECKED_ATOMIC_AS(atomic_fetch_add_explicit, METAL_ATOMIC_ADDABLE_ONLY)
METAL_CHECKED_ATOMIC_AS(atomic_fetch_sub_explicit, METAL_ATOMIC_ADDABLE_ONLY)
METAL_CHECKED_ATOMIC_AS(atomic_fetch_and_explicit, METAL_ATOMIC_INTEGER_ONLY)
METAL_CHECKED_ATOMIC_AS(atomic_fetch_or_explicit, METAL_ATOMIC_INTEGER_ONLY)
METAL_CHECKED_ATOMIC_AS(atomic_fetch_xor_explicit, METAL_ATOMIC_INTEGER_ONLY)
METAL_CHECKED_ATOMIC_AS(atomic_fetch_min_explicit, METAL_ATOMIC_INTEGER_ONLY)
METAL_CHECKED_ATOMIC_AS(atomic_fetch_max_explicit, METAL_ATOMIC_INTEGER_ONLY)
METAL_CHECKED_ATOMIC(atomic_min_explicit)
METAL_CHECKED_ATOMIC(atomic_max_explicit)
#undef METAL_CHECKED_ATOMIC
#undef METAL_CHECKED_ATOMIC_AS
#undef METAL_ATOMIC_ANY_TYPE
// `expected` through a checked `thread T*` (a helper function's parameter): checked, then
// the plain function runs on its element.
#define METAL_CHECKED_EXPECTED(NAME)                                                               \
  template <class A, class T, class... R> METAL_FUNC auto NAME(A* p, const mtl_checked<T>& e, R... r) { \
    return NAME(p, &e.at(0), r...);                                                                \
  }
METAL_CHECKED_EXPECTED(atomic_compare_exchange_weak_explicit)
METAL_CHECKED_EXPECTED(atomic_compare_exchange_strong_explicit)
#undef METAL_CHECKED_EXPECTED

}  // namespace metal

#include "metal_checked_addresses.h"  // void pointers, `&t[i]` and `&x`

#endif
