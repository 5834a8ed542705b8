"""Manipulation and indexing against NumPy: views, copies, boolean masks, take, setitem."""

import numpy as np
import pytest

import metalcall.numpy as mnp
from mnp_check import check


@pytest.fixture
def arr(device):
    a = np.arange(24, dtype=np.int32).reshape(2, 3, 4)
    return a, mnp.asarray(a, device=device)


def test_shape_functions(arr):
    a, x = arr
    check(mnp.reshape(x, (4, -1)), a.reshape(4, -1))
    check(mnp.reshape(x.T, (-1,)), a.T.reshape(-1))
    check(mnp.permute_dims(x, (2, 0, 1)), a.transpose(2, 0, 1))
    check(mnp.expand_dims(x, axis=-1), a[..., None])
    check(mnp.squeeze(x[:, :1], axis=1), a[:, 0])
    check(mnp.flip(x), np.flip(a))
    check(mnp.flip(x, axis=(0, 2)), np.flip(a, (0, 2)))
    check(mnp.matrix_transpose(x), np.swapaxes(a, -1, -2))
    check(mnp.moveaxis(x, 0, -1), np.moveaxis(a, 0, -1))
    check(mnp.broadcast_to(x[:, :1], (2, 3, 4)), np.broadcast_to(a[:, :1], (2, 3, 4)))
    b1, b2 = mnp.broadcast_arrays(x[0, 0], x[:, :, :1])
    check(b1, np.broadcast_arrays(a[0, 0], a[:, :, :1])[0])
    check(mnp.concat([x, x[:, :1]], axis=1), np.concatenate([a, a[:, :1]], 1))
    check(mnp.concat([x, x], axis=None), np.concatenate([a, a], axis=None))
    check(mnp.stack([x[0], x[1]], axis=-1), np.stack([a[0], a[1]], -1))
    check(mnp.roll(x, 2, axis=2), np.roll(a, 2, 2))
    check(mnp.tile(x[0, 0], (2, 2)), np.tile(a[0, 0], (2, 2)))
    check(mnp.unstack(x, axis=1)[2], a[:, 2])
    with pytest.raises(ValueError):
        mnp.reshape(x, (5, 5))
    with pytest.raises(ValueError):
        mnp.broadcast_to(x, (3, 3, 4))


def test_basic_indexing_is_a_view(arr):
    a, x = arr
    check(x[1], a[1])
    check(x[-1, ::-1, 1:3], a[-1, ::-1, 1:3])
    check(x[None, ..., 0], a[None, ..., 0])
    check(x[1, 2, 3], a[1, 2, 3])
    v = x[0, 1:]
    v[...] = 0
    e = a.copy()
    e[0, 1:] = 0
    check(x, e)
    with pytest.raises(IndexError):
        x[2]
    with pytest.raises(IndexError):
        x[0, 0, 0, 0]


def test_advanced_reads(arr):
    a, x = arr
    check(x[x > 10], a[a > 10])
    check(x[np.array([True, False])], a[np.array([True, False])])
    check(x[mnp.asarray([1, 0, 1], device=x.device)], a[[1, 0, 1]])
    check(mnp.take(x, mnp.asarray([3, -1, 0], device=x.device), axis=2), np.take(a, [3, -1, 0], axis=2))
    check(mnp.take(x[0, 0], mnp.asarray([[0, 1], [2, 3]], device=x.device)), np.take(a[0, 0], [[0, 1], [2, 3]]))


def test_setitem(arr):
    a, x = arr
    e = a.copy()
    x[0, 0] = mnp.asarray([9, 8, 7, 6], device=x.device)
    e[0, 0] = [9, 8, 7, 6]
    x[:, 1, ::2] = 5
    e[:, 1, ::2] = 5
    x[1] = x[0]
    e[1] = e[0]
    x[x > 8] = -1
    e[e > 8] = -1
    x[:, 2] = [1, 2, 3, 4]
    e[:, 2] = [1, 2, 3, 4]
    check(x, e)
    b = mnp.broadcast_to(x[0, 0], (3, 4))
    with pytest.raises(ValueError):
        b[0] = 1


def test_data_dependent_functions(device):
    a = np.array([[3, 0, 1], [0, 3, 2]], np.int32)
    x = mnp.asarray(a, device=device)
    for got, want in zip(mnp.nonzero(x), np.nonzero(a)):
        check(got, want.astype(np.int64))
    check(mnp.unique_values(x), np.unique(a))
    v, c = mnp.unique_counts(x)
    ev, ec = np.unique(a, return_counts=True)
    check(v, ev)
    check(c, ec.astype(np.int64))
    check(mnp.unique_inverse(x).inverse_indices, np.unique(a, return_inverse=True)[1].reshape(a.shape).astype(np.int64))
    check(mnp.repeat(x, 2, axis=1), np.repeat(a, 2, axis=1))
    check(mnp.repeat(x[0], mnp.asarray([1, 0, 3], device=device)), np.repeat(a[0], [1, 0, 3]))
    s = np.array([1.0, 2.0, 2.0, 5.0, np.nan], np.float32)
    q = np.array([0.0, 2.0, 3.0, 9.0, np.nan], np.float32)
    xs, xq = mnp.asarray(s, device=device), mnp.asarray(q, device=device)
    check(mnp.searchsorted(xs, xq), np.searchsorted(s, q))
    check(mnp.searchsorted(xs, xq, side="right"), np.searchsorted(s, q, side="right"))
    check(mnp.count_nonzero(x, axis=0), np.count_nonzero(a, axis=0).astype(np.int64))
    check(mnp.diff(x, axis=1), np.diff(a, axis=1))
    check(mnp.diff(x[0], n=2), np.diff(a[0], n=2))


def test_scatter_assignment(arr):
    a, x = arr
    e = a.copy()
    x[mnp.asarray([1, 0], device=x.device)] = 0
    e[[1, 0]] = 0
    x[[0]] = mnp.asarray(np.arange(12, dtype=np.int32).reshape(1, 3, 4), device=x.device)
    e[[0]] = np.arange(12).reshape(1, 3, 4)
    m = a[..., 0] > 10
    x[m] = mnp.asarray(np.arange(int(m.sum()) * 4, dtype=np.int32).reshape(-1, 4), device=x.device)
    e[m] = np.arange(int(m.sum()) * 4).reshape(-1, 4)
    check(x, e)
    f = np.arange(6, dtype=np.float32)
    y = mnp.asarray(f, device=x.device)
    y[y > 2] = [10, 20, 30]
    f[f > 2] = [10, 20, 30]
    y[[-1, 0]] = y[[0, 1]] * 2
    f[[-1, 0]] = f[[0, 1]] * 2
    check(y, f)


@pytest.mark.parametrize("dtype", [np.float32, np.int64, np.uint8, np.float16])
def test_take_on_each_grid(device, dtype):
    """take along the last axis (the CPU's (m, outer) grid), an inner axis and the first (its
    (inner, m * outer) grid), and the whole array flattened; negative indices count from the end,
    indices out of range give 0 (documented: checking them would need the host)."""
    rng = np.random.default_rng(8)
    a = (rng.standard_normal((5, 7, 9)) * 20).astype(dtype)
    x = mnp.asarray(a, device=device)
    idx = np.array([0, -1, 3, 3, -7, 2, 8, 1], np.int64)
    for axis in (0, 1, 2):
        n = a.shape[axis]
        i = idx[(idx >= -n) & (idx < n)]
        check(mnp.take(x, mnp.asarray(i, device=device), axis=axis), np.take(a, i, axis=axis))
    big = rng.integers(-a.size, a.size, 1000)
    check(mnp.take(x, mnp.asarray(big, device=device)), np.take(a, big))
    check(x[mnp.asarray(idx[:3], device=device)], a[idx[:3]])
    outside = np.array([1, 99, -99], np.int64)
    got = np.asarray(mnp.take(x, mnp.asarray(outside, device=device), axis=2))
    np.testing.assert_array_equal(got[..., 0], a[..., 1])
    np.testing.assert_array_equal(got[..., 1:], np.zeros_like(got[..., 1:]))
