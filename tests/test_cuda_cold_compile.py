"""A cold CUDA compile (new process, empty cache folder) runs no host compiler unless the source
needs the C preprocessor (backends/translated/translation_cache.cpp): looking one up ran each
candidate's `--version`, about 25 ms of a 70 ms cold compile on the H200. A logging wrapper set as
METALCALL_CXX records every run; results are NumPy's either way. Skipped without CUDA."""

from __future__ import annotations

import os
import shutil
import stat

import pytest

import metalcall as mc

HAS_CUDA = "cuda" in mc.backends() and any(d.backend == "cuda" for d in mc.get_devices())
pytestmark = pytest.mark.skipif(not HAS_CUDA, reason="no CUDA device")

PROBE = """
import numpy as np
import metalcall as mc
SRC = '''
#include <metal_stdlib>
using namespace metal;
DEFINE
kernel void scale(const device float* a [[buffer(0)]], device float* c [[buffer(1)]],
                  uint i [[thread_position_in_grid]]) {{ c[i] = a[i] * FACTOR; }}
'''
dev = mc.Device("cuda")
a = np.arange(100, dtype=np.float32)
c = np.zeros(100, np.float32)
dev.compile(SRC.replace('DEFINE', {define!r})).scale(100, a, c)
np.testing.assert_array_equal(c, a * 3)
print("ok")
"""


def wrapper(tmp_path):
    """A C++ compiler that logs its arguments, then runs the system's."""
    real = shutil.which("c++") or shutil.which("g++") or shutil.which("clang++")
    if real is None:
        pytest.skip("no host C++ compiler to wrap")
    log = tmp_path / "cxx.log"
    script = tmp_path / "logged-cxx"
    script.write_text(f'#!/bin/sh\necho "$*" >> "{log}"\nexec "{real}" "$@"\n')
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return script, log


def run(run_python, tmp_path, define):
    script, log = wrapper(tmp_path)
    r = run_python(PROBE.format(define=define), env={"METALCALL_CACHE_DIR": str(tmp_path / "cache"),
                                                      "METALCALL_CXX": str(script)})
    assert r.returncode == 0 and "ok" in r.stdout, r.stderr[-3000:]
    return log.read_text().splitlines() if log.exists() else []


def test_a_plain_source_runs_no_host_compiler(run_python, tmp_path):
    # FACTOR through `constant`: no directive but the include, so no preprocessing.
    assert run(run_python, tmp_path, "constant float FACTOR = 3.0f;") == []


def test_a_source_with_directives_is_preprocessed_by_the_host_compiler(run_python, tmp_path):
    runs = run(run_python, tmp_path, "#define FACTOR 3.0f")
    assert any("--version" in r for r in runs), runs
    assert any(" -E " in f" {r} " for r in runs), runs
    assert os.path.isdir(tmp_path / "cache")
