"""The array API's data type functions that take arrays as well as dtypes: result_type, can_cast,
finfo, iinfo (isdtype and the dtypes themselves are in _dtypes.py, which knows no arrays)."""

from __future__ import annotations

import numpy as np

from . import _dtypes as D
from ._array import ndarray


def result_type(*arrays_and_dtypes):
    """The array API result_type: arrays, dtypes and Python scalars (weak)."""
    args = []
    for a in arrays_and_dtypes:
        if isinstance(a, ndarray):
            args.append(a.dtype)
        elif isinstance(a, (bool, int, float, complex)):
            args.append(a)
        else:
            args.append(D.as_dtype(a))
    if not args:
        raise ValueError("at least one array or dtype is required")
    return np.result_type(*args)


def can_cast(from_, to, /) -> bool:
    if isinstance(from_, ndarray):
        from_ = from_.dtype
    return bool(np.can_cast(D.as_dtype(from_), D.as_dtype(to), casting="safe"))


class _NumPyInfo:
    """What finfo/iinfo answers share: NumPy's object `_np` behind the standard's fields."""

    def __getattr__(self, name):
        if name == "_np":  # not set yet (copy, pickle): no recursion
            raise AttributeError(name)
        return getattr(self._np, name)

    def __repr__(self):
        return repr(self._np)


class _FInfo(_NumPyInfo):
    """finfo's answer with the array API's Python types (bits: int; eps, max, min, smallest_normal:
    float), as NumPy's float32 finfo holds NumPy scalars; NumPy's other fields pass through."""

    def __init__(self, dt):
        self._np = np.finfo(dt)
        self.dtype = self._np.dtype
        self.bits = int(self._np.bits)
        self.eps = float(self._np.eps)
        self.max = float(self._np.max)
        self.min = float(self._np.min)
        self.smallest_normal = float(self._np.smallest_normal)


class _IInfo(_NumPyInfo):
    """iinfo's answer with Python ints (bits, max, min) and the dtype; NumPy's other fields pass through."""

    def __init__(self, dt):
        self._np = np.iinfo(dt)
        self.dtype = self._np.dtype
        self.bits = int(self._np.bits)
        self.max = int(self._np.max)
        self.min = int(self._np.min)


def finfo(type, /):
    if isinstance(type, ndarray):
        type = type.dtype
    return _FInfo(D.as_dtype(type))


def iinfo(type, /):
    if isinstance(type, ndarray):
        type = type.dtype
    return _IInfo(D.as_dtype(type))
