"""Data types of metalcall.numpy: the NumPy dtypes it supports, their MSL names, the device rules
(no float64 on Metal) and isdtype. Type promotion follows NumPy 2's rules (which contain the array
API table; Python scalars are weak); the functions that take arrays as well as dtypes (result_type,
can_cast, finfo, iinfo) are in _dtype_functions.py, as this module knows no arrays."""

from __future__ import annotations

import numpy as np

import metalcall as mc


class NoDoubleError(mc.ArgumentError):
    """A float64 or complex128 array asked of a device without double (Metal GPUs): a metalcall.Error,
    and a TypeError as before (mc.ArgumentError is both)."""


class ComplexError(mc.ArgumentError):
    """An operation the array API does not define on complex numbers (orderings, floor division,
    rounding down, bit tests...): a metalcall.Error and a TypeError."""


def refuse_complex(op: str, *dts) -> None:
    if any(dt.kind == "c" for dt in dts):
        raise ComplexError(f"metalcall.numpy: {op} is not defined for complex arrays (the array API defines no "
                           "order, floor or bit operations on complex numbers)")

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
complex64 = np.dtype(np.complex64)
complex128 = np.dtype(np.complex128)

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
    complex64: "mnp_c64",  # structs of two floats / doubles (_complex.py), declared by declare_types
    complex128: "mnp_c128",
}
#: The unsigned type of the same width (signed arithmetic is done in it so overflow wraps, never UB).
UNSIGNED = {int8: "uchar", int16: "ushort", int32: "uint", int64: "ulong"}

SUPPORTED = tuple(MSL_NAME)
_BY_NAME = {str(d): d for d in SUPPORTED}
_BY_NAME["bool"] = bool_


def msl(dt: np.dtype) -> str:
    return MSL_NAME[dt]


def zero(dt: np.dtype) -> str:
    """An MSL expression of dt's zero (the complex structs are zero-initialised aggregates)."""
    return f"{MSL_NAME[dt]}{{}}" if dt.kind == "c" else f"{MSL_NAME[dt]}(0)"


# The complex element types: NumPy's layout (real part, then imaginary part).
_DECLARATIONS = (
    ("mnp_c64", "struct mnp_c64 { float re; float im; };"),
    ("mnp_c128", "struct mnp_c128 { double re; double im; };"),
)
_PREAMBLE = "using namespace metal;\n"


def declare_types(source: str) -> str:
    """The source with the complex structs it names declared after its preamble (every generated
    source goes through this, so a kernel template written with ELEM works for complex too)."""
    decls = [d for name, d in _DECLARATIONS if name in source and d not in source]
    if not decls:
        return source
    at = source.find(_PREAMBLE)
    at = at + len(_PREAMBLE) if at >= 0 else 0
    return source[:at] + "\n".join(decls) + "\n" + source[at:]


def is_float(dt: np.dtype) -> bool:
    return dt.kind == "f"


def is_int(dt: np.dtype) -> bool:
    return dt.kind in "iu"


def is_bool(dt: np.dtype) -> bool:
    return dt.kind == "b"


def is_complex(dt: np.dtype) -> bool:
    return dt.kind == "c"


def device_has_float64(device) -> bool:
    """Metal GPUs have no double; the CPU and CUDA do."""
    return device.backend != "metal"


def default_float(device) -> np.dtype:
    return float64 if device_has_float64(device) else float32


def default_complex(device) -> np.dtype:
    return complex128 if device_has_float64(device) else complex64


def default_int(device=None) -> np.dtype:
    return int64


def as_dtype(dtype, device=None) -> np.dtype:
    """A supported NumPy dtype from any dtype-like (mnp.float32, np.float32, 'float32', float)."""
    if dtype is float:
        return default_float(device) if device is not None else float64
    if dtype is complex:
        return default_complex(device) if device is not None else complex128
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
            "float64, complex64, complex128)"
        )
    return dt


def check_device_dtype(dt: np.dtype, device) -> None:
    if dt in (float64, complex128) and not device_has_float64(device):
        small = "float32" if dt == float64 else "complex64"
        raise NoDoubleError(
            f"metalcall.numpy: {device.backend} devices have no {dt} (MSL has no double); use {small}"
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
            return dtype.kind == "c"
        if kind == "numeric":
            return dtype.kind in "iufc"
        raise ValueError(f"unknown dtype kind {kind!r}")
    return dtype == as_dtype(kind)
