"""Array creation: asarray (from NumPy, lists, scalars, DLPack, other devices), empty/zeros/ones/full
and their *_like forms, arange, linspace, eye (meshgrid is in _manip.py, tril/triu in _elementwise.py:
they are made of those operations). `device=` picks the device (default: metalcall.numpy's default
device); Python floats default to float64 where the device has it."""

from __future__ import annotations

import numpy as np

import metalcall as mc

from . import _dtypes as D
from . import _fusion as F
from . import _runtime as R
from ._array import _alloc, lazy_array, ndarray


def _shape(shape):
    if isinstance(shape, (int, np.integer)):
        return (int(shape),)
    return tuple(int(s) for s in shape)


def _from_numpy(a: np.ndarray, dev, dtype=None) -> ndarray:
    if dtype is None:
        if a.dtype in (D.float64, D.complex128) and not D.device_has_float64(dev):
            dtype = D.float32 if a.dtype == D.float64 else D.complex64
        elif a.dtype.kind in "OSUV":
            raise TypeError(f"metalcall.numpy: cannot make an array of {a.dtype} data")
        else:
            dtype = D.as_dtype(a.dtype)
    dtype = D.as_dtype(dtype, dev)
    D.check_device_dtype(dtype, dev)
    a = np.asarray(a, dtype=dtype)
    if a.ndim and not a.flags.c_contiguous:
        a = np.ascontiguousarray(a)
    buf = dev.asarray(a) if a.size else _alloc(dev, a.shape, dtype)
    return ndarray._wrap(buf, a.shape, dtype, dev)


def asarray(obj, /, *, dtype=None, device=None, copy=None):
    """An array from an ndarray, NumPy array, buffer, DLPack producer, nested sequence or scalar."""
    if isinstance(obj, ndarray):
        out = obj
        if device is not None and R.as_device(device) != obj.device:
            if copy is False:
                raise ValueError("asarray(copy=False) cannot move an array to another device")
            out = obj.to_device(device)
        if dtype is not None and D.as_dtype(dtype, out.device) != out.dtype:
            if copy is False:
                raise ValueError("asarray(copy=False) cannot change the dtype")
            return out.astype(dtype)
        if copy and out is obj:
            return obj.copy()
        return out
    dev = R.as_device(device)
    if copy is False:
        return _share(obj, dev, dtype)
    if isinstance(obj, mc.Buffer):
        obj = np.asarray(obj)
    if isinstance(obj, (list, tuple)) and any(isinstance(e, ndarray) for e in _flat(obj)):
        obj = [np.asarray(e) if isinstance(e, ndarray) else e for e in obj]
    if dtype is None and isinstance(obj, float):
        dtype = D.default_float(dev)
    elif dtype is None and isinstance(obj, complex):
        dtype = D.default_complex(dev)
    if not isinstance(obj, np.ndarray) and hasattr(obj, "__dlpack__") and not hasattr(obj, "__array__"):
        obj = np.from_dlpack(obj)
    a = np.asarray(obj, dtype=D.as_dtype(dtype, dev) if dtype is not None else None)
    return _from_numpy(a, dev, dtype)


def _share(obj, dev, dtype):
    """asarray(copy=False): CPU devices wrap C-contiguous host memory in place (mc.from_dlpack);
    anything else would need a copy, which copy=False forbids."""
    a = obj if isinstance(obj, np.ndarray) else None
    if a is None and hasattr(obj, "__dlpack__"):
        a = np.from_dlpack(obj)
    if (a is None or dev.backend != "cpu" or not a.flags.c_contiguous or not a.flags.writeable
            or a.dtype not in D.SUPPORTED or (dtype is not None and D.as_dtype(dtype, dev) != a.dtype)):
        raise ValueError("metalcall.numpy: asarray(copy=False) can only share C-contiguous, writable host "
                         "arrays of a supported dtype with a CPU device; pass copy=None to copy")
    buf = mc.from_dlpack(a, device=dev)
    return ndarray._wrap(buf, a.shape, a.dtype, dev)


def _flat(seq):
    for e in seq:
        if isinstance(e, (list, tuple)):
            yield from _flat(e)
        else:
            yield e


def from_dlpack(x, /, *, device=None, copy=None):
    return asarray(np.from_dlpack(x), device=device)


def empty(shape, *, dtype=None, device=None):
    dev = R.as_device(device)
    dt = D.as_dtype(dtype, dev) if dtype is not None else D.default_float(dev)
    D.check_device_dtype(dt, dev)
    shape = _shape(shape)
    return ndarray._wrap(_alloc(dev, shape, dt), shape, dt, dev)


zeros = empty  # new Buffers are zero-filled on every backend (docs/design.md)


def full(shape, fill_value, *, dtype=None, device=None):
    """A lazy fill: `mnp.ones(n) * x` fuses into one kernel; evaluated when needed."""
    dev = R.as_device(device)
    if dtype is None:
        if isinstance(fill_value, bool):
            dtype = D.bool_
        elif isinstance(fill_value, int):
            dtype = D.int64
        elif isinstance(fill_value, float):
            dtype = D.default_float(dev)
        elif isinstance(fill_value, complex):
            dtype = D.default_complex(dev)
        elif isinstance(fill_value, (np.generic, ndarray)):
            dtype = fill_value.dtype
        else:
            raise TypeError(f"metalcall.numpy: fill value {fill_value!r} is not a bool, int, float or complex")
    dt = D.as_dtype(dtype, dev)
    D.check_device_dtype(dt, dev)
    if isinstance(fill_value, (np.generic, ndarray)):
        fill_value = fill_value.item()
    shape = _shape(shape)
    node = F.Op("cast", [F.Scalar(fill_value, dt)], dt, dt, shape)
    return lazy_array(node, dev)


def ones(shape, *, dtype=None, device=None):
    dev = R.as_device(device)
    dt = D.as_dtype(dtype, dev) if dtype is not None else D.default_float(dev)
    return full(shape, True if dt == D.bool_ else 1, dtype=dt, device=dev)


def _like(x, dtype, device):
    return (dtype if dtype is not None else x.dtype), (device if device is not None else x.device)


def empty_like(x, /, *, dtype=None, device=None):
    dt, dev = _like(x, dtype, device)
    return empty(x.shape, dtype=dt, device=dev)


def zeros_like(x, /, *, dtype=None, device=None):
    dt, dev = _like(x, dtype, device)
    return zeros(x.shape, dtype=dt, device=dev)


def ones_like(x, /, *, dtype=None, device=None):
    dt, dev = _like(x, dtype, device)
    return ones(x.shape, dtype=dt, device=dev)


def full_like(x, /, fill_value, *, dtype=None, device=None):
    dt, dev = _like(x, dtype, device)
    return full(x.shape, fill_value, dtype=dt, device=dev)


def arange(start, /, stop=None, step=1, *, dtype=None, device=None):
    dev = R.as_device(device)
    if dtype is None and any(isinstance(v, float) for v in (start, stop, step)):
        dtype = D.default_float(dev)
    a = np.arange(start, stop, step, dtype=D.as_dtype(dtype, dev) if dtype is not None else None)
    return _from_numpy(a, dev, dtype)


def linspace(start, stop, /, num, *, dtype=None, device=None, endpoint=True):
    dev = R.as_device(device)
    if dtype is not None:
        dt = D.as_dtype(dtype, dev)
    elif isinstance(start, complex) or isinstance(stop, complex):
        dt = D.default_complex(dev)
    else:
        dt = D.default_float(dev)
    return _from_numpy(np.linspace(start, stop, num, endpoint=endpoint).astype(dt), dev, dt)


def eye(n_rows, n_cols=None, /, *, k=0, dtype=None, device=None):
    dev = R.as_device(device)
    dt = D.as_dtype(dtype, dev) if dtype is not None else D.default_float(dev)
    return _from_numpy(np.eye(n_rows, n_cols, k=k, dtype=dt), dev, dt)
