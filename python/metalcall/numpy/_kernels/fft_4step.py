"""Batched complex FFT of long rows in TWO launches on GPUs (the "four-step" split n = n1 * n2, both
factors at most fft_tg.MAX_N): with j = j1 n2 + j2 and k = k1 + n1 k2,

    X[k1 + n1 k2] = sum_j2 W_n2^(j2 k2) [ W_n^(j2 k1) sum_j1 W_n1^(j1 k1) x[j1 n2 + j2] ]

Launch A transforms the n2 columns (length n1, stride n2) and multiplies by W_n^(j2 k1), writing
Y[k1 n2 + j2]; launch B transforms the n1 rows of Y (length n2, contiguous) and writes X[k1 + n1 k2].
A threadgroup takes C neighbouring columns (or rows) at once, so that every global read and write
moves C neighbouring elements (whole 32-byte sectors at C = 4 complex64). Inside a group the
transform is fft_regs.py's: Stockham stages of radix 16, 8, 4 (and the odd primes up to 13) in
registers, the first reading device memory, the last writing it, threadgroup memory between
(1024 points: three stages, three barriers). The twiddles between the launches are
W_n^m = W_n2^(m / n1) W_n^(m mod n1), two tables computed on the host in float64.

fft.py's one launch per pass moves the whole array once per pass (seven times for 2^20); this moves
it twice. The CPU backend keeps fft.py's passes (kernels with barriers run as fibers there).
"""

from __future__ import annotations

import functools
import math

import numpy as np

import metalcall as mc

from . import cache
from . import fft as F
from . import fft_regs, fft_tg


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


@functools.lru_cache(maxsize=1024)
def _valid(n: int, n1: int, n2: int) -> bool:
    return n1 * n2 == n and all(2 <= v <= fft_tg.MAX_N and F.factors(v) for v in (n1, n2))


def usable(dev: mc.Device, n: int) -> bool:
    """Whether rows of length n take this path on dev (GPU backends, n over fft_tg.MAX_N with a split)."""
    return dev.backend != "cpu" and n > fft_tg.MAX_N and split(n) is not None


def lanes_per_group(length: int, itemsize: int, budget: int, threads: int = 1024) -> int:
    """C: a power of two, LANES or more where the transform has few threads a lane (at least
    MIN_THREADS threads a group), fewer where its padded rows would pass `budget` bytes or the
    group `threads` threads."""
    tpc = fft_regs.threads_per_lane(length)
    c = LANES
    while c * tpc < MIN_THREADS:
        c *= 2
    while c > 1 and (c * fft_regs.lane_stride(length, c, itemsize) * itemsize > budget or c * tpc > threads):
        c //= 2
    return c


# LANES: the sequences a group takes (more where a transform has under MIN_THREADS threads in all,
# fewer where threadgroup memory runs out); DYNAMIC: whether its threadgroup array is the launch's
# dynamic threadgroup memory (on CUDA, past a static array's 48 KiB). Tests and the H200 probe
# (P2.3's speed target) try other values.
LANES = 8
DYNAMIC = False
MIN_THREADS = 128


def _budget(dev: mc.Device) -> int:
    """Threadgroup memory for one group: the device's, at most 48 KiB (CUDA's static limit) unless DYNAMIC."""
    return int(dev.threadgroup_memory_length) if DYNAMIC else min(int(dev.threadgroup_memory_length), 48 * 1024)


def _pass(dev, post, n, length, count, strides, dt, inverse, load_lanes_inner, post_twiddle):
    """(kernel, groups per row, threads per group, threadgroup memory or None, arguments after src
    and dst) of one launch."""
    lanes = lanes_per_group(length, dt.itemsize, _budget(dev))
    params = F.params_buffer(dev, (count, *strides, n, count))  # P[6]: launch A's count is n2
    while True:  # fewer lanes where the pipeline allows fewer threads (registers)
        kern = cache.kernel(dev, fft_regs.source(length, dt, inverse, lanes, load_lanes_inner, post_twiddle, DYNAMIC,
                                                 "mnp_fft_4step"), "mnp_fft_4step", fast_math=False)
        tg = lanes * fft_regs.threads_per_lane(length)
        if tg <= kern.max_total_threads_per_threadgroup:
            break
        if lanes == 1:
            raise mc.DeviceError(f"[metalcall.numpy] fft: a pipeline allows {kern.max_total_threads_per_threadgroup} "
                                 f"threads per threadgroup, fewer than a transform of {length} needs")
        lanes //= 2
    smem = lanes * fft_regs.lane_stride(length, lanes, dt.itemsize) * dt.itemsize if DYNAMIC else None
    return kern, -(-count // lanes), tg, smem, (_table(dev, length, dt, inverse), post, params)


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


_TABLES: dict = {}


def _table(dev, n, dt, inverse):
    """fft_regs.twiddles(n) on dev, once per length, dtype and direction."""
    key = (dev, n, dt, inverse)
    buf = _TABLES.get(key)
    if buf is None:
        if len(_TABLES) > 256:
            _TABLES.clear()
        buf = _TABLES[key] = dev.asarray(fft_regs.twiddles(n, inverse).astype(dt))
    return buf


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
    if dt not in F._TYPES or parts is None or not _valid(n, *parts):
        raise mc.ArgumentError(f"fft_4step: complex rows of n = n1 * n2 elements, n1 and n2 in 2..{fft_tg.MAX_N} "
                               f"with prime factors <= 13, got {dt} rows of {n} (n1 = {n1})")
    if batch * n >= 2**32:
        raise mc.ArgumentError("fft: at most 2**32 - 1 elements per call")
    y, out = cache.empty(dev, batch * n, dt), cache.empty(dev, batch * n, dt)  # written whole: no zero fill
    for (kern, blocks, tg, smem, args), (a, b) in zip(_plan(dev, n, parts[0], dt, inverse), ((src, y), (y, out))):
        cache.launch(kern, (batch * blocks * tg, 1, 1), a, b, *args, threadgroup=(tg, 1, 1), threadgroup_memory=smem)
    return out
