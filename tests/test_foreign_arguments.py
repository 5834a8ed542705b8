"""torch tensors as kernel arguments without DLPack (cpp/python/foreign_arguments.cpp): each
call reads what the tensor says of its memory now (device, pointer, size, dtype, contiguity,
lazy negation/conjugation), so in-place changes (resize_, set_, .data =) and new tensors at a
dead one's address with another dtype or size are seen. On the CPU device host tensors are used
in place; on CUDA, CUDA tensors go through the per-object import cache (its stream ordering is
tests/test_gpu_argument_cache.py's). Runs where torch is installed (the CPU build of torch is
enough), on the CPU device and, where torch and metalcall both have one, on CUDA."""

from __future__ import annotations

import gc

import numpy as np
import pytest

import metalcall as mc
from mctest import FOREIGN_SRC, cuda_present

torch = pytest.importorskip("torch", reason="torch is not installed here")

SRC = FOREIGN_SRC

TARGETS = ["cpu"]
if cuda_present() and torch.cuda.is_available():
    TARGETS.append("cuda")


@pytest.fixture(params=TARGETS)
def target(request):
    """(metalcall device, torch device name, kernels)."""
    dev = mc.Device(request.param)
    return dev, request.param, dev.compile(SRC)


def test_repeated_calls_follow_the_values(target):
    dev, where, k = target
    rng = np.random.default_rng(0)
    a_np, b_np = rng.random(1000, dtype=np.float32), rng.random(1000, dtype=np.float32)
    a, b = torch.from_numpy(a_np.copy()).to(where), torch.from_numpy(b_np.copy()).to(where)
    c = torch.zeros(1000, device=where)
    for step in range(4):
        a.mul_(1.5)  # in place between calls: same object, pointer, size and dtype
        a_np = a_np * np.float32(1.5)
        k.mul(1000, a, b, c)
        np.testing.assert_array_equal(c.cpu().numpy(), a_np * b_np)


def test_resize_set_and_data_are_seen(target):
    dev, where, k = target
    a = torch.full((64,), 2.0, device=where)
    b = torch.full((64,), 3.0, device=where)
    c = torch.zeros(64, device=where)
    k.mul(64, a, b, c)
    assert torch.all(c == 6.0).item()
    c.set_(torch.zeros(64, device=where))  # new memory under the same object
    a.data = torch.full((64,), 5.0, device=where)
    k.mul(64, a, b, c)
    assert torch.all(c == 15.0).item()
    c.resize_(4096)  # a larger size (new memory, most likely)
    c.zero_()
    k.mul(64, a, b, c)
    np.testing.assert_array_equal(c.cpu().numpy(), np.r_[np.full(64, 15.0, np.float32), np.zeros(4032, np.float32)])
    c.resize_(16)  # smaller, same memory: the grid of 64 no longer fits
    with pytest.raises(mc.ArgumentError):
        k.mul(64, a, b, c)
    k.mul(16, a, b, c)
    np.testing.assert_array_equal(c.cpu().numpy(), np.full(16, 15.0, np.float32))


def test_new_tensors_at_a_dead_ones_address(target):
    """Tensors freed and made again often land at the same address (and id); a new one with
    another dtype or size must be described anew: an int32 kernel refuses float32 memory and
    writes exactly the elements of the tensor it is given."""
    dev, where, k = target
    for step in range(40):
        n = 16 + (step % 4) * 8
        if step % 2:
            t = torch.full((n,), float(step), dtype=torch.float32, device=where)
            with pytest.raises(mc.ArgumentError):
                k.add_one(n, t)  # float memory where the kernel takes int
            k.twice(n, t)
            np.testing.assert_array_equal(t.cpu().numpy(), np.full(n, 2.0 * step, np.float32))
        else:
            t = torch.full((n,), step, dtype=torch.int32, device=where)
            k.add_one(n, t)
            np.testing.assert_array_equal(t.cpu().numpy(), np.full(n, step + 1, np.int32))
        del t
        gc.collect()


def test_views_are_refused_or_read_in_place(target):
    dev, where, k = target
    m = torch.arange(64, dtype=torch.float32, device=where).reshape(8, 8)
    with pytest.raises(mc.ArgumentError, match="argument 0: .*not C-contiguous"):
        k.twice(64, m.t())
    row = m[2]  # a contiguous view at an offset: the kernel writes through it
    k.twice(8, row)
    want = np.arange(64, dtype=np.float32).reshape(8, 8)
    want[2] *= 2
    np.testing.assert_array_equal(m.cpu().numpy(), want)
    # Lazily negated views hold the values before negation: refused, not read wrong. (One
    # element: the imaginary part of a longer array is strided.)
    z = torch.tensor([1 + 2j], dtype=torch.complex64, device=where)
    with pytest.raises(mc.ArgumentError, match="negative bit"):
        k.twice(1, z.conj().imag)
    fixed = z.conj().imag.resolve_neg()
    k.twice(1, fixed)
    np.testing.assert_array_equal(fixed.cpu().numpy(), np.float32([-4.0]))
    # Lazily conjugated complex tensors likewise.
    w = torch.tensor([1 + 2j, 3 - 4j], dtype=torch.complex64, device=where)
    with pytest.raises(mc.ArgumentError, match="conjugate bit"):
        k.twice_complex(2, w.conj())
    c = w.conj().resolve_conj()
    k.twice_complex(2, c)
    np.testing.assert_array_equal(c.cpu().numpy(), np.complex64([2 - 4j, 6 + 8j]))


def test_requires_grad_is_refused(target):
    dev, where, k = target
    w = torch.ones(8, device=where, requires_grad=True)
    with pytest.raises(mc.ArgumentError, match="argument 0: .*requires grad"):
        k.twice(8, w)
    d = w.detach()
    k.twice(8, d)  # the same memory, without autograd
    np.testing.assert_array_equal(w.detach().cpu().numpy(), np.full(8, 2.0, np.float32))


def test_stream_handle(target):
    dev, where, k = target
    if where == "cpu":
        assert dev.stream_handle == 0
        return
    # torch work on the device's own stream: no ordering event needed, results still right.
    ours = torch.cuda.ExternalStream(dev.stream_handle)
    a = torch.zeros(1 << 20, device=where)
    with torch.cuda.stream(ours):
        a.fill_(3.0)
        k.twice(1 << 20, a)
    ours.synchronize()
    assert torch.all(a == 6.0).item()


def test_changes_after_a_cached_call_are_seen(target):
    """A tensor described once is checked again on the next call: an in-place transpose, a
    dtype view assigned to .data (same pointer and size) and requires_grad_() are each seen,
    not served from the last description."""
    dev, where, k = target
    m = torch.arange(16, dtype=torch.float32, device=where).reshape(4, 4)
    k.twice(16, m)  # described and kept
    m.t_()  # same memory, pointer and size; no longer C-contiguous
    with pytest.raises(mc.ArgumentError, match="argument 0: .*not C-contiguous"):
        k.twice(16, m)
    m.t_()
    k.twice(16, m)
    np.testing.assert_array_equal(m.cpu().numpy(), np.arange(16, dtype=np.float32).reshape(4, 4) * 4)
    t = torch.full((8,), 3.0, device=where)
    k.twice(8, t)
    t.data = t.view(torch.int32)  # the same memory as int32
    with pytest.raises(mc.ArgumentError):
        k.twice(8, t)  # float kernel, int32 memory
    bits = t.cpu().numpy().copy()
    k.add_one(8, t)
    np.testing.assert_array_equal(t.cpu().numpy(), bits + 1)
    w = torch.ones(8, device=where)
    k.twice(8, w)
    w.requires_grad_()
    with pytest.raises(mc.ArgumentError, match="requires grad"):
        k.twice(8, w)


def test_lazy_negation_assigned_after_a_cached_call_is_seen(target):
    """A negated view put in place through .data, at the same pointer, dtype and size as the
    tensor's last call: the negative bit is read each call, not taken from the last description."""
    dev, where, k = target
    z = torch.tensor([1 + 2j], dtype=torch.complex64, device=where)
    x = z.imag  # one float32 at z's second half, no negative bit
    k.twice(1, x)
    assert z.cpu().numpy()[0] == np.complex64(1 + 4j)
    negated = z.conj().imag
    assert negated.data_ptr() == x.data_ptr() and negated.is_neg()
    x.data = negated
    with pytest.raises(mc.ArgumentError, match="argument 0: .*negative bit"):
        k.twice(1, x)
    assert z.cpu().numpy()[0] == np.complex64(1 + 4j)  # nothing was written


class Tagged(torch.Tensor):
    """A torch.Tensor subclass: read through attribute lookups (a subclass may override them)."""


def test_subclasses_are_read_by_name(target):
    dev, where, k = target
    p = torch.nn.Parameter(torch.full((8,), 3.0, device=where), requires_grad=False)
    t = torch.full((8,), 5.0, device=where).as_subclass(Tagged)
    for _ in range(2):  # described, then from the kept entry
        k.twice(8, p)
        k.twice(8, t)
    np.testing.assert_array_equal(p.detach().cpu().numpy(), np.full(8, 12.0, np.float32))
    np.testing.assert_array_equal(t.cpu().numpy(), np.full(8, 20.0, np.float32))
    p.requires_grad_()
    with pytest.raises(mc.ArgumentError, match="argument 0: .*requires grad"):
        k.twice(8, p)
    m = torch.arange(16, dtype=torch.float32, device=where).reshape(4, 4).as_subclass(Tagged)
    k.twice(16, m)
    m.t_()
    with pytest.raises(mc.ArgumentError, match="argument 0: .*not C-contiguous"):
        k.twice(16, m)
