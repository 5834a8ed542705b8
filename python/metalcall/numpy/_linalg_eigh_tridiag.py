"""eigh and eigvalsh of Hermitian (real symmetric) matrices on GPUs from 64 x 64 through a real
tridiagonal matrix (_kernels/linalg_sytrd.py: the reduction over the whole GPU, a launch per step;
_kernels/linalg_tridiag.py: multisection and inverse iteration, the reflectors applied to the
vectors). Here: the order (the kernels give each split block's values ascending, the blocks in T's
order) and one Newton-Schulz step Z (3I - Z^T Z) / 2 between inverse iteration and the
back-transformation: inverse iteration leaves vectors of neighbouring eigenvalues outside a
cluster orthogonal only to about EPS ||T|| / gap (at most 1e3 EPS); the step takes that to its
square and moves each residual by about EPS ||T||."""

from __future__ import annotations

from ._array import ndarray
from ._backend import kernels
from ._creation import eye, zeros
from ._elementwise import real
from ._indexing import take_along_axis
from ._linalg import matmul
from ._manip import matrix_transpose
from ._sort import argsort, sort


def usable(dev, dt, n):
    return kernels("linalg_tridiag").usable(dev, dt, n)


def eigh(x, vectors):
    """(w (..., n) ascending, V (..., n, n) or None) of the Hermitian (real symmetric) matrices of x's
    lower triangles. NaN or inf in a matrix gives NaN values and vectors, as NumPy's."""
    td = kernels("linalg_tridiag")
    bs, n, dt, dev = x.shape[:-2], x.shape[-1], x.dtype, x.device
    rdt = real(zeros((), dtype=dt, device=dev)).dtype  # T, its values and vectors are real
    batch = 1
    for s in bs:
        batch *= s
    parts = td.tridiagonal(dev, x._contiguous_buffer(), batch, n, dt)
    w = ndarray._wrap(td.values(dev, parts, batch, n, rdt), bs + (n,), rdt, dev)
    if not vectors:
        return sort(w, axis=-1), None
    z = ndarray._wrap(td.vectors(dev, parts, batch, n, rdt), bs + (n, n), rdt, dev)
    z = matmul(z, 1.5 * eye(n, dtype=rdt, device=dev) - 0.5 * matmul(matrix_transpose(z), z)).astype(dt)
    v = ndarray._wrap(td.back(dev, parts, z._contiguous_buffer(), batch, n, dt), bs + (n, n), dt, dev)
    order = argsort(w, axis=-1)
    return take_along_axis(w, order, axis=-1), take_along_axis(v, order[..., None, :], axis=-1)
