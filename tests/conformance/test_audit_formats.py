"""Fidelity audit of the pixel formats metalcall refused until session 23 (sRGB, BGRA, packed
10-10-10-2, 11-11-10 float and shared-exponent 9-9-9-e5) and of the texture types around them,
checked on every device against NumPy models written from the MSL specification's conversion
rules and the formats' definitions (texture_models.py: the sRGB formulas in float64, the small
floats' encoder by enumerating every code, rgb9e5 by OpenGL's shared-exponent algorithm).
"""

from __future__ import annotations

import numpy as np
import pytest

import metalcall as mc
from mcconf import KernelSet
from texture_models import (PACKED_FORMATS, SRGB_FORMATS, linear_to_srgb_code, rgb9e5_decode, rgb9e5_encode,
                            rgb10a2_decode, srgb_to_linear, ufloat_decode, ufloat_encode)

KS = KernelSet([
    """
kernel void fmt_read(texture2d<float, access::read> t [[texture(0)]], device float4* out [[buffer(0)]],
                     uint2 p [[thread_position_in_grid]]) {
    out[p.y * t.get_width() + p.x] = t.read(p);
}
""",
    """
kernel void fmt_read_half(texture2d<half, access::read> t [[texture(0)]], device float4* out [[buffer(0)]],
                          uint2 p [[thread_position_in_grid]]) {
    out[p.y * t.get_width() + p.x] = float4(t.read(p));
}
""",
    """
kernel void fmt_sample(texture2d<float> t [[texture(0)]], sampler s [[sampler(0)]],
                       const device float2* uv [[buffer(0)]], device float4* out [[buffer(1)]],
                       uint i [[thread_position_in_grid]]) {
    out[2 * i] = t.sample(s, uv[i]);
    out[2 * i + 1] = t.gather(s, uv[i], int2(0), component::x);
}
""",
    """
kernel void fmt_write(texture2d<float, access::write> t [[texture(0)]], const device float4* v [[buffer(0)]],
                      uint2 p [[thread_position_in_grid]]) {
    t.write(v[p.y * t.get_width() + p.x], p);
}
""",
    """
kernel void fmt_write_half(texture2d<half, access::write> t [[texture(0)]], const device float4* v [[buffer(0)]],
                           uint2 p [[thread_position_in_grid]]) {
    t.write(half4(v[p.y * t.get_width() + p.x]), p);
}
""",
    """
kernel void fmt_read_uint(texture2d<uint, access::read> t [[texture(0)]], device uint4* out [[buffer(0)]],
                          uint2 p [[thread_position_in_grid]]) {
    out[p.y * t.get_width() + p.x] = t.read(p);
}
""",
    """
kernel void fmt_write_uint(texture2d<uint, access::write> t [[texture(0)]], const device uint4* v [[buffer(0)]],
                           uint2 p [[thread_position_in_grid]]) {
    t.write(v[p.y * t.get_width() + p.x], p);
}
""",
    """
kernel void fmt_1d_array(texture1d_array<float, access::read> t [[texture(0)]],
                         texture1d_array<float, access::write> o [[texture(1)]], texture1d_array<float> st [[texture(2)]],
                         sampler s [[sampler(0)]], device float4* out [[buffer(0)]], device uint* sizes [[buffer(1)]],
                         uint2 p [[thread_position_in_grid]]) {
    const uint w = t.get_width(), i = p.y * w + p.x;
    out[2 * i] = t.read(p.x, p.y);
    out[2 * i + 1] = st.sample(s, (float(p.x) + 0.5f) / float(w), p.y + 1);  // the last element past the end: clamped
    o.write(t.read(ushort(p.x), p.y) * 2.0f, p.x, p.y);
    if (i == 0) { sizes[0] = t.get_width(); sizes[1] = t.get_array_size(); sizes[2] = t.get_num_mip_levels(); }
}
""",
    """
kernel void fmt_texture_buffer(texture_buffer<float> t [[texture(0)]], texture_buffer<uint, access::write> o [[texture(1)]],
                               texture_buffer<half, access::read_write> rw [[texture(2)]], device float4* out [[buffer(0)]],
                               device uint* width [[buffer(1)]], uint i [[thread_position_in_grid]]) {
    out[i] = t.read(i);
    o.write(uint4(i, 2 * i, 3 * i, 4 * i), i);
    rw.write(rw.read(i) + half4(1.0h), i);
    if (i == 0) width[0] = t.get_width();
}
""",
    """
kernel void fmt_atomics_1d(texture1d_array<uint, access::read_write> a [[texture(0)]],
                           texture_buffer<int, access::read_write> b [[texture(1)]], device uint4* old [[buffer(0)]],
                           uint i [[thread_position_in_grid]]) {
    old[i] = a.atomic_fetch_add(i % 4, i % 3, uint4(i + 1));
    b.atomic_fetch_max(i % 5, int4(int(i) - 20));
    b.atomic_fetch_sub(5, int4(1));
}
""",
    """
kernel void fmt_layered(texture2d_array<float> a [[texture(0)]], texture3d<float> v [[texture(1)]],
                        texture2d<float> p [[texture(2)]], sampler s [[sampler(0)]], device float4* out [[buffer(0)]],
                        uint i [[thread_position_in_grid]]) {
    out[4 * i] = a.read(uint2(i % 4, 1), i % 3);
    out[4 * i + 1] = v.read(uint3(i % 4, 1, i % 2));
    out[4 * i + 2] = p.sample(s, float2((float(i % 3) + 1.0f) / 4.0f, 0.5f));
    out[4 * i + 3] = p.gather(s, float2(0.5f, 0.5f), int2(0), component::z);
}
""",
    """
kernel void fmt_cube_edge(texturecube<float> t [[texture(0)]], sampler s [[sampler(0)]],
                          const device float4* dir [[buffer(0)]], device float4* out [[buffer(1)]],
                          uint i [[thread_position_in_grid]]) {
    out[i] = t.sample(s, dir[i].xyz);
}
""",
    """
kernel void fmt_round_trip(texture2d<float, access::read_write> t [[texture(0)]], uint2 p [[thread_position_in_grid]]) {
    t.write(t.read(p), p);
}
""",
])

NEW_FORMATS = SRGB_FORMATS + ["bgra8unorm"] + PACKED_FORMATS


def read_all(device, tex, kernel="fmt_read"):
    h, w = tex.height, tex.width
    out = np.zeros((h * w, 4), np.float32)
    KS.get(device, kernel)((w, h), out, textures=[tex])
    return out


def write_all(device, tex, values, kernel="fmt_write"):
    h, w = tex.height, tex.width
    vals = np.ascontiguousarray(np.asarray(values).reshape(h * w, 4))
    KS.get(device, kernel)((w, h), vals, textures=[tex])
    return np.asarray(tex).copy()


def ulps(got, want):
    """Distance in float32 ulps (both finite)."""
    g = np.asarray(got, np.float32).view(np.int32).astype(np.int64)
    w = np.asarray(want, np.float32).view(np.int32).astype(np.int64)
    return np.abs(g - w)


def need_format(device, fmt, write=False):
    """Skips where Metal's feature set tables withhold the format (or kernel writes to it) from the
    device's GPU: a Mac2-only GPU (the simulator's intel and amd families) has no r8/rg8unorm_srgb
    and writes neither sRGB formats nor rgb9e5float (test_metal_sim_format_capabilities checks
    that those are refused)."""
    if device.backend not in ("metal", "metal-sim") or device.architecture != "mac2":
        return
    if fmt in ("r8unorm_srgb", "rg8unorm_srgb") or (write and (fmt in SRGB_FORMATS or fmt == "rgb9e5float")):
        pytest.skip(f"{device.name} has no {fmt}{' writes' if write else ''} (Metal's feature set tables)")


def channels_of(fmt):
    return 4 if fmt.startswith(("rgba", "bgra")) else 2 if fmt.startswith("rg") else 1


# ---- names, host views, the Python API ------------------------------------------------------

@pytest.mark.parametrize("fmt", NEW_FORMATS)
def test_format_made_and_viewed(device, fmt):
    """Each format is made by name (before: ArgumentError "unknown pixel format") and its host
    view shows the raw texels: sRGB/BGRA as their bytes in memory order, packed formats as one
    uint32 word per texel."""
    need_format(device, fmt)
    t = device.texture((3, 5), fmt, usage="read")
    assert t.format == fmt
    view = np.asarray(t)
    if fmt in PACKED_FORMATS:
        assert view.dtype == np.uint32 and view.shape == (3, 5, 1)
    else:
        assert view.dtype == np.uint8 and view.shape == (3, 5, channels_of(fmt))
    assert not view.any()
    raw = np.arange(3 * 5 * view.shape[2], dtype=view.dtype).reshape(view.shape)
    t2 = device.texture_from(raw, format=fmt, usage="read")
    assert t2.format == fmt and np.array_equal(np.asarray(t2), raw)


def test_unknown_format_names_the_new_ones():
    with pytest.raises(mc.ArgumentError, match="bgra8unorm_srgb.*rgb9e5float"):
        mc.Device("cpu").texture((2, 2), "rgb8unorm")
    for bad in ("rgba16unorm_srgb", "rgba8snorm_srgb", "bgra8unorm_srgb_srgb", "rgb10a2sint", "r32uint_srgb"):
        with pytest.raises(mc.ArgumentError, match="unknown pixel format"):
            mc.Device("cpu").texture((2, 2), bad)


def test_texture_from_checks_sizes():
    """texture_from keeps its size check: a packed format takes one uint32 per texel."""
    dev = mc.Device("cpu")
    with pytest.raises(mc.ArgumentError, match="does not match"):
        dev.texture_from(np.zeros((2, 2, 4), np.uint8), format="rgb10a2unorm")
    with pytest.raises(mc.ArgumentError, match="does not match"):
        dev.texture_from(np.zeros((2, 2, 1), np.uint32), format="bgra8unorm")


# ---- sRGB ----------------------------------------------------------------------------------------

def memory_order(fmt, components):
    """Component values (r, g, b, a) as they lie in memory: BGRA keeps blue first."""
    c = np.asarray(components)
    return c[..., [2, 1, 0, 3]] if fmt.startswith("bgra") else c[..., :channels_of(fmt)]


@pytest.mark.parametrize("kernel", ["fmt_read", "fmt_read_half"])
@pytest.mark.parametrize("fmt", SRGB_FORMATS)
def test_srgb_read_every_code(device, fmt, kernel):
    """Every code of every channel: r, g, b read as the specification's sRGB-to-linear function
    (float64, rounded once: at most 1 ulp from it, bit-exact in practice), alpha as unorm (c/255),
    missing channels (0, 0, 1). Before: the formats were refused."""
    need_format(device, fmt)
    codes = np.arange(256, dtype=np.uint8)
    comps = np.stack([codes, codes[::-1], np.roll(codes, 85), np.roll(codes, 170)], -1).reshape(16, 16, 4)
    t = device.texture_from(np.ascontiguousarray(memory_order(fmt, comps)), format=fmt, usage="read")
    got = read_all(device, t, kernel)
    n = channels_of(fmt)
    want = np.zeros((256, 4))
    want[:, 3] = 1
    lin = srgb_to_linear(comps.reshape(256, 4)[:, :3] / 255.0)
    want[:, :min(n, 3)] = lin[:, :min(n, 3)]
    if n == 4:
        want[:, 3] = comps.reshape(256, 4)[:, 3] / 255.0
    want32 = want.astype(np.float32)
    if kernel == "fmt_read_half":
        want32 = want32.astype(np.float16).astype(np.float32)
        assert np.array_equal(got, want32), np.argwhere(got != want32)[:4]
    else:
        assert ulps(got, want32).max() <= 1, np.argwhere(ulps(got, want32) > 1)[:4]
    # The specification: a value read from an sRGB texture and written back stores its code.
    need_format(device, fmt, write=True)
    t2 = device.texture_from(np.ascontiguousarray(memory_order(fmt, comps)), format=fmt)
    KS.get(device, "fmt_round_trip")((16, 16), textures=[t2])
    assert np.array_equal(np.asarray(t2), np.asarray(t))


@pytest.mark.parametrize("kernel", ["fmt_write", "fmt_write_half"])
@pytest.mark.parametrize("fmt", SRGB_FORMATS)
def test_srgb_write(device, fmt, kernel, rng):
    """Writes encode r, g, b by the specification's linear-to-sRGB function (NaN 0, clamped),
    times 255 rounded to nearest even; alpha as unorm; only the format's channels are stored."""
    need_format(device, fmt, write=True)
    vals = rng.uniform(-0.25, 1.25, (32 * 16, 4))
    vals[:64, :3] = srgb_to_linear(np.arange(192).reshape(64, 3) / 255.0)  # the codes' own values
    vals[64:72] = [[np.nan, np.inf, -np.inf, 0.5]] * 8
    vals[72:80] = [[0.0031308, 0.0031307, 1e-9, 1.0]] * 8
    vals = vals.astype(np.float32)
    if kernel == "fmt_write_half":
        vals = vals.astype(np.float16).astype(np.float32)
    t = device.texture((16, 32), fmt)
    raw = write_all(device, t, vals, kernel)
    want = np.zeros((len(vals), 4), np.uint8)
    want[:, :3] = linear_to_srgb_code(vals[:, :3])
    a = np.clip(np.nan_to_num(vals[:, 3].astype(np.float32)), 0, 1) * np.float32(255)
    want[:, 3] = np.rint(a)
    want = memory_order(fmt, want).reshape(raw.shape)
    bad = np.argwhere(raw != want)
    assert not len(bad), [(vals.reshape(16, 32, 4)[tuple(b[:2])], raw[tuple(b)], want[tuple(b)]) for b in bad[:4]]


@pytest.mark.parametrize("fmt", ["rgba8unorm_srgb", "bgra8unorm_srgb"])
def test_srgb_filters_in_linear_space(device, fmt):
    """Linear filtering blends the linearised texels (Metal converts before filtering): halfway
    between codes 0 and 255 is 0.5, not srgb_to_linear(0.5) = 0.214; gather returns linear values."""
    comps = np.zeros((1, 2, 4), np.uint8)
    comps[0, 1] = [255, 188, 64, 255]
    t = device.texture_from(np.ascontiguousarray(memory_order(fmt, comps)), format=fmt, usage="read")
    s = device.sampler(filter="linear")
    uv = np.array([[0.5, 0.5], [0.375, 0.5]], np.float32)
    out = np.zeros((4, 4), np.float32)
    KS.get(device, "fmt_sample")(2, uv, out, textures=[t], samplers=[s])
    lin = np.concatenate([srgb_to_linear(comps[0, :, :3] / 255.0), comps[0, :, 3:] / 255.0], -1)
    np.testing.assert_allclose(out[0], 0.5 * lin[0] + 0.5 * lin[1], rtol=0, atol=2e-7)
    np.testing.assert_allclose(out[2], 0.75 * lin[0] + 0.25 * lin[1], rtol=0, atol=2e-7)
    np.testing.assert_allclose(out[1], [lin[0, 0], lin[1, 0], lin[1, 0], lin[0, 0]], rtol=0, atol=1e-7)


# ---- BGRA --------------------------------------------------------------------------------------

def test_bgra_component_order(device, rng):
    """bgra8unorm: memory holds b, g, r, a; kernels read and write (r, g, b, a) (before: refused)."""
    raw = rng.integers(0, 256, (4, 8, 4), dtype=np.uint8)
    t = device.texture_from(raw, format="bgra8unorm")
    got = read_all(device, t)
    want = raw.reshape(-1, 4)[:, [2, 1, 0, 3]] / 255.0
    assert np.array_equal(got, want.astype(np.float32))
    t2 = device.texture((4, 8), "bgra8unorm")
    assert np.array_equal(write_all(device, t2, got), raw)


# ---- rgb10a2 -----------------------------------------------------------------------------------

def test_rgb10a2unorm_every_code(device):
    """Every 10-bit code of r, g, b and 2-bit code of a reads c / (2^n - 1), correctly rounded;
    written back, each stores its code (red in the lowest bits, as Apple's layout)."""
    c = np.arange(1024)
    words = (c | np.roll(c, 341) << 10 | np.roll(c, 682) << 20 | (c % 4) << 30).astype(np.uint32)
    t = device.texture_from(words.reshape(32, 32, 1), format="rgb10a2unorm")
    got = read_all(device, t)
    want = rgb10a2_decode(words).astype(np.float32)
    assert np.array_equal(got, want), np.argwhere(got != want)[:4]
    t2 = device.texture((32, 32), "rgb10a2unorm")
    assert np.array_equal(write_all(device, t2, got).ravel(), words)


def test_rgb10a2unorm_write_rounds_and_clamps(device, rng):
    vals = rng.uniform(-0.2, 1.2, (256, 4)).astype(np.float32)
    vals[:4] = [[np.nan, np.inf, -np.inf, 0.5 / 3], [0.5 / 1023, 1.5 / 1023, 2.5 / 1023, 2.5 / 3],
                [1.0, 0.0, 1e-30, 1.0], [0.49951124, 0.5004888, 0.5, 0.5]]
    t = device.texture((16, 16), "rgb10a2unorm")
    raw = write_all(device, t, vals).ravel().astype(np.int64)
    # Metal's float-to-unorm rule: NaN 0, clamp, times 2^n - 1 in float, round to nearest even.
    q = np.rint(np.clip(np.nan_to_num(vals, nan=0.0), 0, 1) * np.array([1023, 1023, 1023, 3], np.float32))
    want = q[:, 0].astype(np.int64) | q[:, 1].astype(np.int64) << 10 | q[:, 2].astype(np.int64) << 20 | \
        q[:, 3].astype(np.int64) << 30
    assert np.array_equal(raw, want), np.argwhere(raw != want)[:4]


def test_rgb10a2uint(device, rng):
    """rgb10a2uint reads its fields as integers and saturates writes (Metal leaves overflow
    undefined); it needs an unsigned element type."""
    words = rng.integers(0, 2 ** 32, 64, dtype=np.uint64).astype(np.uint32)
    t = device.texture_from(words.reshape(8, 8, 1), format="rgb10a2uint")
    out = np.zeros((64, 4), np.uint32)
    KS.get(device, "fmt_read_uint")((8, 8), out, textures=[t])
    assert np.array_equal(out, rgb10a2_decode(words, integer=True))
    vals = rng.integers(0, 3000, (64, 4), dtype=np.uint32)
    t2 = device.texture((8, 8), "rgb10a2uint")
    KS.get(device, "fmt_write_uint")((8, 8), vals, textures=[t2])
    v = np.minimum(vals.astype(np.int64), [1023, 1023, 1023, 3])
    assert np.array_equal(np.asarray(t2).ravel(), (v[:, 0] | v[:, 1] << 10 | v[:, 2] << 20 | v[:, 3] << 30).astype(np.uint32))
    with pytest.raises(mc.ArgumentError, match="element type"):
        KS.get(device, "fmt_read")((8, 8), np.zeros((64, 4), np.float32), textures=[t])


# ---- rg11b10float --------------------------------------------------------------------------------

def test_rg11b10float_every_code(device):
    """Every 11-bit code of r and g and 10-bit code of b (5-bit exponent, no sign: denormals,
    infinity, NaN) reads its exact value; alpha reads 1."""
    c11 = np.arange(2048)
    words = (c11 | np.roll(c11, 700) << 11 | (c11 % 1024) << 22).astype(np.uint32)
    t = device.texture_from(words.reshape(32, 64, 1), format="rg11b10float")
    got = read_all(device, t).astype(np.float64)
    want = np.stack([ufloat_decode(c11, 6), ufloat_decode(np.roll(c11, 700), 6), ufloat_decode(c11 % 1024, 5),
                     np.ones(2048)], -1)
    assert np.array_equal(np.isnan(got), np.isnan(want))
    ok = ~np.isnan(want)
    assert np.array_equal(got[ok], want[ok]), np.argwhere((got != want) & ok)[:4]


def test_rg11b10float_write(device, rng):
    """Writes round to nearest even among the codes (as writes to half do), store 0 for negative
    values, a NaN for NaN, infinity from halfway past the largest finite value (65024 for 11 bits)."""
    n = 64 * 32
    v = np.exp2(rng.uniform(-24, 17, (n, 3))) * rng.choice([1, 1, 1, -1], (n, 3))
    finite6 = ufloat_decode(np.arange(31 << 6), 6)
    finite5 = ufloat_decode(np.arange(31 << 5), 5)
    ties = np.concatenate([(finite6[:-1] + finite6[1:]) / 2, [65024.0, 65024.0 + 1024, 65024.0 + 1023.99]])
    v[:len(ties), 0] = ties[:n]
    v[:len(ties), 1] = ties[::-1][:n]
    tb = (finite5[:-1] + finite5[1:]) / 2
    v[:len(tb), 2] = tb
    v[-8:] = [[np.nan, np.inf, -np.inf]] * 4 + [[-0.0, 0.0, 6e-8]] * 4
    vals = np.concatenate([v, np.ones((n, 1))], -1).astype(np.float32)
    t = device.texture((32, 64), "rg11b10float")
    raw = write_all(device, t, vals).ravel().astype(np.int64)
    v32 = vals.astype(np.float64)  # the float32 values the kernel writes
    got = [raw & 2047, (raw >> 11) & 2047, raw >> 22]
    want = [ufloat_encode(v32[:, 0], 6), ufloat_encode(v32[:, 1], 6), ufloat_encode(v32[:, 2], 5)]
    for k, (g, w, m) in enumerate(zip(got, want, (6, 6, 5))):
        nan = np.isnan(v32[:, k])
        assert np.all((g[nan] >> m) == 31) and np.all(g[nan] & ((1 << m) - 1))
        bad = np.nonzero((g != w) & ~nan)[0]
        assert not len(bad), [(k, v32[i, k], g[i], w[i]) for i in bad[:4]]


# ---- rgb9e5float ---------------------------------------------------------------------------------

def test_rgb9e5float_read(device, rng):
    """A word reads m x 2^(e - 24) for each 9-bit mantissa m and the shared exponent e; alpha 1."""
    words = rng.integers(0, 2 ** 32, 32 * 32, dtype=np.uint64).astype(np.uint32)
    words[:32] = (np.arange(32) << 27 | 511 | 1 << 9 | 256 << 18).astype(np.uint32)
    t = device.texture_from(words.reshape(32, 32, 1), format="rgb9e5float", usage="read")
    got = read_all(device, t).astype(np.float64)
    want = np.concatenate([rgb9e5_decode(words), np.ones((len(words), 1))], -1)
    assert np.array_equal(got, want), np.argwhere(got != want)[:4]


def test_rgb9e5float_write(device, rng):
    """Writes by the shared-exponent algorithm: clamp to [0, 65408] (NaN 0), the exponent of the
    largest component (one more where its mantissa rounds to 512), mantissas rounded half up."""
    need_format(device, "rgb9e5float", write=True)
    n = 32 * 32
    v = np.exp2(rng.uniform(-26, 17, (n, 3))) * rng.choice([1, 1, 1, -1], (n, 3))
    v[:n // 4] = np.exp2(rng.uniform(-3, 3, (n // 4, 1))) * rng.uniform(0, 1, (n // 4, 3))  # shared exponents
    v[-6:] = [[np.nan, np.inf, 1.0], [-np.inf, 0.0, 0.0], [511.5 / 512, 0.25, 0.0], [65408.0, 1e9, 3.0],
              [2 ** -24, 2 ** -25, 3 * 2 ** -26], [0.0, 0.0, 0.0]]
    vals = np.concatenate([v, np.ones((n, 1))], -1).astype(np.float32)
    t = device.texture((32, 32), "rgb9e5float")
    raw = write_all(device, t, vals).ravel().astype(np.int64)
    want = rgb9e5_encode(vals[:, :3].astype(np.float64))
    bad = np.nonzero(raw != want)[0]
    assert not len(bad), [(vals[i, :3], hex(raw[i]), hex(want[i])) for i in bad[:4]]


# ---- what every format shares ----------------------------------------------------------------------

@pytest.mark.parametrize("fmt,alpha", [("rgb10a2unorm", 0.0), ("rg11b10float", 1.0), ("rgb9e5float", 1.0),
                                       ("bgra8unorm", 0.0), ("rg8unorm_srgb", 1.0)])
def test_clamp_to_zero_alpha(device, fmt, alpha):
    """clamp_to_zero samples transparent black, or opaque black for formats without alpha
    (before the fix in this file: the packed formats' one word counted as a format without alpha)."""
    need_format(device, fmt)
    t = device.texture((2, 2), fmt, usage="read")
    s = device.sampler(address="clamp_to_zero")
    out = np.zeros((2, 4), np.float32)
    KS.get(device, "fmt_sample")(1, np.array([[-3.0, 0.5]], np.float32), out, textures=[t], samplers=[s])
    assert list(out[0]) == [0, 0, 0, alpha]


@pytest.mark.parametrize("family,writes", [("apple7", True), ("apple3", True), ("intel", False), ("amd", False)])
def test_metal_sim_format_capabilities(family, writes):
    """Metal's feature set tables: kernels write sRGB formats on Apple GPUs only (Apple2 on),
    rgb9e5float on Apple3 on; R8/RG8Unorm_sRGB exist on Apple GPUs alone; rgb10a2 and
    rg11b10float are writable everywhere. A texture made with write usage where the GPU has no
    shader write is an ArgumentError, as Metal's validation refuses the descriptor."""
    dev = mc.Device("metal-sim", family=family)
    for fmt in ("rgba8unorm_srgb", "bgra8unorm_srgb", "rgb9e5float", "r8unorm_srgb"):
        if writes:
            dev.texture((2, 2), fmt)
        else:
            with pytest.raises(mc.ArgumentError, match=fmt):
                dev.texture((2, 2), fmt)
    for fmt in ("rgba8unorm_srgb", "bgra8unorm_srgb", "rgb9e5float"):
        dev.texture((2, 2), fmt, usage="read")
    for fmt in ("rgb10a2unorm", "rgb10a2uint", "rg11b10float", "bgra8unorm"):
        dev.texture((2, 2), fmt)
    if not writes:
        with pytest.raises(mc.ArgumentError, match="r8unorm_srgb"):
            dev.texture((2, 2), "r8unorm_srgb", usage="read")


# ---- texture1d_array, texture_buffer -----------------------------------------------------------

@pytest.mark.parametrize("fmt", ["rgba32float", "rgba8unorm_srgb"])
def test_texture1d_array(device, fmt, rng):
    """texture1d_array (before: a CompileError naming the parameter): read(x, element) and
    write(c, x, element) by element, sample(s, x, element) with the element clamped as Metal
    clamps it, get_width / get_array_size / get_num_mip_levels; the host view is (elements, w, c)."""
    n, w = 3, 8
    if fmt == "rgba32float":
        raw = rng.uniform(-2, 2, (n, w, 4)).astype(np.float32)
        texels = raw.astype(np.float64)
    else:
        raw = rng.integers(0, 256, (n, w, 4), dtype=np.uint8)
        texels = np.concatenate([srgb_to_linear(raw[..., :3] / 255.0), raw[..., 3:] / 255.0], -1)
    t = device.texture_from(raw, format=fmt, type="texture1d_array", usage="read")
    assert t.texture_type == "texture1d_array" and t.array_length == n and np.asarray(t).shape == (n, w, 4)
    o = device.texture((n, w), "rgba32float", type="texture1d_array")
    out = np.zeros((2 * n * w, 4), np.float32)
    sizes = np.zeros(3, np.uint32)
    KS.get(device, "fmt_1d_array")((w, n), out, sizes, textures=[t, o, t], samplers=[device.sampler()])
    assert list(sizes) == [w, n, 1]
    want = texels.astype(np.float32).reshape(n * w, 4)
    assert ulps(out[0::2], want).max() <= 1
    clamped = np.concatenate([texels[1:], texels[-1:]]).astype(np.float32).reshape(n * w, 4)
    assert ulps(out[1::2], clamped).max() <= 1
    assert np.array_equal(np.asarray(o).reshape(n * w, 4), out[0::2] * 2)
    with pytest.raises(mc.ArgumentError, match="1 mip level"):
        device.texture((n, w), fmt, type="texture1d_array", mip_levels=2)


def test_texture_buffer(device):
    """texture_buffer<T, access> (MSL 2.1; before: a CompileError): read(i), write(c, i),
    get_width(), access::read by default; made with type="texture_buffer" and shape (w,), its
    texels a Buffer the host sees in place."""
    w = 37
    src = np.arange(w * 4, dtype=np.float32).reshape(w, 4)
    t = device.texture_from(src, type="texture_buffer")
    o = device.texture((w,), "rgba32uint", type="texture_buffer")
    rw = device.texture_from(np.full((w, 4), 0.5, np.float16), type="texture_buffer")
    out = np.zeros((w, 4), np.float32)
    width = np.zeros(1, np.uint32)
    KS.get(device, "fmt_texture_buffer")(w, out, width, textures=[t, o, rw])
    assert np.array_equal(out, src) and width[0] == w
    i = np.arange(w, dtype=np.uint32)[:, None]
    assert np.array_equal(np.asarray(o), i * np.array([1, 2, 3, 4], np.uint32))
    assert np.array_equal(np.asarray(rw), np.full((w, 4), 1.5, np.float16))
    assert t.texture_type == "texture_buffer" and np.asarray(t).shape == (w, 4)
    wide = device.texture((20000,), "r32float", type="texture_buffer")  # past 16384: a texture buffer's
    assert wide.width == 20000                                          # width is its buffer's
    with pytest.raises(mc.ArgumentError, match="1 mip level"):
        device.texture((w,), "r32float", type="texture_buffer", mip_levels=2)
    with pytest.raises(mc.ArgumentError, match="shape"):
        device.texture((2, w), "r32float", type="texture_buffer")
    with pytest.raises(mc.CompileError, match="texture_buffer"):
        device.compile("kernel void k(texture_buffer<float, access::sample> t [[texture(0)]]) {}")


@pytest.mark.parametrize("packed", ["rg11b10float", "rgb9e5float", "rgb10a2unorm"])
def test_formats_on_layered_types_and_filtering(device, rng, packed):
    """The conversions belong to the texel, whatever the texture type: an sRGB texture2d_array and
    texture3d read linear values; a packed texture2d filters (linear) and gathers its decoded
    values (halfway between texels: their mean)."""
    raw = rng.integers(0, 256, (3, 2, 4, 4), dtype=np.uint8)
    a = device.texture_from(raw, format="rgba8unorm_srgb", type="texture2d_array", usage="read")
    vraw = rng.integers(0, 256, (2, 2, 4, 4), dtype=np.uint8)
    v = device.texture_from(vraw, format="bgra8unorm_srgb", type="texture3d", usage="read")
    words = rng.integers(0, 2 ** 32, (2, 4, 1), dtype=np.uint64).astype(np.uint32)
    if packed == "rg11b10float":  # finite values: exponents below 31
        words &= ~np.uint32(1 << 10 | 1 << 21 | 1 << 31)
    p = device.texture_from(words, format=packed, usage="read")
    n = 12
    out = np.zeros((4 * n, 4), np.float32)
    KS.get(device, "fmt_layered")(n, out, textures=[a, v, p], samplers=[device.sampler(filter="linear")])
    lin = lambda c: np.concatenate([srgb_to_linear(c[..., :3] / 255.0), c[..., 3:] / 255.0], -1)
    decoded = {"rg11b10float": lambda w: np.stack([ufloat_decode(w & 2047, 6), ufloat_decode((w >> 11) & 2047, 6),
                                                   ufloat_decode(w >> 22, 5), np.ones(w.shape)], -1),
               "rgb9e5float": lambda w: np.concatenate([rgb9e5_decode(w), np.ones(w.shape + (1,))], -1),
               "rgb10a2unorm": rgb10a2_decode}[packed](words[..., 0].astype(np.int64))
    for i in range(n):
        assert ulps(out[4 * i], lin(raw[i % 3, 1, i % 4]).astype(np.float32)).max() <= 1
        assert ulps(out[4 * i + 1], lin(vraw[i % 2, 1, i % 4, [2, 1, 0, 3]]).astype(np.float32)).max() <= 1
        k = i % 3  # u = (k + 1) / 4 lies halfway between texels k and k + 1 of both rows
        want = decoded[:, k:k + 2].mean(axis=(0, 1))
        np.testing.assert_allclose(out[4 * i + 2], want, rtol=1e-6, atol=0)
        g = decoded[:, 1:3, 2]
        np.testing.assert_array_equal(out[4 * i + 3], np.float32([g[1, 0], g[1, 1], g[0, 1], g[0, 0]]))


def test_texture_atomics_1d_array_and_buffer(device):
    """MSL 3.1's texture atomics on texture1d_array (coordinate, element) and texture_buffer
    (before: no such members, a CompileError): every add lands, max and sub too."""
    if device.backend == "metal-sim" and device.architecture == "apple3":
        pytest.skip("Apple3 GPUs have no texture atomics (test_texture_atomics.py checks the refusal)")
    n = 64
    a = device.texture((3, 4), "r32uint", type="texture1d_array")
    b = device.texture((6,), "r32sint", type="texture_buffer")
    old = np.zeros((n, 4), np.uint32)
    KS.get(device, "fmt_atomics_1d")(n, old, textures=[a, b])
    i = np.arange(n)
    want = np.zeros((3, 4), np.int64)
    np.add.at(want, (i % 3, i % 4), i + 1)
    assert np.array_equal(np.asarray(a)[..., 0], want)
    want_b = np.array([max(0, max(k - 20 for k in i if k % 5 == j)) for j in range(5)] + [-n])
    assert np.array_equal(np.asarray(b)[:, 0], want_b)
    # Each old value is the texel's sum of the adds before it: a multiple-free check that they are distinct.
    for j in range(3):
        for k in range(4):
            mine = sorted(old[(i % 3 == j) & (i % 4 == k), 0])
            assert mine[0] == 0 and len(set(mine)) == len(mine)


# ---- cube maps: seamless filtering -------------------------------------------------------------

# The face across each edge of each face (u = 0, u = 1, v = 0, v = 1), from Metal's face table
# (texture_models.cube_face): +X's u = 0 edge has z = +1, so +Z lies across it, and so on.
ACROSS = {0: (4, 5, 2, 3), 1: (5, 4, 2, 3), 2: (1, 0, 5, 4), 3: (1, 0, 4, 5), 4: (1, 0, 2, 3), 5: (0, 1, 2, 3)}


def face_point(face, u, v):
    """The direction of point (u, v) of a face (texture_models.cube_face inverted)."""
    sc, tc = 2 * u - 1, 2 * v - 1
    return {0: (1, -tc, -sc), 1: (-1, -tc, sc), 2: (sc, 1, tc), 3: (sc, -1, -tc), 4: (sc, -tc, 1),
            5: (-sc, -tc, -1)}[face]


def test_cube_linear_filtering_is_seamless(device):
    """A linear footprint that straddles a cube face's edge takes its outer texels from the
    adjacent face (Metal's cube maps are seamless, as Vulkan and WebGPU, which run on it,
    require); past a corner, the mean of the three texels that meet there (OpenGL's rule).
    Before: each face was clamped to its edge. Faces hold constants, so the result is the
    footprint's weights over the faces; every edge of every face, and a corner."""
    n = 4
    faces = np.zeros((6, n, n, 4), np.float32)
    for f in range(6):
        faces[f] = [f, 10 * f, 0.5, 1]
    t = device.texture_from(faces, type="texturecube")
    s = device.sampler(filter="linear")
    frac = 0.2 / n  # a quarter of the first texel's outer half: weights 0.7 on the face, 0.3 across
    dirs, want = [], []
    for f in range(6):
        for k, (u, v) in enumerate([(frac, 0.5), (1 - frac, 0.5), (0.5, frac), (0.5, 1 - frac)]):
            dirs.append(face_point(f, u, v))
            want.append(0.7 * faces[f, 0, 0] + 0.3 * faces[ACROSS[f][k], 0, 0])
        # the corner u = v = 0: taps (-1, -1) (mean of three), (-1, 0), (0, -1), (0, 0), each 0.3/0.7
        dirs.append(face_point(f, frac, frac))
        fu, fv = faces[ACROSS[f][0], 0, 0], faces[ACROSS[f][2], 0, 0]
        own = faces[f, 0, 0]
        want.append(0.09 * (own + fu + fv) / 3 + 0.21 * fu + 0.21 * fv + 0.49 * own)
    d = np.concatenate([np.array(dirs, np.float32), np.zeros((len(dirs), 1), np.float32)], 1)
    out = np.zeros((len(d), 4), np.float32)
    KS.get(device, "fmt_cube_edge")(len(d), d, out, textures=[t], samplers=[s])
    np.testing.assert_allclose(out, np.array(want), rtol=0, atol=2e-5)


def test_cube_seams_follow_the_direction(device):
    """Texels holding a smooth function of their centre's direction sample, near every edge, to
    that function of the sample's direction: measured here, within 0.0123 across the fold
    (0.0034 inside a face), where a face clamped to its edge misses by up to 0.030 (half a
    texel's change) and a neighbour read in the wrong orientation by far more."""
    n = 16
    L = np.array([0.3, -0.5, 0.8])
    faces = np.zeros((6, n, n, 4), np.float32)
    for f in range(6):
        for j in range(n):
            for i in range(n):
                p = np.array(face_point(f, (i + 0.5) / n, (j + 0.5) / n), np.float64)
                faces[f, j, i] = [L @ p / np.linalg.norm(p), 0, 0, 1]
    t = device.texture_from(faces, type="texturecube")
    rng = np.random.default_rng(5)
    dirs = []
    for f in range(6):
        for _ in range(25):
            a = rng.uniform(0.1, 0.9)
            e = rng.uniform(0, 0.5 / n)
            for u, v in ((e, a), (1 - e, a), (a, e), (a, 1 - e)):
                dirs.append(face_point(f, u, v))
    d = np.array(dirs, np.float64)
    want = (d @ L) / np.linalg.norm(d, axis=1)
    out = np.zeros((len(d), 4), np.float32)
    d4 = np.concatenate([d, np.zeros((len(d), 1))], 1).astype(np.float32)
    KS.get(device, "fmt_cube_edge")(len(d), d4, out, textures=[t], samplers=[device.sampler(filter="linear")],
                                    threadgroup=(8, 1, 1))  # whole threadgroups, for apple3
    assert np.abs(out[:, 0] - want).max() < 0.02, np.abs(out[:, 0] - want).max()
