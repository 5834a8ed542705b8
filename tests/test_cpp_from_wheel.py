"""The installed wheel is a C++ package: cpp/examples/hello.cpp builds against it with
find_package(metalcall) (-Dmetalcall_DIR from `python -m metalcall --cmakedir`) and runs."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import metalcall as mc

EXAMPLES = Path(__file__).resolve().parent.parent / "cpp" / "examples"


def _tool(name: str) -> str | None:
    # CI installs cmake and ninja with pip: they sit next to the interpreter, maybe not on PATH.
    return shutil.which(name) or shutil.which(name, path=str(Path(sys.executable).parent))


def _cxx() -> str | None:
    return os.environ.get("CXX") or shutil.which("c++") or shutil.which("g++") or shutil.which("clang++")


def test_paths_point_into_the_installed_package():
    root = Path(mc.__file__).resolve().parent
    assert Path(mc.get_include()) == root / "include"
    assert (Path(mc.get_include()) / "metalcall" / "metalcall.hpp").is_file()
    assert (Path(mc.get_include()) / "metalcall" / "version.hpp").is_file()
    assert (Path(mc.get_cmake_dir()) / "metalcallConfig.cmake").is_file()
    out = subprocess.run([sys.executable, "-m", "metalcall", "--cmakedir"], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == mc.get_cmake_dir()
    out = subprocess.run([sys.executable, "-m", "metalcall", "--includes"], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == f"-I{mc.get_include()}"


def test_cmake_package_is_relocatable():
    for f in Path(mc.get_cmake_dir()).glob("*.cmake"):
        text = f.read_text()
        assert str(EXAMPLES.parent.parent) not in text, f"{f.name} names the source tree"
        assert "/build/" not in text, f"{f.name} names a build folder"


def test_hello_builds_against_the_installed_wheel_and_runs(tmp_path):
    cmake, ninja, cxx = _tool("cmake"), _tool("ninja"), _cxx()
    if cmake is None:
        pytest.skip("cmake is not installed (pip install cmake)")
    if cxx is None:
        pytest.skip("no C++ compiler found (set CXX or install c++)")
    cmakedir = subprocess.run([sys.executable, "-m", "metalcall", "--cmakedir"], capture_output=True, text=True,
                              check=True).stdout.strip()
    generator = ["-G", "Ninja", f"-DCMAKE_MAKE_PROGRAM={ninja}"] if ninja else []
    build = tmp_path / "build"
    configure = subprocess.run([cmake, "-S", str(EXAMPLES), "-B", str(build), *generator,
                                "-DCMAKE_BUILD_TYPE=Release", f"-DCMAKE_CXX_COMPILER={cxx}",
                                f"-Dmetalcall_DIR={cmakedir}"], capture_output=True, text=True)
    assert configure.returncode == 0, configure.stdout + configure.stderr
    built = subprocess.run([cmake, "--build", str(build), "-j", "2"], capture_output=True, text=True)
    assert built.returncode == 0, built.stdout + built.stderr

    env = dict(os.environ, METALCALL_CACHE_DIR=str(tmp_path / "cache"))
    env.pop("METALCALL_DEVICE", None)
    run = subprocess.run([str(build / "hello")], capture_output=True, text=True, env=env, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    assert f"metalcall {mc.__version__}" in run.stdout
    assert "c = a * b: 0 0.5 1 1.5 2 2.5 3 3.5" in run.stdout
    assert "CompileError at line 4" in run.stdout
    assert run.stdout.rstrip().endswith("hello: ok")
