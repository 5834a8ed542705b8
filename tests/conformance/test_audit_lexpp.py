"""Literals, the lexer and the preprocessor (audit lexpp): numeric literals of every spelling
computed against Python's exact integers and fractions, half literals rounded once from their
spelling (C++ [lex.fcon], MSL 2.1: a half literal names the half nearest its value, ties to
even), a source opening with a UTF-8 byte order mark, and the excerpt a preprocessor error
gives. References are Python's `fractions.Fraction` and integers, never the kernel's output.
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

import metalcall as mc
from mcconf import KernelSet, assert_equal

HEADER = "#include <metal_stdlib>\nusing namespace metal;\n"


def _half_of(value: Fraction) -> float:
    """The half nearest `value` (>= 0), ties to even; inf past the largest half's rounding range."""
    if value == 0:
        return 0.0
    e = value.numerator.bit_length() - value.denominator.bit_length()
    while Fraction(2) ** e > value:
        e -= 1
    while Fraction(2) ** (e + 1) <= value:
        e += 1
    ulp = Fraction(2) ** max(e - 10, -24)  # 11 significant bits; subnormals are multiples of 2^-24
    k = value / ulp
    whole = k.numerator // k.denominator
    rest = k - whole
    if rest > Fraction(1, 2) or (rest == Fraction(1, 2) and whole % 2):
        whole += 1
    v = whole * ulp
    return float("inf") if v > 65504 else float(v)


def _value(spelling: str) -> Fraction:
    """The exact value of a floating literal's spelling (suffix h/H dropped, separators removed)."""
    s = spelling.rstrip("hH").replace("'", "")
    if s.lower().startswith("0x"):
        mantissa, exponent = s[2:].lower().split("p")
        whole, _, frac = mantissa.partition(".")
        digits = int((whole or "0") + frac, 16)
        return Fraction(digits) * Fraction(2) ** (int(exponent) - 4 * len(frac))
    return Fraction(s)


# Spellings near halfway points between two halves (a float in between lands on the halfway
# point, then rounds to even: the wrong way), exact ties, subnormals, the overflow edge, and
# every form of the spelling (hexadecimal, separators, no digits before or after the point).
HALF_LITERALS = [
    "1.5h", "65504.0h", "0.1h", ".5h", "1.h", "1e5h", "1E-3H", "0x1.8p1h", "0x1p-24h", "0x1.ffcP15H",
    "6.1035156e-05h", "5.96e-8h", "1e-8h", "1'000.5h",
    "1.00048828125h",          # exactly halfway between 1 and 1 + 2^-10: even, 1
    "1.00146484375h",          # exactly halfway above 1 + 2^-10: even, 1 + 2^-9
    "1.00048828125001h",       # just above the halfway point: 1 + 2^-10 (was 1)
    "1.000488281249999h",      # just below it: 1
    "2.98023223876953125e-8h",  # half the smallest subnormal: a tie, to 0
    "2.98023223876953126e-8h",  # just above: the smallest subnormal (was 0)
    "8.9406967163085938e-8h",  # 1.5 subnormals: a tie, to 2^-23
    "8.94069671630859376e-8h",  # just above: still 2^-23
    "65519.99999999999999h",   # just below the overflow threshold: 65504 (was inf)
    "65520.0h",                # the threshold: inf
    "2049.0000000000001h",     # above the tie between 2048 and 2050: 2050 (was 2048)
    "0.000061035156250000001h",  # 2^-14 just above: 2^-14
    "3.0517578125e-05h",       # 2^-15, a subnormal exactly
    "0.33325195312500001h",    # the tie between two halves near 1/3, just above
]
HALF_KERNEL = HEADER + """
#define SCALE_LITERAL 1.00048828125001h
constant half kGlobal = 2049.0000000000001h;
kernel void half_literals(device half* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {{
    if (i != 0) return;
{body}
    out[{n}] = kGlobal;           // a constant global
    out[{n1}] = SCALE_LITERAL;    // a macro body (the source is preprocessed)
    constexpr half local = 2.98023223876953126e-8h;
    out[{n2}] = local;            // a constexpr local
    out[{n3}] = half2(65519.99999999999999h, 0.0h).x;  // a vector's constructor
}}
"""


def test_half_literals_round_once(device):
    """Every half literal names the half nearest its written value, rounded once (as clang
    parses a half literal): before, the translation wrote `half(1.00048828125001f)`, the float
    rounded onto the halfway point and the half then rounded to even, the wrong way: 1, 0 and
    inf instead of 1 + 2^-10, 2^-24 and 65504. Exact ties still go to even."""
    n = len(HALF_LITERALS)
    body = "\n".join(f"    out[{k}] = {s};" for k, s in enumerate(HALF_LITERALS))
    src = HALF_KERNEL.format(body=body, n=n, n1=n + 1, n2=n + 2, n3=n + 3)
    lib = device.compile(src)
    out = np.zeros(n + 4, np.float16)
    lib.half_literals(1, out)
    spellings = HALF_LITERALS + ["2049.0000000000001h", "1.00048828125001h", "2.98023223876953126e-8h",
                                 "65519.99999999999999h"]
    expected = np.array([_half_of(_value(s)) for s in spellings], np.float16)
    for k, s in enumerate(spellings):
        assert out.view(np.uint16)[k] == expected.view(np.uint16)[k], (s, float(out[k]), float(expected[k]))


INTEGER_LITERALS = [
    "0xFFFFFFFF + 1", "2147483648 - 1", "-2147483648", "1u << 31", "~0u", "1'000'000", "0b1010'1010", "017",
    "0XFFu + 0xffU", "10LU + 10lu + 10uL + 10Ul + 10ULL + 10ull + 10llu + 10LLU + 10ll + 10LL + 10l + 10L",
    "1ul << 40", "'a'", "'\\n'", "'\\x41'", "'\\0'", "'\\''", "'\\177'", "sizeof(0xFFFFFFFF)", "sizeof(2147483648)",
    "sizeof(0x100000000)", "sizeof(4294967295u)", "sizeof(4294967296u)", "-1 < 0u", "-1L < 0u", "0x7fffffffffffffff",
    "18446744073709551615u == ~0ul", "0xFFFFFFFFu * 0xFFFFFFFFu", "0xFFFFFFFF * 2", "(short)40000", "uint(-1)",
    "(uchar)300", "char(200)", "0x8000'0000 >> 31", "-0x80000000", "1 << 10", "2147483647 + 1u",
]
INTEGER_VALUES = [
    0, 2147483647, -2147483648, 1 << 31, (1 << 32) - 1, 1000000, 170, 15, 510, 120, 1 << 40, 97, 10, 65, 0, 39,
    127, 4, 8, 8, 4, 8, 0, 1, (1 << 63) - 1, 1, 1, (1 << 32) - 2, -25536, (1 << 32) - 1, 44, -56, 1,
    (1 << 31), 1024, 1 << 31,
]

INTEGER_KERNEL = HEADER + """
template <long N> struct Fixed {{ static constant constexpr long value = N; }};
constant long kGlobals[] = {{{globals}}};
kernel void integer_literals(device long* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {{
    if (i != 0) return;
{body}
    for (int k = 0; k < {n}; ++k) out[{n} + k] = kGlobals[k];
{templates}
}}
"""


def test_integer_literals_every_spelling_and_context(device):
    """Integer and character literals of every base, suffix and separator, with the C++ type
    [lex.icon] gives them (0xFFFFFFFF is uint, 2147483648 long, -0x80000000 uint), in a kernel
    body, a `constant` array's initializers and a template argument: values from Python."""
    assert len(INTEGER_LITERALS) == len(INTEGER_VALUES)
    n = len(INTEGER_LITERALS)
    body = "\n".join(f"    out[{k}] = {s};" for k, s in enumerate(INTEGER_LITERALS))
    globals_ = ", ".join(f"long({s})" for s in INTEGER_LITERALS)
    templates = "\n".join(f"    out[{2 * n + k}] = Fixed<({s})>::value;" for k, s in enumerate(INTEGER_LITERALS))
    lib = device.compile(INTEGER_KERNEL.format(body=body, globals=globals_, n=n, templates=templates))
    out = np.zeros(3 * n, np.int64)
    lib.integer_literals(1, out)
    expected = np.array(INTEGER_VALUES * 3, np.int64)
    for k in range(3 * n):
        assert out[k] == expected[k], (INTEGER_LITERALS[k % n], ["body", "constant", "template"][k // n], int(out[k]))


BOM_SOURCES = {
    "plain": "\ufeff" + HEADER + "kernel void bom(device int* o [[buffer(0)]]) { o[0] = 3; o[1] = __LINE__; }\n",
    "directives": "\ufeff#define VALUE 3\n" + HEADER + "kernel void bom(device int* o [[buffer(0)]]) { o[0] = VALUE; o[1] = __LINE__; }",
    "no_newline_crlf": "\ufeff#include <metal_stdlib>\r\nusing namespace metal;\r\n\r\nkernel void bom(device int* o [[buffer(0)]]) { o[0] = 3; o[1] = __LINE__; }",
}


@pytest.mark.parametrize("kind", list(BOM_SOURCES))
def test_source_opening_with_a_byte_order_mark(device, kind):
    """A UTF-8 byte order mark before the first line (editors on Windows write one; clang skips
    it) is no character of the source: it was refused as "unexpected character 'non-ASCII'",
    with and without directives. Lines still count from the first."""
    src = BOM_SOURCES[kind]
    lib = device.compile(src)
    out = np.zeros(2, np.int32)
    lib.bom(1, out)
    line = next(k for k, text in enumerate(src.replace("\r\n", "\n").split("\n"), 1) if "kernel void bom" in text)
    assert_equal(out, np.array([3, line], np.int32))


PREPROCESSOR_ERRORS = [
    ("#error the tile size must be a multiple of 8", "the tile size must be a multiple of 8"),
    ("#if (1 +\n#endif", None),
    ("#define F(a, b) a\nconstant int x = F(1;", None),
]


@pytest.mark.parametrize("directive,message", PREPROCESSOR_ERRORS, ids=["error", "bad_if", "unterminated_call"])
def test_preprocessor_error_points_at_the_users_line(device, directive, message):
    """An error the preprocessor itself reports (#error, a malformed #if, an unterminated macro
    call) is a CompileError at the user's line whose excerpt is that line: it showed one of the
    macros metalcall writes before the source (`#define __has_include_next(...)`) instead."""
    src = HEADER + "\n" + directive + "\nkernel void k(device int* o [[buffer(0)]]) { o[0] = 1; }\n"
    with pytest.raises(mc.CompileError) as info:
        device.compile(src)
    e = info.value
    if message is not None:
        assert message in str(e)
    assert e.line >= 1
    lines = src.splitlines()
    assert e.source_line == lines[e.line - 1], (e.line, e.source_line)
    assert "__has_include" not in str(e) and "__metalcall" not in str(e)


LINE_SOURCES = {
    # After a block comment spanning lines, on the line where it closes.
    "comment": "#define UNUSED 1\nkernel void lines(device int* o [[buffer(0)]]) {\n  /* a\n  b */ o[0] = __LINE__;\n"
               "  o[1] = __LINE__; /* c\n  */\n  o[2] = __LINE__;\n}\n",
    # A comment spanning lines inside a directive (joined there), and one on a line of its own.
    "directive": "#define UNUSED /* a\n  b */ 1\nkernel void lines(device int* o [[buffer(0)]]) {\n"
                 "  /* x */ o[0] = __LINE__;\n  /* y\n */ o[1] = __LINE__ + UNUSED - 1;\n  o[2] = __LINE__;\n}\n",
    # After line splices between tokens (a blank before the backslash), in code and in a macro's call.
    "splice": "#define ADD(a, b) ((a) + (b))\nkernel void lines(device int* o [[buffer(0)]]) {\n  o[0] = \\\n"
              "    __LINE__;\n  o[1] = ADD(0, \\\n  __LINE__);\n  o[2] = __LINE__;\n}\n",
}


@pytest.mark.parametrize("kind", list(LINE_SOURCES))
def test_line_after_a_comment_in_a_preprocessed_source(device, kind):
    """`__LINE__` is the physical line of the token (C++ [cpp.predefined], as clang expands it,
    and as metalcall did in a source without directives) in a source that runs the preprocessor:
    the code after a comment spanning lines, or after a line splice, said the first line, because
    the preprocessor's text joined those lines."""
    src = LINE_SOURCES[kind]
    lib = device.compile(src)
    out = np.zeros(3, np.int32)
    lib.lines(1, out)
    lines = src.split("\n")
    expected = [next(k for k, text in enumerate(lines, 1) if "__LINE__" in text and (f"o[{j}] =" in text or
                     f"o[{j}] =" in lines[k - 2])) for j in range(3)]
    assert_equal(out, np.array(expected, np.int32))


def test_error_after_a_comment_points_at_its_line(device):
    """A compile error in code after a multi-line comment, in a preprocessed source, names the
    line the code is on (it named the comment's first line)."""
    src = HEADER + "#define N 4\nkernel void k(device int* o [[buffer(0)]]) {\n  /* a comment\n     of two lines */ o[0] = undeclared_name;\n}\n"
    with pytest.raises(mc.CompileError) as info:
        device.compile(src)
    line = src.split("\n").index("     of two lines */ o[0] = undeclared_name;") + 1
    assert info.value.line == line, str(info.value)
    assert "undeclared_name" in info.value.source_line


@pytest.mark.xfail(strict=True, raises=mc.CompileError,
                   reason="identifiers are ASCII on the translated backends (docs/design.md, Known limits)")
def test_non_ascii_identifiers(device):
    """C++14 [lex.name] and clang take letters beyond ASCII in names (UTF-8 or `\\u00e9`)."""
    src = HEADER + "kernel void k(device int* o [[buffer(0)]]) { int \u00e9t\u00e9 = 3; int \\u00e9 = 4; o[0] = \u00e9t\u00e9 + \\u00e9; }\n"
    lib = device.compile(src)
    out = np.zeros(1, np.int32)
    lib.k(1, out)
    assert out[0] == 7


def test_non_ascii_in_literals_and_comments(device, request):
    """Any UTF-8 in comments, string and character literals is fine (only names are ASCII)."""
    if device.backend == "cuda":
        request.applymarker(pytest.mark.xfail(
            strict=True, reason="NVRTC encodes a u8 string literal's non-ASCII bytes again: sizeof(u8\"\u00e9\") "
                                "is 5 (docs/design.md, Known limits of the CPU backend)"))
    src = HEADER + ("// caf\u00e9 \u2014 \u03c0\n/* \u4e2d\u6587 */\nkernel void k(device int* o [[buffer(0)]]) {\n"
                    "  o[0] = sizeof(\"\u00e9\u20ac\");  // two and three bytes, and the NUL\n"
                    "  o[1] = u8'a'; o[2] = sizeof(u8\"\u00e9\");\n}\n")
    lib = device.compile(src)
    out = np.zeros(3, np.int32)
    lib.k(1, out)
    assert_equal(out, np.array([6, 97, 3], np.int32))


COMPUTED_INCLUDES = {
    "angle": "#define HDR <metal_stdlib>\n#include HDR\n",
    "quoted_import": "#define HDR \"metal_stdlib\"\n#import HDR\n",
    "function_like": "#define LIB metal_stdlib\n#define ANGLE(x) <x>\n#include ANGLE(LIB)\n",
    "simd_then_stdlib": "#define S <simd/simd.h>\n#include S\n#include <metal_stdlib>\n",
    "host_header_inactive": "#include <metal_stdlib>\n#define HDR <stdio.h>\n#if 0\n#include HDR\n#endif\n",
}


@pytest.mark.parametrize("kind", list(COMPUTED_INCLUDES))
def test_computed_include_of_an_msl_header(device, kind):
    """`#include MACRO` naming an MSL header (C++ [cpp.include]/4, which clang takes) is the
    prelude's, as the written-out name is: it was refused as an include of a host file."""
    src = COMPUTED_INCLUDES[kind] + ("using namespace metal;\nkernel void k(device uint* o [[buffer(0)]]) "
                                     "{ o[0] = popcount(0xF0F0u); o[1] = reverse_bits(1u); }\n")
    lib = device.compile(src)
    out = np.zeros(2, np.uint32)
    lib.k(1, out)
    assert_equal(out, np.array([8, 1 << 31], np.uint32))


@pytest.mark.parametrize("value", ["<stdio.h>", "\"other.metal\"", "UNDEFINED_NAME"])
def test_computed_include_of_another_file_is_refused(device, value):
    """A computed include of anything but an MSL header stays a CompileError at the directive,
    naming what the macro gave; no file is read."""
    src = HEADER + f"#define HDR {value}\n#include HDR\nkernel void k(device int* o [[buffer(0)]]) {{ o[0] = 1; }}\n"
    with pytest.raises(mc.CompileError) as info:
        device.compile(src)
    assert info.value.line == 4 and info.value.source_line == "#include HDR"
    assert "not supported" in str(info.value) and value in str(info.value)
