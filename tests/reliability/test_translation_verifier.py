"""The second, independent check of the translation (on wherever libclang loads; METALCALL_VERIFY=0
off, =1 required; docs/security.md, "The translation verifier"): Clang's front end, through
libclang, parses the C++ the CPU backend built and verifies it before the object is kept or loaded.

Real translations of real kernels pass (a reduction whose barriers are reached through a
functor, SIMD-group functions reached through an operator, templates); each check is shown to
fire on translated text where the token-level front end would have refused the MSL
(asm, an integer-to-pointer cast, a function pointer, a libc call, recursion through an
operator, a barrier the translator's mode missed). Then the wiring: a verified cold compile
runs with the right values, the verdict is part of the build's cache key, and a missing
libclang is a clear DeviceError. The prelude is parsed once per head (a precompiled header of
the translator's part ahead of the user's code, kept in the disk cache): its verdicts are the
whole unit's, and a damaged or foreign header is never read as one.
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import metalcall as mc
from metalcall import _core

FOUND, LIBCLANG = _core._translation_verifier_library()
pytestmark = pytest.mark.skipif(not FOUND, reason=f"no libclang: {LIBCLANG}")

BASE = """
#include <metal_stdlib>
using namespace metal;
float helper(float x) { return x + 1.0f; }
struct Acc { float v; Acc operator+(Acc o) const { return Acc{v + o.v}; } };
kernel void plain(device float* x [[buffer(0)]], uint i [[thread_position_in_grid]]) {
  Acc a{x[i]}; Acc b{helper(x[i])}; x[i] = (a + b).v;
}
"""

# Threadgroup reduction whose barrier is reached through a functor's operator().
FUNCTOR_REDUCTION = """
#include <metal_stdlib>
using namespace metal;
struct Step {
  float operator()(threadgroup float* s, uint t, uint k) const {
    threadgroup_barrier(mem_flags::mem_threadgroup);
    return t < k ? s[t] + s[t + k] : s[t];
  }
};
kernel void reduce(device const float* x [[buffer(0)]], device float* out [[buffer(1)]],
                   uint t [[thread_index_in_threadgroup]], uint gid [[thread_position_in_grid]],
                   uint g [[threadgroup_position_in_grid]]) {
  threadgroup float s[64];
  s[t] = x[gid];
  Step step;
  for (uint k = 32; k > 0; k >>= 1) {
    float v = step(s, t, k);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    s[t] = v;
  }
  if (t == 0) out[g] = s[0];
}
"""

# SIMD-group functions reached through an operator and a function template.
SIMD_OPERATOR_TEMPLATE = """
#include <metal_stdlib>
using namespace metal;
struct Lanes { float v; };
Lanes operator+(Lanes a, Lanes b) { return Lanes{simd_sum(a.v) + b.v}; }
template <typename T> T twice(T x) { return x + x; }
template <typename T> T shifted(T x) { return simd_shuffle_down(x, 1u); }
kernel void lanes(device float* x [[buffer(0)]], uint i [[thread_position_in_grid]]) {
  Lanes a{x[i]};
  x[i] = (a + Lanes{twice(1.0f)}).v + shifted<float>(x[i]);
}
"""

# A function as a template argument (ggml's dequantize_func): a compile-time constant in MSL.
FUNCTION_TEMPLATE_ARGUMENT = """
#include <metal_stdlib>
using namespace metal;
void inc(thread float& v) { v += 1.0f; }
template <void (*F)(thread float&)> void apply(thread float& v) { F(v); }
kernel void bump(device float* x [[buffer(0)]], uint i [[thread_position_in_grid]]) {
  float v = x[i];
  apply<inc>(v);
  x[i] = v;
}
"""


def translation(source: str) -> str:
    return _core._cpu_translation(source)


def with_helper_body(body: str, before: str = "") -> str:
    """BASE's translation with helper's body replaced (and `before` added ahead of it)."""
    text = translation(BASE)
    original = "float helper(float x) { return x + 1.0f; }"
    assert original in text
    return text.replace(original, before + "float helper(float x) { " + body + " }")


def problems_of(code: str) -> list[str]:
    return _core._verify_cpu_translation(code)


@pytest.mark.parametrize("source", [BASE, FUNCTOR_REDUCTION, SIMD_OPERATOR_TEMPLATE, FUNCTION_TEMPLATE_ARGUMENT],
                         ids=["plain", "functor-reduction", "simd-operator-template", "function-template-argument"])
def test_real_translations_pass(source):
    assert problems_of(translation(source)) == []


# Barriers at the body's top level only: the translator runs it as loops between them (regions).
REGIONS = """
#include <metal_stdlib>
using namespace metal;
float total(threadgroup float* s) { float t = 0; for (int i = 0; i < 64; i++) t += s[i]; return t; }
kernel void sums(device const float* x [[buffer(0)]], device float* out [[buffer(1)]],
                 uint t [[thread_index_in_threadgroup]], uint gid [[thread_position_in_grid]],
                 uint g [[threadgroup_position_in_grid]]) {
  threadgroup float s[64];
  s[t] = x[gid];
  threadgroup_barrier(mem_flags::mem_threadgroup);
  if (t == 0) out[g] = total(s);
}
"""


def test_regions_mode_is_read_from_the_translation():
    text = translation(REGIONS)
    assert "metal::mtl_regions::mtl_now = {" in text  # the translator chose regions
    assert problems_of(text) == []
    # A SIMD-group function in a kernel run as regions: only fibers honour it.
    found = problems_of(text.replace("float t = 0;", "float t = simd_sum(0.0f);", 1))
    assert len(found) == 1, found
    assert found[0].startswith("kernel 'sums' (metalcall_entry_0) was translated to run as loops between its "
                               "barriers (regions), but it can reach simd_sum at source.metal:4:")
    assert found[0].endswith("metalcall_entry_0 -> sums -> total")


def test_asm_statement():
    found = problems_of(with_helper_body('asm volatile("nop"); return x;'))
    assert len(found) == 1 and "an asm statement" in found[0] and found[0].startswith("source.metal:4:")


def test_file_scope_asm():
    found = problems_of(with_helper_body("return x;", before='asm(".globl mtl_evil");\n'))
    assert any("an asm declaration" in p for p in found), found


def test_integer_to_pointer_casts():
    for cast in ["(float*)(unsigned long)x", "reinterpret_cast<float*>((unsigned long)x)",
                 "static_cast<float*>((void*)(unsigned long)x)"]:
        found = problems_of(with_helper_body(f"float* p = {cast}; return *p;"))
        assert any("a cast from an integer to a pointer" in p for p in found), (cast, found)


def test_null_pointer_constant_is_not_an_integer_cast():
    assert problems_of(with_helper_body("float* p = (float*)0; return p ? *p : x;")) == []


def test_function_pointers():
    found = problems_of(with_helper_body("float (*f)(float) = &metal::fabs; return f(x);"))
    assert any("a function pointer (float (*)(float))" in p for p in found), found
    found = problems_of(with_helper_body("using M = float (Acc::*)() const; M m = nullptr; return m ? x : x;",
                                         before="struct Acc;\n"))
    assert any("a function pointer" in p for p in found), found


def test_libc_calls():
    found = problems_of(with_helper_body("return x + toupper(65);", before="#include <ctype.h>\n"))
    assert any("'toupper' is declared outside the translation and the prelude" in p for p in found), found
    found = problems_of(with_helper_body('puts("hi"); return x;', before='extern "C" int puts(const char*);\n'))
    assert any("'puts' is declared but not defined in the translation" in p for p in found), found


def test_explicit_specialisations_are_functions_of_their_own():
    # One specialisation calling another is no recursion (test_more_production_constructs' mpc_sum);
    # one calling itself is.
    before = ("struct Two { float a, b; };\n"
              "template <typename T> float total(T v);\n"
              "template <> float total(float v) { return v; }\n"
              "template <> float total(Two v) { return total(v.a) + total(v.b); }\n")
    assert problems_of(with_helper_body("return total(Two{x, x});", before=before)) == []
    found = problems_of(with_helper_body("return total(Two{x, x});", before=before.replace(
        "{ return v; }", "{ return v > 0 ? total(v - 1.0f) : v; }")))
    assert found == ["kernel 'plain' (metalcall_entry_0) can reach recursion, which MSL does not allow: total -> total"]


def test_builtins_msl_allows():
    # The front end's builtins (test_compiler_builtins): Clang declares them where they are first
    # used, and they are the compiler's, not the host's libraries'. Any other is still refused.
    assert problems_of(with_helper_body("__builtin_assume(x > 0); return x + float(__builtin_clz(1u)) + "
                                        "(__builtin_expect(x > 0, 1) ? 0.0f : 1.0f);")) == []
    assert problems_of(with_helper_body("__builtin_trap(); return x;")) == [
        "source.metal:4:25: '__builtin_trap' is declared but not defined in the translation "
        "(the host's libraries would supply it)"]


def test_recursion_through_an_operator():
    text = translation(BASE).replace("return Acc{v + o.v};", "return o.v > 0 ? Acc{v} + Acc{o.v - 1} : Acc{v};")
    found = problems_of(text)
    assert found == ["kernel 'plain' (metalcall_entry_0) can reach recursion, which MSL does not allow: "
                     "operator+ -> operator+"], found


def test_constant_expressions_are_the_compilers():
    # A constexpr variable's initialiser and a static_assert run in the compiler: fib's recursion
    # there is no kernel's (tests/conformance/test_language.py's l_constants); called at run time it is.
    fib = "constexpr int fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }\n"
    assert problems_of(with_helper_body('constexpr int f = fib(7); static_assert(fib(5) == 5, "fib"); return x + f;',
                                        before=fib)) == []
    found = problems_of(with_helper_body("return x + fib(int(x));", before=fib))
    assert found == ["kernel 'plain' (metalcall_entry_0) can reach recursion, which MSL does not allow: fib -> fib"]
    # A lambda defined in a constant's initialiser may still be called at run time.
    found = problems_of(with_helper_body(
        "constexpr auto step = [](float v) { threadgroup_barrier(mem_flags::mem_none); return v; }; return step(x);"))
    assert len(found) == 1 and "can reach threadgroup_barrier" in found[0], found


def test_barrier_the_mode_missed():
    # BASE runs as a plain loop; a barrier reached through helper must have made it fibers.
    found = problems_of(with_helper_body("threadgroup_barrier(mem_flags::mem_threadgroup); return x;"))
    assert len(found) == 1, found
    assert found[0].startswith("kernel 'plain' (metalcall_entry_0) was translated to run as a plain loop")
    assert "threadgroup_barrier at source.metal:4:" in found[0] and found[0].endswith(
        "metalcall_entry_0 -> plain -> helper")


def test_simd_function_through_an_operator_the_mode_missed():
    text = translation(BASE).replace("return Acc{v + o.v};", "return Acc{simd_sum(v) + o.v};")
    found = problems_of(text)
    assert len(found) == 1 and "can reach simd_sum at source.metal:5:" in found[0], found
    assert found[0].endswith("plain -> operator+")


def test_call_through_a_function_template_argument_is_followed():
    # apply<F> calls F: every function named as a value may be F, so a barrier in inc counts.
    text = translation(FUNCTION_TEMPLATE_ARGUMENT).replace("v += 1.0f;", "threadgroup_barrier(mem_flags::mem_none);")
    found = problems_of(text)
    assert len(found) == 1 and "can reach threadgroup_barrier" in found[0], found
    assert found[0].endswith("-> inc")


def test_unresolved_template_call_is_taken_by_name():
    # A dependent call (t.step(x)) Clang cannot resolve in the template: every function of
    # that name counts, so the barrier in Stepper::step is reached.
    text = translation(BASE).replace(
        "float helper(float x) { return x + 1.0f; }",
        "struct Stepper { float step(float x) const { threadgroup_barrier(mem_flags::mem_none); return x; } };\n"
        "template <typename T> float call_step(T t, float x) { return t.step(x); }\n"
        "float helper(float x) { return call_step(Stepper{}, x); }")
    found = problems_of(text)
    assert len(found) == 1 and "can reach threadgroup_barrier" in found[0], found


def run_python(code: str, **env) -> subprocess.CompletedProcess:
    """`code` in a fresh interpreter, with `env` over this one's (None: unset)."""
    full = {k: v for k, v in {**os.environ, **env}.items() if v is not None}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=full)


VERIFIED_RUN = """
import numpy as np, metalcall as mc
d = mc.Device("cpu")
k = d.compile(SOURCE).function("reduce")
x = np.arange(256, dtype=np.float32)
out = np.zeros(4, dtype=np.float32)
k(256, x, out, threadgroup=64)
print(out.tolist())
""".replace("SOURCE", repr(FUNCTOR_REDUCTION))


def test_verified_compile_runs_and_is_cached(tmp_path):
    env = {"METALCALL_VERIFY": "1", "METALCALL_CACHE_DIR": str(tmp_path)}
    first = run_python(VERIFIED_RUN, **env)
    assert first.returncode == 0, first.stderr
    expected = np.arange(256, dtype=np.float32).reshape(4, 64).sum(axis=1).tolist()
    assert eval(first.stdout) == expected
    # The verified build is its own cache entry; a process that does not ask for the check is
    # served from it too (a build that passed the check is as good): nothing new is built.
    cpu_entries = lambda: sorted(p.name for p in (tmp_path / "cpu").rglob("*.so"))  # noqa: E731
    verified = cpu_entries()
    assert len(verified) == 1
    plain = run_python(VERIFIED_RUN, METALCALL_VERIFY="0", METALCALL_CACHE_DIR=str(tmp_path))
    assert plain.returncode == 0 and eval(plain.stdout) == expected
    assert cpu_entries() == verified
    # A second verified process is served from the verified entry; and so is one that does not
    # say (on by default where libclang loads).
    again = run_python(VERIFIED_RUN, **env)
    assert again.returncode == 0 and eval(again.stdout) == expected
    default = run_python(VERIFIED_RUN, METALCALL_VERIFY=None, METALCALL_CACHE_DIR=str(tmp_path))
    assert default.returncode == 0 and eval(default.stdout) == expected
    assert cpu_entries() == verified


def test_unverified_build_does_not_serve_a_verified_compile(tmp_path):
    # An entry built without the check stands for no check: a verified process builds (and checks) its own.
    cpu_entries = lambda: sorted(p.name for p in (tmp_path / "cpu").rglob("*.so"))  # noqa: E731
    expected = np.arange(256, dtype=np.float32).reshape(4, 64).sum(axis=1).tolist()
    plain = run_python(VERIFIED_RUN, METALCALL_VERIFY="0", METALCALL_CACHE_DIR=str(tmp_path))
    assert plain.returncode == 0 and eval(plain.stdout) == expected
    unverified = cpu_entries()
    assert len(unverified) == 1
    verified = run_python(VERIFIED_RUN, METALCALL_VERIFY="1", METALCALL_CACHE_DIR=str(tmp_path))
    assert verified.returncode == 0 and eval(verified.stdout) == expected
    assert len(cpu_entries()) == 2 and set(unverified) < set(cpu_entries())


def test_disagreement_is_a_compile_error():
    # The function a verified cold compile calls (cpu_verify.cpp) on a translation the check refuses.
    code = with_helper_body("threadgroup_barrier(mem_flags::mem_threadgroup); return x;")
    with pytest.raises(mc.CompileError) as error:
        _core._check_cpu_translation(code)
    text = str(error.value)
    assert text.startswith("[cpu] the independent check of the translation (Clang's parse of the translated C++")
    assert "kernel 'plain' (metalcall_entry_0) was translated to run as a plain loop" in text
    _core._check_cpu_translation(translation(BASE))  # a real translation: no error


def test_missing_libclang_is_a_clear_error(tmp_path):
    result = run_python(
        "import metalcall as mc\n"
        "try:\n"
        "    mc.Device('cpu').compile('kernel void k(device float* x [[buffer(0)]]) { x[0] = 1; }')\n"
        "except mc.DeviceError as e:\n"
        "    print('DeviceError:', e)\n",
        METALCALL_VERIFY="1", METALCALL_LIBCLANG=str(tmp_path / "no-libclang.so"), METALCALL_CACHE_DIR=str(tmp_path))
    assert result.returncode == 0, result.stderr
    assert "DeviceError:" in result.stdout and "pip install libclang" in result.stdout
    assert "METALCALL_LIBCLANG=" in result.stdout
    # Not asked for: on by default only where libclang loads, so the compile goes on unverified.
    result = run_python(
        "import numpy as np, metalcall as mc\n"
        "out = np.zeros(1, np.float32)\n"
        "mc.Device('cpu').compile('kernel void k(device float* x [[buffer(0)]]) { x[0] = 1; }').k(1, out)\n"
        "print(out.tolist())\n",
        METALCALL_VERIFY=None, METALCALL_LIBCLANG=str(tmp_path / "no-libclang.so"), METALCALL_CACHE_DIR=str(tmp_path))
    assert result.returncode == 0 and result.stdout.strip() == "[1.0]", result.stderr



def test_precompiled_head_gives_the_whole_units_verdicts():
    # One finding of each check above, and two real translations (one with a function template argument).
    cases = [with_helper_body('asm volatile("nop"); return x;'),
             with_helper_body("float* p = (float*)(unsigned long)x; return *p;"),
             with_helper_body("float (*f)(float) = &metal::fabs; return f(x);"),
             with_helper_body('puts("hi"); return x;', before='extern "C" int puts(const char*);\n'),
             with_helper_body("threadgroup_barrier(mem_flags::mem_threadgroup); return x;"),
             translation(BASE).replace("return Acc{v + o.v};", "return o.v > 0 ? Acc{v} + Acc{o.v - 1} : Acc{v};"),
             translation(FUNCTION_TEMPLATE_ARGUMENT), translation(REGIONS)]
    refused = 0
    for code in cases:
        whole, used_whole = _core._verify_cpu_translation_details(code, precompiled_head=False)
        headed, used_head = _core._verify_cpu_translation_details(code)
        assert (used_whole, used_head) == (False, True)
        assert headed == whole, code
        refused += bool(whole)
    assert refused == 6


def test_header_libclang_refuses_is_not_read(tmp_path):
    # A header that is not one, or is cut short: libclang refuses it, and the whole unit decides.
    good = translation(BASE)
    bad = with_helper_body('asm volatile("nop"); return x;')
    garbage = tmp_path / "garbage.pch"
    garbage.write_bytes(b"not a precompiled header" * 64)
    empty = tmp_path / "empty.pch"
    empty.write_bytes(b"")
    for header in (garbage, empty):
        assert _core._verify_cpu_translation_details(good, head_pch=str(header)) == ([], False)
        problems, used = _core._verify_cpu_translation_details(bad, head_pch=str(header))
        assert not used and len(problems) == 1 and "an asm statement" in problems[0]


HEAD_CHECK = """
import sys
from metalcall import _core
print(_core._verify_cpu_translation_details(_core._cpu_translation(sys.argv[1])))
"""


def test_damaged_header_in_the_cache_is_made_again(tmp_path):
    def verify_in_new_process():
        r = subprocess.run([sys.executable, "-c", HEAD_CHECK, BASE], check=False, capture_output=True, text=True,
                           timeout=300,
                           env={**os.environ, "METALCALL_CACHE_DIR": str(tmp_path)})
        assert r.returncode == 0, r.stderr
        assert eval(r.stdout) == ([], True)
        (entry,) = (tmp_path / "verify").glob("*.pch")
        return entry

    entry = verify_in_new_process()  # made and stored
    made = entry.read_bytes()
    assert len(made) > 100_000 and b"CPCH" in made[:4096]  # Clang's header, in the cache's entry
    # Damaged in the middle, same size: a miss (the entry's checksum), never handed to libclang.
    middle = len(made) // 2
    damaged = made[:middle] + bytes(b ^ 0x5A for b in made[middle:middle + 64]) + made[middle + 64:]
    entry.write_bytes(damaged)
    entry = verify_in_new_process()
    again = entry.read_bytes()
    assert again != damaged and len(again) == len(made)
    # Cut short: a miss too.
    entry.write_bytes(made[: len(made) // 3])
    assert len(verify_in_new_process().read_bytes()) == len(made)


def verified_compile(monkeypatch, tmp_path, source: str, checked: bool = False) -> mc.Library:
    """A cold compile (a fresh cache folder) with the check asked for."""
    monkeypatch.setenv("METALCALL_VERIFY", "1")
    monkeypatch.setenv("METALCALL_CACHE_DIR", str(tmp_path))
    return mc.Device("cpu", checked=checked).compile(source)


# A dependent operator in a template (candle's reduce.metal, test_stdlib_traits' tr_argmax):
# `a.val > b.val` compares two T, which the template cannot resolve. Each instantiation Clang
# made is walked with its calls resolved: operator><float> compares floats, and
# operator><ix_pair<float>> calls operator><float>, another function: neither is recursion.
DEPENDENT_OPERATOR = """
#include <metal_stdlib>
using namespace metal;
template <typename T> struct ix_pair { uint i; T val; };
template <typename T>
bool operator>(ix_pair<T> a, ix_pair<T> b) { return a.val > b.val || (!(b.val > a.val) && a.i < b.i); }
kernel void ix_argmax(const device float* x [[buffer(0)]], device uint* index [[buffer(1)]],
                      device uint* nested [[buffer(2)]], constant uint& n [[buffer(3)]],
                      uint row [[thread_position_in_grid]]) {
  ix_pair<float> best{0, x[row * n]};
  ix_pair<ix_pair<float>> outer{0, best};
  for (uint k = 1; k < n; ++k) {
    ix_pair<float> c{k, x[row * n + k]};
    if (c > best) best = c;
    ix_pair<ix_pair<float>> o{k, c};
    if (o > outer) outer = o;
  }
  index[row] = best.i;
  nested[row] = outer.i;
}
"""


def test_dependent_operator_in_a_template(monkeypatch, tmp_path, rng):
    assert problems_of(translation(DEPENDENT_OPERATOR)) == []
    x = rng.standard_normal((8, 37)).astype(np.float32)
    x[3, 30] = x[3, 5] = x[3].max() + 1  # a tie: the lower index wins
    index, nested = np.zeros(8, np.uint32), np.zeros(8, np.uint32)
    kernel = verified_compile(monkeypatch, tmp_path, DEPENDENT_OPERATOR).function("ix_argmax")
    kernel(8, x.ravel(), index, nested, np.uint32(37))
    np.testing.assert_array_equal(index, np.argmax(x, axis=1))
    np.testing.assert_array_equal(nested, np.argmax(x, axis=1))


def test_dependent_call_that_recurses_is_still_refused():
    # Resolved at instantiation to the same function: sum_down<float> calls sum_down<float>.
    before = "template <typename T> T sum_down(T x, int n) { return n > 0 ? x + sum_down(x, n - 1) : x; }\n"
    found = problems_of(with_helper_body("return sum_down(x, 3);", before=before))
    assert found == ["kernel 'plain' (metalcall_entry_0) can reach recursion, which MSL does not allow: "
                     "sum_down -> sum_down"], found
    # Through a class template's member and another instantiation: Walk<int>::go -> down<int> -> Walk<int>::go.
    before = ("template <typename T> T down(T v);\n"
              "template <typename T> struct Walk { T go(T v) const { return v > T(0) ? down(v) : v; } };\n"
              "template <typename T> T down(T v) { return Walk<T>{}.go(v - T(1)); }\n")
    found = problems_of(with_helper_body("return float(Walk<int>{}.go(int(x)));", before=before))
    assert found == ["kernel 'plain' (metalcall_entry_0) can reach recursion, which MSL does not allow: "
                     "go -> down -> go"], found


# SPIRV-Cross's spvStorageMatrix assignment from a braced list (test_space_overloaded_members):
# metal::initializer_list is the host's std::initializer_list, which the prelude re-exports.
INITIALIZER_LIST = """
#include <metal_stdlib>
using namespace metal;
template <typename T, int N>
struct il_columns {
  vec<T, 2> columns[N];
  thread il_columns& operator=(initializer_list<vec<T, 2>> cols) thread {
    size_t i;
    thread const vec<T, 2>* col;
    for (i = 0, col = cols.begin(); i < N && col != cols.end(); ++i, ++col) columns[i] = *col;
    return *this;
  }
};
kernel void il_fill(device float2* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {
  il_columns<float, 3> m;
  m = {float2(i, 1.0f), float2(2.0f, i), float2(i, i)};
  out[i] = m.columns[0] + m.columns[1] + m.columns[2];
}
"""


def test_initializer_list_the_prelude_reexports(monkeypatch, tmp_path):
    for checked in (False, True):
        assert problems_of(_core._cpu_translation(INITIALIZER_LIST, checked)) == []
    out = np.zeros((16, 2), np.float32)
    verified_compile(monkeypatch, tmp_path, INITIALIZER_LIST).function("il_fill")(16, out)
    i = np.arange(16, dtype=np.float32)
    np.testing.assert_array_equal(out, np.stack([2 * i + 2, i + 1 + i], axis=1))
    # The rest of the host's headers is still outside: std::size_t comes from one, and the
    # prelude does not re-export it.
    found = problems_of(with_helper_body("std::size_t n = 1; return x + float(n);"))
    assert any("'size_t' is declared outside the translation and the prelude" in p for p in found), found


# test_cuda_survey_constructs' cs_pointer_bits: a pointer's bits as an integer. On a checked
# device a buffer pointer is a bounds-checked object, which reinterpret_cast does not take:
# Clang and the host compiler both refuse the code. A verified compile checks what the host
# compiler built, so the host compiler's error, on the user's line, is the one raised.
POINTER_BITS = """
#include <metal_stdlib>
using namespace metal;
kernel void bits(device float* buf [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    ulong p = reinterpret_cast<ulong>(buf);
    buf[i] = float(p & 1ul);
}
"""


def test_code_clang_refuses_gets_the_host_compilers_error(monkeypatch, tmp_path):
    problems = problems_of(_core._cpu_translation(POINTER_BITS, True))
    assert problems and all(p.startswith("Clang: ") and "reinterpret_cast" in p for p in problems), problems
    with pytest.raises(mc.CompileError) as error:
        verified_compile(monkeypatch, tmp_path, POINTER_BITS, checked=True)
    assert error.value.line == 5, str(error.value)
    assert "independent check" not in str(error.value)
    out = np.ones(4, np.float32)  # plain mode: the bits of a 4-byte-aligned pointer, even
    monkeypatch.setenv("METALCALL_VERIFY", "1")
    mc.Device("cpu").compile(POINTER_BITS).function("bits")(4, out)
    np.testing.assert_array_equal(out, np.zeros(4, np.float32))


def test_deduced_self_call_back_into_its_own_instantiation():
    """A self-call under `if constexpr` on T passing an expression (`g(v + 1)`) is left to the
    compiler by the front end's recursion rule; where it deduces the same instantiation again
    (int + 1 is int) Clang's call graph over the instantiations refuses it."""
    src = """
#include <metal_stdlib>
using namespace metal;
template <typename T> float g(T v) { if constexpr (is_integral_v<T>) return v > 100 ? float(v) : g(v + 1); else return v; }
template <typename T> float h(T v) { if constexpr (is_integral_v<T>) return h(v + 0.5f); else return v; }
kernel void same(device float* a [[buffer(0)]], uint i [[thread_position_in_grid]]) { a[i] = g(int(i)); }
kernel void other(device float* a [[buffer(0)]], uint i [[thread_position_in_grid]]) { a[i] = h(int(i)); }
"""
    problems, _ = _core._verify_cpu_translation_details(_core._cpu_translation(src, False))
    assert problems == ["kernel 'same' (metalcall_entry_0) can reach recursion, which MSL does not allow: g -> g"]
