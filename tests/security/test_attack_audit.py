"""Attacks found by the security audit of 2026-12-05 (docs/security.md).

Cache keys an attacker collides. Every cache of a compile (the device's libraries in memory, the
disk cache's translations and kernel objects) is named by a hash of what it is for. Before
2026-12-05 that hash was a fast XXH3-style one whose key table is public: a 64-bit word whose low
half equals the key word of its stripe and lane adds nothing but itself to the lanes, so two such
words of one 1 KiB block can trade their high halves (+d and -d) without changing the hash. Two
sources that differ in two bytes of their comments then had one key, and the second compiled was
served the first one's kernels: here one byte turns the rest of a `//` line into code. A source
run on the sandboxed device (the untrusted path) made an in-process device run its kernel for
another source, through the disk cache. Keys are SHA-256 since.
"""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest

import metalcall as mc
from attack_kernels import MODES, mode  # noqa: F401 (mode: the fixture)

pytestmark = pytest.mark.skipif("cpu" not in mc.backends(), reason="the cpu backend is not built in")


def colliding_sources() -> tuple[str, str]:
    """(quiet, loud): `out[i] = 1` and, in loud only, `out[i] = 2` too. They differ in two bytes:
    byte 4 of the word at offset 744 (stripe 11, lane 5: key word 16, low half b"U\\x12Ru") is a
    space in quiet and a line end in loud, and byte 4 of the word at offset 1000 (stripe 15,
    lane 5: key word 20, low half b"\\xd7\\x9e\\x0b\\x10") makes up the difference (0x20 - 0x0a ==
    0x77 - 0x61)."""

    def build(loud: bool) -> bytes:
        s = ("#include <metal_stdlib>\nusing namespace metal;\n"
             "kernel void k(device float* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {\n"
             "  out[i] = 1.0f;\n")
        s = (s + "//" + "-" * (744 - len(s) - 2)).encode()
        s += b"U\x12Ru" + (b"\n" if loud else b" ") + b"   " + b"out[i] = 2.0f;\n"
        s += b"//" + b"-" * (1000 - len(s) - 2)
        s += b"\xd7\x9e\x0b\x10" + (b"w" if loud else b"a") + b"   \n" + b"// end\n" * 12 + b"}\n"
        return s

    quiet, loud = build(False), build(True)
    assert len(quiet) == len(loud) > 1024 and sum(a != b for a, b in zip(quiet, loud)) == 2
    return quiet.decode(), loud.decode()


def run(dev: mc.Device, source: str) -> list:
    out = np.zeros(4, np.float32)
    dev.compile(source).k(4, out)
    return out.tolist()


def test_colliding_sources_get_their_own_kernels_on_one_device(mode):
    quiet, loud = colliding_sources()
    dev = MODES[mode]()
    assert run(dev, loud) == [2.0] * 4
    assert run(dev, quiet) == [1.0] * 4  # was [2.0] * 4: the library of `loud`
    assert run(dev, loud) == [2.0] * 4


def test_a_sandboxed_source_does_not_choose_what_an_in_process_device_runs(run_python, tmp_path):
    # The untrusted source is compiled for the sandbox first; then the trusted one in-process, in a
    # new process (nothing in memory) with the same disk cache.
    if not sys.platform.startswith("linux"):
        pytest.skip("the sandbox is built on Linux's seccomp")
    quiet, loud = colliding_sources()
    code = (
        "import json, numpy as np, metalcall as mc\n"
        "source, sandbox = json.loads(open('job.json').read())\n"
        "out = np.zeros(4, np.float32)\n"
        "mc.Device('cpu', sandbox=sandbox).compile(source).k(4, out)\n"
        "print(json.dumps(out.tolist()))\n")
    env = {"METALCALL_CACHE_DIR": str(tmp_path / "cache")}
    results = []
    for source, sandbox in ((loud, True), (quiet, False)):
        (tmp_path / "job.json").write_text(json.dumps([source, sandbox]))
        p = run_python(code, env=env)
        assert p.returncode == 0, p.stderr
        results.append(json.loads(p.stdout.strip().splitlines()[-1]))
    assert results == [[2.0] * 4, [1.0] * 4]  # the in-process device ran `loud`'s kernel before


# A front-end hang. The front end runs in the caller's process (on the sandboxed device too) with
# no time limit of its own; it read each directive's column from its physical line, and finding
# a physical line scanned the whole source: time quadratic in the number of directives. 40,000
# `#define`s (0.8 MB) took 175 s, so 200,000 (4.4 MB, well under the 16 MiB source limit) took
# over an hour, before 2026-12-05; about a second since.
DIRECTIVES = 200_000


def test_a_source_of_many_directives_compiles_in_linear_time(run_python):
    code = (
        "import time, numpy as np, metalcall as mc\n"
        f"n = {DIRECTIVES}\n"
        "src = ('#include <metal_stdlib>\\nusing namespace metal;\\n' + ''.join(f'#define A{j} {j}\\n' for j in range(n))\n"
        "       + 'kernel void k(device float* out [[buffer(0)]], uint i [[thread_position_in_grid]]) { out[i] = A7; }\\n')\n"
        "t = time.monotonic()\n"
        "out = np.zeros(4, np.float32)\n"
        "mc.Device('cpu', sandbox=False).compile(src).k(4, out)\n"
        "print(out.tolist(), time.monotonic() - t)\n")
    p = run_python(code, timeout=240)  # a TimeoutExpired is the failure
    assert p.returncode == 0, p.stderr
    assert p.stdout.split("]")[0] == "[7.0, 7.0, 7.0, 7.0", p.stdout


# Mutable program-scope state through a static data member defined in its class (C++17's inline
# variables): every thread and every call of every kernel of the library shared it, on every mode,
# where MSL's program-scope variables are constants (spec §4.2) and an out-of-class definition
# (`int S::c = 0;`) was refused already. Refused since 2026-12-05.
def _kernel(body: str, prefix: str) -> str:
    from attack_kernels import kernel
    return kernel(body, prefix)


STATIC_MEMBERS_REFUSED = {
    "inline-static": ("S::c += 1; out[i] = float(S::c);", "struct S { static inline int c = 0; };"),
    "inline-first": ("S::c += 1; out[i] = float(S::c);", "struct S { inline static int c = 0; };"),
    "array": ("S::a[at] = 7; out[i] = float(S::a[0]);", "struct S { static inline int a[4] = {}; };"),
    "template": ("W<int>::v += 1; out[i] = float(W<int>::v);", "template <class T> struct W { static inline T v{}; };"),
    "template-type": ("S::w.v = 2; out[i] = float(S::w.v);",
                      "template <class T, int N> struct P { T v; };\nstruct S { static inline P<int, 2> w{}; };"),
    "aligned": ("S::c += 1; out[i] = float(S::c);", "struct S { static inline alignas(16) int c = 0; };"),
    "attribute": ("S::c += 1; out[i] = float(S::c);", "struct S { static inline __attribute__((aligned(16))) int c = 0; };"),
}

# Static members MSL has: constants, functions, declarations (name: (body, prefix, out[0])).
STATIC_MEMBERS_VALID = {
    "constexpr": ("out[i] = float(S::c);", "struct S { static constexpr int c = 3; };", 3.0),
    "const": ("out[i] = float(S::c);", "struct S { static const int c = 3; };", 3.0),
    "inline-constexpr": ("out[i] = float(S::c);", "struct S { static inline constexpr int c = 3; };", 3.0),
    "inline-const": ("out[i] = float(S::c);", "struct S { inline static const int c = 3; };", 3.0),
    "constant-array": ("out[i] = S::c[1];", "struct S { static constant constexpr float c[2] = {1, 3}; };", 3.0),
    "function": ("out[i] = S::f(2);", "struct S { static float f(float x) { return x + 1; } };", 3.0),
    "inline-function": ("out[i] = S::f(2);", "struct S { static inline float f(float x) { return x + 1; } };", 3.0),
    "inline-attributed-function": ("out[i] = S::f(2);", "struct S { static inline __attribute__((always_inline)) "
                                                        "float f(float x) { return x + 1; } };", 3.0),
    "template-function": ("out[i] = S::f<float>(2);", "struct S { template <class T> static inline T f(T x) { return x + 1; } };",
                          3.0),
    "vector-result": ("out[i] = S::f(2).y;", "struct S { static inline vec<float, 2> f(float x) { return vec<float, 2>(x + 1); } };",
                      3.0),
    "declared-only": ("out[i] = 3;", "struct S { static int c; };", 3.0),
}


@pytest.mark.parametrize("name", sorted(STATIC_MEMBERS_REFUSED))
def test_a_static_data_member_defined_in_its_class_is_a_constant(mode, name):
    body, prefix = STATIC_MEMBERS_REFUSED[name]
    with pytest.raises(mc.CompileError) as info:
        MODES[mode]().compile(_kernel(body, prefix)).k(1, np.zeros(4, np.float32), np.uint64(0))
    first = str(info.value).splitlines()[0]
    line = 3 + prefix.count("\n")  # the static member's: the header has two lines
    assert first.startswith(f"source.metal:{line}:") and "[MSL rule: program-scope and static variables are constant" in first, first


def test_static_members_msl_has_compile(mode):
    dev = MODES[mode]()
    for name, (body, prefix, expected) in sorted(STATIC_MEMBERS_VALID.items()):
        out = np.zeros(4, np.float32)
        dev.compile(_kernel(body, prefix)).k(1, out, np.uint64(0))
        assert out[0] == expected, name


# `const_cast` into another address space: Metal's compiler refuses it (const_cast changes no
# address space), as the front end refused it for the C-style and the other named casts; a
# const_cast went through, so kernels wrote `constant` Buffers, program-scope constants and
# threadgroup memory through device pointers, on every mode, before 2026-12-05.
CONST_CASTS_REFUSED = {
    "constant-variable": ("const_cast<thread int&>(c) = 5; out[i] = float(c);", "constant int c = 1;",
                          "a cast from constant to thread reference"),
    "constant-array": ("device float* p = const_cast<device float*>(tab); p[0] = 5; out[i] = tab[0];",
                       "constant float tab[2] = {1, 2};", "a cast from constant to device pointer"),
    "constant-element": ("const_cast<thread float&>(tab[at]) = 5; out[i] = tab[0];", "constant float tab[2] = {1, 2};",
                         "a cast from constant to thread reference"),
    "constant-address": ("device float* p = const_cast<device float*>(&tab[at]); p[0] = 5; out[i] = tab[0];",
                         "constant float tab[2] = {1, 2};", "a cast from constant to device pointer"),
    "constant-parameter": ("out[i] = w(tab);", "constant float tab[2] = {1, 2};\n"
                           "float w(constant float* in) { const_cast<device float*>(in)[0] = 5; return in[0]; }",
                           "a cast from constant to device pointer"),
    "constant-parameter-reference": ("out[i] = w(tab);", "constant float tab[2] = {1, 2};\n"
                                     "float w(constant float* in) { const_cast<device float&>(in[0]) = 5; return in[0]; }",
                                     "a cast from constant to device reference"),
    "threadgroup-to-device": ("threadgroup float t[2]; device float* p = const_cast<device float*>(t); p[0] = 1; out[i] = 1;",
                              "", "a cast from threadgroup to device pointer"),
}


@pytest.mark.parametrize("name", sorted(CONST_CASTS_REFUSED))
def test_a_const_cast_changes_no_address_space(mode, name):
    body, prefix, words = CONST_CASTS_REFUSED[name]
    with pytest.raises(mc.CompileError) as info:
        MODES[mode]().compile(_kernel(body, prefix)).k(1, np.zeros(4, np.float32), np.uint64(0))
    first = str(info.value).splitlines()[0]
    assert first.startswith("source.metal:") and words in first and "[MSL rule: no address-space casts" in first, first


def test_a_const_cast_within_its_address_space_compiles(mode):
    dev = MODES[mode]()
    for body, prefix in (("const float x = 1; const_cast<thread float&>(x) = 3; out[i] = 3;", ""),
                         ("out[i] = w(out[i]);", "float w(const device float& r) { const_cast<device float&>(r) = 3; return r; }")):
        out = np.zeros(4, np.float32)
        dev.compile(_kernel(body, prefix)).k(1, out, np.uint64(0))
        assert out[0] == 3.0, body


# A const_cast of a pointer within its address space on the checked device: the host compiler's
# error there before 2026-12-05 ("const_cast to 'metal::mtl_checked<float>', which is not a
# reference, pointer-to-object, ..."): checked pointers are classes. The translation now converts
# them as it does a reinterpret_cast's (a constructor keeping the bounds): the write lands, and an
# index past the Buffer through the cast pointer is still caught.
@pytest.mark.parametrize("checked_mode", ["checked", "checked-sandbox"])
def test_a_const_cast_of_a_pointer_keeps_its_bounds_on_the_checked_device(checked_mode):
    from attack_kernels import open_mode
    dev = open_mode(checked_mode)
    src = _kernel("w(out, at); out[i] += 1;",
                  "void w(const device float* p, ulong at) { const_cast<device float*>(p)[at] = 3; }")
    lib = dev.compile(src)
    out = np.zeros(4, np.float32)
    lib.k(1, out, np.uint64(2))
    assert out.tolist() == [1.0, 0.0, 3.0, 0.0]
    with pytest.raises(mc.ExecutionError, match="out of bounds|outside"):
        lib.k(1, np.zeros(4, np.float32), np.uint64(4))


# Variable-length arrays through a diagnostic pragma. The CPU backend refuses them with the host
# compiler's -Werror=vla (docs/msl-rules.md): a source's `#pragma clang diagnostic ignored "-Wvla"`
# (or "-Wpedantic", "-Weverything", `GCC diagnostic warning`, `%:pragma`) lowered it, and an
# array sized at run time compiled and ran on the in-process and sandboxed devices before
# 2026-12-05. Each diagnostic pragma is now followed by one that makes -Wvla an error again.
VLA = "float a[at + 1]; a[at] = 2; out[i] = a[at];"
VLA_PRAGMAS = {
    "clang-ignored": '#pragma clang diagnostic ignored "-Wvla"',
    "gcc-ignored": '#pragma GCC diagnostic ignored "-Wvla"',
    "gcc-warning": '#pragma GCC diagnostic warning "-Wvla"',
    "extension": '#pragma clang diagnostic ignored "-Wvla-extension"',
    "pedantic": '#pragma clang diagnostic ignored "-Wpedantic"',
    "everything": '#pragma clang diagnostic ignored "-Weverything"',
    "pushed": '#pragma clang diagnostic push\n#pragma clang diagnostic ignored "-Wvla"',
    "digraph": '%:pragma clang diagnostic ignored "-Wvla"',
}


@pytest.mark.parametrize("name", sorted(VLA_PRAGMAS))
def test_a_diagnostic_pragma_does_not_let_a_variable_length_array_compile(mode, name):
    # (checked mode's arrays are templates: there a run-time size is "not a constant expression")
    with pytest.raises(mc.CompileError, match="variable length array|not a constant expression"):
        MODES[mode]().compile(_kernel(VLA, VLA_PRAGMAS[name])).k(1, np.zeros(4, np.float32), np.uint64(3))


def test_diagnostic_pragmas_still_silence_warnings_and_keep_line_numbers(mode):
    dev = MODES[mode]()
    src = _kernel('#pragma clang diagnostic push\n#pragma clang diagnostic ignored "-Wunused-variable"\nfloat u = 1;\n'
                  '#pragma clang diagnostic pop\nout[i] = 2;', "")
    out = np.zeros(4, np.float32)
    dev.compile(src).k(1, out, np.uint64(0))
    assert out[0] == 2.0
    with pytest.raises(mc.CompileError) as info:
        dev.compile(_kernel('#pragma GCC diagnostic ignored "-Wunused-variable"\nout[i] = 2;\nout[i] = undefined_name;', ""))
    assert str(info.value).startswith("source.metal:8:"), str(info.value)
