"""Production MSL kernels of public projects (MLX, ggml/llama.cpp, Harbeth) run on metalcall and
checked against NumPy models written here from what each kernel computes (issue P1.6
point 4). The public files are read where they lie (corpus_support.corpus_root()) and
flattened by tools/msl_corpus_survey.py; nothing of them is copied into the project.
Grids, threadgroups and argument structs follow the projects' own host code."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import metalcall as mc

from corpus_support import c_args, kernel, require
from mctest import cpu_kernels_built_by_clang

MLX_KERNELS = "mlx/mlx/backend/metal/kernels"
GGML_METAL = "ggml/src/ggml-metal/ggml-metal.metal"
GGML_IMPL = "ggml/src/ggml-metal/ggml-metal-impl.h"


def mlx_kernel(dev, corpus, file, name, **kw):
    path = require(f"{MLX_KERNELS}/{file}")
    return kernel(dev, path, name, include_dirs=(corpus / "mlx",), **kw)


def ggml_kernel(dev, corpus, name, **kw):
    path = require(GGML_METAL)
    return kernel(dev, path, name, include_dirs=(corpus / "ggml/src", corpus / "ggml/src/ggml-metal"), **kw)


def ggml_args(struct, **values):
    return c_args(require(GGML_IMPL), struct, **values)


TYPES = {"float32": np.float32, "float16": np.float16}
# fp32 results to a few ulps; fp16 ones to half's precision (11 bits).
TOL = {"float32": dict(rtol=2e-6, atol=1e-7), "float16": dict(rtol=2e-3, atol=1e-3)}


# ---- 1. MLX elementwise (unary.metal, binary.metal): contiguous kernels -------------------------
# unary_v / binary_vv take (in..., out, constant uint& size); the "v_"/"vv_" instantiations
# do one element per thread, the "vn_"/"vvn_" ones 8/sizeof(T) elements per thread (the last
# thread's tail handled by its size check), so the grid is ceil(size / n).

UNARY = {"Exp": np.exp, "Abs": np.abs}


@pytest.mark.parametrize("tname", ["float32", "float16"])
@pytest.mark.parametrize("variant", ["v", "vn"])
@pytest.mark.parametrize("op", sorted(UNARY))
def test_mlx_unary(device, corpus, rng, op, variant, tname):
    t = TYPES[tname]
    name = f"{variant}_{op}{tname}{tname}"
    k = mlx_kernel(device, corpus, "unary.metal", name)
    size = 1003  # not a multiple of the elements per thread
    x = rng.uniform(-4, 4, size).astype(t)
    out = np.zeros(size, t)
    per_thread = 1 if variant == "v" else 8 // np.dtype(t).itemsize
    k(-(-size // per_thread), x, out, np.uint32(size))
    want = UNARY[op](x.astype(np.float64))
    np.testing.assert_allclose(out.astype(np.float64), want, **TOL[tname])


@pytest.mark.parametrize("tname", ["float32", "float16"])
@pytest.mark.parametrize("variant", ["vv", "vvn"])
def test_mlx_binary_add(device, corpus, rng, variant, tname):
    t = TYPES[tname]
    k = mlx_kernel(device, corpus, "binary.metal", f"{variant}_Add{tname}")
    size = 1001
    a = rng.uniform(-10, 10, size).astype(t)
    b = rng.uniform(-10, 10, size).astype(t)
    c = np.zeros(size, t)
    per_thread = 1 if variant == "vv" else 8 // np.dtype(t).itemsize
    k(-(-size // per_thread), a, b, c, np.uint32(size))
    np.testing.assert_array_equal(c, a + b)  # one rounding, as NumPy's own add


def dispatch(groups, threads):
    """(grid in threads, threadgroup) of Metal's dispatchThreadgroups(groups, threads)."""
    groups = tuple(groups) + (1,) * (3 - len(groups))
    threads = tuple(threads) + (1,) * (3 - len(threads))
    return tuple(g * t for g, t in zip(groups, threads)), threads


def raw(a):
    """The array's bytes (ggml's kernels take `device const char *`): a view, so what the
    kernel writes lands in `a`."""
    return a.reshape(-1).view(np.uint8)


def max_threads(kernel):
    """The pipeline's own limit, as ggml and MLX read it (maxTotalThreadsPerThreadgroup): a Metal
    pipeline's may be below its device's (the simulator's families give some 768 or 896)."""
    return min(1024, kernel.max_total_threads_per_threadgroup)


# ---- 2a. ggml row reduction: kernel_sum_rows_f32_f32[_4] (sum and mean) -------------------------
# One threadgroup per row (dispatch (ne01, ne02, ne03) x nth), nth the power of two >= 32
# reaching the row length (the float4 kernel counts the row in float4s), capped at the
# pipeline's maximum and at the row length; a function constant picks sum or mean
# (ggml-metal-ops.cpp ggml_metal_op_sum_rows, ggml-metal-device.cpp).

OP_SUM_ROWS, OP_MEAN = 10, 11  # OP_SUM_ROWS_NUM_* of ggml-metal-impl.h


@pytest.mark.parametrize("op", ["sum", "mean"])
@pytest.mark.parametrize("ne00", [5, 32, 100, 1000, 4099])
def test_ggml_sum_rows(device, corpus, rng, ne00, op):
    c4 = ne00 % 4 == 0
    name = "kernel_sum_rows_f32_f32" + ("_4" if c4 else "")
    k = ggml_kernel(device, corpus, name, constants={"FC_sum_rows_op": OP_SUM_ROWS if op == "sum" else OP_MEAN})
    ne01, ne02, ne03 = 3, 2, 2
    x = rng.standard_normal((ne03, ne02, ne01, ne00)).astype(np.float32)
    dst = np.zeros((ne03, ne02, ne01, 1), np.float32)
    n = ne00 // 4 if c4 else ne00
    args = ggml_args("ggml_metal_kargs_sum_rows",
                     ne00=n, ne01=ne01, ne02=ne02, ne03=ne03,
                     nb00=x.strides[3], nb01=x.strides[2], nb02=x.strides[1], nb03=x.strides[0],
                     ne0=1, ne1=ne01, ne2=ne02, ne3=ne03,
                     nb0=dst.strides[3], nb1=dst.strides[2], nb2=dst.strides[1], nb3=dst.strides[0])
    nth = 32
    while nth < n and nth < max_threads(k):
        nth *= 2
    nth = min(nth, max_threads(k), n)
    grid, tg = dispatch((ne01, ne02, ne03), (nth,))
    k(grid, args, raw(x), raw(dst), threadgroup=tg, threadgroup_memory=[32 * 4 * (4 if c4 else 1)])
    want = x.astype(np.float64).sum(axis=-1, keepdims=True)
    if op == "mean":
        want /= ne00
    np.testing.assert_allclose(dst, want, rtol=1e-5, atol=1e-5 * np.sqrt(ne00))


# ---- 2a'. MLX reduce.metal: row_reduce_simple and all_reduce -------------------------------------
# row_reduce_simple: each threadgroup reduces N_WRITES = 4 contiguous rows (the last group
# shifted back to end at the last row), threadgroup_size_from_row_size threads (32 up to 512,
# 128 up to 1024, then ceil(n/4) rounded to 32, at most 1024), grid (tgs, ceil(rows/4)) threads
# (mlx/backend/metal/reduce.cpp row_reduce_simple). all_reduce: one threadgroup of
# roundup32(ceil(n/4)) threads up to 4096 elements, else two passes (128 partial rows, then one
# threadgroup of 32 over them) as all_reduce_dispatch does. Sums in float32 (MLX accumulates a
# float16 sum in half, so float16 is checked with max, which is exact).

def mlx_row_threads(row_size, kernel):
    if row_size <= 512:
        return 32
    if row_size <= 1024:
        return 128
    return min(max_threads(kernel), 32 * -(-(-(-row_size // 4)) // 32))


REDUCE = {"sum": np.sum, "max": np.max}


@pytest.mark.parametrize("op,tname", [("sum", "float32"), ("max", "float32"), ("max", "float16")])
@pytest.mark.parametrize("row_size", [7, 100, 512, 1000, 5000])
def test_mlx_row_reduce_simple(device, corpus, rng, row_size, op, tname):
    t = TYPES[tname]
    k = mlx_kernel(device, corpus, "reduce.metal", f"row_reduce_simple_{op}{tname}")
    rows = 10  # not a multiple of N_WRITES: the last threadgroup overlaps the one before
    x = rng.standard_normal((rows, row_size)).astype(t)
    out = np.zeros(rows, t)
    tgs = mlx_row_threads(row_size, k)
    k((tgs, -(-rows // 4)), x, out, np.uint64(row_size), np.int64(rows), threadgroup=(tgs, 1))
    want = REDUCE[op](x.astype(np.float64), axis=1)
    if op == "max":
        np.testing.assert_array_equal(out, want.astype(t))
    else:
        assert_sums_close(out, want, np.abs(x.astype(np.float64)).sum(axis=1), rtol=1e-6)


@pytest.mark.parametrize("n", [1000, 4096, 100003])
def test_mlx_all_reduce_sum(device, corpus, rng, n):
    k = mlx_kernel(device, corpus, "reduce.metal", "all_reduce_sumfloat32")
    x = rng.standard_normal(n).astype(np.float32)
    out = np.zeros(1, np.float32)
    if n <= 4 * 1024:
        tgs = 32 * -(-(-(-n // 4)) // 32)
        k(tgs, x, out, np.uint64(n), np.uint64(n), threadgroup=tgs)
    else:
        n_rows = 32 * 4
        partial = np.zeros(n_rows, np.float32)
        row_size = -(-n // n_rows)
        tgs = 32 * -(-min(-(-row_size // 4), 1024) // 32)
        k((tgs, n_rows), x, partial, np.uint64(n), np.uint64(row_size), threadgroup=(tgs, 1))
        k(32, partial, out, np.uint64(n_rows), np.uint64(n_rows), threadgroup=32)
    assert_sums_close(out, np.array([x.astype(np.float64).sum()]), np.abs(x.astype(np.float64)).sum(), rtol=1e-6)


# ---- 2b. softmax: ggml kernel_soft_max_f32[_4] and MLX block/looped softmax ----------------------
# ggml: softmax(x * scale + slope * mask) over each row, one threadgroup per row of
# (ne01, ne02, ne03); no mask (or sinks) is expressed by binding src0 again in their place;
# nth doubles from 32 while below the row (in float4s for _4) and nth*rows < 256
# (ggml_metal_op_soft_max). The mask (ne00 x ne01) is broadcast over heads.

def softmax_rows(z):
    z = z - z.max(axis=-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=-1, keepdims=True)


@pytest.mark.parametrize("variant", ["plain", "mask", "alibi", "sinks"])
@pytest.mark.parametrize("ne00", [7, 32, 100, 1000, 1003])
def test_ggml_soft_max(device, corpus, rng, ne00, variant):
    """"alibi": the mask scaled per head by slope = m0^(h+1) for the first n_head_log2 heads,
    m1^(2(h - n_head_log2) + 1) after (m0, m1 from max_bias as ggml_metal_op_soft_max computes
    them); "sinks": one extra logit per head (src2) that joins the normalisation only."""
    c4 = ne00 % 4 == 0
    k = ggml_kernel(device, corpus, "kernel_soft_max_f32" + ("_4" if c4 else ""))
    ne01, ne02, ne03 = 5, 3, 1
    scale = 0.7
    x = rng.standard_normal((ne03, ne02, ne01, ne00)).astype(np.float32) * 3
    mask = rng.standard_normal((1, 1, ne01, ne00)).astype(np.float32)
    mask[..., ::5] = -np.inf  # masked-out positions, as attention masks have
    sinks = rng.standard_normal(ne02).astype(np.float32) * 2
    dst = np.zeros_like(x)
    src0 = device.asarray(raw(x))  # bound again in place of an absent mask or sinks
    src1 = device.asarray(raw(mask)) if variant in ("mask", "alibi") else src0
    src2 = device.asarray(raw(sinks)) if variant == "sinks" else src0
    max_bias = 8.0 if variant == "alibi" else 0.0
    n_head_log2 = 1 << int(np.floor(np.log2(ne02)))
    m0 = 2.0 ** (-max_bias / n_head_log2)
    m1 = 2.0 ** (-(max_bias / 2.0) / n_head_log2)
    args = ggml_args("ggml_metal_kargs_soft_max",
                     ne00=ne00, ne01=ne01, ne02=ne02,
                     nb01=x.strides[2], nb02=x.strides[1], nb03=x.strides[0],
                     ne11=ne01, ne12=1, ne13=1,
                     nb11=mask.strides[2], nb12=mask.strides[1], nb13=mask.strides[0],
                     nb1=dst.strides[2], nb2=dst.strides[1], nb3=dst.strides[0],
                     scale=scale, max_bias=max_bias, m0=m0, m1=m1, n_head_log2=n_head_log2)
    rows = ne01 * ne02 * ne03
    n = ne00 // 4 if c4 else ne00
    nth = 32
    while nth < n and nth * rows < 256:
        nth *= 2
    grid, tg = dispatch((ne01, ne02, ne03), (nth,))
    k(grid, args, src0, src1, src2, raw(dst), threadgroup=tg, threadgroup_memory=[32 * 4])

    z = x.astype(np.float64) * scale
    if variant == "mask":
        z = z + mask
    elif variant == "alibi":
        h = np.arange(ne02)
        slope = np.where(h < n_head_log2, m0 ** (h + 1.0), m1 ** (2.0 * (h - n_head_log2) + 1))
        z = z + slope[None, :, None, None] * mask
    if variant == "sinks":
        sink = sinks.astype(np.float64)[None, :, None, None]
        top = np.maximum(z.max(axis=-1, keepdims=True), sink)
        e = np.exp(z - top)
        want = e / (e.sum(axis=-1, keepdims=True) + np.exp(sink - top))
    else:
        want = softmax_rows(z)
    np.testing.assert_allclose(dst, want, rtol=1e-5, atol=1e-6)


# MLX softmax.metal: rows of axis_size, 4 reads per thread (SOFTMAX_N_READS). Up to 4096 the
# "block" kernel takes a row per threadgroup of 32*ceil(ceil(n/4)/32) threads; beyond, the
# "looped" kernel a threadgroup of the pipeline's maximum (mlx/backend/metal/softmax.cpp).
# The looped kernel is also checked on short rows (it is correct for any length).

@pytest.mark.parametrize("tname", ["float32", "float16"])
@pytest.mark.parametrize("kind,axis_size", [(kind, n) for kind in ("block", "looped")
                                            for n in (3, 32, 257, 1000, 4096, 5003) if kind == "looped" or n <= 4096])
def test_mlx_softmax(device, corpus, rng, kind, axis_size, tname):
    t = TYPES[tname]
    k = mlx_kernel(device, corpus, "softmax.metal", f"{kind}_softmax_{tname}")
    rows = 4
    x = (rng.standard_normal((rows, axis_size)) * 4).astype(t)
    out = np.zeros_like(x)
    if kind == "block":
        tgs = 32 * -(-(-(-axis_size // 4)) // 32)
        if tgs > k.max_total_threads_per_threadgroup:
            pytest.skip(f"MLX asserts that {tgs} threads fit the pipeline's {k.max_total_threads_per_threadgroup}")
    else:
        tgs = max_threads(k)
    k(rows * tgs, x, out, np.int32(axis_size), threadgroup=tgs)
    want = softmax_rows(x.astype(np.float64))
    # fast::exp; half results carry half's rounding (the sums accumulate in half too)
    tol = dict(rtol=1e-5, atol=1e-6) if t == np.float32 else dict(rtol=1e-2, atol=2e-3)
    np.testing.assert_allclose(out.astype(np.float64), want, **tol)


def assert_sums_close(got, want, magnitude, rtol, out_rtol=0.0):
    """Sums of products: an error bound relative to the sum of the products' magnitudes
    (the order of the additions differs from NumPy's), plus `out_rtol` of the result for a
    final rounding to a narrower type."""
    err = np.abs(got.astype(np.float64) - want)
    bad = err > rtol * magnitude + out_rtol * np.abs(want) + 1e-30
    assert not bad.any(), (f"{int(bad.sum())} of {bad.size} differ; worst error {err.max():.3g} "
                           f"(bound {rtol:g} x magnitude)")


def padded(a, extra_rows):
    """Bytes of `a` plus `extra_rows` rows of zeros: ggml's kernels read whole groups of
    rows past the last one and drop those results (its buffers are padded)."""
    row = a.shape[-1] * a.itemsize
    return np.concatenate([raw(a), np.zeros(extra_rows * row, np.uint8)])


# ---- 3. gemv: ggml kernel_mul_mv_{f32,f16}_f32[_4|_short] ----------------------------------------
# dst[b, r1, r0] = sum_i src0[b / r2, r0, i] * src1[b, r1, i]: each of ne11 vectors times the
# ne01 x ne00 matrix, matrices broadcast over batches (r2 = ne12 / ne02). ggml-metal-device.cpp:
# ne00 < 32 takes "_short" (a thread per row, 32 rows a threadgroup of one simdgroup);
# else nr0 = 2 rows per threadgroup of nsg = min(4, ceil(ne00/128)) simdgroups, 32*4*nr0
# bytes of threadgroup memory, "_4" when ne00 % 4 == 0; function constants nsg, ne12, r2, r3.
# Dispatch (ceil(ne01/nr0), ne11, ne12*ne13) x (32, nsg) (ggml_metal_op_mul_mat's mul_mv path).

@pytest.mark.parametrize("src0_type", ["f32", "f16"])
@pytest.mark.parametrize("ne00", [20, 33, 200, 1000, 1003])
def test_ggml_mul_mv(device, corpus, rng, ne00, src0_type):
    t0 = np.float32 if src0_type == "f32" else np.float16
    ne01, ne02, ne11, ne12 = 13, 2, 3, 4
    r2 = ne12 // ne02
    if ne00 < 32:
        suffix, nsg, nr0, smem = "_short", 1, 32, []
    else:
        suffix, nsg, nr0 = ("_4" if ne00 % 4 == 0 else ""), min(4, (ne00 + 127) // 128), 2
        smem = [32 * 4 * nr0]
    k = ggml_kernel(device, corpus, f"kernel_mul_mv_{src0_type}_f32{suffix}",
                    constants={"FC_mul_mv_nsg": nsg, "FC_mul_mv_ne12": ne12, "FC_mul_mv_r2": r2, "FC_mul_mv_r3": 1})
    x = rng.standard_normal((ne02, ne01, ne00)).astype(t0)
    y = rng.standard_normal((ne12, ne11, ne00)).astype(np.float32)
    dst = np.zeros((ne12, ne11, ne01), np.float32)
    args = ggml_args("ggml_metal_kargs_mul_mv",
                     ne00=ne00, ne01=ne01, ne02=ne02,
                     nb00=x.strides[2], nb01=x.strides[1], nb02=x.strides[0], nb03=x.nbytes,
                     ne10=ne00, ne11=ne11, ne12=ne12,
                     nb10=y.strides[2], nb11=y.strides[1], nb12=y.strides[0], nb13=y.nbytes,
                     ne0=ne01, ne1=ne11, nr0=2, r2=r2, r3=1)
    grid, tg = dispatch((-(-ne01 // nr0), ne11, ne12), (32, nsg))
    k(grid, args, padded(x, nr0), raw(y), raw(dst), threadgroup=tg,
      **({"threadgroup_memory": smem} if smem else {}))
    xb = np.repeat(x.astype(np.float64), r2, axis=0)  # batch b uses matrix b // r2
    want = np.einsum("boi,bri->bro", xb, y.astype(np.float64))
    magnitude = np.einsum("boi,bri->bro", np.abs(xb), np.abs(y.astype(np.float64)))
    assert_sums_close(dst, want, magnitude, rtol=1e-5)


# MLX gemv.metal: out = mat @ vec ("gemv_", mat out x in, rows contiguous) or vec @ mat
# ("gemv_t_", mat in x out), batched over tid.z with one stride per operand. Block shapes as
# mlx/backend/metal/matmul.cpp gemv_axbpy picks them (bm, bn, sm, sn, tm, tn); the threadgroup
# is (32, bn, bm) and the grid ceil(out / outputs per threadgroup) x 1 x batch threadgroups,
# outputs per threadgroup bm*sm*tm ("gemv_") or bn*sn*tn ("gemv_t_"). Arguments follow the
# kernel's [[buffer(0..14)]]; bias, alpha and beta are unused without axpby.

def mlx_gemv_blocks(transposed, k, out):
    """(bm, bn, sm, sn, tm, tn) as matmul.cpp gemv_axbpy chooses them."""
    tm, tn, sm, sn, bm, bn = 4, 4, 1, 32, 1, 1
    if transposed:
        sm, sn = (4, 8) if k >= 8192 and out >= 2048 else (8, 4)
        bn = 16 if out >= 2048 else 4 if out >= 512 else 2
        tn = 1 if out < tn else tn
    else:
        bm = 8 if out >= 4096 else 4
        if k <= 64:
            bm, sm, sn = 1, 8, 4
        elif k >= 16 * out:
            bm, bn = 1, 8
        tm = 1 if out < tm else tm
    return bm, bn, sm, sn, tm, tn


# gemv_t calls threadgroup_barrier inside `if (out_col < out_vec_size)`, then shuffles after a
# remainder loop whose trip count differs between lanes; on CUDA the lanes that entered that
# branch are rejoined at its end (msl/passes/branch_reconvergence.hpp), else the last threadgroup's
# outputs came out wrong when K had a remainder (H100, 2026-11-24).
@pytest.mark.parametrize("tname", ["float32", "float16"])
@pytest.mark.parametrize("transposed,k,out", [
    (False, 300, 100), (False, 50, 37), (False, 2000, 10), (False, 200, 3),
    (True, 300, 100), (True, 77, 600), (True, 50, 3), (True, 64, 100),
])
def test_mlx_gemv(device, corpus, rng, transposed, k, out, tname):
    t = TYPES[tname]
    bm, bn, sm, sn, tm, tn = mlx_gemv_blocks(transposed, k, out)
    name = f"gemv_{'t_' if transposed else ''}{tname}_bm{bm}_bn{bn}_sm{sm}_sn{sn}_tm{tm}_tn{tn}_nc0_axpby0"
    kern = mlx_kernel(device, corpus, "gemv.metal", name)
    batch = 2
    mat = rng.standard_normal((batch, k, out) if transposed else (batch, out, k)).astype(t)
    vec = rng.standard_normal((batch, k)).astype(t)
    res = np.zeros((batch, out), t)
    per_tg = bn * sn * tn if transposed else bm * sm * tm
    grid, tg = dispatch((-(-out // per_tg), 1, batch), (32, bn, bm))
    ld = out if transposed else k
    kern(grid, mat, vec, np.zeros(1, t), res, np.int32(k), np.int32(out), np.int32(ld),
         np.float32(1), np.float32(0), np.int32(1), np.array([batch], np.int32),
         np.array([k], np.int64), np.array([k * out], np.int64), np.zeros(1, np.int64), np.int32(1),
         threadgroup=tg)
    m64, v64 = mat.astype(np.float64), vec.astype(np.float64)
    if transposed:
        want, magnitude = np.einsum("bk,bko->bo", v64, m64), np.einsum("bk,bko->bo", abs(v64), abs(m64))
    else:
        want, magnitude = np.einsum("bok,bk->bo", m64, v64), np.einsum("bok,bk->bo", abs(m64), abs(v64))
    if t == np.float32:
        assert_sums_close(res, want, magnitude, rtol=1e-5)
    else:  # float accumulation, one rounding to half at the end
        assert_sums_close(res, want, magnitude, rtol=1e-5, out_rtol=2.0**-11)


# ---- 4. gemm with simdgroup_matrix: ggml kernel_mul_mm_{f32,f16}_f32 -----------------------------
# The same product as mul_mv for many vectors (dst[b] = src1[b] @ src0[b / r2]^T). Each
# threadgroup of 4 simdgroups (32 x 4 threads) makes a 64 (src0 rows) x 32 (src1 rows) block:
# tiles of K = 32 are staged in threadgroup memory as HALF (both instantiations store
# simdgroup_half8x8 operands; the f32 kernel rounds its inputs to half on the way) and
# multiplied with simdgroup_multiply_accumulate into float accumulators. Function constants:
# bc_inp = ne00 % 32 != 0, bc_out = ne01 % 64 != 0 or ne11 % 32 != 0, ne12, ne13, r2, r3;
# threadgroup memory bc_out ? 8192 : 6144 bytes; dispatch (ceil(ne11/32), ceil(ne01/64),
# ne12*ne13) x (32, 4) (ggml-metal-device.cpp get_pipeline_mul_mm without the tensor API,
# ggml_metal_op_mul_mat). Model: inputs rounded to half, products summed in float64; the
# kernel's float accumulation allows an error of a few float ulps of the magnitudes.
# ne01 is a multiple of 4 here: with ne01 % 4 == 2 the partial-block copy makes unaligned
# float4 accesses, a metalcall crash (test_ggml_mul_mm_unaligned_output_rows below).

@pytest.mark.parametrize("src0_type", ["f32", "f16"])
@pytest.mark.parametrize("ne00,ne01,ne11,ne02,ne12", [
    (64, 64, 32, 1, 1),     # one whole block, no bounds checks
    (128, 128, 64, 2, 2),   # 2 x 2 blocks, two batches
    (100, 100, 40, 1, 2),   # partial K tile and partial output blocks, broadcast src0 (r2 = 2)
    (256, 132, 9, 1, 1),    # a thin src1 (ggml takes mul_mm from ne11 > 8)
])
def test_ggml_mul_mm(device, corpus, rng, src0_type, ne00, ne01, ne11, ne02, ne12):
    run_mul_mm(device, corpus, rng, src0_type, ne00, ne01, ne11, ne02, ne12)


def run_mul_mm(device, corpus, rng, src0_type, ne00, ne01, ne11, ne02, ne12):
    t0 = np.float32 if src0_type == "f32" else np.float16
    r2 = ne12 // ne02
    bc_inp = ne00 % 32 != 0
    bc_out = ne01 % 64 != 0 or ne11 % 32 != 0
    k = ggml_kernel(device, corpus, f"kernel_mul_mm_{src0_type}_f32",
                    constants={"FC_mul_mm_bc_inp": bc_inp, "FC_mul_mm_bc_out": bc_out, "FC_mul_mm_ne12": ne12,
                               "FC_mul_mm_ne13": 1, "FC_mul_mm_r2": r2, "FC_mul_mm_r3": 1})
    x = rng.standard_normal((ne02, ne01, ne00)).astype(t0)
    y = rng.standard_normal((ne12, ne11, ne00)).astype(np.float32)
    dst = np.zeros((ne12, ne11, ne01), np.float32)
    args = ggml_args("ggml_metal_kargs_mul_mm",
                     ne00=ne00, ne02=ne02, nb01=x.strides[1], nb02=x.strides[0], nb03=x.nbytes,
                     ne12=ne12, nb10=y.strides[2], nb11=y.strides[1], nb12=y.strides[0], nb13=y.nbytes,
                     ne0=ne01, ne1=ne11, r2=r2, r3=1)
    grid, tg = dispatch((-(-ne11 // 32), -(-ne01 // 64), ne12), (32, 4))
    k(grid, args, raw(x), raw(y), raw(dst), threadgroup=tg, threadgroup_memory=[8192 if bc_out else 6144])
    xh = np.repeat(x.astype(np.float16).astype(np.float64), r2, axis=0)
    yh = y.astype(np.float16).astype(np.float64)
    want = yh @ xh.transpose(0, 2, 1)
    magnitude = np.abs(yh) @ np.abs(xh).transpose(0, 2, 1)
    assert_sums_close(dst, want, magnitude, rtol=1e-5)



# MLX steel GEMM (steel_gemm_fused.metal): D = op(A) @ op(B), op a transpose for "t" in the
# name ("nn", "nt", "tn", "tt"), batched over the grid's z with the GEMMParams strides.
# Tiles of BM x BN per threadgroup of (32, WN, WM) threads, staged through threadgroup
# memory and multiplied with simdgroup matrices (steel/gemm/mma.h), float accumulation.
# Function constants as matmul.cpp steel_matmul_regular_axpby sets them: has_batch (batch
# shapes of more than one dimension), use_out_source, do_axpby (false: a plain product) and
# align_M/N/K = (M % BM, N % BN, K % BK == 0). Grid ceil(N/BN) x ceil(M/BM) x batch
# threadgroups (swizzle_log 0). The buffers that function constants switch off (C,
# addmm_params, batch_shape, batch_strides) are left unbound, as MLX leaves them: None for C,
# which comes before D, and nothing for the last three.

def mlx_params(**values):
    return c_args(require(f"{MLX_KERNELS}/steel/gemm/params.h"), "GEMMParams", **values)


@pytest.mark.parametrize("tname", ["float32", "float16"])
@pytest.mark.parametrize("trans", ["nn", "nt", "tn", "tt"])
@pytest.mark.parametrize("blocks,mnk", [
    ((64, 64, 16, 2, 2), (128, 64, 32)),    # aligned (MLX's default blocks)
    ((64, 64, 16, 2, 2), (100, 70, 45)),    # nothing aligned
    ((32, 32, 16, 2, 2), (33, 40, 20)),
    ((64, 32, 32, 2, 2), (64, 96, 100)),
])
def test_mlx_steel_gemm(device, corpus, rng, blocks, mnk, trans, tname):
    t = TYPES[tname]
    bm, bn, bk, wm, wn = blocks
    m, n, k = mnk
    name = f"steel_gemm_fused_{trans}_{tname}_{tname}_bm{bm}_bn{bn}_bk{bk}_wm{wm}_wn{wn}"
    consts = {"has_batch": False, "use_out_source": False, "do_axpby": False,
              "align_M": m % bm == 0, "align_N": n % bn == 0, "align_K": k % bk == 0}
    kern = mlx_kernel(device, corpus, "steel/gemm/kernels/steel_gemm_fused.metal", name, constants=consts)
    batch = 2
    ta, tb = trans[0] == "t", trans[1] == "t"
    a = rng.standard_normal((batch, k, m) if ta else (batch, m, k)).astype(t)
    b = rng.standard_normal((batch, n, k) if tb else (batch, k, n)).astype(t)
    d = np.zeros((batch, m, n), t)
    tiles_n, tiles_m = -(-n // bn), -(-m // bm)
    params = mlx_params(M=m, N=n, K=k, lda=a.shape[2], ldb=b.shape[2], ldd=n, tiles_n=tiles_n, tiles_m=tiles_m,
                        batch_stride_a=m * k, batch_stride_b=k * n, batch_stride_d=m * n, swizzle_log=0,
                        gemm_k_iterations_aligned=k // bk, batch_ndim=1)
    grid, tg = dispatch((tiles_n, tiles_m, batch), (32, wn, wm))
    kern(grid, a, b, None, d, params, threadgroup=tg)
    a64 = a.astype(np.float64).transpose(0, 2, 1) if ta else a.astype(np.float64)
    b64 = b.astype(np.float64).transpose(0, 2, 1) if tb else b.astype(np.float64)
    want, magnitude = a64 @ b64, np.abs(a64) @ np.abs(b64)
    assert_sums_close(d, want, magnitude, rtol=1e-5, out_rtol=0 if t == np.float32 else 2.0**-11)

# A partial output block whose rows are not 16-byte aligned (ne01 % 4 == 2): the kernel copies
# each row out with `*(device float4 *)(dst + r0 + row * ne01)`, a float4 access at an
# address aligned to 8 bytes only. ggml runs this path on Apple GPUs for any ne01 that is not
# a multiple of 64, relying on Metal to accept it. Kernels that g++ builds for the CPU backend
# make the access an aligned vector move (vmovaps) and the process dies with SIGSEGV; clang's
# kernels use unaligned moves (-fmax-type-align=8, docs/design.md). Run in a child process so
# a crash is a failure, not the end of the test run.
MISALIGNED_XFAIL = ("kernels built by g++: a float4 load/store through a device pointer that is only 4- or "
                    "8-byte aligned is an aligned vector move (vmovaps) that faults on x86-64; with clang "
                    "(the default where installed) it works (docs/design.md, Known limits).")


def test_ggml_mul_mm_unaligned_output_rows(device, corpus, request):
    require(GGML_METAL)
    if device.backend == "cpu" and not cpu_kernels_built_by_clang():
        request.applymarker(pytest.mark.xfail(reason=MISALIGNED_XFAIL, strict=True))
    code = (
        "import sys, numpy as np, metalcall as mc\n"
        f"sys.path.insert(0, {str(Path(__file__).parent)!r})\n"
        f"sys.path.insert(1, {str(Path(__file__).parent.parent)!r})\n"
        "from pathlib import Path\n"
        "import test_production_kernels as t\n"
        f"dev = mc.Device({device.backend!r})\n"
        f"t.run_mul_mm(dev, Path({str(corpus)!r}), np.random.default_rng(7), 'f32', 96, 70, 40, 1, 1)\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, f"exit status {r.returncode}: {r.stderr[-2000:]}"


# ---- 5. image filters on textures: Harbeth (yangKJ/Harbeth, MIT) C7GaussianBlur and C7Sobel ------
# Both take (outputTexture [[texture(0)]], inputTexture [[texture(1)]], constant float*
# parameter [[buffer(0)]]) and run one thread per output pixel (grid = (width, height)).
# Input: an rgba8unorm image, read as half (c / 255 rounded to half); output rgba16float.

HARBETH_BLUR = "harbeth/Sources/Compute/Blur Effects/C7GaussianBlur.metal"
HARBETH_SOBEL = "harbeth/Sources/Compute/Edge & Detail/C7Sobel.metal"


def harbeth_kernel(dev, file, name):
    return kernel(dev, require(file), name)


def unorm8_as_half(img):
    return (img.astype(np.float32) / np.float32(255)).astype(np.float16)


# C7GaussianBlur: 3x3 weights (1 2 1; 2 4 2; 1 2 1) / 16 on the texels read at
# uint(clamp(p / size + (a - 1, b - 1) * r, 0, 1) * size), r = half(radius) / 100 in
# normalised coordinates (so neighbours are r * size texels apart), summed in half. With
# power-of-two sizes every coordinate step is exact in float, so the model can use the same
# float32 arithmetic. A coordinate clamped to 1 reads texel `size`, outside the texture:
# undefined on Metal, zeros on metalcall's CPU/CUDA (docs/design.md); those pixels are
# compared on the translated backends only.

@pytest.mark.parametrize("radius", [0.0, 3.0, 10.0])
def test_harbeth_gaussian_blur(device, rng, request, radius):
    require(HARBETH_BLUR)
    k = harbeth_kernel(device, HARBETH_BLUR, "C7GaussianBlur")
    h, w = 32, 64
    img = rng.integers(0, 256, (h, w, 4), dtype=np.uint8)
    src = device.texture_from(img)                       # rgba8unorm
    dst = device.texture((h, w), "rgba16float")
    k((w, h), np.array([radius], np.float32), textures=[dst, src])
    got = np.asarray(dst).astype(np.float64)

    r = np.float32(np.float16(np.float16(radius) / np.float16(100)))
    texels = unorm8_as_half(img)
    acc = np.zeros((h, w, 4), np.float16)
    outside = np.zeros((h, w), bool)
    ys, xs = np.mgrid[0:h, 0:w]
    x = xs.astype(np.float32) / np.float32(w)
    y = ys.astype(np.float32) / np.float32(h)
    weights = [[1, 2, 1], [2, 4, 2], [1, 2, 1]]
    for i in range(9):
        a, b = i % 3, i // 3
        sx = np.clip(x + np.float32(a - 1) * r, 0, 1) * np.float32(w)
        sy = np.clip(y + np.float32(b - 1) * r, 0, 1) * np.float32(h)
        tx, ty = sx.astype(np.int64), sy.astype(np.int64)
        off = (tx >= w) | (ty >= h)
        outside |= off
        sample = texels[np.minimum(ty, h - 1), np.minimum(tx, w - 1)]
        sample[off] = 0
        acc = (acc + sample * np.float16(weights[a][b])).astype(np.float16)
    want = (acc / np.float16(16)).astype(np.float64)
    compare = np.ones((h, w), bool) if device.backend in ("cpu", "cuda") else ~outside
    np.testing.assert_allclose(got[compare], want[compare], rtol=0, atol=2e-3)


# C7Sobel: Sobel-like responses h and v of the texels two pixels away, as the kernel writes
# them (h = -TL - 2T - TR + BL + 2B + BR, v = -B - 2L - TL + BR + 2R + TR, top = y - 2), their
# Rec. 709 luma, and length(h, v) * edgeStrength in r, g and b, alpha 1. Offsets are computed
# as `uint(grid.x - 2.0h)`: negative (undefined) for the two first rows and columns, and the
# last two read past the edge, so only the interior is compared.

@pytest.mark.parametrize("strength", [1.0, 0.25])
def test_harbeth_sobel(device, rng, strength):
    k = harbeth_kernel(device, HARBETH_SOBEL, "C7Sobel")
    h, w = 24, 40
    img = rng.integers(0, 256, (h, w, 4), dtype=np.uint8)
    src = device.texture_from(img)
    dst = device.texture((h, w), "rgba16float")
    k((w, h), np.array([strength], np.float32), textures=[dst, src])
    got = np.asarray(dst).astype(np.float64)

    t = unorm8_as_half(img).astype(np.float64)

    def at(dx, dy):  # texels at (x + dx, y + dy) for the interior pixels
        return t[2 + dy:h - 2 + dy, 2 + dx:w - 2 + dx]

    tl, top, tr = at(-2, -2), at(0, -2), at(2, -2)
    left, right = at(-2, 0), at(2, 0)
    bl, bottom, br = at(-2, 2), at(0, 2), at(2, 2)
    hh = -tl - 2 * top - tr + bl + 2 * bottom + br
    vv = -bottom - 2 * left - tl + br + 2 * right + tr
    luma = np.array([0.2126, 0.7152, 0.0722])
    mag = np.hypot(hh[..., :3] @ luma, vv[..., :3] @ luma) * strength
    inner = got[2:h - 2, 2:w - 2]
    # half arithmetic throughout: a few half ulps of the responses (up to ~6)
    np.testing.assert_allclose(inner[..., :3], np.repeat(mag[..., None], 3, axis=-1), rtol=4e-3, atol=8e-3)
    np.testing.assert_array_equal(inner[..., 3], 1.0)
