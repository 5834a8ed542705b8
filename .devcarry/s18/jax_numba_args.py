"""Session 18 (from session 17): 1-element waited calls with three arrays of each producer (own Buffers, torch, CuPy,
Numba device arrays, JAX arrays), interleaved rounds, medians; each result checked first."""
import os, time
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
import numpy as np
import metalcall as mc
from metalcall import _bench
dev = mc.Device("cuda")
mul = dev.compile(_bench.MUL_SOURCE).mul
rows = {}
A, B, C = dev.asarray(np.float32([3.0])), dev.asarray(np.float32([4.0])), dev.empty(1, np.float32)
rows["own Buffers"] = (A, B, C, lambda: float(np.asarray(C)[0]))
try:
    import torch
    t = (torch.tensor([3.0], device="cuda"), torch.tensor([4.0], device="cuda"), torch.zeros(1, device="cuda"))
    rows["torch"] = (*t, lambda: float(t[2][0]))
except Exception as e: print("torch:", e)
try:
    import cupy
    c = (cupy.asarray(np.float32([3.0])), cupy.asarray(np.float32([4.0])), cupy.zeros(1, cupy.float32))
    cp = c; rows["cupy"] = (*cp, lambda: float(cp[2][0]))
except Exception as e: print("cupy:", e)
try:
    from numba import cuda as ncuda
    nb = (ncuda.to_device(np.float32([3.0])), ncuda.to_device(np.float32([4.0])), ncuda.to_device(np.zeros(1, np.float32)))
    print("numba interface:", nb[0].__cuda_array_interface__)
    rows["numba"] = (*nb, lambda: float(nb[2].copy_to_host()[0]))
except Exception as e: print("numba:", repr(e))
try:
    import jax, jax.numpy as jnp
    jx = (jax.device_put(np.float32([3.0])), jax.device_put(np.float32([4.0])), jax.device_put(np.zeros(1, np.float32)))
    print("jax devices:", jax.devices(), "interface:", getattr(jx[0], "__cuda_array_interface__", None))
    jc = dev.empty(1, np.float32); rows["jax (2 inputs, own Buffer out)"] = (jx[0], jx[1], jc, lambda: float(np.asarray(jc)[0]))
except Exception as e: print("jax:", repr(e))
for name, (a, b, c, read) in list(rows.items()):
    try:
        mul(1, a, b, c)
        print(f"{name}: result {read()}")
    except Exception as e:
        print(f"{name}: {type(e).__name__}: {e}")
        del rows[name]
samples = {k: [] for k in rows}
for r in range(7):
    for name, (a, b, c, _) in rows.items():
        n = 2000
        t0 = time.perf_counter()
        for _ in range(n):
            mul(1, a, b, c)
        samples[name].append((time.perf_counter() - t0) / n * 1e6)
own = sorted(samples["own Buffers"])[3]
for name, s in samples.items():
    s = sorted(s)
    print(f"{name:36s} median {s[3]:7.2f} µs  min {s[0]:7.2f}  ({s[3] / own:.2f}x own Buffers)")
