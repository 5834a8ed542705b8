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
    "cpp/src/backends/translated/host_cxx.hpp": '#include "msl/lex/lexer.hpp"\n',
    "cpp/src/backends/cpu/fiber.hpp": "#pragma once\n",
    "cpp/src/backends/cpu/fiber.cpp": '#include "fiber.hpp"\n#include <sys/mman.h>\n',
    "cpp/src/backends/cpu/cpu_device.cpp": ('#include "backends/cpu/fiber.hpp"\n#include "backends/translated/library.hpp"\n'
                                            '#include "core/backend.hpp"\n#include "msl/lex/lexer.hpp"\n'),
    "cpp/src/backends/cuda/cuda_device.cpp": '#include "backends/translated/library.hpp"\n#include "msl/lex/lexer.hpp"\n',
    "cpp/src/backends/metal/metal_device.mm": ('#include "core/backend.hpp"\n#include "msl/lex/lexer.hpp"\n'
                                               "#include <Foundation/Foundation.h>\n#include <Metal/Metal.h>\n"),
    # The host compiler's preprocessor is the one header of the translated wing the Metal backends use.
    "cpp/src/backends/metal/metal_compiler.mm": '#include "backends/translated/host_cxx.hpp"\n',
    "cpp/src/backends/metal_sim/sim_device.cpp": '#include "backends/translated/host_cxx.hpp"\n',
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
    "metal_sim_to_translated": ("cpp/src/backends/metal_sim/sim_device.cpp", '#include "backends/translated/library.hpp"',
                                "backends/metal_sim/ may not include backends/translated/"),
    "cpu_to_metal_sim": ("cpp/src/backends/cpu/cpu_device.cpp", '#include "backends/metal_sim/sim_device.cpp"',
                         "backends/cpu/ may not include backends/metal_sim/"),
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


# ----------------------------------------------------------------------------- import circles
# A package that uses every import form without a circle: relative (one and two dots), `from . import
# module`, absolute, a function-level import of a lower module, an extension module's stub whose own
# imports (for type checkers) would close a circle if they counted.
CLEAN_PACKAGE = {
    "python/metalcall/__init__.py": "from ._core import Device\nfrom .api import run\nfrom . import helpers\n",
    "python/metalcall/_core.pyi": "from metalcall.api import run\nclass Device: ...\n",
    "python/metalcall/api.py": "import os\nfrom ._core import Device\nfrom .sub import lower\n\n"
                               "def run():\n    from .sub.lower import f\n    return f()\n",
    "python/metalcall/helpers.py": "import numpy as np\nimport metalcall._core\n",
    "python/metalcall/sub/__init__.py": "from . import lower\n",
    "python/metalcall/sub/lower.py": "from .. import _core\nfrom ..helpers import np\n\ndef f():\n    return 1\n",
}

# (files replacing those of CLEAN_PACKAGE, the circle's modules in the order the message names them,
# the file:line the message starts with)
CIRCLES = {
    "relative_module_level": ({"python/metalcall/sub/lower.py": "from ..api import run\n"},
                              "metalcall.api -> metalcall.sub.lower -> metalcall.api",
                              "python/metalcall/api.py:3"),
    "function_level_import_counts": (
        {"python/metalcall/helpers.py": "import os\n\ndef later():\n    from metalcall import api\n    return api\n",
         "python/metalcall/sub/lower.py": "from .. import helpers\n"},
        "metalcall.api -> metalcall.sub.lower -> metalcall.helpers -> metalcall.api",
        "python/metalcall/api.py:3"),
    "submodule_imports_its_package": ({"python/metalcall/helpers.py": "import metalcall as mc\n"},
                                      "metalcall -> metalcall.helpers -> metalcall", "python/metalcall/__init__.py:3"),
    "from_package_import_name": ({"python/metalcall/sub/lower.py": "from metalcall.sub import lower as again\n"
                                                                   "from . import f2\n",
                                  "python/metalcall/sub/__init__.py": "from . import lower\nf2 = 2\n"},
                                 "metalcall.sub -> metalcall.sub.lower -> metalcall.sub",
                                 "python/metalcall/sub/__init__.py:1"),
}


def test_python_package_without_circles_passes(tmp_path):
    write_tree(tmp_path, {**CLEAN_TREE, **CLEAN_PACKAGE})
    result = run_checker(tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.startswith("check_layers: ok:"), result.stdout
    assert "6 Python modules" in result.stdout and "no import circle" in result.stdout


@pytest.mark.parametrize("case", sorted(CIRCLES))
def test_import_circle_fails_naming_each_import(tmp_path, case):
    replaced, cycle, where = CIRCLES[case]
    write_tree(tmp_path, {**CLEAN_TREE, **CLEAN_PACKAGE, **replaced})
    result = run_checker(tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    problems = [line for line in result.stdout.splitlines() if not line.startswith("check_layers:")]
    assert len(problems) == 1, result.stdout
    assert problems[0].startswith(f"{where}: import circle: {cycle} ("), problems[0]
    assert "FAILED: 1 import circle(s)" in result.stdout


def test_each_circle_is_reported(tmp_path):
    files = {**CLEAN_TREE, **CLEAN_PACKAGE,
             "python/metalcall/helpers.py": "from . import api\n",  # api -> sub.lower -> helpers -> api
             "python/metalcall/other/__init__.py": "from .b import g\n",
             "python/metalcall/other/b.py": "import metalcall.other\n"}
    write_tree(tmp_path, files)
    result = run_checker(tmp_path)
    assert result.returncode == 1, result.stdout
    problems = [line for line in result.stdout.splitlines() if not line.startswith("check_layers:")]
    assert len(problems) == 2, result.stdout
    assert "import circle: metalcall.api -> metalcall.sub.lower -> metalcall.helpers -> metalcall.api (" in problems[0]
    assert "import circle: metalcall.other -> metalcall.other.b -> metalcall.other (" in problems[1]
    assert "FAILED: 2 import circle(s)" in result.stdout


# ----------------------------------------------------------------------------- file sizes
def test_files_up_to_the_line_limit_pass(tmp_path):
    files = {**CLEAN_TREE, **CLEAN_PACKAGE}
    files["cpp/src/core/device.cpp"] += "// line\n" * (700 - 2)
    files["cpp/src/msl/prelude/metal_math.h"] = "#pragma once\n" * 700
    files["python/metalcall/helpers.py"] += "x = 1\n" * (700 - 2)
    files["cpp/src/core/notes.txt"] = "a note\n" * 2000  # not a source file
    write_tree(tmp_path, files)
    result = run_checker(tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no file over 700 lines" in result.stdout


@pytest.mark.parametrize("rel", ["cpp/src/core/device.cpp", "cpp/src/msl/prelude/metal_math.h",
                                 "cpp/include/metalcall/device.hpp", "cpp/tests/fiber_test.cpp",
                                 "cpp/src/backends/metal/metal_device.mm", "python/metalcall/helpers.py"])
def test_file_over_the_line_limit_fails(tmp_path, rel):
    files = {**CLEAN_TREE, **CLEAN_PACKAGE}
    files[rel] = files.get(rel, "") + "\n" * 701
    write_tree(tmp_path, files)
    result = run_checker(tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    problems = [line for line in result.stdout.splitlines() if not line.startswith("check_layers:")]
    assert len(problems) == 1, result.stdout
    lines = len(files[rel].splitlines())
    assert problems[0].startswith(f"{rel}:701: {lines} lines, over the 700-line limit"), problems[0]
    assert "FAILED: 1 source file(s) over 700 lines" in result.stdout
