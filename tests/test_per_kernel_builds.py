"""Per-kernel builds (issue P2.0 item 4): `lib.function(name, constants)` builds a module
that holds only that kernel, as Metal specialises one function. Every specialisation of a
many-kernel source is checked against NumPy, and a kernel of the file that cannot compile
with the requested values (a static_assert on a constant, in a plain kernel and in a
template instantiation) does not stop another kernel from being specialised with them —
the module really leaves it out — while asking for that kernel itself is its own error.
"""

from __future__ import annotations

import numpy as np
import pytest

import metalcall as mc

SRC = """
#include <metal_stdlib>
using namespace metal;

constant float pk_alpha [[function_constant(0)]];
constant bool pk_use_bias [[function_constant(1)]];
constant int pk_terms [[function_constant(2)]];

// y = sum over t < pk_terms of alpha^t * x (+ bias): pk_terms sizes a private array.
float pk_power_sum(float x) {
    float powers[pk_terms > 0 ? pk_terms : 1];
    float p = 1.0f;
    for (int t = 0; t < pk_terms; ++t) { powers[t] = p; p *= pk_alpha; }
    float s = 0.0f;
    for (int t = 0; t < pk_terms; ++t) s += powers[t] * x;
    return s;
}

kernel void pk_power(const device float* x [[buffer(0)]], device float* y [[buffer(1)]],
                     const device float* bias [[buffer(2), function_constant(pk_use_bias)]],
                     uint i [[thread_position_in_grid]]) {
    float v = pk_power_sum(x[i]);
    if (pk_use_bias) v += bias[i];
    y[i] = v;
}

template <typename T, int M>
kernel void pk_scale(const device T* x [[buffer(0)]], device T* y [[buffer(1)]],
                     uint i [[thread_position_in_grid]]) {
    y[i] = T(float(x[i]) * pk_alpha * float(M));
}
template [[host_name("pk_scale_f1")]] kernel void pk_scale<float, 1>(const device float*, device float*, uint);
template [[host_name("pk_scale_f3")]] kernel void pk_scale<float, 3>(const device float*, device float*, uint);
template [[host_name("pk_scale_i2")]] kernel void pk_scale<int, 2>(const device int*, device int*, uint);

// Each of these refuses pk_terms == 3, as a kernel written for other values may.
kernel void pk_strict(device float* y [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    static_assert(pk_terms != 3, "pk_strict needs pk_terms != 3");
    y[i] = float(pk_terms);
}

template <typename T>
kernel void pk_strict_template(device T* y [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    static_assert(pk_terms != 3 || sizeof(T) == 0, "pk_strict_template needs pk_terms != 3");
    y[i] = T(pk_terms);
}
template [[host_name("pk_strict_f")]] kernel void pk_strict_template<float>(device float*, uint);
"""

N = 29


@pytest.fixture
def lib(device):
    return device.compile(SRC)


def _power_reference(x, alpha, terms):
    return sum(np.float64(alpha) ** t for t in range(terms)) * x.astype(np.float64)


@pytest.mark.parametrize("alpha,use_bias,terms", [(0.5, True, 3), (2.0, False, 4), (-1.5, True, 1), (0.25, False, 3)])
def test_every_specialisation_matches_numpy(device, lib, rng, alpha, use_bias, terms):
    constants = {"pk_alpha": alpha, "pk_use_bias": use_bias, "pk_terms": terms}
    x = rng.standard_normal(N).astype(np.float32)
    bias = rng.standard_normal(N).astype(np.float32)
    y = np.zeros(N, np.float32)
    lib.function("pk_power", constants=constants)(N, x, y, bias if use_bias else None)
    expected = _power_reference(x, alpha, terms) + (bias if use_bias else 0)
    np.testing.assert_allclose(y, expected, rtol=1e-5, atol=1e-5)
    for name, factor in [("pk_scale_f1", 1), ("pk_scale_f3", 3)]:
        out = np.zeros(N, np.float32)
        lib.function(name, constants=constants)(N, x, out)
        np.testing.assert_allclose(out, x.astype(np.float64) * alpha * factor, rtol=1e-6, atol=1e-6)
    xi = rng.integers(-1000, 1000, N).astype(np.int32)
    out = np.zeros(N, np.int32)
    lib.function("pk_scale_i2", constants=constants)(N, xi, out)
    np.testing.assert_array_equal(out, (xi.astype(np.float32) * np.float32(alpha) * 2).astype(np.int32))


def test_a_specialisation_leaves_the_other_kernels_out(device, lib, rng):
    # With pk_terms = 3 neither pk_strict nor pk_strict_f compiles; the whole file would
    # not either. The modules of pk_power and pk_scale_f3 hold only their own kernels.
    constants = {"pk_alpha": 2.0, "pk_use_bias": False, "pk_terms": 3}
    x = rng.standard_normal(N).astype(np.float32)
    y = np.zeros(N, np.float32)
    lib.function("pk_power", constants=constants)(N, x, y)
    np.testing.assert_allclose(y, x.astype(np.float64) * 7.0, rtol=1e-5, atol=1e-5)
    lib.function("pk_scale_f3", constants=constants)(N, x, y)
    np.testing.assert_allclose(y, x.astype(np.float64) * 6.0, rtol=1e-6, atol=1e-6)
    for name, message in [("pk_strict", "pk_strict needs"), ("pk_strict_f", "pk_strict_template needs")]:
        with pytest.raises(mc.CompileError, match=message):
            lib.function(name, constants=constants)
    # Other values: the strict kernels build and run, and the library is still usable.
    for name in ("pk_strict", "pk_strict_f"):
        out = np.zeros(N, np.float32)
        lib.function(name, constants={"pk_alpha": 1.0, "pk_use_bias": False, "pk_terms": 5})(N, out)
        np.testing.assert_array_equal(out, np.full(N, 5, np.float32))


def test_specialisations_of_different_kernels_do_not_mix(device, lib, rng):
    # Same constant values, two kernels: each program runs its own code.
    constants = {"pk_alpha": 3.0, "pk_use_bias": False, "pk_terms": 2}
    x = rng.standard_normal(N).astype(np.float32)
    a = np.zeros(N, np.float32)
    b = np.zeros(N, np.float32)
    power = lib.function("pk_power", constants=constants)
    scale = lib.function("pk_scale_f1", constants=constants)
    power(N, x, a)
    scale(N, x, b)
    np.testing.assert_allclose(a, x.astype(np.float64) * 4.0, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(b, x.astype(np.float64) * 3.0, rtol=1e-6, atol=1e-6)


def test_checked_mode_specialises_one_kernel_too(rng):
    # Checked mode translates the kernel's module with its own rewrites; an access past
    # the end of a buffer is still reported.
    lib = mc.Device("cpu", checked=True).compile(SRC)
    constants = {"pk_alpha": 0.5, "pk_use_bias": True, "pk_terms": 3}
    x = rng.standard_normal(N).astype(np.float32)
    bias = rng.standard_normal(N).astype(np.float32)
    y = np.zeros(N, np.float32)
    power = lib.function("pk_power", constants=constants)
    power(N, x, y, bias)
    np.testing.assert_allclose(y, _power_reference(x, 0.5, 3) + bias, rtol=1e-5, atol=1e-5)
    with pytest.raises(mc.ExecutionError, match="bias"):
        power(N, x, y, bias[: N - 1])
