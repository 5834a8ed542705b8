"""Kernel.benchmark / BenchmarkResult on every device, and `python -m metalcall bench` (CLI in a subprocess)."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import numpy as np
import pytest

import metalcall as mc
from metalcall import _bench

MUL_FILE = """
#include <metal_stdlib>
using namespace metal;
kernel void scaled_mul(const device float* a [[buffer(0)]], const device float* b [[buffer(1)]],
                       device float* c [[buffer(2)]], constant float& k [[buffer(3)]],
                       uint i [[thread_position_in_grid]]) {
    c[i] = k * a[i] * b[i];
}
"""


def _check_stats(r: mc.BenchmarkResult) -> None:
    for value in (r.min, r.median, r.mean, r.max, r.host_median, r.launch_overhead):
        assert math.isfinite(value) and value > 0
    assert r.stdev >= 0 and r.iqr >= 0
    assert r.min <= r.median <= r.max and r.min <= r.mean <= r.max
    assert r.clock in ("device", "host") and r.clock_detail


def test_benchmark_buffers(device):
    mul = device.compile(_bench.MUL_SOURCE).mul
    n = 4096
    a, b = np.random.default_rng(1).random((2, n), dtype=np.float32)
    A, B, C = device.asarray(a), device.asarray(b), device.empty(n, np.float32)
    r = mul.benchmark(n, A, B, C, repeat=12, warmup=2, bytes=12 * n, flops=n)
    np.testing.assert_array_equal(np.asarray(C), a * b)  # the kernel really ran
    _check_stats(r)
    assert r.n == 12 and len(r.samples) == 12 and r.kernel == "mul" and r.grid == (n,)
    assert r.device == device.name and r.backend == device.backend
    assert r.clock == "device"  # every backend gives device time (CUDA through 2-call batches)
    assert r.gbps == pytest.approx(12 * n / r.median / 1e9)
    assert r.gflops == pytest.approx(n / r.median / 1e9)
    d = r.to_dict()
    assert json.loads(json.dumps(d, allow_nan=False))["median"] == r.median
    assert "median" in str(r) and "GB/s" in str(r) and repr(r).startswith("<BenchmarkResult mul")


def test_benchmark_numpy_arguments_find_the_device(device):
    mul = device.compile(_bench.MUL_SOURCE).mul
    a, b, c = np.full(64, 2, np.float32), np.full(64, 3, np.float32), np.zeros(64, np.float32)
    r = mul.benchmark(64, a, b, c, repeat=3, warmup=0)
    assert np.all(c == 6)
    _check_stats(r)
    assert r.backend == device.backend and r.gbps is None and r.gflops is None


def test_benchmark_rejects_bad_counts(cpu_device):
    mul = cpu_device.compile(_bench.MUL_SOURCE).mul
    with pytest.raises(ValueError):
        mul.benchmark(1, np.zeros(1, np.float32), np.zeros(1, np.float32), np.zeros(1, np.float32), repeat=0)
    with pytest.raises(mc.ArgumentError):
        mul.benchmark(1, np.zeros(1, np.float32))  # missing arguments surface before any timing


def _bench_cli(*args: str, cwd, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "metalcall", "bench", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=str(cwd))


def test_cli_suite_json_and_plot(tmp_path):
    out = tmp_path / "out.json"
    plot = ["--plot", str(tmp_path / "out.png")] if _has("matplotlib") else []
    p = _bench_cli("--quick", "--device", "cpu", "--max-size", "2^14", "--json", str(out), *plot, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert "Dispatch latency" in p.stdout and "Compile" in p.stdout  # the tables were printed
    report = json.loads(out.read_text())
    assert report["schema"] == "metalcall-bench/1" and report["mode"] == "suite" and report["checked"] is True
    assert {"platform", "cpu", "python", "numpy", "metalcall"} <= set(report["machine"])
    (entry,) = report["devices"]
    assert entry["device"]["backend"] == "cpu"
    names = [row["name"] for row in entry["latency"]]
    assert names[-1].startswith("replayed") and entry["latency"][-1]["seconds"] > 0
    for row in entry["latency"][:-1]:
        assert row["seconds"] > 0
    for op in ("copy", "mul"):
        points = entry["bandwidth"][op]
        assert [p["elements"] for p in points] == [1 << 10, 1 << 12, 1 << 14]
        for point in points:
            assert point["gbps"] == pytest.approx(point["bytes"] / point["seconds"] / 1e9)
    assert entry["compute"]["gflops"] > 0
    assert entry["compile"]["cold"] > entry["compile"]["memory"] > 0
    if plot:
        assert (tmp_path / "out.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_cli_plot_needs_matplotlib(tmp_path):
    if _has("matplotlib"):
        pytest.skip("matplotlib is installed: the missing-extra message cannot be shown")
    p = _bench_cli("--quick", "--plot", str(tmp_path / "x.png"), cwd=tmp_path)
    assert p.returncode == 2 and "matplotlib" in p.stderr


def test_cli_user_kernel(tmp_path):
    src = tmp_path / "k.metal"
    src.write_text(MUL_FILE)
    out_json, saved = tmp_path / "k.json", tmp_path / "k.npz"
    p = _bench_cli(str(src), "--kernel", "scaled_mul", "--device", "cpu", "--grid", "1000", "--arg", "f32[1e3]:rand",
                   "--arg", "f32[1000]:arange", "--arg", "out:f32[1e3]", "--arg", "f32:2.5", "--repeat", "7",
                   "--warmup", "1", "--bytes", "12e3", "--json", str(out_json), "--save", str(saved), cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert "out arg 2" in p.stdout
    arrays = np.load(saved)
    np.testing.assert_allclose(arrays["arg2"], np.float32(2.5) * arrays["arg0"] * arrays["arg1"], rtol=1e-6)
    np.testing.assert_array_equal(arrays["arg1"], np.arange(1000, dtype=np.float32))
    result = json.loads(out_json.read_text())["devices"][0]["kernel"]
    assert result["kernel"] == "scaled_mul" and result["n"] == 7 and result["grid"] == [1000]
    assert result["min"] <= result["median"] <= result["max"]
    assert result["gbps"] == pytest.approx(12e3 / result["median"] / 1e9)


@pytest.mark.parametrize("spec, message", [
    ("f33[10]:rand", "unknown type 'f33'"),
    ("f32[ten]:rand", "integer like 1024"),
    ("f32[10]:sparkly", "unknown initial value"),
    ("u8:300", "out of range for uint8"),
    ("out:u32", "out: needs a buffer"),
    ("nonsense", "does not parse"),
])
def test_cli_bad_spec(tmp_path, spec, message):
    src = tmp_path / "k.metal"
    src.write_text(MUL_FILE)
    p = _bench_cli(str(src), "--device", "cpu", "--arg", spec, cwd=tmp_path, timeout=60)
    assert p.returncode == 2
    assert message in p.stderr


def test_cli_without_subcommand_keeps_the_demo_flags(tmp_path):
    p = subprocess.run([sys.executable, "-m", "metalcall", "--list"], capture_output=True, text=True, timeout=60,
                       cwd=str(tmp_path))
    assert p.returncode == 0 and "devices:" in p.stdout


def _has(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None
