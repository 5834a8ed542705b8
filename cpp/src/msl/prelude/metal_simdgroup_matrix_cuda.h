// metalcall MSL prelude, CUDA: SIMD-group matrices (see metal_simdgroup_matrix.h for the
// API and Apple's lane layout). A SIMD-group is a warp. Each lane keeps two elements in
// the layout of mma's accumulator (lane m: row m / 4, columns 2 * (m % 4) and + 1), so
// products need no shuffles for A, C and D. thread_elements() must show Apple's layout:
// it shuffles the matrix into a second pair (mtl_apple) and marks it authoritative; the
// next operation that reads the matrix shuffles it back.
//
// Products: half x half and bfloat x bfloat use the tensor cores (mma.sync m16n8k8 with
// fp32 accumulators; the 8x8 A fills the upper half of the 16x8 operand). Everything
// else (float) is computed exactly with fp32 fused multiply-adds of shuffled values.
#pragma once

namespace metal {

namespace mtl_sgm {
METAL_FUNC float to_f(float x) { return x; }
METAL_FUNC float to_f(__half x) { return __half2float(x); }
METAL_FUNC float to_f(mtl_bfloat x) { return float(x); }
template <class T> METAL_FUNC T from_f(float x) { return T(x); }
template <> METAL_FUNC __half from_f<__half>(float x) { return __float2half_rn(x); }

struct f2 {
  float x, y;
};
METAL_FUNC f2 shfl(const f2& v, unsigned src) {
  return f2{__shfl_sync(0xffffffffu, v.x, int(src)), __shfl_sync(0xffffffffu, v.y, int(src))};
}
template <class T> METAL_FUNC f2 pair(const vec<T, 2>& v) { return f2{to_f(v.x), to_f(v.y)}; }

// This lane's row and first column in mma's accumulator layout.
METAL_FUNC unsigned mma_row(unsigned m) { return m >> 2; }
METAL_FUNC unsigned mma_col(unsigned m) { return (m & 3u) * 2u; }

// A pair of 16-bit values as one 32-bit register (x in the low half).
template <class T> METAL_FUNC unsigned word(const vec<T, 2>& v) {
  static_assert(sizeof(vec<T, 2>) == 4, "16-bit elements");
  unsigned u;
  memcpy(&u, &v, sizeof u);
  return u;
}

template <class A, class B> struct tensor_core { static constexpr bool value = false; };
template <> struct tensor_core<__half, __half> { static constexpr bool value = true; };
#if __CUDA_ARCH__ >= 800
template <> struct tensor_core<mtl_bfloat, mtl_bfloat> { static constexpr bool value = true; };
#endif

METAL_FUNC void mma16n8k8(__half, unsigned a, unsigned b, float c0, float c1, float& d0, float& d1) {
  float d2, d3;
  asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%7,%8,%9,%10};"
               : "=f"(d0), "=f"(d1), "=f"(d2), "=f"(d3)
               : "r"(a), "r"(0u), "r"(b), "f"(c0), "f"(c1), "f"(0.0f), "f"(0.0f));
}
METAL_FUNC void mma16n8k8(mtl_bfloat, unsigned a, unsigned b, float c0, float c1, float& d0, float& d1) {
#if __CUDA_ARCH__ >= 800
  float d2, d3;
  asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%7,%8,%9,%10};"
               : "=f"(d0), "=f"(d1), "=f"(d2), "=f"(d3)
               : "r"(a), "r"(0u), "r"(b), "f"(c0), "f"(c1), "f"(0.0f), "f"(0.0f));
#endif
}

// This lane's two elements of a * b + acc, all in mma's layout.
template <class TA, class TB>
METAL_FUNC f2 product(const vec<TA, 2>& av, const vec<TB, 2>& bv, f2 acc) {
  const unsigned m = mtl_rt::lane();
  if constexpr (tensor_core<TA, TB>::value) {
    // B's fragment: B[2t][g] and B[2t+1][g], from the lanes holding rows 2t and 2t+1.
    const unsigned g = m >> 2, t = m & 3u;
    const unsigned bw = word(bv);
    const unsigned w0 = __shfl_sync(0xffffffffu, bw, int(8 * t + (g >> 1)));
    const unsigned w1 = __shfl_sync(0xffffffffu, bw, int(8 * t + 4 + (g >> 1)));
    const unsigned b = (g & 1u) ? (w0 >> 16) | (w1 & 0xffff0000u) : (w0 & 0xffffu) | (w1 << 16);
    f2 d;
    mma16n8k8(TA(), word(av), b, acc.x, acc.y, d.x, d.y);
    return d;
  } else {
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
}
}  // namespace mtl_sgm

template <class T, int Cols, int Rows> struct simdgroup_matrix {
  static_assert(Cols == 8 && Rows == 8, "simdgroup_matrix: Metal defines only 8x8 SIMD-group matrices");
  typedef T value_type;
  vec<T, 2> mtl_v;      // mma layout: row lane / 4, columns 2 * (lane % 4) and + 1
  vec<T, 2> mtl_apple;  // Apple's layout, authoritative while mtl_view
  bool mtl_view;

  METAL_FUNC simdgroup_matrix() : mtl_view(false) {}
  /** A diagonal matrix with `dval` on the diagonal. */
  METAL_FUNC explicit simdgroup_matrix(T dval) : mtl_view(false) {
    const unsigned m = mtl_rt::lane(), r = mtl_sgm::mma_row(m), c = mtl_sgm::mma_col(m);
    const T zero = mtl_sgm::from_f<T>(0.0f);
    mtl_v.x = r == c ? dval : zero;
    mtl_v.y = r == c + 1 ? dval : zero;
  }
  /** The two elements this lane owns in Apple's layout (row fm, columns fn and fn + 1). */
  METAL_FUNC vec<T, 2>& thread_elements() {
    if (!mtl_view) {
      const unsigned l = mtl_rt::lane();
      mtl_apple = mtl_rt::shfl(0xffffffffu, mtl_v, mtl_sgm::row_of(l) * 4 + mtl_sgm::col_of(l) / 2);
      mtl_view = true;
    }
    return mtl_apple;
  }
  METAL_FUNC const vec<T, 2>& thread_elements() const { return const_cast<simdgroup_matrix*>(this)->thread_elements(); }
  /** The matrix in mma's layout, back from thread_elements() if it was handed out. */
  METAL_FUNC const vec<T, 2>& mtl_value() const {
    simdgroup_matrix& self = const_cast<simdgroup_matrix&>(*this);
    if (mtl_view) {
      const unsigned m = mtl_rt::lane();
      self.mtl_v = mtl_rt::shfl(0xffffffffu, mtl_apple, mtl_sgm::lane_of(mtl_sgm::mma_row(m), mtl_sgm::mma_col(m)));
      self.mtl_view = false;
    }
    return mtl_v;
  }
};

template <class T, int C = 8, int R = 8> METAL_FUNC simdgroup_matrix<T, C, R> make_filled_simdgroup_matrix(const T value) {
  simdgroup_matrix<T, C, R> m;
  m.mtl_v.x = value;
  m.mtl_v.y = value;
  return m;
}

template <class T, int C, int R, class P, class O = mtl_ulong2>
METAL_FUNC void simdgroup_load(simdgroup_matrix<T, C, R>& d, P src, unsigned long elements_per_row = C,
                               O matrix_origin = O(0), bool transpose_matrix = false) {
  const mtl_ulong2 o = mtl_ulong2(matrix_origin);
  const unsigned m = mtl_rt::lane(), r = mtl_sgm::mma_row(m), c = mtl_sgm::mma_col(m);
  d.mtl_v.x = src[mtl_sgm::offset(r, c, elements_per_row, o.x, o.y, transpose_matrix)];
  d.mtl_v.y = src[mtl_sgm::offset(r, c + 1, elements_per_row, o.x, o.y, transpose_matrix)];
  d.mtl_view = false;
}

template <class T, int C, int R, class P, class O = mtl_ulong2>
METAL_FUNC void simdgroup_store(const simdgroup_matrix<T, C, R>& a, P dst, unsigned long elements_per_row = C,
                                O matrix_origin = O(0), bool transpose_matrix = false) {
  const mtl_ulong2 o = mtl_ulong2(matrix_origin);
  const unsigned m = mtl_rt::lane(), r = mtl_sgm::mma_row(m), c = mtl_sgm::mma_col(m);
  const vec<T, 2>& v = a.mtl_value();
  dst[mtl_sgm::offset(r, c, elements_per_row, o.x, o.y, transpose_matrix)] = v.x;
  dst[mtl_sgm::offset(r, c + 1, elements_per_row, o.x, o.y, transpose_matrix)] = v.y;
}

template <class TD, class TA, class TB, int C, int R, int K>
METAL_FUNC void simdgroup_multiply(simdgroup_matrix<TD, C, R>& d, const simdgroup_matrix<TA, K, R>& a,
                                   const simdgroup_matrix<TB, C, K>& b) {
  const mtl_sgm::f2 v = mtl_sgm::product(a.mtl_value(), b.mtl_value(), mtl_sgm::f2{0.0f, 0.0f});
  d.mtl_v.x = mtl_sgm::from_f<TD>(v.x);
  d.mtl_v.y = mtl_sgm::from_f<TD>(v.y);
  d.mtl_view = false;
}

template <class TD, class TA, class TB, class TC, int C, int R, int K>
METAL_FUNC void simdgroup_multiply_accumulate(simdgroup_matrix<TD, C, R>& d, const simdgroup_matrix<TA, K, R>& a,
                                              const simdgroup_matrix<TB, C, K>& b, const simdgroup_matrix<TC, C, R>& c) {
  const mtl_sgm::f2 acc = mtl_sgm::pair(c.mtl_value());
  const mtl_sgm::f2 v = mtl_sgm::product(a.mtl_value(), b.mtl_value(), acc);
  d.mtl_v.x = mtl_sgm::from_f<TD>(v.x);
  d.mtl_v.y = mtl_sgm::from_f<TD>(v.y);
  d.mtl_view = false;
}

}  // namespace metal
