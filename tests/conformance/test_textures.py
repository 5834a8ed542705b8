"""Textures and samplers in compute kernels (issue P1.6 item 2), on every device (CPU, CUDA,
Metal): read/write round trips
for every pixel-format class, sample with nearest/linear x every address mode x
normalized/pixel coordinates, gather, sizes, 1-D/3-D/array/cube/depth textures, a 3x3 box
blur, checked mode and the argument rules, against NumPy models of Metal's rules."""

from __future__ import annotations

import numpy as np
import pytest

import metalcall as mc
from mcconf import HEADER, KernelSet
from texture_models import (FORMATS, MODES, address, axis, cube_face, decode, encode, filtered_atol, parse,
                            random_raw, raw_dtype, sample_model)

KS = KernelSet([
    """
kernel void tex_rw_float(texture2d<float, access::read> src [[texture(0)]],
                       texture2d<float, access::write> dst [[texture(1)]],
                       device float4* got [[buffer(0)]], const device float4* put [[buffer(1)]],
                       uint2 p [[thread_position_in_grid]]) {
    uint i = p.y * src.get_width() + p.x;
    got[i] = src.read(p);
    dst.write(put[i], p);
}
""",
    """
kernel void tex_rw_int(texture2d<int, access::read> src [[texture(0)]],
                     texture2d<int, access::write> dst [[texture(1)]],
                     device int4* got [[buffer(0)]], const device int4* put [[buffer(1)]],
                     uint2 p [[thread_position_in_grid]]) {
    uint i = p.y * src.get_width() + p.x;
    got[i] = src.read(p);
    dst.write(put[i], p);
}
""",
    """
kernel void tex_rw_uint(texture2d<uint, access::read> src [[texture(0)]],
                      texture2d<uint, access::write> dst [[texture(1)]],
                      device uint4* got [[buffer(0)]], const device uint4* put [[buffer(1)]],
                      uint2 p [[thread_position_in_grid]]) {
    uint i = p.y * src.get_width() + p.x;
    got[i] = src.read(p);
    dst.write(put[i], p);
}
""",
    """
kernel void tex_read_write(texture2d<float, access::read_write> t [[texture(0)]], uint2 p [[thread_position_in_grid]]) {
    t.write(t.read(p) * 2.0f + 1.0f, p);
}
""",
    """
kernel void tex_half(texture2d<half, access::read> src [[texture(0)]], device float4* got [[buffer(0)]],
                   uint2 p [[thread_position_in_grid]]) {
    got[p.y * src.get_width() + p.x] = float4(src.read(p));
}
""",
    """
kernel void tex_sample(texture2d<float> t [[texture(0)]], sampler s [[sampler(0)]],
                     const device float2* uv [[buffer(0)]], device float4* out [[buffer(1)]],
                     uint i [[thread_position_in_grid]]) {
    out[i] = t.sample(s, uv[i]);
}
""",
    """
kernel void tex_gather(texture2d<float> t [[texture(0)]], sampler s [[sampler(0)]],
                     const device float2* uv [[buffer(0)]], device float4* out [[buffer(1)]],
                     uint i [[thread_position_in_grid]]) {
    out[2 * i] = t.gather(s, uv[i]);
    out[2 * i + 1] = t.gather(s, uv[i], int2(0), component::w);
}
""",
    """
constexpr sampler k_linear_repeat(coord::normalized, address::repeat, filter::linear);
constexpr sampler k_pixel_nearest(coord::pixel, filter::nearest, address::clamp_to_edge);
kernel void tex_constexpr_sampler(texture2d<float> t [[texture(0)]], const device float2* uv [[buffer(0)]],
                                device float4* out [[buffer(1)]], uint i [[thread_position_in_grid]]) {
    out[2 * i] = t.sample(k_linear_repeat, uv[i]);
    out[2 * i + 1] = t.sample(k_pixel_nearest, uv[i] * float2(t.get_width(), t.get_height()));
}
""",
    """
kernel void tex_sizes(texture2d<float> a [[texture(0)]], texture3d<float, access::read> b [[texture(1)]],
                    texture2d_array<float, access::read> c [[texture(2)]], texture1d<float, access::read> d [[texture(3)]],
                    texturecube<float, access::read> e [[texture(4)]], device uint* out [[buffer(0)]]) {
    out[0] = a.get_width(); out[1] = a.get_height(); out[2] = a.get_num_mip_levels();
    out[3] = b.get_width(); out[4] = b.get_height(); out[5] = b.get_depth();
    out[6] = c.get_width(); out[7] = c.get_height(); out[8] = c.get_array_size();
    out[9] = d.get_width(); out[10] = e.get_width(); out[11] = e.get_height();
}
""",
    """
kernel void tex_3d(texture3d<float, access::read> src [[texture(0)]], texture3d<float, access::write> dst [[texture(1)]],
                 uint3 p [[thread_position_in_grid]]) {
    dst.write(src.read(p) + float4(p.z), p);
}
""",
    """
kernel void tex_sample3d(texture3d<float> t [[texture(0)]], sampler s [[sampler(0)]], const device float4* uvw [[buffer(0)]],
                       device float4* out [[buffer(1)]], uint i [[thread_position_in_grid]]) {
    out[i] = t.sample(s, uvw[i].xyz);
}
""",
    """
kernel void tex_array(texture2d_array<float, access::read> src [[texture(0)]],
                    texture2d_array<float, access::write> dst [[texture(1)]], uint3 p [[thread_position_in_grid]]) {
    dst.write(src.read(p.xy, p.z) * float(p.z + 1), p.xy, p.z);
}
""",
    """
kernel void tex_sample_array(texture2d_array<float> t [[texture(0)]], sampler s [[sampler(0)]],
                           const device float2* uv [[buffer(0)]], device float4* out [[buffer(1)]],
                           uint i [[thread_position_in_grid]]) {
    out[i] = t.sample(s, uv[i], i % 3);
}
""",
    """
kernel void tex_1d(texture1d<float, access::read> src [[texture(0)]], texture1d<float, access::write> dst [[texture(1)]],
                 texture1d<float> smp [[texture(2)]], sampler s [[sampler(0)]], device float4* out [[buffer(0)]],
                 uint i [[thread_position_in_grid]]) {
    dst.write(src.read(i) + 1.0f, i);
    out[i] = smp.sample(s, (float(i) + 0.25f) / float(smp.get_width()));
}
""",
    """
kernel void tex_cube(texturecube<float, access::read> src [[texture(0)]], texturecube<float> smp [[texture(1)]],
                   sampler s [[sampler(0)]], const device float4* dirs [[buffer(0)]], device float4* out [[buffer(1)]],
                   uint i [[thread_position_in_grid]]) {
    out[2 * i] = src.read(uint2(i % 2, 1), i % 6);
    out[2 * i + 1] = smp.sample(s, dirs[i].xyz);
}
""",
    """
kernel void tex_depth(depth2d<float, access::read> src [[texture(0)]], depth2d<float> smp [[texture(1)]],
                    sampler s [[sampler(0)]], const device float2* uv [[buffer(0)]], device float* out [[buffer(1)]],
                    uint i [[thread_position_in_grid]]) {
    out[2 * i] = src.read(uint2(i % src.get_width(), i / src.get_width()));
    out[2 * i + 1] = smp.sample(s, uv[i]);
}
""",
    """
constexpr sampler k_shadow(filter::linear, compare_func::less_equal);
kernel void tex_depth_compare(depth2d<float> t [[texture(0)]], sampler s [[sampler(0)]],
                              const device float4* q [[buffer(0)]], device float4* out [[buffer(1)]],
                              uint i [[thread_position_in_grid]]) {
    out[3 * i] = float4(t.sample_compare(s, q[i].xy, q[i].z), t.sample_compare(s, q[i].xy, q[i].z, level(q[i].w)),
                        t.sample_compare(k_shadow, q[i].xy, q[i].z), 0.0f);
    out[3 * i + 1] = t.gather_compare(s, q[i].xy, q[i].z);
    out[3 * i + 2] = t.gather_compare(k_shadow, q[i].xy, q[i].z);
}
""",
    """
kernel void tex_box_blur(texture2d<float, access::read> src [[texture(0)]],
                       texture2d<float, access::write> dst [[texture(1)]],
                       uint2 gid [[thread_position_in_grid]]) {
    if (gid.x >= dst.get_width() || gid.y >= dst.get_height()) return;
    const int w = int(src.get_width()), h = int(src.get_height());
    float4 sum = 0.0f;
    for (int dy = -1; dy <= 1; ++dy)
        for (int dx = -1; dx <= 1; ++dx) {
            int x = clamp(int(gid.x) + dx, 0, w - 1), y = clamp(int(gid.y) + dy, 0, h - 1);
            sum += src.read(uint2(x, y));
        }
    dst.write(sum / 9.0f, gid);
}
""",
])


@pytest.mark.parametrize("fmt", FORMATS)
def test_read_write_round_trip(device, rng, fmt):
    n, bits, kind = parse(fmt)
    h, w = 3, 5
    raw = random_raw(rng, (h, w), fmt)
    src = device.texture_from(raw, format=fmt)
    assert src.format == fmt and np.asarray(src).shape == (h, w, n)
    np.testing.assert_array_equal(np.asarray(src), raw)
    dst = device.texture((h, w), fmt)
    if kind in ("uint", "sint"):
        info = np.iinfo(raw_dtype(bits, kind))
        put = rng.integers(max(info.min, -2**31), min(info.max, 2**31 - 1), (h * w, 4), endpoint=True)
        put[0] = [info.max, info.min, 0, 1] if bits < 32 else put[0]
        if bits < 32:  # out of range: saturated (Metal leaves it undefined)
            put[1] = [info.max + 5, info.min - 5, 7, -1 if kind == "sint" else 3]
        ct = np.int32 if kind == "sint" else np.uint32
        put = put.astype(np.int64).clip(np.iinfo(ct).min, np.iinfo(ct).max).astype(ct)
        got = np.zeros((h * w, 4), ct)
        KS.get(device, "tex_rw_int" if kind == "sint" else "tex_rw_uint")((w, h), got, put, textures=[src, dst])
        np.testing.assert_array_equal(got.reshape(h, w, 4), decode(raw, fmt))
    else:
        put = rng.uniform(-1.5, 1.5, (h * w, 4)).astype(np.float32)
        if kind == "unorm":  # out of range clamps; NaN stores 0
            put[0] = [np.nan, 1.0, 2.0, -1.0]
        got = np.zeros((h * w, 4), np.float32)
        KS.get(device, "tex_rw_float")((w, h), got, put, textures=[src, dst])
        np.testing.assert_allclose(got.reshape(h, w, 4), decode(raw, fmt).astype(np.float32), rtol=1e-6, atol=0)
        np.testing.assert_array_equal(np.asarray(dst), encode(put.reshape(h, w, 4), fmt))


def test_read_write_access_and_half(device, rng):
    raw = rng.uniform(-2, 2, (4, 6, 4)).astype(np.float32)
    t = device.texture_from(raw)
    assert t.format == "rgba32float"
    KS.get(device, "tex_read_write")((6, 4), textures=[t])
    np.testing.assert_array_equal(np.asarray(t), raw * 2 + 1)
    h = device.texture_from(raw.astype(np.float16))
    got = np.zeros((24, 4), np.float32)
    KS.get(device, "tex_half")((6, 4), got, textures=[h])
    np.testing.assert_array_equal(got.reshape(4, 6, 4), raw.astype(np.float16).astype(np.float32))


@pytest.mark.parametrize("normalized", [True, False], ids=["normalized", "pixel"])
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("filt", ["nearest", "linear"])
def test_sample(device, rng, filt, mode, normalized):
    if not normalized and mode not in ("clamp_to_edge", "clamp_to_zero"):
        pytest.skip("Metal allows pixel coordinates only with clamp_to_edge or clamp_to_zero")
    fmt = "rgba8unorm" if mode != "clamp_to_zero" else "rg16float"
    h, w = 5, 7
    raw = random_raw(rng, (h, w), fmt)
    channels = parse(fmt)[0]
    t = device.texture_from(raw, format=fmt)
    s = device.sampler(filter=filt, address=mode, normalized=normalized,
                       border_color="opaque_white" if mode == "clamp_to_border" else "transparent_black")
    assert s.filter == filt and s.address == (mode,) * 3 and s.normalized == normalized
    n = 64
    uv = rng.uniform(-1.3, 2.3, (n, 2))
    if not normalized:
        uv = uv * [w, h]
    uv = uv.astype(np.float32)
    out = np.zeros((n, 4), np.float32)
    KS.get(device, "tex_sample")(n, uv, out, textures=[t], samplers=[s])
    texels = decode(raw, fmt)
    want = np.array([sample_model(texels, channels, float(a), float(b), filt, mode, normalized,
                                  "opaque_white" if mode == "clamp_to_border" else "transparent_black")
                     for a, b in uv])
    # Metal's hardware filters with 8-bit fractional weights: within 1/256 of the exact blend.
    np.testing.assert_allclose(out, want, atol=4e-3 if filt == "linear" else 1e-6)


def test_gather(device, rng):
    h, w = 4, 6
    raw = random_raw(rng, (h, w), "rgba32float")
    t = device.texture_from(raw)
    s = device.sampler(address="repeat")
    n = 32
    uv = rng.uniform(-0.5, 1.5, (n, 2)).astype(np.float32)
    out = np.zeros((2 * n, 4), np.float32)
    KS.get(device, "tex_gather")(n, uv, out, textures=[t], samplers=[s])
    for k, (u, v) in enumerate(uv.astype(np.float64)):
        (i0, _), (i1, _) = axis(u, w, True, True)
        (j0, _), (j1, _) = axis(v, h, True, True)
        corners = [(i0, j1), (i1, j1), (i1, j0), (i0, j0)]  # Metal's gather order
        texel = [raw[address(j, h, "repeat"), address(i, w, "repeat")] for i, j in corners]
        np.testing.assert_array_equal(out[2 * k], [c[0] for c in texel])
        np.testing.assert_array_equal(out[2 * k + 1], [c[3] for c in texel])


def test_constexpr_sampler(device, rng):
    h, w = 4, 4
    raw = random_raw(rng, (h, w), "rgba32float")
    t = device.texture_from(raw)
    uv = rng.uniform(0.05, 0.95, (16, 2)).astype(np.float32)
    out = np.zeros((32, 4), np.float32)
    KS.get(device, "tex_constexpr_sampler")(16, uv, out, textures=[t])
    texels = decode(raw, "rgba32float")
    for k, (u, v) in enumerate(uv.astype(np.float64)):
        np.testing.assert_allclose(out[2 * k], sample_model(texels, 4, u, v, "linear", "repeat", True), rtol=1e-5, atol=1e-5)
        px = np.float32(u) * np.float32(w), np.float32(v) * np.float32(h)
        np.testing.assert_array_equal(out[2 * k + 1], sample_model(texels, 4, px[0], px[1], "nearest", "clamp_to_edge", False))


def test_sizes(device):
    a = device.texture((3, 5), "r8unorm")
    b = device.texture((2, 3, 4), "rgba16float")
    c = device.texture((6, 2, 3), "r32float", type="texture2d_array")
    d = device.texture((9,), "rg8snorm")
    e = device.texture((4, 4), "rgba8unorm", type="texturecube")
    assert (a.texture_type, b.texture_type, c.texture_type, d.texture_type, e.texture_type) == (
        "texture2d", "texture3d", "texture2d_array", "texture1d", "texturecube")
    assert np.asarray(b).shape == (2, 3, 4, 4) and np.asarray(d).shape == (9, 2) and np.asarray(e).shape == (6, 4, 4, 4)
    out = np.zeros(12, np.uint32)
    KS.get(device, "tex_sizes")(1, out, textures=[a, b, c, d, e])
    np.testing.assert_array_equal(out, [5, 3, 1, 4, 3, 2, 3, 2, 6, 9, 4, 4])
    assert a.row_pitch >= 5 and b.row_pitch >= 4 * 8 and a.slice_pitch == a.row_pitch * 3


def test_3d_array_1d(device, rng):
    raw = rng.uniform(0, 1, (3, 4, 5, 4)).astype(np.float32)
    src, dst = device.texture_from(raw), device.texture((3, 4, 5), "rgba32float")
    KS.get(device, "tex_3d")((5, 4, 3), textures=[src, dst])
    np.testing.assert_array_equal(np.asarray(dst), raw + np.arange(3, dtype=np.float32)[:, None, None, None])

    s = device.sampler(filter="linear", address="clamp_to_edge")
    uvw = rng.uniform(0, 1, (16, 4)).astype(np.float32)
    out = np.zeros((16, 4), np.float32)
    KS.get(device, "tex_sample3d")(16, uvw, out, textures=[src], samplers=[s])
    for k, (u, v, wq, _) in enumerate(uvw.astype(np.float64)):
        want = np.zeros(4)
        for (z, wz) in axis(wq, 3, True, True):
            for (y, wy) in axis(v, 4, True, True):
                for (x, wx) in axis(u, 5, True, True):
                    want += wx * wy * wz * raw[address(z, 3, "clamp_to_edge"), address(y, 4, "clamp_to_edge"),
                                               address(x, 5, "clamp_to_edge")]
        np.testing.assert_allclose(out[k], want, atol=4e-3)

    arr = device.texture_from(raw, type="texture2d_array")
    assert arr.array_length == 3
    dst2 = device.texture((3, 4, 5), "rgba32float", type="texture2d_array")
    KS.get(device, "tex_array")((5, 4, 3), textures=[arr, dst2])
    np.testing.assert_array_equal(np.asarray(dst2), raw * np.arange(1, 4, dtype=np.float32)[:, None, None, None])
    uv = rng.uniform(0, 1, (9, 2)).astype(np.float32)
    out = np.zeros((9, 4), np.float32)
    KS.get(device, "tex_sample_array")(9, uv, out, textures=[arr], samplers=[device.sampler()])
    for k, (u, v) in enumerate(uv.astype(np.float64)):
        np.testing.assert_array_equal(out[k], sample_model(raw[k % 3], 4, u, v, "nearest", "clamp_to_edge", True))

    line = rng.uniform(0, 1, (8, 4)).astype(np.float32)
    src1 = device.texture_from(line, type="texture1d")
    dst1 = device.texture((8,), "rgba32float")
    out = np.zeros((8, 4), np.float32)
    KS.get(device, "tex_1d")(8, out, textures=[src1, dst1, src1], samplers=[device.sampler()])
    np.testing.assert_array_equal(np.asarray(dst1), line + 1)
    np.testing.assert_array_equal(out, line)


COMPARE = {"less": np.less, "less_equal": np.less_equal, "greater": np.greater, "greater_equal": np.greater_equal,
           "equal": np.equal, "not_equal": np.not_equal, "always": lambda r, t: np.ones_like(t, bool),
           "never": lambda r, t: np.zeros_like(t, bool), "none": lambda r, t: np.zeros_like(t, bool)}


@pytest.mark.parametrize("func", list(COMPARE))
@pytest.mark.parametrize("filt", ["nearest", "linear"])
def test_depth_sample_compare(device, rng, func, filt):
    """sample_compare / gather_compare: the filter blends 1 where `reference OP texel` passes
    (the sampler's compare_func), 0 elsewhere; mip levels by level()."""
    h, w = 6, 8
    levels = [rng.choice([0.25, 0.5, 0.75], (max(1, h >> i), max(1, w >> i))).astype(np.float32) for i in range(3)]
    t = device.texture((h, w), "r32float", type="depth2d", mip_levels=3)
    for i, lv in enumerate(levels):
        t.level(i)[..., 0] = lv
    s = device.sampler(filter=filt, mip_filter="nearest", compare_func=func)
    assert s.compare_func == func
    n = 24
    q = np.zeros((n, 4), np.float32)
    q[:, :2] = rng.uniform(-0.1, 1.1, (n, 2))
    q[:, 2] = rng.choice([0.25, 0.5, 0.75, 0.6], n)  # reference values equal to texels too
    q[:, 3] = rng.choice([0.0, 1.0, 2.0], n)
    out = np.zeros((3 * n, 4), np.float32)
    KS.get(device, "tex_depth_compare")(n, q, out, textures=[t], samplers=[s])
    op = COMPARE[func]

    def passed(level, ref, other=op):
        return other(np.float32(ref), level)[..., None].astype(np.float64)

    for i, (u, v, ref, lod) in enumerate(q.astype(np.float64)):
        want0 = sample_model(passed(levels[0], ref), 1, u, v, filt, "clamp_to_edge", True)[0]
        want_lod = sample_model(passed(levels[int(lod)], ref), 1, u, v, filt, "clamp_to_edge", True)[0]
        want_shadow = sample_model(passed(levels[0], ref, np.less_equal), 1, u, v, "linear", "clamp_to_edge", True)[0]
        np.testing.assert_allclose(out[3 * i, :2], [want0, want_lod], rtol=0,
                                   atol=filtered_atol(device, 1e-6) if filt == "linear" else 1e-6)
        np.testing.assert_allclose(out[3 * i, 2], want_shadow, rtol=0, atol=filtered_atol(device, 1e-6))
        (i0, _), (i1, _) = axis(u, w, True, True)
        (j0, _), (j1, _) = axis(v, h, True, True)
        corners = [(i0, j1), (i1, j1), (i1, j0), (i0, j0)]
        texel = [levels[0][address(j, h, "clamp_to_edge"), address(i, w, "clamp_to_edge")] for i, j in corners]
        np.testing.assert_array_equal(out[3 * i + 1], op(np.float32(ref), np.array(texel)).astype(np.float32))
        np.testing.assert_array_equal(out[3 * i + 2], np.less_equal(np.float32(ref), np.array(texel)).astype(np.float32))
    with pytest.raises(mc.ArgumentError, match="unknown compare function 'lequal'"):
        device.sampler(compare_func="lequal")


def test_cube_and_depth(device, rng):
    faces = rng.uniform(0, 1, (6, 2, 2, 4)).astype(np.float32)
    cube = device.texture((2, 2), "rgba32float", type="texturecube")
    np.asarray(cube)[...] = faces
    dirs = np.array([[1, 0.1, 0.2, 0], [-1, 0.2, -0.3, 0], [0.1, 1, 0.2, 0], [0.2, -1, -0.1, 0],
                     [0.3, -0.2, 1, 0], [-0.1, 0.2, -1, 0]], np.float32)
    out = np.zeros((12, 4), np.float32)
    KS.get(device, "tex_cube")(6, dirs, out, textures=[cube, cube], samplers=[device.sampler()])
    for i, (x, y, z, _) in enumerate(dirs.astype(np.float64)):
        np.testing.assert_array_equal(out[2 * i], faces[i % 6, 1, i % 2])
        face, u, v = cube_face(x, y, z)
        assert face == i  # each direction picks the face Metal's table gives
        np.testing.assert_array_equal(out[2 * i + 1], sample_model(faces[face], 4, u, v, "nearest", "clamp_to_edge", True))

    depth = rng.uniform(0, 1, (3, 4)).astype(np.float32)
    d = device.texture_from(depth, type="depth2d")
    uv = rng.uniform(0, 1, (12, 2)).astype(np.float32)
    out = np.zeros(24, np.float32)
    KS.get(device, "tex_depth")(12, uv, out, textures=[d, d], samplers=[device.sampler(filter="linear")])
    np.testing.assert_array_equal(out[0::2], depth.reshape(-1))
    want = [sample_model(decode(depth[..., None], "r32float"), 1, u, v, "linear", "clamp_to_edge", True)[0]
            for u, v in uv.astype(np.float64)]
    np.testing.assert_allclose(out[1::2], want, atol=4e-3)


def test_box_blur(device, rng):
    h, w = 17, 23
    img = rng.integers(0, 256, (h, w, 4), dtype=np.uint8)
    src, dst = device.texture_from(img), device.texture((h, w), "rgba8unorm")
    KS.get(device, "tex_box_blur")((w, h), textures=[src, dst])
    assert KS.get(device, "tex_box_blur").benchmark((w, h), repeat=2, warmup=1, textures=[src, dst]).min > 0
    f = img.astype(np.float64) / 255
    padded = np.pad(f, ((1, 1), (1, 1), (0, 0)), mode="edge")
    blur = sum(padded[1 + dy:1 + dy + h, 1 + dx:1 + dx + w] for dy in (-1, 0, 1) for dx in (-1, 0, 1)) / 9
    got = np.asarray(dst).astype(np.int64)
    want = np.rint(blur * 255).astype(np.int64)
    assert np.max(np.abs(got - want)) <= 1  # float32 sums vs float64


def test_texels_through_a_buffer_binding(device):
    """A Texture passed where a kernel takes a buffer is its texels in place (a Buffer of its device, not
    a host copy): in a batch, a call that writes them so and a later one that reads them through the
    texture see one memory (on Metal, in separate compute passes: P2.1 item 3)."""
    lib = device.compile(HEADER + """
kernel void fill(device float* x [[buffer(0)]], uint i [[thread_position_in_grid]]) { x[i] = float(i); }
kernel void copy_out(texture2d<float, access::read> t [[texture(0)]], device float* out [[buffer(0)]],
                     uint2 g [[thread_position_in_grid]]) { out[g.y * t.get_width() + g.x] = t.read(g).x; }
""")
    tex = device.texture((5, 12), "r32float")
    out = device.empty(5 * 12, np.float32)
    with device.batch():
        lib.fill(tex.nbytes // 4, tex)
        lib.copy_out((12, 5), out, textures=[tex])
    rows = tex.row_pitch // 4
    want = (np.arange(5)[:, None] * rows + np.arange(12)[None, :]).astype(np.float32)
    np.testing.assert_array_equal(np.asarray(out).reshape(5, 12), want)
    np.testing.assert_array_equal(np.asarray(tex)[..., 0], want)


# ---- argument rules and checked mode -------------------------------------------------------

def test_argument_errors(device):
    k = KS.get(device, "tex_read_write")
    t = device.texture((2, 2), "rgba32float")
    with pytest.raises(mc.ArgumentError, match=r"texture\(0\) 't'.*textures=\[...\]"):
        k((2, 2))
    with pytest.raises(mc.ArgumentError, match=r"no \[\[texture\(1\)\]\]"):
        k((2, 2), textures=[t, t])
    with pytest.raises(mc.ArgumentError, match="integers"):
        k((2, 2), textures=[device.texture((2, 2), "rgba8uint")])
    with pytest.raises(mc.ArgumentError, match="texture3d"):
        k((2, 2), textures=[device.texture((2, 2, 2), "rgba32float")])
    with pytest.raises(mc.ArgumentError, match="usage"):
        k((2, 2), textures=[device.texture((2, 2), "rgba32float", usage="read")])
    with pytest.raises(mc.ArgumentError, match="unknown pixel format 'rgba8float'"):
        device.texture((2, 2), "rgba8float")
    with pytest.raises(mc.ArgumentError, match="sampler"):
        KS.get(device, "tex_sample")(1, np.zeros(2, np.float32), np.zeros(4, np.float32), textures=[t])
    with pytest.raises(mc.ArgumentError, match="unknown sampler address mode"):
        device.sampler(address="wrap")


def test_checked_mode_out_of_range():
    dev = mc.Device("cpu", checked=True)
    lib = dev.compile(HEADER + """
kernel void oob(texture2d<float, access::read_write> t [[texture(0)]], uint2 p [[thread_position_in_grid]]) {
    t.write(t.read(p + uint2(1, 0)), p);
}
""")
    t = dev.texture((3, 3), "r32float")
    lib.oob((2, 3), textures=[t])  # in range
    with pytest.raises(mc.ExecutionError, match=r"texture\(0\) read at \(3, 0, 0\) is outside the texture \(3 x 3 x 1\)"):
        lib.oob((3, 3), textures=[t])


def test_compile_errors(device):
    with pytest.raises(mc.CompileError, match=r"'t' has \[\[texture\(n\)\]\] but type 'float'") as e:
        device.compile(HEADER + "kernel void k(device float* t [[texture(0)]], uint i [[thread_position_in_grid]])"
                       " { t[i] = 1.0f; }\n")
    assert e.value.line == 3
    with pytest.raises(mc.CompileError, match="element type must be float, half, int"):
        device.compile(HEADER + "kernel void k(texture2d<bool, access::read> t [[texture(0)]]) {}\n")


def test_reflection(device):
    params = KS.get(device, "tex_sample").params
    assert params[0]["kind"] == "texture" and params[0]["binding"] == 0 and params[0]["type"] == "texture2d<float>"
    assert params[1]["kind"] == "sampler" and params[1]["binding"] == 0
    assert params[2]["kind"] == "buffer" and params[2]["binding"] == 0


def test_batch_record_and_update(device):
    k = KS.get(device, "tex_sample")
    t = device.texture_from(np.ones((2, 2, 4), np.float32))
    s = device.sampler(filter="linear")
    uv = device.asarray(np.full((4, 2), 0.5, np.float32))
    out = device.zeros((4, 4), np.float32)
    with device.batch():
        k(4, uv, out, textures=[t], samplers=[s])
    np.testing.assert_array_equal(np.asarray(out), 1)
    with device.record() as g:
        k(4, uv, out, textures=[t], samplers=[s])
    np.asarray(t)[...] = 2  # the graph reads the texture anew on every replay
    g.replay().wait()
    np.testing.assert_array_equal(np.asarray(out), 2)
    out2 = device.zeros((4, 4), np.float32)
    g.update(0, uv, out2)  # textures and samplers stay as recorded
    g.replay().wait()
    np.testing.assert_array_equal(np.asarray(out2), 2)


def test_texture_from_formats_and_errors(device):
    cases = [(np.uint8, 4, "rgba8unorm"), (np.int8, 2, "rg8snorm"), (np.uint16, 1, "r16unorm"),
             (np.int16, 4, "rgba16snorm"), (np.float16, 2, "rg16float"), (np.float32, 1, "r32float"),
             (np.uint32, 4, "rgba32uint"), (np.int32, 2, "rg32sint")]
    for dtype, channels, fmt in cases:
        t = device.texture_from(np.zeros((3, 5, channels), dtype))
        assert t.format == fmt and (t.width, t.height) == (5, 3) and np.asarray(t).dtype == dtype
    assert device.texture_from(np.zeros((3, 5), np.uint8)).format == "r8unorm"
    assert device.texture_from(np.zeros((3, 5, 4), np.uint8), format="rgba8uint").format == "rgba8uint"
    assert "texture2d rgba8unorm 5x3" in repr(device.texture_from(np.zeros((3, 5, 4), np.uint8)))
    with pytest.raises(mc.ArgumentError, match="float64"):
        device.texture_from(np.zeros((3, 5, 4)))
    with pytest.raises(mc.ArgumentError, match="c in 1, 2, 4"):
        device.texture_from(np.zeros((3, 5, 3), np.uint8))
    with pytest.raises(mc.ArgumentError, match="does not match"):
        device.texture_from(np.zeros((3, 5, 4), np.uint8), format="rgba16float")
    with pytest.raises(mc.ArgumentError, match="square"):
        device.texture((3, 4), type="texturecube")
    with pytest.raises(mc.ArgumentError, match="r32float"):
        device.texture((3, 4), "rgba8unorm", type="depth2d")
