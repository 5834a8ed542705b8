"""What the preprocessor of the translating backends may read (issue P2.4 item 2): the MSL
headers, which the prelude provides, and nothing of the host. A host file must not be pulled
in by any spelling of a directive that names a file (`#import`, `#inc\\<newline>lude`, the
digraph `%:include`, a directive after a lone carriage return, which clang takes as a line end,
`#pragma GCC dependency`, `_Pragma` made by macros), nor probed by `__has_include` (answered
from the MSL headers); a `defines=` name or value holding a control character is refused.
Inactive branches may hold anything: the policy applies to the lines the preprocessor keeps.
Each case uses a real host file that defines VALUE, so a source that read it would run."""

from __future__ import annotations

import numpy as np
import pytest

import metalcall as mc

HEADER = "#include <metal_stdlib>\nusing namespace metal;\n"
KERNEL = "kernel void k(device float* out [[buffer(0)]], uint i [[thread_position_in_grid]]) { out[i] = VALUE; }\n"
INCLUDE_MESSAGE = ("is not supported: metalcall compiles one source (the metal_ headers are built in); paste the "
                   "code in, or pass macros with defines=")


@pytest.fixture(params=["cpu", "cpu-checked"])
def cpu(request):
    return mc.Device("cpu", checked=request.param == "cpu-checked")


@pytest.fixture
def host_file(tmp_path):
    path = tmp_path / "host_values.h"
    path.write_text("#define VALUE 99.0f\n")
    return str(path)


def run(device, src, **options):
    out = np.zeros(4, np.float32)
    device.compile(src, **options).k(4, out)
    return out


def refused(device, src, line, column, message):
    with pytest.raises(mc.CompileError) as info:
        run(device, src)
    e = info.value
    assert str(e).splitlines()[0] == f"source.metal:{line}:{column}: error: {message}"
    assert (e.line, e.column) == (line, column)


@pytest.mark.parametrize("spelling,column", [
    ('#import "{f}"', 1),
    ('#inc\\\nlude "{f}"', 1),
    ('%:include "{f}"', 1),
    ('  #  include "{f}"', 3),
    ('/* a comment */ # /* another */ include "{f}"', 17),
    ('#include_next "{f}"', 1),
])
def test_directives_naming_a_host_file_are_refused(cpu, host_file, spelling, column):
    directive = spelling.format(f=host_file)
    src = HEADER + directive + "\n" + KERNEL
    name = "import" if "import" in directive else "include_next" if "include_next" in directive else "include"
    refused(cpu, src, 3, column, f'#{name} "{host_file}" {INCLUDE_MESSAGE}')


def test_directive_after_a_lone_carriage_return(cpu, host_file):
    # clang ends the pragma's line at the \r: the #include is a directive of its own.
    src = HEADER + f'#pragma unroll\r#include "{host_file}"\n' + KERNEL
    refused(cpu, src, 4, 1, f'#include "{host_file}" {INCLUDE_MESSAGE}')


def test_host_include_in_inactive_branches_is_no_error(cpu, host_file):
    src = HEADER + f'#if 0\n#include "{host_file}"\n#elif defined(__METAL__)\n#define VALUE 3.0f\n#else\n#import <stdio.h>\n#endif\n' + KERNEL
    np.testing.assert_array_equal(run(cpu, src), 3.0)


def test_has_include_answers_from_the_msl_headers(cpu, host_file):
    src = HEADER + (f'#if __has_include("{host_file}") || __has_include(<{host_file}>) || __has_include(<stdio.h>)\n'
                    "#define VALUE 1.0f\n"
                    "#elif __has_include(<metal_stdlib>) && __has_include_next(<metal_math>)\n"
                    "#define VALUE 2.0f\n#endif\n") + KERNEL
    np.testing.assert_array_equal(run(cpu, src), 2.0)


def test_has_include_of_a_computed_name_is_refused(cpu, host_file):
    src = HEADER + f'#define HDR "{host_file}"\n#if __has_include(HDR)\n#define VALUE 1.0f\n#else\n#define VALUE 2.0f\n#endif\n' + KERNEL
    refused(cpu, src, 4, 5, "__has_include of a header name that macros make is not supported: metalcall answers "
                            '__has_include from the MSL headers, for a header name written out (<metal_stdlib>, "file.h")')


def test_pragmas_that_read_files_are_refused(cpu, tmp_path):
    missing = tmp_path / "no_such_file.h"
    src = HEADER + f'#pragma GCC dependency "{missing}"\n#define VALUE 1.0f\n' + KERNEL
    refused(cpu, src, 3, 1, "'#pragma GCC dependency' is not an MSL pragma (loop and diagnostic pragmas are) "
                            "[MSL rule: pragmas]")
    inactive = HEADER + f'#ifdef NOT_DEFINED\n#pragma GCC dependency "{missing}"\n#endif\n#define VALUE 4.0f\n' + KERNEL
    np.testing.assert_array_equal(run(cpu, inactive), 4.0)


def test_pragma_operator_made_by_macros_is_refused(cpu, tmp_path):
    # The preprocessor never carries out a _Pragma, pasted or not: a pragma that reads a file is
    # refused at the operator, before any #pragma line is written.
    missing = tmp_path / "no_such_file.h"
    src = HEADER + f'#define P(a, b) a##b\nP(_Pra, gma)("GCC dependency \\"{missing}\\"")\n#define VALUE 1.0f\n' + KERNEL
    refused(cpu, src, 4, 1, "'_Pragma(\"GCC dependency\")' is not an MSL pragma (loop and diagnostic pragmas are) "
                            "[MSL rule: pragmas]")


def test_pragma_operator_is_a_pragma_line(cpu):
    # `_Pragma("unroll")` from a pasted name and from a macro, mid-line: written as #pragma lines.
    src = (HEADER + '#define P(a, b) a##b\n#define UNROLL _Pragma("unroll")\n#define VALUE 1.0f\n' +
           KERNEL.replace("{", '{ float s = 0.0f; P(_Pra, gma)("nounroll") for (int k = 0; k < 3; ++k) s += 1.0f; '
                               'UNROLL for (int k = 0; k < 2; ++k) s += 1.0f; if (s != 5.0f) return;', 1))
    np.testing.assert_array_equal(run(cpu, src), 1.0)


@pytest.mark.parametrize("defines,message", [
    ({"A": '1\r#include "HOST"'}, "defines: the value of 'A' holds a control character (\\x0d): a macro's value is "
                                  "one line of printable text"),
    ({"A": "1\n2"}, "defines: the value of 'A' holds a control character (\\x0a): a macro's value is one line of "
                    "printable text"),
    ({"A": "1\t2"}, "defines: the value of 'A' holds a control character (\\x09): a macro's value is one line of "
                    "printable text"),
    ({"A": "1\x00"}, "defines: the value of 'A' holds a control character (\\x00): a macro's value is one line of "
                     "printable text"),
    ({"A\rB": "1"}, "defines: 'A\\x0dB' is not a valid macro name (letters, digits and _)"),
    ({"A B": "1"}, "defines: 'A B' is not a valid macro name (letters, digits and _)"),
])
def test_defines_with_control_characters_are_refused(cpu, host_file, defines, message):
    defines = {k: v.replace("HOST", host_file) for k, v in defines.items()}
    with pytest.raises(mc.ArgumentError) as info:
        run(cpu, HEADER + "#define VALUE 1.0f\n" + KERNEL, defines=defines)
    assert str(info.value) == message
    np.testing.assert_array_equal(run(cpu, HEADER + "#define VALUE 5.0f\n" + KERNEL, defines={"A": "1"}), 5.0)


def test_names_metalcall_reserves(cpu):
    src = HEADER + "#define VALUE __metalcall_loop_pragma\n" + KERNEL
    refused(cpu, src, 3, 15, "'__metalcall_loop_pragma' is a name metalcall reserves for itself; choose another")
