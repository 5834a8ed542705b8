"""Region-shaped programs (category "regions"): the kernels the CPU backend runs as loops over a
group's threads between barriers (cpp/src/msl/passes/barrier_regions), and the shapes beside
them that it must leave to the fibers.

A program is a sequence at the kernel's top level of threads' statements (the generator's
usual declarations, assignments, ifs, loops and switches), threadgroup exchanges (a store at
the thread's index, a barrier, a read at another thread's), lone barriers, tree reductions,
group loops (`for` with group-uniform bounds holding barriers, nested), locals with uniform
initialisers that threads may then change (by a member, an element, a reference), calls of
helpers taking a local by `thread T&`, shadowing blocks, references to locals, and `return`s
of the last region. Locals declared before a barrier are read and written after it (they cross
it, loop-carried in group loops); the per-thread builtins are read in every region. One
program in three also gets the shapes the pass declines: barriers in uniform ifs, switches,
`while` and `do` loops, and a `return` of whole groups before a barrier. The model (model.py)
runs every program in lockstep, so the expected outputs do not depend on how barriers run;
the runner compares them with regions on and off (`cpu-fibers`: METALCALL_BARRIER_REGIONS=0).
"""

from __future__ import annotations

import random

from . import tree as t
from .expressions import Context, Var
from .statements import StmtGen
from .values import constant
from .types import BOOL, FLOATS, INT, INTEGERS, UINT, Arr, Ptr, Scalar, Struct, Vec, arithmetic_result, elem

COMPOUND = {True: ["+", "-", "*", "^", "|"], False: ["+", "-", "*"]}  # integer: the first list


class RegionGen(StmtGen):
    def __init__(self, ctx: Context, prog: t.Program, declined: bool):
        super().__init__(ctx, prog, features=set())
        self.declined = declined  # also generate the shapes the pass leaves to the fibers
        self.bounds: list[str] = []  # uniform uint locals nothing writes: loop bounds
        self.pointed_at: set = set()  # locals a pointer or reference points at (not shadowed: the
        #                               model reads a pointee by its name)

    def lambda_def(self) -> list:
        # none: a lambda reads the variables it captured by name, which a shadowing block would
        # change in the model and not in C++ (and the pass leaves lambdas to the fibers anyway)
        return self.bool_local(0)

    def pointer_decl(self) -> list:
        out = super().pointer_decl()
        self.pointed_at |= {s.target for s in out}
        return out

    # The sequence ------------------------------------------------------------------------
    def sequence(self, depth: int, count: int, top: bool = False) -> list:
        out = []
        for _ in range(count):
            out += self.item(depth, top)
        return out

    def item(self, depth: int, top: bool) -> list:
        makers = [(self.thread_statements, 3.0), (self.uniform_local, 1.2), (self.exchange, 2.0),
                  (self.barrier, 0.8), (self.reference_call, 0.9), (self.shadow, 0.5), (self.reference, 0.4),
                  (self.bool_local, 0.4)]
        if depth < 2:
            makers += [(self.group_loop, 1.6 if depth == 0 else 0.8), (self.reduction, 0.4)]
        if self.declined and depth < 2:
            makers += [(self.uniform_branch, 0.5), (self.uniform_switch, 0.3), (self.other_loop, 0.4)]
        if self.declined and top:
            makers += [(self.groups_return, 0.2)]
        if top:
            makers += [(self.shadow_global, 0.5)]
        total = sum(w for _, w in makers)
        pick = self.rng.uniform(0, total)
        for maker, w in makers:
            pick -= w
            if pick <= 0:
                return maker(depth)
        return self.thread_statements(depth)

    def body_with_barrier(self, depth: int) -> list:
        """A nested sequence (its own scope) with at least one barrier at its top level."""
        self.ctx.scopes.append([])
        body = self.sequence(depth, self.rng.randint(1, 3))
        self.ctx.scopes.pop()
        if not any(isinstance(s, t.Barrier) for s in body):
            body.insert(self.rng.randint(0, len(body)), t.Barrier())
        return body

    # Items -------------------------------------------------------------------------------
    def thread_statements(self, depth: int) -> list:
        out = []
        for _ in range(self.rng.randint(1, 3)):
            out += self.statement(self.rng.choice([0, 1, 1, 2]), False)
        return out

    def uniform_value(self, ty) -> t.Expr:
        """A value every thread of a group computes alike: from literals and the group's index."""
        tgid = t.Ref(ty=UINT, name="tgid")
        r = self.rng.random()
        if r < 0.3:
            return self.ex.literal(ty)
        if r < 0.5 and isinstance(ty, Vec):
            return t.Construct(ty=ty, parts=[self.uniform_value(ty.elem) for _ in range(ty.n)])
        k = t.Lit(ty=UINT, value=self.rng.randint(1, 5))
        base = t.Binary(ty=UINT, op="+", a=t.Binary(ty=UINT, op="*", a=tgid, b=k),
                        b=t.Lit(ty=UINT, value=self.rng.randint(0, 9)))
        return t.Convert(ty=ty, a=base)

    def uniform_local(self, depth: int) -> list:
        """A local with a uniform initialiser: the group's while nothing writes it, a thread's
        once anything does (by its name, a member, an element, a reference or a call)."""
        if self.chance(0.3):
            name = self.ctx.fresh("n")
            value = t.Binary(ty=UINT, op="+", a=t.Binary(ty=UINT, op="%", a=t.Ref(ty=UINT, name="tgid"),
                                                         b=t.Lit(ty=UINT, value=2)),
                             b=t.Lit(ty=UINT, value=self.rng.randint(1, 3)))
            self.ctx.declare(Var(name, UINT, mutable=False))
            self.bounds.append(name)
            return [t.Decl(name=name, ty=UINT, init=value)]
        ty = self.rng.choice(self.types_in_play())
        name = self.ctx.fresh("u")
        self.ctx.declare(Var(name, ty))
        out = [t.Decl(name=name, ty=ty, init=self.uniform_value(ty))]
        if self.chance(0.5):  # a thread changes a part of it at once
            out += self.assign_part(Var(name, ty))
        return out

    def assign_part(self, v: Var) -> list:
        e = elem(v.ty)
        value = self.ex.expr(e, 2)
        op = "=" if e.is_bool or self.chance(0.3) else self.rng.choice(COMPOUND[e.is_int]) + "="
        if isinstance(v.ty, Vec):
            return [t.Assign(name=v.name, value=value, op=op, comps=(self.rng.randrange(v.ty.n),),
                             element_syntax=self.chance(0.4))]
        return [t.Assign(name=v.name, value=value, op=op)]

    def bool_local(self, depth: int) -> list:
        name, init = self.ctx.fresh("b"), self.ex.expr(BOOL, 2)
        self.ctx.declare(Var(name, BOOL))
        return [t.Decl(name=name, ty=BOOL, init=init)]

    def exchange(self, depth: int) -> list:
        """Each thread stores at its index; after a barrier, reads another thread's."""
        ty = self.shared_type()
        arr = self.shared_array(ty)
        lid = t.Ref(ty=UINT, name="lid")
        locals_ = [v for v in self.ctx.variables() if v.ty == ty]
        value = t.Ref(ty=ty, name=self.rng.choice(locals_).name) if locals_ and self.chance(0.5) \
            else self.ex.expr(ty, self.expr_depth())
        name = self.ctx.fresh()
        read = t.SharedLoad(ty=ty, array=arr.name, index=self.permutation(lid))
        out = [t.Barrier(), t.SharedStore(array=arr.name, index=lid, value=value), t.Barrier()]
        mutable = [v for v in locals_ if v.mutable]
        if mutable and self.chance(0.3):  # into an existing local (it then crosses the next barrier)
            return out + [t.Assign(name=self.rng.choice(mutable).name, value=read)]
        self.ctx.declare(Var(name, ty))
        return out + [t.Decl(name=name, ty=ty, init=read)]

    def barrier(self, depth: int) -> list:
        return [t.Barrier()]

    def reduction(self, depth: int) -> list:
        ty = self.rng.choice([s for s in self.ctx.palette if not s.is_bool])
        arr = self.shared_array(ty)
        name = self.ctx.fresh()
        out = [t.Barrier(), t.SharedStore(array=arr.name, index=t.Ref(ty=UINT, name="lid"),
                                          value=self.ex.expr(ty, 2)), t.Barrier()]
        out += self.tree_reduction(arr, ty)
        self.ctx.declare(Var(name, ty))
        return out + [t.Decl(name=name, ty=ty, init=t.SharedLoad(ty=ty, array=arr.name, index=t.Lit(ty=UINT, value=0)))]

    def loop_bound(self, var_ty, start: int) -> t.Expr:
        r = self.rng.random()
        bounds = [v.name for v in self.ctx.variables() if v.name in self.bounds]  # those in scope
        if r < 0.3 and bounds and var_ty == UINT:
            return t.Binary(ty=UINT, op="+", a=t.Ref(ty=UINT, name=self.rng.choice(bounds)),
                            b=t.Lit(ty=UINT, value=start))
        if r < 0.6:
            group = t.Binary(ty=UINT, op="%", a=t.Ref(ty=UINT, name="tgid"), b=t.Lit(ty=UINT, value=3))
            return t.Convert(ty=var_ty, a=t.Binary(ty=UINT, op="+", a=group, b=t.Lit(ty=UINT, value=start + 1)))
        return t.Lit(ty=var_ty, value=start + self.rng.randint(1, 3))

    def group_loop(self, depth: int, style: str = "for") -> list:
        var_ty = self.rng.choice([INT, UINT])
        var = self.ctx.fresh("i")
        start = self.rng.randint(0, 2)
        end = self.loop_bound(var_ty, start)
        self.ctx.scopes.append([Var(var, var_ty, mutable=False)])
        body = self.body_with_barrier(depth + 1)
        self.ctx.scopes.pop()
        return [t.For(var=var, ty=var_ty, start=t.Lit(ty=var_ty, value=start), end=end,
                      step=self.rng.choice([1, 1, 2]), body=body, style=style)]

    # The outputs ---------------------------------------------------------------------------
    def parts(self, ty) -> list:
        """Reads of every local (or a component, member, element of one) of type ty in scope."""
        out = []
        for v in self.ctx.variables():
            ref = t.Ref(ty=v.ty, name=v.name)
            if v.ty == ty:
                out.append(ref)
            elif isinstance(v.ty, Vec) and v.ty.elem == ty:
                out += [t.Swizzle(ty=ty, a=ref, comps=(c,)) for c in range(v.ty.n)]
            elif isinstance(v.ty, Ptr) and v.ty.elem == ty:
                out.append(t.Deref(ty=ty, pointer=v.name, index=t.Lit(ty=UINT, value=0)))
            elif isinstance(v.ty, Arr) and v.ty.elem == ty:
                out += [t.Index(ty=ty, a=ref, index=t.Lit(ty=UINT, value=k)) for k in range(v.ty.n)]
            elif isinstance(v.ty, Struct):
                out += [t.Member(ty=ty, a=ref, field=name) for name, fty, packed in v.ty.fields
                        if fty == ty and not packed]
        return out

    def digest_stores(self) -> list:
        """Each output: a random value combined with the locals of its type, so that what a
        thread's locals hold at the end (after every barrier) reaches memory."""
        out = []
        for b in self.prog.buffers:
            if b.role != "out":
                continue
            if isinstance(b.ty, Struct):
                value = self.stored_value(b.ty)
            else:
                # an operand of the combination below: no implicit conversion (printed bare)
                value = self.ex.expr(b.ty, self.expr_depth())
                parts = self.parts(b.ty)
                self.rng.shuffle(parts)
                for part in parts[:16]:
                    op = "^" if elem(b.ty).is_int else "+"
                    node = t.Binary(ty=arithmetic_result(b.ty, b.ty), op=op, a=value, b=part)
                    value = node if node.ty == b.ty else t.Convert(ty=b.ty, a=node)
            out.append(t.Store(buffer=b.name, index=t.Ref(ty=UINT, name="gid"), value=value))
        return out

    # Shapes the pass declines --------------------------------------------------------------
    def other_loop(self, depth: int) -> list:
        return self.group_loop(depth, self.rng.choice(["while", "do"]))

    def uniform_branch(self, depth: int) -> list:
        orelse = self.body_with_barrier(depth + 1) if self.chance(0.5) else []
        return [t.If(cond=self.uniform_condition(), then=self.body_with_barrier(depth + 1), orelse=orelse)]

    def uniform_switch(self, depth: int) -> list:
        value = t.Binary(ty=UINT, op="&", a=t.Ref(ty=UINT, name="tgid"), b=t.Lit(ty=UINT, value=3))
        cases = [t.Case(labels=[0], body=self.body_with_barrier(depth + 1)),
                 t.Case(labels=[1, 2], body=self.body_with_barrier(depth + 1))]
        return [t.Switch(value=value, cases=cases, default=self.body_with_barrier(depth + 1))]

    def groups_return(self, depth: int) -> list:
        """Every thread of some groups returns before the barriers that follow."""
        return [t.If(cond=self.uniform_condition(), then=[t.Return(value=None)])]

    # Locals by reference -------------------------------------------------------------------
    def lvalues(self) -> list:
        """(expression, type) of what a `thread T&` may bind: a local, a vector's component, a
        struct's member, an array's element."""
        out = []
        for v in self.ctx.variables():
            if not v.mutable:
                continue
            ref = t.Ref(ty=v.ty, name=v.name)
            if isinstance(v.ty, (Scalar, Vec)):
                out.append((ref, v.ty))
            if isinstance(v.ty, Vec):
                c = self.rng.randrange(v.ty.n)
                out.append((t.Swizzle(ty=v.ty.elem, a=ref, comps=(c,)), v.ty.elem))
            elif isinstance(v.ty, Struct):
                for name, ty, packed in v.ty.fields:
                    if not packed and isinstance(ty, (Scalar, Vec)):
                        out.append((t.Member(ty=ty, a=ref, field=name), ty))
            elif isinstance(v.ty, Arr):
                out.append((t.Index(ty=v.ty.elem, a=ref, index=t.Lit(ty=UINT, value=self.rng.randrange(v.ty.n))),
                            v.ty.elem))
        return out

    def reference_helper(self, ty) -> t.Helper:
        for h in self.prog.helpers:
            if h.ret is None and h.params[0][1] == ty:
                return h
        name = f"{self.prog.name}_r{len(self.prog.helpers)}"
        a, b = f"{name}_a", f"{name}_b"
        ctx = Context(rng=self.rng, threads=self.prog.threads, palette=self.ctx.palette, vectors=self.ctx.vectors,
                      inputs=[], level="thread", builtins=False, counter=1000 * (len(self.prog.helpers) + 1))
        ctx.declare(Var(a, ty))
        ctx.declare(Var(b, ty, mutable=False))
        gen = StmtGen(ctx, self.prog, features=set())
        body = []
        for _ in range(self.rng.randint(0, 2)):
            body += gen.statement(1, False)
        e = elem(ty)
        op = "=" if e.is_bool else self.rng.choice(COMPOUND[e.is_int]) + "="
        body.append(t.Assign(name=a, op=op, value=gen.ex.expr(ty, 2)))
        h = t.Helper(name=name, params=[(a, ty, "thread&"), (b, ty, None)], ret=None, body=body)
        self.prog.helpers.append(h)
        return h

    def reference_call(self, depth: int) -> list:
        targets = self.lvalues()
        if not targets:
            return self.uniform_local(depth)
        target, ty = self.rng.choice(targets)
        h = self.reference_helper(ty)
        return [t.CallStmt(call=t.CallHelper(ty=ty, name=h.name, args=[target, self.ex.expr(ty, 2)]))]

    def reference(self, depth: int) -> list:
        """thread T& r = x; (or = a[k];) read and written as r."""
        targets = [v for v in self.ctx.variables() if v.mutable and
                   ((isinstance(v.ty, Scalar) and not v.ty.is_bool) or isinstance(v.ty, Arr))]
        if not targets:
            return self.bool_local(depth)
        v = self.rng.choice(targets)
        offset = self.rng.randrange(v.ty.n) if isinstance(v.ty, Arr) else None
        name = self.ctx.fresh("r")
        ty = Ptr(v.ty.elem if isinstance(v.ty, Arr) else v.ty, 1)
        self.ctx.declare(Var(name, ty))
        self.pointed_at.add(v.name)
        return [t.PointerDecl(name=name, ty=ty, target=v.name, offset=offset, ref=True)]

    def hiding(self, name: str, make):
        """make() without `name` in scope: a declaration's own name is in scope in its initialiser
        (C++), so the outer one it shadows cannot be read there."""
        saved = self.ctx.scopes
        self.ctx.scopes = [[x for x in scope if x.name != name] for scope in saved]
        try:
            return make()
        finally:
            self.ctx.scopes = saved

    def shadow_global(self, depth: int) -> list:
        """A top-level local named as a program-scope scalar that earlier statements read (its
        scope is the rest of the kernel, where the model's name then means it too)."""
        shadowed = {v.name for v in self.ctx.scopes[0] if v.mutable}
        names = [g for g in self.prog.globals if not isinstance(g.ty, Arr) and g.name not in shadowed]
        if not names:
            return self.uniform_local(depth)
        g = self.rng.choice(names)
        init = self.uniform_value(g.ty) if self.chance(0.6) else self.hiding(g.name, lambda: self.ex.expr(g.ty, 2))
        self.ctx.declare(Var(g.name, g.ty))
        return [t.Decl(name=g.name, ty=g.ty, init=init)]

    def shadow(self, depth: int) -> list:
        """{ T x = ...; ... } where x names an outer local of the same type."""
        outer = [v for v in self.ctx.variables() if isinstance(v.ty, (Scalar, Vec)) and v.name not in self.pointed_at]
        if not outer:
            return self.thread_statements(depth)
        v = self.rng.choice(outer)
        init = self.hiding(v.name, lambda: self.ex.expr(v.ty, 2))
        self.ctx.scopes.append([Var(v.name, v.ty)])
        body = []
        for _ in range(self.rng.randint(1, 2)):
            body += self.statement(1, False)
        self.ctx.scopes.pop()
        return [t.Shadow(name=v.name, ty=v.ty, init=init, body=body)]


def build_regions(rng: random.Random, name: str, index: int) -> t.Program:
    from .programs import add_program_scope, add_struct, make_buffers, make_helper

    group = rng.choice([32, 64, 128])
    threads = group * rng.choice([1, 2, 4] if group < 128 else [1, 2])
    palette = []
    for s in rng.sample(list(INTEGERS + FLOATS), rng.randint(2, 3)) + [rng.choice([INT, UINT])]:
        if s not in palette:
            palette.append(s)
    vectors = rng.random() < 0.6
    features = {"threadgroup", "regions"}
    buffers = make_buffers(rng, palette, vectors, threads, features)
    outputs = [b.ty for b in buffers if b.role == "out"]
    for s in palette:  # an output of each type the program computes in, for its locals
        if s not in outputs:
            buffers.append(t.Buffer(name=f"out{len(outputs)}", ty=s, role="out", length=threads,
                                    data=constant(0, s, threads)))
            outputs.append(s)
    prog = t.Program(name=name, category="regions", threads=threads, group=group, buffers=buffers, shared=[],
                     helpers=[], body=[], features=features)
    if rng.random() < 0.4:
        add_struct(rng, prog, palette, vectors)
    add_program_scope(rng, prog, palette, index)
    if rng.random() < 0.3:
        prog.helpers.append(make_helper(rng, prog, palette, vectors, rng.choice(["function", "template"])))
    ctx = Context(rng=rng, threads=threads, palette=palette, vectors=vectors,
                  inputs=[b for b in buffers if b.role == "in"], helpers=list(prog.helpers), level="thread")
    for b in buffers:
        if b.role == "scalar":
            ctx.declare(Var(b.name, b.ty, mutable=False))
    for g in prog.globals:
        ctx.declare(Var(g.name, g.ty, mutable=False))
    ctx.macros = list(prog.macros)
    gen = RegionGen(ctx, prog, declined=rng.random() < 0.35)
    prog.body = gen.sequence(0, rng.randint(3, 7), top=True)
    if not any(isinstance(s, t.Barrier) for s in t.walk_statements(prog.body)):
        prog.body += gen.exchange(0)
    if rng.random() < 0.3:  # some threads end in the last region
        prog.body.append(t.If(cond=gen.ex.expr(BOOL, 2), then=[t.Return(value=None)]))
    prog.body += gen.digest_stores()
    return prog
