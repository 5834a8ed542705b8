"""Kernel.benchmark and its BenchmarkResult: device-side timing statistics of one kernel call.

Attached to metalcall.Kernel by metalcall/__init__.py; `python -m metalcall bench` builds on it.
metalcall.benchmark (benchmark.py) re-exports the public names of this module.
"""

from __future__ import annotations

import math
import operator
import statistics
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Optional, Sequence, Union

from . import _core

# The clocks a result can come from (BenchmarkResult.clock).
DEVICE, HOST = "device", "host"


@dataclass(frozen=True)
class BenchmarkResult:
    """Statistics of `n` timed calls of one kernel; every time is in seconds.

    ``clock`` is "device" when the times are the device's own (Completion.gpu_time, or a
    timed batch's on CUDA) and "host" when only the host's wall clock around call + wait
    was available; ``clock_detail`` says which and why. ``gbps``/``gflops`` come from the
    median and the ``bytes``/``flops`` one call moves/does, when they were given.
    ``launch_overhead`` is the host time per call of issuing back-to-back calls of the
    same kernel and arguments on a 1-thread grid (a kept Completion each, the final wait
    not counted): what a call costs the host, apart from the work it queues.
    """

    kernel: str
    device: str
    backend: str
    grid: tuple[int, ...]
    n: int
    clock: str
    clock_detail: str
    min: float
    median: float
    mean: float
    stdev: float
    iqr: float
    max: float
    host_median: float  # host wall time of call + wait, median over the same calls
    launch_overhead: float
    bytes: Optional[int] = None
    flops: Optional[int] = None
    gbps: Optional[float] = None
    gflops: Optional[float] = None
    samples: tuple[float, ...] = field(default=(), repr=False)

    def to_dict(self) -> dict[str, Any]:
        """Every field as JSON-safe values (NaN and infinities become None)."""
        out = asdict(self)
        out["grid"] = list(self.grid)
        out["samples"] = [_json_float(s) for s in self.samples]
        for key, value in out.items():
            if isinstance(value, float):
                out[key] = _json_float(value)
        return out

    def __str__(self) -> str:
        rates = []
        if self.gbps is not None:
            rates.append(f"{self.gbps:.2f} GB/s")
        if self.gflops is not None:
            rates.append(f"{self.gflops:.2f} GFLOP/s")
        rate = f", {', '.join(rates)}" if rates else ""
        return (
            f"{self.kernel} on {self.device} ({self.backend}), grid {self.grid}: "
            f"median {format_seconds(self.median)} (min {format_seconds(self.min)}, "
            f"mean {format_seconds(self.mean)} ± {format_seconds(self.stdev)}, IQR {format_seconds(self.iqr)}, "
            f"max {format_seconds(self.max)}) over {self.n} calls, {self.clock} clock{rate}; "
            f"launch overhead {format_seconds(self.launch_overhead)} per call"
        )

    def __repr__(self) -> str:
        return f"<BenchmarkResult {self}>"


def format_seconds(seconds: float) -> str:
    """A time with a unit a person reads at a glance: 12.3 µs, 4.56 ms, 1.20 s."""
    if not math.isfinite(seconds):
        return "n/a"
    if seconds < 1e-3:
        return f"{seconds * 1e6:.2f} µs"
    if seconds < 1:
        return f"{seconds * 1e3:.3f} ms"
    return f"{seconds:.3f} s"


def _json_float(value: float) -> Optional[float]:
    return value if math.isfinite(value) else None


GridLike = Union[int, Sequence[int]]


def _count(name: str, value: Any, minimum: int) -> int:
    """An int argument of benchmark() at least `minimum`; else _core.ArgumentError (also a ValueError/TypeError)."""
    if isinstance(value, bool) or not hasattr(value, "__index__"):
        raise _core.ArgumentError(f"benchmark({name}=...) takes an int, not {type(value).__name__}")
    value = operator.index(value)
    if value < minimum:
        raise _core.ArgumentError(f"benchmark({name}=...) must be at least {minimum}, got {value}")
    return value


def benchmark(
    self: _core.Kernel,
    grid: GridLike,
    /,
    *args: Any,
    repeat: int = 100,
    warmup: int = 10,
    bytes: Optional[int] = None,
    flops: Optional[int] = None,
    threadgroup: Optional[GridLike] = None,
    threadgroup_memory: Any = None,
    textures: Any = None,
    samplers: Any = None,
) -> BenchmarkResult:
    """Times ``kernel(grid, *args, threadgroup=..., threadgroup_memory=..., textures=..., samplers=...)``: `warmup` untimed
    calls, then `repeat` timed ones, each waited before the next, so each time is one call's.

    Device time where the backend gives it: Completion.gpu_time on the CPU, on Metal and on a
    CUDA device opened with ``timing=True``; on another CUDA device, batches of two calls
    (CUDA times every batch of more than one call) and half of each batch's time. Host time of
    call + wait otherwise, said so in ``clock_detail``. The arguments are used as given: the
    kernel's last call leaves its results in them.
    """
    kernel = self  # a method of _core.Kernel: named self so that its signature matches the stub's
    repeat = _count("repeat", repeat, 1)
    warmup = _count("warmup", warmup, 0)
    bytes = None if bytes is None else _count("bytes", bytes, 0)
    flops = None if flops is None else _count("flops", flops, 0)
    options: dict[str, Any] = {}
    if threadgroup is not None:
        options["threadgroup"] = threadgroup
    if threadgroup_memory is not None:
        options["threadgroup_memory"] = threadgroup_memory
    if textures is not None:
        options["textures"] = textures
    if samplers is not None:
        options["samplers"] = samplers

    def call() -> _core.Completion:
        return kernel(grid, *args, **options)

    first = call()  # compiles nothing more, but surfaces argument errors before any timing
    first.wait()
    for _ in range(warmup):
        call().wait()

    device = _find_device(call, _device_of(args))
    if math.isfinite(first.gpu_time):
        clock, detail = DEVICE, "Completion.gpu_time of each call"
        samples, host = _per_call(call, repeat)
    elif device is not None and _pair_is_timed(call, device):
        clock = DEVICE
        detail = ("CUDA times single calls only on Device(..., timing=True): each sample is the device time "
                  "of a batch of 2 calls, halved")
        samples, host = _batched_pairs(call, device, repeat)
    else:
        clock, detail = HOST, "the backend reported no device time: host wall clock of call + wait"
        samples, host = _host_only(call, repeat)

    overhead = _launch_overhead(kernel, grid, args, options, repeat)
    return _result(kernel, device, grid, clock, detail, samples, host, overhead, bytes, flops)


def _per_call(call: Callable[[], _core.Completion], repeat: int) -> tuple[list[float], list[float]]:
    samples, host = [], []
    for _ in range(repeat):
        start = time.perf_counter()
        completion = call()
        completion.wait()
        host.append(time.perf_counter() - start)
        samples.append(completion.gpu_time)
    return samples, host


def _batched_pairs(call: Callable[[], _core.Completion], dev: _core.Device,
                   repeat: int) -> tuple[list[float], list[float]]:
    samples, host = [], []
    for _ in range(repeat):
        start = time.perf_counter()
        with dev.batch() as batch:
            call()
            call()
        batch.wait()
        host.append((time.perf_counter() - start) / 2)
        samples.append(batch.gpu_time / 2)
    return samples, host


def _host_only(call: Callable[[], _core.Completion], repeat: int) -> tuple[list[float], list[float]]:
    host = []
    for _ in range(repeat):
        start = time.perf_counter()
        call().wait()
        host.append(time.perf_counter() - start)
    return host, host


def _device_of(args: Sequence[Any]) -> Optional[_core.Device]:
    """The device of the first _core.Buffer argument, if any (a Kernel does not expose its own)."""
    for a in args:
        if isinstance(a, _core.Buffer):
            return a.device
    return None


def _find_device(call: Callable[[], _core.Completion], hint: Optional[_core.Device]) -> Optional[_core.Device]:
    """The Device whose batch() records this kernel's calls; None if no handle we can open does.

    A Kernel does not say which Device compiled it, so the candidates are the device of a Buffer
    argument, then every device opened without options (the registry hands back the very device
    the kernel was compiled on, unless that was opened checked or with timing=True), then the
    default device.
    """
    candidates = [hint] if hint is not None else []
    candidates += [_core.Device(f"{info.backend}:{info.index}") for info in _core.get_devices()]
    try:  # the default device: METALCALL_DEVICE may name one get_devices() does not list (metal-sim)
        candidates.append(_core.Device())
    except _core.DeviceError:
        pass
    for dev in candidates:
        with dev.batch() as batch:
            call()
            recorded = len(batch)
        batch.wait()
        if recorded == 1:
            return dev
    return hint


def _pair_is_timed(call: Callable[[], _core.Completion], dev: _core.Device) -> bool:
    with dev.batch() as batch:
        call()
        call()
    batch.wait()
    return math.isfinite(batch.gpu_time) and batch.gpu_time > 0


def _launch_overhead(kernel: _core.Kernel, grid: GridLike, args: Sequence[Any], options: dict[str, Any],
                     repeat: int) -> float:
    """Host seconds per call of issuing `repeat` calls on a 1-thread grid; the least of 3 rounds."""
    ones: GridLike = 1 if isinstance(grid, int) or not hasattr(grid, "__len__") else tuple(1 for _ in grid)
    small = {k: v for k, v in options.items() if k != "threadgroup"}
    count = max(repeat, 10)
    best = math.inf
    for _ in range(3):
        start = time.perf_counter()
        kept = [kernel(ones, *args, **small) for _ in range(count)]
        elapsed = time.perf_counter() - start
        for completion in kept:
            completion.wait()
        best = min(best, elapsed / count)
    return best


def _result(kernel: _core.Kernel, device: Optional[_core.Device], grid: GridLike, clock: str, detail: str,
            samples: list[float], host: list[float], overhead: float, nbytes: Optional[int],
            flops: Optional[int]) -> BenchmarkResult:
    ordered = sorted(samples)
    median = statistics.median(ordered)
    if len(ordered) >= 2:
        q1, _, q3 = statistics.quantiles(ordered, n=4, method="inclusive")
        stdev = statistics.stdev(ordered)
    else:
        q1 = q3 = ordered[0]
        stdev = 0.0
    grid_tuple = (int(grid),) if isinstance(grid, int) else tuple(int(g) for g in grid)
    return BenchmarkResult(
        kernel=kernel.name,
        device=device.name if device is not None else "unknown",
        backend=device.backend if device is not None else "unknown",
        grid=grid_tuple,
        n=len(ordered),
        clock=clock,
        clock_detail=detail,
        min=ordered[0],
        median=median,
        # fmean of equal samples can round one ulp past them (8e-08 * 3 / 3): kept within the range.
        mean=min(max(statistics.fmean(ordered), ordered[0]), ordered[-1]),
        stdev=stdev,
        iqr=q3 - q1,
        max=ordered[-1],
        host_median=statistics.median(host),
        launch_overhead=overhead,
        bytes=nbytes,
        flops=flops,
        gbps=nbytes / median / 1e9 if nbytes is not None and median > 0 else None,
        gflops=flops / median / 1e9 if flops is not None and median > 0 else None,
        samples=tuple(ordered),
    )
