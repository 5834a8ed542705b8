"""Scalar types, sizes/alignments, conversions, as_type and `h` literals."""

from __future__ import annotations

import numpy as np
import pytest

from mcconf import KernelSet, assert_close, assert_equal

KS = KernelSet([
    # bool: logic on 1-byte bools
    """
kernel void t_bool(const device bool* a [[buffer(0)]], const device bool* b [[buffer(1)]],
                   device bool* out [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    bool x = a[i];
    bool y = b[i];
    out[3 * i + 0] = x && y;
    out[3 * i + 1] = x || !y;
    out[3 * i + 2] = x != y;
}
""",
    # char is signed 8-bit
    """
kernel void t_char(const device char* a [[buffer(0)]], const device char* b [[buffer(1)]],
                   device char* out [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    char x = a[i];
    char y = b[i];
    out[4 * i + 0] = x + y;          // wraps when stored
    out[4 * i + 1] = x / y;          // truncates toward zero
    out[4 * i + 2] = x >> 2;         // arithmetic shift
    out[4 * i + 3] = (x < y) ? x : y;
}
""",
    """
kernel void t_uchar(const device uchar* a [[buffer(0)]], const device uchar* b [[buffer(1)]],
                    device uchar* out [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    uchar x = a[i];
    uchar y = b[i];
    out[4 * i + 0] = x + y;
    out[4 * i + 1] = x - y;
    out[4 * i + 2] = x * y;
    out[4 * i + 3] = ~x;
}
""",
    """
kernel void t_short(const device short* a [[buffer(0)]], const device short* b [[buffer(1)]],
                    device short* out [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    short x = a[i];
    short y = b[i];
    out[3 * i + 0] = x * y;
    out[3 * i + 1] = x % y;
    out[3 * i + 2] = -x;
}
""",
    """
kernel void t_ushort(const device ushort* a [[buffer(0)]], const device ushort* b [[buffer(1)]],
                     device ushort* out [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    ushort x = a[i];
    ushort y = b[i];
    out[3 * i + 0] = x + y;
    out[3 * i + 1] = x << 3;
    out[3 * i + 2] = x >> 2;
}
""",
    """
kernel void t_int(const device int* a [[buffer(0)]], const device int* b [[buffer(1)]],
                  device int* out [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    int x = a[i];
    int y = b[i];
    out[5 * i + 0] = x * 3 - y;
    out[5 * i + 1] = x / y;
    out[5 * i + 2] = x % y;
    out[5 * i + 3] = x >> 3;
    out[5 * i + 4] = (x ^ y) & 0x7fff;
}
""",
    """
kernel void t_uint(const device uint* a [[buffer(0)]], const device uint* b [[buffer(1)]],
                   device uint* out [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    uint x = a[i];
    uint y = b[i];
    out[4 * i + 0] = x * y;          // modulo 2^32
    out[4 * i + 1] = x - y;
    out[4 * i + 2] = x / (y | 1u);
    out[4 * i + 3] = (x >> 7) | (y << 25);
}
""",
    """
kernel void t_long(const device long* a [[buffer(0)]], const device int* b [[buffer(1)]],
                   device long* out [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    long x = a[i];
    long wide = long(b[i]) * long(b[i]);   // no 32-bit overflow
    out[3 * i + 0] = x * 1000003L + wide;
    out[3 * i + 1] = x / 7;
    out[3 * i + 2] = x >> 40;
}
""",
    """
kernel void t_ulong(const device ulong* a [[buffer(0)]], const device ulong* b [[buffer(1)]],
                    device ulong* out [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    ulong x = a[i];
    ulong y = b[i];
    out[3 * i + 0] = x * y;          // modulo 2^64
    out[3 * i + 1] = x + y;
    out[3 * i + 2] = (x >> 33) ^ (y << 17);
}
""",
    # half arithmetic with h literals
    """
kernel void t_half(const device half* a [[buffer(0)]], const device half* b [[buffer(1)]],
                   device half* out [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    half x = a[i];
    half y = b[i];
    out[3 * i + 0] = x * 2.0h + 0.5h;
    out[3 * i + 1] = x - y;
    out[3 * i + 2] = x * y;
}
""",
    """
kernel void t_float(const device float* a [[buffer(0)]], const device float* b [[buffer(1)]],
                    device float* out [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    float x = a[i];
    float y = b[i];
    out[3 * i + 0] = x * y + 1.5f;
    out[3 * i + 1] = x / y;
    out[3 * i + 2] = -x + 0.25f * y;
}
""",
    # sizes and alignments of MSL types (MSL spec tables 2.2 - 2.4)
    """
kernel void t_sizes(device uint* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    if (i != 0) return;
    uint k = 0;
    out[k++] = sizeof(bool);          out[k++] = sizeof(char);
    out[k++] = sizeof(short);         out[k++] = sizeof(int);
    out[k++] = sizeof(long);          out[k++] = sizeof(half);
    out[k++] = sizeof(float);         out[k++] = sizeof(float2);
    out[k++] = sizeof(float3);        out[k++] = alignof(float3);
    out[k++] = sizeof(float4);        out[k++] = sizeof(packed_float3);
    out[k++] = alignof(packed_float3);out[k++] = sizeof(half3);
    out[k++] = sizeof(packed_half3);  out[k++] = sizeof(int3);
    out[k++] = sizeof(uchar4);        out[k++] = sizeof(char3);
    out[k++] = sizeof(short2);        out[k++] = sizeof(ulong2);
    out[k++] = sizeof(long3);         out[k++] = sizeof(bool4);
    out[k++] = sizeof(float2x2);      out[k++] = sizeof(float3x3);
    out[k++] = sizeof(float4x4);      out[k++] = sizeof(float2x3);
    out[k++] = sizeof(half4x4);       out[k++] = alignof(float4x4);
}
""",
    # reinterpretation
    """
kernel void t_as_type(const device float* f [[buffer(0)]], const device uint* u [[buffer(1)]],
                      device uint* bits [[buffer(2)]], device float* back [[buffer(3)]],
                      device uchar4* bytes [[buffer(4)]], device half2* halves [[buffer(5)]],
                      uint i [[thread_position_in_grid]]) {
    bits[i] = as_type<uint>(f[i]);
    back[i] = as_type<float>(u[i]);
    bytes[i] = as_type<uchar4>(u[i]);
    halves[i] = as_type<half2>(u[i] & 0x3bff3bffu);
}
""",
    # numeric conversions
    """
kernel void t_convert(const device float* f [[buffer(0)]], device int* as_int [[buffer(1)]],
                      device float* from_int [[buffer(2)]], device half* as_half [[buffer(3)]],
                      device short* as_short [[buffer(4)]], device uint* as_uint [[buffer(5)]],
                      uint i [[thread_position_in_grid]]) {
    float x = f[i];
    as_int[i] = int(x);                       // truncation toward zero
    from_int[i] = float(as_int[i] * 3);
    as_half[i] = half(x);                     // round to nearest even
    as_short[i] = static_cast<short>(x * 10.0f);
    as_uint[i] = uint(fabs(x));
}
""",
])


def rand_int(rng, dtype, n, lo=None, hi=None, nonzero=False):
    info = np.iinfo(dtype)
    lo = info.min if lo is None else lo
    hi = info.max if hi is None else hi
    x = rng.integers(lo, hi, size=n, endpoint=True, dtype=np.int64 if info.min < 0 else np.uint64).astype(dtype)
    if nonzero:
        x[x == 0] = 1
    return x


N = 1000


def test_bool(device, rng):
    a = rng.random(N) < 0.5
    b = rng.random(N) < 0.5
    out = np.zeros(3 * N, np.bool_)
    KS.get(device, "t_bool")(N, a, b, out)
    exp = np.stack([a & b, a | ~b, a != b], axis=1).ravel()
    assert_equal(out, exp)


def test_char(device, rng):
    a = rand_int(rng, np.int8, N)
    b = rand_int(rng, np.int8, N, nonzero=True)
    out = np.zeros(4 * N, np.int8)
    KS.get(device, "t_char")(N, a, b, out)
    A, B = a.astype(np.int64), b.astype(np.int64)
    exp = np.stack([A + B, np.trunc(A / B).astype(np.int64), A >> 2, np.minimum(A, B)], axis=1).ravel().astype(np.int8)
    assert_equal(out, exp)


def test_uchar(device, rng):
    a = rand_int(rng, np.uint8, N)
    b = rand_int(rng, np.uint8, N)
    out = np.zeros(4 * N, np.uint8)
    KS.get(device, "t_uchar")(N, a, b, out)
    A, B = a.astype(np.int64), b.astype(np.int64)
    exp = (np.stack([A + B, A - B, A * B, ~A], axis=1).ravel() & 0xFF).astype(np.uint8)
    assert_equal(out, exp)


def test_short(device, rng):
    a = rand_int(rng, np.int16, N)
    b = rand_int(rng, np.int16, N, -300, 300, nonzero=True)
    out = np.zeros(3 * N, np.int16)
    KS.get(device, "t_short")(N, a, b, out)
    A, B = a.astype(np.int64), b.astype(np.int64)
    exp = np.stack([A * B, np.fmod(A, B), -A], axis=1).ravel().astype(np.int16)
    assert_equal(out, exp)


def test_ushort(device, rng):
    a = rand_int(rng, np.uint16, N)
    b = rand_int(rng, np.uint16, N)
    out = np.zeros(3 * N, np.uint16)
    KS.get(device, "t_ushort")(N, a, b, out)
    A, B = a.astype(np.int64), b.astype(np.int64)
    exp = (np.stack([A + B, A << 3, A >> 2], axis=1).ravel() & 0xFFFF).astype(np.uint16)
    assert_equal(out, exp)


def test_int(device, rng):
    a = rand_int(rng, np.int32, N, -(2**28), 2**28)
    b = rand_int(rng, np.int32, N, -5000, 5000, nonzero=True)
    out = np.zeros(5 * N, np.int32)
    KS.get(device, "t_int")(N, a, b, out)
    A, B = a.astype(np.int64), b.astype(np.int64)
    exp = np.stack([A * 3 - B, np.trunc(A / B).astype(np.int64), np.fmod(A, B), A >> 3, (A ^ B) & 0x7FFF], axis=1)
    assert_equal(out, exp.ravel().astype(np.int32))


def test_uint(device, rng):
    a = rand_int(rng, np.uint32, N)
    b = rand_int(rng, np.uint32, N)
    out = np.zeros(4 * N, np.uint32)
    KS.get(device, "t_uint")(N, a, b, out)
    A, B = a.astype(np.uint64), b.astype(np.uint64)
    M = np.uint64(0xFFFFFFFF)
    exp = np.stack([(A * B) & M, (A - B) & M, A // (B | np.uint64(1)), ((A >> np.uint64(7)) | (B << np.uint64(25))) & M], axis=1)
    assert_equal(out, exp.ravel().astype(np.uint32))


def test_long(device, rng):
    a = rand_int(rng, np.int64, N, -(2**50), 2**50)
    b = rand_int(rng, np.int32, N)
    out = np.zeros(3 * N, np.int64)
    KS.get(device, "t_long")(N, a, b, out)
    B = b.astype(np.int64)
    exp = np.stack([a * 1000003 + B * B, np.sign(a) * (np.abs(a) // 7),
                    a >> 40], axis=1)
    assert_equal(out, exp.ravel())


def test_ulong(device, rng):
    a = rand_int(rng, np.uint64, N)
    b = rand_int(rng, np.uint64, N)
    out = np.zeros(3 * N, np.uint64)
    KS.get(device, "t_ulong")(N, a, b, out)
    with np.errstate(over="ignore"):
        exp = np.stack([a * b, a + b, (a >> np.uint64(33)) ^ (b << np.uint64(17))], axis=1)
    assert_equal(out, exp.ravel())


def test_half(device, rng):
    a = (rng.random(N) * 8 - 4).astype(np.float16)
    b = (rng.random(N) * 8 - 4).astype(np.float16)
    out = np.zeros(3 * N, np.float16)
    KS.get(device, "t_half")(N, a, b, out)
    A, B = a.astype(np.float32), b.astype(np.float32)
    exp = np.stack([A * 2 + 0.5, A - B, A * B], axis=1).ravel()
    # half results: one or two roundings to 11 significant bits
    assert_close(out, exp, rtol=2e-3, atol=2e-3)


def test_float(device, rng):
    a = (rng.random(N) * 20 - 10).astype(np.float32)
    b = (rng.random(N) * 4 + 0.5).astype(np.float32)
    out = np.zeros(3 * N, np.float32)
    KS.get(device, "t_float")(N, a, b, out)
    exp = np.stack([a * b + np.float32(1.5), a / b, -a + np.float32(0.25) * b], axis=1).ravel()
    assert_close(out, exp, rtol=1e-6, atol=1e-6)


def test_sizes(device):
    out = np.zeros(32, np.uint32)
    KS.get(device, "t_sizes")(1, out)
    exp = [1, 1, 2, 4, 8, 2, 4, 8, 16, 16, 16, 12, 4, 8, 6, 16, 4, 4, 4, 16, 32, 4, 16, 48, 64, 32, 32, 16]
    assert_equal(out[: len(exp)], np.array(exp, np.uint32))


def test_as_type(device, rng):
    f = (rng.standard_normal(N) * 100).astype(np.float32)
    u = rand_int(rng, np.uint32, N)
    bits = np.zeros(N, np.uint32)
    back = np.zeros(N, np.float32)
    bytes_ = np.zeros((N, 4), np.uint8)
    halves = np.zeros((N, 2), np.float16)
    KS.get(device, "t_as_type")(N, f, u, bits, back, bytes_, halves)
    assert_equal(bits, f.view(np.uint32))
    assert_equal(back.view(np.uint32), u)  # bit-exact (NaN payloads included)
    assert_equal(bytes_, u.view(np.uint8).reshape(N, 4))
    assert_equal(halves.view(np.uint16), (u & np.uint32(0x3BFF3BFF)).view(np.uint16).reshape(N, 2))


def test_convert(device, rng):
    f = rng.uniform(-3000, 3000, N).astype(np.float32)
    as_int = np.zeros(N, np.int32)
    from_int = np.zeros(N, np.float32)
    as_half = np.zeros(N, np.float16)
    as_short = np.zeros(N, np.int16)
    as_uint = np.zeros(N, np.uint32)
    KS.get(device, "t_convert")(N, f, as_int, from_int, as_half, as_short, as_uint)
    assert_equal(as_int, np.trunc(f).astype(np.int32))
    assert_equal(from_int, (np.trunc(f).astype(np.int32) * 3).astype(np.float32))
    assert_equal(as_half, f.astype(np.float16))
    assert_equal(as_short, np.trunc(f * np.float32(10)).astype(np.int16))
    assert_equal(as_uint, np.trunc(np.abs(f)).astype(np.uint32))
