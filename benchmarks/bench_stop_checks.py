"""What stopping kernels costs (docs/design.md, "Stopping kernels"): the benchmarks the issue
names, c = a * b and seed 000's compute-heavy FMA kernel, each as written (no loop: the
translator adds no check, so what changes is the runtime's per-call bookkeeping) and as a loop
(the heavy recurrence as a loop of its blocks; c = a * b as a grid-stride loop, every thread
walking a slice), and the waited 1-element call.

Each loop kernel is built twice in one process, with its stop checks and without them
(defines={"METALCALL_LOOP_STOP_CHECKS": "0"}, a prelude option for this measurement: the
translator then leaves the loops as written, with neither strips nor checks), and the
two are timed in turn, so the ratio compares like with like on a loaded machine. What the
runtime's bookkeeping costs needs two builds (before and after): run the script with each, in
turn, and compare the medians.

    python benchmarks/bench_stop_checks.py [--device cpu] [--repeats 15] [--cpu-time]

Every result is checked against NumPy before it is timed; times are device-clock medians
(Completion.gpu_time) over the repeats, each repeat the minimum of a few calls. --cpu-time (CPU
device): the process's CPU time of each call and its wait instead, which a loaded machine's
preemptions leave alone (its workers waiting for a core count as wall time, not CPU time: on a
2-vCPU VM at load 17, 2^22 took 32-36 ms of wall time and 8-9 ms of CPU time), so a few
percent show through the load.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import numpy as np

import metalcall as mc
from metalcall import _bench

LOOP_SOURCE = """
#include <metal_stdlib>
using namespace metal;
kernel void heavy_loop(const device float *A [[buffer(0)]], const device float *B [[buffer(1)]],
                       device float *C [[buffer(2)]], constant uint& blocks [[buffer(3)]],
                       uint id [[thread_position_in_grid]]) {
    float Ai = A[id];
    float Bi = B[id];
    float D = Ai;
    float E = Bi;
    float F = Ai + Bi;
    float G = Ai - Bi;
    for (uint k = 0; k < blocks; ++k) {
        D += Ai * G;
        E += Bi * F;
        F += Ai * E;
        G += Bi * D;
    }
    C[id] = D + E + F + G;
}
kernel void mul_loop(const device float* a [[buffer(0)]], const device float* b [[buffer(1)]],
                     device float* c [[buffer(2)]], constant uint& n [[buffer(3)]],
                     uint i [[thread_position_in_grid]], uint threads [[threads_per_grid]]) {
    for (uint k = i; k < n; k += threads) c[k] = a[k] * b[k];
}
"""
NO_CHECKS = {"METALCALL_LOOP_STOP_CHECKS": "0"}


CPU_TIME = False  # --cpu-time: the process's CPU time per call instead of the device clock


def device_seconds(call, calls: int = 3) -> float:
    """The least device time (or CPU time, --cpu-time) of a few calls (the first one warms)."""
    call().wait()
    best = float("inf")
    for _ in range(calls):
        start = time.process_time()
        h = call()
        h.wait()
        seconds = time.process_time() - start if CPU_TIME else h.gpu_time
        best = min(best, seconds if seconds == seconds else float("inf"))
    return best


def median_of(call, repeats: int) -> float:
    return statistics.median(device_seconds(call) for _ in range(repeats))


def medians_in_turn(calls, repeats: int) -> list[float]:
    """The median device time of each call, timed in turn (A, B, A, B, ...) so that a change of
    the machine's load falls on both."""
    samples = [[] for _ in calls]
    for _ in range(repeats):
        for s, call in zip(samples, calls):
            s.append(device_seconds(call))
    return [statistics.median(s) for s in samples]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--json", help="write the numbers here")
    parser.add_argument("--cpu-time", action="store_true", help="time calls by the process's CPU time (CPU device)")
    args = parser.parse_args()
    global CPU_TIME
    CPU_TIME = args.cpu_time
    dev = mc.Device(args.device, timing=True) if args.device.startswith("cuda") else mc.Device(args.device)
    results = {"device": dev.name, "metalcall": mc.__version__, "clock": "process CPU time" if CPU_TIME else "device"}

    mul = dev.compile(_bench.MUL_SOURCE).mul
    checked, unchecked = dev.compile(LOOP_SOURCE), dev.compile(LOOP_SOURCE, defines=NO_CHECKS)
    for n in (1 << 16, 1 << 22):
        a, b = dev.asarray(np.random.rand(n).astype(np.float32)), dev.asarray(np.random.rand(n).astype(np.float32))
        c = dev.empty(n, np.float32)
        want = np.asarray(a) * np.asarray(b)
        mul(n, a, b, c).wait()
        assert np.array_equal(np.asarray(c), want)
        seconds = median_of(lambda: mul(n, a, b, c), args.repeats)
        results[f"c=a*b 2^{n.bit_length() - 1} GB/s"] = 12 * n / seconds / 1e9
        # The loop form: 4 elements per thread.
        threads, count = n // 4, np.uint32(n)
        calls = []
        for lib in (checked, unchecked):
            c.numpy()[:] = 0
            lib.mul_loop(threads, a, b, c, count).wait()
            assert np.array_equal(np.asarray(c), want)
            calls.append(lambda lib=lib: lib.mul_loop(threads, a, b, c, count))
        with_checks, without = medians_in_turn(calls, args.repeats)
        results[f"c=a*b 2^{n.bit_length() - 1} as a loop GB/s"] = 12 * n / with_checks / 1e9
        results[f"c=a*b 2^{n.bit_length() - 1} as a loop, no checks GB/s"] = 12 * n / without / 1e9
        results[f"c=a*b 2^{n.bit_length() - 1} as a loop: checks cost %"] = (with_checks / without - 1) * 100

    n = 1 << 16
    a, b = _bench._random(n, 1), -_bench._random(n, 2)
    want = np.empty(n, np.float32)
    _bench.numpy_heavy(a, b, want)
    A, B, C = dev.asarray(a), dev.asarray(b), dev.empty(n, np.float32)
    scale = float(np.abs(want).max())
    heavy = dev.compile(_bench.HEAVY_SOURCE).heavy
    blocks = np.uint32(_bench.HEAVY_BLOCKS)

    def check(call, name):
        C.numpy()[:] = 0
        call().wait()
        assert np.allclose(np.asarray(C), want, rtol=_bench.HEAVY_RTOL, atol=_bench.HEAVY_RTOL * scale), name

    flops = _bench.HEAVY_FLOPS_PER_ELEMENT * n
    check(lambda: heavy(n, A, B, C), "heavy")
    results["heavy (unrolled) GFLOP/s"] = flops / median_of(lambda: heavy(n, A, B, C), args.repeats) / 1e9
    calls = [lambda lib=lib: lib.heavy_loop(n, A, B, C, blocks) for lib in (checked, unchecked)]
    for call in calls:
        check(call, "heavy as a loop")
    with_checks, without = medians_in_turn(calls, args.repeats)
    results["heavy as a loop GFLOP/s"] = flops / with_checks / 1e9
    results["heavy as a loop, no checks GFLOP/s"] = flops / without / 1e9
    results["heavy as a loop: checks cost %"] = (with_checks / without - 1) * 100

    one_a, one_b, one_c = dev.asarray(np.ones(1, np.float32)), dev.asarray(np.ones(1, np.float32)), dev.empty(1, np.float32)
    samples = []
    for _ in range(args.repeats):
        start = time.perf_counter()
        for _ in range(2000):
            mul(1, one_a, one_b, one_c).wait()
        samples.append((time.perf_counter() - start) / 2000)
    results["waited 1-element call us"] = statistics.median(samples) * 1e6

    width = max(len(k) for k in results)
    for key, value in results.items():
        print(f"{key:<{width}}  {value:.2f}" if isinstance(value, float) else f"{key:<{width}}  {value}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
