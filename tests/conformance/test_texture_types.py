"""The layered and multisampled texture types and arrays of textures (issue P2.0, second
corpus): texturecube_array, depth2d_array, depthcube, depthcube_array, texture2d_ms,
texture2d_ms_array, depth2d_ms, depth2d_ms_array with the member functions the MSL
specification gives each, `array<texture2d<T>, N>` / `const array<...>` kernel parameters
(N texture indices, bound as Metal binds them) read through array_ref, and
memory_coherence_device textures: on every device against NumPy models of Metal's rules."""

from __future__ import annotations

import numpy as np
import pytest

import metalcall as mc
from mcconf import KernelSet
from texture_models import address, axis, cube_face, cube_gather_model, cube_sample_model, sample_model

KS = KernelSet([
    """
kernel void tt_cube_array(texturecube_array<float, access::read> src [[texture(0)]],
                          texturecube_array<float> smp [[texture(1)]],
                          texturecube_array<float, access::write> dst [[texture(2)]],
                          sampler s [[sampler(0)]], const device float4* dirs [[buffer(0)]],
                          device float4* out [[buffer(1)]], device uint* sizes [[buffer(2)]],
                          uint i [[thread_position_in_grid]]) {
    const uint n = src.get_array_size();
    out[3 * i] = src.read(uint2(i % 2, 1), i % 6, i % n);
    out[3 * i + 1] = smp.sample(s, dirs[i].xyz, uint(dirs[i].w));
    out[3 * i + 2] = smp.gather(s, dirs[i].xyz, uint(dirs[i].w), component::y);
    // One texel per thread (cube i % n, face i / n): two writes to one texel race, and which
    // lands is not defined (i % 6 for the face had threads i and i + 6 meet).
    dst.write(float4(float(i)), uint2(i % 2, 0), (i / n) % 6, i % n);
    if (i == 0) {
        sizes[0] = n;
        sizes[1] = src.get_width();
        sizes[2] = src.get_height();
    }
}
""",
    """
kernel void tt_depth_array(depth2d_array<float, access::read> src [[texture(0)]], depth2d_array<float> smp [[texture(1)]],
                           sampler s [[sampler(0)]], const device float4* q [[buffer(0)]],
                           device float4* out [[buffer(1)]], uint i [[thread_position_in_grid]]) {
    const uint e = uint(q[i].w);
    out[3 * i] = float4(src.read(uint2(i % src.get_width(), 1), min(e, src.get_array_size() - 1)), smp.sample(s, q[i].xy, e),
                        smp.sample_compare(s, q[i].xy, e, q[i].z), float(src.get_array_size()));
    out[3 * i + 1] = smp.gather(s, q[i].xy, e);
    out[3 * i + 2] = smp.gather_compare(s, q[i].xy, e, q[i].z);
}
""",
    """
kernel void tt_depth_cube(depthcube<float> c [[texture(0)]], depthcube_array<float> ca [[texture(1)]],
                          depthcube<float, access::read> cr [[texture(2)]], sampler s [[sampler(0)]],
                          const device float4* dirs [[buffer(0)]], device float4* out [[buffer(1)]],
                          uint i [[thread_position_in_grid]]) {
    const float3 d = dirs[i].xyz;
    const uint e = uint(dirs[i].w);
    out[3 * i] = float4(c.sample(s, d), ca.sample(s, d, e), c.sample_compare(s, d, 0.5f), ca.sample_compare(s, d, e, 0.5f));
    out[3 * i + 1] = c.gather(s, d);
    out[3 * i + 2] = float4(cr.read(uint2(i % 2, 1), i % 6), float(ca.get_array_size()), c.gather_compare(s, d, 0.5f).x,
                            ca.gather(s, d, e).w);
}
""",
    """
kernel void tt_ms(texture2d_ms<float> t [[texture(0)]], depth2d_ms<float> d [[texture(1)]],
                  texture2d_ms_array<uint> ta [[texture(2)]], depth2d_ms_array<float, access::read> da [[texture(3)]],
                  device float4* out [[buffer(0)]], device uint4* outu [[buffer(1)]],
                  uint3 p [[thread_position_in_grid]]) {
    const uint i = (p.z * t.get_height() + p.y) * t.get_width() + p.x;
    out[i] = float4(t.read(p.xy, p.z).xy, d.read(p.xy, p.z), da.read(p.xy, 1, p.z));
    outu[i] = uint4(ta.read(p.xy, 1, p.z).x, t.get_num_samples(), ta.get_array_size(), da.get_num_samples());
}
""",
    """
// A helper that takes any number of textures, as MSL's array_ref does.
static float4 weighted(array_ref<texture2d<float>> ts, uint2 p) {
    float4 sum = 0.0f;
    for (uint k = 0; k < ts.size(); ++k) sum += ts[k].read(p) * float(k + 1);
    return sum;
}
kernel void tt_texture_arrays(array<texture2d<float>, 3> ts [[texture(0)]],
                              const array<texture2d<float, access::read>, 2> more [[texture(3)]],
                              texture2d<float, access::write, memory_coherence_device> dst [[texture(5)]],
                              uint2 p [[thread_position_in_grid]]) {
    dst.write(weighted(ts, p) + more[0].read(p) * 10.0f + more[1].read(p) * 100.0f, p);
}
""",
])


def gather_model(img, u, v, component=0):
    """gather on one 2-D image, clamp_to_edge: component c of the 2x2 linear footprint in
    Metal's order (i0, j1), (i1, j1), (i1, j0), (i0, j0)."""
    h, w = img.shape[:2]
    (i0, _), (i1, _) = axis(u, w, True, True)
    (j0, _), (j1, _) = axis(v, h, True, True)
    return [img[address(j, h, "clamp_to_edge"), address(i, w, "clamp_to_edge"), component]
            for i, j in ((i0, j1), (i1, j1), (i1, j0), (i0, j0))]


DIRS = np.array([[1, 0.1, 0.2], [-1, 0.2, -0.3], [0.1, 1, 0.2], [0.2, -1, -0.1], [0.3, -0.2, 1], [-0.1, 0.2, -1],
                 [0.7, 0.5, 0.2], [-0.2, -0.6, 0.5]], np.float32)


def cube_dirs(rng, cubes):
    d = np.zeros((len(DIRS), 4), np.float32)
    d[:, :3] = DIRS
    d[:, 3] = rng.integers(0, cubes + 1, len(DIRS))  # one past the last cube: Metal clamps the index
    return d


def test_texturecube_array(device, rng):
    cubes = 3
    faces = rng.uniform(0, 1, (cubes * 6, 2, 2, 4)).astype(np.float32)
    src = device.texture((cubes, 2, 2), "rgba32float", type="texturecube_array")
    assert src.texture_type == "texturecube_array" and src.array_length == cubes and src.shape == (18, 2, 2, 4)
    np.asarray(src)[...] = faces
    dst = device.texture((cubes, 2, 2), "rgba32float", type="texturecube_array")
    dirs = cube_dirs(rng, cubes)
    n = len(dirs)
    assert n <= 6 * cubes  # a texel per thread
    out = np.zeros((3 * n, 4), np.float32)
    sizes = np.zeros(3, np.uint32)
    KS.get(device, "tt_cube_array")(n, dirs, out, sizes, textures=[src, src, dst],
                                    samplers=[device.sampler(filter="linear")])
    assert sizes.tolist() == [cubes, 2, 2]
    want_dst = np.zeros_like(faces)
    for i, (x, y, z, e) in enumerate(dirs.astype(np.float64)):
        np.testing.assert_array_equal(out[3 * i], faces[(i % cubes) * 6 + i % 6, 1, i % 2])
        # Seamless: footprints past a face's edge take the adjacent face's texels (cube_tap).
        cube = faces[min(int(e), cubes - 1) * 6:][:6]
        np.testing.assert_allclose(out[3 * i + 1], cube_sample_model(cube, x, y, z, "linear"), rtol=0, atol=1e-6)
        np.testing.assert_allclose(out[3 * i + 2], cube_gather_model(cube, x, y, z, component=1), rtol=0, atol=1e-7)
        want_dst[(i % cubes) * 6 + (i // cubes) % 6, 0, i % 2] = i
    np.testing.assert_array_equal(np.asarray(dst), want_dst)


@pytest.mark.parametrize("filt", ["nearest", "linear"])
def test_depth2d_array(device, rng, filt):
    elements, h, w = 3, 4, 5
    depth = rng.choice([0.25, 0.5, 0.75], (elements, h, w)).astype(np.float32)
    t = device.texture_from(depth[..., None], type="depth2d_array")
    assert t.texture_type == "depth2d_array" and t.array_length == elements
    s = device.sampler(filter=filt, compare_func="less")
    n = 16
    q = np.zeros((n, 4), np.float32)
    q[:, :2] = rng.uniform(-0.1, 1.1, (n, 2))
    q[:, 2] = rng.choice([0.25, 0.5, 0.6], n)
    q[:, 3] = rng.integers(0, elements + 1, n)
    out = np.zeros((3 * n, 4), np.float32)
    KS.get(device, "tt_depth_array")(n, q, out, textures=[t, t], samplers=[s])
    for i, (u, v, ref, e) in enumerate(q.astype(np.float64)):
        img = depth[min(int(e), elements - 1)].astype(np.float64)[..., None]
        np.testing.assert_array_equal(out[3 * i, 0], depth[min(int(e), elements - 1), 1, i % w])
        want = sample_model(img, 1, u, v, filt, "clamp_to_edge", True)[0]
        passed = (np.float64(np.float32(ref)) < img).astype(np.float64)
        want_cmp = sample_model(passed, 1, u, v, filt, "clamp_to_edge", True)[0]
        np.testing.assert_allclose(out[3 * i, 1:], [want, want_cmp, elements], rtol=0, atol=1e-6)
        np.testing.assert_array_equal(out[3 * i + 1], gather_model(img, u, v))
        np.testing.assert_array_equal(out[3 * i + 2], gather_model(passed, u, v))


def test_depthcube_and_depthcube_array(device, rng):
    cubes = 2
    one = rng.choice([0.25, 0.75], (6, 2, 2)).astype(np.float32)
    many = rng.choice([0.25, 0.75], (cubes * 6, 2, 2)).astype(np.float32)
    c = device.texture((2, 2), "r32float", type="depthcube")
    np.asarray(c)[..., 0] = one
    ca = device.texture_from(many[..., None], type="depthcube_array")
    assert ca.array_length == cubes and ca.texture_type == "depthcube_array"
    dirs = cube_dirs(rng, cubes)
    n = len(dirs)
    out = np.zeros((3 * n, 4), np.float32)
    KS.get(device, "tt_depth_cube")(n, dirs, out, textures=[c, ca, c], samplers=[device.sampler(compare_func="less")])
    for i, (x, y, z, e) in enumerate(dirs.astype(np.float64)):
        face, u, v = cube_face(x, y, z)
        img = one[face].astype(np.float64)[..., None]
        img_a = many[min(int(e), cubes - 1) * 6 + face].astype(np.float64)[..., None]
        near = sample_model(img, 1, u, v, "nearest", "clamp_to_edge", True)[0]
        near_a = sample_model(img_a, 1, u, v, "nearest", "clamp_to_edge", True)[0]
        np.testing.assert_array_equal(out[3 * i], [near, near_a, float(0.5 < near), float(0.5 < near_a)])
        # gather is seamless (a corner tap is the mean of three depths, compared by gather_compare).
        g = cube_gather_model(one[..., None], x, y, z)
        g_a = cube_gather_model(many[min(int(e), cubes - 1) * 6:][:6, ..., None], x, y, z)
        np.testing.assert_allclose(out[3 * i + 1], g, rtol=0, atol=1e-7)
        np.testing.assert_allclose(out[3 * i + 2], [one[i % 6, 1, i % 2], cubes, float(0.5 < g[0]), g_a[3]], rtol=0, atol=1e-7)


def test_multisampled(device, rng):
    h, w, samples = 3, 4, 4
    if device.backend == "metal-sim":
        with pytest.raises(mc.ArgumentError, match="render pass"):
            device.texture((h, w), "rgba32float", type="texture2d_ms", sample_count=samples)
        return
    t = device.texture((h, w), "rg32float", type="texture2d_ms", sample_count=samples)
    assert t.sample_count == samples and t.shape == (samples, h, w, 2)
    d = device.texture((h, w), "r32float", type="depth2d_ms", sample_count=samples)
    ta = device.texture((2, h, w), "r32uint", type="texture2d_ms_array", sample_count=samples)
    assert ta.shape == (2 * samples, h, w, 1) and ta.array_length == 2
    da_values = rng.uniform(0, 1, (2 * samples, h, w, 1)).astype(np.float32)
    da = device.texture_from(da_values, type="depth2d_ms_array", sample_count=samples)
    tv = rng.uniform(-1, 1, (samples, h, w, 2)).astype(np.float32)
    dv = rng.uniform(0, 1, (samples, h, w)).astype(np.float32)
    tav = rng.integers(0, 1000, (2 * samples, h, w)).astype(np.uint32)
    np.asarray(t)[...] = tv
    np.asarray(d)[..., 0] = dv
    np.asarray(ta)[..., 0] = tav
    out = np.zeros((samples * h * w, 4), np.float32)
    outu = np.zeros((samples * h * w, 4), np.uint32)
    KS.get(device, "tt_ms")((w, h, samples), out, outu, textures=[t, d, ta, da])
    out, outu = out.reshape(samples, h, w, 4), outu.reshape(samples, h, w, 4)
    np.testing.assert_array_equal(out[..., :2], tv)
    np.testing.assert_array_equal(out[..., 2], dv)
    np.testing.assert_array_equal(out[..., 3], da_values[samples:, ..., 0])  # element 1's samples
    np.testing.assert_array_equal(outu[..., 0], tav[samples:])
    assert (outu[..., 1] == samples).all() and (outu[..., 2] == 2).all() and (outu[..., 3] == samples).all()


def test_multisampled_rules(device):
    if device.backend == "metal-sim":
        pytest.skip("the Metal simulator refuses multisampled textures (test_multisampled)")
    with pytest.raises(mc.ArgumentError, match="1, 2, 4 or 8 samples"):
        device.texture((2, 2), "r32float", type="texture2d_ms", sample_count=3)
    with pytest.raises(mc.ArgumentError, match="sample_count is for the multisampled types"):
        device.texture((2, 2), "r32float", sample_count=4)
    with pytest.raises(mc.ArgumentError, match="1 mip level"):
        device.texture((4, 4), "r32float", type="texture2d_ms", sample_count=2, mip_levels=2)
    with pytest.raises(mc.ArgumentError, match="r32float"):
        device.texture((2, 2), "rgba8unorm", type="depth2d_ms", sample_count=2)
    with pytest.raises(mc.ArgumentError, match="square"):
        device.texture((3, 2, 4), "rgba8unorm", type="texturecube_array")


def test_arrays_of_textures(device, rng):
    h, w = 3, 5
    values = [rng.uniform(0, 1, (h, w, 4)).astype(np.float32) for _ in range(5)]
    ts = [device.texture_from(v) for v in values]
    dst = device.texture((h, w), "rgba32float")
    KS.get(device, "tt_texture_arrays")((w, h), textures=[*ts, dst])
    want = values[0] + 2 * values[1] + 3 * values[2] + 10 * values[3] + 100 * values[4]
    np.testing.assert_allclose(np.asarray(dst), want, rtol=1e-6)


def test_arrays_of_textures_binding_errors(device, rng):
    ts = [device.texture_from(rng.uniform(0, 1, (2, 2, 4)).astype(np.float32)) for _ in range(5)]
    dst = device.texture((2, 2), "rgba32float")
    k = KS.get(device, "tt_texture_arrays")
    with pytest.raises(mc.ArgumentError, match=r"element 1 \(texture\(4\)\) needs a texture: an array of 2 textures"):
        k((2, 2), textures=[*ts[:4], None, dst])
    with pytest.raises(mc.ArgumentError, match=r"element 2 \(texture\(2\)\).*is a texture3d"):
        k((2, 2), textures=[ts[0], ts[1], device.texture((2, 2, 2), "rgba32float"), ts[3], ts[4], dst])
    with pytest.raises(mc.ArgumentError, match=r"no \[\[texture\(6\)\]\] parameter"):
        k((2, 2), textures=[*ts, dst, ts[0]])


def test_texture_array_indices_overlap():
    dev = mc.Device("cpu")
    src = """#include <metal_stdlib>
using namespace metal;
kernel void k(array<texture2d<float>, 3> ts [[texture(0)]], texture2d<float> t [[texture(2)]]) {}
"""
    with pytest.raises(mc.CompileError, match="index 2 is bound twice"):
        dev.compile(src)
