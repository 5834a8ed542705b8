"""SIMD-group matrix products into float accumulators, the cases that the pending products
of CUDA's prelude must get right (pairs by default, quads with METALCALL_SGM_QUAD_PRODUCTS:
four half or bfloat products in one sparse mma, two partial sums an accumulator): chains of
1 to 9 products (a quad issued, flushed with 1-3 pending), products of both 16-bit types
mixed within a quad, infinite factors (nothing of one partial sum leaks into the other),
-0.0 kept by a float matrix loaded and stored, and K loops that give an accumulator 1, 2 or
3 products an iteration (the pending count known only at run time). Every device runs them
in both modes against NumPy models; the define changes only CUDA's code."""

from __future__ import annotations

import numpy as np
import pytest

from mcconf import KernelSet, assert_close, assert_equal, bfloat_rounded, half_matrices

QUADS = {"METALCALL_SGM_QUAD_PRODUCTS": "1"}
CHAIN_LENGTHS = range(1, 10)
PER_ITERATION = [1, 2, 3, 4]

SNIPPETS = [
    # N products a[k] * b[k] into one accumulator (unrolled), from an accumulator of 0.25;
    # a second destination takes acc + a[0] * b[1] after the first N - 1 (pending ones in
    # another matrix's product).
    ([f"quad_chain_{n}" for n in CHAIN_LENGTHS], """
template <uint N>
kernel void quad_chain(device const half* in [[buffer(0)]], device float* out [[buffer(1)]],
                       uint lane [[thread_index_in_simdgroup]]) {
    threadgroup half s[18 * 64];
    for (uint i = lane; i < 18 * 64; i += 32) s[i] = in[i];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    simdgroup_float8x8 acc = make_filled_simdgroup_matrix<float, 8, 8>(0.25f), other;
    #pragma unroll
    for (uint k = 0; k < N; ++k) {
        simdgroup_half8x8 a, b;
        simdgroup_load(a, s + 64 * k);
        simdgroup_load(b, s + 64 * (9 + k));
        if (k + 1 == N) {
            simdgroup_half8x8 b1;
            simdgroup_load(b1, s + 64 * 10);
            simdgroup_multiply_accumulate(other, a, b1, acc);
        }
        simdgroup_multiply_accumulate(acc, a, b, acc);
    }
    simdgroup_store(acc, out);
    simdgroup_store(other, out + 64);
}
""" + "\n".join(f'template [[host_name("quad_chain_{n}")]] kernel void quad_chain<{n}>('
                "device const half*, device float*, uint);" for n in CHAIN_LENGTHS)),
    # half, half, bfloat, half, bfloat, bfloat products into one accumulator
    """
kernel void quad_mixed(device const float* in [[buffer(0)]], device float* out [[buffer(1)]],
                       uint lane [[thread_index_in_simdgroup]]) {
    threadgroup half h[4 * 64];
    threadgroup bfloat bf[4 * 64];
    for (uint i = lane; i < 4 * 64; i += 32) h[i] = half(in[i]), bf[i] = bfloat(in[i]);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    simdgroup_half8x8 ha, hb, hc, hd;
    simdgroup_bfloat8x8 ba, bb, bc, bd;
    simdgroup_load(ha, h); simdgroup_load(hb, h + 64); simdgroup_load(hc, h + 128); simdgroup_load(hd, h + 192);
    simdgroup_load(ba, bf); simdgroup_load(bb, bf + 64); simdgroup_load(bc, bf + 128); simdgroup_load(bd, bf + 192);
    simdgroup_float8x8 acc = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
    simdgroup_multiply_accumulate(acc, ha, hb, acc);
    simdgroup_multiply_accumulate(acc, hc, hd, acc);
    simdgroup_multiply_accumulate(acc, ba, bb, acc);
    simdgroup_multiply_accumulate(acc, hb, ha, acc);
    simdgroup_multiply_accumulate(acc, bc, bd, acc);
    simdgroup_multiply_accumulate(acc, bd, bc, acc);
    simdgroup_store(acc, out);
}
""",
    # four products with infinities in the factors
    """
kernel void quad_infinite(device const half* in [[buffer(0)]], device float* out [[buffer(1)]]) {
    simdgroup_half8x8 a[4], b[4];
    for (uint k = 0; k < 4; ++k) {
        simdgroup_load(a[k], in + 64 * k);
        simdgroup_load(b[k], in + 64 * (4 + k));
    }
    simdgroup_float8x8 acc = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
    for (uint k = 0; k < 4; ++k) simdgroup_multiply_accumulate(acc, a[k], b[k], acc);
    simdgroup_store(acc, out);
}
""",
    # a float matrix loaded and stored as it is, and after a product added to it
    """
kernel void quad_float_copy(device const float* in [[buffer(0)]], device const half* f [[buffer(1)]],
                            device float* out [[buffer(2)]]) {
    simdgroup_float8x8 m, n;
    simdgroup_load(m, in);
    simdgroup_load(n, in);
    simdgroup_store(m, out);
    simdgroup_half8x8 a, b;
    simdgroup_load(a, f);
    simdgroup_load(b, f + 64);
    simdgroup_multiply_accumulate(n, a, b, n);
    simdgroup_store(n, out + 64);
}
""",
    # a K loop of `iters` iterations with P products each into each of two accumulators,
    # the factors read from threadgroup memory at every step
    ([f"quad_loop_{p}" for p in PER_ITERATION], """
template <uint P>
kernel void quad_loop(device const half* in [[buffer(0)]], device float* out [[buffer(1)]],
                      constant uint& iters [[buffer(2)]], uint lane [[thread_index_in_simdgroup]]) {
    threadgroup half s[8 * 64];
    for (uint i = lane; i < 8 * 64; i += 32) s[i] = in[i];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    simdgroup_float8x8 acc[2] = {make_filled_simdgroup_matrix<float, 8, 8>(0.0f),
                                 make_filled_simdgroup_matrix<float, 8, 8>(1.0f)};
    for (uint it = 0; it < iters; ++it) {
        #pragma unroll
        for (uint p = 0; p < P; ++p) {
            const uint k = (it * P + p) % 4;
            simdgroup_half8x8 a, b;
            simdgroup_load(a, s + 64 * k);
            simdgroup_load(b, s + 64 * (4 + k));
            simdgroup_multiply_accumulate(acc[0], a, b, acc[0]);
            simdgroup_multiply_accumulate(acc[1], b, a, acc[1]);
        }
    }
    simdgroup_store(acc[0], out);
    simdgroup_store(acc[1], out + 64);
}
""" + "\n".join(f'template [[host_name("quad_loop_{p}")]] kernel void quad_loop<{p}>('
                "device const half*, device float*, constant uint&, uint);" for p in PER_ITERATION)),
]
PAIRS = KernelSet(SNIPPETS)
SETS = {"pairs": PAIRS, "quads": PAIRS.with_defines(QUADS)}


@pytest.fixture(params=list(SETS))
def products(request):
    return SETS[request.param]



@pytest.mark.parametrize("n", CHAIN_LENGTHS)
def test_chain_of_products(device, products, rng, n):
    h, m = half_matrices(rng, 18, 0.5)
    out = np.zeros(128, np.float32)
    products.get(device, f"quad_chain_{n}")(32, h, out, threadgroup=32)
    a, b = m[:9], m[9:]
    before_last = 0.25 + sum(a[k] @ b[k] for k in range(n - 1))
    assert_close(out[:64].reshape(8, 8), before_last + a[n - 1] @ b[n - 1], rtol=1e-5, atol=1e-5)
    assert_close(out[64:].reshape(8, 8), before_last + a[n - 1] @ b[1], rtol=1e-5, atol=1e-5)


def test_mixed_types_within_a_quad(device, products, rng):
    x = rng.standard_normal(4 * 64).astype(np.float32)
    out = np.zeros(64, np.float32)
    products.get(device, "quad_mixed")(32, x, out, threadgroup=32)
    h = x.astype(np.float16).astype(np.float64).reshape(4, 8, 8)
    bf = bfloat_rounded(x).astype(np.float64).reshape(4, 8, 8)
    expect = h[0] @ h[1] + h[2] @ h[3] + bf[0] @ bf[1] + h[1] @ h[0] + bf[2] @ bf[3] + bf[3] @ bf[2]
    assert_close(out.reshape(8, 8), expect, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("where", [0, 1, 2, 3])
def test_infinite_factor(device, products, rng, where):
    """An infinity in the B of product `where` makes its column infinite (or NaN where
    signs meet), as NumPy says, and leaves every other column finite and right."""
    h, m = half_matrices(rng, 8, 1.0)
    h = h.reshape(8, 64)
    h[:4] = np.where(h[:4] == 0, np.float16(0.5), h[:4])  # A has no zeros: inf * a is never NaN alone
    h[4 + where, 3 * 8 + 5] = np.inf  # B[where][3][5]
    m = h.astype(np.float64).reshape(8, 8, 8)
    out = np.zeros(64, np.float32)
    with np.errstate(invalid="ignore"):
        expect = sum(m[k] @ m[4 + k] for k in range(4))
    products.get(device, "quad_infinite")(32, h.reshape(-1), out, threadgroup=32)
    got = out.reshape(8, 8)
    assert np.isinf(expect[:, 5]).all()
    assert_equal(np.isinf(got[:, 5]), np.isinf(expect[:, 5]))
    assert_equal(np.sign(got[:, 5]), np.sign(expect[:, 5]))
    others = [c for c in range(8) if c != 5]
    assert np.isfinite(got[:, others]).all()
    assert_close(got[:, others], expect[:, others], rtol=1e-5, atol=1e-5)


def test_float_matrix_keeps_negative_zero(device, products, rng):
    x = rng.standard_normal(64).astype(np.float32)
    x[::3] = -0.0
    h, m = half_matrices(rng, 2, 1.0)
    out = np.zeros(128, np.float32)
    products.get(device, "quad_float_copy")(32, x, h, out, threadgroup=32)
    assert_equal(out[:64].view(np.uint32), x.view(np.uint32))  # bit for bit: -0.0 stays
    assert_close(out[64:].reshape(8, 8), x.reshape(8, 8) + m[0] @ m[1], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("per_iteration", PER_ITERATION)
@pytest.mark.parametrize("iters", [1, 3, 6])
def test_products_across_loop_iterations(device, products, rng, per_iteration, iters):
    h, m = half_matrices(rng, 8, 0.5)
    out = np.zeros(128, np.float32)
    products.get(device, f"quad_loop_{per_iteration}")(32, h, out, np.uint32(iters), threadgroup=32)
    ks = [(i * per_iteration + p) % 4 for i in range(iters) for p in range(per_iteration)]
    a, b = m[:4], m[4:]
    assert_close(out[:64].reshape(8, 8), sum(a[k] @ b[k] for k in ks), rtol=1e-5, atol=1e-4)
    assert_close(out[64:].reshape(8, 8), 1.0 + sum(b[k] @ a[k] for k in ks), rtol=1e-5, atol=1e-4)
