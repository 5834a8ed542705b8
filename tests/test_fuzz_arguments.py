"""Random arguments of every kind: a call either computes the right values or raises
a metalcall.Error; it never crashes, raises something else, or corrupts memory."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import metalcall as mc

SRC = """
#include <metal_stdlib>
using namespace metal;
kernel void scale(const device float* x [[buffer(0)]], device float* y [[buffer(1)]],
                  constant uint& n [[buffer(2)]], constant float& k [[buffer(3)]],
                  uint i [[thread_position_in_grid]]) {
    if (i < n) y[i] = x[i] * k;
}
"""

DTYPES = [np.float32, np.float64, np.int32, np.uint8, np.float16, np.int64, np.bool_]

arrays = st.builds(
    lambda dtype, n, offset: np.zeros(n + 8, dtype)[offset : offset + n],
    st.sampled_from(DTYPES),
    st.integers(0, 64),
    st.integers(0, 3),
)
scalars = st.one_of(
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.sampled_from([np.float32(2.5), np.uint8(3), np.int64(-1), np.float64(1e300)]),
)
others = st.sampled_from([None, "text", b"\x00" * 4, bytearray(16), [1, 2, 3], (1.0,), object(), memoryview(b"abcd")])
argument = st.one_of(arrays, scalars, others)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    grid=st.one_of(st.integers(-2, 80), st.tuples(st.integers(0, 80), st.integers(0, 2)), st.sampled_from([2**33, 1.5, "8", None])),
    args=st.lists(argument, min_size=0, max_size=5),
)
def test_random_calls_never_crash(cpu_device, grid, args):
    kernel = cpu_device.compile(SRC).scale
    try:
        kernel(grid, *args)
    except mc.Error:
        pass
    # The device still works, with exact results.
    x = np.arange(32, dtype=np.float32)
    y = np.zeros(32, np.float32)
    kernel(32, x, y, 32, 3.0)
    np.testing.assert_array_equal(y, x * 3.0)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(n=st.integers(0, 40), count=st.integers(0, 48), k=st.floats(-1e6, 1e6, width=32))
def test_valid_calls_compute_numpy_values(cpu_device, n, count, k):
    kernel = cpu_device.compile(SRC).scale
    x = np.random.default_rng(n).random(max(n, 1), dtype=np.float32)
    y = np.zeros_like(x)
    guard = y.copy()
    kernel(min(count, n), x, y, count, k)
    done = min(count, n)
    np.testing.assert_array_equal(y[:done], x[:done] * np.float32(k))
    np.testing.assert_array_equal(y[done:], guard[done:])
