"""Zig's clang as the CPU backend's compiler where there is no system one.

The `ziglang` package (`pip install "metalcall[zig]"`) carries a whole clang toolchain. When it is
installed, its `zig` binary is named to the C++ core through METALCALL_ZIG, which the core uses
when no system C++ compiler is found or when METALCALL_CXX=zig asks for it
(cpp/src/backends/translated/host_cxx.cpp). Finding it does not import the package.
"""

from __future__ import annotations

import importlib.util
import os


def zig_binary() -> str | None:
    """The ziglang package's zig binary, or None when the package is not installed."""
    spec = importlib.util.find_spec("ziglang")
    if spec is None or not spec.submodule_search_locations:
        return None
    for folder in spec.submodule_search_locations:
        for name in ("zig", "zig.exe"):
            path = os.path.join(folder, name)
            if os.path.isfile(path) and os.access(path, os.X_OK):
                return path
    return None


def install() -> None:
    """Tells the core where zig is, unless the environment already says."""
    if not os.environ.get("METALCALL_ZIG"):
        path = zig_binary()
        if path:
            os.environ["METALCALL_ZIG"] = path
