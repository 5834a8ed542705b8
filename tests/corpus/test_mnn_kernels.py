"""MNN's Metal kernels (alibaba/MNN, source/backend/metal/shader: a source first surveyed for
issue P2.0) run on metalcall against NumPy models written here. MNN builds each shader file
as `#define MNN_METAL_FULL_PRECISION 0|1`, MetalDefine.metal, MetalConvolutionActivation.metal
and the file (MNNMetalContext.mm, createLibrary): the test builds the same library from a
scratch file that includes them in that order (nothing of the public source is copied here),
with ftype = half (MNN's default, fp16 storage) and float (full precision). Arguments and
grids follow MNN's host code (MetalLayerNorm.mm, MetalSoftmax.mm, MetalMatMul.mm,
MetalReLU6.mm, MetalEltwise.mm). MNN's newer kernels are MSL in C++ raw strings of its .hpp
files, built at run time with ftype and other macros; the simdgroup layer norms of
LayerNormSimdGroupShader.hpp are read from the public header at test time too."""

from __future__ import annotations

import re

import numpy as np
import pytest

from corpus_support import corpus_root, kernel, require

SHADERS = "mnn/source/backend/metal/shader"
PRECISION = {"half": 0, "float": 1}  # MNN_METAL_FULL_PRECISION
TYPES = {"half": np.float16, "float": np.float32}
# ftype results: float's to a few ulps of float accumulation, half's to half's precision.
TOL = {"float": dict(rtol=1e-5, atol=1e-6), "half": dict(rtol=2e-3, atol=2e-3)}


@pytest.fixture(scope="module")
def scratch(tmp_path_factory):
    return tmp_path_factory.mktemp("mnn")


# The kernels each test file calls, built together (one compile per file, ftype and device).
KERNELS = {
    "MetalLayerNorm.metal": ("layernorm_x1", "layernorm_x4", "layernorm_x1_rms", "layernorm_x4_rms"),
    "MetalSoftmax.metal": ("softmax_plane", "softmax_on_reorder", "softmax_off_reorder"),
    "MetalMatMul.metal": ("matmul", "matmul_bias"),
    "MetalReLU6.metal": ("relu6", "relu"),
    "MetalEltwise.metal": ("eltwise_add", "eltwise_prod", "eltwise_max"),
    "MetalConvolution1x1.metal": ("conv1x1_g1z4_w8", "conv1x1_g1z4_w4"),
}


def mnn_kernel(device, scratch, shader, name, tname):
    """The kernel `name` of MNN's library built from `shader`, ftype = tname."""
    files = ["MetalDefine.metal", "MetalConvolutionActivation.metal", shader]
    for f in files:
        require(f"{SHADERS}/{f}")
    root = (corpus_root() / SHADERS).resolve()
    path = scratch / shader
    if not path.exists():
        path.write_text("".join(f'#include "{root / f}"\n' for f in files))
    return kernel(device, path, name, defines=(f"MNN_METAL_FULL_PRECISION={PRECISION[tname]}",),
                  also=KERNELS[shader])


# ---- layer norm: a thread per element of (inside, outside); each thread reduces its row --------
LAYERNORM = np.dtype([("inside", "<i4"), ("outside", "<i4"), ("eps", "<f4"), ("has_gamma_beta", "<i4")])


@pytest.mark.parametrize("tname", sorted(TYPES))
@pytest.mark.parametrize("rms", [False, True])
@pytest.mark.parametrize("x4", [False, True])
@pytest.mark.parametrize("gamma_beta", [False, True])
def test_layernorm(device, scratch, rng, tname, rms, x4, gamma_beta):
    t = TYPES[tname]
    inside, outside, eps = 24, 5, 1e-5
    x = rng.uniform(-3, 3, (outside, inside)).astype(t)
    gamma = rng.uniform(0.5, 1.5, inside).astype(np.float32)
    beta = rng.uniform(-1, 1, inside).astype(np.float32)
    out = np.zeros_like(x)
    name = "layernorm_" + ("x4" if x4 else "x1") + ("_rms" if rms else "")
    k = mnn_kernel(device, scratch, "MetalLayerNorm.metal", name, tname)
    cst = np.array([(inside, outside, eps, int(gamma_beta))], LAYERNORM)[0]
    k(((inside // 4) if x4 else inside, outside), x, out, cst, gamma, beta)
    xd = x.astype(np.float64)
    if rms:
        norm = xd / np.sqrt((xd * xd).mean(axis=1, keepdims=True) + eps)
    else:
        centred = xd - xd.mean(axis=1, keepdims=True)
        norm = centred / np.sqrt((centred * centred).mean(axis=1, keepdims=True) + eps)
    want = norm * gamma + beta if gamma_beta else norm
    np.testing.assert_allclose(out.astype(np.float64), want, **TOL[tname])


# ---- softmax: softmax_plane (any axis, plain layout), softmax_on_reorder (the channel axis of
# NC4HW4: channels in slices of 4, the padding lanes of the last slice filtered out with
# select(0, value, mask)), softmax_off_reorder (4 independent lanes along the axis) -----------
SOFTMAX = np.dtype([("inside_size", "<i4"), ("axis_length", "<i4"), ("outside_size", "<i4"), ("flat_length", "<i4")])


def softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


@pytest.mark.parametrize("tname", sorted(TYPES))
def test_softmax_plane(device, scratch, rng, tname):
    t = TYPES[tname]
    outside, axis, inside = 3, 37, 6
    x = rng.uniform(-5, 5, (outside, axis, inside)).astype(t)
    out = np.zeros_like(x)
    k = mnn_kernel(device, scratch, "MetalSoftmax.metal", "softmax_plane", tname)
    k((inside, outside), x, out, np.array([(inside, axis, outside, axis)], SOFTMAX)[0])
    np.testing.assert_allclose(out.astype(np.float64), softmax(x.astype(np.float64), 1), **TOL[tname])


@pytest.mark.parametrize("tname", sorted(TYPES))
@pytest.mark.parametrize("channels", [8, 13])
def test_softmax_on_reorder(device, scratch, rng, tname, channels):
    t = TYPES[tname]
    batch, hw = 2, 5
    slices = -(-channels // 4)
    x = rng.uniform(-5, 5, (batch, channels, hw)).astype(t)
    packed = np.full((batch, slices * 4, hw), 40, t)  # padding lanes hold a value larger than any
    packed[:, :channels] = x
    nc4 = np.ascontiguousarray(packed.reshape(batch, slices, 4, hw).transpose(0, 1, 3, 2))  # [n][c/4][hw][4]
    out = np.zeros_like(nc4)
    k = mnn_kernel(device, scratch, "MetalSoftmax.metal", "softmax_on_reorder", tname)
    k((hw, batch), nc4, out, np.array([(hw, slices, batch, channels)], SOFTMAX)[0])
    got = out.transpose(0, 1, 3, 2).reshape(batch, slices * 4, hw)[:, :channels]
    np.testing.assert_allclose(got.astype(np.float64), softmax(x.astype(np.float64), 1), **TOL[tname])


@pytest.mark.parametrize("tname", sorted(TYPES))
def test_softmax_off_reorder(device, scratch, rng, tname):
    t = TYPES[tname]
    outside, axis, inside = 2, 9, 3
    x = rng.uniform(-5, 5, (outside, axis, inside, 4)).astype(t)
    out = np.zeros_like(x)
    k = mnn_kernel(device, scratch, "MetalSoftmax.metal", "softmax_off_reorder", tname)
    k((inside, outside), x, out, np.array([(inside, axis, outside, axis)], SOFTMAX)[0])
    np.testing.assert_allclose(out.astype(np.float64), softmax(x.astype(np.float64), 1), **TOL[tname])


# ---- matmul: C (e x h) = A (e x l) @ B (l x h), transposes through strides (MetalMatMul.mm) --
MATMUL = np.dtype([("mat_size", "<i4", (4,)), ("in_stride", "<i4", (4,))])


@pytest.mark.parametrize("tname", sorted(TYPES))
@pytest.mark.parametrize("transpose_a", [False, True])
@pytest.mark.parametrize("transpose_b", [False, True])
@pytest.mark.parametrize("bias", [False, True])
def test_matmul(device, scratch, rng, tname, transpose_a, transpose_b, bias):
    t = TYPES[tname]
    e, h, l = 7, 10, 19
    a = rng.uniform(-1, 1, (e, l)).astype(t)
    b = rng.uniform(-1, 1, (l, h)).astype(t)
    bias_values = rng.uniform(-1, 1, h).astype(t)
    a_in = np.ascontiguousarray(a.T) if transpose_a else a
    b_in = np.ascontiguousarray(b.T) if transpose_b else b
    stride = [1, e] if transpose_a else [l, 1]
    stride += [l, 1] if transpose_b else [1, h]
    out = np.zeros((e, h), t)
    shape = np.array([([h, e, l, 0], stride)], MATMUL)[0]
    k = mnn_kernel(device, scratch, "MetalMatMul.metal", "matmul_bias" if bias else "matmul", tname)
    if bias:
        k((h, e), a_in, b_in, bias_values, out, shape)
    else:
        k((h, e), a_in, b_in, out, shape)
    want = a.astype(np.float64) @ b.astype(np.float64)
    if bias:  # ftype(value) + bias: rounded to ftype, then added in ftype
        want = want.astype(t).astype(np.float64) + bias_values
    np.testing.assert_allclose(out.astype(np.float64), want, **TOL[tname])


# ---- relu6 (clamp) and relu with a negative slope (MetalReLU6.mm: size in ftype4s) ------------
RELU = np.dtype([("minV", "<f4"), ("maxV", "<f4"), ("size", "<i4"), ("remain", "<i4")])


@pytest.mark.parametrize("tname", sorted(TYPES))
def test_relu6_and_leaky_relu(device, scratch, rng, tname):
    t = TYPES[tname]
    n = 33
    x = rng.uniform(-8, 8, (n, 4)).astype(t)
    out = np.zeros_like(x)
    mnn_kernel(device, scratch, "MetalReLU6.metal", "relu6", tname)(n, x, out, np.array([(-1.5, 6, n, 0)], RELU)[0])
    np.testing.assert_array_equal(out, np.clip(x, t(-1.5), t(6)))
    mnn_kernel(device, scratch, "MetalReLU6.metal", "relu", tname)(n, x, out, np.array([(0.25, 0, n, 0)], RELU)[0])
    np.testing.assert_array_equal(out, np.where(x > 0, x, x * t(0.25)))


@pytest.mark.parametrize("tname", sorted(TYPES))
@pytest.mark.parametrize("op", ["add", "prod", "max"])
def test_eltwise(device, scratch, rng, tname, op):
    t = TYPES[tname]
    n = 101
    a = rng.uniform(-4, 4, n).astype(t)
    b = rng.uniform(-4, 4, n).astype(t)
    out = np.zeros(n, t)
    k = mnn_kernel(device, scratch, "MetalEltwise.metal", f"eltwise_{op}", tname)
    k(n + 27, a, b, out, np.array([n, 0, 0, 0], np.int32))  # threads past the size do nothing
    want = {"add": a + b, "prod": a * b, "max": np.maximum(a, b)}[op]
    np.testing.assert_array_equal(out, want)


# ---- 1x1 convolutions with int8 and int4 weights, dequantised per block of input slices (MNN::char4x4
# and MNN::uchar4x2 weight blocks, read through `const device MNN::char4x4* wt`): a thread per 4
# positions of one output slice and batch; `in * w_dequant` is a row vector times the matrix whose
# column i is output channel i's weights --------------------------------------------------------
CONV1X1 = np.dtype([("input_size", "<i4"), ("input_slice", "<i4"), ("output_width", "<i4"),
                    ("output_height", "<i4"), ("output_size", "<i4"), ("output_slice", "<i4"),
                    ("output_channel", "<i4"), ("batch", "<i4"), ("block_size", "<i4"),
                    ("activation", "<i4"), ("scale_coef", "<f4")])


@pytest.mark.parametrize("tname", sorted(TYPES))
@pytest.mark.parametrize("bits", [8, 4])
def test_conv1x1_quantized_weights(device, scratch, rng, tname, bits):
    """Values chosen so that every product and sum is exact in half: the results are exact."""
    t = TYPES[tname]
    in_slices, out_slices, batch, size, blocks = 3, 2, 2, 12, 2
    x = rng.integers(-2, 3, (in_slices, batch, size, 4)).astype(t)
    bias = rng.integers(-4, 5, (out_slices, 4)).astype(t)
    scales = np.stack([rng.choice([0.125, 0.25], (out_slices, blocks, 4)),
                       rng.choice([-1.0, 0.0, 0.5], (out_slices, blocks, 4))], axis=2).astype(t)  # (scale, bias)
    if bits == 8:
        wt = rng.integers(-16, 16, (out_slices, in_slices, 4, 4), dtype=np.int8)
        w = wt.astype(np.float64)
    else:  # each weight row is two bytes of two nibbles, high nibble first, less 8
        wt = rng.integers(0, 256, (out_slices, in_slices, 4, 2), dtype=np.uint8)
        w = np.stack([wt[..., 0] >> 4, wt[..., 0] & 15, wt[..., 1] >> 4, wt[..., 1] & 15], axis=-1) - 8.0
    block = -(-in_slices // blocks)
    sc = scales.astype(np.float64)[:, np.arange(in_slices) // block]  # (out, in, 2, 4)
    wd = w * sc[:, :, 0, :, None] + sc[:, :, 1, :, None]  # [o, z, i, j]: output channel i, input j
    want = bias.astype(np.float64)[:, None, None, :] + np.einsum("zbpj,ozij->obpi", x.astype(np.float64), wd)
    out = np.zeros((out_slices, batch, size, 4), t)
    cst = np.array([(size, in_slices, size, 1, size, out_slices, 4 * out_slices, batch, blocks, 0, 1.0)], CONV1X1)[0]
    k = mnn_kernel(device, scratch, "MetalConvolution1x1.metal", f"conv1x1_g1z4_w{bits}", tname)
    k((size // 4, out_slices, batch), x, out, cst, wt, bias, scales)
    np.testing.assert_array_equal(out, want.astype(t))


# ---- MNN's runtime shaders: MSL in C++ raw strings (R"metal(...)metal") of its .hpp files, built
# with preprocessor macros for ftype (LayerNormSimdGroupShader.hpp: gLayerNormSgReduce, built by
# MetalLayerNorm.mm with ftype, ftype4 and, for the RMS reductions, LN_SIMDS simdgroups) ---------
RUNTIME = "mnn/source/backend/metal"


def runtime_shader(scratch, header, string_name):
    """MNN's shader string `string_name` of `header`, read from the public file at test time and
    written to a scratch .metal file."""
    text = require(f"{RUNTIME}/{header}").read_text()
    m = re.search(r"\b" + string_name + r'\s*=\s*R"metal\((.*?)\)metal"', text, re.S)
    assert m, f"{header} has no shader string {string_name} (the public file changed?)"
    path = scratch / f"{string_name}.metal"
    path.write_text(m.group(1))
    return path


LAYERNORM_SG = ("layernorm_in_all_sg", "layernorm_in_all_rms_sg", "layernorm_x1_sg", "layernorm_x4_sg",
                "layernorm_c4_rms_sg")


def layernorm_model(x, rms, gamma, beta, eps):
    xd = x.astype(np.float64)
    centred = xd if rms else xd - xd.mean(axis=1, keepdims=True)
    norm = centred / np.sqrt((centred * centred).mean(axis=1, keepdims=True) + eps)
    return norm * gamma + beta if gamma is not None else norm


@pytest.mark.parametrize("tname", sorted(TYPES))
@pytest.mark.parametrize("name", ["layernorm_in_all_sg", "layernorm_in_all_rms_sg", "layernorm_x1_sg", "layernorm_x4_sg"])
@pytest.mark.parametrize("gamma_beta", [False, True])
def test_layernorm_simdgroup(device, scratch, rng, tname, name, gamma_beta):
    """One simdgroup reduces each row with simd_sum: a threadgroup of 32 per row
    (layernorm_in_all*) or per output element (layernorm_x1_sg, x4_sg: only lane 0 writes)."""
    t = TYPES[tname]
    inside, outside, eps = 100, 3, 1e-5  # rows longer than a simdgroup, not a multiple of it
    x = rng.uniform(-3, 3, (outside, inside)).astype(t)
    gamma = rng.uniform(0.5, 1.5, inside).astype(np.float32)
    beta = rng.uniform(-1, 1, inside).astype(np.float32)
    out = np.zeros_like(x)
    path = runtime_shader(scratch, "LayerNormSimdGroupShader.hpp", "gLayerNormSgReduce")
    k = kernel(device, path, name, defines=(f"ftype={tname}", f"ftype4={tname}4"), also=LAYERNORM_SG)
    groups = {"layernorm_x1_sg": inside, "layernorm_x4_sg": inside // 4}.get(name, 1)
    cst = np.array([(inside, outside, eps, int(gamma_beta))], LAYERNORM)[0]
    k((groups * 32, outside), x, out, cst, gamma, beta, threadgroup=(32, 1))
    want = layernorm_model(x, "rms" in name, gamma if gamma_beta else None, beta, eps)
    np.testing.assert_allclose(out.astype(np.float64), want, **TOL[tname])


@pytest.mark.parametrize("tname", sorted(TYPES))
@pytest.mark.parametrize("simds", [1, 2, 4])
def test_layernorm_c4_rms_simdgroups(device, scratch, rng, tname, simds):
    """RMS norm of NC4HW4 rows (in[c4 * batch + row], 4 channels each) by LN_SIMDS simdgroups:
    simd_sum, then the simdgroups' sums through threadgroup memory and a barrier."""
    t = TYPES[tname]
    batch, channels, eps = 3, 4 * 70, 1e-6
    x = rng.uniform(-2, 2, (batch, channels)).astype(t)
    gamma = rng.uniform(0.5, 1.5, channels).astype(np.float32)
    beta = rng.uniform(-1, 1, channels).astype(np.float32)
    c4 = np.ascontiguousarray(x.reshape(batch, channels // 4, 4).transpose(1, 0, 2))  # [c4][row][4]
    out = np.zeros_like(c4)
    path = runtime_shader(scratch, "LayerNormSimdGroupShader.hpp", "gLayerNormSgReduce")
    k = kernel(device, path, "layernorm_c4_rms_sg", defines=(f"ftype={tname}", f"ftype4={tname}4", f"LN_SIMDS={simds}"),
               also=LAYERNORM_SG)
    cst = np.array([(channels, batch, eps, 1)], LAYERNORM)[0]
    k((simds * 32, batch), c4, out, cst, gamma, beta, threadgroup=(simds * 32, 1))
    got = out.transpose(1, 0, 2).reshape(batch, channels)
    want = layernorm_model(x, True, gamma, beta, eps)
    np.testing.assert_allclose(got.astype(np.float64), want, **TOL[tname])
