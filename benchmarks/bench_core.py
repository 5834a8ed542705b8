"""Core benchmarks of metalcall against NumPy, side by side in one run.

    python benchmarks/bench_core.py [--device cpu] [--quick]
    python benchmarks/bench_core.py --cpu-sweep [--quick]   (CPU mid-size calls vs numba: bench_cpu_calls.py)

(a) per-call overhead of a 1-element kernel, (b) c = a * b throughput at 1e6-1e8
elements with a copy roofline, (c) seed 000's compute-heavy kernel in GFLOP/s,
(d) compile overhead: cold, warm disk cache, in-memory cache. Results are
checked before they are timed; times are the minimum over repeats.
"""

import argparse
import sys

import metalcall as mc
from metalcall import _bench

FULL = {"repeats": 5, "call_seconds": 0.2, "sizes": [10**6, 10**7, 10**8], "heavy_elements": 1 << 20,
        "compile_repeats": 3}
QUICK = {"repeats": 2, "call_seconds": 0.01, "sizes": [10**5, 10**6], "heavy_elements": 1 << 12,
         "compile_repeats": 1}

TARGET_CALL_RATIO = 2.0  # a waited 1-element call within 2x of a NumPy ufunc call
TARGET_BANDWIDTH_RATIO = 2.0  # c = a * b at the largest size, x NumPy's GB/s
TARGET_HEAVY_RATIO = 20.0  # compute-heavy kernel, x NumPy's GFLOP/s


def targets(calls: dict, bandwidth: dict, heavy: dict) -> _bench.Table:
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
    except _bench.CheckFailed as e:
        print(f"FAILED: {e}", file=sys.stderr)
        return 1
    show(targets(calls, bandwidth, heavy))
    return 0


if __name__ == "__main__":
    sys.exit(main())
