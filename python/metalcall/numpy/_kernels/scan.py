"""Cumulative sum over the middle axis of (outer, n, inner): each row is cut into chunks; the
chunk sums are scanned into offsets, then every chunk is scanned from its offset (block scan +
block sums). GPUs scan inner == 1 rows with SIMD prefix sums in threadgroups; the CPU backend and
inner > 1 use plain per-thread loops."""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

import metalcall as mc

from . import cache, reduce

_TG = 256
_PER_THREAD = 8  # consecutive elements each thread of a GPU scan holds


@functools.lru_cache(maxsize=None)
def _loop_sums(T: str, A: str) -> str:
    return (cache.header() +
            f"kernel void sums(const device {T}* src [[buffer(0)]], device {A}* part [[buffer(1)]],\n"
            "    constant uint& n [[buffer(2)]], constant uint& inner [[buffer(3)]],\n"
            "    constant uint& chunk [[buffer(4)]], constant uint& C [[buffer(5)]],\n"
            "    uint t [[thread_position_in_grid]]) {\n"
            "  const uint i = t % inner, c = (t / inner) % C, o = t / inner / C;\n"
            "  const ulong base = ulong(o) * n * inner + i;\n"
            "  const uint j0 = c * chunk, j1 = min(n, j0 + chunk);\n"
            f"  {A} acc = 0;\n"
            f"  for (uint j = j0; j < j1; ++j) acc += ({A})src[base + ulong(j) * inner];\n"
            "  part[(ulong(o) * C + c) * inner + i] = acc;\n}\n")


@functools.lru_cache(maxsize=None)
def _loop_offsets(A: str) -> str:
    """Exclusive scan of the C chunk sums of each (o, i), in place."""
    return (cache.header() +
            f"kernel void offsets(device {A}* part [[buffer(0)]], constant uint& inner [[buffer(1)]],\n"
            "    constant uint& C [[buffer(2)]], uint t [[thread_position_in_grid]]) {\n"
            "  const uint i = t % inner, o = t / inner;\n"
            f"  {A} acc = 0;\n"
            "  for (uint c = 0; c < C; ++c) {\n"
            "    const ulong k = (ulong(o) * C + c) * inner + i;\n"
            f"    const {A} s = part[k]; part[k] = acc; acc += s;\n  }}\n}}\n")


@functools.lru_cache(maxsize=None)
def _loop_scan(T: str, A: str, D: str) -> str:
    return (cache.header() +
            f"kernel void scan(const device {T}* src [[buffer(0)]], device {D}* dst [[buffer(1)]],\n"
            f"    const device {A}* off [[buffer(2)]], constant uint& n [[buffer(3)]],\n"
            "    constant uint& inner [[buffer(4)]], constant uint& chunk [[buffer(5)]],\n"
            "    constant uint& C [[buffer(6)]], uint t [[thread_position_in_grid]]) {\n"
            "  const uint i = t % inner, c = (t / inner) % C, o = t / inner / C;\n"
            "  const ulong base = ulong(o) * n * inner + i;\n"
            "  const uint j0 = c * chunk, j1 = min(n, j0 + chunk);\n"
            f"  {A} acc = off[(ulong(o) * C + c) * inner + i];\n"
            "  for (uint j = j0; j < j1; ++j) {\n"
            f"    acc += ({A})src[base + ulong(j) * inner];\n"
            f"    dst[base + ulong(j) * inner] = {D}(acc);\n  }}\n}}\n")


@functools.lru_cache(maxsize=None)
def _group_scan(T: str, A: str, D: str, exclusive: bool, tg: int, w: int) -> str:
    """Threadgroup (c, o) scans chunk c of row o from off[o * C + c], one tile of tg * E elements
    at a time: each thread scans E consecutive elements in registers, SIMD prefix sums combine
    the threads' totals, and the first SIMD-group scans the SIMD-group totals."""
    nw, e = tg // w, _PER_THREAD
    local = "v[u] = run; run += x;" if exclusive else "run += x; v[u] = run;"
    return (cache.header() +
            f"kernel void scan(const device {T}* src [[buffer(0)]], device {D}* dst [[buffer(1)]],\n"
            f"    const device {A}* off [[buffer(2)]], constant uint& n [[buffer(3)]],\n"
            "    constant uint& inner [[buffer(4)]], constant uint& chunk [[buffer(5)]],\n"
            "    constant uint& C [[buffer(6)]],\n"
            "    uint2 gp [[threadgroup_position_in_grid]], uint tid [[thread_index_in_threadgroup]],\n"
            "    uint lane [[thread_index_in_simdgroup]], uint sg [[simdgroup_index_in_threadgroup]]) {\n"
            f"  threadgroup {A} tot[{nw}];\n  threadgroup {A} pre[{nw + 1}];\n"
            "  const uint c = gp.x, o = gp.y;\n"
            "  const ulong base = ulong(o) * n;\n"
            "  const uint j0 = c * chunk, j1 = min(n, j0 + chunk);\n"
            f"  {A} carry = off[ulong(o) * C + c];\n"
            f"  for (uint t0 = j0; t0 < j1; t0 += {tg * e}) {{\n"
            f"    const uint jt = t0 + tid * {e};\n"
            f"    {A} v[{e}];\n    {A} run = {A}(0);\n"
            f"    for (uint u = 0; u < {e}; ++u) {{\n"
            f"      const {A} x = jt + u < j1 ? ({A})src[base + jt + u] : {A}(0);\n"
            f"      {local}\n    }}\n"
            f"    const {A} ex = simd_prefix_exclusive_sum(run);\n"
            f"    if (lane == {w - 1}) tot[sg] = ex + run;\n"
            "    threadgroup_barrier(mem_flags::mem_threadgroup);\n"
            "    if (sg == 0) {\n"
            f"      const {A} s = lane < {nw} ? tot[lane] : {A}(0);\n"
            f"      const {A} e = simd_prefix_exclusive_sum(s);\n"
            f"      const {A} all = simd_sum(s);\n"
            f"      if (lane < {nw}) pre[lane] = e;\n"
            f"      if (lane == 0) pre[{nw}] = all;\n"
            "    }\n"
            "    threadgroup_barrier(mem_flags::mem_threadgroup);\n"
            f"    const {A} start = carry + pre[sg] + ex;\n"
            f"    for (uint u = 0; u < {e}; ++u)\n"
            f"      if (jt + u < j1) dst[base + jt + u] = {D}(start + v[u]);\n"
            f"    carry += pre[{nw}];\n"
            "    threadgroup_barrier(mem_flags::mem_threadgroup);\n  }\n}\n")


def cumsum(dev: mc.Device, src: mc.Buffer, dtype: Any, outer: int, n: int, inner: int,
           out_dtype: Any) -> mc.Buffer:
    """Inclusive cumulative sum over n of the (outer, n, inner) array; a flat Buffer of
    outer * n * inner elements of out_dtype, accumulated in out_dtype (float for half)."""
    T, D = np.dtype(dtype), np.dtype(out_dtype)
    if D.kind == "b":
        raise mc.ArgumentError("cumsum needs a numeric out_dtype, got bool")
    A = cache.accumulator(D)
    Ts, As, Ds = cache.msl_type(T), cache.msl_type(A), cache.msl_type(D)
    out = cache.empty(dev, outer * n * inner, D)
    if outer * n * inner == 0:
        return out
    group = inner == 1 and n >= 64 and not cache.uses_loops(dev)
    c = reduce._chunks(dev, outer, n, inner, group)
    c = min(c, 1024 if group else 256)
    chunk = -(-n // c)
    c = -(-n // chunk)
    rows = outer * inner
    off = cache.empty(dev, rows * c, A, zeroed=c == 1)  # zeros: the offsets of a single chunk
    if group:
        # SIMD shuffles over the width each pipeline runs with, threadgroups each allows (cache.sized_kernel).
        if c > 1:
            part = cache.empty(dev, rows * c, A)
            sums, tg = cache.sized_kernel(
                dev, lambda tg, w: reduce._group_source("sum", Ts, As, As, True, False, False, "0", tg, w), "red",
                _TG, simd=True)
            cache.launch(sums, (tg * c, outer), src, part, n, 1, chunk, c, threadgroup=(tg, 1))
            zero = cache.empty(dev, outer, A, zeroed=True)
            k, tg = cache.sized_kernel(dev, lambda tg, w: _group_scan(As, As, As, True, tg, w), "scan", _TG, simd=True)
            cache.launch(k, (tg, outer), part, off, zero, c, 1, c, 1, threadgroup=(tg, 1))
        k, tg = cache.sized_kernel(dev, lambda tg, w: _group_scan(Ts, As, Ds, False, tg, w), "scan", _TG, simd=True)
        cache.launch(k, (tg * c, outer), src, out, off, n, 1, chunk, c, threadgroup=(tg, 1))
        return out
    if c > 1:
        cache.launch(cache.kernel(dev, _loop_sums(Ts, As), "sums"), rows * c, src, off, n, inner, chunk, c)
        cache.launch(cache.kernel(dev, _loop_offsets(As), "offsets"), rows, off, inner, c)
    cache.launch(cache.kernel(dev, _loop_scan(Ts, As, Ds), "scan"), rows * c, src, out, off, n, inner,
                 chunk, c)
    return out
