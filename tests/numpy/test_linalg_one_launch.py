"""The one-launch solvers of stacks of small systems against numpy.linalg: the SIMD-group kernel
(linalg_warp_solve.py: rows in registers, GPUs) and the threadgroup-memory kernel
(linalg_small_solve.py), each called directly at sizes around their limits (one and two rows a
lane, 32 and 33 equations), and through mnp.linalg.solve and inv: pivoting in every step, exact
ties (integer matrices, where getrf's first largest pivot decides the rounding), a singular matrix
inside a stack, NaN. On the CPU backend the GPU texts run too (cache.force_gpu_variants)."""

from __future__ import annotations

import numpy as np
import pytest

import metalcall as mc
import metalcall.numpy as mnp
from metalcall.numpy._kernels import cache, linalg_small_solve as small, linalg_warp_solve as warp

TOL = {"float32": 5e-4, "float64": 1e-11, "complex64": 5e-4, "complex128": 1e-11}


def systems(batch, n, k, dtype, seed):
    """Random systems whose pivots move rows in most steps (no diagonal dominance), well enough
    conditioned for the tolerances."""
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((batch, n, n))
    if np.dtype(dtype).kind == "c":
        a = a + 1j * rng.standard_normal((batch, n, n))
    a = a + np.sqrt(n) * np.eye(n)[::-1]  # large entries off the diagonal: pivots swap rows
    b = rng.standard_normal((batch, n, k))
    return a.astype(dtype), b.astype(dtype)


def dtypes(dev):
    return ("float32", "complex64") if dev.backend == "metal" else ("float32", "float64", "complex64", "complex128")


def run(module, dev, a, b, n, k):
    batch = a.shape[0]
    x = mnp.asarray(a, device=dev)
    buf_b = mnp.asarray(b, device=dev)._contiguous_buffer() if b is not None else None
    out, info = module.solve(dev, x._contiguous_buffer(), buf_b, batch, n, k, a.dtype)
    return np.asarray(out).view(a.dtype).reshape(batch, n, k), np.asarray(info)


def check(got, want, dtype):
    scale = np.abs(want).max()
    np.testing.assert_allclose(got, want, rtol=TOL[dtype], atol=TOL[dtype] * scale)


@pytest.mark.parametrize("n,k", [(1, 1), (2, 3), (7, 1), (31, 2), (32, 1), (33, 1), (64, 1)])
def test_kernels_against_numpy(ldev, n, k):
    use_warp = cache.force_gpu_variants or ldev.backend != "cpu"
    for dt in dtypes(ldev):
        a, b = systems(3, n, k, dt, seed=n * 10 + k)
        wide = np.complex128 if np.dtype(dt).kind == "c" else np.float64
        want = np.linalg.solve(a.astype(wide), b.astype(wide)).astype(dt)
        if use_warp and warp.rows_per_lane(n) * (n + k) * np.dtype(dt).itemsize // 4 <= warp.MAX_WORDS:
            got, info = run(warp, ldev, a, b, n, k)
            check(got, want, dt)
            assert not info.any()
        if small.usable(ldev, n, k, dt):
            got, info = run(small, ldev, a, b, n, k)
            check(got, want, dt)
            assert not info.any()


def test_inverse_and_stack_sizes(ldev):
    dt = dtypes(ldev)[0]
    # batches that do not fill the last threadgroup (4 systems a group)
    for batch in (1, 5, 9):
        a, _ = systems(batch, 6, 1, dt, seed=batch)
        check(np.asarray(mnp.linalg.inv(mnp.asarray(a, device=ldev))), np.linalg.inv(a), dt)
        b = np.random.default_rng(batch).standard_normal((batch, 6, 2)).astype(dt)
        check(np.asarray(mnp.linalg.solve(mnp.asarray(a, device=ldev), mnp.asarray(b, device=ldev))),
              np.linalg.solve(a, b), dt)


def test_ties_singular_nan(ldev):
    dt = dtypes(ldev)[-1]
    # exact ties in the pivot search: getrf takes the first largest, so the rounding matches NumPy's
    ints = np.random.default_rng(3).integers(-2, 3, size=(40, 8, 8)).astype(dt) + 4 * np.eye(8, dtype=dt)[::-1]
    rhs = (np.arange(40 * 8) % 5).astype(dt).reshape(40, 8, 1)
    ok = np.abs(np.linalg.det(ints)) > 0.5
    got = np.asarray(mnp.linalg.solve(mnp.asarray(ints[ok], device=ldev), mnp.asarray(rhs[ok], device=ldev)))
    check(got, np.linalg.solve(ints[ok], rhs[ok]), dt)
    # one exactly singular system inside a stack: LinAlgError, as NumPy's, and the device goes on
    stack = np.stack([np.eye(3, dtype=dt), np.array([[1, 2, 3], [2, 4, 6], [0, 1, 1]], dt), 2 * np.eye(3, dtype=dt)])
    with pytest.raises(mnp.linalg.LinAlgError, match="Singular"):
        mnp.linalg.solve(mnp.asarray(stack, device=ldev), mnp.ones((3, 3, 1), dtype=dt, device=ldev))
    with pytest.raises(mnp.linalg.LinAlgError, match="Singular"):
        mnp.linalg.inv(mnp.asarray(stack, device=ldev))
    check(np.asarray(mnp.linalg.inv(mnp.asarray(stack[::2], device=ldev))), np.linalg.inv(stack[::2]), dt)
    # NaN in a matrix: NaN in its solution (NumPy's too), the other systems exact
    bad = np.stack([np.eye(4, dtype=dt), np.eye(4, dtype=dt)])
    bad[1, 2, 1] = np.nan
    got = np.asarray(mnp.linalg.solve(mnp.asarray(bad, device=ldev), mnp.ones((2, 4, 1), dtype=dt, device=ldev)))
    np.testing.assert_array_equal(got[0], np.ones((4, 1), dt))
    assert np.isnan(got[1]).any()


@pytest.mark.parametrize("n", [5, 32, 64])
def test_stacks_sized_for_the_cpu(ldev, n):
    # from small.SIZED_BATCH systems the CPU backend compiles the kernel for the size (n = 64 in
    # float32 fits only that way); GPUs take the same path as for any stack
    batch = 4 if cache.force_gpu_variants else small.SIZED_BATCH  # (the GPU texts run as fibers here: slow)
    for dt in dtypes(ldev)[:2]:
        a, b = systems(batch, n, 2, dt, seed=n)
        got = mnp.linalg.solve(mnp.asarray(a, device=ldev), mnp.asarray(b, device=ldev))
        check(np.asarray(got), np.linalg.solve(a.astype(np.float64), b.astype(np.float64)).astype(dt), dt)
        if n == 5:
            check(np.asarray(mnp.linalg.inv(mnp.asarray(a, device=ldev))), np.linalg.inv(a), dt)
    if ldev.backend == "cpu" and not cache.force_gpu_variants:
        assert small.usable(ldev, 64, 1, "float32", batch) and not small.usable(ldev, 64, 1, "float32", 1)
