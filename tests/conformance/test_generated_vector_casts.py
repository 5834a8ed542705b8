"""Vector accesses through cast pointers in the forms code generators write (tinygrad's Metal
renderer: a gated, padded or gathered vector load is a conditional whose arm dereferences a
scalar pointer cast to a vector pointer; its threadgroup arrays carry
`__attribute__((aligned(16)))`, repeated in the casts of their upcast accesses), each in a
kernel of our own checked against NumPy on every device:

* `c ? *((device float4*)(p + k)) : float4(0)`, the other arm a local, both arms cast
  dereferences, half4, int4 and threadgroup memory, at addresses a vector's alignment does not
  divide (a scalar's offset): every arm read once, the one taken stored nowhere;
* `(c ? *((device int4*)a) : *((device int4*)b)) = v`: the write reaches the chosen arm's
  memory, and only it;
* `(threadgroup __attribute__((aligned(16))) float4*)(buf + 4 * i)` and the device form, read
  and written, scalar and vector: the attribute after the address space (refused as a pointer
  without one before 2026-12-06).
"""

from __future__ import annotations

import numpy as np

from mcconf import KernelSet

KS = KernelSet([
    """
kernel void gv_gated_loads(device float* out [[buffer(0)]], device const float* p [[buffer(1)]],
                           device const half* h [[buffer(2)]], device const int* q [[buffer(3)]],
                           constant uint& n [[buffer(4)]], constant uint& shift [[buffer(5)]],
                           uint i [[thread_position_in_grid]]) {
    const int k = int(4 * i) - 4 + int(shift);  // vector i reads from 4*(i-1)+shift: shift 1 is misaligned
    float4 keep = float4(-1.0f, -2.0f, -3.0f, -4.0f);
    float4 a = (i > 0) ? *((device float4*)(p + k)) : float4(0.0f, 0.0f, 0.0f, 0.0f);
    float4 b = (i + 1 < n) ? *((device float4*)(p + k + 4)) : keep;
    float4 c = (i % 2 == 0) ? *((device float4*)(p + k + 4)) : *((device float4*)(p + k + 8));
    half4 d = (i > 0) ? *((device half4*)(h + k)) : half4(1.0h);
    int4 e = (i > 0) ? *((device int4*)(q + k)) : int4(7);
    float4 s = a + 10.0f * b + 100.0f * c + 1000.0f * float4(d) + 10000.0f * float4(e);
    *((device float4*)(out + 4 * i)) = s;
}
""",
    """
kernel void gv_gated_store(device int* a [[buffer(0)]], device int* b [[buffer(1)]],
                           constant uint& shift [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    // one thread per vector; each writes one of the two arrays, chosen by a conditional lvalue
    (i % 3 == 0 ? *((device int4*)(a + 4 * i + shift)) : *((device int4*)(b + 4 * i + shift))) = int4(int(i), 1, 2, 3);
}
""",
    """
kernel void gv_threadgroup_attribute_casts(device float* out [[buffer(0)]], device const float* in [[buffer(1)]],
                                           uint lid [[thread_position_in_threadgroup]],
                                           uint g [[threadgroup_position_in_grid]]) {
    threadgroup __attribute__((aligned(16))) float buf[64];
    const uint base = 64 * g;
    *((threadgroup __attribute__((aligned(16))) float4*)(buf + 4 * lid)) =
        *((device __attribute__((aligned(16))) float4*)(in + base + 4 * lid)) * 2.0f;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    // each thread reads its neighbour's vector, gated at the group's end, and a scalar through a cast
    float4 v = (lid + 1 < 16) ? *((threadgroup __attribute__((aligned(16))) float4*)(buf + 4 * (lid + 1))) : float4(0.0f);
    float first = *((threadgroup __attribute__((aligned(16))) float*)(buf));
    *((device __attribute__((aligned(16))) float4*)(out + base + 4 * lid)) = v + first;
}
""",
])


def test_gated_vector_loads(device, rng):
    n = 9
    for shift in (0, 1, 2):
        p = rng.integers(-8, 8, 4 * n + 8).astype(np.float32)
        h = rng.integers(-8, 8, 4 * n + 8).astype(np.float16)
        q = rng.integers(-8, 8, 4 * n + 8).astype(np.int32)
        out = np.full(4 * n, np.nan, np.float32)
        KS.get(device, "gv_gated_loads")(n, out, p, h, q, np.uint32(n), np.uint32(shift)).wait()

        def vec(arr, i, off):
            k = 4 * i - 4 + shift + off
            return arr[k:k + 4].astype(np.float64)

        want = np.zeros((n, 4))
        for i in range(n):
            a = vec(p, i, 0) if i > 0 else np.zeros(4)
            b = vec(p, i, 4) if i + 1 < n else np.array([-1.0, -2, -3, -4])
            c = vec(p, i, 4) if i % 2 == 0 else vec(p, i, 8)
            d = vec(h, i, 0) if i > 0 else np.ones(4)
            e = vec(q, i, 0) if i > 0 else np.full(4, 7.0)
            want[i] = a + 10 * b + 100 * c + 1000 * d + 10000 * e
        np.testing.assert_array_equal(out.reshape(n, 4), want.astype(np.float32), err_msg=f"shift {shift}")


def test_gated_vector_store(device, rng):
    n = 7
    for shift in (0, 1, 3):
        a0 = rng.integers(-100, 100, 4 * n + 4).astype(np.int32)
        b0 = rng.integers(-100, 100, 4 * n + 4).astype(np.int32)
        a, b = a0.copy(), b0.copy()
        KS.get(device, "gv_gated_store")(n, a, b, np.uint32(shift)).wait()
        want_a, want_b = a0.copy(), b0.copy()
        for i in range(n):
            target = want_a if i % 3 == 0 else want_b
            target[4 * i + shift:4 * i + shift + 4] = [i, 1, 2, 3]
        np.testing.assert_array_equal(a, want_a, err_msg=f"shift {shift}")
        np.testing.assert_array_equal(b, want_b, err_msg=f"shift {shift}")


def test_attributes_after_address_spaces_in_casts(device, rng):
    groups = 3
    x = rng.integers(-50, 50, 64 * groups).astype(np.float32)
    out = np.zeros_like(x)
    KS.get(device, "gv_threadgroup_attribute_casts")(16 * groups, out, x, threadgroup=16).wait()
    doubled = 2.0 * x.reshape(groups, 16, 4)
    shifted = np.zeros_like(doubled)
    shifted[:, :15] = doubled[:, 1:]
    want = shifted + doubled[:, :1, :1]
    np.testing.assert_array_equal(out.reshape(groups, 16, 4), want)
