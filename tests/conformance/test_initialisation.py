"""Value-initialisation of every prelude type gives zero, as on Apple GPUs: `T()`, `T{}`,
`T x{}`, `T x = {}`, the elements an aggregate initializer leaves out (`T x[4] = {one}`,
`metal::array<T, 3> a = {{one}}`) and the members of an aggregate initialised with too few
values (`Agg g = {7}`, `Agg g{}`, `Agg()`), for vectors, packed vectors, matrices,
metal::array, half, bfloat, uniform, atomics and SIMD-group matrices. (Default-initialisation,
`T x;`, stays indeterminate, as in C++.) Before each check a call fills a large private
array with a pattern, so that a value left uninitialised reads that pattern from the stack
instead of a lucky zero. Issue P2.0, item 2."""

from __future__ import annotations

import numpy as np
import pytest

from mcconf import KernelSet, assert_equal

THREADS = 4  # each thread checks its own objects


def vector(n):
    return lambda x: [f"{x}[{c}]" for c in range(n)]


def matrix(cols, rows):
    return lambda x: [f"{x}[{c}][{r}]" for c in range(cols) for r in range(rows)]


def scalar(x):
    return [x]


def atomic(x):
    return [f"atomic_load_explicit(&{x}, memory_order_relaxed)"]


# (MSL type, its components as expressions of a name, a value other than zero, or None
# where the type has none to give: atomics take only value-initialisation)
TYPES = [
    ("half", scalar, "half(1.5)"),
    ("bfloat", scalar, "bfloat(1.5)"),
    ("float2", vector(2), "float2(1.0f)"),
    ("float3", vector(3), "float3(1.0f)"),
    ("float4", vector(4), "float4(1.0f)"),
    ("half4", vector(4), "half4(1.0h)"),
    ("bfloat4", vector(4), "bfloat4(1.0f)"),
    ("int3", vector(3), "int3(1)"),
    ("uint2", vector(2), "uint2(1u)"),
    ("short4", vector(4), "short4(1)"),
    ("uchar4", vector(4), "uchar4(1)"),
    ("bool2", vector(2), "bool2(true)"),
    ("packed_float3", vector(3), "packed_float3(1.0f)"),
    ("packed_half3", vector(3), "packed_half3(1.0h)"),
    ("packed_int4", vector(4), "packed_int4(1)"),
    ("packed_float2", vector(2), "packed_float2(1.0f)"),
    ("packed_uchar4", vector(4), "packed_uchar4(1)"),
    ("packed_bfloat4", vector(4), "packed_bfloat4(1.0f)"),
    ("char3", vector(3), "char3(1)"),
    ("ushort2", vector(2), "ushort2(1)"),
    ("long2", vector(2), "long2(1)"),
    ("ulong3", vector(3), "ulong3(1)"),
    ("uniform<float>", scalar, "uniform<float>(1.0f)"),
    ("float2x2", matrix(2, 2), "float2x2(1.0f)"),
    ("float3x3", matrix(3, 3), "float3x3(1.0f)"),
    ("float4x4", matrix(4, 4), "float4x4(1.0f)"),
    ("float2x4", matrix(2, 4), "float2x4(1.0f)"),
    ("half3x3", matrix(3, 3), "half3x3(1.0h)"),
    ("half4x2", matrix(4, 2), "half4x2(1.0h)"),
    ("metal::array<float, 5>", vector(5), "metal::array<float, 5>{{1.0f, 2.0f, 3.0f, 4.0f, 5.0f}}"),
    ("metal::array<float4, 3>", lambda x: [f"{x}[{e}][{c}]" for e in range(3) for c in range(4)],
     "metal::array<float4, 3>{{float4(1.0f), float4(2.0f), float4(3.0f)}}"),
    ("metal::array<half2, 4>", lambda x: [f"{x}[{e}][{c}]" for e in range(4) for c in range(2)],
     "metal::array<half2, 4>{{half2(1.0h), half2(1.0h), half2(1.0h), half2(1.0h)}}"),
    ("atomic_int", atomic, None),
    ("atomic_uint", atomic, None),
    ("atomic_float", atomic, None),
    ("atomic_bool", atomic, None),
]


def ident(msl_type: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in msl_type).strip("_")


# Fills 8 KiB of this thread's stack with a pattern the objects below must not show.
PREAMBLE = """
__attribute__((noinline)) void init_dirty_stack(device float* sink, uint salt) {
    volatile float junk[2048];
    for (uint i = 0; i < 2048; ++i) junk[i] = 1000.0f + float(i + salt);
    sink[salt] = junk[(salt * 7u) % 2048u];
}
"""


def snippet(msl_type, components, one):
    """A kernel that value-initialises `msl_type` in every way and writes each component of
    each object, as float, to its own stretch of `out`; returns (source, values per thread)."""
    n = ident(msl_type)
    rest = f"{{{one}}}" if one else "{}"
    lines = [
        f"{msl_type} v1 = {msl_type}();",
        f"{msl_type} v2 = {msl_type}{{}};",
        f"{msl_type} v3{{}};",
        f"{msl_type} v4 = {{}};",
        f"{msl_type} rest[4] = {rest};",
        f"InitAgg_{n} g1 = {{7}};",
        f"InitAgg_{n} g2{{}};",
        f"InitAgg_{n} g3 = InitAgg_{n}();",
    ]
    objects = ["v1", "v2", "v3", "v4", "rest[1]", "rest[2]", "rest[3]", "g1.m", "g2.m", "g3.m"]
    if one:  # metal::array of the type: all value-initialised, or all but the first
        lines += [f"metal::array<{msl_type}, 3> a1 = {{}};", f"metal::array<{msl_type}, 3> a2 = {{{{{one}}}}};"]
        objects += ["a1[0]", "a1[1]", "a1[2]", "a2[1]", "a2[2]"]
    writes = [f"o[k++] = float({c});" for obj in objects for c in components(obj)]
    body = "\n    ".join(lines + ["uint k = 0;"] + writes)
    src = f"""
struct InitAgg_{n} {{ int tag; {msl_type} m; }};
__attribute__((noinline)) void init_check_{n}(device float* o) {{
    {body}
}}
kernel void init_{n}(device float* out [[buffer(0)]], device float* sink [[buffer(1)]],
                     uint gid [[thread_position_in_grid]]) {{
    init_dirty_stack(sink, gid);
    init_check_{n}(out + gid * {len(writes)});
}}
"""
    return src, len(writes)


SNIPPETS = {t: snippet(t, c, one) for t, c, one in TYPES}
KS = KernelSet([s for s, _ in SNIPPETS.values()], preamble=PREAMBLE)


@pytest.mark.parametrize("msl_type", [t for t, _, _ in TYPES])
def test_value_initialised_is_zero(device, msl_type):
    if msl_type.startswith("atomic") and device.backend == "metal":
        pytest.skip("Metal: atomics live only in device and threadgroup memory")
    count = SNIPPETS[msl_type][1]
    out = np.full(THREADS * count, np.nan, np.float32)
    sink = np.zeros(THREADS, np.float32)
    KS.get(device, f"init_{ident(msl_type)}")(THREADS, out, sink, threadgroup=THREADS)
    assert_equal(out, np.zeros_like(out))


# SIMD-group matrices: every lane makes the same objects; simdgroup_store writes them.
SGM_TYPES = [("float", "float", np.float32), ("half", "half", np.float16), ("bfloat", "bfloat", np.uint16)]


def sgm_snippet(element: str) -> str:
    m = f"simdgroup_matrix<{element}, 8, 8>"
    objects = ["v1", "v2", "v3", "rest[1]", "rest[2]", "rest[3]", "g1.m", "g2.m", "a1[0]", "a1[1]"]
    stores = "\n    ".join(f"simdgroup_store({x}, o + {64 * i}, 8);" for i, x in enumerate(objects))
    return f"""
struct InitSgmAgg_{element} {{ int tag; {m} m; }};
__attribute__((noinline)) void init_check_sgm_{element}(device {element}* o) {{
    {m} v1 = {m}();
    {m} v2 = {m}{{}};
    {m} v3{{}};
    {m} rest[4] = {{ {m}(0) }};
    InitSgmAgg_{element} g1 = {{7}};
    InitSgmAgg_{element} g2{{}};
    metal::array<{m}, 2> a1 = {{}};
    {stores}
}}
kernel void init_sgm_{element}(device {element}* out [[buffer(0)]], device float* sink [[buffer(1)]],
                               uint lane [[thread_index_in_simdgroup]]) {{
    init_dirty_stack(sink, lane);
    init_check_sgm_{element}(out);
}}
"""


SGM = KernelSet([sgm_snippet(e) for e, _, _ in SGM_TYPES], preamble=PREAMBLE)


@pytest.mark.parametrize("element, dtype", [(e, d) for e, _, d in SGM_TYPES], ids=[e for e, _, _ in SGM_TYPES])
def test_value_initialised_simdgroup_matrix_is_zero(device, element, dtype):
    out = np.full(10 * 64, 7, dtype)  # bfloat: its bits, handed over as bytes
    sink = np.zeros(32, np.float32)
    SGM.get(device, f"init_sgm_{element}")(32, out.view(np.uint8) if dtype == np.uint16 else out, sink, threadgroup=32)
    assert_equal(out, np.zeros_like(out))
