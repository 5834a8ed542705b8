"""Random, well-typed MSL expressions of a requested type.

The generator only writes MSL that Apple's compiler accepts: operands of one type (or
C++'s promotions of small integers), a vector mixed only with a scalar of its own
element type, conversions of vectors by their constructors, as_type between types of
one size. Undefined results for the program's inputs are the repair pass's business.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from . import functions, structs, tree as t, workarounds
from .simd import OVER_ACTIVE_LANES
from .values import float_array
from .types import (BFLOAT, BOOL, FLOAT, Arr, Lambda, Ptr, Struct, FLOATS, HALF, INT, INTEGERS, UINT, ULONG, USHORT, Scalar, Type, Vec,
                    arithmetic_result, elem, promoted, width)

INT_OPS = ["+", "-", "*", "/", "%", "&", "|", "^"]
FLOAT_OPS = ["+", "-", "*", "/"]
COMPARE_OPS = ["==", "!=", "<", "<=", ">", ">="]
SIMD_REDUCTIONS = ["simd_sum", "simd_min", "simd_max", "simd_product", "simd_prefix_inclusive_sum",
                   "simd_prefix_exclusive_sum"]
SIMD_INT_ONLY = ["simd_and", "simd_or", "simd_xor"]
SIMD_MOVES = ["simd_broadcast", "simd_shuffle", "simd_shuffle_xor", "simd_shuffle_up", "simd_shuffle_down",
              "simd_shuffle_rotate_up", "simd_shuffle_rotate_down", "simd_broadcast_first"]


@dataclass
class Var:
    name: str
    ty: Type
    mutable: bool = True


@dataclass
class Context:
    """What an expression may use where it is generated."""

    rng: random.Random
    threads: int
    palette: list  # scalar types the program computes in
    vectors: bool
    inputs: list  # input Buffers
    scopes: list = field(default_factory=lambda: [[]])
    helpers: list = field(default_factory=list)  # Helpers callable here (not collective)
    level: str = "group"  # where control flow is uniform: "group", "simd" or "thread"
    simd: bool = False  # SIMD-group functions may appear in expressions
    divergent_simd: bool = False  # ... also those defined over active lanes, where lanes diverge
    counter: int = 0
    builtins: bool = True  # gid, lid, ... visible (not inside helpers)
    macros: list = field(default_factory=list)  # the program's operator macros [(name, op)]

    def fresh(self, prefix: str = "v") -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def variables(self):
        for scope in self.scopes:
            yield from scope

    def declare(self, var: Var) -> None:
        self.scopes[-1].append(var)


def random_int(rng: random.Random, s: Scalar) -> int:
    r = rng.random()
    if r < 0.35:
        return rng.randint(s.lo, s.hi)
    if r < 0.7:
        return rng.randint(max(s.lo, -9), min(s.hi, 9))
    specials = [0, 1, s.hi, s.lo, s.hi - 1, s.lo + 1, 1 << (s.bits - 2), (1 << (s.bits // 2)) - 1]
    if s.signed:
        specials += [-1, -2]
    return rng.choice([v for v in specials if s.lo <= v <= s.hi])


def random_float(rng: random.Random, s: Scalar, finite: bool = False) -> float:
    r = rng.random()
    if r < 0.35:
        return rng.gauss(0.0, 8.0)
    if r < 0.55:
        return float(rng.randint(-16, 16)) / rng.choice([1, 1, 2, 4, 8])
    if r < 0.85:
        return rng.choice([-1.0, 1.0]) * 10.0 ** rng.uniform(-4, 4 if s == HALF else 8)
    top = 65504.0 if s == HALF else 3.0e38
    specials = [0.0, -0.0, 1.0, -1.0, 0.5, top, -top, 6.1e-5, 1e-7, 2.0 ** 24 + 2.0]
    if not finite:
        specials += [float("inf"), float("-inf")]
    return rng.choice(specials)


def random_value(rng: random.Random, s: Scalar):
    """A literal's value, exactly representable in s."""
    if s.is_bool:
        return rng.random() < 0.5
    if s.is_int:
        return random_int(rng, s)
    return float(float_array([random_float(rng, s)], s)[0])


def MIXABLE(a: Scalar, b: Scalar) -> bool:
    """Whether a and b convert to each other implicitly, and mix in arithmetic: any two scalars
    but half with bfloat (`h + b` has no operator on the CPU backend; left out until a Mac says
    what Apple's compiler makes of it)."""
    return {a, b} != {HALF, BFLOAT}


# The types whose every value a type holds: a braced initialiser converts them (C++ refuses
# the others there, narrowing), `S{s}` with s a short for an int member.
WIDENING = {
    "short": ("char", "uchar", "bool"), "ushort": ("uchar", "bool"),
    "int": ("char", "uchar", "short", "ushort", "bool"), "uint": ("uchar", "ushort", "bool"),
    "long": ("char", "uchar", "short", "ushort", "int", "uint", "bool"),
    "ulong": ("uchar", "ushort", "uint", "bool"), "float": ("half", "bfloat"),
}


def swizzle_letters(rng: random.Random) -> str:
    return "xyzw" if rng.random() < 0.8 else "rgba"


class ExprGen:
    def __init__(self, ctx: Context):
        self.ctx = ctx
        self.rng = ctx.rng

    def chance(self, p: float) -> bool:
        return self.rng.random() < p

    # Leaves ------------------------------------------------------------------------------
    def literal(self, ty: Type) -> t.Expr:
        return t.Lit(ty=ty, value=random_value(self.rng, elem(ty)))



    def index_expr(self, length: int) -> t.Expr:
        """A uint index in [0, length) that differs between threads."""
        ctx = self.ctx
        if length == 1:
            return t.Lit(ty=UINT, value=0)
        n = t.Lit(ty=UINT, value=length)
        gid = t.Ref(ty=UINT, name="gid") if ctx.builtins else t.Lit(ty=UINT, value=self.rng.randrange(length))
        choice = self.rng.random()
        if choice < 0.4 or not ctx.builtins:
            return gid if length == ctx.threads or not ctx.builtins else t.Binary(ty=UINT, op="%", a=gid, b=n)
        if choice < 0.6:
            k = t.Lit(ty=UINT, value=self.rng.randrange(1, length))
            return t.Binary(ty=UINT, op="%", a=t.Binary(ty=UINT, op="+", a=gid, b=k), b=n)
        if choice < 0.75:
            return t.Binary(ty=UINT, op="-", a=t.Lit(ty=UINT, value=length - 1), b=t.Binary(ty=UINT, op="%", a=gid, b=n))
        if choice < 0.85:
            return t.Binary(ty=UINT, op="%", a=t.Binary(ty=UINT, op="^", a=gid, b=t.Lit(ty=UINT, value=self.rng.randrange(1, 8))), b=n)
        # data-dependent: some uint of the program masked into range (length is a power of two)
        inner = self.expr(UINT, 1)
        return t.Binary(ty=UINT, op="&", a=inner, b=t.Lit(ty=UINT, value=length - 1))

    def leaf(self, ty: Type, depth: int = 0) -> t.Expr:
        ctx = self.ctx
        members = self.struct_members(ty)
        if members and self.chance(0.35):
            return self.rng.choice(members)()
        pointers = [v for v in ctx.variables() if isinstance(v.ty, Ptr) and v.ty.elem == ty]
        if pointers and self.chance(0.3):
            p = self.rng.choice(pointers)
            if p.ty.n == 1 and self.chance(0.5):
                return t.Deref(ty=ty, pointer=p.name, star=True)
            return t.Deref(ty=ty, pointer=p.name, index=self.array_index(p.ty.n))
        arrays = [v for v in ctx.variables() if isinstance(v.ty, Arr) and v.ty.elem == ty]
        if arrays and self.chance(0.3):
            a = self.rng.choice(arrays)
            return t.Index(ty=ty, a=t.Ref(ty=a.ty, name=a.name), index=self.array_index(a.ty.n))
        options = [v for v in ctx.variables() if v.ty == ty]
        loads = [b for b in ctx.inputs if b.ty == ty] if ctx.builtins else []
        r = self.rng.random()
        if options and r < 0.45:
            v = self.rng.choice(options)
            return t.Ref(ty=ty, name=v.name)
        if loads and r < 0.8:
            b = self.rng.choice(loads)
            return t.Load(ty=ty, buffer=b.name, index=self.index_expr(b.length))
        if ty == UINT and ctx.builtins and r < 0.9:
            return t.Ref(ty=UINT, name=self.rng.choice(["gid", "lid", "tgid", "lane", "sgid"]))
        if isinstance(ty, Vec) and r < 0.9:
            return self.construct(ty, 0)
        return self.literal(ty)

    # Composite expressions ---------------------------------------------------------------
    def expr(self, ty: Type, depth: int) -> t.Expr:
        if depth <= 0 or self.chance(0.15):
            return self.leaf(ty)
        e = elem(ty)
        makers = [(self.leaf, 1.0), (self.conversion, 1.2), (self.ternary, 0.6)]
        if e.is_bool:
            makers += [(self.comparison, 3.0), (self.logical, 1.5), (self.relational, 0.8)]
            if not isinstance(ty, Vec):
                makers += [(self.reduce_bool, 0.5)]
        elif e.is_int:
            makers += [(self.arithmetic, 4.0), (self.promoted_arithmetic, 1.5), (self.unary, 1.0),
                       (self.shift, 1.5), (self.call, 2.0), (self.as_type, 0.7), (self.select, 0.5)]
        else:
            makers += [(self.arithmetic, 4.0), (self.unary, 0.7), (self.call, 2.0), (self.as_type, 0.5),
                       (self.select, 0.5)]
            if not isinstance(ty, Vec):
                makers += [(self.mixed_arithmetic, 1.0)]
        if isinstance(ty, Vec):
            makers += [(self.construct, 1.0), (self.swizzle, 1.0)]
        elif self.ctx.vectors:
            makers += [(self.swizzle, 0.8), (self.element, 0.5)]
        if any(h.ret == ty for h in self.ctx.helpers):
            makers += [(self.helper_call, 1.5)]
        if any(isinstance(v.ty, Lambda) and v.ty.ret == ty for v in self.ctx.variables()):
            makers += [(self.lambda_call, 1.5)]
        uniform = self.ctx.level in ("group", "simd")
        if self.ctx.simd and (uniform or self.ctx.divergent_simd) and not e.is_bool:
            makers += [(self.simd, 2.0)]
        if self.ctx.simd and (uniform or self.ctx.divergent_simd) and ty == BOOL:
            makers += [(self.simd_vote, 0.7)]
        total = sum(w for _, w in makers)
        pick = self.rng.uniform(0, total)
        for maker, w in makers:
            pick -= w
            if pick <= 0:
                return maker(ty, depth - 1)
        return self.leaf(ty)

    def arithmetic(self, ty: Type, depth: int) -> t.Expr:
        e = elem(ty)
        op = self.rng.choice(INT_OPS if e.is_int else FLOAT_OPS)
        a = self.expr(ty, depth)
        if isinstance(ty, Vec) and self.chance(0.25):
            b = self.expr(e, depth)  # vector op scalar of its element type
            if self.chance(0.5):
                a, b = b, a
        else:
            b = self.expr(ty, depth)
        result = arithmetic_result(a.ty, b.ty)
        node = t.Binary(ty=result, op=op, a=a, b=b)
        macros = [name for name, mop in self.ctx.macros if mop == op]
        if macros and self.chance(0.5):
            node.macro = self.rng.choice(macros)
        return node if result == ty else t.Convert(ty=ty, a=node)

    def mixed_arithmetic(self, ty: Type, depth: int) -> t.Expr:
        """A float type with another scalar type: C++'s usual conversions (`half * int` is a
        half, `bfloat + float` a float, `half - long` a half), converted back to ty."""
        other = self.rng.choice([s for s in INTEGERS + FLOATS if s != ty and MIXABLE(s, ty)])
        a, b = self.expr(ty, depth), self.expr(other, depth)
        if self.chance(0.5):
            a, b = b, a
        result = arithmetic_result(a.ty, b.ty)
        node = t.Binary(ty=result, op=self.rng.choice(FLOAT_OPS), a=a, b=b)
        return node if result == ty else t.Convert(ty=ty, a=node)

    def promoted_arithmetic(self, ty: Type, depth: int) -> t.Expr:
        """Operands of other integer types: C++'s promotions and usual conversions, and
        comparisons of mixed signedness (`int(-1) < 1u` is false, `short(-1) < ushort(1)` true)."""
        if isinstance(ty, Vec):
            return self.arithmetic(ty, depth)
        a_ty = self.rng.choice([s for s in INTEGERS if s in self.ctx.palette] or [INT])
        b_ty = self.rng.choice(INTEGERS)
        op = self.rng.choice(INT_OPS + COMPARE_OPS)
        a, b = self.expr(a_ty, depth), self.expr(b_ty, depth)
        result = BOOL if op in COMPARE_OPS else arithmetic_result(a_ty, b_ty)
        node = t.Binary(ty=result, op=op, a=a, b=b)
        return node if result == ty else t.Convert(ty=ty, a=node)

    def implicit(self, ty: Type, depth: int, splat: bool = True) -> t.Expr:
        """A value for a place where C++ converts implicitly (a declaration's initialiser, `=`, a
        store, a helper's or lambda's argument, a return): one time in four a scalar of another
        type, most often a small integer's arithmetic promoted to int and narrowed back (`short
        v = x * short(-1);`); for a vector sometimes a scalar of any type, broadcast (splat: off
        where the place may be a packed vector)."""
        if isinstance(ty, Vec) and not ty.elem.is_bool and splat and self.chance(0.15):
            # a scalar broadcast to every component, converted to the element type (`short2 v = i;`)
            s = self.rng.choice([x for x in INTEGERS + FLOATS if MIXABLE(x, ty.elem)])
            return t.Convert(ty=ty, a=self.expr(s, depth), style="implicit")
        if not isinstance(ty, Scalar) or not self.chance(0.25):
            return self.expr(ty, depth)
        if ty.is_int and ty.bits < 32 and self.chance(0.5):
            op = self.rng.choice(INT_OPS + ["<<", ">>"])
            a = self.expr(ty, depth - 1)
            if op in ("<<", ">>"):
                b = t.Binary(ty=INT, op="&", a=self.expr(INT, depth - 1), b=t.Lit(ty=INT, value=31))
            elif self.chance(0.3):
                b = t.Lit(ty=ty, value=-1 if ty.signed else ty.hi)  # x * short(-1): a negation once folded
            else:
                b = self.expr(ty, depth - 1)
            return t.Convert(ty=ty, a=t.Binary(ty=INT, op=op, a=a, b=b), style="implicit")
        sources = [s for s in list(self.ctx.palette) + list(INTEGERS) + list(FLOATS) + [BOOL]
                   if s != ty and MIXABLE(s, ty)]
        s = self.rng.choice(sources)
        return t.Convert(ty=ty, a=self.expr(s, depth), style="implicit")

    def implicit_scalar(self, e: Scalar, depth: int) -> t.Expr:
        s = self.rng.choice([x for x in INTEGERS + FLOATS if x != e and MIXABLE(x, e)])
        return t.Convert(ty=e, a=self.expr(s, depth), style="implicit")

    def widened(self, ty: Type, depth: int) -> t.Expr:
        """A braced member's value (`S{a, b}`, where C++ refuses narrowing): one time in four a
        scalar of a type ty holds every value of (`short` for an `int`, `half` for a `float`)."""
        narrower = WIDENING.get(ty.name, ()) if isinstance(ty, Scalar) else ()
        if not narrower or not self.chance(0.25):
            return self.expr(ty, depth)
        name = self.rng.choice(narrower)
        s = next(x for x in INTEGERS + FLOATS + (BOOL,) if x.name == name)
        return t.Convert(ty=ty, a=self.expr(s, depth), style="implicit")

    def unary(self, ty: Type, depth: int) -> t.Expr:
        e = elem(ty)
        op = self.rng.choice(["-", "~", "+"] if e.is_int else ["-", "+"])
        a = self.expr(ty, depth)
        result = ty if isinstance(ty, Vec) or e.is_float else promoted(e)
        node = t.Unary(ty=result, op=op, a=a)
        return node if result == ty else t.Convert(ty=ty, a=node)

    def shift(self, ty: Type, depth: int) -> t.Expr:
        e = elem(ty)
        a = self.expr(ty, depth)
        left = ty if isinstance(ty, Vec) else promoted(e)
        bits = elem(left).bits
        if self.chance(0.4):
            count = t.Lit(ty=UINT, value=self.rng.randrange(bits))
        else:
            count_ty = self.rng.choice([INT, UINT])
            count = t.Binary(ty=count_ty, op="&", a=self.expr(count_ty, depth), b=t.Lit(ty=count_ty, value=bits - 1))
        if isinstance(ty, Vec) and self.chance(0.5):
            count = t.Convert(ty=Vec(e, ty.n), a=count)  # vector << vector
        node = t.Binary(ty=left, op=self.rng.choice(["<<", ">>"]), a=a, b=count)
        return node if left == ty else t.Convert(ty=ty, a=node)

    def comparison(self, ty: Type, depth: int) -> t.Expr:
        n = width(ty)
        s = self.rng.choice(self.ctx.palette)
        operand = Vec(s, n) if n > 1 else s
        other = operand
        if n == 1 and not s.is_bool and self.chance(0.25):  # mixed types: compared in their common type
            other = self.rng.choice([o for o in INTEGERS + FLOATS if MIXABLE(o, s)])
        node = t.Binary(ty=ty, op=self.rng.choice(COMPARE_OPS), a=self.expr(operand, depth), b=self.expr(other, depth))
        return node

    def logical(self, ty: Type, depth: int) -> t.Expr:
        if isinstance(ty, Vec):
            return self.comparison(ty, depth)
        if self.chance(0.3):
            return t.Unary(ty=BOOL, op="!", a=self.expr(BOOL, depth))
        return t.Binary(ty=BOOL, op=self.rng.choice(["&&", "||"]), a=self.expr(BOOL, depth),
                        b=self.divergent(BOOL, depth))

    def relational(self, ty: Type, depth: int) -> t.Expr:
        s = self.rng.choice([f for f in FLOATS if f in self.ctx.palette] or [FLOAT])
        arg_ty = Vec(s, ty.n) if isinstance(ty, Vec) else s
        return t.Call(ty=ty, fn=self.rng.choice(list(functions.RELATIONAL)), args=[self.expr(arg_ty, depth)])

    def reduce_bool(self, ty: Type, depth: int) -> t.Expr:
        n = self.rng.choice([2, 3, 4])
        return t.Call(ty=BOOL, fn=self.rng.choice(["all", "any"]), args=[self.expr(Vec(BOOL, n), depth)])

    def divergent(self, ty: Type, depth: int) -> t.Expr:
        """An expression only some threads evaluate: no SIMD-group functions in it."""
        saved = self.ctx.level
        self.ctx.level = "thread"
        try:
            return self.expr(ty, depth)
        finally:
            self.ctx.level = saved

    def ternary(self, ty: Type, depth: int) -> t.Expr:
        if isinstance(ty, Scalar) and not ty.is_bool and self.chance(0.25):
            # arms of two types: C++'s usual conversions give the result's (`c ? h : 2` a half,
            # `c ? i : u` a uint, `c ? b : f` a float), converted back to ty
            other = self.rng.choice([s for s in INTEGERS + FLOATS if s != ty and MIXABLE(s, ty)])
            arms = [self.divergent(ty, depth), self.divergent(other, depth)]
            self.rng.shuffle(arms)
            common = arithmetic_result(arms[0].ty, arms[1].ty)
            node = t.Cond(ty=common, c=self.expr(BOOL, depth), a=arms[0], b=arms[1])
            return node if common == ty else t.Convert(ty=ty, a=node)
        return t.Cond(ty=ty, c=self.expr(BOOL, depth), a=self.unpacked(self.divergent(ty, depth)),
                      b=self.unpacked(self.divergent(ty, depth)))

    def unpacked(self, e: t.Expr) -> t.Expr:
        """A packed vector read from a buffer, converted to its vector type: `c ? p : v` with p
        a packed_float3 and v a float3 converts either way, which C++ calls ambiguous. So does
        a function of one that returns its argument's type (`simd_max(quad_broadcast_first(p))`:
        seed 9701 on the H200)."""
        if not workarounds.active("packed-conditional"):
            return e
        if isinstance(e, (t.Simd, t.Call)) and any(self.packed_result(a) for a in e.args):
            return t.Convert(ty=e.ty, a=e)
        return self.as_vector(e)

    def packed_result(self, e: t.Expr) -> bool:
        """Whether e may have a packed vector's type: a packed buffer's element, or a function's
        result computed from one."""
        if isinstance(e, t.Load):
            return self.as_vector(e) is not e
        return isinstance(e, (t.Simd, t.Call)) and any(self.packed_result(a) for a in e.args)

    def as_vector(self, e: t.Expr) -> t.Expr:
        """A packed 3-vector read from a buffer, converted to its vector type; anything else as it is."""
        if isinstance(e, t.Load) and e.buffer in {b.name for b in self.ctx.inputs if b.packed}:
            return t.Convert(ty=e.ty, a=e)
        return e

    def select(self, ty: Type, depth: int) -> t.Expr:
        c_ty = Vec(BOOL, ty.n) if isinstance(ty, Vec) else BOOL
        return t.Call(ty=ty, fn="select", args=[self.expr(ty, depth), self.expr(ty, depth), self.expr(c_ty, depth)])

    def conversion(self, ty: Type, depth: int) -> t.Expr:
        e = elem(ty)
        sources = [s for s in self.ctx.palette if s != e] or [INT]
        if self.chance(0.3):
            sources = [s for s in INTEGERS + FLOATS + (BOOL,) if s != e]
        s = self.rng.choice(sources)
        src = Vec(s, ty.n) if isinstance(ty, Vec) else s
        style = "call" if isinstance(ty, Vec) else self.rng.choice(["call", "call", "static", "cast"])
        return t.Convert(ty=ty, a=self.expr(src, depth), style=style)

    def as_type(self, ty: Type, depth: int) -> t.Expr:
        size = elem(ty).size * width(ty)
        options = []
        for s in INTEGERS + FLOATS:
            for n in (1, 2, 4) if width(ty) != 3 else (3,):
                if s.size * n == size and (width(ty) != 3 or s.size == elem(ty).size):
                    cand = Vec(s, n) if n > 1 else s
                    if cand != ty:
                        options.append(cand)
        if not options:
            return self.conversion(ty, depth)
        source = self.expr(self.rng.choice(options), depth)
        # A packed 3-vector is smaller than the vector (packed_uchar3: 3 bytes, uchar3: 4), so
        # as_type of a packed buffer element reads it as its vector type first, as Metal needs.
        return t.AsType(ty=ty, a=self.as_vector(source))

    def call(self, ty: Type, depth: int) -> t.Expr:
        e = elem(ty)
        table = functions.INT_FUNCTIONS if e.is_int else functions.FLOAT_FUNCTIONS
        names = list(table)
        fn = self.rng.choice(names)
        arity = table[fn]
        if fn == "absdiff":
            # its result is the unsigned type: convert back when needed
            args = [self.expr(ty, depth), self.expr(ty, depth)]
            result = functions.result_type(fn, [a.ty for a in args])
            node = t.Call(ty=result, fn=fn, args=args)
            return node if result == ty else t.Convert(ty=ty, a=node)
        if fn in ("extract_bits", "insert_bits"):
            bits = e.bits
            offset = self.rng.randrange(bits)
            count = self.rng.randrange(bits - offset + 1)
            values = [self.expr(ty, depth) for _ in range(arity - 2)]
            return t.Call(ty=ty, fn=fn, args=values + [t.Lit(ty=UINT, value=offset), t.Lit(ty=UINT, value=count)])
        if fn == "clamp":
            lo, hi = sorted(random_value(self.rng, e) for _ in range(2))
            if e.is_float and (lo != lo or hi != hi):
                lo, hi = -1.0, 1.0
            return t.Call(ty=ty, fn=fn, args=[self.expr(ty, depth), t.Lit(ty=ty, value=lo), t.Lit(ty=ty, value=hi)])
        return t.Call(ty=ty, fn=fn, args=[self.expr(ty, depth) for _ in range(arity)])

    def construct(self, ty: Type, depth: int) -> t.Expr:
        e, n = elem(ty), ty.n
        if self.chance(0.25):
            return t.Construct(ty=ty, parts=[self.expr(e, depth)])
        parts, left = [], n
        while left:
            k = self.rng.randint(1, left) if self.ctx.vectors and left > 1 and self.chance(0.4) else 1
            k = 1 if k == left == n else k
            if k == 1 and not e.is_bool and self.chance(0.2):
                # float4(x, i, 1, h): a scalar of another type converts to the element type
                parts.append(self.implicit_scalar(e, depth))
            else:
                parts.append(self.expr(Vec(e, k) if k > 1 else e, depth))
            left -= k
        return t.Construct(ty=ty, parts=parts)

    def swizzle(self, ty: Type, depth: int) -> t.Expr:
        e = elem(ty)
        n_src = self.rng.choice([2, 3, 4])
        src = self.expr(Vec(e, n_src), depth)
        count = width(ty)
        comps = tuple(self.rng.randrange(n_src) for _ in range(count))
        node = t.Swizzle(ty=ty, a=src, comps=comps, letters=swizzle_letters(self.rng))
        return node

    def element(self, ty: Type, depth: int) -> t.Expr:
        n = self.rng.choice([2, 3, 4])
        src = self.expr(Vec(ty, n), depth)
        if self.chance(0.5):
            index = t.Lit(ty=UINT, value=self.rng.randrange(n))
        else:
            index = t.Binary(ty=UINT, op="%", a=self.expr(UINT, depth), b=t.Lit(ty=UINT, value=n))
        return t.Index(ty=ty, a=src, index=index)

    def struct_members(self, ty: Type) -> list:
        """Makers of member reads of type ty: of struct variables and struct buffer elements."""
        makers = []
        for v in self.ctx.variables():
            if isinstance(v.ty, Struct):
                for name, fty, _ in v.ty.fields:
                    if fty == ty:
                        makers.append(lambda v=v, name=name: structs.member(t.Ref(ty=v.ty, name=v.name), v.ty, name))
        if self.ctx.builtins:
            for b in self.ctx.inputs:
                if isinstance(b.ty, Struct):
                    for name, fty, _ in b.ty.fields:
                        if fty == ty:
                            makers.append(lambda b=b, name=name: structs.member(
                                t.Load(ty=b.ty, buffer=b.name, index=self.index_expr(b.length)), b.ty, name))
        return makers

    def struct_value(self, s: Struct, depth: int) -> t.Expr:
        """A whole struct: built from its members, a buffer element or a variable."""
        options = [v for v in self.ctx.variables() if v.ty == s]
        buffers = [b for b in self.ctx.inputs if b.ty == s] if self.ctx.builtins else []
        r = self.rng.random()
        if options and r < 0.4:
            v = self.rng.choice(options)
            return t.Ref(ty=s, name=v.name)
        if buffers and r < 0.7:
            b = self.rng.choice(buffers)
            return t.Load(ty=s, buffer=b.name, index=self.index_expr(b.length))
        return t.Construct(ty=s, parts=[self.widened(ty, depth) for _, ty, _ in s.fields])

    def array_index(self, n: int) -> t.Expr:
        if self.chance(0.3):
            return t.Lit(ty=UINT, value=self.rng.randrange(n))
        inner = self.expr(UINT, 1)
        if n & (n - 1) == 0:
            return t.Binary(ty=UINT, op="&", a=inner, b=t.Lit(ty=UINT, value=n - 1))
        return t.Binary(ty=UINT, op="%", a=inner, b=t.Lit(ty=UINT, value=n))

    def lambda_call(self, ty: Type, depth: int) -> t.Expr:
        v = self.rng.choice([v for v in self.ctx.variables() if isinstance(v.ty, Lambda) and v.ty.ret == ty])
        return t.CallLambda(ty=ty, name=v.name, args=[self.implicit(p, depth) for p in v.ty.params])

    def helper_call(self, ty: Type, depth: int) -> t.Expr:
        h = self.rng.choice([h for h in self.ctx.helpers if h.ret == ty])
        explicit = h.params[0][1] if h.kind == "template" and self.chance(0.5) else None
        # Arguments convert implicitly unless they deduce a template's type; a functor's members
        # are braced (where narrowing is an error).
        converts = h.kind != "template" or explicit is not None
        args = [self.implicit(p_ty, depth) if converts and not space else self.expr(p_ty, depth)
                for _, p_ty, space in h.params]
        fields = [self.widened(f_ty, depth) for _, f_ty, _ in h.fields] if h.kind == "functor" else None
        return t.CallHelper(ty=ty, name=h.name, args=args, template_arg=explicit, functor_fields=fields)

    def simd(self, ty: Type, depth: int) -> t.Expr:
        e = elem(ty)
        names = SIMD_REDUCTIONS + SIMD_MOVES + (SIMD_INT_ONLY if e.is_int else [])
        if e.is_float:
            names.remove("simd_product")  # only in its exact form below
        if self.ctx.level == "thread":  # only some lanes of the group call it
            names = [n for n in names if n in OVER_ACTIVE_LANES]
        fn = self.rng.choice(names)
        width = 32
        if fn not in ("simd_shuffle_rotate_up", "simd_shuffle_rotate_down", "simd_ballot") and self.chance(0.25):
            fn, width = "quad_" + fn[len("simd_"):], 4
        x = self.expr(ty, depth)
        args = [x]
        base = fn.split("_", 1)[1]
        if base == "broadcast":
            args.append(t.Lit(ty=UINT, value=self.rng.randrange(width)))
        elif base == "shuffle":
            args.append(t.Binary(ty=UINT, op="&", a=self.expr(UINT, depth), b=t.Lit(ty=UINT, value=width - 1)))
        elif base == "shuffle_xor":
            args.append(t.Lit(ty=UINT, value=self.rng.randrange(1, width)))
        elif base.startswith("shuffle_"):
            args.append(t.Lit(ty=UINT, value=self.rng.randrange(0, width)))
        args = [args[0]] + [t.Convert(ty=USHORT, a=a) for a in args[1:]]
        return t.Simd(ty=ty, fn=fn, args=args)

    def simd_vote(self, ty: Type, depth: int) -> t.Expr:
        fn = self.rng.choice(["simd_all", "simd_any", "simd_is_first", "simd_ballot", "simd_active_threads_mask"])
        if fn == "simd_is_first":
            return t.Simd(ty=BOOL, fn=fn, args=[])
        if fn in ("simd_ballot", "simd_active_threads_mask"):
            ballot = t.Simd(ty=ULONG, fn=fn, args=[self.expr(BOOL, depth)] if fn == "simd_ballot" else [])
            return t.Binary(ty=BOOL, op="!=", a=t.Binary(ty=ULONG, op="&", a=ballot,
                                                          b=t.Lit(ty=ULONG, value=self.rng.getrandbits(32))),
                            b=t.Lit(ty=ULONG, value=0))
        return t.Simd(ty=BOOL, fn=fn, args=[self.expr(BOOL, depth)])
