"""What public kernel libraries (MLX) use beyond the basics: simd_shuffle_and_fill_down/up,
the _v type traits and is_convertible, constexpr bfloat constants, `constant constexpr const`, metal::os_log (accepted,
discarded) and the __metal_* builtins behind Apple's metal_stdlib (MLX's bf16_math.h)."""

from __future__ import annotations

import numpy as np
import pytest


from mcconf import KernelSet, assert_close, assert_equal, written_for_32_lanes

KS = KernelSet([
    """
kernel void compat_fill(device const float* a [[buffer(0)]], device const float* f [[buffer(1)]],
                        device float* out [[buffer(2)]], device const ushort* p [[buffer(3)]],
                        uint i [[thread_position_in_grid]]) {
    out[2 * i] = simd_shuffle_and_fill_down(a[i], f[i], p[0], p[1]);
    out[2 * i + 1] = simd_shuffle_and_fill_up(a[i], f[i], p[0], p[1]);
}
""",
    """
constant constexpr bfloat compat_big = bfloat(3.0f);
constant constexpr const int compat_zero = 0;  // MLX's spelling: one const
static_assert(is_same_v<float, float> && !is_same_v<int, float> && is_floating_point_v<half>, "traits");
static_assert(is_convertible_v<int, float> && !is_convertible_v<float2, float>, "is_convertible");
static_assert(_disjunction<is_same<int, float>, is_same<int, int>>::value && !conjunction<true_type, false_type>::value &&
              bool_constant<true>::value && negation<false_type>::value, "logical traits");
static_assert(is_same_v<remove_addrspace_t<float>, float> && is_same_v<remove_pointer_t<const int*>, const int> &&
              is_same_v<remove_reference_t<int&>, int> && is_same_v<remove_const_t<const int>, int>, "remove_*");
// Specializations that differ only in address space (MLX's pointer_element): the first serves all.
template <typename T> struct compat_elem {};
template <typename T> struct compat_elem<thread T*> { using type = remove_cv_t<T>; };
template <typename T> struct compat_elem<device T*> { using type = remove_cv_t<T>; };
template <typename T> struct compat_elem<threadgroup T*> { using type = remove_cv_t<T>; };
static_assert(is_same_v<typename compat_elem<const device float*>::type, float>, "pointer_element");
kernel void compat_misc(device const float* x [[buffer(0)]], device float* out [[buffer(1)]],
                        uint i [[thread_position_in_grid]]) {
    constexpr os_log logger("metalcall", "tests");
    logger.log_debug("value %f", x[i]);
    out[3 * i] = __metal_fabs(x[i], __METAL_MAYBE_FAST_MATH__) + float(compat_big) + float(compat_zero);
    out[3 * i + 1] = __metal_fmax3(x[i], 0.5f, -1.0f, __METAL_FAST_MATH__);
    out[3 * i + 2] = as_type<float>(__metal_simd_xor(as_type<uint>(x[i]))) == __metal_simd_xor(x[i]) ? 1.0f : 0.0f;
}
""",
])


@pytest.mark.parametrize("delta,modulo", [(1, 32), (3, 8), (5, 16), (0, 4)])
def test_shuffle_and_fill(device, rng, delta, modulo):
    n = 64
    a = rng.standard_normal(n).astype(np.float32)
    f = rng.standard_normal(n).astype(np.float32)
    out = np.zeros(2 * n, np.float32)
    written_for_32_lanes(KS.get(device, "compat_fill"))(n, a, f, out, np.array([delta, modulo], np.uint16), threadgroup=64)
    lane = np.arange(n) % 32
    base = np.arange(n) - lane % modulo
    l = lane % modulo
    j = l + delta
    down = np.where(j < modulo, a[np.minimum(base + j, n - 1)], f[np.clip(base + j - modulo, 0, n - 1)])
    up = np.where(l >= delta, a[np.clip(base + l - delta, 0, n - 1)], f[np.clip(base + l + modulo - delta, 0, n - 1)])
    assert_equal(out[0::2], down)
    assert_equal(out[1::2], up)


def test_traits_bfloat_constants_logging_and_builtins(device, rng):
    x = rng.standard_normal(32).astype(np.float32)
    out = np.zeros(96, np.float32)
    KS.get(device, "compat_misc")(32, x, out, threadgroup=32)
    assert_close(out[0::3], np.abs(x) + 3.0, rtol=1e-6)
    assert_close(out[1::3], np.maximum(x, 0.5), rtol=1e-6)
    assert_equal(out[2::3], np.ones(32))
