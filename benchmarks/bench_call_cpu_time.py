"""A 1-element kernel call with Buffers against np.multiply(out=), in this thread's CPU time.

    python benchmarks/bench_call_cpu_time.py [--device cpu] [--calls 300000] [--rounds 7] [--replay]
    valgrind --tool=callgrind python benchmarks/bench_call_cpu_time.py --only mc --calls 20000 --rounds 1

Wall-clock times on a shared, loaded machine mostly measure the waits for a core; the
calling thread's CPU time (time.thread_time_ns) leaves them out. Each round times a loop of
calls of each candidate and of an empty loop, taking turns; the medians are printed, with the
empty loop subtracted. --replay also times a replay of 100 recorded calls (`dev.record()`) per
call, against the same 100 calls one by one (issue P2.2's replay target). Under callgrind (--only), the Ir of KernelImpl::call and of the
binding's kernel_tp_call per call come from callgrind_annotate --inclusive=yes on an unstripped
_core (the installed one is stripped: link it again without the strip step).
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
    ap.add_argument("--calls", type=int, default=300_000)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--only", choices=["mc", "np", "empty", "replay"], help="run one loop only (for callgrind or perf)")
    ap.add_argument("--replay", action="store_true", help="also time replays of 100 recorded calls")
    args = ap.parse_args()
    dev = mc.Device(args.device)
    mul = dev.compile(_bench.MUL_SOURCE).mul
    x, y, z = np.float32([3.0]), np.float32([4.0]), np.zeros(1, np.float32)
    A, B, C = dev.asarray(x), dev.asarray(y), dev.empty(1, np.float32)
    mul(1, A, B, C)
    np.multiply(x, y, out=z)
    assert np.asarray(C)[0] == 12.0 and z[0] == 12.0

    with dev.record() as graph:
        for _ in range(100):
            mul(1, A, B, C)
    graph.replay().wait()
    assert np.asarray(C)[0] == 12.0

    def loop(mode: str, n: int, mul=mul, A=A, B=B, C=C, x=x, y=y, z=z, mult=np.multiply, graph=graph) -> float:
        r = range(n)
        t0 = time.thread_time_ns()
        if mode == "replay":  # n calls: n / 100 replays of 100
            for _ in range(n // 100):
                graph.replay().wait()
        elif mode == "mc":
            for _ in r:
                mul(1, A, B, C)
        elif mode == "np":
            for _ in r:
                mult(x, y, out=z)
        else:
            for _ in r:
                pass
        return (time.thread_time_ns() - t0) / n

    if args.only:
        loop(args.only, args.calls)
        return
    times: dict[str, list[float]] = {"empty": [], "mc": [], "np": []}
    if args.replay:
        times["replay"] = []
    for _ in range(args.rounds):
        for mode, got in times.items():
            got.append(loop(mode, args.calls))
    med = {m: sorted(v)[len(v) // 2] for m, v in times.items()}
    mc_ns, np_ns = med["mc"] - med["empty"], med["np"] - med["empty"]
    print(f"metalcall mul(1, A, B, C): {mc_ns:.0f} ns/call of thread CPU time (empty loop subtracted)")
    print(f"np.multiply(x, y, out=z):  {np_ns:.0f} ns/call")
    print(f"ratio: {mc_ns / np_ns:.2f}")
    if args.replay:
        rp_ns = med["replay"]  # one replay per 100 calls: no loop overhead to subtract
        print(f"replay of 100 recorded calls: {rp_ns:.0f} ns per call; against one-by-one calls "
              f"(loop included, {med['mc']:.0f} ns): {rp_ns / med['mc']:.2f}")


if __name__ == "__main__":
    main()
