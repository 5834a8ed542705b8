"""Batched matrix product (batch, m, k) @ (batch, k, n) -> (batch, m, n) as generated MSL.

GPUs: tiled kernels with threadgroup staging, one of several named variants: `gpu_variant`
picks the one float32 uses (METALCALL_MATMUL_VARIANT overrides it, for
benchmarks/bench_matmul_variants.py); other dtypes use "rows8". On Metal float32 uses "sgm"
(matmul_sgm.py: simdgroup_float8x8 factors and accumulators, every Apple GPU since Apple7/M1);
elsewhere the tiled variants of matmul_gpu.py, "quad8" by default.
CPU backend: packed operands and a register block per work-item, no barriers (matmul_cpu.py);
matrix-vector products read their operands as they are (matvec_cpu.py).
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

import metalcall as mc

from . import cache, matmul_cpu, matmul_gpu, matmul_sgm, matvec_cpu

# The float32 GPU variant (matmul_gpu.VARIANTS): "quad8", the fastest on an H100
# (benchmarks/RESULTS.md, bench_matmul_variants.py: 0.58x cuBLAS at 1024^2 where "rows8"
# gets 0.31x; every variant 0.48x at 4096^2).
GPU_VARIANT = "quad8"
# The float32 variant on Metal: SIMD-group matrices (matmul_sgm.py); "sgm" works on any
# backend when named (CUDA: the prelude's simdgroup_matrix; the CPU backend: fibers).
METAL_VARIANT = "sgm"
VARIANTS = (*matmul_gpu.VARIANTS, "sgm")


def gpu_variant(T: np.dtype, variant: str | None = None, backend: str = "") -> str:
    """The GPU variant for dtype T: `variant` if given, else the environment's, else
    METAL_VARIANT on `backend` "metal" and GPU_VARIANT elsewhere."""
    if T != np.float32:
        return "rows8"
    default = METAL_VARIANT if backend == "metal" else GPU_VARIANT
    name = variant or os.environ.get("METALCALL_MATMUL_VARIANT") or default
    if name not in VARIANTS:
        raise ValueError(f"unknown matmul variant {name!r}; known: {', '.join(VARIANTS)}")
    if name in matmul_gpu.CUDA_ONLY and backend != "cuda":
        raise ValueError(f"matmul variant {name!r} stages {matmul_gpu.threadgroup_bytes(name)} bytes in threadgroup "
                         f"memory, over the {matmul_gpu.METAL_THREADGROUP_BYTES} a Metal GPU gives a threadgroup (the "
                         "CPU backend keeps Metal's limits): it runs on CUDA only")
    return name


def _acc(dtype: np.dtype) -> np.dtype:
    """Accumulate half in float, narrow integers in 32 bits (same result modulo 2^bits as
    NumPy's wrapping arithmetic), bool as a count."""
    if dtype.kind == "b":
        return np.dtype(np.uint32)
    if dtype.kind in "iu" and dtype.itemsize < 4:
        return np.dtype(np.int32 if dtype.kind == "i" else np.uint32)
    return cache.accumulator(dtype)


def matmul(dev: mc.Device, a: mc.Buffer, b: mc.Buffer, batch: int, m: int, n: int, k: int,
           dtype: Any, *, variant: str | None = None) -> mc.Buffer:
    """(batch, m, k) @ (batch, k, n) of C-contiguous Buffers of `dtype`; a flat Buffer of
    batch * m * n elements of `dtype` (integers wrap; bool is logical or-of-ands). `variant`
    names the GPU kernel (VARIANTS) for float32; the CPU backend ignores it. The "quad"
    variants and "sgm" on multiples of its block read float4s: the Buffers must start on 16
    bytes, as every Buffer metalcall allocates does (a CUDA buffer imported from a slice
    through DLPack may not)."""
    T = np.dtype(dtype)
    A = _acc(T)
    Ts, As = cache.msl_type(T), cache.msl_type(A)
    out = cache.empty(dev, batch * m * n, T, zeroed=k == 0)
    if batch * m * n == 0:
        return out
    if k == 0:  # empty sum: zeros, which new buffers already hold
        return out
    a, b = cache.nonempty(dev, a, T), cache.nonempty(dev, b, T)
    is_bool = T.kind == "b"
    if cache.uses_loops(dev):
        if (m == 1 or n == 1) and not is_bool:  # a vector: no register blocks to fill (matvec_cpu.py)
            return matvec_cpu.product(dev, a, b, out, batch, m, n, k, T, A)
        return _matmul_cpu(dev, a, b, out, batch, m, n, k, T, A)
    variant = gpu_variant(T, variant, dev.backend)
    # The tiled kernels need threadgroups of a fixed size; a pipeline that allows fewer threads
    # (maxTotalThreadsPerThreadgroup is each pipeline's own) gets the per-work-item blocks instead.
    if variant == "sgm":
        kern = cache.kernel(dev, matmul_sgm.source(matmul_sgm.checked(m, n, k)), "mm")
        if kern.max_total_threads_per_threadgroup < matmul_sgm.THREADS:
            return _matmul_cpu(dev, a, b, out, batch, m, n, k, T, A)
        cache.launch(kern, matmul_sgm.grid(batch, m, n), a, b, out, m, n, k, threadgroup=(matmul_sgm.THREADS, 1, 1))
        return out
    checked = matmul_gpu.checked(variant, m, n, k)
    kern = cache.kernel(dev, matmul_gpu.source(variant, Ts, As, is_bool, checked), "mm")
    if kern.max_total_threads_per_threadgroup < matmul_gpu.THREADS:
        return _matmul_cpu(dev, a, b, out, batch, m, n, k, T, A)
    cache.launch(kern, matmul_gpu.grid(batch, m, n), a, b, out, m, n, k, threadgroup=(matmul_gpu.THREADS, 1, 1))
    return out


def _matmul_cpu(dev: mc.Device, a: mc.Buffer, b: mc.Buffer, out: mc.Buffer, batch: int, m: int, n: int,
                k: int, T: np.dtype, A: np.dtype) -> mc.Buffer:
    """Packs A and B (matmul_cpu.py), then one work-item per block of C, each its own group (so any
    pipeline runs it: the GPUs' fallback where a tiled kernel's threadgroup is over its pipeline's limit)."""
    Ts, As = cache.msl_type(T), cache.msl_type(A)
    mr, nr = matmul_cpu.tile()
    mp, np_ = -(-m // mr), -(-n // nr)
    pa = cache.empty(dev, batch * mp * k * mr, A)
    pb = cache.empty(dev, batch * np_ * k * nr, A)
    cache.launch(cache.kernel(dev, matmul_cpu.pack_a_source(Ts, As, mr), "pack_a"), (k, mp, batch),
                 a, pa, m, k, mp)
    cache.launch(cache.kernel(dev, matmul_cpu.pack_b_source(Ts, As, nr), "pack_b"), (np_ * nr, k, batch),
                 b, pb, n, k, np_)
    kc = matmul_cpu.depth(k, T == A)
    rb = matmul_cpu.row_block(kc, A.itemsize, mp)
    kern = cache.kernel(dev, matmul_cpu.kernel_source(Ts, As, T.kind == "b", mr, nr), "mm")
    for k0 in range(0, k, kc):  # in order: each call adds to the sums of the one before
        cache.launch(kern, (rb, np_, batch * -(-mp // rb)), pa, pb, out, m, n, k, mp, np_, rb, k0, min(kc, k - k0),
                     threadgroup=(1, 1, 1))
    return out
