"""Checked mode cannot be turned off from kernel code (issue P2.4 item 3). Before, a kernel on
the checked device could assign its checked pointer's state (`a.count_ = 1000; a[40] = 5.0f;`
wrote past a 4-element buffer), make a checked pointer of its own (`metal::mtl_checked<float>`),
or reach the same state without naming it: a structured binding, a union over the pointer,
as_type of the pointer. Now the prelude's and the generated code's names are reserved (mtl_,
metalcall_, METALCALL_ and the prelude's METAL_ macros), structured bindings are refused (C++17,
not MSL), and checked mode refuses unions that hold pointers and as_type of its pointers (or
to a struct that holds one). Each
kernel below is a CompileError, and the memory after the buffer is never written."""

from __future__ import annotations

import numpy as np
import pytest

import metalcall as mc

HEADER = "#include <metal_stdlib>\nusing namespace metal;\n"


def kernel(body: str) -> str:
    return HEADER + "kernel void k(device float* a [[buffer(0)]], uint i [[thread_position_in_grid]]) {\n  if (i == 0) {\n    " + body + "\n  }\n}\n"


ATTEMPTS = {
    "count-member": kernel("a.count_ = 1000; a[40] = 5.0f;"),
    "base-member": kernel("a.base_ = a.base_ + 40; a[0] = 5.0f;"),
    "offset-member": kernel("a.offset_ = 40; a[0] = 5.0f;"),
    "reserved-member": kernel("a.mtl_count = 1000; a[40] = 5.0f;"),
    "handmade-pointer": kernel('metal::mtl_checked<float> b(&a[0], 1000, "x"); b[40] = 5.0f;'),
    "handmade-pointer-unqualified": kernel('mtl_checked<float> b(&a[0], 1000, "x"); b[40] = 5.0f;'),
    "runtime-namespace": kernel("metal::mtl_rt::region_count = 0; a[40] = 5.0f;"),
    "using-runtime-namespace": kernel("using namespace metal::mtl_rt; region_count = 0; a[40] = 5.0f;"),
    "structured-binding": kernel("auto& [b, o, n, w] = a; n = 1000; a[40] = 5.0f;"),
    "structured-binding-array": kernel("float t[4] = {0, 0, 0, 0}; auto& [raw] = t; raw[40] = 5.0f; a[0] = t[0];"),
    "union-over-pointer": kernel("union U { device float* p; ulong4 r; U() {} } u; u.p = a; u.r.z = 1000; u.p[40] = 5.0f;"),
    "union-over-struct-with-pointer": (
        HEADER
        + "struct Holder { device float* p; };\nunion Pun { Holder h; ulong4 r; Pun() {} };\n"
        + "kernel void k(device float* a [[buffer(0)]], uint i [[thread_position_in_grid]]) {\n"
        + "  if (i == 0) { Pun u; u.h.p = a; u.r.z = 1000; u.h.p[40] = 5.0f; }\n}\n"
    ),
    "as_type-of-pointer": kernel("ulong4 r = as_type<ulong4>(a); r.z = 1000; device float* b = as_type<device float*>(r); b[40] = 5.0f;"),
    "as_type-to-struct-with-pointer": (
        HEADER
        + "struct Holder { device float* p; };\n"
        + "kernel void k(device float* a [[buffer(0)]], uint i [[thread_position_in_grid]]) {\n"
        + "  if (i == 0) { Holder h; h.p = a; ulong4 r = as_type<ulong4>(h); r.z = 1000;\n"
        + "    Holder f = as_type<Holder>(r); f.p[40] = 5.0f; }\n}\n"
    ),
    "prelude-macro": kernel("a[0] = float(METAL_LIBM_DOUBLE(fabs)(-2.0));"),
}


@pytest.mark.parametrize("name", sorted(ATTEMPTS))
def test_checked_mode_cannot_be_turned_off(name):
    dev = mc.Device("cpu", checked=True)
    memory = np.zeros(64, dtype=np.float32)
    with pytest.raises(mc.CompileError):
        dev.compile(ATTEMPTS[name]).k(4, memory[:4])
    assert not memory[4:].any(), "the kernel wrote past its buffer"


def test_unions_without_pointers_still_run_checked():
    # MLX's and ggml's unions reinterpret scalars and vectors: still fine in checked mode.
    src = HEADER + (
        "union Bits { float f; uint u; };\n"
        "kernel void k(device uint* a [[buffer(0)]], uint i [[thread_position_in_grid]]) {\n"
        "  Bits b; b.f = float(i); a[i] = b.u;\n}\n"
    )
    a = np.zeros(8, dtype=np.uint32)
    mc.Device("cpu", checked=True).compile(src).k(8, a)
    np.testing.assert_array_equal(a, np.arange(8, dtype=np.float32).view(np.uint32))
