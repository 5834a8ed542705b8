"""Vectors, swizzles, packed vectors and matrices, audited against the MSL specification's
sections on vector data types, swizzling, packed vector types and matrices (every device).
References are NumPy's arithmetic in the component type (wrapping integers, float16 rounding)
and hand-applied component selections; none is computed by the code under test.
"""

from __future__ import annotations

import numpy as np
import pytest

import metalcall as mc
from mcconf import KernelSet, assert_close, assert_equal

# ---- ++ and -- of a swizzle (clang's vectors, Metal's, allow them; refused before) ----

INC_TYPES = [("char", np.int8), ("uchar", np.uint8), ("short", np.int16), ("ushort", np.uint16),
             ("int", np.int32), ("uint", np.uint32), ("long", np.int64), ("ulong", np.uint64),
             ("half", np.float16), ("float", np.float32)]
# Per width: two swizzles of two distinct components each, spelled xyzw and rgba.
INC_SWIZZLES = {2: ("yx", "rg"), 3: ("zx", "gb"), 4: ("wy", "br")}
_LETTERS = {c: k for k, c in enumerate("xyzw")} | {c: k for k, c in enumerate("rgba")}

INC = """
kernel void inc_{T}{N}(device {T}{N}* a [[buffer(0)]], device {T}{N}* r [[buffer(1)]],
                       uint i [[thread_position_in_grid]]) {{
    {T}{N} v = a[i];
    {T}2 p = v.{S}++;
    {T}2 q = --v.{U};
    a[i].{S}--;
    ++a[i].{U};
    r[3 * i] = v;
    r[3 * i + 1] = {T}{N}(0);
    r[3 * i + 1].xy = p;
    r[3 * i + 2] = {T}{N}(0);
    r[3 * i + 2].xy = q;
}}
"""
# Without fast math: a 2-vector's `v.yx++` then `--v.rg` steps one component up and down, which
# fast math may fold to nothing where half rounding makes it 2048 -> 2047.
KS_INC = KernelSet([INC.format(T=t, N=n, S=INC_SWIZZLES[n][0], U=INC_SWIZZLES[n][1])
                    for t, _ in INC_TYPES for n in (2, 3, 4)], fast_math=False)


def _values(dtype, n, rng):
    """Random components plus the type's edges (so ++ and -- wrap at them)."""
    if np.dtype(dtype).kind == "f":
        vals = np.concatenate([rng.uniform(-100, 100, n - 4), [2048.0, -2049.0, 0.5, 65504.0]])
        return vals.astype(dtype)
    info = np.iinfo(dtype)
    edges = np.array([info.max, info.min, 0, info.max - 1], dtype=dtype)
    return np.concatenate([rng.integers(info.min, info.max, n - 4, dtype=dtype, endpoint=True), edges])


def _add(x, one, dtype):
    with np.errstate(over="ignore"):
        return (x + np.asarray(one, dtype)).astype(dtype)


@pytest.mark.parametrize("width", [2, 3, 4])
@pytest.mark.parametrize("name,dtype", INC_TYPES, ids=[t for t, _ in INC_TYPES])
def test_swizzle_increments(device, rng, name, dtype, width):
    """`v.yx++`, `--v.rg`, `a[i].wy--` and `++a[i].br` on every scalar type and width: each
    named component steps by one (wrapping integers, half rounding), and the expression's value
    is the old swizzle (postfix) or the new one (prefix)."""
    s, u = INC_SWIZZLES[width]
    slot = 4 if width == 3 else width  # a 3-vector fills 4 components of memory
    n = 16
    a = np.zeros((n, slot), dtype)
    a[:, :width] = _values(dtype, n * width, rng).reshape(n, width)
    a0 = a.copy()
    r = np.zeros((3 * n, slot), dtype)
    KS_INC.get(device, f"inc_{name}{width}")(n, a, r)
    v = a0[:, :width].copy()
    si, ui = [_LETTERS[c] for c in s], [_LETTERS[c] for c in u]
    p = v[:, si].copy()
    v[:, si] = _add(v[:, si], 1, dtype)
    v[:, ui] = _add(v[:, ui], -1 if np.dtype(dtype).kind != "u" else np.iinfo(dtype).max, dtype)
    q = v[:, ui].copy()
    dev_v = a0[:, :width].copy()
    dev_v[:, si] = _add(dev_v[:, si], -1 if np.dtype(dtype).kind != "u" else np.iinfo(dtype).max, dtype)
    dev_v[:, ui] = _add(dev_v[:, ui], 1, dtype)
    got = r.reshape(n, 3, slot)
    assert_equal(got[:, 0, :width], v, err_msg="v after v.S++ and --v.U")
    assert_equal(got[:, 1, :2], p, err_msg="value of v.S++ (the old components)")
    assert_equal(got[:, 2, :2], q, err_msg="value of --v.U (the new components)")
    assert_equal(a[:, :width], dev_v, err_msg="device a[i].S-- and ++a[i].U")


KS_INC_PLACES = KernelSet(["""
struct P { float4 v; packed_int3 k; int pad; };
kernel void inc_places(device P* s [[buffer(0)]], device float4* o [[buffer(1)]],
                       uint i [[thread_position_in_grid]], uint l [[thread_index_in_threadgroup]]) {
    threadgroup float4 t[32];
    t[l] = o[i];
    t[l].zw++;
    --t[l].xy;
    o[i] = t[l];
    s[i].v.yz++;
    s[i].k.zx--;
    ++s[i].k.xy;
    thread P c = s[i];
    c.v.wx += 2.0f;
    c.v.wx++;
    s[i].v = c.v;
}
"""])


def test_swizzle_increments_in_every_place(device, rng):
    """Threadgroup vectors, a device struct's vector and packed_int3 member, a thread struct's."""
    n = 32
    o = rng.uniform(-10, 10, (n, 4)).astype(np.float32)
    rec = np.dtype([("v", np.float32, 4), ("k", np.int32, 3), ("pad", np.int32)])
    s = np.zeros(n, rec)
    s["v"] = rng.uniform(-10, 10, (n, 4)).astype(np.float32)
    s["k"] = rng.integers(-100, 100, (n, 3))
    o0, s0 = o.copy(), s.copy()
    KS_INC_PLACES.get(device, "inc_places")(n, s, o, threadgroup=32)
    exp_o = o0.copy()
    exp_o[:, 2:] += 1
    exp_o[:, :2] -= 1
    assert_equal(o, exp_o)
    v = s0["v"].copy()
    v[:, 1:3] += 1
    v[:, [3, 0]] += 3
    k = s0["k"].copy()
    k[:, [2, 0]] -= 1
    k[:, :2] += 1
    assert_equal(s["v"], v)
    assert_equal(s["k"], k)


# ---- swizzles of swizzles, and components of a swizzle, written ----

KS_CHAIN = KernelSet(["""
kernel void chain_float(device float4* a [[buffer(0)]], device float4* r [[buffer(1)]],
                        constant int& k [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    float4 v = a[i];
    v.zyx.xy = float2(10.0f, 20.0f);
    r[4 * i] = v;
    v = a[i];
    v.wzyx.yx += float2(1.0f, 2.0f);
    v.wx.y = 7.0f;
    r[4 * i + 1] = v;
    v = a[i];
    v.yw[k] *= 3.0f;
    v.xzw.zx++;
    ++v.bgr.gr;
    r[4 * i + 2] = v;
    a[i].wzyx.xy = float2(-1.0f, -2.0f);
    a[i].zy.y = 5.0f;
    r[4 * i + 3] = float4(a[i].zyx.xy, a[i].wzyx.zw);
}
""", """
kernel void chain_int(device int4* a [[buffer(0)]], device int4* r [[buffer(1)]],
                      uint i [[thread_position_in_grid]]) {
    int4 v = a[i];
    v.zyx.xy <<= 1;
    v.xw.yx %= 3;
    v.wzy.zx ^= int2(0x55, 0xf0);
    r[i] = v;
}
"""])


def _apply(v, path, op):
    """Applies op to the components that the chain of swizzles `path` names (`["zyx", "xy"]`)."""
    idx = list(range(v.shape[-1]))
    for sw in path:
        idx = [idx[_LETTERS[c]] for c in sw]
    v[..., idx] = op(v[..., idx])
    return idx


def test_swizzle_of_swizzle_writes(device, rng):
    """`v.zyx.xy = a` writes v.z and v.y (it wrote a copy of v.zyx, silently, before); compound
    assignments, `.y` and `[k]` of a swizzle, ++ of a swizzle's swizzle, the rgba spelling,
    device vectors."""
    n, k = 8, 1
    a = rng.uniform(-50, 50, (n, 4)).astype(np.float32)
    a0 = a.copy()
    r = np.zeros((4 * n, 4), np.float32)
    KS_CHAIN.get(device, "chain_float")(n, a, r, np.int32(k))
    got = r.reshape(n, 4, 4)
    e0 = a0.copy()
    _apply(e0, ["zyx", "xy"], lambda x: np.array([10.0, 20.0], np.float32))
    e1 = a0.copy()
    _apply(e1, ["wzyx", "yx"], lambda x: x + np.array([1.0, 2.0], np.float32))
    _apply(e1, ["wx", "y"], lambda x: np.float32(7.0))
    e2 = a0.copy()
    _apply(e2, ["yw", "xy"[k]], lambda x: x * np.float32(3))
    _apply(e2, ["xzw", "zx"], lambda x: x + np.float32(1))
    _apply(e2, ["bgr", "gr"], lambda x: x + np.float32(1))
    e3 = a0.copy()
    _apply(e3, ["wzyx", "xy"], lambda x: np.array([-1.0, -2.0], np.float32))
    _apply(e3, ["zy", "y"], lambda x: np.float32(5.0))
    assert_equal(got[:, 0], e0, err_msg="v.zyx.xy = (10, 20)")
    assert_equal(got[:, 1], e1, err_msg="v.wzyx.yx += (1, 2); v.wx.y = 7")
    assert_equal(got[:, 2], e2, err_msg="v.yw[k] *= 3; v.xzw.zx++; ++v.bgr.gr")
    assert_equal(a, e3, err_msg="a[i].wzyx.xy = (-1, -2); a[i].zy.y = 5")
    assert_equal(got[:, 3], np.concatenate([e3[:, [2, 1]], e3[:, [1, 0]]], axis=1), err_msg="reads of chains")

    b = rng.integers(-1000, 1000, (n, 4), dtype=np.int32)
    rb = np.zeros_like(b)
    KS_CHAIN.get(device, "chain_int")(n, b, rb)
    e = b.copy()
    _apply(e, ["zyx", "xy"], lambda x: x << 1)
    _apply(e, ["xw", "yx"], lambda x: np.fmod(x, 3))  # C's remainder: the dividend's sign
    _apply(e, ["wzy", "zx"], lambda x: x ^ np.array([0x55, 0xF0], np.int32))
    assert_equal(rb, e)


@pytest.mark.parametrize("body", [
    "v.xyz.xx = float2(1.0f);",      # names v.x twice
    "v.xzy.yy += 1.0f;",
    "v.xy.z = 1.0f;",                # a 2-component swizzle has no .z
    "v.zy.xyz = float3(1.0f);",      # nor a third component
    "v.xy++ = float2(1.0f);",        # a postfix increment's value is not an lvalue
    "int4 k = int4(v); k.xy += 2.5f; v = float4(k);",       # a floating scalar never splats into
    "uint4 k = uint4(v); k.zw *= 0.5f; v = float4(k);",     # an integer vector (as `k += 2.5f`)
    "int4 k = int4(v); k.zyx.xy /= 1.5f; v = float4(k);",
])
def test_invalid_swizzle_writes_are_refused(body):
    src = ("#include <metal_stdlib>\nusing namespace metal;\n"
           "kernel void k(device float4* o [[buffer(0)]], uint i [[thread_position_in_grid]]) {\n"
           f"    float4 v = o[i];\n    {body}\n    o[i] = v;\n}}\n")
    with pytest.raises(mc.CompileError):
        mc.Device("cpu").compile(src)


def test_swizzle_component_index_out_of_range_is_caught_in_checked_mode():
    """`v.zy[k]` with k = 2 names no component: checked mode says so (k = 1 runs)."""
    src = ("#include <metal_stdlib>\nusing namespace metal;\n"
           "kernel void k(device float4* o [[buffer(0)]], constant int& k [[buffer(1)]],\n"
           "              uint i [[thread_position_in_grid]]) {\n"
           "    float4 v = o[i];\n    v.zy[k] = 9.0f;\n    o[i] = v;\n}\n")
    lib = mc.Device("cpu", checked=True).compile(src)
    o = np.zeros((1, 4), np.float32)
    lib["k"](1, o, np.int32(1))
    assert_equal(o[0], np.array([0, 9, 0, 0], np.float32))
    with pytest.raises(mc.ExecutionError, match="vector component"):
        lib["k"](1, o, np.int32(2))


# ---- matrices of every shape: constructors, products, transpose, compound operators ----

SHAPES = [(c, r) for c in (2, 3, 4) for r in (2, 3, 4)]
MAT = """
kernel void mat_{T}{C}x{R}(const device {T}{C}x{R}* a [[buffer(0)]], const device {T}{R}x{C}* b [[buffer(1)]],
                           const device {T}{C}* x [[buffer(2)]], const device {T}{R}* y [[buffer(3)]],
                           device {T}{C}x{R}* m_out [[buffer(4)]], device {T}{R}* mv [[buffer(5)]],
                           device {T}{C}* vm [[buffer(6)]], device {T}{R}x{R}* ab [[buffer(7)]],
                           device {T}{R}x{C}* t [[buffer(8)]], device {T}{C}x{R}* d [[buffer(9)]],
                           uint i [[thread_position_in_grid]]) {{
    {T}{C}x{R} m = a[i];
    mv[i] = m * x[i];
    vm[i] = y[i] * m;
    ab[i] = m * b[i];
    t[i] = transpose(m);
    {T}{C}x{R} s = m * {T}(2) + m - {T}(0.5) * m;
    s -= m;
    s += m;
    s *= {T}(0.5);
    s[0][{R} - 1] = {T}(7);
    s[{C} - 1].x += {T}(1);
    m_out[i] = s;
    d[i] = {T}{C}x{R}({T}(3));
}}
"""
KS_MAT = KernelSet([MAT.format(T=t, C=c, R=r) for t in ("float", "half") for c, r in SHAPES])


def _vec_slot(r):
    return 4 if r == 3 else r


def _mat_array(m, dtype):
    """(n, C, R) column-major matrices as MSL lays them out: each column a vector of R (3 → 4 slots)."""
    n, c, r = m.shape
    out = np.zeros((n, c, _vec_slot(r)), dtype)
    out[:, :, :r] = m
    return out


@pytest.mark.parametrize("c,r", SHAPES, ids=[f"{c}x{r}" for c, r in SHAPES])
@pytest.mark.parametrize("tname,dtype", [("float", np.float32), ("half", np.float16)])
def test_matrix_shapes(device, rng, tname, dtype, c, r):
    """floatCxR and halfCxR for every C, R in 2..4: m * v, v * m, m * (RxC), transpose, the
    diagonal constructor, scalar products, + - and their compound forms, column and element writes,
    in device buffers with MSL's column stride (a 3-row column takes 4 slots)."""
    n = 8
    a = rng.uniform(-2, 2, (n, c, r)).astype(dtype)     # a[k, col, row]
    b = rng.uniform(-2, 2, (n, r, c)).astype(dtype)
    x = rng.uniform(-2, 2, (n, c)).astype(dtype)
    y = rng.uniform(-2, 2, (n, r)).astype(dtype)
    outs = [np.zeros((n, c, _vec_slot(r)), dtype), np.zeros((n, _vec_slot(r)), dtype),
            np.zeros((n, _vec_slot(c)), dtype), np.zeros((n, r, _vec_slot(r)), dtype),
            np.zeros((n, r, _vec_slot(c)), dtype), np.zeros((n, c, _vec_slot(r)), dtype)]
    xs = np.zeros((n, _vec_slot(c)), dtype)
    xs[:, :c] = x
    ys = np.zeros((n, _vec_slot(r)), dtype)
    ys[:, :r] = y
    KS_MAT.get(device, f"mat_{tname}{c}x{r}")(n, _mat_array(a, dtype), _mat_array(b, dtype), xs, ys, *outs)
    m_out, mv, vm, ab, t, d = outs
    A = a.astype(np.float64).transpose(0, 2, 1)  # A[k, row, col]
    B = b.astype(np.float64).transpose(0, 2, 1)
    tol = dict(rtol=2e-2, atol=2e-2) if dtype == np.float16 else dict(rtol=1e-5, atol=1e-5)
    assert_close(mv[:, :r], np.einsum("krc,kc->kr", A, x.astype(np.float64)), **tol)
    assert_close(vm[:, :c], np.einsum("kr,krc->kc", y.astype(np.float64), A), **tol)
    assert_close(ab[:, :, :r], (A @ B).transpose(0, 2, 1), **tol)  # (R x R), columns first
    assert_equal(t[:, :, :c], a.transpose(0, 2, 1))
    s = a.astype(np.float64) * 2 + a - 0.5 * a.astype(np.float64)
    s = (s - a + a) * 0.5
    s[:, 0, r - 1] = 7
    s[:, c - 1, 0] += 1
    assert_close(m_out[:, :, :r], s, **tol)
    diag = np.zeros((c, r))
    for k in range(min(c, r)):
        diag[k, k] = 3
    assert_equal(d[:, :, :r], np.broadcast_to(diag, (n, c, r)).astype(dtype))


KS_LAYOUT = KernelSet(["""
kernel void layout_sizes(device uint* o [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    uint k = 0;
#define S(T) o[k++] = sizeof(T##2); o[k++] = alignof(T##2); o[k++] = sizeof(T##3); o[k++] = alignof(T##3); \\
             o[k++] = sizeof(T##4); o[k++] = alignof(T##4); o[k++] = sizeof(packed_##T##2); \\
             o[k++] = alignof(packed_##T##2); o[k++] = sizeof(packed_##T##3); o[k++] = alignof(packed_##T##3); \\
             o[k++] = sizeof(packed_##T##4); o[k++] = alignof(packed_##T##4);
    S(char) S(uchar) S(short) S(ushort) S(int) S(uint) S(half) S(float)
#undef S
#define M(T) o[k++] = sizeof(T##2x2); o[k++] = sizeof(T##2x3); o[k++] = sizeof(T##2x4); \\
             o[k++] = sizeof(T##3x2); o[k++] = sizeof(T##3x3); o[k++] = sizeof(T##3x4); \\
             o[k++] = sizeof(T##4x2); o[k++] = sizeof(T##4x3); o[k++] = sizeof(T##4x4); \\
             o[k++] = alignof(T##3x3); o[k++] = alignof(T##2x2);
    M(float) M(half)
#undef M
    o[k++] = sizeof(vec<float, 3>); o[k++] = sizeof(packed_vec<half, 3>);
    o[k++] = sizeof(long3); o[k++] = alignof(ulong3); o[k++] = sizeof(bool3); o[k++] = alignof(bool2);
}
""", """
struct Packed {
    packed_float3 a;
    float b;
    packed_half3 h;
    packed_uchar4 c;
    packed_short2 s;
};
kernel void layout_packed_struct(device Packed* p [[buffer(0)]], device float4* o [[buffer(1)]],
                                 uint i [[thread_position_in_grid]]) {
    Packed q = p[i];
    float3 a = q.a;
    o[2 * i] = float4(a * 2.0f + float3(q.h), q.b);
    o[2 * i + 1] = float4(float4(q.c).wz, float2(q.s.yx));
    p[i].a = a + float3(1.0f);
    p[i].a.y += q.b;
    p[i].h = half3(q.a.zyx);
    p[i].c.xw = uchar2(q.c.w, q.c.x);
    p[i].s = short2(q.s) * short(-1);
    p[i].b = dot(q.a, float3(q.a));
}
"""])


def test_sizes_and_alignments():
    """sizeof/alignof of every vector, packed vector and matrix type: a 3-vector is sized and
    aligned as a 4-vector, a packed one is tight and aligned as its component; a matrix is its
    columns (float3x3 48 bytes)."""
    dev = mc.Device("cpu")
    o = np.zeros(200, np.uint32)
    KS_LAYOUT.get(dev, "layout_sizes")(1, o)
    exp = []
    for sz in (1, 1, 2, 2, 4, 4, 2, 4):
        exp += [2 * sz, 2 * sz, 4 * sz, 4 * sz, 4 * sz, 4 * sz, 2 * sz, sz, 3 * sz, sz, 4 * sz, sz]
    for sz in (4, 2):
        exp += [c * _vec_slot(r) * sz for c, r in SHAPES] + [4 * sz, 2 * sz]
    exp += [16, 6, 32, 32, 4, 2]
    assert_equal(o[:len(exp)], np.array(exp, np.uint32))


def test_packed_members_of_a_device_struct(device, rng):
    """A struct of packed members has no padding between them (packed_float3 at 0, float at 12,
    packed_half3 at 16, packed_uchar4 at 22, packed_short2 at 26): read, converted, swizzled and
    written back component by component."""
    rec = np.dtype({"names": ["a", "b", "h", "c", "s"],
                    "formats": [(np.float32, 3), np.float32, (np.float16, 3), (np.uint8, 4), (np.int16, 2)],
                    "offsets": [0, 12, 16, 22, 26], "itemsize": 32})
    n = 8
    p = np.zeros(n, rec)
    p["a"] = rng.uniform(-5, 5, (n, 3))
    p["b"] = rng.uniform(-5, 5, n)
    p["h"] = rng.uniform(-5, 5, (n, 3))
    p["c"] = rng.integers(0, 256, (n, 4))
    p["s"] = rng.integers(-30000, 30000, (n, 2))
    p0 = p.copy()
    o = np.zeros((2 * n, 4), np.float32)
    KS_LAYOUT.get(device, "layout_packed_struct")(n, p, o)
    a, b = p0["a"], p0["b"]
    o = o.reshape(n, 2, 4)
    assert_close(o[:, 0, :3], a * 2 + p0["h"].astype(np.float32), rtol=1e-6, atol=1e-6)
    assert_equal(o[:, 0, 3], b)
    assert_equal(o[:, 1, :2], p0["c"][:, [3, 2]].astype(np.float32))
    assert_equal(o[:, 1, 2:], p0["s"][:, [1, 0]].astype(np.float32))
    exp_a = a + np.float32(1)
    exp_a[:, 1] += b
    assert_equal(p["a"], exp_a)
    assert_equal(p["h"], a[:, ::-1].astype(np.float16))
    assert_equal(p["c"], np.stack([p0["c"][:, 3], p0["c"][:, 1], p0["c"][:, 2], p0["c"][:, 0]], axis=1))
    assert_equal(p["s"], (-p0["s"].astype(np.int32)).astype(np.int16))
    assert_close(p["b"], (a.astype(np.float64) ** 2).sum(axis=1), rtol=1e-6)


# ---- constructors of every component type from every mix of scalars and vectors ----

CTOR_TYPES = [("bool", np.bool_), ("char", np.int8), ("uchar", np.uint8), ("short", np.int16),
              ("ushort", np.uint16), ("int", np.int32), ("uint", np.uint32), ("long", np.int64),
              ("ulong", np.uint64), ("half", np.float16), ("float", np.float32)]
CTOR_ROWS = 11
CTOR = """
kernel void ctor_{T}(const device {T}* s [[buffer(0)]], device {T}4* o [[buffer(1)]],
                     uint i [[thread_position_in_grid]]) {{
    {T} a = s[4 * i], b = s[4 * i + 1], c = s[4 * i + 2], d = s[4 * i + 3];
    device {T}4* r = o + {R} * i;
    r[0] = {T}4({T}2(a, b), c, d);
    r[1] = {T}4(a, {T}2(b, c), d);
    r[2] = {T}4(a, b, {T}2(c, d));
    r[3] = {T}4({T}3(a, b, c), d);
    r[4] = {T}4(a, {T}3(b, c, d));
    r[5] = {T}4({T}2(a, b), {T}2(c, d));
    r[6] = {T}4(a);
    {T}4 l = {{a, b}};
    r[7] = l;
    r[8] = vec<{T}, 4>({T}3(a, b, c).zyx, d);
    r[9] = {T}4({PK});
    {T}3 t{{c}};
    r[10] = {T}4(t.xy, {T}2(vec<{T}, 2>(b).yx));
}}
"""
# (MSL has no packed bool vectors.)
KS_CTOR = KernelSet([CTOR.format(T=t, R=CTOR_ROWS, PK=f"{t}4(d, c, b, a)" if t == "bool" else f"packed_{t}4({t}4(d, c, b, a))")
                     for t, _ in CTOR_TYPES])


@pytest.mark.parametrize("name,dtype", CTOR_TYPES, ids=[t for t, _ in CTOR_TYPES])
def test_vector_constructors_of_every_type(device, rng, name, dtype):
    """`T4(T2, c, d)`, `T4(a, T2, d)`, `T4(a, b, T2)`, `T4(T3, d)`, `T4(a, T3)`, `T4(T2, T2)`,
    broadcast, a braced list shorter than the vector (the rest zero), `vec<T, 4>`, through the
    packed type, a `{c}` brace (c, 0, 0) and a broadcast 2-vector swizzled."""
    n = 8
    if dtype == np.bool_:
        s = rng.integers(0, 2, 4 * n).astype(np.bool_)
    elif np.dtype(dtype).kind == "f":
        s = rng.uniform(-100, 100, 4 * n).astype(dtype)
    else:
        info = np.iinfo(dtype)
        s = rng.integers(info.min, info.max, 4 * n, dtype=dtype, endpoint=True)
    o = np.zeros((n * CTOR_ROWS, 4), dtype)
    KS_CTOR.get(device, f"ctor_{name}")(n, s, o)
    a, b, c, d = s.reshape(n, 4).T
    z = np.zeros(n, dtype)
    rows = [[a, b, c, d]] * 6 + [[a, a, a, a], [a, b, z, z], [c, b, a, d], [d, c, b, a], [c, z, b, b]]
    exp = np.stack([np.stack(r, axis=1) for r in rows], axis=1)
    assert_equal(o.reshape(n, CTOR_ROWS, 4), exp)


# ---- as_type between vectors of one size and other widths: little-endian byte order ----

KS_AS_TYPE = KernelSet(["""
kernel void as_types(const device uint4* u [[buffer(0)]], device uint4* o [[buffer(1)]],
                     uint i [[thread_position_in_grid]]) {
    uint4 x = u[i];
    device uint4* r = o + 6 * i;
    r[0] = uint4(as_type<uchar4>(x.x));
    r[1] = uint4(uint2(as_type<ushort2>(x.y)), as_type<uint2>(as_type<float2>(x.zw)));
    r[2] = uint4(as_type<ushort4>(as_type<half4>(x.zw)));
    r[3] = uint4(int4(as_type<char3>(x.w), 0));
    ulong l = as_type<ulong>(x.xy);
    r[4] = uint4(uint(l), uint(l >> 32), as_type<uint>(as_type<half2>(x.z)), as_type<uint>(as_type<float>(x.w)));
    r[5] = as_type<uint4>(as_type<long2>(as_type<float4>(x)));
}
"""])


def test_as_type_between_widths(device, rng):
    n = 16
    u = rng.integers(0, 2**32, (n, 4), dtype=np.uint64).astype(np.uint32)
    o = np.zeros((6 * n, 4), np.uint32)
    KS_AS_TYPE.get(device, "as_types")(n, u, o)
    o = o.reshape(n, 6, 4)
    assert_equal(o[:, 0], u[:, 0].copy().view(np.uint8).reshape(n, 4).astype(np.uint32))
    assert_equal(o[:, 1, :2], u[:, 1].copy().view(np.uint16).reshape(n, 2).astype(np.uint32))
    assert_equal(o[:, 1, 2:], u[:, 2:])
    assert_equal(o[:, 2], u[:, 2:].copy().view(np.uint16).reshape(n, 4).astype(np.uint32))
    c3 = u[:, 3].copy().view(np.int8).reshape(n, 4)[:, :3].astype(np.int32)
    assert_equal(o[:, 3, :3], c3.astype(np.uint32))
    assert_equal(o[:, 4], u)
    assert_equal(o[:, 5], u)


# ---- variables built by their constructor and never named again ----

KS_UNUSED = KernelSet(["""
kernel void unused_locals(device float4* o [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    half2x2 ha(1.0h);
    half2x3 hb(1.0h);
    float3x3 rot(2.0f);
    float4 spare(0.5f);
    int count(3);
    o[i] = float4(float2(ha[1]), 1.0f, 2.0f);
}
"""])


def test_unused_locals_built_by_constructors_compile(device):
    """`half2x3 hb(1.0h);` declares hb even where nothing names it again: it was refused as "a call
    to 'hb', which is neither defined in this source nor part of the Metal standard library"."""
    o = np.zeros((2, 4), np.float32)
    KS_UNUSED.get(device, "unused_locals")(2, o)
    assert_equal(o, np.array([[0, 1, 1, 2]] * 2, np.float32))


# ---- <simd/simd.h>'s spellings, as headers shared with C++ hosts write them ----

KS_SIMD = KernelSet(["""
struct Uniforms {
    simd::float4x4 mvp;
    matrix_float3x3 normal_matrix;
    simd::float3 eye;
    vector_float2 scale;
    simd_uint2 size;
};
kernel void simd_names(constant Uniforms& u [[buffer(0)]], const device simd::float4* p [[buffer(1)]],
                       device float4* o [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    simd::float4 v = u.mvp * p[i];
    simd::float3 n = u.normal_matrix * p[i].xyz;
    o[2 * i] = v;
    o[2 * i + 1] = float4(n - u.eye, simd::dot(u.scale, float2(u.size)));
}
""", """
kernel void simd_matrix_types(device simd::float2x2* m [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    simd::float2x2 a = m[i];
    m[i] = a * simd::float2x2(simd::float2(1.0f, 2.0f), simd::float2(3.0f, 4.0f));
}
"""], header="#include <metal_stdlib>\n#include <simd/simd.h>\nusing namespace metal;\n")


def test_simd_namespace_types(device, rng):
    """`simd::float4x4`, `simd::float3`, `matrix_float3x3`, `vector_float2`, `simd_uint2` in a
    constant struct (float3x3 columns of 16 bytes, float3 16 bytes), and `simd::float2x2`."""
    rec = np.dtype({"names": ["mvp", "nm", "eye", "scale", "size"],
                    "formats": [(np.float32, (4, 4)), (np.float32, (3, 4)), (np.float32, 4), (np.float32, 2),
                                (np.uint32, 2)],
                    "offsets": [0, 64, 112, 128, 136], "itemsize": 144})
    u = np.zeros(1, rec)
    u["mvp"] = rng.uniform(-1, 1, (4, 4))
    u["nm"] = rng.uniform(-1, 1, (3, 4))
    u["eye"] = rng.uniform(-1, 1, 4)
    u["scale"] = [0.5, 2.0]
    u["size"] = [640, 480]
    n = 8
    p = rng.uniform(-1, 1, (n, 4)).astype(np.float32)
    o = np.zeros((2 * n, 4), np.float32)
    KS_SIMD.get(device, "simd_names")(n, u, p, o)
    mvp = u["mvp"][0].astype(np.float64).T          # columns stored first
    nm = u["nm"][0, :, :3].astype(np.float64).T
    o = o.reshape(n, 2, 4)
    assert_close(o[:, 0], p @ mvp.T, rtol=1e-5, atol=1e-5)
    assert_close(o[:, 1, :3], p[:, :3] @ nm.T - u["eye"][0, :3], rtol=1e-5, atol=1e-5)
    assert_equal(o[:, 1, 3], np.full(n, 0.5 * 640 + 2.0 * 480, np.float32))
    m = rng.uniform(-2, 2, (n, 2, 2)).astype(np.float32)
    m0 = m.astype(np.float64)
    KS_SIMD.get(device, "simd_matrix_types")(n, m)
    b = np.array([[1.0, 2.0], [3.0, 4.0]])  # columns
    exp = np.einsum("kcr,dc->kdr", m0, b)  # column d of a*b = sum_c a.col[c] * b[d][c]
    assert_close(m, exp, rtol=1e-5, atol=1e-5)


# ---- operators of every component type and width: vector op vector, vector op scalar, scalar op vector ----

OP_INT_ROWS = ["x + y", "x - y", "x * y", "x / y", "x % y", "x & y", "x | k", "k ^ y", "x << (y & M)",
               "x >> T(3)", "~x", "-x", "k - x", "k / y", "k % y", "x * k", "+x",
               "select(V(0), V(1), x < y)", "select(V(0), V(1), k >= x)", "select(V(0), V(1), x == k)",
               "select(V(0), V(1), !(x != y))", "select(V(0), V(1), (x > k) || (y < k))",
               "select(V(0), V(1), (x > y) && (y > k))", "select(x, y, x > y)"]
OP_FLOAT_ROWS = ["x + y", "x - y", "x * y", "x / y", "k - x", "k / y", "x * k", "-x", "+x", "x + k",
                 "select(V(0), V(1), x < y)", "select(V(0), V(1), k >= x)", "select(V(0), V(1), x == k)",
                 "select(x, y, x > y)"]
OPS = """
kernel void vops_{T}{N}(const device {T}{N}* a [[buffer(0)]], const device {T}{N}* b [[buffer(1)]],
                       const device {T}* s [[buffer(2)]], device {T}{N}* r [[buffer(3)]],
                       uint i [[thread_position_in_grid]]) {{
    typedef {T} T;
    typedef {T}{N} V;
    const T M = T(sizeof(T) * 8 - 1);
    {T}{N} x = a[i], y = b[i];
    T k = s[i];
    device {T}{N}* o = r + {R} * i;
{BODY}
}}
"""


def _ops_kernel(t, n, rows):
    body = "\n".join(f"    o[{j}] = {e};" for j, e in enumerate(rows))
    return OPS.format(T=t, N=n, R=len(rows), BODY=body)


INT_OP_TYPES = [t for t in INC_TYPES if np.dtype(t[1]).kind in "iu"]
KS_OPS = KernelSet([_ops_kernel(t, n, OP_INT_ROWS) for t, _ in INT_OP_TYPES for n in (2, 3, 4)]
                   + [_ops_kernel(t, n, OP_FLOAT_ROWS) for t in ("half", "float") for n in (2, 3, 4)],
                   fast_math=False)


def _int_reference(x, y, k, bits, signed):
    def wrap(v):
        v %= 1 << bits
        return v - (1 << bits) if signed and v >> (bits - 1) else v

    def div(p, q):
        r = abs(p) // abs(q)
        return r if (p >= 0) == (q >= 0) else -r

    def mod(p, q):
        return p - q * div(p, q)

    m = bits - 1
    return [wrap(x + y), wrap(x - y), wrap(x * y), wrap(div(x, y)), mod(x, y), x & y, wrap(x | k), wrap(k ^ y),
            wrap(x << (y & m)), x >> 3, wrap(~x), wrap(-x), wrap(k - x), wrap(div(k, y)), mod(k, y), wrap(x * k), x,
            int(x < y), int(k >= x), int(x == k), int(x == y), int((x > k) or (y < k)), int((x > y) and (y > k)),
            y if x > y else x]


@pytest.mark.parametrize("width", [2, 3, 4])
@pytest.mark.parametrize("name,dtype", INT_OP_TYPES, ids=[t for t, _ in INT_OP_TYPES])
def test_integer_vector_operators(device, rng, name, dtype, width):
    """Every arithmetic, bitwise, shift, comparison and logical operator on integer vectors, both
    operand orders with a scalar; char and short wrap as their own width (no promotion to int)."""
    info = np.iinfo(dtype)
    bits, signed = info.bits, info.min < 0
    n, slot = 12, 4 if width == 3 else width
    x = rng.integers(info.min, info.max, (n, width), dtype=dtype, endpoint=True)
    y = rng.integers(info.min, info.max, (n, width), dtype=dtype, endpoint=True)
    y[y == 0] = 3
    if signed:
        y[y == -1] = 5  # MIN / -1 overflows: left out
    x[0, :2] = [info.min, info.max]
    k = rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True)
    pad = lambda v: np.pad(v, ((0, 0), (0, slot - width)), constant_values=1)  # noqa: E731
    r = np.zeros((n * len(OP_INT_ROWS), slot), dtype)
    KS_OPS.get(device, f"vops_{name}{width}")(n, pad(x), pad(y), k, r)
    got = r.reshape(n, len(OP_INT_ROWS), slot)[:, :, :width]
    exp = np.array([[_int_reference(int(x[p, c]), int(y[p, c]), int(k[p]), bits, signed) for c in range(width)]
                    for p in range(n)], dtype=object).transpose(0, 2, 1).astype(dtype)
    for j, row in enumerate(OP_INT_ROWS):
        assert_equal(got[:, j], exp[:, j], err_msg=f"{name}{width}: {row}")


@pytest.mark.parametrize("width", [2, 3, 4])
@pytest.mark.parametrize("name,dtype", [("half", np.float16), ("float", np.float32)])
def test_float_vector_operators(device, rng, name, dtype, width):
    """+ - * / with vectors and scalars in both orders, negation, comparisons and select: each
    component rounded once to its type (no fast math)."""
    n, slot = 12, 4 if width == 3 else width
    x = rng.uniform(-100, 100, (n, width)).astype(dtype)
    y = rng.uniform(-100, 100, (n, width)).astype(dtype)
    k = rng.uniform(-100, 100, n).astype(dtype)
    x[0, 0] = k[0]
    pad = lambda v: np.pad(v, ((0, 0), (0, slot - width)), constant_values=1)  # noqa: E731
    r = np.zeros((n * len(OP_FLOAT_ROWS), slot), dtype)
    KS_OPS.get(device, f"vops_{name}{width}")(n, pad(x), pad(y), k, r)
    got = r.reshape(n, len(OP_FLOAT_ROWS), slot)[:, :, :width]
    kk = k[:, None]
    one, zero = dtype(1), dtype(0)
    exp = [x + y, x - y, x * y, x / y, kk - x, kk / y, x * kk, -x, x, x + kk, np.where(x < y, one, zero),
           np.where(kk >= x, one, zero), np.where(x == kk, one, zero), np.where(x > y, y, x)]
    for j, row in enumerate(OP_FLOAT_ROWS):
        assert_equal(got[:, j], np.asarray(exp[j], dtype), err_msg=f"{name}{width}: {row}")


# ---- explicit conversions between vector types: rounding, wrapping, bool ----

KS_CONVERT = KernelSet(["""
kernel void vec_conversions(const device float4* f [[buffer(0)]], const device int4* k [[buffer(1)]],
                            device half4* h [[buffer(2)]], device float4* hf [[buffer(3)]],
                            device char4* c [[buffer(4)]], device ushort4* u [[buffer(5)]],
                            device uchar4* b [[buffer(6)]], device float4* bf [[buffer(7)]],
                            uint i [[thread_position_in_grid]]) {
    float4 x = f[i];
    half4 hx = half4(x);
    h[i] = hx;
    hf[i] = float4(hx) + float4(half4(half3(x.xyz), half(x.w)));
    c[i] = char4(k[i]);
    u[i] = ushort4(k[i]);
    b[i] = uchar4(bool4(x)) + uchar4(bool4(k[i])) * uchar(2);
    bf[i] = float4(bfloat4(x));
}
"""], fast_math=False)


def test_vector_conversions_round_and_wrap(device, rng):
    """half4(float4) rounds each component to nearest even (ties, overflow to inf, subnormals),
    char4(int4) and ushort4(int4) keep the low bits, bool4 of floats and integers is "not zero"
    (NaN true, -0 false), bfloat4(float4) rounds to nearest even."""
    n = 16
    ties = np.array([1 + 2.0**-11, 1 + 3 * 2.0**-11, 2048 + 1, 65520.0, 65519.0, -65520.0, 2.0**-25,
                     3 * 2.0**-25, 2.0**-24 * 1.5, -0.0, np.nan, 0.1, 1 + 2.0**-8, 1 + 3 * 2.0**-8,
                     np.inf, -1e-30], np.float32)
    x = rng.uniform(-70000, 70000, (n, 4)).astype(np.float32)
    x.reshape(-1)[:len(ties)] = ties
    k = rng.integers(-2**31, 2**31, (n, 4), dtype=np.int64).astype(np.int32)
    k[0] = [0, -1, 300, 70000]
    outs = [np.zeros((n, 4), t) for t in (np.float16, np.float32, np.int8, np.uint16, np.uint8, np.float32)]
    with np.errstate(over="ignore", invalid="ignore"):
        KS_CONVERT.get(device, "vec_conversions")(n, x, k, *outs)
        h, hf, c, u, b, bf = outs
        xh = x.astype(np.float16)
        assert_equal(h, xh)
        assert_equal(hf, 2 * xh.astype(np.float32))
        assert_equal(c, k.astype(np.int8))
        assert_equal(u, k.astype(np.uint16))
        assert_equal(b, ((x != 0) | np.isnan(x)).astype(np.uint8) + 2 * (k != 0).astype(np.uint8))
        bits = x.view(np.uint32).astype(np.uint64)
        rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16 << 16).astype(np.uint32)
        rounded = np.where(np.isnan(x), bits.astype(np.uint32), rounded)
        exp_bf = rounded.view(np.float32)
        assert_equal(np.isnan(bf), np.isnan(exp_bf))
        ok = ~np.isnan(exp_bf)
        assert_equal(bf[ok], exp_bf[ok])


KS_SWZ_FORMS = KernelSet(["""
#define INC(v) v.xy++
kernel void swizzle_write_forms(device float4* o [[buffer(0)]], device int* n [[buffer(1)]],
                                uint i [[thread_position_in_grid]]) {
    float4 v = o[4 * i], w = o[4 * i];
    v.xy = v.zw = float2(1.0f, 2.0f);       // chained: both get (1, 2)
    float2 a = (w.yz = float2(3.0f, 4.0f));
    o[4 * i] = v + float4(a, a);
    int count = 0;
    for (int2 p = int2(0, 10); p.x < 3; p.yx++) count += p.y;   // 10 + 11 + 12
    n[i] = count;
    float4 m = o[4 * i + 1];
    INC(m);
    (i % 2 == 0 ? m : w).zw = float2(-1.0f);
    o[4 * i + 1] = m;
    packed_float4 p = packed_float4(o[4 * i + 2]);
    p.wzyx.xy = float2(5.0f, 6.0f);
    p.zy++;
    o[4 * i + 2] = float4(p);
    half4 h = half4(o[4 * i + 3]);
    auto f = [&]() { h.yz++; return float(h.x); };
    float x = f();
    h.zyx.xy -= half(0.5);
    o[4 * i + 3] = float4(h) + x;
}
"""], fast_math=False)


def test_swizzle_write_forms(device, rng):
    """Chained swizzle assignments and their values, `p.yx++` in a for loop's increment, a swizzle
    ++ inside a macro, a conditional's vector written through a swizzle, a packed vector's chained
    swizzle and ++, a half vector's ++ in a lambda."""
    n = 4
    o = rng.integers(-20, 20, (4 * n, 4)).astype(np.float32)
    o0 = o.reshape(n, 4, 4).copy()
    cnt = np.zeros(n, np.int32)
    KS_SWZ_FORMS.get(device, "swizzle_write_forms")(n, o, cnt)
    got = o.reshape(n, 4, 4)
    assert_equal(cnt, np.full(n, 33, np.int32))
    assert_equal(got[:, 0], np.tile(np.array([1 + 3, 2 + 4, 1 + 3, 2 + 4], np.float32), (n, 1)))
    e1 = o0[:, 1].copy()
    e1[:, :2] += 1
    e1[0::2, 2:] = -1
    assert_equal(got[:, 1], e1)
    e2 = o0[:, 2].copy()
    e2[:, 3], e2[:, 2] = 5, 6
    e2[:, [2, 1]] += 1
    assert_equal(got[:, 2], e2)
    h = o0[:, 3].astype(np.float16)
    h[:, 1:3] += np.float16(1)
    x = h[:, 0].astype(np.float32)
    h[:, [2, 1]] -= np.float16(0.5)
    assert_equal(got[:, 3], h.astype(np.float32) + x[:, None])


KS_BFLOAT = KernelSet(["""
kernel void bfloat_vectors(const device float4* a [[buffer(0)]], const device float4* b [[buffer(1)]],
                           device float4* o [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    bfloat4 x = bfloat4(a[i]), y = bfloat4(b[i]);
    bfloat k = bfloat(b[i].x);
    device float4* r = o + 5 * i;
    r[0] = float4(x + y);
    r[1] = float4(x * k);
    r[2] = float4(k - y);
    bfloat4 v = x;
    v.yx++;
    v.wzyx.xy -= bfloat2(bfloat(1.0f));
    r[3] = float4(v);
    r[4] = float4(select(bfloat4(0.0f), bfloat4(1.0f), x < y));
}
"""], fast_math=False)


def test_bfloat_vectors(device, rng):
    """bfloat4 arithmetic, scalar orders, swizzle ++ and chained swizzle writes: each result
    rounded once to bfloat (nearest even)."""
    from mcconf import bfloat_rounded
    n = 8
    a = bfloat_rounded(rng.uniform(-300, 300, (n, 4)))
    b = bfloat_rounded(rng.uniform(-300, 300, (n, 4)))
    o = np.zeros((5 * n, 4), np.float32)
    KS_BFLOAT.get(device, "bfloat_vectors")(n, a, b, o)
    got = o.reshape(n, 5, 4)
    k = b[:, :1]
    assert_equal(got[:, 0], bfloat_rounded(a + b))
    assert_equal(got[:, 1], bfloat_rounded(a * k))
    assert_equal(got[:, 2], bfloat_rounded(k - b))
    v = a.copy()
    v[:, :2] = bfloat_rounded(v[:, :2] + 1)
    v[:, 2:] = bfloat_rounded(v[:, 2:] - 1)
    assert_equal(got[:, 3], v)
    assert_equal(got[:, 4], (a < b).astype(np.float32))
