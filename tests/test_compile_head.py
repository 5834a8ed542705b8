"""The CPU backend's precompiled heads (backends/cpu/cpu_compile_head.hpp): with clang as the host
compiler, the translator's part of a unit ahead of the user's code, with the prelude, is compiled
once per head, compiler and flags into a precompiled header kept in the disk cache, and every
build that shares them reads it (`-include-pch`); the first build of a head compiles its whole
unit while the header is made beside it. Each test runs kernels in new processes with
their own cache folder and clang behind a wrapper that logs its command lines, and checks the
kernels' results against NumPy."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest


def _clang() -> str:
    for name in [f"clang++-{v}" for v in range(22, 14, -1)] + ["clang++"]:
        path = shutil.which(name)
        if path:
            first = subprocess.run([path, "--version"], capture_output=True, text=True).stdout.split("\n")[0]
            if "clang version" in first:
                return path
    pytest.skip("no clang++ here: the precompiled heads are clang's (g++ and zig compile whole units)")


RUNNER = r"""
import json, sys
import numpy as np
import metalcall as mc

SRC = '''
kernel void affine(device const float* x [[buffer(0)]], device float* y [[buffer(1)]],
                   uint i [[thread_position_in_grid]]) { y[i] = x[i] * SCALE + 1.0f; }
kernel void dots(device const float2* a [[buffer(0)]], device const float2* b [[buffer(1)]],
                 device float* y [[buffer(2)]], uint i [[thread_position_in_grid]]) { y[i] = dot(a[i], b[i]); }
'''
dev = mc.Device("cpu")
rng = np.random.default_rng(3)
a = rng.standard_normal((64, 2)).astype(np.float32)
b = rng.standard_normal((64, 2)).astype(np.float32)
out = {}
for scale, fast in json.loads(sys.argv[1]):
    lib = dev.compile(SRC.replace("SCALE", repr(float(scale)) + "f"), fast_math=fast)
    x = np.arange(16, dtype=np.float32)
    y = np.zeros(16, np.float32)
    lib.affine(16, x, y)
    d = np.zeros(64, np.float32)
    lib.dots(64, a, b, d)
    out[f"{scale},{fast}"] = [y.tolist(), d.tolist()]
print(json.dumps(out))
"""


class Runs:
    """Kernels in new processes against one cache folder, clang's command lines logged."""

    def __init__(self, tmp_path: Path):
        self.cache = tmp_path / "cache"
        self.log = tmp_path / "clang.log"
        self.wrapper = tmp_path / "clang-wrapper"
        self.wrapper.write_text(f'#!/bin/sh\necho "$*" >> "{self.log}"\nexec "{_clang()}" "$@"\n')
        self.wrapper.chmod(0o755)

    def env(self):
        env = dict(os.environ)
        env.pop("METALCALL_DEVICE", None)
        env.update(METALCALL_CACHE_DIR=str(self.cache), METALCALL_CXX=str(self.wrapper))
        return env

    def run(self, variants):
        """Runs (scale, fast_math) variants in one new process; checks each; returns clang's command lines."""
        if self.log.exists():
            self.log.unlink()
        r = subprocess.run([sys.executable, "-c", RUNNER, json.dumps(variants)], capture_output=True, text=True,
                           env=self.env(), timeout=300)
        assert r.returncode == 0, r.stderr
        out = json.loads(r.stdout.strip().splitlines()[-1])
        rng = np.random.default_rng(3)
        a = rng.standard_normal((64, 2)).astype(np.float32)
        b = rng.standard_normal((64, 2)).astype(np.float32)
        x = np.arange(16, dtype=np.float32)
        for scale, fast in variants:
            y, d = out[f"{scale},{fast}"]
            np.testing.assert_array_equal(np.float32(y), x * np.float32(scale) + np.float32(1))
            exact = a[:, 0] * b[:, 0] + a[:, 1] * b[:, 1]  # float32 products, then their sum
            if fast:
                np.testing.assert_allclose(np.float32(d), exact, rtol=1e-5, atol=1e-6)
            else:  # no contraction into fma without fast math, in the prelude's dot too
                np.testing.assert_array_equal(np.float32(d), exact)
        return self.log.read_text().splitlines() if self.log.exists() else []

    def headers(self):
        return sorted((self.cache / "cpu").glob("*.pch"))


def _made(log):
    return [line for line in log if "c++-header" in line]


def _builds(log, with_header):
    return [line for line in log if "-shared" in line and "c++-header" not in line and
            ("-include-pch" in line) == with_header]


def test_kernels_share_one_header_across_processes(tmp_path):
    runs = Runs(tmp_path)
    log = runs.run([[2, True], [3, True], [4, True]])
    assert len(_made(log)) == 1  # one head, one set of flags: one header
    # The first build compiled whole while the header was made; the others read it.
    assert len(_builds(log, False)) == 1 and len(_builds(log, True)) == 2
    (header,) = runs.headers()
    assert header.stat().st_size > 100_000
    # Another process, another kernel: the disk cache's header, made again by nobody.
    log = runs.run([[5, True]])
    assert not _made(log) and len(_builds(log, True)) == 1
    assert runs.headers() == [header]


def test_flags_of_their_own_get_a_header_of_their_own(tmp_path):
    # A precise build after a fast one: its header is made with its own flags (the prelude's dot
    # keeps its rounding; a header of fast math's flags would let clang contract it).
    runs = Runs(tmp_path)
    log = runs.run([[2, True], [2, False], [6, False]])
    assert len(_made(log)) == 2 and len(_builds(log, False)) == 2 and len(_builds(log, True)) == 1
    assert len(runs.headers()) == 2


def test_errors_read_as_without_a_header(tmp_path):
    # A build that fails with the header is done again whole: the error is the whole unit's,
    # at the user's line and column, with no build folder in it.
    runs = Runs(tmp_path)
    code = r"""
import metalcall as mc
dev = mc.Device("cpu")
dev.compile('''kernel void ok(device float* y [[buffer(0)]], uint i [[thread_position_in_grid]]) { y[i] = 1.0f; }''')
for src in ('''kernel void k(device float* y [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    y[i] = undeclared_thing * 2.0f;
}''', '''struct S { int a; };
kernel void k(device int* y [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    S s{1};
    y[i] = clamp(s, s, s).a;
}'''):
    try:
        dev.compile(src)
    except mc.CompileError as e:
        print(repr((e.line, e.column, str(e))))
"""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=runs.env(), timeout=300)
    assert r.returncode == 0, r.stderr
    (first, second) = [eval(line) for line in r.stdout.strip().splitlines()]
    assert first[:2] == (2, 12) and "undeclared_thing" in first[2]
    assert second[0] == 4 and "clamp" in second[2]
    assert "tmp-build" not in first[2] + second[2]
    log = runs.log.read_text().splitlines()
    # The first kernel made the header; each error was met with it, then compiled whole.
    assert len(_builds(log, True)) == 2 and len(_builds(log, False)) == 3
