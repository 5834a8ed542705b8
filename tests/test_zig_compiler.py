"""The CPU backend with zig's clang (the `ziglang` package, `pip install "metalcall[zig]"`): on a
machine with no system C++ compiler, and when METALCALL_CXX=zig asks for it. Each case runs in a
fresh process whose PATH holds no compiler. Skipped, saying so, where ziglang is not installed
(CI installs it)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from metalcall import _zig

PROGRAM = textwrap.dedent("""
    import numpy as np, metalcall as mc
    src = '''
    #include <metal_stdlib>
    using namespace metal;
    #define SCALE 3.0h
    kernel void fma_half(const device half* a [[buffer(0)]], device half* out [[buffer(1)]],
                         constant float& b [[buffer(2)]], uint i [[thread_position_in_grid]],
                         uint lane [[thread_index_in_simdgroup]]) {
        half x = a[i] * SCALE + half(b);
        out[i] = x + half(simd_sum(lane) & 1);
    }
    kernel void mul(const device float* a [[buffer(0)]], const device float* b [[buffer(1)]],
                    device float* c [[buffer(2)]], uint i [[thread_position_in_grid]]) { c[i] = a[i] * b[i]; }
    '''
    dev = mc.Device("cpu")
    lib = dev.compile(src, defines={"UNUSED": 1})
    a = np.linspace(-2, 2, 64).astype(np.float16)
    out = np.empty_like(a)
    lib.fma_half(64, a, out, 0.5)
    expected = (a * np.float16(3) + np.float16(0.5)).astype(np.float16)   # simd_sum of 0..31 is even
    assert np.array_equal(out, expected), (out, expected)
    x = np.random.default_rng(0).random(10000, dtype=np.float32)
    c = dev.empty(10000, np.float32)
    lib.mul(10000, x, x, c)
    assert np.array_equal(np.asarray(c), x * x)
    print("ran")
""")


def _run(tmp_path, **env_changes: str) -> subprocess.CompletedProcess:
    empty = tmp_path / "empty-bin"
    empty.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k not in ("METALCALL_CXX", "METALCALL_ZIG", "CXX")}
    env.update({"PATH": str(empty), "METALCALL_CACHE_DIR": str(tmp_path / "cache"), "METALCALL_DEVICE": "cpu"})
    env.update(env_changes)
    return subprocess.run([sys.executable, "-c", PROGRAM], env=env, capture_output=True, text=True, timeout=600)


def test_kernel_runs_with_no_system_compiler(tmp_path):
    if _zig.zig_binary() is None:
        pytest.skip("the ziglang package is not installed: pip install 'metalcall[zig]'")
    p = _run(tmp_path)
    assert p.returncode == 0 and p.stdout.strip() == "ran", p.stdout + p.stderr


def test_zig_when_asked(tmp_path):
    if _zig.zig_binary() is None:
        pytest.skip("the ziglang package is not installed: pip install 'metalcall[zig]'")
    p = _run(tmp_path, METALCALL_CXX="zig", PATH=os.environ["PATH"])  # system compilers on PATH, zig asked
    assert p.returncode == 0 and p.stdout.strip() == "ran", p.stdout + p.stderr


def test_no_compiler_at_all_says_how_to_get_one(tmp_path):
    p = _run(tmp_path, METALCALL_ZIG=str(tmp_path / "no-zig-here"))
    assert p.returncode != 0
    assert "DeviceError" in p.stderr and "no C++ compiler found" in p.stderr and "metalcall[zig]" in p.stderr


def test_zig_asked_but_missing(tmp_path):
    p = _run(tmp_path, METALCALL_CXX="zig", METALCALL_ZIG=str(tmp_path / "no-zig-here"))
    assert p.returncode != 0
    assert "METALCALL_CXX is set to 'zig'" in p.stderr and "metalcall[zig]" in p.stderr
