"""Attack: a pointer made from an integer on the checked CPU device, in every spelling (security,
issue P2.4: checked mode cannot be turned off from kernel code), in-process and sandboxed.

The kernel's author chooses the integer (`constant ulong& at`, here a victim Buffer's address).
On the checked device every pointer is a checked pointer, whose bounds come from a Buffer, a
variable or another pointer, so no integer ever became one; but until 2026-12-03 only thread and
threadgroup pointers from integers were refused by the front end, and every other spelling
reached the host compiler, whose "no matching conversion ... to 'metal::mtl_checked<float>'"
named neither the rule nor the user's choice. Now each is a CompileError naming the rule "no
pointers from integers" at the user's line: the front end refuses the integers its tokens show
in every address space in checked mode, and the checked pointer's integer constructor refuses the
rest by type (a `static_assert`: a member, a function's result, `auto`, an enum, a macro's or a
template's C-style cast). The victim keeps its values: nothing ran.

The unchecked devices (in-process, sandboxed, CUDA) keep MSL's GPU addresses, as SPIRV-Cross's
buffer device addresses spell them (`reinterpret_cast<device T*>(ulong)`): kernel source is
trusted code in-process, and the sandbox contains what such a pointer reaches (docs/security.md).
"""

from __future__ import annotations

import sys

import numpy as np
import pytest

import metalcall as mc
from attack_kernels import CHECKED_MODES, CHECKED_SIGNATURE, HEADER, open_mode

pytestmark = pytest.mark.skipif("cpu" not in mc.backends(), reason="the cpu backend is not built in")

RULE = "[MSL rule: no pointers from integers]"

# name: (program-scope prefix, body): each writes 42 at the address `at`
SPELLINGS = {
    "c-style": ("", "device float* p = (device float*)at; p[0] = 42.0f;"),
    "reinterpret-cast": ("", "device float* p = reinterpret_cast<device float*>(at); p[0] = 42.0f;"),
    "reinterpret-cast-of-a-local": ("", "ulong a = at + 0; reinterpret_cast<device float*>(a)[0] = 42.0f;"),
    "reinterpret-cast-constant": ("", "constant float* p = reinterpret_cast<constant float*>(at); out[0] = p[0];"),
    "static-cast-through-void": ("", "static_cast<device float*>(reinterpret_cast<device void*>(at))[0] = 42.0f;"),
    "integer-literal": ("", "device float* p = (device float*)4096; p[0] = 42.0f;"),
    "arithmetic": ("", "device float* p = (device float*)(at + 16); p[-4] = 42.0f;"),
    "functional-cast-typedef": ("typedef device float* P;", "P p = P(at); p[0] = 42.0f;"),
    "functional-cast-using": ("using P = device float*;", "P p = P(at); p[0] = 42.0f;"),
    "vector-pointer": ("", "device float4* p = (device float4*)at; p[0] = float4(42.0f);"),
    # integers the tokens do not type: the checked pointer's constructor refuses them by type
    "member": ("struct S { ulong a; };", "S s{at}; reinterpret_cast<device float*>(s.a)[0] = 42.0f;"),
    "member-c-style": ("struct S { ulong a; };", "S s{at}; ((device float*)s.a)[0] = 42.0f;"),
    "function-result": ("ulong g(ulong x) { return x; }", "reinterpret_cast<device float*>(g(at))[0] = 42.0f;"),
    "function-result-to-void": ("ulong g(ulong x) { return x; }",
                                "device void* v = (device void*)g(at); ((device float*)v)[0] = 42.0f;"),
    "auto": ("", "auto a = at + 0; reinterpret_cast<device float*>(a)[0] = 42.0f;"),
    "enum": ("enum E : ulong { Z = 0 };", "E e = E(at); reinterpret_cast<device float*>(e)[0] = 42.0f;"),
    "template-c-style": ("template <class P, class Q> P cv(Q q) { return (P)q; }", "cv<device float*>(at)[0] = 42.0f;"),
    "macro": ("#define RC(T, x) reinterpret_cast<T>(x)\nulong g(ulong x) { return x; }",
              "RC(device float*, g(at))[0] = 42.0f;"),
}


def _source(prefix: str, body: str) -> str:
    return HEADER + prefix + f"\nkernel void k{CHECKED_SIGNATURE} {{\n  {body}\n}}\n"


@pytest.mark.parametrize("mode", sorted(CHECKED_MODES))
@pytest.mark.parametrize("name", sorted(SPELLINGS))
def test_pointers_from_integers_are_refused_naming_the_rule(mode, name):
    dev = open_mode(mode)
    victim = dev.asarray(np.full(4, 7.0, np.float32))
    with pytest.raises(mc.CompileError) as info:
        dev.compile(_source(*SPELLINGS[name])).k(1, np.zeros(4, np.float32), np.uint64(np.asarray(victim).ctypes.data))
    first = str(info.value).splitlines()[0]
    assert first.startswith("source.metal:") and RULE in first, first  # at the user's line, the rule named
    assert "checked mode takes no integer as an address" in first, first
    assert np.asarray(victim).tolist() == [7.0] * 4


# What stays on the checked device: null pointers (a literal 0, nullptr), pointer arithmetic
# with integers, integers made from pointers' differences.
CLOSE = ("device float* p = (device float*)0; device float* q = nullptr; out[0] = p == q ? 2.0f : 0.0f;\n"
         "  device float* r = (device float*)(out + at); r[0] += 1.0f;\n"
         "  device uchar* b = (device uchar*)out; device float* s = (device float*)(b + 4 * at); s[1] += 5.0f;\n"
         "  device float* n = at == 0 ? out : 0; out[3] = float(ulong((device uchar*)&out[2] - b)) + (n ? 0.0f : 1.0f);")


@pytest.mark.parametrize("mode", sorted(CHECKED_MODES))
def test_close_msl_runs_checked(mode):
    dev = open_mode(mode)
    out = dev.asarray(np.array([0, 1, 2, 3], np.float32))
    dev.compile(_source("", CLOSE)).k(1, out, np.uint64(1))
    assert np.asarray(out).tolist() == [2.0, 2.0, 7.0, 9.0]


# A GPU address round trip, as SPIRV-Cross writes buffer device addresses: the address of `out`
# as an integer (stored in a Buffer, read back) and a device pointer made from it.
GPU_ADDRESS = ("struct Ref { ulong addr; };",
               "device Ref* r = (device Ref*)ref; r->addr = reinterpret_cast<ulong>(out);\n"
               "  for (uint k = 0; k < 4; ++k) {\n"
               "    device float* p = reinterpret_cast<device float*>(r->addr + 4 * k); *p = 2.0f * float(k) + 1.0f;\n"
               "  }")
GPU_SIGNATURE = "(device float* out [[buffer(0)]], device uchar* ref [[buffer(1)]], uint i [[thread_position_in_grid]])"


def _gpu_address_source() -> str:
    return HEADER + GPU_ADDRESS[0] + f"\nkernel void k{GPU_SIGNATURE} {{\n  {GPU_ADDRESS[1]}\n}}\n"


def _unchecked(mode: str) -> mc.Device:
    if mode == "cuda":
        if "cuda" not in mc.backends():
            pytest.skip("the cuda backend is not built in (.devcarry/s13-checked-ints/run.sh runs this on the GPU)")
        try:
            return mc.Device("cuda")
        except mc.Error as e:
            pytest.skip(f"no CUDA device here ({e}); .devcarry/s13-checked-ints/run.sh runs this on the GPU")
    if mode == "sandbox" and not sys.platform.startswith("linux"):
        pytest.skip("the sandbox is built on Linux's seccomp")
    return mc.Device("cpu", sandbox=mode == "sandbox")


@pytest.mark.parametrize("mode", ["cpu", "sandbox", "cuda"])
def test_unchecked_devices_take_gpu_addresses(mode):
    dev = _unchecked(mode)
    assert not dev.checked
    out = dev.asarray(np.zeros(4, np.float32))
    ref = dev.asarray(np.zeros(8, np.uint8))
    dev.compile(_gpu_address_source()).k(1, out, ref)
    assert np.asarray(out).tolist() == [1.0, 3.0, 5.0, 7.0]


# On the checked device an address read from a Buffer (the caller's choice) makes no pointer.
# (Nor does a checked pointer become an integer: `reinterpret_cast<ulong>(out)` is the host
# compiler's error there, as before.)
FROM_A_BUFFER = ("struct Ref { ulong addr; };",
                 "device Ref* r = (device Ref*)ref; device float* p = reinterpret_cast<device float*>(r->addr); *p = 42.0f;")


@pytest.mark.parametrize("mode", sorted(CHECKED_MODES))
def test_checked_devices_refuse_gpu_addresses(mode):
    dev = open_mode(mode)
    victim = dev.asarray(np.full(4, 7.0, np.float32))
    ref = np.frombuffer(np.uint64(np.asarray(victim).ctypes.data).tobytes(), np.uint8).copy()
    source = HEADER + FROM_A_BUFFER[0] + f"\nkernel void k{GPU_SIGNATURE} {{\n  {FROM_A_BUFFER[1]}\n}}\n"
    with pytest.raises(mc.CompileError) as info:
        dev.compile(source).k(1, np.zeros(4, np.float32), ref)
    first = str(info.value).splitlines()[0]
    assert first.startswith("source.metal:5:") and RULE in first, first
    assert np.asarray(victim).tolist() == [7.0] * 4
