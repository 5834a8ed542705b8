"""Checked mode (Device("cpu", checked=True)) composed with SIMD-group matrices and with
functions overloaded only by address space: their accesses stay bounds-checked (an 8x8
block that reaches past a buffer or a threadgroup array, an overload indexing past its
argument, raise ExecutionError), and pointer types used as template arguments stay types."""

from __future__ import annotations

import numpy as np
import pytest

import metalcall as mc

SRC = """
#include <metal_stdlib>
using namespace metal;

// An 8x8 block at (x, y) of a 16-wide device matrix of `rows` rows, copied to `out`.
kernel void block_copy(const device float* in [[buffer(0)]], device float* out [[buffer(1)]],
                       constant uint2& at [[buffer(2)]]) {
    simdgroup_float8x8 m;
    simdgroup_load(m, in, 16, ulong2(at.x, at.y));
    simdgroup_store(m, out, 8);
}

// The same through threadgroup memory: a 16x8 array, the block at row `at.y`.
kernel void block_tile(const device float* in [[buffer(0)]], device float* out [[buffer(1)]],
                       constant uint2& at [[buffer(2)]], uint lane [[thread_index_in_simdgroup]]) {
    threadgroup float tile[8 * 8];
    threadgroup float back[8 * 8];
    for (uint i = lane; i < 64; i += 32) tile[i] = in[i];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    simdgroup_float8x8 m;
    simdgroup_load(m, tile, 8, ulong2(at.x, at.y));
    simdgroup_store(m, back, 8);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    for (uint i = lane; i < 64; i += 32) out[i] = back[i];
}

float pick(const device float* p, uint k) { return p[k]; }
float pick(const threadgroup float* p, uint k) { return p[k] * 10.0f; }
kernel void overload_pick(const device float* in [[buffer(0)]], device float* out [[buffer(1)]],
                          constant uint& k [[buffer(2)]], uint i [[thread_position_in_grid]],
                          uint l [[thread_position_in_threadgroup]]) {
    threadgroup float tg[4];
    if (l < 4) tg[l] = in[l];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    out[i] = pick(in, k) + pick(tg, k);
}

template <typename T> struct elem_of {};
template <typename T> struct elem_of<device T*> { using type = T; };
static_assert(is_same_v<typename elem_of<device float*>::type, float>, "a pointer type argument");
"""


@pytest.fixture(scope="module")
def lib():
    if "cpu" not in mc.backends():
        pytest.skip("checked mode is a feature of the cpu backend")
    return mc.Device("cpu", checked=True).compile(SRC)


def test_simdgroup_block_in_bounds_and_past_a_buffer(lib):
    src = np.arange(16 * 16, dtype=np.float32)
    out = np.zeros(64, np.float32)
    lib.block_copy(32, src, out, np.array([8, 8], np.uint32), threadgroup=32)
    np.testing.assert_array_equal(out.reshape(8, 8), src.reshape(16, 16)[8:, 8:])
    with pytest.raises(mc.ExecutionError) as info:  # rows 9..16: row 16 (from element 16 * 16 + 8) is past the end
        lib.block_copy(32, src, np.zeros(64, np.float32), np.array([8, 9], np.uint32), threadgroup=32)
    assert "block_copy" in str(info.value) and "'in'" in str(info.value) and "index 264" in str(info.value)
    with pytest.raises(mc.ExecutionError, match="'out'"):  # the store's block needs 64 elements
        lib.block_copy(32, src, np.zeros(63, np.float32), np.array([0, 0], np.uint32), threadgroup=32)


def test_simdgroup_block_past_a_threadgroup_array(lib):
    src = np.arange(64, dtype=np.float32)
    out = np.zeros(64, np.float32)
    lib.block_tile(32, src, out, np.array([0, 0], np.uint32), threadgroup=32)
    np.testing.assert_array_equal(out, src)
    with pytest.raises(mc.ExecutionError, match="threadgroup array"):
        lib.block_tile(32, src, out, np.array([1, 0], np.uint32), threadgroup=32)


def test_address_space_overloads_stay_checked(lib):
    x = np.arange(1, 5, dtype=np.float32)
    out = np.zeros(8, np.float32)
    lib.overload_pick(8, x, out, 2, threadgroup=8)
    np.testing.assert_array_equal(out, np.full(8, 3.0 + 30.0, np.float32))
    with pytest.raises(mc.ExecutionError, match="'in'"):
        lib.overload_pick(8, x, out, 4, threadgroup=8)
