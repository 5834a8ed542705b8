"""Data types of metalcall.numpy: the NumPy dtypes it supports, their MSL names, the device rules
(no float64 on Metal) and isdtype. Type promotion follows NumPy 2's rules (which contain the array
API table; Python scalars are weak); the functions that take arrays as well as dtypes (result_type,
can_cast, finfo, iinfo) are in _dtype_functions.py, as this module knows no arrays."""

from __future__ import annotations

import numpy as np

bool_ = np.dtype(np.bool_)
int8 = np.dtype(np.int8)
int16 = np.dtype(np.int16)
int32 = np.dtype(np.int32)
int64 = np.dtype(np.int64)
uint8 = np.dtype(np.uint8)
uint16 = np.dtype(np.uint16)
uint32 = np.dtype(np.uint32)
uint64 = np.dtype(np.uint64)
float16 = np.dtype(np.float16)
float32 = np.dtype(np.float32)
float64 = np.dtype(np.float64)

#: NumPy dtype -> MSL scalar type name.
MSL_NAME = {
    bool_: "bool",
    int8: "char",
    int16: "short",
    int32: "int",
    int64: "long",
    uint8: "uchar",
    uint16: "ushort",
    uint32: "uint",
    uint64: "ulong",
    float16: "half",
    float32: "float",
    float64: "double",
}
#: The unsigned type of the same width (signed arithmetic is done in it so overflow wraps, never UB).
UNSIGNED = {int8: "uchar", int16: "ushort", int32: "uint", int64: "ulong"}

SUPPORTED = tuple(MSL_NAME)
_BY_NAME = {str(d): d for d in SUPPORTED}
_BY_NAME["bool"] = bool_


def msl(dt: np.dtype) -> str:
    return MSL_NAME[dt]


def is_float(dt: np.dtype) -> bool:
    return dt.kind == "f"


def is_int(dt: np.dtype) -> bool:
    return dt.kind in "iu"


def is_bool(dt: np.dtype) -> bool:
    return dt.kind == "b"


def device_has_float64(device) -> bool:
    """Metal GPUs have no double; the CPU and CUDA do."""
    return device.backend != "metal"


def default_float(device) -> np.dtype:
    return float64 if device_has_float64(device) else float32


def default_int(device=None) -> np.dtype:
    return int64


def as_dtype(dtype, device=None) -> np.dtype:
    """A supported NumPy dtype from any dtype-like (mnp.float32, np.float32, 'float32', float)."""
    if dtype is float:
        return default_float(device) if device is not None else float64
    if dtype is int:
        return int64
    if dtype is bool:
        return bool_
    try:
        dt = np.dtype(dtype)
    except TypeError as e:
        raise TypeError(f"metalcall.numpy: {dtype!r} is not a data type") from e
    if dt.byteorder == ">":
        dt = dt.newbyteorder("=")
    if dt not in MSL_NAME:
        raise TypeError(
            f"metalcall.numpy: dtype {dt} is not supported (bool, int8..int64, uint8..uint64, float16, float32, "
            "float64; no complex or string types)"
        )
    return dt


def check_device_dtype(dt: np.dtype, device) -> None:
    if dt == float64 and not device_has_float64(device):
        raise TypeError(
            f"metalcall.numpy: {device.backend} devices have no float64 (MSL has no double); use float32"
        )


def isdtype(dtype, kind) -> bool:
    """The array API isdtype: kind is a dtype, a kind name or a tuple of them."""
    dtype = as_dtype(dtype)
    if isinstance(kind, tuple):
        return any(isdtype(dtype, k) for k in kind)
    if isinstance(kind, str):
        if kind == "bool":
            return dtype == bool_
        if kind == "signed integer":
            return dtype.kind == "i"
        if kind == "unsigned integer":
            return dtype.kind == "u"
        if kind == "integral":
            return dtype.kind in "iu"
        if kind == "real floating":
            return dtype.kind == "f"
        if kind == "complex floating":
            return False
        if kind == "numeric":
            return dtype.kind in "iuf"
        raise ValueError(f"unknown dtype kind {kind!r}")
    return dtype == as_dtype(kind)
