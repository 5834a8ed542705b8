"""CompileError diagnostics point at the USER's source: line, column, source_line, log.

The CPU and CUDA backends translate MSL to C++; an error found by the system
compiler must still be reported at the user's line and column, not the
translated code's (DESIGN.md §3).
"""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

import metalcall as mc
from mctest import check_usable

HEADER = "#include <metal_stdlib>\nusing namespace metal;\n"

UNKNOWN_IDENT_SRC = """#include <metal_stdlib>
using namespace metal;

kernel void k(device float* a [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    float x = a[i];
    a[i] = x + undefined_name;
}
"""

TYPE_ERROR_SRC = """#include <metal_stdlib>
using namespace metal;
kernel void k(device float* a [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    float2 v = float2(1.0f, 2.0f);
    float3 w = v;
    a[i] = w.x;
}
"""

POINTER_TYPE_ERROR_SRC = """kernel void k(device float* a [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    device int* p = a;
    a[i] = p[0];
}
"""

SYNTAX_ERROR_SRC = """kernel void k(device float* a [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    a[i] = (a[i] * 2.0f;
}
"""

HELPER_ERROR_SRC = """#include <metal_stdlib>;
using namespace metal;
/* A multi-line comment
   before the helper
   shifts nothing. */
float helper(float x) {
    return x + nope;   // line 7
}
kernel void k(device float* a [[buffer(0)]], uint i [[thread_position_in_grid]]) { a[i] = helper(a[i]); }
"""

SECOND_KERNEL_ERROR_SRC = HEADER + """kernel void good(device float* a [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    a[i] = 1.0f;
}
kernel void bad(device float* a [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    a[i] = 2.0f * missing_in_second;
}
"""

BARRIER_SRC = HEADER + """kernel void neighbours(device uint* out [[buffer(0)]], uint i [[thread_position_in_grid]],
                       uint l [[thread_position_in_threadgroup]], uint n [[threads_per_threadgroup]],
                       uint g [[threadgroup_position_in_grid]], uint t [[dispatch_threads_per_threadgroup]]) {
    out[i] = i * 10u;
    threadgroup_barrier(mem_flags::mem_device);
    uint j = g * t + (l + 1u) % n;
    out[i + 4096u] = out[j];
}
"""
BARRIER_LINE = 7


def _line_of(src: str, needle: str) -> int:
    for k, line in enumerate(src.splitlines(), start=1):
        if needle in line:
            return k
    raise AssertionError(needle)


def _col_of(src: str, needle: str, occurrence_line_needle: str | None = None) -> int:
    line = src.splitlines()[_line_of(src, occurrence_line_needle or needle) - 1]
    return line.index(needle) + 1


def compile_error(dev, src, **kw) -> mc.CompileError:
    with pytest.raises(mc.CompileError) as info:
        dev.compile(src, **kw)
    e = info.value
    assert isinstance(e.log, str) and e.log
    assert isinstance(e.source_line, str)
    check_usable(dev)
    return e


def assert_points_at(e: mc.CompileError, src: str, line: int, column: int | None = None):
    assert e.line == line, f"line {e.line} != {line}:\n{e}"
    assert e.source_line == src.splitlines()[line - 1]
    assert isinstance(e.column, int) and 1 <= e.column <= len(e.source_line) + 1
    if column is not None:
        assert e.column == column, f"column {e.column} != {column}:\n{e}"
    assert f":{line}:" in str(e)
    assert f":{line}:" in e.log


def test_unknown_identifier_line_and_column(device):
    e = compile_error(device, UNKNOWN_IDENT_SRC)
    assert_points_at(e, UNKNOWN_IDENT_SRC, 6, _col_of(UNKNOWN_IDENT_SRC, "undefined_name"))
    assert "undefined_name" in str(e) and "undefined_name" in e.log
    assert f"6:{e.column}" in str(e)
    assert e.source_line.strip() == "a[i] = x + undefined_name;"
    assert "^" in str(e), "the message shows a caret under the error"


def test_type_error_points_at_the_statement(device):
    e = compile_error(device, TYPE_ERROR_SRC)
    assert_points_at(e, TYPE_ERROR_SRC, 5)
    # Compilers point at the declarator (clang) or at the initializer (g++).
    line = TYPE_ERROR_SRC.splitlines()[4]
    assert e.column in (line.index("w") + 1, line.index("v;") + 1)
    assert "float3" in str(e) or "vec" in str(e), "the message talks about the user's types"
    assert "mtl_float" not in str(e), "translator-internal names are not shown"


def test_pointer_type_error(device):
    e = compile_error(device, POINTER_TYPE_ERROR_SRC)
    assert_points_at(e, POINTER_TYPE_ERROR_SRC, 2)
    line = POINTER_TYPE_ERROR_SRC.splitlines()[1]
    # The address space `device` is dropped in translation; columns still map back.
    assert e.column in (line.index("p ") + 1, line.index("a;") + 1)


def test_syntax_error(device):
    e = compile_error(device, SYNTAX_ERROR_SRC)
    assert_points_at(e, SYNTAX_ERROR_SRC, 2, _col_of(SYNTAX_ERROR_SRC, ";", "(a[i]"))
    assert ")" in str(e)


def test_error_in_helper_after_comments_and_include_semicolon(device):
    e = compile_error(device, HELPER_ERROR_SRC)
    assert_points_at(e, HELPER_ERROR_SRC, 7, _col_of(HELPER_ERROR_SRC, "nope"))


def test_error_in_second_kernel(device):
    e = compile_error(device, SECOND_KERNEL_ERROR_SRC)
    line = _line_of(SECOND_KERNEL_ERROR_SRC, "missing_in_second")
    assert_points_at(e, SECOND_KERNEL_ERROR_SRC, line, _col_of(SECOND_KERNEL_ERROR_SRC, "missing_in_second"))


def test_defines_do_not_shift_lines(device):
    e = compile_error(device, UNKNOWN_IDENT_SRC, defines={"A": 1, "B": 2.0, "C": "x"})
    assert_points_at(e, UNKNOWN_IDENT_SRC, 6, _col_of(UNKNOWN_IDENT_SRC, "undefined_name"))


def test_error_far_down_a_long_source(device):
    filler = "".join(f"inline float f{k}(float x) {{ return x + {k}.0f; }}\n" for k in range(300))
    src = HEADER + filler + "kernel void k(device float* a [[buffer(0)]]) {\n    a[0] = f299(1.0f) + zz_top;\n}\n"
    e = compile_error(device, src)
    assert_points_at(e, src, _line_of(src, "zz_top"), _col_of(src, "zz_top"))


def test_tabs_and_crlf(device):
    src = "kernel void k(device float* a [[buffer(0)]], uint i [[thread_position_in_grid]]) {\r\n\t\ta[i] = zzz;\r\n}\r\n"
    e = compile_error(device, src)
    assert e.line == 2
    assert e.source_line == "\t\ta[i] = zzz;", "no trailing \\r"
    assert e.column == 10  # a tab counts as one column, as compilers count


def test_error_on_last_line_without_newline(device):
    src = "kernel void k(device float* a [[buffer(0)]]) { a[0] = qqq; }"
    e = compile_error(device, src)
    assert_points_at(e, src, 1, src.index("qqq") + 1)


# ---- errors of the kernel signature, found by the front end -----------------------------

SIGNATURE_ERRORS = [
    (
        "non-void",
        "kernel int k(device float* a [[buffer(0)]]) { return 0; }\n",
        1,
        "int",
        "void",
    ),
    (
        "builtin-type",
        "kernel void k(device float* a [[buffer(0)]], float i [[thread_position_in_grid]]) { a[0] = i; }\n",
        1,
        "i [[",
        "uint",
    ),
    (
        "missing-attribute",
        "kernel void k(device float* a [[buffer(0)]],\n              uint i) { a[0] = i; }\n",
        2,
        "i)",
        "attribute",
    ),
    (
        "duplicate-kernel",
        "kernel void k(device float* a [[buffer(0)]]) { }\nkernel void k(device float* b [[buffer(0)]]) { }\n",
        2,
        "k(",
        "redefinition",
    ),
    (
        "duplicate-index",
        "kernel void k(device float* a [[buffer(0)]],\n              device float* b [[buffer(0)]]) { }\n",
        2,
        "b [[",
        "",
    ),
    (
        "unknown-builtin",
        "kernel void k(device float* a [[buffer(0)]], uint i [[thread_position_in_grod]]) { a[i] = 1.0f; }\n",
        1,
        "thread_position_in_grod",
        "thread_position_in_grod",
    ),
]


@pytest.mark.parametrize("src,line,col_needle,message", [c[1:] for c in SIGNATURE_ERRORS], ids=[c[0] for c in SIGNATURE_ERRORS])
def test_signature_errors(device, src, line, col_needle, message):
    e = compile_error(device, src)
    assert e.line == line, str(e)
    assert e.source_line == src.splitlines()[line - 1]
    if device.backend != "metal":  # our front end: its messages and exact columns
        if message:
            assert message in str(e)
        assert e.column == src.splitlines()[line - 1].index(col_needle) + 1, str(e)


# ---- unsupported constructs ---------------------------------------------------------------


def test_barrier_is_supported_or_reported_at_its_line(device):
    try:
        lib = device.compile(BARRIER_SRC)
    except mc.CompileError as e:
        assert "not supported" in str(e)
        assert e.line == BARRIER_LINE
        assert "threadgroup_barrier" in e.source_line
        assert e.column == e.source_line.index("threadgroup_barrier") + 1
        check_usable(device)
        return
    # Supported: every thread sees its neighbour's write after the barrier.
    n, tg = 1000, 64
    out = np.zeros(n + 4096, np.uint32)
    lib.neighbours(n, out, threadgroup=tg)
    i = np.arange(n)
    g, l = i // tg, i % tg
    size = np.minimum(tg, n - g * tg)
    np.testing.assert_array_equal(out[4096 : 4096 + n], (g * tg + (l + 1) % size) * 10)


# (A vertex function beside kernels was one until render-stage functions were left out of the
# translation: tests/conformance/test_generated_msl_constructs.py.)
UNSUPPORTED_ON_CPU = [
    (
        "include",
        '#include "my_header.h"\nkernel void k(device float* a [[buffer(0)]]) { a[0] = 1.0f; }\n',
        1,
        "#include",
    ),
]


@pytest.mark.parametrize("src,line,needle", [c[1:] for c in UNSUPPORTED_ON_CPU], ids=[c[0] for c in UNSUPPORTED_ON_CPU])
def test_unsupported_construct_reported_at_its_line(cpu_device, src, line, needle):
    e = compile_error(cpu_device, src)
    assert "not supported" in str(e)
    assert e.line == line
    assert e.source_line == src.splitlines()[line - 1]
    assert e.column == e.source_line.index(needle) + 1


def test_compile_error_attributes_types(device):
    e = compile_error(device, UNKNOWN_IDENT_SRC)
    assert isinstance(e, mc.Error) and isinstance(e, mc.CompileError)
    assert type(e.line) is int and type(e.column) is int
    assert "undefined_name" in str(e).splitlines()[0]


def _find_compiler(name: str) -> str | None:
    """The compiler on PATH; for clang++ also a versioned one (Debian installs clang++-16)."""
    if name == "clang++":
        for candidate in ["clang++"] + [f"clang++-{v}" for v in range(22, 13, -1)]:
            if shutil.which(candidate):
                return candidate
        return None
    return name if shutil.which(name) else None


@pytest.mark.parametrize("compiler_name", ["g++", "clang++"])
def test_diagnostics_map_back_with_each_host_compiler(run_python, cpu_device, compiler_name):
    # The CPU backend picks a system compiler; METALCALL_CXX chooses one. Each one's
    # diagnostics must map back to the user's line and column.
    compiler = _find_compiler(compiler_name)
    if compiler is None:
        pytest.skip(f"{compiler_name} is not installed")
    cases = {
        "unknown": (UNKNOWN_IDENT_SRC, 6, _col_of(UNKNOWN_IDENT_SRC, "undefined_name")),
        "syntax": (SYNTAX_ERROR_SRC, 2, _col_of(SYNTAX_ERROR_SRC, ";", "(a[i]")),
        "helper": (HELPER_ERROR_SRC, 7, _col_of(HELPER_ERROR_SRC, "nope")),
    }
    code = (
        "import json, numpy as np, metalcall as mc\n"
        f"cases = {json.dumps({k: v[0] for k, v in cases.items()})}\n"
        "dev = mc.Device('cpu'); out = {}\n"
        "for name, src in cases.items():\n"
        "    try:\n"
        "        dev.compile(src); out[name] = None\n"
        "    except mc.CompileError as e:\n"
        "        out[name] = [e.line, e.column, e.source_line]\n"
        "a = np.arange(4, dtype=np.float32)\n"
        "dev.compile('kernel void k(device float* a [[buffer(0)]], uint i [[thread_position_in_grid]]) { a[i] *= 3.0f; }').k(4, a)\n"
        "out['good'] = a.tolist()\n"
        "print(json.dumps(out))\n"
    )
    r = run_python(code, env={"METALCALL_CXX": compiler})
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout.strip().splitlines()[-1])
    for name, (src, line, col) in cases.items():
        assert out[name] is not None, f"{name} compiled"
        assert out[name][0] == line and out[name][1] == col, (name, out[name])
        assert out[name][2] == src.splitlines()[line - 1]
    assert out["good"] == [0.0, 3.0, 6.0, 9.0]
