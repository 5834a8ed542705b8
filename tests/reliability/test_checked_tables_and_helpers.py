"""Checked mode's later gaps (issue P1.5, "checked mode catches every out-of-bounds
access"): lookup tables (program-scope `constant` arrays, `constexpr`/`static`/`const`
arrays in a function), `thread T*` parameters of helper functions and pointer types
given as a function template's explicit argument. Each kernel reads or writes one past
the end when `off` is 1 and stays inside when it is 0: the first must raise the checked
device's ExecutionError naming what faulted (in a subprocess, so that a regression that
writes past memory fails the test instead of killing pytest), the process must stay
usable, and the second must give NumPy's values on checked and unchecked devices.
"""

from __future__ import annotations

import json
import pickle
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import metalcall as mc

pytestmark = pytest.mark.skipif("cpu" not in mc.backends(), reason="checked mode is a feature of the cpu backend")

HEADER = "#include <metal_stdlib>\nusing namespace metal;\n"
SIGNATURE = ("device float* p [[buffer(0)]], const device float* src [[buffer(1)]], "
             "constant int& off [[buffer(2)]], uint i [[thread_position_in_grid]]")
SRC = np.array([1.0, 2.0, 3.0, 4.0], np.float32)  # buffer 1 (4 threads)
TABLE = np.array([1.5, 2.5, -3.0, 4.0], np.float32)

# name → (kernel source (its parameters are SIGNATURE), what the error names, p's values when off = 0)
CASES = {
    # 2: program-scope `constant` data
    "program_scope_table": ("""
        constant float table[4] = {1.5f, 2.5f, -3.0f, 4.0f};
        kernel void k(SIGNATURE) { p[i] = table[i + off] * 2.0f; }""", "constant array", TABLE * 2),
    "program_scope_table_without_extent": ("""
        constant float table[] = {1.5f, 2.5f, -3.0f, 4.0f};
        kernel void k(SIGNATURE) { p[i] = table[i + off] + src[i]; }""", "constant array", TABLE + SRC),
    "program_scope_vector_table_without_extent": ("""
        constant float2 pairs[] = {float2(1.0f, 2.0f), float2(3.0f, 4.0f)};
        kernel void k(SIGNATURE) { p[i] = pairs[i / 2 + off * 2][i % 2]; }""", "constant array", SRC),
    "program_scope_2d_table": ("""
        constant float table[2][4] = {{1.5f, 2.5f, -3.0f, 4.0f}, {10.0f, 20.0f, 30.0f, 40.0f}};
        kernel void k(SIGNATURE) { p[i] = table[1][i + off] + table[0][i]; }""", "constant array",
        TABLE + np.array([10, 20, 30, 40], np.float32)),
    "program_scope_struct_table": ("""
        struct Pair { float a; float b; };
        constant Pair table[4] = {{1.0f, 2.0f}, {3.0f, 4.0f}, {5.0f, 6.0f}, {7.0f, 8.0f}};
        kernel void k(SIGNATURE) { p[i] = table[i + off].a * table[i].b; }""", "constant array",
        np.array([2, 12, 30, 56], np.float32)),
    "program_scope_constexpr_table": ("""
        constant constexpr const float table[4] = {1.5f, 2.5f, -3.0f, 4.0f};
        static_assert(table[1] == 2.5f, "a constexpr table's elements stay constant expressions");
        kernel void k(SIGNATURE) { p[i] = table[i + off]; }""", "constant array", TABLE),
    "program_scope_tables_in_one_statement": ("""
        constant float ta[2] = {10.0f, 20.0f}, tb[4] = {1.5f, 2.5f, -3.0f, 4.0f};
        kernel void k(SIGNATURE) { p[i] = tb[i + off] + ta[i % 2]; }""", "constant array",
        TABLE + np.array([10, 20, 10, 20], np.float32)),
    # 3: constant arrays in a function
    "private_arrays_in_one_statement": ("""
        kernel void k(SIGNATURE) {
            float a[4] = {1.5f, 2.5f, -3.0f, 4.0f}, s = 0.0f, b[4];
            for (int j = 0; j < 4; ++j) b[j] = src[j];
            s = a[i] + b[i + off];
            p[i] = s;
        }""", "private array", TABLE + SRC),
    "local_constexpr_constant_table": ("""
        kernel void k(SIGNATURE) {
            constexpr constant float w[4] = {1.5f, 2.5f, -3.0f, 4.0f};
            p[i] = w[i + off] * src[i];
        }""", "constant array", TABLE * SRC),
    "local_static_table": ("""
        float weight(int j) {
            static constexpr constant float w[4] = {1.5f, 2.5f, -3.0f, 4.0f};
            return w[j];
        }
        kernel void k(SIGNATURE) { p[i] = weight(int(i) + off); }""", "constant array", TABLE),
    "local_const_table": ("""
        kernel void k(SIGNATURE) {
            const float w[] = {1.5f, 2.5f, -3.0f, 4.0f};
            p[i] = w[i + off];
        }""", "private array", TABLE),
    # 1: `thread T*` parameters of helper functions
    "write_through_thread_parameter": ("""
        void put(thread float* t, int j, float v) { t[j] = v; }
        kernel void k(SIGNATURE) {
            float t[4] = {0.0f, 0.0f, 0.0f, 0.0f};
            put(t, int(i) + off, src[i]);
            p[i] = t[i];
        }""", "private array", SRC),
    "read_through_thread_parameter_with_offset": ("""
        float get(thread const float* t, int j) { return t[j]; }
        kernel void k(SIGNATURE) {
            float t[4] = {1.5f, 2.5f, -3.0f, 4.0f};
            p[i] = get(t + 1, int(i) + off - 1);
        }""", "private array", TABLE),
    "thread_parameter_of_a_class_template_member": ("""
        template <typename T> struct Acc {
            T sum(thread const T* v, int n) const { T s = 0; for (int j = 0; j < n; ++j) s += v[j]; return s; }
        };
        kernel void k(SIGNATURE) {
            float t[4] = {1.5f, 2.5f, -3.0f, 4.0f};
            Acc<float> a;
            p[i] = a.sum(t, int(i) + 1 + off);
        }""", "private array", np.cumsum(TABLE)),
    "array_reference_parameter": ("""
        void put(thread float (&t)[4], int j, float v) { t[j] = v; }
        kernel void k(SIGNATURE) {
            float t[4] = {0.0f, 0.0f, 0.0f, 0.0f};
            put(t, int(i) + off, src[i]);
            p[i] = t[i];
        }""", "private array", SRC),
    "array_reference_parameter_of_a_class_template": ("""
        template <typename T, short N> struct Rows {  // MLX's sort: a class template's extent
            static T at(thread const T (&v)[N], int j) { return v[j]; }
        };
        kernel void k(SIGNATURE) {
            float t[4] = {1.5f, 2.5f, -3.0f, 4.0f};
            p[i] = Rows<float, 4>::at(t, int(i) + off);
        }""", "private array", TABLE),
    "thread_parameter_to_an_atomic": ("""
        template <typename T> bool swap_in(device atomic<T>* a, thread T* expected, T v) {  // MLX's atomics
            return atomic_compare_exchange_weak_explicit(a, expected, v, memory_order_relaxed, memory_order_relaxed);
        }
        kernel void k(SIGNATURE, device atomic_int* cell [[buffer(3)]]) {
            int seen[4] = {0, 0, 0, 0};
            seen[i] = atomic_load_explicit(cell, memory_order_relaxed) + 1;  // never matches: seen[i] gets the value
            swap_in(cell, seen + i + off, 5);
            p[i] = float(seen[i]) + src[i];
        }""", "private array", SRC),
    "template_thread_parameter": ("""
        template <typename T> T get(thread const T* t, int j) { return t[j]; }
        kernel void k(SIGNATURE) {
            float t[4] = {1.5f, 2.5f, -3.0f, 4.0f};
            p[i] = get(t, int(i) + off);
        }""", "private array", TABLE),
    "template_thread_parameter_write_with_offset": ("""
        template <typename T> void put(thread T* t, int j, T v) { t[j] = v; }
        kernel void k(SIGNATURE) {
            float t[4] = {0.0f, 0.0f, 0.0f, 0.0f};
            float scalar = 0.0f;
            put(&scalar, 0, 1.0f);
            put(t + 1, int(i) + off - 1, src[i] * scalar);
            p[i] = t[i];
        }""", "private array", SRC),
    "template_const_device_parameter": ("""
        template <typename T> T twice(const device T* q, int j) { return q[j] * 2.0f; }
        kernel void k(SIGNATURE) {
            p[i] = src[i];
            p[i] = twice(p, int(i) + off);
        }""", "argument 'p'", SRC * 2),
    "template_threadgroup_parameter": ("""
        template <typename T> T pick(threadgroup const T* q, int j) { return q[j]; }
        kernel void k(SIGNATURE, uint l [[thread_position_in_threadgroup]]) {
            threadgroup float tg[4];
            tg[l] = src[i];
            threadgroup_barrier(mem_flags::mem_threadgroup);
            p[i] = pick(tg, int(l) + off * 4);
        }""", "threadgroup array", SRC),
    "threadgroup_arrays_in_one_statement": ("""
        kernel void k(SIGNATURE, uint l [[thread_position_in_threadgroup]]) {
            threadgroup float a[4], b[4];
            a[l] = src[i];
            b[l] = 2.0f * src[i];
            threadgroup_barrier(mem_flags::mem_threadgroup);
            p[i] = a[l] + b[l + off * 4];
        }""", "threadgroup array", SRC * 3),
    # 4: a pointer type as a function template's explicit argument
    "explicit_device_pointer_template_argument": ("""
        template <typename P> float get(P q, int j) { return q[j]; }
        kernel void k(SIGNATURE) { p[i] = get<const device float*>(src, int(i) + off) * 3.0f; }""",
        "argument 'src'", SRC * 3),
    "explicit_thread_pointer_template_argument": ("""
        template <typename P, typename T> void put(P q, int j, T v) { q[j] = v; }
        kernel void k(SIGNATURE) {
            float t[4] = {0.0f, 0.0f, 0.0f, 0.0f};
            put<thread float*, float>(t, int(i) + off, src[i] + 1.0f);
            p[i] = t[i];
        }""", "private array", SRC + 1),
}


def source(name: str) -> str:
    return HEADER + textwrap.dedent(CASES[name][0]).replace("SIGNATURE", SIGNATURE)


def call(lib, src: str, off: int) -> np.ndarray:
    p = np.zeros(4, np.float32)
    cell = [np.zeros(1, np.int32)] if "buffer(3)" in src else []  # the atomic case's
    lib.k(4, p, SRC, np.int32(off), *cell)
    return p


CHILD = """
import sys, pickle, json
import numpy as np, metalcall as mc
src, = pickle.loads(bytes.fromhex(sys.argv[1]))
def cell():  # the atomic case's buffer 3, fresh for each call
    return [np.zeros(1, np.int32)] if "buffer(3)" in src else []
lib = mc.Device("cpu", checked=True).compile(src)
SRC = np.array([1.0, 2.0, 3.0, 4.0], np.float32)
result = {}
try:
    p = np.zeros(4, np.float32)
    lib.k(4, p, SRC, np.int32(1), *cell())
    result["error"] = None
except mc.ExecutionError as e:
    result["error"] = str(e)
p = np.zeros(4, np.float32)
lib.k(4, p, SRC, np.int32(0), *cell())  # the device is still usable
result["after"] = p.tolist()
print(json.dumps(result))
"""


@pytest.mark.parametrize("name", sorted(CASES))
def test_out_of_bounds_raises_and_the_device_stays_usable(name):
    _, what, expected = CASES[name]
    job = pickle.dumps((source(name),)).hex()
    proc = subprocess.run([sys.executable, "-c", CHILD, job], capture_output=True, text=True, timeout=120)
    how = f"killed by signal {-proc.returncode}" if proc.returncode < 0 else f"exit status {proc.returncode}"
    assert proc.returncode == 0, f"the child died ({how}):\n{proc.stderr[-3000:]}"
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    error = result["error"]
    assert error is not None, "the out-of-bounds access went through unreported"
    assert "kernel 'k'" in error and what in error and "out of bounds" in error, error
    np.testing.assert_array_equal(np.array(result["after"], np.float32), expected)


@pytest.mark.parametrize("checked", [False, True], ids=["cpu", "cpu-checked"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_in_bounds_twin_gives_exact_results(name, checked):
    _, _, expected = CASES[name]
    src = source(name)
    lib = mc.Device("cpu", checked=checked).compile(src)
    np.testing.assert_array_equal(call(lib, src, 0), expected)


def test_string_initialised_constant_array():
    src = HEADER + """
    constant char word[6] = "hello";
    kernel void k(device float* p [[buffer(0)]], constant int& off [[buffer(1)]], uint i [[thread_position_in_grid]]) {
        p[i] = float(word[i + off]);
    }"""
    for checked in (False, True):
        p = np.zeros(6, np.float32)
        mc.Device("cpu", checked=checked).compile(src).k(6, p, np.int32(0))
        assert p.tolist() == [float(c) for c in b"hello\0"]


REFUSED = {
    # Rows not spelled out and no first extent.
    "table": ("""
        constant float table[][2] = {1.0f, 2.0f, 3.0f, 4.0f};
        kernel void k(device float* p [[buffer(0)]], uint i [[thread_position_in_grid]]) { p[i] = table[i / 2][i % 2]; }""",
        "give its extents"),
    # Declared with a pointer to an array in one statement (not split into one statement
    # each; a pointer or reference, `float a[4], *q, &r = a[0];`, is: test_checked_addresses.py).
    "a": ("""
        kernel void k(device float* p [[buffer(0)]], uint i [[thread_position_in_grid]]) {
            float a[4] = {1.0f, 2.0f, 3.0f, 4.0f}, (*q)[4] = &a;
            p[i] = (*q)[i];
        }""", "declare it in a statement of its own"),
    # The same after a scalar (`float x, t[4], *q;` is split).
    "t": ("""
        kernel void k(device float* p [[buffer(0)]], uint i [[thread_position_in_grid]]) {
            float x = 1.0f, t[4] = {0.0f, 1.0f, 2.0f, 3.0f}, (*q)[4] = &t;
            p[i] = (*q)[i] + x;
        }""", "declare it in a statement of its own"),
}


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_an_array_checked_mode_cannot_check_is_refused(name):
    # Refused in checked mode (never silently unchecked), naming the array; the plain device compiles it.
    src, why = REFUSED[name]
    src = HEADER + textwrap.dedent(src)
    p = np.zeros(4, np.float32)
    mc.Device("cpu").compile(src).k(4, p)
    assert p.tolist() == [1, 2, 3, 4]
    with pytest.raises(mc.CompileError, match=f"checked mode cannot bounds-check the array '{name}'") as e:
        mc.Device("cpu", checked=True).compile(src)
    assert why in str(e.value)
