"""User structs: their MSL layout in buffers, and the statements that use them.

A program may declare one struct of scalars, vectors and packed 3-vectors. It is read
from an input buffer (its bytes laid out as MSL lays them out: each member aligned to its
own alignment, 3-vectors as 4, packed vectors to their component, the whole rounded to the
largest alignment), built with an aggregate initializer, its members read and written,
and stored whole to an output buffer.
"""

from __future__ import annotations

import numpy as np

from . import tree as t
from .types import BOOL, Struct, Type, Vec, elem
from .values import from_storage, is_exact_match, to_storage


def member_layout(ty: Type, packed: bool) -> tuple[int, int]:
    """(size, alignment) of a member in MSL."""
    e = elem(ty)
    if isinstance(ty, Vec):
        if packed:
            return e.size * ty.n, e.size
        return e.size * ty.padded, e.size * ty.padded
    return e.size, e.size


def layout(s: Struct) -> tuple[list[int], int]:
    """The members' offsets and the struct's size."""
    offsets, at, align = [], 0, 1
    for _, ty, packed in s.fields:
        size, a = member_layout(ty, packed)
        at = (at + a - 1) // a * a
        offsets.append(at)
        at += size
        align = max(align, a)
    return offsets, (at + align - 1) // align * align


def pack(s: Struct, values: dict, length: int) -> np.ndarray:
    """The bytes of `length` structs whose members are model arrays."""
    offsets, size = layout(s)
    out = np.zeros((length, size), dtype=np.uint8)
    for (name, ty, packed), offset in zip(s.fields, offsets):
        data = to_storage(values[name], ty)
        if data.dtype == np.bool_:
            data = data.astype(np.uint8)
        raw = np.ascontiguousarray(data).reshape(length, -1).view(np.uint8)
        out[:, offset:offset + raw.shape[1]] = raw
    return out


def unpack(s: Struct, raw: np.ndarray, length: int) -> dict:
    offsets, size = layout(s)
    rows = raw.reshape(length, size)
    values = {}
    for (name, ty, packed), offset in zip(s.fields, offsets):
        e = elem(ty)
        n = ty.n if isinstance(ty, Vec) else 1
        width = (np.dtype(np.uint8) if e.is_bool else e.storage).itemsize * n
        data = np.ascontiguousarray(rows[:, offset:offset + width]).view(np.uint8 if e.is_bool else e.storage)
        data = data.astype(bool) if e.is_bool else data
        values[name] = from_storage(data.reshape((length, n)) if n > 1 else data.reshape(length), ty)
    return values


def differences(s: Struct, expected: dict, got: dict) -> np.ndarray:
    """Per struct: True where any member differs."""
    bad = None
    for name, ty, _ in s.fields:
        same = is_exact_match(expected[name], got[name], ty)
        row = ~(same.all(axis=1) if same.ndim == 2 else same)
        bad = row if bad is None else bad | row
    return bad


def make_struct(rng, name: str, palette: list, vectors: bool) -> Struct:
    fields = []
    for i in range(rng.randint(2, 4)):
        s = rng.choice(palette + [BOOL] if rng.random() < 0.15 else palette)
        if vectors and rng.random() < 0.5 and not s.is_bool:
            n = rng.choice([2, 3, 4])
            fields.append((f"f{i}", Vec(s, n), n == 3 and rng.random() < 0.5))
        else:
            fields.append((f"f{i}", s, False))
    return Struct(name, tuple(fields))


def member(struct_value: t.Expr, s: Struct, field: str) -> t.Expr:
    """A member read; a packed vector member is converted to its vector type."""
    ty, packed = next((ty, p) for n, ty, p in s.fields if n == field)
    node = t.Member(ty=ty, a=struct_value, field=field)
    return t.Convert(ty=ty, a=node) if packed else node
