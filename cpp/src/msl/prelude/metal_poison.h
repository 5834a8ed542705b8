// Threadgroup memory as Metal leaves it: undefined at the start of every threadgroup.
// When poisoning, every threadgroup allocation reads as 0xFF bytes (NaN in every float type, all
// ones in integers) until the group writes it, so a kernel that reads threadgroup memory it did not
// write gives a wrong answer here too, not the zeros or the previous group's values that the
// storage happens to hold. On the CPU every translation carries it and each launch switches it on
// (metalcall_cpu_launch::poison_threadgroup: METALCALL_POISON_UNINITIALIZED=1, and always on the
// Metal simulator), so poisoned and plain runs share one translation; on CUDA it is compiled in
// under METALCALL_POISON_THREADGROUP (the translator defines it for METALCALL_POISON_UNINITIALIZED=1).
#pragma once

#if METAL_CUDA
#if defined(METALCALL_POISON_THREADGROUP) && METALCALL_POISON_THREADGROUP
namespace metal {
namespace mtl_rt {
// The block's dynamic shared memory (the [[threadgroup(i)]] parameters), filled by all of its
// threads before any of them runs the kernel. Called from the entry point's first lines, where
// every thread of the block is still there, so the barrier is reached by all. The entry passes
// the thread's index in the block and the block's size: the prelude spells no CUDA builtin
// variable, so a user's `threadIdx` is renamed as NVRTC's other global names are.
__device__ __forceinline__ void poison_dynamic_shared(unsigned char* smem, unsigned t, unsigned threads) {
  unsigned bytes;
  asm("mov.u32 %0, %%dynamic_smem_size;" : "=r"(bytes));
  for (unsigned b = t; b < bytes; b += threads) smem[b] = 0xFF;
  __syncthreads();
}
}  // namespace mtl_rt
}  // namespace metal
#endif
#else
namespace metal {
namespace mtl_rt {
// One number per threadgroup this OS thread starts while poisoning (the entry point counts them
// when its launch asks), never reused: a threadgroup variable is filled by the first thread of each
// group that reaches its declaration (METAL_THREADGROUP_POISON), before any thread of the group can
// have written it. While the serial stays 0 (no poisoning launch on this thread yet) nothing is
// filled; after one, a plain launch's groups keep the last serial, so each variable is filled at
// most once more there (harmless: the memory is undefined, and the group's first thread fills it).
static thread_local unsigned long long group_serial = 0;
inline void threadgroup_group_starts() { ++group_serial; }
inline void poison_threadgroup_bytes(void* p, unsigned long long bytes) {
  if (p && bytes) __builtin_memset(p, 0xFF, bytes);
}
inline void poison_threadgroup_once(void* p, unsigned long long bytes, unsigned long long& poisoned_in) {
  if (poisoned_in == group_serial) return;
  poisoned_in = group_serial;
  __builtin_memset(p, 0xFF, bytes);
}
}  // namespace mtl_rt
}  // namespace metal

// After each threadgroup variable's declaration (CPU): its storage is one static thread_local
// per worker thread, so its own serial is one too.
#define METAL_THREADGROUP_POISON(name)                                                                  \
  do {                                                                                                 \
    static thread_local unsigned long long mtl_poisoned_in = 0;                                        \
    ::metal::mtl_rt::poison_threadgroup_once((void*)__builtin_addressof(name), sizeof(name), mtl_poisoned_in); \
  } while (0)
#endif
