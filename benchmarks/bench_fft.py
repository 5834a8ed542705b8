"""metalcall.numpy.fft against numpy.fft (and CuPy's cuFFT on a CUDA device) in one process:
complex64 transforms of one long row (the issue's 2^20 case), a batch of short rows, a Bluestein
length and a real rfft. Results are checked against NumPy before timing; times are the best of warm
repeats, each ending with the result ready (mnp.synchronize / CuPy's stream synchronize).

    python benchmarks/bench_fft.py                    # default device
    python benchmarks/bench_fft.py --device cpu --repeat 3
"""

import argparse

import numpy as np

import metalcall.numpy as mnp
from mnp_bench_common import best, device_and_cupy

CASES = [  # (name, shape, function, real input)
    ("fft 2^20 c64", (1 << 20,), "fft", False),
    ("fft 1024 x 1024 rows c64", (1024, 1024), "fft", False),
    ("fft 3^10 c64 (radix 3)", (3 ** 10,), "fft", False),
    ("fft 100003 c64 (Bluestein)", (100003,), "fft", False),
    ("rfft 2^20 f32", (1 << 20,), "rfft", True),
]



def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default=None)
    ap.add_argument("--repeat", type=int, default=5)
    a = ap.parse_args()
    dev, cp = device_and_cupy(a.device)
    print(f"device: {dev.name}; peers: NumPy{' and CuPy (cuFFT)' if cp else ''}")
    print(f"{'case':30s} {'mnp ms':>9s} {'numpy ms':>9s} {'np/mnp':>7s}" + (f" {'cupy ms':>9s} {'cp/mnp':>7s}" if cp else ""))
    rng = np.random.default_rng(0)
    for name, shape, fname, real in CASES:
        h = rng.standard_normal(shape).astype(np.float32)
        if not real:
            h = (h + 1j * rng.standard_normal(shape)).astype(np.complex64)
        x = mnp.asarray(h, device=dev)
        f_mnp, f_np = getattr(mnp.fft, fname), getattr(np.fft, fname)
        got, want = np.asarray(f_mnp(x)), f_np(h)
        err = np.abs(got - want).max() / np.abs(want).max()
        assert err < 1e-4, (name, err)

        def run_mnp():
            f_mnp(x).evaluate()
            mnp.synchronize()

        tm, tn = best(run_mnp, a.repeat), best(lambda: f_np(h), a.repeat)
        line = f"{name:30s} {tm * 1e3:9.3f} {tn * 1e3:9.3f} {tn / tm:7.2f}"
        if cp is not None:
            xc, f_cp = cp.asarray(h), getattr(cp.fft, fname)

            def run_cp():
                f_cp(xc)
                cp.cuda.Stream.null.synchronize()

            tc = best(run_cp, a.repeat)
            line += f" {tc * 1e3:9.3f} {tc / tm:7.2f}"
        print(line, flush=True)


if __name__ == "__main__":
    main()
