"""Loop nests of SIMD-group matrix products, the cases CUDA's product_nest must get right
(cpp/src/msl/passes/product_nests.cpp hands a nest of up to three loops whose body is one
`simdgroup_multiply_accumulate(X[..], a, b, X[..])` to metal_simdgroup_nest_cuda.h, which
pairs rows that share b and reduction steps into one tensor-core operation): every order of
the three roles, odd row and step counts (the last row or step alone), one-loop and
two-loop nests, the column order of a GEMM (rows and steps, b the same for all), signed
loop variables with bounds that do not start at zero, braces and pragmas, a constant
subscript, accumulators with products still pending from single calls before and after,
both 16-bit types, float factors (not for tensor cores: the loops as written), an infinite
factor in one row (nothing leaks into its neighbour), and the same with nests off
(METALCALL_SGM_PRODUCT_NESTS=0). Every device runs them against NumPy models; the define
changes only CUDA's code."""

from __future__ import annotations

import numpy as np
import pytest

from mcconf import KernelSet, assert_close, bfloat_rounded

# a: S x R blocks (S reduction steps of R rows), b: S x C blocks, acc: R x C blocks, each
# 8x8, read from `in` in that order (floats converted to T), acc starting at
# 0.125 * (r * C + c + 1).
R, C, S = 3, 2, 3

LOADS = """
    threadgroup T src[(S * R + S * C) * 64];
    for (uint i = lane; i < (S * R + S * C) * 64; i += 32) src[i] = T(in[i]);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    threadgroup const T* in_t = src;
    simdgroup_matrix<T, 8, 8> a[S][R], b[S][C];
    simdgroup_float8x8 acc[R][C];
    for (uint s = 0; s < S; ++s) {
        for (uint r = 0; r < R; ++r) simdgroup_load(a[s][r], in_t + 64 * (s * R + r));
        for (uint c = 0; c < C; ++c) simdgroup_load(b[s][c], in_t + 64 * (S * R + s * C + c));
    }
    for (uint r = 0; r < R; ++r)
        for (uint c = 0; c < C; ++c) acc[r][c] = make_filled_simdgroup_matrix<float, 8, 8>(0.125f * float(r * C + c + 1));
"""
STORES = """
    for (uint r = 0; r < R; ++r)
        for (uint c = 0; c < C; ++c) simdgroup_store(acc[r][c], out + 64 * (r * C + c));
"""


FACTOR_TYPES = ("half", "bfloat", "float")


def instantiated(name, template, parameters):
    """A KernelSet snippet: the template kernel `name` over T, instantiated for each of
    FACTOR_TYPES as `name_T`; `parameters(t)` gives its parameter types for T = t."""
    return ([f"{name}_{t}" for t in FACTOR_TYPES],
            template + "\n".join(f'template [[host_name("{name}_{t}")]] kernel void {name}<{t}>({parameters(t)});'
                                 for t in FACTOR_TYPES))


def kernel(name, body):
    """A template kernel over the factor type T, instantiated for half, bfloat and float."""
    return instantiated(name, f"""
#define R {R}
#define C {C}
#define S {S}
template <typename T>
kernel void {name}(device const float* in [[buffer(0)]], device float* out [[buffer(1)]],
                   uint lane [[thread_index_in_simdgroup]]) {{
{LOADS}{body}{STORES}}}
""", lambda t: "device const float*, device float*, uint")


# Each nest computes acc[r][c] += sum over s of a[s][r] * b[s][c] (some in two nests).
NESTS = {
    # step, row, column
    "nest_src": """
    #pragma unroll
    for (uint s = 0; s < S; ++s)
        #pragma unroll
        for (uint r = 0; r < R; ++r)
            #pragma unroll
            for (uint c = 0; c < C; ++c) simdgroup_multiply_accumulate(acc[r][c], a[s][r], b[s][c], acc[r][c]);
""",
    # column, row, step (braces around the bodies)
    "nest_crs": """
    for (uint c = 0; c < C; ++c) {
        for (uint r = 0; r < R; ++r) {
            #pragma unroll
            for (uint s = 0; s < S; ++s) { simdgroup_multiply_accumulate(acc[r][c], a[s][r], b[s][c], acc[r][c]); }
        }
    }
""",
    # row, step, column for rows 1 and 2 (signed loops, from 1 and from -1), then row 0
    "nest_rsc": """
    for (int r = 1; r < R; r++)
        for (int s = -1; s < S - 1; s += 1)
            for (ushort c = 0; c < C; ++c)
                simdgroup_multiply_accumulate(acc[r][c], a[s + 1][r], b[s + 1][c], acc[r][c]);
    for (uint s = 0; s < S; ++s)
        for (uint c = 0; c < C; ++c) simdgroup_multiply_accumulate(acc[0][c], a[s][0], b[s][c], acc[0][c]);
""",
    # two-loop nests (row, column) inside a loop over the steps
    "nest_rc": """
    for (uint s = 0; s < S; ++s)
        for (uint r = 0; r < R; ++r)
            for (uint c = 0; c < C; ++c) simdgroup_multiply_accumulate(acc[r][c], a[s][r], b[s][c], acc[r][c]);
""",
    # the column order of a GEMM: for each column, a (row, step) nest with b the same for all rows
    "nest_column_order": """
    for (uint c = 0; c < C; ++c) {
        simdgroup_matrix<T, 8, 8> bc[S];
        for (uint s = 0; s < S; ++s) bc[s] = b[s][c];
        for (uint r = 0; r < R; ++r)
            for (uint s = 0; s < S; ++s) simdgroup_multiply_accumulate(acc[r][c], a[s][r], bc[s], acc[r][c]);
    }
""",
    # one-loop nests (rows) for each column and step
    "nest_r": """
    for (uint c = 0; c < C; ++c)
        for (uint s = 0; s < S; ++s) {
            simdgroup_matrix<T, 8, 8> bs = b[s][c];
            for (uint r = 0; r < R; ++r) simdgroup_multiply_accumulate(acc[r][c], a[s][r], bs, acc[r][c]);
        }
""",
    # single calls before and after a nest over the middle step (their products may still be
    # pending when the nest starts), through a copy of acc[0][0] as well
    "nest_between_calls": """
    for (uint r = 0; r < R; ++r)
        for (uint c = 0; c < C; ++c) {
            simdgroup_multiply_accumulate(acc[r][c], a[0][r], b[0][c], acc[r][c]);
        }
    for (uint s = 1; s < 2; ++s)
        for (uint r = 0; r < R; ++r)
            for (uint c = 0; c < C; ++c) simdgroup_multiply_accumulate(acc[r][c], a[s][r], b[s][c], acc[r][c]);
    simdgroup_float8x8 first = acc[0][0];
    acc[0][0] = first;
    for (uint r = 0; r < R; ++r)
        for (uint c = 0; c < C; ++c) {
            simdgroup_multiply_accumulate(acc[r][c], a[2][r], b[2][c], acc[r][c]);
        }
""",
    # a three-dimensional accumulator array with a constant first subscript
    "nest_constant_subscript": """
    simdgroup_float8x8 acc3[2][R][C];
    for (uint r = 0; r < R; ++r)
        for (uint c = 0; c < C; ++c) {
            acc3[0][r][c] = make_filled_simdgroup_matrix<float, 8, 8>(-1.0f);
            acc3[1][r][c] = acc[r][c];
        }
    for (uint s = 0; s < S; ++s)
        for (uint r = 0; r < R; ++r)
            for (uint c = 0; c < C; ++c) simdgroup_multiply_accumulate(acc3[1][r][c], a[s][r], b[s][c], acc3[1][r][c]);
    for (uint r = 0; r < R; ++r)
        for (uint c = 0; c < C; ++c) acc[r][c] = acc3[1][r][c];
""",
}

SNIPPETS = [kernel(name, body) for name, body in NESTS.items()]
NESTS_SET = KernelSet(SNIPPETS)
SETS = {"nests": NESTS_SET, "nests off": NESTS_SET.with_defines({"METALCALL_SGM_PRODUCT_NESTS": "0"})}


@pytest.fixture(params=list(SETS))
def nests(request):
    return SETS[request.param]


def factors(rng, type_name):
    """The (S*R + S*C) 8x8 factor blocks as float32 values that T holds exactly."""
    x = rng.standard_normal((S * R + S * C) * 64).astype(np.float32)
    if type_name == "half":
        return x.astype(np.float16).astype(np.float32)
    return bfloat_rounded(x) if type_name == "bfloat" else x


def model(values):
    """acc[r][c] = 0.125 (r C + c + 1) + sum over s of a[s][r] @ b[s][c], as (R*C*64,)."""
    blocks = values.reshape(-1, 8, 8)
    a = blocks[: S * R].reshape(S, R, 8, 8)
    b = blocks[S * R:].reshape(S, C, 8, 8)
    out = np.empty((R, C, 8, 8))
    for r in range(R):
        for c in range(C):
            out[r, c] = 0.125 * (r * C + c + 1) + sum(a[s, r] @ b[s, c] for s in range(S))
    return out.reshape(-1)


@pytest.mark.parametrize("type_name", FACTOR_TYPES)
@pytest.mark.parametrize("name", list(NESTS))
def test_nest(device, nests, rng, name, type_name):
    x = factors(rng, type_name)
    out = np.full(R * C * 64, np.nan, np.float32)
    nests.get(device, f"{name}_{type_name}")(32, x, out, threadgroup=32)
    assert_close(out, model(x.astype(np.float64)), rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("type_name", ["half", "bfloat"])
def test_infinite_factor_stays_in_its_row(device, nests, rng, type_name):
    # a[0][1] (row 1 at step 0) holds an infinity: rows 0 and 2, which share operations with
    # row 1 (rows 0-1 and the lone row 2), come out finite and right
    x = factors(rng, type_name)
    x[1 * 64 + 9] = np.inf  # a[0][1], element (1, 1)
    out = np.full(R * C * 64, np.nan, np.float32)
    with np.errstate(invalid="ignore"):
        expect = model(x.astype(np.float64))
    nests.get(device, f"nest_src_{type_name}")(32, x, out, threadgroup=32)
    blocks, expected = out.reshape(R, C, 8, 8), expect.reshape(R, C, 8, 8)
    assert np.isfinite(blocks[[0, 2]]).all()
    assert_close(blocks, expected, rtol=1e-5, atol=1e-4)


# Load nests (simdgroup_load in a loop nest: on CUDA, 16-bit blocks of threadgroup memory
# in 16-byte rows go four at a time, ldmatrix.x4). Each kernel loads N = 6 blocks from a
# 16-row by 24-column tile of T (in threadgroup or device memory), some transposed, through
# a loop nest, then stores them all (as float, through a float accumulator: M * I + 0).
LOAD_NESTS = {
    # threadgroup rows of 24 elements (48 bytes): 6 blocks in a 2 x 3 nest, a group of four
    # and two alone
    "loads_2x3": ("threadgroup", "24", """
    for (uint r = 0; r < 2; ++r)
        for (uint c = 0; c < 3; ++c) simdgroup_load(m[3 * r + c], src, 24, ulong2(8 * c, 8 * r));
"""),
    # the same blocks transposed (memory holds the transpose), a one-loop nest
    "loads_transposed": ("threadgroup", "24", """
    for (uint k = 0; k < 6; ++k) simdgroup_load(m[k], src, 24, ulong2(8 * (k % 3), 8 * (k / 3)), true);
"""),
    # three loops, the innermost over a matrix pair, a signed loop from -1
    "loads_3d": ("threadgroup", "24", """
    for (int r = -1; r < 1; ++r)
        for (uint c = 0; c < 3; c++)
            for (uint h = 0; h < 1; ++h) simdgroup_load(m[3 * (r + 1) + c + h], src + 8 * c, 24, ulong2(0, 8 * (r + 1)));
"""),
    # rows of 20 elements (40 bytes: not 16-byte rows): one at a time
    "loads_unaligned_rows": ("threadgroup", "20", """
    for (uint k = 0; k < 6; ++k) simdgroup_load(m[k], src, 20, ulong2(8 * (k % 2), 8 * (k / 2) % 16));
"""),
    # from device memory: one at a time
    "loads_device": ("device", "24", """
    for (uint r = 0; r < 2; ++r)
        for (uint c = 0; c < 3; ++c) simdgroup_load(m[3 * r + c], src, 24, ulong2(8 * c, 8 * r));
"""),
    # the same matrix loaded twice in one group of four: the later load stays
    "loads_twice": ("threadgroup", "24", """
    for (uint k = 0; k < 6; ++k) m[k] = simdgroup_matrix<T, 8, 8>(T(0));
    for (uint k = 0; k < 4; ++k) simdgroup_load(m[k / 2 * 2], src, 24, ulong2(8 * (k % 3), 8 * (k / 3)));
"""),
}


def load_kernel(name, space, row, body):
    return instantiated(name, f"""
template <typename T>
kernel void {name}(device const float* in [[buffer(0)]], device T* scratch [[buffer(1)]],
                   device float* out [[buffer(2)]], uint lane [[thread_index_in_simdgroup]]) {{
    threadgroup T tile[16 * {row}];
    for (uint i = lane; i < 16 * {row}; i += 32) tile[i] = scratch[i] = T(in[i]);
    threadgroup_barrier(mem_flags::mem_threadgroup | mem_flags::mem_device);
    {space} const T* src = {"tile" if space == "threadgroup" else "scratch"};
    simdgroup_matrix<T, 8, 8> m[6];
    {body}
    simdgroup_matrix<T, 8, 8> eye = simdgroup_matrix<T, 8, 8>(T(1));
    for (uint k = 0; k < 6; ++k) {{
        simdgroup_float8x8 acc = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
        simdgroup_multiply_accumulate(acc, m[k], eye, acc);
        simdgroup_store(acc, out + 64 * k);
    }}
}}
""", lambda t: f"device const float*, device {t}*, device float*, uint")


LOADS_SET = KernelSet([load_kernel(name, *spec) for name, spec in LOAD_NESTS.items()])


def load_model(name, tile):
    """The six blocks each kernel of LOAD_NESTS stores, from the 16 x row tile."""
    def block(r, c, transposed=False):
        b = tile[r:r + 8, c:c + 8]
        return b.T if transposed else b
    if name in ("loads_2x3", "loads_device", "loads_3d"):
        return [block(8 * (k // 3), 8 * (k % 3)) for k in range(6)]
    if name == "loads_transposed":
        return [block(8 * (k // 3), 8 * (k % 3), True) for k in range(6)]
    if name == "loads_unaligned_rows":
        return [block(8 * (k // 2) % 16, 8 * (k % 2)) for k in range(6)]
    assert name == "loads_twice"
    blocks = [np.zeros((8, 8)) for _ in range(6)]
    for k in range(4):
        blocks[k // 2 * 2] = block(8 * (k // 3), 8 * (k % 3))
    return blocks


@pytest.mark.parametrize("type_name", FACTOR_TYPES)
@pytest.mark.parametrize("name", list(LOAD_NESTS))
def test_load_nest(device, rng, name, type_name):
    row = int(LOAD_NESTS[name][1])
    x = rng.standard_normal(16 * row).astype(np.float32)
    x = x.astype(np.float16).astype(np.float32) if type_name == "half" else bfloat_rounded(x) if type_name == "bfloat" else x
    scratch = np.zeros(16 * row * (2 if type_name != "float" else 4), np.uint8)  # the kernel's T, as bytes
    out = np.full(6 * 64, np.nan, np.float32)
    LOADS_SET.get(device, f"{name}_{type_name}")(32, x, scratch, out, threadgroup=32)
    expect = np.stack(load_model(name, x.astype(np.float64).reshape(16, row))).reshape(-1)
    assert_close(out, expect, rtol=1e-6, atol=0)
