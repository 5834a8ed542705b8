"""MetalPetal's compute kernels (MetalPetal/MetalPetal, Frameworks/MetalPetal/Shaders/Shaders.metal:
surveyed for issue P2.0) run on metalcall against NumPy: the colour lookup table conversions
(a 2D LUT image, square or strip, to a 3D texture) and the histogram display's maximum. The
file puts them beside its vertex and fragment functions, in a namespace, behind a shared
header that includes <TargetConditionals.h> and <simd/simd.h>: what this issue's second survey
made compile. The public file is read at test time only (the second corpus)."""

from __future__ import annotations

import numpy as np
import pytest

from corpus_support import require2, survey

SHADERS = "metalpetal/Frameworks/MetalPetal/Shaders/Shaders.metal"
_LIBS: dict = {}


def _kernel(device, name):
    """The kernel of the whole file (its kernels are in a namespace, which the survey's
    per-kernel split does not follow), flattened with its header as the survey does."""
    path = require2(SHADERS)
    key = (device.backend, device.name)
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
