"""Data-dependent functions: nonzero, unique_*, repeat (their result shapes depend on values, so
the counts are read on the host; gathering runs on the device), and searchsorted (a binary-search
kernel, one thread per needle), isin (x2 sorted, then the same binary search), count_nonzero, diff."""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from . import _dtypes as D
from . import _reduce
from . import _runtime as R
from ._array import ndarray
from ._creation import asarray, empty, full
from ._elementwise import apply
from ._indexing import take
from ._manip import _norm_axis, concat, reshape
from ._sort import sort

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
    axis = _norm_axis(axis, x.ndim)  # an axis out of [-ndim, ndim) raises (2025.12), not wraps
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
    if isinstance(x2, (bool, int, float)) and not isinstance(x2, ndarray):
        return _searchsorted_scalar(x1, x2, side)
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


def _searchsorted_scalar(x1, v, side):
    """searchsorted of one Python scalar (2025.12): a 0-d needle of the dtype the standard's rules
    for mixing scalars and arrays give (x1's dtype for a float array, so 0.1 is searched as
    float32(0.1) in a float32 array, where NumPy compares float64(0.1)); an integer beyond an
    integer dtype's range lies past every element (0 or x1.size), not wrapped into it."""
    dt = np.result_type(x1.dtype, v)
    if dt.kind in "iu" and not isinstance(v, bool):
        info = np.iinfo(dt)
        if not info.min <= v <= info.max:
            return asarray(np.int64(0 if v < info.min else x1.size), device=x1.device)
    return searchsorted(x1, asarray(v, dtype=dt, device=x1.device), side=side)


_ISIN = """#include <metal_stdlib>
using namespace metal;
inline bool mnp_lt(ELEM a, ELEM b) { return LESS; }
kernel void mnp_isin(device const ELEM* hay [[buffer(0)]], device const ELEM* needles [[buffer(1)]],
                     constant long& n [[buffer(2)]], constant long& invert [[buffer(3)]],
                     device bool* out [[buffer(4)]], uint i [[thread_position_in_grid]]) {
  ELEM v = needles[i];
  long lo = 0, hi = n;
  while (lo < hi) {  // the first element not below v (hay is ascending, NaN last)
    long mid = (lo + hi) / 2;
    if (mnp_lt(hay[mid], v)) lo = mid + 1; else hi = mid;
  }
  bool found = lo < n && hay[lo] == v;  // equality as `equal`: -0 is +0, NaN is nothing
  out[i] = found != (invert != 0);
}
"""

# Complex numbers have no order to sort by: each needle is compared with every element of x2.
_ISIN_ALL = """#include <metal_stdlib>
using namespace metal;
kernel void mnp_isin(device const ELEM* hay [[buffer(0)]], device const ELEM* needles [[buffer(1)]],
                     constant long& n [[buffer(2)]], constant long& invert [[buffer(3)]],
                     device bool* out [[buffer(4)]], uint i [[thread_position_in_grid]]) {
  ELEM v = needles[i];
  bool found = false;
  for (long j = 0; j < n && !found; ++j) found = hay[j].re == v.re && hay[j].im == v.im;
  out[i] = found != (invert != 0);
}
"""


def _isin_operand(v, other):
    """A Python scalar operand of isin as a 0-d array of the dtype the standard's rules for mixing
    scalars and arrays give, or None when it is an integer outside that integer dtype's range
    (then it equals no element)."""
    dt = np.result_type(other.dtype, v)
    if dt.kind in "iu" and not isinstance(v, bool) and isinstance(v, int):
        info = np.iinfo(dt)
        if not info.min <= v <= info.max:
            return None
    return asarray(v, dtype=dt, device=other.device)


def isin(x1, x2, /, *, invert=False):
    """The array API's isin (2025.12): for each element of x1, whether it equals (as `equal`) an
    element of x2; the negation with invert=True. x1 and x2 are promoted to one dtype; int64
    against uint64 (which NumPy compares in float64, rounding) compares exactly."""
    a1, a2 = isinstance(x1, ndarray), isinstance(x2, ndarray)
    if not (a1 or a2):
        raise TypeError("isin: at least one of x1 and x2 must be an array")
    invert = bool(invert)
    if not a1:
        like = x2
        x1 = _isin_operand(x1, x2)
        if x1 is None:
            return full((), invert, dtype=D.bool_, device=like.device)
    if not a2:
        x2 = _isin_operand(x2, x1)
        if x2 is None:
            return full(x1.shape, invert, dtype=D.bool_, device=x1.device)
    x2 = reshape(x2, (-1,))
    k1, k2 = x1.dtype, x2.dtype
    if {k1.kind, k2.kind} == {"i", "u"} and np.result_type(k1, k2).kind == "f":
        # signed with unsigned 64-bit (NumPy: float64, rounding): only x2's values that x1's dtype
        # represents can equal an element of x1, and in that dtype they compare exactly.
        keep = apply("greater_equal", x2, 0) if k2.kind == "i" else apply("less_equal", x2, np.iinfo(k1).max)
        x2 = x2[keep].astype(k1)
    dt = np.result_type(x1.dtype, x2.dtype)
    out = empty(x1.shape, dtype=D.bool_, device=x1.device)
    if x1.size == 0:
        return out
    if x2.size == 0:
        return full(x1.shape, invert, dtype=D.bool_, device=x1.device)
    needles = x1.astype(dt, copy=False)
    if dt.kind == "c":
        hay, src = x2.astype(dt, copy=False), _ISIN_ALL.replace("ELEM", D.msl(dt))
    else:
        hay = sort(x2.astype(dt, copy=False))
        less = "(a < b || (b != b && a == a))" if dt.kind == "f" else "(a < b)"
        src = _ISIN.replace("ELEM", D.msl(dt)).replace("LESS", less)
    kern = R.kernel(x1.device, src, "mnp_isin")
    R.launch(kern, x1.size, hay._contiguous_buffer(), needles._contiguous_buffer(), np.int64(hay.size).tobytes(),
             np.int64(invert).tobytes(), out._buf)
    return out


def count_nonzero(x, /, *, axis=None, keepdims=False):
    return _reduce.sum(apply("not_equal", x, 0), axis=axis, keepdims=keepdims)


def diff(x, /, *, axis=-1, n=1, prepend=None, append=None):
    if prepend is not None or append is not None:
        parts = ([prepend] if prepend is not None else []) + [x] + ([append] if append is not None else [])
        x = concat(parts, axis=axis)
    axis = _norm_axis(axis, x.ndim)  # an axis out of [-ndim, ndim) raises (2025.12), not wraps
    for _ in range(n):
        hi = [slice(None)] * x.ndim
        lo = [slice(None)] * x.ndim
        hi[axis] = slice(1, None)
        lo[axis] = slice(None, -1)
        x = x[tuple(hi)] - x[tuple(lo)]
    return x
