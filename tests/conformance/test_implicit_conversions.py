"""Implicit conversions as C++ and MSL define them, checked against Python's integers on every
device: small integers promoted to int and narrowed back where a declaration, `=`, a compound
assignment, a store or a `return` converts them; comparisons of mixed signedness; half and bfloat
mixed with float and integers; integer literal branches of `?:` beside small integers (`c ?
uchar(64) : 2030664764` is an int: the translation's int_literal took the uchar's type, fuzz seed
9402, program 28); and on CUDA, `c ? i : F{h}(x)`, an int and a half branch with a braced
temporary, which the translation left to CUDA's ambiguous conditional (fuzz seed 9402), and half
op integer, which CUDA computed in float where MSL rounds the integer to half first. The tenth
session's fuzz generator: a char or short vector's components assigned and compound-assigned,
lambdas' arguments and `-> short` returns, braced members widened; half op= float (rounded once:
CUDA rounded the float to half first), bfloat op= integer (the integer rounded to bfloat first:
the prelude took it through float) and bfloat ++/--; trailing return types `-> uchar` (the
translation did not rename the type there).

`short v = x * short(-1);` is `short(int(x) * -1)`: -(-32768) wraps to -32768. NVVM narrows the
multiply by -1 to PTX's neg.s16, and the H200's ptxas (CUDA 13.0) then takes the result as still
sign-extended: `v < 1` false and `v / d` positive for x = -32768 (read from the SASS of NVRTC
13.0.88; the seventh session's fuzz campaign left this spelling, docs/design.md). The CUDA
translation takes these values through an int the optimiser cannot narrow
(msl/passes/small_negations.hpp, narrowing_wraps).
"""

from __future__ import annotations

import numpy as np
import pytest

import metalcall as mc

from mcconf import KernelSet, assert_equal

KS = KernelSet([
    """
short negated(short p) { return p * short(-1); }
char negated_char(char p) { return p * char(-1); }
kernel void implicit_narrowing(const device short* x [[buffer(0)]], const device int* d [[buffer(1)]],
                               device int* out [[buffer(2)]], device short* sout [[buffer(3)]],
                               uint i [[thread_position_in_grid]]) {
    device int* o = out + 14 * i;
    short v = x[i] * short(-1);
    o[0] = v / d[i];
    o[1] = v < 1 ? 1 : 0;
    short z = 0;
    short w;
    w = z - x[i];
    o[2] = w / d[i];
    sout[2 * i] = x[i] * short(-1);
    o[3] = negated(x[i]) / d[i];
    char c = char(x[i] >> 8);
    char nc = c * char(-1);
    o[4] = nc / d[i];
    o[5] = negated_char(c) < 1 ? 1 : 0;
    short q = x[i] / short(-1);
    o[6] = q % d[i];
    short m = x[i];
    m *= short(-1);
    o[7] = m / d[i];
    ushort u = ushort(x[i]);
    ushort un = u * ushort(65535);
    o[8] = un / d[i];
    threadgroup short tg[64];
    tg[i % 64] = z - x[i];
    o[9] = tg[i % 64] < 1 ? 1 : 0;
    sout[2 * i + 1] = x[i];
    sout[2 * i + 1] *= short(-1);
    o[10] = sout[2 * i + 1] / d[i];
    const short k = -x[i] + z;
    o[11] = k / d[i];
    short s2 = x[i] << 1;
    o[12] = s2;
    uchar b = uchar(x[i]) * uchar(255);
    o[13] = b;
}
""",
    """
kernel void mixed_compares(const device int* a [[buffer(0)]], const device uint* b [[buffer(1)]],
                           const device short* s [[buffer(2)]], const device ushort* us [[buffer(3)]],
                           const device long* l [[buffer(4)]], device int* out [[buffer(5)]],
                           uint i [[thread_position_in_grid]]) {
    device int* o = out + 6 * i;
    o[0] = a[i] < b[i] ? 1 : 0;        // int converted to uint
    o[1] = s[i] < us[i] ? 1 : 0;       // both promoted to int
    o[2] = l[i] < b[i] ? 1 : 0;        // uint converted to long
    o[3] = a[i] == b[i] ? 1 : 0;
    o[4] = s[i] > b[i] ? 1 : 0;        // short -> int -> uint
    o[5] = ulong(l[i]) > a[i] ? 1 : 0; // int -> ulong
}
""",
    """
kernel void literal_arms(const device int* in [[buffer(0)]], device long* out [[buffer(1)]],
                         uint i [[thread_position_in_grid]]) {
    device long* o = out + 7 * i;
    const bool c = in[i] > 5;
    const uint u = uint(in[i]);
    ulong v = (false ? uchar(64) : 2030664764);  // int: a small integer branch is promoted
    o[0] = long(v);
    o[1] = c ? uchar(64) : 2030664764;
    o[2] = c ? short(-1) : 70000;
    o[3] = ((c ? char(-1) : 5) < 1u) ? 1 : 0;  // int -1 as a uint: not below 1
    o[4] = c ? (in[i] > 7) : 9;
    o[5] = c ? u : 3000000000;                // uint with a long literal: a long
    o[6] = c ? ushort(65535) : 0;
}
""",
    """
struct HalfScale {
    half s;
    half operator()(half x) const { return x * s; }
};
kernel void braced_arms(const device half* h [[buffer(0)]], const device int* n [[buffer(1)]],
                        device float* out [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    const bool c = n[i] > 3;
    out[i] = c ? n[i] : HalfScale{h[i]}(h[i]);  // int and half: a half
}
""",
    """
struct Widened { int i; float f; long l; };
short narrowed_return(int p) { return p * -1; }
kernel void component_narrowing(const device int* x [[buffer(0)]], const device int* d [[buffer(1)]],
                                const device half* h [[buffer(2)]], const device float* f [[buffer(3)]],
                                device int* out [[buffer(4)]], device short2* sv [[buffer(5)]],
                                device half* hout [[buffer(6)]], uint i [[thread_position_in_grid]]) {
    device int* o = out + 13 * i;
    short2 v = short2(3, 4);
    v.x = x[i] * -1;
    o[0] = v.x / d[i];
    v[1] = x[i] * short(-1);
    o[1] = v[1] < 1 ? 1 : 0;
    v.y -= x[i];
    o[2] = v.y / d[i];
    char4 c = char4(1);
    c.z *= x[i];
    o[3] = c.z / d[i];
    short2 w;
    w.yx = x[i] * -1;
    o[4] = w.y / d[i];
    ushort3 u = ushort3(0);
    u.y--;
    u.z = x[i] * -1;
    o[5] = (u.z + u.y) / d[i];
    auto lam = [&](short p, char q) { return p / d[i] + q; };
    o[6] = lam(x[i] * -1, x[i] * -1);
    auto neg = [&](int p) -> short { return p * -1; };
    o[7] = neg(x[i]) / d[i];
    o[8] = narrowed_return(x[i]) / d[i];
    const short s = short(x[i]);
    Widened wd = {s, h[i], x[i]};
    o[9] = int(wd.l / d[i]) + wd.i + int(wd.f);
    short3 m = short3(x[i] * -1, x[i], 2);
    o[10] = m.x / d[i];
    char2 cc = char2(char(x[i]));
    cc.x++;
    --cc[1];
    o[11] = cc.x * 1000 + cc.y;
    sv[i] = short2(0);
    sv[i].y = x[i] * -1;
    o[12] = sv[i].y / d[i];
    half2 hh = half2(h[i], 1.0h);
    hh.x += f[i];
    hh.y *= f[i];
    half hs = h[i];
    hs -= f[i];
    hout[3 * i] = hh.x;
    hout[3 * i + 1] = hh.y;
    hout[3 * i + 2] = hs;
}
""",
    """
struct Narrowed {
    short a;
    char b;
    Narrowed(short x, char y) : a(x), b(y) {}
};
kernel void constructor_narrowing(const device int* x [[buffer(0)]], const device int* d [[buffer(1)]],
                                  device int* out [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    const Narrowed m = Narrowed(x[i] * -1, x[i] * -1);
    out[2 * i] = m.a / d[i];
    out[2 * i + 1] = m.b < 1 ? 1 : 0;
}
""",
    """
auto tripled(int p) -> uchar { return p * 3; }
kernel void trailing_returns(const device int* x [[buffer(0)]], device int* out [[buffer(1)]],
                             uint i [[thread_position_in_grid]]) {
    auto f = [&](int p) -> ushort { return p * -1; };
    auto g = [&](int p) mutable -> short4 { return p; };
    out[3 * i] = f(x[i]);
    out[3 * i + 1] = g(x[i]).w;
    out[3 * i + 2] = tripled(x[i]);
}
""",
    """
kernel void bfloat_compounds(const device int* x [[buffer(0)]], device float* out [[buffer(1)]],
                             uint i [[thread_position_in_grid]]) {
    device float* o = out + 6 * i;
    bfloat b = bfloat(1.0f);
    b += x[i];
    bfloat2 v = bfloat2(1.0f);
    v.y -= x[i] * 2;
    bfloat c = bfloat(3.0f);
    c *= x[i];
    bfloat p = bfloat(255.0f);
    p++;
    --v[0];
    half h = 1.0h;
    h += x[i];
    o[0] = b;
    o[1] = v.y;
    o[2] = c;
    o[3] = p--;
    o[4] = v.x + p;
    o[5] = h;
}
""",
    """
kernel void mixed_floats(const device half* h [[buffer(0)]], const device int* n [[buffer(1)]],
                         const device float* f [[buffer(2)]], const device long* l [[buffer(3)]],
                         device float* out [[buffer(4)]], uint i [[thread_position_in_grid]]) {
    device float* o = out + 6 * i;
    o[0] = h[i] * n[i];                // half * int is a half
    o[1] = h[i] + f[i];                // half + float is a float
    half hl = h[i] - l[i];             // half - long is a half
    o[2] = hl;
    o[3] = (h[i] < n[i]) ? 1.0f : 0.0f; // n converted to half first
    bfloat bf = bfloat(f[i]);
    o[4] = bf * n[i];                  // bfloat * int is a bfloat
    o[5] = bf + f[i];                  // bfloat + float is a float
}
""",
    """
kernel void swizzle_compounds(const device int* x [[buffer(0)]], const device int* d [[buffer(1)]],
                              device int* out [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    device int* o = out + 8 * i;
    short2 w = short2(3, -4);
    w.yx += short2(x[i] * -1, x[i]);
    o[0] = w.x / d[i];
    o[1] = w.y / d[i];
    ushort4 u = ushort4(1, 2, 3, 4);
    u.wyz ^= ushort(x[i]);
    o[2] = u.w;
    o[3] = u.y + u.x;
    o[4] = u.z;
    char3 c = char3(1, 2, 3);
    c.zx <<= char2(1, 2);
    c.xy -= char2(x[i] * -1, x[i]);
    o[5] = c.x / d[i];
    o[6] = c.y / d[i];
    o[7] = c.z;
}
""",
    """
kernel void half_components_from_longs(const device long* x [[buffer(0)]], device half* out [[buffer(1)]],
                                       uint i [[thread_position_in_grid]]) {
    device half* o = out + 6 * i;
    half3 v = half3(1.0h);
    v[0u] = 9ul;
    v.y = x[i];
    half2 w = half2(0.0h);
    w[i % 2u] = ulong(x[i] + 30000);
    half4 arr[2] = {half4(0.0h), half4(0.0h)};
    arr[1].z = x[i] * 2l;
    o[0] = v.x;
    o[1] = v.y;
    o[2] = v.z;
    o[3] = w[i % 2u];
    o[4] = w[(i + 1u) % 2u];
    o[5] = arr[1].z;
}
""",
])


def _wrap(v, bits):
    v = np.asarray(v, dtype=np.int64) & ((1 << bits) - 1)
    return np.where(v >= 1 << (bits - 1), v - (1 << bits), v)


def _cdiv(a, b):
    q = np.abs(a) // np.abs(b)
    return np.where((a < 0) != (b < 0), -q, q)


def _cmod(a, b):
    return a - _cdiv(a, b) * b


X = np.array([-32768, -32767, -5, 0, 7, 32767, -256, -32513, 1, -1, -32640, 16384, -128, 128, 255, -129], np.int16)
D = np.array([1, 3, 7, 2, 5, 1, 9, 4, 3, 1, 6, 2, 7, 5, 3, 11], np.int32)


def test_small_integers_narrowed_implicitly(device):
    n = len(X)
    out = np.zeros(14 * n, np.int32)
    sout = np.zeros(2 * n, np.int16)
    KS.get(device, "implicit_narrowing")(n, X, D, out, sout)
    v, d = X.astype(np.int64), D.astype(np.int64)
    neg = _wrap(-v, 16)
    c = _wrap(v >> 8, 8)
    nc = _wrap(-c, 8)
    u = v & 0xFFFF
    exp = np.stack([
        _cdiv(neg, d), neg < 1, _cdiv(neg, d), _cdiv(neg, d), _cdiv(nc, d), nc < 1,
        _cmod(neg, d), _cdiv(neg, d), _cdiv((u * 65535) & 0xFFFF, d), neg < 1, _cdiv(neg, d),
        _cdiv(neg, d), _wrap(v << 1, 16), (u * 255) & 0xFF,
    ], axis=1).astype(np.int32)
    assert_equal(out.reshape(n, 14), exp)
    assert_equal(sout.reshape(n, 2), np.stack([neg, neg], axis=1).astype(np.int16))


def test_comparisons_of_mixed_signedness(device):
    a = np.array([-1, 0, 5, -2147483648, 7, 2147483647, -7, 3], np.int32)
    b = np.array([1, 0, 4294967295, 2147483648, 7, 5, 4294967289, 2], np.uint32)
    s = np.array([-1, 0, -32768, 32767, 5, -5, 1, 2], np.int16)
    us = np.array([1, 0, 65535, 32767, 5, 65531, 0, 3], np.uint16)
    lg = np.array([-1, 4294967296, -5, 2147483648, 7, -9223372036854775808, 4294967289, 1], np.int64)
    n = len(a)
    out = np.zeros(6 * n, np.int32)
    KS.get(device, "mixed_compares")(n, a, b, s, us, lg, out)
    A, B, S, US, L = (x.astype(object) for x in (a, b, s, us, lg))
    exp = [[int(x % 2**32 < y), int(p < q), int(z < y), int(x % 2**32 == y), int(p % 2**32 > y),
            int(z % 2**64 > x % 2**64)] for x, y, p, q, z in zip(A, B, S, US, L)]
    assert_equal(out.reshape(n, 6), np.array(exp, np.int32))


def test_integer_literal_branches_beside_small_integers(device):
    x = np.array([0, 6, 9, -4, 8, 5], np.int32)
    n = len(x)
    out = np.zeros(7 * n, np.int64)
    KS.get(device, "literal_arms")(n, x, out)
    exp = []
    for v in x.tolist():
        c = v > 5
        exp.append([2030664764, 64 if c else 2030664764, -1 if c else 70000, int(((-1 if c else 5) % 2**32) < 1),
                    int(v > 7) if c else 9, (v % 2**32) if c else 3000000000, 65535 if c else 0])
    assert_equal(out.reshape(n, 7), np.array(exp, np.int64))


def test_int_and_half_branches_with_a_braced_temporary(device):
    h = np.array([1.5, -2.0, 0.1, 300.0, -0.75, 7.0], np.float16)
    n = np.array([1, 2049, 5, -3, 70000, 4], np.int32)
    out = np.zeros(len(h), np.float32)
    KS.get(device, "braced_arms")(len(h), h, n, out)
    with np.errstate(over="ignore"):
        exp = np.where(n > 3, n.astype(np.float16), h * h).astype(np.float32)
    assert_equal(out, exp)


def _bfloat(x):
    """float32 values rounded to bfloat (nearest even), as float32."""
    bits = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16 << 16
    return bits.astype(np.uint32).view(np.float32)


def test_half_and_bfloat_mixed_with_float_and_integers(device):
    h = np.array([1.5, -2.0, 2048.0, 0.1, 65504.0, -0.5, 3.0, 1000.0], np.float16)
    n_ = np.array([3, -7, 2049, 10, 2, 70000, -1, 65], np.int32)
    f = np.array([0.1, 1e-5, 1.0, 3.5, 100000.0, -2.25, 7.0, 1.0 / 3.0], np.float32)
    lg = np.array([1, -2, 4097, 0, 131072, 3, -5, 2047], np.int64)
    n = len(h)
    out = np.zeros(6 * n, np.float32)
    KS.get(device, "mixed_floats")(n, h, n_, f, lg, out)
    with np.errstate(over="ignore"):
        nh = n_.astype(np.float16)  # int to half: rounded once (70000 is beyond half: inf)
        bf = _bfloat(f)
        exp = np.stack([
            (h * nh).astype(np.float32),
            h.astype(np.float32) + f,
            (h - lg.astype(np.float16)).astype(np.float32),
            (h < nh).astype(np.float32),
            _bfloat(bf * _bfloat(n_.astype(np.float32))),
            bf + f,
        ], axis=1)
    assert_equal(out.reshape(n, 6), exp)


XI = np.array([-32768, 32768, -5, 0, 7, 65535, -129, 128, 1 << 20, -1, 32767, 255, -65536 - 7, 200, -200, 99999],
              np.int32)
HI = np.array([1.0, 1.0, -2.0, 0.5, 2048.0, 0.1, -1.0, 3.0, 1.0, 7.5, -0.25, 1000.0, 1.0, 65504.0, -3.0, 0.0], np.float16)
FI = np.array([2.0 ** -11 + 2.0 ** -22, -(2.0 ** -11 + 2.0 ** -22), 0.3, 1e-4, 1.0, 1.0 / 3.0, 2.0 ** -12 + 2.0 ** -30,
               -1.5, 2.0 ** -11, 3.0, 1e-3, 0.4999, 2.0 ** -11 + 2.0 ** -23, 16.0, 7.0, -0.0], np.float32)


def test_narrowing_at_components_lambdas_and_braces(device):
    """Implicit conversions where the fuzzer's tenth-session generator writes them: a char or short
    vector's components assigned (`v.x = x * -1`, `v[1]`, `w.yx = ...` broadcast, a device short2's
    `.y`), compound and ++/-- on them, a lambda's short and char parameters and its `-> short`,
    a struct's braced members widened, a vector constructor's int arguments; and half op= float,
    which rounds once (h = half(float(h) + f)): CUDA's __half operator+= rounded f to half first."""
    n = len(XI)
    d = np.array([1, 3, 7, 2, 5, 1, 9, 4, 3, 1, 6, 2, 7, 5, 3, 11], np.int32)
    out = np.zeros(13 * n, np.int32)
    sv = np.zeros(2 * n, np.int16)
    hout = np.zeros(3 * n, np.float16)
    KS.get(device, "component_narrowing")(n, XI, d, HI, FI, out, sv, hout)
    x, dd = XI.astype(np.int64), d.astype(np.int64)
    neg16, neg8 = _wrap(-x, 16), _wrap(-x, 8)
    cx = _wrap(_wrap(x, 8) + 1, 8)
    exp = np.stack([
        _cdiv(neg16, dd), neg16 < 1, _cdiv(_wrap(neg16 - x, 16), dd), _cdiv(_wrap(x, 8), dd), _cdiv(neg16, dd),
        _cdiv((-x & 0xFFFF) + 65535, dd), _cdiv(neg16, dd) + neg8, _cdiv(neg16, dd), _cdiv(neg16, dd),
        _cdiv(x, dd) + _wrap(x, 16) + HI.astype(np.float32).astype(np.int64), _cdiv(neg16, dd),
        cx * 1000 + _wrap(_wrap(x, 8) - 1, 8), _cdiv(neg16, dd),
    ], axis=1).astype(np.int32)
    assert_equal(out.reshape(n, 13), exp)
    assert_equal(sv.reshape(n, 2)[:, 1], neg16.astype(np.int16))
    h32 = HI.astype(np.float32)
    with np.errstate(over="ignore"):
        hexp = np.stack([(h32 + FI).astype(np.float16), FI.astype(np.float16), (h32 - FI).astype(np.float16)], axis=1)
    assert_equal(hout.reshape(n, 3), hexp)


def test_trailing_return_types_name_msl_types(device):
    """`[&](int p) -> ushort`, `-> short4` and `auto f(int) -> uchar`: the translation took the
    type after `->` for a member's name and left it unrenamed, so `uchar` was unknown there (fuzz
    seed 9600: 22 of 200 programs)."""
    x = np.array([100, -1, 0, 70000, -32768, 85], np.int32)
    out = np.zeros(3 * len(x), np.int32)
    KS.get(device, "trailing_returns")(len(x), x, out)
    v = x.astype(np.int64)
    exp = np.stack([-v & 0xFFFF, _wrap(v, 16), (3 * v) & 0xFF], axis=1).astype(np.int32)
    assert_equal(out.reshape(len(x), 3), exp)


def test_bfloat_compound_assignments_with_integers_and_increments(device):
    """b op= i is b = b op i: the integer rounded to bfloat first. The prelude's bfloat took it
    through float (`b += 257` gave 258 for b = 1, where b + 257 is 256), and had no ++ or --."""
    x = np.array([257, 3, 65793, -257, 0, 1027], np.int32)
    out = np.zeros(6 * len(x), np.float32)
    KS.get(device, "bfloat_compounds")(len(x), x, out)
    xb = _bfloat(x.astype(np.float32))
    with np.errstate(over="ignore"):
        exp = np.stack([
            _bfloat(1.0 + xb), _bfloat(1.0 - _bfloat(2.0 * x.astype(np.float32))), _bfloat(3.0 * xb),
            np.full(len(x), 256.0, np.float32), np.full(len(x), 255.0, np.float32),  # 256 - 1 is 255 (p--)
            (np.float16(1.0) + x.astype(np.float16)).astype(np.float32),
        ], axis=1).astype(np.float32)
    assert_equal(out.reshape(len(x), 6), exp)


def test_narrowing_at_a_constructors_arguments(device):
    """`Narrowed(x * -1, ...)` of a struct whose constructor takes a short and a char: the
    arguments convert as a function's do (on CUDA through narrow_arg, as the other conversions
    to char and short: NVVM made such a negation a neg.s16)."""
    d = np.array([1, 3, 7, 2, 5, 1, 9, 4, 3, 1, 6, 2, 7, 5, 3, 11], np.int32)
    out = np.zeros(2 * len(XI), np.int32)
    KS.get(device, "constructor_narrowing")(len(XI), XI, d, out)
    x = XI.astype(np.int64)
    exp = np.stack([_cdiv(_wrap(-x, 16), d), _wrap(-x, 8) < 1], axis=1).astype(np.int32)
    assert_equal(out.reshape(len(XI), 2), exp)


def test_compound_assignments_to_swizzles(device):
    """`w.yx += short2(...)`, `u.wyz ^= ushort(x)`, `c.zx <<= char2(...)`: compound assignments
    to swizzles of several components of char and short vectors, each component narrowed (on CUDA
    a swizzle of several components is a proxy: the fuzzer's programs did not compile there)."""
    d = np.array([1, 3, 7, 2, 5, 1, 9, 4, 3, 1, 6, 2, 7, 5, 3, 11], np.int32)
    out = np.zeros(8 * len(XI), np.int32)
    KS.get(device, "swizzle_compounds")(len(XI), XI, d, out)
    x = XI.astype(np.int64)
    u = x & 0xFFFF
    exp = np.stack([
        _cdiv(_wrap(3 + x, 16), d), _cdiv(_wrap(-4 - x, 16), d), 4 ^ u, (2 ^ u) + 1, 3 ^ u,
        _cdiv(_wrap(4 - _wrap(-x, 8), 8), d), _cdiv(_wrap(2 - _wrap(x, 8), 8), d), np.full(len(x), 6),
    ], axis=1).astype(np.int32)
    assert_equal(out.reshape(len(XI), 8), exp)


def test_half_components_assigned_from_longs(device):
    """A long or ulong assigned to a half vector's component (`v[0u] = 9ul`, `v.y = x`, an array
    element's `.z`): each converts to half, rounding to nearest even (on CUDA, __half has no
    operator= for them and its others tie: the H200's fuzz seeds 9702, 9703, 9705)."""
    x = np.array([0, 1, -7, 2049, -2051, 30000, -29999, 12345], np.int64)
    out = np.zeros(6 * len(x), np.float16)
    KS.get(device, "half_components_from_longs")(len(x), x, out)
    exp = np.stack([np.full(len(x), 9.0), x, np.ones(len(x)), x + 30000, np.zeros(len(x)), 2 * x], axis=1)
    assert_equal(out.reshape(len(x), 6), exp.astype(np.float16))


SPLATS = KernelSet([
    """
kernel void scalar_splats(const device float* s [[buffer(0)]], const device long* l [[buffer(1)]],
                          device int4* io [[buffer(2)]], device half4* ho [[buffer(3)]],
                          device float4* fo [[buffer(4)]], uint i [[thread_position_in_grid]]) {
    int4 a = int4(int(i), -3, 70000, -2147483647);
    io[3 * i] = a + l[i];
    io[3 * i + 1] = int4(uint4(a) + -1);
    io[3 * i + 2] = int4(short4(a) * true);
    half4 h = half4(half(i), 0.5h, -3.0h, 1000.0h);
    ho[i] = h * s[i];
    fo[i] = float4(a) * int(l[i]);
}
""",
])


def test_integer_vectors_with_integer_scalars_and_float_vectors_with_any_scalar(device):
    """The splats clang's vectors allow (MSL's): an integer scalar of any width converts to an
    integer vector's component type (long to int truncates, -1 to uint wraps, bool is 1); a
    float scalar converts to a half vector's components (rounded to half first), an integer to
    a float vector's."""
    s = np.array([0.1, -2.5, 3.3333, 65504.0], np.float32)
    l = np.array([1, -(2**33) + 5, 2**40, -7], np.int64)
    n = len(s)
    io = np.zeros((3 * n, 4), np.int32)
    ho = np.zeros((n, 4), np.float16)
    fo = np.zeros((n, 4), np.float32)
    SPLATS.get(device, "scalar_splats")(n, s, l, io, ho, fo)
    a = np.array([[i, -3, 70000, -2147483647] for i in range(n)], np.int64)
    wrap32 = lambda v: ((v + 2**31) % 2**32 - 2**31).astype(np.int32)  # noqa: E731
    short = (a + 2**15) % 2**16 - 2**15
    exp_i = np.stack([wrap32(a + wrap32(l)[:, None]), wrap32(a - 1), short.astype(np.int32)], axis=1)
    assert_equal(io.reshape(n, 3, 4), exp_i)
    h = np.array([[i, 0.5, -3.0, 1000.0] for i in range(n)], np.float16)
    with np.errstate(over="ignore"):
        assert_equal(ho, h * s.astype(np.float16)[:, None])
    assert_equal(fo, a.astype(np.float32) * wrap32(l).astype(np.float32)[:, None])


@pytest.mark.parametrize("expr", ["a * 2.5f", "a + s", "1.5f < a", "a / 2.0", "b -= s, b"])
def test_integer_vector_with_a_floating_scalar_is_refused(device, expr):
    """clang's vectors (Metal's compiler) never splat a floating-point scalar into an integer
    vector ("cannot convert between vector values of different size"): `int4 * 2.5f` was
    computed here as `int4 * 2`, a silent wrong answer for code Metal refuses. Now a
    CompileError at the expression, on every device."""
    src = f"""#include <metal_stdlib>
using namespace metal;
kernel void k(device int4* o [[buffer(0)]], constant float& s [[buffer(1)]],
              uint i [[thread_position_in_grid]]) {{
    int4 a = int4(int(i));
    ushort3 b = ushort3(1);
    o[i] = int4(({expr}).x);
}}
"""
    with pytest.raises(mc.CompileError, match=r"source\.metal:7:.*integer vector and a floating-point scalar"):
        device.compile(src)
