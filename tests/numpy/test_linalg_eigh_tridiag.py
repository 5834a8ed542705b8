"""eigh and eigvalsh of real and complex matrices from 64 x 64 on GPUs through a tridiagonal matrix
(_kernels/linalg_sytrd.py, linalg_tridiag.py, _linalg_eigh_tridiag.py) against numpy.linalg:
eigenvalues, A V = V diag(w) and V^H V = I to 10 n EPS ||A||, for stacks, sizes past a power of
two, the lower triangle alone read, and hard spectra (repeated and clustered eigenvalues, graded, rank 2, Wilkinson's
pairs, the identity, zero). Each GPU runs it; the CPU runs it too with the GPU kernels
(cache.force_gpu_variants), as CUDA runs them."""

from __future__ import annotations

import numpy as np
import pytest

import metalcall.numpy as mnp
from metalcall.numpy._kernels import linalg_sytrd, linalg_tridiag


def _dtypes(dev, complex_too=False):
    metal = dev.backend.startswith("metal")  # no double there
    real = ["float32"] if metal else ["float32", "float64"]
    return real + ((["complex64"] if metal else ["complex64", "complex128"]) if complex_too else [])


def check(a, dt, dev):
    """a: a stack of Hermitian matrices (or any, only the lower triangle and the diagonal's real part
    counting, as NumPy's eigh reads them)."""
    n = a.shape[-1]
    eps = np.finfo(dt).eps
    assert linalg_tridiag.usable(dev, np.dtype(dt), n)
    x = mnp.asarray(a.astype(dt), device=dev)
    w, v = (np.asarray(t) for t in mnp.linalg.eigh(x))
    assert w.dtype == np.finfo(dt).dtype and v.dtype == np.dtype(dt) and v.shape == a.shape
    low = np.tril(a.astype(dt).astype(np.complex128))
    h = low + np.conj(np.swapaxes(np.tril(low, -1), -1, -2)) - 1j * np.imag(low) * np.eye(n)
    if np.dtype(dt).kind == "f":
        h = h.real
    want = np.linalg.eigvalsh(h)
    norm = max(np.abs(want).max(), 1.0)
    bound = 10 * n * eps * norm
    np.testing.assert_allclose(w, want, rtol=0, atol=bound)
    np.testing.assert_allclose(h @ v, v * w[..., None, :], rtol=0, atol=bound)
    np.testing.assert_allclose(np.conj(np.swapaxes(v, -1, -2)) @ v, np.broadcast_to(np.eye(n), v.shape), rtol=0,
                               atol=10 * n * eps)
    np.testing.assert_allclose(np.asarray(mnp.linalg.eigvalsh(x)), want, rtol=0, atol=bound)


def _hermitian_noise(shape, seed):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(shape) + 1j * rng.standard_normal(shape)
    return a + np.conj(np.swapaxes(a, -1, -2))


@pytest.mark.parametrize("shape", [(64, 64), (3, 70, 70), (130, 130)])
def test_random(gdev, shape):
    rng = np.random.default_rng(sum(shape))
    a = rng.standard_normal(shape)
    for dt in _dtypes(gdev):
        check((a + np.swapaxes(a, -1, -2)) / 2, dt, gdev)
    for dt in _dtypes(gdev, True)[len(_dtypes(gdev)):]:
        check(_hermitian_noise(shape, 1), dt, gdev)


def test_lower_triangle_only(gdev):
    a = np.random.default_rng(7).standard_normal((2, 66, 66)) * (1 + 1j)
    for dt in _dtypes(gdev, True):  # the upper part (and the diagonal's imaginary part) ignored, as NumPy's eigh
        check(np.tril(a) + 9 * np.triu(a, 1) if np.dtype(dt).kind == "c" else np.tril(a.real) + 9 * np.triu(a.real, 1),
              dt, gdev)


def _hard(case, n, cplx):
    """A matrix of a hard case; with `cplx`, spectra are given by a complex unitary matrix."""
    m = n // 2
    rng = np.random.default_rng(4)
    q, _ = np.linalg.qr(rng.standard_normal((n, n)) + (1j * rng.standard_normal((n, n)) if cplx else 0))

    def spectrum(w):
        return (q * w) @ np.conj(q.T)
    if case == "identity":
        return np.eye(n)
    if case == "zero":
        return np.zeros((n, n))
    if case == "diagonal":
        return np.diag(np.arange(n, 0, -1.0))
    if case == "repeated":  # three eigenvalues, each many times
        return spectrum(np.repeat([-1.0, 2.0, 5.0], [20, 30, n - 50]))
    if case == "cluster":  # distinct but within 1e-5 relative of each other
        return spectrum(1 + 1e-5 * np.arange(n) / n)
    if case == "graded":  # eigenvalues over 12 decades, of both signs
        return spectrum(np.logspace(0, -12, n) * np.resize([1, -1], n))
    if case == "rank2":
        x = np.random.default_rng(1).standard_normal((n, 2)) * (1 + 1j if cplx else 1)
        return x @ np.conj(x.T)
    if case == "wilkinson":  # Wilkinson's W+: pairs of nearly equal eigenvalues
        return np.diag(np.abs(np.arange(-m, n - m))) + np.eye(n, k=1) + np.eye(n, k=-1) * (1j if cplx else 1)
    if case == "ones":
        return np.ones((n, n))
    if case == "opposite_pairs":
        return spectrum(np.repeat(np.arange(1, m + 1.0), 2) * np.resize([1.0, -1.0], n))
    # scaled by a power of two inside: no overflow or underflow in the sums of squares
    return spectrum(np.linspace(-1, 1, n)) * (1e30 if case == "huge" else 1e-30)


@pytest.mark.parametrize("case", ["identity", "zero", "diagonal", "repeated", "cluster", "graded", "rank2",
                                  "wilkinson", "ones", "opposite_pairs", "huge", "tiny"])
def test_hard(gdev, case):
    for dt in _dtypes(gdev, True):
        cplx = np.dtype(dt).kind == "c"
        a = _hard(case, 70, cplx)
        check(a if cplx else a.real, dt, gdev)


@pytest.mark.parametrize("tail", [0, 5, 40, None])
def test_tail(gdev, tail, monkeypatch):
    """The last steps in one launch (td_tail) from any step, the whole reduction included (None:
    as many as the threadgroup memory holds; 0: a launch per step)."""
    monkeypatch.setattr(linalg_sytrd, "TAIL_ROWS", tail)
    a = np.random.default_rng(8).standard_normal((2, 72, 72))
    for dt in _dtypes(gdev):
        check(a + np.swapaxes(a, -1, -2), dt, gdev)
    for dt in _dtypes(gdev, True)[len(_dtypes(gdev)):]:
        check(_hermitian_noise((2, 72, 72), 8), dt, gdev)
    assert linalg_sytrd.tail_refused is None  # the tail ran (else the steps did its work)


def test_batched_steps(gdev, monkeypatch):
    """BATCH_STEPS: the step launches in one dev.batch(), alone or inside the caller's batch."""
    monkeypatch.setattr(linalg_sytrd, "BATCH_STEPS", True)
    monkeypatch.setattr(linalg_sytrd, "TAIL_ROWS", 20)
    a = np.random.default_rng(9).standard_normal((2, 66, 66))
    check(a + np.swapaxes(a, -1, -2), "float32", gdev)
    sym = (a + np.swapaxes(a, -1, -2)).astype(np.float32)
    with gdev.batch():
        w = mnp.linalg.eigvalsh(mnp.asarray(sym, device=gdev))
    want = np.linalg.eigvalsh(sym.astype(np.float64))
    bound = 10 * 66 * np.finfo(np.float32).eps * np.abs(want).max()
    np.testing.assert_allclose(np.asarray(w), want, rtol=0, atol=bound)


def test_graph_steps(gdev, monkeypatch):
    """GRAPH_STEPS: the reduction's launches recorded once per shape and replayed; calls on
    different matrices of one shape share the recording, each result its own."""
    monkeypatch.setattr(linalg_sytrd, "GRAPH_STEPS", True)
    monkeypatch.setattr(linalg_sytrd, "TAIL_ROWS", 20)
    rng = np.random.default_rng(10)
    for dt in _dtypes(gdev, True):
        cplx = np.dtype(dt).kind == "c"
        mats = [_hermitian_noise((2, 66, 66), i) if cplx else (lambda m: m + np.swapaxes(m, -1, -2))(
            rng.standard_normal((2, 66, 66))) for i in range(2)]
        got = [mnp.linalg.eigh(mnp.asarray(m.astype(dt), device=gdev)) for m in mats]  # both queued first
        for m, (w, _) in zip(mats, got):
            want = np.linalg.eigvalsh(m)
            np.testing.assert_allclose(np.asarray(w), want, rtol=0,
                                       atol=10 * 66 * np.finfo(dt).eps * np.abs(want).max())
        check(mats[0], dt, gdev)


@pytest.mark.parametrize("n", [2, 3, 5, 16, 33])
def test_small(gdev, n, monkeypatch):
    """Sizes below MIN_N (Jacobi's on GPUs; the benchmarks compare both routes there)."""
    monkeypatch.setattr(linalg_tridiag, "MIN_N", 2)
    a = np.random.default_rng(n).standard_normal((3, n, n))
    for dt in _dtypes(gdev):
        check(a + np.swapaxes(a, -1, -2), dt, gdev)


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_nan(gdev, bad):
    """A matrix holding NaN or inf gets NaN values (as NumPy's) and NaN vectors; the stack's others are right."""
    a = np.random.default_rng(5).standard_normal((2, 70, 70))
    a[1, 3, 1] = bad
    for dt in _dtypes(gdev, True):
        x = mnp.asarray(a.astype(dt), device=gdev)
        assert np.isnan(np.asarray(mnp.linalg.eigvalsh(x))[1]).all()
        w, v = (np.asarray(t) for t in mnp.linalg.eigh(x))
        assert np.isnan(w[1]).all() and np.isnan(v[1]).all()
        np.testing.assert_allclose(w[0], np.linalg.eigvalsh(np.tril(a[0]) + np.tril(a[0], -1).T),
                                   rtol=0, atol=700 * np.finfo(dt).eps * 20)


def test_route(gdev):
    """Which sizes and dtypes take this route: real from MIN_N, within the threadgroup memory."""
    assert not linalg_tridiag.usable(gdev, np.dtype("float32"), linalg_tridiag.MIN_N - 1)
    assert linalg_tridiag.usable(gdev, np.dtype("complex64"), 1024) == (gdev.threadgroup_memory_length >= 28 * 1024)
    assert linalg_tridiag.usable(gdev, np.dtype("float32"), 2048) == (gdev.threadgroup_memory_length >= 28 * 1024)
    assert not linalg_tridiag.usable(gdev, np.dtype("float32"), 2049)
