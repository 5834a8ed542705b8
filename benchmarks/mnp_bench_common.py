"""What the metalcall.numpy benchmarks (bench_mnp.py, bench_fft.py, bench_mnp_linalg.py,
bench_eigh.py, bench_small_solves.py) share: the best-of-n and median-in-turn timers and the
device with its optional CuPy peer."""

from __future__ import annotations

import time

import numpy as np

import metalcall.numpy as mnp


def best(fn, repeat: int, warm_seconds: float = 0.0) -> float:
    """The fastest of `repeat` calls, after one warm call (compiles, caches) and `warm_seconds`
    more of them (a GPU left idle while another column ran lowers its clocks)."""
    end = time.perf_counter() + warm_seconds
    fn()
    while time.perf_counter() < end:
        fn()
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def medians(fns: dict, rounds: int) -> dict:
    """The median milliseconds of each of `fns`, after one warm call each, timed in turn (a, b, a,
    b, ...) so that a change of the machine's load falls on all of them."""
    for f in fns.values():
        f()
    ts = {k: [] for k in fns}
    for _ in range(rounds):
        for k, f in fns.items():
            t = time.perf_counter()
            f()
            ts[k].append(time.perf_counter() - t)
    return {k: float(np.median(v)) * 1e3 for k, v in ts.items()}


def device_and_cupy(device: str | None):
    """metalcall.numpy's default device (set to `device` when given) and the cupy module when
    that device is CUDA and CuPy is installed, else None."""
    if device:
        mnp.set_default_device(device)
    dev = mnp.default_device()
    if dev.backend != "cuda":
        return dev, None
    try:
        import cupy
    except ImportError:
        return dev, None
    return dev, cupy
