"""Runtime plumbing of metalcall.numpy: the default device, the in-memory kernel cache
(keyed by device and generated source) and the list of in-flight Completions.

Why keep Completions: dropping a metalcall Completion waits for its work. Operations
keep theirs here so that a chain of kernel calls queues without waiting; finished
ones are pruned (Completion.done never blocks) and the list is bounded."""

from __future__ import annotations

import collections
import contextlib
import threading

import metalcall as mc

from . import _dtypes as D

_state = threading.local()
_default_device = None
_kernels: dict = {}
_pending: collections.deque = collections.deque()
_MAX_PENDING = 4096


def default_device() -> mc.Device:
    d = getattr(_state, "device", None)
    if d is not None:
        return d
    global _default_device
    if _default_device is None:
        _default_device = mc.Device()
        _seen.setdefault(_default_device, _default_device)
    return _default_device


def set_default_device(device) -> None:
    """Sets the process-wide default device (a mc.Device, a name like "cpu", or None for the best)."""
    global _default_device
    _default_device = as_device(device) if device is not None else mc.Device()


@contextlib.contextmanager
def default_device_scope(device):
    """``with mnp.device_scope("cpu"):`` — arrays created inside default to that device (this thread)."""
    old = getattr(_state, "device", None)
    _state.device = as_device(device)
    try:
        yield _state.device
    finally:
        _state.device = old


# Every device arrays were made on, for synchronize(). Keyed (like the caches below) by the Device
# itself: cpu:0 and cpu:0 checked are two devices, and a checked one must run its own kernels.
_seen: dict = {}


def as_device(device) -> mc.Device:
    if device is None:
        return default_device()
    if isinstance(device, mc.Device):
        _seen.setdefault(device, device)
        return device
    if isinstance(device, (str, int)):
        d = mc.Device(device)
        _seen.setdefault(d, d)
        return d
    raise TypeError(f"metalcall.numpy: {device!r} is not a device (use a metalcall.Device or a name like 'cpu')")


def kernel(device, source: str, name: str):
    """The compiled kernel `name` of `source` on `device`, compiled once per process."""
    key = (device, source, name)
    kern = _kernels.get(key)
    if kern is None:
        # IEEE: NaN and inf behave as in NumPy; the complex structs a source names are declared in it.
        lib = device.compile(D.declare_types(source), fast_math=False)
        kern = _kernels[key] = lib[name]
    return kern


def launch(kern, grid, *args, **kw):
    """Calls a kernel and keeps its Completion so the call does not wait."""
    c = kern(grid, *args, **kw)
    keep(c)
    return c


def keep(completion) -> None:
    _pending.append(completion)
    # Finished ones are pruned every 16 launches: asking a CUDA call whether it is done records an
    # event and queries it (~1-2 µs of host time), and the queue reaps finished work by itself.
    if not len(_pending) & 15:
        while _pending and _pending[0].done:
            _pending.popleft()
    if len(_pending) > _MAX_PENDING:
        _pending.popleft().wait()


# Large results in flight, bounded: the host enqueues a 1e8-element elementwise kernel in tens of
# µs and the GPU runs it in hundreds, so a loop of them ran ~200 ahead, each result a new 400 MB
# pool block (a freed block is reused only once the GPU is done with it) that the driver allocated
# and the GPU first touched at page-fault speed: rounds 10x slower than the kernel, erratic
# (benchmarks/RESULTS.md, fused (x+y)*(x-y)+1 at 1e8). Past LARGE_IN_FLIGHT bytes the oldest is
# waited for (the GPU still has the others queued), so blocks come back and are reused.
LARGE_RESULT = 32 << 20  # bytes: results from here on are counted
LARGE_IN_FLIGHT = 2 << 30
_large: collections.deque = collections.deque()  # (Completion, bytes)
_large_bytes = 0


def bound_in_flight(completion, nbytes: int) -> None:
    """Counts a launch writing `nbytes` of results (>= LARGE_RESULT) and waits for the oldest
    counted ones while more than LARGE_IN_FLIGHT bytes (and more than two launches) are queued."""
    global _large_bytes
    _large.append((completion, nbytes))
    _large_bytes += nbytes
    while _large_bytes > LARGE_IN_FLIGHT and len(_large) > 2:
        oldest, size = _large.popleft()
        _large_bytes -= size
        oldest.wait()


def synchronize(device=None) -> None:
    """Waits for all work metalcall.numpy submitted (raising an ExecutionError if one failed),
    including kernels launched by other modules (_kernels) on the devices arrays were made on."""
    global _large_bytes
    while _pending:
        _pending.popleft().wait()
    _large.clear()  # all of them were in _pending too
    _large_bytes = 0
    if device is not None:
        as_device(device).synchronize()
        return
    first = default_device()
    first.synchronize()
    for d in list(_seen.values()):
        if d is not first:  # the default device is among them: one wait is enough
            d.synchronize()


def result_buffer(device, shape, dtype):
    """A buffer for a result that a kernel will overwrite entirely (contents undefined). The
    device's allocator hands out the memory of freed Buffers again (docs/design.md, "Device
    memory"), whose pages are already in place: a new buffer's first touch costs page faults
    that doubled the time of a memory-bound kernel on the CPU. Work still queued on the old
    Buffer holds its memory, so it is never handed out early."""
    return device._empty(shape, dtype)  # empty(..., uninitialized=True) without keyword parsing


def clear_pool() -> None:
    """Frees the memory the devices arrays were made on keep for reuse (Device.empty_cache);
    pydotcompute's clear_cache."""
    for d in list(_seen.values()):
        d.empty_cache()
