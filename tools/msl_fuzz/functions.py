"""metal_stdlib's integer, float and relational functions as the model computes them.

Each takes its arguments' model values (already converted to the function's argument
types) and returns (value, undefined lanes). The definitions follow the MSL
specification's; where it leaves a case open (a NaN or mixed-sign zeros given to
min/max, an out-of-range offset) the lane is reported undefined and the generator
rewrites the call's arguments so that the case does not arise.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from .types import BFLOAT, BOOL, HALF, Scalar, Type, Vec, elem, unsigned_of, with_elem
from .values import float_array, float_op, ints, per_lane, round_bfloat, wrap

INT_FUNCTIONS = {
    # name: arity
    "abs": 1, "absdiff": 2, "addsat": 2, "subsat": 2, "hadd": 2, "rhadd": 2, "mulhi": 2, "madhi": 3,
    "madsat": 3, "clz": 1, "ctz": 1, "popcount": 1, "reverse_bits": 1, "rotate": 2, "min": 2, "max": 2,
    "clamp": 3, "max3": 3, "min3": 3, "median3": 3, "extract_bits": 3, "insert_bits": 4,
}
FLOAT_FUNCTIONS = {
    "abs": 1, "fabs": 1, "floor": 1, "ceil": 1, "trunc": 1, "rint": 1, "round": 1, "sqrt": 1, "fma": 3,
    "fmin": 2, "fmax": 2, "min": 2, "max": 2, "clamp": 3, "copysign": 2, "sign": 1, "step": 2,
    "saturate": 1, "fmod": 2, "fdim": 2, "fract": 1, "fmax3": 3, "fmin3": 3,
}
RELATIONAL = {"isnan": 1, "isinf": 1, "isfinite": 1, "signbit": 1}
BOOL_REDUCTIONS = {"all": 1, "any": 1}
# Functions whose arguments must not be NaN nor mixed-sign zeros (min/max pick either).
ORDERING = {"fmin", "fmax", "min", "max", "clamp", "saturate", "fmax3", "fmin3"}
FINITE_ONLY = {"fract"}
# Functions that read the sign of a NaN (copysign's second argument, signbit's): IEEE 754 leaves
# the sign of an operation's NaN open (x86 gives -NaN, NVIDIA GPUs +NaN, and a NaN operand's
# sign need not survive), so the argument must not be NaN. name -> that argument's index.
NAN_SIGN = {"copysign": 1, "signbit": 0}


def result_type(fn: str, args: list[Type]) -> Type:
    t = args[0]
    if fn == "absdiff":
        return with_elem(t, unsigned_of(elem(t)))
    if fn in RELATIONAL:
        return with_elem(t, BOOL)
    if fn in BOOL_REDUCTIONS:
        return BOOL
    if fn == "select":
        return args[0]
    return t


def _map(fn, args: list[np.ndarray]):
    """fn over the components of integer arguments; fn returns None where undefined."""
    shape = args[0].shape
    flat = [a.ravel() for a in args]
    out = np.empty(flat[0].shape, dtype=object)
    bad = np.zeros(flat[0].shape, dtype=bool)
    for i in range(out.size):
        r = fn(*(f[i] for f in flat))
        if r is None:
            bad[i] = True
            r = 0
        out[i] = r
    return out.reshape(shape), per_lane(bad.reshape(shape))


def _clz(x: int, t: Scalar) -> int:
    return t.bits - (x % (1 << t.bits)).bit_length()


def _ctz(x: int, t: Scalar) -> int:
    u = x % (1 << t.bits)
    return t.bits if u == 0 else (u & -u).bit_length() - 1


def _reverse(x: int, t: Scalar) -> int:
    u = x % (1 << t.bits)
    return int(format(u, f"0{t.bits}b")[::-1], 2)


def _rotate(v: int, i: int, t: Scalar) -> int:
    w = t.bits
    u = v % (1 << w)
    s = (i % (1 << w)) & (w - 1)
    return (((u << s) | (u >> (w - s))) % (1 << w)) if s else u


def _extract(x: int, offset: int, bits: int, t: Scalar):
    if offset < 0 or bits < 0 or offset + bits > t.bits:
        return None
    if bits == 0:
        return 0
    field = ((x % (1 << t.bits)) >> offset) & ((1 << bits) - 1)
    if t.signed and field >> (bits - 1):
        field -= 1 << bits
    return field


def _insert(base: int, ins: int, offset: int, bits: int, t: Scalar):
    if offset < 0 or bits < 0 or offset + bits > t.bits:
        return None
    mask = ((1 << bits) - 1) << offset
    u = ((base % (1 << t.bits)) & ~mask) | (((ins % (1 << t.bits)) << offset) & mask)
    return u


def _saturate(v: int, t: Scalar) -> int:
    return min(max(v, t.lo), t.hi)


def int_function(fn: str, args: list[np.ndarray], t: Scalar):
    a = args
    if fn == "abs":
        return _map(lambda x: None if (t.signed and x == t.lo) else abs(x), a)
    if fn == "absdiff":
        return _map(lambda x, y: abs(x - y), a)
    if fn == "addsat":
        return _map(lambda x, y: _saturate(x + y, t), a)
    if fn == "subsat":
        return _map(lambda x, y: _saturate(x - y, t), a)
    if fn == "hadd":
        return _map(lambda x, y: (x + y) >> 1, a)
    if fn == "rhadd":
        return _map(lambda x, y: (x + y + 1) >> 1, a)
    if fn == "mulhi":
        return _map(lambda x, y: (x * y) >> t.bits, a)
    if fn == "madhi":
        value, bad = _map(lambda x, y, z: ((x * y) >> t.bits) + z, a)
        return wrap(value, t), bad
    if fn == "madsat":
        return _map(lambda x, y, z: _saturate(x * y + z, t), a)
    if fn == "clz":
        return _map(lambda x: _clz(x, t), a)
    if fn == "ctz":
        return _map(lambda x: _ctz(x, t), a)
    if fn == "popcount":
        return _map(lambda x: bin(x % (1 << t.bits)).count("1"), a)
    if fn == "reverse_bits":
        value, bad = _map(lambda x: _reverse(x, t), a)
        return wrap(value, t), bad
    if fn == "rotate":
        value, bad = _map(lambda v, i: _rotate(v, i, t), a)
        return wrap(value, t), bad
    if fn == "min":
        return _map(min, a)
    if fn == "max":
        return _map(max, a)
    if fn == "clamp":
        return _map(lambda x, lo, hi: None if lo > hi else min(max(x, lo), hi), a)
    if fn == "max3":
        return _map(lambda x, y, z: max(x, y, z), a)
    if fn == "min3":
        return _map(lambda x, y, z: min(x, y, z), a)
    if fn == "median3":
        return _map(lambda x, y, z: sorted((x, y, z))[1], a)
    if fn == "extract_bits":
        return _map(lambda x, o, b: _extract(x, o, b, t), a)
    if fn == "insert_bits":
        value, bad = _map(lambda x, y, o, b: _insert(x, y, o, b, t), a)
        return wrap(value, t), bad
    raise ValueError(fn)


def _exact(x: np.ndarray) -> list:
    return [Fraction(float(v)) for v in x.ravel()]


def round_rational(q: Fraction, t: Scalar) -> float:
    """An exact rational rounded once to t (to nearest, ties to even)."""
    if q == 0:
        return 0.0
    sign = -1.0 if q < 0 else 1.0
    q = abs(q)
    digits = t.mantissa + 1
    emin = 1 - t.max_exp  # the smallest normal exponent; below it t is subnormal
    e = q.numerator.bit_length() - q.denominator.bit_length()
    if Fraction(2) ** e > q:
        e -= 1
    e = max(e, emin)
    scaled = q * Fraction(2) ** (digits - 1 - e)
    m, rem = divmod(scaled.numerator, scaled.denominator)
    r = Fraction(rem, scaled.denominator)
    if r > Fraction(1, 2) or (r == Fraction(1, 2) and m & 1):
        m += 1
    value = Fraction(m) * Fraction(2) ** (e - digits + 1)
    if value >= Fraction(2) ** (t.max_exp + 1):
        return sign * float("inf")
    return sign * float(value)


def _fma(a: np.ndarray, b: np.ndarray, c: np.ndarray, t: Scalar) -> np.ndarray:
    """a * b + c rounded once to t."""
    with np.errstate(all="ignore"):
        rough = a.astype(np.float64) * b.astype(np.float64) + c.astype(np.float64)
    out = []
    for x, y, z, r in zip(_exact_or_none(a), _exact_or_none(b), _exact_or_none(c), rough.ravel()):
        exact = None if x is None or y is None or z is None else x * y + z
        if exact is None or exact == 0:
            # infinities, NaN and zeros: the double computation is exact (a product of two
            # floats fits in a double), and it gives a zero IEEE's sign
            out.append(float(r))
        else:
            out.append(round_rational(exact, t))
    return float_array(np.array(out).reshape(a.shape), t)


def _exact_or_none(x: np.ndarray) -> list:
    return [Fraction(float(v)) if np.isfinite(v) else None for v in x.ravel()]


def _largest_below_one(t: Scalar) -> float:
    return 1.0 - 2.0 ** -(t.mantissa + 1)


def _round_half_away(x: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        t = np.trunc(x)
        frac = np.abs(x - t)
        return np.where(frac >= 0.5, t + np.copysign(np.ones_like(x), x), t).astype(x.dtype)


def float_function(fn: str, args: list[np.ndarray], t: Scalar):
    """(value, undefined) of a float function on args of float type t."""
    a = args
    shape = a[0].shape
    undefined = np.zeros(shape, dtype=bool)
    with np.errstate(all="ignore"):
        if fn in ORDERING:
            for x in a:
                undefined |= np.isnan(x)
            zeros = [x == 0 for x in a]
            signs = [np.signbit(x) for x in a]
            # two zeros of different signs: IEEE's minNum may return either
            for i in range(len(a)):
                for j in range(i + 1, len(a)):
                    undefined |= zeros[i] & zeros[j] & (signs[i] != signs[j])
            if fn == "saturate":
                undefined |= (a[0] == 0) & np.signbit(a[0])
        if fn in FINITE_ONLY:
            undefined |= ~np.isfinite(a[0])
        if fn in NAN_SIGN:
            undefined |= np.isnan(a[NAN_SIGN[fn]])
        if fn in ("abs", "fabs"):
            r = np.abs(a[0])
        elif fn == "floor":
            r = np.floor(a[0])
        elif fn == "ceil":
            r = np.ceil(a[0])
        elif fn == "trunc":
            r = np.trunc(a[0])
        elif fn == "rint":
            r = np.rint(a[0])
        elif fn == "round":
            r = _round_half_away(a[0])
        elif fn == "sqrt":
            r = np.sqrt(a[0])
            r = round_bfloat(r) if t == BFLOAT else r
        elif fn == "fma":
            r = _fma(a[0], a[1], a[2], t)
        elif fn in ("fmin", "min"):
            r = np.fmin(a[0], a[1])
        elif fn in ("fmax", "max"):
            r = np.fmax(a[0], a[1])
        elif fn == "clamp":
            undefined |= a[1] > a[2]
            r = np.fmin(np.fmax(a[0], a[1]), a[2])
        elif fn == "fmax3":
            r = np.fmax(np.fmax(a[0], a[1]), a[2])
        elif fn == "fmin3":
            r = np.fmin(np.fmin(a[0], a[1]), a[2])
        elif fn == "copysign":
            r = np.copysign(a[0], a[1])
        elif fn == "sign":
            x = a[0]
            one = np.ones_like(x)
            r = np.where(x > 0, one, np.where(x < 0, -one, np.where(x == 0, x, np.zeros_like(x))))
        elif fn == "step":
            r = np.where(a[1] < a[0], np.zeros_like(a[0]), np.ones_like(a[0]))
        elif fn == "saturate":
            r = np.fmin(np.fmax(a[0], np.zeros_like(a[0])), np.ones_like(a[0]))
        elif fn == "fmod":
            r = np.fmod(a[0], a[1])
        elif fn == "fdim":
            x, y = a
            diff = float_op("-", x, y, t)
            r = np.where(np.isnan(x) | np.isnan(y), x + y, np.where(x > y, diff, np.zeros_like(x)))
        elif fn == "fract":
            x = a[0]
            r = np.fmin(float_op("-", x, np.floor(x), t), np.full_like(x, _largest_below_one(t)))
        else:
            raise ValueError(fn)
    dtype = np.float16 if t == HALF else np.float32
    return np.asarray(r, dtype=dtype), per_lane(undefined)


def relational(fn: str, a: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        if fn == "isnan":
            return np.isnan(a)
        if fn == "isinf":
            return np.isinf(a)
        if fn == "isfinite":
            return np.isfinite(a)
        if fn == "signbit":
            return np.signbit(a)
    raise ValueError(fn)


def evaluate(fn: str, args: list[np.ndarray], arg_types: list[Type]):
    """(value, undefined) of a metal_stdlib call with already-converted arguments."""
    t = elem(arg_types[0])
    if fn in RELATIONAL:
        undefined = per_lane(np.isnan(args[0])) if fn in NAN_SIGN else np.zeros(args[0].shape[0], dtype=bool)
        return relational(fn, args[0]).astype(bool), undefined
    if fn in BOOL_REDUCTIONS:
        v = args[0]
        r = v.all(axis=1) if fn == "all" else v.any(axis=1)
        return r, np.zeros(v.shape[0], dtype=bool)
    if fn == "select":
        a, b, c = args
        return np.where(c, b, a), np.zeros(a.shape[0], dtype=bool)
    if t.is_int:
        return int_function(fn, [ints(x) if x.dtype != object else x for x in args], t)
    return float_function(fn, args, t)


def is_vector(t: Type) -> bool:
    return isinstance(t, Vec)
