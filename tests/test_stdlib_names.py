"""The Metal standard library names a kernel may call come from a table the build reads from the
prelude's text (msl/analysis/stdlib_names.cmake, prelude_scan.cpp), no longer from tokenizing the
prelude in every process. Names the prelude declares each way it declares them are accepted and
compute NumPy's values; host names, and the one name left out on purpose (log1p), are refused."""

from __future__ import annotations

import numpy as np
import pytest

import metalcall as mc


@pytest.fixture(scope="module")
def dev():
    return mc.Device("cpu")


def test_names_declared_each_way_compile_and_compute(dev):
    src = """
#include <metal_stdlib>
using namespace metal;
kernel void k(const device float* a [[buffer(0)]], device float* c [[buffer(1)]],
              device atomic_uint* count [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    float x = a[i];
    // sin, fabs: functions (fabs through `::`, which must name the standard library);
    // isnan: a METAL_CLASSIFY argument; clamp: a template; INFINITY: a macro;
    // memory_order_relaxed: an enumerator.
    float y = ::fabs(sin(x)) + clamp(x, 0.25f, 0.75f);
    c[i] = isnan(x) ? INFINITY : y;
    atomic_fetch_add_explicit(count, 1u, memory_order_relaxed);
}
"""
    a = np.linspace(-2.0, 2.0, 64, dtype=np.float32)
    a[5] = np.nan
    c = np.zeros(64, np.float32)
    count = np.zeros(1, np.uint32)
    dev.compile(src).k(64, a, c, count)
    ref = np.abs(np.sin(a)) + np.clip(a, 0.25, 0.75)
    ref[5] = np.inf
    np.testing.assert_allclose(c, ref, rtol=1e-6, atol=1e-6)
    assert count[0] == 64


@pytest.mark.parametrize("call, message", [
    ("printf(\"%f\", a[i])", "neither defined in this source nor part of the Metal standard library"),
    ("log1p(a[i])", "neither defined in this source nor part of the Metal standard library"),
    ("::malloc(4) != nullptr", "names the host C library"),
])
def test_host_names_are_refused(dev, call, message):
    src = f"""
#include <metal_stdlib>
using namespace metal;
kernel void k(const device float* a [[buffer(0)]], device float* c [[buffer(1)]],
              uint i [[thread_position_in_grid]]) {{
    c[i] = {call};
}}
"""
    with pytest.raises(mc.CompileError, match=message.replace("(", r"\(")):
        dev.compile(src)
