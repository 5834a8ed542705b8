"""eigh of matrices from 64 x 64 on GPUs (through a tridiagonal matrix, _linalg_eigh_tridiag.py;
past its sizes block Jacobi's SVD of A + cI, _linalg_eigh_svd.py, which test_svd_route takes
directly), against numpy.linalg: eigenvalues, A V = V diag(w), orthonormal V, for real and
complex stacks, repeated eigenvalues and pairs of opposite sign (the case a plain SVD cannot tell
apart), and NaN input. Each GPU runs it; the CPU runs it too with the GPU kernels
(cache.force_gpu_variants), as CUDA runs them."""

from __future__ import annotations

import numpy as np
import pytest

import metalcall.numpy as mnp
from metalcall.numpy import _linalg_eigh_svd


def _metal(dev):
    return dev.backend.startswith("metal")  # no double there


def hermitian(a):
    low = np.tril(a, -1)
    h = low + np.conj(np.swapaxes(low, -1, -2))
    idx = np.arange(a.shape[-1])
    h[..., idx, idx] = a[..., idx, idx].real
    return h


def check(a, dt, dev):
    n = a.shape[-1]
    eps = np.finfo(dt).eps
    w, v = (np.asarray(t) for t in mnp.linalg.eigh(mnp.asarray(a, device=dev)))
    assert w.dtype == np.finfo(dt).dtype and v.dtype == np.dtype(dt)
    h = hermitian(a.astype(np.complex128 if np.dtype(dt).kind == "c" else np.float64))
    want = np.linalg.eigvalsh(h)
    norm = max(np.abs(want).max(), 1.0)
    bound = 10 * n * eps * norm
    np.testing.assert_allclose(w, want, rtol=0, atol=bound)
    # The residual scales with the 1-norm (LAPACK's eigenvector tests divide by n eps |A|_1): on
    # the H200 the repeated case's residual was 11 n eps |A|_2, with |A|_1 several times |A|_2.
    shift = np.abs(h).sum(-1).max()  # also eigvalsh's: the shifted values, accurate to about eps c
    np.testing.assert_allclose(h @ v, v * w[..., None, :], rtol=0, atol=10 * n * eps * max(shift, 1.0))
    eye = np.broadcast_to(np.eye(n), v.shape)
    np.testing.assert_allclose(np.conj(np.swapaxes(v, -1, -2)) @ v, eye, rtol=0, atol=10 * n * eps)
    np.testing.assert_allclose(np.asarray(mnp.linalg.eigvalsh(mnp.asarray(a, device=dev))), want, rtol=0,
                               atol=10 * n * eps * max(shift, 1.0))


@pytest.mark.parametrize("dt", ["float32", "float64", "complex64", "complex128"])
def test_random_stack(gdev, dt):
    if _metal(gdev) and dt in ("float64", "complex128"):
        pytest.skip("no double on Metal")
    rng = np.random.default_rng(3)
    a = rng.standard_normal((2, 70, 70))
    if np.dtype(dt).kind == "c":
        a = a + 1j * rng.standard_normal((2, 70, 70))
    check(a.astype(dt), dt, gdev)


@pytest.mark.parametrize("case", ["identity", "opposite_pairs", "repeated", "zero"])
def test_hard(gdev, case):
    n = _linalg_eigh_svd.MIN_N
    q, _ = np.linalg.qr(np.random.default_rng(4).standard_normal((n, n)))
    if case == "identity":
        a = np.eye(n)
    elif case == "opposite_pairs":  # eigenvalues +-1, +-2, ...: equal singular values
        a = (q * np.resize(np.repeat([1.0, -1.0], 1), n) * np.repeat(np.arange(1, n // 2 + 1), 2)) @ q.T
    elif case == "repeated":
        a = (q * np.repeat([-3.0, 0.5, 2.0, 2.0], n // 4)) @ q.T
    else:
        a = np.zeros((n, n))
    dt = "float32" if _metal(gdev) else "float64"
    check(a.astype(dt), dt, gdev)


@pytest.mark.parametrize("dt", ["float32", "complex128"])
def test_svd_route(gdev, dt):
    """_linalg_eigh_svd itself (eigh takes it past the tridiagonal route's sizes)."""
    from metalcall.numpy._linalg_decomp import _svd
    if _metal(gdev) and dt == "complex128":
        pytest.skip("no double on Metal")
    n = 70
    rng = np.random.default_rng(6)
    a = rng.standard_normal((2, n, n)) + (1j * rng.standard_normal((2, n, n)) if dt == "complex128" else 0)
    h = hermitian(a)
    want = np.linalg.eigvalsh(h)
    x = mnp.asarray(a.astype(dt), device=gdev)
    w, v = (np.asarray(t) for t in _linalg_eigh_svd.eigh(x, _svd, True))
    eps = np.finfo(dt).eps
    bound = 10 * n * eps * np.abs(want).max()
    np.testing.assert_allclose(w, want, rtol=0, atol=bound)
    np.testing.assert_allclose(h @ v, v * w[..., None, :], rtol=0, atol=bound)
    np.testing.assert_allclose(np.conj(np.swapaxes(v, -1, -2)) @ v, np.broadcast_to(np.eye(n), v.shape), rtol=0,
                               atol=10 * n * eps)
    vals, _ = _linalg_eigh_svd.eigh(x, _svd, False)
    np.testing.assert_allclose(np.asarray(vals), want, rtol=0, atol=10 * n * eps * np.abs(h).sum(-1).max())


def test_nan(gdev):
    a = np.random.default_rng(5).standard_normal((70, 70)).astype(np.float32 if _metal(gdev) else np.float64)
    a[3, 1] = np.nan
    assert np.isnan(np.asarray(mnp.linalg.eigvalsh(mnp.asarray(a, device=gdev)))).all()
    w, v = mnp.linalg.eigh(mnp.asarray(a, device=gdev))
    assert np.isnan(np.asarray(w)).all() and np.isnan(np.asarray(v)).all()
