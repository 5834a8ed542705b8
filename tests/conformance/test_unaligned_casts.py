"""Vectors read and written through pointers made by casts, at addresses below
their alignment (torchao's `reinterpret_cast<constant uchar3*>(bytes + 3 * i)[0]`). Apple GPUs
load and store them; CUDA faults on a plain wide access, and C++ calls it undefined: the
translation's cast pointers (metal_unaligned.h) must give the bytes NumPy reads there, on every
backend, and write only the components (never a 3-vector's padding byte, which is the next
element's). Structs keep plain pointers (metal_unaligned.h says why): their members need
only their own alignment."""

from __future__ import annotations

import numpy as np

from mcconf import KernelSet, assert_equal

N = 67  # odd, so that the last elements end where the buffer ends

KS = KernelSet([
    # uchar3 (size 4, alignment 4) every 3 bytes, read through a named cast and written through
    # one: each thread owns its 3 bytes only.
    """
kernel void ua_uchar3(constant uchar* bytes [[buffer(0)]], device uchar* out [[buffer(1)]],
                      device uint* sums [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    uchar3 v = (reinterpret_cast<constant uchar3*>(bytes + 3 * i))[0];
    sums[i] = uint(v.x) + 256u * uint(v.y) + 65536u * uint(v.z);
    reinterpret_cast<device uchar3*>(out + 3 * i)[0] = v.zxy + uchar3(1);
}
""",
    # short3 (size 8, alignment 8) every 8 bytes from byte 2: a C-style cast, a pointer variable
    # it initialises, and one derived from that by arithmetic; the padding short is not written.
    """
kernel void ua_short3(const device uchar* in [[buffer(0)]], device uchar* out [[buffer(1)]],
                      uint i [[thread_position_in_grid]]) {
    const device short3* p = (const device short3*)(in + 2);
    short3 v = p[i];
    device short3* q = (device short3*)(out + 2);
    device short3* r = q + i;
    *r = v * short3(2) - short3(1, 0, -1);
}
""",
    # half4 (alignment 8) at 2 + 8 i: read through a pointer variable, accumulated with +=.
    """
kernel void ua_half4(constant uchar* bytes [[buffer(0)]], device uchar* out [[buffer(1)]],
                     device float* sums [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    constant half4* hp = reinterpret_cast<constant half4*>(bytes + 2 + 8 * i);
    half4 h = hp[0];
    sums[i] = float(h.x) + float(h.y) + float(h.z) + float(h.w);
    device half4* w = reinterpret_cast<device half4*>(out + 2 + 8 * i);
    *w += h.wzyx;
}
""",
    # float2 (alignment 8) at odd float indices: compound assignment, a swizzle written, ->.
    """
kernel void ua_float2(device float* f [[buffer(0)]], device float* g [[buffer(1)]],
                      uint i [[thread_position_in_grid]]) {
    device float2* f2 = (device float2*)(f + 1);
    f2[i] += float2(1.0f, 2.0f);
    device float2* g2 = (device float2*)(g + 1);
    g2[i].yx = f2[i] * 3.0f;
    g2[i] = float2(g2[i].x, (g2 + i)->x + g2[i].y);
}
""",
    # packed_float3 (alignment 4) at odd float indices, and float4 (alignment 16) at 4 + 12 i bytes.
    """
kernel void ua_float34(const device float* f [[buffer(0)]], device float* out [[buffer(1)]],
                       uint i [[thread_position_in_grid]]) {
    packed_float3 v = ((const device packed_float3*)(f + 1))[i];
    float4 w = *(const device float4*)(f + 1 + 3 * i);
    ((device packed_float3*)(out + 1))[i] = packed_float3(v.x + w.w, v.y * 2.0f, v.z);
}
""",
    # `auto v = q[i]` is a copy: changing it writes nothing; thread memory and a matrix through casts.
    """
kernel void ua_copies(device float* f [[buffer(0)]], device float* out [[buffer(1)]],
                      uint i [[thread_position_in_grid]]) {
    device float4* q = (device float4*)(f + 1);
    auto v = q[i];
    v.x = -1.0f;
    auto w = *q;
    w.y = -2.0f;
    float local[9];
    for (int k = 0; k < 9; ++k) local[k] = f[1 + 4 * i + (k % 4)] + float(k);
    thread float2* l2 = (thread float2*)(local + 1);
    float2 lv = l2[1];
    const device float2x2* m = (const device float2x2*)(f + 1 + 4 * i);
    float2x2 mv = *m;
    out[4 * i + 0] = v.x + v.y;
    out[4 * i + 1] = w.y + q[i].y;
    out[4 * i + 2] = lv.x * lv.y;
    out[4 * i + 3] = mv[1][0] - mv[0][1];
}
""",
    # threadgroup memory: a static_cast from a void pointer at 2 bytes past a 16-byte boundary.
    """
kernel void ua_threadgroup(const device short* in [[buffer(0)]], device short* out [[buffer(1)]],
                           uint i [[thread_position_in_grid]], uint t [[thread_position_in_threadgroup]]) {
    threadgroup char tg[8 * 64 + 16];
    threadgroup short3* s3 = static_cast<threadgroup short3*>((threadgroup void*)(tg + 2));
    s3[t] = short3(in[3 * i], in[3 * i + 1], in[3 * i + 2]);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    short3 v = s3[t ^ 1];
    out[3 * i] = v.x; out[3 * i + 1] = v.y; out[3 * i + 2] = v.z;
}
""",
])


def test_uchar3_every_three_bytes(device, rng):
    # One byte more: the last uchar3 is 4 bytes, which checked mode requires in bounds.
    b = rng.integers(0, 256, 3 * N + 1, dtype=np.uint8)
    out = np.full(3 * N + 1, 7, np.uint8)
    sums = np.zeros(N, np.uint32)
    KS.get(device, "ua_uchar3")(N, b, out, sums)
    v = b[:3 * N].reshape(N, 3)
    w = v.astype(np.uint32)
    assert_equal(sums, w[:, 0] + 256 * w[:, 1] + 65536 * w[:, 2])
    assert_equal(out[:3 * N].reshape(N, 3), (v[:, [2, 0, 1]] + 1).astype(np.uint8))
    if not device.checked:  # checked mode stores a 3-vector whole, padding included
        assert_equal(out[3 * N], 7)  # a uchar3's padding byte is never written


def test_short3_two_bytes_past_alignment(device, rng):
    raw = np.zeros(2 + 8 * N + 6, np.uint8)
    v = rng.integers(-1000, 1000, (N, 4), dtype=np.int16)
    raw[2:2 + 8 * N] = v.view(np.uint8).reshape(-1)
    out = np.full_like(raw, 5)
    KS.get(device, "ua_short3")(N, raw, out)
    got = out[2:2 + 8 * N].view(np.int16).reshape(N, 4)
    assert_equal(got[:, :3], (v[:, :3] * 2 - np.array([1, 0, -1], np.int16)).astype(np.int16))
    if not device.checked:  # checked mode stores a 3-vector whole, padding included
        assert_equal(got[:, 3], np.full(N, 0x0505, np.int16))
    assert_equal(out[:2], np.full(2, 5, np.uint8))


def test_half4_at_two_bytes_past_alignment(device, rng):
    h = rng.standard_normal((N, 4)).astype(np.float16)
    raw = np.zeros(2 + 8 * N + 6, np.uint8)
    raw[2:2 + 8 * N] = h.view(np.uint8).reshape(-1)
    base = rng.standard_normal((N, 4)).astype(np.float16)
    out = np.zeros_like(raw)
    out[2:2 + 8 * N] = base.view(np.uint8).reshape(-1)
    sums = np.zeros(N, np.float32)
    KS.get(device, "ua_half4")(N, raw, out, sums)
    hf = h.astype(np.float32)
    np.testing.assert_allclose(sums, ((hf[:, 0] + hf[:, 1]) + hf[:, 2]) + hf[:, 3], rtol=1e-6)
    got = out[2:2 + 8 * N].view(np.float16).reshape(N, 4)
    assert_equal(got, (base + h[:, ::-1]).astype(np.float16))


def test_float2_at_odd_floats(device, rng):
    f = rng.standard_normal(2 * N + 2).astype(np.float32)
    g = rng.standard_normal(2 * N + 2).astype(np.float32)
    f0, g0 = f.copy(), g.copy()
    KS.get(device, "ua_float2")(N, f, g)
    ef = f0.copy()
    ef[1:1 + 2 * N] += np.tile(np.array([1, 2], np.float32), N)
    assert_equal(f, ef)
    p = ef[1:1 + 2 * N].reshape(N, 2) * np.float32(3)  # (3 x, 3 y), written as .yx: (3 y, 3 x)
    eg = g0.copy()
    eg[1:1 + 2 * N] = np.stack([p[:, 1], p[:, 1] + p[:, 0]], axis=1).reshape(-1)
    assert_equal(g, eg)


def test_packed_float3_and_float4(device, rng):
    f = rng.standard_normal(3 * N + 5).astype(np.float32)
    out = np.zeros(3 * N + 2, np.float32)
    KS.get(device, "ua_float34")(N, f, out)
    v = f[1:1 + 3 * N].reshape(N, 3)
    w3 = np.array([f[1 + 3 * i + 3] for i in range(N)], np.float32)
    exp = np.stack([v[:, 0] + w3, v[:, 1] * 2, v[:, 2]], axis=1)
    assert_equal(out[1:1 + 3 * N].reshape(N, 3), exp)
    assert_equal(out[0], 0)
    assert_equal(out[-1], 0)


def test_threadgroup_short3_past_alignment(device, rng):
    n = 128
    v = rng.integers(-30000, 30000, 3 * n, dtype=np.int16)
    out = np.zeros_like(v)
    KS.get(device, "ua_threadgroup")(n, v, out, threadgroup=64)
    assert_equal(out.reshape(n, 3), v.reshape(n, 3)[np.arange(n) ^ 1])


def test_copies_thread_memory_and_matrices(device, rng):
    f = rng.standard_normal(4 * N + 2).astype(np.float32)
    f0 = f.copy()
    out = np.zeros(4 * N, np.float32)
    KS.get(device, "ua_copies")(N, f, out)
    assert_equal(f, f0)  # nothing written through the copies
    q = f0[1:1 + 4 * N].reshape(N, 4)
    local = q[:, [0, 1, 2, 3, 0, 1, 2, 3, 0]] + np.arange(9, dtype=np.float32)
    exp = np.stack([np.float32(-1) + q[:, 1], np.float32(-2) + q[:, 1], local[:, 3] * local[:, 4],
                    q[:, 2] - q[:, 1]], axis=1)
    assert_equal(out.reshape(N, 4), exp)
