"""The ndarray of metalcall.numpy: a metalcall Buffer seen through an element offset, a shape and
strides (in elements), or a lazy elementwise expression (see _fusion.py) until it is needed.

This module imports none of the operations: the methods that are operations (operators, indexing,
astype/copy, reshape, reductions, sort, @, to_device) are bound onto ndarray by _methods.install(),
which metalcall.numpy calls when it is imported (docs/design.md, "Modules of metalcall.numpy")."""

from __future__ import annotations

import operator
import struct

import numpy as np

import metalcall as mc

from . import _fusion as F
from . import _runtime as R

# struct's decoder of one element, by NumPy dtype character (native byte order, as metalcall.numpy's dtypes are).
_UNPACK = {c: struct.Struct(c).unpack for c in "?bBhHiIlLqQefd"}


def _alloc(device, shape, dtype):
    """A new buffer holding `shape` C-contiguously (its own shape is the array's, so DLPack sees it)."""
    return device.empty(tuple(shape), dtype)


_new_array = object.__new__


def lazy_array(node, device):
    """The array of `node`'s result: lazy (fused with what uses it) unless inside `with mnp.lazy(False):`.
    Built here, not by a classmethod: every elementwise operation comes through (a call
    less of its ~2 µs of Python)."""
    out = _new_array(ndarray)
    out._buf, out._offset, out._shape, out._dtype, out._device = None, 0, node.shape, node.dtype, device
    out._strides = F.contiguous_strides(node.shape)
    out._node, out._readonly = node, False
    F._LIVE_LAZY.add(out)
    return out if F._config["lazy"] else out._materialize()


def flush_readers(buf, keep=None):
    """Evaluates every lazy array whose expression reads `buf` (before `buf` is written)."""
    for arr in F._LIVE_LAZY.values():
        if arr is keep or arr._node is None or arr._node.buf is not None:
            continue
        if F.reads_buffer(arr._node, buf):
            arr._materialize()


class ndarray:
    """An array on a metalcall device. Elementwise results are lazy (fused on evaluation)."""

    __slots__ = ("_buf", "_offset", "_shape", "_strides", "_dtype", "_device", "_node", "_readonly", "__weakref__")
    __array_ufunc__ = None  # NumPy defers to our reflected operators: np_array + x -> x.__radd__
    __hash__ = None

    def __init__(self, *args, **kwargs):
        raise TypeError("create arrays with metalcall.numpy functions (asarray, zeros, empty, ...)")

    # ------------------------------------------------------------------ construction
    @classmethod
    def _wrap(cls, buf, shape, dtype, device, offset=0, strides=None, readonly=False):
        self = object.__new__(cls)
        self._buf = buf
        self._offset = int(offset)
        self._shape = tuple(int(s) for s in shape)
        self._strides = tuple(strides) if strides is not None else F.contiguous_strides(self._shape)
        self._dtype = dtype
        self._device = device
        self._node = None
        self._readonly = readonly
        return self

    @classmethod
    def _scalar_result(cls, buf, dtype, device):
        """The 0-d array of a reduction's result, element 0 of buf (as _wrap, without its general work)."""
        self = object.__new__(cls)
        self._buf, self._offset, self._shape, self._strides = buf, 0, (), ()
        self._dtype, self._device, self._node, self._readonly = dtype, device, None, False
        return self

    def _materialize(self):
        node = self._node
        if node is None:
            return self
        if node.buf is None:
            buf = R.result_buffer(self._device, self._shape, self._dtype)
            F.run([(node, (buf, 0, self._strides, self._dtype, self._shape))], self._device)
            node.buf = buf
        self._buf = node.buf
        self._node = None
        F._LIVE_LAZY.discard(self)
        return self

    def evaluate(self):
        """Runs the pending fused expression now (asynchronously: nothing waits). Returns self."""
        return self._materialize()

    @property
    def is_lazy(self) -> bool:
        return self._node is not None and self._node.buf is None

    @property
    def source(self):
        """The MSL source the pending expression compiles to (None once evaluated)."""
        if not self.is_lazy:
            return None
        return F.source_of([self._node], self._device, self._shape)

    def _as_node(self):
        if self._node is not None:
            if self._node.buf is None:
                return self._node
            self._materialize()
        return F.Leaf(self._buf, self._offset, self._shape, self._strides, self._dtype)

    def _is_contiguous(self):
        return self.size == 0 or F.is_c_layout(self._shape, self._strides)

    def _contiguous_buffer(self):
        """A buffer holding this array C-contiguously from element 0 (a copy if it is a view)."""
        self._materialize()
        if self._offset == 0 and self._is_contiguous():
            return self._buf
        return self.copy()._materialize()._buf

    # ------------------------------------------------------------------ host access
    def _host(self, flush=True):
        self._materialize()
        if flush:
            flush_readers(self._buf)
        flat = np.asarray(self._buf)  # waits for pending work on the buffer
        if self.size == 0:
            return np.empty(self._shape, self._dtype)
        it = self._dtype.itemsize
        # An ndarray over the buffer's memory (NumPy checks the view stays inside it): as_strided's
        # interface object took 2.8 µs of a 5.4 µs np.asarray of 2000 float32.
        a = np.ndarray(self._shape, flat.dtype, buffer=flat, offset=self._offset * flat.itemsize,
                       strides=tuple(s * it for s in self._strides))
        if self._readonly:
            a.flags.writeable = False
        return a

    def __array__(self, dtype=None, copy=None):
        a = self._host()
        if dtype is not None and np.dtype(dtype) != a.dtype:
            return a.astype(dtype)
        if copy:
            return a.copy()
        return a

    def to_numpy(self, copy=False):
        """The array as NumPy: a zero-copy view of host-visible memory (every backend's Buffers are)
        unless copy=True."""
        a = self._host()
        return a.copy() if copy else a

    numpy = to_numpy

    def tolist(self):
        return self._host(flush=False).tolist()

    def item(self):
        if self.size != 1:
            raise ValueError("can only convert an array of size 1 to a Python scalar")
        return self._scalar().item()

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        self._materialize()
        flush_readers(self._buf)
        src = self
        if not (self._offset == 0 and self._is_contiguous() and tuple(self._buf.shape) == self._shape):
            to_host = dl_device is not None and tuple(dl_device)[0] == 1  # kDLCPU asked for
            if (self._device.backend == "cpu" or to_host) and copy is not True:
                # CPU buffers are host memory (and CUDA's managed memory is host-visible when the consumer
                # asks for kDLCPU): NumPy's DLPack export of the strided host view shares it; a
                # buffer's own export describes the whole buffer, not a view of it.
                try:
                    return self._host(flush=False).__dlpack__(
                        **{k: v for k, v in (("max_version", max_version), ("dl_device", dl_device),
                                             ("copy", copy)) if v is not None})
                except (BufferError, mc.ArgumentError):  # a read-only (broadcast) view through an
                    pass                                    # unversioned capsule; memory the host cannot see
            if copy is False:
                raise BufferError(
                    f"metalcall.numpy: this array is a view of part of a buffer, which {self._device.backend} "
                    "DLPack exports only as a copy; pass copy=None/True, or dl_device=(1, 0) for a host view")
            src = self.copy()._materialize()
            copy = None
        kw = {"stream": stream, "max_version": max_version, "dl_device": dl_device, "copy": copy}
        return src._buf.__dlpack__(**{k: v for k, v in kw.items() if v is not None})

    def __dlpack_device__(self):
        if self._buf is not None:
            return self._buf.__dlpack_device__()
        return (2, self._device.index) if self._device.backend == "cuda" else (1, 0)

    def __repr__(self):
        text = np.array_repr(self._host(flush=False))
        return "mnp." + text.replace("\n", "\n    ")

    def __str__(self):
        return str(self._host(flush=False))

    def __format__(self, spec):
        if self.ndim == 0:
            return format(self.item(), spec)
        return format(str(self), spec)

    # ------------------------------------------------------------------ attributes
    @property
    def shape(self):
        return self._shape

    @property
    def ndim(self):
        return len(self._shape)

    @property
    def size(self):
        return F.prod(self._shape)

    @property
    def dtype(self):
        return self._dtype

    @property
    def device(self):
        return self._device

    @property
    def itemsize(self):
        return self._dtype.itemsize

    @property
    def nbytes(self):
        return self.size * self._dtype.itemsize

    @property
    def strides(self):
        """Strides in bytes, as NumPy gives them."""
        return tuple(s * self._dtype.itemsize for s in self._strides)

    # ------------------------------------------------------------------ conversions
    def _element_bytes(self):
        if self._shape and self.size != 1:
            raise TypeError("only arrays of size 1 convert to Python scalars")
        if self._node is not None:
            self._materialize()
        # The element alone, copied out once the work writing it is done (on GPUs by the driver: a
        # host view would move the result's page to the host, and the next kernel writing it would
        # fault it back: 85 µs of float(mnp.sum(x)) on an H200; on the CPU 0.5 µs against a view's 0.9).
        size = self._dtype.itemsize
        return self._buf.read(self._offset * size, size)

    def _scalar(self):
        return np.frombuffer(self._element_bytes(), self._dtype)[0]

    def _python_scalar(self):
        """The element as a Python bool, int or float, decoded by struct where its dtype has a
        format (np.frombuffer and indexing took 0.35 of bool()'s 0.64 µs on the box);
        the others through _scalar. The same values: float() of a float32 is the double struct gives."""
        unpack = _UNPACK.get(self._dtype.char)
        return self._scalar() if unpack is None else unpack(self._element_bytes())[0]

    def __bool__(self):
        return bool(self._python_scalar())

    def __float__(self):
        return float(self._python_scalar())

    def __int__(self):
        return int(self._python_scalar())

    def __complex__(self):
        return complex(self._scalar())

    def __index__(self):
        if self._dtype.kind not in "iu":
            raise TypeError("only integer arrays convert to an index")
        return operator.index(self._scalar())

    def __len__(self):
        if not self._shape:
            raise TypeError("len() of a 0-d array")
        return self._shape[0]

    def __iter__(self):
        if not self._shape:
            raise TypeError("iteration over a 0-d array")
        for i in range(self._shape[0]):
            yield self[i]

    # ------------------------------------------------------------------ methods made of bound methods
    def flatten(self):
        return self.reshape(-1, copy=True)

    def ravel(self):
        return self.reshape(-1)

    def fill(self, value):
        self[...] = value
