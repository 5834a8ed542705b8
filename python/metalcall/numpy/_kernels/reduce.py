"""Reductions over the middle axis of (outer, n, inner): sum, prod, min, max, any, all,
argmin, argmax, and mean/variance (moments), generated as MSL per op and dtype.

Two kernel shapes: a threadgroup kernel (SIMD shuffles + threadgroup memory, one threadgroup
or a grid of them per row) for inner == 1 on GPUs, and a plain loop kernel (one thread per
output, or per chunk of a row) for inner > 1 and for the CPU backend, where kernels with
barriers or SIMD functions run as fibers. Long rows with few outputs take two stages: partial
results per chunk, then a merge of the partials with the same kernels.
"""

from __future__ import annotations

import functools
from typing import Any, Callable

import numpy as np

import metalcall as mc

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


def _acc_type(op: str, dtype: np.dtype, out_dtype: np.dtype) -> np.dtype:
    """The type a reduction accumulates in."""
    if op in ("any", "all"):
        return np.dtype(np.uint32)
    if op in ("sum", "prod", "mean", "sqdev"):
        return cache.accumulator(out_dtype if out_dtype.kind != "b" else np.int64)
    # min/max/argmin/argmax compare in the input type, narrow integers widened to 32 bits so
    # SIMD shuffles take them on every backend.
    if dtype.kind == "f":
        return cache.accumulator(dtype)
    if dtype.kind == "b":
        return np.dtype(np.uint32)
    if dtype.itemsize < 4:
        return np.dtype(np.int32 if dtype.kind == "i" else np.uint32)
    return dtype


def _identity(op: str, acc: np.dtype) -> str:
    if op in ("sum", "any", "mean", "sqdev"):
        return cache.literal(acc, 0)
    if op in ("prod", "all"):
        return cache.literal(acc, 1)
    smallest = op in ("min", "argmin")  # the identity of min is the largest value
    if acc.kind == "f":
        return cache.literal(acc, float("inf") if smallest else float("-inf"))
    info = np.iinfo(acc)
    return cache.literal(acc, info.max if smallest else info.min)


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


def _step(op: str, load: str, first: bool, j: str, S: str, A: str) -> str:
    """Statements folding element j (at src[base + j * inner]) into acc/kk."""
    if op in _ARG:
        k = j if first else f"kin[base + ulong({j}) * inner]"
        return (f"{{ {S} x = src[base + ulong({j}) * inner]; uint bk = {k}; {A} b = {load};\n"
                f"      if (better(b, bk, acc, kk)) {{ acc = b; kk = bk; }} }}")
    return f"{{ {S} x = src[base + ulong({j}) * inner]; acc = comb(acc, {load}); }}"


def _loop_body(op: str, load: str, first: bool, S: str, A: str, is_float: bool) -> str:
    if op in ("min", "max") and is_float:
        # A plain compare-select loop the compiler vectorises, NaNs counted on the side (the
        # NaN-propagating comb() has a branch that keeps loops scalar).
        pick = "<" if op == "min" else ">"
        return ("  uint nans = 0;\n"
                f"  for (uint j = j0; j < j1; ++j) {{ {S} x = src[base + ulong(j) * inner]; {A} v = {load};\n"
                f"    nans |= v != v ? 1u : 0u; acc = v {pick} acc ? v : acc; }}\n"
                f"  if (nans) acc = {A}(NAN);\n")
    return f"  for (uint j = j0; j < j1; ++j) {_step(op, load, first, 'j', S, A)}\n"


def _thread_kernel_head(op: str, S: str, D: str, A: str, first: bool, final: bool, is_float: bool) -> str:
    """A kernel of one thread per output or chunk, up to its body."""
    return (cache.header() + _helpers(op, A, is_float) + "kernel void red(" +
            ",\n    ".join(_params(op, S, D, A, first, final)) + ",\n    uint t [[thread_position_in_grid]]) {\n")


@functools.lru_cache(maxsize=None)
def _loop_source(op: str, T: str, A: str, D: str, first: bool, final: bool, is_float: bool,
                 ident: str) -> str:
    S = T if first else A
    load = _load(op, T, A, first)
    mean = f"  const {A} m = mean[ulong(o) * inner + i];\n" if op == "sqdev" and first else ""
    return (_thread_kernel_head(op, S, D, A, first, final, is_float) +
            "  const uint i = t % inner, c = (t / inner) % C, o = t / inner / C;\n"
            "  const ulong base = ulong(o) * n * inner + i;\n"
            "  const uint j0 = c * chunk, j1 = min(n, j0 + chunk);\n"
            f"{mean}"
            f"  {A} acc = {ident}; uint kk = {_NONE};\n"
            f"{_loop_body(op, load, first, S, A, is_float)}"
            "  const ulong out = (ulong(o) * C + c) * inner + i;\n"
            f"  {_store(op, D, final)}\n}}\n")


@functools.lru_cache(maxsize=None)
def _columns_source(op: str, T: str, A: str, D: str, first: bool, final: bool, is_float: bool,
                    ident: str, W: int) -> str:
    """inner > 1 on the CPU backend: work-item (b, c, o) folds columns [W b, W b + W) of row o
    (fewer in the last block) over chunk c of n, one accumulator per column, reading each step's
    W contiguous elements (a work-item per column strode by `inner` between elements, which no
    compiler vectorises: a sum over axis 0 of 1000 x 1000 float32 took 7x NumPy's time)."""
    S = T if first else A
    load = _load(op, T, A, first)
    arg = op in _ARG
    mean = f" const {A} m = mean[ulong(o) * inner + i0 + u];" if op == "sqdev" and first else ""
    if arg:
        k = "j" if first else "kin[at]"
        step = (f"{{ const ulong at = base + ulong(j) * inner + u; {S} x = src[at];{mean} uint bk = {k}; {A} b = {load};"
                " if (better(b, bk, acc[u], kk[u])) { acc[u] = b; kk[u] = bk; } }")
    elif op in ("min", "max") and is_float:  # compare and select, NaN taken in: vectorisable
        cmp = "<" if op == "min" else ">"
        step = (f"{{ {S} x = row[u];{mean} {A} v = {load}; acc[u] = ((v {cmp} acc[u]) | (v != v)) ? v : acc[u]; }}")
    else:
        step = f"{{ {S} x = row[u];{mean} acc[u] = comb(acc[u], {load}); }}"
    loop = (f"for (uint j = j0; j < j1; ++j) {{\n"
            f"      const device {S}* row = src + base + ulong(j) * inner;\n"
            f"      for (uint u = 0; u < @N@; ++u) {step}\n    }}")
    return (_thread_kernel_head(op, S, D, A, first, final, is_float) +
            f"  const uint blocks = (inner + {W}u - 1) / {W}u;\n"
            "  const uint b = t % blocks, c = (t / blocks) % C, o = t / blocks / C;\n"
            f"  const uint i0 = b * {W}u, nw = min(uint({W}), inner - i0);\n"
            "  const ulong base = ulong(o) * n * inner + i0;\n"
            "  const uint j0 = c * chunk, j1 = min(n, j0 + chunk);\n"
            f"  {A} acc[{W}];" + (f" uint kk[{W}];" if arg else "") + "\n"
            f"  for (uint u = 0; u < {W}u; ++u) {{ acc[u] = {ident};" + (f" kk[u] = {_NONE};" if arg else "") + " }\n"
            f"  if (nw == {W}u) {{\n    {loop.replace('@N@', f'{W}u')}\n  }} else {{\n    {loop.replace('@N@', 'nw')}\n  }}\n"
            "  for (uint u = 0; u < nw; ++u) {\n"
            f"    {A} acc_u = acc[u];" + (" uint kk_u = kk[u];" if arg else "") + "\n"
            "    const ulong out = (ulong(o) * C + c) * inner + i0 + u;\n"
            f"    {_store(op, D, final).replace('acc', 'acc_u').replace('kk', 'kk_u')}\n  }}\n}}\n")


# Independent accumulators per thread of the CPU's row kernel: 256 bytes of them (64 float32,
# 32 double; at most 64), four AVX-512 registers or eight AVX2 ones. A compare-select fold is
# a chain through its accumulator: with one vector's worth (16 float32) max of 1e6 float32 waited
# on that chain (2^19 floats a thread: 67 us with 16 lanes, 30 us with 64).
_LANE_BYTES = 256
_MAX_LANES = 64
# Elements a thread folds from which the lanes pay for their setup and merge (rows of 4 took 3x
# longer with them than with one accumulator).
_LANES_FROM = 256


def _lanes(A: np.dtype) -> int:
    """The row kernel's accumulator lanes for accumulator type A."""
    return min(_MAX_LANES, _LANE_BYTES // A.itemsize)


def _lane_step(op: str, load: str, u: int, S: str, A: str, is_float: bool) -> str:
    """Statements folding q[u] into lane u. Float min/max compare and select, NaN taken in
    (vectorisable; comb()'s NaN test is a branch)."""
    head = f"{{ {S} x = q[{u}]; {A} v = {load}; "
    if op in ("min", "max") and is_float:
        return head + f"acc{u} = (v {'>' if op == 'max' else '<'} acc{u} || v != v) ? v : acc{u}; }}"
    return head + f"acc{u} = comb(acc{u}, v); }}"


def _lane_merge(lanes: int) -> str:
    """Folds the lanes into acc0 pairwise, in a fixed order (the same on every run)."""
    return "".join(f"  acc{u} = comb(acc{u}, acc{u + s});\n" for s in [lanes >> k for k in range(1, lanes.bit_length())]
                   for u in range(s))


def _nan_merge(a: str, b: str, cmp: str) -> str:
    """a = the better of lanes a and b, NaN taken in (as comb() of min/max)."""
    return f"{a} = ({a} != {a} || {b} != {b}) ? {a} + {b} : ({b} {cmp} {a} ? {b} : {a});"


# Blocks of lanes a float arg op's first pass takes between notes of where each lane last got
# better: the second pass then starts in the group of blocks holding the best value's first
# place, not at the chunk's start (1024 float32 at most to test again, not half the chunk).
_ARG_GROUP = 16


def _arg_two_passes(op: str, load: str, S: str, A: str, is_float: bool, L: int) -> str:
    """An arg op's chunk in two passes: its best value (the first NaN's place taken by NaN) in L
    lanes that compare and select, which the compiler vectorises (a lane that also carries its
    index stayed scalar: 2.5x slower), then the first index holding that value, L elements a test.
    Exact: the value is one of the chunk's own. For floats the first pass also notes, every
    _ARG_GROUP blocks, the group in which each lane last got strictly better; a lane never gets
    better on an equal value, so the first element equal to a lane's final value lies in that
    group, and the second pass starts at the earliest such group among the lanes holding the best
    value (at the chunk's start when it is NaN: a NaN lane changes on every NaN)."""
    cmp = ">" if op == "argmax" else "<"

    def pick(x: str, a: str) -> str:
        return f"{a} = ({x} {cmp} {a} || {x} != {x}) ? {x} : {a};" if is_float else f"{a} = {x} {cmp} {a} ? {x} : {a};"

    def ind(text: str, k: int) -> str:
        return "\n".join(" " * k + line for line in text.split("\n"))

    steps = "\n".join(f"{{ {S} x = q[{u}]; {A} v = {load}; {pick('v', f'acc{u}')} }}" for u in range(L))
    same = "(v == m || (mn && v != v))" if is_float else "(v == m)"
    tests = "\n".join(f"      {{ {S} x = q[{u}]; {A} v = {load}; hit = hit | {same.replace('||', '|').replace('&&', '&')}; }}"
                      for u in range(L))
    tail = f"for (uint j = j0 + blocks * {L}u; j < j1; ++j) {{ {S} x = src[base + j]; {A} v = {load}; {pick('v', 'acc0')} }}"
    if is_float:
        pairs = [(u, u + s) for s in [L >> k for k in range(1, L.bit_length())] for u in range(s)]
        # The merge as comb() of min/max writes it: with the pick above, clang's SLP vectoriser
        # grouped the lanes of 32 or more into gathers (argmax of 1e6 float32 1.7x slower). A
        # lane's group goes with its value; of equal values, the earlier group.
        merge = "".join(f"  last{a} = acc{b} {cmp} acc{a} ? last{b} : acc{b} == acc{a} ? min(last{a}, last{b}) : last{a};\n"
                        f"  {_nan_merge(f'acc{a}', f'acc{b}', cmp)}\n" for a, b in pairs)
        best = ("".join(f"  uint last{u} = 0;\n" for u in range(L)) +
                f"  for (uint g = 0; g < blocks; g += {_ARG_GROUP}u) {{\n"
                f"    const uint gend = min(blocks, g + {_ARG_GROUP}u);\n" +
                "".join(f"    const {A} was{u} = acc{u};\n" for u in range(L)) +
                "    for (uint b = g; b < gend; ++b) {\n"
                f"      const device {S}* q = src + base + j0 + b * {L}u;\n{ind(steps, 6)}\n    }}\n" +
                "".join(f"    last{u} = acc{u} != was{u} ? g : last{u};\n" for u in range(L)) +
                "  }\n"
                f"  {{\n    const {A} was0 = acc0;\n    {tail}\n    last0 = acc0 != was0 ? blocks : last0;\n  }}\n"
                f"{merge}")
        start = "mn ? 0u : last0"
    else:  # one accumulator: integers reorder freely (given lanes, clang gathered across blocks)
        best = f"  for (uint j = j0; j < j1; ++j) {{ {S} x = src[base + j]; {A} v = {load}; {pick('v', 'acc0')} }}\n"
        start = "0u"
    return (f"  const uint blocks = (j1 - j0) / {L}u;\n{best}"
            f"  const {A} m = acc0;\n" + ("  const bool mn = m != m;\n" if is_float else "") +
            f"  const uint first = {start};\n"
            f"  uint j = j0 + first * {L}u;\n"
            "  for (uint b = first; b < blocks; ++b) {\n"
            f"    const device {S}* q = src + base + j0 + b * {L}u;\n"
            f"    bool hit = false;\n{tests}\n"
            f"    if (hit) break;\n    j += {L}u;\n  }}\n"
            f"  for (; j < j1; ++j) {{ {S} x = src[base + j]; {A} v = {load}; if {same} break; }}\n"
            "  kk0 = j;\n")


@functools.lru_cache(maxsize=None)
def _row_source(op: str, T: str, A: str, D: str, first: bool, final: bool, is_float: bool, ident: str,
                lanes: int) -> str:
    """inner == 1 on the CPU backend: thread (o, c) folds chunk c of row o, read contiguously. With
    lanes > 1, into that many independent accumulators (blocks of `lanes` elements, lane u taking
    element u of each), merged pairwise at the end, the chunk's last elements going into lane 0:
    for folds the host compiler may not reorder (float adds without fast math, NaN-propagating
    min/max), whose single accumulator is a serial chain; arg ops take two passes
    (_arg_two_passes). With lanes == 1, one loop the compiler vectorises itself where it may
    reorder (fast-math float sums, integers). Loops count by value, so that their stop checks
    leave them vectorisable (loop_strips.hpp: `ulong(j)` reads as a call that may write j)."""
    S = T if first else A
    load = _load(op, T, A, first)
    arg = op in _ARG
    L = lanes
    mean = f"  const {A} m = mean[o];\n" if op == "sqdev" and first else ""
    accs = "".join(f"  {A} acc{u} = {ident};" + (f" uint kk{u} = {_NONE};" if arg else "") + "\n"
                   for u in range(L))
    if arg:
        k = "j" if first else "kin[base + j]"
        tail = (f"{{ {S} x = src[base + j]; uint bk = {k}; {A} b = {load};\n"
                "      if (better(b, bk, acc0, kk0)) { acc0 = b; kk0 = bk; } }")
    else:
        tail = f"{{ {S} x = src[base + j]; acc0 = comb(acc0, {load}); }}"
    body = f"  for (uint j = j0; j < j1; ++j) {tail}\n"
    if L == 1 and op in ("min", "max") and is_float:  # compare and select, NaNs counted on the side
        body = ("  uint nans = 0;\n"
                f"  for (uint j = j0; j < j1; ++j) {{ {S} x = src[base + j]; {A} v = {load};\n"
                f"    nans |= v != v ? 1u : 0u; acc0 = v {'>' if op == 'max' else '<'} acc0 ? v : acc0; }}\n"
                f"  if (nans) acc0 = {A}(NAN);\n")
    if L > 1 and arg:  # the first stage only: partials carry their indices
        body = _arg_two_passes(op, load, S, A, is_float, L)
    elif L > 1:
        steps = "\n".join("    " + _lane_step(op, load, u, S, A, is_float) for u in range(L))
        body = (f"  const uint blocks = (j1 - j0) / {L}u;\n"
                "  for (uint b = 0; b < blocks; ++b) {\n"
                f"    const device {S}* q = src + base + j0 + b * {L}u;\n{steps}\n  }}\n"
                f"  for (uint j = j0 + blocks * {L}u; j < j1; ++j) {tail}\n"
                f"{_lane_merge(L)}")
    return (_thread_kernel_head(op, S, D, A, first, final, is_float) +
            "  const uint c = t % C, o = t / C;\n"
            "  const ulong base = ulong(o) * n;\n"
            "  const uint j0 = c * chunk, j1 = min(n, j0 + chunk);\n"
            f"{mean}{accs}{body}"
            f"  {A} acc = acc0;" + (" uint kk = kk0;" if arg else "") + "\n"
            "  const ulong out = ulong(o) * C + c;\n"
            f"  {_store(op, D, final)}\n}}\n")


@functools.lru_cache(maxsize=None)
def _group_source(op: str, T: str, A: str, D: str, first: bool, final: bool, is_float: bool,
                  ident: str, tg: int, w: int) -> str:
    """inner == 1: threadgroup (g, o) folds chunk g of row o; SIMD shuffles, then threadgroup
    memory across SIMD-groups. (Metal could use simd_min etc. where NaN does not matter.)"""
    S = T if first else A
    nw = tg // w
    load = _load(op, T, A, first)
    arg = op in _ARG
    mean = f"  const {A} m = mean[o];\n" if op == "sqdev" and first else ""
    if arg:
        # Four loads in flight per thread, then folded in index order (ties keep the first).
        k = "j + u * " + str(tg) if first else f"kin[base + j + u * {tg}]"
        loop = (f"  uint j = j0 + tid;\n"
                f"  for (; j + {3 * tg} < j1; j += {4 * tg}) {{\n"
                f"    {S} xs[4]; uint ks[4];\n"
                f"    for (uint u = 0; u < 4; ++u) {{ xs[u] = src[base + j + u * {tg}]; ks[u] = {k}; }}\n"
                f"    for (uint u = 0; u < 4; ++u) {{ {S} x = xs[u]; uint bk = ks[u]; {A} b = {load};\n"
                f"      if (better(b, bk, acc, kk)) {{ acc = b; kk = bk; }} }}\n  }}\n"
                f"  for (; j < j1; j += {tg}) {_step(op, load, first, 'j', S, A)}\n")
        shuffle = (f"    {{ {A} b = simd_shuffle_xor(acc, d); uint bk = simd_shuffle_xor(kk, d);\n"
                   "      if (better(b, bk, acc, kk)) { acc = b; kk = bk; } }\n")
    else:
        # Four loads in flight per thread before they are folded.
        loop = (f"  uint j = j0 + tid;\n"
                f"  for (; j + {3 * tg} < j1; j += {4 * tg}) {{\n"
                f"    {A} v[4];\n"
                f"    for (uint u = 0; u < 4; ++u) {{ {S} x = src[base + j + u * {tg}]; v[u] = {load}; }}\n"
                f"    acc = comb(acc, comb(comb(v[0], v[1]), comb(v[2], v[3])));\n  }}\n"
                f"  for (; j < j1; j += {tg}) {_step(op, load, first, 'j', S, A)}\n")
        shuffle = "    acc = comb(acc, simd_shuffle_xor(acc, d));\n"
    keep = "sk[sg] = kk; " if arg else ""
    reload = f"kk = lane < {nw} ? sk[lane] : {_NONE}; " if arg else ""
    return (cache.header() + _helpers(op, A, is_float) +
            "kernel void red(" + ",\n    ".join(_params(op, S, D, A, first, final)) +
            ",\n    uint2 gp [[threadgroup_position_in_grid]],"
            " uint tid [[thread_index_in_threadgroup]],\n"
            "    uint lane [[thread_index_in_simdgroup]], uint sg [[simdgroup_index_in_threadgroup]]) {\n"
            f"  threadgroup {A} sv[{nw}];\n  threadgroup uint sk[{nw}];\n"
            "  const uint c = gp.x, o = gp.y;\n"
            "  const ulong base = ulong(o) * n;\n"
            "  const uint j0 = c * chunk, j1 = min(n, j0 + chunk);\n"
            f"{mean}"
            f"  {A} acc = {ident}; uint kk = {_NONE};\n"
            f"{loop}"
            f"  for (ushort d = {w // 2}; d > 0; d >>= 1) {{\n{shuffle}  }}\n"
            f"  if (lane == 0) {{ sv[sg] = acc; {keep}}}\n"
            "  threadgroup_barrier(mem_flags::mem_threadgroup);\n"
            "  if (sg == 0) {\n"
            f"    acc = lane < {nw} ? sv[lane] : {ident}; {reload}\n"
            f"    for (ushort d = {w // 2}; d > 0; d >>= 1) {{\n  {shuffle}    }}\n"
            "    if (lane == 0) {\n"
            "      const ulong out = ulong(o) * C + c;\n"
            f"      {_store(op, D, final)}\n    }}\n  }}\n}}\n")


# Threadgroup size and the number of threadgroups a GPU reduction of a long row aims for: the
# best of a sweep on an H100 (sum of 1e7 and 1e8 float32, benchmarks/RESULTS.md). A pipeline that
# allows fewer threads per threadgroup gets the most it allows (cache.sized_kernel).
_TG = 512
_GROUPS = 2048


# Elements a chunk of a multi-chunk reduction is a multiple of.
_CHUNK_ALIGN = 16


def _chunks(dev: mc.Device, outer: int, n: int, inner: int, group: bool, width: int = 1) -> int:
    """How many chunks to split each row into (1: a single pass); `width`: columns a CPU
    work-item folds (_columns_source)."""
    rows = outer * -(-inner // width)
    if cache.uses_loops(dev):
        want, least = 64, max(1, 4096 // width)  # threads for 2-64 cores; elements a thread folds at least
    elif group:
        want, least = _GROUPS, _TG * 16
    else:
        want, least = 65536, 32  # threads in flight
    if n <= least or rows >= (want // 8 if group else want):  # enough rows to fill the device
        return 1
    return max(1, min(-(-n // least), -(-want // rows)))


@functools.lru_cache(maxsize=4096)
def _plan(dev: mc.Device, op: str, T: np.dtype, A: np.dtype, D: np.dtype, outer: int, n: int, inner: int,
          loops: bool) -> tuple[Any, ...]:
    """The kernels, grids and chunking of one reduction shape, worked out once (a call then only
    allocates and launches: Python time per call matters next to a 10 µs GPU reduction)."""
    arg = op in _ARG
    is_float = A.kind == "f"
    Ts, As = cache.msl_type(T), cache.msl_type(A)
    ident = _identity(op, A)
    group = inner == 1 and n >= 64 and not loops
    # The CPU's kernel for inner > 1: a work-item per block of `width` columns (_columns_source).
    width = _lanes(A) if loops and inner > 1 else 1
    c = _chunks(dev, outer, n, inner, group, width)
    chunk = -(-n // c) if n else 0
    if c > 1:
        # Chunks start on 64-byte lines (4-byte elements): the CPU's vector loads of a chunk that
        # started mid-line each straddled two lines (any of 1e7 float32 on 2 cores, 64 chunks:
        # 372 -> 275 µs; sum 291 -> 236 µs).
        chunk = -(-chunk // _CHUNK_ALIGN) * _CHUNK_ALIGN
        c = -(-n // chunk)
    # Fast math lets the compiler reassociate sums; NaN tests need it off (Metal's fast math
    # may assume there are no NaNs). A mean's partial sums are sums; its division, in the last
    # stage, stays exact.
    sums = op in ("sum", "prod", "any", "all")

    def kern(first: bool, final: bool) -> tuple[mc.Kernel, Any]:
        """The kernel of one stage and its threadgroup (None: the runtime's)."""
        fast = sums or (op == "mean" and not final)
        out_t = ("long" if arg else cache.msl_type(D)) if final else As
        if group:  # SIMD shuffles over the width the pipeline runs with, threadgroups its pipeline allows
            k, tg = cache.sized_kernel(dev, lambda tg, w: _group_source(op, Ts, As, out_t, first, final, is_float,
                                                                       ident, tg, w), "red", _TG, simd=True,
                                       fast_math=fast)
            return k, (tg, 1)
        if loops and inner == 1:
            # The compiler vectorises a fold it may reorder (fast math, integers) on its own; given
            # lanes, clang 16 vectorised across blocks with gathers instead (7x slower).
            long = (chunk if first else c) >= _LANES_FROM
            lanes = _lanes(A) if long and (first if arg else is_float and not fast) else 1
            source = _row_source(op, Ts, As, out_t, first, final, is_float, ident, lanes)
        elif loops:
            source = _columns_source(op, Ts, As, out_t, first, final, is_float, ident, width)
        else:
            source = _loop_source(op, Ts, As, out_t, first, final, is_float, ident)
        return cache.kernel(dev, source, "red", fast_math=fast), None

    def grid(stage: tuple[mc.Kernel, Any], chunks: int) -> Any:
        """One threadgroup per chunk of each row (group kernels), else one thread per output.
        A 1-D grid as an int: a call reads it faster than a tuple (~0.4 µs a call here)."""
        if group:
            return stage[1][0] * chunks if outer == 1 else (stage[1][0] * chunks, outer)
        return outer * chunks * -(-inner // width)

    def threads(stage: tuple[mc.Kernel, Any], chunks: int) -> Any:
        """The stage's threadgroup: the CPU's worker pool shares out whole threadgroups, and the
        runtime's own (up to 1024 threads) put a reduction of 64 chunks on one core."""
        if loops:
            return _cpu_threadgroup(outer * chunks * -(-inner // width))
        return stage[1][0] if group and outer == 1 else stage[1]

    if c == 1:
        k1 = kern(True, True)
        return (1, n, k1[0], grid(k1, 1), None, None, threads(k1, 1), None)
    if loops and op in ("any", "all") and outer * inner == 1:
        # One stage: the chunks that decide the answer store it (_decided_result).
        k1 = cache.kernel(dev, _decide_source(op, Ts), "red", fast_math=True)
        return (c, chunk, k1, c, None, None, _cpu_threadgroup(c), None)
    k1, k2 = kern(True, False), kern(False, True)
    return (c, chunk, k1[0], grid(k1, c), k2[0], grid(k2, 1), threads(k1, c), threads(k2, 1))


# An element's bits as the unsigned integer of its width, and the bits that make it nonzero: a
# float is nonzero when any bit but its sign is set (NaN included, -0.0 not).
_BITS = {"bool": ("uchar", "uchar(x)", None), "char": ("uchar", "as_type<uchar>(x)", None),
         "uchar": ("uchar", "x", None), "short": ("ushort", "as_type<ushort>(x)", None),
         "ushort": ("ushort", "x", None), "int": ("uint", "as_type<uint>(x)", None), "uint": ("uint", "x", None),
         "long": ("ulong", "as_type<ulong>(x)", None), "ulong": ("ulong", "x", None),
         "half": ("ushort", "as_type<ushort>(x)", "0x7fff"), "float": ("uint", "as_type<uint>(x)", "0x7fffffffu"),
         "double": ("ulong", "as_type<ulong>(x)", "0x7fffffffffffffffull")}


@functools.lru_cache(maxsize=None)
def _decide_source(op: str, T: str) -> str:
    """any/all of a whole array on the CPU in one stage: thread t folds chunk t's elements and,
    where the chunk decides the answer (any: a nonzero; all: a zero), stores it into the result,
    which starts as the answer no chunk decides (false; true). Without the second stage's call
    and partials buffer, mnp.any of 1e6 float32 took numba's time.

    The fold works on the elements' bits, one vector operation per vector of elements: any ORs
    them (nonzero: a value bit set in the OR), all takes their unsigned minimum with the sign bit
    cleared (a zero element makes it 0). A comparison turned into a flag per element took four
    (AVX-512: compare to a mask, mask to lanes, shift, OR), and any of 1e7 float32 ran slower
    than their sum."""
    U, bits, value = _BITS[T]
    if op == "any":
        init, step = f"{U}(0)", f"acc |= {bits};"
        test = f"({U}(acc & {value}) != {U}(0))" if value else f"(acc != {U}(0))"
        decided = "true"
    else:
        init = f"{U}(~{U}(0))"
        step = f"acc = min(acc, {U}({bits} & {value}));" if value else f"acc = min(acc, {U}({bits}));"
        test, decided = f"(acc == {U}(0))", "false"
    return (cache.header() +
            f"kernel void red(const device {T}* src [[buffer(0)]], device atomic_bool* dst [[buffer(1)]],\n"
            "    constant uint& n [[buffer(2)]], constant uint& chunk [[buffer(3)]],\n"
            "    uint t [[thread_position_in_grid]]) {\n"
            "  const uint j0 = t * chunk, j1 = min(n, j0 + chunk);\n"
            f"  {U} acc = {init};\n"
            f"  for (uint j = j0; j < j1; ++j) {{ {T} x = src[j]; {step} }}\n"
            f"  if {test} atomic_store_explicit(dst, {decided}, memory_order_relaxed);\n"
            "}\n")


_BOOL = np.dtype(np.bool_)


def _decided_result(dev: mc.Device, op: str) -> mc.Buffer:
    """_decide_source's result before its kernel: the answer when no chunk decides it."""
    out = dev.zeros(1, _BOOL)  # false
    if op == "all":
        memoryview(out)[0] = True  # CPU memory: the host writes it in place (0.2 µs; through NumPy 0.4)
    return out


def _cpu_threadgroup(threads: int) -> int:
    """Threads per threadgroup of a loop kernel on the CPU: about 32 threadgroups to share out
    (a worker takes whole ones), at most 1024."""
    return max(1, min(1024, threads // 32))


def _run_here(k: mc.Kernel, grid: Any, *args: Any, threadgroup: Any = None) -> None:
    """A stage on the CPU backend, waited for: the waiting thread runs queued work itself
    (cpu_queue.hpp), where a stage left to the queue's executor thread shared the cores with the
    pool's workers and the caller (mnp.any of 1e7 float32 on 2 cores: 856 -> 624 µs, docs/design.md).
    A call recorded in a `dev.batch()` runs when the batch is committed: it is kept, as launch() does."""
    done = k(grid, *args, threadgroup=threadgroup)
    try:
        done.wait()
    except mc.ArgumentError:  # recorded in a batch not committed yet (nothing was waited for)
        cache.keep(done)


def _run(dev: mc.Device, src: mc.Buffer, op: str, T: np.dtype, A: np.dtype, D: np.dtype,
         outer: int, n: int, inner: int, extra: list[Any]) -> mc.Buffer:
    """One reduction (one or two stages); `extra` holds the mean buffer and/or divisor."""
    loops = cache.uses_loops(dev)
    return _run_planned(dev, src, op, T, A, D, loops, _plan(dev, op, T, A, D, outer, n, inner, loops),
                        outer, n, inner, extra)


def _run_planned(dev: mc.Device, src: mc.Buffer, op: str, T: np.dtype, A: np.dtype, D: np.dtype, loops: bool,
                 plan: tuple[Any, ...], outer: int, n: int, inner: int, extra: list[Any]) -> mc.Buffer:
    c, chunk, k1, grid1, k2, grid2, tg1, tg2 = plan
    launch = _run_here if loops else cache.launch
    if k2 is None and c > 1:  # any/all on the CPU in one stage (_decide_source); n > 0 here
        out = _decided_result(dev, op)
        launch(k1, grid1, src, out, n, chunk, threadgroup=tg1)
        return out
    out = dev._empty(outer * inner, D)
    if not src.nbytes:
        src = cache.empty(dev, 1, T, zeroed=True)  # kernels refuse empty buffers; never read
    if not extra and op not in _ARG:  # the common cases, kept short: Python time counts here
        if c == 1:
            launch(k1, grid1, src, out, n, inner, n, 1, threadgroup=tg1)
        else:
            part = dev._empty(outer * c * inner, A)
            launch(k1, grid1, src, part, n, inner, chunk, c, threadgroup=tg1)
            launch(k2, grid2, part, out, c, inner, c, 1, threadgroup=tg2)
        return out
    mean = [x for x in extra if isinstance(x, mc.Buffer)]
    # The divisor in the accumulator's type, as raw bytes: a `constant double&` takes no number.
    div = [np.array(x, A).tobytes() for x in extra if not isinstance(x, mc.Buffer)]
    arg = op in _ARG
    dummy = [cache.empty(dev, 1, np.uint32)] if arg else []
    if c == 1:
        launch(k1, grid1, src, out, *dummy, *dummy, *mean, n, inner, n, 1, *div, threadgroup=tg1)
        return out
    part = cache.empty(dev, outer * c * inner, A)
    kpart = [cache.empty(dev, outer * c * inner, np.uint32)] if arg else []
    launch(k1, grid1, src, part, *dummy, *kpart, *mean, n, inner, chunk, c, *div, threadgroup=tg1)
    launch(k2, grid2, part, out, *kpart, *dummy, c, inner, c, 1, *div, threadgroup=tg2)
    return out


def reduce(dev: mc.Device, src: mc.Buffer, dtype: Any, outer: int, n: int, inner: int, op: str,
           out_dtype: Any) -> mc.Buffer:
    """Reduces the (outer, n, inner) array in `src` over n with `op`; a flat Buffer of
    outer * inner elements of out_dtype (int64 for argmin/argmax)."""
    key = (dev, op, dtype, out_dtype, outer, n, inner)
    ready = _READY.get(key)
    if ready is None:
        if op not in OPS:
            raise mc.ArgumentError(f"unknown reduction {op!r}; expected one of {', '.join(OPS)}")
        T, D, A = _types(op, dtype, out_dtype)
        if n == 0 and op in _NO_IDENTITY and outer * inner:
            raise mc.ArgumentError(_NO_IDENTITY[op])
        if outer * inner == 0:
            return cache.empty(dev, 0, D)
        loops = cache.uses_loops(dev)
        ready = (T, A, D, loops, _plan(dev, op, T, A, D, outer, n, inner, loops))
        if len(_READY) > 4096:
            _READY.clear()
        _READY[key] = ready
    return _run_planned(dev, src, op, *ready, outer, n, inner, ())


# reduce()'s shapes seen, each with its types and plan: one dictionary lookup a call (Python time
# is in series with a short GPU reduction).
_READY: dict = {}


def whole(dev: mc.Device, src: mc.Buffer, dtype: Any, n: int, op: str, out_dtype: Any) -> mc.Buffer:
    """reduce() of a whole array (outer = inner = 1) to one element: `float(mnp.sum(x))`. A runner
    made once per device, op, types and size launches the stages without reduce()'s layers (on
    the 2-core box 0.85 µs of its 2.6 for 1000 float32; this Python is in series with a ~10 µs
    GPU reduction, and several times slower on the H200's host)."""
    run = _WHOLE.get((id(dev), op, dtype, out_dtype, n))  # id: a Device's hash is a C++ call (~70 ns); the runner holds dev
    if run is None:
        run = _whole_runner(dev, op, dtype, out_dtype, n)
    return run(src)


_WHOLE: dict = {}


def _whole_runner(dev: mc.Device, op: str, dtype: Any, out_dtype: Any, n: int) -> Callable[[mc.Buffer], mc.Buffer]:
    if op == "mean":
        return _whole_mean_runner(dev, dtype, out_dtype, n)
    if op not in OPS or n == 0:  # reduce() says what is wrong, or fills an empty array's result
        return lambda src: reduce(dev, src, dtype, 1, n, 1, op, out_dtype)
    T, D, A = _types(op, dtype, out_dtype)
    loops = cache.uses_loops(dev)
    plan = _plan(dev, op, T, A, D, 1, n, 1, loops)
    c, chunk, k1, grid1, k2, grid2, tg1, tg2 = plan
    launch = _run_here if loops else cache.launch
    empty = dev._empty
    if op in _ARG:
        def run(src: mc.Buffer) -> mc.Buffer:
            return _run_planned(dev, src, op, T, A, D, loops, plan, 1, n, 1, ())
    elif k2 is None and c > 1:  # any/all on the CPU in one stage (_decide_source), _run_here inlined (a Python
        # call less in a 1e6 any that must stay within 1.11x numba's whole call; keep the two alike)
        def run(src: mc.Buffer) -> mc.Buffer:
            out = _decided_result(dev, op)
            done = k1(grid1, src, out, n, chunk, threadgroup=tg1)
            try:
                done.wait()
            except mc.ArgumentError:  # recorded in a batch not committed yet
                cache.keep(done)
            return out
    elif c == 1:
        def run(src: mc.Buffer) -> mc.Buffer:
            out = empty(1, D)
            launch(k1, grid1, src, out, n, 1, n, 1, threadgroup=tg1)
            return out
    else:
        def run(src: mc.Buffer) -> mc.Buffer:
            out, part = empty(1, D), empty(c, A)
            launch(k1, grid1, src, part, n, 1, chunk, c, threadgroup=tg1)
            launch(k2, grid2, part, out, c, 1, c, 1, threadgroup=tg2)
            return out
    return _keep_whole(dev, op, dtype, out_dtype, n, run)


def _keep_whole(dev: mc.Device, op: str, dtype: Any, out_dtype: Any, n: int,
                run: Callable[[mc.Buffer], mc.Buffer]) -> Callable[[mc.Buffer], mc.Buffer]:
    if len(_WHOLE) > 4096:
        _WHOLE.clear()
    _WHOLE[(id(dev), op, dtype, out_dtype, n)] = run
    return run


def _whole_mean_runner(dev: mc.Device, dtype: Any, out_dtype: Any, n: int) -> Callable[[mc.Buffer], mc.Buffer]:
    """whole()'s runner for the mean of n > 0 elements: mean()'s stages, whose last divides, with
    the divisor's bytes made once (through mean() and _run_planned, the Python around the same
    kernels took ~7 µs of `float(mnp.mean(x))` on the 2-core box, against `float(mnp.sum(x))`'s ~1)."""
    T, D = np.dtype(dtype), np.dtype(out_dtype)
    if n == 0 or D.kind != "f":  # mean() says what is wrong
        return lambda src: mean(dev, src, dtype, 1, n, 1, out_dtype)
    A = cache.accumulator(D)
    loops = cache.uses_loops(dev)
    c, chunk, k1, grid1, k2, grid2, tg1, tg2 = _plan(dev, "mean", T, A, D, 1, n, 1, loops)
    launch = _run_here if loops else cache.launch
    empty = dev._empty
    div = np.array(float(n), A).tobytes()  # a `constant` float or double& takes raw bytes
    if c == 1:
        def run(src: mc.Buffer) -> mc.Buffer:
            out = empty(1, D)
            launch(k1, grid1, src, out, n, 1, n, 1, div, threadgroup=tg1)
            return out
    else:
        def run(src: mc.Buffer) -> mc.Buffer:
            out, part = empty(1, D), empty(c, A)
            launch(k1, grid1, src, part, n, 1, chunk, c, div, threadgroup=tg1)
            launch(k2, grid2, part, out, c, 1, c, 1, div, threadgroup=tg2)
            return out
    return _keep_whole(dev, "mean", dtype, out_dtype, n, run)


@functools.lru_cache(maxsize=1024)
def _types(op: str, dtype: Any, out_dtype: Any) -> tuple[np.dtype, np.dtype, np.dtype]:
    """(source, result, accumulator) dtypes of a reduction."""
    T = np.dtype(dtype)
    D = np.dtype(np.int64) if op in _ARG else np.dtype(out_dtype)
    if op in ("any", "all"):
        D = np.dtype(np.bool_)
    return T, D, _acc_type(op, T, D)


def _convert(dev: mc.Device, src: mc.Buffer, count: int, src_dtype: np.dtype,
             dst_dtype: np.dtype) -> mc.Buffer:
    if src_dtype == dst_dtype:
        return src
    S, D = cache.msl_type(src_dtype), cache.msl_type(dst_dtype)
    source = (cache.header() + f"kernel void cvt(const device {S}* a [[buffer(0)]], device {D}* b [[buffer(1)]],"
              " uint i [[thread_position_in_grid]]) { b[i] = " + D + "(a[i]); }\n")
    out = cache.empty(dev, count, dst_dtype)
    if count:
        cache.launch(cache.kernel(dev, source, "cvt"), count, src, out)
    return out


def mean(dev: mc.Device, src: mc.Buffer, dtype: Any, outer: int, n: int, inner: int, out_dtype: Any) -> mc.Buffer:
    """The mean over n (n > 0) of the (outer, n, inner) array in `src`, as one reduction whose last
    stage divides by n: accumulated in out_dtype (float for half), stored as out_dtype."""
    T, D = np.dtype(dtype), np.dtype(out_dtype)
    if D.kind != "f":
        raise mc.ArgumentError(f"mean needs a floating out_dtype, got {D}")
    if outer * inner == 0:
        return cache.empty(dev, 0, D)
    return _run(dev, src, "mean", T, cache.accumulator(D), D, outer, n, inner, [float(n)])


def moments(dev: mc.Device, src: mc.Buffer, dtype: Any, outer: int, n: int, inner: int,
            correction: float, out_dtype: Any) -> tuple[mc.Buffer, mc.Buffer]:
    """Mean and variance (sum of squared deviations / max(n - correction, 0)) over n, two-pass:
    the mean first, then the squared deviations from it, both accumulated in out_dtype (float
    for half). n == 0 gives NaN, as NumPy does."""
    T, D = np.dtype(dtype), np.dtype(out_dtype)
    if D.kind != "f":
        raise mc.ArgumentError(f"moments need a floating out_dtype, got {D}")
    A = cache.accumulator(D)
    if outer * inner == 0:
        return cache.empty(dev, 0, D), cache.empty(dev, 0, D)
    mean = _run(dev, src, "mean", T, A, A, outer, n, inner, [float(n)])
    var = _run(dev, src, "sqdev", T, A, D, outer, n, inner, [mean, max(float(n) - float(correction), 0.0)])
    return _convert(dev, mean, outer * inner, A, D), var
