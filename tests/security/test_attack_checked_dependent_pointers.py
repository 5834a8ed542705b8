"""Attacks on checked mode through pointers whose pointee is a computed or dependent type
(security, issue P2.4 item 3), on the checked CPU device in-process and in the sandbox.

The checked translation makes a pointer type a checked pointer where its tokens show an address
space before the '*' (`device float*`) or a template's parameter (`T*`). Until 2026-12-03 a
pointee that names its type some other way stayed a plain pointer, which a checked pointer
converts to, and `p[far]` wrote past every Buffer (each below ran unchecked, 2026-12-03): a
`decltype` (`device decltype(x)* p`, `decltype(x)* p`, `(device decltype(x)*)out`), a member
type whose alias carries the space (`X::type* p` of `using type = device float;`, `typename
Y::type*` in a template, `id<device float>::type*`), an alias of a type with its space (`using F
= device float; F* p`), and a `thread` pointer named by an alias template or a class template's
member alias (`template <class T> using ptr = T*;`, `using type = T*;`: refused before when
spelled `thread T*`). Now each is a checked pointer (an ExecutionError naming the bounds, the
victim Buffer untouched, the device goes on), and the same kernels in bounds give the plain
device's exact values. `device typename Y::type* p`, refused on every device as a pointer
without an address space, runs.
"""

from __future__ import annotations

import numpy as np
import pytest

import metalcall as mc
from attack_kernels import CHECKED_AND_PLAIN, CHECKED_MODES, HEADER, KernelLibraries, checked_kernel, open_mode

pytestmark = pytest.mark.skipif("cpu" not in mc.backends(), reason="the cpu backend is not built in")

# name: (program-scope prefix, body, out after a run with far = 0 on [1, 2, 3, 4]); each writes
# through a pointer made from `out` at index `far` (+ a small offset in bounds)
ATTACKS = {
    "decltype-with-space": ("", "float x = 0; device decltype(x)* p = out; p[far] = 42.0f;", [42, 2, 3, 4]),
    "decltype-without-space": ("", "float x = 0; decltype(x)* p = out; p[far + 1] = 42.0f;", [1, 42, 3, 4]),
    "decltype-of-element": ("", "metal::remove_reference_t<decltype(*out)>* p = out; p[far + 2] = 42.0f;", [1, 2, 42, 4]),
    "decltype-c-style-cast": ("", "float x = 0; ((device decltype(x)*)out)[far + 3] = 42.0f;", [1, 2, 3, 42]),
    "decltype-static-cast": ("", "float x = 0; static_cast<device decltype(x)*>(out)[far] = 42.0f;", [42, 2, 3, 4]),
    "decltype-return": ("", "auto f = [](device float* o) -> decltype(o) { return o; }; f(out)[far + 1] = 42.0f;",
                        [1, 42, 3, 4]),
    "member-type-with-space": ("struct X1 { using t1 = device float; };", "X1::t1* p = out; p[far + 2] = 42.0f;",
                               [1, 2, 42, 4]),
    "typename-member-type": ("struct X2 { using t2 = float; };\n"
                             "template <class Y> void put2(device float* o, ulong k) { device typename Y::t2* p = o; p[k] = 42.0f; }",
                             "put2<X2>(out, far + 3);", [1, 2, 3, 42]),
    "typename-member-type-with-space": ("struct X3 { using t3 = device float; };\n"
                                        "template <class Y> void put3(device float* o, ulong k) { typename Y::t3* p = o; p[k] = 42.0f; }",
                                        "put3<X3>(out, far);", [42, 2, 3, 4]),
    "typename-cast": ("struct X4 { using t4 = float; };\n"
                      "template <class Y> void put4(device float* o, ulong k) { ((device typename Y::t4*)o)[k] = 42.0f; }",
                      "put4<X4>(out, far + 1);", [1, 42, 3, 4]),
    "member-type-parameter": ("struct X5 { using t5 = device float; }; void put5(ulong k, X5::t5* p) { p[k] = 42.0f; }",
                              "put5(far + 2, out);", [1, 2, 42, 4]),
    "member-type-result": ("struct X6 { using t6 = device float; }; X6::t6* get6(device float* o) { return o; }",
                           "get6(out)[far + 3] = 42.0f;", [1, 2, 3, 42]),
    "member-type-member": ("struct X7 { using t7 = device float; }; struct H7 { X7::t7* p; };",
                           "H7 h; h.p = out; h.p[far] = 42.0f;", [42, 2, 3, 4]),
    "member-type-for": ("struct X8 { using t8 = device float; };",
                        "for (X8::t8* p = out; p; p = nullptr) p[far + 1] = 42.0f;", [1, 42, 3, 4]),
    "class-template-member-type": ("template <class T> struct id9 { using t9 = T; };",
                                   "id9<device float>::t9* p = out; p[far + 2] = 42.0f;", [1, 2, 42, 4]),
    "alias-with-space": ("using F10 = device float;", "F10* p = out; p[far + 3] = 42.0f;", [1, 2, 3, 42]),
    "typedef-with-space": ("typedef device float F11;", "F11* p = out; p[far] = 42.0f;", [42, 2, 3, 4]),
    "alias-template": ("template <class T> using ptr12 = T*;", "ptr12<device float> p = out; p[far + 1] = 42.0f;",
                       [1, 42, 3, 4]),
    "alias-template-with-space": ("template <class T> using ptr13 = device T*;", "ptr13<float> p = out; p[far + 2] = 42.0f;",
                                  [1, 2, 42, 4]),
    "class-template-pointer-alias": ("template <class T> struct id14 { using t14 = T*; };",
                                     "id14<device float>::t14 p = out; p[far + 3] = 42.0f;", [1, 2, 3, 42]),
    "thread-pointer-alias": ("using P15 = thread float*;",
                             "float v[4] = {1, 2, 3, 4}; P15 p = v; p[far] = 42.0f; out[0] = v[0];", [42, 2, 3, 4]),
    "thread-alias-template": ("template <class T> using Ptr16 = thread T*;",
                              "float v[4] = {1, 2, 3, 4}; Ptr16<float> p = v; p[far + 1] = 42.0f; out[1] = v[1];",
                              [1, 42, 3, 4]),
}

LIBRARIES = KernelLibraries(ATTACKS)


@pytest.mark.parametrize("mode", sorted(CHECKED_MODES))
@pytest.mark.parametrize("name", sorted(ATTACKS))
def test_computed_pointees_are_checked(mode, name):
    LIBRARIES.assert_checked(mode, name)


@pytest.mark.parametrize("mode", sorted(CHECKED_AND_PLAIN))
def test_in_bounds_values_match_the_plain_device(mode):
    LIBRARIES.assert_all_in_bounds(mode)


# Products of a member constant stay products (the pointee rule reads only where a type stands).
PRODUCTS = ("struct S { static constant constexpr float k = 2.0f; };",
            "float y = 3.0f; out[0] = S::k * y; float z = (S::k * y); out[1] = z + float(far);")


@pytest.mark.parametrize("mode", sorted(CHECKED_AND_PLAIN))
def test_member_products_run(mode):
    out = np.array([1, 2, 3, 4], np.float32)
    open_mode(mode).compile(HEADER + checked_kernel(*PRODUCTS)).k(1, out, np.uint64(0))
    assert out.tolist() == [6, 6, 3, 4]
