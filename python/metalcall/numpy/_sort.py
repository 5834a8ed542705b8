"""sort and argsort (stable) along any axis, on _kernels.sort's (outer, n) row kernels: the axis
is moved last and made contiguous first."""

from __future__ import annotations

from . import _dtypes as D
from . import _fusion as F
from ._array import ndarray
from ._backend import kernels
from ._creation import asarray
from ._manip import _norm_axis, moveaxis


def _prep(x, axis):
    if not isinstance(x, ndarray):
        x = asarray(x)
    if x.ndim == 0:
        raise ValueError("sort needs at least one dimension")
    axis = _norm_axis(axis, x.ndim)  # an axis out of [-ndim, ndim) raises (2025.12), not wraps
    y = moveaxis(x, axis, -1) if axis != x.ndim - 1 else x
    return x, y, axis


def _back(res, y, dtype, x, axis):
    out = ndarray._wrap(res, y.shape, dtype, x.device)
    return moveaxis(out, -1, axis) if axis != x.ndim - 1 else out


def sort(x, /, *, axis=-1, descending=False, stable=True):
    x, y, axis = _prep(x, axis)
    D.refuse_complex("sort", x.dtype)
    n = y.shape[-1]
    res = kernels("sort").sort(x.device, y._contiguous_buffer(), x.dtype, F.prod(y.shape[:-1]), n,
                               descending=descending)
    return _back(res, y, x.dtype, x, axis)


def argsort(x, /, *, axis=-1, descending=False, stable=True):
    x, y, axis = _prep(x, axis)
    D.refuse_complex("argsort", x.dtype)
    n = y.shape[-1]
    res = kernels("sort").argsort(x.device, y._contiguous_buffer(), x.dtype, F.prod(y.shape[:-1]), n,
                                  descending=descending)
    return _back(res, y, D.int64, x, axis)
