"""Attack: small sources that make the compiler work without end (security, P2.4).

docs/security.md promises compiles bounded in time and memory with a clear metalcall.Error: the
source and preprocessed sizes, the compiler's wall time and address space, and the 1 GiB a file
it writes may take. An attacker writes a few hundred bytes that instantiate templates without
end (deep, or exponentially many), expand macros that double, evaluate an exponential constexpr
function, or declare a constant array of gigabytes. Each ends in a CompileError saying which
limit or rule stopped it, and the device compiles the next kernel. The constant array's 1 GiB
object file made the backend retry the compile in every scratch folder (four compiles) and end
in a DeviceError about full folders before 2026-12-03: a compiler's "File too large" under the
backend's own cap now names that cap.
"""

from __future__ import annotations

import time

import numpy as np
import pytest

import metalcall as mc

pytestmark = pytest.mark.skipif("cpu" not in mc.backends(), reason="the cpu backend is not built in")

HEADER = "#include <metal_stdlib>\nusing namespace metal;\n"


def kernel(body: str, prefix: str = "") -> str:
    return (HEADER + prefix + "\nkernel void k(device float* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {\n"
            + body + "\n}\n")


DOUBLING = "#define M0 out[0] += 1.0f;\n" + "".join(f"#define M{j + 1} M{j} M{j}\n" for j in range(40))

# name: (source, text the error's first line holds)
BOMBS = {
    "template-depth": (kernel("out[0] = R<100000>::v;", "template <int N> struct R { static constexpr int v = R<N - 1>::v + 1; };\n"
                              "template <> struct R<0> { static constexpr int v = 0; };"),
                       "recursive template instantiation exceeded maximum depth"),
    "exponential-templates": (kernel("out[0] = float(E<0, 40>::v);",
                                     "template <int A, int N> struct E { static constexpr long v = E<A * 2, N - 1>::v + "
                                     "E<A * 2 + 1, N - 1>::v; };\ntemplate <int A> struct E<A, 0> { static constexpr long v = 1; };"),
                              "ran longer than the compile time limit of 10 s (METALCALL_COMPILE_TIMEOUT)"),
    "doubling-macros": (kernel("M40", DOUBLING), "the preprocessed source reached the limit of 32 MiB"),
    "exponential-constexpr": (kernel("out[0] = float(x);", "constexpr long f(int n) { return n ? f(n - 1) + f(n - 1) : 1; }\n"
                                                          "constant long x = f(62);"), "has a static initialiser"),
    "gigabyte-constant-array": (kernel("out[0] = t[i];", "constant float t[1 << 28] = {1.0f, 2.0f};"),
                                "wrote a file over the 1 GiB a kernel object may take"),
}


@pytest.mark.parametrize("name", sorted(BOMBS))
def test_a_compile_bomb_ends_in_a_compile_error(monkeypatch, name):
    if name == "exponential-templates":
        monkeypatch.setenv("METALCALL_COMPILE_TIMEOUT", "10")  # else 300 s
    src, text = BOMBS[name]
    dev = mc.Device("cpu", sandbox=False)
    start = time.monotonic()
    with pytest.raises(mc.CompileError) as info:
        dev.compile(src).k(1, np.zeros(4, np.float32))
    assert time.monotonic() - start < 120
    first = str(info.value).splitlines()[0]
    assert text in first, first
    good = dev.compile(kernel("out[i] = float(i) + 1.0f;"))
    out = np.zeros(4, np.float32)
    good.k(4, out)
    np.testing.assert_array_equal(out, [1, 2, 3, 4])
