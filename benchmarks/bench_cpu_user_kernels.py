"""Kernels as users write them for a GPU, run on the CPU backend beside NumPy's equivalent.

    python benchmarks/bench_cpu_user_kernels.py [--size-log2 N] [--matrix N] [--rounds R] [--device cpu]

The MSL of the seed documents and tutorials, unchanged: saxpy (a plain loop: no barrier), a
threadgroup tree reduction (threadgroup memory, a barrier per halving), a SIMD-group reduction
(simd_sum, one barrier), a naive matrix product (a loop per thread) and a 16x16-tiled one
(threadgroup tiles, two barriers a tile). Kernels whose only synchronisation is threadgroup
barriers and SIMD-group calls at their top level or in uniform loops run as regions between
them, each a loop over the group's threads (docs/design.md, "Barriers as work-item loops" and
"SIMD-group functions as region boundaries"); a kernel beside that subset runs each thread as a
fiber ("Fibers or a plain loop"): these rows say what each costs beside NumPy. Every result is checked against NumPy
before it is timed; interleaved rounds, medians and spread (peers_common.py).
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

import metalcall as mc

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from peers_common import Row, check, machine, measure, render  # noqa: E402

SOURCE = r"""
#include <metal_stdlib>
using namespace metal;

kernel void saxpy(const device float* x [[buffer(0)]], device float* y [[buffer(1)]],
                  constant float& a [[buffer(2)]], uint i [[thread_position_in_grid]]) {
  y[i] = a * x[i] + y[i];
}

kernel void tree_sum(const device float* x [[buffer(0)]], device float* partial [[buffer(1)]],
                     uint tid [[thread_position_in_threadgroup]], uint gid [[thread_position_in_grid]],
                     uint group [[threadgroup_position_in_grid]], uint width [[threads_per_threadgroup]]) {
  threadgroup float shared[256];
  shared[tid] = x[gid];
  threadgroup_barrier(mem_flags::mem_threadgroup);
  for (uint s = width / 2; s > 0; s >>= 1) {
    if (tid < s) shared[tid] += shared[tid + s];
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
  if (tid == 0) partial[group] = shared[0];
}

kernel void simd_group_sum(const device float* x [[buffer(0)]], device float* partial [[buffer(1)]],
                           uint gid [[thread_position_in_grid]], uint lane [[thread_index_in_simdgroup]],
                           uint sg [[simdgroup_index_in_threadgroup]], uint tid [[thread_position_in_threadgroup]],
                           uint group [[threadgroup_position_in_grid]], uint groups [[simdgroups_per_threadgroup]]) {
  threadgroup float sums[32];
  const float v = simd_sum(x[gid]);
  if (lane == 0) sums[sg] = v;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  if (tid == 0) {
    float s = 0.0f;
    for (uint i = 0; i < groups; ++i) s += sums[i];
    partial[group] = s;
  }
}

kernel void matmul_naive(const device float* A [[buffer(0)]], const device float* B [[buffer(1)]],
                         device float* C [[buffer(2)]], constant uint& n [[buffer(3)]],
                         uint2 g [[thread_position_in_grid]]) {
  float s = 0.0f;
  for (uint k = 0; k < n; ++k) s += A[g.y * n + k] * B[k * n + g.x];
  C[g.y * n + g.x] = s;
}

kernel void matmul_tiled(const device float* A [[buffer(0)]], const device float* B [[buffer(1)]],
                         device float* C [[buffer(2)]], constant uint& n [[buffer(3)]],
                         uint2 g [[thread_position_in_grid]], uint2 t [[thread_position_in_threadgroup]]) {
  threadgroup float As[16][16];
  threadgroup float Bs[16][16];
  float s = 0.0f;
  for (uint k0 = 0; k0 < n; k0 += 16) {
    As[t.y][t.x] = A[g.y * n + k0 + t.x];
    Bs[t.y][t.x] = B[(k0 + t.y) * n + g.x];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    for (uint k = 0; k < 16; ++k) s += As[t.y][k] * Bs[k][t.x];
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
  C[g.y * n + g.x] = s;
}
"""


def times(fn):
    """A candidate's run(number): fn() number times (each call waits)."""
    def run(number: int) -> None:
        for _ in range(number):
            fn()
    return run


def rows(dev: mc.Device, n: int, m: int) -> list[Row]:
    lib = dev.compile(SOURCE)
    rng = np.random.default_rng(7)
    x = rng.random(n, dtype=np.float32)
    y = rng.random(n, dtype=np.float32)
    X, Y = dev.asarray(x), dev.asarray(y)
    out = []

    y_ref = np.float32(2) * x + y
    lib.saxpy(n, X, Y, np.float32(2)).wait()
    check(np.allclose(np.asarray(Y), y_ref, rtol=1e-6), "saxpy")
    yy = y.copy()
    r = Row(f"saxpy y = a*x + y, {n:,} float32 (plain loop)")
    r.candidates = [("metalcall", times(lambda: lib.saxpy(n, X, Y, np.float32(2)).wait())),
                    ("NumPy, two ufuncs into y", times(lambda: np.add(np.multiply(x, np.float32(2)), yy, out=yy)))]
    out.append(r)

    partial = dev.empty(n // 256, np.float32)
    for name, label in (("tree_sum", "threadgroup tree reduction (barrier per halving)"),
                        ("simd_group_sum", "SIMD-group reduction (simd_sum, one barrier)")):
        kernel = getattr(lib, name)
        kernel(n, X, partial, threadgroup=256).wait()
        check(np.allclose(np.asarray(partial).sum(dtype=np.float64), x.sum(dtype=np.float64), rtol=1e-4), name)
        r = Row(f"{label}, {n:,} float32 to {n // 256:,} partial sums ({getattr(kernel, 'thread_schedule', None) or 'fibers'})")
        r.candidates = [("metalcall", times(lambda k=kernel: k(n, X, partial, threadgroup=256).wait())),
                        ("NumPy x.reshape(-1, 256).sum(axis=1)", times(lambda: x.reshape(-1, 256).sum(axis=1)))]
        out.append(r)

    a = rng.random((m, m), dtype=np.float32)
    b = rng.random((m, m), dtype=np.float32)
    A, B, C = dev.asarray(a), dev.asarray(b), dev.empty((m, m), np.float32)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    for name, label, tg in (("matmul_naive", "naive matrix product (a loop per thread)", None),
                            ("matmul_tiled", "16x16-tiled matrix product (two barriers a tile)", (16, 16))):
        kernel = getattr(lib, name)
        kernel((m, m), A, B, C, np.uint32(m), threadgroup=tg).wait()
        check(np.allclose(np.asarray(C), ref, rtol=1e-4), name)
        r = Row(f"{label}, {m}x{m} float32 ({getattr(kernel, 'thread_schedule', None) or 'fibers'})")
        r.candidates = [("metalcall", times(lambda k=kernel, t=tg: k((m, m), A, B, C, np.uint32(m), threadgroup=t).wait())),
                        ("NumPy a @ b (BLAS)", times(lambda: a @ b))]
        out.append(r)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--size-log2", type=int, default=20, help="elements of the 1-D rows, as a power of two (>= 8)")
    parser.add_argument("--matrix", type=int, default=256, help="matrix size, a multiple of 16")
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    if args.size_log2 < 8 or args.matrix % 16:
        parser.error("--size-log2 must be at least 8 and --matrix a multiple of 16")
    dev = mc.Device(args.device)
    print(f"# metalcall {mc.__version__} on {dev.name}\n\n{machine()}; NumPy {np.__version__}; "
          f"{args.rounds} rounds\n", flush=True)
    table = rows(dev, 1 << args.size_log2, args.matrix)
    for row in table:
        measure(row, args.rounds, 0.05)
        print(render([row]).splitlines()[-1], flush=True)
    print("\n" + render(table))
    return 0


if __name__ == "__main__":
    sys.exit(main())
