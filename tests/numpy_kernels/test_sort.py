"""metalcall.numpy._kernels.sort against NumPy's stable sort: NaN last (first when descending,
as flipping an ascending sort gives), -0.0 equal to +0.0, ties in their original order."""

from __future__ import annotations

import numpy as np
import pytest
from nkhelp import fetch, fibers, sample, upload

from metalcall.numpy._kernels import sort


def _want(x, descending):
    if descending:
        n = x.shape[-1]
        idx = n - 1 - np.flip(np.argsort(np.flip(x, axis=-1), axis=-1, kind="stable"), axis=-1)
    else:
        idx = np.argsort(x, axis=-1, kind="stable")
    return idx, np.take_along_axis(x, idx, axis=-1)


def _check(dev, x, descending):
    o, n = x.shape
    buf = upload(dev, x)
    got_i = fetch(sort.argsort(dev, buf, x.dtype, o, n, descending), x.shape)
    got_v = fetch(sort.sort(dev, buf, x.dtype, o, n, descending), x.shape)
    want_i, want_v = _want(x, descending)
    assert got_i.dtype == np.int64 and got_v.dtype == x.dtype
    np.testing.assert_array_equal(got_i, want_i)
    np.testing.assert_array_equal(got_v, want_v)


def _specials(x):
    if x.dtype.kind == "f" and x.size > 20:
        x.flat[::7] = np.nan
        x.flat[3::11] = 0.0
        x.flat[5::13] = -0.0
        x.flat[1::17] = np.inf
        x.flat[2::19] = -np.inf
    return x


@pytest.mark.parametrize("shape", [(1, 0), (0, 4), (1, 1), (3, 31), (2, 32), (1, 33), (4, 1000), (1, 3000), (2, 20000)],
                         ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("descending", [False, True])
def test_float32(kdev, rng, shape, descending):
    if fibers(kdev) and shape[1] > 3000:
        shape = (shape[0], 3000)
    _check(kdev, _specials(sample(rng, shape, np.float32)), descending)


@pytest.mark.parametrize("dtype", [np.int8, np.int64, np.uint16, np.uint64, np.float16, np.float64, np.bool_, np.int32])
@pytest.mark.parametrize("descending", [False, True])
def test_dtypes(pdev, rng, dtype, descending):
    if pdev.backend == "metal" and np.dtype(dtype) == np.float64:
        pytest.skip("Metal has no double")
    x = sample(rng, (2, 1500), dtype)  # few distinct values: many ties
    _check(pdev, _specials(x), descending)


def test_extremes(kdev):
    x = np.array([[np.iinfo(np.int64).max, np.iinfo(np.int64).min, -1, 0, 1, np.iinfo(np.int64).min]], np.int64)
    _check(kdev, x, False)
    y = np.array([[np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-40, -1e-40]], np.float32)
    _check(kdev, y, False)
    _check(kdev, y, True)
