"""Checked mode reads every function declarator the plain translator accepts (docs/design.md,
checked mode): out-of-class member definitions (`A<B>::f(`, `A::B::f(`, explicit specialisations
`template <>`, trailing `const thread`), operators (`operator []`, `operator()`, `operator=`,
`operator+=`, conversions, `operator->`), constructors with member initialisers, and functions
returning pointers or references, with the expressions around them that looked like declarations
(`f(a * b, w[k])` read as `float *q, t[4]`; `operator [] (…)` read as an array of pointers named
`operator`). Before, checked mode refused MLX's FFT (`ReadWriter<float, float2>::load_padded`) and
SPIRV-Cross's argument-buffer helpers (`device T* operator [] (size_t i) const`).

Each kernel reaches `out` (or a private array) through the form's pointer parameter, returned
pointer or reference at `far` (0, or thousands of elements away when `at` is a victim Buffer's
address): in bounds it gives the same values on the plain, checked and sandboxed checked CPU
devices; out of bounds the checked devices raise ExecutionError naming what faulted, the victim
untouched. The in-process checked runs go in a subprocess, so a regression fails instead of
killing pytest.
"""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

import metalcall as mc

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "security"))
from attack_kernels import HEADER, KernelLibraries, assert_checked_in_process, checked_kernel, open_mode  # noqa: E402

pytestmark = pytest.mark.skipif("cpu" not in mc.backends(), reason="checked mode is a feature of the cpu backend")

OUT = "argument 'out'"
PRIVATE = "private array"
MUL = "float mul2(float a, float b) { return a * b; }\n"

# name: (program-scope prefix, body, what the fault names, out after a run with far = 0 on [1, 2, 3, 4])
CASES = {
    # ---- out-of-class member definitions ----
    # MLX's FFT: an explicit specialisation's member, defined outside its class with `const thread`,
    # whose body passes `a * b, w[k]` to a call.
    "explicit-specialisation-member": (
        MUL + "template <typename T, typename U> struct RW { T scale; void load(int n, const device U* w, ulong k) const thread; "
        "void put(device U* w, ulong k) const thread; };\n"
        "template <> void RW<float, float>::load(int n, const device float* w, ulong k) const thread "
        "{ float s = mul2(n * scale, w[k]); (void)s; }\n"
        "template <> void RW<float, float>::put(device float* w, ulong k) const thread { w[k] = mul2(scale * 2.0f, w[k]); }",
        "RW<float, float> r{7.0f}; r.load(3, out, far); r.put(out + 2, far);", OUT, [1, 2, 42, 4]),
    "template-member-outside": (
        "template <class T> struct W { T s; void put(device T* p, ulong k) const; };\n"
        "template <class T> void W<T>::put(device T* p, ulong k) const { p[k] = s; }",
        "W<float> w{42.0f}; w.put(out + 1, far);", OUT, [1, 42, 3, 4]),
    "nested-qualified-member": (
        "struct A { struct B { static void put(device float* p, ulong k, float v); }; };\n"
        "void A::B::put(device float* p, ulong k, float v) { p[k] = v; }",
        "A::B::put(out, far + 3, 42.0f);", OUT, [1, 2, 3, 42]),
    "member-outside-const-device": (
        "struct Cell { float v; float get(ulong k) const device; };\n"
        "float Cell::get(ulong k) const device { return (&v)[k] + 2.0f; }",
        "device Cell* c = (device Cell*)out; out[0] = c[2].get(far) + 0.0f;", OUT, [5, 2, 3, 4]),
    # ---- operators ----
    # SPIRV-Cross's descriptor arrays: `device T* operator [] (size_t i) const`.
    "operator-subscript-spaced-returns-pointer": (
        "struct Slot { device float* value; };\n"
        "struct Slots { thread Slot* ptr; device float* operator [] (size_t i) const { return ptr[i].value; } };",
        "Slot s[1] = {{out}}; Slots v{s}; v[0][far + 1] = 42.0f;", OUT, [1, 42, 3, 4]),
    "operator-subscript-returns-reference": (
        "struct View { device float* p; device float& operator[](ulong i) const { return p[i]; } };",
        "View v{out}; v[far + 2] = 42.0f;", OUT, [1, 2, 42, 4]),
    "operator-subscript-const-reference": (
        "template <typename T> struct CView { const device T* p; const device T& operator [] (size_t i) const { return p[i]; } };",
        "CView<float> v{out}; out[3] = v[far + 1] + 40.0f;", OUT, [1, 2, 3, 42]),
    "operator-call": (
        "struct Get { device float* p; float operator()(ulong i, float a, float b) const { return p[i] + a * b; } };",
        "Get g{out}; out[0] = g(far + 1, 5.0f, 8.0f);", OUT, [42, 2, 3, 4]),
    "operator-assign-and-add-assign": (
        "struct Acc { device float* p; ulong k; thread Acc& operator=(float v) { p[k] = v; return *this; } "
        "thread Acc& operator+=(float v) { p[k] += v; return *this; } };",
        "Acc a{out, far + 2}; a = 40.0f; a += 2.0f;", OUT, [1, 2, 42, 4]),
    "operator-conversion-to-pointer": (
        "struct Box { device float* p; operator device float*() const { return p; } };",
        "Box b{out}; device float* q = b; q[far + 3] = 42.0f;", OUT, [1, 2, 3, 42]),
    "operator-arrow": (
        "struct Q { float a; float b; };\n"
        "struct QV { device Q* q; device Q* operator->() const { return q; } };",
        "QV v{(device Q*)out + far}; v->b = 42.0f;", OUT, [1, 42, 3, 4]),
    # ---- constructors with member initialisers ----
    "constructor-member-initialisers": (
        MUL + "struct R { device float* p; ulong k; float v; "
        "R(device float* q, ulong j, float a, float b) : p(q), k{j}, v(mul2(a * b, q[j])) {} "
        "void put() { p[k] = v; } };",
        "R r(out, far + 1, 10.0f, 2.1f); r.put();", OUT, [1, 42, 3, 4]),
    "delegating-constructor": (
        "struct D2 { device float* p; D2(device float* q, ulong j) : p(q + j) {} "
        "D2(device void* q) : D2(static_cast<device float*>(q), 0) {} };",
        "D2 d(out + far, 3); d.p[0] = 42.0f; D2 e((device void*)out); e.p[0] += 0.0f;", OUT, [1, 2, 3, 42]),
    # ---- pointer- and reference-returning functions ----
    "function-returning-device-pointer": (
        "device float* at_k(device float* p, ulong k) { return p + k; }",
        "*at_k(out, far + 2) = 42.0f;", OUT, [1, 2, 42, 4]),
    "function-returning-reference": (
        "device float& ref_k(device float* p, ulong k) { return p[k]; }",
        "ref_k(out, far) = 42.0f;", OUT, [42, 2, 3, 4]),
    "function-returning-thread-pointer": (
        "thread float* pick(thread float* a, ulong k) { return a + k; }",
        "float m[4] = {0, 1, 2, 3}; *pick(m, far + 3) = 42.0f; out[1] = m[3];", PRIVATE, [1, 42, 3, 4]),
    "template-returning-pointer": (
        "template <typename T> device T* step_k(device T* p, ulong k) { return &p[k]; }",
        "step_k<float>(out, far + 1)[0] = 42.0f;", OUT, [1, 42, 3, 4]),
    # ---- expressions that look like declarations: `a * b, w[k]` in a call's, a braced list's,
    # a constructor call's arguments ----
    "product-then-subscript-in-a-call": (
        MUL, "float x = 6.0f, y = 7.0f; out[0] = mul2(x * y, out[far + 1]) / 2.0f;", OUT, [42, 2, 3, 4]),
    "product-then-subscript-in-a-braced-list": (
        "", "float x = 20.0f, y = 2.0f; float2 v = {x * y, out[far + 1]}; out[0] = v.x + v.y;", OUT, [42, 2, 3, 4]),
    "product-then-subscript-in-a-constructor": (
        "", "float x = 20.0f, y = 2.0f; float2 v = float2(x * y, out[far + 1]); out[3] = v.x + v.y;", OUT, [1, 2, 3, 42]),
    "product-then-subscript-returned-braced": (
        "float2 pair(device float* p, ulong k, float x, float y) { return {x * y, p[k]}; }",
        "float2 v = pair(out, far + 1, 20.0f, 2.0f); out[2] = v.x + v.y;", OUT, [1, 2, 42, 4]),
}

# `thread` pointers: parameters of each form become checked pointers, and what a function of each
# form returns keeps its bounds (operators' parameter lists were not read as parameter lists,
# qualified names, operators, conversions and trailing return types not as returning a pointer:
# each stayed a plain pointer, its accesses unchecked).
THREAD = {
    "thread-param-qualified-member": (
        "struct TA2 { struct TB2 { static void put_t(thread float* p, ulong k, float v); }; };\n"
        "void TA2::TB2::put_t(thread float* p, ulong k, float v) { p[k] = v; }",
        "float m[2] = {0, 0}; TA2::TB2::put_t(m, far + 1, 42.0f); out[0] = m[1];"),
    "thread-param-explicit-specialisation-member": (
        "template <typename T> struct TRW { T s; void put_t(thread T* p, ulong k) const thread; };\n"
        "template <> void TRW<float>::put_t(thread float* p, ulong k) const thread { p[k] = s; }",
        "float m[2] = {0, 0}; TRW<float> r{42.0f}; r.put_t(m, far + 1); out[0] = m[1];"),
    "thread-param-template-member-outside": (
        "template <typename T> struct TRW2 { T s; void put_t(thread T* p, ulong k) const; };\n"
        "template <typename T> void TRW2<T>::put_t(thread T* p, ulong k) const { p[k] = s; }",
        "float m[2] = {0, 0}; TRW2<float> r{42.0f}; r.put_t(m, far + 1); out[0] = m[1];"),
    "thread-param-operator-call": (
        "struct G { float operator()(thread float* p, ulong k) const { return p[k]; } };",
        "float m[2] = {40, 2}; G g; out[0] = g(m, far) + g(m, far + 1);"),
    "thread-param-operator-assign": (
        "struct TA { thread float* p; thread TA& operator=(thread float* q) { p = q; return *this; } };",
        "float m[2] = {0, 0}; TA a{nullptr}; a = m; a.p[far + 1] = 42.0f; out[0] = m[1];"),
    "thread-param-operator-add-assign": (
        "struct TP { thread float* p; thread TP& operator+=(ulong k) { p += k; return *this; } };",
        "float m[2] = {0, 0}; TP a{m}; a += far + 1; *a.p = 42.0f; out[0] = m[1];"),
    "thread-param-constructor": (
        "struct TR { thread float* p; ulong k; TR(thread float* q, ulong j) : p(q), k{j} {} void put(float v) { p[k] = v; } };",
        "float m[2] = {0, 0}; TR r(m, far + 1); r.put(42.0f); out[0] = m[1];"),
    "thread-param-function-specialisation": (
        "template <class T> thread T* sp(thread T* a, ulong k) { return a + k; }\n"
        "template <> thread float* sp<float>(thread float* a, ulong k) { return a + k; }",
        "float m[2] = {0, 0}; *sp<float>(m, far + 1) = 42.0f; out[0] = m[1];"),
    "thread-return-operator-subscript-spaced": (
        "struct TV { thread float* p; thread float* operator [] (ulong i) const { return p + i; } };",
        "float m[2] = {0, 0}; TV v{m}; *v[far + 1] = 42.0f; out[0] = m[1];"),
    "thread-return-operator-arrow": (
        "struct TQ { float a; float b; }; struct TQV { thread TQ* q; thread TQ* operator->() const { return q; } };",
        "TQ s[1] = {{0, 0}}; TQV v{s + far}; v->b = 42.0f; out[0] = s[0].b;"),
    "thread-return-conversion": (
        "struct TB { thread float* p; operator thread float*() const { return p; } };",
        "float m[2] = {0, 0}; TB b{m}; thread float* q = b; q[far + 1] = 42.0f; out[0] = m[1];"),
    "thread-return-qualified-member": (
        "struct QA { static thread float* pick(thread float* a, ulong k); };\n"
        "thread float* QA::pick(thread float* a, ulong k) { return a + k; }",
        "float m[2] = {0, 0}; *QA::pick(m, far + 1) = 42.0f; out[0] = m[1];"),
    "thread-return-template-member-outside": (
        "template <class T> struct QW { thread T* at(thread T* a, ulong k) const; };\n"
        "template <class T> thread T* QW<T>::at(thread T* a, ulong k) const { return a + k; }",
        "float m[2] = {0, 0}; QW<float> w; *w.at(m, far + 1) = 42.0f; out[0] = m[1];"),
    "thread-return-reference-qualified-member": (
        "struct QR { static thread float& ref(thread float* a, ulong k); };\n"
        "thread float& QR::ref(thread float* a, ulong k) { return a[k]; }",
        "float m[2] = {0, 0}; QR::ref(m, far + 1) = 42.0f; out[0] = m[1];"),
    "thread-return-trailing": (
        "auto tr(thread float* p, ulong k) -> thread float* { return p + k; }",
        "float m[2] = {0, 0}; *tr(m, far + 1) = 42.0f; out[0] = m[1];"),
    "thread-return-lambda-trailing": (
        "", "float m[2] = {0, 0}; auto f = [](thread float* a, ulong k) -> thread float* { return a + k; }; "
            "*f(m, far + 1) = 42.0f; out[0] = m[1];"),
    # MLX's FFT: `using RadixFunc = void (*)(thread vec<T, 2>*, thread vec<T, 2>*)`, a template's
    # argument: the function type's parameters are checked pointers as the function's are.
    "thread-param-function-pointer-type": (
        "using Fn = void (*)(thread float*, ulong, float);\n"
        "void put3(thread float* a, ulong k, float v) { a[k] = v; }\n"
        "template <Fn f> void call_f(thread float* a, ulong k) { f(a, k, 42.0f); }",
        "float m[2] = {0, 0}; call_f<put3>(m, far + 1); out[0] = m[1];"),
}
CASES.update({k: (prefix, body, PRIVATE, [42, 2, 3, 4]) for k, (prefix, body) in THREAD.items()})
# An explicit specialisation of a member defined outside its class beside the class's own
# definition, which calls a SIMD-group function (MLX's FFT `ReadWriter<float, float2>::write()`):
# the CPU gives both the SIMD-group frame's parameter (the specialisation did not compile).
CASES["explicit-specialisation-beside-a-simd-member"] = (
    "template <typename T> struct SW { device float* o; void write(T v) const { o[0] = float(simd_sum(v)); } };\n"
    "template <> void SW<int>::write(int v) const { o[0] = float(v + 1); }",
    "SW<float> a{out + far}; a.write(42.0f); SW<int> b{out + 1}; b.write(41);", OUT, [42, 42, 3, 4])
# A `for`'s init-statement declares a checked array as a statement does (it stayed a C array, its
# index unchecked).
CASES["for-init-array"] = (
    "", "float s = 0.0f; for (float b[2] = {40, 2}; s < 1.0f; s += 1.0f) out[0] = b[far] + b[far + 1];",
    PRIVATE, [42, 2, 3, 4])
# Declarations the rewrite must still split (one checked array each) next to the forms above.
CASES["scalar-then-array-still-split"] = (
    "", "float x = 1.0f, t[4] = {1, 2, 3, 4}; thread float *q = &x, u[2] = {40, 0}; "
        "out[0] = u[0] + t[far + 1] + *q - x;",
    PRIVATE, [42, 2, 3, 4])



def _spaced(name: str, prefix: str, body: str) -> tuple[str, str]:
    """The case's declarations in a namespace of its own (one library holds every case)."""
    space = "ns_" + name.replace("-", "_")
    return f"namespace {space} {{\n{prefix}\n}}", f"using namespace {space}; {body}"


LIBRARIES = KernelLibraries({k: (*_spaced(k, c[0], c[1]), c[-1]) for k, c in CASES.items()})
NAMES = sorted(CASES)


@pytest.mark.parametrize("mode", ["cpu", "checked", "checked-sandbox"])
def test_in_bounds_values(mode):
    """Every kernel with far = 0 gives its hand-derived values on the plain and both checked devices."""
    _, lib = LIBRARIES.get(mode)
    for name in NAMES:
        out = np.array([1, 2, 3, 4], np.float32)
        getattr(lib, name.replace("-", "_"))(1, out, np.uint64(0))
        assert out.tolist() == CASES[name][3], name


def _what(name: str) -> str:
    return CASES[name][2]


@pytest.mark.parametrize("name", NAMES)
def test_out_of_bounds_raises_in_the_sandboxed_checked_device(name):
    LIBRARIES.assert_checked("checked-sandbox", name, _what(name))


def test_out_of_bounds_raises_on_the_in_process_checked_device():
    """The same calls on Device("cpu", checked=True, sandbox=False), in a subprocess."""
    assert_checked_in_process(__file__, "NAMES", "_what")


# What checked mode refuses with a CompileError (the plain device compiles each): an array among
# other declarators of a `for`'s init-statement, which cannot become a statement of its own.
REFUSED = {
    "for-init-scalar-then-array": "for (float a = 0.0f, b[2] = {2, 0}; a < 1.0f; a += 1.0f) out[0] = b[far];",
    "for-init-two-arrays": "for (float b[2] = {2, 0}, c[2] = {1, 1}; b[1] < 1.0f; b[1] += c[0]) out[0] = b[far];",
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_arrays_among_a_for_statements_declarators_are_refused(name):
    source = HEADER + checked_kernel("", REFUSED[name])
    lib = open_mode("cpu").compile(source)
    out = np.array([1, 2, 3, 4], np.float32)
    lib.k(1, out, np.uint64(0))
    assert out.tolist() == [2, 2, 3, 4]
    with pytest.raises(mc.CompileError) as info:
        open_mode("checked").compile(source)
    assert "array 'b' declared together with others in one statement" in str(info.value), str(info.value)[:500]
