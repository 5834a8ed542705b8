// metalcall MSL prelude, CUDA: loop nests of SIMD-group matrix products.
//
// The translator (cpp/src/msl/passes/product_nests.cpp) hands a nest of up to three loops whose
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
// The position among the loops (0, 1 or 2) of the loop with role R, for the loops' roles R0 R1.
template <int R, int R0, int R1> constexpr int nest_position = R0 == R ? 0 : R1 == R ? 1 : 2;
// f of the loop variables in the loops' order (their roles R0 R1 R2), given them by role.
template <int R0, int R1, int R2, class F, class I, class J, class K>
METAL_FUNC decltype(auto) nest_at(F& f, I i, J j, K k) {
  return f(by_role<R0>(i, j, k), by_role<R1>(i, j, k), by_role<R2>(i, j, k));
}

// mma.m16n8k16 with all 16 rows of A (T half or bfloat): a[0] rows 0-7 and a[1] rows 8-15
// of K 0-7, a[2] and a[3] of K 8-15; b0 and b1 B's K 0-7 and 8-15; c rows 0-7 (x, y) and
// 8-15 (z, w). Not asm volatile, unlike metal_simdgroup_matrix_cuda.h's mma16n8k16 (rows
// 0-7 only), which these would serve too: volatile or not changes the SASS of the measured
// kernels of either path (checked with NVRTC), so each keeps the form it was measured in.
#define METALCALL_MMA_ROWS_ARGS                                                                                \
  " {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%11,%12,%13};"                                                 \
      : "=f"(d.x), "=f"(d.y), "=f"(d.z), "=f"(d.w)                                                             \
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1), "f"(c.x), "f"(c.y), "f"(c.z), "f"(c.w)
template <class T> METAL_FUNC f4 mma16n8k16_rows(T, const unsigned (&a)[4], unsigned b0, unsigned b1, const f4& c) {
  f4 d = c;
#if __CUDA_ARCH__ >= 800
  if constexpr (is_same_v<T, __half>) asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32" METALCALL_MMA_ROWS_ARGS);
  else asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32" METALCALL_MMA_ROWS_ARGS);
#endif
  return d;
}
#undef METALCALL_MMA_ROWS_ARGS
// mma.m16n8k8 with both halves of A: a0 rows 0-7, a1 rows 8-15.
#define METALCALL_MMA_ROWS_ARGS                                              \
  " {%0,%1,%2,%3}, {%4,%5}, {%6}, {%7,%8,%9,%10};"                           \
      : "=f"(d.x), "=f"(d.y), "=f"(d.z), "=f"(d.w)                           \
      : "r"(a0), "r"(a1), "r"(b), "f"(c.x), "f"(c.y), "f"(c.z), "f"(c.w)
template <class T> METAL_FUNC f4 mma16n8k8_rows(T, unsigned a0, unsigned a1, unsigned b, const f4& c) {
  f4 d = c;
#if __CUDA_ARCH__ >= 800
  if constexpr (is_same_v<T, __half>) asm("mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32" METALCALL_MMA_ROWS_ARGS);
  else asm("mma.sync.aligned.m16n8k8.row.col.f32.bf16.bf16.f32" METALCALL_MMA_ROWS_ARGS);
#endif
  return d;
}
#undef METALCALL_MMA_ROWS_ARGS

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
  const auto rb = by_role<nest_position<0, R0, R1>>(l0, l1, l2);
  const auto cb = by_role<nest_position<1, R0, R1>>(l0, l1, l2);
  const auto kb = by_role<nest_position<2, R0, R1>>(l0, l1, l2);
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

// Loads. The translator hands a nest of up to three loops whose body is one
// `simdgroup_load(M[..], source, ...)` to load_nest, with a lambda of the loop variables
// that gives the call's arguments (load_args). 16-bit matrices read from threadgroup
// memory in rows of 16 bytes, as a GEMM's tiles are, then take four blocks with one
// ldmatrix.x4 for each layout (mma's: mtl_v; the transpose: mtl_b), where one call at a time
// takes one: a quarter of the shared-memory instructions, which otherwise fill the queue
// that the tensor cores' operands wait in. The compiler drops the layout a matrix is never
// used in, as for single loads. Anything else loads one matrix a call.

/** One simdgroup_load call's arguments. */
template <class M, class P, class O> struct load_call {
  M* m;
  P src;
  unsigned long epr;
  O origin;
  bool transpose;
  METAL_FUNC void run() const { simdgroup_load(*m, src, epr, origin, transpose); }
};
template <class T, int C, int R, class P, class O = mtl_ulong2>
METAL_FUNC load_call<simdgroup_matrix<T, C, R>, P, O> load_args(simdgroup_matrix<T, C, R>& m, P src,
                                                                unsigned long elements_per_row = C,
                                                                O matrix_origin = O(0), bool transpose_matrix = false) {
  return load_call<simdgroup_matrix<T, C, R>, P, O>{&m, src, elements_per_row, matrix_origin, transpose_matrix};
}

template <class Call> struct loads_by_four { static constexpr bool value = false; };
template <class T, int C, int R, class P, class O> struct loads_by_four<load_call<simdgroup_matrix<T, C, R>, P, O>> {
#if __CUDA_ARCH__ >= 750
  static constexpr bool value = sizeof(T) == 2 && !kQuads && !kRowPairs && !is_same_v<remove_pointer_t<P>, P> &&
                                is_same_v<remove_const_t<remove_pointer_t<P>>, T>;
#else
  static constexpr bool value = false;
#endif
};

// This lane's row address of a call's block, for ldmatrix (lanes 8q to 8q + 7 give block q's rows).
template <class Call> METAL_FUNC unsigned block_row_address(const Call& c) {
  const mtl_ulong2 o = mtl_ulong2(c.origin);
  return unsigned(__cvta_generic_to_shared((const void*)(c.src + (o.y * c.epr + o.x) + (lane() & 7u) * c.epr)));
}
template <class Call> METAL_FUNC bool block_rows_in_shared(const Call& c) {
  using T = typename remove_pointer_t<decltype(c.m)>::value_type;
  return rows_in_shared<T>(c.src, c.epr, mtl_ulong2(c.origin).x);
}

// Four loads: two ldmatrix.x4 where every block lies in threadgroup memory in 16-byte
// rows (a test the compiler folds where it knows the tiles), else one at a time.
template <class Call> METAL_FUNC void load_four(const Call& c0, const Call& c1, const Call& c2, const Call& c3) {
  if (!(block_rows_in_shared(c0) && block_rows_in_shared(c1) && block_rows_in_shared(c2) && block_rows_in_shared(c3))) {
    c0.run();
    c1.run();
    c2.run();
    c3.run();
    return;
  }
  const unsigned q = lane() >> 3;
  const unsigned a0 = block_row_address(c0), a1 = block_row_address(c1), a2 = block_row_address(c2),
                 a3 = block_row_address(c3);
  const unsigned addr = q == 0 ? a0 : q == 1 ? a1 : q == 2 ? a2 : a3;
  unsigned rows[4] = {0u, 0u, 0u, 0u}, cols[4] = {0u, 0u, 0u, 0u};
#if __CUDA_ARCH__ >= 750
  asm("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
      : "=r"(rows[0]), "=r"(rows[1]), "=r"(rows[2]), "=r"(rows[3])
      : "r"(addr)
      : "memory");
  asm("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
      : "=r"(cols[0]), "=r"(cols[1]), "=r"(cols[2]), "=r"(cols[3])
      : "r"(addr)
      : "memory");
#endif
  const Call* calls[4] = {&c0, &c1, &c2, &c3};
#pragma unroll
  for (unsigned k = 0; k < 4; ++k) {
    auto& d = *calls[k]->m;
    using T = typename remove_reference_t<decltype(d)>::value_type;
    // Memory holding the matrix: rows give mma's layout, the transposed read its B layout;
    // memory holding the transpose: the other way round.
    const bool t = calls[k]->transpose;
    d.mtl_v = unword<T>(t ? cols[k] : rows[k]);
    d.mtl_b = unword<T>(t ? rows[k] : cols[k]);
    d.mtl_has_b = true;
    d.mtl_has_qa = d.mtl_has_bx = false;
    d.mtl_idle[0] = d.mtl_idle[1] = 0.0f;
    d.mtl_pend = 0;
    d.mtl_prow = kOwn;
    d.mtl_split = false;
    d.mtl_view = false;
  }
}

/** The nest `for v0 … for v1 … for v2 … simdgroup_load(args(v))` (absent loops: one-element ranges). */
template <class V0, class E0, class V1, class E1, class V2, class E2, class F>
METAL_FUNC void load_nest(nest_loop<V0, E0> l0, nest_loop<V1, E1> l1, nest_loop<V2, E2> l2, F f) {
  // The iterations in order, counted from 0 (the loop variables' values from the count).
  const unsigned long n0 = l0.begin < l0.end ? (unsigned long)(l0.end - l0.begin) : 0ul;
  const unsigned long n1 = l1.begin < l1.end ? (unsigned long)(l1.end - l1.begin) : 0ul;
  const unsigned long n2 = l2.begin < l2.end ? (unsigned long)(l2.end - l2.begin) : 0ul;
  const unsigned long total = n0 * n1 * n2;
  auto at = [&](unsigned long n) {
    return f(V0(l0.begin + n / (n1 * n2)), V1(l1.begin + (n / n2) % n1), V2(l2.begin + n % n2));
  };
  unsigned long n = 0;
  if constexpr (loads_by_four<decltype(at(0ul))>::value) {
#pragma unroll
    for (; n + 4 <= total; n += 4) load_four(at(n), at(n + 1), at(n + 2), at(n + 3));
  }
#pragma unroll
  for (; n < total; ++n) at(n).run();
}

}  // namespace mtl_sgm
}  // namespace metal
