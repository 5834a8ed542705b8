// The calling convention between the CUDA runtime and a translated kernel's
// module. One definition serves both sides: the runtime compiles it, and the
// translator pastes the same text (METALCALL_CUDA_ABI_TEXT) into generated code.
//
// A kernel gets one launch struct by value (a __grid_constant__ parameter):
// - args[i]: the device address of parameter i's memory (a buffer), or, when bit
//   i of inline_mask is set, the offset of its bytes in data[] (a scalar or struct
//   passed by value or as `constant T&`), or, for a [[threadgroup(i)]] parameter,
//   its offset in the dynamic shared memory of the block;
// - grid: threads per grid; group: the dispatch's threads per threadgroup; groups:
//   threadgroups per grid; origin: the threadgroup of this launch's block (0,0,0)
//   (a dispatch may be several launches: see cuda_device.cpp).
#pragma once

#include <cstddef>
#include <string>

#define METALCALL_CUDA_MAX_ARGS 32
#define METALCALL_CUDA_INLINE_BYTES 2048

#define METALCALL_CUDA_ABI_DEFINITION                                                   \
  typedef struct metalcall_cuda_launch {                                                \
    void* args[32];                                                                     \
    unsigned long long arg_bytes[32];                                                   \
    unsigned long long inline_mask;                                                     \
    unsigned grid[3];                                                                   \
    unsigned group[3];                                                                  \
    unsigned groups[3];                                                                 \
    unsigned origin[3];                                                                 \
    alignas(16) unsigned char data[2048];                                               \
  } metalcall_cuda_launch;                                                              \
  typedef struct metalcall_cuda_layout {                                                \
    unsigned long long size;                                                            \
    unsigned long long align;                                                           \
    long long binding;                                                                  \
  } metalcall_cuda_layout;

#define METALCALL_CUDA_ABI_STR2(...) #__VA_ARGS__
#define METALCALL_CUDA_ABI_STR(...) METALCALL_CUDA_ABI_STR2(__VA_ARGS__)
#define METALCALL_CUDA_ABI_TEXT METALCALL_CUDA_ABI_STR(METALCALL_CUDA_ABI_DEFINITION)

extern "C" {
METALCALL_CUDA_ABI_DEFINITION
}

static_assert(sizeof(metalcall_cuda_launch) <= 4096, "the launch struct must fit CUDA's 4 KiB parameter space");
