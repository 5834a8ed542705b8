"""Reductions (sum, prod, mean, var, std, min, max, any, all, argmax, argmin) over any axes with
keepdims, and cumulative_sum, on the (outer, n, inner) kernels of _kernels (see _backend.py).
Reduced axes are moved last and the data made contiguous when one axis is not enough."""

from __future__ import annotations

import numpy as np

from . import _dtypes as D
from . import _fusion as F
from . import _runtime as R
from ._array import ndarray
from ._backend import kernels
from ._creation import asarray, empty, ones, zeros
from ._elementwise import apply
from ._manip import concat, permute_dims, reshape


def _axes(axis, ndim):
    if axis is None:
        return tuple(range(ndim))
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    out = []
    for a in axes:
        if not -ndim <= a < ndim:
            raise np.exceptions.AxisError(f"axis {a} is out of bounds for array of dimension {ndim}")
        out.append(int(a) % ndim)
    if len(set(out)) != len(out):
        raise ValueError("duplicate value in 'axis'")
    return tuple(sorted(out))


def _layout(x, axes):
    """(contiguous buffer, outer, n, inner, kept shape) for reducing `axes` of x."""
    if x._node is None and x._offset == 0 and len(axes) == x.ndim and x._strides == F.contiguous_strides(x._shape):
        return x._buf, 1, x.size, 1, ()  # the common full reduction of a whole array: no views to build

    kept = tuple(s for i, s in enumerate(x.shape) if i not in axes)
    n = F.prod([x.shape[a] for a in axes])
    if len(axes) == 1 or (axes and axes == tuple(range(axes[0], axes[-1] + 1))):
        # contiguous run of axes: (outer, n, inner) of the array as it is
        outer = F.prod(x.shape[: axes[0]]) if axes else F.prod(kept)
        inner = F.prod(x.shape[axes[-1] + 1:]) if axes else 1
        return x._contiguous_buffer(), outer, n, inner, kept
    order = [i for i in range(x.ndim) if i not in axes] + list(axes)
    y = permute_dims(x, order)
    return y._contiguous_buffer(), F.prod(kept), n, 1, kept


def _finish(buf, kept, dtype, x, axes, keepdims):
    out = ndarray._wrap(buf, kept, dtype, x.device)
    if keepdims:
        shape = tuple(1 if i in axes else s for i, s in enumerate(x.shape))
        out = reshape(out, shape)
    return out


def _asarray(x):
    if isinstance(x, ndarray):
        return x
    return asarray(x)


def _sum_dtype(dt, dtype, dev):
    if dtype is not None:
        return D.as_dtype(dtype, dev)
    if dt == D.bool_ or dt.kind == "i":
        return D.int64
    if dt.kind == "u":
        return D.uint64
    return dt


# Complex reductions and scans: _complex_ops.py registers them here (it is made of this module's functions;
# metalcall.numpy imports it).
COMPLEX = {}

_reduce_kernels = None  # the reduce kernels module, looked up on first use (imported lazily)


def _refuse_empty(op, n, outputs):
    """NumPy's error for min/max/argmin/argmax over an empty axis with outputs to fill."""
    if n == 0 and outputs and op in ("min", "max", "argmin", "argmax"):
        raise ValueError(f"zero-size array to reduction operation {op} which has no identity")


def _whole_of_stored(x, axis, keepdims, op, out_dtype):
    """The 0-d result of `op` over the whole of a stored, contiguous, real array (float(mnp.sum(x)),
    float(mnp.mean(x))), or None for anything else: no axes, views or shapes to work out, and the
    fewest Python steps (mnp.sum of 1000 float32 on the CPU: 4.1 -> 3.7 µs); Python time here is in
    series with a short GPU reduction. The mean of nothing is left to mean() (NaN)."""
    global _reduce_kernels
    if not (axis is None and not keepdims and type(x) is ndarray and x._node is None and x._offset == 0
            and x._strides == F.contiguous_strides(x._shape) and x._dtype.kind != "c" and out_dtype.kind != "c"):
        return None
    n = F.prod(x._shape)
    if n == 0:
        if op == "mean":
            return None
        _refuse_empty(op, n, 1)
    if _reduce_kernels is None:  # the first reduction: the kernels module (imported lazily)
        _reduce_kernels = kernels("reduce")
    return ndarray._scalar_result(_reduce_kernels.whole(x._device, x._buf, x._dtype, n, op, out_dtype),
                                  out_dtype, x._device)


def _run(x, axis, keepdims, op, out_dtype):
    global _reduce_kernels
    whole = _whole_of_stored(x, axis, keepdims, op, out_dtype)
    if whole is not None:
        return whole
    x = _asarray(x)
    if x.dtype.kind == "c" or out_dtype.kind == "c":
        return COMPLEX["reduce"](x, axis, keepdims, op, out_dtype)
    if _reduce_kernels is None:
        _reduce_kernels = kernels("reduce")
    axes = _axes(axis, x.ndim)
    buf, outer, n, inner, kept = _layout(x, axes)
    _refuse_empty(op, n, outer * inner)
    res = _reduce_kernels.reduce(x.device, buf, x.dtype, outer, n, inner, op, out_dtype)
    return _finish(res, kept, out_dtype, x, axes, keepdims)


def sum(x, /, *, axis=None, dtype=None, keepdims=False):
    x = _asarray(x)
    return _run(x, axis, keepdims, "sum", _sum_dtype(x.dtype, dtype, x.device))


def prod(x, /, *, axis=None, dtype=None, keepdims=False):
    x = _asarray(x)
    return _run(x, axis, keepdims, "prod", _sum_dtype(x.dtype, dtype, x.device))


def min(x, /, *, axis=None, keepdims=False):
    x = _asarray(x)
    return _run(x, axis, keepdims, "min", x.dtype)


def max(x, /, *, axis=None, keepdims=False):
    x = _asarray(x)
    return _run(x, axis, keepdims, "max", x.dtype)


def any(x, /, *, axis=None, keepdims=False):
    return _run(x, axis, keepdims, "any", D.bool_)


def all(x, /, *, axis=None, keepdims=False):
    return _run(x, axis, keepdims, "all", D.bool_)


def _argred(x, axis, keepdims, op):
    x = _asarray(x)
    if axis is None:
        # A stored contiguous array's flat index is its own: the whole-array runner, without the
        # reshape and _run's layers (int(mnp.argmax(x)) of 4000 float32: 13 -> 7 µs).
        whole = None if keepdims else _whole_of_stored(x, None, False, op, D.int64)
        if whole is not None:
            return whole
        r = _run(reshape(x, (-1,)), 0, False, op, D.int64)
        if keepdims:
            r = reshape(r, (1,) * x.ndim)
        return r
    return _run(x, axis, keepdims, op, D.int64)


def argmax(x, /, *, axis=None, keepdims=False):
    return _argred(x, axis, keepdims, "argmax")


def argmin(x, /, *, axis=None, keepdims=False):
    return _argred(x, axis, keepdims, "argmin")


def _float_dtype(x, dtype=None):
    if dtype is not None:
        return D.as_dtype(dtype, x.device)
    return x.dtype if x.dtype.kind in "fc" else D.default_float(x.device)


def _moments(x, axis, correction, keepdims):
    x = _asarray(x)
    D.refuse_complex("var/std", x.dtype)
    axes = _axes(axis, x.ndim)
    dt = _float_dtype(x)
    buf, outer, n, inner, kept = _layout(x, axes)
    mean, var = kernels("reduce").moments(x.device, buf, x.dtype, outer, n, inner, correction, dt)
    return _finish(mean, kept, dt, x, axes, keepdims), _finish(var, kept, dt, x, axes, keepdims)


def mean(x, /, *, axis=None, keepdims=False, dtype=None):
    x = _asarray(x)
    dt = _float_dtype(x, dtype)
    whole = _whole_of_stored(x, axis, keepdims, "mean", dt)
    if whole is not None:
        return whole
    axes = _axes(axis, x.ndim)
    n = F.prod([x.shape[a] for a in axes])
    if not n or x.dtype.kind == "c" or dt.kind == "c":
        s = _run(x, axis, keepdims, "sum", dt)
        return s / n if n else s * float("nan")
    # One reduction whose last stage divides (accumulated in float for half, as NumPy does), not a
    # sum and then a division kernel.
    buf, outer, n, inner, kept = _layout(x, axes)
    res = kernels("reduce").mean(x.device, buf, x.dtype, outer, n, inner, dt)
    return _finish(res, kept, dt, x, axes, keepdims)


def var(x, /, *, axis=None, correction=0.0, keepdims=False, ddof=None):
    if ddof is not None:
        correction = ddof
    return _moments(x, axis, correction, keepdims)[1]


def std(x, /, *, axis=None, correction=0.0, keepdims=False, ddof=None):
    return apply("sqrt", var(x, axis=axis, correction=correction, keepdims=keepdims, ddof=ddof))


def cumulative_sum(x, /, *, axis=None, dtype=None, include_initial=False):
    x = _asarray(x)
    if axis is None:
        if x.ndim > 1:
            raise ValueError("cumulative_sum needs axis= for arrays of more than one dimension")
        x = reshape(x, (-1,)) if x.ndim == 0 else x
        axis = 0
    axis = _axes(axis, x.ndim)[0]
    dt = _sum_dtype(x.dtype, dtype, x.device)
    if x.dtype.kind == "c" or dt.kind == "c":
        return COMPLEX["cumulative_sum"](x, axis, dt, include_initial)
    buf = x._contiguous_buffer()
    outer, n, inner = F.prod(x.shape[:axis]), x.shape[axis], F.prod(x.shape[axis + 1:])
    res = kernels("scan").cumsum(x.device, buf, x.dtype, outer, n, inner, dt)
    out = ndarray._wrap(res, x.shape, dt, x.device)
    if include_initial:
        shape = list(x.shape)
        shape[axis] = 1
        out = concat([zeros(tuple(shape), dtype=dt, device=x.device), out], axis=axis)
    return out


_CUMPROD = """#include <metal_stdlib>
using namespace metal;
kernel void mnp_cumprod(device const SRC* src [[buffer(0)]], device DST* dst [[buffer(1)]],
                        constant long* P [[buffer(2)]], uint t [[thread_position_in_grid]]) {
  // One thread per (outer, inner) row, multiplying along n; P: n, inner
  const ulong n = ulong(P[0]), inner = ulong(P[1]);
  const ulong base = (ulong(t) / inner) * n * inner + ulong(t) % inner;
  ACC acc = ACC(1);
  for (ulong j = 0; j < n; ++j) {
    acc = ACC(acc * ACC(src[base + j * inner]));
    dst[base + j * inner] = DST(acc);
  }
}
"""


def cumulative_prod(x, /, *, axis=None, dtype=None, include_initial=False):
    """The array API's cumulative_prod (2024.12). A sequential product per row (one thread per row
    of the other axes): simple, and as exact as NumPy's left-to-right loop; a scan would parallelise
    long rows. Integers multiply in the unsigned type of their width, so overflow wraps as NumPy."""

    x = _asarray(x)
    if axis is None:
        if x.ndim > 1:
            raise ValueError("cumulative_prod needs axis= for arrays of more than one dimension")
        x = reshape(x, (-1,)) if x.ndim == 0 else x
        axis = 0
    axis = _axes(axis, x.ndim)[0]
    dt = _sum_dtype(x.dtype, dtype, x.device)
    outer, n, inner = F.prod(x.shape[:axis]), x.shape[axis], F.prod(x.shape[axis + 1:])
    if x.dtype.kind == "c" or dt.kind == "c":
        out = COMPLEX["cumulative_prod"](x, axis, dt)
    else:
        out = empty(x.shape, dtype=dt, device=x.device)
    if outer * n * inner and out.dtype.kind != "c":
        if dt.kind == "f":
            # float16 accumulates in float (NumPy rounds each step to half: the last bits may differ)
            acc = "float" if dt == D.float16 else D.msl(dt)
        else:  # never a signed or promoted-to-int product: no undefined overflow
            acc = "ulong" if dt.itemsize == 8 else "uint"
        src = _CUMPROD.replace("SRC", D.msl(x.dtype)).replace("DST", D.msl(dt)).replace("ACC", acc)
        P = x.device.asarray(np.array([n, inner], np.int64))
        R.launch(R.kernel(x.device, src, "mnp_cumprod"), outer * inner, x._contiguous_buffer(), out._buf, P)
    if include_initial:
        shape = list(x.shape)
        shape[axis] = 1
        out = concat([ones(tuple(shape), dtype=dt, device=x.device), out], axis=axis)
    return out
