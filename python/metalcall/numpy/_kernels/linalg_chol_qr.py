"""Cholesky (LAPACK's potrf on the lower triangle) and Householder QR (geqrf + orgqr, LAPACK's
sign convention: R[j, j] = -sign(a) * norm, so results match NumPy's to rounding). One
threadgroup per matrix (linalg_common.py).
"""

from __future__ import annotations

from typing import Any

import metalcall as mc
import numpy as np

from . import cache, linalg_common as lc

# L with A = L L^T from A's lower triangle; info = k + 1 where the k-th pivot is not positive
# (or NaN), as potrf, and the factorisation stops there.
_CHOLESKY = """
kernel void cholesky(const device $T* in [[buffer(0)]], device $T* out [[buffer(1)]], device int* info [[buffer(2)]],
                     constant uint& n [[buffer(3)]],
                     uint g [[threadgroup_position_in_grid]], uint tid [[thread_index_in_threadgroup]]) {
  threadgroup int failed;
  const ulong base = ulong(g) * n * n;
  const device $T* x = in + base;
  device $T* L = out + base;
  for (uint e = tid; e < n * n; e += $NTG) L[e] = e % n <= e / n ? x[e] : $T(0);
  if (tid == 0) { info[g] = 0; failed = 0; }
  $SYNC
  for (uint k = 0; k < n; ++k) {
    if (tid == 0) {
      const $T d = L[k * n + k];
      if (!(d > $T(0))) { info[g] = int(k + 1); failed = 1; }
      else L[k * n + k] = sqrt(d);
    }
    $SYNC
    if (failed) break;
    const $T d = L[k * n + k];
    for (uint i = k + 1 + tid; i < n; i += $NTG) L[i * n + k] /= d;
    $SYNC
    for (uint i = k + 1 + tid; i < n; i += $NTG) {
      const $T l = L[i * n + k];
      for (uint j = k + 1; j <= i; ++j) L[i * n + j] -= l * L[j * n + k];
    }
    $SYNC
  }
}
"""

# Householder QR of an m x n matrix (kmin = min(m, n) reflectors H_j = I - tau_j v_j v_j^T, v_j[j] = 1,
# stored below the diagonal of the work copy), then Q (m x qcols: qcols = m or kmin) accumulated
# backwards from the identity and R (rrows x n, rrows = m or kmin) the work copy's upper triangle.
_QR = """
kernel void qr(const device $T* in [[buffer(0)]], device $T* work [[buffer(1)]], device $T* tau [[buffer(2)]],
               device $T* q [[buffer(3)]], device $T* r [[buffer(4)]], constant uint& m [[buffer(5)]],
               constant uint& n [[buffer(6)]], constant uint& qcols [[buffer(7)]], constant uint& rrows [[buffer(8)]],
               uint g [[threadgroup_position_in_grid]], uint tid [[thread_index_in_threadgroup]]) {
  threadgroup $T partial[$NTG];
  threadgroup $T partial_max[$NTG];
  threadgroup $T scale;
  threadgroup $T hscale;
  const uint kmin = min(m, n);
  const device $T* x = in + ulong(g) * m * n;
$SCALE_X
  const $T sc = scale;
  device $T* A = work + ulong(g) * m * n;
  device $T* TAU = tau + ulong(g) * kmin;
  device $T* Q = q + ulong(g) * m * qcols;
  device $T* R = r + ulong(g) * rrows * n;
  for (uint e = tid; e < m * n; e += $NTG) A[e] = x[e] * sc;
  $SYNC
  for (uint j = 0; j < kmin; ++j) {
    $T s = $T(0);
    for (uint i = j + 1 + tid; i < m; i += $NTG) { const $T v = A[i * n + j]; s += v * v; }
    partial[tid] = s;
    $SYNC
    if (tid == 0) {
      $T sigma = $T(0);
      for (uint t = 0; t < $NTG; ++t) sigma += partial[t];
      const $T alpha = A[j * n + j];
      if (sigma == $T(0)) { TAU[j] = $T(0); hscale = $T(0); }
      else {
        const $T norm = sqrt(alpha * alpha + sigma);
        const $T beta = alpha >= $T(0) ? -norm : norm;
        TAU[j] = (beta - alpha) / beta;
        hscale = $T(1) / (alpha - beta);
        A[j * n + j] = beta;
      }
    }
    $SYNC
    const $T tj = TAU[j];
    if (tj != $T(0)) {
      const $T h = hscale;
      for (uint i = j + 1 + tid; i < m; i += $NTG) A[i * n + j] *= h;
      $SYNC
      for (uint c = j + 1 + tid; c < n; c += $NTG) {
        $T w = A[j * n + c];
        for (uint i = j + 1; i < m; ++i) w += A[i * n + j] * A[i * n + c];
        w *= tj;
        A[j * n + c] -= w;
        for (uint i = j + 1; i < m; ++i) A[i * n + c] -= A[i * n + j] * w;
      }
      $SYNC
    }
  }
  for (uint e = tid; e < m * qcols; e += $NTG) Q[e] = $T(e / qcols == e % qcols ? 1 : 0);
  for (uint e = tid; e < rrows * n; e += $NTG) R[e] = e % n >= e / n ? A[e] / sc : $T(0);
  $SYNC
  for (uint j = kmin; j-- > 0;) {
    const $T tj = TAU[j];
    if (tj != $T(0)) {
      for (uint c = tid; c < qcols; c += $NTG) {
        $T w = Q[j * qcols + c];
        for (uint i = j + 1; i < m; ++i) w += A[i * n + j] * Q[i * qcols + c];
        w *= tj;
        Q[j * qcols + c] -= w;
        for (uint i = j + 1; i < m; ++i) Q[i * qcols + c] -= A[i * n + j] * w;
      }
    }
    $SYNC
  }
}
"""


def cholesky(dev: mc.Device, a: mc.Buffer, batch: int, n: int, dtype: Any) -> tuple[mc.Buffer, mc.Buffer]:
    """The lower Cholesky factors of `batch` n x n matrices (n, batch > 0) and potrf's info."""
    dt = lc.float_type(dtype)
    threads = lc.group_size(dev, n)
    out = cache.empty(dev, batch * n * n, dt)
    info = cache.empty(dev, batch, np.int32)
    lc.run(dev, _CHOLESKY, "cholesky", dt, threads, batch, a, out, info, n)
    return out, info


def qr(dev: mc.Device, a: mc.Buffer, batch: int, m: int, n: int, dtype: Any, complete: bool) -> tuple[mc.Buffer, mc.Buffer]:
    """Q (batch, m, m or min(m, n)) and R (batch, m or min(m, n), n) of `batch` m x n matrices (m, n > 0)."""
    dt = lc.float_type(dtype)
    kmin = min(m, n)
    qcols = m if complete else kmin
    threads = lc.group_size(dev, max(m, n))
    work = cache.empty(dev, batch * m * n, dt)
    tau = cache.empty(dev, batch * kmin, dt)
    q = cache.empty(dev, batch * m * qcols, dt)
    r = cache.empty(dev, batch * qcols * n, dt)
    lc.run(dev, _QR.replace("$SCALE_X", lc.scaling("x", "m * n")), "qr", dt, threads, batch, a, work, tau, q, r, m, n, qcols, qcols)
    return q, r
