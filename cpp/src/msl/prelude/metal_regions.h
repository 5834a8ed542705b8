// metalcall MSL prelude (CPU only): what a kernel written as regions between barriers uses
// (msl/passes/barrier_regions.hpp). Its body runs once per threadgroup; each region is a loop
// over the group's threads (__metalcall_threads), and a thread's local that a later region
// reads lives in an array indexed by the thread's index in the group (mtl_slots).
#pragma once

#if !METAL_CUDA

namespace metal {
namespace mtl_regions {
// A barrier's arguments where the barrier became the end of a region (msl/passes/barrier_regions):
// the same parameters as threadgroup_barrier (metal_sync.h), so that they are checked alike.
inline void barrier_arguments(mem_flags = mem_flags::mem_none) {}

// The group being run, set by the entry point before each call of the kernel's body.
// Its fields are mtl_ names: the prelude's names stay unrenamed in a source (a field y0 kept a
// user's y0 from being renamed on CUDA, where NVRTC declares y0).
struct mtl_group {
  const metalcall_cpu_launch* mtl_L;
  unsigned mtl_sw, mtl_tx, mtl_ty, mtl_tz, mtl_gx, mtl_gy, mtl_gz, mtl_x0, mtl_y0, mtl_z0, mtl_ax, mtl_ay, mtl_az;
};
[[maybe_unused]] static thread_local mtl_group mtl_now;  // unused in sources without regions

// One value of type T per thread of the group (at most 1024 threads on the CPU). Up to 16
// bytes a value (a float4) on the stack, where the compiler sees that nothing else points into
// it; larger ones in storage of the worker thread's own (one array per slot `Id` of the
// library and type: a worker runs one group at a time). The values are copied in and out
// whole (mtl_store), never constructed: MSL's local types are trivially copyable.
template <class T, int Id, bool Small = (sizeof(T) <= 16)>
struct mtl_slots {
  explicit mtl_slots(unsigned) {}
  mtl_slots(const mtl_slots&) = delete;
  mtl_slots& operator=(const mtl_slots&) = delete;
  T& operator[](unsigned i) const { return storage()[i]; }

 private:
  static T* storage() {
    alignas(T) static thread_local unsigned char values[1024 * sizeof(T)];
    return reinterpret_cast<T*>(values);
  }
};

template <class T, int Id>
struct mtl_slots<T, Id, true> {
  explicit mtl_slots(unsigned) {}
  mtl_slots(const mtl_slots&) = delete;
  mtl_slots& operator=(const mtl_slots&) = delete;
  T& operator[](unsigned i) { return reinterpret_cast<T*>(values_)[i]; }

 private:
  alignas(T) unsigned char values_[1024 * sizeof(T)];
};

// A region's local into its thread's slot, at the region's end.
template <class T>
inline void mtl_store(T& to, const T& from) {
  if constexpr (__is_trivially_copyable(T)) __builtin_memcpy(static_cast<void*>(&to), static_cast<const void*>(&from), sizeof(T));
  else to = from;
}

}  // namespace mtl_regions
}  // namespace metal

// The start of a body written as regions: the group's names the builtins are written in
// (msl/targets/entry_points.hpp's builtin_component), and its thread count.
#define __metalcall_region_group                                                                     \
  const ::metal::mtl_regions::mtl_group mtl_rg = ::metal::mtl_regions::mtl_now;                      \
  const metalcall_cpu_launch* const mtl_L = mtl_rg.mtl_L;                                            \
  const unsigned mtl_sw = mtl_rg.mtl_sw, mtl_tx = mtl_rg.mtl_tx, mtl_ty = mtl_rg.mtl_ty;             \
  const unsigned mtl_tz = mtl_rg.mtl_tz, mtl_gx = mtl_rg.mtl_gx, mtl_gy = mtl_rg.mtl_gy;             \
  const unsigned mtl_gz = mtl_rg.mtl_gz, mtl_x0 = mtl_rg.mtl_x0, mtl_y0 = mtl_rg.mtl_y0;             \
  const unsigned mtl_z0 = mtl_rg.mtl_z0, mtl_ax = mtl_rg.mtl_ax, mtl_ay = mtl_rg.mtl_ay;             \
  const unsigned mtl_az = mtl_rg.mtl_az;                                                             \
  const unsigned mtl_count = mtl_ax * mtl_ay * mtl_az;                                               \
  (void)mtl_L, (void)mtl_sw, (void)mtl_tx, (void)mtl_ty, (void)mtl_tz, (void)mtl_gx, (void)mtl_gy,   \
      (void)mtl_gz, (void)mtl_x0, (void)mtl_y0, (void)mtl_z0, (void)mtl_count;
// A region: every thread of the group in turn (x fastest, as thread_index_in_threadgroup
// counts), vectorised across threads as the plain loop's (METALCALL_SIMD_LOOP).
#define __metalcall_threads                                          \
  for (unsigned mtl_lz = 0; mtl_lz < mtl_az; ++mtl_lz)                \
    for (unsigned mtl_ly = 0; mtl_ly < mtl_ay; ++mtl_ly)              \
      METALCALL_SIMD_LOOP                                             \
      for (unsigned mtl_x = mtl_x0; mtl_x < mtl_x0 + mtl_ax; ++mtl_x)
// Written `__metalcall_thread_ids ;` (the `;` the translation's later passes see: a
// declaration that starts the region is one of its own, not `__metalcall_thread_ids long a[2]`).
#define __metalcall_thread_ids                                               \
  const unsigned mtl_lx = mtl_x - mtl_x0;                                    \
  const unsigned mtl_ti = (mtl_lz * mtl_ay + mtl_ly) * mtl_ax + mtl_lx;      \
  (void)mtl_lx, (void)mtl_ti

#endif
