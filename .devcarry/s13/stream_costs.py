"""What ordering after a foreign stream costs on the driver (session 13): cuStreamQuery of the
legacy default stream and of ours, an event record on it and a wait on ours (ctypes, its own
call cost shown by cuDriverGetVersion)."""
import ctypes
import statistics
import time

import numpy as np

import metalcall as mc
from metalcall import _bench

dev = mc.Device("cuda")
mul = dev.compile(_bench.MUL_SOURCE).mul
A = dev.asarray(np.float32([3.0]))
mul(1, A, A, A)  # the context is current on this thread now
cu = ctypes.CDLL("libcuda.so.1")
ours = ctypes.c_void_p(dev.stream_handle)
legacy = ctypes.c_void_p(0)
ev = ctypes.c_void_p()
assert cu.cuEventCreate(ctypes.byref(ev), 2) == 0
v = ctypes.c_int()


def med(fn, reps=3000):
    for _ in range(100):
        fn()
    ts = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
    return statistics.median(ts) * 1e6


for label, fn in [("ctypes call (cuDriverGetVersion)", lambda: cu.cuDriverGetVersion(ctypes.byref(v))),
                  ("cuStreamQuery(legacy 0)", lambda: cu.cuStreamQuery(legacy)),
                  ("cuStreamQuery(ours)", lambda: cu.cuStreamQuery(ours)),
                  ("cuEventRecord(ev, legacy)", lambda: cu.cuEventRecord(ev, legacy)),
                  ("cuEventRecord(ev, legacy) + cuStreamWaitEvent(ours)",
                   lambda: (cu.cuEventRecord(ev, legacy), cu.cuStreamWaitEvent(ours, ev, 0))),
                  ("cuEventRecord(ev, ours)", lambda: cu.cuEventRecord(ev, ours))]:
    print(f"{label:60s} {med(fn):7.2f} us", flush=True)
dev.synchronize()
