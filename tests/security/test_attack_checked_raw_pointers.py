"""Attacks on checked mode through the pointers its translation handed on without bounds until
2026-12-03 (security, issue P2.4), on the checked CPU device in-process and in the sandbox.

The three gaps docs/security.md listed as open: the index into a C array of device, constant or
threadgroup pointers (`device float* ps[2]`: the array was a C array, so `ps[k]` read a pointer
and its bounds from anywhere), an address given to a function template that deduces its type
from it (`put(&v[0], k)` for `template <class T> void put(T p, ulong k)`: T was a plain
pointer), and a raw pointer into no Buffer turned into a checked one (`this`, `a.data()` of a
metal::array, an address the rewrite did not see: no bounds at all). Each access through them
is now an ExecutionError naming the bounds ("the access was not performed"), the victim Buffer
keeps its values and the device runs the next kernel; the same constructs used within bounds
give the plain CPU device's exact values. One library of attack kernels per device.
"""

from __future__ import annotations

import sys

import numpy as np
import pytest

import metalcall as mc
from attack_kernels import HEADER

pytestmark = pytest.mark.skipif("cpu" not in mc.backends(), reason="the cpu backend is not built in")

HELPERS = """
template <class T> void put(T p, ulong k) { p[k] = 42.0f; }
template <class T> void put_thread(thread T* p, ulong k) { p[k] = 42.0f; }
template <class T> void put_thread(int a, T b) {}
template <typename T, uint N> void fill(thread T (&a)[N], ulong k) { a[k] = 42.0f; }
float pick(const device float* xs[2], ulong n) { return xs[n][0]; }
struct Pointers { device float* p[2]; };
struct Self { float a; thread Self* self() { return this; } };
"""
SIGNATURE = "(device float* out [[buffer(0)]], constant ulong& at [[buffer(1)]], uint i [[thread_position_in_grid]])"

# kernel: (body, what the ExecutionError names, out after a run with `far` = 0 on [1, 2, 3, 4]);
# `far` is far outside every bound, or 0 (at = 0: every kernel in bounds).
ATTACKS = {
    "pointer_array_index": ("device float* ps[2] = {out, out}; ps[far][0] = 42.0f;", "private array", [42, 2, 3, 4]),
    "pointer_array_forged_read": ("device float* ps[2] = {out, out + 2}; device float* q = ps[far]; q[1] = 42.0f;",
                                  "private array", [1, 42, 3, 4]),
    "threadgroup_pointer_array": (("threadgroup float tg[4]; threadgroup float* ps[2] = {tg, tg + 1};\n"
                                   "  ps[far][0] = 1.0f; out[0] = tg[0] + 2.0f;"), "private array", [3, 2, 3, 4]),
    "pointer_array_parameter": ("const device float* xs[2] = {out + 1, out}; out[0] = pick(xs, far);", "private array",
                                [2, 2, 3, 4]),
    "pointer_array_member": ("Pointers s = {{out + 3, out}}; s.p[far][0] = 42.0f;", "struct array member",
                             [1, 2, 3, 42]),
    "pointer_array_element": ("device float* ps[2] = {out, out + 1}; ps[1][far] = 42.0f;", "argument 'out'",
                              [1, 42, 3, 4]),
    "deduced_from_element_address": ("float v[4] = {}; put(&v[1], far); out[0] = v[1];", "private array",
                                     [42, 2, 3, 4]),
    "deduced_from_variable_address": ("float v = 0.0f; put(&v, far); out[0] = v;", "variable", [42, 2, 3, 4]),
    "deduced_from_buffer_address": ("put(&out[2], far);", "argument 'out'", [1, 2, 42, 4]),
    "overloaded_thread_template": ("float v[4] = {}; put_thread<float>(v, far); out[0] = v[0];", "private array",
                                   [42, 2, 3, 4]),
    "deduced_array_extent": ("float v[4] = {}; fill(v, far + 3); out[0] = v[3];", "private array", [42, 2, 3, 4]),
    "this_as_pointer": ("Self s{1.0f}; s.self()[far].a = 42.0f; out[0] = s.a;",
                        "pointer outside every Buffer (one element)", [42, 2, 3, 4]),
    # (the parenthesized array keeps its bounds: q[2] is v[3])
    "address_of_parenthesized": ("float v[4] = {}; thread float* q = &(v + 1)[0]; q[far + 2] = 42.0f; out[0] = v[3];",
                                 "private array", [42, 2, 3, 4]),
    "metal_array_data": (("metal::array<float, 4> a = {1.0f, 2.0f, 3.0f, 4.0f}; a.data()[far] = 42.0f;\n"
                          "  float s = 0.0f; for (float x : a) s += x; out[0] = s;"), "metal::array", [51, 2, 3, 4]),
    "checked_array_begin": ("float a[4] = {}; a.begin()[far] = 42.0f; out[0] = a[0];", "private array",
                            [42, 2, 3, 4]),
}
NOT_MSL = {"checked_array_begin"}  # `a.begin()` of a C array: C++ only, which the checked translation took


def _source(names):
    kernels = [f"kernel void {name}{SIGNATURE} {{\n  ulong far = at == 0 ? 0 : at % 1024 + 4096;\n"
               f"  {ATTACKS[name][0]}\n}}" for name in names]
    return HEADER + HELPERS + "\n".join(kernels) + "\n"


DEVICES = {
    "cpu": lambda: mc.Device("cpu", sandbox=False),
    "checked": lambda: mc.Device("cpu", checked=True, sandbox=False),
    "checked-sandbox": lambda: mc.Device("cpu", checked=True, sandbox=True),
}
_LIBRARIES = {}  # one library per device mode and process


def _library(mode):
    if mode == "checked-sandbox" and not sys.platform.startswith("linux"):
        pytest.skip("the sandbox is built on Linux's seccomp")
    if mode not in _LIBRARIES:
        dev = DEVICES[mode]()
        names = sorted(set(ATTACKS) - NOT_MSL) if mode == "cpu" else sorted(ATTACKS)
        _LIBRARIES[mode] = dev, dev.compile(_source(names))
    return _LIBRARIES[mode]


@pytest.mark.parametrize("mode", ["checked", "checked-sandbox"])
@pytest.mark.parametrize("name", sorted(ATTACKS))
def test_access_through_the_construct_is_checked(mode, name):
    dev, lib = _library(mode)
    victim = dev.asarray(np.full(4, 7.0, np.float32))
    at = np.uint64(np.asarray(victim).ctypes.data)
    out = np.array([1, 2, 3, 4], np.float32)
    with pytest.raises(mc.ExecutionError) as info:
        getattr(lib, name)(1, out, at)
    message = str(info.value)
    assert f"kernel '{name}' {ATTACKS[name][1]}" in message and "out of bounds" in message, message
    assert "the access was not performed" in message, message
    assert np.asarray(victim).tolist() == [7.0] * 4
    # The device goes on: the same kernel in bounds gives its exact values.
    out = np.array([1, 2, 3, 4], np.float32)
    getattr(lib, name)(1, out, np.uint64(0))
    assert out.tolist() == ATTACKS[name][2]


@pytest.mark.parametrize("mode", sorted(DEVICES))
def test_in_bounds_use_gives_exact_values(mode):
    _, lib = _library(mode)
    for name in sorted(ATTACKS):
        if mode == "cpu" and name in NOT_MSL:
            continue
        out = np.array([1, 2, 3, 4], np.float32)
        getattr(lib, name)(1, out, np.uint64(0))
        assert out.tolist() == ATTACKS[name][2], name


# Declarations checked mode cannot bound: a CompileError naming the array, before any run.
REFUSED = {
    "program-scope": ("constant float* constant table[2] = {nullptr, nullptr};", "out[i] = 1.0f;"),
    "with-another-declarator": ("", "device float* ps[2] = {out, out}, *q = out; ps[1][i] = q[0];"),
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_unboundable_pointer_arrays_are_refused(name):
    prefix, body = REFUSED[name]
    src = HEADER + prefix + f"\nkernel void k{SIGNATURE} {{ {body} }}\n"
    with pytest.raises(mc.CompileError) as info:
        mc.Device("cpu", checked=True, sandbox=False).compile(src)
    message = str(info.value)
    assert message.startswith("source.metal:") and "cannot bounds-check the array of pointers" in message, message
