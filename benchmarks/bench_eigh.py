"""Where `mnp.linalg.eigh` spends its time on a GPU (the tridiagonal route, _linalg_eigh_tridiag.py),
next to CuPy's (cuSOLVER syevd) eigh and eigvalsh: the whole calls (call + wait), then one call cut
into its phases with a wait after each (queue: the host's time to queue the reduction's launches,
no wait; tridiag: the reduction, queue included; values: multisection; vectors: inverse
iteration; ns: the Newton-Schulz step, two matmuls; back: the reflectors applied; order: argsort
and the two gathers; queue/b and tridiag/b: the reduction with its step launches in one
dev.batch(); /g: recorded once and replayed, linalg_sytrd.GRAPH_STEPS). Below MIN_N, `jacobi`
is the call by its own route (one-threadgroup Jacobi) and the other columns this route's, MIN_N
lowered. Medians of rounds; results are checked against NumPy.

    python benchmarks/bench_eigh.py --device cuda
    python benchmarks/bench_eigh.py --device cpu --cases 1x128 --rounds 3   # the GPU kernels on the CPU
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import metalcall.numpy as mnp
from metalcall.numpy import _linalg_eigh_tridiag as route
from metalcall.numpy._backend import kernels
from metalcall.numpy._creation import eye
from metalcall.numpy._indexing import take_along_axis
from metalcall.numpy._kernels import cache
from metalcall.numpy._linalg import matmul
from metalcall.numpy._manip import matrix_transpose
from metalcall.numpy._sort import argsort
from mnp_bench_common import device_and_cupy, medians

CASES = ["1x512", "1x512:float64", "1x256", "1x1024", "1x2048", "100x64", "20x128", "10x256", "1000x32", "1000x16"]
PHASES = ["queue", "tridiag", "values", "vectors", "ns", "back", "order", "queue/b", "tridiag/b", "queue/g",
          "tridiag/g"]



def phases(x, dev, rounds):
    """Median ms of each phase of one eigh call, a wait after each."""
    td = kernels("linalg_tridiag")
    batch, n, dt = x.shape[0], x.shape[-1], x.dtype
    rdt = np.finfo(dt).dtype  # T, its values and vectors
    buf = x._contiguous_buffer()
    got = {p: [] for p in PHASES}
    sytrd = kernels("linalg_sytrd")
    for flag, tag in (("BATCH_STEPS", "b"), ("GRAPH_STEPS", "g")):  # the variants: queue and wait
        setattr(sytrd, flag, True)
        for r in range(rounds + 1):
            t0 = time.perf_counter()
            td.tridiagonal(dev, buf, batch, n, dt)
            t1 = time.perf_counter()
            mnp.synchronize()
            if r:  # (the first round compiles, and records)
                got["queue/" + tag].append(t1 - t0)
                got["tridiag/" + tag].append(time.perf_counter() - t0)
        setattr(sytrd, flag, False)
    for r in range(rounds + 1):
        t = [time.perf_counter()]
        parts = td.tridiagonal(dev, buf, batch, n, dt)
        t.append(time.perf_counter())
        mnp.synchronize()
        t.append(time.perf_counter())
        w = mnp.ndarray._wrap(td.values(dev, parts, batch, n, rdt), (batch, n), rdt, dev)
        mnp.synchronize()
        t.append(time.perf_counter())
        z = mnp.ndarray._wrap(td.vectors(dev, parts, batch, n, rdt), (batch, n, n), rdt, dev)
        mnp.synchronize()
        t.append(time.perf_counter())
        z = matmul(z, 1.5 * eye(n, dtype=rdt, device=dev) - 0.5 * matmul(matrix_transpose(z), z)).astype(dt).evaluate()
        mnp.synchronize()
        t.append(time.perf_counter())
        v = mnp.ndarray._wrap(td.back(dev, parts, z._contiguous_buffer(), batch, n, dt), (batch, n, n), dt, dev)
        mnp.synchronize()
        t.append(time.perf_counter())
        order = argsort(w, axis=-1)
        take_along_axis(w, order, axis=-1).evaluate()
        take_along_axis(v, order[..., None, :], axis=-1).evaluate()
        mnp.synchronize()
        t.append(time.perf_counter())
        if r:  # the first round compiles
            got["queue"].append(t[1] - t[0])
            for i, p in enumerate(PHASES[1:7], start=2):
                got[p].append(t[i] - (t[0] if i == 2 else t[i - 1]))
    return {p: float(np.median(v)) * 1e3 for p, v in got.items()}


def run_case(case, a, dev, cp, cols, rng, n_min):
    shape, _, rest = case.partition(":")
    dts, _, spectrum = rest.partition(":")
    batch, n = (int(v) for v in shape.split("x"))
    dt = np.dtype(dts or "float32")
    td = kernels("linalg_tridiag")
    small = n < td.MIN_N  # Jacobi's on GPUs: timed as the call, then this route with MIN_N lowered
    if small:
        m = rng.standard_normal((batch, n, n)).astype(dt)
        xs = mnp.asarray(m + np.swapaxes(m, -1, -2), device=dev)
        jac = medians({"jacobi": lambda: ([o.evaluate() for o in mnp.linalg.eigh(xs)], mnp.synchronize())},
                      a.rounds)
        td.MIN_N = n
    if not route.usable(dev, dt, n):
        print(f"{case:24s} not this route on {dev.name}")
        td.MIN_N = n_min
        return
    m = rng.standard_normal((batch, n, n)) + (1j * rng.standard_normal((batch, n, n)) if dt.kind == "c" else 0)
    if spectrum == "repeated":  # a random unitary's columns, 3 values each many times
        q, _ = np.linalg.qr(m)
        m = (q * np.repeat([-1.0, 2.0, 5.0], [n // 4, n - n // 2, n // 4])) @ np.conj(np.swapaxes(q, -1, -2))
    sym = ((m + np.conj(np.swapaxes(m, -1, -2))) / 2).astype(dt)
    x = mnp.asarray(sym, device=dev)
    w, v = (np.asarray(t) for t in mnp.linalg.eigh(x))
    h = sym.astype(np.complex128 if dt.kind == "c" else np.float64)
    scale = np.abs(np.linalg.eigvalsh(h)).max()
    err = max(np.abs(w - np.linalg.eigvalsh(h)).max(), np.abs(h @ v - v * w[..., None, :]).max()) / scale
    orth = np.abs(np.conj(np.swapaxes(v, -1, -2)) @ v - np.eye(n)).max()
    assert err < 10 * n * np.finfo(dt).eps and orth < 10 * n * np.finfo(dt).eps, (case, err, orth)

    def sync_call(f):
        def run():
            out = f(x)
            for o in (out if isinstance(out, tuple) else (out,)):
                o.evaluate()
            mnp.synchronize()
        return run

    fns = {"eigh": sync_call(mnp.linalg.eigh), "eigvalsh": sync_call(mnp.linalg.eigvalsh)}
    if cp is not None:
        cx = cp.asarray(sym)

        def cp_call(f):
            def run():
                f(cx)
                cp.cuda.Device().synchronize()
            return run

        fns["cp.eigh"], fns["cp.eigvalsh"] = cp_call(cp.linalg.eigh), cp_call(cp.linalg.eigvalsh)
    t = medians(fns, a.rounds)
    if cp is not None:
        t["eigh/cp"], t["vals/cp"] = t["eigh"] / t["cp.eigh"], t["eigvalsh"] / t["cp.eigvalsh"]
    t.update(phases(x, dev, max(3, a.rounds // 2)))
    if small:
        t.update(jac)
        td.MIN_N = n_min
    print(f"{case:24s}" + "".join(f" {t[c]:9.3f}" if c in t else f" {'-':>9s}" for c in cols), flush=True)



def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default=None)
    ap.add_argument("--cases", nargs="*", default=CASES,
                    help="BATCHxN[:dtype[:repeated]] (float32 unless named; repeated: 3 values, n/4 or n/2 times each)")
    ap.add_argument("--rounds", type=int, default=7)
    a = ap.parse_args()
    dev, cp = device_and_cupy(a.device)
    if dev.backend == "cpu":
        cache.force_gpu_variants = True  # the route is the GPUs'; on the CPU, its kernels as fibers
    cols = ["jacobi", "eigh", "eigvalsh"] + (["cp.eigh", "cp.eigvalsh", "eigh/cp", "vals/cp"] if cp else []) + PHASES
    print(f"device: {dev.name}; ms, medians of {a.rounds} rounds; eigh / eigvalsh: call + wait; "
          "phases: one eigh cut up, a wait after each")
    print(f"{'case':24s}" + "".join(f" {c:>9s}" for c in cols))
    rng = np.random.default_rng(0)
    n_min = kernels("linalg_tridiag").MIN_N
    for case in a.cases:
        if kernels("linalg_sytrd").tail_refused:
            print("td_tail refused:", kernels("linalg_sytrd").tail_refused)
        try:
            run_case(case, a, dev, cp, cols, rng, n_min)
        except Exception as e:  # one case's failure (a wrong result, a device error) does not end the run
            print(f"{case:24s} FAILED: {type(e).__name__}: {str(e)[:300]}", flush=True)
            kernels("linalg_tridiag").MIN_N = n_min

if __name__ == "__main__":
    main()
