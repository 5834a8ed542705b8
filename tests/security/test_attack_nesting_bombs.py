"""Attack: sources nested so deep that the front end's own walks take hours (security, P2.4).

The compile limits (docs/security.md) bound the compiler processes; the front end runs before
them, in the calling process (on the sandboxed device too), with no limit of its own. Its walks
follow nesting (a loop's body to its end, a conditional's third operand), so a source nested
thousands deep made them quadratic: 4,000 nested `for (;;)` took 17 s, 4,000 `do` 36 s, 4,000
chained `?:` 15 s on the development VM; 100,000 (under a megabyte, far inside the 16 MiB source
limit) ran for hours, and Ctrl-C could not stop them. Each is now refused in one linear walk
before anything else runs, at the 257th level, with the rule named; the limits are the
compiler's own (clang, Apple's Metal compiler included, stops at 256 nested brackets), so
sources within them compile as before.
"""

from __future__ import annotations

import time

import numpy as np
import pytest

import metalcall as mc

pytestmark = pytest.mark.skipif("cpu" not in mc.backends(), reason="the cpu backend is not built in")

HEADER = "#include <metal_stdlib>\nusing namespace metal;\n"
DEPTH = 100_000
RULE = "[MSL rule: nesting within the compiler's limits]"


def kernel(body: str) -> str:
    return HEADER + "kernel void k(device float* a [[buffer(0)]], uint i [[thread_position_in_grid]]) {\n" + body + "\n}\n"


# name: (body, the repeated unit whose 257th copy is refused, message)
BOMBS = {
    "for": ("for (;;) " * DEPTH + "a[i] = 1.0f;", "for (;;) ", "statements nested deeper than 256 levels without braces"),
    "while": ("while (a[i] > 0) " * DEPTH + "a[i] = 1.0f;", "while (a[i] > 0) ",
              "statements nested deeper than 256 levels without braces"),
    "do": ("do " * DEPTH + "a[i] = 1.0f;" + " while (a[i] < 0);" * DEPTH, "do ",
           "statements nested deeper than 256 levels without braces"),
    "if": ("if (a[i] > 0) " * DEPTH + "a[i] = 1.0f;", "if (a[i] > 0) ",
           "statements nested deeper than 256 levels without braces"),
    "conditional": ("a[i] = " + "a[i] > 0 ? 1.0f : " * DEPTH + "2.0f;", None,
                    "more than 256 conditional operators in one statement; split it"),
    "lambda": ("a[i] = " + "[&]{ return " * DEPTH + "1.0f" + "; }()" * DEPTH + ";", None,
               "brackets nested deeper than 256 levels (clang, Apple's Metal compiler included, stops there too)"),
    "parentheses": ("a[i] = " + "(" * DEPTH + "1.0f" + ")" * DEPTH + ";", "(",
                    "brackets nested deeper than 256 levels (clang, Apple's Metal compiler included, stops there too)"),
}

MODES = {
    "cpu": lambda: mc.Device("cpu", sandbox=False),
    "checked": lambda: mc.Device("cpu", checked=True, sandbox=False),
    "sandbox": lambda: mc.Device("cpu", sandbox=True),
}


@pytest.fixture(params=sorted(MODES))
def device(request):
    if request.param == "sandbox" and not __import__("sys").platform.startswith("linux"):
        pytest.skip("the sandbox is built on Linux's seccomp")
    return MODES[request.param]()


@pytest.mark.parametrize("name", sorted(BOMBS))
def test_a_nesting_bomb_is_refused_at_once(device, name):
    body, unit, message = BOMBS[name]
    src = kernel(body)
    start = time.monotonic()
    with pytest.raises(mc.CompileError) as info:
        device.compile(src).k(4, np.zeros(4, np.float32))
    assert time.monotonic() - start < 60  # hours before; about a second on the development VM
    first = str(info.value).splitlines()[0]
    assert first.endswith(f"error: {message} {RULE}"), first
    assert info.value.line == 4
    if unit == "(":  # the 257th bracket: the kernel's body is the first
        assert info.value.column == len("a[i] = ") + 1 + 255, first
    elif unit is not None:  # the 257th statement of the nest
        assert info.value.column == 1 + 256 * len(unit), first


def test_sources_within_the_limits_compile_and_run(device):
    # 40 loops nested without braces, a chain of 100 conditionals, brackets 60 deep: as before.
    loops = "".join(f"for (int j{n} = 0; j{n} < 1; ++j{n}) " for n in range(40)) + "a[i] += 1.0f;"
    chain = "a[i] += " + "".join(f"a[i] == {n}.0f ? {n * 10}.0f : " for n in range(1, 101)) + "-1.0f;"
    brackets = "a[i] += " + "(" * 60 + "0.5f" + ")" * 60 + ";"
    lib = device.compile(kernel(loops + "\n" + chain + "\n" + brackets))
    a = np.arange(4, dtype=np.float32)
    lib.k(4, a)
    # a+1, then a += (a == n ? 10n : -1), then + 0.5
    expected = [(x + 1) + ((x + 1) * 10 if 1 <= x + 1 <= 100 else -1) + 0.5 for x in range(4)]
    np.testing.assert_array_equal(a, np.array(expected, np.float32))
