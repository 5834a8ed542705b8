"""Function constants of vector type (`constant ushort2 stride [[function_constant(2)]];`, which
MSL allows and Forge's convolutions use): every family (bool, char, uchar, short, ushort, int,
uint, half, float) at widths 2, 3 and 4, given as tuples, lists or NumPy arrays, baked in exactly
and of their declared type (a uchar2 sum wraps at 256); is_function_constant_defined as for
scalars; and the values checked strictly: a wrong count, a float for an integer vector, a value out
of the component type's range are ArgumentErrors naming the constant, never rounded or cut.
One library per device, three specialisations of its kernels per device."""

from __future__ import annotations

import numpy as np
import pytest

import metalcall as mc
from mcconf import KernelSet, assert_equal

FAMILIES = ["bool", "char", "uchar", "short", "ushort", "int", "uint", "half", "float"]
DTYPES = {"bool": np.bool_, "char": np.int8, "uchar": np.uint8, "short": np.int16, "ushort": np.uint16,
          "int": np.int32, "uint": np.uint32, "half": np.float16, "float": np.float32}
WIDTHS = [2, 3, 4]
CONSTANTS = [(f"{f}{w}", f"vfc_{f}{w}", 3 * i + w - 2) for i, f in enumerate(FAMILIES) for w in WIDTHS]


def _source() -> str:
    decls = "".join(f"constant {t} {n} [[function_constant({i})]];\n" for t, n, i in CONSTANTS)
    ints, floats = [], []
    for t, n, _ in CONSTANTS:
        w = int(t[-1])
        if t.startswith(("half", "float")):
            # the value, and twice it in the vector's own type (a half4 sum rounds to half)
            floats += [f"floats[k++] = float({n}[{j}]);" for j in range(w)]
            floats += [f"floats[k++] = float(({n} + {n})[{j}]);" for j in range(w)]
        elif t.startswith("bool"):
            ints += [f"ints[m++] = uint({n}[{j}]);" for j in range(w)]
            ints += [f"ints[m++] = uint((!{n})[{j}]);" for j in range(w)]
        else:
            # the value, and (below 32 bits, where it is defined) the vector added to itself,
            # which wraps at the component type's width
            ints += [f"ints[m++] = uint({n}[{j}]);" for j in range(w)]
            if not t.startswith("int"):
                ints += [f"ints[m++] = uint(({n} + {n})[{j}]);" for j in range(w)]
    body = "\n    ".join(ints + floats)
    return decls + f"""
kernel void vfc_all(device uint* ints [[buffer(0)]], device float* floats [[buffer(1)]],
                    uint i [[thread_position_in_grid]]) {{
    if (i != 0) return;
    uint m = 0, k = 0;
    {body}
}}
"""


KS = KernelSet([
    _source(),
    """
constant int3 vfc_offset [[function_constant(40)]];
constant bool vfc_has_offset = is_function_constant_defined(vfc_offset);
constant int3 vfc_used = vfc_has_offset ? vfc_offset : int3(5, -6, 7);
constant float2 vfc_gain [[function_constant(41)]];
kernel void vfc_defaults(device int* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    out[i] = vfc_used[i % 3] * int(i + 1) + int(vfc_has_offset) * 100 + int(vfc_gain.y);
}
""",
])


def _values(kind: str):
    """{name: value} of every constant: extremes ('edges') or values drawn from a seeded generator."""
    rng = np.random.default_rng(20261203)
    out = {}
    for t, n, _ in CONSTANTS:
        fam, w = t[:-1], int(t[-1])
        dt = DTYPES[fam]
        if fam == "bool":
            v = [bool(x) for x in rng.integers(0, 2, w)] if kind == "random" else [True, False, True, False][:w]
        elif fam in ("half", "float"):
            info = np.finfo(dt)
            # half the largest (twice it is the largest), the smallest normal, a negative zero
            v = ([float(info.max) / 2, -float(info.max) / 2, float(info.tiny), -0.0][:w] if kind == "edges"
                 else [float(dt(x)) for x in rng.uniform(-100, 100, w)])
        else:
            info = np.iinfo(dt)
            v = ([int(info.max), int(info.min), 1, int(info.max) - 1][:w] if kind == "edges"
                 else [int(x) for x in rng.integers(info.min, int(info.max) + 1, w, dtype=np.int64)])
        out[n] = v
    return out


def _model(values):
    """What vfc_all writes, from NumPy: each vector's components, then the vector added to itself
    in its own type (wrapping integers, rounding halves), or its logical not for bools."""
    ints, floats = [], []
    for t, n, _ in CONSTANTS:
        fam = t[:-1]
        v = np.array(values[n], DTYPES[fam])
        if fam in ("half", "float"):
            with np.errstate(over="ignore"):
                floats += list(v.astype(np.float32)) + list((v + v).astype(np.float32))
        elif fam == "bool":
            ints += list(v.astype(np.uint32)) + list((~v).astype(np.uint32))
        else:
            ints += list(v.astype(np.int64) & 0xFFFFFFFF)
            if fam != "int":
                with np.errstate(over="ignore"):
                    ints += list((v + v).astype(np.int64) & 0xFFFFFFFF)
    return np.array(ints, np.uint32), np.array(floats, np.float32)


@pytest.mark.parametrize("kind,spelling", [("edges", "tuple"), ("random", "array")])
def test_every_family_and_width(device, kind, spelling):
    values = _values(kind)
    given = {n: (tuple(v) if spelling == "tuple" else np.array(v, DTYPES[t[:-1]])) for (t, n, _), v in
             zip(CONSTANTS, values.values())}
    # by index too, for a third of them
    for t, n, i in CONSTANTS[::3]:
        given[i] = list(given.pop(n))
    want_ints, want_floats = _model(values)
    ints = np.zeros(want_ints.size, np.uint32)
    floats = np.full(want_floats.size, np.nan, np.float32)
    KS.get(device, "vfc_all", constants=given)(1, ints, floats)
    assert_equal(ints, want_ints)
    assert_equal(floats, want_floats)


@pytest.mark.parametrize("offset", [None, (-3, 0, 1000)])
def test_is_function_constant_defined(device, offset):
    constants = {"vfc_gain": [0.5, 9.0]}
    if offset is not None:
        constants["vfc_offset"] = offset
    out = np.zeros(6, np.int32)
    KS.get(device, "vfc_defaults", constants=constants)(6, out)
    used = np.array(offset if offset is not None else (5, -6, 7), np.int32)
    want = used[np.arange(6) % 3] * np.arange(1, 7, dtype=np.int32) + (100 if offset else 0) + 9
    assert_equal(out, want)


BAD = [
    ({"vfc_ushort2": (1, 2, 3)}, "function constant 'vfc_ushort2' (index 12, ushort2) is a vector of 2: give 2 values"),
    ({"vfc_float4": 1.0}, "'vfc_float4' (index 26, float4) is a vector of 4: give 4 values (a tuple, list or NumPy array), not a single value"),
    ({"vfc_int3": (1, 2.5, 3)}, "'vfc_int3' (index 16, int3), component 1 (y): a floating-point value cannot be passed as int"),
    ({"vfc_int2": np.array([1.0, 2.0])}, "'vfc_int2' (index 15, int2), component 0 (x): a floating-point value cannot be passed as int"),
    ({"vfc_ushort2": (1, 65536)}, "'vfc_ushort2' (index 12, ushort2), component 1 (y): 65536 does not fit in ushort"),
    ({"vfc_uchar4": [0, 1, 2, -1]}, "component 3 (w): -1 does not fit in uchar"),
    ({"vfc_char2": (127, 128)}, "component 1 (y): 128 does not fit in char"),
    ({"vfc_half2": (1.0, 70000.0)}, "component 1 (y): 70000 is out of the range of half"),
    ({"vfc_bool2": (1, 2)}, "component 1 (y): only 0, 1, True or False can be passed as bool"),
    ({"vfc_float2": ((1.0, 2.0), 3.0)}, "component 0: a function constant takes a bool, int or float, not tuple"),
    ({"vfc_float2": np.zeros((2, 1), np.float32)}, "a vector function constant takes a 1-D array"),
    ({"vfc_float2": ()}, "not an empty sequence"),
]


@pytest.mark.parametrize("constants,message", BAD, ids=range(len(BAD)))
def test_bad_values_are_refused(device, constants, message):
    """Checked before anything is built; the other constants are left out (none is required here)."""
    lib = KS.library(device, "vfc_all")
    with pytest.raises(mc.ArgumentError) as e:
        lib.function("vfc_all", constants=constants)
    assert message in str(e.value)


def test_scalar_constant_given_a_vector(device):
    src = "#include <metal_stdlib>\nusing namespace metal;\nconstant float vfc_s [[function_constant(0)]];\n" \
          "kernel void vfc_scalar(device float* x [[buffer(0)]], uint i [[thread_position_in_grid]]) { x[i] = vfc_s; }\n"
    with pytest.raises(mc.ArgumentError, match=r"'vfc_s' \(index 0, float\) is a scalar: give one value, not a sequence of 2"):
        device.compile(src).function("vfc_scalar", constants={"vfc_s": (1.0, 2.0)})


def test_packed_vector_constant_is_refused(device):
    src = "#include <metal_stdlib>\nusing namespace metal;\nconstant packed_float3 vfc_p [[function_constant(0)]];\n" \
          "kernel void vfc_packed(device float* x [[buffer(0)]], uint i [[thread_position_in_grid]]) { x[i] = vfc_p[0]; }\n"
    with pytest.raises(mc.CompileError, match="must have a scalar or vector type"):
        device.compile(src)
