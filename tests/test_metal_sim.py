"""The Metal simulator, Device("metal-sim"): the Metal backend's planner and a second driver that
executes its plans under Metal's documented rules, running the kernels on the CPU
(docs/metal-backend.md). These tests run everywhere; each checks values against NumPy. The
P2.1 items they cover are named in their docstrings."""

from __future__ import annotations

import os

import numpy as np
import pytest

import metalcall as mc

FAMILIES = ["apple7", "apple3", "intel", "amd"]

SRC = """
#include <metal_stdlib>
using namespace metal;
kernel void mul(const device float* a [[buffer(0)]], const device float* b [[buffer(1)]],
                device float* c [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    c[i] = a[i] * b[i];
}
kernel void scale(device float* x [[buffer(0)]], constant float& s [[buffer(1)]],
                  uint i [[thread_position_in_grid]]) {
    x[i] = x[i] * s;
}
kernel void add_constant(constant float* x [[buffer(0)]], device float* out [[buffer(1)]],
                         uint i [[thread_position_in_grid]]) {
    out[i] = out[i] + x[i];
}
struct Big { float values[1100]; };
kernel void from_big(constant Big& big [[buffer(0)]], device float* out [[buffer(1)]],
                     uint i [[thread_position_in_grid]]) {
    out[i] = big.values[i];
}
kernel void group_sum(const device float* x [[buffer(0)]], device float* out [[buffer(1)]],
                      threadgroup float* scratch [[threadgroup(0)]],
                      uint i [[thread_position_in_grid]], uint t [[thread_position_in_threadgroup]],
                      uint g [[threadgroup_position_in_grid]], uint n [[threads_per_threadgroup]]) {
    scratch[t] = x[i];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (t == 0) {
        float s = 0;
        for (uint k = 0; k < n; ++k) s += scratch[k];
        out[g] = s;
    }
}
"""


@pytest.fixture(params=FAMILIES)
def sim(request) -> mc.Device:
    return mc.Device("metal-sim", family=request.param)


def unaligned(values: np.ndarray) -> np.ndarray:
    """A copy of `values` that starts 4 bytes into an allocation: never page-aligned, so staged."""
    raw = np.zeros(values.nbytes + 8, np.uint8)
    view = raw[4 : 4 + values.nbytes].view(values.dtype)
    view[:] = values
    return view


def test_calls_match_numpy(sim, rng):
    lib = sim.compile(SRC)
    n = 1000  # not a multiple of the threadgroup: apple3 (no non-uniform threadgroups) needs one that divides
    a = rng.random(n, dtype=np.float32)
    b = rng.random(n, dtype=np.float32)
    c = sim.empty(n, np.float32)
    group = 8 if sim.name.endswith("(apple3)") else None
    lib.mul(n, a, b, c, **({"threadgroup": group} if group else {}))
    np.testing.assert_array_equal(np.asarray(c), a * b)
    host = unaligned(a)
    lib.scale(n, host, np.float32(3.0), **({"threadgroup": group} if group else {}))
    np.testing.assert_array_equal(host, a * np.float32(3.0))


def test_device_without_nonuniform_threadgroups_refuses_partial_groups():
    sim = mc.Device("metal-sim", family="apple3")
    lib = sim.compile(SRC)
    c = sim.empty(1000, np.float32)
    with pytest.raises(mc.ArgumentError, match="runs whole threadgroups only"):
        lib.mul(1000, c, c, c, threadgroup=64)


def test_batch_calls_share_staged_host_memory(sim):
    """P2.1 item 2: in one batch, a call that reads a host array sees what an earlier call of the batch
    wrote to it (one staging buffer per host range per submission, copied back once)."""
    lib = sim.compile(SRC)
    n = 512
    a = unaligned(np.arange(n, dtype=np.float32))
    b = np.full(n, 2.0, np.float32)
    out = sim.empty(n, np.float32)
    with sim.batch():
        lib.scale(n, a, np.float32(10.0))  # writes a
        lib.mul(n, a, b, out)  # reads the a written above
        lib.scale(n, a, np.float32(0.5))  # a second writer: applied after the first
    expected = np.arange(n, dtype=np.float32) * np.float32(10.0)
    np.testing.assert_array_equal(np.asarray(out), expected * 2)
    np.testing.assert_array_equal(a, expected * np.float32(0.5))


def test_overlapping_host_views_are_one_memory():
    """P2.1 item 2, other spelling: two views of one array that overlap are one staging buffer, so a call
    reading one sees another call's writes through the other."""
    sim = mc.Device("metal-sim", family="apple7")
    lib = sim.compile(SRC)
    base = unaligned(np.arange(1024, dtype=np.float32))
    first, second = base[:768], base[256:]
    out = sim.empty(512, np.float32)
    with sim.batch():
        lib.scale(768, first, np.float32(2.0))
        lib.add_constant(512, second[:512], out)
    np.testing.assert_array_equal(np.asarray(out), np.arange(256, 768, dtype=np.float32) * 2)


def test_constant_binding_at_an_unaligned_offset(sim, rng):
    """setBuffer:offset: takes constant-space offsets at multiples of 256 bytes: the planner gives such a
    binding an aligned copy, made by a blit after earlier writes of the batch."""
    lib = sim.compile(SRC)
    values = rng.random(600, dtype=np.float32)
    host = unaligned(values)
    out = sim.empty(256, np.float32)
    group = 8 if sim.name.endswith("(apple3)") else None
    kw = {"threadgroup": group} if group else {}
    with sim.batch():
        lib.scale(600, host, np.float32(2.0), **kw)  # writes host
        lib.add_constant(256, host[20:276], out, **kw)  # a constant view 80 bytes in
    np.testing.assert_array_equal(np.asarray(out), values[20:276] * np.float32(2.0))


def test_large_constant_struct_goes_through_a_buffer(sim):
    """setBytes takes at most 4 KB: a larger by-reference argument is staged in a buffer."""
    lib = sim.compile(SRC)
    big = np.arange(1100, dtype=np.float32)
    out = sim.empty(1100, np.float32)
    lib.from_big(1100, big.tobytes(), out, **({"threadgroup": 4} if sim.name.endswith("(apple3)") else {}))
    np.testing.assert_array_equal(np.asarray(out), big)


def test_threadgroup_memory(sim, rng):
    lib = sim.compile(SRC)
    x = rng.random(1024, dtype=np.float32)
    out = sim.empty(16, np.float32)
    lib.group_sum(1024, x, out, threadgroup=64, threadgroup_memory=[64 * 4])
    np.testing.assert_allclose(np.asarray(out), x.reshape(16, 64).sum(axis=1), rtol=1e-5)
    with pytest.raises(mc.ArgumentError, match="threadgroup memory"):
        lib.group_sum(1024, x, out, threadgroup=64, threadgroup_memory=[sim.threadgroup_memory_length + 16])


def test_pipelines_have_their_family_limits():
    """Each pipeline reports a thread limit of its family (varied per pipeline, a whole number of SIMD
    groups); a threadgroup over it is refused."""
    for family in FAMILIES:
        sim = mc.Device("metal-sim", family=family)
        lib = sim.compile(SRC)
        for name in lib.function_names:
            limit = lib.function(name).max_total_threads_per_threadgroup
            assert 0 < limit <= sim.max_threads_per_threadgroup
    intel = mc.Device("metal-sim", family="intel")
    kernel = intel.compile(SRC).mul
    limit = kernel.max_total_threads_per_threadgroup
    c = intel.empty(2048, np.float32)
    if limit < 1024:
        with pytest.raises(mc.ArgumentError):
            kernel(2048, c, c, c, threadgroup=limit + 1)
    kernel(2048, c, c, c, threadgroup=limit)


def test_host_array_over_max_buffer_length_is_refused_first():
    """P2.1 item 8: host memory larger than maxBufferLength is an ArgumentError that says so, before any
    staging is tried."""
    sim = mc.Device("metal-sim", family="apple7")
    lib = sim.compile(SRC)
    huge = np.empty(sim.max_buffer_length // 4 + 1024, np.float32)  # not touched: no memory used
    with pytest.raises(mc.ArgumentError, match="more than the largest buffer"):
        lib.scale(16, huge, np.float32(1.0))
    small = unaligned(np.ones(16, np.float32))  # the device is still usable
    lib.scale(16, small, np.float32(4.0))
    np.testing.assert_array_equal(small, np.full(16, 4.0, np.float32))


def test_timing_device_shares_the_gpu_and_its_queue():
    """P2.1 item 6: Device(..., timing=True) is the same GPU with the same queue: its kernels use the
    other's Buffers, and calls from both run in submission order. (Core orders calls of one queue only:
    with a queue each, the product would be taken while the doublings still ran.)"""
    plain = mc.Device("metal-sim", family="apple7")
    timed = mc.Device("metal-sim", family="apple7", timing=True)
    scale = plain.compile(SRC).scale
    mul = timed.compile(SRC).mul
    n = 1 << 21
    x = plain.asarray(np.ones(n, np.float32))
    y = timed.empty(n, np.float32)
    for round_ in range(3):
        kept = [scale(n, x, np.float32(2.0)) for _ in range(16)]
        mul(n, x, x, y)  # after the sixteen doublings of x, as queued
        kept.clear()
        np.testing.assert_array_equal(np.asarray(y), np.full(n, 4.0 ** (16 * (round_ + 1)), np.float32))


SAMPLE_SRC = """
#include <metal_stdlib>
using namespace metal;
kernel void sample_at(texture2d<float> t [[texture(0)]], sampler s [[sampler(0)]], device float* out [[buffer(0)]],
                      uint i [[thread_position_in_grid]]) {
    out[i] = t.sample(s, float2(0.5f + float(i), 0.5f)).x;
}
"""


@pytest.mark.parametrize("options, words", [
    ({"address": "repeat"}, "clamp_to_edge or clamp_to_zero"),
    ({"address": "mirrored_repeat"}, "clamp_to_edge or clamp_to_zero"),
    ({"mip_filter": "linear"}, "mip levels"),
    ({"min_filter": "linear", "mag_filter": "nearest"}, "min and mag filters must be equal"),
])
def test_samplers_metal_leaves_undefined_are_refused(options, words):
    """P2.1 item 5: with unnormalised (pixel) coordinates Apple defines sampling only with clamp_to_edge
    or clamp_to_zero addressing, no mip filter and equal min and mag filters; other samplers are an
    ArgumentError before anything runs, and an allowed pixel-coordinate sampler samples the texels."""
    sim = mc.Device("metal-sim", family="apple7")
    kernel = sim.compile(SAMPLE_SRC).sample_at
    texels = np.arange(8, dtype=np.float32).reshape(1, 8)
    t = sim.texture_from(texels)
    out = np.zeros(8, np.float32)
    with pytest.raises(mc.ArgumentError, match=words):
        kernel(8, out, textures=[t], samplers=[sim.sampler(normalized=False, **options)])
    kernel(8, out, textures=[t], samplers=[sim.sampler(normalized=False, address="clamp_to_edge")])
    np.testing.assert_array_equal(out, texels[0])


def test_opening_and_listing():
    assert all(info.backend != "metal-sim" for info in mc.get_devices())
    if not os.environ.get("METALCALL_DEVICE"):
        assert mc.Device().backend != "metal-sim"  # never the default
    sim = mc.Device("metal-sim", family="AMD")
    assert sim.backend == "metal-sim" and "(amd)" in sim.name and sim.architecture == "mac2"
    with pytest.raises(mc.DeviceError, match="unknown GPU family 'nope'"):
        mc.Device("metal-sim", family="nope")
    with pytest.raises(mc.DeviceError, match="family= chooses the GPU family of the Metal simulator only"):
        mc.Device("cpu", family="apple7")


def test_environment_chooses_device_and_family(run_python):
    code = "import metalcall as mc\nd = mc.Device()\nprint(d.backend, d.name)\n"
    result = run_python(code, env={"METALCALL_DEVICE": "metal-sim", "METALCALL_METAL_SIM_FAMILY": "intel"})
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("metal-sim ") and "(intel)" in result.stdout


def test_buffers_of_another_device_are_refused(cpu_device):
    sim = mc.Device("metal-sim", family="apple7")
    lib = sim.compile(SRC)
    foreign = cpu_device.empty(16, np.float32)
    with pytest.raises(mc.ArgumentError, match="lives on cpu:0 but the kernel runs on metal-sim:0"):
        lib.scale(16, foreign, np.float32(2.0))


def test_pipelines_run_with_their_own_simd_width(rng):
    """P2.1 item 4: a pipeline's SIMD-group width is its own (threadExecutionWidth); the device's
    simd_width (a probe pipeline's, 16 on the simulated Intel GPU) may differ. Kernels that bake a
    width in (metalcall.numpy's reductions and scans) use the pipeline's and agree with NumPy."""
    import metalcall.numpy as mnp

    sim = mc.Device("metal-sim", family="intel-simd32")  # every pipeline 32 wide
    kernel = sim.compile(SRC).mul
    assert sim.simd_width == 16 and kernel.thread_execution_width == 32
    x = rng.random(300_007).astype(np.float32)
    with mnp.device_scope(sim):
        a = mnp.asarray(x)
        np.testing.assert_allclose(float(mnp.sum(a)), float(x.sum(dtype=np.float64)), rtol=1e-4)
        np.testing.assert_allclose(float(mnp.max(a)), float(x.max()))
        np.testing.assert_allclose(np.asarray(mnp.cumsum(a)), np.cumsum(x, dtype=np.float64), rtol=1e-3)
    cpu = mc.Device("cpu")
    assert cpu.compile(SRC).mul.thread_execution_width == cpu.simd_width
