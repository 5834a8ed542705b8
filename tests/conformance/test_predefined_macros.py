"""The macros Apple's compiler predefines and the preprocessing of MSL headers (issue P2.0
item 3): __METAL_VERSION__ follows the language version, __METAL__ is defined from MSL 3.0
(__METAL_MACOS__ before), __HAVE_BFLOAT__ from MSL 3.1; headers written for host C++ and MSL
alike (`#ifdef __METAL__ … #else #include <cmath> #endif`, as PyTorch's c10/metal writes) take
their MSL branch, and an #include of a host header in an inactive branch is no error (the
include policy applies to the lines the preprocessor keeps); `__has_include` answers from the
MSL headers. Each kernel writes what the macros made it; the values are Apple's."""

from __future__ import annotations

import numpy as np
import pytest

import metalcall as mc
from mcconf import HEADER

MACROS = HEADER + """
#if defined(__METAL__)
#define PM_METAL 1
#else
#define PM_METAL 0
#endif
#if defined(__METAL_MACOS__) || defined(__METAL_IOS__)
#define PM_PLATFORM 1
#else
#define PM_PLATFORM 0
#endif
#if defined(__HAVE_BFLOAT__)
#define PM_BFLOAT 1
#else
#define PM_BFLOAT 0
#endif
kernel void pm_macros(device int* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    out[0] = __METAL_VERSION__;
    out[1] = PM_METAL;
    out[2] = PM_PLATFORM;
    out[3] = PM_BFLOAT;
}
"""


def run_macros(device, **options):
    out = np.full(4, -1, np.int32)
    device.compile(MACROS, **options).pm_macros(1, out)
    return out.tolist()


@pytest.mark.parametrize("version,expected", [
    ("2.4", [240, 0, 1, 0]),
    ("3.0", [300, 1, 0, 0]),
    ("3.1", [310, 1, 0, 1]),
    ("3.2", [320, 1, 0, 1]),
])
def test_macros_follow_the_language_version(device, version, expected):
    assert run_macros(device, language_version=version) == expected


def test_macros_of_the_newest_version(device):
    if device.backend not in ("cpu", "cuda"):
        pytest.skip("the newest version is the Mac's own")
    assert run_macros(device) == [320, 1, 0, 1]


def test_unknown_language_version(device):
    if device.backend not in ("cpu", "cuda"):
        pytest.skip("the Metal backend's message is its own")
    with pytest.raises(mc.CompileError) as info:
        device.compile(MACROS, language_version="9.9")
    assert str(info.value) == ("unknown Metal language version '9.9': the CPU and CUDA backends take 1.0 to 3.2 "
                               "(major.minor, e.g. \"3.1\"), or none for 3.2")


SHARED_HEADER = """#pragma once
#ifdef __METAL__
#include <metal_stdlib>
#define PM_CONSTEXPR constant constexpr
#else
#include <cmath>
#include <array>
#define PM_CONSTEXPR constexpr
#endif
#if 0
#include "host_only.h"
#elif defined(__HAVE_BFLOAT__)
typedef bfloat pm_real16;
#else
#include <stdfloat>
#endif
#if __has_include(<metal_stdlib>) && !__has_include(<metalcall_no_such_header.h>) && __has_include("metal_simdgroup")
#define PM_FOUND 1
#else
#define PM_FOUND 0
#endif
PM_CONSTEXPR float pm_scale = 2.5f;
using namespace metal;
kernel void pm_shared(const device float* x [[buffer(0)]], device float* y [[buffer(1)]], uint i [[thread_position_in_grid]]) {
    y[i] = float(pm_real16(x[i])) * pm_scale + PM_FOUND;
}
"""


def test_header_shared_with_host_code(device, rng):
    x = rng.standard_normal(32).astype(np.float32)
    y = np.zeros(32, np.float32)
    device.compile(SHARED_HEADER).pm_shared(32, x, y)
    x_bf = ((x.view(np.uint32) + 0x7FFF + ((x.view(np.uint32) >> 16) & 1)) >> 16 << 16).view(np.float32)
    np.testing.assert_array_equal(y, x_bf * np.float32(2.5) + 1)


def test_include_in_active_branch_is_refused(device):
    if device.backend not in ("cpu", "cuda"):
        pytest.skip("Metal searches its own include paths")
    src = SHARED_HEADER.replace("#if 0\n", "#if 1\n")
    with pytest.raises(mc.CompileError) as info:
        device.compile(src)
    e = info.value
    line = src.splitlines().index('#include "host_only.h"') + 1
    assert str(e).splitlines()[0] == (
        f'source.metal:{line}:1: error: #include "host_only.h" is not supported: metalcall compiles one source '
        "(the metal_ headers are built in); paste the code in, or pass macros with defines=")
    assert (e.line, e.column, e.source_line) == (line, 1, '#include "host_only.h"')
