"""Measurements shared by ``python -m metalcall`` and ``benchmarks/bench_core.py``.

Every measurement checks the kernel's results against NumPy before timing it,
times only warm calls (compiled and run once beforehand), and keeps the minimum
over repeats: on a shared machine that is the least disturbed run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import statistics
import time
from typing import Callable, NamedTuple

import numpy as np

import metalcall as mc

MUL_SOURCE = """
#include <metal_stdlib>
using namespace metal;
kernel void mul(const device float* a [[buffer(0)]], const device float* b [[buffer(1)]],
                device float* c [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    c[i] = a[i] * b[i];
}
kernel void copy(const device float* a [[buffer(0)]], device float* c [[buffer(1)]],
                 uint i [[thread_position_in_grid]]) {
    c[i] = a[i];
}
"""

# Seed 000's compute-heavy kernel, unrolled the way the post builds it.
HEAVY_BLOCKS = 400
HEAVY_FLOPS_PER_ELEMENT = 8 * HEAVY_BLOCKS + 6  # the post's count: 8 per block, 6 others
HEAVY_SOURCE = (
    """
#include <metal_stdlib>
using namespace metal;
kernel void heavy(const device float *A [[buffer(0)]], const device float *B [[buffer(1)]],
                  device float *C [[buffer(2)]], uint id [[thread_position_in_grid]]) {
    float Ai = A[id];
    float Bi = B[id];
    float D = Ai;
    float E = Bi;
    float F = Ai + Bi;
    float G = Ai - Bi;
"""
    + HEAVY_BLOCKS
    * """
    D += Ai * G;
    E += Bi * F;
    F += Ai * E;
    G += Bi * D;
"""
    + """
    C[id] = D + E + F + G;
}
"""
)

# NumPy runs the recurrence over slices this long so that its 3200 passes over them stay in
# cache: the fastest length measured here (whole 4 MiB arrays run about 40% slower).
NUMPY_HEAVY_CHUNK = 1 << 17
# The recurrence accumulates rounding over 1600 steps; NumPy rounds each multiply, the kernel may fuse.
HEAVY_RTOL = 1e-3

BYTES_PER_MUL_ELEMENT = 12  # read a and b, write c (float32)
BYTES_PER_COPY_ELEMENT = 8


class CheckFailed(AssertionError):
    """A kernel's result disagreed with NumPy's."""


class Table(NamedTuple):
    title: str
    columns: list[str]
    rows: list[list[str]]


def open_device(spec: str | None) -> mc.Device:
    """``None``: the default device; digits: an index into get_devices(); else a name."""
    if spec is None:
        return mc.Device()
    return mc.Device(int(spec)) if spec.isdigit() else mc.Device(spec)


def sample_times(runs: dict[str, Callable[[int], object]], repeats: int,
                 min_seconds: float = 0.05) -> dict[str, tuple[float, float]]:
    """Seconds per call of each ``run(number)``: (minimum, median) over repeats of batches long enough to time.

    The repeats take turns between the runs, so a disturbance of the machine hits
    them alike rather than spoiling one run's every repeat.
    """
    numbers: dict[str, int] = {}
    samples: dict[str, list[float]] = {name: [] for name in runs}
    for name, run in runs.items():
        run(1)  # warm-up
        number = 1
        while True:
            start = time.perf_counter()
            run(number)
            elapsed = time.perf_counter() - start
            if elapsed >= min_seconds or number >= 1 << 24:
                break
            number *= max(2, min(10, int(min_seconds / max(elapsed, 1e-9)) + 1))
        numbers[name] = number
        samples[name].append(elapsed / number)
    for _ in range(repeats - 1):
        for name, run in runs.items():
            start = time.perf_counter()
            run(numbers[name])
            samples[name].append((time.perf_counter() - start) / numbers[name])
    return {name: (min(s), statistics.median(s)) for name, s in samples.items()}


def best_times(runs: dict[str, Callable[[int], object]], repeats: int, min_seconds: float = 0.05) -> dict[str, float]:
    """Seconds per call of each ``run(number)``: the minimum over repeats (see sample_times)."""
    return {name: best for name, (best, _) in sample_times(runs, repeats, min_seconds).items()}


def check(ok: bool, what: str) -> None:
    if not ok:
        raise CheckFailed(what)


def _random(n: int, seed: int) -> np.ndarray:
    """n float32 values in [0, 1)."""
    return np.random.default_rng(seed).random(n, dtype=np.float32)


def call_overhead(dev: mc.Device, repeats: int, min_seconds: float = 0.05) -> tuple[Table, dict]:
    """Time per call of c[i] = a[i] * b[i] on one element, against np.multiply on one element.

    The numbers: µs per call by row name, "numpy" for np.multiply.
    """
    mul = dev.compile(MUL_SOURCE).mul
    a, b = _random(1, 1), _random(1, 2)
    c = np.zeros(1, np.float32)
    A, B, C = dev.asarray(a), dev.asarray(b), dev.empty(1, np.float32)
    mul(1, A, B, C).wait()
    mul(1, a, b, c).wait()
    check(np.asarray(C)[0] == a[0] * b[0] and c[0] == a[0] * b[0], "1-element c = a * b")

    def numpy_calls(n: int) -> None:
        multiply = np.multiply
        for _ in range(n):
            multiply(a, b, out=c)

    def waited(x, y, z) -> Callable[[int], None]:
        def run(n: int) -> None:
            for _ in range(n):
                mul(1, x, y, z).wait()

        return run

    def kept(x, y, z) -> Callable[[int], None]:
        def run(n: int) -> None:
            pending = [mul(1, x, y, z) for _ in range(n)]
            for completion in pending:
                completion.wait()

        return run

    runs = {
        "numpy": numpy_calls,
        "async, Buffer args": kept(A, B, C),
        "async, NumPy args": kept(a, b, c),
        "waited, Buffer args": waited(A, B, C),
        "waited, NumPy args": waited(a, b, c),
    }
    numbers = {name: seconds * 1e6 for name, seconds in best_times(runs, repeats, min_seconds).items()}
    rows = [["np.multiply(a, b, out=c)" if name == "numpy" else f"metalcall {name}", f"{us:.2f}",
             f"{us / numbers['numpy']:.2f}"] for name, us in numbers.items()]
    table = Table("Per-call overhead, 1 element, c = a * b", ["call", "µs per call", "time / NumPy"], rows)
    return table, numbers


def multiply_bandwidth(dev: mc.Device, sizes: list[int], repeats: int) -> tuple[Table, dict]:
    """GB/s of c = a * b (12 bytes per element) with Buffers and with NumPy arrays, against np.multiply.

    The numbers: {elements: {"numpy": GB/s, "buffer": GB/s, "numpy_args": GB/s}}.
    """
    mul = dev.compile(MUL_SOURCE).mul
    numbers = {n: _multiply_bandwidth_at(dev, mul, n, repeats) for n in sizes}
    rows = [[f"{n:.0e}", f"{g['numpy']:.1f}", f"{g['buffer']:.1f}", f"{g['buffer'] / g['numpy']:.2f}",
             f"{g['numpy_args']:.1f}", f"{g['numpy_args'] / g['numpy']:.2f}"] for n, g in numbers.items()]
    columns = ["elements", "NumPy GB/s", "Buffer GB/s", "× NumPy", "NumPy-args GB/s", "× NumPy"]
    return Table("c = a * b throughput, float32, 12 bytes per element", columns, rows), numbers


def _multiply_bandwidth_at(dev: mc.Device, mul: mc.Kernel, n: int, repeats: int) -> dict:
    a, b = _random(n, 1), _random(n, 2)
    c = np.zeros(n, np.float32)
    A, B, C = dev.asarray(a), dev.asarray(b), dev.empty(n, np.float32)
    want = a * b
    mul(n, A, B, C).wait()
    mul(n, a, b, c).wait()
    check(np.array_equal(np.asarray(C), want) and np.array_equal(c, want), f"c = a * b at {n:.0e}")
    del want

    runs = {
        "numpy": lambda k: [np.multiply(a, b, out=c) for _ in range(k)],
        "buffer": lambda k: [mul(n, A, B, C).wait() for _ in range(k)],
        "numpy_args": lambda k: [mul(n, a, b, c).wait() for _ in range(k)],
    }
    return {name: BYTES_PER_MUL_ELEMENT * n / seconds / 1e9 for name, seconds in best_times(runs, repeats).items()}


def copy_roofline(dev: mc.Device, n: int, repeats: int) -> Table:
    """Memory bandwidth of a plain copy (8 bytes per element): NumPy on one core, a kernel on all."""
    copy = dev.compile(MUL_SOURCE).copy
    a = _random(n, 1)
    c = np.zeros(n, np.float32)
    A, C = dev.asarray(a), dev.empty(n, np.float32)
    copy(n, A, C).wait()
    check(np.array_equal(np.asarray(C), a), f"copy kernel at {n:.0e}")

    runs = {
        "np.copyto(c, a)": lambda k: [np.copyto(c, a) for _ in range(k)],
        f"metalcall copy kernel ({dev.backend})": lambda k: [copy(n, A, C).wait() for _ in range(k)],
    }
    rows = [[name, f"{BYTES_PER_COPY_ELEMENT * n / seconds / 1e9:.1f}"]
            for name, seconds in best_times(runs, repeats).items()]
    return Table(f"Copy roofline, {n:.0e} float32", ["copy (8 bytes per element)", "GB/s"], rows)


def numpy_heavy(a: np.ndarray, b: np.ndarray, out: np.ndarray, chunk: int = NUMPY_HEAVY_CHUNK) -> None:
    """The heavy kernel's recurrence with in-place float32 NumPy ops, slice by slice."""
    multiply, add = np.multiply, np.add
    scratch = np.empty((5, min(chunk, len(a))), np.float32)
    for start in range(0, len(a), chunk):
        A, B = a[start:start + chunk], b[start:start + chunk]
        D, E, F, G, t = scratch[:, :len(A)]
        np.copyto(D, A)
        np.copyto(E, B)
        add(A, B, out=F)
        np.subtract(A, B, out=G)
        for _ in range(HEAVY_BLOCKS):
            add(D, multiply(A, G, out=t), out=D)
            add(E, multiply(B, F, out=t), out=E)
            add(F, multiply(A, E, out=t), out=F)
            add(G, multiply(B, D, out=t), out=G)
        add(D, E, out=D)
        add(D, F, out=D)
        add(D, G, out=out[start:start + chunk])


def compute_heavy(dev: mc.Device, n: int, repeats: int) -> tuple[Table, dict]:
    """GFLOP/s of seed 000's 400-block kernel against the same recurrence in NumPy.

    The numbers: {"numpy": GFLOP/s, "kernel": GFLOP/s}.
    """
    heavy = dev.compile(HEAVY_SOURCE).heavy
    # A >= 0 and B <= 0 make each pair (D, G), (E, F) a stable rotation; other data overflows to inf.
    a, b = _random(n, 1), -_random(n, 2)
    want, got = np.empty(n, np.float32), np.empty(n, np.float32)
    A, B, C = dev.asarray(a), dev.asarray(b), dev.empty(n, np.float32)
    numpy_heavy(a, b, want)
    heavy(n, A, B, C).wait()
    heavy(n, a, b, got).wait()
    scale = float(np.abs(want).max())
    for result in (np.asarray(C), got):
        check(np.allclose(result, want, rtol=HEAVY_RTOL, atol=HEAVY_RTOL * scale), f"compute-heavy kernel at {n}")

    runs = {
        "numpy": lambda k: [numpy_heavy(a, b, want) for _ in range(k)],
        "kernel": lambda k: [heavy(n, A, B, C).wait() for _ in range(k)],
    }
    numbers = {name: HEAVY_FLOPS_PER_ELEMENT * n / seconds / 1e9
               for name, seconds in best_times(runs, repeats, 0.1).items()}
    rows = [
        [f"NumPy, in-place float32 ops on {NUMPY_HEAVY_CHUNK}-element slices", f"{numbers['numpy']:.2f}", "1.00"],
        ["metalcall, Buffer args", f"{numbers['kernel']:.2f}", f"{numbers['kernel'] / numbers['numpy']:.2f}"],
    ]
    title = f"Compute-heavy kernel (seed 000), {n} elements x {HEAVY_FLOPS_PER_ELEMENT} FLOPs"
    return Table(title, ["implementation", "GFLOP/s", "× NumPy"], rows), numbers


def compile_probe(spec: str, repeats: int) -> None:
    """Run in a new process by compile_overhead: prints the first and the in-memory compile times."""
    dev = open_device(spec or None)
    start = time.perf_counter()
    dev.compile(MUL_SOURCE).function("mul")
    first = time.perf_counter() - start
    again = best_times({"again": lambda n: [dev.compile(MUL_SOURCE).function("mul") for _ in range(n)]}, repeats)
    print(json.dumps({"first": first, **again}))


def _run_probe(spec: str | None, cache_dir: str, repeats: int) -> dict:
    code = f"from metalcall._bench import compile_probe; compile_probe({spec or ''!r}, {repeats})"
    env = dict(os.environ, METALCALL_CACHE_DIR=cache_dir)
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise CheckFailed("the compile probe failed:\n" + result.stderr)
    return json.loads(result.stdout)


def compile_overhead(spec: str | None, repeats: int) -> Table:
    """dev.compile(src).function("mul"): cold (empty cache, new process), warm disk cache (new process), in memory."""
    with tempfile.TemporaryDirectory(prefix="metalcall-bench-") as cache_dir:
        cold = _run_probe(spec, cache_dir, 1)
        warm = [_run_probe(spec, cache_dir, repeats) for _ in range(repeats)]
    rows = [
        ["cold: empty cache directory, new process", f"{cold['first'] * 1e3:.1f} ms"],
        ["warm disk cache, new process", f"{min(w['first'] for w in warm) * 1e3:.2f} ms"],
        ["in-memory cache, same process", f"{min(w['again'] for w in warm) * 1e6:.2f} µs"],
    ]
    return Table("Compile + kernel lookup, small kernel", ["cache", "time"], rows)


def render(tables: list[Table], plain: bool = False) -> None:
    """Prints the tables with rich when it is installed (the 'bench' extra), else as aligned text."""
    if not plain:
        try:
            from rich.console import Console
            from rich.table import Table as RichTable
        except ImportError:
            plain = True
    if plain:
        for t in tables:
            widths = [max(len(r[i]) for r in [t.columns] + t.rows) for i in range(len(t.columns))]
            print(f"\n{t.title}")
            for r in [t.columns] + t.rows:
                print("  ".join(v.ljust(w) if i == 0 else v.rjust(w) for i, (v, w) in enumerate(zip(r, widths))))
        return
    console = Console()
    for t in tables:
        rich_table = RichTable(title=t.title, title_justify="left")
        for i, column in enumerate(t.columns):
            rich_table.add_column(column, justify="left" if i == 0 else "right")
        for r in t.rows:
            rich_table.add_row(*r)
        console.print(rich_table)
