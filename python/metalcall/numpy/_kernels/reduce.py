"""Reductions over the middle axis of (outer, n, inner): sum, prod, min, max, any, all,
argmin, argmax, and mean/variance (moments), generated as MSL per op and dtype.

Two kernel shapes: a threadgroup kernel (SIMD shuffles + threadgroup memory, one threadgroup
or a grid of them per row) for inner == 1 on GPUs, and a plain loop kernel (one thread per
output, or per chunk of a row) for inner > 1 and for the CPU backend, where kernels with
barriers or SIMD functions run as fibers. Long rows with few outputs take two stages: partial
results per chunk, then a merge of the partials with the same kernels. The CPU backend's own
kernels are in reduce_cpu.py, what both share in reduce_source.py.
"""

from __future__ import annotations

import functools
from typing import Any, Callable

import numpy as np

import metalcall as mc

from . import cache
from .reduce_cpu import _LANES_FROM, _columns_source, _decide_source, _lanes, _row_source
from .reduce_source import _ARG, _NO_IDENTITY, _NONE, OPS, _helpers, _load, _params, _store, _thread_kernel_head


def _acc_type(op: str, dtype: np.dtype, out_dtype: np.dtype, loops: bool = False) -> np.dtype:
    """The type a reduction accumulates in; `loops`: the CPU backend's kernels (no SIMD shuffles)."""
    if op in ("any", "all"):
        return np.dtype(np.uint32)
    if op in ("sum", "prod", "mean", "sqdev"):
        return cache.accumulator(out_dtype if out_dtype.kind != "b" else np.int64)
    # min/max/argmin/argmax compare in the input type, narrow integers widened to 32 bits so
    # SIMD shuffles take them on every GPU backend. The CPU's kernels keep them narrow: a vector
    # then folds 4x the elements (max of 1e6 uint8: 48 -> 21 µs on the 2-core box).
    if dtype.kind == "f":
        return cache.accumulator(dtype)
    if dtype.kind == "b":
        return np.dtype(np.uint32)
    if dtype.itemsize < 4 and not loops:
        return np.dtype(np.int32 if dtype.kind == "i" else np.uint32)
    return dtype


def _identity(op: str, acc: np.dtype) -> str:
    if op in ("sum", "any", "mean", "sqdev"):
        return cache.literal(acc, 0)
    if op in ("prod", "all"):
        return cache.literal(acc, 1)
    smallest = op in ("min", "argmin")  # the identity of min is the largest value
    if acc.kind == "f":
        return cache.literal(acc, float("inf") if smallest else float("-inf"))
    info = np.iinfo(acc)
    return cache.literal(acc, info.max if smallest else info.min)


def _step(op: str, load: str, first: bool, j: str, S: str, A: str) -> str:
    """Statements folding element j (at src[base + j * inner]) into acc/kk."""
    if op in _ARG:
        k = j if first else f"kin[base + ulong({j}) * inner]"
        return (f"{{ {S} x = src[base + ulong({j}) * inner]; uint bk = {k}; {A} b = {load};\n"
                f"      if (better(b, bk, acc, kk)) {{ acc = b; kk = bk; }} }}")
    return f"{{ {S} x = src[base + ulong({j}) * inner]; acc = comb(acc, {load}); }}"


def _loop_body(op: str, load: str, first: bool, S: str, A: str, is_float: bool) -> str:
    if op in ("min", "max") and is_float:
        # A plain compare-select loop the compiler vectorises, NaNs counted on the side (the
        # NaN-propagating comb() has a branch that keeps loops scalar).
        pick = "<" if op == "min" else ">"
        return ("  uint nans = 0;\n"
                f"  for (uint j = j0; j < j1; ++j) {{ {S} x = src[base + ulong(j) * inner]; {A} v = {load};\n"
                f"    nans |= v != v ? 1u : 0u; acc = v {pick} acc ? v : acc; }}\n"
                f"  if (nans) acc = {A}(NAN);\n")
    return f"  for (uint j = j0; j < j1; ++j) {_step(op, load, first, 'j', S, A)}\n"


@functools.lru_cache(maxsize=None)
def _loop_source(op: str, T: str, A: str, D: str, first: bool, final: bool, is_float: bool,
                 ident: str) -> str:
    S = T if first else A
    load = _load(op, T, A, first)
    mean = f"  const {A} m = mean[ulong(o) * inner + i];\n" if op == "sqdev" and first else ""
    return (_thread_kernel_head(op, S, D, A, first, final, is_float) +
            "  const uint i = t % inner, c = (t / inner) % C, o = t / inner / C;\n"
            "  const ulong base = ulong(o) * n * inner + i;\n"
            "  const uint j0 = c * chunk, j1 = min(n, j0 + chunk);\n"
            f"{mean}"
            f"  {A} acc = {ident}; uint kk = {_NONE};\n"
            f"{_loop_body(op, load, first, S, A, is_float)}"
            "  const ulong out = (ulong(o) * C + c) * inner + i;\n"
            f"  {_store(op, D, final)}\n}}\n")


@functools.lru_cache(maxsize=None)
def _group_source(op: str, T: str, A: str, D: str, first: bool, final: bool, is_float: bool,
                  ident: str, tg: int, w: int) -> str:
    """inner == 1: threadgroup (g, o) folds chunk g of row o; SIMD shuffles, then threadgroup
    memory across SIMD-groups. (Metal could use simd_min etc. where NaN does not matter.)"""
    S = T if first else A
    nw = tg // w
    load = _load(op, T, A, first)
    arg = op in _ARG
    mean = f"  const {A} m = mean[o];\n" if op == "sqdev" and first else ""
    if arg:
        # Four loads in flight per thread, then folded in index order (ties keep the first).
        k = "j + u * " + str(tg) if first else f"kin[base + j + u * {tg}]"
        loop = (f"  uint j = j0 + tid;\n"
                f"  for (; j + {3 * tg} < j1; j += {4 * tg}) {{\n"
                f"    {S} xs[4]; uint ks[4];\n"
                f"    for (uint u = 0; u < 4; ++u) {{ xs[u] = src[base + j + u * {tg}]; ks[u] = {k}; }}\n"
                f"    for (uint u = 0; u < 4; ++u) {{ {S} x = xs[u]; uint bk = ks[u]; {A} b = {load};\n"
                f"      if (better(b, bk, acc, kk)) {{ acc = b; kk = bk; }} }}\n  }}\n"
                f"  for (; j < j1; j += {tg}) {_step(op, load, first, 'j', S, A)}\n")
        shuffle = (f"    {{ {A} b = simd_shuffle_xor(acc, d); uint bk = simd_shuffle_xor(kk, d);\n"
                   "      if (better(b, bk, acc, kk)) { acc = b; kk = bk; } }\n")
    else:
        # Four loads in flight per thread before they are folded.
        loop = (f"  uint j = j0 + tid;\n"
                f"  for (; j + {3 * tg} < j1; j += {4 * tg}) {{\n"
                f"    {A} v[4];\n"
                f"    for (uint u = 0; u < 4; ++u) {{ {S} x = src[base + j + u * {tg}]; v[u] = {load}; }}\n"
                f"    acc = comb(acc, comb(comb(v[0], v[1]), comb(v[2], v[3])));\n  }}\n"
                f"  for (; j < j1; j += {tg}) {_step(op, load, first, 'j', S, A)}\n")
        shuffle = "    acc = comb(acc, simd_shuffle_xor(acc, d));\n"
    keep = "sk[sg] = kk; " if arg else ""
    reload = f"kk = lane < {nw} ? sk[lane] : {_NONE}; " if arg else ""
    return (cache.header() + _helpers(op, A, is_float) +
            "kernel void red(" + ",\n    ".join(_params(op, S, D, A, first, final)) +
            ",\n    uint2 gp [[threadgroup_position_in_grid]],"
            " uint tid [[thread_index_in_threadgroup]],\n"
            "    uint lane [[thread_index_in_simdgroup]], uint sg [[simdgroup_index_in_threadgroup]]) {\n"
            f"  threadgroup {A} sv[{nw}];\n  threadgroup uint sk[{nw}];\n"
            "  const uint c = gp.x, o = gp.y;\n"
            "  const ulong base = ulong(o) * n;\n"
            "  const uint j0 = c * chunk, j1 = min(n, j0 + chunk);\n"
            f"{mean}"
            f"  {A} acc = {ident}; uint kk = {_NONE};\n"
            f"{loop}"
            f"  for (ushort d = {w // 2}; d > 0; d >>= 1) {{\n{shuffle}  }}\n"
            f"  if (lane == 0) {{ sv[sg] = acc; {keep}}}\n"
            "  threadgroup_barrier(mem_flags::mem_threadgroup);\n"
            "  if (sg == 0) {\n"
            f"    acc = lane < {nw} ? sv[lane] : {ident}; {reload}\n"
            f"    for (ushort d = {w // 2}; d > 0; d >>= 1) {{\n  {shuffle}    }}\n"
            "    if (lane == 0) {\n"
            "      const ulong out = ulong(o) * C + c;\n"
            f"      {_store(op, D, final)}\n    }}\n  }}\n}}\n")


# Threadgroup size and the number of threadgroups a GPU reduction of a long row aims for: the
# best of a sweep on an H100 (sum of 1e7 and 1e8 float32, benchmarks/RESULTS.md). A pipeline that
# allows fewer threads per threadgroup gets the most it allows (cache.sized_kernel).
_TG = 512
_GROUPS = 2048


# Elements a chunk of a multi-chunk reduction is a multiple of.
_CHUNK_ALIGN = 16


# Arrays the CPU reduces in one pass with no second stage: waking workers and a second launch
# cost ~6 µs on the 2-core box, in which one core folds ~500 KB of cached data (float32 sums of
# 3e4 / 1e5 elements: 9.5 / 11.7 µs in 8 and 25 chunks, one pass 6.8 / 9.8 µs).
_CPU_ONE_PASS_BYTES = 256 * 1024


def _chunks(dev: mc.Device, outer: int, n: int, inner: int, group: bool, width: int = 1, itemsize: int = 0) -> int:
    """How many chunks to split each row into (1: a single pass); `width`: columns a CPU
    work-item folds (_columns_source); `itemsize`: the elements' (0: not known)."""
    rows = outer * -(-inner // width)
    if cache.uses_loops(dev):
        if itemsize and outer * n * inner * itemsize <= _CPU_ONE_PASS_BYTES:
            return 1
        want, least = 64, max(1, 4096 // width)  # threads for 2-64 cores; elements a thread folds at least
    elif group:
        want, least = _GROUPS, _TG * 16
    else:
        want, least = 65536, 32  # threads in flight
    if n <= least or rows >= (want // 8 if group else want):  # enough rows to fill the device
        return 1
    return max(1, min(-(-n // least), -(-want // rows)))


@functools.lru_cache(maxsize=4096)
def _plan(dev: mc.Device, op: str, T: np.dtype, A: np.dtype, D: np.dtype, outer: int, n: int, inner: int,
          loops: bool) -> tuple[Any, ...]:
    """The kernels, grids and chunking of one reduction shape, worked out once (a call then only
    allocates and launches: Python time per call matters next to a 10 µs GPU reduction)."""
    arg = op in _ARG
    is_float = A.kind == "f"
    Ts, As = cache.msl_type(T), cache.msl_type(A)
    ident = _identity(op, A)
    group = inner == 1 and n >= 64 and not loops
    # The CPU's kernel for inner > 1: a work-item per block of `width` columns (_columns_source).
    width = _lanes(A) if loops and inner > 1 else 1
    c = _chunks(dev, outer, n, inner, group, width, T.itemsize)
    chunk = -(-n // c) if n else 0
    if c > 1:
        # Chunks start on 64-byte lines (4-byte elements): the CPU's vector loads of a chunk that
        # started mid-line each straddled two lines (any of 1e7 float32 on 2 cores, 64 chunks:
        # 372 -> 275 µs; sum 291 -> 236 µs).
        chunk = -(-chunk // _CHUNK_ALIGN) * _CHUNK_ALIGN
        c = -(-n // chunk)
    # Fast math lets the compiler reassociate sums; NaN tests need it off (Metal's fast math
    # may assume there are no NaNs). A mean's partial sums are sums; its division, in the last
    # stage, stays exact.
    sums = op in ("sum", "prod", "any", "all")

    def kern(first: bool, final: bool) -> tuple[mc.Kernel, Any]:
        """The kernel of one stage and its threadgroup (None: the runtime's)."""
        fast = sums or (op == "mean" and not final)
        out_t = ("long" if arg else cache.msl_type(D)) if final else As
        if group:  # SIMD shuffles over the width the pipeline runs with, threadgroups its pipeline allows
            k, tg = cache.sized_kernel(dev, lambda tg, w: _group_source(op, Ts, As, out_t, first, final, is_float,
                                                                       ident, tg, w), "red", _TG, simd=True,
                                       fast_math=fast)
            return k, (tg, 1)
        if loops and inner == 1:
            # The compiler vectorises a fold it may reorder (fast math, integers) on its own; given
            # lanes, clang 16 vectorised across blocks with gathers instead (7x slower).
            long = (chunk if first else c) >= _LANES_FROM
            lanes = _lanes(A) if long and (first if arg else is_float and not fast) else 1
            source = _row_source(op, Ts, As, out_t, first, final, is_float, ident, lanes)
        elif loops:
            source = _columns_source(op, Ts, As, out_t, first, final, is_float, ident, width)
        else:
            source = _loop_source(op, Ts, As, out_t, first, final, is_float, ident)
        return cache.kernel(dev, source, "red", fast_math=fast), None

    def grid(stage: tuple[mc.Kernel, Any], chunks: int) -> Any:
        """One threadgroup per chunk of each row (group kernels), else one thread per output.
        A 1-D grid as an int: a call reads it faster than a tuple (~0.4 µs a call here)."""
        if group:
            return stage[1][0] * chunks if outer == 1 else (stage[1][0] * chunks, outer)
        return outer * chunks * -(-inner // width)

    def threads(stage: tuple[mc.Kernel, Any], chunks: int) -> Any:
        """The stage's threadgroup: the CPU's worker pool shares out whole threadgroups, and the
        runtime's own (up to 1024 threads) put a reduction of 64 chunks on one core."""
        if loops:
            return _cpu_threadgroup(outer * chunks * -(-inner // width))
        return stage[1][0] if group and outer == 1 else stage[1]

    if c == 1:
        k1 = kern(True, True)
        return (1, n, k1[0], grid(k1, 1), None, None, threads(k1, 1), None)
    if loops and op in ("any", "all") and outer * inner == 1:
        # One stage: the chunks that decide the answer store it (_decided_result).
        k1 = cache.kernel(dev, _decide_source(op, Ts), "red", fast_math=True)
        return (c, chunk, k1, c, None, None, _cpu_threadgroup(c), None)
    k1, k2 = kern(True, False), kern(False, True)
    return (c, chunk, k1[0], grid(k1, c), k2[0], grid(k2, 1), threads(k1, c), threads(k2, 1))


_BOOL = np.dtype(np.bool_)


def _decided_result(dev: mc.Device, op: str) -> mc.Buffer:
    """_decide_source's result before its kernel: the answer when no chunk decides it."""
    out = dev.zeros(1, _BOOL)  # false
    if op == "all":
        memoryview(out)[0] = True  # CPU memory: the host writes it in place (0.2 µs; through NumPy 0.4)
    return out


def _cpu_threadgroup(threads: int) -> int:
    """Threads per threadgroup of a loop kernel on the CPU: about 32 threadgroups to share out
    (a worker takes whole ones), at most 1024."""
    return max(1, min(1024, threads // 32))


def _run_here(k: mc.Kernel, grid: Any, *args: Any, threadgroup: Any = None) -> None:
    """A stage on the CPU backend, waited for: the waiting thread runs queued work itself
    (cpu_queue.hpp), where a stage left to the queue's executor thread shared the cores with the
    pool's workers and the caller (mnp.any of 1e7 float32 on 2 cores: 856 -> 624 µs, docs/design.md).
    A call recorded in a `dev.batch()` runs when the batch is committed: it is kept, as launch() does."""
    done = k(grid, *args, threadgroup=threadgroup)
    try:
        done.wait()
    except mc.ArgumentError:  # recorded in a batch not committed yet (nothing was waited for)
        cache.keep(done)


def _run(dev: mc.Device, src: mc.Buffer, op: str, T: np.dtype, A: np.dtype, D: np.dtype,
         outer: int, n: int, inner: int, extra: list[Any]) -> mc.Buffer:
    """One reduction (one or two stages); `extra` holds the mean buffer and/or divisor."""
    loops = cache.uses_loops(dev)
    return _run_planned(dev, src, op, T, A, D, loops, _plan(dev, op, T, A, D, outer, n, inner, loops),
                        outer, n, inner, extra)


def _run_planned(dev: mc.Device, src: mc.Buffer, op: str, T: np.dtype, A: np.dtype, D: np.dtype, loops: bool,
                 plan: tuple[Any, ...], outer: int, n: int, inner: int, extra: list[Any]) -> mc.Buffer:
    c, chunk, k1, grid1, k2, grid2, tg1, tg2 = plan
    launch = _run_here if loops else cache.launch
    if k2 is None and c > 1:  # any/all on the CPU in one stage (_decide_source); n > 0 here
        out = _decided_result(dev, op)
        launch(k1, grid1, src, out, n, chunk, threadgroup=tg1)
        return out
    out = dev._empty(outer * inner, D)
    if not src.nbytes:
        src = cache.empty(dev, 1, T, zeroed=True)  # kernels refuse empty buffers; never read
    if not extra and op not in _ARG:  # the common cases, kept short: Python time counts here
        if c == 1:
            launch(k1, grid1, src, out, n, inner, n, 1, threadgroup=tg1)
        else:
            part = dev._empty(outer * c * inner, A)
            launch(k1, grid1, src, part, n, inner, chunk, c, threadgroup=tg1)
            launch(k2, grid2, part, out, c, inner, c, 1, threadgroup=tg2)
        return out
    mean = [x for x in extra if isinstance(x, mc.Buffer)]
    # The divisor in the accumulator's type, as raw bytes: a `constant double&` takes no number.
    div = [np.array(x, A).tobytes() for x in extra if not isinstance(x, mc.Buffer)]
    arg = op in _ARG
    dummy = [cache.empty(dev, 1, np.uint32)] if arg else []
    if c == 1:
        launch(k1, grid1, src, out, *dummy, *dummy, *mean, n, inner, n, 1, *div, threadgroup=tg1)
        return out
    part = cache.empty(dev, outer * c * inner, A)
    kpart = [cache.empty(dev, outer * c * inner, np.uint32)] if arg else []
    launch(k1, grid1, src, part, *dummy, *kpart, *mean, n, inner, chunk, c, *div, threadgroup=tg1)
    launch(k2, grid2, part, out, *kpart, *dummy, c, inner, c, 1, *div, threadgroup=tg2)
    return out


def reduce(dev: mc.Device, src: mc.Buffer, dtype: Any, outer: int, n: int, inner: int, op: str,
           out_dtype: Any) -> mc.Buffer:
    """Reduces the (outer, n, inner) array in `src` over n with `op`; a flat Buffer of
    outer * inner elements of out_dtype (int64 for argmin/argmax)."""
    key = (dev, op, dtype, out_dtype, outer, n, inner)
    ready = _READY.get(key)
    if ready is None:
        if op not in OPS:
            raise mc.ArgumentError(f"unknown reduction {op!r}; expected one of {', '.join(OPS)}")
        loops = cache.uses_loops(dev)
        T, D, A = _types(op, dtype, out_dtype, loops)
        if n == 0 and op in _NO_IDENTITY and outer * inner:
            raise mc.ArgumentError(_NO_IDENTITY[op])
        if outer * inner == 0:
            return cache.empty(dev, 0, D)
        ready = (T, A, D, loops, _plan(dev, op, T, A, D, outer, n, inner, loops))
        if len(_READY) > 4096:
            _READY.clear()
        _READY[key] = ready
    return _run_planned(dev, src, op, *ready, outer, n, inner, ())


# reduce()'s shapes seen, each with its types and plan: one dictionary lookup a call (Python time
# is in series with a short GPU reduction).
_READY: dict = {}


def whole(dev: mc.Device, src: mc.Buffer, dtype: Any, n: int, op: str, out_dtype: Any) -> mc.Buffer:
    """reduce() of a whole array (outer = inner = 1) to one element: `float(mnp.sum(x))`. A runner
    made once per device, op, types and size launches the stages without reduce()'s layers (on
    the 2-core box 0.85 µs of its 2.6 for 1000 float32; this Python is in series with a ~10 µs
    GPU reduction, and several times slower on the H200's host)."""
    run = _WHOLE.get((id(dev), op, dtype, out_dtype, n))  # id: a Device's hash is a C++ call (~70 ns); the runner holds dev
    if run is None:
        run = _whole_runner(dev, op, dtype, out_dtype, n)
    return run(src)


_WHOLE: dict = {}


def _whole_runner(dev: mc.Device, op: str, dtype: Any, out_dtype: Any, n: int) -> Callable[[mc.Buffer], mc.Buffer]:
    if op == "mean":
        return _whole_mean_runner(dev, dtype, out_dtype, n)
    if op not in OPS or n == 0:  # reduce() says what is wrong, or fills an empty array's result
        return lambda src: reduce(dev, src, dtype, 1, n, 1, op, out_dtype)
    loops = cache.uses_loops(dev)
    T, D, A = _types(op, dtype, out_dtype, loops)
    plan = _plan(dev, op, T, A, D, 1, n, 1, loops)
    c, chunk, k1, grid1, k2, grid2, tg1, tg2 = plan
    launch = _run_here if loops else cache.launch
    empty = dev._empty
    if op in _ARG:
        def run(src: mc.Buffer) -> mc.Buffer:
            return _run_planned(dev, src, op, T, A, D, loops, plan, 1, n, 1, ())
    elif k2 is None and c > 1:  # any/all on the CPU in one stage (_decide_source), _run_here inlined (a Python
        # call less in a 1e6 any that must stay within 1.11x numba's whole call; keep the two alike)
        def run(src: mc.Buffer) -> mc.Buffer:
            out = _decided_result(dev, op)
            done = k1(grid1, src, out, n, chunk, threadgroup=tg1)
            try:
                done.wait()
            except mc.ArgumentError:  # recorded in a batch not committed yet
                cache.keep(done)
            return out
    elif c == 1:
        def run(src: mc.Buffer) -> mc.Buffer:
            out = empty(1, D)
            launch(k1, grid1, src, out, n, 1, n, 1, threadgroup=tg1)
            return out
    else:
        def run(src: mc.Buffer) -> mc.Buffer:
            out, part = empty(1, D), empty(c, A)
            launch(k1, grid1, src, part, n, 1, chunk, c, threadgroup=tg1)
            launch(k2, grid2, part, out, c, 1, c, 1, threadgroup=tg2)
            return out
    return _keep_whole(dev, op, dtype, out_dtype, n, run)


def _keep_whole(dev: mc.Device, op: str, dtype: Any, out_dtype: Any, n: int,
                run: Callable[[mc.Buffer], mc.Buffer]) -> Callable[[mc.Buffer], mc.Buffer]:
    if len(_WHOLE) > 4096:
        _WHOLE.clear()
    _WHOLE[(id(dev), op, dtype, out_dtype, n)] = run
    return run


def _whole_mean_runner(dev: mc.Device, dtype: Any, out_dtype: Any, n: int) -> Callable[[mc.Buffer], mc.Buffer]:
    """whole()'s runner for the mean of n > 0 elements: mean()'s stages, whose last divides, with
    the divisor's bytes made once (through mean() and _run_planned, the Python around the same
    kernels took ~7 µs of `float(mnp.mean(x))` on the 2-core box, against `float(mnp.sum(x))`'s ~1)."""
    T, D = np.dtype(dtype), np.dtype(out_dtype)
    if n == 0 or D.kind != "f":  # mean() says what is wrong
        return lambda src: mean(dev, src, dtype, 1, n, 1, out_dtype)
    A = cache.accumulator(D)
    loops = cache.uses_loops(dev)
    c, chunk, k1, grid1, k2, grid2, tg1, tg2 = _plan(dev, "mean", T, A, D, 1, n, 1, loops)
    launch = _run_here if loops else cache.launch
    empty = dev._empty
    div = np.array(float(n), A).tobytes()  # a `constant` float or double& takes raw bytes
    if c == 1:
        def run(src: mc.Buffer) -> mc.Buffer:
            out = empty(1, D)
            launch(k1, grid1, src, out, n, 1, n, 1, div, threadgroup=tg1)
            return out
    else:
        def run(src: mc.Buffer) -> mc.Buffer:
            out, part = empty(1, D), empty(c, A)
            launch(k1, grid1, src, part, n, 1, chunk, c, div, threadgroup=tg1)
            launch(k2, grid2, part, out, c, 1, c, 1, div, threadgroup=tg2)
            return out
    return _keep_whole(dev, "mean", dtype, out_dtype, n, run)


@functools.lru_cache(maxsize=1024)
def _types(op: str, dtype: Any, out_dtype: Any, loops: bool) -> tuple[np.dtype, np.dtype, np.dtype]:
    """(source, result, accumulator) dtypes of a reduction; `loops`: on the CPU backend."""
    T = np.dtype(dtype)
    D = np.dtype(np.int64) if op in _ARG else np.dtype(out_dtype)
    if op in ("any", "all"):
        D = np.dtype(np.bool_)
    return T, D, _acc_type(op, T, D, loops)


def _convert(dev: mc.Device, src: mc.Buffer, count: int, src_dtype: np.dtype,
             dst_dtype: np.dtype) -> mc.Buffer:
    if src_dtype == dst_dtype:
        return src
    S, D = cache.msl_type(src_dtype), cache.msl_type(dst_dtype)
    source = (cache.header() + f"kernel void cvt(const device {S}* a [[buffer(0)]], device {D}* b [[buffer(1)]],"
              " uint i [[thread_position_in_grid]]) { b[i] = " + D + "(a[i]); }\n")
    out = cache.empty(dev, count, dst_dtype)
    if count:
        cache.launch(cache.kernel(dev, source, "cvt"), count, src, out)
    return out


def mean(dev: mc.Device, src: mc.Buffer, dtype: Any, outer: int, n: int, inner: int, out_dtype: Any) -> mc.Buffer:
    """The mean over n (n > 0) of the (outer, n, inner) array in `src`, as one reduction whose last
    stage divides by n: accumulated in out_dtype (float for half), stored as out_dtype."""
    T, D = np.dtype(dtype), np.dtype(out_dtype)
    if D.kind != "f":
        raise mc.ArgumentError(f"mean needs a floating out_dtype, got {D}")
    if outer * inner == 0:
        return cache.empty(dev, 0, D)
    return _run(dev, src, "mean", T, cache.accumulator(D), D, outer, n, inner, [float(n)])


def moments(dev: mc.Device, src: mc.Buffer, dtype: Any, outer: int, n: int, inner: int,
            correction: float, out_dtype: Any) -> tuple[mc.Buffer, mc.Buffer]:
    """Mean and variance (sum of squared deviations / max(n - correction, 0)) over n, two-pass:
    the mean first, then the squared deviations from it, both accumulated in out_dtype (float
    for half). n == 0 gives NaN, as NumPy does."""
    T, D = np.dtype(dtype), np.dtype(out_dtype)
    if D.kind != "f":
        raise mc.ArgumentError(f"moments need a floating out_dtype, got {D}")
    A = cache.accumulator(D)
    if outer * inner == 0:
        return cache.empty(dev, 0, D), cache.empty(dev, 0, D)
    mean = _run(dev, src, "mean", T, A, A, outer, n, inner, [float(n)])
    var = _run(dev, src, "sqdev", T, A, D, outer, n, inner, [mean, max(float(n) - float(correction), 0.0)])
    return _convert(dev, mean, outer * inner, A, D), var
