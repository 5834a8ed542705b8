"""The refused-construct corpus (issue P1.5 item 1): the translating backends accept MSL,
not host C++. Each rule of docs/msl-rules.md has a kernel that must be refused (a
CompileError at the construct's line and column whose message names the rule) and a
close valid MSL kernel that must compile and run. The attacks of the issue (a static
constructor calling system(), a file-scope initialiser, fopen/dlopen/syscall/asm at
call time) are refused before anything of them runs."""

from __future__ import annotations

import os

import numpy as np
import pytest

import metalcall as mc

HEADER = "#include <metal_stdlib>\nusing namespace metal;\n"


def kernel(body: str, prefix: str = "", attrs: str = "") -> str:
    """A one-buffer kernel `k` whose body is `body`, after `prefix` (program scope)."""
    return (
        HEADER
        + prefix
        + "kernel void k(device float* a [[buffer(0)]]"
        + attrs
        + ", uint i [[thread_position_in_grid]]) {\n"
        + body
        + "\n}\n"
    )


# name: (refused source, text at the error (first occurrence), rule named in the message)
REFUSED = {
    "asm": (kernel('    asm volatile("nop");\n    a[i] = 1.0f;'), "asm", "no inline assembly"),
    "asm-gnu": (kernel('    __asm__("syscall");'), "__asm__", "no inline assembly"),
    "extern": ('extern "C" int system(const char*);\n' + kernel("    a[i] = 1.0f;"), "extern", "no extern declarations"),
    "prototype-without-definition": (
        "int system(const char* command);\n" + kernel('    a[i] = system("true");'),
        "system",
        "functions are defined in the source",
    ),
    "call-printf": (kernel('    printf("%f", a[i]);'), "printf", "calls only to source functions"),
    "call-malloc": (kernel("    a[i] = float(size_t(malloc(4)));"), "malloc", "calls only to source functions"),
    "call-exit": (kernel("    exit(1);"), "exit", "calls only to source functions"),
    "call-abort": (kernel("    if (a[i] < 0) abort();"), "abort", "calls only to source functions"),
    "call-fopen": (kernel('    a[i] = float(size_t(fopen("/etc/passwd", "r")));'), "fopen", "calls only to source functions"),
    "call-dlopen": (kernel('    a[i] = float(size_t(dlopen("libc.so.6", 2)));'), "dlopen", "calls only to source functions"),
    "call-syscall": (kernel("    a[i] = float(syscall(39));"), "syscall", "calls only to source functions"),
    "global-variable": ("int counter = 0;\n" + kernel("    a[i] = float(counter);"), "counter", "program-scope and static variables are constant"),
    "static-global-initialiser": (
        "float seed() { return 3.0f; }\nstatic float x = seed();\n" + kernel("    a[i] = x;"),
        "x =",
        "program-scope and static variables are constant",
    ),
    "constant-dynamic-initialiser": (
        "float seed() { return 3.0f; }\nconstant float x = seed();\n" + kernel("    a[i] = x;"),
        "seed();",
        "program-scope and static variables are constant",
    ),
    "global-lambda": ("auto bump = [](float x) { return x + 1.0f; };\n" + kernel("    a[i] = bump(a[i]);"), "bump", "program-scope and static variables are constant"),
    "template-static-member": (
        "template <class T> struct S { static int x; };\nint seed() { return 1; }\ntemplate <class T> int S<T>::x = seed();\n"
        + kernel("    a[i] = float(S<int>::x);"),
        "x = seed",
        "program-scope and static variables are constant",
    ),
    "recursion-global-qualified": (
        "int f(int x) { return x > 0 ? ::f(x - 1) : 0; }\n" + kernel("    a[i] = float(f(int(a[i])));"),
        "f(x - 1)",
        "no recursion",
    ),
    "static-local": (kernel("    static float calls = 0;\n    a[i] = calls;"), "static", "program-scope and static variables are constant"),
    "attribute-constructor": (
        "__attribute__((constructor)) void boot() { }\n" + kernel("    a[i] = 1.0f;"),
        "constructor",
        "attributes MSL defines",
    ),
    "attribute-gnu-namespace": (
        "[[gnu::constructor]] void boot() { }\n" + kernel("    a[i] = 1.0f;"),
        "gnu",
        "attributes MSL defines",
    ),
    "attribute-unknown": (kernel("    a[i] = 1.0f;", attrs=", device float* b [[buffer(1), frobnicate]]"), "frobnicate", "attributes MSL defines"),
    "buffer-index-limit": (kernel("    a[i] = 1.0f;", attrs=", device float* b [[buffer(31)]]"), "31", "argument indices within Metal's limits"),
    "buffer-index-huge": (kernel("    a[i] = 1.0f;", attrs=", device float* b [[buffer(99999)]]"), "99999", "argument indices within Metal's limits"),
    "threadgroup-index-limit": (
        kernel("    a[i] = 1.0f;", attrs=", threadgroup float* t [[threadgroup(31)]]"),
        "31",
        "argument indices within Metal's limits",
    ),
    "recursion-direct": (
        "float f(float x) { return x < 1.0f ? x : f(x - 1.0f); }\n" + kernel("    a[i] = f(a[i]);"),
        "f(x - 1.0f)",
        "no recursion",
    ),
    "recursion-cycle": (
        "float g(float x);\nfloat f(float x) { return x < 1.0f ? x : g(x - 1.0f); }\n"
        "float g(float x) { return f(x * 0.5f); }\n" + kernel("    a[i] = f(a[i]);"),
        "g(x - 1.0f)",
        "no recursion",
    ),
    "builtin": (kernel("    __builtin_trap();"), "__builtin_trap", "no compiler builtins"),
    "reserved-name": (kernel("    a[i] = float(__sync_fetch_and_add((device int*)a, 1));"), "__sync_fetch_and_add", "no reserved names"),
    "function-pointer": (
        "float twice(float x) { return 2.0f * x; }\n" + kernel("    float (*fp)(float) = twice;\n    a[i] = fp(a[i]);"),
        "(*fp)",
        "no function pointers",
    ),
    "function-pointer-parameter": (
        "float apply(float (*f)(float), float x) { return f(x); }\n" + kernel("    a[i] = a[i];"),
        "(*f)",
        "no function pointers",
    ),
    "function-pointer-cast": (kernel("    ((void (*)())size_t(a[i]))();"), "(*)", "no function pointers"),
    "throw": (kernel("    if (a[i] < 0) throw 1;"), "throw", "no exceptions"),
    "try": (kernel("    try { a[i] = 1.0f; } catch (...) { }"), "try", "no exceptions"),
    "new": (kernel("    float* p = new float[4];\n    a[i] = p[0];"), "new", "no new/delete"),
    "delete": (kernel("    thread float* p = &a[i];\n    delete p;"), "delete", "no new/delete"),
    "virtual": (
        "struct Op { virtual float run(float x) const { return x; } };\n" + kernel("    a[i] = Op().run(a[i]);"),
        "virtual",
        "no virtual functions",
    ),
    "thread_local": ("thread_local float scratch;\n" + kernel("    a[i] = scratch;"), "thread_local", "no thread_local or register"),
    "goto": (kernel("    if (a[i] < 0) goto done;\n    a[i] = 1.0f;\ndone:\n    return;"), "goto", "no goto"),
    "typeid": (kernel("    a[i] = float(sizeof(typeid(a[i])));"), "typeid", "no RTTI"),
    "std-namespace": (kernel("    a[i] = std::max(a[i], 0.0f);"), "std::", "no host library"),
    "global-qualified": (kernel("    a[i] = float(::getpid());"), "getpid", "no host library"),
    "pragma": ('#pragma GCC optimize("O0")\n' + kernel("    a[i] = 1.0f;"), "#pragma", "pragmas"),
    "main": ("void main() { }\n" + kernel("    a[i] = 1.0f;"), "main", "no function named main"),
    # Pointer types without an address space: host pointers no checked bound covers (an in-process
    # checked device wrote through `(float*)a` past every Buffer).
    "pointer-without-space": (kernel("    float* q = a;\n    q[i] = 1.0f;"), "* q", "pointers name their address space"),
    "cast-to-pointer-without-space": (kernel("    ((float*)a)[i + 4096] = 1.0f;"), "*)a", "pointers name their address space"),
    "alias-pointer-without-space": (kernel("    a[i] = 1.0f;", prefix="typedef const half real;\nusing P = real*;\n"), "*;",
                                    "pointers name their address space"),
}

# name: (close valid MSL source, expected a after k(n, a) with a = arange(n))
N = 8
VALID = {
    "helpers-and-stdlib": (
        "float twice(float x) { return 2.0f * x; }\n" + kernel("    a[i] = twice(a[i]) + max(a[i], 0.0f) - fabs(a[i]);"),
        lambda x: 2 * x,
    ),
    "constant-globals": (
        "constant float kScale = 3.0f;\nconstexpr float seed() { return 1.0f; }\nconstant float kSeed = seed();\n"
        "constant float kTable[2] = {10.0f, 20.0f};\n"
        + kernel("    a[i] = a[i] * kScale + kSeed + kTable[i % 2];"),
        lambda x: x * 3 + 1 + np.where(np.arange(N) % 2 == 0, 10, 20),
    ),
    "constexpr-static-local": (
        kernel("    constexpr static float k = 4.0f;\n    a[i] = a[i] + k;"),
        lambda x: x + 4,
    ),
    "attributes-within-limits": (
        HEADER
        + "[[maybe_unused]] inline __attribute__((always_inline)) float one() { return 1.0f; }\n"
        + "kernel void k(device float* a [[buffer(0)]], device float* b [[buffer(30)]],\n"
        + "              uint i [[thread_position_in_grid]]) {\n    a[i] = a[i] + one();\n}\n",
        None,  # needs b: run separately
    ),
    "no-recursion-chain": (
        "constexpr int fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }\n"
        "static_assert(fib(10) == 55, \"compile-time recursion is constant evaluation\");\n"
        "float g(float x) { return x * 0.5f; }\nfloat f(float x) { return g(x) + g(x); }\n"
        + kernel("    a[i] = f(a[i]);"),
        lambda x: x,
    ),
    "overloads-calling-each-other": (
        "float sq(float x) { return x * x; }\nfloat2 sq(float2 v) { return float2(sq(v.x), sq(v.y)); }\n"
        + kernel("    a[i] = sq(float2(a[i], 1.0f)).x;"),
        lambda x: x * x,
    ),
    "metal-builtin-functions": (kernel("    a[i] = float(popcount(uint(a[i])));"), lambda x: np.array([bin(int(v)).count("1") for v in x])),
    "functor-instead-of-pointer": (
        "struct Twice { float operator()(float x) const { return 2.0f * x; } };\n"
        "template <class F> float apply(F f, float x) { return f(x); }\n" + kernel("    a[i] = apply(Twice(), a[i]);"),
        lambda x: 2 * x,
    ),
    "function-pointer-template-parameter": (
        "float twice(float x) { return 2.0f * x; }\n"
        "template <float (*F)(float)> float apply(float x) { return F(x); }\n"
        "using unary_t = float (*)(float);\n" + kernel("    a[i] = apply<twice>(a[i]);"),
        lambda x: 2 * x,
    ),
    "lambda": (kernel("    auto twice = [](float x) { return 2.0f * x; };\n    a[i] = twice(a[i]);"), lambda x: 2 * x),
    "deleted-member": (
        "struct Box { float v; Box(float x) : v(x) {} Box& operator=(const Box&) = delete; };\n"
        + kernel("    Box b(a[i]);\n    a[i] = b.v + 1.0f;"),
        lambda x: x + 1,
    ),
    "loop-instead-of-goto": (
        kernel("    float s = 0.0f;\n    for (int j = 0; j < 4; ++j) {\n        if (j == 3) break;\n        s += 1.0f;\n    }\n    a[i] = a[i] + s;"),
        lambda x: x + 3,
    ),
    "metal-qualified": (kernel("    a[i] = metal::max(a[i], 2.0f);"), lambda x: np.maximum(x, 2)),
    "pointers-with-their-space": (
        kernel("    device float* q = a + i;\n    thread float x = *q;\n    thread float* px = &x;\n"
               "    const device float* r = static_cast<const device float*>(q);\n"
               "    a[i] = *px + first<const device float>(r) + float(sizeof(float) * 2);",
               prefix="template <class T> T first(T* p) { return p[0]; }\n"
                      "static_assert(is_same_v<remove_pointer_t<const int*>, const int>, \"a trait's argument reads no memory\");\n"),
        lambda x: 2 * x + 8,
    ),
    "pragma-unroll": (
        kernel("    float s = 0.0f;\n#pragma unroll\n    for (int j = 0; j < 4; ++j) s += 1.0f;\n    a[i] = a[i] + s;"),
        lambda x: x + 4,
    ),
}


def _position(src: str, needle: str) -> tuple[int, int]:
    offset = src.index(needle)
    line = src.count("\n", 0, offset) + 1
    column = offset - (src.rfind("\n", 0, offset) + 1) + 1
    return line, column


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_refused(cpu_device, name):
    src, needle, rule = REFUSED[name]
    with pytest.raises(mc.CompileError) as info:
        cpu_device.compile(src)
    e = info.value
    first = str(e).splitlines()[0]
    assert f"[MSL rule: {rule}" in first, first
    line, column = _position(src, needle)
    assert (e.line, e.column) == (line, column), first
    assert e.source_line == src.splitlines()[line - 1]


@pytest.mark.parametrize("name", sorted(VALID))
def test_close_valid_kernel_runs(device, name):
    src, expected = VALID[name]
    lib = device.compile(src)
    a = np.arange(N, dtype=np.float32)
    if expected is None:
        b = np.zeros(N, dtype=np.float32)
        lib.k(N, a, b)
        np.testing.assert_allclose(a, np.arange(N) + 1)
        return
    lib.k(N, a)
    np.testing.assert_allclose(a, expected(np.arange(N, dtype=np.float64)).astype(np.float32), rtol=1e-6)


def test_every_rule_has_a_refused_kernel():
    rules = {rule for _, _, rule in REFUSED.values()}
    assert len(rules) >= 18, sorted(rules)


ATTACK_MARKER = "/tmp/metalcall-refused-constructs-{}"


@pytest.mark.parametrize(
    "attack",
    [
        'extern "C" int system(const char*);\n__attribute__((constructor)) static void boot() { system("touch {m}"); }\n',
        'extern "C" int system(const char*);\nstatic int boot = system("touch {m}");\n',
        'int system(const char*);\nstruct Boot { Boot() { system("touch {m}"); } } boot;\n',
        'int system(const char*);\n[[gnu::constructor]] void boot() { system("touch {m}"); }\n',
    ],
    ids=["constructor-attribute", "file-scope-initialiser", "global-object", "gnu-constructor"],
)
def test_static_constructor_attacks_run_nothing(cpu_device, attack, tmp_path):
    marker = str(tmp_path / "ran")
    src = attack.replace("{m}", marker) + kernel("    a[i] = 1.0f;")
    for checked in (False, True):
        dev = mc.Device("cpu", checked=True) if checked else cpu_device
        with pytest.raises(mc.CompileError, match=r"\[MSL rule: "):
            dev.compile(src)
        assert not os.path.exists(marker)


@pytest.mark.parametrize(
    "body",
    [
        'system("touch {m}");',
        'fopen("{m}", "w");',
        'dlopen("libc.so.6", 2);',
        "syscall(62, 0, 9);",
        'asm volatile("ud2");',
        "abort();",
        "exit(3);",
        "__builtin_trap();",
    ],
)
def test_call_time_attacks_are_refused_at_compile(cpu_device, body, tmp_path):
    marker = str(tmp_path / "ran")
    with pytest.raises(mc.CompileError, match=r"\[MSL rule: "):
        cpu_device.compile(kernel("    " + body.replace("{m}", marker)))
    assert not os.path.exists(marker)


def test_index_limits_apply_to_computed_and_implicit_indices(cpu_device):
    # An index given by an enum constant is known only after the compiler evaluates it;
    # a 32nd buffer without [[buffer(n)]] gets index 31 implicitly. Both exceed the table.
    src = (
        "enum Index { kIn = 0, kOut = 40 };\n"
        "kernel void k(device float* a [[buffer(kIn)]], device float* b [[buffer(kOut)]],\n"
        "              uint i [[thread_position_in_grid]]) { b[i] = a[i]; }\n"
    )
    with pytest.raises(mc.CompileError, match=r"index 40.*\[MSL rule: argument indices within Metal's limits\]") as info:
        cpu_device.compile(src).k
    assert info.value.line == 2
    params = ", ".join(f"device float* p{n}" for n in range(32))
    src = "kernel void k(" + params + ", uint i [[thread_position_in_grid]]) { p0[i] = 1.0f; }\n"
    with pytest.raises(mc.CompileError, match=r"'p31' is bound to index 31") as info:
        cpu_device.compile(src)
    assert (info.value.line, info.value.column) == (1, src.index("p31") + 1)
    ok = "kernel void k(" + ", ".join(f"device float* p{n}" for n in range(31)) + ", uint i [[thread_position_in_grid]]) { p0[i] = 1.0f; }\n"
    cpu_device.compile(ok)
