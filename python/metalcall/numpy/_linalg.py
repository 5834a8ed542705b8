"""Linear algebra: matmul (@) with NumPy's broadcasting of batch dimensions, tensordot, vecdot,
outer, on the (batch, m, k) @ (batch, k, n) kernel of _kernels.matmul (see _backend.py)."""

from __future__ import annotations

import numpy as np

from . import _dtypes as D
from . import _fusion as F
from . import _complex_ops
from . import _reduce
from ._array import ndarray
from ._backend import kernels
from ._creation import asarray, zeros
from ._dtype_functions import result_type
from ._elementwise import apply
from ._manip import _norm_axis, broadcast_to, permute_dims, reshape


def _arr(x, like=None):
    if isinstance(x, ndarray):
        return x
    return asarray(x, device=like.device if like is not None else None)


def _stored_2d(x):
    """Whether x is a stored, C-contiguous real array of 1 or 2 dimensions from element 0."""
    return (type(x) is ndarray and x._node is None and x._offset == 0 and 0 < len(x._shape) < 3
            and x._is_contiguous() and x._dtype.kind not in "cb")


def _matmul_stored(x1, x2):
    """matmul of two stored vectors or matrices of one real dtype, without the views the batched
    path builds (its Python took ~30 µs a call, more than a 1000 x 1000 matrix-vector product),
    or None where that path is needed."""
    if not (_stored_2d(x1) and _stored_2d(x2) and x1._dtype == x2._dtype and x1._device == x2._device):
        return None
    m, k = x1._shape if len(x1._shape) == 2 else (1, x1._shape[0])
    k2, n = x2._shape if len(x2._shape) == 2 else (x2._shape[0], 1)
    if k != k2 or k == 0 or m == 0 or n == 0:
        return None
    res = kernels("matmul").matmul(x1._device, x1._buf, x2._buf, 1, m, n, k, x1._dtype)
    shape = ((m,) if len(x1._shape) == 2 else ()) + ((n,) if len(x2._shape) == 2 else ())
    return ndarray._wrap(res, shape, x1._dtype, x1._device)


def matmul(x1, x2, /):
    fast = _matmul_stored(x1, x2)
    if fast is not None:
        return fast
    x1 = _arr(x1, x2 if isinstance(x2, ndarray) else None)
    x2 = _arr(x2, x1)
    if x1.ndim == 0 or x2.ndim == 0:
        raise ValueError("matmul: 0-d operands are not allowed (use multiply)")
    dt = result_type(x1, x2)
    if dt == D.bool_:
        raise TypeError("matmul of booleans is not supported")
    a = x1 if x1.ndim > 1 else reshape(x1, (1, x1.shape[0]))
    b = x2 if x2.ndim > 1 else reshape(x2, (x2.shape[0], 1))
    m, k = a.shape[-2:]
    k2, n = b.shape[-2:]
    if k != k2:
        raise ValueError(f"matmul: mismatch in the contracted dimension ({k} vs {k2})")
    batch_shape = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    a = broadcast_to(a.astype(dt, copy=False), batch_shape + (m, k))
    b = broadcast_to(b.astype(dt, copy=False), batch_shape + (k, n))
    batch = F.prod(batch_shape)
    if k == 0 or batch * m * n == 0:  # nothing to multiply: zeros (new buffers are zero-filled)
        out = zeros(batch_shape + (m, n), dtype=dt, device=x1.device)
        shape = batch_shape + ((m,) if x1.ndim > 1 else ()) + ((n,) if x2.ndim > 1 else ())
        return reshape(out, shape) if shape != out.shape else out
    if dt.kind == "c":
        res = _complex_ops.matmul(a, b, batch, m, n, k, dt, batch_shape + (m, n))
    else:
        res = kernels("matmul").matmul(x1.device, a._contiguous_buffer(), b._contiguous_buffer(), batch, m, n, k, dt)
    out = ndarray._wrap(res, batch_shape + (m, n), dt, x1.device)
    shape = batch_shape + ((m,) if x1.ndim > 1 else ()) + ((n,) if x2.ndim > 1 else ())
    if shape != out.shape:
        out = reshape(out, shape)
    return out


def tensordot(x1, x2, /, *, axes=2):
    if isinstance(axes, int):
        a_axes = list(range(x1.ndim - axes, x1.ndim))
        b_axes = list(range(axes))
    else:
        a_axes, b_axes = ([axes[0]] if isinstance(axes[0], int) else list(axes[0]),
                          [axes[1]] if isinstance(axes[1], int) else list(axes[1]))
    a_axes = [_norm_axis(a, x1.ndim) for a in a_axes]  # out of range raises, as NumPy's, not wraps
    b_axes = [_norm_axis(b, x2.ndim) for b in b_axes]
    for i, j in zip(a_axes, b_axes):
        if x1.shape[i] != x2.shape[j]:
            raise ValueError("tensordot: shape mismatch for sum")
    a_free = [i for i in range(x1.ndim) if i not in a_axes]
    b_free = [j for j in range(x2.ndim) if j not in b_axes]
    k = F.prod([x1.shape[i] for i in a_axes])
    a = reshape(permute_dims(x1, a_free + a_axes), (F.prod([x1.shape[i] for i in a_free]), k))
    b = reshape(permute_dims(x2, b_axes + b_free), (k, F.prod([x2.shape[j] for j in b_free])))
    out = matmul(a, b)
    return reshape(out, tuple(x1.shape[i] for i in a_free) + tuple(x2.shape[j] for j in b_free))


def vecdot(x1, x2, /, *, axis=-1):
    if x1.shape[axis] != x2.shape[axis]:
        raise ValueError("vecdot: the contracted dimensions differ")
    if isinstance(x1, ndarray) and x1.dtype.kind == "c":
        x1 = apply("conj", x1)  # the standard's vecdot conjugates the first operand
    prod = apply("multiply", x1, x2)
    return _reduce.sum(prod, axis=axis, dtype=prod.dtype)  # the operands' dtype, not sum's widened default


def outer(x1, x2, /):
    return apply("multiply", reshape(x1, (-1, 1)), reshape(x2, (1, -1)))
