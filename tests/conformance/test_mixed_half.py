"""half mixed with float and integers (MSL's usual arithmetic conversions): half op float is
float, half op int is half, `c ? h : 0` is half. On CUDA, __half converts to every
arithmetic type, so these needed operators of the prelude's own (metal_half_cuda.h)."""

from __future__ import annotations

import numpy as np

from mcconf import KernelSet, assert_close

N = 64

KS = KernelSet([
    """
kernel void mixed_half_float(const device half* a [[buffer(0)]], const device float* b [[buffer(1)]],
                             device float* out [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    half h = a[i];
    float f = b[i];
    out[6 * i + 0] = h * f;            // float
    out[6 * i + 1] = f - h;
    out[6 * i + 2] = h / 2.0f + f;
    out[6 * i + 3] = (h < f) ? 1.0f : 0.0f;
    float acc = 0.0f;
    acc += a[i] * a[i];                // half * half is half, then float += half
    acc -= h;
    out[6 * i + 4] = acc;
    out[6 * i + 5] = (h >= 1) ? 1.0f : 0.0f;
}
""",
    """
kernel void mixed_half_int(const device half* a [[buffer(0)]], device half* out [[buffer(1)]],
                           uint i [[thread_position_in_grid]]) {
    half h = a[i];
    int k = int(i % 4) + 1;
    out[3 * i + 0] = h * k;                          // half
    out[3 * i + 1] = 2 + h;
    out[3 * i + 2] = (i % 2 == 0) ? (half) a[i] : 0; // half, as in ggml's mul_mm
}
""",
    # bfloat is a class on the CPU and CUDA: `c ? b : 0` must take bfloat (ggml's bf16 mul_mm)
    """
kernel void mixed_bfloat_literal(const device bfloat* a [[buffer(0)]], device float* out [[buffer(1)]],
                                 uint i [[thread_position_in_grid]]) {
    const bfloat b = (i % 2 == 0) ? *(device const bfloat*)(a + i) : 0;
    out[2 * i + 0] = float(b);
    out[2 * i + 1] = float((i % 3 == 0) ? 1 : a[i]);
}
""",
])


def test_half_with_float(device, rng):
    a = (rng.random(N) * 8 - 4).astype(np.float16)
    b = (rng.random(N) * 8 - 4).astype(np.float32)
    out = np.zeros(6 * N, np.float32)
    KS.get(device, "mixed_half_float")(N, a, b, out)
    A = a.astype(np.float32)
    sq = (A * A).astype(np.float16).astype(np.float32)  # half * half rounds to half
    exp = np.stack([A * b, b - A, A / 2 + b, (A < b).astype(np.float32), sq - A,
                    (A >= 1).astype(np.float32)], axis=1).ravel()
    assert_close(out, exp, rtol=2e-3, atol=2e-3)


def test_half_with_int(device, rng):
    a = (rng.random(N) * 8 - 4).astype(np.float16)
    out = np.zeros(3 * N, np.float16)
    KS.get(device, "mixed_half_int")(N, a, out)
    A = a.astype(np.float32)
    i = np.arange(N)
    exp = np.stack([A * (i % 4 + 1), 2 + A, np.where(i % 2 == 0, A, 0)], axis=1).ravel()
    assert_close(out, exp, rtol=2e-3, atol=2e-3)


def test_bfloat_with_integer_literal_branch(device, rng):
    bits = (rng.standard_normal(N).astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
    a = (bits.astype(np.uint32) << 16).view(np.float32)  # exactly representable in bfloat
    out = np.zeros(2 * N, np.float32)
    KS.get(device, "mixed_bfloat_literal")(N, bits.view(np.uint8), out)
    i = np.arange(N)
    exp = np.stack([np.where(i % 2 == 0, a, 0), np.where(i % 3 == 0, 1, a)], axis=1).ravel()
    np.testing.assert_array_equal(out, exp)
