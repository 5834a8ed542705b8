"""Where the installed wheel keeps metalcall's C++ package: headers, library and CMake config.

    cmake -Dmetalcall_DIR="$(python -m metalcall --cmakedir)" ...   (pybind11's convention)
"""

from __future__ import annotations

from pathlib import Path

_ROOT = Path(__file__).resolve().parent


def _existing(path: Path, what: str) -> str:
    if not path.is_dir():
        raise FileNotFoundError(f"this metalcall has no {what} at {path}: it was installed without the C++ "
                                "package (METALCALL_INSTALL_CPP=OFF); reinstall it with `pip install metalcall`")
    return str(path)


def get_include() -> str:
    """The folder to add to the include path: it holds metalcall/metalcall.hpp."""
    return _existing(_ROOT / "include", "C++ headers")


def get_cmake_dir() -> str:
    """The folder holding metalcallConfig.cmake, for find_package(metalcall) via -Dmetalcall_DIR."""
    return _existing(_ROOT / "share" / "cmake" / "metalcall", "CMake package")
