"""MSL source of a generated program (the tree the model evaluates)."""

from __future__ import annotations

import math

import numpy as np

from . import tree as t
from .types import FLOAT, HALF, Arr, Scalar, Struct, Type, Vec, elem

PRELUDE = "#include <metal_stdlib>\nusing namespace metal;\n"

BUILTIN_PARAMS = (
    ("gid", "thread_position_in_grid"),
    ("lid", "thread_position_in_threadgroup"),
    ("tgid", "threadgroup_position_in_grid"),
    ("lane", "thread_index_in_simdgroup"),
    ("sgid", "simdgroup_index_in_threadgroup"),
)


def float_text(v: float, scalar: Scalar) -> str:
    """A float literal that reads back exactly as v in its type."""
    if math.isnan(v):
        core = "NAN"
    elif math.isinf(v):
        core = "INFINITY" if v > 0 else "(-INFINITY)"
    else:
        text = repr(float(np.float32(v)))  # shortest decimal that round-trips the float32
        if "e" not in text and "." not in text:
            text += ".0"
        if scalar == HALF:
            core = text + "h"
        else:
            core = text + "f"
        if v < 0 or (v == 0 and math.copysign(1.0, v) < 0):
            core = f"({core})" if text.startswith("-") else f"(-{core})"
    if scalar == FLOAT or (scalar == HALF and not (math.isnan(v) or math.isinf(v))):
        return core
    return f"{scalar.name}({core})"


def int_text(v: int, scalar: Scalar) -> str:
    suffix = {"int": "", "uint": "u", "long": "l", "ulong": "ul"}.get(scalar.name)
    if suffix is None:
        return f"{scalar.name}({v})"
    if scalar.signed and v == scalar.lo:
        return f"({v + 1}{suffix} - 1{suffix})"
    return f"({v}{suffix})" if v < 0 else f"{v}{suffix}"


def scalar_literal(v, scalar: Scalar) -> str:
    if scalar.is_bool:
        return "true" if v else "false"
    if scalar.is_int:
        return int_text(int(v), scalar)
    return float_text(float(v), scalar)



def macro_argument(text: str) -> str:
    """A macro argument: braces do not hide commas from the preprocessor (`F{a, b}(x)`), so
    such an argument is parenthesised (others are not: `(T(U(x))) - (y)` would read as a cast)."""
    return f"({text})" if "{" in text else text

class Printer:
    def __init__(self, template_type: Type | None = None):
        # Inside a template helper, its type parameter is spelled T.
        self.template_type = template_type
        self.references: set = set()  # names of `thread T&` locals (printed as themselves)

    def type_name(self, ty: Type, packed: bool = False) -> str:
        if self.template_type is not None and ty == self.template_type:
            return "T"
        return ("packed_" if packed else "") + ty.name

    # Expressions ------------------------------------------------------------------------
    def expr(self, e: t.Expr) -> str:
        method = getattr(self, "expr_" + type(e).__name__.lower())
        return method(e)

    def expr_lit(self, e: t.Lit) -> str:
        s = elem(e.ty)
        text = scalar_literal(e.value, s)
        if isinstance(e.ty, Vec):
            return f"{self.type_name(e.ty)}({text})"
        if self.template_type is not None and e.ty == self.template_type:
            return f"T({text})"
        return text

    def expr_ref(self, e: t.Ref) -> str:
        return e.name

    def expr_load(self, e: t.Load) -> str:
        return f"{e.buffer}[{self.expr(e.index)}]"

    def expr_sharedload(self, e: t.SharedLoad) -> str:
        return f"{e.array}[{self.expr(e.index)}]"

    def expr_unary(self, e: t.Unary) -> str:
        return f"({e.op}{self.expr(e.a)})"

    def expr_binary(self, e: t.Binary) -> str:
        if e.macro:
            return f"{e.macro}({macro_argument(self.expr(e.a))}, {macro_argument(self.expr(e.b))})"
        return f"({self.expr(e.a)} {e.op} {self.expr(e.b)})"

    def expr_convert(self, e: t.Convert) -> str:
        name = self.type_name(e.ty)
        inner = self.expr(e.a)
        if e.style == "static":
            return f"static_cast<{name}>({inner})"
        if e.style == "cast":
            return f"(({name})({inner}))"
        if e.style == "implicit":  # an initialiser, `=`, a store or an argument converts it
            return inner
        return f"{name}({inner})"

    def expr_astype(self, e: t.AsType) -> str:
        return f"as_type<{self.type_name(e.ty)}>({self.expr(e.a)})"

    def expr_call(self, e: t.Call) -> str:
        args = ", ".join(self.expr(a) for a in e.args)
        return f"{e.fn}({args})"

    def expr_cond(self, e: t.Cond) -> str:
        return f"({self.expr(e.c)} ? {self.expr(e.a)} : {self.expr(e.b)})"

    def expr_swizzle(self, e: t.Swizzle) -> str:
        return f"{self.expr(e.a)}.{''.join(e.letters[c] for c in e.comps)}"

    def expr_deref(self, e: t.Deref) -> str:
        if e.pointer in self.references:
            return e.pointer
        if e.star:
            return f"(*{e.pointer})"
        return f"{e.pointer}[{self.expr(e.index)}]"

    def expr_member(self, e: t.Member) -> str:
        return f"{self.expr(e.a)}.{e.field}"

    def expr_index(self, e: t.Index) -> str:
        return f"{self.expr(e.a)}[{self.expr(e.index)}]"

    def expr_construct(self, e: t.Construct) -> str:
        if isinstance(e.ty, Struct):
            return f"{e.ty.name}{{{', '.join(self.expr(p) for p in e.parts)}}}"
        return f"{self.type_name(e.ty)}({', '.join(self.expr(p) for p in e.parts)})"

    def expr_callhelper(self, e: t.CallHelper) -> str:
        args = ", ".join(self.expr(a) for a in e.args)
        if e.functor_fields is not None:
            fields = ", ".join(self.expr(f) for f in e.functor_fields)
            return f"{e.name}{{{fields}}}({args})"
        if e.template_arg is not None:
            return f"{e.name}<{self.type_name(e.template_arg)}>({args})"
        return f"{e.name}({args})"

    def expr_calllambda(self, e: t.CallLambda) -> str:
        return f"{e.name}({', '.join(self.expr(a) for a in e.args)})"

    def expr_simd(self, e: t.Simd) -> str:
        args = ", ".join(self.expr(a) for a in e.args)
        if e.fn in ("simd_ballot", "simd_active_threads_mask"):
            return f"static_cast<ulong>({e.fn}({args}))"
        return f"{e.fn}({args})"

    # Statements -------------------------------------------------------------------------
    def block(self, stmts: list, indent: int) -> list[str]:
        lines = []
        for s in stmts:
            lines.extend(self.stmt(s, indent))
        return lines

    def stmt(self, s: t.Stmt, indent: int) -> list[str]:
        pad = "    " * indent
        if isinstance(s, t.Decl):
            if isinstance(s.ty, Arr):
                items = ", ".join(self.expr(p) for p in s.init.parts)
                return [f"{pad}{self.type_name(s.ty.elem)} {s.name}[{s.ty.n}] = {{{items}}};"]
            if isinstance(s.ty, Struct) and isinstance(s.init, t.Construct):
                items = ", ".join(self.expr(p) for p in s.init.parts)
                return [f"{pad}{s.ty.name} {s.name} = {{{items}}};"]
            return [f"{pad}{self.type_name(s.ty)} {s.name} = {self.expr(s.init)};"]
        if isinstance(s, t.PointerDecl):
            where = f"&{s.target}" if s.offset is None else f"&{s.target}[{s.offset}]"
            if s.ref:
                self.references.add(s.name)
                return [f"{pad}thread {self.type_name(s.ty.elem)}& {s.name} = {where[1:]};"]
            return [f"{pad}thread {self.type_name(s.ty.elem)}* {s.name} = {where};"]
        if isinstance(s, t.LambdaDef):
            params = ", ".join(f"{self.type_name(ty)} {name}" for name, ty in s.params)
            ret = f" -> {self.type_name(s.ret)}" if s.declared else ""
            return [f"{pad}auto {s.name} = [&]({params}){ret} {{ return {self.expr(s.value)}; }};"]
        if isinstance(s, t.Assign):
            target = s.name
            if s.member is not None:
                target += f".{s.member}"
            elif s.index is not None and s.name not in self.references:
                target += f"[{self.expr(s.index)}]"
            elif s.comps is not None:
                if s.element_syntax:
                    target += f"[{s.comps[0]}]"
                else:
                    target += "." + "".join(s.letters[c] for c in s.comps)
            if s.op in ("++", "--"):
                return [f"{pad}{s.op}{target};" if s.prefix else f"{pad}{target}{s.op};"]
            return [f"{pad}{target} {s.op} {self.expr(s.value)};"]
        if isinstance(s, t.Store):
            return [f"{pad}{s.buffer}[{self.expr(s.index)}] = {self.expr(s.value)};"]
        if isinstance(s, t.SharedStore):
            return [f"{pad}{s.array}[{self.expr(s.index)}] = {self.expr(s.value)};"]
        if isinstance(s, t.If):
            lines = [f"{pad}if ({self.expr(s.cond)}) {{"] + self.block(s.then, indent + 1)
            if s.orelse:
                lines += [f"{pad}}} else {{"] + self.block(s.orelse, indent + 1)
            return lines + [f"{pad}}}"]
        if isinstance(s, t.Switch):
            lines = [f"{pad}switch ({self.expr(s.value)}) {{"]
            for case in s.cases:
                lines += [f"{pad}case {label}:" for label in case.labels]
                lines += [f"{pad}{{"] + self.block(case.body, indent + 1) + [f"{pad}}}"]
                if not case.falls:
                    lines.append(f"{pad}    break;")
            lines += [f"{pad}default:", f"{pad}{{"] + self.block(s.default, indent + 1) + [f"{pad}}}", f"{pad}}}"]
            return lines
        if isinstance(s, t.For) and s.style == "do":
            return ([f"{pad}{{", f"{pad}    {self.type_name(s.ty)} {s.var} = {self.expr(s.start)};", f"{pad}    do {{"]
                    + self.block(s.body, indent + 2)
                    + [f"{pad}        {s.var} += {s.step};", f"{pad}    }} while ({s.var} {s.compare} {self.expr(s.end)});",
                       f"{pad}}}"])
        if isinstance(s, t.CallStmt):
            return [f"{pad}{self.expr(s.call)};"]
        if isinstance(s, t.Shadow):
            return ([f"{pad}{{", f"{pad}    {self.type_name(s.ty)} {s.name} = {self.expr(s.init)};"]
                    + self.block(s.body, indent + 1) + [f"{pad}}}"])
        if isinstance(s, t.For) and s.style == "while":
            step = f"{s.var} += {s.step}"
            return ([f"{pad}{{", f"{pad}    {self.type_name(s.ty)} {s.var} = {self.expr(s.start)};",
                     f"{pad}    while ({s.var} {s.compare} {self.expr(s.end)}) {{"]
                    + self.block(s.body, indent + 2) + [f"{pad}        {step};", f"{pad}    }}", f"{pad}}}"])
        if isinstance(s, t.For):
            step = f"{s.var} += {s.step}" if s.step > 0 else f"{s.var} >>= {-s.step}"
            head = f"for ({self.type_name(s.ty)} {s.var} = {self.expr(s.start)}; {s.var} {s.compare} {self.expr(s.end)}; {step})"
            return [f"{pad}{head} {{"] + self.block(s.body, indent + 1) + [f"{pad}}}"]
        if isinstance(s, t.Break):
            return [f"{pad}break;"]
        if isinstance(s, t.Continue):
            return [f"{pad}continue;"]
        if isinstance(s, t.Barrier):
            fn = "threadgroup_barrier" if s.kind == "threadgroup" else "simdgroup_barrier"
            return [f"{pad}{fn}(mem_flags::mem_threadgroup);"]
        if isinstance(s, t.Atomic):
            target = f"&{s.target}[{self.expr(s.index)}]"
            if s.op == "store":
                return [f"{pad}atomic_store_explicit({target}, {self.expr(s.value)}, memory_order_relaxed);"]
            return [f"{pad}atomic_fetch_{s.op}_explicit({target}, {self.expr(s.value)}, memory_order_relaxed);"]
        if isinstance(s, t.AtomicRead):
            target = f"&{s.target}[{self.expr(s.index)}]"
            return [f"{pad}{self.type_name(s.ty)} {s.name} = atomic_load_explicit({target}, memory_order_relaxed);"]
        if isinstance(s, t.Return):
            return [f"{pad}return {self.expr(s.value)};" if s.value is not None else f"{pad}return;"]
        raise TypeError(type(s).__name__)


def param_text(printer: Printer, name: str, ty: Type, space: str | None) -> str:
    if space == "thread&":
        return f"thread {printer.type_name(ty)}& {name}"
    if space:
        return f"{space} {printer.type_name(ty)}* {name}"
    return f"{printer.type_name(ty)} {name}"


def helper_source(h: t.Helper) -> str:
    template_type = h.params[0][1] if h.kind == "template" else None
    p = Printer(template_type)
    params = ", ".join(param_text(p, n, ty, space) for n, ty, space in h.params)
    body = "\n".join(p.block(h.body, 2 if h.kind == "functor" else 1))
    if h.kind == "functor":
        fields = "".join(f"    {param_text(p, n, ty, space)};\n" for n, ty, space in h.fields)
        return (f"struct {h.name} {{\n{fields}"
                f"    {p.type_name(h.ret)} operator()({params}) const {{\n{body}\n    }}\n}};\n")
    head = f"{p.type_name(h.ret) if h.ret is not None else 'void'} {h.name}({params})"
    if h.kind == "template":
        head = "template <typename T>\n" + head
    return f"{head} {{\n{body}\n}}\n"


def kernel_source(prog: t.Program) -> str:
    p = Printer()
    params = []
    for index, b in enumerate(prog.buffers):
        if b.role == "atomic":
            params.append(f"device atomic_{b.ty.name}* {b.name} [[buffer({index})]]")
        elif b.role == "scalar":
            params.append(f"constant {p.type_name(b.ty)}& {b.name} [[buffer({index})]]")
        elif b.space == "constant":
            params.append(f"constant {p.type_name(b.ty, b.packed)}* {b.name} [[buffer({index})]]")
        else:
            const = "const " if b.role == "in" else ""
            params.append(f"{const}device {p.type_name(b.ty, b.packed)}* {b.name} [[buffer({index})]]")
    tg_index = 0
    for a in prog.shared:
        if a.as_param:
            params.append(f"threadgroup {a.ty.name}* {a.name} [[threadgroup({tg_index})]]")
            tg_index += 1
    for name, attribute in BUILTIN_PARAMS:
        params.append(f"uint {name} [[{attribute}]]")
    lines = [f"kernel void {prog.name}(" + ",\n    ".join(params) + ") {"]
    for a in prog.shared:
        if not a.as_param:
            kind = f"atomic_{a.ty.name}" if a.atomic else a.ty.name
            lines.append(f"    threadgroup {kind} {a.name}[{a.length}];")
    lines += p.block(prog.body, 1)
    lines.append("}")
    return "\n".join(lines) + "\n"


def struct_source(s) -> str:
    p = Printer()
    members = "".join(f"    {p.type_name(ty, packed)} {name};\n" for name, ty, packed in s.fields)
    return f"struct {s.name} {{\n{members}}};\n"


def globals_source(prog: t.Program) -> str:
    # Arguments are not parenthesised again: the printer's operands are atoms or in parentheses
    # already, and `((a) & (b))` with a = `T(U(x))` reads as a cast of `&(b)` to the function
    # type `T(U x)` (C++ takes whatever can be a type as one), in Apple's compiler too.
    lines = [f"#define {name}(a, b) (a {op} b)" for name, op in prog.macros]
    for g in prog.globals:
        if g.function_constant is not None:
            lines.append(f"constant {g.ty.name} {g.name} [[function_constant({g.function_constant})]];")
        elif isinstance(g.ty, Arr):
            items = ", ".join(scalar_literal(v, g.ty.elem) for v in g.value)
            lines.append(f"constant {g.ty.elem.name} {g.name}[{g.ty.n}] = {{{items}}};")
        else:
            lines.append(f"constant {g.ty.name} {g.name} = {scalar_literal(g.value, g.ty)};")
    return "".join(line + "\n" for line in lines) + ("\n" if lines else "")


def program_source(prog: t.Program) -> str:
    """The structs, helpers and kernel of one program (no prelude)."""
    return (globals_source(prog) + "".join(struct_source(s) + "\n" for s in prog.structs)
            + "".join(helper_source(h) + "\n" for h in prog.helpers) + kernel_source(prog))


def library_source(programs: list) -> str:
    return PRELUDE + "\n" + "\n".join(program_source(p) for p in programs)
