"""Call overhead of the sandboxed CPU device against the in-process one, side by side in one run.

    python benchmarks/bench_sandbox.py [--quick] [--plain]

The same kernel (c = a * b, float32) is called on Device("cpu") and on Device("cpu",
sandbox=True), taking turns: 1-element statement calls with Buffer arguments (the call
waits for its result), 1-element calls on NumPy arrays (staged through the sandbox's
shared memory and written back), kept Completions waited in bursts of 100, and c = a * b
at 1e6 and 1e7 elements (Buffers: the worker computes on the shared memory in place).
Each row gives the sandbox's time, the in-process time and the difference (what the
sandbox adds per call). Results are checked against NumPy on both devices before timing;
times are the minimum and the median over repeats of warm calls.

First, single 1-element calls timed one by one (percentiles over 20,000 calls, the devices
taking turns in blocks of 1,000): the sandbox's round trip needs its worker process to be
running when the call comes, so on a machine with fewer free cores than busy processes some
calls wait for the scheduler; the percentiles show the cost of a call and how often that
happens, where the averages of the second table mix the two.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Callable

import numpy as np

import metalcall as mc
from metalcall import _bench

FULL = {"repeats": 15, "min_seconds": 0.05, "sizes": [10**6, 10**7], "calls": 20000}
QUICK = {"repeats": 5, "min_seconds": 0.02, "sizes": [10**6], "calls": 4000}


def _us(seconds: float) -> str:
    return f"{seconds * 1e6:.2f}" if seconds < 1e-3 else f"{seconds * 1e6:.0f}"


def _workload(dev: mc.Device, n: int, kind: str) -> Callable[[int], object]:
    """k calls of one kind on `dev`, after checking one call's result against NumPy."""
    mul = dev.compile(_bench.MUL_SOURCE).mul
    a, b = _bench._random(n, 1), _bench._random(n, 2)
    want = a * b
    if kind == "numpy":
        c = np.zeros(n, np.float32)
        mul(n, a, b, c)
        _bench.check(np.array_equal(c, want), f"{dev.name}: c = a * b on NumPy arrays at {n}")

        def calls(k: int) -> None:
            for _ in range(k):
                mul(n, a, b, c)
        return calls
    A, B, C = dev.asarray(a), dev.asarray(b), dev.empty(n, np.float32)
    mul(n, A, B, C)
    _bench.check(np.array_equal(np.asarray(C), want), f"{dev.name}: c = a * b on Buffers at {n}")
    if kind == "kept":
        def calls(k: int) -> None:
            for _ in range(0, k, 100):
                handles = [mul(n, A, B, C) for _ in range(min(100, k))]
                handles[-1].wait()
                del handles
        return calls

    def calls(k: int) -> None:
        for _ in range(k):
            mul(n, A, B, C)  # a statement: the dropped Completion waits
    return calls


def latency_table(calls: int) -> _bench.Table:
    devices = {"in-process": mc.Device("cpu"), "sandbox": mc.Device("cpu", sandbox=True)}
    runs = {name: _workload(dev, 1, "statement") for name, dev in devices.items()}
    samples: dict[str, list[int]] = {name: [] for name in devices}
    clock = time.perf_counter_ns
    for _ in range(calls // 1000):
        for name, run in runs.items():
            run(100)  # warm: the worker spinning again after the other device's turn
            times = samples[name]
            for _ in range(1000):
                start = clock()
                run(1)
                times.append(clock() - start)
    quantiles = [0.0, 0.1, 0.5, 0.9, 0.99]
    table = {name: np.quantile(np.array(t) / 1e3, quantiles) for name, t in samples.items()}
    rows = [[name, *(f"{v:.2f}" for v in values)] for name, values in table.items()]
    rows.append(["added by the sandbox", *(f"{s - i:.2f}" for s, i in zip(table["sandbox"], table["in-process"]))])
    return _bench.Table("One 1-element statement call (Buffers), timed one by one: µs",
                        ["device", "min", "p10", "median", "p90", "p99"], rows)


def overhead_table(sizes: list[int], repeats: int, min_seconds: float) -> _bench.Table:
    devices = {"in-process": mc.Device("cpu"), "sandbox": mc.Device("cpu", sandbox=True)}
    cases = [("1 element, statement call, Buffers", 1, "statement"),
             ("1 element, statement call, NumPy arrays", 1, "numpy"),
             ("1 element, kept Completions (bursts of 100)", 1, "kept")]
    cases += [(f"{n:.0e} elements, statement call, Buffers", n, "statement") for n in sizes]
    rows = []
    for title, n, kind in cases:
        runs = {name: _workload(dev, n, kind) for name, dev in devices.items()}
        times = _bench.sample_times(runs, repeats + 1, min_seconds)
        (sb_min, sb_med), (ip_min, ip_med) = times["sandbox"], times["in-process"]
        rows.append([title, _us(ip_min), _us(sb_min), _us(sb_min - ip_min), _us(ip_med), _us(sb_med),
                     _us(sb_med - ip_med)])
    columns = ["call", "in-process min µs", "sandbox min µs", "added (min)", "in-process median µs",
               "sandbox median µs", "added (median)"]
    return _bench.Table("Sandboxed CPU device: time per call against the in-process device", columns, rows)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats, 1e6 elements only")
    parser.add_argument("--plain", action="store_true", help="plain-text tables even when rich is installed")
    args = parser.parse_args()
    config = QUICK if args.quick else FULL
    try:
        sandbox = mc.Device("cpu", sandbox=True)
    except mc.DeviceError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    load = " ".join(f"{x:.1f}" for x in os.getloadavg())
    print(f"device: {sandbox.name}; {os.cpu_count()} CPUs, load average {load}; metalcall {mc.__version__}", flush=True)
    try:
        _bench.render([latency_table(config["calls"])], args.plain)
        sys.stdout.flush()
        _bench.render([overhead_table(config["sizes"], config["repeats"], config["min_seconds"])], args.plain)
    except _bench.CheckFailed as e:
        print(f"FAILED: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
