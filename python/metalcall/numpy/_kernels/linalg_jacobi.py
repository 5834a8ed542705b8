"""Jacobi methods: the symmetric eigenproblem (two-sided, cyclic, eigh) and the SVD of a square
matrix (one-sided, Hestenes). The pairs of a sweep go in round-robin order, so the rotations of
one step touch disjoint rows and columns and run in parallel across the threadgroup
(linalg_common.py). A sweep that rotates nothing ends the iteration; results are sorted
(eigenvalues ascending, singular values descending) by each element's rank.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import metalcall as mc

from . import cache, linalg_common as lc

MAX_SWEEPS = 60

# The application of one step's rotations in _EIGH on the CPU (one thread per matrix): pair by
# pair, rotate its two rows, then every pair's columns within them, contiguously.
_EIGH_BY_PAIRS = """      // G^H A G, row by row: the pair owning rows p and q rotates them (G^H A), then applies every
      // pair's column rotation within those two rows ((G^H A) G), so each thread reads and writes
      // only its own rows, contiguously.
      for (uint k = tid; k < pairs; k += $NTG) {
        const $R c = CS[2 * k], s = CS[2 * k + 1];
        const $T ph = PH[k];
        const uint p = PQ[2 * k], q = PQ[2 * k + 1];
        if (s != $R(0))
          for (uint j = 0u; j < n; j += 1u) {
            const $T ap = A[p * n + j], aq = la_mul(ph, A[q * n + j]);
            A[p * n + j] = rot_first(ap, aq, c, s);
            A[q * n + j] = rot_second(ap, aq, c, s);
          }
        for (uint side = 0; side < 2; ++side) {
          const uint r = side == 0 ? p : q;
          if (r >= n) continue;
          device $T* row = A + r * n;
          for (uint l = 0u; l < pairs; l += 1u) {
            const $R cl = CS[2 * l], sl = CS[2 * l + 1];
            if (sl == $R(0)) continue;
            const uint pl = PQ[2 * l], ql = PQ[2 * l + 1];
            const $T a = row[pl], b = la_mul(la_conj(PH[l]), row[ql]);
            row[pl] = rot_first(a, b, cl, sl);
            row[ql] = rot_second(a, b, cl, sl);
          }
        }
        if (s != $R(0)) {
          A[p * n + q] = zero;
          A[q * n + p] = zero;
          A[p * n + p] = la_make(la_re(A[p * n + p]), $R(0));
          A[q * n + q] = la_make(la_re(A[q * n + q]), $R(0));
          if (vectors) {
            const $T phc = la_conj(ph);
            for (uint i = 0u; i < n; i += 1u) {
              const $T vp = V[p * n + i], vq = la_mul(phc, V[q * n + i]);
              V[p * n + i] = rot_first(vp, vq, c, s);
              V[q * n + i] = rot_second(vp, vq, c, s);
            }
          }
        }
      }
"""

# The same on GPUs, element by element: every pair's row rotation (and V's), a barrier, then every
# pair's column rotation within each row, the thread that makes a_pq also zeroing it. No thread
# reads what another writes between barriers, and nothing relies on the lanes of a SIMD-group
# running in step (CUDA does not guarantee that after a loop whose trip count differs by lane).
_EIGH_BY_ELEMENTS = """
      for (uint e = tid; e < pairs * n; e += $NTG) {
        const uint k = e / n, j = e % n;
        const $R c = CS[2 * k], s = CS[2 * k + 1];
        if (s == $R(0)) continue;
        const $T ph = PH[k];
        const uint p = PQ[2 * k], q = PQ[2 * k + 1];
        const $T ap = A[p * n + j], aq = la_mul(ph, A[q * n + j]);
        A[p * n + j] = rot_first(ap, aq, c, s);
        A[q * n + j] = rot_second(ap, aq, c, s);
        if (vectors) {
          const $T vp = V[p * n + j], vq = la_mul(la_conj(ph), V[q * n + j]);
          V[p * n + j] = rot_first(vp, vq, c, s);
          V[q * n + j] = rot_second(vp, vq, c, s);
        }
      }
      $SYNC
      for (uint e = tid; e < n * pairs; e += $NTG) {
        const uint r = e / pairs, l = e % pairs;
        const $R cl = CS[2 * l], sl = CS[2 * l + 1];
        if (sl == $R(0)) continue;
        const uint pl = PQ[2 * l], ql = PQ[2 * l + 1];
        device $T* row = A + r * n;
        const $T a = row[pl], b = la_mul(la_conj(PH[l]), row[ql]);
        row[pl] = rot_first(a, b, cl, sl);
        row[ql] = rot_second(a, b, cl, sl);
        if (r == pl) { row[ql] = zero; row[pl] = la_make(la_re(row[pl]), $R(0)); }
        if (r == ql) { row[pl] = zero; row[ql] = la_make(la_re(row[ql]), $R(0)); }
      }"""

# NaN sorts last (eigh) or first (svd): every value gets a distinct rank, so the outputs are a permutation.
_RANK = """
inline bool before($R x, $R y, bool ascending) {
  if (isnan(x) || isnan(y)) return !isnan(x) && isnan(y);
  return ascending ? x < y : x > y;
}
"""

# A (n x n, from `in`'s lower triangle, as NumPy's eigh) -> eigenvalues w (ascending) and, when
# `vectors`, V with A V = V diag(w). The work copy of V is stored transposed (row p = column p).
_EIGH = """
kernel void eigh(const device $T* in [[buffer(0)]], device $T* work [[buffer(1)]], device $T* vwork [[buffer(2)]],
                 device $R* rot [[buffer(3)]], device $T* phases [[buffer(4)]], device uint* pairs_at [[buffer(5)]],
                 device $R* w_out [[buffer(6)]], device $T* v_out [[buffer(7)]], constant uint& n [[buffer(8)]],
                 constant uint& vectors [[buffer(9)]],
                 uint g [[threadgroup_position_in_grid]], uint tid [[thread_index_in_threadgroup]]) {
  threadgroup int rotated[$NTG];
  threadgroup int again;
  threadgroup $R partial_max[$NTG];
  threadgroup $R scale;
  const ulong base = ulong(g) * n * n;
  const device $T* x = in + base;
  device $T* A = work + base;
  device $T* V = vwork + base;
  const uint N = n + (n & 1u), pairs = N / 2;
  device $R* CS = rot + ulong(g) * N;
  device $T* PH = phases + ulong(g) * pairs;
  device uint* PQ = pairs_at + ulong(g) * N;
$LANE_DECL
$SCALE_X
  const $R sc = scale;
  const $T zero = la_make($R(0), $R(0)), one = la_make($R(1), $R(0));
  for (uint e = tid; e < n * n; e += $NTG) {  // the Hermitian matrix of the lower triangle
    const uint i = e / n, j = e % n;
    const $T a = i > j ? x[e] : (i == j ? la_make(la_re(x[e]), $R(0)) : la_conj(x[j * n + i]));
    A[e] = la_scale(a, sc);
    V[e] = i == j ? one : zero;
  }
  $SYNC
  for (uint sweep = 0; sweep < $MAX_SWEEPS; ++sweep) {
    rotated[tid] = 0;
    for (uint step = 0; step + 1 < N; ++step) {
      // The rotation G = [[c, s], [-s conj(ph), c conj(ph)]] of each pair, ph = a_pq / |a_pq|
      // (+-1 for real matrices): G^H A G annihilates a_pq.
      for (uint k = tid; k < pairs; k += $NTG) {
        uint p, q;
        jacobi_pair(step, k, N, p, q);
        $R c = $R(1), s = $R(0);
        $T ph = one;
        if (q < n && jacobi_rotation(la_re(A[p * n + p]), la_re(A[q * n + q]), A[p * n + q], $EPS, c, s, ph))
          rotated[tid] = 1;
        CS[2 * k] = c;
        CS[2 * k + 1] = s;
        PH[k] = ph;
        PQ[2 * k] = p;
        PQ[2 * k + 1] = q;
      }
      $SYNC
$APPLY
      $SYNC
    }
    if (tid == 0) {
      int any = 0;
      for (uint t = 0; t < $NTG; ++t) any |= rotated[t];
      again = any;
    }
    $SYNC
    if (!again) break;
  }
  for (uint i = tid; i < n; i += $NTG) {
    const $R d = la_re(A[i * n + i]);
    uint rank = 0;
    for (uint j = 0; j < n; ++j) {
      const $R e = la_re(A[j * n + j]);
      if (before(e, d, true) || (j < i && !before(d, e, true))) ++rank;
    }
    w_out[ulong(g) * n + rank] = d / sc;
    if (vectors)
      for (uint r = 0; r < n; ++r) v_out[base + r * n + rank] = V[i * n + r];
  }
}
"""

# One-sided Jacobi on the columns of a square A, accumulating V, one thread per matrix (the CPU
# backend): element i of column p of the work copies is at p * CS + i * RS (columns contiguous);
# then s (descending), U = A V / s and V^T. Columns whose singular value is below
# TINY / EPS get orthonormal completions (from unit vectors, two Gram-Schmidt passes) so U is
# orthogonal for rank-deficient A too.
_SVD = """
kernel void svd(const device $T* in [[buffer(0)]], device $T* work [[buffer(1)]], device $T* vwork [[buffer(2)]],
                device $R* norms [[buffer(3)]], device $R* s_out [[buffer(4)]], device $T* u_out [[buffer(5)]],
                device $T* vt_out [[buffer(6)]], constant uint& n [[buffer(7)]], constant uint& vectors [[buffer(8)]],
                uint g [[threadgroup_position_in_grid]], uint tid [[thread_index_in_threadgroup]]) {
  threadgroup int rotated[$NTG];
  threadgroup int again;
  threadgroup $R partial_max[$NTG];
  threadgroup $R scale;
  const ulong base = ulong(g) * n * n;
  const device $T* x = in + base;
$SCALE_X
  const $R sc = scale;
  device $T* W = work + base;
  device $T* V = vwork + base;
  device $R* S = norms + ulong(g) * n;
  device $T* U = u_out + base;
  const uint N = n + (n & 1u), pairs = N / 2;
$LANE_DECL
  const $R tol = $EPS * sqrt($R(n));
  const $T zero = la_make($R(0), $R(0)), one = la_make($R(1), $R(0));
  for (uint e = tid; e < n * n; e += $NTG) {
    const uint p = e / n, i = e % n;
    W[p * $CS + i * $RS] = la_scale(x[i * n + p], sc);
    V[p * $CS + i * $RS] = p == i ? one : zero;
  }
  $SYNC
  for (uint sweep = 0; sweep < $MAX_SWEEPS; ++sweep) {
    rotated[tid] = 0;
    // Squared column norms, exact at the start of each sweep and updated by each rotation
    // (a' = a - t |g|, b' = b + t |g|), so a pair computes one dot product instead of three.
    for (uint p = $WORKER; p < n; p += $WORKERS) {
      $R ss = $R(0);
      $FOR_I ss += la_abs2(W[p * $CS + i * $RS]);
      ss = $REDUCE_R(ss);
      if ($LEAD) S[p] = ss;
    }
    $SYNC
    for (uint step = 0; step + 1 < N; ++step) {
      for (uint k = $WORKER; k < pairs; k += $WORKERS) {
        uint p, q;
        jacobi_pair(step, k, N, p, q);
        if (q >= n) continue;
        device $T* wp = W + p * $CS;
        device $T* wq = W + q * $CS;
        const $R alpha = S[p], beta = S[q];
        $T gamma = zero;
$GAMMA
        const $R size = la_abs(gamma);
        if (!(size > $TINY && size > tol * sqrt(alpha) * sqrt(beta))) continue;
        // The real rotation of (w_p, w_q conj(phase)), phase = gamma / |gamma|: with the phase, the
        // columns' product is real and the real formulas apply (the complex one-sided Jacobi step).
        const $T phase = la_conj(la_divr(gamma, size));
        const $R t = jacobi_tangent((beta - alpha) / ($R(2) * size));
        const $R c = $R(1) / sqrt($R(1) + t * t), s = t * c;
        if ($LEAD) {
          S[p] = alpha - t * size;
          S[q] = beta + t * size;
        }
        $FOR_I {
          const $T a = wp[i * $RS], b = la_mul(wq[i * $RS], phase);
          wp[i * $RS] = rot_first(a, b, c, s);
          wq[i * $RS] = rot_second(a, b, c, s);
        }
        if (vectors) {
          device $T* vp = V + p * $CS;
          device $T* vq = V + q * $CS;
          $FOR_I {
            const $T a = vp[i * $RS], b = la_mul(vq[i * $RS], phase);
            vp[i * $RS] = rot_first(a, b, c, s);
            vq[i * $RS] = rot_second(a, b, c, s);
          }
        }
        rotated[tid] = 1;
      }
      $SYNC
    }
    if (tid == 0) {
      int any = 0;
      for (uint t = 0; t < $NTG; ++t) any |= rotated[t];
      again = any;
    }
    $SYNC
    if (!again) break;
  }
"""

# The end of the SVD (also of linalg_block_jacobi's): s = the column norms of W (descending),
# U = W / s, V^H, and orthonormal completions of U for rank-deficient matrices.
SVD_TAIL = """
  for (uint p = $WORKER; p < n; p += $WORKERS) {
    $R ss = $R(0);
    $FOR_I ss += la_abs2(W[p * $CS + i * $RS]);
    ss = $REDUCE_R(ss);
    if ($LEAD) S[p] = sqrt(ss);
  }
  $SYNC
  const $R small = $TINY / $EPS;
  for (uint p = tid; p < n; p += $NTG) {
    const $R sp = S[p];
    uint rank = 0;
    for (uint j = 0; j < n; ++j)
      if (before(S[j], sp, false) || (j < p && !before(sp, S[j], false))) ++rank;
    s_out[ulong(g) * n + rank] = sp / sc;
    if (vectors) {
      for (uint i = 0; i < n; ++i) {
        U[i * n + rank] = sp > small ? la_divr(W[p * $CS + i * $RS], sp) : zero;
        vt_out[base + rank * n + i] = la_conj(V[p * $CS + i * $RS]);  // Vh = V^H
      }
    }
  }
  $SYNC
  if (vectors && tid == 0) {
    uint candidate = 0;
    for (uint r = 0; r < n; ++r) {
      if (s_out[ulong(g) * n + r] * sc > small) continue;
      // Columns are sorted: 0..r-1 are orthonormal already. The first unit vector keeping at least
      // 1/sqrt(2n) of its length after projection exists among those not tried yet.
      for (; candidate < n; ++candidate) {
        for (uint i = 0; i < n; ++i) U[i * n + r] = i == candidate ? one : zero;
        for (uint pass = 0; pass < 2; ++pass)
          for (uint c = 0; c < r; ++c) {
            $T d = zero;
            for (uint i = 0; i < n; ++i) d = la_add(d, la_mul(la_conj(U[i * n + c]), U[i * n + r]));
            for (uint i = 0; i < n; ++i) U[i * n + r] = la_sub(U[i * n + r], la_mul(d, U[i * n + c]));
          }
        $R ss = $R(0);
        for (uint i = 0; i < n; ++i) ss += la_abs2(U[i * n + r]);
        if (ss * $R(2 * n) >= $R(1)) {
          const $R inv = $R(1) / sqrt(ss);
          for (uint i = 0; i < n; ++i) U[i * n + r] = la_scale(U[i * n + r], inv);
          ++candidate;
          break;
        }
      }
    }
  }
}
"""


def eigh(dev: mc.Device, a: mc.Buffer, batch: int, n: int, dtype: Any, vectors: bool) -> tuple[mc.Buffer, mc.Buffer]:
    """Eigenvalues (batch, n), ascending and real, and eigenvectors (batch, n, n) as columns
    (undefined unless `vectors`) of `batch` Hermitian n x n matrices (n, batch > 0; the lower
    triangles are read), real or complex."""
    dt = lc.float_type(dtype, complex_ok=True)
    rdt = lc.real_type(dt)
    threads = lc.group_size(dev, (n + 1) // 2)
    big_n = n + (n & 1)
    work = cache.empty(dev, batch * n * n, dt)
    vwork = cache.empty(dev, batch * n * n, dt)
    rot = cache.empty(dev, batch * big_n, rdt)
    phases = cache.empty(dev, batch * big_n // 2, dt)
    pairs_at = cache.empty(dev, batch * big_n, np.uint32)
    w = cache.empty(dev, batch * n, rdt)
    v = cache.empty(dev, batch * n * n, dt) if vectors else cache.nonempty(dev, cache.empty(dev, 0, dt), dt)
    args = (a, work, vwork, rot, phases, pairs_at, w, v, n, int(vectors))
    if threads == 1:
        lc.run(dev, _eigh_source(by_pairs=True), "eigh", dt, 1, batch, *args, MAX_SWEEPS=MAX_SWEEPS)
        return w, v
    # GPUs: element by element, up to MAX_SIMD_THREADS threads (fewer where the pipeline allows fewer)
    threads = lc.group_size(dev, 1)
    while threads < lc.MAX_SIMD_THREADS and threads < (big_n // 2) * n:
        threads *= 2
    source = lambda tg, _width: lc.render(_eigh_source(by_pairs=False), dt, tg, MAX_SWEEPS=MAX_SWEEPS)
    kern, tg = cache.sized_kernel(dev, source, "eigh", threads, fast_math=False)
    cache.launch(kern, batch * tg, *args, threadgroup=(tg, 1, 1))
    return w, v


def _eigh_source(*, by_pairs: bool) -> str:
    """The eigh kernel's text: one thread per pair (the CPU), or element by element (GPUs)."""
    text = _EIGH.replace("$SCALE_X", lc.scaling("x", "n * n")).replace("$LANE_DECL\n", "")
    return lc.JACOBI_PAIR + _RANK + text.replace("$APPLY", _EIGH_BY_PAIRS if by_pairs else _EIGH_BY_ELEMENTS)



def _svd_source(dt: np.dtype) -> str:
    """The SVD kernel's text for one thread per matrix (the CPU backend; GPUs take
    linalg_block_jacobi.py): columns contiguous, one thread walks each. Eight partial sums in the
    columns' product, so that the additions do not wait on each other (without fast math the
    compiler may not reorder one sum; the dot product was most of the CPU's time)."""
    gamma = """
        {
          $T part[8] = {zero, zero, zero, zero, zero, zero, zero, zero};
          uint i = 0;
          for (; i + 8 <= n; i += 8)
            for (uint u = 0; u < 8; ++u) part[u] = la_add(part[u], la_mul(la_conj(wp[i + u]), wq[i + u]));
          for (; i < n; ++i) gamma = la_add(gamma, la_mul(la_conj(wp[i]), wq[i]));
          for (uint u = 0; u < 8; ++u) gamma = la_add(gamma, part[u]);
        }"""
    parts = {"LANE_DECL": "", "WORKER": "tid", "WORKERS": "$NTG", "LEAD": "true", "REDUCE_R": "", "GAMMA": gamma,
             "CS": "n", "RS": "1u", "FOR_I": "for (uint i = 0u; i < n; ++i)"}
    text = (_SVD + SVD_TAIL).replace("$SCALE_X", lc.scaling("x", "n * n"))
    for key in sorted(parts, key=len, reverse=True):  # $REDUCE_R before $R
        text = text.replace("$" + key, parts[key])
    return lc.JACOBI_PAIR + _RANK + text


def svd_square(dev: mc.Device, a: mc.Buffer, batch: int, n: int, dtype: Any,
               vectors: bool) -> tuple[mc.Buffer, mc.Buffer, mc.Buffer]:
    """s (batch, n) descending (real), U and V^H (batch, n, n; undefined unless `vectors`) of `batch`
    square n x n matrices (n, batch > 0), real or complex, one thread per matrix (the CPU backend's
    form; GPUs take linalg_block_jacobi.svd_square)."""
    dt = lc.float_type(dtype, complex_ok=True)
    rdt = lc.real_type(dt)
    work = cache.empty(dev, batch * n * n, dt)
    vwork = cache.empty(dev, batch * n * n, dt)
    norms = cache.empty(dev, batch * n, rdt)
    s = cache.empty(dev, batch * n, rdt)
    if vectors:
        u, vt = cache.empty(dev, batch * n * n, dt), cache.empty(dev, batch * n * n, dt)
    else:
        u = vt = cache.nonempty(dev, cache.empty(dev, 0, dt), dt)
    lc.run(dev, _svd_source(dt), "svd", dt, 1, batch, a, work, vwork, norms, s, u, vt, n, int(vectors),
           MAX_SWEEPS=MAX_SWEEPS)
    return s, u, vt
