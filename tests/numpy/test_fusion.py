"""Elementwise fusion: a chain is ONE generated kernel (each input read once, one write), the
source is inspectable, laziness never changes results (writes evaluate readers first), graphs
stay bounded, and mnp.fuse / mnp.jit / mnp.evaluate control evaluation."""

import numpy as np

import metalcall.numpy as mnp
from mnp_check import check


def test_chain_is_one_kernel(device):
    a = np.linspace(-3, 3, 1000, dtype=np.float32)
    b = np.linspace(1, 2, 1000, dtype=np.float32)
    x, y = mnp.asarray(a, device=device), mnp.asarray(b, device=device)
    z = mnp.sin(x) * y + 2
    assert z.is_lazy
    src = mnp.explain(z)
    assert src == z.source
    assert src.count("kernel void") == 1
    assert src.count("device const float") == 2  # x and y, each read once (CUDA: as float4s)
    assert src.count("out0[") == 1  # one write
    assert "sin(" in src
    check(z, np.sin(a) * b + 2, rtol=1e-6)
    assert not z.is_lazy and z.source is None


def test_shared_input_read_once(device):
    x = mnp.asarray(np.arange(5, dtype=np.float32), device=device)
    z = x * x + x
    assert mnp.explain(z).count("device const float*") == 1
    check(z, np.arange(5, dtype=np.float32) ** 2 + np.arange(5, dtype=np.float32))


def test_scalars_are_arguments_not_source(device):
    x = mnp.asarray(np.arange(4, dtype=np.float32), device=device)
    assert mnp.explain(x * 2.5 + 1) == mnp.explain(x * 3.5 + 7)


def test_write_evaluates_lazy_readers_first(device):
    a = np.arange(6, dtype=np.float32)
    x = mnp.asarray(a, device=device)
    y = x + 1  # lazy, reads x
    x[2:] = 100
    check(y, a + 1)
    z = x * 2
    x += 1
    check(z, np.where(np.arange(6) >= 2, 100, a).astype(np.float32) * 2)
    w = mnp.sin(x)
    v = np.asarray(x)  # a writable host view: readers are evaluated before handing it out
    v[:] = 0
    check(w, np.sin(np.where(np.arange(6) >= 2, 101, a + 1).astype(np.float32)), rtol=1e-6)


def test_overlapping_in_place(device):
    a = np.arange(8, dtype=np.int32)
    x = mnp.asarray(a, device=device)
    x[1:] += x[:-1]
    e = a.copy()
    e[1:] += a[:-1].copy()
    check(x, e)


def test_long_chains_stay_bounded(device):
    a = np.linspace(0, 1, 100, dtype=np.float32)
    x = mnp.asarray(a, device=device)
    y, e = x, a
    for i in range(300):
        y = y * 0.5 + x
        e = e * np.float32(0.5) + a
    check(y, e, rtol=1e-5)
    many = [mnp.asarray(a + i, device=device) for i in range(40)]
    s = many[0]
    for m in many[1:]:
        s = s + m
    check(s, sum(a + i for i in range(40)), rtol=1e-6)


def test_evaluate_shares_one_kernel(device):
    x = mnp.asarray(np.arange(4, dtype=np.float32), device=device)
    p, q = mnp.sin(x), mnp.cos(x) + 1
    src = mnp.explain(p, q)
    assert src.count("kernel void") == 1 and "out1[" in src
    mnp.evaluate(p, q)
    assert not p.is_lazy and not q.is_lazy
    check(p, np.sin(np.arange(4, dtype=np.float32)), rtol=1e-6)
    check(q, np.cos(np.arange(4, dtype=np.float32)) + 1, rtol=1e-6)


def test_fuse_jit_and_eager(device):
    x = mnp.asarray(np.arange(4, dtype=np.float32), device=device)
    with mnp.fuse():
        y = mnp.exp(x) - 1
        assert y.is_lazy
    assert not y.is_lazy

    @mnp.jit
    def gelu(v):
        return 0.5 * v * (1 + mnp.tanh(0.7978845608 * (v + 0.044715 * v * v * v)))

    g = gelu(x)
    assert not g.is_lazy
    a = np.arange(4, dtype=np.float32)
    check(g, 0.5 * a * (1 + np.tanh(np.float32(0.7978845608) * (a + np.float32(0.044715) * a * a * a))), rtol=1e-5)
    with mnp.lazy(False):
        z = x + 1
        assert not z.is_lazy
    check(z, a + 1)


def test_views_of_lazy_results(device):
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    x = mnp.asarray(a, device=device)
    y = (x * 2)[1:, ::2]
    check(y, (a * 2)[1:, ::2])
    check((x + 1).T.reshape(12), (a + 1).T.reshape(12))


def test_write_into_an_evaluated_operand(device):
    a0 = np.arange(4, dtype=np.float32)
    x = mnp.asarray(a0, device=device)
    a = x + 1
    b = a * 2  # reads a's node
    a.evaluate()  # b now reads a's buffer
    a += 5
    check(b, (a0 + 1) * 2)
    check(a, a0 + 6)


def test_many_views_of_one_buffer_stay_bounded(device):
    a = np.arange(100, dtype=np.float32)
    x = mnp.asarray(a, device=device)
    s = x[0:60]
    e = a[0:60].copy()
    for k in range(1, 40):
        s = s + x[k:k + 60]
        e = e + a[k:k + 60]
    assert mnp.explain(s).count("device const float*") <= 16
    check(s, e)


def _address(buf) -> int:
    return np.asarray(buf).__array_interface__["data"][0]


def test_result_buffers_are_recycled_only_when_free(device):
    # Results come from the device's allocator, which reuses freed Buffers' memory (CPU, CUDA).
    a = np.random.default_rng(0).random(1 << 19).astype(np.float32)  # 2 MiB: a cached size
    x = mnp.asarray(a, device=device)
    z = x * 2 + 2
    z.evaluate()
    first = _address(z._buf)
    del z
    mnp.synchronize(device)  # queued work holds its Buffers until done (CUDA reaps them at a wait)
    z2 = x * 3 + 3
    z2.evaluate()
    if device.backend in ("cpu", "cuda"):
        assert _address(z2._buf) == first  # nothing referred to the first result any more
    view = z2[10:]
    lazy = z2 * 5
    held = np.asarray(z2)
    reused = _address(z2._buf)
    del z2
    z3 = x + 1
    z3.evaluate()
    assert _address(z3._buf) != reused  # a view, a lazy reader and a host view keep it
    check(view, (a * 3 + 3)[10:])
    check(lazy, (a * 3 + 3) * 5, rtol=1e-6)
    check(held, a * 3 + 3)
    check(z3, a + 1)
    mnp.clear_pool()
    assert device.memory_info()["cached"] == 0


def test_large_results_in_flight_are_bounded(device, monkeypatch):
    """A loop of large elementwise results keeps at most LARGE_IN_FLIGHT bytes of them queued
    (the oldest is waited for), so the pool reuses their blocks; every result stays right."""
    from metalcall.numpy import _runtime as R

    n = 4096
    monkeypatch.setattr(R, "LARGE_RESULT", n * 4)
    monkeypatch.setattr(R, "LARGE_IN_FLIGHT", 3 * n * 4)
    mnp.synchronize(device)
    a = np.linspace(-2, 2, n, dtype=np.float32)
    b = np.linspace(1, 3, n, dtype=np.float32)
    x, y = mnp.asarray(a, device=device), mnp.asarray(b, device=device)
    results = []
    for k in range(12):
        results.append(((x + y) * (x - y) + float(k)).evaluate())
        assert R._large_bytes <= 3 * n * 4 and len(R._large) <= 3
    assert len(R._large) == 3
    for k, z in enumerate(results):
        check(z, (a + b) * (a - b) + np.float32(k), rtol=1e-6)
    mnp.synchronize(device)
    assert not R._large and R._large_bytes == 0
