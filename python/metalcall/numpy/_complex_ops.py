"""Reductions, scans and matmul of complex arrays, made of the real kernels where that is exact:
a complex sum is the sums of the real and imaginary parts (the same pairwise SIMD kernels as
float sums), a complex matmul is four real matmuls (the tuned kernels of _kernels.matmul:
(Ar + iAi)(Br + iBi) = (ArBr - AiBi) + i(ArBi + AiBr)). Products, which do not separate,
are a sequential loop kernel per row (as NumPy multiplies left to right)."""

from __future__ import annotations

import numpy as np

from . import _complex as C
from . import _dtypes as D
from . import _fusion as F
from . import _ops
from . import _reduce
from . import _runtime as R
from ._array import lazy_array, ndarray
from ._backend import kernels
from ._creation import full
from ._elementwise import apply, astype
from ._fuse import evaluate


def combine(re, im, dt):
    """The lazy complex array re + i im (re, im: real arrays of dt's part dtype and one shape)."""
    rdt = C.real_of(dt)
    node = F.Op("complex", [re._as_node(), im._as_node()], dt, rdt, re.shape)
    return lazy_array(node, re.device)


def parts(x):
    """(real part, imaginary part) of complex x, computed by one kernel."""
    re, im = apply("real", x), apply("imag", x)
    evaluate(re, im)
    return re, im


def reduce(x, axis, keepdims, op, out_dtype):
    """sum, prod, any, all of a complex array, or a sum/prod asked for in a complex dtype."""
    if op in ("any", "all"):
        return _reduce._run(apply("not_equal", x, 0), axis, keepdims, op, D.bool_)
    if op not in ("sum", "prod"):
        raise C.ComplexError(f"metalcall.numpy: {op} is not defined for complex arrays (complex numbers have no order)")
    if x.dtype != out_dtype:
        x = astype(x, out_dtype)
    if out_dtype.kind != "c":
        return _reduce._run(x, axis, keepdims, op, out_dtype)
    if op == "sum":
        re, im = parts(x)
        rdt = C.real_of(out_dtype)
        return combine(_reduce._run(re, axis, keepdims, "sum", rdt), _reduce._run(im, axis, keepdims, "sum", rdt),
                       out_dtype)
    axes = _reduce._axes(axis, x.ndim)
    if F.prod([x.shape[a] for a in axes]) == 0:  # the empty product
        kept = tuple(s for i, s in enumerate(x.shape) if i not in axes)
        return _reduce._finish(full(kept, 1, dtype=out_dtype, device=x.device)._materialize()._buf, kept, out_dtype,
                               x, axes, keepdims)
    buf, outer, n, inner, kept = _reduce._layout(x, axes)
    out = R.result_buffer(x.device, kept, out_dtype) if outer * inner else x.device.empty(kept, out_dtype)
    rows = outer * inner
    if rows:
        # few long rows: partial products of chunks of each row first (thousands of threads, not a few)
        chunks = max(1, min(n // 64, 4096 // rows))
        if chunks > 1:
            part = x.device.empty((rows * chunks,), out_dtype)
            _row_loop(x.device, out_dtype, "mnp_cprod", buf, part, rows, n, inner, chunks)
            buf, n, inner = part, chunks, 1
        _row_loop(x.device, out_dtype, "mnp_cprod", buf, out, rows, n, inner)
    return _reduce._finish(out, kept, out_dtype, x, axes, keepdims)


# One thread per (outer, inner) row multiplying along n: the product, or every partial product.
_ROW_LOOP = """#include <metal_stdlib>
using namespace metal;
HELPERS
kernel void mnp_cprod(device const CT* src [[buffer(0)]], device CT* dst [[buffer(1)]],
                      constant long* P [[buffer(2)]], uint t [[thread_position_in_grid]]) {
  // P: n, inner, chunks; thread t: chunk t % chunks of row t / chunks, written to dst[t]
  const ulong n = ulong(P[0]), inner = ulong(P[1]), chunks = ulong(P[2]), m = (n + chunks - 1) / chunks;
  const ulong row = ulong(t) / chunks, c = ulong(t) % chunks;
  const ulong base = (row / inner) * n * inner + row % inner;
  CT acc = MK(FT(1), FT(0));
  for (ulong j = c * m; j < n && j < c * m + m; ++j) acc = MUL(acc, src[base + j * inner]);
  dst[t] = acc;
}
kernel void mnp_ccumprod(device const CT* src [[buffer(0)]], device CT* dst [[buffer(1)]],
                         constant long* P [[buffer(2)]], uint t [[thread_position_in_grid]]) {
  const ulong n = ulong(P[0]), inner = ulong(P[1]);
  const ulong base = (ulong(t) / inner) * n * inner + ulong(t) % inner;
  CT acc = MK(FT(1), FT(0));
  for (ulong j = 0; j < n; ++j) {
    acc = MUL(acc, src[base + j * inner]);
    dst[base + j * inner] = acc;
  }
}
"""


def _row_loop(dev, dt, name, src, dst, rows, n, inner, chunks=1):
    g = _ops.Gen(dev.backend)
    mul = C._need(g, "mul", dt)
    text = (_ROW_LOOP.replace("CT", D.msl(dt)).replace("FT", D.msl(C.real_of(dt))).replace("MUL", mul)
            .replace("MK", C._TYPES[dt]["@P"] + "mk").replace("HELPERS", "\n".join(g.helpers.values())))
    P = dev.asarray(np.array([n, inner, chunks], np.int64))
    R.launch(R.kernel(dev, text, name), rows * chunks, src, dst, P)


def cumulative_sum(x, axis, dt, include_initial):
    if x.dtype != dt:
        x = astype(x, dt)
    re, im = parts(x)
    rdt = C.real_of(dt)
    kw = {"axis": axis, "dtype": rdt, "include_initial": include_initial}
    return combine(_reduce.cumulative_sum(re, **kw), _reduce.cumulative_sum(im, **kw), dt)


def cumulative_prod(x, axis, dt):
    """The running products along axis (x already has a 1-d or more shape and dtype dt)."""
    if x.dtype != dt:
        x = astype(x, dt)
    outer, n, inner = F.prod(x.shape[:axis]), x.shape[axis], F.prod(x.shape[axis + 1:])
    out = x.device.empty(x.shape, dt)
    if outer * n * inner:
        _row_loop(x.device, dt, "mnp_ccumprod", x._contiguous_buffer(), out, outer * inner, n, inner)
    return ndarray._wrap(out, x.shape, dt, x.device)


def matmul(a, b, batch, m, n, k, dt, shape):
    """(batch, m, k) @ (batch, k, n) of complex arrays a, b (views of those shapes): a buffer of
    `shape` (batch dimensions + (m, n)) from four real matmuls."""
    rdt = C.real_of(dt)
    ar, ai = parts(a)
    br, bi = parts(b)
    mm = kernels("matmul").matmul

    def prod(x, y):
        res = mm(a.device, x._contiguous_buffer(), y._contiguous_buffer(), batch, m, n, k, rdt)
        return ndarray._wrap(res, shape, rdt, a.device)

    re = apply("subtract", prod(ar, br), prod(ai, bi))
    im = apply("add", prod(ar, bi), prod(ai, br))
    return combine(re, im, dt)._materialize()._buf


_reduce.COMPLEX.update(reduce=reduce, cumulative_sum=cumulative_sum, cumulative_prod=cumulative_prod)
