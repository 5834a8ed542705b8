"""Cholesky (LAPACK's potrf on the lower triangle: A = L L^H) and Householder QR (geqrf + orgqr,
LAPACK's sign convention: R[j, j] = -sign(re a) * norm, real, so results match NumPy's to rounding),
for real and complex dtypes (linalg_common's la_* arithmetic). One
threadgroup per matrix (linalg_common.py).
"""

from __future__ import annotations

from typing import Any

import metalcall as mc
import numpy as np

from . import cache, linalg_common as lc

# L with A = L L^H from A's lower triangle; info = k + 1 where the k-th pivot is not positive
# (or NaN), as potrf, and the factorisation stops there. The work copy holds U = L^H (A = U^H U,
# upper triangle, row-major), so that the trailing update runs along rows: contiguous on the CPU
# ($UPDATE by rows), neighbouring threads on neighbouring columns on GPUs.
_CHOLESKY = """
kernel void cholesky(const device $T* in [[buffer(0)]], device $T* out [[buffer(1)]], device int* info [[buffer(2)]],
                     device $T* work [[buffer(3)]], constant uint& n [[buffer(4)]],
                     uint g [[threadgroup_position_in_grid]], uint tid [[thread_index_in_threadgroup]]) {
  threadgroup int failed;
  const ulong base = ulong(g) * n * n;
  const device $T* x = in + base;
  device $T* L = out + base;
  device $T* U = work + base;
  const $T zero = la_make($R(0), $R(0));
  for (uint e = tid; e < n * n; e += $NTG) {
    const uint i = e / n, j = e % n;
    U[e] = j >= i ? la_conj(x[j * n + i]) : zero;
  }
  if (tid == 0) { info[g] = 0; failed = 0; }
  $SYNC
  for (uint k = 0; k < n; ++k) {
    if (tid == 0) {
      const $R d = la_re(U[k * n + k]);  // a Hermitian matrix's diagonal is real: its real part, as potrf
      if (!(d > $R(0))) { info[g] = int(k + 1); failed = 1; }
      else U[k * n + k] = la_make(sqrt(d), $R(0));
    }
    $SYNC
    if (failed) break;
    const $R d = la_re(U[k * n + k]);
    for (uint i = k + 1 + tid; i < n; i += $NTG) U[k * n + i] = la_divr(U[k * n + i], d);
    $SYNC
$UPDATE
    $SYNC
  }
  for (uint e = tid; e < n * n; e += $NTG) {
    const uint i = e / n, j = e % n;
    L[e] = j <= i ? la_conj(U[j * n + i]) : zero;
  }
}
"""
_CHOLESKY_BY_ROWS = """
    for (uint j = k + 1 + tid; j < n; j += $NTG) {
      const $T s = la_conj(U[k * n + j]);
      for (uint i = j; i < n; ++i) U[j * n + i] = la_sub(U[j * n + i], la_mul(s, U[k * n + i]));
    }"""
_CHOLESKY_BY_COLUMNS = """
    for (uint i = k + 1 + tid; i < n; i += $NTG) {
      const $T u = U[k * n + i];
      for (uint j = k + 1; j <= i; ++j) U[j * n + i] = la_sub(U[j * n + i], la_mul(la_conj(U[k * n + j]), u));
    }"""

# Householder QR of an m x n matrix (kmin = min(m, n) reflectors H_j = I - tau_j v_j v_j^T, v_j[j] = 1,
# stored below the diagonal of the work copy), then Q (m x qcols: qcols = m or kmin) accumulated
# backwards from the identity and R (rrows x n, rrows = m or kmin) the work copy's upper triangle.
_QR = """
kernel void qr(const device $T* in [[buffer(0)]], device $T* work [[buffer(1)]], device $T* tau [[buffer(2)]],
               device $T* q [[buffer(3)]], device $T* r [[buffer(4)]], constant uint& m [[buffer(5)]],
               constant uint& n [[buffer(6)]], constant uint& qcols [[buffer(7)]], constant uint& rrows [[buffer(8)]],
               device $T* scratch [[buffer(9)]], uint g [[threadgroup_position_in_grid]], uint tid [[thread_index_in_threadgroup]]) {
  threadgroup $R partial[$NTG];
  threadgroup $R partial_max[$NTG];
  threadgroup $R scale;
  threadgroup $T hscale;
  const uint kmin = min(m, n);
  const device $T* x = in + ulong(g) * m * n;
$SCALE_X
  const $R sc = scale;
  device $T* A = work + ulong(g) * m * n;
  device $T* TAU = tau + ulong(g) * kmin;
  device $T* Q = q + ulong(g) * m * qcols;
  device $T* R = r + ulong(g) * rrows * n;
  device $T* WV = scratch + ulong(g) * max(n, qcols);
  for (uint e = tid; e < m * n; e += $NTG) A[e] = la_scale(x[e], sc);
  $SYNC
  for (uint j = 0; j < kmin; ++j) {
    $R s = $R(0);
    for (uint i = j + 1 + tid; i < m; i += $NTG) s += la_abs2(A[i * n + j]);
    partial[tid] = s;
    $SYNC
    if (tid == 0) {
      $R sigma = $R(0);
      for (uint t = 0; t < $NTG; ++t) sigma += partial[t];
      const $T alpha = A[j * n + j];
      const $R ar = la_re(alpha), ai = la_im(alpha);
      if (sigma == $R(0) && ai == $R(0)) { TAU[j] = la_make($R(0), $R(0)); hscale = la_make($R(0), $R(0)); }
      else {
        const $R norm = sqrt(ar * ar + ai * ai + sigma);
        const $R beta = ar >= $R(0) ? -norm : norm;
        TAU[j] = la_make((beta - ar) / beta, -ai / beta);
        hscale = la_div(la_make($R(1), $R(0)), la_sub(alpha, la_make(beta, $R(0))));
        A[j * n + j] = la_make(beta, $R(0));
      }
    }
    $SYNC
    const $T tj = TAU[j];
    if (!la_iszero(tj)) {
      const $T h = hscale;
      for (uint i = j + 1 + tid; i < m; i += $NTG) A[i * n + j] = la_mul(A[i * n + j], h);
      $SYNC
      // H^H = I - conj(tau) v v^H applied from the left, as geqr2
$APPLY_R
      $SYNC
    }
  }
  for (uint e = tid; e < m * qcols; e += $NTG) Q[e] = la_make($R(e / qcols == e % qcols ? 1 : 0), $R(0));
  for (uint e = tid; e < rrows * n; e += $NTG) R[e] = e % n >= e / n ? la_divr(A[e], sc) : la_make($R(0), $R(0));
  $SYNC
  for (uint j = kmin; j-- > 0;) {
    const $T tj = TAU[j];
    if (!la_iszero(tj)) {  // Q = H_0 H_1 ... H_(k-1), H = I - tau v v^H, as orgqr
$APPLY_Q
    }
    $SYNC
  }
}
"""


# Applying a reflector H = I - tau v v^H (v below the diagonal of column j, v[j] = 1) to the columns
# c0..cols-1 of M (leading dimension ld): w = conj(tau') v^H M, then M -= v w. GPUs share out the
# columns (neighbouring threads, neighbouring addresses); the CPU walks M row by row, contiguously,
# keeping w in `WV`.
def _apply(matrix: str, ld: str, c0: str, cols: str, tau: str, by_rows: bool) -> str:
    if by_rows:
        return f"""
      for (uint c = {c0}; c < {cols}; ++c) WV[c] = {matrix}[j * {ld} + c];
      for (uint i = j + 1; i < m; ++i) {{
        const $T vi = la_conj(A[i * n + j]);
        for (uint c = {c0}; c < {cols}; ++c) WV[c] = la_add(WV[c], la_mul(vi, {matrix}[i * {ld} + c]));
      }}
      for (uint c = {c0}; c < {cols}; ++c) {{
        WV[c] = la_mul({tau}, WV[c]);
        {matrix}[j * {ld} + c] = la_sub({matrix}[j * {ld} + c], WV[c]);
      }}
      for (uint i = j + 1; i < m; ++i) {{
        const $T vi = A[i * n + j];
        for (uint c = {c0}; c < {cols}; ++c) {matrix}[i * {ld} + c] = la_sub({matrix}[i * {ld} + c], la_mul(vi, WV[c]));
      }}"""
    return f"""
      for (uint c = {c0} + tid; c < {cols}; c += $NTG) {{
        $T w = {matrix}[j * {ld} + c];
        for (uint i = j + 1; i < m; ++i) w = la_add(w, la_mul(la_conj(A[i * n + j]), {matrix}[i * {ld} + c]));
        w = la_mul({tau}, w);
        {matrix}[j * {ld} + c] = la_sub({matrix}[j * {ld} + c], w);
        for (uint i = j + 1; i < m; ++i) {matrix}[i * {ld} + c] = la_sub({matrix}[i * {ld} + c], la_mul(A[i * n + j], w));
      }}"""


def cholesky(dev: mc.Device, a: mc.Buffer, batch: int, n: int, dtype: Any) -> tuple[mc.Buffer, mc.Buffer]:
    """The lower Cholesky factors of `batch` n x n matrices (n, batch > 0) and potrf's info."""
    dt = lc.float_type(dtype, complex_ok=True)
    threads = lc.group_size(dev, n)
    out = cache.empty(dev, batch * n * n, dt)
    info = cache.empty(dev, batch, np.int32)
    work = cache.empty(dev, batch * n * n, dt)
    update = _CHOLESKY_BY_ROWS if threads == 1 else _CHOLESKY_BY_COLUMNS
    lc.run(dev, _CHOLESKY.replace("$UPDATE", update), "cholesky", dt, threads, batch, a, out, info, work, n)
    return out, info


def qr(dev: mc.Device, a: mc.Buffer, batch: int, m: int, n: int, dtype: Any, complete: bool) -> tuple[mc.Buffer, mc.Buffer]:
    """Q (batch, m, m or min(m, n)) and R (batch, m or min(m, n), n) of `batch` m x n matrices (m, n > 0)."""
    dt = lc.float_type(dtype, complex_ok=True)
    kmin = min(m, n)
    qcols = m if complete else kmin
    threads = lc.group_size(dev, max(m, n))
    work = cache.empty(dev, batch * m * n, dt)
    tau = cache.empty(dev, batch * kmin, dt)
    q = cache.empty(dev, batch * m * qcols, dt)
    r = cache.empty(dev, batch * qcols * n, dt)
    scratch = cache.empty(dev, batch * max(n, qcols), dt)
    by_rows = threads == 1
    source = (_QR.replace("$SCALE_X", lc.scaling("x", "m * n"))
              .replace("$APPLY_R", _apply("A", "n", "j + 1", "n", "la_conj(tj)", by_rows))
              .replace("$APPLY_Q", _apply("Q", "qcols", "0", "qcols", "tj", by_rows)))
    lc.run(dev, source, "qr", dt, threads, batch, a, work, tau, q, r, m, n, qcols, qcols, scratch)
    return q, r
