"""Functions overloaded only by address space (device / constant / threadgroup / thread
pointers), beyond test_language.py's basic case: templates, constant data, pointer
arithmetic in the overloads, and one overload passing its pointer on to another."""

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
])


def test_template_and_constant_overloads(device):
    x = np.array([1.0, 2.0, 4.0], np.float32)
    k = np.array([0.5, 0.25], np.float32)
    out = np.zeros(32, np.float32)
    KS.get(device, "as_templates")(32, x, k, out, threadgroup=32)
    expect = 3 + 300 + 7500 + 2 + (2 + 4) * 100 * 1e6
    assert_close(out, np.full(32, expect), rtol=1e-6)
