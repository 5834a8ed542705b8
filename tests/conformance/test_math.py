"""Math library (metal::, fast::, precise::), common functions, constants and limits."""

from __future__ import annotations

import numpy as np
import pytest

from mcconf import KernelSet, assert_close, assert_equal

# Tolerances: metal:: under the default fast-math compile, fast:: looser, precise:: tight.
TOL = dict(rtol=2e-5, atol=2e-6)
FAST = dict(rtol=1e-3, atol=3e-4)
PRECISE = dict(rtol=2e-6, atol=1e-7)

KS = KernelSet([
    """
kernel void m_trig(const device float* x [[buffer(0)]], const device float* y [[buffer(1)]],
                   device float* out [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    float a = x[i];
    float b = y[i];
    out[7 * i + 0] = sin(a);
    out[7 * i + 1] = cos(a);
    out[7 * i + 2] = tan(a * 0.45f);
    out[7 * i + 3] = asin(a / 3.0f);
    out[7 * i + 4] = acos(a / 3.0f);
    out[7 * i + 5] = atan(a);
    out[7 * i + 6] = atan2(a, b);
}
""",
    """
kernel void m_hyperbolic(const device float* x [[buffer(0)]], device float* out [[buffer(1)]],
                         uint i [[thread_position_in_grid]]) {
    float a = x[i];
    out[6 * i + 0] = sinh(a);
    out[6 * i + 1] = cosh(a);
    out[6 * i + 2] = tanh(a);
    out[6 * i + 3] = asinh(a);
    out[6 * i + 4] = acosh(1.0f + fabs(a));
    out[6 * i + 5] = atanh(a / 3.5f);
}
""",
    """
kernel void m_exp_log(const device float* x [[buffer(0)]], const device float* p [[buffer(1)]],
                      device float* out [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    float a = x[i];
    float q = p[i];            // positive
    out[6 * i + 0] = exp(a);
    out[6 * i + 1] = exp2(a);
    out[6 * i + 2] = exp10(a);
    out[6 * i + 3] = log(q);
    out[6 * i + 4] = log2(q);
    out[6 * i + 5] = log10(q);
}
""",
    """
kernel void m_pow_sqrt(const device float* p [[buffer(0)]], const device float* e [[buffer(1)]],
                       device float* out [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    float q = p[i];
    float k = e[i];
    out[5 * i + 0] = pow(q, k);
    out[5 * i + 1] = powr(q, k);
    out[5 * i + 2] = sqrt(q);
    out[5 * i + 3] = rsqrt(q);
    out[5 * i + 4] = sinpi(k) + cospi(k);
}
""",
    """
kernel void m_fma_minmax(const device float* x [[buffer(0)]], const device float* y [[buffer(1)]],
                         device float* out [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    float a = x[i];
    float b = y[i];
    out[7 * i + 0] = fma(a, b, 0.75f);
    out[7 * i + 1] = fmin(a, b);
    out[7 * i + 2] = fmax(a, b);
    out[7 * i + 3] = fdim(a, b);
    out[7 * i + 4] = fmod(a, b);
    out[7 * i + 5] = fabs(a);
    out[7 * i + 6] = abs(b) + copysign(2.0f, a);
}
""",
    """
kernel void m_decompose(const device float* x [[buffer(0)]], device float* fr [[buffer(1)]],
                        device float* mf [[buffer(2)]], device float* mi [[buffer(3)]],
                        device float* mant [[buffer(4)]], device int* ex [[buffer(5)]],
                        device float* ld [[buffer(6)]], uint i [[thread_position_in_grid]]) {
    float a = x[i];
    fr[i] = fract(a);
    float ip;
    mf[i] = modf(a, ip);
    mi[i] = ip;
    int e;
    mant[i] = frexp(a, e);
    ex[i] = e;
    ld[i] = ldexp(a, int(i % 7) - 3);
}
""",
    """
kernel void m_rounding(const device float* x [[buffer(0)]], device float* out [[buffer(1)]],
                       uint i [[thread_position_in_grid]]) {
    float a = x[i];
    out[5 * i + 0] = trunc(a);
    out[5 * i + 1] = round(a);
    out[5 * i + 2] = rint(a);
    out[5 * i + 3] = floor(a);
    out[5 * i + 4] = ceil(a);
}
""",
    """
kernel void m_sincos(const device float* x [[buffer(0)]], device float2* out [[buffer(1)]],
                     uint i [[thread_position_in_grid]]) {
    float c;
    float s = sincos(x[i], c);
    out[i] = float2(s, c);
}
""",
    """
kernel void m_common(const device float* x [[buffer(0)]], device float* out [[buffer(1)]],
                     uint i [[thread_position_in_grid]]) {
    float a = x[i];
    out[7 * i + 0] = clamp(a, -1.0f, 2.0f);
    out[7 * i + 1] = mix(1.0f, 5.0f, a);
    out[7 * i + 2] = step(0.5f, a);
    out[7 * i + 3] = smoothstep(-1.0f, 1.5f, a);
    out[7 * i + 4] = sign(a);
    out[7 * i + 5] = saturate(a);
    out[7 * i + 6] = min(a, 0.25f) + max(a, -0.25f);
}
""",
    # common functions on vectors, with scalar edges / factors as shaders write them
    """
kernel void m_common_vec(const device float4* x [[buffer(0)]], const device float* t [[buffer(1)]],
                         device float4* out [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    float4 v = x[i];
    float3 c = v.xyz;
    out[5 * i + 0] = clamp(v, float4(-1.0f), float4(1.0f));
    out[5 * i + 1] = float4(mix(c, float3(1.0f, 0.0f, 0.5f), t[i]), 0.0f);
    out[5 * i + 2] = saturate(v);
    out[5 * i + 3] = smoothstep(float4(-2.0f), float4(2.0f), v);
    out[5 * i + 4] = float4(clamp(c, 0.0f, 1.0f), step(0.0f, v.w));
}
""",
    """
kernel void m_vector_math(const device float4* x [[buffer(0)]], device float4* out [[buffer(1)]],
                          uint i [[thread_position_in_grid]]) {
    float4 v = x[i];
    out[5 * i + 0] = sin(v);
    out[5 * i + 1] = float4(pow(abs(v.xyz) + 0.5f, float3(1.5f, 2.0f, 0.5f)), 0.0f);
    out[5 * i + 2] = float4(exp2(v.xy), sqrt(abs(v.zw)));
    out[5 * i + 3] = floor(v) + fract(v);
    out[5 * i + 4] = fmax(v, float4(0.0f)) * fmin(v, float4(1.0f));
}
""",
    """
kernel void m_fast(const device float* x [[buffer(0)]], const device float* p [[buffer(1)]],
                   device float* out [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    float a = x[i];
    float q = p[i];
    out[7 * i + 0] = fast::sin(a);
    out[7 * i + 1] = fast::cos(a);
    out[7 * i + 2] = fast::exp(a);
    out[7 * i + 3] = fast::log(q);
    out[7 * i + 4] = fast::pow(q, 1.7f);
    out[7 * i + 5] = fast::rsqrt(q);
    out[7 * i + 6] = fast::tanh(a) + fast::atan2(a, q);
}
""",
    """
kernel void m_precise(const device float* x [[buffer(0)]], const device float* p [[buffer(1)]],
                      device float* out [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    float a = x[i];
    float q = p[i];
    out[6 * i + 0] = precise::sin(a);
    out[6 * i + 1] = precise::exp(a);
    out[6 * i + 2] = precise::log(q);
    out[6 * i + 3] = precise::sqrt(q);
    out[6 * i + 4] = precise::divide(a, q);
    out[6 * i + 5] = metal::precise::cos(a) + metal::atan(q);
}
""",
    """
kernel void m_half_math(const device half* x [[buffer(0)]], device half* out [[buffer(1)]],
                        uint i [[thread_position_in_grid]]) {
    half a = x[i];
    out[5 * i + 0] = sin(a);
    out[5 * i + 1] = exp(a);
    out[5 * i + 2] = sqrt(abs(a));
    out[5 * i + 3] = fma(a, 2.0h, -1.0h);
    out[5 * i + 4] = clamp(a, -0.5h, 0.5h);
}
""",
    # constants of metal_math / metal_limits (MSL spec 6.2.1)
    """
kernel void m_constants(device float* f [[buffer(0)]], device half* h [[buffer(1)]],
                        device long* n [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    if (i != 0) return;
    f[0] = M_PI_F;     f[1] = M_PI_2_F;   f[2] = M_PI_4_F;    f[3] = M_1_PI_F;
    f[4] = M_2_PI_F;   f[5] = M_2_SQRTPI_F; f[6] = M_E_F;     f[7] = M_LOG2E_F;
    f[8] = M_LOG10E_F; f[9] = M_LN2_F;    f[10] = M_LN10_F;   f[11] = M_SQRT2_F;
    f[12] = M_SQRT1_2_F; f[13] = FLT_MAX; f[14] = FLT_MIN;    f[15] = FLT_EPSILON;
    f[16] = MAXFLOAT;  f[17] = INFINITY;  f[18] = -INFINITY;  f[19] = NAN;
    f[20] = HUGE_VALF;
    h[0] = HALF_MAX;   h[1] = HALF_MIN;   h[2] = HALF_EPSILON; h[3] = M_PI_H;
    n[0] = CHAR_BIT;   n[1] = SCHAR_MAX;  n[2] = SCHAR_MIN;   n[3] = UCHAR_MAX;
    n[4] = SHRT_MAX;   n[5] = SHRT_MIN;   n[6] = USHRT_MAX;   n[7] = INT_MAX;
    n[8] = INT_MIN;    n[9] = UINT_MAX;   n[10] = LONG_MAX;   n[11] = LONG_MIN;
    n[12] = FLT_MANT_DIG; n[13] = FLT_MAX_EXP; n[14] = FLT_DIG;
}
""",
    # numeric_limits<T>
    """
kernel void m_numeric_limits(device float* f [[buffer(0)]], device long* n [[buffer(1)]],
                             device ulong* u [[buffer(2)]], device half* h [[buffer(3)]],
                             uint i [[thread_position_in_grid]]) {
    if (i != 0) return;
    f[0] = numeric_limits<float>::max();
    f[1] = numeric_limits<float>::min();
    f[2] = numeric_limits<float>::lowest();
    f[3] = numeric_limits<float>::epsilon();
    f[4] = numeric_limits<float>::infinity();
    f[5] = numeric_limits<float>::quiet_NaN();
    n[0] = numeric_limits<int>::max();
    n[1] = numeric_limits<int>::min();
    n[2] = numeric_limits<short>::lowest();
    n[3] = numeric_limits<char>::max();
    n[4] = numeric_limits<uint>::max();
    n[5] = numeric_limits<long>::min();
    n[6] = numeric_limits<uchar>::max();
    n[7] = numeric_limits<int>::digits;
    n[8] = numeric_limits<uint>::is_signed ? 1 : 0;
    u[0] = numeric_limits<ulong>::max();
    h[0] = numeric_limits<half>::max();
    h[1] = numeric_limits<half>::epsilon();
}
""",
])

N = 512


def uniform(rng, lo, hi, n=N):
    return rng.uniform(lo, hi, n).astype(np.float32)


def d(x):
    return np.asarray(x, np.float64)


def run_grid(name, device, n, *args):
    KS.get(device, name)(n, *args)


def test_trig(device, rng):
    x, y = uniform(rng, -3, 3), uniform(rng, -3, 3)
    out = np.zeros(7 * N, np.float32)
    run_grid("m_trig", device, N, x, y, out)
    X, Y = d(x), d(y)
    exp = np.stack([np.sin(X), np.cos(X), np.tan(d(x * np.float32(0.45))), np.arcsin(d(x / np.float32(3))),
                    np.arccos(d(x / np.float32(3))), np.arctan(X), np.arctan2(X, Y)], 1).ravel()
    assert_close(out, exp, rtol=2e-5, atol=1e-5)


def test_hyperbolic(device, rng):
    x = uniform(rng, -3, 3)
    out = np.zeros(6 * N, np.float32)
    run_grid("m_hyperbolic", device, N, x, out)
    X = d(x)
    exp = np.stack([np.sinh(X), np.cosh(X), np.tanh(X), np.arcsinh(X), np.arccosh(d(np.float32(1) + np.abs(x))),
                    np.arctanh(d(x / np.float32(3.5)))], 1).ravel()
    assert_close(out, exp, rtol=3e-5, atol=1e-5)


def test_exp_log(device, rng):
    x, p = uniform(rng, -4, 4), uniform(rng, 1e-3, 1e4)
    out = np.zeros(6 * N, np.float32)
    run_grid("m_exp_log", device, N, x, p, out)
    X, P = d(x), d(p)
    exp = np.stack([np.exp(X), np.exp2(X), 10.0 ** X, np.log(P), np.log2(P), np.log10(P)], 1).ravel()
    assert_close(out, exp, rtol=2e-5, atol=1e-6)


def test_pow_sqrt(device, rng):
    p, e = uniform(rng, 0.01, 10), uniform(rng, -3, 3)
    out = np.zeros(5 * N, np.float32)
    run_grid("m_pow_sqrt", device, N, p, e, out)
    P, E = d(p), d(e)
    exp = np.stack([P ** E, P ** E, np.sqrt(P), 1 / np.sqrt(P), np.sin(np.pi * E) + np.cos(np.pi * E)], 1).ravel()
    assert_close(out, exp, rtol=3e-5, atol=1e-6)


def test_fma_minmax(device, rng):
    x, y = uniform(rng, -10, 10), uniform(rng, -10, 10)
    y[np.abs(y) < 0.1] = 0.5
    out = np.zeros(7 * N, np.float32)
    run_grid("m_fma_minmax", device, N, x, y, out)
    X, Y = d(x), d(y)
    exp = np.stack([X * Y + 0.75, np.minimum(X, Y), np.maximum(X, Y), np.maximum(X - Y, 0), np.fmod(x, y),
                    np.abs(X), np.abs(Y) + np.copysign(2.0, X)], 1).ravel()
    assert_close(out, exp, rtol=1e-6, atol=1e-6)


def test_decompose(device, rng):
    x = uniform(rng, -100, 100)
    x[:4] = [0.0, -2.5, 1.0, 1e-3]
    fr, mf, mi, mant, ld = (np.zeros(N, np.float32) for _ in range(5))
    ex = np.zeros(N, np.int32)
    run_grid("m_decompose", device, N, x, fr, mf, mi, mant, ex, ld)
    assert_close(fr, x - np.floor(x), rtol=1e-6, atol=1e-6)
    frac, whole = np.modf(x)
    assert_equal(mf, frac)
    assert_equal(mi, whole)
    m, e = np.frexp(x)
    assert_equal(mant, m)
    assert_equal(ex, e)
    assert_equal(ld, np.ldexp(x, (np.arange(N) % 7 - 3)).astype(np.float32))


def test_rounding(device, rng):
    x = (rng.integers(-40, 40, N) / 4).astype(np.float32)  # many exact .5 and .25 values
    out = np.zeros(5 * N, np.float32)
    run_grid("m_rounding", device, N, x, out)
    X = d(x)
    rnd = np.sign(X) * np.floor(np.abs(X) + 0.5)  # half away from zero
    exp = np.stack([np.trunc(X), rnd, np.rint(X), np.floor(X), np.ceil(X)], 1).ravel()
    assert_equal(out, exp.astype(np.float32))


def test_sincos(device, rng):
    x = uniform(rng, -6, 6)
    out = np.zeros((N, 2), np.float32)
    run_grid("m_sincos", device, N, x, out)
    assert_close(out, np.stack([np.sin(d(x)), np.cos(d(x))], 1), rtol=2e-5, atol=1e-5)


def smoothstep(e0, e1, x):
    t = np.clip((x - e0) / (e1 - e0), 0, 1)
    return t * t * (3 - 2 * t)


def test_common(device, rng):
    x = uniform(rng, -3, 3)
    x[:3] = [0.0, 0.5, -0.0]
    out = np.zeros(7 * N, np.float32)
    run_grid("m_common", device, N, x, out)
    X = d(x)
    exp = np.stack([np.clip(X, -1, 2), 1 + 4 * X, (X >= 0.5).astype(float), smoothstep(-1, 1.5, X), np.sign(X),
                    np.clip(X, 0, 1), np.minimum(X, 0.25) + np.maximum(X, -0.25)], 1).ravel()
    assert_close(out, exp, rtol=1e-5, atol=1e-6)


def test_common_vector(device, rng):
    x = (rng.standard_normal((N, 4)) * 2).astype(np.float32)
    t = uniform(rng, 0, 1)
    out = np.zeros((5 * N, 4), np.float32)
    run_grid("m_common_vec", device, N, x, t, out)
    X, T = d(x), d(t)[:, None]
    c = X[:, :3]
    mixed = c + (np.array([1, 0, 0.5]) - c) * T
    exp = np.stack([np.clip(X, -1, 1), np.concatenate([mixed, np.zeros((N, 1))], 1), np.clip(X, 0, 1),
                    smoothstep(-2, 2, X), np.concatenate([np.clip(c, 0, 1), (X[:, 3:] >= 0).astype(float)], 1)],
                   1).reshape(-1, 4)
    assert_close(out, exp, rtol=1e-5, atol=1e-6)


def test_vector_math(device, rng):
    x = (rng.standard_normal((N, 4)) * 2).astype(np.float32)
    out = np.zeros((5 * N, 4), np.float32)
    run_grid("m_vector_math", device, N, x, out)
    X = d(x)
    pw = (np.abs(X[:, :3]) + 0.5) ** np.array([1.5, 2.0, 0.5])
    exp = np.stack([np.sin(X), np.concatenate([pw, np.zeros((N, 1))], 1),
                    np.concatenate([np.exp2(X[:, :2]), np.sqrt(np.abs(X[:, 2:]))], 1), X,
                    np.maximum(X, 0) * np.minimum(X, 1)], 1).reshape(-1, 4)
    assert_close(out, exp, rtol=3e-5, atol=1e-5)


def test_fast(device, rng):
    x, p = uniform(rng, -3, 3), uniform(rng, 0.05, 20)
    out = np.zeros(7 * N, np.float32)
    run_grid("m_fast", device, N, x, p, out)
    X, P = d(x), d(p)
    exp = np.stack([np.sin(X), np.cos(X), np.exp(X), np.log(P), P ** 1.7, 1 / np.sqrt(P),
                    np.tanh(X) + np.arctan2(X, P)], 1).ravel()
    assert_close(out, exp, **FAST)


def test_precise(device, rng):
    x, p = uniform(rng, -3, 3), uniform(rng, 0.05, 20)
    out = np.zeros(6 * N, np.float32)
    run_grid("m_precise", device, N, x, p, out)
    X, P = d(x), d(p)
    exp = np.stack([np.sin(X), np.exp(X), np.log(P), np.sqrt(P), X / P, np.cos(X) + np.arctan(P)], 1).ravel()
    assert_close(out, exp, rtol=2e-6, atol=1e-6)


def test_half_math(device, rng):
    x = rng.uniform(-2, 2, N).astype(np.float16)
    out = np.zeros(5 * N, np.float16)
    run_grid("m_half_math", device, N, x, out)
    X = d(x)
    exp = np.stack([np.sin(X), np.exp(X), np.sqrt(np.abs(X)), X * 2 - 1, np.clip(X, -0.5, 0.5)], 1).ravel()
    assert_close(out, exp, rtol=3e-3, atol=2e-3)


def test_constants(device):
    f = np.zeros(24, np.float32)
    h = np.zeros(4, np.float16)
    n = np.zeros(16, np.int64)
    KS.get(device, "m_constants")(1, f, h, n)
    fl = np.finfo(np.float32)
    exp_f = np.array([np.pi, np.pi / 2, np.pi / 4, 1 / np.pi, 2 / np.pi, 2 / np.sqrt(np.pi), np.e, np.log2(np.e),
                      np.log10(np.e), np.log(2), np.log(10), np.sqrt(2), np.sqrt(0.5), fl.max, fl.tiny, fl.eps,
                      fl.max, np.inf, -np.inf], np.float32)
    assert_equal(f[:19], exp_f)
    assert np.isnan(f[19])
    assert f[20] == np.inf
    hf = np.finfo(np.float16)
    assert_equal(h, np.array([hf.max, hf.tiny, hf.eps, np.pi], np.float16))
    exp_n = [8, 127, -128, 255, 32767, -32768, 65535, 2**31 - 1, -(2**31), 2**32 - 1, 2**63 - 1, -(2**63), 24, 128, 6]
    assert_equal(n[:15], np.array(exp_n, np.int64))


def test_numeric_limits(device):
    f = np.zeros(6, np.float32)
    n = np.zeros(9, np.int64)
    u = np.zeros(1, np.uint64)
    h = np.zeros(2, np.float16)
    KS.get(device, "m_numeric_limits")(1, f, n, u, h)
    fl = np.finfo(np.float32)
    assert_equal(f[:5], np.array([fl.max, fl.tiny, -fl.max, fl.eps, np.inf], np.float32))
    assert np.isnan(f[5])
    assert_equal(n, np.array([2**31 - 1, -(2**31), -32768, 127, 2**32 - 1, -(2**63), 255, 31, 0], np.int64))
    assert u[0] == np.uint64(2**64 - 1)
    hf = np.finfo(np.float16)
    assert_equal(h, np.array([hf.max, hf.eps], np.float16))
