"""The argument ABI, audited against the MSL specification's tables of sizes and alignments
(scalars, vectors, packed vectors, matrices; section 2) and DESIGN.md §2's rules for values
passed from Python, on every device (audit of wrong answers given without an error).

* sizeof/alignof of every scalar, vector, packed vector and matrix type inside a kernel, and a
  struct of every member kind read from and written to a `device` buffer at the offsets the
  tables give (a NumPy structured dtype whose offsets are worked out here by hand).
* Host memory aligned to 16 bytes but not 32 (half of NumPy's arrays) for `long4` or an
  `alignas(32)` struct: copied as other misaligned memory is, not refused.
* `vec<T, N>` / `packed_vec<T, N>`, MSL's template spelling of `floatN`: arrays of another element
  type were bound without a check and reinterpreted; builtins so declared were refused.
* Python floats to `constant half&` / `bfloat&` parameters and half function constants are
  rounded once, as np.float16 rounds (they were rounded to float first, then again); so are
  integers past 2^53 to float (they went through a double); a finite value past bfloat's range
  is refused as one past half's is.
* A type alias declared twice with different types (a namespace's `typedef half real;` and a
  struct's `typedef float real;`): a `constant real&` parameter took 1.5 as a float's 4 bytes and
  read 0; an alias qualified by its namespace (`lo::real`) was not resolved.
"""

from __future__ import annotations

import numpy as np
import pytest

import metalcall as mc
from mcconf import KernelSet, assert_equal

# ---------------------------------------------------------------------------
# sizeof / alignof (MSL specification tables 2.2, 2.3 and 2.4)
# ---------------------------------------------------------------------------

SCALARS = [("bool", 1), ("char", 1), ("uchar", 1), ("short", 2), ("ushort", 2), ("int", 4), ("uint", 4),
           ("long", 8), ("ulong", 8), ("half", 2), ("float", 4), ("bfloat", 2)]


def _layout_table():
    """(type, size, alignment) from the specification's rules: an n-vector is n components wide and
    aligned to its size, a 3-vector like a 4-vector; a packed vector is tight and aligned to its
    component; a matrix is its columns (vectors of its row count)."""
    rows = []
    for t, s in SCALARS:
        rows.append((t, s, s))
        for n in (2, 3, 4):
            wide = (4 if n == 3 else n) * s
            rows.append((f"{t}{n}", wide, wide))
            if t != "bool":
                rows.append((f"packed_{t}{n}", n * s, s))
    for t, s in (("half", 2), ("float", 4)):
        for c in (2, 3, 4):
            for r in (2, 3, 4):
                column = (4 if r == 3 else r) * s
                rows.append((f"{t}{c}x{r}", c * column, column))
    return rows


LAYOUT = _layout_table()
KS_SIZES = KernelSet(["kernel void abi_sizes(device uint* o [[buffer(0)]]) {\n" + "".join(
    f"    o[{2 * j}] = sizeof({t}); o[{2 * j + 1}] = alignof({t});\n" for j, (t, _, _) in enumerate(LAYOUT)) + "}\n"])


def test_sizeof_and_alignof_follow_the_specification_tables(device):
    out = np.zeros(2 * len(LAYOUT), np.uint32)
    KS_SIZES.get(device, "abi_sizes")(1, out)
    got = {t: (int(out[2 * j]), int(out[2 * j + 1])) for j, (t, _, _) in enumerate(LAYOUT)}
    assert got == {t: (s, a) for t, s, a in LAYOUT}


# ---------------------------------------------------------------------------
# A struct of every member kind, read and written through device buffers
# ---------------------------------------------------------------------------

STRUCT_PREAMBLE = """
struct Inner { uchar a; packed_half3 h; };          // 1 + pad 1 + 6: size 8, alignment 2
struct S {
    char3 c3;            //   0 (4 bytes, alignment 4)
    float3 f3;           //  16 (16, 16)
    packed_float3 p3;    //  32 (12, 4)
    half3 h3;            //  48 (8, 8)
    short2 s2;           //  56 (4, 4)
    bool b;              //  60
    long l;              //  64
    ulong ul;            //  72
    float3x3 m;          //  80 (3 columns 16 bytes apart)
    half2x2 hm;          // 128 (8, 4)
    float2x4 fm;         // 144 (32, 16)
    Inner in;            // 176 (8, 2)
    float2 arr[3];       // 184 (24, 8)
    alignas(32) int ai;  // 224
    uchar tail;          // 228; the struct's size rounds up to its alignment, 32: 256
};
"""
STRUCT_DTYPE = np.dtype({
    "names": ["c3", "f3", "p3", "h3", "s2", "b", "l", "ul", "m", "hm", "fm", "in_a", "in_h", "arr", "ai", "tail"],
    "formats": [("i1", 3), ("f4", 3), ("f4", 3), ("f2", 3), ("i2", 2), "u1", "i8", "u8", ("f4", (3, 4)),
                ("f2", (2, 2)), ("f4", (2, 4)), "u1", ("f2", 3), ("f4", (3, 2)), "i4", "u1"],
    "offsets": [0, 16, 32, 48, 56, 60, 64, 72, 80, 128, 144, 176, 178, 184, 224, 228], "itemsize": 256})
FLOAT_MEMBERS = 3 + 3 + 3 + 3 + 2 + 1 + 9 + 4 + 8 + 1 + 3 + 6 + 2  # 48 floats a struct

KS_STRUCT = KernelSet([
    """
kernel void abi_struct_read(const device S* s [[buffer(0)]], device float* o [[buffer(1)]],
                            device long* lo [[buffer(2)]], device uint* sizes [[buffer(3)]],
                            uint i [[thread_position_in_grid]]) {
    S v = s[i];
    device float* r = o + 48 * i;
    int k = 0;
    for (int j = 0; j < 3; ++j) r[k++] = v.c3[j];
    for (int j = 0; j < 3; ++j) r[k++] = v.f3[j];
    for (int j = 0; j < 3; ++j) r[k++] = v.p3[j];
    for (int j = 0; j < 3; ++j) r[k++] = v.h3[j];
    r[k++] = v.s2.x; r[k++] = v.s2.y; r[k++] = v.b ? 1.0f : 0.0f;
    for (int c = 0; c < 3; ++c) for (int j = 0; j < 3; ++j) r[k++] = v.m[c][j];
    for (int c = 0; c < 2; ++c) for (int j = 0; j < 2; ++j) r[k++] = v.hm[c][j];
    for (int c = 0; c < 2; ++c) for (int j = 0; j < 4; ++j) r[k++] = v.fm[c][j];
    r[k++] = v.in.a;
    for (int j = 0; j < 3; ++j) r[k++] = v.in.h[j];
    for (int a = 0; a < 3; ++a) { r[k++] = v.arr[a].x; r[k++] = v.arr[a].y; }
    r[k++] = v.ai; r[k++] = v.tail;
    lo[2 * i] = v.l; lo[2 * i + 1] = long(v.ul);
    if (i == 0) { sizes[0] = sizeof(S); sizes[1] = alignof(S); sizes[2] = sizeof(Inner); sizes[3] = alignof(Inner); }
}
""",
    """
kernel void abi_struct_write(const device float* f [[buffer(0)]], device S* out [[buffer(1)]],
                             uint i [[thread_position_in_grid]]) {
    const device float* x = f + 8 * i;
    device S& s = out[i];
    s.c3 = char3(x[0], x[1], x[2]);
    s.f3 = float3(x[0], x[1], x[2]);
    s.p3 = packed_float3(x[3], x[4], x[5]);
    s.h3.zyx = half3(x[0], x[1], x[2]);
    s.s2 = short2(x[6], x[7]);
    s.b = x[0] > 0;
    s.l = long(x[1]) * 1000000007L;
    s.ul = ulong(x[2] + 100.0f) << 40;
    s.m = float3x3(float3(x[0], x[1], x[2]), float3(x[3], x[4], x[5]), float3(x[6], x[7], x[0]));
    s.hm[1] = half2(x[3], x[4]);
    s.hm[0] = half2(x[5], x[6]);
    s.fm = float2x4(float4(x[0], x[1], x[2], x[3]), float4(x[4], x[5], x[6], x[7]));
    s.in.a = uchar(i);
    s.in.h = packed_half3(half(x[7]), half(x[6]), half(x[5]));
    for (int a = 0; a < 3; ++a) s.arr[a] = float2(x[a], x[a + 3]);
    s.ai = int(x[7]) - 7;
    s.tail = uchar(200 + i);
}
"""], preamble=STRUCT_PREAMBLE)


def _aligned_zeros(dtype, n, align=64):
    """n zeroed elements of `dtype` at an `align`-byte boundary (the struct needs 32)."""
    raw = np.zeros(np.dtype(dtype).itemsize * n + align, np.uint8)
    off = (-raw.ctypes.data) % align
    return raw[off:off + np.dtype(dtype).itemsize * n].view(dtype)


def test_struct_members_are_read_at_the_specification_offsets(device, rng):
    n = 7
    a = _aligned_zeros(STRUCT_DTYPE, n)
    a["c3"] = rng.integers(-128, 128, (n, 3))
    for name, shape in (("f3", 3), ("p3", 3), ("h3", 3), ("m", (3, 4)), ("hm", (2, 2)), ("fm", (2, 4)),
                        ("in_h", 3), ("arr", (3, 2))):
        a[name] = rng.standard_normal((n, *np.atleast_1d(shape))) * 100
    a["s2"] = rng.integers(-32768, 32768, (n, 2))
    a["b"] = rng.integers(0, 2, n)
    a["l"] = rng.integers(-2**63, 2**63 - 1, n, dtype=np.int64)
    a["ul"] = rng.integers(0, 2**63, n, dtype=np.int64).astype(np.uint64) * 2 + 1
    a["in_a"] = rng.integers(0, 256, n)
    a["ai"] = rng.integers(-2**31, 2**31, n)
    a["tail"] = rng.integers(0, 256, n)
    o = np.zeros(48 * n, np.float32)
    lo = np.zeros(2 * n, np.int64)
    sizes = np.zeros(4, np.uint32)
    KS_STRUCT.get(device, "abi_struct_read")(n, a, o, lo, sizes)
    assert_equal(sizes, np.array([256, 32, 8, 2], np.uint32))
    expected = np.concatenate([np.concatenate([
        r["c3"], r["f3"], r["p3"], r["h3"], r["s2"], [r["b"]], r["m"][:, :3].ravel(), r["hm"].ravel(),
        r["fm"].ravel(), [r["in_a"]], r["in_h"], r["arr"].ravel(), [r["ai"], r["tail"]]]).astype(np.float32)
        for r in a])
    assert expected.size == FLOAT_MEMBERS * n
    assert_equal(o.reshape(n, 48)[:, :FLOAT_MEMBERS], expected.reshape(n, FLOAT_MEMBERS))
    assert_equal(lo.reshape(n, 2), np.stack([a["l"], a["ul"].view(np.int64)], 1))


def test_struct_members_are_written_at_the_specification_offsets(device, rng):
    n = 5
    x = rng.integers(-60, 60, (n, 8)).astype(np.float32)
    out = _aligned_zeros(STRUCT_DTYPE, n)
    KS_STRUCT.get(device, "abi_struct_write")(n, x, out)
    for i, (r, v) in enumerate(zip(out, x)):
        assert_equal(r["c3"], v[:3].astype(np.int8))
        assert_equal(r["f3"], v[:3])
        assert_equal(r["p3"], v[3:6])
        assert_equal(r["h3"], v[2::-1].astype(np.float16))
        assert_equal(r["s2"], v[6:8].astype(np.int16))
        assert r["b"] == (v[0] > 0)
        assert r["l"] == int(v[1]) * 1000000007
        assert r["ul"] == int(v[2] + 100) << 40
        assert_equal(r["m"][:, :3], np.array([v[0:3], v[3:6], [v[6], v[7], v[0]]]))
        assert_equal(r["hm"], np.array([v[5:7], v[3:5]], np.float16))
        assert_equal(r["fm"], v.reshape(2, 4))
        assert r["in_a"] == i
        assert_equal(r["in_h"], v[7:4:-1].astype(np.float16))
        assert_equal(r["arr"], np.stack([v[0:3], v[3:6]], 1))
        assert r["ai"] == int(v[7]) - 7
        assert r["tail"] == 200 + i


# ---------------------------------------------------------------------------
# Host memory for element types aligned to 32 bytes
# ---------------------------------------------------------------------------

KS_WIDE = KernelSet([
    """
kernel void abi_long4(device long4* x [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    x[i] = x[i] * 3 + long4(1, 2, 3, 4);
}
""",
    """
kernel void abi_ulong3(const device ulong3* x [[buffer(0)]], device ulong* out [[buffer(1)]],
                       uint i [[thread_position_in_grid]]) {
    out[i] = x[i].x + x[i].y + x[i].z;
}
""",
    """
struct alignas(32) Cell { float v; int k; };
kernel void abi_cells(device Cell* c [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    c[i].v += float(c[i].k);
    c[i].k = -c[i].k;
}
"""])


def _at_16_past_32(dtype, count):
    """`count` elements of `dtype` 16 bytes past a 32-byte boundary, as NumPy gives half its arrays."""
    itemsize = np.dtype(dtype).itemsize
    raw = np.zeros(itemsize * count + 64, np.uint8)
    off = (-raw.ctypes.data) % 32 + 16
    view = raw[off:off + itemsize * count].view(dtype)
    assert view.ctypes.data % 32 == 16
    return view


def test_memory_16_bytes_off_a_32_byte_type_is_copied(device, rng):
    """DESIGN.md §2 ("copied in ... and copied back out") and docs/design.md's misaligned host
    memory: only memory misaligned to 16 bytes was copied; long4, ulong3 and alignas(32) elements
    at 16 past a 32-byte boundary were an ArgumentError."""
    start = rng.integers(-2**40, 2**40, 4 * 9)
    x = _at_16_past_32(np.int64, 4 * 9)
    x[:] = start
    KS_WIDE.get(device, "abi_long4")(9, x)
    assert_equal(x, start * 3 + np.tile([1, 2, 3, 4], 9))

    u = _at_16_past_32(np.uint64, 4 * 6)
    u[:] = rng.integers(0, 2**40, 4 * 6).astype(np.uint64)
    out = np.zeros(6, np.uint64)
    KS_WIDE.get(device, "abi_ulong3")(6, u, out)
    assert_equal(out, u.reshape(6, 4)[:, :3].sum(1))

    cell = np.dtype({"names": ["v", "k"], "formats": ["f4", "i4"], "offsets": [0, 4], "itemsize": 32})
    c = _at_16_past_32(cell, 5)
    c["v"] = np.arange(5, dtype=np.float32) / 4
    c["k"] = np.arange(5) * 10 - 20
    KS_WIDE.get(device, "abi_cells")(5, c)
    assert_equal(c["v"], np.arange(5, dtype=np.float32) / 4 + (np.arange(5) * 10 - 20))
    assert_equal(c["k"], -(np.arange(5) * 10 - 20))


# ---------------------------------------------------------------------------
# vec<T, N>: the template spelling of the vector types
# ---------------------------------------------------------------------------

KS_VEC = KernelSet([
    """
kernel void abi_vec_ptr(device const vec<float, 4>* a [[buffer(0)]], device metal::vec<uint, 2>* b [[buffer(1)]],
                        device float* out [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    out[i] = a[i].y + a[i].w + float(b[i].x);
    b[i] = b[i].yx;
}
""",
    """
kernel void abi_vec_ref(constant packed_vec<half, 2>& h [[buffer(0)]], constant vec<int, 3>& v [[buffer(1)]],
                        device float* out [[buffer(2)]]) {
    out[0] = h[0]; out[1] = h[1]; out[2] = v.x; out[3] = v.z;
}
""",
    """
template <typename T, int N>
kernel void abi_vec_scale(device const vec<T, N>* x [[buffer(0)]], device metal::vec<T, N>* y [[buffer(1)]],
                          constant T& s [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    y[i] = x[i] * s + vec<T, N>(T(i));
}
template [[host_name("abi_vec_scale_half4")]] kernel void abi_vec_scale<half, 4>(
    device const vec<half, 4>*, device metal::vec<half, 4>*, constant half&, uint);
template [[host_name("abi_vec_scale_uint2")]] kernel void abi_vec_scale<uint, 2>(
    device const vec<uint, 2>*, device metal::vec<uint, 2>*, constant uint&, uint);
""",
    """
namespace geo { typedef ushort2 pos_t; }
kernel void abi_vec_builtins(device uint* o [[buffer(0)]], vec<uint, 2> g [[thread_position_in_grid]],
                             metal::vec<uint, 2> n [[threads_per_grid]], geo::pos_t l [[thread_position_in_threadgroup]]) {
    o[2 * (g.y * n.x + g.x)] = g.x * 100 + g.y;
    o[2 * (g.y * n.x + g.x) + 1] = l.x * 100 + l.y;
}
"""])


def test_template_vector_parameters_check_their_element_type(device, rng):
    a = rng.standard_normal((6, 4)).astype(np.float32)
    b = rng.integers(0, 1000, (6, 2)).astype(np.uint32)
    b0 = b.copy()
    out = np.zeros(6, np.float32)
    kernel = KS_VEC.get(device, "abi_vec_ptr")
    kernel(6, a, b, out)
    assert_equal(out, a[:, 1] + a[:, 3] + b0[:, 0].astype(np.float32))
    assert_equal(b, b0[:, ::-1])
    # another element type is refused, as for `device const float4*`: no silent reinterpretation
    with pytest.raises(mc.ArgumentError, match="float"):
        kernel(6, a.astype(np.float64), b, out)
    with pytest.raises(mc.ArgumentError, match="float"):
        kernel(6, a.view(np.int32), b, out)
    with pytest.raises(mc.ArgumentError, match="uint"):
        kernel(6, a, b.astype(np.int32), out)

    ref = KS_VEC.get(device, "abi_vec_ref")
    out = np.zeros(4, np.float32)
    ref(1, np.array([1.5, -2.25], np.float16), np.array([7, 8, -9, 0], np.int32), out)
    assert_equal(out, np.array([1.5, -2.25, 7, -9], np.float32))
    with pytest.raises(mc.ArgumentError, match="half"):
        ref(1, np.array([1, 2], np.int16), np.array([7, 8, -9, 0], np.int32), out)
    with pytest.raises(mc.ArgumentError, match="int"):
        ref(1, np.array([1.5, -2.25], np.float16), np.array([7, 8, -9, 0], np.float32), out)


def test_template_kernels_check_vec_of_their_parameters(device, rng):
    """`device const vec<T, N>*` in a template kernel: the element type of each instantiation
    (a float32 array was reinterpreted as half4s, an int32 one as uint2s... silently)."""
    x = (rng.standard_normal((5, 4)) * 8).astype(np.float16)
    y = np.zeros((5, 4), np.float16)
    half4 = KS_VEC.get(device, "abi_vec_scale_half4")
    half4(5, x, y, 0.5)
    assert_equal(y, (x * np.float16(0.5) + np.arange(5, dtype=np.float16)[:, None]).astype(np.float16))
    with pytest.raises(mc.ArgumentError, match="half"):
        half4(5, x.astype(np.float32), y, 0.5)
    with pytest.raises(mc.ArgumentError, match="half"):
        half4(5, x, y.astype(np.float32), 0.5)
    u = rng.integers(0, 1000, (5, 2)).astype(np.uint32)
    v = np.zeros((5, 2), np.uint32)
    uint2 = KS_VEC.get(device, "abi_vec_scale_uint2")
    uint2(5, u, v, 3)
    assert_equal(v, u * 3 + np.arange(5, dtype=np.uint32)[:, None])
    with pytest.raises(mc.ArgumentError, match="uint"):
        uint2(5, u.astype(np.int32), v, 3)


def test_builtins_spelled_as_template_vectors_or_qualified_aliases(device):
    """`vec<uint, 2> g [[thread_position_in_grid]]` and a namespace's alias of ushort2 were
    refused ("must be declared uint, ushort or a vector of them")."""
    o = np.zeros((4, 6, 2), np.uint32)
    KS_VEC.get(device, "abi_vec_builtins")((6, 4), o, threadgroup=(3, 2))
    y, x = np.mgrid[0:4, 0:6]
    assert_equal(o[..., 0], (x * 100 + y).astype(np.uint32))
    assert_equal(o[..., 1], ((x % 3) * 100 + y % 2).astype(np.uint32))


# ---------------------------------------------------------------------------
# Python floats to half and bfloat parameters: one rounding, bfloat's range
# ---------------------------------------------------------------------------

KS_ROUND = KernelSet([
    "kernel void abi_half_ref(constant half& x [[buffer(0)]], device float* o [[buffer(1)]]) { o[0] = x; }",
    "kernel void abi_half_value(half x [[buffer(0)]], device float* o [[buffer(1)]]) { o[0] = x; }",
    "kernel void abi_bfloat_ref(constant bfloat& x [[buffer(0)]], device float* o [[buffer(1)]]) { o[0] = x; }",
    """
constant half abi_hc [[function_constant(0)]];
kernel void abi_half_constant(device float* o [[buffer(0)]]) { o[0] = abi_hc; }
""",
    "kernel void abi_float_ref(constant float& x [[buffer(0)]], device float* o [[buffer(1)]]) { o[0] = x; }",
    """
constant float abi_fc [[function_constant(1)]];
kernel void abi_float_constant(device float* o [[buffer(0)]]) { o[0] = abi_fc; }
"""])

# Doubles just past a tie of half (1 + 2^-11 lies halfway between 1 and 1 + 2^-10; a subnormal
# tie at 1.5 * 2^-24) or just short of one: rounding to float first makes them the tie itself,
# which then rounds to even. Their half is worked out by hand.
HALF_CASES = [(1 + 2**-11 + 2**-40, 1 + 2**-10), (1 + 2**-11 - 2**-40, 1.0), (-(1 + 2**-11 + 2**-40), -(1 + 2**-10)),
              (1.5 * 2**-24 + 2**-60, 2 * 2**-24), (2049 + 2**-30, 2050.0),
              (0.1, 0.0999755859375), (65504.0, 65504.0)]
# bfloat keeps 8 bits: 1 + 2^-8 is the tie between 1 and 1 + 2^-7.
BFLOAT_CASES = [(1 + 2**-8 + 2**-40, 1 + 2**-7), (1 + 2**-8 - 2**-40, 1.0), (-(3 + 2**-7 + 2**-33), -(3 + 2**-6)),
                ((2 - 2**-7) * 2**127, (2 - 2**-7) * 2**127)]


def test_python_floats_round_once_to_half(device):
    for name in ("abi_half_ref", "abi_half_value"):
        kernel = KS_ROUND.get(device, name)
        for v, want in HALF_CASES:
            assert float(np.float16(v)) == want  # the model: NumPy rounds the double directly
            o = np.zeros(1, np.float32)
            kernel(1, v, o)
            assert o[0] == want, f"{name}({v!r}) gave {o[0]!r}, not {want!r}"
    for v, want in HALF_CASES:
        o = np.zeros(1, np.float32)
        KS_ROUND.get(device, "abi_half_constant", constants={"abi_hc": v})(1, o)
        assert o[0] == want, f"function constant {v!r} gave {o[0]!r}, not {want!r}"


def test_python_floats_round_once_to_bfloat_and_stay_in_range(device):
    kernel = KS_ROUND.get(device, "abi_bfloat_ref")
    for v, want in BFLOAT_CASES:
        o = np.zeros(1, np.float32)
        kernel(1, v, o)
        assert o[0] == want, f"bfloat({v!r}) gave {o[0]!r}, not {want!r}"
    # Past bfloat's largest value by more than half its last step, as 70000 is past half's:
    # an error, not infinity (3.4e38 is still a float).
    for v in (3.4e38, -3.397e38, float(np.float32(3.4028235e38))):
        with pytest.raises(mc.ArgumentError, match="range of bfloat"):
            kernel(1, v, np.zeros(1, np.float32))
    with pytest.raises(mc.ArgumentError, match="range of half"):
        KS_ROUND.get(device, "abi_half_ref")(1, 65520.0, np.zeros(1, np.float32))


# Integers past 2^53 to float: a double keeps 53 bits, so going through one rounded twice. Float
# keeps 24: 2^60 + 2^36 lies halfway between 2^60 and 2^60 + 2^37, and 2^53 + 2^29 between 2^53
# and 2^53 + 2^30; one past the tie rounds up.
INT_TO_FLOAT_CASES = [(2**60 + 2**36 + 1, 2.0**60 + 2**37), (-(2**60 + 2**36 + 1), -(2.0**60 + 2**37)),
                      (2**53 + 2**29 + 1, 2.0**53 + 2**30), (2**60 + 2**36, 2.0**60), (2**64 - 1, 2.0**64),
                      (2**63 + 2**39 + 2**11, 2.0**63 + 2**40), (16777217, 16777216.0)]


def test_python_integers_round_once_to_float(device):
    for v, want in INT_TO_FLOAT_CASES:
        o = np.zeros(1, np.float32)
        KS_ROUND.get(device, "abi_float_ref")(1, v, o)
        assert o[0] == want, f"float({v}) gave {float(o[0])!r}, not {want!r}"
        o[:] = 0
        KS_ROUND.get(device, "abi_float_constant", constants={"abi_fc": v})(1, o)
        assert o[0] == want, f"function constant {v} gave {float(o[0])!r}, not {want!r}"


# ---------------------------------------------------------------------------
# Type aliases: declared twice, or named with their namespace
# ---------------------------------------------------------------------------

KS_ALIAS = KernelSet([
    """
kernel void abi_alias_twice(constant real& x [[buffer(0)]], device const real* a [[buffer(1)]],
                            device float* o [[buffer(2)]]) {
    o[0] = x; o[1] = a[0]; o[2] = sizeof(real);
}
""",
    """
kernel void abi_alias_qualified(constant lo::real& x [[buffer(0)]], constant wide::index_t& k [[buffer(1)]],
                                constant Accumulator::real& f [[buffer(2)]], device const ::lo::real* a [[buffer(3)]],
                                device float* o [[buffer(4)]]) {
    o[0] = x; o[1] = float(k); o[2] = f; o[3] = a[1];
}
""",
    """
typedef float2 pair_t;
constant lo::real abi_fc_half [[function_constant(10)]];
constant pair_t abi_fc_pair [[function_constant(11)]];
constant vec<ushort, 3> abi_fc_vec [[function_constant(12)]];
kernel void abi_alias_constants(device float* o [[buffer(0)]]) {
    o[0] = abi_fc_half; o[1] = abi_fc_pair.y; o[2] = abi_fc_vec.z;
}
"""], preamble="""
namespace lo { typedef half real; }
namespace wide { using index_t = ulong; }
struct Accumulator { typedef float real; real sum; };   // another `real`, in a struct's scope
using namespace lo;
""")


def test_an_alias_declared_twice_is_never_packed_as_the_other_type(device):
    """`real` is half here (lo's); the struct's member typedef made the front end read it as
    float: 1.5 went in as a float's 4 bytes, of which the half read 0, and half arrays were
    refused while float arrays were taken. A value may be refused (the type is not known without
    C++'s scopes) but never packed at another size."""
    kernel = KS_ALIAS.get(device, "abi_alias_twice")
    o = np.zeros(3, np.float32)
    kernel(1, np.array([1.5], np.float16), np.array([-2.5], np.float16), o)
    assert_equal(o, np.array([1.5, -2.5, 2], np.float32))
    o[:] = 0
    try:
        kernel(1, 1.5, np.array([-2.5], np.float16), o)
    except mc.ArgumentError:
        pass
    else:
        assert_equal(o, np.array([1.5, -2.5, 2], np.float32))


def test_aliases_named_with_their_scope_take_python_numbers(device):
    """`lo::real` (half), `wide::index_t` (ulong) and `Accumulator::real` (float) were types the
    front end did not know: Python numbers were refused for them."""
    kernel = KS_ALIAS.get(device, "abi_alias_qualified")
    o = np.zeros(4, np.float32)
    kernel(1, 1 + 2**-11 + 2**-40, 2**40, 0.1, np.array([1, 3.25], np.float16), o)
    assert_equal(o, np.array([1 + 2**-10, 2.0**40, np.float32(0.1), 3.25], np.float32))
    with pytest.raises(mc.ArgumentError, match="half"):
        kernel(1, 0.75, 2**40, 0.1, np.array([1, 3.25], np.float32), o)
    with pytest.raises(mc.ArgumentError, match="ulong"):
        kernel(1, 0.75, -1, 0.1, np.array([1, 3.25], np.float16), o)


def test_function_constants_typed_through_aliases_and_vec(device):
    """`constant lo::real c [[function_constant(10)]]`, a typedef'd float2 and vec<ushort, 3> were
    refused ("must have a scalar or vector type"); the half one is rounded once too."""
    o = np.zeros(3, np.float32)
    KS_ALIAS.get(device, "abi_alias_constants", constants={
        "abi_fc_half": 1 + 2**-11 + 2**-40, "abi_fc_pair": (0.5, -7.25), "abi_fc_vec": (1, 2, 65535)})(1, o)
    assert_equal(o, np.array([1 + 2**-10, -7.25, 65535], np.float32))
