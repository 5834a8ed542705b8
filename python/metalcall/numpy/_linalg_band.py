"""eigh and svd of real matrices on the CPU backend through _kernels/linalg_band.py (Householder
reduction to a band, the implicit QR algorithm) and linalg_backtransform.py (the vectors): which
matrices take that route, large stacks in slices (the rotation records take about 2 n^2 entries a
matrix), and the way back to Jacobi where a matrix's rotations outnumber the records kept."""

from __future__ import annotations

import numpy as np

from . import _fusion as F
from ._array import ndarray
from ._backend import kernels
from ._kernels import cache
from ._manip import concat, reshape

RECORDS_BYTES = 128 << 20  # the rotation records of one slice of a stack, at most (one matrix at least)


def usable(dev, dt, n):
    """Whether eigh and svd of n x n matrices of dtype dt take this route: real dtypes on the CPU
    backend, from n = 8 (below, Jacobi's few sweeps were 10-40% faster on stacks of 4x4; measured
    2026-12-02). GPUs keep Jacobi, whose block form met its target on the H200; complex dtypes too,
    so far."""
    return cache.uses_loops(dev) and dt.kind == "f" and 8 <= n < (1 << 16)


def _fits(parts):
    """False where a matrix's rotations outnumbered the records kept (waits for the kernel)."""
    return bool((np.asarray(parts["counts"]) <= parts["cap"]).all())


def _sliced(x, sides, vectors, one):
    """one(stack) over slices of the (batch, n, n) stack x small enough for their records, the
    results concatenated; None if any slice returns None."""
    batch, n = x.shape[0], x.shape[-1]
    per = sides * kernels("linalg_band").record_cap(n) * (4 + 2 * x.dtype.itemsize) if vectors else 0
    step = max(1, RECORDS_BYTES // per) if per else batch
    if batch <= step:
        return one(x)
    parts = []
    for i in range(0, batch, step):
        got = one(x[i:i + step])
        if got is None:
            return None
        parts.append(got)
    return tuple(None if p[0] is None else concat(list(p), axis=0) for p in zip(*parts))


def _reduced(x, routine, vectors):
    """(batch, n, device, dtype, the band kernels' parts) of routine ("eigh" or "svd") run on the
    (batch, n, n) stack x."""
    batch, n, dev, dt = x.shape[0], x.shape[-1], x.device, x.dtype
    parts = getattr(kernels("linalg_band"), routine)(dev, x._contiguous_buffer(), batch, n, dt, vectors)
    return batch, n, dev, dt, parts


def eigh(x, vectors):
    """(w (batch, n), V (batch, n, n) or None) of the (batch, n, n) stack x, or None: Jacobi's turn."""
    def one(x):
        batch, n, dev, dt, parts = _reduced(x, "eigh", vectors)
        bt = kernels("linalg_backtransform")
        w = ndarray._wrap(parts["w"], (batch, n), dt, dev)
        if not vectors:
            return w, None
        v = bt.vectors(dev, parts, batch, n, dt, refl="refl", nrefl=n - 2, off=1, tau_at=(n, 0),
                       rec_at=(parts["cap"], 0, 1, 0), rows_out=False)
        # queued first, checked after: the wait is for the reduction alone, the vectors run on
        return (w, ndarray._wrap(v, (batch, n, n), dt, dev)) if _fits(parts) else None
    return _sliced(x, 1, vectors, one)


def svd(x, vectors):
    """(s (batch, n), U, Vh (batch, n, n) or None) of the (batch, n, n) stack x, or None: Jacobi's turn."""
    def one(x):
        batch, n, dev, dt, parts = _reduced(x, "svd", vectors)
        bt = kernels("linalg_backtransform")
        s = ndarray._wrap(parts["s"], (batch, n), dt, dev)
        if not vectors:
            return s, None, None
        cap = parts["cap"]
        u = bt.vectors(dev, parts, batch, n, dt, refl="qrefl", nrefl=n, off=0, tau_at=(2 * n, 0),
                       rec_at=(2 * cap, 0, 2, 0), rows_out=False)
        vt = bt.vectors(dev, parts, batch, n, dt, refl="prefl", nrefl=n - 2, off=1, tau_at=(2 * n, n),
                        rec_at=(2 * cap, cap, 2, 1), rows_out=True)
        if not _fits(parts):  # (as eigh: checked once the vectors are queued)
            return None
        return s, ndarray._wrap(u, (batch, n, n), dt, dev), ndarray._wrap(vt, (batch, n, n), dt, dev)
    return _sliced(x, 2, vectors, one)


def stack(x):
    """x (..., n, n) as a (batch, n, n) stack."""
    return reshape(x, (F.prod(x.shape[:-2]),) + x.shape[-2:])
