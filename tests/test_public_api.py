"""Every public module of metalcall exports only its API: each has __all__, every name in __all__
exists, and no other name its dir() shows is a module or a helper it imported (numpy as np,
`from __future__ import annotations`, a private module's function). Public modules: metalcall and
every submodule whose dotted name has no part starting with "_"."""

from __future__ import annotations

import importlib
import pkgutil
import types

import pytest

import metalcall


def public_module_names() -> list[str]:
    names = ["metalcall"]
    for info in pkgutil.walk_packages(metalcall.__path__, "metalcall."):
        if not any(part.startswith("_") for part in info.name.split(".")):
            names.append(info.name)
    return sorted(names)


PUBLIC_MODULES = public_module_names()


def leaked_names(module: types.ModuleType) -> dict[str, str]:
    """Public names of dir(module) outside its __all__ that are modules or come from another module
    -> what they are. A package's public submodules are not leaks: Python binds every imported
    submodule as an attribute of its package (metalcall.numpy.random on metalcall.numpy)."""
    exported = set(getattr(module, "__all__", ()))
    leaks = {}
    for name in dir(module):
        if name.startswith("_") or name in exported:
            continue
        value = getattr(module, name)
        if isinstance(value, types.ModuleType):
            if value.__name__ != f"{module.__name__}.{name}":
                leaks[name] = f"the module {value.__name__}"
            continue
        owner = getattr(value, "__module__", None)  # functions, classes, typing names, __future__ features
        if isinstance(owner, str) and owner != module.__name__:
            leaks[name] = f"imported from {owner}"
    return leaks


def test_the_public_modules_are_found():
    assert {"metalcall", "metalcall.benchmark", "metalcall.numpy", "metalcall.numpy.random"} <= set(PUBLIC_MODULES)


@pytest.mark.parametrize("name", PUBLIC_MODULES)
def test_public_module_exports_only_its_api(name):
    module = importlib.import_module(name)
    assert isinstance(getattr(module, "__all__", None), (list, tuple)), f"{name} has no __all__"
    assert all(isinstance(n, str) for n in module.__all__)
    assert len(set(module.__all__)) == len(module.__all__), f"{name}.__all__ names something twice"
    missing = [n for n in module.__all__ if not hasattr(module, n)]
    assert not missing, f"{name}.__all__ names what the module does not have: {missing}"
    leaks = leaked_names(module)
    assert not leaks, f"{name} shows helpers outside its __all__ (import them under a _name, or export them): {leaks}"


def test_star_import_gives_the_api():
    space: dict = {}
    exec("from metalcall.numpy.random import *", space)
    assert set(space) - {"__builtins__"} == set(metalcall.numpy.random.__all__)
    assert {"default_rng", "Generator", "randn"} <= set(space)


def test_leak_check_flags_what_the_old_random_module_showed():
    # metalcall.numpy.random once showed D, F, R, np, annotations and kernels (P2.5 item 7)
    module = types.ModuleType("metalcall.numpy.fake")
    exec("from __future__ import annotations\n"
         "import numpy as np\n"
         "from metalcall.numpy import _dtypes as D, _fusion as F, _runtime as R\n"
         "from metalcall.numpy._backend import kernels\n"
         "from metalcall.numpy import random\n"
         "def default_rng(seed=None):\n    return seed\n"
         "def helper():\n    return 1\n"
         "__all__ = ['default_rng']\n", module.__dict__)
    leaks = leaked_names(module)
    assert set(leaks) == {"annotations", "np", "D", "F", "R", "kernels", "random"}, leaks
    assert leaks["kernels"] == "imported from metalcall.numpy._backend"
    assert leaks["np"] == "the module numpy"
