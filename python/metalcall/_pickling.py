"""Pickling for Device, Library, Kernel and Buffer, so multiprocessing, Dask and Ray workers can use them.

Device pickles by its spec ("cpu:0", "cuda:1") and flags; Library by (device, source, compile options);
Kernel by (library, name, function constants): unpickling compiles again, which the content-addressed
disk cache ($METALCALL_CACHE_DIR) makes a lookup. Buffer pickles by value: its bytes, dtype, shape and
device. A Library's recipe is set by Device.compile itself (cpp/python/device.cpp: a compile hit must
not pay a Python wrapper); a Kernel's by thin wrappers around the Library lookups, registered with
copyreg.
"""

from __future__ import annotations

import copyreg
from typing import Any

import numpy as np

from ._core import Buffer, Device, Kernel, Library

_RECIPE = "_metalcall_recipe"  # attribute name on Library and Kernel instances


def _spec(dev: Device) -> str:
    return f"{dev.backend}:{dev.index}"


# ---- Device ----

def _open_device(spec: str, checked: bool, timing: bool, sandbox: bool = False,
                 kernel_timeout: float | None = None) -> Device:
    return Device(spec, checked=checked, sandbox=sandbox, timing=timing, kernel_timeout=kernel_timeout)


def _reduce_device(dev: Device) -> tuple[Any, ...]:
    return _open_device, (_spec(dev), dev.checked, dev.timing, dev.sandbox, dev.kernel_timeout)


# ---- Library: its recipe is set at compile time (Device.compile, in C++) ----

_lookup_function = Library.function
_lookup_item = Library.__getitem__
_lookup_attr = Library.__getattr__


def _compile_library(dev: Device, source: str, defines: Any, fast_math: bool, language_version: str | None) -> Library:
    return dev.compile(source, defines=defines, fast_math=fast_math, language_version=language_version)


def _reduce_library(lib: Library) -> tuple[Any, ...]:
    recipe = lib.__dict__.get(_RECIPE)
    if recipe is None:  # dev.load_library(...): there is no source to rebuild it from
        raise TypeError("this metalcall.Library was loaded from a .metallib, not compiled from source, so it "
                        "cannot be pickled; pickle the path or bytes and call dev.load_library in the worker")
    return _compile_library, recipe


# ---- Kernel: remember the library, name and constants at lookup ----

def _tagged(kernel: Kernel, lib: Library, name: str, constants: Any) -> Kernel:
    # The library's recipe, not the library: a kernel cached in lib.__dict__ must not point back at it.
    lib_recipe = lib.__dict__.get(_RECIPE)
    if lib_recipe is not None:
        setattr(kernel, _RECIPE, (lib_recipe, name, dict(constants) if constants else None))
    return kernel


def function(self: Library, name: str, constants: Any = None) -> Kernel:
    return _tagged(_lookup_function(self, name, constants), self, name, constants)


function.__doc__ = _lookup_function.__doc__


# Named with a leading underscore, not as the dunders they become: a module-level function named
# __getattr__ would be this module's own attribute hook (PEP 562), so that a missing attribute of
# metalcall._pickling raised TypeError instead of AttributeError.
def _library_getitem(self: Library, name: str) -> Kernel:
    return _tagged(_lookup_item(self, name), self, name, None)


def _library_getattr(self: Library, name: str) -> Kernel:
    if name.startswith("__") or name == _RECIPE:
        raise AttributeError(name)  # not a kernel: keeps copy/pickle probes off the C++ lookup
    return _tagged(_lookup_attr(self, name), self, name, None)


def _reduce_kernel(k: Kernel) -> tuple[Any, ...]:
    recipe = k.__dict__.get(_RECIPE)
    if recipe is None:
        raise TypeError(f"kernel '{k.name}' comes from a Library loaded from a .metallib, so it cannot be "
                        "pickled; load the library and look the kernel up in the worker")
    return _lookup_kernel, recipe


def _lookup_kernel(lib_recipe: tuple[Any, ...], name: str, constants: Any) -> Kernel:
    return function(_compile_library(*lib_recipe), name, constants)


# ---- Buffer: by value ----

def _make_buffer(dev: Device, data: np.ndarray) -> Buffer:
    return dev.asarray(data, data.dtype)


def _reduce_buffer(buf: Buffer) -> tuple[Any, ...]:
    # np.array waits for pending work on the buffer (the buffer protocol does) and copies it out;
    # an ndarray pickles compactly (and out of band with protocol 5). Imported GPU memory has no
    # host view: its bytes come through a copy onto the CPU.
    host = buf if buf.host_visible else buf.to("cpu")
    return _make_buffer, (buf.device, np.array(host, copy=True))


def install() -> None:
    Library.function = function  # type: ignore[method-assign]
    Library.__getitem__ = _library_getitem  # type: ignore[method-assign]
    Library.__getattr__ = _library_getattr  # type: ignore[method-assign]
    copyreg.pickle(Device, _reduce_device)
    copyreg.pickle(Library, _reduce_library)
    copyreg.pickle(Kernel, _reduce_kernel)
    copyreg.pickle(Buffer, _reduce_buffer)
