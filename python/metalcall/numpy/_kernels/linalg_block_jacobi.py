"""The SVD of square matrices on GPUs by block one-sided Jacobi, spread over the whole GPU
(linalg_jacobi's svd, one matrix per threadgroup, is the CPU backend's).

The columns of the work copy W (and of V) form blocks of B; a sweep pairs every two blocks once
(the round-robin order of linalg_common.JACOBI_PAIR over the blocks), and the nb / 2 pairs of one
step, disjoint, are the threadgroups of one launch. A threadgroup forms the Gram matrix
G = Wpq^H Wpq of its 2B columns, runs one cyclic Jacobi sweep on G in threadgroup memory
(accumulating the rotations in J: G <- J^H G J) and applies W <- W J and V <- V J, row by row.
A pair whose columns are orthogonal already (|g_pq| <= EPS sqrt(n) sqrt(g_pp g_qq), the one-sided
Jacobi test) is left alone; the host runs sweeps until one rotates nothing. Every sweep recomputes
G from W, so the test is the one-sided method's, and linalg_jacobi's end (SVD_TAIL) then makes s,
U and V^H from W and V.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import metalcall as mc

from . import cache, linalg_common as lc
from .linalg_jacobi import MAX_SWEEPS, SVD_TAIL, _RANK

BLOCK = 16  # columns per block: pairs of 32 columns, G and J of 32 x 32
THREADS = 512  # per group, at most (2 B)^2 (the H200 at n = 512: 512 beat 256 and 128 by 15-35%)
last_sweeps = 0  # the sweeps of the last call (benchmarks print it)

# W = the scaled input with columns contiguous (W[p n + i] = A[i, p] * scale), V = I; one threadgroup
# per matrix, which also keeps the scale for the end.
_INIT = """
kernel void bj_init(const device $T* in [[buffer(0)]], device $T* work [[buffer(1)]], device $T* vwork [[buffer(2)]],
                    device $R* scales [[buffer(3)]], constant uint& n [[buffer(4)]],
                    uint g [[threadgroup_position_in_grid]], uint tid [[thread_index_in_threadgroup]]) {
  threadgroup $R partial_max[$NTG];
  threadgroup $R scale;
  const ulong base = ulong(g) * n * n;
  const device $T* x = in + base;
$SCALE_X
  const $R sc = scale;
  for (uint e = tid; e < n * n; e += $NTG) {
    const uint p = e / n, i = e % n;
    work[base + e] = la_scale(x[i * n + p], sc);
    vwork[base + e] = la_make($R(p == i ? 1 : 0), $R(0));
  }
  if (tid == 0) scales[g] = sc;
}
"""

# One step of a sweep: threadgroup `grp` takes pair k of matrix g. Columns c < B2 of the pair are
# column P B + c (c < B) and Q B + c - B of W; those at or past n are zero and left alone.
_STEP = """
inline uint bj_column(uint c, uint P, uint Q) { return c < $B ? P * $B + c : Q * $B + (c - $B); }

kernel void bj_step(device $T* work [[buffer(0)]], device $T* vwork [[buffer(1)]], device int* flags [[buffer(2)]],
                    constant uint& n [[buffer(3)]], constant uint& nb [[buffer(4)]], constant uint& step [[buffer(5)]],
                    constant uint& sweep [[buffer(6)]], constant uint& vectors [[buffer(7)]],
                    uint grp [[threadgroup_position_in_grid]], uint tid [[thread_index_in_threadgroup]]) {
  threadgroup $T G[$B2 * $B2];
  threadgroup $T JT[$B2 * $B2];  // J^T: row j is column j of the accumulated rotation
  threadgroup $T tile[$ROWS * $B2];
  threadgroup $R CS[2 * $B];
  threadgroup $T PH[$B];
  threadgroup int rotate;
  const uint tasks = nb / 2, g = grp / tasks, k = grp % tasks;
  uint P, Q;
  jacobi_pair(step, k, nb, P, Q);
  device $T* W = work + ulong(g) * n * n;
  device $T* V = vwork + ulong(g) * n * n;
  const $T zero = la_make($R(0), $R(0)), one = la_make($R(1), $R(0));
  const $R tol = $EPS * sqrt($R(n));
  // G = Wpq^H Wpq, ROWS rows at a time through threadgroup memory; each thread sums PER entries.
  $T acc[$PER];
  for (uint q = 0; q < $PER; ++q) acc[q] = zero;
  for (uint r0 = 0; r0 < n; r0 += $ROWS) {
    for (uint e = tid; e < $ROWS * $B2; e += $NTG) {
      const uint c = e / $ROWS, rr = e % $ROWS, col = bj_column(c, P, Q);
      tile[rr * $B2 + c] = col < n && r0 + rr < n ? W[col * n + r0 + rr] : zero;
    }
    $SYNC
    for (uint q = 0; q < $PER; ++q) {
      const uint e = tid + q * $NTG, i = e / $B2, j = e % $B2;
      for (uint rr = 0; rr < $ROWS; ++rr) acc[q] = la_add(acc[q], la_mul(la_conj(tile[rr * $B2 + i]), tile[rr * $B2 + j]));
    }
    $SYNC
  }
  if (tid == 0) rotate = 0;
  for (uint q = 0; q < $PER; ++q) {
    const uint e = tid + q * $NTG, i = e / $B2, j = e % $B2;
    G[e] = acc[q];
    JT[e] = i == j ? one : zero;
  }
  $SYNC
  for (uint q = 0; q < $PER; ++q) {
    const uint e = tid + q * $NTG, i = e / $B2, j = e % $B2;
    const $R size = la_abs(G[e]);
    if (i < j && size > $TINY && size > tol * sqrt(la_re(G[i * $B2 + i])) * sqrt(la_re(G[j * $B2 + j]))) rotate = 1;
  }
  $SYNC
  if (!rotate) return;
  if (tid == 0) flags[sweep] = 1;
  // INNER cyclic sweeps over the pairs of G's 2B columns (linalg_jacobi's eigh, element by element).
  for (uint s = 0; s < ($B2 - 1) * $INNER; ++s) {
    for (uint kk = tid; kk < $B; kk += $NTG) {
      uint p, q;
      jacobi_pair(s % ($B2 - 1), kk, $B2, p, q);
      $R c, sn;
      $T ph;
      jacobi_rotation(la_re(G[p * $B2 + p]), la_re(G[q * $B2 + q]), G[p * $B2 + q], tol, c, sn, ph);
      CS[2 * kk] = c;
      CS[2 * kk + 1] = sn;
      PH[kk] = ph;
    }
    $SYNC
    for (uint e = tid; e < $B * $B2; e += $NTG) {  // rows of G and of J^T
      const uint kk = e / $B2, j = e % $B2;
      const $R c = CS[2 * kk], sn = CS[2 * kk + 1];
      if (sn == $R(0)) continue;
      uint p, q;
      jacobi_pair(s % ($B2 - 1), kk, $B2, p, q);
      const $T ph = PH[kk];
      const $T ap = G[p * $B2 + j], aq = la_mul(ph, G[q * $B2 + j]);
      G[p * $B2 + j] = rot_first(ap, aq, c, sn);
      G[q * $B2 + j] = rot_second(ap, aq, c, sn);
      const $T vp = JT[p * $B2 + j], vq = la_mul(la_conj(ph), JT[q * $B2 + j]);
      JT[p * $B2 + j] = rot_first(vp, vq, c, sn);
      JT[q * $B2 + j] = rot_second(vp, vq, c, sn);
    }
    $SYNC
    for (uint e = tid; e < $B2 * $B; e += $NTG) {  // columns of G
      const uint r = e / $B, l = e % $B;
      const $R cl = CS[2 * l], sl = CS[2 * l + 1];
      if (sl == $R(0)) continue;
      uint pl, ql;
      jacobi_pair(s % ($B2 - 1), l, $B2, pl, ql);
      threadgroup $T* row = G + r * $B2;
      const $T a = row[pl], b = la_mul(la_conj(PH[l]), row[ql]);
      row[pl] = rot_first(a, b, cl, sl);
      row[ql] = rot_second(a, b, cl, sl);
      if (r == pl) { row[ql] = zero; row[pl] = la_make(la_re(row[pl]), $R(0)); }
      if (r == ql) { row[pl] = zero; row[ql] = la_make(la_re(row[ql]), $R(0)); }
    }
    $SYNC
  }
  // W <- W J and V <- V J: each thread owns whole rows of the pair's columns.
  for (uint side = 0; side < (vectors ? 2u : 1u); ++side) {
    device $T* M = side == 0 ? W : V;
    for (uint r = tid; r < n; r += $NTG) {
      $T old[$B2];
      for (uint i = 0; i < $B2; ++i) {
        const uint col = bj_column(i, P, Q);
        old[i] = col < n ? M[col * n + r] : zero;
      }
      for (uint j = 0; j < $B2; ++j) {
        const uint col = bj_column(j, P, Q);
        if (col >= n) continue;
        $T v = zero;
        for (uint i = 0; i < $B2; ++i) v = la_add(v, la_mul(old[i], JT[j * $B2 + i]));
        M[col * n + r] = v;
      }
    }
  }
}
"""

# linalg_jacobi's end of the SVD for W and V made here, one threadgroup per matrix.
_FINISH = """
kernel void bj_finish(const device $T* work [[buffer(0)]], const device $T* vwork [[buffer(1)]],
                      const device $R* scales [[buffer(2)]], device $R* norms [[buffer(3)]], device $R* s_out [[buffer(4)]],
                      device $T* u_out [[buffer(5)]], device $T* vt_out [[buffer(6)]], constant uint& n [[buffer(7)]],
                      constant uint& vectors [[buffer(8)]],
                      uint g [[threadgroup_position_in_grid]], uint tid [[thread_index_in_threadgroup]]) {
  const ulong base = ulong(g) * n * n;
  const device $T* W = work + base;
  const device $T* V = vwork + base;
  device $R* S = norms + ulong(g) * n;
  device $T* U = u_out + base;
  const $R sc = scales[g];
  const $T zero = la_make($R(0), $R(0)), one = la_make($R(1), $R(0));
$TAIL
"""


def usable(dev: mc.Device) -> bool:
    """Whether square SVDs take this path on dev: every size on GPUs. (linalg_jacobi's one
    threadgroup per matrix left the rest of the GPU idle for single matrices, and on the H200 its
    GPU forms gave wrong singular values from n = 32 on, float32 and float64, cause not found;
    this kernel was right at every size tried, 32 to 512.)"""
    return not cache.uses_loops(dev)


INNER = 1  # Jacobi sweeps over a pair's Gram matrix per step


TILE = 1024  # elements of W per Gram tile: TILE / (2 B) rows of the pair's columns


def _render(template: str, dt: np.dtype, threads: int, block: int, **extra: Any) -> str:
    b2 = 2 * block
    return lc.render(lc.JACOBI_PAIR + template, dt, threads, B=f"{block}u", B2=f"{b2}u", ROWS=f"{TILE // b2}u",
                     PER=str(b2 * b2 // threads), INNER=f"{INNER}u", **extra)


def _threadgroup_bytes(block: int, dt: np.dtype) -> int:
    """bj_step's threadgroup memory: G, J^T, the tile, the rotations."""
    b2 = 2 * block
    return (2 * b2 * b2 + TILE + block) * dt.itemsize + 2 * block * lc.real_type(dt).itemsize + 16


# bj_step declares its threadgroup arrays with fixed sizes: on CUDA those are static shared memory,
# which NVRTC caps at 48 KiB whatever dev.threadgroup_memory_length (the opt-in limit of dynamic
# [[threadgroup(i)]] memory) says, less the stop check's ticket word (on the H200 complex128 blocks
# of 16, 49680 bytes, were refused by ptxas).
_STATIC_LIMIT = 48 * 1024 - 64


def _fits(dev: mc.Device, block: int, dt: np.dtype) -> bool:
    return _threadgroup_bytes(block, dt) <= min(dev.threadgroup_memory_length, _STATIC_LIMIT)


def block_size(dev: mc.Device, dt: np.dtype) -> int:
    """BLOCK, halved (down to 8) until bj_step's threadgroup memory fits the device's."""
    block = BLOCK
    while block > 8 and not _fits(dev, block, dt):
        block //= 2
    return block


def svd_square(dev: mc.Device, a: mc.Buffer, batch: int, n: int, dtype: Any, vectors: bool,
               block: int | None = None) -> tuple[mc.Buffer, mc.Buffer, mc.Buffer]:
    """linalg_jacobi.svd_square's results (s descending; U and V^H undefined unless `vectors`) by
    block Jacobi; `block` (columns per block, a power of two from 8) is the tests'."""
    dt = lc.float_type(dtype, complex_ok=True)
    rdt = lc.real_type(dt)
    block = block or block_size(dev, dt)
    b2 = 2 * block
    if block & (block - 1) or block < 8 or b2 > TILE:
        raise mc.ArgumentError(f"block Jacobi: block must be a power of two from 8 to {TILE // 2}, got {block}")
    if not _fits(dev, block, dt):
        raise mc.ArgumentError(f"block Jacobi: blocks of {block} {dt} columns need {_threadgroup_bytes(block, dt)} "
                               f"bytes of threadgroup memory, more than the {min(dev.threadgroup_memory_length, _STATIC_LIMIT)} "
                               "its fixed-size arrays may have there")
    nb = -(-n // block)
    nb += nb & 1
    work = cache.empty(dev, batch * n * n, dt)
    vwork = cache.empty(dev, batch * n * n, dt)
    scales = cache.empty(dev, batch, rdt)
    flags = cache.empty(dev, MAX_SWEEPS, np.int32, zeroed=True)
    init_src = _INIT.replace("$SCALE_X", lc.scaling("x", "n * n"))
    init, tg = cache.sized_kernel(dev, lambda t, _w: lc.render(init_src, dt, t), "bj_init", THREADS, fast_math=False)
    cache.launch(init, batch * tg, a, work, vwork, scales, n, threadgroup=(tg, 1, 1))
    step_k, stg = cache.sized_kernel(dev, lambda t, _w: _render(_STEP, dt, t, block), "bj_step",
                                     min(THREADS, b2 * b2), fast_math=False)
    groups = batch * (nb // 2)
    for sweep in range(MAX_SWEEPS):
        for step in range(nb - 1):
            cache.launch(step_k, groups * stg, work, vwork, flags, n, nb, step, sweep, int(vectors),
                         threadgroup=(stg, 1, 1))
        if not np.asarray(flags)[sweep]:  # waits for the sweep
            break
    global last_sweeps
    last_sweeps = sweep + 1
    norms = cache.empty(dev, batch * n, rdt)
    s = cache.empty(dev, batch * n, rdt)
    if vectors:
        u, vt = cache.empty(dev, batch * n * n, dt), cache.empty(dev, batch * n * n, dt)
    else:
        u = vt = cache.nonempty(dev, cache.empty(dev, 0, dt), dt)
    tail = SVD_TAIL
    for key, value in {"FOR_I": "for (uint i = 0u; i < n; ++i)", "WORKERS": "$NTG", "WORKER": "tid",
                       "REDUCE_R": "", "LEAD": "true", "CS": "n", "RS": "1u"}.items():
        tail = tail.replace("$" + key, value)
    finish_src = _RANK + _FINISH.replace("$TAIL", tail)
    finish, ftg = cache.sized_kernel(dev, lambda t, _w: lc.render(finish_src, dt, t), "bj_finish", THREADS,
                                     fast_math=False)
    cache.launch(finish, batch * ftg, work, vwork, scales, norms, s, u, vt, n, int(vectors), threadgroup=(ftg, 1, 1))
    return s, u, vt
