// The calling convention between the CPU runtime and a translated kernel's shared
// object. One definition serves both sides: the runtime compiles it, and the
// translator pastes the same text (METALCALL_CPU_ABI_TEXT) into generated code.
#pragma once

#include <cstddef>
#include <string>

#define METALCALL_CPU_ABI_DEFINITION                                                            \
  typedef struct metalcall_cpu_launch {                                                         \
    void* const* args;  /* one per kernel parameter, by position */                             \
    unsigned grid[3];   /* threads per grid */                                                  \
    unsigned group[3];  /* threads per threadgroup (the dispatch's size) */                     \
    unsigned groups[3]; /* threadgroups per grid */                                             \
    const unsigned long long* arg_bytes; /* byte length of each argument's memory */           \
    int* fault;         /* set to 1 by the first fault (checked mode) */                        \
    char* fault_message;                                                                        \
    unsigned fault_capacity;                                                                    \
    unsigned long long threadgroup_bytes; /* the call's [[threadgroup(i)]] lengths, summed */  \
    unsigned simd_width; /* threads per SIMD-group: 32, or a simulated Metal pipeline's width */ \
    unsigned long long threadgroup_limit; /* bytes a threadgroup may use: 32 KiB, or a simulated family's */ \
    unsigned poison_threadgroup; /* 1: threadgroup memory reads 0xFF until each group writes it */ \
  } metalcall_cpu_launch;                                                                       \
  /* What one worker thread offers the kernel code running on it. */                           \
  typedef struct metalcall_cpu_worker {                                                         \
    void* fibers; /* the worker's FiberGroup */                                                 \
    void (*run_group)(void* fibers, unsigned count, unsigned simd_width, void (*body)(void*, unsigned), \
                      void* ctx);                                                               \
    void (*barrier)(void* fibers);                                                              \
    void (*simd_barrier)(void* fibers);                                                         \
    void* const* threadgroup_memory; /* [[threadgroup(i)]] storage, by index */                 \
    unsigned char* simd_scratch;     /* 1024 lanes x 64 bytes */                                 \
    const unsigned* current_thread;  /* the running fiber's index: read inline, no call */      \
    /* A SIMD-group function's rendezvous at a call site; returns the lane's token, which */    \
    /* the lanes that went on with it share in simd_tokens (backends/cpu/fiber.hpp). */          \
    unsigned (*simd_meet)(void* fibers, unsigned long long site);                               \
    const unsigned* simd_tokens;                                                                \
    void (*barrier_at)(void* fibers, unsigned long long site); /* a threadgroup barrier's line */ \
    /* Each fiber's calls of the source's functions that may reach a SIMD-group function: */    \
    /* metalcall_cpu_simd_context_slots words per fiber, the depth then the calls' marks. */     \
    unsigned long long* simd_context;                                                           \
  } metalcall_cpu_worker;                                                                       \
  enum { metalcall_cpu_simd_context_slots = 8 };                                                \
  typedef struct metalcall_cpu_layout {                                                         \
    unsigned long size;  /* sizeof the parameter's element type */                              \
    unsigned long align; /* alignof */                                                          \
    long binding;        /* the [[buffer(i)]] / [[threadgroup(i)]] index as compiled */         \
  } metalcall_cpu_layout;                                                                       \
  typedef void (*metalcall_cpu_entry)(const metalcall_cpu_launch*, unsigned long long first_group, \
                                      unsigned long long end_group, const metalcall_cpu_worker*); \
  /* Stopping running kernels: every loop reads *word, and calls check() when it is not 0 */    \
  /* (backends/cpu/kernel_stop.hpp). The runtime sets the object's __metalcall_stop on load. */ \
  typedef struct metalcall_cpu_stop {                                                           \
    const volatile unsigned* word;                                                              \
    void (*check)(void);                                                                        \
  } metalcall_cpu_stop;

#define METALCALL_CPU_ABI_STR2(...) #__VA_ARGS__
#define METALCALL_CPU_ABI_STR(...) METALCALL_CPU_ABI_STR2(__VA_ARGS__)
#define METALCALL_CPU_ABI_TEXT METALCALL_CPU_ABI_STR(METALCALL_CPU_ABI_DEFINITION)

extern "C" {
METALCALL_CPU_ABI_DEFINITION
}

namespace metalcall::msl {
/** Symbol names the generated code exports for kernel number `index`. */
inline std::string cpu_entry_symbol(std::size_t index) { return "metalcall_entry_" + std::to_string(index); }
inline std::string cpu_layout_symbol(std::size_t index) { return "metalcall_layout_" + std::to_string(index); }
/** The object's metalcall_cpu_stop (one per kernel object). */
constexpr const char* kCpuStopSymbol = "__metalcall_stop";
/** Bytes of a worker's SIMD-group scratch area (see metal_simdgroup.h). */
constexpr std::size_t kCpuSimdScratchBytes = 1024 * 64;
}  // namespace metalcall::msl
