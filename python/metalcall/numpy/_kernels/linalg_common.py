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

import functools
import string
from typing import Any

import numpy as np

import metalcall as mc

from . import cache

BARRIER = "threadgroup_barrier(mem_flags::mem_device | mem_flags::mem_threadgroup);"
MAX_THREADS = 256
MAX_SIMD_THREADS = 1024  # kernels with one SIMD-group per task: up to width^2 threads (cache.sized_kernel)


def group_size(dev: mc.Device, width: int) -> int:
    """Threads per matrix: 1 on the CPU backend, else a power of two from 32 to MAX_THREADS that
    covers `width` (the widest loop a phase shares out)."""
    if cache.uses_loops(dev):
        return 1
    t = 32
    while t < width and t < MAX_THREADS:
        t *= 2
    return t


def float_type(dtype: Any, *, complex_ok: bool = False) -> np.dtype:
    """The dtypes the kernels compute in: float32 or float64 (and complex64, complex128 where the
    kernel is written with the la_* arithmetic of ARITHMETIC)."""
    dt = np.dtype(dtype)
    allowed = (np.float32, np.float64) + ((np.complex64, np.complex128) if complex_ok else ())
    if dt not in allowed:
        raise mc.ArgumentError(f"metalcall.numpy linalg kernels take {', '.join(np.dtype(a).name for a in allowed)}, "
                               f"not {dt}")
    return dt


def real_type(dtype: Any) -> np.dtype:
    dt = np.dtype(dtype)
    return np.dtype(np.float32 if dt == np.complex64 else np.float64 if dt == np.complex128 else dt)


# The element arithmetic kernels written once for real and complex dtypes use: $T the element
# type, $R its real type. Complex numbers are a struct of two reals (the layout of NumPy's
# complex64/complex128, which metalcall binds to it); products, Smith's division and LAPACK's
# |re| + |im| (the pivot size of izamax) are NumPy's and LAPACK's.
_REAL_ARITHMETIC = """
inline $T la_make($R re, $R im) { return re; }
inline $T la_add($T a, $T b) { return a + b; }
inline $T la_sub($T a, $T b) { return a - b; }
inline $T la_mul($T a, $T b) { return a * b; }
inline $T la_div($T a, $T b) { return a / b; }
inline $T la_divr($T a, $R r) { return a / r; }
inline $T la_scale($T a, $R r) { return a * r; }
inline $T la_conj($T a) { return a; }
inline $R la_re($T a) { return a; }
inline $R la_im($T a) { return $R(0); }
inline $R la_abs1($T a) { return fabs(a); }
inline $R la_abs2($T a) { return a * a; }
inline $R la_abs($T a) { return fabs(a); }
inline bool la_iszero($T a) { return a == $T(0); }
"""
_COMPLEX_ARITHMETIC = """
struct la_complex { $R re; $R im; };
inline $T la_make($R re, $R im) { $T z; z.re = re; z.im = im; return z; }
inline $T la_add($T a, $T b) { return la_make(a.re + b.re, a.im + b.im); }
inline $T la_sub($T a, $T b) { return la_make(a.re - b.re, a.im - b.im); }
inline $T la_mul($T a, $T b) { return la_make(a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re); }
inline $T la_div($T a, $T b) {
  const $R ar = fabs(b.re), ai = fabs(b.im);
  if (ar >= ai) {
    if (ar == $R(0) && ai == $R(0)) return la_make(a.re / ar, a.im / ar);
    const $R rat = b.im / b.re, scl = $R(1) / (b.re + b.im * rat);
    return la_make((a.re + a.im * rat) * scl, (a.im - a.re * rat) * scl);
  }
  const $R rat = b.re / b.im, scl = $R(1) / (b.im + b.re * rat);
  return la_make((a.re * rat + a.im) * scl, (a.im * rat - a.re) * scl);
}
inline $T la_divr($T a, $R r) { return la_make(a.re / r, a.im / r); }
inline $T la_scale($T a, $R r) { return la_make(a.re * r, a.im * r); }
inline $T la_conj($T a) { return la_make(a.re, -a.im); }
inline $R la_re($T a) { return a.re; }
inline $R la_im($T a) { return a.im; }
inline $R la_abs1($T a) { return fabs(a.re) + fabs(a.im); }
inline $R la_abs2($T a) { return a.re * a.re + a.im * a.im; }
inline $R la_abs($T a) {
  const $R m = fmax(fabs(a.re), fabs(a.im));
  if (m == $R(0) || !isfinite(m)) return m;
  const $R x = a.re / m, y = a.im / m;
  return m * sqrt(x * x + y * y);
}
inline bool la_iszero($T a) { return a.re == $R(0) && a.im == $R(0); }
"""


@functools.lru_cache(maxsize=512)  # rendering costs ~0.2 ms (Template.substitute over the whole text): once per form
def render(template: str, dtype: Any, threads: int, **extra: Any) -> str:
    """The MSL of `template` for one dtype and group size: $T the element type and $R its real type
    (with the la_* arithmetic on them), $NTG the threads per group, $SYNC the barrier (nothing with
    one thread), $EPS and $TINY the real type's epsilon and smallest normal number, plus `extra`
    substitutions."""
    dt = float_type(dtype, complex_ok=True)
    rdt = real_type(dt)
    fi = np.finfo(rdt)
    r = cache.msl_type(rdt)
    t = "la_complex" if dt.kind == "c" else r
    template = (_COMPLEX_ARITHMETIC if dt.kind == "c" else _REAL_ARITHMETIC) + PIVOT_SIZE + template
    subs = {
        "T": t,
        "R": r,
        "NTG": f"{threads}u",
        "SYNC": BARRIER if threads > 1 else "",
        "EPS": f"{r}({float(fi.eps)!r})",
        "TINY": f"{r}({float(fi.tiny)!r})",
        "MAXEXP": str(int(fi.maxexp) - 3),
        **{k: str(v) for k, v in extra.items()},
    }
    return cache.header() + string.Template(template).substitute(subs)


def run(dev: mc.Device, template: str, name: str, dtype: Any, threads: int, batch: int, *args: Any,
        **extra: Any) -> None:
    """Queues kernel `name` of `template` with one group of `threads` threads per matrix (fewer where
    the compiled pipeline allows fewer: its limit depends on the registers the kernel uses)."""
    kern, threads = cache.sized_kernel(dev, lambda tg, _: render(template, dtype, tg, **extra), name, threads,
                                       fast_math=False)
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

// The tangent t = tan(angle) of the Jacobi rotation for theta = (a_qq - a_pp) / (2 |a_pq|): the
// smaller root of t^2 + 2 theta t = 1, its square root kept from overflowing for large theta.
inline $R jacobi_tangent($R theta) {
  const $R root = fabs(theta) > $R(1) ? fabs(theta) * sqrt($R(1) + ($R(1) / theta) / theta) : sqrt($R(1) + theta * theta);
  return (theta >= $R(0) ? $R(1) : $R(-1)) / (fabs(theta) + root);
}

// The rotation G = [[c, s], [-s conj(ph), c conj(ph)]] with G^H A G zero at (p, q), of the Hermitian
// 2x2 [[app, apq], [conj(apq), aqq]] (ph = apq / |apq|: +-1 for real matrices); false, and the
// identity, where |apq| is negligible (TINY or below tol sqrt|app| sqrt|aqq|).
inline bool jacobi_rotation($R app, $R aqq, $T apq, $R tol, thread $R& c, thread $R& s, thread $T& ph) {
  c = $R(1);
  s = $R(0);
  ph = la_make($R(1), $R(0));
  const $R size = la_abs(apq);
  if (!(size > $TINY && size > tol * sqrt(fabs(app)) * sqrt(fabs(aqq)))) return false;
  ph = la_divr(apq, size);
  const $R t = jacobi_tangent((aqq - app) / ($R(2) * size));
  c = $R(1) / sqrt($R(1) + t * t);
  s = t * c;
  return true;
}

// The two entries (a, b) of a pair of rows or columns after a rotation by (c, s): (c a - s b, s a + c b).
inline $T rot_first($T a, $T b, $R c, $R s) { return la_sub(la_scale(a, c), la_scale(b, s)); }
inline $T rot_second($T a, $T b, $R c, $R s) { return la_add(la_scale(a, s), la_scale(b, c)); }
"""


# The size a pivot search compares for a candidate of size `s`: reference LAPACK's i?amax starts from
# the first candidate and takes a later one only if strictly larger, so a NaN wins where it comes
# first and never elsewhere (then the solution is NaN, as NumPy's, not a false zero pivot).
PIVOT_SIZE = """
inline $R pivot_size($R s, bool first) { return isnan(s) ? (first ? $R(INFINITY) : $R(-1)) : s; }
"""


def pivot_search(a: str, sync: str, on_found: str) -> str:
    """MSL choosing getrf's pivot for column k of the n x n matrix `a` (the first largest |re| + |im|
    at or below row k, the group's threads each searching some rows; PIVOT_SIZE for NaN) into the
    threadgroup `pivot_row`; the kernel declares it with `best_value[$NTG]` and `best_row[$NTG]`
    (render adds PIVOT_SIZE). `on_found` runs on thread 0 with `row` the pivot's row; `sync` is
    the group's barrier."""
    return f"""
    {{
      $R best = $R(-1);
      uint row = k;
      for (uint i = k + tid; i < n; i += $NTG) {{
        const $R v = pivot_size(la_abs1({a}[i * n + k]), i == k);
        if (v > best) {{ best = v; row = i; }}
      }}
      best_value[tid] = best;
      best_row[tid] = row;
      {sync}
      if (tid == 0) {{
        const uint found = min($NTG, n - k);  // the threads that looked at a row
        for (uint t = 1; t < found; ++t)
          if (best_value[t] > best || (best_value[t] == best && best_row[t] < row)) {{ best = best_value[t]; row = best_row[t]; }}
        pivot_row = row;
        {on_found}
      }}
      {sync}
    }}"""


def scaling(src: str, count: str) -> str:
    """MSL setting `scale` (a threadgroup $R the kernel declares, with `partial_max[$NTG]`) to a power
    of two that brings the largest |src[e]|, e < count, into [1, 2), so that sums of squares of the
    scaled values neither overflow nor underflow (LAPACK scales its norms for the same reason);
    1 when every value is 0 or one is not finite. Results are scaled back exactly."""
    return f"""
  {{
    $R largest = $R(0);
    for (uint e = tid; e < {count}; e += $NTG) largest = fmax(largest, la_abs1({src}[e]));
    partial_max[tid] = largest;
    $SYNC
    if (tid == 0) {{
      for (uint t = 1; t < $NTG; ++t) largest = fmax(largest, partial_max[t]);
      const $R exponent = fmin(fmax(-floor(log2(largest)), $R(-$MAXEXP)), $R($MAXEXP));
      scale = largest > $R(0) && isfinite(largest) ? exp2(exponent) : $R(1);
    }}
    $SYNC
  }}
"""
