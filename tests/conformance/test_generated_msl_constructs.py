"""Constructs of MSL that other compilers generate and of shared host/MSL headers, found by issue
P2.0's second survey (naga's output for wgpu, SPIRV-Cross's for MoltenVK, MetalPetal:
docs/msl-corpus.md), each in a kernel of our own checked against NumPy on every device:

* reserved names the source declares (`__local_invocation_id`, `__i0`, `_RESERVED_m0`);
* `threadgroup T& x` kernel parameters, with and without [[threadgroup(n)]];
* shifts whose count is a vector of another integer type (`int2 << uint2`);
* `device S& __restrict b` parameters and [[clang::optnone]] helpers (SPIRV-Cross), and an
  overload of a library function that calls the library's (`transpose(spvStorageMatrix)`);
* render-stage functions beside kernels; a scalar written to a texture;
* as_type called without `using namespace metal`; templates overloaded by address space given
  `&ref.member[i]`, their parameter passed to atomics; `thread_scope_threadgroup` unqualified;
* <simd/simd.h>'s type names and <TargetConditionals.h>'s macros.
"""

from __future__ import annotations

import numpy as np

from mcconf import KernelSet, assert_equal, compile_once

KS = KernelSet([
    """
// naga's spelling: a reserved parameter name, reserved loop counters, a reserved member.
struct gm_box { float _RESERVED_m0[4]; };
kernel void gm_reserved(const device gm_box* in [[buffer(0)]], device float* out [[buffer(1)]],
                        uint3 __local_invocation_id [[thread_position_in_threadgroup]],
                        uint3 __global_id [[thread_position_in_grid]]) {
    float __acc = 0.0f;
    for (int __i0 = 0; __i0 < 4; __i0++) __acc += in[__global_id.x]._RESERVED_m0[__i0] * float(__i0 + 1);
    out[__global_id.x] = __acc + float(__local_invocation_id.x) * 1000.0f;
}
""",
    """
// Workgroup variables as naga writes them: references, the second without an index (Metal
// gives it the first free one, 0).
struct gm_tile { float v[32]; };
struct gm_count { atomic_uint n; uint pad[3]; };
kernel void gm_threadgroup_refs(const device float* x [[buffer(0)]], device float* sums [[buffer(1)]],
                                device uint* counts [[buffer(2)]],
                                threadgroup gm_count& count [[threadgroup(1)]],
                                threadgroup gm_tile& tile,
                                uint lid [[thread_position_in_threadgroup]],
                                uint group [[threadgroup_position_in_grid]],
                                uint i [[thread_position_in_grid]]) {
    if (lid == 0) atomic_store_explicit(&count.n, 0u, memory_order_relaxed);
    tile.v[lid] = x[i];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (x[i] > 0.0f) atomic_fetch_add_explicit(&count.n, 1u, memory_order_relaxed);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (lid == 0) {
        float s = 0.0f;
        for (uint k = 0; k < 32; ++k) s += tile.v[k];
        sums[group] = s;
        counts[group] = atomic_load_explicit(&count.n, memory_order_relaxed);
    }
}
""",
    """
// WGSL's shift counts are u32: naga writes `int2 << uint2` and `uint3 >> int3`-like mixes.
kernel void gm_mixed_shifts(const device int2* a [[buffer(0)]], const device uint2* s [[buffer(1)]],
                            device int2* left [[buffer(2)]], device int2* right [[buffer(3)]],
                            device uint4* u [[buffer(4)]], uint i [[thread_position_in_grid]]) {
    left[i] = a[i] << s[i];
    right[i] = a[i] >> s[i];
    uint4 w = uint4(0x80000000u, 0xF0u, 7u, 1u);
    w >>= int4(int(s[i].x), 4, 1, 0);
    u[i] = w << ushort4(0, 1, 2, ushort(s[i].y));
}
""",
    """
// SPIRV-Cross's buffer references and float-control helpers.
struct gm_ssbo { float4 v[8]; };
template <typename T> [[clang::optnone]] T gm_fadd(T l, T r) { return fma(T(1), l, r); }
kernel void gm_restrict_refs(device gm_ssbo& __restrict src [[buffer(0)]], device gm_ssbo& __restrict dst [[buffer(1)]],
                             uint i [[thread_position_in_grid]]) {
    dst.v[i] = gm_fadd(src.v[i], float4(0.5f));
}
""",
    """
// SPIRV-Cross's spvStorageMatrix: an overload of a library function calling the library's own.
struct gm_stored { float2x2 m; };
float2x2 transpose(gm_stored s) { return transpose(s.m) * 2.0f; }
kernel void gm_library_named_overload(const device float4* in [[buffer(0)]], device float4* out [[buffer(1)]],
                                      uint i [[thread_position_in_grid]]) {
    gm_stored s;
    s.m = float2x2(in[i].xy, in[i].zw);
    float2x2 t = transpose(s);
    out[i] = float4(t[0], t[1]);
}
""",
    """
// naga's atomics helpers: a template overloaded by address space, given the address of an
// element of a device reference's member or of a threadgroup variable; a fence with an
// unqualified thread scope (SPIRV-Cross).
struct gm_counters { atomic_uint c[4]; };
template <typename A> uint gm_bump(device A* p, uint v) { return atomic_fetch_add_explicit(p, v, memory_order_relaxed); }
template <typename A> uint gm_bump(threadgroup A* p, uint v) {
    return atomic_fetch_add_explicit(p, v * 100u, memory_order_relaxed);
}
kernel void gm_space_template_addresses(device gm_counters& dev [[buffer(0)]], device uint* out [[buffer(1)]],
                                        uint lid [[thread_position_in_threadgroup]],
                                        uint group [[threadgroup_position_in_grid]], uint i [[thread_position_in_grid]]) {
    threadgroup gm_counters tg;
    if (lid < 4) atomic_store_explicit(&tg.c[lid], 0u, memory_order_relaxed);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    gm_bump(&dev.c[i % 4], 1u);
    gm_bump(&tg.c[lid % 4], 1u);
    atomic_thread_fence(mem_flags::mem_threadgroup, memory_order_seq_cst, thread_scope_threadgroup);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (lid < 4) out[group * 4 + lid] = atomic_load_explicit(&tg.c[lid], memory_order_relaxed);
}
""",
    """
// naga's overrides-atomicCompareExchangeWeak: the same overloads given the address of a whole
// object, a threadgroup reference parameter, a threadgroup variable or a device reference.
template <typename A> uint gm_bump_whole(device A* p, uint v) {
    return atomic_fetch_add_explicit(p, v, memory_order_relaxed);
}
template <typename A> uint gm_bump_whole(threadgroup A* p, uint v) {
    return atomic_fetch_add_explicit(p, v * 100u, memory_order_relaxed);
}
kernel void gm_space_template_whole(device atomic_uint& dev [[buffer(0)]], device uint* out [[buffer(1)]],
                                    threadgroup atomic_uint& a, uint lid [[thread_position_in_threadgroup]],
                                    uint group [[threadgroup_position_in_grid]]) {
    threadgroup atomic_uint t;
    if (lid == 0) {
        atomic_store_explicit(&a, 0u, memory_order_relaxed);
        atomic_store_explicit(&t, 0u, memory_order_relaxed);
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    gm_bump_whole(&dev, 1u);
    gm_bump_whole(&a, 1u);
    gm_bump_whole(&t, 2u);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (lid == 0) {
        out[2 * group] = atomic_load_explicit(&a, memory_order_relaxed);
        out[2 * group + 1] = atomic_load_explicit(&t, memory_order_relaxed);
    }
}
""",
])


def test_reserved_names_declared_by_the_source(device, rng):
    n = 40
    x = rng.uniform(-1, 1, (n, 4)).astype(np.float32)
    out = np.zeros(n, np.float32)
    KS.get(device, "gm_reserved")(n, x, out, threadgroup=8)
    ref = (x.astype(np.float64) * np.arange(1, 5)).sum(1) + (np.arange(n) % 8) * 1000.0
    np.testing.assert_allclose(out, ref, rtol=1e-6, atol=1e-5)


def test_threadgroup_reference_parameters(device, rng):
    groups = 5
    x = rng.uniform(-1, 1, groups * 32).astype(np.float32)
    sums = np.zeros(groups, np.float32)
    counts = np.zeros(groups, np.uint32)
    # index 0: the tile (128 bytes); index 1: the counter (16 bytes, Metal's multiple)
    KS.get(device, "gm_threadgroup_refs")(groups * 32, x, sums, counts, threadgroup=32, threadgroup_memory=[128, 16])
    tiles = x.reshape(groups, 32)
    np.testing.assert_allclose(sums, tiles.astype(np.float64).sum(1), rtol=1e-5, atol=1e-5)
    assert_equal(counts, (tiles > 0).sum(1).astype(np.uint32))


def test_shift_counts_of_another_integer_type(device, rng):
    n = 16
    a = rng.integers(-1000, 1000, (n, 2)).astype(np.int32)
    s = rng.integers(0, 12, (n, 2)).astype(np.uint32)
    left = np.zeros((n, 2), np.int32)
    right = np.zeros((n, 2), np.int32)
    u = np.zeros((n, 4), np.uint32)
    KS.get(device, "gm_mixed_shifts")(n, a, s, left, right, u)
    assert_equal(left, a << s.astype(np.int32))  # |a| < 1000, s < 12: no overflow
    assert_equal(right, a >> s.astype(np.int32))  # arithmetic: the left operand is signed
    w = np.array([0x80000000, 0xF0, 7, 1], np.uint64)
    w = w >> np.stack([s[:, 0], np.full(n, 4), np.full(n, 1), np.zeros(n)], 1).astype(np.uint64)
    w = w << np.stack([np.zeros(n), np.ones(n), np.full(n, 2), s[:, 1]], 1).astype(np.uint64)
    assert_equal(u, (w & 0xFFFFFFFF).astype(np.uint32))


def test_restrict_references_and_optnone_helper(device, rng):
    src = rng.uniform(-4, 4, (8, 4)).astype(np.float32)
    dst = np.zeros((8, 4), np.float32)
    KS.get(device, "gm_restrict_refs")(8, src, dst)
    assert_equal(dst, src + np.float32(0.5))


# naga's files have no `using namespace metal`: as_type is an operator of the language there.
NO_USING = """
#include <metal_stdlib>
#include <simd/simd.h>

kernel void gm_as_type_unqualified(const device float* x [[buffer(0)]], device uint* bits [[buffer(1)]],
                                   device int* back [[buffer(2)]], metal::uint3 i [[thread_position_in_grid]]) {
    bits[i.x] = as_type<uint>(x[i.x]);
    back[i.x] = as_type<int>(as_type<float>(bits[i.x]) + 1.0f);
}
"""


def test_as_type_without_using_namespace_metal(device, rng):
    x = rng.uniform(-3, 3, 20).astype(np.float32)
    bits = np.zeros(20, np.uint32)
    back = np.zeros(20, np.int32)
    compile_once(device, NO_USING).gm_as_type_unqualified(20, x, bits, back)
    assert_equal(bits, x.view(np.uint32))
    assert_equal(back, (x + np.float32(1)).view(np.int32))


# A header shared with the host (MetalPetal's MTIShaderLib.h, Apple's samples): simd types,
# and TargetConditionals' platform macros, a Mac's.
SHARED_HEADER = """
#include <metal_stdlib>
#include <simd/simd.h>
#include <TargetConditionals.h>
using namespace metal;
#if !defined(TARGET_OS_SIMULATOR) || !defined(TARGET_OS_IPHONE)
#error TargetConditionals not read
#endif
#if TARGET_OS_IPHONE || TARGET_OS_SIMULATOR || !TARGET_OS_OSX
#define GM_PLATFORM_SCALE 2.0f
#else
#define GM_PLATFORM_SCALE 1.0f
#endif
typedef struct {
    matrix_float4x4 transform;
    vector_float4 offset;
    simd_float2 scale;
    simd_uint2 size;
} gm_uniforms;

kernel void gm_simd_types(constant gm_uniforms& u [[buffer(0)]], const device simd_float4* p [[buffer(1)]],
                          device vector_float4* out [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    if (i >= u.size.x * u.size.y) return;
    vector_float4 q = u.transform * p[i] + u.offset;
    out[i] = q * simd_float4(u.scale, 1.0f, 1.0f) * GM_PLATFORM_SCALE;
}
"""


def test_simd_header_types_and_target_conditionals(device, rng):
    uniforms = np.dtype([("transform", np.float32, (4, 4)), ("offset", np.float32, 4), ("scale", np.float32, 2),
                         ("size", np.uint32, 2)], align=True)
    u = np.zeros(1, uniforms)
    m = rng.uniform(-1, 1, (4, 4)).astype(np.float32)
    u["transform"][0] = m  # MSL's matrices are columns: row c of this array is column c
    u["offset"][0] = [1, 2, 3, 4]
    u["scale"][0] = [0.5, -2]
    u["size"][0] = [3, 4]
    p = rng.uniform(-1, 1, (12, 4)).astype(np.float32)
    out = np.zeros((12, 4), np.float32)
    compile_once(device, SHARED_HEADER).gm_simd_types(12, u, p, out)
    ref = p.astype(np.float64) @ m.astype(np.float64) + [1, 2, 3, 4]
    ref *= [0.5, -2, 1, 1]
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)


# A library with render-stage functions beside its kernels (MetalPetal's, naga's files): the
# kernels run; the vertex and fragment functions are left out, and asking for one is an error.
MIXED_STAGES = """
#include <metal_stdlib>
using namespace metal;
struct gm_vertex_out { float4 position [[position, invariant]]; float2 uv [[user(locn0)]]; };
vertex gm_vertex_out gm_vertex(uint vid [[vertex_id]], const device float4* pos [[buffer(0)]]) {
    gm_vertex_out o;
    o.position = pos[vid];
    o.uv = pos[vid].xy;
    return o;
}
float gm_shade(float2 uv) { return uv.x * 2.0f + uv.y; }
[[early_fragment_tests]] fragment float4 gm_fragment(gm_vertex_out in [[stage_in]], texture2d<float> t [[texture(0)]],
                                                     sampler s [[sampler(0)]]) {
    if (in.uv.x < 0.0f) discard_fragment();
    return t.sample(s, in.uv) * dfdx(in.uv.x) + gm_shade(in.uv);
}
kernel void gm_compute_beside_render(const device float2* uv [[buffer(0)]], device float* out [[buffer(1)]],
                                     uint i [[thread_position_in_grid]]) {
    out[i] = gm_shade(uv[i]);
}
[[fragment]] half4 gm_fragment_attribute(gm_vertex_out in [[stage_in]]) { return half4(in.uv.x); }
"""


def test_render_functions_beside_kernels(device, rng):
    lib = compile_once(device, MIXED_STAGES)
    if device.backend != "metal":  # Metal's library lists every function
        assert sorted(lib.function_names) == ["gm_compute_beside_render"]
    uv = rng.uniform(-1, 1, (10, 2)).astype(np.float32)
    out = np.zeros(10, np.float32)
    lib.gm_compute_beside_render(10, uv, out)
    np.testing.assert_allclose(out, uv[:, 0].astype(np.float64) * 2 + uv[:, 1], rtol=1e-6, atol=1e-6)


# MetalPetal's CLAHE writes a scalar to an r32float texture: MSL splats it to the texel vector.
SCALAR_WRITE = """
#include <metal_stdlib>
using namespace metal;
kernel void gm_scalar_texture_write(texture2d<float, access::write> out [[texture(0)]],
                                    const device float* v [[buffer(0)]], uint2 p [[thread_position_in_grid]]) {
    out.write(round(v[p.y * 5 + p.x] * 255.0) / 255.0, p);
}
"""


def test_scalar_written_to_a_texture(device, rng):
    v = rng.uniform(0, 1, (3, 5)).astype(np.float32)
    t = device.texture_from(np.zeros((3, 5, 4), np.float32))
    compile_once(device, SCALAR_WRITE).gm_scalar_texture_write((5, 3), v, textures=[t])
    want = (np.round(v * np.float32(255)) / np.float32(255)).astype(np.float32)
    # fast math may divide by multiplying with the reciprocal: an ulp
    np.testing.assert_allclose(np.asarray(t), np.repeat(want[:, :, None], 4, axis=2), rtol=2.5e-7, atol=0)


def test_overload_calling_the_library_function_of_its_name(device, rng):
    x = rng.uniform(-2, 2, (6, 4)).astype(np.float32)
    out = np.zeros((6, 4), np.float32)
    KS.get(device, "gm_library_named_overload")(6, x, out)
    cols = x.reshape(6, 2, 2)  # float2x2(c0, c1): columns
    assert_equal(out, (cols.transpose(0, 2, 1) * np.float32(2)).reshape(6, 4))


def test_address_space_template_overloads_given_addresses_of_parts(device):
    groups, width = 3, 32
    dev = np.zeros(4, np.uint32)
    out = np.zeros(groups * 4, np.uint32)
    KS.get(device, "gm_space_template_addresses")(groups * width, dev, out, threadgroup=width)
    assert_equal(dev, np.full(4, groups * width // 4, np.uint32))  # the device overload: +1 each
    assert_equal(out, np.full(groups * 4, width // 4 * 100, np.uint32))  # the threadgroup one: +100


def test_address_space_template_overloads_given_addresses_of_whole_objects(device):
    groups, width = 3, 32
    dev = np.zeros(1, np.uint32)
    out = np.zeros(groups * 2, np.uint32)
    KS.get(device, "gm_space_template_whole")(groups * width, dev, out, threadgroup=width, threadgroup_memory=[16])
    assert_equal(dev, np.array([groups * width], np.uint32))  # the device overload: +1 a thread
    assert_equal(out, np.tile(np.array([width * 100, width * 200], np.uint32), groups))  # the threadgroup one
