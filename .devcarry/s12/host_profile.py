"""Where the host time of float(mnp.sum(x)) and of a fused chain's evaluate goes on CUDA at 1e8:
per-phase wall times and a cProfile of 50 calls each (session 12)."""
import cProfile
import os
import pstats
import statistics
import time

import numpy as np

import metalcall as mc
import metalcall.numpy as mnp
from metalcall.numpy import _runtime as R

dev = mc.Device(os.environ.get("DIAG_DEVICE", "cuda"))
n = int(os.environ.get("DIAG_N", 10**8))
rng = np.random.default_rng(1)
xs = rng.random(n, dtype=np.float32)
x = mnp.asarray(xs, device=dev)
y = mnp.asarray(xs[::-1].copy(), device=dev)


def med(fn, reps=40):
    fn()
    ts = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
    return statistics.median(ts) * 1e6


s = mnp.sum(x)
print(f"float(mnp.sum(x)) {med(lambda: float(mnp.sum(x))):.1f} us")
print(f"mnp.sum(x) then synchronize {med(lambda: (mnp.sum(x), R.synchronize(dev))):.1f} us")
print(f"mnp.sum(x) alone (no wait) {med(lambda: mnp.sum(x), 20):.1f} us")
R.synchronize(dev)
r = mnp.sum(x)
R.synchronize(dev)
print(f"float(r) of a finished sum {med(lambda: float(r)):.1f} us")


def fused():
    z = (x + y) * (x - y) + 1
    mnp.evaluate(z)
    R.synchronize(dev)


def fused_nowait():
    z = (x + y) * (x - y) + 1
    mnp.evaluate(z)
    return z


print(f"fused evaluate + synchronize {med(fused):.1f} us")
print(f"fused build only {med(lambda: (x + y) * (x - y) + 1):.1f} us")
ts = []
for _ in range(20):
    R.synchronize(dev)
    t = time.perf_counter()
    z = fused_nowait()
    ts.append(time.perf_counter() - t)
    R.synchronize(dev)
    del z
print(f"fused build + evaluate, no wait {statistics.median(ts) * 1e6:.1f} us")
t = time.perf_counter()
b = dev._empty((n,), np.float32)
print(f"_empty 1e8 {1e6 * (time.perf_counter() - t):.1f} us; memory_info {dev.memory_info()}")
del b
for name, fn in (("sum", lambda: float(mnp.sum(x))), ("fused", fused)):
    pr = cProfile.Profile()
    pr.enable()
    for _ in range(50):
        fn()
    pr.disable()
    print(f"---- cProfile, 50 x {name}")
    pstats.Stats(pr).sort_stats("tottime").print_stats(14)
