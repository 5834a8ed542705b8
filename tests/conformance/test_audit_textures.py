"""Fidelity audit of textures and samplers (session 22): constructs the existing texture tests do
not reach, checked on every device against references written here from the MSL specification
and Metal's sampler documentation (texel index = floor(coord x size - 0.5 for linear), the
sample's integer offset added to it before the address mode, gather's (i0, j1), (i1, j1),
(i1, j0), (i0, j0) order, integer formats read and sampled as integers).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import metalcall as mc
from mcconf import KernelSet

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
])

MODES = ["clamp_to_edge", "mirrored_clamp_to_edge", "repeat", "mirrored_repeat", "clamp_to_zero", "clamp_to_border"]


# ---- reference sampler, from the specification's formulas ------------------------------------

def wrap(i, n, mode):
    """Texel index i on an axis of n texels after the address mode; None: outside (border)."""
    if mode == "repeat":
        return i % n
    if mode == "mirrored_repeat":
        m = i % (2 * n)
        return m if m < n else 2 * n - 1 - m
    if mode == "mirrored_clamp_to_edge":
        return min(-1 - i if i < 0 else i, n - 1)
    if mode in ("clamp_to_zero", "clamp_to_border"):
        return i if 0 <= i < n else None
    return min(max(i, 0), n - 1)


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
