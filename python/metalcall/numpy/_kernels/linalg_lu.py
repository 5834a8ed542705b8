"""LU factorisation with partial pivoting (LAPACK's getrf: P A = L U, the first largest pivot of
each column, sized |re| + |im| for complex dtypes as izamax does) and what it serves: solving, inverting, determinants. One threadgroup per
matrix (linalg_common.py). `info` is LAPACK's: 0, or k + 1 where U[k, k] is exactly zero.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import metalcall as mc

from . import cache, linalg_common as lc

_LU = """
kernel void lu(const device $T* in [[buffer(0)]], device $T* lu [[buffer(1)]], device int* piv [[buffer(2)]],
               device int* info [[buffer(3)]], constant uint& n [[buffer(4)]],
               uint g [[threadgroup_position_in_grid]], uint tid [[thread_index_in_threadgroup]]) {
  threadgroup $R best_value[$NTG];
  threadgroup uint best_row[$NTG];
  threadgroup uint pivot_row;
  const ulong base = ulong(g) * n * n;
  const device $T* x = in + base;
  device $T* A = lu + base;
  device int* P = piv + ulong(g) * n;
  for (uint e = tid; e < n * n; e += $NTG) A[e] = x[e];
  if (tid == 0) info[g] = 0;
  $SYNC
  for (uint k = 0; k < n; ++k) {
$PIVOT
    const uint r = pivot_row;
    if (r != k)
      for (uint j = tid; j < n; j += $NTG) { $T t = A[k * n + j]; A[k * n + j] = A[r * n + j]; A[r * n + j] = t; }
    $SYNC
    const $T d = A[k * n + k];
    if (!la_iszero(d))
      for (uint i = k + 1 + tid; i < n; i += $NTG) A[i * n + k] = la_div(A[i * n + k], d);
    $SYNC
$UPDATE
    $SYNC
  }
}
"""

# The rank-1 update of the trailing matrix: columns shared out on GPUs (neighbouring threads touch
# neighbouring addresses), rows on the CPU (one thread walks each row contiguously).
_UPDATE_BY_COLUMNS = """
    for (uint j = k + 1 + tid; j < n; j += $NTG) {
      const $T u = A[k * n + j];
      for (uint i = k + 1; i < n; ++i) A[i * n + j] = la_sub(A[i * n + j], la_mul(A[i * n + k], u));
    }"""
_UPDATE_BY_ROWS = """
    for (uint i = k + 1 + tid; i < n; i += $NTG) {
      const $T l = A[i * n + k];
      for (uint j = k + 1; j < n; ++j) A[i * n + j] = la_sub(A[i * n + j], la_mul(l, A[k * n + j]));
    }"""

# Solves L U X = P B for X (n x nrhs) from lu/piv; B is the identity when `identity` is set (inv).
_SOLVE = """
kernel void lu_solve(const device $T* lu [[buffer(0)]], const device int* piv [[buffer(1)]],
                     const device $T* b [[buffer(2)]], device $T* x [[buffer(3)]], constant uint& n [[buffer(4)]],
                     constant uint& nrhs [[buffer(5)]], constant uint& identity [[buffer(6)]],
                     constant uint& b_batch [[buffer(7)]],
                     uint g [[threadgroup_position_in_grid]], uint tid [[thread_index_in_threadgroup]]) {
  const device $T* A = lu + ulong(g) * n * n;
  const device int* P = piv + ulong(g) * n;
  device $T* X = x + ulong(g) * n * nrhs;
  const device $T* B = b + ulong(b_batch ? g : 0) * n * nrhs;
  for (uint c = tid; c < nrhs; c += $NTG) {
    for (uint i = 0; i < n; ++i) X[i * nrhs + c] = identity ? la_make($R(i == c ? 1 : 0), $R(0)) : B[i * nrhs + c];
    for (uint i = 0; i < n; ++i) {
      const uint r = uint(P[i]);
      if (r != i) { $T t = X[i * nrhs + c]; X[i * nrhs + c] = X[r * nrhs + c]; X[r * nrhs + c] = t; }
    }
  }
  $SYNC
  for (uint k = 0; k < n; ++k) {  // L (unit diagonal): forward
    for (uint i = k + 1 + tid; i < n; i += $NTG) {
      const $T l = A[i * n + k];
      for (uint c = 0; c < nrhs; ++c) X[i * nrhs + c] = la_sub(X[i * nrhs + c], la_mul(l, X[k * nrhs + c]));
    }
    $SYNC
  }
  for (uint k = n; k-- > 0;) {  // U: backward
    const $T d = A[k * n + k];
    for (uint c = tid; c < nrhs; c += $NTG) X[k * nrhs + c] = la_div(X[k * nrhs + c], d);
    $SYNC
    for (uint i = tid; i < k; i += $NTG) {
      const $T u = A[i * n + k];
      for (uint c = 0; c < nrhs; ++c) X[i * nrhs + c] = la_sub(X[i * nrhs + c], la_mul(u, X[k * nrhs + c]));
    }
    $SYNC
  }
}
"""

# One thread per matrix: det = prod(U[i, i]) * (-1)^swaps; slogdet's sign (prod(U[i, i] / |U[i, i]|)
# * (-1)^swaps: +-1 for real dtypes, on the unit circle for complex ones; 0 if singular) and log|det|.
_DET = """
kernel void det(const device $T* lu [[buffer(0)]], const device int* piv [[buffer(1)]], device $T* out [[buffer(2)]],
                constant uint& n [[buffer(3)]], constant uint& batch [[buffer(4)]], uint g [[thread_position_in_grid]]) {
  if (g >= batch) return;
  const device $T* A = lu + ulong(g) * n * n;
  $T det = la_make($R(1), $R(0)), sign = la_make($R(1), $R(0));
  $R logabs = $R(0);
  bool singular = false;
  for (uint i = 0; i < n; ++i) {
    const $T d = A[i * n + i];
    if (uint(piv[ulong(g) * n + i]) != i) { det = la_scale(det, $R(-1)); sign = la_scale(sign, $R(-1)); }
    det = la_mul(det, d);
    const $R size = la_abs(d);
    if (size == $R(0)) singular = true;
    else sign = la_mul(sign, la_divr(d, size));
    logabs += log(size);
  }
  out[3 * ulong(g)] = det;
  out[3 * ulong(g) + 1] = singular ? la_make($R(0), $R(0)) : sign;
  out[3 * ulong(g) + 2] = la_make(singular ? $R(-INFINITY) : logabs, $R(0));
}
"""


def lu(dev: mc.Device, a: mc.Buffer, batch: int, n: int, dtype: Any) -> tuple[mc.Buffer, mc.Buffer, mc.Buffer]:
    """Factors `batch` C-contiguous n x n matrices (n > 0, batch > 0): (lu, piv, info) Buffers."""
    dt = lc.float_type(dtype, complex_ok=True)
    threads = lc.group_size(dev, n)
    out = cache.empty(dev, batch * n * n, dt)
    piv = cache.empty(dev, batch * n, np.int32)
    info = cache.empty(dev, batch, np.int32)
    update = _UPDATE_BY_ROWS if threads == 1 else _UPDATE_BY_COLUMNS
    pivot = lc.pivot_search("A", "$SYNC", "P[k] = int(row);\n        if (la_iszero(A[row * n + k]) && info[g] == 0) info[g] = int(k + 1);")
    lc.run(dev, _LU.replace("$UPDATE", update).replace("$PIVOT", pivot), "lu", dt, threads, batch, a, out, piv, info, n)
    return out, piv, info


def solve(dev: mc.Device, lu_buf: mc.Buffer, piv: mc.Buffer, b: mc.Buffer | None, batch: int, n: int, nrhs: int,
          dtype: Any, *, b_batched: bool = True) -> mc.Buffer:
    """X with A X = B for each factored A (`b` None: B = I, the inverse); B is (batch or 1, n, nrhs)."""
    dt = lc.float_type(dtype, complex_ok=True)
    threads = lc.group_size(dev, max(n, nrhs))
    x = cache.empty(dev, batch * n * nrhs, dt)
    src = b if b is not None else cache.nonempty(dev, cache.empty(dev, 0, dt), dt)
    lc.run(dev, _SOLVE, "lu_solve", dt, threads, batch, lu_buf, piv, src, x, n, nrhs, int(b is None),
           int(b_batched))
    return x


def determinants(dev: mc.Device, lu_buf: mc.Buffer, piv: mc.Buffer, batch: int, n: int, dtype: Any) -> mc.Buffer:
    """(batch, 3) of `dtype`: det, slogdet's sign and log|det| (in the real part) of each factored matrix."""
    dt = lc.float_type(dtype, complex_ok=True)
    out = cache.empty(dev, batch * 3, dt)
    kern = cache.kernel(dev, lc.render(_DET, dt, 1), "det", fast_math=False)
    cache.launch(kern, batch, lu_buf, piv, out, n, batch)
    return out
