"""Checked mode's former gaps (issue P1.5, "Checked mode"): out-of-bounds accesses that
went through silently or crashed, and valid MSL that did not compile on
Device("cpu", checked=True). Each out-of-bounds case comes with its in-bounds twin,
which must run and give the right result. The dangerous calls (those that used to
write past memory or crash) run in a subprocess, so a regression fails the test
instead of killing pytest.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest

import metalcall as mc

pytestmark = pytest.mark.skipif("cpu" not in mc.backends(), reason="checked mode is a feature of the cpu backend")

HEADER = "#include <metal_stdlib>\nusing namespace metal;\n"

# name → (kernel source, element type of buffer 0, the part of the message that names what faulted)
OUT_OF_BOUNDS = {
    "float4_cast": ("""
        kernel void k(device float* p [[buffer(0)]], constant int& off [[buffer(1)]], uint i [[thread_position_in_grid]]) {
            ((device float4*)p)[i + off].x = 1.0f;
        }""", np.float32, "argument 'p'"),
    "float4_component": ("""
        kernel void k(device float4* p [[buffer(0)]], constant int& off [[buffer(1)]], uint i [[thread_position_in_grid]]) {
            p[i + off].y = 2.0f;
        }""", np.float32, "argument 'p'"),
    "float4_swizzle": ("""
        kernel void k(device float4* p [[buffer(0)]], constant int& off [[buffer(1)]], uint i [[thread_position_in_grid]]) {
            p[i + off].zw = float2(2.0f);
        }""", np.float32, "argument 'p'"),
    "vector_index": ("""
        kernel void k(device float* p [[buffer(0)]], constant int& off [[buffer(1)]], uint i [[thread_position_in_grid]]) {
            float4 v = float4(1.0f);
            v[off + 3] = 5.0f;
            p[i] = v.w;
        }""", np.float32, "vector component"),
    "struct_array_member": ("""
        struct S { float a[4]; float b; };
        kernel void k(device S* s [[buffer(0)]], constant int& off [[buffer(1)]], uint i [[thread_position_in_grid]]) {
            s[0].a[off + 3] = 3.0f;
        }""", np.float32, "struct array member"),
    "metal_array": ("""
        kernel void k(device float* p [[buffer(0)]], constant int& off [[buffer(1)]], uint i [[thread_position_in_grid]]) {
            array<float, 4> a = {0, 1, 2, 3};
            a[off + 3] = 7.0f;
            p[i] = a[3];
        }""", np.float32, "metal::array"),
    "matrix_column": ("""
        kernel void k(device float* p [[buffer(0)]], constant int& off [[buffer(1)]], uint i [[thread_position_in_grid]]) {
            float4x4 m(1.0f);
            m[off + 3] = float4(7.0f);
            p[i] = m[3][3];
        }""", np.float32, "matrix column"),
    "private_array": ("""
        kernel void k(device float* p [[buffer(0)]], constant int& off [[buffer(1)]], uint i [[thread_position_in_grid]]) {
            float t[8];
            for (int j = 0; j < 8; ++j) t[j] = float(j);
            t[off + 7] = 7.0f;
            p[i] = t[7];
        }""", np.float32, "private array"),
    "private_2d_array": ("""
        kernel void k(device float* p [[buffer(0)]], constant int& off [[buffer(1)]], uint i [[thread_position_in_grid]]) {
            float t[2][4];
            for (int j = 0; j < 8; ++j) t[j / 4][j % 4] = float(j);
            t[1][off + 3] = 7.0f;
            p[i] = t[1][3];
        }""", np.float32, "private array"),
    "thread_pointer_to_private_array": ("""
        kernel void k(device float* p [[buffer(0)]], constant int& off [[buffer(1)]], uint i [[thread_position_in_grid]]) {
            float t[4] = {1, 2, 3, 4};
            thread float* q = t;
            p[i] = q[off + 3];
        }""", np.float32, "private array"),
    "constant_reference_arithmetic": ("""
        kernel void k(device float* p [[buffer(0)]], constant int& off [[buffer(1)]], uint i [[thread_position_in_grid]]) {
            p[i] = float((&off)[off]);
        }""", np.float32, "argument 'off'"),
    "raw_pointer_into_buffer": ("""
        kernel void k(device float* p [[buffer(0)]], constant int& off [[buffer(1)]], uint i [[thread_position_in_grid]]) {
            device float* q = &p[i];
            q[off] = 1.0f;
        }""", np.float32, "argument 'p'"),
    "pointer_cast_to_uint": ("""
        kernel void k(device float* p [[buffer(0)]], constant int& off [[buffer(1)]], uint i [[thread_position_in_grid]]) {
            device uint* u = reinterpret_cast<device uint*>(p);
            u[i + off] = 0x3f800000u;
        }""", np.float32, "argument 'p'"),
    "atomic_through_pointer": ("""
        kernel void k(device atomic_int* p [[buffer(0)]], constant int& off [[buffer(1)]], uint i [[thread_position_in_grid]]) {
            atomic_fetch_add_explicit(p + i + off, 1, memory_order_relaxed);
        }""", np.int32, "argument 'p'"),
}

CHILD = """
import sys, pickle
import numpy as np, metalcall as mc
src, dtype, off = pickle.loads(bytes.fromhex(sys.argv[1]))
lib = mc.Device("cpu", checked=True).compile(src)
buf = np.zeros(16, dtype)
try:
    lib.k(4, buf, np.int32(off))
    print("OK", buf.tolist())
except mc.ExecutionError as e:
    print("ExecutionError", e)
"""


def run_case(src: str, dtype, off: int) -> str:
    import pickle

    job = pickle.dumps((textwrap.dedent(HEADER + src), dtype, off)).hex()
    proc = subprocess.run([sys.executable, "-c", CHILD, job], capture_output=True, text=True, timeout=120)
    how = f"killed by signal {-proc.returncode}" if proc.returncode < 0 else f"exit status {proc.returncode}"
    assert proc.returncode == 0, f"the child died ({how}):\n{proc.stderr[-3000:]}"
    return proc.stdout.strip()


@pytest.mark.parametrize("name", sorted(OUT_OF_BOUNDS))
def test_out_of_bounds_raises(name):
    src, dtype, what = OUT_OF_BOUNDS[name]
    # 4 threads; off = 1 steps one element past the last (off = 0 stays inside).
    # 16 elements (4 float4s): i + 13 (or &p[i] + 13) reaches element 16 for thread 3.
    off = 13 if name in ("raw_pointer_into_buffer", "pointer_cast_to_uint", "atomic_through_pointer") else 1
    out = run_case(src, dtype, off)
    assert out.startswith("ExecutionError"), out
    assert "kernel 'k'" in out and what in out and "out of bounds" in out, out


@pytest.mark.parametrize("name", sorted(OUT_OF_BOUNDS))
def test_in_bounds_twin_runs(name):
    src, dtype, _ = OUT_OF_BOUNDS[name]
    out = run_case(src, dtype, 0)
    assert out.startswith("OK"), out


# ---- valid MSL that checked mode did not compile ----

VALID_SRC = HEADER + """
kernel void atomics_by_pointer(device atomic_int* p [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    atomic_fetch_add_explicit(p + (i % 4), 1, memory_order_relaxed);
    atomic_fetch_max_explicit(&p[4], int(i), memory_order_relaxed);
    int expected = 0;
    atomic_compare_exchange_weak_explicit(p + 5, &expected, 1, memory_order_relaxed, memory_order_relaxed);
    atomic_store_explicit(p + 6, 42, memory_order_relaxed);
    if (atomic_load_explicit(p + 6, memory_order_relaxed) != 42) atomic_store_explicit(p + 7, -1, memory_order_relaxed);
}

kernel void volatile_pointer(volatile device float* p [[buffer(0)]], device volatile float* q [[buffer(1)]],
                             uint i [[thread_position_in_grid]]) {
    p[i] = q[i] + 1.0f;
}

kernel void pointer_casts(device float* p [[buffer(0)]], device uint* bits [[buffer(1)]],
                          device uchar* bytes [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    device uint* u = (device uint*)p;
    bits[i] = u[i];
    device char* c = (device char*)p;
    bytes[i] = uchar(c[4 * i + 3]);
    device float4* v = reinterpret_cast<device float4*>(p);
    if (i == 0) bits[4] = as_type<uint>(v[0].w);
    const device float* cp = p;
    bits[5] = as_type<uint>(cp[1]);
}

struct Pair { int a[2]; float w; };
kernel void arrays(device float* out [[buffer(0)]], constant Pair& pair [[buffer(1)]],
                   uint i [[thread_position_in_grid]]) {
    float t[4] = {1.0f, 2.0f, 3.0f, 4.0f};
    float s = 0.0f;
    for (float x : t) s += x;
    thread float* q = t;
    array<int, 3> arr = {1, 2, 3};
    float2x2 m(float2(1.0f, 2.0f), float2(3.0f, 4.0f));
    out[i] = s + q[1] + float(arr[2]) + m[1][0] + float(pair.a[1]) + pair.w;
}
"""


THREAD_POINTERS_SRC = HEADER + """
void set_two(thread float* p, float v) { p[0] = v; p[1] = v + 1; }
template <typename T> void swap_values(thread T* a, thread T* b) { T t = *a; *a = *b; *b = t; }
float first(thread const float* p) { return *p; }
kernel void k(device float* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    float t[4] = {1, 2, 3, 4};
    set_two(t + 1, 9.0f);
    float x = 1.0f, y = 2.0f;
    swap_values(&x, &y);
    float ip;
    float fr = modf(2.5f, ip);
    thread float* q = &t[2];
    thread float* e = t + 4;
    float s = 0;
    for (thread float* it = t; it != e; ++it) s += *it;
    out[i] = t[1] + t[2] + x * 10 + fr + ip + *q + first(t) + s + (q > t ? 100 : 0);
}
"""


def test_thread_pointers_compile_and_match_unchecked():
    results = []
    for checked in (False, True):
        out = np.zeros(2, np.float32)
        mc.Device("cpu", checked=checked).compile(THREAD_POINTERS_SRC).k(2, out)
        results.append(out.tolist())
    assert results[0] == results[1] == [9 + 10 + 20 + 0.5 + 2 + 10 + 1 + 24 + 100] * 2


POINTER_COMPARISONS_SRC = HEADER + """
float get(device float* p, uint i) { return p != nullptr ? p[i] : 0.0f; }
kernel void k(device float* out [[buffer(0)]], const device float* in [[buffer(1)]], uint i [[thread_position_in_grid]]) {
    device float* q = nullptr;
    if (q == nullptr && in != nullptr && !(in == 0)) out[i] = get(out, i) + in[i];
    const device float* e = in + 2;
    if (in < e && e > in && in <= e && e >= in) out[i] += 1.0f;
    out[i] += float(e - in);
}
"""


def test_pointer_comparisons_compile_and_match_unchecked():
    results = []
    for checked in (False, True):
        out = np.zeros(2, np.float32)
        mc.Device("cpu", checked=checked).compile(POINTER_COMPARISONS_SRC).k(2, out, np.ones(2, np.float32))
        results.append(out.tolist())
    assert results[0] == results[1] == [4.0, 4.0]


@pytest.fixture(scope="module")
def valid_lib():
    return mc.Device("cpu", checked=True).compile(VALID_SRC)


def test_atomics_through_pointer_parameters(valid_lib):
    p = np.zeros(8, np.int32)
    valid_lib.atomics_by_pointer(64, p)
    assert p.tolist() == [16, 16, 16, 16, 63, 1, 42, 0]


def test_volatile_device_pointers(valid_lib):
    p = np.zeros(4, np.float32)
    q = np.arange(4, dtype=np.float32)
    valid_lib.volatile_pointer(4, p, q)
    assert p.tolist() == [1, 2, 3, 4]


def test_pointer_casts(valid_lib):
    p = np.array([1.0, 2.0, -3.0, 4.0], np.float32)
    bits = np.zeros(6, np.uint32)
    out_bytes = np.zeros(4, np.uint8)
    valid_lib.pointer_casts(4, p, bits, out_bytes)
    raw = p.view(np.uint32)
    assert bits[:4].tolist() == raw.tolist()
    assert out_bytes.tolist() == p.view(np.uint8).reshape(4, 4)[:, 3].tolist()
    assert bits[4] == raw[3] and bits[5] == raw[1]


def test_private_arrays_struct_members_metal_array_matrix(valid_lib):
    out = np.zeros(2, np.float32)
    pair = np.zeros(1, dtype=[("a", np.int32, 2), ("w", np.float32)])
    pair["a"] = [5, 6]
    pair["w"] = 0.5
    valid_lib.arrays(2, out, pair.view(np.uint8))
    assert out.tolist() == [10 + 2 + 3 + 3 + 6 + 0.5] * 2


def test_checked_and_unchecked_give_the_same_results(valid_lib):
    plain = mc.Device("cpu").compile(VALID_SRC)
    a = np.zeros(2, np.float32)
    b = np.zeros(2, np.float32)
    pair = np.zeros(1, dtype=[("a", np.int32, 2), ("w", np.float32)]).view(np.uint8)
    valid_lib.arrays(2, a, pair)
    plain.arrays(2, b, pair)
    assert a.tolist() == b.tolist()
