"""CUDA-specific behaviour of the CUDA backend (NVRTC + driver API).

Every other suite runs on CUDA too (the ``device`` fixture covers every backend);
these tests check what only the CUDA backend does. Without an NVIDIA GPU they are
skipped, except the one that checks the error a missing CUDA gives.
"""

from __future__ import annotations

import struct
import time

import numpy as np
import pytest

import metalcall as mc

HAS_CUDA = "cuda" in mc.backends() and any(d.backend == "cuda" for d in mc.get_devices())
needs_cuda = pytest.mark.skipif(not HAS_CUDA, reason="no CUDA device (no NVIDIA driver/GPU, or no NVRTC)")

SRC = """
#include <metal_stdlib>
using namespace metal;

kernel void mul(const device float* a [[buffer(0)]], const device float* b [[buffer(1)]],
                device float* c [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    c[i] = a[i] * b[i];
}

// One partial sum per threadgroup: threadgroup memory, barriers and simd_sum.
kernel void block_sum(const device float* a [[buffer(0)]], device float* out [[buffer(1)]],
                      constant uint& n [[buffer(2)]],
                      threadgroup float* partial [[threadgroup(0)]],
                      uint gid [[thread_position_in_grid]], uint tid [[thread_index_in_threadgroup]],
                      uint group [[threadgroup_position_in_grid]], uint size [[threads_per_threadgroup]],
                      uint lane [[thread_index_in_simdgroup]], uint warp [[simdgroup_index_in_threadgroup]]) {
    float v = gid < n ? a[gid] : 0.0f;
    v = simd_sum(v);
    if (lane == 0) partial[warp] = v;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (tid == 0) {
        float s = 0.0f;
        for (uint w = 0; w < (size + 31) / 32; ++w) s += partial[w];
        out[group] = s;
    }
}

kernel void spin(device float* x [[buffer(0)]], constant uint& iters [[buffer(1)]],
                 uint i [[thread_position_in_grid]]) {
    float acc = x[i];
    for (uint k = 0; k < iters; ++k) acc = acc * 0.999f + 1.0f;
    x[i] = acc;
}

kernel void sizes(device uint* out [[buffer(0)]], uint i [[thread_position_in_grid]],
                  uint n [[threads_per_threadgroup]], uint tid [[thread_index_in_threadgroup]]) {
    threadgroup_barrier(mem_flags::mem_none);
    out[i] = n * 10000u + tid;
}
"""


@pytest.fixture
def cuda() -> mc.Device:
    if not HAS_CUDA:
        pytest.skip("no CUDA device (no NVIDIA driver/GPU, or no NVRTC)")
    return mc.Device("cuda")


def test_missing_cuda_raises_device_error():
    if HAS_CUDA:
        pytest.skip("CUDA is present here")
    if "cuda" not in mc.backends():
        pytest.skip("the cuda backend is not built into this metalcall")
    with pytest.raises(mc.DeviceError) as info:
        mc.Device("cuda")
    message = str(info.value)
    assert "cuda" in message
    # The reason names what is missing.
    assert any(word in message for word in ("libcuda", "NVRTC", "nvrtc", "GPU", "cuInit", "driver"))


@needs_cuda
def test_properties(cuda):
    assert cuda.backend == "cuda"
    assert cuda.architecture.startswith("sm_")
    assert cuda.simd_width == 32
    assert cuda.max_threads_per_threadgroup == 1024
    assert cuda.memory_size > 1 << 30
    assert cuda.threadgroup_memory_length >= 48 * 1024
    assert cuda.unified_memory


@needs_cuda
def test_default_device_is_cuda(run_python):
    result = run_python(
        "import metalcall as mc; print(mc.Device().backend)", env={"METALCALL_DEVICE": None}
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "cuda"


@needs_cuda
def test_mul_and_managed_views(cuda):
    lib = cuda.compile(SRC)
    n = 100_003
    a = cuda.asarray(np.arange(n, dtype=np.float32))
    b = cuda.asarray(np.full(n, 0.5, dtype=np.float32))
    c = cuda.zeros(n, np.float32)
    lib.mul(n, a, b, c).wait()
    view = np.asarray(c)
    np.testing.assert_array_equal(view, np.arange(n, dtype=np.float32) * 0.5)
    # The host view is the managed memory itself: writes are seen by the next call.
    view[:] = 2.0
    lib.mul(n, c, b, a).wait()
    np.testing.assert_array_equal(np.asarray(a), np.full(n, 1.0, np.float32))


@needs_cuda
def test_numpy_arguments_are_staged(cuda):
    lib = cuda.compile(SRC)
    a = np.arange(1000, dtype=np.float32)
    b = np.full(1000, 3.0, dtype=np.float32)
    c = np.zeros(1000, dtype=np.float32)
    lib.mul(1000, a, b, c)
    np.testing.assert_array_equal(c, a * 3)


@needs_cuda
@pytest.mark.parametrize("n,group", [(1024, 256), (1000, 256), (70, 64), (33, 1024)])
def test_barrier_reduction(cuda, n, group):
    lib = cuda.compile(SRC)
    rng = np.random.default_rng(0)
    a = rng.random(n, dtype=np.float32)
    groups = (n + group - 1) // group
    out = np.zeros(groups, dtype=np.float32)
    lib.block_sum(n, a, out, np.uint32(n), threadgroup=group, threadgroup_memory=[128])
    expected = np.array([a[g * group:(g + 1) * group].sum() for g in range(groups)], dtype=np.float32)
    np.testing.assert_allclose(out, expected, rtol=1e-5)


@needs_cuda
def test_partial_threadgroups_are_exact(cuda):
    # A kernel with a barrier sees threads_per_threadgroup as the partial size.
    lib = cuda.compile(SRC)
    out = np.zeros(70, dtype=np.uint32)
    lib.sizes(70, out, threadgroup=32)
    n = np.array([32] * 64 + [6] * 6, dtype=np.uint32)
    tid = np.arange(70, dtype=np.uint32) % 32
    np.testing.assert_array_equal(out, n * 10000 + tid)


@needs_cuda
def test_async_call_overlaps_host(cuda):
    lib = cuda.compile(SRC)
    n = 1 << 20
    x = cuda.zeros(n, np.float32)
    iters = np.uint32(200_000)
    lib.spin(n, x, iters).wait()  # warm up (compile, first touch)
    start = time.perf_counter()
    done = lib.spin(n, x, iters)
    returned = time.perf_counter() - start
    done.wait()
    total = time.perf_counter() - start
    assert done.done
    assert np.isnan(done.gpu_time)  # single calls are timed only with Device("cuda", timing=True)
    # The call returns long before the GPU finishes.
    assert returned < total / 2, (returned, total)


@needs_cuda
def test_threadgroup_over_limit_is_argument_error(cuda):
    lib = cuda.compile(SRC)
    a = cuda.zeros(4096, np.float32)
    with pytest.raises(mc.ArgumentError):
        lib.mul(4096, a, a, a, threadgroup=2048)


@needs_cuda
def test_oversized_buffer_is_refused(cuda):
    with pytest.raises((mc.DeviceError, mc.ArgumentError)):
        cuda.empty(cuda.memory_size * 2, np.uint8)


@needs_cuda
def test_compile_error_location(cuda):
    with pytest.raises(mc.CompileError) as info:
        cuda.compile(
            "#include <metal_stdlib>\nusing namespace metal;\n"
            "kernel void k(device float* x [[buffer(0)]], uint i [[thread_position_in_grid]]) {\n"
            "    x[i] = undefined_name;\n}\n"
        )
    assert "source.metal:4:" in str(info.value)


@needs_cuda
def test_cpu_and_cuda_agree(cuda):
    cpu = mc.Device("cpu")
    a = np.random.default_rng(1).random(5000, dtype=np.float32)
    outs = []
    for dev in (cpu, cuda):
        lib = dev.compile(SRC)
        out = np.zeros(5000, dtype=np.float32)
        lib.mul(5000, a, a, out)
        outs.append(out)
    np.testing.assert_array_equal(outs[0], outs[1])


# ---- asynchronous calls (docs/design.md, "CUDA backend") ----

LONG_ITERS = np.uint32(20_000_000)  # a 1-thread spin of tens of milliseconds on any current GPU


def spin_reference(start: float, iters: int) -> np.float32:
    """What `spin` leaves in one element: acc = acc * 0.999 + 1, `iters` times, in float32."""
    # The recurrence converges to 1000 long before 20e6 steps; iterate until it stops moving.
    acc = np.float32(start)
    for _ in range(min(int(iters), 100_000)):
        nxt = np.float32(acc * np.float32(0.999) + np.float32(1.0))
        if nxt == acc:
            break
        acc = nxt
    return acc


@needs_cuda
def test_a_kept_completion_of_a_small_call_runs_ahead(cuda):
    lib = cuda.compile(SRC)
    x = cuda.zeros(1, np.float32)
    lib.spin(1, x, np.uint32(1)).wait()  # compile and load first
    done = lib.spin(1, x, LONG_ITERS)  # one thread: the smallest call there is
    assert not done.done  # the call returned while the GPU still spins
    done.wait()
    assert done.done
    np.testing.assert_allclose(np.asarray(x)[0], spin_reference(1.0, LONG_ITERS), rtol=1e-3)


@needs_cuda
def test_kept_completions_finish_in_order_with_exact_results(cuda):
    src = """
    kernel void bump(device uint* x [[buffer(0)]], constant uint& k [[buffer(1)]], uint i [[thread_position_in_grid]]) {
        x[i] = x[i] * 3u + k;
    }
    """
    lib = cuda.compile(src)
    x = cuda.zeros(4, np.uint32)
    handles = [lib.bump(4, x, np.uint32(k)) for k in range(500)]  # each depends on the one before
    handles[-1].wait()
    assert all(h.done for h in handles)  # in order: the last finished means all did
    expected = np.uint32(0)
    with np.errstate(over="ignore"):
        for k in range(500):
            expected = np.uint32(expected * np.uint32(3) + np.uint32(k))
    np.testing.assert_array_equal(np.asarray(x), np.full(4, expected, np.uint32))


@needs_cuda
def test_a_dropped_completion_waits(cuda):
    lib = cuda.compile(SRC)
    x = cuda.zeros(1, np.float32)
    early_view = np.asarray(x)  # taken while idle: reading it later does not wait by itself
    lib.spin(1, x, LONG_ITERS)  # a statement: the Completion is dropped, which waits
    np.testing.assert_allclose(early_view[0], spin_reference(0.0, LONG_ITERS), rtol=1e-3)


@needs_cuda
def test_a_view_waits_for_pending_work_on_its_buffer(cuda):
    lib = cuda.compile(SRC)
    x = cuda.zeros(1, np.float32)
    done = lib.spin(1, x, LONG_ITERS)
    view = np.asarray(x)  # hazard tracking: waits for the kernel that writes x
    assert done.done
    np.testing.assert_allclose(view[0], spin_reference(0.0, LONG_ITERS), rtol=1e-3)


@needs_cuda
def test_gpu_time_is_measured_where_asked_for(cuda):
    lib = cuda.compile(SRC)
    x = cuda.zeros(1, np.float32)
    single = lib.spin(1, x, np.uint32(1000))
    single.wait()
    assert np.isnan(single.gpu_time)  # single calls are not timed by default: no events to pay for
    with cuda.batch() as batch:
        lib.spin(1, x, np.uint32(1000))
        lib.spin(1, x, np.uint32(1000))
    batch.wait()
    assert batch.gpu_time > 0
    timed = mc.Device(f"cuda:{cuda.index}", timing=True)
    assert timed.timing and not cuda.timing
    y = timed.zeros(1, np.float32)
    h = timed.compile(SRC).spin(1, y, LONG_ITERS)
    h.wait()
    assert 0 < h.gpu_time < 600
    np.testing.assert_allclose(np.asarray(y)[0], spin_reference(0.0, LONG_ITERS), rtol=1e-3)


@needs_cuda
def test_synchronize_waits_for_kept_completions(cuda):
    lib = cuda.compile(SRC)
    xs = [cuda.zeros(1, np.float32) for _ in range(3)]
    views = [np.asarray(x) for x in xs]
    handles = [lib.spin(1, x, np.uint32(200_000)) for x in xs]
    cuda.synchronize()
    assert all(h.done for h in handles)
    for v in views:
        np.testing.assert_allclose(v[0], spin_reference(0.0, 200_000), rtol=1e-3)


# ---- the CUDA calling convention: parameter blocks, bounds checks, restrict builds ----------
#
# These run on every backend (the ``device`` fixture), so that the expected values are
# checked on the CPU too; on CUDA they exercise the per-kernel parameter block (offsets
# read from the module's layout table), the y/z bounds checks of 2-D and 3-D grids,
# and the choice between the build with __restrict__ buffers and the one without.

ABI_SRC = """
#include <metal_stdlib>
using namespace metal;
struct Padded {   // char, then padding up to the 16-byte float3, then short and uchar: 48 bytes
    char c;
    float3 v;
    short s;
    uchar u;
};
kernel void values(constant char& c [[buffer(0)]], short s [[buffer(1)]], constant float3& v [[buffer(2)]],
                   constant Padded& p [[buffer(3)]], bool flag [[buffer(4)]], device float* out [[buffer(5)]],
                   uchar u [[buffer(6)]], float f [[buffer(7)]], uint i [[thread_position_in_grid]]) {
    if (i != 0) return;
    out[0] = float(c); out[1] = float(s); out[2] = v.x; out[3] = v.y; out[4] = v.z;
    out[5] = float(p.c); out[6] = p.v.x; out[7] = p.v.y; out[8] = p.v.z; out[9] = float(p.s); out[10] = float(p.u);
    out[11] = flag ? 1.0f : 0.0f; out[12] = float(u); out[13] = f;
}
// Sequential on one thread: when b is a, b[k] depends on the b[k-1] just written.
kernel void chain(const device float* a [[buffer(0)]], device float* b [[buffer(1)]], constant uint& n [[buffer(2)]],
                  uint i [[thread_position_in_grid]]) {
    if (i != 0) return;
    for (uint k = 1; k < n; ++k) b[k] = a[k - 1] + 1.0f;
}
kernel void mul(const device float* a [[buffer(0)]], const device float* b [[buffer(1)]],
                device float* c [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    c[i] = a[i] * b[i];
}
kernel void coords(device uint* out [[buffer(0)]], uint3 gid [[thread_position_in_grid]],
                   uint3 grid [[threads_per_grid]]) {
    out[(gid.z * grid.y + gid.y) * grid.x + gid.x] = gid.x + 1000u * gid.y + 1000000u * gid.z;
}
kernel void two_groups(device float* out [[buffer(0)]], threadgroup float* s0 [[threadgroup(0)]],
                       threadgroup uint* s1 [[threadgroup(1)]], uint tid [[thread_index_in_threadgroup]],
                       uint n [[threads_per_threadgroup]], uint gid [[thread_position_in_grid]]) {
    s0[tid] = float(gid);
    s1[tid] = gid * 2u;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    out[gid] = s0[n - 1 - tid] + float(s1[n - 1 - tid]);
}
struct Big { float v[1500]; };  // 6000 bytes: over 4 KiB of parameters
kernel void big(constant Big& b [[buffer(0)]], device float* out [[buffer(1)]], uint i [[thread_position_in_grid]]) {
    out[i] = b.v[i];
}
"""


def padded_bytes(c: int, v: tuple, s: int, u: int) -> bytes:
    raw = bytearray(48)
    struct.pack_into("<b", raw, 0, c)
    struct.pack_into("<3f", raw, 16, *v)
    struct.pack_into("<hB", raw, 32, s, u)
    return bytes(raw)


def test_by_value_arguments_of_every_size_arrive_intact(device):
    lib = device.compile(ABI_SRC)
    out = device.zeros(16, np.float32)
    padded = padded_bytes(-7, (1.5, -2.5, 3.25), -300, 201)
    lib.values(1, -5, -1234, np.array([0.5, 1.5, 2.5, 0.0], np.float32), padded, True, out, 250, 3.75)
    np.testing.assert_array_equal(
        np.asarray(out)[:14], [-5, -1234, 0.5, 1.5, 2.5, -7, 1.5, -2.5, 3.25, -300, 201, 1, 250, 3.75]
    )
    # A Buffer may back a constant T& (a struct here): the kernel reads it in place.
    backing = device.asarray(np.frombuffer(padded_bytes(9, (4.0, 5.0, 6.0), 7, 8), np.uint8).copy())
    lib.values(1, 0, 0, np.zeros(4, np.float32), backing, False, out, 0, 0.0)
    np.testing.assert_array_equal(np.asarray(out)[5:12], [9, 4, 5, 6, 7, 8, 0])


def test_a_call_whose_buffers_alias_gets_sequential_results(device):
    lib = device.compile(ABI_SRC)
    n = 4096
    x0 = np.linspace(-3, 3, n).astype(np.float32)
    x = device.asarray(x0)
    lib.chain(1, x, x, np.uint32(n))  # b is a: each b[k] reads the b[k-1] just written
    np.testing.assert_array_equal(np.asarray(x), x0[0] + np.arange(n, dtype=np.float32))
    # The same kernel on separate buffers (the restrict build on CUDA).
    a = device.asarray(x0)
    b = device.zeros(n, np.float32)
    lib.chain(1, a, b, np.uint32(n))
    np.testing.assert_array_equal(np.asarray(b)[1:], x0[:-1] + 1)
    # Aliased again after a separate call: both builds stay usable.
    lib.chain(1, b, b, np.uint32(n))
    np.testing.assert_array_equal(np.asarray(b), np.arange(n, dtype=np.float32))


def test_in_place_and_separate_elementwise_calls(device):
    lib = device.compile(ABI_SRC)
    n = 100_003
    a0 = np.arange(n, dtype=np.float32) % 97
    c0 = np.linspace(0, 1, n).astype(np.float32)
    a, c = device.asarray(a0), device.asarray(c0)
    lib.mul(n, a, c, c)  # c = a * c in place
    np.testing.assert_array_equal(np.asarray(c), a0 * c0)
    d = device.zeros(n, np.float32)
    lib.mul(n, a, a, d)  # a read twice: no write overlaps it
    np.testing.assert_array_equal(np.asarray(d), a0 * a0)
    e = device.zeros(n, np.float32)
    lib.mul(n, a, d, e)
    np.testing.assert_array_equal(np.asarray(e), a0 * a0 * a0)


@pytest.mark.parametrize(
    "grid,group",
    [((100, 1, 1), (16, 4, 1)), ((37, 23, 1), (8, 4, 1)), ((37, 23, 1), (16, 1, 1)), ((13, 7, 5), (4, 4, 2)),
     ((5, 3, 9), (1, 1, 4))],
    ids=["1d-tall-group", "2d", "2d-flat-group", "3d", "3d-z-only"],
)
def test_partial_threadgroups_in_every_dimension(device, grid, group):
    lib = device.compile(ABI_SRC)
    count = grid[0] * grid[1] * grid[2]
    sentinel = np.uint32(0xFFFFFFFF)
    out = device.asarray(np.full(count + 64, sentinel, np.uint32))  # 64 guard elements after the grid
    lib.coords(grid, out, threadgroup=group)
    z, y, x = np.meshgrid(*(np.arange(g, dtype=np.uint32) for g in reversed(grid)), indexing="ij")
    expected = (x + 1000 * y + 1000000 * z).ravel()
    got = np.asarray(out)
    np.testing.assert_array_equal(got[:count], expected)
    assert (got[count:] == sentinel).all()  # no thread outside the grid wrote


@pytest.mark.parametrize("n", [256, 250])
def test_threadgroup_parameters(device, n):
    lib = device.compile(ABI_SRC)
    out = device.zeros(n, np.float32)
    lib.two_groups(n, out, threadgroup=64, threadgroup_memory=[256, 256])
    expected = np.empty(n, np.float32)
    for start in range(0, n, 64):
        size = min(64, n - start)
        tid = np.arange(size)
        expected[start : start + size] = 3.0 * (start + size - 1 - tid)
    np.testing.assert_array_equal(np.asarray(out), expected)


def test_a_large_struct_by_value(device):
    lib = device.compile(ABI_SRC)
    values = np.arange(1500, dtype=np.float32) * 0.5
    out = device.zeros(1500, np.float32)
    try:
        lib.big(1500, values.tobytes(), out)
    except mc.ArgumentError as e:
        # Only where the driver allows no more than 4 KiB of parameters (CUDA < 12.1 or pre-Volta).
        assert device.backend == "cuda" and "bytes" in str(e) and "Buffer" in str(e)
        return
    np.testing.assert_array_equal(np.asarray(out), values)


@needs_cuda
def test_done_becomes_true_without_anyone_waiting(cuda):
    # Untimed calls get their end event only when someone asks (docs/design.md): polling
    # `done` must still see every call finish, the last one of a burst included.
    lib = cuda.compile(SRC)
    x = cuda.zeros(1, np.float32)
    early_view = np.asarray(x)
    handles = [lib.spin(1, x, np.uint32(1000)) for _ in range(5)]
    deadline = time.monotonic() + 60
    while not handles[-1].done:
        assert time.monotonic() < deadline, "the last call never reported done"
        time.sleep(0.001)
    assert all(h.done for h in handles)
    expected = np.float32(0)
    for _ in range(5):
        expected = spin_reference(float(expected), 1000)
    np.testing.assert_allclose(early_view[0], expected, rtol=1e-3)

# ---- NumPy arguments through pinned staging ------------------------------------------------
#
# Arguments of 256 KiB and more go through a few pooled 16 MiB pinned host chunks, the
# host copies pipelined with the DMA in both directions; smaller ones are copied
# straight from their pageable memory. The sizes below take both paths, odd sizes end
# mid-chunk, and 20M floats (80 MB) cycle through the chunks more than once.

STAGING_SRC = """
#include <metal_stdlib>
using namespace metal;
kernel void mul(const device float* a [[buffer(0)]], const device float* b [[buffer(1)]],
                device float* c [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    c[i] = a[i] * b[i];
}
kernel void add_one(device float* x [[buffer(0)]], uint i [[thread_position_in_grid]]) { x[i] += 1.0f; }
// The written argument comes first: were the read-only one copied back too, it would
// land after it and undo the result when both are the same array.
kernel void twice(device float* out [[buffer(0)]], const device float* in [[buffer(1)]],
                  uint i [[thread_position_in_grid]]) {
    out[i] = 2.0f * in[i];
}
"""

STAGED_SIZES = [1, 1000, 300_000, 5_000_007, 20_000_000]


@needs_cuda
@pytest.mark.parametrize("n", STAGED_SIZES)
def test_numpy_mul_of_every_staging_size_is_exact(cuda, n):
    lib = cuda.compile(STAGING_SRC)
    rng = np.random.default_rng(n)
    a = rng.random(n, dtype=np.float32)
    b = rng.random(n, dtype=np.float32) + 0.5
    c = np.full(n, -1.0, np.float32)
    lib.mul(n, a, b, c)
    np.testing.assert_array_equal(c, a * b)


@needs_cuda
@pytest.mark.parametrize("n", STAGED_SIZES)
def test_numpy_in_out_argument_is_copied_in_and_back(cuda, n):
    lib = cuda.compile(STAGING_SRC)
    x0 = np.arange(n, dtype=np.float32) % 1009
    x = x0.copy()
    lib.add_one(n, x)
    np.testing.assert_array_equal(x, x0 + 1)
    lib.add_one(n, x)
    np.testing.assert_array_equal(x, x0 + 2)


@needs_cuda
@pytest.mark.parametrize("n", [1000, 5_000_007])
def test_read_only_numpy_inputs_are_read_and_never_written_back(cuda, n):
    lib = cuda.compile(STAGING_SRC)
    a = np.arange(n, dtype=np.float32) % 101
    b = np.full(n, 3.0, np.float32)
    a.flags.writeable = False
    b.flags.writeable = False
    c = np.zeros(n, np.float32)
    lib.mul(n, a, b, c)
    np.testing.assert_array_equal(c, a * 3)
    # The same array as written output and read-only input: only the output comes back.
    x0 = np.arange(n, dtype=np.float32) % 53
    x = x0.copy()
    lib.twice(n, x, x)
    np.testing.assert_array_equal(x, 2 * x0)
    # A read-only array cannot take the place of a written argument.
    with pytest.raises(mc.ArgumentError):
        lib.add_one(n, a)


@needs_cuda
def test_numpy_calls_in_a_row_reuse_the_staging(cuda):
    lib = cuda.compile(STAGING_SRC)
    rng = np.random.default_rng(7)
    for n in [5_000_007, 300_000, 20_000_000, 1000, 5_000_007, 5_000_007]:
        a = rng.random(n, dtype=np.float32)
        b = rng.random(n, dtype=np.float32)
        c = np.empty(n, np.float32)
        lib.mul(n, a, b, c)
        np.testing.assert_array_equal(c, a * b)


@needs_cuda
def test_a_batch_reads_the_numpy_results_of_its_earlier_calls(cuda):
    lib = cuda.compile(STAGING_SRC)
    n = 5_000_007
    a = np.arange(n, dtype=np.float32) % 31
    b = np.full(n, 2.0, np.float32)
    c = np.zeros(n, np.float32)
    with cuda.batch():
        lib.mul(n, a, b, c)
        lib.add_one(n, c)
    np.testing.assert_array_equal(c, a * 2 + 1)


@needs_cuda
def test_numpy_calls_from_two_threads_at_once(cuda):
    import threading

    lib = cuda.compile(STAGING_SRC)
    errors: list[BaseException] = []

    def worker(seed: int) -> None:
        try:
            rng = np.random.default_rng(seed)
            for n in [5_000_007, 1000, 300_000, 5_000_007]:
                a = rng.random(n, dtype=np.float32)
                b = rng.random(n, dtype=np.float32)
                c = np.empty(n, np.float32)
                lib.mul(n, a, b, c)
                np.testing.assert_array_equal(c, a * b)
                x0 = a.copy()
                lib.add_one(n, a)
                np.testing.assert_array_equal(a, x0 + 1)
        except BaseException as e:  # noqa: BLE001 - reported by the main thread
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(seed,)) for seed in (11, 12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
