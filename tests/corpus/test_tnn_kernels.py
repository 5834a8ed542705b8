"""TNN's Metal layer kernels (Tencent/TNN, source/tnn/device/metal/acc: surveyed for issue P2.0)
run on metalcall against NumPy models written here: element-wise layers over NC4HW4 data
(a thread per (position, channel slice of 4, batch)), which use metal_common.metal's
program-scope constants (`constant half4 Zero4 = half4(0, 0, 0, 0)`, One4, Six4: dynamic
initialisation that CUDA refused until this issue) and a kernel named like the library
function it calls (`kernel void abs` calling abs). ftype is half (TNN's default) or float
(TNN_METAL_FULL_PRECISION). MetalParams is metal_common.h's struct, ten ints. The public files
are read at test time only."""

from __future__ import annotations

import numpy as np
import pytest

from corpus_support import corpus_root, kernel, require

ACC = "tnn/source/tnn/device/metal/acc"
TYPES = {"half": np.float16, "float": np.float32}
PARAMS = np.dtype([(f, "<i4") for f in ("input_width", "input_height", "input_size", "input_slice", "output_width",
                                        "output_height", "output_size", "output_slice", "share_channel", "batch")])

LAYERS = {  # kernel: (file, model in float64)
    "sigmoid": ("metal_sigmoid_layer_acc.metal", lambda x: 1 / (1 + np.exp(-x))),
    "swish": ("metal_swish_layer_acc.metal", lambda x: x / (1 + np.exp(-x))),
    "relu6": ("metal_relu6_layer_acc.metal", lambda x: np.clip(x, 0, 6)),
    "abs": ("metal_abs_layer_acc.metal", np.abs),
}
EXACT = {"relu6", "abs"}


@pytest.mark.parametrize("tname", sorted(TYPES))
@pytest.mark.parametrize("layer", sorted(LAYERS))
def test_elementwise_layer(device, rng, tname, layer):
    t = TYPES[tname]
    file, model = LAYERS[layer]
    batch, slices, height, width = 2, 3, 5, 7
    size = height * width
    x = rng.uniform(-9, 9, (batch, slices, size, 4)).astype(t)  # NC4HW4: [n][c/4][h*w][4]
    out = np.zeros_like(x)
    params = np.array([(width, height, size, slices, width, height, size, slices, 0, batch)], PARAMS)[0]
    k = kernel(device, require(f"{ACC}/{file}"), layer, include_dirs=(corpus_root() / "tnn/source",),
               defines=(f"TNN_METAL_FULL_PRECISION={int(tname == 'float')}",))
    k((size + 3, slices, batch), x, out, params)  # positions past the size do nothing
    want = model(x.astype(np.float64))
    if layer in EXACT:
        np.testing.assert_array_equal(out, want.astype(t))
    else:  # exp and the division in ftype: half's or float's precision
        tol = dict(rtol=4e-3, atol=2e-3) if tname == "half" else dict(rtol=4e-6, atol=1e-7)
        np.testing.assert_allclose(out.astype(np.float64), want, **tol)
