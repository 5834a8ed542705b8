"""SIMD-group functions (width 32) and float sums whose value does not depend on order.

GPUs add a SIMD-group's floats in an order of their own; MSL does not fix it. The
model computes a float sum or product only where every order gives the same result
(`inexact_sum` reports where it would not), and the generator rewrites other
arguments so that they do.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from .types import ULONG, Scalar, Type, elem
from .values import convert, float_array, wrap

WIDTH = 32


def _exactly_summable(values: np.ndarray, extra, t: Scalar) -> bool:
    """True when every order of adding these values (and extra) rounds nowhere in t."""
    items = [float(v) for v in np.ravel(values)] + [float(v) for v in extra]
    if not all(np.isfinite(items)):
        return False
    if any(v == 0 and np.signbit(v) for v in items):
        return False  # -0: whether a sum starts from +0 or from the first lane is the GPU's
    fractions = [Fraction(v) for v in items]
    finest = max(f.denominator for f in fractions)
    total = sum(abs(f) for f in fractions)
    return total * finest < 2 ** (t.mantissa + 1)


def inexact_sum(values: np.ndarray, initial: np.ndarray, t: Scalar) -> bool:
    """True when atomic float sums of values into initial's cells could round."""
    return not _exactly_summable(values, np.ravel(initial), t)


def _exact_product(values: np.ndarray, t: Scalar) -> bool:
    """True when every order of multiplying these values gives the same result in t."""
    flat = [float(v) for v in np.ravel(values)]
    if not all(np.isfinite(flat)):
        return False
    magnitudes = [abs(v) for v in flat]
    if any(m not in (0.0, 0.5, 1.0, 2.0) for m in magnitudes):
        return False
    return magnitudes.count(2.0) <= t.max_exp - 1 and magnitudes.count(0.5) <= t.max_exp - 2


def _groups(value: np.ndarray, width: int) -> np.ndarray:
    """(groups, width, ...) view of per-lane values."""
    return value.reshape((-1, width) + value.shape[1:])


def _reduce(fn: str, g: np.ndarray, t: Scalar):
    """One SIMD-group's values (32, ...) -> (result, defined)."""
    if t.is_int:
        if fn == "sum":
            return wrap(g.sum(axis=0), t), True
        if fn == "product":
            r = g[0]
            for v in g[1:]:
                r = wrap(r * v, t)
            return r, True
        if fn == "min":
            return g.min(axis=0), True
        if fn == "max":
            return g.max(axis=0), True
        r = g[0]
        for v in g[1:]:
            r = (r & v) if fn == "and" else (r | v) if fn == "or" else (r ^ v)
        return r, True
    with np.errstate(all="ignore"):
        if fn == "sum":
            ok = _exactly_summable(g, [], t)
            return float_array(g.astype(np.float64).sum(axis=0), t), ok
        if fn == "product":
            ok = _exact_product(g, t)
            return float_array(np.prod(g.astype(np.float64), axis=0), t), ok
        if fn in ("min", "max"):
            zeros = g == 0
            negative = np.signbit(g)
            mixed_zeros = (zeros & negative).any() and (zeros & ~negative).any()
            ok = not np.isnan(g.astype(np.float32)).any() and not mixed_zeros
            r = g.min(axis=0) if fn == "min" else g.max(axis=0)
            return r.astype(g.dtype), ok
    raise ValueError(fn)


def _prefix(kind: str, g: np.ndarray, t: Scalar, inclusive: bool):
    """Inclusive or exclusive prefix sums or products over one SIMD-group's lanes."""
    work = g if t.is_int else g.astype(np.float64)
    out = np.empty_like(work)
    one = 0 if kind == "sum" else 1
    if work.ndim == 1:  # scalars: a Python int (exact arithmetic) or a float
        identity = one if t.is_int else float(one)
    else:
        identity = np.full_like(work[0], one)
    acc = None
    for lane in range(len(g)):
        previous = identity if acc is None else acc
        acc = work[lane] if acc is None else (acc + work[lane] if kind == "sum" else acc * work[lane])
        if t.is_int:
            acc = wrap(acc, t)
        out[lane] = acc if inclusive else previous
    if t.is_int:
        return out, True
    # exact in every order exactly when the whole group's sum (product) is
    _, ok = _reduce(kind, g, t)
    return float_array(out, t), ok


def _source_lanes(fn: str, args: list, lanes: int, width: int) -> np.ndarray:
    """For each lane, the lane of its SIMD-group (quad) whose value it receives."""
    me = np.arange(lanes) % width
    base = np.arange(lanes) - me
    if fn == "simd_broadcast_first":
        return base
    k = np.array([int(v) for v in args[1]]) if len(args) > 1 else None
    if fn in ("simd_broadcast", "simd_shuffle"):
        src = k
    elif fn == "simd_shuffle_xor":
        src = me ^ k
    elif fn == "simd_shuffle_up":
        src = np.where(me >= k, me - k, me)
    elif fn == "simd_shuffle_down":
        src = np.where(me + k < width, me + k, me)
    elif fn == "simd_shuffle_rotate_up":
        src = (me - k) % width
    elif fn == "simd_shuffle_rotate_down":
        src = (me + k) % width
    else:
        raise ValueError(fn)
    if ((src < 0) | (src >= width)).any():
        raise ValueError(f"{fn} reads a lane outside its SIMD-group")
    return base + src


# Defined over the active lanes, so callable where only some lanes of a group run.
OVER_ACTIVE_LANES = {"simd_sum", "simd_min", "simd_max", "simd_and", "simd_or", "simd_xor", "simd_product",
                     "simd_prefix_inclusive_sum", "simd_prefix_exclusive_sum", "simd_all", "simd_any",
                     "simd_ballot", "simd_broadcast_first", "simd_is_first", "simd_active_threads_mask"}


def simd_function(fn: str, args: list, arg_types: list[Type], result: Type, lanes: int, active: np.ndarray):
    """(value, undefined lanes) of a SIMD-group (or quad-group) function; `active` marks the
    lanes that call it (every lane of a group for the shuffles and broadcasts)."""
    width = 4 if fn.startswith("quad_") else WIDTH
    fn = "simd_" + fn.split("_", 1)[1]
    undefined = np.zeros(lanes, dtype=bool)
    act = _groups(active, width)
    first = np.repeat(np.argmax(act, axis=1), width)  # each group's lowest active lane
    me = np.arange(lanes) % width
    if fn == "simd_is_first":
        return me == first, undefined
    if fn == "simd_active_threads_mask":
        return _votes(act, width, lanes, result), undefined
    x = args[0]
    if fn in ("simd_all", "simd_any", "simd_ballot"):
        g = _groups(x.astype(bool), width) & act
        if fn == "simd_all":
            return np.repeat((g | ~act).all(axis=1), width), undefined
        if fn == "simd_any":
            return np.repeat(g.any(axis=1), width), undefined
        return _votes(g, width, lanes, result), undefined
    if fn == "simd_broadcast_first":
        return x[np.arange(lanes) - me + first], undefined
    if fn.startswith("simd_shuffle") or fn.startswith("simd_broadcast"):
        return x[_source_lanes(fn, args, lanes, width)], undefined
    t = elem(arg_types[0])
    groups = _groups(x, width)
    out = groups.copy()
    for gi, g in enumerate(groups):
        on = act[gi]
        if not on.any():
            continue
        if fn.startswith("simd_prefix_"):
            kind = "sum" if fn.endswith("sum") else "product"
            values, ok = _prefix(kind, g[on], t, fn.startswith("simd_prefix_inclusive"))
            out[gi][on] = values
        else:
            r, ok = _reduce(fn[len("simd_"):], g[on], t)
            out[gi][on] = np.broadcast_to(r, g[on].shape)
        if not ok:
            undefined[gi * width:(gi + 1) * width] = True
    return out.reshape(x.shape), undefined


def _votes(bits: np.ndarray, width: int, lanes: int, result: Type) -> np.ndarray:
    """A simd_vote per group (bit i: lane i), as the result type, in every lane."""
    votes = [sum(1 << i for i, b in enumerate(row) if b) for row in bits]
    value = np.empty(lanes, dtype=object)
    for i, v in enumerate(votes):
        value[i * width:(i + 1) * width] = v
    return convert(value, ULONG, result)[0]
