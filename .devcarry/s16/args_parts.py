"""Session 15: where the foreign-argument cost goes, from Python (no perf on the device).
Interleaved rounds of 1-element calls: own Buffers, one/two/three torch tensors, three CuPy
arrays; statement calls against kept-and-waited Completions; and the attribute reads alone."""
import time
import numpy as np
import torch, cupy
import metalcall as mc
from metalcall import _bench
dev = mc.Device("cuda")
mul = dev.compile(_bench.MUL_SOURCE).mul
A, B, C = dev.asarray(np.float32([3.0])), dev.asarray(np.float32([4.0])), dev.empty(1, np.float32)
ta, tb, tc = (torch.ones(1, device="cuda") for _ in range(3))
ca, cb, cc = (cupy.ones(1, dtype=cupy.float32) for _ in range(3))
raw = torch._C._cuda_getCurrentRawStream

def stmt(args):
    def run(n):
        for _ in range(n):
            mul(1, *args)
    return run

def kept(args):
    def run(n):
        for _ in range(n):
            c = mul(1, *args)
            c.wait()
            del c
    return run

def listed(args):
    def run(n):
        keep = []
        for _ in range(n):
            keep.append(mul(1, *args))
        dev.synchronize()
        del keep
    return run

def reads(n):
    t = ta
    for _ in range(n):
        t.requires_grad; t.dtype; t.is_contiguous(); t.is_neg(); t.data_ptr(); t.nbytes

def stream(n):
    for _ in range(n):
        raw(0)

def cupy_stream(n):
    g = cupy.cuda.get_current_stream
    for _ in range(n):
        g().ptr

def cupy_reads(n):
    x = ca
    for _ in range(n):
        x.data; x.dtype; x._c_contiguous; x.nbytes

def noop(n):
    for _ in range(n):
        pass

rows = {
    "own Buffers, statement": stmt((A, B, C)),
    "own Buffers, kept+wait": kept((A, B, C)),
    "torch x1 + own x2, statement": stmt((ta, B, C)),
    "torch x2 + own x1, statement": stmt((ta, tb, C)),
    "torch x3, statement": stmt((ta, tb, tc)),
    "torch x3, kept+wait": kept((ta, tb, tc)),
    "cupy x1 + own x2, statement": stmt((ca, B, C)),
    "cupy x3, statement": stmt((ca, cb, cc)),
    "cupy x3, kept+wait": kept((ca, cb, cc)),
    "own Buffers, kept in a list": listed((A, B, C)),
    "torch x3, kept in a list": listed((ta, tb, tc)),
    "cupy x3, kept in a list": listed((ca, cb, cc)),
    "torch reads (6) alone": reads,
    "torch raw stream alone": stream,
    "cupy stream alone": cupy_stream,
    "cupy reads (4) alone": cupy_reads,
    "empty loop": noop,
}
for f in rows.values():
    f(2000)
dev.synchronize()
res = {k: [] for k in rows}
for r in range(9):
    for k, f in rows.items():
        n = 3000
        t0 = time.perf_counter(); f(n); dev.synchronize(); torch.cuda.synchronize()
        res[k].append((time.perf_counter() - t0) / n * 1e6)
for k, v in res.items():
    v = sorted(v)
    print(f"{k:32s} median {v[len(v)//2]:7.2f} µs  min {v[0]:7.2f}  max {v[-1]:7.2f}")
