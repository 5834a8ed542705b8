"""Checked mode stays on through views of bytes and plain pointers (issue P2.4 item 3).

Before, a kernel on the checked device could rewrite a checked pointer's bounds without naming
them: through a byte view of a struct that holds one (`(thread uchar*)&s`, then `b[16 + j] =
…`, a copy loop, a `threadgroup` struct), through `as_type` of a variable whose type the tokens
do not show (`auto w = make(a); as_type<ulong4>(w)`), or through a union whose pointer member is
a typedef; and pointer types that the translation leaves plain kept no
bounds at all (a C array of pointers, `W<thread float*>`, `metal::array<thread float*, 2>`,
`using P = thread float*`, and until 2026-12-03 `W<device float*>`). Each wrote past a 4-element buffer or read any private memory with
no error. Now a checked pointer is not standard-layout, so neither is anything that holds one,
and a pointer cast or as_type to or from such a type is a compile error; a pointer type given to a
template is a checked pointer (every address space), and so, since 2026-12-03, is a `thread` pointer
type named by `using` (refused before); the other plain pointer types and unions are refused by the
front end. Close MSL still runs.
"""

from __future__ import annotations

import numpy as np
import pytest

import metalcall as mc

pytestmark = pytest.mark.skipif("cpu" not in mc.backends(), reason="the cpu backend is not built in")

HEADER = "#include <metal_stdlib>\nusing namespace metal;\n"
HOLDER = "struct S { device float* p; };\n"


def kernel(body: str, prefix: str = "") -> str:
    return (HEADER + prefix + "kernel void k(device float* a [[buffer(0)]], uint i [[thread_position_in_grid]]) {\n"
            "  if (i == 0) {\n    " + body + "\n  }\n}\n")


ATTEMPTS = {
    "byte-view-of-holder": kernel("S s; s.p = a; thread uchar* b = (thread uchar*)&s; for (int j = 16; j < 24; ++j) "
                                  "b[j] = 0x7f; s.p[40] = 5.0f;", HOLDER),
    "copy-loop-into-holder": kernel("S t; t.p = a; thread uchar* d = (thread uchar*)&t; ulong big = 1000; "
                                    "thread uchar* src = (thread uchar*)&big; for (int j = 0; j < 8; ++j) d[16 + j] = src[j]; "
                                    "t.p[40] = 5.0f;", HOLDER),
    "word-view-of-holder": kernel("S s; s.p = a; reinterpret_cast<thread ulong*>(&s)[2] = 1000; s.p[40] = 5.0f;", HOLDER),
    "view-of-pointer-variable": kernel("device float* p = a; thread ulong* w = (thread ulong*)&p; w[2] = 1000; p[40] = 5.0f;"),
    "threadgroup-holder-view": kernel("threadgroup S s; s.p = a; threadgroup ulong* w = (threadgroup ulong*)&s; w[2] = 1000;"
                                      " s.p[40] = 5.0f;", HOLDER),
    # a plain pointer's storage viewed as an integer's bytes: a pointer made from any bits (each
    # wrote through an attacker's address before 2026-12-03; spelled `thread float**`, a pointer
    # to a pointer, checked mode refuses it at once since, so through an alias here)
    "pointer-over-integer-bytes": kernel("ulong v = 4096 + ulong(i); thread FP* pp = (thread FP*)&v; **pp = 5.0f;",
                                         "typedef thread float* FP;\n"),
    "pointer-over-byte-view": kernel("ulong v = 4096; thread uchar* b = (thread uchar*)&v; "
                                     "thread FP* pp = (thread FP*)b; **pp = 5.0f;", "typedef thread float* FP;\n"),
    "void-view-of-holder": kernel("S s; s.p = a; thread void* v = &s; thread ulong* w = (thread ulong*)v; w[2] = 1000;"
                                  " s.p[40] = 5.0f;", HOLDER),
    "as_type-of-auto-holder": kernel("auto w = mk(a); ulong4 r = as_type<ulong4>(w); r.z = 1000; w.p[40] = float(r.x);",
                                     HOLDER + "S mk(device float* p) { S s; s.p = p; return s; }\n"),
    "union-through-typedef": kernel("V u; u.p = a; u.r.z = 1000; u.p[40] = 5.0f;",
                                    "typedef device float* FP;\nunion V { FP p; ulong4 r; V() {} };\n"),
    # plain pointers: reads of the private memory beside x, which no bounds covered
    "array-of-pointers": kernel("float x = 1.0f; thread float* ps[2] = {&x, &x}; a[0] = ps[0][1];"),
}


@pytest.mark.parametrize("name", sorted(ATTEMPTS))
def test_refused_and_nothing_written(name):
    memory = np.zeros(64, dtype=np.float32)
    with pytest.raises(mc.CompileError) as info:
        mc.Device("cpu", checked=True, sandbox=False).compile(ATTEMPTS[name]).k(4, memory[:4])
    assert "source.metal:" in str(info.value).splitlines()[0], str(info.value)
    assert "[MSL rule: checked mode stays on]" in str(info.value), str(info.value)
    assert not memory.any()


# What the refusals keep: byte views of structs without pointers, typedefs of thread pointers,
# checked pointers in structs, as_type of plain structs' members, device pointers given to templates.
VALID = {
    "byte-view-of-plain-struct": ("P q; q.x = 2.0f; q.y = 0.0f; thread uchar* b = (thread uchar*)&q; "
                                  "for (int j = 0; j < 4; ++j) b[4 + j] = b[j]; "
                                  "a[0] = q.y;", "struct P { float x; float y; };\n"),
    "typedef-of-thread-pointer": ("float x = 2.0f; TP p = &x; a[0] = p[0];", "typedef thread float* TP;\n"),
    "holder-used-as-pointer": ("S s; s.p = a; s.p[0] = 2.0f;", HOLDER),
    "device-pointer-in-template": ("W<device float*> w; w.v = a; w.v[0] = 2.0f;", "template <class T> struct W { T v; };\n"),
}


# Pointer types given to templates are checked pointers (before 2026-12-03 `W<thread float*>` was
# refused and `W<device float*>`, `metal::array<device float*, N>` plain: `w.v[at]` wrote anywhere).
CHECKED = {
    "template-of-thread-pointer": ("float x = 1.0f; W<thread float*> w; w.v = &x; a[0] = w.v[1];",
                                   "template <class T> struct W { T v; };\n", "variable"),
    "metal-array-of-thread-pointers": ("float x = 1.0f; metal::array<thread float*, 2> p; p[0] = &x; a[0] = p[0][1];", "",
                                       "variable"),
    "template-of-device-pointer": ("W<device float*> w; w.v = a; w.v[40] = 5.0f;", "template <class T> struct W { T v; };\n",
                                   "argument 'a'"),
    "template-of-device-pointer-as-value": ("auto w = W<device float*>{a}; w.v[40] = 5.0f;",
                                            "template <class T> struct W { T v; };\n", "argument 'a'"),
    "template-of-thread-pointer-parameter": ("float x[4] = {1, 2, 3, 4}; a[0] = g({x});",
                                             "template <class T> struct W { T v; };\nfloat g(W<thread float*> w) { return w.v[40]; }\n",
                                             "private array"),
    "metal-array-of-device-pointers": ("metal::array<device float*, 2> p = {a, a}; p[1][40] = 5.0f;", "", "argument 'a'"),
    # refused before 2026-12-03 (the translation left them plain pointers), checked pointers since
    "using-alias-of-thread-pointer": ("float x = 1.0f; P p = &x; a[0] = p[1];", "using P = thread float*;\n", "variable"),
    "alias-template-of-thread-pointer": ("float x = 1.0f; Ptr<float> p = &x; a[0] = p[1];",
                                         "template <class T> using Ptr = thread T*;\n", "variable"),
}


@pytest.mark.parametrize("name", sorted(CHECKED))
def test_template_pointer_arguments_are_checked(name):
    body, prefix, what = CHECKED[name]
    memory = np.zeros(64, dtype=np.float32)
    with pytest.raises(mc.ExecutionError) as info:
        mc.Device("cpu", checked=True, sandbox=False).compile(kernel(body, prefix)).k(4, memory[:4])
    message = str(info.value)
    assert "kernel 'k' " + what in message and "out of bounds" in message and "the access was not performed" in message, message
    assert not memory[4:].any()


@pytest.mark.parametrize("name", sorted(VALID))
def test_close_msl_runs(name):
    body, prefix = VALID[name]
    memory = np.zeros(4, dtype=np.float32)
    mc.Device("cpu", checked=True, sandbox=False).compile(kernel(body, prefix)).k(4, memory)
    assert memory.tolist() == [2.0, 0.0, 0.0, 0.0]
