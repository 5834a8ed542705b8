"""Integer functions (MSL 6.4): abs, absdiff, add_sat/sub_sat, clz, ctz, popcount, mulhi,
mad24/mul24, rotate, extract_bits, insert_bits, reverse_bits, hadd/rhadd, min/max/clamp.
All checked for exact equality."""

from __future__ import annotations

import numpy as np

from mcconf import KernelSet, assert_equal

KS = KernelSet([
    """
kernel void i_abs(const device int* a [[buffer(0)]], const device int* b [[buffer(1)]],
                  device uint* out [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    int x = a[i];
    int y = b[i];
    out[3 * i + 0] = abs(x);
    out[3 * i + 1] = absdiff(x, y);
    out[3 * i + 2] = uint(abs(short(x >> 16)));
}
""",
    """
kernel void i_saturating(const device uchar* a [[buffer(0)]], const device uchar* b [[buffer(1)]],
                         const device short* s [[buffer(2)]], const device short* t [[buffer(3)]],
                         const device int* p [[buffer(4)]], const device int* q [[buffer(5)]],
                         device uchar* ou [[buffer(6)]], device short* os [[buffer(7)]],
                         device int* oi [[buffer(8)]], uint i [[thread_position_in_grid]]) {
    ou[2 * i + 0] = addsat(a[i], b[i]);
    ou[2 * i + 1] = subsat(a[i], b[i]);
    os[2 * i + 0] = addsat(s[i], t[i]);
    os[2 * i + 1] = subsat(s[i], t[i]);
    oi[2 * i + 0] = addsat(p[i], q[i]);
    oi[2 * i + 1] = subsat(p[i], q[i]);
}
""",
    """
kernel void i_bitcount(const device uint* a [[buffer(0)]], const device ulong* l [[buffer(1)]],
                       const device ushort* s [[buffer(2)]], device uint* out [[buffer(3)]],
                       uint i [[thread_position_in_grid]]) {
    uint x = a[i];
    out[8 * i + 0] = clz(x);
    out[8 * i + 1] = ctz(x);
    out[8 * i + 2] = popcount(x);
    out[8 * i + 3] = uint(clz(l[i]));
    out[8 * i + 4] = uint(ctz(l[i]));
    out[8 * i + 5] = uint(popcount(l[i]));
    out[8 * i + 6] = uint(clz(s[i]));
    out[8 * i + 7] = uint(popcount(s[i]));
}
""",
    """
kernel void i_mul(const device int* a [[buffer(0)]], const device int* b [[buffer(1)]],
                  const device uint* u [[buffer(2)]], const device uint* v [[buffer(3)]],
                  device int* oi [[buffer(4)]], device uint* ou [[buffer(5)]],
                  uint i [[thread_position_in_grid]]) {
    oi[3 * i + 0] = mulhi(a[i], b[i]);
    oi[3 * i + 1] = mul24(a[i] >> 12, b[i] >> 20);
    oi[3 * i + 2] = mad24(a[i] >> 12, b[i] >> 20, 12345);
    ou[2 * i + 0] = mulhi(u[i], v[i]);
    ou[2 * i + 1] = madhi(u[i], v[i], 7u);
}
""",
    """
kernel void i_bits(const device uint* a [[buffer(0)]], const device uint* b [[buffer(1)]],
                   device uint* out [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    uint x = a[i];
    uint y = b[i];
    uint off = i % 20;
    uint bits = 1 + i % 12;
    out[6 * i + 0] = rotate(x, i % 32);
    out[6 * i + 1] = extract_bits(x, off, bits);
    out[6 * i + 2] = insert_bits(x, y, off, bits);
    out[6 * i + 3] = reverse_bits(x);
    out[6 * i + 4] = uint(extract_bits(int(x), off, bits));   // sign-extends
    out[6 * i + 5] = uint(rotate(uchar(x), uchar(i % 8)));
}
""",
    """
kernel void i_minmax(const device int* a [[buffer(0)]], const device int* b [[buffer(1)]],
                     const device uint* u [[buffer(2)]], device int* oi [[buffer(3)]],
                     device uint* ou [[buffer(4)]], uint i [[thread_position_in_grid]]) {
    int x = a[i];
    int y = b[i];
    oi[5 * i + 0] = min(x, y);
    oi[5 * i + 1] = max(x, y);
    oi[5 * i + 2] = clamp(x, -1000, 1000);
    oi[5 * i + 3] = hadd(x, y);
    oi[5 * i + 4] = rhadd(x, y);
    ou[2 * i + 0] = clamp(u[i], 100u, 4000000000u);
    ou[2 * i + 1] = max(u[i], 7u) - min(u[i], 7u);
}
""",
    # integer vectors with integer functions
    """
kernel void i_vectors(const device uint4* a [[buffer(0)]], const device int4* b [[buffer(1)]],
                      device uint4* o1 [[buffer(2)]], device int4* o2 [[buffer(3)]],
                      uint i [[thread_position_in_grid]]) {
    uint4 x = a[i];
    int4 y = b[i];
    o1[2 * i + 0] = popcount(x) + clz(x);
    o1[2 * i + 1] = rotate(x, uint4(1, 8, 16, 31));
    o2[2 * i + 0] = abs(y) / 2;
    o2[2 * i + 1] = clamp(y, int4(-5), int4(5)) * max(y, int4(0)) % 97;
}
""",
    # signed division/modulo semantics, shifts and mixed signedness
    """
kernel void i_divmod(const device int* a [[buffer(0)]], const device int* b [[buffer(1)]],
                     device int* out [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    int x = a[i];
    int y = b[i];
    int q = x / y;
    int r = x % y;
    out[4 * i + 0] = q;
    out[4 * i + 1] = r;
    out[4 * i + 2] = q * y + r - x;          // always 0
    out[4 * i + 3] = int(uint(x) >> 28);     // logical shift via uint
}
""",
    # three-operand min/max/median (integer and float forms)
    """
kernel void i_three(const device int* a [[buffer(0)]], const device float* f [[buffer(1)]],
                    device int* oi [[buffer(2)]], device float* of [[buffer(3)]],
                    uint i [[thread_position_in_grid]]) {
    int x = a[3 * i], y = a[3 * i + 1], z = a[3 * i + 2];
    oi[3 * i + 0] = max3(x, y, z);
    oi[3 * i + 1] = min3(x, y, z);
    oi[3 * i + 2] = median3(x, y, z);
    float p = f[3 * i], q = f[3 * i + 1], r = f[3 * i + 2];
    of[3 * i + 0] = fmax3(p, q, r);
    of[3 * i + 1] = fmin3(p, q, r);
    of[3 * i + 2] = fmedian3(p, q, r);
}
"""
])

N = 1024


def ints(rng, dtype, n=N, lo=None, hi=None):
    info = np.iinfo(dtype)
    lo = info.min if lo is None else lo
    hi = info.max if hi is None else hi
    return rng.integers(lo, hi, n, endpoint=True, dtype=np.int64 if lo < 0 else np.uint64).astype(dtype)


def test_abs(device, rng):
    a, b = ints(rng, np.int32, lo=-(2**31) + 65536), ints(rng, np.int32)
    out = np.zeros(3 * N, np.uint32)
    KS.get(device, "i_abs")(N, a, b, out)
    A, B = a.astype(np.int64), b.astype(np.int64)
    exp = np.stack([np.abs(A), np.abs(A - B), np.abs((A >> 16).astype(np.int16).astype(np.int64))], 1)
    assert_equal(out, exp.ravel().astype(np.uint32))


def test_saturating(device, rng):
    a, b = ints(rng, np.uint8), ints(rng, np.uint8)
    s, t = ints(rng, np.int16), ints(rng, np.int16)
    p, q = ints(rng, np.int32), ints(rng, np.int32)
    ou = np.zeros(2 * N, np.uint8)
    os_ = np.zeros(2 * N, np.int16)
    oi = np.zeros(2 * N, np.int32)
    KS.get(device, "i_saturating")(N, a, b, s, t, p, q, ou, os_, oi)

    def sat(x, dt):
        info = np.iinfo(dt)
        return np.clip(x, info.min, info.max).astype(dt)

    A, B, S, T, P, Q = (x.astype(np.int64) for x in (a, b, s, t, p, q))
    assert_equal(ou, np.stack([sat(A + B, np.uint8), sat(A - B, np.uint8)], 1).ravel())
    assert_equal(os_, np.stack([sat(S + T, np.int16), sat(S - T, np.int16)], 1).ravel())
    assert_equal(oi, np.stack([sat(P + Q, np.int32), sat(P - Q, np.int32)], 1).ravel())


def clz(x, bits):
    x = int(x)
    return bits - x.bit_length()


def ctz(x, bits):
    x = int(x)
    return bits if x == 0 else (x & -x).bit_length() - 1


def test_bitcount(device, rng):
    a = ints(rng, np.uint32) >> rng.integers(0, 32, N).astype(np.uint32)
    a[:3] = [0, 1, 0x80000000]
    lg = ints(rng, np.uint64) >> rng.integers(0, 64, N).astype(np.uint64)
    lg[0] = 0
    s = ints(rng, np.uint16) >> rng.integers(0, 16, N).astype(np.uint16)
    out = np.zeros(8 * N, np.uint32)
    KS.get(device, "i_bitcount")(N, a, lg, s, out)
    exp = np.array([[clz(x, 32), ctz(x, 32), bin(int(x)).count("1"), clz(y, 64), ctz(y, 64), bin(int(y)).count("1"),
                     clz(z, 16), bin(int(z)).count("1")] for x, y, z in zip(a, lg, s)], np.uint32)
    assert_equal(out, exp.ravel())


def s24(x):
    """Low 24 bits as a signed 24-bit value."""
    x = x & 0xFFFFFF
    return np.where(x >= 0x800000, x - 0x1000000, x)


def test_mul(device, rng):
    a, b = ints(rng, np.int32), ints(rng, np.int32)
    u, v = ints(rng, np.uint32), ints(rng, np.uint32)
    oi = np.zeros(3 * N, np.int32)
    ou = np.zeros(2 * N, np.uint32)
    KS.get(device, "i_mul")(N, a, b, u, v, oi, ou)
    A, B = a.astype(np.int64), b.astype(np.int64)
    a8, b8 = s24(A >> 12), s24(B >> 20)
    prod = (a8 * b8)
    wrap = lambda x: ((x + 2**31) % 2**32 - 2**31)  # noqa: E731
    exp_i = np.stack([(A * B) >> 32, wrap(prod), wrap(prod + 12345)], 1)
    assert_equal(oi, exp_i.ravel().astype(np.int32))
    U, V = u.astype(object), v.astype(object)
    hi = np.array([(x * y) >> 32 for x, y in zip(U, V)], np.uint64)
    assert_equal(ou, np.stack([hi, hi + 7], 1).ravel().astype(np.uint32))


def rotl(x, r, bits):
    x, r = int(x), int(r) % bits
    m = (1 << bits) - 1
    return ((x << r) | (x >> (bits - r))) & m


def test_bits(device, rng):
    a, b = ints(rng, np.uint32), ints(rng, np.uint32)
    out = np.zeros(6 * N, np.uint32)
    KS.get(device, "i_bits")(N, a, b, out)
    exp = []
    for i, (x, y) in enumerate(zip(a.tolist(), b.tolist())):
        off, bits = i % 20, 1 + i % 12
        m = (1 << bits) - 1
        ext = (x >> off) & m
        ins = (x & ~(m << off) & 0xFFFFFFFF) | ((y & m) << off)
        rev = int(f"{x:032b}"[::-1], 2)
        sext = ext - (1 << bits) if ext >> (bits - 1) else ext
        exp.append([rotl(x, i % 32, 32), ext, ins, rev, sext & 0xFFFFFFFF, rotl(x & 0xFF, i % 8, 8)])
    assert_equal(out, np.array(exp, np.uint64).ravel().astype(np.uint32))


def test_minmax(device, rng):
    a, b = ints(rng, np.int32), ints(rng, np.int32)
    u = ints(rng, np.uint32)
    oi = np.zeros(5 * N, np.int32)
    ou = np.zeros(2 * N, np.uint32)
    KS.get(device, "i_minmax")(N, a, b, u, oi, ou)
    A, B, U = a.astype(np.int64), b.astype(np.int64), u.astype(np.int64)
    exp_i = np.stack([np.minimum(A, B), np.maximum(A, B), np.clip(A, -1000, 1000), (A + B) >> 1, (A + B + 1) >> 1], 1)
    assert_equal(oi, exp_i.ravel().astype(np.int32))
    exp_u = np.stack([np.clip(U, 100, 4000000000), np.abs(U - 7)], 1)
    assert_equal(ou, exp_u.ravel().astype(np.uint32))


def test_int_vector_functions(device, rng):
    a = ints(rng, np.uint32, 4 * N).reshape(N, 4)
    b = ints(rng, np.int32, 4 * N, -1000, 1000).reshape(N, 4)
    o1 = np.zeros((2 * N, 4), np.uint32)
    o2 = np.zeros((2 * N, 4), np.int32)
    KS.get(device, "i_vectors")(N, a, b, o1, o2)
    pc = np.vectorize(lambda x: bin(int(x)).count("1") + clz(x, 32))(a)
    rot = np.array([[rotl(x, r, 32) for x, r in zip(row, (1, 8, 16, 31))] for row in a.tolist()])
    assert_equal(o1, np.stack([pc, rot], 1).reshape(-1, 4).astype(np.uint32))
    B = b.astype(np.int64)
    t = np.clip(B, -5, 5) * np.maximum(B, 0)
    exp2 = np.stack([np.abs(B) // 2, np.fmod(t, 97)], 1).reshape(-1, 4)
    assert_equal(o2, exp2.astype(np.int32))


def test_divmod(device, rng):
    a = ints(rng, np.int32, lo=-(2**31) + 1)
    b = ints(rng, np.int32, lo=-1000, hi=1000)
    b[b == 0] = 3
    out = np.zeros(4 * N, np.int32)
    KS.get(device, "i_divmod")(N, a, b, out)
    A, B = a.astype(np.int64), b.astype(np.int64)
    q = np.sign(A) * np.sign(B) * (np.abs(A) // np.abs(B))
    exp = np.stack([q, A - q * B, np.zeros(N, np.int64), a.view(np.uint32).astype(np.int64) >> 28], 1)
    assert_equal(out, exp.ravel().astype(np.int32))


def test_three_operand(device, rng):
    a = ints(rng, np.int32, 3 * N)
    f = rng.standard_normal(3 * N).astype(np.float32)
    oi = np.zeros(3 * N, np.int32)
    of = np.zeros(3 * N, np.float32)
    KS.get(device, "i_three")(N, a, f, oi, of)
    A, F = a.reshape(N, 3), f.reshape(N, 3)
    assert_equal(oi, np.stack([A.max(1), A.min(1), np.median(A, 1).astype(np.int32)], 1).ravel())
    assert_equal(of, np.stack([F.max(1), F.min(1), np.median(F, 1).astype(np.float32)], 1).ravel())
