"""Session 14: a loop of 1-element calls with three torch tensors (or own Buffers) for perf."""
import sys, time
import numpy as np
import torch
import metalcall as mc
from metalcall import _bench
dev = mc.Device("cuda")
mul = dev.compile(_bench.MUL_SOURCE).mul
which = sys.argv[1]
seconds = float(sys.argv[2])
if which == "torch":
    a, b, c = (torch.ones(1, device="cuda") for _ in range(3))
elif which == "cupy":
    import cupy
    a, b, c = (cupy.ones(1, dtype=cupy.float32) for _ in range(3))
else:
    a, b, c = dev.asarray(np.float32([3.0])), dev.asarray(np.float32([4.0])), dev.empty(1, np.float32)
for _ in range(2000):
    mul(1, a, b, c)
n = 0
t0 = time.perf_counter()
while time.perf_counter() - t0 < seconds:
    for _ in range(1000):
        mul(1, a, b, c)
    n += 1000
print(which, f"{(time.perf_counter() - t0) / n * 1e6:.2f} µs a call", flush=True)
