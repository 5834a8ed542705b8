// metalcall MSL prelude: the stop check the translator writes at the top of every loop
// body (msl/passes/loop_stops.hpp), so that running kernels can be stopped: Ctrl-C,
// Completion.wait(timeout=...) and a device's kernel_timeout reach them. MSL has no goto
// and no recursion, so every long run goes around a loop.
//
// __METALCALL_LOOP_STATE(n) opens the loop's block (a counter on CUDA, nothing on the CPU);
// __METALCALL_LOOP_CHECK(n) starts each iteration; __METALCALL_LOOP_NESTED(outer, n) follows a
// loop nested in another of the same function (CUDA: the nest's count; nothing on the CPU,
// where a loop checks each iteration or, strip-mined, at least once per entry). Neither runs during constant
// evaluation (a loop in a constexpr function stays constant).
#pragma once

#if defined(__has_builtin)
#if __has_builtin(__builtin_is_constant_evaluated)
#define __METALCALL_AT_RUN_TIME (!__builtin_is_constant_evaluated())
#endif
#endif
#ifndef __METALCALL_AT_RUN_TIME
#define __METALCALL_AT_RUN_TIME true
#endif

#if METAL_CUDA

// A word in device memory per device that the host raises to the ticket of the latest
// submission to stop (backends/cuda/cuda_queue.cpp, by a copy on another stream while the
// kernel runs); each block keeps its launch's ticket in shared memory (written by every
// thread at entry). Reading that word stalls the warp for an L2 round trip, so only every
// 1024th iteration of a loop reads it; a thread whose submission is stopped exits (PTX
// `exit`: barriers it holds up are released).
extern "C" {
__device__ const volatile unsigned long long* __metalcall_stop_word = nullptr;
}
__shared__ unsigned long long __metalcall_ticket;
namespace metal {
namespace mtl_rt {
__device__ __noinline__ void stop_check() {
  const volatile unsigned long long* word = __metalcall_stop_word;
  const unsigned long long ticket = __metalcall_ticket;
  if (word && ticket != 0ull && ticket <= *word) asm volatile("exit;");
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
#define __METALCALL_LOOP_STATE(n)
#define __METALCALL_LOOP_NESTED(outer, n)
#define __METALCALL_LOOP_CHECK(n) \
  if (__METALCALL_AT_RUN_TIME && __builtin_expect(*::__metalcall_stop.word != 0u, 0)) ::__metalcall_stop.check();

#endif
