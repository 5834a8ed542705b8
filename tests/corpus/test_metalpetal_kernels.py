"""MetalPetal's compute kernels (MetalPetal/MetalPetal, Frameworks/MetalPetal/Shaders/Shaders.metal:
surveyed for issue P2.0) run on metalcall against NumPy: the colour lookup table conversions
(a 2D LUT image, square or strip, to a 3D texture), the histogram display's maximum and the
4:2:0 Y'CbCr to RGB conversion of ColorConversionShaders.metal (a kernel whose parameter type is
its namespace's). The
file puts them beside its vertex and fragment functions, in a namespace, behind a shared
header that includes <TargetConditionals.h> and <simd/simd.h>: what this issue's second survey
made compile. The public file is read at test time only (the second corpus)."""

from __future__ import annotations

import numpy as np
import pytest

from corpus_support import require2, survey

SHADERS = "metalpetal/Frameworks/MetalPetal/Shaders/Shaders.metal"
COLOR_CONVERSION = "metalpetal/Frameworks/MetalPetal/Shaders/ColorConversionShaders.metal"
_LIBS: dict = {}


def _kernel(device, name, file=SHADERS):
    """The kernel of the whole file (its kernels are in a namespace, which the survey's
    per-kernel split does not follow), flattened with its header as the survey does."""
    path = require2(file)
    key = (device.backend, device.name, file)
    if key not in _LIBS:
        s = survey()
        _LIBS[key] = device.compile(s.HEADER + s.expand(s.flatten(path.resolve(), [path.parent]), []))
    return _LIBS[key].function(name)


@pytest.mark.parametrize("layout", ["Square", "StripVertical", "StripHorizontal"])
def test_color_lookup_table_to_3d(device, rng, layout):
    d = 4
    if layout == "Square":  # a 2x2 grid of d x d tiles: slice z is tile (z % 2, z // 2)
        lut = rng.uniform(0, 1, (2 * d, 2 * d, 4)).astype(np.float32)
        want = np.stack([lut[(z // 2) * d:(z // 2 + 1) * d, (z % 2) * d:(z % 2 + 1) * d] for z in range(d)])
    elif layout == "StripVertical":  # slices stacked downwards
        lut = rng.uniform(0, 1, (d * d, d, 4)).astype(np.float32)
        want = lut.reshape(d, d, d, 4)
    else:  # slices side by side
        lut = rng.uniform(0, 1, (d, d * d, 4)).astype(np.float32)
        want = lut.reshape(d, d, d, 4).transpose(1, 0, 2, 3)
    src = device.texture_from(lut)
    out = device.texture((d, d, d), "rgba32float")
    _kernel(device, f"colorLookupTable2D{layout}To3D")((d, d, d), np.int32(d), textures=[src, out])
    np.testing.assert_array_equal(np.asarray(out), want)


def test_histogram_display_find_max(device, rng):
    width = 37  # one row of counts per channel
    counts = rng.integers(0, 100000, (4, width, 4)).astype(np.uint32)
    src = device.texture_from(counts)
    out = device.texture((1, 1), "rgba32uint")
    _kernel(device, "histogramDisplayFindMax")((1, 1), textures=[src, out])
    np.testing.assert_array_equal(np.asarray(out)[0, 0], counts[:, :, 0].max(axis=1))


def test_color_conversion(device, rng):
    """metalpetal::yuv2rgbconvert::colorConversion: 4:2:0 Y'CbCr to RGB through a
    `constant ColorConversion&` of its namespace (a float3x3 and a float3 offset)."""
    h, w = 6, 8
    luma = rng.uniform(0, 1, (h, w, 1)).astype(np.float32)
    chroma = rng.uniform(0, 1, (h // 2, w // 2, 2)).astype(np.float32)
    matrix = rng.uniform(-1.5, 1.5, (3, 3)).astype(np.float32)  # [column][row], as float3x3 stores it
    offset = rng.uniform(-0.5, 0.5, 3).astype(np.float32)
    params = np.zeros(16, np.float32)  # float3x3 (three 16-byte columns), then a float3
    params[:12] = np.pad(matrix, ((0, 0), (0, 1))).reshape(-1)
    params[12:15] = offset
    out = device.texture((h, w), "rgba32float")
    _kernel(device, "colorConversion", COLOR_CONVERSION)(
        (w, h), params, textures=[device.texture_from(luma), device.texture_from(chroma), out])
    ycbcr = np.concatenate([luma, chroma.repeat(2, 0).repeat(2, 1)], -1).astype(np.float64)
    rgb = (ycbcr + offset) @ matrix.astype(np.float64)  # M * v with M's columns as rows here
    np.testing.assert_allclose(np.asarray(out)[..., :3], rgb, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(np.asarray(out)[..., 3], np.ones((h, w), np.float32))
