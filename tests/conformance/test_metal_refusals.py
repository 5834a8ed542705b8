"""Invalid MSL that Apple's compiler refuses is refused on every device too, with a CompileError
naming the rule and the user's line: a kernel whose position and size inputs mix scalars and
vectors or vector widths, one declaring both [[thread_execution_width]] and
[[threads_per_simdgroup]], the address of a vector's component (or a non-const reference bound to
one), and MSL's keywords used as names. Before, each compiled and ran here and failed on a Mac.
Beside each refusal, the valid forms next to it compile and give the right values: scalar indices
beside vector positions, ushort beside uint, struct members, arrays, matrix columns, const
references to components, names that contain a keyword.
"""

from __future__ import annotations

import numpy as np
import pytest

import metalcall as mc

HEADER = "#include <metal_stdlib>\nusing namespace metal;\n"  # lines 1-2


def refused(device, body: str, line: int, rule: str, message: str) -> None:
    """`body` (after HEADER, so its first line is line 3) is a CompileError at `line`."""
    with pytest.raises(mc.CompileError) as info:
        device.compile(HEADER + body)
    text = str(info.value)
    assert f"source.metal:{line}:" in text, text
    assert f"[MSL rule: {rule}]" in text, text
    assert message in text, text


# ---- 1. position and size inputs: all scalars or all vectors of one width -------------------------

MIXED_INPUTS = {
    "scalar grid position, uint3 threadgroup size": (
        "kernel void k(device uint* o [[buffer(0)]],\n"
        "              uint i [[thread_position_in_grid]],\n"
        "              uint3 tpt [[threads_per_threadgroup]]) { o[i] = tpt.x; }\n", 5),
    "uint2 position, uint3 grid size": (
        "kernel void k(device uint* o [[buffer(0)]], uint2 gid [[thread_position_in_grid]],\n"
        "              uint3 tpg [[threads_per_grid]]) { o[gid.x] = tpg.x; }\n", 4),
    "ushort2 in threadgroup beside uint3 group position": (
        "kernel void k(device uint* o [[buffer(0)]], uint3 g [[threadgroup_position_in_grid]],\n"
        "              ushort2 l [[thread_position_in_threadgroup]]) { o[g.x] = l.x; }\n", 4),
    "scalar threadgroups_per_grid beside uint2": (
        "kernel void k(device uint* o [[buffer(0)]], uint2 gid [[thread_position_in_grid]],\n"
        "              uint n [[threadgroups_per_grid]]) { o[gid.x] = n; }\n", 4),
    "uint2 dispatch size beside scalar position": (
        "kernel void k(device uint* o [[buffer(0)]], uint i [[thread_position_in_grid]],\n"
        "              uint2 d [[dispatch_threads_per_threadgroup]]) { o[i] = d.x; }\n", 4),
}


@pytest.mark.parametrize("case", list(MIXED_INPUTS))
def test_mixed_position_and_size_inputs_are_refused(device, case):
    body, line = MIXED_INPUTS[case]
    refused(device, body, line, "kernel inputs agree", "all scalars or all vectors with the same number of components")


def test_both_simd_width_inputs_are_refused(device):
    body = ("kernel void k(device uint* o [[buffer(0)]], uint i [[thread_position_in_grid]],\n"
            "              uint w [[thread_execution_width]],\n"
            "              uint s [[threads_per_simdgroup]]) { o[i] = w + s; }\n")
    refused(device, body, 5, "kernel inputs agree", "not both")


VALID_INPUTS = HEADER + """
kernel void valid_inputs(device uint* o [[buffer(0)]],
                         uint2 gid [[thread_position_in_grid]],
                         ushort2 lid [[thread_position_in_threadgroup]],
                         uint2 tpg [[threads_per_grid]],
                         uint2 tpt [[threads_per_threadgroup]],
                         uint tidx [[thread_index_in_threadgroup]],
                         ushort width [[threads_per_simdgroup]],
                         uint3 origin [[grid_origin]]) {
    device uint* r = o + 8 * (gid.y * tpg.x + gid.x);
    r[0] = gid.x; r[1] = gid.y; r[2] = lid.x; r[3] = lid.y;
    r[4] = tpg.x * 100 + tpg.y; r[5] = tpt.x * 100 + tpt.y; r[6] = tidx; r[7] = width + origin.x;
}
kernel void scalar_inputs(device uint* o [[buffer(0)]], uint i [[thread_position_in_grid]],
                          ushort l [[thread_position_in_threadgroup]], uint n [[threads_per_grid]],
                          uint w [[thread_execution_width]]) {
    o[i] = i * 1000 + l * 10 + (n == 12 ? 1 : 0) + (w > 0 ? 0 : 5);
}
"""


def test_agreeing_inputs_still_run(device):
    """Vector positions of one width beside ushort ones (the element type may differ), scalar
    indices and counts, and [[grid_origin]] (not among the specification's position and size
    inputs) compile and give each thread's values."""
    lib = device.compile(VALID_INPUTS)
    k = lib.valid_inputs
    out = np.zeros(8 * 6 * 4, np.uint32)
    k((6, 4), out, threadgroup=(3, 2))
    r = out.reshape(4, 6, 8)
    ys, xs = np.mgrid[0:4, 0:6]
    np.testing.assert_array_equal(r[..., 0], xs)
    np.testing.assert_array_equal(r[..., 1], ys)
    np.testing.assert_array_equal(r[..., 2], xs % 3)
    np.testing.assert_array_equal(r[..., 3], ys % 2)
    assert (r[..., 4] == 604).all()
    assert (r[..., 5] == 302).all()
    np.testing.assert_array_equal(r[..., 6], (ys % 2) * 3 + xs % 3)
    assert (r[..., 7] == k.thread_execution_width).all()
    s = np.zeros(12, np.uint32)
    lib.scalar_inputs(12, s, threadgroup=4)
    i = np.arange(12)
    np.testing.assert_array_equal(s, i * 1000 + (i % 4) * 10 + 1)


# ---- 2. the address of a vector's component ------------------------------------------------------

def component_kernel(lines: str) -> str:
    """A kernel whose body is `lines` (its first line is line 7)."""
    return ("struct S { float4 v; float x; };\n"
            "typedef float4 F4;\n"
            "kernel void k(device float4* q [[buffer(0)]], device float* o [[buffer(1)]],\n"
            "              uint i [[thread_position_in_grid]]) {\n"
            f"{lines}\n"
            "}\n")


COMPONENT_ADDRESSES = {
    "&v.x": "    float4 v = q[i];\n    thread float* p = &v.x;\n    o[i] = *p;",
    "&v[1]": "    float4 v = q[i];\n    thread float* p = &v[1];\n    o[i] = *p;",
    "&v.xy": "    float4 v = q[i];\n    thread float2* p = &v.xy;\n    o[i] = (*p).x;",
    "&(v.y)": "    float4 v = q[i];\n    thread float* p = &(v.y);\n    o[i] = *p;",
    "&q->x": "    float4 v = q[i];\n    device float* p = &q->x;\n    o[i] = *p + v.x;",
    "&q[i].z": "    float4 v = q[i];\n    device float* p = &q[i].z;\n    o[i] = *p + v.x;",
    "packed &pv.y": "    packed_float3 pv = packed_float3(q[i].xyz);\n    thread float* p = &pv.y;\n    o[i] = *p;",
    "array element's &a[1].w": "    float4 a[2] = {q[i], q[i]};\n    thread float* p = &a[1].w;\n    o[i] = *p;",
    "struct member's &s.v.z": "    S s = {q[i], 1.0f};\n    thread float* p = &s.v.z;\n    o[i] = *p;",
    "alias &f.x": "    F4 f = q[i];\n    thread float* p = &f.x;\n    o[i] = *p;",
    "matrix &m[0][1]": "    float2x2 m = float2x2(q[i].xy, q[i].zw);\n    thread float* p = &m[0][1];\n    o[i] = *p;",
    "cast of &v.y": "    float4 v = q[i];\n    thread uint* p = (thread uint*)&v.y;\n    o[i] = float(*p);",
    "atomic-style argument": "    float4 v = q[i];\n    thread float* p = 0;\n    p = &v.w;\n    o[i] = *p;",
}


@pytest.mark.parametrize("case", list(COMPONENT_ADDRESSES))
def test_address_of_a_vector_component_is_refused(device, case):
    lines = COMPONENT_ADDRESSES[case]
    line = 7 + next(n for n, text in enumerate(lines.split("\n")) if "&" in text)
    refused(device, component_kernel(lines), line, "no addresses of vector components", "address of a vector's component")


NONCONST_REFERENCES = {
    "thread float& r = v.x": "    float4 v = q[i];\n    thread float& r = v.x;\n    r = 2.0f;\n    o[i] = v.x;",
    "auto& r = v[2]": "    float4 v = q[i];\n    auto& r = v[2];\n    r = 2.0f;\n    o[i] = v.z;",
    "float& r = s.v.y": "    S s = {q[i], 1.0f};\n    thread float& r = s.v.y;\n    o[i] = r;",
}


@pytest.mark.parametrize("case", list(NONCONST_REFERENCES))
def test_nonconst_reference_to_a_vector_component_is_refused(device, case):
    refused(device, component_kernel(NONCONST_REFERENCES[case]), 8, "no addresses of vector components",
            "non-const reference bound to a vector's component")


VALID_ADDRESSES = HEADER + """
struct P { float x; float4 v; };
kernel void valid_addresses(device const float4* q [[buffer(0)]], device float* o [[buffer(1)]],
                            uint i [[thread_position_in_grid]]) {
    float4 v = q[i];
    float a[4] = {v.x, v.y, v.z, v.w};
    thread float* pa = &a[1];                  // an array's element
    P s = {v.w, v};
    thread float* px = &s.x;                   // a struct's member named like a component
    float2x2 m = float2x2(v.xy, v.zw);
    thread float2* col = &m[1];                // a matrix's column is a vector, an object
    const thread float& cr = v.z;              // a const reference binds to a copy
    thread float4* pv = &v;                    // the vector itself
    thread float4* ps = &s.v;                  // a vector member
    float4 arr[2] = {v, v * 2.0f};
    thread float4* pe = &arr[1];               // an array's vector element
    device const float* base = &((device const float*)q)[4 * i + 3];
    device float* out = &o[6 * i];
    out[0] = *pa; out[1] = *px; out[2] = (*col).y + cr;
    out[3] = (*pv).x + (*ps).y; out[4] = (*pe).z; out[5] = *base;
}
"""


def test_valid_addresses_near_vector_components_still_run(device):
    lib = device.compile(VALID_ADDRESSES)
    q = np.arange(4 * 5, dtype=np.float32).reshape(5, 4) + 0.5
    o = np.zeros(6 * 5, np.float32)
    lib.valid_addresses(5, q, o)
    r = o.reshape(5, 6)
    np.testing.assert_array_equal(r[:, 0], q[:, 1])
    np.testing.assert_array_equal(r[:, 1], q[:, 3])
    np.testing.assert_array_equal(r[:, 2], q[:, 3] + q[:, 2])
    np.testing.assert_array_equal(r[:, 3], q[:, 0] + q[:, 1])
    np.testing.assert_array_equal(r[:, 4], 2 * q[:, 2])
    np.testing.assert_array_equal(r[:, 5], q[:, 3])


# ---- 3. MSL's keywords are not names ------------------------------------------------------------

KEYWORD_NAMES = {
    "local kernel": ("kernel void k(device int* o [[buffer(0)]], uint i [[thread_position_in_grid]]) {\n"
                     "    int kernel = 3;\n    o[i] = kernel;\n}\n", 4, "kernel"),
    "parameter device": ("int twice(int device) { return 2 * device; }\n"
                         "kernel void k(device int* o [[buffer(0)]], uint i [[thread_position_in_grid]]) { o[i] = twice(3); }\n",
                         3, "device"),
    "function vertex": ("int vertex(int x) { return x + 1; }\n"
                        "kernel void k(device int* o [[buffer(0)]], uint i [[thread_position_in_grid]]) { o[i] = 1; }\n",
                        3, "vertex"),
    "member thread": ("struct T { float thread; };\n"
                      "kernel void k(device int* o [[buffer(0)]], uint i [[thread_position_in_grid]]) { o[i] = 1; }\n",
                      3, "thread"),
    "enumerator constant": ("enum E { constant = 1 };\n"
                            "kernel void k(device int* o [[buffer(0)]], uint i [[thread_position_in_grid]]) { o[i] = 1; }\n",
                            3, "constant"),
    "struct fragment": ("struct fragment { int a; };\n"
                        "kernel void k(device int* o [[buffer(0)]], uint i [[thread_position_in_grid]]) { o[i] = 1; }\n",
                        3, "fragment"),
    "local threadgroup": ("kernel void k(device int* o [[buffer(0)]], uint i [[thread_position_in_grid]]) {\n"
                          "    int x = 1;\n    int threadgroup = x;\n    o[i] = threadgroup;\n}\n", 5, "threadgroup"),
    "local ray_data": ("kernel void k(device int* o [[buffer(0)]], uint i [[thread_position_in_grid]]) {\n"
                       "    int ray_data = 2;\n    o[i] = ray_data;\n}\n", 4, "ray_data"),
    "local object_data": ("kernel void k(device int* o [[buffer(0)]], uint i [[thread_position_in_grid]]) {\n"
                          "    int object_data = 2;\n    o[i] = object_data;\n}\n", 4, "object_data"),
}


@pytest.mark.parametrize("case", list(KEYWORD_NAMES))
def test_keywords_as_names_are_refused(device, case):
    body, line, word = KEYWORD_NAMES[case]
    refused(device, body, line, "keywords are not names", f"'{word}' is a keyword of MSL")


VALID_NAMES = HEADER + """
struct Box {
    float device_scale;
    float v;
    float get() const thread { return v * device_scale; }
};
constant int kernel_size = 3;
int thread_count(int threadgroup_size) { return threadgroup_size * 2; }
kernel void valid_names(device int* o [[buffer(0)]], constant int& device_count [[buffer(1)]],
                        uint i [[thread_position_in_grid]]) {
    int visible = 4, stitchable = 5, kernels = 6, vertex_id = 7;
    thread Box b = {2.0f, float(i)};
    threadgroup int constant_pool[1];
    constant_pool[0] = 0;
    o[i] = kernel_size + thread_count(device_count) + visible + stitchable + kernels + vertex_id + int(b.get());
}
"""


def test_names_that_contain_keywords_still_run(device):
    lib = device.compile(VALID_NAMES)
    o = np.zeros(8, np.int32)
    lib.valid_names(8, o, np.int32(10), threadgroup=8)
    np.testing.assert_array_equal(o, 3 + 20 + 4 + 5 + 6 + 7 + 2 * np.arange(8))


# A space keyword before a parenthesised declarator qualifies it (SPIRV-Cross's argument buffers
# write `device SSBO* constant (&ssbos)[2]`, a reference to an array of pointers stored in constant
# space, and the cast `reinterpret_cast<constant B* constant (&)[8]>(...)`): no name there.
SPACE_BEFORE_DECLARATOR = HEADER + """
float pick(device const float* thread (&rows)[2], uint j) { return rows[0][j] + 10.0f * rows[1][j]; }
kernel void space_before_declarator(device const float* a [[buffer(0)]], device const float* b [[buffer(1)]],
                                    device float* o [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    device const float* rows[2] = {a, b};
    o[i] = pick(rows, i);
}
kernel void space_in_a_cast(device const float* a [[buffer(0)]], device const float* b [[buffer(1)]],
                            device float* o [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    device const float* rows[2] = {a, b};
    thread auto& same = reinterpret_cast<device const float* thread (&)[2]>(rows);
    o[i] = same[1][i] + 10.0f * same[0][i];
}
"""


def test_space_keyword_before_a_parenthesised_declarator_runs(device):
    rng = np.random.default_rng(7)
    a = rng.integers(0, 9, 16).astype(np.float32)
    b = rng.integers(0, 9, 16).astype(np.float32)
    o = np.zeros(16, np.float32)
    if device.checked:
        pytest.skip("an array of pointers bound to a reference, or cast to one, has no checked form "
                    "(docs/design.md, checked mode's limits)")
    lib = device.compile(SPACE_BEFORE_DECLARATOR)
    lib.space_before_declarator(16, a, b, o)
    np.testing.assert_array_equal(o, a + 10 * b)
    lib.space_in_a_cast(16, a, b, o)
    np.testing.assert_array_equal(o, b + 10 * a)
