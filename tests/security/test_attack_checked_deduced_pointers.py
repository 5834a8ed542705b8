"""Attacks on checked mode through pointers whose space is deduced or named by a member alias
(security, issue P2.4: leftovers of the checked-pointer rule), on the checked CPU device
in-process and in the sandbox.

- `auto* p = out;` (and `const auto*`, `auto* const`, in a `for`, a generic lambda's `auto*`
  parameter): in MSL `auto` deduces the space with the type. Until 2026-12-03 the checked
  translation left `auto*` as it was, and the host compiler refused it ("variable 'p' with type
  'auto *' has incompatible initializer of type 'metal::mtl_checked<float>'"); now each is the
  checked pointer of its initializer (an ExecutionError naming the bounds at `p[far]`, the
  victim Buffer untouched). A reference to a pointer (`auto*& r = q;`) and a function's result
  (`auto* f(…)`), which the host compiler cannot deduce from a checked pointer, are refused with
  a CompileError saying what to write.
- A member alias is its class's name: `Spaced::type* p` of `struct Spaced { using type = device
  float; }` was refused on every device as a pointer without an address space when another struct
  declared `typedef float type;` (the pointer rule read member aliases as one name across the
  source); now it runs, as a checked pointer on the checked device. A pointer to the alias
  without a space (`Plain::type*`, and `type*` inside Plain) is still refused.
"""

from __future__ import annotations

import numpy as np
import pytest

import metalcall as mc
from attack_kernels import CHECKED_AND_PLAIN, CHECKED_MODES, HEADER, KernelLibraries, checked_kernel, kernel, open_mode

pytestmark = pytest.mark.skipif("cpu" not in mc.backends(), reason="the cpu backend is not built in")

# name: (program-scope prefix, body, out after a run with far = 0 on [1, 2, 3, 4]); each writes
# (or reads) through a pointer made from `out` at index `far` (+ a small offset in bounds)
ATTACKS = {
    "auto-star": ("", "auto* p = out; p[far] = 42.0f;", [42, 2, 3, 4]),
    "const-auto-star": ("", "const auto* p = out; out[1] = p[far + 2] + 40.0f;", [1, 43, 3, 4]),
    "auto-star-const": ("", "auto* const p = out; p[far + 2] = 42.0f;", [1, 2, 42, 4]),
    "auto-star-for": ("", "for (auto* p = out; p != out + 1; ++p) p[far + 3] = 42.0f;", [1, 2, 3, 42]),
    "auto-star-lambda": ("", "auto put = [](auto* z, ulong k) { z[k] = 42.0f; }; put(out, far);", [42, 2, 3, 4]),
    "auto-star-of-an-address": ("", "auto* p = &out[1]; p[far] = 42.0f;", [1, 42, 3, 4]),
    "auto-star-of-a-private-array": ("", "float v[4] = {1, 2, 3, 4}; auto* p = v; p[far + 2] = 42.0f; out[2] = v[2];",
                                     [1, 2, 42, 4]),
    "member-alias-beside-another": ("struct Plain1 { typedef float type; };\nstruct Spaced1 { using type = device float; };",
                                    "Spaced1::type* p = out; p[far + 3] = 42.0f;", [1, 2, 3, 42]),
    "member-alias-inside-its-class": ("struct Plain2 { typedef float type; };\n"
                                      "struct Spaced2 { using type = device float; "
                                      "static void put(type* p, ulong k) { p[k] = 42.0f; } };",
                                      "Spaced2::put(out, far + 1);", [1, 42, 3, 4]),
    "namespace-alias-beside-a-member": ("using type3 = device float;\nstruct Plain3 { typedef float type3; };",
                                        "type3* p = out; p[far + 2] = 42.0f;", [1, 2, 42, 4]),
}

LIBRARIES = KernelLibraries(ATTACKS)


@pytest.mark.parametrize("mode", sorted(CHECKED_MODES))
@pytest.mark.parametrize("name", sorted(ATTACKS))
def test_deduced_and_member_alias_pointers_are_checked(mode, name):
    LIBRARIES.assert_checked(mode, name)


@pytest.mark.parametrize("mode", sorted(CHECKED_AND_PLAIN))
def test_in_bounds_values_match_the_plain_device(mode):
    LIBRARIES.assert_all_in_bounds(mode)


# name: (prefix, body, the refusal's words): what checked mode cannot deduce from a checked pointer
NOT_DEDUCED = {
    "auto-star-reference": ("", "device float* q = out; auto*& r = q; r[far] = 42.0f;",
                            "checked mode cannot deduce a reference to a pointer from 'auto*'"),
    "auto-star-result": ("auto* pick(device float* p) { return p; }", "pick(out)[far] = 42.0f;",
                         "checked mode cannot deduce a function's pointer result from 'auto*'"),
}


@pytest.mark.parametrize("mode", sorted(CHECKED_MODES))
@pytest.mark.parametrize("name", sorted(NOT_DEDUCED))
def test_what_checked_mode_cannot_deduce_is_refused(mode, name):
    prefix, body, words = NOT_DEDUCED[name]
    with pytest.raises(mc.CompileError) as info:
        open_mode(mode).compile(HEADER + checked_kernel(prefix, body))
    first = str(info.value).splitlines()[0]
    assert first.startswith("source.metal:") and words in first and "write the pointer's type" in first, first


# A member alias without a space stays refused where it is the pointee, qualified or inside its
# class, whatever another struct's alias of the name carries (on every device: not MSL).
WITHOUT_SPACE = {
    "qualified": ("struct Spaced4 { using type = device float; };\nstruct Plain4 { typedef float type; };",
                  "Plain4::type* p = (device Plain4::type*)out; p[i] = 1.0f;", "'Plain4::type*' has none"),
    "inside-its-class": ("struct Spaced5 { using type = device float; };\n"
                         "struct Plain5 { typedef float type; static void put(type* p) { p[0] = 1.0f; } };",
                         "Plain5::put(out);", "'type*' has none"),
}


@pytest.mark.parametrize("mode", sorted(CHECKED_AND_PLAIN))
@pytest.mark.parametrize("name", sorted(WITHOUT_SPACE))
def test_member_alias_without_a_space_is_refused(mode, name):
    prefix, body, words = WITHOUT_SPACE[name]
    with pytest.raises(mc.CompileError) as info:
        open_mode(mode).compile(kernel(body, prefix))
    first = str(info.value).splitlines()[0]
    assert "[MSL rule: pointers name their address space]" in first and words in first, first
