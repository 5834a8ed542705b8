"""Copies from device to threadgroup memory written as `*(threadgroup T*)(d) = *(device
const T*)(s);`, which CUDA's translation hands to the prelude (msl/passes/async_copies.hpp): with
METALCALL_ASYNC_COPIES=1 (sm_80+), 4-, 8- and 16-byte ones become cp.async that the next
threadgroup_barrier waits for; other sizes, other spaces and the option off stay plain
copies. Each kernel copies a tile, meets at a barrier and reads what other threads copied;
the GEMM copies its tiles a step ahead (benchmarks/bench_simdgroup_gemm.py, DIRECT_COPY).
Every device runs them against NumPy; the option changes only CUDA's code."""

from __future__ import annotations

import numpy as np
import pytest

from mcconf import KernelSet, assert_equal, check_gemm_kernel

TYPES = {"uint4": 16, "uint2": 8, "uint": 4, "ushort": 2}

KS = KernelSet([
    # 64 threads copy 64 pieces of type T (in two rounds of 32, the second into the other
    # half), meet, and each writes out the piece its neighbour (tid ^ 1) and the thread 32
    # away copied
    ([f"copy_exchange_{t}" for t in TYPES], """
template <typename T>
kernel void copy_exchange(device const uchar* in [[buffer(0)]], device uchar* out [[buffer(1)]],
                          uint tid [[thread_position_in_threadgroup]]) {
    threadgroup T tile[128];
    for (uint round = 0; round < 2; ++round)
        *(threadgroup T*)(tile + round * 64 + tid) = *(device const T*)(in + (round * 64 + tid) * sizeof(T));
    threadgroup_barrier(mem_flags::mem_threadgroup);
    *(device T*)(out + tid * sizeof(T)) = tile[tid ^ 1];
    *(device T*)(out + (64 + tid) * sizeof(T)) = tile[64 + (tid ^ 32)];
}
""" + "\n".join(f'template [[host_name("copy_exchange_{t}")]] kernel void copy_exchange<{t}>('
                "device const uchar*, device uchar*, uint);" for t in TYPES)),
    # a loop that copies the next block while the current one is read, two blocks in
    # threadgroup memory (a stage each), as a pipelined kernel does
    """
kernel void copy_pipeline(device const float4* in [[buffer(0)]], device float* out [[buffer(1)]],
                          constant uint& blocks [[buffer(2)]], uint tid [[thread_position_in_threadgroup]]) {
    threadgroup float4 stage[2][32];
    *(threadgroup float4*)(&stage[0][tid]) = *(device const float4*)(in + tid);
    float sum = 0.0f;
    for (uint k = 0; k < blocks; ++k) {
        threadgroup_barrier(mem_flags::mem_threadgroup);
        if (k + 1 < blocks)
            *(threadgroup float4*)(&stage[(k + 1) % 2][tid]) = *(device const float4*)(in + (k + 1) * 32 + tid);
        const float4 v = stage[k % 2][31 - tid];
        sum += v.x + 2.0f * v.y + 3.0f * v.z + 4.0f * v.w;
    }
    out[tid] = sum;
}
""",
])
ASYNC = KS.with_defines({"METALCALL_ASYNC_COPIES": "1"})


@pytest.fixture(params=["plain", "async"])
def copies(request):
    """The kernel set without and with METALCALL_ASYNC_COPIES."""
    return ASYNC if request.param == "async" else KS


@pytest.mark.parametrize("t", list(TYPES))
def test_copies_meet_at_the_barrier(device, copies, rng, t):
    size = TYPES[t]
    src = rng.integers(0, 256, 128 * size, dtype=np.uint8)
    out = np.zeros(128 * size, np.uint8)
    copies.get(device, f"copy_exchange_{t}")(64, src, out, threadgroup=64)
    pieces = src.reshape(128, size)
    tid = np.arange(64)
    assert_equal(out.reshape(128, size)[:64], pieces[tid ^ 1])
    assert_equal(out.reshape(128, size)[64:], pieces[64 + (tid ^ 32)])


@pytest.mark.parametrize("blocks", [1, 2, 7])
def test_copies_a_step_ahead(device, copies, rng, blocks):
    src = rng.standard_normal((blocks, 32, 4)).astype(np.float32)
    out = np.zeros(32, np.float32)
    copies.get(device, "copy_pipeline")(32, src, out, np.uint32(blocks), threadgroup=32)
    weights = np.array([1.0, 2.0, 3.0, 4.0])
    expect = np.zeros(32, np.float32)
    for k in range(blocks):  # the kernel's order of float additions
        expect += (src[k, ::-1] * weights).sum(axis=1, dtype=np.float32).astype(np.float32)
    np.testing.assert_allclose(out, expect, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_gemm_with_direct_copies(device, copies, rng, dtype):
    check_gemm_kernel(device, {"DIRECT_COPY": "1", **(copies.defines or {})}, rng, dtype)
