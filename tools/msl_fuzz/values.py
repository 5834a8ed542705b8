"""Values of the model and MSL's rules for them, independent of metalcall's translator.

A value is a NumPy array over the lanes (the threads of a dispatch), with one more axis
of components for a vector:
- integers: object arrays of Python ints, always in the type's range (exact arithmetic,
  then a range check: signed overflow is undefined in MSL, unsigned wraps);
- bool: bool arrays;
- float and bfloat: float32 arrays (a bfloat is a float32 that bfloat holds exactly);
- half: float16 arrays.

Every operation returns (value, undefined) where `undefined` marks the lanes on which
MSL leaves the result undefined (signed overflow, division by zero, a shift out of
range, a float converted to an integer it does not fit). The generator rewrites those
expressions so that every program it emits is defined for its inputs.
"""

from __future__ import annotations

import math

import numpy as np

from .types import BFLOAT, BOOL, FLOAT, HALF, Scalar, Type, Vec, elem

INF = float("inf")


def lanes_of(value: np.ndarray) -> int:
    return value.shape[0]


def none_undefined(value: np.ndarray) -> np.ndarray:
    return np.zeros(lanes_of(value), dtype=bool)


def per_lane(flags: np.ndarray) -> np.ndarray:
    """A lane is undefined when any of its components is."""
    return flags.any(axis=1) if flags.ndim == 2 else flags


def ints(values) -> np.ndarray:
    """An object array of Python ints (exact integer arithmetic)."""
    if isinstance(values, np.ndarray):
        shape, flat = values.shape, values.ravel().tolist()
    else:  # a list of Python ints: never through NumPy, which would make mixed signs float
        flat = list(values)
        shape = (len(flat),)
    arr = np.empty(len(flat), dtype=object)
    for i, v in enumerate(flat):
        arr[i] = int(v)
    return arr.reshape(shape)


def wrap(values: np.ndarray, t: Scalar) -> np.ndarray:
    """Integers reduced modulo 2^bits into t's range."""
    m = 1 << t.bits
    return (values - t.lo) % m + t.lo


def out_of_range(values: np.ndarray, t: Scalar) -> np.ndarray:
    return (values < t.lo) | (values > t.hi)


def round_bfloat(x: np.ndarray) -> np.ndarray:
    """float32 -> nearest bfloat (ties to even), kept as float32; NaN stays a quiet NaN."""
    x = np.ascontiguousarray(x, dtype=np.float32)
    u = x.view(np.uint32).astype(np.uint64)
    nan = (u & 0x7FFFFFFF) > 0x7F800000
    rounded = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16) & 0xFFFF
    quiet = ((u >> 16) | 0x40) & 0xFFFF
    bits = np.where(nan, quiet, rounded).astype(np.uint32) << 16
    return bits.view(np.float32).reshape(x.shape)


def float_array(values, t: Scalar) -> np.ndarray:
    """Python or NumPy floats as t's model array, rounded to t (to nearest, ties to even)."""
    if t == HALF:
        with np.errstate(all="ignore"):
            return np.asarray(values, dtype=np.float64).astype(np.float32).astype(np.float16)
    arr = np.asarray(values, dtype=np.float64)
    with np.errstate(all="ignore"):
        f32 = arr.astype(np.float32)
    # float64 -> float32 -> bfloat could round twice; the values that reach here are
    # float32 already (the model never holds doubles), so the first step is exact.
    return round_bfloat(f32) if t == BFLOAT else f32


def int_to_float(v: int, t: Scalar) -> float:
    """An integer rounded to t (to nearest, ties to even; too large is infinity)."""
    if v == 0:
        return 0.0
    sign = -1.0 if v < 0 else 1.0
    a = abs(v)
    digits = t.mantissa + 1
    extra = a.bit_length() - digits
    if extra > 0:
        q, r = divmod(a, 1 << extra)
        half = 1 << (extra - 1)
        if r > half or (r == half and q & 1):
            q += 1
        a = q << extra
    if a >= (1 << (t.max_exp + 1)):
        return sign * INF
    return sign * float(a)


def convert(value: np.ndarray, src: Type, dst: Type) -> tuple[np.ndarray, np.ndarray]:
    """An explicit or implicit conversion, component by component."""
    s, d = elem(src), elem(dst)
    undefined = none_undefined(value)
    if s == d:
        return value, undefined
    if d.is_bool:
        if s.is_int:
            return (value != 0).astype(bool), undefined
        return np.asarray(value != 0, dtype=bool), undefined
    if d.is_int:
        if s.is_bool:
            return ints(value.astype(np.int64)), undefined
        if s.is_int:
            return wrap(value, d), undefined
        # float -> integer: truncation; NaN, infinity or a value out of range is undefined
        f = value.astype(np.float64)
        finite = np.isfinite(f)
        t = np.where(finite, np.trunc(f), 0.0)
        result = ints(t)
        bad = ~finite | out_of_range(result, d)
        result = np.where(bad, 0, result)
        return result, per_lane(bad)
    # to a float type
    if s.is_bool:
        return float_array(value.astype(np.float64), d), undefined
    if s.is_int:
        flat = [int_to_float(int(v), d) for v in value.ravel()]
        return float_array(np.array(flat, dtype=np.float64).reshape(value.shape), d), undefined
    f32 = value.astype(np.float32)  # exact for every float type
    if d == FLOAT:
        return f32, undefined
    if d == HALF:
        with np.errstate(all="ignore"):
            return f32.astype(np.float16), undefined
    return round_bfloat(f32), undefined


def constant(v, t: Type, lanes: int) -> np.ndarray:
    """A literal broadcast to every lane (and component)."""
    e = elem(t)
    shape = (lanes, t.n) if isinstance(t, Vec) else (lanes,)
    if e.is_bool:
        return np.full(shape, bool(v))
    if e.is_int:
        arr = np.empty(shape, dtype=object)
        arr.fill(int(v))
        return arr
    return float_array(np.full(shape, float(v)), e)


def float_op(op: str, a: np.ndarray, b: np.ndarray, t: Scalar) -> np.ndarray:
    """+ - * / of one float type, rounded once to it (bfloat: computed in float, as MSL's
    GPUs without bfloat units and metalcall's prelude do, then rounded)."""
    with np.errstate(all="ignore"):
        if op == "+":
            r = a + b
        elif op == "-":
            r = a - b
        elif op == "*":
            r = a * b
        else:
            r = a / b
    return round_bfloat(r) if t == BFLOAT else r


def int_div(a: int, b: int) -> tuple[int, int]:
    """C++'s truncating quotient and remainder (b != 0)."""
    q = abs(a) // abs(b)
    if (a < 0) != (b < 0):
        q = -q
    return q, a - q * b


def int_binary(op: str, a: np.ndarray, b: np.ndarray, t: Scalar, shift_width: int) -> tuple[np.ndarray, np.ndarray]:
    """An integer operator on values already converted to the operation's type t.

    For shifts t is the (promoted) left operand's type and b the count."""
    if op in ("+", "-", "*", "&", "|", "^"):
        exact = {"+": a + b, "-": a - b, "*": a * b, "&": a & b, "|": a | b, "^": a ^ b}[op]
        bad = out_of_range(exact, t) if t.signed else np.zeros(exact.shape, dtype=bool)
        return wrap(exact, t), per_lane(bad)
    if op in ("/", "%"):
        flat_a, flat_b = a.ravel(), b.ravel()
        res = np.empty(flat_a.shape, dtype=object)
        bad = np.zeros(flat_a.shape, dtype=bool)
        for i, (x, y) in enumerate(zip(flat_a, flat_b)):
            if y == 0 or (t.signed and x == t.lo and y == -1):
                bad[i] = True
                res[i] = 0
            else:
                q, r = int_div(x, y)
                res[i] = q if op == "/" else r
        return res.reshape(a.shape), per_lane(bad.reshape(a.shape))
    if op in ("<<", ">>"):
        bad = (b < 0) | (b >= shift_width)
        count = np.where(bad, 0, b)
        if op == ">>":
            return a >> count, per_lane(bad)
        exact = a << count
        if t.signed:
            # C++14: a negative left operand, or a result the unsigned type cannot hold
            bad = bad | (a < 0) | (exact > (1 << t.bits) - 1)
        return wrap(exact, t), per_lane(bad)
    raise ValueError(op)


def compare(op: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        r = {"==": a == b, "!=": a != b, "<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op]
    return np.asarray(r, dtype=bool)


def bits_of(value: np.ndarray, t: Scalar) -> np.ndarray:
    """The unsigned integer holding t's bits (for as_type and for comparing results)."""
    if t.is_int:
        return ints(value) % (1 << t.bits)
    if t.is_bool:
        return ints(value.astype(np.int64))
    if t == HALF:
        return ints(np.ascontiguousarray(value, dtype=np.float16).view(np.uint16))
    u = np.ascontiguousarray(value, dtype=np.float32).view(np.uint32)
    return ints(u >> 16) if t == BFLOAT else ints(u)


def from_bits(bits: np.ndarray, t: Scalar) -> np.ndarray:
    """The value of t whose bits these are."""
    if t.is_int:
        return wrap(bits, t)
    raw = np.array(bits.ravel().tolist(), dtype=np.uint64)
    if t == HALF:
        return raw.astype(np.uint16).view(np.float16).reshape(bits.shape)
    if t == BFLOAT:
        return (raw.astype(np.uint32) << 16).view(np.float32).reshape(bits.shape)
    return raw.astype(np.uint32).view(np.float32).reshape(bits.shape)


def to_storage(value: np.ndarray, t: Type) -> np.ndarray:
    """The model's value as a buffer holds it (bfloat as uint16 bits)."""
    e = elem(t)
    if e.is_int:
        return np.array(value.tolist(), dtype=e.storage).reshape(value.shape)
    if e == BFLOAT:
        return (np.ascontiguousarray(value, dtype=np.float32).view(np.uint32) >> 16).astype(np.uint16)
    return np.asarray(value, dtype=e.storage)


def from_storage(data: np.ndarray, t: Type) -> np.ndarray:
    e = elem(t)
    if e.is_int:
        return ints(data)
    if e == BFLOAT:
        return (data.astype(np.uint32) << 16).view(np.float32)
    if e.is_bool:
        return data.astype(bool)
    return data.astype(e.storage)


def is_exact_match(expected: np.ndarray, got: np.ndarray, t: Type) -> np.ndarray:
    """Lane by lane (and component): equal values; every NaN matches every NaN.

    +0 and -0 are told apart: precise-mode programs have one IEEE answer."""
    e = elem(t)
    if not e.is_float:
        return np.asarray(expected == got, dtype=bool)
    ex = np.asarray(expected, dtype=np.float32 if e != HALF else np.float16)
    gt = np.asarray(got, dtype=ex.dtype)
    both_nan = np.isnan(ex) & np.isnan(gt)
    same = bits_of(ex, e) == bits_of(gt, e)
    return np.asarray(both_nan | same, dtype=bool)

