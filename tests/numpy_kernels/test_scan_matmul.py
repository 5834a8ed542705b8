"""metalcall.numpy._kernels.scan.cumsum and matmul.matmul against NumPy."""

from __future__ import annotations

import numpy as np
import pytest
from nkhelp import fetch, fibers, sample, upload

from metalcall.numpy._kernels import matmul, matmul_cpu, matmul_gpu, matvec_cpu, scan

SCAN_SHAPES = [(1, 0, 1), (1, 1, 1), (2, 7, 3), (3, 300, 1), (1, 5000, 1), (1, 9000, 3), (500, 2, 1),
               (1, 70000, 1)]


@pytest.mark.parametrize("shape", SCAN_SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("dtype, out", [(np.float32, np.float32), (np.int32, np.int64)])
def test_cumsum(kdev, rng, shape, dtype, out):
    x = sample(rng, shape, dtype)
    o, n, i = shape
    got = fetch(scan.cumsum(kdev, upload(kdev, x), x.dtype, o, n, i, out), shape)
    want = np.cumsum(x, axis=1, dtype=out)
    assert got.dtype == want.dtype
    if np.dtype(out).kind == "f":
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-3 * np.sqrt(max(n, 1)))
    else:
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype, out", [(np.float16, np.float16), (np.bool_, np.int64), (np.float64, np.float64),
                                        (np.uint8, np.uint64)])
def test_cumsum_dtypes(pdev, rng, dtype, out):
    if pdev.backend == "metal" and np.dtype(out) == np.float64:
        pytest.skip("Metal has no double")
    for shape in [(2, 7, 3), (1, 5000, 1)]:
        x = sample(rng, shape, dtype)
        if dtype == np.float16:
            x = (np.abs(x) / 64).astype(np.float16)
        o, n, i = shape
        got = fetch(scan.cumsum(pdev, upload(pdev, x), x.dtype, o, n, i, out), shape)
        want = np.cumsum(x.astype(np.float64) if dtype == np.float16 else x, axis=1).astype(out)
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64), rtol=2e-3, atol=2e-2)


MM_SHAPES = [(1, 1, 1, 1), (1, 5, 7, 3), (2, 130, 129, 17), (1, 128, 128, 16), (3, 33, 9, 40), (1, 1, 200, 1),
             (2, 3, 5, 0), (1, 256, 128, 24)]


@pytest.mark.parametrize("shape", MM_SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_matmul_float32(kdev, rng, shape):
    bt, m, n, k = shape
    a, b = sample(rng, (bt, m, k), np.float32), sample(rng, (bt, k, n), np.float32)
    got = fetch(matmul.matmul(kdev, upload(kdev, a), upload(kdev, b), bt, m, n, k, np.float32), (bt, m, n))
    np.testing.assert_allclose(got, a @ b, rtol=1e-4, atol=1e-4 * np.sqrt(max(k, 1)))


@pytest.mark.parametrize("dtype", [np.float16, np.float64, np.int32, np.int8, np.uint8, np.int64, np.bool_])
def test_matmul_dtypes(pdev, rng, dtype):
    if pdev.backend == "metal" and np.dtype(dtype) == np.float64:
        pytest.skip("Metal has no double")
    for bt, m, n, k in [(2, 33, 9, 40), (1, 128, 128, 8)]:
        a, b = sample(rng, (bt, m, k), dtype), sample(rng, (bt, k, n), dtype)
        got = fetch(matmul.matmul(pdev, upload(pdev, a), upload(pdev, b), bt, m, n, k, dtype), (bt, m, n))
        want = a @ b  # integers wrap, as ours do
        assert got.dtype == want.dtype
        if np.dtype(dtype).kind == "f":
            np.testing.assert_allclose(got, want, rtol=2e-2 if dtype == np.float16 else 1e-12, atol=0.1 if dtype == np.float16 else 1e-12)
        else:
            np.testing.assert_array_equal(got, want)


def test_matmul_large(kdev, rng):
    s = 160 if fibers(kdev) else 520
    a, b = sample(rng, (1, s, s + 3), np.float32), sample(rng, (1, s + 3, s - 1), np.float32)
    got = fetch(matmul.matmul(kdev, upload(kdev, a), upload(kdev, b), 1, s, s - 1, s + 3, np.float32), (1, s, s - 1))
    np.testing.assert_allclose(got, a @ b, rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("variant", list(matmul_gpu.VARIANTS))
@pytest.mark.parametrize("shape", [(1, 128, 128, 16), (1, 256, 128, 32), (2, 130, 129, 17), (1, 5, 7, 3)],
                         ids=lambda s: "x".join(map(str, s)))
def test_matmul_gpu_variants(kdev, rng, variant, shape):
    """Every GPU variant (benchmarks/bench_matmul_variants.py picks among them), unchecked
    shapes (multiples of the tile) and checked ones; the CPU backend runs them as fibers."""
    if kdev.backend == "cpu" and not fibers(kdev):
        pytest.skip("the CPU backend's own kernel takes no variant")
    bt, m, n, k = shape
    a, b = sample(rng, (bt, m, k), np.float32), sample(rng, (bt, k, n), np.float32)
    if variant in matmul_gpu.CUDA_ONLY and kdev.backend != "cuda":
        with pytest.raises(ValueError, match="over the 32768 a Metal GPU gives a threadgroup"):
            matmul.matmul(kdev, upload(kdev, a), upload(kdev, b), bt, m, n, k, np.float32, variant=variant)
        return
    got = fetch(matmul.matmul(kdev, upload(kdev, a), upload(kdev, b), bt, m, n, k, np.float32, variant=variant),
                (bt, m, n))
    np.testing.assert_allclose(got, a @ b, rtol=1e-4, atol=1e-4 * np.sqrt(k))


def test_variants_within_metal_threadgroup_memory():
    """Every variant but the CUDA-only ones fits Metal's 32 KiB (the model matches the kernels:
    the CPU backend raises for a kernel over it, test_matmul_gpu_variants)."""
    assert matmul_gpu.CUDA_ONLY == {"quad16", "quad16u2"}
    assert matmul_gpu.threadgroup_bytes("quad16") == 33280 and matmul_gpu.threadgroup_bytes("quad8") == 16640


@pytest.mark.parametrize("shape", [(1, 64, 64, 16), (2, 64, 128, 48), (2, 70, 65, 19), (1, 5, 7, 3), (3, 1, 130, 8)],
                         ids=lambda s: "x".join(map(str, s)))
def test_matmul_sgm(kdev, rng, shape):
    """The simdgroup_float8x8 variant (Metal's float32 default): multiples of its 64x64x16
    block (float4 loads, direct stores), batches, and other shapes (zero-padded slices,
    guarded stores); the CPU backend runs it as fibers."""
    if kdev.backend == "cpu" and not fibers(kdev):
        pytest.skip("the CPU backend's own kernel takes no variant")
    bt, m, n, k = shape
    a, b = sample(rng, (bt, m, k), np.float32), sample(rng, (bt, k, n), np.float32)
    got = fetch(matmul.matmul(kdev, upload(kdev, a), upload(kdev, b), bt, m, n, k, np.float32, variant="sgm"),
                (bt, m, n))
    np.testing.assert_allclose(got, a @ b, rtol=1e-5, atol=1e-5 * np.sqrt(k))


def test_matmul_variant_choice(monkeypatch):
    """float32 takes "sgm" on Metal and "quad8" elsewhere; a named variant or
    METALCALL_MATMUL_VARIANT wins on any backend; other dtypes keep "rows8"."""
    monkeypatch.delenv("METALCALL_MATMUL_VARIANT", raising=False)
    f32 = np.dtype(np.float32)
    assert matmul.gpu_variant(f32, None, "metal") == "sgm"
    assert matmul.gpu_variant(f32, None, "cuda") == "quad8"
    assert matmul.gpu_variant(f32, "sgm", "cuda") == "sgm"
    assert matmul.gpu_variant(np.dtype(np.float16), None, "metal") == "rows8"
    monkeypatch.setenv("METALCALL_MATMUL_VARIANT", "sgm")
    assert matmul.gpu_variant(f32, None, "cpu") == "sgm"
    monkeypatch.setenv("METALCALL_MATMUL_VARIANT", "rows8")
    assert matmul.gpu_variant(f32, None, "metal") == "rows8"
    with pytest.raises(ValueError, match="unknown matmul variant"):
        matmul.gpu_variant(f32, "nope", "metal")


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.float16])
def test_matmul_cpu_deep_k(pdev, rng, monkeypatch, dtype):
    """The CPU kernel's split of a deep k into calls that add to the output (made shallow here):
    the same sums as one call, bitwise; float16 (no exact partial sums) stays one call."""
    if pdev.backend != "cpu":
        pytest.skip("the CPU backend's kernel")
    bt, m, n, k = 2, 19, 37, 50
    a, b = sample(rng, (bt, m, k), dtype), sample(rng, (bt, k, n), dtype)
    if dtype == np.float16:
        a, b = (a / 8).astype(dtype), (b / 8).astype(dtype)
    one = fetch(matmul.matmul(pdev, upload(pdev, a), upload(pdev, b), bt, m, n, k, dtype), (bt, m, n))
    monkeypatch.setattr(matmul_cpu, "_MAX_DEPTH", 8)
    monkeypatch.setattr(matmul_cpu, "_PART_DEPTH", 7)
    parts = fetch(matmul.matmul(pdev, upload(pdev, a), upload(pdev, b), bt, m, n, k, dtype), (bt, m, n))
    np.testing.assert_array_equal(parts, one)
    want = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(parts.astype(np.float64), want, rtol=1e-2 if dtype == np.float16 else 1e-5,
                               atol=0.1 if dtype == np.float16 else 1e-4)


MV_SHAPES = [(1, 1, 1, 1), (1, 7, 1, 13), (3, 9, 1, 300), (2, 1, 1, 20000), (1, 6, 1, 9000), (1, 1, 1500, 9000),
             (2, 1, 3, 50), (1, 1, 1024, 7), (2, 1, 2100, 33)]


@pytest.mark.parametrize("split", [False, True], ids=["parts-as-chosen", "parts-of-8"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, np.int32, np.int8, np.uint8])
def test_matrix_vector_products(pdev, rng, monkeypatch, dtype, split):
    """m == 1 or n == 1 (matvec_cpu.py on the CPU backend): rows in fours and a tail, column blocks
    and a tail, k split into parts where there are few rows or blocks (and, forced, into parts of
    8), batches; integers wrap as NumPy's do."""
    if pdev.backend == "metal" and np.dtype(dtype) == np.float64:
        pytest.skip("Metal has no double")
    if split:
        monkeypatch.setattr(matvec_cpu, "_MIN_PART", 8)
    for bt, m, n, k in MV_SHAPES:
        a, b = sample(rng, (bt, m, k), dtype), sample(rng, (bt, k, n), dtype)
        if dtype == np.float16:
            a, b = (a / 8).astype(dtype), (b / 8).astype(dtype)
        got = fetch(matmul.matmul(pdev, upload(pdev, a), upload(pdev, b), bt, m, n, k, dtype), (bt, m, n))
        assert got.dtype == np.dtype(dtype)
        if np.dtype(dtype).kind == "f":
            want = a.astype(np.float64) @ b.astype(np.float64)
            tol = {np.float16: 2e-2, np.float32: 1e-4, np.float64: 1e-12}[dtype]
            np.testing.assert_allclose(got.astype(np.float64), want, rtol=tol, atol=tol * np.sqrt(k) * 4,
                                       err_msg=f"{(bt, m, n, k)}")
        else:
            np.testing.assert_array_equal(got, a @ b, err_msg=f"{(bt, m, n, k)}")
