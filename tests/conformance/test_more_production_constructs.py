"""Constructs of the public MSL sources surveyed for issue P2.0 (candle, mistral.rs, TNN: docs/
msl-corpus.md), each in a kernel of our own checked against NumPy: `__restrict__` on the
parameters of template kernels; `assert` (Apple's <metal_assert>: no effect, the condition not
evaluated); a source's own generic `template <typename T> float dot(T, T)` beside the standard
library's (the library's is the better match for vectors, as Apple's non-template overloads
are) and its own overloads for its own structs (`fma(Bfloat4_, Bfloat4_, float4)`, which the
library's element-wise fma must leave to them); a scalar
where dot takes a vector (`dot(s, 1)`: MSL converts it); `extern "C" struct` (a type has no
linkage); a kernel named like a library function that calls that function (TNN's
`kernel void abs(...)` calling `abs(x)`: no recursion)."""

from __future__ import annotations

import numpy as np
import pytest

import metalcall as mc
from mcconf import KernelSet, assert_close, assert_equal

KS = KernelSet([
    (["mpc_gather_f", "mpc_gather_h"], """
template <typename T, typename OUT_T>
[[kernel]] void mpc_gather(const device T *__restrict__ src [[buffer(0)]],
                           const device int *__restrict index [[buffer(1)]],
                           device OUT_T *__restrict dst [[buffer(2)]],
                           uint i [[thread_position_in_grid]]) {
    dst[i] = OUT_T(src[index[i]]);
}
template [[host_name("mpc_gather_f")]] [[kernel]] void mpc_gather<float, float>(
    const device float *__restrict__ src [[buffer(0)]], const device int *__restrict index [[buffer(1)]],
    device float *__restrict dst [[buffer(2)]], uint i [[thread_position_in_grid]]);
template [[host_name("mpc_gather_h")]] [[kernel]] void mpc_gather<half, float>(
    const device half *__restrict__ src [[buffer(0)]], const device int *__restrict index [[buffer(1)]],
    device float *__restrict dst [[buffer(2)]], uint i [[thread_position_in_grid]]);
"""),
    """
kernel void mpc_assert(device int* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    int calls = 0;
    assert(i < 1000000);
    assert(++calls > 100);   // not evaluated, as Apple's assert without asserts enabled
    out[i] = int(i) * 10 + calls;
}
""",
    """
template <typename T> inline float mpc_sum(T v);
template <> inline float mpc_sum(float4 v) { return v.x + v.y + v.z + v.w; }
struct mpc_pair { float4 lo; float4 hi; };
template <> inline float mpc_sum(mpc_pair v) { return mpc_sum(v.lo) + mpc_sum(v.hi); }
template <typename T> inline T mpc_mul(T a, T b);
template <> inline mpc_pair mpc_mul(mpc_pair a, mpc_pair b) { return mpc_pair{a.lo * b.lo, a.hi * b.hi}; }
// The source's own generic dot, as mistral.rs's paged attention writes it.
template <typename T> inline float dot(T a, T b) { return mpc_sum(mpc_mul<T>(a, b)); }
struct mpc_half2 { half x; half y; };
struct mpc_half4 { mpc_half2 x; mpc_half2 y; };
// The source's own fma overloads for its own types, beside the library's (mistral.rs's Bfloat4_).
inline float2 fma(mpc_half2 a, mpc_half2 b, float2 c) {
    return float2(fma(float(a.x), float(b.x), c.x), fma(float(a.y), float(b.y), c.y));
}
inline float4 fma(mpc_half4 a, mpc_half4 b, float4 c) {
    const float2 lo = fma(a.x, b.x, c.xy), hi = fma(a.y, b.y, c.zw);
    return float4(lo.x, lo.y, hi.x, hi.y);
}
kernel void mpc_overloads(const device float4* a [[buffer(0)]], const device float4* b [[buffer(1)]],
                          device float* out [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    const float4 x = a[i], y = b[i];
    out[5 * i + 0] = dot(x, y);                               // the library's
    out[5 * i + 1] = dot(mpc_pair{x, y}, mpc_pair{y, x});     // the source's
    mpc_half4 hx{{half(x.x), half(x.y)}, {half(x.z), half(x.w)}}, hy{{half(y.x), half(y.y)}, {half(y.z), half(y.w)}};
    out[5 * i + 2] = mpc_sum(fma(hx, hy, float4(1.0f)));      // the source's fma
    out[5 * i + 3] = dot(x, 1);                               // 1 converts to float4(1)
    out[5 * i + 4] = distance(y, 0.0f);
}
""",
    """
extern "C" struct mpc_params {
    uint scale;
    uint offset;
};
kernel void mpc_extern_struct(device uint* out [[buffer(0)]], constant mpc_params& p [[buffer(1)]],
                              uint i [[thread_position_in_grid]]) {
    out[i] = i * p.scale + p.offset;
}
""",
    """
kernel void abs(const device float4* in [[buffer(0)]], device float4* out [[buffer(1)]],
                uint i [[thread_position_in_grid]]) {
    out[i] = abs(in[i]);   // metal::abs: a kernel is never called
}
""",
])

N = 32


def test_restrict_on_template_kernel_parameters(device, rng):
    src = rng.standard_normal(N).astype(np.float32)
    index = rng.integers(0, N, N).astype(np.int32)
    dst = np.zeros(N, np.float32)
    KS.get(device, "mpc_gather_f")(N, src, index, dst)
    assert_equal(dst, src[index])
    KS.get(device, "mpc_gather_h")(N, src.astype(np.float16), index, dst)
    assert_equal(dst, src.astype(np.float16)[index].astype(np.float32))


def test_assert_has_no_effect(device):
    out = np.zeros(N, np.int32)
    KS.get(device, "mpc_assert")(N, out)
    assert_equal(out, np.arange(N) * 10)


def test_source_overloads_beside_the_library(device, rng):
    a = rng.standard_normal((N, 4)).astype(np.float32)
    b = rng.standard_normal((N, 4)).astype(np.float32)
    out = np.zeros(5 * N, np.float32)
    KS.get(device, "mpc_overloads")(N, a, b, out)
    ah, bh = a.astype(np.float16).astype(np.float64), b.astype(np.float16).astype(np.float64)
    expected = np.stack([(a * b).sum(1), 2 * (a * b).sum(1), (ah * bh + 1).sum(1), a.sum(1),
                         np.sqrt((b.astype(np.float64) ** 2).sum(1))], axis=1).ravel()
    assert_close(out, expected, rtol=1e-5, atol=1e-5)


def test_extern_c_struct(device):
    out = np.zeros(N, np.uint32)
    KS.get(device, "mpc_extern_struct")(N, out, np.array([(3, 7)], dtype=[("scale", np.uint32), ("offset", np.uint32)])[0])
    assert_equal(out, np.arange(N) * 3 + 7)


def test_kernel_named_like_a_library_function(device, rng):
    x = rng.standard_normal((N, 4)).astype(np.float32)
    out = np.zeros((N, 4), np.float32)
    KS.get(device, "abs")(N, x, out)
    assert_equal(out, np.abs(x))


def test_recursion_is_still_refused_where_the_arguments_fit(device):
    if device.backend not in ("cpu", "cuda"):
        pytest.skip("the rule is the translating backends' (docs/msl-rules.md)")
    src = ("#include <metal_stdlib>\nusing namespace metal;\n"
           "float mpc_down(float x, float step = 1.0f) { return x > 0 ? mpc_down(x - step) : x; }\n"
           "kernel void k(device float* o [[buffer(0)]], uint i [[thread_position_in_grid]]) { o[i] = mpc_down(o[i]); }\n")
    with pytest.raises(mc.CompileError) as info:
        device.compile(src)
    assert str(info.value).splitlines()[0] == (
        "source.metal:3:61: error: function 'mpc_down' is recursive: MSL does not support recursive function calls "
        "[MSL rule: no recursion]")
