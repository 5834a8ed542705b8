"""Elementwise functions of metalcall.numpy: type resolution (NumPy 2's ufunc rules with weak
Python scalars), broadcasting, and lazy Op nodes that _fusion.py compiles into one kernel.
Also astype, where, clip, tril/triu (a where on the positions) and the in-place/assignment path used
by operators and setitem."""

from __future__ import annotations

import numpy as np

import metalcall as mc
from metalcall import _core

from . import _dtypes as D
from . import _fusion as F
from . import _complex
from . import _ops
from . import _runtime as R
from ._array import flush_readers, lazy_array, ndarray
from ._creation import asarray, zeros

_EMPTY = {}


def _empty(dt):
    a = _EMPTY.get(dt)
    if a is None:
        a = _EMPTY[dt] = np.empty(0, dt)
    return a


def _device_of(xs):
    dev = None
    for x in xs:
        if isinstance(x, ndarray):
            if dev is None:
                dev = x.device
            elif x.device != dev:
                raise ValueError(
                    f"metalcall.numpy: arrays on different devices ({dev.backend}:{dev.index} and "
                    f"{x.device.backend}:{x.device.index}); move one with x.to_device(...)"
                )
    return dev


def _prepare(xs):
    """Operands as (ndarray or weak Python scalar or strong NumPy scalar); the device."""
    dev = _device_of(xs)
    if dev is None:
        dev = R.default_device()
    out = []
    for x in xs:
        if isinstance(x, ndarray) or isinstance(x, (bool, int, float, complex)):
            out.append(x)
        elif isinstance(x, np.generic):
            out.append(np.asarray(x))  # a strong 0-d operand, passed as a scalar argument
        else:
            out.append(asarray(x, device=dev))
    if not any(isinstance(x, ndarray) for x in out) and not any(isinstance(x, np.ndarray) for x in out):
        out[0] = asarray(out[0], device=dev)
    return out, dev


def _res_arg(x):
    if isinstance(x, ndarray):
        return _empty(x.dtype)
    return x


def _shape(x):
    if isinstance(x, ndarray):
        return x.shape
    if isinstance(x, np.ndarray):
        return x.shape
    return ()


def _fit_scalar_ct(ct, xs):
    """Comparisons with an out-of-range Python int (uint8 < 300) compare exactly, as NumPy does."""
    if ct.kind in "iu":
        for x in xs:
            if isinstance(x, int) and not isinstance(x, bool):
                info = np.iinfo(ct)
                if not (info.min <= x <= info.max):
                    return D.int64 if -(2**63) <= x < 2**63 else D.float64
    return ct


def _demote(dt, dev):
    """float64 (complex128) from Python scalars is float32 (complex64) on devices without double."""
    if dt in (D.float64, D.complex128) and not D.device_has_float64(dev):
        return D.float32 if dt == D.float64 else D.complex64
    return dt


def _node(x, ct):
    if isinstance(x, ndarray):
        return x._as_node()
    if isinstance(x, np.ndarray):
        return F.Scalar(x.item(), ct)
    return F.Scalar(x, ct)


def _bound(arrays, extra=1):
    """Keeps a new node's graph within MAX_NODES / MAX_INPUTS by evaluating the biggest lazy operand."""
    while True:
        lazies = [a for a in arrays if isinstance(a, ndarray) and a.is_lazy]
        if not lazies:
            return
        size = extra + sum(a._node.size for a in lazies)
        ids = frozenset()
        for a in arrays:
            if isinstance(a, ndarray):
                ids = ids | F._leaf_ids(a._as_node())
        if size <= F.MAX_NODES and len(ids) <= F.MAX_INPUTS:
            return
        max(lazies, key=lambda a: a._node.size)._materialize()


_RESOLVED: dict = {}


def _resolve(op, ufunc, kind, xs):
    """(result dtype, compute dtype) as NumPy resolves them; cached per operand dtypes and scalar
    types (Python int values are range-checked here, as NumPy 2 does for weak scalars)."""
    key = (op,) + tuple(x.dtype if isinstance(x, (ndarray, np.ndarray)) else type(x) for x in xs)
    hit = _RESOLVED.get(key)
    if hit is None:
        probe = [_res_arg(x) if not isinstance(x, (bool, int, float, complex)) else type(x)(0) for x in xs]
        try:
            rdt = D.as_dtype(ufunc(*probe).dtype)
        except TypeError as e:  # NumPy has no loop for these dtypes (bool - bool, float << int, ...)
            D.refuse_complex(op, *(np.asarray(p).dtype for p in probe))
            raise TypeError(f"metalcall.numpy: {op} does not support these dtypes: {e}") from None
        ct = rdt if kind == "result" else D.as_dtype(np.result_type(*probe))
        if ct.kind != "c" and any(np.asarray(p).dtype.kind == "c" for p in probe):
            ct = D.as_dtype(np.result_type(*probe))  # abs, real, imag: complex operands, real result
        hit = _RESOLVED[key] = (rdt, ct)
    rdt, ct = hit
    if op not in _complex.SUPPORTED:
        D.refuse_complex(op, ct)
    for x in xs:
        if isinstance(x, int) and not isinstance(x, bool):
            if kind == "common":
                ct = _fit_scalar_ct(ct, xs)
            elif ct.kind in "iu":
                info = np.iinfo(ct)
                if not info.min <= x <= info.max:
                    raise OverflowError(f"Python integer {x} out of bounds for {ct}")
    return rdt, ct


def _broadcast(shapes):
    real = [s for s in shapes if s]  # 0-d operands (scalars) broadcast to anything
    if not real:
        return ()
    first = real[0]
    if all(s == first for s in real):
        return first
    return np.broadcast_shapes(*real)


# (op, operand dtypes or scalar types, id(device)) -> (result dtype, compute dtype, device), demoted
# and the operands' dtypes checked against the device: what apply() works out for operands that are
# arrays of one device and Python scalars (ints in integer computations are range-checked each time).
# Keyed by the device's id (a Device's hash is a C++ call, ~100 ns of an operation's ~2 µs here); the
# entry holds the device, so that no other device takes its id while the entry lives.
_APPLY_TYPES: dict = {}
_WEAK_SCALARS = (float, bool, complex, int)


def _fast_operands(xs):
    """(device, type key) when every operand is an array of one device or a Python scalar and one
    is an array; else (None, None): the general path."""
    dev = None
    key = []
    for x in xs:
        t = type(x)
        if t is ndarray:
            d = x._device
            if dev is None:
                dev = d
            elif d is not dev and d != dev:
                return None, None
            key.append(x._dtype)
        elif t in _WEAK_SCALARS:
            key.append(t)
        else:
            return None, None
    return dev, tuple(key)


_Leaf, _Scalar, _Op = F.Leaf, F.Scalar, F.Op
_core._lazy_setup(ndarray, F.Op, F.Leaf, F.Scalar, _APPLY_TYPES, F._LIVE_LAZY, F._config, F.MAX_INPUTS)
_lazy_apply = _core._lazy_apply


def apply(op, *xs):
    # The common case in C++ (cpp/python/lazy_nodes.cpp): arrays of one device and Python scalars
    # of types seen before, one shape, a small expression. None: the Python path below.
    out = _lazy_apply(op, xs)
    if out is not None:
        return out
    dev, key = _fast_operands(xs)
    hit = _APPLY_TYPES.get((op, key, id(dev))) if dev is not None else None
    if hit is not None:
        # Types resolved before: the Python time here is every elementwise operation's (~2 µs on
        # the 2-core box, more on a GPU's host, where it bounds a fused chain's rate), so evaluated
        # arrays' leaves are made inline.
        rdt, ct, _ = hit
        shape = ()
        args = []
        for x in xs:
            if type(x) is ndarray:
                s = x._shape
                if s and s != shape:  # as _broadcast: operands of one shape are the common case
                    shape = s if not shape else _broadcast([_shape(x) for x in xs])
                args.append(_Leaf(x._buf, x._offset, s, x._strides, x._dtype) if x._node is None else x._as_node())
            else:
                args.append(_Scalar(x, ct))
        node = _Op(op, args, rdt, ct, shape)
    else:
        ufunc, nargs, kind = _ops.OPS[op]
        xs, dev = _prepare(xs)
        rdt, ct = _resolve(op, ufunc, kind, xs)
        rdt, ct = _demote(rdt, dev), _demote(ct, dev)
        for x in xs:
            if isinstance(x, ndarray) and x.dtype in (D.float64, D.complex128):
                D.check_device_dtype(x.dtype, dev)
        # Resolved without an error: the same types resolve alike, except Python ints, whose values
        # an integer computation checks each time.
        if key is not None and len(_APPLY_TYPES) < 4096 and not (ct.kind in "iu" and any(k is int for k in key)):
            _APPLY_TYPES[(op, key, id(dev))] = (rdt, ct, dev)
        shape = _broadcast([_shape(x) for x in xs])
        node = F.Op(op, [_node(x, ct) for x in xs], rdt, ct, shape)
    # The node counts its size and inputs as _bound does (at least as many): only a node past a
    # bound needs _bound to evaluate an operand, and is built again.
    if node.size > F.MAX_NODES or (node.size > F.MAX_INPUTS and len(node.leaf_ids) > F.MAX_INPUTS):
        _bound(xs)
        node = F.Op(op, [_node(x, ct) for x in xs], rdt, ct, shape)
    return lazy_array(node, dev)


def astype(x, dtype, /, *, copy=True, device=None):
    if not isinstance(x, ndarray):
        raise TypeError("astype takes a metalcall.numpy array")
    dt = D.as_dtype(dtype, x.device)
    if device is not None and R.as_device(device) != x.device:
        x = x.to_device(device)
    D.check_device_dtype(dt, x.device)
    if dt == x.dtype and not copy:
        return x
    _bound([x])
    node = F.Op("cast", [x._as_node()], dt, x.dtype, x.shape)
    return lazy_array(node, x.device)


def where(condition, x1, x2, /):
    xs, dev = _prepare([condition, x1, x2])
    cond = xs[0]
    if not isinstance(cond, ndarray):
        cond = asarray(cond, device=dev)
    rdt = D.as_dtype(np.result_type(*[_res_arg(x) for x in xs[1:]]))
    rdt = _demote(rdt, dev)
    shape = np.broadcast_shapes(*[_shape(x) for x in [cond] + xs[1:]])
    _bound([cond] + xs[1:])
    node = F.Op("where", [cond._as_node(), _node(xs[1], rdt), _node(xs[2], rdt)], rdt, rdt, shape)
    return lazy_array(node, dev)


def clip(x, /, min=None, max=None):
    """Clamps x to [min, max] (either may be None); the result has x's dtype; NaN propagates."""
    if not isinstance(x, ndarray):
        x = asarray(x)
    D.refuse_complex("clip", x.dtype)
    out = x
    dt = x.dtype
    for op, bound in (("maximum", min), ("minimum", max)):
        if bound is None:
            continue
        if isinstance(bound, ndarray):
            b = bound.astype(dt, copy=False)
            shape = np.broadcast_shapes(out.shape, b.shape)
            _bound([out, b])
            out = lazy_array(F.Op(op, [out._as_node(), b._as_node()], dt, dt, shape), x.device)
        else:
            _bound([out])
            out = lazy_array(F.Op(op, [out._as_node(), F.Scalar(bound, dt)], dt, dt, out.shape), x.device)
    if out is x:
        return x.copy()
    return out


def _reads_other_view(node, dest, seen=None):
    """True if the expression reads dest's buffer through any view other than dest itself."""
    if seen is None:
        seen = set()
    if id(node) in seen:
        return False
    seen.add(id(node))
    leaf = F._as_leaf(node)
    if isinstance(leaf, F.Leaf):
        if leaf.buf is dest._buf:
            bs = F.broadcast_strides(leaf.shape, leaf.strides, dest.shape)
            return not (leaf.offset == dest._offset and bs == dest._strides)
        return False
    if isinstance(leaf, F.Op):
        return any(_reads_other_view(a, dest, seen) for a in leaf.args)
    return False


def assign(dest, value, internal=False):
    """Writes value (an array, lazy or not, or a scalar) into the view dest, broadcasting.
    internal: value is a temporary built from dest (in-place operators), evaluated straight into dest."""
    if dest._readonly:
        raise ValueError("metalcall.numpy: this array is a read-only view (broadcast_to); copy it first")
    dest._materialize()
    if isinstance(value, ndarray):
        if value.device != dest.device:
            raise ValueError("metalcall.numpy: assigning an array from another device; use to_device()")
        if np.broadcast_shapes(value.shape, dest.shape) != dest.shape:
            raise ValueError(f"could not broadcast input array from shape {value.shape} into shape {dest.shape}")
        flush_readers(dest._buf, keep=value if internal else None)
        node = value._as_node()
        if _reads_other_view(node, dest):
            node = value.copy()._materialize()._as_node()
    elif isinstance(value, (bool, int, float, complex, np.generic)):
        flush_readers(dest._buf)
        node = F.Scalar(value.item() if isinstance(value, np.generic) else value, dest.dtype)
    else:
        return assign(dest, asarray(value, device=dest.device))
    if dest.size == 0:
        return
    F.run([(node, (dest._buf, dest._offset, dest._strides, dest.dtype, dest.shape))], dest.device)


def inplace(op, x, other):
    r = apply(op, x, other)
    if r.dtype != x.dtype and not np.can_cast(r.dtype, x.dtype, casting="same_kind"):
        raise mc.ArgumentError(f"metalcall.numpy: cannot cast the result of {op} ({r.dtype}) to {x.dtype} in place")
    if r.shape != x.shape:
        raise ValueError(f"non-broadcastable output operand with shape {x.shape} and result shape {r.shape}")
    assign(x, r, internal=True)
    if r._node is not None:
        F._LIVE_LAZY.discard(r)


# --------------------------------------------------------------------------- public functions

UNARY = [
    "abs", "acos", "acosh", "asin", "asinh", "atan", "atanh", "bitwise_invert", "ceil", "cos", "cosh", "exp",
    "expm1", "floor", "isfinite", "isinf", "isnan", "log", "log1p", "log2", "log10", "logical_not", "negative",
    "positive", "round", "sign", "signbit", "sin", "sinh", "sqrt", "square", "tan", "tanh", "trunc", "exp2",
    "rint", "reciprocal", "cbrt",
]
BINARY = [
    "add", "atan2", "bitwise_and", "bitwise_left_shift", "bitwise_or", "bitwise_right_shift", "bitwise_xor",
    "copysign", "divide", "equal", "floor_divide", "greater", "greater_equal", "hypot", "less", "less_equal",
    "logaddexp", "logical_and", "logical_or", "logical_xor", "maximum", "minimum", "multiply", "not_equal", "pow",
    "remainder", "subtract", "fmod", "fmax", "fmin", "nextafter",
]


def _make_unary(name):
    def f(x, /):
        return apply(name, x)

    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"Elementwise {name} (lazy: fused with neighbouring elementwise operations)."
    return f


def _make_binary(name):
    def f(x1, x2, /):
        return apply(name, x1, x2)

    f.__name__ = f.__qualname__ = name
    f.__doc__ = f"Elementwise {name} with broadcasting (lazy: fused with neighbouring elementwise operations)."
    return f


FUNCTIONS = {n: _make_unary(n) for n in UNARY}
FUNCTIONS.update({n: _make_binary(n) for n in BINARY})

# NumPy's names for the same functions (what metallic and MetalPy users write).
ALIASES = {
    "absolute": "abs", "arccos": "acos", "arccosh": "acosh", "arcsin": "asin", "arcsinh": "asinh",
    "arctan": "atan", "arctanh": "atanh", "arctan2": "atan2", "power": "pow", "true_divide": "divide",
    "mod": "remainder", "invert": "bitwise_invert", "bitwise_not": "bitwise_invert",
    "left_shift": "bitwise_left_shift", "right_shift": "bitwise_right_shift",
}


def conj(x, /):
    """The complex conjugate (a real array's values, as a new array, as the standard's 2024.12)."""
    return apply("conj", x)


def real(x, /):
    """The real part (float32 of complex64, float64 of complex128); a real array's values."""
    return apply("real", x)


def imag(x, /):
    """The imaginary part; zeros of a real array's dtype."""
    return apply("imag", x)


def _tri(x, k, upper):
    if x.ndim < 2:
        raise ValueError("tril/triu need at least 2 dimensions")
    m, n = x.shape[-2:]
    rows = asarray(np.arange(m, dtype=np.int64).reshape(m, 1), device=x.device)
    cols = asarray(np.arange(n, dtype=np.int64).reshape(1, n), device=x.device)
    diff = apply("subtract", cols, rows)
    keep = apply("greater_equal", diff, k) if upper else apply("less_equal", diff, k)
    return where(keep, x, zeros((), dtype=x.dtype, device=x.device))


def tril(x, /, *, k=0):
    return _tri(x, k, False)


def triu(x, /, *, k=0):
    return _tri(x, k, True)
