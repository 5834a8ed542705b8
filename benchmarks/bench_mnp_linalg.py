"""metalcall.numpy.linalg against NumPy's LAPACK (and CuPy's cuSOLVER on a CUDA device), side by
side in one process: batched small solves, and svd, svdvals, eigh, eigvalsh, qr, cholesky and inv
of one larger matrix. Every result is checked against NumPy before it is timed. The peers' calls are
interleaved (one call of each per round, after a warm call of each), and each column is the median
of the rounds, each call ending with the result ready: on a shared machine, load that comes and
goes then weighs on every column alike. `--best` reports the fastest round instead. `--clock cpu`
times the process's CPU time (all its threads) instead of the wall clock: on a loaded machine the
work each call does, without the waits for a core (a call that hands work to worker threads and
waits for them pays those waits once per hand-off).

    python benchmarks/bench_mnp_linalg.py                      # default device, float32
    python benchmarks/bench_mnp_linalg.py --device cpu --dtype float64 --size 512 --repeat 7
    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_mnp_linalg.py --device cpu --size 256 --only svd eigh --batches
"""

import argparse
import time

import numpy as np

import metalcall.numpy as mnp
from mnp_bench_common import device_and_cupy


def interleaved(fns, rounds, pick, clock=time.perf_counter):
    """pick(times) of each of `fns` over `rounds` rounds, each round calling every fn once."""
    for fn in fns:
        fn()
    times = [[] for _ in fns]
    for _ in range(rounds):
        for fn, ts in zip(fns, times):
            t = clock()
            fn()
            ts.append(clock() - t)
    return [pick(ts) for ts in times]


def cases(size, batches, dt):
    """(name, function of a namespace and its arrays, NumPy inputs, how to check the result)."""
    rng = np.random.default_rng(0)
    out = []
    for batch, n in batches:
        a = (rng.standard_normal((batch, n, n)) + n * np.eye(n)).astype(dt)
        b = rng.standard_normal((batch, n, 1)).astype(dt)
        out.append((f"solve {batch}x{n}x{n} (+{n}x1)", lambda xp, a, b: xp.linalg.solve(a, b), (a, b), "values"))
    a = rng.standard_normal((size, size)).astype(dt)
    spd = (a @ a.T / size + np.eye(size)).astype(dt)
    sym = ((a + a.T) / 2).astype(dt)
    out += [
        (f"svd {size}x{size}", lambda xp, a: xp.linalg.svd(a, full_matrices=False), (a,), "svd"),
        (f"svdvals {size}x{size}", lambda xp, a: xp.linalg.svdvals(a), (a,), "values"),
        (f"eigh {size}x{size}", lambda xp, a: xp.linalg.eigh(a), (sym,), "eigh"),
        (f"eigvalsh {size}x{size}", lambda xp, a: xp.linalg.eigvalsh(a), (sym,), "values"),
        (f"qr {size}x{size}", lambda xp, a: xp.linalg.qr(a), (a,), "qr"),
        (f"cholesky {size}x{size}", lambda xp, a: xp.linalg.cholesky(a), (spd,), "values"),
        (f"inv {size}x{size}", lambda xp, a: xp.linalg.inv(a), (spd,), "values"),
    ]
    return out


def check(kind, got, want, inputs, tol):
    g = [np.asarray(v, np.float64) for v in (got if isinstance(got, tuple) else (got,))]
    w = [np.asarray(v, np.float64) for v in (want if isinstance(want, tuple) else (want,))]
    scale = max(1.0, max(np.abs(v).max() for v in w))
    if kind == "values":
        np.testing.assert_allclose(g[0], w[0], rtol=tol, atol=tol * scale)
    elif kind == "svd":
        np.testing.assert_allclose(g[1], w[1], rtol=tol, atol=tol * scale)
        np.testing.assert_allclose((g[0] * g[1][..., None, :]) @ g[2], inputs[0], atol=tol * scale)
    elif kind == "eigh":
        np.testing.assert_allclose(g[0], w[0], rtol=tol, atol=tol * scale)
        np.testing.assert_allclose(inputs[0] @ g[1], g[1] * g[0][..., None, :], atol=tol * scale)
    elif kind == "qr":
        np.testing.assert_allclose(g[0] @ g[1], inputs[0], atol=tol * scale)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default=None)
    ap.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    ap.add_argument("--size", type=int, default=512, help="the single matrices' size")
    ap.add_argument("--batches", nargs="*", default=["10000x4", "2000x16", "500x32"],
                    help="stacks of small solves, BATCHxN")
    ap.add_argument("--only", nargs="*", default=None, help="run the cases whose name starts with one of these")
    ap.add_argument("--repeat", type=int, default=5, help="rounds")
    ap.add_argument("--best", action="store_true", help="the fastest round, not the median")
    ap.add_argument("--clock", choices=["wall", "cpu"], default="wall", help="wall time, or the process's CPU time")
    a = ap.parse_args()
    pick = min if a.best else np.median
    dev, cp = device_and_cupy(a.device)
    dt = np.dtype(a.dtype)
    tol = 2e-3 if dt == np.float32 else 1e-8
    batches = [tuple(int(v) for v in s.split("x")) for s in a.batches]
    print(f"device: {dev.name}; dtype {dt}; peers: NumPy{' and CuPy' if cp else ''}; "
          f"{'fastest' if a.best else 'median'} of {a.repeat} interleaved rounds, {a.clock} clock")
    print(f"{'case':30s} {'mnp ms':>10s} {'numpy ms':>10s} {'np/mnp':>7s}" +
          (f" {'cupy ms':>10s} {'cp/mnp':>7s}" if cp else ""))
    for name, f, inputs, kind in cases(a.size, batches, dt):
        if a.only and not any(name.startswith(o) for o in a.only):
            continue
        xs = [mnp.asarray(v) for v in inputs]
        check(kind, f(mnp, *xs), f(np, *inputs), inputs, tol)

        def run_mnp():
            r = f(mnp, *xs)
            for v in (r if isinstance(r, tuple) else (r,)):
                v.evaluate()
            mnp.synchronize()

        fns = [run_mnp, lambda: f(np, *inputs)]
        has_cp = cp and hasattr(cp.linalg, name.split()[0])  # CuPy has no svdvals
        if has_cp:
            cs = [cp.asarray(v) for v in inputs]

            def run_cp():
                f(cp, *cs)
                cp.cuda.Device().synchronize()

            fns.append(run_cp)
        tm, tn, *tc = interleaved(fns, a.repeat, pick, time.process_time if a.clock == "cpu" else time.perf_counter)
        line = f"{name:30s} {tm * 1e3:10.3f} {tn * 1e3:10.3f} {tn / tm:7.2f}"
        if has_cp:
            line += f" {tc[0] * 1e3:10.3f} {tc[0] / tm:7.2f}"
        elif cp:
            line += f" {'-':>10s} {'-':>7s}"
        print(line, flush=True)


if __name__ == "__main__":
    main()
