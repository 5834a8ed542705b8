"""Checked mode's address gaps (issue P1.5, point 4): void pointer parameters, raw addresses
of private, threadgroup and constant memory (`&t[i]`, `&t[i][j]`, `&s.a[i]`, `&x`, `&(x)`,
`*&x`, `&f()[i]`), volatile memory in helper functions and arrays, statements declaring
arrays beside pointers and references, template `thread T*` parameters beside overloads,
returned thread pointers and `c ? p : 0`. Each case is one kernel with an offset
argument: off = 1 makes one access go one element past the memory (checked mode must raise
ExecutionError naming the kernel, what faulted and the index), off = 0 stays inside (the
plain and the checked CPU device must both give the NumPy result). The out-of-bounds calls
run in a subprocess, so a regression that writes past memory fails the test instead of
killing pytest.
"""

from __future__ import annotations

import pickle
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import metalcall as mc

pytestmark = pytest.mark.skipif("cpu" not in mc.backends(), reason="checked mode is a feature of the cpu backend")

HEADER = "#include <metal_stdlib>\nusing namespace metal;\n"

# Every kernel: k(buffer(0): 16 elements of dtype, constant int& off [[buffer(1)]],
# optionally buffer(2): 16 more), run over 4 threads (one threadgroup of 4).
# name → (source, dtype, number of extra input buffers, what the fault names,
#         expected(out, inputs) → out after the in-bounds call, from the initial buffers)
CASES = {
    # ---- void pointers: byte bounds, a cast gives a checked T pointer ----
    "void_pointer_c_cast": ("""
        kernel void k(device void* p [[buffer(0)]], constant int& off [[buffer(1)]], uint i [[thread_position_in_grid]]) {
            ((device float*)p)[i + 12 + off] = 1.0f;
        }""", np.float32, 0, "argument 'p'", lambda o, x: np.concatenate([o[:12], np.ones(4, np.float32)])),
    "const_void_static_cast": ("""
        kernel void k(device float* out [[buffer(0)]], constant int& off [[buffer(1)]],
                      const device void* in [[buffer(2)]], uint i [[thread_position_in_grid]]) {
            const device float* f = static_cast<const device float*>(in);
            out[i] = f[i + 12 + off];
        }""", np.float32, 1, "argument 'in'", lambda o, x: np.concatenate([x[0][12:], o[4:]])),
    "constant_void_reinterpret_cast": ("""
        kernel void k(device float* out [[buffer(0)]], constant int& off [[buffer(1)]],
                      constant void* in [[buffer(2)]], uint i [[thread_position_in_grid]]) {
            out[i] = reinterpret_cast<constant float4*>(in)[i + off].w;
        }""", np.float32, 1, "argument 'in'", lambda o, x: np.concatenate([x[0][3::4], o[4:]])),
    "void_byte_offset_rows": ("""
        kernel void k(device float* out [[buffer(0)]], constant int& off [[buffer(1)]],
                      device const void* src [[buffer(2)]], uint i [[thread_position_in_grid]]) {
            device const float* row = (device const float*)((device const char*)src + i * 16);
            out[i] = row[0] + row[3 + off];
        }""", np.float32, 1, "argument 'src'", lambda o, x: np.concatenate([x[0][0::4] + x[0][3::4], o[4:]])),
    "void_pointer_helper_and_local": ("""
        float get(const device void* p, int j) { return ((const device float*)p)[j]; }
        kernel void k(device float* out [[buffer(0)]], constant int& off [[buffer(1)]],
                      const device void* in [[buffer(2)]], uint i [[thread_position_in_grid]]) {
            device void* v = out;
            ((device float*)v)[i] = get(in, int(i) + 12 + off);
        }""", np.float32, 1, "argument 'in'", lambda o, x: np.concatenate([x[0][12:], o[4:]])),
    # ---- raw addresses of private, threadgroup and constant memory ----
    "address_of_private_element": ("""
        kernel void k(device float* out [[buffer(0)]], constant int& off [[buffer(1)]], uint i [[thread_position_in_grid]]) {
            float t[8];
            for (int j = 0; j < 8; ++j) t[j] = float(j + i);
            thread float* q = &t[2];
            out[i] = q[5 + off];
        }""", np.float32, 0, "private array", lambda o, x: np.concatenate([np.arange(4, dtype=np.float32) + 7, o[4:]])),
    "address_of_private_element_arithmetic": ("""
        kernel void k(device float* out [[buffer(0)]], constant int& off [[buffer(1)]], uint i [[thread_position_in_grid]]) {
            int t[4] = {1, 2, 3, 4};
            thread int* q = &t[1] + 1;
            q += off;
            *(q + 1) = 9;
            out[i] = float(t[3] + t[0]);
        }""", np.float32, 0, "private array", lambda o, x: np.concatenate([np.full(4, 10, np.float32), o[4:]])),
    "address_of_2d_element_walks_the_array": ("""
        kernel void k(device float* out [[buffer(0)]], constant int& off [[buffer(1)]], uint i [[thread_position_in_grid]]) {
            float t[2][4];
            for (int j = 0; j < 8; ++j) t[j / 4][j % 4] = float(10 * j);
            thread float* q = &t[0][0];
            thread float* r = &t[1][1];
            out[i] = q[7 + off] + r[0];
        }""", np.float32, 0, "private array", lambda o, x: np.concatenate([np.full(4, 120, np.float32), o[4:]])),
    "address_of_threadgroup_element": ("""
        kernel void k(device float* out [[buffer(0)]], constant int& off [[buffer(1)]], uint i [[thread_position_in_grid]],
                      uint l [[thread_position_in_threadgroup]]) {
            threadgroup float tg[8];
            tg[l] = float(l);
            tg[l + 4] = float(l + 4);
            threadgroup_barrier(mem_flags::mem_threadgroup);
            threadgroup float* q = &tg[4];
            out[i] = q[3 + off];
        }""", np.float32, 0, "threadgroup array", lambda o, x: np.concatenate([np.full(4, 7, np.float32), o[4:]])),
    "address_of_constant_table_element": ("""
        constant float table[4] = {1.0f, 2.0f, 3.0f, 4.0f};
        kernel void k(device float* out [[buffer(0)]], constant int& off [[buffer(1)]], uint i [[thread_position_in_grid]]) {
            constant float* q = &table[1];
            out[i] = q[2 + off];
        }""", np.float32, 0, "constant array", lambda o, x: np.concatenate([np.full(4, 4, np.float32), o[4:]])),
    "address_of_struct_member_element": ("""
        struct S { float a[4]; float b; };
        kernel void k(device float* out [[buffer(0)]], constant int& off [[buffer(1)]], uint i [[thread_position_in_grid]]) {
            S s;
            for (int j = 0; j < 4; ++j) s.a[j] = float(j);
            s.b = 100.0f;
            thread float* q = &s.a[1];
            out[i] = q[2 + off];
        }""", np.float32, 0, "struct array member", lambda o, x: np.concatenate([np.full(4, 3, np.float32), o[4:]])),
    "address_of_scalar": ("""
        kernel void k(device float* out [[buffer(0)]], constant int& off [[buffer(1)]], uint i [[thread_position_in_grid]]) {
            float x = float(i) + 0.5f;
            thread float* q = &x;
            out[i] = q[off];
        }""", np.float32, 0, "variable", lambda o, x: np.concatenate([np.arange(4, dtype=np.float32) + 0.5, o[4:]])),
    "address_of_scalar_to_helper": ("""
        void set(thread float* p, int j, float v) { p[j] = v; }
        kernel void k(device float* out [[buffer(0)]], constant int& off [[buffer(1)]], uint i [[thread_position_in_grid]]) {
            float x = 0.0f;
            set(&x, off, float(i) * 2.0f);
            out[i] = x;
        }""", np.float32, 0, "variable", lambda o, x: np.concatenate([np.arange(4, dtype=np.float32) * 2, o[4:]])),
    "address_of_element_to_template_helper": ("""
        template <typename T> void bump(thread T* p, int j) { p[j] += T(1); }
        kernel void k(device int* out [[buffer(0)]], constant int& off [[buffer(1)]], uint i [[thread_position_in_grid]]) {
            int t[4] = {1, 2, 3, 4};
            bump(&t[3], off);
            out[i] = t[3] + int(i);
        }""", np.int32, 0, "private array", lambda o, x: np.concatenate([np.arange(4, dtype=np.int32) + 5, o[4:]])),
    "address_of_member_array_of_argument": ("""
        struct Row { float v[4]; };
        kernel void k(device Row* rows [[buffer(0)]], constant int& off [[buffer(1)]], uint i [[thread_position_in_grid]]) {
            device float* q = &rows[i].v[1];
            q[2 + off] = 5.0f;
        }""", np.float32, 0, "struct array member", lambda o, x: np.where(np.arange(16) % 4 == 3, 5, o).astype(np.float32)),
    "address_of_vector_component": ("""
        kernel void k(device float* out [[buffer(0)]], constant int& off [[buffer(1)]], uint i [[thread_position_in_grid]]) {
            float4 v = float4(1.0f, 2.0f, 3.0f, float(i));
            thread float* q = (thread float*)&v + 1;  // `&v[1]` is no MSL: a component has no address
            out[i] = q[2 + off];
        }""", np.float32, 0, "variable", lambda o, x: np.concatenate([np.arange(4, dtype=np.float32), o[4:]])),
    "address_of_metal_array_element": ("""
        kernel void k(device float* out [[buffer(0)]], constant int& off [[buffer(1)]], uint i [[thread_position_in_grid]]) {
            array<float, 4> a = {1.0f, 2.0f, 3.0f, 4.0f};
            thread float* q = &a[2];
            out[i] = q[1 + off] + float(i);
        }""", np.float32, 0, "metal::array", lambda o, x: np.concatenate([np.arange(4, dtype=np.float32) + 4, o[4:]])),
    "address_of_matrix_column": ("""
        kernel void k(device float* out [[buffer(0)]], constant int& off [[buffer(1)]], uint i [[thread_position_in_grid]]) {
            float2x2 m(float2(1.0f, 2.0f), float2(3.0f, 4.0f));
            thread float2* c = &m[0];
            out[i] = c[1 + off].y;
        }""", np.float32, 0, "matrix column", lambda o, x: np.concatenate([np.full(4, 4, np.float32), o[4:]])),
    "address_of_vector_in_private_array": ("""
        kernel void k(device float* out [[buffer(0)]], constant int& off [[buffer(1)]], uint i [[thread_position_in_grid]]) {
            float4 rows[2] = {float4(1.0f), float4(5.0f, 6.0f, 7.0f, 8.0f)};
            thread float* q = (thread float*)&rows[1] + 2;
            out[i] = q[1 + off];
        }""", np.float32, 0, "private array", lambda o, x: np.concatenate([np.full(4, 8, np.float32), o[4:]])),
    "array_passed_to_deduced_parameter": ("""
        template <typename P> void set(P p, int j, float v) { p[j] = v; }
        kernel void k(device float* out [[buffer(0)]], constant int& off [[buffer(1)]], uint i [[thread_position_in_grid]]) {
            float t[4] = {1.0f, 2.0f, 3.0f, 4.0f};
            auto twice = [](auto p, int j) { p[j] *= 2.0f; };
            set(t, 3 + off, float(i));
            twice(t, 0);
            out[i] = t[0] + t[3];
        }""", np.float32, 0, "private array", lambda o, x: np.concatenate([np.arange(4, dtype=np.float32) + 2, o[4:]])),
    "byte_view_of_scalar_through_thread_cast": ("""
        kernel void k(device uint* out [[buffer(0)]], constant int& off [[buffer(1)]], uint i [[thread_position_in_grid]]) {
            uint qh = 0x04030201u;
            thread const uint8_t* qh8 = (thread const uint8_t*)&qh;
            out[i] = uint(qh8[3 + off]) + i;
        }""", np.uint32, 0, "variable", lambda o, x: np.concatenate([np.arange(4, dtype=np.uint32) + 4, o[4:]])),
    "byte_view_of_private_array_through_cast": ("""
        kernel void k(device uint* out [[buffer(0)]], constant int& off [[buffer(1)]], uint i [[thread_position_in_grid]]) {
            uint16_t sc16[2] = {0x0201, 0x0403};
            const thread uchar* sc8 = reinterpret_cast<const thread uchar*>(sc16);
            out[i] = uint(sc8[3 + off]) + i;
        }""", np.uint32, 0, "private array", lambda o, x: np.concatenate([np.arange(4, dtype=np.uint32) + 4, o[4:]])),
    "auto_element_pointer_variables": ("""
        kernel void k(device float* out [[buffer(0)]], constant int& off [[buffer(1)]],
                      const constant float* in [[buffer(2)]], uint i [[thread_position_in_grid]]) {
            const constant auto* q = in + 12;
            float t[4] = {1.0f, 2.0f, 3.0f, 4.0f};
            thread auto* r = &t[2];
            out[i] = q[i + off] + r[1];
        }""", np.float32, 1, "argument 'in'", lambda o, x: np.concatenate([x[0][12:] + 4, o[4:]])),
    "array_parameter_with_deduced_element": ("""
        template <typename T, int TN> struct Loader {
            template <typename U = T>
            static void load(const device T* src, thread U dst[TN], int n) { for (int k = 0; k < n; k++) dst[k] = U(src[k]); }
        };
        kernel void k(device float* out [[buffer(0)]], constant int& off [[buffer(1)]],
                      const device float* in [[buffer(2)]], uint i [[thread_position_in_grid]]) {
            float inter[4];
            Loader<float, 4>::load(in, inter, 4 + off);
            out[i] = inter[0] + inter[3];
        }""", np.float32, 1, "private array", lambda o, x: np.concatenate([np.full(4, x[0][0] + x[0][3], np.float32), o[4:]])),
    # ---- volatile memory ----
    "volatile_device_helper": ("""
        void put(volatile device float* p, uint j, float v) { p[j] = v; }
        kernel void k(device float* out [[buffer(0)]], constant int& off [[buffer(1)]], uint i [[thread_position_in_grid]]) {
            put(out, i + 12 + off, 3.0f);
        }""", np.float32, 0, "argument 'out'", lambda o, x: np.concatenate([o[:12], np.full(4, 3, np.float32)])),
    "volatile_coherent_device_parameter": ("""
        kernel void k(volatile coherent(system) device float* p [[buffer(0)]], constant int& off [[buffer(1)]],
                      uint i [[thread_position_in_grid]]) {
            p[i + 12 + off] = 2.0f;
        }""", np.float32, 0, "argument 'p'", lambda o, x: np.concatenate([o[:12], np.full(4, 2, np.float32)])),
    "volatile_threadgroup_array_and_helper": ("""
        float get(volatile threadgroup float* p, uint j) { return p[j]; }
        kernel void k(device float* out [[buffer(0)]], constant int& off [[buffer(1)]], uint i [[thread_position_in_grid]],
                      uint l [[thread_position_in_threadgroup]]) {
            volatile threadgroup float tg[4];
            tg[l] = float(l) * 3.0f;
            threadgroup_barrier(mem_flags::mem_threadgroup);
            out[i] = get(tg, 3 + off);
        }""", np.float32, 0, "threadgroup array", lambda o, x: np.concatenate([np.full(4, 9, np.float32), o[4:]])),
    "threadgroup_volatile_pointer_parameter": ("""
        kernel void k(device float* out [[buffer(0)]], constant int& off [[buffer(1)]],
                      threadgroup volatile float* tg [[threadgroup(0)]], uint i [[thread_position_in_grid]],
                      uint l [[thread_position_in_threadgroup]]) {
            tg[l] = float(l) + 1.0f;
            threadgroup_barrier(mem_flags::mem_threadgroup);
            out[i] = tg[3 + off];
        }""", np.float32, 0, "threadgroup 'tg'", lambda o, x: np.concatenate([np.full(4, 4, np.float32), o[4:]])),
    "volatile_private_array": ("""
        kernel void k(device float* out [[buffer(0)]], constant int& off [[buffer(1)]], uint i [[thread_position_in_grid]]) {
            volatile float t[4] = {1.0f, 2.0f, 3.0f, 4.0f};
            thread volatile float* q = &t[1];
            out[i] = t[3 + off] + q[0];
        }""", np.float32, 0, "private array", lambda o, x: np.concatenate([np.full(4, 6, np.float32), o[4:]])),
    # ---- arrays after a non-array declarator, generic lambdas' pointer parameters ----
    "array_after_scalar_declarator": ("""
        kernel void k(device float* out [[buffer(0)]], constant int& off [[buffer(1)]], uint i [[thread_position_in_grid]]) {
            float x = 2.0f, t[4] = {1.0f, 2.0f, 3.0f, 4.0f}, y, u[2];
            y = 1.0f;
            u[0] = 5.0f;
            u[1] = 6.0f;
            out[i] = x + y + t[3 + off] + u[1];
        }""", np.float32, 0, "private array", lambda o, x: np.concatenate([np.full(4, 13, np.float32), o[4:]])),
    "array_after_pointer_declarator": ("""
        kernel void k(device float* out [[buffer(0)]], constant int& off [[buffer(1)]], uint i [[thread_position_in_grid]]) {
            float x = 3.0f;
            thread float *q = &x, t[4] = {1.0f, 2.0f, 3.0f, 4.0f};
            out[i] = *q + t[3 + off];
        }""", np.float32, 0, "private array", lambda o, x: np.concatenate([np.full(4, 7, np.float32), o[4:]])),
    "array_after_scalar_in_struct": ("""
        struct P { float w, a[4]; };
        kernel void k(device float* out [[buffer(0)]], constant int& off [[buffer(1)]], uint i [[thread_position_in_grid]]) {
            P p;
            p.w = 10.0f;
            for (int j = 0; j < 4; ++j) p.a[j] = float(j);
            out[i] = p.w + p.a[3 + off];
        }""", np.float32, 0, "struct array member", lambda o, x: np.concatenate([np.full(4, 13, np.float32), o[4:]])),
    "array_after_access_specifier": ("""
        class Acc {
        public:
            float a[4];
        private:
            int n[2];
        public:
            float get(int j) { n[1] = 1; return a[j] + float(n[1]); }
        };
        kernel void k(device float* out [[buffer(0)]], constant int& off [[buffer(1)]], uint i [[thread_position_in_grid]]) {
            Acc acc;
            for (int j = 0; j < 4; ++j) acc.a[j] = float(j + i);
            out[i] = acc.get(3 + off);
        }""", np.float32, 0, "struct array member", lambda o, x: np.concatenate([np.arange(4, dtype=np.float32) + 4, o[4:]])),
    "static_member_table_defined_outside_its_class": ("""
        template <int R> struct Tr {};
        template <> struct Tr<4> {
            static constant constexpr const float table[2][2] = {{1.0f, 2.0f}, {3.0f, 4.0f}};
        };
        constant constexpr const float Tr<4>::table[2][2];
        kernel void k(device float* out [[buffer(0)]], constant int& off [[buffer(1)]], uint i [[thread_position_in_grid]]) {
            out[i] = Tr<4>::table[1][1] + Tr<4>::table[0][1 + off];
        }""", np.float32, 0, "constant array", lambda o, x: np.concatenate([np.full(4, 6, np.float32), o[4:]])),
    # ---- statements with arrays and pointers, references, template arguments (one each) ----
    "array_then_pointer_declarator": ("""
        kernel void k(device float* out [[buffer(0)]], constant int& off [[buffer(1)]], uint i [[thread_position_in_grid]]) {
            float t[4] = {1.0f, 2.0f, 3.0f, 4.0f}, *q = nullptr, &r = t[0];
            out[i] = t[3 + off] + r + (q == nullptr ? 1.0f : 0.0f);
        }""", np.float32, 0, "private array", lambda o, x: np.concatenate([np.full(4, 6, np.float32), o[4:]])),
    "scalar_array_pointer_declarators": ("""
        kernel void k(device float* out [[buffer(0)]], constant int& off [[buffer(1)]], uint i [[thread_position_in_grid]]) {
            float x = 10.0f, t[4] = {1.0f, 2.0f, 3.0f, 4.0f}, *q = &x, *p[2] = {nullptr, nullptr};
            out[i] = *q + t[3 + off] + (p[1] == nullptr ? 1.0f : 0.0f);
        }""", np.float32, 0, "private array", lambda o, x: np.concatenate([np.full(4, 15, np.float32), o[4:]])),
    "thread_pointer_declarator_beside_array": ("""
        kernel void k(device float* out [[buffer(0)]], constant int& off [[buffer(1)]], uint i [[thread_position_in_grid]]) {
            thread float t[4] = {1.0f, 2.0f, 3.0f, 4.0f}, *q = &t[1], *const r = t, **pp = nullptr;
            out[i] = q[2 + off] + r[0] + (pp == nullptr ? 0.0f : 1.0f);
        }""", np.float32, 0, "private array", lambda o, x: np.concatenate([np.full(4, 5, np.float32), o[4:]])),
    "template_arguments_in_declarator_initializer": ("""
        kernel void k(device float* out [[buffer(0)]], constant int& off [[buffer(1)]], uint i [[thread_position_in_grid]]) {
            int x = vec<int, 2>(1, 2).y, t[4] = {1, 2, 3, 4}, z = x < 3;
            out[i] = float(x + t[3 + off] + z);
        }""", np.float32, 0, "private array", lambda o, x: np.concatenate([np.full(4, 7, np.float32), o[4:]])),
    # ---- addresses in parentheses, after a unary `*`, of an element a call returns ----
    "address_of_parenthesized_element": ("""
        kernel void k(device float* out [[buffer(0)]], constant int& off [[buffer(1)]], uint i [[thread_position_in_grid]]) {
            float t[4] = {1.0f, 2.0f, 3.0f, 4.0f};
            thread float* q = &(t[1]);
            out[i] = q[2 + off];
        }""", np.float32, 0, "private array", lambda o, x: np.concatenate([np.full(4, 4, np.float32), o[4:]])),
    "address_of_parenthesized_variable": ("""
        kernel void k(device float* out [[buffer(0)]], constant int& off [[buffer(1)]], uint i [[thread_position_in_grid]]) {
            float x = 3.0f;
            thread float* q = &((x));
            out[i] = q[off];
        }""", np.float32, 0, "variable", lambda o, x: np.concatenate([np.full(4, 3, np.float32), o[4:]])),
    "dereferenced_address": ("""
        kernel void k(device float* out [[buffer(0)]], constant int& off [[buffer(1)]], uint i [[thread_position_in_grid]]) {
            float t[4] = {1.0f, 2.0f, 3.0f, 4.0f};
            out[i] = *&t[3 + off];
        }""", np.float32, 0, "private array", lambda o, x: np.concatenate([np.full(4, 4, np.float32), o[4:]])),
    "address_of_dereferenced_pointer": ("""
        kernel void k(device float* out [[buffer(0)]], constant int& off [[buffer(1)]], uint i [[thread_position_in_grid]]) {
            float t[4] = {1.0f, 2.0f, 3.0f, 4.0f};
            thread float* p = t;
            thread float* q = &*p;
            thread float* r = &(*(p + 1));
            out[i] = q[3 + off] + r[1] + *&*t;
        }""", np.float32, 0, "private array", lambda o, x: np.concatenate([np.full(4, 8, np.float32), o[4:]])),
    "address_of_element_a_call_returns": ("""
        struct Acc {
            float4 v;
            thread float4& get() { return v; }
        };
        kernel void k(device float* out [[buffer(0)]], constant int& off [[buffer(1)]], uint i [[thread_position_in_grid]]) {
            Acc acc = {float4(1.0f, 2.0f, 3.0f, 4.0f)};
            thread float* q = &acc.get()[2];
            out[i] = q[1 + off];
        }""", np.float32, 0, "vector component", lambda o, x: np.concatenate([np.full(4, 4, np.float32), o[4:]])),
    "static_member_table_spelled_constant_then_const": ("""
        struct Tb { static constexpr constant float v[2] = {0.25f, 0.75f}; };
        constant constexpr const float Tb::v[2];
        kernel void k(device float* out [[buffer(0)]], constant int& off [[buffer(1)]], uint i [[thread_position_in_grid]]) {
            out[i] = Tb::v[1 + off];
        }""", np.float32, 0, "constant array", lambda o, x: np.concatenate([np.full(4, 0.75, np.float32), o[4:]])),
    # ---- a template's `thread T*` parameter where an overload of its name takes no pointer ----
    "template_pointer_parameter_beside_overload": ("""
        template <typename T> T pick(thread T* p, int j) { return p[j]; }
        float pick(float x, int j) { return x * float(j); }
        kernel void k(device float* out [[buffer(0)]], constant int& off [[buffer(1)]], uint i [[thread_position_in_grid]]) {
            float t[4] = {1.0f, 2.0f, 3.0f, 4.0f};
            out[i] = pick(t, 3 + off) + pick(t[1], 2);
        }""", np.float32, 0, "private array", lambda o, x: np.concatenate([np.full(4, 8, np.float32), o[4:]])),
    "address_to_template_pointer_parameter_beside_overload": ("""
        template <typename T> T pick(thread T* p, int j) { return p[j]; }
        float pick(float x, int j) { return x * float(j); }
        kernel void k(device float* out [[buffer(0)]], constant int& off [[buffer(1)]], uint i [[thread_position_in_grid]]) {
            float x = 2.0f;
            out[i] = pick(&x, off) + pick(x, 2);
        }""", np.float32, 0, "variable", lambda o, x: np.concatenate([np.full(4, 6, np.float32), o[4:]])),
    # ---- a `thread T*` a helper function returns keeps its bounds (MLX's `elems()`) ----
    "thread_pointer_a_member_function_returns": ("""
        struct Acc {
            float data[4];
            thread float* row() thread { return data; }
        };
        kernel void k(device float* out [[buffer(0)]], constant int& off [[buffer(1)]], uint i [[thread_position_in_grid]]) {
            Acc acc = {{1.0f, 2.0f, 3.0f, 4.0f}};
            out[i] = acc.row()[3 + off];
        }""", np.float32, 0, "struct array member", lambda o, x: np.concatenate([np.full(4, 4, np.float32), o[4:]])),
    "thread_pointer_a_template_returns": ("""
        template <typename T> thread T* skip(thread T* p, int n) { return p + n; }
        kernel void k(device float* out [[buffer(0)]], constant int& off [[buffer(1)]], uint i [[thread_position_in_grid]]) {
            float t[4] = {1.0f, 2.0f, 3.0f, 4.0f};
            thread float* q = skip(t, 1);
            out[i] = q[2 + off];
        }""", np.float32, 0, "private array", lambda o, x: np.concatenate([np.full(4, 4, np.float32), o[4:]])),
    # ---- `c ? p : 0`: the literal branch is a null checked pointer, the other keeps its bounds ----
    "conditional_pointer_or_literal_null": ("""
        kernel void k(device float* out [[buffer(0)]], constant int& off [[buffer(1)]], uint i [[thread_position_in_grid]]) {
            float t[4] = {1.0f, 2.0f, 3.0f, 4.0f};
            thread float* q = i < 8 ? t : 0;
            thread float* r = i > 8 ? &t[1] : 0;
            device float* d = i < 8 ? out : 0;
            out[i] = q[3 + off] + (r ? 1.0f : 0.0f) + (d == out ? 1.0f : 0.0f);
        }""", np.float32, 0, "private array", lambda o, x: np.concatenate([np.full(4, 5, np.float32), o[4:]])),
    "conditional_address_or_literal_null": ("""
        kernel void k(device float* out [[buffer(0)]], constant int& off [[buffer(1)]], uint i [[thread_position_in_grid]]) {
            float t[4] = {1.0f, 2.0f, 3.0f, 4.0f};
            thread float* q = i > 8 ? 0 : &t[1];
            out[i] = q[2 + off];
        }""", np.float32, 0, "private array", lambda o, x: np.concatenate([np.full(4, 4, np.float32), o[4:]])),
    "generic_lambda_pointer_parameter": ("""
        kernel void k(device float* out [[buffer(0)]], constant int& off [[buffer(1)]], uint i [[thread_position_in_grid]]) {
            float t[4] = {1.0f, 2.0f, 3.0f, 4.0f};
            auto get = [](thread auto* p, int j) { return p[j]; };
            auto put = [](device auto* p, uint j, float v) { p[j] = v; };
            put(out, i, get(t, 3 + off) + get(&t[1], 0));
        }""", np.float32, 0, "private array", lambda o, x: np.concatenate([np.full(4, 6, np.float32), o[4:]])),
}

CHILD = """
import sys, pickle
import numpy as np, metalcall as mc
src, dtype, extra, off, checked = pickle.loads(bytes.fromhex(sys.argv[1]))
lib = mc.Device("cpu", checked=checked).compile(src)
out = np.arange(16).astype(dtype)
inputs = [np.arange(16).astype(dtype) * 2 + 1 for _ in range(extra)]
try:
    memory = {"threadgroup_memory": [16]} if "threadgroup(0)" in src else {}
    lib.k(4, out, np.int32(off), *inputs, threadgroup=4, **memory)
    print("OK", pickle.dumps(out).hex())
except mc.ExecutionError as e:
    print("ExecutionError", e)
"""


def run_case(name: str, off: int, checked: bool = True) -> str:
    src, dtype, extra, _, _ = CASES[name]
    job = pickle.dumps((textwrap.dedent(HEADER + src), dtype, extra, off, checked)).hex()
    proc = subprocess.run([sys.executable, "-c", CHILD, job], capture_output=True, text=True, timeout=180)
    how = f"killed by signal {-proc.returncode}" if proc.returncode < 0 else f"exit status {proc.returncode}"
    assert proc.returncode == 0, f"the child died ({how}):\n{proc.stderr[-3000:]}"
    return proc.stdout.strip()


@pytest.mark.parametrize("name", sorted(CASES))
def test_out_of_bounds_raises(name):
    what = CASES[name][3]
    out = run_case(name, 1)
    assert out.startswith("ExecutionError"), out
    assert "kernel 'k'" in out and what in out and "out of bounds" in out and "index " in out, out


@pytest.mark.parametrize("checked", [False, True], ids=["cpu", "cpu-checked"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_in_bounds_twin_matches_numpy(name, checked):
    _, dtype, extra, _, expected = CASES[name]
    out = run_case(name, 0, checked)
    assert out.startswith("OK"), out
    got = pickle.loads(bytes.fromhex(out.split()[1]))
    initial = np.arange(16).astype(dtype)
    inputs = [np.arange(16).astype(dtype) * 2 + 1 for _ in range(extra)]
    want = np.asarray(expected(initial, inputs), dtype)
    assert got.dtype == want.dtype and got.tolist() == want.tolist()


# ---- valid MSL around addresses that must compile and agree on both devices ----

VALID_SRC = HEADER + """
struct Acc {
    float data[4];
    thread float* at(int j) { return &data[j]; }
};
float total(threadgroup float* p, uint n) {
    threadgroup float* e = &p[n];
    float s = 0.0f;
    for (threadgroup float* q = &p[0]; q != e; ++q) s += *q;
    return s;
}
template <typename T> T first(thread T* p) { return *p; }
kernel void k(device float* out [[buffer(0)]], device atomic_uint* counter [[buffer(1)]],
              uint i [[thread_position_in_grid]], uint l [[thread_position_in_threadgroup]]) {
    threadgroup float tg[4];
    threadgroup atomic_uint hits;
    if (l == 0) atomic_store_explicit(&hits, 0u, memory_order_relaxed);
    tg[l] = float(l);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    atomic_fetch_add_explicit(&hits, 1u, memory_order_relaxed);
    uint expected = 0u;
    atomic_compare_exchange_weak_explicit(&counter[0], &expected, 7u, memory_order_relaxed, memory_order_relaxed);
    float t[4] = {1.0f, 2.0f, 3.0f, 4.0f};
    float x = 5.0f, y = 6.0f;
    thread float* p = &t[0];
    long d = &t[3] - &t[0];
    long e = &out[i] - out;
    bool same = (&x == p) || (p == &x) || (&x != &y) || (&t[1] < &t[2]);
    thread float* c = i > 1 ? &t[1] : &y;
    Acc acc = {{1.0f, 2.0f, 3.0f, 4.0f}};
    *acc.at(2) = 9.0f;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    out[i] = float(d) + float(e) + p[1] + *&x + (same ? 100.0f : 0.0f) + *c + acc.data[2] + total(tg, 4) +
             first(&t[2]) + first(&x) + float(atomic_load_explicit(&hits, memory_order_relaxed));
}
"""


def test_addresses_compile_and_agree_with_numpy():
    i = np.arange(4)
    c = np.where(i > 1, 2.0, 6.0)
    want = (3 + i + 2 + 5 + 100 + c + 9 + 6 + 3 + 5 + 4).astype(np.float32)
    for checked in (False, True):
        out = np.zeros(4, np.float32)
        counter = np.zeros(1, np.uint32)
        mc.Device("cpu", checked=checked).compile(VALID_SRC).k(4, out, counter, threadgroup=4)
        assert out.tolist() == want.tolist(), checked
        assert counter.tolist() == [7]


# Byte views through `thread` pointer casts (ggml's dequantizers): checked pointers over the
# same bytes, from a variable's address (`&x`) and from a checked array alike.
CASTS_SRC = HEADER + """
kernel void k(device uint* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    uint qh = 0x04030201u + i;
    thread const uint8_t* qh8 = (thread const uint8_t*)&qh;
    const thread uchar* b = reinterpret_cast<const thread uchar*>(&qh);
    uint16_t sc16[2] = {0x0201, 0x0403};
    thread const uint8_t* sc8 = (thread const uint8_t*)sc16;
    out[i] = uint(qh8[0]) + uint(b[3]) * 10u + uint(sc8[3]) * 100u;
}
"""


def test_byte_views_through_thread_pointer_casts():
    want = (1 + np.arange(4) + 40 + 400).astype(np.uint32)
    for checked in (False, True):
        out = np.zeros(4, np.uint32)
        mc.Device("cpu", checked=checked).compile(CASTS_SRC).k(4, out)
        assert out.tolist() == want.tolist(), checked


# Offsets that are classes converting to an integer (MLX's `Int<1>{}`): a checked pointer
# takes them like an integer (`src += str_y`, `p[Int<3>{}]`).
CLASS_OFFSETS_SRC = HEADER + """
template <int v> struct Int { constexpr operator int() const { return v; } };
template <typename P, typename S> float two(P p, S s) { float r = p[0]; p += s; return r + *p + p[s]; }
kernel void k(device float* out [[buffer(0)]], const device float* in [[buffer(1)]], uint i [[thread_position_in_grid]]) {
    float t[4] = {1.0f, 2.0f, 3.0f, 4.0f};
    thread float* q = t;
    out[i] = two(q, Int<1>{}) + (q + Int<2>{})[0] + q[Int<3>{}] + two(in + i, Int<0>{});
}
"""


def test_class_offsets_of_checked_pointers():
    x = np.arange(4, dtype=np.float32) * 10
    want = (1 + 2 + 3 + 3 + 4 + 3 * x).astype(np.float32)
    for checked in (False, True):
        out = np.zeros(4, np.float32)
        mc.Device("cpu", checked=checked).compile(CLASS_OFFSETS_SRC).k(4, out, x)
        assert out.tolist() == want.tolist(), checked


# A trait specialised on pointer types (MLX's pointer_element) sees checked pointers and arrays
# passed whole as the pointers they stand for.
POINTER_TRAIT_SRC = HEADER + """
template <typename T> struct pointer_element {};
template <typename T> struct pointer_element<thread T*> { using type = remove_cv_t<T>; };
template <typename T> struct pointer_element<device T*> { using type = remove_cv_t<T>; };
template <typename T> struct pointer_element<constant T*> { using type = remove_cv_t<T>; };
template <typename T> using pointer_element_t = typename pointer_element<remove_cv_t<T>>::type;
template <typename P> void store(P dst, float v) { using U = pointer_element_t<P>; dst[0] = static_cast<U>(v); }
kernel void k(device int* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    float t[2] = {0.0f, 0.0f};
    store(t, 3.5f);
    store(out + i, t[0] + float(i));
}
"""


def test_pointer_traits_see_checked_pointers():
    for checked in (False, True):
        out = np.zeros(4, np.int32)
        mc.Device("cpu", checked=checked).compile(POINTER_TRAIT_SRC).k(4, out)
        assert out.tolist() == [3, 4, 5, 6], checked


# Where '&' follows '>' or '*': comparisons and `*&x` take addresses; a template's closing
# '>' (`vec<int, 2> &w`), a pointer's '*' (`thread float* &r`) and a postfix `++` do not;
# `&*it` of a class with its own operator* is C++'s.
AMPERSAND_SRC = HEADER + """
struct It { thread float* p; thread float& operator*() const { return *p; } };  // `&*it`: its own operator*
kernel void k(device float* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    float t[4] = {1.0f, 2.0f, 3.0f, 4.0f};
    thread float* q = &t[2];
    bool later = q > &t[1], same = q >= &(t[2]);
    vec<int, 2> v = {1, 2};
    vec<int, 2> &w = v;
    w.y = 5;
    thread float* &r = q;
    r = &t[3];
    uint n = i;
    uint m = n++ & 1u;
    It it = {&t[1]};
    thread float* z = &*it;
    out[i] = (later ? 1.0f : 0.0f) + (same ? 2.0f : 0.0f) + float(v.y) + *q + *&t[0] + float(m) + *z;
}
"""


def test_ampersand_after_comparison_pointer_and_template():
    want = (1 + 2 + 5 + 4 + 1 + np.arange(4) % 2 + 2).astype(np.float32)
    for checked in (False, True):
        out = np.zeros(4, np.float32)
        mc.Device("cpu", checked=checked).compile(AMPERSAND_SRC).k(4, out)
        assert out.tolist() == want.tolist(), checked


# An integer literal branch of `?:` beside checked pointers, arrays, vectors, half and bfloat
# (checked mode wraps it as the plain CPU device does: it converts to the other branch's type).
CONDITIONAL_LITERAL_SRC = HEADER + """
kernel void k(device float* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    float t[4] = {1.0f, 2.0f, 3.0f, 4.0f};
    thread float* q = (i & 1) ? t : 0;
    device float* d = (i & 2) ? out : 0;
    float4 v = (i & 1) ? float4(1.0f, 2.0f, 3.0f, 4.0f) : 0;
    half h = (i & 1) ? half(2.5h) : 0;
    bfloat b = (i & 2) ? bfloat(1.5f) : 0;
    out[i] = (q ? q[1] : 5.0f) + (d ? 1.0f : 0.0f) + v.w + float(h) + float(b);
}
"""


def test_conditional_integer_literal_branches():
    i = np.arange(4)
    odd, two = (i & 1) != 0, (i & 2) != 0
    want = (np.where(odd, 2, 5) + two + np.where(odd, 4, 0) + np.where(odd, 2.5, 0) + np.where(two, 1.5, 0)).astype(np.float32)
    for checked in (False, True):
        out = np.zeros(4, np.float32)
        mc.Device("cpu", checked=checked).compile(CONDITIONAL_LITERAL_SRC).k(4, out)
        assert out.tolist() == want.tolist(), checked
