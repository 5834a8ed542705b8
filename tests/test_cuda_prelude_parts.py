"""The prelude in parts (msl/prelude/metal_stdlib.h, backends/translated/prelude_parts.cpp): on
CUDA each kernel is compiled with the parts of the prelude whose names it spells, and their
dependencies; a kernel of float scalars gets none. One kernel per part here, each checked
against NumPy on every device (the CPU compiles the whole prelude: the same values). Overloads
spread over several headers (min of ints and of floats) and a defines= value that calls a math
function must find the same functions as with the whole prelude. tools/cuda_prelude_parts_check.py
compares the PTX of every kernel the tests compile, parts against the whole prelude, with NVRTC
and no GPU."""

from __future__ import annotations

import numpy as np
import pytest

HEAD = "#include <metal_stdlib>\nusing namespace metal;\n"
N = 64

KERNELS = {
    "scalars": """
kernel void k(const device float* a [[buffer(0)]], device float* c [[buffer(1)]], uint i [[thread_position_in_grid]]) {
    c[i] = a[i] * 3.0f + float(i);
}""",
    "half": """
kernel void k(const device half* a [[buffer(0)]], device half* c [[buffer(1)]], uint i [[thread_position_in_grid]]) {
    c[i] = a[i] * 2.0h + 1.0h;
}""",
    "vector": """
kernel void k(const device float4* a [[buffer(0)]], device float4* c [[buffer(1)]], uint i [[thread_position_in_grid]]) {
    c[i] = a[i].wzyx * 2.0f;
}""",
    "math": """
kernel void k(const device float* a [[buffer(0)]], device float* c [[buffer(1)]], device int* d [[buffer(2)]],
              uint i [[thread_position_in_grid]]) {
    c[i] = fma(sin(a[i]), exp(a[i]), clamp(a[i], 0.25f, 0.75f)) + min(a[i], 0.5f);
    d[i] = min(int(i), 40) + abs(int(i) - 50) + int(popcount(i));
}""",
    "matrix": """
kernel void k(const device float4* a [[buffer(0)]], device float2* c [[buffer(1)]], uint i [[thread_position_in_grid]]) {
    float4 v = a[i];
    float2x2 m = float2x2(v.x, v.y, v.z, v.w);
    c[i] = transpose(m) * float2(1.0f, 2.0f);
}""",
    "atomic": """
kernel void k(const device uint* a [[buffer(0)]], device atomic_uint* c [[buffer(1)]], uint i [[thread_position_in_grid]]) {
    atomic_fetch_add_explicit(c, a[i], memory_order_relaxed);
}""",
    "sync": """
kernel void k(const device float* a [[buffer(0)]], device float* c [[buffer(1)]],
              uint i [[thread_position_in_grid]], uint l [[thread_position_in_threadgroup]],
              uint n [[threads_per_threadgroup]]) {
    threadgroup float t[64];
    t[l] = a[i];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    c[i] = t[n - 1 - l];
}""",
    "simd": """
kernel void k(const device float* a [[buffer(0)]], device float* c [[buffer(1)]],
              uint i [[thread_position_in_grid]]) {
    c[i] = simd_sum(a[i]) + simd_max(a[i]);
}""",
    "sgmatrix": """
kernel void k(const device float* a [[buffer(0)]], device float* c [[buffer(1)]],
              uint i [[thread_position_in_grid]]) {
    simdgroup_float8x8 x, y;
    simdgroup_load(x, a, 8);
    simdgroup_multiply(y, x, x);
    simdgroup_store(y, c, 8);
}""",
    "apple": """
kernel void k(const device float* a [[buffer(0)]], device float* c [[buffer(1)]], uint i [[thread_position_in_grid]]) {
    c[i] = __metal_fabs(a[i] - 0.5f, false);
}""",
}


def expected(name, a):
    i = np.arange(N)
    if name == "scalars":
        return a * np.float32(3) + i.astype(np.float32)
    if name == "half":
        return a * np.float16(2) + np.float16(1)
    if name == "vector":
        return a[:, ::-1] * np.float32(2)
    if name == "matrix":
        m = a.reshape(N, 2, 2)  # columns (x, y), (z, w); transpose(m) * (1, 2)
        return np.stack([m[:, 0, 0] + 2 * m[:, 0, 1], m[:, 1, 0] + 2 * m[:, 1, 1]], axis=1)
    if name == "sync":
        return a.reshape(-1, 32)[:, ::-1].reshape(-1)
    if name == "simd":
        g = a.reshape(-1, 32)
        return np.repeat(g.sum(axis=1) + g.max(axis=1), 32)
    if name == "apple":
        return np.abs(a - np.float32(0.5))
    raise AssertionError(name)


@pytest.mark.parametrize("name", list(KERNELS))
def test_each_part(device, rng, name):
    fn = device.compile(HEAD + KERNELS[name]).k
    if name == "math":
        a = rng.random(N, dtype=np.float32)
        c, d = np.zeros(N, np.float32), np.zeros(N, np.int32)
        fn(N, a, c, d)
        ref = np.sin(a) * np.exp(a) + np.clip(a, 0.25, 0.75) + np.minimum(a, np.float32(0.5))
        np.testing.assert_allclose(c, ref, rtol=1e-5, atol=1e-6)
        i = np.arange(N)
        popcount = np.array([bin(v).count("1") for v in i])
        np.testing.assert_array_equal(d, np.minimum(i, 40) + np.abs(i - 50) + popcount)
        return
    if name == "atomic":
        a = rng.integers(0, 1000, N, dtype=np.uint32)
        c = np.zeros(1, np.uint32)
        fn(N, a, c)
        assert int(c[0]) == int(a.sum())
        return
    if name == "sgmatrix":
        a = rng.integers(-4, 5, (8, 8)).astype(np.float32)
        c = np.zeros((8, 8), np.float32)
        fn(32, a, c, threadgroup=32)
        np.testing.assert_array_equal(c, a @ a)
        return
    shapes = {"vector": (N, 4), "matrix": (N, 4)}
    dtype = np.float16 if name == "half" else np.float32
    a = rng.random(shapes.get(name, N)).astype(dtype)
    out_shape = (N, 2) if name == "matrix" else a.shape
    c = np.zeros(out_shape, dtype)
    kwargs = {"threadgroup": 32} if name in ("sync", "simd") else {}
    fn(N, a, c, **kwargs)
    if name == "half":
        np.testing.assert_array_equal(c, expected(name, a))
    else:
        np.testing.assert_allclose(c, expected(name, a), rtol=1e-5)


def test_a_define_that_calls_a_math_function(device, rng):
    # The kernel's own text names no math function: the macro's value does (sin of the prelude,
    # not NVRTC's own global one).
    src = HEAD + """
kernel void k(const device float* a [[buffer(0)]], device float* c [[buffer(1)]], uint i [[thread_position_in_grid]]) {
    c[i] = SCALE(a[i]);
}"""
    a = rng.random(N, dtype=np.float32)
    c = np.zeros(N, np.float32)
    device.compile(src, defines={"SCALE": "2.0f * sin"}).k(N, a, c)
    np.testing.assert_allclose(c, np.float32(2) * np.sin(a), rtol=1e-5)
