"""DLPack both ways and __cuda_array_interface__: Buffers export their memory in place
(np.from_dlpack, torch, CuPy), and from_dlpack / dev.asarray / kernel calls import
host DLPack producers without a copy. torch/CuPy tests run where they are installed."""

from __future__ import annotations

import gc

import numpy as np
import pytest

import metalcall as mc
from mctest import DLPackOnly

WRITE_SRC = """
kernel void fill(device float* a [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    a[i] = float(i) * 2.0f + 1.0f;
}
"""

KDLCPU, KDLCUDA = 1, 2


class OnCuda(DLPackOnly):
    def __dlpack_device__(self):
        return (KDLCUDA, 0)


def _address(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0]


@pytest.mark.parametrize("dtype", [np.float32, np.int16, np.uint8, np.float16])
@pytest.mark.parametrize("shape", [(7,), (3, 5)])
def test_export_shares_memory(device, dtype, shape):
    buf = device.empty(shape, dtype)
    view = np.asarray(buf)
    if device.backend == "cuda":
        # A CUDA buffer says kDLCUDA (for GPU consumers); NumPy refuses that device, and
        # asks for the host view of the managed memory with device="cpu" (NumPy >= 2.1).
        with pytest.raises(BufferError):
            np.from_dlpack(buf)
        if tuple(int(v) for v in np.__version__.split(".")[:2]) < (2, 1):
            pytest.skip("np.from_dlpack(x, device='cpu') needs NumPy 2.1 or newer")
        exported = np.from_dlpack(buf, device="cpu")
    else:
        exported = np.from_dlpack(buf)
    assert exported.dtype == np.dtype(dtype) and exported.shape == shape
    assert _address(exported) == _address(view)
    exported[...] = np.arange(np.prod(shape)).reshape(shape).astype(dtype)
    np.testing.assert_array_equal(view, exported)
    view[...] = 3
    assert (exported == 3).all()


def test_dlpack_device(device):
    buf = device.empty(4)
    expected = (KDLCUDA, device.index) if device.backend == "cuda" else (KDLCPU, 0)
    assert buf.__dlpack_device__() == expected
    assert hasattr(buf, "__cuda_array_interface__") == (device.backend == "cuda")


def test_export_keeps_buffer_alive(device):
    buf = device.asarray(np.arange(10, dtype=np.float32))
    if device.backend == "cuda":
        capsule = buf.__dlpack__(max_version=(1, 0))
        del buf
        gc.collect()
        del capsule  # an unconsumed capsule frees its tensor, and with it the Buffer
        return
    exported = np.from_dlpack(buf)
    del buf
    gc.collect()
    np.testing.assert_array_equal(exported, np.arange(10, dtype=np.float32))


def test_export_waits_for_pending_work(device):
    fill = device.compile(WRITE_SRC).fill
    n = 1 << 16
    buf = device.empty(n, np.float32)
    fill(n, buf)
    if device.backend == "cuda":
        cai = buf.__cuda_array_interface__  # waits too
        assert cai["version"] == 3 and cai["shape"] == (n,) and cai["typestr"] == "<f4"
        out = np.asarray(buf)
    else:
        out = np.from_dlpack(buf)
    np.testing.assert_array_equal(out, np.arange(n, dtype=np.float32) * 2 + 1)


def test_versions_and_capsules(device):
    buf = device.empty((2, 2), np.float32)
    assert "dltensor" in repr(buf.__dlpack__())
    assert "dltensor_versioned" not in repr(buf.__dlpack__(max_version=(0, 5)))
    assert "dltensor_versioned" in repr(buf.__dlpack__(max_version=(1, 0)))
    assert "dltensor_versioned" in repr(buf.__dlpack__(max_version=(1, 3)))


def test_export_copy_and_bad_requests(cpu_device):
    buf = cpu_device.asarray(np.arange(4, dtype=np.int32))
    copied = np.from_dlpack(buf, copy=True)
    assert _address(copied) != _address(np.asarray(buf))
    np.testing.assert_array_equal(copied, [0, 1, 2, 3])
    with pytest.raises(BufferError, match="stream must be None"):
        buf.__dlpack__(stream=1)
    with pytest.raises(BufferError, match="cannot be exported"):
        buf.__dlpack__(dl_device=(KDLCUDA, 0))
    with pytest.raises(AttributeError, match="not CUDA"):
        buf.__cuda_array_interface__  # noqa: B018
    raw = cpu_device.empty(2, np.dtype([("a", np.int32), ("b", np.float32)]))
    with pytest.raises(BufferError, match="cannot describe dtype"):
        raw.__dlpack__()


@pytest.mark.parametrize("dtype", [np.float32, np.int16, np.uint8, np.float16, np.bool_])
def test_from_dlpack_numpy_zero_copy(cpu_device, dtype):
    a = np.zeros((3, 4), dtype)
    buf = mc.from_dlpack(a)
    assert isinstance(buf, mc.Buffer) and buf.device == cpu_device
    assert buf.shape == (3, 4) and buf.dtype == np.dtype(dtype)
    assert _address(np.asarray(buf)) == _address(a)
    np.asarray(buf)[1, 2] = 1
    assert a[1, 2] == 1
    assert mc.from_dlpack(buf) is buf


def test_dlpack_only_producer_round_trip(cpu_device):
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    producer = DLPackOnly(a)
    for buf in (cpu_device.asarray(producer), mc.from_dlpack(producer, device=cpu_device)):
        assert _address(np.asarray(buf)) == _address(a)
        back = np.from_dlpack(buf)
        assert _address(back) == _address(a)
    # The import keeps the producer's memory alive after the producer is gone.
    buf = mc.from_dlpack(DLPackOnly(np.arange(5, dtype=np.int16)))
    gc.collect()
    np.testing.assert_array_equal(np.asarray(buf), np.arange(5, dtype=np.int16))
    # dev.asarray of a NumPy array is still a copy.
    assert _address(np.asarray(cpu_device.asarray(a))) != _address(a)


def test_imported_buffer_in_kernels(cpu_device):
    fill = cpu_device.compile(WRITE_SRC).fill
    a = np.zeros(64, np.float32)
    buf = mc.from_dlpack(a)
    fill(64, buf)
    buf.wait()
    np.testing.assert_array_equal(a, np.arange(64, dtype=np.float32) * 2 + 1)
    # A DLPack-only producer as a kernel argument: its memory, written in place.
    b = np.zeros(64, np.float32)
    fill(64, DLPackOnly(b)).wait()
    np.testing.assert_array_equal(b, np.arange(64, dtype=np.float32) * 2 + 1)
    c = np.zeros(64, np.float32)
    with cpu_device.batch():
        fill(64, DLPackOnly(c))
    np.testing.assert_array_equal(c, np.arange(64, dtype=np.float32) * 2 + 1)


def test_import_bad_inputs(cpu_device):
    with pytest.raises(mc.ArgumentError, match="kDLCPU"):
        mc.from_dlpack(OnCuda(np.zeros(3)), device=cpu_device)
    with pytest.raises(mc.ArgumentError, match="__dlpack__"):
        mc.from_dlpack([1, 2, 3])
    with pytest.raises(mc.ArgumentError, match="not C-contiguous"):
        mc.from_dlpack(np.zeros((4, 4), np.float32)[:, ::2])
    with pytest.raises(mc.ArgumentError, match="kDLCPU"):
        cpu_device.asarray(OnCuda(np.zeros(3)))


def test_import_on_other_backends_is_explicit(device):
    if device.backend == "cpu":
        pytest.skip("the CPU imports in place (tested above)")
    with pytest.raises(mc.ArgumentError, match="not implemented yet"):
        mc.from_dlpack(np.zeros(3, np.float32), device=device)


# ---- torch and CuPy: run where they are installed (the GPU machine) ----


def test_torch_cpu_round_trip(cpu_device):
    torch = pytest.importorskip("torch", reason="torch is not installed here")
    t = torch.arange(8, dtype=torch.float32)
    buf = mc.from_dlpack(t)
    assert np.asarray(buf).__array_interface__["data"][0] == t.data_ptr()
    back = torch.from_dlpack(buf)
    assert back.data_ptr() == t.data_ptr()
    fill = cpu_device.compile(WRITE_SRC).fill
    fill(8, t).wait()  # a torch CPU tensor as a kernel argument, in place
    assert torch.equal(t, torch.arange(8, dtype=torch.float32) * 2 + 1)


def test_torch_cuda_round_trip():
    torch = pytest.importorskip("torch", reason="torch is not installed here")
    if "cuda" not in mc.backends() or not torch.cuda.is_available():
        pytest.skip("no CUDA device for torch and metalcall")
    dev = mc.Device("cuda")
    buf = dev.asarray(np.arange(16, dtype=np.float32))
    t = torch.from_dlpack(buf)
    assert t.is_cuda and t.data_ptr() == np.asarray(buf).__array_interface__["data"][0]
    assert torch.equal(t.cpu(), torch.arange(16, dtype=torch.float32))
    fill = dev.compile(WRITE_SRC).fill
    fill(16, buf)
    t2 = torch.from_dlpack(buf)  # waits for the kernel
    assert torch.equal(t2.cpu(), torch.arange(16, dtype=torch.float32) * 2 + 1)


def test_cupy_round_trip():
    cupy = pytest.importorskip("cupy", reason="CuPy is not installed here")
    if "cuda" not in mc.backends():
        pytest.skip("no CUDA device")
    dev = mc.Device("cuda")
    buf = dev.asarray(np.arange(16, dtype=np.float32))
    ptr = buf.__cuda_array_interface__["data"][0]
    for c in (cupy.from_dlpack(buf), cupy.asarray(buf)):
        assert c.data.ptr == ptr
        cupy.testing.assert_array_equal(c, cupy.arange(16, dtype=cupy.float32))
