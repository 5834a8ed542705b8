"""Small systems on GPUs, rows in registers: a system takes S lanes of a SIMD-group (S the power of
two covering its n rows, to 32: 32 / S systems share a SIMD-group) and lane i holds rows i, i + S,
... of [A | B] as plain variables (the source is generated per n and nrhs, so every column index is
a constant and nothing spills to memory). Each step of getrf's elimination finds the pivot by a
butterfly over the system's lanes (the first largest |re| + |im| in getrf's swapped order: each
row keeps its place in that order, and a swap exchanges two places), broadcasts the pivot row
column by column with shuffles and updates the rows below; back substitution broadcasts each
solved row the same way. No threadgroup memory and no barriers: linalg_small_solve.py's kernel
pays about six threadgroup barriers per column, which for 32x32 systems cost more than the
arithmetic. Every lane runs the same steps (the loops' bounds are the same for all, the branches
around shuffles are uniform, lanes past the last system solve a copy of it), so the SIMD functions
see whole SIMD-groups, CUDA's warps included. `info` is getrf's: k + 1 for the first exactly zero
pivot.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

import metalcall as mc

from . import cache, linalg_common as lc

WIDTH = 32  # lanes of a SIMD-group (CUDA's warp, Apple GPUs')
MAX_WORDS = 136  # 32-bit registers a lane may spend on its rows (past that they spill)


def lanes_per_system(n: int) -> int:
    """A system's lanes: the power of two that covers its rows up to 32 (WIDTH / that many systems
    share a SIMD-group), else 32 with two or more rows a lane."""
    s = 1
    while s < n and s < WIDTH:
        s *= 2
    return s


def rows_per_lane(n: int) -> int:
    return -(-n // lanes_per_system(n))


def usable(dev: mc.Device, n: int, nrhs: int, dtype: Any, batch: int = 1) -> bool:
    """Whether systems of n equations with nrhs right-hand sides take this kernel on dev: a GPU
    whose SIMD-groups are 32 wide, and rows that fit MAX_WORDS registers a lane."""
    if cache.uses_loops(dev) or dev.simd_width != WIDTH or n < 1:
        return False
    words = np.dtype(dtype).itemsize // 4
    return rows_per_lane(n) * (n + nrhs) * words <= MAX_WORDS


def _shuffle(dt: np.dtype) -> str:
    if dt.kind == "c":
        return "inline $T la_shuffle($T a, ushort l) { return la_make(simd_shuffle(a.re, l), simd_shuffle(a.im, l)); }\n"
    return "inline $T la_shuffle($T a, ushort l) { return simd_shuffle(a, l); }\n"


@functools.lru_cache(maxsize=64)
def source(n: int, nrhs: int, dtype: Any, groups: int) -> str:
    """The MSL of the kernel for n x n systems with nrhs right-hand sides, `groups` SIMD-groups per
    threadgroup."""
    dt = np.dtype(dtype)
    rows, width, S = rows_per_lane(n), n + nrhs, lanes_per_system(n)
    cols = range(width)
    L = []  # the kernel body, line by line
    add = L.append
    add("  const uint lane = gid % S;  // this lane in its system's S lanes")
    add("  const ushort base = ushort(simd_lane - lane);  // their first lane in the SIMD-group")
    # Lanes past the last system solve a copy of it and write nothing: SIMD-groups stay whole.
    add("  const bool mine = gid / S < batch;")
    add("  const uint g = mine ? gid / S : batch - 1;")
    add("  const $T zero = la_make($R(0), $R(0));")
    add("  const device $T* A = a + ulong(g) * N * N;")
    add("  const device $T* Bm = b + ulong(b_batch ? g : 0) * N * K;")
    for q in range(rows):
        add(f"  const uint row{q} = lane + {q * S}u;  // this lane's row q, and its place in getrf's order")
        add(f"  const bool live{q} = row{q} < N;")
        add(f"  uint pos{q} = row{q};")
        add(f"  $T diag{q} = zero;")
        for c in cols:
            src = f"A[row{q} * N + {c}u]" if c < n else f"(identity ? la_make($R(row{q} == {c - n}u ? 1 : 0), $R(0)) : Bm[row{q} * K + {c - n}u])"
            add(f"  $T r{q}_{c} = live{q} ? {src} : zero;")
    add("  int status = 0;")
    add("  for (uint k = 0; k < N; ++k) {")
    for q in range(rows):
        add(f"    $T k{q} = r{q}_0;")
        for c in range(1, n):
            add(f"    if (k == {c}u) k{q} = r{q}_{c};")
    # The pivot: the largest size among the rows at places >= k (pivot_size: a NaN first in place
    # wins, elsewhere loses; every lane orders the same way), the first place on ties;
    # key = place << 8 | q << 5 | lane.
    add("    $R best = $R(-2);")
    add("    uint key = 0xffffffffu;")
    for q in range(rows):
        add(f"    if (live{q} && pos{q} >= k) {{")
        add(f"      const $R v = pivot_size(la_abs1(k{q}), pos{q} == k);")
        add(f"      const uint kk = (pos{q} << 8) | ({q}u << 5) | lane;")
        add(f"      if (v > best || (v == best && kk < key)) {{ best = v; key = kk; }}")
        add("    }")
    add("    for (ushort d = S / 2; d > 0; d >>= 1) {  // within the system's lanes")
    add("      const $R ob = simd_shuffle_xor(best, d);")
    add("      const uint ok = simd_shuffle_xor(key, d);")
    add("      if (ob > best || (ob == best && ok < key)) { best = ob; key = ok; }")
    add("    }")
    add("    const ushort pl = base + ushort(key & 31u);")
    add("    const uint pq = (key >> 5) & 7u, pp = key >> 8;")
    sel = lambda name: " : ".join([f"pq == {q}u ? {name.format(q=q)}" for q in range(rows - 1)] + [name.format(q=rows - 1)])
    add(f"    const $T d = la_shuffle({sel('k{q}')}, pl);")
    add("    if (la_iszero(d) && status == 0) status = int(k + 1);")
    for q in range(rows):
        add(f"    if (simd_lane == pl && pq == {q}u) {{ pos{q} = k; diag{q} = d; }} else if (pos{q} == k) pos{q} = pp;")
    add("    if (!la_iszero(d)) {")
    for q in range(rows):
        add(f"      const bool below{q} = live{q} && pos{q} > k;")
        add(f"      const $T l{q} = la_div(k{q}, d);")
    for c in cols:
        guard = f"if (k < {c}u) " if c < n else ""
        add(f"      {guard}{{")
        add(f"        const $T p = la_shuffle({sel('r{q}_' + str(c))}, pl);")
        for q in range(rows):
            add(f"        if (below{q}) r{q}_{c} = la_sub(r{q}_{c}, la_mul(l{q}, p));")
        add("      }")
    add("    }")
    add("  }")
    # U X = Y, backwards: the row at place k divides by its diagonal, the rows above subtract.
    add("  for (uint k = N; k-- > 0;) {")
    add("    uint owner = 0xffffffffu;")
    for q in range(rows):
        add(f"    if (live{q} && pos{q} == k) {{")
        for c in range(n, width):
            add(f"      r{q}_{c} = la_div(r{q}_{c}, diag{q});")
        add(f"      owner = ({q}u << 5) | lane;")
        add("    }")
    add("    for (ushort d = S / 2; d > 0; d >>= 1) owner = min(owner, simd_shuffle_xor(owner, d));")
    add("    const ushort ol = base + ushort(owner & 31u);")
    add("    const uint oq = owner >> 5;")
    for q in range(rows):
        add(f"    $T u{q} = r{q}_0;")
        for c in range(1, n):
            add(f"    if (k == {c}u) u{q} = r{q}_{c};")
    osel = lambda name: " : ".join([f"oq == {q}u ? {name.format(q=q)}" for q in range(rows - 1)] + [name.format(q=rows - 1)])
    for c in range(n, width):
        add("    {")
        add(f"      const $T x = la_shuffle({osel('r{q}_' + str(c))}, ol);")
        for q in range(rows):
            add(f"      if (live{q} && pos{q} < k) r{q}_{c} = la_sub(r{q}_{c}, la_mul(u{q}, x));")
        add("    }")
    add("  }")
    add("  if (!mine) return;")
    add("  device $T* X = x + ulong(g) * N * K;")
    for q in range(rows):
        add(f"  if (live{q}) {{")
        for c in range(n, width):
            add(f"    X[pos{q} * K + {c - n}u] = r{q}_{c};")
        add("  }")
    add("  if (lane == 0) info[g] = status;")
    text = (_shuffle(dt) +
            "constant constexpr uint N = $N;\nconstant constexpr uint K = $K;\nconstant constexpr uint S = $S;\n"
            "kernel void warp_solve(const device $T* a [[buffer(0)]], const device $T* b [[buffer(1)]],\n"
            "                       device $T* x [[buffer(2)]], device int* info [[buffer(3)]],\n"
            "                       constant uint& batch [[buffer(4)]], constant uint& identity [[buffer(5)]],\n"
            "                       constant uint& b_batch [[buffer(6)]],\n"
            "                       uint gid [[thread_position_in_grid]], uint simd_lane [[thread_index_in_simdgroup]]) {\n"
            + "\n".join(L) + "\n}\n")
    return lc.render(text, dt, WIDTH * groups, N=f"{n}u", K=f"{nrhs}u", S=f"{S}u")


def solve(dev: mc.Device, a: mc.Buffer, b: mc.Buffer | None, batch: int, n: int, nrhs: int, dtype: Any, *,
          b_batched: bool = True, groups: int = 8) -> tuple[mc.Buffer, mc.Buffer]:
    """(X, info) with A X = B for each of `batch` n x n matrices A (`b` None: B = I, the inverse); B is
    (batch or 1, n, nrhs). X is undefined where info is not 0 (a zero pivot). `groups`: SIMD-groups a
    threadgroup (on the H200, 8 beat 4 for 10000 systems of 4x4, 0.033 against 0.039 ms a call and
    wait, and matched it from 16x16 to 64x64)."""
    dt = lc.float_type(dtype, complex_ok=True)
    x = cache.empty(dev, batch * n * nrhs, dt)
    info = cache.empty(dev, batch, np.int32)
    src = b if b is not None else cache.nonempty(dev, cache.empty(dev, 0, dt), dt)
    groups = max(1, min(groups, -(-batch * lanes_per_system(n) // WIDTH)))
    kern = cache.kernel(dev, source(n, nrhs, dt.str, groups), "warp_solve", fast_math=False)
    tg = WIDTH * groups
    grid = -(-batch * lanes_per_system(n) // tg) * tg
    cache.launch(kern, grid, a, src, x, info, batch, int(b is None), int(b_batched), threadgroup=(tg, 1, 1))
    return x, info
