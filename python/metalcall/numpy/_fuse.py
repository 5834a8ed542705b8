"""Explicit control of fusion: mnp.evaluate(*arrays) runs pending expressions (arrays of one shape
and device share ONE kernel with several outputs), mnp.explain(x) shows the kernel source, and
`with mnp.fuse():` / `@mnp.jit` evaluate what the block or function produced when it ends."""

from __future__ import annotations

import contextlib
import functools
import weakref

from . import _fusion as F
from . import _runtime as R
from ._array import ndarray


def evaluate(*arrays):
    """Evaluates lazy arrays; those of one device and shape are computed by one generated kernel."""
    groups = {}
    for a in arrays:
        if isinstance(a, ndarray) and a.is_lazy:
            groups.setdefault((id(a.device), a.shape), []).append(a)
        elif isinstance(a, ndarray):
            a._materialize()
    for group in groups.values():
        uniq = list({id(a._node): a for a in group}.values())
        if len(uniq) == 1:
            uniq[0]._materialize()
            continue
        dev, shape = uniq[0].device, uniq[0].shape
        items = []
        for a in uniq:
            buf = R.result_buffer(dev, shape, a.dtype)
            items.append((a._node, (buf, 0, a._strides, a.dtype, shape)))
        F.run(items, dev)
        for a, (node, dest) in zip(uniq, items):
            node.buf = dest[0]
        for a in group:
            a._materialize()
    return arrays[0] if len(arrays) == 1 else arrays


def explain(*arrays):
    """The MSL source the pending expression(s) would compile to; '' for evaluated arrays."""
    lazy = [a for a in arrays if isinstance(a, ndarray) and a.is_lazy]
    if not lazy:
        return ""
    return F.source_of([a._node for a in lazy], lazy[0].device, lazy[0].shape)


@contextlib.contextmanager
def fuse():
    """``with mnp.fuse():`` — the elementwise work written inside is evaluated when the block ends,
    one kernel per result shape (results of one shape share a kernel). Arrays stay lazy inside."""
    before = {k: weakref.ref(a) for k, a in F._LIVE_LAZY.items()}
    yield
    made = [a for k, a in F._LIVE_LAZY.items() if k not in before or before[k]() is not a]
    evaluate(*made) if made else None


def jit(fn):
    """``@mnp.jit``: calls fn (elementwise code builds one lazy expression) and evaluates its
    array results together, so the whole function body becomes one kernel per output shape."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        out = fn(*args, **kwargs)
        outs = out if isinstance(out, (tuple, list)) else (out,)
        evaluate(*[o for o in outs if isinstance(o, ndarray)])
        return out

    return wrapper
