#!/usr/bin/env python3
"""Checks which kernels the CPU translation runs as fibers (msl/analysis/sync_reachability.hpp):
each case below is a source of its own, translated with translate_main; a kernel that may reach
a barrier, a SIMD- or quad-group function or a SIMD-group matrix through any spelling must get
the fiber entry point (metalcall_thread_N), and the controls, which reach none, the plain loop.
Translation only, so it runs in a second; tests/conformance/test_barrier_reachability.py runs
such kernels against NumPy.

    check_sync_reachability.py PATH/TO/translate_main
"""
import re
import subprocess
import sys
import tempfile
from pathlib import Path

HEADER = "#include <metal_stdlib>\nusing namespace metal;\n"
KERNEL = "kernel void k(device float* o [[buffer(0)]], uint i [[thread_position_in_grid]]) {{ {body} }}\n"
SUM = "struct A { float operator()(float v) const { return simd_sum(v); } };"

# name: (source after the header, True when the kernel must run as fibers)
CASES = {
    "functor": (SUM + KERNEL.format(body="A a; o[i] = a(o[i]);"), True),
    "functor_temporary": (SUM + KERNEL.format(body="o[i] = A()(o[i]);"), True),
    "functor_through_template": (
        SUM + "template <class F> float apply(thread const F& f, float v) { return f(v); }"
        + KERNEL.format(body="A a; thread const A& r = a; o[i] = apply(r, o[i]);"), True),
    "member_functor": (
        SUM + "struct Outer { A inner; float go(float v) { return inner(v); } };"
        + KERNEL.format(body="Outer x; o[i] = x.go(o[i]);"), True),
    "base_class_operator": (
        "struct Base { float operator()(float v) const { return simd_sum(v); } }; struct Derived : Base {};"
        + KERNEL.format(body="Derived d; o[i] = d(o[i]);"), True),
    "crtp": (
        "template <class D> struct Crtp { float run(float v) { return static_cast<thread D*>(this)->impl(v); } };"
        "struct Impl : Crtp<Impl> { float impl(float v) { return simd_sum(v); } };"
        + KERNEL.format(body="Impl m; o[i] = m.run(o[i]);"), True),
    "explicit_specialisation": (
        "template <int N> float red(float v) { return v; } template <> float red<32>(float v) { return simd_sum(v); }"
        + KERNEL.format(body="o[i] = red<32>(o[i]);"), True),
    "out_of_class_member": (
        "struct S { float op(float); }; float S::op(float v) { return simd_sum(v); }"
        + KERNEL.format(body="S s; o[i] = s.op(o[i]);"), True),
    "out_of_class_call_operator_of_a_library_word": (  # S2 is also a name in the prelude
        "struct S2 { float operator()(float); }; float S2::operator()(float v) { return simd_sum(v); }"
        + KERNEL.format(body="S2 s; o[i] = s(o[i]);"), True),
    "alias": (SUM + "using Red = A;" + KERNEL.format(body="Red r; o[i] = r(o[i]);"), True),
    "typedef": (SUM + "typedef A Red;" + KERNEL.format(body="Red r; o[i] = r(o[i]);"), True),
    "default_template_argument": (
        SUM + "template <class Op = A> float run(float v) { Op op; return op(v); }"
        + KERNEL.format(body="o[i] = run<>(o[i]);"), True),
    "program_scope_functor": (SUM + "constant A g_sum{};" + KERNEL.format(body="o[i] = g_sum(o[i]);"), True),
    "member_template_operator": (
        "struct A { template <class T> T operator()(T v) const { return simd_sum(v); } };"
        + KERNEL.format(body="A a; o[i] = a(o[i]);"), True),
    "deduced_return_type": (
        SUM + "auto make() { return A{}; }" + KERNEL.format(body="auto a = make(); o[i] = a(o[i]);"), True),
    "converting_constructor": (
        "struct A { float v; A(float x) : v(simd_sum(x)) {} }; float use(A a) { return a.v; }"
        + KERNEL.format(body="o[i] = use(o[i]);"), True),
    "default_member_initializer": (
        "struct A { float v = simd_sum(1.0f); };" + KERNEL.format(body="A a; o[i] = a.v;"), True),
    "address_space_qualified_member": (
        "struct A { float f(float v) thread { return simd_sum(v); } };" + KERNEL.format(body="A a; o[i] = a.f(o[i]);"),
        True),
    "noexcept_member": (
        "struct A { float operator()(float v) const noexcept(true) { return simd_sum(v); } };"
        + KERNEL.format(body="A a; o[i] = a(o[i]);"), True),
    "trailing_return_type": (
        "inline auto total(float v) -> float { return simd_sum(v); }" + KERNEL.format(body="o[i] = total(o[i]);"),
        True),
    "nested_namespaces": (
        "namespace a::b { struct A { float operator()(float v) const { return simd_sum(v); } }; }"
        + KERNEL.format(body="a::b::A x; o[i] = x(o[i]);"), True),
    "unnamed_struct_variable": (
        "constant struct { float operator()(float v) const { return simd_sum(v); } } g_anon = {};"
        + KERNEL.format(body="o[i] = g_anon(o[i]);"), True),
    "free_operator_template": (
        "template <class T> struct W { T v; }; template <class T> W<T> operator*(W<T> a, T b) { return W<T>{simd_sum(a.v) * b}; }"
        + KERNEL.format(body="W<float> w{o[i]}; o[i] = (w * 2.0f).v;"), True),
    "range_for_begin": (
        "struct R { float d[4]; };"
        "thread const float* begin(thread const R& r) { simdgroup_barrier(mem_flags::mem_none); return r.d; }"
        "thread const float* end(thread const R& r) { return r.d + 4; }"
        + KERNEL.format(body="R r{}; float s = 0; for (float x : r) s += x; o[i] = s;"), True),
    "conversion_operator": (
        "struct L { float own; operator float() const { return simd_sum(own); } };"
        + KERNEL.format(body="float r = L{o[i]}; o[i] = r;"), True),
    "lambda_in_member": (
        "struct H { float apply(float v) { auto f = [](float x) { return simd_sum(x); }; return f(v); } };"
        + KERNEL.format(body="H h; o[i] = h.apply(o[i]);"), True),
    "simdgroup_matrix_functor": (
        "struct T8 { void operator()(device float* p) const { simdgroup_float8x8 m; simdgroup_load(m, p, 8);"
        " simdgroup_store(m, p, 8); } };" + KERNEL.format(body="T8()(o);"), True),
    "template_kernel_default_argument": (
        SUM + "template <typename Op = A> kernel void tk(device float* o [[buffer(0)]], uint i [[thread_position_in_grid]])"
        " { Op op; o[i] = op(o[i]); }"
        ' template [[host_name("tk0")]] kernel void tk<>(device float*, uint);', True),
    "template_kernel_instantiation": (
        SUM + "template <typename Op> kernel void tk(device float* o [[buffer(0)]], uint i [[thread_position_in_grid]])"
        " { Op op; o[i] = op(o[i]); }"
        ' template [[host_name("tk_sum")]] kernel void tk<A>(device float*, uint);', True),
    # Controls: no path reaches a synchronising name.
    "control_beside_a_functor": (
        SUM + "inline float twice(float v) { return 2 * v; }" + KERNEL.format(body="o[i] = twice(o[i]);"), False),
    "control_plain_functor": (
        "struct Scale { float f; float operator()(float v) const { return f * v; } };"
        + KERNEL.format(body="o[i] = Scale{2.0f}(o[i]);"), False),
    "control_simdgroup_builtin": (
        "kernel void k(device uint* o [[buffer(0)]], uint i [[thread_position_in_grid]],"
        " uint sg [[simdgroup_index_in_threadgroup]]) { o[i] = sg; }", False),
    "control_threadgroup_memory_without_barrier": (
        KERNEL.format(body="threadgroup float t[32]; t[i % 32] = o[i]; o[i] = t[i % 32] * 2.0f;"), False),
}


# The CPU prelude's headers whose code waits for the other lanes or threads (the fiber
# runtime's primitives), and so whose public names must be synchronising names
# (is_synchronising_name: threadgroup_barrier, simd_*, quad_*, simdgroup_*, thread_elements,
# make_filled_simdgroup_matrix, __metal_simd_*, __metal_get_thread_index_in_simdgroup).
WAITING_HEADERS = {"metal_apple_internals.h", "metal_simdgroup.h", "metal_simdgroup_fill.h",
                   "metal_simdgroup_matrix.h", "metal_sync.h"}
PRIMITIVES = re.compile(r"simd_sync\(\)|group_sync\(\)|thread_index\(\)|lane_id[<(]|simd_lane_now\(\)|"
                        r"mtl_rt::(shuffle|reduce|prefix|ballot|active_mask)[<(]|sgm_(leader|spread|gather|written)\b")


def waiting_headers_unchanged():
    """A new header that waits may define a name the analysis does not know: fail until it is checked."""
    prelude = Path(__file__).resolve().parents[2] / "src" / "msl" / "prelude"
    found = {h.name for h in prelude.glob("*.h") if PRIMITIVES.search(h.read_text())}
    if found == WAITING_HEADERS:
        return []
    return [f"the prelude headers that wait changed ({sorted(found ^ WAITING_HEADERS)}): check that every public "
            "name they define is matched by is_synchronising_name (msl/analysis/sync_reachability.cpp), then "
            "update WAITING_HEADERS"]


def fiber_kernels(exe, source):
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "case.metal"
        path.write_text(HEADER + source)
        r = subprocess.run([exe, "--target", "cpu", str(path)], capture_output=True, text=True)
    if r.returncode != 0:
        return None, r.stderr.strip()
    count = len(re.findall(r"metalcall_layout_\d+\[\]", r.stdout))
    return count, set(re.findall(r"metalcall_thread_(\d+)", r.stdout))


def main():
    exe = sys.argv[1]
    failures = waiting_headers_unchanged()
    for name, (source, fibers) in CASES.items():
        count, found = fiber_kernels(exe, source)
        if count is None:
            failures.append(f"{name}: translation failed: {found}")
        elif count != 1:
            failures.append(f"{name}: {count} kernels, expected 1")
        elif bool(found) != fibers:
            failures.append(f"{name}: {'fibers' if found else 'a plain loop'}, expected {'fibers' if fibers else 'a plain loop'}")
    for f in failures:
        print("FAIL:", f)
    print(f"sync reachability: {len(CASES) - len(failures)} of {len(CASES)} cases in the expected mode")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
