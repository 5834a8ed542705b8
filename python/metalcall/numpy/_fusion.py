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

import functools
import weakref

import numpy as np

from . import _dtypes as D
from . import _ops
from . import _runtime as R

MAX_NODES = 64
MAX_INPUTS = 16  # Metal allows 31 buffer arguments; inputs + scalars + params + outputs stay well under
KERNEL_NAME = "mnp_fused"

# Every lazy ndarray alive, to evaluate the ones reading a buffer before it is written.
# (ndarray is unhashable, as NumPy's is: keyed by id.)
_LIVE_LAZY: "weakref.WeakValueDictionary" = weakref.WeakValueDictionary()


@functools.lru_cache(maxsize=4096)
def contiguous_strides(shape):
    strides, acc = [], 1
    for n in reversed(shape):
        strides.append(acc)
        acc *= max(n, 1)
    return tuple(reversed(strides))


def is_c_layout(shape, strides):
    """True if strides walk shape C-contiguously (dimensions of size 1 may have any stride)."""
    return all(st == cs for n, st, cs in zip(shape, strides, contiguous_strides(tuple(shape))) if n != 1)


def prod(shape):
    n = 1
    for s in shape:
        n *= s
    return n


class Leaf:
    """A materialised array read by an expression: buffer, element offset, shape, strides."""

    __slots__ = ("buf", "offset", "shape", "strides", "dtype")
    size = 1

    def __init__(self, buf, offset, shape, strides, dtype):
        self.buf, self.offset, self.shape, self.strides, self.dtype = buf, offset, shape, strides, dtype

    @property
    def leaf_ids(self):
        return frozenset(((id(self.buf), self.offset, self.shape, self.strides),))


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

    __slots__ = ("op", "args", "dtype", "ct", "shape", "buf", "size", "leaf_ids", "__weakref__")

    def __init__(self, op, args, dtype, ct, shape):
        self.op, self.args, self.dtype, self.ct, self.shape = op, tuple(args), dtype, ct, tuple(shape)
        self.buf = None
        self.size = 1 + sum(_size(a) for a in self.args)
        ids = frozenset()
        for a in self.args:
            ids = ids | _leaf_ids(a)
        self.leaf_ids = ids


def _size(node):
    return 1 if isinstance(node, Op) and node.buf is not None else node.size


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
    nd = len(out_shape)
    pad = nd - len(shape)
    res = [0] * nd
    for k in range(len(shape)):
        if shape[k] != 1:
            res[pad + k] = strides[k]
    return tuple(res)


# ----------------------------------------------------------------------------- generation


class _Program:
    def __init__(self, backend, shape):
        self.g = _ops.Gen(backend)
        self.shape = tuple(shape)
        self.nd = len(shape)
        self.inputs = []  # (leaf, kind, bstrides)
        self.input_index = {}
        self.scalars = []  # Scalar nodes
        self.lines = []
        self.names = {}
        self.count = 0

    def value(self, node) -> str:
        key = id(node)
        if key in self.names:
            return self.names[key]
        node = _as_leaf(node)
        if isinstance(node, Leaf):
            bs = broadcast_strides(node.shape, node.strides, self.shape)
            ikey = (id(node.buf), node.offset, bs, node.dtype)
            k = self.input_index.get(ikey)
            if k is None:
                k = len(self.inputs)
                if is_c_layout(self.shape, bs):
                    kind = "c"
                elif not any(bs):
                    kind = "z"
                else:
                    kind = "s"
                self.inputs.append((node, kind, bs))
                self.input_index[ikey] = k
                name = f"v{k}"
                self.lines.append(f"  {D.msl(node.dtype)} {name} = in{k}[{self._index('i', k, kind)}];")
            name = f"v{k}"
        elif isinstance(node, Scalar):
            k = len(self.scalars)
            self.scalars.append(node)
            name = f"s{k}"
        else:
            args = [self.value(a) for a in node.args]
            arg_nodes = [_as_leaf(a) for a in node.args]
            if node.op == "where":
                cast = [self.cast(args[0], arg_nodes[0].dtype, D.bool_)]
                cast += [self.cast(v, n.dtype, node.ct) for v, n in zip(args[1:], arg_nodes[1:])]
            else:
                cast = [self.cast(v, n.dtype, node.ct) for v, n in zip(args, arg_nodes)]
            e = _ops.expr(self.g, node.op, node.ct, cast, node.dtype)
            if node.op == "cast":
                e = _ops.expr(self.g, "cast", arg_nodes[0].dtype, [args[0]], node.dtype)
            name = f"t{self.count}"
            self.count += 1
            self.lines.append(f"  {D.msl(node.dtype)} {name} = {e};")
        self.names[key] = name
        return name

    def cast(self, v, frm, to):
        if frm == to:
            return v
        return _ops.expr(self.g, "cast", frm, [v], to)

    def _index(self, i, k, kind):
        if kind == "c":
            return f"o{k} + {i}"
        return f"o{k}"

    def source(self, outs):
        """outs: list of (value name, dtype, kind) for the outputs."""
        nin, nsc = len(self.inputs), len(self.scalars)
        params, b = [], 0
        for k, (leaf, kind, bs) in enumerate(self.inputs):
            params.append(f"device const {D.msl(leaf.dtype)}* in{k} [[buffer({b})]]")
            b += 1
        for k, s in enumerate(self.scalars):
            params.append(f"constant {D.msl(s.dtype)}& s{k} [[buffer({b})]]")
            b += 1
        params.append(f"constant long* P [[buffer({b})]]")
        b += 1
        for k, (_, dt, _) in enumerate(outs):
            params.append(f"device {D.msl(dt)}* out{k} [[buffer({b})]]")
            b += 1
        params.append("uint gid [[thread_position_in_grid]]")
        # P layout: input offsets, output offsets, shape, then strides of every strided input/output.
        body = ["  ulong i = gid;"]
        nout = len(outs)
        sh = nin + nout
        st = sh + self.nd
        strided = [("in", k) for k, (_, kind, _) in enumerate(self.inputs) if kind == "s"]
        strided += [("out", k) for k, (_, _, kind) in enumerate(outs) if kind == "s"]
        for k in range(nin):
            body.append(f"  long o{k} = P[{k}];")
        for k in range(nout):
            body.append(f"  long q{k} = P[{nin + k}];")
        if strided:
            body.append("  { ulong r = i;")
            for d in reversed(range(self.nd)):
                body.append(f"    {{ ulong c = r % ulong(P[{sh + d}]); r /= ulong(P[{sh + d}]);")
                for j, (io, k) in enumerate(strided):
                    var = f"o{k}" if io == "in" else f"q{k}"
                    body.append(f"      {var} += long(c) * P[{st + j * self.nd + d}];")
                body.append("    }")
            body.append("  }")
        body += self.lines
        for k, (name, dt, kind) in enumerate(outs):
            idx = f"q{k} + i" if kind == "c" else f"q{k}"
            body.append(f"  out{k}[{idx}] = {name};")
        helpers = "\n".join(self.g.helpers.values())
        return (
            "#include <metal_stdlib>\nusing namespace metal;\n"
            + (helpers + "\n" if helpers else "")
            + f"kernel void {KERNEL_NAME}(" + ",\n    ".join(params) + ") {\n" + "\n".join(body) + "\n}\n"
        ), strided


_PARAMS: dict = {}


def _params(device, values):
    """The small read-only int64 argument of shapes/strides/offsets; equal ones are shared."""
    key = (device.backend, device.index, values)
    buf = _PARAMS.get(key)
    if buf is None:
        if len(_PARAMS) > 1024:
            _PARAMS.clear()
        buf = _PARAMS[key] = device.asarray(np.array(values, dtype=np.int64))
    return buf


def build(items, device):
    """items: list of (node, dest) with dest = (buf, offset, strides, dtype), all of one shape.
    Returns (source, kernel arguments without the grid, n)."""
    shape = items[0][1][4]
    prog = _Program(device.backend, shape)
    outs = []
    for node, (buf, off, strides, dt, shp) in items:
        v = prog.value(node)
        v = prog.cast(v, _as_leaf(node).dtype, dt)
        kind = "c" if is_c_layout(shape, strides) else "s"
        outs.append((v, dt, kind))
    src, strided = prog.source(outs)
    P = [leaf.offset for leaf, _, _ in prog.inputs] + [it[1][1] for it in items] + list(shape)
    for io, k in strided:
        P += list(prog.inputs[k][2]) if io == "in" else list(items[k][1][2])
    P.append(0)
    args = [leaf.buf for leaf, _, _ in prog.inputs]
    args += [np.asarray(s.value).astype(s.dtype).tobytes() if not isinstance(s.value, bytes) else s.value
             for s in prog.scalars]
    args.append(_params(device, tuple(P)))
    args += [it[1][0] for it in items]
    return src, args, prod(shape)


def run(items, device):
    """Generates, compiles (cached) and launches one kernel computing every item."""
    src, args, n = build(items, device)
    if n == 0:
        return src
    if n >= 2**32:
        raise NotImplementedError("metalcall.numpy: elementwise kernels handle fewer than 2**32 elements")
    kern = R.kernel(device, src, KERNEL_NAME)
    R.launch(kern, n, *args)
    return src


def source_of(nodes, device, shape):
    """The MSL a set of lazy nodes would compile to (for mnp.explain)."""
    prog = _Program(device.backend, shape)
    outs = [(prog.value(node), _as_leaf(node).dtype, "c") for node in nodes]
    return prog.source(outs)[0]
