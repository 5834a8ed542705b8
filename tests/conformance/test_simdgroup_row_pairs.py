"""Products into the float accumulators of an array, the cases CUDA's row pairs must get
right (metal_simdgroup_matrix_cuda.h, METALCALL_SGM_ROW_PAIRS=1:
`simdgroup_multiply_accumulate(X[i], a, b, X[i])` lets accumulators 2m and 2m + 1 of X share
one sparse mma, two products each): arrays of odd and even length, 1 to 5 products an
element in element or round-robin order, 2-D tiles whose neighbours share A or share B, 3-D
arrays, an element read, copied or used as another product's C while products wait, both
16-bit types, infinite factors in one half (nothing leaks into the other), -0.0 in a
neighbour that takes no product; the same with row pairs off (the default), and with quads
on too (the last element of an odd count then takes quads).
Every device runs them against NumPy models; the defines change only CUDA's code."""

from __future__ import annotations

import numpy as np
import pytest

from mcconf import KernelSet, assert_close, assert_equal, bfloat_rounded, half_matrices

COUNTS = [2, 3, 5]
PRODUCTS = [1, 2, 3, 5]
ORDERS = {0: "element by element", 1: "round-robin"}

ORDER_KERNELS = [f"row_pairs_order_{n}_{p}_{o}" for n in COUNTS for p in PRODUCTS for o in ORDERS]

SNIPPETS = [
    # acc[e] (from 0.25 (e + 1)) takes P products a[(e + p) % 4] * b[(3e + p) % 4]: all of an
    # element's in a row (ORDER 0) or one per element in turn (ORDER 1)
    (ORDER_KERNELS, """
template <uint N, uint P, uint ORDER>
kernel void row_pairs_order(device const half* in [[buffer(0)]], device float* out [[buffer(1)]]) {
    simdgroup_half8x8 a[4], b[4];
    #pragma unroll
    for (uint k = 0; k < 4; ++k) {
        simdgroup_load(a[k], in + 64 * k);
        simdgroup_load(b[k], in + 64 * (4 + k));
    }
    simdgroup_float8x8 acc[N];
    #pragma unroll
    for (uint e = 0; e < N; ++e) acc[e] = make_filled_simdgroup_matrix<float, 8, 8>(0.25f * float(e + 1));
    if (ORDER == 0) {
        #pragma unroll
        for (uint e = 0; e < N; ++e)
            #pragma unroll
            for (uint p = 0; p < P; ++p) simdgroup_multiply_accumulate(acc[e], a[(e + p) % 4], b[(3 * e + p) % 4], acc[e]);
    } else {
        #pragma unroll
        for (uint p = 0; p < P; ++p)
            #pragma unroll
            for (uint e = 0; e < N; ++e) simdgroup_multiply_accumulate(acc[e], a[(e + p) % 4], b[(3 * e + p) % 4], acc[e]);
    }
    #pragma unroll
    for (uint e = 0; e < N; ++e) simdgroup_store(acc[e], out + 64 * e);
}
""" + "\n".join(f'template [[host_name("row_pairs_order_{n}_{p}_{o}")]] kernel void row_pairs_order<{n}, {p}, {o}>('
                "device const half*, device float*);" for n in COUNTS for p in PRODUCTS for o in ORDERS)),
    # a 16x32 block of C = A (16x32) B (32x32) as 2x4 accumulators acc[i][j]: neighbours
    # share A (a GEMM's usual layout)
    """
kernel void row_pairs_shared_a(device const half* a_in [[buffer(0)]], device const half* b_in [[buffer(1)]],
                               device float* out [[buffer(2)]]) {
    simdgroup_float8x8 acc[2][4];
    #pragma unroll
    for (uint i = 0; i < 2; ++i)
        #pragma unroll
        for (uint j = 0; j < 4; ++j) acc[i][j] = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
    #pragma unroll
    for (uint kk = 0; kk < 4; ++kk) {
        simdgroup_half8x8 a[2], b[4];
        #pragma unroll
        for (uint i = 0; i < 2; ++i) simdgroup_load(a[i], a_in, 32, ulong2(8 * kk, 8 * i));
        #pragma unroll
        for (uint j = 0; j < 4; ++j) simdgroup_load(b[j], b_in, 32, ulong2(8 * j, 8 * kk));
        #pragma unroll
        for (uint i = 0; i < 2; ++i)
            #pragma unroll
            for (uint j = 0; j < 4; ++j) simdgroup_multiply_accumulate(acc[i][j], a[i], b[j], acc[i][j]);
    }
    #pragma unroll
    for (uint i = 0; i < 2; ++i)
        #pragma unroll
        for (uint j = 0; j < 4; ++j) simdgroup_store(acc[i][j], out, 32, ulong2(8 * j, 8 * i));
}
""",
    # the same block as acc[j][i]: neighbours share B
    """
kernel void row_pairs_shared_b(device const half* a_in [[buffer(0)]], device const half* b_in [[buffer(1)]],
                               device float* out [[buffer(2)]]) {
    simdgroup_float8x8 acc[4][2];
    #pragma unroll
    for (uint j = 0; j < 4; ++j)
        #pragma unroll
        for (uint i = 0; i < 2; ++i) acc[j][i] = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
    #pragma unroll
    for (uint kk = 0; kk < 4; ++kk) {
        simdgroup_half8x8 a[2], b[4];
        #pragma unroll
        for (uint i = 0; i < 2; ++i) simdgroup_load(a[i], a_in, 32, ulong2(8 * kk, 8 * i));
        #pragma unroll
        for (uint j = 0; j < 4; ++j) simdgroup_load(b[j], b_in, 32, ulong2(8 * j, 8 * kk));
        #pragma unroll
        for (uint j = 0; j < 4; ++j)
            #pragma unroll
            for (uint i = 0; i < 2; ++i) simdgroup_multiply_accumulate(acc[j][i], a[i], b[j], acc[j][i]);
    }
    #pragma unroll
    for (uint j = 0; j < 4; ++j)
        #pragma unroll
        for (uint i = 0; i < 2; ++i) simdgroup_store(acc[j][i], out, 32, ulong2(8 * j, 8 * i));
}
""",
    # elements read, copied and used as another product's C while products wait
    """
kernel void row_pairs_read_between(device const half* in [[buffer(0)]], device float* out [[buffer(1)]]) {
    simdgroup_half8x8 a[4], b[4];
    for (uint k = 0; k < 4; ++k) {
        simdgroup_load(a[k], in + 64 * k);
        simdgroup_load(b[k], in + 64 * (4 + k));
    }
    simdgroup_float8x8 acc[2] = {make_filled_simdgroup_matrix<float, 8, 8>(1.0f),
                                 make_filled_simdgroup_matrix<float, 8, 8>(2.0f)};
    simdgroup_float8x8 other;
    simdgroup_multiply_accumulate(acc[0], a[0], b[0], acc[0]);
    simdgroup_store(acc[0], out);
    simdgroup_multiply_accumulate(acc[1], a[1], b[1], acc[1]);
    simdgroup_multiply_accumulate(acc[0], a[2], b[2], acc[0]);
    simdgroup_multiply_accumulate(other, a[3], b[3], acc[1]);
    simdgroup_multiply_accumulate(acc[1], a[0], b[3], acc[1]);
    simdgroup_multiply_accumulate(acc[0], a[3], b[0], acc[0]);
    simdgroup_multiply_accumulate(acc[1], a[2], b[1], acc[1]);
    acc[0] = acc[1];
    simdgroup_multiply_accumulate(acc[0], a[1], b[2], acc[0]);
    simdgroup_store(acc[0], out + 64);
    simdgroup_store(acc[1], out + 128);
    simdgroup_store(other, out + 192);
}
""",
    # accumulators loaded from memory: 0 and 1 take two products each (an infinity in B
    # of 0's second), 2 and 3 none
    """
kernel void row_pairs_loaded(device const float* c [[buffer(0)]], device const half* in [[buffer(1)]],
                             device float* out [[buffer(2)]]) {
    simdgroup_float8x8 acc[4];
    for (uint e = 0; e < 4; ++e) simdgroup_load(acc[e], c + 64 * e);
    simdgroup_half8x8 a[2], b[4];
    for (uint k = 0; k < 2; ++k) simdgroup_load(a[k], in + 64 * k);
    for (uint k = 0; k < 4; ++k) simdgroup_load(b[k], in + 64 * (2 + k));
    simdgroup_multiply_accumulate(acc[0], a[0], b[0], acc[0]);
    simdgroup_multiply_accumulate(acc[1], a[0], b[2], acc[1]);
    simdgroup_multiply_accumulate(acc[0], a[1], b[1], acc[0]);
    simdgroup_multiply_accumulate(acc[1], a[1], b[3], acc[1]);
    for (uint e = 0; e < 4; ++e) simdgroup_store(acc[e], out + 64 * e);
}
""",
    # half and bfloat products into neighbours and into one element
    """
kernel void row_pairs_mixed(device const float* in [[buffer(0)]], device float* out [[buffer(1)]],
                            uint lane [[thread_index_in_simdgroup]]) {
    threadgroup half h[2 * 64];
    threadgroup bfloat bf[2 * 64];
    for (uint i = lane; i < 2 * 64; i += 32) h[i] = half(in[i]), bf[i] = bfloat(in[i]);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    simdgroup_half8x8 ha, hb;
    simdgroup_bfloat8x8 ba, bb;
    simdgroup_load(ha, h); simdgroup_load(hb, h + 64);
    simdgroup_load(ba, bf); simdgroup_load(bb, bf + 64);
    simdgroup_float8x8 acc[2] = {make_filled_simdgroup_matrix<float, 8, 8>(0.0f),
                                 make_filled_simdgroup_matrix<float, 8, 8>(0.0f)};
    simdgroup_multiply_accumulate(acc[0], ha, hb, acc[0]);
    simdgroup_multiply_accumulate(acc[1], ba, bb, acc[1]);
    simdgroup_multiply_accumulate(acc[0], hb, ha, acc[0]);
    simdgroup_multiply_accumulate(acc[1], bb, ba, acc[1]);
    simdgroup_multiply_accumulate(acc[0], ba, ba, acc[0]);
    simdgroup_multiply_accumulate(acc[1], ha, ha, acc[1]);
    simdgroup_store(acc[0], out);
    simdgroup_store(acc[1], out + 64);
}
""",
    # a 2x2x2 array, two products an element, then one element as another's C
    """
kernel void row_pairs_3d(device const half* in [[buffer(0)]], device float* out [[buffer(1)]]) {
    simdgroup_half8x8 a[2], b[2];
    for (uint k = 0; k < 2; ++k) {
        simdgroup_load(a[k], in + 64 * k);
        simdgroup_load(b[k], in + 64 * (2 + k));
    }
    simdgroup_float8x8 acc[2][2][2];
    #pragma unroll
    for (uint x = 0; x < 2; ++x)
        #pragma unroll
        for (uint y = 0; y < 2; ++y)
            #pragma unroll
            for (uint z = 0; z < 2; ++z) acc[x][y][z] = make_filled_simdgroup_matrix<float, 8, 8>(float(4 * x + 2 * y + z));
    #pragma unroll
    for (uint p = 0; p < 2; ++p)
        #pragma unroll
        for (uint x = 0; x < 2; ++x)
            #pragma unroll
            for (uint y = 0; y < 2; ++y)
                #pragma unroll
                for (uint z = 0; z < 2; ++z)
                    simdgroup_multiply_accumulate(acc[x][y][z], a[(x + p) % 2], b[(y + z + p) % 2], acc[x][y][z]);
    simdgroup_multiply_accumulate(acc[1][1][0], a[0], b[0], acc[0][0][1]);
    #pragma unroll
    for (uint x = 0; x < 2; ++x)
        #pragma unroll
        for (uint y = 0; y < 2; ++y)
            #pragma unroll
            for (uint z = 0; z < 2; ++z) simdgroup_store(acc[x][y][z], out + 64 * (4 * x + 2 * y + z));
}
""",
]
ROW_PAIRS = KernelSet(SNIPPETS)
# Product nests off where row pairs are on: the tile kernels' loops are nests, which CUDA
# would otherwise hand to product_nest (test_simdgroup_nests.py) instead of row pairs.
NESTS_OFF = {"METALCALL_SGM_PRODUCT_NESTS": "0"}
SETS = {"row pairs": ROW_PAIRS.with_defines({"METALCALL_SGM_ROW_PAIRS": "1", **NESTS_OFF}), "off": ROW_PAIRS,
        "with quads": ROW_PAIRS.with_defines({"METALCALL_SGM_ROW_PAIRS": "1", "METALCALL_SGM_QUAD_PRODUCTS": "1",
                                              **NESTS_OFF})}


@pytest.fixture(params=list(SETS))
def products(request):
    return SETS[request.param]



@pytest.mark.parametrize("order", list(ORDERS))
@pytest.mark.parametrize("count", PRODUCTS)
@pytest.mark.parametrize("n", COUNTS)
def test_products_per_element(device, products, rng, n, count, order):
    h, m = half_matrices(rng, 8, 0.5)
    out = np.zeros(64 * n, np.float32)
    products.get(device, f"row_pairs_order_{n}_{count}_{order}")(32, h, out, threadgroup=32)
    a, b = m[:4], m[4:]
    for e in range(n):
        expect = 0.25 * (e + 1) + sum(a[(e + p) % 4] @ b[(3 * e + p) % 4] for p in range(count))
        assert_close(out[64 * e:64 * (e + 1)].reshape(8, 8), expect, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("kernel", ["row_pairs_shared_a", "row_pairs_shared_b"])
def test_tile_of_accumulators(device, products, rng, kernel):
    a = (rng.standard_normal((16, 32)) * 0.5).astype(np.float16)
    b = (rng.standard_normal((32, 32)) * 0.5).astype(np.float16)
    out = np.zeros((16, 32), np.float32)
    products.get(device, kernel)(32, a, b, out, threadgroup=32)
    assert_close(out, a.astype(np.float64) @ b.astype(np.float64), rtol=1e-5, atol=1e-4)


def test_elements_read_while_products_wait(device, products, rng):
    h, m = half_matrices(rng, 8, 0.5)
    out = np.zeros(4 * 64, np.float32)
    products.get(device, "row_pairs_read_between")(32, h, out, threadgroup=32)
    a, b = m[:4], m[4:]
    first = 1.0 + a[0] @ b[0]
    acc1 = 2.0 + a[1] @ b[1]
    other = acc1 + a[3] @ b[3]
    acc1 = acc1 + a[0] @ b[3] + a[2] @ b[1]
    acc0 = acc1 + a[1] @ b[2]
    for k, expect in enumerate([first, acc0, acc1, other]):
        assert_close(out[64 * k:64 * (k + 1)].reshape(8, 8), expect, rtol=1e-5, atol=1e-5)


def test_loaded_accumulators_infinity_and_negative_zero(device, products, rng):
    """An infinity in B of element 0's second product makes its column 5 infinite and
    leaves element 1 (the other half of the operation) finite and right; elements 2 and
    3, which take no product, come back bit for bit, -0.0 included."""
    c = rng.standard_normal(4 * 64).astype(np.float32)
    c[::3] = -0.0
    h, _ = half_matrices(rng, 6, 0.5)
    h = h.reshape(6, 64)
    h[:2] = np.where(h[:2] == 0, np.float16(0.5), h[:2])  # no zero in A: inf * a is never NaN alone
    h[3, 2 * 8 + 5] = np.inf  # b[1][2][5]
    m = h.astype(np.float64).reshape(6, 8, 8)
    out = np.zeros(4 * 64, np.float32)
    products.get(device, "row_pairs_loaded")(32, c, h.reshape(-1), out, threadgroup=32)
    cm = c.astype(np.float64).reshape(4, 8, 8)
    a, b = m[:2], m[2:]
    with np.errstate(invalid="ignore"):
        e0 = cm[0] + a[0] @ b[0] + a[1] @ b[1]
    e1 = cm[1] + a[0] @ b[2] + a[1] @ b[3]
    got0 = out[:64].reshape(8, 8)
    assert np.isinf(e0[:, 5]).all()
    assert_equal(np.isinf(got0[:, 5]), np.isinf(e0[:, 5]))
    assert_equal(np.sign(got0[:, 5]), np.sign(e0[:, 5]))
    others = [k for k in range(8) if k != 5]
    assert_close(got0[:, others], e0[:, others], rtol=1e-5, atol=1e-5)
    got1 = out[64:128].reshape(8, 8)
    assert np.isfinite(got1).all()
    assert_close(got1, e1, rtol=1e-5, atol=1e-5)
    assert_equal(out[128:].view(np.uint32), c[128:].view(np.uint32))


def test_both_16_bit_types(device, products, rng):
    x = rng.standard_normal(2 * 64).astype(np.float32)
    out = np.zeros(128, np.float32)
    products.get(device, "row_pairs_mixed")(32, x, out, threadgroup=32)
    h = x.astype(np.float16).astype(np.float64).reshape(2, 8, 8)
    bf = bfloat_rounded(x).astype(np.float64).reshape(2, 8, 8)
    assert_close(out[:64].reshape(8, 8), h[0] @ h[1] + h[1] @ h[0] + bf[0] @ bf[0], rtol=1e-5, atol=1e-4)
    assert_close(out[64:].reshape(8, 8), bf[0] @ bf[1] + bf[1] @ bf[0] + h[0] @ h[0], rtol=1e-5, atol=1e-4)


def test_three_dimensional_array(device, products, rng):
    h, m = half_matrices(rng, 4, 0.5)
    out = np.zeros(8 * 64, np.float32)
    products.get(device, "row_pairs_3d")(32, h, out, threadgroup=32)
    a, b = m[:2], m[2:]
    acc = {}
    for x in range(2):
        for y in range(2):
            for z in range(2):
                acc[x, y, z] = 4 * x + 2 * y + z + sum(a[(x + p) % 2] @ b[(y + z + p) % 2] for p in range(2))
    acc[1, 1, 0] = acc[0, 0, 1] + a[0] @ b[0]
    for x in range(2):
        for y in range(2):
            for z in range(2):
                k = 4 * x + 2 * y + z
                assert_close(out[64 * k:64 * (k + 1)].reshape(8, 8), acc[x, y, z], rtol=1e-5, atol=1e-5)
