"""Mipmapped textures (issue P1.6 item 2) on every device: the storage of each level and its
host view, read/write/get_width/height/depth at a level, a mip chain built by a kernel,
and sample() with level()/bias()/gradient2d() under every mip filter and the sampler's
LOD clamps, against NumPy models of Metal's rules (texture_models.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import metalcall as mc
from mcconf import HEADER, KernelSet
from texture_models import address, axis, decode, metal_filters_in_hardware, parse, random_raw, sample_model

KS = KernelSet([
    """
kernel void mip_down(texture2d<float, access::read> src [[texture(0)]], texture2d<float, access::write> dst [[texture(1)]],
                     constant uint& lod [[buffer(0)]], uint2 p [[thread_position_in_grid]]) {
    if (p.x >= dst.get_width(lod + 1) || p.y >= dst.get_height(lod + 1)) return;
    const uint2 last = uint2(src.get_width(lod) - 1, src.get_height(lod) - 1);
    const uint2 q = p * 2, r = min(q + 1, last);
    const float4 sum = src.read(q, lod) + src.read(uint2(r.x, q.y), lod) + src.read(uint2(q.x, r.y), lod) + src.read(r, lod);
    dst.write(sum * 0.25f, p, lod + 1);
}
""",
    """
kernel void mip_sizes(texture2d<float> a [[texture(0)]], texture3d<float> b [[texture(1)]],
                      texture2d_array<float> c [[texture(2)]], texturecube<float> e [[texture(3)]],
                      depth2d<float> f [[texture(4)]], device uint* out [[buffer(0)]], uint lod [[thread_position_in_grid]]) {
    device uint* o = out + 10 * lod;
    o[0] = a.get_width(lod); o[1] = a.get_height(lod); o[2] = b.get_width(lod); o[3] = b.get_height(lod);
    o[4] = b.get_depth(lod); o[5] = c.get_width(lod); o[6] = c.get_height(lod); o[7] = e.get_width(lod);
    o[8] = f.get_height(lod);
    o[9] = a.get_num_mip_levels() * 10000 + b.get_num_mip_levels() * 1000 + c.get_num_mip_levels() * 100 +
           e.get_num_mip_levels() * 10 + f.get_num_mip_levels();
}
""",
    """
kernel void mip_rw_array(texture2d_array<float, access::read> src [[texture(0)]],
                         texture2d_array<float, access::write> dst [[texture(1)]], constant uint& lod [[buffer(0)]],
                         device float4* out [[buffer(1)]], uint3 p [[thread_position_in_grid]]) {
    out[(p.z * src.get_height(lod) + p.y) * src.get_width(lod) + p.x] = src.read(p.xy, p.z, lod);
    dst.write(float4(p.x, p.y, p.z, lod), p.xy, p.z, lod);
}
""",
    """
kernel void mip_rw_3d(texture3d<float, access::read> src [[texture(0)]], texture3d<float, access::write> dst [[texture(1)]],
                      constant uint& lod [[buffer(0)]], device float4* out [[buffer(1)]], uint3 p [[thread_position_in_grid]]) {
    out[(p.z * src.get_height(lod) + p.y) * src.get_width(lod) + p.x] = src.read(p, lod);
    dst.write(float4(p.x, p.y, p.z, lod), p, lod);
}
""",
    """
kernel void mip_rw_cube(texturecube<float, access::read> src [[texture(0)]], texturecube<float, access::write> dst [[texture(1)]],
                        constant uint& lod [[buffer(0)]], device float4* out [[buffer(1)]], uint3 p [[thread_position_in_grid]]) {
    out[(p.z * src.get_height(lod) + p.y) * src.get_width(lod) + p.x] = src.read(p.xy, p.z, lod);
    dst.write(float4(p.x, p.y, p.z, lod), p.xy, p.z, lod);
}
""",
    """
kernel void mip_rw_depth(depth2d<float, access::read> src [[texture(0)]], depth2d<float, access::write> dst [[texture(1)]],
                         constant uint& lod [[buffer(0)]], device float* out [[buffer(1)]], uint2 p [[thread_position_in_grid]]) {
    out[p.y * src.get_width(lod) + p.x] = src.read(p, lod);
    dst.write(float(p.x * 100 + p.y * 10 + lod), p, lod);
}
""",
    """
kernel void mip_sample(texture2d<float> t [[texture(0)]], sampler s [[sampler(0)]],
                       const device float4* q [[buffer(0)]], device float4* out [[buffer(1)]],
                       uint i [[thread_position_in_grid]]) {
    out[4 * i] = t.sample(s, q[i].xy, level(q[i].z));
    out[4 * i + 1] = t.sample(s, q[i].xy, bias(q[i].z));
    out[4 * i + 2] = t.sample(s, q[i].xy, gradient2d(float2(q[i].w, 0.0f), float2(0.0f, 0.5f * q[i].w)));
    out[4 * i + 3] = t.sample(s, q[i].xy);
}
""",
    """
constexpr sampler k_trilinear(filter::linear, mip_filter::linear, lod_clamp(0.5f, 2.0f), max_anisotropy(4));
kernel void mip_constexpr_sampler(texture2d<float> t [[texture(0)]], const device float4* q [[buffer(0)]],
                                  device float4* out [[buffer(1)]], uint i [[thread_position_in_grid]]) {
    out[i] = t.sample(k_trilinear, q[i].xy, level(q[i].z));
}
""",
    """
kernel void mip_sample_kinds(texture2d_array<float> a [[texture(0)]], texture3d<float> b [[texture(1)]],
                             texturecube<float> c [[texture(2)]], depth2d<float> d [[texture(3)]],
                             sampler s [[sampler(0)]], const device float4* q [[buffer(0)]],
                             device float4* out [[buffer(1)]], uint i [[thread_position_in_grid]]) {
    out[4 * i] = a.sample(s, q[i].xy, i % 3, level(q[i].w));
    out[4 * i + 1] = b.sample(s, q[i].xyz, level(q[i].w));
    out[4 * i + 2] = c.sample(s, float3(1.0f, q[i].y - 0.5f, q[i].x - 0.5f), level(q[i].w));
    out[4 * i + 3] = float4(d.sample(s, q[i].xy, level(q[i].w)));
}
""",
])

F32_MAX = float(np.finfo(np.float32).max)


def level_shape(h, w, level):
    return max(1, h >> level), max(1, w >> level)


def mip_levels_model(lod, mip_filter, levels, lod_clamp=(0.0, F32_MAX)):
    """(level, weight) pairs and whether the texture is minified, by the rules of
    metal_texture.h's sample(): the LOD clamps, then the mip filter picks levels."""
    lod = np.float32(0.0 if math.isnan(lod) else lod)
    lod = min(max(lod, np.float32(lod_clamp[0])), np.float32(lod_clamp[1]))
    minified = lod > 0
    last = levels - 1
    if minified and mip_filter == "nearest":
        level = 0 if lod <= 0.5 else int(math.ceil(np.float32(lod + np.float32(0.5)))) - 1
        return [(min(level, last), 1.0)], minified
    if minified and mip_filter == "linear":
        whole = math.floor(lod)
        if whole >= last:
            return [(last, 1.0)], minified
        f = float(lod) - whole
        return [(whole, 1.0 - f), (whole + 1, f)], minified
    return [(0, 1.0)], minified


def sample_mip_model(levels, channels, u, v, lod, min_filter, mag_filter, mip_filter, lod_clamp=(0.0, F32_MAX)):
    picks, minified = mip_levels_model(lod, mip_filter, len(levels), lod_clamp)
    filt = min_filter if minified else mag_filter
    return sum(w * sample_model(levels[lv], channels, u, v, filt, "clamp_to_edge", True) for lv, w in picks)


def random_mip_texture(device, rng, h, w, fmt, levels):
    t = device.texture((h, w), fmt, mip_levels=levels)
    raws = []
    for i in range(levels):
        raw = random_raw(rng, level_shape(h, w, i), fmt)
        t.level(i)[...] = raw
        raws.append(raw)
    return t, [decode(r, fmt) for r in raws]


# ---- storage and host views -------------------------------------------------------------

@pytest.mark.parametrize("shape,kind,levels", [
    ((13, 20), None, "full"), ((1, 9), None, 4), ((5, 12, 9), None, "full"), ((3, 6, 10), "texture2d_array", 3),
    ((8, 8), "texturecube", "full"), ((6, 5), "depth2d", 2),
])
def test_levels_and_views(device, rng, shape, kind, levels):
    fmt = "r32float" if kind == "depth2d" else "rgba16float"
    t = device.texture(shape, fmt, type=kind, mip_levels=levels)
    sizes = shape if kind != "texture2d_array" else shape[1:]
    want_levels = int(math.log2(max(sizes))) + 1 if levels == "full" else levels
    assert t.mip_levels == want_levels and f"mip_levels={want_levels}" in repr(t)
    channels = 1 if kind == "depth2d" else 4
    views = []
    for i in range(want_levels):
        view = t.level(i)
        h, w = level_shape(*shape[-2:], i)
        lead = {None: (max(1, shape[0] >> i),) if len(shape) == 3 else (), "texture2d_array": (shape[0],),
                "texturecube": (6,), "depth2d": ()}[kind]
        assert view.shape == lead + (h, w, channels), (i, view.shape)
        assert not view.any()  # new textures are zeroed, every level
        view[...] = rng.uniform(-1, 1, view.shape).astype(view.dtype)
        views.append(view.copy())
    np.testing.assert_array_equal(np.asarray(t), views[0])
    for i, v in enumerate(views):  # levels do not overlap
        np.testing.assert_array_equal(t.level(i), v)


def test_level_errors(device):
    with pytest.raises(mc.ArgumentError, match=r"at most 4 mip levels .* got 5"):
        device.texture((8, 15), "r32float", mip_levels=5)
    with pytest.raises(mc.ArgumentError, match="at least 1 mip level"):
        device.texture((8, 8), "r32float", mip_levels=0)
    with pytest.raises(mc.ArgumentError, match="count or \"full\""):
        device.texture((8, 8), "r32float", mip_levels="half")
    with pytest.raises(mc.ArgumentError, match="no mipmapped 1-D"):
        device.texture((8,), "r32float", mip_levels=2)
    t = device.texture((8, 8), "r32float", mip_levels=2)
    with pytest.raises(mc.ArgumentError, match=r"mip level 2 does not exist: the texture has 2"):
        t.level(2)
    with pytest.raises(mc.ArgumentError, match="levels count from 0"):
        t.level(-1)
    with pytest.raises(mc.ArgumentError, match="unknown mip filter 'cubic'"):
        device.sampler(mip_filter="cubic")
    with pytest.raises(mc.ArgumentError, match="lod_clamp"):
        device.sampler(lod_clamp=(2.0, 1.0))
    with pytest.raises(mc.ArgumentError, match="lod_clamp"):
        device.sampler(lod_clamp=(-1.0, 1.0))
    s = device.sampler(filter="linear", mip_filter="linear", min_filter="nearest", lod_clamp=(0.5, 3.0))
    assert (s.min_filter, s.mag_filter, s.mip_filter, s.lod_clamp) == ("nearest", "linear", "linear", (0.5, 3.0))
    assert "mip_filter=linear" in repr(s)


# ---- kernels reading and writing levels ---------------------------------------------------

def test_kernel_builds_a_mip_chain(device, rng):
    h, w = 23, 40
    raw = rng.uniform(0, 1, (h, w, 4)).astype(np.float32)
    t = device.texture_from(raw, mip_levels="full")
    assert t.mip_levels == 6
    down = KS.get(device, "mip_down")
    want = raw
    for lod in range(t.mip_levels - 1):
        hh, ww = level_shape(h, w, lod + 1)
        down((ww, hh), np.array([lod], np.uint32), textures=[t, t])
        q_y = np.arange(hh) * 2
        q_x = np.arange(ww) * 2
        r_y = np.minimum(q_y + 1, want.shape[0] - 1)
        r_x = np.minimum(q_x + 1, want.shape[1] - 1)
        want = (((want[q_y][:, q_x] + want[q_y][:, r_x]) + want[r_y][:, q_x]) + want[r_y][:, r_x]) * np.float32(0.25)
        # fast math (the default) may reorder the kernel's additions
        np.testing.assert_allclose(t.level(lod + 1), want, rtol=1e-6, atol=0, err_msg=f"level {lod + 1}")
    np.testing.assert_array_equal(np.asarray(t), raw)  # level 0 untouched


def box_model(level, volume=False):
    """The next level of generate_mipmaps: 2x2 (2x2x2) block means, the last texel of an odd
    axis standing in for its missing neighbour. `level` is (..., [d,] h, w, c) decoded."""
    axes = (-4, -3, -2) if volume else (-3, -2)
    out = level
    for ax in axes:
        n = out.shape[ax]
        m = max(1, n // 2)
        q = np.minimum(np.arange(m) * 2, n - 1)
        r = np.minimum(q + 1, n - 1)
        out = (np.take(out, q, axis=ax) + np.take(out, r, axis=ax)) / 2
    return out


@pytest.mark.parametrize("fmt", ["rgba32float", "rgba8unorm", "rg16snorm", "r16float"])
@pytest.mark.parametrize("shape,kind", [((19, 40), None), ((1, 9), None), ((3, 10, 7), "texture2d_array"),
                                        ((16, 16), "texturecube"), ((5, 12, 9), None)])
def test_generate_mipmaps(device, rng, fmt, shape, kind):
    t = device.texture(shape, fmt, type=kind, mip_levels="full")
    raw = random_raw(rng, np.asarray(t).shape[:-1], fmt)
    np.asarray(t)[...] = raw
    device.generate_mipmaps(t)
    volume = len(shape) == 3 and kind is None
    want = decode(raw, fmt)
    n, bits, kind_ = parse(fmt)
    for i in range(1, t.mip_levels):
        want = box_model(want, volume)
        got = decode(t.level(i), fmt)
        # The kernel sums in float32 and the write rounds to the format: one step of it.
        step = 1 / (2 ** bits - 1) if kind_ == "unorm" else 1 / (2 ** (bits - 1) - 1) if kind_ == "snorm" else 0
        np.testing.assert_allclose(got, want, rtol=2e-3 if bits == 16 and kind_ == "float" else 1e-6,
                                   atol=step * 0.51 + 1e-6, err_msg=f"level {i}")
        want = got  # each level is filtered from the stored one above
    np.testing.assert_array_equal(np.asarray(t), raw)


def test_generate_mipmaps_errors(device):
    with pytest.raises(mc.ArgumentError, match="cannot be filtered"):
        device.generate_mipmaps(device.texture((4, 4), "rgba8uint", mip_levels=2))
    with pytest.raises(mc.ArgumentError, match="cannot be filtered"):
        device.generate_mipmaps(device.texture((4, 4), "r32float", type="depth2d", mip_levels=2))
    with pytest.raises(mc.ArgumentError, match="takes a Texture"):
        device.generate_mipmaps(np.zeros((4, 4), np.float32))
    with pytest.raises(mc.ArgumentError, match="usage"):
        device.generate_mipmaps(device.texture((4, 4), "r32float", usage="read", mip_levels=2))
    one = device.texture((4, 4), "r32float")
    device.generate_mipmaps(one)  # one level: nothing to do
    assert not np.asarray(one).any()


def test_sizes_at_each_level(device):
    a = device.texture((12, 40), "rgba32float", mip_levels="full")
    b = device.texture((6, 9, 17), "rgba32float", mip_levels=3)
    c = device.texture((2, 7, 5), "rgba32float", type="texture2d_array", mip_levels=2)
    e = device.texture((16, 16), "rgba32float", type="texturecube", mip_levels=4)
    f = device.texture((10, 3), "r32float", type="depth2d", mip_levels=3)
    n = a.mip_levels + 2
    out = np.zeros(10 * n, np.uint32)
    KS.get(device, "mip_sizes")(n, out, textures=[a, b, c, e, f])
    out = out.reshape(n, 10)

    def size(x, lod, levels):
        return max(1, x >> lod) if lod < levels else 0  # 0 past the last level
    for lod in range(n):
        want = [size(40, lod, 6), size(12, lod, 6), size(17, lod, 3), size(9, lod, 3), size(6, lod, 3),
                size(5, lod, 2), size(7, lod, 2), size(16, lod, 4), size(10, lod, 3), 6 * 10000 + 3 * 1000 + 2 * 100 + 4 * 10 + 3]
        if device.backend == "metal":  # Metal leaves the sizes of levels a texture lacks undefined
            have = [6, 6, 3, 3, 3, 2, 2, 4, 3]  # each size's texture's levels; the last entry counts them
            want = [w if lod < k else int(o) for w, k, o in zip(want, have, out[lod])] + want[len(have):]
        assert list(out[lod]) == want, lod


@pytest.mark.parametrize("kind", ["texture2d_array", "texture3d", "texturecube", "depth2d"])
def test_read_write_levels(device, rng, kind):
    shape = {"texture2d_array": (3, 9, 14), "texture3d": (7, 9, 14), "texturecube": (8, 8), "depth2d": (9, 14)}[kind]
    fmt = "r32float" if kind == "depth2d" else "rgba32float"
    typ = None if kind == "texture3d" else kind
    src = device.texture(shape, fmt, type=typ, mip_levels=3)
    dst = device.texture(shape, fmt, type=typ, mip_levels=3)
    for i in range(3):
        src.level(i)[...] = rng.uniform(-1, 1, src.level(i).shape).astype(np.float32)
    name = {"texture2d_array": "mip_rw_array", "texture3d": "mip_rw_3d", "texturecube": "mip_rw_cube",
            "depth2d": "mip_rw_depth"}[kind]
    for lod in range(3):
        view = src.level(lod)
        grid = (view.shape[-2], view.shape[-3]) + ((view.shape[0],) if view.ndim == 4 else ())
        out = np.zeros(view.size // view.shape[-1] * (4 if kind != "depth2d" else 1), np.float32)
        KS.get(device, name)(grid, np.array([lod], np.uint32), out, textures=[src, dst])
        if kind == "depth2d":
            np.testing.assert_array_equal(out.reshape(view.shape[:-1]), view[..., 0])
            y, x = np.indices(view.shape[:2])
            np.testing.assert_array_equal(dst.level(lod)[..., 0], (x * 100 + y * 10 + lod).astype(np.float32))
        else:
            np.testing.assert_array_equal(out.reshape(view.shape), view)
            z, y, x = np.indices(view.shape[:3])
            want = np.stack([x, y, z, np.full_like(x, lod)], axis=-1).astype(np.float32)
            np.testing.assert_array_equal(dst.level(lod), want)


def test_out_of_range_level(device):
    """A level the texture lacks reads zeros and drops writes; checked mode reports it."""
    lib = device.compile(HEADER + """
kernel void lod_probe(texture2d<float, access::read_write> t [[texture(0)]], constant uint& lod [[buffer(0)]],
                      device float4* out [[buffer(1)]], uint2 p [[thread_position_in_grid]]) {
    out[0] = t.read(p, lod);
    t.write(float4(7.0f), p, lod);
}
""")
    t = device.texture((4, 4), "rgba32float", mip_levels=2)
    t.level(1)[...] = 3.0
    out = np.full((1, 4), -1.0, np.float32)
    lib.lod_probe((1, 1), np.array([1], np.uint32), out, textures=[t])
    np.testing.assert_array_equal(out[0], [3.0] * 4)
    assert t.level(1)[0, 0, 0] == 7.0
    if device.checked:
        with pytest.raises(mc.ExecutionError, match=r"texture\(0\) read at \(0, 0, 0\) of mip level 2: the texture has 2 mip"):
            lib.lod_probe((1, 1), np.array([2], np.uint32), out, textures=[t])
        with pytest.raises(mc.ExecutionError, match=r"read at \(2, 0, 0\) of mip level 1 is outside the texture \(2 x 2 x 1\)"):
            lib.lod_probe((3, 1), np.array([1], np.uint32), out, textures=[t])
        return
    if device.backend == "metal":
        return  # Metal leaves reads and writes past the last level undefined
    lib.lod_probe((1, 1), np.array([2], np.uint32), out, textures=[t])  # no level 2: zeros, write dropped
    np.testing.assert_array_equal(out[0], [0.0] * 4)
    assert np.asarray(t).sum() == 0 and t.level(1).sum() == 7.0 * 4 + 3.0 * 4 * 3


# ---- sampling between levels ---------------------------------------------------------------

LODS = [-1.0, 0.0, 0.25, 0.5, 0.75, 1.0, 1.3, 1.5, 1.75, 2.6, 3.0, 9.0]


@pytest.mark.parametrize("mip_filter", ["none", "nearest", "linear"])
@pytest.mark.parametrize("min_filter", ["nearest", "linear"])
def test_sample_level_bias_gradient(device, rng, mip_filter, min_filter):
    metal_filters_in_hardware(device)
    fmt = "rgba8unorm" if min_filter == "nearest" else "rgba32float"
    h, w = 12, 16
    t, levels = random_mip_texture(device, rng, h, w, fmt, 4)
    mag_filter = "linear" if min_filter == "nearest" else "nearest"  # unlike, to see which one applies
    s = device.sampler(min_filter=min_filter, mag_filter=mag_filter, mip_filter=mip_filter)
    n = len(LODS) * 3
    q = np.zeros((n, 4), np.float32)
    q[:, :2] = rng.uniform(-0.2, 1.2, (n, 2))
    q[:, 2] = LODS * 3
    q[:, 3] = rng.uniform(0.01, 0.8, n)  # gradient length, normalized
    out = np.zeros((n * 4, 4), np.float32)
    KS.get(device, "mip_sample")(n, q, out, textures=[t], samplers=[s])
    for i, (u, v, lod, g) in enumerate(q.astype(np.float64)):
        lod32 = float(np.float32(lod))
        grad_lod = 0.5 * math.log2(max((float(np.float32(g)) * w) ** 2, (0.5 * float(np.float32(g)) * h) ** 2))
        for k, want_lod in enumerate([lod32, lod32, grad_lod, 0.0]):
            want = sample_mip_model(levels, 4, u, v, want_lod, min_filter, mag_filter, mip_filter)
            np.testing.assert_allclose(out[4 * i + k], want, rtol=1e-5, atol=2e-6,
                                       err_msg=f"q={q[i]} option {['level', 'bias', 'gradient', 'none'][k]}")


def test_sampler_lod_clamp_and_constexpr_sampler(device, rng):
    metal_filters_in_hardware(device)
    t, levels = random_mip_texture(device, rng, 8, 8, "rgba32float", 4)
    n = len(LODS)
    q = np.zeros((n, 4), np.float32)
    q[:, :2] = rng.uniform(0, 1, (n, 2))
    q[:, 2] = LODS
    out = np.zeros((n * 4, 4), np.float32)
    s = device.sampler(filter="linear", mip_filter="linear", lod_clamp=(0.5, 2.0))
    KS.get(device, "mip_sample")(n, q, out, textures=[t], samplers=[s])
    out2 = np.zeros((n, 4), np.float32)
    KS.get(device, "mip_constexpr_sampler")(n, q, out2, textures=[t])  # lod_clamp(0.5f, 2.0f) in source
    for i, (u, v, lod, _) in enumerate(q.astype(np.float64)):
        want = sample_mip_model(levels, 4, u, v, lod, "linear", "linear", "linear", (0.5, 2.0))
        np.testing.assert_allclose(out[4 * i], want, rtol=0, atol=2e-6)
        np.testing.assert_allclose(out2[i], want, rtol=0, atol=2e-6)
        # No option: LOD 0, clamped up to 0.5 by the sampler.
        np.testing.assert_allclose(out[4 * i + 3], sample_mip_model(levels, 4, u, v, 0.0, "linear", "linear", "linear",
                                                                    (0.5, 2.0)), rtol=0, atol=2e-6)


def sample3d_model(vol, u, v, w, filt):
    d, h, wd = vol.shape[:3]
    out = np.zeros(4)
    for (k, wz) in axis(w, d, True, filt == "linear"):
        for (j, wy) in axis(v, h, True, filt == "linear"):
            for (i, wx) in axis(u, wd, True, filt == "linear"):
                out += wx * wy * wz * vol[address(k, d, "clamp_to_edge"), address(j, h, "clamp_to_edge"),
                                          address(i, wd, "clamp_to_edge")]
    return out


def test_sample_levels_of_arrays_volumes_cubes_depth(device, rng):
    metal_filters_in_hardware(device)
    arr = device.texture((3, 8, 12), "rgba32float", type="texture2d_array", mip_levels=3)
    vol = device.texture((8, 8, 12), "rgba32float", mip_levels=3)
    cube = device.texture((8, 8), "rgba32float", type="texturecube", mip_levels=3)
    depth = device.texture((8, 12), "r32float", type="depth2d", mip_levels=3)
    for t in (arr, vol, cube, depth):
        for i in range(3):
            t.level(i)[...] = rng.uniform(0, 1, t.level(i).shape).astype(np.float32)
    s = device.sampler(filter="linear", mip_filter="linear")
    n = 12
    q = rng.uniform(0.05, 0.95, (n, 4)).astype(np.float32)
    q[:, 3] = np.linspace(-0.5, 2.5, n)
    out = np.zeros((4 * n, 4), np.float32)
    KS.get(device, "mip_sample_kinds")(n, q, out, textures=[arr, vol, cube, depth], samplers=[s])
    for i, (u, v, w, lod) in enumerate(q.astype(np.float64)):
        picks, _ = mip_levels_model(lod, "linear", 3)
        want_arr = sum(f * sample_model(arr.level(lv)[i % 3].astype(np.float64), 4, u, v, "linear", "clamp_to_edge", True)
                       for lv, f in picks)
        want_vol = sum(f * sample3d_model(vol.level(lv).astype(np.float64), u, v, w, "linear") for lv, f in picks)
        # Direction (1, v - 0.5, u - 0.5): face +X, s = -z, t = -y.
        fu, fv = 0.5 * (-(u - 0.5) + 1), 0.5 * (-(v - 0.5) + 1)
        want_cube = sum(f * sample_model(cube.level(lv)[0].astype(np.float64), 4, fu, fv, "linear", "clamp_to_edge", True)
                        for lv, f in picks)
        want_depth = sum(f * sample_model(decode(depth.level(lv), "r32float"), 1, u, v, "linear", "clamp_to_edge", True)[0]
                         for lv, f in picks)
        np.testing.assert_allclose(out[4 * i], want_arr, rtol=0, atol=2e-6)
        np.testing.assert_allclose(out[4 * i + 1], want_vol, rtol=0, atol=2e-6)
        np.testing.assert_allclose(out[4 * i + 2], want_cube, rtol=0, atol=2e-6)
        np.testing.assert_allclose(out[4 * i + 3, 0], want_depth, rtol=0, atol=2e-6)
