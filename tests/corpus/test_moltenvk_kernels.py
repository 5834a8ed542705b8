"""MoltenVK's command shaders (KhronosGroup/MoltenVK, the MSL raw strings of
MVKCommandPipelineStateFactoryShaderSource.h joined with the MVKDXTnCodec.def they include: the
third corpus, docs/msl-corpus.md) run on metalcall against NumPy models written here: the
indexed indirect-draw conversion that turns triangle fans into triangle lists (a function
template given two pointers cast from untyped buffers, Metal's
MTLDrawIndexedPrimitivesIndirectArguments, primitive restart, multiview instance counts: the
classes this corpus's survey fixed) and the non-indexed draws' index population. Every device,
the CPU in checked mode too; the public file is read at test time only."""

from __future__ import annotations

import numpy as np
import pytest

import metalcall as mc
from corpus_support import kernel, require3
from mctest import device_params, metal_sim_only

SHADERS = "moltenvk/cmd_shaders.metal"
INDEXED = np.dtype([("indexCount", "<u4"), ("instanceCount", "<u4"), ("indexStart", "<u4"), ("baseVertex", "<i4"),
                    ("baseInstance", "<u4")])
DRAW = np.dtype([("vertexCount", "<u4"), ("instanceCount", "<u4"), ("vertexStart", "<u4"), ("baseInstance", "<u4")])


@pytest.fixture(params=device_params() + ([pytest.param(("cpu", 0, "checked"), id="cpu-checked")]
                                           if "cpu" in mc.backends() and not metal_sim_only() else []))
def device(request):
    backend, index, *checked = request.param
    return mc.Device("cpu", checked=True) if checked else mc.Device(f"{backend}:{index}")


def _fan_to_list(fan, restart, sentinel, provoking_last):
    """MoltenVK's populateTriIndxsFromTriFan, written out."""
    out, base, i = [], 0, 2
    while i < len(fan):
        current = base
        t0, t1, t2 = fan[base], fan[i - 1], fan[i]
        if restart and t0 == sentinel:
            base += 1
        if restart and t1 == sentinel:
            base = i
        if restart and t2 == sentinel:
            base = i + 1
        if base != current:
            i = base + 2
        else:
            out += [t0, t1, t2] if provoking_last else [t1, t2, t0]
            i += 1
    return out


@pytest.mark.parametrize("index_type", [np.uint16, np.uint32])
@pytest.mark.parametrize("restart", [False, True])
def test_triangle_fans_to_lists(device, rng, index_type, restart):
    # Each draw writes (count - 2) * 3 list indices from its own start: the ranges must not overlap,
    # since the draws are threads that a GPU runs in any order (0..15, 20..50, 60..63).
    counts, starts = [7, 12, 3], [0, 20, 60]
    stride = 24  # bytes between the source's draws (20-byte structs, 4 bytes apart)
    src = np.zeros(3 * stride, np.uint8)
    draws = np.zeros(3, INDEXED)
    draws["indexCount"], draws["indexStart"] = counts, starts
    draws["instanceCount"], draws["baseVertex"], draws["baseInstance"] = [1, 2, 3], [0, -4, 9], [5, 6, 7]
    for k in range(3):
        src[k * stride:k * stride + 20] = draws[k:k + 1].view(np.uint8)
    sentinel = np.iinfo(index_type).max
    fan = rng.integers(0, 1000, 64).astype(index_type)
    if restart:
        fan[[23, 27, 28]] = sentinel  # inside the second draw's fan (20..31)
    tri = np.full(128, 0xABCD, index_type)
    provoking_last = True
    # MVKVtxAdj: idxType (MTLIndexType, a byte), isMultiView, isTriFan, isPrimRestart, isUint8Index,
    # isProvokingVertexLast
    adj = np.array([0 if index_type == np.uint16 else 1, 1, 1, int(restart), 0, int(provoking_last)], np.uint8)
    dest = np.zeros(3, INDEXED)
    k = kernel(device, require3(SHADERS), "cmdDrawIndexedIndirectConvertBuffers")
    k(4, src, dest.view(np.uint8), np.uint32(stride), np.uint32(3), np.uint32(2), adj, tri, fan)
    want_tri = np.full(128, 0xABCD, index_type)
    for n, s in zip(counts, starts):
        lst = _fan_to_list(fan[s:s + n].tolist(), restart, int(sentinel), provoking_last)
        want_tri[s:s + len(lst)] = lst
    np.testing.assert_array_equal(tri, want_tri)
    want = draws.copy()
    want["indexCount"] = (np.array(counts) - 2) * 3
    want["instanceCount"] *= 2  # multiview: two views
    np.testing.assert_array_equal(dest, want)


def test_populate_indexes(device):
    draws = np.zeros(2, DRAW)
    draws["vertexCount"], draws["vertexStart"] = [5, 3], [0, 8]
    draws["instanceCount"], draws["baseInstance"] = [1, 4], [0, 2]
    dest = np.zeros(2, INDEXED)
    idx = np.full(16, 99, np.uint32)
    k = kernel(device, require3(SHADERS), "cmdDrawIndirectPopulateIndexes")
    k(2, draws.view(np.uint8), dest.view(np.uint8), np.uint32(16), np.uint32(2), idx)
    want = np.full(16, 99, np.uint32)
    want[0:5], want[8:11] = np.arange(0, 5), np.arange(8, 11)
    np.testing.assert_array_equal(idx, want)
    np.testing.assert_array_equal(dest[["indexCount", "indexStart", "instanceCount", "baseInstance"]].tolist(),
                                  [(5, 0, 1, 0), (3, 8, 4, 2)])
    np.testing.assert_array_equal(dest["baseVertex"], [0, 0])
