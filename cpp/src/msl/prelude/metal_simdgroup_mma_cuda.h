// metalcall MSL prelude, CUDA: the SIMD-group matrices' registers and tensor-core
// operations (mma's layouts, pairs of 16-bit values, ldmatrix from threadgroup tiles, one
// product on the tensor cores). metal_simdgroup_matrix_cuda.h builds the matrix on these;
// its opening comment explains the layouts.
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

// The lane index without `volatile`, so the compiler reads it once per kernel.
METAL_FUNC unsigned lane() {
  unsigned l;
  asm("mov.u32 %0, %%laneid;" : "=r"(l));
  return l;
}

// This lane's row and first column in mma's accumulator layout.
METAL_FUNC unsigned mma_row(unsigned m) { return m >> 2; }
METAL_FUNC unsigned mma_col(unsigned m) { return (m & 3u) * 2u; }

// A pair of 16-bit values as one 32-bit register (x in the low half), and back.
template <class T> METAL_FUNC unsigned word(const vec<T, 2>& v) {
  static_assert(sizeof(vec<T, 2>) == 4, "16-bit elements");
  unsigned u;
  memcpy(&u, &v, sizeof u);
  return u;
}
template <class T> METAL_FUNC vec<T, 2> unword(unsigned u) {
  vec<T, 2> v;
  memcpy(&v, &u, sizeof u);
  return v;
}

// The transpose of a 16-bit matrix, both in mma's accumulator layout.
METAL_FUNC unsigned transposed(unsigned w) {
#if __CUDA_ARCH__ >= 750
  unsigned r;
  asm volatile("movmatrix.sync.aligned.m8n8.trans.b16 %0, %1;" : "=r"(r) : "r"(w));
  return r;
#else
  // Lane m = 4g + t wants X[2t][g] and X[2t+1][g], held by lanes 8t + g/2 and 8t + 4 + g/2.
  const unsigned m = lane(), g = m >> 2, t = m & 3u;
  const unsigned w0 = __shfl_sync(0xffffffffu, w, int(8 * t + (g >> 1)));
  const unsigned w1 = __shfl_sync(0xffffffffu, w, int(8 * t + 4 + (g >> 1)));
  return (g & 1u) ? (w0 >> 16) | (w1 & 0xffff0000u) : (w0 & 0xffffu) | (w1 << 16);
#endif
}

// The offset of element (r, c) of a block from its first element (metal_simdgroup_matrix.h's
// offset() less the origin): the block's address is computed once, so that the blocks a
// kernel loads at constant origins lie at constant offsets from one address.
METAL_FUNC unsigned long in_block(unsigned r, unsigned c, unsigned long epr, bool transpose) {
  return transpose ? c * epr + r : r * epr + c;
}

// Elements i0 and i1 of `src` as a pair, and back. Element by element: a 2-element
// access would need a run-time alignment test, and its branch around every load costs
// more in a GEMM's inner loop than the second access; where the compiler can tell the
// alignment (a padded threadgroup tile) it merges the two itself.
template <class T, class P> METAL_FUNC vec<T, 2> load_pair(P& src, unsigned long i0, unsigned long i1) {
  vec<T, 2> v;
  v.x = src[i0];
  v.y = src[i1];
  return v;
}
// Threadgroup tiles, sm_75+: the B layouts of a 16-bit matrix T as one ldmatrix.trans each
// (one shared-memory wavefront and one instruction, where element loads take two 16-bit
// loads and a byte permute). Lanes 0-7 give the addresses of the 8 rows (row i ^ flip:
// flip 2 reads the B pair of lane ^ 1 where memory holds the matrix itself; of its
// transpose that pair is a column permutation, left to element loads); `transpose`: memory
// holds the transpose, so the plain form gives the B layout. Usable where `src` points at T
// itself (raw bits: no conversion to make) in shared memory and the block's rows are 16-byte
// aligned (a run-time test the compiler folds where it knows the tile: the tile's address,
// the row length and the column origin).
template <class T, class P> METAL_FUNC bool rows_in_shared(P src, unsigned long epr, unsigned long first) {
#if __CUDA_ARCH__ >= 750
  if constexpr (sizeof(T) == 2 && is_same_v<remove_const_t<remove_pointer_t<P>>, T> && !is_same_v<remove_pointer_t<P>, P>)
    return __isShared((const void*)src) &&
           ((unsigned(__cvta_generic_to_shared((const void*)src)) | unsigned(epr * 2u) | unsigned(first * 2u)) & 15u) == 0;
  else
    return false;
#else
  return false;
#endif
}
template <class P> METAL_FUNC unsigned shared_rows_b(P block, unsigned long epr, bool transpose, unsigned flip) {
  unsigned r = 0;
#if __CUDA_ARCH__ >= 750
  const unsigned addr = unsigned(__cvta_generic_to_shared((const void*)(block + ((lane() & 7u) ^ flip) * epr)));
  if (transpose) asm("ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%0}, [%1];" : "=r"(r) : "r"(addr) : "memory");
  else asm("ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16 {%0}, [%1];" : "=r"(r) : "r"(addr) : "memory");
#endif
  return r;
}
// Stores are rarer (a GEMM writes C once): neighbours at an address aligned for the pair
// (a run-time test) go as one 4- or 8-byte store, not two.
template <class T, class P> METAL_FUNC void store_pair(P& dst, unsigned long i0, unsigned long i1, const vec<T, 2>& v) {
  if constexpr (!is_same_v<remove_pointer_t<P>, P> && is_same_v<remove_pointer_t<P>, T> && (sizeof(T) == 2 || sizeof(T) == 4)) {
    // may_alias: the kernel's other accesses reach this memory as T.
    typedef conditional_t<sizeof(T) == 2, unsigned int, unsigned long long> __attribute__((__may_alias__)) Pair;
    T* const p = dst + i0;
    if (i1 == i0 + 1 && reinterpret_cast<unsigned long long>(p) % sizeof(Pair) == 0) {
      *reinterpret_cast<Pair*>(p) = *reinterpret_cast<const Pair*>(&v);
      return;
    }
  }
  dst[i0] = v.x;
  dst[i1] = v.y;
}

template <class A, class B> struct tensor_core { static constexpr bool value = false; };
template <> struct tensor_core<__half, __half> { static constexpr bool value = true; };
#if __CUDA_ARCH__ >= 800
template <> struct tensor_core<mtl_bfloat, mtl_bfloat> { static constexpr bool value = true; };
#endif
#if __CUDA_ARCH__ >= 800 && defined(METALCALL_FAST_MATH) && defined(METALCALL_SGM_TF32) && METALCALL_SGM_TF32
#define METALCALL_SGM_TF32_ON 1
template <> struct tensor_core<float, float> { static constexpr bool value = true; };
#else
#define METALCALL_SGM_TF32_ON 0
#endif

// An accumulator's registers for mma: this lane's two elements (x, y) and its two of
// the idle rows 8-15 (z, w).
struct f4 {
  float x, y, z, w;
};

// Rows 8-15 of the 16x8 A are zero, so rows 8-15 of D are those of C. C's come from the
// accumulator's own idle pair (simdgroup_matrix::mtl_idle: zero with pairs, the second
// partial sum with quads), so an accumulator keeps 4 registers that the mma reads and
// writes in place: no instruction goes into zeroing or moving C's lower half around each mma.
METAL_FUNC f4 mma16n8k8(__half, unsigned a, unsigned b, const f4& c) {
  f4 d;
  asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%7,%8,%9,%10};"
               : "=f"(d.x), "=f"(d.y), "=f"(d.z), "=f"(d.w)
               : "r"(a), "r"(0u), "r"(b), "f"(c.x), "f"(c.y), "f"(c.z), "f"(c.w));
  return d;
}
METAL_FUNC f4 mma16n8k8(mtl_bfloat, unsigned a, unsigned b, const f4& c) {
  f4 d = c;
#if __CUDA_ARCH__ >= 800
  asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%7,%8,%9,%10};"
               : "=f"(d.x), "=f"(d.y), "=f"(d.z), "=f"(d.w)
               : "r"(a), "r"(0u), "r"(b), "f"(c.x), "f"(c.y), "f"(c.z), "f"(c.w));
#endif
  return d;
}

// a * b + c for float factors in TF32 (see the top): a = this lane's pair of A in mma's
// layout, bt = its pair of B's transpose in mma's layout.
METAL_FUNC unsigned to_tf32(float x) {
  unsigned r = 0;
#if __CUDA_ARCH__ >= 800
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
#endif
  return r;
}
METAL_FUNC f4 mma16n8k8_tf32(const vec<float, 2>& a, const vec<float, 2>& bt, const f4& c) {
  f4 d = c;
#if __CUDA_ARCH__ >= 800
  asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%11,%12,%13};"
               : "=f"(d.x), "=f"(d.y), "=f"(d.z), "=f"(d.w)
               : "r"(to_tf32(a.x)), "r"(0u), "r"(to_tf32(a.y)), "r"(0u), "r"(to_tf32(bt.x)), "r"(to_tf32(bt.y)),
                 "f"(c.x), "f"(c.y), "f"(c.z), "f"(c.w));
#endif
  return d;
}

// The transpose of a float matrix, both in mma's accumulator layout: lane 4g + t wants
// X[2t][g] and X[2t + 1][g], held by lanes 8t + g/2 and 8t + 4 + g/2.
METAL_FUNC vec<float, 2> transposed(const vec<float, 2>& v) {
  const unsigned m = lane(), g = m >> 2, t = m & 3u;
  const f2 p0 = shfl(f2{v.x, v.y}, 8 * t + (g >> 1)), p1 = shfl(f2{v.x, v.y}, 8 * t + 4 + (g >> 1));
  vec<float, 2> r;
  r.x = (g & 1u) ? p0.y : p0.x;
  r.y = (g & 1u) ? p1.y : p1.x;
  return r;
}

// This lane's elements of a * b + acc on the tensor cores: a in mma's layout, b
// transposed (mma's B operand), acc and the result in mma's layout.
template <class T> METAL_FUNC f4 tensor_product(const vec<T, 2>& av, const vec<T, 2>& bt, const f4& acc) {
  if constexpr (is_same_v<T, float>) {
    return mma16n8k8_tf32(av, bt, acc);
  } else {
    return mma16n8k8(T(), word(av), word(bt), acc);
  }
}

// Two products a0 * b0 + a1 * b1 + c in one mma.m16n8k16: a0 and a1 fill the upper rows
// of its 16x16 A (k 0-7 and 8-15), b0 and b1 its 16x8 B.
// (Declared everywhere, used from sm_80 on, where m16n8k16 exists for both types.)
METAL_FUNC f4 mma16n8k16(__half, unsigned a0, unsigned a1, unsigned b0, unsigned b1, const f4& c) {
  f4 d = c;
#if __CUDA_ARCH__ >= 800
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%11,%12,%13};"
               : "=f"(d.x), "=f"(d.y), "=f"(d.z), "=f"(d.w)
               : "r"(a0), "r"(0u), "r"(a1), "r"(0u), "r"(b0), "r"(b1), "f"(c.x), "f"(c.y), "f"(c.z), "f"(c.w));
#endif
  return d;
}
METAL_FUNC f4 mma16n8k16(mtl_bfloat, unsigned a0, unsigned a1, unsigned b0, unsigned b1, const f4& c) {
  f4 d = c;
#if __CUDA_ARCH__ >= 800
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%10,%11,%12,%13};"
               : "=f"(d.x), "=f"(d.y), "=f"(d.z), "=f"(d.w)
               : "r"(a0), "r"(0u), "r"(a1), "r"(0u), "r"(b0), "r"(b1), "f"(c.x), "f"(c.y), "f"(c.z), "f"(c.w));
#endif
  return d;
}

}  // namespace mtl_sgm

}  // namespace metal
