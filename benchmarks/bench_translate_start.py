"""A process's first MSL translation, without a GPU: the CPU time (user + system) of whole
`translate_main --target cuda` processes (cpp/tests/translate/run.sh builds it) translating
`c = a * b`, for one or more builds taking turns (say, two commits' builds: what a cold compile's
translate phase pays once per process, such as the standard library's names, shows as the
difference).

    python benchmarks/bench_translate_start.py TRANSLATE_MAIN... [--repeats 20]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile

MUL = """
#include <metal_stdlib>
using namespace metal;
kernel void mul(const device float* a [[buffer(0)]], const device float* b [[buffer(1)]],
                device float* c [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    c[i] = a[i] * b[i];
}
"""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("translate_main", nargs="+")
    ap.add_argument("--repeats", type=int, default=20)
    args = ap.parse_args()
    samples: dict[str, list[float]] = {b: [] for b in args.translate_main}
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "mul.metal")
        with open(src, "w") as f:
            f.write(MUL)
        for _ in range(args.repeats):
            for binary in args.translate_main:  # the builds take turns
                before = resource.getrusage(resource.RUSAGE_CHILDREN)
                out = subprocess.run([binary, "--target", "cuda", src], capture_output=True, text=True)
                after = resource.getrusage(resource.RUSAGE_CHILDREN)
                if out.returncode != 0 or "mul" not in out.stdout:
                    raise SystemExit(f"{binary} did not translate the kernel:\n{out.stderr[-2000:]}")
                samples[binary].append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    print(f"translate_main --target cuda, c = a * b, CPU time of the process; load {os.getloadavg()[0]:.1f}")
    print("| build | median | min | max | n |\n|---|---|---|---|---|")
    for binary, v in samples.items():
        print(f"| {binary} | {statistics.median(v) * 1e3:.1f} ms | {min(v) * 1e3:.1f} ms | {max(v) * 1e3:.1f} ms | {len(v)} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
