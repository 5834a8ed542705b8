"""torchao's low-bit quantized linear kernels (pytorch/ao, torchao/experimental/kernels/mps/metal:
a source first surveyed for issue P2.0) run on metalcall against NumPy models written here.
torchao builds one library from the files of its metal.yaml, concatenated in sorted order
(codegen/gen_metal_shader_lib.py); the test builds the same library by including the files in
that order from a scratch file (nothing of the public source is copied here). Grids follow
torchao's host code (src/dispatch.h, src/lowbit.h): dispatch_mm is dispatchThreads(N, M, 1),
dispatch_mm_Mr1xNr4_per_TG dispatchThreads(N / 4 * 32, 1, M) in threadgroups of 32,
dispatch_qmv dispatchThreadgroups(M, ceil(N / 8), 1) of (32, 2, 1) threads.

The packing is torchao's (src/packing.h) as the kernels read it: each of the N weight rows is a
little-endian bit stream of K `nbit`-bit values (value k at bit k * nbit), and value q of group
g = k // group_size stands for scale[n, g] * q + zero[n, g]."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from corpus_support import corpus_root, kernel, require

MPS_METAL = "torchao/torchao/experimental/kernels/mps/metal"
FILES = ["common.metal", "int1mm.metal", "int2mm_opt.metal", "int3mm_opt.metal", "int4mm_opt.metal",
         "int5mm.metal", "int6mm.metal", "int7mm.metal", "qmv.metal"]
TYPES = {"float": np.float32, "half": np.float16}


@pytest.fixture(scope="module")
def library(tmp_path_factory) -> Path:
    """A scratch .metal file that includes torchao's files in the order its build joins them."""
    for f in FILES:
        require(f"{MPS_METAL}/{f}")
    root = (corpus_root() / MPS_METAL).resolve()
    path = tmp_path_factory.mktemp("torchao") / "lowbit.metal"
    path.write_text("".join(f'#include "{root / f}"\n' for f in FILES))
    return path


MM = [(1, 32), (5, 64), (6, 128), (7, 256)]
MM_OPT = [(2, 32, 256), (3, 64, 384), (4, 128, 640), (4, 32, 100)]
QMV = [("fast", 1, 32, 16, 512), ("fast", 3, 64, 8, 1024), ("fast", 4, 128, 24, 512), ("fast", 6, 256, 8, 512),
       ("impl", 4, 64, 13, 640), ("impl", 2, 32, 21, 96), ("impl", 5, 32, 9, 544)]
# Every kernel the tests call, built into one library per device (one compile, not one per test).
NAMES = tuple(sorted({f"int{b}pack_mm_{g}_{t}" for b, g in MM for t in TYPES}
                     | {f"int{b}pack_mm_{g}_{t}" for b, g, _ in MM_OPT for t in TYPES}
                     | {f"qmv_{v}_{b}bit_{g}_{t}" for v, b, g, _, _ in QMV for t in TYPES}))


def sizes(m, k, n):
    """The `constant uint3& sizes` argument: torchao's host sets 12 bytes (setBytes of three
    uint32), which Metal's API validation refuses for a 16-byte uint3 and metalcall refuses
    too (ArgumentError); the test passes the padded 16."""
    return np.array([m, k, n, 0], np.uint32)


def torchao_kernel(device, library, name):
    return kernel(device, library, name, also=NAMES)


def pack(q: np.ndarray, nbit: int) -> np.ndarray:
    """Rows of nbit-bit values as little-endian bit streams (K * nbit / 8 bytes a row)."""
    n, k = q.shape
    bits = ((q[:, :, None] >> np.arange(nbit)) & 1).astype(np.uint8).reshape(n, k * nbit)
    return np.packbits(bits, axis=1, bitorder="little")


class Quantized:
    """Random nbit weights of N rows of K, packed, with their T-rounded scales and zeros."""

    def __init__(self, rng, n, k, nbit, group, t):
        self.q = rng.integers(0, 1 << nbit, (n, k), dtype=np.int64)
        groups = -(-k // group)
        self.scales = rng.uniform(0.01, 0.1, (n, groups)).astype(t)
        self.zeros = rng.uniform(-0.2, 0.2, (n, groups)).astype(t)
        self.packed, self.group = pack(self.q, nbit), group
        g = np.arange(k) // group
        self.w = self.scales.astype(np.float64)[:, g] * self.q + self.zeros.astype(np.float64)[:, g]

    def args(self):
        return self.packed, self.scales, self.zeros

    def check(self, out, x, tname, half_chunk=None):
        """out == x @ w.T within float32 accumulation (1e-5 of the products' magnitudes),
        plus the output's own rounding for half. half_chunk: qmv's load_vector adds its T
        values `chunk` at a time (`sum += x[i] + ... + x[i + chunk - 1]`), in half for half,
        and the kernel multiplies those sums by the zeros: each of the chunk - 1 additions
        rounds to half, in an order fast math (Metal's default, and metalcall's) may change,
        so each adds at most 2^-11 of the chunk's sum of magnitudes."""
        xd = x.astype(np.float64)
        want = xd @ self.w.T
        bound = 1e-5 * (np.abs(xd) @ np.abs(self.w).T) + 1e-7
        if tname == "half":
            bound += np.abs(want) * 2.0 ** -11 + 2.0 ** -24
        if half_chunk:
            abs_sums = np.stack([np.abs(xd[:, i:i + self.group]).sum(axis=1)
                                 for i in range(0, x.shape[1], self.group)], 1)
            bound += (half_chunk - 1) * 2.0 ** -11 * (abs_sums @ np.abs(self.zeros.astype(np.float64)).T)
        err = np.abs(out.astype(np.float64) - want)
        assert np.all(err <= bound), f"max error {err.max()} where the bound is {bound.flat[err.argmax()]}"


# int1pack_mm, int5mm, int6mm, int7mm: a thread per output, K in steps of 8.
@pytest.mark.parametrize("tname", sorted(TYPES))
@pytest.mark.parametrize("nbit,group", MM)
def test_intNpack_mm(device, library, rng, nbit, group, tname):
    t = TYPES[tname]
    m, n, k = 3, 10, 512
    qw = Quantized(rng, n, k, nbit, group, t)
    x = rng.uniform(-1, 1, (m, k)).astype(t)
    out = np.zeros((m, n), t)
    f = torchao_kernel(device, library, f"int{nbit}pack_mm_{group}_{tname}")
    f((n, m), x, *qw.args(), out, sizes(m, k, n), threadgroup=(min(m, 32), 1))
    qw.check(out, x, tname)


# int2/3/4mm_opt: a simdgroup per 4 output columns, each lane 4 values of K every 128,
# partial sums combined with simd_shuffle_down; float4 * float4x4 products.
@pytest.mark.parametrize("tname", sorted(TYPES))
@pytest.mark.parametrize("nbit,group,k", MM_OPT)
def test_intNpack_mm_opt(device, library, rng, nbit, group, k, tname):
    t = TYPES[tname]
    m, n = 2, 12
    qw = Quantized(rng, n, k, nbit, group, t)
    x = rng.uniform(-1, 1, (m, k)).astype(t)
    out = np.zeros((m, n), t)
    f = torchao_kernel(device, library, f"int{nbit}pack_mm_{group}_{tname}")
    f((n // 4 * 32, 1, m), x, *qw.args(), out, sizes(m, k, n), threadgroup=(32, 1, 1))
    qw.check(out, x, tname)


# qmv_fast (N % 8 == 0, K % 512 == 0) and qmv_impl (any N >= 8 here, K a multiple of the
# group): two simdgroups of 4 output rows a threadgroup, simd_sum of the lanes' partial sums.
@pytest.mark.parametrize("tname", sorted(TYPES))
@pytest.mark.parametrize("variant,nbit,group,n,k", QMV)
def test_qmv(device, library, rng, variant, nbit, group, n, k, tname):
    t = TYPES[tname]
    m = 2
    qw = Quantized(rng, n, k, nbit, group, t)
    x = rng.uniform(-1, 1, (m, k)).astype(t)
    out = np.zeros((m, n), t)
    f = torchao_kernel(device, library, f"qmv_{variant}_{nbit}bit_{group}_{tname}")
    groups_y = -(-n // 8)
    f((m * 32, groups_y * 2, 1), x, *qw.args(), out, sizes(m, k, n), threadgroup=(32, 2, 1))
    qw.check(out, x, tname, half_chunk=(4 if nbit in (2, 4, 6) else 8) if tname == "half" else None)
