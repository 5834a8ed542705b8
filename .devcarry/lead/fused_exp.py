"""Why the fused sin(x)*y+2 at 1e8 runs at 1.25x CuPy's ElementwiseKernel: the same MSL through
the coarsened (x4, aligned) entry and the plain one (inputs at a 4-byte offset), fast::sin, the
(x+y)*(x-y)+1 chain, metalcall.numpy's fused call, and CuPy. Medians of interleaved rounds."""
import statistics
import time

import cupy as cp
import numpy as np

import metalcall as mc
import metalcall.numpy as mnp

dev = mc.Device("cuda")
n = 10**8
SRC = """
#include <metal_stdlib>
using namespace metal;
kernel void f(device const float* x [[buffer(0)]], device const float* y [[buffer(1)]],
              device float* z [[buffer(2)]], uint i [[thread_position_in_grid]]) { z[i] = sin(x[i]) * y[i] + 2.0f; }
kernel void ffast(device const float* x [[buffer(0)]], device const float* y [[buffer(1)]],
              device float* z [[buffer(2)]], uint i [[thread_position_in_grid]]) { z[i] = fast::sin(x[i]) * y[i] + 2.0f; }
kernel void g(device const float* x [[buffer(0)]], device const float* y [[buffer(1)]],
              device float* z [[buffer(2)]], uint i [[thread_position_in_grid]]) { z[i] = (x[i] + y[i]) * (x[i] - y[i]) + 1.0f; }
"""
lib = dev.compile(SRC)
rng = np.random.default_rng(4)
xs = (rng.random(n + 1, dtype=np.float32) * 20 - 10)
ys = rng.random(n + 1, dtype=np.float32)
cx, cy = cp.asarray(xs), cp.asarray(ys)
cz = cp.empty(n + 1, cp.float32)
al = (cx[:n], cy[:n], cz[:n])
mis = (cx[1:], cy[1:], cz[1:])
ek_f = cp.ElementwiseKernel("float32 x, float32 y", "float32 z", "z = sin(x) * y + 2.0f", "chain_f")
ek_g = cp.ElementwiseKernel("float32 x, float32 y", "float32 z", "z = (x + y) * (x - y) + 1.0f", "chain_g")
mx, my = mnp.asarray(xs[:n], device=dev), mnp.asarray(ys[:n], device=dev)
stream = cp.cuda.get_current_stream()


def mc_call(k, args):
    return lambda: k(n, *args).wait()


def cp_call(k, args):
    def run():
        k(*args)
        stream.synchronize()
    return run


def mnp_call(expr):
    def run():
        expr(mx, my).evaluate()
        mnp.synchronize(dev)
    return run


cases = {
    "f x4 (aligned)": mc_call(lib.f, al),
    "f plain (offset 4 B)": mc_call(lib.f, mis),
    "fast::sin x4": mc_call(lib.ffast, al),
    "fast::sin plain": mc_call(lib.ffast, mis),
    "g x4": mc_call(lib.g, al),
    "g plain": mc_call(lib.g, mis),
    "cupy EK sin chain": cp_call(ek_f, al),
    "cupy EK (x+y)(x-y)+1": cp_call(ek_g, al),
    "mnp sin(x)*y+2": mnp_call(lambda x, y: mnp.sin(x) * y + 2),
    "mnp (x+y)*(x-y)+1": mnp_call(lambda x, y: (x + y) * (x - y) + 1),
}
want = np.sin(xs[:n]) * ys[:n] + 2
for name in ("f x4 (aligned)", "f plain (offset 4 B)"):
    cases[name]()
    got = cp.asnumpy(al[2] if "aligned" in name else mis[2])
    print(name, "max abs err", float(np.abs(got - want).max()), flush=True)
samples = {k: [] for k in cases}
for fn in cases.values():
    fn()
    fn()
for _ in range(15):
    for k, fn in cases.items():
        t = time.perf_counter()
        fn()
        samples[k].append(time.perf_counter() - t)
base = statistics.median(samples["cupy EK sin chain"])
for k, v in samples.items():
    m = statistics.median(v)
    print(f"{k:28s} {m * 1e6:9.1f} us  ({12 * n / m / 1e9:6.0f} GB/s)  {m / base:5.2f}x CuPy sin chain", flush=True)
