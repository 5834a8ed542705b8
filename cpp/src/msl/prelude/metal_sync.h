// metalcall MSL prelude: RESERVED for threadgroup_barrier, simdgroup_barrier,
// mem_flags, SIMD-group functions (simd_sum, simd_shuffle, ...) and atomics
// (atomic_int, atomic_fetch_add_explicit, memory_order_relaxed, ...).
// They depend on the runtime (fibers on the CPU, warp intrinsics on CUDA) and
// are added with it; nothing here yet.
#pragma once
