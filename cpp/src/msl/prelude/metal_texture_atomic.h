// metalcall MSL prelude: texture atomics (MSL 3.1). texture1d/1d_array/2d/2d_array/3d and texture_buffer<int or uint,
// access::read_write> have atomic_load, atomic_store, atomic_exchange,
// atomic_compare_exchange_weak and atomic_fetch_add/sub/and/or/xor/min/max member functions:
// coordinates first, then the operand (a vec<T, 4> whose x is used; a scalar converts); each
// acts on the texel's first channel with memory_order_relaxed and returns the old value as
// (old, 0, 0, 1), as read() returns an r32 texel. Metal has them on r32uint / r32sint textures;
// other formats and coordinates outside the texture do nothing and return zeros (Metal leaves
// them undefined; checked mode reports the coordinates, as for read()).
#pragma once

#include "metal_texture_sampling.h"

namespace metal {

namespace mtl_tex {

enum atomic_op { op_load, op_store, op_exchange, op_add, op_sub, op_and, op_or, op_xor, op_min, op_max };

// The first channel of texel (x, y, slice) of level 0 as an atomic; null where there is none.
// Metal has texture atomics on r32uint and r32sint textures only (MTLTextureUsageShaderAtomic
// takes no other format), so a call that reaches one on another format (r16uint, rgba32uint) is
// refused on the CPU, as the threadgroup memory a Mac would refuse is (metal_sync.h), rather than
// doing nothing and returning zeros (before the atomics audit of session 23) or acting on the
// first channel. CUDA still does nothing there (no fault channel).
METAL_FUNC bool atomic_format(const mtl_texture_abi& d) {
  // r32uint/r32sint only (not rgb10a2uint's packed word)
  if (is_integer(d.format) && channel_bytes(d.format) == 4u && channels(d.format) == 1u && layout(d.format) == 0u) return true;
#if !METAL_CUDA
  unsigned n;
  if (const metalcall_cpu_launch* L = begin_texture_fault(n, d.binding)) {
    char* out = L->fault_message;
    const unsigned cap = L->fault_capacity;
    mtl_rt::append(out, cap, n, ": texture atomics need an r32uint or r32sint texture, the only formats Metal has "
                                "them on; this one has ");
    mtl_rt::append_number(out, cap, n, channels(d.format));
    mtl_rt::append(out, cap, n, " channel(s) of ");
    mtl_rt::append_number(out, cap, n, 8 * channel_bytes(d.format));
    mtl_rt::append(out, cap, n, is_integer(d.format) ? " bits (an integer format)" : " bits (not an integer format)");
    out[n] = 0;
  }
#endif
  return false;
}

template <class T>
METAL_FUNC volatile atomic<T>* atomic_texel(const mtl_texture_abi& d, unsigned x, unsigned y, unsigned slice) {
  if (!in_range(d, 0u, x, y, slice, "atomic")) return nullptr;
  if (!atomic_format(d)) return nullptr;
  return reinterpret_cast<volatile atomic<T>*>(texel(level_of(d, 0u), d.format, x, y, slice));
}

template <class T>
METAL_FUNC vec<T, 4> atomic_apply(const mtl_texture_abi& d, atomic_op op, T v, unsigned x, unsigned y, unsigned z) {
  volatile atomic<T>* a = atomic_texel<T>(d, x, y, z);
  if (!a) return vec<T, 4>(T(0));
  T old = T(0);
  switch (op) {
    case op_load: old = atomic_load_explicit(a, memory_order_relaxed); break;
    case op_store: atomic_store_explicit(a, v, memory_order_relaxed); break;
    case op_exchange: old = atomic_exchange_explicit(a, v, memory_order_relaxed); break;
    case op_add: old = atomic_fetch_add_explicit(a, v, memory_order_relaxed); break;
    case op_sub: old = atomic_fetch_sub_explicit(a, v, memory_order_relaxed); break;
    case op_and: old = atomic_fetch_and_explicit(a, v, memory_order_relaxed); break;
    case op_or: old = atomic_fetch_or_explicit(a, v, memory_order_relaxed); break;
    case op_xor: old = atomic_fetch_xor_explicit(a, v, memory_order_relaxed); break;
    case op_min: old = atomic_fetch_min_explicit(a, v, memory_order_relaxed); break;
    case op_max: old = atomic_fetch_max_explicit(a, v, memory_order_relaxed); break;
  }
  return vec<T, 4>(old, T(0), T(0), T(1));
}

// compare_exchange_weak: expected's x is compared, and on failure replaced by the texel's value.
template <class T>
METAL_FUNC bool atomic_cas(const mtl_texture_abi& d, T& expected, T desired, unsigned x, unsigned y, unsigned z) {
  volatile atomic<T>* a = atomic_texel<T>(d, x, y, z);
  if (!a) return false;
  return atomic_compare_exchange_weak_explicit(a, &expected, desired, memory_order_relaxed, memory_order_relaxed);
}

// A read_write texture's fence(): its writes visible to the same thread's later reads. The
// texels are plain memory that the thread itself wrote, so only the compiler may reorder them.
METAL_FUNC void fence() {
#if METAL_CUDA
  __threadfence_block();
#else
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
#endif
}
}  // namespace mtl_tex

}  // namespace metal

// MSL's fence() of the texture types that may be read_write (SPIRV-Cross's spvImageFence).
#define MTL_TEXTURE_FENCE                                                                                   \
  METAL_FUNC void fence() const {                                                                           \
    static_assert(A == access::read_write, "fence() is a member of read_write textures only"); \
    mtl_tex::fence();                                                                                       \
  }

// The atomic member functions of a texture type whose coordinates are the parameters after
// the first three arguments, naming texel (X, Y, Z).
#define MTL_TEXTURE_ATOMIC_OP(NAME, OP, X, Y, Z, ...)                                               \
  METAL_FUNC vec<T, 4> NAME(__VA_ARGS__, const vec<T, 4>& v) const {                               \
    return mtl_tex::atomic_apply<T>(*mtl_d, mtl_tex::OP, v.x, X, Y, Z);                           \
  }
#define MTL_TEXTURE_ATOMICS(X, Y, Z, ...)                                                            \
  METAL_FUNC vec<T, 4> atomic_load(__VA_ARGS__) const {                                             \
    return mtl_tex::atomic_apply<T>(*mtl_d, mtl_tex::op_load, T(0), X, Y, Z);                     \
  }                                                                                                  \
  METAL_FUNC void atomic_store(__VA_ARGS__, const vec<T, 4>& v) const {                            \
    mtl_tex::atomic_apply<T>(*mtl_d, mtl_tex::op_store, v.x, X, Y, Z);                            \
  }                                                                                                  \
  template <class P> METAL_FUNC bool atomic_compare_exchange_weak(__VA_ARGS__, P expected, const vec<T, 4>& desired) const { \
    return mtl_tex::atomic_cas<T>(*mtl_d, (*expected)[0], desired.x, X, Y, Z);                    \
  }                                                                                                  \
  MTL_TEXTURE_ATOMIC_OP(atomic_exchange, op_exchange, X, Y, Z, __VA_ARGS__)                          \
  MTL_TEXTURE_ATOMIC_OP(atomic_fetch_add, op_add, X, Y, Z, __VA_ARGS__)                              \
  MTL_TEXTURE_ATOMIC_OP(atomic_fetch_sub, op_sub, X, Y, Z, __VA_ARGS__)                              \
  MTL_TEXTURE_ATOMIC_OP(atomic_fetch_and, op_and, X, Y, Z, __VA_ARGS__)                              \
  MTL_TEXTURE_ATOMIC_OP(atomic_fetch_or, op_or, X, Y, Z, __VA_ARGS__)                                \
  MTL_TEXTURE_ATOMIC_OP(atomic_fetch_xor, op_xor, X, Y, Z, __VA_ARGS__)                              \
  MTL_TEXTURE_ATOMIC_OP(atomic_fetch_min, op_min, X, Y, Z, __VA_ARGS__)                              \
  MTL_TEXTURE_ATOMIC_OP(atomic_fetch_max, op_max, X, Y, Z, __VA_ARGS__)
