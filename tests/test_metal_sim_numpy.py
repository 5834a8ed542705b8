"""P2.1: metalcall.numpy on the simulated AMD and Intel GPUs, whose pipelines may allow fewer threads
per threadgroup than the 512 the reductions and sorts ask for (maxTotalThreadsPerThreadgroup is each
pipeline's own: 256 for the simulated AMD reduction and Intel sort pipelines). The kernels size their
threadgroups from their pipeline's limit (cache.sized_kernel); every result is checked against NumPy."""

from __future__ import annotations

import numpy as np
import pytest

import metalcall as mc
import metalcall.numpy as mnp


@pytest.fixture(params=["amd", "intel", "intel-simd8", "intel-simd16", "amd-simd64"], scope="module")
def sim(request) -> mc.Device:
    return mc.Device("metal-sim", family=request.param)


def pipeline_limit(dev: mc.Device, name: str) -> int:
    src = (f"#include <metal_stdlib>\nusing namespace metal;\nkernel void {name}(device float* x [[buffer(0)]],"
           " uint i [[thread_position_in_grid]]) { x[i] = 0; }\n")
    return dev.compile(src).function(name).max_total_threads_per_threadgroup


def test_the_families_have_pipelines_under_512_threads():
    """What the tests below rely on: a 512-thread group is over these pipelines' limits."""
    assert pipeline_limit(mc.Device("metal-sim", family="amd"), "red") < 512
    assert pipeline_limit(mc.Device("metal-sim", family="intel"), "block") < 512


@pytest.mark.parametrize("n", [1000, 300_007])
def test_reductions(sim, n):
    rng = np.random.default_rng(n)
    x = rng.random(n, dtype=np.float32) + np.float32(0.5)
    i = rng.integers(-1000, 1000, n, dtype=np.int32)
    with mnp.device_scope(sim):
        a, b = mnp.asarray(x), mnp.asarray(i)
        np.testing.assert_allclose(float(mnp.sum(a)), float(x.sum(dtype=np.float64)), rtol=1e-4)
        np.testing.assert_allclose(float(mnp.var(a)), float(x.var(dtype=np.float64)), rtol=1e-3)
        assert float(mnp.max(a)) == float(x.max())
        assert int(mnp.argmin(a)) == int(x.argmin())
        assert int(mnp.sum(b)) == int(i.sum(dtype=np.int64))


def test_reductions_over_rows_and_columns(sim):
    rng = np.random.default_rng(7)
    x = rng.random((6, 5000), dtype=np.float32)
    with mnp.device_scope(sim):
        a = mnp.asarray(x)
        np.testing.assert_allclose(np.asarray(mnp.sum(a, axis=1)), x.sum(axis=1, dtype=np.float64), rtol=1e-4)
        np.testing.assert_array_equal(np.asarray(mnp.argmax(a, axis=1)), x.argmax(axis=1))
        np.testing.assert_allclose(np.asarray(mnp.sum(a, axis=0)), x.sum(axis=0, dtype=np.float64), rtol=1e-5)
        np.testing.assert_array_equal(np.asarray(mnp.min(a, axis=0)), x.min(axis=0))


@pytest.mark.parametrize("n", [777, 200_003])
def test_cumsum(sim, n):
    rng = np.random.default_rng(n)
    x = rng.random(n, dtype=np.float32)
    i = rng.integers(-50, 50, (3, n), dtype=np.int32)
    with mnp.device_scope(sim):
        np.testing.assert_allclose(np.asarray(mnp.cumsum(mnp.asarray(x))), np.cumsum(x, dtype=np.float64),
                                   rtol=1e-3, atol=1e-3)
        np.testing.assert_array_equal(np.asarray(mnp.cumsum(mnp.asarray(i), axis=1)), np.cumsum(i, axis=1))


@pytest.mark.parametrize("n", [1000, 5000])
def test_sort_and_argsort(sim, n):
    rng = np.random.default_rng(n)
    x = rng.standard_normal((2, n)).astype(np.float32)
    x[0, ::7] = x[0, 3]  # ties: the sort is stable
    k = rng.integers(0, 100, n, dtype=np.int64)
    with mnp.device_scope(sim):
        np.testing.assert_array_equal(np.asarray(mnp.sort(mnp.asarray(x), axis=1)), np.sort(x, axis=1))
        np.testing.assert_array_equal(np.asarray(mnp.argsort(mnp.asarray(x), axis=1)),
                                      np.argsort(x, axis=1, kind="stable"))
        np.testing.assert_array_equal(np.asarray(mnp.sort(mnp.asarray(k))), np.sort(k))
