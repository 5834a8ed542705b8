"""The front end lexes as a C++ compiler does (issue P2.4 item 2): the translator must see the
tokens the target's compiler will see, or a construct hidden from it (inline assembly inside
what it took for a string or a comment) reaches that compiler unchecked. Translation phases
1-2 (line splices anywhere, a lone CR ending a line), raw strings with every prefix, digraphs
and alternative tokens, literal prefixes and suffixes.

Each hidden-assembly source below compiled and ran its `asm` statement before (the kernel
wrote 7.0); now each is a CompileError naming the rule, on the plain, checked and sandboxed
CPU devices. The valid kernels spell ordinary MSL the same ways and must give C++'s results."""

from __future__ import annotations

import sys

import numpy as np
import pytest

import metalcall as mc
from mctest import with_sandbox_device

device = with_sandbox_device()

HEADER = "#include <metal_stdlib>\nusing namespace metal;\n"
# An empty assembly statement that keeps r in a register: it compiles for every processor,
# and a kernel that runs it writes 7.0.
ASM = 'int r = 7; asm volatile("" : "+r"(r)); a[i] = float(r);'


def kernel(body: str, prefix: str = "") -> str:
    return HEADER + prefix + "kernel void k(device float* a [[buffer(0)]], uint i [[thread_position_in_grid]]) {\n" + body + "\n}\n"


HIDDEN_ASM = {
    # A raw string the old lexer read as `R` then a string that ran to the next quote.
    "raw-string": kernel('  constant char* s = R"x(")x"; ' + ASM + ' // "\n  ;'),
    "raw-string-u8R": kernel('  (void)u8R"x(")x"; ' + ASM + ' // "\n  ;'),
    "raw-string-uR": kernel('  (void)uR"x(")x"; ' + ASM + ' // "\n  ;'),
    "raw-string-UR": kernel('  (void)UR"x(")x"; ' + ASM + ' // "\n  ;'),
    "raw-string-LR": kernel('  (void)LR"x(")x"; ' + ASM + ' // "\n  ;'),
    "raw-string-delimiter": kernel('  (void)R"abc()")abc"; ' + ASM + ' // "\n  ;'),
    # A splice inside the keyword: the compiler reads `asm`.
    "splice-in-keyword": kernel("  int r = 7; as\\\nm volatile(\"\" : \"+r\"(r)); a[i] = float(r);"),
    "splice-with-blanks-in-keyword": kernel("  int r = 7; __as\\  \nm__ volatile(\"\" : \"+r\"(r)); a[i] = float(r);"),
    "splice-crlf-in-keyword": kernel("  int r = 7; as\\\r\nm volatile(\"\" : \"+r\"(r)); a[i] = float(r);"),
    # A lone CR ends a line for g++ and clang: the `//` comment ends there, the asm is code.
    "cr-ends-line-comment": kernel("  // note\r" + ASM),
    "cr-ends-pragma": kernel("#pragma unroll\r" + ASM),
    # A string literal touching a name: clang reads `"a"` then a raw string; refused, as g++
    # reads the name as the literal's suffix.
    "literal-suffix-raw-string": kernel('  (void)"a"R"x(")x"; ' + ASM + ' // "\n  ;'),
}


SANDBOX = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the sandboxed device is Linux's")


@pytest.mark.parametrize(
    "options",
    [{}, {"checked": True}, pytest.param({"sandbox": True}, marks=SANDBOX)],
    ids=["plain", "checked", "sandbox"],
)
@pytest.mark.parametrize("name", sorted(HIDDEN_ASM))
def test_hidden_assembly_is_refused(name, options):
    dev = mc.Device("cpu", **options)
    with pytest.raises(mc.CompileError) as info:
        dev.compile(HIDDEN_ASM[name])
    message = str(info.value)
    if name == "literal-suffix-raw-string":
        assert "suffix must start with a single '_'" in message, message
    else:
        assert "[MSL rule: no inline assembly]" in message, message


def test_digraph_directive_is_a_directive(cpu_device):
    # `%:` is `#`: a host file named in an `%:include` is refused like one in `#include`.
    src = '%:include "/etc/hostname"\n' + kernel("  a[i] = 1.0f;")
    with pytest.raises(mc.CompileError, match="include"):
        cpu_device.compile(src)


N = 16


def run(dev, src, dtype=np.float32):
    a = np.arange(N, dtype=dtype)
    dev.compile(src).k(N, a)
    return a


def test_splices_inside_names_and_numbers(device):
    # (A splice inside a directive sends the source through the host's preprocessor, which
    # splices it; these are in code the front end reads itself.)
    src = kernel("  a[i] = fl\\\noat(i) * 2\\\n.5f + sq\\  \nrt(4.0f) + a\\\r\n[i];")
    np.testing.assert_array_equal(run(device, src), np.arange(N) * 3.5 + 2)


def test_comment_continued_by_a_splice_with_blanks(device):
    # g++ and clang join the next line to the comment (a backslash, blanks, a line end).
    src = kernel("  a[i] = a[i] + 1.0f; // the next line is this comment too \\  \n  a[i] = 99.0f;")
    np.testing.assert_array_equal(run(device, src), np.arange(N) + 1)


def test_digraphs_and_alternative_tokens(device):
    src = (
        HEADER
        + "kernel void k(device uint* a <:<:buffer(0):>:>, uint i <:<:thread_position_in_grid:>:>) <%\n"
        + "  uint t<:2:> = <%3u, 4u%>;\n"
        + "  if (i > 1 and not (i == 5) and i not_eq 7) a<:i:> = (a<:i:> bitor t<:1:>) xor compl 0u;\n"
        + "%>\n"
    )
    i = np.arange(N, dtype=np.uint32)
    expected = np.where((i > 1) & (i != 5) & (i != 7), (i | 4) ^ np.uint32(0xFFFFFFFF), i)
    np.testing.assert_array_equal(run(device, src, np.uint32), expected)


def test_raw_strings_and_literal_spellings(cpu_device):
    # A raw string holding a quote, a backslash and comment markers; prefixed character
    # literals; a hex float; digit separators.
    src = kernel(
        '  constant char* s = R"tag(say "hi \\ // /* x)tag";\n'
        "  a[i] = float(s[i % 12]) + 0x1.8p1f + float(1'000 - 999) + float(u8'a' - 'a') + float(L'b' - U'a');"
    )
    text = b'say "hi \\ // /* x'
    expected = np.array([text[j % 12] for j in range(N)], dtype=np.float64) + 3 + 1 + 0 + 1
    np.testing.assert_array_equal(run(cpu_device, src), expected)
