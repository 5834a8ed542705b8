"""Parameters that exist only when a function constant is true (`[[buffer(2),
function_constant(has_bias)]]`, as MLX's steel GEMM and attention kernels declare them):
with the constant false a call passes None for them or leaves them off the end, and
nothing is bound; with it true they take an argument as any other. A value for a
parameter that does not exist, or None for one that does, is an ArgumentError naming it
(docs/design.md, "Parameters that function constants switch off"). Such a parameter may
also have no [[buffer(n)]]: its index is assigned as Metal assigns it (issue P2.0 item 3)."""

from __future__ import annotations

import numpy as np
import pytest

import metalcall as mc
from mcconf import HEADER, compile_once, register_source

SRC = register_source(HEADER + """
constant bool ofc_has_bias [[function_constant(0)]];
constant bool ofc_has_scale [[function_constant(1)]];
constant bool ofc_has_tex [[function_constant(2)]];

// y = x * scale + bias, each term only where its constant is true.
kernel void ofc_affine(const device float* x [[buffer(0)]], device float* y [[buffer(1)]],
                       const device float* bias [[buffer(2), function_constant(ofc_has_bias)]],
                       constant float& scale [[buffer(3), function_constant(ofc_has_scale)]],
                       uint i [[thread_position_in_grid]]) {
    float v = x[i];
    if (ofc_has_scale) v *= scale;
    if (ofc_has_bias) v += bias[i];
    y[i] = v;
}

// A by-value struct after the optional buffer: the entry point copies it even when unused.
struct OfcParams { float offset; uint stride; };
kernel void ofc_struct(device float* y [[buffer(0)]],
                       const device float* bias [[buffer(1), function_constant(ofc_has_bias)]],
                       constant OfcParams& p [[buffer(2), function_constant(ofc_has_scale)]],
                       uint i [[thread_position_in_grid]]) {
    float v = float(i);
    if (ofc_has_bias) v += bias[i];
    if (ofc_has_scale) v = v * float(p.stride) + p.offset;
    y[i] = v;
}

// Parameters without [[buffer(n)]] (candle's sdpa_vector): Metal assigns the indices in
// order; `[[function_constant(c)]]` alone names the constant that switches one off.
kernel void ofc_implicit(const device float* x [[buffer(0)]], device float* y [[buffer(1)]],
                         const constant float& scale,
                         const device bool* mask [[function_constant(ofc_has_bias)]],
                         const constant int& mask_stride [[function_constant(ofc_has_bias)]],
                         uint i [[thread_position_in_grid]]) {
    float v = x[i] * scale;
    if (ofc_has_bias && !mask[i * mask_stride]) v = 0.0f;
    y[i] = v;
}

// A texture that exists only with ofc_has_tex.
kernel void ofc_texture(device float* y [[buffer(0)]],
                        texture2d<float, access::read> t [[texture(0), function_constant(ofc_has_tex)]],
                        uint i [[thread_position_in_grid]]) {
    y[i] = ofc_has_tex ? t.read(uint2(i, 0)).r : -1.0f;
}
""")

N = 37


def kernel(device, name, **constants):
    return compile_once(device, SRC).function(name, constants={f"ofc_{k}": v for k, v in constants.items()})


@pytest.fixture
def data(rng):
    return rng.standard_normal(N).astype(np.float32), rng.standard_normal(N).astype(np.float32)


def test_bias_used_when_its_constant_is_true(device, data):
    x, bias = data
    y = np.zeros(N, np.float32)
    kernel(device, "ofc_affine", has_bias=True, has_scale=True)(N, x, y, bias, 2.5)
    np.testing.assert_allclose(y, x.astype(np.float64) * 2.5 + bias, rtol=1e-6, atol=1e-6)
    kernel(device, "ofc_affine", has_bias=True, has_scale=False)(N, x, y, bias, None)
    np.testing.assert_allclose(y, x.astype(np.float64) + bias, rtol=1e-6, atol=1e-6)
    kernel(device, "ofc_affine", has_bias=True, has_scale=False)(N, x, y, bias)  # left off the end
    np.testing.assert_allclose(y, x.astype(np.float64) + bias, rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("args", [(), (None,), (None, None)], ids=["omitted", "none", "none-none"])
def test_disabled_parameters_take_none_or_nothing(device, data, args):
    x, _ = data
    y = np.full(N, 7, np.float32)
    k = kernel(device, "ofc_affine", has_bias=False, has_scale=False)
    assert [(p["name"], p["function_constant"], p["enabled"]) for p in k.params if p["kind"] != "builtin"] == [
        ("x", None, True), ("y", None, True), ("bias", "ofc_has_bias", False), ("scale", "ofc_has_scale", False)]
    k(N, x, y, *args)
    np.testing.assert_array_equal(y, x)


def test_disabled_parameter_before_an_enabled_one(device, data):
    x, _ = data
    y = np.zeros(N, np.float32)
    kernel(device, "ofc_affine", has_bias=False, has_scale=True)(N, x, y, None, -3.0)
    np.testing.assert_allclose(y, x.astype(np.float64) * -3.0, rtol=1e-6)


def test_constants_not_given_read_as_false(device, data):
    x, _ = data
    y = np.zeros(N, np.float32)
    k = compile_once(device, SRC).ofc_affine
    assert not any(p["enabled"] for p in k.params if p["function_constant"])
    k(N, x, y)
    np.testing.assert_array_equal(y, x)


def test_buffers_queued_and_batched(device, data):
    """Device Buffers: the call is queued (its arguments are owned past the call), and in a batch."""
    x, bias = data
    xb, yb, bb = device.asarray(x), device.empty(N, np.float32), device.asarray(bias)
    k_off = kernel(device, "ofc_affine", has_bias=False, has_scale=False)
    k_on = kernel(device, "ofc_affine", has_bias=True, has_scale=False)
    h = k_off(N, xb, yb)
    h.wait()
    np.testing.assert_array_equal(np.asarray(yb), x)
    out = device.empty(N, np.float32)
    with device.batch():
        k_off(N, xb, yb, None)
        k_on(N, yb, out, bb)
    np.testing.assert_allclose(np.asarray(out), x.astype(np.float64) + bias, rtol=1e-6, atol=1e-6)


def test_struct_parameter_switched_off(device, data):
    _, bias = data
    y = np.zeros(N, np.float32)
    kernel(device, "ofc_struct", has_bias=False, has_scale=False)(N, y)
    np.testing.assert_array_equal(y, np.arange(N, dtype=np.float32))
    params = np.array([(0.5, 3)], dtype=[("offset", np.float32), ("stride", np.uint32)])[0]
    kernel(device, "ofc_struct", has_bias=True, has_scale=True)(N, y, bias, params)
    np.testing.assert_allclose(y, (np.arange(N) + bias.astype(np.float64)) * 3 + 0.5, rtol=1e-6)
    kernel(device, "ofc_struct", has_bias=False, has_scale=True)(N, y, None, params)
    np.testing.assert_allclose(y, np.arange(N) * 3.0 + 0.5, rtol=1e-6)


def test_texture_switched_off(device, rng):
    y = np.zeros(8, np.float32)
    kernel(device, "ofc_texture", has_tex=False)(8, y)
    np.testing.assert_array_equal(y, -1.0)
    kernel(device, "ofc_texture", has_tex=False)(8, y, textures=[None])
    np.testing.assert_array_equal(y, -1.0)
    texels = rng.standard_normal((1, 8)).astype(np.float32)
    tex = device.texture_from(texels)
    kernel(device, "ofc_texture", has_tex=True)(8, y, textures=[tex])
    np.testing.assert_array_equal(y, texels[0])
    with pytest.raises(mc.ArgumentError, match=r"'t'.*does not exist.*'ofc_has_tex' is false"):
        kernel(device, "ofc_texture", has_tex=False)(8, y, textures=[tex])
    with pytest.raises(mc.ArgumentError, match=r"needs a texture"):
        kernel(device, "ofc_texture", has_tex=True)(8, y)


def test_value_for_a_disabled_parameter_is_an_error(device, data):
    x, bias = data
    y = np.zeros(N, np.float32)
    k = kernel(device, "ofc_affine", has_bias=False, has_scale=True)
    with pytest.raises(mc.ArgumentError, match=r"argument 2 'bias'.*does not exist in this specialisation.*"
                                               r"'ofc_has_bias' is false.*pass None"):
        k(N, x, y, bias, 1.0)
    np.testing.assert_array_equal(y, 0)  # nothing ran


def test_none_for_an_enabled_parameter_is_an_error(device, data):
    x, _ = data
    y = np.zeros(N, np.float32)
    k = kernel(device, "ofc_affine", has_bias=True, has_scale=True)
    with pytest.raises(mc.ArgumentError, match=r"argument 2 'bias'.*None was given.*'ofc_has_bias' is true"):
        k(N, x, y, None, 1.0)
    with pytest.raises(mc.ArgumentError, match=r"argument 3 'scale'.*None was given"):
        k(N, x, y, x, None)
    with pytest.raises(mc.ArgumentError, match=r"argument 1 'y'.*None was given, but the kernel needs this argument;"):
        k(N, x, None, x, 1.0)


def test_enabled_parameter_still_required(device, data):
    x, bias = data
    y = np.zeros(N, np.float32)
    with pytest.raises(mc.ArgumentError, match=r"takes 4 argument\(s\) after the grid .* but 3 were given"):
        kernel(device, "ofc_affine", has_bias=True, has_scale=True)(N, x, y, bias)
    # Only parameters after every needed one may be left off: here 'scale' is needed.
    with pytest.raises(mc.ArgumentError, match=r"bias: const device float\* = None, as 'ofc_has_bias' is false.* but 2 were given"):
        kernel(device, "ofc_affine", has_bias=False, has_scale=True)(N, x, y)
    with pytest.raises(mc.ArgumentError, match=r"but 5 were given"):
        kernel(device, "ofc_affine", has_bias=False, has_scale=False)(N, x, y, None, None, None)


def test_function_constant_parameters_without_an_index(device, data, rng):
    x, _ = data
    y = np.zeros(N, np.float32)
    on = kernel(device, "ofc_implicit", has_bias=True)
    assert [(p["name"], p["binding"], p["enabled"]) for p in on.params if p["kind"] != "builtin"] == [
        ("x", 0, True), ("y", 1, True), ("scale", 2, True), ("mask", 3, True), ("mask_stride", 4, True)]
    mask = rng.integers(0, 2, 2 * N).astype(np.bool_)
    on(N, x, y, np.float32(1.5), mask, np.int32(2))
    np.testing.assert_array_equal(y, np.where(mask[::2], x * np.float32(1.5), 0))
    off = kernel(device, "ofc_implicit", has_bias=False)
    off(N, x, y, np.float32(-2.0))
    np.testing.assert_array_equal(y, x * np.float32(-2.0))
