"""Indexing: basic indices (ints, slices, None, Ellipsis) give views; a boolean mask, one
integer array, or integers and integer arrays on the leading axes give a copy (gathered on the
device; a mask's count is read on the host); __setitem__ writes scalars or arrays through basic
indices and scalars through boolean masks; take() and take_along_axis() gather along an axis."""

from __future__ import annotations

import operator

import numpy as np

from . import _dtypes as D
from . import _fusion as F
from . import _runtime as R
from ._array import flush_readers, ndarray
from ._creation import arange, asarray, empty
from ._elementwise import apply, assign, astype, where
from ._manip import _norm_axis, broadcast_to, reshape


def _is_basic(k):
    return k is None or k is Ellipsis or isinstance(k, slice) or (
        isinstance(k, (int, np.integer)) and not isinstance(k, bool)) or (
        isinstance(k, ndarray) and k.ndim == 0 and k.dtype.kind in "iu")


def _basic_view(x, key):
    if not isinstance(key, tuple):
        key = (key,)
    n_ell = sum(1 for k in key if k is Ellipsis)
    if n_ell > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    n_real = sum(1 for k in key if k is not None and k is not Ellipsis)
    if n_real > x.ndim:
        raise IndexError(f"too many indices for array: array is {x.ndim}-dimensional, but {n_real} were indexed")
    if n_ell == 0:
        key = key + (Ellipsis,)
    x._materialize()
    shape, strides, off = [], [], x._offset
    dim = 0
    for k in key:
        if k is Ellipsis:
            for _ in range(x.ndim - n_real):
                shape.append(x.shape[dim])
                strides.append(x._strides[dim])
                dim += 1
        elif k is None:
            shape.append(1)
            strides.append(0)
        elif isinstance(k, slice):
            start, stop, step = k.indices(x.shape[dim])
            n = len(range(start, stop, step))
            shape.append(n)
            strides.append(x._strides[dim] * step)
            if n:
                off += start * x._strides[dim]
            dim += 1
        else:
            i = operator.index(k)
            n = x.shape[dim]
            if not -n <= i < n:
                raise IndexError(f"index {i} is out of bounds for axis {dim} with size {n}")
            off += (i % n) * x._strides[dim]
            dim += 1
    return ndarray._wrap(x._buf, tuple(shape), x.dtype, x.device, off, tuple(strides), x._readonly)


def _sole_mask(key):
    """x[(mask,)] is x[mask]: a boolean array alone in a tuple is still the sole index (NumPy and
    array-api-strict take it; it was refused here)."""
    if isinstance(key, tuple) and len(key) == 1 and isinstance(key[0], (ndarray, np.ndarray)) \
            and key[0].dtype == np.bool_:
        return key[0]
    return key


def getitem(x, key):
    key = _sole_mask(key)
    keys = key if isinstance(key, tuple) else (key,)
    if all(_is_basic(k) for k in keys):
        return _basic_view(x, key)
    if not isinstance(key, tuple) and isinstance(key, (ndarray, np.ndarray, list)):
        idx = key
        if isinstance(idx, list):
            idx = np.asarray(idx)
        if idx.dtype == np.bool_:
            return _mask_read(x, idx)
        if idx.dtype.kind in "iu":
            return take(x, idx, axis=0) if idx.ndim == 1 else _take_nd(x, idx)
    if isinstance(key, tuple) and _ints_and_int_arrays(key):
        return _int_arrays_read(x, key)
    raise IndexError("metalcall.numpy supports basic indices, one boolean mask, or integers and integer "
                     "arrays only (x[i, j_array]); use take(x, indices, axis=...) for other mixes")


def _is_int(k):
    return isinstance(k, (int, np.integer)) and not isinstance(k, bool)


def _ints_and_int_arrays(keys):
    arrays = [k for k in keys if not _is_int(k)]
    return bool(arrays) and all(_int_array_like(k) for k in arrays)


def _int_array_like(k):
    if isinstance(k, ndarray):
        return k.dtype.kind in "iu"
    if isinstance(k, (np.ndarray, list)):
        return np.asarray(k).dtype.kind in "iu"
    return False


def _int_arrays_read(x, keys):
    """x[i0, i1, ...] with integers and integer arrays (the array API 2024.12's multi-axis integer
    indexing): the indices broadcast together and address the leading len(keys) axes, which become
    one gather of linear indices from x viewed as (prod(leading), *rest)."""

    k = len(keys)
    if k > x.ndim:
        raise IndexError(f"too many indices for array: array is {x.ndim}-dimensional, but {k} were indexed")
    lin, stride = 0, 1
    for d in reversed(range(k)):
        n, key = x.shape[d], keys[d]
        if _is_int(key):
            if not -n <= key < n:
                raise IndexError(f"index {key} is out of bounds for axis {d} with size {n}")
            idx = int(key) % n
        else:
            idx = key if isinstance(key, ndarray) else asarray(np.asarray(key), device=x.device)
            idx = idx.astype(D.int64, copy=False)
            idx = where(apply("less", idx, 0), apply("add", idx, n), idx)
        if isinstance(idx, int) and isinstance(lin, int):
            lin = idx * stride + lin
        elif isinstance(idx, int):  # Python ints only: an array made of them would go to the default device
            lin = apply("add", lin, idx * stride)
        else:
            lin = apply("add", apply("multiply", idx, stride), lin)
        stride *= n
    rest = x.shape[k:]
    flat = reshape(x, (stride,) + rest)
    return take(flat, lin, axis=0)  # shape: the indices' broadcast shape + rest


def _take_nd(x, idx):
    flat = reshape(idx, (-1,)) if isinstance(idx, ndarray) else idx.reshape(-1)
    out = take(x, flat, axis=0)
    return reshape(out, tuple(idx.shape) + x.shape[1:])


def _mask_read(x, mask):
    m = np.asarray(mask)  # the result's size depends on the mask: read it on the host
    if m.shape != x.shape[: m.ndim]:
        # NumPy (and the array API tests) accept an empty mask whose zero-length axes meet any length
        fits = m.ndim <= x.ndim and all(ms in (xs, 0) for ms, xs in zip(m.shape, x.shape))
        if not (fits and m.size == 0):
            raise IndexError(f"boolean index of shape {m.shape} does not match the array's shape {x.shape}")
        return empty((0,) + x.shape[m.ndim:], dtype=x.dtype, device=x.device)
    flat_idx = np.flatnonzero(m).astype(np.int64)
    rest = x.shape[m.ndim:]
    src = reshape(x, (F.prod(m.shape),) + rest)
    return take(src, flat_idx, axis=0)


# mnp_take: out[o, j, in_] = src[o, idx[j], in_] of src viewed as (outer, n, inner). GRID and
# COORDS give each element's (o, j, in_): from its flat index (the GPUs: one thread an element),
# or on the CPU from a grid whose coordinates need no division per element (x86 divides one
# element at a time: x[idx] of 1e5 indices into 1e6 float32 took 394 µs, NumPy 148), (m, outer)
# where inner == 1 ("rows", inner a constant 1: a row's stores are contiguous) and (inner,
# m * outer) otherwise ("blocks", one division a row).
_TAKE_SRC = """#include <metal_stdlib>
using namespace metal;
kernel void mnp_take(device const ELEM* src [[buffer(0)]], device const long* idx [[buffer(1)]],
                     constant long* P [[buffer(2)]], device ELEM* out [[buffer(3)]],
                     GRID [[thread_position_in_grid]]) {
  // P: n (axis length), m (number of indices), inner
  const long n = P[0], m = P[1];
COORDS
  long k = idx[j];
  if (k < 0) k += n;
  out[(o * ulong(m) + j) * ulong(inner) + in_] = (k >= 0 && k < n) ? src[(o * ulong(n) + ulong(k)) * ulong(inner) + in_] : ZERO;
}
"""
_TAKE_FORMS = {
    "flat": ("uint gid", "  const long inner = P[2];\n  const ulong i = gid, in_ = i % ulong(inner), j = (i / ulong(inner)) % ulong(m),\n"
             "              o = i / (ulong(inner) * ulong(m));"),
    "rows": ("uint2 g", "  const long inner = 1;\n  const ulong in_ = 0, j = g.x, o = g.y;"),
    "blocks": ("uint2 g", "  const long inner = P[2];\n  const ulong in_ = g.x, j = g.y % ulong(m), o = g.y / ulong(m);"),
}


def take(x, indices, /, *, axis=None):
    """Gathers x along axis (NumPy's take; negative indices count from the end). Indices outside
    [-n, n) give 0 instead of raising (checking them would need the host)."""

    if axis is None:
        if x.ndim != 1:
            x = reshape(x, (-1,))
        axis = 0
    axis = _norm_axis(axis, x.ndim) if x.ndim else 0  # an axis out of [-ndim, ndim) raises (2025.12)
    idx = asarray(indices, device=x.device)
    if idx.dtype.kind not in "iu":
        raise IndexError("take needs integer indices")
    if idx.dtype != D.int64:
        idx = idx.astype(D.int64)
    idx_shape = idx.shape
    if idx.ndim != 1:
        idx = reshape(idx, (-1,))
    src = x._contiguous_buffer()
    outer = F.prod(x.shape[:axis])
    n = x.shape[axis]
    inner = F.prod(x.shape[axis + 1:])
    m = idx.size
    out = empty(x.shape[:axis] + idx_shape + x.shape[axis + 1:], dtype=x.dtype, device=x.device)
    total = outer * m * inner
    if total:
        if n == 0:
            raise IndexError("cannot take from an empty axis")
        form, grid = "flat", total
        if x.device.backend == "cpu":
            form, grid = ("rows", (m, outer)) if inner == 1 else ("blocks", (inner, m * outer))
        param, coords = _TAKE_FORMS[form]
        text = _TAKE_SRC.replace("GRID", param).replace("COORDS", coords)
        kern = R.kernel(x.device, text.replace("ZERO", D.zero(x.dtype)).replace("ELEM", D.msl(x.dtype)), "mnp_take")
        P = x.device.asarray(np.array([n, m, inner], np.int64))
        R.launch(kern, grid, src, idx._contiguous_buffer(), P, out._buf)
    return out


_PUT_SRC = """#include <metal_stdlib>
using namespace metal;
kernel void mnp_put(device ELEM* dst [[buffer(0)]], device const long* idx [[buffer(1)]],
                    device const ELEM* val [[buffer(2)]], constant long* P [[buffer(3)]],
                    uint gid [[thread_position_in_grid]]) {
  // P: n (axis length), inner, element offset of dst; val is (m, inner) C-contiguous
  ulong i = gid;
  long n = P[0], inner = P[1];
  ulong j = i / ulong(inner), in_ = i % ulong(inner);
  long k = idx[j];
  if (k < 0) k += n;
  if (k >= 0 && k < n) dst[P[2] + k * inner + long(in_)] = val[i];
}
"""


def _put(x, idx, value):
    """x[idx] = value along axis 0 of a C-contiguous x (indices out of range are skipped; with
    repeated indices one of the writes wins, as on every GPU array library)."""

    if not x._is_contiguous():
        raise NotImplementedError("metalcall.numpy: x[indices] = value needs a C-contiguous x (copy it first)")
    idx = asarray(idx, device=x.device)
    if idx.ndim != 1 or idx.dtype.kind not in "iu":
        raise IndexError("x[indices] = value takes one 1-D integer index array")
    idx = idx.astype(D.int64, copy=False)
    m, inner = idx.size, F.prod(x.shape[1:])
    if m * inner == 0:
        return
    val = value if isinstance(value, ndarray) else asarray(value, device=x.device)
    val = broadcast_to(astype(val, x.dtype, copy=False), (m,) + x.shape[1:])

    flush_readers(x._buf)
    kern = R.kernel(x.device, _PUT_SRC.replace("ELEM", D.msl(x.dtype)), "mnp_put")
    P = x.device.asarray(np.array([x.shape[0], inner, x._offset], np.int64))
    R.launch(kern, m * inner, x._buf, idx._contiguous_buffer(), val._contiguous_buffer(), P)


def setitem(x, key, value):
    if isinstance(key, list):
        key = np.asarray(key)
    key = _sole_mask(key)
    keys = key if isinstance(key, tuple) else (key,)
    if all(_is_basic(k) for k in keys):
        assign(_basic_view(x, key), value)
        return
    if not isinstance(key, tuple) and isinstance(key, (ndarray, np.ndarray)) and key.dtype == np.bool_:
        mask = asarray(key, device=x.device)
        if mask.shape != x.shape[: mask.ndim]:
            raise IndexError(f"boolean index of shape {mask.shape} does not match the array's shape {x.shape}")
        if mask.ndim < x.ndim:
            mask = reshape(mask, mask.shape + (1,) * (x.ndim - mask.ndim))
        if (isinstance(value, ndarray) and value.size != 1) or isinstance(value, (list, tuple, np.ndarray)):
            # x[mask] = values: the positions are read on the host, then scattered on the device
            m = np.asarray(key)
            rows = np.flatnonzero(m).astype(np.int64)
            if x._readonly:
                raise ValueError("metalcall.numpy: this array is a read-only view")
            x._materialize()
            if not x._is_contiguous():
                raise NotImplementedError("metalcall.numpy: x[mask] = values needs a C-contiguous x")
            _put(reshape(x, (F.prod(m.shape),) + x.shape[m.ndim:]), rows, value)
            return
        if isinstance(value, ndarray):
            value = value.item()
        if not isinstance(value, (bool, int, float, complex, np.generic)):
            raise NotImplementedError("metalcall.numpy: x[mask] = value takes a scalar value")
        assign(x, where(mask, value, x).astype(x.dtype, copy=False), internal=True)
        return
    if not isinstance(key, tuple) and isinstance(key, (ndarray, np.ndarray, list)):
        if x._readonly:
            raise ValueError("metalcall.numpy: this array is a read-only view")
        x._materialize()
        _put(x, key, value)
        return
    raise IndexError("metalcall.numpy: assignment supports basic indices, boolean masks and one integer array")


def take_along_axis(x, indices, /, *, axis=-1):
    """The array API's take_along_axis (2024.12): out[..., j, ...] = x[..., indices[..., j, ...], ...]
    along axis; the other axes of x and indices broadcast. One gather of linear indices."""

    idx = indices if isinstance(indices, ndarray) else asarray(indices, device=x.device)
    if idx.ndim != x.ndim:
        raise ValueError(f"take_along_axis: indices have {idx.ndim} dimensions, x has {x.ndim}")
    if idx.dtype.kind not in "iu":
        raise IndexError("take_along_axis needs integer indices")
    if not -x.ndim <= axis < x.ndim:
        raise IndexError(f"axis {axis} is out of bounds for an array of dimension {x.ndim}")
    axis %= x.ndim
    n = x.shape[axis]
    other = [0 if d == axis else np.broadcast_shapes((x.shape[d],), (idx.shape[d],))[0] for d in range(x.ndim)]
    out_shape = tuple(idx.shape[d] if d == axis else other[d] for d in range(x.ndim))
    src_shape = tuple(n if d == axis else other[d] for d in range(x.ndim))
    xb = broadcast_to(x, src_shape)
    if F.prod(out_shape) == 0:
        return empty(out_shape, dtype=x.dtype, device=x.device)
    i = idx.astype(D.int64, copy=False)
    lin, stride = 0, 1
    for d in reversed(range(x.ndim)):
        if d == axis:
            c = where(apply("less", i, 0), apply("add", i, n), i)
        else:
            shape = [1] * x.ndim
            shape[d] = out_shape[d]
            c = reshape(arange(out_shape[d], dtype=D.int64, device=x.device), tuple(shape))
        term = apply("multiply", c, stride)
        lin = term if isinstance(lin, int) else apply("add", term, lin)
        stride *= src_shape[d]
    lin = broadcast_to(lin, out_shape)
    return take(reshape(xb, (-1,)), lin, axis=0)
