"""The `libclang` wheel's library for the translation verifier (on where libclang loads; METALCALL_VERIFY=0 off).

The verifier parses the CPU backend's translated C++ with libclang, loaded by the C++ core
at run time (cpp/src/msl/verify/). When the `libclang` package (`pip install libclang`) is
installed, its library's path is given to the core, which tries it after METALCALL_LIBCLANG
and before the system's. Finding it does not import the package.
"""

from __future__ import annotations

import importlib.util
import os

from . import _core


def wheel_library() -> str | None:
    """clang/native/libclang.so (or .dylib / .dll) of the libclang wheel, or None."""
    spec = importlib.util.find_spec("clang")
    if spec is None or not spec.submodule_search_locations:
        return None
    for folder in spec.submodule_search_locations:
        for name in ("libclang.so", "libclang.dylib", "libclang.dll"):
            path = os.path.join(folder, "native", name)
            if os.path.isfile(path):
                return path
    return None


def install() -> None:
    """Tells the core where the wheel's libclang is, when it is installed."""
    path = wheel_library()
    if path:
        _core._set_wheel_libclang(path)
