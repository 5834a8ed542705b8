"""Issue P2.3's speed targets side by side in one run: fft of 2^20 complex64, stacks of small
solves (10000 of 4x4, 1000 of 32x32, one right-hand side) and svd (U, S, Vh) of one 512x512 matrix
in float32 (`--dtype float64`: float64 and complex128), metalcall.numpy against NumPy and SciPy (LAPACK, pocketfft) and, on a CUDA device, CuPy
(cuFFT, cuSOLVER). The targets: on CUDA at most 1.5x cuFFT's time for the fft and 2x CuPy's for the
rest; on the CPU within 2x NumPy's. Each result is checked against NumPy first; then the peers'
calls take turns, one call each per round after a warm call of each, and each column is the median
of the rounds (`--clock cpu`: the process's CPU time, all its threads, instead of the wall clock).
Each call ends with its result ready.

    python benchmarks/bench_p23_targets.py --device cpu --repeat 9
    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_p23_targets.py --device cpu --clock cpu
    python benchmarks/bench_p23_targets.py --device cuda --repeat 15
"""

from __future__ import annotations

import argparse
import time

import numpy as np

import metalcall.numpy as mnp
from mnp_bench_common import device_and_cupy

try:
    import scipy.fft
    import scipy.linalg
except ImportError:  # SciPy is optional
    scipy = None


def cases(dt):
    """(name, target ratio on CUDA, on the CPU, {peer: function of its inputs}, NumPy inputs)."""
    rng = np.random.default_rng(0)
    cdt, tag = (np.complex64, "f32") if dt == np.float32 else (np.complex128, "f64")
    sig = (rng.standard_normal(1 << 20) + 1j * rng.standard_normal(1 << 20)).astype(cdt)
    out = [(f"fft 2^20 c{2 * np.dtype(dt).itemsize * 8}", 1.5, 2.0, {"np": np.fft.fft, "sp": scipy and scipy.fft.fft, "cp": "fft.fft"}, (sig,))]
    for batch, n in ((10000, 4), (1000, 32)):
        a = (rng.standard_normal((batch, n, n)) + n * np.eye(n)).astype(dt)
        b = rng.standard_normal((batch, n, 1)).astype(dt)
        # scipy.linalg.solve loops over a stack in Python: NumPy's gufunc is LAPACK's batched path
        out.append((f"solve {batch}x{n}x{n} {tag}", 2.0, 2.0, {"np": np.linalg.solve, "cp": "linalg.solve"}, (a, b)))
    m = rng.standard_normal((512, 512)).astype(dt)
    out.append((f"svd 512x512 {tag}", 2.0, 2.0,
                {"np": lambda a: np.linalg.svd(a, full_matrices=False),
                 "sp": scipy and (lambda a: scipy.linalg.svd(a, full_matrices=False, lapack_driver="gesdd")),
                 "cp": "linalg.svd"}, (m,)))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default=None)
    ap.add_argument("--repeat", type=int, default=7, help="rounds")
    ap.add_argument("--clock", choices=["wall", "cpu"], default="wall")
    ap.add_argument("--dtype", choices=["float32", "float64"], default="float32")
    a = ap.parse_args()
    dev, cp = device_and_cupy(a.device)
    clock = time.process_time if a.clock == "cpu" else time.perf_counter
    peers = ["np"] + (["sp"] if scipy else []) + (["cp"] if cp else [])
    names = {"np": "numpy", "sp": "scipy", "cp": "cupy"}
    print(f"device: {dev.name}; peers: {', '.join(names[p] for p in peers)}; median of {a.repeat} interleaved rounds, "
          f"{a.clock} clock; ratio = metalcall's time / the peer's")
    print(f"{'case':24s} {'mnp ms':>9s}" + "".join(f" {names[p] + ' ms':>10s} {'ratio':>6s}" for p in peers) + "  target")
    for name, cuda_target, cpu_target, fns, inputs in cases(np.dtype(a.dtype).type):
        xs = [mnp.asarray(v) for v in inputs]
        f_mnp = {"fft": lambda x: mnp.fft.fft(x), "sol": lambda x, y: mnp.linalg.solve(x, y),
                 "svd": lambda x: mnp.linalg.svd(x, full_matrices=False)}[name[:3]]
        got, want = f_mnp(*xs), fns["np"](*inputs)
        for g, w in zip(got if isinstance(got, tuple) else (got,), want if isinstance(want, tuple) else (want,)):
            if name.startswith("svd"):  # compare the singular values; U and Vh by U S Vh = A
                break
            g = np.asarray(g)
            assert np.abs(g - w).max() <= 1e-3 * max(1.0, np.abs(w).max()), name
        if name.startswith("svd"):
            u, s, vh = (np.asarray(v, np.float64) for v in got)
            np.testing.assert_allclose(s, want[1], rtol=1e-3, atol=1e-3 * want[1][0])
            np.testing.assert_allclose((u * s) @ vh, inputs[0], atol=1e-3 * want[1][0])

        def run_mnp():
            r = f_mnp(*xs)
            for v in (r if isinstance(r, tuple) else (r,)):
                v.evaluate()
            mnp.synchronize()

        calls = [run_mnp]
        for p in peers:
            if p == "cp":
                f = cp
                for part in fns["cp"].split("."):
                    f = getattr(f, part)
                cs = [cp.asarray(v) for v in inputs]
                calls.append(lambda f=f, cs=cs: (f(*cs), cp.cuda.Device().synchronize()))
            elif fns.get(p):
                calls.append(lambda f=fns[p]: f(*inputs))
            else:
                calls.append(None)
        live = [c for c in calls if c]
        for c in live:
            c()
        times = {id(c): [] for c in live}
        for _ in range(a.repeat):
            for c in live:
                t = clock()
                c()
                times[id(c)].append(clock() - t)
        med = {id(c): float(np.median(times[id(c)])) for c in live}
        tm = med[id(run_mnp)]
        line = f"{name:24s} {tm * 1e3:9.3f}"
        for c in calls[1:]:
            line += f" {med[id(c)] * 1e3:10.3f} {tm / med[id(c)]:6.2f}" if c else f" {'-':>10s} {'-':>6s}"
        target = cuda_target if cp else cpu_target
        ref = med[id(calls[-1])] if cp else med[id(calls[1])]
        line += f"  {'met' if tm <= target * ref else 'NOT met'} ({target}x {'cupy' if cp else 'numpy'})"
        print(line, flush=True)


if __name__ == "__main__":
    main()
