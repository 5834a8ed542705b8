"""Typed stubs for metalcall's compiled core (cpp/python/*.cpp).

Use the ``metalcall`` package, which re-exports these names. cpp/tests/api/check_stubs.sh
checks them against the built extension (mypy.stubtest) and types a sample program
with them (mypy --strict cpp/tests/api/stub_sample.py).
"""

import os
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from types import TracebackType
from typing import Any, Literal, NoReturn, SupportsIndex, TypedDict, final

import numpy as np
import numpy.typing as npt

from metalcall.benchmark import BenchmarkResult

if sys.version_info >= (3, 11):
    from typing import Self
else:
    from typing_extensions import Self

# The buffer protocol (PEP 688): bytes, bytearray, memoryview, array.array, ctypes
# objects, … NumPy's stubs give ndarray __buffer__ only on 3.12+, hence NDArray below.
if sys.version_info >= (3, 12):
    from collections.abc import Buffer as _Buffer
else:
    from typing_extensions import Buffer as _Buffer

__version__: str

# ---- type aliases (stub-only) ----

# An object with the buffer protocol: used in place by a call, or copied by dev.buffer().
_BufferLike = _Buffer | npt.NDArray[Any]

# A grid or threadgroup size in threads: an int or 1 to 3 ints.
_Size3 = (
    SupportsIndex
    | tuple[SupportsIndex]
    | tuple[SupportsIndex, SupportsIndex]
    | tuple[SupportsIndex, SupportsIndex, SupportsIndex]
    | list[SupportsIndex]
)
# A Buffer's shape: an int or an iterable of ints.
_Shape = SupportsIndex | Iterable[SupportsIndex]
# A Python or NumPy scalar, packed to the declared type of a `constant T&` / by-value parameter.
_Scalar = int | float | np.generic
# One kernel argument after the grid, bound by order to the kernel's [[buffer(i)]] parameters.
# None: for a parameter its [[function_constant]] leaves out (docs/design.md).
_KernelArgument = Buffer | _BufferLike | _Scalar | None
# A [[function_constant(i)]] value.
_ScalarConstant = bool | int | float | np.bool_ | np.integer[Any] | np.floating[Any]
# A vector constant (ushort2, float4 ...): one value per component.
_ConstantValue = _ScalarConstant | tuple[_ScalarConstant, ...] | list[_ScalarConstant] | npt.NDArray[Any]
_Constants = Mapping[str, _ConstantValue] | Mapping[int, _ConstantValue] | Mapping[str | int, _ConstantValue]
# Preprocessor macros: {name: value} (None: defined empty; bool: 1/0; float: a float literal) or [names].
_Defines = Mapping[str, str | int | float | None] | Iterable[str]

_ScalarName = Literal[
    "bool", "char", "uchar", "short", "ushort", "int", "uint", "long", "ulong", "half", "bfloat", "float", "double",
    "unknown",
]

# One entry of Kernel.params (the reflection table).
_KernelParam = TypedDict(
    "_KernelParam",
    {
        "name": str,
        "position": int,
        "binding": int | None,  # the i of [[buffer(i)]] / [[threadgroup(i)]]; None for builtins
        "kind": Literal["buffer", "reference", "value", "threadgroup_memory", "builtin", "texture", "sampler"],
        "address_space": Literal["none", "device", "constant", "threadgroup", "thread"],
        "type": str,
        "scalar": _ScalarName,
        "vector_width": int,
        "const": bool,
        "builtin": str | None,  # e.g. "thread_position_in_grid"
        "element_size": int,
        "element_align": int,
        "grid_indexed": bool,
        "function_constant": str | None,  # [[function_constant(name)]]: the constant it depends on
        "enabled": bool,  # False: its function constant is false here; the call passes None
    },
)

class _DeviceInfoDict(TypedDict):
    name: str
    backend: str
    index: int
    architecture: str
    max_threads_per_threadgroup: int
    simd_width: int
    unified_memory: bool
    memory_size: int
    max_buffer_length: int
    threadgroup_memory_length: int

# ---- pybind11 classes ----

class _pybind11_type(type):
    """The metaclass of every pybind11 class (pybind11_builtins.pybind11_type at run time)."""

# DeviceInfo, Buffer, Library, Kernel and Batch have no constructor: instances come
# from Device, Library and Kernel; calling the class raises TypeError at run time.

# ---- errors ----

class Error(RuntimeError):
    """Base of every error metalcall raises."""

class CompileError(Error):
    """The kernel source did not compile."""

    log: str
    line: int | None  # 1-based line in your source; None when unknown
    column: int | None  # 1-based column; None when unknown
    source_line: str

class ArgumentError(Error, TypeError, ValueError):
    """A call's arguments, grid or threadgroup do not fit the kernel (also a TypeError and a ValueError)."""

class ExecutionError(Error):
    """The device reported a fault while running work."""

class DeviceError(Error):
    """A backend or device is unavailable; the message says why."""

class CacheWarning(RuntimeWarning):
    """The kernel cache could not be used as usual (a full disk): the compile went on in another folder."""

# ---- devices ----

class DeviceInfo(metaclass=_pybind11_type):
    """What a device is, as get_devices() lists it."""

    def __init__(self, *args: NoReturn, **kwargs: NoReturn) -> None: ...  # no constructor
    @property
    def name(self) -> str: ...
    @property
    def backend(self) -> str: ...
    @property
    def index(self) -> int: ...
    @property
    def architecture(self) -> str: ...
    @property
    def max_threads_per_threadgroup(self) -> int: ...
    @property
    def simd_width(self) -> int: ...
    @property
    def unified_memory(self) -> bool: ...
    @property
    def memory_size(self) -> int: ...
    @property
    def max_buffer_length(self) -> int: ...
    @property
    def threadgroup_memory_length(self) -> int: ...
    def as_dict(self) -> _DeviceInfoDict: ...
    # metalcompute's field names (metalcall/_metalcompute.py)
    @property
    def deviceName(self) -> str: ...
    @property
    def recommendedWorkingSetSize(self) -> int: ...
    @property
    def maxTransferRate(self) -> int: ...
    @property
    def hasUnifiedMemory(self) -> bool: ...

def get_devices() -> list[DeviceInfo]:
    """Every device of every backend built in, best first."""

def backends() -> list[str]:
    """The backends built into this metalcall."""

class _MemoryInfoDict(TypedDict):
    in_use: int
    cached: int
    device_free: int
    device_total: int

class _CacheInfoDict(TypedDict):
    directory: str
    enabled: bool
    problem: str
    entries: int
    bytes: int
    limit: int | None  # None: no limit

def cache_info() -> _CacheInfoDict:
    """The disk cache: its folder, whether it is used (else why not), entries, their size, the limit."""

def cache_clear() -> int:
    """Removes metalcall's entries from the disk cache; returns how many it removed."""

def from_dlpack(x: Any, *, device: Device | None = None) -> Buffer:
    """A Buffer sharing the memory of a DLPack producer without a copy: host memory on the CPU, CUDA memory
    on its GPU (the default device follows the producer)."""

class Device(metaclass=_pybind11_type):
    """A device to run kernels on: ``Device()`` (the best), ``Device("cpu")``, ``Device("cuda:1")``,
    ``Device(index)`` or a device name."""

    def __init__(
        self,
        device: str | SupportsIndex | None = None,
        *,
        checked: bool = False,
        sandbox: bool | None = None,
        timing: bool = False,
        family: str | None = None,
        kernel_timeout: float | None = None,
    ) -> None: ...
    @property
    def name(self) -> str: ...
    @property
    def backend(self) -> str: ...
    @property
    def index(self) -> int: ...
    @property
    def architecture(self) -> str: ...
    @property
    def max_threads_per_threadgroup(self) -> int: ...
    @property
    def simd_width(self) -> int: ...
    @property
    def unified_memory(self) -> bool: ...
    @property
    def memory_size(self) -> int: ...
    @property
    def max_buffer_length(self) -> int: ...
    @property
    def threadgroup_memory_length(self) -> int: ...
    @property
    def checked(self) -> bool: ...
    @property
    def sandbox(self) -> bool:
        """Kernels run in a worker process under a system call filter (Linux CPU; docs/security.md)."""
    @property
    def timing(self) -> bool:
        """Every call is timed on the device (CUDA times only batches otherwise)."""
    @property
    def kernel_timeout(self) -> float | None:
        """Seconds a single dispatch may run before it is stopped (ExecutionError); None: no limit."""
    @property
    def stream_handle(self) -> int:
        """The CUDA stream this device queues its work on (0 on other backends)."""
    @property
    def info(self) -> DeviceInfo: ...
    def compile(
        self,
        source: str | bytes,
        *,
        defines: _Defines | None = None,
        fast_math: bool = True,
        language_version: str | None = None,
    ) -> Library:
        """Compiles MSL source; raises CompileError with the line and column in your source."""
    def kernel(self, source: str | bytes) -> Library:
        """metalcompute's name for compile()."""
    def load_library(self, path_or_bytes: bytes | str | os.PathLike[str]) -> Library:
        """Loads a compiled .metallib (Metal only)."""
    def buffer(self, size_or_data: SupportsIndex | _BufferLike) -> Buffer:
        """A byte buffer: zero-filled of a size, or a copy of data (metalcompute's dev.buffer)."""
    def empty(self, shape: _Shape, dtype: npt.DTypeLike = ..., *, uninitialized: bool = False) -> Buffer:
        """A new buffer of shape and dtype (default float32; zero-filled). ``uninitialized=True``:
        its contents are undefined (the memory of a freed Buffer is reused as it is), for a result
        a kernel overwrites entirely."""
    def zeros(self, shape: _Shape, dtype: npt.DTypeLike = ...) -> Buffer:
        """A new zero-filled buffer of shape and dtype (default float32)."""
    def asarray(self, data: npt.ArrayLike, dtype: npt.DTypeLike | None = None) -> Buffer:
        """A new buffer holding a copy of array-like data; on the CPU, a DLPack producer without the
        buffer protocol (torch, JAX) is shared in place instead (see from_dlpack)."""
    def texture(
        self,
        shape: Sequence[SupportsIndex],
        format: str = "rgba8unorm",
        usage: str | Sequence[str] | None = None,
        type: str | None = None,
        mip_levels: int | Literal["full"] = 1,
        sample_count: int = 1,
    ) -> Texture:
        """A new zeroed texture: shape (w,), (h, w), (d, h, w), or (elements, h, w) for the array
        types ((elements, w) for texture1d_array); format as Metal names it ("rgba8unorm",
        "r32float", "rg16sint", "bgra8unorm_srgb", "rgb10a2unorm", "rg11b10float", "rgb9e5float"...);
        type "texture1d_array", "texture2d_array", "texturecube", "texturecube_array", "depth2d",
        "depth2d_array", "depthcube", "depthcube_array", "texture2d_ms", "texture2d_ms_array",
        "depth2d_ms", "depth2d_ms_array", "texture_buffer"; mip_levels a count or "full";
        sample_count (multisampled types) 1, 2, 4 or 8."""
    def texture_from(
        self, array: npt.ArrayLike, format: str | None = None, usage: str | Sequence[str] | None = None,
        type: str | None = None, mip_levels: int | Literal["full"] = 1, sample_count: int = 1,
    ) -> Texture:
        """A texture holding a copy of an (h, w) / (h, w, c) / (d, h, w, c) array in level 0; format from the dtype."""
    def sampler(
        self, filter: str = "nearest", address: str | Sequence[str] = "clamp_to_edge", normalized: bool = True,
        border_color: str = "transparent_black", mip_filter: str = "none", min_filter: str | None = None,
        mag_filter: str | None = None, lod_clamp: tuple[float, float] = (0.0, 3.4028234663852886e38),
        compare_func: str = "none",
    ) -> Sampler:
        """A sampler for [[sampler(i)]] parameters."""
    def generate_mipmaps(self, texture: Texture) -> None:
        """Fills mip levels 1.. of a texture from level 0 (2x2 box filter; metalcall/_mipmaps.py)."""
    def memory_info(self) -> _MemoryInfoDict:
        """Bytes of this device's live Buffers ("in_use"), of freed Buffers kept for reuse
        ("cached"), and the device's free and total memory as its driver reports them
        ("device_free", "device_total"; on the CPU the system's)."""
    def empty_cache(self) -> None:
        """Frees the memory kept for reuse from freed Buffers; Buffers in use are untouched."""
    def synchronize(self) -> None:
        """Waits for all work submitted to this device."""
    def batch(self) -> Batch:
        """``with dev.batch():`` submits the calls inside as one submission."""
    def record(self) -> Graph:
        """``with dev.record() as g:`` records the calls inside without running them;
        ``g.replay()`` runs them again as one submission."""
    def __eq__(self, other: object) -> bool: ...
    def __hash__(self) -> int: ...

# ---- memory ----

class Texture(metaclass=_pybind11_type):
    """Texels for a [[texture(i)]] parameter; np.asarray(tex) is a zero-copy (h, w, channels) view."""

    def __init__(self, *args: NoReturn, **kwargs: NoReturn) -> None: ...  # made by Device.texture
    if sys.version_info >= (3, 12):
        def __buffer__(self, flags: int, /) -> memoryview: ...
        def __release_buffer__(self, buffer: memoryview, /) -> None: ...
    @property
    def width(self) -> int: ...
    @property
    def height(self) -> int: ...
    @property
    def depth(self) -> int: ...
    @property
    def array_length(self) -> int: ...
    @property
    def format(self) -> str: ...
    @property
    def texture_type(self) -> str: ...
    @property
    def row_pitch(self) -> int: ...
    @property
    def slice_pitch(self) -> int: ...
    @property
    def nbytes(self) -> int: ...
    @property
    def shape(self) -> tuple[int, ...]: ...
    @property
    def mip_levels(self) -> int: ...
    @property
    def sample_count(self) -> int: ...
    def level(self, level: int) -> npt.NDArray[Any]:
        """A zero-copy view of mip level ``level`` (np.asarray(tex) is level 0)."""

class Sampler(metaclass=_pybind11_type):
    """A sampler state for a [[sampler(i)]] parameter (Device.sampler)."""

    def __init__(self, *args: NoReturn, **kwargs: NoReturn) -> None: ...
    @property
    def filter(self) -> str: ...
    @property
    def min_filter(self) -> str: ...
    @property
    def mag_filter(self) -> str: ...
    @property
    def mip_filter(self) -> str: ...
    @property
    def lod_clamp(self) -> tuple[float, float]: ...
    @property
    def compare_func(self) -> str: ...
    @property
    def address(self) -> tuple[str, str, str]: ...
    @property
    def normalized(self) -> bool: ...

class Buffer(metaclass=_pybind11_type):
    """Device memory that NumPy and memoryview read and write in place (zero-copy);
    taking a view waits for submitted work that uses the buffer."""

    def __init__(self, *args: NoReturn, **kwargs: NoReturn) -> None: ...  # no constructor
    # The buffer protocol (PEP 688): Python has these slots from 3.12 on (NumPy's
    # stubs declare ndarray's the same way). np.asarray(buf) works on every version.
    if sys.version_info >= (3, 12):
        def __buffer__(self, flags: int, /) -> memoryview: ...
        def __release_buffer__(self, buffer: memoryview, /) -> None: ...

    @property
    def nbytes(self) -> int: ...
    @property
    def shape(self) -> tuple[int, ...]: ...
    @property
    def dtype(self) -> np.dtype[Any]: ...
    @property
    def size(self) -> int: ...
    @property
    def device(self) -> Device: ...
    def __len__(self) -> int: ...
    def numpy(self) -> npt.NDArray[Any]:
        """A zero-copy NumPy view (waits for pending work on this buffer first)."""
    def wait(self) -> None:
        """Waits until no submitted work uses this buffer."""
    def read(self, offset: int = 0, nbytes: int | None = None) -> bytes:
        """A copy of `nbytes` bytes from byte `offset` (to the end by default), after the work that
        uses the buffer; on CUDA by the driver's copy, which leaves the memory on the GPU. For a
        few values, such as a reduction's result; also reads GPU memory imported from torch/CuPy."""
    def __array__(self, dtype: npt.DTypeLike | None = None, *, copy: bool | None = None) -> npt.NDArray[Any]:
        """NumPy's fallback: raises ArgumentError for device-only memory (see host_visible)."""
    @property
    def read_only(self) -> bool:
        """True for memory its owner lets no one write (a JAX array, read-only DLPack or CUDA array
        interface memory): kernels take it for const parameters only; its views are read-only."""
    @property
    def host_visible(self) -> bool:
        """False for GPU memory imported from torch/CuPy: np.asarray raises; copy with buf.to()."""
    def to(self, device: Device | str) -> Buffer:
        """A new Buffer on `device` with a copy of this one's contents (always a copy)."""
    def __dlpack__(
        self,
        *,
        stream: int | Any | None = None,
        max_version: tuple[int, int] | None = None,
        dl_device: tuple[int, int] | None = None,
        copy: bool | None = None,
    ) -> Any:
        """A DLPack capsule of this buffer's memory, in place (waits for pending work first)."""
    def __dlpack_device__(self) -> tuple[int, int]:
        """(device type, device id) as DLPack names them: (1, 0) on the CPU and Metal, (2, index) on CUDA."""
    @property
    def __cuda_array_interface__(self) -> dict[str, Any]:
        """The CUDA array interface (v3) of a CUDA buffer; AttributeError on other devices."""

# ---- kernels ----

class Library(metaclass=_pybind11_type):
    """The kernels of one compiled MSL source: ``lib.name``, ``lib["name"]`` or ``lib.function(name, constants)``."""

    def __init__(self, *args: NoReturn, **kwargs: NoReturn) -> None: ...  # no constructor
    def function(self, name: str, constants: _Constants | None = None) -> Kernel:
        """The kernel `name`, specialised with [[function_constant]] values by name or index; a vector
        constant (ushort2, float4 ...) takes a tuple, list or 1-D NumPy array of its components."""
    def __getitem__(self, name: str, /) -> Kernel: ...
    def __getattr__(self, name: str, /) -> Kernel: ...
    def __contains__(self, name: str, /) -> bool: ...
    def __iter__(self) -> Iterator[str]: ...
    def __len__(self) -> int: ...
    def __dir__(self) -> list[str]: ...
    @property
    def function_names(self) -> list[str]: ...

class Kernel(metaclass=_pybind11_type):
    """A compiled kernel: ``kernel(grid, *arguments, threadgroup=None, threadgroup_memory=None)``."""

    def __init__(self, *args: NoReturn, **kwargs: NoReturn) -> None: ...  # no constructor
    # The type's tp_call (cpp/python/kernel.cpp), not a pybind11 method: the grid
    # first (threads: an int or 1 to 3 ints), then the arguments in [[buffer(i)]]
    # order. Any other keyword raises ArgumentError.
    def __call__(
        self,
        grid: _Size3,
        /,
        *arguments: _KernelArgument,
        threadgroup: _Size3 | None = None,
        threadgroup_memory: SupportsIndex | Iterable[SupportsIndex] | None = None,
        textures: Iterable[Texture | None] | None = None,  # textures[i] -> [[texture(i)]]
        samplers: Iterable[Sampler] | None = None,  # samplers[i] -> [[sampler(i)]]
    ) -> Completion: ...
    @property
    def name(self) -> str: ...
    @property
    def params(self) -> list[_KernelParam]:
        """The reflection table: one dict per parameter, in declaration order."""
    @property
    def max_total_threads_per_threadgroup(self) -> int:
        """The most threads a threadgroup of this kernel may have on its device: on Metal its pipeline's
        own maxTotalThreadsPerThreadgroup (256 on some AMD and Intel pipelines), which may be less than
        Device.max_threads_per_threadgroup. Size fixed threadgroups from it."""
    @property
    def threads_synchronise(self) -> bool | None:
        """True when the kernel may reach a barrier or SIMD-group function (CPU: fibers or
        regions), False when it cannot (CPU: a plain loop), None where the backend does not say
        (Metal)."""
    @property
    def thread_schedule(self) -> str | None:
        """How the CPU backend runs a threadgroup's threads: "loop" (no barrier or SIMD-group
        function can be reached: one vectorised loop), "regions" (only threadgroup barriers, at the
        kernel's top level or in loops every thread runs alike: each stretch between barriers is a
        loop over the threads), "fibers" (everything else: each thread a fiber). None where the
        backend does not say (Metal, CUDA, the Metal simulator)."""
    @property
    def thread_execution_width(self) -> int:
        """The SIMD-group width this kernel's pipeline runs with (Metal: per pipeline; may differ from
        Device.simd_width)."""
    # Written in Python (metalcall/_benchmark.py) and set on the class by metalcall/__init__.py.
    def benchmark(
        self,
        grid: _Size3,
        /,
        *args: _KernelArgument,
        repeat: int = 100,
        warmup: int = 10,
        bytes: int | None = None,
        flops: int | None = None,
        threadgroup: _Size3 | None = None,
        threadgroup_memory: SupportsIndex | Iterable[SupportsIndex] | None = None,
        textures: Iterable[Texture | None] | None = None,
        samplers: Iterable[Sampler] | None = None,
    ) -> BenchmarkResult:
        """Times the call on the device: min/median/mean/stdev/IQR, GB/s, GFLOP/s, launch overhead."""

# A plain CPython type (cpp/python/completion.cpp); its runtime __module__ is "metalcall".
@final
class Completion:
    """Handle on a kernel call. Dropping it waits for the work; keep it to overlap work, then wait()."""

    def wait(self, timeout: float | None = None, *, cancel: bool = True) -> bool:
        """Blocks until the work has finished and returns True (raising ExecutionError if it failed);
        with ``timeout`` seconds, returns False if it has not finished by then and stops it (unless
        ``cancel=False``: then it runs on). Ctrl-C raises KeyboardInterrupt and stops the work."""
    def cancel(self) -> None:
        """Stops the work (queued work is skipped, running kernels stop at their next loop
        iteration); a later wait() raises ExecutionError. No-op once done."""
    @property
    def done(self) -> bool:
        """True once the work has finished. Never blocks."""
    @property
    def gpu_time(self) -> float:
        """Seconds the device spent on the work (0 until done; NaN for a CUDA call on a device
        opened without ``timing=True``, which is not timed)."""
    def __enter__(self) -> Self: ...
    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
        /,
    ) -> Literal[False]:
        """Waits for the work."""

class Batch(metaclass=_pybind11_type):
    """Records every kernel call made inside ``with dev.batch():`` into one submission,
    committed when the block ends (discarded if it raises)."""

    def __init__(self, *args: NoReturn, **kwargs: NoReturn) -> None: ...  # no constructor
    def __enter__(self) -> Self: ...
    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
        /,
    ) -> Literal[False]: ...
    def wait(self) -> None:
        """Waits for the committed work."""
    @property
    def completion(self) -> Completion:
        """The Completion of the committed work."""
    @property
    def done(self) -> bool: ...
    @property
    def gpu_time(self) -> float: ...
    def __len__(self) -> int: ...

class Graph(metaclass=_pybind11_type):
    """Kernel calls recorded once with ``with dev.record() as g:`` and replayed with
    ``g.replay()``, each replay one submission."""

    def __init__(self, *args: NoReturn, **kwargs: NoReturn) -> None: ...  # no constructor
    def __enter__(self) -> Self: ...
    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
        /,
    ) -> Literal[False]: ...
    def replay(self) -> Completion:
        """Runs the recorded calls again as one submission; dropping the Completion waits."""
    def update(self, index: SupportsIndex, *arguments: _KernelArgument) -> None:
        """Re-binds the arguments of recorded call ``index``; later replays use them."""
    def __len__(self) -> int: ...

# The translation verifier (metalcall/translation_check.hpp; docs/security.md): for tests and tools.
def _cpu_translation(source: str, checked: bool = False) -> str: ...
def _verify_cpu_translation(code: str) -> list[str]: ...
def _check_cpu_translation(code: str) -> None: ...
def _translation_verifier_library() -> tuple[bool, str]: ...
def _translation_verification_requested() -> bool: ...
def _set_wheel_libclang(path: str) -> None: ...
