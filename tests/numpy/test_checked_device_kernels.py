"""metalcall.numpy on a checked device runs kernels compiled for that device: cpu:0 and cpu:0
checked are two devices, so a kernel (or a pooled buffer) of one is never reused for the other,
which would silently turn checked mode off."""

from __future__ import annotations

import numpy as np
import pytest

import metalcall as mc
import metalcall.numpy as mnp
from metalcall.numpy import _runtime

OUT_OF_BOUNDS = """
#include <metal_stdlib>
using namespace metal;
kernel void shifted(const device float* a [[buffer(0)]], device float* out [[buffer(1)]],
                    uint i [[thread_position_in_grid]]) { out[i] = a[i + 4]; }
"""


def test_checked_device_gets_its_own_kernels():
    plain, checked = mc.Device("cpu"), mc.Device("cpu", checked=True)
    a = np.arange(64, dtype=np.float32)
    out = np.zeros(4, dtype=np.float32)
    _runtime.kernel(plain, OUT_OF_BOUNDS, "shifted")(4, a, out)  # within a: fine unchecked
    assert list(out) == [4, 5, 6, 7]
    small = np.arange(4, dtype=np.float32)
    with pytest.raises(mc.ExecutionError):
        _runtime.kernel(checked, OUT_OF_BOUNDS, "shifted")(4, small, out)   # reads past `small`


def test_operations_on_both_devices_agree_with_numpy():
    plain, checked = mc.Device("cpu"), mc.Device("cpu", checked=True)
    x = np.linspace(-3, 3, 1 << 18).astype(np.float32)   # large enough for pooled result buffers
    for dev in (plain, checked, plain):
        y = mnp.asarray(x, device=dev)
        z = mnp.sin(y) * 2 + 1
        assert z.device == dev
        np.testing.assert_allclose(np.asarray(z), np.sin(x) * 2 + 1, rtol=1e-5, atol=1e-6)
        assert float(mnp.sum(mnp.asarray(np.ones(1000, np.float32), device=dev))) == 1000.0
