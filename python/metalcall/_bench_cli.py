"""`python -m metalcall bench`: the standard suite, or a user's kernel with --arg specs; tables
(rich when installed), --json, --plot, --compare, --devices all. Exit status: 0 ok, 1 a result
disagreed with NumPy, 2 bad usage (a bad spec, an unknown device or kernel, a missing extra).
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import os
import platform
import sys
from typing import Any, Callable, Iterator, Optional

import numpy as np

import metalcall as mc
from metalcall import _bench, _bench_args, _bench_peers, _bench_suite
from metalcall.benchmark import format_seconds

SCHEMA = "metalcall-bench/1"
EXTRA_HINT = "(plain output: pip install 'metalcall[bench]' for rich tables, a progress bar and --plot)"


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m metalcall bench",
        description="Benchmark metalcall: with no FILE the standard suite (dispatch latency, copy and c = a * b "
                    "bandwidth over sizes, a compute-heavy FMA kernel, compile times); with FILE.metal one of "
                    "your kernels. Every kernel's result is checked against NumPy.",
        epilog=_bench_args.__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("file", nargs="?", metavar="FILE.metal", help="MSL source with the kernel to benchmark")
    p.add_argument("--kernel", help="the kernel's name in FILE (needed when FILE has several)")
    p.add_argument("--grid", help="grid in threads: N[,M[,K]] (FILE mode; default: the first buffer's length)")
    p.add_argument("--threadgroup", help="threadgroup size N[,M[,K]] (FILE mode; default: automatic)")
    p.add_argument("--arg", action="append", default=[], metavar="SPEC",
                   help="one kernel argument, in [[buffer(i)]] order: f32[1e6]:rand, out:f32[1e6], u32:7, ...")
    p.add_argument("--bytes", help="bytes one call moves, for GB/s (FILE mode)")
    p.add_argument("--flops", help="floating-point operations one call does, for GFLOP/s (FILE mode)")
    p.add_argument("--repeat", type=int, default=100, help="timed calls (FILE mode; default 100)")
    p.add_argument("--warmup", type=int, default=10, help="untimed calls first (FILE mode; default 10)")
    p.add_argument("--save", metavar="PATH.npz", help="FILE mode: write every buffer argument after the run")
    p.add_argument("--device", help="device spec or index (default: mc.Device())")
    p.add_argument("--devices", choices=["all"], help="'all': run on each device in turn")
    p.add_argument("--scheduler", metavar="ADDRESS", help="run the standard suite on every worker of this Dask "
                                                          "scheduler (each worker's default device, one worker "
                                                          "at a time) and print one table (needs dask.distributed)")
    p.add_argument("--quick", action="store_true", help="CI-sized: sizes up to 2^18, short timings")
    p.add_argument("--max-size", help="largest sweep size in elements (default 2^24 on the CPU, 2^28 on GPUs, "
                                      "and what memory allows)")
    p.add_argument("--compare", action="store_true", help="also time NumPy, and numba/torch/CuPy where installed")
    p.add_argument("--json", metavar="PATH", help="write every figure, the machine and the versions as JSON")
    p.add_argument("--plot", metavar="PATH.png", help="write bandwidth-vs-size and latency plots (needs matplotlib)")
    p.add_argument("--html", metavar="PATH.html", help="write one self-contained page of the run: machine, tables "
                                                       "and (for the suite) the plot inline (needs matplotlib)")
    p.add_argument("--plain", action="store_true", help="plain text even when rich is installed")
    return p


def main(argv: Optional[list[str]] = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    for option, value in (("--plot", args.plot), ("--html", args.html)):
        if value and not _has("matplotlib"):
            parser.error(f"{option} needs matplotlib: pip install 'metalcall[bench]' (or pip install matplotlib)")
    if args.device and args.devices:
        parser.error("give --device or --devices all, not both")
    if args.file is None and (args.arg or args.kernel or args.grid):
        parser.error("--kernel, --grid and --arg go with a FILE.metal")
    if args.scheduler:
        if args.file or args.device or args.devices or args.compare or args.plot or args.html:
            parser.error("--scheduler runs the standard suite on the workers' own devices: give it alone "
                         "(with --quick, --max-size, --json or --plain)")
        return run_cluster(parser, args)
    plain = args.plain or not _has("rich")
    if plain and not args.plain:
        print(EXTRA_HINT)
    try:
        devices = [mc.Device(f"{i.backend}:{i.index}") for i in mc.get_devices()] if args.devices \
            else [_bench.open_device(args.device)]
    except mc.DeviceError as e:
        parser.error(str(e))
    report: dict[str, Any] = {"schema": SCHEMA, "mode": "kernel" if args.file else "suite",
                              "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                              "command": ["python", "-m", "metalcall", "bench"] + list(sys.argv[1:] if argv is None else argv),
                              "machine": machine_info(), "devices": []}
    shown: list[_bench.Table] = []  # every table printed, in order (for --html)
    try:
        if args.file:
            status = run_kernel(parser, args, devices, report, plain, shown)
        else:
            status = run_suite(parser, args, devices, report, plain, shown)
    except _bench.CheckFailed as e:
        print(f"FAILED: {e}", file=sys.stderr)
        return 1
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)
        print(f"wrote {args.json}")
    if args.plot:
        if report["mode"] != "suite":
            print("--plot draws the standard suite; nothing plotted for one kernel", file=sys.stderr)
        else:
            from metalcall._bench_plot import write_plot

            write_plot(report, args.plot)
            print(f"wrote {args.plot}")
    if args.html:
        from metalcall._bench_html import write_html
        from metalcall._bench_plot import plot_png

        write_html(report, shown, plot_png(report) if report["mode"] == "suite" else None, args.html)
        print(f"wrote {args.html}")
    return status



def run_cluster(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    from metalcall import _bench_distributed

    try:
        max_size = _bench_args.parse_count(args.max_size, "--max-size") if args.max_size else None
    except _bench_args.SpecError as e:
        parser.error(str(e))
    print(f"running the standard suite on every worker of {args.scheduler}, one at a time", flush=True)
    try:
        results = _bench_distributed.run_on_cluster(args.scheduler, args.quick, max_size)
    except (RuntimeError, OSError, TimeoutError) as e:
        parser.error(str(e))
    except _bench.CheckFailed as e:
        print(f"FAILED: {e}", file=sys.stderr)
        return 1
    _bench.render([_bench_distributed.cluster_table(results)], args.plain or not _has("rich"))
    if args.json:
        report = {"schema": SCHEMA, "mode": "cluster", "scheduler": args.scheduler,
                  "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                  "machine": machine_info(), "workers": results, "checked": True}
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)
        print(f"wrote {args.json}")
    print("\nOK: every worker's kernels checked against NumPy.")
    return 0


def _has(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


def machine_info() -> dict[str, Any]:
    cpu = platform.processor() or platform.machine()
    with contextlib.suppress(OSError):
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    return {"platform": platform.platform(), "cpu": cpu, "cpu_count": os.cpu_count(),
            "python": platform.python_version(), "numpy": np.__version__, "metalcall": mc.__version__,
            "backends": mc.backends()}


# ---- the standard suite ----

def run_suite(parser: argparse.ArgumentParser, args: argparse.Namespace, devices: list[mc.Device],
              report: dict[str, Any], plain: bool, shown: list[_bench.Table]) -> int:
    try:
        max_size = _bench_args.parse_count(args.max_size, "--max-size") if args.max_size else None
    except _bench_args.SpecError as e:
        parser.error(str(e))
    settings = _bench_suite.Settings(args.quick, max_size)
    peer_results = None
    if args.compare:
        # Peers first: on a small machine metalcall's idle worker threads would otherwise share the cores
        # with numba's and torch's pools while those are timed.
        sizes = sorted({n for dev in devices for n in _bench_suite.sweep_sizes(dev, settings)})
        peers, skipped = _bench_peers.available_peers()
        results = []
        with progress(plain, len(peers) + 1, "peers") as step:
            for peer in peers:
                results.append(_bench_peers.measure(peer, sizes, settings.budget))
                step()
            compute = _bench_peers.numpy_compute(1 << 12 if args.quick else 1 << 16, settings.budget)
            step()
        peer_results = {"results": results, "skipped": skipped, "compute": compute}
    for dev in devices:
        print(f"\nrunning the standard suite on {dev.name} ({dev.backend}:{dev.index})", flush=True)
        sizes = _bench_suite.sweep_sizes(dev, settings)
        entry: dict[str, Any] = {"device": dev.info.as_dict()}
        with progress(plain, 3 + 2 * len(sizes), f"{dev.backend}") as step:
            entry["latency"] = _bench_suite.latency(dev, settings)
            step()
            entry["bandwidth"] = _bench_suite.bandwidth(dev, sizes, settings, step)
            entry["compute"] = _bench_suite.compute(dev, settings)
            step()
            entry["compile"] = _bench_suite.compile_times(dev, settings)
            step()
        report["devices"].append(entry)
        tables = suite_tables(entry)
        shown += tables
        _bench.render(tables, plain)
    if peer_results is not None:
        report["peers"] = peer_results
        tables = compare_tables(report)
        shown += tables
        _bench.render(tables, plain)
        for name, why in peer_results["skipped"].items():
            print(f"  {name}: {why}")
    report["checked"] = True
    print("\nOK: every kernel's and peer's result checked against NumPy.")
    return 0


@contextlib.contextmanager
def progress(plain: bool, total: int, what: str) -> Iterator[Callable[[], None]]:
    """A step() callback: a rich progress bar, or nothing in plain mode."""
    if plain:
        yield lambda: None
        return
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
                  TimeElapsedColumn(), transient=True) as bar:
        task = bar.add_task(f"benchmarking {what}", total=total)
        yield lambda: bar.advance(task)


def _us(seconds: Optional[float]) -> str:
    return "—" if seconds is None else f"{seconds * 1e6:.2f}"


def suite_tables(entry: dict[str, Any]) -> list[_bench.Table]:
    name = f"{entry['device']['name']} ({entry['device']['backend']})"
    latency = _bench.Table(f"Dispatch latency, 1-element c = a * b, {name}", ["call", "µs per call", "note"],
                           [[r["name"], _us(r["seconds"]), r["note"]] for r in entry["latency"]])
    bw = entry["bandwidth"]
    rows = [[f"2^{c['elements'].bit_length() - 1}", f"{c['gbps']:.2f}", f"{m['gbps']:.2f}", format_seconds(m["seconds"])]
            for c, m in zip(bw["copy"], bw["mul"])]
    clock = bw["mul"][0]["clock"] if bw["mul"] else "device"
    bandwidth = _bench.Table(f"Bandwidth, float32, median of {clock}-clock times, {name}",
                             ["elements", "copy GB/s", "c = a * b GB/s", "c = a * b time"], rows)
    c = entry["compute"]
    compute = _bench.Table(f"Compute-heavy FMA kernel, {c['elements']} elements × {_bench.HEAVY_FLOPS_PER_ELEMENT} FLOPs",
                           ["kernel", "GFLOP/s", "median time"],
                           [["heavy", f"{c['gflops']:.2f}", format_seconds(c["seconds"])]])
    t = entry["compile"]
    compile_table = _bench.Table("Compile + kernel lookup, small kernel", ["cache", "time"], [
        ["cold: new process, empty cache directory", format_seconds(t["cold"])],
        ["warm disk cache, new process", format_seconds(t["warm_disk"])],
        ["in-memory cache, same process", format_seconds(t["memory"])]])
    return [latency, bandwidth, compute, compile_table]


def compare_tables(report: dict[str, Any]) -> list[_bench.Table]:
    peers = report["peers"]["results"]
    ours = [(e["device"]["backend"], e) for e in report["devices"]]
    latency = _bench.Table("1-element multiply, µs per call (metalcall: waited call)", ["implementation", "µs"],
                           [[f"metalcall {b}", _us(e["latency"][1]["seconds"])] for b, e in ours] +
                           [[p["name"], _us(p["latency"])] for p in peers])
    columns = ["elements"] + [f"metalcall {b} {k}" for b, _ in ours for k in ("device", "call+wait")] + \
        [p["name"] for p in peers]
    rows = []
    for point in ours[0][1]["bandwidth"]["mul"]:
        n = point["elements"]
        row = [f"2^{n.bit_length() - 1}"]
        for _, e in ours:
            match = [p for p in e["bandwidth"]["mul"] if p["elements"] == n]
            host = match[0]["bytes"] / match[0]["result"]["host_median"] / 1e9 if match else None
            row += [f"{match[0]['gbps']:.2f}", f"{host:.2f}"] if match else ["—", "—"]
        for p in peers:
            match = [q for q in p["mul"] if q["elements"] == n]
            row.append(f"{match[0]['gbps']:.2f}" if match else "—")
        rows.append(row)
    mul = _bench.Table("c = a * b GB/s side by side, medians (metalcall: device clock, and host clock of call + wait; "
                         "peers: host clock)", columns, rows)
    c = report["peers"]["compute"]
    compute = _bench.Table("Compute-heavy recurrence, GFLOP/s", ["implementation", "elements", "GFLOP/s"],
                           [[f"metalcall {b}", str(e["compute"]["elements"]), f"{e['compute']['gflops']:.2f}"] for b, e in ours]
                           + [["numpy (in-place float32 ops)", str(c["elements"]), f"{c['gflops']:.2f}"]])
    return [latency, mul, compute]


# ---- a user's kernel ----

def run_kernel(parser: argparse.ArgumentParser, args: argparse.Namespace, devices: list[mc.Device],
               report: dict[str, Any], plain: bool, shown: list[_bench.Table]) -> int:
    try:
        specs = [_bench_args.parse_spec(s) for s in args.arg]
        grid = _bench_args.parse_grid(args.grid) if args.grid else None
        threadgroup = _bench_args.parse_grid(args.threadgroup) if args.threadgroup else None
        nbytes = _bench_args.parse_count(args.bytes, "--bytes") if args.bytes else None
        flops = _bench_args.parse_count(args.flops, "--flops") if args.flops else None
    except _bench_args.SpecError as e:
        parser.error(str(e))
    if args.repeat < 1 or args.warmup < 0:
        parser.error("--repeat must be at least 1 and --warmup at least 0")
    if grid is None:
        first = next((s for s in specs if s.shape is not None), None)
        if first is None:
            parser.error("--grid is needed when no --arg is a buffer")
        grid = (int(np.prod(first.shape)),)
    try:
        with open(args.file) as f:
            source = f.read()
    except OSError as e:
        parser.error(f"cannot read {args.file}: {e.strerror}")
    saved: dict[str, np.ndarray] = {}
    for dev in devices:
        try:
            lib = dev.compile(source)
        except mc.CompileError as e:
            print(f"{args.file}: {e}", file=sys.stderr)
            return 2
        name = args.kernel
        if name is None:
            if len(lib.function_names) != 1:
                parser.error(f"{args.file} has kernels {', '.join(lib.function_names)}: choose one with --kernel")
            name = lib.function_names[0]
        if name not in lib:
            parser.error(f"{args.file} has no kernel {name!r}; it has {', '.join(lib.function_names)}")
        rng = np.random.default_rng(0)
        hosts = [_bench_args.make_host_value(s, rng) for s in specs]
        values = [dev.asarray(h) if s.shape is not None else h for s, h in zip(specs, hosts)]
        try:
            result = lib[name].benchmark(grid if len(grid) > 1 else grid[0], *values, repeat=args.repeat,
                                         warmup=args.warmup, bytes=nbytes, flops=flops, threadgroup=threadgroup)
        except mc.ArgumentError as e:
            print(f"error: {e}", file=sys.stderr)
            return 2
        outputs = {f"arg{i}": np.array(v) for i, (s, v) in enumerate(zip(specs, values)) if s.shape is not None}
        if len(devices) == 1:
            saved = outputs
        else:
            saved.update({f"{dev.backend}{dev.index}_{k}": v for k, v in outputs.items()})
        report["devices"].append({"device": dev.info.as_dict(), "kernel": result.to_dict(),
                                  "arguments": [s.text for s in specs]})
        table = kernel_table(result)
        shown.append(table)
        _bench.render([table], plain)
        for i, s in enumerate(specs):
            if s.output:
                head = np.array2string(outputs[f"arg{i}"].ravel()[:6], precision=5)
                print(f"  out arg {i} ({s.text}): {head}{' ...' if outputs[f'arg{i}'].size > 6 else ''}")
    if args.save:
        np.savez(args.save, **saved)
        print(f"wrote {args.save}")
    return 0


def kernel_table(r: mc.BenchmarkResult) -> _bench.Table:
    rows = [["median", format_seconds(r.median)], ["min", format_seconds(r.min)], ["mean", format_seconds(r.mean)],
            ["stdev", format_seconds(r.stdev)], ["IQR", format_seconds(r.iqr)], ["max", format_seconds(r.max)],
            ["calls timed", str(r.n)], ["clock", f"{r.clock}: {r.clock_detail}"],
            ["host call + wait (median)", format_seconds(r.host_median)],
            ["launch overhead (host, per call)", format_seconds(r.launch_overhead)]]
    if r.gbps is not None:
        rows.append(["GB/s (bytes / median)", f"{r.gbps:.2f}"])
    if r.gflops is not None:
        rows.append(["GFLOP/s (flops / median)", f"{r.gflops:.2f}"])
    return _bench.Table(f"{r.kernel} on {r.device} ({r.backend}), grid {r.grid}", ["statistic", "value"], rows)
