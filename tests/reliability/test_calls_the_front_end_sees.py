"""Recursion and function pointers through every spelling (issue P2.4 item 2). MSL has no
recursive calls and no function pointers outside [[visible]] function tables (spec §5.1,
MSL 2.3+), which metalcall does not offer. Before, the rules saw only a plain `f(…)` call and a
spelled-out `T (*p)(…)` declarator: recursion spelled `R::f(n - 1)`, `this->f(n - 1)`,
`f<T>(n - 1)`, `(*this)(n - 1)`, `R r; r(n - 1)` in R's operator() or a lambda applied to itself
passed and overflowed the stack
with a large n (SIGSEGV: the interpreter died), and a function pointer made from an integer, a
lambda (`+[]`), a function's address or a function passed to a template ran host code through
it. Each is now a CompileError naming the rule, on the plain and the checked CPU device; the
compile-time uses MSL code makes of functions (template arguments, aliases for template
parameters, `decltype` in explicit instantiations) still run."""

from __future__ import annotations

import numpy as np
import pytest

import metalcall as mc

HEADER = "#include <metal_stdlib>\nusing namespace metal;\n"


def kernel(body: str, prefix: str = "") -> str:
    return HEADER + prefix + "kernel void k(device float* a [[buffer(0)]], uint i [[thread_position_in_grid]]) {\n" + body + "\n}\n"


RECURSIVE = {
    "static-member-qualified": kernel(
        "  a[i] = float(R::f(int(a[i]) + 100000000));",
        "struct R { static int f(int n) { return n <= 0 ? 0 : 1 + R::f(n - 1); } };\n",
    ),
    "namespace-qualified": kernel(
        "  a[i] = float(ns::f(int(a[i]) + 100000000));",
        "namespace ns { int f(int n) { return n <= 0 ? 0 : 1 + ns::f(n - 1); } }\n",
    ),
    "member-through-this": kernel(
        "  R r; a[i] = float(r.f(int(a[i]) + 100000000));",
        "struct R { int f(int n) { return n <= 0 ? 0 : 1 + this->f(n - 1); } };\n",
    ),
    "member-through-star-this": kernel(
        "  R r; a[i] = float(r.f(int(a[i]) + 100000000));",
        "struct R { int f(int n) { return n <= 0 ? 0 : 1 + (*this).f(n - 1); } };\n",
    ),
    "template-call": kernel(
        "  a[i] = float(f<int>(int(a[i]) + 100000000));",
        "template <typename T> T f(T n) { return n <= 0 ? T(0) : T(1) + f<T>(n - 1); }\n",
    ),
    "template-member-through-this": kernel(
        "  R r; a[i] = float(r.f<int>(int(a[i]) + 100000000));",
        "struct R { template <typename T> T f(T n) { return n <= 0 ? T(0) : T(1) + this->template f<T>(n - 1); } };\n",
    ),
    "mutual-through-qualified-and-template": kernel(
        "  a[i] = float(R::f<int>(int(a[i]) + 100000000));",
        "template <typename T> T g(T n);\n"
        "struct R { template <typename T> static T f(T n) { return n <= 0 ? T(0) : g<T>(n - 1); } };\n"
        "template <typename T> T g(T n) { return T(1) + R::f<T>(n); }\n",
    ),
    "function-object-star-this": kernel(
        "  a[i] = float(R()(int(a[i]) + 100000000));",
        "struct R { int operator()(int n) const { return n <= 0 ? 0 : 1 + (*this)(n - 1); } };\n",
    ),
    "function-object-new-object": kernel(
        "  a[i] = float(R{}(int(a[i]) + 100000000));",
        "struct R { int operator()(int n) const { return n <= 0 ? 0 : 1 + R{}(n - 1); } };\n",
    ),
    "function-object-named-operator": kernel(
        "  a[i] = float(R()(int(a[i]) + 100000000));",
        "struct R { int operator()(int n) const { return n <= 0 ? 0 : 1 + operator()(n - 1); } };\n",
    ),
    "function-object-own-variable": kernel(
        "  a[i] = float(R()(int(a[i]) + 100000000));",
        "struct R { int operator()(int n) const { R r; return n <= 0 ? 0 : 1 + r(n - 1); } };\n",
    ),
    # Objects whose class the tokens show: a reference or pointer to *this, a temporary, a
    # local variable (also in a static member, in a free function, of a derived class).
    "member-through-reference-to-this": kernel(
        "  R r; a[i] = float(r.f(int(a[i]) + 100000000));",
        "struct R { int f(int n) { thread R& s = *this; return n <= 0 ? 0 : 1 + s.f(n - 1); } };\n",
    ),
    "member-through-pointer-to-this": kernel(
        "  R r; a[i] = float(r.f(int(a[i]) + 100000000));",
        "struct R { int f(int n) { thread R* p = this; return n <= 0 ? 0 : 1 + p->f(n - 1); } };\n",
    ),
    "member-of-a-temporary": kernel(
        "  R r; a[i] = float(r.f(int(a[i]) + 100000000));",
        "struct R { int f(int n) { return n <= 0 ? 0 : 1 + R().f(n - 1); } };\n",
    ),
    "static-member-through-a-local-object": kernel(
        "  a[i] = float(R::f(int(a[i]) + 100000000));",
        "struct R { static int f(int n) { R r; return n <= 0 ? 0 : 1 + r.f(n - 1); } };\n",
    ),
    "mutual-member-and-free-function": kernel(
        "  R r; a[i] = float(r.f(int(a[i]) + 100000000));",
        "int g(int n);\nstruct R { int f(int n) { return n <= 0 ? 0 : g(n - 1); } };\nint g(int n) { R r; return 1 + r.f(n); }\n",
    ),
    "base-member-through-derived-object": kernel(
        "  D d; a[i] = float(d.f(int(a[i]) + 100000000));",
        "struct B { int f(int n); };\nstruct D : B { int g(int n) { return f(n); } };\n"
        "int B::f(int n) { D d; return n <= 0 ? 0 : 1 + d.g(n - 1); }\n",
    ),
    "class-template-qualified": kernel(
        "  a[i] = float(R<int>::f(int(a[i]) + 100000000));",
        "template <class T> struct R { static int f(int n) { return n <= 0 ? 0 : 1 + R<T>::f(n - 1); } };\n",
    ),
    "qualified-through-alias": kernel(
        "  a[i] = float(R::f(int(a[i]) + 100000000));",
        "struct R { static int f(int n); };\nusing G = R;\nint R::f(int n) { return n <= 0 ? 0 : 1 + G::f(n - 1); }\n",
    ),
    "function-object-template-temporary": kernel(
        "  a[i] = float(R<int>{}(int(a[i]) + 100000000));",
        "template <class T> struct R { int operator()(int n) const { return n <= 0 ? 0 : 1 + R<T>{}(n - 1); } };\n",
    ),
    "function-object-operator-call-on-temporary": kernel(
        "  a[i] = float(R()(int(a[i]) + 100000000));",
        "struct R { int operator()(int n) const { return n <= 0 ? 0 : 1 + R{}.operator()(n - 1); } };\n",
    ),
    "function-object-reference-to-this": kernel(
        "  a[i] = float(R()(int(a[i]) + 100000000));",
        "struct R { int operator()(int n) const { const thread R& s = *this; return n <= 0 ? 0 : 1 + s(n - 1); } };\n",
    ),
    "generic-lambda-self-through-a-copy": kernel(
        "  auto f = [](auto s, int n) -> int { auto t = s; return n <= 0 ? 0 : 1 + t(t, n - 1); };\n"
        "  a[i] = float(f(f, int(a[i]) + 100000000));"
    ),
    "generic-lambda-self-operator-call": kernel(
        "  auto f = [](auto self, int n) -> int { return n <= 0 ? 0 : 1 + self.operator()(self, n - 1); };\n"
        "  a[i] = float(f(f, int(a[i]) + 100000000));"
    ),
    "generic-lambda-self-through-a-reference": kernel(
        "  auto f = [](auto s, int n) -> int { auto& t = s; return n <= 0 ? 0 : 1 + t(t, n - 1); };\n"
        "  a[i] = float(f(f, int(a[i]) + 100000000));"
    ),
    "generic-lambda-self-through-a-braced-forwarding-reference": kernel(
        "  auto f = [](auto s, int n) -> int { auto&& t{s}; return n <= 0 ? 0 : 1 + t(t, n - 1); };\n"
        "  a[i] = float(f(f, int(a[i]) + 100000000));"
    ),
    "generic-lambda-self-application": kernel(
        "  auto f = [](auto self, int n) -> int { return n <= 0 ? 0 : 1 + self(self, n - 1); };\n"
        "  a[i] = float(f(f, int(a[i]) + 100000000));"
    ),
}


@pytest.mark.parametrize("checked", [False, True], ids=["plain", "checked"])
@pytest.mark.parametrize("name", sorted(RECURSIVE))
def test_recursion_is_refused(name, checked):
    with pytest.raises(mc.CompileError, match=r"\[MSL rule: no recursion\]"):
        mc.Device("cpu", checked=checked).compile(RECURSIVE[name])


FUNCTION_POINTERS = {
    "integer-through-decltype": kernel("  a[i] = ((decltype(twice)*)(ulong)a[i])(1.0f);", "float twice(float x) { return 2.0f * x; }\n"),
    "integer-through-alias": kernel(
        "  a[i] = reinterpret_cast<F>((ulong)a[i])(1.0f);", "using F = float (*)(float);\n"
    ),
    "integer-through-typedef": kernel("  F* p = (F*)(ulong)a[i]; a[i] = p(1.0f);", "typedef float F(float);\n"),
    "lambda-plus": kernel("  auto p = +[](float x) { return 2.0f * x; };\n  a[i] = p(a[i]);"),
    "lambda-star": kernel("  auto& p = *[](float x) { return 2.0f * x; };\n  a[i] = p(a[i]);"),
    "address-of-function": kernel("  auto p = &twice;\n  a[i] = p(a[i]);", "float twice(float x) { return 2.0f * x; }\n"),
    "address-of-function-bitand": kernel("  auto p = bitand twice;\n  a[i] = p(a[i]);", "float twice(float x) { return 2.0f * x; }\n"),
    "function-as-value": kernel("  auto p = twice;\n  a[i] = p(a[i]);", "float twice(float x) { return 2.0f * x; }\n"),
    "template-deduced": kernel(
        "  a[i] = call(twice, a[i]);",
        "float twice(float x) { return 2.0f * x; }\ntemplate <class F> float call(F f, float x) { return f(x); }\n",
    ),
    "member-function-pointer": kernel(
        "  auto m = &S::twice; S s;\n  a[i] = (s.*m)(a[i]);",
        "struct S { float twice(float x) const { return 2.0f * x; } };\n",
    ),
    "alias-variable-from-lambda": kernel(
        "  F p = [](float x) { return 2.0f * x; };\n  a[i] = p(a[i]);", "using F = float (*)(float);\n"
    ),
}


@pytest.mark.parametrize("checked", [False, True], ids=["plain", "checked"])
@pytest.mark.parametrize("name", sorted(FUNCTION_POINTERS))
def test_function_pointers_are_refused(name, checked):
    with pytest.raises(mc.CompileError, match=r"\[MSL rule: no (function pointers|names of metalcall's implementation)\]"):
        mc.Device("cpu", checked=checked).compile(FUNCTION_POINTERS[name])


N = 8
VALID = {
    # Compile-time uses of functions: template arguments (ggml's dequantize_func), an alias
    # for a template parameter (MLX's RadixFunc), decltype in an alias and an explicit
    # instantiation (ggml's kernel_*_t, MLX's instantiate_kernel).
    "template-argument": (
        "float twice(float x) { return 2.0f * x; }\n"
        "template <float (*F)(float)> float apply(float x) { return F(x); }\n",
        "  a[i] = apply<twice>(a[i]) + apply<twice>(1.0f);",
        lambda x: 2 * x + 2,
    ),
    "alias-for-template-parameter": (
        "template <typename T> using Unary = T (*)(T);\nfloat twice(float x) { return 2.0f * x; }\n"
        "template <typename T, Unary<T> F> T apply(T x) { return F(x); }\n",
        "  a[i] = apply<float, twice>(a[i]);",
        lambda x: 2 * x,
    ),
    "compile-time-template-recursion": (
        "template <int N> struct Sum { static int get() { return N + Sum<N - 1>::get(); } };\n"
        "template <> struct Sum<0> { static int get() { return 0; } };\n"
        "template <int N> int sum() { return N + sum<N - 1>(); }\ntemplate <> int sum<0>() { return 0; }\n",
        "  a[i] = a[i] + float(Sum<4>::get() + sum<3>());",
        lambda x: x + 10 + 6,
    ),
    "same-named-function-of-a-template-parameter": (
        "struct Twice { template <typename T> static T apply(T x) { return x * T(2); } };\n"
        "template <typename Op> struct Outer { template <typename T> static T apply(T x) { return Op::template apply<T>(x) + T(1); } };\n",
        "  a[i] = Outer<Twice>::apply<float>(a[i]);",
        lambda x: 2 * x + 1,
    ),
    # Member calls on objects of other classes and other instantiations are no recursion.
    "same-named-members-of-other-classes": (
        "struct Inner { uint size() const { return 4u; } };\n"
        "struct Tile { Inner inner; uint size() const { return inner.size() * 2u; } };\n"
        "uint size(Tile t) { Tile u = t; return u.size() + 1u; }\n"
        "template <int N> struct Count { int operator()(int x) const { return Count<N - 1>{}(x) + 1; } };\n"
        "template <> struct Count<0> { int operator()(int x) const { return x; } };\n",
        "  Tile t; auto apply = [](auto f, int x) { return f(x); };\n"
        "  a[i] = a[i] + float(size(t)) + float(apply(Count<3>{}, 2));",
        lambda x: x + 9 + 5,
    ),
    "lambdas-functors-and-same-named-members": (
        "struct Twice { float operator()(float x) const { return 2.0f * x; } };\n"
        "struct Box { float scale; float get() const { return scale; } };\n"
        "float get(Box b) { return b.get(); }\n",
        "  auto add = [](float x, float y) { return x + y; };\n  Box b{3.0f}; float scale = get(b);\n"
        "  a[i] = add(Twice()(a[i]), scale);",
        lambda x: 2 * x + 3,
    ),
}


@pytest.mark.parametrize("name", sorted(VALID))
def test_compile_time_uses_of_functions_still_run(device, name):
    prefix, body, expected = VALID[name]
    devices = [device, mc.Device("cpu", checked=True)] if device.backend == "cpu" else [device]
    for dev in devices:
        a = np.arange(N, dtype=np.float32)
        dev.compile(kernel(body, prefix)).k(N, a)
        np.testing.assert_allclose(a, expected(np.arange(N, dtype=np.float64)))


def test_explicit_instantiation_through_decltype(device):
    src = HEADER + (
        "template <typename T> kernel void scale(device T* a [[buffer(0)]], uint i [[thread_position_in_grid]]) "
        "{ a[i] = a[i] * T(3); }\n"
        "typedef decltype(scale<float>) scale_t;\n"
        'template [[host_name("scale_f")]] kernel scale_t scale<float>;\n'
        'template [[host_name("scale_i")]] [[kernel]] decltype(scale<int>) scale<int>;\n'
    )
    lib = device.compile(src)
    a = np.arange(N, dtype=np.float32)
    lib.scale_f(N, a)
    np.testing.assert_array_equal(a, np.arange(N) * 3)
    b = np.arange(N, dtype=np.int32)
    lib.scale_i(N, b)
    np.testing.assert_array_equal(b, np.arange(N) * 3)


# A lambda that casts its parameter is no lambda applied to itself, whatever the type's
# spelling: `m & uchar(p)` read as a reference `auto& uchar(p)` made `uchar(p)` a call of p
# with p (tools/msl_fuzz seed 3003, program 650). One kernel per spelling, one library.
CAST_PREFIX = (
    "typedef uint U;\nusing V = uint;\n"
    "struct S { uint v; S(uint x) : v(x) {} };\n"
    "template <typename T> T low_bit(T x) { auto f = [&](T p) { return T(1) & T(p); }; return f(x); }\n"
)
CASTS_IN_LAMBDAS = {
    "scalar": ("auto f = [&](float p) { uint m = 5u; return m & uint(p); };", lambda x: 5 & x),
    "vector": ("auto f = [&](uint p) { uint2 m = uint2(6u) & uint2(p, p); return m.y; };", lambda x: 6 & x),
    "matrix": ("auto f = [&](float p) { return uint(true && float2x2(p)[0][0] > 1.0f); };", lambda x: (x > 1) * 1),
    "typedef": ("auto f = [&](uint p) { return 5u & U(p); };", lambda x: 5 & x),
    "using-alias": ("auto f = [&](uint p) { return (3u & V{p}) + (1u & V(p)); };", lambda x: (3 & x) + (1 & x)),
    "struct": ("auto f = [&](uint p) { bool k = true && S{p}.v > 2u; return k ? S(p).v : 0u; };",
               lambda x: np.where(x > 2, x, 0)),
    "template-parameter": ("auto f = [&](uint p) { return low_bit<uint>(p); };", lambda x: 1 & x),
    "c-cast": ("auto f = [&](float p) { return 4u & (uint)(p) & uint(p); };", lambda x: 4 & x),
    "unnamed-parameter": ("auto f = [&](uint, uint p) { return 2u & uint(p); };", lambda x: 2 & x),
}


def test_casts_in_lambdas_are_no_self_application(device):
    kernels = []
    for name, (lam, _) in CASTS_IN_LAMBDAS.items():
        call = "f(0u, uint(a[i]))" if name == "unnamed-parameter" else "f(a[i])" if "float p" in lam else "f(uint(a[i]))"
        kernels.append(f"kernel void k_{name.replace('-', '_')}(device uint* out [[buffer(0)]], const device float* a "
                       f"[[buffer(1)]], uint i [[thread_position_in_grid]]) {{\n  {lam}\n  out[i] = uint({call});\n}}\n")
    devices = [device, mc.Device("cpu", checked=True)] if device.backend == "cpu" else [device]
    x = np.arange(N, dtype=np.uint32)
    for dev in devices:
        lib = dev.compile(HEADER + CAST_PREFIX + "".join(kernels))
        for name, (_, expected) in CASTS_IN_LAMBDAS.items():
            out = np.zeros(N, np.uint32)
            getattr(lib, "k_" + name.replace("-", "_"))(N, out, x.astype(np.float32))
            np.testing.assert_array_equal(out, expected(x), err_msg=name)
