"""The conformance suite's size: issue P0.2 asks for at least 120 kernels (we aim for 130+).

Every kernel source of the suite is a KernelSet or a registered standalone source
(mcconf.REGISTRY); this test imports every test module and counts the distinct kernel
names (a template kernel counts once per [[host_name]] instantiation).
"""

from __future__ import annotations

import importlib
from pathlib import Path

import mcconf

MODULES = sorted(p.stem for p in Path(__file__).resolve().parent.glob("test_*.py") if p.stem != "test_count")


def all_kernels():
    for name in MODULES:
        importlib.import_module(name)
    names = [k for _, ks in mcconf.REGISTRY for k in ks]
    return names


def test_at_least_130_kernels():
    names = all_kernels()
    assert len(names) == len(set(names)), "kernel names must be unique across the suite"
    assert len(names) >= 130, f"only {len(names)} kernels"


def test_every_area_is_covered():
    all_kernels()
    for name in ("test_types", "test_vectors", "test_math", "test_integer", "test_geometric", "test_relational",
                 "test_matrix", "test_threadgroup", "test_simdgroup", "test_atomics", "test_language",
                 "test_algorithms"):
        assert name in MODULES, f"{name}.py is missing"


if __name__ == "__main__":  # python tests/conformance/test_count.py: print the tally
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    per_module = {}
    for name in MODULES:
        before = len(mcconf.REGISTRY)
        importlib.import_module(name)
        per_module[name] = sum(len(ks) for _, ks in mcconf.REGISTRY[before:])
    for name, n in per_module.items():
        print(f"{name:20s} {n:4d}")
    print(f"{'total':20s} {sum(per_module.values()):4d}")
