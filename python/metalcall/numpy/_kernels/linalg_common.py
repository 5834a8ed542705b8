"""What the linear-algebra kernels share: one threadgroup owns one matrix of a batch.

Each factorisation is written once, as the work of the threadgroup that owns matrix `g`: its
threads `tid` share loops (`for (i = tid; i < n; i += NTG)`) and `SYNC` separates the phases.
GPUs run it with NTG threads per group and `SYNC` a threadgroup barrier. The CPU backend runs
the same text with one thread per group and no barrier (a kernel that reaches a barrier runs
its threads as fibers there, many times slower), so the matrices of a batch spread over the
worker pool and each is factored by plain loops. `cache.force_gpu_variants` (the tests) runs
the GPU text on the CPU backend too.
"""

from __future__ import annotations

import string
from typing import Any

import numpy as np

import metalcall as mc

from . import cache

BARRIER = "threadgroup_barrier(mem_flags::mem_device | mem_flags::mem_threadgroup);"
MAX_THREADS = 256


def group_size(dev: mc.Device, width: int) -> int:
    """Threads per matrix: 1 on the CPU backend, else a power of two from 32 to MAX_THREADS that
    covers `width` (the widest loop a phase shares out)."""
    if cache.uses_loops(dev):
        return 1
    t = 32
    while t < width and t < MAX_THREADS:
        t *= 2
    return t


def float_type(dtype: Any) -> np.dtype:
    """The dtypes the kernels compute in: float32 or float64."""
    dt = np.dtype(dtype)
    if dt not in (np.float32, np.float64):
        raise mc.ArgumentError(f"metalcall.numpy linalg kernels take float32 or float64, not {dt}")
    return dt


def render(template: str, dtype: Any, threads: int, **extra: Any) -> str:
    """The MSL of `template` for one dtype and group size: $T the scalar type, $NTG the threads per
    group, $SYNC the barrier (nothing with one thread), $EPS and $TINY the dtype's epsilon and
    smallest normal number, plus `extra` substitutions."""
    dt = float_type(dtype)
    fi = np.finfo(dt)
    t = cache.msl_type(dt)
    subs = {
        "T": t,
        "NTG": f"{threads}u",
        "SYNC": BARRIER if threads > 1 else "",
        "EPS": f"{t}({float(fi.eps)!r})",
        "TINY": f"{t}({float(fi.tiny)!r})",
        "MAXEXP": str(int(fi.maxexp) - 3),
        **{k: str(v) for k, v in extra.items()},
    }
    return cache.header() + string.Template(template).substitute(subs)


def run(dev: mc.Device, template: str, name: str, dtype: Any, threads: int, batch: int, *args: Any,
        **extra: Any) -> None:
    """Queues kernel `name` of `template` with one group of `threads` threads per matrix (fewer where
    the compiled pipeline allows fewer: its limit depends on the registers the kernel uses)."""
    while True:
        kern = cache.kernel(dev, render(template, dtype, threads, **extra), name, fast_math=False)
        if threads == 1 or kern.max_total_threads_per_threadgroup >= threads:
            break
        threads //= 2
    cache.launch(kern, batch * threads, *args, threadgroup=(threads, 1, 1))


# The round-robin ("chess tournament") order of the pairs of Jacobi methods: in step s of a sweep
# over N (even) indices, pair k is (s, N-1) for k = 0, else ((s+k) mod (N-1), (s-k) mod (N-1)).
# Every pair meets once per sweep and the pairs of one step are disjoint, so one step's rotations
# run in parallel.
JACOBI_PAIR = """
inline void jacobi_pair(uint step, uint k, uint N, thread uint& p, thread uint& q) {
  uint a, b;
  if (k == 0) { a = step; b = N - 1; }
  else { a = (step + k) % (N - 1); b = (step + (N - 1) - k) % (N - 1); }
  p = min(a, b); q = max(a, b);
}
"""


def scaling(src: str, count: str) -> str:
    """MSL setting `scale` (a threadgroup $T the kernel declares, with `partial_max[$NTG]`) to a power
    of two that brings the largest |src[e]|, e < count, into [1, 2), so that sums of squares of the
    scaled values neither overflow nor underflow (LAPACK scales its norms for the same reason);
    1 when every value is 0 or one is not finite. Results are scaled back exactly."""
    return f"""
  {{
    $T largest = $T(0);
    for (uint e = tid; e < {count}; e += $NTG) largest = fmax(largest, fabs({src}[e]));
    partial_max[tid] = largest;
    $SYNC
    if (tid == 0) {{
      for (uint t = 1; t < $NTG; ++t) largest = fmax(largest, partial_max[t]);
      const $T exponent = fmin(fmax(-floor(log2(largest)), $T(-$MAXEXP)), $T($MAXEXP));
      scale = largest > $T(0) && isfinite(largest) ? exp2(exponent) : $T(1);
    }}
    $SYNC
  }}
"""
