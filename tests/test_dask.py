"""metalcall on a Dask cluster of worker processes (docs/distributed.md): pickled Kernels and
Buffers, a kernel per chunk of a dask array, metalcall.numpy arrays as chunks, one device per
worker through METALCALL_DEVICE, and `python -m metalcall bench --scheduler`. The `test` extra
installs dask[array,distributed]; without it these skip, saying so."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

import metalcall as mc

distributed = pytest.importorskip("dask.distributed", reason="dask[distributed] is not installed: pip install '.[test]'")
da = pytest.importorskip("dask.array", reason="dask[array] is not installed: pip install '.[test]'")

SOURCE = """
#include <metal_stdlib>
using namespace metal;
kernel void axpb(const device float* x [[buffer(0)]], device float* y [[buffer(1)]],
                 constant float& a [[buffer(2)]], constant float& b [[buffer(3)]],
                 uint i [[thread_position_in_grid]]) { y[i] = a * x[i] + b; }
"""


@pytest.fixture(scope="module")
def cluster():
    # Two worker processes, each told its device as a GPU worker would be (METALCALL_DEVICE=cuda:N).
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0",
                                  env={"METALCALL_DEVICE": "cpu"}) as cluster, distributed.Client(cluster) as client:
        yield cluster, client


def _axpb(kernel: mc.Kernel, block: np.ndarray, a: float, b: float) -> np.ndarray:
    # Dask hands blocks that may be unaligned views of its transfer frames: the call copies those
    # itself (tests/test_misaligned_host.py); a C-contiguous float32 block is all it needs.
    block = np.require(block, np.float32, ["C"])
    out = np.empty_like(block)
    kernel(len(block), block, out, a, b).wait()
    return out


def _worker_identity() -> tuple[int, str]:
    import os

    return os.getpid(), mc.Device().backend


def test_each_worker_opens_its_own_device(cluster):
    _, client = cluster
    identities = client.run(_worker_identity)
    assert len(identities) == 2
    assert len({pid for pid, _ in identities.values()}) == 2
    assert {backend for _, backend in identities.values()} == {"cpu"}


def test_pickled_kernel_and_buffers_run_on_workers(cluster):
    _, client = cluster
    dev = mc.Device("cpu")
    kernel = dev.compile(SOURCE).axpb
    x = np.random.default_rng(0).random(5000, dtype=np.float32)
    buffers = [dev.asarray(part) for part in np.array_split(x, 4)]

    def run(kernel: mc.Kernel, buf: mc.Buffer) -> mc.Buffer:  # a Buffer in, a Buffer back: both pickle by value
        out = buf.device.empty(len(buf), np.float32)
        kernel(len(buf), buf, out, 3.0, -1.0).wait()
        return out

    futures = client.map(run, [kernel] * len(buffers), buffers, pure=False)
    results = client.gather(futures)
    assert all(isinstance(r, mc.Buffer) for r in results)
    np.testing.assert_allclose(np.concatenate([np.asarray(r) for r in results]), 3 * x - 1, rtol=1e-6, atol=1e-6)
    workers = {w for who in client.who_has(futures).values() for w in who}
    assert len(workers) == 2, f"both workers should have run blocks: {workers}"


def test_map_blocks_runs_a_kernel_per_chunk(cluster):
    kernel = mc.Device("cpu").compile(SOURCE).axpb
    x = np.random.default_rng(1).random((64, 300), dtype=np.float32)
    blocks = da.from_array(x, chunks=(16, 300))
    y = blocks.map_blocks(lambda b: _axpb(kernel, b.ravel(), 0.5, 2.0).reshape(b.shape), dtype=np.float32)
    np.testing.assert_allclose(y.compute(), 0.5 * x + 2, rtol=1e-6, atol=1e-6)


def test_metalcall_numpy_arrays_as_chunks(cluster):
    # Chunks that are metalcall.numpy arrays on the workers: made there, computed there, gathered
    # to the client as NumPy (mnp arrays pickle through the buffer protocol).
    import metalcall.numpy as mnp

    x = np.random.default_rng(2).random(4096, dtype=np.float32)
    blocks = da.from_array(x, chunks=1024)

    def on_device(block: np.ndarray) -> np.ndarray:
        z = mnp.sin(mnp.asarray(np.require(block, np.float32, ["C", "A"]))) * 2 + 1   # one fused kernel
        return np.asarray(z)

    y = blocks.map_blocks(on_device, dtype=np.float32)
    np.testing.assert_allclose(y.compute(), np.sin(x) * 2 + 1, rtol=1e-5, atol=1e-6)


def test_bench_on_every_worker(cluster, tmp_path):
    scheduler = cluster[0].scheduler_address
    out = tmp_path / "cluster.json"
    p = subprocess.run([sys.executable, "-m", "metalcall", "bench", "--scheduler", scheduler, "--quick",
                        "--max-size", "2^12", "--plain", "--json", str(out)],
                       capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert p.returncode == 0, p.stdout + p.stderr
    report = json.loads(out.read_text())
    assert report["mode"] == "cluster" and report["checked"] is True
    workers = report["workers"]
    assert set(workers) == set(cluster[0].scheduler_info["workers"])
    total = 0.0
    for address, r in workers.items():
        assert r["device"]["backend"] == "cpu" and r["environment_device"] == "cpu"
        assert [p["elements"] for p in r["bandwidth"]["mul"]] == [1 << 10, 1 << 12]
        total += r["bandwidth"]["mul"][-1]["gbps"]
        assert address in p.stdout
    (aggregate,) = [line for line in p.stdout.splitlines() if line.startswith("all 2 workers")]
    assert f"{total:.2f}" in aggregate


def test_bench_scheduler_errors(tmp_path):
    # Dask retries a refused connection until its connect timeout (30 s by default): 2 s here.
    env = dict(os.environ, DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT="2s")
    p = subprocess.run([sys.executable, "-m", "metalcall", "bench", "--scheduler", "tcp://127.0.0.1:9", "--quick"],
                       capture_output=True, text=True, timeout=120, cwd=tmp_path, env=env)
    assert p.returncode == 2 and "127.0.0.1:9" in p.stderr
    p = subprocess.run([sys.executable, "-m", "metalcall", "bench", "--scheduler", "tcp://127.0.0.1:9", "--compare"],
                       capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert p.returncode == 2 and "--scheduler" in p.stderr
