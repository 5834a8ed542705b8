"""NumPy models of Metal's pixel formats and samplers, shared by the texture tests
(test_textures.py, test_texture_mipmaps.py): what a kernel reads, writes and samples."""

from __future__ import annotations

import math

import numpy as np
import pytest

import metalcall as mc


def metal_filters_in_hardware(device):
    """Skips on the Metal backend: this test's model is metalcall's software sampler to within
    a few ulp (filter weights, LOD selection between mip levels), and Metal's texture units
    filter with 8-bit weights and pick LODs their own way. Reads, writes and sizes are exact
    there and are tested on Metal too."""
    if device.backend == "metal":
        pytest.skip("modelled to a few ulp on metalcall's software sampler; Metal filters in hardware")


def filtered_atol(device, atol):
    """`atol` for a linearly filtered result, or 4e-3 (1/256 and a little) on the Metal backend,
    whose hardware filters with 8-bit fractional weights."""
    return 4e-3 if device.backend == "metal" else atol

# ---- NumPy models of Metal's pixel formats ---------------------------------------------

FORMATS = [f"{c}{b}{k}" for c in ("r", "rg", "rgba") for b in (8, 16, 32)
           for k in ("unorm", "snorm", "uint", "sint", "float")
           if not (k == "float" and b == 8) and not (k in ("unorm", "snorm") and b == 32)]


def parse(fmt):
    for c, n in (("rgba", 4), ("rg", 2), ("r", 1)):
        if fmt.startswith(c):
            rest = fmt[len(c):]
            break
    bits = int("".join(ch for ch in rest if ch.isdigit()))
    kind = rest[len(str(bits)):]
    return n, bits, kind


def raw_dtype(bits, kind):
    if kind == "float":
        return np.float16 if bits == 16 else np.float32
    signed = kind in ("snorm", "sint")
    return np.dtype(("i" if signed else "u") + str(bits // 8))


def decode(raw, fmt):
    """Texels (h, w, n) as a kernel reads them: 4 components, missing ones (0, 0, 1)."""
    n, bits, kind = parse(fmt)
    if kind == "unorm":
        v = raw.astype(np.float64) / (2 ** bits - 1)
    elif kind == "snorm":
        v = np.maximum(raw.astype(np.float64) / (2 ** (bits - 1) - 1), -1.0)
    else:
        v = raw.astype(np.float64)
    out = np.zeros(raw.shape[:-1] + (4,))
    out[..., 3] = 1
    out[..., :n] = v
    return out


def encode(values, fmt):
    """What a kernel's write stores for float (or integer) 4-component values."""
    n, bits, kind = parse(fmt)
    v = np.asarray(values, np.float64)[..., :n]
    # Normalized: clamp, scale in float32 (as the kernel does), round to nearest even.
    if kind == "unorm":
        scaled = np.clip(np.nan_to_num(v), 0, 1).astype(np.float32) * np.float32(2 ** bits - 1)
        return np.rint(scaled).astype(raw_dtype(bits, kind))
    if kind == "snorm":
        scaled = np.clip(np.nan_to_num(v), -1, 1).astype(np.float32) * np.float32(2 ** (bits - 1) - 1)
        return np.rint(scaled).astype(raw_dtype(bits, kind))
    if kind == "float":
        return v.astype(raw_dtype(bits, kind))
    info = np.iinfo(raw_dtype(bits, kind))
    return np.clip(v, info.min, info.max).astype(raw_dtype(bits, kind))


def random_raw(rng, shape, fmt):
    n, bits, kind = parse(fmt)
    dt = raw_dtype(bits, kind)
    if kind == "float":
        return rng.uniform(-4, 4, shape + (n,)).astype(dt)
    info = np.iinfo(dt)
    return rng.integers(info.min, info.max, shape + (n,), dtype=dt, endpoint=True)


# ---- sRGB, BGRA and packed formats -----------------------------------------------------------
# Written from the MSL specification's sRGB formulas and the formats' definitions (Apple's
# MTLPixelFormat pages; rgb9e5's encoder is OpenGL's EXT_texture_shared_exponent algorithm),
# in float64 and by enumeration, independently of the prelude's bit manipulation.

SRGB_FORMATS = ["r8unorm_srgb", "rg8unorm_srgb", "rgba8unorm_srgb", "bgra8unorm_srgb"]
PACKED_FORMATS = ["rgb10a2unorm", "rgb10a2uint", "rg11b10float", "rgb9e5float"]


def srgb_to_linear(c):
    """The specification's sRGB-to-linear function of c in [0, 1] (float64)."""
    c = np.asarray(c, np.float64)
    return np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)


def linear_to_srgb_code(v):
    """A linear value written to an sRGB channel: NaN 0, clamp to [0, 1], the specification's
    linear-to-sRGB function, times 255, rounded to nearest even."""
    v = np.clip(np.nan_to_num(np.asarray(v, np.float64), nan=0.0, posinf=1.0, neginf=0.0), 0, 1)
    s = np.where(v < 0.0031308, 12.92 * v, 1.055 * v ** (1 / 2.4) - 0.055)
    return np.rint(s * 255).astype(np.uint8)


def ufloat_decode(bits, m):
    """An unsigned float of m mantissa bits and a 5-bit exponent, bias 15 (rg11b10's fields)."""
    bits = np.asarray(bits, np.int64)
    e, mant = bits >> m, bits & ((1 << m) - 1)
    normal = (1 + mant / 2.0 ** m) * 2.0 ** (e - 15)
    value = np.where(e == 0, mant / 2.0 ** m * 2.0 ** -14, normal)
    return np.where(e == 31, np.where(mant == 0, np.inf, np.nan), value)


def ufloat_encode(values, m):
    """Round to nearest, ties to the even code, among every finite code (enumerated); negative
    values and -inf give 0, NaN a NaN code, values from halfway past the largest finite up +inf."""
    codes = np.arange(31 << m)
    finite = ufloat_decode(codes, m)
    top = finite[-1]
    halfway = (top + 2.0 ** 16) / 2
    out = []
    for v in np.asarray(values, np.float64).ravel():
        if np.isnan(v):
            out.append((31 << m) | ((1 << m) - 1))
        elif v <= 0:
            out.append(0)
        elif v >= halfway:
            out.append(31 << m)
        else:
            k = int(np.searchsorted(finite, v))
            cands = [c for c in (k - 1, k) if 0 <= c < len(finite)]
            best = min(cands, key=lambda c: (abs(finite[c] - v), c % 2))
            out.append(best)
    return np.array(out, np.int64).reshape(np.shape(values))


def rgb9e5_decode(words):
    w = np.asarray(words, np.int64)
    scale = 2.0 ** ((w >> 27) - 24)
    return np.stack([(w & 511) * scale, ((w >> 9) & 511) * scale, ((w >> 18) & 511) * scale], -1)


def rgb9e5_encode(rgb):
    """EXT_texture_shared_exponent's encoder, per texel, in float64."""
    out = []
    for r, g, b in np.asarray(rgb, np.float64).reshape(-1, 3):
        c = [0.0 if np.isnan(x) else min(max(x, 0.0), 65408.0) for x in (r, g, b)]
        top = max(c)
        exp = (max(-16, math.floor(math.log2(top))) if top > 0 else -16) + 16
        if math.floor(top / 2.0 ** (exp - 24) + 0.5) == 512:
            exp += 1
        m = [int(math.floor(x / 2.0 ** (exp - 24) + 0.5)) for x in c]
        out.append(m[0] | m[1] << 9 | m[2] << 18 | exp << 27)
    return np.array(out, np.int64)


def rgb10a2_decode(words, integer=False):
    w = np.asarray(words, np.int64)
    f = np.stack([w & 1023, (w >> 10) & 1023, (w >> 20) & 1023, (w >> 30) & 3], -1)
    return f if integer else f / np.array([1023.0, 1023.0, 1023.0, 3.0])


# ---- NumPy model of Metal's sampler -----------------------------------------------------

MODES = ["clamp_to_edge", "mirrored_clamp_to_edge", "repeat", "mirrored_repeat", "clamp_to_zero", "clamp_to_border"]


def address(i, n, mode):
    """Texel index after the address mode; -1 outside (clamp_to_zero, clamp_to_border)."""
    if mode == "repeat":
        return i % n
    if mode == "mirrored_repeat":
        m = i % (2 * n)
        return m if m < n else 2 * n - 1 - m
    if mode == "mirrored_clamp_to_edge":
        m = -1 - i if i < 0 else i
        return min(m, n - 1)
    if mode in ("clamp_to_zero", "clamp_to_border"):
        return i if 0 <= i < n else -1
    return min(max(i, 0), n - 1)


def border(mode, channels, border_color="transparent_black"):
    if mode == "clamp_to_zero":
        return np.array([0, 0, 0, 0 if channels == 4 else 1.0])
    return {"transparent_black": np.zeros(4), "opaque_black": np.array([0, 0, 0, 1.0]),
            "opaque_white": np.ones(4)}[border_color]


def axis(c, n, normalized, linear):
    x = c * n if normalized else c
    if linear:
        x -= 0.5
        i0 = int(np.floor(x))
        f = x - i0
        return [(i0, 1 - f), (i0 + 1, f)]
    return [(int(np.floor(x)), 1.0)]


def sample_model(texels, channels, u, v, filt, mode, normalized, border_color="transparent_black"):
    h, w = texels.shape[:2]
    out = np.zeros(4)
    for (j, wy) in axis(v, h, normalized, filt == "linear"):
        for (i, wx) in axis(u, w, normalized, filt == "linear"):
            ai, aj = address(i, w, mode), address(j, h, mode)
            t = border(mode, channels, border_color) if ai < 0 or aj < 0 else texels[aj, ai]
            out += wx * wy * t
    return out


def cube_face(x, y, z):
    """The face a direction picks and its normalized (u, v), by Metal's table."""
    ax = np.abs([x, y, z])
    if ax[0] >= ax[1] and ax[0] >= ax[2]:
        face, sc, tc, ma = (0 if x >= 0 else 1), (-z if x >= 0 else z), -y, ax[0]
    elif ax[1] >= ax[2]:
        face, sc, tc, ma = (2 if y >= 0 else 3), x, (z if y >= 0 else -z), ax[1]
    else:
        face, sc, tc, ma = (4 if z >= 0 else 5), (x if z >= 0 else -x), -y, ax[2]
    return face, 0.5 * (sc / ma + 1), 0.5 * (tc / ma + 1)


def cube_face_point(face, u, v):
    """The direction of point (u, v) of a cube face (cube_face inverted); u, v may lie past the face."""
    sc, tc = 2 * u - 1, 2 * v - 1
    return {0: (1, -tc, -sc), 1: (-1, -tc, sc), 2: (sc, 1, tc), 3: (sc, -1, -tc), 4: (sc, -tc, 1),
            5: (-sc, -tc, -1)}[face]


def cube_tap(faces, face, i, j):
    """Texel (i, j) of a face of `faces` (6, n, n, c) for a seamless cube map: a tap one texel past
    an edge is the texel of the adjacent face its centre's direction points at (central projection);
    past a corner, the mean of the three texels that meet there."""
    n = faces.shape[1]
    out_i, out_j = not 0 <= i < n, not 0 <= j < n
    ci, cj = min(max(i, 0), n - 1), min(max(j, 0), n - 1)
    if out_i and out_j:
        return (faces[face, cj, ci].astype(np.float64) + cube_tap(faces, face, i, cj) + cube_tap(faces, face, ci, j)) / 3
    if not (out_i or out_j):
        return faces[face, j, i].astype(np.float64)
    f2, u2, v2 = cube_face(*cube_face_point(face, (i + 0.5) / n, (j + 0.5) / n))
    return faces[f2, min(int(np.floor(v2 * n)), n - 1), min(int(np.floor(u2 * n)), n - 1)].astype(np.float64)


def cube_sample_model(faces, x, y, z, filt):
    """sample() on a seamless cube map (one level): the face the direction picks, its footprint's
    taps through cube_tap."""
    face, u, v = cube_face(x, y, z)
    n = faces.shape[1]
    out = 0
    for (j, wy) in axis(v, n, True, filt == "linear"):
        for (i, wx) in axis(u, n, True, filt == "linear"):
            if filt == "linear":
                out = out + wx * wy * cube_tap(faces, face, i, j)
            else:
                out = out + wx * wy * faces[face, min(max(j, 0), n - 1), min(max(i, 0), n - 1)].astype(np.float64)
    return out


def cube_gather_model(faces, x, y, z, component=0):
    """gather() on a seamless cube map: component c of the 2x2 linear footprint's taps in Metal's
    order (i0, j1), (i1, j1), (i1, j0), (i0, j0)."""
    face, u, v = cube_face(x, y, z)
    n = faces.shape[1]
    (i0, _), (i1, _) = axis(u, n, True, True)
    (j0, _), (j1, _) = axis(v, n, True, True)
    return [cube_tap(faces, face, i, j)[component] for i, j in ((i0, j1), (i1, j1), (i1, j0), (i0, j0))]
