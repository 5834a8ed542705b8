"""The implementation of metalcall.numpy.random (random.py re-exports its public names): a
counter-based generator (the same numbers on every backend for a seed) —
default_rng(seed).random/normal/integers/uniform — and metallic's randn/rand/seed."""

from __future__ import annotations

import numpy as np

from . import _dtypes as D
from . import _fusion as F
from . import _runtime as R
from ._array import ndarray
from ._backend import kernels


def _shape(size):
    if size is None:
        return ()
    if isinstance(size, (int, np.integer)):
        return (int(size),)
    return tuple(int(s) for s in size)


class Generator:
    """Draws from (seed, counter): each draw uses a fresh range of counters, so streams never overlap."""

    def __init__(self, seed=None, device=None):
        if seed is None:
            seed = int(np.random.SeedSequence().generate_state(1, np.uint64)[0])
        self.seed = int(seed) & (2**63 - 1)
        self.counter = 0
        self.device = R.as_device(device)

    def _take(self, kind, count, dtype, low=0, high=1):
        """The counter for a draw, advanced past every counter the draw's kernel uses."""
        mod = kernels("random")
        c = self.counter
        used = getattr(mod, "blocks_used", None)
        self.counter += used(kind, count, dtype, low, high) if used else 2 * count + 4
        return c

    def _wrap(self, buf, shape, dtype):
        return ndarray._wrap(buf, shape, dtype, self.device)

    def random(self, size=None, dtype=None):
        """Uniform floats in [0, 1)."""
        shape = _shape(size)
        dt = D.as_dtype(dtype, self.device) if dtype is not None else D.default_float(self.device)
        n = F.prod(shape)
        buf = kernels("random").uniform(self.device, self.seed, self._take("uniform", n, dt), n, dt)
        return self._wrap(buf, shape, dt)

    def uniform(self, low=0.0, high=1.0, size=None, dtype=None):
        return self.random(size, dtype) * (high - low) + low

    def normal(self, loc=0.0, scale=1.0, size=None, dtype=None):
        shape = _shape(size)
        dt = D.as_dtype(dtype, self.device) if dtype is not None else D.default_float(self.device)
        n = F.prod(shape)
        buf = kernels("random").normal(self.device, self.seed, self._take("normal", n, dt), n, dt)
        out = self._wrap(buf, shape, dt)
        if loc != 0.0 or scale != 1.0:
            out = out * scale + loc
        return out

    def standard_normal(self, size=None, dtype=None):
        return self.normal(size=size, dtype=dtype)

    def integers(self, low, high=None, size=None, dtype=None, endpoint=False):
        if high is None:
            low, high = 0, low
        if endpoint:
            high += 1
        if high <= low:
            raise ValueError("high <= low")
        shape = _shape(size)
        dt = D.as_dtype(dtype, self.device) if dtype is not None else D.int64
        n = F.prod(shape)
        buf = kernels("random").integers(self.device, self.seed, self._take("integers", n, dt, low, high), n, low,
                                          high, dt)
        return self._wrap(buf, shape, dt)


def default_rng(seed=None, *, device=None):
    return Generator(seed, device)


_global = None


def _rng():
    global _global
    dev = R.default_device()
    if _global is None or _global.device != dev:
        _global = Generator(None, dev)
    return _global


def seed(s):
    """Re-seeds the module-level generator used by randn/rand/random."""
    global _global
    _global = Generator(s, R.default_device())


def randn(*shape):
    """metallic's mtl.random.randn(4): standard normal floats (float32 by default, metallic's type)."""
    return _rng().normal(size=shape, dtype=D.float32)


def rand(*shape):
    return _rng().random(size=shape, dtype=D.float32)


def random(size=None):
    return _rng().random(size)


def normal(loc=0.0, scale=1.0, size=None):
    return _rng().normal(loc, scale, size)


def integers(low, high=None, size=None):
    return _rng().integers(low, high, size)


def randint(low, high=None, size=None):
    return _rng().integers(low, high, size)
