"""Batched matrix product (batch, m, k) @ (batch, k, n) -> (batch, m, n) as generated MSL.

GPUs: 128x128 output tiles per threadgroup of 256 threads, 8-deep slices of A and B staged in
threadgroup memory, each thread accumulating an 8x8 register tile; the next slice is loaded
into registers while the current one is multiplied. Shapes that are multiples of the tile skip
the bounds checks. (On Metal devices with simdgroup_matrix, an 8x8 simdgroup_float8x8 variant
would go here; the CPU and CUDA translators do not support SIMD-group matrices yet.)
CPU backend: no barriers; each thread computes 8 rows of one column, and the backend vectorises
across the threads of a group (consecutive columns), so B is read in contiguous vectors.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

import metalcall as mc

from . import cache, matmul_cpu

# The GPU tile: BM x BN outputs per threadgroup, BK-deep slices, TM x TN per thread.
# The best of a sweep on an H100 (benchmarks/RESULTS.md): 128x128x16, 128x64x8, 64x64x8 and
# 64x64x16 were slower, and so was this tile staged as float4 vectors in threadgroup memory.
TILE = (128, 128, 8, 8, 8)


def _acc(dtype: np.dtype) -> np.dtype:
    """Accumulate half in float, narrow integers in 32 bits (same result modulo 2^bits as
    NumPy's wrapping arithmetic), bool as a count."""
    if dtype.kind == "b":
        return np.dtype(np.uint32)
    if dtype.kind in "iu" and dtype.itemsize < 4:
        return np.dtype(np.int32 if dtype.kind == "i" else np.uint32)
    return cache.accumulator(dtype)


def _store(T: str, is_bool: bool, value: str) -> str:
    return f"({value}) != 0" if is_bool else f"{T}({value})"


@functools.lru_cache(maxsize=None)
def _tiled_source(T: str, A: str, is_bool: bool, checked: bool, tile: tuple[int, ...] = TILE) -> str:
    BM, BN, BK, TM, TN = tile
    threads = (BM // TM) * (BN // TN)
    a_per = BM * BK // threads  # A elements each thread moves per slice
    b_per = BK * BN // threads
    def a_load(u: str) -> str:
        cond = "(gr < m && gk < k)" if checked else "true"
        return (f"    {{ const uint e = tid * {a_per} + {u}; const uint r = e / {BK}, kk = e % {BK};\n"
                f"      const uint gr = row0 + r, gk = k0 + kk;\n"
                f"      ra[{u}] = {cond} ? {A}(a[abase + ulong(gr) * k + gk]) : {A}(0); }}\n")
    def b_load(u: str) -> str:
        cond = "(gk < k && gc < n)" if checked else "true"
        return (f"    {{ const uint e = tid * {b_per} + {u}; const uint kk = e / {BN}, c = e % {BN};\n"
                f"      const uint gk = k0 + kk, gc = col0 + c;\n"
                f"      rb[{u}] = {cond} ? {A}(b[bbase + ulong(gk) * n + gc]) : {A}(0); }}\n")
    def to_tile(buf: str) -> str:
        return ("    #pragma unroll\n"
                f"    for (uint u = 0; u < {a_per}; ++u) {{ const uint e = tid * {a_per} + u;\n"
                f"      As[{buf}][e % {BK}][e / {BK}] = ra[u]; }}\n"
                "    #pragma unroll\n"
                f"    for (uint u = 0; u < {b_per}; ++u) {{ const uint e = tid * {b_per} + u;\n"
                f"      Bs[{buf}][e / {BN}][e % {BN}] = rb[u]; }}\n")
    loads = "".join(a_load(str(u)) for u in range(a_per)) + "".join(b_load(str(u)) for u in range(b_per))
    store_cond = "if (r < m && c < n) " if checked else ""
    return (cache.header() +
            f"kernel void mm(const device {T}* a [[buffer(0)]], const device {T}* b [[buffer(1)]],\n"
            f"    device {T}* out [[buffer(2)]], constant uint& m [[buffer(3)]], constant uint& n [[buffer(4)]],\n"
            "    constant uint& k [[buffer(5)]],\n"
            "    uint3 gp [[threadgroup_position_in_grid]], uint tid [[thread_index_in_threadgroup]]) {\n"
            f"  threadgroup {A} As[2][{BK}][{BM}];\n  threadgroup {A} Bs[2][{BK}][{BN}];\n"
            f"  const uint row0 = gp.y * {BM}, col0 = gp.x * {BN};\n"
            "  const ulong abase = ulong(gp.z) * m * k, bbase = ulong(gp.z) * k * n;\n"
            f"  const uint tr = tid / {BN // TN}, tc = tid % {BN // TN};\n"
            f"  {A} acc[{TM}][{TN}];\n"
            "  #pragma unroll\n"
            f"  for (uint i = 0; i < {TM}; ++i)\n"
            "    #pragma unroll\n"
            f"    for (uint j = 0; j < {TN}; ++j) acc[i][j] = {A}(0);\n"
            f"  {A} ra[{a_per}], rb[{b_per}];\n"
            "  uint k0 = 0;\n"
            f"{loads}"
            f"{to_tile('0')}"
            "  threadgroup_barrier(mem_flags::mem_threadgroup);\n"
            "  uint cur = 0;\n"
            f"  for (k0 = {BK}; k0 < k + {BK}; k0 += {BK}) {{\n"
            "    const bool more = k0 < k;\n"
            "    if (more) {\n"
            f"{loads}"
            "    }\n"
            "    #pragma unroll\n"
            f"    for (uint kk = 0; kk < {BK}; ++kk) {{\n"
            f"      {A} av[{TM}], bv[{TN}];\n"
            "      #pragma unroll\n"
            f"      for (uint i = 0; i < {TM}; ++i) av[i] = As[cur][kk][tr * {TM} + i];\n"
            "      #pragma unroll\n"
            f"      for (uint j = 0; j < {TN}; ++j) bv[j] = Bs[cur][kk][tc * {TN} + j];\n"
            "      #pragma unroll\n"
            f"      for (uint i = 0; i < {TM}; ++i)\n"
            "        #pragma unroll\n"
            f"        for (uint j = 0; j < {TN}; ++j) acc[i][j] += av[i] * bv[j];\n"
            "    }\n"
            "    if (more) {\n"
            f"{to_tile('cur ^ 1')}"
            "    }\n"
            "    threadgroup_barrier(mem_flags::mem_threadgroup);\n"
            "    cur ^= 1;\n"
            "  }\n"
            "  #pragma unroll\n"
            f"  for (uint i = 0; i < {TM}; ++i)\n"
            "    #pragma unroll\n"
            f"    for (uint j = 0; j < {TN}; ++j) {{\n"
            f"    const uint r = row0 + tr * {TM} + i, c = col0 + tc * {TN} + j;\n"
            f"    {store_cond}out[ulong(gp.z) * m * n + ulong(r) * n + c] = {_store(T, is_bool, 'acc[i][j]')};\n"
            "  }\n}\n")


def matmul(dev: mc.Device, a: mc.Buffer, b: mc.Buffer, batch: int, m: int, n: int, k: int,
           dtype: Any) -> mc.Buffer:
    """(batch, m, k) @ (batch, k, n) of C-contiguous Buffers of `dtype`; a flat Buffer of
    batch * m * n elements of `dtype` (integers wrap; bool is logical or-of-ands)."""
    T = np.dtype(dtype)
    A = _acc(T)
    Ts, As = cache.msl_type(T), cache.msl_type(A)
    out = cache.empty(dev, batch * m * n, T, zeroed=k == 0)
    if batch * m * n == 0:
        return out
    if k == 0:  # empty sum: zeros, which new buffers already hold
        return out
    a, b = cache.nonempty(dev, a, T), cache.nonempty(dev, b, T)
    is_bool = T.kind == "b"
    if cache.uses_loops(dev):
        return _matmul_cpu(dev, a, b, out, batch, m, n, k, T, A)
    BM, BN, BK, TM, TN = TILE
    threads = (BM // TM) * (BN // TN)
    checked = m % BM != 0 or n % BN != 0 or k % BK != 0
    kern = cache.kernel(dev, _tiled_source(Ts, As, is_bool, checked, TILE), "mm")
    grid = (threads * -(-n // BN), -(-m // BM), batch)
    cache.launch(kern, grid, a, b, out, m, n, k, threadgroup=(threads, 1, 1))
    return out


def _matmul_cpu(dev: mc.Device, a: mc.Buffer, b: mc.Buffer, out: mc.Buffer, batch: int, m: int, n: int,
                k: int, T: np.dtype, A: np.dtype) -> mc.Buffer:
    """Packs A and B (matmul_cpu.py), then one work-item per block of C, each its own group."""
    Ts, As = cache.msl_type(T), cache.msl_type(A)
    mr, nr = matmul_cpu.tile()
    mp, np_ = -(-m // mr), -(-n // nr)
    pa = cache.empty(dev, batch * mp * k * mr, A)
    pb = cache.empty(dev, batch * np_ * k * nr, A)
    cache.launch(cache.kernel(dev, matmul_cpu.pack_a_source(Ts, As, mr), "pack_a"), (k * mr, mp, batch),
                 a, pa, m, k, mp)
    cache.launch(cache.kernel(dev, matmul_cpu.pack_b_source(Ts, As, nr), "pack_b"), (k * nr, np_, batch),
                 b, pb, n, k, np_)
    rb = matmul_cpu.row_block(k, A.itemsize, mp)
    kern = cache.kernel(dev, matmul_cpu.kernel_source(Ts, As, T.kind == "b", mr, nr), "mm")
    cache.launch(kern, (rb, np_, batch * -(-mp // rb)), pa, pb, out, m, n, k, mp, np_, rb, threadgroup=(1, 1, 1))
    return out
