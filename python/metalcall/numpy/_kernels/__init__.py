"""Buffer-level kernels behind metalcall.numpy: each function takes C-contiguous Buffers and
returns new Buffers on the same device, generating one MSL source per op, dtype and shape class.

Shapes are given as (outer, n, inner): a C-contiguous array seen with the reduced, scanned or
sorted axis of length n in the middle. Calls only queue work (see cache.launch); hazards on the
Buffers order it.
"""

from . import cache, matmul, random, reduce, scan, sort

__all__ = ["cache", "matmul", "random", "reduce", "scan", "sort"]
