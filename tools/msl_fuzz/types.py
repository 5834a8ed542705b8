"""MSL's scalar and vector types as the fuzzer's generator, printer and model see them."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Scalar:
    """An MSL scalar type: bool, an integer of 8-64 bits, or half / bfloat / float."""

    name: str
    kind: str  # "bool", "int" or "float"
    bits: int
    signed: bool
    mantissa: int = 0  # stored fraction bits of a float type
    max_exp: int = 0  # largest binary exponent of a finite float

    @property
    def is_int(self) -> bool:
        return self.kind == "int"

    @property
    def is_float(self) -> bool:
        return self.kind == "float"

    @property
    def is_bool(self) -> bool:
        return self.kind == "bool"

    @property
    def lo(self) -> int:
        return -(1 << (self.bits - 1)) if self.signed else 0

    @property
    def hi(self) -> int:
        return (1 << (self.bits - 1)) - 1 if self.signed else (1 << self.bits) - 1

    @property
    def storage(self) -> np.dtype:
        """The NumPy dtype of this type in a buffer (bfloat as its 16 bits)."""
        return np.dtype(_STORAGE[self.name])

    @property
    def size(self) -> int:
        return 1 if self.is_bool else self.bits // 8

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class Vec:
    """An MSL vector type `T2`, `T3`, `T4` (3-vectors are laid out as 4)."""

    elem: Scalar
    n: int

    @property
    def name(self) -> str:
        return f"{self.elem.name}{self.n}"

    @property
    def kind(self) -> str:
        return self.elem.kind

    @property
    def padded(self) -> int:
        """Components in memory: a 3-vector takes the room of 4."""
        return 4 if self.n == 3 else self.n

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class Arr:
    """A thread-local array `T name[n]`: declared, indexed and assigned element by element."""

    elem: Scalar
    n: int

    @property
    def name(self) -> str:
        return f"{self.elem.name}[{self.n}]"

    @property
    def kind(self) -> str:
        return self.elem.kind

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class Ptr:
    """`thread T*` to a local scalar (n = 1) or into a local array (n elements from there)."""

    elem: Scalar
    n: int

    @property
    def kind(self) -> str:
        return "pointer"


@dataclass(frozen=True)
class Lambda:
    """The type of a variable holding a lambda: its parameter and result types."""

    params: tuple
    ret: object

    @property
    def kind(self) -> str:
        return "lambda"


@dataclass(frozen=True)
class Struct:
    """A user struct: members (name, type, packed) of scalars and vectors."""

    name: str
    fields: tuple

    @property
    def kind(self) -> str:
        return "struct"

    def __str__(self) -> str:
        return self.name


_STORAGE = {
    "bool": "bool", "char": "int8", "uchar": "uint8", "short": "int16", "ushort": "uint16",
    "int": "int32", "uint": "uint32", "long": "int64", "ulong": "uint64",
    "half": "float16", "bfloat": "uint16", "float": "float32",
}

BOOL = Scalar("bool", "bool", 8, False)
CHAR = Scalar("char", "int", 8, True)
UCHAR = Scalar("uchar", "int", 8, False)
SHORT = Scalar("short", "int", 16, True)
USHORT = Scalar("ushort", "int", 16, False)
INT = Scalar("int", "int", 32, True)
UINT = Scalar("uint", "int", 32, False)
LONG = Scalar("long", "int", 64, True)
ULONG = Scalar("ulong", "int", 64, False)
HALF = Scalar("half", "float", 16, True, mantissa=10, max_exp=15)
BFLOAT = Scalar("bfloat", "float", 16, True, mantissa=7, max_exp=127)
FLOAT = Scalar("float", "float", 32, True, mantissa=23, max_exp=127)

INTEGERS = (CHAR, UCHAR, SHORT, USHORT, INT, UINT, LONG, ULONG)
FLOATS = (HALF, BFLOAT, FLOAT)
SCALARS = (BOOL,) + INTEGERS + FLOATS
BY_NAME = {t.name: t for t in SCALARS}

Type = Scalar | Vec | Arr | Struct


def elem(t: Type) -> Scalar:
    return t.elem if isinstance(t, (Vec, Arr)) else t


def width(t: Type) -> int:
    """Components: 1 for a scalar."""
    return t.n if isinstance(t, Vec) else 1


def with_elem(t: Type, e: Scalar) -> Type:
    """The type of t's shape with element type e (bool4 for a comparison of int4s)."""
    return Vec(e, t.n) if isinstance(t, Vec) else e


def unsigned_of(t: Scalar) -> Scalar:
    return {CHAR: UCHAR, SHORT: USHORT, INT: UINT, LONG: ULONG}.get(t, t)


def signed_of(t: Scalar) -> Scalar:
    return {UCHAR: CHAR, USHORT: SHORT, UINT: INT, ULONG: LONG}.get(t, t)


def promoted(t: Scalar) -> Scalar:
    """C++ integer promotion: bool, char and short types compute as int."""
    if t.is_bool or (t.is_int and t.bits < 32):
        return INT
    return t


def arithmetic_result(a: Type, b: Type) -> Type:
    """MSL's usual arithmetic conversions (C++'s, with half and bfloat below float).

    Vectors do not promote: char4 + char4 is char4. A vector with a scalar of its
    element type gives the vector.
    """
    if isinstance(a, Vec) or isinstance(b, Vec):
        v = a if isinstance(a, Vec) else b
        return v
    if a.is_float or b.is_float:
        if a == b:
            return a
        if FLOAT in (a, b) or (a.is_float and b.is_float):
            return FLOAT  # half op float, bfloat op float, half op bfloat
        return a if a.is_float else b  # half op int is half
    pa, pb = promoted(a), promoted(b)
    if pa == pb:
        return pa
    if pa.signed == pb.signed:
        return pa if pa.bits > pb.bits else pb
    u, s = (pa, pb) if not pa.signed else (pb, pa)
    if u.bits >= s.bits:
        return u
    return s  # long op uint: long holds every uint
