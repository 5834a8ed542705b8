"""Template kernels instantiated with fewer arguments than parameters: the rest take the
parameters' defaults, which may name earlier parameters (MLX writes its kernels so:
`template <typename T, typename AccT = T, int N_READS = 4>`), and template kernels whose
attribute list holds a limit computed from their parameters
(`[[kernel, max_total_threads_per_threadgroup(WM * WN * 32)]]`); and ggml's style:
instantiations through a typedef of the kernel's function type, function constants
whose index is a constant expression (`[[function_constant(FC_BASE + 1)]]`), template
parameters that are function pointers; MLX's array parameters without [[buffer(i)]]
(`constant const int64_t strides[3]`, a pointer)."""

from __future__ import annotations

import numpy as np

from mcconf import KernelSet, assert_equal

KS = KernelSet([
    (["tdef_f", "tdef_h", "tdef_i"], """
template <typename T, typename AccT = T, int N = 3>
kernel void tdef(device const T* x [[buffer(0)]], device AccT* y [[buffer(1)]], uint i [[thread_position_in_grid]]) {
    y[i] = AccT(x[i]) * AccT(N);
}
template [[host_name("tdef_f")]] kernel void tdef<float>(device const float*, device float*, uint);
template [[host_name("tdef_h")]] [[kernel]] decltype(tdef<half, float>) tdef<half, float>;
template [[host_name("tdef_i")]] [[kernel]] decltype(tdef<int, int, 5>) tdef<int, int, 5>;
"""),
    """
template <typename T, int WM, int WN>
[[kernel, max_total_threads_per_threadgroup(WM * WN * 32)]] void tlimit(device T* x [[buffer(0)]],
                                                                         uint i [[thread_position_in_grid]]) {
    x[i] = T(WM * 10 + WN);
}
template [[host_name("tlimit_2_3")]] [[kernel]] decltype(tlimit<float, 2, 3>) tlimit<float, 2, 3>;
""",
    (["tggml_f", "tggml_i"], """
#define FC_BASE 1200
constant short FC_op [[function_constant(FC_BASE + 0)]];
constant bool FC_flag [[function_constant((FC_BASE + 1) * 1)]];
template <typename T>
kernel void tggml_impl(device T* x [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    x[i] = T(FC_op) + (FC_flag ? T(100) : T(0));
}
typedef decltype(tggml_impl<float>) tggml_t;
template [[host_name("tggml_f")]] kernel tggml_t tggml_impl<float>;
template [[host_name("tggml_i")]] kernel tggml_t tggml_impl<int>;
"""),
    (["tfp_a", "tfp_b"], """
void tfp_deq_a(device const float* p, short i, thread float4& out) { out = float4(p[i]); }
void tfp_deq_b(device const float* p, short i, thread float4& out) { out = float4(p[i] * 2.0f); }
template <short R, typename q_t, void (*deq)(device const q_t*, short, thread float4&)>
kernel void tfp(device const q_t* x [[buffer(0)]], device float* y [[buffer(1)]], uint i [[thread_position_in_grid]]) {
    float4 v;
    deq(x, short(i), v);
    y[i] = v.x * R;
}
typedef decltype(tfp<1, float, tfp_deq_a>) tfp_t;
template [[host_name("tfp_a")]] kernel tfp_t tfp<1, float, tfp_deq_a>;
template [[host_name("tfp_b")]] kernel tfp_t tfp<3, float, tfp_deq_b>;
"""),
    (["tarr_f"], """
template <typename T>
[[kernel]] void tarr(device const T* a, device T* c, constant const int64_t strides[3],
                     uint3 index [[thread_position_in_grid]]) {
    c[index.x] = a[index.x * strides[0] + strides[2]];
}
template [[host_name("tarr_f")]] [[kernel]] decltype(tarr<float>) tarr<float>;
"""),
])


def test_array_parameters(device):
    a = np.arange(64, dtype=np.float32)
    c = np.zeros(16, np.float32)
    KS.get(device, "tarr_f")(16, a, c, np.array([3, 0, 1], np.int64))
    assert_equal(c, np.arange(16) * 3 + 1)


def test_function_pointer_template_parameters(device):
    x = np.arange(16, dtype=np.float32)
    y = np.zeros(16, np.float32)
    KS.get(device, "tfp_a")(16, x, y)
    assert_equal(y, x)
    KS.get(device, "tfp_b")(16, x, y)
    assert_equal(y, x * 6)


def test_ggml_style_instantiation_and_constant_indices(device):
    x = np.zeros(16, np.float32)
    KS.get(device, "tggml_f", {"FC_op": 7, "FC_flag": True})(16, x)
    assert_equal(x, np.full(16, 107.0))
    xi = np.zeros(16, np.int32)
    KS.get(device, "tggml_i", {1200: 3, 1201: False})(16, xi)
    assert_equal(xi, np.full(16, 3))


def test_attribute_list_with_computed_limit(device):
    x = np.zeros(64, np.float32)
    KS.get(device, "tlimit_2_3")(64, x)
    assert_equal(x, np.full(64, 23.0))


def test_default_template_arguments(device):
    x = np.arange(8, dtype=np.float32)
    y = np.zeros(8, np.float32)
    KS.get(device, "tdef_f")(8, x, y)
    assert_equal(y, x * 3)
    y[:] = 0
    KS.get(device, "tdef_h")(8, x.astype(np.float16), y)
    assert_equal(y, x * 3)
    yi = np.zeros(8, np.int32)
    KS.get(device, "tdef_i")(8, np.arange(8, dtype=np.int32), yi)
    assert_equal(yi, np.arange(8) * 5)
