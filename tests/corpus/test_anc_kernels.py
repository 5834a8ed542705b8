"""AppleNumericalComputing's Metal kernels (ShoYamanishi/AppleNumericalComputing: a source first
surveyed in the third corpus, docs/msl-corpus.md) run on metalcall against NumPy models written
here: its dot products (two passes through device memory, through threadgroup memory with
simdgroup_barrier inside a SIMD-group, with simd_shuffle_xor trees, with simd_sum, and one pass
with a float added through atomic exchanges), its dense matrix-vector products (a thread per row,
a threadgroup per row reduced by simd_sum, and a vector cached in threadgroup memory), and its
prefix sums (simd_shuffle_up under divergent `if (lane >= k)` tests, threadgroup totals by
simd_sum, the bases added back). Grids and arguments follow the project's host code
(*_metal_objc.mm). Every device, the CPU in checked mode too; the public files are read at test
time only."""

from __future__ import annotations

import numpy as np
import pytest

import metalcall as mc
from corpus_support import kernel, require3
from mctest import device_params, metal_sim_only

DOT = "anc/03_dot/metal/dot.metal"
GEMV = "anc/09_dense_matrix_vector_mul/metal/dense_matrix_vector.metal"
SCAN = "anc/04_prefix_sum/metal/prefix_sum_recursive.metal"


@pytest.fixture(params=device_params() + ([pytest.param(("cpu", 0, "checked"), id="cpu-checked")]
                                           if "cpu" in mc.backends() and not metal_sim_only() else []))
def device(request):
    backend, index, *checked = request.param
    return mc.Device("cpu", checked=True) if checked else mc.Device(f"{backend}:{index}")


def _k(device, file, name):
    return kernel(device, require3(file), name)


def _fits(*kernels, threads):
    """Skip where a kernel's threadgroup limit (the Metal simulator's register estimate) is below
    the threadgroup size the project's host code uses."""
    limit = min(k.max_total_threads_per_threadgroup for k in kernels)
    if threads > limit:
        pytest.skip(f"threadgroups of {threads} threads: this device allows {limit} for these kernels")


def _dot_bound(x, y):  # float32 products and sums, in any order: a relative bound on the sum's error
    return 2e-6 * x.size ** 0.5 * np.abs(x.astype(np.float64) * y).sum() + 1e-6


@pytest.mark.parametrize("variant", ["type1", "type2_threadgroup_memory", "type3", "type4"])
@pytest.mark.parametrize("tpg", [256, 1024])
def test_dot_two_passes(device, rng, variant, tpg):
    n, groups = 100_003, 7
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    z = np.zeros(groups, np.float32)
    dot = np.zeros(1, np.float32)
    suffix = {"type1": "", "type2_threadgroup_memory": "", "type3": "_simd_shuffle", "type4": "_simd_add"}[variant]
    pass1 = _k(device, DOT, f"dot_{variant}_pass1{suffix}")
    pass2 = _k(device, DOT, f"dot_{variant}_pass2{suffix}")
    _fits(pass1, pass2, threads=tpg)
    if variant == "type1":  # the partial sums in device memory
        pass1(groups * tpg, x, y, z, np.array([n], np.uint32), np.zeros(groups * tpg, np.float32), threadgroup=tpg)
        pass2(tpg, z, dot, np.array([groups], np.uint32), np.zeros(tpg, np.float32), threadgroup=tpg)
    else:
        pass1(groups * tpg, x, y, z, np.array([n], np.uint32), threadgroup=tpg, threadgroup_memory=[4 * tpg])
        pass2(tpg, z, dot, np.array([groups], np.uint32), threadgroup=tpg, threadgroup_memory=[4 * tpg])
    # each group's partial sum: the grid-stride sums of its threads
    threads = groups * tpg
    padded = np.zeros(-(-n // threads) * threads, np.float64)
    padded[:n] = x.astype(np.float64) * y
    per_thread = padded.reshape(-1, threads).sum(0)
    np.testing.assert_allclose(z, per_thread.reshape(groups, tpg).sum(1), rtol=0, atol=_dot_bound(x, y))
    assert abs(float(dot[0]) - float(padded.sum())) <= _dot_bound(x, y)


@pytest.mark.parametrize("variant", ["type5_atomic_simd_shuffle", "type6_atomic_simd_add"])
def test_dot_atomic_float(device, rng, variant):
    n, groups, tpg = 50_000, 9, 512
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    total = np.zeros(1, np.uint32)  # a float's bits, added to by exchanges
    _k(device, DOT, f"dot_{variant}")(groups * tpg, x, y, total, np.array([n], np.uint32), threadgroup=tpg,
                                      threadgroup_memory=[4 * tpg])
    got = float(total.view(np.float32)[0])
    assert abs(got - float(x.astype(np.float64) @ y)) <= _dot_bound(x, y)


GEMV_KERNELS = ["mult_col_major_threads_over_rows", "mult_row_major_threads_over_rows",
                "mult_col_major_threads_over_columns", "mult_row_major_threads_over_columns",
                "mult_col_major_cache_vector"]


@pytest.mark.parametrize("name", GEMV_KERNELS)
def test_dense_matrix_vector(device, rng, name):
    m, n = 300, 9000 if name == "mult_col_major_cache_vector" else 700  # past the 8192-float vector cache
    a = rng.standard_normal((m, n)).astype(np.float32)
    v = rng.standard_normal(n).astype(np.float32)
    out = np.zeros(m, np.float32)
    mat = np.asfortranarray(a).ravel(order="F") if "col_major" in name else a.ravel()
    dims = np.array([m, n], np.int32)
    k = _k(device, GEMV, name)
    _fits(k, threads=1024 if name == "mult_col_major_cache_vector" else 256)
    if name.endswith("threads_over_rows"):
        k(-(-m // 64) * 64, mat, v, out, dims, threadgroup=64)
    elif name.endswith("threads_over_columns"):  # a threadgroup per row
        k(m * 256, mat, v, out, dims, threadgroup=256)
    else:  # one threadgroup of 1024 threads walks every row
        k(1024, mat, v, out, dims, threadgroup=1024)
    want = a.astype(np.float64) @ v
    bound = 2e-6 * n ** 0.5 * (np.abs(a.astype(np.float64)) @ np.abs(v)) + 1e-6
    assert np.all(np.abs(out - want) <= bound), np.abs(out - want).max()


def test_prefix_sum(device, rng):
    names = ["scan_threadgroupwise_intermediate_32_X_int", "sum_threadgroup_32_X_int", "add_base_32_X_int"]
    limit = min(_k(device, SCAN, name).max_total_threads_per_threadgroup for name in names)
    n, tpg = 5000, 1024 if limit >= 1024 else 512
    groups = -(-n // tpg)
    x = rng.integers(-1000, 1000, n).astype(np.int32)
    out = np.zeros(n, np.int32)
    totals = np.full(groups, -7, np.int32)
    c = np.array([n], np.uint32)
    _k(device, SCAN, "scan_threadgroupwise_intermediate_32_X_int")(groups * tpg, x, out, totals, c, threadgroup=tpg)
    padded = np.zeros(groups * tpg, np.int64)
    padded[:n] = x
    blocks = padded.reshape(groups, tpg)
    np.testing.assert_array_equal(out, np.cumsum(blocks, 1).ravel()[:n])
    np.testing.assert_array_equal(totals, np.concatenate([[0], blocks.sum(1)[:-1]]))
    sums = np.zeros(groups, np.int32)
    _k(device, SCAN, "sum_threadgroup_32_X_int")(groups * tpg, x, sums, c, threadgroup=tpg)
    np.testing.assert_array_equal(sums, blocks.sum(1))
    bases = np.cumsum(totals).astype(np.int32)  # the host's scan of the totals
    _k(device, SCAN, "add_base_32_X_int")(groups * tpg, out, bases, c, threadgroup=tpg)
    np.testing.assert_array_equal(out, np.cumsum(x))
