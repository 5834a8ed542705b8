"""Fixtures of the metalcall.numpy kernel tests (helpers are in nkhelp.py).

``kdev`` runs a test on every device metalcall reports, and on the CPU a second time with the
GPU kernel variants (the threadgroup/SIMD kernels, which the CPU backend runs as fibers), so
the kernels CUDA and Metal use are checked here too; ``pdev`` is every device alone.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import metalcall as mc

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from mctest import device_with_gpu_kernels, metal_sim_only  # noqa: E402


def _params(gpu_variants: bool = True):
    if metal_sim_only():  # METALCALL_DEVICE=metal-sim: the Metal simulator alone, as tests/conftest.py
        return [pytest.param(("metal-sim", 0, False), id="metal-sim")]
    out = []
    counts: dict[str, int] = {}
    infos = mc.get_devices()
    for info in infos:
        counts[info.backend] = counts.get(info.backend, 0) + 1
    for info in infos:
        ident = info.backend if counts[info.backend] == 1 else f"{info.backend}:{info.index}"
        out.append(pytest.param((info.backend, info.index, False), id=ident))
        if info.backend == "cpu" and gpu_variants:
            out.append(pytest.param((info.backend, info.index, True), id=f"{ident}-gpu-variants"))
    return out


@pytest.fixture(params=_params())
def kdev(request):
    yield from device_with_gpu_kernels(*request.param)


@pytest.fixture(params=_params(gpu_variants=False))
def pdev(request):
    """Every device, without the CPU's GPU-variant run: for dtype sweeps, where a second set
    of compiled kernels would double the suite's cold time for little coverage."""
    backend, index, _ = request.param
    return mc.Device(f"{backend}:{index}")


@pytest.fixture
def rng():
    return np.random.default_rng(1234)
