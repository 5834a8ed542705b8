"""Foreign GPU arrays as kernel arguments through the per-object import cache (P2.2 item 1;
cpp/python/gpu_import.cpp, cached_gpu_argument): torch CUDA tensors and
__cuda_array_interface__ objects on a CUDA device are imported once per object and checked
each call against what the object says now (pointer, shape, dtype), so in-place changes
(set_, resize_, .data =) and objects that die and are replaced are seen; the producer's
current stream is ordered before the kernel on every call, hits included. Skipped without
CUDA (and without torch/CuPy for their tests)."""

from __future__ import annotations

import gc

import numpy as np
import pytest

import metalcall as mc

HAS_CUDA = "cuda" in mc.backends() and any(d.backend == "cuda" for d in mc.get_devices())

SRC = """
kernel void mul(const device float* a [[buffer(0)]], const device float* b [[buffer(1)]],
                device float* c [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    c[i] = a[i] * b[i];
}
kernel void add_one(device int* a [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    a[i] = a[i] + 1;
}
"""


@pytest.fixture
def torch_cuda():
    torch = pytest.importorskip("torch", reason="torch is not installed here")
    if not HAS_CUDA or not torch.cuda.is_available():
        pytest.skip("no CUDA device for torch and metalcall")
    return torch


@pytest.fixture
def cupy_cuda():
    cupy = pytest.importorskip("cupy", reason="CuPy is not installed here")
    if not HAS_CUDA:
        pytest.skip("no CUDA device")
    return cupy


class Interface:
    """An object with only __cuda_array_interface__ (as a Numba device array has), over a
    torch tensor, naming `stream` (None: no synchronisation needed, per the protocol)."""

    def __init__(self, tensor, stream=None):
        self.tensor = tensor
        self.stream = stream

    @property
    def __cuda_array_interface__(self):
        t = self.tensor
        return {"data": (t.data_ptr(), False), "shape": tuple(t.shape), "typestr": "<f4", "strides": None,
                "version": 3, "stream": self.stream}


def test_repeated_calls_reuse_the_import_and_stay_correct(torch_cuda):
    torch = torch_cuda
    dev = mc.Device("cuda")
    mul = dev.compile(SRC).mul
    n = 1000
    a = torch.rand(n, device="cuda")
    b = torch.rand(n, device="cuda")
    c = torch.empty(n, device="cuda")
    for k in range(5):
        a.mul_(1.5)  # torch work on the default stream before each call
        mul(n, a, b, c)
        torch.testing.assert_close(c, a * b, rtol=0, atol=0)


def test_in_place_changes_are_seen(torch_cuda):
    torch = torch_cuda
    dev = mc.Device("cuda")
    mul = dev.compile(SRC).mul
    a = torch.full((64,), 2.0, device="cuda")
    b = torch.full((64,), 3.0, device="cuda")
    c = torch.zeros(64, device="cuda")
    mul(64, a, b, c)
    assert torch.all(c == 6.0).item()
    c.set_(torch.zeros(64, device="cuda"))  # new memory under the same object
    a.data = torch.full((64,), 5.0, device="cuda")
    mul(64, a, b, c)
    assert torch.all(c == 15.0).item()
    c.resize_(128)  # a new shape (and maybe memory)
    c.zero_()
    mul(64, a, b, c)
    assert torch.all(c[:64] == 15.0).item() and torch.all(c[64:] == 0.0).item()
    with pytest.raises(mc.ArgumentError):  # now too short for a grid of 128 over a, b
        mul(128, a, b, c)


def test_objects_that_die_are_not_confused_with_new_ones(torch_cuda):
    torch = torch_cuda
    dev = mc.Device("cuda")
    add_one = dev.compile(SRC).add_one
    for k in range(50):  # new tensors often reuse a dead one's address (and id)
        t = torch.full((k + 1,), k, dtype=torch.int32, device="cuda")
        add_one(k + 1, t)
        assert torch.all(t == k + 1).item()
        del t
        gc.collect()


def test_side_stream_producer_is_ordered_on_every_call(torch_cuda):
    torch = torch_cuda
    dev = mc.Device("cuda")
    mul = dev.compile(SRC).mul
    n = 1 << 24
    sides = [torch.cuda.Stream(), torch.cuda.Stream()]
    out = torch.zeros(n, device="cuda")
    a = torch.zeros(n, device="cuda")
    # The first call imports, the next ones hit the cache; the producer's current stream
    # changes between calls, so the order must follow what torch says at each call.
    for call, value in enumerate((3.0, 4.0, 5.0, 6.0)):
        side = sides[call % 2]
        # torch's own rule: a side stream waits for the default stream's work on the tensors
        # (the zero fills above, the check below); without it torch itself races.
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            a.fill_(value)
            for _ in range(20):  # long enough to race with an unordered launch
                a.mul_(1.0).add_(0.0)
            mul(n, a, a, out)  # a statement call waits
        wrong = int((out != value * value).sum().item())
        assert wrong == 0, f"call {call}: {wrong} of {n} results wrong (the kernel ran before the producer's work)"


def test_interface_objects_and_their_streams(torch_cuda):
    torch = torch_cuda
    dev = mc.Device("cuda")
    mul = dev.compile(SRC).mul
    n = 1 << 24
    side = torch.cuda.Stream()
    a = torch.zeros(n, device="cuda")
    out = torch.zeros(n, device="cuda")
    view_a, view_out = Interface(a, side.cuda_stream), Interface(out, side.cuda_stream)
    for value in (2.0, 7.0):
        side.wait_stream(torch.cuda.current_stream())  # torch's rule for the default stream's zero fills
        with torch.cuda.stream(side):
            a.fill_(value)
            for _ in range(20):
                a.mul_(1.0).add_(0.0)
        mul(n, view_a, view_a, view_out)  # our stream waits for `side` on every call
        side.synchronize()
        assert torch.all(out == value * value).item()
    with pytest.raises(mc.ArgumentError, match="stream 0"):
        mul(n, Interface(a, 0), view_a, view_out)


def test_non_contiguous_tensor_is_an_argument_error(torch_cuda):
    torch = torch_cuda
    dev = mc.Device("cuda")
    mul = dev.compile(SRC).mul
    m = torch.rand(8, 8, device="cuda")
    with pytest.raises(mc.ArgumentError, match="argument 0: .*not C-contiguous"):
        mul(8, m.t(), m, torch.empty(64, device="cuda"))


def test_cupy_arrays_on_a_side_stream(cupy_cuda):
    cupy = cupy_cuda
    dev = mc.Device("cuda")
    mul = dev.compile(SRC).mul
    n = 1 << 22
    stream = cupy.cuda.Stream(non_blocking=True)
    a = cupy.zeros(n, dtype=cupy.float32)
    out = cupy.zeros(n, dtype=cupy.float32)
    cupy.cuda.Device().synchronize()  # the zero fills (default stream) before the side stream's work
    for value in (3.0, 6.0, 9.0):  # an import, then cache hits
        with stream:  # CuPy's interface names its current stream: ours waits for it
            a.fill(value)
            for _ in range(10):
                a *= 1.0
            mul(n, a, a, out)
        cupy.testing.assert_array_equal(out, cupy.full(n, value * value, dtype=cupy.float32))
