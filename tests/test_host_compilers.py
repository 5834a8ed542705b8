"""The CPU backend with each host C++ compiler this machine has (`METALCALL_CXX`): a kernel
using half comparisons and conversions, which g++ lowers to libgcc calls (`__nehf2`,
`__truncdfhf2`) where the processor lacks half instructions, must pass the kernel object check
and give NumPy's results. clang is the default where installed; g++ is the fallback, so both
paths are real. Zeros keep their sign under the default fast math with each of them, as on the
GPUs (`-step(e, x)` is -0.0)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap

import pytest

import metalcall as mc

CHILD = textwrap.dedent(r"""
import numpy as np, metalcall as mc
src = '''
#include <metal_stdlib>
using namespace metal;
kernel void half_ops(device const half* a [[buffer(0)]], device const half* b [[buffer(1)]],
                     device half* out [[buffer(2)]], device uint* flags [[buffer(3)]],
                     uint i [[thread_position_in_grid]]) {
    flags[i] = (a[i] != b[i] ? 1u : 0u) | (a[i] < b[i] ? 2u : 0u) | (a[i] >= b[i] ? 4u : 0u);
    out[i] = half(double(a[i]) * 0.5) + b[i];
}
'''
k = mc.Device("cpu").compile(src).half_ops
rng = np.random.default_rng(4)
a = rng.standard_normal(256).astype(np.float16)
b = a.copy(); b[::3] = rng.standard_normal(b[::3].shape).astype(np.float16)
out = np.zeros(256, np.float16); flags = np.zeros(256, np.uint32)
k(256, a, b, out, flags)
want_flags = (a != b) * 1 | (a < b) * 2 | (a >= b) * 4
np.testing.assert_array_equal(flags, want_flags.astype(np.uint32))
want = (a.astype(np.float64) * 0.5).astype(np.float16).astype(np.float32) + b.astype(np.float32)
np.testing.assert_array_equal(out, want.astype(np.float16))
print("ok")
""")


SIGNED_ZEROS = textwrap.dedent(r"""
import numpy as np, metalcall as mc
src = '''
#include <metal_stdlib>
using namespace metal;
kernel void negated(device const float* x [[buffer(0)]], device const float* y [[buffer(1)]],
                    device float* f [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    f[3 * i + 0] = -step(x[i], y[i]);
    f[3 * i + 1] = step(x[i], y[i]) * -1.0f;
    f[3 * i + 2] = x[i] * -0.0f;
}
'''
k = mc.Device("cpu").compile(src).negated  # default options: fast math
x = np.array([0.0, 1.0, -1.0, 2.5, 3.0, -0.0, 7.0, 0.5] * 4, np.float32)
y = np.array([1.0, 0.0, -1.0, 2.0, 3.5, 0.0, -7.0, 0.25] * 4, np.float32)
f = np.full((len(x), 3), np.nan, np.float32)
k(len(x), x, y, f)
s = np.where(y < x, np.float32(0.0), np.float32(1.0))
want = np.stack([-s, s * np.float32(-1.0), x * np.float32(-0.0)], axis=1)
np.testing.assert_array_equal(f.view(np.uint32), want.view(np.uint32))  # -0.0 and +0.0 differ here
print("ok")
""")


def _run_with(compiler, child, tmp_path):
    if "cpu" not in mc.backends():
        pytest.skip("the cpu backend is not built in")
    names = [compiler] + ([f"clang++-{v}" for v in range(22, 14, -1)] if compiler == "clang++" else [])
    path = next((shutil.which(n) for n in names if shutil.which(n)), None)
    if path is None:
        pytest.skip(f"no {compiler} on this machine")
    env = {**os.environ, "METALCALL_CXX": path, "METALCALL_CACHE_DIR": str(tmp_path / "cache")}
    proc = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-3000:]


@pytest.mark.parametrize("compiler", ["g++", "clang++"])
def test_half_kernels_with_each_host_compiler(compiler, tmp_path):
    _run_with(compiler, CHILD, tmp_path)


@pytest.mark.parametrize("compiler", ["g++", "clang++"])
def test_zeros_keep_their_sign_with_each_host_compiler(compiler, tmp_path):
    _run_with(compiler, SIGNED_ZEROS, tmp_path)
