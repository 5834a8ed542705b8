"""Fidelity audit of textures and samplers (session 22): constructs the existing texture tests do
not reach, checked on every device against references written here from the MSL specification
and Metal's sampler documentation (texel index = floor(coord x size - 0.5 for linear), the
sample's integer offset added to it before the address mode, gather's (i0, j1), (i1, j1),
(i1, j0), (i0, j0) order, integer formats read and sampled as integers).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

import metalcall as mc
from mcconf import KernelSet
from texture_models import MODES, address

KS = KernelSet([
    """
kernel void aud_sample_uint(texture2d<uint> t [[texture(0)]], sampler s [[sampler(0)]],
                            const device float2* uv [[buffer(0)]], device uint4* out [[buffer(1)]],
                            uint i [[thread_position_in_grid]]) {
    out[3 * i] = t.sample(s, uv[i]);
    out[3 * i + 1] = t.gather(s, uv[i]);
    out[3 * i + 2] = t.sample(s, uv[i], level(0.0f));
}
""",
    """
kernel void aud_sample_int(texture2d<int> t [[texture(0)]], sampler s [[sampler(0)]],
                           const device float2* uv [[buffer(0)]], device int4* out [[buffer(1)]],
                           uint i [[thread_position_in_grid]]) {
    out[3 * i] = t.sample(s, uv[i]);
    out[3 * i + 1] = t.gather(s, uv[i], int2(0), component::y);
    out[3 * i + 2] = t.sample(s, uv[i], int2(1, 0));
}
""",
    """
kernel void aud_sample_offsets(texture2d<float> t [[texture(0)]], sampler s [[sampler(0)]],
                               const device float2* uv [[buffer(0)]], device float4* out [[buffer(1)]],
                               uint i [[thread_position_in_grid]]) {
    device float4* o = out + 8 * i;
    o[0] = t.sample(s, uv[i], int2(1, -2));
    o[1] = t.sample(s, uv[i], int2(-8, 7));
    o[2] = t.sample(s, uv[i], level(0.0f), int2(3, 1));
    o[3] = t.gather(s, uv[i], int2(-1, 2));
    o[4] = t.gather(s, uv[i], int2(2, -3), component::y);
    o[5] = t.gather(s, uv[i], int2(0, 1), component::z);
    o[6] = t.gather(s, uv[i], int2(-2, 0), component::w);
    o[7] = t.sample(s, uv[i], bias(0.0f), int2(0, -1));
}
""",
    """
kernel void aud_sample_offsets_layered(texture2d_array<float> a [[texture(0)]], texture3d<float> v [[texture(1)]],
                                       sampler s [[sampler(0)]], const device float4* q [[buffer(0)]],
                                       device float4* out [[buffer(1)]], uint i [[thread_position_in_grid]]) {
    out[3 * i] = a.sample(s, q[i].xy, i % 3, int2(2, -1));
    out[3 * i + 1] = a.gather(s, q[i].xy, i % 3, int2(-1, 1), component::x);
    out[3 * i + 2] = v.sample(s, q[i].xyz, int3(1, -1, 2));
}
""",
    """
kernel void aud_sample_far(texture2d<float> t [[texture(0)]], sampler s [[sampler(0)]],
                           const device float2* uv [[buffer(0)]], device float4* out [[buffer(1)]],
                           uint i [[thread_position_in_grid]]) {
    out[2 * i] = t.sample(s, uv[i]);
    out[2 * i + 1] = t.gather(s, uv[i]);
}
""",
    """
kernel void aud_min_lod_clamp(texture2d<float> t [[texture(0)]], texture2d_array<float> a [[texture(1)]],
                              texture3d<float> v [[texture(2)]], texturecube<float> c [[texture(3)]],
                              sampler s [[sampler(0)]], const device float4* q [[buffer(0)]],
                              device float* out [[buffer(1)]], uint i [[thread_position_in_grid]]) {
    const float2 uv = float2(0.4f, 0.6f);
    const float clamp_to = q[i].x, b = q[i].y, g = q[i].z;
    device float* o = out + 8 * i;
    o[0] = t.sample(s, uv, min_lod_clamp(clamp_to)).x;
    o[1] = t.sample(s, uv, bias(b), min_lod_clamp(clamp_to)).x;
    o[2] = t.sample(s, uv, gradient2d(float2(g, 0.0f), float2(0.0f, g)), min_lod_clamp(clamp_to), int2(1, 0)).x;
    o[3] = a.sample(s, uv, 1, bias(b), min_lod_clamp(clamp_to)).x;
    o[4] = v.sample(s, float3(uv, 0.5f), gradient3d(float3(g, 0.0f, 0.0f), float3(0.0f, g, 0.0f)), min_lod_clamp(clamp_to)).x;
    o[5] = c.sample(s, float3(1.0f, 0.2f, -0.3f), bias(b), min_lod_clamp(clamp_to)).x;
    o[6] = c.sample(s, float3(1.0f, 0.2f, -0.3f), min_lod_clamp(clamp_to)).x;
    o[7] = a.sample(s, uv, 2, min_lod_clamp(clamp_to)).x;
}
""",
    """
kernel void aud_is_null(texture2d<float, access::read> t [[texture(0)]], texture3d<float> v [[texture(1)]],
                        depth2d<float> d [[texture(2)]], array<texture2d<float>, 2> ts [[texture(3)]],
                        device uint* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    out[0] = is_null_texture(t) ? 1u : 0u;
    out[1] = is_null_texture(v) ? 1u : 0u;
    out[2] = is_null_texture(d) ? 1u : 0u;
    out[3] = is_null_texture(ts[0]) || is_null_texture(ts[1]) ? 1u : 0u;
    out[4] = 7u;
}
""",
    """
kernel void aud_write_float(texture2d<float, access::write> dst [[texture(0)]], const device float4* put [[buffer(0)]],
                            uint i [[thread_position_in_grid]]) {
    dst.write(put[i], uint2(i % dst.get_width(), i / dst.get_width()));
}
""",
    """
kernel void aud_write_half(texture2d<half, access::write> dst [[texture(0)]], const device half4* put [[buffer(0)]],
                           uint i [[thread_position_in_grid]]) {
    dst.write(put[i], uint2(i % dst.get_width(), i / dst.get_width()));
}
""",
    """
kernel void aud_read_half(texture2d<half, access::read> src [[texture(0)]], device half4* out [[buffer(0)]],
                          uint i [[thread_position_in_grid]]) {
    out[i] = src.read(uint2(i % src.get_width(), i / src.get_width()));
}
""",
    """
kernel void aud_sample_3d_1d(texture3d<float> v [[texture(0)]], texture1d<float> l [[texture(1)]],
                             sampler s [[sampler(0)]], const device float4* q [[buffer(0)]],
                             device float4* out [[buffer(1)]], uint i [[thread_position_in_grid]]) {
    out[2 * i] = v.sample(s, q[i].xyz);
    out[2 * i + 1] = l.sample(s, q[i].w);
}
""",
    """
kernel void aud_read_every_value(texture2d<float, access::sample> t [[texture(0)]], sampler s [[sampler(0)]],
                                 device float4* out [[buffer(0)]], uint2 p [[thread_position_in_grid]]) {
    const uint w = t.get_width(), h = t.get_height(), i = p.y * w + p.x;
    const float2 uv = (float2(p) + 0.5f) / float2(w, h);
    out[3 * i] = t.read(p);
    out[3 * i + 1] = t.sample(s, uv);
    out[3 * i + 2] = t.gather(s, uv + float2(0.5f / w, 0.5f / h));  // texel p is the gather's w component
}
""",
    """
kernel void aud_compare_min_lod(depth2d<float> d [[texture(0)]], depth2d_array<float> da [[texture(1)]],
                                sampler s [[sampler(0)]], const device float2* q [[buffer(0)]],
                                device float* out [[buffer(1)]], uint i [[thread_position_in_grid]]) {
    out[2 * i] = d.sample_compare(s, float2(0.3f, 0.7f), q[i].y, min_lod_clamp(q[i].x));
    out[2 * i + 1] = da.sample_compare(s, float2(0.3f, 0.7f), 1, q[i].y, min_lod_clamp(q[i].x));
}
""",
])

# ---- reference sampler, from the specification's formulas ------------------------------------

def wrap(i, n, mode):
    """Texel index i on an axis of n texels after the address mode (texture_models.address);
    None: outside (border)."""
    a = address(i, n, mode)
    return None if a < 0 else a


def taps(c, n, linear, offset=0, normalized=True):
    """(texel index, weight) pairs on one axis; indices as Python ints (any size)."""
    x = float(np.float32(c) * np.float32(n)) if normalized else float(c)
    if linear:
        x -= 0.5
        f = math.floor(x)
        return [(f + offset, 1 - (x - f)), (f + 1 + offset, x - f)]
    if math.isinf(x):
        return [(x, 1.0)]
    return [(math.floor(x) + offset, 1.0)]


def wrap_far(i, n, mode):
    """wrap() for an index that may be +-inf (a coordinate of +-inf under a clamping mode)."""
    if isinstance(i, float):
        if mode in ("clamp_to_zero", "clamp_to_border"):
            return None
        return n - 1 if i > 0 else (0 if mode == "clamp_to_edge" else n - 1)
    return wrap(i, n, mode)


def border_of(mode, channels, color):
    if mode == "clamp_to_zero":
        return np.array([0, 0, 0, 0 if channels == 4 else 1.0])
    return {"transparent_black": np.zeros(4), "opaque_black": np.array([0, 0, 0, 1.0]),
            "opaque_white": np.ones(4)}[color]


def texel4(img, j, i, k=None):
    """A texel as 4 components (missing ones 0, 0, 1), as float64 or Python ints."""
    t = img[j, i] if k is None else img[k, j, i]
    c = list(t) + [0] * (3 - len(t)) + [1] if len(t) < 4 else list(t)
    return np.array(c[:4], dtype=object if img.dtype.kind in "iuO" else np.float64)


def ref_sample2d(img, u, v, linear, modes, offset=(0, 0), color="transparent_black"):
    h, w, ch = img.shape
    out = np.zeros(4)
    for j, wy in taps(v, h, linear, offset[1]):
        for i, wx in taps(u, w, linear, offset[0]):
            ai, aj = wrap_far(i, w, modes[0]), wrap_far(j, h, modes[1])
            bad = modes[0] if ai is None else modes[1] if aj is None else None
            t = border_of(bad, ch, color) if bad else texel4(img, aj, ai).astype(np.float64)
            out += wx * wy * t
    return out


def ref_gather(img, u, v, modes, offset=(0, 0), comp=0, color="transparent_black", k=None):
    """Component `comp` of the 2x2 footprint, in Metal's order (i0, j1), (i1, j1), (i1, j0), (i0, j0)."""
    h, w = img.shape[-3:-1]
    (i0, _), (i1, _) = taps(u, w, True, offset[0])
    (j0, _), (j1, _) = taps(v, h, True, offset[1])
    out = []
    for i, j in [(i0, j1), (i1, j1), (i1, j0), (i0, j0)]:
        ai, aj = wrap_far(i, w, modes[0]), wrap_far(j, h, modes[1])
        bad = modes[0] if ai is None else modes[1] if aj is None else None
        out.append(border_of(bad, img.shape[-1], color)[comp] if bad else texel4(img, aj, ai, k)[comp])
    return out


# ---- integer formats: sampled exactly --------------------------------------------------------

@pytest.mark.parametrize("fmt", ["r32uint", "rg32uint", "rgba32uint", "r32sint", "rgba32sint", "rgba16uint"])
def test_sample_and_gather_integer_formats_exactly(device, rng, fmt):
    """MSL's sample() and gather() return texture2d<int/uint>'s Tv: the texels' integers, which
    an integer format cannot filter (nearest sampling). 32-bit values above 2^24 must come back
    exactly, not rounded through a float (before the fix: 4294967295 sampled as 0 or 4294967040,
    16777217 as 16777216)."""
    signed = "sint" in fmt
    bits = 16 if "16" in fmt else 32
    dt = np.dtype(("i" if signed else "u") + str(bits // 8))
    info = np.iinfo(dt)
    ch = {"r": 1, "rg": 2, "rgba": 4}[fmt.split(str(bits))[0]]
    h, w = 5, 6
    special = np.array([info.max, info.max - 1, info.min, info.min + 1, (1 << 24) + 1, (1 << 24) + 3,
                        (1 << 30) + 7, 0, 1, 123456789], dtype=object)
    special = np.array([x for x in special if info.min <= x <= info.max], dtype=object)
    raw = rng.integers(info.min, info.max, (h, w, ch), dtype=dt, endpoint=True)
    flat = raw.reshape(-1)
    flat[:len(special)] = special.astype(dt)
    t = device.texture_from(raw, format=fmt)
    modes = ("repeat", "clamp_to_edge")
    s = device.sampler(filter="nearest", address=list(modes) + ["clamp_to_edge"])
    n = 40
    uv = rng.uniform(-0.4, 1.4, (n, 2)).astype(np.float32)
    # texel centres of every texel too
    ji = [(k // w, k % w) for k in range(min(n, h * w))]
    for k, (j, i) in enumerate(ji):
        uv[k] = ((i + 0.5) / w, (j + 0.5) / h)
    vt = np.int32 if signed else np.uint32
    out = np.zeros((3 * n, 4), vt)
    KS.get(device, "aud_sample_int" if signed else "aud_sample_uint")(n, uv, out, textures=[t], samplers=[s])
    img = raw.astype(object)
    for k, (u, v) in enumerate(uv):
        (i,), (j,) = [x for x, _ in taps(u, w, False)], [y for y, _ in taps(v, h, False)]
        want = texel4(img, wrap(j, h, modes[1]), wrap(i, w, modes[0]))
        assert [int(x) for x in out[3 * k]] == list(want), (k, u, v)
        if signed:
            want_off = texel4(img, wrap(j, h, modes[1]), wrap(i + 1, w, modes[0]))
            assert [int(x) for x in out[3 * k + 2]] == list(want_off), (k, u, v)
            assert [int(x) for x in out[3 * k + 1]] == ref_gather(img, u, v, modes, comp=1), (k, u, v)
        else:
            assert [int(x) for x in out[3 * k + 2]] == list(want), (k, u, v)
            assert [int(x) for x in out[3 * k + 1]] == ref_gather(img, u, v, modes, comp=0), (k, u, v)


# ---- integer offsets of sample() and gather() ------------------------------------------------

SAMPLE_OFFSETS = [(1, -2), (-8, 7), (3, 1), None, None, None, None, (0, -1)]
GATHER_OFFSETS = {3: ((-1, 2), 0), 4: ((2, -3), 1), 5: ((0, 1), 2), 6: ((-2, 0), 3)}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("filt", ["nearest", "linear"])
def test_sample_and_gather_offsets(device, rng, filt, mode):
    """sample(s, coord, [lod option,] int2 offset) and gather(s, coord, offset, component): the
    offset moves the footprint by whole texels of the sampled level before the address mode
    applies (so it wraps under repeat and meets the border under clamp_to_border)."""
    h, w = 6, 9
    raw = rng.uniform(-2, 2, (h, w, 4)).astype(np.float32)
    t = device.texture_from(raw)
    color = "opaque_white" if mode == "clamp_to_border" else "transparent_black"
    s = device.sampler(filter=filt, address=mode, border_color=color)
    n = 48
    uv = rng.uniform(-0.3, 1.3, (n, 2)).astype(np.float32)
    out = np.zeros((8 * n, 4), np.float32)
    KS.get(device, "aud_sample_offsets")(n, uv, out, textures=[t], samplers=[s])
    img = raw.astype(np.float64)
    modes = (mode, mode)
    for k, (u, v) in enumerate(uv):
        got = out[8 * k:8 * k + 8]
        for slot, off in enumerate(SAMPLE_OFFSETS):
            if off is None:
                continue
            want = ref_sample2d(img, u, v, filt == "linear", modes, off, color)
            np.testing.assert_allclose(got[slot], want, rtol=0, atol=4e-3 if filt == "linear" else 0,
                                       err_msg=f"sample offset {off} at {(u, v)}")
        for slot, (off, comp) in GATHER_OFFSETS.items():
            np.testing.assert_array_equal(got[slot], np.float32(ref_gather(img, u, v, modes, off, comp, color)),
                                          err_msg=f"gather offset {off} component {comp} at {(u, v)}")


def test_offsets_of_arrays_and_volumes(device, rng):
    """texture2d_array's sample/gather and texture3d's sample with an offset (int2 / int3)."""
    slices, h, w, d = 3, 4, 5, 4
    araw = rng.uniform(0, 1, (slices, h, w, 4)).astype(np.float32)
    vraw = rng.uniform(0, 1, (d, h, w, 4)).astype(np.float32)
    a = device.texture_from(araw, type="texture2d_array")
    vt = device.texture_from(vraw)
    s = device.sampler(filter="nearest", address="repeat")
    n = 30
    q = rng.uniform(-0.5, 1.5, (n, 4)).astype(np.float32)
    out = np.zeros((3 * n, 4), np.float32)
    KS.get(device, "aud_sample_offsets_layered")(n, q, out, textures=[a, vt], samplers=[s])
    for k, (u, v, r, _) in enumerate(q):
        sl = k % 3
        want = ref_sample2d(araw[sl].astype(np.float64), u, v, False, ("repeat", "repeat"), (2, -1))
        np.testing.assert_array_equal(out[3 * k], np.float32(want))
        np.testing.assert_array_equal(out[3 * k + 1],
                                      np.float32(ref_gather(araw[sl], u, v, ("repeat", "repeat"), (-1, 1), 0)))
        (i,), (j,), (z,) = ([x for x, _ in taps(c, m, False, o)] for c, m, o in ((u, w, 1), (v, h, -1), (r, d, 2)))
        np.testing.assert_array_equal(out[3 * k + 2], vraw[z % d, j % h, i % w])


# ---- coordinates far outside the texture -----------------------------------------------------

@pytest.mark.parametrize("mode", ["clamp_to_edge", "mirrored_clamp_to_edge", "clamp_to_zero", "clamp_to_border"])
@pytest.mark.parametrize("filt", ["nearest", "linear"])
def test_far_and_infinite_coordinates(device, rng, filt, mode):
    """Coordinates far beyond the texture (1e10, 3e9 texels: past int's range) and +-infinity
    under the clamping address modes read the edge texel or the border, as any coordinate
    beyond 1 does (before the fix the texel index overflowed int and clamp_to_edge read the
    opposite edge at +1e10; +inf read texel 0)."""
    h, w = 4, 5
    raw = rng.uniform(0.25, 1, (h, w, 4)).astype(np.float32)
    t = device.texture_from(raw)
    color = "opaque_white"
    s = device.sampler(filter=filt, address=mode, border_color=color)
    far = [1e10, -1e10, 3e9, -3e9, 6e8, -6e8, 1e30, -1e30, 2.5, -1.5]
    if filt == "nearest":
        far += [math.inf, -math.inf]
    pairs = [(a, b) for a in far for b in (0.3, 0.9)] + [(b, a) for a in far for b in (0.1, 0.6)]
    uv = np.array(pairs, np.float32)
    n = len(uv)
    out = np.zeros((2 * n, 4), np.float32)
    KS.get(device, "aud_sample_far")(n, uv, out, textures=[t], samplers=[s])
    img = raw.astype(np.float64)
    modes = (mode, mode)
    for k, (u, v) in enumerate(uv):
        want = ref_sample2d(img, float(u), float(v), filt == "linear", modes, color=color)
        np.testing.assert_allclose(out[2 * k], want, rtol=0, atol=4e-3 if filt == "linear" else 0,
                                   err_msg=f"sample at {(u, v)}")
        if filt == "linear":
            np.testing.assert_array_equal(out[2 * k + 1], np.float32(ref_gather(img, u, v, modes, color=color)),
                                          err_msg=f"gather at {(u, v)}")


# ---- min_lod_clamp (MSL 2.2) and is_null_texture ---------------------------------------------

def ref_level_value(values, lod, mip_filter):
    """What a texture whose level k holds values[k] everywhere samples at `lod` (the sampler's
    default lod_clamp(0, FLT_MAX)): mip_filter nearest picks ceil(lod + 0.5) - 1 (level 0 up
    to 0.5), linear blends floor(lod) and the next; the last level from there on."""
    last = len(values) - 1
    lod = max(lod, 0.0)
    if mip_filter == "nearest":
        return values[min(0 if lod <= 0.5 else math.ceil(lod + 0.5) - 1, last)]
    whole = math.floor(lod)
    if whole >= last:
        return values[last]
    f = lod - whole
    return values[whole] * (1 - f) + values[whole + 1] * f


@pytest.mark.parametrize("mip_filter", ["nearest", "linear"])
def test_min_lod_clamp(device, rng, mip_filter):
    """sample(s, p, min_lod_clamp(c)) samples LOD max(0, c); after bias(b) or a gradient, LOD
    max(that LOD, c): on texture2d, texture2d_array, texture3d and texturecube (before: a
    CompileError, 'min_lod_clamp' unknown). Each level holds one value, so the result is the
    levels' blend alone."""
    size = 16
    values = [0.0, 0.25, 0.5, 0.75, 1.0]  # levels 0..4 of a 16-texel chain
    t = device.texture((size, size), "r32float", mip_levels=5)
    a = device.texture((3, size, size), "r32float", type="texture2d_array", mip_levels=5)
    v = device.texture((size, size, size), "r32float", mip_levels=5)
    c = device.texture((size, size), "r32float", type="texturecube", mip_levels=5)
    for tex in (t, a, v, c):
        for k in range(5):
            tex.level(k)[...] = values[k]
    s = device.sampler(filter="linear", mip_filter=mip_filter)
    cases = [(cl, b, g) for cl in (-1.0, 0.0, 0.3, 0.75, 1.5, 2.25, 3.6, 6.0) for b in (0.0, 1.25, 3.0)
             for g in (1 / 16, 4 / 16, 1.0)]
    q = np.array([(cl, b, g, 0) for cl, b, g in cases], np.float32)
    n = len(q)
    out = np.zeros((n, 8), np.float32)
    KS.get(device, "aud_min_lod_clamp")(n, q, out, textures=[t, a, v, c], samplers=[s])
    for k, (cl, b, g, _) in enumerate(q.astype(np.float64)):
        grad_lod = math.log2(g * size)
        want = [ref_level_value(values, max(0.0, cl), mip_filter),
                ref_level_value(values, max(b, cl), mip_filter),
                ref_level_value(values, max(grad_lod, cl), mip_filter),
                ref_level_value(values, max(b, cl), mip_filter),
                ref_level_value(values, max(grad_lod, cl), mip_filter),
                ref_level_value(values, max(b, cl), mip_filter),
                ref_level_value(values, max(0.0, cl), mip_filter),
                ref_level_value(values, max(0.0, cl), mip_filter)]
        np.testing.assert_allclose(out[k], want, rtol=0, atol=1e-6, err_msg=f"min_lod_clamp {cl}, bias {b}, gradient {g}")


def test_is_null_texture(device):
    """is_null_texture(t) compiles for every texture type and array elements, and is false for
    the textures a call binds (before: a CompileError, 'is_null_texture' unknown)."""
    t = device.texture((2, 2), "rgba8unorm")
    v = device.texture((2, 2, 2), "r32float")
    d = device.texture((2, 2), "r32float", type="depth2d")
    out = np.full(5, 9, np.uint32)
    KS.get(device, "aud_is_null")(1, out, textures=[t, v, d, t, t])
    assert list(out) == [0, 0, 0, 0, 7]


# ---- writes: the specification's float -> normalized / half conversions at the edges ---------

EDGES = np.array([0, 1, -1, 0.5, -0.5, 0.5 / 255, 1.5 / 255, 2.5 / 255, 0.5 / 127, -0.5 / 127, 1.5 / 127,
                  0.5 / 65535, 0.5 / 32767, 1.0000001, -1.0000001, 2, -2, 1e30, -1e30, np.nan, np.inf, -np.inf,
                  -0.0, 65504, 65519.996, 65520, 1e5, 6e-8, 2.9e-8, 3e-8, 1e-45, 0.1, 0.7, 127.5 / 255,
                  1 / 3, 2 / 3], np.float32)
NORMALIZED = [f"{c}{b}{k}" for c in ("r", "rg", "rgba") for b in (8, 16) for k in ("unorm", "snorm")] + \
             [f"{c}{b}float" for c in ("r", "rg", "rgba") for b in (16, 32)]


def spec_encode(v, fmt):
    """float32 values as a write stores them: unorm RTNE(clamp(f, 0, 1) * (2^n - 1)), snorm
    RTNE(clamp(f, -1, 1) * (2^(n-1) - 1)) (NaN: 0), half IEEE round to nearest even."""
    bits = 16 if "16" in fmt else 8 if "8" in fmt else 32
    v = v.astype(np.float32)
    if fmt.endswith("float"):
        return v.astype(np.float16 if bits == 16 else np.float32)
    clean = np.where(np.isnan(v), np.float32(0), v)
    if fmt.endswith("unorm"):
        return np.rint(np.clip(clean, 0, 1) * np.float32(2 ** bits - 1)).astype(f"u{bits // 8}")
    return np.rint(np.clip(clean, -1, 1) * np.float32(2 ** (bits - 1) - 1)).astype(f"i{bits // 8}")


@pytest.mark.parametrize("via", ["float", "half"])
@pytest.mark.parametrize("fmt", NORMALIZED)
@np.errstate(over="ignore", invalid="ignore")
def test_write_conversions_at_the_edges(device, fmt, via):
    """write() of every normalized and float format from float4 and half4 colours: clamping,
    round-to-nearest-even ties, NaN to 0, infinities, -0, half overflow to infinity and half
    subnormals; missing channels are dropped. (Already correct.)"""
    vals = EDGES if via == "float" else EDGES.astype(np.float16).astype(np.float32)
    n = len(vals)
    ch = {"r": 1, "rg": 2, "rgba": 4}[fmt.split("8")[0].split("16")[0].split("32")[0]]
    put = np.stack([vals, vals[::-1], -vals, vals * np.float32(0.5)], axis=1)
    w = 6
    t = device.texture(((n + w - 1) // w, w), fmt)
    if via == "float":
        KS.get(device, "aud_write_float")(n, put.astype(np.float32), textures=[t])
    else:
        KS.get(device, "aud_write_half")(n, put.astype(np.float16), textures=[t])
    got = np.asarray(t).reshape(-1, ch)[:n]
    src = put if via == "float" else put.astype(np.float16).astype(np.float32)
    want = spec_encode(src[:, :ch], fmt)
    same = (got == want) | (np.isnan(got.astype(np.float64)) & np.isnan(want.astype(np.float64)))
    if fmt.endswith("float"):  # -0 keeps its sign; a NaN's sign is not significant (CUDA's is +)
        same &= (np.signbit(got.astype(np.float64)) == np.signbit(want.astype(np.float64))) | np.isnan(want.astype(np.float64))
    bad = np.argwhere(~same)
    assert not len(bad), [(src[i, c], got[i, c], want[i, c]) for i, c in bad[:8]]


@np.errstate(over="ignore")
def test_half_reads_of_wide_formats(device):
    """texture2d<half> reads of r32float / rgba16unorm: each channel converted to half by round
    to nearest even (65520 and above to infinity); missing channels (0, 0, 1)."""
    f = np.array([[[70000.0, 65519.0, -1e-8, 1 / 3]]], np.float32).reshape(1, 4, 1)
    u = np.array([[[65535, 1, 32768, 12345]]], np.uint16)
    got = np.zeros((4, 4), np.float16)
    KS.get(device, "aud_read_half")(4, got, textures=[device.texture_from(f)])
    np.testing.assert_array_equal(got[:, 0], f.reshape(4).astype(np.float16))
    np.testing.assert_array_equal(got[:, 1:], np.tile(np.float16([0, 0, 1]), (4, 1)))
    got = np.zeros((1, 4), np.float16)
    KS.get(device, "aud_read_half")(1, got, textures=[device.texture_from(u)])
    np.testing.assert_array_equal(got[0], (u.reshape(4).astype(np.float64) / 65535).astype(np.float16))


def test_texture_from_names_the_shape_it_refuses(device):
    """An RGB image (h, w, 3) is refused (Metal has no 3-channel formats) with its shape named;
    the message said 'got 3 dimensions', which is a valid rank."""
    with pytest.raises(mc.ArgumentError, match=r"got shape \(4, 5, 3\).*|3-channel.*got shape \(4, 5, 3\)"):
        device.texture_from(np.zeros((4, 5, 3), np.uint8))


# ---- texture3d with its own mode per axis, texture1d -------------------------------------------

def ref_sample_nd(img, coords, linear, modes, color):
    """img (..., c) with axes (z, y, x) reversed to coords (u, v, w): trilinear / bilinear /
    linear or nearest, each axis under its own address mode; a tap outside on any axis reads
    the border of the (last) axis it is outside on."""
    shape = img.shape[:-1][::-1]  # (w, h, d)
    axes = [taps(c, n, linear) for c, n in zip(coords, shape)]
    out = np.zeros(4)
    for combo in itertools.product(*axes):
        weight = np.prod([wt for _, wt in combo])
        idx = [wrap(i, n, m) for (i, _), n, m in zip(combo, shape, modes)]
        bad = [m for x, m in zip(idx, modes) if x is None]
        if bad:
            t = border_of(bad[-1], img.shape[-1], color)
        else:
            c = list(img[tuple(idx[::-1])])
            t = np.array(c + [0] * (3 - len(c)) + [1] if len(c) < 4 else c, np.float64)
        out += weight * t
    return out


@pytest.mark.parametrize("modes", [("repeat", "mirrored_repeat", "clamp_to_edge"),
                                   ("clamp_to_border", "repeat", "mirrored_clamp_to_edge"),
                                   ("clamp_to_edge", "clamp_to_zero", "repeat"),
                                   ("mirrored_repeat", "clamp_to_edge", "clamp_to_border")])
@pytest.mark.parametrize("filt", ["nearest", "linear"])
def test_3d_and_1d_sampling_per_axis_modes(device, rng, filt, modes):
    """texture3d's sample blends 2x2x2 texels, each axis (s, t, r) addressed by its own mode;
    texture1d's sample uses s alone."""
    d, h, w = 3, 4, 5
    vraw = rng.uniform(0, 1, (d, h, w, 2)).astype(np.float32)
    lraw = rng.uniform(0, 1, (7, 4)).astype(np.float32)
    v = device.texture_from(vraw, format="rg32float")
    l1 = device.texture_from(lraw, type="texture1d")
    color = "opaque_black"
    s = device.sampler(filter=filt, address=list(modes), border_color=color)
    n = 64
    q = rng.uniform(-1.2, 2.2, (n, 4)).astype(np.float32)
    out = np.zeros((2 * n, 4), np.float32)
    KS.get(device, "aud_sample_3d_1d")(n, q, out, textures=[v, l1], samplers=[s])
    tol = 4e-3 if filt == "linear" else 0
    for k, (a, b, c, x) in enumerate(q):
        want3 = ref_sample_nd(vraw.astype(np.float64), (a, b, c), filt == "linear", modes, color)
        np.testing.assert_allclose(out[2 * k], want3, rtol=0, atol=tol, err_msg=f"3-D at {(a, b, c)}")
        want1 = ref_sample_nd(lraw.astype(np.float64), (x,), filt == "linear", modes[:1], color)
        np.testing.assert_allclose(out[2 * k + 1], want1, rtol=0, atol=tol, err_msg=f"1-D at {x}")


# ---- reads of normalized formats, every value, in the kernels' default fast math --------------

@pytest.mark.parametrize("fmt", ["r8unorm", "r16unorm", "r8snorm", "r16snorm"])
def test_normalized_reads_are_correctly_rounded_under_fast_math(device, fmt):
    """read, sample and gather of every unorm/snorm value give c / (2^n - 1) (snorm: at least
    -1) correctly rounded to float, whatever the kernel's fast-math flag: the conversion is the
    texture unit's, not the kernel's arithmetic (metal_pack.h's unpack functions promise the
    same). Before: the prelude's float division became a multiplication by the reciprocal under
    fast math (the default), 1 ulp off for 126 of the 256 unorm8 values, 1536 snorm16 ones."""
    bits = 16 if "16" in fmt else 8
    signed = "snorm" in fmt
    dt = np.dtype(("i" if signed else "u") + str(bits // 8))
    info = np.iinfo(dt)
    vals = np.arange(info.min, info.max + 1).astype(dt)
    w = 256
    raw = vals.reshape(-1, w, 1)
    t = device.texture_from(raw, format=fmt)
    out = np.zeros((3 * vals.size, 4), np.float32)
    KS.get(device, "aud_read_every_value")((w, raw.shape[0]), out, textures=[t], samplers=[device.sampler()])
    d = 2 ** (bits - 1) - 1 if signed else 2 ** bits - 1
    want = np.maximum(vals.astype(np.float64) / d, -1).astype(np.float32)
    for what, got in (("read", out[0::3, 0]), ("sample", out[1::3, 0]), ("gather", out[2::3, 3])):
        bad = np.nonzero(got != want)[0]
        assert not len(bad), f"{what}: {len(bad)} values differ, e.g. {[(int(vals[i]), got[i], want[i]) for i in bad[:4]]}"


# ---- sRGB formats (supported since session 23: test_audit_formats.py checks every format) ---------

def srgb_to_linear(c):
    return np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)


def test_srgb_reads_linearise(device):
    """rgba8unorm_srgb: a read converts r, g, b from sRGB to linear (the specification's
    formula), alpha as unorm."""
    raw = np.arange(256, dtype=np.uint8).reshape(16, 16, 1).repeat(4, axis=2)
    t = device.texture_from(raw, format="rgba8unorm_srgb")
    out = np.zeros((3 * 256, 4), np.float32)
    KS.get(device, "aud_read_every_value")((16, 16), out, textures=[t], samplers=[device.sampler()])
    c = np.arange(256) / 255.0
    np.testing.assert_allclose(out[0::3, 0], srgb_to_linear(c), rtol=0, atol=1e-4)
    np.testing.assert_allclose(out[0::3, 3], c, rtol=0, atol=1e-7)


def test_sample_compare_min_lod_clamp(device):
    """depth2d / depth2d_array sample_compare(s, p, ref, min_lod_clamp(c)): the comparison on the
    level LOD max(0, c) picks (before: no overload, a CompileError)."""
    size, values = 8, [0.2, 0.4, 0.6, 0.8]
    d = device.texture((size, size), "r32float", type="depth2d", mip_levels=4)
    da = device.texture((2, size, size), "r32float", type="depth2d_array", mip_levels=4)
    for tex in (d, da):
        for k in range(4):
            tex.level(k)[...] = values[k]
    s = device.sampler(filter="nearest", mip_filter="nearest", compare_func="less")
    cases = [(c, r) for c in (-1.0, 0.0, 0.7, 1.2, 2.0, 2.6, 9.0) for r in (0.1, 0.3, 0.5, 0.7, 0.9)]
    q = np.array(cases, np.float32)
    out = np.zeros((len(q), 2), np.float32)
    KS.get(device, "aud_compare_min_lod")(len(q), q, out, textures=[d, da], samplers=[s])
    for k, (c, r) in enumerate(q.astype(np.float64)):
        texel = ref_level_value(values, max(0.0, c), "nearest")
        want = 1.0 if np.float32(r) < np.float32(texel) else 0.0
        assert list(out[k]) == [want, want], (c, r, texel)
