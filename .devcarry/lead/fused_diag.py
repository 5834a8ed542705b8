"""Where metalcall.numpy's fused chains at 1e8 lose to the same kernel called directly: own
Buffers with a kept output, a fresh uninitialized output each call, mnp's evaluate with its wait
and without, the result buffer alone; and the sin chain after precise sin left the coarsened entry."""
import statistics
import time

import cupy as cp
import numpy as np

import metalcall as mc
import metalcall.numpy as mnp
from metalcall.numpy import _runtime as R

dev = mc.Device("cuda")
n = 10**8
SRC = """
#include <metal_stdlib>
using namespace metal;
kernel void f(device const float* x [[buffer(0)]], device const float* y [[buffer(1)]],
              device float* z [[buffer(2)]], uint i [[thread_position_in_grid]]) { z[i] = sin(x[i]) * y[i] + 2.0f; }
kernel void g(device const float* x [[buffer(0)]], device const float* y [[buffer(1)]],
              device float* z [[buffer(2)]], uint i [[thread_position_in_grid]]) { z[i] = (x[i] + y[i]) * (x[i] - y[i]) + 1.0f; }
"""
lib = dev.compile(SRC)
rng = np.random.default_rng(4)
xs = rng.random(n, dtype=np.float32) * 20 - 10
ys = rng.random(n, dtype=np.float32)
bx, by, bz = dev.asarray(xs), dev.asarray(ys), dev.empty(n, np.float32)
mx, my = mnp.asarray(xs, device=dev), mnp.asarray(ys, device=dev)
cx, cy, cz = cp.asarray(xs), cp.asarray(ys), cp.empty(n, cp.float32)
ek_f = cp.ElementwiseKernel("float32 x, float32 y", "float32 z", "z = sin(x) * y + 2.0f", "chain_f")
ek_g = cp.ElementwiseKernel("float32 x, float32 y", "float32 z", "z = (x + y) * (x - y) + 1.0f", "chain_g")
stream = cp.cuda.get_current_stream()
G = lambda x, y: (x + y) * (x - y) + 1
F = lambda x, y: mnp.sin(x) * y + 2
split = {}


def fresh_out():
    z = dev.empty(n, np.float32, uninitialized=True)
    lib.g(n, bx, by, z).wait()


def mnp_nowait(expr, key):
    def run():
        t = time.perf_counter()
        r = expr(mx, my).evaluate()
        t1 = time.perf_counter()
        mnp.synchronize(dev)
        split.setdefault(key, []).append((t1 - t, time.perf_counter() - t1))
        del r
    return run


def cpcall(k):
    def run():
        k(cx, cy, cz)
        stream.synchronize()
    return run


cases = {
    "g own Buffers, kept output": lambda: lib.g(n, bx, by, bz).wait(),
    "g own Buffers, fresh output": fresh_out,
    "result_buffer alone": lambda: R.result_buffer(dev, (n,), np.float32),
    "mnp g (split)": mnp_nowait(G, "g"),
    "cupy EK g": cpcall(ek_g),
    "f own Buffers, kept output": lambda: lib.f(n, bx, by, bz).wait(),
    "mnp f (split)": mnp_nowait(F, "f"),
    "cupy EK f": cpcall(ek_f),
}
np.testing.assert_allclose(np.asarray(F(mx, my)), np.sin(xs) * ys + 2, rtol=1e-5, atol=1e-5)
samples = {k: [] for k in cases}
for fn in cases.values():
    fn()
    fn()
split.clear()
for _ in range(15):
    for k, fn in cases.items():
        t = time.perf_counter()
        fn()
        samples[k].append(time.perf_counter() - t)
for k, v in samples.items():
    print(f"{k:30s} {statistics.median(v) * 1e6:9.1f} us  (min {min(v) * 1e6:8.1f})", flush=True)
for k, v in split.items():
    print(f"mnp {k}: evaluate() returns after {statistics.median(a for a, _ in v) * 1e6:.1f} us, "
          f"then the wait {statistics.median(b for _, b in v) * 1e6:.1f} us", flush=True)
print("memory_info", dev.memory_info(), flush=True)
