"""eigh of Hermitian (real symmetric) matrices on GPUs, after linalg_sytrd.py's reduction to a real
tridiagonal matrix T: its eigenvalues and eigenvectors Z, and V = Q Z (the host's part, the order
and the orthogonalisation between, is _linalg_eigh_tridiag.py).

- td_values: a threadgroup of LANES per eigenvalue. T splits where |e_i| <= EPS ||T|| (a change
  within the backward error); the group finds the eigenvalue's block and narrows its interval by
  multisection, the lanes' Sturm counts (LAPACK's stebz) at LANES points at once (5 bits a round
  instead of bisection's 1: each round is a sequential pass over the block), to absolute accuracy
  about EPS ||T||.
- td_vectors, td_orth: inverse iteration, ITS rounds of a launch of each: a thread per vector
  solves (T_b - x I) y = z (partial pivoting as lagtf, tiny pivots raised to EPS ||T_b||, from a
  start vector of its own), then a threadgroup per cluster (LAPACK's stein: eigenvalues closer
  than 1e-3 ||T_b|| to their neighbour) makes the cluster's vectors orthonormal in the values'
  order, so that they stay independent (inverse iteration alone would take every vector of a
  cluster of equal values to the few eigenvectors nearest their shifts) and the cluster's work
  is shared by a group.
- td_back: V = H_0 ... H_{n-2} Z, a threadgroup per strip of CW columns of Z held in registers.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import metalcall as mc

from . import cache, linalg_common as lc, linalg_sytrd as sytrd

MIN_N = 64  # smaller matrices keep the one-threadgroup Jacobi eigh (stacks of them fill the GPU)
CW = 8  # columns of Z per back-transformation group
ITS = 3  # inverse iterations per vector
ORTH_THREADS = 128  # td_orth: a group per cluster
LANES = 32  # td_values: lanes (points of a multisection) per eigenvalue, a threadgroup each


def usable(dev: mc.Device, dtype: Any, n: int) -> bool:
    """Whether eigh of n x n matrices of `dtype` takes this route on `dev`: GPUs, from MIN_N while the
    reduction's threadgroup vectors fit (float32 to 2048, float64 and complex64 to 1024, complex128
    to 512)."""
    dt = np.dtype(dtype)
    if cache.uses_loops(dev) or dt.kind not in "fc" or n < max(2, MIN_N):
        return False
    return sytrd.fits(dev, dt, n)


# Shared by td_values and td_vectors: ||T||_inf, whether T is finite, and the block [s, f) of t.
_BLOCK = """
inline bool td_block(const device $R* d, const device $R* e, uint n, uint t, thread uint& s, thread uint& f,
                     thread $R& tnorm) {
  tnorm = $R(0);
  bool finite = true;
  for (uint i = 0u; i < n; ++i) {
    const $R r = fabs(d[i]) + (i > 0u ? fabs(e[i - 1u]) : $R(0)) + (i + 1u < n ? fabs(e[i]) : $R(0));
    finite = finite && isfinite(r);
    tnorm = fmax(tnorm, r);
  }
  s = 0u;
  f = n;
  for (uint i = 0u; i + 1u < n; ++i) {
    if (fabs(e[i]) <= $EPS * tnorm) {
      if (i + 1u <= t) s = i + 1u;
      else { f = i + 1u; break; }
    }
  }
  return finite;
}
"""

_VALUES = """
kernel void td_values(const device $R* D [[buffer(0)]], const device $R* E [[buffer(1)]],
                      const device $R* SC [[buffer(2)]], device $R* WV [[buffer(3)]], device $R* WOUT [[buffer(4)]],
                      device uint* BLK [[buffer(5)]], constant uint& n [[buffer(6)]],
                      constant uint& total [[buffer(7)]],
                      uint gid [[threadgroup_position_in_grid]], uint lane [[thread_index_in_threadgroup]]) {
  threadgroup uint counts[$NTG];
  if (gid >= total) return;
  const uint g = gid / n, t = gid % n;
  const device $R* d = D + ulong(g) * n;
  const device $R* e = E + ulong(g) * n;
  uint s, f;
  $R tnorm;
  const bool finite = td_block(d, e, n, t, s, f, tnorm);
  if (lane == 0u) {
    BLK[2u * gid] = s;
    BLK[2u * gid + 1u] = f;
  }
  if (!finite) {
    if (lane == 0u) WV[gid] = WOUT[gid] = $R(NAN);
    return;
  }
  $R lo = $R(INFINITY), hi = -$R(INFINITY), e2max = $R(0);
  for (uint i = s; i < f; ++i) {
    const $R el = i > s ? fabs(e[i - 1u]) : $R(0), er = i + 1u < f ? fabs(e[i]) : $R(0);
    lo = fmin(lo, d[i] - el - er);
    hi = fmax(hi, d[i] + el + er);
    e2max = fmax(e2max, er * er);
  }
  const $R bnorm = fmax(fabs(lo), fabs(hi));
  const $R pivmin = $TINY * fmax($R(1), e2max);
  lo -= $R(2) * $EPS * bnorm + $R(2) * pivmin;
  hi += $R(2) * $EPS * bnorm + $R(2) * pivmin;
  const $R atol = $EPS * bnorm;
  const uint l = t - s;
  if (f - s == 1u) lo = hi = d[s];  // a 1 x 1 block: its value exactly
  // Multisection: the lanes count at NTG points of [lo, hi] at once (Sturm: the block's eigenvalues
  // below x), and every lane narrows [lo, hi] to the two points around the l-th the same way.
  for (uint it = 0u; it < 64u; ++it) {
    if (hi - lo <= fmax(atol, fmax($R(2) * $EPS * fmax(fabs(lo), fabs(hi)), pivmin))) break;
    const $R step = (hi - lo) / $R($NTG + 1u);
    const $R x = lo + step * $R(lane + 1u);
    uint count = 0u;
    $R q = d[s] - x;
    if (fabs(q) < pivmin) q = -pivmin;
    count += q < $R(0) ? 1u : 0u;
    for (uint i = s + 1u; i < f; ++i) {
      q = d[i] - x - e[i - 1u] * e[i - 1u] / q;
      if (fabs(q) < pivmin) q = -pivmin;
      count += q < $R(0) ? 1u : 0u;
    }
    counts[lane] = count;
    $SYNC
    $R nlo = lo, nhi = hi;
    for (uint j = 0u; j < $NTG; ++j) {
      const $R xj = lo + step * $R(j + 1u);
      if (counts[j] <= l) nlo = xj;
      else { nhi = xj; break; }
    }
    $SYNC
    if (nlo == lo && nhi == hi) break;  // no representable point between
    lo = nlo;
    hi = nhi;
  }
  if (lane == 0u) {
    const $R x = $R(0.5) * (lo + hi);
    WV[gid] = x;
    WOUT[gid] = x / SC[g];
  }
}
"""

_VECTORS = """
inline $R td_start(uint j, uint i) {  // a start vector's entry in [-1, 1), the same on every device
  uint h = j * 0x9E3779B1u ^ (i + 0x7F4A7C15u) * 0x85EBCA77u;
  h ^= h >> 15; h *= 0x2C1B3C6Du; h ^= h >> 12; h *= 0x297A2D39u; h ^= h >> 15;
  return $R(h >> 8) * $R(1.0 / 8388608.0) - $R(1);
}

kernel void td_vectors(const device $R* D [[buffer(0)]], const device $R* E [[buffer(1)]],
                       const device $R* WV [[buffer(2)]], const device uint* BLK [[buffer(3)]],
                       device $R* Z [[buffer(4)]], device $R* U [[buffer(5)]], constant uint& n [[buffer(6)]],
                       constant uint& total [[buffer(7)]], constant uint& start [[buffer(8)]],
                       uint gid [[thread_position_in_grid]]) {
  if (gid >= total) return;
  const uint g = gid / n, t = gid % n;
  const uint s = BLK[2u * gid], f = BLK[2u * gid + 1u];
  const device $R* d = D + ulong(g) * n;
  const device $R* e = E + ulong(g) * n;
  const device $R* wv = WV + ulong(g) * n;
  device $R* z = Z + ulong(g) * n * n;  // column j: z[i n + j]
  device $R* u0 = U + ulong(g) * 3u * n * n;  // this thread's factor: u0[i n + t], u1, u2 below
  device $R* u1 = u0 + ulong(n) * n;
  device $R* u2 = u1 + ulong(n) * n;
  if (isnan(wv[t]) || f - s == 1u) {  // NaN, or a 1 x 1 block's unit vector
    if (start) for (uint i = 0u; i < n; ++i) z[ulong(i) * n + t] = isnan(wv[t]) ? $R(NAN) : $R(i == t ? 1 : 0);
    return;
  }
  $R bnorm = $R(0);
  for (uint i = s; i < f; ++i)
    bnorm = fmax(bnorm, fabs(d[i]) + (i > s ? fabs(e[i - 1u]) : $R(0)) + (i + 1u < f ? fabs(e[i]) : $R(0)));
  const $R inv = $R(1) / bnorm;  // the block scaled to norm 1: pivots of at least EPS, no overflow
  {
    const uint j = t;
    const $R x = wv[j] * inv;
    if (start) for (uint i = 0u; i < n; ++i) z[ulong(i) * n + j] = i >= s && i < f ? td_start(j, i) : $R(0);
    {
      // (T_b - x I) = P L U with partial pivoting, L^-1 P^T applied to the column on the way
      $R c = d[s] * inv - x, b1 = e[s] * inv;
      for (uint i = s; i + 1u < f; ++i) {
        const $R sub = e[i] * inv, dg = d[i + 1u] * inv - x, sup = i + 2u < f ? e[i + 1u] * inv : $R(0);
        const $R yi = z[ulong(i) * n + j], yn = z[ulong(i + 1u) * n + j];
        if (fabs(c) >= fabs(sub)) {
          const $R cc = fabs(c) < $EPS ? copysign($R($EPS), c) : c;
          const $R m = sub / cc;
          u0[ulong(i) * n + t] = cc; u1[ulong(i) * n + t] = b1; u2[ulong(i) * n + t] = $R(0);
          z[ulong(i + 1u) * n + j] = yn - m * yi;
          c = dg - m * b1;
          b1 = sup;
        } else {
          const $R m = c / sub;
          u0[ulong(i) * n + t] = sub; u1[ulong(i) * n + t] = dg; u2[ulong(i) * n + t] = sup;
          z[ulong(i) * n + j] = yn;
          z[ulong(i + 1u) * n + j] = yi - m * yn;
          c = b1 - m * dg;
          b1 = -m * sup;
        }
      }
      u0[ulong(f - 1u) * n + t] = fabs(c) < $EPS ? copysign($R($EPS), c) : c;
      // U^-1, keeping the largest entry for the scaling below
      $R big = $R(0);
      for (int i = int(f) - 1; i >= int(s); --i) {
        const ulong r = ulong(i) * n;
        $R y = z[r + j];
        if (uint(i) + 1u < f) y -= u1[r + t] * z[r + n + j];
        if (uint(i) + 2u < f) y -= u2[r + t] * z[r + 2u * n + j];
        y /= u0[r + t];
        z[r + j] = y;
        big = fmax(big, fabs(y));
      }
      const $R rb = big > $R(0) ? $R(1) / big : $R(1);  // scaled to a largest entry of 1
      for (uint i = s; i < f; ++i) z[ulong(i) * n + j] *= rb;
    }
    $R ss = $R(0);
    for (uint i = s; i < f; ++i) ss += z[ulong(i) * n + j] * z[ulong(i) * n + j];
    const $R rn = $R(1) / sqrt(ss);
    for (uint i = s; i < f; ++i) z[ulong(i) * n + j] *= rn;
  }
}
"""

# A cluster's vectors (made independently, each from its own start: in a cluster of equal values,
# independent combinations of its eigenvectors) made orthonormal in the values' order by classical
# Gram-Schmidt done twice, a threadgroup per cluster: the dots of a column with the earlier ones a
# thread each (coalesced across the cluster's columns), the update a thread per row.
_ORTH = """
kernel void td_orth(const device $R* D [[buffer(0)]], const device $R* E [[buffer(1)]],
                    const device $R* WV [[buffer(2)]], const device uint* BLK [[buffer(3)]],
                    device $R* Z [[buffer(4)]], constant uint& n [[buffer(5)]], constant uint& total [[buffer(6)]],
                    uint gid [[threadgroup_position_in_grid]], uint tid [[thread_index_in_threadgroup]]) {
  threadgroup $R dots[$NCAP];
  threadgroup $R red[$NTG];
  if (gid >= total) return;
  const uint g = gid / n, t = gid % n;
  const uint s = BLK[2u * gid], f = BLK[2u * gid + 1u];
  const device $R* d = D + ulong(g) * n;
  const device $R* e = E + ulong(g) * n;
  const device $R* wv = WV + ulong(g) * n;
  device $R* z = Z + ulong(g) * n * n;
  if (f - s == 1u || isnan(wv[t])) return;
  $R bnorm = $R(0);
  for (uint i = s; i < f; ++i)
    bnorm = fmax(bnorm, fabs(d[i]) + (i > s ? fabs(e[i - 1u]) : $R(0)) + (i + 1u < f ? fabs(e[i]) : $R(0)));
  const $R ortol = $R(1e-3) * bnorm;  // stein's
  if (t > s && wv[t] - wv[t - 1u] <= ortol) return;  // not the cluster's first
  uint last = t + 1u;
  while (last < f && wv[last] - wv[last - 1u] <= ortol) ++last;
  for (uint j = t + 1u; j < last; ++j) {
    for (uint pass = 0u; pass < 2u; ++pass) {
      for (uint c = t + tid; c < j; c += $NTG) {
        $R dot = $R(0);
        for (uint i = s; i < f; ++i) dot += z[ulong(i) * n + c] * z[ulong(i) * n + j];
        dots[c - t] = dot;
      }
      $SYNC
      $R sq = $R(0);
      for (uint i = s + tid; i < f; i += $NTG) {
        $R y = z[ulong(i) * n + j];
        for (uint c = t; c < j; ++c) y -= dots[c - t] * z[ulong(i) * n + c];
        z[ulong(i) * n + j] = y;
        sq += y * y;
      }
$SUM_SQ
      const $R rn = $R(1) / sqrt(sumsq);
      for (uint i = s + tid; i < f; i += $NTG) z[ulong(i) * n + j] *= rn;
      $SYNC
    }
  }
}
"""

_BACK = """
kernel void td_back(const device $T* VS [[buffer(0)]], const device $T* TAU [[buffer(1)]], device $T* Z [[buffer(2)]],
                    constant uint& n [[buffer(3)]], constant uint& strips [[buffer(4)]],
                    uint grp [[threadgroup_position_in_grid]], uint tid [[thread_index_in_threadgroup]]) {
  threadgroup $T red[2u * $NTG];
  const uint g = grp / strips, c = tid % $CW, rl = tid / $CW;
  const uint col = (grp % strips) * $CW + c;
  const bool live = col < n;
  device $T* z = Z + ulong(g) * n * n;
  const device $T* vs = VS + ulong(g) * n * n;
  $T zr[$NPER];  // rows rl, rl + RL, ... of this thread's column
  for (uint q = 0u; q < $NPER; ++q) {
    const uint i = rl + q * $RL;
    zr[q] = live && i < n ? z[ulong(i) * n + col] : la_make($R(0), $R(0));
  }
  uint buf = 0u;
  for (int k = int(n) - 2; k >= 0; --k) {  // z -= tau_k v_k (v_k^H z), v_k on rows k + 1 .. n - 1
    const $T tk = TAU[g * n + uint(k)];
    if (la_iszero(tk)) continue;  // the same for the whole group
    const device $T* v = vs + ulong(k) * n;
    $T part = la_make($R(0), $R(0));
    for (uint q = 0u; q < $NPER; ++q) {
      const uint i = rl + q * $RL;
      if (i > uint(k) && i < n) part = la_add(part, la_mul(la_conj(v[i]), zr[q]));
    }
    threadgroup $T* rb = red + buf * $NTG;
    rb[tid] = part;
    $SYNC
    for (uint h = $RL / 2u; h > 0u; h >>= 1u) {  // a tree over the row lanes of each column
      if (rl < h) rb[tid] = la_add(rb[tid], rb[tid + h * $CW]);
      $SYNC
    }
    const $T fk = la_mul(tk, rb[c]);
    for (uint q = 0u; q < $NPER; ++q) {
      const uint i = rl + q * $RL;
      if (i > uint(k) && i < n) zr[q] = la_sub(zr[q], la_mul(fk, v[i]));
    }
    buf ^= 1u;  // two buffers: a group's next write cannot meet a slower thread's read of this one
  }
  for (uint q = 0u; q < $NPER; ++q) {
    const uint i = rl + q * $RL;
    if (live && i < n) z[ulong(i) * n + col] = zr[q];
  }
}
"""


def _thread_kernel(dev: mc.Device, template: str, name: str, dt: np.dtype) -> mc.Kernel:
    return cache.kernel(dev, lc.render(_BLOCK + template, dt, 1, ITS=f"{ITS}u"), name, fast_math=False)


tridiagonal = sytrd.tridiagonal


def values(dev: mc.Device, parts: dict[str, mc.Buffer], batch: int, n: int, dtype: Any) -> mc.Buffer:
    """Queues the eigenvalues of the tridiagonal matrices (real `dtype`), in the scaled units
    (parts["WV"], for vectors) and the input's (returned), each block's ascending, the blocks in T's
    order."""
    dt = lc.float_type(dtype)
    total = batch * n
    parts["WV"], parts["BLK"] = cache.empty(dev, total, dt), cache.empty(dev, 2 * total, np.uint32)
    out = cache.empty(dev, total, dt)
    k = cache.kernel(dev, lc.render(_BLOCK + _VALUES, dt, LANES), "td_values", fast_math=False)
    cache.launch(k, total * LANES, parts["D"], parts["E"], parts["SC"], parts["WV"], out, parts["BLK"], n, total,
                 threadgroup=(LANES, 1, 1))
    return out


def vectors(dev: mc.Device, parts: dict[str, mc.Buffer], batch: int, n: int, dtype: Any) -> mc.Buffer:
    """Queues the tridiagonal matrices' eigenvectors Z (batch, n, n; real `dtype`), column t for
    parts["WV"][t]."""
    dt = lc.float_type(dtype)
    total = batch * n
    z = cache.empty(dev, total * n, dt)
    scratch = cache.empty(dev, 3 * total * n, dt)
    k = _thread_kernel(dev, _VECTORS, "td_vectors", dt)
    tg = 64
    text = _ORTH.replace("$SUM_SQ", sytrd.sum_text("sq", "sumsq", "red", "$R", "td_plus"))
    orth, otg = sytrd.group_kernel(dev, "inline $R td_plus($R a, $R b) { return a + b; }\n" + text, "td_orth", dt, n,
                                   ORTH_THREADS)
    for it in range(ITS):  # an iteration for every vector, then each cluster's made orthonormal
        cache.launch(k, -(-total // tg) * tg, parts["D"], parts["E"], parts["WV"], parts["BLK"], z, scratch, n, total,
                     int(it == 0), threadgroup=(tg, 1, 1))
        cache.launch(orth, total * otg, parts["D"], parts["E"], parts["WV"], parts["BLK"], z, n, total,
                     threadgroup=(otg, 1, 1))
    return z


def back(dev: mc.Device, parts: dict[str, mc.Buffer], z: mc.Buffer, batch: int, n: int, dtype: Any) -> mc.Buffer:
    """Queues V = Q Z in place (Q the reflectors' product, `dtype` A's; z of that dtype): A's
    eigenvectors."""
    dt = lc.float_type(dtype, complex_ok=True)

    def extra(tg: int) -> dict[str, str]:
        rl = tg // CW
        return {"CW": f"{CW}u", "RL": f"{rl}u", "NPER": str(-(-sytrd.ncap(n) // rl))}
    k, tg = sytrd.group_kernel(dev, _BACK, "td_back", dt, n, sytrd.THREADS, extra)
    strips = -(-n // CW)
    cache.launch(k, batch * strips * tg, parts["VS"], parts["TAU"], z, n, strips, threadgroup=(tg, 1, 1))
    return z
