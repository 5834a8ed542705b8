"""Audit of SIMD-groups, quad-groups, threadgroups and the kernel input attributes (session 22).

What the MSL specification says, checked against NumPy models of the lanes on every device:
`simd_vote::all()`/`any()` look at the bits of the SIMD-group's lanes, not at which are active
(6.9.2.1: "simd_ballot(expr).all() returns true if all threads were active and evaluated the expr
to true"; the top bits of a SIMD-group narrower than 64 are undefined); `quad_ballot` and
`quad_active_threads_mask` return a `quad_vote` (6.9.3: `vote_t` unsigned, the constructor clears
all but the four bottom bits); `quad_shuffle_and_fill_down/up` with and without `modulo` (the
spec's tables of lanes); kernel input attributes declared `const` vectors or in the other
spellings of MSL's vector types (`vec<uint, 3>`, `simd_uint3`); and reductions, prefix scans and
broadcasts of every integer and floating-point element type, scalar and vector, on partial
SIMD- and quad-groups (threadgroups of 1 to 70 threads).
"""

from __future__ import annotations

import numpy as np
import pytest

from mcconf import KernelSet, assert_equal

# ---------------------------------------------------------------------------
# simd_vote: all() and any() over the SIMD-group's lanes
# ---------------------------------------------------------------------------

KS_VOTE = KernelSet([
    """
kernel void vote_all_any(device uint* out [[buffer(0)]], constant uint& mode [[buffer(1)]],
                         uint gid [[thread_position_in_grid]], ushort lane [[thread_index_in_simdgroup]],
                         ushort width [[threads_per_simdgroup]]) {
    bool p = mode == 0 ? true : mode == 1 ? lane != 5 : mode == 2 ? false : (lane & 1) == 0;
    simd_vote v = simd_ballot(p);
    device uint* o = out + 8 * gid;
    o[0] = v.all();
    o[1] = v.any();
    o[2] = simd_active_threads_mask().all();
    o[3] = uint(static_cast<simd_vote::vote_t>(v));
    o[4] = uint(uint64_t(v) >> 32);
    o[5] = simd_vote(~simd_vote::vote_t(0)).all();
    o[6] = simd_vote(simd_vote::vote_t(1) << 63).any();  // lane 63: a lane only 64 wide
    uint in_branch = 2;
    if (lane < width / 2) in_branch = simd_active_threads_mask().all();  // half the lanes active
    o[7] = in_branch;
}
""",
    """
kernel void quad_votes(device uint* out [[buffer(0)]], constant uint& mode [[buffer(1)]],
                       uint gid [[thread_position_in_grid]], ushort qlane [[thread_index_in_quadgroup]]) {
    bool p = mode == 0 ? true : mode == 1 ? qlane != 2 : mode == 2 ? false : qlane == 3;
    quad_vote v = quad_ballot(p);
    quad_vote m = quad_active_threads_mask();
    device uint* o = out + 6 * gid;
    o[0] = static_cast<quad_vote::vote_t>(v);
    o[1] = v.all();
    o[2] = v.any();
    o[3] = static_cast<quad_vote::vote_t>(m) + 16 * m.all();
    o[4] = static_cast<quad_vote::vote_t>(quad_vote(0xF3u));  // the constructor keeps the four bottom bits
    o[5] = quad_vote(0xF0u).any() + 2 * quad_vote(0x1Fu).all();
}
""",
])


@pytest.mark.parametrize("mode", [0, 1, 2, 3], ids=["all-true", "all-but-lane-5", "none", "even-lanes"])
def test_simd_vote_all_and_any_look_at_every_lane(device, mode):
    """simd_ballot(p).all() is true only when every lane of the SIMD-group voted true (it was
    false always: it compared all 64 bits with ones on 32-wide groups); any() and the conversions
    give the ballot's bits; simd_active_threads_mask().all() is false where half the lanes run."""
    kernel = KS_VOTE.get(device, "vote_all_any")
    tg, n = 64, 128
    out = np.zeros((n, 8), np.uint32)
    kernel(n, out, np.uint32(mode), threadgroup=tg)
    width = kernel.thread_execution_width or 32
    lane = np.arange(n) % width
    pred = [np.ones(n, bool), lane != 5, np.zeros(n, bool), lane % 2 == 0][mode]
    expect = np.zeros((n, 8), np.uint64)
    for s in range(0, n, width):
        bits = sum(1 << int(i) for i in range(width) if pred[s + i])
        expect[s:s + width, 0] = bits == (1 << width) - 1
        expect[s:s + width, 1] = bits != 0
        expect[s:s + width, 3] = bits & 0xFFFFFFFF
        expect[s:s + width, 4] = bits >> 32
    expect[:, 2] = 1
    expect[:, 5] = 1
    expect[:, 6] = width == 64
    expect[:, 7] = np.where(lane < width // 2, 0, 2)
    assert_equal(out, expect.astype(np.uint32))


@pytest.mark.parametrize("mode", [0, 1, 2, 3], ids=["all-true", "all-but-lane-2", "none", "lane-3"])
def test_quad_ballot_gives_a_quad_vote(device, mode):
    """quad_ballot and quad_active_threads_mask return MSL's quad_vote (a CompileError before:
    'unknown type name quad_vote'); its bits are the quad's lanes, all() needs the four, and a
    partial quad (the last of a 7-thread group) has only its threads' bits."""
    kernel = KS_VOTE.get(device, "quad_votes")
    tg, n = 7, 21
    out = np.zeros((n, 6), np.uint32)
    kernel(n, out, np.uint32(mode), threadgroup=tg)
    index = np.arange(n) % tg
    qlane = index % 4
    pred = [np.ones(n, bool), qlane != 2, np.zeros(n, bool), qlane == 3][mode]
    expect = np.zeros((n, 6), np.uint32)
    for g in range(0, n, tg):
        for q in range(0, tg, 4):
            lanes = range(g + q, min(g + q + 4, g + tg))
            bits = sum(1 << (i - g - q) for i in lanes if pred[i])
            mask = sum(1 << (i - g - q) for i in lanes)
            for i in lanes:
                expect[i, :4] = [bits, bits == 15, bits != 0, mask + 16 * (mask == 15)]
    expect[:, 4] = 3
    expect[:, 5] = 0 + 2 * 1
    assert_equal(out, expect)


# ---------------------------------------------------------------------------
# quad_shuffle_and_fill_down / _up
# ---------------------------------------------------------------------------

FILL_TYPES = [("int", np.int32, 1), ("float", np.float32, 1), ("half2", np.float16, 2), ("uint4", np.uint32, 4)]

KS_QUAD_FILL = KernelSet([
    f"""
kernel void quad_fill_{t}(const device {t}* x [[buffer(0)]], const device {t}* f [[buffer(1)]],
                          device {t}* out [[buffer(2)]], uint i [[thread_position_in_grid]]) {{
    device {t}* o = out + 10 * i;
    o[0] = quad_shuffle_and_fill_down(x[i], f[i], ushort(1));
    o[1] = quad_shuffle_and_fill_down(x[i], f[i], ushort(2));
    o[2] = quad_shuffle_and_fill_down(x[i], f[i], ushort(3));
    o[3] = quad_shuffle_and_fill_down(x[i], f[i], ushort(1), ushort(2));
    o[4] = quad_shuffle_and_fill_down(x[i], f[i], ushort(2), ushort(4));
    o[5] = quad_shuffle_and_fill_up(x[i], f[i], ushort(1));
    o[6] = quad_shuffle_and_fill_up(x[i], f[i], ushort(2));
    o[7] = quad_shuffle_and_fill_up(x[i], f[i], ushort(3));
    o[8] = quad_shuffle_and_fill_up(x[i], f[i], ushort(1), ushort(2));
    o[9] = quad_shuffle_and_fill_up(x[i], f[i], ushort(3), ushort(4));
}}
""" for t, _, _ in FILL_TYPES
])

FILL_CASES = [("down", 1, 4), ("down", 2, 4), ("down", 3, 4), ("down", 1, 2), ("down", 2, 4),
              ("up", 1, 4), ("up", 2, 4), ("up", 3, 4), ("up", 1, 2), ("up", 3, 4)]


def fill_model(x, f, direction, delta, modulo, width):
    """MSL 6.9.2.1 / 6.9.3's tables: groups of `modulo` lanes within each `width`-wide group; a
    lane shifted out of its group takes filling_data's lane at the other end of the same group."""
    out = np.empty_like(x)
    for i in range(len(x)):
        lane = i % width
        base = i - lane % modulo
        k = lane % modulo
        if direction == "down":
            j = k + delta
            out[i] = x[base + j] if j < modulo else f[base + j - modulo]
        else:
            j = k - delta
            out[i] = x[base + j] if j >= 0 else f[base + j + modulo]
    return out


@pytest.mark.parametrize("name,dtype,n", FILL_TYPES, ids=[t[0] for t in FILL_TYPES])
def test_quad_shuffle_and_fill(device, name, dtype, n):
    """quad_shuffle_and_fill_down/up (MSL 2.4), with and without modulo, against the
    specification's tables (a CompileError before: not in the standard library)."""
    lanes = 4 if n == 3 else n
    count = 64
    x = (np.arange(count * lanes) + 1).astype(dtype).reshape(count, lanes)
    f = (1000 + np.arange(count * lanes)).astype(dtype).reshape(count, lanes)
    out = np.zeros((count, 10, lanes), dtype)
    KS_QUAD_FILL.get(device, f"quad_fill_{name}")(count, x.reshape(-1), f.reshape(-1), out.reshape(-1), threadgroup=32)
    for c, (direction, delta, modulo) in enumerate(FILL_CASES):
        assert_equal(out[:, c], fill_model(x, f, direction, delta, modulo, 4), err_msg=f"{direction} {delta} {modulo}")


# ---------------------------------------------------------------------------
# Kernel input attributes declared const, or as vec<T, N> / simd_uintN
# ---------------------------------------------------------------------------

SPELLINGS = [
    ("const_uint2", "const uint2"), ("const_uint3", "const uint3"), ("uint3_const", "uint3 const"),
    ("const_ushort3", "const ushort3"), ("const_metal_uint2", "const metal::uint2"), ("vec_uint3", "vec<uint, 3>"),
    ("metal_vec_ushort2", "metal::vec<ushort, 2>"), ("simd_uint3", "simd_uint3"), ("vector_uint2", "vector_uint2"),
]


def _spelling_kernel(name: str, typ: str) -> str:
    width = 2 if typ.replace(">", "").rstrip().endswith("2") else 3
    stores = "\n".join(f"    o[{3 * b + d}] = uint({v}.{c});"
                       for b, v in enumerate(["pos", "lid", "tpt"]) for d, c in enumerate("xyz"[:width]))
    row = "uint(pos.y)" if width == 2 else "(uint(pos.z) * uint(tpg.y) + uint(pos.y))"
    return f"""
kernel void attr_{name}(device uint* out [[buffer(0)]], {typ} pos [[thread_position_in_grid]],
                        {typ} lid [[thread_position_in_threadgroup]], {typ} tpt [[threads_per_threadgroup]],
                        {typ} tpg [[threads_per_grid]]) {{
    device uint* o = out + 9 * ({row} * uint(tpg.x) + uint(pos.x));
{stores}
}}
"""


KS_ATTR = KernelSet([_spelling_kernel(n, t) for n, t in SPELLINGS])


@pytest.mark.parametrize("name,typ", SPELLINGS, ids=[s[0] for s in SPELLINGS])
def test_builtin_vectors_declared_const_or_in_other_spellings(device, name, typ):
    """`const uint3 gid [[thread_position_in_grid]]` was a CompileError ('expected expression':
    the entry point wrote `const uint3(...)`), and vec<uint, 3>, simd_uint3 and vector_uint2 were
    refused as not uint vectors; each gives the positions and the partial groups' sizes."""
    width = 2 if typ.replace(">", "").rstrip().endswith("2") else 3
    grid, tg = ((11, 6), (4, 4)) if width == 2 else ((7, 5, 3), (4, 2, 2))
    n = int(np.prod(grid))
    out = np.zeros((n, 9), np.uint32)
    KS_ATTR.get(device, f"attr_{name}")(grid, out, threadgroup=tg)
    g = np.array(list(grid) + [1] * (3 - width))
    t = np.array(list(tg) + [1] * (3 - width))
    z, y, x = np.meshgrid(np.arange(g[2]), np.arange(g[1]), np.arange(g[0]), indexing="ij")
    pos = np.stack([x, y, z], -1).reshape(-1, 3)
    lid = pos % t
    tpt = np.minimum(t, g - pos // t * t)
    expect = np.zeros((n, 9), np.uint32)
    for b, v in enumerate([pos, lid, tpt]):
        expect[:, 3 * b:3 * b + width] = v[:, :width]
    assert_equal(out, expect)


# ---------------------------------------------------------------------------
# Reductions, scans and broadcasts of every element type on partial groups
# ---------------------------------------------------------------------------

ELEMENT_TYPES = {"char": np.int8, "uchar": np.uint8, "short": np.int16, "ushort": np.uint16, "int": np.int32,
                 "uint": np.uint32, "half": np.float16, "float": np.float32}
INTEGER = {"char", "uchar", "short", "ushort", "int", "uint"}
GROUP_OPS = ["simd_sum", "simd_product", "simd_min", "simd_max", "simd_prefix_inclusive_sum",
             "simd_prefix_exclusive_sum", "simd_prefix_inclusive_product", "simd_prefix_exclusive_product",
             "simd_broadcast_first", "quad_sum", "quad_min", "quad_prefix_exclusive_sum", "quad_broadcast_first"]
BIT_OPS = ["simd_and", "simd_or", "simd_xor", "quad_and", "quad_or", "quad_xor"]


def _ops(t):
    return GROUP_OPS + (BIT_OPS if t in INTEGER else [])


def _reduction_kernel(t: str, n: int) -> str:
    vt = t if n == 1 else f"{t}{n}"
    body = "\n".join(f"    o[{i}] = {op}(v);" for i, op in enumerate(_ops(t)))
    return f"""
kernel void red_{vt}(const device {vt}* x [[buffer(0)]], device {vt}* out [[buffer(1)]],
                     uint i [[thread_position_in_grid]]) {{
    {vt} v = x[i];
    device {vt}* o = out + {len(_ops(t))} * i;
{body}
}}
"""


KS_RED = KernelSet([_reduction_kernel(t, n) for t in ELEMENT_TYPES for n in (1, 2, 3, 4)])


def group_model(op, x, tg, width, dtype):
    """op over the lanes of each (partial) SIMD- or quad-group of each (partial) threadgroup."""
    res = np.empty_like(x)
    w = 4 if op.startswith("quad") else width
    name = op.split("_", 1)[1]
    with np.errstate(over="ignore"):
        for g0 in range(0, len(x), tg):
            g1 = min(g0 + tg, len(x))
            for s0 in range(g0, g1, w):
                seg = x[s0:min(s0 + w, g1)]
                for k in range(len(seg)):
                    part = {"prefix_inclusive_sum": seg[:k + 1], "prefix_exclusive_sum": seg[:k],
                            "prefix_inclusive_product": seg[:k + 1], "prefix_exclusive_product": seg[:k]}.get(name, seg)
                    if "sum" in name:
                        r = part.sum(axis=0, dtype=dtype)
                    elif "product" in name:
                        r = np.prod(part, axis=0, dtype=dtype)
                    elif name == "min":
                        r = seg.min(axis=0)
                    elif name == "max":
                        r = seg.max(axis=0)
                    elif name == "broadcast_first":
                        r = seg[0]
                    else:
                        r = {"and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}[name].reduce(seg, axis=0)
                    res[s0 + k] = r
    return res


@pytest.mark.parametrize("n", [1, 2, 3, 4])
@pytest.mark.parametrize("t", list(ELEMENT_TYPES))
def test_reductions_of_every_element_type_on_partial_groups(device, t, n):
    """simd_/quad_ sums, products, min/max, bitwise reductions, prefix scans and broadcast_first
    of char ... float and their 2-, 3- and 4-vectors, in threadgroups whose last SIMD- and
    quad-groups are partial (integers wrap; floating values are -1, 0, 1, so any order is exact)."""
    dtype = ELEMENT_TYPES[t]
    vt = t if n == 1 else f"{t}{n}"
    kernel = KS_RED.get(device, f"red_{vt}")
    width = kernel.thread_execution_width or 32
    ops = _ops(t)
    lanes = 4 if n == 3 else n
    rng = np.random.default_rng(7)
    for tg, count in ((37, 100), (64, 64), (5, 23), (70, 70), (1, 3)):
        low = -1 if t not in INTEGER or np.issubdtype(dtype, np.signedinteger) else 0
        high = 2 if t not in INTEGER else 4
        x = rng.integers(low, high, size=(count, n)).astype(dtype)
        xa = np.zeros((count, lanes), dtype)
        xa[:, :n] = x
        out = np.zeros((count, len(ops), lanes), dtype)
        kernel(count, xa.reshape(-1), out.reshape(-1), threadgroup=tg)
        for k, op in enumerate(ops):
            assert_equal(out[:, k, :n], group_model(op, x, tg, width, dtype), err_msg=f"{op}, threadgroup {tg}")


# ---------------------------------------------------------------------------
# Overloads of the library's SIMD-group functions for a source's own types (MLX's utils.h)
# ---------------------------------------------------------------------------

KS_OVERLOAD = KernelSet([
    """
kernel void overloaded_simd_functions(const device float* x [[buffer(0)]], device float* out [[buffer(1)]],
                                      uint i [[thread_position_in_grid]]) {
    cplx c = {x[i], -x[i]};
    cplx d = simd_shuffle_down(c, 1);
    cplx s = simd_sum(c);
    out[4 * i + 0] = d.re; out[4 * i + 1] = d.im; out[4 * i + 2] = s.re; out[4 * i + 3] = s.im;
}
""",
], preamble="""
struct cplx { float re; float im; };
// One overload each, written as MLX writes complex64_t's: the library's function on the parts.
inline cplx simd_shuffle_down(cplx data, uint16_t delta) {
    return cplx{simd_shuffle_down(data.re, delta), simd_shuffle_down(data.im, delta)};
}
inline cplx simd_sum(cplx data) { return cplx{simd_sum(data.re), 2.0f * simd_sum(data.im)}; }
""")


def test_source_overloads_of_simd_functions_calling_the_library(device):
    """A source's only overload of simd_shuffle_down / simd_sum that calls the library's on its
    parts was refused as recursive ('function simd_shuffle_down is recursive'): the recursion rule
    let such calls through for the names the prelude declares, but not for those its macros declare."""
    kernel = KS_OVERLOAD.get(device, "overloaded_simd_functions")
    width = kernel.thread_execution_width or 32
    n = 64
    x = (np.arange(n) + 1).astype(np.float32)
    out = np.zeros((n, 4), np.float32)
    kernel(n, x, out, threadgroup=64)
    lane = np.arange(n) % width
    down = np.where(lane + 1 < width, x[np.minimum(np.arange(n) + 1, n - 1)], x)
    sums = np.repeat(x.reshape(-1, width).sum(axis=1), width)
    assert_equal(out, np.stack([down, -down, sums, -2 * sums], -1).astype(np.float32))


KS_ATTR_BARRIER = KernelSet([
    """
kernel void attr_const_in_barrier_kernel(const device float* in [[buffer(0)]], device float* out [[buffer(1)]],
                                         const uint3 gid [[thread_position_in_grid]],
                                         vec<uint, 3> lid [[thread_position_in_threadgroup]],
                                         const ushort3 tpt [[threads_per_threadgroup]]) {
    threadgroup float tile[64];
    tile[lid.x] = in[gid.x];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    out[gid.x] = tile[tpt.x - 1 - lid.x];
}
""",
])


def test_const_vector_builtins_in_a_barrier_kernel(device):
    """The same spellings in a kernel with a barrier (the CPU runs it as regions between barriers,
    which declare the builtins again in each region): each group's block reversed, the last partial."""
    n = 100
    x = np.arange(n, dtype=np.float32)
    out = np.zeros_like(x)
    KS_ATTR_BARRIER.get(device, "attr_const_in_barrier_kernel")(n, x, out, threadgroup=64)
    assert_equal(out, np.concatenate([x[:64][::-1], x[64:][::-1]]))


# ---------------------------------------------------------------------------
# Threadgroup arrays passed to helper functions by reference
# ---------------------------------------------------------------------------

TG_HELPERS = {
    "ref_1d": ("void tg_put(threadgroup float (&t)[64], uint i, float v) { t[i] = v; }",
               "threadgroup float tile[64];", "tile[63 - lid]"),
    "template_ref_1d": ("template <typename T, int N> void tg_put(threadgroup T (&t)[N], uint i, T v) { t[i % N] = v; }",
                        "threadgroup float tile[64];", "tile[63 - lid]"),
    "ref_2d": ("void tg_put(threadgroup float (&t)[8][8], uint i, float v) { t[i / 8][i % 8] = v; }",
               "threadgroup float tile[8][8];", "tile[7 - lid / 8][7 - lid % 8]"),
    "const_ref_read": ("float tg_get(threadgroup const float (&t)[64], uint i) { return t[i]; }\n"
                       "void tg_put(threadgroup float (&t)[64], uint i, float v) { t[i] = v; }",
                       "threadgroup float tile[64];", "tg_get(tile, 63 - lid)"),
    "row_pointer_2d": ("void tg_put(threadgroup float (*t)[8], uint i, float v) { t[i / 8][i % 8] = v; }",
                       "threadgroup float tile[8][8];", "tile[7 - lid / 8][7 - lid % 8]"),
    "template_ref_2d": ("template <int R, int C> void tg_put(threadgroup float (&t)[R][C], uint i, float v) "
                        "{ t[i / C][i % C] = v; }", "threadgroup float tile[8][8];", "tile[7 - lid / 8][7 - lid % 8]"),
}


def _tg_helper_source(name: str) -> str:
    helper, decl, read = TG_HELPERS[name]
    return f"""
namespace tg_{name} {{
{helper}
}}
kernel void tg_helper_{name}(const device float* x [[buffer(0)]], device float* out [[buffer(1)]],
                             uint gid [[thread_position_in_grid]], uint lid [[thread_index_in_threadgroup]]) {{
    using namespace tg_{name};
    {decl}
    tg_put(tile, lid, x[gid]);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    out[gid] = {read};
}}
"""


KS_TG_HELPERS = KernelSet([_tg_helper_source(n) for n in TG_HELPERS])


def _run_tg_helper(device, name):
    n = 128
    x = np.arange(n, dtype=np.float32)
    out = np.zeros_like(x)
    KS_TG_HELPERS.get(device, f"tg_helper_{name}")(n, x, out, threadgroup=64)
    assert_equal(out, np.concatenate([x[:64][::-1], x[64:][::-1]]))


@pytest.mark.parametrize("name", list(TG_HELPERS))
def test_threadgroup_arrays_passed_to_helpers(device, name):
    """`threadgroup float (&t)[64]` / `[8][8]` / `template <class T, int N> … (&t)[N]` parameters:
    the checked CPU device refused the calls ('no matching function': the kernel's threadgroup
    array is a checked array there, and only `thread` array references took one). The pointer-to-
    array parameter (`row_pointer_2d`) and the deduced 2-D reference (`template_ref_2d`) did not
    compile in checked mode until 2026-12-05 (a strict xfail here; their out-of-bounds cases are
    tests/reliability/test_checked_gaps2.py's)."""
    _run_tg_helper(device, name)
