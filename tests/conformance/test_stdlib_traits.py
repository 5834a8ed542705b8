"""<metal_type_traits> and <metal_limits> as production code uses them (issue P2.0 item 3):
the traits of the MSL specification with their vector cases (is_integral<int4>, is_vector,
vec_elements, make_scalar, make_signed/make_unsigned of vectors), and the Apple internals
that public kernels specialise or ask (_numeric_limits_impl behind numeric_limits, as candle's
reduce.metal specialises it for its `indexed<T>`; __is_valid_simdgroup_type, which candle asks
to pick a SIMD-group reduction; _fp_encoding_traits, which software bfloat code reads). The static_asserts are the MSL specification's answers; the
kernels use the traits to pick code paths and limits, checked against NumPy."""

from __future__ import annotations

import numpy as np

from mcconf import KernelSet, assert_equal, written_for_32_lanes

KS = KernelSet([
    """
static_assert(vec_elements<float4>::value == 4 && vec_elements<const half3>::value == 3, "vector widths");
static_assert(vec_elements<float>::value == 0 && vec_elements<packed_float3>::value == 3, "0 for a scalar");
static_assert(is_same_v<make_scalar_t<uint2>, uint> && is_same_v<make_scalar_t<const float>, float>, "");
static_assert(is_vector_v<int4> && is_vector<packed_half2>::value && !is_vector_v<int> && !is_vector_v<float4x4>, "");
static_assert(is_integral_v<int4> && is_integral_v<const uint> && is_integral_v<bool> && !is_integral_v<float4>, "");
static_assert(is_floating_point_v<half2> && is_floating_point_v<const float> && is_floating_point_v<bfloat>, "");
static_assert(is_signed_v<int3> && !is_signed_v<uint3> && is_signed_v<float> && is_unsigned_v<ushort2>, "");
static_assert(is_unsigned_v<bool> && !is_signed_v<bool> && is_arithmetic_v<half4> && !is_arithmetic_v<float2x2>, "");
static_assert(is_scalar_v<float> && is_scalar_v<bool> && !is_scalar_v<float2> && is_scalar_v<device float*>, "");
static_assert(is_same_v<make_unsigned_t<int4>, uint4> && is_same_v<make_signed_t<const ushort>, short>, "");
static_assert(is_same_v<remove_volatile_t<volatile int>, int> && is_const_v<const int> && !is_const_v<int>, "");
enum class tr_kind : short { a, b };
static_assert(is_enum_v<tr_kind> && is_same_v<underlying_type_t<tr_kind>, short> && !is_class_v<int>, "");
static_assert(conjunction_v<is_integral<int>, is_signed<int>> && disjunction_v<is_vector<int>, is_scalar<int>>, "");
static_assert(numeric_limits<const int>::max() == 2147483647 && !numeric_limits<int4>::is_specialized, "");
static_assert(numeric_limits<float>::round_style == round_to_nearest && numeric_limits<uint>::has_denorm == denorm_absent, "");
static_assert(__is_valid_simdgroup_type<float>::value && __is_valid_simdgroup_type<half4>::value, "");
static_assert(__is_valid_simdgroup_type<int>::value && !__is_valid_simdgroup_type<long>::value, "64-bit: no");
static_assert(!__is_valid_simdgroup_type<bfloat>::value, "bfloat: no, as Apple's header says");

// Work per thread from the vector width, as candle's reduce.metal computes it.
template <uint N> constexpr uint tr_nonzero() { return N == 0 ? 1 : N; }
template <typename T> constexpr uint tr_width() { return tr_nonzero<vec_elements<T>::value>(); }

kernel void tr_widths(device uint* out [[buffer(0)]], device uint* bits [[buffer(1)]],
                      const device int4* v [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    out[0] = tr_width<float>();
    out[1] = tr_width<float4>();
    out[2] = tr_width<half2>();
    out[3] = tr_width<packed_float3>();
    // The bits of a signed vector as its unsigned counterpart.
    make_unsigned_t<int4> u = as_type<make_unsigned_t<int4>>(v[0]);
    for (int k = 0; k < 4; ++k) bits[k] = u[k] >> 28;
}
""",
    # numeric_limits specialised through Apple's _numeric_limits_impl, for an argmax.
    """
template <typename T>
struct tr_indexed {
    uint i;
    T val;
};
template <typename T>
struct _numeric_limits_impl<tr_indexed<T>> {
    static constexpr METAL_FUNC tr_indexed<T> lowest() { return tr_indexed<T>{0, numeric_limits<T>::lowest()}; }
};
template <typename T>
METAL_FUNC bool operator>(tr_indexed<T> a, tr_indexed<T> b) { return a.val > b.val || (a.val == b.val && a.i < b.i); }

kernel void tr_argmax(const device float* x [[buffer(0)]], device uint* index [[buffer(1)]],
                      device float* value [[buffer(2)]], constant uint& n [[buffer(3)]],
                      uint row [[thread_position_in_grid]]) {
    tr_indexed<float> best = numeric_limits<tr_indexed<float>>::lowest();
    for (uint k = 0; k < n; ++k) {
        tr_indexed<float> c{k, x[row * n + k]};
        if (c > best) best = c;
    }
    index[row] = best.i;
    value[row] = best.val;
}
""",
    # A reduction that takes the SIMD-group path where Apple's trait allows it, else threadgroup memory.
    (["tr_max_float", "tr_max_long"], """
template <typename T, bool Simd = __is_valid_simdgroup_type<T>::value>
struct tr_group_max;
template <typename T>
struct tr_group_max<T, true> {
    static METAL_FUNC T run(T v, threadgroup T*, uint) { return simd_max(v); }
};
template <typename T>
struct tr_group_max<T, false> {
    static METAL_FUNC T run(T v, threadgroup T* shared, uint lane) {
        shared[lane] = v;
        threadgroup_barrier(mem_flags::mem_threadgroup);
        T m = shared[0];
        for (uint k = 1; k < 32; ++k) m = max(m, shared[k]);
        return m;
    }
};
kernel void tr_max_float(const device float* x [[buffer(0)]], device float* out [[buffer(1)]],
                         uint i [[thread_position_in_grid]], uint lane [[thread_index_in_threadgroup]],
                         uint g [[threadgroup_position_in_grid]]) {
    threadgroup float shared[32];
    float m = tr_group_max<float>::run(x[i], shared, lane);
    if (lane == 0) out[g] = m;
}
kernel void tr_max_long(const device long* x [[buffer(0)]], device long* out [[buffer(1)]],
                        uint i [[thread_position_in_grid]], uint lane [[thread_index_in_threadgroup]],
                        uint g [[threadgroup_position_in_grid]]) {
    threadgroup long shared[32];
    long m = tr_group_max<long>::run(x[i], shared, lane);
    if (lane == 0) out[g] = m;
}
"""),
    # Apple's encoding traits, as software bfloat code tests a float's bits (mistral.rs, MLX).
    """
static_assert(_fp_encoding_traits<half>::inf_mask == 0x7c00 && _fp_encoding_traits<const float>::bit_width == 32, "");
kernel void tr_nan_bits(const device float* x [[buffer(0)]], device uint* out [[buffer(1)]], uint i [[thread_position_in_grid]]) {
    const uint bits = as_type<uint>(x[i]);
    const bool nan = (bits & ~_fp_encoding_traits<float>::sign_mask) > _fp_encoding_traits<float>::inf_mask;
    out[i] = nan ? 0x7FC0u : (bits + ((bits >> 16) & 1u) + 0x7FFFu) >> 16;   // float to bfloat bits
}
""",
    # numeric_limits' values for the MSL types.
    """
kernel void tr_limits(device float* f [[buffer(0)]], device long* n [[buffer(1)]], uint i [[thread_position_in_grid]]) {
    f[0] = numeric_limits<float>::max();
    f[1] = numeric_limits<float>::min();
    f[2] = numeric_limits<float>::lowest();
    f[3] = numeric_limits<float>::epsilon();
    f[4] = numeric_limits<float>::denorm_min();
    f[5] = numeric_limits<const float>::infinity();
    f[6] = float(numeric_limits<half>::max());
    f[7] = float(numeric_limits<half>::min());
    f[8] = float(numeric_limits<half>::epsilon());
    f[9] = float(numeric_limits<half>::lowest());
    n[0] = numeric_limits<char>::min();
    n[1] = numeric_limits<uchar>::max();
    n[2] = numeric_limits<short>::min();
    n[3] = numeric_limits<ushort>::max();
    n[4] = numeric_limits<int>::lowest();
    n[5] = numeric_limits<uint>::max();
    n[6] = numeric_limits<long>::min();
    n[7] = numeric_limits<volatile bool>::max();
    n[8] = numeric_limits<int>::digits + 100 * numeric_limits<float>::digits;
}
""",
])


def test_vector_widths_and_unsigned_counterparts(device):
    out = np.zeros(4, np.uint32)
    bits = np.zeros(4, np.uint32)
    v = np.array([-1, 0x10000000, 0x7FFFFFFF, -0x70000000], np.int32)
    KS.get(device, "tr_widths")(1, out, bits, v)
    assert_equal(out, [1, 4, 2, 3])
    assert_equal(bits, v.view(np.uint32) >> 28)


def test_numeric_limits_specialised_through_its_impl(device, rng):
    rows, n = 9, 37
    x = rng.standard_normal((rows, n)).astype(np.float32)
    x[3] = -np.finfo(np.float32).max  # all equal to lowest(): the first index wins
    x[5, 7] = x[5, 20] = 50.0         # a tie: the first index wins
    index = np.zeros(rows, np.uint32)
    value = np.zeros(rows, np.float32)
    KS.get(device, "tr_argmax")(rows, x.ravel(), index, value, np.uint32(n))
    assert_equal(index, np.argmax(x, axis=1))
    assert_equal(value, x.max(axis=1))


def test_simdgroup_type_picks_the_reduction(device, rng):
    x = rng.standard_normal(128).astype(np.float32)
    out = np.zeros(4, np.float32)
    written_for_32_lanes(KS.get(device, "tr_max_float"))(128, x, out, threadgroup=32)
    assert_equal(out, x.reshape(4, 32).max(1))
    xl = rng.integers(-(2**62), 2**62, 128, dtype=np.int64)
    outl = np.zeros(4, np.int64)
    written_for_32_lanes(KS.get(device, "tr_max_long"))(128, xl, outl, threadgroup=32)
    assert_equal(outl, xl.reshape(4, 32).max(1))


def test_numeric_limits_values(device):
    f = np.zeros(10, np.float32)
    n = np.zeros(9, np.int64)
    KS.get(device, "tr_limits")(1, f, n)
    f32, f16 = np.finfo(np.float32), np.finfo(np.float16)
    assert_equal(f, [f32.max, f32.tiny, -f32.max, f32.eps, f32.smallest_subnormal, np.inf,
                     f16.max, f16.tiny, f16.eps, -f16.max])
    assert_equal(n, [-128, 255, -32768, 65535, -2**31, 2**32 - 1, -2**63, 1, 31 + 100 * 24])


def test_encoding_traits_read_a_floats_bits(device, rng):
    x = rng.standard_normal(64).astype(np.float32) * 100
    x[[3, 17]] = [np.nan, -np.nan]
    x[5], x[6] = np.inf, -np.inf
    out = np.zeros(64, np.uint32)
    KS.get(device, "tr_nan_bits")(64, x, out)
    bits = x.view(np.uint32).astype(np.uint64)
    rounded = ((bits + ((bits >> 16) & 1) + 0x7FFF) >> 16) & 0xFFFFFFFF
    assert_equal(out, np.where(np.isnan(x), 0x7FC0, rounded).astype(np.uint32))
