"""Stable sort and argsort of each row of an (outer, n) array, for any n.

Values become unsigned keys whose order is the sort order (floats: sign-magnitude flipped,
-0.0 equal to +0.0, NaN the largest key, so NaNs sort last; descending complements the keys),
paired with their index. Ties broken by index make every pair distinct, so any sorting network
is stable. Blocks are sorted first (a bitonic network in threadgroup memory on GPUs, an
insertion sort per thread on the CPU backend), then merged pairwise in log2(n / block) passes:
on GPUs each element finds its place by a binary search in the neighbouring run; on the CPU each
thread merges a stretch of 4096 outputs sequentially from a merge-path split.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

import metalcall as mc

from . import cache

_GPU_BLOCK, _GPU_TG = 1024, 512
_CPU_BLOCK = 32
_CPU_SEGMENT = 4096  # outputs one CPU thread merges per pass


def _key_type(dtype: np.dtype) -> str:
    return "ulong" if dtype.itemsize == 8 else "uint"


def _key_expr(dtype: np.dtype) -> str:
    """MSL statements setting `key` (of the key type) from element `x`."""
    K = _key_type(dtype)
    if dtype.kind == "f":
        bits = {2: "ushort", 4: "uint", 8: "ulong"}[dtype.itemsize]
        top = f"{bits}({1 << (8 * dtype.itemsize - 1)}{'UL' if dtype.itemsize == 8 else 'u'})"
        return (f"{bits} u = as_type<{bits}>(x);\n"
                f"    if (x != x) u = {bits}(~{bits}(0));  // NaN (isnan has no double overload everywhere)\n"
                f"    else if (x == {cache.msl_type(dtype)}(0)) u = {top};  // -0.0 sorts as +0.0\n"
                f"    else u = (u & {top}) ? {bits}(~u) : {bits}(u | {top});\n"
                f"    {K} key = {K}(u);")
    if dtype.kind == "i":
        top = "0x8000000000000000UL" if dtype.itemsize == 8 else "0x80000000u"
        wide = "long" if dtype.itemsize == 8 else "int"
        return f"{K} key = {K}({wide}(x)) ^ {top};"
    return f"{K} key = {K}(x);"


@functools.lru_cache(maxsize=None)
def _keys_source(T: str, dtype: np.dtype, descending: bool) -> str:
    K = _key_type(dtype)
    flip = "key = ~key;" if descending else ""
    return (cache.header() +
            f"kernel void keys(const device {T}* src [[buffer(0)]], device {K}* ko [[buffer(1)]],\n"
            "    device uint* io [[buffer(2)]], constant uint& n [[buffer(3)]], uint2 g [[thread_position_in_grid]]) {\n"
            "  const ulong e = ulong(g.y) * n + g.x;\n"
            f"  const {T} x = src[e];\n"
            f"  {{\n    {_key_expr(dtype)}\n    {flip}\n    ko[e] = key;\n  }}\n"
            "  io[e] = g.x;\n}\n")


def _less(K: str) -> str:
    return (f"inline bool less({K} a, uint ai, {K} b, uint bi) {{ return a < b || (a == b && ai < bi); }}\n")


@functools.lru_cache(maxsize=None)
def _block_gpu_source(K: str, TG: int) -> str:
    """Sorts blocks of _GPU_BLOCK keys, one per threadgroup of TG threads."""
    B = _GPU_BLOCK
    return (cache.header() + _less(K) +
            f"kernel void block(device {K}* ks [[buffer(0)]], device uint* is [[buffer(1)]],\n"
            "    constant uint& n [[buffer(2)]], uint2 gp [[threadgroup_position_in_grid]],\n"
            "    uint tid [[thread_index_in_threadgroup]]) {\n"
            f"  threadgroup {K} sk[{B}];\n  threadgroup uint si[{B}];\n"
            f"  const uint j0 = gp.x * {B};\n  const ulong base = ulong(gp.y) * n;\n"
            f"  for (uint t = tid; t < {B}; t += {TG}) {{\n"
            "    const uint j = j0 + t;\n"
            f"    sk[t] = j < n ? ks[base + j] : {K}(~{K}(0));\n"
            "    si[t] = j < n ? is[base + j] : 0xFFFFFFFFu;\n  }\n"
            "  threadgroup_barrier(mem_flags::mem_threadgroup);\n"
            f"  for (uint size = 2; size <= {B}; size <<= 1) {{\n"
            "    for (uint stride = size >> 1; stride > 0; stride >>= 1) {\n"
            f"      for (uint t = tid; t < {B // 2}; t += {TG}) {{\n"
            "        const uint lo = 2 * t - (t & (stride - 1)), hi = lo + stride;\n"
            "        const bool up = (lo & size) == 0;\n"
            f"        const {K} a = sk[lo], b = sk[hi];\n"
            "        const uint ai = si[lo], bi = si[hi];\n"
            "        if (less(b, bi, a, ai) == up) { sk[lo] = b; sk[hi] = a; si[lo] = bi; si[hi] = ai; }\n"
            "      }\n"
            "      threadgroup_barrier(mem_flags::mem_threadgroup);\n    }\n  }\n"
            f"  for (uint t = tid; t < {B}; t += {TG}) {{\n"
            "    const uint j = j0 + t;\n"
            "    if (j < n) { ks[base + j] = sk[t]; is[base + j] = si[t]; }\n  }\n}\n")


@functools.lru_cache(maxsize=None)
def _block_cpu_source(K: str) -> str:
    B = _CPU_BLOCK
    return (cache.header() + _less(K) +
            f"kernel void block(device {K}* ks [[buffer(0)]], device uint* is [[buffer(1)]],\n"
            "    constant uint& n [[buffer(2)]], uint2 g [[thread_position_in_grid]]) {\n"
            f"  const uint j0 = g.x * {B}, j1 = min(n, j0 + {B});\n"
            "  const ulong base = ulong(g.y) * n;\n"
            "  for (uint j = j0 + 1; j < j1; ++j) {\n"
            f"    const {K} k = ks[base + j]; const uint i = is[base + j];\n"
            "    uint p = j;\n"
            "    while (p > j0 && less(k, i, ks[base + p - 1], is[base + p - 1])) {\n"
            "      ks[base + p] = ks[base + p - 1]; is[base + p] = is[base + p - 1]; --p;\n    }\n"
            "    ks[base + p] = k; is[base + p] = i;\n  }\n}\n")


@functools.lru_cache(maxsize=None)
def _merge_source(K: str) -> str:
    """One merge pass: runs of length w, pairs (2r, 2r+1) merged into the output arrays."""
    return (cache.header() + _less(K) +
            f"kernel void merge(const device {K}* ks [[buffer(0)]], const device uint* is [[buffer(1)]],\n"
            f"    device {K}* ko [[buffer(2)]], device uint* io [[buffer(3)]], constant uint& n [[buffer(4)]],\n"
            "    constant uint& w [[buffer(5)]], uint2 g [[thread_position_in_grid]]) {\n"
            "  const uint p = g.x;\n  const ulong base = ulong(g.y) * n;\n"
            f"  const {K} k = ks[base + p];\n  const uint i = is[base + p];\n"
            "  const uint run = p / w, start = run * w;\n"
            "  const bool left = (run & 1) == 0;\n"
            "  const uint ps = left ? start + w : start - w;\n"
            "  uint dst = p;\n"
            "  if (ps < n) {\n"
            "    uint lo = ps, hi = min(n, ps + w);\n"
            "    // the first partner element not before (k, i): left runs win ties against the right\n"
            "    while (lo < hi) {\n"
            "      const uint mid = lo + (hi - lo) / 2;\n"
            "      if (less(ks[base + mid], is[base + mid], k, i)) lo = mid + 1; else hi = mid;\n    }\n"
            "    const uint before = lo - ps;\n"
            "    dst = (left ? start : ps) + (p - start) + before;\n  }\n"
            "  ko[base + dst] = k;\n  io[base + dst] = i;\n}\n")


@functools.lru_cache(maxsize=None)
def _merge_path_source(K: str) -> str:
    """One merge pass for the CPU backend: thread s writes outputs [s*S, s*S + S) of its pair of
    runs sequentially, after a binary search for where that stretch starts in each run (merge
    path). Linear work per pass instead of a search per element. S divides 2w."""
    return (cache.header() + _less(K) +
            f"kernel void merge(const device {K}* ks [[buffer(0)]], const device uint* is [[buffer(1)]],\n"
            f"    device {K}* ko [[buffer(2)]], device uint* io [[buffer(3)]], constant uint& n [[buffer(4)]],\n"
            "    constant uint& w [[buffer(5)]], constant uint& S [[buffer(6)]], uint2 g [[thread_position_in_grid]]) {\n"
            "  const ulong row = ulong(g.y) * n;\n"
            "  const uint out0 = g.x * S;\n"
            "  if (out0 >= n) return;\n"
            "  const uint base = out0 / (2 * w) * (2 * w);\n"
            "  const uint la = min(w, n - base), lb = base + w < n ? min(w, n - base - w) : 0u;\n"
            "  const uint d0 = out0 - base, d1 = min(d0 + S, la + lb);\n"
            "  const ulong A = row + base, B = row + base + la;\n"
            "  uint lo = d0 > lb ? d0 - lb : 0u, hi = min(d0, la);\n"
            "  while (lo < hi) {\n"
            "    const uint mid = lo + (hi - lo) / 2;\n"
            "    if (less(ks[A + mid], is[A + mid], ks[B + d0 - 1 - mid], is[B + d0 - 1 - mid])) lo = mid + 1; else hi = mid;\n"
            "  }\n"
            "  uint i = lo, j = d0 - lo;\n"
            "  for (uint d = d0; d < d1; ++d) {\n"
            "    const bool take_a = j >= lb || (i < la && less(ks[A + i], is[A + i], ks[B + j], is[B + j]));\n"
            "    if (take_a) { ko[A + d] = ks[A + i]; io[A + d] = is[A + i]; ++i; }\n"
            "    else { ko[A + d] = ks[B + j]; io[A + d] = is[B + j]; ++j; }\n"
            "  }\n}\n")


@functools.lru_cache(maxsize=None)
def _gather_source(T: str, values: bool) -> str:
    out = T if values else "long"
    val = "src[base + is[base + j]]" if values else "long(is[base + j])"
    return (cache.header() +
            f"kernel void gather(const device {T}* src [[buffer(0)]], const device uint* is [[buffer(1)]],\n"
            f"    device {out}* dst [[buffer(2)]], constant uint& n [[buffer(3)]], uint2 g [[thread_position_in_grid]]) {{\n"
            "  const uint j = g.x;\n  const ulong base = ulong(g.y) * n;\n"
            f"  dst[base + j] = {val};\n}}\n")


def _order(dev: mc.Device, src: mc.Buffer, T: np.dtype, outer: int, n: int, descending: bool) -> mc.Buffer:
    """The sorted index of every row (uint32, flat outer * n)."""
    Ts, K = cache.msl_type(T), _key_type(T)
    kdt = np.uint64 if K == "ulong" else np.uint32
    keys = [cache.empty(dev, outer * n, kdt), cache.empty(dev, outer * n, kdt)]
    idx = [cache.empty(dev, outer * n, np.uint32), cache.empty(dev, outer * n, np.uint32)]
    cache.launch(cache.kernel(dev, _keys_source(Ts, T, descending), "keys", fast_math=False), (n, outer),
                 src, keys[0], idx[0], n)
    if cache.uses_loops(dev):
        block = _CPU_BLOCK
        cache.launch(cache.kernel(dev, _block_cpu_source(K), "block"), (-(-n // block), outer), keys[0], idx[0], n)
    else:
        block = _GPU_BLOCK
        # As many threads as the pipeline allows, up to _GPU_TG (cache.sized_kernel).
        kern, tg = cache.sized_kernel(dev, lambda tg, _: _block_gpu_source(K, tg), "block", _GPU_TG)
        cache.launch(kern, (tg * -(-n // block), outer), keys[0], idx[0], n, threadgroup=(tg, 1))
    cur, w = 0, block
    if cache.uses_loops(dev):
        merge = cache.kernel(dev, _merge_path_source(K), "merge")
        while w < n:
            seg = min(2 * w, _CPU_SEGMENT)
            cache.launch(merge, (-(-n // seg), outer), keys[cur], idx[cur], keys[cur ^ 1], idx[cur ^ 1], n, w, seg)
            cur ^= 1
            w *= 2
        return idx[cur]
    merge = cache.kernel(dev, _merge_source(K), "merge")
    while w < n:
        cache.launch(merge, (n, outer), keys[cur], idx[cur], keys[cur ^ 1], idx[cur ^ 1], n, w)
        cur ^= 1
        w *= 2
    return idx[cur]


def _sorted(dev: mc.Device, src: mc.Buffer, dtype: Any, outer: int, n: int, descending: bool,
            values: bool) -> mc.Buffer:
    T = np.dtype(dtype)
    out = cache.empty(dev, outer * n, T if values else np.int64)
    if outer * n == 0:
        return out
    order = _order(dev, src, T, outer, n, descending)
    k = cache.kernel(dev, _gather_source(cache.msl_type(T), values), "gather")
    cache.launch(k, (n, outer), src, order, out, n)
    return out


def sort(dev: mc.Device, src: mc.Buffer, dtype: Any, outer: int, n: int, descending: bool = False) -> mc.Buffer:
    """Each row of the (outer, n) array sorted (NaNs last; descending is the reverse order with
    NaNs first, as flipping an ascending sort gives); a flat Buffer of outer * n elements."""
    return _sorted(dev, src, dtype, outer, n, descending, True)


def argsort(dev: mc.Device, src: mc.Buffer, dtype: Any, outer: int, n: int, descending: bool = False) -> mc.Buffer:
    """The stable sorting permutation of each row as int64 (equal elements keep their order,
    also when descending)."""
    return _sorted(dev, src, dtype, outer, n, descending, False)
