"""Audit of half and bfloat arithmetic and the math library across types, in both of a library's
modes: fast math (the default) and without. The specification's precision tables (section 8)
list the same exact results for both modes for fma ("correctly rounded"), floor, ceil, trunc,
rint, round, fract, fmod, frexp, ldexp, modf, copysign, fmin and fmax, and precise::divide is
correctly rounded whatever the library's mode; these are compared bit for bit against NumPy and
Python's fractions on finite values (fast math may assume no NaN or infinity).
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from mcconf import KernelSet, assert_equal

MODES = [pytest.param(True, id="fast"), pytest.param(False, id="precise")]


def _in_both_modes(ks: KernelSet) -> dict:
    """{True: ks (fast math), False: the same kernels without fast math}; a with_defines copy, so
    the suite counts their names once (test_count.py)."""
    precise = ks.with_defines(ks.defines)
    precise.fast_math = False
    return {True: ks, False: precise}


# ---------------------------------------------------------------------------
# Exact rounding helpers (references independent of the code under test)
# ---------------------------------------------------------------------------


def _round_fraction(q: Fraction, mant_bits: int, min_exp: int) -> float:
    """The exact rational q rounded to nearest even with `mant_bits` significant bits and the
    smallest normal exponent `min_exp` (subnormals below), as a Python float."""
    if q == 0:
        return 0.0
    sign = -1 if q < 0 else 1
    a = abs(q)
    e = a.numerator.bit_length() - a.denominator.bit_length()
    if Fraction(2) ** e > a:
        e -= 1
    e = max(e, min_exp)
    scale = Fraction(2) ** (mant_bits - 1 - e)  # units of the last place
    m = a * scale
    whole = m.numerator // m.denominator
    rest = m - whole
    if rest > Fraction(1, 2) or (rest == Fraction(1, 2) and whole % 2 == 1):
        whole += 1
    return sign * float(Fraction(whole) / scale)


def _exact_fma(a, b, c, kind: str):
    """fma(a, b, c) rounded once to `kind` (float, half or bfloat), as float64."""
    bits, min_exp = {"float": (24, -126), "half": (11, -14), "bfloat": (8, -126)}[kind]
    return np.array([_round_fraction(Fraction(float(x)) * Fraction(float(y)) + Fraction(float(z)), bits, min_exp)
                     for x, y, z in zip(a, b, c)])


def bfloat_of(x):
    """float64 values (exactly bfloat) as bfloat bits (uint16)."""
    return (np.asarray(x, np.float32).view(np.uint32) >> 16).astype(np.uint16)


def bfloat_value(bits):
    return (np.asarray(bits, np.uint16).astype(np.uint32) << 16).view(np.float32)


def _random_bfloat(rng, n, scale=1.0):
    f = (rng.standard_normal(n) * scale).astype(np.float32)
    return (f.view(np.uint32) >> 16 << 16).view(np.float32)


def _vector_snippet(name: str, t: str, n: int, params: str, body: str) -> str:
    """A kernel over `n`-wide vectors of `t` (a scalar for n == 1) read from and written to
    scalar buffers, so widths 2, 3 and 4 share one layout: `ins` are loaded into x, y, z."""
    vt = t if n == 1 else f"{t}{n}"
    load = "\n".join(f"    {vt} {v}; " + (f"{v} = {v}_[i];" if n == 1 else
                      " ".join(f"{v}[{k}] = {v}_[{n} * i + {k}];" for k in range(n)))
                      for v in ("x", "y", "z"))
    return f"""
kernel void {name}(const device {t}* x_ [[buffer(0)]], const device {t}* y_ [[buffer(1)]],
                   const device {t}* z_ [[buffer(2)]], {params}
                   uint i [[thread_position_in_grid]]) {{
{load}
{body}
}}
"""


def _store(vt_n: int, out: str, expr: str, col: int, cols: int) -> str:
    """Stores the `vt_n`-wide value expr at column `col` of a row of `cols` values per element."""
    if vt_n == 1:
        return f"    {out}[{cols} * i + {col}] = {expr};"
    return (f"    {{ auto r_ = {expr}; " + " ".join(f"{out}[{cols} * ({vt_n} * i + {k}) + {col}] = r_[{k}];"
                                               for k in range(vt_n)) + " }")


FMA_TYPES = ["float", "half", "bfloat"]
WIDTHS = [1, 2, 3, 4]


def _fma_snippets():
    out = []
    for t in FMA_TYPES:
        for n in WIDTHS:
            body = "\n".join([_store(n, "o", "fma(x, y, z)", 0, 2),
                              # through a helper taking the vector type, as user code wraps it
                              _store(n, "o", "fma(x, y, z + " + (t if n == 1 else f"{t}{n}") + "(0))", 1, 2)])
            out.append(_vector_snippet(f"fma_{t}{n}", t, n, f"device {t}* o [[buffer(3)]],", body))
    return out


KS_FMA = _in_both_modes(KernelSet(_fma_snippets()))


@pytest.mark.parametrize("fast_math", MODES)
@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("kind", FMA_TYPES)
def test_fma_rounds_once_in_both_modes(device, rng, kind, width, fast_math):
    """fma is correctly rounded (table 8.1 and 8.2, both modes): a * b + c rounded once to the
    type. Products of random halves and bfloats with a small addend land next to a tie of the
    type's last place often, where a float-rounded intermediate rounds twice."""
    count = 4096 // width
    m = count * width
    if kind == "bfloat":
        a, b = _random_bfloat(rng, m), _random_bfloat(rng, m)
        # an addend far below the product's last place: only its sign decides a tie, which the
        # product of two random bfloats is about once in 200
        c = _random_bfloat(rng, m, 2.0 ** -60)
        want = _exact_fma(a, b, c, "bfloat").astype(np.float32)
        xs = [bfloat_of(a).view(np.uint8), bfloat_of(b).view(np.uint8), bfloat_of(c).view(np.uint8)]
        got_of = lambda o: bfloat_value(o.view(np.uint16))  # noqa: E731
        out = np.zeros(2 * m, np.uint16).view(np.uint8)
    else:  # half or float: an addend about the product's last place
        dtype, scale = (np.float16, 2.0 ** -12) if kind == "half" else (np.float32, 2.0 ** -25)
        a = rng.standard_normal(m).astype(dtype)
        b = rng.standard_normal(m).astype(dtype)
        c = (rng.standard_normal(m) * scale).astype(dtype)
        want = _exact_fma(a, b, c, kind).astype(dtype)
        xs = [a, b, c]
        got_of = lambda o: o  # noqa: E731
        out = np.zeros(2 * m, dtype)
    KS_FMA[fast_math].get(device, f"fma_{kind}{width}")(count, *xs, out)
    got = np.asarray(got_of(out)).reshape(m, 2)
    for col in range(2):
        bad = np.flatnonzero(got[:, col].astype(np.float64) != want.astype(np.float64))
        assert bad.size == 0, (f"{kind}{width} fma column {col}: {bad.size} of {m} not rounded once, e.g. "
                               f"a={a[bad[:3]]} b={b[bad[:3]]} c={c[bad[:3]]} got={got[bad[:3], col]} "
                               f"want={want[bad[:3]]}")


# ---------------------------------------------------------------------------
# precise::divide in fast-math libraries
# ---------------------------------------------------------------------------

DIV_TYPES = [("float", np.float32), ("half", np.float16)]


def _divide_snippets():
    out = []
    for t, _ in DIV_TYPES:
        for n in WIDTHS:
            vt = t if n == 1 else f"{t}{n}"
            body = "\n".join([
                _store(n, "o", "precise::divide(x, y)", 0, 4),
                _store(n, "o", f"precise::divide(x, {vt}(3))", 1, 4),          # a constant divisor
                _store(n, "o", f"precise::divide(x, {vt}(d))", 2, 4),          # the same for every thread
                _store(n, "o", f"precise::divide({vt}(1), y)", 3, 4),          # a reciprocal
            ])
            out.append(_vector_snippet(f"divide_{t}{n}", t, n,
                                       f"constant {t}& d [[buffer(3)]], device {t}* o [[buffer(4)]],", body))
    return out


KS_DIVIDE = _in_both_modes(KernelSet(_divide_snippets()))


@pytest.mark.parametrize("fast_math", MODES)
@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("name,dtype", DIV_TYPES, ids=[t for t, _ in DIV_TYPES])
def test_precise_divide_is_correctly_rounded_in_both_modes(device, rng, name, dtype, width, fast_math):
    """precise::divide is correctly rounded (table 8.1) whatever the library's mode: by a
    per-thread divisor, a literal one, one divisor for every thread and as a reciprocal. A half
    quotient is the float one rounded again, which is the correctly rounded half (24 >= 2 * 11 + 2)."""
    count = 1024 // width
    m = count * width
    x = (rng.standard_normal(m) * 4).astype(dtype)
    y = (rng.uniform(0.5, 8.0, m) * rng.choice([-1, 1], m)).astype(dtype)
    d = dtype(7.0)
    o = np.zeros(4 * m, dtype)
    KS_DIVIDE[fast_math].get(device, f"divide_{name}{width}")(count, x, y, np.zeros(m, dtype), d, o)
    o = o.reshape(m, 4)
    x32, y32 = x.astype(np.float32), y.astype(np.float32)
    want = [x32 / y32, x32 / np.float32(3), x32 / np.float32(d), np.float32(1) / y32]
    for col, w in enumerate(want):
        w = w.astype(dtype)
        bad = np.flatnonzero(o[:, col] != w)
        assert bad.size == 0, (f"precise::divide {name}{width} column {col}: {bad.size} of {m} not correctly "
                               f"rounded, e.g. x={x[bad[:3]]} got={o[bad[:3], col]} want={w[bad[:3]]}")


# ---------------------------------------------------------------------------
# The exact functions in both modes, float and half, every width
# ---------------------------------------------------------------------------

EXACT_COLS = ["fract", "floor", "ceil", "trunc", "rint", "round", "fmod", "copysign", "fmin", "fmax", "ldexp",
              "frexp", "frexp exponent", "modf", "modf whole", "fdim", "nextafter", "sign"]


def _exact_snippets():
    out = []
    c = len(EXACT_COLS)
    for t, _ in DIV_TYPES:
        for n in WIDTHS:
            it = "int" if n == 1 else f"int{n}"
            vt = t if n == 1 else f"{t}{n}"
            exprs = ["fract(x)", "floor(x)", "ceil(x)", "trunc(x)", "rint(x)", "round(x)", "fmod(x, y)",
                     "copysign(x, y)", "fmin(x, y)", "fmax(x, y)", f"ldexp(x, {it}(z))", "frexp(x, e)",
                     f"{vt}(e)", "modf(x, w)", "w", "fdim(x, y)", "nextafter(x, y)", "sign(x)"]
            lines = [f"    {it} e; {vt} w;"]
            # frexp and modf write e and w before the columns that read them
            lines += [_store(n, "o", ex, col, c) for col, ex in enumerate(exprs)]
            out.append(_vector_snippet(f"exact_{t}{n}", t, n, f"device {t}* o [[buffer(3)]],", "\n".join(lines)))
    return out


KS_EXACT = _in_both_modes(KernelSet(_exact_snippets()))


def _exact_reference(x, y, z, dtype):
    x64, y64 = x.astype(np.float64), y.astype(np.float64)
    below_one = 1.0 - float(np.finfo(dtype).eps) / 2
    mant, ex = np.frexp(x64)
    whole = np.trunc(x64)
    cols = [np.minimum((x64 - np.floor(x64)).astype(dtype).astype(np.float64), below_one), np.floor(x64),
            np.ceil(x64), whole, np.rint(x64), np.sign(x64) * np.floor(np.abs(x64) + 0.5), np.fmod(x64, y64),
            np.copysign(x64, y64), np.fmin(x64, y64), np.fmax(x64, y64), np.ldexp(x64, z.astype(np.int64)),
            mant, ex.astype(np.float64), x64 - whole, whole, np.where(x64 > y64, x64 - y64, 0.0),
            np.nextafter(x, y).astype(np.float64), np.sign(x64)]
    return np.stack([c.astype(dtype) for c in cols], axis=1)


@pytest.mark.parametrize("fast_math", MODES)
@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("name,dtype", DIV_TYPES, ids=[t for t, _ in DIV_TYPES])
def test_exact_functions_in_both_modes(device, rng, name, dtype, width, fast_math):
    """Table 8.1's exact functions (8.3's for half, which hold in both modes) give the same
    results with fast math where table 8.2 says so (all but fmod and nextafter):
    halfway cases for rint and round, values just below 0 for fract (which never reaches 1),
    negative operands of fmod, exponents that make ldexp's result subnormal or overflow."""
    count = 768 // width
    m = count * width
    big = 3000.0 if dtype == np.float16 else 3e6
    pool = np.concatenate([rng.integers(-40, 40, m) + 0.5,                    # ties
                           rng.standard_normal(m) * rng.choice([1e-3, 1.0, 50.0, big], m),
                           -(2.0 ** -rng.integers(12, 24, m)),                # fract rounds up to 1
                           rng.integers(-1000, 1000, m).astype(np.float64)])
    x = rng.permutation(pool)[:m].astype(dtype)
    y = (rng.standard_normal(m) * rng.choice([0.25, 3.0, 40.0], m)).astype(dtype)
    y[y == 0] = dtype(1.5)
    x[x == 0] = dtype(0.75)  # signed zeros are fast math's to drop
    z = rng.integers(-30, 30, m).astype(dtype)
    o = np.zeros(len(EXACT_COLS) * m, dtype)
    KS_EXACT[fast_math].get(device, f"exact_{name}{width}")(count, x, y, z, o)
    got = o.reshape(m, len(EXACT_COLS))
    with np.errstate(over="ignore", under="ignore"):
        want = _exact_reference(x, y, z, dtype)
    checked = np.ones(len(EXACT_COLS), bool)
    if fast_math and dtype == np.float32:  # table 8.2 leaves fmod undefined and lists no nextafter
        checked[[EXACT_COLS.index("fmod"), EXACT_COLS.index("nextafter")]] = False
    bad = [(EXACT_COLS[c], float(x[r]), float(y[r]), float(z[r]), float(got[r, c]), float(want[r, c]))
           for r, c in zip(*np.nonzero((got != want) & checked))]
    assert not bad, f"{name}{width}: {len(bad)} wrong (function, x, y, k, got, expected), e.g. {bad[:8]}"


# ---------------------------------------------------------------------------
# Literals
# ---------------------------------------------------------------------------

KS_LITERALS = KernelSet(["""
kernel void hex_literals(const device float* x [[buffer(0)]], device float* o [[buffer(1)]],
                         device half* h [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    o[0] = sizeof(0x1.8p1); o[1] = sizeof(0x1p-3h); o[2] = sizeof(0x1.8p1f); o[3] = sizeof(0x1p-3 * x[0]);
    o[4] = 0x1.8p1; o[5] = 0x1.8p1 * x[0]; o[6] = 0X1P-3; o[7] = 0x1.fffffep127;
    h[0] = 0x1.8p1h; h[1] = 0x1p-24h; h[2] = 0x1.ffcp15H; h[3] = 0x1p-3h * half(x[0]); h[4] = -0x1.8p-1h;
}
"""])


def test_hexadecimal_floating_literals(device):
    """Hexadecimal floating literals (`0x1.8p1`, C++17's and Apple's clang's in every MSL version)
    are float without a suffix, as decimal ones are in MSL (they were double: `0x1p-3 * x` computed
    in double), and take the half suffix (`0x1p-3h` was refused: no literal operator 'h')."""
    x = np.array([1.0 / 3.0], np.float32)
    o = np.zeros(8, np.float32)
    h = np.zeros(5, np.float16)
    KS_LITERALS.get(device, "hex_literals")(1, x, o, h)
    assert_equal(o, np.array([4, 2, 4, 4, 3.0, np.float32(3.0) * x[0], 0.125, np.float32(2.0 ** 128 - 2.0 ** 104)],
                             np.float32))
    assert_equal(h, np.array([3.0, 2.0 ** -24, 65504.0, np.float16(0.125) * np.float16(x[0]), -0.75], np.float16))


# ---------------------------------------------------------------------------
# Table 8.3: half, every finite value, both modes (the table has no fast-math column)
# ---------------------------------------------------------------------------

HALF_ROUNDED = {"sqrt(v)": np.sqrt, "rsqrt(v)": lambda v: 1 / np.sqrt(v), "1.0h / v": lambda v: 1 / v,
                "v / 3.0h": lambda v: v / 3, "v / d": lambda v: v / float(np.float16(0.3)),
                "precise::divide(v, d)": lambda v: v / float(np.float16(0.3)),
                "(v4 / half4(3.0h)).y": lambda v: v / 3, "(v4 / d).z": lambda v: v / float(np.float16(0.3))}
HALF_ONE_ULP = {"exp": np.exp, "exp2": np.exp2, "exp10": lambda v: 10.0 ** v, "log": np.log, "log2": np.log2,
                "log10": np.log10, "sin": np.sin, "cos": np.cos, "tan": np.tan, "sinh": np.sinh, "cosh": np.cosh,
                "tanh": np.tanh, "asin": np.arcsin, "acos": np.arccos, "atan": np.arctan, "asinh": np.arcsinh,
                "acosh": np.arccosh, "atanh": np.arctanh, "sinpi": lambda v: np.sin(np.pi * v),
                "cospi": lambda v: np.cos(np.pi * v), "tanpi": lambda v: np.tan(np.pi * v),
                "atan2": lambda v: np.arctan2(v, 0.75)}
HALF_EXPRS = list(HALF_ROUNDED) + [f"{f}(v, 0.75h)" if f == "atan2" else f"{f}(v)" for f in HALF_ONE_ULP]
KS_HALF_TABLE = _in_both_modes(KernelSet([f"""
kernel void half_table(const device half* x [[buffer(0)]], constant half& d [[buffer(1)]],
                       device half* o [[buffer(2)]], uint i [[thread_position_in_grid]]) {{
    const half v = x[i];
    const half4 v4 = half4(1.0h, v, v, 2.0h);
    device half* r = o + {len(HALF_EXPRS)} * i;
{chr(10).join(f"    r[{k}] = {e};" for k, e in enumerate(HALF_EXPRS))}
}}
"""]))


def _half_ulp(r):
    """ulp of the exact values r in half (the spacing of halves at |r|; 2^-24 below 2^-14)."""
    e = np.floor(np.log2(np.maximum(np.abs(r), 2.0 ** -14)))
    return 2.0 ** (e - 10)


@pytest.mark.parametrize("fast_math", MODES)
def test_half_accuracy_table_on_every_half(device, fast_math):
    """Every finite half through table 8.3 (no fast-math column: it holds in both modes): x / y,
    1 / x, sqrt and rsqrt correctly rounded; the transcendental functions within 1 ulp. With fast
    math the CPU's -freciprocal-math made `h / 3.0h` h * half(1/3) and a division by a uniform half
    h * (1 / d): 19836 and 16818 of the 63488 halves one ulp off."""
    halves = np.arange(1 << 16, dtype=np.uint16).view(np.float16)
    x = halves[np.isfinite(halves)]
    o = np.zeros(len(HALF_EXPRS) * x.size, np.float16)
    KS_HALF_TABLE[fast_math].get(device, "half_table")(x.size, x, np.float16(0.3), o)
    got = o.reshape(x.size, len(HALF_EXPRS)).astype(np.float64)
    x64 = x.astype(np.float64)
    failures = []
    with np.errstate(all="ignore"):
        for k, (expr, ref) in enumerate(list(HALF_ROUNDED.items()) + list(HALF_ONE_ULP.items())):
            r = ref(x64)
            finite = np.isfinite(r) & (np.abs(r) <= 65504.0)
            if k < len(HALF_ROUNDED):
                bad = finite & (got[:, k] != r.astype(np.float16))
            else:
                bad = finite & ~(np.abs(got[:, k] - r) <= _half_ulp(r))
            if bad.any():
                j = np.flatnonzero(bad)[:3]
                failures.append((HALF_EXPRS[k], int(bad.sum()), list(zip(x[j].tolist(), got[j, k].tolist(), r[j].tolist()))))
    assert not failures, f"(expression, how many, (x, got, exact)): {failures}"
