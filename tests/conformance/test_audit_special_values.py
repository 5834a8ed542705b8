"""Special values the MSL specification defines (tables 6.2 and 6.4, section 8.1), checked exactly
on every device: the integer functions' vector overloads at every width, at the edges of each
type (test_integer_widths.py checks the scalars), and float functions of NaN, infinities, signed
zeros, subnormals and halfway cases without fast math (test_math.py compares random values
within tolerances). References are Python's integers, NumPy and Python's math (C99 pow and atan2).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from mcconf import KernelSet, assert_equal

TYPES = [("char", np.int8, 8, True), ("uchar", np.uint8, 8, False), ("short", np.int16, 16, True),
         ("ushort", np.uint16, 16, False), ("int", np.int32, 32, True), ("uint", np.uint32, 32, False),
         ("long", np.int64, 64, True), ("ulong", np.uint64, 64, False)]
COLS = 14

VECTOR = """
kernel void vec_{T}(const device {T}4* x [[buffer(0)]], const device {T}4* y [[buffer(1)]],
                    device {T}4* out [[buffer(2)]], uint i [[thread_position_in_grid]]) {{
    {T}4 a = x[i], b = y[i];
    device {T}4* r = out + {C} * i;
    r[0] = abs(a); r[1] = {T}4(absdiff(a, b)); r[2] = addsat(a, b); r[3] = subsat(a, b);
    r[4] = hadd(a, b); r[5] = rhadd(a, b); r[6] = mulhi(a, b); r[7] = clz(a); r[8] = ctz(a);
    r[9] = popcount(a); r[10] = rotate(a, b); r[11] = reverse_bits(a);
    r[12] = extract_bits(a, 1u, {W}u - 2u); r[13] = insert_bits(a, b, 2u, {W}u - 3u);
}}
"""
KS_INT = KernelSet([VECTOR.format(T=t, W=w, C=COLS) for t, _, w, _ in TYPES])


def _wrap(v, bits, signed):
    v %= 1 << bits
    return v - (1 << bits) if signed and v >> (bits - 1) else v


def _expected(a, b, bits, signed):
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    u, s = a % (1 << bits), b % bits  # rotate's count modulo the width (negative ones too)
    field = (u >> 1) & ((1 << (bits - 2)) - 1)  # extract_bits(a, 1, bits - 2): sign-extended if signed
    if signed and field >> (bits - 3):
        field -= 1 << (bits - 2)
    mask = ((1 << (bits - 3)) - 1) << 2
    return [_wrap(abs(a), bits, signed), _wrap(abs(a - b), bits, signed), min(max(a + b, lo), hi),
            min(max(a - b, lo), hi), (a + b) >> 1, (a + b + 1) >> 1, (a * b) >> bits,
            bits - u.bit_length(), bits if u == 0 else (u & -u).bit_length() - 1, bin(u).count("1"),
            _wrap((u << s) | (u >> (bits - s)) if s else u, bits, signed),
            _wrap(int(format(u, f"0{bits}b")[::-1], 2), bits, signed), field,
            _wrap((u & ~mask) | ((b % (1 << bits)) << 2 & mask), bits, signed)]


def _aligned(a):
    """A copy of `a` at a 64-byte boundary (long4 needs 32)."""
    raw = np.zeros(a.nbytes + 64, np.uint8)
    off = (-raw.ctypes.data) % 64
    view = raw[off:off + a.nbytes].view(a.dtype)
    view[:] = a
    return view


@pytest.mark.parametrize("name,dtype,bits,signed", TYPES, ids=[t[0] for t in TYPES])
def test_integer_vector_functions_at_the_edges(device, name, dtype, bits, signed):
    """Table 6.2 on 4-vectors: abs(MIN) wraps, absdiff/addsat/subsat/hadd/rhadd/mulhi without
    overflow, clz/ctz of 0 are the width, rotate by counts >= the width and negative, and
    extract_bits/insert_bits up to the top bit; every pair of edge values."""
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    vals = sorted({lo, lo + 1, hi, hi - 1, 0, 1, 2, 3, bits, bits + 1, 2 * bits + 3}
                  | ({-1, -2, -bits - 1} if signed else set()))
    pairs = [(a, b) for a in vals for b in vals]
    pairs += [(1, 1)] * (-len(pairs) % 4)
    n = len(pairs) // 4
    x = _aligned(np.array([p[0] for p in pairs], dtype=object).astype(dtype))
    y = _aligned(np.array([p[1] for p in pairs], dtype=object).astype(dtype))
    out = _aligned(np.zeros(COLS * 4 * n, dtype))
    KS_INT.get(device, f"vec_{name}")(n, x, y, out)
    got = out.reshape(n, COLS, 4).transpose(0, 2, 1).reshape(len(pairs), COLS)
    expected = np.array([_expected(a, b, bits, signed) for a, b in pairs], dtype=object).astype(dtype)
    assert_equal(got, expected, err_msg=f"{name}4: rows are (a, b) of {pairs}")


FLOAT_COLS = 24
KS_FLOAT = KernelSet([f"""
kernel void special(const device float* x [[buffer(0)]], const device float* y [[buffer(1)]],
                    device float* out [[buffer(2)]], device int* ex [[buffer(3)]],
                    uint i [[thread_position_in_grid]]) {{
    float a = x[i], b = y[i];
    device float* r = out + {FLOAT_COLS} * i;
    r[0] = fmin(a, b); r[1] = fmax(a, b); r[2] = fract(a);
    float whole; r[3] = modf(a, whole); r[4] = whole;
    int e; r[5] = frexp(a, e); ex[i] = e;
    r[6] = fmod(a, b); r[7] = copysign(a, b); r[8] = sign(a); r[9] = step(a, b);
    r[10] = rint(a); r[11] = round(a); r[12] = trunc(a); r[13] = floor(a); r[14] = ceil(a);
    r[15] = sqrt(a); r[16] = rsqrt(a); r[17] = pow(a, b); r[18] = atan2(a, b); r[19] = fdim(a, b);
    r[20] = clamp(a, -1.0f, 1.0f); r[21] = saturate(a); r[22] = nextafter(a, b);
    r[23] = ldexp(a, int(clamp(b, -300.0f, 300.0f)));
}}
"""], fast_math=False)

SPECIALS = [math.nan, math.inf, -math.inf, 0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1.5, 2.5, -2.5, 3.0, 1e-45, -1e-45,
            1e-40, 3.4e38, -7.25, 0.3]


def _fmin(a, b):
    return b if (b < a or math.isnan(a)) else a


def _fmax(a, b):
    return b if (a < b or math.isnan(a)) else a


def _c_pow(a, b):
    """C99's pow (Annex F), which IEEE 754's pow and MSL's precise pow follow."""
    if a == 0 and b < 0:
        odd = b.is_integer() and int(b) % 2 == 1
        return math.copysign(math.inf, a) if odd else math.inf
    try:
        return math.pow(a, b)
    except ValueError:
        return math.nan
    except OverflowError:
        return -math.inf if a < 0 and b.is_integer() and int(b) % 2 == 1 else math.inf


def test_float_functions_of_special_values(device):
    """Without fast math (section 8.1: NaN and INF are supported): every pair of special values
    through table 6.4's exact functions (bit for bit: signed zeros count), and pow and atan2 within
    their ulp bounds (16 and 6, table 8.1) or exactly where C99 gives a special value."""
    pairs = [(np.float32(a), np.float32(b)) for a in SPECIALS for b in SPECIALS]
    x = np.array([p[0] for p in pairs], np.float32)
    y = np.array([p[1] for p in pairs], np.float32)
    out = np.zeros(FLOAT_COLS * x.size, np.float32)
    ex = np.zeros(x.size, np.int32)
    KS_FLOAT.get(device, "special")(x.size, x, y, out, ex)
    out = out.reshape(x.size, FLOAT_COLS)
    f32 = np.float32
    below_one = f32(1) - f32(2.0 ** -24)
    failures = []
    np_warnings = np.errstate(all="ignore")  # the references overflow and take NaNs on purpose
    np_warnings.__enter__()
    for k, (a32, b32) in enumerate(pairs):
        a, b = float(a32), float(b32)
        fin = math.isfinite(a)
        frac_part = math.copysign(0.0, a) if math.isinf(a) else (a - math.trunc(a) if fin else a)
        exact = {
            0: _fmin(a32, b32), 1: _fmax(a32, b32),
            2: min(f32(a32 - np.floor(a32)), below_one) if fin else None,  # fract of inf/NaN: unspecified
            3: math.copysign(frac_part, a) if not math.isnan(a) else math.nan,
            4: math.copysign(float(math.trunc(a)), a) if fin else a,  # "the same sign as the argument"
            5: np.frexp(a32)[0] if fin else None,
            6: math.fmod(a, b) if fin and b != 0 and not math.isnan(b) else (a if fin and math.isinf(b) else math.nan),
            7: math.copysign(a, b) if not math.isnan(b) else None,  # a NaN's sign is open (IEEE 754)
            8: 0.0 if math.isnan(a) else (1.0 if a > 0 else -1.0 if a < 0 else a),
            9: 0.0 if b < a else 1.0,
            10: np.rint(a32), 11: math.copysign(math.floor(abs(a) + 0.5), a) if fin else a,
            12: np.trunc(a32), 13: np.floor(a32), 14: np.ceil(a32),
            15: np.sqrt(a32) if not a < 0 else math.nan,
            16: (math.copysign(math.inf, a) if a == 0 else 0.0 if a == math.inf else math.nan if not a > 0
                 else f32(1 / np.sqrt(np.longdouble(a)))),
            19: math.nan if math.isnan(a) or math.isnan(b) else (f32(a32 - b32) if a > b else 0.0),
            20: _fmin(_fmax(a32, f32(-1)), f32(1)), 21: _fmin(_fmax(a32, f32(0)), f32(1)),
            22: np.nextafter(a32, b32),
            23: np.ldexp(a32, int(min(max(b, -300), 300))) if not math.isnan(b) else None,
        }
        with np.errstate(all="ignore"):
            for col, want in exact.items():
                if want is None:
                    continue
                got, want = out[k, col], f32(want)
                if not ((np.isnan(got) and np.isnan(want)) or got.view(np.uint32) == want.view(np.uint32)):
                    failures.append((col, a, b, float(got), float(want)))
            if fin and a != 0 and ex[k] != np.frexp(a32)[1]:
                failures.append(("frexp exponent", a, b, int(ex[k]), int(np.frexp(a32)[1])))
            for col, ref, ulps in ((17, _c_pow(a, b), 16), (18, math.atan2(a, b) if not (math.isnan(a) or math.isnan(b))
                                                              else math.nan, 6)):
                got, want = out[k, col], f32(ref)
                same = (np.isnan(got) and np.isnan(want)) or got.view(np.uint32) == want.view(np.uint32)
                near = np.isfinite(want) and want != 0 and abs(float(got) - ref) <= ulps * float(np.spacing(abs(want)))
                if not (same or near):
                    failures.append((col, a, b, float(got), float(want)))
    np_warnings.__exit__(None, None, None)
    assert not failures, f"{len(failures)} wrong (column, a, b, got, expected), e.g. {failures[:8]}"
