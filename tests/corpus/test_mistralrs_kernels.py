"""mistral.rs's Metal kernels (EricLBuehler/mistral.rs, mistralrs-quant/src/metal_kernels: surveyed for
issue P2.0) run on metalcall against NumPy models written here: fused_glu (an activation of a
times b, the activation chosen at run time, its result cast to T before the product) and
softmax_with_sinks (a row's softmax with the head's sink logit in the normalisation: a
threadgroup per row, simd_shuffle_xor maxima and sums, the simdgroups' results through
threadgroup memory and barriers, then the first simdgroup alone reduces them). The public files
are read at test time only; arguments follow the kernels' signatures (one thread per element;
one threadgroup per row with 2 + one float per simdgroup of threadgroup memory)."""

from __future__ import annotations

import numpy as np
import pytest

from corpus_support import kernel, require

KERNELS = "mistralrs/mistralrs-quant/src/metal_kernels"
TYPES = {"float": np.float32, "half": np.float16}
TOL = {"float": dict(rtol=2e-6, atol=1e-7), "half": dict(rtol=2e-3, atol=1e-4)}


def erf_as(x):
    """The kernels' erf: Abramowitz and Stegun 7.1.26."""
    a1, a2, a3, a4, a5, p = 0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429, 0.3275911
    s = np.where(x < 0, -1.0, 1.0)
    x = np.abs(x)
    t = 1.0 / (1.0 + p * x)
    return s * (1.0 - (((((a5 * t + a4) * t) + a3) * t + a2) * t + a1) * t * np.exp(-x * x))


ACTIVATIONS = {  # mistral.rs's GluActivationType: Silu 0, Gelu 1, Relu 2, GeluErf 3, Sigmoid 4
    0: lambda x: x / (1 + np.exp(-x)),
    1: lambda x: np.where(x > 5, x, 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))),
    2: lambda x: np.maximum(x, 0),
    3: lambda x: x * (1 + erf_as(x / np.sqrt(2))) / 2,
    4: lambda x: 1 / (1 + np.exp(-x)),
}


@pytest.mark.parametrize("tname", sorted(TYPES))
@pytest.mark.parametrize("activation", sorted(ACTIVATIONS))
def test_fused_glu(device, rng, tname, activation):
    t = TYPES[tname]
    n = 1000
    a = rng.uniform(-7, 7, n).astype(t)  # both sides of gelu's x > 5 cut
    b = rng.uniform(-2, 2, n).astype(t)
    out = np.zeros(n, t)
    k = kernel(device, require(f"{KERNELS}/fused_glu.metal"), f"fused_glu_{tname}",
               also=tuple(f"fused_glu_{x}" for x in TYPES))
    k(n + 24, a, b, out, np.uint32(n), np.int32(activation))  # threads past n do nothing
    activated = ACTIVATIONS[activation](a.astype(np.float64)).astype(t)  # cast to T, then the product in T
    want = (activated.astype(np.float64) * b.astype(np.float64)).astype(t).astype(np.float64)
    # The activation in float: a few ulps of |a| where its formula cancels (gelu's 1 + tanh near -1).
    bound = TOL[tname]["rtol"] * np.abs(want) + 4e-7 * np.abs(a.astype(np.float64) * b.astype(np.float64)) + 1e-30
    err = np.abs(out.astype(np.float64) - want)
    assert np.all(err <= bound), f"max error {err.max()} at {err.argmax()} (a={a[err.argmax()]}, want {want[err.argmax()]})"


@pytest.mark.parametrize("tname", sorted(TYPES))
@pytest.mark.parametrize("threads", [32, 96, 256])
@pytest.mark.parametrize("k_len", [7, 100, 1000])
def test_softmax_with_sinks(device, rng, tname, threads, k_len):
    t = TYPES[tname]
    heads, q_len, batch = 3, 2, 2
    rows = batch * heads * q_len
    logits = rng.uniform(-6, 6, (rows, k_len)).astype(t)
    # a sink's weight comparable to its row's whole sum, so that it shows in every output
    sinks = (rng.uniform(0, 6, heads) + np.log(k_len)).astype(t)
    out = np.zeros_like(logits)
    k = kernel(device, require(f"{KERNELS}/softmax_with_sinks.metal"), f"softmax_with_sinks_{tname}",
               also=tuple(f"softmax_with_sinks_{x}" for x in TYPES))
    k(rows * threads, logits, sinks, out, np.uint32(heads), np.uint32(q_len), np.uint32(k_len),
      threadgroup=threads, threadgroup_memory=[-(-4 * (2 + -(-threads // 32)) // 16) * 16])  # Metal: 16-byte units
    x = logits.astype(np.float64)
    sink = sinks.astype(np.float64)[(np.arange(rows) // q_len) % heads][:, None]
    m = np.maximum(x.max(axis=1, keepdims=True), sink)
    total = np.exp(x - m).sum(axis=1, keepdims=True) + np.exp(sink - m)
    np.testing.assert_allclose(out.astype(np.float64), np.exp(x - m) / total, rtol=TOL[tname]["rtol"] * 3,
                               atol=TOL[tname]["atol"])
