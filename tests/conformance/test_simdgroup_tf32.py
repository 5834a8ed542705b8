"""TF32 SIMD-group products, the CUDA backend's opt-in (metal_simdgroup_matrix_cuda.h): with
fast math (the default) and defines={"METALCALL_SGM_TF32": "1"}, float x float products run
on the tensor cores with each factor rounded to TF32 (10 mantissa bits, to nearest, ties
away) on sm_80 and later; everywhere else, and without the define, they stay exact fp32.
Results are checked against NumPy models of both: a loaded B operand, a computed one (the
transpose made by shuffles), accumulation chains."""

from __future__ import annotations

import numpy as np
import pytest

import metalcall as mc

SRC = """
#include <metal_stdlib>
using namespace metal;
// Per SIMD-group t: C = A[:, :8] B[:8] + A[:, 8:] B[8:] (A 8x16, B 16x8), then E = A[:, 8:] P
// with P = A[:, :8] B[:8] computed here (a matrix made by a product, used as B).
kernel void tf32_products(device const float* a [[buffer(0)]], device const float* b [[buffer(1)]],
                          device float* c [[buffer(2)]], uint sg [[simdgroup_index_in_threadgroup]],
                          uint tg [[threadgroup_position_in_grid]]) {
    const uint t = tg * 2 + sg;
    device const float* at = a + t * 128;
    device const float* bt = b + t * 128;
    simdgroup_float8x8 a0, a1, b0, b1, p, e;
    simdgroup_float8x8 acc = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
    simdgroup_load(a0, at, 16);
    simdgroup_load(a1, at + 8, 16);
    simdgroup_load(b0, bt, 8);
    simdgroup_load(b1, bt + 64, 8);
    simdgroup_multiply_accumulate(acc, a0, b0, acc);
    simdgroup_multiply_accumulate(acc, a1, b1, acc);
    simdgroup_store(acc, c + t * 128, 8);
    simdgroup_multiply(p, a0, b0);
    simdgroup_multiply(e, a1, p);
    simdgroup_store(e, c + t * 128 + 64, 8);
}
"""

TILES = 6


def tf32(x: np.ndarray) -> np.ndarray:
    """cvt.rna.tf32.f32: keep 10 mantissa bits, rounding to nearest with ties away from zero."""
    bits = np.asarray(x, np.float32).view(np.uint32)
    return ((bits + np.uint32(0x1000)) & np.uint32(0xFFFFE000)).view(np.float32)


def models(a: np.ndarray, b: np.ndarray, rounded: bool):
    r = tf32 if rounded else (lambda x: x)
    a = a.reshape(TILES, 8, 16)
    b = b.reshape(TILES, 16, 8)
    a0, a1 = r(a[:, :, :8]).astype(np.float64), r(a[:, :, 8:]).astype(np.float64)
    b0, b1 = r(b[:, :8]).astype(np.float64), r(b[:, 8:]).astype(np.float64)
    c = a0 @ b0 + a1 @ b1
    p = (a0 @ b0).astype(np.float32)
    e = a1 @ r(p).astype(np.float64)
    mag_c = np.abs(a0) @ np.abs(b0) + np.abs(a1) @ np.abs(b1)
    mag_e = np.abs(a1) @ np.abs(r(p).astype(np.float64))
    return c, e, mag_c, mag_e


def uses_tf32(device: mc.Device, define: bool) -> bool:
    if not define or device.backend != "cuda":
        return False
    arch = device.info.architecture  # "sm_90"
    return int("".join(ch for ch in arch if ch.isdigit()) or 0) >= 80


@pytest.mark.parametrize("define", [True, False], ids=["tf32", "exact"])
def test_float_products_rounded_to_tf32_only_when_asked(device, rng, define):
    lib = device.compile(SRC, defines={"METALCALL_SGM_TF32": "1"} if define else None)
    a = rng.standard_normal(TILES * 128).astype(np.float32)
    b = rng.standard_normal(TILES * 128).astype(np.float32)
    out = np.zeros(TILES * 128, np.float32)
    lib.tf32_products((TILES // 2) * 64, a, b, out, threadgroup=64)
    rounded = uses_tf32(device, define)
    c, e, mag_c, mag_e = models(a, b, rounded)
    got = out.reshape(TILES, 2, 8, 8)
    # fp32 accumulation of products of exact (or TF32) factors: a few ulps of the magnitudes.
    assert np.all(np.abs(got[:, 0] - c) <= 4e-6 * mag_c + 1e-30), np.abs(got[:, 0] - c).max()
    # E's factor P is itself a computed fp32 (then TF32-rounded) matrix: one more rounding.
    assert np.all(np.abs(got[:, 1] - e) <= (2.0**-10 if rounded else 4e-6) * mag_e + 1e-30)


def test_tf32_rounding_is_visible(device):
    """1 + 2^-20 is not a TF32 value: with TF32 each product of eight is 1, else slightly more."""
    x = np.full(TILES * 128, 1.0 + 2.0**-20, np.float32)
    for define in (True, False):
        lib = device.compile(SRC, defines={"METALCALL_SGM_TF32": "1"} if define else None)
        out = np.zeros(TILES * 128, np.float32)
        lib.tf32_products((TILES // 2) * 64, x, x, out, threadgroup=64)
        c = out.reshape(TILES, 2, 64)[:, 0]
        want = np.float32(16.0) if uses_tf32(device, define) else np.float32(16 * (1.0 + 2.0**-20) ** 2)
        np.testing.assert_array_equal(c, np.full_like(c, want))
