// metalcall MSL prelude: the stop check the translator writes at the top of every loop
// body (msl/passes/loop_stops.hpp), so that running kernels can be stopped: Ctrl-C,
// Completion.wait(timeout=...) and a device's kernel_timeout reach them. MSL has no goto
// and no recursion, so every long run goes around a loop.
//
// __METALCALL_LOOP_STATE(n) opens the loop's block (a counter on CUDA, nothing on the CPU);
// __METALCALL_LOOP_CHECK(n) starts each iteration; __METALCALL_LOOP_NESTED(outer, n) follows a
// loop nested in another of the same function (CUDA: the nest's count; nothing on the CPU,
// where a loop checks each iteration or, strip-mined, at least once per entry). A loop run in
// strips (msl/passes/loop_strips.hpp) starts each strip with __METALCALL_STRIP_CHECK(n) instead,
// and checks nothing in the strip. None runs during constant
// evaluation (a loop in a constexpr function stays constant).
#pragma once
#include "metal_type_traits.h"  // mtl_declval (the loop strips), in every prelude of parts too

#if defined(__has_builtin)
#if __has_builtin(__builtin_is_constant_evaluated)
#define __METALCALL_AT_RUN_TIME (!__builtin_is_constant_evaluated())
#endif
#endif
#ifndef __METALCALL_AT_RUN_TIME
#define __METALCALL_AT_RUN_TIME true
#endif

// defines={"METALCALL_LOOP_STOP_CHECKS": "0"} (a prelude option: the caller's, never the
// source's) builds the loops without their checks and their strips, as the loops were written,
// to measure what both cost (benchmarks/bench_stop_checks.py): the translator then writes
// neither, and the macros below are empty besides. Such a kernel cannot be stopped inside its
// loops.
#if defined(METALCALL_LOOP_STOP_CHECKS) && !METALCALL_LOOP_STOP_CHECKS
#define __METALCALL_CHECKS_ON 0
#else
#define __METALCALL_CHECKS_ON 1
#endif

#if METAL_CUDA

// A word in device memory per device that the host raises to the ticket of the latest
// submission to stop (backends/cuda/cuda_queue.cpp, by a copy on another stream while the
// kernel runs); each block keeps its launch's ticket in shared memory (written by every
// thread at entry). Reading that word stalls the warp for an L2 round trip, so only every
// 1024th iteration of a loop reads it; a thread whose submission is stopped exits (PTX
// `exit`: barriers it holds up are released).
//
// The check reads 32 bits of each, the low halves of the host's 64-bit tickets, compared
// modulo 2^32 (the host keeps every running ticket within 2^30 of the word and gives no
// ticket whose low half is 0, cuda_queue.cpp); the word's address is in the constant bank,
// which the kernel reads into uniform registers. A 64-bit ticket or a pointer held in device
// memory put register pairs into the kernel for the check, and ptxas then placed the FMA
// loop's two factors in registers of one bank (benchmarks/bench_stop_checks.py's FMA loop:
// 25% slower on the H200 with its loop unchanged, docs/design.md).
extern "C" {
__constant__ const volatile unsigned* __metalcall_stop_word = nullptr;
}
__shared__ unsigned __metalcall_ticket;
namespace metal {
namespace mtl_rt {
__device__ __noinline__ void stop_check() {
  const volatile unsigned* word = __metalcall_stop_word;
  const unsigned ticket = __metalcall_ticket;
  if (word && ticket != 0u && int(*word - ticket) >= 0) asm volatile("exit;");
}
}  // namespace mtl_rt
}  // namespace metal
// The counter counts a loop's iterations since its last check, and a nest's: an inner loop
// adds its count to its outer loop's as it ends (__METALCALL_LOOP_NESTED), so a nest of short
// loops (three of 1000) checks every ~1024 iterations of its innermost body too, not once
// per 10^9. The inner loop's own counter starts at 0, so a short inner loop unrolled in full
// still folds its checks away and costs one addition.
#define __METALCALL_LOOP_STATE(n) unsigned n = 0u;
#define __METALCALL_LOOP_CHECK(n)                                              \
  if (__METALCALL_AT_RUN_TIME && __builtin_expect(++n >= 1024u, 0)) {         \
    n = 0u;                                                                    \
    ::metal::mtl_rt::stop_check();                                             \
  }
#define __METALCALL_LOOP_NESTED(outer, n) outer += n;
// A loop in strips (innermost loops: loop_strips.hpp) checks between strips: every strip but the
// last runs exactly __METALCALL_STRIP_LENGTH iterations, so the check at each strip's start but the
// first's comes once per 1024 iterations, and the strip's own loop holds nothing of it (no count:
// NVRTC unrolls and compiles it as the loop as written). The counter counts strips, which a nest's
// outer loop adds to its own count (a short inner loop: one per run).
#define __METALCALL_STRIP_LENGTH 1024
#define __METALCALL_STRIP_CHECK(n)                                                         \
  {                                                                                        \
    if (__METALCALL_AT_RUN_TIME && __builtin_expect(n != 0u, 0)) ::metal::mtl_rt::stop_check(); \
    n = 1u;                                                                                \
  }

#else

// The process's stop word: not 0 while some kernel must stop (or check in). The runtime
// points the object's __metalcall_stop at its word and check when it loads the object
// (backends/cpu/kernel_stop.hpp); check() returns, or leaves the kernel for good.
namespace metal {
namespace mtl_rt {
inline const volatile unsigned no_stop_word = 0;
inline void no_stop_check() {}
}  // namespace mtl_rt
}  // namespace metal
extern "C" {
__attribute__((visibility("default"))) metalcall_cpu_stop __metalcall_stop = {&::metal::mtl_rt::no_stop_word,
                                                                              &::metal::mtl_rt::no_stop_check};
}
// A loop that does not run in strips (loop_strips.hpp: one that does not count by value, a
// `do` loop, a condition with an effect, a loop with a loop inside) counts its iterations, and
// its nest's, as on CUDA, and reads the word every 4096th: a counter in a register costs a short
// loop (a grid-stride loop of 4 iterations a thread) less than a strip and a load per entry, and
// neither form vectorises (two exits, or a call). The counter counts down what is left before the
// next check (one decrement and a branch per iteration, which x86-64 fuses: 4-5% on that loop
// where counting up cost 6-7%, benchmarks/RESULTS.md); an inner loop takes what it used from its
// outer loop's budget as it ends.
#define __METALCALL_LOOP_STATE(n) int n = 4096;
#define __METALCALL_LOOP_NESTED(outer, n) outer -= 4096 - n;
// The call into the runtime goes through a function of the object's own, out of line: with
// clang (the backend's compiler where it finds one) in the preserve_most convention, which
// leaves the general registers to the callee, so that the code around a check keeps its values
// in registers (a plain call's clobbers made a grid-stride kernel's thread loop spill its
// index: +11% per call, bench_stop_check_objects.py --cxx clang++). check() may leave the kernel
// by longjmp, which restores what its setjmp saved whatever the frames between.
#if defined(__clang__) && (defined(__x86_64__) || defined(__aarch64__))
#define __METALCALL_STOP_CALL __attribute__((noinline, cold, preserve_most))
#else
#define __METALCALL_STOP_CALL __attribute__((noinline, cold))
#endif
namespace metal {
namespace mtl_rt {
__METALCALL_STOP_CALL inline void stop_call() { ::__metalcall_stop.check(); }
}  // namespace mtl_rt
}  // namespace metal
#define __METALCALL_STOP_WORD_CHECK() \
  if (__builtin_expect(*::__metalcall_stop.word != 0u, 0)) ::metal::mtl_rt::stop_call();
#define __METALCALL_LOOP_CHECK(n)                                              \
  if (__METALCALL_AT_RUN_TIME && __builtin_expect(--n <= 0, 0)) {             \
    n = 4096;                                                                  \
    __METALCALL_STOP_WORD_CHECK()                                              \
  }
// A loop in strips checks at the start of every strip but the first (one load of a word in the
// cache; every strip but the last runs __METALCALL_STRIP_LENGTH iterations), nothing in the strip:
// a loop that ends within one strip (a short loop entered often) reads no word at all. Each strip
// uses one unit of the budget, which a nest's outer loop takes from its own.
#define __METALCALL_STRIP_LENGTH 4096
#define __METALCALL_STRIP_CHECK(n)                                                     \
  {                                                                                    \
    if (__METALCALL_AT_RUN_TIME && __builtin_expect(n != 4096, 0)) { __METALCALL_STOP_WORD_CHECK() } \
    n = 4095;                                                                          \
  }

#endif

// defines={"METALCALL_LOOP_STRIP": "3"} (a prelude option for tests) makes strips that short, so
// that a test crosses many strip ends (tests/reliability/test_loop_strips.py).
#if defined(METALCALL_LOOP_STRIP)
#undef __METALCALL_STRIP_LENGTH
#define __METALCALL_STRIP_LENGTH (METALCALL_LOOP_STRIP)
#endif

// A strip of a strip-mined loop (msl/passes/loop_strips.hpp) whose condition is `v OP x` and
// whose only step is ++v or --v (v declared by the loop, written nowhere else): the strip
// ends when v passes a bound __METALCALL_STRIP_LENGTH steps on, so the strip's own loop has one
// exit test on its induction variable, which compilers vectorise and unroll (a second counter
// makes a loop of two exits, which g++ does not vectorise). Op: 0 `<`, 1 `<=` (counting up),
// 2 `>`, 3 `>=` (down). Only where the comparison is in v's own type (no promotion: v never
// wraps while the condition holds; `<=` and `>=` only for signed v, whose wrap would be
// undefined) and, else, a counter. Either way each strip runs at least one iteration while the
// condition holds, and at most __METALCALL_STRIP_LENGTH: the same iterations in the same order
// as the loop as written. Without checks a strip never ends before its loop does
// (__METALCALL_STRIP_MORE is true): the loop as written, run as one strip.
namespace metal {
namespace mtl_detail {
template <class T, class X, class = void> struct strip_same_type : false_type {};
template <class T, class X>
struct strip_same_type<T, X, decltype(void(mtl_declval<T>() + mtl_declval<X>()))>
    : is_same<decltype(mtl_declval<T>() + mtl_declval<X>()), T> {};
}  // namespace mtl_detail
// Not in mtl_rt: that name marks code that makes threads wait for each other
// (msl/analysis/sync_reachability.hpp), and a kernel with a strip would run as fibers.
namespace mtl_strip {
struct upto_t {};  // the bounded form's constructors (below)
// S: the type of v + step for `v += step` (`v -= step` counting down), T for steps of one.
template <int Op, class T, class X, class S = T>
struct loop_strip {
  static constexpr bool by_value = mtl_detail::is_int<T>::value && mtl_detail::strip_same_type<T, X>::value &&
                                   is_same<S, T>::value && (Op == 0 || Op == 2 || mtl_detail::signed_int<T>::value);
  static constexpr unsigned long long hi_bits =
      ~0ull >> (64 - 8 * (sizeof(T) <= 8 ? sizeof(T) : 8) + (mtl_detail::signed_int<T>::value ? 1 : 0));
  T end;
  unsigned count;
  bool by_count;  // a step this strip cannot end on by value: it counts
  using Bound = remove_cv_t<remove_reference_t<X>>;
  T lim = T();            // the bounded form: the nearer of x and end
  Bound bound = Bound();  // the bounded form: x
  METAL_FUNC constexpr explicit loop_strip(T v) : end(v), count(0u), by_count(false) {
    if constexpr (by_value && __METALCALL_CHECKS_ON) {
      constexpr T hi = T(hi_bits), lo = mtl_detail::signed_int<T>::value ? T(-hi - 1) : T(0);
      constexpr T steps = T(Op == 1 || Op == 3 ? __METALCALL_STRIP_LENGTH - 1 : __METALCALL_STRIP_LENGTH);
      if constexpr (Op <= 1) end = v <= T(hi - steps) ? T(v + steps) : hi;
      else end = v >= T(lo + steps) ? T(v - steps) : lo;
    }
  }
  // A step other than one: the strip ends L steps on, where the step is above 0 and the end
  // lies inside T (so that v cannot wrap within the strip); else it counts its iterations.
  METAL_FUNC constexpr loop_strip(T v, S step) : end(v), count(0u), by_count(true) {
    if constexpr (by_value && __METALCALL_CHECKS_ON) {
      constexpr T hi = T(hi_bits), lo = mtl_detail::signed_int<T>::value ? T(-hi - 1) : T(0);
      constexpr T steps = T(Op == 1 || Op == 3 ? __METALCALL_STRIP_LENGTH - 1 : __METALCALL_STRIP_LENGTH);
      using U = unsigned long long;  // distances without overflow: they fit, T's may not
      const U room = Op <= 1 ? U(hi) - U(v) : U(v) - U(lo);
      if (step > T(0) && U(step) <= room / U(steps)) {  // room >= step * steps; a division by a constant
        end = T(Op <= 1 ? U(v) + U(step) * U(steps) : U(v) - U(step) * U(steps));
        by_count = false;
      }
    }
  }
  // A loop whose bound x cannot change while it runs (loop_strips.hpp: a literal, a value the
  // function never writes, data in the constant address space): the strip's test is one
  // comparison with the nearer of x and the strip's end (`v < lim`), as the loop's own test,
  // so that compilers count its iterations as they do the loop's (NVRTC unrolls it with one
  // exit test, g++ knows its trip count). Where the strip counts, `v OP x` as written.
  METAL_FUNC constexpr loop_strip(upto_t, T v, Bound x) : loop_strip(v) { bounded(x); }
  METAL_FUNC constexpr loop_strip(upto_t, T v, S step, Bound x) : loop_strip(v, step) { bounded(x); }
  METAL_FUNC constexpr void bounded(Bound x) {
    bound = x;
    lim = end;
    if constexpr (by_value && __METALCALL_CHECKS_ON) {
      if (Op <= 1 ? T(x) < end : T(x) > end) lim = T(x);
    }
  }
  METAL_FUNC constexpr bool within(T v) {
    if constexpr (!__METALCALL_CHECKS_ON || !by_value) return test(v, bound) && next(v);
    else if (by_count) return test(v, bound) && next(v);
    else return test(v, lim);
  }
  template <class B>
  METAL_FUNC static constexpr bool test(T v, B x) {
    if constexpr (Op == 0) return v < x;
    else if constexpr (Op == 1) return v <= x;
    else if constexpr (Op == 2) return v > x;
    else return v >= x;
  }
  METAL_FUNC constexpr bool next(T v) {
    if constexpr (!__METALCALL_CHECKS_ON) return true;
    else if constexpr (!by_value) return count++ < unsigned(__METALCALL_STRIP_LENGTH);
    else if (by_count) return count++ < unsigned(__METALCALL_STRIP_LENGTH);
    else if constexpr (Op == 0) return v < end;
    else if constexpr (Op == 1) return v <= end;
    else if constexpr (Op == 2) return v > end;
    else return v >= end;
  }
};
// A CPU grid-stride loop (loop_strips.hpp: `for (T v = ...; v OP x; v += step)`, Op 0 `<`, 1
// `<=`, x and step unchanged while it runs, v only read in its body) runs at most L iterations
// wherever it starts when T is unsigned (v starts at 0 or above), x and step are T's values in
// the loop (v OP x and v + step are of type T), step > 0, x <= step * L (`<`; x < step * L for
// `<=`), and v + step stays within T for every v the condition lets through (x - 1 + step, or
// x + step, at most T's largest value): then it needs no stop check (a loop that never ends is
// never short). Every other run counts (__METALCALL_LOOP_CHECK_SHORT).
template <int Op, class T, class X, class S>
METAL_FUNC constexpr bool short_run(X x, S step) {
  if constexpr (!(mtl_detail::is_int<T>::value && !mtl_detail::signed_int<T>::value &&
                  mtl_detail::strip_same_type<T, X>::value && is_same<S, T>::value && (Op == 0 || Op == 1))) {
    (void)x;
    (void)step;
    return false;
  } else {
    using U = unsigned long long;
    constexpr U L = U(__METALCALL_STRIP_LENGTH), hi = U(T(~T(0)));
    const U e = U(T(step)), bound = U(T(x));
    if (e == 0u) return false;
    const bool few = e > ~U(0) / L || (Op == 0 ? bound <= e * L : bound < e * L);
    const bool in_type = Op == 0 ? bound == 0u || bound - 1u <= hi - e : bound <= hi - e;
    return few && in_type;
  }
}
}  // namespace mtl_strip
}  // namespace metal
// A CPU grid-stride loop checks only when short_run could not bound it (the flag is the same on
// every iteration: clang tests it once, and the short loop's copy is the loop as written). g++
// (12) keeps the counter: its code for the flag's two copies cost that loop 6-8% where the
// counter's cost nothing (bench_stop_check_objects.py's timer, 2026-12-03).
#if defined(__clang__)
#define __METALCALL_LOOP_CHECK_SHORT(n) \
  if (!__metalcall_short) {             \
    __METALCALL_LOOP_CHECK(n)           \
  }
#else
#define __METALCALL_LOOP_CHECK_SHORT(n) \
  (void)__metalcall_short;              \
  __METALCALL_LOOP_CHECK(n)
#endif
// A strip that ends on a counter s: `__METALCALL_STRIP_MORE(s) && (cond)`.
#if __METALCALL_CHECKS_ON
#define __METALCALL_STRIP_MORE(s) (s < unsigned(__METALCALL_STRIP_LENGTH))
#else
#define __METALCALL_STRIP_MORE(s) true
#undef __METALCALL_LOOP_STATE
#undef __METALCALL_LOOP_CHECK
#undef __METALCALL_LOOP_NESTED
#undef __METALCALL_STRIP_CHECK
#undef __METALCALL_LOOP_CHECK_SHORT
#define __METALCALL_LOOP_CHECK_SHORT(n)
#define __METALCALL_LOOP_STATE(n)
#define __METALCALL_LOOP_CHECK(n)
#define __METALCALL_LOOP_NESTED(outer, n)
#define __METALCALL_STRIP_CHECK(n)
#endif
