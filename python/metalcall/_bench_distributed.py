"""`python -m metalcall bench --scheduler ADDRESS`: the standard suite on every worker of a Dask
cluster, each on its own device (the worker's METALCALL_DEVICE, or mc.Device()'s choice), run
one worker after another so that workers sharing a machine do not disturb each other's timings;
then one table of every worker's figures and their aggregate throughput. Needs dask.distributed.
"""

from __future__ import annotations

import os
import socket
from typing import Any

import metalcall as mc
from metalcall import _bench, _bench_suite


def worker_suite(quick: bool, max_size: int | None) -> dict[str, Any]:
    """The standard suite on this process's default device (what a Dask worker runs)."""
    settings = _bench_suite.Settings(quick, max_size)
    dev = mc.Device()
    sizes = _bench_suite.sweep_sizes(dev, settings)
    return {"host": socket.gethostname(), "pid": os.getpid(),
            "environment_device": os.environ.get("METALCALL_DEVICE"),
            "device": dev.info.as_dict(),
            "latency": _bench_suite.latency(dev, settings),
            "bandwidth": _bench_suite.bandwidth(dev, sizes, settings, lambda: None),
            "compute": _bench_suite.compute(dev, settings),
            "compile": _bench_suite.compile_times(dev, settings)}


def run_on_cluster(address: str, quick: bool, max_size: int | None) -> dict[str, dict[str, Any]]:
    """Every worker's suite, by worker address, one worker at a time."""
    try:
        from dask.distributed import Client
    except ImportError:
        raise RuntimeError("--scheduler needs dask.distributed: pip install 'dask[distributed]'") from None
    # Dask's connect timeout (distributed.comm.timeouts.connect, 30 s unless configured).
    with Client(address) as client:
        workers = sorted(client.scheduler_info()["workers"])
        if not workers:
            raise RuntimeError(f"the scheduler at {address} has no workers")
        results = {}
        for worker in workers:
            results.update(client.run(worker_suite, quick, max_size, workers=[worker]))
        return results


def cluster_table(results: dict[str, dict[str, Any]]) -> _bench.Table:
    """One row a worker and the aggregate: each device's c = a * b bandwidth at the largest size
    it swept, its FMA rate and its 1-element waited call."""
    rows, total_gbps, total_gflops = [], 0.0, 0.0
    for worker, r in results.items():
        top = r["bandwidth"]["mul"][-1]
        waited = next(row["seconds"] for row in r["latency"] if row["name"].startswith("waited"))
        total_gbps += top["gbps"]
        total_gflops += r["compute"]["gflops"]
        rows.append([worker, f"{r['device']['name']} ({r['device']['backend']}:{r['device']['index']})",
                     f"2^{top['elements'].bit_length() - 1}", f"{top['gbps']:.2f}", f"{r['compute']['gflops']:.2f}",
                     f"{waited * 1e6:.2f}"])
    rows.append([f"all {len(results)} workers", "aggregate (sum)", "", f"{total_gbps:.2f}", f"{total_gflops:.2f}", ""])
    return _bench.Table("Standard suite on every worker of the cluster (each timed alone)",
                        ["worker", "device", "largest size", "c = a * b GB/s", "FMA GFLOP/s", "waited call µs"], rows)
