"""What the reduction kernels of every backend share: the ops, the MSL helpers that fold
values (comb, better), an element's load and a result's store, and a thread kernel's
parameters and head (reduce.py generates the GPU kernels, reduce_cpu.py the CPU's)."""

from __future__ import annotations

from . import cache

OPS = ("sum", "prod", "min", "max", "any", "all", "argmin", "argmax")
_ARG = ("argmin", "argmax")
_NO_IDENTITY = {
    "min": "zero-size array to reduction operation minimum which has no identity",
    "max": "zero-size array to reduction operation maximum which has no identity",
    "argmin": "attempt to get argmin of an empty sequence",
    "argmax": "attempt to get argmax of an empty sequence",
}
_NONE = "0xFFFFFFFFu"  # the index of padding lanes: loses every tie


def _helpers(op: str, A: str, is_float: bool) -> str:
    """MSL helpers: comb(a, b) for value ops, better(b, bk, a, ak) for arg ops."""
    if op in ("sum", "mean", "sqdev"):
        body = "return a + b;"
    elif op == "prod":
        body = "return a * b;"
    elif op == "any":
        body = "return a | b;"
    elif op == "all":
        body = "return a & b;"
    elif op in ("min", "max"):
        # NaN propagates (a + b is NaN when either is), as NumPy's minimum/maximum. x != x is
        # the NaN test: isnan has no double overload on every backend; these compile without
        # fast math, which may assume there are no NaNs.
        pick = "a < b ? a : b" if op == "min" else "a > b ? a : b"
        body = f"return (a != a || b != b) ? a + b : ({pick});" if is_float else f"return {pick};"
    else:
        cmp = "<" if op == "argmin" else ">"
        nan = ("bool bn = b != b, an = a != a;\n  if (bn || an) return (bn && an) ? bk < ak : bn;\n  "
               if is_float else "")
        return (f"inline bool better({A} b, uint bk, {A} a, uint ak) {{\n  {nan}"
                f"return (b {cmp} a) || (b == a && bk < ak);\n}}\n")
    return f"inline {A} comb({A} a, {A} b) {{ {body} }}\n"


def _load(op: str, T: str, A: str, first: bool) -> str:
    """The expression turning element x (of the source type) into an accumulator value."""
    if not first:
        return "x"
    if op in ("any", "all"):
        return "(x != 0 ? 1u : 0u)"
    if op == "sqdev":
        return f"(({A})x - m) * (({A})x - m)"
    return f"({A})x"


def _store(op: str, D: str, final: bool) -> str:
    """Statements writing the result at index `out`."""
    if op in _ARG:
        return "dst[out] = long(kk);" if final else "dst[out] = acc; kout[out] = kk;"
    if not final:
        return "dst[out] = acc;"
    if op in ("any", "all"):
        return "dst[out] = acc != 0;"
    if op in ("mean", "sqdev"):
        return f"dst[out] = {D}(acc / div);"
    return f"dst[out] = {D}(acc);"


def _params(op: str, S: str, D: str, A: str, first: bool, final: bool) -> list[str]:
    p = [f"const device {S}* src", f"device {D}* dst"]
    if op in _ARG:
        p.append("const device uint* kin")
        p.append("device uint* kout")
    if op == "sqdev" and first:
        p.append(f"const device {A}* mean")
    p += ["constant uint& n", "constant uint& inner", "constant uint& chunk", "constant uint& C"]
    if op in ("mean", "sqdev"):
        p.append(f"constant {A}& div")
    return [f"{x} [[buffer({i})]]" for i, x in enumerate(p)]


def _thread_kernel_head(op: str, S: str, D: str, A: str, first: bool, final: bool, is_float: bool,
                        functions: str = "") -> str:
    """A kernel of one thread per output or chunk, up to its body; `functions`: more helpers."""
    return (cache.header() + _helpers(op, A, is_float) + functions + "kernel void red(" +
            ",\n    ".join(_params(op, S, D, A, first, final)) + ",\n    uint t [[thread_position_in_grid]]) {\n")
