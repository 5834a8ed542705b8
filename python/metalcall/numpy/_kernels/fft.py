"""Batched complex FFT along the last axis of a C-contiguous (batch, n) complex64/complex128 Buffer:
Stockham autosort passes, one kernel launch per radix (ping-pong Buffers), for every n whose prime
factors are at most 13 (`factors` says which n; other lengths are the caller's, by Bluestein).

Pass with radix R after the radices before it have made sub-transforms of length p (T = n / R
threads per row): thread i reads u_r = x[i + r T] (r < R), multiplies by the twiddle
w^(k r) with k = i mod p and w = exp(-+2 pi i / (p R)), takes the R-point DFT of the u_r (unrolled,
with the constants written as literals), and writes v_s to y[(i - k) R + k + s p]. After the
last pass the result is in natural order (no bit reversal). Unnormalised in both directions.
The twiddles of a pass are a table of p (R - 1) values computed on the host in float64 (exact to
the last bit of complex64/complex128, and no sin/cos per element: the CPU backend's are scalar
libm calls), uploaded once per length, dtype, direction and device.
"""

from __future__ import annotations

import functools
import math

import numpy as np

import metalcall as mc

from . import cache

# The radices a pass may take, tried in this order (fewer, larger passes for powers of two).
RADICES = (8, 4, 2, 3, 5, 7, 11, 13)
_TYPES = {np.dtype(np.complex64): ("mnp_c64", "float"), np.dtype(np.complex128): ("mnp_c128", "double")}


def factor_by(n: int, radices) -> tuple | None:
    """n as a product of `radices`, taken greedily in their order, or None when that leaves a factor."""
    out = []
    for r in radices:
        while n % r == 0 and n > 1:
            out.append(r)
            n //= r
    return tuple(out) if n == 1 else None


@functools.lru_cache(maxsize=1024)
def factors(n: int):
    """The radices of the passes for length n (product n), or None when n has a prime factor over 13."""
    return factor_by(n, RADICES)


def aligned_struct(ct: str, ft: str) -> str:
    """The complex struct aligned to its size, for the GPU kernels: CUDA then moves an element with one
    8- or 16-byte access (ld.global.v2.f32), not two, in device and threadgroup memory alike.
    (fft.py's own passes, which the CPU backend runs, keep the plain struct: a CPU array may share
    NumPy memory aligned to its float type only.)"""
    return f"struct alignas({8 if ft == 'float' else 16}) {ct} {{ {ft} re; {ft} im; }};"


def _lit(v: float, ft: str) -> str:
    return f"{ft}({v!r})"


def _dft(R: int, sign: int, ft: str) -> list:
    """MSL lines computing v_s = sum_r u_r w^(r s), w = exp(sign 2 pi i / R), unrolled."""
    lines = []
    for s in range(R):
        re_terms, im_terms = [], []
        for r in range(R):
            e = (r * s) % R
            if e == 0:
                re_terms.append(f"u{r}.re")
                im_terms.append(f"u{r}.im")
                continue
            c, si = math.cos(2 * math.pi * e / R), sign * math.sin(2 * math.pi * e / R)
            # (a + ib)(c + i si) = (a c - b si) + i (a si + b c); exact zeros and ones skipped
            if abs(c) < 1e-15:
                re_terms.append(f"-u{r}.im * {_lit(si, ft)}")
                im_terms.append(f"u{r}.re * {_lit(si, ft)}")
            elif abs(si) < 1e-15:
                re_terms.append(f"u{r}.re * {_lit(c, ft)}")
                im_terms.append(f"u{r}.im * {_lit(c, ft)}")
            else:
                re_terms.append(f"(u{r}.re * {_lit(c, ft)} - u{r}.im * {_lit(si, ft)})")
                im_terms.append(f"(u{r}.re * {_lit(si, ft)} + u{r}.im * {_lit(c, ft)})")
        lines.append(f"  v{s}.re = {' + '.join(re_terms)};")
        lines.append(f"  v{s}.im = {' + '.join(im_terms)};")
    return [ln.replace("+ -", "- ") for ln in lines]


@functools.lru_cache(maxsize=None)
def source(R: int, dtype, inverse: bool) -> str:
    ct, ft = _TYPES[np.dtype(dtype)]
    sign = 1 if inverse else -1
    body = [f"  {ct} u{r} = src[base + i + {r} * T];" for r in range(R)]
    body.append("  if (p > 1) {")
    for r in range(1, R):
        body.append(f"    {{ {ct} w = tw[k * {R - 1} + {r - 1}]; {ft} t = u{r}.re;"
                    f" u{r}.re = t * w.re - u{r}.im * w.im; u{r}.im = t * w.im + u{r}.im * w.re; }}")
    body.append("  }")
    body.append(f"  {ct} " + ", ".join(f"v{s}" for s in range(R)) + ";")
    body += _dft(R, sign, ft)
    body.append(f"  const ulong j = base + (i - k) * {R} + k;")
    body += [f"  dst[j + {s} * p] = v{s};" for s in range(R)]
    return (f"#include <metal_stdlib>\nusing namespace metal;\nstruct {ct} {{ {ft} re; {ft} im; }};\n"
            f"kernel void mnp_fft(device const {ct}* src [[buffer(0)]], device {ct}* dst [[buffer(1)]],\n"
            f"                    device const {ct}* tw [[buffer(2)]], constant long* P [[buffer(3)]],\n"
            "                    uint gid [[thread_position_in_grid]]) {\n"
            "  const ulong n = ulong(P[0]), T = ulong(P[1]), p = ulong(P[2]);\n"
            "  const ulong row = ulong(gid) / T, i = ulong(gid) % T, k = i % p, base = row * n;\n"
            + "\n".join(body) + "\n}\n")


def fft(dev: mc.Device, src: mc.Buffer, batch: int, n: int, dtype, inverse: bool = False) -> mc.Buffer:
    """The unnormalised DFT (inverse: exp(+2 pi i jk / n)) of each of `batch` rows of n elements of the
    C-contiguous complex Buffer src; a new Buffer (batch * n elements). n's prime factors must be <= 13."""
    dt = np.dtype(dtype)
    if dt not in _TYPES:
        raise mc.ArgumentError(f"fft needs a complex64 or complex128 Buffer, got {dt}")
    radices = factors(n)
    if radices is None:
        raise mc.ArgumentError(f"fft: length {n} has a prime factor over 13 (use Bluestein's algorithm)")
    if batch * n >= 2**32:
        raise mc.ArgumentError("fft: at most 2**32 - 1 elements per call")
    # every element of each is written before it is read: no zero fill (a fill is a launch on GPUs)
    bufs = [cache.empty(dev, batch * n, dt), cache.empty(dev, batch * n, dt) if len(radices) > 1 else None]
    cur = src
    plan = _plan(dev, n, dt, inverse)
    for step, (R, tw, P) in enumerate(plan):
        out = bufs[step % 2]
        cache.launch(cache.kernel(dev, source(R, dt, inverse), "mnp_fft", fast_math=False), batch * (n // R),
                     cur, out, tw, P)
        cur = out
    return cur


_PLANS: dict = {}


def _plan(dev, n, dt, inverse):
    """[(radix, twiddle Buffer, parameter Buffer)] of each pass (n == 1: one identity pass of radix 1)."""
    key = (dev, n, dt, inverse)
    plan = _PLANS.get(key)
    if plan is None:
        plan, p = [], 1
        for R in factors(n) or [1]:
            k = np.arange(p, dtype=np.float64)[:, None] * np.arange(1, R, dtype=np.float64)[None, :]
            w = np.exp((2j if inverse else -2j) * np.pi * k / (p * R)).astype(dt).reshape(-1)
            tw = dev.asarray(w if w.size else np.zeros(1, dt))
            plan.append((R, tw, dev.asarray(np.array([n, n // R, p], np.int64))))
            p *= R
        if len(_PLANS) > 256:
            _PLANS.clear()
        _PLANS[key] = plan
    return plan


_PARAMS: dict = {}


def params_buffer(dev: mc.Device, values: tuple) -> mc.Buffer:
    """An int64 Buffer of `values`, uploaded once per device and values (fft_tg's and fft_4step's
    kernel parameters: an upload per call cost about as much as the launch)."""
    key = (dev, values)
    buf = _PARAMS.get(key)
    if buf is None:
        if len(_PARAMS) > 256:
            _PARAMS.clear()
        buf = _PARAMS[key] = dev.asarray(np.array(values, np.int64))
    return buf
