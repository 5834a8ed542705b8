"""The CPU backend's reduction kernels: rows folded in accumulator lanes (arg ops in two
passes), blocks of columns for an inner axis, and whole-array any/all in one stage that
stores the deciding answer (reduce.py plans and launches them)."""

from __future__ import annotations

import functools

import numpy as np

from . import cache
from .reduce_source import _ARG, _NONE, _load, _store, _thread_kernel_head


# A half's value as a float from its bits, in integer operations, masks and one exact int-to-float
# conversion (zeros and subnormals), which the host compiler vectorises: clang 16 converted each
# half of the lanes on its own (vcvtph2ps of one element), and a single pass over 2^20 float16
# took 1.68 ms for max, 33x float32's; with selects (`?:`) here it stayed scalar and branched
# (1.63 ms); with masks 0.17 ms. No subnormal float appears, so flushing them (DAZ) changes nothing.
_HALF_BITS_FLOAT = """inline float half_bits_float(ushort h) {
  const uint a = uint(h & 0x7fffu), sign = uint(h & 0x8000u) << 16;
  const uint large = ((a << 13) + (112u << 23)) | (0x7f800000u & (0u - uint(a >= 0x7c00u)));
  const uint small = 0u - uint(a < 0x400u);
  return as_type<float>(((as_type<uint>(float(a) * 0x1p-24f) & small) | (large & ~small)) | sign);
}
"""


def _reads_half_bits(op: str, T: str, A: str, first: bool) -> bool:
    """Whether a first stage compares halves as floats made from their bits (half_bits_float)."""
    return first and T == "half" and A == "float" and op in ("min", "max") + _ARG


def _cpu_load(op: str, T: str, A: str, first: bool) -> str:
    """_load, with halves read by their bits where they are compared (_reads_half_bits)."""
    return "half_bits_float(as_type<ushort>(x))" if _reads_half_bits(op, T, A, first) else _load(op, T, A, first)


def _cpu_kernel_head(op: str, T: str, S: str, D: str, A: str, first: bool, final: bool, is_float: bool) -> str:
    """_thread_kernel_head, with half_bits_float defined where _cpu_load calls it."""
    return _thread_kernel_head(op, S, D, A, first, final, is_float,
                               _HALF_BITS_FLOAT if _reads_half_bits(op, T, A, first) else "")


@functools.lru_cache(maxsize=None)
def _columns_source(op: str, T: str, A: str, D: str, first: bool, final: bool, is_float: bool,
                    ident: str, W: int) -> str:
    """inner > 1 on the CPU backend: work-item (b, c, o) folds columns [W b, W b + W) of row o
    (fewer in the last block) over chunk c of n, one accumulator per column, reading each step's
    W contiguous elements (a work-item per column strode by `inner` between elements, which no
    compiler vectorises: a sum over axis 0 of 1000 x 1000 float32 took 7x NumPy's time)."""
    S = T if first else A
    load = _cpu_load(op, T, A, first)
    arg = op in _ARG
    mean = f" const {A} m = mean[ulong(o) * inner + i0 + u];" if op == "sqdev" and first else ""
    if arg:
        k = "j" if first else "kin[at]"
        step = (f"{{ const ulong at = base + ulong(j) * inner + u; {S} x = src[at];{mean} uint bk = {k}; {A} b = {load};"
                " if (better(b, bk, accs[u], kks[u])) { accs[u] = b; kks[u] = bk; } }")
    elif op in ("min", "max") and is_float:  # compare and select, NaN taken in: vectorisable
        cmp = "<" if op == "min" else ">"
        step = (f"{{ {S} x = row[u];{mean} {A} v = {load}; accs[u] = ((v {cmp} accs[u]) | (v != v)) ? v : accs[u]; }}")
    else:
        step = f"{{ {S} x = row[u];{mean} accs[u] = comb(accs[u], {load}); }}"
    loop = (f"for (uint j = j0; j < j1; ++j) {{\n"
            f"      const device {S}* row = src + base + ulong(j) * inner;\n"
            f"      for (uint u = 0; u < @N@; ++u) {step}\n    }}")
    return (_cpu_kernel_head(op, T, S, D, A, first, final, is_float) +
            f"  const uint blocks = (inner + {W}u - 1) / {W}u;\n"
            "  const uint b = t % blocks, c = (t / blocks) % C, o = t / blocks / C;\n"
            f"  const uint i0 = b * {W}u, nw = min(uint({W}), inner - i0);\n"
            "  const ulong base = ulong(o) * n * inner + i0;\n"
            "  const uint j0 = c * chunk, j1 = min(n, j0 + chunk);\n"
            f"  {A} accs[{W}];" + (f" uint kks[{W}];" if arg else "") + "\n"
            f"  for (uint u = 0; u < {W}u; ++u) {{ accs[u] = {ident};" + (f" kks[u] = {_NONE};" if arg else "") + " }\n"
            f"  if (nw == {W}u) {{\n    {loop.replace('@N@', f'{W}u')}\n  }} else {{\n    {loop.replace('@N@', 'nw')}\n  }}\n"
            "  for (uint u = 0; u < nw; ++u) {\n"
            f"    {A} acc = accs[u];" + (" uint kk = kks[u];" if arg else "") + "\n"
            "    const ulong out = (ulong(o) * C + c) * inner + i0 + u;\n"
            f"    {_store(op, D, final)}\n  }}\n}}\n")


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
    load = _cpu_load(op, T, A, first)
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
    return (_cpu_kernel_head(op, T, S, D, A, first, final, is_float) +
            "  const uint c = t % C, o = t / C;\n"
            "  const ulong base = ulong(o) * n;\n"
            "  const uint j0 = c * chunk, j1 = min(n, j0 + chunk);\n"
            f"{mean}{accs}{body}"
            f"  {A} acc = acc0;" + (" uint kk = kk0;" if arg else "") + "\n"
            "  const ulong out = ulong(o) * C + c;\n"
            f"  {_store(op, D, final)}\n}}\n")


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
