"""Kernels declared inside namespaces (issue P2.0, second corpus: MetalPetal's colorConversion),
whose parameter types, template arguments, function constants and helpers are the namespace's:
nested, unnamed and inline namespaces, `namespace a::b`, a `using namespace` inside the kernel's
namespace, template kernels instantiated there, a texture type alias of the namespace. Metal
names a kernel by its unqualified name (MetalPetal's host code asks for "colorConversion" and
"CLAHEGenerateLUT", declared in `metalpetal::yuv2rgbconvert` and `metalpetal::clahe`), so two
kernels of one name in two namespaces would be two library functions of one name: refused.
Each kernel is checked against NumPy on every device.
"""

from __future__ import annotations

import numpy as np
import pytest

import metalcall as mc
from mcconf import KernelSet, assert_equal, compile_once, register_source

KS = KernelSet([
    """
namespace nsk_outer {
  namespace inner {
    struct Params { float scale; float bias; };
    constant float kOffset = 0.5f;
    float helper(float x, constant Params& p) { return x * p.scale + p.bias + kOffset; }
    kernel void nsk_nested(const device float* x [[buffer(0)]], device float* y [[buffer(1)]],
                           constant Params& p [[buffer(2)]], uint i [[thread_position_in_grid]]) {
      y[i] = helper(x[i], p);
    }
  }
}
""",
    """
namespace nsk_anon {
  namespace {
    struct Pair { int a; int b; };
    int combine(Pair p) { return p.a * 10 + p.b; }
  }
  kernel void nsk_unnamed(const device Pair* in [[buffer(0)]], device int* out [[buffer(1)]],
                          uint i [[thread_position_in_grid]]) {
    out[i] = combine(in[i]);
  }
}
""",
    """
namespace nsk_lib {
  inline namespace v2 {
    struct Weights { float4 w; };
    kernel void nsk_inline(const device float4* x [[buffer(0)]], device float* y [[buffer(1)]],
                           constant Weights& c [[buffer(2)]], uint i [[thread_position_in_grid]]) {
      y[i] = dot(x[i], c.w);
    }
  }
}
""",
    """
namespace nsk_shapes { struct Box { uint lo; uint hi; }; }
namespace nsk_ops {
  using namespace nsk_shapes;
  kernel void nsk_using(const device uint* x [[buffer(0)]], device uint* y [[buffer(1)]],
                        constant Box& b [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    y[i] = clamp(x[i], b.lo, b.hi);
  }
}
""",
    """
namespace nsk_a::nsk_b {
  typedef struct { short2 s; } Shift;
  kernel void nsk_cpp17(const device short2* x [[buffer(0)]], device short2* y [[buffer(1)]],
                        constant Shift& sh [[buffer(2)]], ushort i [[thread_position_in_grid]]) {
    y[i] = x[i] + sh.s;
  }
}
""",
    """
namespace nsk_tmpl {
  struct Cfg { float mul; };
  template <typename T, typename C>
  kernel void nsk_scale(const device T* x [[buffer(0)]], device T* y [[buffer(1)]],
                        constant C& c [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    y[i] = T(float(x[i]) * c.mul);
  }
  template [[host_name("nsk_scale_half")]] kernel void nsk_scale<half, Cfg>(
      const device half*, device half*, constant Cfg&, uint);
  template [[host_name("nsk_scale_int")]] kernel void nsk_scale<int, Cfg>(
      const device int*, device int*, constant Cfg&, uint);
}
""",
    """
namespace nsk_tex {
  using Source = texture2d<float, access::read>;
  struct Gain { float g; };
  kernel void nsk_texture(Source src [[texture(0)]], device float* out [[buffer(0)]],
                          constant Gain& gain [[buffer(1)]], uint2 p [[thread_position_in_grid]]) {
    out[p.y * src.get_width() + p.x] = src.read(p).r * gain.g;
  }
}
""",
])

FC_SRC = register_source("""#include <metal_stdlib>
using namespace metal;
namespace nsk_fc {
  constant bool use_bias [[function_constant(0)]];
  constant float fc_scale [[function_constant(1)]];
  struct Bias { float b; };
  kernel void nsk_constants(const device float* x [[buffer(0)]], device float* y [[buffer(1)]],
                            constant Bias& bias [[buffer(2), function_constant(use_bias)]],
                            uint i [[thread_position_in_grid]]) {
    float v = x[i] * fc_scale;
    if (use_bias) v += bias.b;
    y[i] = v;
  }
}
""")

TWICE = """#include <metal_stdlib>
using namespace metal;
namespace nsk_one { kernel void nsk_same(device float* y [[buffer(0)]], uint i [[thread_position_in_grid]]) { y[i] = 1; } }
namespace nsk_two { kernel void nsk_same(device float* y [[buffer(0)]], uint i [[thread_position_in_grid]]) { y[i] = 2; } }
"""


def test_nested_namespaces(device, rng):
    x = rng.standard_normal(16).astype(np.float32)
    y = np.zeros(16, np.float32)
    KS.get(device, "nsk_nested")(16, x, y, np.array([2.0, -1.0], np.float32))
    np.testing.assert_allclose(y, x * 2.0 - 1.0 + 0.5, rtol=1e-6, atol=1e-6)


def test_unnamed_namespace(device, rng):
    pairs = rng.integers(0, 10, (12, 2)).astype(np.int32)
    out = np.zeros(12, np.int32)
    KS.get(device, "nsk_unnamed")(12, pairs, out)
    assert_equal(out, pairs[:, 0] * 10 + pairs[:, 1])


def test_inline_namespace(device, rng):
    x = rng.standard_normal((10, 4)).astype(np.float32)
    w = np.array([1.0, -2.0, 0.5, 3.0], np.float32)
    y = np.zeros(10, np.float32)
    KS.get(device, "nsk_inline")(10, x, y, w)
    np.testing.assert_allclose(y, x.astype(np.float64) @ w, rtol=1e-5, atol=1e-5)


def test_using_namespace_in_the_kernels_namespace(device, rng):
    x = rng.integers(0, 100, 20).astype(np.uint32)
    y = np.zeros(20, np.uint32)
    KS.get(device, "nsk_using")(20, x, y, np.array([10, 60], np.uint32))
    assert_equal(y, np.clip(x, 10, 60))


def test_nested_namespace_definition(device, rng):
    x = rng.integers(-1000, 1000, (9, 2)).astype(np.int16)
    y = np.zeros((9, 2), np.int16)
    KS.get(device, "nsk_cpp17")(9, x, y, np.array([7, -3], np.int16))
    assert_equal(y, x + np.array([7, -3], np.int16))


@pytest.mark.parametrize("name,dtype", [("nsk_scale_half", np.float16), ("nsk_scale_int", np.int32)])
def test_template_kernels_instantiated_in_a_namespace(device, rng, name, dtype):
    x = rng.integers(-50, 50, 14).astype(dtype)
    y = np.zeros(14, dtype)
    KS.get(device, name)(14, x, y, np.array([1.5], np.float32))
    expect = (x.astype(np.float32) * np.float32(1.5)).astype(dtype)
    assert_equal(y, expect)


def test_texture_alias_of_the_namespace(device, rng):
    h, w = 3, 5
    pixels = rng.uniform(0, 1, (h, w, 4)).astype(np.float32)
    tex = device.texture_from(pixels)
    out = np.zeros(h * w, np.float32)
    KS.get(device, "nsk_texture")((w, h), out, np.array([4.0], np.float32), textures=[tex])
    np.testing.assert_allclose(out.reshape(h, w), pixels[..., 0] * 4.0, rtol=1e-6)


@pytest.mark.parametrize("constants", [{"use_bias": True, "fc_scale": 3.0}, {0: False, 1: -2.0}])
def test_function_constants_of_the_namespace(device, rng, constants):
    x = rng.standard_normal(8).astype(np.float32)
    y = np.zeros(8, np.float32)
    fn = compile_once(device, FC_SRC).function("nsk_constants", constants=constants)
    scale = constants.get("fc_scale", constants.get(1))
    if constants.get("use_bias", constants.get(0)):
        fn(8, x, y, np.array([0.25], np.float32))
        np.testing.assert_allclose(y, x * np.float32(scale) + np.float32(0.25), rtol=1e-6)
    else:
        fn(8, x, y)
        np.testing.assert_allclose(y, x * np.float32(scale), rtol=1e-6)


def test_one_name_in_two_namespaces_is_refused(device):
    with pytest.raises(mc.CompileError, match="nsk_same.*namespace"):
        compile_once(device, TWICE)
