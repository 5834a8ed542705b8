"""What the metalcall.numpy benchmarks (bench_mnp.py, bench_fft.py, bench_mnp_linalg.py) share:
the best-of-n timer and the device with its optional CuPy peer."""

from __future__ import annotations

import time

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
