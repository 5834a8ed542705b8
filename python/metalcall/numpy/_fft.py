"""The array API's fft extension (metalcall.numpy.fft): transforms along any axes, made of one
device primitive, the batched complex DFT of the rows of a (batch, n) array (_kernels/fft.py:
Stockham mixed-radix passes for n whose prime factors are at most 13, on GPUs in one launch for
n <= 1024 (fft_tg.py) and in two up to 1024^2 (fft_4step.py); any other n by Bluestein's
algorithm, a convolution of power-of-two length done with those passes). Real transforms use the
complex one (rfft keeps the first n // 2 + 1 outputs; irfft completes the Hermitian spectrum and
keeps the real part), hfft/ihfft are irfft/rfft of the conjugate with the norm's direction swapped,
as NumPy defines them. Results match numpy.fft (tests/numpy/test_fft.py)."""

from __future__ import annotations

import math

import numpy as np

import metalcall as mc

from . import _dtypes as D
from . import _fusion as F
from . import _runtime as R
from ._array import ndarray
from ._backend import kernels
from ._creation import _from_numpy, asarray, zeros
from ._elementwise import apply, astype
from ._manip import concat, flip, moveaxis, roll

NORMS = ("backward", "ortho", "forward")


def _array(x):
    if isinstance(x, ndarray):
        return x
    return asarray(x)


def _complex_dtype(dt, dev):
    if dt.kind == "c":
        return dt
    if dt in (D.float16, D.float32):
        return D.complex64
    return D.complex128 if dt == D.float64 else D.default_complex(dev)


def _real_dtype(dt, dev):
    if dt.kind == "c":
        return D.float32 if dt == D.complex64 else D.float64
    return dt if dt in (D.float32, D.float64) else (D.float32 if dt == D.float16 else D.default_float(dev))


def _axis(axis, ndim):
    if not isinstance(axis, (int, np.integer)) or not -ndim <= axis < ndim:
        raise mc.ArgumentError(f"fft: axis {axis!r} is out of bounds for an array of dimension {ndim}")
    return int(axis) % ndim


def _length(n, default, what="n"):
    if n is None:
        n = default
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool) or n < 1:
        raise mc.ArgumentError(f"fft: invalid number of data points {what}={n!r} (a positive integer)")
    return int(n)


def _norm(norm):
    """The norm mode; None is NumPy's spelling of "backward"."""
    if norm is None:
        return "backward"
    if norm not in NORMS:
        raise mc.ArgumentError(f"fft: norm must be one of {NORMS}, got {norm!r}")
    return norm


def _scale(x, n, norm, inverse):
    """x scaled as `norm` asks of a transform of length n in that direction."""
    norm = _norm(norm)
    if norm == "ortho":
        return apply("multiply", x, 1 / math.sqrt(n))
    if (norm == "backward") == inverse:
        return apply("multiply", x, 1 / n)
    return x


def _resize(x, n, axis):
    """x cropped or zero-padded to length n along axis."""
    m = x.shape[axis]
    if n == m:
        return x
    if n < m:
        return x[(slice(None),) * axis + (slice(0, n),)]
    shape = list(x.shape)
    shape[axis] = n - m
    return concat([x, zeros(tuple(shape), dtype=x.dtype, device=x.device)], axis=axis)


def _rows(y, inverse):
    """The unnormalised DFT of every row (last axis) of complex y."""
    n, dev, dt = y.shape[-1], y.device, y.dtype
    batch = F.prod(y.shape[:-1])
    if batch == 0:
        return zeros(y.shape, dtype=dt, device=dev)
    fft, short, long = _modules()
    if fft.factors(n) is None:
        return _bluestein(y, inverse)
    if short.usable(dev, n):  # GPUs: every pass of short rows in one launch, in threadgroup memory
        buf = short.fft(dev, y._contiguous_buffer(), batch, n, dt, inverse)
    elif long.usable(dev, n):  # GPUs, up to MAX_N^2: two launches (columns, then rows)
        buf = long.fft(dev, y._contiguous_buffer(), batch, n, dt, inverse)
    else:
        buf = fft.fft(dev, y._contiguous_buffer(), batch, n, dt, inverse)
    return ndarray._wrap(buf, y.shape, dt, dev)


_KERNELS = []


def _modules():
    """(_kernels.fft, _kernels.fft_tg, _kernels.fft_4step), imported on first use (import metalcall.numpy
    stays cheap)."""
    if not _KERNELS:
        _KERNELS.extend((kernels("fft"), kernels("fft_tg"), kernels("fft_4step")))
    return _KERNELS


def _last(x, axis):
    """x with axis moved last (x itself when it is last already)."""
    return x if axis == x.ndim - 1 else moveaxis(x, axis, -1)


def _back(y, axis):
    """The inverse of _last."""
    return y if axis == y.ndim - 1 else moveaxis(y, -1, axis)


_CHIRPS: dict = {}


def _chirp(dev, n, M, dt, inverse):
    """(w, B): w_j = exp(-+ i pi j^2 / n) (j < n) and B, the DFT of length M of the circular sequence
    conj(w) over -(n - 1)..n - 1, both on dev; computed once per length, dtype and direction."""
    key = (dev, n, dt, inverse)
    hit = _CHIRPS.get(key)
    if hit is None:
        j = np.arange(n, dtype=np.int64)
        angle = np.pi * ((j * j) % (2 * n)) / n  # j^2 reduced exactly before the float division
        w = np.exp((1j if inverse else -1j) * angle)
        b = np.zeros(M, np.complex128)
        b[:n] = np.conj(w)
        b[M - n + 1:] = np.conj(w[1:])[::-1]
        B = _rows(_from_numpy(b.astype(dt), dev), False)._materialize()
        if len(_CHIRPS) > 64:
            _CHIRPS.clear()
        hit = _CHIRPS[key] = (_from_numpy(w.astype(dt), dev), B)
    return hit


def _bluestein(y, inverse):
    """Bluestein: jk = (j^2 + k^2 - (k - j)^2) / 2 makes the length-n DFT a convolution, done
    circularly with power-of-two transforms of length M >= 2n - 1."""
    n = y.shape[-1]
    M = 1 << (2 * n - 2).bit_length()
    w, B = _chirp(y.device, n, M, y.dtype, inverse)
    a = _resize(apply("multiply", y, w), M, y.ndim - 1)
    c = _rows(apply("multiply", _rows(a, False), B), True)
    return apply("multiply", c[..., :n], apply("multiply", w, 1 / M))


def _c2c(x, n, axis, norm, inverse):
    x = _array(x)
    if x.dtype.kind != "c":  # (a complex array is used as it is: astype's checks cost a few us a call)
        x = astype(x, _complex_dtype(x.dtype, x.device), copy=False)
    if x.ndim == 0:
        raise mc.ArgumentError("fft: the input must have at least one dimension")
    axis = _axis(axis, x.ndim)
    n = _length(n, x.shape[axis])
    y = _last(_resize(x, n, axis), axis)
    return _scale(_back(_rows(y, inverse), axis), n, norm, inverse)


def fft(x, /, *, n=None, axis=-1, norm="backward"):
    """The one-dimensional discrete Fourier transform along axis (length n: cropped or zero-padded)."""
    return _c2c(x, n, axis, norm, False)


def ifft(x, /, *, n=None, axis=-1, norm="backward"):
    """The one-dimensional inverse discrete Fourier transform along axis."""
    return _c2c(x, n, axis, norm, True)


def rfft(x, /, *, n=None, axis=-1, norm="backward"):
    """The DFT of real x along axis: the n // 2 + 1 non-negative frequencies."""
    x = _array(x)
    D.refuse_complex("rfft (which takes real input)", x.dtype)
    x = astype(x, _real_dtype(x.dtype, x.device), copy=False)
    if x.ndim == 0:
        raise mc.ArgumentError("rfft: the input must have at least one dimension")
    axis = _axis(axis, x.ndim)
    n = _length(n, x.shape[axis])
    y = _last(astype(_resize(x, n, axis), _complex_dtype(x.dtype, x.device)), axis)
    out = _rows(y, False)[..., : n // 2 + 1]
    return _scale(_back(out, axis), n, norm, False)


def irfft(x, /, *, n=None, axis=-1, norm="backward"):
    """The inverse of rfft: n real outputs (default 2 (m - 1)) from the m non-negative frequencies."""
    x = _array(x)
    x = astype(x, _complex_dtype(x.dtype, x.device), copy=False)
    if x.ndim == 0:
        raise mc.ArgumentError("irfft: the input must have at least one dimension")
    axis = _axis(axis, x.ndim)
    n = _length(n, 2 * (x.shape[axis] - 1))
    h = n // 2 + 1
    y = _last(_resize(x, h, axis), axis)
    # the Hermitian completion X[n - k] = conj(X[k]); the imaginary parts of X[0] (and X[n/2]) only
    # reach the imaginary part of the result, which is dropped, as NumPy's irfft ignores them
    tail = apply("conj", flip(y[..., 1: n - h + 1], axis=-1))
    out = apply("real", _rows(concat([y, tail], axis=-1), True))
    return _scale(_back(out, axis), n, norm, True)


def _swap(norm):
    norm = _norm(norm)
    return {"backward": "forward", "forward": "backward"}.get(norm, norm)


def hfft(x, /, *, n=None, axis=-1, norm="backward"):
    """The DFT of a signal with Hermitian symmetry given by its non-negative frequencies (real output)."""
    return irfft(apply("conj", _array(x)), n=n, axis=axis, norm=_swap(norm))


def ihfft(x, /, *, n=None, axis=-1, norm="backward"):
    """The inverse of hfft: the non-negative frequencies of the inverse DFT of real x."""
    return apply("conj", rfft(x, n=n, axis=axis, norm=_swap(norm)))


def _nd(x, s, axes):
    """(axes, lengths) of an n-dimensional transform; s[i] == -1 keeps that axis's length."""
    if axes is None:
        axes = list(range(x.ndim)) if s is None else list(range(-len(s), 0))
    axes = [_axis(a, x.ndim) for a in axes]
    if len(set(axes)) != len(axes):
        raise mc.ArgumentError("fft: repeated axes")
    if s is None:
        s = [x.shape[a] for a in axes]
    s = list(s)
    if len(s) != len(axes):
        raise mc.ArgumentError(f"fft: s has {len(s)} lengths for {len(axes)} axes")
    return axes, [x.shape[a] if v == -1 else v for a, v in zip(axes, s)]


def fftn(x, /, *, s=None, axes=None, norm="backward"):
    x = _array(x)
    axes, s = _nd(x, s, axes)
    for a, n in zip(reversed(axes), reversed(s)):
        x = _c2c(x, n, a, norm, False)
    return x if axes else astype(x, _complex_dtype(x.dtype, x.device))


def ifftn(x, /, *, s=None, axes=None, norm="backward"):
    x = _array(x)
    axes, s = _nd(x, s, axes)
    for a, n in zip(reversed(axes), reversed(s)):
        x = _c2c(x, n, a, norm, True)
    return x if axes else astype(x, _complex_dtype(x.dtype, x.device))


def rfftn(x, /, *, s=None, axes=None, norm="backward"):
    x = _array(x)
    axes, s = _nd(x, s, axes)
    if not axes:
        raise mc.ArgumentError("rfftn: at least one axis")
    x = rfft(x, n=s[-1], axis=axes[-1], norm=norm)
    for a, n in zip(axes[:-1], s[:-1]):
        x = _c2c(x, n, a, norm, False)
    return x


def irfftn(x, /, *, s=None, axes=None, norm="backward"):
    x = _array(x)
    given = s
    axes, s = _nd(x, s, axes)
    if not axes:
        raise mc.ArgumentError("irfftn: at least one axis")
    if given is None:  # the last axis holds the non-negative frequencies of 2 (m - 1) outputs
        s[-1] = 2 * (x.shape[axes[-1]] - 1)
    for a, n in zip(axes[:-1], s[:-1]):
        x = _c2c(x, n, a, norm, True)
    return irfft(x, n=s[-1], axis=axes[-1], norm=norm)


def _freq_dtype(dtype, dev):
    dt = D.as_dtype(dtype, dev) if dtype is not None else D.default_float(dev)
    if dt.kind != "f":
        raise mc.ArgumentError(f"fftfreq: dtype must be a real floating-point type, got {dt}")
    D.check_device_dtype(dt, dev)
    return dt


def fftfreq(n, /, *, d=1.0, dtype=None, device=None):
    """The sample frequencies [0, 1, ..., -1] / (d n) of a length-n DFT."""
    dev = R.as_device(device)
    n = _length(n, None)
    return _from_numpy(np.fft.fftfreq(n, d).astype(_freq_dtype(dtype, dev)), dev)


def rfftfreq(n, /, *, d=1.0, dtype=None, device=None):
    """The n // 2 + 1 non-negative sample frequencies of a length-n rfft."""
    dev = R.as_device(device)
    n = _length(n, None)
    return _from_numpy(np.fft.rfftfreq(n, d).astype(_freq_dtype(dtype, dev)), dev)


def _shift(x, axes, sign):
    x = _array(x)
    if axes is None:
        axes = tuple(range(x.ndim))
    elif isinstance(axes, (int, np.integer)):
        axes = (axes,)
    axes = tuple(_axis(a, x.ndim) for a in axes)
    if not axes:
        return x
    return roll(x, tuple(sign * (x.shape[a] // 2) for a in axes), axis=axes)


def fftshift(x, /, *, axes=None):
    """The zero frequency moved to the middle (a roll by n // 2 along each axis)."""
    return _shift(x, axes, 1)


def ifftshift(x, /, *, axes=None):
    """The inverse of fftshift."""
    return _shift(x, axes, -1)
