"""Fast-math kernels calling sin, cos, exp, log, pow, powr and sincos: on x86-64 Linux the CPU
backend links glibc's vector math (libmvec) and runs such a kernel's thread loop 8 lanes wide, so
that the calls are vector calls (docs/design.md, "Vector math on the CPU"). Values against NumPy in
float64, over ordinary arguments, a count that leaves a partial vector, and the special values
(NaN, infinities, zeros, large arguments) the functions must keep; on every device, the sandboxed
CPU too (its worker loads libmvec before its system call filter)."""

import numpy as np
import pytest

import metalcall as mc
from mctest import with_sandbox_device

device = with_sandbox_device()

SOURCE = """
#include <metal_stdlib>
using namespace metal;
kernel void vector_math(device const float* a [[buffer(0)]], device const float* b [[buffer(1)]],
                        device float* out [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    const float x = a[i], y = b[i];
    device float* o = out + 8 * i;
    o[0] = sin(x);
    o[1] = cos(x);
    o[2] = exp(x);
    o[3] = log(y);
    o[4] = pow(y, x);
    o[5] = powr(y, 0.75f);
    float c;
    o[6] = sincos(x, c);
    o[7] = c;
}
"""


def _expected(a, b):
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    with np.errstate(all="ignore"):
        return np.stack([np.sin(a64), np.cos(a64), np.exp(a64), np.log(b64), np.power(b64, a64),
                         np.power(b64, 0.75), np.sin(a64), np.cos(a64)], axis=1)


def _run(device, a, b):
    out = device.empty(8 * a.size, np.float32)
    device.compile(SOURCE).vector_math(a.size, device.asarray(a), device.asarray(b), out)
    return np.asarray(out).reshape(-1, 8).astype(np.float64)


def test_ordinary_arguments(device):
    n = 100_003  # a partial vector at the end
    rng = np.random.default_rng(3)
    a = rng.uniform(-20, 20, n).astype(np.float32)
    b = rng.uniform(1e-3, 50, n).astype(np.float32)
    got, want = _run(device, a, b), _expected(a, b)
    # Metal's fast math: sin/cos within 2^-13 absolute on [-pi, pi] (more outside), the others
    # within a few ulp; glibc's vector functions stay within 4 ulp.
    np.testing.assert_allclose(got[:, [0, 1, 6, 7]], want[:, [0, 1, 6, 7]], rtol=0, atol=2e-6)
    np.testing.assert_allclose(got[:, [2, 3, 4, 5]], want[:, [2, 3, 4, 5]], rtol=5e-6, atol=1e-30)


def test_special_values(device):
    specials = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, 88.0, -104.0, 1e5, -3e4, 1e-30], np.float32)
    a = np.repeat(specials, specials.size)
    b = np.abs(np.tile(specials, specials.size))
    got = _run(device, a, b)
    with np.errstate(over="ignore"):
        want = _expected(a, b).astype(np.float32).astype(np.float64)  # what float can hold: inf past FLT_MAX
    finite = np.isfinite(want)
    assert np.array_equal(np.isnan(got), np.isnan(want))
    assert np.array_equal(got[np.isinf(want)], want[np.isinf(want)])
    np.testing.assert_allclose(got[finite], want[finite], rtol=1e-5, atol=1e-6)


def test_precise_builds_keep_libm(device):
    """A precise library gives the same values from libm's scalar functions."""
    a = np.linspace(-6, 6, 1001, dtype=np.float32)
    b = np.linspace(0.01, 30, 1001, dtype=np.float32)
    out = device.empty(8 * a.size, np.float32)
    device.compile(SOURCE, fast_math=False).vector_math(a.size, device.asarray(a), device.asarray(b), out)
    got = np.asarray(out).reshape(-1, 8).astype(np.float64)
    np.testing.assert_allclose(got, _expected(a, b), rtol=3e-7, atol=1e-7)
