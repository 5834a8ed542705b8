"""Integer floor_divide and remainder against NumPy, exactly, at every edge: division by zero (0,
NumPy's value without its warning), MIN // -1 (wraps to MIN) and MIN % -1 (0), the extremes
against each other, signs in every combination, and scalar divisors. Integers of at most 32
bits divide through double on the CPU (_ops._cpu_small_division), 64-bit ones with the hardware."""

import warnings

import numpy as np
import pytest

import metalcall.numpy as mnp

DTYPES = [np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64]


def _operands(dtype):
    info = np.iinfo(dtype)
    edges = np.array([v for v in (info.min, info.min + 1, -7, -2, -1, 0, 1, 2, 3, 7, info.max - 1, info.max)
                      if info.min <= v <= info.max], dtype=dtype)
    rng = np.random.default_rng(5)
    x = np.concatenate([np.repeat(edges, edges.size), rng.integers(info.min, info.max, 3001, endpoint=True, dtype=dtype)])
    y = np.concatenate([np.tile(edges, edges.size), rng.integers(info.min, info.max, 3001, endpoint=True, dtype=dtype)])
    return x, y


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_arrays(device, dtype):
    x, y = _operands(dtype)
    X, Y = mnp.asarray(x, device=device), mnp.asarray(y, device=device)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want_q, want_r = x // y, x % y
    np.testing.assert_array_equal(np.asarray(X // Y), want_q)
    np.testing.assert_array_equal(np.asarray(X % Y), want_r)


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_scalar_divisors(device, dtype):
    x, _ = _operands(dtype)
    X = mnp.asarray(x, device=device)
    info = np.iinfo(dtype)
    for d in [v for v in (1, 2, 7, -1, -3, info.max, info.min) if info.min <= v <= info.max]:
        s = dtype(d)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            want_q, want_r = x // s, x % s
        np.testing.assert_array_equal(np.asarray(X // s), want_q, err_msg=f"// {d}")
        np.testing.assert_array_equal(np.asarray(X % s), want_r, err_msg=f"% {d}")
