"""metalcall.numpy._kernels.reduce against NumPy: every op, dtype classes, edge shapes
(n = 0 and 1, non-powers of two, rows longer than a threadgroup, two-stage rows, inner > 1,
many rows of one element), NaN propagation and first-occurrence arg results."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from nkhelp import fetch, sample, upload

import metalcall as mc
from metalcall.numpy._kernels import reduce, reduce_cpu

SHAPES = [(1, 1, 1), (2, 7, 3), (3, 300, 1), (1, 5000, 1), (1, 9000, 3), (700, 2, 1), (1, 70000, 1)]

_NP = {"sum": np.sum, "prod": np.prod, "min": np.min, "max": np.max, "any": np.any, "all": np.all,
       "argmin": np.argmin, "argmax": np.argmax}


def _out_dtype(op, dtype):
    if op in ("sum", "prod"):
        return np.sum(np.zeros(1, dtype)).dtype
    return np.dtype(dtype)


def _check(dev, x, op, out_dtype=None):
    o, n, i = x.shape
    out_dtype = _out_dtype(op, x.dtype) if out_dtype is None else np.dtype(out_dtype)
    got = fetch(reduce.reduce(dev, upload(dev, x), x.dtype, o, n, i, op, out_dtype), (o, i))
    kw = {"dtype": out_dtype} if op in ("sum", "prod") else {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        want = _NP[op](x, axis=1, **kw)
    assert got.dtype == want.dtype
    if x.dtype.kind == "f" and op in ("sum", "prod"):
        tol = 1e-2 if x.dtype == np.float16 else 1e-4
        np.testing.assert_allclose(got, want, rtol=tol, atol=tol * np.sqrt(n), equal_nan=True)
    else:
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("op", reduce.OPS)
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_float32(kdev, rng, op, shape):
    x = sample(rng, shape, np.float32)
    if op == "prod":
        x = (1 + x / 100).astype(np.float32)
    _check(kdev, x, op)


@pytest.mark.parametrize("op", reduce.OPS)
@pytest.mark.parametrize("shape", [(2, 7, 3), (1, 5000, 1), (700, 2, 1)], ids=lambda s: "x".join(map(str, s)))
def test_int32(kdev, rng, op, shape):
    _check(kdev, sample(rng, shape, np.int32), op)


@pytest.mark.parametrize(
    "dtype, op",
    [(np.int8, "sum"), (np.int8, "argmax"), (np.uint8, "min"), (np.int16, "max"), (np.uint64, "max"),
     (np.int64, "argmin"), (np.uint32, "sum"), (np.bool_, "any"), (np.bool_, "all"), (np.bool_, "sum"),
     (np.float16, "sum"), (np.float16, "max"), (np.float16, "argmin"), (np.float64, "sum"),
     (np.float64, "argmax"), (np.float64, "min"), (np.int64, "prod")],
)
def test_dtypes(pdev, rng, dtype, op):
    for shape in [(2, 7, 3), (1, 5000, 1)]:
        _check(pdev, sample(rng, shape, dtype), op)


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.uint16])
@pytest.mark.parametrize("op", ["min", "max", "argmin", "argmax"])
def test_narrow_integers_in_chunks(pdev, rng, dtype, op):
    """8- and 16-bit integers compared in their own type (the CPU's kernels) or widened (GPUs'):
    rows long enough for chunks and a second stage, the type's extremes in three chunks (the
    first index wins), and rows of the identity alone."""
    info = np.iinfo(dtype)
    for shape in [(1, 300001, 1), (3, 100003, 1), (2, 5000, 1)]:
        x = sample(rng, shape, dtype)
        _check(pdev, x, op)
        n = shape[1]
        x[:, [n - 3, n // 3, 2 * n // 3], 0] = info.min if op in ("min", "argmin") else info.max
        _check(pdev, x, op)
        _check(pdev, np.full(shape, info.max if op in ("min", "argmin") else info.min, dtype), op)


@pytest.mark.parametrize("op", ["min", "max", "argmin", "argmax"])
def test_every_float16(pdev, rng, op):
    """Every float16 bit pattern (zeros, subnormals, normals, infinities, NaNs of both signs),
    shuffled into 256 rows of 256: the CPU reads halves by their bits (reduce_cpu's
    half_bits_float), in lanes and in the tail; rows without NaNs too."""
    bits = np.arange(65536, dtype=np.uint16)
    rng.shuffle(bits)
    x = bits.view(np.float16).reshape(256, 256, 1)
    _check(pdev, x, op)
    finite = np.where(np.isnan(x), np.float16(0), x)
    _check(pdev, finite, op)
    _check(pdev, finite[:, :255], op)  # a tail after the lanes


def test_bool_sparse_any_all(pdev):
    x = np.zeros((3, 2000, 1), np.bool_)
    x[1, 1999, 0] = True
    _check(pdev, x, "any")
    _check(pdev, ~x, "all")


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.uint8, np.bool_, np.float16])
def test_any_all_decided_by_one_element_anywhere(pdev, dtype):
    """A whole array's any/all decided by one element in any chunk (the CPU's one-stage form lets
    the chunks that decide store the answer): first, at chunk edges, last; and by none."""
    n = 70001
    for k in (None, 0, 4095, 4096, 4097, 35000, n - 2, n - 1):
        zeros, ones = np.zeros((1, n, 1), dtype), np.ones((1, n, 1), dtype)
        if k is not None:
            zeros[0, k, 0], ones[0, k, 0] = 1, 0
        _check(pdev, zeros, "any")
        _check(pdev, ones, "all")
    nans = np.zeros((1, n, 1), np.float32)
    nans[0, 12345, 0] = np.nan  # NaN is nonzero, as in NumPy
    _check(pdev, nans, "any")


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64, np.int8, np.int16, np.int64, np.uint64])
def test_any_all_read_values_not_bit_patterns(pdev, dtype):
    """The CPU's one-stage any/all folds the elements' bits (OR; unsigned minimum): -0.0 is zero,
    values whose bits share nothing (1 and 2) are all nonzero, negative and top-bit integers and
    subnormals are nonzero; a mixed-sign array has no zero."""
    if pdev.backend == "metal" and dtype == np.float64:
        pytest.skip("Metal has no double")
    n = 50001
    info = np.finfo(dtype) if np.dtype(dtype).kind == "f" else np.iinfo(dtype)
    patterns = [np.array([1, 2], dtype), np.array([info.min, info.max], dtype)]
    if np.dtype(dtype).kind == "f":
        patterns += [np.array([-1.5, info.smallest_subnormal], dtype), np.array([-0.0, -0.0], dtype)]
    for p in patterns:
        x = np.resize(p, n).reshape(1, n, 1)
        _check(pdev, x, "any")
        _check(pdev, x, "all")
        y = x.copy()
        y[0, n // 3, 0] = -0.0 if np.dtype(dtype).kind == "f" else 0  # one zero (negative zero for floats)
        _check(pdev, y, "all")
    signed_zeros = np.full((1, n, 1), -0.0 if np.dtype(dtype).kind == "f" else 0, dtype)
    _check(pdev, signed_zeros, "any")


def test_integer_sum_wraps(pdev):
    x = np.full((1, 300, 1), 2**62, np.int64)
    _check(pdev, x, "sum")


@pytest.mark.parametrize("op", ["min", "max", "argmin", "argmax", "sum"])
@pytest.mark.parametrize("shape", [(2, 7, 3), (1, 5000, 1), (1, 70000, 1)], ids=lambda s: "x".join(map(str, s)))
def test_nan_propagates(kdev, rng, op, shape):
    x = sample(rng, shape, np.float32)
    x[0, shape[1] // 3, 0] = np.nan
    x[0, shape[1] // 2, 0] = np.nan
    _check(kdev, x, op)


@pytest.mark.parametrize("op", ["argmin", "argmax"])
def test_first_occurrence(kdev, op):
    x = np.zeros((2, 6000, 1), np.float32)
    x[:, [17, 4000, 5999], 0] = 5.0 if op == "argmax" else -5.0
    x[1, 2, 0] = np.inf if op == "argmax" else -np.inf
    _check(kdev, x, op)
    y = np.full((1, 3000, 2), 7, np.int16)
    _check(kdev, y, op)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("op", ["min", "max", "argmin", "argmax"])
def test_every_lane_and_the_tail(kdev, op, dtype):
    """Rows long enough for the CPU row kernel's accumulator lanes (64 float32, 32 float64), a whole
    number of times, then a tail of 5 (arg ops' two passes): a NaN at each position; the extreme
    value at three positions of different lanes (the first index wins); rows of the identity's
    infinity alone (lanes that never take a larger value)."""
    lanes = reduce_cpu._lanes(np.dtype(dtype))
    n = lanes * (reduce_cpu._LANES_FROM // lanes + 1) + 5
    big = -5.0 if op in ("min", "argmin") else 5.0
    rows = []
    for p in range(n):
        rows.append(np.zeros(n, dtype))
        rows[-1][p] = np.nan
        rows.append(np.zeros(n, dtype))
        rows[-1][[p, (p + 9) % n, (p + 100) % n]] = big
    rows += [np.full(n, np.inf, dtype), np.full(n, -np.inf, dtype)]
    _check(kdev, np.stack(rows)[:, :, None], op)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("op", ["argmin", "argmax"])
def test_arg_second_pass_starts_in_the_right_group(kdev, op, dtype):
    """Rows of one chunk spanning several of the first pass's groups of blocks (reduce_cpu._ARG_GROUP
    blocks of lanes), where the second pass starts: the best value placed in each group, lane and
    the tail, with an equal value later in another lane and group (the first index wins) and
    with a lane that reaches it only later; -0.0 against +0.0 in either order; ramps up and down
    (a lane gets better in every group, or never); a NaN after the best value."""
    lanes = reduce_cpu._lanes(np.dtype(dtype))
    group = lanes * reduce_cpu._ARG_GROUP
    n = group * 3 + lanes // 2 + 3  # three groups, then a tail shorter than a block
    sign = -1.0 if op == "argmin" else 1.0
    rng = np.random.default_rng(7)
    rows = []
    for p in [0, 1, lanes - 1, lanes + 5, group - 1, group, group + lanes * 3 + 7, 2 * group + 11, n - 2, n - 1]:
        base = rng.standard_normal(n).astype(dtype)
        row = base.copy()
        row[p] = 9 * sign
        rows.append(row)
        later = row.copy()
        later[(p + group + 5) % n] = 9 * sign  # the same value elsewhere: before or after p
        rows.append(later)
        climbing = base.copy()
        climbing[p] = 8 * sign  # lane of p first reaches 8 at p, another lane reaches 9 only later
        climbing[min(n - 1, p + 3 * lanes + 1)] = 9 * sign
        rows.append(climbing)
        zeros = np.full(n, -sign, dtype)
        zeros[p] = -0.0
        zeros[(p + lanes + 1) % n] = 0.0
        rows.append(zeros)
        swapped = zeros.copy()
        swapped[p], swapped[(p + lanes + 1) % n] = 0.0, -0.0
        rows.append(swapped)
        nan = row.copy()
        nan[min(n - 1, p + 2)] = np.nan
        rows.append(nan)
    rows += [np.arange(n, dtype=dtype), np.arange(n, dtype=dtype)[::-1].copy()]
    _check(kdev, np.stack(rows)[:, :, None], op)


@pytest.mark.parametrize("op", ["max", "argmax", "argmin", "sum"])
def test_long_row_ties_and_nans_across_chunks(kdev, op):
    """One row in many chunks: equal extremes in three chunks, found in any order (the first index
    wins), then NaNs in two; for arg ops, int32 rows of the identity alone and with ties."""
    x = np.zeros((1, 300001, 1), np.float32)
    x[0, [250000, 70001, 150003], 0] = -3.0 if op == "argmin" else 3.0
    _check(kdev, x, op)
    x[0, [200017, 90001], 0] = np.nan
    _check(kdev, x, op)
    if op in ("argmin", "argmax"):  # integers: the identity itself, then ties
        y = np.full((1, 300001, 1), np.iinfo(np.int32).min if op == "argmax" else np.iinfo(np.int32).max, np.int32)
        _check(kdev, y, op)
        y[0, [250000, 70001, 150003], 0] = 5
        _check(kdev, y, op)


@pytest.mark.parametrize("op", ["sum", "any", "all", "argmax"])
@pytest.mark.parametrize("shape", [(1, 5, 1), (1, 70001, 1), (3, 9000, 2)], ids=lambda s: "x".join(map(str, s)))
def test_recorded_in_a_batch(pdev, rng, op, shape):
    # The CPU waits for its stages where it can; in a batch nothing runs before the block ends.
    x = np.abs(sample(rng, shape, np.float32)) + 0.5
    if op == "any":
        x[...] = 0
        x[0, -1, 0] = 1  # the last element of the first row only: a chunk's tail
    if op == "all":
        x[0, -1, 0] = 0
    src = upload(pdev, x)
    out_dtype = _out_dtype(op, x.dtype)
    with pdev.batch():
        got = reduce.reduce(pdev, src, x.dtype, *shape, op, out_dtype)
        mean = reduce.mean(pdev, src, x.dtype, *shape, np.float32)
    o, _, i = shape
    kw = {"dtype": out_dtype} if op == "sum" else {}
    want = _NP[op](x, axis=1, **kw)
    if op == "sum":
        np.testing.assert_allclose(fetch(got, (o, i)), want, rtol=1e-4)
    else:
        np.testing.assert_array_equal(fetch(got, (o, i)), want)
    np.testing.assert_allclose(fetch(mean, (o, i)), np.mean(x, axis=1), rtol=1e-4)


@pytest.mark.parametrize("op", ["sum", "prod", "any", "all"])
def test_empty_rows_give_identity(pdev, op):
    x = np.zeros((3, 0, 2), np.float32)
    _check(pdev, x, op)


@pytest.mark.parametrize("op", ["min", "max", "argmin", "argmax"])
def test_empty_rows_without_identity_raise(pdev, op):
    with pytest.raises(mc.ArgumentError, match="zero-size array|empty sequence"):
        reduce.reduce(pdev, pdev.empty(0, np.float32), np.float32, 3, 0, 1, op, np.float32)


def test_no_outputs(pdev):
    out = reduce.reduce(pdev, pdev.empty(0, np.float32), np.float32, 0, 5, 1, "max", np.float32)
    assert out.size == 0


def test_unknown_op(pdev):
    with pytest.raises(mc.ArgumentError, match="unknown reduction"):
        reduce.reduce(pdev, pdev.empty(4, np.float32), np.float32, 1, 4, 1, "median", np.float32)


@pytest.mark.parametrize("dtype, out", [(np.float32, np.float32), (np.float64, np.float64), (np.int32, np.float64),
                                        (np.float16, np.float16)])
@pytest.mark.parametrize("shape", [(2, 7, 3), (1, 5000, 1), (4, 1, 1), (1, 70000, 1)], ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("correction", [0, 1])
def test_moments(pdev, rng, dtype, out, shape, correction):
    _moments(pdev, rng, dtype, out, shape, correction)


def _moments(dev, rng, dtype, out, shape, correction):
    if dev.backend == "metal" and np.dtype(out) == np.float64:
        pytest.skip("Metal has no double")
    x = sample(rng, shape, dtype)
    if np.dtype(dtype).kind == "f":
        x = (x + 1000).astype(dtype) if dtype != np.float16 else x  # a large mean: two-pass matters
    o, n, i = shape
    mean, var = reduce.moments(dev, upload(dev, x), x.dtype, o, n, i, correction, out)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        wm = np.mean(x, axis=1, dtype=np.float64).astype(out)
        wv = np.var(x, axis=1, ddof=correction, dtype=np.float64).astype(out)
    gm, gv = fetch(mean, (o, i)), fetch(var, (o, i))
    assert gm.dtype == np.dtype(out) and gv.dtype == np.dtype(out)
    tol = {2: 2e-3, 4: 1e-5, 8: 1e-12}[np.dtype(out).itemsize]
    np.testing.assert_allclose(gm, wm, rtol=tol, atol=tol)
    np.testing.assert_allclose(gv, wv, rtol=max(tol, 1e-4 if np.dtype(out).itemsize == 4 else tol), atol=tol,
                               equal_nan=True)


def test_moments_empty_is_nan(pdev):
    mean, var = reduce.moments(pdev, pdev.empty(0, np.float32), np.float32, 2, 0, 1, 0, np.float32)
    assert np.isnan(np.asarray(mean)).all() and np.isnan(np.asarray(var)).all()


@pytest.mark.parametrize("shape", [(2, 7, 3), (1, 5000, 1), (1, 70000, 1)], ids=lambda s: "x".join(map(str, s)))
def test_moments_kernel_variants(kdev, rng, shape):
    _moments(kdev, rng, np.float32, np.float32, shape, 1)


@pytest.mark.parametrize("dtype, out", [(np.float64, np.float64), (np.int32, np.float64), (np.float16, np.float16),
                                        (np.bool_, np.float32)])
@pytest.mark.parametrize("shape", [(2, 7, 3), (1, 70000, 1)], ids=lambda s: "x".join(map(str, s)))
def test_mean_dtypes(pdev, rng, dtype, out, shape):
    _mean(pdev, rng, dtype, out, shape)


@pytest.mark.parametrize("shape", [(1, 1, 1), (2, 7, 3), (3, 300, 1), (1, 9000, 3), (700, 2, 1), (1, 70000, 1)],
                         ids=lambda s: "x".join(map(str, s)))
def test_mean_in_one_reduction(kdev, rng, shape):
    _mean(kdev, rng, np.float32, np.float32, shape)


def _mean(dev, rng, dtype, out, shape):
    """reduce.mean: the sum divided by n in the last stage (one or two stages, every kernel shape)."""
    if dev.backend == "metal" and np.dtype(out) == np.float64:
        pytest.skip("Metal has no double")
    x = sample(rng, shape, dtype)
    o, n, i = shape
    got = fetch(reduce.mean(dev, upload(dev, x), x.dtype, o, n, i, out), (o, i))
    want = np.mean(x, axis=1, dtype=np.float64).astype(out)
    assert got.dtype == np.dtype(out)
    tol = {2: 2e-3, 4: 1e-5, 8: 1e-12}[np.dtype(out).itemsize]
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype, out", [(np.float32, np.float32), (np.float64, np.float64), (np.int32, np.float64),
                                        (np.float16, np.float16), (np.bool_, np.float32)])
def test_whole_array_mean_runner_matches_numpy(pdev, rng, dtype, out):
    """reduce.whole's mean (one stage or two, the divisor made once per shape) against NumPy's mean
    in float64, twice per shape and inside a batch; the same as reduce.mean gives."""
    if pdev.backend == "metal" and np.dtype(out) == np.float64:
        pytest.skip("Metal has no double")
    tol = {2: 2e-3, 4: 1e-5, 8: 1e-12}[np.dtype(out).itemsize]
    for n in (1, 5, 4097, 70001):
        x = sample(rng, (1, n, 1), dtype)
        src = upload(pdev, x)
        want = np.mean(x, axis=1, dtype=np.float64).astype(out).reshape(1)
        for _ in range(2):
            got = fetch(reduce.whole(pdev, src, x.dtype, n, "mean", np.dtype(out)), (1,))
            assert got.dtype == np.dtype(out)
            np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
        with pdev.batch():
            batched = reduce.whole(pdev, src, x.dtype, n, "mean", np.dtype(out))
        np.testing.assert_allclose(fetch(batched, (1,)), want, rtol=tol, atol=tol)
        by_stages = fetch(reduce.mean(pdev, src, x.dtype, 1, n, 1, out), (1,))
        np.testing.assert_array_equal(fetch(reduce.whole(pdev, src, x.dtype, n, "mean", np.dtype(out)), (1,)), by_stages)


@pytest.mark.parametrize("op", reduce.OPS)
def test_whole_array_runner_matches_numpy(pdev, rng, op):
    """reduce.whole (a whole array to one element, by a runner made once per shape: every form of
    plan, one stage, two stages, the CPU's one-stage any/all) against NumPy, twice per shape, and
    inside a batch, whose result is there once it is committed."""
    for n in (1, 5, 4097, 70001):
        x = sample(rng, (1, n, 1), np.float32)
        if op in ("any", "all"):
            x[...] = 1 if op == "all" else 0
            x[0, n // 2, 0] = 0 if op == "all" else 1
        out_dtype = _out_dtype(op, x.dtype)
        src = upload(pdev, x)
        kw = {"dtype": out_dtype} if op in ("sum", "prod") else {}
        want = _NP[op](x, axis=1, **kw).reshape(1)
        for _ in range(2):
            got = fetch(reduce.whole(pdev, src, x.dtype, n, op, out_dtype), (1,))
            if op in ("sum", "prod"):
                np.testing.assert_allclose(got, want, rtol=1e-4)
            else:
                np.testing.assert_array_equal(got, want)
        with pdev.batch():
            batched = reduce.whole(pdev, src, x.dtype, n, op, out_dtype)
        got = fetch(batched, (1,))
        if op in ("sum", "prod"):
            np.testing.assert_allclose(got, want, rtol=1e-4)
        else:
            np.testing.assert_array_equal(got, want)
    if op in ("sum", "prod", "any", "all"):  # an empty array: the identity
        empty = upload(pdev, np.zeros((1, 0, 1), np.float32))
        got = fetch(reduce.whole(pdev, empty, np.dtype(np.float32), 0, op, _out_dtype(op, np.float32)), (1,))
        np.testing.assert_array_equal(got, _NP[op](np.zeros(0, np.float32)).reshape(1))


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32, np.int8, np.float16])
@pytest.mark.parametrize("op", reduce.OPS)
def test_columns_in_blocks(pdev, rng, op, dtype):
    """inner > 1 (the CPU's work-items of reduce._lanes columns each): inner under a block, a whole
    block, one past, several blocks and a tail; n of one row, a few, and enough rows for chunks of
    n (a second stage over the chunks' partials); in float columns a NaN, ties of the extreme
    (the first index wins) and a column of the identity's infinity."""
    if pdev.backend == "metal" and np.dtype(dtype) == np.float64:
        pytest.skip("Metal has no double")
    w = reduce_cpu._lanes(reduce._acc_type(op, np.dtype(dtype), np.dtype(dtype), loops=True))
    for outer, n, inner in [(1, 1, 5), (2, 7, w), (1, 300, w + 1), (3, 40, 2 * w + 9), (1, 5000, 3 * w + 3)]:
        x = sample(rng, (outer, n, inner), dtype)
        if op == "prod":
            x = np.where(x < 0, -1, 1).astype(dtype)
        if np.dtype(dtype).kind == "f" and n > 2:
            x[0, n // 2, 1] = np.nan
            x[0, [1, n - 1], 2] = 1e4 if np.dtype(dtype).itemsize > 2 else 1000
            x[0, [0, n - 2], 3] = -1e4 if np.dtype(dtype).itemsize > 2 else -1000
            x[0, :, 4] = -np.inf if op in ("max", "argmax") else np.inf
        if dtype == np.float16 and op == "sum":  # NumPy sums float16 columns in float16; ours in float
            got = fetch(reduce.reduce(pdev, upload(pdev, x), x.dtype, outer, n, inner, op, np.float16), (outer, inner))
            want = x.astype(np.float64).sum(axis=1)
            np.testing.assert_allclose(got.astype(np.float64), want, rtol=2e-3, atol=0.05, equal_nan=True)
            continue
        _check(pdev, x, op, None if op not in ("sum", "prod") or np.dtype(dtype).kind == "f" else dtype)
