"""metal_stdlib's integer functions at every width (char to ulong), at the edges of each type,
checked against Python's integers on every device.

The fuzzer's leftovers of the seventh session: `abs` of the most negative long was computed as
`x < 0 ? -x : x`, a signed overflow in C++, so clang took `abs(x) < 0` as false and `abs(x) % 7`
as positive for LONG_MIN where MSL's wrap gives LONG_MIN (the 8- to 32-bit ones wrap already,
tests/conformance/test_gpu_fuzz_classes.py); on CUDA the same expression becomes PTX's abs.s64,
the instruction family whose result ptxas takes as never negative (abs.s32, abs.s16: fuzz seeds
1001 and 9203). `abs(MIN)` is MIN here, as on the 8- to 32-bit types.
"""

from __future__ import annotations

import numpy as np
import pytest

from mcconf import KernelSet, assert_equal

# (MSL name, NumPy dtype, bits, signed)
TYPES = [("char", np.int8, 8, True), ("uchar", np.uint8, 8, False), ("short", np.int16, 16, True),
         ("ushort", np.uint16, 16, False), ("int", np.int32, 32, True), ("uint", np.uint32, 32, False),
         ("long", np.int64, 64, True), ("ulong", np.uint64, 64, False)]
COLUMNS = 20
FLAGS = 4

KERNEL = """
kernel void widths_{T}(const device {T}* xs [[buffer(0)]], const device {T}* ys [[buffer(1)]],
                       const device {T}* zs [[buffer(2)]], device {T}* out [[buffer(3)]],
                       device int* flags [[buffer(4)]], uint i [[thread_position_in_grid]]) {{
    {T} a = xs[i], b = ys[i], c = zs[i];
    device {T}* o = out + {C} * i;
    o[0] = abs(a);
    o[1] = {T}(absdiff(a, b));
    o[2] = addsat(a, b);
    o[3] = subsat(a, b);
    o[4] = madsat(a, b, c);
    o[5] = hadd(a, b);
    o[6] = rhadd(a, b);
    o[7] = mulhi(a, b);
    o[8] = madhi(a, b, c);
    o[9] = clz(a);
    o[10] = ctz(a);
    o[11] = popcount(a);
    o[12] = rotate(a, b);
    o[13] = reverse_bits(a);
    o[14] = clamp(a, min(b, c), max(b, c));
    o[15] = {T}(abs(a) % {T}(7));
    o[16] = {T}({T}(absdiff(a, {T}(0))) % {T}(7));
    o[17] = max3(a, b, c);
    o[18] = median3(a, b, c);
    o[19] = {T}(abs(a) / {T}(3));
    device int* f = flags + {F} * i;
    f[0] = abs(a) < {T}(0) ? 1 : 0;
    f[1] = {T}(absdiff(a, {T}(0))) < {T}(0) ? 1 : 0;
    f[2] = abs(a) == a ? 1 : 0;
    f[3] = int(popcount(a)) + int(clz(a)) + int(ctz(a));
}}
"""

KS = KernelSet([KERNEL.format(T=name, C=COLUMNS, F=FLAGS) for name, *_ in TYPES])


def _wrap(v: int, bits: int, signed: bool) -> int:
    v %= 1 << bits
    return v - (1 << bits) if signed and v >> (bits - 1) else v


def _edges(bits: int, signed: bool) -> list:
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    values = [lo, lo + 1, hi, hi - 1, 0, 1, 2, 3, 7, 1 << (bits - 2), (1 << (bits // 2)) - 1]
    if signed:
        values += [-1, -2, -7, lo // 2, -(1 << (bits - 2)) - 1]
    return values


def _cmod(a: int, d: int) -> int:
    q = abs(a) // abs(d)
    return a - (q if (a < 0) == (d < 0) else -q) * d


def _cdiv(a: int, d: int) -> int:
    q = abs(a) // abs(d)
    return q if (a < 0) == (d < 0) else -q


def _expected(a: int, b: int, c: int, bits: int, signed: bool):
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    w = lambda v: _wrap(v, bits, signed)  # noqa: E731
    sat = lambda v: min(max(v, lo), hi)  # noqa: E731
    u = a % (1 << bits)
    s = b % bits
    rot = ((u << s) | (u >> (bits - s))) % (1 << bits) if s else u
    absa = w(abs(a))
    mag = w(abs(a))  # T(absdiff(a, 0)): 2^(bits-1) as a signed T is MIN
    cols = [absa, w(abs(a - b)), sat(a + b), sat(a - b), sat(a * b + c), (a + b) >> 1, (a + b + 1) >> 1,
            (a * b) >> bits, w(((a * b) >> bits) + c), bits - u.bit_length(),
            bits if u == 0 else (u & -u).bit_length() - 1, bin(u).count("1"), w(rot),
            w(int(format(u, f"0{bits}b")[::-1], 2)), min(max(a, min(b, c)), max(b, c)),
            w(_cmod(absa, 7)), w(_cmod(mag, 7)), max(a, b, c), sorted((a, b, c))[1], w(_cdiv(absa, 3))]
    flags = [int(absa < 0), int(mag < 0), int(absa == a), bin(u).count("1") + bits - u.bit_length() +
             (bits if u == 0 else (u & -u).bit_length() - 1)]
    return cols, flags


@pytest.mark.parametrize("name,dtype,bits,signed", TYPES, ids=[t[0] for t in TYPES])
def test_integer_functions_at_the_edges(device, name, dtype, bits, signed):
    edges = _edges(bits, signed)
    rng = np.random.default_rng(bits + signed)
    n = 3 * len(edges)
    pick = lambda: [edges[k] for k in rng.integers(0, len(edges), n)]  # noqa: E731
    xs = edges * 3
    ys, zs = pick(), pick()
    ys[: len(edges)] = edges[::-1]
    x, y, z = (np.array(v, dtype=object).astype(dtype) for v in (xs, ys, zs))
    out = np.zeros(COLUMNS * n, dtype)
    flags = np.zeros(FLAGS * n, np.int32)
    KS.get(device, f"widths_{name}")(n, x, y, z, out, flags)
    expected = [_expected(a, b, c, bits, signed) for a, b, c in zip(xs, ys, zs)]
    cols = np.array([e[0] for e in expected], dtype=object).astype(dtype)
    assert_equal(out.reshape(n, COLUMNS), cols, err_msg=f"{name}: rows are (a, b, c) of {list(zip(xs, ys, zs))}")
    assert_equal(flags.reshape(n, FLAGS), np.array([e[1] for e in expected], np.int32))
