"""The C++ path of an elementwise operation (cpp/python/lazy_nodes.cpp) makes the same lazy array,
Op, Leaf and Scalar objects as apply()'s Python path, falls back to it where it must (broadcasting,
evaluated operands, new types, large expressions, other arrays), leaks no reference, and keeps
laziness safe (a write evaluates the readers it registered)."""

from __future__ import annotations

import gc
import sys
import weakref

import numpy as np
import pytest

import metalcall.numpy as mnp
from metalcall.numpy import _elementwise as E
from metalcall.numpy import _fusion as F
from mnp_check import check


def _python_path(monkeypatch):
    monkeypatch.setattr(E, "_lazy_apply", lambda op, xs: None)


def _describe(node, seen=None):
    """A node's structure and values, leaves by their buffer's identity."""
    if isinstance(node, F.Leaf):
        return ("leaf", id(node.buf), node.offset, node.shape, node.strides, node.dtype, node._ids)
    if isinstance(node, F.Scalar):
        return ("scalar", type(node.value), node.value, node.dtype)
    return ("op", node.op, node.dtype, node.ct, node.shape, node.buf, node.size, node._ids,
            tuple(_describe(a) for a in node.args))


def _array_state(a):
    return (a._buf, a._offset, a._shape, a._strides, a._dtype, a._device, a._readonly, _describe(a._node))


EXPRESSIONS = [
    lambda x, y: mnp.sin(x) * y + 2,
    lambda x, y: (x - y) * (x + y) / 3.0,
    lambda x, y: mnp.where(x > y, x, y) + True,
    lambda x, y: mnp.maximum(x, 1) - mnp.abs(y) * 2,
    lambda x, y: x * x + x,  # one lazy operand twice
    lambda x, y: -(x * 2),
    lambda x, y: (x * 3 + y[0]) // 2,  # a Python int; a 0-d operand
]


@pytest.mark.parametrize("expr", EXPRESSIONS)
def test_same_objects_as_the_python_path(device, monkeypatch, expr):
    a = np.linspace(-2, 2, 37, dtype=np.float32)
    b = np.linspace(1, 3, 37, dtype=np.float32)
    x, y = mnp.asarray(a, device=device), mnp.asarray(b, device=device)
    expr(x, y)  # resolves the types: later calls take the C++ path
    fast = expr(x, y)
    with monkeypatch.context() as m:
        _python_path(m)
        slow = expr(x, y)
    assert _array_state(fast) == _array_state(slow)
    assert fast.is_lazy
    check(fast, np.asarray(slow))


def test_fast_path_taken_for_resolved_types(device):
    x = mnp.asarray(np.arange(8, dtype=np.float32), device=device)
    x * 2.0
    out = E._lazy_apply("multiply", (x, 2.0))
    assert out is not None and out.is_lazy and out._node.op == "multiply"
    check(out, np.arange(8, dtype=np.float32) * 2)


@pytest.mark.parametrize("case", ["broadcast", "unresolved", "numpy-operand", "numpy-scalar"])
def test_falls_back_where_it_must(device, case):
    x = mnp.asarray(np.arange(12, dtype=np.float32).reshape(3, 4), device=device)
    row = mnp.asarray(np.arange(4, dtype=np.float32), device=device)
    x * row
    if case == "broadcast":
        operands = (x, row)
    elif case == "unresolved":
        operands = (x, mnp.asarray(np.ones((3, 4), np.int8), device=device))
        op = "nextafter"
    elif case == "numpy-operand":
        operands = (x, np.ones((3, 4), np.float32))
    else:
        operands = (x, np.float32(2))
    assert E._lazy_apply(op if case == "unresolved" else "multiply", operands) is None


def test_operand_with_an_evaluated_subexpression(device, monkeypatch):
    a = np.arange(6, dtype=np.float32)
    x = mnp.asarray(a, device=device)
    y = x + 1.0
    w = y * 2.0
    y.evaluate()  # w's expression now reads y's buffer
    w + 1.0
    fast = w + 1.0
    with monkeypatch.context() as m:
        _python_path(m)
        slow = w + 1.0
    assert _array_state(fast) == _array_state(slow)
    check(fast, (a + 1) * 2 + 1)


def test_large_expressions_are_bounded_by_the_python_path(device):
    a = np.linspace(0, 1, 16, dtype=np.float32)
    x = mnp.asarray(a, device=device)
    y, want = x, a.copy()
    for k in range(2 * F.MAX_NODES):
        y = y * 1.0 + x
        want = want * np.float32(1.0) + a
        # apply()'s bound counts the lazy operands (and the new node): the Leaf and Scalar
        # operands of the last operation may take it past MAX_NODES by their number.
        assert y._node is None or y._node.size <= F.MAX_NODES + 2
    check(y, want, rtol=1e-5)


def test_no_reference_is_leaked(device):
    x = mnp.asarray(np.ones(16, np.float32), device=device)
    y = mnp.asarray(np.ones(16, np.float32), device=device)
    x * y + 2.0
    gc.collect()
    held = [sys.getrefcount(o) for o in (x._buf, x._shape, x._dtype, x._device, y._buf)]
    for _ in range(2000):
        z = x * y + 2.0
        r, rn = weakref.ref(z), weakref.ref(z._node)
        del z
        assert r() is None and rn() is None
    gc.collect()
    assert [sys.getrefcount(o) for o in (x._buf, x._shape, x._dtype, x._device, y._buf)] == held


def test_writes_evaluate_readers_made_by_the_fast_path(device):
    a = np.arange(6, dtype=np.float32)
    x = mnp.asarray(a, device=device)
    x * 3.0
    y = x * 3.0  # lazy, reads x
    assert y.is_lazy
    x[0] = 100.0  # must evaluate y first
    check(y, a * 3)
    check(x, np.concatenate([[100.0], a[1:]]).astype(np.float32))


def test_eager_mode(device):
    x = mnp.asarray(np.arange(5, dtype=np.float32), device=device)
    x + 1.0
    with mnp.lazy(False):
        y = x + 1.0
        assert not y.is_lazy
    check(y, np.arange(5, dtype=np.float32) + 1)
