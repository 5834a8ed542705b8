"""Attacks written as kernel source, on every CPU device mode (security, issue P2.4).

An attacker who writes the MSL tries to run host code or system calls, reach host memory or
the prelude's internals, or turn checked mode off. docs/security.md says what each device
promises: the front end refuses what MSL does not have, the same on the in-process device
(plain and checked) and the sandboxed one (it compiles in the calling process), with a
CompileError naming the rule at the construct; what compiles and then reaches outside its
buffers is an ExecutionError on the checked device (or does not compile there: a checked
pointer is no integer) and a crash of the sandbox's worker (an ExecutionError; the interpreter
and the Buffers go on); a stack overflow is an ExecutionError on every mode. The in-process
unchecked device runs trusted code: a wild pointer there may end the process, as documented,
so those rows name no outcome for it.
"""

from __future__ import annotations

import numpy as np
import pytest

import metalcall as mc
from attack_kernels import MODES, kernel, mode  # noqa: F401 (mode: the fixture)

pytestmark = pytest.mark.skipif("cpu" not in mc.backends(), reason="the cpu backend is not built in")


IMPLEMENTATION = "no names of metalcall's implementation"

# name: (source, the rule its CompileError names)
REFUSED = {
    # host code and system calls
    "asm": (kernel('asm volatile("syscall");'), "no inline assembly"),
    "asm-double-underscore": (kernel('__asm__ __volatile__("syscall");'), "no inline assembly"),
    "asm-single-underscore": (kernel('__asm volatile("nop");'), "no inline assembly"),
    "asm-goto": (kernel('asm goto("jmp %l0" :::: L); L: out[i] = 1.0f;'), "no inline assembly"),
    "asm-in-digraph-block": (kernel('<% asm("nop"); %> out[i] = 1.0f;'), "no inline assembly"),
    "asm-made-by-macros": (kernel('A V("nop"); out[i] = 1.0f;', "#define A asm\n#define V volatile"), "no inline assembly"),
    "asm-label": (kernel("out[i] = g(1.0f);", 'float g(float x) __asm__("system");'), "no inline assembly"),
    "extern-c-libc": (kernel("out[i] = float(getpid());", 'extern "C" { int getpid(); }'), "no extern declarations"),
    "friend-declared-libc": (kernel("out[i] = 1.0f;", "struct S { friend int getpid(); };"),
                             "functions are defined in the source"),
    "libc-call": (kernel('out[i] = float(ulong(fopen("/etc/passwd", "r")));'),
                  "calls only to source functions and the Metal standard library"),
    "memcpy-to-anywhere": (kernel("memcpy((device void*)out, out + 1, 4096);"),
                           "calls only to source functions and the Metal standard library"),
    "setjmp": (kernel("long b[8]; setjmp(b); out[i] = 1.0f;"), "calls only to source functions and the Metal standard library"),
    # compiler builtins and reserved names
    "builtin-frame-address": (kernel("out[i] = float(ulong(__builtin_frame_address(0)));"), "no compiler builtins"),
    "builtin-return-address": (kernel("out[i] = float(ulong(__builtin_return_address(0)));"), "no compiler builtins"),
    "builtin-alloca": (kernel("thread float* p = (thread float*)__builtin_alloca(at); out[i] = p[0];"), "no compiler builtins"),
    "builtin-longjmp": (kernel("long b[5]; if (__builtin_setjmp(b)) return; __builtin_longjmp(b, 1);"), "no compiler builtins"),
    "builtin-memcpy": (kernel("__builtin_memcpy((device void*)at, out, 4);"), "no compiler builtins"),
    "builtin-bit-cast-pointer": (kernel("out[i] = *__builtin_bit_cast(device float*, at);"), "no compiler builtins"),
    "builtin-va-arg": (kernel("out[i] = f(1, 2.0);", "float f(int n, ...) { __builtin_va_list ap; return 0.0f; }"),
                       "no compiler builtins"),
    "builtin-x86": (kernel("out[i] = float(__builtin_ia32_rdtsc());"), "no compiler builtins"),
    "atomic-builtin": (kernel("__atomic_store_n((device int*)at, 5, 0);"), "no reserved names"),
    "attribute-spelling": (kernel("out[i] = 1.0f;", "void boot() __attribute((constructor));\nvoid boot() { }"),
                           "no reserved names"),
    "declspec": (kernel("out[i] = 1.0f;", "__declspec(dllexport) void boot() { }"), "no reserved names"),
    # code at load time
    "constructor-attribute": (kernel("out[i] = 1.0f;", "__attribute__((constructor)) void boot() { }"),
                              "attributes MSL defines"),
    "constructor-made-by-pasting": (kernel("out[i] = 1.0f;", "#define P(a, b) a##b\nvoid P(__attri, bute__)((constructor)) boot() { }"),
                                    "attributes MSL defines"),
    "gnu-constructor": (kernel("out[i] = 1.0f;", "[[gnu::constructor]] void boot() { }"), "attributes MSL defines"),
    "using-attribute-namespace": (kernel("out[i] = 1.0f;", "[[using gnu: constructor]] void boot() { }"), "attributes MSL defines"),
    "section-attribute": (kernel("out[i] = 1.0f;", 'constant ulong x __attribute__((section(".init_array"))) = 0;'),
                          "attributes MSL defines"),
    "alias-attribute": (kernel("out[i] = 1.0f;", 'float impl(float x) { return x; }\nfloat g(float) __attribute__((alias("impl")));'),
                        "attributes MSL defines"),
    "ifunc-attribute": (kernel("out[i] = 1.0f;", 'float impl(float x) { return x; }\nfloat g(float) __attribute__((ifunc("impl")));'),
                        "attributes MSL defines"),
    "label-address": (kernel("ulong p = (ulong)(thread void*)&&L; L: out[i] = float(p & 1);"), "no goto"),
    "static-local": (kernel("static float s = 0; s += 1; out[i] = s;"), "program-scope and static variables are constant"),
    "mutable-global-in-std": (kernel("out[i] = 1.0f;", "namespace std { int x; }"), "program-scope and static variables are constant"),
    # function pointers
    "pointer-from-address": (kernel("((void (*)())at)();"), "no function pointers"),
    "decltype-pointer": (kernel("decltype(&g) p = g; out[i] = p(1.0f);", "float g(float x) { return x; }"), "no function pointers"),
    # `(g)(x)` is a call; `(g)` kept is a pointer
    "parenthesised-pointer": (kernel("auto p = (g); out[i] = p(1.0f);", "float g(float x) { return x; }"),
                              "no function pointers"),
    "parenthesised-argument": (kernel("out[i] = call((g));", "float g(float x) { return x; }\n"
                                      "template <class F> float call(F f) { return f(1.0f); }"), "no function pointers"),
    "lambda-to-pointer": (kernel("auto f = +[](float x) { return x; }; out[i] = f(1.0f);"), "no function pointers"),
    "function-as-template-argument": (kernel("out[i] = call(g);", "float g(float x) { return x; }\n"
                                             "template <class F> float call(F f) { return f(1.0f); }"), "no function pointers"),
    "member-pointer": (kernel("auto p = &S::f; S s; out[i] = (s.*p)(1.0f);", "struct S { float f(float x) { return x; } };"),
                       "no function pointers"),
    "function-typedef": (kernel("F* p = g; out[i] = p(1.0f);", "typedef float F(float);\nfloat g(float x) { return x; }"),
                         "no function pointers"),
    # the prelude's internals and checked mode's state
    "prelude-namespace": (kernel("out[i] = 1.0f;", "using namespace metal::metalcall_detail;"), IMPLEMENTATION),
    "checked-pointer-state": (kernel("out.mtl_count = 1000; out[40] = 5.0f;"), IMPLEMENTATION),
    "checked-pointer-type": (kernel("metal::mtl_checked<float> p; out[i] = 1.0f;"), IMPLEMENTATION),
    # recursion and preprocessing
    "recursion-through-this": (kernel("out[i] = float(R().f(int(at)));",
                                      "struct R { int f(int n) { return n ? this->f(n - 1) + 1 : 0; } };"), "no recursion"),
    "recursion-of-function-object": (kernel("A a; out[i] = float(a(int(at)));",
                                            "struct A { int operator()(int k) const { return k ? (*this)(k - 1) + 1 : 0; } };"),
                                     "no recursion"),
    "_Pragma": (kernel('_Pragma("GCC optimize(\\"O0\\")") out[i] = 1.0f;'), "pragmas"),
    # _Pragma becomes a #pragma line checked as any; what could end or splice that line, or what the
    # preprocessor would carry out, is refused at the operator
    "_Pragma-clang-attribute": (kernel('out[i] = 1.0f;', '#define A _Pragma("clang attribute push (__attribute__('
                                                         '(constructor)), apply_to = function)")\nA\nvoid f() {}'), "pragmas"),
    "_Pragma-redefine-extname": (kernel("out[i] = 1.0f;", '_Pragma("redefine_extname kk system")'), "pragmas"),
    "_Pragma-dependency": (kernel('_Pragma("GCC dependency \\"/etc/passwd\\"") out[i] = 1.0f;'), "pragmas"),
    "_Pragma-line-end": (kernel('_Pragma("unroll\\n#include <stdio.h>") for (int j = 0; j < 2; ++j) out[i] = 1.0f;'),
                         "pragmas"),
    "_Pragma-splice": (kernel('_Pragma("unroll \\\\") for (int j = 0; j < 2; ++j) out[i] = 1.0f;'), "pragmas"),
    "_Pragma-macro-operand": (kernel("_Pragma(P) for (int j = 0; j < 2; ++j) out[i] = 1.0f;", "#define P unroll"),
                              "pragmas"),
    "pragma-clang-attribute": (kernel("out[i] = 1.0f;", "#pragma clang attribute push (__attribute__((constructor)), "
                                                        "apply_to = function)\nvoid f() {}\n#pragma clang attribute pop"), "pragmas"),
    "pragma-redefine-extname": (kernel("out[i] = 1.0f;", "#pragma redefine_extname kk system"), "pragmas"),
    "pragma-section": (kernel("out[i] = 1.0f;", '#pragma clang section text=".init"'), "pragmas"),
    "pragma-weak": (kernel("out[i] = 1.0f;", "#pragma weak foo"), "pragmas"),
    "pragma-visibility": (kernel("out[i] = 1.0f;", "#pragma GCC visibility push(default)"), "pragmas"),
    # a private pointer from an integer (a crash of the sandbox's worker before 2026-12-03; device
    # pointers may come from integers, GPU addresses: the RUNTIME rows below)
    "thread-pointer-from-integer": (kernel("out[i] = *(thread float*)(at);"), "no pointers from integers"),
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_refused_on_every_mode(mode, name):
    src, rule = REFUSED[name]
    with pytest.raises(mc.CompileError) as info:
        MODES[mode]().compile(src).k(1, np.zeros(4, np.float32), np.uint64(0))
    first = str(info.value).splitlines()[0]
    assert first.startswith("source.metal:") and f"[MSL rule: {rule}" in first, first


# Compiles (it is C++ a kernel may write) and reaches outside its buffers or its stack when run.
# name: (source, `at`, outcome on checked ("compile" or "execution"), runs on the unchecked in-process device)
RUNTIME = {
    "integer-to-pointer": (kernel("out[i] = *reinterpret_cast<device float*>(at);"), 1 << 12, "compile", False),
    "c-cast-to-pointer": (kernel("out[i] = *(device float*)(at);"), 1 << 12, "compile", False),
    "union-pun-to-pointer": (kernel("U x; x.u = at; out[i] = *x.p;", "union U { device float* p; ulong u; };"), 1 << 12,
                             "compile", False),
    "index-far-outside": (kernel("out[i + at] = 1.0f;"), 1 << 40, "execution", False),
    "atomic-far-outside": (kernel("atomic_store_explicit((device atomic_uint*)out + at, 1u, memory_order_relaxed);"),
                           1 << 40, "execution", False),
    # Wraps around to just past `out`: inside the sandbox's shared memory, which its kernels may
    # write (docs/security.md), so only the checked device has an outcome.
    "pointer-arithmetic-wrapping": (kernel("device float* p = out + (at << 62); p = p + (at << 62) + 4; p[0] = 5.0f;"),
                                    1, "execution", False),
    # (as_type to a pointer and variable-length arrays are refused at compile time on every mode:
    # test_attack_memory_constructs.py.)
    "recursion-through-a-constructor": (kernel("out[i] = float(A(int(at)).n);",
                                               "struct A { int n; A(int k) : n(k ? A(k - 1).n + 1 : 0) {} };"),
                                        1 << 26, "execution", True),
}


# What the translation verifier (docs/security.md) refuses of these, by the words of its refusal.
VERIFIER_REFUSES = {"c-cast-to-pointer": "a cast from an integer to a pointer",
                    "recursion-through-a-constructor": "can reach recursion, which MSL does not allow"}


@pytest.mark.parametrize("name", sorted(RUNTIME))
def test_reaching_outside_is_contained(mode, name, monkeypatch):
    src, at, checked_outcome, runs_in_process = RUNTIME[name]
    if name in VERIFIER_REFUSES and not (mode == "checked" and checked_outcome == "compile"):
        # The translation verifier refuses it (on wherever libclang loads); where it is off, the
        # device contains it.
        if mc._core._translation_verifier_library()[0]:
            monkeypatch.setenv("METALCALL_VERIFY", "1")
            with pytest.raises(mc.CompileError, match=VERIFIER_REFUSES[name]):
                MODES[mode]().compile(src)
        monkeypatch.setenv("METALCALL_VERIFY", "0")
    if mode == "cpu" and not runs_in_process:
        pytest.skip("the in-process unchecked device runs trusted code: a wild pointer may end the process (docs/security.md)")
    if mode == "sandbox" and name == "pointer-arithmetic-wrapping":
        pytest.skip("a sandboxed kernel may write the sandbox's shared memory (docs/security.md)")
    dev = MODES[mode]()
    kept = dev.asarray(np.arange(4, dtype=np.float32))
    if mode == "checked" and checked_outcome == "compile":
        with pytest.raises(mc.CompileError):
            dev.compile(src).k(1, np.zeros(4, np.float32), np.uint64(at))
        return
    lib = dev.compile(src)
    with pytest.raises(mc.ExecutionError) as info:
        lib.k(1, np.zeros(4, np.float32), np.uint64(at))
    message = str(info.value)
    assert "kernel 'k'" in message, message
    if mode == "sandbox":
        assert "crashed with a segmentation fault" in message and "the interpreter and the Buffers are unharmed" in message
    elif mode == "checked" and "overflowed its stack" not in message:
        assert "out of bounds" in message and "the access was not performed" in message, message
    else:
        assert "overflowed its stack" in message, message
    # The process and the device go on; a Buffer keeps its contents.
    np.testing.assert_array_equal(np.asarray(kept), np.arange(4, dtype=np.float32))
    good = dev.compile(kernel("out[i] = float(i) + float(at);"))
    out = np.zeros(4, np.float32)
    good.k(4, out, np.uint64(1))
    np.testing.assert_array_equal(out, [1, 2, 3, 4])
