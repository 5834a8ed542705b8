"""Core benchmarks of metalcall against NumPy, side by side in one run.

    python benchmarks/bench_core.py [--device cpu] [--quick]
    python benchmarks/bench_core.py --cpu-sweep [--quick]   (CPU mid-size calls vs numba: bench_cpu_calls.py)

(a) per-call overhead of a 1-element kernel, (b) c = a * b throughput at 1e6-1e8
elements with a copy roofline, (c) seed 000's compute-heavy kernel in GFLOP/s,
(d) compile overhead: cold, warm disk cache, in-memory cache, and (e) compile
latency: the in-memory hit for a small and a 30 KB source, and a new process with
a warm disk cache (Device + compile + kernel lookup) for a small source, one that
needs the preprocessor and the 30 KB one. Results are checked before they are
timed; times are the minimum over repeats.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

import metalcall as mc
from metalcall import _bench

FULL = {"repeats": 5, "call_seconds": 0.2, "sizes": [10**6, 10**7, 10**8], "heavy_elements": 1 << 20,
        "compile_repeats": 3, "latency_repeats": 7, "latency_large": True}
QUICK = {"repeats": 2, "call_seconds": 0.01, "sizes": [10**5, 10**6], "heavy_elements": 1 << 12,
         "compile_repeats": 1, "latency_repeats": 2, "latency_large": False}  # a cold 30 KB build takes seconds

TARGET_CALL_RATIO = 2.0  # a waited 1-element call within 2x of a NumPy ufunc call
TARGET_BANDWIDTH_RATIO = 2.0  # c = a * b at the largest size, x NumPy's GB/s
TARGET_HEAVY_RATIO = 20.0  # compute-heavy kernel, x NumPy's GFLOP/s
TARGET_HIT_SMALL_US = 2.0  # dev.compile(src) served from memory, small source
TARGET_HIT_LARGE_US = 5.0  # ... a 30 KB source
TARGET_WARM_PROCESS_MS = 5.0  # new process, warm disk cache: Device + compile + kernel lookup

LATENCY_HEAD = "#include <metal_stdlib>\nusing namespace metal;\n"
LATENCY_DEFINE = LATENCY_HEAD + """#define SCALE 3.0f
kernel void mul(const device float* a [[buffer(0)]], const device float* b [[buffer(1)]],
                device float* c [[buffer(2)]], uint i [[thread_position_in_grid]]) { c[i] = a[i] * b[i] * SCALE; }
"""


def large_source(size: int = 30_000) -> str:
    """About `size` bytes of MSL as many distinct kernels (k0, k1, ...)."""
    parts, length, i = [LATENCY_HEAD], len(LATENCY_HEAD), 0
    while length < size:
        parts.append(f"kernel void k{i}(const device float* a [[buffer(0)]], device float* c [[buffer(1)]],\n"
                     f"                 uint i [[thread_position_in_grid]]) {{ c[i] = a[i] * {i}.0f + {i % 7}.5f; }}\n")
        length += len(parts[-1])
        i += 1
    return "".join(parts)


# Run in a new process: the time of each step from a warm disk cache, then the
# best in-memory hit of dev.compile(src). argv: device spec, source, kernel name, repeats.
LATENCY_PROBE = """
import json, sys, time, timeit
spec, source, name, repeats = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
t0 = time.perf_counter()
import metalcall as mc
from metalcall import _bench
t1 = time.perf_counter()
dev = _bench.open_device(spec or None)
t2 = time.perf_counter()
lib = dev.compile(source)
t3 = time.perf_counter()
lib.function(name)
t4 = time.perf_counter()
timer = timeit.Timer(lambda: dev.compile(source))
number = 2000
hit = min(timer.repeat(repeats, number)) / number
print(json.dumps({"import": t1 - t0, "device": t2 - t1, "compile": t3 - t2, "kernel": t4 - t3, "hit": hit}))
"""


def _latency_probe(spec: str | None, cache_dir: str, source: str, name: str, repeats: int) -> dict:
    env = dict(os.environ, METALCALL_CACHE_DIR=cache_dir)
    argv = [sys.executable, "-c", LATENCY_PROBE, spec or "", source, name, str(repeats)]
    result = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise _bench.CheckFailed("the compile latency probe failed:\n" + result.stderr)
    return json.loads(result.stdout)


def compile_latency(spec: str | None, repeats: int, large: bool) -> tuple[_bench.Table, dict]:
    """The in-memory hit and a new process with a warm disk cache, by source.

    The numbers: {source: {"hit": s, "warm": s (Device + compile + kernel), ...}}.
    """
    sources = {"small": (_bench.MUL_SOURCE, "mul"), "#define": (LATENCY_DEFINE, "mul")}
    if large:
        sources["30 KB, many kernels"] = (large_source(), "k0")
    numbers = {}
    with tempfile.TemporaryDirectory(prefix="metalcall-bench-") as cache_dir:
        for label, (source, name) in sources.items():
            _latency_probe(spec, cache_dir, source, name, 1)  # cold: fills the disk cache
            runs = [_latency_probe(spec, cache_dir, source, name, repeats) for _ in range(repeats)]
            best = {key: min(r[key] for r in runs) for key in runs[0]}
            best["warm"] = min(r["device"] + r["compile"] + r["kernel"] for r in runs)
            numbers[label] = best
    rows = [[label, f"{len(sources[label][0]) / 1e3:.1f} KB", f"{n['hit'] * 1e6:.2f} µs", f"{n['warm'] * 1e3:.2f} ms",
             f"{n['import'] * 1e3:.0f} ms", f"{n['device'] * 1e3:.2f} ms", f"{n['compile'] * 1e3:.2f} ms",
             f"{n['kernel'] * 1e3:.3f} ms"] for label, n in numbers.items()]
    columns = ["source", "size", "in-memory hit", "new process, warm disk", "(import)", "Device", "compile", "kernel"]
    return _bench.Table("Compile latency (best of repeats; warm = Device + compile + kernel lookup)", columns,
                        rows), numbers


def targets(calls: dict, bandwidth: dict, heavy: dict, latency: dict) -> _bench.Table:
    largest = max(bandwidth)
    call_ratio = calls["waited, Buffer args"] / calls["numpy"]
    bandwidth_ratio = bandwidth[largest]["buffer"] / bandwidth[largest]["numpy"]
    heavy_ratio = heavy["kernel"] / heavy["numpy"]
    checks = [
        ("1-element waited call (Buffer args), time / NumPy", "<=", TARGET_CALL_RATIO, call_ratio,
         call_ratio <= TARGET_CALL_RATIO),
        (f"c = a * b at {largest:.0e} (Buffer args), x NumPy GB/s", ">=", TARGET_BANDWIDTH_RATIO, bandwidth_ratio,
         bandwidth_ratio >= TARGET_BANDWIDTH_RATIO),
        ("compute-heavy kernel, x NumPy GFLOP/s", ">=", TARGET_HEAVY_RATIO, heavy_ratio,
         heavy_ratio >= TARGET_HEAVY_RATIO),
    ]
    small_hit, small_warm = latency["small"]["hit"] * 1e6, latency["small"]["warm"] * 1e3
    checks += [
        ("in-memory compile hit, small source, µs", "<=", TARGET_HIT_SMALL_US, small_hit,
         small_hit <= TARGET_HIT_SMALL_US),
        ("new process, warm disk cache, small source, ms", "<=", TARGET_WARM_PROCESS_MS, small_warm,
         small_warm <= TARGET_WARM_PROCESS_MS),
    ]
    if "30 KB, many kernels" in latency:
        large_hit = latency["30 KB, many kernels"]["hit"] * 1e6
        checks.append(("in-memory compile hit, 30 KB source, µs", "<=", TARGET_HIT_LARGE_US, large_hit,
                       large_hit <= TARGET_HIT_LARGE_US))
    rows = [[name, f"{op} {goal:g}", f"{value:.2f}", "yes" if met else "no"] for name, op, goal, value, met in checks]
    return _bench.Table("Targets", ["target", "goal", "measured", "met"], rows)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", help="device name or index (default: mc.Device())")
    parser.add_argument("--quick", action="store_true", help="small sizes and few repeats (CI smoke run, < 20 s)")
    parser.add_argument("--plain", action="store_true", help="plain-text tables even when rich is installed")
    parser.add_argument("--cpu-sweep", action="store_true",
                        help="only the CPU sweep of bench_cpu_calls.py: c = a * b at 1e5-1e8 against numba and NumPy")
    args = parser.parse_args()
    if args.cpu_sweep:
        import bench_cpu_calls  # beside this script

        return bench_cpu_calls.run_sweep(args.device, args.quick, args.plain)
    config = QUICK if args.quick else FULL

    try:
        dev = _bench.open_device(args.device)
    except mc.DeviceError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"device: {dev.name} ({dev.backend}:{dev.index})", flush=True)

    def show(table: _bench.Table) -> None:
        _bench.render([table], plain=args.plain)
        sys.stdout.flush()

    try:
        table, calls = _bench.call_overhead(dev, config["repeats"], config["call_seconds"])
        show(table)
        table, bandwidth = _bench.multiply_bandwidth(dev, config["sizes"], config["repeats"])
        show(table)
        show(_bench.copy_roofline(dev, max(config["sizes"]), config["repeats"]))
        table, heavy = _bench.compute_heavy(dev, config["heavy_elements"], config["repeats"])
        show(table)
        show(_bench.compile_overhead(args.device, config["compile_repeats"]))
        table, latency = compile_latency(args.device, config["latency_repeats"], config["latency_large"])
        show(table)
    except _bench.CheckFailed as e:
        print(f"FAILED: {e}", file=sys.stderr)
        return 1
    show(targets(calls, bandwidth, heavy, latency))
    return 0


if __name__ == "__main__":
    sys.exit(main())
