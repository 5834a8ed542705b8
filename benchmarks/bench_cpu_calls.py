"""Fixed cost of mid-size calls on the CPU backend, against numba and NumPy, side by side in one run.

    python benchmarks/bench_cpu_calls.py [--device cpu] [--quick] [--plain]
    python benchmarks/bench_core.py --cpu-sweep          (the same tables)

c = a * b in float32 at 1e5 to 1e8 elements: metalcall called as a statement
(Buffer args; the dropped Completion waits), numba's @njit(parallel=True) prange
loop (when numba is installed) and np.multiply(a, b, out=c), with GB/s and the
metalcall / numba time ratio; then one 1-element call against a NumPy ufunc call.
Results are checked against NumPy before timing; times are the minimum and the
median over repeats, the repeats taking turns between the implementations.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Callable

import numpy as np

import metalcall as mc
from metalcall import _bench

FULL = {"repeats": 9, "min_seconds": 0.05, "sizes": [10**5, 10**6, 10**7, 10**8]}
QUICK = {"repeats": 3, "min_seconds": 0.01, "sizes": [10**5, 10**6]}


def numba_multiply() -> tuple[Callable | None, str]:
    """numba's parallel loop for c = a * b, compiled; (None, why) when numba is missing."""
    try:
        import numba
    except ImportError:
        return None, "numba is not installed (pip install numba): its rows are skipped"

    @numba.njit(parallel=True, cache=False)
    def multiply(a, b, c):
        for i in numba.prange(a.size):
            c[i] = a[i] * b[i]

    return multiply, f"numba {numba.__version__}, {numba.get_num_threads()} threads"


def _us(seconds: float) -> str:
    return f"{seconds * 1e6:.1f}" if seconds < 1e-3 else f"{seconds * 1e6:.0f}"


def multiply_sweep(dev: mc.Device, sizes: list[int], repeats: int, min_seconds: float,
                   nb: Callable | None) -> _bench.Table:
    mul = dev.compile(_bench.MUL_SOURCE).mul
    rows = []
    for n in sizes:
        a, b = _bench._random(n, 1), _bench._random(n, 2)
        want = a * b
        A, B, C = dev.asarray(a), dev.asarray(b), dev.empty(n, np.float32)
        c = np.zeros(n, np.float32)
        mul(n, A, B, C)
        _bench.check(np.array_equal(np.asarray(C), want), f"metalcall c = a * b at {n:.0e}")
        runs: dict[str, Callable[[int], object]] = {}

        def statement_calls(k: int) -> None:
            for _ in range(k):
                mul(n, A, B, C)  # a statement: the dropped Completion waits

        runs["metalcall"] = statement_calls
        if nb is not None:
            nb(a, b, c)
            _bench.check(np.array_equal(c, want), f"numba c = a * b at {n:.0e}")

            def numba_calls(k: int) -> None:
                for _ in range(k):
                    nb(a, b, c)

            runs["numba"] = numba_calls
        c[:] = 0
        np.multiply(a, b, out=c)
        _bench.check(np.array_equal(c, want), f"np.multiply at {n:.0e}")
        del want

        def numpy_calls(k: int) -> None:
            multiply = np.multiply
            for _ in range(k):
                multiply(a, b, out=c)

        runs["numpy"] = numpy_calls
        times = _bench.sample_times(runs, repeats + 1, min_seconds)
        gbs = {name: _bench.BYTES_PER_MUL_ELEMENT * n / t[0] / 1e9 for name, t in times.items()}
        for name, (best, median) in times.items():
            ratio = ""
            if "numba" in times:
                ratio = f"{best / times['numba'][0]:.2f}" if name == "metalcall" else "1.00" if name == "numba" else ""
            rows.append([f"{n:.0e}", name, _us(best), _us(median), f"{gbs[name]:.1f}", ratio])
        del A, B, C, a, b, c
    columns = ["elements", "implementation", "min µs", "median µs", "GB/s (min)", "time / numba (min)"]
    return _bench.Table("c = a * b float32, waited calls (metalcall: statement call, Buffer args)", columns, rows)


def one_element(dev: mc.Device, repeats: int, min_seconds: float, nb: Callable | None) -> _bench.Table:
    mul = dev.compile(_bench.MUL_SOURCE).mul
    a, b = _bench._random(1, 1), _bench._random(1, 2)
    c = np.zeros(1, np.float32)
    A, B, C = dev.asarray(a), dev.asarray(b), dev.empty(1, np.float32)
    mul(1, A, B, C)
    _bench.check(np.asarray(C)[0] == a[0] * b[0], "1-element c = a * b")

    def metalcall_calls(k: int) -> None:
        for _ in range(k):
            mul(1, A, B, C)

    def numpy_calls(k: int) -> None:
        multiply = np.multiply
        for _ in range(k):
            multiply(a, b, out=c)

    runs = {"metalcall statement call, Buffer args": metalcall_calls, "np.multiply(a, b, out=c)": numpy_calls}
    if nb is not None:
        def numba_calls(k: int) -> None:
            for _ in range(k):
                nb(a, b, c)

        runs["numba parallel loop"] = numba_calls
    times = _bench.sample_times(runs, repeats + 1, min_seconds)
    base = times["np.multiply(a, b, out=c)"][0]
    rows = [[name, f"{t[0] * 1e6:.2f}", f"{t[1] * 1e6:.2f}", f"{t[0] / base:.2f}"] for name, t in times.items()]
    return _bench.Table("One element, c = a * b", ["call", "min µs", "median µs", "time / NumPy (min)"], rows)


def run_sweep(device: str | None, quick: bool, plain: bool) -> int:
    config = QUICK if quick else FULL
    try:
        dev = _bench.open_device(device or "cpu")
    except mc.DeviceError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    nb, about = numba_multiply()
    print(f"device: {dev.name} ({dev.backend}:{dev.index}); {os.cpu_count()} CPUs; {about}", flush=True)
    try:
        _bench.render([multiply_sweep(dev, config["sizes"], config["repeats"], config["min_seconds"], nb)], plain)
        sys.stdout.flush()
        _bench.render([one_element(dev, config["repeats"], config["min_seconds"], nb)], plain)
    except _bench.CheckFailed as e:
        print(f"FAILED: {e}", file=sys.stderr)
        return 1
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", help="device name or index (default: cpu)")
    parser.add_argument("--quick", action="store_true", help="1e5 and 1e6 only, few repeats")
    parser.add_argument("--plain", action="store_true", help="plain-text tables even when rich is installed")
    args = parser.parse_args()
    return run_sweep(args.device, args.quick, args.plain)


if __name__ == "__main__":
    sys.exit(main())
