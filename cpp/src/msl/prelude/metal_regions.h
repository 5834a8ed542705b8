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

// ---- SIMD-group exchanges as region boundaries (msl/passes/simd_exchanges.hpp) ----
// A statement calling simd_sum(x), simd_shuffle_down(x, d), quad_broadcast(x, l) ... at a
// region's top level starts a region: each thread of the previous one puts its x in the site's
// storage (mtl_put), the group then runs the exchange over each SIMD-group's lanes (all of them
// active: nothing has returned before a later region), and the call reads its thread's result
// (mtl_take). The results are the fibers' (metal_simdgroup.h): the same lanes in the same order.
struct mtl_exchange_site {
  alignas(32) unsigned char values[1024 * 32];  // each thread's value, then (in place) its result
  alignas(8) unsigned char votes[1024 * 8];     // ballots, all and any: each thread's result
  mtl_exchange_site() {}
  mtl_exchange_site(const mtl_exchange_site&) = delete;
  mtl_exchange_site& operator=(const mtl_exchange_site&) = delete;
};

// The type an exchange's value takes: the by-value parameter's of the SIMD-group function.
template <class T> struct mtl_exchanged { typedef typename remove_cv<remove_reference_t<T>>::type type; };
template <class T> using mtl_exchanged_t = typename mtl_exchanged<T>::type;

template <class T> inline T* mtl_values(mtl_exchange_site& s) { return reinterpret_cast<T*>(s.values); }

template <class T> inline void mtl_put(mtl_exchange_site& s, unsigned ti, const T& x) {
  typedef mtl_exchanged_t<T> V;
  static_assert(sizeof(V) <= 32, "value too large for a SIMD-group exchange");
  mtl_values<V>(s)[ti] = x;
}
// Between the regions, over the group's `count` threads in W-wide groups; `arg` is the call's
// lane, delta or mask (the same for every thread).
template <class Op, class V> inline void mtl_run(mtl_exchange_site& s, unsigned count, unsigned W, unsigned arg) {
  Op::template run<V>(s, count, W, arg);
}
template <class V> inline V mtl_take(mtl_exchange_site& s, unsigned ti) { return mtl_values<V>(s)[ti]; }
template <class V> inline V mtl_take_vote(mtl_exchange_site& s, unsigned ti) { return reinterpret_cast<V*>(s.votes)[ti]; }

// Each W-wide group of the threadgroup's `count` threads (the last one may be short).
template <class F> inline void mtl_each_group(unsigned count, unsigned W, F f) {
  for (unsigned base = 0; base < count; base += W) f(base, count - base < W ? count - base : W);
}

template <template <class> class F> struct mtl_x_reduce {
  template <class T> static void run(mtl_exchange_site& s, unsigned count, unsigned W, unsigned) {
    T* v = mtl_values<T>(s);
    mtl_each_group(count, W, [&](unsigned base, unsigned n) {
      T r = v[base];
      for (unsigned i = 1; i < n; ++i) r = F<T>()(r, v[base + i]);
      for (unsigned i = 0; i < n; ++i) v[base + i] = r;
    });
  }
};
template <template <class> class F, int Identity, bool Inclusive> struct mtl_x_prefix {
  template <class T> static void run(mtl_exchange_site& s, unsigned count, unsigned W, unsigned) {
    T* v = mtl_values<T>(s);
    mtl_each_group(count, W, [&](unsigned base, unsigned n) {
      T r = T(Identity);
      for (unsigned i = 0; i < n; ++i) {
        const T x = v[base + i];
        if (Inclusive) r = F<T>()(r, x);
        v[base + i] = r;
        if (!Inclusive) r = F<T>()(r, x);
      }
    });
  }
};
// Shuffles: lane `me` reads Source()(me, W, arg)'s value; a source past the group's lanes, or
// none (kNoLane), gives the lane its own value (the fibers' read_lane).
constexpr unsigned kNoLane = ~0u;
template <class Source> struct mtl_x_shuffle {
  template <class T> static void run(mtl_exchange_site& s, unsigned count, unsigned W, unsigned arg) {
    T* v = mtl_values<T>(s);
    mtl_each_group(count, W, [&](unsigned base, unsigned n) {
      T own[64];
      for (unsigned i = 0; i < n; ++i) own[i] = v[base + i];
      for (unsigned me = 0; me < n; ++me) {
        const unsigned from = Source()(me, W, arg);
        v[base + me] = from < n ? own[from] : own[me];
      }
    });
  }
};
struct mtl_from_lane { unsigned operator()(unsigned, unsigned, unsigned lane) const { return lane; } };
struct mtl_from_first { unsigned operator()(unsigned, unsigned, unsigned) const { return 0; } };
struct mtl_from_up {
  unsigned operator()(unsigned me, unsigned, unsigned d) const { return me >= d ? me - d : kNoLane; }
};
struct mtl_from_down {
  unsigned operator()(unsigned me, unsigned W, unsigned d) const { return me + d < W ? me + d : kNoLane; }
};
struct mtl_from_xor {
  unsigned operator()(unsigned me, unsigned W, unsigned m) const { return (me ^ m) & (W - 1); }
};
struct mtl_from_rotate_down {
  unsigned operator()(unsigned me, unsigned W, unsigned d) const { return (me + d) % W; }
};
struct mtl_from_rotate_up {
  unsigned operator()(unsigned me, unsigned W, unsigned d) const { return (me + W - (d % W)) % W; }
};
// Ballots, all and any of a bool: every lane of the group gets its group's answer.
template <class Vote, int Kind> struct mtl_x_vote {  // Kind 0: ballot, 1: all, 2: any
  template <class T> static void run(mtl_exchange_site& s, unsigned count, unsigned W, unsigned) {
    const T* v = mtl_values<T>(s);
    mtl_each_group(count, W, [&](unsigned base, unsigned n) {
      simd_vote::vote_t bits = 0;
      for (unsigned i = 0; i < n; ++i)
        if (bool(v[base + i])) bits |= simd_vote::vote_t(1) << i;
      const simd_vote::vote_t every = n == 64 ? ~simd_vote::vote_t(0) : (simd_vote::vote_t(1) << n) - 1;
      for (unsigned i = 0; i < n; ++i) {
        if (Kind == 0) reinterpret_cast<Vote*>(s.votes)[base + i] = Vote(typename Vote::vote_t(bits));
        else reinterpret_cast<bool*>(s.votes)[base + i] = Kind == 1 ? bits == every : bits != 0;
      }
    });
  }
};

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
