"""Paddle-Lite's Metal kernels (PaddlePaddle/Paddle-Lite, lite/backends/metal/metal_kernel/texture:
a source first surveyed in the third corpus, docs/msl-corpus.md) run on metalcall against NumPy
models written here. Paddle-Lite keeps tensors in texture2d_array<ftype> (four channels a slice)
and builds each file alone, ftype = half unless LITE_WITH_METAL_FULL (Common.metal's typedefs:
the element type through a typedef, which this corpus's survey made compile); its section marks
(`#pragma -`) and `abs(x <= 1e-6)` in reduce_min_c were the other two classes. Kernels: the
element-wise arithmetic (same-shape path), the softmax over channels, the channel minimum and
the spatial sum. Every device, the CPU in checked mode too; the public files are read at test
time only."""

from __future__ import annotations

import numpy as np
import pytest

import metalcall as mc
from corpus_support import kernel, require3
from mctest import device_params, metal_sim_only

TEXTURE = "paddle-lite/lite/backends/metal/metal_kernel/texture"
TYPES = {"half": (np.float16, "rgba16float", ()), "float": (np.float32, "rgba32float", ("LITE_WITH_METAL_FULL=1",))}


@pytest.fixture(params=device_params() + ([pytest.param(("cpu", 0, "checked"), id="cpu-checked")]
                                           if "cpu" in mc.backends() and not metal_sim_only() else []))
def device(request):
    backend, index, *checked = request.param
    return mc.Device("cpu", checked=True) if checked else mc.Device(f"{backend}:{index}")


def _k(device, file, name, tname):
    path = require3(f"{TEXTURE}/{file}")
    return kernel(device, path, name, include_dirs=(str(path.parent),), defines=TYPES[tname][2])


def _array(device, values, tname):
    """A texture2d_array of (slices, h, w, 4) values."""
    dtype, fmt, _ = TYPES[tname]
    return device.texture_from(values.astype(dtype), format=fmt, type="texture2d_array")


ELEMENTWISE = np.dtype([("fast", "<i4"), ("addByChannel", "<i4"), ("axis", "<i4"), ("ylen", "<i4"),
                        ("xdim", "<i4", 4), ("xtrans", "<i4", 4), ("ydim", "<i4", 4), ("ytrans", "<i4", 4),
                        ("ByNum", "<i4"), ("ByHW", "<i4"), ("ByW", "<i4"), ("arithmetic_type", "<i4")])


@pytest.mark.parametrize("tname", sorted(TYPES))
@pytest.mark.parametrize("op", [0, 1, 2, 3])
def test_elementwise(device, rng, tname, op):
    dtype, fmt, _ = TYPES[tname]
    shape = (3, 5, 7, 4)
    x = (rng.integers(-64, 64, shape) / 8).astype(dtype)
    y = (rng.integers(1, 64, shape) / 8 * rng.choice([-1, 1], shape)).astype(dtype)
    params = np.zeros(1, ELEMENTWISE)
    params["fast"], params["arithmetic_type"] = 1, op
    out = device.texture(shape[:3], fmt, type="texture2d_array")
    _k(device, "Elementwise.metal", "elementwise", tname)(
        (shape[2], shape[1], shape[0]), params.view(np.uint8), textures=[_array(device, x, tname), _array(device, y, tname), out])
    want = [np.add, np.subtract, np.multiply, np.divide][op](x, y)  # in ftype, one rounding, as the kernel
    np.testing.assert_array_equal(np.asarray(out), want)


@pytest.mark.parametrize("tname", sorted(TYPES))
@pytest.mark.parametrize("channels", [6, 11])
def test_softmax_over_channels(device, rng, tname, channels):
    """Channel counts that are not multiples of 4: the kernel's last loop runs to `z <= group`,
    one slice past the texture when they are (checked mode reports that read)."""
    dtype, fmt, _ = TYPES[tname]
    slices, h, w = -(-channels // 4), 3, 6
    x = rng.uniform(-4, 4, (slices, h, w, 4)).astype(dtype)
    out = device.texture((slices, h, w), fmt, type="texture2d_array")
    params = np.array([1, channels, h, w], np.int32)  # SoftmaxParam2: N, C, H, W
    _k(device, "Softmax.metal", "softmax", tname)((w, h, 1), params, textures=[_array(device, x, tname), out])
    c = x.transpose(1, 2, 0, 3).reshape(h, w, -1)[..., :channels].astype(np.float64)
    e = np.exp(c - c.max(-1, keepdims=True))
    want = e / e.sum(-1, keepdims=True)
    got = np.asarray(out).astype(np.float64).transpose(1, 2, 0, 3).reshape(h, w, -1)[..., :channels]
    tol = 4e-3 if tname == "half" else 2e-6
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol / 4)


@pytest.mark.parametrize("tname", sorted(TYPES))
def test_reduce_min_over_channels(device, rng, tname):
    """The last slice's lanes at or below 1e-6 are skipped (padding there reads as 0): the
    kernel's own rule, `abs(v <= 1e-6) ? min : min(min, v)`."""
    dtype, fmt, _ = TYPES[tname]
    slices, h, w = 3, 4, 5
    x = rng.uniform(-8, 8, (slices, h, w, 4)).astype(dtype)
    x[-1, ..., 2:] = 0  # two padding channels
    x[-1, 0, 0, 0] = -100  # a negative value in the last slice is skipped too
    out = device.texture((1, h, w), fmt, type="texture2d_array")
    _k(device, "Reduce.metal", "reduce_min_c", tname)((w, h, 1), textures=[_array(device, x, tname), out])
    full = x[:-1].min(axis=(0, 3))
    last = np.where(x[-1] <= 1e-6, np.inf, x[-1]).min(-1)
    np.testing.assert_array_equal(np.asarray(out).reshape(h, w, 4)[..., 0], np.minimum(full, last).astype(dtype))


@pytest.mark.parametrize("tname", sorted(TYPES))
def test_reduce_sum_over_space(device, rng, tname):
    dtype, fmt, _ = TYPES[tname]
    slices, h, w = 2, 6, 5
    x = (rng.integers(-16, 16, (slices, h, w, 4)) / 4).astype(dtype)  # sums exact in half
    out = device.texture((slices, 1, 1), fmt, type="texture2d_array")
    _k(device, "Reduce.metal", "reduce_sum_hw", tname)((1, 1, slices), textures=[_array(device, x, tname), out])
    np.testing.assert_array_equal(np.asarray(out)[:, 0, 0].astype(np.float64), x.astype(np.float64).sum(axis=(1, 2)))
