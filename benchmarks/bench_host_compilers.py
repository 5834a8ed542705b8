"""The CPU backend with each C++ compiler this machine has, zig's clang (the `zig` extra)
included: cold compile time of a small kernel and of the compute-heavy FMA kernel (a new process
with an empty cache), the FMA kernel's GFLOP/s and c = a * b GB/s at 2^20 and 2^24 float32. Each
compiler runs in its own process (METALCALL_CXX); every result is checked against NumPy first.

    python benchmarks/bench_host_compilers.py [--compilers clang++-16,g++,zig] [--repeat 20]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

PROBE = r"""
import json, sys, time, numpy as np, metalcall as mc
from metalcall import _bench
repeat = int(sys.argv[1])
dev = mc.Device("cpu")
t = time.perf_counter(); mul = dev.compile(_bench.MUL_SOURCE).mul; small = time.perf_counter() - t
t = time.perf_counter(); heavy = dev.compile(_bench.HEAVY_SOURCE).heavy; big = time.perf_counter() - t
out = {"compile_small_s": small, "compile_heavy_s": big}
n = 1 << 16
a, b = _bench._random(n, 1), -_bench._random(n, 2)
A, B, C = dev.asarray(a), dev.asarray(b), dev.empty(n, np.float32)
r = heavy.benchmark(n, A, B, C, repeat=repeat, warmup=2, flops=_bench.HEAVY_FLOPS_PER_ELEMENT * n)
want = np.empty(1 << 12, np.float32); _bench.numpy_heavy(a[:1 << 12], b[:1 << 12], want)
assert np.allclose(np.asarray(C)[:1 << 12], want, rtol=_bench.HEAVY_RTOL, atol=_bench.HEAVY_RTOL * float(np.abs(want).max()))
out["fma_gflops"] = r.gflops
for e in (20, 24):
    n = 1 << e
    x, y = dev.asarray(_bench._random(n, 3)), dev.asarray(_bench._random(n, 4))
    z = dev.empty(n, np.float32)
    r = mul.benchmark(n, x, y, z, repeat=repeat, warmup=2, bytes=12 * n)
    assert np.array_equal(np.asarray(z), np.asarray(x) * np.asarray(y))
    out[f"mul_2^{e}_gbps"] = r.gbps
print(json.dumps(out))
"""


def default_compilers() -> list[str]:
    names = [n for n in ("clang++-16", "clang++", "g++") if shutil.which(n)]
    from metalcall import _zig
    if _zig.zig_binary():
        names.append("zig")
    return names


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--compilers", help="comma-separated METALCALL_CXX values (default: those found, and zig)")
    p.add_argument("--repeat", type=int, default=20)
    p.add_argument("--json", metavar="PATH")
    args = p.parse_args()
    compilers = args.compilers.split(",") if args.compilers else default_compilers()
    rows = {}
    for cxx in compilers:
        with tempfile.TemporaryDirectory(prefix="metalcall-cxx-") as cache:
            env = dict(os.environ, METALCALL_CXX=cxx, METALCALL_CACHE_DIR=cache)
            proc = subprocess.run([sys.executable, "-c", PROBE, str(args.repeat)], env=env, capture_output=True,
                                  text=True, timeout=1800)
        if proc.returncode != 0:
            print(f"{cxx}: failed\n{proc.stderr[-2000:]}", file=sys.stderr)
            return 1
        rows[cxx] = json.loads(proc.stdout.strip().splitlines()[-1])
    print(f"{'compiler':<12} {'cold small':>11} {'cold FMA':>10} {'FMA GFLOP/s':>12} {'mul 2^20 GB/s':>14} {'mul 2^24 GB/s':>14}")
    for cxx, r in rows.items():
        print(f"{cxx:<12} {r['compile_small_s'] * 1e3:>9.0f}ms {r['compile_heavy_s']:>9.2f}s {r['fma_gflops']:>12.1f} "
              f"{r['mul_2^20_gbps']:>14.1f} {r['mul_2^24_gbps']:>14.1f}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
