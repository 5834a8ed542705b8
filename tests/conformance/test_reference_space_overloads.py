"""Functions overloaded only by the address space of a reference parameter
(`float rd(device const float&)` beside `float rd(thread const float&)`): Metal's overload
resolution sees the argument's address space, so each call runs the overload of its argument's
space. The CPU and CUDA targets have no address spaces; the translator tags the overloads and
each call with those spaces (passes/address_space_overloads, argument_spaces), and refuses a
call whose argument's space it cannot read. Every device of the fixture, checked mode included.
"""

from __future__ import annotations

import numpy as np
import pytest

import metalcall as mc
from mcconf import HEADER, KernelSet, assert_equal

N = 16

PREAMBLE = """
float rd(device const float& p) { return p + 1000.0f; }
float rd(thread const float& p) { return p + 2000.0f; }
float rd(threadgroup const float& p) { return p + 3000.0f; }
float rd(constant const float& p) { return p + 4000.0f; }
float rd(float a, float b) { return a * b; }  // another arity: untouched
struct Pair { float a; float b[2]; };
constant float table[4] = {10.0f, 20.0f, 30.0f, 40.0f};
float through_thread(thread const float& r) { return rd(r); }
float through_device(device const float& r) { return rd(r); }
"""

FORMS = KernelSet([
    """
kernel void ref_local(device const float* x [[buffer(0)]], device float* out [[buffer(1)]],
                      uint i [[thread_position_in_grid]]) {
    float t = x[i];
    auto u = x[i] * 2.0f;
    out[i] = rd(t) + 10000.0f * (rd(u) - 2.0f * x[i] - 2000.0f);
}""",
    """
kernel void ref_parameters(device const float* x [[buffer(0)]], device float* out [[buffer(1)]],
                           uint i [[thread_position_in_grid]]) {
    float t = x[i];
    out[i] = through_thread(t) + 10000.0f * (through_device(x[i]) - x[i] - 1000.0f);
}""",
    """
kernel void ref_device_pointer(device const float* x [[buffer(0)]], device float* out [[buffer(1)]],
                               uint i [[thread_position_in_grid]]) {
    device const float* p = x + i;
    out[i] = rd(x[i]) + rd(*p) + rd((*(x + i))) + rd(p[0]);
}""",
    """
kernel void ref_constant(device const float* x [[buffer(0)]], constant float* c [[buffer(1)]],
                         device float* out [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    out[i] = rd(c[i]) + rd(table[i % 4]) + 0.0f * rd(x[i]);
}""",
    """
kernel void ref_threadgroup(device const float* x [[buffer(0)]], device float* out [[buffer(1)]],
                            uint i [[thread_position_in_grid]], uint l [[thread_position_in_threadgroup]]) {
    threadgroup float tg[64];
    tg[l] = x[i];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    out[i] = rd(tg[l]);
}""",
    """
kernel void ref_members(device const Pair* s [[buffer(0)]], device float* out [[buffer(1)]],
                        uint i [[thread_position_in_grid]]) {
    device const Pair& r = s[i];
    Pair q = s[i];
    out[4 * i] = rd(s[i].a);
    out[4 * i + 1] = rd(r.b[1]);
    out[4 * i + 2] = rd((s + i)->b[0]);
    out[4 * i + 3] = rd(q.b[0]);
}""",
    """
kernel void ref_temporaries(device const float* x [[buffer(0)]], device float* out [[buffer(1)]],
                            uint i [[thread_position_in_grid]]) {
    out[i] = rd(x[i] + 1.0f) + rd(float(x[i])) + rd(2.0f) + rd(x[i], 3.0f) + rd(-x[i]);
}""",
    """
kernel void ref_conditional(device const float* x [[buffer(0)]], device float* out [[buffer(1)]],
                            uint i [[thread_position_in_grid]]) {
    float t = x[i], u = 2.0f * x[i];
    out[i] = rd(i % 2 ? t : u) + 10000.0f * (rd(i % 2 ? x[i] : x[0]) - 1000.0f);
}""",
], preamble=PREAMBLE)


def _x(rng, n=N):
    return rng.integers(-50, 50, n).astype(np.float32)


@pytest.mark.parametrize("name,expected", [
    ("ref_local", lambda x: x + 2000),
    ("ref_parameters", lambda x: x + 2000),
    ("ref_device_pointer", lambda x: 4 * (x + 1000)),
    ("ref_temporaries", lambda x: (x + 1 + 2000) + (x + 2000) + 2002 + 3 * x + (-x + 2000)),
    ("ref_threadgroup", lambda x: x + 3000),
])
def test_each_argument_form_calls_its_space_overload(device, rng, name, expected):
    x = _x(rng)
    out = np.zeros(N, np.float32)
    FORMS.get(device, name)(N, x, out)
    assert_equal(out, expected(x).astype(np.float32))


def test_constant_pointer_and_program_scope_array(device, rng):
    x = _x(rng)
    c = _x(rng)
    out = np.zeros(N, np.float32)
    FORMS.get(device, "ref_constant")(N, x, c, out)
    table = np.array([10, 20, 30, 40], np.float32)
    assert_equal(out, (c + 4000) + (table[np.arange(N) % 4] + 4000))


def test_members_and_elements_have_their_objects_space(device, rng):
    s = _x(rng, 3 * N).reshape(N, 3)
    out = np.zeros(4 * N, np.float32)
    FORMS.get(device, "ref_members")(N, s, out)
    got = out.reshape(N, 4)
    assert_equal(got[:, 0], s[:, 0] + 1000)
    assert_equal(got[:, 1], s[:, 2] + 1000)
    assert_equal(got[:, 2], s[:, 1] + 1000)
    assert_equal(got[:, 3], s[:, 1] + 2000)


def test_conditional_of_one_space(device, rng):
    x = _x(rng)
    out = np.zeros(N, np.float32)
    FORMS.get(device, "ref_conditional")(N, x, out)
    odd = np.arange(N) % 2 == 1
    thread = np.where(odd, x, 2 * x) + 2000
    dev = np.where(odd, x, x[0]) + 1000
    assert_equal(out, thread + 10000 * (dev - 1000))


MIXED = KernelSet([
    """
float mix2(device const float& a, thread const float& b) { return a - b; }
float mix2(thread const float& a, device const float& b) { return 10.0f * a - b; }
float mix2(thread const float& a, thread const float& b) { return 100.0f * a - b; }
kernel void ref_two_parameters(device const float* x [[buffer(0)]], device float* out [[buffer(1)]],
                               uint i [[thread_position_in_grid]]) {
    float t = 2.0f * x[i], t2 = 3.0f * x[i];
    out[3 * i] = mix2(x[i], t);
    out[3 * i + 1] = mix2(t, x[i]);
    out[3 * i + 2] = mix2(t, t2 + 1.0f);
}""",
    """
template <typename T> T tw(device const T& v) { return v * T(2); }
template <typename T> T tw(thread const T& v) { return v * T(3); }
kernel void ref_template_set(device const float* x [[buffer(0)]], device const int* n [[buffer(1)]],
                             device float* out [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    float t = x[i];
    int k = n[i] + 1;
    out[4 * i] = tw(x[i]);
    out[4 * i + 1] = tw(t);
    out[4 * i + 2] = float(tw(n[i]));
    out[4 * i + 3] = float(tw<int>(k));
}""",
])


def test_two_parameters_of_mixed_spaces(device, rng):
    x = _x(rng)
    out = np.zeros(3 * N, np.float32)
    MIXED.get(device, "ref_two_parameters")(N, x, out)
    got = out.reshape(N, 3)
    assert_equal(got[:, 0], x - 2 * x)
    assert_equal(got[:, 1], 10 * 2 * x - x)
    assert_equal(got[:, 2], 100 * 2 * x - (3 * x + 1))


def test_template_overload_set(device, rng):
    x = _x(rng)
    n = rng.integers(-50, 50, N).astype(np.int32)
    out = np.zeros(4 * N, np.float32)
    MIXED.get(device, "ref_template_set")(N, x, n, out)
    got = out.reshape(N, 4)
    assert_equal(got[:, 0], 2 * x)
    assert_equal(got[:, 1], 3 * x)
    assert_equal(got[:, 2], (2 * n).astype(np.float32))
    assert_equal(got[:, 3], (3 * (n + 1)).astype(np.float32))


def test_identical_bodies_stay_merged(device, rng):
    """Overloads of one body (MLX's complex operator+= per space) need no tag: any argument form works."""
    src = HEADER + """
struct C { float re, im; };
void operator+=(thread C& a, const thread C& b) { a.re += b.re; a.im += b.im; }
void operator+=(device C& a, const thread C& b) { a.re += b.re; a.im += b.im; }
C make(float v) { return C{v, -v}; }
kernel void k(device C* c [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    C t = make(1.0f);
    t += make(2.0f);
    c[i] += t;
}"""
    c = _x(rng, 2 * N).reshape(N, 2)
    fn = device.compile(src).function("k")
    got = c.copy()
    fn(N, got)
    assert_equal(got, c + np.array([3, -3], np.float32))


REFUSED_BODY = """
kernel void k(device const float* x [[buffer(0)]], device float* out [[buffer(1)]],
              uint i [[thread_position_in_grid]]) {
    float t = x[i];
    %s
}"""

REFUSED = {
    "call-result": (
        "float get(device const float* x, uint i) { return x[i]; }\n",
        "out[i] = rd(get(x, i));",
        r"cannot tell which address-space overload of 'rd' is called: argument 1 \(`get\(x, i\)`\) is a call's result",
    ),
    "conditional-of-two-spaces": (
        "",
        "out[i] = rd(i > 2 ? x[i] : t);",
        r"cannot tell which address-space overload of 'rd' is called: argument 1 \(`i > 2 \? x\[i\] : t`\) is a "
        r"conditional of two address spaces",
    ),
    "auto-reference": (
        "",
        "auto& r = x[i]; out[i] = rd(r) + t;",
        r"cannot tell which address-space overload of 'rd' is called: argument 1 \(`r`\) is `r`, whose declaration "
        r"names no address space",
    ),
    "class-member": (
        "struct H { float m; float get() const { return rd(m); } };\n",
        "H h{t}; out[i] = h.get();",
        r"cannot tell which address-space overload of 'rd' is called: argument 1 \(`m`\) is `m`",
    ),
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_unreadable_argument_space_is_refused(device, name):
    prefix, body, message = REFUSED[name]
    src = (HEADER + "float rd(device const float& p) { return p + 1000.0f; }\n"
           "float rd(thread const float& p) { return p + 2000.0f; }\n" + prefix + REFUSED_BODY % body)
    with pytest.raises(mc.CompileError, match=message + r".*\[rule: a call of functions overloaded by the "
                                                        r"address space of a reference"):
        device.compile(src)


def test_operators_with_different_bodies_are_refused(device):
    src = HEADER + """
struct C { float re; };
void operator+=(thread C& a, const thread C& b) { a.re += b.re; }
void operator+=(device C& a, const thread C& b) { a.re += 2.0f * b.re; }
kernel void k(device C* c [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    C t{1.0f};
    c[i] += t;
}"""
    with pytest.raises(mc.CompileError, match=r"'operator\+=' is overloaded by the address space of a reference "
                                              r"parameter with different bodies"):
        device.compile(src)


NAMESPACED = HEADER + """
namespace A { namespace B {
  float put(device float& d, float v);
  float put(thread float& d, float v);
  float sum(device const float* p, uint n);
  float sum(threadgroup const float* p, uint n);
} }
namespace C { namespace B {
  float put(device float& d, float v);
  float put(thread float& d, float v);
} }
namespace D { float put(device float& d, float v) { d = v * 3.0f; return 7.0f; } }  // one overload alone
float A::B::put(device float& d, float v) { d = v + 1.0f; return 1.0f; }
float A::B::put(thread float& d, float v) { d = v + 2.0f; return 2.0f; }
float C::B::put(device float& d, float v) { d = v + 10.0f; return 10.0f; }
float C::B::put(thread float& d, float v) { d = v + 20.0f; return 20.0f; }
float A::B::sum(device const float* p, uint n) { float s = 0; for (uint k = 0; k < n; ++k) s += p[k]; return s; }
float A::B::sum(threadgroup const float* p, uint n) { float s = 0; for (uint k = 0; k < n; ++k) s -= p[k]; return s; }
kernel void k(device const float* x [[buffer(0)]], device float* out [[buffer(1)]],
              uint i [[thread_position_in_grid]], uint l [[thread_position_in_threadgroup]]) {
    threadgroup float tg[16];
    tg[l] = x[i];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    float t;
    const float a = A::B::put(t, x[i]);        // thread: t = x + 2
    const float b = A::B::put(out[6 * i], t);  // device: x + 3
    float u;
    const float c = C::B::put(u, x[i]);        // thread: u = x + 20
    const float d = C::B::put(out[6 * i + 1], u);  // device: x + 30
    const float e = D::put(out[6 * i + 2], x[i]);  // 3x
    out[6 * i + 3] = a + 10.0f * b + 100.0f * c + 1000.0f * d + e;
    out[6 * i + 4] = A::B::sum(x, 4u);
    out[6 * i + 5] = A::B::sum(tg, 4u);
}"""


def test_namespaced_out_of_line_overloads(device, rng):
    """Overloads by reference and pointer space declared in nested namespaces and defined out of
    them (`float A::B::put(thread float&, …) {`), with the same names in another namespace and a
    single overload in a third: each call runs its own namespace's overload of its argument's space
    (before 2026-12-06 the definitions were taken for class members: "redefinition of 'put'")."""
    x = _x(rng)
    out = np.zeros(6 * N, np.float32)
    device.compile(NAMESPACED).function("k")(N, x, out, threadgroup=N)
    got = out.reshape(N, 6)
    assert_equal(got[:, 0], x + 3)
    assert_equal(got[:, 1], x + 30)
    assert_equal(got[:, 2], 3 * x)
    np.testing.assert_array_equal(got[:, 3], np.full(N, 2 + 10 * 1 + 100 * 20 + 1000 * 10 + 7, np.float32))
    np.testing.assert_allclose(got[:, 4], np.full(N, x[:4].sum()), rtol=1e-6)
    np.testing.assert_allclose(got[:, 5], np.full(N, -x[:4].sum()), rtol=1e-6)


def test_value_overload_beside_reference_overloads(device, rng):
    """`rd(int)` beside `rd(device const float&)` and `rd(thread const float&)`: an int argument
    (a variable or a literal) calls rd(int), a float its space's overload, as Metal's overload
    resolution does (the call was ambiguous on the CPU and CUDA before 2026-12-06)."""
    src = HEADER + """
float rd(device const float& p) { return p + 1000.0f; }
float rd(thread const float& p) { return p + 2000.0f; }
float rd(int k) { return float(k) * 2.0f; }
kernel void k(device const float* x [[buffer(0)]], device const int* n [[buffer(1)]],
              device float* out [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    const int m = n[i];
    const float t = x[i];
    out[4 * i] = rd(m);
    out[4 * i + 1] = rd(7) + rd(n[i]);
    out[4 * i + 2] = rd(t);
    out[4 * i + 3] = rd(x[i]);
}"""
    x = _x(rng)
    n = rng.integers(-50, 50, N).astype(np.int32)
    out = np.zeros(4 * N, np.float32)
    device.compile(src).function("k")(N, x, n, out)
    got = out.reshape(N, 4)
    assert_equal(got[:, 0], (2 * n).astype(np.float32))
    assert_equal(got[:, 1], (14 + 2 * n).astype(np.float32))
    assert_equal(got[:, 2], x + 2000)
    assert_equal(got[:, 3], x + 1000)


MEMBERS_DIFFERENT = {
    "constructor": """
struct Acc {
    float s;
    Acc(const device float& p) : s(p) {}
    Acc(const thread float& p) : s(10.0f * p) {}
};
kernel void k(device float* o [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    float t = 2.0f;
    Acc a(o[0]);
    Acc b(t);
    o[1 + i] = a.s + b.s;
}""",
    "member-function": """
struct Acc {
    float s = 0.0f;
    void add(const device float& p) { s += p; }
    void add(const thread float& p) { s += 10.0f * p; }
};
kernel void k(device float* o [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    Acc a;
    float t = 2.0f;
    a.add(o[0]);
    a.add(t);
    o[1 + i] = a.s;
}""",
}


@pytest.mark.parametrize("name", sorted(MEMBERS_DIFFERENT))
def test_members_with_different_bodies_are_refused(device, name):
    """Constructors and member functions overloaded by a reference parameter's space with different
    bodies are refused, naming the parameter's space (a constructor's initializers count as its
    body: before 2026-12-06 the second constructor was dropped and `Acc b(t)` ran the first,
    silently; the member functions' refusal named `this`)."""
    what = "Acc" if name == "constructor" else "add"
    with pytest.raises(mc.CompileError, match=rf"'{what}' \(a member function or constructor\) is overloaded by the "
                                              r"address space of a reference parameter with different bodies"):
        device.compile(HEADER + MEMBERS_DIFFERENT[name])


def test_constructors_with_one_body_are_merged(device):
    """Constructors by a reference parameter's space that do the same (SPIRV-Cross's
    spvStorageMatrix) keep working: the first serves every argument."""
    src = HEADER + """
struct Acc {
    float s;
    Acc(const device float& p) : s(p * 3.0f) {}
    Acc(const thread float& p) : s(p * 3.0f) {}
};
kernel void k(device float* o [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    float t = o[0] + 1.0f;
    Acc a(o[0]);
    Acc b(t);
    o[1 + i] = a.s + 10.0f * b.s;
}"""
    o = np.array([2.0, 0.0], np.float32)
    device.compile(src).function("k")(1, o)
    assert_equal(o, np.array([2.0, 6.0 + 10.0 * 9.0], np.float32))


OUT_OF_CLASS = """
struct Acc {
    float s = 0.0f;
    void add(const device float& p);
    void add(const thread float& p);
};
void Acc::add(const device float& p) { s += 3.0f * p; }
void Acc::add(const thread float& p) { s += %s * p; }
kernel void k(device float* o [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    Acc a;
    float t = o[0] + 1.0f;
    a.add(o[0]);
    a.add(t);
    o[1 + i] = a.s;
}"""


def test_members_defined_out_of_their_class(device):
    """Member functions declared per reference space in their class and defined out of it: one body
    serves both (before 2026-12-06 both definitions were left out, and the kernel referred to an
    undefined Acc::add); different bodies are refused."""
    o = np.array([2.0, 0.0], np.float32)
    device.compile(HEADER + OUT_OF_CLASS % "3.0f").function("k")(1, o)
    assert_equal(o, np.array([2.0, 3.0 * 2.0 + 3.0 * 3.0], np.float32))
    with pytest.raises(mc.CompileError, match=r"'add' \(a member function or constructor\) is overloaded by the "
                                              r"address space of a reference parameter with different bodies"):
        device.compile(HEADER + OUT_OF_CLASS % "10.0f")
