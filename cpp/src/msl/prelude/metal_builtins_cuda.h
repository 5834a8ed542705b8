// metalcall MSL prelude, CUDA only: the integer builtins of Apple's clang that MSL sources
// call (MLX's fft.h and hadamard.h: __builtin_ctz, in constant expressions too), which NVRTC
// lacks: ctz, clz and popcount in their int, long and long long forms. The host compilers
// have them, and NVRTC has __builtin_expect and __builtin_assume (docs/msl-rules.md).
#pragma once
#include "metal_config.h"

#if METAL_CUDA
namespace metal {
namespace mtl_rt {
// Constant evaluation takes these loops; run time takes the GPU's instructions below.
__device__ constexpr int builtin_ctz_loop(unsigned long long u, int bits) {
  int n = 0;
  while (n < bits && !((u >> n) & 1ull)) ++n;
  return n;
}
__device__ constexpr int builtin_clz_loop(unsigned long long u, int bits) {
  int n = 0;
  while (n < bits && !((u >> (bits - 1 - n)) & 1ull)) ++n;
  return n;
}
__device__ constexpr int builtin_popcount_loop(unsigned long long u) {
  int n = 0;
  for (; u; u &= u - 1) ++n;
  return n;
}
}  // namespace mtl_rt
}  // namespace metal

#if defined(__has_builtin)
#if __has_builtin(__builtin_is_constant_evaluated)
#define METAL_BUILTIN_CONSTANT_EVALUATED() __builtin_is_constant_evaluated()
#endif
#endif
#if !defined(METAL_BUILTIN_CONSTANT_EVALUATED)
#define METAL_BUILTIN_CONSTANT_EVALUATED() true  // the loops everywhere: still correct
#endif

// An argument of 0 is undefined for ctz and clz, as in clang; here it gives the bit width.
#define METAL_CUDA_BIT_BUILTINS(suffix, T, bits, ffs, clz, popc)                                              \
  __device__ constexpr inline int __builtin_ctz##suffix(T x) {                                               \
    return METAL_BUILTIN_CONSTANT_EVALUATED() ? metal::mtl_rt::builtin_ctz_loop(x, bits)                      \
                                              : (x ? ffs(x) - 1 : bits);                                      \
  }                                                                                                           \
  __device__ constexpr inline int __builtin_clz##suffix(T x) {                                               \
    return METAL_BUILTIN_CONSTANT_EVALUATED() ? metal::mtl_rt::builtin_clz_loop(x, bits) : clz(x);           \
  }                                                                                                           \
  __device__ constexpr inline int __builtin_popcount##suffix(T x) {                                          \
    return METAL_BUILTIN_CONSTANT_EVALUATED() ? metal::mtl_rt::builtin_popcount_loop(x) : popc(x);           \
  }

#if !defined(__has_builtin) || !__has_builtin(__builtin_ctz)
#define METAL_FFS32(x) __ffs(int(x))
#define METAL_CLZ32(x) __clz(int(x))
#define METAL_FFS64(x) __ffsll((long long)(x))
#define METAL_CLZ64(x) __clzll((long long)(x))
METAL_CUDA_BIT_BUILTINS(, unsigned int, 32, METAL_FFS32, METAL_CLZ32, __popc)
METAL_CUDA_BIT_BUILTINS(l, unsigned long, 64, METAL_FFS64, METAL_CLZ64, __popcll)  // long is 64-bit (LP64)
METAL_CUDA_BIT_BUILTINS(ll, unsigned long long, 64, METAL_FFS64, METAL_CLZ64, __popcll)
#undef METAL_FFS32
#undef METAL_CLZ32
#undef METAL_FFS64
#undef METAL_CLZ64
#endif
#undef METAL_CUDA_BIT_BUILTINS
#endif  // METAL_CUDA
