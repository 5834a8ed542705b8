"""half mixed with float and integers (MSL's usual arithmetic conversions): half op float is
float, half op int is half, `c ? h : 0` is half. On CUDA, __half converts to every
arithmetic type, so these needed operators of the prelude's own (metal_half_cuda.h).
Conditionals whose branches mix bfloat (a class on every target) or half with float, double
literals or integers take MSL's type on the CPU as on CUDA (metal_conditional.h): `c ? b : f`
is float, `c ? b : i` bfloat, `c ? h : b` float (issue P2.0 item 3)."""

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
    # Branches of mixed types: the conditional has MSL's type (the static_asserts), values checked.
    """
static_assert(is_same_v<decltype(true ? bfloat(1.0f) : 2.0f), float>, "bfloat, float: float");
static_assert(is_same_v<decltype(true ? 2 : bfloat(1.0f)), bfloat>, "int, bfloat: bfloat");
static_assert(is_same_v<decltype(true ? half(1.0f) : bfloat(1.0f)), float>, "half, bfloat: float");
static_assert(is_same_v<decltype(true ? half(1.0f) : 2.0f), float>, "half, float: float");
kernel void mixed_conditionals(const device bfloat* b [[buffer(0)]], const device half* h [[buffer(1)]],
                               const device float* f [[buffer(2)]], const device int* n [[buffer(3)]],
                               device float* out [[buffer(4)]], uint i [[thread_position_in_grid]]) {
    const bool c = (i % 3) != 0;
    bfloat bv = b[i];
    out[6 * i + 0] = c ? bv : f[i];                 // float: the bfloat widened, the float kept
    out[6 * i + 1] = c ? f[i] : b[i];               // the other order, a device lvalue
    out[6 * i + 2] = float(c ? bv : n[i]);          // bfloat: the integer rounded to bfloat
    out[6 * i + 3] = c ? h[i] : bv;                 // float
    out[6 * i + 4] = (i % 2 == 0) ? bv * 2 : 0.5;   // float: a double literal is float in MSL
    float sel = f[i];
    (c ? sel : sel) += float(bv);                   // an lvalue stays an lvalue
    out[6 * i + 5] = sel;
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


def bfloat_values(rng, n, scale=8.0):
    """Random floats exactly representable in bfloat, and their bfloat bits."""
    bits = ((rng.standard_normal(n).astype(np.float32) * scale).view(np.uint32) >> 16).astype(np.uint16)
    return bits, (bits.astype(np.uint32) << 16).view(np.float32)


def test_conditionals_with_mixed_branches(device, rng):
    bits, b = bfloat_values(rng, N)
    h = (rng.random(N) * 8 - 4).astype(np.float16)
    f = rng.standard_normal(N).astype(np.float32) * 1000
    n = rng.integers(-300, 300, N).astype(np.int32)
    out = np.zeros(6 * N, np.float32)
    KS.get(device, "mixed_conditionals")(N, bits.view(np.uint8), h, f, n, out)
    i = np.arange(N)
    c = i % 3 != 0
    n_bf = (n.astype(np.float32).view(np.uint32) + 0x7FFF + ((n.astype(np.float32).view(np.uint32) >> 16) & 1))
    n_bf = ((n_bf >> 16) << 16).astype(np.uint32).view(np.float32)  # the integer rounded to bfloat (even ties)
    exp = np.stack([np.where(c, b, f), np.where(c, f, b), np.where(c, b, n_bf),
                    np.where(c, h.astype(np.float32), b), np.where(i % 2 == 0, b * 2, 0.5), f + b], axis=1).ravel()
    np.testing.assert_array_equal(out, exp.astype(np.float32))
