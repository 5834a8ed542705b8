"""GPU memory of torch, CuPy and Numba used in place on CUDA: as kernel arguments, through
mc.from_dlpack and dev.asarray (pointer equality proves no copy), ordered after the producer's
stream (DLPack: __dlpack__(stream=our stream); CUDA array interface: our stream waits on its
`stream`). Such a Buffer is device-only: np.asarray raises, buf.to() copies. Skipped without CUDA."""

from __future__ import annotations

import gc

import numpy as np
import pytest

import metalcall as mc

HAS_CUDA = "cuda" in mc.backends() and any(d.backend == "cuda" for d in mc.get_devices())
needs_cuda = pytest.mark.skipif(not HAS_CUDA, reason="no CUDA device (no NVIDIA driver/GPU, or no NVRTC)")

SRC = """
kernel void mul(const device float* a [[buffer(0)]], const device float* b [[buffer(1)]],
                device float* c [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    c[i] = a[i] * b[i];
}
kernel void fill(device float* a [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    a[i] = float(i) * 2.0f + 1.0f;
}
"""


class CAIOnly:
    """Only __cuda_array_interface__ (like a Numba device array), optionally with a stream."""

    def __init__(self, x, stream=None):
        self.x = x
        self.stream = stream

    @property
    def __cuda_array_interface__(self):
        cai = dict(self.x.__cuda_array_interface__)
        if self.stream is not None:
            cai["stream"] = self.stream
        return cai


class OnGpu:
    """A DLPack producer that says its memory is on GPU `index` (it is never asked for it)."""

    def __init__(self, index):
        self.index = index

    def __dlpack__(self, **kwargs):
        raise AssertionError("the placement check must come first")

    def __dlpack_device__(self):
        return (2, self.index)


def _ptr(buf: mc.Buffer) -> int:
    return buf.__cuda_array_interface__["data"][0]


@pytest.fixture
def cuda():
    if not HAS_CUDA:
        pytest.skip("no CUDA device (no NVIDIA driver/GPU, or no NVRTC)")
    return mc.Device("cuda")


@pytest.fixture
def torch_cuda():
    torch = pytest.importorskip("torch", reason="torch is not installed here")
    if not HAS_CUDA or not torch.cuda.is_available():
        pytest.skip("no CUDA device for torch and metalcall")
    return torch


def test_metalcall_cuda_array_via_interface(cuda):
    """CAI import needs no torch: a metalcall CUDA buffer seen only through its interface."""
    lib = cuda.compile(SRC)
    owner = cuda.zeros(64)
    alias = cuda.asarray(CAIOnly(owner))
    assert isinstance(alias, mc.Buffer) and _ptr(alias) == _ptr(owner)
    assert alias.host_visible  # managed memory stays host-visible
    lib.fill(64, CAIOnly(owner)).wait()  # as a kernel argument, in place
    np.testing.assert_array_equal(np.asarray(owner), np.arange(64, dtype=np.float32) * 2 + 1)


def test_wrong_gpu_index_names_the_argument(cuda):
    fill = cuda.compile(SRC).fill
    with pytest.raises(mc.ArgumentError, match=r"argument 0: .*cuda:7 but the device is cuda:0"):
        fill(4, OnGpu(7))
    with pytest.raises(mc.ArgumentError, match="cuda:7"):
        mc.from_dlpack(OnGpu(7), device=cuda)


def test_torch_tensors_as_kernel_arguments(torch_cuda):
    torch = torch_cuda
    dev = mc.Device("cuda")
    mul = dev.compile(SRC).mul
    n = 1 << 20
    a = torch.rand(n, device="cuda")
    b = torch.rand(n, device="cuda")
    c = torch.empty(n, device="cuda")
    ptr = c.data_ptr()
    mul(n, a, b, c)  # a statement call waits
    assert c.data_ptr() == ptr
    torch.testing.assert_close(c, a * b, rtol=0, atol=0)


def test_read_of_torch_memory_and_of_a_kernel_result(torch_cuda):
    """buf.read copies from GPU memory the host cannot view (a torch tensor's) and from our own."""
    torch = torch_cuda
    dev = mc.Device("cuda")
    t = torch.arange(100, dtype=torch.float32, device="cuda") * 3
    imported = dev.asarray(t)
    assert not imported.host_visible
    np.testing.assert_array_equal(np.frombuffer(imported.read(4 * 10, 4 * 5), np.float32), np.arange(10, 15) * 3)
    out = dev.empty(1 << 20, np.float32)
    dev.compile(SRC).fill(1 << 20, out)  # not waited: read waits for it
    assert np.frombuffer(out.read(4 * 123457, 4), np.float32)[0] == 123457 * 2 + 1


def test_torch_producer_stream_is_ordered_before_ours(torch_cuda):
    """The producer's pending work on a side stream finishes before our kernel reads it."""
    torch = torch_cuda
    dev = mc.Device("cuda")
    mul = dev.compile(SRC).mul
    n = 1 << 24
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):  # torch's current stream: the one __dlpack__ orders before ours
        a = torch.full((n,), 3.0, device="cuda")
        for _ in range(20):  # long enough to race with an unordered launch
            a = a * 1.0 + 0.0
        out = torch.zeros(n, device="cuda")
        mul(n, a, a, out)  # called while `side` may still be running; a statement call waits
    assert torch.all(out == 9.0).item()


def test_from_dlpack_aliases_torch_memory(torch_cuda, cpu_device):
    torch = torch_cuda
    t = torch.arange(32, dtype=torch.float32, device="cuda")
    buf = mc.from_dlpack(t)  # the default device follows the producer: cuda:0
    assert buf.device == mc.Device("cuda:0") and buf.shape == (32,) and buf.dtype == np.float32
    assert _ptr(buf) == t.data_ptr()
    assert torch.from_dlpack(buf).data_ptr() == t.data_ptr()
    assert mc.Device("cuda").asarray(t).__cuda_array_interface__["data"][0] == t.data_ptr()
    # Device memory: no host view, an explicit copy instead.
    assert not buf.host_visible
    with pytest.raises(mc.ArgumentError, match="cannot read in place.*buf.to"):
        np.asarray(buf)
    with pytest.raises(BufferError):
        memoryview(buf)
    with pytest.raises(mc.ArgumentError, match="cannot read in place"):
        buf.numpy()
    host = buf.to(cpu_device)
    np.testing.assert_array_equal(np.asarray(host), np.arange(32, dtype=np.float32))
    # A kernel writes it in place; torch sees the result.
    buf.device.compile(SRC).fill(32, buf).wait()
    assert torch.equal(t, torch.arange(32, dtype=torch.float32, device="cuda") * 2 + 1)


def test_import_keeps_the_producer_alive(torch_cuda, cpu_device):
    torch = torch_cuda
    buf = mc.from_dlpack(torch.arange(1000, dtype=torch.int32, device="cuda"))
    gc.collect()
    torch.cuda.empty_cache()
    np.testing.assert_array_equal(np.asarray(buf.to(cpu_device)), np.arange(1000, dtype=np.int32))
    assert np.asarray(buf.to(buf.device)).sum() == np.arange(1000).sum()  # a device copy is host-visible


def test_torch_cuda_tensor_on_a_cpu_kernel_is_an_argument_error(torch_cuda, cpu_device):
    torch = torch_cuda
    fill = cpu_device.compile(SRC).fill
    with pytest.raises(mc.ArgumentError, match=r"argument 0: the Tensor lives on cuda:0.*kDLCPU"):
        fill(4, torch.zeros(4, device="cuda"))


def test_cuda_array_interface_stream_is_honoured(torch_cuda):
    torch = torch_cuda
    dev = mc.Device("cuda")
    mul = dev.compile(SRC).mul
    n = 1 << 24
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        a = torch.full((n,), 2.0, device="cuda")
        for _ in range(20):
            a = a * 1.0 + 0.0
        out = torch.zeros(n, device="cuda")
    producer = CAIOnly(a, stream=side.cuda_stream)  # our stream waits on an event recorded on `side`
    assert _ptr(dev.asarray(producer)) == a.data_ptr()
    mul(n, producer, producer, CAIOnly(out, stream=side.cuda_stream))  # `side` may still be running
    assert torch.all(out == 4.0).item()
    with pytest.raises(mc.ArgumentError, match="stream 0"):
        dev.asarray(CAIOnly(a, stream=0))


def test_cupy_arrays(cpu_device):
    cupy = pytest.importorskip("cupy", reason="CuPy is not installed here")
    if not HAS_CUDA:
        pytest.skip("no CUDA device")
    dev = mc.Device("cuda")
    a = cupy.arange(256, dtype=cupy.float32)
    c = cupy.zeros(256, dtype=cupy.float32)
    dev.compile(SRC).mul(256, a, a, c)
    cupy.testing.assert_array_equal(c, a * a)
    assert _ptr(mc.from_dlpack(a)) == a.data.ptr
    assert _ptr(dev.asarray(CAIOnly(a))) == a.data.ptr  # CuPy's interface names its stream (1: legacy)
    with pytest.raises(mc.ArgumentError, match=r"argument 0: the ndarray lives on cuda:0.*kDLCPU"):
        cpu_device.compile(SRC).fill(4, cupy.zeros(4, dtype=cupy.float32))


def test_imported_gpu_buffer_pickles_by_value(torch_cuda):
    import pickle

    torch = torch_cuda
    buf = mc.from_dlpack(torch.arange(16, dtype=torch.float32, device="cuda"))
    back = pickle.loads(pickle.dumps(buf))
    assert back.device == buf.device and back.host_visible
    np.testing.assert_array_equal(np.asarray(back), np.arange(16, dtype=np.float32))
