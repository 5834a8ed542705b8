"""Session 17: one workload of 1-element statement calls for py-spy to sample (argv[1]: own, torch, cupy)."""
import sys, time
import numpy as np
import metalcall as mc
from metalcall import _bench
dev = mc.Device("cuda")
mul = dev.compile(_bench.MUL_SOURCE).mul
which = sys.argv[1]
if which == "own":
    args = (dev.asarray(np.float32([3.0])), dev.asarray(np.float32([4.0])), dev.empty(1, np.float32))
elif which == "torch":
    import torch
    args = tuple(torch.ones(1, device="cuda") for _ in range(3))
else:
    import cupy
    args = tuple(cupy.ones(1, dtype=cupy.float32) for _ in range(3))
mul(1, *args)
t0 = time.perf_counter(); n = 0
while time.perf_counter() - t0 < float(sys.argv[2]):
    for _ in range(2000):
        mul(1, *args)
    n += 2000
print(which, "%.2f us/call" % ((time.perf_counter() - t0) / n * 1e6))
