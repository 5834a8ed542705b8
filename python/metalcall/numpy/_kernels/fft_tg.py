"""Batched complex FFT of short rows (n <= MAX_N) in ONE launch on GPUs: a threadgroup loads G
whole rows into threadgroup memory, runs every Stockham pass of fft.py there (a barrier between
passes, ping-pong arrays) and stores the rows. Longer rows, and the CPU backend (whose kernels with
barriers run as fibers, slower than fft.py's one launch per pass), take fft.py's global passes.
The passes, radices and twiddle tables are fft.py's, so results are the same to the bit."""

from __future__ import annotations

import functools

import numpy as np

import metalcall as mc

from . import cache
from . import fft as F

MAX_N = 1024  # two arrays of 1024 complex128: 32 KiB of threadgroup memory (Metal's limit; CUDA's is 48)
THREADS = 128


def usable(dev: mc.Device, n: int) -> bool:
    """Whether rows of length n take this kernel on dev (GPU backends, 2 <= n <= MAX_N, smooth n)."""
    return dev.backend != "cpu" and 2 <= n <= MAX_N and F.factors(n) is not None


@functools.lru_cache(maxsize=None)
def source(n: int, dtype, inverse: bool, threads: int = THREADS) -> str:
    ct, ft = F._TYPES[np.dtype(dtype)]
    sign = 1 if inverse else -1
    G = max(1, MAX_N // n)
    lines = [f"  threadgroup {ct} s0[{G * n}];", f"  threadgroup {ct} s1[{G * n}];",
             "  const ulong rows = ulong(P[0]), r0 = ulong(grp) * " + str(G) + ";",
             f"  for (uint e = tid; e < {G * n}u; e += {threads}u)",
             f"    if (r0 + e / {n}u < rows) s0[e] = src[r0 * {n} + e];",
             "  threadgroup_barrier(mem_flags::mem_threadgroup);"]
    p, off, cur = 1, 0, 0
    for R in F.factors(n):
        T = n // R
        a, b = f"s{cur}", f"s{1 - cur}"
        lines.append(f"  for (uint t = tid; t < {G * T}u; t += {threads}u) {{")
        lines.append(f"    const uint base = (t / {T}u) * {n}u, i = t % {T}u, k = i % {p}u;")
        lines += [f"    {ct} u{r} = {a}[base + i + {r * T}u];" for r in range(R)]
        if p > 1:
            for r in range(1, R):
                lines.append(f"    {{ {ct} w = tw[{off} + k * {R - 1} + {r - 1}]; {ft} q = u{r}.re;"
                             f" u{r}.re = q * w.re - u{r}.im * w.im; u{r}.im = q * w.im + u{r}.im * w.re; }}")
            off += p * (R - 1)
        lines.append(f"    {ct} " + ", ".join(f"v{s}" for s in range(R)) + ";")
        lines += ["  " + ln for ln in F._dft(R, sign, ft)]
        lines.append(f"    const uint j = base + (i - k) * {R}u + k;")
        lines += [f"    {b}[j + {s * p}u] = v{s};" for s in range(R)]
        lines.append("  }")
        lines.append("  threadgroup_barrier(mem_flags::mem_threadgroup);")
        p, cur = p * R, 1 - cur
    lines += [f"  for (uint e = tid; e < {G * n}u; e += {threads}u)",
              f"    if (r0 + e / {n}u < rows) dst[r0 * {n} + e] = s{cur}[e];"]
    return (f"#include <metal_stdlib>\nusing namespace metal;\n{F.aligned_struct(ct, ft)}\n"
            f"kernel void mnp_fft_tg(device const {ct}* src [[buffer(0)]], device {ct}* dst [[buffer(1)]],\n"
            f"                       device const {ct}* tw [[buffer(2)]], constant long* P [[buffer(3)]],\n"
            "                       uint tid [[thread_position_in_threadgroup]],\n"
            "                       uint grp [[threadgroup_position_in_grid]]) {\n" + "\n".join(lines) + "\n}\n")


_TABLES: dict = {}


def _table(dev, n, dt, inverse):
    """The twiddles of every pass after the first, one after the other (fft.py's tables)."""
    key = (dev, n, dt, inverse)
    buf = _TABLES.get(key)
    if buf is None:
        parts, p = [], 1
        for R in F.factors(n):
            if p > 1:
                k = np.arange(p, dtype=np.float64)[:, None] * np.arange(1, R, dtype=np.float64)[None, :]
                parts.append(np.exp((2j if inverse else -2j) * np.pi * k / (p * R)).astype(dt).reshape(-1))
            p *= R
        w = np.concatenate(parts) if parts else np.zeros(1, dt)
        if len(_TABLES) > 256:
            _TABLES.clear()
        buf = _TABLES[key] = dev.asarray(w)
    return buf


def fft(dev: mc.Device, src: mc.Buffer, batch: int, n: int, dtype, inverse: bool = False) -> mc.Buffer:
    """fft.fft's result for 2 <= n <= MAX_N with n's prime factors <= 13, in one launch (on any backend:
    callers pick it with `usable`; the tests run it on the CPU too)."""
    dt = np.dtype(dtype)
    if dt not in F._TYPES or not 2 <= n <= MAX_N or F.factors(n) is None:
        raise mc.ArgumentError(f"fft_tg: complex rows of 2..{MAX_N} elements with prime factors <= 13, got "
                               f"{dt} rows of {n}")
    G = max(1, MAX_N // n)
    out = cache.empty(dev, batch * n, dt)  # written whole: no zero fill
    groups = -(-batch // G)
    if groups:
        # THREADS, or fewer where the pipeline allows fewer (the loops stride by the size built in)
        kern, tg = cache.sized_kernel(dev, lambda tg, _w: source(n, dt, inverse, tg), "mnp_fft_tg", THREADS,
                                      fast_math=False)
        cache.launch(kern, (groups * tg, 1, 1), src, out, _table(dev, n, dt, inverse),
                     F.params_buffer(dev, (batch,)), threadgroup=(tg, 1, 1))
    return out
