"""C++ that Metal's compiler refuses and host compilers accept, each a way past a kernel's memory
(security, issue P2.4), on every CPU device mode.

An attacker who writes the MSL uses what g++ and clang take as extensions or plain C++: a
variable-length array sized at run time (the stack moves by an attacker's amount, through a
typedef, a template or decltype too), a C variadic function (its va_arg reads past what the call
passed), a cast that moves a pointer or reference into another address space (`(device
float*)&local`: on the checked device that made a device pointer no bounds covered, so `p[at]`
wrote anywhere), `as_type` to a pointer. Each is a CompileError at the user's line on every mode,
as Metal's compiler refuses them (docs/msl-rules.md), and the close MSL each imitates still runs.
"""

from __future__ import annotations

import numpy as np
import pytest

import metalcall as mc
from attack_kernels import MODES, kernel, mode  # noqa: F401 (mode: the fixture)

pytestmark = pytest.mark.skipif("cpu" not in mc.backends(), reason="the cpu backend is not built in")


CASTS = "no address-space casts"
VARIADIC = "no variadic functions"

# name: (source, text at the error (its first occurrence), the rule its CompileError names)
REFUSED = {
    "variadic": (kernel("out[i] = f(1, 2.0f);", "float f(int n, ...) { return 0.0f; }"), "...", VARIADIC),
    "variadic-only": (kernel("out[i] = f(1, 2.0f);", "float f(...) { return 0.0f; }"), "...", VARIADIC),
    "variadic-without-comma": (kernel("out[i] = f(1, 2.0f);", "float f(int n...) { return 0.0f; }"), "...", VARIADIC),
    "variadic-lambda": (kernel("auto f = [](...) { return 1.0f; }; out[i] = f(1, at);"), "...", VARIADIC),
    "variadic-from-a-macro": (kernel("out[i] = F(1, 2.0f);", "#define V(name) float name(int n, ...) { return 0.0f; }\nV(F)"),
                              "V(F)", VARIADIC),
    "cast-c-style": (kernel("float x = 1.0f; device float* p = (device float*)&x; p[at] = 5.0f; out[i] = p[0];"),
                     "(device float*)&x", CASTS),
    "cast-static": (kernel("float x = 1.0f; device float* p = static_cast<device float*>(&x); out[i] = p[at];"),
                    "static_cast", CASTS),
    "cast-reinterpret": (kernel("float x = 1.0f; device float* p = reinterpret_cast<device float*>(&x); out[i] = p[at];"),
                         "reinterpret_cast", CASTS),
    "cast-through-typedef": (kernel("float x = 1.0f; P p = (P)&x; out[i] = p[at];", "typedef device float* P;"), "(P)", CASTS),
    "cast-through-using": (kernel("float x = 1.0f; P p = (P)&x; out[i] = p[at];", "using P = device float*;"), "(P)", CASTS),
    "cast-through-auto": (kernel("float x = 1.0f; auto q = &x; device float* p = (device float*)q; out[i] = p[at];"),
                          "(device float*)q", CASTS),
    "cast-of-thread-pointer": (kernel("float x = 1.0f; thread float* q = &x; device float* p = (device float*)q; out[i] = p[at];"),
                               "(device float*)q", CASTS),
    "cast-in-template": (kernel("float x = 1.0f; out[i] = f(&x)[at];",
                                "template <class T> device T* f(thread T* q) { return (device T*)q; }"), "(device T*)q", CASTS),
    "cast-integer-round-trip": (kernel("float x = 1.0f; device float* p = (device float*)(ulong)&x; out[i] = p[at];"),
                                "(device float*)(ulong)", CASTS),
    "cast-integer-variable": (kernel("float x = 1.0f; ulong v = (ulong)&x; device float* p = (device float*)v; out[i] = p[at];"),
                              "(device float*)v", CASTS),
    "cast-reference": (kernel("float x = 1.0f; device float& r = (device float&)x; out[i] = r;"), "(device float&)", CASTS),
    "cast-reference-static": (kernel("float x = 1.0f; device float& r = static_cast<device float&>(x); out[i] = r;"),
                              "static_cast", CASTS),
    "cast-private-array": (kernel("float x[4] = {1, 2, 3, 4}; device float* p = (device float*)x; out[i] = p[at];"),
                           "(device float*)x", CASTS),
    "cast-threadgroup": (kernel("threadgroup float t[4]; t[0] = 1.0f; device float* p = (device float*)t; out[i] = p[at];"),
                         "(device float*)t", CASTS),
    "cast-device-to-thread": (kernel("thread float* p = (thread float*)out; out[i] = p[at];"), "(thread float*)", CASTS),
    "cast-device-to-constant": (kernel("constant float* p = (constant float*)out; out[i] = p[at];"), "(constant float*)", CASTS),
    "cast-constant-to-device": (kernel("device ulong* p = (device ulong*)&at; p[0] = 1; out[i] = 1.0f;"), "(device ulong*)", CASTS),
    "initialised-from-local": (kernel("float x = 1.0f; device float* p = &x; out[i] = p[at];"), "p = &x", CASTS),
    "reference-bound-to-local": (kernel("float x = 1.0f; device float& r = x; out[i] = r;"), "r = x", CASTS),
    "as_type-to-pointer": (kernel("out[i] = *as_type<device float*>(at);"), "as_type", "as_type of scalars and vectors"),
    "as_type-of-address": (kernel("float x = 1.0f; device float* p = as_type<device float*>(&x); out[i] = p[at];"), "as_type",
                           "as_type of scalars and vectors"),
}


def _position(src: str, needle: str) -> int:
    return src.count("\n", 0, src.index(needle)) + 1


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_refused_on_every_mode(mode, name):
    src, needle, rule = REFUSED[name]
    with pytest.raises(mc.CompileError) as info:
        MODES[mode]().compile(src).k(1, np.zeros(4, np.float32), np.uint64(0))
    first = str(info.value).splitlines()[0]
    assert first.startswith("source.metal:") and f"[MSL rule: {rule}]" in first, first
    assert info.value.line == _position(src, needle), first


# A variable-length array, sized by the caller: the host compiler finds every spelling (-Werror=vla).
VLAS = {
    "local": kernel("float a[at]; a[0] = 1.0f; out[i] = a[0];"),
    "from-a-variable": kernel("int n = int(at); float a[n]; a[0] = 1.0f; out[i] = a[0];"),
    "two-dimensional": kernel("float a[4][at]; a[0][0] = 1.0f; out[i] = a[0][0];"),
    "in-a-helper": kernel("out[i] = h(int(at));", "float h(int n) { float a[n]; a[0] = 1.0f; return a[0]; }"),
    "through-a-typedef": kernel("out[i] = h(int(at));", "float h(int n) { typedef float A[n]; A a; a[0] = 1.0f; return a[0]; }"),
    "in-a-template": kernel("out[i] = h<float>(int(at));", "template <class T> T h(int n) { T a[n]; a[0] = 1; return a[0]; }"),
    "through-decltype": kernel("out[i] = h(int(at));",
                               "float h(int n) { float b[n]; b[0] = 2.0f; decltype(b)* p = &b; return (*p)[0]; }"),
}


@pytest.mark.parametrize("name", sorted(VLAS))
def test_variable_length_arrays_refused_on_every_mode(mode, name):
    src = VLAS[name]
    with pytest.raises(mc.CompileError) as info:
        MODES[mode]().compile(src).k(1, np.zeros(4, np.float32), np.uint64(1 << 38))
    message = str(info.value)
    assert "source.metal:" in message and ("variable length array" in message or "variable-length array" in message
                                           or "not a constant expression" in message), message


# The MSL each attack imitates: same-space casts, variadic templates and folds, constant sizes.
VALID = {
    "same-space-casts": ("device float4* v = (device float4*)out; device uchar* b = reinterpret_cast<device uchar*>(out + i);"
                         " (void)v; out[i] = (b[0] == 0 ? 1.0f : 0.0f) + 1.0f;", ""),
    "threadgroup-pointer": ("threadgroup float t[4]; threadgroup float* p = t; p[i % 4] = 2.0f; out[i] = t[i % 4];", ""),
    "thread-pointer-to-local": ("float x = 3.0f; thread float* p = &x; auto q = &x; out[i] = *p + *q - 4.0f;", ""),
    "constant-array": ("constant float* p = kTable; out[i] = p[i % 2] + float(kSize);",
                       "constant float kTable[2] = {1.0f, 3.0f};\nconstant int kSize = 4;"),
    "variadic-template": ("out[i] = first(1.0f, 2.0f, 3.0f) + float(count(1, 2));",
                          "template <class... T> int count(T... x) { return int(sizeof...(T)); }\n"
                          "template <class... T> float first(float a, T... rest) { return a + float(count(rest...)); }"),
    "constant-size-array": ("const int n = 4; float a[n * 2]; a[0] = 1.0f; out[i] = a[0] + 1.0f;", ""),
}
EXPECTED = {"same-space-casts": 2.0, "threadgroup-pointer": 2.0, "thread-pointer-to-local": 2.0, "variadic-template": 5.0,
            "constant-size-array": 2.0}


@pytest.mark.parametrize("name", sorted(VALID))
def test_close_msl_runs(mode, name):
    body, prefix = VALID[name]
    out = np.zeros(4, np.float32)
    MODES[mode]().compile(kernel(body, prefix)).k(4, out, np.uint64(0))
    expected = [1 + 4, 3 + 4, 1 + 4, 3 + 4] if name == "constant-array" else [EXPECTED[name]] * 4
    np.testing.assert_array_equal(out, expected)
