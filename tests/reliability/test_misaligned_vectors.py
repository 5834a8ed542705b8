"""Vector loads and stores through pointers that are not aligned to the vector's size.

MSL code casts element pointers to vector pointers at any element offset
(`*(device float4*)(p + 2)`: ggml's kernel_mul_mm writes partial output rows that way),
and Metal accepts it. CUDA faults on such an access (CUDA_ERROR_MISALIGNED_ADDRESS) and on
x86-64 the CPU backend used to compile it to an aligned vector move (vmovaps): the translation
now writes a cast to a vector pointer as the prelude's checking pointer (metal_unaligned.h,
docs/design.md "Pointers made by casts"), a helper's parameter given one included. Checked
mode keeps its own checked pointers: with clang building the kernels (the default where clang
>= 15 is installed) the prelude's vectors take their alignment from a member and
`-fmax-type-align=8` caps what clang assumes through a pointer (docs/design.md, "Known limits of
the CPU backend"); g++ has no such flag, so checked mode there stays a strict xfail.

Each case runs in a child process, so a regression fails the test instead of ending
the run; results are checked against NumPy.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

import metalcall as mc

from mctest import cpu_kernels_built_by_clang


SOURCE = r"""
#include <metal_stdlib>
using namespace metal;

// Reads 4 floats from in + 2 + 4i and writes them, changed, to out + 1 + 4i.
kernel void float4_offsets(device float* out [[buffer(0)]], device const float* in [[buffer(1)]],
                           uint i [[thread_position_in_grid]]) {
    device float4* o = (device float4*)(out + 1);
    device const float4* s = (device const float4*)(in + 2);
    o[i] = s[i] * 2.0f + float4(1.0f);
}

// The same through a helper taking a vector pointer and a reference.
static void scale_into(device float4* dst, thread const float4& v) { *dst = v * 3.0f; }
kernel void float4_helper(device float* out [[buffer(0)]], device const float* in [[buffer(1)]],
                          uint i [[thread_position_in_grid]]) {
    device const float4* s = (device const float4*)(in + 1) + i;
    float4 v = *s;
    scale_into((device float4*)(out + 3) + i, v);
}

// half4 at a 2-byte offset; float4 rows staged in threadgroup memory at an 8-byte offset.
kernel void half4_offset(device half* out [[buffer(0)]], device const half* in [[buffer(1)]],
                         uint i [[thread_position_in_grid]]) {
    ((device half4*)(out + 1))[i] = ((device const half4*)(in + 1))[i] + half4(1.0h);
}
kernel void threadgroup_rows(device float* out [[buffer(0)]], device const float* in [[buffer(1)]],
                             uint i [[thread_position_in_grid]], uint t [[thread_position_in_threadgroup]]) {
    threadgroup float stage[4 * 32 + 2];
    threadgroup float4* rows = (threadgroup float4*)(stage + 2);
    rows[t] = ((device const float4*)in)[i];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    ((device float4*)(out + 2))[i] = rows[31 - t];
}
"""

CHILD = r"""
import sys, numpy as np, metalcall as mc
dev = mc.Device(sys.argv[1], checked=sys.argv[2] == "1")
lib = dev.compile(sys.argv[3])
n = 64
x = np.random.default_rng(3).standard_normal(4 * n + 8).astype(np.float32)

out = np.zeros_like(x); lib["float4_offsets"](n, out, x)
want = np.zeros_like(x); want[1:1 + 4 * n] = x[2:2 + 4 * n] * 2 + 1
np.testing.assert_array_equal(out, want)

out = np.zeros_like(x); lib["float4_helper"](n, out, x)
want = np.zeros_like(x); want[3:3 + 4 * n] = x[1:1 + 4 * n] * 3
np.testing.assert_array_equal(out, want)

h = x.astype(np.float16); hout = np.zeros_like(h); lib["half4_offset"](n, hout, h)
hwant = np.zeros_like(h); hwant[1:1 + 4 * n] = h[1:1 + 4 * n] + np.float16(1)
np.testing.assert_array_equal(hout, hwant)

out = np.zeros_like(x); lib["threadgroup_rows"](n, out, x, threadgroup=32)
rows = x[:4 * n].reshape(n // 32, 32, 4)[:, ::-1, :].reshape(-1)
want = np.zeros_like(x); want[2:2 + 4 * n] = rows
np.testing.assert_array_equal(out, want)
print("ok")
"""


@pytest.mark.parametrize("checked", [False, True], ids=["plain", "checked"])
def test_vector_access_through_unaligned_pointers(device, checked, request):
    if checked and device.backend != "cpu":
        pytest.skip("checked mode is a CPU device option")
    # Pointers made by casts check their accesses (metal_unaligned.h) on CUDA and the CPU; checked
    # mode's pointers do not, and g++ moves their vectors as aligned.
    if device.backend == "cpu" and checked and not cpu_kernels_built_by_clang():
        request.applymarker(pytest.mark.xfail(
            strict=True, reason="kernels built by g++: an under-aligned vector access is an aligned move "
                                "(vmovaps) that faults on x86-64 (docs/design.md, Known limits)"))
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(CHILD), device.backend, "1" if checked else "0",
                           SOURCE], capture_output=True, text=True, timeout=300)
    how = f"killed by signal {-proc.returncode}" if proc.returncode < 0 else f"exit status {proc.returncode}"
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", f"{how}\n{proc.stderr[-3000:]}"
