"""Where the time goes (P2.2 items 1 and 3), on a CUDA device: per-call host time of foreign
arguments (torch/CuPy) split into describing, stream ordering and the call; the host time of
float(mnp.sum(x)) split into launching and reading back, with launches and allocations counted
and a cProfile; the fused chain at 1e8 iteration by iteration (host time, GPU time, allocator).
Prints a compact log; every figure is a median of interleaved repeats."""

from __future__ import annotations

import cProfile
import gc
import io
import os
import pstats
import statistics
import sys
import time

import numpy as np

import metalcall as mc
import metalcall.numpy as mnp

DEVICE = os.environ.get("DIAG_DEVICE", "cuda")  # "cpu": a smoke test where there is no GPU
SIZES = [int(float(v)) for v in os.environ.get("DIAG_SIZES", "1e6,1e7,1e8").split(",")]
SRC = """
kernel void mul(const device float* a [[buffer(0)]], const device float* b [[buffer(1)]],
                device float* c [[buffer(2)]], uint i [[thread_position_in_grid]]) { c[i] = a[i] * b[i]; }
"""


def per_call(fn, number=2000, rounds=7):
    """Median seconds per fn() over rounds of `number` calls."""
    fn()
    out = []
    for _ in range(rounds):
        t = time.perf_counter()
        for _ in range(number):
            fn()
        out.append((time.perf_counter() - t) / number)
    return statistics.median(out)


def us(s):
    return f"{s * 1e6:8.2f} µs"


def section(title):
    print(f"\n=== {title}", flush=True)


def arguments(dev, torch, cupy):
    section("foreign arguments: 1-element mul(1, a, b, c), statement call (waits)")
    mul = dev.compile(SRC).mul
    A, B, C = dev.asarray(np.float32([3.0])), dev.asarray(np.float32([4.0])), dev.empty(1, np.float32)
    rows = {"own Buffers": lambda: mul(1, A, B, C)}
    handle = getattr(dev, "stream_handle", None)  # the device's CUDA stream (newer builds only)
    if torch:
        ta, tb, tc = (torch.tensor([3.0], device="cuda"), torch.tensor([4.0], device="cuda"), torch.zeros(1, device="cuda"))
        rows["torch, default stream"] = lambda: mul(1, ta, tb, tc)
        if handle:
            ours = torch.cuda.ExternalStream(handle)

            def on_ours():
                with torch.cuda.stream(ours):
                    mul(1, ta, tb, tc)
            rows["torch, current stream = ours (no ordering)"] = on_ours
        t = ta
        reads = {
            "t.get_device()": lambda: t.get_device(), "t.data_ptr()": lambda: t.data_ptr(),
            "t.shape": lambda: t.shape, "t.dtype": lambda: t.dtype, "t.nbytes": lambda: t.nbytes,
            "t.is_contiguous()": lambda: t.is_contiguous(), "t.requires_grad": lambda: t.requires_grad,
            "t.is_cuda": lambda: t.is_cuda, "t.is_neg()": lambda: t.is_neg(), "t.is_conj()": lambda: t.is_conj(),
            "_cuda_getCurrentRawStream(0)": lambda: torch._C._cuda_getCurrentRawStream(0),
            "t.__dlpack__(stream=1)": lambda: t.__dlpack__(stream=1),
        }
        for k, f in reads.items():
            print(f"  read {k:34s} {us(per_call(f, 20000, 3))}")
    if cupy:
        ca, cb, cc = cupy.asarray(np.float32([3.0])), cupy.asarray(np.float32([4.0])), cupy.zeros(1, cupy.float32)
        rows["CuPy, default stream"] = lambda: mul(1, ca, cb, cc)
        if handle:
            ext = cupy.cuda.ExternalStream(handle)

            def cupy_ours():
                with ext:
                    mul(1, ca, cb, cc)
            rows["CuPy, current stream = ours"] = cupy_ours
        x = ca
        reads = {"x.__cuda_array_interface__": lambda: x.__cuda_array_interface__,
                 "x.data.ptr": lambda: x.data.ptr, "x.nbytes": lambda: x.nbytes, "x.dtype": lambda: x.dtype,
                 "x._c_contiguous": lambda: x._c_contiguous, "x.data.device_id": lambda: x.data.device_id,
                 "cupy.cuda.get_current_stream().ptr": lambda: cupy.cuda.get_current_stream().ptr}
        for k, f in reads.items():
            try:
                print(f"  read {k:34s} {us(per_call(f, 20000, 3))}")
            except Exception as e:  # an attribute this CuPy lacks
                print(f"  read {k:34s} failed: {type(e).__name__}: {e}")
    # interleaved: each round times every row once
    samples = {k: [] for k in rows}
    for f in rows.values():
        per_call(f, 200, 1)
    for _ in range(9):
        for k, f in rows.items():
            samples[k].append(per_call(f, 1000, 1))
    base = statistics.median(samples["own Buffers"])
    for k, s in samples.items():
        m = statistics.median(s)
        print(f"  {k:44s} {us(m)}  ({m / base:.2f}× own Buffers)")


class Counter:
    """Counts kernel launches and allocations of metalcall.numpy while active."""

    def __init__(self):
        from metalcall.numpy import _runtime as R
        from metalcall.numpy._kernels import cache
        self.mods = [(cache, "launch"), (R, "launch"), (cache, "empty"), (R, "result_buffer")]
        self.counts = {}

    def __enter__(self):
        self.saved = []
        for mod, name in self.mods:
            orig = getattr(mod, name)
            key = f"{mod.__name__.split('.')[-1]}.{name}"
            self.counts[key] = 0

            def wrap(*a, _orig=orig, _key=key, **k):
                self.counts[_key] += 1
                return _orig(*a, **k)
            setattr(mod, name, wrap)
            self.saved.append((mod, name, orig))
        return self

    def __exit__(self, *exc):
        for mod, name, orig in self.saved:
            setattr(mod, name, orig)


def reductions(dev, torch, cupy):
    section("reductions: host time per call (launch only, result dropped) and read-back")
    for n in SIZES:
        x_np = np.random.default_rng(1).random(n, dtype=np.float32)
        x = mnp.asarray(x_np, device=dev)
        cx = cupy.asarray(x_np) if cupy else None
        for op in ("sum", "prod", "max", "argmax", "mean", "any", "all"):
            data = x if op not in ("any", "all") else (x > 0.5)
            if op in ("any", "all"):
                data = data.evaluate()
            fn = getattr(mnp, op)
            to = int if op == "argmax" else bool if op in ("any", "all") else float
            with Counter() as c:
                r = fn(data)
            counts = dict(c.counts)
            mnp.synchronize(dev)
            launch = per_call(lambda: fn(data), 200, 5)  # async: host time while the GPU keeps up or not
            mnp.synchronize(dev)
            full = per_call(lambda: to(fn(data)), 200, 5)
            kept = fn(data)
            mnp.synchronize(dev)
            read = per_call(lambda: to(kept), 2000, 5)
            line = (f"  {op:6s} {n:.0e}: float(mnp.{op}(x)) {us(full)}; launch only {us(launch)}; read back of a "
                    f"done result {us(read)}; per call {counts}")
            if cupy:
                cdata = cx if op not in ("any", "all") else (cx > 0.5)
                cfn = getattr(cupy, op)
                cfull = per_call(lambda: to(cfn(cdata)), 200, 5)
                cl = per_call(lambda: cfn(cdata), 200, 5)
                cupy.cuda.get_current_stream().synchronize()
                line += f"; CuPy: full {us(cfull)}, launch only {us(cl)} ({full / cfull:.2f}×)"
            print(line, flush=True)
        # Reading the result back: through the managed memory's host view (as now), or by a
        # device-to-host copy of the one element (as CuPy does), each followed by the next sum
        # (which writes the same block again: a page the host read may fault back to the GPU).
        from metalcall.numpy._array import ndarray as _nd
        cpu = mc.Device("cpu")
        view_scalar = _nd._scalar

        def copy_scalar(self):
            self._materialize()
            return np.asarray(self._buf.to(cpu)).reshape(-1)[self._offset]
        for label, impl in (("host view", view_scalar), ("copy to host", copy_scalar), ("host view", view_scalar)):
            _nd._scalar = impl
            try:
                t = per_call(lambda: float(mnp.sum(x)), 300, 5)
                print(f"  sum    {n:.0e}: read back by {label:12s}: float(mnp.sum(x)) {us(t)}", flush=True)
            finally:
                _nd._scalar = view_scalar
        if n == SIZES[0]:
            pr = cProfile.Profile()
            pr.enable()
            for _ in range(3000):
                float(mnp.sum(x))
            pr.disable()
            s = io.StringIO()
            pstats.Stats(pr, stream=s).sort_stats("tottime").print_stats(22)
            print(f"  cProfile, 3000 × float(mnp.sum(x)) at {n:.0e}, by own time:")
            print("\n".join("    " + l for l in s.getvalue().splitlines()[6:34]))


def fused(torch, cupy):
    for label, expr, body in (("mnp.sin(x)*y+2", lambda x, y: mnp.sin(x) * y + 2, "z = sinf(x) * y + 2.0f"),
                              ("(x+y)*(x-y)+1", lambda x, y: (x + y) * (x - y) + 1, "z = (x + y) * (x - y) + 1.0f")):
        fused_one(label, expr, body, cupy)


def fused_one(label, expr, body, cupy):
    section(f"fused chain {label} at 1e7 and 1e8, one iteration at a time (device opened with timing=True)")
    dev = mc.Device(DEVICE, timing=True)
    from metalcall.numpy import _runtime as R
    for n in SIZES[1:]:
        x = mnp.asarray(np.random.default_rng(2).random(n, dtype=np.float32), device=dev)
        y = mnp.asarray(np.random.default_rng(3).random(n, dtype=np.float32), device=dev)
        expr(x, y).evaluate()
        mnp.synchronize(dev)
        for batch in (1, 10, 70):
            host, gpu = [], []
            info0 = dev.memory_info()
            gc0 = gc.get_count()
            t0 = time.perf_counter()
            for _ in range(batch):
                t = time.perf_counter()
                expr(x, y).evaluate()
                host.append(time.perf_counter() - t)
            comps = list(R._pending)
            mnp.synchronize(dev)
            wall = time.perf_counter() - t0
            gpu = [c.gpu_time for c in comps[-batch:]]
            info1 = dev.memory_info()
            print(f"  n={n:.0e} batch {batch:3d}: wall/iter {us(wall / batch)}; host per evaluate median {us(statistics.median(host))} "
                  f"max {us(max(host))}; GPU per kernel median {us(statistics.median(gpu))} max {us(max(gpu))}; "
                  f"memory_info before {info0} after {info1}; gc counts {gc0}->{gc.get_count()}", flush=True)
        if cupy:
            k = cupy.ElementwiseKernel("float32 x, float32 y", "float32 z", body, "chain")
            cx, cy = cupy.asarray(np.asarray(x)), cupy.asarray(np.asarray(y))
            k(cx, cy)
            cupy.cuda.Device().synchronize()
            for batch in (1, 10, 70):
                t0 = time.perf_counter()
                for _ in range(batch):
                    k(cx, cy)
                cupy.cuda.Device().synchronize()
                print(f"  n={n:.0e} batch {batch:3d}: CuPy ElementwiseKernel (new output each call) wall/iter "
                      f"{us((time.perf_counter() - t0) / batch)}", flush=True)
        del x, y


def main():
    dev = mc.Device(DEVICE)
    mnp.set_default_device(dev)
    try:
        import torch
        torch = torch if torch.cuda.is_available() and DEVICE.startswith("cuda") else None
    except ImportError:
        torch = None
    try:
        import cupy
    except Exception:
        cupy = None
    print(f"metalcall {mc.__version__} on {dev.name}; torch {torch and torch.__version__}; CuPy {cupy and cupy.__version__}")
    parts = sys.argv[1:] or ["arguments", "reductions", "fused"]
    for p in parts:
        try:
            if p == "arguments":
                arguments(dev, torch, cupy)
            elif p == "reductions":
                reductions(dev, torch, cupy)
            elif p == "fused":
                fused(torch, cupy)
        except Exception as e:
            import traceback
            traceback.print_exc()
            print(f"  part {p} failed: {type(e).__name__}: {e}", flush=True)


if __name__ == "__main__":
    main()
