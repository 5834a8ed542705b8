"""Attack: a kernel argument whose type holds a pointer, on the checked CPU device (security,
issue P2.4: checked mode cannot be turned off from kernel code), in-process and sandboxed.

On the checked device a pointer is a checked pointer, whose bounds travel with it. A struct with
a `device float*` member, read from a Buffer (or passed by value) took those bounds from the
caller's bytes: a forged payload made `s->p[1] = 42` write into an unrelated array with no fault
(found 2026-12-05). Now every kernel parameter whose type holds a pointer, however deep (a member,
an array of them, a nested struct's), is a CompileError at the kernel's line that says why, as
pointers made from integers are; so is a byte Buffer viewed as such a struct. The victim keeps its
values: nothing ran. The plain devices keep MSL's GPU addresses in buffers (argument buffers).
"""

from __future__ import annotations

import numpy as np
import pytest

import metalcall as mc
from attack_kernels import CHECKED_MODES, HEADER, open_mode

pytestmark = pytest.mark.skipif("cpu" not in mc.backends(), reason="the cpu backend is not built in")

TYPES = """
struct S { device float* p; int n; };
struct Nested { int k; S inner; };
struct Many { constant float* q[2]; };
"""

# name: (parameter declaration, the body's write through the stored pointer)
PARAMETERS = {
    "device-pointer": ("device S* s [[buffer(1)]]", "s->p[1] = 42.0f;"),
    "constant-reference": ("constant S& s [[buffer(1)]]", "s.p[1] = 42.0f;"),
    "device-reference": ("device S& s [[buffer(1)]]", "s.p[1] = 42.0f;"),
    "by-value": ("S s [[buffer(1)]]", "s.p[1] = 42.0f;"),
    "nested": ("device const Nested* s [[buffer(1)]]", "s->inner.p[1] = 42.0f;"),
    "array-member": ("constant Many& s [[buffer(1)]]", "out[1] = s.q[1][0];"),
    "array-of-structs": ("constant S* s [[buffer(1)]]", "s[1].p[1] = 42.0f;"),
}


def _source(param: str, body: str) -> str:
    return (HEADER + TYPES + f"kernel void k(device float* out [[buffer(0)]], {param},\n"
            f"              uint i [[thread_position_in_grid]]) {{\n  {body}\n}}\n")


@pytest.mark.parametrize("mode", sorted(CHECKED_MODES))
@pytest.mark.parametrize("name", sorted(PARAMETERS))
def test_arguments_holding_pointers_are_refused(mode, name):
    dev = open_mode(mode)
    victim = dev.asarray(np.full(4, 7.0, np.float32))
    source = _source(*PARAMETERS[name])
    with pytest.raises(mc.CompileError) as info:
        dev.compile(source).k
    text = str(info.value)
    line = source.splitlines().index(next(x for x in source.splitlines() if x.startswith("kernel void k"))) + 1
    assert text.startswith(f"source.metal:{line}:"), text  # the kernel's line
    assert "has a type that holds a pointer" in text and "'s'" in text, text
    assert np.asarray(victim).tolist() == [7.0] * 4


# A byte Buffer viewed as a struct that holds a pointer: the same forged bounds by a cast.
CAST = (HEADER + TYPES + "kernel void k(device float* out [[buffer(0)]], device uchar* bytes [[buffer(1)]],\n"
        "              uint i [[thread_position_in_grid]]) {\n"
        "  device S* s = (device S*)bytes;\n  s->p[1] = 42.0f;\n}\n")


@pytest.mark.parametrize("mode", sorted(CHECKED_MODES))
def test_bytes_viewed_as_a_struct_holding_a_pointer_are_refused(mode):
    dev = open_mode(mode)
    with pytest.raises(mc.CompileError):
        dev.compile(CAST).k


# Close to the refused forms and still run checked: a struct of indices and offsets beside the
# data, and a struct holding a pointer built inside the kernel from its own Buffer.
CLOSE = HEADER + """
struct Span { uint offset; uint count; float scale; };
struct View { device float* p; uint n; };
kernel void k(device float* out [[buffer(0)]], constant Span& span [[buffer(1)]],
              uint i [[thread_position_in_grid]]) {
    View v = {out + span.offset, span.count};
    if (i < v.n) v.p[i] *= span.scale;
}
"""


@pytest.mark.parametrize("mode", sorted(CHECKED_MODES) + ["cpu"])
def test_index_structs_and_local_pointer_structs_run(mode):
    dev = open_mode(mode)
    out = dev.asarray(np.arange(8, dtype=np.float32))
    span = np.array([(2, 4, 3.0)], dtype=[("offset", "<u4"), ("count", "<u4"), ("scale", "<f4")])
    dev.compile(CLOSE).k(4, out, span)
    want = np.arange(8, dtype=np.float32)
    want[2:6] *= 3
    np.testing.assert_array_equal(np.asarray(out), want)


# Argument structs that are not standard-layout but hold no pointer (members in a base and in the
# class, mixed access, a constructor) stay usable on the checked device: the refusal asks for a
# class that holds a checked pointer, not merely one that is not standard-layout.
PLAIN_CLASSES = HEADER + """
struct Base { float x; };
struct Derived : Base { float a; };
struct Mixed {
    float sum() const { return a + b; }
  private:
    float a;
  public:
    float b;
};
struct Made { float s; Made(float v) : s(v) {} };
kernel void k(device float* out [[buffer(0)]], constant Derived& d [[buffer(1)]], constant Mixed& m [[buffer(2)]],
              device const Made* made [[buffer(3)]], uint i [[thread_position_in_grid]]) {
    out[i] = d.x + 10.0f * d.a + 100.0f * m.sum() + 1000.0f * made[i].s;
}
"""


@pytest.mark.parametrize("mode", sorted(CHECKED_MODES) + ["cpu"])
def test_plain_classes_that_are_not_standard_layout_run(mode):
    dev = open_mode(mode)
    out = dev.asarray(np.zeros(3, np.float32))
    made = np.array([1.0, 2.0, 3.0], np.float32)
    dev.compile(PLAIN_CLASSES).k(3, out, np.array([2.0, 3.0], np.float32), np.array([4.0, 5.0], np.float32), made)
    np.testing.assert_array_equal(np.asarray(out), 2 + 30 + 900 + 1000 * made)
