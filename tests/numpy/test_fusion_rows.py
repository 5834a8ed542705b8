"""Fused kernels with strided operands, which the CPU backend runs on a 2-D grid of (the last
dimension, the rest) (_fusion._rows_grid): operands whose last stride is 0 ("sb"), 1 ("su") or
anything else ("s"), in 2 to 4 dimensions, strided outputs (a view written by setitem), last
dimensions of one element, and several structures in turn. Every result against NumPy, on every
device (the GPUs and the simulator keep the 1-D grid: the same expressions check it)."""

import numpy as np
import pytest

import metalcall.numpy as mnp
from metalcall.numpy import _fusion as F
from mnp_check import check

RNG = np.random.default_rng(11)


def _sample(shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


BROADCASTS = [((7, 1), (1, 9)), ((300, 1), (1, 257)), ((2, 1), (1, 5000)), ((64, 33), (33,)), ((64, 33), (64, 1)),
              ((5, 1, 6), (1, 4, 6)), ((5, 4, 1), (4, 6)), ((3, 1, 2, 5), (1, 4, 1, 5)), ((9, 1), (1, 1))]


@pytest.mark.parametrize("sa, sb", BROADCASTS, ids=lambda s: "x".join(map(str, s)))
def test_broadcast_operands(device, sa, sb):
    a, b = _sample(sa), _sample(sb)
    x, y = mnp.asarray(a, device=device), mnp.asarray(b, device=device)
    for _ in range(2):  # the second evaluation takes the registered plan
        check(x * y + 1, a * b + np.float32(1), rtol=1e-6)
        check(mnp.sin(y) - x * 2, np.sin(b) - a * np.float32(2), rtol=1e-5, atol=1e-6)


def test_views_with_each_last_stride(device):
    """Last strides 1 (a column slice), 3 (a step), 0 (broadcast) and a transposed operand
    (stride of a whole row), each with a contiguous one, and mixed in one expression."""
    a = _sample((40, 50))
    b = _sample((50, 40))
    x, y = mnp.asarray(a, device=device), mnp.asarray(b, device=device)
    check(x[:, 10:30] * 2 + x[:, :20], a[:, 10:30] * 2 + a[:, :20], rtol=1e-6)
    check(x[::2, ::3] - 1, a[::2, ::3] - 1, rtol=1e-6)
    check(x + y.T, a + b.T, rtol=1e-6)
    check(x[:10, 5:6] * x[::4, :], a[:10, 5:6] * a[::4, :], rtol=1e-6)
    check(mnp.where(x.T[:, :7] > 0, y[:, 3:10], x.T[:, 1:8]), np.where(a.T[:, :7] > 0, b[:, 3:10], a.T[:, 1:8]))


def test_strided_outputs(device):
    """setitem into views whose last stride is 1, 2 and (a column) a whole row."""
    a = _sample((30, 40))
    for index in [(slice(None), slice(5, 25)), (slice(None), slice(None, None, 2)), (slice(3, 20), slice(7, 8)),
                  (slice(None, None, 3), slice(None))]:
        host = np.zeros((30, 40), np.float32)
        out = mnp.asarray(host, device=device)
        x = mnp.asarray(a, device=device)
        host[index] = a[index] * 3 + 1
        out[index] = x[index] * 3 + 1
        check(out, host, rtol=1e-6)


@pytest.mark.parametrize("dtype", [np.int32, np.float64, np.int8])
def test_other_types(device, dtype):
    if device.backend == "metal" and dtype == np.float64:
        pytest.skip("Metal has no double")
    a = (RNG.integers(-50, 50, (17, 1)) if np.dtype(dtype).kind == "i" else RNG.standard_normal((17, 1))).astype(dtype)
    b = (RNG.integers(-50, 50, (1, 23)) if np.dtype(dtype).kind == "i" else RNG.standard_normal((1, 23))).astype(dtype)
    x, y = mnp.asarray(a, device=device), mnp.asarray(b, device=device)
    check(x * y - x, a * b - a, rtol=1e-12)


def test_rows_grid_is_the_cpus_only():
    assert F._rows_grid("cpu", 2, [("in", 0)], False)
    assert not F._rows_grid("cpu", 1, [("in", 0)], False)
    assert not F._rows_grid("cpu", 2, [], False)
    assert not F._rows_grid("cuda", 2, [("in", 0)], False)
    assert not F._rows_grid("metal-sim", 3, [("in", 0)], False)


# (shape of the base, index of the view, the kernel's dimensions once coalesced)
COALESCED = [((2000,), (slice(None, None, 2), None), 1),             # a column: (1000, 1)
             ((2000,), (None, slice(None, None, 2)), 1),             # a row: (1, 1000)
             ((40, 60), (slice(None), slice(None, None, 2)), 1),     # every other column of whole rows
             ((4, 5, 60), (slice(None), slice(None), slice(None, None, 3)), 1),
             ((40, 60), (slice(None), slice(10, 20)), 2),             # rows of 10 in rows of 60
             ((6, 1, 7, 1), (slice(None), 0, slice(1, 6), None), 2),  # size-1 dimensions between
             ((3, 4, 5), (slice(None, None, 2), slice(None), slice(None)), 2),
             ((1, 1, 1), (0, slice(None), None), 1)]                  # one element


@pytest.mark.parametrize("base, index, nd", COALESCED, ids=lambda v: str(v).replace(" ", ""))
def test_coalesced_shapes(device, base, index, nd):
    """A view's dimensions of size 1 are dropped and neighbours every operand walks as one are
    merged (Walk::coalesce): the kernel runs over nd dimensions, and reads, broadcasts and writes
    the same elements as NumPy."""
    from metalcall import _core

    a = _sample(base)
    x = mnp.asarray(a, device=device)
    view, want = x[index], a[index]
    for _ in range(2):  # the second evaluation takes the registered plan
        check(view * 3 + 1, want * np.float32(3) + np.float32(1), rtol=1e-6)
        check(view - want.sum(), want - want.sum(), rtol=1e-5, atol=1e-5)  # with a broadcast scalar array
    leaf = F.Leaf(view._buf, view._offset, view.shape, view._strides, view.dtype)
    node = F.Op("add", [leaf, F.Scalar(1.0, view.dtype)], view.dtype, view.dtype, view.shape)
    out = device.empty(max(want.size, 1), np.float32)
    assert _core._fusion_walk([(node, (out, 0, F.contiguous_strides(view.shape), view.dtype, view.shape))])[5] == nd
    host = np.zeros(base, np.float32)  # a strided destination that coalesces like its source
    dest = mnp.asarray(host, device=device)
    dest[index] = view * 2
    host[index] = want * np.float32(2)
    check(dest, host, rtol=1e-6)
