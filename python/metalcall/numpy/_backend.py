"""Where the heavy kernels come from: metalcall.numpy._kernels (branch p14-kern) when present,
else the simple fallbacks in _fallback.py. Imported lazily, so merging _kernels needs no edit here."""

from __future__ import annotations

import importlib


def kernels(area: str):
    """The module giving `area` ("reduce", "scan", "matmul", "sort", "random") kernels."""
    try:
        return importlib.import_module(f"metalcall.numpy._kernels.{area}")
    except ImportError:
        from . import _fallback

        return _fallback


def using_fallback() -> bool:
    try:
        importlib.import_module("metalcall.numpy._kernels")
        return False
    except ImportError:
        return True
