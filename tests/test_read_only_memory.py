"""Read-only foreign memory (an immutable JAX array, a read-only DLPack tensor or CUDA array
interface) becomes a read-only Buffer: kernels take it for `const` parameters only, its views
are read-only, and it is exported as read-only. JAX and Numba arrays as kernel arguments on
CUDA: values, their caches and their ordering. The CUDA parts skip without a GPU (and without
JAX or Numba there)."""

from __future__ import annotations

import os

# JAX takes 75% of the GPU's memory when it first runs unless told not to: the other test
# processes sharing the GPU would run out.
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

import metalcall as mc  # noqa: E402
from mctest import DLPackOnly  # noqa: E402

HAS_CUDA = "cuda" in mc.backends() and any(d.backend == "cuda" for d in mc.get_devices())

SRC = """
#include <metal_stdlib>
using namespace metal;

kernel void mul(const device float* a [[buffer(0)]], const device float* b [[buffer(1)]],
                device float* c [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    c[i] = a[i] * b[i];
}
kernel void scale(device float* a [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    a[i] = a[i] * 2.0f;
}
kernel void total(const device float* a [[buffer(0)]], device atomic_float* out [[buffer(1)]],
                  uint i [[thread_position_in_grid]]) {
    atomic_fetch_add_explicit(out, a[i], memory_order_relaxed);
}
"""


def _read_only(a: np.ndarray) -> np.ndarray:
    view = a.view()
    view.flags.writeable = False
    return view


# ---- host memory (every machine) ----


def test_a_read_only_dlpack_import_is_a_read_only_buffer(cpu_device):
    a = np.arange(64, dtype=np.float32)
    buf = mc.from_dlpack(_read_only(a))
    assert buf.read_only and np.shares_memory(np.asarray(buf), a)
    assert "read-only" in repr(buf) and "read-only" not in repr(mc.from_dlpack(a))
    assert not np.asarray(buf).flags.writeable
    assert memoryview(buf).readonly
    with pytest.raises(ValueError):
        np.asarray(buf)[0] = 1.0
    assert not mc.from_dlpack(a).read_only and not cpu_device.zeros(4).read_only


def test_read_only_buffers_bind_to_const_parameters_only(cpu_device):
    lib = cpu_device.compile(SRC)
    a = np.arange(64, dtype=np.float32)
    buf = mc.from_dlpack(_read_only(a))
    out = cpu_device.zeros(64)
    lib.mul(64, buf, buf, out)
    np.testing.assert_array_equal(np.asarray(out), a * a)
    with pytest.raises(mc.ArgumentError, match="read-only"):
        lib.scale(64, buf)
    np.testing.assert_array_equal(a, np.arange(64, dtype=np.float32))  # untouched
    with pytest.raises(mc.ArgumentError, match="read-only"):
        lib.mul(64, out, out, buf)
    lib.scale(64, out)  # the process stays usable
    np.testing.assert_array_equal(np.asarray(out), a * a * 2)


def test_a_repeated_call_checks_a_read_only_wrap_of_the_same_memory(cpu_device):
    """The repeated-call path compares Buffers by address and size: a read-only wrap of memory
    a writable Buffer had is checked again, not bound as the last call was."""
    scale = cpu_device.compile(SRC).scale
    a = np.ones(64, dtype=np.float32)
    writable = mc.from_dlpack(a)
    scale(64, writable)
    scale(64, writable)
    with pytest.raises(mc.ArgumentError, match="read-only"):
        scale(64, mc.from_dlpack(_read_only(a)))
    np.testing.assert_array_equal(a, np.full(64, 4, np.float32))


def test_batches_and_recordings_refuse_a_read_only_buffer_for_a_written_parameter(cpu_device):
    scale = cpu_device.compile(SRC).scale
    buf = mc.from_dlpack(_read_only(np.ones(8, np.float32)))
    with pytest.raises(mc.ArgumentError, match="read-only"):
        with cpu_device.batch():
            scale(8, buf)
    with pytest.raises(mc.ArgumentError, match="read-only"):
        with cpu_device.record():
            scale(8, buf)
    np.testing.assert_array_equal(np.asarray(buf), np.ones(8, np.float32))
    writable = cpu_device.asarray(np.ones(8, np.float32))
    with cpu_device.record() as graph:
        scale(8, writable)
    with pytest.raises(mc.ArgumentError, match="read-only"):
        graph.update(0, buf)  # refused, and the graph keeps its Buffer
    graph.replay().wait()
    np.testing.assert_array_equal(np.asarray(writable), np.full(8, 2, np.float32))
    np.testing.assert_array_equal(np.asarray(buf), np.ones(8, np.float32))


def test_a_read_only_buffer_exports_as_read_only(cpu_device):
    buf = mc.from_dlpack(_read_only(np.arange(8, dtype=np.float32)))
    with pytest.raises(BufferError, match="read-only"):
        buf.__dlpack__()  # a legacy capsule cannot say so
    back = np.from_dlpack(buf)
    assert not back.flags.writeable
    np.testing.assert_array_equal(back, np.arange(8, dtype=np.float32))
    copy = np.from_dlpack(buf, copy=True)  # a copy is the consumer's to write
    assert copy.flags.writeable


def test_host_dlpack_only_producers_keep_their_read_only_flag(cpu_device):
    """A producer with DLPack and no buffer protocol: a versioned capsule's read-only flag holds."""

    lib = cpu_device.compile(SRC)
    a = np.arange(16, dtype=np.float32)
    out = np.zeros(16, np.float32)
    lib.mul(16, DLPackOnly(_read_only(a)), DLPackOnly(_read_only(a)), out)
    np.testing.assert_array_equal(out, a * a)
    with pytest.raises(mc.ArgumentError, match="read-only"):
        lib.scale(16, DLPackOnly(_read_only(a)))
    np.testing.assert_array_equal(a, np.arange(16, dtype=np.float32))


def test_jax_host_arrays_are_read_only_arguments(cpu_device):
    jnp = pytest.importorskip("jax.numpy", reason="JAX is not installed here")
    lib = cpu_device.compile(SRC)
    x = jnp.arange(32, dtype=jnp.float32)
    if x.__dlpack_device__()[0] != 1:
        pytest.skip("JAX's default device here is not the host")
    out = np.zeros(32, np.float32)
    lib.mul(32, x, x, out)
    np.testing.assert_array_equal(out, np.arange(32, dtype=np.float32) ** 2)
    with pytest.raises(mc.ArgumentError, match="read-only"):
        lib.scale(32, x)
    np.testing.assert_array_equal(np.asarray(x), np.arange(32, dtype=np.float32))


# ---- CUDA ----


@pytest.fixture
def cuda():
    if not HAS_CUDA:
        pytest.skip("no CUDA device (no NVIDIA driver/GPU, or no NVRTC)")
    return mc.Device("cuda")


class ReadOnlyInterface:
    """A read-only view of another object's CUDA memory through __cuda_array_interface__ (v3)."""

    def __init__(self, x):
        self.x = x

    @property
    def __cuda_array_interface__(self):
        cai = dict(self.x.__cuda_array_interface__)
        cai["data"] = (cai["data"][0], True)
        cai.setdefault("stream", None)
        return cai


def test_read_only_interface_memory_binds_to_const_parameters(cuda):
    lib = cuda.compile(SRC)
    owner = cuda.asarray(np.arange(256, dtype=np.float32))
    out = cuda.zeros(256)
    lib.mul(256, ReadOnlyInterface(owner), ReadOnlyInterface(owner), out).wait()
    np.testing.assert_array_equal(np.asarray(out), np.arange(256, dtype=np.float32) ** 2)
    with pytest.raises(mc.ArgumentError, match="argument 0 .*read-only|read-only"):
        lib.scale(256, ReadOnlyInterface(owner))
    imported = cuda.asarray(ReadOnlyInterface(owner))
    assert imported.read_only and imported.__cuda_array_interface__["data"][1] is True
    with pytest.raises(mc.ArgumentError, match="read-only"):
        lib.scale(256, imported)
    np.testing.assert_array_equal(np.asarray(owner), np.arange(256, dtype=np.float32))


@pytest.fixture
def jax_cuda(cuda):
    jax = pytest.importorskip("jax", reason="JAX is not installed here")
    try:
        gpu = jax.devices("gpu")[0]
    except RuntimeError:
        pytest.skip("JAX has no GPU here")
    return jax, gpu


def test_jax_arrays_are_read_only_arguments(cuda, jax_cuda):
    jax, gpu = jax_cuda
    lib = cuda.compile(SRC)
    n = 1 << 16
    x = jax.device_put(np.arange(n, dtype=np.float32), gpu)
    out = cuda.zeros(n)
    for _ in range(3):  # the first call imports, later calls reuse the import
        lib.mul(n, x, x, out).wait()
        np.testing.assert_array_equal(np.asarray(out), np.arange(n, dtype=np.float32) ** 2)
    with pytest.raises(mc.ArgumentError, match="read-only"):
        lib.scale(n, x)
    np.testing.assert_array_equal(np.asarray(x), np.arange(n, dtype=np.float32))  # JAX's values untouched
    assert mc.from_dlpack(x).read_only


def test_a_jax_result_is_read_after_its_computation(cuda, jax_cuda):
    """The first call orders after the computation that makes the array (DLPack with our stream)."""
    jax, gpu = jax_cuda
    jnp = jax.numpy
    total = cuda.compile(SRC).total
    n = 1 << 22
    x = jax.device_put(np.ones(n, np.float32), gpu)
    for step in range(4):
        y = x
        for _ in range(30):  # queued on JAX's stream, maybe still running when the kernel is queued
            y = jnp.sqrt(y * y + 0.0) * 1.0
        y = y + float(step)
        out = cuda.zeros(1)
        total(n, y, out).wait()
        assert float(np.asarray(out)[0]) == pytest.approx(n * (1.0 + step), rel=1e-6)


def test_new_jax_arrays_at_a_dead_ones_address_are_read_anew(cuda, jax_cuda):
    jax, gpu = jax_cuda
    mul = cuda.compile(SRC).mul
    n = 4096
    for k in range(6):
        x = jax.device_put(np.full(n, float(k), np.float32), gpu)
        out = cuda.zeros(n)
        mul(n, x, x, out).wait()
        np.testing.assert_array_equal(np.asarray(out), np.full(n, float(k * k), np.float32))
        del x


def test_a_deleted_jax_array_is_an_argument_error(cuda, jax_cuda):
    jax, gpu = jax_cuda
    mul = cuda.compile(SRC).mul
    x = jax.device_put(np.ones(64, np.float32), gpu)
    out = cuda.zeros(64)
    mul(64, x, x, out).wait()
    x.delete()
    with pytest.raises(mc.ArgumentError, match="deleted"):
        mul(64, x, x, out)
    y = jax.device_put(np.full(64, 3.0, np.float32), gpu)
    mul(64, y, y, out).wait()
    np.testing.assert_array_equal(np.asarray(out), np.full(64, 9.0, np.float32))


@pytest.fixture
def numba_cuda(cuda):
    numba = pytest.importorskip("numba.cuda", reason="Numba's CUDA target is not installed here")
    try:
        if not numba.is_available():
            pytest.skip("Numba sees no CUDA GPU")
    except Exception as e:  # noqa: BLE001 - Numba raises its own errors for a missing driver
        pytest.skip(f"Numba's CUDA target is unusable here: {e}")
    return numba


def test_numba_arrays_as_arguments(cuda, numba_cuda):
    lib = cuda.compile(SRC)
    n = 1 << 16
    a = numba_cuda.to_device(np.arange(n, dtype=np.float32))
    c = numba_cuda.device_array(n, np.float32)
    for k in range(3):  # repeated calls reuse the description
        lib.mul(n, a, a, c).wait()
        np.testing.assert_array_equal(c.copy_to_host(), np.arange(n, dtype=np.float32) ** 2)
    lib.scale(n, c).wait()
    np.testing.assert_array_equal(c.copy_to_host(), 2 * np.arange(n, dtype=np.float32) ** 2)
    # A slice is an array of its own (its own MemoryPointer); a strided one is refused.
    tail = c[n // 2 :]
    lib.scale(n // 2, tail).wait()
    expected = 2 * np.arange(n, dtype=np.float32) ** 2
    expected[n // 2 :] *= 2
    np.testing.assert_array_equal(c.copy_to_host(), expected)
    with pytest.raises(mc.ArgumentError, match="C-contiguous"):
        lib.scale(n // 2, c[::2])


def test_numba_arrays_are_ordered_after_their_stream(cuda, numba_cuda):
    total = cuda.compile(SRC).total
    n = 1 << 22
    stream = numba_cuda.stream()
    host = np.ones(n, np.float32)
    for step in range(3):
        host[:] = 1.0 + step
        a = numba_cuda.to_device(host, stream=stream)  # the copy is queued on `stream`
        out = cuda.zeros(1)
        total(n, a, out).wait()
        assert float(np.asarray(out)[0]) == pytest.approx(n * (1.0 + step), rel=1e-6)
        stream.synchronize()
