"""Attack: a kernel whose expression tree is thousands of levels deep, against the translation verifier.

The verifier (docs/design.md, "Clang-based verifier") parses the translated C++ with libclang in
the calling process. libclang parsed on a thread of its own with a fixed 8 MiB stack, and Clang's
parse and walks recurse once per level of an expression tree: one flat statement of 15,000
`+ 1` (under 100 kB, which the host compiler builds) overflowed it, and the SIGSEGV ended the
Python process. The verifier now parses on a thread of ours with a 4 GiB reserved stack, far
beyond the 64 MiB the host compiler (which runs first) may use (docs/security.md): a source the
host compiler built is verified and runs; one too deep for the host compiler is its CompileError.

Each case runs in a child process, so that a crash fails the test instead of ending pytest.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

import metalcall as mc

pytestmark = [
    pytest.mark.skipif("cpu" not in mc.backends(), reason="the cpu backend is not built in"),
    pytest.mark.skipif("cpu" in mc.backends() and not mc._core._translation_verifier_library()[0],
                       reason="libclang (the translation verifier) does not load here"),
]

HEADER = "#include <metal_stdlib>\nusing namespace metal;\n"


def kernel(body: str) -> str:
    return HEADER + "kernel void k(device int* o [[buffer(0)]], uint i [[thread_position_in_grid]]) {\n" + body + "\n}\n"


def flat(n: int) -> tuple[str, int]:
    return kernel("int s = 0" + " + 1" * n + "; o[0] = s;"), n


def flat_variable(n: int) -> tuple[str, int]:  # not a constant: no folding anywhere
    return kernel("int x = o[1] + 3; int s = 0" + " + x" * n + "; o[0] = s;"), 3 * n


def xor_chain(n: int) -> tuple[str, int]:
    return kernel("uint x = uint(o[1]) + 5u; uint s = 1u" + " ^ x" * n + "; o[0] = int(s);"), 1 ^ (5 if n % 2 else 0)


def float_products(n: int) -> tuple[str, int]:
    return kernel("float f = float(o[1]) + 1.0f; float s = 2.0f" + " * f" * n + "; o[0] = int(s);"), 2


def negations(n: int) -> tuple[str, int]:
    return kernel("int x = o[1] + 1; int s = " + "- " * n + "x; o[0] = s;"), (-1) ** n


def nots(n: int) -> tuple[str, int]:
    return kernel("int x = o[1] + 1; int s = " + "!" * n + "x; o[0] = s;"), 1 if n % 2 == 0 else 0


def commas(n: int) -> tuple[str, int]:
    return kernel("int x = o[1] + 1; int s = (x" + ", x" * n + "); o[0] = s;"), 1


def assignments(n: int) -> tuple[str, int]:
    return kernel("int x = o[1] + 1; int s; int t; s = " + "t = " * n + "x; o[0] = s;"), 1


def else_ifs(n: int) -> tuple[str, int]:
    chain = "".join(f" else if (x == {j + 2}) s = {j + 2};" for j in range(n))
    return kernel("int x = o[1] + 1; int s = 0; if (x == 0) s = 1;" + chain + " else s = -7; o[0] = s;"), -7


def ands(n: int) -> tuple[str, int]:
    return kernel("int x = o[1] + 1; bool s = x > 0" + " && x > 0" * n + "; o[0] = s;"), 1


def table(n: int) -> tuple[str, int]:
    values = ", ".join(f"-{j}" for j in range(n))
    return (HEADER + f"constant int t[{n}] = {{{values}}};\n"
            "kernel void k(device int* o [[buffer(0)]], uint i [[thread_position_in_grid]]) {\n"
            f"o[0] = t[o[1] + {n - 1}];\n}}\n"), -(n - 1)


SHAPES = {f.__name__: f for f in (flat, flat_variable, xor_chain, float_products, negations, nots, commas, assignments,
                                  else_ifs, ands, table)}

CHILD = r"""
import json, sys
import numpy as np
import metalcall as mc
sys.path.insert(0, sys.argv[1])
from test_attack_verifier_depth import SHAPES
out = {}
for shape, n in json.loads(sys.argv[2]):
    src, want = SHAPES[shape](n)
    modes = [("cpu", lambda: mc.Device("cpu", sandbox=False)),
             ("checked", lambda: mc.Device("cpu", checked=True, sandbox=False))]
    if sys.platform.startswith("linux"):  # compiled and verified in this process too
        modes.append(("sandbox", lambda: mc.Device("cpu", sandbox=True)))
    for mode, make in modes:
        try:
            # The mode in a comment: its own cache entry, so that every mode verifies.
            lib = make().compile(src + "// " + mode + "\n")
        except mc.CompileError as e:
            out[f"{shape} {n} {mode}"] = "CompileError " + str(e).splitlines()[0]
            continue
        o = np.zeros(2, np.int32)
        lib.k(1, o)
        out[f"{shape} {n} {mode}"] = [int(o[0]), want]
    print(json.dumps(out), flush=True)
"""


def run_child(cases, tmp_path):
    env = {**os.environ, "METALCALL_CACHE_DIR": str(tmp_path / "cache"), "METALCALL_VERIFY": "1"}
    env.pop("LIBCLANG_NOTHREADS", None)  # the verifier sets it itself
    proc = subprocess.run([sys.executable, "-c", CHILD, os.path.dirname(__file__), json.dumps(cases)],
                          capture_output=True, text=True, env=env, timeout=1200)
    assert proc.returncode == 0, (proc.returncode, proc.stdout[-2000:], proc.stderr[-3000:])
    return json.loads(proc.stdout.strip().splitlines()[-1])


# Deeper than libclang's old 8 MiB parse thread took (about 15,000 `+ 1`), within the host
# compiler's depth at its usual 8 MiB stack: each must be verified and run, with the right value.
@pytest.mark.parametrize("shape,n", [("flat", 20_000), ("flat_variable", 20_000), ("xor_chain", 20_000),
                                     ("float_products", 20_000)])
def test_a_deep_chain_the_host_compiler_builds_is_verified_and_runs(shape, n, tmp_path):
    for key, seen in run_child([[shape, n]], tmp_path).items():
        assert isinstance(seen, list) and seen[0] == seen[1], (key, seen)


# Deeper than the host compiler goes at its usual 8 MiB stack: its CompileError, never a crash of
# the caller (with a larger stack limit the host compiler may build them: then they verify and run).
@pytest.mark.parametrize("shape", ["negations", "nots", "commas", "assignments", "else_ifs"])
def test_a_chain_too_deep_for_the_host_compiler_is_a_compile_error_or_runs(shape, tmp_path):
    for key, seen in run_child([[shape, 60_000]], tmp_path).items():
        if isinstance(seen, list):
            assert seen[0] == seen[1], (key, seen)
        else:
            assert seen.startswith("CompileError") and "nested deeper than its stack allows" in seen, (key, seen)


# Beyond the front end's limit of operators in one statement: refused before anything runs,
# the limit named (the verifier's stack holds about 1.2 million levels; a 16 MiB source more).
@pytest.mark.parametrize("shape", ["flat", "negations", "commas"])
def test_more_operators_in_one_statement_than_the_limit_are_refused(shape, tmp_path):
    for key, seen in run_child([[shape, 100_001]], tmp_path).items():
        assert isinstance(seen, str) and "more than 100000 operators in one statement" in seen, (key, seen)
        assert "[MSL rule: nesting within the compiler's limits]" in seen, (key, seen)


def test_a_table_of_more_elements_than_the_limit_is_no_deep_tree(tmp_path):
    # An initializer's elements are siblings: 150,000 negative numbers compile and run.
    assert run_child([["table", 150_000]], tmp_path)["table 150000 cpu"] == [-149_999, -149_999]


# Shallow versions of every shape compile and run everywhere.
def test_every_shape_at_a_modest_depth_runs(tmp_path):
    cases = [[shape, 1000] for shape in SHAPES]
    for key, seen in run_child(cases, tmp_path).items():
        assert isinstance(seen, list) and seen[0] == seen[1], (key, seen)
