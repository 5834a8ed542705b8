"""Attacks on checked mode's bounds through pointers its translation left plain, on the checked
CPU device in-process and in the sandbox (security, issue P2.4).

The attacker writes the MSL and passes `at`, the address of another Buffer of the process (the
victim), and tries to write it through a pointer no bounds cover: a pointer type given to a
template (`W<device float*>`, `metal::array<thread float*, 2>`: plain pointers before 2026-12-03),
a union template whose member is a checked pointer (its base and bounds written through the
other member), a plain pointer's storage viewed as an integer's bytes (`(thread float**)&v`),
arithmetic on `this` or a pointer cast of it.
Each is now a CompileError naming the rule, or an ExecutionError naming the bounds, and the
victim keeps its values.
"""

from __future__ import annotations

import sys

import numpy as np
import pytest

import metalcall as mc
from attack_kernels import kernel

pytestmark = pytest.mark.skipif("cpu" not in mc.backends(), reason="the cpu backend is not built in")

CHECKED = {
    "checked": lambda: mc.Device("cpu", checked=True, sandbox=False),
    "checked-sandbox": lambda: mc.Device("cpu", checked=True, sandbox=True),
}
RULE = "[MSL rule: checked mode stays on]"


@pytest.fixture(params=sorted(CHECKED))
def checked(request):
    if request.param == "checked-sandbox" and not sys.platform.startswith("linux"):
        pytest.skip("the sandbox is built on Linux's seccomp")
    return CHECKED[request.param]()


# name: (program-scope prefix, body): refused at compile time, naming the rule
REFUSED = {
    "union-template-forges-bounds": ("template <class T> union U { T p; ulong u[4]; U() {} };",
                                     "U<device float*> x; x.p = out; x.u[3] = 1ul << 40; x.p[(at - ulong(x.u[1])) / 4] = 42.0f;"),
    "union-template-of-thread-pointer": ("template <class T> union U { T p; ulong u[4]; U() {} };",
                                         "float v[4]; U<thread float*> x; x.p = v; x.u[3] = 1ul << 40; x.p[1 << 20] = 42.0f;"),
    "union-template-through-struct": ("template <class T> struct H { T p; };\n"
                                      "template <class T> union U { H<T> h; ulong u[4]; U() {} };",
                                      "U<device float*> x; x.h.p = out; x.u[3] = 1ul << 40; x.h.p[1 << 20] = 42.0f;"),
    "anonymous-union-in-template": ("template <class T> struct S { union { T p; ulong u[4]; }; S() {} };",
                                    "S<device float*> x; x.p = out; x.u[3] = 1ul << 40; x.p[1 << 20] = 42.0f;"),
    "union-in-deduced-template": ("template <class T> union U { T p; ulong u[4]; U() {} };\n"
                                  "template <class T> float g(T q) { U<T> x; x.p = q; x.u[3] = 1ul << 40; return x.p[1 << 20]; }",
                                  "out[0] = g(out);"),
    "arithmetic-on-this": ("struct S { float a; void f(ulong k) { this[k].a = 42.0f; } };", "S s; s.f(at / 4);"),
    "cast-of-this": ("struct S { float a; void f(ulong k) { ((thread uchar*)this)[k] = 1; } };", "S s; s.f(at);"),
    # (through an alias: `thread float**`, a pointer to a pointer, checked mode refuses at once)
    "pointer-over-integer-bytes": ("typedef thread float* FP;", "ulong v = at; thread FP* pp = (thread FP*)&v; **pp = 42.0f;"),
    "pointer-over-byte-view": ("typedef thread float* FP;", "ulong v = at; thread uchar* b = (thread uchar*)&v; thread FP* pp = (thread FP*)b; "
                                   "**pp = 42.0f;"),
}

# name: (prefix, body, what the ExecutionError names): the access is checked
CHECKED_ACCESSES = {
    "template-of-device-pointer": ("template <class T> struct W { T p; };", "W<device float*> w; w.p = out; w.p[1 << 20] = 42.0f;",
                                   "argument 'out'"),
    "template-of-device-pointer-as-value": ("template <class T> struct W { T p; };",
                                            "auto w = W<device float*>{out}; w.p[1 << 20] = 42.0f;", "argument 'out'"),
    "template-of-thread-pointer": ("template <class T> struct W { T p; };",
                                   "float v[4]; auto w = W<thread float*>{v}; w.p[1 << 20] = 42.0f;", "private array"),
    "address-of-a-call's-result": ("thread float& f(thread float& x) { return x; }",
                                   "float v = 1.0f; thread float* p = &f(v); p[1 << 20] = 42.0f;", "variable"),
    "address-of-a-call's-result-in-a-buffer": ("device float& f(device float* x) { return x[0]; }",
                                               "device float* p = &f(out); p[1 << 20] = 42.0f;", "argument 'out'"),
    "metal-array-of-device-pointers": ("", "metal::array<device float*, 2> a = {out, out}; a[1][1 << 20] = 42.0f;",
                                       "argument 'out'"),
}


# Integers the front end's tokens cannot type (a member, a function's result, a template's
# parameter, `auto`, a macro), turned into a pointer by every spelling of a cast: on the checked
# device a pointer is a checked pointer, which takes no integer: refused naming the rule (the
# checked pointer's integer constructor is a static_assert since 2026-12-03, the host compiler's
# "no matching conversion" before; test_attack_checked_integer_pointers.py has the rest). The
# in-process unchecked device runs them: kernel source is trusted code there.
INTEGER_TO_POINTER = {
    "member": ("struct S { ulong a; };", "S s{at}; *(thread float*)s.a = 42.0f;"),
    "member-to-device": ("struct S { ulong a; };", "S s{at}; *(device float*)s.a = 42.0f;"),
    "function-result": ("ulong g(ulong x) { return x; }", "*(thread float*)g(at) = 42.0f;"),
    "template": ("template <class P, class Q> P cv(Q q) { return (P)q; }", "*cv<device float*>(at) = 42.0f;"),
    "reinterpret-cast": ("struct S { ulong a; };", "S s{at}; *reinterpret_cast<device float*>(s.a) = 42.0f;"),
    "static-cast-through-void": ("struct S { ulong a; };", "S s{at}; *static_cast<thread float*>((thread void*)s.a) = 42.0f;"),
    "functional-cast": ("struct S { ulong a; };\ntypedef device float* P;", "S s{at}; *P(s.a) = 42.0f;"),
    "auto": ("template <class T> auto id(T x) { return x; }", "auto a = id(at); *(device float*)a = 42.0f;"),
    "macro": ("#define P(x) ((device float*)(x))\nulong g(ulong x) { return x; }", "*P(g(at)) = 42.0f;"),
}


@pytest.mark.parametrize("name", sorted(INTEGER_TO_POINTER))
def test_no_integer_becomes_a_pointer(checked, name):
    prefix, body = INTEGER_TO_POINTER[name]
    victim, at = _victim(checked)
    with pytest.raises(mc.CompileError) as info:
        checked.compile(kernel(body, prefix)).k(1, np.zeros(4, np.float32), at)
    message = str(info.value)
    assert message.startswith("source.metal:") and "[MSL rule: no pointers from integers]" in message, message
    assert np.asarray(victim).tolist() == [7.0] * 4


def test_pointer_arithmetic_from_null_is_checked(checked):
    victim, at = _victim(checked)
    lib = checked.compile(kernel("device char* p = 0; device float* q = (device float*)(p + at); *q = 42.0f;"))
    with pytest.raises(mc.ExecutionError) as info:
        lib.k(1, np.zeros(4, np.float32), at)
    assert "kernel 'k' null pointer" in str(info.value) and "out of bounds" in str(info.value), str(info.value)
    assert np.asarray(victim).tolist() == [7.0] * 4


def _victim(dev):
    victim = dev.asarray(np.full(4, 7.0, np.float32))
    return victim, np.uint64(np.asarray(victim).ctypes.data)


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_refused(checked, name):
    prefix, body = REFUSED[name]
    victim, at = _victim(checked)
    with pytest.raises(mc.CompileError) as info:
        checked.compile(kernel(body, prefix)).k(1, np.zeros(4, np.float32), at)
    message = str(info.value)
    assert message.startswith("source.metal:") and RULE in message, message
    assert np.asarray(victim).tolist() == [7.0] * 4


@pytest.mark.parametrize("name", sorted(CHECKED_ACCESSES))
def test_accesses_checked(checked, name):
    prefix, body, what = CHECKED_ACCESSES[name]
    victim, at = _victim(checked)
    lib = checked.compile(kernel(body, prefix))
    with pytest.raises(mc.ExecutionError) as info:
        lib.k(1, np.zeros(4, np.float32), at)
    message = str(info.value)
    assert f"kernel 'k' {what}" in message and "out of bounds" in message and "the access was not performed" in message, message
    assert np.asarray(victim).tolist() == [7.0] * 4


def test_this_as_msl_uses_it_runs(checked):
    src = kernel("S s{2.0f}; out[i] = s.g() + float(s.same(s));",
                 "struct S { float a; float g() const { return this->a + (*this).a; }\n"
                 "  bool same(const thread S& o) const { return this == &o; } };")
    out = np.zeros(4, np.float32)
    checked.compile(src).k(4, out, np.uint64(0))
    np.testing.assert_array_equal(out, [5.0] * 4)


# The MSL beside each attack runs: unions of plain values in templates (MLX's uint_or_packed), a
# template holding a device pointer, an array of checked pointers.
def test_close_msl_runs(checked):
    src = kernel("U<float> x; x.v = 2.0f; W<device float*> w{out}; metal::array<device float*, 1> a = {out};\n"
                 "w.p[i] = as_type<float>(x.u) + 1.0f; a[0][i] += 1.0f;",
                 "template <class T> union U { T v; uint u; };\ntemplate <class T> struct W { T p; };")
    out = np.zeros(4, np.float32)
    checked.compile(src).k(4, out, np.uint64(0))
    np.testing.assert_array_equal(out, [4.0] * 4)
