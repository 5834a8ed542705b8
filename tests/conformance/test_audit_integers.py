"""Audit of integer arithmetic (session 23): the integer library, the operators of every integer
type and width, and the constructs around them that the translation rewrites (`/`, `%`, `/=`,
`%=` through metal_division.h). References are Python's integers, wrapped to each type's width
as C++ and MSL store them; division by zero gives the CPU backend's documented value (docs/design.md,
"CPU runtime limits") and checked mode's ExecutionError.
"""

from __future__ import annotations

import numpy as np
import pytest

import metalcall as mc
from mcconf import KernelSet, assert_equal


def _wrap(v, bits, signed):
    v %= 1 << bits
    return v - (1 << bits) if signed and v >> (bits - 1) else v


# CUDA keeps C++'s plain `/` and `%` (docs/design.md, CPU runtime limits): a zero divisor and
# MIN / -1 give the GPU's own values there, which MSL leaves undefined.
GPU_DIVISION = "CUDA divides with the plain operators: x / 0 and MIN / -1 are the GPU's own values"


def _tdiv(a, b):
    """C's quotient, truncated toward zero."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


# Bit-fields of every integer type, read through `.` and `->`: (member, type, width, signed).
FIELDS = [("c", "char", 5, True), ("uc", "uchar", 7, False), ("s", "short", 11, True), ("us", "ushort", 13, False),
          ("i", "int", 20, True), ("u", "uint", 31, False), ("l", "long", 40, True), ("ul", "ulong", 45, False)]
# Widths as literals and as constant expressions (a constant, a sum, a template's parameter).
WIDTH_TEXT = {"s": "10 + 1", "i": "WIDE / 2", "l": "N", "ul": "(45)"}
BITFIELD_STRUCT = ("constant constexpr int WIDE = 40;\ntemplate <int N> struct BitsOf {\n"
                   + "".join(f"    {t} {m} : {WIDTH_TEXT.get(m, w)};\n" for m, t, w, _ in FIELDS)
                   + "};\ntypedef BitsOf<40> Bits;\n")
KS_BITFIELDS = KernelSet([
    """
kernel void bitfield_divide(const device long* v [[buffer(0)]], const device long* d [[buffer(1)]],
                            device long* out [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    Bits b;
    thread Bits* p = &b;
""" + "".join(f"    b.{m} = {t}(v[i]); p->{m} /= {t}(d[i]); out[{2 * k} * 8 + i] = b.{m};\n"
              f"    b.{m} = {t}(v[i]); b.{m} %= {t}(d[i]); out[{2 * k + 1} * 8 + i] = p->{m};\n"
              for k, (m, t, _, _) in enumerate(FIELDS)) + "}\n",
], preamble=BITFIELD_STRUCT)


def test_compound_division_of_bit_fields(device):
    """`s.bits /= n` and `p->bits %= n` are valid MSL, refused until this session (the
    translation's guarded `/=` bound the left side to a reference, which no bit-field binds):
    now C++'s own operator divides, by a divisor widened so that nothing traps. Every bit-field
    type, widths written as literals and as constant expressions, positive and negative values
    and divisors of the field's signedness."""
    pairs = [(13, 2), (-13, 2), (-13, -3), (7, -1), (-16, -1), (15, 4), (1, 7), (-1, 3)]
    v = np.array([a for a, _ in pairs], np.int64)
    d = np.array([b for _, b in pairs], np.int64)
    out = np.zeros(2 * len(FIELDS) * 8, np.int64)
    KS_BITFIELDS.get(device, "bitfield_divide")(8, v, d, out)
    expected = []
    for _, t, w, signed in FIELDS:
        bits = {"char": 8, "uchar": 8, "short": 16, "ushort": 16, "int": 32, "uint": 32}.get(t, 64)
        quot, rem = [], []
        for a, b in pairs:
            a = _wrap(_wrap(a, bits, signed), w, signed)  # the field's value
            b = _wrap(b, bits, signed)  # the divisor converted to the field's type
            quot.append(_wrap(_tdiv(a, b), w, signed))
            rem.append(_wrap(a - _tdiv(a, b) * b, w, signed))
        expected += [quot, rem]
    assert_equal(out.reshape(2 * len(FIELDS), 8), np.array(expected, np.int64))


KS_BITFIELDS_BY_ZERO = KernelSet([
    """
kernel void bitfield_by_zero(const device int* d [[buffer(0)]], device int* out [[buffer(1)]],
                             uint i [[thread_position_in_grid]]) {
    Small s; s.a = 13; s.b = -5;
    s.a /= uint(d[i]); s.b %= d[i];
    out[2 * i] = s.a; out[2 * i + 1] = s.b;
}
""",
], preamble="struct Small { uint a : 6; int b : 9; };\n")


KS_BITFIELD_NAMES = KernelSet([
    """
kernel void bitfield_names(const device int* d [[buffer(0)]], device float* out [[buffer(1)]],
                           uint i [[thread_position_in_grid]]) {
    int4 a = int4(9, -9, 7, 100);
    float b = 7.5f;
    long c = -9;
    a /= d[i]; b /= d[i]; c %= d[i] + 2;
    long u = LONG_MIN; u /= -d[i] / d[i];  // a local: guarded as any long (MIN / -1 == MAX)
    c += u == LONG_MAX ? 0 : 1000;
    out[6 * i] = a.x; out[6 * i + 1] = a.y; out[6 * i + 2] = a.w; out[6 * i + 3] = b; out[6 * i + 4] = c;
    Small s; s.a = 9; s.b = -9; s.a /= 2u; s.b %= 4;
    out[6 * i + 5] = s.a * 100 + s.b;
}
""",
], preamble="struct Small { uint a : 6; int b : 9, c : 3; long u : 40; };\n")


def test_names_shared_with_bit_fields(device):
    """A vector, a float and a long named like a bit-field member (`a`, `b`, `c`) still divide as
    their own types: vectors component by component, floats as floats, integers guarded."""
    d = np.array([2, 4], np.int32)
    out = np.zeros(12, np.float32)
    KS_BITFIELD_NAMES.get(device, "bitfield_names")(2, d, out)
    expected = [[_tdiv(9, k), _tdiv(-9, k), _tdiv(100, k), 7.5 / k, -9 - _tdiv(-9, k + 2) * (k + 2), 4 * 100 - 1]
                for k in (2, 4)]
    if device.backend == "cuda":  # GPU_DIVISION: LONG_MIN / -1 is the GPU's own value (1000 added unless MAX)
        out.reshape(2, 6)[:, 4] -= 1000 * (out.reshape(2, 6)[:, 4] > 500)
    assert_equal(out.reshape(2, 6), np.array(expected, np.float32))


def test_bit_fields_divided_by_zero(device):
    """A bit-field divided by zero does not trap: 0 for `/=`, the value for `%=`, as the CPU
    backend's other integers; checked mode reports it."""
    d = np.zeros(4, np.int32)
    out = np.full(8, 99, np.int32)
    kernel = KS_BITFIELDS_BY_ZERO.get(device, "bitfield_by_zero")
    if device.checked:
        with pytest.raises(mc.ExecutionError, match="division by zero"):
            kernel(4, d, out)
        return
    if device.backend == "cuda":
        pytest.skip(GPU_DIVISION)
    kernel(4, d, out)
    assert_equal(out, np.array([0, -5] * 4, np.int32))


# (MSL name, NumPy dtype, bits, signed)
TYPES = [("char", np.int8, 8, True), ("uchar", np.uint8, 8, False), ("short", np.int16, 16, True),
         ("ushort", np.uint16, 16, False), ("int", np.int32, 32, True), ("uint", np.uint32, 32, False),
         ("long", np.int64, 64, True), ("ulong", np.uint64, 64, False)]

KS_NO_BITS = KernelSet([f"""
kernel void no_bits_{t}(const device {t}* x [[buffer(0)]], const device uint* off [[buffer(1)]],
                        device {t}* out [[buffer(2)]], uint i [[thread_position_in_grid]]) {{
    {t} base = x[i], ins = {t}(~base);
    device {t}* o = out + 10 * i;
    o[0] = insert_bits(base, ins, {w}u, 0u);
    o[1] = insert_bits(base, ins, off[i], 0u);
    o[2] = insert_bits(base, ins, 0u, 0u);
    o[3] = extract_bits(base, {w}u, 0u);
    o[4] = extract_bits(base, off[i], 0u);
    {t}2 v2 = insert_bits({t}2(base), {t}2(ins), {w}u, 0u);
    {t}3 v3 = insert_bits({t}3(base), {t}3(ins), off[i], 0u);
    {t}4 v4 = insert_bits({t}4(base), {t}4(ins), {w}u, 0u);
    o[5] = v2.y; o[6] = v3.z; o[7] = v4.w;
    o[8] = insert_bits(base, ins, {w - 1}u, 1u);
    o[9] = extract_bits(base, 0u, {w}u);
}}
""" for t, _, w, _ in TYPES])


@pytest.mark.parametrize("name,dtype,bits,signed", TYPES, ids=[t[0] for t in TYPES])
def test_insert_bits_of_no_bits_at_the_top(device, name, dtype, bits, signed):
    """insert_bits(base, insert, offset, 0) is base for every offset up to the width (the
    specification makes only offset + bits > width undefined); at offset == width, a constant,
    it gave 0 for int, uint, long and ulong (the mask shifted by the full width, undefined in
    C++, which clang folded). extract_bits of no bits is 0. Scalars and 2-, 3-, 4-vectors."""
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    vals = [lo, hi, 0, 1, -1 if signed else hi - 1, 0x5A % (hi + 1)]
    x = np.array(vals, dtype=object).astype(dtype)
    off = np.full(len(vals), bits, np.uint32)
    out = np.zeros(10 * len(vals), dtype)
    KS_NO_BITS.get(device, f"no_bits_{name}")(len(vals), x, off, out)
    expected = []
    for v in vals:
        u = v % (1 << bits)
        top = _wrap((u & ~(1 << (bits - 1))) | ((~u & 1) << (bits - 1)), bits, signed)
        expected.append([v, v, v, 0, 0, v, v, v, top, v])
    assert_equal(out.reshape(len(vals), 10), np.array(expected, dtype=object).astype(dtype))


KS_USER_OPERATORS = KernelSet([
    """
kernel void user_divide(const device int* x [[buffer(0)]], device int* out [[buffer(1)]],
                        uint i [[thread_position_in_grid]]) {
    Num a{x[i]}, b{3};
    out[4 * i] = (a / b).v; out[4 * i + 1] = (a % b).v;
    a /= b; out[4 * i + 2] = a.v;
    out[4 * i + 3] = x[i] / 2;
}
""",
    """
kernel void user_scale(const device int* x [[buffer(0)]], device int* out [[buffer(1)]],
                       uint i [[thread_position_in_grid]]) {
    Scaled a{x[i]};
    out[2 * i] = (a / 3).v; out[2 * i + 1] = (a / 2u).v;
}
""",
], preamble="""
struct Num { int v; };
Num operator/(Num a, Num b) { return Num{a.v / b.v}; }
Num operator%(Num a, Num b) { return Num{a.v % b.v}; }
thread Num& operator/=(thread Num& a, Num b) { a.v /= b.v; return a; }
struct Scaled { int v; };
template <typename T> Scaled operator/(Scaled a, T b) { return Scaled{int(a.v / b)}; }
""")


def test_user_division_operators(device):
    """A struct's own `/`, `%` and `/=` (non-template) are called through the tag, and integers
    beside them still divide without trapping."""
    x = np.array([7, -7, 0, 100], np.int32)
    out = np.zeros(16, np.int32)
    KS_USER_OPERATORS.get(device, "user_divide")(4, x, out)
    t = [_tdiv(int(v), 3) for v in x]
    expected = [[q, int(v) - q * 3, q, _tdiv(int(v), 2)] for v, q in zip(x, t)]
    assert_equal(out.reshape(4, 4), np.array(expected, np.int32))


def test_user_division_operator_templates(device, request):
    """`template <class T> Scaled operator/(Scaled, T)` is valid MSL (Metal's compiler has no
    tag beside it; nor has CUDA's translation, which keeps the plain operators)."""
    if device.backend != "cuda":
        request.applymarker(pytest.mark.xfail(
            strict=True, raises=mc.CompileError,
            reason="the CPU translation (the Metal simulator runs it too): a user operator/ template "
                   "taking any right operand is ambiguous with the division guard's tag "
                   "(docs/design.md, CPU runtime limits)"))
    x = np.array([7, -7, 9, 100], np.int32)
    out = np.zeros(8, np.int32)
    KS_USER_OPERATORS.get(device, "user_scale")(4, x, out)
    # a / 2u divides in unsigned int (the usual arithmetic conversions), converted back to int
    expected = [[_tdiv(int(v), 3), _wrap((int(v) % (1 << 32)) // 2, 32, True)] for v in x]
    assert_equal(out.reshape(4, 2), np.array(expected, np.int32))


# Operators on every integer type, as a scalar (promoted to int below 32 bits, as C++ and MSL
# do, then converted back where stored) and as 2-, 3- and 4-vectors (not promoted: each
# component wraps at its own width). Shift counts are masked into the width (MSL leaves
# larger ones undefined, as C++ does).
OPS = ["a + b", "a - b", "a * b", "a / b", "a % b", "a & b", "a | b", "a ^ b", "a << (b & {M})",
       "a >> (b & {M})", "-a", "~a", "{V}(a < b)", "{V}(a >= b)", "a * 3 - 5", "7 / a"]


def _op_kernel(t, bits, n):
    v = t if n == 1 else f"{t}{n}"
    load = "a = x[i]; b = y[i];" if n == 1 else \
        f"for (int k = 0; k < {n}; ++k) {{ a[k] = x[{n} * i + k]; b[k] = y[{n} * i + k]; }}"
    store = "out[{c} * n + i] = r;" if n == 1 else f"for (int k = 0; k < {n}; ++k) out[({{c}} * n + i) * {n} + k] = r[k];"
    body = "\n".join(f"    {{ {v} r = {op.format(M=bits - 1, V=v)}; {store.format(c=c)} }}" for c, op in enumerate(OPS))
    return f"""
kernel void ops_{v}(const device {t}* x [[buffer(0)]], const device {t}* y [[buffer(1)]],
                    device {t}* out [[buffer(2)]], constant uint& n [[buffer(3)]],
                    uint i [[thread_position_in_grid]]) {{
    {v} a, b;
    {load}
{body}
}}
"""


KS_OPS = KernelSet([_op_kernel(t, bits, n) for t, _, bits, _ in TYPES for n in (1, 2, 3, 4)], fast_math=False)


def _op_expected(op, a, b, bits, signed):
    promoted = bits < 32  # scalars and vector components alike divide in int (docs/design.md)
    lo = -(1 << (bits - 1))

    def div(x, y):
        if y == 0:
            return 0
        if signed and not promoted and x == lo and y == -1:
            return -lo - 1  # MIN / -1 == MAX for int and long
        return _tdiv(x, y)

    def mod(x, y):
        return x if y == 0 else x - _tdiv(x, y) * y

    s = b & (bits - 1)
    r = {"a + b": a + b, "a - b": a - b, "a * b": a * b, "a / b": div(a, b), "a % b": mod(a, b),
         "a & b": a & b, "a | b": a | b, "a ^ b": a ^ b, "a << (b & {M})": a << s, "a >> (b & {M})": a >> s,
         "-a": -a, "~a": ~a, "{V}(a < b)": int(a < b), "{V}(a >= b)": int(a >= b), "a * 3 - 5": a * 3 - 5,
         "7 / a": div(7, a)}[op]
    return _wrap(r, bits, signed)


@pytest.mark.parametrize("width", [1, 2, 3, 4])
@pytest.mark.parametrize("name,dtype,bits,signed", TYPES, ids=[t[0] for t in TYPES])
def test_operators_at_every_width(device, name, dtype, bits, signed, width):
    """+ - * / % & | ^ << >>, unary - and ~, comparisons and mixes with literals, bit for bit
    against Python's integers wrapped to the type, for every pair of edge values (MIN, MIN+1,
    MAX, 0, ±1, powers of two, the width) and random ones; division by zero and MIN / -1 give
    the CPU backend's documented values (checked mode raises on a zero divisor instead)."""
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    rng = np.random.default_rng(bits * 10 + width)
    vals = sorted({lo, lo + 1, hi, hi - 1, 0, 1, 2, 3, bits - 1, bits, 1 << (bits - 2), 1 << (bits // 2)}
                  | ({-1, -2, -3, -bits} if signed else set())
                  | {int(v) for v in rng.integers(lo, hi, size=6, endpoint=True, dtype=np.int64 if signed else np.uint64)})
    pairs = [(a, b) for a in vals for b in vals]
    if device.checked:  # a zero divisor is an ExecutionError there (tested above and in reliability/)
        pairs = [(a, b) for a, b in pairs if a != 0 and b != 0]
    if device.backend == "cuda":  # GPU_DIVISION: zero divisors and MIN / -1 left out
        pairs = [(a, b) for a, b in pairs if a != 0 and b != 0 and (a, b) != (lo, -1)]
    pairs += [(1, 1)] * (-len(pairs) % width)
    n = len(pairs) // width
    x = np.array([p[0] for p in pairs], dtype=object).astype(dtype)
    y = np.array([p[1] for p in pairs], dtype=object).astype(dtype)
    out = np.zeros(len(OPS) * len(pairs), dtype)
    v = name if width == 1 else f"{name}{width}"
    KS_OPS.get(device, f"ops_{v}")(n, x, y, out, np.uint32(n))
    got = out.reshape(len(OPS), n, width).transpose(1, 2, 0).reshape(len(pairs), len(OPS))
    expected = np.array([[_op_expected(op, a, b, bits, signed) for op in OPS] for a, b in pairs],
                        dtype=object).astype(dtype)
    assert_equal(got, expected, err_msg=f"{v}: columns are {OPS}, rows the pairs {pairs}")


# The integer library on 2- and 3-vectors (test_audit_special_values.py has the 4-vectors),
# with a scalar beside a vector where the specification's T is the component type too
# (`clamp(v, lo, hi)`, `min(v, s)`), the three-operand functions, and the result types.
LIB_COLS = 12
KS_LIB = KernelSet([f"""
kernel void lib_{t}{n}(const device {t}* x [[buffer(0)]], const device {t}* y [[buffer(1)]],
                       const device {t}* z [[buffer(2)]], device {t}* out [[buffer(3)]],
                       constant uint& count [[buffer(4)]], uint i [[thread_position_in_grid]]) {{
    {t}{n} a, b, c;
    for (int k = 0; k < {n}; ++k) {{ a[k] = x[{n} * i + k]; b[k] = y[{n} * i + k]; c[k] = z[{n} * i + k]; }}
    auto d = absdiff(a, b);
    static_assert(is_same<decltype(d), vec<make_unsigned_t<{t}>, {n}>>::value, "absdiff gives the unsigned type");
    static_assert(is_same<decltype(clz(a)), {t}{n}>::value && is_same<decltype(popcount(a)), {t}{n}>::value, "T");
    {t}{n} r[{LIB_COLS}] = {{clamp(a, {t}({-2 if sg else 2}), {t}(100)), min(a, {t}(7)), max({t}(7), a),
                       madsat(a, b, c), madhi(a, b, c), max3(a, b, c), min3(a, b, c), median3(a, b, c),
                       {t}{n}(d), extract_bits(a, {w // 2}u, {w - w // 2}u), rotate(a, b), subsat(c, a)}};
    for (int j = 0; j < {LIB_COLS}; ++j)
        for (int k = 0; k < {n}; ++k) out[(j * count + i) * {n} + k] = r[j][k];
}}
""" for t, _, w, sg in TYPES for n in (2, 3)])


def _lib_expected(a, b, c, bits, signed):
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    sat = lambda v: min(max(v, lo), hi)  # noqa: E731
    field = (a % (1 << bits)) >> (bits // 2)
    if signed and field >> (bits - bits // 2 - 1):
        field -= 1 << (bits - bits // 2)
    u, s = a % (1 << bits), b % bits
    return [min(max(a, -2 if signed else 2), 100), min(a, 7), max(7, a), sat(a * b + c),
            _wrap(((a * b) >> bits) + c, bits, signed), max(a, b, c), min(a, b, c), sorted([a, b, c])[1],
            _wrap(abs(a - b), bits, signed), field, _wrap((u << s) | (u >> (bits - s)) if s else u, bits, signed),
            sat(c - a)]


@pytest.mark.parametrize("width", [2, 3])
@pytest.mark.parametrize("name,dtype,bits,signed", TYPES, ids=[t[0] for t in TYPES])
def test_integer_library_on_small_vectors(device, name, dtype, bits, signed, width):
    """clamp/min/max with scalar bounds, madsat, madhi, max3, min3, median3, absdiff (its
    unsigned result type), extract_bits up to the top bit, rotate, subsat: 2- and 3-vectors of
    every integer type, edge and random values, against Python's integers."""
    lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
    rng = np.random.default_rng(7 * bits + width)
    vals = [lo, lo + 1, hi, hi - 1, 0, 1, 7, 100] + ([-1, -7] if signed else [])
    triples = [(a, b, c) for a in vals for b in vals for c in (0, lo, hi, 5)]
    triples += [tuple(int(v) for v in rng.integers(lo, hi, size=3, endpoint=True,
                                                     dtype=np.int64 if signed else np.uint64)) for _ in range(40)]
    triples += [(1, 1, 1)] * (-len(triples) % width)
    n = len(triples) // width
    x, y, z = (np.array([t[k] for t in triples], dtype=object).astype(dtype) for k in range(3))
    out = np.zeros(LIB_COLS * len(triples), dtype)
    KS_LIB.get(device, f"lib_{name}{width}")(n, x, y, z, out, np.uint32(n))
    got = out.reshape(LIB_COLS, len(triples)).T
    expected = np.array([_lib_expected(a, b, c, bits, signed) for a, b, c in triples], dtype=object).astype(dtype)
    assert_equal(got, expected, err_msg=f"{name}{width}: rows (a, b, c) of {triples}")


KS_BITFIELD_FLOATS = KernelSet([
    """
kernel void bitfield_floats(const device float* x [[buffer(0)]], device int* out [[buffer(1)]],
                            uint i [[thread_position_in_grid]]) {
    Widths s;
    s.a = x[i] * 3.0f; s.b = -x[i];
    out[4 * i] = s.a; out[4 * i + 1] = s.b;
    s.a += x[i]; s.b *= x[i];
    out[4 * i + 2] = s.a; out[4 * i + 3] = s.b;
}
""",
], preamble="constant constexpr int K = 3;\nstruct Widths { uint a : 2 * K; int b : K + 5; };\n")


def test_floats_into_bit_fields_of_constant_expression_widths(device):
    """A float assigned and compound-assigned to a bit-field whose width is a constant
    expression (`uint a : 2 * K;`) was refused ("non-const reference cannot bind to bit-field":
    the float-to-integer conversion's wrap takes a reference, and only literal widths were
    known as bit-fields). C++'s conversions: truncation, then the field's width."""
    x = np.array([2.5, 1.75, 3.0, 0.5], np.float32)  # in range: out of range is undefined
    out = np.zeros(16, np.int32)
    KS_BITFIELD_FLOATS.get(device, "bitfield_floats")(4, x, out)
    expected = []
    for v in x.astype(np.float64):
        a = _wrap(int(np.float32(v * 3.0)), 6, False)
        b = _wrap(int(-v), 8, True)
        expected.append([a, b, _wrap(int(np.float32(a + v)), 6, False), _wrap(int(np.float32(b * v)), 8, True)])
    assert_equal(out.reshape(4, 4), np.array(expected, np.int32))
