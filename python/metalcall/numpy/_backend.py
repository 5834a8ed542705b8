"""Where the heavy kernels come from: metalcall.numpy._kernels (reductions, scans, matmul,
sort, random), each generating its own MSL; imported lazily so `import metalcall.numpy` stays cheap."""

from __future__ import annotations

import importlib


def kernels(area: str):
    """The module giving `area` ("reduce", "scan", "matmul", "sort", "random") kernels."""
    return importlib.import_module(f"metalcall.numpy._kernels.{area}")
