"""Foreign GPU arrays as kernel arguments through the per-object import cache (P2.2 item 1;
cpp/python/gpu_import.cpp, cached_gpu_argument): the producer's current stream is
ordered before the kernel on every call, cache hits included (torch side streams, CuPy streams,
__cuda_array_interface__ objects naming theirs). In-place changes, dead objects and views are
tests/test_foreign_arguments.py's, on every device. Skipped without
CUDA (and without torch/CuPy for their tests)."""

from __future__ import annotations

import pytest

import metalcall as mc
from mctest import FOREIGN_SRC, cuda_present

HAS_CUDA = cuda_present()
SRC = FOREIGN_SRC


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


_SLOW_FILL = """
kernel void slow_fill(device float* out [[buffer(0)]], constant float& v [[buffer(1)]],
                      constant uint& steps [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    uint x = i;
    for (uint k = 0; k < steps; ++k) x = x * 1664525u + 1013904223u;
    out[i] = (x == 12345u && steps == 7u) ? -1.0f : v;  // x decides nothing: the loop only takes time
}
"""


def test_default_stream_work_and_ours_are_ordered_both_ways_without_waiting(torch_cuda):
    """The device's stream is a blocking one: torch's default (legacy) stream work queued before
    a call comes first with no event (the call skips it), and torch's default-stream work queued
    after a call that nobody waited for comes after the call's kernel."""
    torch = torch_cuda
    dev = mc.Device("cuda")
    lib = dev.compile(SRC + _SLOW_FILL)
    mul, slow_fill = lib.mul, lib.slow_fill
    n = 1 << 22
    a, b, out = torch.zeros(n, device="cuda"), torch.ones(n, device="cuda"), torch.zeros(n, device="cuda")
    torch.cuda.synchronize()
    for value in (2.0, 3.0, 4.0):
        a.fill_(value)
        for _ in range(20):  # long enough to race with an unordered launch
            a.mul_(1.0).add_(0.0)
        mul(n, a, b, out)  # a statement call waits for our kernel, not for torch's
        wrong = int((out != value).sum().item())
        assert wrong == 0, f"{wrong} of {n} results wrong: the kernel ran before torch's default-stream work"
    for value in (5.0, 6.0):
        done = slow_fill(1 << 16, out, value, 200_000)  # kept: nothing waits for it here
        total = float(out[: 1 << 16].sum().item())  # torch's default stream: after our kernel
        assert total == value * (1 << 16), "torch's default stream read before our kernel had written"
        done.wait()


@pytest.mark.parametrize("how", ["statement", "wait", "synchronize", "kept"])
def test_producers_are_let_go_once_their_work_is_found_done(torch_cuda, how):
    """A foreign tensor is kept alive while a call's work may use it, and let go once a wait finds
    that work done (a statement call's dropped Completion, Completion.wait(), dev.synchronize()),
    with the GIL back at the end of the wait; the results are the kernel's."""
    import gc
    import weakref

    torch = torch_cuda
    dev = mc.Device("cuda")
    twice = dev.compile(SRC).twice
    kept = []
    for step in range(3):
        t = torch.full((1 << 20,), float(step + 1), device="cuda")
        out = t  # the result, read after the producer's own reference is gone
        ref = weakref.ref(t)
        if how == "statement":
            twice(1 << 20, t)
        else:
            c = twice(1 << 20, t)
        del t
        got = out  # still referenced here: the check below is about metalcall's keep-alive alone
        del out
        if how == "wait":
            c.wait()
        elif how == "synchronize":
            dev.synchronize()
        elif how == "kept":
            kept.append(c)  # a Completion kept after its work is done keeps no producer
            c.wait()
        assert float(got[0].item()) == 2.0 * (step + 1) and float(got[-1].item()) == 2.0 * (step + 1)
        del got
        if how != "statement":
            del c
        gc.collect()
        assert ref() is None, f"{how}: the tensor is still referenced after its work was found done"


def _producer(request, name):
    """(zeros(n), count_nonzero(x)) of torch or CuPy on the GPU."""
    if name == "torch":
        torch = request.getfixturevalue("torch_cuda")
        return (lambda n: torch.zeros(n, device="cuda")), (lambda x: int((x != 0).sum().item()))
    cupy = request.getfixturevalue("cupy_cuda")
    return (lambda n: cupy.zeros(n, dtype=cupy.float32)), (lambda x: int(cupy.count_nonzero(x)))


@pytest.mark.parametrize("producer", ["torch", "cupy"])
@pytest.mark.parametrize("how", ["kept", "batch"])
def test_a_dropped_producer_lives_until_the_work_on_it_is_done(request, producer, how):
    """A foreign array dropped while a call's work on it may still run is not freed (a kept
    Completion holds it until a wait finds the work done; a batch's Buffers hold theirs): its
    library cannot hand the memory to a new array that the kernel would then write. The new
    arrays stay zero, and the dropped one is let go of once the work is found done."""
    import gc
    import weakref

    zeros, nonzero = _producer(request, producer)
    dev = mc.Device("cuda")
    slow_fill = dev.compile(SRC + _SLOW_FILL).slow_fill
    n = 1 << 16
    for _ in range(3):
        x = zeros(n)
        ref = weakref.ref(x)
        if how == "kept":
            done = slow_fill(n, x, 7.0, 400_000)  # kept: nothing waits for it yet
        else:
            with dev.batch() as done:
                slow_fill(n, x, 7.0, 400_000)
        del x
        gc.collect()
        fresh = [zeros(n) for _ in range(4)]  # a freed block of the same size would be handed back
        if how == "kept" or not done.done:
            assert ref() is not None, "the array was let go of while the work on it may still run"
        done.wait()
        assert [nonzero(f) for f in fresh] == [0] * 4, "the kernel wrote into memory handed to a new array"
        del done
        gc.collect()
        assert ref() is None, "the array is still referenced after its work was found done"


def test_a_cycle_through_a_held_producer_is_collected(torch_cuda):
    """A Completion kept on its own producer (a reference cycle) is found by the cycle collector:
    the tensor is freed once the collector drops the handle, which waits for the work first (new
    tensors that get its memory stay zero). (A view of the tensor would keep it: `_base`.)"""
    import gc
    import weakref

    torch = torch_cuda
    dev = mc.Device("cuda")
    slow_fill = dev.compile(SRC + _SLOW_FILL).slow_fill
    n = 1 << 16
    for _ in range(3):
        t = torch.zeros(n, device="cuda")
        ref = weakref.ref(t)
        t.pending = slow_fill(n, t, 7.0, 400_000)
        del t
        gc.collect()
        assert ref() is None, "the tensor and the Completion it holds were never collected"
        fresh = [torch.zeros(n, device="cuda") for _ in range(4)]  # freed blocks are handed back
        dev.synchronize()
        assert [int((f != 0).sum().item()) for f in fresh] == [0] * 4, "the tensor was freed under the kernel"
