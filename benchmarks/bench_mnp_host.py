"""The host side of metalcall.numpy: CPU time of the calling thread per operation (building a
lazy expression, evaluating it, a reduction read back), on tiny arrays so that the kernels'
own time is small. Thread CPU time, not wall time, so that a loaded machine (other processes
taking turns on the cores) inflates it little; the kernels' worker threads are not counted.

    python benchmarks/bench_mnp_host.py [--device cpu] [--n 1000] [--repeat 5] [--number 3000]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import metalcall as mc
import metalcall.numpy as mnp


def cpu_time(fn, dev, repeat: int, number: int) -> float:
    """Best of `repeat` of the calling thread's CPU seconds per call over `number` calls."""
    fn()
    mnp.synchronize(dev)
    best = float("inf")
    for _ in range(repeat):
        start = time.thread_time_ns()
        for _ in range(number):
            fn()
        best = min(best, (time.thread_time_ns() - start) / number * 1e-9)
        mnp.synchronize(dev)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--n", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--number", type=int, default=3000)
    args = parser.parse_args()
    dev = mc.Device(args.device)
    mnp.set_default_device(dev)
    rng = np.random.default_rng(0)
    xs, ys = rng.random(args.n, dtype=np.float32), rng.random(args.n, dtype=np.float32)
    x, y = mnp.asarray(xs), mnp.asarray(ys)
    assert np.allclose(np.asarray(mnp.sin(x) * y + 2), np.sin(xs) * ys + 2, rtol=1e-5, atol=1e-6)
    assert abs(float(mnp.sum(x)) - float(xs.sum(dtype=np.float64))) <= 1e-3 * abs(float(xs.sum()))
    assert abs(float(mnp.mean(x)) - float(xs.mean(dtype=np.float64))) <= 1e-5
    rows = [("mnp.sin(x) (lazy)", lambda: mnp.sin(x)),
            ("mnp.sin(x)*y+2 (lazy)", lambda: mnp.sin(x) * y + 2),
            ("(mnp.sin(x)*y+2).evaluate()", lambda: (mnp.sin(x) * y + 2).evaluate()),
            ("mnp.sum(x)", lambda: mnp.sum(x)),
            ("float(mnp.sum(x))", lambda: float(mnp.sum(x))),
            ("float(mnp.mean(x))", lambda: float(mnp.mean(x))),
            ("dev.empty(n, float32, uninitialized=True)", lambda: dev.empty(args.n, np.float32, uninitialized=True))]
    print(f"metalcall {mc.__version__} on {dev.name}; n={args.n}; best of {args.repeat} × {args.number} calls")
    for label, fn in rows:
        print(f"{label:44s} {cpu_time(fn, dev, args.repeat, args.number) * 1e6:8.2f} µs CPU time of the calling thread")


if __name__ == "__main__":
    main()
