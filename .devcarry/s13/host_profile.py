"""Where the host time goes (session 13): metalcall.numpy's sum at 1e6 on CUDA piece by piece,
the scalar read paths, and three foreign tensors as arguments piece by piece (medians of many
calls, microseconds)."""
import statistics
import time

import numpy as np

import metalcall as mc
import metalcall.numpy as mnp
from metalcall import _bench
from metalcall.numpy import _runtime as R
from metalcall.numpy._kernels import reduce as KR
from metalcall.numpy._kernels import cache as KC

dev = mc.Device("cuda")
mnp.set_default_device(dev)


def med(fn, reps=2000, inner=1):
    for _ in range(50):
        fn()
    ts = []
    for _ in range(reps):
        t = time.perf_counter()
        for _ in range(inner):
            fn()
        ts.append((time.perf_counter() - t) / inner)
    return statistics.median(ts) * 1e6


def show(label, us):
    print(f"{label:60s} {us:8.2f} us", flush=True)


for n in (10**6, 10**7):
    x = mnp.asarray(np.ones(n, np.float32), device=dev)
    print(f"--- n = {n}")
    show("float(mnp.sum(x))", med(lambda: float(mnp.sum(x)), 500))
    show("mnp.sum(x) + synchronize", med(lambda: (mnp.sum(x), R.synchronize(dev)), 500))
    show("mnp.sum(x), 20 queued (host time each)", med(lambda: mnp.sum(x), 100, 20))
    R.synchronize(dev)
    plan = KR._plan(dev, "sum", np.dtype(np.float32), np.dtype(np.float32), np.dtype(np.float32), 1, n, 1, False)
    c, chunk, k1, grid1, k2, grid2, tg1, tg2 = plan
    print("plan chunks", c, "chunk", chunk, "grid1", grid1, "tg1", tg1, "grid2", grid2)
    part = dev._empty(c, np.float32)
    out = dev._empty(1, np.float32)
    show("k1 launch (Completion dropped later), 20 queued", med(lambda: KC.launch(k1, grid1, x._buf, part, n, 1, chunk, c, threadgroup=tg1), 100, 20))
    R.synchronize(dev)
    show("k1 direct call, kept Completion, 20 queued", med(lambda: k1(grid1, x._buf, part, n, 1, chunk, c, threadgroup=tg1), 100, 20))
    R.synchronize(dev)
    show("k1 + k2 + synchronize", med(lambda: (KC.launch(k1, grid1, x._buf, part, n, 1, chunk, c, threadgroup=tg1),
                                                KC.launch(k2, grid2, part, out, c, 1, c, 1, threadgroup=tg2), R.synchronize(dev)), 500))
    show("dev._empty(1, float32)", med(lambda: dev._empty(1, np.float32)))
    show("_plan lookup", med(lambda: KR._plan(dev, "sum", np.dtype(np.float32), np.dtype(np.float32), np.dtype(np.float32), 1, n, 1, False)))
    r = mnp.sum(x)
    R.synchronize(dev)
    show("float(r), r finished", med(lambda: float(r)))
    show("r._buf.read(0, 4), finished (pinned path)", med(lambda: r._buf.read(0, 4)))
    big = dev._empty(2048, np.float32)
    show("8 KiB Buffer.read, finished (pageable cuMemcpy path)", med(lambda: big.read(0, 8192)))
    show("np.asarray(r._buf) (host view)", med(lambda: np.asarray(r._buf), 200))

try:
    import cupy
    cx = cupy.ones(10**6, cupy.float32)
    print("--- CuPy, 1e6")
    show("float(cupy.sum(cx))", med(lambda: float(cupy.sum(cx)), 500))
    show("cupy.sum(cx), 20 queued", med(lambda: cupy.sum(cx), 100, 20))
    cs = cupy.sum(cx)
    show("float(cs), finished", med(lambda: float(cs)))
except ImportError:
    cupy = None

mul = dev.compile(_bench.MUL_SOURCE).mul
A, B, C = dev.asarray(np.float32([3.0])), dev.asarray(np.float32([4.0])), dev.empty(1, np.float32)
print("--- foreign arguments")
show("mul(1, A, B, C) own Buffers, waited", med(lambda: mul(1, A, B, C)))
show("mul(1, A, B, C) kept Completion, 20 queued", med(lambda: mul(1, A, B, C), 100, 20))
dev.synchronize()
try:
    import torch
    ta, tb, tc = torch.tensor([3.0], device="cuda"), torch.tensor([4.0], device="cuda"), torch.zeros(1, device="cuda")
    show("mul(1, ta, tb, tc) torch, waited", med(lambda: mul(1, ta, tb, tc)))
    show("mul(1, A, tb, C) one torch tensor, waited", med(lambda: mul(1, A, tb, C)))
    show("mul(1, ta, tb, tc) kept, 20 queued", med(lambda: mul(1, ta, tb, tc), 100, 20))
    dev.synchronize()
    with torch.cuda.stream(torch.cuda.ExternalStream(dev.stream_handle)):
        show("torch, torch's current stream = ours, waited", med(lambda: mul(1, ta, tb, tc)))
    show("ta.requires_grad", med(lambda: ta.requires_grad, 2000, 20))
    show("ta.dtype", med(lambda: ta.dtype, 2000, 20))
    show("ta.is_contiguous()", med(lambda: ta.is_contiguous(), 2000, 20))
    show("ta.is_neg()", med(lambda: ta.is_neg(), 2000, 20))
    show("ta.data_ptr()", med(lambda: ta.data_ptr(), 2000, 20))
    show("ta.nbytes", med(lambda: ta.nbytes, 2000, 20))
    show("ta.get_device()", med(lambda: ta.get_device(), 2000, 20))
    show("torch._C._cuda_getCurrentRawStream(0)", med(lambda: torch._C._cuda_getCurrentRawStream(0), 2000, 20))
    show("torch.cuda.synchronize()", med(lambda: torch.cuda.synchronize()))
except ImportError:
    pass
if cupy is not None:
    ca, cb, cc = cupy.asarray(np.float32([3.0])), cupy.asarray(np.float32([4.0])), cupy.zeros(1, cupy.float32)
    show("mul(1, ca, cb, cc) CuPy, waited", med(lambda: mul(1, ca, cb, cc)))
    with cupy.cuda.ExternalStream(dev.stream_handle):
        show("CuPy, CuPy's current stream = ours, waited", med(lambda: mul(1, ca, cb, cc)))
    show("ca.data", med(lambda: ca.data, 2000, 20))
    show("ca._c_contiguous", med(lambda: ca._c_contiguous, 2000, 20))
    show("cupy.cuda.get_current_stream()", med(lambda: cupy.cuda.get_current_stream(), 2000, 20))
