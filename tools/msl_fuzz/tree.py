"""The generated program as a tree: the printer writes it as MSL, the model evaluates it.

Both read the same nodes, so a program's reference is computed from what was printed,
not from metalcall's translation of it. The generator's repairs (of expressions whose
result MSL leaves undefined for the program's inputs) are rewrites of the tree, so the
printer and the model never disagree about them.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field

from .types import Type

_ids = itertools.count(1)


def _next_id() -> int:
    return next(_ids)


@dataclass(eq=False)
class Expr:
    ty: Type
    uid: int = field(default_factory=_next_id, init=False)


@dataclass(eq=False)
class Lit(Expr):
    value: object = 0  # int, float or bool; a vector literal broadcasts it


@dataclass(eq=False)
class Ref(Expr):
    name: str = ""


@dataclass(eq=False)
class Load(Expr):
    """buffer[index]: a kernel input (or an output re-read), one element or one vector."""

    buffer: str = ""
    index: Expr | None = None


@dataclass(eq=False)
class SharedLoad(Expr):
    """array[index] of a threadgroup array (kernel-scope variable or parameter)."""

    array: str = ""
    index: Expr | None = None


@dataclass(eq=False)
class Unary(Expr):
    op: str = "-"
    a: Expr | None = None


@dataclass(eq=False)
class Binary(Expr):
    op: str = "+"
    a: Expr | None = None
    b: Expr | None = None
    macro: str | None = None  # written as a function-like macro of the program: NAME(a, b)


@dataclass(eq=False)
class Convert(Expr):
    a: Expr | None = None
    style: str = "call"  # T(a), static_cast<T>(a), (T)a; "implicit": a alone, where C++ converts it


@dataclass(eq=False)
class AsType(Expr):
    a: Expr | None = None


@dataclass(eq=False)
class Call(Expr):
    """A metal_stdlib function: min, clamp, popcount, fma, select, all, ..."""

    fn: str = ""
    args: list = field(default_factory=list)


@dataclass(eq=False)
class Cond(Expr):
    c: Expr | None = None
    a: Expr | None = None
    b: Expr | None = None


@dataclass(eq=False)
class Swizzle(Expr):
    a: Expr | None = None
    comps: tuple = (0,)
    letters: str = "xyzw"


@dataclass(eq=False)
class Deref(Expr):
    """p[index] (or *p) of a pointer to thread memory."""

    pointer: str = ""
    index: Expr | None = None
    star: bool = False  # written *p (index 0)


@dataclass(eq=False)
class Member(Expr):
    """s.field of a struct value."""

    a: Expr | None = None
    field: str = ""


@dataclass(eq=False)
class Index(Expr):
    """v[i] of a vector, i a constant or an expression in range."""

    a: Expr | None = None
    index: Expr | None = None


@dataclass(eq=False)
class Construct(Expr):
    """T4(a, b.xy, c) or T4(s): a vector from scalars and smaller vectors."""

    parts: list = field(default_factory=list)


@dataclass(eq=False)
class CallHelper(Expr):
    """helper(args), helper<T>(args), or Functor{fields}(args)."""

    name: str = ""
    args: list = field(default_factory=list)
    template_arg: Type | None = None  # helper<T>(...)
    functor_fields: list | None = None  # Functor{field values}(args)


@dataclass(eq=False)
class CallLambda(Expr):
    """name(args) of a lambda declared earlier in the function."""

    name: str = ""
    args: list = field(default_factory=list)


@dataclass(eq=False)
class Simd(Expr):
    """A SIMD-group function; its arguments are evaluated by every lane of the group."""

    fn: str = ""
    args: list = field(default_factory=list)


# Statements ---------------------------------------------------------------------------


@dataclass(eq=False)
class Stmt:
    uid: int = field(default_factory=_next_id, init=False)


@dataclass(eq=False)
class Decl(Stmt):
    name: str = ""
    ty: Type | None = None
    init: Expr | None = None


@dataclass(eq=False)
class PointerDecl(Stmt):
    """thread T* name = &target;  or  = &target[offset];  (target: a local scalar or array)."""

    name: str = ""
    ty: Type | None = None  # Ptr
    target: str = ""
    offset: int | None = None  # None: &scalar; else &array[offset]
    ref: bool = False  # `thread T& name = target;` (read and written as `name`)


@dataclass(eq=False)
class LambdaDef(Stmt):
    """auto name = [&](T0 p0, ...) { return value; };  (captures the function's variables by
    reference: a call sees their values at the time of the call)."""

    name: str = ""
    params: list = field(default_factory=list)  # [(name, Type)]
    ret: Type | None = None
    value: Expr | None = None
    declared: bool = False  # `-> T` written: the value converts to ret at the return


@dataclass(eq=False)
class Assign(Stmt):
    """name = value, name op= value, name.xz = value, name[i] = value; name.x++, --name[i]
    (op "++" or "--", value the int 1 they add: the model and the repairs read them as += 1)."""

    name: str = ""
    value: Expr | None = None
    op: str = "="  # or "+=", "^=", ..., "++", "--"
    prefix: bool = False  # ++x rather than x++
    comps: tuple | None = None  # swizzle or element written
    letters: str = "xyzw"
    element_syntax: bool = False  # v[i] rather than v.x
    index: Expr | None = None  # v[index] = value: an element chosen at run time
    member: str | None = None  # s.member = value


@dataclass(eq=False)
class Store(Stmt):
    buffer: str = ""
    index: Expr | None = None
    value: Expr | None = None


@dataclass(eq=False)
class SharedStore(Stmt):
    array: str = ""
    index: Expr | None = None
    value: Expr | None = None


@dataclass(eq=False)
class If(Stmt):
    cond: Expr | None = None
    then: list = field(default_factory=list)
    orelse: list = field(default_factory=list)


@dataclass(eq=False)
class For(Stmt):
    """for (T var = start; var < end; var += step) body — a bounded trip count."""

    var: str = "i"
    ty: Type | None = None
    start: Expr | None = None
    end: Expr | None = None
    step: int = 1
    body: list = field(default_factory=list)
    compare: str = "<"
    style: str = "for"  # or "while": { T var = start; while (var < end) { body; var += step; } }
    #                     or "do":    { T var = start; do { body; var += step; } while (var < end); }


@dataclass(eq=False)
class Case(Stmt):
    """One `case a: case b: { body } [break;]` of a Switch (not a statement of its own).

    A case that `falls` has no break: its threads go on into the next case."""

    labels: list = field(default_factory=list)
    body: list = field(default_factory=list)
    falls: bool = False


@dataclass(eq=False)
class Switch(Stmt):
    """switch (value) { cases ... default: { body } }."""

    value: Expr | None = None
    cases: list = field(default_factory=list)  # [Case]
    default: list = field(default_factory=list)


@dataclass(eq=False)
class Break(Stmt):
    pass


@dataclass(eq=False)
class Continue(Stmt):
    pass


@dataclass(eq=False)
class Barrier(Stmt):
    kind: str = "threadgroup"  # or "simdgroup"


@dataclass(eq=False)
class Atomic(Stmt):
    """atomic_fetch_<op>_explicit(&target[index], value, memory_order_relaxed)."""

    target: str = ""
    index: Expr | None = None
    op: str = "add"
    value: Expr | None = None
    shared: bool = False


@dataclass(eq=False)
class AtomicRead(Stmt):
    """out = atomic_load_explicit(&target[index]) into a declared variable."""

    name: str = ""
    ty: Type | None = None
    target: str = ""
    index: Expr | None = None
    shared: bool = False


@dataclass(eq=False)
class Return(Stmt):
    value: Expr | None = None  # None: `return;` of the kernel


@dataclass(eq=False)
class CallStmt(Stmt):
    """helper(args); of a void helper whose `thread T&` parameters write back to the arguments."""

    call: Expr | None = None


@dataclass(eq=False)
class Shadow(Stmt):
    """{ T name = init; body } where name is an outer variable's (of the same type)."""

    name: str = ""
    ty: Type | None = None
    init: Expr | None = None
    body: list = field(default_factory=list)


# Functions and programs ----------------------------------------------------------------


@dataclass(eq=False)
class Helper:
    """A function the kernel calls: a plain function, a template, or a functor."""

    name: str
    params: list  # [(name, Type, address_space or None)]; "thread&": a reference to the argument
    ret: Type | None  # None: void
    body: list
    kind: str = "function"  # "function", "template" (over its first parameter's type), "functor"
    fields: list = field(default_factory=list)  # a functor's members [(name, Type, address_space or None)]
    collective: bool = False  # holds barriers or SIMD-group functions


@dataclass(eq=False)
class Buffer:
    """A kernel buffer parameter and its data."""

    name: str
    ty: Type  # element type (a scalar or a vector)
    role: str  # "in", "out", "atomic", or "scalar" (a `constant T&` parameter)
    length: int
    space: str = "device"  # an input may be `constant T*`
    packed: bool = False
    data: object = None  # model array of the initial contents
    atomic_ops: tuple = ()  # an atomic buffer's operations: ones that commute with each other


@dataclass(eq=False)
class SharedArray:
    name: str
    ty: Type
    length: int
    as_param: bool = False  # [[threadgroup(i)]] parameter rather than a kernel-scope variable
    atomic: bool = False
    atomic_ops: tuple = ()


@dataclass(eq=False)
class Global:
    """Program-scope data: `constant T name = v;` or `constant T name[n] = {...};`, or a
    function constant `constant T name [[function_constant(index)]];` given `value` when the
    kernel's pipeline is made."""

    name: str
    ty: Type
    value: object  # a number, or a list of numbers for an array
    function_constant: int | None = None


@dataclass(eq=False)
class Program:
    name: str
    category: str
    threads: int
    group: int  # threads per threadgroup (a multiple of 32)
    buffers: list
    shared: list
    helpers: list
    body: list
    fast_math: bool = False
    structs: list = field(default_factory=list)
    features: set = field(default_factory=set)
    globals: list = field(default_factory=list)  # [Global]
    macros: list = field(default_factory=list)  # [(name, operator)]: #define name(a, b) ((a) op (b))


def walk_exprs(node):
    """Every expression under a node, the node's own first (for repairs and reduction)."""
    if isinstance(node, Expr):
        yield node
    for value in vars(node).values():
        if isinstance(value, (Expr, Stmt)):
            yield from walk_exprs(value)
        elif isinstance(value, list):
            for item in value:
                if isinstance(item, (Expr, Stmt)):
                    yield from walk_exprs(item)


def walk_statements(stmts: list):
    """Every statement in a list and in the blocks under it."""
    for s in stmts:
        yield s
        for value in vars(s).values():
            if isinstance(value, list):
                yield from walk_statements([x for x in value if isinstance(x, Stmt)])
