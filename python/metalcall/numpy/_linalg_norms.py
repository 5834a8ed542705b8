"""The rest of metalcall.numpy.linalg, composed of device operations (elementwise kernels,
reductions, matmul and the factorisations of _linalg_decomp.py): cross, diagonal, matrix_norm,
matrix_power, matrix_rank, pinv, trace, vector_norm."""

from __future__ import annotations

import math
import operator

import numpy as np

import metalcall as mc

from . import _linalg
from . import _reduce as Rd
from ._array import ndarray
from ._creation import asarray, eye, zeros
from ._elementwise import apply, conj, where
from ._linalg import matmul
from ._linalg_decomp import float_dtype, inv, matrices, svd, svdvals
from ._manip import broadcast_arrays, broadcast_to, diagonal, expand_dims, matrix_transpose, moveaxis, reshape, stack


def _array(x):
    return x if isinstance(x, ndarray) else asarray(x)


def outer(x1, x2, /):
    """The outer product of two vectors (the linalg extension's: 1-D operands only, as
    numpy.linalg.outer; mnp.outer flattens, as numpy.outer)."""
    x1, x2 = _array(x1), _array(x2)
    if x1.ndim != 1 or x2.ndim != 1:
        raise mc.ArgumentError(f"linalg.outer: needs two vectors, got shapes {x1.shape} and {x2.shape}")
    return _linalg.outer(x1, x2)


def trace(x, /, *, offset=0, dtype=None):
    return Rd.sum(diagonal(x, offset=offset), axis=-1, dtype=dtype)


def cross(x1, x2, /, *, axis=-1):
    x1, x2 = _array(x1), _array(x2)
    if x1.dtype.kind not in "iufc" or x2.dtype.kind not in "iufc":
        raise mc.ArgumentError("linalg.cross: needs numeric arrays")
    try:
        x1, x2 = broadcast_arrays(x1, x2)
    except ValueError as e:
        raise mc.ArgumentError(f"linalg.cross: shapes {x1.shape} and {x2.shape} do not broadcast") from e
    if not -x1.ndim <= axis < x1.ndim or x1.shape[axis] != 3:
        raise mc.ArgumentError(f"linalg.cross: axis {axis} of shape {x1.shape} must exist and have 3 elements")
    a, b = moveaxis(x1, axis, -1), moveaxis(x2, axis, -1)
    a0, a1, a2 = a[..., 0], a[..., 1], a[..., 2]
    b0, b1, b2 = b[..., 0], b[..., 1], b[..., 2]
    c = stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], axis=-1)
    return moveaxis(c, -1, axis)


def _float(x, name):
    x = _array(x)
    return x.astype(float_dtype(x.dtype, x.device, name), copy=False)


def vector_norm(x, /, *, axis=None, keepdims=False, ord=2):
    x = _float(x, "vector_norm")
    if axis is None:
        flat = reshape(x, (-1,))
        out = vector_norm(flat, axis=0, ord=ord)
        return reshape(out, (1,) * x.ndim) if keepdims else out
    a = abs(x)
    if ord == 2:
        return apply("sqrt", Rd.sum(a * a, axis=axis, keepdims=keepdims))
    if ord == 1:
        return Rd.sum(a, axis=axis, keepdims=keepdims)
    if ord == math.inf:
        return Rd.max(a, axis=axis, keepdims=keepdims)
    if ord == -math.inf:
        return Rd.min(a, axis=axis, keepdims=keepdims)
    if ord == 0:
        return Rd.sum((a != 0).astype(a.dtype), axis=axis, keepdims=keepdims)
    if isinstance(ord, (int, float)) and not isinstance(ord, bool) and math.isfinite(ord):
        return Rd.sum(a ** float(ord), axis=axis, keepdims=keepdims) ** (1.0 / float(ord))
    raise mc.ArgumentError(f"linalg.vector_norm: ord {ord!r} is not a number")


def matrix_norm(x, /, *, keepdims=False, ord="fro"):
    x, dt, bs, m, n = matrices(x, "matrix_norm", square=False)
    if ord == "fro":
        a = abs(x)
        out = apply("sqrt", Rd.sum(a * a, axis=(-2, -1)))
    elif ord in ("nuc", 2, -2):
        if m * n == 0:
            raise mc.ArgumentError(f"linalg.matrix_norm: ord {ord!r} of empty matrices")
        s = svdvals(x)
        out = Rd.sum(s, axis=-1) if ord == "nuc" else (Rd.max(s, axis=-1) if ord == 2 else Rd.min(s, axis=-1))
    elif ord in (1, -1, math.inf, -math.inf) and not isinstance(ord, bool):
        sums = Rd.sum(abs(x), axis=-2 if ord in (1, -1) else -1)
        out = Rd.max(sums, axis=-1) if ord > 0 else Rd.min(sums, axis=-1)
    else:
        raise mc.ArgumentError(f"linalg.matrix_norm: ord {ord!r} is not one of 'fro', 'nuc', 1, -1, 2, -2, inf, -inf")
    return reshape(out, bs + (1, 1)) if keepdims else out


def matrix_power(x, n, /):
    x = _array(x)
    if x.ndim < 2 or x.shape[-1] != x.shape[-2]:
        raise mc.ArgumentError(f"linalg.matrix_power: needs square matrices, got shape {x.shape}")
    n = operator.index(n)
    if n == 0:
        return broadcast_to(eye(x.shape[-1], dtype=x.dtype, device=x.device), x.shape).copy()
    if n < 0:
        x, n = inv(x), -n
    result = None
    square = x
    while n:  # binary powering: one matmul per bit and one per set bit
        if n & 1:
            result = square if result is None else matmul(result, square)
        n >>= 1
        if n:
            square = matmul(square, square)
    return result.copy() if result is x else result


def _tolerance(s, rtol, m, n):
    """Singular values at or below this count as zero: rtol (default max(m, n) * eps) * the largest."""
    if rtol is None:
        rtol = max(m, n) * float(np.finfo(s.dtype).eps)
    if isinstance(rtol, ndarray):
        rtol = expand_dims(rtol.astype(s.dtype, copy=False), axis=-1)
    return Rd.max(s, axis=-1, keepdims=True) * rtol


def matrix_rank(x, /, *, rtol=None):
    x, dt, bs, m, n = matrices(x, "matrix_rank", square=False)
    if m * n == 0:
        return zeros(bs, dtype=np.int64, device=x.device)
    s = svdvals(x)
    return Rd.sum(s > _tolerance(s, rtol, m, n), axis=-1, dtype=np.int64)


def pinv(x, /, *, rtol=None):
    x, dt, bs, m, n = matrices(x, "pinv", square=False)
    if m * n == 0:
        return zeros(bs + (n, m), dtype=dt, device=x.device)
    u, s, vh = svd(x, full_matrices=False)
    keep = s > _tolerance(s, rtol, m, n)
    s_inv = where(keep, 1.0 / where(keep, s, 1.0), 0.0)
    if dt.kind == "c":  # V diag(1/s) U^H
        u, vh = conj(u), conj(vh)
    return matmul(matrix_transpose(vh), expand_dims(s_inv, axis=-1).astype(dt) * matrix_transpose(u))


__all__ = ["cross", "diagonal", "matrix_norm", "matrix_power", "matrix_rank", "outer", "pinv", "trace", "vector_norm"]
