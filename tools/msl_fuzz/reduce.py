"""Shrinking a failing program to a small one that fails the same way.

Each round makes candidates from the current program — a statement deleted, an if or a
loop replaced by its body, an expression replaced by a literal or by one of its
operands of the same type — keeps those the model accepts (made defined again), runs
them all as one library, and continues from the smallest that still fails.
"""

from __future__ import annotations

import copy
import time

from . import tree as t
from .model import ProgramError
from .programs import Generated
from .repair import children, make_defined
from .runner import run_batch
from .types import Arr, Struct

MAX_ROUNDS = 30
MAX_CANDIDATES = 120


def size(prog: t.Program) -> int:
    count = 0
    stack = list(prog.body) + [s for h in prog.helpers for s in h.body]
    while stack:
        node = stack.pop()
        count += 1
        stack += [c for _, _, c in children(node)]
    return count


def blocks(prog: t.Program):
    """Every statement list of the program (kernel, helpers, branches, loop bodies)."""
    stack = [prog.body] + [h.body for h in prog.helpers]
    while stack:
        block = stack.pop()
        yield block
        for s in block:
            if isinstance(s, t.If):
                stack += [s.then, s.orelse]
            elif isinstance(s, (t.For, t.Shadow)):
                stack.append(s.body)
            elif isinstance(s, t.Switch):
                stack += [c.body for c in s.cases] + [s.default]


def renamed(prog: t.Program, name: str, slot: int) -> t.Program:
    """A copy whose kernel, helpers, structs, program-scope names and macros carry new names,
    and whose function constants new indices (candidates share one library)."""
    p = copy.deepcopy(prog)
    old = p.name
    p.name = name

    def fresh(n: str) -> str:
        if n.startswith(old):
            return name + n[len(old):]
        if n.startswith(old.upper()):
            return name.upper() + n[len(old):]
        return f"{name}_{n}"

    mapping = {}
    for h in p.helpers:
        mapping[h.name] = h.name = fresh(h.name)
    for k, g in enumerate(p.globals):
        mapping[g.name] = g.name = fresh(g.name)
        if g.function_constant is not None:
            g.function_constant = 30000 + slot * 4 + k
    p.macros = [(fresh(m), op) for m, op in p.macros]
    macros = {old_name: new for (old_name, _), (new, _) in zip(prog.macros, p.macros)}
    types = {s: Struct(fresh(s.name), s.fields) for s in p.structs}
    p.structs = list(types.values())
    for b in p.buffers:
        b.ty = types.get(b.ty, b.ty)
    stack = list(p.body) + [s for h in p.helpers for s in h.body]
    while stack:
        node = stack.pop()
        for attr, value in vars(node).items():
            if isinstance(value, Struct):
                setattr(node, attr, types.get(value, value))
        if isinstance(node, (t.CallHelper, t.Ref)):
            node.name = mapping.get(node.name, node.name)
        if isinstance(node, t.Binary) and node.macro:
            node.macro = macros.get(node.macro, node.macro)
        stack += [c for _, _, c in children(node)]
    return p


def statement_edits(prog: t.Program):
    """Programs with one statement removed or one if/for replaced by its body."""
    for bi, block in enumerate(list(blocks(prog))):
        for si, s in enumerate(block):
            if isinstance(s, t.Return) and si == len(block) - 1:
                continue
            yield ("delete", bi, si)
            if isinstance(s, (t.If, t.For)):
                yield ("inline", bi, si)


def apply_statement_edit(prog: t.Program, edit) -> t.Program:
    p = copy.deepcopy(prog)
    kind, bi, si = edit
    block = list(blocks(p))[bi]
    s = block[si]
    if kind == "delete":
        del block[si]
    elif isinstance(s, t.If):
        block[si:si + 1] = s.then
    else:
        block[si:si + 1] = [t.Decl(name=s.var, ty=s.ty, init=s.start)] + s.body
    unused = {h.name for h in p.helpers} - called_helpers(p)
    p.helpers = [h for h in p.helpers if h.name not in unused]
    return p


def called_helpers(prog: t.Program) -> set:
    names = set()
    stack = list(prog.body)
    seen = set()
    helpers = {h.name: h for h in prog.helpers}
    while stack:
        node = stack.pop()
        if isinstance(node, t.CallHelper) and node.name not in seen:
            seen.add(node.name)
            names.add(node.name)
            if node.name in helpers:
                stack += helpers[node.name].body
        stack += [c for _, _, c in children(node)]
    return names


def expression_edits(prog: t.Program):
    """(uid, replacement maker) for expressions that can become simpler."""
    stack = list(prog.body) + [s for h in prog.helpers for s in h.body]
    found = []
    while stack:
        node = stack.pop()
        for _, _, child in children(node):
            stack.append(child)
        if isinstance(node, t.Expr) and not isinstance(node, (t.Lit, t.Ref)) and not isinstance(node.ty, (Arr, Struct)):
            found.append(node)
    found.sort(key=lambda e: -sum(1 for _ in t.walk_exprs(e)))
    for e in found:
        for _, _, child in children(e):
            # an implicit conversion is printed bare: valid only where it stands (an initialiser,
            # `=`, a store, an argument), so it never replaces an expression elsewhere
            implicit = isinstance(child, t.Convert) and child.style == "implicit"
            if isinstance(child, t.Expr) and child.ty == e.ty and not implicit:
                yield e.uid, child.uid
        yield e.uid, None


def apply_expression_edit(prog: t.Program, edit) -> t.Program:
    from .repair import locations, put

    target, child = edit
    p = copy.deepcopy(prog)  # uids are kept by deepcopy
    where = locations(p)
    container, key, node = where[target]
    if child is None:
        value = 0.0 if node.ty.kind == "float" else (False if node.ty.kind == "bool" else 1)
        put(container, key, t.Lit(ty=node.ty, value=value))
    else:
        put(container, key, where[child][2])
    return p


def candidates(gen: Generated):
    prog = gen.program
    made = 0
    for edit in statement_edits(prog):
        yield apply_statement_edit(prog, edit)
        made += 1
        if made >= MAX_CANDIDATES:
            return
    for edit in expression_edits(prog):
        yield apply_expression_edit(prog, edit)
        made += 1
        if made >= MAX_CANDIDATES:
            return


def shrink(gen: Generated, device, device_name: str, status: str, log=None, seconds: float | None = None) -> Generated:
    """The smallest program found that still gives `status` on the device (no new round
    after `seconds`)."""
    best = gen
    deadline = None if seconds is None else time.monotonic() + seconds
    for round_index in range(MAX_ROUNDS):
        if deadline is not None and time.monotonic() > deadline:
            break
        valid = []
        for k, prog in enumerate(candidates(best)):
            prog = renamed(prog, f"{gen.program.name}_r{round_index}_{k}", k)
            try:
                memory = make_defined(prog)
            except (ProgramError, KeyError, ValueError):  # an edit that broke the program
                continue
            if memory is not None:
                valid.append(Generated(prog, memory, gen.seed, gen.index))
        if not valid:
            return best
        outcomes = run_batch(device, device_name, valid)
        failing = {o.name for o in outcomes if o.status == status}
        smaller = [g for g in valid if g.program.name in failing and size(g.program) < size(best.program)]
        if not smaller:
            return best
        best = min(smaller, key=lambda g: size(g.program))
        if log:
            log(f"round {round_index}: {size(best.program)} nodes")
    return best
