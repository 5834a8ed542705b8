"""eigh and svd of real matrices on the CPU backend, LAPACK's classic route: Householder reduction
to a band (tridiagonal for eigh, upper bidiagonal for svd), the implicit QR algorithm on the band
(Wilkinson shifts; Golub and Kahan's step for the bidiagonal), then the back-transformation.

One thread per matrix reduces it and iterates on its band; when vectors are wanted it records the
band's plane rotations (rows p and q, c and s) instead of applying them, and
linalg_backtransform.py then forms the reflectors' product and replays the rotations on column
strips of it, strips spread over the worker pool: cache-resident vectorised loops where Jacobi
methods (linalg_jacobi.py) sweep the whole matrix many times. Eigenvalues come out ascending,
singular values descending (made non-negative by flipping rows of V^H), with each one's rank for
the back-transformation to write its vector at.

Record i of a matrix is (p | q << 16, c, s): rows p and q of the transposed vectors become
(c x_p + s x_q, -s x_p + c x_q); p == q scales row p by c. A matrix whose rotations outnumber the
records allocated reports the count (more than `cap`): the caller takes another route.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import metalcall as mc

from . import cache, linalg_common as lc
from .linalg_jacobi import _RANK

MAX_SWEEPS_PER_N = 40  # QR steps per matrix row before giving up (NaN results; NaN input ends there)

# Shared by both kernels: r = sqrt(x^2 + y^2) without overflow or underflow, and a record.
_HELPERS = """
inline $R la_hypot($R x, $R y) {
  const $R m = fmax(fabs(x), fabs(y));
  if (m == $R(0) || !isfinite(m)) return m;
  const $R a = x / m, b = y / m;
  return m * sqrt(a * a + b * b);
}
// r = sqrt(x^2 + z^2) and the rotation (c, s) = (x, z) / r ((1, 0) where r = 0): one square root and
// one division where the squares can neither underflow nor overflow, la_hypot elsewhere.
inline $R la_givens($R x, $R z, thread $R& c, thread $R& s) {
  $R r = sqrt(x * x + z * z);
  if (!(r > $SAFE && r < $R(1) / $SAFE)) r = la_hypot(x, z);
  c = $R(1);
  s = $R(0);
  if (r > $R(0)) {
    const $R inv = $R(1) / r;
    c = x * inv;
    s = z * inv;
  }
  return r;
}
inline void la_record(device uint* pq, device $R* cs, uint cap, thread uint& count, uint p, uint q, $R c, $R s) {
  if (count < cap) { pq[count] = p | (q << 16); cs[2 * count] = c; cs[2 * count + 1] = s; }
  ++count;
}
// The reflector H = I - tau v v^T of row k's entries k+1..n-1 (x): H x = beta e_1. Row k then
// holds v (v[k + 1] = 1); E[k] = beta (x[0] where H = I, tau 0), TAU[k] = tau.
inline void la_reflect(device $R* A, uint k, uint n, device $R* E, device $R* TAU) {
  device $R* rk = A + k * n;
  const $R alpha = rk[k + 1];
  $R sigma = $R(0);
  for (uint i = k + 2; i < n; ++i) sigma += rk[i] * rk[i];
  TAU[k] = $R(0);
  E[k] = alpha;
  if (sigma == $R(0)) { rk[k + 1] = $R(1); return; }
  const $R norm = sqrt(alpha * alpha + sigma);
  const $R beta = alpha >= $R(0) ? -norm : norm;
  const $R h = $R(1) / (alpha - beta);
  for (uint i = k + 2; i < n; ++i) rk[i] *= h;
  rk[k + 1] = $R(1);
  TAU[k] = (beta - alpha) / beta;
  E[k] = beta;
}
// True where e_(i-1) is negligible beside its two diagonal neighbours: the matrix splits there.
inline bool la_splits(const device $R* D, const device $R* E, uint i) {
  return fabs(E[i - 1]) <= $EPS * (fabs(D[i - 1]) + fabs(D[i])) || fabs(E[i - 1]) <= $TINY;
}
// The eigenvalue of the symmetric 2x2 [[a, b], [b, c]] nearer c (Wilkinson's shift).
inline $R la_wilkinson($R a, $R b, $R c) {
  const $R delta = (a - c) / $R(2), r0 = la_hypot(delta, b);
  const $R den = delta + (delta >= $R(0) ? r0 : -r0);
  return den != $R(0) ? c - (b / den) * b : c;
}
// Of the `known` values W, the one nearest mu (known > 0).
inline $R la_nearest(const device $R* W, uint known, $R mu) {
  $R best = W[0];
  for (uint i = 1; i < known; ++i)
    if (fabs(W[i] - mu) < fabs(best - mu)) best = W[i];
  return best;
}
// The implicit QR algorithm on the tridiagonal (D, E) of size n: deflate |e| <= EPS (|d| + |d'|)
// from the bottom, then one shifted step (a bulge chased down by rotations G^T T G) on the lowest
// unreduced block [l, h]. The shift is Wilkinson's, or, given `known` eigenvalues, the one nearest
// to it (Wilkinson's again after a step that did not deflate). Rotations are recorded where
// cap > 0. False if it did not converge within $MAX_STEPS steps a row.
inline bool la_tridiag_qr(device $R* D, device $R* E, uint n, const device $R* W, uint known,
                          device uint* pq, device $R* cs, uint cap, thread uint& count) {
  uint steps = 0, stuck = 0, last_h = n;
  uint h = n - 1;
  while (h > 0) {
    if (la_splits(D, E, h)) { E[h - 1] = $R(0); --h; continue; }
    uint l = h - 1;
    while (l > 0 && !la_splits(D, E, l)) --l;
    if (l > 0) E[l - 1] = $R(0);
    if (++steps > $MAX_STEPS * n) return false;
    stuck = h == last_h ? stuck + 1 : 0;
    last_h = h;
    $R mu = la_wilkinson(D[h - 1], E[h - 1], D[h]);
    if (known && stuck == 0) mu = la_nearest(W, known, mu);
    $R xx = D[l] - mu, zz = E[l];
    for (uint k = l; k < h; ++k) {
      $R c, s;
      const $R r = la_givens(xx, zz, c, s);
      if (k > l) E[k - 1] = r;
      const $R ak = D[k], ak1 = D[k + 1], bk = E[k];
      D[k] = c * c * ak + $R(2) * c * s * bk + s * s * ak1;
      D[k + 1] = s * s * ak - $R(2) * c * s * bk + c * c * ak1;
      E[k] = c * s * (ak1 - ak) + (c * c - s * s) * bk;
      if (k + 1 < h) { zz = s * E[k + 1]; E[k + 1] = c * E[k + 1]; xx = E[k]; }
      if (cap) la_record(pq, cs, cap, count, k, k + 1, c, s);
    }
  }
  return true;
}
// Golub and Kahan's implicit QR on the upper bidiagonal (D, E) of size n: deflation as
// la_tridiag_qr, |d| <= dtol set to 0 and chased out (row i against rows below it from the left,
// or column h against the columns before it from the right), else one step shifted by the
// eigenvalue of B^T B's trailing 2x2 nearer its last entry, or, given the `known` squares of the
// singular values, the one nearest to that (as la_tridiag_qr). Left rotations are U's records,
// right ones V's, where cap > 0. False if it did not converge.
inline bool la_bidiag_qr(device $R* D, device $R* E, uint n, $R dtol, const device $R* W, uint known,
                         device uint* upq, device $R* ucs, device uint* vpq, device $R* vcs, uint cap,
                         thread uint& ucount, thread uint& vcount) {
  uint steps = 0, stuck = 0, last_h = n;
  uint h = n - 1;
  while (h > 0) {
    if (la_splits(D, E, h)) { E[h - 1] = $R(0); --h; continue; }
    uint l = h - 1;
    while (l > 0 && !la_splits(D, E, l)) --l;
    if (l > 0) E[l - 1] = $R(0);
    if (++steps > $MAX_STEPS * n) return false;
    stuck = h == last_h ? stuck + 1 : 0;
    last_h = h;
    bool chased = false;
    for (uint i = l; i <= h && !chased; ++i) {
      if (!(fabs(D[i]) <= dtol)) continue;
      D[i] = $R(0);
      chased = true;
      if (i < h) {  // row i: rotate it against rows i+1..h (from the left) until e_i is gone
        $R f = E[i];
        E[i] = $R(0);
        for (uint j = i + 1; j <= h; ++j) {
          const $R gg = D[j], r = la_hypot(f, gg);
          const $R c = r > $R(0) ? gg / r : $R(1), s = r > $R(0) ? f / r : $R(0);
          D[j] = r;
          if (j < h) { f = -s * E[j]; E[j] = c * E[j]; }
          if (cap) la_record(upq, ucs, cap, ucount, j, i, c, s);
        }
      } else {  // column h: rotate it against columns h-1..l (from the right)
        $R f = E[h - 1];
        E[h - 1] = $R(0);
        for (uint k = h; k-- > l;) {
          const $R gg = D[k], r = la_hypot(gg, f);
          const $R c = r > $R(0) ? gg / r : $R(1), s = r > $R(0) ? f / r : $R(0);
          D[k] = r;
          if (k > l) { f = -s * E[k - 1]; E[k - 1] = c * E[k - 1]; }
          if (cap) la_record(vpq, vcs, cap, vcount, k, h, c, s);
        }
      }
    }
    if (chased) continue;
    // the shift: the eigenvalue of the trailing 2x2 of B^T B nearer its last entry
    const $R dm = D[h - 1], dn = D[h], em = E[h - 1], el = h - 1 > l ? E[h - 2] : $R(0);
    $R mu = la_wilkinson(dm * dm + el * el, dm * em, dn * dn + em * em);
    if (known && stuck == 0) mu = la_nearest(W, known, mu);
    $R y = D[l] * D[l] - mu, z = D[l] * E[l];
    for (uint k = l; k < h; ++k) {
      $R c, s;
      $R r = la_givens(y, z, c, s);
      s = -s;
      if (k > l) E[k - 1] = r;
      const $R dk = D[k], ek = E[k], dk1 = D[k + 1];
      D[k] = c * dk - s * ek;
      E[k] = s * dk + c * ek;
      const $R bulge = -s * dk1;
      D[k + 1] = c * dk1;
      if (cap) la_record(vpq, vcs, cap, vcount, k, k + 1, c, -s);
      y = D[k];
      z = bulge;
      r = la_givens(y, z, c, s);
      D[k] = r;
      const $R ek2 = E[k], dk12 = D[k + 1];
      E[k] = c * ek2 + s * dk12;
      D[k + 1] = -s * ek2 + c * dk12;
      if (k + 1 < h) { z = s * E[k + 1]; E[k + 1] = c * E[k + 1]; y = E[k]; }
      if (cap) la_record(upq, ucs, cap, ucount, k, k + 1, c, s);
    }
  }
  return true;
}
inline $R la_column_sigma(const device $R* A, uint k, uint n) {
  $R sigma = $R(0);
  for (uint i = k + 1; i < n; ++i) sigma += A[i * n + k] * A[i * n + k];
  return sigma;
}
// The left reflector of column k (alpha = a_kk, sigma = sum of squares below it): v (v[k] = 1,
// v[i] = a_ik h) into row k of QV, D[k] = beta (alpha where H = I), TQ[k] = tau; returns h.
inline $R la_left(const device $R* A, device $R* QV, device $R* D, device $R* TQ, uint k, uint n, $R alpha, $R sigma) {
  device $R* qk = QV + k * n;
  for (uint i = 0; i < n; ++i) qk[i] = $R(0);
  qk[k] = $R(1);
  TQ[k] = $R(0);
  D[k] = alpha;
  if (sigma == $R(0)) return $R(0);
  const $R norm = sqrt(alpha * alpha + sigma);
  const $R beta = alpha >= $R(0) ? -norm : norm;
  const $R h = $R(1) / (alpha - beta);
  for (uint i = k + 1; i < n; ++i) qk[i] = A[i * n + k] * h;
  TQ[k] = (beta - alpha) / beta;
  D[k] = beta;
  return h;
}
"""

# Tridiagonal reduction (sytd2 on the upper triangle, rows contiguous, one pass over it a step):
# reflector k is H = I - tau v v^T with v[k + 1] = 1 over indices k + 1..n-1, kept in row k of the
# work copy; then the implicit symmetric QR algorithm with Wilkinson's shift on (D, E).
_EIGH = """
kernel void eigh_band(const device $R* in [[buffer(0)]], device $R* work [[buffer(1)]], device $R* taus [[buffer(2)]],
                      device $R* diag [[buffer(3)]], device $R* offd [[buffer(4)]], device uint* rec_pq [[buffer(5)]],
                      device $R* rec_cs [[buffer(6)]], device uint* counts [[buffer(7)]], device $R* w_out [[buffer(8)]],
                      device uint* ranks [[buffer(9)]], constant uint& n_arg [[buffer(10)]], constant uint& vectors [[buffer(11)]],
                      constant uint& cap [[buffer(12)]],
                      uint g [[threadgroup_position_in_grid]], uint tid [[thread_index_in_threadgroup]]) {
  threadgroup $R partial_max[$NTG];
  threadgroup $R scale;
  const uint n = n_arg;  // a value: stores through device pointers cannot change it, so loops over it vectorise
  const ulong base = ulong(g) * n * n;
  const device $R* x = in + base;
$SCALE_X
  const $R sc = scale;
  device $R* A = work + base;
  device $R* TAU = taus + ulong(g) * n;
  device $R* D = diag + 4 * ulong(g) * n;
  device $R* E = offd + ulong(g) * n;
  device $R* WV = D + n;  // scratch: w
  device $R* P0 = D + 2 * n;  // scratch: A22 v of this step, then of the next
  device $R* P1 = D + 3 * n;
  // The upper triangle, rows contiguous (A[i][j], j >= i), mirrored from the input's lower one.
  for (uint i = 0; i < n; ++i)
    for (uint j = i; j < n; ++j) A[i * n + j] = x[j * n + i] * sc;
  if (n >= 3) {
    D[0] = A[0];
    la_reflect(A, 0, n, E, TAU);
    const device $R* v0 = A;
    for (uint i = 1; i < n; ++i) P0[i] = $R(0);
    for (uint i = 1; i < n; ++i) {  // P0 = A22 v, by rows of the upper triangle
      const device $R* ri = A + i * n;
      const $R vi = v0[i];
      $R acc = ri[i] * vi;
      for (uint j = i + 1; j < n; ++j) { acc += ri[j] * v0[j]; P0[j] += ri[j] * vi; }
      P0[i] += acc;
    }
  }
  for (uint k = 0; k + 2 < n; ++k) {
    // Step k: A22 -= v w^T + w v^T with w = tau p - (tau^2 p.v / 2) v, p = A22 v (P0), v in row k.
    // Row k + 1 first: it holds the next reflector's vector; then one pass over the other rows
    // updates them and forms the next step's A22 v (P1) from the updated values.
    const device $R* rk = A + k * n;
    const $R tau = TAU[k];
    $R pv = $R(0);
    for (uint i = k + 1; i < n; ++i) pv += P0[i] * rk[i];
    const $R halved = tau * tau * pv / $R(2);
    for (uint i = k + 1; i < n; ++i) WV[i] = tau * P0[i] - halved * rk[i];
    device $R* r1 = A + (k + 1) * n;
    {
      const $R vi = rk[k + 1], wi = WV[k + 1];
      for (uint j = k + 1; j < n; ++j) r1[j] -= vi * WV[j] + wi * rk[j];
    }
    const bool next = k + 3 < n;
    if (next) {
      D[k + 1] = r1[k + 1];
      la_reflect(A, k + 1, n, E, TAU);
    }
    for (uint i = k + 2; i < n; ++i) P1[i] = $R(0);
    for (uint i = k + 2; i < n; ++i) {
      device $R* ri = A + i * n;
      const $R vi = rk[i], wi = WV[i];
      if (!next) {
        for (uint j = i; j < n; ++j) ri[j] -= vi * WV[j] + wi * rk[j];
        continue;
      }
      const $R ui = r1[i];
      const $R aii = ri[i] - (vi * WV[i] + wi * rk[i]);
      ri[i] = aii;
      $R acc = aii * ui;
      $R part[8] = {$R(0), $R(0), $R(0), $R(0), $R(0), $R(0), $R(0), $R(0)};
      uint j = i + 1;
      for (; j + 8 <= n; j += 8)
        for (uint u = 0; u < 8; ++u) {
          const $R a = ri[j + u] - (vi * WV[j + u] + wi * rk[j + u]);
          ri[j + u] = a;
          part[u] += a * r1[j + u];
          P1[j + u] += a * ui;
        }
      for (; j < n; ++j) {
        const $R a = ri[j] - (vi * WV[j] + wi * rk[j]);
        ri[j] = a;
        acc += a * r1[j];
        P1[j] += a * ui;
      }
      for (uint u = 0; u < 8; ++u) acc += part[u];
      P1[i] += acc;
    }
    device $R* t = P0;
    P0 = P1;
    P1 = t;
  }
  if (n >= 2) {
    D[n - 2] = A[(n - 2) * n + n - 2];
    E[n - 2] = A[(n - 2) * n + n - 1];
    TAU[n - 2] = $R(0);
  }
  D[n - 1] = A[(n - 1) * n + n - 1];
  // With vectors, the eigenvalues first (no records; on copies of D and E), so that the recorded
  // run can shift by them: a step shifted by an eigenvalue of the block mostly deflates it at once,
  // about halving the rotations to replay.
  uint count = 0;
  bool converged = true;
  if (vectors) {
    for (uint i = 0; i < n; ++i) { P0[i] = D[i]; P1[i] = E[i]; }
    converged = la_tridiag_qr(P0, P1, n, P0, 0u, rec_pq, rec_cs, 0u, count);
    count = 0;
  }
  if (converged)
    converged = la_tridiag_qr(D, E, n, P0, vectors ? n : 0u, rec_pq + ulong(g) * cap, rec_cs + 2 * ulong(g) * cap,
                              vectors ? cap : 0u, count);
  if (!converged)
    for (uint i = 0; i < n; ++i) D[i] = NAN;
  counts[g] = count;
  for (uint i = 0; i < n; ++i) {
    const $R d = D[i];
    uint rank = 0;
    for (uint j = 0; j < n; ++j)
      if (before(D[j], d, true) || (j < i && !before(d, D[j], true))) ++rank;
    w_out[ulong(g) * n + rank] = d / sc;
    ranks[ulong(g) * n + i] = rank;
  }
}
"""

# Bidiagonal reduction (gebd2, rows contiguous, one pass over the trailing matrix a step): left reflector k (v[k] = 1 over rows k..n-1) into
# row k of `qrefl`, right reflector k (v[k + 1] = 1 over columns k + 1..n-1) into row k of the work
# copy; then Golub and Kahan's implicit QR step with the shift of B^T B's trailing 2x2, zero
# diagonal entries chased out by rotations first. Left rotations are U's records, right ones V's.
_SVD = """
kernel void svd_band(const device $R* in [[buffer(0)]], device $R* work [[buffer(1)]], device $R* qrefl [[buffer(2)]],
                     device $R* taus [[buffer(3)]], device $R* diag [[buffer(4)]], device $R* offd [[buffer(5)]],
                     device uint* rec_pq [[buffer(6)]], device $R* rec_cs [[buffer(7)]], device uint* counts [[buffer(8)]],
                     device $R* s_out [[buffer(9)]], device uint* ranks [[buffer(10)]], constant uint& n_arg [[buffer(11)]],
                     constant uint& vectors [[buffer(12)]], constant uint& cap [[buffer(13)]],
                     uint g [[threadgroup_position_in_grid]], uint tid [[thread_index_in_threadgroup]]) {
  threadgroup $R partial_max[$NTG];
  threadgroup $R scale;
  const uint n = n_arg;  // a value: stores through device pointers cannot change it, so loops over it vectorise
  const ulong base = ulong(g) * n * n;
  const device $R* x = in + base;
$SCALE_X
  const $R sc = scale;
  device $R* A = work + base;
  device $R* QV = qrefl + base;
  device $R* TQ = taus + 2 * ulong(g) * n;
  device $R* TP = TQ + n;
  device $R* D = diag + 3 * ulong(g) * n;
  device $R* E = offd + ulong(g) * n;
  device $R* WV = D + n;  // scratch: w = v^T A of a left reflector
  device $R* Z = D + 2 * n;  // scratch: the next left reflector's sum of x_i A[i][:]
  for (uint e = 0; e < n * n; ++e) A[e] = x[e] * sc;
  la_left(A, QV, D, TQ, 0, n, A[0], la_column_sigma(A, 0, n));
  // WV is read (times tq * v_i, zero without a reflector) by every step: zeroed where no
  // reflector sets it, as its memory holds whatever the buffer held before (NaN * 0 is NaN).
  for (uint c = 0; c < n; ++c) WV[c] = $R(0);
  if (TQ[0] != $R(0)) {  // WV = v^T A[:, 1:]
    for (uint c = 1; c < n; ++c) WV[c] = A[c];
    for (uint i = 1; i < n; ++i) {
      const $R vi = QV[i];
      const device $R* ri = A + i * n;
      for (uint c = 1; c < n; ++c) WV[c] += vi * ri[c];
    }
  }
  for (uint k = 0; k + 1 < n; ++k) {
    // Step k: the left reflector of column k (v in row k of QV, WV = v^T A[k:, k+1:]) is applied,
    // row k first; row k gives the right reflector (u in row k of A); then one pass over the other
    // rows applies both and gathers what the next left reflector needs (column k + 1 and
    // sum x_i A[i][:]), so each step reads and writes the trailing matrix once.
    const $R tq = TQ[k];
    const device $R* qk = QV + k * n;
    device $R* rk = A + k * n;
    if (tq != $R(0))
      for (uint c = k + 1; c < n; ++c) rk[c] -= tq * WV[c];
    const bool right = k + 2 < n;
    if (right) la_reflect(A, k, n, E, TP);
    else { E[k] = rk[k + 1]; TP[k] = $R(0); }
    const $R tp = right ? TP[k] : $R(0);
    for (uint c = k + 2; c < n; ++c) Z[c] = $R(0);
    $R sigma = $R(0);
    for (uint i = k + 1; i < n; ++i) {
      device $R* ri = A + i * n;
      const $R ti = tq * qk[i];
      $R part[8] = {$R(0), $R(0), $R(0), $R(0), $R(0), $R(0), $R(0), $R(0)};
      $R dot = $R(0);
      uint c = k + 1;
      for (; c + 8 <= n; c += 8)
        for (uint u = 0; u < 8; ++u) {
          const $R a = ri[c + u] - ti * WV[c + u];
          ri[c + u] = a;
          part[u] += a * rk[c + u];
        }
      for (; c < n; ++c) {
        const $R a = ri[c] - ti * WV[c];
        ri[c] = a;
        dot += a * rk[c];
      }
      for (uint u = 0; u < 8; ++u) dot += part[u];
      const $R t = tp * dot;  // u[k + 1] = 1
      const $R xi = ri[k + 1] - t;
      ri[k + 1] = xi;
      if (i == k + 1) {
        for (uint j = k + 2; j < n; ++j) ri[j] -= t * rk[j];
        continue;
      }
      sigma += xi * xi;
      for (uint j = k + 2; j < n; ++j) {
        const $R a = ri[j] - t * rk[j];
        ri[j] = a;
        Z[j] += xi * a;
      }
    }
    // the left reflector of column k + 1: v = (1, x_i h), WV = A[k+1][:] + h Z
    const $R h = la_left(A, QV, D, TQ, k + 1, n, A[(k + 1) * n + k + 1], sigma);
    for (uint c = k + 2; c < n; ++c) WV[c] = TQ[k + 1] != $R(0) ? A[(k + 1) * n + c] + h * Z[c] : $R(0);
  }
  // |d| below EPS ||B|| is a zero singular value's: set to 0 and chased out.
  $R bnorm = $R(0);
  for (uint i = 0; i < n; ++i) bnorm = fmax(bnorm, fabs(D[i]));
  for (uint i = 0; i + 1 < n; ++i) bnorm = fmax(bnorm, fabs(E[i]));
  const $R dtol = $EPS * bnorm;
  device uint* upq = rec_pq + 2 * ulong(g) * cap;
  device $R* ucs = rec_cs + 4 * ulong(g) * cap;
  device uint* vpq = upq + cap;
  device $R* vcs = ucs + 2 * cap;
  uint ucount = 0, vcount = 0;
  bool converged = true;
  if (vectors) {  // the singular values first, unrecorded, to shift the recorded run by (as eigh)
    for (uint i = 0; i < n; ++i) { WV[i] = D[i]; Z[i] = E[i]; }
    converged = la_bidiag_qr(WV, Z, n, dtol, WV, 0u, upq, ucs, vpq, vcs, 0u, ucount, vcount);
    for (uint i = 0; i < n; ++i) WV[i] *= WV[i];
    ucount = vcount = 0;
  }
  if (converged)
    converged = la_bidiag_qr(D, E, n, dtol, WV, vectors ? n : 0u, upq, ucs, vpq, vcs, vectors ? cap : 0u, ucount, vcount);
  for (uint i = 0; i < n; ++i) {
    if (!converged) D[i] = NAN;
    else if (D[i] < $R(0)) {
      D[i] = -D[i];
      if (vectors) la_record(vpq, vcs, cap, vcount, i, i, $R(-1), $R(0));
    }
  }
  counts[2 * g] = ucount;
  counts[2 * g + 1] = vcount;
  for (uint i = 0; i < n; ++i) {
    const $R d = D[i];
    uint rank = 0;
    for (uint j = 0; j < n; ++j)
      if (before(D[j], d, false) || (j < i && !before(d, D[j], false))) ++rank;
    s_out[ulong(g) * n + rank] = d / sc;
    ranks[ulong(g) * n + i] = rank;
  }
}
"""


def record_cap(n: int) -> int:
    """Records allocated per matrix (and per side for svd). Random matrices took at most 1.4 n^2
    (n = 8, float64; 1.1 n^2 at n = 256): the QR algorithm takes about two steps per value, each
    as long as the block left."""
    return 2 * n * n + 8 * n + 16


def _safe(dt: np.dtype) -> str:
    """la_givens' bound: above sqrt(tiny) / eps a square keeps every bit (no gradual underflow)."""
    fi = np.finfo(dt)
    return cache.literal(dt, float(np.sqrt(fi.tiny) / fi.eps))


def _source(template: str) -> str:
    return _RANK + _HELPERS + template.replace("$SCALE_X", lc.scaling("x", "n * n"))


def eigh(dev: mc.Device, a: mc.Buffer, batch: int, n: int, dtype: Any, vectors: bool) -> dict[str, Any]:
    """Reduces and iterates `batch` symmetric n x n matrices (lower triangles read): the eigenvalues
    w (batch, n) ascending, and what linalg_backtransform needs for the vectors."""
    dt = lc.float_type(dtype)
    cap = record_cap(n) if vectors else 1
    work = cache.empty(dev, batch * n * n, dt)
    taus = cache.empty(dev, batch * n, dt)
    d = cache.empty(dev, 4 * batch * n, dt)
    e = cache.empty(dev, batch * n, dt)
    pq = cache.empty(dev, batch * cap, np.uint32)
    cs = cache.empty(dev, 2 * batch * cap, dt)
    counts = cache.empty(dev, batch, np.uint32)
    w = cache.empty(dev, batch * n, dt)
    ranks = cache.empty(dev, batch * n, np.uint32)
    lc.run(dev, _source(_EIGH), "eigh_band", dt, 1, batch, a, work, taus, d, e, pq, cs, counts, w, ranks, n,
           int(vectors), cap, MAX_STEPS=MAX_SWEEPS_PER_N, SAFE=_safe(dt))
    return {"w": w, "refl": work, "taus": taus, "pq": pq, "cs": cs, "counts": counts, "ranks": ranks, "cap": cap}


def svd(dev: mc.Device, a: mc.Buffer, batch: int, n: int, dtype: Any, vectors: bool) -> dict[str, Any]:
    """Reduces and iterates `batch` square n x n matrices: the singular values s (batch, n)
    descending, and what linalg_backtransform needs for U and V^H."""
    dt = lc.float_type(dtype)
    cap = record_cap(n) if vectors else 1
    work = cache.empty(dev, batch * n * n, dt)
    qrefl = cache.empty(dev, batch * n * n, dt)
    taus = cache.empty(dev, 2 * batch * n, dt)
    d = cache.empty(dev, 3 * batch * n, dt)
    e = cache.empty(dev, batch * n, dt)
    pq = cache.empty(dev, 2 * batch * cap, np.uint32)
    cs = cache.empty(dev, 4 * batch * cap, dt)
    counts = cache.empty(dev, 2 * batch, np.uint32)
    s = cache.empty(dev, batch * n, dt)
    ranks = cache.empty(dev, batch * n, np.uint32)
    lc.run(dev, _source(_SVD), "svd_band", dt, 1, batch, a, work, qrefl, taus, d, e, pq, cs, counts, s, ranks, n,
           int(vectors), cap, MAX_STEPS=MAX_SWEEPS_PER_N, SAFE=_safe(dt))
    return {"s": s, "qrefl": qrefl, "prefl": work, "taus": taus, "pq": pq, "cs": cs, "counts": counts,
            "ranks": ranks, "cap": cap}
