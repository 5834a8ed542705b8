"""A sample program using metalcall's Python API, for checking the typed stubs:

    mypy --strict cpp/tests/api/stub_sample.py     # the stubs type it cleanly
    python cpp/tests/api/stub_sample.py            # and it really runs (CPU backend)

It uses every public name of metalcall._core the way DESIGN.md §2 shows, so a stub
that is wrong about a name, a parameter or a return type fails one of the two.
"""

from __future__ import annotations

import array
import os
import sys
import tempfile
from typing import Any

import numpy as np
import numpy.typing as npt

import metalcall as mc

SOURCE = """
#include <metal_stdlib>
using namespace metal;

constant float scale [[function_constant(0)]];
constant bool has_scale = is_function_constant_defined(scale);

kernel void mul(const device float* a [[buffer(0)]], const device float* b [[buffer(1)]],
                device float* c [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    c[i] = a[i] * b[i] * (has_scale ? scale : 1.0f);
}

kernel void add_n(device uint* out [[buffer(0)]], constant uint& n [[buffer(1)]],
                  uint2 p [[thread_position_in_grid]], uint2 size [[threads_per_grid]]) {
    out[p.y * size.x + p.x] = p.y * size.x + p.x + n;
}
"""


def check(condition: bool, what: str) -> None:
    if not condition:
        raise AssertionError(what)


def devices() -> mc.Device:
    names: list[str] = mc.backends()
    check("cpu" in names, "cpu backend")
    infos: list[mc.DeviceInfo] = mc.get_devices()
    cpu_info = next(i for i in infos if i.backend == "cpu")
    as_dict = cpu_info.as_dict()
    check(as_dict["name"] == cpu_info.name and as_dict["unified_memory"] == cpu_info.unified_memory, "as_dict")
    size: int = cpu_info.memory_size + cpu_info.max_buffer_length + cpu_info.threadgroup_memory_length
    check(size > 0 and cpu_info.simd_width > 0 and cpu_info.index >= 0, "DeviceInfo numbers")
    dev = mc.Device("cpu")
    same = mc.Device("cpu", checked=False)
    check(dev == same and hash(dev) == hash(same), "devices compare by identity")
    check(dev.info.name == dev.name and dev.backend == "cpu" and not dev.checked, "Device properties")
    check(dev.max_threads_per_threadgroup > 0 and isinstance(dev.architecture, str), "Device limits")
    check(dev.unified_memory and dev.memory_size > 0 and dev.max_buffer_length > 0, "Device memory")
    check(dev.threadgroup_memory_length > 0 and dev.simd_width == 32 and dev.index == 0, "Device numbers")
    try:
        mc.Device("no_such_backend")
    except mc.DeviceError as e:
        check("no_such_backend" in str(e), "DeviceError message")
    return dev


def buffers(dev: mc.Device) -> tuple[mc.Buffer, mc.Buffer]:
    a = dev.empty(16)
    b = dev.zeros((4, 4), np.float32)
    c = dev.asarray(np.arange(16, dtype=np.float32))
    raw = dev.buffer(64)
    copied = dev.buffer(b"\x01" * 8)
    check(a.nbytes == 64 and b.shape == (4, 4) and c.size == 16 and len(b) == 4, "Buffer sizes")
    check(a.dtype == np.dtype(np.float32) and raw.dtype == np.dtype(np.uint8) and a.device == dev, "Buffer types")
    view: npt.NDArray[Any] = c.numpy()
    check(float(view[3]) == 3.0, "numpy() view")
    check(bytes(copied.numpy()) == b"\x01" * 8, "a copy of bytes")
    check(np.asarray(b).shape == (4, 4), "np.asarray of a Buffer")
    if sys.version_info >= (3, 12):  # the buffer protocol is typed (PEP 688) from 3.12 on
        check(memoryview(copied).tobytes() == b"\x01" * 8, "memoryview of a Buffer")
    a.wait()
    return a, c


def calls(dev: mc.Device, a: mc.Buffer, c: mc.Buffer) -> None:
    lib: mc.Library = dev.compile(SOURCE, defines={"UNUSED": 1, "ALSO": None}, fast_math=True)
    check("mul" in lib and len(lib) == 2 and lib.function_names == list(lib), "Library contents")
    check("mul" in dir(lib), "dir(lib) lists kernels")
    mul: mc.Kernel = lib.mul
    check(lib["mul"].name == mul.name == "mul", "lookup")
    params = mul.params
    check(params[2]["name"] == "c" and params[2]["binding"] == 2 and not params[2]["const"], "reflection")
    check(params[3]["kind"] == "builtin" and params[3]["builtin"] == "thread_position_in_grid", "builtins")
    check(mul.max_total_threads_per_threadgroup > 0, "threadgroup limit")

    # NumPy arrays, Buffers and other buffer-protocol objects, grid first.
    x = np.arange(16, dtype=np.float32)
    out = np.zeros(16, np.float32)
    done: mc.Completion = mul(16, x, c, out)
    done.wait()
    check(done.done and done.gpu_time >= 0.0, "Completion")
    check(bool(np.all(out == x * x)), "mul with arrays")
    two = array.array("f", [2.0] * 16)
    with mul((16,), x, two, a, threadgroup=4) as handle:
        check(isinstance(handle, mc.Completion), "Completion as a context manager")
    check(bool(np.all(a.numpy() == 2 * x)), "mul with array.array")
    mul([4, 4], memoryview(two), bytearray(x.tobytes()), a, threadgroup=(4, 4), threadgroup_memory=[])

    # Function constants by name and index; scalars packed to `constant uint&`.
    scaled = lib.function("mul", constants={"scale": 3.0})
    scaled(16, x, two, out)
    check(bool(np.all(out == 6 * x)), "function constant by name")
    lib.function("mul", {0: np.float32(0.5)})(16, x, two, out)
    check(bool(np.all(out == x)), "function constant by index")
    grid = dev.empty((4, 8), np.uint32)
    lib.add_n((8, 4), grid, 5)
    lib.add_n((8, 4), grid, np.uint32(5))
    check(int(grid.numpy()[3, 7]) == 31 + 5, "2-D grid with a uint scalar")

    # Errors.
    try:
        mul(16, x, x)
    except mc.ArgumentError as e:
        check("takes 3 argument" in str(e), "ArgumentError message")
    try:
        dev.compile("kernel void k(device float* a [[buffer(0)]]) {\n  a[0] = nope;\n}\n")
    except mc.CompileError as e:
        line: int | None = e.line
        check(line == 2 and e.column is not None and "nope" in e.source_line and bool(e.log), "CompileError")
    try:
        mul(16, x, x, np.zeros(16, np.int32))
    except mc.Error as e:
        check(isinstance(e, mc.ArgumentError) and isinstance(e, mc.error), "Error hierarchy")
    check(issubclass(mc.ExecutionError, mc.Error), "ExecutionError")

    # What the stubs must refuse: under --strict (warn_unused_ignores) each ignore
    # below must be needed, and at run time each call fails as the comment says.
    refused = 0
    try:
        mul(16, "text", x, out)  # type: ignore[arg-type]  # str has no buffer protocol
    except mc.ArgumentError:
        refused += 1
    try:
        mul((1, 2, 3, 4), x, x, out)  # type: ignore[arg-type]  # a grid has 1 to 3 dimensions
    except mc.ArgumentError:
        refused += 1
    try:
        mul(16, x, x, out, threads=4)  # type: ignore[call-arg]  # not a keyword of a kernel call
    except mc.ArgumentError:
        refused += 1
    try:
        lib.function("mul", constants=[1.0])  # type: ignore[arg-type]  # constants is a dict
    except mc.ArgumentError:
        refused += 1
    try:
        mc.Buffer(16)  # type: ignore[arg-type]  # Buffers come from a Device
    except TypeError:
        refused += 1
    check(refused == 5, "refused calls raise")

    # Batches.
    with dev.batch() as batch:
        mul(16, a, a, c)
        check(len(batch) == 1, "recorded")
    batch.wait()
    check(batch.done and batch.completion.done and batch.gpu_time >= 0.0, "Batch")
    dev.synchronize()

    # metalcompute-style names.
    legacy = dev.kernel(SOURCE).function("mul")
    legacy(16, x, x, out)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            dev.load_library(os.path.join(tmp, "missing.metallib"))
    except (mc.DeviceError, OSError):
        pass


def main() -> None:
    print(f"metalcall {mc.__version__}")
    dev = devices()
    a, c = buffers(dev)
    calls(dev, a, c)
    print("stub_sample: ok")


if __name__ == "__main__":
    main()
