"""Every GPU matmul variant of metalcall.numpy (_kernels/matmul_gpu.VARIANTS) against CuPy, float32.

Each variant's result is checked against CuPy's first (NumPy's on the CPU); times are the best of
repeats of a loop of calls ending in one wait (CuPy: one synchronize). ratio = peer time / ours
(higher is better; the issue's target is >= 0.6 at 4096). CuPy runs without TF32 unless
CUPY_TF32=1 is set. On the CPU (--device cpu, a smoke test: small sizes) the GPU variants run as
fibers against NumPy.

    python3 benchmarks/bench_matmul_variants.py                      # CUDA, 1024 and 4096
    python3 benchmarks/bench_matmul_variants.py --sizes 4096 4097 --variants quad8 rows8
    python3 benchmarks/bench_matmul_variants.py --device cpu --sizes 128 130 --repeats 1
"""

from __future__ import annotations

import argparse
import os

import numpy as np

import metalcall as mc
from metalcall.numpy._kernels import cache, matmul, matmul_gpu

from bench_numpy_kernels import best  # the same timing loop (this folder is on sys.path when run as a script)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--sizes", nargs="*", type=int, default=[1024, 4096])
    ap.add_argument("--variants", nargs="*", default=list(matmul_gpu.VARIANTS))
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--loop", type=int, default=5)
    a = ap.parse_args()
    dev = mc.Device(a.device)
    xp = None
    if dev.backend == "cuda":
        import cupy as xp  # the peer; required on CUDA
    else:
        cache.force_gpu_variants = True  # the GPU kernels, run as CPU fibers
    peer = "cupy" if xp is not None else "numpy"
    print(f"device: {dev.name}; peer: {peer}; CUPY_TF32={os.environ.get('CUPY_TF32', 'unset')}")
    print(f"{'variant':8s} {'size':>6s} {'ours ms':>9s} {'TFLOP/s':>8s} {peer + ' ms':>9s} {'TFLOP/s':>8s} "
          f"{'ratio':>6s}")
    rng = np.random.default_rng(0)
    for s in a.sizes:
        ha = rng.standard_normal((s, s)).astype(np.float32)
        hb = rng.standard_normal((s, s)).astype(np.float32)
        ba, bb = dev.asarray(ha.ravel()), dev.asarray(hb.ravel())
        if xp is not None:
            ca, cb = xp.asarray(ha), xp.asarray(hb)
            peer_fn = lambda: ca @ cb
            peer_sync = lambda r: xp.cuda.Stream.null.synchronize()
            want = xp.asnumpy(peer_fn())
        else:
            peer_fn, peer_sync = (lambda: ha @ hb), (lambda r: None)
            want = peer_fn()
        t_peer = best(peer_fn, peer_sync, a.repeats, a.loop)
        flop = 2.0 * s ** 3
        for v in a.variants:
            ours = lambda v=v: matmul.matmul(dev, ba, bb, 1, s, s, s, np.float32, variant=v)
            got = np.asarray(ours()).reshape(s, s)
            scale = float(np.abs(want).max()) or 1.0
            if not np.allclose(got, want, rtol=1e-3, atol=1e-4 * scale):
                raise SystemExit(f"{v} {s}: differs from {peer} (max abs error {np.abs(got - want).max():.3g})")
            t = best(ours, lambda r: r.wait(), a.repeats, a.loop)
            print(f"{v:8s} {s:6d} {t * 1e3:9.3f} {flop / t / 1e12:8.2f} {t_peer * 1e3:9.3f} "
                  f"{flop / t_peer / 1e12:8.2f} {t_peer / t:6.2f}", flush=True)


if __name__ == "__main__":
    main()
