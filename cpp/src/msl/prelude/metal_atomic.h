// metalcall MSL prelude: atomic types and the *_explicit functions.
//
// atomic<T> wraps one T, so `device atomic_uint*` has the layout of `device uint*`
// and a NumPy uint32 array binds to it. Threadgroup atomics use the same code.
#pragma once

namespace metal {

enum memory_order {
  memory_order_relaxed = 0,
  memory_order_acquire = 2,
  memory_order_release = 3,
  memory_order_acq_rel = 4,
  memory_order_seq_cst = 5,
};

namespace mtl_detail {
// The value types of MSL's atomics (specification section 6.15.4): int, uint, bool, float (MSL
// 3.0) and the 64-bit ulong (MSL 2.4); long also, for atomic_long. Others (half, short, char,
// vectors) have no atomic type in Metal: refused, as Metal's compiler refuses them.
template <class T> struct atomic_value
    : integral_constant<bool, is_same<T, int>::value || is_same<T, unsigned int>::value || is_same<T, bool>::value ||
                                  is_same<T, float>::value || is_same<T, unsigned long>::value ||
                                  is_same<T, long>::value || is_same<T, unsigned long long>::value ||
                                  is_same<T, long long>::value> {};
// What the fetch-and-modify functions take: and/or/xor/min/max atomic_int and atomic_uint only;
// add and sub atomic_float too. atomic_bool has none; 64-bit atomics only atomic_min/max_explicit.
template <class T> struct atomic_integer : integral_constant<bool, is_same<T, int>::value || is_same<T, unsigned int>::value> {};
template <class T> struct atomic_addable : integral_constant<bool, atomic_integer<T>::value || is_same<T, float>::value> {};
}  // namespace mtl_detail
// V: the atomic's value type (metal_checked.h asserts the same in its wrappers, so that checked
// mode reports the user's line too).
#define METAL_ATOMIC_INTEGER_ONLY(V, NAME)                                                              \
  static_assert(::metal::mtl_detail::atomic_integer<V>::value,                                          \
                NAME " takes atomic_int or atomic_uint only (MSL has no such function for atomic_bool, " \
                     "atomic_float or 64-bit atomics)")
#define METAL_ATOMIC_ADDABLE_ONLY(V, NAME)                                                                   \
  static_assert(::metal::mtl_detail::atomic_addable<V>::value,                                               \
                NAME " takes atomic_int, atomic_uint or atomic_float only (MSL has no such function for " \
                     "atomic_bool or 64-bit atomics)")

template <class T> struct atomic;
namespace mtl_detail {
// The value type of the atomic a pointer points to; pointers to other types pass the checks above
// (the atomic function then refuses them itself).
struct not_an_atomic {};
template <class A> struct atomic_value_of { typedef not_an_atomic type; };
template <class T> struct atomic_value_of<atomic<T>> { typedef T type; };
template <class T> struct atomic_value_of<const atomic<T>> { typedef T type; };
template <class T> struct atomic_value_of<volatile atomic<T>> { typedef T type; };
template <class T> struct atomic_value_of<const volatile atomic<T>> { typedef T type; };
template <> struct atomic_integer<not_an_atomic> : true_type {};
template <> struct atomic_addable<not_an_atomic> : true_type {};
}  // namespace mtl_detail

template <class T> struct atomic {
  static_assert(mtl_detail::atomic_value<T>::value,
                "MSL's atomic<T> holds int, uint, bool, float or ulong only (atomic_int, atomic_uint, atomic_bool, "
                "atomic_float, atomic_ulong)");
  T mtl_value;
};
typedef atomic<int> atomic_int;
typedef atomic<unsigned int> atomic_uint;
typedef atomic<bool> atomic_bool;
typedef atomic<float> atomic_float;
typedef atomic<unsigned long> atomic_ulong;
typedef atomic<long> atomic_long;

namespace mtl_detail {
// The value parameter must not take part in deduction: atomic_fetch_add_explicit(
// &counts[i], 1, ...) on an atomic_uint passes an int literal.
template <class T> struct no_deduce { typedef T type; };
}  // namespace mtl_detail

#if METAL_CUDA

template <class T> METAL_FUNC T atomic_load_explicit(const volatile atomic<T>* o, memory_order) {
  return *reinterpret_cast<const volatile T*>(&o->mtl_value);
}
template <class T>
METAL_FUNC void atomic_store_explicit(volatile atomic<T>* o, typename mtl_detail::no_deduce<T>::type v, memory_order) {
  *reinterpret_cast<volatile T*>(&o->mtl_value) = v;
}
template <class T>
METAL_FUNC T atomic_exchange_explicit(volatile atomic<T>* o, typename mtl_detail::no_deduce<T>::type v, memory_order) {
  return atomicExch(const_cast<T*>(&o->mtl_value), v);
}
template <class T>
METAL_FUNC T atomic_fetch_add_explicit(volatile atomic<T>* o, typename mtl_detail::no_deduce<T>::type v, memory_order) {
  METAL_ATOMIC_ADDABLE_ONLY(T, "atomic_fetch_add_explicit");
  return atomicAdd(const_cast<T*>(&o->mtl_value), v);
}
template <class T>
METAL_FUNC T atomic_fetch_sub_explicit(volatile atomic<T>* o, typename mtl_detail::no_deduce<T>::type v, memory_order) {
  METAL_ATOMIC_ADDABLE_ONLY(T, "atomic_fetch_sub_explicit");
  // x - v is x + (-v) in IEEE arithmetic (-0.0 - 0.0 is -0.0, where -0.0 + (0.0 - 0.0) was +0.0);
  // integers through atomicSub (0 - INT_MIN would overflow int).
  if constexpr (mtl_detail::is_float<T>::value) return atomicAdd(const_cast<T*>(&o->mtl_value), -v);
  else return atomicSub(const_cast<T*>(&o->mtl_value), v);
}
template <class T>
METAL_FUNC T atomic_fetch_min_explicit(volatile atomic<T>* o, typename mtl_detail::no_deduce<T>::type v, memory_order) {
  METAL_ATOMIC_INTEGER_ONLY(T, "atomic_fetch_min_explicit");
  return atomicMin(const_cast<T*>(&o->mtl_value), v);
}
template <class T>
METAL_FUNC T atomic_fetch_max_explicit(volatile atomic<T>* o, typename mtl_detail::no_deduce<T>::type v, memory_order) {
  METAL_ATOMIC_INTEGER_ONLY(T, "atomic_fetch_max_explicit");
  return atomicMax(const_cast<T*>(&o->mtl_value), v);
}

// A fence of the thread's memory operations, at least as wide as the scope asks: the block's
// for a threadgroup or less; beyond (device, and MLX's `static_cast<thread_scope>(3)`, which
// it means as system scope), the system's, so that the host sees managed memory in order.
METAL_FUNC void atomic_thread_fence(mem_flags, memory_order, thread_scope scope = thread_scope::thread_scope_device) {
  if (scope <= thread_scope::thread_scope_threadgroup) __threadfence_block();
  else __threadfence_system();
}
template <class T>
METAL_FUNC T atomic_fetch_and_explicit(volatile atomic<T>* o, typename mtl_detail::no_deduce<T>::type v, memory_order) {
  METAL_ATOMIC_INTEGER_ONLY(T, "atomic_fetch_and_explicit");
  return atomicAnd(const_cast<T*>(&o->mtl_value), v);
}
template <class T>
METAL_FUNC T atomic_fetch_or_explicit(volatile atomic<T>* o, typename mtl_detail::no_deduce<T>::type v, memory_order) {
  METAL_ATOMIC_INTEGER_ONLY(T, "atomic_fetch_or_explicit");
  return atomicOr(const_cast<T*>(&o->mtl_value), v);
}
template <class T>
METAL_FUNC T atomic_fetch_xor_explicit(volatile atomic<T>* o, typename mtl_detail::no_deduce<T>::type v, memory_order) {
  METAL_ATOMIC_INTEGER_ONLY(T, "atomic_fetch_xor_explicit");
  return atomicXor(const_cast<T*>(&o->mtl_value), v);
}
template <class T>
METAL_FUNC bool atomic_compare_exchange_weak_explicit(volatile atomic<T>* o, T* expected,
                                                      typename mtl_detail::no_deduce<T>::type desired, memory_order,
                                                      memory_order) {
  const T old = atomicCAS(const_cast<T*>(&o->mtl_value), *expected, desired);
  const bool ok = old == *expected;
  *expected = old;
  return ok;
}
// atomic_float: CUDA's atomicCAS has no float overload; compare and swap the bits (C++ and
// MSL compare the representation, so a NaN that is expected matches).
METAL_FUNC bool atomic_compare_exchange_weak_explicit(volatile atomic<float>* o, float* expected, float desired,
                                                      memory_order, memory_order) {
  const unsigned int want = __float_as_uint(*expected);
  const unsigned int old = atomicCAS(reinterpret_cast<unsigned int*>(const_cast<float*>(&o->mtl_value)), want,
                                     __float_as_uint(desired));
  *expected = __uint_as_float(old);
  return old == want;
}

// 64-bit atomics (MSL 2.4; Apple8 Macs and Apple9 GPUs): atomic_ulong takes min and max, which
// return nothing. CUDA's 64-bit atomicMin/Max take unsigned long long, another type than ulong.
METAL_FUNC void atomic_min_explicit(volatile atomic<unsigned long>* o, unsigned long v, memory_order) {
  atomicMin(reinterpret_cast<unsigned long long*>(const_cast<unsigned long*>(&o->mtl_value)), (unsigned long long)v);
}
METAL_FUNC void atomic_max_explicit(volatile atomic<unsigned long>* o, unsigned long v, memory_order) {
  atomicMax(reinterpret_cast<unsigned long long*>(const_cast<unsigned long*>(&o->mtl_value)), (unsigned long long)v);
}

// atomic_bool: CUDA has no byte atomics; swap the byte inside its aligned 32-bit word.
namespace mtl_detail {
template <class F> METAL_FUNC bool bool_rmw(volatile atomic<bool>* o, F f) {
  const unsigned long long address = reinterpret_cast<unsigned long long>(&o->mtl_value);
  unsigned* word = reinterpret_cast<unsigned*>(address & ~3ull);
  const unsigned shift = unsigned(address & 3ull) * 8u;
  unsigned old = *reinterpret_cast<volatile unsigned*>(word);
  for (;;) {
    const bool current = ((old >> shift) & 0xffu) != 0;
    bool desired;
    if (!f(current, &desired)) return current;
    const unsigned next = (old & ~(0xffu << shift)) | (unsigned(desired) << shift);
    const unsigned seen = atomicCAS(word, old, next);
    if (seen == old) return current;
    old = seen;
  }
}
struct bool_set {
  bool v;
  METAL_FUNC bool operator()(bool, bool* d) const { *d = v; return true; }
};
struct bool_cas {
  bool expected, v;
  METAL_FUNC bool operator()(bool c, bool* d) const { *d = v; return c == expected; }
};
}  // namespace mtl_detail
METAL_FUNC bool atomic_exchange_explicit(volatile atomic<bool>* o, bool v, memory_order) {
  return mtl_detail::bool_rmw(o, mtl_detail::bool_set{v});
}
METAL_FUNC bool atomic_compare_exchange_weak_explicit(volatile atomic<bool>* o, bool* expected, bool desired,
                                                      memory_order, memory_order) {
  const bool old = mtl_detail::bool_rmw(o, mtl_detail::bool_cas{*expected, desired});
  const bool ok = old == *expected;
  *expected = old;
  return ok;
}

#else

namespace mtl_detail {
inline constexpr int gcc_order(memory_order o) {
  return o == memory_order_relaxed ? __ATOMIC_RELAXED
       : o == memory_order_acquire ? __ATOMIC_ACQUIRE
       : o == memory_order_release ? __ATOMIC_RELEASE
       : o == memory_order_acq_rel ? __ATOMIC_ACQ_REL
                                   : __ATOMIC_SEQ_CST;
}
// Read-modify-write through compare-and-swap, for operations the compiler has no
// builtin for (float add, min, max).
template <class T, class F> inline T cas_loop(volatile atomic<T>* o, F f, memory_order order) {
  T* p = const_cast<T*>(&o->mtl_value);
  T old;
  __atomic_load(p, &old, __ATOMIC_RELAXED);
  T desired = f(old);
  while (!__atomic_compare_exchange(p, &old, &desired, true, gcc_order(order), __ATOMIC_RELAXED)) desired = f(old);
  return old;
}
}  // namespace mtl_detail

template <class T> inline T atomic_load_explicit(const volatile atomic<T>* o, memory_order order) {
  T v;
  __atomic_load(const_cast<T*>(&o->mtl_value), &v, mtl_detail::gcc_order(order));
  return v;
}
template <class T>
inline void atomic_store_explicit(volatile atomic<T>* o, typename mtl_detail::no_deduce<T>::type v, memory_order order) {
  __atomic_store(const_cast<T*>(&o->mtl_value), &v, mtl_detail::gcc_order(order));
}
template <class T>
inline T atomic_exchange_explicit(volatile atomic<T>* o, typename mtl_detail::no_deduce<T>::type v, memory_order order) {
  T old;
  __atomic_exchange(const_cast<T*>(&o->mtl_value), &v, &old, mtl_detail::gcc_order(order));
  return old;
}
template <class T>
inline bool atomic_compare_exchange_weak_explicit(volatile atomic<T>* o, T* expected,
                                                  typename mtl_detail::no_deduce<T>::type desired,
                                                  memory_order success, memory_order failure) {
  return __atomic_compare_exchange(const_cast<T*>(&o->mtl_value), expected, &desired, true,
                                   mtl_detail::gcc_order(success), mtl_detail::gcc_order(failure));
}
template <class T>
inline bool atomic_compare_exchange_strong_explicit(volatile atomic<T>* o, T* expected,
                                                    typename mtl_detail::no_deduce<T>::type desired,
                                                    memory_order success, memory_order failure) {
  return __atomic_compare_exchange(const_cast<T*>(&o->mtl_value), expected, &desired, false,
                                   mtl_detail::gcc_order(success), mtl_detail::gcc_order(failure));
}

// fetch_add/sub: integer builtins, a CAS loop for float.
template <class T>
inline T atomic_fetch_add_explicit(volatile atomic<T>* o, typename mtl_detail::no_deduce<T>::type v, memory_order order) {
  METAL_ATOMIC_ADDABLE_ONLY(T, "atomic_fetch_add_explicit");
  if constexpr (mtl_detail::is_float<T>::value) return mtl_detail::cas_loop(o, [v](T a) { return a + v; }, order);
  else return __atomic_fetch_add(const_cast<T*>(&o->mtl_value), v, mtl_detail::gcc_order(order));
}
template <class T>
inline T atomic_fetch_sub_explicit(volatile atomic<T>* o, typename mtl_detail::no_deduce<T>::type v, memory_order order) {
  METAL_ATOMIC_ADDABLE_ONLY(T, "atomic_fetch_sub_explicit");
  if constexpr (mtl_detail::is_float<T>::value) return mtl_detail::cas_loop(o, [v](T a) { return a - v; }, order);
  else return __atomic_fetch_sub(const_cast<T*>(&o->mtl_value), v, mtl_detail::gcc_order(order));
}
template <class T>
inline T atomic_fetch_min_explicit(volatile atomic<T>* o, typename mtl_detail::no_deduce<T>::type v, memory_order order) {
  METAL_ATOMIC_INTEGER_ONLY(T, "atomic_fetch_min_explicit");
  return mtl_detail::cas_loop(o, [v](T a) { return v < a ? v : a; }, order);
}
template <class T>
inline T atomic_fetch_max_explicit(volatile atomic<T>* o, typename mtl_detail::no_deduce<T>::type v, memory_order order) {
  METAL_ATOMIC_INTEGER_ONLY(T, "atomic_fetch_max_explicit");
  return mtl_detail::cas_loop(o, [v](T a) { return v > a ? v : a; }, order);
}
template <class T>
inline T atomic_fetch_and_explicit(volatile atomic<T>* o, typename mtl_detail::no_deduce<T>::type v, memory_order order) {
  METAL_ATOMIC_INTEGER_ONLY(T, "atomic_fetch_and_explicit");
  return __atomic_fetch_and(const_cast<T*>(&o->mtl_value), v, mtl_detail::gcc_order(order));
}
template <class T>
inline T atomic_fetch_or_explicit(volatile atomic<T>* o, typename mtl_detail::no_deduce<T>::type v, memory_order order) {
  METAL_ATOMIC_INTEGER_ONLY(T, "atomic_fetch_or_explicit");
  return __atomic_fetch_or(const_cast<T*>(&o->mtl_value), v, mtl_detail::gcc_order(order));
}
template <class T>
inline T atomic_fetch_xor_explicit(volatile atomic<T>* o, typename mtl_detail::no_deduce<T>::type v, memory_order order) {
  METAL_ATOMIC_INTEGER_ONLY(T, "atomic_fetch_xor_explicit");
  return __atomic_fetch_xor(const_cast<T*>(&o->mtl_value), v, mtl_detail::gcc_order(order));
}

// 64-bit atomics (MSL 2.4; Apple8 Macs and Apple9 GPUs): atomic_ulong takes min and max, which
// return nothing.
inline void atomic_min_explicit(volatile atomic<unsigned long>* o, unsigned long v, memory_order order) {
  mtl_detail::cas_loop(o, [v](unsigned long a) { return v < a ? v : a; }, order);
}
inline void atomic_max_explicit(volatile atomic<unsigned long>* o, unsigned long v, memory_order order) {
  mtl_detail::cas_loop(o, [v](unsigned long a) { return v > a ? v : a; }, order);
}

inline void atomic_thread_fence(mem_flags, memory_order order, thread_scope = thread_scope::thread_scope_device) {
  __atomic_thread_fence(mtl_detail::gcc_order(order));
}

#endif

// A pointer tagged with its address space (a function overloaded by address space passes its
// parameter on: naga's atomics helpers take `device A*` and `threadgroup A*`): the atomic
// functions act on what it points to.
#define METAL_ATOMIC_TAGGED(F)                                                                 \
  template <class T, int S, class... A>                                                        \
  METAL_FUNC auto F(const mtl_space_ptr<T, S>& p, A... a)->decltype(F(static_cast<T*>(p), a...)) { \
    return F(static_cast<T*>(p), a...);                                                       \
  }
METAL_ATOMIC_TAGGED(atomic_load_explicit)
METAL_ATOMIC_TAGGED(atomic_store_explicit)
METAL_ATOMIC_TAGGED(atomic_exchange_explicit)
METAL_ATOMIC_TAGGED(atomic_compare_exchange_weak_explicit)
METAL_ATOMIC_TAGGED(atomic_compare_exchange_strong_explicit)
METAL_ATOMIC_TAGGED(atomic_fetch_add_explicit)
METAL_ATOMIC_TAGGED(atomic_fetch_sub_explicit)
METAL_ATOMIC_TAGGED(atomic_fetch_min_explicit)
METAL_ATOMIC_TAGGED(atomic_fetch_max_explicit)
METAL_ATOMIC_TAGGED(atomic_fetch_and_explicit)
METAL_ATOMIC_TAGGED(atomic_fetch_or_explicit)
METAL_ATOMIC_TAGGED(atomic_fetch_xor_explicit)
METAL_ATOMIC_TAGGED(atomic_min_explicit)
METAL_ATOMIC_TAGGED(atomic_max_explicit)
#undef METAL_ATOMIC_TAGGED

}  // namespace metal
