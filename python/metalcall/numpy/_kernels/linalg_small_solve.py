"""Small systems in ONE launch: a threadgroup loads its matrix A and right-hand sides B into
threadgroup memory, eliminates with partial pivoting on [A | B] (getrf's pivots: the first largest
|re| + |im|; each step's multipliers applied to the rows of A and of B at once, as getrf then getrs'
forward substitution would), substitutes backwards and writes X, with `info` as getrf's (k + 1 for
the first exactly zero pivot). linalg_lu's kernels take three launches and a wait for a solve, and
work in device memory, where each of their barriers also orders device memory (on CUDA a fence):
for stacks of small systems that cost more than the arithmetic. The CPU backend runs it with one
thread per system (linalg_common.py), its updates row by row.
"""

from __future__ import annotations

from typing import Any

import numpy as np

import metalcall as mc

from . import cache, linalg_common as lc

MAX_BYTES = 16384  # threadgroup memory for A and X of one system
# On the CPU backend, stacks of at least this many systems take a source made for their size: with
# n and nrhs constants the compiler unrolls and vectorises the row updates (1000 systems of 32x32:
# 2.7x less CPU time), for one compile of about a second per size, dtype and machine (then cached).
SIZED_BATCH = 64

_SMALL_SOLVE = """
kernel void small_solve(const device $T* a [[buffer(0)]], const device $T* b [[buffer(1)]], device $T* x [[buffer(2)]],
                        device int* info [[buffer(3)]], constant uint& n_arg [[buffer(4)]], constant uint& nrhs_arg [[buffer(5)]],
                        constant uint& identity [[buffer(6)]], constant uint& b_batch [[buffer(7)]],
                        uint g [[threadgroup_position_in_grid]], uint tid [[thread_index_in_threadgroup]]) {
  const uint n = $N, nrhs = $K;  // the arguments, or constants where the source is made per size
  threadgroup $T A[$CAP];  // n x n, then X (n x nrhs)
  threadgroup $R best_value[$NTG];
  threadgroup uint best_row[$NTG];
  threadgroup uint pivot_row;
  threadgroup int status;
  threadgroup $T* X = A + n * n;
  const $T zero = la_make($R(0), $R(0));
  const device $T* src = a + ulong(g) * n * n;
  const device $T* B = b + ulong(b_batch ? g : 0) * n * nrhs;
  for (uint e = tid; e < n * n; e += $NTG) A[e] = src[e];
  for (uint e = tid; e < n * nrhs; e += $NTG) X[e] = identity ? la_make($R(e / nrhs == e % nrhs ? 1 : 0), $R(0)) : B[e];
  if (tid == 0) status = 0;
  $TSYNC
  for (uint k = 0; k < n; ++k) {
$PIVOT
    const uint r = pivot_row;
    if (r != k) {
      for (uint j = tid; j < n; j += $NTG) { const $T t = A[k * n + j]; A[k * n + j] = A[r * n + j]; A[r * n + j] = t; }
      for (uint j = tid; j < nrhs; j += $NTG) { const $T t = X[k * nrhs + j]; X[k * nrhs + j] = X[r * nrhs + j]; X[r * nrhs + j] = t; }
    }
    $TSYNC
    // rows below k: row_i -= (a_ik / a_kk) row_k, over A's trailing columns and X's (column k of A
    // is only read: the multipliers are not kept)
    const $T d = A[k * n + k];
    if (!la_iszero(d)) {
$UPDATE
    }
    $TSYNC
  }
  for (uint k = n; k-- > 0;) {  // U X = Y, backwards
    const $T d = A[k * n + k];
    for (uint c = tid; c < nrhs; c += $NTG) X[k * nrhs + c] = la_div(X[k * nrhs + c], d);
    $TSYNC
$BACK
    $TSYNC
  }
  device $T* out = x + ulong(g) * n * nrhs;
  for (uint e = tid; e < n * nrhs; e += $NTG) out[e] = X[e];
  if (tid == 0) info[g] = status;
}
"""


# The updates: elements shared out over the group's threads on GPUs; row by row on the CPU (one
# thread per system), so that the inner loops run along contiguous rows and vectorise.
_UPDATE_BY_ELEMENTS = """
      const uint tail = n - k - 1, width = tail + nrhs;
      for (uint e = tid; e < tail * width; e += $NTG) {
        const uint i = k + 1 + e / width, c = e % width;
        const $T l = la_div(A[i * n + k], d);
        if (c < tail) A[i * n + k + 1 + c] = la_sub(A[i * n + k + 1 + c], la_mul(l, A[k * n + k + 1 + c]));
        else X[i * nrhs + c - tail] = la_sub(X[i * nrhs + c - tail], la_mul(l, X[k * nrhs + c - tail]));
      }"""
_UPDATE_BY_ROWS = """
      for (uint i = k + 1; i < n; ++i) {
        const $T l = la_div(A[i * n + k], d);
        for (uint c = k + 1; c < n; ++c) A[i * n + c] = la_sub(A[i * n + c], la_mul(l, A[k * n + c]));
        for (uint c = 0; c < nrhs; ++c) X[i * nrhs + c] = la_sub(X[i * nrhs + c], la_mul(l, X[k * nrhs + c]));
      }"""
_BACK_BY_ELEMENTS = """
    for (uint e = tid; e < k * nrhs; e += $NTG) {
      const uint i = e / nrhs, c = e % nrhs;
      X[i * nrhs + c] = la_sub(X[i * nrhs + c], la_mul(A[i * n + k], X[k * nrhs + c]));
    }"""
_BACK_BY_ROWS = """
    for (uint i = 0; i < k; ++i) {
      const $T u = A[i * n + k];
      for (uint c = 0; c < nrhs; ++c) X[i * nrhs + c] = la_sub(X[i * nrhs + c], la_mul(u, X[k * nrhs + c]));
    }"""


def sized(dev: mc.Device, batch: int) -> bool:
    """Whether a stack of `batch` systems takes a source made for its size (SIZED_BATCH)."""
    return cache.uses_loops(dev) and batch >= SIZED_BATCH


def usable(dev: mc.Device, n: int, nrhs: int, dtype: Any, batch: int = 1) -> bool:
    """Whether `batch` systems of n equations with nrhs right-hand sides take this kernel on dev: A
    and X within MAX_BYTES and half the device's threadgroup memory; a stack sized for the CPU
    backend (one thread a group, its array exactly A and X) within the group's memory, less 1 KiB."""
    need = n * (n + nrhs) * np.dtype(dtype).itemsize
    if sized(dev, batch):
        return need <= dev.threadgroup_memory_length - 1024
    return need <= min(MAX_BYTES, dev.threadgroup_memory_length // 2)


def solve(dev: mc.Device, a: mc.Buffer, b: mc.Buffer | None, batch: int, n: int, nrhs: int, dtype: Any, *,
          b_batched: bool = True) -> tuple[mc.Buffer, mc.Buffer]:
    """(X, info) with A X = B for each of `batch` n x n matrices A (`b` None: B = I, the inverse); B is
    (batch or 1, n, nrhs). X is undefined where info is not 0 (a zero pivot)."""
    dt = lc.float_type(dtype, complex_ok=True)
    elements = n * (n + nrhs)
    cap = 64
    while cap < elements:  # a few sizes of threadgroup array, so that small systems keep many groups per core
        cap *= 2
    consts = {"N": "n_arg", "K": "nrhs_arg"}
    if sized(dev, batch):
        cap, consts = elements, {"N": f"{n}u", "K": f"{nrhs}u"}
    threads = lc.group_size(dev, max(n, nrhs, elements // 8))
    x = cache.empty(dev, batch * n * nrhs, dt)
    info = cache.empty(dev, batch, np.int32)
    src = b if b is not None else cache.nonempty(dev, cache.empty(dev, 0, dt), dt)
    by_rows = threads == 1
    text = (_SMALL_SOLVE.replace("$UPDATE", _UPDATE_BY_ROWS if by_rows else _UPDATE_BY_ELEMENTS)
            .replace("$BACK", _BACK_BY_ROWS if by_rows else _BACK_BY_ELEMENTS)
            .replace("$PIVOT", lc.pivot_search("A", "$TSYNC", "if (la_iszero(A[row * n + k]) && status == 0) status = int(k + 1);")))
    source = lambda tg, _w: lc.render(text, dt, tg, CAP=f"{cap}u", **consts,
                                      TSYNC="threadgroup_barrier(mem_flags::mem_threadgroup);" if tg > 1 else "")
    kern, tg = cache.sized_kernel(dev, source, "small_solve", threads, fast_math=False)
    cache.launch(kern, batch * tg, a, src, x, info, n, nrhs, int(b is None), int(b_batched), threadgroup=(tg, 1, 1))
    return x, info
