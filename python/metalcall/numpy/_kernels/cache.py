"""Compiled-kernel memo, asynchronous launches and the dtype -> MSL type tables shared by the
kernel generators."""

from __future__ import annotations

import collections
import functools
import threading
from typing import Any, Callable

import numpy as np

import metalcall as mc

# (device, source, name, fast_math) -> Kernel. dev.compile caches too (memory and disk); this
# saves hashing the source again on every call.
_kernels: dict[tuple[Any, str, str, bool], mc.Kernel] = {}
_lock = threading.RLock()


def kernel(dev: mc.Device, source: str, name: str, *, fast_math: bool = True) -> mc.Kernel:
    """The kernel `name` of `source` compiled for `dev`, compiled once per process."""
    key = (dev, source, name, fast_math)
    k = _kernels.get(key)
    if k is None:
        k = dev.compile(source, fast_math=fast_math).function(name)
        with _lock:
            _kernels[key] = k
    return k


def simd_kernel(dev: mc.Device, source: Callable[[int], str], name: str, *, fast_math: bool = True) -> mc.Kernel:
    """The kernel `name` of the source `source(width)` generates for a SIMD-group width, built for the
    width its pipeline runs with: on Metal that is the pipeline's own threadExecutionWidth (8 to 64 on
    Intel and AMD GPUs), which the device's simd_width need not be (P2.1 item 4)."""
    width = dev.simd_width
    for _ in range(3):
        k = kernel(dev, source(width), name, fast_math=fast_math)
        if k.thread_execution_width == width:
            return k
        width = k.thread_execution_width
    raise mc.DeviceError(f"[metalcall.numpy] kernel {name!r}: its pipeline's SIMD-group width changes with the width "
                         "written into its source; please report this with the device's name")


def sized_kernel(dev: mc.Device, source: Callable[[int, int], str], name: str, threads: int, *, simd: bool = False,
                 fast_math: bool = True) -> tuple[mc.Kernel, int]:
    """(kernel, tg): the kernel `name` of `source(tg, width)`, a kernel written for threadgroups of tg
    threads, with tg = `threads` or, where its pipeline allows fewer, the largest power-of-two multiple
    of the SIMD-group width that it allows. A pipeline's maxTotalThreadsPerThreadgroup is its own
    (256 for some AMD and Intel pipelines, less for kernels that use many registers), not the
    device's. With `simd`, the source is built for the width its pipeline runs with (simd_kernel)
    and tg is at most width * width: a second SIMD-group pass combines the tg / width partial
    results, one per lane. Without, `width` is 1."""
    tg = threads
    for _ in range(4):
        if simd:
            k = simd_kernel(dev, lambda w: source(tg, w), name, fast_math=fast_math)
            width = k.thread_execution_width
        else:
            k, width = kernel(dev, source(tg, 1), name, fast_math=fast_math), 1
        limit = min(k.max_total_threads_per_threadgroup, width * width if simd else threads)
        if tg <= limit:
            return k, tg
        fit = width
        while fit * 2 <= limit:
            fit *= 2
        if fit > limit:
            break
        tg = fit
    raise mc.DeviceError(f"[metalcall.numpy] kernel {name!r}: its pipeline allows {k.max_total_threads_per_threadgroup} "
                         f"threads per threadgroup, fewer than it needs; please report this with the device's name")


# Dropping a Completion waits for its work, so launches keep theirs here until it is done; the
# Buffers' hazard tracking orders later calls and host reads. Finished ones are pruned without
# blocking; past _MAX_PENDING the oldest is dropped (waiting only if it still runs).
_MAX_PENDING = 4096
_pending: collections.deque[mc.Completion] = collections.deque()


def launch(k: mc.Kernel, grid: Any, *args: Any, threadgroup: Any = None, threadgroup_memory: Any = None) -> None:
    """Queues k(grid, *args) without waiting for it."""
    keep(k(grid, *args, threadgroup=threadgroup) if threadgroup_memory is None else
         k(grid, *args, threadgroup=threadgroup, threadgroup_memory=threadgroup_memory))


def keep(c: mc.Completion) -> None:
    """Keeps a launch's Completion until its work is done (dropping it would wait)."""
    with _lock:
        _pending.append(c)
        # Pruned every 16 launches (asking a CUDA call whether it is done records an event).
        if not len(_pending) & 15:
            while _pending and (_pending[0].done or len(_pending) > _MAX_PENDING):
                _pending.popleft()


# NumPy dtype -> MSL scalar type name.
_MSL = {
    "b": "bool", "i1": "char", "u1": "uchar", "i2": "short", "u2": "ushort", "i4": "int",
    "u4": "uint", "i8": "long", "u8": "ulong", "f2": "half", "f4": "float", "f8": "double",
}


@functools.lru_cache(maxsize=None)
def msl_type(dtype: Any) -> str:
    dt = np.dtype(dtype)
    key = "b" if dt.kind == "b" else f"{dt.kind}{dt.itemsize}"
    try:
        return _MSL[key]
    except KeyError:
        raise mc.ArgumentError(f"metalcall.numpy kernels do not support dtype {dt}") from None


def is_float(dtype: Any) -> bool:
    return np.dtype(dtype).kind == "f"


def literal(dtype: Any, value: float | int) -> str:
    """An MSL literal of `value` (±inf allowed for floats) typed as `dtype`."""
    dt = np.dtype(dtype)
    t = msl_type(dt)
    if dt.kind == "f":
        if value == float("inf"):
            return f"{t}(INFINITY)"
        if value == float("-inf"):
            return f"{t}(-INFINITY)"
        return f"{t}({float(value)!r})"
    if dt.kind == "b":
        return "true" if value else "false"
    v = int(value)
    if dt.kind == "i" and dt.itemsize == 8 and v == np.iinfo(np.int64).min:
        return "(-9223372036854775807L - 1)"
    suffix = {("i", 8): "L", ("u", 8): "UL", ("u", 4): "u"}.get((dt.kind, dt.itemsize), "")
    return f"{t}({v}{suffix})"


def accumulator(dtype: Any) -> np.dtype:
    """The type arithmetic runs in: half is widened to float, everything else stays."""
    dt = np.dtype(dtype)
    return np.dtype(np.float32) if dt == np.float16 else dt


def empty(dev: mc.Device, count: int, dtype: Any, *, zeroed: bool = False) -> mc.Buffer:
    """A flat Buffer of `count` elements; its contents are undefined unless `zeroed` (kernels here
    write every element of what they return). The device's allocator reuses freed Buffers' memory."""
    if zeroed:
        return dev.empty(int(count), np.dtype(dtype))
    return dev._empty(int(count), dtype)  # uninitialized, without keyword parsing


def header() -> str:
    return "#include <metal_stdlib>\nusing namespace metal;\n"


# Tests set this to run the GPU kernel variants on the CPU backend too.
force_gpu_variants = False


def uses_loops(dev: mc.Device) -> bool:
    """True where plain per-thread loops beat threadgroup/SIMD kernels: on the CPU backend,
    kernels with barriers or SIMD functions run each thread as a fiber."""
    return dev.backend == "cpu" and not force_gpu_variants


def nonempty(dev: mc.Device, buf: mc.Buffer, dtype: Any) -> mc.Buffer:
    """`buf`, or a one-element stand-in where it is empty (kernels refuse empty buffers; the
    stand-in is never read)."""
    return buf if buf.nbytes else empty(dev, 1, dtype, zeroed=True)
