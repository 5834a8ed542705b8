"""Device, Library, Kernel and Buffer pickle (metalcall/_pickling.py), so process pools and Dask
workers can use them: by spec, by source and options (rebuilt from the disk cache), by value."""

from __future__ import annotations

import concurrent.futures
import multiprocessing
import pickle

import numpy as np
import pytest

import metalcall as mc

SOURCE = """
#include <metal_stdlib>
using namespace metal;
constant float gain [[function_constant(0)]];
kernel void scale(const device float* x [[buffer(0)]], device float* y [[buffer(1)]],
                  constant float& k [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    y[i] = x[i] * k + OFFSET;
}
kernel void amplify(device float* y [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    y[i] = y[i] * gain;
}
"""


@pytest.fixture
def dev():
    return mc.Device("cpu")


@pytest.fixture
def lib(dev):
    return dev.compile(SOURCE, defines={"OFFSET": 1.0})


def _run_scale(kernel: mc.Kernel, x: np.ndarray, k: float) -> np.ndarray:
    y = np.zeros_like(x)
    kernel(len(x), x, y, np.float32(k)).wait()
    return y


def test_device_round_trip(dev):
    back = pickle.loads(pickle.dumps(dev))
    assert (back.backend, back.index) == (dev.backend, dev.index)
    checked = pickle.loads(pickle.dumps(mc.Device("cpu", checked=True, timing=True)))
    assert checked.checked and checked.timing


def test_library_round_trip_keeps_source_and_defines(lib):
    back = pickle.loads(pickle.dumps(lib))
    assert back.function_names == lib.function_names
    x = np.arange(16, dtype=np.float32)
    np.testing.assert_array_equal(_run_scale(back.scale, x, 3.0), x * 3 + 1)


def test_kernel_round_trip_by_every_lookup(lib):
    x = np.arange(16, dtype=np.float32)
    for kernel in (lib.scale, lib["scale"], lib.function("scale")):
        back = pickle.loads(pickle.dumps(kernel))
        assert back.name == "scale"
        np.testing.assert_array_equal(_run_scale(back, x, 2.0), x * 2 + 1)


def test_kernel_keeps_function_constants(lib):
    amplify = pickle.loads(pickle.dumps(lib.function("amplify", {"gain": 4.0})))
    y = np.arange(8, dtype=np.float32)
    amplify(len(y), y).wait()
    np.testing.assert_array_equal(y, np.arange(8, dtype=np.float32) * 4)


def test_buffer_round_trip_by_value(dev):
    buf = dev.asarray(np.arange(12, dtype=np.int32).reshape(3, 4))
    back = pickle.loads(pickle.dumps(buf))
    assert back.shape == (3, 4) and back.dtype == np.int32
    assert back.device.backend == dev.backend
    np.testing.assert_array_equal(back.numpy(), np.arange(12).reshape(3, 4))
    back.numpy()[0, 0] = 99  # a copy: the original is untouched
    assert buf.numpy()[0, 0] == 0


def test_buffer_written_by_a_kernel_pickles_its_result(dev, lib):
    x = dev.asarray(np.arange(8, dtype=np.float32))
    y = dev.zeros(8)
    lib.scale(8, x, y, np.float32(2.0))  # not waited: pickling waits for the result
    np.testing.assert_array_equal(pickle.loads(pickle.dumps(y)).numpy(), np.arange(8) * 2 + 1)


def test_loaded_library_does_not_pickle_silently(lib):
    del lib.__dict__["_metalcall_recipe"]  # as a library from dev.load_library has none
    with pytest.raises(TypeError, match="cannot be pickled"):
        pickle.dumps(lib)
    with pytest.raises(TypeError, match="cannot be pickled"):
        pickle.dumps(lib.scale)


def _scale_chunk(kernel: mc.Kernel, chunk: np.ndarray) -> np.ndarray:
    return _run_scale(kernel, chunk, 0.5)


def test_process_pool_maps_a_kernel_over_chunks(lib):
    x = np.random.default_rng(0).random(4096, dtype=np.float32)
    chunks = np.array_split(x, 4)
    with concurrent.futures.ProcessPoolExecutor(max_workers=2,
                                                mp_context=multiprocessing.get_context("spawn")) as pool:
        results = list(pool.map(_scale_chunk, [lib.scale] * len(chunks), chunks))
    np.testing.assert_allclose(np.concatenate(results), x * 0.5 + 1, rtol=1e-6)


def test_dask_local_cluster_maps_a_kernel_over_blocks(lib):
    distributed = pytest.importorskip("dask.distributed", reason="dask[distributed] is not installed (optional)")
    da = pytest.importorskip("dask.array", reason="dask[array] is not installed (optional)")
    x = np.random.default_rng(1).random(4096, dtype=np.float32)
    kernel = lib.scale
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=":0") as cluster, distributed.Client(cluster):
        blocks = da.from_array(x, chunks=1024)
        y = blocks.map_blocks(lambda b: _run_scale(kernel, np.ascontiguousarray(b), 0.5), dtype=np.float32)
        np.testing.assert_allclose(y.compute(), x * 0.5 + 1, rtol=1e-6)
