"""eigh of real symmetric matrices on GPUs: Householder reduction to tridiagonal form spread over
the whole GPU, eigenvalues by bisection and eigenvectors by inverse iteration, a thread each, and
the reflectors applied to them (the host's part, the order and the orthogonalisation between, is
_linalg_eigh_tridiag.py).

- td_init, td_copy: W = the symmetric matrix of the input's lower triangle, scaled by a power of
  two (found by a threadgroup per matrix, kept to undo it on the eigenvalues).
- td_step, one launch per step k = -1 .. n - 3 (LAPACK's sytd2 with uplo L, H_k = I - tau v v^T):
  every threadgroup of a matrix rebuilds w_k = tau p - (tau^2 / 2)(p . v) v from p = A22 v (the
  previous launch's), then row k + 1 of A after the rank-2 update A22 -= v w^T + w v^T and from it
  the next reflector (the same arithmetic in every group, so every group has the same v); then it
  updates its share of the rows below and forms their entries of the next p = A22 v in the same
  pass. One launch per step and no host wait: the launch boundary is the grid-wide barrier the
  algorithm needs twice a step otherwise. Group 0 writes d, e, tau and v (row k + 1 of VS).
- td_values: a threadgroup of LANES per eigenvalue. T splits where |e_i| <= EPS ||T|| (a change
  within the backward error); the group finds the eigenvalue's block and narrows its interval by
  multisection, the lanes' Sturm counts (LAPACK's stebz) at LANES points at once (5 bits a round
  instead of bisection's 1: each round is a sequential pass over the block), to absolute accuracy
  about EPS ||T||.
- td_vectors: inverse iteration (LAPACK's stein): a thread per cluster of its block's eigenvalues
  closer than 1e-3 ||T_b|| to their neighbour, its vectors made one after the other and each
  orthogonalised against the cluster's earlier ones (modified Gram-Schmidt) in every iteration;
  (T_b - x I) is factored with partial pivoting (lagtf), tiny pivots raised to EPS ||T_b||.
- td_back: V = H_0 ... H_{n-3} Z, a threadgroup per strip of CW columns of Z held in registers.
"""

from __future__ import annotations

import contextlib
from typing import Any

import numpy as np

import metalcall as mc

from . import cache, linalg_common as lc

MIN_N = 64  # smaller matrices keep the one-threadgroup Jacobi eigh (stacks of them fill the GPU)
THREADS = 256  # per step group on GPUs: 8 teams of 32 lanes, a team per row
TAIL_THREADS = 1024  # the tail's one group per matrix
BATCH_STEPS = False  # the step launches in one dev.batch() (benchmarks/bench_eigh.py compares; not nestable)
TAIL_ROWS = None  # at most this trailing matrix for the tail (tests); it is also what threadgroup memory holds
TEAM = 32
CW = 8  # columns of Z per back-transformation group
ITS = 3  # inverse iterations per vector
LANES = 32  # td_values: lanes (points of a multisection) per eigenvalue, a threadgroup each
_STATIC_LIMIT = 48 * 1024 - 64  # fixed-size threadgroup arrays are static shared memory on CUDA (48 KiB)


def ncap(n: int) -> int:
    """The power of two (at least 64) td_step's threadgroup vectors are sized for."""
    c = 64
    while c < n:
        c *= 2
    return c


def _step_bytes(n: int, dt: np.dtype, threads: int) -> int:
    return (3 * ncap(n) + threads) * dt.itemsize


def usable(dev: mc.Device, dtype: Any, n: int) -> bool:
    """Whether eigh of n x n matrices of `dtype` takes this route on `dev`: GPUs, real dtypes, from
    MIN_N while td_step's three vectors of ncap(n) fit the threadgroup memory (float32 to 2048,
    float64 to 1024)."""
    dt = np.dtype(dtype)
    if cache.uses_loops(dev) or dt.kind != "f" or n < max(2, MIN_N):
        return False
    return _step_bytes(n, dt, THREADS) <= min(dev.threadgroup_memory_length, _STATIC_LIMIT)


def _sum(x: str, out: str) -> str:
    """MSL: `out` = the sum of every thread's `x` (a tree over `red`, the same order in every group)."""
    return f"""
  red[tid] = {x};
  $SYNC
  for (uint h = $NTG / 2u; h > 0u; h >>= 1u) {{
    if (tid < h) red[tid] += red[tid + h];
    $SYNC
  }}
  const $R {out} = red[0];
  $SYNC"""


_INIT = """
kernel void td_init(const device $R* in [[buffer(0)]], device $R* SC [[buffer(1)]], constant uint& n [[buffer(2)]],
                    uint g [[threadgroup_position_in_grid]], uint tid [[thread_index_in_threadgroup]]) {
  threadgroup $R partial_max[$NTG];
  threadgroup $R scale;
  const ulong base = ulong(g) * n * n;
  const device $R* x = in + base;
  $R largest = $R(0);
  for (uint e = tid; e < n * n; e += $NTG)
    if (e % n <= e / n) largest = fmax(largest, fabs(x[e]));  // the lower triangle alone is read
  partial_max[tid] = largest;
  $SYNC
  if (tid == 0u) {
    for (uint t = 1u; t < $NTG; ++t) largest = fmax(largest, partial_max[t]);
    const $R exponent = fmin(fmax(-floor(log2(largest)), $R(-$MAXEXP)), $R($MAXEXP));
    scale = largest > $R(0) && isfinite(largest) ? exp2(exponent) : $R(1);
    SC[g] = scale;
  }
}
"""

_COPY = """
// W = the scaled symmetric matrix, a thread per element (all of the GPU: the upper triangle's reads are strided)
kernel void td_copy(const device $R* in [[buffer(0)]], device $R* W [[buffer(1)]], const device $R* SC [[buffer(2)]],
                    constant uint& n [[buffer(3)]], constant ulong& total [[buffer(4)]],
                    uint gid [[thread_position_in_grid]]) {
  if (ulong(gid) >= total) return;
  const ulong nn = ulong(n) * n, g = gid / nn;
  const uint e = uint(gid - g * nn), i = e / n, j = e % n;
  W[gid] = in[g * nn + (j <= i ? e : j * n + i)] * SC[g];
}
"""

_STEP = """
kernel void td_step(device $R* W [[buffer(0)]], device $R* VS [[buffer(1)]], device $R* TAU [[buffer(2)]],
                    device $R* P [[buffer(3)]], device $R* D [[buffer(4)]], device $R* E [[buffer(5)]],
                    constant uint& n [[buffer(6)]], constant int& step [[buffer(7)]], constant uint& gpm [[buffer(8)]],
                    uint grp [[threadgroup_position_in_grid]], uint tid [[thread_index_in_threadgroup]]) {
  threadgroup $R v[$NCAP];
  threadgroup $R w[$NCAP];
  threadgroup $R u[$NCAP];
  threadgroup $R red[$NTG];
  const uint g = grp / gpm, part = grp % gpm;
  const int k = step;
  const uint r1 = uint(k + 1);  // the row (and column) the next reflector comes from
  device $R* A = W + ulong(g) * n * n;
  device $R* PV = P + ulong(g) * 2u * n;  // p of even and odd steps
  if (k >= 0) {  // w_k from p = A22 v_k (the previous launch's) and v_k
    const uint kk = uint(k);
    const device $R* vk = VS + (ulong(g) * n + kk) * n;
    const device $R* pk = PV + (kk & 1u) * n;
    $R acc = $R(0);
    for (uint i = r1 + tid; i < n; i += $NTG) {
      const $R vi = vk[i], pi = pk[i];
      v[i] = vi;
      w[i] = pi;
      acc += vi * pi;
    }
$SUM_PV
    const $R tk = TAU[g * n + kk];
    const $R half = $R(0.5) * tk * tk * pv;
    for (uint i = r1 + tid; i < n; i += $NTG) w[i] = tk * w[i] - half * v[i];
  } else {
    for (uint i = tid; i < n; i += $NTG) { v[i] = $R(0); w[i] = $R(0); }
  }
  $SYNC
  const $R vr = v[r1], wr = w[r1];
  for (uint j = r1 + tid; j < n; j += $NTG) u[j] = A[ulong(r1) * n + j] - vr * w[j] - wr * v[j];
  $SYNC
  const bool lead = part == 0u;
  if (r1 + 2u >= n) {  // the last 2 x 2 block (every thread of the group returns here)
    if (lead && tid == 0u) {
      D[g * n + r1] = u[r1];
      if (r1 + 1u < n) {
        E[g * n + r1] = u[r1 + 1u];
        D[g * n + n - 1u] = A[ulong(n - 1u) * n + n - 1u] - $R(2) * v[n - 1u] * w[n - 1u];
      }
    }
    return;
  }
  $R acc2 = $R(0);
  for (uint j = r1 + 2u + tid; j < n; j += $NTG) acc2 += u[j] * u[j];
$SUM_SS
  const $R alpha = u[r1 + 1u], dval = u[r1];
  $R beta = alpha + ss * $R(0), tn = $R(0), scal = $R(0);  // tau = 0 for a zero column; NaN stays NaN
  if (ss > $R(0)) {  // LAPACK's larfg (the column is scaled: no overflow in the square)
    beta = -copysign(sqrt(alpha * alpha + ss), alpha);
    tn = (beta - alpha) / beta;
    scal = $R(1) / (alpha - beta);
  }
  $SYNC
  for (uint j = r1 + 1u + tid; j < n; j += $NTG) u[j] = j == r1 + 1u ? $R(1) : u[j] * scal;
  $SYNC
  if (lead) {
    device $R* vn = VS + (ulong(g) * n + r1) * n;
    for (uint j = r1 + 1u + tid; j < n; j += $NTG) vn[j] = u[j];
    if (tid == 0u) {
      D[g * n + r1] = dval;
      E[g * n + r1] = beta;
      TAU[g * n + r1] = tn;
    }
  }
  // Rows i > r1, a team of TEAM lanes a row: A_ij -= v_i w_j + w_i v_j (j > r1), p_i = sum_j A_ij u_j.
  const uint team = tid / $TEAM, lane = tid % $TEAM, teams = $NTG / $TEAM;
  const uint rows = n - r1 - 1u, per = gpm * teams, rounds = (rows + per - 1u) / per;
  device $R* pn = PV + (r1 & 1u) * n;
  for (uint q = 0u; q < rounds; ++q) {
    const uint i = r1 + 1u + q * per + part * teams + team;
    $R acc3 = $R(0);
    if (i < n) {
      const $R vi = v[i], wi = w[i];
      device $R* row = A + ulong(i) * n;
      for (uint j = r1 + 1u + lane; j < n; j += $TEAM) {
        const $R a = row[j] - vi * w[j] - wi * v[j];
        row[j] = a;
        acc3 += a * u[j];
      }
    }
    red[tid] = acc3;
    $SYNC
    for (uint h = $TEAM / 2u; h > 0u; h >>= 1u) {  // a tree over the team's lanes
      if (lane < h) red[tid] += red[tid + h];
      $SYNC
    }
    if (lane == 0u && i < n) pn[i] = red[tid];  // (the next round's writes to red[tid] are this thread's)
  }
}
"""

# The last steps in one launch, a threadgroup per matrix: once the trailing matrix (mt x mt, from
# row r0 = first + 1) fits the threadgroup memory, M holds it (rows padded to mt + 1: no bank
# conflicts) and the group runs td_step's arithmetic for k = first .. n - 3 with barriers for the
# launch boundaries. v, w and u as in td_step; w holds p = M v between steps.
_TAIL = """
kernel void td_tail(device $R* W [[buffer(0)]], device $R* VS [[buffer(1)]], device $R* TAU [[buffer(2)]],
                    device $R* P [[buffer(3)]], device $R* D [[buffer(4)]], device $R* E [[buffer(5)]],
                    constant uint& n [[buffer(6)]], constant int& first [[buffer(7)]],
                    threadgroup $R* M [[threadgroup(0)]],
                    uint g [[threadgroup_position_in_grid]], uint tid [[thread_index_in_threadgroup]]) {
  threadgroup $R v[$NCAP];
  threadgroup $R w[$NCAP];
  threadgroup $R u[$NCAP];
  threadgroup $R red[$NTG];
  const uint r0 = uint(first + 1), mt = n - r0, ld = mt + 1u;
  const device $R* A = W + ulong(g) * n * n;
  for (uint i = tid / $TEAM; i < mt; i += $NTG / $TEAM)
    for (uint j = tid % $TEAM; j < mt; j += $TEAM) M[i * ld + j] = A[ulong(r0 + i) * n + r0 + j];
  $R tk = $R(0);
  if (first >= 0) {
    const uint kk = uint(first);
    for (uint i = r0 + tid; i < n; i += $NTG) {
      v[i] = VS[(ulong(g) * n + kk) * n + i];
      w[i] = P[ulong(g) * 2u * n + (kk & 1u) * n + i];
    }
    tk = TAU[g * n + kk];
  } else {
    for (uint i = tid; i < n; i += $NTG) { v[i] = $R(0); w[i] = $R(0); }
  }
  $SYNC
  for (int k = first;; ++k) {
    const uint r1 = uint(k + 1);
    if (k >= 0) {
      $R acc = $R(0);
      for (uint i = r1 + tid; i < n; i += $NTG) acc += v[i] * w[i];
$SUM_PV
      const $R half = $R(0.5) * tk * tk * pv;
      for (uint i = r1 + tid; i < n; i += $NTG) w[i] = tk * w[i] - half * v[i];
      $SYNC
    }
    const $R vr = v[r1], wr = w[r1];
    for (uint j = r1 + tid; j < n; j += $NTG) u[j] = M[(r1 - r0) * ld + j - r0] - vr * w[j] - wr * v[j];
    $SYNC
    if (r1 + 2u >= n) {
      if (tid == 0u) {
        D[g * n + r1] = u[r1];
        E[g * n + r1] = u[r1 + 1u];
        D[g * n + n - 1u] = M[(mt - 1u) * ld + mt - 1u] - $R(2) * v[n - 1u] * w[n - 1u];
      }
      break;
    }
    $R acc2 = $R(0);
    for (uint j = r1 + 2u + tid; j < n; j += $NTG) acc2 += u[j] * u[j];
$SUM_SS
    const $R alpha = u[r1 + 1u], dval = u[r1];
    $R beta = alpha + ss * $R(0), tn = $R(0), scal = $R(0);
    if (ss > $R(0)) {
      beta = -copysign(sqrt(alpha * alpha + ss), alpha);
      tn = (beta - alpha) / beta;
      scal = $R(1) / (alpha - beta);
    }
    $SYNC
    device $R* vn = VS + (ulong(g) * n + r1) * n;
    for (uint j = r1 + 1u + tid; j < n; j += $NTG) {
      const $R x = j == r1 + 1u ? $R(1) : u[j] * scal;
      u[j] = x;
      vn[j] = x;
    }
    if (tid == 0u) {
      D[g * n + r1] = dval;
      E[g * n + r1] = beta;
      TAU[g * n + r1] = tn;
    }
    // M_ij -= v_i w_j + w_i v_j for i, j > r1, a team of TEAM lanes a row
    for (uint i = r1 + 1u + tid / $TEAM; i < n; i += $NTG / $TEAM) {
      const $R vi = v[i], wi = w[i];
      threadgroup $R* row = M + (i - r0) * ld;
      for (uint j = r1 + 1u + tid % $TEAM; j < n; j += $TEAM) row[j - r0] -= vi * w[j] + wi * v[j];
    }
    $SYNC
    // p = M u over rows i > r1: `parts` threads a row, each summing a stretch of the row
    const uint rows = n - r1 - 1u, parts = rows >= $NTG ? 1u : min($NTG / rows, 8u);
    const uint len = (rows + parts - 1u) / parts;
    if (parts == 1u) {
      for (uint l = tid; l < rows; l += $NTG) {
        const threadgroup $R* row = M + (r1 + 1u + l - r0) * ld;
        $R acc3 = $R(0);
        for (uint j = r1 + 1u; j < n; ++j) acc3 += row[j - r0] * u[j];
        w[r1 + 1u + l] = acc3;
      }
    } else if (tid < rows * parts) {
      const uint i = r1 + 1u + tid % rows, c = tid / rows;
      const threadgroup $R* row = M + (i - r0) * ld;
      $R acc3 = $R(0);
      for (uint j = r1 + 1u + c * len; j < min(n, r1 + 1u + (c + 1u) * len); ++j) acc3 += row[j - r0] * u[j];
      red[tid] = acc3;
    }
    $SYNC
    if (parts > 1u && tid < rows) {
      $R pi = $R(0);
      for (uint c = 0u; c < parts; ++c) pi += red[c * rows + tid];
      w[r1 + 1u + tid] = pi;
    }
    for (uint i = r1 + 1u + tid; i < n; i += $NTG) v[i] = u[i];
    tk = tn;
    $SYNC
  }
}
"""

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
                       constant uint& total [[buffer(7)]], uint gid [[thread_position_in_grid]]) {
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
  if (isnan(wv[t])) {
    for (uint i = 0u; i < n; ++i) z[ulong(i) * n + t] = $R(NAN);
    return;
  }
  if (f - s == 1u) {
    for (uint i = 0u; i < n; ++i) z[ulong(i) * n + t] = i == t ? $R(1) : $R(0);
    return;
  }
  $R bnorm = $R(0);
  for (uint i = s; i < f; ++i)
    bnorm = fmax(bnorm, fabs(d[i]) + (i > s ? fabs(e[i - 1u]) : $R(0)) + (i + 1u < f ? fabs(e[i]) : $R(0)));
  const $R ortol = $R(1e-3) * bnorm;
  if (t > s && wv[t] - wv[t - 1u] <= ortol) return;  // a later member of a cluster: its first makes it
  const $R inv = $R(1) / bnorm;  // the block scaled to norm 1: pivots of at least EPS, no overflow
  $R prev = $R(0);
  for (uint j = t; j < f; ++j) {
    if (j > t && !(wv[j] - wv[j - 1u] <= ortol)) break;
    $R x = wv[j] * inv;
    if (j > t && x - prev < $R(10) * $EPS * fabs(x)) x = prev + $R(10) * $EPS * fabs(x);  // stein's spread
    prev = x;
    for (uint i = 0u; i < n; ++i) z[ulong(i) * n + j] = i >= s && i < f ? td_start(j, i) : $R(0);
    for (uint it = 0u; it < $ITS; ++it) {
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
      // scaled to a largest entry of 1, made orthogonal to the cluster's earlier (unit) vectors, scaled again
      const $R rb = big > $R(0) ? $R(1) / big : $R(1);
      for (uint i = s; i < f; ++i) z[ulong(i) * n + j] *= rb;
      if (j > t) {
        for (uint c2 = t; c2 < j; ++c2) {
          $R dot = $R(0);
          for (uint i = s; i < f; ++i) dot += z[ulong(i) * n + c2] * z[ulong(i) * n + j];
          for (uint i = s; i < f; ++i) z[ulong(i) * n + j] -= dot * z[ulong(i) * n + c2];
        }
        $R big2 = $R(0);
        for (uint i = s; i < f; ++i) big2 = fmax(big2, fabs(z[ulong(i) * n + j]));
        const $R rs = big2 > $R(0) ? $R(1) / big2 : $R(1);
        for (uint i = s; i < f; ++i) z[ulong(i) * n + j] *= rs;
      }
    }
    $R ss = $R(0);
    for (uint i = s; i < f; ++i) ss += z[ulong(i) * n + j] * z[ulong(i) * n + j];
    const $R rn = $R(1) / sqrt(ss);
    for (uint i = s; i < f; ++i) z[ulong(i) * n + j] *= rn;
  }
}
"""

_BACK = """
kernel void td_back(const device $R* VS [[buffer(0)]], const device $R* TAU [[buffer(1)]], device $R* Z [[buffer(2)]],
                    constant uint& n [[buffer(3)]], constant uint& strips [[buffer(4)]],
                    uint grp [[threadgroup_position_in_grid]], uint tid [[thread_index_in_threadgroup]]) {
  threadgroup $R red[2u * $NTG];
  const uint g = grp / strips, c = tid % $CW, rl = tid / $CW;
  const uint col = (grp % strips) * $CW + c;
  const bool live = col < n;
  device $R* z = Z + ulong(g) * n * n;
  const device $R* vs = VS + ulong(g) * n * n;
  $R zr[$NPER];  // rows rl, rl + RL, ... of this thread's column
  for (uint q = 0u; q < $NPER; ++q) {
    const uint i = rl + q * $RL;
    zr[q] = live && i < n ? z[ulong(i) * n + col] : $R(0);
  }
  uint buf = 0u;
  for (int k = int(n) - 3; k >= 0; --k) {  // reflector k: v on rows k + 1 .. n - 1
    const $R tk = TAU[g * n + uint(k)];
    if (tk == $R(0)) continue;  // the same for the whole group
    const device $R* v = vs + ulong(k) * n;
    $R part = $R(0);
    for (uint q = 0u; q < $NPER; ++q) {
      const uint i = rl + q * $RL;
      if (i > uint(k) && i < n) part += v[i] * zr[q];
    }
    threadgroup $R* rb = red + buf * $NTG;
    rb[tid] = part;
    $SYNC
    for (uint h = $RL / 2u; h > 0u; h >>= 1u) {  // a tree over the row lanes of each column
      if (rl < h) rb[tid] += rb[tid + h * $CW];
      $SYNC
    }
    const $R fk = tk * rb[c];
    for (uint q = 0u; q < $NPER; ++q) {
      const uint i = rl + q * $RL;
      if (i > uint(k) && i < n) zr[q] -= fk * v[i];
    }
    buf ^= 1u;  // two buffers: a group's next write cannot meet a slower thread's read of this one
  }
  for (uint q = 0u; q < $NPER; ++q) {
    const uint i = rl + q * $RL;
    if (live && i < n) z[ulong(i) * n + col] = zr[q];
  }
}
"""


def _tail_bytes(mt: int, dt: np.dtype) -> int:
    return -(-mt * (mt + 1) * dt.itemsize // 16) * 16


def _tail_rows(dev: mc.Device, dt: np.dtype, n: int, threads: int) -> int:
    """The largest trailing matrix td_tail's dynamic threadgroup memory holds next to its arrays."""
    free = int(dev.threadgroup_memory_length) - (3 * ncap(n) + threads) * dt.itemsize - 256
    mt = int(((1 + 4 * max(free, 0) / dt.itemsize) ** 0.5 - 1) / 2)
    while mt > 0 and _tail_bytes(mt, dt) > free:
        mt -= 1
    return mt


def _group_kernel(dev: mc.Device, template: str, name: str, dt: np.dtype, n: int,
                  threads: int | None = None) -> tuple[mc.Kernel, int]:
    """(kernel, threads a group): `threads` (THREADS if None) on GPUs, 32 on the CPU backend running
    these kernels (the tests), whose barriers switch fibers."""
    def source(tg: int, _w: int) -> str:
        rl = tg // CW
        text = template.replace("$SUM_PV", _sum("acc", "pv")).replace("$SUM_SS", _sum("acc2", "ss"))
        return lc.render(text, dt, tg, NCAP=f"{ncap(n)}u", TEAM=f"{TEAM}u", CW=f"{CW}u", RL=f"{rl}u",
                         NPER=str(-(-ncap(n) // rl)))
    return cache.sized_kernel(dev, source, name, 32 if dev.backend == "cpu" else threads or THREADS, fast_math=False)


def _thread_kernel(dev: mc.Device, template: str, name: str, dt: np.dtype) -> mc.Kernel:
    return cache.kernel(dev, lc.render(_BLOCK + template, dt, 1, ITS=f"{ITS}u"), name, fast_math=False)


def tridiagonal(dev: mc.Device, a: mc.Buffer, batch: int, n: int, dtype: Any) -> dict[str, mc.Buffer]:
    """Queues the reduction of the (batch, n, n) stack `a` (its lower triangles) to tridiagonal form:
    d, e (n each, e's last unused), the reflectors (VS, TAU) and the power-of-two scales."""
    dt = lc.float_type(dtype)
    parts = {name: cache.empty(dev, batch * size, dt) for name, size in
             (("W", n * n), ("VS", n * n), ("TAU", n), ("P", 2 * n), ("D", n), ("E", n), ("SC", 1))}
    init, itg = _group_kernel(dev, _INIT, "td_init", dt, n)
    cache.launch(init, batch * itg, a, parts["SC"], n, threadgroup=(itg, 1, 1))
    copy = _thread_kernel(dev, _COPY, "td_copy", dt)
    total = batch * n * n
    cache.launch(copy, -(-total // 256) * 256, a, parts["W"], parts["SC"], n, total, threadgroup=(256, 1, 1))
    step, tg = _group_kernel(dev, _STEP, "td_step", dt, n)
    teams = tg // TEAM
    tail, ttg = _group_kernel(dev, _TAIL, "td_tail", dt, n, TAIL_THREADS)
    mt = min(n, _tail_rows(dev, dt, n, ttg), n if TAIL_ROWS is None else TAIL_ROWS)  # n: from step -1
    first = n - 1 - mt if mt >= 3 else n - 2  # the tail's first step (n - 2: no tail)
    with dev.batch() if BATCH_STEPS else contextlib.nullcontext():
        for k in range(-1, first):
            gpm = max(1, -(-(n - k - 2) // teams))
            cache.launch(step, batch * gpm * tg, parts["W"], parts["VS"], parts["TAU"], parts["P"], parts["D"],
                         parts["E"], n, k, gpm, threadgroup=(tg, 1, 1))
    if first < n - 2:
        cache.launch(tail, batch * ttg, parts["W"], parts["VS"], parts["TAU"], parts["P"], parts["D"], parts["E"],
                     n, first, threadgroup=(ttg, 1, 1), threadgroup_memory=_tail_bytes(mt, dt))
    return parts


def values(dev: mc.Device, parts: dict[str, mc.Buffer], batch: int, n: int, dtype: Any) -> mc.Buffer:
    """Queues the eigenvalues of the tridiagonal matrices, in the scaled units (parts["WV"], for
    vectors) and the input's (returned), each block's ascending, the blocks in T's order."""
    dt = lc.float_type(dtype)
    total = batch * n
    parts["WV"], parts["BLK"] = cache.empty(dev, total, dt), cache.empty(dev, 2 * total, np.uint32)
    out = cache.empty(dev, total, dt)
    k = cache.kernel(dev, lc.render(_BLOCK + _VALUES, dt, LANES), "td_values", fast_math=False)
    cache.launch(k, total * LANES, parts["D"], parts["E"], parts["SC"], parts["WV"], out, parts["BLK"], n, total,
                 threadgroup=(LANES, 1, 1))
    return out


def vectors(dev: mc.Device, parts: dict[str, mc.Buffer], batch: int, n: int, dtype: Any) -> mc.Buffer:
    """Queues the tridiagonal matrices' eigenvectors Z (batch, n, n), column t for parts["WV"][t]."""
    dt = lc.float_type(dtype)
    total = batch * n
    z = cache.empty(dev, total * n, dt)
    scratch = cache.empty(dev, 3 * total * n, dt)
    k = _thread_kernel(dev, _VECTORS, "td_vectors", dt)
    tg = 64
    cache.launch(k, -(-total // tg) * tg, parts["D"], parts["E"], parts["WV"], parts["BLK"], z, scratch, n, total,
                 threadgroup=(tg, 1, 1))
    return z


def back(dev: mc.Device, parts: dict[str, mc.Buffer], z: mc.Buffer, batch: int, n: int, dtype: Any) -> mc.Buffer:
    """Queues V = Q Z in place (Q the reflectors' product): A's eigenvectors."""
    dt = lc.float_type(dtype)
    k, tg = _group_kernel(dev, _BACK, "td_back", dt, n)
    strips = -(-n // CW)
    cache.launch(k, batch * strips * tg, parts["VS"], parts["TAU"], z, n, strips, threadgroup=(tg, 1, 1))
    return z
