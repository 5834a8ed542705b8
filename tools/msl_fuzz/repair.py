"""Rewrites that make a program defined for its inputs.

The model reports each node whose result MSL leaves undefined on some thread; each
rewrite below keeps the node's type and, where it can, its value:
- signed `+ - *`, unary `-` and `<<` that overflow: computed in the unsigned type and
  converted back (`int(uint(a) + uint(b))`), the value two's complement gives;
- `/` and `%` by zero or MIN / -1: the divisor made odd (negative divisors stay), and where
  that is not enough (MIN / -1) positive too;
- a float converted to an integer it does not fit (or a NaN): clamped into range first;
- integer `abs(MIN)`: `T(absdiff(x, 0))`;
- min/max/clamp given NaN or zeros of both signs, fract given a non-finite value: the
  argument clamped to finite values and `+ 0` (which turns -0 into +0);
- SIMD-group and atomic float sums whose result would depend on the order of the lanes:
  the argument rounded to an integer in [-32, 32], which every order adds exactly;
- `as_type` of a NaN to an integer (GPUs need not keep a NaN's payload), and the NaN whose
  sign `copysign` or `signbit` reads (IEEE 754 leaves it open): the NaN replaced by 0.
"""

from __future__ import annotations

import copy

from . import tree as t
from .functions import FINITE_ONLY, NAN_SIGN, ORDERING
from .model import run
from .types import BOOL, Ptr, Scalar, Type, Vec, arithmetic_result, elem, promoted, unsigned_of, with_elem

MAX_ROUNDS = 8


def largest_finite(s: Scalar) -> float:
    return {"half": 65504.0, "bfloat": 3.3895313892515355e38, "float": 3.4028234663852886e38}[s.name]


def float_bound_below(v: int, s: Scalar) -> float:
    """The largest float of type s whose magnitude is at most |v|, with v's sign."""
    a = abs(v)
    digits = s.mantissa + 1
    extra = max(a.bit_length() - digits, 0)
    a = (a >> extra) << extra
    return float(min(a, largest_finite(s))) * (1 if v >= 0 else -1)


def children(node):
    """(attribute, index or None, child) of every expression and statement under node."""
    for name, value in vars(node).items():
        if isinstance(value, (t.Expr, t.Stmt)):
            yield name, None, value
        elif isinstance(value, list):
            for i, item in enumerate(value):
                if isinstance(item, (t.Expr, t.Stmt)):
                    yield name, i, item


def locations(prog: t.Program) -> dict:
    """uid -> (container, key, node): the container is a node (key: its attribute) or a
    list (key: the index), so that `put` can replace the node."""
    out = {}
    stack = []
    for body in [prog.body] + [h.body for h in prog.helpers]:
        stack += [(body, i, s) for i, s in enumerate(body)]
    while stack:
        container, key, node = stack.pop()
        out[node.uid] = (container, key, node)
        for name, i, child in children(node):
            stack.append((getattr(node, name), i, child) if i is not None else (node, name, child))
    return out


def put(container, key, new) -> None:
    if isinstance(container, list):
        container[key] = new
    else:
        setattr(container, key, new)


def lit(ty: Type, value) -> t.Lit:
    return t.Lit(ty=ty, value=value)


def unsigned_type(ty: Type) -> Type:
    return with_elem(ty, unsigned_of(elem(ty)))


def wrapped(node: t.Expr) -> t.Expr:
    """The node computed in the unsigned type and converted back (two's complement)."""
    u = unsigned_type(node.ty)
    if isinstance(node, t.Unary):
        return t.Convert(ty=node.ty, a=t.Unary(ty=u, op=node.op, a=t.Convert(ty=u, a=node.a)))
    count = node.b
    if node.op not in ("<<", ">>") or isinstance(count.ty, Vec):
        count = t.Convert(ty=u, a=count)
    return t.Convert(ty=node.ty, a=t.Binary(ty=u, op=node.op, a=t.Convert(ty=u, a=node.a), b=count))


def arith(ty: Type) -> Type:
    return ty if isinstance(ty, Vec) else promoted(elem(ty))


def is_odd_divisor(b: t.Expr) -> bool:
    """Whether b is a divisor made odd by safe_divisor already."""
    if isinstance(b, t.Convert):
        b = b.a
    return isinstance(b, t.Binary) and b.op == "|" and isinstance(b.b, t.Lit) and b.b.value == 1


def safe_divisor(b: t.Expr) -> t.Expr:
    """b made odd (never 0; negative divisors stay, C++'s quotient truncating toward zero); made
    positive as well where it was odd already, for `MIN / -1`."""
    s = elem(b.ty)
    if s.signed and is_odd_divisor(b):
        top = lit(s, s.hi) if isinstance(b.ty, Vec) else lit(promoted(s), s.hi)
        positive = t.Binary(ty=arith(b.ty), op="&", a=b, b=top)
        return positive if positive.ty == b.ty else t.Convert(ty=b.ty, a=positive)
    one = lit(s if isinstance(b.ty, Vec) else s, 1)
    odd = t.Binary(ty=arith(b.ty), op="|", a=b, b=one)
    return odd if odd.ty == b.ty else t.Convert(ty=b.ty, a=odd)


def clamped_float(x: t.Expr, target: Scalar | None = None) -> t.Expr:
    """x clamped to finite values (into target's range when x becomes that integer)."""
    s = elem(x.ty)
    if target is None:
        lo, hi = -largest_finite(s), largest_finite(s)
    else:
        lo = float_bound_below(target.lo, s) if target.signed else 0.0
        hi = float_bound_below(target.hi, s)
    return t.Call(ty=x.ty, fn="clamp", args=[x, lit(x.ty, lo), lit(x.ty, hi)])


def plus_zero(x: t.Expr) -> t.Expr:
    return t.Binary(ty=x.ty, op="+", a=x, b=lit(x.ty, 0.0))


def exactly_summable(x: t.Expr) -> t.Expr:
    """An integer in [-32, 32], never -0: every order of adding such values gives one sum."""
    bounded = t.Call(ty=x.ty, fn="clamp", args=[x, lit(x.ty, -32.0), lit(x.ty, 32.0)])
    return plus_zero(t.Call(ty=x.ty, fn="rint", args=[bounded]))


def without_nan(x: t.Expr) -> t.Expr:
    """x with each NaN replaced by 0: `select(x, 0, isnan(x))`."""
    nan = t.Call(ty=with_elem(x.ty, BOOL), fn="isnan", args=[copy.deepcopy(x)])
    return t.Call(ty=x.ty, fn="select", args=[x, lit(x.ty, 0.0), nan])


def repaired(node):
    """The replacement of an undefined expression, or None if it has no rewrite."""
    if isinstance(node, t.Unary) and node.op == "-":
        return wrapped(node)
    if isinstance(node, t.Binary):
        if node.op in ("/", "%"):
            return t.Binary(ty=node.ty, op=node.op, a=node.a, b=safe_divisor(node.b))
        if node.op in ("+", "-", "*", "<<", ">>"):
            return wrapped(node)
        return None
    if isinstance(node, t.Convert):
        target = elem(node.ty)
        if target.is_int and elem(node.a.ty).is_float:
            return t.Convert(ty=node.ty, a=clamped_float(node.a, target), style=node.style)
        return None
    if isinstance(node, t.AsType):
        return t.AsType(ty=node.ty, a=without_nan(node.a))
    if isinstance(node, t.Call):
        if node.fn == "abs" and elem(node.ty).is_int:
            absdiff = t.Call(ty=unsigned_type(node.ty), fn="absdiff", args=[node.args[0], lit(node.ty, 0)])
            return t.Convert(ty=node.ty, a=absdiff)
        if node.fn in ORDERING:
            args = list(node.args)
            for i in range(1 if node.fn == "clamp" else len(args)):
                args[i] = plus_zero(clamped_float(args[i]))
            return t.Call(ty=node.ty, fn=node.fn, args=args)
        if node.fn in FINITE_ONLY:
            return t.Call(ty=node.ty, fn=node.fn, args=[clamped_float(node.args[0])])
        if node.fn in NAN_SIGN:
            args = list(node.args)
            args[NAN_SIGN[node.fn]] = without_nan(args[NAN_SIGN[node.fn]])
            return t.Call(ty=node.ty, fn=node.fn, args=args)
        return None
    if isinstance(node, t.Simd):
        x = node.args[0]
        if node.fn in ("simd_min", "simd_max", "quad_min", "quad_max"):
            return t.Simd(ty=node.ty, fn=node.fn, args=[plus_zero(clamped_float(x))] + node.args[1:])
        return t.Simd(ty=node.ty, fn=node.fn, args=[exactly_summable(x)] + node.args[1:])
    return None


def repair_statement(stmt, variable_types: dict) -> bool:
    """Rewrites a statement in place; False if it has no rewrite."""
    if isinstance(stmt, t.Atomic):
        stmt.value = exactly_summable(stmt.value)
        return True
    if isinstance(stmt, t.Assign) and stmt.op != "=":
        # x op= v  ->  x = X(x op v): the operation is then an expression the next round repairs
        whole = variable_types[stmt.name]
        current: t.Expr = t.Ref(ty=whole, name=stmt.name)
        target = whole
        if isinstance(whole, Ptr):
            target = whole.elem
            current = t.Deref(ty=target, pointer=stmt.name, index=copy.deepcopy(stmt.index))
        elif stmt.member is not None:
            target, packed = next((ty, p) for n, ty, p in whole.fields if n == stmt.member)
            current = t.Member(ty=target, a=current, field=stmt.member)
            if packed:
                current = t.Convert(ty=target, a=current)
        elif stmt.index is not None:
            target = elem(whole)
            current = t.Index(ty=target, a=current, index=copy.deepcopy(stmt.index))
        elif stmt.comps is not None:
            k = len(stmt.comps)
            target = Vec(elem(whole), k) if k > 1 else elem(whole)
            current = t.Swizzle(ty=target, a=current, comps=stmt.comps)
        op = stmt.op[:-1]
        result = arith(target) if op in ("<<", ">>") else arithmetic_result(target, stmt.value.ty)
        node = t.Binary(ty=result, op=op, a=current, b=stmt.value)
        stmt.value = node if result == target else t.Convert(ty=target, a=node)
        stmt.op = "="
        return True
    return False


def declared_types(prog: t.Program) -> dict:
    """name -> type of every declared variable (names are unique in a program)."""
    out = {name: ty for h in prog.helpers for name, ty, _ in h.params}
    for loc in locations(prog).values():
        node = loc[2]
        if isinstance(node, (t.Decl, t.AtomicRead, t.PointerDecl, t.Shadow)):
            out[node.name] = node.ty
    return out


def make_defined(prog: t.Program):
    """Runs the model and rewrites undefined nodes until none is left.

    Returns the model's final memory, or None when the program cannot be made defined
    (the caller then generates another)."""
    variable_types = declared_types(prog)
    for _ in range(MAX_ROUNDS):
        memory, undefined = run(prog)
        if not undefined:
            return memory
        where = locations(prog)
        for uid in undefined:
            container, key, node = where[uid]
            if isinstance(node, t.Stmt):
                if not repair_statement(node, variable_types):
                    return None
                continue
            new = repaired(node)
            if new is None:
                return None
            put(container, key, new)
    return None
