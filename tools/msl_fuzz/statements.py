"""Random statements: declarations, assignments, if/else, bounded loops with break and
continue, stores, atomics, and the cooperative patterns that need a whole threadgroup
(threadgroup memory exchanged across barriers, tree reductions, SIMD-group exchanges,
helpers and functors that hold barriers, threadgroup atomics).

Cooperative statements are generated only where control flow is uniform: `ctx.level`
is "group" at the kernel's top level and inside loops and ifs every thread of a group
takes alike, "simd" where only SIMD-groups are uniform, "thread" elsewhere.
"""

from __future__ import annotations

from . import tree as t
from .expressions import MIXABLE, Context, ExprGen, Var, random_value
from .types import BOOL, FLOATS, INT, INTEGERS, UINT, USHORT, Arr, Lambda, Ptr, Scalar, Struct, Type, Vec, arithmetic_result, elem, promoted

INT_COMPOUND = ["+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>="]
FLOAT_COMPOUND = ["+=", "-=", "*=", "/="]
# Operations on one atomic object must commute with each other, or the result would
# depend on the order in which threads (and threadgroups) reach them.
ATOMIC_INT_FAMILIES = [("add", "sub"), ("add",), ("and",), ("or",), ("xor",), ("min",), ("max",)]


class StmtGen:
    def __init__(self, ctx: Context, prog: t.Program, features: set):
        self.ctx = ctx
        self.rng = ctx.rng
        self.ex = ExprGen(ctx)
        self.prog = prog
        self.features = features
        self.collective_helpers: list[t.Helper] = []
        self.loop_depth = 0

    def chance(self, p: float) -> bool:
        return self.rng.random() < p

    def types_in_play(self) -> list:
        types = list(self.ctx.palette)
        if self.ctx.vectors:
            types += [Vec(s, self.rng.choice([2, 3, 4])) for s in self.ctx.palette if not s.is_bool]
            if self.chance(0.15):  # bool vectors: comparisons kept, then all/any, select, conversions
                types.append(Vec(BOOL, self.rng.choice([2, 3, 4])))
        return types

    # Blocks -------------------------------------------------------------------------------
    def block(self, count: int, depth: int, in_loop: bool) -> list:
        self.ctx.scopes.append([])
        out = []
        for _ in range(count):
            out.extend(self.statement(depth, in_loop))
        self.ctx.scopes.pop()
        return out

    def statement(self, depth: int, in_loop: bool) -> list:
        ctx = self.ctx
        makers = [(self.decl, 3.0), (self.assign, 2.5)]
        if ctx.builtins:
            makers += [(self.store, 0.8)]
        if depth > 0:
            makers += [(self.if_else, 1.5), (self.loop, 1.2), (self.switch, 0.5)]
        if in_loop and ctx.level == "thread":
            makers += [(self.break_continue, 0.6)]
        if "atomic" in self.features:
            makers += [(self.device_atomic, 1.5)]
        if ctx.level == "group" and "threadgroup" in self.features:
            makers += [(self.shared_pattern, 2.5)]
        if ctx.level == "group" and "atomic" in self.features and "threadgroup" in self.features:
            makers += [(self.shared_atomics, 1.0)]
        total = sum(w for _, w in makers)
        pick = self.rng.uniform(0, total)
        for maker, w in makers:
            pick -= w
            if pick <= 0:
                return maker(depth, in_loop)
        return self.decl(depth, in_loop)

    def expr_depth(self) -> int:
        return self.rng.choice([1, 2, 2, 3, 3, 4])

    # Simple statements --------------------------------------------------------------------
    def decl(self, depth: int, in_loop: bool) -> list:
        if self.chance(0.12):
            return self.array_decl()
        if self.chance(0.06):
            return self.lambda_def()
        if self.chance(0.08):
            pointer = self.pointer_decl()
            if pointer:
                return pointer
        if self.prog.structs and self.chance(0.25):
            s = self.rng.choice(self.prog.structs)
            name = self.ctx.fresh("s")
            init = self.ex.struct_value(s, 2)
            self.ctx.declare(Var(name, s))
            return [t.Decl(name=name, ty=s, init=init)]
        ty = self.rng.choice(self.types_in_play())
        name = self.ctx.fresh()
        init = self.ex.implicit(ty, self.expr_depth())
        self.ctx.declare(Var(name, ty))
        return [t.Decl(name=name, ty=ty, init=init)]

    def pointer_decl(self) -> list:
        """thread T* p = &x;  or  = &a[k];  then read and written through p."""
        targets = [v for v in self.ctx.variables() if v.mutable and
                   ((isinstance(v.ty, Scalar) and not v.ty.is_bool) or isinstance(v.ty, Arr))]
        if not targets:
            return []
        v = self.rng.choice(targets)
        name = self.ctx.fresh("p")
        if isinstance(v.ty, Arr):
            offset = self.rng.randrange(v.ty.n)
            ty = Ptr(v.ty.elem, v.ty.n - offset)
        else:
            offset, ty = None, Ptr(v.ty, 1)
        self.ctx.declare(Var(name, ty))
        return [t.PointerDecl(name=name, ty=ty, target=v.name, offset=offset)]

    def lambda_def(self) -> list:
        """auto f = [&](params) { return expr; }; the body may read the function's variables."""
        name = self.ctx.fresh("f")
        params = [(f"{name}_p{i}", self.rng.choice(self.types_in_play())) for i in range(self.rng.randint(1, 2))]
        ret = self.rng.choice(self.types_in_play())
        saved_level = self.ctx.level
        self.ctx.level = "thread"  # called from anywhere: no SIMD-group functions inside
        self.ctx.scopes.append([Var(n, ty, mutable=False) for n, ty in params])
        # A deduced return type: a packed buffer element would make it packed_T3, smaller than
        # the T3 the model gives it (as_type<ulong3> of it is then invalid: seed 9202, 693). A
        # declared one (`-> short`) converts the value as a function's return does.
        declared = self.chance(0.4)
        value = self.ex.as_vector(self.ex.implicit(ret, self.expr_depth()) if declared else self.ex.expr(ret, self.expr_depth()))
        self.ctx.scopes.pop()
        self.ctx.level = saved_level
        self.ctx.declare(Var(name, Lambda(tuple(ty for _, ty in params), ret), mutable=False))
        return [t.LambdaDef(name=name, params=params, ret=ret, value=value, declared=declared)]

    def array_decl(self) -> list:
        """A thread-local array `T a[n] = {...}`, read and written by constant and run-time index."""
        ty = Arr(self.rng.choice([s for s in self.ctx.palette if not s.is_bool] or [INT]), self.rng.choice([2, 3, 4, 5, 8]))
        parts = [self.ex.expr(ty.elem, 2) for _ in range(ty.n)]
        name = self.ctx.fresh("a")
        self.ctx.declare(Var(name, ty))
        return [t.Decl(name=name, ty=ty, init=t.Construct(ty=ty, parts=parts))]

    def element_index(self, n: int) -> t.Expr:
        if self.chance(0.4):
            return t.Lit(ty=UINT, value=self.rng.randrange(n))
        return t.Binary(ty=UINT, op="%", a=self.ex.expr(UINT, 2), b=t.Lit(ty=UINT, value=n))

    def assign(self, depth: int, in_loop: bool) -> list:
        targets = [v for v in self.ctx.variables() if v.mutable]
        if not targets:
            return self.decl(depth, in_loop)
        v = self.rng.choice(targets)
        if isinstance(v.ty, Struct):
            return self.assign_member(v)
        if isinstance(v.ty, Ptr):
            return self.assign_through(v)
        e = elem(v.ty)
        comps, element_syntax, target_ty, index = None, False, v.ty, None
        if isinstance(v.ty, Arr) or (isinstance(v.ty, Vec) and self.chance(0.15)):
            index, target_ty = self.element_index(v.ty.n), e
        elif isinstance(v.ty, Vec) and self.chance(0.4):
            k = self.rng.randint(1, v.ty.n)
            comps = tuple(self.rng.sample(range(v.ty.n), k))
            element_syntax = k == 1 and self.chance(0.4)
            target_ty = Vec(e, k) if k > 1 else e
        if isinstance(target_ty, Scalar) and not e.is_bool and self.chance(0.1):
            return [self.increment(t.Assign(name=v.name, comps=comps, element_syntax=element_syntax, index=index))]
        ops = ["="] if e.is_bool else (INT_COMPOUND if e.is_int else FLOAT_COMPOUND)
        op = "=" if self.chance(0.4) else self.rng.choice(ops)
        if op in ("<<=", ">>="):
            bits = elem(target_ty).bits if isinstance(target_ty, Vec) else promoted(e).bits
            count_ty = self.rng.choice([INT, UINT])
            value = t.Binary(ty=count_ty, op="&", a=self.ex.expr(count_ty, 2), b=t.Lit(ty=count_ty, value=bits - 1))
        elif op == "=":
            value = self.ex.implicit(target_ty, self.expr_depth())
        elif isinstance(target_ty, Scalar) and self.chance(0.25):
            # `s *= i` of another integer type: s = S(s * i) in their common type; `h += f` of a
            # half and a float: h = half(float(h) + f), one rounding to half
            others = [x for x in INTEGERS if x != e] if e.is_int else [x for x in INTEGERS + FLOATS if x != e and MIXABLE(x, e)]
            value = self.ex.expr(self.rng.choice(others), self.expr_depth())
        elif isinstance(target_ty, Vec) and self.chance(0.3):
            value = self.ex.expr(e, self.expr_depth())  # v.xz *= s: a scalar of the element type
        else:
            value = self.ex.expr(target_ty, self.expr_depth())
        return [t.Assign(name=v.name, value=value, op=op, comps=comps, letters="xyzw",
                         element_syntax=element_syntax, index=index)]

    def increment(self, target: t.Assign) -> t.Assign:
        """x++, --v.y, a[i]++: x += 1 in x's promoted type, converted back (a short wraps)."""
        target.op, target.value, target.prefix = self.rng.choice(["++", "--"]), t.Lit(ty=INT, value=1), self.chance(0.5)
        return target

    def assign_through(self, v: Var) -> list:
        e = v.ty.elem
        if self.chance(0.1):
            return [self.increment(t.Assign(name=v.name, index=self.element_index(v.ty.n)))]
        ops = INT_COMPOUND[:3] + INT_COMPOUND[5:8] if e.is_int else FLOAT_COMPOUND[:3]
        op = "=" if self.chance(0.5) else self.rng.choice(ops)
        return [t.Assign(name=v.name, value=self.ex.expr(e, self.expr_depth()), op=op,
                         index=self.element_index(v.ty.n))]

    def assign_member(self, v: Var) -> list:
        name, ty, _ = self.rng.choice(v.ty.fields)
        e = elem(ty)
        if isinstance(ty, Scalar) and not e.is_bool and self.chance(0.1):
            return [self.increment(t.Assign(name=v.name, member=name))]
        ops = ["="] if e.is_bool else (["+=", "-=", "*=", "^=", "|="] if e.is_int else ["+=", "-=", "*="])
        op = "=" if self.chance(0.5) else self.rng.choice(ops)
        return [t.Assign(name=v.name, value=self.ex.expr(ty, self.expr_depth()), op=op, member=name)]

    def store(self, depth: int, in_loop: bool) -> list:
        outs = [b for b in self.prog.buffers if b.role == "out"]
        b = self.rng.choice(outs)
        return [t.Store(buffer=b.name, index=t.Ref(ty=UINT, name="gid"), value=self.stored_value(b.ty))]

    def stored_value(self, ty: Type) -> t.Expr:
        if isinstance(ty, Struct):
            return self.ex.struct_value(ty, 2)
        return self.ex.implicit(ty, self.expr_depth(), splat=False)  # the buffer's element may be packed

    def final_stores(self) -> list:
        return [t.Store(buffer=b.name, index=t.Ref(ty=UINT, name="gid"), value=self.stored_value(b.ty))
                for b in self.prog.buffers if b.role == "out"]

    # Control flow ---------------------------------------------------------------------------
    def uniform_condition(self) -> t.Expr:
        """A condition every thread of a threadgroup evaluates alike."""
        groups = self.prog.threads // self.prog.group
        tgid = t.Ref(ty=UINT, name="tgid")
        k = t.Lit(ty=UINT, value=self.rng.randrange(max(groups, 1)))
        return t.Binary(ty=BOOL, op=self.rng.choice(["==", "!=", "<=", ">"]), a=tgid, b=k)

    def simd_condition(self) -> t.Expr:
        sgid = t.Ref(ty=UINT, name="sgid")
        return t.Binary(ty=BOOL, op=self.rng.choice(["==", "!="]), a=sgid,
                        b=t.Lit(ty=UINT, value=self.rng.randrange(self.prog.group // 32)))

    def with_level(self, level: str, fn):
        saved = self.ctx.level
        self.ctx.level = level
        try:
            return fn()
        finally:
            self.ctx.level = saved

    def if_else(self, depth: int, in_loop: bool) -> list:
        level = self.ctx.level
        r = self.rng.random()
        if level == "group" and r < 0.3:
            cond, inner = self.uniform_condition(), "group"
        elif level in ("group", "simd") and r < 0.45 and "simd" in self.features:
            cond, inner = self.simd_condition(), "simd"
        else:
            cond, inner = self.ex.expr(BOOL, self.expr_depth()), "thread"
        count = self.rng.randint(1, 3)
        then = self.with_level(inner, lambda: self.block(count, depth - 1, in_loop))
        orelse = []
        if self.chance(0.4):
            orelse = self.with_level(inner, lambda: self.block(self.rng.randint(1, 2), depth - 1, in_loop))
        return [t.If(cond=cond, then=then, orelse=orelse)]

    def loop(self, depth: int, in_loop: bool) -> list:
        var_ty = self.rng.choice([INT, UINT])
        var = self.ctx.fresh("i")
        start = self.rng.randint(0, 2)
        uniform = self.ctx.level != "thread" and self.chance(0.5)
        if uniform:
            end = t.Lit(ty=var_ty, value=start + self.rng.randint(1, 4))
            level = self.ctx.level
        else:
            bound = self.ex.divergent(var_ty, 2)  # evaluated again by the threads still looping
            end = t.Binary(ty=var_ty, op="&", a=bound, b=t.Lit(ty=var_ty, value=self.rng.choice([3, 7])))
            level = "thread"
        step = self.rng.choice([1, 1, 2])
        # a while loop steps at the end of its body: a `continue` would skip the step
        style = "while" if self.chance(0.25) else "for"
        self.ctx.scopes.append([Var(var, var_ty, mutable=False)])
        self.loop_depth += 1
        body = self.with_level(level, lambda: self.block(self.rng.randint(1, 4), depth - 1,
                                                         not uniform and style == "for"))
        self.loop_depth -= 1
        self.ctx.scopes.pop()
        return [t.For(var=var, ty=var_ty, start=t.Lit(ty=var_ty, value=start), end=end, step=step, body=body,
                      style=style)]

    def switch(self, depth: int, in_loop: bool) -> list:
        """A switch over a small integer; cases with several labels, some falling through.
        Its bodies hold no break or continue of their own (they would end the switch)."""
        ty = self.rng.choice([INT, UINT])
        span = self.rng.choice([4, 8])
        value = t.Binary(ty=ty, op="&", a=self.ex.expr(ty, 2), b=t.Lit(ty=ty, value=span - 1))
        labels = list(range(span))
        self.rng.shuffle(labels)
        cases = []
        while labels and len(cases) < 3:
            take = labels[:self.rng.randint(1, 2)]
            labels = labels[len(take):]
            body = self.with_level("thread", lambda: self.block(self.rng.randint(1, 2), depth - 1, False))
            cases.append(t.Case(labels=sorted(take), body=body, falls=self.chance(0.3)))
        default = self.with_level("thread", lambda: self.block(self.rng.randint(0, 2), depth - 1, False))
        return [t.Switch(value=value, cases=cases, default=default)]

    def break_continue(self, depth: int, in_loop: bool) -> list:
        jump = t.Break() if self.chance(0.5) else t.Continue()
        return [t.If(cond=self.ex.expr(BOOL, 2), then=[jump])]

    # Atomics ---------------------------------------------------------------------------------
    def atomic_value(self, ty: Scalar) -> t.Expr:
        return self.ex.expr(ty, 2)

    def device_atomic(self, depth: int, in_loop: bool) -> list:
        accs = [b for b in self.prog.buffers if b.role == "atomic"]
        b = self.rng.choice(accs)
        ty = elem(b.ty)
        op = self.rng.choice(b.atomic_ops)
        index = self.ex.index_expr(b.length)
        return [t.Atomic(target=b.name, index=index, op=op, value=self.atomic_value(ty))]

    def shared_atomics(self, depth: int, in_loop: bool) -> list:
        ty = self.rng.choice([INT, UINT] + ([FLOATS[2]] if self.chance(0.2) else []))
        cells = self.rng.choice([1, 2, 4])
        ops = ("add",) if ty.is_float else self.rng.choice(ATOMIC_INT_FAMILIES)
        arr = t.SharedArray(name=f"ta{len(self.prog.shared)}", ty=ty, length=cells, atomic=True, atomic_ops=ops)
        self.prog.shared.append(arr)
        lid = t.Ref(ty=UINT, name="lid")
        init_value = t.Lit(ty=ty, value=random_value(self.rng, ty) if ty.is_int else float(self.rng.randint(-8, 8)))
        op = self.rng.choice(ops)
        idx = t.Binary(ty=UINT, op="%", a=self.ex.index_expr(self.prog.group), b=t.Lit(ty=UINT, value=cells))
        update = t.Atomic(target=arr.name, index=idx, op=op, value=self.atomic_value(ty), shared=True)
        if self.chance(0.4):
            if any(isinstance(e, t.Simd) for e in t.walk_exprs(update.value)):
                # only the threads the condition lets in evaluate the value (seed 3000
                # program 111: a quad_and there was the CPU's divergent-SIMD defect)
                update.value = self.ex.divergent(ty, 2)
            update = t.If(cond=self.ex.expr(BOOL, 2), then=[update])
        name = self.ctx.fresh()
        read_idx = t.Binary(ty=UINT, op="%", a=lid, b=t.Lit(ty=UINT, value=cells))
        self.ctx.declare(Var(name, ty))
        return [
            t.Barrier(),
            t.If(cond=t.Binary(ty=BOOL, op="<", a=lid, b=t.Lit(ty=UINT, value=cells)),
                 then=[t.Atomic(target=arr.name, index=lid, op="store", value=init_value, shared=True)]),
            t.Barrier(),
            update,
            t.Barrier(),
            t.AtomicRead(name=name, ty=ty, target=arr.name, index=read_idx, shared=True),
        ]

    # Threadgroup memory ------------------------------------------------------------------
    def shared_array(self, ty: Type) -> t.SharedArray:
        for a in self.prog.shared:
            if a.ty == ty and not a.atomic:
                return a
        arr = t.SharedArray(name=f"sh{len(self.prog.shared)}", ty=ty, length=self.prog.group,
                            as_param=self.chance(0.3))
        self.prog.shared.append(arr)
        return arr

    def permutation(self, index: t.Expr) -> t.Expr:
        """A permutation of [0, group) applied to index (the group size is a power of two)."""
        g = self.prog.group
        r = self.rng.random()
        size = t.Lit(ty=UINT, value=g)
        if r < 0.3:
            return t.Binary(ty=UINT, op="%", a=t.Binary(ty=UINT, op="+", a=index, b=t.Lit(ty=UINT, value=self.rng.randrange(1, g))), b=size)
        if r < 0.5:
            return t.Binary(ty=UINT, op="-", a=t.Lit(ty=UINT, value=g - 1), b=index)
        if r < 0.75:
            return t.Binary(ty=UINT, op="^", a=index, b=t.Lit(ty=UINT, value=self.rng.randrange(1, g)))
        odd = self.rng.randrange(1, 2 * g, 2)
        return t.Binary(ty=UINT, op="%", a=t.Binary(ty=UINT, op="*", a=index, b=t.Lit(ty=UINT, value=odd)), b=size)

    def shared_type(self) -> Type:
        s = self.rng.choice([x for x in self.ctx.palette if not x.is_bool])
        if self.ctx.vectors and self.chance(0.3):
            return Vec(s, self.rng.choice([2, 4]))
        return s

    def shared_pattern(self, depth: int, in_loop: bool) -> list:
        kinds = ["exchange", "tree", "helper", "functor"]
        if "simd" in self.features:
            kinds.append("simd_exchange")
        kind = self.rng.choice(kinds)
        ty = self.shared_type()
        if kind == "tree" and isinstance(ty, Vec):
            ty = ty.elem
        arr = self.shared_array(ty)
        lid = t.Ref(ty=UINT, name="lid")
        value = self.ex.expr(ty, self.expr_depth())
        name = self.ctx.fresh()
        if kind in ("helper", "functor"):
            h = self.collective_helper(ty, kind)
            args = [value, t.Ref(ty=UINT, name="lid")]
            if kind == "functor":
                call = t.CallHelper(ty=ty, name=h.name, args=args, functor_fields=[t.Ref(ty=ty, name=arr.name)])
            else:
                call = t.CallHelper(ty=ty, name=h.name, args=[t.Ref(ty=ty, name=arr.name)] + args)
            self.ctx.declare(Var(name, ty))
            return [t.Decl(name=name, ty=ty, init=call)]
        out = [t.Barrier(), t.SharedStore(array=arr.name, index=lid, value=value)]
        if kind == "exchange":
            out += [t.Barrier(), t.Decl(name=name, ty=ty, init=t.SharedLoad(ty=ty, array=arr.name, index=self.permutation(lid)))]
        elif kind == "simd_exchange":
            partner = t.Binary(ty=UINT, op="^", a=lid, b=t.Lit(ty=UINT, value=self.rng.randrange(1, 32)))
            out += [t.Barrier(kind="simdgroup"), t.Decl(name=name, ty=ty, init=t.SharedLoad(ty=ty, array=arr.name, index=partner))]
        else:
            out += [t.Barrier()] + self.tree_reduction(arr, ty) + [
                t.Decl(name=name, ty=ty, init=t.SharedLoad(ty=ty, array=arr.name, index=t.Lit(ty=UINT, value=0)))]
        self.ctx.declare(Var(name, ty))
        return out

    def combine(self, ty: Scalar, a: t.Expr, b: t.Expr) -> t.Expr:
        if ty.is_int:
            choice = self.rng.choice(["+", "^", "|", "&", "min", "max"])
        else:
            choice = self.rng.choice(["+", "+", "fmax", "fmin", "max"])
        if choice in ("min", "max", "fmin", "fmax"):
            return t.Call(ty=ty, fn=choice, args=[a, b])
        result = promoted(ty) if ty.is_int else ty
        node = t.Binary(ty=result, op=choice, a=a, b=b)
        return node if result == ty else t.Convert(ty=ty, a=node)

    def tree_reduction(self, arr: t.SharedArray, ty: Scalar) -> list:
        s = self.ctx.fresh("s")
        lid = t.Ref(ty=UINT, name="lid")
        sref = t.Ref(ty=UINT, name=s)
        partner = t.Binary(ty=UINT, op="+", a=lid, b=sref)
        combined = self.combine(ty, t.SharedLoad(ty=ty, array=arr.name, index=lid),
                                t.SharedLoad(ty=ty, array=arr.name, index=partner))
        body = [t.If(cond=t.Binary(ty=BOOL, op="<", a=lid, b=sref),
                     then=[t.SharedStore(array=arr.name, index=lid, value=combined)]),
                t.Barrier()]
        return [t.For(var=s, ty=UINT, start=t.Lit(ty=UINT, value=self.prog.group // 2), end=t.Lit(ty=UINT, value=0),
                      step=-1, body=body, compare=">")]

    def collective_helper(self, ty: Type, kind: str) -> t.Helper:
        """`T h(threadgroup T* sh, T v, uint tid)` (or a functor with the array as member):
        an exchange through threadgroup memory and, with SIMD-group functions on, a
        SIMD-group function, so that the barriers are reached only through a call."""
        name = f"{self.prog.name}_c{len(self.prog.helpers)}"
        sh, v, tid = "shared", "value", "tid"
        tid_ref = t.Ref(ty=UINT, name=tid)
        result = t.SharedLoad(ty=ty, array=sh, index=self.permutation(tid_ref))
        ret: t.Expr = result
        if "simd" in self.features and self.chance(0.6):
            fn = self.rng.choice(["simd_sum", "simd_max", "simd_broadcast_first", "simd_shuffle_xor"]
                                 if elem(ty).is_int else ["simd_broadcast_first", "simd_shuffle_xor", "simd_sum"])
            args = [t.Ref(ty=ty, name=v)]
            if fn == "simd_shuffle_xor":
                args.append(t.Convert(ty=USHORT, a=t.Lit(ty=UINT, value=self.rng.randrange(1, 32))))
            simd_value = t.Simd(ty=ty, fn=fn, args=args)
            op = "^" if elem(ty).is_int else "+"
            ret = t.Binary(ty=arithmetic_result(ty, ty), op=op, a=result, b=simd_value)
            if ret.ty != ty:
                ret = t.Convert(ty=ty, a=ret)
        body = [t.Barrier(), t.SharedStore(array=sh, index=tid_ref, value=t.Ref(ty=ty, name=v)), t.Barrier(),
                t.Decl(name="r", ty=ty, init=ret), t.Return(value=t.Ref(ty=ty, name="r"))]
        params = [(v, ty, None), (tid, UINT, None)]
        if kind == "functor":
            h = t.Helper(name=name.replace("_c", "_F"), params=params, ret=ty, body=body, kind="functor",
                         fields=[(sh, ty, "threadgroup")], collective=True)
        else:
            h = t.Helper(name=name, params=[(sh, ty, "threadgroup")] + params, ret=ty, body=body, collective=True)
        self.prog.helpers.append(h)
        return h
