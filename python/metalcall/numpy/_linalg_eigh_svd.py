"""eigh of matrices on GPUs past _linalg_eigh_tridiag's sizes (float32 2048, float64 and complex64
1024, complex128 512) through the SVD: A + cI, with c = max_i sum_j |a_ij| (Gershgorin: every
eigenvalue of A lies in [-c, c]), is positive semidefinite, so its SVD U S V^H has U = V and S =
the eigenvalues of A + cI: the eigenvalues of A are S - c (ascending once reversed) and the
columns of V its eigenvectors; with them, the eigenvalues are taken as Rayleigh quotients v^H A v
instead, accurate to eps ||A||, and sorted. That SVD is block one-sided Jacobi over the whole GPU
(_kernels/linalg_block_jacobi.py), where the element-by-element Jacobi eigh (one threadgroup a
matrix) took 710 ms for one 512^2 float32 matrix on the H200 and block Jacobi's svd 49 ms.
Without vectors (eigvalsh) the shift costs absolute accuracy of order eps c (c <= sqrt(n) ||A||)."""

from __future__ import annotations

from ._creation import eye, full
from ._elementwise import apply, real, tril
from ._indexing import take_along_axis
from ._linalg import matmul, vecdot
from ._sort import argsort
from ._manip import diagonal, flip, matrix_transpose
from ._reduce import max as amax, sum as asum

MIN_N = 64  # smaller matrices keep the one-threadgroup Jacobi eigh (stacks of them fill the GPU)


def eigh(x, svd, vectors):
    """(w (..., n) ascending, V (..., n, n) or None) of the Hermitian matrices of x's lower
    triangles, by `svd` (linalg's (U, S, Vh) of a stack). Where x holds NaN or inf (the SVD
    raises), every value and vector is NaN, as NumPy's eigh gives."""
    n = x.shape[-1]
    low = tril(x, k=-1)
    off = low + apply("conj", matrix_transpose(low)) if x.dtype.kind == "c" else low + matrix_transpose(low)
    d = real(diagonal(x))
    c = amax(asum(apply("abs", off), axis=-1) + apply("abs", d), axis=-1)  # (...,): Gershgorin's radius
    shifted = off + ((d + c[..., None])[..., :, None] * eye(n, dtype=d.dtype, device=x.device)).astype(x.dtype)
    try:
        _, s, vh = svd(shifted, False, vectors)
    except ValueError:  # LinAlgError: NaN or inf
        nan = float("nan")
        return (full(x.shape[:-1], nan, dtype=d.dtype, device=x.device),
                full(x.shape, nan, dtype=x.dtype, device=x.device) if vectors else None)
    if not vectors:
        return flip(s, axis=-1) - c[..., None], None
    v = matrix_transpose(flip(vh, axis=-2))
    if x.dtype.kind == "c":
        v = apply("conj", v)
    hermitian = off + (d[..., :, None] * eye(n, dtype=d.dtype, device=x.device)).astype(x.dtype)
    w = real(vecdot(v, matmul(hermitian, v), axis=-2))  # v_i^H A v_i
    order = argsort(w, axis=-1)
    return take_along_axis(w, order, axis=-1), take_along_axis(v, order[..., None, :], axis=-1)
