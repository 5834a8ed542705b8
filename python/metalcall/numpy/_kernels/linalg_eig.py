"""Eigenvalues and eigenvectors of general (non-Hermitian) matrices, LAPACK geev's way in complex
arithmetic: scaling to a unit-sized largest entry, balancing (gebal's diagonal scaling by powers of
two, no permutation), Householder reduction to Hessenberg form (gehrd), the shifted QR algorithm
with Wilkinson shifts and exceptional shifts every 10 iterations on a stalled block (lahqr's single
shift with Givens rotations) to the Schur form T = Z^H A Z, then each eigenvector by back
substitution in T (trevc, with its perturbed zero pivots and rescaling against overflow), taken
back through Z and the balancing, of unit 2-norm with its largest entry real (geev's convention).

Real matrices are computed as complex ones (the caller converts them): eigenvalues of real
matrices are then conjugate pairs to rounding, not exactly. One thread owns one matrix of the
stack (both on the CPU backend and on GPUs: the QR algorithm's sweeps are sequential chains of
rotations). `info` per matrix: 0, -1 where the matrix holds NaN or inf (NumPy refuses those), 1
where the QR algorithm did not converge in 30 n iterations.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import metalcall as mc

from . import cache, linalg_common as lc

_EIG = """
inline $T la_sqrt($T z) {  // the principal square root (z is of order 1 here: the matrix was scaled)
  const $R a = la_abs(z);
  if (a == $R(0)) return la_make($R(0), $R(0));
  const $R t = sqrt((fabs(la_re(z)) + a) / $R(2));
  if (la_re(z) >= $R(0)) return la_make(t, la_im(z) / ($R(2) * t));
  return la_make(fabs(la_im(z)) / ($R(2) * t), copysign(t, la_im(z)));
}

// (c, s, r) with [c s; -conj(s) c] [f; g] = [r; 0], c real (LAPACK's lartg).
inline void la_givens($T f, $T g, thread $R& c, thread $T& s, thread $T& r) {
  if (la_iszero(g)) { c = $R(1); s = la_make($R(0), $R(0)); r = f; return; }
  const $R ga = la_abs(g);
  if (la_iszero(f)) { c = $R(0); s = la_divr(la_conj(g), ga); r = la_make(ga, $R(0)); return; }
  const $R fa = la_abs(f), m = fmax(fa, ga);
  const $R nrm = m * sqrt((fa / m) * (fa / m) + (ga / m) * (ga / m));
  const $T ph = la_divr(f, fa);
  c = fa / nrm;
  s = la_scale(la_mul(ph, la_conj(g)), $R(1) / nrm);
  r = la_scale(ph, nrm);
}

// The 2-norm of the m entries x[0], x[stride], ... without overflow or underflow.
inline $R la_norm(const device $T* x, uint m, uint stride) {
  $R big = $R(0);
  for (uint i = 0; i < m; ++i) big = fmax(big, la_abs1(x[i * stride]));
  if (big == $R(0)) return big;
  $R sum = $R(0);
  for (uint i = 0; i < m; ++i) sum += la_abs2(la_divr(x[i * stride], big));
  return big * sqrt(sum);
}

kernel void eig(const device $T* in [[buffer(0)]], device $T* hess [[buffer(1)]], device $T* schur [[buffer(2)]],
                device $T* values [[buffer(3)]], device $T* vecs [[buffer(4)]], device $T* scratch [[buffer(5)]],
                device $R* balance [[buffer(6)]], device int* info [[buffer(7)]], constant uint& n [[buffer(8)]],
                constant uint& batch [[buffer(9)]], constant uint& vectors [[buffer(10)]],
                uint g [[thread_position_in_grid]]) {
  if (g >= batch) return;
  const ulong base = ulong(g) * n * n;
  const device $T* A = in + base;
  device $T* H = hess + base;
  device $T* Z = schur + base;
  device $T* w = values + ulong(g) * n;
  device $T* V = vecs + base;
  device $T* u = scratch + ulong(g) * n;
  device $R* D = balance + ulong(g) * n;
  const bool want = vectors != 0;
  info[g] = 0;

  // Scaling: the largest |re| + |im| into [1, 2) by a power of two (exact; undone on the eigenvalues).
  $R largest = $R(0);
  for (uint e = 0; e < n * n; ++e) {
    const $R v = la_abs1(A[e]);
    if (!isfinite(v)) { info[g] = -1; return; }
    largest = fmax(largest, v);
  }
  const $R scale = largest > $R(0) ? exp2(fmin(fmax(-floor(log2(largest)), $R(-$MAXEXP)), $R($MAXEXP))) : $R(1);
  for (uint e = 0; e < n * n; ++e) H[e] = la_scale(A[e], scale);

  // Balancing: D^-1 H D with D[i] powers of two making row and column i's off-diagonal 1-norms close.
  for (uint i = 0; i < n; ++i) D[i] = $R(1);
  bool moved = true;
  for (uint sweep = 0; moved && sweep < 64; ++sweep) {
    moved = false;
    for (uint i = 0; i < n; ++i) {
      $R c = $R(0), r = $R(0);
      for (uint j = 0; j < n; ++j)
        if (j != i) { c += la_abs1(H[j * n + i]); r += la_abs1(H[i * n + j]); }
      if (c == $R(0) || r == $R(0)) continue;
      const $R s = c + r;
      $R f = $R(1);
      while (c < r / $R(2) && f < $R(1e15)) { f *= $R(2); c *= $R(2); r /= $R(2); }
      while (c > r * $R(2) && f > $R(1e-15)) { f /= $R(2); c /= $R(2); r *= $R(2); }
      if (c + r < $R(0.95) * s) {
        moved = true;
        D[i] *= f;
        for (uint j = 0; j < n; ++j) H[i * n + j] = la_divr(H[i * n + j], f);
        for (uint j = 0; j < n; ++j) H[j * n + i] = la_scale(H[j * n + i], f);
      }
    }
  }

  // Hessenberg reduction: H = P H P with P = I - tau u u^H zeroing column k below row k + 1.
  if (want)
    for (uint e = 0; e < n * n; ++e) Z[e] = la_make($R(e / n == e % n ? 1 : 0), $R(0));
  for (uint k = 0; k + 2 < n; ++k) {
    const uint m = n - k - 1;
    const $R xnorm = la_norm(H + (k + 1) * n + k, m, n);
    if (xnorm == $R(0)) continue;
    const $T x0 = H[(k + 1) * n + k];
    const $R ax0 = la_abs(x0);
    const $T ph = ax0 == $R(0) ? la_make($R(1), $R(0)) : la_divr(x0, ax0);
    u[0] = la_scale(ph, ax0 + xnorm);
    for (uint i = 1; i < m; ++i) u[i] = H[(k + 1 + i) * n + k];
    const $R tau = ($R(1) / xnorm) / (xnorm + ax0);
    for (uint j = k + 1; j < n; ++j) {  // from the left: rows k+1.., columns k+1.. (column k is set below)
      $T s = la_make($R(0), $R(0));
      for (uint i = 0; i < m; ++i) s = la_add(s, la_mul(la_conj(u[i]), H[(k + 1 + i) * n + j]));
      s = la_scale(s, tau);
      for (uint i = 0; i < m; ++i) H[(k + 1 + i) * n + j] = la_sub(H[(k + 1 + i) * n + j], la_mul(u[i], s));
    }
    H[(k + 1) * n + k] = la_scale(ph, -xnorm);
    for (uint i = 1; i < m; ++i) H[(k + 1 + i) * n + k] = la_make($R(0), $R(0));
    for (uint pass = 0; pass < (want ? 2u : 1u); ++pass) {  // from the right: H, then Z
      device $T* M = pass == 0 ? H : Z;
      for (uint r = 0; r < n; ++r) {
        $T s = la_make($R(0), $R(0));
        for (uint i = 0; i < m; ++i) s = la_add(s, la_mul(M[r * n + k + 1 + i], u[i]));
        s = la_scale(s, tau);
        for (uint i = 0; i < m; ++i) M[r * n + k + 1 + i] = la_sub(M[r * n + k + 1 + i], la_mul(s, la_conj(u[i])));
      }
    }
  }

  // The shifted QR algorithm on the active block [l, hi] (the whole Schur form when vectors are wanted).
  const $R smlnum = $TINY * ($R(n) / $EPS);
  int hi = int(n) - 1;
  uint its = 0, total = 0;
  while (hi > 0) {
    int l = hi;
    for (; l > 0; --l) {  // the lowest negligible subdiagonal entry
      const $R sub = la_abs1(H[l * n + l - 1]);
      if (sub <= smlnum) break;
      $R tst = la_abs1(H[(l - 1) * n + l - 1]) + la_abs1(H[l * n + l]);
      if (tst == $R(0)) {
        if (l >= 2) tst += fabs(la_re(H[(l - 1) * n + l - 2]));
        if (l + 1 <= hi) tst += fabs(la_re(H[(l + 1) * n + l]));
      }
      if (sub <= $EPS * tst) break;
    }
    if (l > 0) H[l * n + l - 1] = la_make($R(0), $R(0));
    if (l == hi) { --hi; its = 0; continue; }
    if (++total > 30 * max(n, 10u)) { info[g] = 1; break; }
    ++its;
    $T mu;
    if (its % 10 == 0) {  // exceptional shift: out of a cycle
      mu = la_add(H[hi * n + hi], la_make($R(0.75) * fabs(la_re(H[hi * n + hi - 1])), $R(0)));
    } else {  // Wilkinson: the eigenvalue of the trailing 2x2 closer to its last diagonal entry
      const $T a = H[(hi - 1) * n + hi - 1], b = H[(hi - 1) * n + hi], c = H[hi * n + hi - 1], d = H[hi * n + hi];
      const $T half = la_scale(la_sub(a, d), $R(0.5)), bc = la_mul(b, c);
      const $T disc = la_sqrt(la_add(la_mul(half, half), bc));
      const $T p = la_add(half, disc), q = la_sub(half, disc);
      const $T big = la_abs1(p) >= la_abs1(q) ? p : q;
      mu = la_iszero(big) ? d : la_sub(d, la_div(bc, big));
    }
    const uint jend = want ? n - 1 : uint(hi), istart = want ? 0u : uint(l);
    $T x = la_sub(H[l * n + l], mu), y = H[(l + 1) * n + l];
    for (uint k = uint(l); k < uint(hi); ++k) {
      if (k > uint(l)) { x = H[k * n + k - 1]; y = H[(k + 1) * n + k - 1]; }
      $R c; $T s, r;
      la_givens(x, y, c, s, r);
      if (k > uint(l)) { H[k * n + k - 1] = r; H[(k + 1) * n + k - 1] = la_make($R(0), $R(0)); }
      for (uint j = k; j <= jend; ++j) {
        const $T t1 = H[k * n + j], t2 = H[(k + 1) * n + j];
        H[k * n + j] = la_add(la_scale(t1, c), la_mul(s, t2));
        H[(k + 1) * n + j] = la_sub(la_scale(t2, c), la_mul(la_conj(s), t1));
      }
      const uint iend = min(k + 2, uint(hi));
      for (uint pass = 0; pass < (want ? 2u : 1u); ++pass) {
        device $T* M = pass == 0 ? H : Z;
        const uint i0 = pass == 0 ? istart : 0u, i1 = pass == 0 ? iend : n - 1;
        for (uint i = i0; i <= i1; ++i) {
          const $T t1 = M[i * n + k], t2 = M[i * n + k + 1];
          M[i * n + k] = la_add(la_scale(t1, c), la_mul(la_conj(s), t2));
          M[i * n + k + 1] = la_sub(la_scale(t2, c), la_mul(s, t1));
        }
      }
    }
  }
  if (info[g] != 0) return;
  for (uint i = 0; i < n; ++i) w[i] = la_divr(H[i * n + i], scale);
  if (!want) return;

  // Eigenvectors: (T - T[k,k] I) y = 0 with y[k] = 1 by back substitution, then Z y, then D (Z y).
  const $R bignum = $R(1) / smlnum;
  for (uint k = n; k-- > 0;) {
    const $T lam = H[k * n + k];
    const $R smin = fmax($EPS * la_abs1(lam), smlnum);
    u[k] = la_make($R(1), $R(0));
    for (uint i = 0; i < k; ++i) u[i] = la_sub(la_make($R(0), $R(0)), H[i * n + k]);
    for (uint j = k; j-- > 0;) {
      $T d = la_sub(H[j * n + j], lam);
      if (la_abs1(d) < smin) d = la_make(smin, $R(0));  // a (near) repeated eigenvalue: trevc's perturbation
      // The solution is rescaled as a whole (it is normalised in the end) where u[j] / d could overflow
      // and where u[j] grew large enough that the updates below could.
      if (la_abs1(d) < $R(1) && la_abs1(u[j]) > bignum * la_abs1(d) / $R(4)) {
        const $R f = $R(1) / la_abs1(u[j]);
        for (uint i = 0; i <= k; ++i) u[i] = la_scale(u[i], f);
      }
      u[j] = la_div(u[j], d);
      if (la_abs1(u[j]) > sqrt(bignum)) {
        const $R f = $R(1) / la_abs1(u[j]);
        for (uint i = 0; i <= k; ++i) u[i] = la_scale(u[i], f);
      }
      for (uint i = 0; i < j; ++i) u[i] = la_sub(u[i], la_mul(H[i * n + j], u[j]));
    }
    for (uint r = 0; r < n; ++r) {
      $T s = la_make($R(0), $R(0));
      for (uint j = 0; j <= k; ++j) s = la_add(s, la_mul(Z[r * n + j], u[j]));
      V[r * n + k] = la_scale(s, D[r]);
    }
    const $R nrm = la_norm(V + k, n, n);
    uint top = 0;
    $R topsize = $R(-1);
    for (uint r = 0; r < n; ++r) {
      V[r * n + k] = la_divr(V[r * n + k], nrm);
      const $R sz = la_abs2(V[r * n + k]);
      if (sz > topsize) { topsize = sz; top = r; }
    }
    const $R ta = la_abs(V[top * n + k]);
    const $T rot = ta > $R(0) ? la_divr(la_conj(V[top * n + k]), ta) : la_make($R(1), $R(0));
    for (uint r = 0; r < n; ++r) V[r * n + k] = la_mul(V[r * n + k], rot);
    V[top * n + k] = la_make(la_re(V[top * n + k]), $R(0));
  }
}
"""


def eig(dev: mc.Device, a: mc.Buffer, batch: int, n: int, dtype: Any, vectors: bool
        ) -> tuple[mc.Buffer, mc.Buffer | None, mc.Buffer]:
    """(values (batch, n), vectors (batch, n, n) or None, info (batch,) int32) of `batch`
    C-contiguous complex n x n matrices (n > 0, batch > 0)."""
    dt = lc.float_type(dtype, complex_ok=True)
    if dt.kind != "c":
        raise mc.ArgumentError(f"linalg_eig.eig computes in complex64 or complex128, not {dt}")
    rdt = lc.real_type(dt)
    hess = cache.empty(dev, batch * n * n, dt)
    schur = cache.empty(dev, batch * n * n if vectors else 1, dt)
    values = cache.empty(dev, batch * n, dt)
    vecs = cache.empty(dev, batch * n * n if vectors else 1, dt)
    scratch = cache.empty(dev, batch * n, dt)
    balance = cache.empty(dev, batch * n, rdt)
    info = cache.empty(dev, batch, np.int32)
    kern = cache.kernel(dev, lc.render(_EIG, dt, 1), "eig", fast_math=False)
    cache.launch(kern, batch, a, hess, schur, values, vecs, scratch, balance, info, n, batch, int(vectors))
    return values, (vecs if vectors else None), info
