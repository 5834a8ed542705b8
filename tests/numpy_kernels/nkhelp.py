"""Helpers of the metalcall.numpy kernel tests."""

from __future__ import annotations

import numpy as np

import metalcall as mc
from metalcall.numpy._kernels import cache


def upload(dev: mc.Device, x: np.ndarray) -> mc.Buffer:
    """A C-contiguous array as a flat Buffer (an empty one for size 0)."""
    flat = np.ascontiguousarray(x).ravel()
    return dev.asarray(flat) if flat.size else dev.empty(0, flat.dtype)


def fetch(buf: mc.Buffer, shape) -> np.ndarray:
    return np.asarray(buf).reshape(shape).copy()


def fibers(dev: mc.Device) -> bool:
    """True when GPU kernel variants run as CPU fibers: keep sizes small there."""
    return dev.backend == "cpu" and cache.force_gpu_variants


def sample(rng, shape, dtype) -> np.ndarray:
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return rng.random(shape) < 0.5
    if dt.kind == "f":
        return rng.standard_normal(shape).astype(dt)
    info = np.iinfo(dt)
    lo, hi = max(info.min, -100), min(info.max, 100)
    return rng.integers(lo, hi, size=shape, endpoint=True).astype(dt)
