"""Where a stack of small solves spends its time: the whole `mnp.linalg.solve` call, each one-launch
kernel alone (a launch and the read of `info`, as solve waits for it; and 20 launches then one
read, per launch), and CuPy's `linalg.solve`, for stacks of sizes from 4x4 to 64x64 with one
right-hand side. Medians of interleaved rounds; every kernel's result is checked against NumPy.
`--profile` then lists where the host spends a whole call (cProfile, 300 calls of 1000 32x32).

    python benchmarks/bench_small_solves.py --device cuda
    python benchmarks/bench_small_solves.py --device cpu --cases 1000x32 --rounds 5
"""

from __future__ import annotations

import argparse
import cProfile
import pstats

import numpy as np

import metalcall.numpy as mnp
from metalcall.numpy._backend import kernels
from mnp_bench_common import device_and_cupy, medians

CASES = ["10000x4", "1000x8", "1000x16", "1000x24", "1000x32", "1000x48", "1000x64", "10000x32", "100x32",
         "1000x32:float64", "1000x16:complex64"]



def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default=None)
    ap.add_argument("--cases", nargs="*", default=CASES, help="BATCHxN[:dtype] (float32 unless named)")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--profile", action="store_true")
    a = ap.parse_args()
    dev, cp = device_and_cupy(a.device)
    mods = {"simd": kernels("linalg_warp_solve"), "tg": kernels("linalg_small_solve")}
    cols = ["call"] + [f"{m}{s}" for m in mods for s in ("", "/20")] + (["cupy", "call/cp"] if cp else [])
    print(f"device: {dev.name}; ms, medians of {a.rounds} interleaved rounds; call: mnp.linalg.solve + wait; "
          "simd: linalg_warp_solve alone, tg: linalg_small_solve alone (launch + read info; /20: per launch of 20)")
    print(f"{'case':20s}" + "".join(f" {c:>8s}" for c in cols))
    rng = np.random.default_rng(0)
    for case in a.cases:
        shape, _, dts = case.partition(":")
        batch, n = (int(v) for v in shape.split("x"))
        dt = np.dtype(dts or "float32")
        x = rng.standard_normal((batch, n, n)) + n * np.eye(n)
        if dt.kind == "c":
            x = x + 1j * rng.standard_normal((batch, n, n))
        x, b = x.astype(dt), rng.standard_normal((batch, n, 1)).astype(dt)
        want = np.linalg.solve(x.astype(np.complex128 if dt.kind == "c" else np.float64), b)
        xa, xb = mnp.asarray(x, device=dev), mnp.asarray(b, device=dev)
        bufs = (xa._contiguous_buffer(), xb._contiguous_buffer())

        def full():
            mnp.linalg.solve(xa, xb).evaluate()
            mnp.synchronize()

        fns = {"call": full}
        for name, mod in mods.items():
            if not mod.usable(dev, n, 1, dt, batch):  # what solve would not take on this device
                continue
            out, info = mod.solve(dev, *bufs, batch, n, 1, dt)
            got = np.asarray(out).view(dt).reshape(batch, n, 1)
            assert np.abs(got - want).max() <= 1e-3 * np.abs(want).max() and not np.asarray(info).any(), (name, case)

            def one(mod=mod):
                np.asarray(mod.solve(dev, *bufs, batch, n, 1, dt)[1])

            def twenty(mod=mod):
                for _ in range(20):
                    info = mod.solve(dev, *bufs, batch, n, 1, dt)[1]
                np.asarray(info)

            fns[name], fns[name + "/20"] = one, twenty
        if cp is not None:
            ca, cb = cp.asarray(x), cp.asarray(b)

            def cupy_call():
                cp.linalg.solve(ca, cb)
                cp.cuda.Device().synchronize()

            fns["cupy"] = cupy_call
        t = medians(fns, a.rounds)
        for k in list(t):
            if k.endswith("/20"):
                t[k] /= 20
        if "cupy" in t:
            t["call/cp"] = t["call"] / t["cupy"]
        print(f"{case:20s}" + "".join(f" {t[c]:8.3f}" if c in t else f" {'-':>8s}" for c in cols), flush=True)
    if a.profile:
        x = mnp.asarray((rng.standard_normal((1000, 32, 32)) + 32 * np.eye(32)).astype(np.float32), device=dev)
        y = mnp.asarray(rng.standard_normal((1000, 32, 1)).astype(np.float32), device=dev)
        for _ in range(20):
            mnp.linalg.solve(x, y).evaluate()
            mnp.synchronize()
        parts = {"solve": lambda: mnp.linalg.solve(x, y),
                 "solve+evaluate+synchronize": lambda: (mnp.linalg.solve(x, y).evaluate(), mnp.synchronize()),
                 "synchronize alone": mnp.synchronize}
        print("host parts, ms:", {k: round(v, 4) for k, v in medians(parts, 51).items()})
        prof = cProfile.Profile()
        prof.enable()
        for _ in range(300):
            mnp.linalg.solve(x, y).evaluate()
            mnp.synchronize()
        prof.disable()
        pstats.Stats(prof).sort_stats("tottime").print_stats(18)


if __name__ == "__main__":
    main()
