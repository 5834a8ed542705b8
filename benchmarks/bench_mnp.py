"""metalcall.numpy against NumPy (and CuPy on a CUDA device) in one process: a fused elementwise
chain (sin(x) * y + 2), a sum, and matmul, at growing sizes. Results are checked against NumPy
before timing; times are the best of warm repeats, each ending with the result ready.

    python benchmarks/bench_mnp.py                     # default device, sizes 1e6 1e7
    python benchmarks/bench_mnp.py --device cpu --sizes 1e6 1e7 1e8 --matmul 1024 4096
"""

import argparse

import numpy as np

import metalcall.numpy as mnp
from mnp_bench_common import best, device_and_cupy



def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default=None)
    ap.add_argument("--sizes", nargs="*", type=float, default=[1e6, 1e7])
    ap.add_argument("--matmul", nargs="*", type=int, default=[512, 1024])
    ap.add_argument("--repeat", type=int, default=5)
    a = ap.parse_args()
    dev, cp = device_and_cupy(a.device)
    print(f"device: {dev.name}; peers: NumPy{' and CuPy' if cp else ''}")
    print(f"{'case':32s} {'mnp ms':>9s} {'numpy ms':>9s} {'np/mnp':>7s}" + (f" {'cupy ms':>9s} {'cp/mnp':>7s}" if cp else ""))

    def row(name, f_mnp, f_np, f_cp):
        tm, tn = best(f_mnp, a.repeat, warm_seconds=0.02), best(f_np, a.repeat, warm_seconds=0.02)
        line = f"{name:32s} {tm * 1e3:9.3f} {tn * 1e3:9.3f} {tn / tm:7.2f}"
        if cp and f_cp:
            tc = best(f_cp, a.repeat, warm_seconds=0.02)
            line += f" {tc * 1e3:9.3f} {tc / tm:7.2f}"
        print(line, flush=True)

    for size in a.sizes:
        n = int(size)
        hx = np.random.rand(n).astype(np.float32)
        hy = np.random.rand(n).astype(np.float32)
        x, y = mnp.asarray(hx), mnp.asarray(hy)
        np.testing.assert_allclose(np.asarray(mnp.sin(x) * y + 2), np.sin(hx) * hy + 2, rtol=1e-5)
        cx = cy = None
        if cp:
            cx, cy = cp.asarray(hx), cp.asarray(hy)

        def chain():
            (mnp.sin(x) * y + 2).evaluate()
            mnp.synchronize()

        def chain_cp():
            cp.sin(cx) * cy + 2
            cp.cuda.Device().synchronize()

        row(f"sin(x)*y+2 n={n:.0e}", chain, lambda: np.sin(hx) * hy + 2, chain_cp)

        def red():
            float(mnp.sum(x))

        def red_cp():
            float(cp.sum(cx))

        row(f"sum(x) n={n:.0e}", red, lambda: float(hx.sum()), red_cp)
    for m in a.matmul:
        ha = np.random.rand(m, m).astype(np.float32)
        hb = np.random.rand(m, m).astype(np.float32)
        xa, xb = mnp.asarray(ha), mnp.asarray(hb)
        np.testing.assert_allclose(np.asarray(xa @ xb), ha @ hb, rtol=1e-3)
        ca = cb = None
        if cp:
            ca, cb = cp.asarray(ha), cp.asarray(hb)

        def mm():
            (xa @ xb).evaluate()
            mnp.synchronize()

        def mm_cp():
            ca @ cb
            cp.cuda.Device().synchronize()

        row(f"matmul {m}x{m} float32", mm, lambda: ha @ hb, mm_cp)


if __name__ == "__main__":
    main()
