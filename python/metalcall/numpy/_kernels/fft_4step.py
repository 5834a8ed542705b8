"""Batched complex FFT of long rows in TWO launches on GPUs (the "four-step" split n = n1 * n2, both
factors at most fft_tg.MAX_N): with j = j1 n2 + j2 and k = k1 + n1 k2,

    X[k1 + n1 k2] = sum_j2 W_n2^(j2 k2) [ W_n^(j2 k1) sum_j1 W_n1^(j1 k1) x[j1 n2 + j2] ]

Launch A transforms the n2 columns (length n1, stride n2) and multiplies by W_n^(j2 k1), writing
Y[k1 n2 + j2]; launch B transforms the n1 rows of Y (length n2, contiguous) and writes X[k1 + n1 k2].
A threadgroup takes C neighbouring columns (or rows) at once, so that every global read and write
moves C neighbouring elements: whole 32-byte sectors. Inside a group the transform is fft.py's
Stockham passes in threadgroup memory (one array: each pass reads its butterflies' inputs into
registers, meets at a barrier, writes), with fft.py's radices and per-pass twiddle tables. The
twiddles between the launches are W_n^m = W_n2^(m / n1) W_n^(m mod n1), two tables computed on the
host in float64.

fft.py's one launch per pass moves the whole array once per pass (seven times for 2^20); this moves
it twice. The CPU backend keeps fft.py's passes (kernels with barriers run as fibers there).
"""

from __future__ import annotations

import functools
import math
import re

import numpy as np

import metalcall as mc

from . import cache
from . import fft as F
from . import fft_tg

THREADS = 512  # the H200: 512 beat 256 and 128 (pipelined 58.9 against 66.3 and 63.1 us for 2^20)


@functools.lru_cache(maxsize=1024)
def split(n: int):
    """(n1, n2) with n1 * n2 = n, both in 2..fft_tg.MAX_N with prime factors <= 13 and n1 the
    smallest such factor at least sqrt(n); None when there is none."""
    if F.factors(n) is None:
        return None
    for n1 in range(max(2, math.isqrt(n - 1) + 1), fft_tg.MAX_N + 1):
        n2 = n // n1
        if n1 * n2 == n and 2 <= n2 <= fft_tg.MAX_N and F.factors(n1) and F.factors(n2):
            return n1, n2
    return None


def usable(dev: mc.Device, n: int) -> bool:
    """Whether rows of length n take this path on dev (GPU backends, n over fft_tg.MAX_N with a split)."""
    return dev.backend != "cpu" and n > fft_tg.MAX_N and split(n) is not None


def lanes_per_group(length: int, itemsize: int, budget: int) -> int:
    """C: the most neighbouring columns (a power of two up to 8) whose padded rows fit `budget` bytes."""
    c = 8
    while c > 1 and c * (length + 1) * itemsize > budget:
        c //= 2
    return c


@functools.lru_cache(maxsize=None)
def source(length: int, dtype, inverse: bool, lanes: int, threads: int, load_lanes_inner: bool,
           post_twiddle: bool) -> str:
    """The kernel transforming `lanes` neighbouring sequences of `length` elements per threadgroup.
    Element j of sequence c (c < lanes of the group's block) is at in[row + c * P[1] + j * P[2]];
    result k goes to out[row + c * P[3] + k * P[4]] (times W_n^((c0 + c) k) with `post_twiddle`,
    from `post`, whose second table starts at P[6]); P[0] is the number of sequences in a row, P[5]
    the row's length. `load_lanes_inner` says
    which index neighbouring threads take when loading (the one of stride 1); stores always go
    lanes inner."""
    ct, ft = F._TYPES[np.dtype(dtype)]
    sign = 1 if inverse else -1
    L, C, NT, LP = length, lanes, threads, length + 1  # LP: a padded row (no bank conflicts across lanes)
    lines = [f"  threadgroup {ct} s[{C * LP}];",
             "  const ulong count = ulong(P[0]), in_lane = ulong(P[1]), in_step = ulong(P[2]);",
             "  const ulong out_lane = ulong(P[3]), out_step = ulong(P[4]), row_len = ulong(P[5]);",
             f"  const ulong blocks = (count + {C - 1}u) / {C}u;  // a row's sequences in blocks of C",
             f"  const ulong row = (ulong(grp) / blocks) * row_len, c0 = (ulong(grp) % blocks) * {C}u;"]
    load_c, load_j = ("e % {C}u", "e / {C}u") if load_lanes_inner else ("e / {L}u", "e % {L}u")
    lines += [f"  for (uint e = tid; e < {C * L}u; e += {NT}u) {{",
              f"    const uint c = {load_c.format(C=C, L=L)}, j = {load_j.format(C=C, L=L)};",
              f"    if (c0 + c < count) s[c * {LP}u + j] = src[row + (c0 + c) * in_lane + ulong(j) * in_step];",
              "  }",
              "  threadgroup_barrier(mem_flags::mem_threadgroup);"]
    p, off = 1, 0
    for R in F.factors(L):
        T = L // R
        total = C * T
        per = -(-total // NT)
        lines.append("  {")
        for q in range(per):
            guard = f"t{q} < {total}u" if (q + 1) * NT > total else "true"
            lines.append(f"  const uint t{q} = tid + {q * NT}u;")
            lines.append(f"  {ct} " + ", ".join(f"u{q}_{r}" for r in range(R)) + ";")
            lines.append(f"  if ({guard}) {{")
            lines.append(f"    const uint c = t{q} / {T}u, i = t{q} % {T}u, k = i % {p}u;")
            lines += [f"    u{q}_{r} = s[c * {LP}u + i + {r * T}u];" for r in range(R)]
            if p > 1:
                for r in range(1, R):
                    lines.append(f"    {{ {ct} w = tw[{off} + k * {R - 1} + {r - 1}]; {ft} x = u{q}_{r}.re;"
                                 f" u{q}_{r}.re = x * w.re - u{q}_{r}.im * w.im;"
                                 f" u{q}_{r}.im = x * w.im + u{q}_{r}.im * w.re; }}")
            lines.append("  }")
        if p > 1:
            off += p * (R - 1)
        lines.append("  threadgroup_barrier(mem_flags::mem_threadgroup);")
        for q in range(per):
            guard = f"t{q} < {total}u" if (q + 1) * NT > total else "true"
            lines.append(f"  if ({guard}) {{")
            lines.append(f"    const uint c = t{q} / {T}u, i = t{q} % {T}u, k = i % {p}u;")
            lines.append(f"    {ct} " + ", ".join(f"v{s_}" for s_ in range(R)) + ";")
            lines += ["  " + re.sub(r"\bu(\d+)", f"u{q}_\\1", ln) for ln in F._dft(R, sign, ft)]
            lines.append(f"    const uint j = c * {LP}u + (i - k) * {R}u + k;")
            lines += [f"    s[j + {s_ * p}u] = v{s_};" for s_ in range(R)]
            lines.append("  }")
        lines.append("  threadgroup_barrier(mem_flags::mem_threadgroup);")
        lines.append("  }")
        p *= R
    lines += [f"  for (uint e = tid; e < {C * L}u; e += {NT}u) {{",
              f"    const uint c = e % {C}u, k = e / {C}u;",
              "    if (c0 + c >= count) continue;",
              f"    {ct} v = s[c * {LP}u + k];"]
    if post_twiddle:
        # W_n^m, m = (c0 + c) k < n: W_n2^(m / n1) (table entries 0..n2-1) times W_n^(m mod n1)
        # (entries n2..n2+n1-1); n1 = L is this transform's length.
        lines += ["    const ulong m = (c0 + c) * ulong(k);",
                  f"    const {ct} a = post[m / {L}u], b = post[ulong(P[6]) + m % {L}u];",
                  f"    const {ct} w = {{a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re}};",
                  f"    const {ft} x = v.re;",
                  "    v.re = x * w.re - v.im * w.im;",
                  "    v.im = x * w.im + v.im * w.re;"]
    lines += ["    dst[row + (c0 + c) * out_lane + ulong(k) * out_step] = v;", "  }"]
    return (f"#include <metal_stdlib>\nusing namespace metal;\nstruct {ct} {{ {ft} re; {ft} im; }};\n"
            f"kernel void mnp_fft_4step(device const {ct}* src [[buffer(0)]], device {ct}* dst [[buffer(1)]],\n"
            f"                          device const {ct}* tw [[buffer(2)]], device const {ct}* post [[buffer(3)]],\n"
            "                          constant long* P [[buffer(4)]],\n"
            "                          uint tid [[thread_position_in_threadgroup]],\n"
            "                          uint grp [[threadgroup_position_in_grid]]) {\n" + "\n".join(lines) + "\n}\n")


_POST: dict = {}


def _post_table(dev, n1, n2, dt, inverse):
    """W_n2^i (i < n2) then W_n^i (i < n1), n = n1 n2: the twiddles between the launches."""
    key = (dev, n1, n2, dt, inverse)
    buf = _POST.get(key)
    if buf is None:
        sign = 2j if inverse else -2j
        w = np.concatenate([np.exp(sign * np.pi * np.arange(n2) / n2), np.exp(sign * np.pi * np.arange(n1) / (n1 * n2))])
        if len(_POST) > 64:
            _POST.clear()
        buf = _POST[key] = dev.asarray(w.astype(dt))
    return buf


def _budget(dev: mc.Device) -> int:
    """Threadgroup memory for one group: the device's, at most 48 KiB (CUDA's static limit)."""
    return min(int(dev.threadgroup_memory_length), 48 * 1024)


def _pass(dev, post, n, length, count, strides, dt, inverse, load_lanes_inner, post_twiddle):
    """(kernel, groups per row, threads per group, arguments after src and dst) of one launch."""
    lanes = lanes_per_group(length, dt.itemsize, _budget(dev))
    params = F.params_buffer(dev, (count, *strides, n, count))  # P[6]: launch A's count is n2
    kern, tg = cache.sized_kernel(
        dev, lambda tg, _w: source(length, dt, inverse, lanes, tg, load_lanes_inner, post_twiddle),
        "mnp_fft_4step", THREADS, fast_math=False)
    return kern, -(-count // lanes), tg, (fft_tg._table(dev, length, dt, inverse), post, params)


_PLANS: dict = {}


def _plan(dev, n, n1, dt, inverse):
    """Both launches of rows of n = n1 n2, built once per device, split, dtype and direction (the
    lookups per call cost as much as a launch)."""
    key = (dev, n, n1, dt, inverse)
    plan = _PLANS.get(key)
    if plan is None:
        n2 = n // n1
        post = _post_table(dev, n1, n2, dt, inverse)
        plan = (_pass(dev, post, n, n1, n2, (1, n2, 1, n2), dt, inverse, True, True),
                _pass(dev, post, n, n2, n1, (n2, 1, 1, n1), dt, inverse, False, False))
        if len(_PLANS) > 256:
            _PLANS.clear()
        _PLANS[key] = plan
    return plan


def fft(dev: mc.Device, src: mc.Buffer, batch: int, n: int, dtype, inverse: bool = False,
        n1: int | None = None) -> mc.Buffer:
    """fft.fft's result (to rounding, not to the bit: the passes are grouped differently) for rows of
    n = n1 * n2 (`split(n)` unless n1 is given, as the tests do), in two launches."""
    dt = np.dtype(dtype)
    parts = split(n) if n1 is None else (n1, n // n1)
    if dt not in F._TYPES or parts is None or parts[0] * parts[1] != n or not all(
            2 <= v <= fft_tg.MAX_N and F.factors(v) for v in parts):
        raise mc.ArgumentError(f"fft_4step: complex rows of n = n1 * n2 elements, n1 and n2 in 2..{fft_tg.MAX_N} "
                               f"with prime factors <= 13, got {dt} rows of {n} (n1 = {n1})")
    if batch * n >= 2**32:
        raise mc.ArgumentError("fft: at most 2**32 - 1 elements per call")
    y, out = cache.empty(dev, batch * n, dt), cache.empty(dev, batch * n, dt)  # written whole: no zero fill
    for (kern, blocks, tg, args), (a, b) in zip(_plan(dev, n, parts[0], dt, inverse), ((src, y), (y, out))):
        cache.launch(kern, (batch * blocks * tg, 1, 1), a, b, *args, threadgroup=(tg, 1, 1))
    return out
