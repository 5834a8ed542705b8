// metalcall MSL prelude: SIMD-group matrices (MSL spec 6.7): simdgroup_matrix<T, 8, 8>,
// simdgroup_float8x8 / half8x8 / bfloat8x8, simdgroup_load/store/multiply[_accumulate],
// make_filled_simdgroup_matrix and thread_elements(). CUDA's version is in metal_simdgroup_matrix_cuda.h.
//
// Lane layout (Apple's, which kernels that use thread_elements() rely on): lane l owns
// row fm(l) and the adjacent columns fn(l), fn(l) + 1, where, from l's bits l4..l0,
// fm = 4*l4 + 2*l2 + l1 and fn = 4*l3 + 2*l0.
//
// CPU design. The lanes of a SIMD-group are fibers that run one after the other on one
// OS thread, and MSL requires every lane to make the same matrix calls with the same
// arguments. So the first lane of the group (the "leader", which the fiber ring runs
// first) does each load, product and store on its own full 8x8 copy, and the other
// lanes skip them. Only thread_elements() exposes per-lane values: it hands the
// leader's matrix to every lane (one SIMD-group exchange), and the next operation that
// reads the matrix gathers each lane's two (possibly modified) elements back into the
// leader (another exchange). Kernels that call thread_elements() run as fibers
// (source_analysis.cpp).
#pragma once

namespace metal {

namespace mtl_sgm {
/** The row and first column of the two elements lane l owns. */
METAL_FUNC constexpr unsigned row_of(unsigned l) { return ((l >> 4) & 1u) * 4u + ((l >> 2) & 1u) * 2u + ((l >> 1) & 1u); }
METAL_FUNC constexpr unsigned col_of(unsigned l) { return ((l >> 3) & 1u) * 4u + (l & 1u) * 2u; }
/** The lane that owns element (r, c). */
METAL_FUNC constexpr unsigned lane_of(unsigned r, unsigned c) {
  return ((r >> 2) & 1u) << 4 | ((c >> 2) & 1u) << 3 | ((r >> 1) & 1u) << 2 | (r & 1u) << 1 | ((c >> 1) & 1u);
}
/** Offset of element (r, c) of an 8x8 block at `origin` (x: column, y: row) of a row-major
 *  array with `epr` elements per row; `transpose` reads the block as its transpose. */
METAL_FUNC unsigned long offset(unsigned r, unsigned c, unsigned long epr, unsigned long ox, unsigned long oy,
                                bool transpose) {
  return transpose ? (oy + c) * epr + ox + r : (oy + r) * epr + ox + c;
}
}  // namespace mtl_sgm

template <class T, int Cols, int Rows> struct simdgroup_matrix;
typedef simdgroup_matrix<float, 8, 8> simdgroup_float8x8;
typedef simdgroup_matrix<mtl_half, 8, 8> simdgroup_half8x8;
typedef simdgroup_matrix<mtl_bfloat, 8, 8> simdgroup_bfloat8x8;

// METALCALL_SGM_ELEMENTS 0: no thread_elements() in the kernel's source (the translator
// defines it so), so no matrix is ever handed out to the lanes: the tests and flag stores
// of spread matrices go, and in the 31 lanes that are not a SIMD-group's leader a
// matrix call is nothing at all (their copies of a GEMM's K loop are empty).
#ifndef METALCALL_SGM_ELEMENTS
#define METALCALL_SGM_ELEMENTS 1
#endif

#if !METAL_CUDA

namespace mtl_rt {
// SIMD-group matrices are Apple GPUs' (Apple7 and later), whose SIMD-groups are 32 wide, and the
// lane layout above is 32 lanes': a launch of another width (a simulated Intel or AMD pipeline)
// cannot run them, and says so rather than computing with half a layout.
inline void sgm_width_fault() {
  unsigned n;
  const metalcall_cpu_launch* L = begin_fault(n);
  if (!L) return;
  append(L->fault_message, L->fault_capacity, n, ": SIMD-group matrices need 32-wide SIMD-groups (Apple7 and later "
         "GPUs), but this pipeline runs ");
  append_number(L->fault_message, L->fault_capacity, n, (long long)simd_lanes());
  append(L->fault_message, L->fault_capacity, n, " wide");
  L->fault_message[n] = 0;
}
inline bool sgm_leader() {
  if (simd_lanes() != 32u) sgm_width_fault();
  return (thread_index() & 31u) == 0;
}
// The SIMD-group's exchange area: its 32 lanes' slots of the worker's scratch (2 KiB).
inline unsigned char* sgm_area() { return worker->simd_scratch + (thread_index() & ~31u) * kSlotBytes; }

template <class T, int C, int R> void sgm_spread(simdgroup_matrix<T, C, R>& m);
template <class T, int C, int R> inline void sgm_gather(const simdgroup_matrix<T, C, R>& m);
}  // namespace mtl_rt

template <class T, int Cols, int Rows> struct simdgroup_matrix {
  static_assert(Cols == 8 && Rows == 8, "simdgroup_matrix: Metal defines only 8x8 SIMD-group matrices");
  typedef T value_type;
  typedef vec<T, 2> storage_type;  // a lane's elements, what thread_elements() gives (SPIRV-Cross sizes it)
  alignas(32) T mtl_e[64];  // row-major; valid in the leader (or in every lane while mtl_spread)
  // thread_elements() handed the matrix out: lanes own their two elements.
  // Without thread_elements() (METALCALL_SGM_ELEMENTS 0) only the leader's copy is ever
  // read, so the other lanes never write theirs: not even the flag when a matrix is made
  // or copied. (A GEMM's K loop makes its factor matrices anew at every step; their flag
  // stores in 63 lanes' stacks pushed the leader's accumulators out of the L1 cache.)
#if METALCALL_SGM_ELEMENTS
  bool mtl_spread = false;
#else
  bool mtl_spread;
#endif

  // Not user-provided, so that value-initialisation (`T()`, `T{}`, the elements an
  // aggregate initializer leaves out) zeroes the matrix, as on Apple GPUs; default-
  // initialisation leaves the elements indeterminate, as in C++.
  simdgroup_matrix() = default;
  /** A diagonal matrix with `dval` on the diagonal (MSL: simdgroup_matrix(T dval)). */
  METAL_FUNC explicit simdgroup_matrix(T dval) {
    if (METALCALL_SGM_ELEMENTS || mtl_rt::sgm_leader())
      for (int i = 0; i < 64; ++i) mtl_e[i] = (i >> 3) == (i & 7) ? dval : T(0);
  }
  METAL_FUNC simdgroup_matrix(const simdgroup_matrix& o) { mtl_copy(o); }
  METAL_FUNC simdgroup_matrix& operator=(const simdgroup_matrix& o) {
    mtl_copy(o);
    return *this;
  }
  METAL_FUNC void mtl_copy(const simdgroup_matrix& o) {
    if (this == &o || !(METALCALL_SGM_ELEMENTS || mtl_rt::sgm_leader())) return;
    __builtin_memcpy(mtl_e, o.mtl_e, sizeof mtl_e);
    mtl_spread = o.mtl_spread;
  }

  /** The two elements this lane owns (row fm, columns fn and fn + 1). */
  METAL_FUNC vec<T, 2>& thread_elements() {
    mtl_rt::sgm_spread(*this);
    const unsigned l = mtl_rt::thread_index() & 31u;
    return *reinterpret_cast<vec<T, 2>*>(&mtl_e[mtl_sgm::row_of(l) * 8 + mtl_sgm::col_of(l)]);
  }
  METAL_FUNC const vec<T, 2>& thread_elements() const { return const_cast<simdgroup_matrix*>(this)->thread_elements(); }
};

namespace mtl_rt {
template <class T, int C, int R> void sgm_spread(simdgroup_matrix<T, C, R>& m) {
  if (m.mtl_spread) return;
  T* area = reinterpret_cast<T*>(sgm_area());
  const bool leader = sgm_leader();
  if (leader) __builtin_memcpy(area, m.mtl_e, sizeof m.mtl_e);
  simd_sync();
  if (!leader) __builtin_memcpy(m.mtl_e, area, sizeof m.mtl_e);
  simd_sync();
  m.mtl_spread = true;
}

// Brings every lane's two elements back into the leader's copy (all lanes call it).
template <class T, int C, int R> __attribute__((noinline)) void sgm_gather_spread(simdgroup_matrix<T, C, R>& m);
template <class T, int C, int R> __attribute__((always_inline)) inline void sgm_gather(const simdgroup_matrix<T, C, R>& cm) {
  if (METALCALL_SGM_ELEMENTS && cm.mtl_spread) sgm_gather_spread(const_cast<simdgroup_matrix<T, C, R>&>(cm));
}
// A matrix that a call writes is the leader's again (no lane holds its elements).
template <class T, int C, int R> __attribute__((always_inline)) inline void sgm_written(simdgroup_matrix<T, C, R>& m) {
  if (METALCALL_SGM_ELEMENTS) m.mtl_spread = false;
}
template <class T, int C, int R> __attribute__((noinline)) void sgm_gather_spread(simdgroup_matrix<T, C, R>& m) {
  T* area = reinterpret_cast<T*>(sgm_area());
  const unsigned l = thread_index() & 31u;
  const unsigned at = mtl_sgm::row_of(l) * 8 + mtl_sgm::col_of(l);
  if (l == 0) __builtin_memcpy(area, m.mtl_e, sizeof m.mtl_e);  // elements of absent lanes stay
  simd_sync();
  if (l != 0) area[at] = m.mtl_e[at], area[at + 1] = m.mtl_e[at + 1];
  simd_sync();
  if (l == 0) __builtin_memcpy(m.mtl_e, area, sizeof m.mtl_e);
  simd_sync();
  m.mtl_spread = false;
}

// d = a * b (+ c) in float, rounded to D once. Written with 8-wide vector types: left
// to the loop vectoriser, clang vectorised across rows with gathers and scatters (72
// vgatherdps and 64 vscatterdps a product on x86-64). Contracted to fused multiply-adds
// (the GPUs' matrix units fuse too) even without fast math. d may be a, b or c (d is
// written after every element is read: no __restrict), so the product goes straight
// into d, with no copy through a temporary.
typedef float sgm_row __attribute__((vector_size(32)));
template <class D, class A, class B, class C>
#if defined(__GNUC__) && !defined(__clang__)
__attribute__((optimize("fp-contract=fast")))
#endif
inline void sgm_mma(D* d, const A* a, const B* b, const C* c) {
#if defined(__clang__)
#pragma clang fp contract(fast)
#endif
  sgm_row rows[8], cols[8];
  for (int k = 0; k < 8; ++k)
    for (int j = 0; j < 8; ++j) cols[k][j] = float(b[k * 8 + j]);
  for (int i = 0; i < 8; ++i)
    for (int j = 0; j < 8; ++j) rows[i][j] = c ? float(c[i * 8 + j]) : 0.0f;
  for (int i = 0; i < 8; ++i)
    for (int k = 0; k < 8; ++k) rows[i] += float(a[i * 8 + k]) * cols[k];
  for (int i = 0; i < 8; ++i)
    for (int j = 0; j < 8; ++j) d[i * 8 + j] = D(rows[i][j]);
}
}  // namespace mtl_rt

template <class T, int C = 8, int R = 8> METAL_FUNC simdgroup_matrix<T, C, R> make_filled_simdgroup_matrix(const T value) {
  simdgroup_matrix<T, C, R> m;
  if (METALCALL_SGM_ELEMENTS || mtl_rt::sgm_leader())
    for (int i = 0; i < 64; ++i) m.mtl_e[i] = value;
  return m;
}

// `src` is any pointer (device, constant or threadgroup), array, or, in checked mode, a
// checked pointer or checked array (metal_checked.h), which bounds-checks each of the 64
// accesses. Taken by reference: a checked threadgroup array is storage, and a copy of it
// would take the stores.
// The wrappers are inlined: in the 31 lanes that are not the leader each is a test of the
// lane (hoisted, see thread_index) and a flag store, where a call each cost more than the
// leader's product.
#define METAL_SGM_FUNC inline __attribute__((always_inline))
template <class T, int C, int R, class P, class O = mtl_ulong2>
METAL_SGM_FUNC void simdgroup_load(simdgroup_matrix<T, C, R>& d, P&& src, unsigned long elements_per_row = C,
                               O matrix_origin = O(0), bool transpose_matrix = false) {
  mtl_rt::sgm_written(d);
  if (!mtl_rt::sgm_leader()) return;
  const mtl_ulong2 o = mtl_ulong2(matrix_origin);
  if (!transpose_matrix) {
    // Row by row, all of a row read before any is stored: 8 contiguous elements the
    // compiler reads as one vector. (Element by element, each store might change
    // the next element read, so clang read them one at a time from 64 offsets that it
    // kept live across a GEMM's K loop, reloading each from the stack.)
    for (unsigned r = 0; r < 8; ++r) {
      const unsigned long row = (o.y + r) * elements_per_row + o.x;
      T v[8];
      for (unsigned c = 0; c < 8; ++c) v[c] = T(src[row + c]);
      __builtin_memcpy(&d.mtl_e[r * 8], v, sizeof v);
    }
    return;
  }
  for (unsigned r = 0; r < 8; ++r)
    for (unsigned c = 0; c < 8; ++c)
      d.mtl_e[r * 8 + c] = T(src[mtl_sgm::offset(r, c, elements_per_row, o.x, o.y, true)]);
}

template <class T, int C, int R, class P, class O = mtl_ulong2>
METAL_SGM_FUNC void simdgroup_store(const simdgroup_matrix<T, C, R>& a, P&& dst, unsigned long elements_per_row = C,
                                O matrix_origin = O(0), bool transpose_matrix = false) {
  mtl_rt::sgm_gather(a);
  if (!mtl_rt::sgm_leader()) return;
  const mtl_ulong2 o = mtl_ulong2(matrix_origin);
  if (!transpose_matrix) {
    for (unsigned r = 0; r < 8; ++r) {
      const unsigned long row = (o.y + r) * elements_per_row + o.x;
      T v[8];
      __builtin_memcpy(v, &a.mtl_e[r * 8], sizeof v);
      for (unsigned c = 0; c < 8; ++c) dst[row + c] = v[c];
    }
    return;
  }
  for (unsigned r = 0; r < 8; ++r)
    for (unsigned c = 0; c < 8; ++c) dst[mtl_sgm::offset(r, c, elements_per_row, o.x, o.y, true)] = a.mtl_e[r * 8 + c];
}

template <class TD, class TA, class TB, int C, int R, int K>
METAL_SGM_FUNC void simdgroup_multiply(simdgroup_matrix<TD, C, R>& d, const simdgroup_matrix<TA, K, R>& a,
                                   const simdgroup_matrix<TB, C, K>& b) {
  mtl_rt::sgm_gather(a);
  mtl_rt::sgm_gather(b);
  mtl_rt::sgm_written(d);
  if (!mtl_rt::sgm_leader()) return;
  mtl_rt::sgm_mma(d.mtl_e, a.mtl_e, b.mtl_e, static_cast<const float*>(nullptr));
}

template <class TD, class TA, class TB, class TC, int C, int R, int K>
METAL_SGM_FUNC void simdgroup_multiply_accumulate(simdgroup_matrix<TD, C, R>& d, const simdgroup_matrix<TA, K, R>& a,
                                              const simdgroup_matrix<TB, C, K>& b, const simdgroup_matrix<TC, C, R>& c) {
  mtl_rt::sgm_gather(a);
  mtl_rt::sgm_gather(b);
  mtl_rt::sgm_gather(c);
  mtl_rt::sgm_written(d);
  if (!mtl_rt::sgm_leader()) return;
  mtl_rt::sgm_mma(d.mtl_e, a.mtl_e, b.mtl_e, c.mtl_e);
}

#undef METAL_SGM_FUNC
#endif  // !METAL_CUDA

}  // namespace metal

#if METAL_CUDA
#include "metal_simdgroup_matrix_cuda.h"
#endif
