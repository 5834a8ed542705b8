"""SIMD-group widths other than 32 at run time (P2.1): the Metal simulator runs each pipeline with its
own threadExecutionWidth (Intel 8, 16 or 32; AMD 32 or 64; Apple 32), so SIMD-group functions,
quad-group functions and the SIMD-group builtins act on groups of that many threads, as on such a
Mac, and a kernel that hard-codes 32 misbehaves there as it would on one. Families pinned to one
width ("intel-simd8", "amd-simd64") reach every width whatever a kernel is called. Every value is
checked against a NumPy model of a W-wide GPU."""

from __future__ import annotations

import numpy as np
import pytest

import metalcall as mc

WIDTH_FAMILIES = {8: "intel-simd8", 16: "intel-simd16", 32: "apple7", 64: "amd-simd64"}

FIELDS = 23
SRC = """
#include <metal_stdlib>
using namespace metal;
kernel void lanes(const device uint* x [[buffer(0)]], device uint* out [[buffer(1)]],
                  uint i [[thread_position_in_grid]], uint lane [[thread_index_in_simdgroup]],
                  uint sg [[simdgroup_index_in_threadgroup]], uint width [[threads_per_simdgroup]],
                  uint groups [[simdgroups_per_threadgroup]]) {
    const uint v = x[i];
    device uint* o = out + i * 23;
    o[0] = width; o[1] = lane; o[2] = sg; o[3] = groups; o[4] = width;  // [[thread_execution_width]]: execution_width below
    o[5] = simd_sum(v);
    o[6] = simd_prefix_exclusive_sum(v);
    o[7] = simd_prefix_inclusive_sum(v);
    o[8] = simd_max(v);
    o[9] = simd_min(v);
    o[10] = simd_shuffle(v, ushort((lane * 3 + 1) % width));
    o[11] = simd_shuffle_down(v, 3);
    o[12] = simd_shuffle_up(v, 5);
    o[13] = simd_shuffle_xor(v, 6);
    o[14] = simd_shuffle_rotate_down(v, 5);
    o[15] = simd_broadcast(v, 2);
    const ulong bits = ulong(simd_ballot(v % 3 == 0));
    o[16] = uint(bits & 0xffffffffu);
    o[17] = uint(bits >> 32);
    o[18] = simd_all(v < 1000) ? 1 : 0;
    o[19] = simd_any(v == 7) ? 1 : 0;
    o[20] = quad_sum(v);
    o[21] = quad_shuffle(v, 3);
    o[22] = simd_is_first() ? 1 : 0;
}
// [[thread_execution_width]], the older name of [[threads_per_simdgroup]] (a kernel declares one).
kernel void execution_width(device uint* out [[buffer(0)]], uint i [[thread_position_in_grid]],
                            uint execution [[thread_execution_width]]) {
    out[i] = execution;
}
// A reduction written for 32-wide SIMD-groups: one partial sum per 32 threads.
kernel void sums_of_32(const device float* x [[buffer(0)]], device float* out [[buffer(1)]],
                       uint i [[thread_position_in_grid]]) {
    const float s = simd_sum(x[i]);
    if (i % 32 == 0) out[i / 32] = s;
}
// The same, written for the pipeline's own width.
kernel void sums_per_group(const device float* x [[buffer(0)]], device float* out [[buffer(1)]],
                           uint i [[thread_position_in_grid]], uint lane [[thread_index_in_simdgroup]],
                           uint width [[threads_per_simdgroup]]) {
    const float s = simd_sum(x[i]);
    if (lane == 0) out[i / width] = s;
}
"""


def lanes_model(x: np.ndarray, width: int, group: int) -> np.ndarray:
    """What `lanes` writes for whole SIMD-groups of `width` threads in threadgroups of `group` threads."""
    n = x.size
    i = np.arange(n)
    lane = (i % group) % width
    base = i - lane
    x64 = x.astype(np.uint64)
    g = x.reshape(-1, width).astype(np.uint64)
    out = np.zeros((n, FIELDS), np.uint64)
    out[:, 0] = width
    out[:, 1] = lane
    out[:, 2] = (i % group) // width
    out[:, 3] = group // width
    out[:, 4] = width
    out[:, 5] = np.repeat(g.sum(1), width)
    inclusive = np.cumsum(g, axis=1).ravel()
    out[:, 6] = inclusive - x64
    out[:, 7] = inclusive
    out[:, 8] = np.repeat(g.max(1), width)
    out[:, 9] = np.repeat(g.min(1), width)
    out[:, 10] = x[base + (lane * 3 + 1) % width]
    out[:, 11] = np.where(lane + 3 < width, x[np.minimum(i + 3, n - 1)], x)
    out[:, 12] = np.where(lane >= 5, x[np.maximum(i - 5, 0)], x)
    out[:, 13] = x[base + ((lane ^ 6) & (width - 1))]
    out[:, 14] = x[base + (lane + 5) % width]
    out[:, 15] = x[base + 2]
    votes = (g % 3 == 0).astype(np.uint64) << np.arange(width, dtype=np.uint64)
    bits = np.repeat(np.bitwise_or.reduce(votes, axis=1), width)
    out[:, 16] = bits & 0xFFFFFFFF
    out[:, 17] = bits >> np.uint64(32)
    out[:, 18] = 1
    out[:, 19] = np.repeat((g == 7).any(1), width)
    out[:, 20] = np.repeat(x.reshape(-1, 4).astype(np.uint64).sum(1), 4)
    out[:, 21] = x[(i // 4) * 4 + 3]
    out[:, 22] = lane == 0
    return out.astype(np.uint32)


@pytest.fixture(params=sorted(WIDTH_FAMILIES), ids=lambda w: f"simd{w}")
def width(request) -> int:
    return request.param


def test_simd_functions_at_each_width(width):
    dev = mc.Device("metal-sim", family=WIDTH_FAMILIES[width])
    kernel = dev.compile(SRC).lanes
    assert kernel.thread_execution_width == width
    group, n = 128, 512
    x = np.random.default_rng(width).integers(0, 100, n).astype(np.uint32)
    x[::37] = 7
    out = dev.empty(n * FIELDS, np.uint32)
    kernel(n, x, out, threadgroup=group)
    got = np.asarray(out).reshape(n, FIELDS)
    np.testing.assert_array_equal(got, lanes_model(x, width, group))
    execution = dev.compile(SRC).execution_width
    assert execution.thread_execution_width == width
    widths = dev.empty(n, np.uint32)
    execution(n, widths, threadgroup=group)
    assert (np.asarray(widths) == width).all()


def test_partial_simd_group_reduces_over_its_threads(width):
    """A threadgroup of 100 threads: its last SIMD-group holds the 100 % width threads left."""
    dev = mc.Device("metal-sim", family=WIDTH_FAMILIES[width])
    kernel = dev.compile(SRC).sums_per_group
    x = np.arange(1, 101, dtype=np.float32)
    out = dev.asarray(np.full(-(-100 // width), -1, np.float32))
    kernel(100, x, out, threadgroup=100)
    padded = np.zeros(-(-100 // width) * width, np.float32)
    padded[:100] = x
    np.testing.assert_array_equal(np.asarray(out), padded.reshape(-1, width).sum(1))


def test_a_kernel_that_assumes_32_lanes_misbehaves_as_on_such_a_gpu(width):
    """`sums_of_32` takes simd_sum for the sum of 32 threads: right at width 32, a sum of 8 or 16 threads
    at those widths, of 64 at 64, as a Mac with such a GPU computes it."""
    dev = mc.Device("metal-sim", family=WIDTH_FAMILIES[width])
    kernel = dev.compile(SRC).sums_of_32
    x = np.random.default_rng(1).random(256, dtype=np.float32)
    out = dev.empty(8, np.float32)
    kernel(256, x, out, threadgroup=128)
    starts = np.arange(0, 256, 32)
    expected = np.array([x[s - s % width : s - s % width + width].sum(dtype=np.float64) for s in starts])
    np.testing.assert_allclose(np.asarray(out), expected, rtol=1e-5)
    if width != 32:
        assert not np.allclose(np.asarray(out), x.reshape(8, 32).sum(1), rtol=1e-5)


def test_mixed_families_vary_widths_per_pipeline():
    """intel and amd give their pipelines different widths (by kernel name), every one of the family's."""
    names = [f"k{i}" for i in range(8)]
    src = "#include <metal_stdlib>\nusing namespace metal;\n" + "".join(
        f"kernel void {k}(device float* x [[buffer(0)]], uint i [[thread_position_in_grid]]) "
        "{ x[i] = simd_sum(x[i]); }\n" for k in names)
    for family, widths in (("intel", {8, 16, 32}), ("amd", {32, 64}), ("apple7", {32})):
        dev = mc.Device("metal-sim", family=family)
        lib = dev.compile(src)
        seen = {lib.function(k).thread_execution_width for k in names}
        assert seen == widths, (family, seen)
        for k in names:  # each runs with its own width
            kern = lib.function(k)
            w = kern.thread_execution_width
            x = dev.asarray(np.ones(128, np.float32))
            kern(128, x, threadgroup=64)
            np.testing.assert_array_equal(np.asarray(x), np.full(128, w, np.float32))


def test_pinned_family_refuses_a_width_the_family_lacks():
    with pytest.raises(mc.DeviceError, match="run 8, 16, 32 wide, not 64"):
        mc.Device("metal-sim", family="intel-simd64")


def test_simdgroup_matrices_run_32_wide_on_every_family():
    """SIMD-group matrices are Apple7+ GPUs' (32 lanes): a source that uses them gets 32-wide pipelines."""
    src = """
#include <metal_stdlib>
using namespace metal;
kernel void mm(const device float* a [[buffer(0)]], const device float* b [[buffer(1)]], device float* c [[buffer(2)]],
               uint lane [[thread_index_in_simdgroup]]) {
    simdgroup_float8x8 x, y, z = make_filled_simdgroup_matrix<float, 8, 8>(0.0f);
    simdgroup_load(x, a, 8);
    simdgroup_load(y, b, 8);
    simdgroup_multiply_accumulate(z, x, y, z);
    simdgroup_store(z, c, 8);
}
"""
    a = np.random.default_rng(2).random((8, 8), dtype=np.float32)
    b = np.random.default_rng(3).random((8, 8), dtype=np.float32)
    for family in ("intel-simd8", "amd-simd64"):
        dev = mc.Device("metal-sim", family=family)
        kernel = dev.compile(src).mm
        assert kernel.thread_execution_width == 32
        c = dev.empty((8, 8), np.float32)
        kernel(32, a, b, c, threadgroup=32)
        np.testing.assert_allclose(np.asarray(c), a @ b, rtol=1e-5)


def test_the_plain_cpu_device_stays_32_wide():
    dev = mc.Device("cpu")
    kernel = dev.compile(SRC).lanes
    assert kernel.thread_execution_width == 32
    x = np.arange(256, dtype=np.uint32) % 100
    out = dev.empty(256 * FIELDS, np.uint32)
    kernel(256, x, out, threadgroup=128)
    np.testing.assert_array_equal(np.asarray(out).reshape(256, FIELDS), lanes_model(x, 32, 128))
