"""The fuzzer's reference model (tools/msl_fuzz) checked on its own, without a device: the MSL
rules it computes (rounding, conversions, promotions, what is undefined) against values worked
out by hand, and the generator's determinism. A wrong model would hide or invent findings."""

from __future__ import annotations

import copy
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tools.msl_fuzz import model, tree as t, types as ty, workarounds  # noqa: E402
from tools.msl_fuzz.functions import round_rational  # noqa: E402
from tools.msl_fuzz.model import ProgramError  # noqa: E402
from tools.msl_fuzz.printer import program_source  # noqa: E402
from tools.msl_fuzz.programs import generate  # noqa: E402
from tools.msl_fuzz.runner import storage_array  # noqa: E402
from tools.msl_fuzz.values import convert, int_binary, int_to_float, ints, round_bfloat  # noqa: E402


def test_integers_round_to_nearest_even_in_each_float_type():
    assert int_to_float(2**24 + 1, ty.FLOAT) == 2.0**24  # a tie: to the even neighbour
    assert int_to_float(2**24 + 3, ty.FLOAT) == 2.0**24 + 4
    assert int_to_float(65519, ty.HALF) == 65504.0
    assert int_to_float(65520, ty.HALF) == float("inf")  # the tie rounds up to 2^16
    assert int_to_float(-(2**63), ty.BFLOAT) == -(2.0**63)
    assert int_to_float(257, ty.BFLOAT) == 256.0 and int_to_float(259, ty.BFLOAT) == 260.0


def test_bfloat_rounding_and_nan():
    x = np.array([1.00390625, 1.01171875, -1.0048828125, np.nan, np.inf], dtype=np.float32)
    r = round_bfloat(x)
    assert r[0] == 1.0 and r[1] == 1.015625 and r[2] == -1.0078125
    assert np.isnan(r[3]) and r[4] == np.inf


def test_exact_rationals_round_once():
    from fractions import Fraction

    assert round_rational(Fraction(1) + Fraction(1, 2**11), ty.HALF) == 1.0  # tie to even
    assert round_rational(Fraction(1) + Fraction(1, 2**11) + Fraction(1, 2**40), ty.HALF) == 1.0 + 2.0**-10
    assert round_rational(Fraction(1, 2**25), ty.HALF) == 0.0  # below half the smallest subnormal
    assert round_rational(Fraction(3, 2**26), ty.HALF) == 2.0**-24


def test_undefined_integer_operations_are_reported():
    a, b = ints([2**31 - 1, -7, -7, 1]), ints([1, 2, 2, 32])
    value, bad = int_binary("+", a[:1], b[:1], ty.INT, 32)
    assert bad.all() and value[0] == -(2**31)  # overflow: undefined, and the wrapped value
    q, bad = int_binary("/", a[1:2], b[1:2], ty.INT, 32)
    r, _ = int_binary("%", a[2:3], b[2:3], ty.INT, 32)
    assert q[0] == -3 and r[0] == -1 and not bad.any()  # C++ truncates toward zero
    _, bad = int_binary("<<", a[3:], b[3:], ty.INT, 32)
    assert bad.all()  # a shift by the width
    _, bad = int_binary("<<", ints([1]), ints([31]), ty.INT, 32)
    assert not bad.any()  # 1 << 31 fits the unsigned type: defined (C++14)
    _, bad = int_binary("/", ints([-(2**31)]), ints([-1]), ty.INT, 32)
    assert bad.all()


def test_float_to_integer_conversions():
    value, bad = convert(np.array([2.5e9, -0.5, -1.5, np.nan], dtype=np.float32), ty.FLOAT, ty.UINT)
    assert list(bad) == [False, False, True, True] and value[0] == 2500000000 and value[1] == 0
    value, bad = convert(np.array([2.5e9], dtype=np.float32), ty.FLOAT, ty.INT)
    assert bad.all()


def test_usual_arithmetic_conversions():
    assert ty.arithmetic_result(ty.USHORT, ty.USHORT) == ty.INT
    assert ty.arithmetic_result(ty.LONG, ty.UINT) == ty.LONG
    assert ty.arithmetic_result(ty.INT, ty.UINT) == ty.UINT
    assert ty.arithmetic_result(ty.HALF, ty.FLOAT) == ty.FLOAT
    assert ty.arithmetic_result(ty.HALF, ty.INT) == ty.HALF
    assert ty.arithmetic_result(ty.Vec(ty.CHAR, 4), ty.CHAR) == ty.Vec(ty.CHAR, 4)


def test_generation_is_deterministic_and_defined():
    for index in range(6):
        first, second = generate(11, index), generate(11, index)
        assert program_source(first.program) == program_source(second.program)
        for b in first.program.buffers:
            if b.role in ("out", "atomic"):
                expected = [storage_array(b, g.expected[b.name]).tobytes() for g in (first, second)]
                assert expected[0] == expected[1]


def _without(prog, drop) -> object:
    """A copy of prog whose kernel body (top level) lacks the statements `drop` picks."""
    p = copy.deepcopy(prog)
    p.body = [s for k, s in enumerate(p.body) if not drop(k, s, p.body)]
    return p


def test_threadgroup_atomics_must_be_stored_and_ordered_by_barriers():
    """The reducer deleted the barriers and the store around a threadgroup atomic and reported
    the race it made as a finding (seed 3000, program 111): the model now refuses both."""
    prog = generate(3000, 111).program
    model.run(copy.deepcopy(prog))  # as generated: defined
    read = next(k for k, s in enumerate(prog.body) if isinstance(s, t.AtomicRead) and s.shared)
    store = next(k for k, s in enumerate(prog.body) if isinstance(s, t.If) and isinstance(s.then[0], t.Atomic)
                 and s.then[0].op == "store")
    # lid 0 stores, every thread loads: in one barrier interval, the schedule decides
    no_barrier = _without(prog, lambda k, s, body: store < k < read)
    with pytest.raises(ProgramError, match="another thread's access"):
        model.run(no_barrier)
    no_store = _without(prog, lambda k, s, body: k == store)
    with pytest.raises(ProgramError, match="before it is stored"):
        model.run(no_store)


@pytest.mark.skipif(not workarounds.active("divergent-simd"), reason="the divergent-simd workaround is gone with its fix")
def test_simd_functions_stay_in_uniform_control_flow_while_the_workaround_is_on():
    """simd_or is defined over the active lanes, but the CPU backend matches it with the next
    SIMD-group function the other lanes call (workarounds.py, divergent-simd)."""
    prog = copy.deepcopy(generate(3000, 111).program)
    gid = t.Ref(ty=ty.UINT, name="gid")
    odd = t.Binary(ty=ty.BOOL, op="==", a=t.Binary(ty=ty.UINT, op="&", a=gid, b=t.Lit(ty=ty.UINT, value=1)),
                   b=t.Lit(ty=ty.UINT, value=1))
    everyone = t.Decl(name="vx", ty=ty.UINT, init=t.Simd(ty=ty.UINT, fn="simd_or", args=[gid]))
    prog.body.insert(0, everyone)
    model.run(copy.deepcopy(prog))
    prog.body[0] = t.If(cond=odd, then=[everyone])
    assert workarounds.active("divergent-simd")
    with pytest.raises(ProgramError, match="part of a SIMD-group"):
        model.run(prog)


def _run_kernel(body: list, helpers: list = (), threads: int = 32) -> dict:
    out = t.Buffer(name="out", ty=ty.INT, role="out", length=threads, data=ints([0] * threads))
    prog = t.Program(name="k", category="control", threads=threads, group=32, buffers=[out], shared=[],
                     helpers=list(helpers), body=body)
    memory, undefined = model.run(prog)
    assert not undefined
    return memory


def test_a_helper_in_a_loop_condition_runs_for_lanes_that_continued():
    # for (int i = 0; i < limit(8); i += 1) { if (gid % 2 == 1) continue; acc += 1; }  out[gid] = acc + i
    gid = t.Ref(ty=ty.UINT, name="gid")
    limit = t.Helper(name="limit", params=[("p", ty.INT, None)], ret=ty.INT,
                     body=[t.Return(value=t.Ref(ty=ty.INT, name="p"))])
    odd = t.Binary(ty=ty.BOOL, op="==", a=t.Binary(ty=ty.UINT, op="%", a=gid, b=t.Lit(ty=ty.UINT, value=2)),
                   b=t.Lit(ty=ty.UINT, value=1))
    loop = t.For(var="i", ty=ty.INT, start=t.Lit(ty=ty.INT, value=0),
                 end=t.CallHelper(ty=ty.INT, name="limit", args=[t.Lit(ty=ty.INT, value=8)]),
                 body=[t.If(cond=odd, then=[t.Continue()]),
                       t.Assign(name="acc", op="+=", value=t.Lit(ty=ty.INT, value=1))])
    total = t.Binary(ty=ty.INT, op="+", a=t.Ref(ty=ty.INT, name="acc"), b=t.Ref(ty=ty.INT, name="i"))
    memory = _run_kernel([t.Decl(name="acc", ty=ty.INT, init=t.Lit(ty=ty.INT, value=0)), loop,
                          t.Store(buffer="out", index=gid, value=total)], [limit])
    assert list(memory["out"]) == [16 if g % 2 == 0 else 8 for g in range(32)]


def test_conditional_arms_of_two_types_take_the_common_type():
    # out[gid] = (gid < 16 ? uchar(64) : 2030664764) with the arms' common type int, then
    # `c ? char(-1) : 5u` as a uint: -1 converted (4294967295), stored to an int as -1
    gid = t.Ref(ty=ty.UINT, name="gid")
    c = t.Binary(ty=ty.BOOL, op="<", a=gid, b=t.Lit(ty=ty.UINT, value=16))
    mixed = t.Cond(ty=ty.INT, c=c, a=t.Lit(ty=ty.UCHAR, value=64), b=t.Lit(ty=ty.INT, value=2030664764))
    memory = _run_kernel([t.Store(buffer="out", index=gid, value=mixed)])
    assert list(memory["out"]) == [64] * 16 + [2030664764] * 16
    signed = t.Cond(ty=ty.UINT, c=c, a=t.Lit(ty=ty.CHAR, value=-1), b=t.Lit(ty=ty.UINT, value=5))
    memory = _run_kernel([t.Store(buffer="out", index=gid, value=t.Convert(ty=ty.INT, a=signed, style="implicit"))])
    assert list(memory["out"]) == [-1] * 16 + [5] * 16


def test_increments_splats_and_declared_lambda_returns():
    # short2 v = 32767 (an int broadcast); v.x++; --v[1];  auto f = [&](short p) -> char { return p; };
    # half h = 1.0h; h += 2^-11 + 2^-22 (rounded once, from float);
    # out[gid] = f(v.x) + v.y + 1000 * int(h == 1.0009765625h)
    v2 = ty.Vec(ty.SHORT, 2)
    splat = t.Convert(ty=v2, a=t.Lit(ty=ty.INT, value=32767), style="implicit")
    inc = t.Assign(name="v", op="++", value=t.Lit(ty=ty.INT, value=1), comps=(0,))
    dec = t.Assign(name="v", op="--", value=t.Lit(ty=ty.INT, value=1), index=t.Lit(ty=ty.UINT, value=1), prefix=True)
    lam = t.LambdaDef(name="f", params=[("p", ty.SHORT)], ret=ty.CHAR, declared=True,
                      value=t.Convert(ty=ty.CHAR, a=t.Ref(ty=ty.SHORT, name="p"), style="implicit"))
    small = t.Lit(ty=ty.FLOAT, value=2.0**-11 + 2.0**-22)
    h = [t.Decl(name="h", ty=ty.HALF, init=t.Lit(ty=ty.HALF, value=1.0)), t.Assign(name="h", op="+=", value=small)]
    once = t.Binary(ty=ty.BOOL, op="==", a=t.Ref(ty=ty.HALF, name="h"), b=t.Lit(ty=ty.HALF, value=1.0 + 2.0**-10))
    vx = t.Swizzle(ty=ty.SHORT, a=t.Ref(ty=v2, name="v"), comps=(0,))
    total = t.Binary(ty=ty.INT, op="+", a=t.Binary(ty=ty.INT, op="+", a=t.CallLambda(ty=ty.CHAR, name="f", args=[vx]),
                                                   b=t.Swizzle(ty=ty.SHORT, a=t.Ref(ty=v2, name="v"), comps=(1,))),
                     b=t.Binary(ty=ty.INT, op="*", a=t.Lit(ty=ty.INT, value=1000), b=t.Convert(ty=ty.INT, a=once)))
    gid = t.Ref(ty=ty.UINT, name="gid")
    body = [t.Decl(name="v", ty=v2, init=splat), inc, dec, lam] + h + [t.Store(buffer="out", index=gid, value=total)]
    memory = _run_kernel(body)
    assert list(memory["out"]) == [0 + 32766 + 1000] * 32  # v.x wraps to -32768, a char 0
    prog = t.Program(name="k", category="control", threads=32, group=32, shared=[], helpers=[], body=body,
                     buffers=[t.Buffer(name="out", ty=ty.INT, role="out", length=32, data=ints([0] * 32))])
    text = program_source(prog)
    for line in ("short2 v = 32767;", "v.x++;", "--v[1u];", "-> char { return p; }", "h += "):
        assert line in text


def test_a_scalar_assigned_to_a_vector_splats():
    # int3 v = int3(1, 2, 3); v = int(gid) + 5; v.xy = 7.75f (converted: 7);  out[gid] = v.x + 10 * v.y + 100 * v.z
    # (seed 28400 program 217: `v6 = int(...)` to an int3, which the model could not merge)
    v3 = ty.Vec(ty.INT, 3)
    gid = t.Ref(ty=ty.UINT, name="gid")
    init = t.Convert(ty=v3, a=t.Lit(ty=ty.INT, value=1), style="implicit")
    whole = t.Assign(name="v", op="=", value=t.Binary(ty=ty.INT, op="+", a=t.Convert(ty=ty.INT, a=gid),
                                                     b=t.Lit(ty=ty.INT, value=5)))
    two = t.Assign(name="v", op="=", value=t.Lit(ty=ty.FLOAT, value=7.75), comps=(0, 1))
    comp = lambda k: t.Swizzle(ty=ty.INT, a=t.Ref(ty=v3, name="v"), comps=(k,))  # noqa: E731
    total = t.Binary(ty=ty.INT, op="+", a=comp(0), b=t.Binary(
        ty=ty.INT, op="+", a=t.Binary(ty=ty.INT, op="*", a=t.Lit(ty=ty.INT, value=10), b=comp(1)),
        b=t.Binary(ty=ty.INT, op="*", a=t.Lit(ty=ty.INT, value=100), b=comp(2))))
    memory = _run_kernel([t.Decl(name="v", ty=v3, init=init), whole, two, t.Store(buffer="out", index=gid, value=total)])
    assert list(memory["out"]) == [7 + 70 + 100 * (g + 5) for g in range(32)]
