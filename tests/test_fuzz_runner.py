"""The fuzzer's batch runner (tools/msl_fuzz/runner.py) isolating compile errors: a library of
generated programs, two of them given a compile error, costs a bounded number of compiles (not
a bisection, which made CI's CUDA test run past its 100 s on one failing program), each failing
program gets the error its own compile gives, and the others run and match the model."""

from __future__ import annotations

import copy
import re
import sys
from pathlib import Path

import pytest

import metalcall as mc

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tools.msl_fuzz import runner  # noqa: E402
from tools.msl_fuzz.programs import generate  # noqa: E402

BROKEN = {3: "int {name}_bad() {{ return as_type<int>(1ul); }} ",  # an error in the prelude's template
          8: "int {name}_bad() {{ int2 q = int3(1); return q.x; }} "}  # an error at the user's line


def _programs(constants: bool) -> list:
    programs = [generate(5, i) for i in range(12)]
    assert any(g.function_constant is not None for p in programs for g in p.program.globals)
    if not constants:  # plain constants: the library compiles at once rather than per kernel
        programs = [copy.deepcopy(p) for p in programs]
        for p in programs:
            for g in p.program.globals:
                g.function_constant = None
    return programs


@pytest.mark.parametrize("constants", [False, True], ids=["plain", "function-constants"])
@pytest.mark.parametrize("backend", ["cpu", "cuda"])
def test_compile_errors_are_isolated_in_few_compiles(backend, constants, monkeypatch):
    if backend not in mc.backends():
        pytest.skip(f"no {backend} backend in this build")
    try:
        device = runner.open_device(backend)
    except mc.DeviceError as exc:
        pytest.skip(f"no usable {backend} device: {exc}")
    compiles = []

    def with_errors(dev, programs, defines=None):
        compiles.append(len(programs))
        source = runner.library_source([g.program for g in programs])
        for g in programs:  # on the kernel's own line: the programs' lines stay as printed
            if g.index in BROKEN:
                head = f"kernel void {g.program.name}("
                source = source.replace(head, BROKEN[g.index].format(name=g.program.name) + head, 1)
        return dev.compile(source, fast_math=False, defines=defines)

    monkeypatch.setattr(runner, "compile_library", with_errors)
    programs = _programs(constants)
    outcomes = {o.name: o for o in runner.run_batch(device, backend, programs)}
    assert len(outcomes) == len(programs)
    assert len(compiles) <= 4, compiles  # halving would take 2 * 2 * log2(12), about 14
    for g in programs:
        o = outcomes[g.program.name]
        if g.index not in BROKEN:
            assert o.status == "ok", (o.name, o.detail)
            continue
        assert o.status == "compile_error", (o.name, o.status, o.detail)
        alone = runner.run_batch(device, backend, [g])[0]  # the error its own compile reports
        assert alone.status == "compile_error"
        where = re.search(r"source\.metal[:(]\d+", alone.detail).group(0)
        assert where in o.detail, (o.detail, alone.detail)
