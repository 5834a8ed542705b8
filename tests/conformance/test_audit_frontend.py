"""The front end's token-level analyses (cpp/src/msl/analysis, passes) against valid MSL that
production kernels write: names a template parameter shares with a class, self-calls that
deduce another instantiation, overloads that differ only in address space given the address
of a thread-local value. Each kernel's output is checked against NumPy on every device of the
fixture; the constructs that must stay refused are checked for the exact rule.
"""

from __future__ import annotations

import numpy as np
import pytest

import metalcall as mc
from mcconf import HEADER, KernelSet, assert_equal

N = 16

# --- A template parameter named like a class of the source --------------------------------
# Inside the template, the parameter hides the class (C++ [temp.local]): `B * C` is a product.
# The rule "pointers name their address space" read it as a pointer type `B*` and refused it.
SHADOW_PREAMBLE = """
struct B { float x; };
struct C { int y; };
struct Scale { float s; };
"""

SHADOW = KernelSet([
    """
template <int B, int C> float prod(float x) { return x + (B * C); }
kernel void shadow_paren(device float* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    out[i] = prod<3, 5>(float(i));
}""",
    """
template <int B> float times(float x) { return B * x + x * B; }
kernel void shadow_times(device float* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    out[i] = times<7>(float(i));
}""",
    """
template <uint Scale, short C> struct W {
    float apply(float x) const { const int k = Scale * C; return x * float(k) + float(Scale * 2u); }
};
kernel void shadow_class_template(device float* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    W<4, 3> w;
    out[i] = w.apply(float(i));
}""",
    """
template <int B, int C = 2> float defaults(float x) { int r = (B * C); return x - float(r); }
kernel void shadow_default(device float* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    B b{1.0f};  // the class itself, outside the template
    out[i] = defaults<5>(float(i)) + b.x;
}""",
], preamble=SHADOW_PREAMBLE)


@pytest.mark.parametrize("name,expected", [
    ("shadow_paren", lambda x: x + 15),
    ("shadow_times", lambda x: 14 * x),
    ("shadow_class_template", lambda x: 12 * x + 8),
    ("shadow_default", lambda x: x - 10 + 1),
])
def test_template_parameter_named_like_a_class(device, name, expected):
    """`struct B {…}; template <int B> … (B * C)`: the parameter's value, not a pointer type
    (a CompileError "pointers name their address space" before)."""
    out = np.zeros(N, np.float32)
    SHADOW.get(device, name)(N, out)
    assert_equal(out, expected(np.arange(N, dtype=np.float32)).astype(np.float32))


def test_class_still_a_pointee_outside_the_template(device):
    """The class's own pointer without a space is still refused outside the template."""
    src = HEADER + SHADOW_PREAMBLE + """
template <int B> float g(float x) { return x * B; }
kernel void k(device float* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    B* p = nullptr; out[i] = g<2>(float(i)) + (p ? 1.0f : 0.0f);
}"""
    with pytest.raises(mc.CompileError, match=r"'B\*' has none \[MSL rule: pointers name their address space\]"):
        device.compile(src)


# --- Self-calls that deduce another instantiation ------------------------------------------
# `hsum(v[0])` in `template <class T> float hsum(T v)` given a float4 calls hsum<float>: a
# chain of distinct functions the compiler bounds, as `hsum<N - 1>(v)` is (MSL forbids
# recursion at run time, spec §1.4.4 of 1.x/2.x). Refused as recursion before.
DEDUCED = KernelSet([
    """
template <class T> float hsum(T v) {
    if constexpr (is_scalar_v<T>) return float(v);
    else return hsum(v[0]) + hsum(v[1]) + (vec_elements<T>::value > 2 ? float(v[vec_elements<T>::value - 1]) : 0.0f);
}
kernel void deduced_element(device const float4* x [[buffer(0)]], device const half2* h [[buffer(1)]],
                            device const int3* n [[buffer(2)]], device float* out [[buffer(3)]],
                            uint i [[thread_position_in_grid]]) {
    out[3 * i] = hsum(x[i]);
    out[3 * i + 1] = hsum(h[i]);
    out[3 * i + 2] = hsum(n[i]);
}""",
    """
template <int N> float nsum(float4 v) {
    if constexpr (N == 1) return v[0];
    else return nsum<N - 1>(v) + v[N - 1];
}
kernel void if_constexpr_count(device const float4* x [[buffer(0)]], device float* out [[buffer(1)]],
                               uint i [[thread_position_in_grid]]) {
    out[i] = nsum<4>(x[i]);
}""",
    """
struct Leaf { float a, b; };
struct Pair { Leaf l; Leaf r; };
struct Tree { Pair p; float w; };
template <class T> float total(T t) {
    if constexpr (is_same_v<T, float>) return t;
    else if constexpr (is_same_v<T, Leaf>) return total(t.a) + 2.0f * total(t.b);
    else if constexpr (is_same_v<T, Pair>) return total(t.l) - total(t.r);
    else return total(t.p) * total(t.w);
}
kernel void deduced_member(device const float* x [[buffer(0)]], device float* out [[buffer(1)]],
                           uint i [[thread_position_in_grid]]) {
    const device float* v = x + 5 * i;
    Tree t{{{v[0], v[1]}, {v[2], v[3]}}, v[4]};
    out[i] = total(t);
}""",
    """
template <typename T> float comp(const thread T& v, int k) {
    if constexpr (is_vector_v<T>) return comp(v.x, k) + float(k) * comp(v.w, k + 1);
    else return float(v) * float(k);
}
kernel void deduced_swizzle_component(device const float4* x [[buffer(0)]], device float* out [[buffer(1)]],
                                      uint i [[thread_position_in_grid]]) {
    float4 v = x[i];
    out[i] = comp(v, 2);
}""",
])


def test_self_calls_that_deduce_another_instantiation(device, rng):
    x = rng.integers(-8, 8, (N, 4)).astype(np.float32)
    h = rng.integers(-8, 8, (N, 2)).astype(np.float16)
    n = np.zeros((N, 4), np.int32)  # int3 is 16 bytes
    n[:, :3] = rng.integers(-100, 100, (N, 3))
    out = np.zeros(3 * N, np.float32)
    DEDUCED.get(device, "deduced_element")(N, x, h, n, out)
    got = out.reshape(N, 3)
    assert_equal(got[:, 0], x[:, 0] + x[:, 1] + x[:, 3])
    assert_equal(got[:, 1], h[:, 0].astype(np.float32) + h[:, 1].astype(np.float32))
    assert_equal(got[:, 2], (n[:, 0] + n[:, 1] + n[:, 2]).astype(np.float32))


def test_if_constexpr_count_down(device, rng):
    x = rng.integers(-8, 8, (N, 4)).astype(np.float32)
    out = np.zeros(N, np.float32)
    DEDUCED.get(device, "if_constexpr_count")(N, x, out)
    assert_equal(out, x.sum(axis=1))


def test_self_calls_on_members_and_components(device, rng):
    x = rng.integers(-8, 8, (N, 5)).astype(np.float32)
    out = np.zeros(N, np.float32)
    DEDUCED.get(device, "deduced_member")(N, x, out)
    assert_equal(out, ((x[:, 0] + 2 * x[:, 1]) - (x[:, 2] + 2 * x[:, 3])) * x[:, 4])
    v = rng.integers(-8, 8, (N, 4)).astype(np.float32)
    out = np.zeros(N, np.float32)
    DEDUCED.get(device, "deduced_swizzle_component")(N, v, out)
    assert_equal(out, v[:, 0] * 2 + 2 * (v[:, 3] * 3))


# A self-call passing an expression of another type (`f(v + 0.5f)` with T = int deduces
# f<float>) under `if constexpr` on T: the compiler bounds the chain. Refused as recursion
# before, and the CPU translation converted the argument to the caller's T (`int_arg<T>(…)`),
# so f<int> called f<int> again; the same conversion made a template calling another template
# of a deduced parameter pass it the caller's type.
DEDUCED_EXPRESSIONS = KernelSet([
    """
template <typename T> float from_int(T v) {
    if constexpr (is_same_v<T, int>) return from_int(v + 0.5f);
    else return v * 2.0f;
}
kernel void deduced_float_from_int(device const int* n [[buffer(0)]], device float* out [[buffer(1)]],
                                   uint i [[thread_position_in_grid]]) {
    out[i] = from_int(n[i]);
}""",
    """
template <typename T> float count_down(T v, int d) {
    if constexpr (is_floating_point_v<T>) { return v + float(d); }
    else { return count_down(v + 0.25f, d - 1); }
}
kernel void deduced_in_else_branch(device const int* n [[buffer(0)]], device float* out [[buffer(1)]],
                                   uint i [[thread_position_in_grid]]) {
    out[i] = count_down(n[i], 3);
}""",
    """
template <typename T> float halve(T v) { return float(v) / 2.0f; }
template <typename T> float caller(T x) { return halve(x + 0.5f); }
kernel void deduced_from_another_template(device const int* n [[buffer(0)]], device float* out [[buffer(1)]],
                                          uint i [[thread_position_in_grid]]) {
    out[i] = caller(n[i]);
}""",
])


@pytest.mark.parametrize("name,expected", [
    ("deduced_float_from_int", lambda n: (n + 0.5) * 2),
    ("deduced_in_else_branch", lambda n: n + 0.25 + 2),
    ("deduced_from_another_template", lambda n: (n + 0.5) / 2),
])
def test_self_calls_deducing_from_an_expression(device, rng, name, expected):
    n = rng.integers(-100, 100, N).astype(np.int32)
    out = np.zeros(N, np.float32)
    DEDUCED_EXPRESSIONS.get(device, name)(N, n, out)
    assert_equal(out, expected(n.astype(np.float64)).astype(np.float32))


STILL_RECURSIVE = {
    # v.yx of a float2 is a float2 again: the same instantiation.
    "same-width-swizzle": (
        "template <class T> float g(T v) { return v.x <= 0 ? 0.0f : 1.0f + g(v.yx); }\n",
        "a[i] = g(float2(a[i] + 1e8f, a[i] + 1e8f));",
        "function 'g' is recursive",
    ),
    # a pointer member may point to T's own type: a list walk is run-time recursion.
    "element-member": (
        "struct Node { device Node* next; float v; };\n"
        "template <class T> float len(T p) { return p ? 1.0f + len(p[0].next) : 0.0f; }\n",
        "a[i] = len((device Node*)nullptr);",
        "function 'len' is recursive",
    ),
    # a class template's T is fixed in its member: f(v[0]) splats back into the same f.
    "class-template-member": (
        "template <class T> struct S { static float f(T v) { return v[0] <= 0 ? 0.0f : 1.0f + f(v[0] - 1.0f); } };\n",
        "a[i] = S<float4>::f(float4(a[i] + 1e8f));",
        "function 'f' is recursive",
    ),
    # a non-template function: the element converts back to the parameter's type.
    "plain-function-element": (
        "float f(float4 v) { return v[0] <= 0 ? 0.0f : 1.0f + f(v[0] - 1.0f); }\n",
        "a[i] = f(float4(a[i] + 1e8f));",
        "function 'f' is recursive",
    ),
    # the whole parameter passed again.
    "deduced-whole": (
        "template <class T> float f(T v) { return v[0] <= 0 ? 0.0f : 1.0f + f(v - 1.0f); }\n",
        "a[i] = f(float4(a[i] + 1e8f));",
        "function 'f' is recursive",
    ),
    # each step adds one: T + T(1) is T again (int, float; short promotes to int, a fixed point).
    "deduced-expression-unguarded": (
        "template <typename T> T f(T v, int d) { return d == 0 ? v : f(v + T(1), d - 1); }\n",
        "a[i] = f(a[i], 3);",
        "function 'f' is recursive",
    ),
    # int + 0.5f is float, and f<float> calls f<float>: no `if constexpr` ends the chain.
    "deduced-float-from-int-unguarded": (
        "template <typename T> float f(T v) { return v > 100 ? float(v) : f(v + 0.5f); }\n",
        "a[i] = f(int(a[i]));",
        "function 'f' is recursive",
    ),
    "mutual-across-namespaces": (
        "namespace p { float g(float n); }\n"
        "namespace q { float h(float n) { return n <= 0 ? 0.0f : 1.0f + p::g(n - 1.0f); } }\n"
        "namespace p { float g(float n) { return q::h(n); } }\n",
        "a[i] = q::h(a[i] + 1e8f);",
        "is recursive",
    ),
    "through-a-named-functor-object": (
        "struct F;\nfloat g(float n);\n"
        "struct F { float operator()(float n) const { return n <= 0 ? 0.0f : 1.0f + g(n - 1.0f); } };\n"
        "float g(float n) { F f; return f.operator()(n); }\n",
        "a[i] = g(a[i] + 1e8f);",
        "recursive",
    ),
    # another class's f of the same name no longer hides A::f calling itself
    "member-beside-a-like-named-member": (
        "struct B { int f(int n) const { return n * 2; } };\n"
        "struct A { int f(int n) const { return n <= 0 ? 0 : 1 + f(n - 1); } };\n",
        "A a; a[i] = float(a.f(int(a[i]) + 100000000));",
        "function 'f' is recursive",
    ),
    "hidden-by-a-macro": (
        "#define AGAIN(x) step(x)\n"
        "float step(float n) { return n <= 0 ? 0.0f : 1.0f + AGAIN(n - 1.0f); }\n",
        "a[i] = step(a[i] + 1e8f);",
        "function 'step' is recursive",
    ),
    "through-a-functor": (
        "struct F { float operator()(float n) const { return n <= 0 ? 0.0f : 1.0f + g(n - 1.0f); }"
        " static float g(float n) { return F{}(n); } };\n",
        "a[i] = F{}(a[i] + 1e8f);",
        "recursive",
    ),
}


@pytest.mark.parametrize("name", sorted(STILL_RECURSIVE))
def test_run_time_recursion_stays_refused(device, name):
    prefix, body, message = STILL_RECURSIVE[name]
    src = (HEADER + prefix + "kernel void k(device float* a [[buffer(0)]], uint i [[thread_position_in_grid]]) {\n"
           + body + "\n}\n")
    with pytest.raises(mc.CompileError, match=message + r".*\[MSL rule: no recursion\]"):
        device.compile(src)


# --- Overloads that differ only in address space, given a thread value's address ----------
# `&t` of a local `float t` points into thread memory: MSL calls the `thread` overload. The
# address was passed untagged and the translation called the first (device) overload.
SPACE_PREAMBLE = """
float ld(device const float* p) { return p[0] + 1000.0f; }
float ld(thread const float* p) { return p[0] + 2000.0f; }
float ld(threadgroup const float* p) { return p[0] + 3000.0f; }
struct Acc { float m[2]; float s; };
"""

SPACES = KernelSet([
    """
kernel void space_local_address(device const float* x [[buffer(0)]], device float* out [[buffer(1)]],
                                uint i [[thread_position_in_grid]]) {
    float t = x[i] * 2.0f;
    out[i] = ld(&t);
}""",
    """
kernel void space_local_array_element(device const float* x [[buffer(0)]], device float* out [[buffer(1)]],
                                      uint i [[thread_position_in_grid]]) {
    float arr[3] = {x[i], x[i] + 1.0f, x[i] + 2.0f};
    out[i] = ld(&arr[2]) - ld(&x[i]);
}""",
    """
kernel void space_local_member(device const float* x [[buffer(0)]], device float* out [[buffer(1)]],
                               uint i [[thread_position_in_grid]]) {
    Acc a;
    a.m[0] = x[i]; a.m[1] = 3.0f * x[i]; a.s = -x[i];
    out[i] = ld(&a.m[1]) + 10000.0f * (ld(&a.s) - 2000.0f + x[i]);
}""",
    """
float helper(float v) { return ld(&v); }
kernel void space_value_parameter(device const float* x [[buffer(0)]], device float* out [[buffer(1)]],
                                  uint i [[thread_position_in_grid]]) {
    out[i] = helper(x[i]);
}""",
    """
kernel void space_loop_variable(device const float* x [[buffer(0)]], device float* out [[buffer(1)]],
                                uint i [[thread_position_in_grid]], uint l [[thread_position_in_threadgroup]]) {
    threadgroup float tg[64];
    tg[l] = x[i];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    float s = 0.0f;
    for (float v = 1.0f; v < 3.0f; v += 1.0f) s += ld(&v);
    out[i] = s + 10.0f * ld(&tg[l]);
}""",
], preamble=SPACE_PREAMBLE)


@pytest.mark.parametrize("name,expected", [
    ("space_local_address", lambda x: 2 * x + 2000),
    ("space_local_array_element", lambda x: (x + 2 + 2000) - (x + 1000)),
    ("space_local_member", lambda x: (3 * x + 2000) + 10000 * (-x + x)),
    ("space_value_parameter", lambda x: x + 2000),
    ("space_loop_variable", lambda x: (2001 + 2002) + 10 * (x + 3000)),
])
def test_address_of_a_thread_value_calls_the_thread_overload(device, rng, name, expected):
    x = rng.integers(-50, 50, N).astype(np.float32)
    out = np.zeros(N, np.float32)
    SPACES.get(device, name)(N, x, out)
    assert_equal(out, expected(x).astype(np.float32))


# Function objects that call other functions and function objects without a cycle (MLX's
# operator structs, ggml's helpers), and two classes of one name in two namespaces.
FUNCTORS = KernelSet([
    """
namespace a { struct F { float operator()(float x) const { return 2.0f * x; } }; }
namespace b { struct F { float operator()(float x) const { a::F f; return a::F{}(x) + f(1.0f) - 2.0f + 1.0f; } }; }
struct Sq { float operator()(float x) const { return x * x; } };
float twice_sq(float x) { Sq s; return 2.0f * s(x); }
struct Both { float operator()(float x) const { return twice_sq(x) + b::F()(x); } };
template <class Op> float apply(float x) { return Op()(x); }
kernel void functor_chain(device const float* x [[buffer(0)]], device float* out [[buffer(1)]],
                          uint i [[thread_position_in_grid]]) {
    out[i] = apply<Both>(x[i]) + Both{}.operator()(1.0f);
}""",
])


def test_function_objects_without_a_cycle(device, rng):
    x = rng.integers(-20, 20, N).astype(np.float32)
    out = np.zeros(N, np.float32)
    FUNCTORS.get(device, "functor_chain")(N, x, out)
    assert_equal(out, (2 * x * x + 2 * x + 1) + (2 + 2 + 1))


REFERENCE_OVERLOADS = HEADER + """
float rd(device const float& p) { return p + 1000.0f; }
float rd(thread const float& p) { return p + 2000.0f; }
kernel void space_reference_overloads(device const float* x [[buffer(0)]], device float* out [[buffer(1)]],
                                      uint i [[thread_position_in_grid]]) {
    float t = x[i];
    out[i] = rd(t) + 10000.0f * (rd(x[i]) - x[i] - 1000.0f);
}
"""


def test_reference_overloads_by_address_space(device, rng):
    """`rd(t)` of a local runs the thread overload, `rd(x[i])` the device one (the first
    definition served both before; tests/conformance/test_reference_space_overloads.py)."""
    x = rng.integers(-50, 50, N).astype(np.float32)
    out = np.zeros(N, np.float32)
    device.compile(REFERENCE_OVERLOADS).function("space_reference_overloads")(N, x, out)
    assert_equal(out, x + 2000)


# --- Variables, parameters and members named like a class --------------------------------
# A variable hides a class of the same name in its scope (C++ [basic.scope.hiding]): `scale * x`
# is a product. The rule "pointers name their address space" read `scale*` as a pointer type.
HIDING_PREAMBLE = """
struct scale { float s; };
struct bias { int b; };
"""

HIDING = KernelSet([
    """
float mul(float scale, float x) { return scale * x + (x * scale); }
kernel void hide_parameter(device const float* x [[buffer(0)]], device float* out [[buffer(1)]],
                           uint i [[thread_position_in_grid]]) {
    out[i] = mul(3.0f, x[i]);
}""",
    """
kernel void hide_kernel_parameter(device const float* x [[buffer(0)]], constant float& scale [[buffer(1)]],
                                  device float* out [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    const float v = x[i];
    out[i] = (scale * v);
}""",
    """
kernel void hide_local(device const float* x [[buffer(0)]], device float* out [[buffer(1)]],
                       uint i [[thread_position_in_grid]]) {
    float bias = 0.5f, v = x[i];
    const int scale = 4;
    out[i] = scale * v + (bias * v);
}""",
    """
struct Layer {
    float scale;
    float apply(float x) const { return scale * x; }
};
kernel void hide_member(device const float* x [[buffer(0)]], device float* out [[buffer(1)]],
                        uint i [[thread_position_in_grid]]) {
    Layer l{-2.0f};
    scale s{1.0f};  // the class itself, outside those scopes
    out[i] = l.apply(x[i]) + s.s;
}""",
], preamble=HIDING_PREAMBLE)


def test_variables_named_like_a_class(device, rng):
    x = rng.integers(-50, 50, N).astype(np.float32)
    for name, expected in [("hide_parameter", 6 * x), ("hide_local", 4 * x + 0.5 * x), ("hide_member", -2 * x + 1)]:
        out = np.zeros(N, np.float32)
        HIDING.get(device, name)(N, x, out)
        assert_equal(out, expected.astype(np.float32), err_msg=name)
    out = np.zeros(N, np.float32)
    HIDING.get(device, "hide_kernel_parameter")(N, x, np.float32(2.5), out)
    assert_equal(out, (2.5 * x).astype(np.float32))


def test_class_pointer_without_a_space_still_refused_beside_a_hiding_variable(device):
    src = HEADER + HIDING_PREAMBLE + """
float mul(float scale, float x) { return scale * x; }
kernel void k(device float* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    scale* p = (scale*)out; out[i] = mul(2.0f, p->s);
}"""
    with pytest.raises(mc.CompileError, match=r"'scale\*' has none \[MSL rule: pointers name their address space\]"):
        device.compile(src)
    # an elaborated `struct scale*` names the class even where a variable hides it
    src = HEADER + HIDING_PREAMBLE + """
kernel void k(device float* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    float scale = 2.0f;
    struct scale* p = (struct scale*)out; out[i] = scale * p[i + 4096].s;
}"""
    with pytest.raises(mc.CompileError, match=r"has none \[MSL rule: pointers name their address space\]"):
        device.compile(src)


# --- Functions of the source named like SIMD-group shuffles --------------------------------
# `my::simd_shuffle(v, 3)` under a lane test is the source's function, not MSL's: the pass that
# hoists MSL's shuffles out of lane tests (guarded_shuffles) wrote `my::mtl_shuffled_0`.
NAMED_LIKE_SHUFFLES = KernelSet([
    """
namespace my {
float simd_shuffle(float x, ushort n) { return x + float(n); }
float simd_broadcast(float x, ushort n) { return 2.0f * x + float(n); }
}
struct Q { static float simd_shuffle_down(float x, ushort n) { return x - float(n); } };
kernel void shuffle_named_functions(device const float* x [[buffer(0)]], device float* out [[buffer(1)]],
                                    uint i [[thread_position_in_grid]]) {
    float v = x[i], w = x[i], u = x[i];
    if (i % 3 == 0) v = my::simd_shuffle(v, 3);
    if (i & 1) w = my::simd_broadcast(w, 1);
    if (i < 5) u = Q::simd_shuffle_down(u, 2);
    out[3 * i] = v; out[3 * i + 1] = w; out[3 * i + 2] = u;
}""",
])


def test_functions_named_like_shuffles(device, rng):
    x = rng.integers(-50, 50, N).astype(np.float32)
    out = np.zeros(3 * N, np.float32)
    NAMED_LIKE_SHUFFLES.get(device, "shuffle_named_functions")(N, x, out)
    i = np.arange(N)
    got = out.reshape(N, 3)
    assert_equal(got[:, 0], np.where(i % 3 == 0, x + 3, x))
    assert_equal(got[:, 1], np.where(i & 1, 2 * x + 1, x))
    assert_equal(got[:, 2], np.where(i < 5, x - 2, x))


# --- Functions of one name in several classes or namespaces --------------------------------
# The recursion graph's nodes were names: `A::f` calling `h` calling `B::f` was refused as f
# recursive through h.
SAME_NAMES = KernelSet([
    """
struct Twice { float f(float x) const { return x * 2.0f; } };
float via_twice(float x) { Twice b; return b.f(x); }
struct PlusOne { float f(float x) const { return via_twice(x) + 1.0f; } };
kernel void same_name_members(device const float* x [[buffer(0)]], device float* out [[buffer(1)]],
                              uint i [[thread_position_in_grid]]) {
    PlusOne a;
    out[i] = a.f(x[i]);
}""",
    """
struct Inner { static float apply(float x) { return x * 2.0f; } };
float helper(float x) { return Inner::apply(x) + 1.0f; }
struct Outer { static float apply(float x) { return helper(x) * 3.0f; } };
namespace na { float get(float x) { return x - 1.0f; } }
float helper2(float x) { return na::get(x) * 5.0f; }
namespace nb { float get(float x) { return helper2(x) + 0.5f; } }
kernel void same_name_statics(device const float* x [[buffer(0)]], device float* out [[buffer(1)]],
                              uint i [[thread_position_in_grid]]) {
    out[i] = Outer::apply(x[i]) + 100.0f * nb::get(x[i]);
}""",
])


def test_functions_of_one_name_in_several_scopes(device, rng):
    x = rng.integers(-20, 20, N).astype(np.float32)
    out = np.zeros(N, np.float32)
    SAME_NAMES.get(device, "same_name_members")(N, x, out)
    assert_equal(out, 2 * x + 1)
    SAME_NAMES.get(device, "same_name_statics")(N, x, out)
    assert_equal(out, (2 * x + 1) * 3 + 100 * ((x - 1) * 5 + 0.5))
