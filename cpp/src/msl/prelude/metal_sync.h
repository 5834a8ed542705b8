// metalcall MSL prelude: memory flags, barriers, and the SIMD-group and atomic
// libraries that build on them.
//
// On the CPU every logical thread of a threadgroup that needs barriers runs as a
// fiber on one worker thread (backends/cpu/fiber.hpp); the kernel's shared object
// reaches the fiber runtime through the worker table (msl/targets/cpu_abi.hpp), which the
// generated entry point stores in mtl_rt::worker before running a group.
#pragma once

namespace metal {

enum class mem_flags : unsigned {
  mem_none = 0,
  mem_device = 1,
  mem_threadgroup = 2,
  mem_texture = 4,
  mem_threadgroup_imageblock = 8,
  mem_object_data = 16,
};
METAL_FUNC constexpr mem_flags operator|(mem_flags a, mem_flags b) { return mem_flags(unsigned(a) | unsigned(b)); }
METAL_FUNC constexpr mem_flags operator&(mem_flags a, mem_flags b) { return mem_flags(unsigned(a) & unsigned(b)); }

// Unscoped, as MSL's: `thread_scope_threadgroup` alone names a scope (SPIRV-Cross writes it so).
enum thread_scope { thread_scope_thread, thread_scope_simdgroup, thread_scope_threadgroup, thread_scope_device };

#if METAL_CUDA

// Asynchronous device-to-threadgroup copies (compile option METALCALL_ASYNC_COPIES=1, sm_80+):
// the translator (msl/passes/async_copies.hpp) sends each `*(threadgroup T*)(d) = *(device const
// T*)(s);` here, and a 4-, 8- or 16-byte one whose ends are shared and global memory becomes
// one cp.async (no registers, no store instruction; 16 bytes bypass L1), which the thread's
// next threadgroup_barrier waits for. So the kernel promises what Apple's asynchronous copies
// ask: the thread itself neither reads nor writes the destination, nor writes the source,
// before its next threadgroup barrier. Without the option, or for other sizes, a plain copy.
#if __CUDA_ARCH__ >= 800 && defined(METALCALL_ASYNC_COPIES) && METALCALL_ASYNC_COPIES
#define METALCALL_ASYNC_COPIES_ON 1
#else
#define METALCALL_ASYNC_COPIES_ON 0
#endif
namespace mtl_rt {
template <class T> METAL_FUNC void mtl_async_copy(T* dst, const T* src) {
  // The casts may point below T's alignment (metal_unaligned.h): then an ordinary copy that
  // tolerates it.
  if (!mtl_detail::aligned_to(dst, alignof(T)) || !mtl_detail::aligned_to(src, alignof(T))) {
    const mtl_cast_pointer_t<T> to(dst);
    to[0] = mtl_cast_pointer_t<const T>(src)[0];
    return;
  }
#if METALCALL_ASYNC_COPIES_ON
  if constexpr (sizeof(T) == 16 || sizeof(T) == 8 || sizeof(T) == 4) {
    if (__isShared((const void*)dst) && __isGlobal((const void*)src)) {
      const unsigned d = unsigned(__cvta_generic_to_shared((const void*)dst));
      if constexpr (sizeof(T) == 16)
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(d), "l"(src) : "memory");
      else
        asm volatile("cp.async.ca.shared.global [%0], [%1], %2;" ::"r"(d), "l"(src), "n"(int(sizeof(T))) : "memory");
      return;
    }
  }
#endif
  *dst = *src;
}
}  // namespace mtl_rt

METAL_FUNC void threadgroup_barrier(mem_flags flags = mem_flags::mem_none) {
#if METALCALL_ASYNC_COPIES_ON
  asm volatile("cp.async.wait_all;" ::: "memory");  // this thread's async_copy calls land first
#endif
  if (unsigned(flags) & unsigned(mem_flags::mem_device)) __threadfence();
  // barrier.sync, not __syncthreads' barrier.sync.aligned: MSL code (MLX's gemv_t) reaches
  // barriers where some lanes of a SIMD-group took another branch or left, which Apple GPUs
  // accept; the aligned form assumes whole warps and then lets threads through early.
  __barrier_sync(0);
}
METAL_FUNC void simdgroup_barrier(mem_flags flags = mem_flags::mem_none) {
  if (unsigned(flags) & unsigned(mem_flags::mem_device)) __threadfence();
  __syncwarp(__activemask());
}
namespace mtl_rt {
// `out[i] = S{...};` (msl/passes/struct_temporaries.hpp): through a named copy, which NVVM stores
// member by member, not the temporary's bytes one by one (a half's low byte was lost).
template <class D, class V> METAL_FUNC void assign_whole(D&& to, const V& value) {
  const V copy = value;
  to = copy;
}

// The lanes entering a branch body that holds a threadgroup barrier, and their meeting at
// its end (the translator writes both, msl/passes/branch_reconvergence.hpp): after such a branch
// NVIDIA GPUs do not bring the lanes back together, so SIMD-group functions after it would
// see part of them. The lanes that skipped the branch are not waited for: a lane waiting
// here while a warp-mate waits at the barrier would hang.
METAL_FUNC unsigned branch_lanes() { return __activemask(); }
METAL_FUNC void rejoin(unsigned lanes) { __syncwarp(lanes); }

// A condition evaluated by the lanes that start it, which meet again before the code it chooses
// runs (the translator writes `joined_t{branch_lanes(), (c)}.value`, msl/passes/simd_conditions.hpp):
// a condition that branches itself (`p ? q : r`, `p || q`) may leave them in groups that enter
// that code, and its SIMD-group functions, apart. A braced list takes the lanes before the condition.
template <class C> struct joined_t {
  C value;
  METAL_FUNC joined_t(unsigned lanes, C c) : value(c) { __syncwarp(lanes); }
};
template <class C> joined_t(unsigned, C) -> joined_t<C>;

// True, but opaque to the compiler (and not hoisted: volatile): the translator makes each exit of
// a loop that may call a SIMD-group function leave only if it says so (msl/passes/simd_loop_exits.hpp),
// so the code on the way out stays in its iteration and acts on the lanes leaving in it.
METAL_FUNC bool stay_in_loop() {
  unsigned yes;
  asm volatile("mov.u32 %0, 1;" : "=r"(yes));
  return yes != 0;
}
}  // namespace mtl_rt

#else

namespace mtl_rt {
// The worker running this OS thread's threadgroup, and the group's size. One
// translation unit per kernel library, so `static` gives one copy each.
static thread_local const metalcall_cpu_worker* worker = nullptr;
static thread_local unsigned group_threads = 1;
// Threads per SIMD-group of the launch being run (its entry point sets it): 32, or the width of the
// simulated Metal pipeline it runs for (8, 16, 32 or 64). Constant to a kernel body, as fiber_index().
static thread_local unsigned simd_lanes_now = 32;
__attribute__((const, noinline)) static unsigned simd_lanes() { return simd_lanes_now; }

// The running fiber's index. To the code of one fiber it never changes (a switch away and
// back restores it), so it is declared `const`: the compiler computes it once per kernel
// body and hoists the lane tests of SIMD-group functions out of loops. An opaque call into
// the runtime per use cost the SIMD-group GEMM about a fifth of its time.
__attribute__((const, noinline)) static unsigned fiber_index() { return *worker->current_thread; }
inline unsigned thread_index() { return fiber_index(); }
inline void group_sync() { worker->barrier(worker->fibers); }
// SIMD-group rendezvous (backends/cpu/fiber.hpp, simd_meet): the lanes waiting at the lowest
// site when every lane of the SIMD-group waits or has returned go on together. A SIMD-group
// function's site is the line of its call in the user's source (the translation keeps the
// lines) and the function, so lanes go through divergent code as on the GPU: the lanes behind
// (an earlier line: the rest of a loop, the other branch) before those ahead. Inside a call of
// a function of the source that may reach a SIMD-group function the calls' lines come first
// (simd_frame below), so a helper's lines count where it is called from.
// Where a line holds several such calls, the translation also gives each its rank there
// (msl/passes/simd_line_order.hpp): lanes in different arms of one line's conditional meet in
// the order the calls complete, not by which function each is. Explicit: no argument of the
// user's converts to it.
struct simd_at {
  unsigned line, order;
  explicit simd_at(unsigned at, unsigned rank = 0) : line(at), order(rank) {}
};
typedef unsigned long long simd_site_t;
// line, then rank (4 bits; 15 is a loop's latch, after all), then the function (9 bits).
inline simd_site_t simd_place(unsigned line, unsigned order) { return (simd_site_t(line) << 13) + (simd_site_t(order) << 9); }
inline simd_site_t simd_site(simd_at at, unsigned function) { return simd_place(at.line, at.order) + 3 + function; }
inline unsigned simd_meet(simd_site_t site) { return worker->simd_meet(worker->fibers, site); }

// The line of a call of a function of the source that may reach a SIMD-group function: the
// translation gives each such function a last parameter `simd_caller mtl_caller =
// simd_caller(__builtin_LINE())` and a simd_frame at the top of its body
// (msl/passes/simd_frames.hpp). Explicit: no argument of the user's converts to it.
struct simd_caller {
  unsigned line, order;
  explicit simd_caller(unsigned at, unsigned rank = 0) : line(at), order(rank) {}
};
// A call's mark: before every site of its place (the call's arguments are done), not one of them.
inline simd_site_t simd_call_mark(simd_caller at) { return simd_place(at.line, at.order) + 2; }
// The running fiber's calls (worker->simd_context, backends/cpu/fiber.hpp) while the body runs.
struct simd_frame {
  unsigned long long* calls;
  explicit simd_frame(simd_caller at) : calls(worker->simd_context + fiber_index() * metalcall_cpu_simd_context_slots) {
    const unsigned long long depth = calls[0]++;
    if (depth + 1 < metalcall_cpu_simd_context_slots) calls[1 + depth] = simd_call_mark(at);
  }
  ~simd_frame() { --calls[0]; }
  simd_frame(const simd_frame&) = delete;
  simd_frame& operator=(const simd_frame&) = delete;
};
inline const unsigned* simd_tokens() { return worker->simd_tokens; }
// The end of a loop iteration that may call a SIMD-group function (msl/passes/simd_latches.hpp).
inline void simd_latch(unsigned line) { simd_meet(simd_site(simd_at(line, 15), 254)); }
inline void simd_sync() { worker->simd_meet(worker->fibers, 1); }  // the prelude's own (uniform) syncs
inline void simd_leave() { worker->simd_meet(worker->fibers, 0); }  // an exchange's end: before anything else

// The launch being run and its kernel's name (set by every entry point), for the messages
// kernel code leaves in the launch: checked mode's faults (metal_checked.h) and the one below.
static thread_local const metalcall_cpu_launch* launch = nullptr;
static thread_local const char* kernel_name = "";

inline void append(char* out, unsigned capacity, unsigned& n, const char* s) {
  while (*s && n + 1 < capacity) out[n++] = *s++;
}
inline void append_number(char* out, unsigned capacity, unsigned& n, long long v) {
  char digits[24];
  int k = 0;
  unsigned long long u = v < 0 ? 0ull - (unsigned long long)v : (unsigned long long)v;
  do {
    digits[k++] = char('0' + u % 10);
    u /= 10;
  } while (u);
  if (v < 0 && n + 1 < capacity) out[n++] = '-';
  while (k && n + 1 < capacity) out[n++] = digits[--k];
}

// Claims the launch's one fault message for this thread (null when there is no launch or
// another fault came first) and starts it with "kernel '<name>'"; n is its length so far.
inline const metalcall_cpu_launch* begin_fault(unsigned& n) {
  const metalcall_cpu_launch* L = launch;
  if (!L || __atomic_exchange_n(L->fault, 1, __ATOMIC_ACQ_REL) != 0) return nullptr;
  n = 0;
  append(L->fault_message, L->fault_capacity, n, "kernel '");
  append(L->fault_message, L->fault_capacity, n, kernel_name);
  append(L->fault_message, L->fault_capacity, n, "'");
  return L;
}

// Threadgroup memory over an Apple GPU's 32 KiB: one variable (the translator checks each
// declaration, METAL_THREADGROUP_FITS, at compile time), several in scope together, or those
// and the call's [[threadgroup(i)]] lengths (METAL_THREADGROUP_TOTAL_FITS after each
// declaration). Metal refuses such a kernel when its pipeline is made, or such a dispatch, so
// the CPU raises ExecutionError for the call instead of running what a Mac would not. The
// rest of the library's kernels are unaffected. The Metal simulator's launches carry their GPU
// family's limit (apple3: 16 KiB), checked at run time for the variables over 16 KiB only.
constexpr unsigned long long kAppleThreadgroupBytes = 32 * 1024;
constexpr unsigned long long kSmallestAppleThreadgroupBytes = 16 * 1024;
inline unsigned long long threadgroup_limit() {
  return launch && launch->threadgroup_limit ? launch->threadgroup_limit : kAppleThreadgroupBytes;
}
inline void threadgroup_overflow(const char* names, unsigned long long bytes, bool several,
                                 unsigned long long call_bytes = 0) {
  unsigned n;
  const metalcall_cpu_launch* L = begin_fault(n);
  if (!L) return;
  char* out = L->fault_message;
  const unsigned cap = L->fault_capacity;
  append(out, cap, n, several ? ": threadgroup variables " : ": threadgroup variable '");
  append(out, cap, n, names);
  if (call_bytes) {
    append(out, cap, n, several ? " (" : "' (");
    append_number(out, cap, n, (long long)bytes);
    append(out, cap, n, " bytes) and the call's threadgroup_memory (");
    append_number(out, cap, n, (long long)call_bytes);
    append(out, cap, n, " bytes) take ");
    append_number(out, cap, n, (long long)(bytes + call_bytes));
    append(out, cap, n, " bytes together, more");
  } else {
    append(out, cap, n, several ? " take " : "' takes ");
    append_number(out, cap, n, (long long)bytes);
    append(out, cap, n, several ? " bytes together, more" : " bytes, more");
  }
  const unsigned long long limit = threadgroup_limit();
  append(out, cap, n, " than the ");
  append_number(out, cap, n, (long long)(limit / 1024));
  append(out, cap, n, limit == kAppleThreadgroupBytes ? " KiB of threadgroup memory an Apple GPU gives"
                                                      : " KiB of threadgroup memory the simulated GPU family gives");
  append(out, cap, n,
         " a threadgroup (Metal refuses to make this kernel's pipeline or dispatch it); the kernel ran on the cpu "
         "backend");
  out[n] = 0;
}
// The variables in scope (static) and the call's [[threadgroup(i)]] lengths (run time). A
// source without such parameters (the translator defines METALCALL_THREADGROUP_PARAMS 0)
// whose variables take at most 16 KiB has nothing to check at run time, so its threads pay
// nothing here.
inline void threadgroup_total_fits(const char* names, unsigned long long bytes, bool several) {
  // Over the smallest family's limit: over the launch's own? (bytes is a constant where it is inlined)
  if (bytes > kSmallestAppleThreadgroupBytes && bytes > threadgroup_limit()) {
    threadgroup_overflow(names, bytes, several);
    return;
  }
#if !defined(METALCALL_THREADGROUP_PARAMS) || METALCALL_THREADGROUP_PARAMS
  const unsigned long long call_bytes = launch ? launch->threadgroup_bytes : 0;
  if (call_bytes && bytes + call_bytes > threadgroup_limit()) threadgroup_overflow(names, bytes, several, call_bytes);
#endif
}
}  // namespace mtl_rt
#define METAL_THREADGROUP_FITS(name)                                        \
  do {                                                                       \
    if constexpr (sizeof(name) > ::metal::mtl_rt::kAppleThreadgroupBytes)   \
      ::metal::mtl_rt::threadgroup_overflow(#name, sizeof(name), false);     \
  } while (0)
#define METAL_THREADGROUP_TOTAL_FITS(names, bytes, several)                 \
  do {                                                                       \
    if constexpr ((bytes) > ::metal::mtl_rt::kAppleThreadgroupBytes) {      \
      if constexpr (several) ::metal::mtl_rt::threadgroup_overflow(names, (bytes), true); \
    } else {                                                                 \
      ::metal::mtl_rt::threadgroup_total_fits(names, (bytes), several);     \
    }                                                                        \
  } while (0)

// Fibers switch only at barriers, and every fiber of a group shares one OS
// thread, so the switch itself orders memory; the flags need no fence here.
// Its line orders it among the SIMD-group functions' sites (backends/cpu/fiber.hpp).
inline void threadgroup_barrier(mem_flags = mem_flags::mem_none, mtl_rt::simd_at mtl_line = mtl_rt::simd_at(__builtin_LINE())) {
  mtl_rt::worker->barrier_at(mtl_rt::worker->fibers, mtl_rt::simd_site(mtl_line, 253));
}
inline void simdgroup_barrier(mem_flags = mem_flags::mem_none, mtl_rt::simd_at mtl_line = mtl_rt::simd_at(__builtin_LINE())) {
  mtl_rt::simd_meet(mtl_rt::simd_site(mtl_line, 255));
}

#endif

}  // namespace metal

// The parts after the barriers (metal_stdlib.h): each only where the kernel uses it on CUDA.
#if METALCALL_PART_ATOMIC
#include "metal_atomic.h"
#endif
#if METALCALL_PART_SIMD
#include "metal_simdgroup.h"
#endif
#if METALCALL_PART_SGMATRIX  // (needs SIMD)
#include "metal_simdgroup_matrix.h"
#include "metal_simdgroup_matrix_ops.h"
#include "metal_simdgroup_fill.h"
#endif
#if METALCALL_PART_APPLE  // (needs SIMD)
#include "metal_apple_internals.h"
#endif
#include "metal_checked.h"
