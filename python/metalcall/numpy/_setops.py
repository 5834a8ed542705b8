"""Data-dependent functions: nonzero, unique_*, repeat (their result shapes depend on values, so
the counts are read on the host; gathering runs on the device), and searchsorted (a binary-search
kernel, one thread per needle), count_nonzero, diff."""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from . import _dtypes as D
from . import _reduce
from . import _runtime as R
from ._array import ndarray
from ._creation import asarray, empty
from ._elementwise import apply
from ._indexing import take
from ._manip import concat, reshape

UniqueAllResult = namedtuple("UniqueAllResult", ["values", "indices", "inverse_indices", "counts"])
UniqueCountsResult = namedtuple("UniqueCountsResult", ["values", "counts"])
UniqueInverseResult = namedtuple("UniqueInverseResult", ["values", "inverse_indices"])


def _up(a, like):
    return asarray(np.asarray(a, order="C"), device=like.device)  # ascontiguousarray would make 0-d 1-d


def nonzero(x, /):
    """The indices of the non-zero elements, one int64 array per dimension (host-computed count)."""
    if x.ndim == 0:
        raise ValueError("nonzero of a 0-d array is not allowed; use nonzero(atleast_1d(x))")
    return tuple(_up(i.astype(np.int64), x) for i in np.nonzero(x._host(flush=False)))


def _unique(x, **kw):
    h = np.asarray(x._host(flush=False)).reshape(-1)
    return np.unique(h, equal_nan=False, **kw)


def unique_values(x, /):
    return _up(_unique(x), x)


def unique_counts(x, /):
    v, c = _unique(x, return_counts=True)
    return UniqueCountsResult(_up(v, x), _up(c.astype(np.int64), x))


def unique_inverse(x, /):
    v, inv = _unique(x, return_inverse=True)
    return UniqueInverseResult(_up(v, x), _up(inv.astype(np.int64).reshape(x.shape), x))


def unique_all(x, /):
    v, i, inv, c = _unique(x, return_index=True, return_inverse=True, return_counts=True)
    return UniqueAllResult(_up(v, x), _up(i.astype(np.int64), x), _up(inv.astype(np.int64).reshape(x.shape), x),
                           _up(c.astype(np.int64), x))


def repeat(x, repeats, /, *, axis=None):
    if axis is None:
        x = reshape(x, (-1,))
        axis = 0
    axis %= x.ndim
    n = x.shape[axis]
    reps = repeats.to_numpy() if isinstance(repeats, ndarray) else np.asarray(repeats)
    if np.any(reps < 0):
        raise ValueError("repeats may not be negative")
    idx = np.repeat(np.arange(n, dtype=np.int64), reps)
    return take(x, _up(idx, x), axis=axis)


_SEARCH = """#include <metal_stdlib>
using namespace metal;
inline bool mnp_lt(ELEM a, ELEM b) { return LESS; }
kernel void mnp_searchsorted(device const ELEM* hay [[buffer(0)]], device const ELEM* needles [[buffer(1)]],
                             constant long& n [[buffer(2)]], constant long& right [[buffer(3)]],
                             device long* out [[buffer(4)]], uint i [[thread_position_in_grid]]) {
  ELEM v = needles[i];
  long lo = 0, hi = n;
  while (lo < hi) {
    long mid = (lo + hi) / 2;
    bool go_right = right != 0 ? !mnp_lt(v, hay[mid]) : mnp_lt(hay[mid], v);
    if (go_right) lo = mid + 1; else hi = mid;
  }
  out[i] = lo;
}
"""


def searchsorted(x1, x2, /, *, side="left", sorter=None):
    if side not in ("left", "right"):
        raise ValueError("side must be 'left' or 'right'")
    if x1.ndim != 1:
        raise ValueError("searchsorted needs a 1-D sorted array")
    if sorter is not None:
        x1 = take(x1, sorter)
    x2 = asarray(x2, device=x1.device)
    dt = np.result_type(x1.dtype, x2.dtype)
    D.refuse_complex("searchsorted", dt)
    a, b = x1.astype(dt, copy=False), x2.astype(dt, copy=False)
    out = empty(x2.shape, dtype=D.int64, device=x1.device)
    if x2.size == 0:
        return out
    hay = a._contiguous_buffer() if a.size else x1.device.empty(1, dt)
    less = "(a < b || (b != b && a == a))" if dt.kind == "f" else "(a < b)"
    src = _SEARCH.replace("ELEM", D.msl(dt)).replace("LESS", less)
    kern = R.kernel(x1.device, src, "mnp_searchsorted")
    R.launch(kern, x2.size, hay, b._contiguous_buffer(), np.int64(a.size).tobytes(),
             np.int64(side == "right").tobytes(), out._buf)
    return out


def count_nonzero(x, /, *, axis=None, keepdims=False):
    return _reduce.sum(apply("not_equal", x, 0), axis=axis, keepdims=keepdims)


def diff(x, /, *, axis=-1, n=1, prepend=None, append=None):
    if prepend is not None or append is not None:
        parts = ([prepend] if prepend is not None else []) + [x] + ([append] if append is not None else [])
        x = concat(parts, axis=axis)
    axis %= x.ndim
    for _ in range(n):
        hi = [slice(None)] * x.ndim
        lo = [slice(None)] * x.ndim
        hi[axis] = slice(1, None)
        lo[axis] = slice(None, -1)
        x = x[tuple(hi)] - x[tuple(lo)]
    return x
