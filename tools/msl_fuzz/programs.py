"""Whole programs: a kernel, its helpers, its buffers and their data, made defined.

`generate(seed, index)` is deterministic: the same pair gives the same program on
every machine, so a mismatch found on the GPU machine can be replayed here.
"""

from __future__ import annotations

import os
import random
from dataclasses import dataclass

import numpy as np

from . import structs, tree as t, workarounds
from .expressions import Context, ExprGen, Var, random_float, random_int, random_value
from .model import ProgramError
from .repair import make_defined
from .statements import ATOMIC_INT_FAMILIES, StmtGen
from .types import (BFLOAT, BOOL, FLOAT, FLOATS, HALF, INT, INTEGERS, SCALARS, SHORT, UINT, USHORT, Arr, Scalar,
                    Type, Vec, elem)
from .values import constant, float_array, ints

CATEGORIES = {
    # name: (weight, features)
    "int": (3.0, set()),
    "float": (3.0, set()),
    "convert": (2.0, set()),
    "control": (2.0, set()),
    "helpers": (2.0, {"helpers"}),
    "threadgroup": (2.0, {"threadgroup", "helpers"}),
    "simd": (2.0, {"simd"}),
    "atomic": (1.5, {"atomic", "threadgroup"}),
    "struct": (1.5, {"struct"}),
    # only when asked for (--category regions): regions.py
    "regions": (0.0, {"threadgroup", "regions"}),
}


# (seed, index, attempt) of programs the model refused: bugs of the generator, counted
# by the runner's report (MSL_FUZZ_STRICT=1 raises them instead).
GENERATOR_ERRORS: list = []


@dataclass
class Generated:
    program: t.Program
    expected: dict  # buffer name -> model array after the kernel ran
    seed: int
    index: int


def palette_for(rng: random.Random, category: str) -> list:
    if category == "int":
        types = rng.sample(INTEGERS, rng.randint(2, 3))
    elif category == "float":
        types = rng.sample(FLOATS, rng.randint(1, 2)) + [rng.choice([INT, UINT])]
    elif category == "convert":
        types = rng.sample(list(INTEGERS + FLOATS), rng.randint(3, 4))
    else:
        types = rng.sample(list(INTEGERS + FLOATS), rng.randint(1, 2)) + [rng.choice([INT, UINT])]
    out = []
    for s in types:
        if s not in out:
            out.append(s)
    return out


def input_data(rng: random.Random, ty: Type, length: int, finite: bool = False) -> np.ndarray:
    e = elem(ty)
    count = length * (ty.n if isinstance(ty, Vec) else 1)
    if e.is_int:
        values = ints([random_int(rng, e) for _ in range(count)])
    elif e.is_bool:
        values = np.array([rng.random() < 0.5 for _ in range(count)])
    else:
        values = float_array([random_float(rng, e, finite) for _ in range(count)], e)
    return values.reshape((length, ty.n)) if isinstance(ty, Vec) else values


def make_buffers(rng: random.Random, palette: list, vectors: bool, threads: int, features: set) -> list:
    buffers = []
    for i, s in enumerate(palette):
        space = "constant" if rng.random() < 0.3 else "device"
        buffers.append(t.Buffer(name=f"in{i}", ty=s, role="in", length=threads, space=space,
                                data=input_data(rng, s, threads)))
    if rng.random() < 0.5:
        s = rng.choice([x for x in palette if x not in (BFLOAT, BOOL)] or [INT])
        buffers.append(t.Buffer(name="k0", ty=s, role="scalar", length=1, data=input_data(rng, s, 1)))
    if vectors:
        s = rng.choice(palette)
        ty = Vec(s, rng.choice([2, 3, 4]))
        buffers.append(t.Buffer(name=f"in{len(palette)}", ty=ty, role="in", length=threads,
                                packed=ty.n == 3 and rng.random() < 0.5, data=input_data(rng, ty, threads)))
    for i in range(rng.randint(1, 3)):
        s = rng.choice(palette)
        ty = Vec(s, rng.choice([2, 3, 4])) if vectors and rng.random() < 0.4 else s
        packed = isinstance(ty, Vec) and ty.n == 3 and rng.random() < 0.5
        buffers.append(t.Buffer(name=f"out{i}", ty=ty, role="out", length=threads, packed=packed,
                                data=constant(0, ty, threads)))
    if "atomic" in features:
        for i in range(rng.randint(1, 2)):
            s = rng.choice([INT, UINT, INT, UINT, FLOAT])
            length = rng.choice([1, 4, 16])
            if s.is_float:
                data = float_array([float(rng.randint(-64, 64)) for _ in range(length)], s)
            else:
                data = ints([random_int(rng, s) for _ in range(length)])
            ops = ("add",) if s.is_float else rng.choice(ATOMIC_INT_FAMILIES)
            buffers.append(t.Buffer(name=f"acc{i}", ty=s, role="atomic", length=length, data=data, atomic_ops=ops))
    return buffers


FUNCTION_CONSTANT_TYPES = (BOOL, INT, UINT, SHORT, USHORT, FLOAT, HALF)
INT_OPS = ["+", "-", "*", "&", "|", "^"]


def add_program_scope(rng: random.Random, prog: t.Program, palette: list, index: int) -> None:
    """Program-scope constants and arrays, function constants, and operator macros."""
    scalars = [s for s in palette if not s.is_bool] or [INT]
    for k in range(rng.choice([0, 0, 1, 2])):
        s = rng.choice(scalars)
        if rng.random() < 0.5:
            ty = Arr(s, rng.choice([2, 3, 4, 8]))
            value = [random_value(rng, s) for _ in range(ty.n)]
        else:
            ty, value = s, random_value(rng, s)
        prog.globals.append(t.Global(f"{prog.name}_g{k}", ty, value))
    if rng.random() < 0.12:
        for k in range(rng.randint(1, 2)):
            s = rng.choice(FUNCTION_CONSTANT_TYPES)
            # indices are library-wide: each program of a batch (one seed) gets its own
            prog.globals.append(t.Global(f"{prog.name}_fc{k}", s, random_value(rng, s),
                                         function_constant=(index % 4096) * 4 + k))
    for k in range(rng.choice([0, 0, 0, 1, 2])):
        prog.macros.append((f"{prog.name.upper()}_OP{k}", rng.choice(INT_OPS)))


def add_struct(rng: random.Random, prog: t.Program, palette: list, vectors: bool) -> None:
    """A struct type, an input buffer of it and (mostly) an output buffer of it."""
    s = structs.make_struct(rng, f"{prog.name}_S", palette, vectors)
    prog.structs.append(s)
    n = prog.threads
    prog.buffers.append(t.Buffer(name="sin", ty=s, role="in", length=n,
                                 data={f: input_data(rng, ty, n) for f, ty, _ in s.fields}))
    if rng.random() < 0.7:
        prog.buffers.append(t.Buffer(name="sout", ty=s, role="out", length=n,
                                     data={f: constant(0, ty, n) for f, ty, _ in s.fields}))


def helper_context(rng: random.Random, prog: t.Program, palette: list, vectors: bool, helpers: list) -> Context:
    ctx = Context(rng=rng, threads=prog.threads, palette=palette, vectors=vectors, inputs=[],
                  helpers=list(helpers), level="thread", builtins=False, macros=list(prog.macros))
    for g in prog.globals:
        ctx.declare(Var(g.name, g.ty, mutable=False))
    return ctx


def make_helper(rng: random.Random, prog: t.Program, palette: list, vectors: bool, kind: str) -> t.Helper:
    usable = [h for h in prog.helpers if not h.collective]
    ctx = helper_context(rng, prog, palette, vectors, usable)
    scalars = [s for s in palette if not s.is_bool]
    pick = lambda: rng.choice(scalars) if not vectors or rng.random() < 0.7 else Vec(rng.choice(scalars), rng.choice([2, 3, 4]))  # noqa: E731
    if kind == "template":
        x = rng.choice(scalars)
        params = [(f"p{i}", x, None) for i in range(rng.randint(1, 2))]
        ret = x
    else:
        params = [(f"p{i}", pick(), None) for i in range(rng.randint(1, 3))]
        ret = pick()
    fields = [(f"m{i}", pick(), None) for i in range(rng.randint(1, 2))] if kind == "functor" else []
    for name, ty, _ in params + fields:
        ctx.declare(Var(name, ty, mutable=False))
    ctx.counter = 100 * (len(prog.helpers) + 1)
    gen = StmtGen(ctx, prog, features=set())
    body = []
    if rng.random() < 0.3:
        body.append(t.If(cond=gen.ex.expr(BOOL, 2), then=[t.Return(value=gen.ex.implicit(ret, 2))]))
    for _ in range(rng.randint(0, 3)):
        body += gen.statement(1, False)
    # a return converts its value to the function's type (`short h(...) { return x * -1; }`)
    body.append(t.Return(value=gen.ex.implicit(ret, rng.randint(1, 3))))
    suffix = {"function": "h", "template": "t", "functor": "F"}[kind]
    return t.Helper(name=f"{prog.name}_{suffix}{len(prog.helpers)}", params=params, ret=ret, body=body,
                    kind=kind, fields=fields)


def build(rng: random.Random, name: str, category: str, index: int = 0) -> t.Program:
    features = set(CATEGORIES[category][1])
    if category in ("threadgroup", "atomic") and rng.random() < 0.4:
        features.add("simd")
    if rng.random() < 0.3 and category not in ("helpers",):
        features.add("helpers")
    group = rng.choice([32, 64, 128])
    threads = group * rng.choice([1, 2, 4] if group < 128 else [1, 2])
    palette = palette_for(rng, category)
    vectors = rng.random() < (0.6 if category in ("int", "float", "convert") else 0.35)
    buffers = make_buffers(rng, palette, vectors, threads, features)
    prog = t.Program(name=name, category=category, threads=threads, group=group, buffers=buffers, shared=[],
                     helpers=[], body=[], features=features)
    if "struct" in features or rng.random() < 0.1:
        add_struct(rng, prog, palette, vectors)
    add_program_scope(rng, prog, palette, index)
    if "helpers" in features:
        for _ in range(rng.randint(1, 3)):
            kind = rng.choice(["function", "function", "template", "functor"])
            prog.helpers.append(make_helper(rng, prog, palette, vectors, kind))
    ctx = Context(rng=rng, threads=threads, palette=palette, vectors=vectors,
                  inputs=[b for b in buffers if b.role == "in"],
                  helpers=[h for h in prog.helpers if not h.collective], simd="simd" in features,
                  divergent_simd="simd" in features and rng.random() < 0.5
                  and not workarounds.active("divergent-simd"))
    for b in buffers:
        if b.role == "scalar":
            ctx.declare(Var(b.name, b.ty, mutable=False))
    for g in prog.globals:
        ctx.declare(Var(g.name, g.ty, mutable=False))
    ctx.macros = list(prog.macros)
    gen = StmtGen(ctx, prog, features)
    depth = 3 if category == "control" else 2
    for _ in range(rng.randint(3, 9)):
        prog.body += gen.statement(depth, False)
    prog.body += gen.final_stores()
    return prog


def pick_category(rng: random.Random) -> str:
    names = list(CATEGORIES)
    return rng.choices(names, weights=[CATEGORIES[n][0] for n in names])[0]


def generate(seed: int, index: int, category: str | None = None) -> Generated:
    """The index-th program of a seed, made defined (deterministic)."""
    for attempt in range(20):
        rng = random.Random(f"msl_fuzz:{seed}:{index}:{attempt}")
        cat = category or pick_category(rng)
        if cat == "regions":
            from .regions import build_regions

            prog = build_regions(rng, f"fz_{seed}_{index}", index)
        else:
            prog = build(rng, f"fz_{seed}_{index}", cat, index)
        try:
            memory = make_defined(prog)
        except ProgramError:
            GENERATOR_ERRORS.append((seed, index, attempt))
            if os.environ.get("MSL_FUZZ_STRICT"):
                raise
            continue
        if memory is not None:
            return Generated(prog, memory, seed, index)
    raise RuntimeError(f"no defined program for seed {seed} index {index}")


__all__ = ["generate", "Generated", "CATEGORIES", "SCALARS", "Scalar", "ExprGen"]
