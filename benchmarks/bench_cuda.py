"""metalcall's CUDA call path against CuPy, torch and plain CUDA, side by side in one run.

    python benchmarks/bench_cuda.py [--device cuda:0] [--quick] [--json PATH]

Every row of issue P1.1's CUDA table: per-call cost of a 1-element kernel (kept
Completions, in a batch, launch + wait), a 131072-element waited call, c = a * b
at 1e8 float32 (the same scalar source for metalcall and a CuPy RawKernel, a float4
MSL kernel, torch.mul(out=)), NumPy arrays as arguments (against torch's pageable
and pinned copies), and the plain CUDA launch floor (benchmarks/cuda/launch_floor.cu,
built with nvcc when it is on PATH). Results are checked before they are timed;
times are the best of several repeats, with the median beside it where it matters.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

import metalcall as mc
from metalcall import _bench

MSL = """
#include <metal_stdlib>
using namespace metal;
kernel void one(device float* x [[buffer(0)]], uint i [[thread_position_in_grid]]) { x[i] += 1.0f; }
kernel void mul(const device float* a [[buffer(0)]], const device float* b [[buffer(1)]],
                device float* c [[buffer(2)]], uint i [[thread_position_in_grid]]) { c[i] = a[i] * b[i]; }
kernel void mul4(const device float4* a [[buffer(0)]], const device float4* b [[buffer(1)]],
                 device float4* c [[buffer(2)]], uint i [[thread_position_in_grid]]) { c[i] = a[i] * b[i]; }
"""

# What the translator would need to produce for `one` and `mul`, written by hand for CuPy.
CUDA_CPP = r"""
extern "C" __global__ void one(float* x, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] += 1.0f;
}
extern "C" __global__ void mul(const float* __restrict__ a, const float* __restrict__ b, float* __restrict__ c,
                               unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] * b[i];
}
"""

FULL = {"repeats": 7, "calls": 10_000, "big": 10**8}
QUICK = {"repeats": 2, "calls": 500, "big": 10**6}


def timed(fn, repeats: int) -> tuple[float, float]:
    """(best, median) seconds of fn() over repeats, after one warm-up."""
    fn()
    runs = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        runs.append(time.perf_counter() - start)
    return min(runs), statistics.median(runs)


class Peers:
    """CuPy and torch when installed, each None otherwise."""

    def __init__(self) -> None:
        try:
            import cupy

            self.cupy = cupy
            self.cupy_module = cupy.RawModule(code=CUDA_CPP)
        except Exception as e:  # noqa: BLE001 - any failure means "not available"
            print(f"CuPy not used: {e}", file=sys.stderr)
            self.cupy = None
        try:
            import torch

            self.torch = torch if torch.cuda.is_available() else None
        except Exception as e:  # noqa: BLE001
            print(f"torch not used: {e}", file=sys.stderr)
            self.torch = None


def replay_host_time(graph: mc.Graph, repeats: int) -> tuple[float, float]:
    """(best, median) host seconds for graph.replay() to return, waiting outside the timing."""
    graph.replay().wait()
    runs = []
    for _ in range(repeats):
        start = time.perf_counter()
        done = graph.replay()
        runs.append(time.perf_counter() - start)
        done.wait()
    return min(runs), statistics.median(runs)


def per_call_rows(dev: mc.Device, peers: Peers, calls: int, repeats: int, results: dict) -> _bench.Table:
    lib = dev.compile(MSL)
    one = lib.one
    x = dev.zeros(1, np.float32)
    rows = []

    def kept() -> None:
        hs = [one(1, x) for _ in range(calls)]
        hs[-1].wait()

    def batched() -> None:
        with dev.batch() as b:
            for _ in range(calls):
                one(1, x)
        b.wait()

    def waited() -> None:
        for _ in range(calls):
            one(1, x).wait()

    with dev.record() as graph:
        for _ in range(calls):
            one(1, x)

    def replayed() -> None:
        graph.replay().wait()

    big_n = 131072
    y = dev.zeros(big_n, np.float32)

    def waited_big() -> None:
        for _ in range(calls):
            one(big_n, y).wait()

    before = float(np.asarray(x)[0])
    kept()
    _bench.check(float(np.asarray(x)[0]) == before + calls, "kept-Completion loop ran every call")
    ours = {"kept": timed(kept, repeats), "batch": timed(batched, repeats), "waited": timed(waited, repeats),
            "waited_131072": timed(waited_big, repeats), "replayed": timed(replayed, repeats),
            "replay_host": replay_host_time(graph, repeats)}
    _bench.check(np.all(np.asarray(y) == np.asarray(y)[0]), "131072-element calls wrote every element")

    theirs: dict[str, tuple[float, float]] = {}
    if peers.cupy is not None:
        cp = peers.cupy
        fn = peers.cupy_module.get_function("one")
        cx = cp.zeros(1, cp.float32)
        cy = cp.zeros(big_n, cp.float32)
        stream = cp.cuda.get_current_stream()
        n1, nb = np.uint32(1), np.uint32(big_n)

        def cp_kept() -> None:
            for _ in range(calls):
                fn((1,), (1,), (cx, n1))
            stream.synchronize()

        def cp_waited() -> None:
            for _ in range(calls):
                fn((1,), (1,), (cx, n1))
                stream.synchronize()

        def cp_waited_big() -> None:
            for _ in range(calls):
                fn((big_n // 256,), (256,), (cy, nb))
                stream.synchronize()

        theirs = {"kept": timed(cp_kept, repeats), "batch": theirs.get("kept") or timed(cp_kept, repeats),
                  "waited": timed(cp_waited, repeats), "waited_131072": timed(cp_waited_big, repeats)}
        _bench.check(float(cx[0].get()) > 0, "CuPy's kernel ran")

    names = {"kept": "1-element, Completions kept, one wait", "batch": "1-element, inside dev.batch()",
             "waited": "1-element, launch + wait", "waited_131072": "131072 elements, launch + wait",
             "replayed": "1-element, recorded once, replayed (per call)",
             "replay_host": "  of which the host's time to replay() (per call)"}
    for key, label in names.items():
        best, median = ours[key]
        row = [label, f"{best / calls * 1e6:.3g}", f"{median / calls * 1e6:.3g}"]
        if key in theirs:
            cbest = theirs[key][0]
            row += [f"{cbest / calls * 1e6:.2f}", f"{best / cbest:.2f}x"]
        else:
            row += ["-", "-"]
        rows.append(row)
        results[key] = {"metalcall_us": best / calls * 1e6, "metalcall_median_us": median / calls * 1e6,
                        "cupy_us": theirs[key][0] / calls * 1e6 if key in theirs else None}
    return _bench.Table("Per call (µs; CuPy: RawKernel launch + stream sync)",
                        ["call", "metalcall best", "median", "CuPy", "ratio"], rows)


def bandwidth_rows(dev: mc.Device, peers: Peers, n: int, repeats: int, results: dict) -> _bench.Table:
    lib = dev.compile(MSL)
    rng = np.random.default_rng(1)
    a_host = rng.random(n, dtype=np.float32)
    b_host = rng.random(n, dtype=np.float32)
    expected = a_host * b_host
    a, b, c = dev.asarray(a_host), dev.asarray(b_host), dev.empty(n, np.float32)
    moved = 3 * 4 * n  # bytes: two reads and one write
    rows = []

    def gbps(seconds: float) -> float:
        return moved / seconds / 1e9

    lib.mul(n, a, b, c).wait()
    _bench.check(np.array_equal(np.asarray(c), expected), "metalcall mul")
    mul_best, _ = timed(lambda: lib.mul(n, a, b, c).wait(), repeats)
    lib.mul4(n // 4, a, b, c).wait()
    _bench.check(np.array_equal(np.asarray(c), expected), "metalcall mul4")
    mul4_best, _ = timed(lambda: lib.mul4(n // 4, a, b, c).wait(), repeats)
    rows.append(["metalcall, scalar MSL", f"{gbps(mul_best):.0f}", "1.00"])
    rows.append(["metalcall, float4 MSL", f"{gbps(mul4_best):.0f}", f"{mul_best / mul4_best:.2f}"])
    results["mul_gbps"] = gbps(mul_best)
    results["mul4_gbps"] = gbps(mul4_best)
    if peers.cupy is not None:
        cp = peers.cupy
        fn = peers.cupy_module.get_function("mul")
        ca, cb, cc = cp.asarray(a_host), cp.asarray(b_host), cp.empty(n, cp.float32)
        stream = cp.cuda.get_current_stream()

        def cupy_mul() -> None:
            fn(((n + 255) // 256,), (256,), (ca, cb, cc, np.uint32(n)))
            stream.synchronize()

        cupy_mul()
        _bench.check(np.array_equal(cc.get(), expected), "CuPy mul")
        best, _ = timed(cupy_mul, repeats)
        rows.append(["CuPy RawKernel, same scalar code", f"{gbps(best):.0f}", f"{mul_best / best:.2f}"])
        results["cupy_mul_gbps"] = gbps(best)
    if peers.torch is not None:
        torch = peers.torch
        ta, tb = torch.from_numpy(a_host).cuda(), torch.from_numpy(b_host).cuda()
        tc = torch.empty_like(ta)

        def torch_mul() -> None:
            torch.mul(ta, tb, out=tc)
            torch.cuda.synchronize()

        torch_mul()
        _bench.check(np.array_equal(tc.cpu().numpy(), expected), "torch.mul")
        best, _ = timed(torch_mul, repeats)
        rows.append(["torch.mul(out=)", f"{gbps(best):.0f}", f"{mul_best / best:.2f}"])
        results["torch_mul_gbps"] = gbps(best)
    return _bench.Table(f"c = a * b, {n:.0e} float32, device memory (GB/s; ratio: time / metalcall scalar)",
                        ["kernel", "GB/s", "time ratio"], rows)


def host_argument_rows(dev: mc.Device, peers: Peers, n: int, repeats: int, results: dict) -> _bench.Table:
    lib = dev.compile(MSL)
    rng = np.random.default_rng(2)
    a, b = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    c = np.empty(n, np.float32)
    expected = a * b
    moved = 3 * 4 * n
    rows = []
    lib.mul(n, a, b, c)
    _bench.check(np.array_equal(c, expected), "metalcall with NumPy arguments")
    best, _ = timed(lambda: lib.mul(n, a, b, c), repeats)
    rows.append(["metalcall, NumPy arrays as arguments", f"{moved / best / 1e9:.1f}"])
    results["numpy_args_gbps"] = moved / best / 1e9
    # 1e7 too (a tenth of the full size): the fixed costs of staging show more there.
    small = 10**7
    if n != small:
        sa, sb = rng.random(small, dtype=np.float32), rng.random(small, dtype=np.float32)
        sc = np.empty(small, np.float32)
        lib.mul(small, sa, sb, sc)
        _bench.check(np.array_equal(sc, sa * sb), "metalcall with NumPy arguments, 1e7")
        sbest, _ = timed(lambda: lib.mul(small, sa, sb, sc), repeats)
        rows.append(["metalcall, NumPy arrays as arguments, 1e7 float32", f"{3 * 4 * small / sbest / 1e9:.1f}"])
        results["numpy_args_1e7_gbps"] = 3 * 4 * small / sbest / 1e9
    if peers.torch is not None:
        torch = peers.torch
        ta_h, tb_h = torch.from_numpy(a), torch.from_numpy(b)
        tc_h = torch.from_numpy(c)

        def pageable() -> None:
            tc_h.copy_(torch.mul(ta_h.cuda(), tb_h.cuda()).cpu())

        pageable()
        _bench.check(np.array_equal(c, expected), "torch pageable")
        tbest, _ = timed(pageable, repeats)
        rows.append(["torch, pageable copies", f"{moved / tbest / 1e9:.1f}"])
        results["torch_pageable_gbps"] = moved / tbest / 1e9
        pa, pb, pc = ta_h.pin_memory(), tb_h.pin_memory(), tc_h.pin_memory()

        def pinned() -> None:
            pc.copy_(torch.mul(pa.cuda(non_blocking=True), pb.cuda(non_blocking=True)), non_blocking=True)
            torch.cuda.synchronize()

        pinned()
        _bench.check(np.array_equal(pc.numpy(), expected), "torch pinned")
        pbest, _ = timed(pinned, repeats)
        rows.append(["torch, pinned copies (memory already pinned)", f"{moved / pbest / 1e9:.1f}"])
        results["torch_pinned_gbps"] = moved / pbest / 1e9
    return _bench.Table(f"c = a * b, {n:.0e} float32 from host memory (GB/s of a, b, c moved)", ["path", "GB/s"], rows)


def launch_floor() -> _bench.Table | None:
    nvcc = shutil.which("nvcc")
    source = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cuda", "launch_floor.cu")
    if not nvcc or not os.path.exists(source):
        print("plain CUDA floor skipped: nvcc not found", file=sys.stderr)
        return None
    with tempfile.TemporaryDirectory() as tmp:
        exe = os.path.join(tmp, "launch_floor")
        subprocess.run([nvcc, "-O2", "-o", exe, source, "-lcuda"], check=True, capture_output=True)
        out = subprocess.run([exe], check=True, capture_output=True, text=True).stdout
    rows = []
    for line in out.splitlines()[1:]:
        if line.startswith("result check"):
            continue
        label, _, value = line.rpartition(" ")
        rows.append([label.strip(), value])
    return _bench.Table("Plain CUDA floor (no Python)", ["what", "µs/call"], rows)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda", help="a CUDA device (default: cuda)")
    parser.add_argument("--quick", action="store_true", help="small sizes and few repeats")
    parser.add_argument("--plain", action="store_true", help="plain-text tables even when rich is installed")
    parser.add_argument("--json", help="also write every figure to this JSON file")
    args = parser.parse_args()
    config = QUICK if args.quick else FULL
    try:
        dev = _bench.open_device(args.device)
    except mc.DeviceError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if dev.backend != "cuda":
        print(f"error: {dev.name} is not a CUDA device", file=sys.stderr)
        return 2
    print(f"device: {dev.name}; metalcall {mc.__version__}", flush=True)
    peers = Peers()
    results: dict = {"device": dev.name}
    try:
        tables = [
            per_call_rows(dev, peers, config["calls"], config["repeats"], results),
            bandwidth_rows(dev, peers, config["big"], config["repeats"], results),
            host_argument_rows(dev, peers, config["big"], config["repeats"], results),
        ]
    except _bench.CheckFailed as e:
        print(f"FAILED: {e}", file=sys.stderr)
        return 1
    floor = launch_floor()
    if floor:
        tables.append(floor)
    _bench.render(tables, plain=args.plain)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
