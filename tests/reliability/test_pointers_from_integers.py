"""Thread and threadgroup pointers made from integers, function pointers through lambdas, and
recursion spelled through aliases (issue P2.4 items 2 and 3), on the in-process CPU devices.

Only device and constant memory have addresses as integers in MSL (GPU addresses: SPIRV-Cross's
buffer device addresses are `reinterpret_cast<device T*>(ulong)`, and those stay allowed).
Before, every device also took `(thread float*)at` for an integer `at` (C-style,
reinterpret_cast, through a typedef or `decltype(q)`, a functional cast `P(at)`, an integer
literal, arithmetic on integers, a conditional of them): a private pointer at any address. A
lambda converted with `+` through a variable (`auto l = [](…){…}; (decltype(+l))at`) was a
function pointer made from an integer, called. Recursion through a namespace alias (`M::f` for
`namespace M = N;`) and through a member template of a class template (`G<T>::template h<T>`)
passed the recursion rule. Each is now a CompileError naming the rule; the MSL each imitates
still runs.
"""

from __future__ import annotations

import numpy as np
import pytest

import metalcall as mc

pytestmark = pytest.mark.skipif("cpu" not in mc.backends(), reason="the cpu backend is not built in")

HEADER = "#include <metal_stdlib>\nusing namespace metal;\n"
MODES = {
    "cpu": lambda: mc.Device("cpu", sandbox=False),
    "checked": lambda: mc.Device("cpu", checked=True, sandbox=False),
}


def kernel(body: str, prefix: str = "") -> str:
    return (HEADER + prefix + "\nkernel void k(device float* out [[buffer(0)]], constant ulong& at [[buffer(1)]],\n"
            "              uint i [[thread_position_in_grid]]) {\n" + body + "\n}\n")


INTEGERS = "no pointers from integers"
POINTERS = "no function pointers"
RECURSION = "no recursion"

# name: (source, the rule its CompileError names, on both devices)
REFUSED = {
    "c-style-from-parameter": (kernel("thread float* p = (thread float*)at; out[0] = *p;"), INTEGERS),
    "c-style-from-local": (kernel("ulong a = at; thread float* p = (thread float*)a; out[0] = *p;"), INTEGERS),
    "c-style-from-arithmetic": (kernel("thread float* p = (thread float*)(at + 8); out[0] = *p;"), INTEGERS),
    "c-style-from-literal": (kernel("out[0] = *(thread float*)4096;"), INTEGERS),
    "c-style-from-conditional": (kernel("out[0] = *(thread float*)(i == 0 ? at : at);"), INTEGERS),
    "reinterpret-cast": (kernel("thread float* p = reinterpret_cast<thread float*>(at); out[0] = *p;"), INTEGERS),
    "threadgroup": (kernel("out[0] = *(threadgroup float*)at;"), INTEGERS),
    "through-typedef": (kernel("P p = (P)at; out[0] = *p;", "typedef thread float* P;"), INTEGERS),
    "functional-through-typedef": (kernel("P p = P(at); out[0] = *p;", "typedef thread float* P;"), INTEGERS),
    "through-decltype": (kernel("float x = 1.0f; thread float* q = &x; auto p = (decltype(q))at; out[0] = *p;"), INTEGERS),
    "functional-through-decltype": (kernel("float x = 1.0f; thread float* q = &x; auto p = decltype(q)(at); out[0] = *p;"),
                                    INTEGERS),
    "to-void-pointer": (kernel("thread void* v = (thread void*)at; out[0] = *(thread float*)v;"), INTEGERS),
    "inside-const-cast": (kernel("out[0] = *const_cast<thread float*>((const thread float*)at);"), INTEGERS),
    "lambda-variable-plus": (kernel("auto l = [](float x) { return x; }; auto p = (decltype(+l))at; out[0] = p(1.0f);"),
                             POINTERS),
    "lambda-variable-star": (kernel("auto l = [](float x) { return x; }; auto p = *l; out[0] = p(1.0f);"), POINTERS),
    "recursion-through-namespace-alias": (kernel("out[0] = N::f(at);", "namespace N { float f(ulong n); }\nnamespace M = N;\n"
                                                 "float N::f(ulong n) { return n ? M::f(n - 1) * 0.5f + 1 : 0; }"), RECURSION),
    "recursion-through-member-template": (kernel("out[0] = G<int>::f(at);",
                                                 "template <class T> struct G {\n  static float f(ulong n) { return n ? "
                                                 "G<T>::template h<T>(n) : 0; }\n  template <class U> static float h(ulong n) "
                                                 "{ return f(n - 1) * 0.5f + 1; }\n};"), RECURSION),
}



@pytest.fixture(params=sorted(MODES))
def mode(request):
    return request.param


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_refused(mode, name):
    src, rule = REFUSED[name]
    with pytest.raises(mc.CompileError) as info:
        MODES[mode]().compile(src).k(1, np.zeros(4, np.float32), np.uint64(4096))
    first = str(info.value).splitlines()[0]
    assert first.startswith("source.metal:") and f"[MSL rule: {rule}]" in first, first


def test_lambda_converted_inside_a_template_does_not_compile(mode):
    # The template's `+f` cannot be told from integer arithmetic by its tokens; the CPU translation
    # gives every lambda without captures an unread one, so none converts to a function pointer.
    src = kernel("out[0] = fp([](float x) { return x; }, at)(1.0f);",
                 "template <class F> auto fp(F f, ulong a) { auto p = +f; return (decltype(p))a; }")
    with pytest.raises(mc.CompileError) as info:
        MODES[mode]().compile(src).k(1, np.zeros(4, np.float32), np.uint64(4096))
    assert "source.metal:3:" in str(info.value).splitlines()[0], str(info.value)


# The MSL each refusal imitates: null pointers, pointer arithmetic with integers, lambdas added,
# called and captured, unions and as_type without pointers, recursion-free templates.
VALID = {
    "null-pointers": ("device float* p = (device float*)0; device float* q = nullptr; out[i] = p == q ? 2.0f : 0.0f;", ""),
    "pointer-plus-integer": ("device float* p = (device float*)(out + at); *p = 2.0f;", ""),
    "integer-plus-pointer-cast": ("device uchar* b = (device uchar*)out; device float* p = (device float*)(b + 4 * at);"
                                  " *p = 2.0f;", ""),
    "device-pointer-from-its-address": ("device float* p = reinterpret_cast<device float*>(reinterpret_cast<ulong>(out) + 4 * at);"
                                        " *p = 2.0f;", ""),
    "lambdas": ("auto l = [](float x) { return x * 2.0f; }; auto g = [&](float y) { return l(y) - 1.0f; };"
                " out[i] = g(1.0f) + [](auto z) { return z; }(1.0f) - l(0.0f) + 0.0f * [] { return 1.0f; }();", ""),
    "union-of-scalars": ("U u; u.f = 2.0f; out[i] = as_type<float>(u.u);", "union U { float f; uint u; };"),
    "namespace-alias": ("out[i] = M::twice(1.0f);", "namespace N { float twice(float x) { return 2.0f * x; } }\nnamespace M = N;"),
    "member-template": ("out[i] = G<float>::f(1.0f);", "template <class T> struct G {\n  static T f(T x) { return G<T>::template h<T>(x); }\n"
                        "  template <class U> static U h(U x) { return x + x; }\n};"),
}


@pytest.mark.parametrize("name", sorted(VALID))
def test_close_msl_runs(mode, name):
    body, prefix = VALID[name]
    if mode == "checked" and name == "device-pointer-from-its-address":
        pytest.skip("a checked pointer is no integer: reinterpret_cast<ulong> does not take it")
    out = np.zeros(4, np.float32)
    MODES[mode]().compile(kernel(body, prefix)).k(4, out, np.uint64(1))
    # The pointer arithmetic writes element `at` (1) from every thread; the rest write their own.
    expected = [0.0, 2.0, 0.0, 0.0] if name in ("pointer-plus-integer", "integer-plus-pointer-cast",
                                                "device-pointer-from-its-address") else [2.0] * 4
    np.testing.assert_array_equal(out, expected)
