"""`python -m metalcall selftest [--device D] [--json report.json]`: a first-run kit for a new machine
(a Mac above all): representative checks of the device against NumPy, each covering something only
real hardware can confirm (docs/metal-backend.md), then the standard benchmarks; one report with the
device, the system, each check's result and time (a failure with its traceback), and the benchmark
figures. Exits 1 when a check fails."""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
import traceback
from typing import Any, Callable

import numpy as np

import metalcall as mc

SRC = """
#include <metal_stdlib>
using namespace metal;
kernel void mul(const device float* a [[buffer(0)]], const device float* b [[buffer(1)]],
                device float* c [[buffer(2)]], uint i [[thread_position_in_grid]]) { c[i] = a[i] * b[i]; }
kernel void scale(device float* x [[buffer(0)]], constant float& s [[buffer(1)]],
                  uint i [[thread_position_in_grid]]) { x[i] = x[i] * s; }
kernel void add_constant(constant float* x [[buffer(0)]], device float* out [[buffer(1)]],
                         uint i [[thread_position_in_grid]]) { out[i] = out[i] + x[i]; }
kernel void group_sum(const device float* x [[buffer(0)]], device float* out [[buffer(1)]],
                      threadgroup float* scratch [[threadgroup(0)]], uint i [[thread_position_in_grid]],
                      uint t [[thread_position_in_threadgroup]], uint g [[threadgroup_position_in_grid]],
                      uint n [[threads_per_threadgroup]]) {
    scratch[t] = x[i];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (t == 0) { float s = 0; for (uint k = 0; k < n; ++k) s += scratch[k]; out[g] = s; }
}
kernel void simd_sums(const device uint* x [[buffer(0)]], device uint* out [[buffer(1)]],
                      device uint* width [[buffer(2)]], uint i [[thread_position_in_grid]],
                      uint w [[threads_per_simdgroup]]) {
    out[i] = simd_sum(x[i]);
    width[i] = w;
}
kernel void count(device atomic_uint* total [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    atomic_fetch_add_explicit(total, i & 7u, memory_order_relaxed);
}
constant int factor [[function_constant(0)]];
kernel void times_constant(device int* x [[buffer(0)]], uint i [[thread_position_in_grid]]) { x[i] *= factor; }
constant ushort2 stride2 [[function_constant(1)]];
constant half3 weights3 [[function_constant(2)]];
kernel void vector_constants(device float* x [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    x[i] = float(stride2[i % 2]) + float(weights3[i % 3]);
}
kernel void flip(texture2d<float, access::read> src [[texture(0)]], texture2d<float, access::write> dst [[texture(1)]],
                 uint2 p [[thread_position_in_grid]]) {
    dst.write(src.read(uint2(src.get_width() - 1 - p.x, p.y)), p);
}
kernel void volume_twice(texture3d<float, access::read> src [[texture(0)]],
                         texture3d<float, access::write> dst [[texture(1)]], uint3 p [[thread_position_in_grid]]) {
    dst.write(src.read(p) * 2.0f, p);
}
"""


def _unaligned(values: np.ndarray) -> np.ndarray:
    raw = np.zeros(values.nbytes + 8, np.uint8)
    view = raw[4 : 4 + values.nbytes].view(values.dtype)
    view[:] = values
    return view


def _page_aligned(n: int, dtype: Any, page: int = 16384) -> np.ndarray:
    raw = np.zeros(n * np.dtype(dtype).itemsize + page, np.uint8)
    start = -raw.ctypes.data % page
    return raw[start : start + n * np.dtype(dtype).itemsize].view(dtype)


def _equal(got: Any, want: Any, what: str) -> None:
    np.testing.assert_array_equal(np.asarray(got), np.asarray(want), err_msg=what)


def check_elementwise(dev: mc.Device, lib: mc.Library) -> None:
    rng = np.random.default_rng(1)
    for n in (1, 1000, 1 << 20):
        a, b = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
        c = dev.empty(n, np.float32)
        lib.mul(n, dev.asarray(a), dev.asarray(b), c)
        _equal(c, a * b, f"Buffers, n={n}")


def check_host_memory(dev: mc.Device, lib: mc.Library) -> None:
    """Host arrays staged (unaligned) and used in place (page-aligned whole pages)."""
    n = 1 << 16
    for make in (_unaligned, lambda v: _page_aligned(len(v), v.dtype)):
        x = make(np.arange(n, dtype=np.float32))
        x[:] = np.arange(n, dtype=np.float32)
        lib.scale(n, x, np.float32(3.0))
        _equal(x, np.arange(n, dtype=np.float32) * 3, "a host array written in place or copied back")


def check_batch_shares_host_memory(dev: mc.Device, lib: mc.Library) -> None:
    """P2.1 item 2: a later call of a batch reads what an earlier one wrote to a host array."""
    n = 4096
    a = _unaligned(np.arange(n, dtype=np.float32))
    out = dev.zeros(n, np.float32)
    with dev.batch():
        lib.scale(n, a, np.float32(2.0))
        lib.add_constant(n, a, out)
        lib.scale(n, a, np.float32(0.5))
    _equal(out, np.arange(n, dtype=np.float32) * 2, "the second call saw the first call's writes")
    _equal(a, np.arange(n, dtype=np.float32), "the writers applied in order")


def check_threadgroup_memory(dev: mc.Device, lib: mc.Library) -> None:
    x = np.random.default_rng(2).random(4096, dtype=np.float32)
    out = dev.empty(64, np.float32)
    lib.group_sum(4096, x, out, threadgroup=64, threadgroup_memory=[256])
    np.testing.assert_allclose(np.asarray(out), x.reshape(64, 64).sum(axis=1), rtol=1e-5)


def check_simd_width(dev: mc.Device, lib: mc.Library) -> dict:
    """P2.1 item 4: the SIMD-group width a pipeline runs with, against the device's simd_width."""
    n = 1024
    x = np.arange(n, dtype=np.uint32)
    out, width = np.zeros(n, np.uint32), np.zeros(n, np.uint32)
    lib.simd_sums(n, x, out, width, threadgroup=256)
    w = int(width[0])
    assert np.all(width == w), "one width in a dispatch"
    want = np.repeat(x.reshape(-1, w).sum(axis=1, dtype=np.uint32), w)
    _equal(out, want, f"simd_sum over SIMD-groups of {w}")
    return {"pipeline_simd_width": w, "device_simd_width": dev.simd_width}


def check_atomics(dev: mc.Device, lib: mc.Library) -> None:
    total = dev.zeros(1, np.uint32)
    n = 1 << 20
    lib.count(n, total)
    _equal(total, [int((np.arange(n) & 7).sum())], "atomic_fetch_add over 2^20 threads")


def check_function_constants(dev: mc.Device, lib: mc.Library) -> None:
    x = np.arange(100, dtype=np.int32)
    lib.function("times_constant", constants={"factor": 7})(100, x)
    _equal(x, np.arange(100) * 7, "a function constant")
    # vectors (MTLDataTypeUShort2, MTLDataTypeHalf3: a 3-vector passed as 4 components)
    y = np.zeros(12, np.float32)
    lib.function("vector_constants", constants={"stride2": (3, 65535), "weights3": [0.5, -2.0, 1024.0]})(12, y)
    i = np.arange(12)
    _equal(y, np.array([3, 65535])[i % 2] + np.array([0.5, -2.0, 1024.0])[i % 3], "vector function constants")


def check_textures(dev: mc.Device, lib: mc.Library) -> None:
    image = np.random.default_rng(3).random((16, 24, 4), dtype=np.float32)
    src = dev.texture_from(image)
    dst = dev.texture((16, 24), format="rgba32float")
    lib.flip((24, 16), textures=[src, dst])
    _equal(dst.level(0), image[:, ::-1], "a 2-D texture over its buffer")
    volume = np.random.default_rng(4).random((4, 8, 8, 1), dtype=np.float32)
    vsrc = dev.texture_from(volume)
    vdst = dev.texture((4, 8, 8), format="r32float")
    lib.volume_twice((8, 8, 4), textures=[vsrc, vdst])
    _equal(np.asarray(vdst.level(0)).reshape(4, 8, 8), volume.reshape(4, 8, 8) * 2, "a staged 3-D texture")


def check_replay(dev: mc.Device, lib: mc.Library) -> None:
    x = dev.asarray(np.ones(1000, np.float32))
    with dev.record() as graph:
        lib.scale(1000, x, np.float32(2.0))
    for _ in range(3):
        graph.replay()
    _equal(x, np.full(1000, 8.0, np.float32), "three replays")


def check_errors(dev: mc.Device, lib: mc.Library) -> None:
    try:
        dev.compile("kernel void k(device float* a [[buffer(0)]]) {\n    flot x = 1;\n}\n")
    except mc.CompileError as e:
        assert e.line == 2, f"the compile error is on line 2, not {e.line}"
    else:
        raise AssertionError("a bad kernel compiled")
    c = dev.empty(16, np.float32)
    try:
        lib.mul(16, c, c, c, threadgroup=lib.mul.max_total_threads_per_threadgroup + 1)
    except mc.ArgumentError:
        pass
    else:
        raise AssertionError("a threadgroup over the kernel's limit was accepted")
    lib.mul(16, c, c, c)  # still usable


def check_numpy_namespace(dev: mc.Device, lib: mc.Library) -> None:
    """metalcall.numpy's reductions and scans bake SIMD widths into their kernels (P2.1 item 4)."""
    import metalcall.numpy as mnp

    x = np.random.default_rng(5).random(100_003).astype(np.float32)
    with mnp.device_scope(dev):
        a = mnp.asarray(x)
        np.testing.assert_allclose(float(mnp.sum(a)), float(x.sum(dtype=np.float64)), rtol=1e-4)
        np.testing.assert_allclose(np.asarray(mnp.cumsum(a)), np.cumsum(x, dtype=np.float64), rtol=1e-3)


CHECKS: list[tuple[str, Callable[[mc.Device, mc.Library], Any]]] = [
    ("elementwise", check_elementwise),
    ("host memory", check_host_memory),
    ("batch shares host memory", check_batch_shares_host_memory),
    ("threadgroup memory", check_threadgroup_memory),
    ("SIMD-group width", check_simd_width),
    ("atomics", check_atomics),
    ("function constants", check_function_constants),
    ("textures", check_textures),
    ("record and replay", check_replay),
    ("errors", check_errors),
    ("metalcall.numpy", check_numpy_namespace),
]


def run_checks(dev: mc.Device) -> list[dict]:
    results = []
    try:
        lib = dev.compile(SRC)
    except mc.Error:
        return [{"name": "compile", "passed": False, "seconds": 0.0, "traceback": traceback.format_exc()}]
    for name, check in CHECKS:
        start = time.perf_counter()
        entry: dict[str, Any] = {"name": name}
        try:
            detail = check(dev, lib)
            entry["passed"] = True
            if detail:
                entry["detail"] = detail
        except Exception:  # noqa: BLE001 - every failure goes into the report
            entry["passed"] = False
            entry["traceback"] = traceback.format_exc()
        entry["seconds"] = round(time.perf_counter() - start, 4)
        print(f"  {'ok  ' if entry['passed'] else 'FAIL'} {name} ({entry['seconds']:.2f} s)", flush=True)
        results.append(entry)
    return results


def run_benchmarks(dev: mc.Device, quick: bool) -> dict:
    from metalcall import _bench

    repeats, size = (2, 10**6) if quick else (3, 10**7)
    try:
        _, calls = _bench.call_overhead(dev, repeats, 0.01 if quick else 0.05)
        _, bandwidth = _bench.multiply_bandwidth(dev, [size], repeats)
        _, heavy = _bench.compute_heavy(dev, 1 << 12 if quick else 1 << 20, repeats)
    except Exception:  # noqa: BLE001 - reported
        return {"error": traceback.format_exc()}
    return {"call_overhead_us": calls, "multiply_gb_per_s": {str(k): v for k, v in bandwidth.items()},
            "compute_heavy_gflop_per_s": heavy}


def device_report(dev: mc.Device) -> dict:
    return {name: getattr(dev, name) for name in (
        "name", "backend", "index", "architecture", "max_threads_per_threadgroup", "simd_width",
        "unified_memory", "memory_size", "max_buffer_length", "threadgroup_memory_length")}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m metalcall selftest", description=__doc__.splitlines()[0])
    parser.add_argument("--device", help="device name or index (default: mc.Device())")
    parser.add_argument("--family", help="the GPU family, for --device metal-sim")
    parser.add_argument("--json", metavar="FILE", help="write the report to FILE")
    parser.add_argument("--quick", action="store_true", help="smaller benchmarks")
    parser.add_argument("--no-bench", action="store_true", help="the checks only")
    args = parser.parse_args(argv)
    try:
        if args.family:
            dev = mc.Device(args.device or "metal-sim", family=args.family)
        elif args.device is not None:
            dev = mc.Device(int(args.device) if args.device.isdigit() else args.device)
        else:
            dev = mc.Device()
    except mc.Error as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"metalcall {mc.__version__} selftest on {dev.name} ({dev.backend})", flush=True)
    report: dict[str, Any] = {
        "metalcall": mc.__version__,
        "device": device_report(dev),
        "system": {"platform": platform.platform(), "machine": platform.machine(),
                   "mac_ver": platform.mac_ver()[0], "python": sys.version.split()[0], "numpy": np.__version__},
        "checks": run_checks(dev),
    }
    if not args.no_bench:
        print("benchmarks ...", flush=True)
        report["benchmarks"] = run_benchmarks(dev, args.quick)
    failed = [c["name"] for c in report["checks"] if not c["passed"]]
    report["passed"] = not failed
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=2, default=str)
        print(f"report written to {args.json}")
    print("all checks passed" if not failed else f"FAILED: {', '.join(failed)}")
    return 0 if not failed else 1
