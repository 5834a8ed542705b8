"""metalcall.numpy.linalg's factorisations against numpy.linalg: solve, inv, det, slogdet,
cholesky, qr, eigh, eigvalsh, svd, svdvals — stacks, 0x0 and 1x1, non-square where allowed,
singular and indefinite matrices, bad input.

`ldev` (tests/numpy/conftest.py) is every device metalcall reports, and the CPU a second time with the GPU kernels (one
threadgroup of 32 threads per matrix, barriers run as fibers), so the kernels CUDA and Metal run
are checked here too. Factors that are unique only up to signs (eigenvectors, singular vectors)
are checked by what defines them: A V = V diag(w), U diag(s) Vh = A, orthonormal columns."""

from __future__ import annotations

import numpy as np
import pytest

import metalcall as mc
import metalcall.numpy as mnp

DTYPES = ("float32", "float64")
TOL = {"float32": 2e-4, "float64": 1e-10}


def dtypes_of(dev):
    return [d for d in DTYPES if not (d == "float64" and dev.backend == "metal")]


def rand(shape, dtype, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def close(got, want, dtype, scale=1.0):
    g = np.asarray(got)
    assert g.shape == np.shape(want), (g.shape, np.shape(want))
    assert g.dtype == np.dtype(dtype), (g.dtype, dtype)
    np.testing.assert_allclose(g, want, rtol=TOL[dtype], atol=TOL[dtype] * scale)


TOL.update({"complex64": TOL["float32"], "complex128": TOL["float64"]})


def orthonormal_columns(q, dtype):
    q = np.asarray(q, np.complex128)
    eye = np.broadcast_to(np.eye(q.shape[-1]), q.shape[:-2] + (q.shape[-1],) * 2)
    np.testing.assert_allclose(np.conj(np.swapaxes(q, -1, -2)) @ q, eye, atol=TOL[dtype] * 10)


def test_solve_inv_det_slogdet(ldev):
    for dt in dtypes_of(ldev):
        a = rand((3, 5, 5), dt) + 3 * np.eye(5, dtype=dt)
        b = rand((3, 5, 2), dt, 1)
        x = mnp.asarray(a, device=ldev)
        close(mnp.linalg.solve(x, mnp.asarray(b, device=ldev)), np.linalg.solve(a, b), dt)
        close(mnp.linalg.solve(x, mnp.asarray(b[0, :, 0], device=ldev)), np.linalg.solve(a, b[0, :, 0]), dt)
        close(mnp.linalg.inv(x), np.linalg.inv(a), dt)
        close(mnp.linalg.det(x), np.linalg.det(a), dt, scale=10)
        sign, logabs = mnp.linalg.slogdet(x)
        want = np.linalg.slogdet(a)
        close(sign, want.sign, dt)
        close(logabs, want.logabsdet, dt)
        # stacks broadcast: (2, 1, 3, 3) with (4, 3, 2)
        a2, b2 = rand((2, 1, 3, 3), dt, 2) + 2 * np.eye(3, dtype=dt), rand((4, 3, 2), dt, 3)
        close(mnp.linalg.solve(mnp.asarray(a2, device=ldev), mnp.asarray(b2, device=ldev)), np.linalg.solve(a2, b2), dt)
        # a pivot is needed at once
        p = np.array([[0.0, 2.0, 1.0], [1.0, 1.0, 0.0], [3.0, 0.0, 1.0]], dt)
        close(mnp.linalg.inv(mnp.asarray(p, device=ldev)), np.linalg.inv(p), dt)
        close(mnp.linalg.det(mnp.asarray(p, device=ldev)), np.linalg.det(p), dt)


def test_edge_shapes(ldev):
    dt = dtypes_of(ldev)[-1]
    one = np.array([[4.0]], dt)
    x1 = mnp.asarray(one, device=ldev)
    close(mnp.linalg.inv(x1), np.linalg.inv(one), dt)
    close(mnp.linalg.det(x1), np.linalg.det(one), dt)
    close(mnp.linalg.cholesky(x1), np.linalg.cholesky(one), dt)
    close(mnp.linalg.eigvalsh(x1), np.linalg.eigvalsh(one), dt)
    close(mnp.linalg.svdvals(x1), np.linalg.svd(one, compute_uv=False), dt)
    empty = np.zeros((2, 0, 0), dt)
    x0 = mnp.asarray(empty, device=ldev)
    close(mnp.linalg.det(x0), np.linalg.det(empty), dt)
    close(mnp.linalg.inv(x0), np.linalg.inv(empty), dt)
    close(mnp.linalg.cholesky(x0), np.linalg.cholesky(empty), dt)
    w, v = mnp.linalg.eigh(x0)
    assert w.shape == (2, 0) and v.shape == (2, 0, 0)
    sign, logabs = mnp.linalg.slogdet(x0)
    close(sign, np.ones(2, dt), dt)
    close(logabs, np.zeros(2, dt), dt)
    none = mnp.asarray(np.zeros((0, 3, 3), dt), device=ldev)
    assert mnp.linalg.inv(none).shape == (0, 3, 3) and mnp.linalg.det(none).shape == (0,)
    for shape in ((3, 0), (0, 3)):
        a = np.zeros(shape, dt)
        u, s, vh = mnp.linalg.svd(mnp.asarray(a, device=ldev))
        nu, ns, nvh = np.linalg.svd(a)
        close(u, nu, dt)
        close(s, ns, dt)
        close(vh, nvh, dt)
        q, r = mnp.linalg.qr(mnp.asarray(a, device=ldev), mode="complete")
        nq, nr = np.linalg.qr(a, mode="complete")
        close(q, nq, dt)
        close(r, nr, dt)


def test_singular(ldev):
    dt = dtypes_of(ldev)[0]
    s = np.array([[1.0, 2.0], [2.0, 4.0]], dt)
    x = mnp.asarray(np.stack([np.eye(2, dtype=dt), s]), device=ldev)
    for f in (mnp.linalg.inv, lambda a: mnp.linalg.solve(a, mnp.ones((2, 2, 1), dtype=dt, device=ldev))):
        with pytest.raises(mnp.linalg.LinAlgError, match="Singular"):
            f(x)
    assert issubclass(mnp.linalg.LinAlgError, mc.Error) and issubclass(mnp.linalg.LinAlgError, ValueError)
    close(mnp.linalg.det(x), np.linalg.det(np.stack([np.eye(2, dtype=dt), s])), dt)
    sign, logabs = mnp.linalg.slogdet(x)
    np.testing.assert_array_equal(np.asarray(sign), [1, 0])
    np.testing.assert_array_equal(np.asarray(logabs), [0, -np.inf])
    close(mnp.linalg.inv(x[:1]), np.eye(2, dtype=dt)[None], dt)  # the process goes on
    bad = np.array([[1.0, np.nan], [2.0, 3.0]], dt)
    for f in (mnp.linalg.svd, mnp.linalg.svdvals, mnp.linalg.pinv):
        with pytest.raises(mnp.linalg.LinAlgError, match="SVD did not converge"):
            f(mnp.asarray(bad, device=ldev))
    with pytest.raises(mnp.linalg.LinAlgError):
        mnp.linalg.svdvals(mnp.asarray(np.full((3, 2), np.inf, dt), device=ldev))


def test_cholesky(ldev):
    for dt in dtypes_of(ldev):
        m = rand((2, 6, 6), dt)
        a = m @ np.swapaxes(m, -1, -2) + 6 * np.eye(6, dtype=dt)
        lower, upper = a.copy(), a.copy()
        lower[:, 0, 5] = upper[:, 5, 0] = 1e3  # the other triangle is not read, as NumPy's
        close(mnp.linalg.cholesky(mnp.asarray(lower, device=ldev)), np.linalg.cholesky(lower), dt, scale=10)
        close(mnp.linalg.cholesky(mnp.asarray(upper, device=ldev), upper=True), np.linalg.cholesky(upper, upper=True),
              dt, scale=10)
        for bad in (-np.eye(3, dtype=dt), np.array([[1.0, 2.0], [2.0, 1.0]], dt), np.full((2, 2), np.nan, dt)):
            with pytest.raises(mnp.linalg.LinAlgError, match="positive definite"):
                mnp.linalg.cholesky(mnp.asarray(bad, device=ldev))


@pytest.mark.parametrize("shape", [(5, 5), (7, 4), (4, 7), (2, 6, 3)])
def test_qr(ldev, shape):
    for dt in dtypes_of(ldev):
        a = rand(shape, dt)
        x = mnp.asarray(a, device=ldev)
        for mode in ("reduced", "complete"):
            q, r = mnp.linalg.qr(x, mode=mode)
            nq, nr = np.linalg.qr(a, mode=mode)
            close(q, nq, dt, scale=10)  # LAPACK's sign convention, so the factors themselves match
            close(r, nr, dt, scale=10)
            close(np.asarray(q) @ np.asarray(r), a, dt, scale=10)
    zero_col = np.array([[0.0, 1.0], [0.0, 2.0], [0.0, 3.0]], dt)  # a reflector that is the identity
    q, r = mnp.linalg.qr(mnp.asarray(zero_col, device=ldev))
    close(np.asarray(q) @ np.asarray(r), zero_col, dt, scale=10)
    orthonormal_columns(q, dt)


def check_eigh(a, w, v, dt):
    a64 = np.asarray(a, np.complex128 if np.iscomplexobj(a) else np.float64)
    lower = np.tril(a64)  # the Hermitian matrix of the lower triangle, as NumPy's eigh reads it
    herm = lower + np.conj(np.swapaxes(np.tril(a64, -1), -1, -2))
    herm = herm - 1j * np.imag(np.diagonal(herm, axis1=-2, axis2=-1))[..., None] * np.eye(a.shape[-1]) \
        if np.iscomplexobj(a) else herm
    rdt = np.finfo(np.dtype(dt)).dtype.name
    close(w, np.linalg.eigvalsh(a64).astype(rdt), rdt, scale=10 * max(1.0, np.abs(a64).max()))
    assert np.asarray(v).dtype == np.dtype(dt)
    v64, w64 = np.asarray(v, np.complex128), np.asarray(w, np.float64)
    np.testing.assert_allclose(herm @ v64, v64 * w64[..., None, :], atol=TOL[dt] * 50 * max(1.0, np.abs(a64).max()))
    orthonormal_columns(v, dt)


@pytest.mark.parametrize("n", [1, 2, 5, 8])
def test_eigh(ldev, n):
    for dt in dtypes_of(ldev):
        m = rand((3, n, n), dt, n)
        a = (m + np.swapaxes(m, -1, -2)) / 2
        w, v = mnp.linalg.eigh(mnp.asarray(a, device=ldev))
        assert v.dtype == np.dtype(dt)
        check_eigh(a, w, v, dt)
        close(mnp.linalg.eigvalsh(mnp.asarray(a, device=ldev)), np.asarray(w), dt)
    lower = np.tril(a)  # only the lower triangle is read, as NumPy's eigh
    close(mnp.linalg.eigvalsh(mnp.asarray(lower, device=ldev)), np.linalg.eigvalsh(lower), dt, scale=10)


def test_eigh_degenerate(ldev):
    dt = dtypes_of(ldev)[-1]
    for a in (np.zeros((4, 4), dt), np.eye(5, dtype=dt) * 2, np.ones((6, 6), dt), np.diag([3.0, -1.0, 3.0, 0.0]).astype(dt)):
        w, v = mnp.linalg.eigh(mnp.asarray(a, device=ldev))
        check_eigh(a, w, v, dt)


def check_svd(a, u, s, vh, dt, full):
    a64 = np.asarray(a, np.complex128 if np.iscomplexobj(a) else np.float64)
    scale = 10 * max(1.0, np.abs(a64).max())
    rdt = np.finfo(np.dtype(dt)).dtype.name  # singular values are real
    close(s, np.linalg.svd(a64, compute_uv=False).astype(rdt), rdt, scale=scale)
    assert np.asarray(u).dtype == np.dtype(dt) and np.asarray(vh).dtype == np.dtype(dt)
    k = min(a.shape[-2:])
    u64, vh64 = np.asarray(u, np.complex128), np.asarray(vh, np.complex128)
    assert u64.shape[-1] == (a.shape[-2] if full else k) and vh64.shape[-2] == (a.shape[-1] if full else k)
    rebuilt = (u64[..., :, :k] * np.asarray(s, np.float64)[..., None, :]) @ vh64[..., :k, :]
    np.testing.assert_allclose(rebuilt, a64, atol=TOL[dt] * 50 * scale)
    orthonormal_columns(u, dt)
    orthonormal_columns(np.conj(np.swapaxes(vh64, -1, -2)), dt)


@pytest.mark.parametrize("shape", [(4, 4), (7, 3), (3, 7), (2, 6, 5), (1, 1), (3, 1)])
def test_svd(ldev, shape):
    for dt in dtypes_of(ldev):
        a = rand(shape, dt, 7)
        x = mnp.asarray(a, device=ldev)
        for full in (True, False):
            u, s, vh = mnp.linalg.svd(x, full_matrices=full)
            check_svd(a, u, s, vh, dt, full)
        close(mnp.linalg.svdvals(x), np.asarray(s), dt)


def test_svd_rank_deficient(ldev):
    dt = dtypes_of(ldev)[-1]
    r1 = np.outer(np.arange(1.0, 6.0), np.arange(1.0, 5.0)).astype(dt)  # rank 1
    dup = np.array([[1.0, 1.0, 2.0], [3.0, 3.0, 1.0], [0.0, 0.0, 5.0]], dt)  # equal columns
    for a in (r1, dup, np.zeros((3, 3), dt), np.zeros((5, 2), dt)):
        for full in (True, False):
            u, s, vh = mnp.linalg.svd(mnp.asarray(a, device=ldev), full_matrices=full)
            check_svd(a, u, s, vh, dt, full)


def test_integer_input_and_bad_input(ldev):
    ai = np.array([[2, 1], [1, 3]], np.int32)
    want = mnp.linalg.inv(mnp.asarray(ai, device=ldev))
    dt = "float32" if ldev.backend == "metal" else "float64"
    close(want, np.linalg.inv(ai).astype(dt), dt)
    x = mnp.asarray(np.ones((2, 3), np.float32), device=ldev)
    for call in (lambda: mnp.linalg.inv(x), lambda: mnp.linalg.det(mnp.ones(3, device=ldev)),
                 lambda: mnp.linalg.cholesky(mnp.ones((2, 2), dtype=mnp.float16, device=ldev)),
                 lambda: mnp.linalg.qr(x, mode="raw"), lambda: mnp.linalg.eigh(x),
                 lambda: mnp.linalg.solve(mnp.eye(2, device=ldev), mnp.ones(3, device=ldev))):
        with pytest.raises(mc.ArgumentError):
            call()


def test_huge_and_tiny_values_are_scaled(ldev):
    # Sums of squares of 1e200 (1e30 in float32) overflow, of 1e-200 underflow: the kernels scale
    # each matrix by a power of two first, as LAPACK scales its norms.
    for dt in dtypes_of(ldev):
        big = 1e30 if dt == "float32" else 1e200
        for scale in (big, 1 / big):
            a = (rand((2, 4, 3), dt, 11).astype(np.float64) * scale).astype(dt)
            x = mnp.asarray(a, device=ldev)
            close(np.asarray(mnp.linalg.svdvals(x)) / scale, np.linalg.svd(a.astype(np.float64) / scale,
                                                                            compute_uv=False).astype(dt), dt)
            q, r = mnp.linalg.qr(x)
            close(np.asarray(r) / scale, np.linalg.qr(a.astype(np.float64) / scale)[1].astype(dt), dt)
            sym = a[0, :3, :3] + a[0, :3, :3].T
            close(np.asarray(mnp.linalg.eigvalsh(mnp.asarray(sym, device=ldev))) / scale,
                  np.linalg.eigvalsh(sym.astype(np.float64) / scale).astype(dt), dt)


def crand(shape, dtype, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)


CTOL = {"complex64": 3e-4, "complex128": 1e-10}


def cclose(got, want, dtype):
    g = np.asarray(got)
    assert g.shape == np.shape(want) and g.dtype == np.asarray(want).dtype, (g.shape, g.dtype, np.asarray(want).dtype)
    np.testing.assert_allclose(g, want, rtol=CTOL[dtype], atol=CTOL[dtype] * 10)


def test_complex(ldev):
    # LU, Cholesky and QR kernels run complex arithmetic (la_* of linalg_common); svdvals, pinv,
    # matrix_rank and eigvalsh go through the real embedding [[Re, -Im], [Im, Re]].
    for dt in ("complex64",) + (("complex128",) if ldev.backend != "metal" else ()):
        a = crand((2, 4, 4), dt) + 3 * np.eye(4, dtype=dt)
        b = crand((2, 4, 2), dt, 1)
        x = mnp.asarray(a, device=ldev)
        cclose(mnp.linalg.inv(x), np.linalg.inv(a), dt)
        cclose(mnp.linalg.solve(x, mnp.asarray(b, device=ldev)), np.linalg.solve(a, b), dt)
        cclose(mnp.linalg.det(x), np.linalg.det(a), dt)
        sign, logabs = mnp.linalg.slogdet(x)
        want = np.linalg.slogdet(a)
        cclose(sign, want.sign, dt)
        cclose(logabs, want.logabsdet, dt)
        h = (a @ np.conj(np.swapaxes(a, -1, -2)) + np.eye(4)).astype(dt)
        cclose(mnp.linalg.cholesky(mnp.asarray(h, device=ldev)), np.linalg.cholesky(h), dt)
        cclose(mnp.linalg.cholesky(mnp.asarray(h, device=ldev), upper=True), np.linalg.cholesky(h, upper=True), dt)
        cclose(mnp.linalg.eigvalsh(mnp.asarray(np.tril(h), device=ldev)), np.linalg.eigvalsh(np.tril(h)), dt)
        t = crand((2, 5, 3), dt, 2)
        for mode in ("reduced", "complete"):
            q, r = mnp.linalg.qr(mnp.asarray(t, device=ldev), mode=mode)
            nq, nr = np.linalg.qr(t, mode=mode)
            cclose(q, nq, dt)
            cclose(r, nr, dt)
        xt = mnp.asarray(t, device=ldev)
        cclose(mnp.linalg.svdvals(xt), np.linalg.svd(t, compute_uv=False), dt)
        cclose(mnp.linalg.pinv(xt), np.linalg.pinv(t), dt)
        np.testing.assert_array_equal(np.asarray(mnp.linalg.matrix_rank(xt)), np.linalg.matrix_rank(t))
        for ord in ("fro", "nuc", 1, 2, -2, np.inf):
            cclose(mnp.linalg.matrix_norm(xt, ord=ord), np.linalg.matrix_norm(t, ord=ord), dt)
        for ord in (2, 1, 0, np.inf):
            cclose(mnp.linalg.vector_norm(xt, ord=ord, axis=-1), np.linalg.vector_norm(t, ord=ord, axis=-1), dt)
        singular = np.ones((2, 2), dt) * (1 + 1j)
        with pytest.raises(mnp.linalg.LinAlgError):
            mnp.linalg.inv(mnp.asarray(singular, device=ldev))
        for shape in ((4, 4), (2, 5, 3), (3, 6)):
            t = crand(shape, dt, 3)
            for full in (True, False):
                u, s, vh = mnp.linalg.svd(mnp.asarray(t, device=ldev), full_matrices=full)
                check_svd(t, u, s, vh, dt, full)
        for herm in (h, np.tril(h), np.eye(3, dtype=dt) * 2, np.diag([1.0, 1j, -1j]).astype(dt) + np.eye(3, dtype=dt)):
            w, v = mnp.linalg.eigh(mnp.asarray(herm, device=ldev))
            check_eigh(herm, w, v, dt)


def test_larger_matrices(ldev):
    # Groups of 64 and 128 threads on GPUs (the CPU's GPU-kernel run too: fibers), and many pairs
    # per thread in the Jacobi methods.
    dt = dtypes_of(ldev)[-1]
    n = 66
    a = rand((n, n), dt, 21) + np.sqrt(n) * np.eye(n, dtype=dt)
    x = mnp.asarray(a, device=ldev)
    close(mnp.linalg.solve(x, mnp.asarray(a[:, :3], device=ldev)), np.linalg.solve(a, a[:, :3]), dt, scale=10)
    close(mnp.linalg.cholesky(mnp.asarray(a @ a.T, device=ldev)), np.linalg.cholesky(a @ a.T), dt, scale=100)
    q, r = mnp.linalg.qr(x)
    close(np.asarray(q) @ np.asarray(r), a, dt, scale=100)
    sym = (a + a.T) / 2
    w, v = mnp.linalg.eigh(mnp.asarray(sym, device=ldev))
    check_eigh(sym, w, v, dt)
    u, s, vh = mnp.linalg.svd(x)
    check_svd(a, u, s, vh, dt, True)


def test_block_jacobi_svd(ldev):
    """_kernels/linalg_block_jacobi.py (what GPUs run for square matrices from 128 columns on: block
    pairs spread over threadgroups, Gram matrices, one launch per step) with small blocks here: a
    stack with a rank-deficient matrix, n not a multiple of the block, real and complex."""
    from metalcall.numpy._kernels import linalg_block_jacobi as bj

    for dt in dtypes_of(ldev) + (["complex128"] if ldev.backend != "metal" else []):
        n = 37
        a = rand((2, n, n), dt, 31)
        if dt.startswith("complex"):
            a = a + 1j * rand((2, n, n), "float64", 32)
        a[1, :, 3] = 0
        rdt = np.finfo(np.dtype(dt)).dtype
        s, u, vt = bj.svd_square(ldev, ldev.asarray(a), 2, n, dt, True, block=8)
        s = np.asarray(s).view(rdt).reshape(2, n)
        u, vt = (np.asarray(v).view(dt).reshape(2, n, n) for v in (u, vt))
        check_svd(a, u, s, vt, dt, True)
        only_s, _, _ = bj.svd_square(ldev, ldev.asarray(a), 2, n, dt, False, block=8)
        close(np.asarray(only_s).view(rdt).reshape(2, n), s, rdt.name, scale=10 * np.abs(a).max())
    with pytest.raises(mc.ArgumentError):
        bj.svd_square(ldev, ldev.asarray(np.eye(4)), 1, 4, "float64", True, block=4)
