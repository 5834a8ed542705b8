"""Forge's convolutions (hollance/Forge, Forge/Shaders.metal: a source of the third corpus,
docs/msl-corpus.md) run on metalcall against NumPy models written here. Their stride is a vector
function constant (`constant ushort2 stride [[function_constant(2)]]`), which metalcall refused
before; the kernel size and the activation are ushort constants. Kernels: conv3x3 and
depthwiseConv3x3 over a texture2d<half>, and their texture2d_array forms (four channels a slice),
sampled at pixel coordinates with clamp_to_zero, at a stride of (2, 1) so that a swapped
component shows. Every device, the CPU in checked mode too; the public file is read at test time."""

from __future__ import annotations

import numpy as np
import pytest

import metalcall as mc
from corpus_support import c_args, kernel, require3
from mctest import device_params, metal_sim_only

SHADERS = "forge/Forge/Forge/Shaders.metal"
STRIDE = (2, 1)
NEURONS = {1: "relu", 2: "linear"}  # Forge's NeuronType values


@pytest.fixture(params=device_params() + ([pytest.param(("cpu", 0, "checked"), id="cpu-checked")]
                                           if "cpu" in mc.backends() and not metal_sim_only() else []))
def device(request):
    backend, index, *checked = request.param
    return mc.Device("cpu", checked=True) if checked else mc.Device(f"{backend}:{index}")


def _kernel(device, name, neuron):
    constants = {"kernelWidth": 3, "kernelHeight": 3, "stride": np.array(STRIDE, np.uint16), "neuronType": neuron}
    return kernel(device, require3(SHADERS), name, constants=constants)


def _params(h, w, out_h, out_w, slices, a, b):
    path = require3(SHADERS)
    return c_args(path, "KernelParams", inputWidth=w, inputHeight=h, inputFeatureChannels=4 * slices,
                  inputSlices=slices, inputOffsetX=1, inputOffsetY=0, inputOffsetZ=0, outputWidth=out_w,
                  outputHeight=out_h, outputFeatureChannels=4 * slices, outputSlices=slices,
                  destinationSliceOffset=0, outputOffsetX=0, outputOffsetY=0, outputOffsetZ=0, edgeMode=0,
                  neuronA=a, neuronB=b)


def _taps(x, out_h, out_w):
    """(out_h, out_w, 9, 4): the 3x3 pixels around gid * stride + (1, 0), in Forge's tap order
    (row by row), zero outside the texture (clamp_to_zero)."""
    h, w = x.shape[:2]
    padded = np.zeros((h + 2, w + 2, 4), np.float64)
    padded[1:-1, 1:-1] = x
    ys = np.arange(out_h) * STRIDE[1]
    xs = np.arange(out_w) * STRIDE[0] + 1
    return np.stack([padded[ys[:, None] + 1 + dy, xs[None, :] + 1 + dx] for dy in (-1, 0, 1) for dx in (-1, 0, 1)], 2)


def _neuron(x, neuron, a, b):
    return np.maximum(x, 0) + a * np.minimum(x, 0) if neuron == 1 else a * x + b


@pytest.mark.parametrize("neuron", sorted(NEURONS), ids=NEURONS.values())
@pytest.mark.parametrize("depthwise", [False, True], ids=["conv3x3", "depthwiseConv3x3"])
@pytest.mark.parametrize("slices", [0, 2], ids=["texture2d", "texture2d_array"])
def test_convolution(device, rng, neuron, depthwise, slices):
    h, w = 5, 9
    out_h, out_w = -(-h // STRIDE[1]), -(-(w - 1) // STRIDE[0])
    n = max(slices, 1)
    x = (rng.integers(-16, 16, (n, h, w, 4)) / 8).astype(np.float16)
    bias = (rng.integers(-8, 8, (n, 4)) / 8).astype(np.float16)
    a, b = 0.25, 0.5
    if depthwise:
        weights = (rng.integers(-8, 8, (n, 4, 9)) / 8).astype(np.float16)  # [slice][channel][tap]
        want = [np.einsum("hwtc,ct->hwc", _taps(x[s], out_h, out_w), weights[s]) for s in range(n)]
    else:
        # [out slice][out channel][tap][in slice] of half4 (the in slice only in the array form)
        weights = (rng.integers(-8, 8, (n, 4, 9, n, 4)) / 8).astype(np.float16)
        taps = [_taps(x[s], out_h, out_w) for s in range(n)]
        want = [sum(np.einsum("hwtc,otc->hwo", taps[i], weights[o, :, :, i]) for i in range(n)) for o in range(n)]
    want = np.stack([_neuron(v + bias[s], neuron, a, b) for s, v in enumerate(want)]).astype(np.float16)
    name = ("depthwiseConv3x3" if depthwise else "conv3x3") + ("_array" if slices else "")
    if slices:
        src = device.texture_from(x, format="rgba16float", type="texture2d_array")
        out = device.texture((n, out_h, out_w), "rgba16float", type="texture2d_array")
        grid = (out_w, out_h, n)
    else:
        src = device.texture_from(x[0], format="rgba16float")
        out = device.texture((out_h, out_w), "rgba16float")
        grid = (out_w, out_h)
    params = _params(h, w, out_h, out_w, n, a, b)
    _kernel(device, name, neuron)(grid, params, weights.ravel(), bias.ravel(), textures=[src, out])
    got = np.asarray(out).reshape(want.shape)
    # eighths through float sums: exact until the last rounding to half, as the model's
    np.testing.assert_array_equal(got, want)
