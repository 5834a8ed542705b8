"""The CPU backend's matrix-vector products: (batch, m, k) @ (batch, k, n) with m == 1 or n == 1.

The packed product of matmul_cpu.py pads a vector to a whole register block (8 x 16 elements of
C for each one wanted) and, for a deep k, runs one call per 1024 steps: `x @ y` of two 1e6
float32 vectors took 54 ms (977 calls on one core), a 1000 x 1000 matrix times a vector 0.9 ms.
Here each work-item reads its operands once, contiguously:

* n == 1 (matrix times vector, and dot products): work-item (r, p, z) sums row r of matrix z
  against the vector over part p of k, one plain loop that fast math lets the compiler
  vectorise with several accumulators.
* m == 1 (vector times matrix): work-item (c, p, z) keeps _COLUMNS columns' sums and streams
  their rows of B over part p of k, a column's sum in order of k.

k is split into parts (a second kernel adding them, in order) only when there are too few rows or
column blocks to give every core work.
"""

from __future__ import annotations

import functools

import metalcall as mc
import numpy as np

from . import cache

# Rows a matrix-times-vector work-item sums in one pass over the vector: four streams of A.
_ROWS = 4
# Columns a vector-times-matrix work-item sums: 4 KiB of float32 accumulators in the core's L1,
# a 4 KiB run of each row of B (64 columns in registers read rows 16 KiB apart at n = 4096: 8.2 ms
# where NumPy took 1.5).
_COLUMNS = 1024
# Work-items from which k is not split: enough for the cores of a large host.
_ENOUGH_ITEMS = 64
# Steps of k a part takes at least (a part's fixed cost against 4096 multiply-adds).
_MIN_PART = 4096


@functools.lru_cache(maxsize=None)
def _rows_source(T: str, A: str, split: bool) -> str:
    """n == 1: out[z, r] (or the part's partial sum) = a[z, r, :] . x[z, :] over steps [k0, k1),
    for the work-item's _ROWS rows (fewer at the end): one pass over the vector for all of them."""
    D = A if split else T
    R = _ROWS
    rows = range(R)
    return (cache.header() +
            f"kernel void mv(const device {T}* a [[buffer(0)]], const device {T}* x [[buffer(1)]],\n"
            f"    device {D}* out [[buffer(2)]], constant uint& m [[buffer(3)]], constant uint& k [[buffer(4)]],\n"
            "    constant uint& part [[buffer(5)]], constant uint& parts [[buffer(6)]],\n"
            "    uint3 g [[thread_position_in_grid]]) {\n"
            f"  const uint r0 = g.x * {R}u, p = g.y, z = g.z;\n"
            "  const uint k0 = p * part, k1 = min(k, k0 + part);\n"
            f"  const device {T}* v = x + ulong(z) * k;\n"
            f"  device {D}* o = out + (ulong(z) * parts + p) * m + r0;\n"
            f"  if (r0 + {R}u <= m) {{\n"
            + "".join(f"    const device {T}* row{i} = a + (ulong(z) * m + r0 + {i}u) * k;\n" for i in rows)
            + "".join(f"    {A} acc{i} = {A}(0);\n" for i in rows)
            + "    for (uint j = k0; j < k1; ++j) {\n"
            f"      const {A} vj = {A}(v[j]);\n"
            + "".join(f"      acc{i} += {A}(row{i}[j]) * vj;\n" for i in rows)
            + "    }\n"
            + "".join(f"    o[{i}] = {D}(acc{i});\n" for i in rows)
            + "    return;\n  }\n"
            "  for (uint r = r0; r < m; ++r) {\n"
            f"    const device {T}* row = a + (ulong(z) * m + r) * k;\n"
            f"    {A} acc = {A}(0);\n"
            f"    for (uint j = k0; j < k1; ++j) acc += {A}(row[j]) * {A}(v[j]);\n"
            f"    o[r - r0] = {D}(acc);\n"
            "  }\n}\n")


@functools.lru_cache(maxsize=None)
def _columns_source(T: str, A: str, split: bool) -> str:
    """m == 1: out[z, c] (or the part's partial sum) = x[z, :] . b[z, :, c] for the work-item's
    _COLUMNS columns over steps [k0, k1); a block past n's end takes its columns one by one."""
    D = A if split else T
    W = _COLUMNS

    def columns(count: str) -> str:  # the sums of `count` columns over the steps, then their stores
        return ("  for (uint j = k0; j < k1; ++j) {\n"
                f"    const {A} vj = {A}(v[j]);\n"
                f"    const device {T}* rowj = cols + ulong(j) * n;\n"
                f"    for (uint u = 0; u < {count}; ++u) acc[u] += vj * {A}(rowj[u]);\n"
                "  }\n"
                f"  for (uint u = 0; u < {count}; ++u) o[u] = {D}(acc[u]);\n")

    return (cache.header() +
            f"kernel void vm(const device {T}* x [[buffer(0)]], const device {T}* b [[buffer(1)]],\n"
            f"    device {D}* out [[buffer(2)]], constant uint& n [[buffer(3)]], constant uint& k [[buffer(4)]],\n"
            "    constant uint& part [[buffer(5)]], constant uint& parts [[buffer(6)]],\n"
            "    uint3 g [[thread_position_in_grid]]) {\n"
            "  const uint p = g.y, z = g.z;\n"
            f"  const uint c0 = g.x * {W}u, k0 = p * part, k1 = min(k, k0 + part);\n"
            f"  const device {T}* v = x + ulong(z) * k;\n"
            f"  const device {T}* cols = b + ulong(z) * k * n + c0;\n"
            f"  device {D}* o = out + (ulong(z) * parts + p) * n + c0;\n"
            f"  {A} acc[{W}];\n"
            f"  for (uint u = 0; u < {W}u; ++u) acc[u] = {A}(0);\n"
            f"  if (c0 + {W}u <= n) {{\n{columns(f'{W}u')}    return;\n  }}\n"
            "  const uint nc = n - c0;\n"
            f"{columns('nc')}}}\n")


@functools.lru_cache(maxsize=None)
def _parts_source(T: str, A: str) -> str:
    """out[z, i] = the sum, in order, of the parts' partial sums of result i of matrix z."""
    return (cache.header() +
            f"kernel void add_parts(const device {A}* s [[buffer(0)]], device {T}* out [[buffer(1)]],\n"
            "    constant uint& count [[buffer(2)]], constant uint& parts [[buffer(3)]],\n"
            "    uint2 g [[thread_position_in_grid]]) {\n"
            "  const uint i = g.x, z = g.y;\n"
            f"  const device {A}* q = s + ulong(z) * parts * count + i;\n"
            f"  {A} acc = q[0];\n"
            "  for (uint p = 1; p < parts; ++p) acc += q[ulong(p) * count];\n"
            f"  out[ulong(z) * count + i] = {T}(acc);\n}}\n")


def _parts(items: int, k: int) -> int:
    """How many parts of k each work-item's sum is split into."""
    if items >= _ENOUGH_ITEMS:
        return 1
    return max(1, min(-(-_ENOUGH_ITEMS // items), k // _MIN_PART))


def product(dev: mc.Device, a: mc.Buffer, b: mc.Buffer, out: mc.Buffer, batch: int, m: int, n: int, k: int,
            T: np.dtype, A: np.dtype) -> mc.Buffer:
    """(batch, m, k) @ (batch, k, n) into `out` (batch * m * n elements of T), m == 1 or n == 1,
    k > 0, T not bool."""
    Ts, As = cache.msl_type(T), cache.msl_type(A)
    if n == 1:  # a row of A against the vector, per row (a dot product when m == 1 too)
        count, items, source, name = m, -(-m // _ROWS), _rows_source, "mv"
    else:
        count, items, source, name = n, -(-n // _COLUMNS), _columns_source, "vm"
    # Partial sums stay in the accumulator type (half's float sums stay float until the end).
    parts = _parts(items * batch, k)
    part = -(-k // parts)
    parts = -(-k // part)
    # Threadgroups of about _MIN_PART multiply-adds: the CPU's workers take whole ones.
    group = (max(1, min(1024, items, _MIN_PART // (part * (_ROWS if n == 1 else _COLUMNS)))), 1, 1)
    if parts == 1:
        cache.launch(cache.kernel(dev, source(Ts, As, False), name), (items, 1, batch), a, b, out, count, k, part, 1,
                     threadgroup=group)
        return out
    partial = cache.empty(dev, batch * parts * count, A)
    cache.launch(cache.kernel(dev, source(Ts, As, True), name), (items, parts, batch), a, b, partial, count, k, part,
                 parts, threadgroup=group)
    cache.launch(cache.kernel(dev, _parts_source(Ts, As), "add_parts"), (count, batch), partial, out, count, parts)
    return out
