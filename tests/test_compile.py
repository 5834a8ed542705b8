"""dev.compile(): defines, fast_math, and looking kernels up in a Library."""

from __future__ import annotations

import numpy as np
import pytest

import metalcall as mc
from mctest import GOOD_SRC, MUL_SRC, check_usable

DEFINES_SRC = """
#include <metal_stdlib>
using namespace metal;
kernel void defs(device float* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    out[0] = SCALE;
    out[1] = OFFSET;
    out[2] = FLAG;
#ifdef ENABLED
    out[3] = 1.0f;
#else
    out[3] = -1.0f;
#endif
    out[4] = EXPR;
    out[5] = EMPTY 7.0f;
}
"""

# Functions whose results depend on rounding, so fast and precise math both must be close.
MATH_SRC = """
#include <metal_stdlib>
using namespace metal;
kernel void mathy(const device float* x [[buffer(0)]], device float* out [[buffer(1)]],
                  uint i [[thread_position_in_grid]]) {
    float v = x[i];
    out[4 * i + 0] = sqrt(v) / (v + 1.0f);
    out[4 * i + 1] = exp(-v) * sin(v);
    out[4 * i + 2] = log(v + 1.0f) + cos(v) * cos(v);
    out[4 * i + 3] = v * v * v - 2.0f * v + 0.5f;
}
"""


def math_expected(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.float64)
    out = np.empty((len(x), 4))
    out[:, 0] = np.sqrt(x) / (x + 1)
    out[:, 1] = np.exp(-x) * np.sin(x)
    out[:, 2] = np.log(x + 1) + np.cos(x) ** 2
    out[:, 3] = x**3 - 2 * x + 0.5
    return out


def test_compile_returns_library(device):
    lib = device.compile(MUL_SRC)
    assert isinstance(lib, mc.Library)
    a = np.arange(100, dtype=np.float32)
    c = np.zeros(100, np.float32)
    lib.mul(100, a, a, c)
    np.testing.assert_array_equal(c, a * a)


def test_defines_are_macros_in_the_kernel_body(device):
    lib = device.compile(
        DEFINES_SRC,
        defines={"SCALE": 2.5, "OFFSET": -3, "FLAG": True, "ENABLED": None, "EXPR": "(SCALE * 2)", "EMPTY": None},
    )
    out = np.zeros(6, np.float32)
    lib.defs(1, out)
    np.testing.assert_array_equal(out, [2.5, -3.0, 1.0, 1.0, 5.0, 7.0])


def test_different_defines_give_different_results(device):
    # Same source, other macro values: the library cache is keyed by the defines too.
    lib = device.compile(
        DEFINES_SRC, defines={"SCALE": 0.25, "OFFSET": 11, "FLAG": False, "EXPR": "1.5f", "EMPTY": "-"}
    )
    out = np.zeros(6, np.float32)
    lib.defs(1, out)
    np.testing.assert_array_equal(out, [0.25, 11.0, 0.0, -1.0, 1.5, -7.0])


def test_defines_as_a_list_of_names(device):
    src = """
kernel void flags(device int* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {
#if defined(ALPHA) && ALPHA == 1
    out[0] = 10;
#endif
#ifdef BETA
    out[1] = 20;
#endif
#ifdef GAMMA
    out[2] = 30;
#endif
}
"""
    out = np.zeros(3, np.int32)
    device.compile(src, defines=["ALPHA", "BETA"]).flags(1, out)
    np.testing.assert_array_equal(out, [10, 20, 0])


@pytest.mark.parametrize("fast_math", [False, True])
def test_fast_math_both_correct(device, fast_math):
    x = np.linspace(0.0, 4.0, 1000, dtype=np.float32)
    out = np.zeros(4 * len(x), np.float32)
    device.compile(MATH_SRC, fast_math=fast_math).mathy(len(x), x, out)
    np.testing.assert_allclose(out.reshape(-1, 4), math_expected(x), rtol=2e-4, atol=2e-5)


def test_fast_math_false_is_ieee_exact_for_basic_ops(device):
    # Without fast math, + - * / and sqrt are correctly rounded float32 operations.
    src = """
kernel void basic(const device float* a [[buffer(0)]], const device float* b [[buffer(1)]],
                  device float* out [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    out[5 * i + 0] = a[i] + b[i];
    out[5 * i + 1] = a[i] - b[i];
    out[5 * i + 2] = a[i] * b[i];
    out[5 * i + 3] = a[i] / b[i];
    out[5 * i + 4] = a[i] * b[i] + a[i];
}
"""
    rng = np.random.default_rng(7)
    a = rng.standard_normal(4096).astype(np.float32)
    b = (rng.standard_normal(4096) + 3).astype(np.float32)
    out = np.zeros(5 * len(a), np.float32)
    device.compile(src, fast_math=False).basic(len(a), a, b, out)
    out = out.reshape(-1, 5)
    np.testing.assert_array_equal(out[:, 0], a + b)
    np.testing.assert_array_equal(out[:, 1], a - b)
    np.testing.assert_array_equal(out[:, 2], a * b)
    if device.backend == "cpu":
        np.testing.assert_array_equal(out[:, 3], a / b)
    else:  # GPUs may round division to within 2.5 ulp even without fast math
        np.testing.assert_allclose(out[:, 3], a / b, rtol=3e-7)
    if device.backend == "cpu":
        # No contraction into fma with fast_math=False on the CPU backend.
        np.testing.assert_array_equal(out[:, 4], a * b + a)


def test_lookup_by_attribute_function_and_item(device):
    lib = device.compile(GOOD_SRC)
    k1, k2, k3 = lib.mul, lib.function("mul"), lib["mul"]
    for k in (k1, k2, k3):
        assert isinstance(k, mc.Kernel)
        assert k.name == "mul"
        a = np.arange(8, dtype=np.float32)
        c = np.zeros(8, np.float32)
        k(8, a, a + 1, c)
        np.testing.assert_array_equal(c, a * (a + 1))


def test_function_names_contains_and_iteration(device):
    lib = device.compile(GOOD_SRC)
    names = lib.function_names
    assert names == ["mul", "add_scalar", "twice_plus_one", "iota", "copy", "slow", "inc_u32"]  # source order
    assert "mul" in lib and "iota" in lib
    assert "nope" not in lib
    assert len(lib) == len(names)
    assert list(lib) == names
    assert set(names) <= set(dir(lib))
    assert "mul" in repr(lib)


def test_missing_attribute_is_attribute_error_listing_names(device):
    lib = device.compile(GOOD_SRC)
    with pytest.raises(AttributeError) as info:
        lib.no_such_kernel  # noqa: B018
    msg = str(info.value)
    assert "no_such_kernel" in msg
    for name in ("mul", "iota", "copy"):
        assert name in msg
    assert not hasattr(lib, "another_missing_one")
    check_usable(device)


@pytest.mark.parametrize("how", ["function", "item"])
def test_missing_function_is_argument_error_listing_names(device, how):
    lib = device.compile(GOOD_SRC)
    with pytest.raises(mc.ArgumentError) as info:
        if how == "function":
            lib.function("no_such_kernel")
        else:
            lib["no_such_kernel"]  # noqa: B018
    msg = str(info.value)
    assert "no_such_kernel" in msg
    for name in ("mul", "iota", "copy"):
        assert name in msg
    check_usable(device)


def test_library_without_kernels(device):
    lib = device.compile("float helper(float x) { return x * 2.0f; }\n")
    assert lib.function_names == []
    assert len(lib) == 0
    with pytest.raises(AttributeError):
        lib.helper  # noqa: B018
    with pytest.raises(mc.ArgumentError):
        lib.function("helper")


def test_kernel_reflection(device):
    k = device.compile(GOOD_SRC).add_scalar
    params = k.params
    assert [p["name"] for p in params] == ["a", "s", "out", "i"]
    a, s, out, i = params
    assert a["kind"] == "buffer" and a["const"] is True and a["binding"] == 0 and a["type"] == "float"
    assert s["kind"] == "reference" and s["address_space"] == "constant" and s["binding"] == 1
    assert out["kind"] == "buffer" and out["const"] is False and out["binding"] == 2
    assert i["kind"] == "builtin" and i["builtin"] == "thread_position_in_grid" and i["binding"] is None
    assert a["element_size"] == 4 and a["element_align"] == 4
    assert k.max_total_threads_per_threadgroup > 0
    assert "add_scalar" in repr(k)


def test_max_total_threads_per_threadgroup_attribute(device):
    src = """
[[max_total_threads_per_threadgroup(64)]]
kernel void limited(device uint* out [[buffer(0)]], uint i [[thread_position_in_grid]]) { out[i] = i * 3u; }
"""
    k = device.compile(src).limited
    assert 0 < k.max_total_threads_per_threadgroup <= 64
    out = np.zeros(1000, np.uint32)
    k(1000, out)  # the automatic threadgroup respects the limit
    np.testing.assert_array_equal(out, np.arange(1000, dtype=np.uint32) * 3)
    out[:] = 0
    k(1000, out, threadgroup=64)
    np.testing.assert_array_equal(out, np.arange(1000, dtype=np.uint32) * 3)
    with pytest.raises(mc.ArgumentError, match="limit"):
        k(1000, out, threadgroup=128)
    check_usable(device)


def test_compile_same_source_twice_gives_working_libraries(device):
    lib1 = device.compile(GOOD_SRC)
    lib2 = device.compile(GOOD_SRC)
    for lib in (lib1, lib2):
        out = np.zeros(16, np.uint32)
        lib.iota(16, out)
        np.testing.assert_array_equal(out, np.arange(16))


def test_kernel_method_is_compile(device):
    # metalcompute's spelling.
    fn = device.kernel(MUL_SRC).function("mul")
    a = np.arange(4, dtype=np.float32)
    c = np.zeros(4, np.float32)
    fn(4, a, a, c)
    np.testing.assert_array_equal(c, a * a)
