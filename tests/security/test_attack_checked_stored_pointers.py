"""Attacks on checked mode through pointers stored and read back, and pointer types that name no
address space (security, issue P2.4), on the checked CPU device in-process and in the sandbox.

Until 2026-12-03 the checked translation left these raw, and a raw pointer read back was unchecked
from there: a pointer to a pointer (`device float* thread* pp`, `thread float* thread* q`, an
array of them, a struct's member of that type, `*q` declared after a checked pointer in one
statement: `device float *p = out, *q = &p;`), a class type's pointer written without an address
space (`S* p`, `(S*)out`, `using P = S*;`, `H* hp`, an enum's or a union's, an alias of a
pointer's: `P* pp`) and a template parameter's pointer (`T* p` with T = `device float` or a
struct). `pp[far] = out` wrote a checked pointer's 32 bytes at any distance from the stack;
`((S*)out)[k]`, `h.p[k]` and `w.p[k]` wrote any host address (2026-12-03, before the fix, with k
computed from a victim Buffer's address: each changed the victim).
Now a class type's pointer without a space is refused in every mode (Metal's compiler refuses it
too), a pointer to a pointer in checked mode, and a template parameter's pointer is a checked
pointer: each attack is a CompileError before any run or an ExecutionError naming the bounds,
the victim keeps its values and the device runs the next kernel; the same template constructs in
bounds give the plain CPU device's exact values.
"""

from __future__ import annotations

import numpy as np
import pytest

import metalcall as mc
from attack_kernels import (CHECKED_AND_PLAIN, CHECKED_MODES, HEADER, KernelLibraries, assert_checked_write,
                            assert_in_bounds, checked_kernel, open_mode)

pytestmark = pytest.mark.skipif("cpu" not in mc.backends(), reason="the cpu backend is not built in")


# name: (program-scope prefix, body): a pointer type with no address space, which MSL refuses
NO_SPACE = {
    "class-pointer-variable": ("struct S { float a; };", "S s; S* p = &s; p[far].a = 42.0f;"),
    "class-pointer-cast": ("struct S { float a; };", "((S*)out)[far].a = 42.0f;"),
    "class-pointer-static-cast": ("struct S { float a; };", "out[0] = reinterpret_cast<const S*>(&out[0])[far].a;"),
    "class-pointer-using": ("struct S { float a; }; using P = S*;", "P p = (P)out; p[far].a = 42.0f;"),
    "class-pointer-typedef": ("struct S { float a; }; typedef const S* P;", "out[0] = P(out)[far].a;"),
    "class-pointer-parameter": ("struct S { float a; }; void put(S* p, ulong k) { p[k].a = 42.0f; }",
                                "S s; put(&s, far);"),
    "class-pointer-member": ("struct S { float a; }; struct H { S* p; };", "S s; H h; h.p = &s; h.p[far].a = 42.0f;"),
    "class-keyword-pointer": ("class C { public: float a; };", "C c; C* p = &c; p[far].a = 42.0f;"),
    "enum-pointer": ("enum E : int { A, B };", "E e = A; E* p = &e; p[far] = B;"),
    "union-pointer": ("union U { float f; int n; };", "U u; U* p = &u; p[far].f = 42.0f;"),
    "struct-pointer-to-struct": ("struct H { device float* p; };", "H h; h.p = out; H* hp = &h; hp[far].p = out;"),
    "alias-of-pointer-pointer": ("typedef device float* P;", "P p = out; P* pp; pp = &p; pp[far] = out;"),
    "elaborated-class-pointer": ("struct S { float a; };", "struct S s; struct S* p = &s; p[far].a = 42.0f;"),
    "nested-class-pointer": ("namespace n { struct S { float a; }; }", "n::S s; n::S* p = &s; p[far].a = 42.0f;"),
}

# name: (prefix, body): a pointer stored and read back raw, refused by checked mode
STORED = {
    "pointer-to-pointer": ("", "device float* p = out; device float* thread* pp; pp = &p; pp[far] = out;"),
    "pointer-to-pointer-unqualified": ("", "device float* p = out; device float** pp; pp = &p; pp[far] = out;"),
    "thread-pointer-to-thread-pointer": ("", "float v[4]; thread float* p = v; thread float* thread* q; q = &p; q[far] = v;"),
    "const-pointer-to-pointer": ("", "device float* p = out; device float* const thread* q; q = &p; q[far][0] = 1.0f;"),
    "pointer-to-pointer-member": ("struct H { device float* thread* pp; };",
                                  "device float* p = out; H h; h.pp = &p; h.pp[far] = out;"),
    "array-of-pointers-to-pointers": ("", "device float* p = out; device float* thread* ps[2]; ps[0] = &p; ps[1] = &p; "
                                          "ps[0][far] = out;"),
    "pointer-to-pointer-parameter": ("void put(device float* thread* pp, ulong k, device float* p) { pp[k] = p; }",
                                     "device float* p = out; put(&p, far, out);"),
    "pointer-declarator-after-pointer": ("", "device float *p = out, *q = &p; q[far] = out;"),
    "thread-declarator-after-pointer": ("", "float v[4]; thread float *p = v, *q = &p; q[far] = v;"),
}

# name: (prefix, body, what the ExecutionError names, out after a run with far = 0 on [1, 2, 3, 4]):
# a template parameter's pointer (valid MSL), now a checked pointer
TEMPLATE = {
    "template-member-device": ("template <class T> struct W1 { T* p; };",
                               "W1<device float> w; w.p = out; w.p[far] = 42.0f;", "argument 'out'", [42, 2, 3, 4]),
    "template-member-struct": ("struct S2 { float a; }; template <class T> struct W2 { T* p; };",
                               "S2 s{1.0f}; W2<thread S2> w; w.p = &s; w.p[far].a = 42.0f; out[0] = s.a;", "variable",
                               [42, 2, 3, 4]),
    "template-explicit-argument": ("struct S3 { float a; }; template <class T> void put3(T* p, ulong k) { p[k].a = 42.0f; }",
                                   "S3 s{1.0f}; put3<thread S3>(&s, far); out[0] = s.a;", "variable", [42, 2, 3, 4]),
    "template-deduced-buffer": ("template <class T> void put4(T* p, ulong k) { p[k] = 42.0f; }", "put4(out, far + 1);",
                                "argument 'out'", [1, 42, 3, 4]),
    "template-deduced-this": (("template <class T> void put5(T* p, ulong k) { p[k].a = 42.0f; }\n"
                               "struct S5 { float a; void go(ulong k) thread { put5(this, k); } };"),
                              "S5 s{1.0f}; s.go(far); out[0] = s.a;", "pointer outside every Buffer (one element)",
                              [42, 2, 3, 4]),
    "template-const-pointer": ("template <class T> float get6(const T* p, ulong k) { return p[k]; }",
                               "out[0] = get6(out, far + 3);", "argument 'out'", [4, 2, 3, 4]),
    "template-cast": ("template <class T> void put7(device float* p, ulong k) { ((T*)p)[k] = 42.0f; }",
                      "put7<device float>(out, far + 2);", "argument 'out'", [1, 2, 42, 4]),
    "stored-pointer-through-struct-pointer": ("struct H8 { device float* p; };",
                                              "H8 h; h.p = out; thread H8* hp = &h; hp->p[far + 3] = 42.0f;",
                                              "argument 'out'", [1, 2, 3, 42]),
}

CHECKED = CHECKED_MODES
ALL = CHECKED_AND_PLAIN
LIBRARIES = KernelLibraries(TEMPLATE)


def _source(prefix: str, body: str) -> str:
    return HEADER + checked_kernel(prefix, body)


def _refusal(mode, prefix, body):
    """The CompileError's message, at the user's line."""
    with pytest.raises(mc.CompileError) as info:
        open_mode(mode).compile(_source(prefix, body))
    message = str(info.value)
    assert message.startswith("source.metal:"), message
    return message


@pytest.mark.parametrize("mode", sorted(ALL))
@pytest.mark.parametrize("name", sorted(NO_SPACE))
def test_class_pointers_without_a_space_are_refused(mode, name):
    message = _refusal(mode, *NO_SPACE[name])
    assert "[MSL rule: pointers name their address space]" in message, message


@pytest.mark.parametrize("mode", sorted(CHECKED))
@pytest.mark.parametrize("name", sorted(STORED))
def test_stored_raw_pointers_are_refused(mode, name):
    message = _refusal(mode, *STORED[name])
    assert "checked mode cannot bounds-check" in message and "without checked=True" in message, message


@pytest.mark.parametrize("mode", sorted(CHECKED))
@pytest.mark.parametrize("name", sorted(TEMPLATE))
def test_template_pointers_are_checked(mode, name):
    dev, lib = LIBRARIES.get(mode)
    assert_checked_write(dev, lib, name, TEMPLATE[name][2], TEMPLATE[name][3])


@pytest.mark.parametrize("mode", sorted(ALL))
def test_template_pointers_in_bounds_give_exact_values(mode):
    _, lib = LIBRARIES.get(mode)
    for name, (_, _, _, expected) in sorted(TEMPLATE.items()):
        assert_in_bounds(lib, name, expected)


# Valid MSL: an elaborated class type's pointer with its space (anc's nbody, `device struct particle* p`)
ELABORATED = ("struct S { float a; };",
              "device struct S* s = (device struct S*)out; const device struct S* t = &s[1]; s[0].a = t->a + 40.0f;")


@pytest.mark.parametrize("mode", sorted(ALL))
def test_class_pointers_with_a_space_run(mode):
    out = np.array([1, 2, 3, 4], np.float32)
    open_mode(mode).compile(_source(*ELABORATED)).k(1, out, np.uint64(0))
    assert out.tolist() == [42, 2, 3, 4]


# Valid MSL the unchecked device runs as Metal does: pointers to pointers (the memory rule read
# `device float* thread* pp = &p` as a device pointer made from a thread address before 2026-12-03).
POINTERS_TO_POINTERS = ("device float* p = out; device float* thread* pp = &p; (*pp)[1] = 42.0f;\n"
                        "  float v[2] = {5.0f, 6.0f}; thread float* q = v; thread float* thread* qq = &q; out[2] = (*qq)[1];\n"
                        "  typedef device float* P; thread P* pq = &p; (*pq)[3] = 9.0f;")


def test_pointers_to_pointers_run_unchecked():
    dev = mc.Device("cpu", sandbox=False)
    out = np.array([1, 2, 3, 4], np.float32)
    dev.compile(_source("", POINTERS_TO_POINTERS)).k(1, out, np.uint64(0))
    assert out.tolist() == [1, 42, 6, 9]
    with pytest.raises(mc.CompileError, match="checked mode cannot bounds-check a pointer to a pointer"):
        mc.Device("cpu", checked=True, sandbox=False).compile(_source("", POINTERS_TO_POINTERS))
