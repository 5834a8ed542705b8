"""Shared fixtures of the metalcall test suite (tests/conformance included: pytest applies
this conftest to every folder below it).

Every kernel-running test takes the ``device`` fixture, which is parametrized over
every device ``metalcall.get_devices()`` reports (ids "cpu", "metal", "cuda", with
":N" added when a backend has several devices), so the same tests run on Metal on a
Mac, on CUDA where there is one and on the CPU everywhere. It is defined here only.

Kernel sources are module-level constants (see ``mctest.py``): every distinct source
costs a compile (~0.3-0.5 s on the CPU backend) the first time it is seen, then it
is served from the in-process and on-disk caches.
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import metalcall as mc
from mctest import device_params

# One pytest.param((backend, index), id=...) per device metalcall reports. The sandboxed CPU
# device (Device("cpu", sandbox=True), Linux) is ("cpu", 0, "sandbox"), id "cpu-sandbox":
# modules that define their `device` fixture as `device = with_sandbox_device()` (mctest)
# run their `device` tests on it too, so that the call, queue and memory paths it replaces
# are tested through the public API. (Checked devices run in the sandbox by default, which
# gives it the conformance suite as well.)
DEVICE_PARAMS = device_params()


@pytest.fixture(params=DEVICE_PARAMS)
def device(request) -> mc.Device:
    """One open device per available backend device (the CPU always).

    ``request.param`` is (backend, index): tests and hooks read the backend from
    ``item.callspec.params["device"][0]``. Opening is cheap: the registry hands every
    Device of one backend device the same underlying device.
    """
    backend, index = request.param
    return mc.Device(f"{backend}:{index}")


@pytest.fixture
def cpu_device() -> mc.Device:
    """The CPU device, for tests of CPU-only behaviour (it is always built in)."""
    if "cpu" not in mc.backends():
        pytest.skip("the cpu backend is not built into this metalcall")
    return mc.Device("cpu")


@pytest.fixture
def run_python(tmp_path):
    """Runs a Python snippet in a fresh interpreter; returns the CompletedProcess."""

    def run(code: str, env: dict | None = None, timeout: float = 120.0) -> subprocess.CompletedProcess:
        full_env = dict(os.environ)
        if env:
            for k, v in env.items():
                if v is None:
                    full_env.pop(k, None)
                else:
                    full_env[k] = v
        script = tmp_path / "snippet.py"
        script.write_text(code)
        return subprocess.run(
            [sys.executable, str(script)],
            capture_output=True,
            text=True,
            env=full_env,
            timeout=timeout,
            cwd=str(tmp_path),
        )

    return run


@pytest.fixture
def rng():
    return np.random.default_rng(12345)
