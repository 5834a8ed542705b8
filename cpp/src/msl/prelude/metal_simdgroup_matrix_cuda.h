// metalcall MSL prelude, CUDA: SIMD-group matrices (see metal_simdgroup_matrix.h for the
// API and Apple's lane layout). A SIMD-group is a warp.
//
// Registers. Each lane keeps two elements in the layout of mma's accumulator (mtl_v:
// lane m owns row m / 4, columns 2 * (m % 4) and + 1). That is also the layout of the
// upper half of mma.m16n8k8's A operand, so A, C and D of a product need no data
// movement. Its B operand wants the transpose in the same layout (lane m: rows
// 2 * (m % 4) and + 1 of column m / 4); 16-bit matrices keep that too (mtl_b, valid while
// mtl_has_b). simdgroup_load reads both layouts straight from memory (the compiler drops
// the loads of the layout a matrix is never used in; from aligned threadgroup rows the B
// layouts come by ldmatrix, shared_rows_b), the symmetric constructors set
// both, and any other matrix gets mtl_b from mtl_v with one movmatrix.trans the first
// time it is used as B. thread_elements() must show Apple's layout: it shuffles the
// matrix into a second pair (mtl_apple) and marks it authoritative; the next operation
// that reads the matrix shuffles it back.
//
// Products: half x half and bfloat x bfloat run on the tensor cores without shuffles,
// fp32 accumulation. The 8x8 A fills the upper rows of mma's 16-row A, the lower rows
// are zero: half of each tensor-core operation is wasted, the price of 8x8 semantics one
// call at a time. Into a float accumulator, two successive products go into one
// mma.m16n8k16 (pairs_products), or with METALCALL_SGM_QUAD_PRODUCTS four into one sparse
// mma.sp.m16n8k32 that wastes nothing (quad_product); otherwise each is one
// mma.m16n8k8. Everything else
// (float factors) is computed exactly with fp32 fused multiply-adds of shuffled values,
// unless the kernel asks for TF32 (below).
//
// TF32: with fast math (the compile option; METALCALL_FAST_MATH) and the compile option
// defines={"METALCALL_SGM_TF32": "1"} (METALCALL_* defines precede the prelude), float x float
// products run on the tensor cores as mma.m16n8k8.tf32 on sm_80 and later: each factor
// rounded to 10 mantissa bits (cvt.rna), fp32 accumulation. Opt-in twice because
// fast_math is on by default, as in Metal, and Metal's float products are exact fp32.
// Its A operand wants columns t and t + 4 of row g in lane 4g + t; the product sums over
// k, so the columns are permuted alike in A and B: this lane's own pair (columns 2t and
// 2t + 1) fills slots t and t + 4, and B's rows 2t and 2t + 1 of column g are exactly its
// transpose in mma's layout (mtl_b, as for 16-bit matrices).

#pragma once

#include "metal_simdgroup_mma_cuda.h"

namespace metal {

namespace mtl_sgm {

// Deferring products. Into a float accumulator, half x half (bfloat x bfloat) products
// are left pending (their A and B words, simdgroup_matrix::mtl_pa/mtl_pb) and added
// several in one tensor-core operation; any other use of the matrix adds them first.
// In a GEMM's unrolled K loop the pending state is known at compile time, so no test is
// left. The products of one operation are added in one step, like the 8 terms of one
// product.
// - Pairs (METALCALL_SGM_PAIR_PRODUCTS, default on, sm_80+): two successive products in
//   one mma.m16n8k16, with A's rows 8-15 zero. On the H100 an m16n8k16 does twice the
//   work of an m16n8k8 in much less than twice the time (608 against 448 TFLOP/s counting
//   every row, benchmarks/cuda/mma_rate.cu), but half of it is still wasted.
// - Quads (METALCALL_SGM_QUAD_PRODUCTS=1, sm_80+): four successive products in one sparse
//   mma.sp.m16n8k32 (2:4), which wastes nothing: the top 8 rows of its A take products 1
//   and 2, the bottom 8 rows products 3 and 4, and the metadata (kQuadMetadata) sends the
//   two halves to disjoint K positions of its 32x8 B, so the four products may have four
//   different B matrices. The accumulator then holds two partial sums, rows 0-7 and 8-15
//   of mma's D (mtl_v and mtl_idle, in the same lanes): its value is their sum, added when
//   the matrix is read. 451 TFLOP/s of products on the H100 against 304 for pairs
//   (benchmarks/cuda/mma_sparse.cu). The A operand wants row g, columns 2p(t) and +1 in
//   lane 4g + t, p swapping t = 1 and 2 (mtl_qa; quad_col); B's registers take this
//   lane's own B pair (mtl_b) for products 1 and 2 and the pair of lane ^ 1 (mtl_bx) for
//   products 3 and 4. simdgroup_load reads both layouts from memory. A loop that gives
//   an accumulator a number of products not a multiple of four per iteration carries the
//   pending ones across iterations at run time, so quads are an opt-in, for K loops of 4n
//   products (a half GEMM with a K step of 32).
// Compile options: defines={"METALCALL_SGM_PAIR_PRODUCTS": "0"} gives one mma per product,
// defines={"METALCALL_SGM_QUAD_PRODUCTS": "1"} quads, defines={"METALCALL_SGM_ROW_PAIRS": "1"}
// row pairs (below) (METALCALL_* defines precede the prelude).
#ifndef METALCALL_SGM_PAIR_PRODUCTS
#define METALCALL_SGM_PAIR_PRODUCTS 1
#endif
#ifndef METALCALL_SGM_QUAD_PRODUCTS
#define METALCALL_SGM_QUAD_PRODUCTS 0
#endif
#if __CUDA_ARCH__ >= 800 && METALCALL_SGM_QUAD_PRODUCTS
constexpr bool kQuads = true;
#else
constexpr bool kQuads = false;
#endif
// How many products wait for the one that completes an operation.
constexpr unsigned kPending = kQuads ? 3u : 1u;
// Row pairs (METALCALL_SGM_ROW_PAIRS=1, sm_80+, opt-in): neighbouring accumulators of
// one array (flat index 2i and 2i + 1) share one sparse mma.sp.m16n8k32, two products
// each: the even one in rows 0-7 of its D, the odd one in rows 8-15, so an accumulator
// keeps only its own two registers and the four products may have any four B matrices.
// The translator sends `simdgroup_multiply_accumulate(X[..], a, b, X[..])` with X a local
// array here (multiply_accumulate_element). An accumulator holds up to four products
// pending (kRowSlots): enough for a K step of four products an accumulator given
// accumulator after accumulator, so that nothing is left pending at the end of the step
// (products left pending across a loop's iterations make their count a run-time value,
// and the code around every product branches on it). An opt-in, as quads are: loops that
// leave products pending at the end of an iteration (an odd count an accumulator, or more
// than four given accumulator after accumulator) are several times slower than with pairs.
#ifndef METALCALL_SGM_ROW_PAIRS
#define METALCALL_SGM_ROW_PAIRS 0
#endif
#if __CUDA_ARCH__ >= 800 && METALCALL_SGM_ROW_PAIRS
constexpr bool kRowPairs = true;
#else
constexpr bool kRowPairs = false;
#endif
constexpr unsigned kRowSlots = 4u;
// Pending-product slots a matrix has: enough for either mode (a row pair's half takes a
// fifth product for a moment: a full half adds two at once).
constexpr unsigned kSlots = kRowSlots + 1;
static_assert(kPending <= kSlots, "quads' pending products fit the slots");
// What an accumulator's pending products are: products of its own, or the top (rows
// 0-7) or bottom (rows 8-15) half of a row pair's operation.
enum : unsigned char { kOwn = 0, kTop = 1, kBottom = 2 };
template <class T> struct pair_tag { static constexpr unsigned char value = 0; };
template <> struct pair_tag<__half> { static constexpr unsigned char value = 1; };
template <> struct pair_tag<mtl_bfloat> { static constexpr unsigned char value = 2; };
template <class TD, class TA, class TB, class TC> struct pairs_products {
#if __CUDA_ARCH__ >= 800
  static constexpr bool value = (METALCALL_SGM_PAIR_PRODUCTS || kQuads) && is_same_v<TD, float> &&
                                is_same_v<TC, float> && sizeof(TA) == 2 && tensor_core<TA, TB>::value;
#else
  static constexpr bool value = false;
#endif
};

// Quads: the column of the A pair lane m holds (2 p(t), p swapping t = 1 and 2), and the
// metadata (every lane the same; lanes 4g and 4g + 1 give rows g and g + 8, K 0-15 and
// 16-31): rows 0-7 take positions 0, 1 of the groups 0, 1 (mod 4) and 2, 3 of the groups
// 2, 3; rows 8-15 the others.
METAL_FUNC unsigned quad_col(unsigned m) { return (((m & 1u) << 1) | ((m >> 1) & 1u)) * 2u; }
constexpr unsigned kQuadMetadata = 0x44EEEE44u;

// a[0] + a[1] into rows 0-7 of c's D, a[2] + a[3] into rows 8-15: a[i] the A words of the
// four products in the quad layout, b[i] their B words (own pairs for 0 and 1, lane ^ 1's
// for 2 and 3). B's register r holds K rows 8r + 2t and + 1: registers t & 1 and 2 + (t & 1)
// take the top products, the others the bottom ones.
#if (__CUDACC_VER_MAJOR__ > 12) || (__CUDACC_VER_MAJOR__ == 12 && __CUDACC_VER_MINOR__ >= 5)
#define METALCALL_MMA_SP "mma.sp::ordered_metadata.sync.aligned.m16n8k32.row.col.f32."
#else
#define METALCALL_MMA_SP "mma.sp.sync.aligned.m16n8k32.row.col.f32."
#endif
#define METALCALL_MMA_SP_ARGS                                                                                 \
  " {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9,%10,%11}, {%12,%13,%14,%15}, %16, 0x0;"                              \
      : "=f"(d.x), "=f"(d.y), "=f"(d.z), "=f"(d.w)                                                            \
      : "r"(a[0]), "r"(a[2]), "r"(a[1]), "r"(a[3]), "r"(b0), "r"(b1), "r"(b2), "r"(b3), "f"(c.x), "f"(c.y), \
        "f"(c.z), "f"(c.w), "r"(kQuadMetadata)
template <class T> METAL_FUNC f4 quad_product(T, const unsigned (&a)[4], const unsigned (&b)[4], const f4& c) {
  const bool odd = lane() & 1u;
  const unsigned b0 = odd ? b[2] : b[0], b1 = odd ? b[0] : b[2], b2 = odd ? b[3] : b[1], b3 = odd ? b[1] : b[3];
  f4 d = c;
#if __CUDA_ARCH__ >= 800
  if constexpr (is_same_v<T, __half>) asm volatile(METALCALL_MMA_SP "f16.f16.f32" METALCALL_MMA_SP_ARGS);
  else asm volatile(METALCALL_MMA_SP "bf16.bf16.f32" METALCALL_MMA_SP_ARGS);
#endif
  return d;
}
#undef METALCALL_MMA_SP_ARGS
#undef METALCALL_MMA_SP

// A product computed exactly in fp32 fused multiply-adds: a and b in mma's layout.
template <class TA, class TB> METAL_FUNC f4 fma_product(const vec<TA, 2>& av, const vec<TB, 2>& bv, f4 acc) {
  const unsigned m = lane();
  const f2 a = pair(av), b = pair(bv);
  f2 arow[4];
#pragma unroll
  for (unsigned q = 0; q < 4; ++q) arow[q] = shfl(a, (m & ~3u) + q);
#pragma unroll
  for (unsigned k = 0; k < 8; ++k) {
    const f2 bk = shfl(b, 4 * k + (m & 3u));
    const float x = (k & 1u) ? arow[k >> 1].y : arow[k >> 1].x;
    acc.x = __fmaf_rn(x, bk.x, acc.x);
    acc.y = __fmaf_rn(x, bk.y, acc.y);
  }
  return acc;
}
}  // namespace mtl_sgm

template <class T, int Cols, int Rows> struct simdgroup_matrix {
  static_assert(Cols == 8 && Rows == 8, "simdgroup_matrix: Metal defines only 8x8 SIMD-group matrices");
  typedef T value_type;
  typedef vec<T, 2> storage_type;  // a lane's elements, what thread_elements() gives (SPIRV-Cross sizes it)
  vec<T, 2> mtl_v;      // mma layout: row lane / 4, columns 2 * (lane % 4) and + 1
  vec<T, 2> mtl_b;      // 16-bit T: the transpose in mma layout (mma's B operand), while mtl_has_b
  vec<T, 2> mtl_qa;     // 16-bit T, quads: the A operand's layout (mtl_sgm::quad_col), while mtl_has_qa
  vec<T, 2> mtl_bx;     // 16-bit T, quads: mtl_b of lane ^ 1, while mtl_has_bx
  vec<T, 2> mtl_apple;  // Apple's layout, authoritative while mtl_view
  // As an accumulator: rows 8-15 of mma's C and D. Pairs: always zero (A's rows 8-15
  // are). Quads: the second partial sum (zero until a sparse product), part of the value
  // while mtl_split.
  float mtl_idle[2] = {0.0f, 0.0f};
  unsigned mtl_pa[mtl_sgm::kSlots], mtl_pb[mtl_sgm::kSlots];  // float T: mtl_pend products not yet added (A and B words)
  unsigned char mtl_pend = 0;                // 0 to mtl_sgm::kPending (kRowSlots for a row pair's)
  unsigned char mtl_ptag = 0;                // pair_tag of the pending products' factors
  unsigned char mtl_prow = mtl_sgm::kOwn;    // mtl_sgm::kOwn, or the half of a row pair they wait for (words in the quad layouts)
  bool mtl_split = false;
  bool mtl_has_b = false, mtl_has_qa = false, mtl_has_bx = false;
  bool mtl_view = false;

  // Not user-provided, so that value-initialisation (`T()`, `T{}`, the elements an
  // aggregate initializer leaves out) zeroes the matrix (mtl_v), as on Apple GPUs; the
  // bookkeeping above has its initializers either way.
  simdgroup_matrix() = default;
  /** A diagonal matrix with `dval` on the diagonal. */
  METAL_FUNC explicit simdgroup_matrix(T dval) : simdgroup_matrix() {
    const unsigned m = mtl_sgm::lane(), r = mtl_sgm::mma_row(m), c = mtl_sgm::mma_col(m);
    const T zero = mtl_sgm::from_f<T>(0.0f);
    mtl_v.x = r == c ? dval : zero;
    mtl_v.y = r == c + 1 ? dval : zero;
    mtl_b = mtl_v;  // symmetric
    mtl_has_b = true;
  }
  /** The two elements this lane owns in Apple's layout (row fm, columns fn and fn + 1). */
  METAL_FUNC vec<T, 2>& thread_elements() {
    if (!mtl_view) {
      mtl_settle();
      const unsigned l = mtl_sgm::lane();
      mtl_apple = mtl_rt::shfl(0xffffffffu, mtl_v, mtl_sgm::row_of(l) * 4 + mtl_sgm::col_of(l) / 2);
      mtl_view = true;
    }
    return mtl_apple;
  }
  METAL_FUNC const vec<T, 2>& thread_elements() const { return const_cast<simdgroup_matrix*>(this)->thread_elements(); }
  /** The matrix in mma's layout, back from thread_elements() if it was handed out. */
  METAL_FUNC const vec<T, 2>& mtl_value() const {
    simdgroup_matrix& self = const_cast<simdgroup_matrix&>(*this);
    mtl_settle();
    if (mtl_view) {
      const unsigned m = mtl_sgm::lane();
      self.mtl_v = mtl_rt::shfl(0xffffffffu, mtl_apple, mtl_sgm::lane_of(mtl_sgm::mma_row(m), mtl_sgm::mma_col(m)));
      self.mtl_view = false;
      self.mtl_has_b = self.mtl_has_qa = self.mtl_has_bx = false;  // the lanes may have changed their elements
    }
    return mtl_v;
  }
  /** Adds the pending products, if any, and the second partial sum of quads. */
  METAL_FUNC void mtl_settle() const {
    if constexpr (is_same_v<T, float>) {
      simdgroup_matrix& self = const_cast<simdgroup_matrix&>(*this);
      if (mtl_pend) {
        // The registers as they are (pending products mean the matrix is not handed out).
        // Not through mtl_registers(): a call cycle back here would keep the compiler from
        // inlining them, and every matrix of the kernel would live in local memory.
        const mtl_sgm::f4 c{mtl_v.x, mtl_v.y, mtl_idle[0], mtl_idle[1]};
        const unsigned n = mtl_pend;
        if (mtl_prow != mtl_sgm::kOwn) {
          // A row pair's half whose neighbour did not join (up to four products): one
          // operation, products 1 and 2 in the rows of its half, 3 and 4 in the other rows
          // (their B words are then those of lane ^ 1), the two halves of D added. One
          // operation rather than two: this is inlined at every product of row pairs, and
          // the size before folding decides whether NVRTC unrolls a K loop (docs/design.md).
          const bool top = mtl_prow == mtl_sgm::kTop, more = n > 2;
          unsigned w[4], x[4];
          self.mtl_take_two(w);
          self.mtl_take_two(x);
          x[2] = __shfl_xor_sync(0xffffffffu, x[2], 1);
          x[3] = __shfl_xor_sync(0xffffffffu, x[3], 1);
          const unsigned a[4] = {top ? w[0] : x[0], top ? w[1] : x[1], top ? x[0] : w[0], top ? x[1] : w[1]};
          const unsigned b[4] = {top ? w[2] : x[2], top ? w[3] : x[3], top ? x[2] : w[2], top ? x[3] : w[3]};
          const mtl_sgm::f4 rows{top ? mtl_v.x : 0.0f, top ? mtl_v.y : 0.0f, top ? 0.0f : mtl_v.x, top ? 0.0f : mtl_v.y};
          const mtl_sgm::f4 d = mtl_ptag == mtl_sgm::pair_tag<__half>::value
                                    ? mtl_sgm::quad_product(__half(), a, b, rows)
                                    : mtl_sgm::quad_product(mtl_bfloat(), a, b, rows);
          const float own_x = top ? d.x : d.z, own_y = top ? d.y : d.w, more_x = top ? d.z : d.x, more_y = top ? d.w : d.y;
          self.mtl_set_rows(more ? own_x + more_x : own_x, more ? own_y + more_y : own_y);
        } else if constexpr (mtl_sgm::kQuads) {
          const unsigned a[4] = {mtl_pa[0], n > 1 ? mtl_pa[1] : 0u, n > 2 ? mtl_pa[2] : 0u, 0u};
          const unsigned b[4] = {mtl_pb[0], n > 1 ? mtl_pb[1] : 0u, n > 2 ? mtl_pb[2] : 0u, 0u};
          if (mtl_ptag == mtl_sgm::pair_tag<__half>::value) self.mtl_set(mtl_sgm::quad_product(__half(), a, b, c), true);
          else self.mtl_set(mtl_sgm::quad_product(mtl_bfloat(), a, b, c), true);
        } else {
          if (mtl_ptag == mtl_sgm::pair_tag<__half>::value) self.mtl_set(mtl_sgm::mma16n8k8(__half(), mtl_pa[0], mtl_pb[0], c));
          else self.mtl_set(mtl_sgm::mma16n8k8(mtl_bfloat(), mtl_pa[0], mtl_pb[0], c));
        }
      }
      if (mtl_split) {
        self.mtl_v.x += mtl_idle[0];
        self.mtl_v.y += mtl_idle[1];
        self.mtl_idle[0] = self.mtl_idle[1] = 0.0f;
        self.mtl_split = false;
      }
    }
  }
  /** 16-bit T (and float in TF32): the transpose in mma's layout (mma's B operand), made once and kept. */
  METAL_FUNC const vec<T, 2>& mtl_bvalue() const {
    simdgroup_matrix& self = const_cast<simdgroup_matrix&>(*this);
    const vec<T, 2>& v = mtl_value();
    if (!mtl_has_b) {
      if constexpr (sizeof(T) == 2) self.mtl_b = mtl_sgm::unword<T>(mtl_sgm::transposed(mtl_sgm::word(v)));
      else self.mtl_b = mtl_sgm::transposed(v);
      self.mtl_has_b = true;
    }
    return mtl_b;
  }
  /** 16-bit T, quads: this lane's word as the A of a quad (row g, columns quad_col). */
  METAL_FUNC unsigned mtl_quad_a() const {
    simdgroup_matrix& self = const_cast<simdgroup_matrix&>(*this);
    const vec<T, 2>& v = mtl_value();
    if (!mtl_has_qa) {
      const unsigned m = mtl_sgm::lane();
      self.mtl_qa = mtl_sgm::unword<T>(__shfl_sync(0xffffffffu, mtl_sgm::word(v), int((m & ~3u) | (mtl_sgm::quad_col(m) >> 1))));
      self.mtl_has_qa = true;
    }
    return mtl_sgm::word(mtl_qa);
  }
  /** 16-bit T, quads: the B word of lane ^ 1 (for the third and fourth products of a quad). */
  METAL_FUNC unsigned mtl_partner_b() const {
    simdgroup_matrix& self = const_cast<simdgroup_matrix&>(*this);
    (void)mtl_value();
    if (!mtl_has_bx) {
      self.mtl_bx = mtl_sgm::unword<T>(__shfl_xor_sync(0xffffffffu, mtl_sgm::word(mtl_bvalue()), 1));
      self.mtl_has_bx = true;
    }
    return mtl_sgm::word(mtl_bx);
  }
  /** Float T: this lane's registers as mma's C, pending products not added. */
  METAL_FUNC mtl_sgm::f4 mtl_registers() const {
    if (mtl_view) (void)mtl_value();  // (a handed-out matrix has nothing pending)
    return mtl_sgm::f4{mtl_v.x, mtl_v.y, mtl_idle[0], mtl_idle[1]};
  }
  /** This lane's registers as mma's accumulator, everything added. */
  METAL_FUNC mtl_sgm::f4 mtl_acc() const {
    const vec<T, 2>& v = mtl_value();
    return mtl_sgm::f4{mtl_sgm::to_f(v.x), mtl_sgm::to_f(v.y), mtl_idle[0], mtl_idle[1]};
  }
  /** Sets the matrix from mma's accumulator; `split`: rows 8-15 are a quad's second
   *  partial sum. */
  METAL_FUNC void mtl_set(const mtl_sgm::f4& d, bool split = false) {
    mtl_v.x = mtl_sgm::from_f<T>(d.x);
    mtl_v.y = mtl_sgm::from_f<T>(d.y);
    mtl_idle[0] = d.z;
    mtl_idle[1] = d.w;
    mtl_split = split;
    mtl_pend = 0;
    mtl_prow = mtl_sgm::kOwn;
    mtl_has_b = mtl_has_qa = mtl_has_bx = false;
    mtl_view = false;
  }
  /** A row pair's half: its first two pending products' A words (w[0], w[1]) and B
   *  words (w[2], w[3]), zero where fewer pending; the others move up. */
  METAL_FUNC void mtl_take_two(unsigned (&w)[4]) {
    const unsigned n = mtl_pend;
    w[0] = n > 0 ? mtl_pa[0] : 0u;
    w[1] = n > 1 ? mtl_pa[1] : 0u;
    w[2] = n > 0 ? mtl_pb[0] : 0u;
    w[3] = n > 1 ? mtl_pb[1] : 0u;
#pragma unroll
    for (unsigned i = 0; i + 2 < mtl_sgm::kSlots; ++i) {
      mtl_pa[i] = mtl_pa[i + 2];
      mtl_pb[i] = mtl_pb[i + 2];
    }
    mtl_pend = (unsigned char)(n > 2 ? n - 2 : 0);
  }
  /** Sets this lane's two elements from a row pair's operation (rows 8-15 keep what they
   *  hold: nothing of the value, as no partial sum is split); products still pending stay. */
  METAL_FUNC void mtl_set_rows(float x, float y) {
    mtl_v.x = x;
    mtl_v.y = y;
    if (!mtl_pend) mtl_prow = mtl_sgm::kOwn;
    mtl_has_b = mtl_has_qa = mtl_has_bx = false;
    mtl_view = false;
  }
};

template <class T, int C = 8, int R = 8> METAL_FUNC simdgroup_matrix<T, C, R> make_filled_simdgroup_matrix(const T value) {
  simdgroup_matrix<T, C, R> m;
  m.mtl_v.x = value;
  m.mtl_v.y = value;
  m.mtl_b = m.mtl_qa = m.mtl_bx = m.mtl_v;  // every layout of a constant matrix
  m.mtl_has_b = m.mtl_has_qa = m.mtl_has_bx = true;
  return m;
}

template <class T, int C, int R, class P, class O = mtl_ulong2>
METAL_FUNC void simdgroup_load(simdgroup_matrix<T, C, R>& d, P src, unsigned long elements_per_row = C,
                               O matrix_origin = O(0), bool transpose_matrix = false) {
  const mtl_ulong2 o = mtl_ulong2(matrix_origin);
  const unsigned m = mtl_sgm::lane(), r = mtl_sgm::mma_row(m), c = mtl_sgm::mma_col(m);
  const unsigned long epr = elements_per_row;
  const auto block = src + (o.y * epr + o.x);
  const bool tile_rows = mtl_sgm::rows_in_shared<T>(src, epr, o.x);  // B layouts by ldmatrix
  d.mtl_v = mtl_sgm::load_pair<T>(block, mtl_sgm::in_block(r, c, epr, transpose_matrix),
                                  mtl_sgm::in_block(r, c + 1, epr, transpose_matrix));
  if constexpr (sizeof(T) == 2 || (METALCALL_SGM_TF32_ON && is_same_v<T, float>)) {
    // Elements (c, r) and (c + 1, r): the B operand, read now while memory holds the matrix.
    if (tile_rows)
      d.mtl_b = mtl_sgm::unword<T>(mtl_sgm::shared_rows_b(block, epr, transpose_matrix, 0u));
    else
      d.mtl_b = mtl_sgm::load_pair<T>(block, mtl_sgm::in_block(c, r, epr, transpose_matrix),
                                      mtl_sgm::in_block(c + 1, r, epr, transpose_matrix));
    d.mtl_has_b = true;
  } else {
    d.mtl_has_b = false;
  }
  if constexpr ((mtl_sgm::kQuads || mtl_sgm::kRowPairs) && sizeof(T) == 2) {
    // The layouts of quads and row pairs: A's pair (row r, columns quad_col) and the B pair of lane ^ 1.
    const unsigned qc = mtl_sgm::quad_col(m);
    d.mtl_qa = mtl_sgm::load_pair<T>(block, mtl_sgm::in_block(r, qc, epr, transpose_matrix),
                                     mtl_sgm::in_block(r, qc + 1, epr, transpose_matrix));
    if (tile_rows && !transpose_matrix)
      d.mtl_bx = mtl_sgm::unword<T>(mtl_sgm::shared_rows_b(block, epr, transpose_matrix, 2u));
    else
      d.mtl_bx = mtl_sgm::load_pair<T>(block, mtl_sgm::in_block(c ^ 2u, r, epr, transpose_matrix),
                                       mtl_sgm::in_block((c ^ 2u) + 1, r, epr, transpose_matrix));
    d.mtl_has_qa = d.mtl_has_bx = true;
  } else {
    d.mtl_has_qa = d.mtl_has_bx = false;
  }
  d.mtl_idle[0] = d.mtl_idle[1] = 0.0f;
  d.mtl_pend = 0;
  d.mtl_prow = mtl_sgm::kOwn;
  d.mtl_split = false;
  d.mtl_view = false;
}

template <class T, int C, int R, class P, class O = mtl_ulong2>
METAL_FUNC void simdgroup_store(const simdgroup_matrix<T, C, R>& a, P dst, unsigned long elements_per_row = C,
                                O matrix_origin = O(0), bool transpose_matrix = false) {
  const mtl_ulong2 o = mtl_ulong2(matrix_origin);
  const unsigned m = mtl_sgm::lane(), r = mtl_sgm::mma_row(m), c = mtl_sgm::mma_col(m);
  const unsigned long epr = elements_per_row;
  const auto block = dst + (o.y * epr + o.x);
  mtl_sgm::store_pair<T>(block, mtl_sgm::in_block(r, c, epr, transpose_matrix),
                         mtl_sgm::in_block(r, c + 1, epr, transpose_matrix), a.mtl_value());
}

namespace mtl_sgm {
template <class TA, class TB, int C, int R, int K>
METAL_FUNC f4 product(const simdgroup_matrix<TA, K, R>& a, const simdgroup_matrix<TB, C, K>& b, const f4& acc) {
  if constexpr (tensor_core<TA, TB>::value) {
    return tensor_product<TA>(a.mtl_value(), b.mtl_bvalue(), acc);
  } else {
    return fma_product(a.mtl_value(), b.mtl_value(), acc);
  }
}

// The registers of a product computed otherwise, as an accumulator keeps them: quads keep
// rows 8-15 a partial sum (zero until a sparse product), and a dense product's are not
// one (0 * B there, NaN where B is infinite).
METAL_FUNC f4 dense_result(f4 d) {
  if constexpr (kQuads) d.z = d.w = 0.0f;
  return d;
}

// d = c + a * b with a * b left pending (pairs_products; the factors are 16-bit, so
// neither is d), or added with c's pending products in one operation when they make
// kPending + 1.
template <class TA, class TB, int C, int R, int K>
METAL_FUNC void defer(simdgroup_matrix<float, C, R>& d, const simdgroup_matrix<TA, K, R>& a,
                      const simdgroup_matrix<TB, C, K>& b, const simdgroup_matrix<float, C, R>& c) {
  constexpr unsigned char tag = pair_tag<TA>::value;
  // Products of the other 16-bit type, or a row pair's half, first.
  if (c.mtl_pend && (c.mtl_ptag != tag || c.mtl_prow != kOwn)) c.mtl_settle();
  const unsigned n = c.mtl_pend;
  unsigned aw, bw;
  if constexpr (kQuads) {
    aw = a.mtl_quad_a();
    bw = n >= 2 ? b.mtl_partner_b() : word(b.mtl_bvalue());
  } else {
    aw = word(a.mtl_value());
    bw = word(b.mtl_bvalue());
  }
  const f4 acc = c.mtl_registers();
  if (n == kPending) {
    if constexpr (kQuads) {
      const unsigned qa[4] = {c.mtl_pa[0], c.mtl_pa[1], c.mtl_pa[2], aw};
      const unsigned qb[4] = {c.mtl_pb[0], c.mtl_pb[1], c.mtl_pb[2], bw};
      d.mtl_set(quad_product(TA(), qa, qb, acc), true);
    } else {
      d.mtl_set(mma16n8k16(TA(), c.mtl_pa[0], aw, c.mtl_pb[0], bw, acc));
    }
    return;
  }
  // Slot n takes this product (selects, so that a count known only at run time keeps
  // the words in registers).
  unsigned pa[kPending], pb[kPending];
#pragma unroll
  for (unsigned i = 0; i < kPending; ++i) {
    pa[i] = i == n ? aw : c.mtl_pa[i];
    pb[i] = i == n ? bw : c.mtl_pb[i];
  }
  const bool split = c.mtl_split;
  d.mtl_set(acc, split);
#pragma unroll
  for (unsigned i = 0; i < kPending; ++i) {
    d.mtl_pa[i] = pa[i];
    d.mtl_pb[i] = pb[i];
  }
  d.mtl_pend = (unsigned char)(n + 1);
  d.mtl_ptag = tag;
}
}  // namespace mtl_sgm

template <class TD, class TA, class TB, int C, int R, int K>
METAL_FUNC void simdgroup_multiply(simdgroup_matrix<TD, C, R>& d, const simdgroup_matrix<TA, K, R>& a,
                                   const simdgroup_matrix<TB, C, K>& b) {
  if constexpr (mtl_sgm::pairs_products<TD, TA, TB, TD>::value) {
    simdgroup_matrix<TD, C, R> zero;
    zero.mtl_v.x = zero.mtl_v.y = 0.0f;
    mtl_sgm::defer(d, a, b, zero);
  } else {
    d.mtl_set(mtl_sgm::dense_result(mtl_sgm::product(a, b, mtl_sgm::f4{0.0f, 0.0f, 0.0f, 0.0f})));
  }
}

template <class TD, class TA, class TB, class TC, int C, int R, int K>
METAL_FUNC void simdgroup_multiply_accumulate(simdgroup_matrix<TD, C, R>& d, const simdgroup_matrix<TA, K, R>& a,
                                              const simdgroup_matrix<TB, C, K>& b, const simdgroup_matrix<TC, C, R>& c) {
  if constexpr (mtl_sgm::pairs_products<TD, TA, TB, TC>::value) {
    mtl_sgm::defer(d, a, b, c);
  } else {
    d.mtl_set(mtl_sgm::dense_result(mtl_sgm::product(a, b, c.mtl_acc())));
  }
}

namespace mtl_sgm {
// An array's element type and count, through every dimension (`simdgroup_float8x8 acc[4][8]`:
// the matrix type, 32); value false for anything else.
template <class X> struct flat_array {
  static constexpr bool value = false;
  using element = void;
  static constexpr unsigned long count = 0;
};
template <class T, int C, int R, decltype(sizeof(0)) N> struct flat_array<simdgroup_matrix<T, C, R>[N]> {
  static constexpr bool value = true;
  using element = simdgroup_matrix<T, C, R>;
  static constexpr unsigned long count = N;
};
template <class Y, decltype(sizeof(0)) N> struct flat_array<Y[N]> {
  static constexpr bool value = flat_array<Y>::value;
  using element = typename flat_array<Y>::element;
  static constexpr unsigned long count = N * flat_array<Y>::count;
};

// Whether the pending products of `m` can join a row pair's operation as `half` with factors of `tag`.
template <class M> METAL_FUNC bool joins(const M& m, unsigned char half, unsigned char tag) {
  return !m.mtl_pend || (m.mtl_prow == half && m.mtl_ptag == tag);
}

// The first two pending products of `self` (in the rows of its half: rows 0-7 where
// `self_top`) and, where `with_partner`, of `partner` (the other rows), both row-pair
// halves of factors T or with nothing pending, in one sparse operation. A matrix with
// nothing pending is not touched (its zero words would turn -0.0 into +0.0).
template <class T, class M>
METAL_FUNC void row_pair_product(M& self, M& partner, bool self_top, bool with_partner) {
  const bool s = self.mtl_pend != 0, p = with_partner && partner.mtl_pend != 0;
  unsigned ws[4], wp[4] = {0u, 0u, 0u, 0u};
  self.mtl_take_two(ws);
  if (with_partner) partner.mtl_take_two(wp);
  const unsigned a[4] = {self_top ? ws[0] : wp[0], self_top ? ws[1] : wp[1], self_top ? wp[0] : ws[0],
                         self_top ? wp[1] : ws[1]};
  const unsigned bw[4] = {self_top ? ws[2] : wp[2], self_top ? ws[3] : wp[3], self_top ? wp[2] : ws[2],
                          self_top ? wp[3] : ws[3]};
  const float sx = s ? self.mtl_v.x : 0.0f, sy = s ? self.mtl_v.y : 0.0f;
  const float px = p ? partner.mtl_v.x : 0.0f, py = p ? partner.mtl_v.y : 0.0f;
  const f4 c{self_top ? sx : px, self_top ? sy : py, self_top ? px : sx, self_top ? py : sy};
  const f4 d = quad_product(T(), a, bw, c);
  if (s) self.mtl_set_rows(self_top ? d.x : d.z, self_top ? d.y : d.w);
  if (p) partner.mtl_set_rows(self_top ? d.z : d.x, self_top ? d.w : d.y);
}

// e = e + a * b for e element `k` of an array of n float accumulators starting at `base`:
// pending as a row pair's half (top for even k, bottom for odd), added two by two with
// its neighbour's in one operation once each has two, or when e would hold more than
// kRowSlots (then with whatever its neighbour has, or alone). The words are those of the
// quad layouts: A's in mtl_quad_a, B's own pair for the top half and lane ^ 1's for the
// bottom (quad_product). One operation site a call, whichever half and case: the code
// inlined at every product, before it folds, decides whether NVRTC unrolls a K loop
// whole (docs/design.md).
template <class M, class TA, class TB, int C, int R, int K>
METAL_FUNC void row_pair_defer(M* base, unsigned long n, M& e, const simdgroup_matrix<TA, K, R>& a,
                               const simdgroup_matrix<TB, C, K>& b) {
  const unsigned long k = (unsigned long)(&e - base);
  if ((k ^ 1u) >= n) {  // the last of an odd count: no neighbour
    defer(e, a, b, e);
    return;
  }
  M& other = base[k ^ 1u];
  constexpr unsigned char tag = pair_tag<TA>::value;
  const unsigned char half = (k & 1u) ? kBottom : kTop, other_half = (k & 1u) ? kTop : kBottom;
  if (!joins(e, half, tag) || e.mtl_split || e.mtl_view) (void)e.mtl_value();  // adds what cannot join
  const unsigned aw = a.mtl_quad_a();
  const unsigned bw = half == kBottom ? b.mtl_partner_b() : word(b.mtl_bvalue());
  const bool with_other = joins(other, other_half, tag) && !other.mtl_split && !other.mtl_view;
  // Slot e.mtl_pend takes the product (selects, so that a count known only at run time
  // keeps the words in registers).
  const unsigned slot = e.mtl_pend;
#pragma unroll
  for (unsigned i = 0; i < kSlots; ++i) {
    e.mtl_pa[i] = i == slot ? aw : e.mtl_pa[i];
    e.mtl_pb[i] = i == slot ? bw : e.mtl_pb[i];
  }
  e.mtl_pend = (unsigned char)(slot + 1);
  e.mtl_prow = half;
  e.mtl_ptag = tag;
  e.mtl_has_b = e.mtl_has_qa = e.mtl_has_bx = false;
  const bool full = e.mtl_pend > kRowSlots;
  if (full || (with_other && e.mtl_pend >= 2 && other.mtl_pend >= 2))
    row_pair_product<TA>(e, other, half == kTop, with_other);
}

/**
 * `simdgroup_multiply_accumulate(X[..], a, b, X[..])` as the translator writes it for the
 * CUDA target: `array` is X, `e` the element. Float accumulators of a local array with
 * 16-bit factors go into row pairs (row_pair_defer); anything else (a pointer, other
 * types, row pairs off) is the plain call.
 */
template <class X, class M, class A, class B>
METAL_FUNC void multiply_accumulate_element(X& array, M& e, const A& a, const B& b) {
  using F = flat_array<X>;
  if constexpr (kRowPairs && F::value && is_same_v<typename F::element, M>) {
    if constexpr (pairs_products<typename M::value_type, typename A::value_type, typename B::value_type,
                                 typename M::value_type>::value) {
      row_pair_defer(reinterpret_cast<M*>(&array), F::count, e, a, b);
      return;
    }
  }
  simdgroup_multiply_accumulate(e, a, b, e);
}
}  // namespace mtl_sgm

}  // namespace metal

#include "metal_simdgroup_nest_cuda.h"
