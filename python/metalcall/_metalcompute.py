"""metalcompute 0.2.9 compatibility that lives in Python: the field names of its
``get_devices()`` entries and its deprecated v0.1 module functions (``init``, ``compile``,
``run``, ``rerun``, ``release``). docs/metalcompute.md lists every difference."""

from __future__ import annotations

from typing import Any

from ._core import Device, DeviceInfo, Error

# metalcompute's get_devices() entries are struct sequences with these fields.
DeviceInfo.deviceName = property(lambda self: self.name, doc="metalcompute's name for `name`.")  # type: ignore[attr-defined]
DeviceInfo.recommendedWorkingSetSize = property(  # type: ignore[attr-defined]
    lambda self: self.memory_size, doc="metalcompute's name for `memory_size` (bytes)."
)
DeviceInfo.maxTransferRate = property(  # type: ignore[attr-defined]
    lambda self: 0, doc="metalcompute reports Metal's maxTransferRate; metalcall does not know it: 0."
)
DeviceInfo.hasUnifiedMemory = property(  # type: ignore[attr-defined]
    lambda self: self.unified_memory, doc="metalcompute's name for `unified_memory`."
)

# The v0.1 API: one implicit device and one function, input and output buffers by position.
_state: dict[str, Any] = {}


def init(device_index: int = -1) -> None:
    """metalcompute v0.1: opens the device (-1, the default, is the default device)."""
    _state.clear()
    _state["device"] = Device(device_index)


def release() -> None:
    """metalcompute v0.1: forgets the device and function opened by init() and compile()."""
    _state.clear()


def compile(program: str, function_name: str) -> None:  # noqa: A001 - metalcompute's name
    """metalcompute v0.1: compiles `program` and selects its kernel `function_name`."""
    if "device" not in _state:
        raise Error("Not ready to compile: call init() first")
    _state["function"] = _state["device"].kernel(program).function(function_name)
    _state.pop("buffers", None)


def run(input: Any, output: Any, kcount: int) -> None:  # noqa: A002 - metalcompute's name
    """metalcompute v0.1: runs the kernel over `kcount` threads with `input` as [[buffer(0)]]
    and `output` as [[buffer(1)]]; returns when `output` holds the result."""
    if "function" not in _state:
        raise Error("Not ready to run: call init() and compile() first")
    _state["function"](kcount, input, output)
    _state["buffers"] = (input, output)


def rerun(kcount: int) -> None:
    """metalcompute v0.1: runs the kernel again on the buffers of the last run()."""
    if "buffers" not in _state:
        raise Error("Not ready to run: call run() first")
    _state["function"](kcount, *_state["buffers"])
