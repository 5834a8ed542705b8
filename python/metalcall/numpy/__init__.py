"""metalcall.numpy: a NumPy-like array namespace (Python array API 2025.12) on metalcall devices.

    import metalcall.numpy as mnp
    x = mnp.random.randn(10**6); y = mnp.random.randn(10**6)
    z = mnp.sin(x) * y + 2        # lazy: one fused MSL kernel when z is needed
    print(mnp.explain(z))         # the generated kernel source
    np.asarray(z)                 # zero-copy host view (waits for the work)

Everything runs as generated MSL through metalcall (Metal, CPU, CUDA); calls are asynchronous.
docs/numpy.md describes what exists, the fusion design and the dtype rules."""

import sys as _sys

import numpy as _np

from . import _methods
from ._array import ndarray
from ._dtypes import (
    bool_ as bool,  # noqa: A001 - the array API name
    int8, int16, int32, int64, uint8, uint16, uint32, uint64, float16, float32, float64, complex64, complex128,
    isdtype,
)
from ._dtype_functions import can_cast, finfo, iinfo, result_type
from ._runtime import clear_pool, default_device, set_default_device, synchronize
from ._runtime import default_device_scope as device_scope
from ._creation import (
    arange, asarray, empty, empty_like, eye, from_dlpack, full, full_like, linspace, ones, ones_like, zeros,
    zeros_like,
)
from ._elementwise import FUNCTIONS as _FUNCTIONS, ALIASES as _ALIASES
from ._elementwise import astype, clip, conj, imag, real, tril, triu, where
from ._fusion import lazy
from ._fuse import evaluate, explain, fuse, jit
from ._manip import (
    broadcast_arrays, broadcast_shapes, broadcast_to, concat, expand_dims, flip, matrix_transpose, meshgrid,
    moveaxis, permute_dims, reshape, roll, squeeze, stack, tile, unstack,
)
from ._indexing import take, take_along_axis
from ._reduce import (
    all, any, argmax, argmin, cumulative_prod, cumulative_sum, max, mean, min, prod, std, sum, var,
)
from ._linalg import matmul, outer, tensordot, vecdot
from ._sort import argsort, sort
from ._setops import (
    count_nonzero, diff, isin, nonzero, repeat, searchsorted, unique_all, unique_counts, unique_inverse, unique_values,
)
from . import fft, linalg, random
from . import _info

# The ndarray type imports no operation; its operation methods (operators, indexing, reshape, ...)
# are bound here, once, with this module as what x.__array_namespace__() returns.
_methods.install(namespace=_sys.modules[__name__])
globals().update(_FUNCTIONS)
globals().update({alias: _FUNCTIONS[name] for alias, name in _ALIASES.items()})

__array_api_version__ = "2025.12"
ndarray.__module__ = "metalcall.numpy"

e = 2.718281828459045
pi = 3.141592653589793
inf = float("inf")
nan = float("nan")
newaxis = None

# NumPy spellings
concatenate = concat
transpose = permute_dims


def array(obj, dtype=None, *, device=None, copy=True):
    """NumPy's spelling: a new array (a copy unless copy=None/False allows sharing)."""
    return asarray(obj, dtype=dtype, device=device, copy=copy if copy else None)


bool_ = bool
amax = max
amin = min
cumsum = cumulative_sum
dot = matmul


def __array_namespace_info__():
    return _info.Info()


def isscalar(x):
    return isinstance(x, (int, float, bool))


def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
    """Host comparison (reads both arrays)."""
    return bool(_np.allclose(_np.asarray(a), _np.asarray(b), rtol=rtol, atol=atol, equal_nan=equal_nan))


def to_numpy(x):
    return x.to_numpy() if isinstance(x, ndarray) else _np.asarray(x)


asnumpy = to_numpy

__all__ = [
    "ndarray", "fft", "linalg", "random", "__array_api_version__", "__array_namespace_info__",
    # data types and the functions on them
    "bool", "bool_", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16",
    "float32", "float64", "complex64", "complex128", "can_cast", "finfo", "iinfo", "isdtype", "result_type",
    # devices and the runtime
    "clear_pool", "default_device", "device_scope", "set_default_device", "synchronize",
    # creation
    "arange", "array", "asarray", "empty", "empty_like", "eye", "from_dlpack", "full", "full_like", "linspace",
    "meshgrid", "ones", "ones_like", "tril", "triu", "zeros", "zeros_like",
    # elementwise (and every function of _FUNCTIONS and _ALIASES, added below) and fusion
    "astype", "clip", "conj", "imag", "real", "where", "lazy", "evaluate", "explain", "fuse", "jit",
    # shapes and indexing
    "broadcast_arrays", "broadcast_shapes", "broadcast_to", "concat", "concatenate", "expand_dims", "flip",
    "matrix_transpose", "moveaxis", "permute_dims", "reshape", "roll", "squeeze", "stack", "tile", "transpose",
    "unstack", "take", "take_along_axis",
    # reductions, linear algebra, sorting, sets and searching
    "all", "amax", "amin", "any", "argmax", "argmin", "cumsum", "cumulative_prod", "cumulative_sum", "max",
    "mean", "min", "prod", "std", "sum", "var", "dot", "matmul", "outer", "tensordot", "vecdot", "argsort",
    "sort", "count_nonzero", "diff", "isin", "nonzero", "repeat", "searchsorted", "unique_all", "unique_counts",
    "unique_inverse", "unique_values",
    # constants and NumPy conveniences
    "e", "inf", "nan", "newaxis", "pi", "allclose", "asnumpy", "isscalar", "to_numpy",
    *_FUNCTIONS, *_ALIASES,
]
