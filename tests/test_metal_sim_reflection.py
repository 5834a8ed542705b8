"""P2.1 item 1: the Metal backend's reflection (the kernel list, the parameter tables) is that of
the source as Metal compiles it: preprocessed, defines= applied, and checked against the
library's kernel functions. The simulator runs the same code as metal_compiler.mm
(msl::reflect_source, metal::check_kernel_names, metal::merge_reflection), so each test here
shows what a Mac would reflect; each checks the values the kernels compute against NumPy."""

from __future__ import annotations

import numpy as np
import pytest

import metalcall as mc


@pytest.fixture(params=["apple7", "amd"])
def sim(request) -> mc.Device:
    return mc.Device("metal-sim", family=request.param)


def kernel_names(lib: mc.Library) -> set[str]:
    return set(lib.function_names)


# Two definitions of one kernel, one per branch: read without preprocessing, a redefinition.
BRANCHES = """
#include <metal_stdlib>
using namespace metal;
#ifdef TWICE
kernel void step(device float* x [[buffer(0)]], uint i [[thread_position_in_grid]]) { x[i] = x[i] * 2.0f; }
#else
kernel void step(device int* x [[buffer(0)]], uint i [[thread_position_in_grid]]) { x[i] = x[i] + 7; }
#endif
"""


def test_ifdef_else_definitions_are_one_kernel(sim):
    plain = sim.compile(BRANCHES)
    assert kernel_names(plain) == {"step"}
    assert plain.step.params[0]["type"] == "int"
    x = np.arange(8, dtype=np.int32)
    plain.step(8, x)
    np.testing.assert_array_equal(x, np.arange(8, dtype=np.int32) + 7)

    twice = sim.compile(BRANCHES, defines={"TWICE": "1"})
    assert twice.step.params[0]["type"] == "float"
    y = np.arange(8, dtype=np.float32)
    twice.step(8, y)
    np.testing.assert_array_equal(y, np.arange(8, dtype=np.float32) * 2)
    # The dtype check follows the branch compiled: float data for the int kernel is refused.
    with pytest.raises(mc.ArgumentError, match="holds float elements but the kernel reads int"):
        plain.step(8, y)


FALSE_IF = """
#include <metal_stdlib>
using namespace metal;
#define LEVEL 2
kernel void kept(device float* x [[buffer(0)]], uint i [[thread_position_in_grid]]) { x[i] = 1.0f; }
#if LEVEL > 2
kernel void gone(device float* x [[buffer(0)]], uint i [[thread_position_in_grid]]) { x[i] = 2.0f; }
#endif
#if 0
kernel void never(device float* x [[buffer(0)]], uint i [[thread_position_in_grid]]) { x[i] = 3.0f; }
#endif
#if __METAL_VERSION__ >= 200
kernel void versioned(device float* x [[buffer(0)]], uint i [[thread_position_in_grid]]) { x[i] = 4.0f; }
#endif
"""


def test_kernels_in_a_false_if_are_not_listed(sim):
    lib = sim.compile(FALSE_IF)
    assert kernel_names(lib) == {"kept", "versioned"}
    with pytest.raises(mc.ArgumentError, match="gone"):
        lib.function("gone")
    x = np.zeros(4, np.float32)
    lib.versioned(4, x)
    np.testing.assert_array_equal(x, np.full(4, 4.0, np.float32))
    # A define can make the condition true: then the kernel exists, and runs.
    raised = sim.compile(FALSE_IF.replace("#define LEVEL 2\n", ""), defines={"LEVEL": "3"})
    assert kernel_names(raised) == {"kept", "gone", "versioned"}
    raised.gone(4, x)
    np.testing.assert_array_equal(x, np.full(4, 2.0, np.float32))


MACRO_KERNELS = """
#include <metal_stdlib>
using namespace metal;
#define BINARY(NAME, OP) \\
  kernel void NAME(const device T* a [[buffer(0)]], constant T& s [[buffer(1)]], \\
                   device T* out [[buffer(2)]], uint i [[thread_position_in_grid]]) { out[i] = a[i] OP s; }
BINARY(add_s, +)
BINARY(mul_s, *)
#define CAT_(a, b) a##b
#define CAT(a, b) CAT_(a, b)
kernel void CAT(neg_, T)(device T* x [[buffer(0)]], uint i [[thread_position_in_grid]]) { x[i] = -x[i]; }
"""


@pytest.mark.parametrize("T,dtype", [("float", np.float32), ("int", np.int32), ("half", np.float16)])
def test_macro_generated_kernels_with_a_defined_type(sim, T, dtype):
    lib = sim.compile(MACRO_KERNELS, defines={"T": T})
    assert kernel_names(lib) == {"add_s", "mul_s", f"neg_{T}"}
    for name in ("add_s", "mul_s"):
        params = lib.function(name).params
        assert [(p["name"], p["type"], p["kind"]) for p in params[:3]] == [
            ("a", T, "buffer"), ("s", T, "reference"), ("out", T, "buffer")]
        assert params[0]["element_size"] == np.dtype(dtype).itemsize
    a = np.arange(1, 65).astype(dtype)
    out = sim.empty(64, dtype)
    lib.add_s(64, a, 3, out)  # a Python number packed as T: the table knows T
    np.testing.assert_array_equal(np.asarray(out), a + dtype(3))
    lib.mul_s(64, a, 2, out)
    np.testing.assert_array_equal(np.asarray(out), a * dtype(2))
    neg = lib.function(f"neg_{T}")
    neg(64, out)
    np.testing.assert_array_equal(np.asarray(out), -(a * dtype(2)))
    wrong = np.float64 if dtype != np.float64 else np.float32
    with pytest.raises(mc.ArgumentError):
        lib.add_s(64, a.astype(wrong), 3, out)  # dtype checks are on


DEFINED_TYPE = """
#include <metal_stdlib>
using namespace metal;
#define T float
#define VEC float4
struct Params { T scale; uint n; };
kernel void scaled(const device VEC* v [[buffer(0)]], device T* out [[buffer(1)]],
                   constant Params& p [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    if (i < p.n) out[i] = (v[i].x + v[i].y + v[i].z + v[i].w) * p.scale;
}
"""


def test_define_t_float_parameter_types(sim, rng):
    k = sim.compile(DEFINED_TYPE).scaled
    v_param, out_param, p_param = k.params[:3]
    assert (v_param["type"], v_param["scalar"], v_param["vector_width"], v_param["element_size"]) == (
        "float4", "float", 4, 16)
    assert (out_param["type"], out_param["scalar"]) == ("float", "float")
    assert p_param["type"] == "Params" and p_param["element_size"] == 8
    v = rng.random((100, 4), dtype=np.float32)
    out = sim.empty(100, np.float32)
    k(100, v, out, np.array([(2.5, 100)], dtype=[("scale", np.float32), ("n", np.uint32)]).tobytes())
    np.testing.assert_allclose(np.asarray(out), v.sum(axis=1) * np.float32(2.5), rtol=1e-6)
    with pytest.raises(mc.ArgumentError, match="holds int elements but the kernel reads float"):
        k(100, v, np.zeros(100, np.int32), bytes(8))


CONDITIONAL_CONSTANT = """
#include <metal_stdlib>
using namespace metal;
#ifdef WITH_GAIN
constant float gain [[function_constant(0)]];
#else
constant float gain = 1.0f;
#endif
kernel void apply(device float* x [[buffer(0)]], uint i [[thread_position_in_grid]]) { x[i] = x[i] * gain; }
"""


def test_function_constants_under_a_define(sim):
    with_gain = sim.compile(CONDITIONAL_CONSTANT, defines={"WITH_GAIN": "1"})
    x = np.arange(16, dtype=np.float32)
    with_gain.function("apply", constants={"gain": 3.0})(16, x)
    np.testing.assert_array_equal(x, np.arange(16, dtype=np.float32) * 3)
    without = sim.compile(CONDITIONAL_CONSTANT)
    with pytest.raises(mc.ArgumentError, match="gain"):
        without.function("apply", constants={"gain": 3.0})
    y = np.arange(16, dtype=np.float32)
    without.apply(16, y)
    np.testing.assert_array_equal(y, np.arange(16, dtype=np.float32))


def test_defines_change_the_kernel_list_of_one_source(sim):
    """The same source under different defines is a different library with its own kernels (the
    library cache keys on the defines)."""
    src = """
#include <metal_stdlib>
using namespace metal;
#if MODE == 1
kernel void one(device uint* x [[buffer(0)]], uint i [[thread_position_in_grid]]) { x[i] = 1; }
#elif MODE == 2
kernel void two(device uint* x [[buffer(0)]], uint i [[thread_position_in_grid]]) { x[i] = 2; }
#endif
"""
    for mode in (1, 2):
        lib = sim.compile(src, defines={"MODE": str(mode)})
        name = {1: "one", 2: "two"}[mode]
        assert kernel_names(lib) == {name}
        x = np.zeros(8, np.uint32)
        lib.function(name)(8, x)
        np.testing.assert_array_equal(x, np.full(8, mode, np.uint32))
