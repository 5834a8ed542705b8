"""The factorisations of metalcall.numpy.linalg, computed on the device by the kernels of
_kernels/linalg_*.py (one threadgroup per matrix of a stack): cholesky, det, slogdet, inv, solve
(LU with partial pivoting; small systems in one launch: a SIMD-group per system on GPUs,
_kernels/linalg_warp_solve.py, else _kernels/linalg_small_solve.py), qr
(Householder), eigh, eigvalsh, svd, svdvals (Householder QR when the matrices are not square, then,
for real dtypes on the CPU backend, Householder reduction to a band, the implicit QR algorithm and
the back-transformation, _linalg_band.py; elsewhere Jacobi: one-sided for svd, on GPUs block
one-sided Jacobi over the whole GPU, _kernels/linalg_block_jacobi.py; eigh on GPUs from 64x64 by
Householder reduction to a real tridiagonal matrix over the whole GPU, multisection and inverse
iteration, _linalg_eigh_tridiag.py, and past its sizes that SVD of A + cI, _linalg_eigh_svd.py).

Integer and bool inputs compute in the device's default float (float64, float32 on Metal), as
NumPy's linalg does; float16 is refused as NumPy refuses it. Where NumPy raises LinAlgError
(inv and solve of an exactly singular matrix, cholesky of one that is not positive definite) we
raise LinAlgError, a metalcall.Error and a ValueError, and so does svd (svdvals, pinv, ...) of a
matrix with NaN or inf, as NumPy's "SVD did not converge"; det and slogdet of a singular matrix are
0 and (0, -inf), as NumPy's. Finding out needs the factorisation's status on the host: those
functions wait for their kernel."""

from __future__ import annotations

from collections import namedtuple

import numpy as np

import metalcall as mc

from . import _dtypes as D
from . import _fusion as F
from ._array import ndarray
from . import _linalg_band as _band
from . import _linalg_eigh_svd as _eigh_svd
from . import _linalg_eigh_tridiag as _eigh_td
from ._kernels import cache
from ._backend import kernels
from ._creation import asarray, eye, zeros
from ._dtype_functions import result_type
from ._elementwise import real
from ._linalg import matmul
from ._manip import broadcast_shapes, broadcast_to, concat, matrix_transpose, reshape


class LinAlgError(mc.Error, ValueError):
    """The matrix cannot be factored as asked: singular (inv, solve), not positive definite
    (cholesky). Also a ValueError, as numpy.linalg.LinAlgError is."""


EighResult = namedtuple("EighResult", ["eigenvalues", "eigenvectors"])
EigResult = namedtuple("EigResult", ["eigenvalues", "eigenvectors"])
QRResult = namedtuple("QRResult", ["Q", "R"])
SlogdetResult = namedtuple("SlogdetResult", ["sign", "logabsdet"])
SVDResult = namedtuple("SVDResult", ["U", "S", "Vh"])


def float_dtype(dt, device, name):
    """The dtype linalg computes arrays of dtype `dt` in (see the module's docstring)."""
    if dt.kind in "biu":
        return D.default_float(device)
    if dt not in (D.float32, D.float64, D.complex64, D.complex128):
        raise mc.ArgumentError(f"linalg.{name}: arrays of {dt} are not supported (float32, float64, complex64, "
                               "complex128; integers are computed in the default float)")
    return dt


def matrices(x, name, *, square=True):
    """`x` as a stack of matrices in its linalg dtype: (x, dtype, batch_shape, rows, columns)."""
    if not isinstance(x, ndarray):
        x = asarray(x)
    if x.ndim < 2:
        raise mc.ArgumentError(f"linalg.{name}: needs an array of at least 2 dimensions, got shape {x.shape}")
    m, n = x.shape[-2:]
    if square and m != n:
        raise mc.ArgumentError(f"linalg.{name}: needs square matrices in the last two dimensions, got {m}x{n}")
    dt = float_dtype(x.dtype, x.device, name)
    return x.astype(dt, copy=False), dt, x.shape[:-2], m, n


def wrap(buf, shape, dtype, device):
    return ndarray._wrap(buf, shape, dtype, device)


def _raise_if_any(info, message):
    status = np.asarray(info)  # waits for the factorisation
    if status.any():
        raise LinAlgError(message)


def _lu(x, dt, batch, n):
    return kernels("linalg_lu").lu(x.device, x._contiguous_buffer(), batch, n, dt)


def _one_launch(dev, a, b, batch, n, k, dt):
    """X of A X = B (b None: the inverse) by one kernel where the systems are small (None where
    not): a SIMD-group per system, rows in registers, on GPUs; else the system in threadgroup
    memory (on the CPU backend, one thread per system). Raises LinAlgError for a zero pivot."""
    for name in ("linalg_warp_solve", "linalg_small_solve"):
        kern = kernels(name)
        if kern.usable(dev, n, k, dt, batch):
            out, info = kern.solve(dev, a, b, batch, n, k, dt)
            _raise_if_any(info, "Singular matrix")
            return out
    return None


def cholesky(x, /, *, upper=False):
    x, dt, bs, n, _ = matrices(x, "cholesky")
    batch = F.prod(bs)
    if batch * n == 0:
        return zeros(x.shape, dtype=dt, device=x.device)
    src = matrix_transpose(x) if upper else x  # NumPy reads the triangle it returns
    lower, info = kernels("linalg_chol_qr").cholesky(x.device, src._contiguous_buffer(), batch, n, dt)
    _raise_if_any(info, "Matrix is not positive definite")
    out = wrap(lower, x.shape, dt, x.device)
    return matrix_transpose(out) if upper else out


def _determinants(x, name):
    x, dt, bs, n, _ = matrices(x, name)
    batch = F.prod(bs)
    if batch == 0 or n == 0:  # the determinant of a 0x0 matrix is 1
        values = np.tile(np.array([1.0, 1.0, 0.0], dt), (batch, 1))
        return asarray(values, device=x.device), bs
    lu_buf, piv, _ = _lu(x, dt, batch, n)
    out = kernels("linalg_lu").determinants(x.device, lu_buf, piv, batch, n, dt)
    return wrap(out, (batch, 3), dt, x.device), bs


def det(x, /):
    out, bs = _determinants(x, "det")
    return reshape(out[:, 0], bs)


def slogdet(x, /):
    out, bs = _determinants(x, "slogdet")
    return SlogdetResult(reshape(out[:, 1], bs), reshape(real(out[:, 2]), bs))


def inv(x, /):
    x, dt, bs, n, _ = matrices(x, "inv")
    batch = F.prod(bs)
    if batch * n == 0:
        return zeros(x.shape, dtype=dt, device=x.device)
    one = _one_launch(x.device, x._contiguous_buffer(), None, batch, n, n, dt)
    if one is not None:
        return wrap(one, x.shape, dt, x.device)
    lu_buf, piv, info = _lu(x, dt, batch, n)
    _raise_if_any(info, "Singular matrix")
    out = kernels("linalg_lu").solve(x.device, lu_buf, piv, None, batch, n, n, dt)
    return wrap(out, x.shape, dt, x.device)


def solve(x1, x2, /):
    """X with x1 @ X = x2. As NumPy 2 and the standard (2024.12): x2 is one vector when it is
    1-D, else a stack of (M, K) matrices; the stacks broadcast."""
    x1, dt1, bs1, n, _ = matrices(x1, "solve")
    if not isinstance(x2, ndarray):
        x2 = asarray(x2, device=x1.device)
    if x2.device != x1.device:
        raise mc.ArgumentError("linalg.solve: the arrays are on different devices")
    dt = result_type(dt1, float_dtype(x2.dtype, x2.device, "solve"))
    vector = x2.ndim == 1
    if vector:
        if x2.shape[0] != n:
            raise mc.ArgumentError(f"linalg.solve: x2 has {x2.shape[0]} elements, x1 is {n}x{n}")
        bs, k = bs1, 1
        rhs = broadcast_to(reshape(x2, (n, 1)), bs + (n, 1))
    else:
        if x2.ndim < 2 or x2.shape[-2] != n:
            raise mc.ArgumentError(f"linalg.solve: x2 of shape {x2.shape} does not fit x1 of shape {x1.shape}")
        k = x2.shape[-1]
        try:
            bs = broadcast_shapes(bs1, x2.shape[:-2])
        except ValueError as e:
            raise mc.ArgumentError(f"linalg.solve: the stacks of shapes {x1.shape} and {x2.shape} do not broadcast") from e
        rhs = x2 if x2.shape == bs + (n, k) else broadcast_to(x2, bs + (n, k))
    out_shape = bs + ((n,) if vector else (n, k))
    batch = F.prod(bs)
    if batch * n * k == 0:
        return zeros(out_shape, dtype=dt, device=x1.device)
    a = x1.astype(dt, copy=False)
    if a.shape != bs + (n, n):  # (a view per call cost as much as the kernels of a small stack)
        a = broadcast_to(a, bs + (n, n))
    b = rhs.astype(dt, copy=False)._contiguous_buffer()
    one = _one_launch(x1.device, a._contiguous_buffer(), b, batch, n, k, dt)
    if one is not None:
        return wrap(one, out_shape, dt, x1.device)
    lu_buf, piv, info = _lu(a, dt, batch, n)
    _raise_if_any(info, "Singular matrix")
    out = kernels("linalg_lu").solve(x1.device, lu_buf, piv, b, batch, n, k, dt)
    return wrap(out, out_shape, dt, x1.device)


def qr(x, /, *, mode="reduced"):
    if mode not in ("reduced", "complete"):
        raise mc.ArgumentError(f"linalg.qr: mode must be 'reduced' or 'complete', not {mode!r}")
    x, dt, bs, m, n = matrices(x, "qr", square=False)
    batch, kmin = F.prod(bs), min(m, n)
    qcols = m if mode == "complete" else kmin
    if batch * kmin == 0:
        q = broadcast_to(eye(m, qcols, dtype=dt, device=x.device), bs + (m, qcols)).copy()
        return QRResult(q, zeros(bs + (qcols, n), dtype=dt, device=x.device))
    q, r = kernels("linalg_chol_qr").qr(x.device, x._contiguous_buffer(), batch, m, n, dt, mode == "complete")
    return QRResult(wrap(q, bs + (m, qcols), dt, x.device), wrap(r, bs + (qcols, n), dt, x.device))


def _eigh(x, name, vectors):
    x, dt, bs, n, _ = matrices(x, name)
    rdt = real(zeros((), dtype=dt, device=x.device)).dtype  # eigenvalues are real
    batch = F.prod(bs)
    if batch * n == 0:
        return zeros(bs + (n,), dtype=rdt, device=x.device), zeros(x.shape, dtype=dt, device=x.device)
    done = _band.usable(x.device, dt, n) and _band.eigh(_band.stack(x), vectors)
    if done:
        w, v = done
        return reshape(w, bs + (n,)), (reshape(v, x.shape) if vectors else None)
    if _eigh_td.usable(x.device, dt, n):
        return _eigh_td.eigh(x, vectors)
    if not cache.uses_loops(x.device) and n >= _eigh_svd.MIN_N:
        return _eigh_svd.eigh(x, _svd, vectors)
    w, v = kernels("linalg_jacobi").eigh(x.device, x._contiguous_buffer(), batch, n, dt, vectors)
    return wrap(w, bs + (n,), rdt, x.device), (wrap(v, x.shape, dt, x.device) if vectors else None)


def eigh(x, /):
    return EighResult(*_eigh(x, "eigh", True))


def eigvalsh(x, /):
    return _eigh(x, "eigvalsh", False)[0]


def _eig(x, name, vectors):
    """(w (..., n), V (..., n, n) or None) of general matrices, complex whatever x's dtype (the
    standard's eig: complex64 for float32, complex128 for float64), by _kernels/linalg_eig.py."""
    x, dt, bs, n, _ = matrices(x, name)
    cdt = D.complex64 if dt in (D.float32, D.complex64) else D.complex128
    x = x.astype(cdt, copy=False)
    batch = F.prod(bs)
    if batch * n == 0:
        return zeros(bs + (n,), dtype=cdt, device=x.device), zeros(x.shape, dtype=cdt, device=x.device)
    w, v, info = kernels("linalg_eig").eig(x.device, x._contiguous_buffer(), batch, n, cdt, vectors)
    status = np.asarray(info)  # waits for the kernel
    if (status < 0).any():
        raise LinAlgError("Array must not contain infs or NaNs")
    if status.any():
        raise LinAlgError("Eigenvalues did not converge")
    return wrap(w, bs + (n,), cdt, x.device), (wrap(v, x.shape, cdt, x.device) if vectors else None)


def eig(x, /):
    """The array API's linalg.eig (2025.12): eigenvalues (..., n) and eigenvectors (columns of
    (..., n, n), unit 2-norm, largest entry real) of general matrices, both complex."""
    return EigResult(*_eig(x, "eig", True))


def eigvals(x, /):
    return _eig(x, "eigvals", False)[0]


def _svd(x, full_matrices, vectors):
    """(U, S, Vh) of a stack of float matrices; U and Vh are None unless `vectors`."""
    bs, (m, n) = x.shape[:-2], x.shape[-2:]
    if m < n:  # A^T = U S Vh gives A = Vh^T S U^T
        u, s, vh = _svd(matrix_transpose(x), full_matrices, vectors)
        return (matrix_transpose(vh) if vectors else None), s, (matrix_transpose(u) if vectors else None)
    dt, dev, batch = x.dtype, x.device, F.prod(bs)
    rdt = real(zeros((), dtype=dt, device=dev)).dtype  # singular values are real
    ucols = m if full_matrices else n
    if batch * n == 0:
        u = broadcast_to(eye(m, ucols, dtype=dt, device=dev), bs + (m, ucols)).copy()
        v = broadcast_to(eye(n, dtype=dt, device=dev), bs + (n, n)).copy()
        return u, zeros(bs + (n,), dtype=rdt, device=dev), v
    q = None
    if m > n:  # A = Q R: the SVD of the square R, then U = Q U_R
        q, r = qr(x, mode="complete" if full_matrices and vectors else "reduced")
        x = r[..., :n, :]
    done = _band.usable(dev, dt, n) and _band.svd(_band.stack(x), vectors)
    if done:
        s, u, vt = done
    else:
        block = kernels("linalg_block_jacobi")
        square = block.svd_square if block.usable(dev) else kernels("linalg_jacobi").svd_square
        s, u, vt = square(dev, x._contiguous_buffer(), batch, n, dt, vectors)
        s = wrap(s, (batch, n), rdt, dev)
        u, vt = (wrap(u, (batch, n, n), dt, dev), wrap(vt, (batch, n, n), dt, dev)) if vectors else (None, None)
    if np.isnan(np.asarray(s)).any():  # waits; NaN or inf in the input, where LAPACK does not converge
        raise LinAlgError("SVD did not converge")
    s = reshape(s, bs + (n,))
    if not vectors:
        return None, s, None
    u, vt = reshape(u, bs + (n, n)), reshape(vt, bs + (n, n))
    if q is not None:
        left = matmul(q[..., :, :n], u)
        u = concat([left, q[..., :, n:]], axis=-1) if ucols > n else left
    return u, s, vt


def svd(x, /, *, full_matrices=True):
    x, _, _, _, _ = matrices(x, "svd", square=False)
    return SVDResult(*_svd(x, full_matrices, True))


def svdvals(x, /):
    x, _, _, _, _ = matrices(x, "svdvals", square=False)
    return _svd(x, False, False)[1]
