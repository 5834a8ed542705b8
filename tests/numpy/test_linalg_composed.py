"""metalcall.numpy.linalg's functions made of other device operations against numpy.linalg:
matrix_norm, vector_norm, matrix_rank, pinv, matrix_power, cross, diagonal, trace, outer,
tensordot, vecdot, matmul, matrix_transpose — on every device metalcall reports."""

from __future__ import annotations

import math

import numpy as np
import pytest

import metalcall as mc
import metalcall.numpy as mnp
from mnp_check import check


def _dtype(device):
    return np.float32 if device.backend == "metal" else np.float64


def _tol(dt):
    return 1e-4 if dt == np.float32 else 1e-10


def test_namespace_has_the_whole_extension():
    names = ("cholesky cross det diagonal eigh eigvalsh inv matmul matrix_norm matrix_power matrix_rank "
             "matrix_transpose outer pinv qr slogdet solve svd svdvals tensordot trace vecdot vector_norm").split()
    assert all(callable(getattr(mnp.linalg, n)) for n in names)
    x = mnp.ones((2, 2))
    assert x.__array_namespace__().linalg is mnp.linalg


def test_matrix_norm(device):
    dt = _dtype(device)
    a = np.random.default_rng(3).standard_normal((2, 4, 3)).astype(dt)
    x = mnp.asarray(a, device=device)
    for ord in ("fro", "nuc", 1, -1, 2, -2, math.inf, -math.inf):
        check(mnp.linalg.matrix_norm(x, ord=ord), np.linalg.matrix_norm(a, ord=ord), rtol=_tol(dt))
    check(mnp.linalg.matrix_norm(x, keepdims=True), np.linalg.matrix_norm(a, keepdims=True), rtol=_tol(dt))
    with pytest.raises(mc.ArgumentError):
        mnp.linalg.matrix_norm(x, ord=3)


def test_vector_norm(device):
    dt = _dtype(device)
    a = np.random.default_rng(4).standard_normal((3, 4, 5)).astype(dt)
    a[0, 0, 0] = 0
    x = mnp.asarray(a, device=device)
    for ord in (2, 1, math.inf, -math.inf, 0, 3, 0.5, -1):
        for axis in (None, -1, (0, 2)):
            with np.errstate(divide="ignore"):  # NumPy warns for ord < 0 over a zero
                want = np.linalg.vector_norm(a, axis=axis, ord=ord)
            check(mnp.linalg.vector_norm(x, axis=axis, ord=ord), want, rtol=_tol(dt) * 10)
    check(mnp.linalg.vector_norm(x, axis=1, keepdims=True), np.linalg.vector_norm(a, axis=1, keepdims=True),
          rtol=_tol(dt))
    check(mnp.linalg.vector_norm(x, keepdims=True), np.linalg.vector_norm(a, keepdims=True), rtol=_tol(dt))
    ints = np.arange(6, dtype=np.int32)
    check(mnp.linalg.vector_norm(mnp.asarray(ints, device=device)), np.linalg.vector_norm(ints).astype(dt),
          rtol=_tol(dt))


def test_matrix_rank_and_pinv(device):
    dt = _dtype(device)
    rng = np.random.default_rng(5)
    full = rng.standard_normal((2, 5, 4)).astype(dt)
    low = (rng.standard_normal((5, 2)) @ rng.standard_normal((2, 4))).astype(dt)
    for a in (full, low, np.zeros((3, 3), dt)):
        x = mnp.asarray(a, device=device)
        check(mnp.linalg.matrix_rank(x), np.linalg.matrix_rank(a))
        check(mnp.linalg.pinv(x), np.linalg.pinv(a), rtol=1e-3 if dt == np.float32 else 1e-8, atol=_tol(dt))
    check(mnp.linalg.matrix_rank(mnp.asarray(low, device=device), rtol=0.5), np.linalg.matrix_rank(low, rtol=0.5))
    wide = rng.standard_normal((3, 6)).astype(dt)
    check(mnp.linalg.pinv(mnp.asarray(wide, device=device)), np.linalg.pinv(wide), rtol=1e-3, atol=_tol(dt))
    check(mnp.linalg.matrix_rank(mnp.zeros((2, 0, 3), device=device)), np.zeros(2, np.int64))
    assert mnp.linalg.pinv(mnp.zeros((0, 3), dtype=dt, device=device)).shape == (3, 0)


def test_matrix_power(device):
    dt = _dtype(device)
    a = (np.random.default_rng(6).standard_normal((2, 3, 3)) + 2 * np.eye(3)).astype(dt)
    x = mnp.asarray(a, device=device)
    for n in (0, 1, 2, 5, -1, -3):
        check(mnp.linalg.matrix_power(x, n), np.linalg.matrix_power(a, n), rtol=1e-3 if dt == np.float32 else 1e-9,
              atol=_tol(dt))
    ai = np.array([[1, 1], [1, 0]], np.int64)
    check(mnp.linalg.matrix_power(mnp.asarray(ai, device=device), 10), np.linalg.matrix_power(ai, 10))


def test_cross_diagonal_trace(device):
    dt = _dtype(device)
    rng = np.random.default_rng(7)
    a, b = rng.standard_normal((4, 3)).astype(dt), rng.standard_normal((2, 1, 3)).astype(dt)
    check(mnp.linalg.cross(mnp.asarray(a, device=device), mnp.asarray(b, device=device)), np.linalg.cross(a, b),
          rtol=_tol(dt), atol=_tol(dt))
    c = rng.standard_normal((3, 5)).astype(dt)
    check(mnp.linalg.cross(mnp.asarray(c, device=device), mnp.asarray(c[::-1].copy(), device=device), axis=0),
          np.cross(c, c[::-1], axis=0), rtol=_tol(dt), atol=_tol(dt))
    with pytest.raises(mc.ArgumentError):
        mnp.linalg.cross(mnp.asarray(c, device=device), mnp.asarray(c, device=device))
    m = np.arange(2 * 3 * 4, dtype=np.int32).reshape(2, 3, 4)
    x = mnp.asarray(m, device=device)
    for k in (0, 1, 3, 4, -1, -2, -3):
        check(mnp.linalg.diagonal(x, offset=k), np.linalg.diagonal(m, offset=k))
        check(mnp.linalg.trace(x, offset=k), np.linalg.trace(m, offset=k))
    check(mnp.linalg.diagonal(x.mT), np.linalg.diagonal(np.swapaxes(m, -1, -2)))
    check(mnp.linalg.trace(x, dtype=mnp.float32 if dt == np.float32 else mnp.float64),
          np.linalg.trace(m, dtype=dt))


def test_products(device):
    dt = _dtype(device)
    rng = np.random.default_rng(8)
    a, b = rng.standard_normal((2, 3, 4)).astype(dt), rng.standard_normal((4, 5)).astype(dt)
    x, y = mnp.asarray(a, device=device), mnp.asarray(b, device=device)
    check(mnp.linalg.matmul(x, y), np.linalg.matmul(a, b), rtol=_tol(dt) * 10, atol=_tol(dt))
    check(mnp.linalg.tensordot(x, y, axes=1), np.linalg.tensordot(a, b, axes=1), rtol=_tol(dt) * 10, atol=_tol(dt))
    check(mnp.linalg.vecdot(x, x), np.linalg.vecdot(a, a), rtol=_tol(dt) * 10)
    check(mnp.linalg.outer(y[0], y[1]), np.linalg.outer(b[0], b[1]), rtol=_tol(dt))
    with pytest.raises(mc.ArgumentError):
        mnp.linalg.outer(y, y[0])  # the extension's outer takes vectors only, as numpy.linalg's
    check(mnp.linalg.matrix_transpose(x), np.linalg.matrix_transpose(a))
