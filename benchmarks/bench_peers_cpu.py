"""Issue P2.2's table on the CPU backend: metalcall and its installed peers (NumPy, numba, torch)
side by side in one process, interleaved samples, medians and spread.

    python benchmarks/bench_peers_cpu.py [--quick] [--rounds N] [--device cpu]
        [--only calls,memory,arrays,reductions,compile]

Rows: foreign host arrays as kernel arguments against our own Buffers; dev.empty(10**8);
float(mnp.sum(x)) at 1e7 and 1e8; the fused mnp.sin(x)*y+2 at 1e8; the scalar MSL kernel
c[i] = a[i]*b[i] at 1e8; replay per kernel against one-by-one calls; a cold compile (new
process, empty cache) against numba's; in-memory compile hits (small, 28 KB); a 1-element call
with Buffers against a NumPy ufunc; c = a*b at 1e5 against numba parallel; the reductions sum,
max, argmax, mean, prod, any, all at 1e6, 1e7 and 1e8 (group `reductions`). --quick uses 1e6/1e7
instead of 1e7/1e8 and fewer rounds. Every result is checked against NumPy before it is timed.
"""

from __future__ import annotations

import argparse
import os
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


def numba_kernels():
    """numba's parallel loops for the rows (None when numba is missing)."""
    try:
        import numba
    except ImportError:
        return None

    @numba.njit(parallel=True, cache=False)
    def multiply(a, b, c):
        for i in numba.prange(a.size):
            c[i] = a[i] * b[i]

    @numba.njit(parallel=True, cache=False)
    def total(a):
        s = 0.0
        for i in numba.prange(a.size):
            s += a[i]
        return s

    @numba.njit(parallel=True, cache=False)
    def fused(x, y, out):
        for i in numba.prange(x.size):
            out[i] = np.sin(x[i]) * y[i] + np.float32(2.0)

    @numba.njit(parallel=True, cache=False)
    def product(a):
        p = 1.0
        for i in numba.prange(a.size):
            p *= a[i]
        return p

    @numba.njit(parallel=True, cache=False)
    def nonzeros(a):
        c = 0
        for i in numba.prange(a.size):
            c += a[i] != 0
        return c

    # numba runs these array reductions in parallel itself (parallel=True). Its np.mean of float32
    # adds in float32 (0.34 for a mean of 0.5 at 1e8): the mean row divides `total` instead.
    largest = numba.njit(parallel=True, cache=False)(lambda a: np.max(a))
    where_largest = numba.njit(parallel=True, cache=False)(lambda a: np.argmax(a))

    return {"multiply": multiply, "total": total, "fused": fused, "product": product, "nonzeros": nonzeros,
            "max": largest, "argmax": where_largest, "version": numba.__version__}


def call_rows(dev: mc.Device, nb) -> list[Row]:
    mul = dev.compile(MUL).mul
    rows = []
    x, y, z = np.float32([3.0]), np.float32([4.0]), np.zeros(1, np.float32)
    A, B, C = dev.asarray(x), dev.asarray(y), dev.empty(1, np.float32)
    mul(1, A, B, C)
    mul(1, x, y, z)
    check(np.asarray(C)[0] == 12.0 and z[0] == 12.0, "1-element mul")
    foreign = Row("three foreign host arrays as kernel arguments, 1 element, waited")
    foreign.candidates = [("metalcall, NumPy arrays", repeat(lambda: mul(1, x, y, z))),
                          ("metalcall, own Buffers", repeat(lambda: mul(1, A, B, C)))]
    try:
        import torch
        tx, ty, tz = torch.from_numpy(x.copy()), torch.from_numpy(y.copy()), torch.zeros(1)
        mul(1, tx, ty, tz)
        check(float(tz[0]) == 12.0, "torch CPU tensors as arguments")
        foreign.candidates.insert(1, ("metalcall, torch CPU tensors", repeat(lambda: mul(1, tx, ty, tz))))
        foreign.candidates.append(("torch.mul(out=)", repeat(lambda: torch.mul(tx, ty, out=tz))))
    except ImportError:
        foreign.note = "torch not installed"
    foreign.candidates.append(("NumPy ufunc", repeat(lambda: np.multiply(x, y, out=z))))
    rows.append(foreign)

    one = Row("CPU, 1-element call with Buffers (statement call, waits)")
    one.candidates = [("metalcall", repeat(lambda: mul(1, A, B, C))),
                      ("NumPy ufunc np.multiply(out=)", repeat(lambda: np.multiply(x, y, out=z)))]
    rows.append(one)

    n = 10**5
    a, b = _bench._random(n, 1), _bench._random(n, 2)
    c = np.empty(n, np.float32)
    An, Bn, Cn = dev.asarray(a), dev.asarray(b), dev.empty(n, np.float32)
    mul(n, An, Bn, Cn)
    check(np.array_equal(np.asarray(Cn), a * b), "c = a*b at 1e5")
    mid = Row("CPU, c = a*b, 1e5 float32 (call + wait)")
    mid.candidates = [("metalcall", repeat(lambda: mul(n, An, Bn, Cn)))]
    if nb:
        nb["multiply"](a, b, c)
        check(np.array_equal(c, a * b), "numba c = a*b")
        mid.candidates.append(("numba parallel", repeat(lambda: nb["multiply"](a, b, c))))
    else:
        mid.note = "numba not installed"
    mid.candidates.append(("NumPy", repeat(lambda: np.multiply(a, b, out=c))))
    rows.append(mid)

    with dev.record() as graph:
        for _ in range(100):
            mul(1, A, B, C)
    graph.replay().wait()

    def replay(number: int) -> None:
        for _ in range(number):
            graph.replay().wait()

    def one_by_one(number: int) -> None:
        for _ in range(number):
            for _ in range(100):
                mul(1, A, B, C)

    rep = Row("replay from dev.record(), 100 recorded 1-element calls (time per call)", per=100)
    rep.candidates = [("metalcall replay", replay), ("one-by-one calls (metalcall)", one_by_one)]
    rows.append(rep)
    return rows


def memory_rows(dev: mc.Device, big: int) -> list[Row]:
    row = Row(f"dev.empty({big:.0e}, float32), allocate and free (warm)")
    check(not np.asarray(dev.empty(big, np.float32)).any(), "dev.empty is zero-filled")
    row.candidates = [("metalcall dev.empty", repeat(lambda: dev.empty(big, np.float32))),
                      ("metalcall dev.zeros", repeat(lambda: dev.zeros(big, np.float32))),
                      ("np.empty", repeat(lambda: np.empty(big, np.float32))),
                      ("np.zeros", repeat(lambda: np.zeros(big, np.float32)))]
    if uninitialized_supported(dev):
        row.candidates.insert(1, ("metalcall dev.empty(uninitialized=True)",
                                  repeat(lambda: dev.empty(big, np.float32, uninitialized=True))))
    return [row]


def array_rows(dev: mc.Device, sizes: list[int], nb) -> list[Row]:
    rows = []
    for n in sizes:
        data = _bench._random(n, 3)
        x = mnp.asarray(data, device=dev)
        want = float(np.sum(data, dtype=np.float64))
        check(abs(float(mnp.sum(x)) - want) <= 1e-3 * abs(want), f"mnp.sum at {n:.0e}")
        row = Row(f"float(mnp.sum(x)), {n:.0e} float32")
        row.candidates = [("metalcall.numpy", repeat(lambda x=x: float(mnp.sum(x))))]
        if nb:
            check(abs(nb["total"](data) - want) <= 1e-3 * abs(want), "numba sum")
            row.candidates.append(("numba parallel", repeat(lambda data=data: float(nb["total"](data)))))
        row.candidates.append(("NumPy", repeat(lambda data=data: float(np.sum(data)))))
        rows.append(row)
    n = sizes[-1]
    xs, ys = _bench._random(n, 4), _bench._random(n, 5)
    x, y = mnp.asarray(xs, device=dev), mnp.asarray(ys, device=dev)
    want = np.sin(xs) * ys + np.float32(2)
    z = mnp.sin(x) * y + 2
    check(np.allclose(np.asarray(z), want, rtol=1e-5, atol=1e-6), "fused sin(x)*y+2")
    del z

    def fused(number: int) -> None:
        for _ in range(number):
            z = mnp.sin(x) * y + 2
            z.evaluate()
            mnp.synchronize(dev)

    out, tmp = np.empty(n, np.float32), np.empty(n, np.float32)

    def numpy_out(number: int) -> None:
        for _ in range(number):
            np.sin(xs, out=tmp)
            np.multiply(tmp, ys, out=tmp)
            np.add(tmp, np.float32(2), out=out)

    row = Row(f"fused mnp.sin(x)*y+2, {n:.0e} float32 (evaluated, waited)")
    row.candidates = [("metalcall.numpy", fused)]
    if nb:
        nb["fused"](xs, ys, out)
        check(np.allclose(out, want, rtol=1e-5, atol=1e-6), "numba fused")
        row.candidates.append(("numba parallel (fused loop)", repeat(lambda: nb["fused"](xs, ys, out))))
    row.candidates.append(("NumPy, three ufuncs into buffers", numpy_out))
    rows.append(row)

    mul = dev.compile(MUL).mul
    a, b = _bench._random(n, 6), _bench._random(n, 7)
    c = np.empty(n, np.float32)
    A, B, C = dev.asarray(a), dev.asarray(b), dev.empty(n, np.float32)
    mul(n, A, B, C)
    check(np.array_equal(np.asarray(C), a * b), "scalar MSL c = a*b")
    row = Row(f"c[i] = a[i]*b[i] scalar MSL, {n:.0e} float32 (call + wait)")
    row.candidates = [("metalcall", repeat(lambda: mul(n, A, B, C)))]
    if nb:
        row.candidates.append(("numba parallel", repeat(lambda: nb["multiply"](a, b, c))))
    row.candidates.append(("NumPy", repeat(lambda: np.multiply(a, b, out=c))))
    rows.append(row)
    return rows


def reduction_cases(dev: mc.Device, n: int, nb) -> list[tuple]:
    """(what, metalcall, numba or None, NumPy, expected, relative tolerance) of the reductions at n:
    any reads zeros and all ±1, so that no candidate can stop early; prod reads ±1 too (exact in
    any order)."""
    data = _bench._random(n, 8)
    signs = np.where(data < 0.5, np.float32(-1), np.float32(1))
    zeros = np.full(n, 0, np.float32)  # written: np.zeros' untouched pages all read one zero page
    x, xs, x0 = (mnp.asarray(a, device=dev) for a in (data, signs, zeros))
    total = float(np.sum(data, dtype=np.float64))
    return [
        ("sum", lambda: float(mnp.sum(x)), nb and (lambda: float(nb["total"](data))),
         lambda: float(np.sum(data)), total, 1e-2),
        ("max", lambda: float(mnp.max(x)), nb and (lambda: float(nb["max"](data))),
         lambda: float(np.max(data)), float(np.max(data)), 0),
        ("argmax", lambda: int(mnp.argmax(x)), nb and (lambda: int(nb["argmax"](data))),
         lambda: int(np.argmax(data)), int(np.argmax(data)), 0),
        ("mean", lambda: float(mnp.mean(x)), nb and (lambda: float(nb["total"](data)) / n),
         lambda: float(np.mean(data)), total / n, 1e-2),
        ("prod (of ±1)", lambda: float(mnp.prod(xs)), nb and (lambda: float(nb["product"](signs))),
         lambda: float(np.prod(signs)), float(np.prod(signs, dtype=np.float64)), 0),
        ("any (of zeros)", lambda: bool(mnp.any(x0)), nb and (lambda: nb["nonzeros"](zeros) > 0),
         lambda: bool(np.any(zeros)), False, 0),
        ("all (of ±1)", lambda: bool(mnp.all(xs)), nb and (lambda: nb["nonzeros"](signs) == n),
         lambda: bool(np.all(signs)), True, 0),
    ]


def reduction_rows(dev: mc.Device, sizes: list[int], nb) -> list[Row]:
    """Issue P2.2's reductions of float32 arrays: sum, max, argmax, mean, prod, any, all, each
    against numba's parallel loop (or its parallel np.max/argmax) and NumPy."""
    rows = []
    for n in sizes:
        for what, ours, theirs, numpy_fn, want, tol in reduction_cases(dev, n, nb):
            for label, fn in (("metalcall.numpy", ours), ("numba", theirs), ("NumPy", numpy_fn)):
                if fn:
                    got = fn()
                    check(abs(got - want) <= tol * abs(want) if tol else got == want, f"{label} {what} at {n:.0e}")
            row = Row(f"mnp.{what}, {n:.0e} float32 (result read back)")
            row.candidates = [("metalcall.numpy", repeat(ours))]
            if nb:
                row.candidates.append(("numba parallel", repeat(theirs)))
            else:
                row.note = "numba not installed"
            row.candidates.append(("NumPy", repeat(numpy_fn)))
            rows.append(row)
    return rows


_COLD_METALCALL = """
import time, metalcall as mc
from metalcall import _bench
dev = mc.Device({spec!r})
t = time.perf_counter()
dev.compile(_bench.MUL_SOURCE).mul
print(time.perf_counter() - t)
"""

_COLD_NUMBA = """
import time, numpy as np, numba
a = np.ones(16, np.float32); c = np.empty(16, np.float32)
t = time.perf_counter()
@numba.njit(parallel=True, cache=False)
def multiply(a, b, c):
    for i in numba.prange(a.size):
        c[i] = a[i] * b[i]
multiply(a, a, c)
print(time.perf_counter() - t)
"""


def compile_rows(dev: mc.Device, spec: str, cold_repeats: int, nb) -> list[Row]:
    import statistics
    cold = Row("compile, small kernel, cold (new process, empty cache)")
    ours, theirs = [], []
    for _ in range(cold_repeats):  # interleaved
        with tempfile.TemporaryDirectory(prefix="metalcall-cold-") as cache:
            ours.append(new_process_seconds(_COLD_METALCALL.format(spec=spec), {"METALCALL_CACHE_DIR": cache}))
        if nb:
            theirs.append(new_process_seconds(_COLD_NUMBA))
    cold.fixed["metalcall"] = statistics.median(ours)
    if nb:
        cold.fixed["numba @njit(parallel) first call"] = statistics.median(theirs)
    cold.note = f"medians of {cold_repeats} new processes; no spread"
    hit = Row("compile, in-memory hit (same str object), small / 28 KB source")
    dev.compile(MUL), dev.compile(LARGE_SOURCE)
    check("mul" in dev.compile(MUL).function_names, "in-memory hit")
    hit.candidates = [("metalcall, small", repeat(lambda: dev.compile(MUL))),
                      (f"metalcall, {len(LARGE_SOURCE) // 1000} KB", repeat(lambda: dev.compile(LARGE_SOURCE)))]
    hit.note = "no CPU peer (CuPy's RawKernel hit is in bench_peers_cuda.py)"
    return [cold, hit]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--quick", action="store_true", help="smaller arrays, fewer rounds")
    parser.add_argument("--rounds", type=int, default=None)
    parser.add_argument("--only", default=None,
                        help="comma-separated groups to run: calls, memory, arrays, reductions, compile "
                        "(default: all)")
    args = parser.parse_args()
    known = ["calls", "memory", "arrays", "reductions", "compile"]
    groups = args.only.split(",") if args.only else known
    unknown = set(groups) - set(known)
    if unknown:
        parser.error(f"unknown groups {sorted(unknown)}; the groups are {', '.join(known)}")
    dev = mc.Device(args.device)
    mnp.set_default_device(dev)
    rounds = args.rounds or (5 if args.quick else 15)
    min_seconds = 0.01 if args.quick else 0.04
    sizes = [10**6, 10**7] if args.quick else [10**7, 10**8]
    nb = numba_kernels()
    print(f"# metalcall {mc.__version__} on {dev.name}\n\n{machine()}; numba {nb['version'] if nb else 'missing'}; "
          f"NumPy {np.__version__}; {rounds} rounds\n", flush=True)
    rows = call_rows(dev, nb) if "calls" in groups else []
    rows += memory_rows(dev, sizes[-1]) if "memory" in groups else []
    rows += array_rows(dev, sizes, nb) if "arrays" in groups else []
    rows += reduction_rows(dev, sorted({10**6, *sizes}), nb) if "reductions" in groups else []
    rows += compile_rows(dev, args.device, 2 if args.quick else 5, nb) if "compile" in groups else []
    for row in rows:
        measure(row, rounds, min_seconds)
        print(render([row]).splitlines()[-1], flush=True)
    print("\n" + render(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
