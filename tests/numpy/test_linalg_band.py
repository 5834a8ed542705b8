"""eigh and svd of real matrices on the CPU backend by Householder reduction to a band, the implicit
QR algorithm and the back-transformation (_kernels/linalg_band.py, linalg_backtransform.py),
against numpy.linalg: eigenvalues and singular values, the residuals A V - V diag(w) and
U diag(s) Vh - A, orthonormal vectors, at sizes from 1 to 130, stacks, non-square shapes, and
matrices that stress the algorithm (repeated and clustered eigenvalues, rank deficiency, zero
rows and columns, singular values over many decades). Bounds are multiples of n eps ||A||.
Matrices below 8 x 8 take Jacobi (_linalg_decomp._band_route); they are checked here too."""

from __future__ import annotations

import numpy as np
import pytest

import metalcall as mc
import metalcall.numpy as mnp
from metalcall.numpy import _linalg_band
from metalcall.numpy._kernels import linalg_band

DTYPES = ("float32", "float64")


@pytest.fixture(scope="module")
def cpu():
    return mc.Device("cpu")


def eps(dt):
    return float(np.finfo(dt).eps)


def rand(shape, dt, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(dt)


def with_spectrum(values, dt, seed=0, right=None):
    """Q diag(values) R^T for random orthogonal Q (and R; R = Q where `right` is None)."""
    n = len(values)
    rng = np.random.default_rng(seed)
    q, _ = np.linalg.qr(rng.standard_normal((n, n)))
    r = q if right is None else np.linalg.qr(rng.standard_normal((right, right)))[0][:, :n]
    return ((q * np.asarray(values, np.float64)) @ r.T).astype(dt)


def check_eigh(a, dt, cpu):
    n = a.shape[-1]
    w, v = mnp.linalg.eigh(mnp.asarray(a, device=cpu))
    w, v = np.asarray(w), np.asarray(v)
    assert w.dtype == v.dtype == np.dtype(dt)
    a64 = np.asarray(a, np.float64)
    norm = max(np.abs(np.linalg.eigvalsh(a64)).max(), np.finfo(dt).tiny)
    bound = 20 * max(n, 4) * eps(dt)
    np.testing.assert_allclose(w, np.linalg.eigvalsh(a64), rtol=0, atol=bound * norm)
    v64 = v.astype(np.float64)
    np.testing.assert_allclose(a64 @ v64, v64 * w.astype(np.float64)[..., None, :], rtol=0, atol=bound * norm)
    eye = np.broadcast_to(np.eye(n), v.shape)
    np.testing.assert_allclose(np.swapaxes(v64, -1, -2) @ v64, eye, rtol=0, atol=bound)
    np.testing.assert_allclose(np.asarray(mnp.linalg.eigvalsh(mnp.asarray(a, device=cpu))), w, rtol=0,
                               atol=bound * norm)


def check_svd(a, dt, cpu, full_matrices=False):
    m, n = a.shape[-2:]
    k = min(m, n)
    u, s, vh = mnp.linalg.svd(mnp.asarray(a, device=cpu), full_matrices=full_matrices)
    u, s, vh = np.asarray(u), np.asarray(s), np.asarray(vh)
    assert u.dtype == s.dtype == vh.dtype == np.dtype(dt)
    assert s.shape == a.shape[:-2] + (k,)
    a64 = np.asarray(a, np.float64)
    want = np.linalg.svd(a64, compute_uv=False)
    norm = max(want.max(), np.finfo(dt).tiny)
    bound = 20 * max(m, n, 4) * eps(dt)
    np.testing.assert_allclose(s, want, rtol=0, atol=bound * norm)
    u64, vh64 = u.astype(np.float64), vh.astype(np.float64)
    np.testing.assert_allclose((u64[..., :, :k] * s.astype(np.float64)[..., None, :]) @ vh64[..., :k, :], a64,
                               rtol=0, atol=bound * norm)
    for q, side in ((u64, -1), (vh64, -2)):
        cols = q if side == -1 else np.swapaxes(q, -1, -2)
        eye = np.broadcast_to(np.eye(cols.shape[-1]), cols.shape[:-2] + (cols.shape[-1],) * 2)
        np.testing.assert_allclose(np.swapaxes(cols, -1, -2) @ cols, eye, rtol=0, atol=bound)
    np.testing.assert_allclose(np.asarray(mnp.linalg.svdvals(mnp.asarray(a, device=cpu))), s, rtol=0,
                               atol=bound * norm)


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("n", [1, 2, 3, 7, 8, 9, 33, 130])
def test_eigh_random(cpu, dt, n):
    a = rand((n, n), dt, n)
    check_eigh((a + a.T) / 2, dt, cpu)


@pytest.mark.parametrize("dt", DTYPES)
def test_eigh_stack_reads_lower_triangle(cpu, dt):
    a = rand((3, 2, 20, 20), dt, 1)
    sym = np.tril(a) + np.swapaxes(np.tril(a, -1), -1, -2)
    w, v = mnp.linalg.eigh(mnp.asarray(np.tril(a) + 5 * np.triu(a, 1), device=cpu))  # the upper part is ignored
    np.testing.assert_allclose(np.asarray(w), np.linalg.eigvalsh(sym.astype(np.float64)), rtol=0,
                               atol=400 * eps(dt) * np.abs(sym).sum(-1).max())
    check_eigh(sym, dt, cpu)


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("case", ["identity", "zero", "diagonal", "repeated", "cluster", "graded", "rank2", "wilkinson"])
def test_eigh_hard(cpu, dt, case):
    n = 40
    if case == "identity":
        a = np.eye(n, dtype=dt)
    elif case == "zero":
        a = np.zeros((n, n), dt)
    elif case == "diagonal":
        a = np.diag(np.arange(n, 0, -1)).astype(dt)
    elif case == "repeated":  # three eigenvalues, each many times
        a = with_spectrum(np.repeat([-1.0, 2.0, 5.0], [10, 20, 10]), dt)
    elif case == "cluster":  # distinct but within 1e-5 relative of each other
        a = with_spectrum(1 + 1e-5 * np.arange(n) / n, dt)
    elif case == "graded":  # eigenvalues over 12 decades, of both signs
        a = with_spectrum(np.logspace(0, -12, n) * np.resize([1, -1], n), dt)
    elif case == "rank2":
        x = rand((n, 2), dt)
        a = (x @ x.T).astype(dt)
    else:  # Wilkinson's W+: pairs of nearly equal eigenvalues
        m = n // 2
        a = (np.diag(np.abs(np.arange(-m, n - m))) + np.eye(n, k=1) + np.eye(n, k=-1)).astype(dt)
    check_eigh(a, dt, cpu)


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("shape", [(1, 1), (2, 2), (5, 5), (8, 8), (9, 9), (64, 64), (130, 130), (3, 4, 4),
                                   (2, 3, 17, 17), (40, 25), (25, 40), (2, 50, 9), (2, 9, 50), (20, 3)])
def test_svd_random(cpu, dt, shape):
    check_svd(rand(shape, dt, shape[-1]), dt, cpu)


@pytest.mark.parametrize("dt", DTYPES)
def test_svd_full_matrices(cpu, dt):
    for shape in ((30, 12), (12, 30)):
        a = rand(shape, dt, 3)
        u, s, vh = (np.asarray(v) for v in mnp.linalg.svd(mnp.asarray(a, device=cpu)))
        assert u.shape == (shape[0],) * 2 and vh.shape == (shape[1],) * 2
        check_svd(a, dt, cpu, full_matrices=True)


@pytest.mark.parametrize("dt", DTYPES)
@pytest.mark.parametrize("case", ["identity", "zero", "rank3", "zero_column", "zero_row", "graded", "repeated",
                                  "bidiagonal_zero", "tiny"])
def test_svd_hard(cpu, dt, case):
    n = 36
    if case == "identity":
        a = np.eye(n, dtype=dt)
    elif case == "zero":
        a = np.zeros((n, n), dt)
    elif case == "rank3":
        a = (rand((n, 3), dt) @ rand((3, n), dt, 1)).astype(dt)
    elif case == "zero_column":
        a = rand((n, n), dt)
        a[:, 5] = 0
    elif case == "zero_row":
        a = rand((n, n), dt)
        a[7, :] = 0
    elif case == "graded":  # condition number 1e12 (float64), 1e6 (float32)
        a = with_spectrum(np.logspace(0, -12 if dt == "float64" else -6, n), dt, right=n)
    elif case == "repeated":
        a = with_spectrum(np.repeat([3.0, 1.0, 0.5], 12), dt, right=n)
    elif case == "bidiagonal_zero":  # already bidiagonal, with zero diagonal entries inside and at the end
        d = np.arange(1, n + 1, dtype=np.float64)
        d[[4, 17, n - 1]] = 0
        a = (np.diag(d) + np.diag(np.linspace(1, 2, n - 1), 1)).astype(dt)
    else:  # values near the smallest normal number: the scaling keeps them
        a = (rand((n, n), dt) * np.finfo(dt).tiny * 64).astype(dt)
    check_svd(a, dt, cpu)


@pytest.mark.parametrize("dt", DTYPES)
def test_record_overflow_takes_jacobi(cpu, dt, monkeypatch):
    """Where a matrix's rotations outnumber the records allocated, the results come from Jacobi."""
    monkeypatch.setattr(linalg_band, "record_cap", lambda n: 4)
    a = rand((24, 24), dt, 5)
    check_eigh((a + a.T) / 2, dt, cpu)
    check_svd(a, dt, cpu)


@pytest.mark.parametrize("dt", DTYPES)
def test_stack_in_slices(cpu, dt, monkeypatch):
    """A stack whose records would pass RECORDS_BYTES goes in slices (here of two matrices)."""
    monkeypatch.setattr(_linalg_band, "RECORDS_BYTES", 2 * 2 * linalg_band.record_cap(12) * (4 + 2 * np.dtype(dt).itemsize))
    a = rand((5, 12, 12), dt, 7)
    check_eigh((a + np.swapaxes(a, -1, -2)) / 2, dt, cpu)
    check_svd(a, dt, cpu)


def test_nan_input(cpu):
    a = rand((10, 10), "float64")
    a[2, 3] = np.nan
    with pytest.raises(mnp.linalg.LinAlgError):
        mnp.linalg.svd(mnp.asarray(a, device=cpu))
    w = np.asarray(mnp.linalg.eigvalsh(mnp.asarray(a + a.T, device=cpu)))
    assert np.isnan(w).all()
