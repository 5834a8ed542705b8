// MSL that CUDA C++ takes only after a rewrite (check_translations.py): half constants in
// constant expressions (literals, `U(0)` of a type parameter), is_signed<half>, a static member's out-of-class definition, an
// initializer on threadgroup storage, atomic_thread_fence. NVRTC checks the static_asserts.
#include <metal_stdlib>
using namespace metal;

struct limits_half {
    static constexpr constant half max = metal::numeric_limits<half>::infinity();
    static constexpr constant half min = -metal::numeric_limits<half>::infinity();
};
struct pair_half { half re; half im; };
constexpr pair_half mul(pair_half a, pair_half b) { return {a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re}; }
static_assert(mul(pair_half{1.0h, 2.0h}, pair_half{3.0h, 4.0h}).re == -5.0h, "constexpr half arithmetic");
static_assert(1.0h / 3.0h == 0.333251953125h, "rounded to nearest");
static_assert(65504.0h + 32.0h == metal::numeric_limits<half>::infinity(), "overflow to infinity");
static_assert(is_signed_v<half> && !is_unsigned_v<half>, "half is signed");

// MLX's reduction and scan operators: a literal converted to the type parameter, constexpr.
template <typename U>
struct sum_op {
    static constexpr constant U init = U(0);
    static constexpr constant U one = static_cast<U>(1.0f);
    static constexpr constant U minus = U(-2);
    static constexpr constant U two = U(2.0h);
};
static_assert(sum_op<half>::one - sum_op<half>::init == 1.0h && sum_op<half>::minus == -2.0h && sum_op<half>::two == 2.0h,
              "U(0) of half");
static_assert(sum_op<float>::one == 1.0f, "U(0) of float");
constant constexpr half h_half = half(0.5f);

// mistral.rs's affine_quantize: a constexpr of the type parameter from an int expression, and
// TNN's program-scope half vectors from ints: both constant expressions (static initialisation).
template <typename T, int bits>
constexpr T n_bins() {
    constexpr T n = bits == 40 ? 15 : (1 << bits) - 1;
    return n;
}
static_assert(n_bins<half, 4>() == 15.0h && n_bins<half, 40>() == 15.0h && n_bins<float, 3>() == 7.0f, "int to T");
constexpr half h_sum = 1 + 2;
static_assert(h_sum == 3.0h, "int to half");
constant half h_of_int = 2 * 3;  // program-scope constant data: constexpr on CUDA
static constant half4 h_ones = half4(1, 1, 1, 1);
static constant float2 f_of_half = float2(half2(0.5h, 2));

struct table { static constexpr constant float v[2] = {0.25f, 0.75f}; };
constant constexpr const float table::v[2];

kernel void cuda_constructs(device const half* a [[buffer(0)]], device half* out [[buffer(1)]],
                            device float* f [[buffer(2)]], uint i [[thread_position_in_grid]],
                            uint lid [[thread_position_in_threadgroup]]) {
    threadgroup float scratch[32] = {0};
    scratch[lid % 32] = table::v[i % 2];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    f[i] = scratch[lid % 32];
    out[i] = a[i] < limits_half::max ? -a[i] : limits_half::min;
    out[i] += sum_op<half>::one + h_half + half(2);
    atomic_thread_fence(mem_flags::mem_device, memory_order_seq_cst, static_cast<thread_scope>(3));
}

// Calls NVRTC's global float overloads would take (fminf's signed zeros, rsqrtf's 2 ulp), written
// metal::NAME; a half argument of a conversion to long, wrapped around its literal_cast.
kernel void cuda_library_calls(device const float* x [[buffer(0)]], device float* y [[buffer(1)]],
                               device long* k [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    y[i] = fmin(x[i], 0.0f) + fmax(x[i], -0.0f) + rsqrt(x[i]) + precise::rsqrt(x[i]);
    k[i] = long(half(x[i]));
}

// Pragmas through the _Pragma operator in a macro, two on a line (MLX's STEEL_PRAGMA_UNROLL):
// each becomes a #pragma line of its own, before its loop.
#define CC_UNROLL _Pragma("unroll")
kernel void cuda_pragma_operator(device float* y [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    float s = 0.0f;
    CC_UNROLL for (int k = 0; k < 4; ++k) { _Pragma("clang loop unroll(disable)") for (int j = 0; j < 2; ++j) s += k * j; }
    y[i] = s;
}
