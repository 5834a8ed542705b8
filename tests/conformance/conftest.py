"""Fixtures of the MSL conformance suite (issue P0.2); helpers are in mcconf.py.

* ``device``: defined once for the whole suite in tests/conftest.py (parametrized over
  every device ``mc.get_devices()`` reports: the CPU backend always; Metal / CUDA where present).
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
