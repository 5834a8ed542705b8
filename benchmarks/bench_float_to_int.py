"""What MSL's float-to-integer conversions cost on the CPU device (docs/design.md, "Known limits of
the CPU backend": a NaN gives 0 and out-of-range values saturate, where x86 gives INT_MIN; the
translation hands each conversion to metal_conversion.h's int_arg).

Three kernels over 2^20 floats: an explicit `int(x[i] * 3.0f)`, an implicit `int v = x[i] *
3.0f`, and a vector `uint4(x[i] * 3.0f)` over float4s; and `as_type<int>`, which converts nothing,
for scale. Each is built twice in one process, as translated and with
defines={"METALCALL_FLOAT_TO_INT_CONVERSIONS": "0"} (a prelude option for this measurement:
int_arg passes its argument on, x86's conversions again), and the two are timed in turn, so the
ratio compares like with like on a loaded machine.

    python benchmarks/bench_float_to_int.py [--repeats 41] [--calls 20] [--precise] [--cpu-time]

Every result is checked against NumPy first (the inputs are in range, so both builds agree).
Times: the median over the repeats of one call and its wait, averaged over --calls calls.
--cpu-time: the process's CPU time instead (the device's worker threads are the process's), which
other work on the machine disturbs less than wall time.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import metalcall as mc

SOURCE = """
#include <metal_stdlib>
using namespace metal;
kernel void explicit_int(const device float* x [[buffer(0)]], device int* y [[buffer(1)]],
                         uint i [[thread_position_in_grid]]) { y[i] = int(x[i] * 3.0f); }
kernel void implicit_int(const device float* x [[buffer(0)]], device int* y [[buffer(1)]],
                         uint i [[thread_position_in_grid]]) { int v = x[i] * 3.0f; y[i] = v; }
kernel void float4_to_uint4(const device float4* x [[buffer(0)]], device uint4* y [[buffer(1)]],
                         uint i [[thread_position_in_grid]]) { y[i] = uint4(x[i] * 3.0f); }
kernel void bits_only(const device float* x [[buffer(0)]], device int* y [[buffer(1)]],
                      uint i [[thread_position_in_grid]]) { y[i] = as_type<int>(x[i] * 3.0f); }
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=41)
    ap.add_argument("--calls", type=int, default=20)
    ap.add_argument("--precise", action="store_true", help="fast_math=False")
    ap.add_argument("--cpu-time", action="store_true", help="process CPU time instead of wall time")
    args = ap.parse_args()
    clock = time.process_time if args.cpu_time else time.perf_counter

    dev = mc.Device("cpu")
    n = 1 << 20
    xh = (np.random.default_rng(1).random(n, dtype=np.float32) * 80).astype(np.float32)
    x = dev.asarray(xh)
    y = dev.empty(n, np.int32)
    yu = dev.empty(n, np.uint32)
    builds = {
        "MSL's (int_arg)": dev.compile(SOURCE, fast_math=not args.precise),
        "x86's": dev.compile(SOURCE, fast_math=not args.precise,
                             defines={"METALCALL_FLOAT_TO_INT_CONVERSIONS": "0"}),
    }
    expected = np.trunc(xh * np.float32(3))
    kernels = {
        "y[i] = int(x[i] * 3.0f)": ("explicit_int", n, y, np.int32),
        "int v = x[i] * 3.0f": ("implicit_int", n, y, np.int32),
        "y[i] = uint4(x4[i] * 3.0f)": ("float4_to_uint4", n // 4, yu, np.uint32),
        "as_type<int> (no conversion)": ("bits_only", n, y, None),
    }
    for lib in builds.values():
        for name, grid, out, dtype in kernels.values():
            getattr(lib, name)(grid, x, out).wait()
            if dtype is not None:
                assert np.array_equal(np.asarray(out), expected.astype(dtype)), name

    times = {(b, k): [] for b in builds for k in kernels}
    for _ in range(args.repeats):
        for k, (name, grid, out, _) in kernels.items():
            for b, lib in builds.items():
                fn = getattr(lib, name)
                for _ in range(3):
                    fn(grid, x, out).wait()
                t = clock()
                for _ in range(args.calls):
                    fn(grid, x, out).wait()
                times[(b, k)].append((clock() - t) / args.calls * 1e6)
    what = "CPU time" if args.cpu_time else "wall time"
    print(f"2^20 floats, {'precise' if args.precise else 'fast math'}, median {what} of a call and its wait (µs)")
    names = list(builds)
    print(f"{'kernel':32s} {names[1]:>10s} {names[0]:>16s} {'ratio':>7s}")
    for k in kernels:
        before = statistics.median(times[(names[1], k)])
        after = statistics.median(times[(names[0], k)])
        print(f"{k:32s} {before:10.1f} {after:16.1f} {after / before:7.2f}")


if __name__ == "__main__":
    main()
