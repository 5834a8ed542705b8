"""One launch against two for metalcall.numpy's reductions on CUDA, interleaved rounds in one
process (session 13): float(mnp.op(x)) and the host-pipelined time of mnp.op(x), medians (µs)."""
import statistics
import time

import numpy as np

import metalcall as mc
import metalcall.numpy as mnp
from metalcall.numpy import _runtime as R
from metalcall.numpy._kernels import reduce as KR

dev = mc.Device("cuda")
mnp.set_default_device(dev)
one_launch = KR._one_launch


def mode(one: bool):
    KR._one_launch = one_launch if one else (lambda d: False)
    KR._plan.cache_clear()


def med(fn, reps, inner=1):
    for _ in range(20):
        fn()
    ts = []
    for _ in range(reps):
        t = time.perf_counter()
        for _ in range(inner):
            fn()
        ts.append((time.perf_counter() - t) / inner)
    return statistics.median(ts) * 1e6


rng = np.random.default_rng(3)
for n in (10**6, 10**7, 10**8):
    xs = rng.random(n, dtype=np.float32) - np.float32(0.5)
    x = mnp.asarray(xs, device=dev)
    for op in ("sum", "max", "prod", "any"):
        fn = getattr(mnp, op)
        res = {True: [], False: [], "q1": [], "q0": []}
        for _ in range(3):
            for one in (True, False):
                mode(one)
                got = float(fn(x))
                want = float(getattr(np, op)(xs.astype(np.float64) if op == "sum" else xs))
                assert abs(got - want) <= 1e-3 * max(1.0, abs(want)) * (10 if op == "sum" else 1), (op, n, one, got, want)
                res[one].append(med(lambda: float(fn(x)), 150))
                res["q1" if one else "q0"].append(med(lambda: fn(x), 30, 10))
                R.synchronize(dev)
        a, b = statistics.median(res[True]), statistics.median(res[False])
        qa, qb = statistics.median(res["q1"]), statistics.median(res["q0"])
        print(f"{op:5s} n={n:.0e}: float() one launch {a:7.1f} two {b:7.1f} us ({a / b:.2f}); "
              f"queued host time one {qa:6.1f} two {qb:6.1f} us", flush=True)
