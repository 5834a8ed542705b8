"""GNU extensions that Metal's clang takes and real kernels use (ggml): `__extension__` before
an anonymous union, and range designators in a local array's initializer. NVRTC takes
neither; the CUDA prelude and translator make them portable."""

from __future__ import annotations

import numpy as np

from mcconf import KernelSet, assert_equal

N = 32

KS = KernelSet([
    """
kernel void gnu_extension_union(const device uint* a [[buffer(0)]], device uint* out [[buffer(1)]],
                                uint i [[thread_position_in_grid]]) {
    pair_t p;
    p.lo = ushort(a[i] & 0xffffu);
    p.hi = ushort(a[i] >> 16);
    out[i] = p.both;
}
""",
    """
kernel void gnu_range_designator(const device float* a [[buffer(0)]], device float* out [[buffer(1)]],
                                 uint i [[thread_position_in_grid]]) {
    float s[6] = { [1 ... 4] = 2.5f };     // s[0] and s[5] are zero
    float m[RANGE_N] = { [0 ... RANGE_N - 1] = -1.0f };
    for (int k = 0; k < 6; ++k) out[8 * i + k] = s[k] * a[i];
    out[8 * i + 6] = m[0] + m[RANGE_N - 1];
    out[8 * i + 7] = a[i];
}
""",
], preamble="""
#define RANGE_N 3
typedef struct {
    __extension__ union {
        struct {
            ushort lo;
            ushort hi;
        };
        uint both;
    };
} pair_t;
""")


def test_extension_anonymous_union(device, rng):
    a = rng.integers(0, 2**32, N, dtype=np.uint64).astype(np.uint32)
    out = np.zeros(N, np.uint32)
    KS.get(device, "gnu_extension_union")(N, a, out)
    assert_equal(out, a)


def test_range_designator(device, rng):
    a = (rng.random(N) * 4 - 2).astype(np.float32)
    out = np.zeros(8 * N, np.float32)
    KS.get(device, "gnu_range_designator")(N, a, out)
    s = np.array([0, 2.5, 2.5, 2.5, 2.5, 0], np.float32)
    exp = np.concatenate([s[None, :] * a[:, None], np.full((N, 1), -2.0, np.float32), a[:, None]], axis=1).ravel()
    assert_equal(out, exp)
