"""`python -m metalcall selftest` (metalcall/_selftest.py), the first-run report a contributor with a
Mac sends (docs/metal-backend.md): it runs on the default device and on the Metal simulator, writes a
report with the device, the system, each check and the benchmark figures, and a failing check gives
exit status 1 with its traceback in the report."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

import metalcall as mc


def selftest(tmp_path, *args: str, env: dict | None = None) -> tuple[subprocess.CompletedProcess, dict]:
    report = tmp_path / "report.json"
    proc = subprocess.run([sys.executable, "-m", "metalcall", "selftest", "--json", str(report), *args],
                          capture_output=True, text=True, timeout=900, cwd=str(tmp_path),
                          env={**os.environ, **(env or {})})
    return proc, (json.loads(report.read_text()) if report.exists() else {})


def test_the_default_device_passes_and_is_reported(tmp_path):
    proc, report = selftest(tmp_path, "--no-bench")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert report["passed"] is True and report["metalcall"] == mc.__version__
    assert report["device"]["name"] == mc.Device().name and report["device"]["backend"] == mc.Device().backend
    assert report["system"]["python"] == sys.version.split()[0]
    names = [c["name"] for c in report["checks"]]
    assert len(names) >= 10 and "batch shares host memory" in names and "SIMD-group width" in names
    assert all(c["passed"] and c["seconds"] >= 0 for c in report["checks"])
    assert "benchmarks" not in report and "all checks passed" in proc.stdout


def test_the_simulator_with_benchmarks(tmp_path):
    proc, report = selftest(tmp_path, "--device", "metal-sim", "--family", "amd", "--quick")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert report["device"]["backend"] == "metal-sim" and "(amd)" in report["device"]["name"]
    bench = report["benchmarks"]
    assert "error" not in bench, bench
    assert all(v > 0 for v in bench["call_overhead_us"].values())
    assert all(v > 0 for sizes in bench["multiply_gb_per_s"].values() for v in sizes.values())
    assert bench["compute_heavy_gflop_per_s"]["kernel"] > 0


def test_a_failing_check_gives_status_1_and_its_traceback(tmp_path):
    # Every command buffer fails as a faulting GPU's would (the simulator's injected fault).
    proc, report = selftest(tmp_path, "--device", "metal-sim", "--no-bench",
                            env={"METALCALL_METAL_SIM_FAULT": "gpu:page-fault"})
    assert proc.returncode == 1, proc.stdout + proc.stderr
    failed = [c for c in report["checks"] if not c["passed"]]
    assert report["passed"] is False and failed
    assert all("Traceback (most recent call last)" in c["traceback"] for c in failed)
    # A call waited on raises the GPU's error; one whose Completion was dropped shows as wrong values.
    assert any("metalcall.ExecutionError: [metal-sim] the GPU failed" in c["traceback"] for c in failed)
    assert any("AssertionError" in c["traceback"] for c in failed)
    assert "FAILED: " + ", ".join(c["name"] for c in failed) in proc.stdout


@pytest.mark.parametrize("args", [["--device", "nope"], ["--device", "metal-sim", "--family", "nope"]])
def test_a_device_that_cannot_open_is_status_2(tmp_path, args):
    proc, report = selftest(tmp_path, *args)
    assert proc.returncode == 2 and report == {} and proc.stderr.startswith("error: ")
