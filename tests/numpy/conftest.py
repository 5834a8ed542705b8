"""`ldev`: every device metalcall reports, and the CPU a second time with the GPU kernels (one
threadgroup of 32 threads per matrix, barriers run as fibers), so that the kernels CUDA and Metal
run are checked on any machine. Used by the linalg tests. `gdev`: the GPU kernels alone, on each
GPU present and on the CPU (the eigh tests: the CPU's own route is checked with `ldev`)."""

from __future__ import annotations

import pytest

import metalcall as mc
from mctest import device_with_gpu_kernels, metal_sim_only


def _ldev_params():
    if metal_sim_only():  # METALCALL_DEVICE=metal-sim: the Metal simulator alone, as tests/conftest.py
        return [pytest.param(("metal-sim", 0, False), id="metal-sim")]
    out = []
    for info in mc.get_devices():
        out.append(pytest.param((info.backend, info.index, False), id=f"{info.backend}:{info.index}"))
        if info.backend == "cpu":
            out.append(pytest.param((info.backend, info.index, True), id=f"{info.backend}:{info.index}-gpu-kernels"))
    return out


@pytest.fixture(params=_ldev_params())
def ldev(request):
    yield from device_with_gpu_kernels(*request.param)


def _gdev_params():
    if metal_sim_only():
        return [pytest.param(("metal-sim", 0), id="metal-sim")]
    out = [pytest.param(("cpu", 0), id="cpu-gpu-kernels")]
    for info in mc.get_devices():
        if info.backend in ("cuda", "metal"):
            out.append(pytest.param((info.backend, info.index), id=f"{info.backend}:{info.index}"))
    return out


@pytest.fixture(params=_gdev_params())
def gdev(request):
    backend, index = request.param
    yield from device_with_gpu_kernels(backend, index, backend == "cpu")
