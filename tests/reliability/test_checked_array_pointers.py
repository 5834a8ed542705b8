"""Checked mode's pointers to arrays beyond a plain parameter (docs/design.md, checked mode): a
pointer-to-array parameter whose element type or extents the function template deduces or is given
(`template <int C> void f(thread float (*t)[C])`, `template <class T> void g(device T (*rows)[2])`),
a local pointer-to-array variable (`thread float (*r)[4] = m;`, initialised later, in a declaration
list) and a cast to a pointer-to-array type (`(device float (*)[2])out`, `reinterpret_cast<…>`), in
every address space, with one and two extents and const elements. Each is a checked pointer to
checked rows: in bounds the plain, checked and sandboxed checked CPU devices give the NumPy values;
an index past the object (a row or a column: `far` is thousands when `at` is a victim Buffer's
address) is an ExecutionError naming the kernel and what faulted on the checked devices. Before,
these did not compile in checked mode.
"""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

import metalcall as mc

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "security"))
from attack_kernels import HEADER, KernelLibraries, assert_checked_in_process, checked_kernel, open_mode  # noqa: E402

pytestmark = pytest.mark.skipif("cpu" not in mc.backends(), reason="checked mode is a feature of the cpu backend")

OUT = np.array([1, 2, 3, 4], np.float32)  # `out` before each run


def _with(**at) -> list:
    """`out` after a run that stored the values at (out[k] = v for k=v given as _k)."""
    r = OUT.copy()
    for k, v in at.items():
        r[int(k[1:])] = v
    return r.tolist()


M24 = np.arange(8, dtype=np.float32).reshape(2, 4)  # `float m[2][4]` initialised 0…7
M32 = np.arange(1, 7, dtype=np.float32).reshape(3, 2)  # `float m[3][2]` initialised 1…6
M24_INIT = "float m[2][4] = {{0, 1, 2, 3}, {4, 5, 6, 7}};"
M32_INIT = "float m[3][2] = {{1, 2}, {3, 4}, {5, 6}};"
TABLE = "constant float table[2][3] = {{1, 2, 3}, {4, 5, 40}};"
T23 = np.array([[1, 2, 3], [4, 5, 40]], np.float32)

# name: (program-scope prefix, body, what the fault names, `out` after a run with far = 0)
CASES = {
    # ---- template parameters: extents and element types deduced, or given ----
    "template-extent": ("template <int C> void put_tc(thread float (*t)[C], ulong i, float v) { t[i / C][i % C] = v; }",
                        M24_INIT + " put_tc(m, far + 5, 42.0f); out[0] = m[1][1]; out[1] = m[0][3];",
                        "private array", _with(_0=42, _1=M24[0, 3])),
    "template-extent-explicit": ("template <int C> void put_te(thread float (*t)[C], ulong i, float v) { t[i / C][i % C] = v; }",
                                 M24_INIT + " put_te<4>(m, far + 6, 42.0f); out[2] = m[1][2];",
                                 "private array", _with(_2=42)),
    "template-extent-plus-one": ("template <int C> float sum_row(thread const float (*t)[C], ulong k) "
                                 "{ float s = 0; for (int c = 0; c < C; ++c) s += t[k][c]; return s + t[1][0]; }",
                                 M32_INIT + " out[0] = sum_row(m + 1, far);",
                                 "private array", _with(_0=M32[1].sum() + M32[2, 0])),
    "template-extent-address": ("template <uint C> void put_ta(thread float (*t)[C], ulong i, float v) { t[0][i] = v; }",
                                M24_INIT + " put_ta(&m[1], far + 3, 42.0f); out[3] = m[1][3]; out[1] = m[0][3];",
                                "private array", _with(_3=42, _1=M24[0, 3])),
    "template-element-device": ("struct Rows { float m[2][2]; };\n"
                                "template <typename T> void put_el(device T (*rows)[2], ulong i, T v) { rows[i / 2][i % 2] = v; }",
                                "put_el(((device Rows*)out)->m, far + 3, 42.0f);", "struct array member", _with(_3=42)),
    "template-element-and-extent": ("template <class T, int C> T sum_all(thread const T (*t)[C], int rows, ulong k) "
                                    "{ T s = 0; for (int r = 0; r < rows; ++r) for (int c = 0; c < C; ++c) s += t[r][c]; "
                                    "return s + t[k][0]; }",
                                    M32_INIT + " out[1] = sum_all(m, 3, far);", "private array",
                                    _with(_1=M32.sum() + M32[0, 0])),
    "template-two-extents-threadgroup": ("template <int B, int C> void put_t3(threadgroup float (*t)[B][C], ulong i, float v) "
                                         "{ t[i / (B * C)][(i / C) % B][i % C] = v; }",
                                         "threadgroup float cube[2][2][3]; cube[1][1][2] = 0.0f; put_t3(cube, far + 11, 42.0f); "
                                         "out[2] = cube[1][1][2];", "threadgroup array", _with(_2=42)),
    "template-constant": (TABLE + "\ntemplate <int C> float get_kc(constant float (*t)[C], ulong i) { return t[i / C][i % C]; }",
                          "out[0] = get_kc(table, far + 5) + 2.0f;", "constant array", _with(_0=T23[1, 2] + 2)),
    "template-argument": ("template <class P> void put_p(P p, ulong i) { p[i / 2][i % 2] = 42.0f; }",
                          "put_p<device float (*)[2]>((device float (*)[2])out, far + 3);", "argument 'out'",
                          _with(_3=42)),
    "template-passes-its-rows-on": ("template <int C> float first_of(thread const float (*t)[C], ulong k) { return t[k][0]; }\n"
                                    "template <int C> float both(thread float (*t)[C], ulong k) "
                                    "{ return first_of(t, k) + first_of(t + 1, 1); }",
                                    M32_INIT + " out[2] = both(m, far);", "private array",
                                    _with(_2=M32[0, 0] + M32[2, 0])),
    "template-explicit-threadgroup-const": ("template <typename T, int C> T get_tg(const threadgroup T (*t)[C], ulong k) "
                                            "{ return t[k][C - 1]; }",
                                            "threadgroup float tile[2][3]; tile[1][2] = 9.0f; "
                                            "out[0] = get_tg<float, 3>(tile, far + 1);", "threadgroup array", _with(_0=9)),
    # ---- local pointer-to-array variables ----
    "local-thread": ("", M24_INIT + " thread float (*r)[4] = m; r[1][far + 1] = 42.0f; out[0] = m[1][1]; out[1] = r[0][3];",
                     "private array", _with(_0=42, _1=M24[0, 3])),
    "local-dereference-and-increment": ("", M24_INIT + " thread float (*r)[4] = m; r++; (*r)[far + 2] = 42.0f; "
                                        "out[0] = m[1][2]; out[1] = (*(r - 1))[3] + r[0][0];",
                                        "private array", _with(_0=42, _1=M24[0, 3] + M24[1, 0])),
    "local-row-index-past-the-end": ("", M24_INIT + " thread float (*r)[4] = m + 1; r[far][0] = 42.0f; out[3] = m[1][0];",
                                     "private array", _with(_3=42)),
    "local-threadgroup": ("", "threadgroup float tile[2][8]; for (int k = 0; k < 16; ++k) tile[k / 8][k % 8] = k; "
                          "threadgroup float (*r)[8] = tile; r = r + 1; r[0][far + 3] = 42.0f; out[0] = tile[1][3]; "
                          "out[1] = r[-1][7];", "threadgroup array", _with(_0=42, _1=7)),
    "local-device-cast": ("", "device float (*rows)[2] = (device float (*)[2])out; rows[far / 2 + 1][1] = 42.0f; "
                          "out[0] = rows[0][1] + 10.0f;", "argument 'out'", _with(_3=42, _0=12)),
    "local-device-reinterpret-cast": ("", "auto rows = reinterpret_cast<device float (*)[2]>(out); "
                                      "rows[1][far] = 42.0f;", "struct array member", _with(_2=42)),
    "local-device-reinterpret-cast-const": ("", "const device float (*rows)[2] = reinterpret_cast<const device float (*)[2]>(out); "
                                       "out[1] = rows[far + 1][0] + rows[0][0];", "argument 'out'", _with(_1=OUT[2] + OUT[0])),
    "local-threadgroup-cast-of-a-flat-array": ("", "threadgroup float flat[8]; for (int k = 0; k < 8; ++k) flat[k] = k; "
                                               "threadgroup float (*r)[4] = (threadgroup float (*)[4])flat; "
                                               "out[2] = r[1][far + 2];", "threadgroup array", _with(_2=6)),
    "local-constant": (TABLE, "constant float (*r)[3] = table; out[0] = r[1][far + 2] + 2.0f;", "constant array",
                       _with(_0=T23[1, 2] + 2)),
    "local-two-extents": ("", "float c[2][2][3] = {}; thread float (*r)[2][3] = c; r[1][1][far + 2] = 42.0f; "
                          "out[1] = c[1][1][2];", "private array", _with(_1=42)),
    "local-const-elements": ("", M32_INIT + " thread const float (*r)[2] = m; out[1] = r[far + 2][1] + r[0][0];",
                             "private array", _with(_1=M32[2, 1] + M32[0, 0])),
    "local-initialised-later": ("", M24_INIT + " thread float (*r)[4]; r = m + 1; r[0][far + 1] = 42.0f; out[0] = m[1][1];",
                                "private array", _with(_0=42)),
    "local-declaration-list": ("", M24_INIT + " thread float (*r)[4] = m, (*s)[4] = m + 1; s[0][far + 2] = r[0][1] + 41.0f; "
                               "out[2] = m[1][2];", "private array", _with(_2=42)),
    "local-declaration-list-other-extents": ("", "float a[2][4] = {}; float b[2][2] = {{1, 2}, {3, 4}}; "
                                             "thread float (*r)[4] = a, (*s)[2] = b; r[1][far + 3] = s[1][1] + 38.0f; "
                                             "out[3] = a[1][3];", "private array", _with(_3=42)),
    "local-ternary": ("", M32_INIT + " thread float (*r)[2] = far == 0 ? m + 1 : m; r[far + 1][1] = 42.0f; "
                      "out[0] = m[2][1];", "private array", _with(_0=42)),
    "local-row-to-a-pointer-parameter": ("float sum_at(thread float* t, ulong k) { return t[k] + t[1]; }",
                                         M32_INIT + " thread float (*r)[2] = m; out[0] = sum_at(r[2], far);",
                                         "private array", _with(_0=M32[2].sum())),
    "local-device-compound-assignment": ("", "device float (*r)[2] = (device float (*)[2])out; r += 1; "
                                         "out[0] = (*r)[far + 1];", "struct array member", _with(_0=OUT[3])),
    "local-struct-member": ("struct Grid { float g[2][4]; };",
                            "Grid x = {}; thread float (*r)[4] = x.g; r[far + 1][1] = 42.0f; out[0] = x.g[1][1];",
                            "struct array member", _with(_0=42)),
    "local-in-a-template": ("template <int C> float last_of(thread float (*t)[C], ulong k) "
                            "{ thread float (*r)[C] = t + 1; return r[0][k + C - 1]; }",
                            M32_INIT + " out[3] = last_of(m, far);", "private array", _with(_3=M32[1, 1])),
}


def _spaced(name: str, prefix: str, body: str) -> tuple[str, str]:
    """The case's declarations in a namespace of its own (one library holds every case)."""
    space = "ns_" + name.replace("-", "_")
    return f"namespace {space} {{\n{prefix}\n}}", f"using namespace {space}; {body}"


LIBRARIES = KernelLibraries({k: (*_spaced(k, c[0], c[1]), c[-1]) for k, c in CASES.items()})
NAMES = sorted(CASES)


@pytest.mark.parametrize("mode", ["cpu", "checked", "checked-sandbox"])
def test_in_bounds_values(mode):
    """Every kernel with far = 0 gives the NumPy values on the plain and both checked devices."""
    _, lib = LIBRARIES.get(mode)
    for name in NAMES:
        out = OUT.copy()
        getattr(lib, name.replace("-", "_"))(1, out, np.uint64(0))
        np.testing.assert_array_equal(out, np.array(CASES[name][3], np.float32), err_msg=name)


@pytest.mark.skipif(os.environ.get("METALCALL_DEVICE", "").split(":")[0] != "metal-sim",
                    reason="the Metal simulator runs when METALCALL_DEVICE=metal-sim")
def test_in_bounds_values_on_the_metal_simulator():
    lib = mc.Device("metal-sim:0").compile(HEADER + "".join(checked_kernel(*_spaced(n, c[0], c[1]), n.replace("-", "_"))
                                                           for n, c in sorted(CASES.items())))
    for name in NAMES:
        out = OUT.copy()
        getattr(lib, name.replace("-", "_"))(1, out, np.uint64(0))
        np.testing.assert_array_equal(out, np.array(CASES[name][3], np.float32), err_msg=name)


def _what(name: str) -> str:
    return CASES[name][2]


@pytest.mark.parametrize("name", NAMES)
def test_out_of_bounds_raises_in_the_sandboxed_checked_device(name):
    LIBRARIES.assert_checked("checked-sandbox", name, _what(name))


def test_out_of_bounds_raises_on_the_in_process_checked_device():
    """The same calls on Device("cpu", checked=True, sandbox=False), in a subprocess."""
    assert_checked_in_process(__file__, "NAMES", "_what")


# A declaration list mixing a pointer to an array with another declarator: checked mode has no one
# statement for it and refuses it (the plain device runs it).
MIXED_LIST = M24_INIT + " thread float (*r)[4] = m, x = 2.0f; out[0] = r[1][1] + x;"


def test_a_mixed_declaration_list_is_refused_in_checked_mode():
    with pytest.raises(mc.CompileError) as info:
        open_mode("checked").compile(HEADER + checked_kernel("", MIXED_LIST))
    assert "another kind of declarator" in str(info.value) and "out[0] = r[1][1] + x" in str(info.value), str(info.value)
    lib = open_mode("cpu").compile(HEADER + checked_kernel("", MIXED_LIST))
    out = OUT.copy()
    lib.k(1, out, np.uint64(0))
    np.testing.assert_array_equal(out, np.array(_with(_0=M24[1, 1] + 2), np.float32))
