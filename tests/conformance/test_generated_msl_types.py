"""Type constructs of generated MSL (SPIRV-Cross's output for MoltenVK; issue P2.0's second
survey, docs/msl-corpus.md), each in a kernel of our own checked against NumPy on every device:

* `vec<T, N>` deduced into a template parameter declared `uint N`, `ushort N` or `size_t N`
  (Apple's vec is an ext_vector alias, whose size deduces into any integer type), as in
  SPIRV-Cross's `template<typename T, uint V, uint N> spvArrayCopyFromConstantToStack(thread T
  (&dst)[N], constant vec<T, V> (&src)[N])`, and into `int N` as before;
* `coherent device S&` / `coherent device T*` (SPIRV-Cross's coherent buffers): parameters,
  struct members, locals assigned and reassigned, a `thread &` to such a pointer;
* vectors written and read through `volatile device S&` (SPIRV-Cross's spelling of GLSL's
  `coherent` buffers: `no viable overloaded '='` before), float, half and uint vectors;
* `simdgroup_float8x8::storage_type` (SPIRV-Cross's cooperative-matrix length: a lane's
  elements, 2 of an 8x8 matrix over 32 lanes), the type thread_elements() gives.
"""

from __future__ import annotations

import numpy as np

from mcconf import KernelSet, assert_equal

KS = KernelSet([
    """
template<typename T, uint N> inline T gt_total(vec<T, N> v) { T s = T(0); for (uint i = 0; i < N; ++i) s += v[i]; return s; }
template<typename T, ushort N> inline T gt_last(thread const vec<T, N>& v) { return v[N - 1]; }
template<typename T, size_t N> inline T gt_scaled(vec<T, N> v) { return v[0] * T(N); }
template<typename T, int N> inline T gt_mid(vec<T, N> v) { return v[N / 2]; }
template<typename T, unsigned int N> inline vec<T, N> gt_twice(vec<T, N> v) { return v + v; }
template<typename T, uint Vdst, uint Vsrc>
inline enable_if_t<Vdst != Vsrc, vec<T, Vdst>> gt_resize(vec<T, Vsrc> v) { vec<T, Vdst> r = vec<T, Vdst>(T(0)); r[0] = v[Vsrc - 1]; return r; }
kernel void gt_vec_sizes(const device float4* x [[buffer(0)]], device float* out [[buffer(1)]],
                         device uint* u [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    float4 v = x[i];
    out[i * 6 + 0] = gt_total(v);
    out[i * 6 + 1] = gt_last(v);
    out[i * 6 + 2] = gt_scaled(v.xy);
    out[i * 6 + 3] = gt_mid(v.xyz);
    out[i * 6 + 4] = gt_total(gt_twice(v.zw));
    out[i * 6 + 5] = gt_resize<float, 4>(v.xyz).x;
    u[i] = gt_total(uint3(i, 7u, 100u)) + gt_last(ushort2(3, ushort(i)));
}
""",
    """
struct gt_bda { float v; };
struct gt_ssbo { uint v; };
struct gt_regs { coherent device gt_bda* p; };
static inline __attribute__((always_inline)) void gt_bump(coherent device gt_ssbo& s) { s.v += 2u; }
static inline __attribute__((always_inline)) void gt_add(coherent device gt_bda* const thread & s) { s->v += 6.0f; }
kernel void gt_coherent(coherent device gt_ssbo& counter [[buffer(0)]], device gt_bda* items [[buffer(1)]],
                        uint i [[thread_position_in_grid]]) {
    if (i == 0) {
        counter.v += 10u;
        gt_bump(counter);
    }
    gt_regs regs;
    regs.p = items + i;
    coherent device gt_bda* tmp = regs.p;
    tmp->v += 4.0f;
    coherent device gt_bda* param = tmp;
    gt_add(param);
    param = items + i;
    param->v *= 2.0f;
}
""",
    """
struct gt_vol { float4 value; half2 h; uint3 u; };
kernel void gt_volatile_vectors(volatile device gt_vol& __restrict box [[buffer(0)]], device float4* out [[buffer(1)]],
                                uint i [[thread_position_in_grid]]) {
    if (i != 0) return;
    float4 before = box.value;
    box.value = before * 2.0f + float4(1.0f, 2.0f, 3.0f, 4.0f);
    box.h = half2(1.5h, -2.0h);
    box.u = uint3(7u, 8u, 9u);
    float4 r = box.value;
    half2 hh = box.h;
    out[0] = r + float4(float(hh.x), float(hh.y), float(box.u[2]), box.value[3]);
    box.value.y = 0.25f;
    out[1] = box.value;
    box.value = float4(3.0f);
}
""",
    """
kernel void gt_sgm_storage(device uint* sizes [[buffer(0)]], device float* sums [[buffer(1)]],
                           uint lane [[thread_index_in_simdgroup]]) {
    if (lane == 0) {
        sizes[0] = uint(sizeof(simdgroup_float8x8::storage_type) / sizeof(float));
        sizes[1] = uint(sizeof(simdgroup_half8x8::storage_type) / sizeof(half));
    }
    simdgroup_float8x8 m = make_filled_simdgroup_matrix<float, 8, 8>(1.5f);
    simdgroup_float8x8::storage_type e = m.thread_elements();
    sums[lane] = e.x + e.y;
}
""",
])


def test_vector_sizes_deduced_into_any_integer_type(device, rng):
    n = 24
    x = rng.uniform(-8, 8, (n, 4)).astype(np.float32)
    out = np.zeros((n, 6), np.float32)
    u = np.zeros(n, np.uint32)
    KS.get(device, "gt_vec_sizes")(n, x, out, u)
    f = np.float32
    np.testing.assert_allclose(out[:, 0], x.astype(np.float64).sum(1), rtol=1e-6, atol=1e-5)
    assert_equal(out[:, 1], x[:, 3])
    assert_equal(out[:, 2], x[:, 0] * f(2))
    assert_equal(out[:, 3], x[:, 1])
    np.testing.assert_allclose(out[:, 4], 2 * (x[:, 2].astype(np.float64) + x[:, 3]), rtol=1e-6, atol=1e-5)
    assert_equal(out[:, 5], x[:, 2])
    i = np.arange(n, dtype=np.uint32)
    assert_equal(u, i + 107 + i)


SPV_COPY = """
#include <metal_stdlib>
using namespace metal;

template<typename T, uint V, uint N>
inline void spvArrayCopyFromConstantToStack(thread T (&dst)[N], constant vec<T, V> (&src)[N])
{
    for (uint i = 0; i < N; i++) dst[i] = src[i][0];
}
template<typename T, uint Vdst, uint Vsrc, uint N>
inline enable_if_t<Vdst != Vsrc> spvArrayCopyFromStackToStack(thread vec<T, Vdst> (&dst)[N], thread const vec<T, Vsrc> (&src)[N])
{
    for (uint i = 0; i < N; i++) dst[i] = vec<T, Vdst>(src[i].xy, T(V_FILL), T(Vsrc));
}
constant float3 gt_table[3] = { float3(1.0, 2.0, 3.0), float3(4.0, 5.0, 6.0), float3(7.0, 8.0, 9.0) };

kernel void gt_spv_array_copy(device float* out [[buffer(0)]], device float4* wide [[buffer(1)]],
                              uint i [[thread_position_in_grid]]) {
    float firsts[3];
    spvArrayCopyFromConstantToStack(firsts, gt_table);
    out[i] = firsts[0] + firsts[1] * 10.0 + firsts[2] * 100.0 + float(i);
    float2 narrow[2] = { float2(float(i), 1.0), float2(2.0, 3.0) };
    float4 w[2];
    spvArrayCopyFromStackToStack(w, narrow);
    wide[i * 2] = w[0];
    wide[i * 2 + 1] = w[1];
}
""".replace("V_FILL", "0.5")


def test_spirv_cross_array_copies_of_vectors(device):
    from mcconf import compile_once

    n = 5
    out = np.zeros(n, np.float32)
    wide = np.zeros((n * 2, 4), np.float32)
    compile_once(device, SPV_COPY).gt_spv_array_copy(n, out, wide)
    assert_equal(out, np.float32(741) + np.arange(n, dtype=np.float32))
    want = np.zeros((n, 2, 4), np.float32)
    want[:, 0] = np.stack([np.arange(n), np.ones(n), np.full(n, 0.5), np.full(n, 2.0)], 1)
    want[:, 1] = [2.0, 3.0, 0.5, 2.0]
    assert_equal(wide, want.reshape(n * 2, 4))


def test_coherent_device_references_and_pointers(device):
    n = 16
    counter = np.array([5], np.uint32)
    items = np.arange(n, dtype=np.float32)
    KS.get(device, "gt_coherent")(n, counter, items)
    assert_equal(counter, np.array([17], np.uint32))
    assert_equal(items, (np.arange(n, dtype=np.float32) + 10) * 2)


def test_simdgroup_matrix_storage_type(device):
    sizes = np.zeros(2, np.uint32)
    sums = np.zeros(32, np.float32)
    KS.get(device, "gt_sgm_storage")(32, sizes, sums, threadgroup=32)
    assert_equal(sizes, np.array([2, 2], np.uint32))
    assert_equal(sums, np.full(32, 3.0, np.float32))


def test_vectors_through_volatile_device_references(device):
    box = np.zeros(12, np.float32)  # float4 at 0, half2 at 16, uint3 at 32: 48 bytes
    box[:4] = [1.0, -2.0, 0.5, 8.0]
    out = np.zeros((2, 4), np.float32)
    KS.get(device, "gt_volatile_vectors")(1, box, out)
    r = np.array([1.0, -2.0, 0.5, 8.0], np.float32) * 2 + np.array([1, 2, 3, 4], np.float32)
    assert_equal(out[0], r + np.array([1.5, -2.0, 9.0, r[3]], np.float32))
    assert_equal(out[1], np.array([r[0], 0.25, r[2], r[3]], np.float32))
    assert_equal(box[:4], np.full(4, 3.0, np.float32))
    assert_equal(box[4:5].view(np.float16), np.array([1.5, -2.0], np.float16))
    assert_equal(box[8:11].view(np.uint32), np.array([7, 8, 9], np.uint32))
