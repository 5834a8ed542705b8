"""Texture atomics (MSL 3.1; issue P2.0, second corpus): the atomic_* member functions of
texture1d/2d/2d_array/3d<int or uint, access::read_write> against NumPy on every device,
contended (a histogram) and one thread per texel (every operation), and the Metal
simulator's refusal on a GPU family without them (apple3), as Metal's compiler refuses."""

from __future__ import annotations

import numpy as np
import pytest

import metalcall as mc
from mcconf import HEADER, KernelSet

KS = KernelSet([
    """
kernel void ta_histogram(texture2d<uint, access::read_write> hist [[texture(0)]], const device uint* bins [[buffer(0)]],
                         device uint* old [[buffer(1)]], uint i [[thread_position_in_grid]]) {
    const uint b = bins[i];
    old[i] = hist.atomic_fetch_add(uint2(b % 4, b / 4), 1u).x;
}
""",
    """
kernel void ta_ops(texture2d<int, access::read_write> t [[texture(0)]],
                   texture1d<uint, access::read_write> u1 [[texture(1)]],
                   texture2d_array<int, access::read_write> ta [[texture(2)]],
                   texture3d<uint, access::read_write> t3 [[texture(3)]],
                   const device int* v [[buffer(0)]], device int4* out [[buffer(1)]], uint i [[thread_position_in_grid]]) {
    const int x = v[i];
    out[3 * i] = int4(t.atomic_fetch_min(uint2(i, 0), x).x, t.atomic_fetch_max(uint2(i, 1), x).x,
                      t.atomic_exchange(uint2(i, 2), int4(x)).x, t.atomic_fetch_sub(uint2(i, 8), x).x);
    int4 expected = t.atomic_load(uint2(i, 3));
    const bool swapped = t.atomic_compare_exchange_weak(uint2(i, 3), &expected, x);
    int4 wrong = int4(-12345);
    const bool not_swapped = t.atomic_compare_exchange_weak(uint2(i, 4), &wrong, x);
    out[3 * i + 1] = int4(swapped, not_swapped, wrong.x, t.atomic_fetch_and(uint2(i, 5), x).x);
    t.atomic_store(uint2(i, 9), x * 3);
    out[3 * i + 2] = int4(t.atomic_fetch_or(uint2(i, 6), x).x, t.atomic_fetch_xor(uint2(i, 7), x).x,
                          t.atomic_load(uint2(i, 9)).x, int(u1.atomic_fetch_add(i, uint(x)).x));
    ta.atomic_fetch_add(uint2(i, 0), 1, x);
    t3.atomic_fetch_max(uint3(i, 0, 1), uint(x));
}
""",
])


def test_histogram(device, rng):
    n = 512
    bins = rng.integers(0, 16, n).astype(np.uint32)
    hist = device.texture((4, 4), "r32uint")
    np.asarray(hist)[...] = 7
    old = np.zeros(n, np.uint32)
    KS.get(device, "ta_histogram")(n, bins, old, textures=[hist], threadgroup=64)
    counts = np.bincount(bins, minlength=16)
    np.testing.assert_array_equal(np.asarray(hist)[..., 0].reshape(-1), counts + 7)
    for b in range(16):  # each thread of a bin saw a distinct old count
        assert sorted(old[bins == b].tolist()) == list(range(7, 7 + counts[b]))


def test_every_operation(device, rng):
    n = 8
    init = rng.integers(-50, 50, (10, n)).astype(np.int32)
    v = rng.integers(1, 40, n).astype(np.int32)
    t = device.texture_from(init, format="r32sint")
    u1 = device.texture((n,), "r32uint")
    np.asarray(u1)[..., 0] = np.arange(n) * 10
    ta = device.texture((2, 1, n), "r32sint", type="texture2d_array")
    t3 = device.texture((2, 1, n), "r32uint")
    np.asarray(t3)[1, 0, :, 0] = 20
    out = np.zeros((3 * n, 4), np.int32)
    KS.get(device, "ta_ops")(n, v, out, textures=[t, u1, ta, t3])
    got = np.asarray(t)[..., 0]
    out = out.reshape(n, 3, 4)
    np.testing.assert_array_equal(out[:, 0], np.stack([init[0], init[1], init[2], init[8]], 1))
    np.testing.assert_array_equal(out[:, 1], np.stack([np.ones(n), np.zeros(n), init[4], init[5]], 1))
    np.testing.assert_array_equal(out[:, 2], np.stack([init[6], init[7], 3 * v, np.arange(n) * 10], 1))
    want = init.copy()
    want[0] = np.minimum(init[0], v)
    want[1] = np.maximum(init[1], v)
    want[2] = v
    want[3] = v
    want[5] = init[5] & v
    want[6] = init[6] | v
    want[7] = init[7] ^ v
    want[8] = init[8] - v
    want[9] = 3 * v
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(np.asarray(u1)[..., 0], np.arange(n) * 10 + v)
    np.testing.assert_array_equal(np.asarray(ta)[1, 0, :, 0], v)
    np.testing.assert_array_equal(np.asarray(ta)[0, 0, :, 0], 0)
    np.testing.assert_array_equal(np.asarray(t3)[1, 0, :, 0], np.maximum(20, v))


def test_simulator_refuses_them_on_apple3():
    if "metal-sim" not in mc.backends() and "metal_sim" not in mc.backends():
        pytest.skip("no Metal simulator in this build")
    src = HEADER + """
kernel void k(texture2d<uint, access::read_write> t [[texture(0)]], uint2 p [[thread_position_in_grid]]) {
    t.atomic_fetch_add(p, 1u);
}
kernel void plain(texture2d<uint, access::read_write> t [[texture(0)]], uint2 p [[thread_position_in_grid]]) {
    t.write(t.read(p) + 1u, p);
}
"""
    old = mc.Device("metal-sim", family="apple3")
    lib = old.compile(src)
    with pytest.raises(mc.CompileError, match="texture atomics"):
        lib.function("k")
    t = old.texture((2, 2), "r32uint")
    lib.function("plain")((2, 2), textures=[t])
    np.testing.assert_array_equal(np.asarray(t)[..., 0], 1)
    with pytest.raises(mc.ArgumentError, match="no cube texture arrays"):
        old.texture((1, 2, 2), "r32float", type="texturecube_array")
    new = mc.Device("metal-sim", family="apple7")
    t = new.texture((2, 2), "r32uint")
    new.compile(src).function("k")((2, 2), textures=[t])
    np.testing.assert_array_equal(np.asarray(t)[..., 0], 1)
