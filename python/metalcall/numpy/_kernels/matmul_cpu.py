"""The CPU backend's matrix product: both operands packed, then one work-item per MR x NR block of C.

A is packed into row panels (mp, k, MR) and B into column panels (np, k, NR), zero-padded, in
the accumulator type. A work-item keeps its MR x NR block in MR accumulator rows of NR
elements; per step of k it loads NR contiguous elements of its B panel and MR elements of its A
panel (one cache line each) and does MR x NR multiply-adds: the compiler turns each row into
one or two vector registers. No barriers: the CPU backend runs these as plain loops, not fibers.
Work-items come row panel first (a block of `rb` row panels sized to stay in L2), then column
panel, so a worker's consecutive items share one B panel and sweep one cached block of A.
A deep k (over _MAX_DEPTH) is split into calls that each add their part to the output (float32
and other types that accumulate in themselves): the blocks of A stay tall, so B is streamed
fewer times. Each element is one sequential sum over k either way (bitwise the same result),
as in the GPU tile.
"""

from __future__ import annotations

import functools
import os
import platform

from . import cache

# Bytes of packed A a block of row panels should take: small enough for L2 next to one B panel.
_BLOCK_BYTES = 256 * 1024
# k up to _MAX_DEPTH in one call; deeper products in calls of at most _PART_DEPTH steps. On the
# 2-core development VM parts of 512 were slower at 2048 (its L3 holds B) and faster at 4096.
_MAX_DEPTH = 2048
_PART_DEPTH = 1024


@functools.lru_cache(maxsize=None)
def tile() -> tuple[int, int]:
    """(MR, NR): the block of C one work-item keeps in registers. 8 x 16 floats is 8 AVX-512
    or 16 AVX2 registers of accumulators; x86 without AVX-512 has 16 vector registers in all,
    so it takes 6 rows; NEON's 32 registers of 4 floats take 8 x 8."""
    env = os.environ.get("METALCALL_MATMUL_CPU_TILE")
    if env:  # "MRxNR", for measurements
        mr, nr = (int(v) for v in env.lower().split("x"))
        return mr, nr
    if platform.machine().lower() in ("x86_64", "amd64"):
        try:
            with open("/proc/cpuinfo") as f:
                flags = next((line for line in f if line.startswith("flags")), "")
        except OSError:
            flags = ""
        return (8, 16) if " avx512f" in flags else (6, 16)
    return 8, 8


def depth(k: int, same_type: bool) -> int:
    """How many steps of k one call takes: all of them up to _MAX_DEPTH (one call), else equal
    parts of at most _PART_DEPTH, each call adding to the sums in the output. Deep parts would
    make the cached block of A a few rows high, and B would be streamed again for each. Only
    where the output type is the accumulator's (a float16 or int8 partial sum would be rounded
    or wrapped)."""
    if k <= _MAX_DEPTH or not same_type:
        return k
    parts = -(-k // _PART_DEPTH)
    return -(-k // parts)


def row_block(kc: int, acc_size: int, mp: int) -> int:
    """How many row panels a block holds (see _BLOCK_BYTES) for calls of kc steps."""
    mr, _ = tile()
    return max(1, min(mp, _BLOCK_BYTES // max(1, mr * kc * acc_size)))


@functools.lru_cache(maxsize=None)
def pack_a_source(T: str, A: str, mr: int) -> str:
    """A (batch, m, k) -> (batch, mp, k, MR) in type A, rows past m zero; grid (k, mp, batch):
    work-item (kk, rp) writes the MR elements of column kk of row panel rp. Consecutive
    work-items read consecutive elements of each row. (Of the layouts tried, the fastest with
    both g++ and clang: 0.3 and 0.14 ms at 1024^2 on one core here, against 0.5-1.5 ms.)"""
    return (cache.header() +
            f"kernel void pack_a(const device {T}* a [[buffer(0)]], device {A}* p [[buffer(1)]],\n"
            "    constant uint& m [[buffer(2)]], constant uint& k [[buffer(3)]], constant uint& mp [[buffer(4)]],\n"
            "    uint3 g [[thread_position_in_grid]]) {\n"
            f"  const uint kk = g.x, rp = g.y, z = g.z, r0 = rp * {mr};\n"
            f"  device {A}* d = p + ((ulong(z) * mp + rp) * k + kk) * {mr};\n"
            f"  const device {T}* s = a + (ulong(z) * m + r0) * k + kk;\n"
            f"  if (r0 + {mr} <= m) {{\n"
            f"    for (uint i = 0; i < {mr}; ++i) d[i] = {A}(s[ulong(i) * k]);\n"
            "    return;\n  }\n"
            f"  for (uint i = 0; i < {mr}; ++i) d[i] = r0 + i < m ? {A}(s[ulong(i) * k]) : {A}(0);\n}}\n")


@functools.lru_cache(maxsize=None)
def pack_b_source(T: str, A: str, nr: int) -> str:
    """B (batch, k, n) -> (batch, np, k, NR) in type A, columns past n zero; grid (np * NR, k,
    batch): consecutive work-items read consecutive elements of a row of B. A work-item of the
    product then streams one contiguous panel instead of NR columns at a stride of n (a
    power-of-two n thrashes cache sets). (The fastest layout tried with both g++ and clang.)"""
    return (cache.header() +
            f"kernel void pack_b(const device {T}* b [[buffer(0)]], device {A}* p [[buffer(1)]],\n"
            "    constant uint& n [[buffer(2)]], constant uint& k [[buffer(3)]], constant uint& np [[buffer(4)]],\n"
            "    uint3 g [[thread_position_in_grid]]) {\n"
            "  const uint c = g.x, kk = g.y, z = g.z;\n"
            f"  p[((ulong(z) * np + c / {nr}) * k + kk) * {nr} + c % {nr}] =\n"
            f"      c < n ? {A}(b[(ulong(z) * k + kk) * n + c]) : {A}(0);\n}}\n")


@functools.lru_cache(maxsize=None)
def kernel_source(T: str, A: str, is_bool: bool, mr: int, nr: int) -> str:
    """Work-item (x, y, z): row panel (z % nrb) * rb + x, column panel y, matrix z / nrb; steps
    k0 .. k0 + kc - 1 of k, added to what `out` holds when k0 > 0 (only where T is A: a partial
    sum then stays exact). The MR rows are written out as separate arrays and every loop over NR
    holds all of them: g++ and clang then keep each row in registers (a loop per row made g++
    spill one)."""
    rows = range(mr)
    def store(v: str) -> str:
        return f"({v}) != 0" if is_bool else f"{T}({v})"
    all_rows = lambda body: f"for (uint j = 0; j < {nr}; ++j) {{ " + " ".join(body(i) for i in rows) + " }"
    return (cache.header() +
            f"kernel void mm(const device {A}* pa [[buffer(0)]], const device {A}* pb [[buffer(1)]],\n"
            f"    device {T}* out [[buffer(2)]], constant uint& m [[buffer(3)]], constant uint& n [[buffer(4)]],\n"
            "    constant uint& k [[buffer(5)]], constant uint& mp [[buffer(6)]], constant uint& np [[buffer(7)]],\n"
            "    constant uint& rb [[buffer(8)]], constant uint& k0 [[buffer(9)]], constant uint& kc [[buffer(10)]],\n"
            "    uint3 g [[thread_position_in_grid]]) {\n"
            "  const uint nrb = (mp + rb - 1) / rb, z = g.z / nrb, rp = (g.z % nrb) * rb + g.x;\n"
            "  if (rp >= mp) return;\n"
            f"  const device {A}* q = pa + ((ulong(z) * mp + rp) * k + k0) * {mr};\n"
            f"  const device {A}* p = pb + ((ulong(z) * np + g.y) * k + k0) * {nr};\n"
            f"  const uint r0 = rp * {mr}, col0 = g.y * {nr};\n"
            f"  device {T}* o = out + (ulong(z) * m + r0) * n + col0;\n"
            f"  const bool full = r0 + {mr} <= m && col0 + {nr} <= n;\n"
            + "".join(f"  {A} c{i}[{nr}];\n" for i in rows) +
            "  " + all_rows(lambda i: f"c{i}[j] = {A}(0);") + "\n"
            "  if (k0 > 0) {  // the sum of the steps before, which this call continues\n"
            "    if (full) " + all_rows(lambda i: f"c{i}[j] = {A}(o[{i} * ulong(n) + j]);") + "\n"
            f"    else {{\n      const uint nc = min(n - col0, uint({nr}));\n"
            + "".join(f"      if (r0 + {i} < m) for (uint j = 0; j < nc; ++j) c{i}[j] = {A}(o[{i} * ulong(n) + j]);\n"
                      for i in rows) +
            "    }\n  }\n"
            "  for (uint kk = 0; kk < kc; ++kk) {\n"
            + "".join(f"    const {A} a{i} = q[ulong(kk) * {mr} + {i}];\n" for i in rows) +
            f"    const device {A}* b = p + ulong(kk) * {nr};\n"
            f"    for (uint j = 0; j < {nr}; ++j) {{ const {A} bj = b[j]; "
            + " ".join(f"c{i}[j] += a{i} * bj;" for i in rows) + " }\n"
            "  }\n"
            "  if (full) {\n"
            "    " + all_rows(lambda i: f"o[{i} * ulong(n) + j] = {store(f'c{i}[j]')};") + "\n"
            "    return;\n  }\n"
            f"  const uint nc = min(n - col0, uint({nr}));\n"
            + "".join(f"  if (r0 + {i} < m)\n    for (uint j = 0; j < nc; ++j) o[{i} * ulong(n) + j] = "
                      f"{store(f'c{i}[j]')};\n" for i in rows) +
            "}\n")
