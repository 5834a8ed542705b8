"""Why metalcall.numpy's fused (x+y)*(x-y)+1 at 1e8 ran at the plain entry point's speed (593 µs
against 291 µs for the same expression as an own kernel, session 12's first call): the generated
source with own Buffers, its compile options, its parameter buffer, and every buffer's alignment
(the coarsened entry needs 16-byte aligned addresses)."""
import statistics
import time

import numpy as np

import metalcall as mc
import metalcall.numpy as mnp
from metalcall.numpy import _fusion as F
from metalcall.numpy import _runtime as R

import os
dev = mc.Device(os.environ.get("DIAG_DEVICE", "cuda"))
n = int(os.environ.get("DIAG_N", 10**8))
OWN = """
kernel void g(device const float* x [[buffer(0)]], device const float* y [[buffer(1)]],
              device float* z [[buffer(2)]], uint i [[thread_position_in_grid]]) { z[i] = (x[i] + y[i]) * (x[i] - y[i]) + 1.0f; }
"""
rng = np.random.default_rng(4)
xs = rng.random(n, dtype=np.float32)
ys = rng.random(n, dtype=np.float32)
bx, by, bz = dev.asarray(xs), dev.asarray(ys), dev.empty(n, np.float32)
mx, my = mnp.asarray(xs, device=dev), mnp.asarray(ys, device=dev)
expr = (mx + my) * (mx - my) + 1
src = mnp.explain(expr)
print(src)
P = F._params(dev, (0, 0, 0, n, 0))
one = np.frombuffer(np.float32(1).tobytes(), np.uint8)


def addr(b):
    return np.asarray(b).ctypes.data


def med(fn, reps=25):
    fn()
    dev.synchronize()
    ts = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
    return statistics.median(ts) * 1e6


for fm in (True, False):
    k = dev.compile(OWN, fast_math=fm).g
    print(f"own g fast_math={fm}: {med(lambda: k(n, bx, by, bz).wait()):8.1f} us")
for fm in (True, False):
    k = dev.compile(src, fast_math=fm).mnp_fused
    print(f"mnp source fast_math={fm}, own buffers + P: {med(lambda: k(n, bx, by, np.float32(1), P, bz).wait()):8.1f} us")
k = R.kernel(dev, src, "mnp_fused")
print(f"R.kernel, own buffers: {med(lambda: k(n, bx, by, np.float32(1), P, bz).wait()):8.1f} us")
out = R.result_buffer(dev, (n,), np.dtype(np.float32))
print(f"R.kernel, own inputs, result_buffer: {med(lambda: k(n, bx, by, np.float32(1), P, out).wait()):8.1f} us")
_, args, _ = F.build([(expr._node, (out, 0, (4,), np.dtype(np.float32), (n,)))], dev)
print("mnp args:", [type(a).__name__ for a in args])
for a in args:
    if isinstance(a, mc.Buffer):
        print("   buffer", a.nbytes, "bytes, address % 256 =", addr(a) % 256)
print(f"R.kernel, mnp's own args: {med(lambda: k(n, *args).wait()):8.1f} us")
args2 = [a if not (isinstance(a, mc.Buffer) and a.nbytes < 100) else P for a in args]
print(f"R.kernel, mnp's args, our P: {med(lambda: k(n, *args2).wait()):8.1f} us")


def full():
    r = (mx + my) * (mx - my) + 1
    mnp.evaluate(r)
    R.synchronize(dev)


print(f"mnp g full: {med(full):8.1f} us")
print("addresses % 256: bx", addr(bx) % 256, "bz", addr(bz) % 256, "P", addr(P) % 256, "out", addr(out) % 256)
