"""Checked mode's gaps of session 23 (docs/design.md, checked mode): pointers made from `this`,
pointer-to-array parameters and references to 2-D arrays whose extents the function deduces.

- `this` as a pointer value (`auto p = this; p[k]`, `(this)[k]`, `(&(*this))[k]`, `&*this + k`,
  `decltype(this)`, `f(this)` into a `thread S*`, a deduced `thread T*` or a generic lambda's
  `auto`, `return this;`) is a checked pointer to the object: one element, or the Buffer the
  object lies in (a `device` member function). Before, `auto p = this; p[1 << 16]` and the
  deduced forms read and wrote beside the object unchecked. `this[k]`, `this + k` and casts of
  `this` stay refused (implementation_rules.cpp), CRTP's `static_cast<const thread D*>(this)->f()`
  and `this->m` stay allowed.
- `threadgroup float (*t)[8]` (thread, device and constant too) is a checked pointer to checked
  rows; `template <int R, int C> … (&t)[R][C]` (any number of extents) takes the checked array's
  elements and views them as nested checked arrays. Both did not compile in checked mode.

Each kernel writes (or reads) at `far` (0, or thousands of elements away when `at` is a victim
Buffer's address): in bounds it gives the same values on the plain, checked and sandboxed checked
CPU devices (and the Metal simulator when METALCALL_DEVICE=metal-sim); out of bounds the checked
devices raise ExecutionError naming what faulted, the victim untouched. The in-process checked
runs of the out-of-bounds calls go in a subprocess, so a regression fails instead of killing pytest.
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

S = "struct S { float a; float b; "
OUTSIDE = "pointer outside every Buffer (one element)"

# name: (program-scope prefix, body, what the fault names, out after a run with far = 0 on [1, 2, 3, 4])
CASES = {
    # ---- `this` as a pointer value ----
    "this-auto": (S + "void put(ulong k, float v) { auto p = this; p[k].a = v; } };",
                  "S s{1.0f, 2.0f}; s.put(far, 42.0f); out[0] = s.a; out[1] = s.b;", OUTSIDE, [42, 2, 3, 4]),
    "this-auto-read-const": (S + "float get(ulong k) const { auto p = this; return p[k].b; } };",
                             "S s{1.0f, 40.0f}; out[2] = s.get(far) + 2.0f;", OUTSIDE, [1, 2, 42, 4]),
    "this-parenthesized": (S + "void put(ulong k, float v) { (this)[k].b = v; } };",
                           "S s{1.0f, 2.0f}; s.put(far, 42.0f); out[1] = s.b;", OUTSIDE, [1, 42, 3, 4]),
    "this-address-of-dereference": (S + "void put(ulong k, float v) { (&(*this))[k].a = v; } };",
                                    "S s{1.0f, 2.0f}; s.put(far, 42.0f); out[0] = s.a;", OUTSIDE, [42, 2, 3, 4]),
    "this-address-of-dereference-plus": (S + "void put(ulong k, float v) { (&*this + k)->a = v; } };",
                                         "S s{1.0f, 2.0f}; s.put(far, 42.0f); out[3] = s.a;", OUTSIDE,
                                         [1, 2, 3, 42]),
    "this-decltype": (S + "void put(ulong k, float v) { decltype(this) p = this; p[k].a = v; } };",
                      "S s{1.0f, 2.0f}; s.put(far, 42.0f); out[0] = s.a;", OUTSIDE, [42, 2, 3, 4]),
    "this-thread-pointer-variable": (S + "void put(ulong k, float v) { thread S* p = this; p[k].a = v; } };",
                                     "S s{1.0f, 2.0f}; s.put(far, 42.0f); out[0] = s.a;", OUTSIDE, [42, 2, 3, 4]),
    "this-to-a-thread-parameter": ("struct S;\nvoid put_s(thread S* p, ulong k, float v);\n" + S +
                                   "void put(ulong k, float v) { put_s(this, k, v); } };\n"
                                   "void put_s(thread S* p, ulong k, float v) { p[k].b = v; }",
                                   "S s{1.0f, 2.0f}; s.put(far, 42.0f); out[1] = s.b;", OUTSIDE, [1, 42, 3, 4]),
    "this-to-a-deduced-parameter": ("template <class T> void put_t(thread T* p, ulong k, float v) { p[k].a = v; }\n" + S +
                                    "void put(ulong k, float v) { put_t(this, k, v); } };",
                                    "S s{1.0f, 2.0f}; s.put(far, 42.0f); out[0] = s.a;", OUTSIDE, [42, 2, 3, 4]),
    "this-to-a-deduced-value": ("template <class P> void put_p(P p, ulong k, float v) { p[k].a = v; }\n" + S +
                                "void put(ulong k, float v) { put_p(this, k, v); } };",
                                "S s{1.0f, 2.0f}; s.put(far, 42.0f); out[0] = s.a;", OUTSIDE, [42, 2, 3, 4]),
    "this-to-a-generic-lambda": (S + "void put(ulong k, float v) { auto f = [](auto q, ulong j, float w) { q[j].a = w; }; "
                                 "f(this, k, v); } };",
                                 "S s{1.0f, 2.0f}; s.put(far, 42.0f); out[0] = s.a;", OUTSIDE, [42, 2, 3, 4]),
    "this-returned": (S + "thread S* self() { return this; } };",
                      "S s{1.0f, 2.0f}; auto p = s.self(); p[far].b = 42.0f; out[1] = s.b;", OUTSIDE,
                      [1, 42, 3, 4]),
    "this-in-a-lambda-capturing-it": (S + "void put(ulong k, float v) { auto f = [this](ulong j, float w) { "
                                      "auto p = this; p[j].a = w; }; f(k, v); } };",
                                      "S s{1.0f, 2.0f}; s.put(far, 42.0f); out[0] = s.a;", OUTSIDE, [42, 2, 3, 4]),
    # `&(*p).m`: a member of what p points to, as `&p->m` (a raw pointer before, whose index
    # went anywhere: the sandbox crashed).
    "this-dereferenced-member-address": ("struct A2 { float a[2]; void put(ulong k, float v) { (&(*this).a[0])[k] = v; } };",
                                         "A2 s{{1.0f, 2.0f}}; s.put(far + 1, 42.0f); out[0] = s.a[1];",
                                         "struct array member", [42, 2, 3, 4]),
    "dereferenced-member-address-in-a-buffer": ("struct Q { float a; float b; };",
                                                "device Q* q = (device Q*)out; (&(*q).b)[far] = 42.0f;",
                                                "argument 'out'", [1, 42, 3, 4]),
    # A `device` member function: `this` lies in the Buffer, whose bounds it gets (the next
    # element is in bounds, as in Metal).
    "this-in-a-buffer": ("struct P { float a; void put(ulong k, float v) device { auto p = this; p[k].a = v; } };",
                         "((device P*)out)[1].put(far + 1, 42.0f);", "argument 'out'", [1, 2, 42, 4]),
    # What stays as it was: member access, `*this`, CRTP, comparisons, a copy.
    "this-member-access-crtp-compare": (
        "template <class D> struct CrtpBase { float run() const { return static_cast<const thread D*>(this)->impl(); } };\n"
        "struct D1 : CrtpBase<D1> { float v; float impl() const { return this->v + (*this).v; } "
        "bool same(thread const D1& o) const { return this == &o; } D1 copy() const { return *this; } };",
        "D1 d; d.v = 20.0f; D1 e = d.copy(); e.v = 1.0f; ulong k = far > 0 ? 9 : 0;"
        "out[k] = d.run() + (d.same(d) ? 2.0f : 0.0f) + (d.same(e) ? 100.0f : 0.0f);",
        "argument 'out'", [42, 2, 3, 4]),
    # ---- pointer-to-array parameters ----
    "row-pointer-threadgroup": ("void put_rows(threadgroup float (*t)[4], ulong i, float v) { t[i / 4][i % 4] = v; }",
                                "threadgroup float tile[2][4]; for (int r = 0; r < 2; ++r) for (int c = 0; c < 4; ++c) "
                                "tile[r][c] = r * 4 + c; put_rows(tile, far + 5, 42.0f); out[0] = tile[1][1]; "
                                "out[1] = tile[1][2];", "threadgroup array", [42, 6, 3, 4]),
    "row-pointer-threadgroup-column": ("void put_col(threadgroup float (*t)[4], ulong r, ulong c, float v) { t[r][c] = v; }",
                                       "threadgroup float tile[2][4]; tile[0][3] = 0.0f; put_col(tile, 0, far + 3, 42.0f); "
                                       "out[3] = tile[0][3];", "threadgroup array", [1, 2, 3, 42]),
    "row-pointer-thread": ("void put_priv(thread float (*t)[4], ulong i, float v) { t[i / 4][i % 4] = v; }",
                           "float m[2][4] = {{0, 1, 2, 3}, {4, 5, 6, 7}}; put_priv(m, far + 2, 42.0f); "
                           "out[0] = m[0][2]; out[1] = m[1][3];", "private array", [42, 7, 3, 4]),
    "row-pointer-thread-offset": ("void put_off(thread float (*t)[4], ulong i, float v) { (*t)[i] = v; t[1][0] = 5.0f; }",
                                  "float m[3][4] = {}; put_off(m + 1, far + 1, 42.0f); out[0] = m[1][1]; "
                                  "out[1] = m[2][0];", "private array", [42, 5, 3, 4]),
    "row-pointer-const-read": ("float get_rows(thread const float (*t)[2], ulong i) { return t[i / 2][i % 2]; }",
                               "float m[2][2] = {{1, 2}, {3, 40}}; out[1] = get_rows(m, far + 3) + 2.0f;",
                               "private array", [1, 42, 3, 4]),
    "row-pointer-3d": ("void put_3d(thread float (*t)[2][2], ulong i, float v) { t[i / 4][(i / 2) % 2][i % 2] = v; }",
                       "float m[2][2][2] = {}; put_3d(m, far + 7, 42.0f); out[2] = m[1][1][1];", "private array",
                       [1, 2, 42, 4]),
    "row-pointer-device-member": ("struct Rows { float m[2][2]; };\n"
                                  "void put_dev(device float (*t)[2], ulong i, float v) { t[i / 2][i % 2] = v; }",
                                  "put_dev(((device Rows*)out)->m, far + 3, 42.0f);", "struct array member",
                                  [1, 2, 3, 42]),
    "row-pointer-struct-member": ("struct M { float m[2][4]; };\n"
                                  "void put_m(thread float (*t)[4], ulong i, float v) { t[i / 4][i % 4] = v; }",
                                  "M x = {}; put_m(x.m, far + 5, 42.0f); out[0] = x.m[1][1];", "struct array member",
                                  [42, 2, 3, 4]),
    "row-pointer-constant-table": ("constant float table[2][2] = {{1, 2}, {3, 40}};\n"
                                   "float get_c(constant float (*t)[2], ulong i) { return t[i / 2][i % 2]; }",
                                   "out[0] = get_c(table, far + 3) + 2.0f;", "constant array", [42, 2, 3, 4]),
    # ---- array references in every space (`device` and `constant` ones did not compile), and a
    # struct's member array bound to another space's reference (rows of another kind) ----
    "device-reference-to-a-member": ("struct M2 { float m[2][2]; };\n"
                                     "void put_d(device float (&t)[2][2], ulong i, float v) { t[i / 2][i % 2] = v; }",
                                     "put_d(((device M2*)out)->m, far + 3, 42.0f);", "struct array member",
                                     [1, 2, 3, 42]),
    "constant-reference-to-a-table": ("constant float table3[4] = {1, 2, 40, 4};\n"
                                      "float get_k(constant float (&t)[4], ulong i) { return t[i]; }",
                                      "out[2] = get_k(table3, far + 2) + 2.0f;", "constant array", [1, 2, 42, 4]),
    "thread-reference-to-a-member": ("struct V4 { float v[4]; };\n"
                                     "void put_v(thread float (&t)[4], ulong i, float v) { t[i] = v; }",
                                     "V4 x = {}; put_v(x.v, far + 2, 42.0f); out[1] = x.v[2];", "private array",
                                     [1, 42, 3, 4]),
    "deduced-device-reference": ("struct M3 { float m[2][2]; };\n"
                                 "template <int R, int C> void put_dd(device float (&t)[R][C], ulong i, float v) "
                                 "{ t[i / C][i % C] = v; }",
                                 "put_dd(((device M3*)out)->m, far + 2, 42.0f);", "struct array member", [1, 2, 42, 4]),
    # ---- references to arrays whose extents the function deduces ----
    "deduced-2d-threadgroup": ("template <int R, int C> void put_ref(threadgroup float (&t)[R][C], ulong i, float v) "
                               "{ t[i / C][i % C] = v; }",
                               "threadgroup float tile[2][4]; tile[1][2] = 0.0f; put_ref(tile, far + 6, 42.0f); "
                               "out[2] = tile[1][2];", "threadgroup array", [1, 2, 42, 4]),
    "deduced-2d-thread": ("template <int R, int C> void put_ref2(thread float (&t)[R][C], ulong i, float v) "
                          "{ t[i / C][i % C] = v; }",
                          "float m[3][2] = {}; put_ref2(m, far + 5, 42.0f); out[0] = m[2][1]; out[1] = float(3 * 2);",
                          "private array", [42, 6, 3, 4]),
    "deduced-2d-element-and-extents": ("template <class T, int R, int C> T sum_ref(thread const T (&t)[R][C], ulong k) "
                                       "{ T s = 0; for (int r = 0; r < R; ++r) for (int c = 0; c < C; ++c) s += t[r][c]; "
                                       "return s + t[k][0]; }",
                                       "float m[2][3] = {{1, 2, 3}, {4, 5, 6}}; out[0] = sum_ref(m, far);",
                                       "private array", [22, 2, 3, 4]),
    "deduced-one-of-two-extents": ("template <int C> void put_c(thread int (&t)[2][C], ulong i, int v) { t[i / C][i % C] = v; }",
                                   "int m[2][4] = {}; put_c(m, far + 7, 42); out[3] = float(m[1][3]);",
                                   "private array", [1, 2, 3, 42]),
    "deduced-3d": ("template <int A, int B, int C> void put_3r(thread float (&t)[A][B][C], ulong i, float v) "
                   "{ t[i / (B * C)][(i / C) % B][i % C] = v; }",
                   "float m[2][2][3] = {}; put_3r(m, far + 11, 42.0f); out[1] = m[1][1][2];", "private array",
                   [1, 42, 3, 4]),
    "deduced-2d-constant-table": ("constant float table2[2][3] = {{1, 2, 3}, {4, 5, 40}};\n"
                                  "template <int R, int C> float get_t(constant float (&t)[R][C], ulong i) "
                                  "{ return t[i / C][i % C]; }",
                                  "out[3] = get_t(table2, far + 5) + 2.0f;", "constant array", [1, 2, 3, 42]),
}


def _spaced(name: str, prefix: str, body: str) -> tuple[str, str]:
    """The case's declarations in a namespace of its own (one library holds every case)."""
    space = "ns_" + name.replace("-", "_")
    return f"namespace {space} {{\n{prefix}\n}}", f"using namespace {space}; {body}"


def _cases(table):
    return {k: (*_spaced(k, c[0], c[1]), c[-1]) for k, c in table.items()}


LIBRARIES = KernelLibraries(_cases(CASES))
# The one whose far write stays in `out` when in bounds but names `out` when not.
OUT_OF_BOUNDS = sorted(CASES)


def _what(name: str) -> str:
    return CASES[name][2]


@pytest.mark.parametrize("mode", ["cpu", "checked", "checked-sandbox"])
def test_in_bounds_values(mode):
    """Every kernel with far = 0 gives its hand-derived values on the plain and both checked devices."""
    _, lib = LIBRARIES.get(mode)
    for name in sorted(CASES):
        out = np.array([1, 2, 3, 4], np.float32)
        getattr(lib, name.replace("-", "_"))(1, out, np.uint64(0))
        assert out.tolist() == CASES[name][3], name


@pytest.mark.skipif(os.environ.get("METALCALL_DEVICE", "").split(":")[0] != "metal-sim",
                    reason="the Metal simulator runs when METALCALL_DEVICE=metal-sim")
def test_in_bounds_values_on_the_metal_simulator():
    dev = mc.Device("metal-sim:0")
    lib = dev.compile(HEADER + "".join(checked_kernel(c[0], c[1], n.replace("-", "_"))
                                       for n, c in sorted(_cases(CASES).items())))
    for name in sorted(CASES):
        out = np.array([1, 2, 3, 4], np.float32)
        getattr(lib, name.replace("-", "_"))(1, out, np.uint64(0))
        assert out.tolist() == CASES[name][3], name


@pytest.mark.parametrize("name", OUT_OF_BOUNDS)
def test_out_of_bounds_raises_in_the_sandboxed_checked_device(name):
    LIBRARIES.assert_checked("checked-sandbox", name, _what(name))


def test_out_of_bounds_raises_on_the_in_process_checked_device():
    """The same calls on Device("cpu", checked=True, sandbox=False), in a subprocess."""
    assert_checked_in_process(__file__, "OUT_OF_BOUNDS", "_what")


# What checked mode refuses with a CompileError (the plain device compiles each): arithmetic on
# `this` itself and casts of it, whose results no bounds would follow.
REFUSED = {
    "this-plus": (S + "void put(ulong k, float v) { (this + k)->a = v; } };", "S s{1.0f, 2.0f}; s.put(far, 42.0f);"),
    "this-index": (S + "void put(ulong k, float v) { this[k].a = v; } };", "S s{1.0f, 2.0f}; s.put(far, 42.0f);"),
    "this-byte-cast": (S + "void put(ulong k, float v) { ((thread float*)this)[k] = v; } };",
                       "S s{1.0f, 2.0f}; s.put(far, 42.0f);"),
    "this-reinterpret-cast": (S + "void put(ulong k, float v) { auto p = reinterpret_cast<thread S*>(this); p[k].a = v; } };",
                              "S s{1.0f, 2.0f}; s.put(far, 42.0f);"),
}


@pytest.mark.parametrize("mode", ["checked", "checked-sandbox"])
@pytest.mark.parametrize("name", sorted(REFUSED))
def test_arithmetic_on_this_is_refused(mode, name):
    prefix, body = REFUSED[name]
    with pytest.raises(mc.CompileError) as info:
        open_mode(mode).compile(HEADER + checked_kernel(*_spaced(name, prefix, body)))
    assert "arithmetic on 'this' or a pointer cast of it" in str(info.value), str(info.value)[:500]


# Checked mode's limit left (docs/design.md, checked mode): valid MSL the checked device refuses at
# run time (its bounds are one element). (A pointer-to-array parameter with a template extent or
# element and a local pointer-to-array variable compile since 2026-12-05:
# test_checked_array_pointers.py.)
LIMITS = {
    "this-reaching-a-neighbour-in-an-array": ("struct N { float a; void put(ulong k) threadgroup { auto p = this; p[k].a = 42.0f; } };",
                                              "threadgroup N s[2]; s[1].a = 1.0f; s[0].put(far + 1); out[0] = s[1].a;",
                                              [42, 2, 3, 4]),
}


@pytest.mark.xfail(strict=True, reason="checked mode: `this` reaching past its object in an array "
                                       "(docs/design.md, checked mode's limits)")
@pytest.mark.parametrize("name", sorted(LIMITS))
def test_checked_mode_limits(name):
    prefix, body, expected = LIMITS[name]
    for mode in ("cpu", "checked"):
        lib = open_mode(mode).compile(HEADER + checked_kernel(*_spaced(name, prefix, body)))
        out = np.array([1, 2, 3, 4], np.float32)
        lib.k(1, out, np.uint64(0))
        assert out.tolist() == expected, (mode, name)
