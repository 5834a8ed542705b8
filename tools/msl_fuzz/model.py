"""The reference: a program run by NumPy with MSL's semantics, all lanes in lockstep.

Every thread of the dispatch is a lane; control flow is a mask of active lanes (as a
GPU runs it). That makes barriers and SIMD-group functions plain steps, and it is a
correct model of any schedule because the generator only writes race-free programs;
the model checks that they are (a race, a barrier or SIMD-group function reached by
part of a group, an index out of range) and raises `ProgramError` otherwise: that is a
bug of the generator, never a finding about metalcall.

`Model.undefined` maps the id of every node whose result MSL leaves undefined on some
active lane (signed overflow, division by zero, ...) to the reason; the generator
rewrites those nodes and runs the model again.
"""

from __future__ import annotations

import numpy as np

from . import functions, tree as t, workarounds
from .simd import OVER_ACTIVE_LANES, inexact_sum, simd_function
from .types import UINT, Arr, Ptr, Scalar, Struct, Type, Vec, arithmetic_result, elem, promoted, width
from .values import bits_of, compare, constant, convert, float_op, from_bits, int_binary, ints

ARITHMETIC = {"+", "-", "*", "/", "%", "&", "|", "^"}
COMPARISONS = {"==", "!=", "<", "<=", ">", ">="}
MAX_ITERATIONS = 4096


class ProgramError(Exception):
    """The generated program breaks a rule the generator must keep (a generator bug)."""


def broadcast_mask(mask: np.ndarray, value: np.ndarray) -> np.ndarray:
    return mask[:, None] if value.ndim == 2 else mask


def merge(mask: np.ndarray, new, old):
    """new where mask, else old; a struct (a dict of member values) member by member."""
    if isinstance(new, dict):
        return {k: merge(mask, new[k], old[k]) for k in new}
    return np.where(broadcast_mask(mask, new), new, old)


class Frame:
    def __init__(self, lanes: int):
        self.vars: dict[str, tuple[Type, np.ndarray]] = {}
        self.returned = np.zeros(lanes, dtype=bool)
        self.value = None
        self.aliases: dict[str, str] = {}  # pointer parameter -> threadgroup array


class SharedState:
    """A threadgroup array of every threadgroup, with what the race check needs."""

    def __init__(self, array: t.SharedArray, groups: int):
        shape = (groups, array.length) + ((array.ty.n,) if isinstance(array.ty, Vec) else ())
        e = elem(array.ty)
        self.array = array
        self.data = np.zeros(shape, dtype=object if e.is_int else (bool if e.is_bool else np.float32))
        if e.name == "half":
            self.data = self.data.astype(np.float16)
        self.writer = np.full((groups, array.length), -1)
        self.write_epoch = np.full((groups, array.length), -1)
        self.write_simd_epoch = np.full((groups, array.length), -1)
        self.reader = np.full((groups, array.length), -1)
        self.read_epoch = np.full((groups, array.length), -1)
        self.storer = np.full((groups, array.length), -1)  # atomics: the last atomic_store's
        self.store_epoch = np.full((groups, array.length), -1)


class Model:
    def __init__(self, prog: t.Program):
        self.prog = prog
        n = prog.threads
        self.lanes = n
        self.groups = n // prog.group
        gid = np.arange(n)
        self.group_of = gid // prog.group
        self.lid_of = gid % prog.group
        self.builtins = {
            "gid": ints(gid), "lid": ints(self.lid_of), "tgid": ints(self.group_of),
            "lane": ints(self.lid_of % 32), "sgid": ints(self.lid_of // 32),
        }
        self.buffers = {b.name: b for b in prog.buffers}
        self.memory = {b.name: ({k: v.copy() for k, v in b.data.items()} if isinstance(b.data, dict) else b.data.copy())
                       for b in prog.buffers}
        self.written_by = {b.name: np.full(b.length, -1) for b in prog.buffers}
        self.shared = {a.name: SharedState(a, self.groups) for a in prog.shared}
        self.helpers = {h.name: h for h in prog.helpers}
        self.globals = {g.name: global_value(g, self.lanes) for g in prog.globals}
        self.undefined: dict[int, str] = {}
        self.loops: list[tuple[np.ndarray, np.ndarray]] = []
        self.epoch = 0
        self.simd_epoch = 0
        self.float_adds: dict = {}  # (shared, target) -> (values added, values before, statements)

    # Entry ------------------------------------------------------------------------------
    def run(self) -> dict[str, np.ndarray]:
        frame = Frame(self.lanes)
        for name, value in self.builtins.items():
            frame.vars[name] = (UINT, value)
        for b in self.prog.buffers:
            if b.role == "scalar":  # the same value in every thread
                frame.vars[b.name] = (b.ty, np.repeat(b.data[:1], self.lanes, axis=0))
        self.block(self.prog.body, np.ones(self.lanes, dtype=bool), frame)
        return self.memory

    def note(self, node, bad: np.ndarray, mask: np.ndarray, reason: str) -> None:
        if (bad & mask).any():
            self.undefined.setdefault(node.uid, reason)

    # Expressions ------------------------------------------------------------------------
    def ev(self, e: t.Expr, mask: np.ndarray, f: Frame) -> np.ndarray:
        return getattr(self, "ev_" + type(e).__name__.lower())(e, mask, f)

    def ev_lit(self, e, mask, f):
        return constant(e.value, e.ty, self.lanes)

    def ev_ref(self, e, mask, f):
        if e.name in f.vars:
            return f.vars[e.name][1]
        if e.name in self.globals:
            return self.globals[e.name]
        raise ProgramError(f"'{e.name}' read before it is declared")

    def check_index(self, idx: np.ndarray, length: int, mask: np.ndarray, what: str) -> np.ndarray:
        safe = np.where(mask, idx, 0)
        if ((safe < 0) | (safe >= length)).any():
            raise ProgramError(f"index out of range of {what}")
        return safe.astype(np.int64)

    def ev_load(self, e, mask, f):
        b = self.buffers[e.buffer]
        if b.role != "in":
            raise ProgramError(f"reads output buffer {b.name}")
        idx = self.check_index(self.ev(e.index, mask, f), b.length, mask, b.name)
        data = self.memory[b.name]
        if isinstance(data, dict):  # a struct buffer
            return {k: v[idx] for k, v in data.items()}
        return data[idx]

    def shared_of(self, name: str, f: Frame) -> SharedState:
        return self.shared[f.aliases.get(name, name)]

    def ev_sharedload(self, e, mask, f):
        s = self.shared_of(e.array, f)
        idx = self.check_index(self.ev(e.index, mask, f), s.array.length, mask, e.array)
        for lane in np.nonzero(mask)[0]:
            g, i, me = self.group_of[lane], idx[lane], self.lid_of[lane]
            w = s.writer[g, i]
            if w == -1:
                raise ProgramError(f"{e.array}[{i}] read before it is written")
            if w != me and s.write_epoch[g, i] == self.epoch:
                same_simd = w // 32 == me // 32 and s.write_simd_epoch[g, i] < self.simd_epoch
                if not same_simd:
                    raise ProgramError(f"{e.array}[{i}] read and written by different threads without a barrier")
            if s.read_epoch[g, i] == self.epoch and s.reader[g, i] not in (-1, me):
                s.reader[g, i] = -2
            else:
                s.reader[g, i] = me
            s.read_epoch[g, i] = self.epoch
        return s.data[self.group_of, idx]

    def ev_unary(self, e, mask, f):
        a = self.ev(e.a, mask, f)
        src = e.a.ty
        if e.op == "!":
            return ~a.astype(bool)
        rt = src if isinstance(src, Vec) else promoted(src) if elem(src).is_int or elem(src).is_bool else src
        a, _ = convert(a, src, rt)
        r = elem(rt)
        if r.is_float:
            return -a if e.op == "-" else a
        if e.op == "-":
            value, bad = int_binary("-", constant(0, rt, self.lanes), a, r, r.bits)
            self.note(e, bad, mask, "signed overflow")
            return value
        if e.op == "~":
            return int_binary("^", a, constant(-1, rt, self.lanes), r, r.bits)[0]
        return a

    def ev_binary(self, e, mask, f):
        op = e.op
        if op in ("&&", "||"):
            a = self.ev(e.a, mask, f).astype(bool)
            b = self.ev(e.b, mask & (a if op == "&&" else ~a), f).astype(bool)
            return (a & b) if op == "&&" else (a | b)
        a, b = self.ev(e.a, mask, f), self.ev(e.b, mask, f)
        if op in COMPARISONS:
            ct = arithmetic_result(e.a.ty, e.b.ty)
            a, _ = convert(self.broadcast(a, e.a.ty, ct), e.a.ty, ct)
            b, _ = convert(self.broadcast(b, e.b.ty, ct), e.b.ty, ct)
            return compare(op, a, b)
        value, _, bad = self.operate(op, e.a.ty, e.b.ty, a, b)
        self.note(e, bad, mask, "signed overflow, division by zero or a shift out of range")
        return value

    def broadcast(self, value: np.ndarray, ty: Type, to: Type) -> np.ndarray:
        if isinstance(to, Vec) and not isinstance(ty, Vec):
            return np.repeat(value[:, None], to.n, axis=1)
        return value

    def ev_convert(self, e, mask, f):
        a = self.ev(e.a, mask, f)
        a = self.broadcast(a, e.a.ty, e.ty)
        value, bad = convert(a, e.a.ty, e.ty)
        self.note(e, bad, mask, "float to integer out of range")
        return value

    def ev_astype(self, e, mask, f):
        a = self.ev(e.a, mask, f)
        src, dst = elem(e.a.ty), elem(e.ty)
        if src.is_float:
            self.note(e, np.isnan(a.astype(np.float32)).reshape(self.lanes, -1).any(axis=1), mask,
                      "the bits of a NaN")
        bits = bits_of(a, src).reshape(self.lanes, -1)
        # little-endian: reassemble all components into one integer per lane, then split
        total = np.zeros(self.lanes, dtype=object)
        for c in reversed(range(bits.shape[1])):
            total = total * (1 << src.bits) + bits[:, c]
        out = np.empty((self.lanes, width(e.ty)), dtype=object)
        for c in range(width(e.ty)):
            out[:, c] = total % (1 << dst.bits)
            total = total // (1 << dst.bits)
        value = from_bits(out, dst)
        return value if isinstance(e.ty, Vec) else value[:, 0]

    def ev_call(self, e, mask, f):
        args = [self.ev(a, mask, f) for a in e.args]
        types = [a.ty for a in e.args]
        if e.fn in ("extract_bits", "insert_bits"):
            n = width(e.ty)
            args = [a if i < len(args) - 2 else (np.repeat(a[:, None], n, axis=1) if n > 1 else a)
                    for i, a in enumerate(args)]
        value, bad = functions.evaluate(e.fn, args, types)
        self.note(e, bad, mask, f"{e.fn} outside its domain")
        return value

    def ev_cond(self, e, mask, f):
        c = self.ev(e.c, mask, f).astype(bool)
        a = self.ev(e.a, mask & c, f)
        b = self.ev(e.b, mask & ~c, f)
        if e.a.ty != e.ty and not isinstance(e.ty, Struct):  # arms of two types: the common one
            a = convert(a, e.a.ty, e.ty)[0]
        if e.b.ty != e.ty and not isinstance(e.ty, Struct):
            b = convert(b, e.b.ty, e.ty)[0]
        return merge(c, a, b)

    def ev_swizzle(self, e, mask, f):
        a = self.ev(e.a, mask, f)
        return a[:, list(e.comps)] if len(e.comps) > 1 else a[:, e.comps[0]]

    def pointee(self, name: str, f: Frame, index: np.ndarray, mask: np.ndarray):
        """(target variable, its type, per-lane element) of pointer `name` at `index`."""
        if name not in f.vars or not isinstance(f.vars[name][0], Ptr):
            raise ProgramError(f"'{name}' is not a pointer in scope")
        ptr, (target, offset) = f.vars[name]
        where = self.check_index(index, ptr.n, mask, name) + (offset or 0)
        return target, where

    def ev_deref(self, e, mask, f):
        index = self.ev(e.index, mask, f) if e.index is not None else constant(0, UINT, self.lanes)
        target, where = self.pointee(e.pointer, f, index, mask)
        ty, value = f.vars[target]
        if isinstance(ty, Arr):
            return value[np.arange(self.lanes), where]
        return value

    def st_pointerdecl(self, s, mask, f):
        if s.target not in f.vars:
            raise ProgramError(f"pointer to undeclared '{s.target}'")
        f.vars[s.name] = (s.ty, (s.target, s.offset))

    def ev_member(self, e, mask, f):
        return self.ev(e.a, mask, f)[e.field]

    def ev_index(self, e, mask, f):
        a = self.ev(e.a, mask, f)
        idx = self.check_index(self.ev(e.index, mask, f), a.shape[1], mask, "a vector")
        return a[np.arange(self.lanes), idx]

    def ev_construct(self, e, mask, f):
        parts = [self.ev(p, mask, f) for p in e.parts]
        if isinstance(e.ty, Struct):
            return {name: value for (name, _, _), value in zip(e.ty.fields, parts)}
        if len(parts) == 1 and parts[0].ndim == 1:
            return np.repeat(parts[0][:, None], e.ty.n, axis=1)
        cols = [p[:, None] if p.ndim == 1 else p for p in parts]
        return np.concatenate(cols, axis=1)

    def ev_callhelper(self, e, mask, f):
        h = self.helpers[e.name]
        callee = Frame(self.lanes)
        references = []
        for (name, ty, space), arg in zip(h.params, e.args):
            if space == "thread&":  # the callee works on the argument itself
                callee.vars[name] = (ty, self.ev(arg, mask, f))
                references.append((name, arg))
            elif space:
                callee.aliases[name] = f.aliases.get(arg.name, arg.name)
            else:
                callee.vars[name] = (ty, self.ev(arg, mask, f))
        for (name, ty, space), value in zip(h.fields, e.functor_fields or []):
            if space:
                callee.aliases[name] = f.aliases.get(value.name, value.name)
            else:
                callee.vars[name] = (ty, self.ev(value, mask, f))
        self.block(h.body, mask, callee)
        for name, arg in references:
            self.write_back(arg, callee.vars[name][1], mask, f)
        if h.ret is None:
            return None
        if (mask & ~callee.returned).any():
            raise ProgramError(f"{h.name} ends without returning")
        if callee.value is None:  # called by no thread (a branch nobody takes)
            return constant(0, h.ret, self.lanes)
        return callee.value

    def write_back(self, target: t.Expr, value, mask, f) -> None:
        """target = value on the lanes of mask: a variable, a struct's member, one component
        of a vector or one element of an array (by a literal)."""
        if isinstance(target, t.Ref):
            ty, old = f.vars[target.name]
            f.vars[target.name] = (ty, merge(mask, value, old))
            return
        if isinstance(target, t.Member):
            whole = self.ev(target.a, mask, f)
            new = dict(whole)
            new[target.field] = value
            return self.write_back(target.a, new, mask, f)
        if isinstance(target, (t.Swizzle, t.Index)):
            whole = self.ev(target.a, mask, f).copy()
            column = target.comps[0] if isinstance(target, t.Swizzle) else target.index.value
            whole[:, column] = value
            return self.write_back(target.a, whole, mask, f)
        raise ProgramError(f"{type(target).__name__} passed by reference")

    def st_callstmt(self, s, mask, f):
        self.ev(s.call, mask, f)

    def st_shadow(self, s, mask, f):
        outer = f.vars.get(s.name)
        f.vars[s.name] = (s.ty, self.ev(s.init, mask, f))
        try:
            self.block(s.body, mask, f)
        finally:
            if outer is None:
                del f.vars[s.name]
            else:
                f.vars[s.name] = outer

    def ev_calllambda(self, e, mask, f):
        if e.name not in f.vars:
            raise ProgramError(f"lambda '{e.name}' called before it is declared")
        lam = f.vars[e.name][1]
        saved = {}
        for (name, ty), arg in zip(lam.params, e.args):
            value = self.ev(arg, mask, f)
            saved[name] = f.vars.get(name)
            f.vars[name] = (ty, value)
        try:
            return self.ev(lam.value, mask, f)
        finally:
            for name, old in saved.items():
                if old is None:
                    del f.vars[name]
                else:
                    f.vars[name] = old

    def st_lambdadef(self, s, mask, f):
        f.vars[s.name] = (None, s)

    def ev_simd(self, e, mask, f):
        args = [self.ev(a, mask, f) for a in e.args]
        groups = mask.reshape(-1, 4 if e.fn.startswith("quad_") else 32)
        base = "simd_" + e.fn.split("_", 1)[1]
        if base not in OVER_ACTIVE_LANES and not (groups.all(axis=1) | ~groups.any(axis=1)).all():
            raise ProgramError(f"{e.fn} reached by part of a SIMD-group")
        simd_groups = mask.reshape(-1, 32)
        if workarounds.active("divergent-simd") and not (simd_groups.all(axis=1) | ~simd_groups.any(axis=1)).all():
            raise ProgramError(f"{e.fn} reached by part of a SIMD-group (workaround divergent-simd)")
        value, bad = simd_function(e.fn, args, [a.ty for a in e.args], e.ty, self.lanes, mask)
        self.note(e, bad, mask, f"{e.fn}: result depends on the order of lanes")
        return value

    # Statements -------------------------------------------------------------------------
    def active(self, mask: np.ndarray, f: Frame) -> np.ndarray:
        m = mask & ~f.returned
        for brk, cont in self.loops[-1:]:
            m = m & ~brk & ~cont
        return m

    def block(self, stmts: list, mask: np.ndarray, f: Frame) -> None:
        for s in stmts:
            m = self.active(mask, f)
            if not m.any() and not isinstance(s, t.Barrier):
                return
            self.stmt(s, m, f)

    def stmt(self, s, mask, f):
        getattr(self, "st_" + type(s).__name__.lower())(s, mask, f)

    def st_decl(self, s, mask, f):
        value = self.ev(s.init, mask, f)
        old = f.vars.get(s.name, (s.ty, value))[1]
        f.vars[s.name] = (s.ty, merge(mask, value, old))

    def st_assign(self, s, mask, f):
        if s.name not in f.vars:
            raise ProgramError(f"'{s.name}' assigned before it is declared")
        ty, old = f.vars[s.name]
        target_ty, current = ty, old
        if s.index is not None:
            return self.assign_element(s, mask, f)
        if s.member is not None:
            return self.assign_member(s, mask, f)
        if s.comps is not None:
            comps = list(s.comps)
            current = old[:, comps] if len(comps) > 1 else old[:, comps[0]]
            target_ty = Vec(elem(ty), len(comps)) if len(comps) > 1 else elem(ty)
        value = self.ev(s.value, mask, f)
        if s.op == "=" and isinstance(target_ty, Vec) and not isinstance(s.value.ty, Vec):
            # `v = x` of a scalar to a vector (or to several components): x converted, in every one
            value, bad = convert(self.broadcast(value, s.value.ty, target_ty), s.value.ty, target_ty)
            self.note(s, bad, mask, "float to integer out of range")
        if s.op != "=":
            # x op= v is x = X(x op v): the operation in its own type, converted back
            inner, inner_ty, bad = self.operate(s.op[:-1], target_ty, s.value.ty, current, value)
            self.note(s, bad, mask, "compound assignment overflows or divides by zero")
            value, _ = convert(inner, inner_ty, target_ty)
        if s.comps is None:
            new = value
        else:
            new = old.copy()
            if len(comps) > 1:
                new[:, comps] = value
            else:
                new[:, comps[0]] = value
        f.vars[s.name] = (ty, merge(mask, new, old))

    def assign_member(self, s, mask, f):
        """s.member op= value."""
        ty, old = f.vars[s.name]
        member_ty = next(mt for name, mt, _ in ty.fields if name == s.member)
        value = self.ev(s.value, mask, f)
        if s.op != "=":
            inner, inner_ty, bad = self.operate(s.op[:-1], member_ty, s.value.ty, old[s.member], value)
            self.note(s, bad, mask, "compound assignment overflows or divides by zero")
            value, _ = convert(inner, inner_ty, member_ty)
        new = dict(old)
        new[s.member] = merge(mask, value, old[s.member])
        f.vars[s.name] = (ty, new)

    def assign_element(self, s, mask, f):
        """v[index] op= value with an index each thread computes (p[index] through a pointer)."""
        ty, old = f.vars[s.name]
        if isinstance(ty, Ptr):
            target, where = self.pointee(s.name, f, self.ev(s.index, mask, f), mask)
            tty, tvalue = f.vars[target]
            if not isinstance(tty, Arr):  # a pointer to a scalar: p[0] is the scalar
                scalar = t.Assign(name=target, value=s.value, op=s.op)
                scalar.uid = s.uid
                return self.st_assign(scalar, mask, f)
            return self.write_element(s, mask, f, target, tty, tvalue, where)
        idx = self.check_index(self.ev(s.index, mask, f), ty.n, mask, s.name)
        return self.write_element(s, mask, f, s.name, ty, old, idx)

    def write_element(self, s, mask, f, name, ty, old, idx):
        rows = np.arange(self.lanes)
        current = old[rows, idx]
        value = self.ev(s.value, mask, f)
        e = elem(ty)
        if s.op != "=":
            inner, inner_ty, bad = self.operate(s.op[:-1], e, s.value.ty, current, value)
            self.note(s, bad, mask, "compound assignment overflows or divides by zero")
            value, _ = convert(inner, inner_ty, e)
        new = old.copy()
        lanes = np.nonzero(mask)[0]
        new[lanes, idx[lanes]] = value[lanes]
        f.vars[name] = (ty, new)

    def operate(self, op: str, a_ty: Type, b_ty: Type, a: np.ndarray, b: np.ndarray):
        """(value, its type, undefined lanes) of a binary arithmetic or shift operator."""
        if op in ("<<", ">>"):
            lt = a_ty if isinstance(a_ty, Vec) else promoted(a_ty)
            a, _ = convert(a, a_ty, lt)
            value, bad = int_binary(op, a, self.broadcast(b, b_ty, lt), elem(lt), elem(lt).bits)
            return value, lt, bad
        ct = arithmetic_result(a_ty, b_ty)
        a, _ = convert(self.broadcast(a, a_ty, ct), a_ty, ct)
        b, _ = convert(self.broadcast(b, b_ty, ct), b_ty, ct)
        s = elem(ct)
        if s.is_bool:
            a, b = ints(a.astype(np.int64)), ints(b.astype(np.int64))
            s = promoted(s)
            ct = s
        if s.is_float:
            if op not in ("+", "-", "*", "/"):
                raise ProgramError(f"float operator {op}")
            return float_op(op, a, b, s), ct, np.zeros(self.lanes, dtype=bool)
        value, bad = int_binary(op, a, b, s, s.bits)
        return value, ct, bad

    def st_store(self, s, mask, f):
        b = self.buffers[s.buffer]
        idx = self.check_index(self.ev(s.index, mask, f), b.length, mask, b.name)
        value = self.ev(s.value, mask, f)
        lanes = np.nonzero(mask)[0]
        targets = idx[lanes]
        if len(set(targets.tolist())) != len(targets):
            raise ProgramError(f"two threads store to one element of {b.name}")
        owners = self.written_by[b.name][targets]
        if ((owners != -1) & (owners != lanes)).any():
            raise ProgramError(f"two threads store to one element of {b.name}")
        self.written_by[b.name][targets] = lanes
        if isinstance(value, dict):
            for k, v in value.items():
                self.memory[b.name][k][targets] = v[lanes]
        else:
            self.memory[b.name][targets] = value[lanes]

    def st_sharedstore(self, s, mask, f):
        st = self.shared_of(s.array, f)
        idx = self.check_index(self.ev(s.index, mask, f), st.array.length, mask, s.array)
        value = self.ev(s.value, mask, f)
        for lane in np.nonzero(mask)[0]:
            g, i, me = self.group_of[lane], idx[lane], self.lid_of[lane]
            w = st.writer[g, i]
            if w not in (-1, me) and st.write_epoch[g, i] == self.epoch:
                raise ProgramError(f"two threads write {s.array}[{i}] without a barrier")
            if st.read_epoch[g, i] == self.epoch and st.reader[g, i] not in (-1, me):
                same_simd = st.reader[g, i] >= 0 and st.reader[g, i] // 32 == me // 32
                if not same_simd:
                    raise ProgramError(f"{s.array}[{i}] written after another thread read it, without a barrier")
            st.writer[g, i], st.write_epoch[g, i] = me, self.epoch
            st.write_simd_epoch[g, i] = self.simd_epoch
            st.data[g, i] = value[lane]

    def st_if(self, s, mask, f):
        c = self.ev(s.cond, mask, f).astype(bool)
        self.block(s.then, mask & c, f)
        if s.orelse:
            self.block(s.orelse, mask & ~c, f)

    def st_switch(self, s, mask, f):
        value = self.ev(s.value, mask, f)
        matched = np.zeros(self.lanes, dtype=bool)
        for case in s.cases:
            matched |= np.isin(value, case.labels)
        falling = np.zeros(self.lanes, dtype=bool)
        for case in s.cases:
            entered = falling | (mask & np.isin(value, case.labels))
            self.block(case.body, entered, f)
            falling = entered & ~f.returned if case.falls else np.zeros(self.lanes, dtype=bool)
        self.block(s.default, falling | (mask & ~matched), f)

    def st_for(self, s, mask, f):
        start = self.ev(s.start, mask, f)
        f.vars[s.var] = (s.ty, merge(mask, start, f.vars.get(s.var, (s.ty, start))[1]))
        brk = np.zeros(self.lanes, dtype=bool)
        cont = np.zeros(self.lanes, dtype=bool)
        self.loops.append((brk, cont))
        active = mask.copy()
        try:
            for iteration in range(MAX_ITERATIONS):
                # lanes that took `continue` test the condition too (a helper called there runs
                # for them: seed 9403 program 290 had it end without returning for them)
                cont[:] = False
                if s.style != "do" or iteration > 0:  # a do-while tests after its body
                    end = self.ev(s.end, active, f)
                    active &= compare(s.compare, f.vars[s.var][1], end)
                if not active.any():
                    return
                self.block(s.body, active, f)
                active &= ~brk & ~f.returned
                var = f.vars[s.var][1]
                stepped = var + s.step if s.step > 0 else var >> (-s.step)
                f.vars[s.var] = (s.ty, merge(active, stepped, var))
            raise ProgramError("a loop runs too long")
        finally:
            self.loops.pop()

    def st_break(self, s, mask, f):
        self.loops[-1][0][mask] = True

    def st_continue(self, s, mask, f):
        self.loops[-1][1][mask] = True

    def st_barrier(self, s, mask, f):
        size = self.prog.group if s.kind == "threadgroup" else 32
        groups = mask.reshape(-1, size)
        if not (groups.all(axis=1) | ~groups.any(axis=1)).all():
            raise ProgramError(f"{s.kind}_barrier reached by part of a group")
        if s.kind == "threadgroup":
            self.epoch += 1
        self.simd_epoch += 1

    def atomic_cells(self, s, mask, f, kind: str):
        idx_value = self.ev(s.index, mask, f)
        if s.shared:
            st = self.shared_of(s.target, f)
            idx = self.check_index(idx_value, st.array.length, mask, s.target)
            self.check_shared_atomic(s, st, idx, mask, kind)
            return st.data, lambda lane: (self.group_of[lane], idx[lane]), elem(st.array.ty)
        b = self.buffers[s.target]
        idx = self.check_index(idx_value, b.length, mask, b.name)
        return self.memory[b.name], lambda lane: idx[lane], elem(b.ty)

    def check_shared_atomic(self, s, st: SharedState, idx, mask, kind: str) -> None:
        """Threadgroup atomics between barriers: updates of one family commute, but a store
        or a load beside another thread's access gives the schedule's answer, and a cell
        never stored holds whatever threadgroup memory held. (The generator keeps them
        apart with barriers; without this check the reducer deleted the barriers and the
        store, and reported the race it made as a finding.)"""
        for lane in np.nonzero(mask)[0]:
            g, i, me = self.group_of[lane], idx[lane], self.lid_of[lane]
            other_wrote = st.write_epoch[g, i] == self.epoch and st.writer[g, i] not in (-1, me)
            other_read = st.read_epoch[g, i] == self.epoch and st.reader[g, i] not in (-1, me)
            other_stored = st.store_epoch[g, i] == self.epoch and st.storer[g, i] not in (-1, me)
            if kind != "store" and st.writer[g, i] == -1:
                raise ProgramError(f"atomic {s.target}[{i}] used before it is stored")
            if (kind == "store" and (other_wrote or other_read)) or (kind == "update" and (other_stored or other_read)) \
                    or (kind == "load" and other_wrote):
                raise ProgramError(f"atomic {s.target}[{i}]: a {kind} beside another thread's access, without a barrier")
            if kind == "load":
                st.reader[g, i] = -2 if st.read_epoch[g, i] == self.epoch and st.reader[g, i] != me else me
                st.read_epoch[g, i] = self.epoch
                continue
            st.writer[g, i] = -2 if st.write_epoch[g, i] == self.epoch and st.writer[g, i] != me else me
            st.write_epoch[g, i] = self.epoch
            if kind == "store":
                st.storer[g, i], st.store_epoch[g, i] = me, self.epoch

    def st_atomic(self, s, mask, f):
        data, cell, ty = self.atomic_cells(s, mask, f, "store" if s.op == "store" else "update")
        value = self.ev(s.value, mask, f)
        lanes = np.nonzero(mask)[0]
        if ty.is_float and s.op in ("add", "sub"):
            # Every add into the target so far, with its values before the first: threads
            # interleave two statements' adds on one cell (seed 9002 program 253), so a sum
            # exact statement by statement can still round in the threads' order.
            added, initial, nodes = self.float_adds.setdefault((s.shared, s.target), ([], np.ravel(data).copy(), {}))
            added.extend(np.ravel(value[lanes]))
            nodes[s.uid] = s
            if inexact_sum(np.array(added), initial, ty):
                for node in nodes.values():
                    self.note(node, np.ones(self.lanes, dtype=bool), mask, "float atomic sum not exact")
        for lane in lanes:
            c = cell(lane)
            old, v = data[c], value[lane]
            data[c] = atomic_result(s.op, old, v, ty)

    def st_atomicread(self, s, mask, f):
        data, cell, ty = self.atomic_cells(s, mask, f, "load")
        value = np.zeros(self.lanes, dtype=object if ty.is_int else np.float32)
        for lane in np.nonzero(mask)[0]:
            value[lane] = data[cell(lane)]
        old = f.vars.get(s.name, (s.ty, value))[1]
        f.vars[s.name] = (s.ty, merge(mask, value, old))

    def st_return(self, s, mask, f):
        if s.value is None:  # the kernel's
            f.returned |= mask
            return
        value = self.ev(s.value, mask, f)
        f.value = value if f.value is None else merge(mask, value, f.value)
        f.returned |= mask


def global_value(g: t.Global, lanes: int) -> np.ndarray:
    """Program-scope data, the same in every thread."""
    if isinstance(g.ty, Arr):
        columns = [constant(v, g.ty.elem, lanes) for v in g.value]
        return np.stack(columns, axis=1)
    return constant(g.value, g.ty, lanes)


def atomic_result(op: str, old, v, ty: Scalar):
    if op == "store":
        return v
    if ty.is_float:
        r = np.float32(old) + np.float32(v) if op == "add" else np.float32(old) - np.float32(v)
        return np.float32(r)
    r = {"add": old + v, "sub": old - v, "and": old & v, "or": old | v, "xor": old ^ v,
         "min": min(old, v), "max": max(old, v)}[op]
    m = 1 << ty.bits
    return (r - ty.lo) % m + ty.lo


def run(prog: t.Program) -> tuple[dict[str, np.ndarray], dict[int, str]]:
    """The program's final buffers and the nodes MSL leaves undefined for its inputs."""
    m = Model(prog)
    with np.errstate(all="ignore"):
        memory = m.run()
    return memory, m.undefined
