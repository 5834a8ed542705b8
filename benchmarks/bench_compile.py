"""Compile times, issue P2.2 item 5: a cold compile of a small kernel (a new process, an empty
cache directory) beside CuPy's cold RawKernel measured the same way, and in-memory compile hits
beside CuPy's.

    python benchmarks/bench_compile.py [--device cuda] [--repeats 7] [--json FILE]
    python benchmarks/bench_compile.py --nvrtc TRANSLATE_MAIN [--repeats 7]   (no GPU: NVRTC alone)

Cold rows: each sample is a new Python process with a new METALCALL_CACHE_DIR (CuPy: a new
CUPY_CACHE_DIR), which opens the device outside the timing and then times
`dev.compile(src).function(name)` (CuPy: `RawKernel(src, name).kernel`); the candidates take
turns. Kernels: the small float kernel of `metalcall._bench` (c = a * b and a copy), c = a * b
alone (CuPy's kernel), a kernel of float4 math (sin, exp, dot), and one of half arithmetic, each also with the whole CUDA prelude
(METALCALL_CUDA_PRELUDE=full). "new
kernel, warm process" compiles a second, different kernel in a process that already compiled
one (NVRTC loaded). Hit rows: the same str object, a 28 KB source, and another str of the same
text (found by comparing the text). Every compiled kernel is run once and
its result checked against NumPy in the probe.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import pathlib
import statistics
import subprocess
import sys
import tempfile
import time
import timeit

import numpy as np

import metalcall as mc
from metalcall import _bench

SMALL = _bench.MUL_SOURCE
MATH = """
#include <metal_stdlib>
using namespace metal;
kernel void wave(const device float4* a [[buffer(0)]], device float* c [[buffer(1)]],
                 uint i [[thread_position_in_grid]]) {
    float4 v = a[i];
    c[i] = dot(sin(v), exp(-v * v)) + length(v.xyz);
}
"""
HALF = """
#include <metal_stdlib>
using namespace metal;
kernel void hmul(const device half* a [[buffer(0)]], const device half* b [[buffer(1)]],
                 device half* c [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    c[i] = a[i] * b[i] + half(1.0h);
}
"""
# CuPy's kernel exactly: c = a * b alone (SMALL also holds a copy kernel).
MUL_ONLY = SMALL[:SMALL.index("kernel void copy")]
KERNELS = {"small": (SMALL, "mul"), "mul only": (MUL_ONLY, "mul"), "math": (MATH, "wave"), "half": (HALF, "hmul")}
CUDA_MUL = r"""
extern "C" __global__ void mul(const float* a, const float* b, float* c, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] * b[i];
}
"""
LARGE = SMALL + "".join(f"// filler line {i:04d} keeps the source large: " + "x" * 40 + "\n" for i in range(330))

# Run in a new process: opens the device, times the compile, checks the kernel's result.
_PROBE = """
import json, sys, time
import numpy as np
import metalcall as mc
sys.path.insert(0, {here!r})
from bench_compile import KERNELS, check
dev = mc.Device({spec!r})
dev.synchronize()
out = {{}}
for label in {labels!r}:
    src, name = KERNELS[label]
    t = time.perf_counter()
    fn = dev.compile(src).function(name)
    out[label] = time.perf_counter() - t
    check(dev, label, fn)
print(json.dumps(out))
"""

_CUPY_PROBE = """
import time, cupy
cupy.zeros(1)  # the context, outside the timing (metalcall's Device() is outside too)
t = time.perf_counter()
k = cupy.RawKernel({source!r}, "mul")
k.kernel
dt = time.perf_counter() - t
a = cupy.arange(1000, dtype=cupy.float32); c = cupy.empty_like(a)
k((4,), (256,), (a, a, c, cupy.uint32(1000)))
assert bool((c == a * a).all())
print(dt)
"""


def check(dev, label: str, fn) -> None:
    """Runs the kernel `label` once on 64 elements and compares with NumPy."""
    rng = np.random.default_rng(1)
    if label in ("small", "mul only"):
        a, b = rng.random(64, dtype=np.float32), rng.random(64, dtype=np.float32)
        c = np.zeros(64, np.float32)
        fn(64, a, b, c)
        np.testing.assert_array_equal(c, a * b)
    elif label == "math":
        a = rng.random((64, 4), dtype=np.float32)
        c = np.zeros(64, np.float32)
        fn(64, a, c)
        ref = (np.sin(a) * np.exp(-a * a)).sum(axis=1) + np.sqrt((a[:, :3] ** 2).sum(axis=1))
        np.testing.assert_allclose(c, ref, rtol=1e-5, atol=1e-6)
    else:
        a, b = rng.random(64).astype(np.float16), rng.random(64).astype(np.float16)
        c = np.zeros(64, np.float16)
        fn(64, a, b, c)
        np.testing.assert_allclose(c.astype(np.float32), (a * b + np.float16(1)).astype(np.float32), rtol=2e-3)


def run_probe(code: str, env: dict, phases: dict | None = None) -> dict | float:
    """What the probe printed; `phases` gets the backend's METALCALL_COMPILE_TIMES lines
    (key, lookup, translate, build, save, and on CUDA select, cubin-cache, nvrtc, module-load:
    seconds) where the build has them."""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env=dict(os.environ, METALCALL_COMPILE_TIMES="1", **env))
    if r.returncode != 0:
        raise RuntimeError("a probe process failed:\n" + r.stderr[-3000:])
    if phases is not None:
        for line in r.stderr.splitlines():
            if line.startswith("metalcall compile times: "):
                for item in line[len("metalcall compile times: "):].split(", "):
                    words = item.split()
                    if len(words) >= 3 and words[2] == "ms":
                        phases[words[0]] = phases.get(words[0], 0.0) + float(words[1]) / 1e3
                    elif words and words[0] == "parts":
                        phases["parts"] = " ".join(words[1:])
    return json.loads(r.stdout.strip().splitlines()[-1])


def cold_rows(spec: str, repeats: int, cupy_installed: bool) -> list[tuple[str, list[float]]]:
    here = os.path.dirname(os.path.abspath(__file__))
    samples: dict[str, list[float]] = {}
    cuda = spec.startswith("cuda")
    variants = [("", {})] + ([(", whole prelude", {"METALCALL_CUDA_PRELUDE": "full"})] if cuda else [])
    for _ in range(repeats):  # the candidates take turns
        for suffix, env in variants:
            for labels in (["small"], ["mul only"], ["math"], ["half"], ["small", "math"]):
                phases: dict = {}
                with tempfile.TemporaryDirectory(prefix="metalcall-cold-") as cache:
                    got = run_probe(_PROBE.format(here=here, spec=spec, labels=labels),
                                    dict(env, METALCALL_CACHE_DIR=cache), phases)
                if len(labels) == 1:
                    what = f"metalcall, {labels[0]} kernel{suffix}"
                    samples.setdefault(what, []).append(got[labels[0]])
                    for phase in phases:  # key, lookup, translate, select, cubin-cache, nvrtc, module-load, build, save
                        if phase != "parts":
                            samples.setdefault(f"{what}: {phase} (parts {phases.get('parts', '?')})"
                                               if phase == "nvrtc" else f"{what}: {phase}", []).append(phases[phase])
                else:
                    samples.setdefault(f"metalcall, new kernel, warm process (math after small){suffix}",
                                       []).append(got["math"])
        if cupy_installed:
            with tempfile.TemporaryDirectory(prefix="cupy-cold-") as cache:
                got = run_probe(_CUPY_PROBE.format(source=CUDA_MUL), {"CUPY_CACHE_DIR": cache, "CUPY_CACHE_IN_MEMORY": "1"})
            samples.setdefault("CuPy RawKernel, small kernel", []).append(got)
    return list(samples.items())


def hit_rows(dev, cupy) -> list[tuple[str, list[float]]]:
    def per_call(fn, number=20000, repeat=7):
        fn()
        return [t / number for t in timeit.repeat(fn, number=number, repeat=repeat)]

    assert "mul" in dev.compile(SMALL).function_names and "mul" in dev.compile(LARGE).function_names
    rows = [("metalcall hit, small, same str", per_call(lambda: dev.compile(SMALL))),
            (f"metalcall hit, {len(LARGE) // 1000} KB, same str", per_call(lambda: dev.compile(LARGE)))]
    # Two str objects of the same text, taking turns: each call's object is not the one the
    # memo's entry holds, so the text is compared (what a source read again costs).
    copies = itertools.cycle(["".join((LARGE[:10], LARGE[10:])) for _ in range(2)])
    rows.append((f"metalcall hit, {len(LARGE) // 1000} KB, another str of equal text",
                 per_call(lambda: dev.compile(next(copies)), number=2000)))
    if cupy is not None:
        large_cuda = CUDA_MUL + "".join(f"// filler line {i:04d}: " + "x" * 60 + "\n" for i in range(330))
        rows.append(("CuPy RawKernel(...).kernel hit, small", per_call(lambda: cupy.RawKernel(CUDA_MUL, "mul").kernel)))
        rows.append((f"CuPy hit, {len(large_cuda) // 1000} KB", per_call(lambda: cupy.RawKernel(large_cuda, "mul").kernel)))
    return rows


def nvrtc_rows(translate_main: str, repeats: int) -> list[tuple[str, list[float]]]:
    """NVRTC alone, no GPU: each kernel's CUDA translation compiled in this process (sm_90, the
    backend's options) as the backend's first build compiles it (its prelude parts, -minimal, no
    coarsened entry points) and as it did before all three (whole prelude, coarsened entries), taking
    turns, with CuPy's c = a * b in CUDA C++ beside them; the first compile of the process (NVRTC's
    own start) is left out. CPU time of the process (NVRTC compiles on the calling thread)."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools"))
    import cuda_prelude_parts_check as parts_check
    import nvrtc_check

    found, why = nvrtc_check.find_nvrtc()
    if not found:
        raise SystemExit(f"--nvrtc: {why}")
    lib, include = found
    samples: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-nvrtc-") as tmp:
        helper = parts_check.build_helper(pathlib.Path(tmp))
        codes = {}
        for label, (src, _) in KERNELS.items():
            metal = os.path.join(tmp, label + ".metal")
            with open(metal, "w") as f:
                f.write(src)
            cu = subprocess.run([translate_main, "--target", "cuda", metal], capture_output=True, text=True, check=True)
            with open(metal + ".cu", "w") as f:
                f.write(cu.stdout)
            options = subprocess.run([str(helper), metal + ".cu"], capture_output=True, text=True, check=True).stdout.split()
            # As the backend's first build: parts, -minimal (NVRTC 12.4+), no coarsened entry points.
            codes[label] = (cu.stdout, options + ["-minimal", "-DMETALCALL_NO_COARSENED"])
        nvrtc_check.compile_cuda("extern \"C\" __global__ void k() {}", "sm_90", lib, include)  # NVRTC's start
        for _ in range(repeats):
            # CuPy's kernel as CUDA C++, what its cold RawKernel hands NVRTC (with our options; no prelude).
            cpu = time.process_time()
            ok, log, _ = nvrtc_check.compile_cuda(CUDA_MUL, "sm_90", lib, include)
            if not ok:
                raise RuntimeError(f"CuPy's kernel did not compile:\n{log[-2000:]}")
            samples.setdefault("NVRTC, c = a * b written in CUDA C++ (CuPy's RawKernel source)", []).append(
                time.process_time() - cpu)
            for label, (code, options) in codes.items():
                for suffix, extra in (("", options), (", before: whole prelude, coarsened entries", [])):
                    # CPU time: the shared development machine's wall clock measures its load.
                    cpu = time.process_time()
                    ok, log, _ = nvrtc_check.compile_cuda(code, "sm_90", lib, include, extra=extra)
                    seconds = time.process_time() - cpu
                    if not ok:
                        raise RuntimeError(f"{label}{suffix} did not compile:\n{log[-2000:]}")
                    parts = ",".join(o[len("-DMETALCALL_PART_"):-2] for o in options if "_PART_" in o) or "none"
                    what = (f"NVRTC, {label} kernel, parts {parts}, no coarsened entries" if not suffix
                            else f"NVRTC, {label} kernel{suffix}")
                    samples.setdefault(what, []).append(seconds)
    return list(samples.items())


def fmt(s: float) -> str:
    return f"{s * 1e3:.1f} ms" if s >= 1e-3 else f"{s * 1e6:.2f} µs"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--repeats", type=int, default=7, help="new processes per cold candidate")
    ap.add_argument("--json", help="append the rows here as JSON")
    ap.add_argument("--only", choices=["cold", "hit"])
    ap.add_argument("--nvrtc", metavar="TRANSLATE_MAIN", help="time NVRTC alone on this machine (no GPU): the "
                    "kernels' CUDA translations by this translate_main (cpp/tests/translate/run.sh builds it), "
                    "with their prelude parts and with the whole prelude")
    args = ap.parse_args()
    if args.nvrtc:
        rows = nvrtc_rows(args.nvrtc, args.repeats)
        print(f"NVRTC on the CPU (process CPU time), sm_90; load {os.getloadavg()[0]:.1f}")
        print("| what | median | min | max | n |\n|---|---|---|---|---|")
        for what, v in rows:
            print(f"| {what} | {fmt(statistics.median(v))} | {fmt(min(v))} | {fmt(max(v))} | {len(v)} |")
        return 0
    dev = mc.Device(args.device)
    cupy = None
    if dev.backend == "cuda":
        try:
            import cupy  # noqa: F401
        except ImportError:
            cupy = None
    spec = f"{dev.backend}:{dev.index}"
    rows = []
    if args.only != "hit":
        rows += [("cold", k, v) for k, v in cold_rows(spec, args.repeats, cupy is not None)]
    if args.only != "cold":
        rows += [("hit", k, v) for k, v in hit_rows(dev, cupy)]
    print(f"device {dev.name}; metalcall {mc.__file__}; load {os.getloadavg()[0]:.1f}")
    print("| kind | what | median | min | max | n |\n|---|---|---|---|---|---|")
    for kind, what, v in rows:
        print(f"| {kind} | {what} | {fmt(statistics.median(v))} | {fmt(min(v))} | {fmt(max(v))} | {len(v)} |")
    if args.json:
        with open(args.json, "a") as f:
            for kind, what, v in rows:
                f.write(json.dumps({"kind": kind, "what": what, "seconds": v}) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
