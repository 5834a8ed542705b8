"""Vector components written through `v[i]` into a local vector that a constant initialised,
then copied (returned, assigned, passed on) and read by name, in kernels that write buffers.

On the H200 `gt_resize<float, 4>(v.xyz).x` (test_generated_msl_types.py) read 0: NVVM (NVRTC
12.9 and 13) drops such a write in a kernel with a restrict pointer it writes through, and the
CUDA translation qualified every buffer pointer. It now qualifies pointers to read-only memory
only, and leaves out a source's own restrict on writable parameters. Each column here is
one form of the construct, checked against NumPy on every device, with and without restrict
written in the source.
"""

from __future__ import annotations

import numpy as np
import pytest

from mcconf import KernelSet, assert_equal

BODY = """
    const float a = x[i];
    const uint k = i % 4;
    out[i * 12 + 0] = vw_set_at(a, 0).x;
    out[i * 12 + 1] = vw_set_at(a, 2).z;
    out[i * 12 + 2] = vw_set_any(a, k)[k];
    float4 q = float4(1.0f, 2.0f, 3.0f, 4.0f);
    q[3] = a;
    float4 q2 = q;
    out[i * 12 + 3] = q2.w;
    float2 h = float2(0.0f);
    h[1] = a;
    float2 h2;
    h2 = h;
    out[i * 12 + 4] = h2.y;
    float3 t = float3(0.0f);
    t[k % 3] = a;
    float3 t2 = t;
    out[i * 12 + 5] = t2.x + t2.y + t2.z;
    out[i * 12 + 6] = float(vw_int_at(int(a), 1).y);
    out[i * 12 + 7] = float(vw_half_at(half(a), 3).w);
    out[i * 12 + 8] = vw_resize<float, 4>(float3(a, 2.0f * a, 3.0f * a)).x;
    float4 z = {};
    z[1] = a;
    out[i * 12 + 9] = vw_pass(z).y;
    packed_float4 p = packed_float4(0.0f);
    p[2] = a;
    packed_float4 p2 = p;
    out[i * 12 + 10] = p2.z;
    float4x4 m = float4x4(0.0f);
    m[2][1] = a;
    float4x4 m2 = m;
    out[i * 12 + 11] = m2[2].y;
}
"""

HELPERS = """
inline float4 vw_set_at(float a, int k) { float4 r = float4(0.0f); r[k] = a; return r; }
inline float4 vw_set_any(float a, uint k) { float4 r = float4(-1.0f); r[k] = a; return r; }
inline int3 vw_int_at(int a, int k) { int3 r = int3(0); r[k] = a; return r; }
inline half4 vw_half_at(half a, int k) { half4 r = half4(0.0h); r[k] = a; return r; }
inline float4 vw_pass(float4 v) { return v; }
template<typename T, uint Vdst, uint Vsrc>
inline vec<T, Vdst> vw_resize(vec<T, Vsrc> v) { vec<T, Vdst> r = vec<T, Vdst>(T(0)); r[0] = v[Vsrc - 1]; return r; }
"""

KS = KernelSet([
    "kernel void vw_plain(const device float* x [[buffer(0)]], device float* out [[buffer(1)]],\n"
    "                     uint i [[thread_position_in_grid]]) {" + BODY,
    "kernel void vw_restrict(const device float* __restrict x [[buffer(0)]], device float* __restrict out [[buffer(1)]],\n"
    "                        device uint* __restrict__ flag [[buffer(2)]], uint i [[thread_position_in_grid]]) {\n"
    "    if (i == 0) flag[0] = 1u;" + BODY,
], preamble=HELPERS)


def expected(x):
    a = x.astype(np.float32)
    want = np.zeros((len(x), 12), np.float32)
    want[:, 0] = a
    want[:, 1] = a
    want[:, 2] = a
    want[:, 3] = a
    want[:, 4] = a
    want[:, 5] = a
    want[:, 6] = a.astype(np.int32).astype(np.float32)
    want[:, 7] = a.astype(np.float16).astype(np.float32)
    want[:, 8] = np.float32(3) * a
    want[:, 9] = a
    want[:, 10] = a
    want[:, 11] = a
    return want


@pytest.mark.parametrize("name", ["vw_plain", "vw_restrict"])
def test_components_written_by_index_survive_copies(device, rng, name):
    n = 64
    x = rng.uniform(-100, 100, n).astype(np.float32)
    out = np.full(n * 12, -7.0, np.float32)
    if name == "vw_plain":
        KS.get(device, name)(n, x, out)
    else:
        flag = np.zeros(1, np.uint32)
        KS.get(device, name)(n, x, out, flag)
        assert_equal(flag, np.array([1], np.uint32))
    assert_equal(out.reshape(n, 12), expected(x))
