"""Grids in threads, explicit threadgroups, and the thread-position builtins they give.

Every builtin is checked exactly against a NumPy model of `dispatchThreads`
(DESIGN.md §2: grid units are threads; the last threadgroup may be partial, where
threads_per_threadgroup is the partial size and dispatch_threads_per_threadgroup
the full size).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import metalcall as mc
from mctest import GOOD_SRC, check_usable

# Builtins that may be a scalar or a 2/3-vector, and those that are scalars only.
VECTOR_BUILTINS = [
    "thread_position_in_grid",
    "thread_position_in_threadgroup",
    "threadgroup_position_in_grid",
    "threads_per_threadgroup",
    "dispatch_threads_per_threadgroup",
    "threadgroups_per_grid",
    "threads_per_grid",
]
SCALAR_BUILTINS = [
    "thread_index_in_threadgroup",
    "thread_index_in_simdgroup",
    "simdgroup_index_in_threadgroup",
    "threads_per_simdgroup",
    "simdgroups_per_threadgroup",
]
VECTOR_TYPES = ["uint", "ushort", "uint2", "ushort2", "uint3", "ushort3"]
SCALAR_TYPES = ["uint", "ushort"]
WIDTH = {"uint": 1, "ushort": 1, "uint2": 2, "ushort2": 2, "uint3": 3, "ushort3": 3}


def _kernel(builtin: str, typ: str) -> str:
    width = WIDTH[typ]
    comps = ["v.x", "v.y", "v.z"][:width] if width > 1 else ["v"]
    comps = [f"uint({c})" for c in comps] + ["0xFFFFFFFFu"] * (3 - len(comps))
    if builtin == "thread_position_in_grid":
        # The position is the builtin itself; dims holds the grid so lin is unique.
        pos = "uint3(" + ", ".join(
            (f"uint(v.{c})" if width > 1 and i < width else ("uint(v)" if i == 0 and width == 1 else "0u"))
            for i, c in enumerate("xyz")
        ) + ")"
        params = f"{typ} v [[{builtin}]]"
    elif builtin in VECTOR_BUILTINS:
        # Metal takes a kernel's position and size inputs all scalars or all vectors of one width:
        # the position that addresses the output is as wide as v.
        pos = {1: "uint3(p, 0u, 0u)", 2: "uint3(p, 0u)", 3: "p"}[width]
        params = f"{typ} v [[{builtin}]], {['uint', 'uint2', 'uint3'][width - 1]} p [[thread_position_in_grid]]"
    else:
        pos = "p"
        params = f"{typ} v [[{builtin}]], uint3 p [[thread_position_in_grid]]"
    return (
        f"kernel void k_{builtin}_{typ}(device uint* out [[buffer(0)]], constant uint* dims [[buffer(1)]], {params}) {{\n"
        f"    uint3 q = {pos};\n"
        f"    uint lin = (q.z * dims[1] + q.y) * dims[0] + q.x;\n"
        f"    out[3 * lin + 0] = {comps[0]};\n"
        f"    out[3 * lin + 1] = {comps[1]};\n"
        f"    out[3 * lin + 2] = {comps[2]};\n"
        f"}}\n"
    )


BUILTINS_SRC = "#include <metal_stdlib>\nusing namespace metal;\n" + "".join(
    [_kernel(b, t) for b in VECTOR_BUILTINS for t in VECTOR_TYPES] + [_kernel(b, t) for b in SCALAR_BUILTINS for t in SCALAR_TYPES]
)

# All the builtins of one thread in one kernel, 3D: used with the automatic threadgroup.
ALL_SRC = """
#include <metal_stdlib>
using namespace metal;
kernel void all_builtins(device uint* out [[buffer(0)]],
                         uint3 pos [[thread_position_in_grid]],
                         uint3 lpos [[thread_position_in_threadgroup]],
                         uint3 gpos [[threadgroup_position_in_grid]],
                         uint3 tpt [[threads_per_threadgroup]],
                         uint3 dtpt [[dispatch_threads_per_threadgroup]],
                         uint3 tgpg [[threadgroups_per_grid]],
                         uint3 tpg [[threads_per_grid]],
                         uint tidx [[thread_index_in_threadgroup]]) {
    uint lin = (pos.z * tpg.y + pos.y) * tpg.x + pos.x;
    device uint* o = out + 22 * lin;
    o[0] = pos.x; o[1] = pos.y; o[2] = pos.z;
    o[3] = lpos.x; o[4] = lpos.y; o[5] = lpos.z;
    o[6] = gpos.x; o[7] = gpos.y; o[8] = gpos.z;
    o[9] = tpt.x; o[10] = tpt.y; o[11] = tpt.z;
    o[12] = dtpt.x; o[13] = dtpt.y; o[14] = dtpt.z;
    o[15] = tgpg.x; o[16] = tgpg.y; o[17] = tgpg.z;
    o[18] = tpg.x; o[19] = tpg.y; o[20] = tpg.z;
    o[21] = tidx;
}
"""

USHORT_POS_SRC = """
kernel void short_pos(device uint* out [[buffer(0)]], ushort i [[thread_position_in_grid]]) { out[i] = i; }
"""


def model(grid, tg, simd_width):
    """Every builtin of every thread of dispatchThreads(grid, tg), as (gz, gy, gx, 3) arrays."""
    g = np.array(list(grid) + [1] * (3 - len(grid)), dtype=np.int64)
    t = np.array(list(tg) + [1] * (3 - len(tg)), dtype=np.int64)
    z, y, x = np.meshgrid(np.arange(g[2]), np.arange(g[1]), np.arange(g[0]), indexing="ij")
    pos = np.stack([x, y, z], axis=-1)
    gpos = pos // t
    lpos = pos % t
    actual = np.minimum(t, g - gpos * t)  # the partial last group in each dimension
    ones = np.ones_like(pos)
    tidx = (lpos[..., 2] * actual[..., 1] + lpos[..., 1]) * actual[..., 0] + lpos[..., 0]
    tcount = actual.prod(axis=-1)
    scal = lambda v: np.stack([v, np.zeros_like(v), np.zeros_like(v)], axis=-1)  # noqa: E731
    return {
        "thread_position_in_grid": pos,
        "thread_position_in_threadgroup": lpos,
        "threadgroup_position_in_grid": gpos,
        "threads_per_threadgroup": actual,
        "dispatch_threads_per_threadgroup": ones * t,
        "threadgroups_per_grid": ones * (-(-g // t)),
        "threads_per_grid": ones * g,
        "thread_index_in_threadgroup": scal(tidx),
        "thread_index_in_simdgroup": scal(tidx % simd_width),
        "simdgroup_index_in_threadgroup": scal(tidx // simd_width),
        "threads_per_simdgroup": scal(np.full_like(tidx, simd_width)),
        "simdgroups_per_threadgroup": scal(-(-tcount // simd_width)),
    }


def run_builtin(dev, builtin, typ, grid, tg):
    g = list(grid) + [1] * (3 - len(grid))
    n = g[0] * g[1] * g[2]
    out = np.full(3 * n, 0xDEADBEEF, np.uint32)
    dims = np.array(g, np.uint32)
    k = dev.compile(BUILTINS_SRC).function(f"k_{builtin}_{typ}")
    k(tuple(grid), out, dims, threadgroup=tuple(tg))
    return out.reshape(g[2], g[1], g[0], 3)


def width_of(dev, builtin, typ):
    """The SIMD-group width the builtin's kernel runs with: its pipeline's, not always the device's."""
    return dev.compile(BUILTINS_SRC).function(f"k_{builtin}_{typ}").thread_execution_width


# (grid, threadgroup): partial last groups in every dimension used.
SHAPES = [
    ((1000,), (64,)),
    ((37, 19), (8, 4)),
    ((9, 7, 5), (4, 2, 3)),
    ((10,), (64,)),  # one group, smaller than asked
]
SHAPE_IDS = ["1d", "2d", "3d", "1d-tg-over-grid"]


@pytest.mark.parametrize("grid,tg", SHAPES, ids=SHAPE_IDS)
@pytest.mark.parametrize("typ", VECTOR_TYPES)
@pytest.mark.parametrize("builtin", VECTOR_BUILTINS)
def test_vector_builtins(device, builtin, typ, grid, tg):
    width = WIDTH[typ]
    got = run_builtin(device, builtin, typ, grid, tg)
    want = model(grid, tg, width_of(device, builtin, typ))[builtin].astype(np.uint32)
    if width < len(grid):
        # A kernel's positions and sizes share one width, so a narrower one sees only the grid's first
        # `width` coordinates: the threads that differ in the others write the same slot (the one
        # where they are 0), with the same values (each component depends on its own coordinate
        # alone); every other slot stays as it was.
        first = (0,) * (3 - width) + (slice(None),) * width
        np.testing.assert_array_equal(got[first][..., :width], want[first][..., :width],
                                      err_msg=f"{builtin} as {typ}")
        assert (got[first][..., width:] == 0xFFFFFFFF).all()
        untouched = np.ones(got.shape[:3], bool)
        untouched[first] = False
        assert (got[untouched] == 0xDEADBEEF).all()
        return
    np.testing.assert_array_equal(got[..., :width], want[..., :width], err_msg=f"{builtin} as {typ}")
    assert (got[..., width:] == 0xFFFFFFFF).all()


@pytest.mark.parametrize("grid,tg", SHAPES, ids=SHAPE_IDS)
@pytest.mark.parametrize("typ", SCALAR_TYPES)
@pytest.mark.parametrize("builtin", SCALAR_BUILTINS)
def test_scalar_builtins(device, builtin, typ, grid, tg):
    got = run_builtin(device, builtin, typ, grid, tg)
    want = model(grid, tg, width_of(device, builtin, typ))[builtin].astype(np.uint32)
    np.testing.assert_array_equal(got[..., 0], want[..., 0], err_msg=f"{builtin} as {typ}")


def test_simd_builtins_with_groups_over_simd_width(device):
    # 2 x 40 threads per group: several SIMD-groups, the last one partial.
    grid, tg = (50, 3), (40, 2)
    for b in ("thread_index_in_simdgroup", "simdgroup_index_in_threadgroup", "simdgroups_per_threadgroup"):
        got = run_builtin(device, b, "uint", grid, tg)
        m = model(grid, tg, width_of(device, b, "uint"))
        np.testing.assert_array_equal(got[..., 0], m[b][..., 0].astype(np.uint32), err_msg=b)


@pytest.mark.parametrize("grid", [(1,), (1000,), (100, 30), (17, 9, 5), (3000, 1, 2)])
def test_automatic_threadgroup(device, grid):
    g = list(grid) + [1] * (3 - len(grid))
    n = g[0] * g[1] * g[2]
    out = np.full(22 * n, 0xDEADBEEF, np.uint32)
    device.compile(ALL_SRC).all_builtins(grid, out)
    rec = out.reshape(g[2], g[1], g[0], 22)
    dispatch = rec[..., 12:15].reshape(-1, 3)
    tg = tuple(int(v) for v in dispatch[0])
    assert (dispatch == dispatch[0]).all(), "one threadgroup size per dispatch"
    assert 1 <= np.prod(tg) <= device.compile(ALL_SRC).all_builtins.max_total_threads_per_threadgroup
    m = model(grid, tg, device.compile(ALL_SRC).all_builtins.thread_execution_width)
    names = [
        "thread_position_in_grid",
        "thread_position_in_threadgroup",
        "threadgroup_position_in_grid",
        "threads_per_threadgroup",
        "dispatch_threads_per_threadgroup",
        "threadgroups_per_grid",
        "threads_per_grid",
    ]
    for k, name in enumerate(names):
        np.testing.assert_array_equal(rec[..., 3 * k : 3 * k + 3], m[name].astype(np.uint32), err_msg=name)
    np.testing.assert_array_equal(rec[..., 21], m["thread_index_in_threadgroup"][..., 0].astype(np.uint32))


@pytest.mark.parametrize("tg", [None, 1, 7, 64, 1024, (32,), (3, 1, 1), [16]])
def test_explicit_threadgroup_same_results(device, tg):
    lib = device.compile(GOOD_SRC)
    if tg is not None and int(np.prod(tg)) > lib.iota.max_total_threads_per_threadgroup:
        pytest.skip("over this kernel's limit on this device")
    n = 5000
    out = np.zeros(n, np.uint32)
    lib.iota(n, out, threadgroup=tg)
    np.testing.assert_array_equal(out, np.arange(n, dtype=np.uint32))


@pytest.mark.parametrize("grid", [5000, (5000,), [5000], np.int64(5000), np.uint32(5000), (5000, 1), (5000, 1, 1)])
def test_grid_spellings(device, grid):
    out = np.zeros(5000, np.uint32)
    device.compile(GOOD_SRC).iota(grid, out)
    np.testing.assert_array_equal(out, np.arange(5000, dtype=np.uint32))


@pytest.mark.parametrize("grid", [0, (0,), (0, 5), (7, 0), (3, 4, 0), (2**32 - 1, 0)])
def test_empty_grid_is_a_no_op(device, grid):
    lib = device.compile(GOOD_SRC)
    x = np.arange(8, dtype=np.float32)
    h = lib.twice_plus_one(grid, x)
    assert isinstance(h, mc.Completion)
    h.wait()
    assert h.done
    np.testing.assert_array_equal(x, np.arange(8, dtype=np.float32))
    # Even with no memory at all: nothing is read or written.
    lib.twice_plus_one(grid, np.zeros(0, np.float32)).wait()
    b = device.empty(8, np.float32)
    lib.twice_plus_one(grid, b).wait()
    assert not np.asarray(b).any()


@pytest.mark.parametrize(
    "grid",
    [-1, (-1,), (4, -2), (1, 1, -1), 2**32, (2**32,), (1, 2**32), (1, 1, 2**32), 2**64, 2**100, -(2**70)],
    ids=lambda g: repr(g)[:22],
)
def test_bad_grid_is_argument_error(device, grid):
    lib = device.compile(GOOD_SRC)
    x = np.zeros(4, np.float32)
    with pytest.raises(mc.ArgumentError, match="grid"):
        lib.twice_plus_one(grid, x)
    assert not x.any()
    check_usable(device)


@pytest.mark.parametrize("where", ["grid", "threadgroup"])
def test_grid_given_as_a_numpy_array(device, where):
    lib = device.compile(GOOD_SRC)
    out = np.zeros(64, np.uint32)
    shape = np.array([64])
    try:
        if where == "grid":
            lib.iota(shape, out)
        else:
            lib.iota(64, out, threadgroup=np.array([16]))
    except mc.ArgumentError:
        return  # refusing it clearly is fine too
    np.testing.assert_array_equal(out, np.arange(64))


@pytest.mark.parametrize(
    "grid", [(), (1, 2, 3, 4), 1.0, "8", None, True, (2.0,), (1, None)], ids=lambda g: repr(g)[:22]
)
def test_malformed_grid_is_argument_error(device, grid):
    lib = device.compile(GOOD_SRC)
    x = np.zeros(4, np.float32)
    with pytest.raises(mc.ArgumentError, match="grid"):
        lib.twice_plus_one(grid, x)
    check_usable(device)


@pytest.mark.parametrize(
    "tg",
    [1025, (1025,), (32, 33), (16, 16, 5), (2048, 1, 1), 2**31],
    ids=lambda t: repr(t)[:22],
)
def test_threadgroup_over_the_limit_is_argument_error(device, tg):
    k = device.compile(GOOD_SRC).iota
    limit = k.max_total_threads_per_threadgroup
    total = int(np.prod(tg))
    if total <= limit:
        pytest.skip(f"this kernel's limit is {limit}")
    out = np.zeros(4096, np.uint32)
    with pytest.raises(mc.ArgumentError, match="limit"):
        k(4096, out, threadgroup=tg)
    assert not out.any(), "nothing is silently clamped"
    check_usable(device)


@pytest.mark.parametrize(
    "tg", [0, (0,), (4, 0), -1, (2, -3), (1, 2, 3, 4), (), 2.0, "4", 2**32], ids=lambda t: repr(t)[:22]
)
def test_bad_threadgroup_is_argument_error(device, tg):
    out = np.zeros(64, np.uint32)
    with pytest.raises(mc.ArgumentError, match="threadgroup"):
        device.compile(GOOD_SRC).iota(64, out, threadgroup=tg)
    check_usable(device)


def test_ushort_position_limits_the_grid(device):
    k = device.compile(USHORT_POS_SRC).short_pos
    out = np.zeros(70000, np.uint32)
    k(65535, out)
    np.testing.assert_array_equal(out[:65535], np.arange(65535))
    # 65536 threads: positions 0 ... 65535 all fit a ushort (refused before 2026-12-05)
    out[:] = 0
    k(65536, out)
    np.testing.assert_array_equal(out[:65536], np.arange(65536))
    assert not out[65536:].any()
    with pytest.raises(mc.ArgumentError, match="ushort"):
        k(65537, out)
    check_usable(device)


def test_large_1d_grid(device):
    n = 3_000_017  # many threadgroups, a partial last one
    out = device.empty(n, np.uint32)
    device.compile(GOOD_SRC).iota(n, out)
    a = np.asarray(out)
    assert a[0] == 0 and a[-1] == n - 1
    np.testing.assert_array_equal(a, np.arange(n, dtype=np.uint32))


@st.composite
def grids_and_groups(draw):
    dims = draw(st.integers(1, 3))
    grid = tuple(draw(st.integers(1, 40)) for _ in range(dims))
    tg = []
    budget = 1024
    for _ in range(dims):
        t = draw(st.integers(1, min(budget, 64)))
        tg.append(t)
        budget //= t
    return grid, tuple(tg)


@given(grids_and_groups())
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_builtins_match_the_model_hypothesis(device, shape):
    grid, tg = shape
    g = list(grid) + [1] * (3 - len(grid))
    n = g[0] * g[1] * g[2]
    out = np.full(22 * n, 0xDEADBEEF, np.uint32)
    kernel = device.compile(ALL_SRC).all_builtins
    if int(np.prod(tg)) > kernel.max_total_threads_per_threadgroup:  # a pipeline's limit may be under 1024
        with pytest.raises(mc.ArgumentError, match="over this kernel's limit"):
            kernel(grid, out, threadgroup=tg)
        return
    kernel(grid, out, threadgroup=tg)
    rec = out.reshape(g[2], g[1], g[0], 22)
    m = model(grid, tg, device.compile(ALL_SRC).all_builtins.thread_execution_width)
    names = [
        "thread_position_in_grid",
        "thread_position_in_threadgroup",
        "threadgroup_position_in_grid",
        "threads_per_threadgroup",
        "dispatch_threads_per_threadgroup",
        "threadgroups_per_grid",
        "threads_per_grid",
    ]
    for k, name in enumerate(names):
        np.testing.assert_array_equal(rec[..., 3 * k : 3 * k + 3], m[name].astype(np.uint32), err_msg=f"{name} {shape}")
    np.testing.assert_array_equal(rec[..., 21], m["thread_index_in_threadgroup"][..., 0].astype(np.uint32))
