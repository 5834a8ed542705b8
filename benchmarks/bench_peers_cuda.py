"""Issue P2.2's table on a CUDA device: metalcall and its installed peers (torch, CuPy) side by
side in one process, interleaved samples, medians and spread.

    python benchmarks/bench_peers_cuda.py [--quick] [--rounds N] [--device cuda]

Rows: three torch CUDA tensors / CuPy arrays as kernel arguments (1 element, waited) against
our own Buffers and torch.mul; dev.empty(10**8) against cupy.empty and torch.empty;
float(mnp.sum(x)) at 1e7 and 1e8 against CuPy and torch; the fused mnp.sin(x)*y+2 at 1e8
against a CuPy ElementwiseKernel of the same expression; the scalar MSL kernel c[i] = a[i]*b[i]
at 1e8 against torch.mul; replay per kernel against a CuPy CUDA graph; a cold compile (new
process, empty caches) against CuPy's RawKernel; in-memory compile hits against CuPy's. Rows
whose peer is not installed print metalcall alone. --device cpu runs metalcall's side only (a
smoke test where there is no GPU). Every result is checked before it is timed.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile

import numpy as np

import metalcall as mc
import metalcall.numpy as mnp
from metalcall import _bench

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from peers_common import Row, check, machine, measure, new_process_seconds, render, repeat, uninitialized_supported  # noqa: E402

MUL = _bench.MUL_SOURCE
LARGE_SOURCE = MUL + "".join(f"// filler line {i:04d} keeps the source large: " + "x" * 40 + "\n" for i in range(330))
CUDA_MUL = r"""
extern "C" __global__ void mul(const float* a, const float* b, float* c, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] * b[i];
}
"""


def peers(gpu: bool):
    """(torch, cupy): each None when missing or without a GPU."""
    torch = cupy = None
    if gpu:
        try:
            import torch as t
            torch = t if t.cuda.is_available() else None
        except ImportError:
            pass
        try:
            import cupy as c
            cupy = c
        except ImportError:
            pass
    return torch, cupy


def argument_rows(dev: mc.Device, torch, cupy) -> list[Row]:
    mul = dev.compile(MUL).mul
    A, B, C = dev.asarray(np.float32([3.0])), dev.asarray(np.float32([4.0])), dev.empty(1, np.float32)
    mul(1, A, B, C)
    check(np.asarray(C)[0] == 12.0, "own Buffers")
    own = ("metalcall, own Buffers", repeat(lambda: mul(1, A, B, C)))
    rows = []
    row = Row("three torch CUDA tensors as kernel arguments, 1 element, waited")
    if torch:
        ta, tb, tc = (torch.tensor([3.0], device="cuda"), torch.tensor([4.0], device="cuda"),
                      torch.zeros(1, device="cuda"))
        mul(1, ta, tb, tc)
        check(float(tc[0]) == 12.0, "torch tensors as arguments")

        def torch_mul():
            torch.mul(ta, tb, out=tc)
            torch.cuda.synchronize()

        row.candidates = [("metalcall, torch tensors", repeat(lambda: mul(1, ta, tb, tc))), own,
                          ("torch.mul + synchronize", repeat(torch_mul))]
    else:
        row.candidates, row.note = [own], "torch (with CUDA) not installed"
    rows.append(row)
    row = Row("three CuPy arrays as kernel arguments, 1 element, waited")
    if cupy:
        ca, cb, cc = cupy.asarray([3.0], cupy.float32), cupy.asarray([4.0], cupy.float32), cupy.zeros(1, cupy.float32)
        mul(1, ca, cb, cc)
        check(float(cc[0]) == 12.0, "CuPy arrays as arguments")

        def cupy_mul():
            cupy.multiply(ca, cb, out=cc)
            cupy.cuda.get_current_stream().synchronize()

        row.candidates = [("metalcall, CuPy arrays", repeat(lambda: mul(1, ca, cb, cc))), own,
                          ("cupy.multiply + synchronize", repeat(cupy_mul))]
    else:
        row.candidates, row.note = [own], "CuPy not installed"
    rows.append(row)
    return rows


def memory_rows(dev: mc.Device, big: int, torch, cupy) -> list[Row]:
    row = Row(f"dev.empty({big:.0e}, float32), allocate and free (warm)")
    check(not np.asarray(dev.empty(1 << 20, np.float32)).any(), "dev.empty is zero-filled")
    row.candidates = [("metalcall dev.empty", repeat(lambda: dev.empty(big, np.float32))),
                      ("metalcall dev.zeros", repeat(lambda: dev.zeros(big, np.float32)))]
    if uninitialized_supported(dev):
        row.candidates.insert(1, ("metalcall dev.empty(uninitialized=True)",
                                  repeat(lambda: dev.empty(big, np.float32, uninitialized=True))))
    if cupy:
        def cupy_zeros():
            cupy.zeros(big, cupy.float32)
            cupy.cuda.get_current_stream().synchronize()
        row.candidates += [("cupy.empty", repeat(lambda: cupy.empty(big, cupy.float32))), ("cupy.zeros + sync", repeat(cupy_zeros))]
    if torch:
        def torch_zeros():
            torch.zeros(big, device="cuda")
            torch.cuda.synchronize()
        row.candidates += [("torch.empty", repeat(lambda: torch.empty(big, device="cuda"))),
                           ("torch.zeros + sync", repeat(torch_zeros))]
    if not (torch or cupy):
        row.note = "no GPU peer installed"
    return [row]


def array_rows(dev: mc.Device, sizes: list[int], torch, cupy) -> list[Row]:
    rows = []
    for n in sizes:
        data = _bench._random(n, 3)
        x = mnp.asarray(data, device=dev)
        want = float(np.sum(data, dtype=np.float64))
        check(abs(float(mnp.sum(x)) - want) <= 1e-3 * abs(want), f"mnp.sum at {n:.0e}")
        row = Row(f"float(mnp.sum(x)), {n:.0e} float32")
        row.candidates = [("metalcall.numpy", repeat(lambda x=x: float(mnp.sum(x))))]
        if cupy:
            cx = cupy.asarray(data)
            row.candidates.append(("float(cupy.sum(x))", repeat(lambda cx=cx: float(cupy.sum(cx)))))
        if torch:
            tx = torch.from_numpy(data).cuda()
            row.candidates.append(("torch.sum(x).item()", repeat(lambda tx=tx: float(tx.sum().item()))))
        rows.append(row)
    n = sizes[-1]
    xs, ys = _bench._random(n, 4), _bench._random(n, 5)
    x, y = mnp.asarray(xs, device=dev), mnp.asarray(ys, device=dev)
    want = np.sin(xs) * ys + np.float32(2)
    check(np.allclose(np.asarray(mnp.sin(x) * y + 2), want, rtol=1e-5, atol=1e-5), "fused sin(x)*y+2")

    def fused(number: int) -> None:
        for _ in range(number):
            z = mnp.sin(x) * y + 2
            z.evaluate()
            mnp.synchronize(dev)

    row = Row(f"fused mnp.sin(x)*y+2, {n:.0e} float32 (evaluated, waited)")
    row.candidates = [("metalcall.numpy", fused)]
    if cupy:
        kernel = cupy.ElementwiseKernel("float32 x, float32 y", "float32 z", "z = sinf(x) * y + 2.0f", "sin_mul_add")
        cx, cy = cupy.asarray(xs), cupy.asarray(ys)
        cz = cupy.empty_like(cx)
        kernel(cx, cy, cz)
        check(np.allclose(cupy.asnumpy(cz), want, rtol=1e-5, atol=1e-5), "CuPy ElementwiseKernel")

        def cupy_fused():
            kernel(cx, cy, cz)
            cupy.cuda.get_current_stream().synchronize()

        row.candidates.append(("CuPy ElementwiseKernel (fused)", repeat(cupy_fused)))
    rows.append(row)

    mul = dev.compile(MUL).mul
    a, b = _bench._random(n, 6), _bench._random(n, 7)
    A, B, C = dev.asarray(a), dev.asarray(b), dev.empty(n, np.float32)
    mul(n, A, B, C)
    check(np.array_equal(np.asarray(C), a * b), "scalar MSL c = a*b")
    row = Row(f"c[i] = a[i]*b[i] scalar MSL, {n:.0e} float32 (call + wait)")
    row.candidates = [("metalcall", repeat(lambda: mul(n, A, B, C)))]
    if torch:
        ta, tb = torch.from_numpy(a).cuda(), torch.from_numpy(b).cuda()
        tc = torch.empty_like(ta)

        def torch_mul():
            torch.mul(ta, tb, out=tc)
            torch.cuda.synchronize()

        row.candidates.append(("torch.mul + synchronize", repeat(torch_mul)))
    rows.append(row)
    return rows


def replay_rows(dev: mc.Device, cupy) -> list[Row]:
    mul = dev.compile(MUL).mul
    A, B, C = dev.asarray(np.float32([3.0])), dev.asarray(np.float32([4.0])), dev.empty(1, np.float32)
    with dev.record() as graph:
        for _ in range(100):
            mul(1, A, B, C)
    graph.replay().wait()
    check(np.asarray(C)[0] == 12.0, "replay")
    row = Row("replay from dev.record(), 100 recorded 1-element calls (time per kernel)", per=100)
    row.candidates = [("metalcall replay", repeat(lambda: graph.replay().wait()))]

    def one_by_one(number: int) -> None:
        for _ in range(number):
            for _ in range(100):
                h = mul(1, A, B, C)
            h.wait()

    row.candidates.append(("one-by-one calls (metalcall, kept Completions)", one_by_one))
    if cupy:
        kernel = cupy.RawKernel(CUDA_MUL, "mul")
        ca, cb, cc = cupy.asarray([3.0], cupy.float32), cupy.asarray([4.0], cupy.float32), cupy.zeros(1, cupy.float32)
        stream = cupy.cuda.Stream(non_blocking=True)
        try:
            with stream:
                stream.begin_capture()
                for _ in range(100):
                    kernel((1,), (32,), (ca, cb, cc, np.uint32(1)))
                cuda_graph = stream.end_capture()
            cuda_graph.launch(stream)
            stream.synchronize()
        except Exception as e:  # a CuPy without graph capture: the row keeps metalcall's figures
            row.note = f"CuPy graph capture failed: {type(e).__name__}: {e}"[:200]
            return [row]
        check(float(cc[0]) == 12.0, "CuPy CUDA graph")

        def cupy_graph():
            cuda_graph.launch(stream)
            stream.synchronize()

        row.candidates.append(("CuPy CUDA graph", repeat(cupy_graph)))
    else:
        row.note = "CuPy not installed"
    return [row]


_COLD_METALCALL = """
import time, metalcall as mc
from metalcall import _bench
dev = mc.Device({spec!r})
dev.synchronize()
t = time.perf_counter()
dev.compile(_bench.MUL_SOURCE).mul
print(time.perf_counter() - t)
"""

_COLD_CUPY = """
import time, cupy
cupy.zeros(1)  # the context, outside the timing (metalcall's Device() is outside too)
source = {source!r}
t = time.perf_counter()
cupy.RawKernel(source, "mul").kernel
print(time.perf_counter() - t)
"""


def compile_rows(dev: mc.Device, spec: str, cold_repeats: int, cupy) -> list[Row]:
    cold = Row("compile, small kernel, cold (new process, empty cache)")
    ours, theirs = [], []
    for _ in range(cold_repeats):  # interleaved
        with tempfile.TemporaryDirectory(prefix="metalcall-cold-") as cache:
            ours.append(new_process_seconds(_COLD_METALCALL.format(spec=spec), {"METALCALL_CACHE_DIR": cache}))
            if cupy:
                theirs.append(new_process_seconds(_COLD_CUPY.format(source=CUDA_MUL),
                                                  {"CUPY_CACHE_DIR": cache, "CUPY_CACHE_IN_MEMORY": "1"}))
    cold.fixed["metalcall"] = statistics.median(ours)
    if cupy:
        cold.fixed["CuPy RawKernel"] = statistics.median(theirs)
    cold.note = f"medians of {cold_repeats} new processes; no spread"
    hit = Row("compile, in-memory hit (same str object), small / 28 KB source")
    dev.compile(MUL), dev.compile(LARGE_SOURCE)
    check("mul" in dev.compile(MUL).function_names, "in-memory hit")
    hit.candidates = [("metalcall, small", repeat(lambda: dev.compile(MUL))),
                      (f"metalcall, {len(LARGE_SOURCE) // 1000} KB", repeat(lambda: dev.compile(LARGE_SOURCE)))]
    if cupy:
        large_cuda = CUDA_MUL + "".join(f"// filler line {i:04d}: " + "x" * 60 + "\n" for i in range(330))
        cupy.RawKernel(CUDA_MUL, "mul").kernel, cupy.RawKernel(large_cuda, "mul").kernel
        hit.candidates += [("CuPy RawKernel(...).kernel, small", repeat(lambda: cupy.RawKernel(CUDA_MUL, "mul").kernel)),
                           (f"CuPy, {len(large_cuda) // 1000} KB", repeat(lambda: cupy.RawKernel(large_cuda, "mul").kernel))]
    return [cold, hit]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--quick", action="store_true", help="smaller arrays, fewer rounds")
    parser.add_argument("--rounds", type=int, default=None)
    args = parser.parse_args()
    dev = mc.Device(args.device)
    mnp.set_default_device(dev)
    torch, cupy = peers(dev.backend == "cuda")
    rounds = args.rounds or (5 if args.quick else 15)
    min_seconds = 0.01 if args.quick else 0.04
    sizes = [10**6, 10**7] if args.quick else [10**7, 10**8]
    print(f"# metalcall {mc.__version__} on {dev.name}\n\n{machine()}; torch "
          f"{torch.__version__ if torch else 'missing'}; CuPy {cupy.__version__ if cupy else 'missing'}; "
          f"{rounds} rounds\n", flush=True)
    rows = argument_rows(dev, torch, cupy) + memory_rows(dev, sizes[-1], torch, cupy)
    rows += array_rows(dev, sizes, torch, cupy) + replay_rows(dev, cupy)
    rows += compile_rows(dev, args.device, 2 if args.quick else 5, cupy)
    for row in rows:
        measure(row, rounds, min_seconds)
        print(render([row]).splitlines()[-1], flush=True)
    print("\n" + render(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
