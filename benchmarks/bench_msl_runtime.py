"""Costs of the CPU backend's MSL runtime, measured through real kernels:

- cold compile of a small kernel (fresh cache, new process) and warm disk-cache load;
- threadgroup_barrier per barrier per thread (fibers), from kernels with 0 and K barriers;
- simd_sum per call per thread.

Usage: python benchmarks/bench_msl_runtime.py [--device cpu]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

import metalcall as mc

BARRIER_SRC = """
#include <metal_stdlib>
using namespace metal;
kernel void barriers(device float* out [[buffer(0)]], constant uint& rounds [[buffer(1)]],
                     uint gid [[thread_position_in_grid]], uint lid [[thread_position_in_threadgroup]],
                     uint n [[threads_per_threadgroup]]) {
    threadgroup float tmp[1024];
    float acc = float(lid);
    for (uint r = 0; r < rounds; ++r) {
        tmp[lid] = acc;
        threadgroup_barrier(mem_flags::mem_threadgroup);
        acc += tmp[(lid + 1) % n];
        threadgroup_barrier(mem_flags::mem_threadgroup);  // all have read before the next write
    }
    out[gid] = acc;
}
kernel void simd_sums(device float* out [[buffer(0)]], constant uint& rounds [[buffer(1)]],
                      uint gid [[thread_position_in_grid]]) {
    float acc = 1.0f;
    for (uint r = 0; r < rounds; ++r) acc = simd_sum(acc) * (1.0f / 32.0f);
    out[gid] = acc;
}
"""

COLD_SRC = """
#include <metal_stdlib>
using namespace metal;
kernel void saxpy(const device float4* x [[buffer(0)]], device float4* y [[buffer(1)]],
                  constant float& a [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    y[i] = a * x[i] + y[i];
}
"""

CHILD = """
import sys, time, metalcall as mc
dev = mc.Device(sys.argv[1])
t = time.perf_counter()
dev.compile(sys.argv[2])
print(time.perf_counter() - t)
"""


def compile_seconds(device: str, cache: str) -> float:
    env = dict(os.environ, METALCALL_CACHE_DIR=cache)
    out = subprocess.run([sys.executable, "-c", CHILD, device, COLD_SRC], env=env, capture_output=True, text=True,
                         check=True)
    return float(out.stdout.strip())


def best_time(call, repeat: int = 5) -> float:
    call()
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        call()
        best = min(best, time.perf_counter() - t)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    dev = mc.Device(args.device)
    print(f"device: {dev.name}")

    with tempfile.TemporaryDirectory() as cache:
        cold = min(compile_seconds(args.device, tempfile.mkdtemp(dir=cache)) for _ in range(3))
        compile_seconds(args.device, cache)
        warm = min(compile_seconds(args.device, cache) for _ in range(3))
    print(f"compile, small kernel: cold {cold * 1e3:.0f} ms, warm disk cache {warm * 1e3:.1f} ms (new process)")

    lib = dev.compile(BARRIER_SRC)
    group, groups, rounds = 256, 64, 2000
    n = group * groups
    out = dev.empty(n, np.float32)
    t0 = best_time(lambda: lib.barriers(n, out, 0, threadgroup=group).wait())
    tk = best_time(lambda: lib.barriers(n, out, rounds, threadgroup=group).wait())
    workers = os.cpu_count() or 1
    per = (tk - t0) / (2 * rounds * n) * min(workers, groups)
    print(f"threadgroup_barrier: {per * 1e9:.1f} ns per barrier per thread "
          f"({group} threads per group, {2 * rounds} barriers, {workers} workers; includes the loop's own work)")
    # Check the values once: every thread's accumulator follows the same recurrence.
    lib.barriers(n, out, 3, threadgroup=group).wait()
    acc = np.tile(np.arange(group, dtype=np.float64), groups).reshape(groups, group)
    for _ in range(3):
        acc = acc + np.roll(acc, -1, axis=1)
    np.testing.assert_allclose(np.asarray(out).reshape(groups, group), acc, rtol=1e-5)

    t0 = best_time(lambda: lib.simd_sums(n, out, 0, threadgroup=group).wait())
    tk = best_time(lambda: lib.simd_sums(n, out, 200, threadgroup=group).wait())
    per = (tk - t0) / (200 * n) * min(workers, groups)
    print(f"simd_sum: {per * 1e9:.1f} ns per call per thread")
    np.testing.assert_allclose(np.asarray(out), 1.0, rtol=1e-5)


if __name__ == "__main__":
    main()
