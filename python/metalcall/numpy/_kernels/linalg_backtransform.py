"""The vectors of linalg_band's eigh and svd: the product of the reduction's Householder
reflectors, transposed (Q^T = H_last ... H_0), with the band's recorded rotations replayed on its
rows, written out in the order of the values' ranks.

Each threadgroup (one thread on the CPU backend) owns a strip of CW columns of Q^T for one matrix,
kept rows-contiguous in its own scratch (n x CW, a few hundred KiB: cache-resident). Strips are
independent, so a single matrix's back-transformation spreads over the worker pool, and every
inner loop runs along a strip's row: vectorised.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import metalcall as mc

from . import cache, linalg_common as lc

_VECTORS = """
kernel void band_vectors(const device $R* refl [[buffer(0)]], const device $R* taus [[buffer(1)]],
                         const device uint* rec_pq [[buffer(2)]], const device $R* rec_cs [[buffer(3)]],
                         const device uint* counts [[buffer(4)]], const device uint* ranks [[buffer(5)]],
                         device $R* xwork [[buffer(6)]], device $R* out [[buffer(7)]], constant uint& n [[buffer(8)]],
                         constant uint& nrefl [[buffer(9)]], constant uint& off [[buffer(10)]],
                         constant uint& chunks [[buffer(11)]], constant uint& rows_out [[buffer(12)]],
                         constant uint& tau_stride [[buffer(13)]], constant uint& tau_off [[buffer(14)]],
                         constant uint& rec_stride [[buffer(15)]], constant uint& rec_off [[buffer(16)]],
                         constant uint& count_stride [[buffer(17)]], constant uint& count_off [[buffer(18)]],
                         constant uint& cap [[buffer(19)]], uint grp [[threadgroup_position_in_grid]]) {
  const uint g = grp / chunks, ch = grp % chunks, c0 = ch * ${CW}u;
  const ulong base = ulong(g) * n * n;
  const device $R* V = refl + base;
  const device $R* TAU = taus + ulong(g) * tau_stride + tau_off;
  const ulong rec0 = ulong(g) * rec_stride + rec_off;
  const device uint* PQ = rec_pq + rec0;
  const device $R* CS = rec_cs + 2 * rec0;
  uint count = counts[ulong(g) * count_stride + count_off];
  if (count > cap) count = 0;  // records were lost: the caller reads the counts and takes another route
  device $R* X = xwork + (ulong(g) * chunks + ch) * n * ${CW}u;
  for (uint i = 0; i < n; ++i)
    for (uint c = 0; c < ${CW}u; ++c) X[i * ${CW}u + c] = $R(i == c0 + c ? 1 : 0);
  $R w[$CW];
  for (uint k = 0; k < nrefl; ++k) {  // X <- H_k X: w = tau v^T X, X -= v w
    const $R tau = TAU[k];
    if (tau == $R(0)) continue;
    const device $R* v = V + ulong(k) * n;
    for (uint c = 0; c < ${CW}u; ++c) w[c] = $R(0);
    for (uint i = k + off; i < n; ++i) {
      const $R vi = v[i];
      const device $R* xi = X + i * ${CW}u;
      for (uint c = 0; c < ${CW}u; ++c) w[c] += vi * xi[c];
    }
    for (uint c = 0; c < ${CW}u; ++c) w[c] *= tau;
    for (uint i = k + off; i < n; ++i) {
      const $R vi = v[i];
      device $R* xi = X + i * ${CW}u;
      for (uint c = 0; c < ${CW}u; ++c) xi[c] -= vi * w[c];
    }
  }
  for (uint r = 0; r < count; ++r) {
    const uint code = PQ[r], p = code & 0xffffu, q = code >> 16;
    const $R c = CS[2 * r], s = CS[2 * r + 1];
    device $R* xp = X + p * ${CW}u;
    device $R* xq = X + q * ${CW}u;
    if (p == q) {
      for (uint cc = 0; cc < ${CW}u; ++cc) xp[cc] *= c;
      continue;
    }
    for (uint cc = 0; cc < ${CW}u; ++cc) {
      const $R a = xp[cc], b = xq[cc];
      xp[cc] = c * a + s * b;
      xq[cc] = c * b - s * a;
    }
  }
  const uint width = min(${CW}u, n - c0);
  for (uint j = 0; j < n; ++j) {
    const uint rank = ranks[ulong(g) * n + j];
    const device $R* xj = X + j * ${CW}u;
    if (rows_out) for (uint cc = 0; cc < width; ++cc) out[base + ulong(rank) * n + c0 + cc] = xj[cc];
    else for (uint cc = 0; cc < width; ++cc) out[base + ulong(c0 + cc) * n + rank] = xj[cc];
  }
}
"""


def strip_width(n: int) -> int:
    """Columns per strip: 128, fewer for small matrices. (Each record costs a fixed overhead per
    strip: at 256² and 512², float64, strips of 128 beat 64 by up to 1.5x and 16 by 2.5x.)"""
    w = 8
    while w < n and w < 128:
        w *= 2
    return w


def vectors(dev: mc.Device, parts: dict[str, Any], batch: int, n: int, dtype: Any, *, refl: str, nrefl: int,
            off: int, tau_at: tuple[int, int], rec_at: tuple[int, int, int, int], rows_out: bool) -> mc.Buffer:
    """(batch, n, n): the vectors of linalg_band's `parts`, as columns (rows where `rows_out`), from
    the reflectors `parts[refl]` (reflector k in row k from column k + off, which holds 1) and the
    records at `rec_at` (stride and offset of a matrix's records, then of its count)."""
    dt = lc.float_type(dtype)
    cw = strip_width(n)
    chunks = -(-n // cw)
    xwork = cache.empty(dev, batch * chunks * n * cw, dt)
    out = cache.empty(dev, batch * n * n, dt)
    lc.run(dev, _VECTORS, "band_vectors", dt, 1, batch * chunks, parts[refl], parts["taus"], parts["pq"], parts["cs"],
           parts["counts"], parts["ranks"], xwork, out, n, max(nrefl, 0), off, chunks, int(rows_out),
           *tau_at, *rec_at, parts["cap"], CW=cw)
    return out
