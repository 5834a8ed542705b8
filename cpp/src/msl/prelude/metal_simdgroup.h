// metalcall MSL prelude: SIMD-group (width 32; on the CPU the launch's, which the Metal simulator
// sets to a pipeline's 8 to 64) and quad-group (width 4) functions.
//
// On the CPU the lanes of a SIMD-group are fibers of one worker thread. A lane
// publishes its value in the worker's scratch area and waits at its call's site
// (mtl_rt::simd_meet, metal_sync.h); the lanes that go on together there share a
// token and are the call's active lanes: each reads what the others published,
// and a second rendezvous keeps the slots until all have read. A lane elsewhere
// (another call, a threadgroup barrier, returned) takes no part, as on the GPU.
#pragma once
#include "metal_integer.h"  // wrapping_add, wrapping_mul

namespace metal {

/** The result of simd_ballot: one bit per lane. */
struct simd_vote {
  typedef unsigned long long vote_t;
  vote_t mtl_bits;
  METAL_FUNC constexpr explicit simd_vote(vote_t bits = 0) : mtl_bits(bits) {}
  // MSL's vote_t is ulong; uint64_t is unsigned long on Linux and unsigned long long on macOS.
  METAL_FUNC constexpr explicit operator unsigned long long() const { return mtl_bits; }
  METAL_FUNC constexpr explicit operator unsigned long() const { return (unsigned long)mtl_bits; }
  // The bits of the SIMD-group's lanes only (MSL: the top bits of a narrower SIMD-group are undefined);
  // all() is every lane's bit, whichever lanes are active. Defined below, with the width.
  METAL_FUNC bool all() const;
  METAL_FUNC bool any() const;
};

/** The result of quad_ballot: the four bottom bits (MSL: the constructor clears the others). */
struct quad_vote {
  typedef unsigned vote_t;
  vote_t mtl_bits;
  METAL_FUNC constexpr explicit quad_vote(vote_t bits = 0) : mtl_bits(bits & 0xFu) {}
  METAL_FUNC constexpr explicit operator vote_t() const { return mtl_bits; }
  METAL_FUNC constexpr bool all() const { return mtl_bits == 0xFu; }
  METAL_FUNC constexpr bool any() const { return mtl_bits != 0; }
};

#if !METAL_CUDA

// Prelude functions that call SIMD-group functions pass their own caller's line on, so the
// rendezvous is at the user's call (CUDA needs no line).
#define METALCALL_SIMD_LINE_PARAM , ::metal::mtl_rt::simd_at mtl_line = ::metal::mtl_rt::simd_at(__builtin_LINE())
#define METALCALL_SIMD_LINE , mtl_line

namespace mtl_rt {

constexpr unsigned kSlotBytes = 64;  // the largest value exchanged: a 4-vector of 64-bit (or a matrix row)
constexpr unsigned kMaxLanes = 1024;

// W, the group's width, is a run-time value for SIMD-groups (simd_lanes(): 32, or the width of a
// simulated Metal pipeline, 8 to 64) and 4 for quad-groups; always a power of two.

/** Where the calling lane sits: its index in the group, its W-wide group's first lane and size. */
struct lanes {
  unsigned tid, base, count;
  inline explicit lanes(unsigned W) {
    tid = thread_index();
    base = tid & ~(W - 1);
    const unsigned left = group_threads - base;
    count = left < W ? left : W;
  }
};

// Each lane owns a fixed 64-byte slot: SIMD-groups progress independently, so a
// type-dependent stride would let one group's slots overlap another's.
template <class T> inline T& slot(unsigned tid) {
  static_assert(sizeof(T) <= kSlotBytes, "value too large for a SIMD-group exchange");
  return *reinterpret_cast<T*>(worker->simd_scratch + tid * kSlotBytes);
}
/** Publishes x and waits at `site` with the lanes that reach it; returns the lanes' shared token. */
template <class T> inline unsigned publish(unsigned tid, const T& x, simd_site_t site) {
  slot<T>(tid) = x;
  return simd_meet(site);
}
// A token with the top bit set went to every lane of the SIMD-group (backends/cpu/fiber.hpp).
inline bool active(unsigned lane_tid, unsigned op) { return (op >> 31) || simd_tokens()[lane_tid] == op; }

// The value lane `source` (relative to the group) published, or `own` if that lane is not active.
template <class T> inline T read_lane(const lanes& l, unsigned op, unsigned source, const T& own) {
  if (source >= l.count || !active(l.base + source, op)) return own;
  return slot<T>(l.base + source);
}

template <class T, class F> inline T reduce(unsigned W, T x, F f, simd_site_t site) {
  lanes l(W);
  const unsigned op = publish(l.tid, x, site);
  T r = x;
  bool first = true;
  for (unsigned i = 0; i < l.count; ++i) {
    if (!active(l.base + i, op)) continue;
    const T v = slot<T>(l.base + i);
    r = first ? v : f(r, v);
    first = false;
  }
  simd_leave();
  return r;
}

template <class T, class F> inline T prefix(unsigned W, T x, F f, T identity, bool inclusive, simd_site_t site) {
  lanes l(W);
  const unsigned op = publish(l.tid, x, site);
  T r = identity;
  const unsigned me = l.tid - l.base;
  for (unsigned i = 0; i < l.count && (inclusive ? i <= me : i < me); ++i)
    if (active(l.base + i, op)) r = f(r, slot<T>(l.base + i));
  simd_leave();
  return r;
}

template <class T> inline T shuffle(unsigned W, T x, unsigned source_of_me_plus_one, simd_site_t site) {
  // source_of_me_plus_one == 0 means "keep my own value".
  lanes l(W);
  const unsigned op = publish(l.tid, x, site);
  const T r = source_of_me_plus_one ? read_lane(l, op, source_of_me_plus_one - 1, x) : x;
  simd_leave();
  return r;
}

inline unsigned lane_id(unsigned W) { return thread_index() & (W - 1); }
/** The SIMD-group's width and the calling lane's index in it (both targets spell these alike). */
inline unsigned simd_width_now() { return simd_lanes(); }
inline unsigned simd_lane_now() { return lane_id(simd_lanes()); }

inline simd_vote ballot(unsigned W, bool b, simd_site_t site) {
  lanes l(W);
  const unsigned op = publish(l.tid, b, site);
  simd_vote::vote_t bits = 0;
  for (unsigned i = 0; i < l.count; ++i)
    if (active(l.base + i, op) && slot<bool>(l.base + i)) bits |= simd_vote::vote_t(1) << i;
  simd_leave();
  return simd_vote(bits);
}

inline simd_vote active_mask(unsigned W, simd_site_t site) {
  lanes l(W);
  const unsigned op = publish(l.tid, true, site);
  simd_vote::vote_t bits = 0;
  for (unsigned i = 0; i < l.count; ++i)
    if (active(l.base + i, op)) bits |= simd_vote::vote_t(1) << i;
  simd_leave();
  return simd_vote(bits);
}

// Integer sums and products wrap (metal_integer.h), as on GPUs.
template <class T> struct add_op { inline T operator()(T a, T b) const { return mtl_detail::wrapping_add(a, b); } };
template <class T> struct mul_op { inline T operator()(T a, T b) const { return mtl_detail::wrapping_mul(a, b); } };
template <class T> struct min_op { inline T operator()(T a, T b) const { return metal::min(a, b); } };
template <class T> struct max_op { inline T operator()(T a, T b) const { return metal::max(a, b); } };
template <class T> struct and_op { inline T operator()(T a, T b) const { return a & b; } };
template <class T> struct or_op { inline T operator()(T a, T b) const { return a | b; } };
template <class T> struct xor_op { inline T operator()(T a, T b) const { return a ^ b; } };

}  // namespace mtl_rt

// Both widths share one set of definitions; the prefix names the group, W its width (an expression),
// K numbers the group's functions in their sites. Each function takes its call's line (mtl_line).
#define METALCALL_SITE(k, n) mtl_rt::simd_site(mtl_line, (k) + (n))
#define METALCALL_AT ::metal::mtl_rt::simd_at mtl_line = ::metal::mtl_rt::simd_at(__builtin_LINE())
#define METALCALL_GROUP_FUNCTIONS(P, W, K, V)                                                                    \
  template <class T> inline T P##_sum(T x, METALCALL_AT) { return mtl_rt::reduce(W, x, mtl_rt::add_op<T>(), METALCALL_SITE(K, 0)); } \
  template <class T> inline T P##_product(T x, METALCALL_AT) { return mtl_rt::reduce(W, x, mtl_rt::mul_op<T>(), METALCALL_SITE(K, 1)); } \
  template <class T> inline T P##_min(T x, METALCALL_AT) { return mtl_rt::reduce(W, x, mtl_rt::min_op<T>(), METALCALL_SITE(K, 2)); } \
  template <class T> inline T P##_max(T x, METALCALL_AT) { return mtl_rt::reduce(W, x, mtl_rt::max_op<T>(), METALCALL_SITE(K, 3)); } \
  template <class T> inline T P##_and(T x, METALCALL_AT) { return mtl_rt::reduce(W, x, mtl_rt::and_op<T>(), METALCALL_SITE(K, 4)); } \
  template <class T> inline T P##_or(T x, METALCALL_AT) { return mtl_rt::reduce(W, x, mtl_rt::or_op<T>(), METALCALL_SITE(K, 5)); } \
  template <class T> inline T P##_xor(T x, METALCALL_AT) { return mtl_rt::reduce(W, x, mtl_rt::xor_op<T>(), METALCALL_SITE(K, 6)); } \
  template <class T> inline T P##_prefix_inclusive_sum(T x, METALCALL_AT) {                                    \
    return mtl_rt::prefix(W, x, mtl_rt::add_op<T>(), T(0), true, METALCALL_SITE(K, 7));                            \
  }                                                                                                             \
  template <class T> inline T P##_prefix_exclusive_sum(T x, METALCALL_AT) {                                    \
    return mtl_rt::prefix(W, x, mtl_rt::add_op<T>(), T(0), false, METALCALL_SITE(K, 8));                           \
  }                                                                                                             \
  template <class T> inline T P##_prefix_inclusive_product(T x, METALCALL_AT) {                                \
    return mtl_rt::prefix(W, x, mtl_rt::mul_op<T>(), T(1), true, METALCALL_SITE(K, 9));                            \
  }                                                                                                             \
  template <class T> inline T P##_prefix_exclusive_product(T x, METALCALL_AT) {                                \
    return mtl_rt::prefix(W, x, mtl_rt::mul_op<T>(), T(1), false, METALCALL_SITE(K, 10));                          \
  }                                                                                                             \
  template <class T> inline T P##_broadcast(T x, unsigned short lane, METALCALL_AT) {                          \
    return mtl_rt::shuffle(W, x, unsigned(lane) + 1, METALCALL_SITE(K, 11));                                       \
  }                                                                                                             \
  template <class T> inline T P##_shuffle(T x, unsigned short lane, METALCALL_AT) {                            \
    return mtl_rt::shuffle(W, x, unsigned(lane) + 1, METALCALL_SITE(K, 12));                                       \
  }                                                                                                             \
  template <class T> inline T P##_shuffle_up(T x, unsigned short delta, METALCALL_AT) {                        \
    const unsigned me = mtl_rt::lane_id(W);                                                                     \
    return mtl_rt::shuffle(W, x, me >= delta ? me - delta + 1 : 0, METALCALL_SITE(K, 13));                         \
  }                                                                                                             \
  template <class T> inline T P##_shuffle_down(T x, unsigned short delta, METALCALL_AT) {                      \
    const unsigned me = mtl_rt::lane_id(W);                                                                     \
    return mtl_rt::shuffle(W, x, me + delta < (W) ? me + delta + 1 : 0, METALCALL_SITE(K, 14));                    \
  }                                                                                                             \
  template <class T> inline T P##_shuffle_xor(T x, unsigned short mask, METALCALL_AT) {                        \
    return mtl_rt::shuffle(W, x, ((mtl_rt::lane_id(W) ^ mask) & ((W) - 1)) + 1, METALCALL_SITE(K, 15));           \
  }                                                                                                             \
  template <class T> inline T P##_shuffle_rotate_down(T x, unsigned short delta, METALCALL_AT) {               \
    return mtl_rt::shuffle(W, x, ((mtl_rt::lane_id(W) + delta) % (W)) + 1, METALCALL_SITE(K, 16));                \
  }                                                                                                             \
  template <class T> inline T P##_shuffle_rotate_up(T x, unsigned short delta, METALCALL_AT) {                 \
    return mtl_rt::shuffle(W, x, ((mtl_rt::lane_id(W) + (W) - (delta % (W))) % (W)) + 1, METALCALL_SITE(K, 17));  \
  }                                                                                                             \
  inline V P##_ballot(bool b, METALCALL_AT) {                                                                   \
    return V(V::vote_t(simd_vote::vote_t(mtl_rt::ballot(W, b, METALCALL_SITE(K, 18)))));                         \
  }                                                                                                             \
  inline V P##_active_threads_mask(METALCALL_AT) {                                                              \
    return V(V::vote_t(simd_vote::vote_t(mtl_rt::active_mask(W, METALCALL_SITE(K, 19)))));                       \
  }                                                                                                             \
  inline bool P##_all(bool b, METALCALL_AT) {                                                                   \
    const simd_vote active = mtl_rt::active_mask(W, METALCALL_SITE(K, 20));                                        \
    return simd_vote::vote_t(mtl_rt::ballot(W, b, METALCALL_SITE(K, 20))) == simd_vote::vote_t(active);            \
  }                                                                                                             \
  inline bool P##_any(bool b, METALCALL_AT) { return simd_vote::vote_t(mtl_rt::ballot(W, b, METALCALL_SITE(K, 21))) != 0; } \
  inline bool P##_is_first(METALCALL_AT) {                                                                      \
    const simd_vote::vote_t m = simd_vote::vote_t(mtl_rt::active_mask(W, METALCALL_SITE(K, 22)));                  \
    return m && (m & (~m + 1)) == (simd_vote::vote_t(1) << mtl_rt::lane_id(W));                                 \
  }                                                                                                             \
  template <class T> inline T P##_broadcast_first(T x, METALCALL_AT) {                                         \
    const simd_vote::vote_t m = simd_vote::vote_t(mtl_rt::active_mask(W, METALCALL_SITE(K, 23)));                  \
    return mtl_rt::shuffle(W, x, unsigned(__builtin_ctzll(m)) + 1, METALCALL_SITE(K, 23));                         \
  }

METALCALL_GROUP_FUNCTIONS(simd, mtl_rt::simd_lanes(), 0, simd_vote)
METALCALL_GROUP_FUNCTIONS(quad, 4u, 32, quad_vote)
#undef METALCALL_GROUP_FUNCTIONS
#undef METALCALL_SITE
#undef METALCALL_AT

#else  // METAL_CUDA

#define METALCALL_SIMD_LINE_PARAM
#define METALCALL_SIMD_LINE

// On CUDA a SIMD-group is a warp (the runtime launches whole threadgroups as
// blocks, so lane i of a SIMD-group is lane i of a warp) and a quad-group is 4
// lanes of it. MSL's SIMD functions act on the active lanes: __activemask() names
// them, and the shuffles below take that mask. Values of any type travel as
// 32-bit words. A read from an inactive lane returns the reader's own value, as
// the CPU backend does.
namespace mtl_rt {

METAL_FUNC unsigned lane() {
  unsigned l;
  asm volatile("mov.u32 %0, %%laneid;" : "=r"(l));
  return l;
}

// A value of any type travels as 32-bit words. A last word of 1-3 bytes is widened from a
// narrower integer, never packed into a zeroed word: ptxas (sm_90, CUDA 12 and 13) builds such a
// pack in place over the register it came from, so a wider value still held there (the long a
// short was truncated from) lost its bits 16-31 (fuzz seed 27101 #714).
template <class T> METAL_FUNC T shfl(unsigned mask, const T& x, unsigned src) {
  if constexpr (small_int_parts<T>::count > 0) {  // char ... ushort, bool and their vectors: widened (as_type's reason)
    unsigned w[(sizeof(T) + 3) / 4];
    small_int_words(x, w);
#pragma unroll
    for (unsigned i = 0; i < (sizeof(T) + 3) / 4; ++i) w[i] = __shfl_sync(mask, w[i], int(src));
    T r;
    memcpy(&r, w, sizeof(T));
    return r;
  }
  constexpr unsigned N = sizeof(T) / 4, K = sizeof(T) % 4, C = K >= 2 ? 2 : 0;
  const unsigned char* from = reinterpret_cast<const unsigned char*>(&x);
  T r = x;
  unsigned char* to = reinterpret_cast<unsigned char*>(&r);
#pragma unroll
  for (unsigned i = 0; i < N; ++i) {
    unsigned w;
    memcpy(&w, from + 4 * i, 4);
    w = __shfl_sync(mask, w, int(src));
    memcpy(to + 4 * i, &w, 4);
  }
  if constexpr (K != 0) {
    unsigned short h = 0;  // bytes 0-1 of the tail (K = 2, 3)
    unsigned char c = 0;   // its odd byte (K = 1, 3)
    if constexpr (K >= 2) memcpy(&h, from + 4 * N, 2);
    if constexpr (K != 2) memcpy(&c, from + 4 * N + C, 1);
    const unsigned w = __shfl_sync(mask, unsigned(h) | (unsigned(c) << (8 * C)), int(src));
    h = (unsigned short)w;
    c = (unsigned char)(w >> (8 * C));
    if constexpr (K >= 2) memcpy(to + 4 * N, &h, 2);
    if constexpr (K != 2) memcpy(to + 4 * N + C, &c, 1);
  }
  return r;
}

/** The active lanes of the calling lane's W-wide group, as bits of the warp. */
template <unsigned W> METAL_FUNC unsigned group_mask(unsigned active, unsigned me) {
  if (W == 32) return active;
  const unsigned base = me & ~(W - 1);
  return active & (((1u << W) - 1u) << base);
}

template <unsigned W, class T, class F> METAL_FUNC T reduce(T x, F f) {
  const unsigned active = __activemask();
  const unsigned me = lane();
  if (active == 0xffffffffu) {  // a full warp: a butterfly (every lane ends with the same value)
#pragma unroll
    for (unsigned d = 1; d < W; d <<= 1) x = f(x, shfl(active, x, me ^ d));
    return x;
  }
  const unsigned mine = group_mask<W>(active, me);
  T r = x;
  bool first = true;
  // Every active lane of the warp runs the same shuffles (one mask for all);
  // each keeps the values of its own W-wide group.
  for (unsigned bits = active; bits; bits &= bits - 1) {
    const unsigned src = unsigned(__ffs(int(bits))) - 1;
    const T v = shfl(active, x, src);
    if (!((mine >> src) & 1u)) continue;
    r = first ? v : f(r, v);
    first = false;
  }
  return r;
}

template <unsigned W, class T, class F> METAL_FUNC T prefix(T x, F f, T identity, bool inclusive) {
  const unsigned active = __activemask();
  const unsigned me = lane();
  const unsigned mine = group_mask<W>(active, me);
  T r = identity;
  for (unsigned bits = active; bits; bits &= bits - 1) {
    const unsigned src = unsigned(__ffs(int(bits))) - 1;
    const T v = shfl(active, x, src);
    if (((mine >> src) & 1u) && (inclusive ? src <= me : src < me)) r = f(r, v);
  }
  return r;
}

// source: the lane (relative to the W-wide group) to read, or W or more for "keep mine".
template <unsigned W, class T> METAL_FUNC T shuffle(T x, unsigned source) {
  const unsigned active = __activemask();
  const unsigned me = lane();
  const unsigned base = me & ~(W - 1);
  const unsigned src = base + (source < W ? source : 0u);
  const T v = shfl(active, x, src);
  return source < W && ((active >> src) & 1u) ? v : x;
}

template <unsigned W> METAL_FUNC unsigned lane_id() { return lane() & (W - 1); }
/** The SIMD-group's width (a warp's) and the calling lane's index in it. */
METAL_FUNC unsigned simd_width_now() { return 32u; }
METAL_FUNC unsigned simd_lane_now() { return lane_id<32>(); }

template <unsigned W> METAL_FUNC simd_vote ballot(bool b) {
  const unsigned active = __activemask();
  const unsigned bits = __ballot_sync(active, b);
  const unsigned me = lane();
  return simd_vote(W == 32 ? bits : (bits >> (me & ~(W - 1))) & ((1u << W) - 1u));
}

template <unsigned W> METAL_FUNC simd_vote active_mask() {
  const unsigned active = __activemask();
  const unsigned me = lane();
  return simd_vote(W == 32 ? active : (active >> (me & ~(W - 1))) & ((1u << W) - 1u));
}

// Integer sums and products wrap (metal_integer.h), as on Apple GPUs.
template <class T> struct add_op { METAL_FUNC T operator()(T a, T b) const { return mtl_detail::wrapping_add(a, b); } };
template <class T> struct mul_op { METAL_FUNC T operator()(T a, T b) const { return mtl_detail::wrapping_mul(a, b); } };
template <class T> struct min_op { METAL_FUNC T operator()(T a, T b) const { return metal::min(a, b); } };
template <class T> struct max_op { METAL_FUNC T operator()(T a, T b) const { return metal::max(a, b); } };
template <class T> struct and_op { METAL_FUNC T operator()(T a, T b) const { return a & b; } };
template <class T> struct or_op { METAL_FUNC T operator()(T a, T b) const { return a | b; } };
template <class T> struct xor_op { METAL_FUNC T operator()(T a, T b) const { return a ^ b; } };

}  // namespace mtl_rt

#define METALCALL_GROUP_FUNCTIONS(P, W, V)                                                                       \
  template <class T> METAL_FUNC T P##_sum(T x) { return mtl_rt::reduce<W>(x, mtl_rt::add_op<T>()); }           \
  template <class T> METAL_FUNC T P##_product(T x) { return mtl_rt::reduce<W>(x, mtl_rt::mul_op<T>()); }       \
  template <class T> METAL_FUNC T P##_min(T x) { return mtl_rt::reduce<W>(x, mtl_rt::min_op<T>()); }           \
  template <class T> METAL_FUNC T P##_max(T x) { return mtl_rt::reduce<W>(x, mtl_rt::max_op<T>()); }           \
  template <class T> METAL_FUNC T P##_and(T x) { return mtl_rt::reduce<W>(x, mtl_rt::and_op<T>()); }           \
  template <class T> METAL_FUNC T P##_or(T x) { return mtl_rt::reduce<W>(x, mtl_rt::or_op<T>()); }             \
  template <class T> METAL_FUNC T P##_xor(T x) { return mtl_rt::reduce<W>(x, mtl_rt::xor_op<T>()); }           \
  template <class T> METAL_FUNC T P##_prefix_inclusive_sum(T x) {                                              \
    return mtl_rt::prefix<W>(x, mtl_rt::add_op<T>(), T(0), true);                                               \
  }                                                                                                             \
  template <class T> METAL_FUNC T P##_prefix_exclusive_sum(T x) {                                              \
    return mtl_rt::prefix<W>(x, mtl_rt::add_op<T>(), T(0), false);                                              \
  }                                                                                                             \
  template <class T> METAL_FUNC T P##_prefix_inclusive_product(T x) {                                          \
    return mtl_rt::prefix<W>(x, mtl_rt::mul_op<T>(), T(1), true);                                               \
  }                                                                                                             \
  template <class T> METAL_FUNC T P##_prefix_exclusive_product(T x) {                                          \
    return mtl_rt::prefix<W>(x, mtl_rt::mul_op<T>(), T(1), false);                                              \
  }                                                                                                             \
  template <class T> METAL_FUNC T P##_broadcast(T x, unsigned short lane) { return mtl_rt::shuffle<W>(x, unsigned(lane)); } \
  template <class T> METAL_FUNC T P##_shuffle(T x, unsigned short lane) { return mtl_rt::shuffle<W>(x, unsigned(lane)); } \
  template <class T> METAL_FUNC T P##_shuffle_up(T x, unsigned short delta) {                                  \
    const unsigned me = mtl_rt::lane_id<W>();                                                                   \
    return mtl_rt::shuffle<W>(x, me >= delta ? me - delta : W);                                                 \
  }                                                                                                             \
  template <class T> METAL_FUNC T P##_shuffle_down(T x, unsigned short delta) {                                \
    const unsigned me = mtl_rt::lane_id<W>();                                                                   \
    return mtl_rt::shuffle<W>(x, me + delta < W ? me + delta : W);                                              \
  }                                                                                                             \
  template <class T> METAL_FUNC T P##_shuffle_xor(T x, unsigned short mask) {                                  \
    return mtl_rt::shuffle<W>(x, (mtl_rt::lane_id<W>() ^ mask) & (W - 1));                                     \
  }                                                                                                             \
  template <class T> METAL_FUNC T P##_shuffle_rotate_down(T x, unsigned short delta) {                         \
    return mtl_rt::shuffle<W>(x, (mtl_rt::lane_id<W>() + delta) % W);                                           \
  }                                                                                                             \
  template <class T> METAL_FUNC T P##_shuffle_rotate_up(T x, unsigned short delta) {                           \
    return mtl_rt::shuffle<W>(x, (mtl_rt::lane_id<W>() + W - (delta % W)) % W);                                 \
  }                                                                                                             \
  METAL_FUNC V P##_ballot(bool b) { return V(V::vote_t(simd_vote::vote_t(mtl_rt::ballot<W>(b)))); }   \
  METAL_FUNC V P##_active_threads_mask() {                                                                     \
    return V(V::vote_t(simd_vote::vote_t(mtl_rt::active_mask<W>())));                                 \
  }                                                                                                             \
  METAL_FUNC bool P##_all(bool b) {                                                                             \
    return simd_vote::vote_t(mtl_rt::ballot<W>(b)) == simd_vote::vote_t(mtl_rt::active_mask<W>());             \
  }                                                                                                             \
  METAL_FUNC bool P##_any(bool b) { return simd_vote::vote_t(mtl_rt::ballot<W>(b)) != 0; }                    \
  METAL_FUNC bool P##_is_first() {                                                                              \
    const simd_vote::vote_t m = simd_vote::vote_t(mtl_rt::active_mask<W>());                                   \
    return m && (m & (~m + 1)) == (simd_vote::vote_t(1) << mtl_rt::lane_id<W>());                               \
  }                                                                                                             \
  template <class T> METAL_FUNC T P##_broadcast_first(T x) {                                                   \
    const simd_vote::vote_t m = simd_vote::vote_t(mtl_rt::active_mask<W>());                                   \
    return mtl_rt::shuffle<W>(x, unsigned(__ffsll((long long)m)) - 1u);                                         \
  }

METALCALL_GROUP_FUNCTIONS(simd, 32, simd_vote)
METALCALL_GROUP_FUNCTIONS(quad, 4, quad_vote)
#undef METALCALL_GROUP_FUNCTIONS

#endif  // !METAL_CUDA

namespace mtl_rt {
/** The bits of a SIMD-group's lanes in a simd_vote. */
METAL_FUNC simd_vote::vote_t simd_lane_bits() {
  const unsigned w = simd_width_now();
  return w >= 64 ? ~simd_vote::vote_t(0) : (simd_vote::vote_t(1) << w) - 1;
}
}  // namespace mtl_rt
METAL_FUNC bool simd_vote::all() const { return (mtl_bits & mtl_rt::simd_lane_bits()) == mtl_rt::simd_lane_bits(); }
METAL_FUNC bool simd_vote::any() const { return (mtl_bits & mtl_rt::simd_lane_bits()) != 0; }

}  // namespace metal
