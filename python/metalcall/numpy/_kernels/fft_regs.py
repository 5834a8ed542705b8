"""The source of a GPU kernel in which each threadgroup transforms C sequences ("lanes") of L
complex elements, each held in registers between passes through threadgroup memory: fft_4step's
two launches are two such kernels.

Stockham stages as in fft.py, with larger radices (16 first: 1024 = 16 * 16 * 4 is three stages,
not fft.py's four) whose DFTs are split radix-2 butterflies for powers of two (fft.py unrolls the
plain DFT sum, R^2 products). The first stage reads its inputs from device memory and the last
writes its outputs there, so an L-point transform meets threadgroup memory len(stages) - 1 times
and waits at 2 * len(stages) - 3 barriers (1024: 3). Threadgroup indices are padded, j + j / 16,
and lanes start PH / C apart in the banks (PH: the threads of one shared-memory wavefront,
16 for complex64, 8 for complex128), so that neither the stride-R writes of a stage nor the lanes
of one wavefront meet in a bank (tools/fft_banks.py replays every stage's indices: no conflict for
powers of two, in either load order and dtype; 2-way where radices 3 and 5 take part).

The thread t of lane c takes butterflies t, t + TPC, ... of each stage (TPC = L / largest radix
threads per lane, so each thread holds one butterfly of the largest radix). Which index
neighbouring threads take is the caller's choice for the loads (`load_lanes_inner`: lanes when the
lanes are neighbours in memory, else the butterflies); stores always go lanes inner.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from . import fft as F

# Radices tried in this order: 16 and 8 first (fewer stages), the odd primes fft.py knows after.
RADICES = (16, 8, 4, 2, 3, 5, 7, 11, 13)


@functools.lru_cache(maxsize=1024)
def stages(n: int):
    """The radices of the stages of length n (product n), or None when n has a prime factor over 13."""
    return F.factor_by(n, RADICES)


def threads_per_lane(n: int) -> int:
    return n // max(stages(n))


class _Emitter:
    """Straight-line complex arithmetic on the struct type `ct` (fields re, im) of float type `ft`."""

    def __init__(self, ct: str, ft: str, prefix: str):
        self.ct, self.ft, self.prefix, self.lines, self.count = ct, ft, prefix, [], 0

    def temp(self, re: str, im: str) -> str:
        name = f"{self.prefix}{self.count}"
        self.count += 1
        self.lines.append(f"    const {self.ct} {name} = {{{re}, {im}}};")
        return name

    def lit(self, v: float) -> str:
        return f"{self.ft}({v!r})"

    def rotate(self, a: str, e: int, R: int, sign: int) -> str:
        """a * exp(sign 2 pi i e / R), with the exact cases (1, +-i, -1, (+-1 +-i) / sqrt 2) cheaper."""
        e %= R
        if e == 0:
            return a
        if 4 * e == R or 4 * e == 3 * R:  # +-i
            s = sign if 4 * e == R else -sign
            return self.temp(f"-{a}.im", f"{a}.re") if s > 0 else self.temp(f"{a}.im", f"-{a}.re")
        if 2 * e == R:
            return self.temp(f"-{a}.re", f"-{a}.im")
        c, s = math.cos(2 * math.pi * e / R), sign * math.sin(2 * math.pi * e / R)
        return self.temp(f"{a}.re * {self.lit(c)} - {a}.im * {self.lit(s)}",
                         f"{a}.re * {self.lit(s)} + {a}.im * {self.lit(c)}")

    def dft(self, xs: list, sign: int) -> list:
        """The names holding sum_r xs[r] w^(r s), w = exp(sign 2 pi i / R), for s < R = len(xs)."""
        R = len(xs)
        if R == 1:
            return list(xs)
        if R & (R - 1) == 0:  # radix-2 decimation in time, recursively
            even, odd = self.dft(xs[0::2], sign), self.dft(xs[1::2], sign)
            out = [None] * R
            for k in range(R // 2):
                t = self.rotate(odd[k], k, R, sign)
                e = even[k]
                out[k] = self.temp(f"{e}.re + {t}.re", f"{e}.im + {t}.im")
                out[k + R // 2] = self.temp(f"{e}.re - {t}.re", f"{e}.im - {t}.im")
            return out
        out = []
        for s in range(R):  # an odd prime: the plain sum, exact zeros skipped
            re, im = [], []
            for r in range(R):
                e = (r * s) % R
                if e == 0:
                    re.append(f"{xs[r]}.re")
                    im.append(f"{xs[r]}.im")
                    continue
                c, si = math.cos(2 * math.pi * e / R), sign * math.sin(2 * math.pi * e / R)
                re.append(f"({xs[r]}.re * {self.lit(c)} - {xs[r]}.im * {self.lit(si)})")
                im.append(f"({xs[r]}.re * {self.lit(si)} + {xs[r]}.im * {self.lit(c)})")
            out.append(self.temp(" + ".join(re), " + ".join(im)))
        return out


def twiddles(n: int, inverse: bool) -> np.ndarray:
    """complex128 table of every stage after the first of `stages(n)`: stage (p, R) holds
    w^(k r), k < p, 1 <= r < R, w = exp(-+2 pi i / (p R)), at k (R - 1) + r - 1 from its start."""
    parts, p = [], 1
    for R in stages(n):
        if p > 1:
            k = np.arange(p, dtype=np.float64)[:, None] * np.arange(1, R, dtype=np.float64)[None, :]
            parts.append(np.exp((2j if inverse else -2j) * np.pi * k / (p * R)).reshape(-1))
        p *= R
    return np.concatenate(parts) if parts else np.zeros(1, np.complex128)


def padded(j: str) -> str:
    return f"({j} + ({j} >> 4u))"


def lane_stride(n: int, lanes: int, itemsize: int) -> int:
    """Elements from one lane's start to the next: n padded, then rounded so that the lanes of a
    shared-memory wavefront start in different banks."""
    ph = 128 // itemsize
    base = n + (n - 1) // 16 + 1
    base = -(-base // ph) * ph
    return base + (ph // lanes if lanes <= ph else 1)


@functools.lru_cache(maxsize=None)
def source(n: int, dtype, inverse: bool, lanes: int, load_lanes_inner: bool, post_twiddle: bool,
           dynamic: bool = False, name: str = "mnp_fft_regs") -> str:
    """The kernel `name`(src, dst, tw, post, P[, s]): a threadgroup of lanes * threads_per_lane(n)
    threads transforms sequences c0 .. c0 + lanes - 1 of one row; element j of sequence c is at
    src[row + c * P[1] + j * P[2]], result k goes to dst[row + c * P[3] + k * P[4]] (times
    W_n'^(c k) with `post_twiddle`: post[m / n] post[P[6] + m % n], m = c k); P[0] is the number
    of sequences in a row, P[5] the row's length. `dynamic`: the threadgroup array is the
    [[threadgroup(0)]] argument s (lanes * lane_stride elements), not a fixed-size array."""
    ct, ft = F._TYPES[np.dtype(dtype)]
    sign = 1 if inverse else -1
    radices = stages(n)
    C, TPC = lanes, threads_per_lane(n)
    NT = C * TPC
    LP = lane_stride(n, C, np.dtype(dtype).itemsize)
    body = [] if dynamic else [f"  threadgroup {ct} s[{C * LP}];"]
    body += ["  const ulong count = ulong(P[0]), in_lane = ulong(P[1]), in_step = ulong(P[2]);",
             "  const ulong out_lane = ulong(P[3]), out_step = ulong(P[4]), row_len = ulong(P[5]);",
             f"  const ulong blocks = (count + {C - 1}u) / {C}u;  // a row's sequences in blocks of C",
             f"  const ulong row = (ulong(grp) / blocks) * row_len, c0 = (ulong(grp) % blocks) * {C}u;"]
    p, off, last = 1, 0, len(radices) - 1
    for st, R in enumerate(radices):
        body += ["  {"] + _stage(st == 0, st == last, R, p, off, n, C, TPC, LP, ct, ft, sign,
                                 load_lanes_inner, post_twiddle) + ["  }"]
        if p > 1:
            off += p * (R - 1)
        p *= R
    shared = f",\n                    threadgroup {ct}* s [[threadgroup(0)]]" if dynamic else ""
    return (f"#include <metal_stdlib>\nusing namespace metal;\n{F.aligned_struct(ct, ft)}\n"
            f"kernel void {name}(device const {ct}* src [[buffer(0)]], device {ct}* dst [[buffer(1)]],\n"
            f"                    device const {ct}* tw [[buffer(2)]], device const {ct}* post [[buffer(3)]],\n"
            f"                    constant long* P [[buffer(4)]]{shared},\n"
            "                    uint tid [[thread_position_in_threadgroup]],\n"
            "                    uint grp [[threadgroup_position_in_grid]]) {\n"
            f"  // {NT} threads: {C} lanes of {TPC}\n" + "\n".join(body) + "\n}\n")


def _stage(first, final, R, p, off, n, C, TPC, LP, ct, ft, sign, load_lanes_inner, post_twiddle):
    """One Stockham stage (radix R after sub-transforms of p): inputs from src (first) or the
    threadgroup array, outputs to dst (final, times the post twiddles) or back to it."""
    T = n // R
    per = -(-T // TPC)  # butterflies per thread
    inner = final or load_lanes_inner
    cl, tl = (f"tid % {C}u", f"tid / {C}u") if inner else (f"tid / {TPC}u", f"tid % {TPC}u")
    lines = [f"  // radix {R} after sub-transforms of {p}",
             f"  const uint c = {cl}, t = {tl};",
             "  const bool live = c0 + c < count;"]
    if not final:
        lines.append(f"  {ct} " + ", ".join(f"v{q}_{x}" for q in range(per) for x in range(R)) + ";")
    guards = [f"live && t + {q * TPC}u < {T}u" if (q + 1) * TPC > T else "live" for q in range(per)]
    for q in range(per):
        e = _Emitter(ct, ft, f"a{q}_")
        lines.append(f"  const uint i{q} = t + {q * TPC}u, k{q} = i{q} % {p}u;")
        lines.append(f"  if ({guards[q]}) {{")
        for r in range(R):
            j = f"(i{q} + {r * T}u)"
            where = f"src[row + (c0 + c) * in_lane + ulong{j} * in_step]" if first else f"s[c * {LP}u + {padded(j)}]"
            lines.append(f"    {ct} u{r} = {where};")
        if p > 1:
            for r in range(1, R):
                lines.append(f"    {{ const {ct} w = tw[{off}u + k{q} * {R - 1}u + {r - 1}u]; const {ft} x = u{r}.re;"
                             f" u{r}.re = x * w.re - u{r}.im * w.im; u{r}.im = x * w.im + u{r}.im * w.re; }}")
        res = e.dft([f"u{r}" for r in range(R)], sign)
        lines += e.lines
        if not final:  # kept for the writes after the barrier (others may still read this stage's inputs)
            lines += [f"    v{q}_{x} = {res[x]};" for x in range(R)]
        else:
            for x in range(R):
                lines.append(f"    {{ const uint k = (i{q} - k{q}) * {R}u + k{q} + {x * p}u; {ct} v = {res[x]};")
                if post_twiddle:
                    lines += ["      const ulong m = (c0 + c) * ulong(k);",
                              f"      const {ct} a = post[m / {n}u], b = post[ulong(P[6]) + m % {n}u];",
                              f"      const {ft} wr = a.re * b.re - a.im * b.im, wi = a.re * b.im + a.im * b.re;",
                              f"      const {ft} x = v.re; v.re = x * wr - v.im * wi; v.im = x * wi + v.im * wr;"]
                lines.append("      dst[row + (c0 + c) * out_lane + ulong(k) * out_step] = v; }")
        lines.append("  }")
    if final:
        return lines
    if not first:
        lines.append("  threadgroup_barrier(mem_flags::mem_threadgroup);")
    for q in range(per):
        lines.append(f"  if ({guards[q]}) {{")
        for x in range(R):
            j = padded(f"((i{q} - k{q}) * {R}u + k{q} + {x * p}u)")
            lines.append(f"    s[c * {LP}u + {j}] = v{q}_{x};")
        lines.append("  }")
    lines.append("  threadgroup_barrier(mem_flags::mem_threadgroup);")
    return lines
