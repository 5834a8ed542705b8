"""Tests of tools/check_layers.py (the include-layer check of DESIGN.md section 1) on small
synthetic source trees: a clean tree passes, and every kind of forbidden include fails
with the file and line named."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

CHECKER = Path(__file__).resolve().parent.parent / "tools" / "check_layers.py"

# A tree that uses every allowed edge once.
CLEAN_TREE = {
    "cpp/include/metalcall/device.hpp": '#include "metalcall/errors.hpp"\n#include <vector>\n',
    "cpp/include/metalcall/errors.hpp": "#include <stdexcept>\n",
    "cpp/include/metalcall/metalcall.hpp": '#include "metalcall/device.hpp"\n#include "metalcall/version.hpp"\n',
    "cpp/include/metalcall/version.hpp.in": "#define METALCALL_VERSION \"@V@\"\n",
    "cpp/src/core/backend.hpp": '#include "metalcall/device.hpp"\n',
    "cpp/src/core/device.cpp": '#include "core/backend.hpp"\n#include "metalcall/errors.hpp"\n',
    "cpp/src/msl/lex/lexer.hpp": '#include "metalcall/errors.hpp"\n',
    "cpp/src/msl/lex/lexer.cpp": '#include "msl/lex/lexer.hpp"\n'
                             '// the translator writes includes into generated text:\n'
                             'const char* text = R"x(\n#include "core/backend.hpp"\n#include <pybind11/pybind11.h>\n)x";\n',
    "cpp/src/msl/prelude/metal_stdlib.h": '#include "metal_math.h"\n',
    "cpp/src/msl/prelude/metal_math.h": "#pragma once\n",
    "cpp/src/backends/translated/library.hpp": '#include "core/backend.hpp"\n#include "msl/lex/lexer.hpp"\n',
    "cpp/src/backends/translated/library.cpp": '#include "backends/translated/library.hpp"\n',
    "cpp/src/backends/cpu/fiber.hpp": "#pragma once\n",
    "cpp/src/backends/cpu/fiber.cpp": '#include "fiber.hpp"\n#include <sys/mman.h>\n',
    "cpp/src/backends/cpu/cpu_device.cpp": ('#include "backends/cpu/fiber.hpp"\n#include "backends/translated/library.hpp"\n'
                                            '#include "core/backend.hpp"\n#include "msl/lex/lexer.hpp"\n'),
    "cpp/src/backends/cuda/cuda_device.cpp": '#include "backends/translated/library.hpp"\n#include "msl/lex/lexer.hpp"\n',
    "cpp/src/backends/metal/metal_device.mm": ('#include "core/backend.hpp"\n#include "msl/lex/lexer.hpp"\n'
                                               "#include <Foundation/Foundation.h>\n#include <Metal/Metal.h>\n"),
    "cpp/python/bindings.hpp": '#include "metalcall/metalcall.hpp"\n#include <pybind11/pybind11.h>\n',
    "cpp/python/module.cpp": '#include "bindings.hpp"\n',
}

# (file, include line, words the message must hold): each breaks one rule. The include is
# written on line 3 of the file.
FORBIDDEN = {
    "api_to_core": ("cpp/include/metalcall/device.hpp", '#include "core/backend.hpp"', "metalcall/ may not include core/"),
    "core_to_msl": ("cpp/src/core/device.cpp", '#include "msl/lex/lexer.hpp"', "core/ may not include msl/"),
    "core_to_backend": ("cpp/src/core/device.cpp", '#include "backends/cpu/fiber.hpp"', "core/ may not include backends/cpu/"),
    "core_to_translated": ("cpp/src/core/device.cpp", '#include "backends/translated/library.hpp"',
                           "core/ may not include backends/translated/"),
    "msl_to_core": ("cpp/src/msl/lex/lexer.cpp", '#include "core/backend.hpp"', "msl/ may not include core/"),
    "msl_to_backend": ("cpp/src/msl/lex/lexer.cpp", '#include "backends/cpu/fiber.hpp"', "msl/ may not include backends/cpu/"),
    "msl_to_translated": ("cpp/src/msl/lex/lexer.cpp", '#include "backends/translated/library.hpp"',
                          "msl/ may not include backends/translated/"),
    "translated_to_cpu": ("cpp/src/backends/translated/library.cpp", '#include "backends/cpu/fiber.hpp"',
                          "backends/translated/ may not include backends/cpu/"),
    "cuda_to_cpu": ("cpp/src/backends/cuda/cuda_device.cpp", '#include "backends/cpu/fiber.hpp"',
                    "backends/cuda/ may not include backends/cpu/"),
    "cpu_to_cuda": ("cpp/src/backends/cpu/cpu_device.cpp", '#include "backends/cuda/cuda_device.cpp"',
                    "backends/cpu/ may not include backends/cuda/"),
    "metal_to_cpu": ("cpp/src/backends/metal/metal_device.mm", '#include "backends/cpu/fiber.hpp"',
                     "backends/metal/ may not include backends/cpu/"),
    "metal_to_translated": ("cpp/src/backends/metal/metal_device.mm", '#include "backends/translated/library.hpp"',
                            "backends/metal/ may not include backends/translated/"),
    "python_to_core": ("cpp/python/module.cpp", '#include "core/backend.hpp"', "cpp/python/ may not include core/"),
    "python_to_msl": ("cpp/python/module.cpp", '#include "msl/lex/lexer.hpp"', "cpp/python/ may not include msl/"),
    "pybind11_outside_bindings": ("cpp/src/core/device.cpp", "#include <pybind11/pybind11.h>", "pybind11"),
    "metal_header_outside_metal": ("cpp/src/backends/cpu/cpu_device.cpp", "#include <Metal/Metal.h>",
                                   "Objective-C/Metal headers"),
    "foundation_in_public_api": ("cpp/include/metalcall/device.hpp", "#import <Foundation/Foundation.h>",
                                 "Objective-C/Metal headers"),
    "include_in_no_layer": ("cpp/src/core/device.cpp", '#include "../../tools/helper.hpp"', "in no layer"),
}


def write_tree(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def run_checker(root: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(CHECKER), "--root", str(root)],
                          capture_output=True, text=True, timeout=60)


def test_clean_tree_passes(tmp_path):
    write_tree(tmp_path, CLEAN_TREE)
    result = run_checker(tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.startswith("check_layers: ok:"), result.stdout
    assert len(result.stdout.splitlines()) == 1  # a one-line summary


@pytest.mark.parametrize("case", sorted(FORBIDDEN))
def test_forbidden_include_fails_with_file_and_line(tmp_path, case):
    rel, include, rule = FORBIDDEN[case]
    files = dict(CLEAN_TREE)
    files["tools/helper.hpp"] = "#pragma once\n"
    files[rel] = "// a file\n// of the synthetic tree\n" + include + "\n" + files[rel]
    write_tree(tmp_path, files)
    result = run_checker(tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    problems = [line for line in result.stdout.splitlines() if not line.startswith("check_layers:")]
    assert len(problems) == 1, result.stdout
    assert problems[0].startswith(f"{rel}:3: {include}: "), problems[0]
    assert rule in problems[0]
    assert "FAILED: 1 include(s)" in result.stdout


def test_file_outside_every_layer_fails(tmp_path):
    files = dict(CLEAN_TREE)
    files["cpp/src/loose.cpp"] = '#include "metalcall/device.hpp"\n'
    write_tree(tmp_path, files)
    result = run_checker(tmp_path)
    assert result.returncode == 1, result.stdout
    assert "cpp/src/loose.cpp:1: this file is in no layer" in result.stdout


def test_root_without_cpp_is_a_usage_error(tmp_path):
    result = run_checker(tmp_path)
    assert result.returncode == 2
    assert "no cpp/ folder" in result.stderr
