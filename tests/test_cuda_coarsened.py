"""CUDA's coarsened launch (P2.2 item 4; msl/targets/entry_points.hpp coarsenable, target_cuda.cpp,
backends/cuda/cuda_launch.hpp): straight-line kernels that read only their scalar
thread_position_in_grid run four positions per CUDA thread on 1-D grids from 2^18 threads, with
16-byte vector loads when every buffer is aligned. Every position must run exactly once with its
own index, at every grid size around the threshold and the last partial group, on aligned and
misaligned memory, with overlapping buffers, for every element size. The translation side (which
kernels get the entry point, its vector loads) is checked without a GPU by
cpp/tests/translate/check_coarsened_entries.py. Skipped without CUDA."""

from __future__ import annotations

import numpy as np
import pytest

import metalcall as mc

HAS_CUDA = "cuda" in mc.backends() and any(d.backend == "cuda" for d in mc.get_devices())
pytestmark = pytest.mark.skipif(not HAS_CUDA, reason="no CUDA device")

THRESHOLD = 1 << 18  # kCoarsenFrom in backends/cuda/cuda_launch.hpp
SIZES = [THRESHOLD - 1, THRESHOLD, THRESHOLD + 1, THRESHOLD + 2, THRESHOLD + 3, (1 << 20) + 5]

SRC = """
#include <metal_stdlib>
using namespace metal;
kernel void mul(const device float* a [[buffer(0)]], const device float* b [[buffer(1)]],
                device float* c [[buffer(2)]], uint i [[thread_position_in_grid]]) { c[i] = a[i] * b[i]; }
kernel void index_of(device uint* o [[buffer(0)]], device atomic_uint* count [[buffer(1)]],
                     uint i [[thread_position_in_grid]]) {
    o[i] = i;
    atomic_fetch_add_explicit(count, 1u, memory_order_relaxed);
}
kernel void skip_thirds(const device half* a [[buffer(0)]], device half* c [[buffer(1)]],
                        constant half& s [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    if (i % 3 == 0) return;
    c[i] = a[i] * s;
}
kernel void widen(const device char* a [[buffer(0)]], device double* d [[buffer(1)]],
                  device short* s [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    d[i] = double(a[i]) * 0.5;
    s[i] = short(a[i]) * short(3);
}
kernel void pairs(const device float2* a [[buffer(0)]], device float2* c [[buffer(1)]],
                  uint i [[thread_position_in_grid]]) { c[i] = a[i].yx; }
struct Affine { float scale; float shift; };
struct Table { float4 rows[4]; };  // 64 bytes: referenced, not copied, in the coarsened entry
kernel void affine(const device float* a [[buffer(0)]], constant Affine& f [[buffer(1)]], constant float& s [[buffer(2)]],
                   constant Table& t [[buffer(3)]], device float* c [[buffer(4)]], uint i [[thread_position_in_grid]]) {
    c[i] = (a[i] * f.scale + f.shift) * s + t.rows[i % 4][(i / 4) % 4];
}
kernel void row_sums(const device float* a [[buffer(0)]], device float* c [[buffer(1)]],
                     uint i [[thread_position_in_grid]]) {  // a loop: this kernel is never coarsened
    float s = 0.0f;
    for (uint k = 0; k < 4; ++k) s += a[4 * i + k];
    c[i] = s;
}
"""


@pytest.fixture(scope="module")
def lib():
    return mc.Device("cuda").compile(SRC)


@pytest.mark.parametrize("n", SIZES)
def test_every_position_runs_once_with_its_index(lib, n):
    dev = mc.Device("cuda")
    out, count = dev.empty(n, np.uint32), dev.zeros(1, np.uint32)
    lib.index_of(n, out, count)
    assert int(np.asarray(count)[0]) == n
    np.testing.assert_array_equal(np.asarray(out), np.arange(n, dtype=np.uint32))


@pytest.mark.parametrize("n", SIZES)
def test_products_match_numpy(lib, n):
    dev = mc.Device("cuda")
    rng = np.random.default_rng(n)
    a, b = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    A, B, C = dev.asarray(a), dev.asarray(b), dev.empty(n, np.float32)
    lib.mul(n, A, B, C)
    np.testing.assert_array_equal(np.asarray(C), a * b)
    c = np.zeros(n, np.float32)  # host arrays: staged through device memory
    lib.mul(n, a, b, c)
    np.testing.assert_array_equal(c, a * b)


def test_a_kernel_with_a_loop_beside_coarsened_ones(lib):
    dev = mc.Device("cuda")
    n = THRESHOLD + 1
    a = np.random.default_rng(4).random(4 * n, dtype=np.float32)
    A, C = dev.asarray(a), dev.empty(n, np.float32)
    lib.row_sums(n, A, C)
    np.testing.assert_allclose(np.asarray(C), a.reshape(n, 4).sum(axis=1), rtol=1e-6)


def test_in_place_and_overlapping_buffers(lib):
    dev = mc.Device("cuda")
    n = THRESHOLD + 7
    a = np.random.default_rng(1).random(n, dtype=np.float32)
    A = dev.asarray(a)
    lib.mul(n, A, A, A)  # the build without restrict, coarsened too
    np.testing.assert_array_equal(np.asarray(A), a * a)


def test_early_returns_half_and_a_value(lib):
    dev = mc.Device("cuda")
    n = (1 << 19) + 1
    a = (np.arange(n) % 50).astype(np.float16)
    A, C = dev.asarray(a), dev.asarray(np.full(n, -1, np.float16))
    lib.skip_thirds(n, A, C, np.float16(2))
    want = a * np.float16(2)
    want[::3] = -1
    np.testing.assert_array_equal(np.asarray(C), want)


@pytest.mark.parametrize("n", [THRESHOLD + 3, (1 << 20) + 5])
def test_constant_references_small_and_large(lib, n):
    """`constant T&` arguments (copied when small, referenced when larger) beside device stores."""
    dev = mc.Device("cuda")
    a = np.random.default_rng(n).random(n, dtype=np.float32)
    table = np.arange(16, dtype=np.float32) * 0.25
    affine = np.array([(1.5, -0.25)], dtype=[("scale", np.float32), ("shift", np.float32)])
    A, C = dev.asarray(a), dev.empty(n, np.float32)
    lib.affine(n, A, affine, np.float32(3), table, C)
    i = np.arange(n)
    want = (a * np.float32(1.5) + np.float32(-0.25)) * np.float32(3) + table[(i % 4) * 4 + (i // 4) % 4]
    np.testing.assert_allclose(np.asarray(C), want, rtol=1e-6, atol=1e-6)


def test_element_sizes(lib):
    dev = mc.Device("cuda")
    n = THRESHOLD + 2
    a = (np.arange(n) % 200 - 100).astype(np.int8)
    A, D, S = dev.asarray(a), dev.empty(n, np.float64), dev.empty(n, np.int16)
    lib.widen(n, A, D, S)
    np.testing.assert_array_equal(np.asarray(D), a.astype(np.float64) * 0.5)
    np.testing.assert_array_equal(np.asarray(S), a.astype(np.int16) * 3)
    v = np.random.default_rng(2).random((n, 2), dtype=np.float32)
    V, W = dev.asarray(v), dev.empty((n, 2), np.float32)
    lib.pairs(n, V, W)
    np.testing.assert_array_equal(np.asarray(W), v[:, ::-1])


def test_misaligned_foreign_memory_runs_uncoarsened(lib):
    torch = pytest.importorskip("torch", reason="torch is not installed here")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA device for torch")
    n = THRESHOLD + 3
    base = torch.rand(n + 1, device="cuda")
    a = base[1:]  # 4 bytes past a 16-byte boundary: the plain launch must run it
    b = torch.rand(n, device="cuda")
    c = torch.empty(n + 1, device="cuda")[1:]
    lib.mul(n, a, b, c)
    assert torch.equal(c, a * b)


def test_explicit_threadgroups_and_batches(lib):
    dev = mc.Device("cuda")
    n = (1 << 20) + 1
    a = np.random.default_rng(3).random(n, dtype=np.float32)
    A, B, C = dev.asarray(a), dev.asarray(a), dev.empty(n, np.float32)
    lib.mul(n, A, B, C, threadgroup=64)  # the threadgroup size is not observable: still coarsened
    np.testing.assert_array_equal(np.asarray(C), a * a)
    out, count = dev.empty(n, np.uint32), dev.zeros(1, np.uint32)
    with dev.record() as graph:  # captured into a CUDA graph, then replayed
        lib.index_of(n, out, count)
    graph.replay().wait()
    graph.replay().wait()
    assert int(np.asarray(count)[0]) == 2 * n
    np.testing.assert_array_equal(np.asarray(out), np.arange(n, dtype=np.uint32))
