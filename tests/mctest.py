"""Kernel sources and helpers shared by the test modules.

Sources are module-level constants so that every test that needs "a simple
multiply" reuses one compiled library instead of paying for a new compile.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading

import numpy as np
import pytest

import metalcall as mc


class DLPackOnly:
    """A producer with only __dlpack__/__dlpack_device__ (like a torch or JAX tensor)."""

    def __init__(self, array):
        self.array = array

    def __dlpack__(self, **kwargs):
        return self.array.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self.array.__dlpack_device__()


def device_params() -> list:
    """One pytest.param((backend, index), id=...) per device metalcall reports; with
    METALCALL_DEVICE=metal-sim, the Metal simulator alone (its family from
    METALCALL_METAL_SIM_FAMILY), so that the suite runs the Metal backend's plans on Linux."""
    if metal_sim_only():
        return [pytest.param(("metal-sim", 0), id="metal-sim")]
    infos = mc.get_devices()
    per_backend: dict[str, int] = {}
    for info in infos:
        per_backend[info.backend] = per_backend.get(info.backend, 0) + 1
    params = []
    for info in infos:
        ident = info.backend if per_backend[info.backend] == 1 else f"{info.backend}:{info.index}"
        params.append(pytest.param((info.backend, info.index), id=ident))
    if not params:  # the CPU backend is always built in; be explicit if it is not
        params.append(pytest.param(("cpu", 0), id="cpu"))
    return params


def metal_sim_only() -> bool:
    return os.environ.get("METALCALL_DEVICE", "").lower().split(":")[0] == "metal-sim"


def device_with_gpu_kernels(backend: str, index: int, gpu_kernels: bool):
    """Yields Device(backend:index) with metalcall.numpy's GPU kernel variants forced on or off
    (on the CPU they run as fibers, so the kernels CUDA and Metal run are checked anywhere), and
    turns them off again afterwards: the shared body of the numpy tests' device fixtures."""
    from metalcall.numpy._kernels import cache

    cache.force_gpu_variants = gpu_kernels
    try:
        yield mc.Device(f"{backend}:{index}")
    finally:
        cache.force_gpu_variants = False


def with_sandbox_device():
    """A `device` fixture over device_params() plus the sandboxed CPU device where it exists
    (Linux), as ("cpu", 0, "sandbox"): assign it to `device` in a test module."""
    params = device_params()
    if sys.platform.startswith("linux") and "cpu" in mc.backends() and not metal_sim_only():
        params.append(pytest.param(("cpu", 0, "sandbox"), id="cpu-sandbox"))

    @pytest.fixture(params=params, name="device")
    def device(request) -> mc.Device:
        backend, index = request.param[:2]
        return mc.Device(f"{backend}:{index}", sandbox=request.param[2:] == ("sandbox",))

    return device

# The canonical elementwise multiply of DESIGN.md §2.
MUL_SRC = """
#include <metal_stdlib>
using namespace metal;
kernel void mul(const device float* a [[buffer(0)]], const device float* b [[buffer(1)]],
                device float* c [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    c[i] = a[i] * b[i];
}
"""

# A few small kernels in one library: used by most binding / buffer / async tests.
GOOD_SRC = """
#include <metal_stdlib>
using namespace metal;

// c[i] = a[i] * b[i]
kernel void mul(const device float* a [[buffer(0)]], const device float* b [[buffer(1)]],
                device float* c [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    c[i] = a[i] * b[i];
}

// out[i] = a[i] + s
kernel void add_scalar(const device float* a [[buffer(0)]], constant float& s [[buffer(1)]],
                       device float* out [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    out[i] = a[i] + s;
}

// x[i] = x[i] * 2 + 1, in place
kernel void twice_plus_one(device float* x [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    x[i] = x[i] * 2.0f + 1.0f;
}

// out[i] = i
kernel void iota(device uint* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    out[i] = i;
}

// out[i] = a[i] (float copy)
kernel void copy(const device float* a [[buffer(0)]], device float* out [[buffer(1)]],
                 uint i [[thread_position_in_grid]]) {
    out[i] = a[i];
}

// Compute-heavy: iterates a contraction `iters` times so that a call takes a while.
kernel void slow(const device float* a [[buffer(0)]], device float* out [[buffer(1)]],
                 constant uint& iters [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    float x = a[i];
    float acc = 0.0f;
    for (uint k = 0; k < iters; ++k) {
        acc = acc * 0.5f + x;
    }
    out[i] = acc;
}

// out[i] = a[i] + 1 for uint data
kernel void inc_u32(const device uint* a [[buffer(0)]], device uint* out [[buffer(1)]],
                    uint i [[thread_position_in_grid]]) {
    out[i] = a[i] + 1u;
}
"""


def slow_expected(a: np.ndarray, iters: int) -> np.ndarray:
    """NumPy model of the `slow` kernel (float32, same order of operations)."""
    a = np.asarray(a, dtype=np.float32)
    acc = np.zeros_like(a)
    half = np.float32(0.5)
    for _ in range(iters):
        acc = acc * half + a
    return acc


def good_library(dev: mc.Device) -> mc.Library:
    return dev.compile(GOOD_SRC)


def check_usable(dev: mc.Device, n: int = 257) -> None:
    """Runs a good kernel on `dev` and checks its values: the process is still usable."""
    lib = good_library(dev)
    a = np.arange(n, dtype=np.float32)
    b = np.full(n, 3.0, dtype=np.float32)
    c = dev.empty(n, np.float32)
    lib.mul(n, a, b, c)
    np.testing.assert_array_equal(np.asarray(c), a * b)
    # And through mc.Buffers only (the asynchronous path).
    out = dev.zeros(n, np.uint32)
    lib.iota(n, out).wait()
    np.testing.assert_array_equal(np.asarray(out), np.arange(n, dtype=np.uint32))


def _version_line(program: str) -> str:
    try:
        out = subprocess.run([program, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return out.splitlines()[0] if out else ""


def cpu_kernels_built_by_clang() -> bool:
    """Which compiler the CPU backend picks (cpp/src/backends/translated/host_cxx.cpp):
    METALCALL_CXX if set, else clang++ 15 or newer, else g++."""
    chosen = os.environ.get("METALCALL_CXX")
    if chosen:
        return "clang version" in _version_line(shutil.which(chosen) or chosen)
    for name in [f"clang++-{v}" for v in range(22, 14, -1)] + ["clang++"]:
        path = shutil.which(name)
        if not path:
            continue
        line = _version_line(path)
        marker = line.find("clang version ")
        if marker >= 0 and int(line[marker + 14:].split(".")[0]) >= 15:
            return True
    return False


# Kernels of the foreign-argument tests (test_foreign_arguments.py, test_gpu_argument_cache.py).
FOREIGN_SRC = """
kernel void mul(const device float* a [[buffer(0)]], const device float* b [[buffer(1)]],
                device float* c [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    c[i] = a[i] * b[i];
}
kernel void add_one(device int* a [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    a[i] = a[i] + 1;
}
kernel void twice(device float* a [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    a[i] = a[i] * 2.0f;
}
struct cfloat { float re; float im; };  // complex64 arrays bind to struct parameters
kernel void twice_complex(device cfloat* a [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    a[i].re = a[i].re * 2.0f;
    a[i].im = a[i].im * 2.0f;
}
"""


def cuda_present() -> bool:
    """metalcall has a CUDA backend and sees a CUDA device."""
    return "cuda" in mc.backends() and any(d.backend == "cuda" for d in mc.get_devices())


def run_threads(work, count: int) -> list:
    """Runs work(k) for k in range(count) on as many threads at once; the exceptions they raised."""
    errors = []

    def guarded(k):
        try:
            work(k)
        except Exception as e:  # noqa: BLE001 - handed to the test, which asserts there are none
            errors.append(e)

    threads = [threading.Thread(target=guarded, args=(k,)) for k in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return errors


def device_params_with_checked() -> list:
    """(backend, index, checked) for every device device_params() gives, plus the checked CPU
    device: argument conversion is shared, but checked mode binds through its own tables."""
    params = [p.values[0] + (False,) for p in device_params()]
    if not metal_sim_only() and "cpu" in mc.backends():
        params.append(("cpu", 0, True))
    return params


def open_device_param(param) -> "mc.Device":
    """The device a device_params_with_checked() entry names."""
    backend, index, checked = param
    return mc.Device("cpu", checked=True) if checked else mc.Device(f"{backend}:{index}")
