"""Reductions, statistics, cumulative sums, matmul/tensordot/vecdot, sort/argsort and random
against NumPy (through metalcall.numpy._kernels when present, else the fallback kernels)."""

import numpy as np
import pytest

import metalcall.numpy as mnp
from mnp_check import check

AXES = [None, 0, 1, -1, (0, 2), (-1, 0), (1, 2), ()]


@pytest.mark.parametrize("axis", AXES)
def test_reductions_axes(device, axis):
    a = (np.arange(60, dtype=np.float32).reshape(3, 4, 5) % 7) - 3
    x = mnp.asarray(a, device=device)
    for keep in (False, True):
        check(mnp.sum(x, axis=axis, keepdims=keep), a.sum(axis=axis, keepdims=keep), rtol=1e-6)
        check(mnp.max(x, axis=axis, keepdims=keep), a.max(axis=axis, keepdims=keep))
        check(mnp.min(x, axis=axis, keepdims=keep), a.min(axis=axis, keepdims=keep))
    check(mnp.mean(x, axis=axis), a.mean(axis=axis), rtol=1e-6)
    check(mnp.prod(x, axis=axis), a.prod(axis=axis), rtol=1e-5)
    check(mnp.var(x, axis=axis), a.var(axis=axis), rtol=1e-5, atol=1e-6)
    check(mnp.std(x, axis=axis, correction=1) if axis != () else mnp.std(x, axis=axis),
          a.std(axis=axis, ddof=1) if axis != () else a.std(axis=axis), rtol=1e-5, atol=1e-6)
    check(mnp.any(x > 2, axis=axis), (a > 2).any(axis=axis))
    check(mnp.all(x > -3, axis=axis), (a > -3).all(axis=axis))


def test_mean_of_whole_arrays_and_of_views(device):
    """mnp.mean of a stored array (the whole-array runner), of a view, a lazy expression, an
    integer array (the default float) and with dtype=, against NumPy."""
    a = np.random.default_rng(7).random(70001).astype(np.float32)
    x = mnp.asarray(a, device=device)
    for _ in range(2):
        check(mnp.mean(x), np.mean(a, dtype=np.float64).astype(np.float32), rtol=1e-5)
    check(mnp.mean(x[1::3]), np.mean(a[1::3], dtype=np.float64).astype(np.float32), rtol=1e-5)
    check(mnp.mean(x * 2 + 1), np.mean(a * 2 + 1, dtype=np.float64).astype(np.float32), rtol=1e-5)
    i = np.arange(1001, dtype=np.int32)
    xi = mnp.asarray(i, device=device)
    m = mnp.mean(xi)
    assert m.dtype.kind == "f"
    check(m, np.asarray(np.mean(i), dtype=m.dtype), rtol=1e-6)
    if device.backend != "metal":  # Metal has no double
        check(mnp.mean(x, dtype=mnp.float64), np.mean(a, dtype=np.float64), rtol=1e-9)
    assert np.isnan(float(mnp.mean(mnp.zeros(0, dtype=mnp.float32, device=device))))


def test_reduction_dtypes_and_edges(device):
    i8 = np.array([100, 100, 100], np.int8)
    x = mnp.asarray(i8, device=device)
    check(mnp.sum(x), i8.sum())  # int64 accumulator, as NumPy
    check(mnp.sum(mnp.asarray(np.array([200, 100], np.uint8), device=device)), np.array([200, 100], np.uint8).sum())
    check(mnp.sum(x, dtype=mnp.int8), i8.sum(dtype=np.int8))  # wraps
    check(mnp.sum(mnp.asarray([True, True, False], device=device)), np.sum([True, True, False]))
    e = mnp.zeros((0, 3), dtype=mnp.float32, device=device)
    check(mnp.sum(e, axis=0), np.zeros((0, 3), np.float32).sum(0))
    check(mnp.prod(e, axis=0), np.zeros((0, 3), np.float32).prod(0))
    check(mnp.sum(e, axis=1), np.zeros((0, 3), np.float32).sum(1))
    with pytest.raises(ValueError):
        mnp.max(e, axis=0)
    n = np.array([1.0, np.nan, 3.0], np.float32)
    check(mnp.max(mnp.asarray(n, device=device)), n.max())
    check(mnp.sum(mnp.asarray(n, device=device)), n.sum())
    check(mnp.sum(mnp.asarray(np.float32(4.0), device=device)), np.float32(4.0))


def test_argmax_argmin(device):
    a = np.array([[3, 9, 9, 1], [7, 2, 7, 0], [5, 5, 5, 5]], np.int32)
    x = mnp.asarray(a, device=device)
    for axis in (None, 0, 1, -1):
        check(mnp.argmax(x, axis=axis), np.argmax(a, axis=axis))
        check(mnp.argmin(x, axis=axis), np.argmin(a, axis=axis))
    check(mnp.argmax(x, axis=1, keepdims=True), np.argmax(a, axis=1, keepdims=True))
    f = np.array([1.0, np.nan, 5.0], np.float32)
    check(mnp.argmax(mnp.asarray(f, device=device)), np.argmax(f))
    check(x.argmax(axis=0), a.argmax(axis=0))


def test_cumulative_sum(device):
    a = np.arange(12, dtype=np.int32).reshape(3, 4)
    x = mnp.asarray(a, device=device)
    check(mnp.cumulative_sum(x, axis=1), np.cumsum(a, 1))
    check(mnp.cumulative_sum(x, axis=0), np.cumsum(a, 0))
    check(mnp.cumulative_sum(x[0], include_initial=True), np.concatenate([[0], np.cumsum(a[0])]))
    f = np.linspace(0, 1, 9, dtype=np.float32)
    check(mnp.cumsum(mnp.asarray(f, device=device)), np.cumsum(f), rtol=1e-6)


def test_matmul_family(device):
    rng = np.random.default_rng(1)
    a = rng.standard_normal((2, 3, 5)).astype(np.float32)
    b = rng.standard_normal((5, 4)).astype(np.float32)
    x, y = mnp.asarray(a, device=device), mnp.asarray(b, device=device)
    check(x @ y, a @ b, rtol=1e-5, atol=1e-5)
    check(mnp.matmul(x[0], y[:, 0]), a[0] @ b[:, 0], rtol=1e-5, atol=1e-5)
    check(mnp.matmul(y[:, 0], y), b[:, 0] @ b, rtol=1e-5, atol=1e-5)
    check(x.mT @ x, np.swapaxes(a, -1, -2) @ a, rtol=1e-5, atol=1e-5)
    check(mnp.tensordot(x, y, axes=1), np.tensordot(a, b, axes=1), rtol=1e-5, atol=1e-5)
    check(mnp.tensordot(x, x, axes=([1, 2], [1, 2])), np.tensordot(a, a, axes=([1, 2], [1, 2])), rtol=1e-5)
    check(mnp.vecdot(x, x), np.sum(a * a, axis=-1), rtol=1e-5)
    i = mnp.asarray(np.arange(6, dtype=np.int32).reshape(2, 3), device=device)
    check(i @ i.T, np.arange(6, dtype=np.int32).reshape(2, 3) @ np.arange(6, dtype=np.int32).reshape(2, 3).T)
    with pytest.raises(ValueError):
        x @ x
    z = mnp.zeros((2, 0), dtype=mnp.float32, device=device)
    check(z @ mnp.zeros((0, 3), dtype=mnp.float32, device=device), np.zeros((2, 3), np.float32))


def test_sort_argsort(device):
    a = np.array([[3.0, -1.0, np.nan, 2.0, -1.0], [0.0, 5.0, 4.0, 4.0, -2.0]], np.float32)
    x = mnp.asarray(a, device=device)
    check(mnp.sort(x), np.sort(a))
    check(mnp.sort(x, axis=0), np.sort(a, axis=0))
    check(mnp.argsort(x), np.argsort(a, kind="stable"))
    check(mnp.sort(x[1], descending=True), np.sort(a[1])[::-1])
    i = np.array([5, 1, 4, 1, 5, 9, 2, 6], np.int16)
    check(mnp.argsort(mnp.asarray(i, device=device)), np.argsort(i, kind="stable"))


def test_random_reproducible(device):
    r1 = mnp.random.default_rng(42, device=device)
    r2 = mnp.random.default_rng(42, device=device)
    u1, u2 = r1.random(1000, dtype=mnp.float32), r2.random(1000, dtype=mnp.float32)
    check(u1, np.asarray(u2))
    u = np.asarray(u1)
    assert u.min() >= 0 and u.max() < 1 and abs(u.mean() - 0.5) < 0.05
    assert not np.array_equal(np.asarray(r1.random(1000, dtype=mnp.float32)), u)  # the stream advances
    n = np.asarray(r1.normal(size=20000, dtype=mnp.float32))
    assert abs(n.mean()) < 0.05 and abs(n.std() - 1) < 0.05
    k = np.asarray(r1.integers(-3, 7, size=5000))
    assert k.dtype == np.int64 and k.min() == -3 and k.max() == 6
    assert mnp.random.randn(4).shape == (4,) and mnp.random.rand(2, 3).dtype == mnp.float32
