"""Where a cold CUDA compile's time goes (issue P2.2 item 5), phase by phase, beside CuPy's cold
RawKernel measured the same way.

    python benchmarks/bench_compile_phases.py [--device cuda] [--repeats 5] [--json FILE]

Each sample is a new Python process with an empty cache folder (METALCALL_CACHE_DIR; CuPy:
CUPY_CACHE_DIR, in-memory cache only), the candidates taking turns. A metalcall process times
`import metalcall`, `Device("cuda")` with a synchronize (the context), `dev.compile(src)`,
`.function(name)`, the first call (NumPy arguments, waited) and a second one; the backend's
METALCALL_COMPILE_TIMES lines split the compile (key and lookup of the translation cache, the
front end, prelude-part selection, the cubin cache, NVRTC, cuModuleLoadData, the cache's
writes). A CuPy process times `import cupy`, the context (`cupy.zeros(1)`), `RawKernel(...)`,
`.kernel` (NVRTC and the module load) and two launches. Every result is checked against NumPy.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))

# c = a * b as CuPy's kernel spells it, and in MSL: alone, with a directive (which needs the
# host C preprocessor), and the float4 math kernel of bench_compile.py.
CUDA_MUL = r"""
extern "C" __global__ void mul(const float* a, const float* b, float* c, unsigned n) {
    unsigned i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] * b[i];
}
"""
MSL_MUL = """
#include <metal_stdlib>
using namespace metal;
kernel void mul(const device float* a [[buffer(0)]], const device float* b [[buffer(1)]],
                device float* c [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    c[i] = a[i] * b[i];
}
"""
KERNELS = {
    "mul": MSL_MUL,
    "mul, #define (host preprocessor)": MSL_MUL.replace("using namespace metal;",
                                                        "using namespace metal;\n#define TIMES(x, y) ((x) * (y))")
                                              .replace("a[i] * b[i]", "TIMES(a[i], b[i])"),
}

_PROBE = r"""
import json, time
t0 = time.perf_counter()
import numpy as np
t1 = time.perf_counter()
import metalcall as mc
t2 = time.perf_counter()
dev = mc.Device({device!r})
dev.synchronize()
t3 = time.perf_counter()
lib = dev.compile({source!r})
t4 = time.perf_counter()
fn = lib.function("mul")
t5 = time.perf_counter()
a = np.arange(64, dtype=np.float32); b = np.full(64, 0.5, np.float32); c = np.zeros(64, np.float32)
t6 = time.perf_counter()
fn(64, a, b, c)
t7 = time.perf_counter()
fn(64, a, b, c)
t8 = time.perf_counter()
np.testing.assert_array_equal(c, a * b)
print(json.dumps({{"import numpy": t1 - t0, "import metalcall": t2 - t1, "Device + synchronize": t3 - t2,
            "compile": t4 - t3, ".function": t5 - t4, "first call (waited)": t7 - t6, "second call": t8 - t7}}))
"""

_CUPY_PROBE = r"""
import json, time
t0 = time.perf_counter()
import numpy as np
t1 = time.perf_counter()
import cupy
t2 = time.perf_counter()
cupy.zeros(1)
cupy.cuda.Device().synchronize()
t3 = time.perf_counter()
k = cupy.RawKernel({source!r}, "mul")
t4 = time.perf_counter()
k.kernel
t5 = time.perf_counter()
a = cupy.arange(64, dtype=cupy.float32); b = cupy.full(64, 0.5, cupy.float32); c = cupy.zeros(64, cupy.float32)
cupy.cuda.Device().synchronize()
t6 = time.perf_counter()
k((1,), (64,), (a, b, c, cupy.uint32(64))); cupy.cuda.Device().synchronize()
t7 = time.perf_counter()
k((1,), (64,), (a, b, c, cupy.uint32(64))); cupy.cuda.Device().synchronize()
t8 = time.perf_counter()
assert bool((c == a * b).all())
print(json.dumps({{"import numpy": t1 - t0, "import cupy": t2 - t1, "context (zeros + synchronize)": t3 - t2,
            "RawKernel(...)": t4 - t3, ".kernel (compile + load)": t5 - t4, "first launch (synchronized)": t7 - t6,
            "second launch": t8 - t7}}))
"""


def run(code: str, env: dict) -> tuple[dict, float]:
    """The probe's phases (seconds) with the backend's METALCALL_COMPILE_TIMES phases, and the wall time
    of the whole process."""
    t = time.perf_counter()
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env=dict(os.environ, METALCALL_COMPILE_TIMES="1", **env))
    wall = time.perf_counter() - t
    if r.returncode != 0:
        raise RuntimeError("a probe process failed:\n" + r.stderr[-3000:])
    phases = json.loads(r.stdout.strip().splitlines()[-1])
    for line in r.stderr.splitlines():
        if not line.startswith("metalcall compile times: "):
            continue
        for item in line[len("metalcall compile times: "):].split(", "):
            words = item.split()
            if len(words) >= 3 and words[2] == "ms":
                key = "  compile: " + words[0]
                phases[key] = phases.get(key, 0.0) + float(words[1]) / 1e3
    return phases, wall


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--device", default="cuda", help="cpu: the probe alone, no CuPy (to try the script)")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--json", help="append the samples here as JSON")
    args = ap.parse_args()
    try:
        import cupy  # noqa: F401
        have_cupy = args.device.startswith("cuda")
    except ImportError:
        have_cupy = False
    samples: dict[str, dict[str, list[float]]] = {}
    for _ in range(args.repeats):  # the candidates take turns
        for label, source in KERNELS.items():
            with tempfile.TemporaryDirectory(prefix="metalcall-phases-") as cache:
                phases, wall = run(_PROBE.format(source=source, device=args.device), {"METALCALL_CACHE_DIR": cache})
            for k, v in list(phases.items()) + [("whole process", wall)]:
                samples.setdefault(f"metalcall, {label}", {}).setdefault(k, []).append(v)
        if have_cupy:
            with tempfile.TemporaryDirectory(prefix="cupy-phases-") as cache:
                phases, wall = run(_CUPY_PROBE.format(source=CUDA_MUL), {"CUPY_CACHE_DIR": cache, "CUPY_CACHE_IN_MEMORY": "1"})
            for k, v in list(phases.items()) + [("whole process", wall)]:
                samples.setdefault("CuPy RawKernel, mul", {}).setdefault(k, []).append(v)
    print(f"cold compile phases, new process and empty cache each; load {os.getloadavg()[0]:.1f}")
    print("| candidate | phase | median | min | max | n |\n|---|---|---|---|---|---|")
    for who, phases in samples.items():
        for phase, v in phases.items():
            print(f"| {who} | {phase} | {statistics.median(v) * 1e3:.2f} ms | {min(v) * 1e3:.2f} ms | "
                  f"{max(v) * 1e3:.2f} ms | {len(v)} |")
    if args.json:
        with open(args.json, "a") as f:
            for who, phases in samples.items():
                for phase, v in phases.items():
                    f.write(json.dumps({"kind": "phase", "who": who, "phase": phase, "seconds": v}) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
