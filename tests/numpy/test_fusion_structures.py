"""Fused kernels of a structure seen before launch from the compiled walk (cpp/python/fusion.cpp):
what makes two expressions the same structure must be exactly what their kernels differ by. Each
test evaluates expressions that share everything but one thing, in both orders, and checks every
result against NumPy: a key that missed the difference would run the first one's kernel."""

import numpy as np
import pytest

import metalcall as mc
import metalcall.numpy as mnp
from metalcall import _core
from metalcall.numpy import _fusion as F
from mctest import run_threads
from mnp_check import check


def _arrays(device, *host):
    return [mnp.asarray(h, device=device) for h in host]


@pytest.mark.parametrize("first", [0, 1])
def test_one_input_twice_against_two_inputs(device, first):
    a = np.linspace(-2, 2, 64, dtype=np.float32)
    b = np.linspace(1, 3, 64, dtype=np.float32)
    x, y = _arrays(device, a, b)
    cases = [(lambda: mnp.sin(x) * x + 1, np.sin(a) * a + 1), (lambda: mnp.sin(x) * y + 1, np.sin(a) * b + 1)]
    for make, want in cases[first:] + cases[:first]:
        for _ in range(2):  # the second evaluation takes the registered plan
            check(make(), want, rtol=1e-5, atol=1e-6)


def test_same_structure_new_buffers_values_and_scalars(device):
    rng = np.random.default_rng(1)
    for k in range(4):
        a, b = rng.random(100, dtype=np.float32), rng.random(100, dtype=np.float32)
        x, y = _arrays(device, a, b)
        s = 0.5 + k
        check(mnp.exp(x) * y - s, np.exp(a) * b - np.float32(s), rtol=1e-5, atol=1e-6)


def test_offsets_strides_and_broadcasts_are_told_apart(device):
    base = np.arange(48, dtype=np.float32).reshape(6, 8)
    row = np.linspace(0, 1, 8, dtype=np.float32)
    col = np.linspace(2, 3, 6, dtype=np.float32).reshape(6, 1)
    X, r, c = _arrays(device, base, row, col)
    cases = [
        (lambda: X[:, :4] * 2 + X[:, 4:], base[:, :4] * 2 + base[:, 4:]),       # two offsets into one buffer
        (lambda: X[:, :4] * 2 + X[:, :4], base[:, :4] * 2 + base[:, :4]),       # the same view twice
        (lambda: X[1:5, :4] * 2 + X[:4, 4:], base[1:5, :4] * 2 + base[:4, 4:]),
        (lambda: X[::2, ::2] * 2 + X[1::2, 1::2], base[::2, ::2] * 2 + base[1::2, 1::2]),  # strided
        (lambda: X * 2 + r, base * 2 + row),                                    # broadcast row
        (lambda: X * 2 + c, base * 2 + col),                                    # broadcast column
        (lambda: X * 2 + X, base * 2 + base),
        (lambda: X.T * 2 + X.T, base.T * 2 + base.T),                           # transposed
    ]
    for _ in range(2):
        for make, want in cases + cases[::-1]:
            check(make(), want)


def test_input_layouts_are_told_apart(device):
    """The same operations on operands of another layout: from element 0, from an offset,
    broadcast from one element, strided (and an output written through an offset)."""
    a = np.arange(40, dtype=np.float32)
    b = np.linspace(5, 6, 40, dtype=np.float32)
    x, y = _arrays(device, a, b)
    A, B = _arrays(device, a.reshape(5, 8), b.reshape(5, 8))
    one = mnp.asarray(np.full((1, 1), 7, np.float32), device=device)
    row = mnp.asarray(b[:8].copy(), device=device)
    cases = [
        (lambda: x[:36] * 2 + y[:36], a[:36] * 2 + b[:36]),
        (lambda: x[4:] * 2 + y[:36], a[4:] * 2 + b[:36]),
        (lambda: x[:36] * 2 + y[4:], a[:36] * 2 + b[4:]),
        (lambda: x[::2] * 2 + y[:20], a[::2] * 2 + b[:20]),
        (lambda: A * 2 + B, a.reshape(5, 8) * 2 + b.reshape(5, 8)),
        (lambda: A * 2 + one, a.reshape(5, 8) * 2 + 7),
        (lambda: A * 2 + row, a.reshape(5, 8) * 2 + b[:8]),
        (lambda: A[:, ::2] * 2 + B[:, :4], a.reshape(5, 8)[:, ::2] * 2 + b.reshape(5, 8)[:, :4]),
    ]
    for _ in range(2):
        for make, want in cases + cases[::-1]:
            check(make(), want)
    for start in (0, 4, 0, 4):  # the output from element 0, then through an offset
        out = mnp.zeros(44, dtype=mnp.float32, device=device)
        out[start:start + 40] = x * 3 + y
        want = np.zeros(44, np.float32)
        want[start:start + 40] = a * 3 + b
        check(out, want)


def test_dtypes_are_part_of_the_structure(device):
    a = np.arange(1, 33, dtype=np.float32)
    for dt in (np.float32, np.int32, np.uint8, np.int16, np.float32):
        x = mnp.asarray(a.astype(dt), device=device)
        check(x * x + x, a.astype(dt) * a.astype(dt) + a.astype(dt))
        check(x * 3, a.astype(dt) * dt(3))


def test_a_shared_subexpression_and_an_evaluated_one(device):
    a = np.linspace(0, 1, 40, dtype=np.float32)
    (x,) = _arrays(device, a)
    t = mnp.cos(x)
    u = t * t + t
    check(u, np.cos(a) * np.cos(a) + np.cos(a), rtol=1e-5, atol=1e-6)
    t2 = mnp.cos(x)
    v = t2 * t2 + t2  # the same structure; then with t2 evaluated, a different one
    t3 = mnp.cos(x)
    t3.evaluate()
    w = t3 * t3 + t3
    check(v, np.cos(a) * np.cos(a) + np.cos(a), rtol=1e-5, atol=1e-6)
    check(w, np.cos(a) * np.cos(a) + np.cos(a), rtol=1e-5, atol=1e-6)
    assert mnp.explain(t3 * t3 + t3).count("cos") == 0  # reads t3's buffer


def test_several_outputs_in_one_kernel_and_past_the_argument_table(device):
    rng = np.random.default_rng(2)
    hs = [rng.random(16, dtype=np.float32) for _ in range(12)]
    xs = _arrays(device, *hs)
    # twelve outputs of two inputs each: more buffers than Metal's table holds, split in halves
    for _ in range(2):
        outs = [xs[k] * xs[(k + 1) % 12] + k for k in range(12)]
        got = mnp.evaluate(*outs)
        for k, g in enumerate(got):
            check(g, hs[k] * hs[(k + 1) % 12] + np.float32(k))


def test_writes_into_views_take_the_strided_output(device):
    a = np.arange(20, dtype=np.float32)
    for _ in range(2):
        x = mnp.asarray(a.copy(), device=device)
        x[::2] = mnp.asarray(a[1::2], device=device) * 10
        want = a.copy()
        want[::2] = a[1::2] * 10
        check(x, want)


def test_walk_refuses_what_is_not_an_expression():
    with pytest.raises(TypeError):
        _core._fusion_walk([])
    with pytest.raises(TypeError):
        _core._fusion_walk([(object(), (None, 0, (1,), np.dtype(np.float32), (1,)))])
    with pytest.raises(TypeError):
        _core._fusion_walk([("not a node",)])
    with pytest.raises(TypeError):
        _core._fusion_launch(None, [], True)


def test_walk_describes_entries_as_the_generator_reads_them():
    buf = mc.Device("cpu").empty(8, np.float32)
    f4 = np.dtype(np.float32)
    x = F.Leaf(buf, 0, (8,), (1,), f4)
    y = F.Leaf(buf, 2, (2, 1), (3, 5), f4)
    node = F.Op("add", [F.Op("mul", [x, x], f4, f4, (8,)), F.Scalar(2.0, f4)], f4, f4, (8,))
    entries, outs, inputs, scalars, key, nd = _core._fusion_walk([(node, (buf, 0, (1,), f4, (8,)))])
    assert entries == (("in", 0, f4, "c0"), ("op", "mul", f4, f4, (0, 0)), ("sc", 0, f4), ("op", "add", f4, f4, (1, 2)))
    assert outs == ((3, f4, "c0"),)
    assert inputs == [(buf, 0, (1,), "c0")] and len(scalars) == 1 and isinstance(key, bytes) and nd == 1
    row = F.Leaf(buf, 0, (4,), (1,), f4)
    bc = F.Op("mul", [y, row], f4, f4, (2, 4))
    entries, outs, inputs, _, key2, nd = _core._fusion_walk([(bc, (buf, 1, (4, 1), f4, (2, 4)))])
    assert inputs == [(buf, 2, (3, 0), "sb"), (buf, 0, (0, 1), "su")]
    assert outs == ((2, f4, "c"),) and key2 != key and nd == 2


def test_threads_evaluating_structures_at_once(device):
    """Threads building, registering and launching structures at the same time (the launch runs
    Python code for scalars and parameters, where another thread may run)."""
    a = np.linspace(-1, 1, 256, dtype=np.float32)
    x = mnp.asarray(a, device=device)

    def work(k):
        for i in range(40):
            s = float(k * 100 + i)
            if i % 2:
                got, want = (x * s + k) * x - i, (a * np.float32(s) + np.float32(k)) * a - np.float32(i)
            else:
                got, want = mnp.exp(x) * s + k, np.exp(a) * np.float32(s) + np.float32(k)
            np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-5)

    assert run_threads(work, 4) == []
