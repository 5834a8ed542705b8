"""Pointer-to-array declarators beyond a plain variable or parameter (docs/design.md, "Known limits of
the CPU backend" and checked mode): aliases of a pointer-to-array type (`typedef device float
(*Rows)[2];`, `using Rows = device float (*)[2];`, a template alias, every address space, const
elements, two extents), which the front end read as function pointer types; an unnamed
pointer-to-array parameter of a forward declaration, which it read as a program-scope variable; and
the neighbours of the class (a `* const` pointer, a struct member, a reference parameter to a
pointer to an array; a local reference to one, a function returning one, an array of them, a
`static` one). Each gives the NumPy values on every device; in checked mode the first three are
checked (an index past the object faults) and the rest a CompileError naming why.
"""

from __future__ import annotations

import numpy as np
import pytest

import metalcall as mc

HEADER = "#include <metal_stdlib>\nusing namespace metal;\n"
SIGNATURE = "(device float* out [[buffer(0)]], uint i [[thread_position_in_grid]])"
OUT = np.array([1, 2, 3, 4], np.float32)
M24 = np.arange(8, dtype=np.float32).reshape(2, 4)
M24_INIT = "float m[2][4] = {{0, 1, 2, 3}, {4, 5, 6, 7}};"


def _with(**at) -> list:
    r = OUT.copy()
    for k, v in at.items():
        r[int(k[1:])] = v
    return r.tolist()


# name: (program-scope prefix, body, `out` after a run)
CASES = {
    "typedef-device": ("typedef device float (*Rows)[2];",
                       "Rows r = (Rows)out; r[1][0] = 42.0f; out[0] = r[0][1];", _with(_0=OUT[1], _2=42)),
    "using-device": ("using Rows = device float (*)[2];", "Rows r = (Rows)out; r[1][1] += r[0][0];",
                     _with(_3=OUT[3] + OUT[0])),
    "using-device-static-cast": ("using Rows = device float (*)[2];",
                                 "Rows r = static_cast<Rows>(static_cast<device void*>(out)); r[1][1] = 42.0f;",
                                 _with(_3=42)),
    "typedef-thread": ("typedef thread float (*Rows4)[4];", M24_INIT + " Rows4 r = m; r[1][1] = 42.0f; out[0] = m[1][1];",
                       _with(_0=42)),
    "using-thread-const": ("using CRows = thread const float (*)[4];", M24_INIT + " CRows r = m + 1; out[0] = r[0][2];",
                           _with(_0=M24[1, 2])),
    "typedef-const-first": ("typedef const thread float (*CRows2)[4];", M24_INIT + " CRows2 r = m; out[1] = r[1][3] + r[0][0];",
                            _with(_1=M24[1, 3] + M24[0, 0])),
    "typedef-threadgroup": ("typedef threadgroup float (*TRows)[4];",
                            "threadgroup float t[2][4]; t[1][3] = 5.0f; TRows r = t; out[0] = r[1][3];", _with(_0=5)),
    "using-threadgroup": ("using TRows2 = threadgroup float (*)[4];",
                          "threadgroup float t[2][4]; t[1][2] = 6.0f; TRows2 r = t + 1; out[1] = r[0][2];", _with(_1=6)),
    "typedef-constant": ("constant float tab[2][3] = {{1, 2, 3}, {4, 5, 6}}; typedef constant float (*KRows)[3];",
                         "KRows r = tab; out[0] = r[1][2];", _with(_0=6)),
    "typedef-two-extents": ("typedef thread float (*Cube)[2][3];",
                            "float c[2][2][3] = {}; Cube r = c; r[1][1][2] = 42.0f; out[0] = c[1][1][2];", _with(_0=42)),
    "template-alias": ("template <int C> using R = thread float (*)[C];", M24_INIT + " R<4> r = m; out[0] = r[1][2];",
                       _with(_0=M24[1, 2])),
    "alias-parameter": ("typedef thread float (*Rows4p)[4]; float get(Rows4p r, ulong k) { return r[k][1]; }",
                        M24_INIT + " out[0] = get(m, 1);", _with(_0=M24[1, 1])),
    "alias-return-type": ("using Rows4r = thread float (*)[4]; Rows4r next_row(Rows4r r) { return r + 1; }",
                          M24_INIT + " out[0] = next_row(m)[0][2];", _with(_0=M24[1, 2])),
    "alias-member": ("using Rows4m = thread float (*)[4]; struct Holder { Rows4m r; };",
                     M24_INIT + " Holder h{m}; out[0] = h.r[1][0];", _with(_0=M24[1, 0])),
    "alias-of-alias": ("using Rows4a = thread float (*)[4]; typedef Rows4a Again;",
                       M24_INIT + " Again a = m; out[0] = a[1][1];", _with(_0=M24[1, 1])),
    "reinterpret-cast-to-alias": ("using DRows = device float (*)[2];",
                                  "auto r = reinterpret_cast<DRows>(out); r[1][1] = 42.0f;", _with(_3=42)),
    "forward-declaration": ("void put(thread float (*)[4], ulong);\n"
                            "void put(thread float (*t)[4], ulong k) { t[k][0] = 42.0f; }",
                            M24_INIT + " put(m, 1); out[0] = m[1][0];", _with(_0=42)),
    "forward-declaration-device": ("float get2(device float (*)[2], ulong);\n"
                                   "float get2(device float (*t)[2], ulong k) { return t[k][1]; }",
                                   "out[0] = get2((device float (*)[2])out, 1);", _with(_0=OUT[3])),
    "template-forward-declaration-named": ("template <int C> float last_in(thread float (*t)[C], int);\n"
                                           "template <int C> float last_in(thread float (*t)[C], int k) { return t[k][C - 1]; }",
                                           M24_INIT + " out[0] = last_in(m, 1);", _with(_0=M24[1, 3])),
    "template-forward-declaration-fixed-rows": ("template <int C> float at_c(thread float (*)[4], int);\n"
                                                "template <int C> float at_c(thread float (*t)[4], int k) { return t[k][C]; }",
                                                M24_INIT + " out[0] = at_c<2>(m, 1);", _with(_0=M24[1, 2])),
    "const-pointer-local": ("", M24_INIT + " thread float (* const r)[4] = m; out[0] = r[1][3];", _with(_0=M24[1, 3])),
    "struct-member-device": ("struct S { device float (*rows)[2]; };",
                             "S s; s.rows = (device float (*)[2])out; s.rows[1][1] = 42.0f;", _with(_3=42)),
    "struct-member-thread": ("struct S2 { thread float (*rows)[4]; };", M24_INIT + " S2 s{m}; out[0] = s.rows[1][2];",
                             _with(_0=M24[1, 2])),
    "reference-to-pointer-parameter": ("void adv(thread float (*&p)[4]) { ++p; }\n"
                                       "void adv_device(device float (*&p)[2], int n) { p += n; }",
                                       M24_INIT + " thread float (*r)[4] = m; adv(r); out[0] = r[0][1]; "
                                       "device float (*d)[2] = (device float (*)[2])out; adv_device(d, 1); d[0][1] = 42.0f;",
                                       _with(_0=M24[1, 1], _3=42)),
}

# Valid MSL whose pointer to an array has no checked form: the values on plain devices, a
# CompileError naming why in checked mode.
UNCHECKED = {
    "returns-pointer-to-array": ("thread float (*rows(thread float (&mm)[2][4]))[4] { return mm; }",
                                 M24_INIT + " out[0] = rows(m)[1][2];", _with(_0=M24[1, 2])),
    "array-of-pointers-to-arrays": ("", M24_INIT + " thread float (*a[2])[4] = {m, m + 1}; out[0] = a[1][0][2];",
                                    _with(_0=M24[1, 2])),
    "reference-to-pointer-local": ("", M24_INIT + " thread float (*r)[4] = m; thread float (*&q)[4] = r; q = m + 1; "
                                   "out[0] = r[0][1];", _with(_0=M24[1, 1])),
    "typedef-list": ("typedef device float (*RowsA)[2], (*RowsB)[4];",
                     "RowsA r = (RowsA)out; RowsB q = (RowsB)out; r[1][0] = 42.0f; out[0] = q[0][3];",
                     _with(_0=OUT[3], _2=42)),
    "template-forward-declaration-unnamed": ("template <int C> float last_u(thread float (*)[C], int);\n"
                                             "template <int C> float last_u(thread float (*t)[C], int k) { return t[k][C - 1]; }",
                                             M24_INIT + " out[0] = last_u(m, 1);", _with(_0=M24[1, 3])),
    "program-scope-constant-pointer": ("constant float tab_p[2][3] = {{1, 2, 3}, {4, 5, 6}};\n"
                                       "constant float (* constant rows_p)[3] = tab_p;",
                                       "out[0] = rows_p[1][1];", _with(_0=5)),
    "static-pointer-local": ("constant float tab[2][3] = {{1, 2, 3}, {4, 5, 6}};",
                             "static constant float (*r)[3] = tab; out[0] = r[1][0];", _with(_0=4)),
}


def _source(cases: dict) -> str:
    return HEADER + "".join(
        f"namespace ns_{n.replace('-', '_')} {{\n{c[0]}\n}}\n"
        f"kernel void {n.replace('-', '_')}{SIGNATURE} {{ using namespace ns_{n.replace('-', '_')}; {c[1]} }}\n"
        for n, c in sorted(cases.items()))


def _run_all(lib, cases: dict) -> None:
    for name, case in sorted(cases.items()):
        out = OUT.copy()
        getattr(lib, name.replace("-", "_"))(1, out)
        np.testing.assert_array_equal(out, np.array(case[-1], np.float32), err_msg=name)


def _checked(device) -> bool:
    return device.backend == "cpu" and device.checked


def test_pointer_to_array_declarators_give_the_numpy_values(device, compile_once):
    _run_all(compile_once(device, _source(CASES)), CASES)


@pytest.mark.parametrize("name", sorted(UNCHECKED))
def test_unchecked_forms_run_or_are_refused_in_checked_mode(device, compile_once, name):
    one = {name: UNCHECKED[name]}
    if _checked(device):
        with pytest.raises(mc.CompileError) as info:
            device.compile(_source(one))
        assert "checked mode" in str(info.value) and "no checked form" in str(info.value), str(info.value)
        return
    _run_all(compile_once(device, _source(one)), one)


# Checked mode: an index past the object through each checked form is an ExecutionError naming the
# fault, the access not performed (`far` thousands of elements away); the next run in bounds goes on.
OUT_OF_BOUNDS = {
    "typedef-device": ("typedef device float (*Rows)[2];", "Rows r = (Rows)out; r[far][0] = 42.0f;"),
    "using-device": ("using Rows = device float (*)[2];", "Rows r = (Rows)out; r[1][far] = 42.0f;"),
    "typedef-thread": ("typedef thread float (*Rows4)[4];", M24_INIT + " Rows4 r = m; r[1][far] = 42.0f; out[0] = m[1][0];"),
    "template-alias": ("template <int C> using R = thread float (*)[C];", M24_INIT + " R<4> r = m; out[0] = r[far][0];"),
    "alias-parameter": ("typedef thread float (*Rows4p)[4]; float get(Rows4p r, ulong k) { return r[k][1]; }",
                        M24_INIT + " out[0] = get(m, far);"),
    "typedef-constant": ("constant float tab[2][3] = {{1, 2, 3}, {4, 5, 6}}; typedef constant float (*KRows)[3];",
                         "KRows r = tab; out[0] = r[1][far];"),
    "forward-declaration": ("void put(thread float (*)[4], ulong);\n"
                            "void put(thread float (*t)[4], ulong k) { t[k][0] = 42.0f; }", M24_INIT + " put(m, far);"),
    "reinterpret-cast-to-alias": ("using DRows = device float (*)[2];",
                                  "auto r = reinterpret_cast<DRows>(out); r[far][1] = 42.0f;"),
    "template-forward-declaration-named": ("template <int C> float last_in(thread float (*t)[C], ulong);\n"
                                           "template <int C> float last_in(thread float (*t)[C], ulong k) { return t[k][C - 1]; }",
                                           M24_INIT + " out[0] = last_in(m, far);"),
    "const-pointer-local": ("", M24_INIT + " thread float (* const r)[4] = m; out[0] = r[far][3];"),
    "struct-member-device": ("struct S { device float (*rows)[2]; };",
                             "S s; s.rows = (device float (*)[2])out; s.rows[far][1] = 42.0f;"),
    "struct-member-thread": ("struct S2 { thread float (*rows)[4]; };", M24_INIT + " S2 s{m}; s.rows[1][far] = 42.0f;"),
    "reference-to-pointer-parameter": ("void adv(thread float (*&p)[4]) { ++p; }",
                                       M24_INIT + " thread float (*r)[4] = m; adv(r); r[far][0] = 42.0f;"),
}


@pytest.mark.parametrize("name", sorted(OUT_OF_BOUNDS))
def test_out_of_bounds_faults_in_checked_mode(name):
    if "cpu" not in mc.backends():
        pytest.skip("checked mode is a feature of the cpu backend")
    prefix, body = OUT_OF_BOUNDS[name]
    src = (HEADER + prefix + "\nkernel void k(device float* out [[buffer(0)]], constant ulong& far [[buffer(1)]]) {\n"
           + body + "\n}\n")
    lib = mc.Device("cpu", checked=True).compile(src)
    out = OUT.copy()
    with pytest.raises(mc.ExecutionError) as info:
        lib.k(1, out, np.uint64(4096))
    assert "out of bounds" in str(info.value) and "the access was not performed" in str(info.value), str(info.value)
    lib.k(1, out, np.uint64(0))  # in bounds the device goes on


# A local pointer to threadgroup rows is a variable of each thread, not threadgroup storage: it was
# `static thread_local` on the CPU before (initialised once per worker thread, so a second run
# started from where the first left it) and `__shared__` with its initializer dropped on CUDA.
THREADGROUP_ROWS_LOCAL = HEADER + """
kernel void k(device float* out [[buffer(0)]], uint i [[thread_position_in_grid]],
              uint l [[thread_position_in_threadgroup]], uint g [[threadgroup_position_in_grid]]) {
  threadgroup float tile[4][2];
  if (l == 0) for (int k = 0; k < 8; ++k) tile[k / 2][k % 2] = k + 10.0f * g;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  threadgroup float (*r)[2] = tile;
  r = r + 1 + l;
  out[i] = r[0][1];
}
"""


def test_a_local_pointer_to_threadgroup_rows_belongs_to_its_thread(device, compile_once):
    lib = compile_once(device, THREADGROUP_ROWS_LOCAL)
    l = np.arange(8) % 2
    g = np.arange(8) // 2
    expected = ((1 + l) * 2 + 1 + 10.0 * g).astype(np.float32)
    for _ in range(3):  # the same values every run
        out = np.zeros(8, np.float32)
        lib.k(8, out, threadgroup=2)
        np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("alias", ["typedef float (*Fn)(float);", "using Fn = float (*)(float);",
                                   "typedef float (*Fn[2])(float);", "typedef float (Fn)(float);",
                                   "typedef float (*Fn(int))[4];"])
def test_function_pointer_aliases_stay_refused(device, alias):
    """Told apart from pointers to arrays by the parameter list after the declarator."""
    with pytest.raises(mc.CompileError) as info:
        device.compile(HEADER + alias + f"\nkernel void k{SIGNATURE} {{ Fn f; out[0] = 1.0f; }}\n")
    assert "no function pointers" in str(info.value) and "Fn f" in str(info.value), str(info.value)
