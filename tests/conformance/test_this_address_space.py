"""Member functions qualified by the address space of `this` (issue P2.0 item 3): MSL overloads
special members, member functions and operators on where the object lives (`T() thread =
default; T() threadgroup = default; T() device = default; T() constant = default;`, as candle's
random.metal and reduce.metal write them; `float get() const device`; `T& operator=(...)
device`). The CPU and CUDA backends keep every object in one address space, so overloads that
then collide are merged; a `constant`-qualified member is a const one. Each spelling runs in a
kernel of ours checked against NumPy; overloads with different bodies, which merging would
silently change, are a CompileError on the translating backends."""

from __future__ import annotations

import numpy as np
import pytest

import metalcall as mc
from mcconf import KernelSet, assert_equal

KS = KernelSet([
    # Special members defaulted in each address space, constructors with initializers,
    # copy assignment in each address space (one defaulted, two with bodies), qualified
    # const members and operators, member functions declared in class and defined outside.
    """
struct tas_acc {
    float v;
    tas_acc() thread = default;
    tas_acc() threadgroup = default;
    tas_acc() device = default;
    tas_acc() constant = default;
    constexpr tas_acc(float x) thread : v(x) {}
    constexpr tas_acc(float x) threadgroup : v(x) {}
    tas_acc(const thread tas_acc& o) thread = default;
    tas_acc(const thread tas_acc& o) threadgroup = default;
    thread tas_acc& operator=(const thread tas_acc& o) thread = default;
    threadgroup tas_acc& operator=(const thread tas_acc& o) threadgroup { v = o.v; return *this; }
    device tas_acc& operator=(const thread tas_acc& o) device { v = o.v; return *this; }
    float get() const thread { return v; }
    float get() const threadgroup { return v; }
    float get() const device { return v; }
    float get() const constant { return v; }
    void twice() thread;
    void twice() threadgroup;
    void twice() device;
    tas_acc operator+(const thread tas_acc& o) const thread { return tas_acc(v + o.v); }
    tas_acc operator+(const thread tas_acc& o) const threadgroup { return tas_acc(v + o.v); }
};
void tas_acc::twice() thread { v *= 2; }
void tas_acc::twice() threadgroup { v *= 2; }
void tas_acc::twice() device { v *= 2; }

kernel void tas_members(device float* out [[buffer(0)]], device tas_acc* accs [[buffer(1)]],
                        uint i [[thread_position_in_grid]], uint l [[thread_index_in_threadgroup]]) {
    threadgroup tas_acc shared[8];
    tas_acc a = tas_acc(float(i));
    a.twice();                              // 2i
    shared[l] = a;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    shared[l].twice();                      // 4i
    tas_acc b = shared[l] + a;              // 6i
    accs[i] = b;
    accs[i].twice();                        // 12i
    out[i] = b.get() + shared[l].get() + accs[i].get();   // 22i
}
""",
    # A template with an unqualified and a threadgroup-qualified default constructor (candle's
    # MD<T>, RMS<T>), used in threadgroup memory and in registers; a constant object whose
    # members are qualified `constant` only.
    """
template <typename T>
struct tas_pair {
    T sum;
    uint count;
    constexpr tas_pair<T>() = default;
    constexpr tas_pair<T>() threadgroup = default;
    constexpr tas_pair<T>(T s, uint c) : sum(s), count(c) {}
};
struct tas_table {
    float scale;
    constexpr tas_table(float s) constant : scale(s) {}
    float apply(float x) constant { return x * scale; }
};
constant tas_table tas_k(0.5f);

kernel void tas_template(device const float* x [[buffer(0)]], device float* out [[buffer(1)]],
                         uint i [[thread_position_in_grid]], uint l [[thread_index_in_threadgroup]]) {
    threadgroup tas_pair<float> parts[8];
    parts[l] = tas_pair<float>(x[i], 1);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    tas_pair<float> total = tas_pair<float>(0.0f, 0);
    for (uint k = 0; k < 8; ++k) {
        total.sum += parts[k].sum;
        total.count += parts[k].count;
    }
    out[i] = tas_k.apply(total.sum) + float(total.count);
}
""",
])

N = 16


def test_members_qualified_by_address_space(device):
    out = np.zeros(N, np.float32)
    accs = np.zeros(N, np.float32)
    KS.get(device, "tas_members")(N, out, accs, threadgroup=8)
    i = np.arange(N, dtype=np.float32)
    assert_equal(out, 22 * i)
    assert_equal(accs, 12 * i)


def test_template_and_constant_qualified_members(device, rng):
    x = rng.integers(-20, 20, N).astype(np.float32)
    out = np.zeros(N, np.float32)
    KS.get(device, "tas_template")(N, x, out, threadgroup=8)
    group_sums = x.reshape(2, 8).sum(1)
    assert_equal(out, np.repeat(group_sums * 0.5 + 8, 8))


DIFFERENT_BODIES = """#include <metal_stdlib>
using namespace metal;
struct tas_bad {
    float v;
    float get() device { return v; }
    float get() threadgroup { return v * 2; }
};
kernel void k(device float* o [[buffer(0)]], device tas_bad* b [[buffer(1)]], uint i [[thread_position_in_grid]]) {
    o[i] = b[i].get();
}
"""


def test_overloads_with_different_bodies_are_refused(device):
    if device.backend not in ("cpu", "cuda"):
        pytest.skip("Metal compiles both overloads; only the translating backends merge them")
    with pytest.raises(mc.CompileError) as info:
        device.compile(DIFFERENT_BODIES)
    e = info.value
    assert str(e).splitlines()[0] == (
        "source.metal:6:11: error: 'get' is overloaded by the address space of `this` with a different body: the "
        "CPU and CUDA backends keep every object in one address space, so only overloads that do the same can be "
        "merged")
    assert (e.line, e.column) == (6, 11)


SPECIALISATIONS = """#include <metal_stdlib>
using namespace metal;
template <class P> struct Traits;
template <class T> struct Traits<device T*> { static constexpr constant int k = 1; typedef T type; };
template <class T> struct Traits<threadgroup T*> { static constexpr constant int k = %d; typedef T type; };
kernel void k(device int* o [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    typename Traits<threadgroup float*>::type x = 1.5f;
    o[2 * i] = Traits<device float*>::k;
    o[2 * i + 1] = Traits<threadgroup float*>::k + int(x * 2.0f);
}
"""


def test_pointer_specialisations_by_address_space(device):
    """A class template specialised for `device T*` and `threadgroup T*`: the same body is merged
    (MLX's pointer_element), different bodies are refused, naming the template, where the second
    was dropped silently before 2026-12-06 (`Traits<threadgroup float*>::k` read the device one's)."""
    o = np.zeros(2, np.int32)
    device.compile(SPECIALISATIONS % 1).function("k")(1, o)
    assert_equal(o, np.array([1, 1 + 3], np.int32))
    if device.backend not in ("cpu", "cuda", "metal-sim"):
        pytest.skip("Metal keeps both specialisations; only the translating backends merge them")
    with pytest.raises(mc.CompileError, match=r"class template 'Traits' is specialised for pointers of two address "
                                              r"spaces with different bodies") as info:
        device.compile(SPECIALISATIONS % 2)
    assert (info.value.line, info.value.column) == (5, 27)
