"""Issue P2.2's table on a CUDA device: metalcall and its installed peers (torch, CuPy) side by
side, interleaved samples, medians and spread.

    python benchmarks/bench_peers_cuda.py [--quick] [--rounds N] [--device cuda]
                                          [--json FILE] [--only SECTION,...] [--in-process]

Rows: torch tensors / CuPy arrays / Numba device arrays / JAX arrays as kernel arguments (1 element,
waited) against our own Buffers and the peers' own calls (JAX arrays are read-only: two in, an own
Buffer out); dev.empty(big); the reductions sum, max, argmax, mean, prod,
any, all (read back to the host) at each size against CuPy and torch; fused elementwise chains
against CuPy ElementwiseKernels of the same expressions; the scalar MSL kernel c[i] = a[i]*b[i]
against torch.mul and CuPy; replay per kernel against a CuPy CUDA graph; a cold compile (new
process, empty caches) against CuPy's RawKernel; in-memory compile hits against CuPy's. Rows
whose peer is missing print metalcall alone. --device cpu runs metalcall's side only (a smoke
test where there is no GPU). Every result is checked before it is timed.

Each section (a group of rows) runs in a process of its own, and each row is set up and timed
on its own: a row that fails (a wrong result, an exception, a GPU fault that leaves the CUDA
context unusable) is reported by name and the others still run. A section whose process dies
is run again with CUDA_LAUNCH_BLOCKING=1 to name the failing call (its timings are not used).
Each row is printed, and appended to --json (one JSON object a line), as soon as it is measured.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import traceback

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
REDUCTIONS = ("sum", "max", "argmax", "mean", "prod", "any", "all")
# Fused chains: (label, metalcall.numpy expression, CuPy ElementwiseKernel body, NumPy reference).
CHAINS = (
    ("mnp.sin(x)*y+2", lambda x, y: mnp.sin(x) * y + 2, "z = sinf(x) * y + 2.0f",
     lambda x, y: np.sin(x) * y + np.float32(2)),
    ("(x+y)*(x-y)+1", lambda x, y: (x + y) * (x - y) + 1, "z = (x + y) * (x - y) + 1.0f",
     lambda x, y: (x + y) * (x - y) + np.float32(1)),
)


class Context:
    """What every section gets: the device, the peers found, and the sizes of this run."""

    def __init__(self, args):
        self.dev = mc.Device(args.device)
        mnp.set_default_device(self.dev)
        self.torch, self.cupy = peers(self.dev.backend == "cuda")
        self.quick = args.quick
        self.sizes = [10**6, 10**7] if args.quick else [10**6, 10**7, 10**8]
        self.big = self.sizes[-1]
        self.spec = args.device


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


# ---- sections: each yields (row name, a function that sets the row up and returns it) ----

def argument_rows(ctx: Context):
    dev, torch, cupy = ctx.dev, ctx.torch, ctx.cupy
    mul = dev.compile(MUL).mul

    def own():
        A, B, C = dev.asarray(np.float32([3.0])), dev.asarray(np.float32([4.0])), dev.empty(1, np.float32)
        mul(1, A, B, C)
        check(np.asarray(C)[0] == 12.0, "own Buffers")
        return ("metalcall, own Buffers", repeat(lambda: mul(1, A, B, C)))

    def torch_row():
        row = Row("three torch CUDA tensors as kernel arguments, 1 element, waited")
        if not torch:
            row.candidates, row.note = [own()], "torch (with CUDA) not installed"
            return row
        ta, tb, tc = (torch.tensor([3.0], device="cuda"), torch.tensor([4.0], device="cuda"),
                      torch.zeros(1, device="cuda"))
        mul(1, ta, tb, tc)
        check(float(tc[0]) == 12.0, "torch tensors as arguments")

        def torch_mul():
            torch.mul(ta, tb, out=tc)
            torch.cuda.synchronize()

        row.candidates = [("metalcall, torch tensors", repeat(lambda: mul(1, ta, tb, tc))), own(),
                          ("torch.mul + synchronize", repeat(torch_mul))]
        return row

    def cupy_row():
        row = Row("three CuPy arrays as kernel arguments, 1 element, waited")
        if not cupy:
            row.candidates, row.note = [own()], "CuPy not installed"
            return row
        ca, cb, cc = cupy.asarray(np.float32([3.0])), cupy.asarray(np.float32([4.0])), cupy.zeros(1, cupy.float32)
        mul(1, ca, cb, cc)
        check(float(cc[0]) == 12.0, "CuPy arrays as arguments")

        def cupy_mul():
            cupy.multiply(ca, cb, out=cc)
            cupy.cuda.get_current_stream().synchronize()

        row.candidates = [("metalcall, CuPy arrays", repeat(lambda: mul(1, ca, cb, cc))), own(),
                          ("cupy.multiply + synchronize", repeat(cupy_mul))]
        return row

    def numba_row():
        row = Row("three Numba device arrays as kernel arguments, 1 element, waited")
        cuda = numba_cuda() if dev.backend == "cuda" else None
        if not cuda:
            row.candidates, row.note = [own()], "Numba's CUDA target not installed or without a GPU"
            return row
        na, nb, nc = cuda.to_device(np.float32([3.0])), cuda.to_device(np.float32([4.0])), cuda.device_array(1, np.float32)
        mul(1, na, nb, nc)
        check(float(nc.copy_to_host()[0]) == 12.0, "Numba arrays as arguments")

        @cuda.jit
        def numba_mul(a, b, c):
            i = cuda.grid(1)
            if i < c.size:
                c[i] = a[i] * b[i]

        def numba_call():
            numba_mul[1, 32](na, nb, nc)
            cuda.synchronize()

        row.candidates = [("metalcall, Numba arrays", repeat(lambda: mul(1, na, nb, nc))), own()]
        try:  # Numba's own kernel is only a reference: the row stands without it
            numba_call()
        except Exception as e:  # noqa: BLE001 - numba-cuda's compiler raised (NumPy 2.4 removed np.row_stack)
            row.note = f"Numba's @cuda.jit failed here: {type(e).__name__}: {e}"
            return row
        check(float(nc.copy_to_host()[0]) == 12.0, "Numba's own kernel")
        row.candidates.append(("a @cuda.jit kernel + synchronize", repeat(numba_call)))
        return row

    def jax_row():
        row = Row("two JAX arrays (read-only) and an own Buffer as kernel arguments, 1 element, waited")
        jax = jax_gpu() if dev.backend == "cuda" else None
        if not jax:
            row.candidates, row.note = [own()], "JAX with a GPU not installed"
            return row
        gpu = jax.devices("gpu")[0]
        ja, jb = jax.device_put(np.float32([3.0]), gpu), jax.device_put(np.float32([4.0]), gpu)
        C = dev.empty(1, np.float32)
        mul(1, ja, jb, C)
        check(np.asarray(C)[0] == 12.0, "JAX arrays as arguments")
        jax_mul = jax.jit(lambda a, b: a * b)
        check(float(jax_mul(ja, jb).block_until_ready()[0]) == 12.0, "JAX's own multiply")
        row.candidates = [("metalcall, JAX arrays", repeat(lambda: mul(1, ja, jb, C))), own(),
                          ("a jitted JAX multiply, block_until_ready", repeat(lambda: jax_mul(ja, jb).block_until_ready()))]
        return row

    yield "torch tensors as arguments", torch_row
    yield "CuPy arrays as arguments", cupy_row
    yield "Numba arrays as arguments", numba_row
    yield "JAX arrays as arguments", jax_row


def numba_cuda():
    """numba.cuda when it is installed and sees a GPU, else None."""
    try:
        from numba import cuda
        return cuda if cuda.is_available() else None
    except Exception:  # noqa: BLE001 - Numba raises its own errors for a missing driver
        return None


def jax_gpu():
    """jax when it is installed and has a GPU, else None. JAX would take 75% of the GPU's memory
    when it first runs: told not to, as metalcall and the other peers share the GPU."""
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    try:
        import jax
        jax.devices("gpu")
        return jax
    except Exception:  # noqa: BLE001 - ImportError, or RuntimeError without a GPU backend
        return None


def memory_rows(ctx: Context):
    dev, torch, cupy, big = ctx.dev, ctx.torch, ctx.cupy, ctx.big

    def row_empty():
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
            row.candidates += [("cupy.empty", repeat(lambda: cupy.empty(big, cupy.float32))),
                               ("cupy.zeros + sync", repeat(cupy_zeros))]
        if torch:
            def torch_zeros():
                torch.zeros(big, device="cuda")
                torch.cuda.synchronize()
            row.candidates += [("torch.empty", repeat(lambda: torch.empty(big, device="cuda"))),
                               ("torch.zeros + sync", repeat(torch_zeros))]
        if not (torch or cupy):
            row.note = "no GPU peer installed"
        return row

    yield "dev.empty", row_empty


def _reduction_data(op: str, n: int) -> np.ndarray:
    """Data whose reduction checks exactly or closely: booleans for any/all, ones and twenty
    twos for prod (2**20 exactly), random float32 in [0, 1) otherwise."""
    if op in ("any", "all"):
        return _bench._random(n, 3) > 0.5
    if op == "prod":
        p = np.ones(n, np.float32)
        p[:: n // 20][:20] = 2
        return p
    return _bench._random(n, 3)


def _reference(op: str, data: np.ndarray) -> float:
    if op == "sum":
        return float(np.sum(data, dtype=np.float64))
    if op == "mean":
        return float(np.mean(data, dtype=np.float64))
    return float(getattr(np, op)(data))


def _close(op: str, got: float, want: float) -> bool:
    return abs(got - want) <= 1e-3 * abs(want) if op in ("sum", "mean") else got == want


def reduction_rows(ctx: Context, n: int):
    dev, torch, cupy = ctx.dev, ctx.torch, ctx.cupy
    convert = {"argmax": int, "any": bool, "all": bool}

    def make(op: str):
        def build():
            data = _reduction_data(op, n)
            want = _reference(op, data)
            to = convert.get(op, float)
            mfn = getattr(mnp, op)
            x = mnp.asarray(data, device=dev)
            check(_close(op, to(mfn(x)), want), f"mnp.{op} at {n:.0e}")
            row = Row(f"{to.__name__}(mnp.{op}(x)), {n:.0e} {data.dtype}")

            def on_device(number: int) -> None:  # the kernels alone: the result stays on the GPU
                for _ in range(number):
                    mfn(x)
                mnp.synchronize(dev)

            row.candidates = [("metalcall.numpy", repeat(lambda: to(mfn(x)))),
                              ("metalcall.numpy, result left on the GPU", on_device)]
            if cupy:
                cx, cfn = cupy.asarray(data), getattr(cupy, op)
                check(_close(op, to(cfn(cx)), want), f"cupy.{op}")
                row.candidates.append((f"{to.__name__}(cupy.{op}(x))", repeat(lambda: to(cfn(cx)))))
            if torch:
                tx = torch.from_numpy(data).cuda()
                tfn = {"max": lambda t: t.max(), "argmax": lambda t: t.argmax()}.get(op, getattr(torch, op))
                check(_close(op, to(tfn(tx).item()), want), f"torch.{op}")
                row.candidates.append((f"torch.{op}(x).item()", repeat(lambda: to(tfn(tx).item()))))
            return row
        return build

    for op in REDUCTIONS:
        yield f"mnp.{op} at {n:.0e}", make(op)


def fused_rows(ctx: Context, n: int):
    dev, cupy = ctx.dev, ctx.cupy

    def make(label, expr, body, reference):
        def build():
            xs, ys = _bench._random(n, 4), _bench._random(n, 5)
            x, y = mnp.asarray(xs, device=dev), mnp.asarray(ys, device=dev)
            want = reference(xs, ys)
            check(np.allclose(np.asarray(expr(x, y)), want, rtol=1e-5, atol=1e-5), f"fused {label}")

            def fused(number: int) -> None:
                for _ in range(number):
                    expr(x, y).evaluate()
                mnp.synchronize(dev)

            row = Row(f"fused {label}, {n:.0e} float32 (evaluated, waited)")
            row.candidates = [("metalcall.numpy", fused)]
            if cupy:
                kernel = cupy.ElementwiseKernel("float32 x, float32 y", "float32 z", body, "chain")
                cx, cy = cupy.asarray(xs), cupy.asarray(ys)
                cz = cupy.empty_like(cx)
                kernel(cx, cy, cz)
                check(np.allclose(cupy.asnumpy(cz), want, rtol=1e-5, atol=1e-5), "CuPy ElementwiseKernel")

                def cupy_fused(number: int) -> None:
                    for _ in range(number):
                        kernel(cx, cy, cz)
                    cupy.cuda.get_current_stream().synchronize()

                row.candidates.append(("CuPy ElementwiseKernel (fused)", cupy_fused))
            return row
        return build

    for chain in CHAINS:
        yield f"fused {chain[0]} at {n:.0e}", make(*chain)


def scalar_rows(ctx: Context):
    dev, torch, cupy, n = ctx.dev, ctx.torch, ctx.cupy, ctx.big

    def build():
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
            mul(n, ta, tb, tc)  # the same kernel on torch's memory (cudaMalloc, not managed)
            check(torch.equal(tc, ta * tb), "scalar MSL on torch tensors")
            row.candidates.append(("metalcall, the kernel on torch tensors", repeat(lambda: mul(n, ta, tb, tc))))

            def torch_mul():
                torch.mul(ta, tb, out=tc)
                torch.cuda.synchronize()

            row.candidates.append(("torch.mul + synchronize", repeat(torch_mul)))
        if cupy:
            kernel = cupy.RawKernel(CUDA_MUL, "mul")
            ca, cb = cupy.asarray(a), cupy.asarray(b)
            cc = cupy.empty_like(ca)
            blocks = (n + 255) // 256
            kernel((blocks,), (256,), (ca, cb, cc, np.uint32(n)))
            check(bool((cc == ca * cb).all()), "CuPy RawKernel c = a*b")

            def cupy_raw():
                kernel((blocks,), (256,), (ca, cb, cc, np.uint32(n)))
                cupy.cuda.get_current_stream().synchronize()

            row.candidates.append(("CuPy RawKernel, the same scalar CUDA kernel", repeat(cupy_raw)))
        if not (torch or cupy):
            row.note = "no GPU peer installed"
        return row

    yield "scalar c = a*b", build


def replay_rows(ctx: Context):
    dev, cupy = ctx.dev, ctx.cupy

    def build():
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
        if not cupy:
            row.note = "CuPy not installed"
            return row
        kernel = cupy.RawKernel(CUDA_MUL, "mul")
        ca, cb, cc = cupy.asarray(np.float32([3.0])), cupy.asarray(np.float32([4.0])), cupy.zeros(1, cupy.float32)
        stream = cupy.cuda.Stream(non_blocking=True)
        try:
            with stream:
                stream.begin_capture()
                try:
                    for _ in range(100):
                        kernel((1,), (32,), (ca, cb, cc, np.uint32(1)))
                finally:
                    cuda_graph = stream.end_capture()  # never leave the stream capturing
            cuda_graph.launch(stream)
            stream.synchronize()
        except Exception as e:  # a CuPy without graph capture: the row keeps metalcall's figures
            row.note = f"CuPy graph capture failed: {type(e).__name__}: {e}"[:200]
            return row
        check(float(cc[0]) == 12.0, "CuPy CUDA graph")

        def cupy_graph():
            cuda_graph.launch(stream)
            stream.synchronize()

        row.candidates.append(("CuPy CUDA graph", repeat(cupy_graph)))
        return row

    yield "replay", build


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


def compile_rows(ctx: Context):
    dev, cupy = ctx.dev, ctx.cupy
    cold_repeats = 2 if ctx.quick else 5

    def cold_row():
        cold = Row("compile, small kernel, cold (new process, empty cache)")
        ours, theirs = [], []
        for _ in range(cold_repeats):  # interleaved
            with tempfile.TemporaryDirectory(prefix="metalcall-cold-") as cache:
                ours.append(new_process_seconds(_COLD_METALCALL.format(spec=ctx.spec), {"METALCALL_CACHE_DIR": cache}))
                if cupy:
                    theirs.append(new_process_seconds(_COLD_CUPY.format(source=CUDA_MUL),
                                                      {"CUPY_CACHE_DIR": cache, "CUPY_CACHE_IN_MEMORY": "1"}))
        cold.fixed["metalcall"] = statistics.median(ours)
        if cupy:
            cold.fixed["CuPy RawKernel"] = statistics.median(theirs)
        cold.note = f"medians of {cold_repeats} new processes; no spread"
        return cold

    def hit_row():
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
        return hit

    yield "cold compile", cold_row
    yield "in-memory compile hit", hit_row


def sections(quick: bool) -> dict:
    """Section name -> a function of the context yielding its rows (in table order)."""
    sizes = [10**6, 10**7] if quick else [10**6, 10**7, 10**8]
    out = {"arguments": argument_rows, "memory": memory_rows}
    for n in sizes:
        out[f"reductions-{n:.0e}"] = lambda c, n=n: reduction_rows(c, n)
    for n in sizes[1:]:
        out[f"fused-{n:.0e}"] = lambda c, n=n: fused_rows(c, n)
    out.update({"scalar": scalar_rows, "replay": replay_rows, "compile": compile_rows})
    return out


# ---- running ----

GPU_FAULT = 4  # a child's exit status when a row failed with a CUDA error (the context is then unusable)


def run_section(ctx: Context, name: str, rounds: int, min_seconds: float, json_path: str | None) -> int:
    """Sets up and times each row of one section; prints and records each row as it is done.
    Returns 0, 3 when rows failed, GPU_FAULT when one failed with a CUDA error."""
    failed = 0

    def emit(row: Row) -> None:
        print(render([row]).splitlines()[-1], flush=True)
        if json_path:
            with open(json_path, "a") as f:
                f.write(json.dumps(dict(row.as_json(), section=name)) + "\n")

    def failure(e: Exception) -> str:
        nonlocal failed
        traceback.print_exc()
        failed = max(failed, GPU_FAULT if "CUDA_ERROR" in str(e) else 3)
        return f"{type(e).__name__}: {e}"[:300]

    try:
        rows = list(sections(ctx.quick)[name](ctx))
    except Exception as e:
        emit(Row(f"section {name}", error=failure(e)))
        return failed
    for label, build in rows:
        row = None
        try:
            row = build()
            measure(row, rounds, min_seconds)
        except Exception as e:
            row = Row(row.what if row else label, error=failure(e))
        emit(row)
    return failed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--quick", action="store_true", help="sizes 1e6 and 1e7 (else up to 1e8), fewer rounds")
    parser.add_argument("--rounds", type=int, default=None)
    parser.add_argument("--json", default=None, help="append each measured row to this file (JSON lines)")
    parser.add_argument("--only", default=None, help="comma-separated sections to run (default: all)")
    parser.add_argument("--in-process", action="store_true", help="run every section in this process")
    parser.add_argument("--section", default=None, help=argparse.SUPPRESS)  # a child process's one section
    args = parser.parse_args()
    rounds = args.rounds or (5 if args.quick else 15)
    min_seconds = 0.01 if args.quick else 0.04
    names = list(sections(args.quick))
    if args.only:
        unknown = [s for s in args.only.split(",") if s not in names]
        if unknown:
            parser.error(f"unknown sections {unknown}; the sections are {', '.join(names)}")
        names = args.only.split(",")

    if args.section:  # a child: one section, rows appended to --json
        return run_section(Context(args), args.section, rounds, min_seconds, args.json)

    json_path = args.json or tempfile.mkstemp(prefix="bench-peers-cuda-", suffix=".jsonl")[1]
    if args.json and os.path.exists(args.json):
        os.remove(args.json)
    ctx = Context(args) if args.in_process else None
    dev_name = ctx.dev.name if ctx else mc.Device(args.device).name
    print(f"# metalcall {mc.__version__} on {dev_name}\n\n{machine()}; {rounds} rounds; sections: "
          f"{', '.join(names)}\n", flush=True)
    for name in names:
        print(f"## section {name}", flush=True)
        if ctx:
            run_section(ctx, name, rounds, min_seconds, json_path)
            continue
        child = [sys.executable, "-X", "faulthandler", os.path.abspath(__file__), "--section", name,
                 "--device", args.device, "--rounds", str(rounds)] + (["--quick"] if args.quick else [])
        rc = subprocess.run(child + ["--json", json_path], check=False).returncode
        if rc not in (0, 3):  # a GPU fault, or the process died: find the call that did it
            print(f"section {name}: a GPU fault or a dead process (exit status {rc}); running it again with "
                  "CUDA_LAUNCH_BLOCKING=1 to name the failing call (its timings are not kept)", flush=True)
            diag = subprocess.run(child, capture_output=True, text=True, check=False,
                                  env=dict(os.environ, CUDA_LAUNCH_BLOCKING="1"))
            print("".join(diag.stdout.splitlines(True)[-20:]) + "".join(diag.stderr.splitlines(True)[-60:]), flush=True)
            if not any(f'"section": "{name}"' in line for line in open(json_path)):
                with open(json_path, "a") as f:  # it died before recording anything
                    f.write(json.dumps(dict(Row(f"section {name}", error=f"the process died (exit status {rc})").as_json(),
                                            section=name)) + "\n")
    rows = []
    with open(json_path) as f:
        for line in f:
            if line.strip():
                rows.append(Row.from_json(json.loads(line)))
    print("\n" + render(rows))
    return 1 if any(r.error for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
