"""python -m metalcall: list the devices, then run a short, checked benchmark on one.

`python -m metalcall cache info|clear` shows or empties the disk cache of compiled kernels.
`python -m metalcall selftest --json report.json` checks a device against NumPy and benchmarks it,
into one report (metalcall/_selftest.py; docs/metal-backend.md: the first run on a Mac).
`--cmakedir` / `--includes` print where the C++ package is (docs/cpp-embedding.md).
Exits with status 1 if a kernel's result disagrees with NumPy's. `python -m metalcall bench`
is the benchmarking tool (metalcall/_bench_cli.py: the standard suite or your own kernel,
--json, --plot, --compare); benchmarks/bench_core.py is the full peer comparison.
"""

from __future__ import annotations

import argparse
import sys

import metalcall as mc
from metalcall import _bench, _core


def list_devices() -> None:
    print(f"backends built in: {', '.join(mc.backends())}")
    print("devices:")
    for info in mc.get_devices():
        memory = f"{info.memory_size / 2**30:.1f} GiB" if info.memory_size else "memory unknown"
        print(f"  {info.backend}:{info.index}  {info.name}  ({info.architecture}, {memory}, "
              f"{info.max_threads_per_threadgroup} threads per threadgroup)")


def format_size(n: int) -> str:
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} bytes"


def cache_main(argv: list[str]) -> int:
    """`python -m metalcall cache info|clear`: the disk cache of compiled kernels."""
    parser = argparse.ArgumentParser(prog="python -m metalcall cache",
                                     description="The disk cache of compiled kernels ($METALCALL_CACHE_DIR; "
                                                 "size limit $METALCALL_CACHE_SIZE, e.g. 500M, 2G, 0 = off).")
    parser.add_argument("action", choices=["info", "clear"],
                        help="info: folder, entries, size and limit; clear: remove metalcall's entries")
    args = parser.parse_args(argv)
    if args.action == "clear":
        removed = _core.cache_clear()
        print(f"removed {removed} entries from {_core.cache_info()['directory']}")
        return 0
    info = _core.cache_info()
    limit = "none" if info["limit"] is None else format_size(info["limit"])
    print(f"directory: {info['directory']}")
    if not info["enabled"]:
        print(f"state:     off ({info['problem']})")
    print(f"entries:   {info['entries']}")
    print(f"size:      {format_size(info['bytes'])}")
    print(f"limit:     {limit}")
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["bench"]:
        from metalcall import _bench_cli

        return _bench_cli.main(argv[1:])
    if argv[:1] == ["cache"]:
        return cache_main(argv[1:])
    if argv[:1] == ["selftest"]:
        from metalcall import _selftest

        return _selftest.main(argv[1:])
    parser = argparse.ArgumentParser(prog="python -m metalcall", description=__doc__.splitlines()[0],
                                     epilog="python -m metalcall bench --help: the benchmarking tool; "
                                            "python -m metalcall cache info|clear: the disk cache; "
                                            "python -m metalcall selftest --help: checks and a report")
    parser.add_argument("--device", help="device name or index (default: mc.Device())")
    parser.add_argument("--quick", action="store_true", help="smaller sizes and fewer repeats")
    parser.add_argument("--list", action="store_true", help="only list the devices")
    parser.add_argument("--version", action="version", version=f"metalcall {mc.__version__}")
    parser.add_argument("--cmakedir", action="store_true",
                        help="print the CMake package folder (for -Dmetalcall_DIR=...) and exit")
    parser.add_argument("--includes", action="store_true", help="print the include flags for the C++ headers and exit")
    args = parser.parse_args(argv)

    # For build scripts: one line on stdout, nothing else (pybind11's convention).
    if args.cmakedir or args.includes:
        if args.cmakedir:
            print(mc.get_cmake_dir())
        if args.includes:
            print(f"-I{mc.get_include()}")
        return 0

    list_devices()
    if args.list:
        return 0
    try:
        dev = _bench.open_device(args.device)
    except mc.DeviceError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"\nrunning on {dev.name} ({dev.backend}:{dev.index})", flush=True)
    repeats = 2 if args.quick else 3
    size = 10**6 if args.quick else 10**7
    try:
        table, calls = _bench.call_overhead(dev, repeats, 0.01 if args.quick else 0.05)
        _bench.render([table])
        table, bandwidth = _bench.multiply_bandwidth(dev, [size], repeats)
        _bench.render([table])
        table, heavy = _bench.compute_heavy(dev, 1 << 12 if args.quick else 1 << 20, repeats)
        _bench.render([table])
    except _bench.CheckFailed as e:
        print(f"FAILED: {e}", file=sys.stderr)
        return 1
    call, gbs = calls["waited, Buffer args"], bandwidth[size]
    print(f"\nOK, results checked against NumPy. {dev.backend}: 1-element call {call:.2f} µs "
          f"({call / calls['numpy']:.1f}x NumPy's time), c = a * b at {size:.0e} {gbs['buffer']:.1f} GB/s "
          f"({gbs['buffer'] / gbs['numpy']:.2f}x NumPy), compute-heavy {heavy['kernel']:.1f} GFLOP/s "
          f"({heavy['kernel'] / heavy['numpy']:.1f}x NumPy)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
