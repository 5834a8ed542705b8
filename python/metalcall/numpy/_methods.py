"""The methods of ndarray that are operations of metalcall.numpy: arithmetic, comparison and unary
operators, indexing, @, astype/copy, reshape/transpose/squeeze/.T/.mT, the reductions, sort and
argsort, to_device and __array_namespace__.

_array.py defines the type and imports no operation; every operation module imports _array. This
module, above both, binds the methods: metalcall.numpy calls install() once when it is imported, so
every ndarray has them and no module imports one that imports it back (docs/design.md)."""

from __future__ import annotations

from . import _creation, _elementwise, _indexing, _linalg, _manip, _reduce, _sort
from . import _runtime as R
from ._array import ndarray

# operator name -> elementwise operation, for __op__, __rop__ and __iop__
_BINARY = {
    "add": "add", "sub": "subtract", "mul": "multiply", "truediv": "divide", "floordiv": "floor_divide",
    "mod": "remainder", "pow": "pow", "and": "bitwise_and", "or": "bitwise_or", "xor": "bitwise_xor",
    "lshift": "bitwise_left_shift", "rshift": "bitwise_right_shift",
}
_COMPARISONS = {"eq": "equal", "ne": "not_equal", "lt": "less", "le": "less_equal", "gt": "greater",
                "ge": "greater_equal"}
_UNARY = {"neg": "negative", "pos": "positive", "abs": "abs", "invert": "bitwise_invert"}
# method name -> reduction of _reduce.py
_REDUCTIONS = {name: name for name in ("sum", "prod", "mean", "var", "std", "min", "max", "any", "all", "argmax",
                                       "argmin")}
_REDUCTIONS["cumsum"] = "cumulative_sum"


class _OperationMethods:
    """ndarray's methods that are operations, written as methods; install() copies them onto ndarray."""

    @property
    def T(self):
        return _manip.permute_dims(self, tuple(reversed(range(self.ndim))))

    @property
    def mT(self):
        return _manip.matrix_transpose(self)

    @property
    def real(self):
        return _elementwise.real(self)

    @property
    def imag(self):
        return _elementwise.imag(self)

    def conj(self):
        return _elementwise.conj(self)

    conjugate = conj

    def to_device(self, device, /, *, stream=None):
        device = R.as_device(device)
        if device == self._device:
            return self
        return _creation.asarray(self.to_numpy(), device=device)

    def astype(self, dtype, /, *, copy=True, device=None):
        return _elementwise.astype(self, dtype, copy=copy, device=device)

    def copy(self):
        return _elementwise.astype(self, self._dtype, copy=True)

    def reshape(self, *shape, copy=None):
        if len(shape) == 1 and not isinstance(shape[0], int):
            shape = tuple(shape[0])
        return _manip.reshape(self, shape, copy=copy)

    def transpose(self, *axes):
        if not axes:
            axes = tuple(reversed(range(self.ndim)))
        elif len(axes) == 1 and not isinstance(axes[0], int):
            axes = tuple(axes[0])
        return _manip.permute_dims(self, axes)

    def squeeze(self, axis=None):
        return _manip.squeeze(self, axis)

    def sort(self, axis=-1):
        return _sort.sort(self, axis=axis)

    def argsort(self, axis=-1):
        return _sort.argsort(self, axis=axis)

    def __getitem__(self, key):
        return _indexing.getitem(self, key)

    def __setitem__(self, key, value):
        _indexing.setitem(self, key, value)

    def __matmul__(self, other):
        return _linalg.matmul(self, other)

    def __rmatmul__(self, other):
        return _linalg.matmul(_creation.asarray(other, device=self._device), self)

    def __imatmul__(self, other):
        self[...] = _linalg.matmul(self, other)
        return self


# What a class statement puts in a class's __dict__ besides the methods written in it.
_CLASS_ATTRIBUTES = {"__module__", "__qualname__", "__doc__", "__dict__", "__weakref__", "__firstlineno__",
                     "__static_attributes__"}


def _reduction(name, operation):
    def method(self, axis=None, *args, **kw):
        return operation(self, *args, axis=axis, **kw)

    method.__name__ = name
    return method


def _operators():
    """name -> function of every operator method (forward, reflected, in-place; comparisons; unary)."""
    methods = {}
    # apply() itself, bound once: an operator is a call of Python less (of an operation's ~2 µs).
    apply = _elementwise.apply
    for dunder, op in _BINARY.items():
        def forward(self, other, _op=op, _apply=apply):
            return _apply(_op, self, other)

        def reflected(self, other, _op=op, _apply=apply):
            return _apply(_op, other, self)

        def inplace(self, other, _op=op):
            _elementwise.inplace(_op, self, other)
            return self

        methods[f"__{dunder}__"], methods[f"__r{dunder}__"], methods[f"__i{dunder}__"] = forward, reflected, inplace
    for dunder, op in _COMPARISONS.items():
        def compare(self, other, _op=op, _apply=apply):
            return _apply(_op, self, other)

        methods[f"__{dunder}__"] = compare
    for dunder, op in _UNARY.items():
        def unary(self, _op=op, _apply=apply):
            return _apply(_op, self)

        methods[f"__{dunder}__"] = unary
    return methods


def install(namespace):
    """Binds the operation methods onto ndarray; `namespace` is the metalcall.numpy module, which
    __array_namespace__ returns."""

    def __array_namespace__(self, *, api_version=None):
        if api_version not in (None, "2021.12", "2022.12", "2023.12", "2024.12", "2025.12"):
            raise ValueError(f"metalcall.numpy implements the array API 2025.12, not {api_version}")
        return namespace

    methods = {name: value for name, value in vars(_OperationMethods).items() if name not in _CLASS_ATTRIBUTES}
    methods.update({name: _reduction(name, getattr(_reduce, op)) for name, op in _REDUCTIONS.items()})
    methods.update(_operators())
    methods["__array_namespace__"] = __array_namespace__
    for name, value in methods.items():
        (value.fget if isinstance(value, property) else value).__qualname__ = f"ndarray.{name}"  # as help() shows it
        setattr(ndarray, name, value)
