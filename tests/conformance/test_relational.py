"""Relational functions: all, any, select, isnan, isinf, isfinite, isnormal, signbit,
isordered/isunordered, on scalars and bool vectors.

The NaN/infinity kernels are compiled with fast_math=False: under fast math Metal may
assume no NaN or infinity exists (as -ffinite-math-only does)."""

from __future__ import annotations

import numpy as np
import pytest

from mcconf import KernelSet, assert_equal, assert_close

KS = KernelSet([
    """
kernel void r_all_any(const device float4* a [[buffer(0)]], const device float4* b [[buffer(1)]],
                      device uint* out [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    float4 x = a[i];
    float4 y = b[i];
    bool4 lt = x < y;
    out[4 * i + 0] = all(lt) ? 1u : 0u;
    out[4 * i + 1] = any(lt) ? 1u : 0u;
    out[4 * i + 2] = all(x.xy > 0.0f) ? 1u : 0u;
    out[4 * i + 3] = any(!(x >= y)) ? 1u : 0u;
}
""",
    """
kernel void r_select(const device float4* a [[buffer(0)]], const device float4* b [[buffer(1)]],
                     const device int* k [[buffer(2)]], device float4* out [[buffer(3)]],
                     device int* oi [[buffer(4)]], uint i [[thread_position_in_grid]]) {
    float4 x = a[i];
    float4 y = b[i];
    out[2 * i + 0] = select(x, y, x < y);            // component-wise max
    out[2 * i + 1] = select(x, float4(0.0f), x < 0.0f);
    oi[i] = select(k[i], -k[i], k[i] < 0);           // scalar abs
}
""",
    """
kernel void r_classify(const device float* a [[buffer(0)]], device uchar* out [[buffer(1)]],
                       uint i [[thread_position_in_grid]]) {
    float x = a[i];
    out[6 * i + 0] = isnan(x);
    out[6 * i + 1] = isinf(x);
    out[6 * i + 2] = isfinite(x);
    out[6 * i + 3] = isnormal(x);
    out[6 * i + 4] = signbit(x);
    out[6 * i + 5] = isunordered(x, 1.0f) ? 2 : (isordered(x, 0.0f) ? 1 : 0);
}
""",
    """
kernel void r_classify_vec(const device float4* a [[buffer(0)]], device uint4* out [[buffer(1)]],
                           device float4* clean [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    float4 x = a[i];
    bool4 bad = isnan(x) || isinf(x);
    out[i] = uint4(bad) + 2 * uint4(signbit(x));
    clean[i] = select(x, float4(0.0f), bad);
}
""",
    """
kernel void r_half_special(const device half* a [[buffer(0)]], device uchar* out [[buffer(1)]],
                           uint i [[thread_position_in_grid]]) {
    half x = a[i];
    out[3 * i + 0] = isnan(x);
    out[3 * i + 1] = isinf(x);
    out[3 * i + 2] = isfinite(x * 2.0h);
}
""",
    # IEEE behaviour the MSL spec gives without fast math: fmin/fmax ignore a NaN,
    # sign(NaN) = 0, 1/0 = inf, sqrt(-1) = NaN
    """
kernel void r_ieee(const device float* a [[buffer(0)]], const device float* b [[buffer(1)]],
                   device float* out [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    float x = a[i];
    float y = b[i];
    out[5 * i + 0] = fmin(x, y);
    out[5 * i + 1] = fmax(x, y);
    out[5 * i + 2] = sign(x);
    out[5 * i + 3] = y / x;
    out[5 * i + 4] = isnan(sqrt(x)) ? 1.0f : 0.0f;
}
"""
], fast_math=False)

N = 400


def test_all_any(device, rng):
    a = rng.standard_normal((N, 4)).astype(np.float32)
    b = rng.standard_normal((N, 4)).astype(np.float32)
    b[::5] = a[::5] + 1  # some rows where all(x < y)
    out = np.zeros(4 * N, np.uint32)
    KS.get(device, "r_all_any")(N, a, b, out)
    lt = a < b
    exp = np.stack([lt.all(1), lt.any(1), (a[:, :2] > 0).all(1), (~(a >= b)).any(1)], 1).astype(np.uint32)
    assert_equal(out, exp.ravel())


def test_select(device, rng):
    a = rng.standard_normal((N, 4)).astype(np.float32)
    b = rng.standard_normal((N, 4)).astype(np.float32)
    k = rng.integers(-1000, 1000, N).astype(np.int32)
    out = np.zeros((2 * N, 4), np.float32)
    oi = np.zeros(N, np.int32)
    KS.get(device, "r_select")(N, a, b, k, out, oi)
    assert_equal(out, np.stack([np.maximum(a, b), np.where(a < 0, 0, a)], 1).reshape(-1, 4))
    assert_equal(oi, np.abs(k))


SPECIAL = np.array([0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, -np.nan, 1e-40, -1e-40, 3.4e38, 1.17549435e-38],
                   np.float32)


def test_classify(device, rng):
    x = np.concatenate([SPECIAL, rng.standard_normal(N - len(SPECIAL)).astype(np.float32)])
    out = np.zeros(6 * N, np.uint8)
    KS.get(device, "r_classify")(N, x, out)
    fin = np.isfinite(x)
    normal = fin & (np.abs(x) >= np.finfo(np.float32).tiny)
    order = np.where(np.isnan(x), 2, 1)
    exp = np.stack([np.isnan(x), np.isinf(x), fin, normal, np.signbit(x), order], 1).astype(np.uint8)
    assert_equal(out, exp.ravel())


def test_classify_vector(device, rng):
    x = rng.standard_normal((N, 4)).astype(np.float32)
    x.ravel()[: len(SPECIAL)] = SPECIAL
    out = np.zeros((N, 4), np.uint32)
    clean = np.zeros((N, 4), np.float32)
    KS.get(device, "r_classify_vec")(N, x, out, clean)
    bad = np.isnan(x) | np.isinf(x)
    assert_equal(out, bad.astype(np.uint32) + 2 * np.signbit(x).astype(np.uint32))
    assert_equal(clean, np.where(bad, 0, x).astype(np.float32))


def test_half_special(device, rng):
    x = np.array([0, 1, -2, np.inf, -np.inf, np.nan, 40000, 65504] + [0.5] * 8, np.float16)
    n = len(x)
    out = np.zeros(3 * n, np.uint8)
    KS.get(device, "r_half_special")(n, x, out)
    with np.errstate(over="ignore", invalid="ignore"):
        exp = np.stack([np.isnan(x), np.isinf(x), np.isfinite(x * np.float16(2))], 1).astype(np.uint8)
    assert_equal(out, exp.ravel())


def test_ieee_special_values(device):
    nan, inf = np.float32(np.nan), np.float32(np.inf)
    a = np.array([nan, 1.0, 0.0, -0.0, -2.0, inf, nan, 3.0], np.float32)
    b = np.array([1.0, nan, 1.0, -1.0, 4.0, 1.0, nan, 2.0], np.float32)
    n = len(a)
    out = np.zeros(5 * n, np.float32)
    KS.get(device, "r_ieee")(n, a, b, out)
    with np.errstate(all="ignore"):
        exp = np.stack([np.fmin(a, b), np.fmax(a, b), np.where(np.isnan(a), 0, np.sign(a)), b / a,
                        np.isnan(np.sqrt(a)).astype(np.float32)], 1).ravel()
    assert_equal(out, exp.astype(np.float32))
