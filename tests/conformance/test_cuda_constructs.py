"""MSL that production kernels (ggml-metal.metal, MLX; docs/msl-corpus.md) write and that CUDA
C++ takes only after a rewrite, each in a kernel of our own checked against NumPy on every
backend: conditionals whose branches mix half with float (MSL makes them float; CUDA's __half
made them ambiguous), half constants in constant expressions (MLX's Limits<half>, its
complex_t<half> static_assert), is_signed<half>, the out-of-class definition of a static
constexpr member (`constant constexpr const float A::table[2];`), an initializer on
threadgroup storage, atomic_thread_fence, and a source's log1p(float) / log1p(complex)
overloads called with half (MLX's unary Log1p and binary LogAddExp: Metal promotes half to
float, where CUDA's __half class found two user-defined conversions)."""

from __future__ import annotations

import numpy as np
import pytest

from mcconf import KernelSet, assert_close, assert_equal

N = 64

KS = KernelSet([
    """
kernel void cuda_mixed_conditional(const device half* a [[buffer(0)]], const device float* b [[buffer(1)]],
                                   device float* out [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    const bool c = (i & 1) != 0;
    float x = 0.0f, y = 0.0f;
    out[4 * i + 0] = i < 2 ? a[i] : a[i] / 16.f;   // half : float is float (ggml's dequantize_q5_K)
    out[4 * i + 1] = c ? b[i] : a[i];              // float : half
    (c ? x : y) = b[i];                            // same types: still an lvalue
    out[4 * i + 2] = x - y;
    out[4 * i + 3] = c ? a[i] * a[i] : b[i];       // half * half rounds to half, then float
}
""",
    """
struct cc_limits {
    static constexpr constant half max = metal::numeric_limits<half>::infinity();
    static constexpr constant half min = -metal::numeric_limits<half>::infinity();
    static constexpr constant half finite_max = metal::numeric_limits<half>::max();
};
struct cc_pair { half re; half im; };
constexpr cc_pair cc_mul(cc_pair a, cc_pair b) { return {a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re}; }
static_assert(cc_mul(cc_pair{1.0h, 2.0h}, cc_pair{3.0h, 4.0h}).re == -5.0h, "constexpr half arithmetic");
static_assert(is_signed_v<half>, "half is signed");
constant constexpr half cc_third = 1.0h / 3.0h;
kernel void cuda_constexpr_half(const device half* a [[buffer(0)]], device half* out [[buffer(1)]],
                                uint i [[thread_position_in_grid]]) {
    const half h = a[i];
    out[6 * i + 0] = cc_limits::max;
    out[6 * i + 1] = cc_limits::min;
    out[6 * i + 2] = cc_limits::finite_max;
    out[6 * i + 3] = cc_third;
    out[6 * i + 4] = -h;                           // run-time negation of an lvalue
    out[6 * i + 5] = h * 2.0h - 0.5h;
}
""",
    """
struct cc_table { static constexpr constant float v[2] = {0.25f, 0.75f}; };
constant constexpr const float cc_table::v[2];
kernel void cuda_static_member(const device float* a [[buffer(0)]], device float* out [[buffer(1)]],
                               uint i [[thread_position_in_grid]]) {
    out[i] = a[i] * cc_table::v[i % 2];
}
""",
    """
kernel void cuda_threadgroup_init_fence(const device float* a [[buffer(0)]], device float* out [[buffer(1)]],
                                        uint i [[thread_position_in_grid]], uint lid [[thread_position_in_threadgroup]]) {
    threadgroup float scratch[32] = {0};
    scratch[lid % 32] = a[i] * 0.5f;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    out[i] = scratch[lid % 32];
    atomic_thread_fence(mem_flags::mem_device, memory_order_seq_cst, static_cast<thread_scope>(3));
}
""",
    # MLX's utils.h and unary/binary ops: log1p for float and complex (whose constructor template
    # takes anything convertible to float), called with half and with float.
    """
struct cuda_cx { float real; float imag;
    constexpr cuda_cx(float r, float i) : real(r), imag(i) {}
    template <typename T, typename = typename enable_if<is_convertible<T, float>::value>::type>
    constexpr cuda_cx(T x) : real(x), imag(0) {}
};
inline float log1p(float x) {
    float xp1 = 1.0f + x;
    if (xp1 == 1.0f) return x;
    return x * (metal::log(xp1) / (xp1 - 1.0f));
}
inline cuda_cx log1p(cuda_cx z) { return {log1p(z.real), z.imag}; }
struct CudaLog1p { template <typename T> T operator()(T x) { return log1p(x); } };
struct CudaLogAddExp {
    template <typename T> T operator()(T x, T y) {
        T maxval = metal::max(x, y), minval = metal::min(x, y);
        return maxval + log1p(metal::exp(minval - maxval));
    }
};
template <typename T>
kernel void cuda_log1p(const device T* a [[buffer(0)]], const device T* b [[buffer(1)]], device T* out [[buffer(2)]],
                       uint i [[thread_position_in_grid]]) {
    out[2 * i + 0] = CudaLog1p()(a[i]);
    out[2 * i + 1] = CudaLogAddExp()(a[i], b[i]);
}
template [[host_name("cuda_log1p_half")]] kernel void cuda_log1p<half>(const device half*, const device half*,
                                                                        device half*, uint);
template [[host_name("cuda_log1p_float")]] kernel void cuda_log1p<float>(const device float*, const device float*,
                                                                          device float*, uint);
""",
])


def test_conditional_of_half_and_float_is_float(device, rng):
    a = (rng.random(N) * 8 - 4).astype(np.float16)
    b = (rng.random(N) * 8 - 4).astype(np.float32)
    out = np.zeros(4 * N, np.float32)
    KS.get(device, "cuda_mixed_conditional")(N, a, b, out)
    A = a.astype(np.float32)
    i = np.arange(N)
    c = (i & 1) != 0
    sq = (A * A).astype(np.float16).astype(np.float32)
    exp = np.stack([np.where(i < 2, A, A / 16), np.where(c, b, A), np.where(c, b, -b), np.where(c, sq, b)], axis=1).ravel()
    assert_close(out, exp, rtol=1e-6, atol=1e-6)


def test_half_constant_expressions(device, rng):
    a = (rng.random(N) * 8 - 4).astype(np.float16)
    out = np.zeros(6 * N, np.float16)
    KS.get(device, "cuda_constexpr_half")(N, a, out)
    one = np.ones(N, np.float16)
    exp = np.stack([one * np.float16(np.inf), one * np.float16(-np.inf), one * np.finfo(np.float16).max,
                    one * np.float16(1.0 / 3.0), -a, (a * np.float16(2) - np.float16(0.5)).astype(np.float16)],
                   axis=1).ravel()
    assert_equal(out, exp)


def test_static_member_definition(device, rng):
    a = (rng.random(N) * 8 - 4).astype(np.float32)
    out = np.zeros(N, np.float32)
    KS.get(device, "cuda_static_member")(N, a, out)
    assert_equal(out, a * np.where(np.arange(N) % 2 == 0, 0.25, 0.75).astype(np.float32))


def test_threadgroup_initializer_and_thread_fence(device, rng):
    a = (rng.random(N) * 8 - 4).astype(np.float32)
    out = np.zeros(N, np.float32)
    KS.get(device, "cuda_threadgroup_init_fence")(N, a, out, threadgroup=32)
    assert_equal(out, a * np.float32(0.5))


@pytest.mark.parametrize("tname", ["half", "float"])
def test_log1p_overloads_called_with_half(device, rng, tname):
    t = np.float16 if tname == "half" else np.float32
    a = (rng.random(N) * 6 - 0.9).astype(t)
    a[:3] = [0, t(1e-3), t(-0.5)]
    b = (rng.random(N) * 6 - 3).astype(t)
    out = np.zeros(2 * N, t)
    KS.get(device, f"cuda_log1p_{tname}")(N, a, b, out)
    A, B = a.astype(np.float64), b.astype(np.float64)
    # half: log1p in float (Metal's promotion), rounded once to half; LogAddExp's exp is a half exp.
    mx, mn = np.maximum(A, B), np.minimum(A, B)
    e = np.exp(mn - mx).astype(t).astype(np.float64)
    want = np.stack([np.log1p(A), mx + np.log1p(e)], axis=1).ravel()
    ulp = 2.0**-10 if t == np.float16 else 2.0**-23
    assert_close(out.astype(np.float64), want, rtol=2 * ulp, atol=2 * ulp)
