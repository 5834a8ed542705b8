"""The peers `python -m metalcall bench --compare` times beside metalcall: NumPy always, and
numba, torch and CuPy where installed. Each peer does the suite's operations (1-element
multiply, copy, c = a * b) and its results are checked against NumPy's before timing.
"""

from __future__ import annotations

import importlib.util
import statistics
import time
from typing import Any, Callable, Optional

import numpy as np

from metalcall import _bench


def median_seconds(run: Callable[[], object], budget: float, sync: Callable[[], object] = lambda: None,
                   most: int = 200) -> float:
    """Median host seconds of run() (+ sync) over as many calls as fit the budget (3 to `most`)."""
    run()
    sync()
    start = time.perf_counter()
    run()
    sync()
    first = time.perf_counter() - start
    count = int(min(most, max(3, budget / max(first, 1e-9))))
    times = []
    for _ in range(count):
        start = time.perf_counter()
        run()
        sync()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


class Peer:
    """One library's versions of the suite's operations on arrays it owns."""

    name = ""
    version = ""

    def prepare(self, a: np.ndarray, b: np.ndarray) -> None:
        raise NotImplementedError

    def mul(self) -> None:
        raise NotImplementedError

    def copy(self) -> None:
        raise NotImplementedError

    def sync(self) -> None:
        pass

    def result(self) -> np.ndarray:
        raise NotImplementedError


class NumpyPeer(Peer):
    name = "numpy"

    def __init__(self) -> None:
        self.version = np.__version__

    def prepare(self, a, b):
        self.a, self.b, self.c = a, b, np.empty_like(a)

    def mul(self):
        np.multiply(self.a, self.b, out=self.c)

    def copy(self):
        np.copyto(self.c, self.a)

    def result(self):
        return self.c


class NumbaPeer(Peer):
    """A compiled serial loop: numba's parallel pool wakes up in milliseconds on a busy 2-core machine,
    which would make the comparison about thread scheduling."""

    name = "numba (njit)"

    def __init__(self) -> None:
        import numba

        self.version = numba.__version__

        @numba.njit(cache=False)
        def mul(a, b, c):
            for i in range(a.shape[0]):
                c[i] = a[i] * b[i]

        @numba.njit(cache=False)
        def copy(a, c):
            for i in range(a.shape[0]):
                c[i] = a[i]

        self._mul, self._copy = mul, copy

    def prepare(self, a, b):
        self.a, self.b, self.c = a, b, np.empty_like(a)

    def mul(self):
        self._mul(self.a, self.b, self.c)

    def copy(self):
        self._copy(self.a, self.c)

    def result(self):
        return self.c


class TorchPeer(Peer):
    def __init__(self) -> None:
        import torch

        self.torch = torch
        self.version = torch.__version__
        self.where = "cuda" if torch.cuda.is_available() else "cpu"
        self.name = f"torch ({self.where})"

    def prepare(self, a, b):
        t = self.torch
        self.a, self.b = t.from_numpy(a).to(self.where), t.from_numpy(b).to(self.where)
        self.c = t.empty_like(self.a)

    def mul(self):
        self.torch.mul(self.a, self.b, out=self.c)

    def copy(self):
        self.c.copy_(self.a)

    def sync(self):
        if self.where == "cuda":
            self.torch.cuda.synchronize()

    def result(self):
        return self.c.cpu().numpy()


class CupyPeer(Peer):
    name = "cupy"

    def __init__(self) -> None:
        import cupy

        self.cp = cupy
        self.version = cupy.__version__
        cupy.cuda.runtime.getDeviceCount()  # raises without a usable GPU

    def prepare(self, a, b):
        self.a, self.b = self.cp.asarray(a), self.cp.asarray(b)
        self.c = self.cp.empty_like(self.a)

    def mul(self):
        self.cp.multiply(self.a, self.b, out=self.c)

    def copy(self):
        self.cp.copyto(self.c, self.a)

    def sync(self):
        self.cp.cuda.get_current_stream().synchronize()

    def result(self):
        return self.cp.asnumpy(self.c)


def available_peers() -> tuple[list[Peer], dict[str, str]]:
    """NumPy and every optional peer that imports and works here; and why the others were left out."""
    peers: list[Peer] = [NumpyPeer()]
    skipped: dict[str, str] = {}
    for module, make in (("numba", NumbaPeer), ("torch", TorchPeer), ("cupy", CupyPeer)):
        if importlib.util.find_spec(module) is None:
            skipped[module] = "not installed"
            continue
        try:
            peers.append(make())
        except Exception as e:  # a broken install or no GPU: say so, run the others
            skipped[module] = f"unusable: {type(e).__name__}: {e}"
    return peers, skipped


def measure(peer: Peer, sizes: list[int], budget: float) -> dict[str, Any]:
    """The peer's 1-element multiply latency and its copy and c = a * b GB/s at each size, checked."""
    out: dict[str, Any] = {"name": peer.name, "version": peer.version, "copy": [], "mul": []}
    a1, b1 = _bench._random(1, 1), _bench._random(1, 2)
    peer.prepare(a1, b1)
    out["latency"] = median_seconds(peer.mul, budget, peer.sync, most=2000)
    for n in sizes:
        a, b = _bench._random(n, 1), _bench._random(n, 2)
        peer.prepare(a, b)
        for op, nbytes, want in (("copy", _bench.BYTES_PER_COPY_ELEMENT, a), ("mul", _bench.BYTES_PER_MUL_ELEMENT, None)):
            run = peer.copy if op == "copy" else peer.mul
            run()
            peer.sync()
            expected = a * b if want is None else want
            _bench.check(np.array_equal(peer.result(), expected), f"{peer.name} {op} at {n}")
            seconds = median_seconds(run, budget, peer.sync)
            out[op].append({"elements": n, "bytes": nbytes * n, "seconds": seconds, "gbps": nbytes * n / seconds / 1e9})
    return out


def numpy_compute(n: int, budget: float) -> Optional[dict[str, Any]]:
    """NumPy's GFLOP/s on the compute-heavy recurrence (in-place float32 ops on cached slices)."""
    a, b = _bench._random(n, 1), -_bench._random(n, 2)
    out = np.empty(n, np.float32)
    seconds = median_seconds(lambda: _bench.numpy_heavy(a, b, out), budget, most=5)
    flops = _bench.HEAVY_FLOPS_PER_ELEMENT * n
    return {"name": "numpy", "elements": n, "flops": flops, "seconds": seconds, "gflops": flops / seconds / 1e9}
