// metalcall MSL prelude, CUDA: SIMD-group matrices (see metal_simdgroup_matrix.h for the
// API and Apple's lane layout). A SIMD-group is a warp; each lane keeps the two elements
// Apple's layout gives it, so thread_elements() means the same as on a Mac.
//
// Products: half x half and bfloat x bfloat use the tensor cores (mma.sync m16n8k8 with
// fp32 accumulators; the 8x8 A fills the upper half of the 16x8 operand, and shuffles
// move elements between Apple's layout and mma's). Everything else (float) is computed
// exactly with fp32 fused multiply-adds from shuffled rows and columns.
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

// Two floats as one 32-bit register of two 16-bit values (lo in the low half).
METAL_FUNC unsigned pack(__half, float lo, float hi) {
  const __half2 h = __floats2half2_rn(lo, hi);
  unsigned u;
  memcpy(&u, &h, sizeof u);
  return u;
}
METAL_FUNC unsigned pack(mtl_bfloat, float lo, float hi) {
  return unsigned(mtl_bfloat::round_from(lo)) | unsigned(mtl_bfloat::round_from(hi)) << 16;
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

// This lane's two elements of a * b + c (c given as this lane's pair, in float).
template <class TA, class TB>
METAL_FUNC f2 product(const vec<TA, 2>& av, const vec<TB, 2>& bv, f2 acc) {
  const unsigned l = mtl_rt::lane();
  const f2 a = pair(av), b = pair(bv);
  if constexpr (tensor_core<TA, TB>::value) {
    const unsigned g = l >> 2, t = l & 3u;  // mma's fragment coordinates
    const f2 ap = shfl(a, lane_of(g, 2 * t));
    const f2 b0 = shfl(b, lane_of(2 * t, g & ~1u)), b1 = shfl(b, lane_of(2 * t + 1, g & ~1u));
    const f2 cp = shfl(acc, lane_of(g, 2 * t));
    const bool odd = g & 1u;
    f2 d;
    mma16n8k8(TA(), pack(TA(), ap.x, ap.y), pack(TA(), odd ? b0.y : b0.x, odd ? b1.y : b1.x), cp.x, cp.y, d.x, d.y);
    return shfl(d, row_of(l) * 4 + col_of(l) / 2);  // back to Apple's layout
  }
  const unsigned r = row_of(l), c = col_of(l);
  f2 arow[4];
#pragma unroll
  for (unsigned p = 0; p < 4; ++p) arow[p] = shfl(a, lane_of(r, 2 * p));
#pragma unroll
  for (unsigned k = 0; k < 8; ++k) {
    const f2 bk = shfl(b, lane_of(k, c));
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
  vec<T, 2> mtl_v;  // row fm, columns fn and fn + 1 of this lane

  simdgroup_matrix() = default;
  /** A diagonal matrix with `dval` on the diagonal. */
  METAL_FUNC explicit simdgroup_matrix(T dval) {
    const unsigned l = mtl_rt::lane(), r = mtl_sgm::row_of(l), c = mtl_sgm::col_of(l);
    const T zero = mtl_sgm::from_f<T>(0.0f);
    mtl_v.x = r == c ? dval : zero;
    mtl_v.y = r == c + 1 ? dval : zero;
  }
  METAL_FUNC vec<T, 2>& thread_elements() { return mtl_v; }
  METAL_FUNC const vec<T, 2>& thread_elements() const { return mtl_v; }
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
  const unsigned l = mtl_rt::lane(), r = mtl_sgm::row_of(l), c = mtl_sgm::col_of(l);
  d.mtl_v.x = src[mtl_sgm::offset(r, c, elements_per_row, o.x, o.y, transpose_matrix)];
  d.mtl_v.y = src[mtl_sgm::offset(r, c + 1, elements_per_row, o.x, o.y, transpose_matrix)];
}

template <class T, int C, int R, class P, class O = mtl_ulong2>
METAL_FUNC void simdgroup_store(const simdgroup_matrix<T, C, R>& a, P dst, unsigned long elements_per_row = C,
                                O matrix_origin = O(0), bool transpose_matrix = false) {
  const mtl_ulong2 o = mtl_ulong2(matrix_origin);
  const unsigned l = mtl_rt::lane(), r = mtl_sgm::row_of(l), c = mtl_sgm::col_of(l);
  dst[mtl_sgm::offset(r, c, elements_per_row, o.x, o.y, transpose_matrix)] = a.mtl_v.x;
  dst[mtl_sgm::offset(r, c + 1, elements_per_row, o.x, o.y, transpose_matrix)] = a.mtl_v.y;
}

template <class TD, class TA, class TB, int C, int R, int K>
METAL_FUNC void simdgroup_multiply(simdgroup_matrix<TD, C, R>& d, const simdgroup_matrix<TA, K, R>& a,
                                   const simdgroup_matrix<TB, C, K>& b) {
  const mtl_sgm::f2 v = mtl_sgm::product(a.mtl_v, b.mtl_v, mtl_sgm::f2{0.0f, 0.0f});
  d.mtl_v.x = mtl_sgm::from_f<TD>(v.x);
  d.mtl_v.y = mtl_sgm::from_f<TD>(v.y);
}

template <class TD, class TA, class TB, class TC, int C, int R, int K>
METAL_FUNC void simdgroup_multiply_accumulate(simdgroup_matrix<TD, C, R>& d, const simdgroup_matrix<TA, K, R>& a,
                                              const simdgroup_matrix<TB, C, K>& b, const simdgroup_matrix<TC, C, R>& c) {
  const mtl_sgm::f2 v = mtl_sgm::product(a.mtl_v, b.mtl_v, mtl_sgm::pair(c.mtl_v));
  d.mtl_v.x = mtl_sgm::from_f<TD>(v.x);
  d.mtl_v.y = mtl_sgm::from_f<TD>(v.y);
}

}  // namespace metal
