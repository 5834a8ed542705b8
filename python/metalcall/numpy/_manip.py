"""Shape manipulation: views where NumPy gives views (permute_dims, expand_dims, squeeze, flip,
broadcast_to, reshape of contiguous data), copies otherwise (concat, stack, reshape of a
non-contiguous view, roll, meshgrid). Lazy inputs are evaluated first (views need a buffer)."""

from __future__ import annotations

import operator

import numpy as np

import metalcall as mc

from . import _fusion as F
from ._array import ndarray
from ._creation import asarray, empty
from ._dtype_functions import result_type
from ._elementwise import assign


def _norm_axis(axis, ndim):
    if not -ndim <= axis < ndim:
        raise IndexError(f"axis {axis} is out of bounds for an array of dimension {ndim}")
    return axis % ndim


def _view(x, shape, strides, offset, readonly=None):
    x._materialize()
    return ndarray._wrap(x._buf, shape, x.dtype, x.device, offset, strides,
                         x._readonly if readonly is None else readonly)


def reshape(x, /, shape, *, copy=None):
    if isinstance(shape, (int, np.integer)):
        shape = (int(shape),)
    shape = list(shape)
    if shape.count(-1) > 1:
        raise ValueError("can only specify one unknown dimension")
    if -1 in shape:
        known = F.prod([s for s in shape if s != -1])
        if known == 0 or x.size % known:
            raise ValueError(f"cannot reshape array of size {x.size} into shape {tuple(shape)}")
        shape[shape.index(-1)] = x.size // known
    shape = tuple(int(s) for s in shape)
    if F.prod(shape) != x.size:
        raise ValueError(f"cannot reshape array of size {x.size} into shape {shape}")
    if x.is_lazy and not copy:
        # A lazy result is contiguous once evaluated: re-shaping the expression keeps it lazy.
        x._materialize()
    if copy:
        x = x.copy()
    elif not x._is_contiguous():
        if copy is False:
            raise ValueError("reshape(copy=False) of a non-contiguous view needs a copy")
        x = x.copy()
    x._materialize()
    return _view(x, shape, F.contiguous_strides(shape), x._offset)


def permute_dims(x, /, axes):
    axes = tuple(_norm_axis(a, x.ndim) for a in axes)
    if sorted(axes) != list(range(x.ndim)):
        raise ValueError(f"axes {axes} are not a permutation of {x.ndim} dimensions")
    x._materialize()
    return _view(x, tuple(x.shape[a] for a in axes), tuple(x._strides[a] for a in axes), x._offset)


def matrix_transpose(x, /):
    if x.ndim < 2:
        raise ValueError("matrix_transpose needs at least 2 dimensions")
    axes = list(range(x.ndim))
    axes[-1], axes[-2] = axes[-2], axes[-1]
    return permute_dims(x, axes)


def diagonal(x, /, *, offset=0):
    """The `offset` diagonal of each matrix of a stack: a view, as NumPy's."""
    x = x if isinstance(x, ndarray) else asarray(x)
    if x.ndim < 2:
        raise mc.ArgumentError(f"linalg.diagonal: needs an array of at least 2 dimensions, got shape {x.shape}")
    offset = operator.index(offset)
    m, n = x.shape[-2:]
    x._materialize()
    rs, cs = x._strides[-2:]
    start = x._offset + (offset * cs if offset >= 0 else -offset * rs)
    length = max(0, min(m, n - offset) if offset >= 0 else min(m + offset, n))
    if length == 0:
        start = x._offset
    return ndarray._wrap(x._buf, x.shape[:-2] + (length,), x.dtype, x.device, start, x._strides[:-2] + (rs + cs,),
                         x._readonly)


def moveaxis(x, source, destination, /):
    src = [_norm_axis(a, x.ndim) for a in ((source,) if isinstance(source, int) else source)]
    dst = [_norm_axis(a, x.ndim) for a in ((destination,) if isinstance(destination, int) else destination)]
    order = [a for a in range(x.ndim) if a not in src]
    for d, s in sorted(zip(dst, src)):
        order.insert(d, s)
    return permute_dims(x, order)


def expand_dims(x, /, axis=0):
    """One singleton axis per entry of `axis` (an int or, since 2025.12, a tuple), each entry a
    position in the result (of ndim + len(axis) axes); repeated positions are an error."""
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    nd = x.ndim + len(axes)
    axes = sorted(_norm_axis(operator.index(a), nd) for a in axes)
    if len(set(axes)) != len(axes):  # inserting twice at one position would give a wrong shape
        raise ValueError(f"expand_dims: repeated axis positions in {axis!r}")
    shape, strides = list(x.shape), list(x._strides)
    for a in axes:
        shape.insert(a, 1)
        strides.insert(a, 0)
    x._materialize()
    return _view(x, tuple(shape), tuple(strides), x._offset)


def squeeze(x, /, axis=None):
    if axis is None:
        axes = [i for i, s in enumerate(x.shape) if s == 1]
    else:
        axes = [_norm_axis(a, x.ndim) for a in ((axis,) if isinstance(axis, int) else axis)]
        for a in axes:
            if x.shape[a] != 1:
                raise ValueError("cannot select an axis to squeeze out which has size not equal to one")
    x._materialize()
    keep = [i for i in range(x.ndim) if i not in axes]
    return _view(x, tuple(x.shape[i] for i in keep), tuple(x._strides[i] for i in keep), x._offset)


def flip(x, /, *, axis=None):
    axes = range(x.ndim) if axis is None else [_norm_axis(a, x.ndim) for a in ((axis,) if isinstance(axis, int) else axis)]
    x._materialize()
    strides, off = list(x._strides), x._offset
    for a in axes:
        if x.shape[a] > 0:
            off += (x.shape[a] - 1) * strides[a]
        strides[a] = -strides[a]
    return _view(x, x.shape, tuple(strides), off)


def broadcast_to(x, /, shape):
    shape = tuple(int(s) for s in shape)
    if np.broadcast_shapes(x.shape, shape) != shape:
        raise ValueError(f"cannot broadcast shape {x.shape} to {shape}")
    x._materialize()
    return _view(x, shape, F.broadcast_strides(x.shape, x._strides, shape), x._offset, readonly=True)


def broadcast_arrays(*arrays):
    shape = np.broadcast_shapes(*[a.shape for a in arrays])
    return tuple(broadcast_to(a, shape) for a in arrays)  # a tuple since 2025.12 (a list before)


def broadcast_shapes(*shapes):
    """The array API's broadcast_shapes (2025.12): a tuple of ints, () for no shapes, ValueError
    for shapes that do not broadcast (NumPy's rules, which are the standard's)."""
    return tuple(int(s) for s in np.broadcast_shapes(*(tuple(operator.index(d) for d in s) for s in shapes)))


def concat(arrays, /, *, axis=0):
    arrays = list(arrays)
    if axis is None:
        arrays = [reshape(a, (-1,)) for a in arrays]
        axis = 0
    dt = result_type(*arrays)
    nd = arrays[0].ndim
    axis = _norm_axis(axis, nd)
    shape = list(arrays[0].shape)
    shape[axis] = sum(a.shape[axis] for a in arrays)
    out = empty(tuple(shape), dtype=dt, device=arrays[0].device)
    start = 0
    for a in arrays:
        if a.ndim != nd or any(a.shape[i] != shape[i] for i in range(nd) if i != axis):
            raise ValueError("all input arrays must have the same shape except along the concatenation axis")
        idx = [slice(None)] * nd
        idx[axis] = slice(start, start + a.shape[axis])
        assign(out[tuple(idx)], a)
        start += a.shape[axis]
    return out


def stack(arrays, /, *, axis=0):
    arrays = list(arrays)
    if not arrays:
        raise ValueError("need at least one array to stack")
    nd = arrays[0].ndim + 1
    axis = _norm_axis(axis, nd)
    return concat([expand_dims(a, axis=axis) for a in arrays], axis=axis)


def unstack(x, /, *, axis=0):
    axis = _norm_axis(axis, x.ndim)
    idx = [slice(None)] * x.ndim
    out = []
    for i in range(x.shape[axis]):
        idx[axis] = i
        out.append(x[tuple(idx)])
    return tuple(out)


def roll(x, /, shift, *, axis=None):
    if axis is None:
        return reshape(roll(reshape(x, (-1,)), shift, axis=0), x.shape)
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    shifts = (shift,) * len(axes) if isinstance(shift, int) else tuple(shift)
    out = x
    for a, s in zip(axes, shifts):
        a = _norm_axis(a, x.ndim)
        n = x.shape[a]
        if n == 0:
            continue
        s %= n
        if s == 0:
            continue
        lo = [slice(None)] * x.ndim
        hi = [slice(None)] * x.ndim
        lo[a] = slice(n - s, None)
        hi[a] = slice(0, n - s)
        out = concat([out[tuple(lo)], out[tuple(hi)]], axis=a)
    return out if out is not x else x.copy()


def tile(x, repetitions, /):
    reps = tuple(repetitions)
    nd = max(x.ndim, len(reps))
    reps = (1,) * (nd - len(reps)) + reps
    x = reshape(x, (1,) * (nd - x.ndim) + x.shape)
    for a, r in enumerate(reps):
        if r != 1:
            x = concat([x] * r, axis=a) if r > 0 else x[tuple(slice(0, 0) if i == a else slice(None) for i in range(nd))]
    return x.copy() if not x.is_lazy else x


def meshgrid(*arrays, indexing="xy"):
    n = len(arrays)
    if n == 0:
        return ()
    sizes = [a.size for a in arrays]
    if indexing == "xy" and n > 1:
        sizes[0], sizes[1] = sizes[1], sizes[0]
    out = []
    for i, a in enumerate(arrays):
        shape = [1] * n
        ax = i
        if indexing == "xy" and n > 1 and i < 2:
            ax = 1 - i
        shape[ax] = a.size
        out.append(broadcast_to(reshape(a, tuple(shape)), tuple(sizes)).copy())
    return tuple(out)  # a tuple since 2025.12 (a list before)
