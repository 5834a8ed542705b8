"""Vector types: MSL layout (float3 = 16 bytes, packed_float3 = 12), swizzles read and
write (xyzw and rgba), constructors, component-wise operators, indexing, conversions."""

from __future__ import annotations

import numpy as np
import pytest

import metalcall as mc
from mcconf import KernelSet, assert_close, assert_equal

KS = KernelSet([
    # float3 elements are 16 bytes: NumPy (n, 4) float32, the 4th lane is padding
    """
kernel void v_float3_buffer(const device float3* p [[buffer(0)]], device float3* out [[buffer(1)]],
                            constant float& s [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    float3 v = p[i];
    out[i] = v * s + float3(1.0f, 2.0f, 3.0f);
}
""",
    # packed_float3 is 12 bytes: NumPy (n, 3) float32
    """
kernel void v_packed_float3(const device packed_float3* p [[buffer(0)]], device packed_float3* out [[buffer(1)]],
                            device float* len [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    float3 v = p[i];                   // packed -> aligned
    out[i] = packed_float3(v.zxy * 2.0f);
    len[i] = v.x * v.x + v.y * v.y + v.z * v.z;
}
""",
    # swizzle reads, xyzw and rgba
    """
kernel void v_swizzle_read(const device float4* p [[buffer(0)]], device float4* out [[buffer(1)]],
                           uint i [[thread_position_in_grid]]) {
    float4 v = p[i];
    float4 c = v;
    out[4 * i + 0] = v.wzyx;
    out[4 * i + 1] = float4(v.xx, v.yy);
    out[4 * i + 2] = c.bgra;
    out[4 * i + 3] = float4(c.rgb * 2.0f, c.a);
}
""",
    # swizzle writes
    """
kernel void v_swizzle_write(const device float4* p [[buffer(0)]], device float4* out [[buffer(1)]],
                            uint i [[thread_position_in_grid]]) {
    float4 v = p[i];
    float4 w = float4(0.0f);
    w.xy = v.zw;
    w.zw = v.yx;
    out[3 * i + 0] = w;
    float4 c = v;
    c.rgb *= 2.0f;
    c.a = 1.0f;
    out[3 * i + 1] = c;
    float4 u = v;
    u.x += 10.0f;
    u.yz = u.zy;
    u.w = -u.w;
    out[3 * i + 2] = u;
}
""",
    # constructors
    """
kernel void v_constructors(const device float* f [[buffer(0)]], const device int4* iv [[buffer(1)]],
                           device float4* out [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    float x = f[i];
    float4 a = float4(x);
    float4 b = float4(x, 2.0f * x, 3.0f, 4);
    float4 c = float4(b.xy, 1, 2);
    float3 d = float3(iv[i].xyz);
    float4 e = float4(float2(x), float2(5.0f, 6.0f));
    float4 g = float4(d, 7.0f);
    out[5 * i + 0] = a;
    out[5 * i + 1] = b;
    out[5 * i + 2] = c;
    out[5 * i + 3] = e;
    out[5 * i + 4] = g;
}
""",
    # vector arithmetic mixed with scalars
    """
kernel void v_arith(const device float4* a [[buffer(0)]], const device float4* b [[buffer(1)]],
                    device float4* out [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    float4 x = a[i];
    float4 y = b[i];
    out[4 * i + 0] = x + y * 2.0f;
    out[4 * i + 1] = (x - y) / (y * y + 1.0f);
    out[4 * i + 2] = 1.0f - x * y;
    float4 z = x;
    z *= y;
    z += 0.5f;
    z /= 2.0f;
    out[4 * i + 3] = -z;
}
""",
    # integer vectors: arithmetic, bit ops, shifts, comparisons to bool vectors
    """
kernel void v_int_vectors(const device int4* a [[buffer(0)]], const device uint4* b [[buffer(1)]],
                          device int4* oi [[buffer(2)]], device uint4* ou [[buffer(3)]],
                          device int4* ob [[buffer(4)]], uint i [[thread_position_in_grid]]) {
    int4 x = a[i];
    uint4 y = b[i];
    oi[i] = x * 3 + int4(1, -2, 3, -4) - x / 5;
    ou[i] = (y & 0xff00ffu) ^ (y >> 4) | (uint4(1, 2, 3, 4) << 28);
    bool4 gt = x > int4(0);
    ob[i] = int4(gt) + int4(x == 7);
}
""",
    # uchar4 <-> float4 and pixel math
    """
kernel void v_uchar4(const device uchar4* px [[buffer(0)]], device float4* f [[buffer(1)]],
                     device uchar4* out [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    uchar4 p = px[i];
    float4 c = float4(p) / 255.0f;
    f[i] = c;
    out[i] = uchar4(p.bgr, 255);
}
""",
    # half vectors
    """
kernel void v_half4(const device half4* a [[buffer(0)]], const device half4* b [[buffer(1)]],
                    device half4* out [[buffer(2)]], device float4* wide [[buffer(3)]],
                    uint i [[thread_position_in_grid]]) {
    half4 x = a[i];
    half4 y = b[i];
    out[i] = x * y + half4(1.0h, 0.5h, 0.25h, 0.0h);
    wide[i] = float4(x) + float4(y);
}
""",
    # dynamic indexing, read and write
    """
kernel void v_indexing(const device float4* a [[buffer(0)]], const device uint* k [[buffer(1)]],
                       device float4* out [[buffer(2)]], device float* picked [[buffer(3)]],
                       uint i [[thread_position_in_grid]]) {
    float4 v = a[i];
    uint j = k[i] & 3u;
    picked[i] = v[j];
    v[j] = 100.0f;
    for (int c = 0; c < 4; ++c) v[c] += float(c);
    out[i] = v;
}
""",
    # 2- and 3-component vectors of other types, packed and not
    """
kernel void v_small(const device float2* a [[buffer(0)]], const device short2* s [[buffer(1)]],
                    const device packed_uint3* pu [[buffer(2)]], const device long2* l [[buffer(3)]],
                    device float2* o2 [[buffer(4)]], device int2* os [[buffer(5)]],
                    device uint3* o3 [[buffer(6)]], device long2* ol [[buffer(7)]],
                    uint i [[thread_position_in_grid]]) {
    float2 v = a[i];
    o2[i] = v.yx * float2(2.0f, -1.0f);
    os[i] = int2(s[i]) * int2(s[i].y, 3);
    uint3 u = uint3(pu[i]);
    o3[i] = u.zyx + 1u;
    ol[i] = l[i] * 3 + long2(l[i].y);
}
""",
    # ushort/char vectors, increments, vector conversion from float (truncation)
    """
kernel void v_convert(const device float4* f [[buffer(0)]], device int4* oi [[buffer(1)]],
                      device ushort4* ou [[buffer(2)]], device char4* oc [[buffer(3)]],
                      uint i [[thread_position_in_grid]]) {
    float4 x = f[i];
    oi[i] = int4(x);
    ushort4 u = ushort4(abs(x));
    u++;
    ou[i] = u;
    char4 c = char4(int4(x) % 100);
    oc[i] = c;
}
""",
    # comparisons produce bool vectors; select-like blends with vector ternaries on scalars
    """
kernel void v_compare(const device float4* a [[buffer(0)]], const device float4* b [[buffer(1)]],
                      device uchar4* lt [[buffer(2)]], device float4* mx [[buffer(3)]],
                      uint i [[thread_position_in_grid]]) {
    float4 x = a[i];
    float4 y = b[i];
    bool4 m = x < y;
    lt[i] = uchar4(m);
    float4 r;
    for (int c = 0; c < 4; ++c) r[c] = m[c] ? y[c] : x[c];
    mx[i] = r;
}
""",
    # swizzles on device lvalues, on function results, of swizzles, self-assignment
    """
inline float4 twice(float4 v) { return v * 2.0f; }
kernel void v_swizzle_edge(device float4* a [[buffer(0)]], device float3* b [[buffer(1)]],
                           device float4* out [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    a[i].xy = a[i].yx;               // write through a device pointer, aliasing swap
    a[i].w += 1.0f;
    b[i].yz *= 3.0f;
    float4 v = a[i];
    out[3 * i + 0] = float4(twice(v).zw, v.xyz.zy);
    float4 u = v;
    u.xyzw = u.wzyx;
    out[3 * i + 1] = u;
    float2 q = v.xy;
    q += v.zw * 0.5f;
    out[3 * i + 2] = float4(q.yx, float2(v.w));
}
""",
    # a swizzle assigned the vector it names (the right-hand side is read before any write)
    """
kernel void v_swizzle_self(device float4* a [[buffer(0)]], device float4* out [[buffer(1)]],
                           uint i [[thread_position_in_grid]]) {
    float4 v = a[i];
    v.ywxz = v;
    out[2 * i] = v;
    float3 w = a[i].xyz;
    w.zxy = w;
    out[2 * i + 1] = float4(w, 0.0f);
    a[i].wzyx = a[i];
}
""",
    # literal forms and implicit scalar-to-vector conversions
    """
kernel void v_literals(device float4* out [[buffer(0)]], device uint* ou [[buffer(1)]],
                       uint i [[thread_position_in_grid]]) {
    float3 v = 1.0;                  // scalar to vector
    float4 w = 0.5f;
    w.x = 0x1p-3f;                   // hex float
    w.y = 1e-3f + 2.5e1f;
    out[2 * i + 0] = float4(v, 2) + w;
    out[2 * i + 1] = float4(3u, 0x10, 1ul, 07);
    ou[i] = 0xFFFFFFFFu - i + 1u;
}
""",
    # packed vectors in buffers and arithmetic on them
    """
kernel void v_packed_arith(const device packed_float4* a [[buffer(0)]], const device packed_half4* h [[buffer(1)]],
                           const device packed_short2* s [[buffer(2)]], device packed_float4* out [[buffer(3)]],
                           device packed_int2* os [[buffer(4)]], uint i [[thread_position_in_grid]]) {
    packed_float4 x = a[i];
    float4 hv = float4(h[i]);
    out[i] = x * 2.0f + packed_float4(hv);
    os[i] = packed_int2(int2(s[i]) * 3);
}
""",
    # small integer vectors wrap per component (no promotion in vector arithmetic)
    """
kernel void v_char_wrap(const device uchar4* a [[buffer(0)]], const device uchar4* b [[buffer(1)]],
                        device uchar4* out [[buffer(2)]], device char2* oc [[buffer(3)]],
                        uint i [[thread_position_in_grid]]) {
    out[i] = a[i] + b[i];
    char2 c = char2(a[i].xy);
    oc[i] = c * char2(3);
}
""",
    # 3-component vectors of small types: padded to 4 components (char3 4 bytes,
    # ushort3/half3 8 bytes, bool3 4 bytes)
    """
kernel void v_odd3(const device char3* c [[buffer(0)]], const device ushort3* u [[buffer(1)]],
                   const device half3* h [[buffer(2)]], device bool3* b [[buffer(3)]],
                   device int3* o [[buffer(4)]], uint i [[thread_position_in_grid]]) {
    b[i] = bool3(c[i]) && (u[i] > ushort3(100));
    o[i] = int3(c[i]) + int3(u[i]) + int3(h[i] * 2.0h);
}
""",
    # braced lists: components in order, the rest zero ({x} sets .x only; float4(x) broadcasts)
    """
uint4 braced_return(uint a, uint b) { return {a, b}; }
kernel void v_braced(const device uint* p [[buffer(0)]], device uint4* ou [[buffer(1)]],
                     device float4* of [[buffer(2)]], device half4* oh [[buffer(3)]], uint i [[thread_position_in_grid]]) {
    const uint a = p[i], b = p[i] * 3u;
    uint4 three = {a, b, a ^ b};
    uint4 one{a};
    ou[4 * i] = three;
    ou[4 * i + 1] = one;
    ou[4 * i + 2] = braced_return(b, a);
    ou[4 * i + 3] = uint4{a, b, 7u, 9u};
    const float x = float(a) * 0.5f;
    float4 fx = {x};
    float2 f2 = {x, 2.0f};
    of[2 * i] = fx;
    of[2 * i + 1] = float4(f2, float4(x).zw);
    half4 h = {half(x), 1.0h};
    oh[i] = h;
}
"""
])

N = 257


def f4(rng, n=N, scale=4.0):
    return (rng.standard_normal((n, 4)) * scale).astype(np.float32)


def test_float3_buffer(device, rng):
    p = f4(rng)
    p[:, 3] = 0
    out = np.zeros((N, 4), np.float32)
    KS.get(device, "v_float3_buffer")(N, p, out, 0.5)
    exp = p[:, :3] * np.float32(0.5) + np.array([1, 2, 3], np.float32)
    assert_close(out[:, :3], exp)


def test_packed_float3(device, rng):
    p = (rng.standard_normal((N, 3)) * 3).astype(np.float32)
    out = np.zeros((N, 3), np.float32)
    ln = np.zeros(N, np.float32)
    KS.get(device, "v_packed_float3")(N, p, out, ln)
    assert_close(out, p[:, [2, 0, 1]] * 2)
    assert_close(ln, (p * p).sum(axis=1), rtol=1e-5)


def test_swizzle_read(device, rng):
    v = f4(rng)
    out = np.zeros((4 * N, 4), np.float32)
    KS.get(device, "v_swizzle_read")(N, v, out)
    exp = np.stack([v[:, ::-1], v[:, [0, 0, 1, 1]], v[:, [2, 1, 0, 3]],
                    np.concatenate([v[:, :3] * 2, v[:, 3:]], axis=1)], axis=1).reshape(-1, 4)
    assert_close(out, exp)


def test_swizzle_write(device, rng):
    v = f4(rng)
    out = np.zeros((3 * N, 4), np.float32)
    KS.get(device, "v_swizzle_write")(N, v, out)
    w = np.stack([v[:, 2], v[:, 3], v[:, 1], v[:, 0]], axis=1)
    c = np.concatenate([v[:, :3] * 2, np.ones((N, 1), np.float32)], axis=1)
    u = np.stack([v[:, 0] + 10, v[:, 2], v[:, 1], -v[:, 3]], axis=1)
    exp = np.stack([w, c, u], axis=1).reshape(-1, 4)
    assert_close(out, exp)


def test_constructors(device, rng):
    f = (rng.standard_normal(N) * 3).astype(np.float32)
    iv = rng.integers(-1000, 1000, (N, 4)).astype(np.int32)
    out = np.zeros((5 * N, 4), np.float32)
    KS.get(device, "v_constructors")(N, f, iv, out)
    one = np.ones(N, np.float32)
    a = np.stack([f, f, f, f], 1)
    b = np.stack([f, 2 * f, 3 * one, 4 * one], 1)
    c = np.stack([f, 2 * f, one, 2 * one], 1)
    e = np.stack([f, f, 5 * one, 6 * one], 1)
    g = np.concatenate([iv[:, :3].astype(np.float32), 7 * one[:, None]], 1)
    exp = np.stack([a, b, c, e, g], axis=1).reshape(-1, 4)
    assert_close(out, exp)


def test_arith(device, rng):
    a, b = f4(rng), f4(rng)
    out = np.zeros((4 * N, 4), np.float32)
    KS.get(device, "v_arith")(N, a, b, out)
    z = -((a * b + np.float32(0.5)) / np.float32(2))
    exp = np.stack([a + b * 2, (a - b) / (b * b + 1), 1 - a * b, z], axis=1).reshape(-1, 4)
    assert_close(out, exp, rtol=1e-5, atol=1e-5)


def test_int_vectors(device, rng):
    a = rng.integers(-10**6, 10**6, (N, 4)).astype(np.int32)
    a[::7, 1] = 7
    b = rng.integers(0, 2**32, (N, 4), dtype=np.uint64).astype(np.uint32)
    oi = np.zeros((N, 4), np.int32)
    ou = np.zeros((N, 4), np.uint32)
    ob = np.zeros((N, 4), np.int32)
    KS.get(device, "v_int_vectors")(N, a, b, oi, ou, ob)
    A = a.astype(np.int64)
    assert_equal(oi, (A * 3 + np.array([1, -2, 3, -4]) - np.trunc(A / 5).astype(np.int64)).astype(np.int32))
    B = b.astype(np.uint64)
    expu = ((B & np.uint64(0xFF00FF)) ^ (B >> np.uint64(4))) | (np.array([1, 2, 3, 4], np.uint64) << np.uint64(28))
    assert_equal(ou, (expu & np.uint64(0xFFFFFFFF)).astype(np.uint32))
    assert_equal(ob, (a > 0).astype(np.int32) + (a == 7).astype(np.int32))


def test_uchar4(device, rng):
    px = rng.integers(0, 256, (N, 4)).astype(np.uint8)
    f = np.zeros((N, 4), np.float32)
    out = np.zeros((N, 4), np.uint8)
    KS.get(device, "v_uchar4")(N, px, f, out)
    assert_close(f, px.astype(np.float32) / np.float32(255))
    exp = px[:, [2, 1, 0, 3]].copy()
    exp[:, 3] = 255
    assert_equal(out, exp)


def test_half4(device, rng):
    a = (rng.standard_normal((N, 4)) * 2).astype(np.float16)
    b = (rng.standard_normal((N, 4)) * 2).astype(np.float16)
    out = np.zeros((N, 4), np.float16)
    wide = np.zeros((N, 4), np.float32)
    KS.get(device, "v_half4")(N, a, b, out, wide)
    A, B = a.astype(np.float32), b.astype(np.float32)
    assert_close(out, A * B + np.array([1, 0.5, 0.25, 0], np.float32), rtol=3e-3, atol=3e-3)
    assert_close(wide, A + B)


def test_indexing(device, rng):
    a = f4(rng)
    k = rng.integers(0, 1000, N).astype(np.uint32)
    out = np.zeros((N, 4), np.float32)
    picked = np.zeros(N, np.float32)
    KS.get(device, "v_indexing")(N, a, k, out, picked)
    j = k & 3
    assert_equal(picked, a[np.arange(N), j])
    exp = a.copy()
    exp[np.arange(N), j] = 100
    exp += np.arange(4, dtype=np.float32)
    assert_close(out, exp)


def test_small_vectors(device, rng):
    a = (rng.standard_normal((N, 2))).astype(np.float32)
    s = rng.integers(-1000, 1000, (N, 2)).astype(np.int16)
    pu = rng.integers(0, 2**31, (N, 3)).astype(np.uint32)
    lg = rng.integers(-(2**40), 2**40, (N, 2)).astype(np.int64)
    o2 = np.zeros((N, 2), np.float32)
    os_ = np.zeros((N, 2), np.int32)
    o3 = np.zeros((N, 4), np.uint32)  # uint3 is 16 bytes
    ol = np.zeros((N, 2), np.int64)
    KS.get(device, "v_small")(N, a, s, pu, lg, o2, os_, o3, ol)
    assert_close(o2, a[:, ::-1] * np.array([2, -1], np.float32))
    S = s.astype(np.int32)
    assert_equal(os_, S * np.stack([S[:, 1], np.full(N, 3, np.int32)], 1))
    assert_equal(o3[:, :3], pu[:, ::-1] + np.uint32(1))
    assert_equal(ol, lg * 3 + lg[:, 1:2])


def test_vector_convert(device, rng):
    f = (rng.standard_normal((N, 4)) * 500).astype(np.float32)
    oi = np.zeros((N, 4), np.int32)
    ou = np.zeros((N, 4), np.uint16)
    oc = np.zeros((N, 4), np.int8)
    KS.get(device, "v_convert")(N, f, oi, ou, oc)
    t = np.trunc(f).astype(np.int32)
    assert_equal(oi, t)
    assert_equal(ou, (np.trunc(np.abs(f)).astype(np.int64) + 1).astype(np.uint16))
    assert_equal(oc, np.fmod(t, 100).astype(np.int8))


def test_compare(device, rng):
    a, b = f4(rng), f4(rng)
    lt = np.zeros((N, 4), np.uint8)
    mx = np.zeros((N, 4), np.float32)
    KS.get(device, "v_compare")(N, a, b, lt, mx)
    assert_equal(lt, (a < b).astype(np.uint8))
    assert_equal(mx, np.maximum(a, b))


def test_swizzle_edge_cases(device, rng):
    a = f4(rng)
    b = f4(rng)
    a0, b0 = a.copy(), b.copy()
    out = np.zeros((3 * N, 4), np.float32)
    KS.get(device, "v_swizzle_edge")(N, a, b, out)
    v = a0.copy()
    v[:, [0, 1]] = a0[:, [1, 0]]
    v[:, 3] += 1
    assert_close(a, v)
    eb = b0.copy()
    eb[:, 1:3] *= 3
    assert_close(b[:, :3], eb[:, :3])
    q = v[:, :2] + v[:, 2:] * np.float32(0.5)
    exp = np.stack([np.concatenate([2 * v[:, 2:], v[:, [2, 1]]], 1), v[:, ::-1],
                    np.concatenate([q[:, ::-1], v[:, 3:], v[:, 3:]], 1)], 1).reshape(-1, 4)
    assert_close(out, exp)


def test_swizzle_self_assignment(device, rng):
    a = f4(rng)
    a0 = a.copy()
    out = np.zeros((2 * N, 4), np.float32)
    KS.get(device, "v_swizzle_self")(N, a, out)
    v = np.empty_like(a0)
    v[:, [1, 3, 0, 2]] = a0            # v.ywxz = v: y <- x, w <- y, x <- z, z <- w
    w = np.zeros_like(a0)
    w[:, [2, 0, 1]] = a0[:, :3]         # w.zxy = w
    assert_equal(out[0::2], v)
    assert_equal(out[1::2], w)
    assert_equal(a, a0[:, ::-1])


def test_literals(device):
    n = 8
    out = np.zeros((2 * n, 4), np.float32)
    ou = np.zeros(n, np.uint32)
    KS.get(device, "v_literals")(n, out, ou)
    row0 = np.array([1 + 0.125, 1 + 0.001 + 25, 1.5, 2.5], np.float32)
    row1 = np.array([3, 16, 1, 7], np.float32)
    assert_close(out, np.tile(np.stack([row0, row1]), (n, 1)))
    assert_equal(ou, (np.uint64(0xFFFFFFFF) - np.arange(n, dtype=np.uint64) + 1).astype(np.uint32))


def test_packed_arith(device, rng):
    a = f4(rng)
    h = rng.uniform(-2, 2, (N, 4)).astype(np.float16)
    s = rng.integers(-1000, 1000, (N, 2)).astype(np.int16)
    out = np.zeros((N, 4), np.float32)
    os_ = np.zeros((N, 2), np.int32)
    KS.get(device, "v_packed_arith")(N, a, h, s, out, os_)
    assert_close(out, a * 2 + h.astype(np.float32))
    assert_equal(os_, s.astype(np.int32) * 3)


def test_char_vector_wrap(device, rng):
    a = rng.integers(0, 256, (N, 4)).astype(np.uint8)
    b = rng.integers(0, 256, (N, 4)).astype(np.uint8)
    out = np.zeros((N, 4), np.uint8)
    oc = np.zeros((N, 2), np.int8)
    KS.get(device, "v_char_wrap")(N, a, b, out, oc)
    assert_equal(out, ((a.astype(np.int64) + b) & 0xFF).astype(np.uint8))
    assert_equal(oc, (a[:, :2].astype(np.int8).astype(np.int64) * 3).astype(np.int8))


def test_three_component_small_types(device, rng):
    c = rng.integers(-5, 5, (N, 4)).astype(np.int8)
    u = rng.integers(0, 200, (N, 4)).astype(np.uint16)
    h = rng.integers(-50, 50, (N, 4)).astype(np.float16)
    b = np.zeros((N, 4), np.bool_)
    o = np.zeros((N, 4), np.int32)
    KS.get(device, "v_odd3")(N, c, u, h, b, o)
    assert_equal(b[:, :3], (c[:, :3] != 0) & (u[:, :3] > 100))
    assert_equal(o[:, :3], c[:, :3].astype(np.int32) + u[:, :3] + (h[:, :3].astype(np.int32) * 2))


def test_braced_lists(device, rng):
    p = rng.integers(0, 1000, N).astype(np.uint32)
    ou = np.zeros((4 * N, 4), np.uint32)
    of = np.zeros((2 * N, 4), np.float32)
    oh = np.zeros((N, 4), np.float16)
    KS.get(device, "v_braced")(N, p, ou, of, oh)
    a, b = p, p * 3
    z = np.zeros(N, np.uint32)
    want_u = np.stack([np.stack([a, b, a ^ b, z], 1), np.stack([a, z, z, z], 1), np.stack([b, a, z, z], 1),
                       np.stack([a, b, z + 7, z + 9], 1)], 1).reshape(-1, 4)
    assert_equal(ou, want_u)
    x = a.astype(np.float32) * np.float32(0.5)
    zf = np.zeros(N, np.float32)
    want_f = np.stack([np.stack([x, zf, zf, zf], 1), np.stack([x, zf + 2, x, x], 1)], 1).reshape(-1, 4)
    assert_equal(of, want_f)
    assert_equal(oh, np.stack([x.astype(np.float16), np.ones(N, np.float16), np.zeros(N, np.float16),
                               np.zeros(N, np.float16)], 1))


@pytest.mark.parametrize("write", ["v.xx = int2(3, 4);", "v.zyz += int3(1);", "v.rr++;"])
def test_swizzle_writes_naming_a_component_twice_are_refused(write):
    """MSL refuses to assign a swizzle that names a component twice (which write wins?): a
    CompileError, never one of the two values (the CPU compile, which every CPU device shares)."""
    src = ("#include <metal_stdlib>\nusing namespace metal;\n"
           "kernel void k(device int* o [[buffer(0)]], uint i [[thread_position_in_grid]]) {\n"
           f"    int4 v = int4(1, 2, 3, 4);\n    {write}\n    o[i] = v.x + v.z;\n}}\n")
    with pytest.raises(mc.CompileError):
        mc.Device("cpu").compile(src, fast_math=False)
