"""Elementwise fusion: lazy expression nodes and the generator that turns a DAG of them into
ONE MSL kernel (each distinct input read once per element, each output written once).

Design (docs/numpy.md "Fusion"): every elementwise operation returns a lazy ndarray holding an
Op node; nothing runs until a buffer is needed (a non-elementwise op, host access, printing,
`.evaluate()`, `mnp.evaluate(...)`). A node's graph is bounded (MAX_NODES operations,
MAX_INPUTS buffers): past that, the biggest lazy operand is evaluated first. An evaluated
node keeps its buffer, so other expressions sharing it read the result instead of recomputing.
Before any write into a buffer (setitem, in-place operators, host views) the lazy arrays that
read it are evaluated, so laziness never changes results."""

from __future__ import annotations

import contextlib
import functools
import weakref

import numpy as np

import metalcall as mc
from metalcall import _core

from . import _dtypes as D
from . import _ops
from . import _runtime as R

MAX_NODES = 64
MAX_INPUTS = 16  # Metal allows 31 buffer arguments: inputs + scalars + params + one output stay under;
# run() splits multi-output kernels that would not
KERNEL_NAME = "mnp_fused"

class _LiveLazy:
    """Every lazy ndarray alive, by id (ndarray is unhashable, as NumPy's is), to evaluate the
    ones reading a buffer before it is written. Weak references without callbacks: a
    WeakValueDictionary runs Python code of its own on each insert and death (~2 µs of an
    elementwise operation's ~7). Dead entries are skipped, and pruned when the table doubles; an
    id a new array takes replaces the dead entry."""

    def __init__(self):
        self._refs = {}
        self._limit = 256

    def add(self, arr):
        self._refs[id(arr)] = weakref.ref(arr)
        if len(self._refs) > self._limit:
            self._grown()

    def _grown(self):
        """Past the limit: drops the dead entries (cpp/python/lazy_nodes.cpp calls it too)."""
        refs = self._refs
        if len(refs) > self._limit:
            for k in [k for k, r in refs.items() if r() is None]:
                del refs[k]
            self._limit = max(256, 2 * len(refs))

    def discard(self, arr):
        """Forgets `arr` (not another array that took the id of a dead one)."""
        r = self._refs.get(id(arr))
        if r is not None and r() is arr:
            del self._refs[id(arr)]

    def items(self):
        """(id, array) of the live ones, as a list (safe to evaluate them while iterating)."""
        out = []
        for k, r in list(self._refs.items()):
            a = r()
            if a is not None:
                out.append((k, a))
        return out

    def values(self):
        return [a for _, a in self.items()]


# Every lazy ndarray alive (_array.flush_readers evaluates the ones reading a buffer before it is written).
_LIVE_LAZY = _LiveLazy()

# Whether new elementwise results stay lazy (_array.lazy_array reads it; mnp.lazy sets it).
_config = {"lazy": True}


@contextlib.contextmanager
def lazy(enabled=True):
    """``with mnp.lazy(False):`` evaluates every elementwise operation at once (one kernel each):
    for debugging and timing single operations. Lazy fusion is the default."""
    old = _config["lazy"]
    _config["lazy"] = bool(enabled)
    try:
        yield
    finally:
        _config["lazy"] = old


@functools.lru_cache(maxsize=4096)
def contiguous_strides(shape):
    strides, acc = [], 1
    for n in reversed(shape):
        strides.append(acc)
        acc *= max(n, 1)
    return tuple(reversed(strides))


def is_c_layout(shape, strides):
    """True if strides walk shape C-contiguously (dimensions of size 1 may have any stride)."""
    if strides == contiguous_strides(tuple(shape)):
        return True
    return all(st == cs for n, st, cs in zip(shape, strides, contiguous_strides(tuple(shape))) if n != 1)


def prod(shape):
    n = 1
    for s in shape:
        n *= s
    return n


class Leaf:
    """A materialised array read by an expression: buffer, element offset, shape, strides."""

    __slots__ = ("buf", "offset", "shape", "strides", "dtype", "_ids")
    size = 1

    def __init__(self, buf, offset, shape, strides, dtype):
        self.buf, self.offset, self.shape, self.strides, self.dtype = buf, offset, shape, strides, dtype
        self._ids = None

    @property
    def leaf_ids(self):
        """Made when asked: only expressions past MAX_INPUTS leaves need it (an operation makes a Leaf per array operand)."""
        if self._ids is None:
            self._ids = frozenset(((id(self.buf), self.offset, self.shape, self.strides),))
        return self._ids


class Scalar:
    """A Python scalar operand, passed to the kernel as a `constant T&` argument (values never enter
    the source, so `x * 2.5` and `x * 3.5` share one compiled kernel)."""

    __slots__ = ("value", "dtype")
    size = 1
    shape = ()
    leaf_ids = frozenset()

    def __init__(self, value, dtype):
        self.value, self.dtype = value, dtype


class Op:
    """One elementwise operation. `ct` is the dtype its operands are cast to; `buf` is set once
    the node has been evaluated into a contiguous buffer of `shape`."""

    __slots__ = ("op", "args", "dtype", "ct", "shape", "buf", "size", "_ids", "__weakref__")

    def __init__(self, op, args, dtype, ct, shape):
        args = tuple(args)
        self.op, self.args, self.dtype, self.ct, self.shape = op, args, dtype, ct, tuple(shape)
        self.buf = self._ids = None
        size = 1
        for a in args:  # Op has no subclasses: a type test is the cheaper
            size += 1 if type(a) is Op and a.buf is not None else a.size
        self.size = size

    @property
    def leaf_ids(self):
        """The distinct input views below, made when first asked (as they are then): a node of at most
        MAX_INPUTS nodes has no more inputs than that, and nobody asks."""
        if self._ids is None:
            ids = frozenset()
            for a in self.args:
                ids = ids | _leaf_ids(a)
            self._ids = ids
        return self._ids


def _leaf_ids(node):
    """The distinct input views (buffer id, offset, shape, strides) an expression reads, as it was
    built (an upper bound on the inputs of its kernel: used to keep kernels within MAX_INPUTS)."""
    if isinstance(node, Op) and node.buf is not None:
        return frozenset(((id(node.buf), 0, node.shape, None),))
    return node.leaf_ids


def reads_buffer(node, buf, seen=None):
    """True if evaluating node now would read buf (evaluated subexpressions read their buffers)."""
    if seen is None:
        seen = set()
    if id(node) in seen:
        return False
    seen.add(id(node))
    if isinstance(node, Leaf):
        return node.buf is buf
    if isinstance(node, Op):
        if node.buf is not None:
            return node.buf is buf
        return any(reads_buffer(a, buf, seen) for a in node.args)
    return False


def _as_leaf(node):
    """A node as the generator sees it: an evaluated Op reads its buffer."""
    if isinstance(node, Op) and node.buf is not None:
        return Leaf(node.buf, 0, node.shape, contiguous_strides(node.shape), node.dtype)
    return node


def broadcast_strides(shape, strides, out_shape):
    if shape == out_shape and 1 not in shape:
        return strides  # no broadcasting: the strides as they are
    nd = len(out_shape)
    pad = nd - len(shape)
    res = [0] * nd
    for k in range(len(shape)):
        if shape[k] != 1:
            res[pad + k] = strides[k]
    return tuple(res)


# ----------------------------------------------------------------------------- generation


_SOURCES: dict = {}


def _contiguous_index(kind, offset):
    """The element an operand of `kind` gives thread i: "c0" is C-contiguous from element 0 of its
    buffer (indexed by i alone, so that CUDA's coarsened launch can load four threads' elements
    as one vector), "c" from `offset`, "z" and the strided "s", "sb", "su" (broadcast, strided)
    at `offset` (computed per thread)."""
    if kind == "c0":
        return "i"
    return f"{offset} + i" if kind == "c" else offset


def _generate(device, nd, entries, outs, fours):
    """(source, strided, rows, vec) from a walk's entries; outs: ((slot, out dtype, kind), ...); fours:
    the element count is a positive multiple of 4. vec: the source is the four-elements-a-thread
    form (_four_a_thread), decided here once per structure. Cached."""
    key = (device, nd, entries, outs, fours)
    hit = _SOURCES.get(key)
    if hit is None:
        if len(_SOURCES) > 4096:
            _SOURCES.clear()
        vec = fours and _four_a_thread(device, entries, outs)
        hit = _SOURCES[key] = _Source(device.backend, nd, vec).text(entries, outs) + (vec,)
    return hit


def _rows_grid(backend, nd, strided, vec):
    """Whether a kernel with strided operands runs on a 2-D grid (the last dimension, the rest) on
    the CPU backend: an element's position in the last dimension is then the thread's x, and the
    rest's coordinates, computed from y by division, stay the same along a row (the thread loop
    over x lifts them out). With a 1-D grid every element divided its index by each dimension's
    size: `x[:, None] * y[None, :]` of 1000 float32 each took 3.9 ms, 0.59 ms on the 2-D grid."""
    return backend == "cpu" and nd >= 2 and bool(strided) and not vec


# Precise trigonometry: CUDA's sinf, cosf and tanf branch to a long argument reduction for large
# arguments, so the translator gives their kernels no coarsened entry (four positions a thread in
# sequence ran slower than one: docs/design.md, "Straight-line kernels"), and one element a thread
# left `sin(x) * y + 2` at 1e8 float32 at 1.09x CuPy's ElementwiseKernel. Four elements a thread
# read and written as 4-vectors before and after the four computations took 300 µs against 502
# one a thread and 492 for CuPy's (H200, 2026-12-04, .devcarry/s14/sin_variants.py).
_PRECISE_TRIG = ("sin", "cos", "tan")
# Element types with a 4-vector in MSL that one 8- or 16-byte access moves.
_VECTOR_KINDS = ("f4", "f2", "i4", "u4", "i2", "u2")


def _four_a_thread(device, entries, outs):
    """Whether a CUDA kernel of a multiple of 4 elements should run four elements a thread with
    vector loads and stores: it computes precise trig, and its operands are whole C-contiguous
    buffers (or broadcast scalars) of types with 4-vectors. The buffers' alignment is checked by
    the runtime at the call (an unaligned one, only possible for another library's memory, falls
    back to the scalar kernel: run)."""
    if device.backend != "cuda" or device.checked:
        return False
    if not any(e[0] == "op" and e[1] in _PRECISE_TRIG for e in entries):
        return False

    def vectorable(dt):
        return f"{dt.kind}{dt.itemsize}" in _VECTOR_KINDS

    for e in entries:
        if e[0] == "in" and (e[3] not in ("c0", "z") or (e[3] == "c0" and not vectorable(e[2]))):
            return False
    return all(kind == "c0" and vectorable(dt) for _, dt, kind in outs)


class _Source:
    def __init__(self, backend, nd, vec=False):
        self.backend = backend
        self.g = _ops.Gen(backend)
        self.nd = nd
        self.vec = vec

    def cast(self, v, frm, to):
        if frm == to:
            return v
        return _ops.expr(self.g, "cast", frm, [v], to)

    def text(self, entries, outs):
        names, lines, ins, scs = [], [], [], []
        count = 0
        for e in entries:
            if e[0] == "in":
                _, k, dt, kind = e
                name = f"v{k}"
                if self.vec and kind == "c0":  # component @C@ of the thread's 4-vector w{k}
                    lines.append(f"  {D.msl(dt)} {name} = w{k}.@C@;")
                else:
                    idx = _contiguous_index(kind, f"o{k}")
                    lines.append(f"  {D.msl(dt)} {name} = in{k}[{idx}];")
                ins.append((dt, kind))
            elif e[0] == "sc":
                name = f"s{e[1]}"
                scs.append(e[2])
            else:
                _, op, dt, ct, children = e
                args = [names[c] for c in children]
                adts = [entries[c][2] for c in children]
                if op == "cast":
                    x = _ops.expr(self.g, "cast", adts[0], [args[0]], dt)
                elif op == "where":
                    cast = [self.cast(args[0], adts[0], D.bool_)]
                    cast += [self.cast(v, a, ct) for v, a in zip(args[1:], adts[1:])]
                    x = _ops.expr(self.g, op, ct, cast, dt)
                else:
                    x = _ops.expr(self.g, op, ct, [self.cast(v, a, ct) for v, a in zip(args, adts)], dt)
                name = f"t{count}"
                count += 1
                lines.append(f"  {D.msl(dt)} {name} = {x};")
            names.append(name)
        nin, nout, nd = len(ins), len(outs), self.nd
        params, b = [], 0
        vector = "4" if self.vec else ""
        for k, (dt, kind) in enumerate(ins):
            params.append(f"device const {D.msl(dt)}{vector if kind == 'c0' else ''}* in{k} [[buffer({b})]]")
            b += 1
        for k, dt in enumerate(scs):
            params.append(f"constant {D.msl(dt)}& s{k} [[buffer({b})]]")
            b += 1
        params.append(f"constant long* P [[buffer({b})]]")
        b += 1
        for k, (_, dt, _) in enumerate(outs):
            params.append(f"device {D.msl(dt)}{vector}* out{k} [[buffer({b})]]")
            b += 1
        # P layout: input offsets, output offsets, shape, then strides of every strided input/output.
        sh = nin + nout
        st = sh + nd
        strided = [("in", k) for k, (_, kind) in enumerate(ins) if kind[0] == "s"]
        strided += [("out", k) for k, (_, _, kind) in enumerate(outs) if kind[0] == "s"]
        rows = _rows_grid(self.backend, nd, strided, self.vec)
        if rows:
            params.append("uint2 g [[thread_position_in_grid]]")
            body = [f"  ulong i = ulong(g.y) * ulong(P[{sh + nd - 1}]) + g.x;"]
        else:
            params.append("uint gid [[thread_position_in_grid]]")
            body = ["  ulong i = gid;"]
        for k in range(nin):
            body.append(f"  long o{k} = P[{k}];")
        for k in range(nout):
            body.append(f"  long q{k} = P[{nin + k}];")
        if strided:
            body.append(f"  {{ ulong r = {'g.y' if rows else 'i'};")
            for d in reversed(range(nd)):
                if rows and d == nd - 1:
                    body.append("    { ulong c = g.x;")
                elif d == 0:  # the outermost coordinate is what is left
                    body.append("    { ulong c = r;")
                else:
                    body.append(f"    {{ ulong c = r % ulong(P[{sh + d}]); r /= ulong(P[{sh + d}]);")
                for j, (io, k) in enumerate(strided):
                    var = f"o{k}" if io == "in" else f"q{k}"
                    kind = ins[k][1] if io == "in" else outs[k][2]
                    if rows and d == nd - 1 and kind == "sb":
                        continue  # a row's elements are one value: the thread loop reads it once
                    if rows and d == nd - 1 and kind == "su":
                        body.append(f"      {var} += long(c);")  # contiguous along the row: vectorisable
                        continue
                    body.append(f"      {var} += long(c) * P[{st + j * nd + d}];")
                body.append("    }")
            body.append("  }")
        if self.vec:
            body += self._four_copies(lines, ins, outs, names, entries)
        else:
            body += lines
            for k, (slot, dt, kind) in enumerate(outs):
                idx = _contiguous_index(kind, f"q{k}")
                body.append(f"  out{k}[{idx}] = {self.cast(names[slot], entries[slot][2], dt)};")
        helpers = "\n".join(self.g.helpers.values())
        src = ("#include <metal_stdlib>\nusing namespace metal;\n"
               + (helpers + "\n" if helpers else "")
               + f"kernel void {KERNEL_NAME}(" + ",\n    ".join(params) + ") {\n" + "\n".join(body) + "\n}\n")
        return D.declare_types(src), tuple(strided), rows


    def _four_copies(self, lines, ins, outs, names, entries):
        """Thread gid's elements 4 gid ... 4 gid + 3: every contiguous input read as one 4-vector,
        the computation four times (a block each, on the vectors' components), the results
        written as one 4-vector per output: the loads and stores stay together in one basic block,
        where NVVM makes them 16-byte accesses (with the computations between, CUDA's precise trig
        branches kept it from merging four scalar ones)."""
        body = [f"  const {D.msl(dt)}4 w{k} = in{k}[gid];" for k, (dt, kind) in enumerate(ins) if kind == "c0"]
        body += [f"  {D.msl(dt)} r{k}_0, r{k}_1, r{k}_2, r{k}_3;" for k, (_, dt, _) in enumerate(outs)]
        for c, comp in enumerate("xyzw"):
            body.append("  {")
            body += ["  " + line.replace("@C@", comp) for line in lines]
            body += [f"    r{k}_{c} = {self.cast(names[slot], entries[slot][2], dt)};"
                     for k, (slot, dt, _) in enumerate(outs)]
            body.append("  }")
        body += [f"  out{k}[gid] = {D.msl(dt)}4(r{k}_0, r{k}_1, r{k}_2, r{k}_3);" for k, (_, dt, _) in enumerate(outs)]
        return body


def _params(device, values):
    """The small read-only int64 argument of offsets, shape and strides (the fast path in
    cpp/python/fusion.cpp keeps one per device and values)."""
    return device.asarray(np.array(values, dtype=np.int64))


_SCALAR_BYTES: dict = {}


def _complex_free_nonzero(value):
    if isinstance(value, complex):
        return value.real != 0 and value.imag != 0
    return value != 0


def _scalar_bytes(value, dtype):
    """A scalar operand as the bytes of a `constant T&` argument (cached: `x * 2` repeats)."""
    key = (type(value), value, dtype)
    # 0.0 == -0.0 (and 1+0j == 1-0j): values with a zero part are not cached
    b = _SCALAR_BYTES.get(key) if _complex_free_nonzero(value) else None
    if b is None:
        b = np.asarray(value).astype(dtype).tobytes()
        if len(_SCALAR_BYTES) > 4096:
            _SCALAR_BYTES.clear()
        _SCALAR_BYTES[key] = b
    return b


MAX_BUFFER_ARGUMENTS = 31  # Metal's buffer argument table: [[buffer(0)]] ... [[buffer(30)]]


def _plan(items, device, fours):
    """Generates and compiles the kernel of a structure new to the fast path, and registers it
    there (cpp/python/fusion.cpp: later evaluations of the structure launch without Python).
    Returns the kernel's number of buffer arguments; a multi-output one past Metal's table is
    not registered (run splits it)."""
    entries, outs, inputs, scalars, key, nd = _core._fusion_walk(items)
    src, strided, rows, vec = _generate(device, nd, entries, outs, fours)
    buffers = len(inputs) + len(scalars) + 1 + len(outs)
    if buffers <= MAX_BUFFER_ARGUMENTS or len(items) == 1:
        _core._fusion_remember(device, key, fours, R.kernel(device, src, KERNEL_NAME), strided, vec, rows)
    return buffers


def _launch(items, device, fours):
    """Launches the kernel computing every item (its Completion), or the halves of items whose
    kernel would need more buffer arguments than Metal's table holds (None)."""
    done = _core._fusion_launch(device, items, fours)
    if done is None:
        if _plan(items, device, fours) > MAX_BUFFER_ARGUMENTS and len(items) > 1:
            half = len(items) // 2
            run(items[:half], device)
            run(items[half:], device)
            return None
        done = _core._fusion_launch(device, items, fours)
    return done


def run(items, device):
    """Generates, compiles (once per structure) and launches one kernel computing every item:
    (node, (buf, offset, strides, dtype, shape)), all of one shape."""
    shape = items[0][1][4]
    n = prod(shape)
    if n == 0:
        return
    if n >= 2**32:
        raise NotImplementedError("metalcall.numpy: elementwise kernels handle fewer than 2**32 elements")
    fours = n % 4 == 0
    try:
        done = _launch(items, device, fours)
    except mc.ArgumentError:
        if not fours:
            raise
        # A 4-vector operand not 16-byte aligned (memory of another library, used in place):
        # the one-element-a-thread kernel takes any (an error of another cause comes again).
        done = _launch(items, device, False)
    if done is None:
        return
    R.keep(done)
    if n >= R.LARGE_RESULT // 8:  # maybe LARGE_RESULT bytes of results (8-byte elements)
        nbytes = sum(n * it[1][3].itemsize for it in items)
        if nbytes >= R.LARGE_RESULT:
            R.bound_in_flight(done, nbytes)


def source_of(nodes, device, shape):
    """The MSL a set of lazy nodes would compile to (for mnp.explain)."""
    shape = tuple(shape)
    strides = contiguous_strides(shape)
    items = [(node, (None, 0, strides, _as_leaf(node).dtype, shape)) for node in nodes]
    entries, outs, _, _, _, nd = _core._fusion_walk(items)
    n = prod(shape)
    return _generate(device, nd, entries, outs, n > 0 and n % 4 == 0)[0]


_core._fusion_setup(Op, Leaf, Scalar, _scalar_bytes, _params)
