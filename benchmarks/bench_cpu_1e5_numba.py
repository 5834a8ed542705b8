"""c = a*b at 1e5 float32 on the CPU device against numba's parallel loop and NumPy, wall clock.

    python benchmarks/bench_cpu_1e5_numba.py [--rounds 30] [--calls 50]

Issue P2.2's "1e5-element calls <= 1.5x numba parallel". The candidates take turns: each round
times `--calls` calls of each (after 3 untimed), per call. Medians on a loaded machine measure the
waits for a core (numba's loop waits for every one of its threads); the minimum and the 10th
percentile come closer to what the call costs, and the process's CPU time per call shows how
many threads worked: its mean over all rounds (Linux adds another running thread's time to the
process's only at a scheduler tick or a switch, so one round's figure may miss it; the median of
rounds under-counts). Results are checked against NumPy first.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import metalcall as mc
from metalcall import _bench


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--calls", type=int, default=50)
    args = ap.parse_args()
    import numba

    @numba.njit(parallel=True, cache=False)
    def multiply(a, b, c):
        for i in numba.prange(a.size):
            c[i] = a[i] * b[i]

    dev = mc.Device(args.device)
    mul = dev.compile(_bench.MUL_SOURCE).mul
    n = 10**5
    a, b, c = _bench._random(n, 1), _bench._random(n, 2), np.empty(n, np.float32)
    A, B, C = dev.asarray(a), dev.asarray(b), dev.empty(n, np.float32)
    mul(n, A, B, C)
    multiply(a, b, c)
    assert np.array_equal(np.asarray(C), a * b) and np.array_equal(c, a * b)
    candidates = {"metalcall": lambda: mul(n, A, B, C), "numba parallel": lambda: multiply(a, b, c),
                  "NumPy": lambda: np.multiply(a, b, out=c)}
    wall: dict[str, list[float]] = {k: [] for k in candidates}
    cpu: dict[str, list[float]] = {k: [] for k in candidates}
    for _ in range(args.rounds):
        for name, f in candidates.items():
            for _ in range(3):
                f()
            w0, c0 = time.perf_counter(), time.process_time()
            for _ in range(args.calls):
                f()
            wall[name].append((time.perf_counter() - w0) / args.calls * 1e6)
            cpu[name].append((time.process_time() - c0) / args.calls * 1e6)
    print(f"numba {numba.__version__}, NumPy {np.__version__}; µs per call, {args.rounds} rounds of {args.calls} calls")
    for name in candidates:
        w, p = np.array(wall[name]), np.array(cpu[name])
        print(f"{name:15s} wall median {np.median(w):8.1f}  p10 {np.percentile(w, 10):8.1f}  min {w.min():8.1f}"
              f"  | process CPU median {np.median(p):8.1f}  mean {p.mean():8.1f}")


if __name__ == "__main__":
    main()
