"""SIMD-group matrices (MSL spec 6.7) against NumPy models: simdgroup_load/store with
elements_per_row, matrix_origin and transpose (threadgroup and device memory),
simdgroup_multiply, simdgroup_multiply_accumulate (also in chains into float accumulators),
make_filled_simdgroup_matrix, the diagonal constructor, thread_elements() in Apple's lane
layout, in float, half and bfloat; and a GEMM written with them
(benchmarks/bench_simdgroup_gemm.py's kernel). The products run in CUDA's modes (pairs, the
default; quads: METALCALL_SGM_QUAD_PRODUCTS; for the GEMM also row pairs: METALCALL_SGM_ROW_PAIRS)."""

from __future__ import annotations

import numpy as np
import pytest

from mcconf import KernelSet, assert_close, assert_equal, bfloat_rounded, check_gemm_kernel

TYPES = ["float", "half", "bfloat"]


def instantiate(name, params):
    return "\n".join(f'template [[host_name("{name}_{t}")]] kernel void {name}<{t}>({params});' for t in TYPES)


KS = KernelSet([
    # load from a 16x24 threadgroup array, store into a 16x16 one; p = load epr, origin x, y,
    # transpose, then the same for the store
    ([f"sgm_copy_{t}" for t in TYPES], """
template <typename T>
kernel void sgm_copy(device const float* in [[buffer(0)]], device float* out [[buffer(1)]],
                     device const uint* p [[buffer(2)]], uint lane [[thread_index_in_simdgroup]]) {
    threadgroup T src[16 * 24];
    threadgroup T dst[16 * 16];
    for (uint i = lane; i < 16 * 24; i += 32) src[i] = T(in[i]);
    for (uint i = lane; i < 16 * 16; i += 32) dst[i] = T(0.0f);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    simdgroup_matrix<T, 8, 8> m;
    simdgroup_load(m, src, p[0], ulong2(p[1], p[2]), p[3] != 0);
    simdgroup_store(m, dst, p[4], ulong2(p[5], p[6]), p[7] != 0);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    for (uint i = lane; i < 16 * 16; i += 32) out[i] = float(dst[i]);
}
""" + instantiate("sgm_copy", "device const float*, device float*, device const uint*, uint")),
    # A and B (two of each) from a 24x40 threadgroup array at run-time row lengths, origins
    # and transposes (p: epr, then x, y, transpose of a[0], a[1], b[0], b[1]), into two
    # accumulators of one array, acc[e] = sum_k a[k] * b[(k + e) % 2]: on CUDA, 16-bit B
    # layouts from aligned rows of threadgroup memory come from ldmatrix (row pairs: the
    # second accumulator's B pair of lane ^ 1 too), the others from element loads
    ([f"sgm_tg_product_{t}" for t in TYPES], """
template <typename T>
kernel void sgm_tg_product(device const float* in [[buffer(0)]], device float* out [[buffer(1)]],
                           device const uint* p [[buffer(2)]], uint lane [[thread_index_in_simdgroup]]) {
    threadgroup T s[24 * 40];
    for (uint i = lane; i < 24 * 40; i += 32) s[i] = T(in[i]);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    simdgroup_matrix<T, 8, 8> a[2], b[2];
    for (uint k = 0; k < 2; ++k) {
        simdgroup_load(a[k], s, p[0], ulong2(p[1 + 3 * k], p[2 + 3 * k]), p[3 + 3 * k] != 0);
        simdgroup_load(b[k], s, p[0], ulong2(p[7 + 3 * k], p[8 + 3 * k]), p[9 + 3 * k] != 0);
    }
    simdgroup_float8x8 acc[2];
    acc[0] = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
    acc[1] = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
    for (uint k = 0; k < 2; ++k)
        for (uint e = 0; e < 2; ++e) simdgroup_multiply_accumulate(acc[e], a[k], b[(k + e) % 2], acc[e]);
    simdgroup_store(acc[0], out);
    simdgroup_store(acc[1], out + 64);
}
""" + instantiate("sgm_tg_product", "device const float*, device float*, device const uint*, uint")),
    # straight from device memory to device memory, default arguments and explicit ones
    """
kernel void sgm_copy_device(device const float* in [[buffer(0)]], device float* out [[buffer(1)]],
                            device half* hout [[buffer(2)]]) {
    simdgroup_float8x8 m, t;
    simdgroup_load(m, in);
    simdgroup_load(t, in, 24, ulong2(5, 3), true);
    simdgroup_store(m, out);
    simdgroup_store(t, out, 16, ulong2(8, 8));
    simdgroup_half8x8 h;
    simdgroup_load(h, hout, 8);
    simdgroup_store(h, hout + 64, 8, 0, true);
}
""",
    # per SIMD-group of each threadgroup: D = A * B and C <- A * B + C (in place)
    ([f"sgm_mul_{t}" for t in TYPES], """
template <typename T>
kernel void sgm_mul(device const float* in [[buffer(0)]], device float* out [[buffer(1)]],
                    uint lane [[thread_index_in_simdgroup]], uint sg [[simdgroup_index_in_threadgroup]],
                    uint tg [[threadgroup_position_in_grid]]) {
    threadgroup T s[2][3 * 64];
    threadgroup T o[2][2 * 64];
    const uint base = (tg * 2 + sg) * 3 * 64;
    for (uint i = lane; i < 3 * 64; i += 32) s[sg][i] = T(in[base + i]);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    simdgroup_matrix<T, 8, 8> a, b, c, d;
    simdgroup_load(a, s[sg]);
    simdgroup_load(b, &s[sg][64]);
    simdgroup_load(c, s[sg] + 128);
    simdgroup_multiply(d, a, b);
    simdgroup_multiply_accumulate(c, a, b, c);
    simdgroup_store(d, o[sg]);
    simdgroup_store(c, o[sg] + 64);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    for (uint i = lane; i < 2 * 64; i += 32) out[(tg * 2 + sg) * 2 * 64 + i] = float(o[sg][i]);
}
""" + instantiate("sgm_mul", "device const float*, device float*, uint, uint, uint")),
    # float accumulators from half and bfloat factors (as llama.cpp's kernels mix them)
    """
kernel void sgm_mixed(device const float* in [[buffer(0)]], device float* out [[buffer(1)]],
                      uint lane [[thread_index_in_simdgroup]]) {
    threadgroup half h[128];
    threadgroup bfloat bf[128];
    for (uint i = lane; i < 128; i += 32) h[i] = half(in[i]), bf[i] = bfloat(in[i]);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    simdgroup_half8x8 ha, hb;
    simdgroup_bfloat8x8 ba, bb;
    simdgroup_float8x8 acc = make_filled_simdgroup_matrix<float, 8, 8>(0.5f), fb, r;
    simdgroup_load(ha, h); simdgroup_load(hb, h + 64);
    simdgroup_load(ba, bf); simdgroup_load(bb, bf + 64);
    simdgroup_load(fb, in + 64);
    simdgroup_multiply_accumulate(acc, ha, hb, acc);
    simdgroup_multiply_accumulate(acc, ba, bb, acc);
    simdgroup_multiply(r, ha, fb);
    simdgroup_store(acc, out);
    simdgroup_store(r, out + 64);
}
""",
    # a chain of products into float accumulators (on CUDA, successive half or bfloat ones
    # share one mma, so this covers pending products meeting thread_elements(), another
    # destination and stores)
    ([f"sgm_chain_{t}" for t in TYPES], """
template <typename T>
kernel void sgm_chain(device const float* in [[buffer(0)]], device float* out [[buffer(1)]],
                      uint lane [[thread_index_in_simdgroup]]) {
    threadgroup T s[6 * 64];
    for (uint i = lane; i < 6 * 64; i += 32) s[i] = T(in[i]);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    simdgroup_matrix<T, 8, 8> a[3], b[3];
    for (uint k = 0; k < 3; ++k) {
        simdgroup_load(a[k], s + 64 * k);
        simdgroup_load(b[k], s + 192 + 64 * k);
    }
    simdgroup_float8x8 acc, acc2;
    simdgroup_multiply(acc, a[0], b[0]);
    simdgroup_multiply_accumulate(acc, a[1], b[1], acc);
    simdgroup_multiply_accumulate(acc, a[2], b[2], acc);
    acc.thread_elements()[0] += 1.0f;
    simdgroup_multiply_accumulate(acc2, a[0], b[1], acc);
    simdgroup_multiply_accumulate(acc, a[1], b[0], acc);
    simdgroup_store(acc, out);
    simdgroup_store(acc2, out + 64);
}
""" + instantiate("sgm_chain", "device const float*, device float*, uint")),
    # the destination is one of the factors: a <- a * b, then b <- a * b + b (copies of
    # both taken first)
    ([f"sgm_alias_{t}" for t in TYPES], """
template <typename T>
kernel void sgm_alias(device const float* in [[buffer(0)]], device float* out [[buffer(1)]],
                      uint lane [[thread_index_in_simdgroup]]) {
    threadgroup T s[2 * 64];
    for (uint i = lane; i < 2 * 64; i += 32) s[i] = T(in[i]);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    simdgroup_matrix<T, 8, 8> a, b;
    simdgroup_load(a, s);
    simdgroup_load(b, s + 64);
    simdgroup_matrix<T, 8, 8> a0 = a, b0;  // copies, constructed and assigned
    b0 = b;
    simdgroup_multiply(a, a, b);
    simdgroup_multiply_accumulate(b, a, b, b);
    simdgroup_store(a, out);
    simdgroup_store(b, out + 64);
    simdgroup_store(a0, out + 128);
    simdgroup_store(b0, out + 192);
}
""" + instantiate("sgm_alias", "device const float*, device float*, uint")),
    ([f"sgm_fill_{t}" for t in TYPES], """
template <typename T>
kernel void sgm_fill(device const float* v [[buffer(0)]], device float* out [[buffer(1)]],
                     uint lane [[thread_index_in_simdgroup]]) {
    threadgroup T o[3 * 64];
    simdgroup_matrix<T, 8, 8> f = make_filled_simdgroup_matrix<T, 8, 8>(T(v[0]));
    const T dv = T(v[1]);
    simdgroup_matrix<T, 8, 8> d(dv);
    simdgroup_matrix<T, 8, 8> e = simdgroup_matrix<T, 8, 8>(T(v[2]));
    simdgroup_store(f, o);
    simdgroup_store(d, o + 64);
    simdgroup_store(e, o + 128);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    for (uint i = lane; i < 3 * 64; i += 32) out[i] = float(o[i]);
}
""" + instantiate("sgm_fill", "device const float*, device float*, uint")),
    # thread_elements(): read (positions), modify, build a matrix from lane values, then
    # use both in products and stores
    ([f"sgm_elements_{t}" for t in TYPES], """
template <typename T>
kernel void sgm_elements(device float* pos [[buffer(0)]], device float* out [[buffer(1)]],
                         ushort lane [[thread_index_in_simdgroup]]) {
    threadgroup T t[64];
    threadgroup T o[2 * 64];
    for (uint i = lane; i < 64; i += 32) t[i] = T(float(i));
    threadgroup_barrier(mem_flags::mem_threadgroup);
    simdgroup_matrix<T, 8, 8> m;
    simdgroup_load(m, t);
    vec<T, 2> e = m.thread_elements();
    pos[2 * lane] = float(e[0]);
    pos[2 * lane + 1] = float(e.y);
    m.thread_elements()[0] = T(float(m.thread_elements()[0]) * 2.0f);
    m.thread_elements()[1] = T(float(m.thread_elements()[1]) + float(lane));
    // Apple's layout, as kernels compute it: row fm, columns fn and fn + 1
    const ushort q = lane / 4, fm = (q & 4) + ((lane / 2) % 4), fn = (q & 2) * 2 + (lane % 2) * 2;
    simdgroup_matrix<T, 8, 8> built;
    built.thread_elements() = vec<T, 2>(T(float(fm * 10 + fn)), T(float(fm * 10 + fn + 1)));
    simdgroup_matrix<T, 8, 8> id(T(1.0f)), r;
    simdgroup_multiply(r, id, m);
    simdgroup_store(r, o);
    simdgroup_store(built, o + 64);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    for (uint i = lane; i < 2 * 64; i += 32) out[i] = float(o[i]);
}
""" + instantiate("sgm_elements", "device float*, device float*, ushort")),
])
# The same kernels with four products a tensor-core operation on CUDA (sparse mma; the
# prelude's METALCALL_SGM_QUAD_PRODUCTS); elsewhere the define changes nothing.
QUADS = {"METALCALL_SGM_QUAD_PRODUCTS": "1"}
KS_QUADS = KS.with_defines(QUADS)


@pytest.fixture(params=["pairs", "quads"])
def products(request):
    """The kernel set for the products' mode: the default, or quads (QUADS)."""
    return KS_QUADS if request.param == "quads" else KS

# (load epr, origin x, y, transpose, store epr, origin x, y, transpose)
COPY_CASES = [
    (8, 0, 0, 0, 16, 0, 0, 0),
    (24, 3, 5, 0, 16, 4, 6, 0),
    (24, 8, 2, 1, 16, 4, 6, 0),
    (24, 3, 5, 0, 16, 6, 8, 1),
    (24, 1, 7, 1, 16, 7, 1, 1),
]


def rounded(x, t):
    """x (float32) rounded to the element type t, as float64."""
    x = np.asarray(x, np.float32)
    if t == "half":
        return x.astype(np.float16).astype(np.float64)
    if t == "bfloat":
        return bfloat_rounded(x).astype(np.float64)
    return x.astype(np.float64)


def load_model(mem, epr, ox, oy, tr):
    r, c = np.meshgrid(np.arange(8), np.arange(8), indexing="ij")
    return mem[(oy + c) * epr + ox + r] if tr else mem[(oy + r) * epr + ox + c]


def store_model(m, dst, epr, ox, oy, tr):
    r, c = np.meshgrid(np.arange(8), np.arange(8), indexing="ij")
    idx = (oy + c) * epr + ox + r if tr else (oy + r) * epr + ox + c
    dst[idx] = m


def tolerance(t):
    return {"float": 1e-5, "half": 2e-3, "bfloat": 1.6e-2}[t]


@pytest.mark.parametrize("t", TYPES)
@pytest.mark.parametrize("case", COPY_CASES)
def test_load_store(device, rng, t, case):
    src = rng.integers(-128, 128, 16 * 24).astype(np.float32) / 2  # exact in every type
    out = np.zeros(256, np.float32)
    KS.get(device, f"sgm_copy_{t}")(32, src, out, np.array(case, np.uint32), threadgroup=32)
    expect = np.zeros(256)
    store_model(load_model(src.astype(np.float64), *case[:4]), expect, *case[4:])
    assert_equal(out, expect)


def test_load_store_device_memory(device, rng):
    src = rng.standard_normal(24 * 16).astype(np.float32)
    out = np.zeros(16 * 16, np.float32)
    h = np.zeros(128, np.float16)
    h[:64] = rng.standard_normal(64).astype(np.float16)
    KS.get(device, "sgm_copy_device")(32, src, out, h, threadgroup=32)
    expect = np.zeros(256, np.float32)
    store_model(load_model(src, 8, 0, 0, False), expect, 8, 0, 0, False)
    store_model(load_model(src, 24, 5, 3, True), expect, 16, 8, 8, False)
    assert_equal(out, expect)
    assert_equal(h[64:].reshape(8, 8), h[:64].reshape(8, 8).T)


# (epr, then x, y, transpose of a[0], a[1], b[0], b[1]) within the 24x40 array. 16-byte
# aligned rows (epr 40 or 24 halves, x a multiple of 8), transposed or not; rows that are
# not (epr 20, x 4 or 3).
TG_PRODUCT_CASES = [
    (40, 0, 0, 0, 8, 8, 0, 16, 0, 0, 24, 8, 0),
    (40, 8, 3, 1, 0, 9, 0, 16, 5, 1, 32, 1, 1),
    (24, 0, 1, 0, 8, 2, 1, 8, 0, 0, 16, 9, 1),
    (20, 4, 0, 0, 0, 3, 0, 8, 1, 0, 4, 2, 1),
    (40, 3, 0, 0, 8, 8, 1, 19, 2, 1, 24, 7, 0),
]
TG_PRODUCT_SETS = {"pairs": KS, "quads": KS_QUADS.with_defines({**QUADS, "METALCALL_SGM_PRODUCT_NESTS": "0"}),
                   "row pairs": KS.with_defines({"METALCALL_SGM_ROW_PAIRS": "1", "METALCALL_SGM_PRODUCT_NESTS": "0"})}


@pytest.mark.parametrize("mode", list(TG_PRODUCT_SETS))
@pytest.mark.parametrize("case", TG_PRODUCT_CASES)
@pytest.mark.parametrize("t", TYPES)
def test_products_of_threadgroup_tiles(device, rng, t, case, mode):
    if mode != "pairs" and device.backend != "cuda":
        pytest.skip("the product modes differ only on CUDA")
    src = rng.standard_normal(24 * 40).astype(np.float32)
    out = np.zeros(2 * 64, np.float32)
    TG_PRODUCT_SETS[mode].get(device, f"sgm_tg_product_{t}")(32, src, out, np.array(case, np.uint32), threadgroup=32)
    mem, epr = rounded(src, t), case[0]
    a = [load_model(mem, epr, *case[1 + 3 * k:4 + 3 * k]) for k in range(2)]
    b = [load_model(mem, epr, *case[7 + 3 * k:10 + 3 * k]) for k in range(2)]
    for e in range(2):
        expect = a[0] @ b[e % 2] + a[1] @ b[(1 + e) % 2]
        assert_close(out[64 * e:64 * (e + 1)].reshape(8, 8), expect, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("t", TYPES)
def test_multiply_and_accumulate(device, products, rng, t):
    groups = 2  # threadgroups of 2 SIMD-groups: 4 independent products
    x = rng.standard_normal((groups * 2, 3, 8, 8)).astype(np.float32)
    out = np.zeros((groups * 2, 2, 8, 8), np.float32)
    products.get(device, f"sgm_mul_{t}")(groups * 64, x, out, threadgroup=64)
    a, b, c = (rounded(x[:, i], t) for i in range(3))
    prod = a @ b
    tol = tolerance(t)
    assert_close(out[:, 0], rounded(prod, t), rtol=tol, atol=tol * 4)
    assert_close(out[:, 1], rounded(prod + c, t), rtol=tol, atol=tol * 4)


def test_mixed_precision(device, products, rng):
    x = rng.standard_normal(128).astype(np.float32)
    out = np.zeros(128, np.float32)
    products.get(device, "sgm_mixed")(32, x, out, threadgroup=32)
    h, bf = rounded(x, "half").reshape(2, 8, 8), rounded(x, "bfloat").reshape(2, 8, 8)
    acc = 0.5 + h[0] @ h[1] + bf[0] @ bf[1]
    assert_close(out[:64].reshape(8, 8), acc, rtol=1e-5, atol=1e-5)
    assert_close(out[64:].reshape(8, 8), h[0] @ x[64:].reshape(8, 8), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("t", TYPES)
def test_product_chain(device, products, rng, t):
    x = rng.standard_normal(6 * 64).astype(np.float32)
    out = np.zeros(2 * 64, np.float32)
    products.get(device, f"sgm_chain_{t}")(32, x, out, threadgroup=32)
    m = rounded(x, t).reshape(6, 8, 8)
    a, b = m[:3], m[3:]
    acc = a[0] @ b[0] + a[1] @ b[1] + a[2] @ b[2]
    fm, fn = apple_layout()
    acc[fm, fn] += 1.0
    assert_close(out[:64].reshape(8, 8), acc + a[1] @ b[0], rtol=1e-5, atol=1e-4)
    assert_close(out[64:].reshape(8, 8), acc + a[0] @ b[1], rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("t", TYPES)
def test_destination_is_a_factor(device, products, rng, t):
    x = rng.standard_normal(2 * 64).astype(np.float32) * 0.5
    out = np.zeros(4 * 64, np.float32)
    products.get(device, f"sgm_alias_{t}")(32, x, out, threadgroup=32)
    a0, b0 = rounded(x, t).reshape(2, 8, 8)
    assert_equal(out[128:].reshape(2, 8, 8), np.stack([a0, b0]))
    a1 = rounded(a0 @ b0, t)
    tol = tolerance(t)
    assert_close(out[:64].reshape(8, 8), a1, rtol=tol, atol=tol * 4)
    assert_close(out[64:128].reshape(8, 8), rounded(a1 @ b0 + b0, t), rtol=tol, atol=tol * 8)


@pytest.mark.parametrize("t", TYPES)
def test_filled_and_diagonal(device, t):
    out = np.zeros(3 * 64, np.float32)
    KS.get(device, f"sgm_fill_{t}")(32, np.array([1.5, -2.0, 0.25], np.float32), out, threadgroup=32)
    assert_equal(out[:64].reshape(8, 8), np.full((8, 8), 1.5))
    assert_equal(out[64:128].reshape(8, 8), np.eye(8) * -2.0)
    assert_equal(out[128:].reshape(8, 8), np.eye(8) * 0.25)


def apple_layout():
    """(row, first column) of the two elements each lane owns."""
    lane = np.arange(32)
    q = lane // 4
    return (q & 4) + (lane // 2) % 4, (q & 2) * 2 + (lane % 2) * 2


@pytest.mark.parametrize("t", TYPES)
def test_thread_elements(device, products, t):
    pos = np.zeros(64, np.float32)
    out = np.zeros(128, np.float32)
    products.get(device, f"sgm_elements_{t}")(32, pos, out, threadgroup=32)
    fm, fn = apple_layout()
    assert_equal(pos.reshape(32, 2), np.stack([fm * 8 + fn, fm * 8 + fn + 1], 1))
    m = np.arange(64, dtype=np.float64).reshape(8, 8)
    m[fm, fn] *= 2
    m[fm, fn + 1] += np.arange(32)
    assert_close(out[:64].reshape(8, 8), rounded(m.astype(np.float32), t), rtol=tolerance(t), atol=0)
    r, c = np.meshgrid(np.arange(8), np.arange(8), indexing="ij")
    assert_equal(out[64:].reshape(8, 8), r * 10 + c)


# The GEMM's K steps are loop nests: product_nest on CUDA by default ("nests"); the
# other modes take each call on its own.
NESTS_OFF = {"METALCALL_SGM_PRODUCT_NESTS": "0"}
GEMM_MODES = {"nests": {}, "pairs": NESTS_OFF, "row pairs": {"METALCALL_SGM_ROW_PAIRS": "1", **NESTS_OFF},
              "quads": {**QUADS, **NESTS_OFF}}


@pytest.mark.parametrize("stages", [2, 1])
@pytest.mark.parametrize("mode", list(GEMM_MODES))
@pytest.mark.parametrize("column_order", [False, True], ids=["rows", "columns"])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_gemm_kernel(device, rng, dtype, column_order, mode, stages):
    if mode != "nests" and (device.backend != "cuda" or dtype != np.float16):
        pytest.skip("the product modes differ only for CUDA's half products")
    defines = {**GEMM_MODES[mode], "COLUMN_ORDER": "1" if column_order else "0", "STAGES": str(stages)}
    check_gemm_kernel(device, defines, rng, dtype)


# PIPELINE=1: one stage, each K step's fragments read while the step before is multiplied.
# K of one tile (half: 32 deep; the loop body never runs), two and three tiles.
@pytest.mark.parametrize("k", [32, 64, 96])
@pytest.mark.parametrize("nests", [True, False], ids=["nests", "nests off"])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_gemm_kernel_pipelined(device, rng, dtype, nests, k):
    if not nests and (device.backend != "cuda" or dtype != np.float16):
        pytest.skip("product nests differ only for CUDA's half products")
    defines = {"PIPELINE": "1", "STAGES": "1", **({} if nests else NESTS_OFF)}
    check_gemm_kernel(device, defines, rng, dtype, k=k)


# C_HALF=1: C in half, each SIMD-group's float accumulators rounded through its strip of
# threadgroup memory; an odd number of blocks a row (the lanes' last pass partly idle),
# and the pipelined loop.
@pytest.mark.parametrize("variant", ["two stages", "odd columns", "pipelined"])
@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_gemm_kernel_half_output(device, rng, dtype, variant):
    defines = {"C_HALF": "1", **({"PIPELINE": "1", "STAGES": "1"} if variant == "pipelined" else {})}
    config = (2, 2, 4, 1, 32) if variant == "odd columns" else None
    check_gemm_kernel(device, defines, rng, dtype, config=config)
