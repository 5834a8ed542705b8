// metalcall MSL prelude: operators on SIMD-group matrices, for both backends'
// simdgroup_matrix (metal_simdgroup_matrix.h, metal_simdgroup_matrix_cuda.h):
// `a * b` is the matrix product, as simdgroup_multiply(d, a, b) computes it.
#pragma once

namespace metal {

template <class T, int C, int R, int K>
METAL_FUNC simdgroup_matrix<T, C, R> operator*(const simdgroup_matrix<T, K, R>& a, const simdgroup_matrix<T, C, K>& b) {
  simdgroup_matrix<T, C, R> d;
  simdgroup_multiply(d, a, b);
  return d;
}

}  // namespace metal
