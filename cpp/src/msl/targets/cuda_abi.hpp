// The calling convention between the CUDA runtime and a translated kernel's
// module. One definition serves both sides: the runtime compiles it, and the
// translator pastes the same text (METALCALL_CUDA_ABI_TEXT) into generated code.
//
// Kernel number K takes one parameter block by value (a __grid_constant__
// `metalcall_params_K`, generated per kernel): a metalcall_cuda_geometry, then
// one field per non-builtin parameter in position order. The runtime never
// reproduces C++ layout rules: the layout table metalcall_layout_K (one
// metalcall_cuda_layout per parameter, then a terminator holding sizeof and
// alignof of the block) says where each field lies:
// - value_offset: the bytes of a scalar or struct passed by value or as
//   `constant T&`, or, for a [[threadgroup(i)]] parameter, an unsigned long long
//   offset into the block's dynamic shared memory; -1 when none;
// - pointer_offset: the device address of a buffer (or a `device T&`), or, for a
//   `constant T&`, the address of a buffer that backs it (null: read the value
//   field instead); -1 when none.
#pragma once

#include <cstddef>
#include <string>

#define METALCALL_CUDA_ABI_DEFINITION                                                   \
  typedef struct metalcall_cuda_geometry {                                              \
    unsigned grid[3];   /* threads per grid */                                          \
    unsigned group[3];  /* the dispatch's threads per threadgroup */                    \
    unsigned groups[3]; /* threadgroups per grid */                                     \
    unsigned origin[3]; /* the threadgroup of this launch's block (0,0,0) */            \
    unsigned long long ticket; /* the submission's, for stop checks; 0: never stopped */ \
  } metalcall_cuda_geometry;                                                            \
  typedef struct metalcall_cuda_layout {                                                \
    unsigned long long size;  /* sizeof the parameter's element type */                 \
    unsigned long long align; /* alignof */                                             \
    long long binding;        /* the [[buffer(i)]] / [[threadgroup(i)]] index */        \
    long long value_offset;   /* offsetof the value (or smem offset) field, or -1 */    \
    long long pointer_offset; /* offsetof the pointer field, or -1 */                   \
  } metalcall_cuda_layout;

#define METALCALL_CUDA_ABI_STR2(...) #__VA_ARGS__
#define METALCALL_CUDA_ABI_STR(...) METALCALL_CUDA_ABI_STR2(__VA_ARGS__)
#define METALCALL_CUDA_ABI_TEXT METALCALL_CUDA_ABI_STR(METALCALL_CUDA_ABI_DEFINITION)

/** The parameter space every CUDA GPU accepts; CUDA 12.1+ on Volta+ takes 32764 bytes. */
#define METALCALL_CUDA_PARAM_BYTES_BASE 4096
#define METALCALL_CUDA_PARAM_BYTES_LARGE 32764

/**
 * Defined (-D) for the build of a kernel whose calls' buffers may overlap: without
 * it, the entry points declare their buffer pointers __restrict__ (see target_cuda.cpp).
 */
#define METALCALL_CUDA_NO_RESTRICT_OPTION "-DMETALCALL_NO_RESTRICT"

/**
 * Defined for the builds without the coarsened entry points (target_cuda.cpp writes each inside
 * `#ifndef METALCALL_NO_COARSENED`): a module gets them only once a launch would use one, for
 * they double the back end's share of a compile (backends/cuda/cuda_compiler.cpp).
 */
#define METALCALL_CUDA_NO_COARSENED_OPTION "-DMETALCALL_NO_COARSENED"
#define METALCALL_CUDA_COARSENED_GUARD "#ifndef METALCALL_NO_COARSENED"

extern "C" {
METALCALL_CUDA_ABI_DEFINITION
}

namespace metalcall::msl {
/** The parameter block's type of kernel number `index`. */
inline std::string cuda_params_type(std::size_t index) { return "metalcall_params_" + std::to_string(index); }

/**
 * The coarsened entry point of a kernel that allows one (entry_points.hpp, coarsenable): the
 * same parameter block, a 1-D launch of ceil(grid.x / kCudaCoarsening) threads in any block
 * size, each running thread positions kCudaCoarsening * t ... + kCudaCoarsening - 1 (those below
 * grid.x) in order; every buffer address must be 16-byte aligned. Named entry + this suffix.
 */
constexpr unsigned kCudaCoarsening = 4;
inline std::string cuda_coarsened_symbol(const std::string& entry) { return entry + "_x4"; }
}  // namespace metalcall::msl
