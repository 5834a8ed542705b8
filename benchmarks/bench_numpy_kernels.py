"""metalcall.numpy's kernels (python/metalcall/numpy/_kernels) against NumPy on the CPU device and
CuPy on a CUDA device, side by side in one run.

    python benchmarks/bench_numpy_kernels.py [--devices cpu,cuda] [--quick]

Rows: full reductions (sum, max, argmax), a row reduction and a column reduction of a matrix,
variance (two-pass moments), cumsum, matmul, sort and random numbers. Every result is checked
against NumPy first. Times are the best of several repeats of a loop of calls ending in one
wait (the peers likewise end in one synchronize), so they include our Python and launch costs.
The ratio is peer time / our time: above 1 we are faster.
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

import metalcall as mc
from metalcall.numpy._kernels import matmul, random, reduce, scan, sort


def best(fn, sync, repeats: int, loop: int) -> float:
    """Best seconds per call of `loop` calls of fn() followed by sync(last result)."""
    sync(fn())
    out = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        r = None
        for _ in range(loop):
            r = fn()
        sync(r)
        out = min(out, (time.perf_counter() - t) / loop)
    return out


def cases(size: int, mm: list[int], quick: bool):
    """(name, numpy data maker, our fn(dev, bufs), peer fn(xp, arrays), check(ours, want))."""
    rows, cols = (1000, size // 1000)
    out = []

    def full(op, npop, kind):
        return (f"{op} {size:.0e} float32", lambda rng: [rng.standard_normal(size).astype(np.float32)],
                lambda dev, b: reduce.reduce(dev, b[0], np.float32, 1, size, 1, op, np.float32 if kind else np.int64),
                lambda xp, a: getattr(xp, npop)(a[0]), None)

    out.append(full("sum", "sum", True))
    out.append(full("max", "max", True))
    out.append(full("argmax", "argmax", False))
    out.append((f"sum axis=1 ({rows}, {cols})", lambda rng: [rng.standard_normal((rows, cols)).astype(np.float32)],
                lambda dev, b: reduce.reduce(dev, b[0], np.float32, rows, cols, 1, "sum", np.float32),
                lambda xp, a: a[0].sum(axis=1), None))
    out.append((f"sum axis=0 ({rows}, {cols})", lambda rng: [rng.standard_normal((rows, cols)).astype(np.float32)],
                lambda dev, b: reduce.reduce(dev, b[0], np.float32, 1, rows, cols, "sum", np.float32),
                lambda xp, a: a[0].sum(axis=0), None))
    out.append((f"var {size:.0e} float32", lambda rng: [rng.standard_normal(size).astype(np.float32) + 3],
                lambda dev, b: reduce.moments(dev, b[0], np.float32, 1, size, 1, 0, np.float32)[1],
                lambda xp, a: a[0].var(), None))
    out.append((f"cumsum {size:.0e} float32", lambda rng: [rng.random(size).astype(np.float32)],
                lambda dev, b: scan.cumsum(dev, b[0], np.float32, 1, size, 1, np.float32),
                lambda xp, a: xp.cumsum(a[0]), "cumsum"))
    for s in mm:
        out.append((f"matmul {s}x{s} float32",
                    lambda rng, s=s: [rng.standard_normal((s, s)).astype(np.float32),
                                      rng.standard_normal((s, s)).astype(np.float32)],
                    lambda dev, b, s=s: matmul.matmul(dev, b[0], b[1], 1, s, s, s, np.float32),
                    lambda xp, a: a[0] @ a[1], "matmul"))
    ns = 10**5 if quick else 10**6
    out.append((f"sort {ns:.0e} float32", lambda rng: [rng.standard_normal(ns).astype(np.float32)],
                lambda dev, b: sort.sort(dev, b[0], np.float32, 1, ns), lambda xp, a: xp.sort(a[0]), None))
    out.append((f"random uniform {size:.0e} float32", lambda rng: [],
                lambda dev, b: random.uniform(dev, 1, 0, size, np.float32),
                None, "random"))
    return out


def check(name, ours, want, how):
    got = np.asarray(ours).reshape(np.shape(want))
    if how == "random":
        ok = got.min() >= 0 and got.max() < 1 and abs(float(got.mean()) - 0.5) < 1e-2
    elif how == "cumsum":  # against a float64 cumsum: float32 running sums drift (NumPy's too)
        ok = np.allclose(got, want, rtol=1e-3, atol=1e-3 * float(np.abs(want).max()))
    elif how == "matmul":
        scale = float(np.abs(want).max()) or 1.0
        ok = np.allclose(got, want, rtol=1e-3, atol=1e-4 * scale)
    else:
        ok = np.allclose(got, want, rtol=1e-3, atol=1e-2)
    if not ok:
        raise SystemExit(f"{name}: result differs from NumPy")


def run_device(dev: mc.Device, quick: bool) -> None:
    gpu = dev.backend != "cpu"
    xp = None
    if gpu and dev.backend == "cuda":
        try:
            import cupy as xp  # type: ignore[no-redef]
        except ImportError:
            xp = None
    peer = "CuPy" if xp is not None else "NumPy"
    if gpu:
        sizes, mm = ([10**6], [1024]) if quick else ([10**7, 10**8], [4096])
    else:
        sizes, mm = ([10**6], [512]) if quick else ([10**6, 10**7], [1024, 2048])
    print(f"\ndevice: {dev.name} ({dev.backend}); peer: {peer}")
    print(f"{'operation':38s} {'metalcall ms':>13s} {peer + ' ms':>10s} {'ratio':>7s}")
    rng = np.random.default_rng(0)
    np_sync = lambda r: None
    our_sync = lambda r: r.wait()
    if xp is not None:
        peer_sync = lambda r: xp.cuda.Stream.null.synchronize()
    for size in sizes:
        for name, make, ours, theirs, how in cases(size, mm if size == sizes[-1] else [], quick):
            data = make(rng)
            bufs = [dev.asarray(a.ravel()) for a in data]
            if theirs is None:  # random: no common stream of numbers; time against the peer's generator
                if xp is not None:
                    g = xp.random.default_rng(1)
                    theirs_fn, psync = (lambda: g.random(size, dtype=xp.float32)), peer_sync
                else:
                    g = np.random.default_rng(1)
                    theirs_fn, psync = (lambda: g.random(size, dtype=np.float32)), np_sync
                want = np.full(1, 0.5)
                check(name, np.asarray(ours(dev, bufs)).mean().reshape(1), want, "random")
            else:
                want = theirs(np, data) if how != "cumsum" else np.cumsum(data[0], dtype=np.float64)
                check(name, ours(dev, bufs), want, how)
                if xp is not None:
                    parrs = [xp.asarray(a) for a in data]
                    theirs_fn, psync = (lambda: theirs(xp, parrs)), peer_sync
                else:
                    theirs_fn, psync = (lambda: theirs(np, data)), np_sync
            big = "matmul" in name or size >= 10**8 or (not gpu and size >= 10**7) or "sort" in name
            repeats, loop = (3, 1) if quick else ((5, 2) if big else (7, 20))
            t_ours = best(lambda: ours(dev, bufs), our_sync, repeats, loop)
            t_peer = best(theirs_fn, psync, repeats, loop)
            print(f"{name:38s} {t_ours * 1e3:13.3f} {t_peer * 1e3:10.3f} {t_peer / t_ours:6.2f}x", flush=True)
            del bufs, data


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--devices", default="all", help="comma-separated backends (cpu,cuda) or 'all'")
    ap.add_argument("--quick", action="store_true", help="small sizes, few repeats (a smoke test)")
    args = ap.parse_args(argv)
    print(f"metalcall {mc.__version__}, NumPy {np.__version__}, Python {sys.version.split()[0]}")
    print("ratio = peer time / metalcall time (higher is better for metalcall)")
    wanted = None if args.devices == "all" else set(args.devices.split(","))
    for info in mc.get_devices():
        if wanted is None or info.backend in wanted:
            run_device(mc.Device(f"{info.backend}:{info.index}"), args.quick)


if __name__ == "__main__":
    main()
