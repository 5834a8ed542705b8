"""The standard suite of `python -m metalcall bench` on one device: dispatch latency, copy and
c = a * b bandwidth over a size sweep, the compute-heavy FMA kernel, compile times. Every
kernel's result is checked against NumPy; every figure comes back in one JSON-safe dict.
"""

from __future__ import annotations

import os
import tempfile
import time
from typing import Any, Callable, Optional

import numpy as np

import metalcall as mc
from metalcall import _bench



class Settings:
    """How much work the suite does: --quick makes every part CI-sized."""

    def __init__(self, quick: bool, max_size: Optional[int]) -> None:
        self.quick = quick
        self.max_size = max_size
        self.budget = 0.03 if quick else 0.15  # seconds of timed calls per measured point
        self.latency_seconds = 0.005 if quick else 0.03
        self.repeats = 2 if quick else 3


def sweep_sizes(dev: mc.Device, settings: Settings) -> list[int]:
    """2^10, 2^12, ... up to 2^28, --max-size, and what memory allows (six float32 arrays of n)."""
    if settings.max_size is not None:
        top = settings.max_size
    elif settings.quick:
        top = 1 << 18
    else:
        top = 1 << 24 if dev.backend == "cpu" else 1 << 28
    memory = dev.memory_size or 0
    host = _host_memory()
    limits = [m // 4 for m in (memory, host) if m]  # a quarter of memory for 24 bytes per element
    if limits:
        top = min(top, min(limits) // 24)
    return [1 << e for e in range(10, 29, 2) if 1 << e <= top] or [1 << 10]


def _host_memory() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 0


def latency(dev: mc.Device, settings: Settings) -> list[dict[str, Any]]:
    """Host µs per 1-element c = a * b call: kept Completions, waited each, inside dev.batch()."""
    mul = dev.compile(_bench.MUL_SOURCE).mul
    a, b = _bench._random(1, 1), _bench._random(1, 2)
    A, B, C = dev.asarray(a), dev.asarray(b), dev.empty(1, np.float32)
    mul(1, A, B, C).wait()
    _bench.check(np.asarray(C)[0] == a[0] * b[0], "1-element c = a * b")

    def kept(n: int) -> None:
        pending = [mul(1, A, B, C) for _ in range(n)]
        for completion in pending:
            completion.wait()

    def waited(n: int) -> None:
        for _ in range(n):
            mul(1, A, B, C).wait()

    def batched(n: int) -> None:
        with dev.batch() as batch:
            for _ in range(n):
                mul(1, A, B, C)
        batch.wait()

    graphs: dict[int, mc.Graph] = {}

    def replayed(n: int) -> None:
        if n not in graphs:  # recorded once per count, outside the timed replays that follow
            with dev.record() as graph:
                for _ in range(n):
                    mul(1, A, B, C)
            graphs[n] = graph
        graphs[n].replay().wait()

    runs: dict[str, Callable[[int], object]] = {"async (Completions kept)": kept, "waited (call + wait)": waited,
                                                "batched (dev.batch())": batched,
                                                "replayed (dev.record(), per call)": replayed}
    best = _bench.best_times(runs, settings.repeats, settings.latency_seconds)
    return [{"name": name, "seconds": s, "note": ""} for name, s in best.items()]


def bandwidth(dev: mc.Device, sizes: list[int], settings: Settings, step: Callable[[], None]) -> dict[str, list]:
    """GB/s of the copy and c = a * b kernels at each size, from Kernel.benchmark's median."""
    lib = dev.compile(_bench.MUL_SOURCE)
    out: dict[str, list] = {"copy": [], "mul": []}
    for n in sizes:
        a, b = _bench._random(n, 1), _bench._random(n, 2)
        A, B, C = dev.asarray(a), dev.asarray(b), dev.empty(n, np.float32)
        for op, per_element in (("copy", _bench.BYTES_PER_COPY_ELEMENT), ("mul", _bench.BYTES_PER_MUL_ELEMENT)):
            kernel = lib.copy if op == "copy" else lib.mul
            args = (A, C) if op == "copy" else (A, B, C)
            repeat = _repeats_for(kernel, n, args, settings)
            r = kernel.benchmark(n, *args, repeat=repeat, warmup=1, bytes=per_element * n)
            _bench.check(np.array_equal(np.asarray(C), a if op == "copy" else a * b), f"{op} kernel at {n}")
            out[op].append({"elements": n, "bytes": per_element * n, "seconds": r.median, "gbps": r.gbps,
                            "clock": r.clock, "result": r.to_dict() | {"samples": None}})
            step()
        del A, B, C
    return out


def _repeats_for(kernel: mc.Kernel, n: int, args: tuple, settings: Settings) -> int:
    """As many timed calls as fit the per-point budget, from 5 to 100."""
    completion = kernel(n, *args)
    completion.wait()
    start = time.perf_counter()
    kernel(n, *args).wait()
    seconds = time.perf_counter() - start
    return int(min(100, max(5, settings.budget / max(seconds, 1e-9))))


def compute(dev: mc.Device, settings: Settings) -> dict[str, Any]:
    """GFLOP/s of the compute-heavy kernel (400 unrolled blocks of 4 FMAs per element)."""
    n = (1 << 12 if settings.quick else 1 << 16) if dev.backend == "cpu" else (1 << 16 if settings.quick else 1 << 22)
    heavy = dev.compile(_bench.HEAVY_SOURCE).heavy
    a, b = _bench._random(n, 1), -_bench._random(n, 2)
    A, B, C = dev.asarray(a), dev.asarray(b), dev.empty(n, np.float32)
    flops = _bench.HEAVY_FLOPS_PER_ELEMENT * n
    r = heavy.benchmark(n, A, B, C, repeat=5 if settings.quick else 20, warmup=1, flops=flops)
    checked = min(n, 1 << 14)  # the kernel is elementwise: NumPy's reference on a prefix is enough
    want = np.empty(checked, np.float32)
    _bench.numpy_heavy(a[:checked], b[:checked], want)
    scale = float(np.abs(want).max())
    tol = _bench.HEAVY_RTOL
    _bench.check(np.allclose(np.asarray(C)[:checked], want, rtol=tol, atol=tol * scale), f"compute-heavy kernel at {n}")
    return {"elements": n, "flops": flops, "seconds": r.median, "gflops": r.gflops, "clock": r.clock,
            "result": r.to_dict() | {"samples": None}}


def compile_times(dev: mc.Device, settings: Settings) -> dict[str, float]:
    """Seconds for dev.compile(src).function(name) of a small kernel: cold (a new process with an
    empty cache directory), warm disk cache (a new process), in-memory cache (same process)."""
    spec = f"{dev.backend}:{dev.index}"
    with tempfile.TemporaryDirectory(prefix="metalcall-bench-") as cache_dir:
        cold = _bench._run_probe(spec, cache_dir, 1)
        warm = [_bench._run_probe(spec, cache_dir, settings.repeats) for _ in range(settings.repeats)]
    return {"cold": cold["first"], "warm_disk": min(w["first"] for w in warm),
            "memory": min(w["again"] for w in warm)}
