"""Geometric functions: dot, cross, length, length_squared, distance, distance_squared,
normalize, reflect, refract, faceforward (metal:: and fast::), float2/3/4 and half."""

from __future__ import annotations

import numpy as np

from mcconf import KernelSet, assert_close

KS = KernelSet([
    """
kernel void g_dot_cross(const device float3* a [[buffer(0)]], const device float3* b [[buffer(1)]],
                        device float* d [[buffer(2)]], device float3* c [[buffer(3)]],
                        uint i [[thread_position_in_grid]]) {
    d[i] = dot(a[i], b[i]);
    c[i] = cross(a[i], b[i]);
}
""",
    """
kernel void g_lengths(const device float4* a [[buffer(0)]], const device float4* b [[buffer(1)]],
                      device float* out [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    float4 p = a[i];
    float4 q = b[i];
    out[6 * i + 0] = length(p);
    out[6 * i + 1] = length_squared(p);
    out[6 * i + 2] = distance(p, q);
    out[6 * i + 3] = distance_squared(p.xy, q.xy);
    out[6 * i + 4] = length(p.xyz);
    out[6 * i + 5] = dot(p.zw, q.zw);
}
""",
    """
kernel void g_normalize(const device packed_float3* a [[buffer(0)]], device packed_float3* n [[buffer(1)]],
                        device float2* n2 [[buffer(2)]], device packed_float3* nf [[buffer(3)]],
                        uint i [[thread_position_in_grid]]) {
    float3 v = a[i];
    n[i] = packed_float3(normalize(v));
    n2[i] = normalize(v.xy);
    nf[i] = packed_float3(fast::normalize(v) * fast::length(v));
}
""",
    """
kernel void g_reflect_refract(const device float3* incident [[buffer(0)]], const device float3* normal [[buffer(1)]],
                              const device float* eta [[buffer(2)]], device float3* refl [[buffer(3)]],
                              device float3* refr [[buffer(4)]], device float3* ff [[buffer(5)]],
                              uint i [[thread_position_in_grid]]) {
    float3 I = normalize(incident[i]);
    float3 N = normalize(normal[i]);
    refl[i] = reflect(I, N);
    refr[i] = refract(I, N, eta[i]);
    ff[i] = faceforward(N, I, N);
}
""",
    """
kernel void g_half(const device half4* a [[buffer(0)]], const device half4* b [[buffer(1)]],
                   device half* out [[buffer(2)]], device half3* c [[buffer(3)]],
                   uint i [[thread_position_in_grid]]) {
    half4 p = a[i];
    half4 q = b[i];
    out[2 * i + 0] = dot(p, q);
    out[2 * i + 1] = length(p);
    c[i] = cross(p.xyz, q.xyz);
}
""",
])

N = 300


def v(rng, k, n=N, pad=None):
    x = rng.standard_normal((n, k)).astype(np.float32)
    if pad:
        x = np.concatenate([x, np.zeros((n, pad - k), np.float32)], 1)
    return x


def test_dot_cross(device, rng):
    a, b = v(rng, 3, pad=4), v(rng, 3, pad=4)
    d = np.zeros(N, np.float32)
    c = np.zeros((N, 4), np.float32)
    KS.get(device, "g_dot_cross")(N, a, b, d, c)
    A, B = a[:, :3].astype(np.float64), b[:, :3].astype(np.float64)
    assert_close(d, (A * B).sum(1), rtol=1e-5, atol=1e-5)
    assert_close(c[:, :3], np.cross(A, B), rtol=1e-5, atol=1e-5)


def test_lengths(device, rng):
    a, b = v(rng, 4), v(rng, 4)
    out = np.zeros(6 * N, np.float32)
    KS.get(device, "g_lengths")(N, a, b, out)
    A, B = a.astype(np.float64), b.astype(np.float64)
    exp = np.stack([np.linalg.norm(A, axis=1), (A * A).sum(1), np.linalg.norm(A - B, axis=1),
                    ((A[:, :2] - B[:, :2]) ** 2).sum(1), np.linalg.norm(A[:, :3], axis=1),
                    (A[:, 2:] * B[:, 2:]).sum(1)], 1).ravel()
    assert_close(out, exp, rtol=1e-5, atol=1e-5)


def test_normalize(device, rng):
    a = v(rng, 3)
    n = np.zeros((N, 3), np.float32)
    n2 = np.zeros((N, 2), np.float32)
    nf = np.zeros((N, 3), np.float32)
    KS.get(device, "g_normalize")(N, a, n, n2, nf)
    A = a.astype(np.float64)
    assert_close(n, A / np.linalg.norm(A, axis=1, keepdims=True), rtol=1e-5, atol=1e-6)
    assert_close(n2, A[:, :2] / np.linalg.norm(A[:, :2], axis=1, keepdims=True), rtol=1e-5, atol=1e-6)
    assert_close(nf, A, rtol=2e-3, atol=2e-3)  # fast:: variants


def test_reflect_refract(device, rng):
    inc, nor = v(rng, 3, pad=4), v(rng, 3, pad=4)
    eta = rng.uniform(0.5, 1.5, N).astype(np.float32)
    refl, refr, ff = (np.zeros((N, 4), np.float32) for _ in range(3))
    KS.get(device, "g_reflect_refract")(N, inc, nor, eta, refl, refr, ff)
    I = inc[:, :3].astype(np.float64)
    I /= np.linalg.norm(I, axis=1, keepdims=True)
    Nn = nor[:, :3].astype(np.float64)
    Nn /= np.linalg.norm(Nn, axis=1, keepdims=True)
    d = (I * Nn).sum(1, keepdims=True)
    assert_close(refl[:, :3], I - 2 * d * Nn, rtol=1e-4, atol=1e-5)
    e = eta.astype(np.float64)[:, None]
    k = 1 - e * e * (1 - d * d)
    exp_refr = np.where(k < 0, 0.0, e * I - (e * d + np.sqrt(np.maximum(k, 0))) * Nn)
    assert_close(refr[:, :3], exp_refr, rtol=1e-4, atol=1e-4)
    # faceforward(N, I, Nref) = dot(Nref, I) < 0 ? N : -N
    assert_close(ff[:, :3], np.where(d < 0, Nn, -Nn), rtol=1e-5, atol=1e-6)


def test_half_geometric(device, rng):
    a = rng.uniform(-1, 1, (N, 4)).astype(np.float16)
    b = rng.uniform(-1, 1, (N, 4)).astype(np.float16)
    out = np.zeros(2 * N, np.float16)
    c = np.zeros((N, 4), np.float16)  # half3 is 8 bytes
    KS.get(device, "g_half")(N, a, b, out, c)
    A, B = a.astype(np.float64), b.astype(np.float64)
    assert_close(out, np.stack([(A * B).sum(1), np.linalg.norm(A, axis=1)], 1).ravel(), rtol=5e-3, atol=5e-3)
    assert_close(c[:, :3], np.cross(A[:, :3], B[:, :3]), rtol=5e-3, atol=5e-3)
