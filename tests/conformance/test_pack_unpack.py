"""MSL's pack and unpack functions (the specification's "Pack and Unpack Functions"), float and
half forms, bit for bit against a NumPy model of the specification's conversion rules for
normalized integers (the rules texture writes and reads follow, metal_texture_sampling.h):

* float to n-bit unorm: NaN is 0, clamp to [0, 1], times 2^n - 1 in float32, round to nearest
  even; snorm: clamp to [-1, 1], times 2^(n-1) - 1;
* unorm to float: c / (2^n - 1) correctly rounded; snorm: max(c / (2^(n-1) - 1), -1);
* sRGB: the specification's linear-to-sRGB and sRGB-to-linear formulas on r, g, b (alpha linear);
  pow is libm's, so the model allows one code where pow's last bit can move a halfway case, and
  a few float ulps on unpacking.

Component 0 is in the lowest bits. Inputs: NaN, +-inf, out of range, +-0, exact codes and the
halfway points between codes (ties go to even), and random values.
"""

from __future__ import annotations

import numpy as np
import pytest

from mcconf import KernelSet, assert_equal

f32 = np.float32

KS = KernelSet([
    """
kernel void pk_float(const device float4* v [[buffer(0)]], device uint* out [[buffer(1)]],
                     device ushort* o565 [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    float4 x = v[i];
    out[i * 7 + 0] = pack_float_to_unorm4x8(x);
    out[i * 7 + 1] = pack_float_to_snorm4x8(x);
    out[i * 7 + 2] = pack_float_to_unorm2x16(x.xy);
    out[i * 7 + 3] = pack_float_to_snorm2x16(x.zw);
    out[i * 7 + 4] = pack_float_to_unorm10a2(x);
    out[i * 7 + 5] = pack_float_to_srgb_unorm4x8(x);
    out[i * 7 + 6] = metal::pack_float_to_unorm2x16(x.wz);
    o565[i] = pack_float_to_unorm565(x.xyz);
}
""",
    """
kernel void pk_half(const device half4* v [[buffer(0)]], device uint* out [[buffer(1)]],
                    device ushort* o565 [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    half4 x = v[i];
    out[i * 6 + 0] = pack_half_to_unorm4x8(x);
    out[i * 6 + 1] = pack_half_to_snorm4x8(x);
    out[i * 6 + 2] = pack_half_to_unorm2x16(x.xy);
    out[i * 6 + 3] = pack_half_to_snorm2x16(x.zw);
    out[i * 6 + 4] = pack_half_to_unorm10a2(x);
    out[i * 6 + 5] = pack_half_to_srgb_unorm4x8(x);
    o565[i] = pack_half_to_unorm565(x.xyz);
}
""",
    """
kernel void unpk_float(const device uint* u [[buffer(0)]], device float4* f4 [[buffer(1)]],
                       device float2* f2 [[buffer(2)]], device float4* f3 [[buffer(3)]],
                       uint i [[thread_position_in_grid]]) {
    uint x = u[i];
    f4[i * 4 + 0] = unpack_unorm4x8_to_float(x);
    f4[i * 4 + 1] = unpack_snorm4x8_to_float(x);
    f4[i * 4 + 2] = unpack_unorm10a2_to_float(x);
    f4[i * 4 + 3] = unpack_unorm4x8_srgb_to_float(x);
    f2[i * 2 + 0] = unpack_unorm2x16_to_float(x);
    f2[i * 2 + 1] = unpack_snorm2x16_to_float(x);
    f3[i] = float4(unpack_unorm565_to_float(ushort(x)), 0.0f);
}
""",
    """
kernel void unpk_half(const device uint* u [[buffer(0)]], device half4* h4 [[buffer(1)]],
                      device half2* h2 [[buffer(2)]], device half4* h3 [[buffer(3)]],
                      uint i [[thread_position_in_grid]]) {
    uint x = u[i];
    h4[i * 4 + 0] = unpack_unorm4x8_to_half(x);
    h4[i * 4 + 1] = unpack_snorm4x8_to_half(x);
    h4[i * 4 + 2] = unpack_unorm10a2_to_half(x);
    h4[i * 4 + 3] = unpack_unorm4x8_srgb_to_half(x);
    h2[i * 2 + 0] = unpack_unorm2x16_to_half(x);
    h2[i * 2 + 1] = unpack_snorm2x16_to_half(x);
    h3[i] = half4(unpack_unorm565_to_half(ushort(x)), 0.0h);
}
""",
])


# ---- the NumPy model ------------------------------------------------------------------------

def to_unorm(v, bits):
    v = np.asarray(v, f32)
    c = np.where(np.isnan(v), f32(0), np.clip(v, f32(0), f32(1))).astype(f32)
    with np.errstate(invalid="ignore"):
        return np.rint(c * f32(2**bits - 1)).astype(np.uint32)  # float32 product, ties to even


def to_snorm(v, bits):
    v = np.asarray(v, f32)
    c = np.where(np.isnan(v), f32(0), np.clip(v, f32(-1), f32(1))).astype(f32)
    code = np.rint(c * f32(2 ** (bits - 1) - 1)).astype(np.int64)
    return (code & (2**bits - 1)).astype(np.uint32)


def linear_to_srgb(c):
    c = np.asarray(c, np.float64)
    c = np.where(np.isnan(c), 0.0, np.clip(c, 0.0, 1.0))
    with np.errstate(invalid="ignore"):
        return np.where(c < 0.0031308, 12.92 * c, 1.055 * np.power(c, 1 / 2.4) - 0.055)


def srgb_to_linear(c):
    c = np.asarray(c, np.float64)
    return np.where(c <= 0.04045, c / 12.92, np.power((c + 0.055) / 1.055, 2.4))


def pack(codes, widths):
    out = np.zeros(codes[0].shape, np.uint64)
    shift = 0
    for c, w in zip(codes, widths):
        out |= c.astype(np.uint64) << np.uint64(shift)
        shift += w
    return out.astype(np.uint32)


def fields(x, widths, signed=False):
    x = np.asarray(x, np.uint64)
    out, shift = [], 0
    for w in widths:
        c = ((x >> np.uint64(shift)) & np.uint64(2**w - 1)).astype(np.int64)
        if signed:
            c = np.where(c >= 2 ** (w - 1), c - 2**w, c)
        out.append(c)
        shift += w
    return out


def from_unorm(c, bits):
    return (np.asarray(c, np.float64) / (2**bits - 1)).astype(f32)


def from_snorm(c, bits):
    return np.maximum(np.asarray(c, np.float64) / (2 ** (bits - 1) - 1), -1.0).astype(f32)


def edge_inputs(rng):
    """Per component: NaN, infinities, out of range, signed zeros, exact codes, halfway points
    between codes of every width (ties to even in both directions) and their neighbours."""
    special = [np.nan, np.inf, -np.inf, 2.0, -2.0, 1.0, -1.0, 0.0, -0.0, 1e-30, -1e-30, 0.5, -0.5, 1.5, -1.5]
    halves = []
    for m in (3, 31, 63, 127, 255, 1023, 32767, 65535):
        k = np.array([0, 1, 2, 3, m // 2 - 1, m // 2, m - 2, m - 1], np.float64)
        halves += list((k + 0.5) / m) + list(-(k + 0.5) / m) + list(k / m)
    vals = np.array(special + halves, f32)
    vals = np.concatenate([vals, np.nextafter(vals, f32(np.inf)), np.nextafter(vals, f32(-np.inf)),
                           rng.uniform(-1.2, 1.2, 400).astype(f32)])
    n = -(-len(vals) // 4) * 4
    vals = np.resize(vals, n)
    # every value in every component: four rotations
    return np.concatenate([np.roll(vals, k).reshape(-1, 4) for k in range(4)]).astype(f32)


def expected_packs(x):
    x0, x1, x2, x3 = (x[:, k] for k in range(4))
    srgb = [to_unorm(linear_to_srgb(c).astype(f32), 8) for c in (x0, x1, x2)]
    return [
        pack([to_unorm(c, 8) for c in (x0, x1, x2, x3)], [8] * 4),
        pack([to_snorm(c, 8) for c in (x0, x1, x2, x3)], [8] * 4),
        pack([to_unorm(x0, 16), to_unorm(x1, 16)], [16, 16]),
        pack([to_snorm(x2, 16), to_snorm(x3, 16)], [16, 16]),
        pack([to_unorm(x0, 10), to_unorm(x1, 10), to_unorm(x2, 10), to_unorm(x3, 2)], [10, 10, 10, 2]),
        pack(srgb + [to_unorm(x3, 8)], [8] * 4),
        pack([to_unorm(x3, 16), to_unorm(x2, 16)], [16, 16]),
    ], pack([to_unorm(x0, 5), to_unorm(x1, 6), to_unorm(x2, 5)], [5, 6, 5]).astype(np.uint16)


def srgb_safe(x):
    """Rows whose sRGB codes cannot depend on pow's last bit: no channel within 1e-4 of a
    halfway point between two codes."""
    s = linear_to_srgb(x[:, :3].astype(np.float64)) * 255.0
    return np.all(np.abs(s - np.floor(s) - 0.5) > 1e-4, axis=1)


def check_packs(out, o565, x, ncols):
    want, want565 = expected_packs(x)
    safe = srgb_safe(x)
    for k in range(ncols):
        if k == 5:  # sRGB: exact where pow's rounding cannot matter, within one code elsewhere
            assert_equal(out[safe, k], want[k][safe], err_msg="srgb")
            got = out[~safe, k].view(np.uint8).reshape(-1, 4).astype(int)
            ref = want[k][~safe].view(np.uint8).reshape(-1, 4).astype(int)
            assert np.abs(got - ref).max(initial=0) <= 1
        else:
            assert_equal(out[:, k], want[k], err_msg=f"column {k}")
    assert_equal(o565, want565)


def test_pack_float(device, rng):
    x = edge_inputs(rng)
    n = len(x)
    out = np.zeros((n, 7), np.uint32)
    o565 = np.zeros(n, np.uint16)
    KS.get(device, "pk_float")(n, x, out, o565)
    check_packs(out, o565, x, 7)


def test_pack_half(device, rng):
    with np.errstate(over="ignore"):  # FLT_MAX (inf's neighbour) becomes inf
        x = edge_inputs(rng).astype(np.float16)  # NaN and inf stay; the halfway points round to half
    n = len(x)
    out = np.zeros((n, 6), np.uint32)
    o565 = np.zeros(n, np.uint16)
    KS.get(device, "pk_half")(n, x, out, o565)
    check_packs(out, o565, x.astype(f32), 6)


def unpack_inputs(rng):
    # every byte value in every lane, the snorm extremes (-128, -127, 127), every 16-bit edge
    b = np.arange(256, dtype=np.uint32)
    bytes_ = b | (b << 8) | (b << 16) | (b << 24)
    shorts = np.array([0, 1, 2, 0x7FFE, 0x7FFF, 0x8000, 0x8001, 0xFFFE, 0xFFFF, 0x3FF, 0x400, 0x1F, 0x20, 0x7E0],
                      np.uint32)
    pairs = (shorts[:, None] | (shorts[None, :] << 16)).ravel()
    return np.concatenate([bytes_, np.roll(bytes_, 1) ^ 0xA5C3, pairs,
                           rng.integers(0, 2**32, 300, dtype=np.uint64).astype(np.uint32)])


def expected_unpacks(u):
    b = fields(u, [8] * 4)
    sb = fields(u, [8] * 4, signed=True)
    s16 = fields(u, [16, 16], signed=True)
    u16 = fields(u, [16, 16])
    p10 = fields(u, [10, 10, 10, 2])
    p565 = fields(u & 0xFFFF, [5, 6, 5])
    srgb = [srgb_to_linear(from_unorm(c, 8).astype(np.float64)) for c in b[:3]] + [from_unorm(b[3], 8)]
    return dict(
        unorm4x8=np.stack([from_unorm(c, 8) for c in b], 1),
        snorm4x8=np.stack([from_snorm(c, 8) for c in sb], 1),
        unorm10a2=np.stack([from_unorm(c, w) for c, w in zip(p10, [10, 10, 10, 2])], 1),
        srgb=np.stack(srgb, 1),
        unorm2x16=np.stack([from_unorm(c, 16) for c in u16], 1),
        snorm2x16=np.stack([from_snorm(c, 16) for c in s16], 1),
        unorm565=np.stack([from_unorm(c, w) for c, w in zip(p565, [5, 6, 5])] + [np.zeros(len(u), f32)], 1),
    )


def test_unpack_float(device, rng):
    u = unpack_inputs(rng)
    n = len(u)
    f4 = np.zeros((n, 4, 4), f32)
    f2 = np.zeros((n, 2, 2), f32)
    f3 = np.zeros((n, 4), f32)
    KS.get(device, "unpk_float")(n, u, f4, f2, f3)
    want = expected_unpacks(u)
    assert_equal(f4[:, 0], want["unorm4x8"])
    assert_equal(f4[:, 1], want["snorm4x8"])
    assert_equal(f4[:, 2], want["unorm10a2"])
    np.testing.assert_allclose(f4[:, 3], want["srgb"], rtol=4e-7, atol=1e-9)  # pow: a few ulps
    assert_equal(f4[:, 3, 3], want["srgb"][:, 3].astype(f32))  # alpha: linear, exact
    assert_equal(f2[:, 0], want["unorm2x16"])
    assert_equal(f2[:, 1], want["snorm2x16"])
    assert_equal(f3, want["unorm565"])
    # the snorm extremes: -128 and -127 both give -1 (the specification's max(c / 127, -1))
    assert_equal(f4[:128 + 2, 1, 0][[128, 129]], np.array([-1.0, -1.0], f32))


def test_unpack_half(device, rng):
    u = unpack_inputs(rng)
    n = len(u)
    h4 = np.zeros((n, 4, 4), np.float16)
    h2 = np.zeros((n, 2, 2), np.float16)
    h3 = np.zeros((n, 4), np.float16)
    KS.get(device, "unpk_half")(n, u, h4, h2, h3)
    want = {k: v.astype(np.float16) for k, v in expected_unpacks(u).items()}
    assert_equal(h4[:, 0], want["unorm4x8"])
    assert_equal(h4[:, 1], want["snorm4x8"])
    assert_equal(h4[:, 2], want["unorm10a2"])
    np.testing.assert_allclose(h4[:, 3].astype(f32), want["srgb"].astype(f32), rtol=1e-3, atol=1e-7)
    assert_equal(h2[:, 0], want["unorm2x16"])
    assert_equal(h2[:, 1], want["snorm2x16"])
    assert_equal(h3, want["unorm565"])


@pytest.mark.parametrize("bits", [8, 16])
def test_unorm_round_trip_is_exact(bits):
    """The model itself: every code unpacks and packs back to itself (what the kernels' exact
    comparisons rest on)."""
    c = np.arange(2**bits, dtype=np.int64)
    assert_equal(to_unorm(from_unorm(c, bits), bits), c.astype(np.uint32))
