"""Functions overloaded only by address space (device / constant / threadgroup / thread
pointers), beyond test_language.py's basic case: templates, constant data, pointer
arithmetic in the overloads, and one overload passing its pointer on to another; and
member functions overloaded by the address space of `this` (MLX's complex_t)."""

from __future__ import annotations

import numpy as np

from mcconf import KernelSet, assert_close

KS = KernelSet([
    """
template <typename T> T first_two(const device T* p) { return p[0] + p[1]; }
template <typename T> T first_two(const threadgroup T* p) { return (p[0] + p[1]) * T(100); }
template <typename T> T first_two(const constant T* p) { return (p[0] + p[1]) * T(10000); }
float tail(const device float* p) { const device float* q = p + 1; return *q; }
float tail(const threadgroup float* p) { return first_two(p + 1); }
kernel void as_templates(const device float* in [[buffer(0)]], constant float* k [[buffer(1)]],
                         device float* out [[buffer(2)]], uint lid [[thread_position_in_threadgroup]],
                         uint i [[thread_position_in_grid]]) {
    threadgroup float tg[3];
    if (lid < 3) tg[lid] = in[lid];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    out[i] = first_two(in) + first_two(tg) + first_two(k) + tail(in) + tail(tg) * 1000000.0f;
}
""",
    """
template <typename T> struct as_cplx {
    T re, im;
    constexpr as_cplx(T r, T i) thread : re(r), im(i) {};
    constexpr as_cplx() thread : re(0), im(0) {};
    constexpr as_cplx() threadgroup : re(0), im(0) {};
    constexpr as_cplx() device : re(0), im(0) {};
    template <typename U> constexpr as_cplx(U x) thread : re(static_cast<T>(x)), im(0) {}
    template <typename U> constexpr as_cplx(U x) threadgroup : re(static_cast<T>(x)), im(0) {}
    T norm() const thread { return re * re + im * im; }
    T norm() const device { return re * re + im * im; }
    T norm() const constant { return re * re + im * im; }
};
kernel void as_members(device const float2* a [[buffer(0)]], device float* o [[buffer(1)]],
                       uint i [[thread_position_in_grid]]) {
    as_cplx<float> c(a[i].x, a[i].y);
    as_cplx<float> z;
    as_cplx<float> w(2);
    o[i] = c.norm() + z.norm() + w.norm();
}
""",
])


def test_members_overloaded_by_this_address_space(device):
    a = np.arange(64, dtype=np.float32).reshape(32, 2)
    out = np.zeros(32, np.float32)
    KS.get(device, "as_members")(32, a, out)
    assert_close(out, (a.astype(np.float64) ** 2).sum(1) + 4, rtol=1e-6)


def test_template_and_constant_overloads(device):
    x = np.array([1.0, 2.0, 4.0], np.float32)
    k = np.array([0.5, 0.25], np.float32)
    out = np.zeros(32, np.float32)
    KS.get(device, "as_templates")(32, x, k, out, threadgroup=32)
    expect = 3 + 300 + 7500 + 2 + (2 + 4) * 100 * 1e6
    assert_close(out, np.full(32, expect), rtol=1e-6)
