"""Fixtures of the MSL conformance suite (issue P0.2); helpers are in mcconf.py.

* ``device``: every device ``mc.get_devices()`` reports (the CPU backend always; Metal /
  CUDA where present), as in tests/conftest.py, plus ``cpu-checked`` (Device("cpu", checked=True)).
* ``compile_once``: the cached ``device.compile`` of mcconf.py, as a fixture.
* ``rng``: a seeded NumPy generator (this suite's own seed).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import mcconf  # noqa: E402
from mcconf import KernelSet, compile_once  # noqa: E402,F401  (re-exported)


def _conformance_device_params():
    """Every device metalcall reports (as tests/conftest.py lists them), plus the CPU
    backend in checked mode: the suite doubles as the test that checked mode compiles
    and runs valid MSL with the same results. Values are (backend, index, checked)."""
    import metalcall as mc
    from mctest import metal_sim_only

    if metal_sim_only():  # METALCALL_DEVICE=metal-sim: the Metal simulator alone, as tests/conftest.py
        return [pytest.param(("metal-sim", 0, False), id="metal-sim")]
    infos = mc.get_devices()
    per_backend: dict[str, int] = {}
    for info in infos:
        per_backend[info.backend] = per_backend.get(info.backend, 0) + 1
    params = []
    for info in infos:
        ident = info.backend if per_backend[info.backend] == 1 else f"{info.backend}:{info.index}"
        params.append(pytest.param((info.backend, info.index, False), id=ident))
    if "cpu" in mc.backends():
        if not params:
            params.append(pytest.param(("cpu", 0, False), id="cpu"))
        params.append(pytest.param(("cpu", 0, True), id="cpu-checked"))
    return params


@pytest.fixture(params=_conformance_device_params())
def device(request):
    """Overrides tests/conftest.py's `device` for this suite: adds the checked CPU device."""
    import metalcall as mc

    backend, index, checked = request.param
    if checked:
        return mc.Device("cpu", checked=True)
    return mc.Device(f"{backend}:{index}")


@pytest.fixture(name="compile_once")
def compile_once_fixture():
    """The cached compile helper: compile_once(device, src, defines=None, fast_math=True)."""
    return mcconf.compile_once


@pytest.fixture
def rng():
    return np.random.default_rng(20240601)


def pytest_collection_modifyitems(config, items):
    """`xfail(reason="CPU backend: ...")` marks describe the CPU backend only, and
    `xfail(reason="CUDA backend: ...")` marks the CUDA backend only: on another backend
    the same test must pass, so the mark is dropped there."""
    prefixes = {"cpu": "CPU backend:", "cuda": "CUDA backend:", "metal": "Metal backend:"}
    for item in items:
        callspec = getattr(item, "callspec", None)
        if callspec is None or "device" not in callspec.params:
            continue
        backend = callspec.params["device"][0]
        others = tuple(p for name, p in prefixes.items() if name != backend)
        item.own_markers[:] = [
            m for m in item.own_markers
            if not (m.name == "xfail" and str(m.kwargs.get("reason", "")).startswith(others))
        ]
