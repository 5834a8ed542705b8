"""Constructs found by issue P2.0's survey of public MSL sources not used before (MNN, torchao:
docs/msl-corpus.md), each in a kernel of our own checked against NumPy: `select` with a
scalar beside a vector (MNN's softmax writes `select(0, value, mask)` for a float4 value: MSL
converts the scalar to the vector type)."""

from __future__ import annotations

import numpy as np

from mcconf import KernelSet, assert_equal

KS = KernelSet([
    """
// MNN's softmax_filter: an integer literal as the false operand, a bool4 from a comparison.
kernel void csc_select_int_scalar_first(const device float4* x [[buffer(0)]], device float4* out [[buffer(1)]],
                                        constant int& limit [[buffer(2)]], uint z [[thread_position_in_grid]]) {
    out[z] = select(0, x[z], int(z) * 4 + int4(0, 1, 2, 3) < limit);
}
""",
    """
kernel void csc_select_half_scalar_second(const device half4* x [[buffer(0)]], device half4* out [[buffer(1)]],
                                          uint i [[thread_position_in_grid]]) {
    out[i] = select(x[i], 0.5h, x[i] > half4(0));
}
""",
    """
kernel void csc_select_float_literal_bool(const device float2* x [[buffer(0)]], device float2* out [[buffer(1)]],
                                          uint i [[thread_position_in_grid]]) {
    out[i] = select(-1.5f, x[i], (i & 1) != 0);
}
""",
    """
kernel void csc_select_uint_vector(const device uint3* x [[buffer(0)]], device uint3* out [[buffer(1)]],
                                   uint i [[thread_position_in_grid]]) {
    out[i] = select(x[i], 7u, x[i] % 3u == 0u);
}
""",
])


def test_select_integer_scalar_beside_float4(device, rng):
    n, limit = 9, 30  # the last vectors straddle the limit
    x = rng.uniform(-2, 2, (n, 4)).astype(np.float32)
    out = np.full((n, 4), np.nan, np.float32)
    KS.get(device, "csc_select_int_scalar_first")(n, x, out, np.int32(limit))
    index = np.arange(n)[:, None] * 4 + np.arange(4)
    assert_equal(out, np.where(index < limit, x, np.float32(0)))


def test_select_half_scalar_beside_half4(device, rng):
    n = 16
    x = rng.uniform(-2, 2, (n, 4)).astype(np.float16)
    out = np.zeros((n, 4), np.float16)
    KS.get(device, "csc_select_half_scalar_second")(n, x, out)
    assert_equal(out, np.where(x > 0, np.float16(0.5), x))


def test_select_scalar_with_bool_condition(device, rng):
    n = 10
    x = rng.uniform(-2, 2, (n, 2)).astype(np.float32)
    out = np.zeros((n, 2), np.float32)
    KS.get(device, "csc_select_float_literal_bool")(n, x, out)
    assert_equal(out, np.where((np.arange(n) & 1)[:, None] != 0, x, np.float32(-1.5)))


def test_select_unsigned_scalar_beside_uint3(device, rng):
    n = 12
    x = rng.integers(0, 100, (n, 4)).astype(np.uint32)  # uint3 takes 16 bytes
    out = np.zeros((n, 4), np.uint32)
    KS.get(device, "csc_select_uint_vector")(n, x, out)
    assert_equal(out[:, :3], np.where(x[:, :3] % 3 == 0, np.uint32(7), x[:, :3]))


# A conversion function names a type, not a function of that name (MLX's complex_t has
# `operator vec<T, 2>() const thread`): the type stays usable as a type, in a program-scope
# constant's initialiser and inside the conversion itself.
CONVERSIONS = KernelSet([
    """
struct csc_pair {
    float re, im;
    constexpr operator vec<float, 2>() const thread { return vec<float, 2>(re, im); }
    operator float4() const thread { return float4(re, im, -im, -re); }
};
struct csc_box { int v; };
struct csc_wrap {
    int v;
    operator csc_box() const thread { return csc_box{v * 2}; }
};
constant float4 csc_offset = float4(0.5f);
template <typename T> struct csc_traits { using complex_type = vec<T, 2>; };

kernel void csc_conversion_operators(const device float2* x [[buffer(0)]], device float* out [[buffer(1)]],
                                     uint i [[thread_position_in_grid]]) {
    using complex_type = typename csc_traits<float>::complex_type;
    csc_pair p{x[i].x, x[i].y};
    complex_type c = p;
    float4 f = p;
    csc_box b = csc_wrap{int(i)};
    out[i] = c.x * 1000.0f + c.y * 100.0f + dot(f + csc_offset, float4(1, 2, 3, 4)) + float(b.v);
}
""",
])


def test_conversion_operators_name_types(device, rng):
    n = 16
    x = rng.integers(-4, 4, (n, 2)).astype(np.float32)
    out = np.zeros(n, np.float32)
    CONVERSIONS.get(device, "csc_conversion_operators")(n, x, out)
    re_, im = x[:, 0], x[:, 1]
    f = np.stack([re_, im, -im, -re_], 1) + 0.5
    want = re_ * 1000 + im * 100 + f @ np.array([1, 2, 3, 4], np.float32) + 2 * np.arange(n)
    assert_equal(out, want.astype(np.float32))


# Constants of half built from other types, which CUDA's __half does not construct in a
# constant expression: a constexpr of a template's type parameter from an int expression
# (mistral.rs's affine_quantize: `constexpr T n_bins = bits == 40 ? 15 : (1 << bits) - 1;`) and
# program-scope half vectors from ints (TNN's `constant half4 Zero4 = half4(0, 0, 0, 0);`).
HALF_CONSTANTS = KernelSet([
    """
static constant half4 csc_six4 = half4(6, 6, 6, 6);
static constant float2 csc_from_half = float2(half2(0.5h, 3));
constant constexpr half csc_three = 1 + 2;
constant half csc_seven = 3 + 4;  // program-scope constant data (constexpr in the CUDA translation)
template <typename T, int bits>
T csc_levels(T x) {
    constexpr T n_bins = bits == 40 ? 15 : (1 << bits) - 1;
    return x * n_bins;
}
kernel void csc_half_constants(const device half4* x [[buffer(0)]], device half4* out [[buffer(1)]],
                               device float* f [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    out[i] = min(x[i], csc_six4) + half4(csc_levels<half, 3>(half(1)), csc_levels<half, 40>(half(1)),
                                        csc_levels<float, 2>(1.0f), csc_three);
    f[i] = csc_from_half.x + csc_from_half.y + csc_seven;
}
""",
])


def test_half_constants_from_other_types(device, rng):
    n = 8
    x = rng.uniform(0, 10, (n, 4)).astype(np.float16)
    out = np.zeros((n, 4), np.float16)
    f = np.zeros(n, np.float32)
    HALF_CONSTANTS.get(device, "csc_half_constants")(n, x, out, f)
    assert_equal(out, np.minimum(x, np.float16(6)) + np.array([7, 15, 3, 3], np.float16))
    assert_equal(f, np.full(n, 10.5, np.float32))
