"""metalcall: compile Metal Shading Language compute kernels and call them with
near-zero overhead on buffers NumPy shares with no copies.

On a Mac kernels run on the GPU through Metal; everywhere else the same MSL
source runs on the CPU (always available) or an NVIDIA GPU.

    import numpy as np, metalcall as mc
    dev = mc.Device()
    mul = dev.compile(SOURCE).mul
    mul(len(a), a, b, c)          # grid (in threads) first, then [[buffer(i)]] order
"""

from ._core import (
    ArgumentError,
    Batch,
    Buffer,
    CacheWarning,
    CompileError,
    Completion,
    Device,
    DeviceError,
    DeviceInfo,
    Error,
    ExecutionError,
    Graph,
    Kernel,
    Library,
    Sampler,
    Texture,
    __version__,
    backends,
    from_dlpack,
    get_devices,
)

from ._paths import get_cmake_dir, get_include
from .benchmark import BenchmarkResult, benchmark as _benchmark

#: metalcompute's name for the base error class.
error = Error

# metalcompute 0.2.9's get_devices() field names and v0.1 functions (docs/metalcompute.md).
from ._metalcompute import compile, init, release, rerun, run  # noqa: A004 - metalcompute's names

# Kernel is a pybind11 class; its benchmark method is written in Python (metalcall/_benchmark.py).
Kernel.benchmark = _benchmark  # type: ignore[method-assign]

# Device.generate_mipmaps is written in Python with MSL kernels (metalcall/_mipmaps.py).
from . import _mipmaps

_mipmaps.install()

# Zig's clang for the CPU backend where no system compiler exists (metalcall/_zig.py).
from . import _zig

_zig.install()

# The libclang wheel for the translation verifier, on where libclang loads (metalcall/_libclang.py).
from . import _libclang

_libclang.install()

# Device, Library, Kernel and Buffer pickle (metalcall/_pickling.py; docs/distributed.md).
from . import _pickling

_pickling.install()

__all__ = [
    "ArgumentError",
    "Batch",
    "BenchmarkResult",
    "Buffer",
    "CacheWarning",
    "CompileError",
    "Completion",
    "Device",
    "DeviceError",
    "DeviceInfo",
    "Error",
    "ExecutionError",
    "Graph",
    "Kernel",
    "Library",
    "Sampler",
    "Texture",
    "__version__",
    "backends",
    "error",
    "from_dlpack",
    "get_cmake_dir",
    "get_devices",
    "get_include",
    # metalcompute 0.1's functions (docs/metalcompute.md), called as mc.compile(...) and so on;
    # `from metalcall import *` binds compile over the builtin
    "compile",
    "init",
    "release",
    "rerun",
    "run",
]
