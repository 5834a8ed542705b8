// metalcall MSL prelude, CUDA: loop nests of SIMD-group matrix products.
//
// The translator (cpp/src/msl/product_nests.cpp) hands a nest of up to three loops whose
// body is one `simdgroup_multiply_accumulate(X[..], a, b, X[..])` to product_nest whole,
// with the role of each loop variable: a row (an X subscript that a names), a column (an
// X subscript that b names) or a reduction (named by a and b). One call at a time sees an
// 8x8 product, half of an mma.m16n8k8; the nest shows what fills a tensor-core operation:
// the accumulators of rows i and i + 1 take the same b, so they are the two halves of one
// mma's 16 rows (A's rows 0-7 from a(i), 8-15 from a(i + 1)), and the products of
// reduction steps k and k + 1 into one accumulator are its two K halves. So float
// accumulators with half (bfloat) factors take four products in one mma.m16n8k16 (two
// where there is no reduction loop: one mma.m16n8k8), with nothing pending between
// calls and no operand in a second layout. Each accumulator still takes its products in
// the order of k, two steps added in one operation (as pairs do; see
// metal_simdgroup_matrix_cuda.h). An odd row count leaves the last row alone (A's rows
// 8-15 zero), an odd reduction count its last step (one m16n8k8).
// Anything else (float factors, no tensor cores, METALCALL_SGM_PRODUCT_NESTS=0) runs the
// loops as written.
#pragma once

#ifndef METALCALL_SGM_PRODUCT_NESTS
#define METALCALL_SGM_PRODUCT_NESTS 1
#endif

namespace metal {
namespace mtl_sgm {

/** One loop's range, [begin, end) (the loop was `for (V v = begin; v < end; ++v)`). */
template <class V, class E> struct nest_loop {
  V begin;
  E end;
};
template <class V, class E> METAL_FUNC nest_loop<V, E> nest_range(V begin, E end) { return nest_loop<V, E>{begin, end}; }

// The argument of role R (0 row, 1 column, 2 reduction) among the three.
template <int R, class I, class J, class K> METAL_FUNC auto by_role(I i, J j, K k) {
  if constexpr (R == 0) return i;
  else if constexpr (R == 1) return j;
  else return k;
}
// f of the loop variables in the loops' order (their roles R0 R1 R2), given them by role.
template <int R0, int R1, int R2, class F, class I, class J, class K>
METAL_FUNC decltype(auto) nest_at(F& f, I i, J j, K k) {
  return f(by_role<R0>(i, j, k), by_role<R1>(i, j, k), by_role<R2>(i, j, k));
}

// mma.m16n8k16 with all 16 rows of A: a[0] rows 0-7 and a[1] rows 8-15 of K 0-7, a[2]
// and a[3] of K 8-15; b0 and b1 B's K 0-7 and 8-15; c rows 0-7 (x, y) and 8-15 (z, w).
METAL_FUNC f4 mma16n8k16_rows(__half, const unsigned (&a)[4], unsigned b0, unsigned b1, const f4& c) {
  f4 d = c;
#if __CUDA_ARCH__ >= 800
  asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%11,%12,%13};"
      : "=f"(d.x), "=f"(d.y), "=f"(d.z), "=f"(d.w)
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1), "f"(c.x), "f"(c.y), "f"(c.z), "f"(c.w));
#endif
  return d;
}
METAL_FUNC f4 mma16n8k16_rows(mtl_bfloat, const unsigned (&a)[4], unsigned b0, unsigned b1, const f4& c) {
  f4 d = c;
#if __CUDA_ARCH__ >= 800
  asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%11,%12,%13};"
      : "=f"(d.x), "=f"(d.y), "=f"(d.z), "=f"(d.w)
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1), "f"(c.x), "f"(c.y), "f"(c.z), "f"(c.w));
#endif
  return d;
}
// mma.m16n8k8 with both halves of A: a0 rows 0-7, a1 rows 8-15.
METAL_FUNC f4 mma16n8k8_rows(__half, unsigned a0, unsigned a1, unsigned b, const f4& c) {
  f4 d = c;
#if __CUDA_ARCH__ >= 800
  asm("mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%7,%8,%9,%10};"
      : "=f"(d.x), "=f"(d.y), "=f"(d.z), "=f"(d.w)
      : "r"(a0), "r"(a1), "r"(b), "f"(c.x), "f"(c.y), "f"(c.z), "f"(c.w));
#endif
  return d;
}
METAL_FUNC f4 mma16n8k8_rows(mtl_bfloat, unsigned a0, unsigned a1, unsigned b, const f4& c) {
  f4 d = c;
#if __CUDA_ARCH__ >= 800
  asm("mma.sync.aligned.m16n8k8.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%7,%8,%9,%10};"
      : "=f"(d.x), "=f"(d.y), "=f"(d.z), "=f"(d.w)
      : "r"(a0), "r"(a1), "r"(b), "f"(c.x), "f"(c.y), "f"(c.z), "f"(c.w));
#endif
  return d;
}

template <class X, class A, class B> struct nest_on_tensor_cores {
#if __CUDA_ARCH__ >= 800 && METALCALL_SGM_PRODUCT_NESTS
  static constexpr bool value = is_same_v<typename X::value_type, float> && sizeof(typename A::value_type) == 2 &&
                                is_same_v<typename A::value_type, typename B::value_type> &&
                                tensor_core<typename A::value_type, typename B::value_type>::value;
#else
  static constexpr bool value = false;
#endif
};

/**
 * The nest `for v0 … for v1 … for v2 … simdgroup_multiply_accumulate(x(v), a(v), b(v), x(v))`,
 * the loops' roles R0 R1 R2 (a permutation of 0 row, 1 column, 2 reduction; the roles
 * the source's nest lacks have one-element ranges of their own, after its loops).
 */
template <int R0, int R1, int R2, class V0, class E0, class V1, class E1, class V2, class E2, class XF, class AF, class BF>
METAL_FUNC void product_nest(nest_loop<V0, E0> l0, nest_loop<V1, E1> l1, nest_loop<V2, E2> l2, XF x, AF a, BF b) {
  // The begins by role, and the matrix types.
  const auto rb = by_role<(R0 == 0 ? 0 : R1 == 0 ? 1 : 2)>(l0, l1, l2);
  const auto cb = by_role<(R0 == 1 ? 0 : R1 == 1 ? 1 : 2)>(l0, l1, l2);
  const auto kb = by_role<(R0 == 2 ? 0 : R1 == 2 ? 1 : 2)>(l0, l1, l2);
  using XM = remove_reference_t<decltype(nest_at<R0, R1, R2>(x, rb.begin, cb.begin, kb.begin))>;
  using AM = remove_const_t<remove_reference_t<decltype(nest_at<R0, R1, R2>(a, rb.begin, cb.begin, kb.begin))>>;
  using BM = remove_const_t<remove_reference_t<decltype(nest_at<R0, R1, R2>(b, rb.begin, cb.begin, kb.begin))>>;
  if constexpr (nest_on_tensor_cores<XM, AM, BM>::value) {
    using T = typename AM::value_type;
#pragma unroll
    for (auto k = kb.begin; k < kb.end; k += 2) {
      const bool k2 = k + 1 < kb.end;
#pragma unroll
      for (auto j = cb.begin; j < cb.end; ++j) {
        // b (the column's, for both rows): its transpose in mma's layout, mma's B.
        const unsigned b0 = word(nest_at<R0, R1, R2>(b, rb.begin, j, k).mtl_bvalue());
        const unsigned b1 = k2 ? word(nest_at<R0, R1, R2>(b, rb.begin, j, k + 1).mtl_bvalue()) : 0u;
#pragma unroll
        for (auto i = rb.begin; i < rb.end; i += 2) {
          const bool i2 = i + 1 < rb.end;
          XM& top = nest_at<R0, R1, R2>(x, i, j, k);
          const vec<float, 2> t = top.mtl_value();  // (adds what is pending)
          vec<float, 2> u;
          u.x = u.y = 0.0f;
          if (i2) u = nest_at<R0, R1, R2>(x, i + 1, j, k).mtl_value();
          // A: rows 0-7 of a(i), rows 8-15 of a(i + 1) (zero without), K halves k and k + 1.
          const unsigned wa[4] = {
              word(nest_at<R0, R1, R2>(a, i, j, k).mtl_value()),
              i2 ? word(nest_at<R0, R1, R2>(a, i + 1, j, k).mtl_value()) : 0u,
              k2 ? word(nest_at<R0, R1, R2>(a, i, j, k + 1).mtl_value()) : 0u,
              i2 && k2 ? word(nest_at<R0, R1, R2>(a, i + 1, j, k + 1).mtl_value()) : 0u};
          const f4 c{t.x, t.y, u.x, u.y};
          const f4 d = k2 ? mma16n8k16_rows(T(), wa, b0, b1, c) : mma16n8k8_rows(T(), wa[0], wa[1], b0, c);
          top.mtl_set_rows(d.x, d.y);
          if (i2) nest_at<R0, R1, R2>(x, i + 1, j, k).mtl_set_rows(d.z, d.w);
        }
      }
    }
  } else {
#pragma unroll
    for (V0 v0 = l0.begin; v0 < l0.end; ++v0)
#pragma unroll
      for (V1 v1 = l1.begin; v1 < l1.end; ++v1)
#pragma unroll
        for (V2 v2 = l2.begin; v2 < l2.end; ++v2) {
          auto& d = x(v0, v1, v2);
          simdgroup_multiply_accumulate(d, a(v0, v1, v2), b(v0, v1, v2), d);
        }
  }
}

}  // namespace mtl_sgm
}  // namespace metal
