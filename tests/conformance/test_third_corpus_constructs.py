"""Constructs of the third corpus's public sources (Paddle-Lite's Metal backend, MoltenVK's command
shaders: docs/msl-corpus.md) that metalcall refused or failed to compile, each in a kernel of our
own checked against NumPy on every device:

* a texture's element type given by a typedef or using alias (`typedef half ftype;
  texture2d_array<ftype, access::read>`: every Paddle-Lite kernel), also through two aliases and
  in an array of textures;
* pragmas Clang ignores: one that starts with no name (`#pragma -`, Paddle-Lite's section marks)
  and `#pragma region` / `endregion`;
* `typedef struct alignas(8) { ... } Name;` (MoltenVK's visibility buffers: the front end took
  the name for a mutable program-scope variable) and `__attribute__((packed))` on a struct, before
  or after its body, with Clang's layouts (sizeof 5 for a packed uchar and int);
* the indirect-argument and tessellation-factor structs of Apple's metal_stdlib
  (`MTLDrawIndexedPrimitivesIndirectArguments`, `MTLDispatchThreadgroupsIndirectArguments`,
  `MTLQuadTessellationFactorsHalf` ...), which GPU-driven kernels write (MoltenVK), with Metal's
  layouts;
* `abs` of a bool (Paddle-Lite's `abs(x <= 1e-6) ? a : b`), which Apple's compiler promotes to int;
* a function template `f(device T*, constant T*)` given two pointers cast from untyped buffers
  (MoltenVK's `populateTriIndxsFromTriFan(&((device uint16_t*)dst)[i], &((constant
  uint16_t*)src)[j], ...)`): the translation made both parameters the prelude's cast-pointer type,
  from which T does not deduce;
* C++20 designated initializers of the source's structs (`tint_module_vars_struct{.s=s}`, in
  nearly every Tint compute shader): NVRTC's C++17 refused them ("expected an expression"); they
  are written positionally, a skipped member value-initialised;
* `os_log_default` (MSL 3.2's default log, which Tint's WGSL `print` writes to): messages are
  accepted and discarded, the kernel's results are unchanged.
"""

from __future__ import annotations

import numpy as np

from mcconf import KernelSet

KS = KernelSet([
    """
typedef half tc_ftype;
typedef tc_ftype tc_ftype_again;
typedef half4 tc_ftype4;
using tc_itype = int;
kernel void tc_alias_textures(texture2d_array<tc_ftype, access::read> src [[texture(0)]],
                              texture2d_array<tc_ftype_again, access::write> dst [[texture(1)]],
                              texture2d<tc_itype, access::read_write> counts [[texture(2)]],
                              array<texture2d<tc_ftype, access::read>, 2> pair [[texture(3)]],
                              const device tc_ftype4* scale [[buffer(0)]],
                              uint3 gid [[thread_position_in_grid]]) {
    const tc_ftype4 v = src.read(gid.xy, gid.z);
    dst.write(v * scale[gid.z] + tc_ftype4(1), gid.xy, gid.z);
    if (gid.z == 0)
        counts.write(counts.read(gid.xy) + int4(int(gid.x), int(gid.y), 1, int(pair[1].read(gid.xy).x)), gid.xy);
}
""",
    """
#pragma mark -
#pragma -
#pragma region helpers
float tc_twice(float x) { return 2.0f * x; }
#pragma endregion
kernel void tc_pragmas(device float* x [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    x[i] = tc_twice(x[i]) + 1.0f;
}
""",
    """
typedef struct alignas(8) {
    uint count;
    uint countHigh;
} tc_visibility;
typedef struct alignas(8) {
    atomic_uint count;
    atomic_uint countHigh;
} tc_atomic_visibility;
typedef struct {
    int x;
    int y;
    int z;
} __attribute__((packed)) tc_offset3;
struct __attribute__((packed)) tc_packed_pair {
    uchar tag;
    int value;
};
typedef struct alignas(16) { float a; } tc_aligned16;
kernel void tc_struct_attributes(const device tc_visibility* v [[buffer(0)]], const device tc_offset3* o [[buffer(1)]],
                                 const device tc_packed_pair* p [[buffer(2)]], const device tc_aligned16* f [[buffer(3)]],
                                 device tc_atomic_visibility* total [[buffer(4)]], device int* out [[buffer(5)]],
                                 uint i [[thread_position_in_grid]]) {
    out[5 * i + 0] = int(v[i].count) - int(v[i].countHigh);
    out[5 * i + 1] = o[i].x + o[i].y * o[i].z;
    out[5 * i + 2] = p[i].value + int(p[i].tag);
    out[5 * i + 3] = int(f[i].a * 4.0f);
    out[5 * i + 4] = int(sizeof(tc_visibility) * 1000 + sizeof(tc_offset3) * 100 + sizeof(tc_packed_pair) * 10 +
                         sizeof(tc_aligned16) / 16);
    atomic_fetch_add_explicit(&total->count, v[i].count, memory_order_relaxed);
    atomic_fetch_add_explicit(&total->countHigh, 1u, memory_order_relaxed);
}
""",
    """
kernel void tc_indirect_arguments(const device uint* counts [[buffer(0)]],
                                  device MTLDrawIndexedPrimitivesIndirectArguments* indexed [[buffer(1)]],
                                  device MTLDispatchThreadgroupsIndirectArguments* dispatches [[buffer(2)]],
                                  device MTLDrawPrimitivesIndirectArguments* draws [[buffer(3)]],
                                  device MTLDrawPatchIndirectArguments* patches [[buffer(4)]],
                                  device MTLQuadTessellationFactorsHalf* quads [[buffer(5)]],
                                  device MTLTriangleTessellationFactorsHalf* triangles [[buffer(6)]],
                                  device uint* sizes [[buffer(7)]],
                                  uint i [[thread_position_in_grid]]) {
    const uint n = counts[i];
    indexed[i].indexCount = n * 3;
    indexed[i].instanceCount = 2;
    indexed[i].indexStart = i;
    indexed[i].baseVertex = -int(i);
    indexed[i].baseInstance = n % 11;
    dispatches[i].threadgroupsPerGrid[0] = (n + 31) / 32;
    dispatches[i].threadgroupsPerGrid[1] = 1;
    dispatches[i].threadgroupsPerGrid[2] = i + 1;
    draws[i] = {n, 1, i * 4, 9};
    MTLDrawPatchIndirectArguments p;
    p.patchCount = n / 4;
    p.instanceCount = 3;
    p.patchStart = i * 2;
    p.baseInstance = 0;
    patches[i] = p;
    for (int e = 0; e < 4; ++e) quads[i].edgeTessellationFactor[e] = half(float(e) + float(i) * 0.5f);
    quads[i].insideTessellationFactor[0] = 1.5h;
    quads[i].insideTessellationFactor[1] = half(n & 7);
    for (int e = 0; e < 3; ++e) triangles[i].edgeTessellationFactor[e] = half(e * 2 + 1);
    triangles[i].insideTessellationFactor = 0.25h;
    if (i == 0) {
        sizes[0] = sizeof(MTLDrawIndexedPrimitivesIndirectArguments);
        sizes[1] = sizeof(MTLDispatchThreadgroupsIndirectArguments);
        sizes[2] = sizeof(MTLDrawPrimitivesIndirectArguments);
        sizes[3] = sizeof(MTLDrawPatchIndirectArguments);
        sizes[4] = sizeof(MTLQuadTessellationFactorsHalf);
        sizes[5] = sizeof(MTLTriangleTessellationFactorsHalf);
    }
}
""",
    """
kernel void tc_abs_bool(const device float4* x [[buffer(0)]], device float* lowest [[buffer(1)]],
                        device int* count [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    const float4 v = x[i];
    float m = 100.0f;
    m = abs(v.x <= 1e-6) ? m : min(m, v.x);
    m = abs(v.y <= 1e-6) ? m : min(m, v.y);
    m = abs(v.z <= 1e-6) ? m : min(m, v.z);
    m = abs(v.w <= 1e-6) ? m : min(m, v.w);
    lowest[i] = m;
    auto c = abs(v.x > 0.0f) + abs(v.y > 0.0f) + abs(v.z > 0.0f) + abs(v.w > 0.0f);
    count[i] = c + abs(true) * 10;
}
""",
    """
template <typename T>
static inline void tc_widen(device T* dst, constant T* src, uint n, T restart) {
    for (uint i = 0; i < n; ++i) dst[i] = src[i] == restart ? T(0) : T(src[i] + T(1));
}
kernel void tc_cast_template_args(device void* dst [[buffer(0)]], constant void* src [[buffer(1)]],
                                  constant uint& start [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    if (i == 0)
        tc_widen(&((device uint16_t*)dst)[start], &((constant uint16_t*)src)[start], 8u, (uint16_t)0xFFFF);
    else
        tc_widen((device uint32_t*)dst + 16 + start, (constant uint32_t*)src + 8 + start, 4u, 0xFFFFFFFFu);
}
""",
    """
kernel void tc_default_log(device float* x [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    os_log_default.log("[ compute ] value %f", x[i]);
    metal::os_log_default.log_info("twice");
    x[i] = x[i] * 2.0f + 0.5f;
}
""",
    """
struct tc_module_vars {
    device float* out;
    const device float* in;
    uint n;
    float scale;
};
struct tc_pair { int a; int b; };
struct tc_nested { tc_pair p; float f; };
kernel void tc_designated(device float* out [[buffer(0)]], const device float* in [[buffer(1)]],
                          uint i [[thread_position_in_grid]]) {
    tc_module_vars const vars = tc_module_vars{.out=out, .in=in, .scale=2.5f};  // n skipped: 0
    const tc_nested nest = tc_nested{.p = tc_pair{.b = int(i)}, .f = vars.in[i]};
    vars.out[i] = nest.f * vars.scale + float(nest.p.b) + float(nest.p.a) + float(vars.n);
}
""",
])


def test_alias_textures(device, rng):
    slices, h, w = 3, 4, 5
    src = (rng.integers(-32, 32, (slices, h, w, 4)) / 8).astype(np.float16)
    scale = np.array([[0.5, 2, -1, 0.25], [1, 1, 1, 1], [-2, 0.5, 4, -0.25]], np.float16)
    counts = rng.integers(-100, 100, (h, w, 4)).astype(np.int32)
    pair1 = rng.integers(0, 50, (h, w, 4)).astype(np.float16)
    t_src = device.texture_from(src, format="rgba16float", type="texture2d_array")
    t_dst = device.texture((slices, h, w), "rgba16float", type="texture2d_array")
    t_counts = device.texture_from(counts, format="rgba32sint")
    t_pair0 = device.texture_from(np.zeros((h, w, 4), np.float16), format="rgba16float")
    t_pair1 = device.texture_from(pair1, format="rgba16float")
    KS.get(device, "tc_alias_textures")((w, h, slices), scale, textures=[t_src, t_dst, t_counts, t_pair0, t_pair1])
    # products of eighths and powers of two, then + 1: exact in half
    want = src.astype(np.float64) * scale[:, None, None, :].astype(np.float64) + 1
    np.testing.assert_array_equal(np.asarray(t_dst).astype(np.float64), want)
    y, x = np.mgrid[0:h, 0:w]
    add = np.stack([x, y, np.ones_like(x), pair1[..., 0].astype(np.int32)], -1)
    np.testing.assert_array_equal(np.asarray(t_counts), counts + add)


def test_ignored_pragmas(device, rng):
    x = rng.integers(-1000, 1000, 37).astype(np.float32)
    want = 2 * x + 1
    KS.get(device, "tc_pragmas")(x.size, x)
    np.testing.assert_array_equal(x, want)


def test_struct_attributes(device, rng):
    n = 40
    vis = rng.integers(0, 1 << 20, (n, 2)).astype(np.uint32)
    offsets = rng.integers(-1000, 1000, (n, 3)).astype(np.int32)
    packed = np.zeros(n, np.dtype([("tag", "u1"), ("value", "<i4")], align=False))
    packed["tag"] = rng.integers(0, 256, n)
    packed["value"] = rng.integers(-(1 << 30), 1 << 30, n)
    assert packed.dtype.itemsize == 5
    aligned = np.zeros((n, 4), np.float32)  # a float and 12 bytes of padding each
    aligned[:, 0] = rng.integers(-100, 100, n) / 4
    total = np.zeros(2, np.uint32)
    out = np.zeros((n, 5), np.int32)
    KS.get(device, "tc_struct_attributes")(n, vis, offsets, packed.view(np.uint8), aligned, total, out)
    np.testing.assert_array_equal(out[:, 0], vis[:, 0].astype(np.int64) - vis[:, 1])
    np.testing.assert_array_equal(out[:, 1], offsets[:, 0] + offsets[:, 1] * offsets[:, 2])
    np.testing.assert_array_equal(out[:, 2], packed["value"] + packed["tag"].astype(np.int32))
    np.testing.assert_array_equal(out[:, 3], (aligned[:, 0] * 4).astype(np.int32))
    np.testing.assert_array_equal(out[:, 4], np.full(n, 8 * 1000 + 12 * 100 + 5 * 10 + 1))
    np.testing.assert_array_equal(total, [vis[:, 0].sum(dtype=np.uint64) % (1 << 32), n])


INDEXED = np.dtype([("indexCount", "<u4"), ("instanceCount", "<u4"), ("indexStart", "<u4"), ("baseVertex", "<i4"),
                    ("baseInstance", "<u4")])
DRAW = np.dtype([("vertexCount", "<u4"), ("instanceCount", "<u4"), ("vertexStart", "<u4"), ("baseInstance", "<u4")])
PATCH = np.dtype([("patchCount", "<u4"), ("instanceCount", "<u4"), ("patchStart", "<u4"), ("baseInstance", "<u4")])
QUAD = np.dtype([("edge", "<f2", 4), ("inside", "<f2", 2)])
TRIANGLE = np.dtype([("edge", "<f2", 3), ("inside", "<f2")])


def test_indirect_arguments(device, rng):
    n = 19
    counts = rng.integers(0, 5000, n).astype(np.uint32)
    indexed = np.zeros(n, INDEXED)
    dispatches = np.zeros((n, 3), np.uint32)
    draws, patches = np.zeros(n, DRAW), np.zeros(n, PATCH)
    quads, triangles = np.zeros(n, QUAD), np.zeros(n, TRIANGLE)
    sizes = np.zeros(6, np.uint32)
    views = [a.view(np.uint8) for a in (indexed, draws, patches, quads, triangles)]
    KS.get(device, "tc_indirect_arguments")(n, counts, views[0], dispatches, views[1], views[2], views[3], views[4],
                                            sizes)
    np.testing.assert_array_equal(sizes, [20, 12, 16, 16, 12, 8])
    i = np.arange(n, dtype=np.uint32)
    np.testing.assert_array_equal(indexed["indexCount"], counts * 3)
    np.testing.assert_array_equal(indexed["instanceCount"], np.full(n, 2))
    np.testing.assert_array_equal(indexed["indexStart"], i)
    np.testing.assert_array_equal(indexed["baseVertex"], -i.astype(np.int32))
    np.testing.assert_array_equal(indexed["baseInstance"], counts % 11)
    np.testing.assert_array_equal(dispatches, np.stack([(counts + 31) // 32, np.ones(n), i + 1], 1))
    np.testing.assert_array_equal(draws.tolist(), [(c, 1, k * 4, 9) for k, c in enumerate(counts.tolist())])
    np.testing.assert_array_equal(patches.tolist(), [(c // 4, 3, k * 2, 0) for k, c in enumerate(counts.tolist())])
    np.testing.assert_array_equal(quads["edge"], np.arange(4)[None, :] + i[:, None] * 0.5)
    np.testing.assert_array_equal(quads["inside"], np.stack([np.full(n, 1.5), counts & 7], 1))
    np.testing.assert_array_equal(triangles["edge"], np.tile([1, 3, 5], (n, 1)))
    np.testing.assert_array_equal(triangles["inside"], np.full(n, 0.25))


def test_abs_of_bool(device, rng):
    x = rng.integers(-3, 4, (50, 4)).astype(np.float32)
    x[::7] = 1e-7  # not above the threshold: left out
    lowest = np.zeros(50, np.float32)
    count = np.zeros(50, np.int32)
    KS.get(device, "tc_abs_bool")(50, x, lowest, count)
    kept = np.where(x <= 1e-6, np.float32(100), x)
    np.testing.assert_array_equal(lowest, np.minimum(kept.min(1), 100))
    np.testing.assert_array_equal(count, (x > 0).sum(1) + 10)


def test_cast_pointers_into_a_template(device, rng):
    src = rng.integers(0, 60000, 64).astype(np.uint16)
    src[[3, 21]] = 0xFFFF
    src32 = src.view(np.uint32)  # the second thread reads the same bytes as 32-bit words
    dst = np.full(64, 7, np.uint16)
    start = 2
    KS.get(device, "tc_cast_template_args")(2, dst, src, np.uint32(start))
    want = dst.copy()
    s16 = src[start:start + 8].astype(np.int64)
    want[start:start + 8] = np.where(s16 == 0xFFFF, 0, s16 + 1)
    w32 = want.view(np.uint32)
    s32 = src32[8 + start:8 + start + 4].astype(np.int64)
    w32[16 + start:16 + start + 4] = np.where(s32 == 0xFFFFFFFF, 0, s32 + 1)
    np.testing.assert_array_equal(dst, want)


def test_default_log(device, rng):
    x = rng.integers(-100, 100, 33).astype(np.float32)
    want = x * 2 + 0.5
    KS.get(device, "tc_default_log")(x.size, x)
    np.testing.assert_array_equal(x, want)


def test_designated_initializers(device, rng):
    x = rng.integers(-100, 100, 40).astype(np.float32)
    out = np.zeros(40, np.float32)
    KS.get(device, "tc_designated")(40, out, x)
    np.testing.assert_array_equal(out, x * 2.5 + np.arange(40))
