"""Helpers of the metalcall.numpy tests: `check` compares an mnp array with NumPy's answer
(values, dtype and shape); `supported` drops float64 on Metal. The
`device` fixture itself comes from tests/conftest.py (every device metalcall reports)."""

from __future__ import annotations

import numpy as np

FLOATS = ("float16", "float32", "float64")
INTS = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")


def supported(device, names):
    return [n for n in names if not (n == "float64" and device.backend == "metal")]


def check(got, expected, rtol=1e-6, atol=0.0, dtype=True):
    g = np.asarray(got)
    e = np.asarray(expected)
    assert g.shape == e.shape, (g.shape, e.shape)
    if dtype:
        assert g.dtype == e.dtype, (g.dtype, e.dtype)
    if e.dtype.kind in "fc":
        np.testing.assert_allclose(g, e, rtol=rtol, atol=atol, equal_nan=True)
    else:
        np.testing.assert_array_equal(g, e)
