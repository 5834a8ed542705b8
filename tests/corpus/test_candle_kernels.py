"""candle's Metal reductions (huggingface/candle, candle-metal-kernels/src/metal_src/reduce.metal:
the framework of issue P2.0's first survey) run on metalcall against NumPy models written
here. These are the kernels whose barriers and SIMD-group functions are reached only through
functors (`block_reducer`'s operator(), `loader`, `storer`) and `switch` cases that declare the
threadgroup memory: the shape of the issue's silent wrong sums. Arguments and grids follow
candle's host code (candle-metal-kernels/src/kernels/reduce.rs): one threadgroup per output
row, min(the pipeline's maximum, next_power_of_two(row / 2)) threads; the kernels' parameters
have no [[buffer(n)]] (Metal numbers them in order). candle passes its usize scalars as 8
bytes to `constant uint&` parameters, which metalcall refuses as Metal's validation does;
the tests pass uint32."""

from __future__ import annotations

import numpy as np
import pytest

from corpus_support import kernel, require

REDUCE = "candle/candle-metal-kernels/src/metal_src/reduce.metal"
TYPES = {"f32": np.float32, "f16": np.float16}
NAMES = tuple(f"fast_{op}_{t}" for op in ("sum", "max", "min", "argmax", "argmin") for t in TYPES) + tuple(
    f"{k}_{t}" for k in ("softmax", "rmsnorm", "layernorm") for t in TYPES)


def candle_kernel(device, name):
    return kernel(device, require(REDUCE), name, also=NAMES)


def width(kernel, row):
    """Candle's threadgroup width: the power of two reaching half the row, at most the pipeline's
    limit (maxTotalThreadsPerThreadgroup, which may be below the device's: the simulator's families
    give some pipelines 768 or 896). Candle takes that limit as it is; its kernels halve the width
    down to one lane, so here the limit's power of two below it."""
    limit = 1 << (kernel.max_total_threads_per_threadgroup.bit_length() - 1)
    return min(limit, 1 << max(0, (row // 2 - 1).bit_length()))


ROWS = [(4, 1000), (3, 33), (5, 4096), (2, 7)]


@pytest.mark.parametrize("rows,row", ROWS)
@pytest.mark.parametrize("tname", sorted(TYPES))
@pytest.mark.parametrize("op", ["sum", "max", "min", "argmax", "argmin"])
def test_reduce_contiguous(device, rng, op, tname, rows, row):
    t = TYPES[tname]
    x = rng.uniform(-1, 1, (rows, row)).astype(t)
    arg = op.startswith("arg")
    out = np.zeros(rows, np.uint32 if arg else t)
    k = candle_kernel(device, f"fast_{op}_{tname}")
    tg = width(k, row)
    dims = np.array([rows, row], np.uint32)
    k(rows * tg, np.uint32(x.size), np.uint32(2), dims, np.uint32(row), x, out, threadgroup=tg)
    if arg:  # values are distinct with this generator at these sizes, so the index is unique
        want = (np.argmax if op == "argmax" else np.argmin)(x, axis=1)
        np.testing.assert_array_equal(out, want)
    elif op == "sum":
        xd = x.astype(np.float64)
        bound = np.abs(xd).sum(axis=1) * (1e-6 if tname == "f32" else 2e-3) + 1e-6
        assert np.all(np.abs(out.astype(np.float64) - xd.sum(axis=1)) <= bound)
    else:
        np.testing.assert_array_equal(out, (np.max if op == "max" else np.min)(x, axis=1))


TOL = {"f32": dict(rtol=1e-5, atol=1e-6), "f16": dict(rtol=3e-3, atol=3e-3)}


@pytest.mark.parametrize("rows,row", ROWS)
@pytest.mark.parametrize("tname", sorted(TYPES))
def test_softmax(device, rng, tname, rows, row):
    t = TYPES[tname]
    x = rng.uniform(-6, 6, (rows, row)).astype(t)
    out = np.zeros_like(x)
    k = candle_kernel(device, f"softmax_{tname}")
    tg = width(k, row)
    k(rows * tg, np.uint32(x.size), np.uint32(row), x, out, threadgroup=tg)
    xd = x.astype(np.float64)
    e = np.exp(xd - xd.max(axis=1, keepdims=True))
    np.testing.assert_allclose(out.astype(np.float64), e / e.sum(axis=1, keepdims=True), **TOL[tname])


@pytest.mark.parametrize("rows,row", ROWS)
@pytest.mark.parametrize("tname", sorted(TYPES))
@pytest.mark.parametrize("layer", [False, True])
def test_rms_and_layer_norm(device, rng, tname, rows, row, layer):
    t = TYPES[tname]
    eps = 1e-5
    x = rng.uniform(-3, 3, (rows, row)).astype(t)
    alpha = rng.uniform(0.5, 1.5, row).astype(t)
    beta = rng.uniform(-1, 1, row).astype(t)
    out = np.zeros_like(x)
    k = candle_kernel(device, f"layernorm_{tname}" if layer else f"rmsnorm_{tname}")
    tg = width(k, row)
    xd = x.astype(np.float64)
    if layer:
        k(rows * tg, np.uint32(x.size), np.uint32(row), x, out, alpha, beta, np.float32(eps), threadgroup=tg)
        centred = xd - xd.mean(axis=1, keepdims=True)
        want = centred / np.sqrt((centred ** 2).mean(axis=1, keepdims=True) + eps) * alpha + beta
    else:
        k(rows * tg, np.uint32(x.size), np.uint32(row), x, out, alpha, np.float32(eps), threadgroup=tg)
        want = xd / np.sqrt((xd ** 2).mean(axis=1, keepdims=True) + eps) * alpha
    np.testing.assert_allclose(out.astype(np.float64), want, **TOL[tname])
