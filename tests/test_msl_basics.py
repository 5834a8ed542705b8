"""The P0.1 MSL subset, run and checked against NumPy on every backend.

Scalar types, device/constant pointers, constant T& scalars and structs, vectors
float2/3/4 and int/uint vectors with arithmetic and .x/.y/.z/.w, common math
functions, helper functions and structs, `#include <metal_stdlib>;`, comments,
namespaces. (Thread-position builtins on 1-3D grids with partial threadgroups
are in test_grid.py.)

Kernels are grouped into a few sources by area so that each compiles once.
"""

from __future__ import annotations

import numpy as np
import pytest

import metalcall as mc
from mctest import with_sandbox_device

device = with_sandbox_device()  # these tests run on Device("cpu", sandbox=True) too

# ---- scalar types -----------------------------------------------------------------------

INT_TYPES = {
    "char": np.int8,
    "uchar": np.uint8,
    "short": np.int16,
    "ushort": np.uint16,
    "int": np.int32,
    "uint": np.uint32,
    "long": np.int64,
    "ulong": np.uint64,
}


def _int_kernel(t):
    return f"""
kernel void arith_{t}(const device {t}* a [[buffer(0)]], const device {t}* b [[buffer(1)]],
                      device {t}* out [[buffer(2)]], uint i [[thread_position_in_grid]]) {{
    {t} x = a[i];
    {t} y = b[i];
    device {t}* o = out + 8 * i;
    o[0] = x + y;
    o[1] = x - y;
    o[2] = x * y;
    o[3] = x / y;
    o[4] = x % y;
    o[5] = (x & y) | ({t})(x ^ y);
    o[6] = x >> 1;
    o[7] = max(x, y) - min(x, y);
}}
"""


SCALARS_SRC = (
    "#include <metal_stdlib>\nusing namespace metal;\n"
    + "".join(_int_kernel(t) for t in INT_TYPES)
    + """
kernel void arith_float(const device float* a [[buffer(0)]], const device float* b [[buffer(1)]],
                        device float* out [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    float x = a[i];
    float y = b[i];
    device float* o = out + 6 * i;
    o[0] = x + y;
    o[1] = x - y;
    o[2] = x * y;
    o[3] = x / y;
    o[4] = -x;
    o[5] = x > y ? x : y;
}
kernel void arith_half(const device half* a [[buffer(0)]], const device half* b [[buffer(1)]],
                       device half* out [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    half x = a[i];
    half y = b[i];
    device half* o = out + 5 * i;
    o[0] = x + y;
    o[1] = x - y;
    o[2] = x * y;
    o[3] = x / y;
    o[4] = x * 2.0h + 0.5h;
}
kernel void half_float(const device half* a [[buffer(0)]], device float* f [[buffer(1)]],
                       device half* h [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    f[i] = float(a[i]) * 3.0f;      // half -> float
    h[i] = half(f[i] + 0.25f);      // float -> half, rounded to nearest
}
kernel void logic(const device int* a [[buffer(0)]], device bool* out [[buffer(1)]],
                  uint i [[thread_position_in_grid]]) {
    bool even = (a[i] % 2) == 0;
    bool big = a[i] > 10;
    out[3 * i + 0] = even && big;
    out[3 * i + 1] = even || big;
    out[3 * i + 2] = !even;
}
kernel void conversions(const device float* a [[buffer(0)]], device int* as_int [[buffer(1)]],
                        device uint* as_uint [[buffer(2)]], device uchar* as_uchar [[buffer(3)]],
                        device float* back [[buffer(4)]], uint i [[thread_position_in_grid]]) {
    as_int[i] = int(a[i]);                 // truncation toward zero
    as_uint[i] = uint(fabs(a[i]));
    as_uchar[i] = uchar(uint(fabs(a[i])) & 0xFFu);
    back[i] = float(as_int[i]) + 0.5f;
}
kernel void literals(device uint* u [[buffer(0)]], device float* f [[buffer(1)]], uint i [[thread_position_in_grid]]) {
    u[0] = 0xFFu;
    u[1] = 1u << 31;
    u[2] = 07;          // octal
    u[3] = 10 / 4;      // integer division
    f[0] = 1.5e2f;
    f[1] = .25f;
    f[2] = float(3) / 2.0f;
    f[3] = 2.0h;        // half literal
}
"""
)


@pytest.mark.parametrize("t", list(INT_TYPES))
def test_integer_arithmetic(device, t, rng):
    dtype = INT_TYPES[t]
    info = np.iinfo(dtype)
    n = 300
    if info.min < 0:
        # Signed overflow is undefined in MSL and C++: keep results in range.
        lim = int(np.sqrt(info.max)) - 1
        a = rng.integers(-lim, lim, n).astype(dtype)
        b = rng.integers(1, lim, n).astype(dtype) * rng.choice([-1, 1], n).astype(dtype)
    else:
        a = rng.integers(0, info.max, n, dtype=dtype, endpoint=True)
        b = rng.integers(1, info.max, n, dtype=dtype, endpoint=True)
    out = np.zeros(8 * n, dtype)
    device.compile(SCALARS_SRC).function(f"arith_{t}")(n, a, b, out)
    o = out.reshape(n, 8)
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(o[:, 0], (a + b).astype(dtype), err_msg="+")  # unsigned wraps
        np.testing.assert_array_equal(o[:, 1], (a - b).astype(dtype), err_msg="-")
        np.testing.assert_array_equal(o[:, 2], (a * b).astype(dtype), err_msg="*")
    # C semantics: division truncates toward zero, % has the sign of the dividend.
    q = (np.abs(a.astype(np.int64 if info.min < 0 else np.uint64)) // np.abs(b.astype(np.int64 if info.min < 0 else np.uint64)))
    if info.min < 0:
        q = q * np.sign(a.astype(np.int64)) * np.sign(b.astype(np.int64))
        r = a.astype(np.int64) - q * b.astype(np.int64)
    else:
        r = a % b
    np.testing.assert_array_equal(o[:, 3], q.astype(dtype), err_msg="/")
    np.testing.assert_array_equal(o[:, 4], r.astype(dtype), err_msg="%")
    np.testing.assert_array_equal(o[:, 5], (a & b) | (a ^ b), err_msg="& | ^")
    np.testing.assert_array_equal(o[:, 6], a >> 1, err_msg=">>")
    np.testing.assert_array_equal(o[:, 7], (np.maximum(a, b) - np.minimum(a, b)).astype(dtype), err_msg="max-min")


def test_float_arithmetic_exact(device, rng):
    n = 2000
    a = rng.standard_normal(n).astype(np.float32) * 100
    b = rng.standard_normal(n).astype(np.float32) + 5
    out = np.zeros(6 * n, np.float32)
    device.compile(SCALARS_SRC, fast_math=False).arith_float(n, a, b, out)
    o = out.reshape(n, 6)
    np.testing.assert_array_equal(o[:, 0], a + b)
    np.testing.assert_array_equal(o[:, 1], a - b)
    np.testing.assert_array_equal(o[:, 2], a * b)
    if device.backend == "cpu":
        np.testing.assert_array_equal(o[:, 3], a / b)
    else:  # GPUs may round division to within 2.5 ulp even without fast math
        np.testing.assert_allclose(o[:, 3], a / b, rtol=3e-7)
    np.testing.assert_array_equal(o[:, 4], -a)
    np.testing.assert_array_equal(o[:, 5], np.maximum(a, b))


def test_half_arithmetic(device, rng):
    n = 1000
    a = (rng.standard_normal(n) * 10).astype(np.float16)
    b = (rng.standard_normal(n) + 4).astype(np.float16)
    out = np.zeros(5 * n, np.float16)
    device.compile(SCALARS_SRC, fast_math=False).arith_half(n, a, b, out)
    o = out.reshape(n, 5)
    # Each operation rounds to half, as NumPy's float16 does.
    np.testing.assert_array_equal(o[:, 0], a + b)
    np.testing.assert_array_equal(o[:, 1], a - b)
    np.testing.assert_array_equal(o[:, 2], a * b)
    np.testing.assert_array_equal(o[:, 3], a / b)
    np.testing.assert_allclose(o[:, 4].astype(np.float32), (a * np.float16(2) + np.float16(0.5)).astype(np.float32), rtol=1e-3)


def test_half_float_conversion(device):
    a = np.array([0.0, 1.0, -2.5, 1000.5, 1e-4, 0.1, 6e-8], np.float16)
    f = np.zeros(len(a), np.float32)
    h = np.zeros(len(a), np.float16)
    device.compile(SCALARS_SRC, fast_math=False).half_float(len(a), a, f, h)
    np.testing.assert_array_equal(f, a.astype(np.float32) * np.float32(3))
    np.testing.assert_array_equal(h, (f + np.float32(0.25)).astype(np.float16))


def test_bool_logic(device):
    a = np.arange(-5, 20, dtype=np.int32)
    out = np.zeros(3 * len(a), np.bool_)
    device.compile(SCALARS_SRC).logic(len(a), a, out)
    o = out.reshape(-1, 3)
    even, big = a % 2 == 0, a > 10
    np.testing.assert_array_equal(o[:, 0], even & big)
    np.testing.assert_array_equal(o[:, 1], even | big)
    np.testing.assert_array_equal(o[:, 2], ~even)


def test_conversions(device):
    a = np.array([0.0, 1.9, -1.9, 255.5, 256.0, 1000.25, -3.0], np.float32)
    n = len(a)
    as_int, as_uint = np.zeros(n, np.int32), np.zeros(n, np.uint32)
    as_uchar, back = np.zeros(n, np.uint8), np.zeros(n, np.float32)
    device.compile(SCALARS_SRC).conversions(n, a, as_int, as_uint, as_uchar, back)
    np.testing.assert_array_equal(as_int, np.trunc(a).astype(np.int32))
    np.testing.assert_array_equal(as_uint, np.abs(a).astype(np.uint32))
    np.testing.assert_array_equal(as_uchar, (np.abs(a).astype(np.uint32) & 0xFF).astype(np.uint8))
    np.testing.assert_array_equal(back, np.trunc(a) + 0.5)


def test_literals(device):
    u = np.zeros(4, np.uint32)
    f = np.zeros(4, np.float32)
    device.compile(SCALARS_SRC).literals(1, u, f)
    assert u.tolist() == [255, 2**31, 7, 2]
    assert f.tolist() == [150.0, 0.25, 1.5, 2.0]


# ---- vectors --------------------------------------------------------------------------

VECTORS_SRC = """
#include <metal_stdlib>
using namespace metal;

kernel void vec4_ops(const device float4* a [[buffer(0)]], const device float4* b [[buffer(1)]],
                     device float4* out [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    float4 x = a[i];
    float4 y = b[i];
    out[5 * i + 0] = x + y;
    out[5 * i + 1] = x * y - 2.0f;          // vector-scalar
    out[5 * i + 2] = 0.5f * x / y;
    out[5 * i + 3] = float4(x.w, x.z, x.y, x.x);
    float4 z = x;
    z.x += 1.0f;
    z.y = y.w;
    z.w *= -1.0f;
    out[5 * i + 4] = z;
}

kernel void vec2_ops(const device float2* a [[buffer(0)]], device float2* out [[buffer(1)]],
                     device float* d [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    float2 v = a[i];
    out[2 * i + 0] = v * v + float2(1.0f, -1.0f);
    out[2 * i + 1] = float2(v.y, v.x) - v;
    d[i] = dot(v, v);
}

// float3 is 16 bytes in device memory (MSL layout); packed_float3 is 12.
kernel void vec3_ops(const device float3* a [[buffer(0)]], const device packed_float3* p [[buffer(1)]],
                     device float3* out [[buffer(2)]], device float* d [[buffer(3)]],
                     uint i [[thread_position_in_grid]]) {
    float3 x = a[i];
    float3 y = float3(p[i]);
    out[2 * i + 0] = x * 2.0f + y;
    out[2 * i + 1] = cross(x, y);
    d[2 * i + 0] = dot(x, y);
    d[2 * i + 1] = length(x);
}

kernel void swizzles(const device float4* a [[buffer(0)]], device float4* out [[buffer(1)]],
                     uint i [[thread_position_in_grid]]) {
    float4 v = a[i];
    out[4 * i + 0] = v.wzyx;
    out[4 * i + 1] = float4(v.xy, v.zw * 2.0f);
    out[4 * i + 2] = float4(v.xxx, 7.0f);
    float4 w = float4(0.0f);
    w.xy = v.zw;
    w.zw = float2(v.x + v.y, 3.0f);
    out[4 * i + 3] = w;
}

kernel void int_vectors(const device int4* a [[buffer(0)]], const device uint2* b [[buffer(1)]],
                        device int4* out [[buffer(2)]], device uint2* uout [[buffer(3)]],
                        device int3* i3 [[buffer(4)]], uint i [[thread_position_in_grid]]) {
    int4 x = a[i];
    out[3 * i + 0] = x * 3 + int4(1, 2, 3, 4);
    out[3 * i + 1] = x / 2 - x % 3;
    out[3 * i + 2] = int4(x.w, x.z, x.y, x.x) & 0xF;
    uint2 u = b[i];
    uout[2 * i + 0] = u << 2u;
    uout[2 * i + 1] = u + uint2(u.y, u.x);
    int3 t = int3(x.x, x.y, x.z) - 1;
    t.z = x.w;
    i3[i] = t;
}
"""


def test_float4_arithmetic_and_members(device, rng):
    n = 257
    a = rng.standard_normal((n, 4)).astype(np.float32)
    b = (rng.standard_normal((n, 4)) + 3).astype(np.float32)
    out = np.zeros((n, 5, 4), np.float32)
    device.compile(VECTORS_SRC, fast_math=False).vec4_ops(n, a, b, out)
    np.testing.assert_array_equal(out[:, 0], a + b)
    np.testing.assert_array_equal(out[:, 1], a * b - 2)
    np.testing.assert_allclose(out[:, 2], 0.5 * a / b, rtol=1e-6)
    np.testing.assert_array_equal(out[:, 3], a[:, ::-1])
    z = a.copy()
    z[:, 0] += 1
    z[:, 1] = b[:, 3]
    z[:, 3] *= -1
    np.testing.assert_array_equal(out[:, 4], z)


def test_float2(device, rng):
    n = 100
    a = rng.standard_normal((n, 2)).astype(np.float32)
    out = np.zeros((n, 2, 2), np.float32)
    d = np.zeros(n, np.float32)
    device.compile(VECTORS_SRC, fast_math=False).vec2_ops(n, a, out, d)
    np.testing.assert_array_equal(out[:, 0], a * a + np.array([1, -1], np.float32))
    np.testing.assert_array_equal(out[:, 1], a[:, ::-1] - a)
    np.testing.assert_allclose(d, (a.astype(np.float64) ** 2).sum(axis=1), rtol=1e-6)


def test_float3_layout_and_geometry(device, rng):
    n = 64
    x = rng.standard_normal((n, 3)).astype(np.float32)
    y = rng.standard_normal((n, 3)).astype(np.float32)
    a = np.zeros((n, 4), np.float32)  # float3: 16 bytes, the 4th float is padding
    a[:, :3] = x
    a[:, 3] = np.nan  # padding must be ignored
    p = np.ascontiguousarray(y)  # packed_float3: 12 bytes
    out = np.zeros((n, 2, 4), np.float32)
    d = np.zeros((n, 2), np.float32)
    device.compile(VECTORS_SRC, fast_math=False).vec3_ops(n, a, p, out, d)
    np.testing.assert_allclose(out[:, 0, :3], x * 2 + y, rtol=1e-6)
    np.testing.assert_allclose(out[:, 1, :3], np.cross(x, y), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(d[:, 0], (x.astype(np.float64) * y).sum(axis=1), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(d[:, 1], np.linalg.norm(x.astype(np.float64), axis=1), rtol=1e-6)


def test_vector_element_sizes_in_reflection(device):
    lib = device.compile(VECTORS_SRC)
    sizes = {p["name"]: (p["element_size"], p["element_align"]) for p in lib.vec3_ops.params if p["kind"] == "buffer"}
    assert sizes["a"] == (16, 16), "float3 is 16 bytes, 16-aligned"
    assert sizes["p"][0] == 12, "packed_float3 is 12 bytes"
    assert sizes["out"] == (16, 16)
    v4 = {p["name"]: p for p in lib.vec4_ops.params}
    assert v4["a"]["vector_width"] == 4 and v4["a"]["scalar"] == "float" and v4["a"]["element_size"] == 16


def test_swizzles(device, rng):
    n = 50
    a = rng.standard_normal((n, 4)).astype(np.float32)
    out = np.zeros((n, 4, 4), np.float32)
    device.compile(VECTORS_SRC, fast_math=False).swizzles(n, a, out)
    np.testing.assert_array_equal(out[:, 0], a[:, ::-1])
    np.testing.assert_array_equal(out[:, 1], np.concatenate([a[:, :2], a[:, 2:] * 2], axis=1))
    np.testing.assert_array_equal(out[:, 2], np.stack([a[:, 0], a[:, 0], a[:, 0], np.full(n, 7, np.float32)], axis=1))
    w = np.stack([a[:, 2], a[:, 3], a[:, 0] + a[:, 1], np.full(n, 3, np.float32)], axis=1)
    np.testing.assert_array_equal(out[:, 3], w)


def test_int_and_uint_vectors(device, rng):
    n = 80
    a = rng.integers(-1000, 1000, (n, 4)).astype(np.int32)
    b = rng.integers(0, 2**20, (n, 2)).astype(np.uint32)
    out = np.zeros((n, 3, 4), np.int32)
    uout = np.zeros((n, 2, 2), np.uint32)
    i3 = np.zeros((n, 4), np.int32)  # int3: 16 bytes
    device.compile(VECTORS_SRC).int_vectors(n, a, b, out, uout, i3)
    np.testing.assert_array_equal(out[:, 0], a * 3 + np.array([1, 2, 3, 4]))
    q = np.trunc(a / 2).astype(np.int32)
    r = a - np.trunc(a / 3).astype(np.int32) * 3
    np.testing.assert_array_equal(out[:, 1], q - r)
    np.testing.assert_array_equal(out[:, 2], a[:, ::-1] & 0xF)
    np.testing.assert_array_equal(uout[:, 0], b << 2)
    np.testing.assert_array_equal(uout[:, 1], b + b[:, ::-1])
    t = a[:, :3] - 1
    t[:, 2] = a[:, 3]
    np.testing.assert_array_equal(i3[:, :3], t)


VECTORS_MORE_SRC = """
#include <metal_stdlib>
using namespace metal;
kernel void vec_more(const device float4* a [[buffer(0)]], device float4* out [[buffer(1)]],
                     uint i [[thread_position_in_grid]]) {
    float4 v = a[i];
    out[6 * i + 0] = float4((v * 2.0f).yx, v.zw);          // swizzle of an rvalue
    float4 w = v;
    w.xy += 1.0f;                                           // compound assignment to a swizzle
    w.zw *= 2.0f;
    out[6 * i + 1] = w;
    bool4 m = v > 2.0f;
    out[6 * i + 2] = select(float4(0.0f), v, m) + float4(all(m) ? 1.0f : 0.0f, any(m) ? 1.0f : 0.0f, 0.0f, 0.0f);
    float4 u = v;
    u[2] = 9.0f;                                            // indexing
    out[6 * i + 3] = float4(u[0], u[1], u[2], u[3]);
    out[6 * i + 4] = v.abgr + float4(1);                    // rgba names, broadcast constructor
    uchar4 c = uchar4(1, 2, 3, 250);
    c += uchar4(10);                                        // wraps in uchar
    out[6 * i + 5] = float4(c);
}
"""


def test_more_vector_operations(device):
    a = np.array([[0, 1, 2, 3], [4, 5, 6, 7], [3, -1, 5, 2.5]], np.float32)
    n = len(a)
    out = np.zeros((n, 6, 4), np.float32)
    device.compile(VECTORS_MORE_SRC, fast_math=False).vec_more(n, a, out)
    np.testing.assert_array_equal(out[:, 0], np.concatenate([(a * 2)[:, 1::-1], a[:, 2:]], axis=1))
    w = a.copy()
    w[:, :2] += 1
    w[:, 2:] *= 2
    np.testing.assert_array_equal(out[:, 1], w)
    m = a > 2
    sel = np.where(m, a, 0) + np.stack([m.all(1), m.any(1), np.zeros(n, bool), np.zeros(n, bool)], axis=1)
    np.testing.assert_array_equal(out[:, 2], sel)
    u = a.copy()
    u[:, 2] = 9
    np.testing.assert_array_equal(out[:, 3], u)
    np.testing.assert_array_equal(out[:, 4], a[:, ::-1] + 1)
    np.testing.assert_array_equal(out[:, 5], np.tile([11, 12, 13, 4], (n, 1)))


SWIZZLE_NAMED_VARIABLE_SRC = """
#include <metal_stdlib>
using namespace metal;
kernel void named_like_swizzles(const device float4* a [[buffer(0)]], device float4* out [[buffer(1)]],
                                uint i [[thread_position_in_grid]]) {
    float4 v = a[i];
    float2 xy = v.xy;
    float3 rgb = v.rgb;
    out[i] = float4(xy.y, rgb.z, xy.x, rgb.x);
}
"""


def test_swizzle_with_a_variable_of_the_same_name(device):
    a = np.arange(8, dtype=np.float32).reshape(2, 4)
    out = np.zeros_like(a)
    device.compile(SWIZZLE_NAMED_VARIABLE_SRC).named_like_swizzles(2, a, out)
    np.testing.assert_array_equal(out, np.stack([a[:, 1], a[:, 2], a[:, 0], a[:, 0]], axis=1))


STRUCT_MEMBER_NAMED_LIKE_SWIZZLE_SRC = """
#include <metal_stdlib>
using namespace metal;
struct Pt {
    float2 xy;
    float w;
};
kernel void member_named_xy(const device float4* a [[buffer(0)]], device float4* out [[buffer(1)]],
                            uint i [[thread_position_in_grid]]) {
    float4 v = a[i];
    Pt p;
    p.xy = v.zw;
    p.w = v.x;
    out[i] = float4(p.xy, v.xy);
}
"""


def test_struct_member_named_like_a_swizzle(device):
    a = np.arange(8, dtype=np.float32).reshape(2, 4)
    out = np.zeros_like(a)
    device.compile(STRUCT_MEMBER_NAMED_LIKE_SWIZZLE_SRC).member_named_xy(2, a, out)
    np.testing.assert_array_equal(out, np.concatenate([a[:, 2:], a[:, :2]], axis=1))


# ---- math --------------------------------------------------------------------------------

UNARY = {
    "sin": np.sin,
    "cos": np.cos,
    "tan": np.tan,
    "asin": np.arcsin,
    "acos": np.arccos,
    "atan": np.arctan,
    "sinh": np.sinh,
    "cosh": np.cosh,
    "tanh": np.tanh,
    "exp": np.exp,
    "exp2": np.exp2,
    "log": np.log,
    "log2": np.log2,
    "log10": np.log10,
    "sqrt": np.sqrt,
    "rsqrt": lambda x: 1 / np.sqrt(x),
    "fabs": np.abs,
    "abs": np.abs,
    "floor": np.floor,
    "ceil": np.ceil,
    "trunc": np.trunc,
    "round": lambda x: np.where(x >= 0, np.floor(x + 0.5), np.ceil(x - 0.5)),  # half away from zero
    "rint": np.rint,
    "fract": lambda x: x - np.floor(x),
    "sign": np.sign,
    "saturate": lambda x: np.clip(x, 0, 1),
}
BINARY = {
    "pow": np.power,
    "atan2": np.arctan2,
    "fmin": np.fmin,
    "fmax": np.fmax,
    "min": np.minimum,
    "max": np.maximum,
    "fmod": np.fmod,
    "step": lambda e, x: np.where(x < e, 0.0, 1.0),
}
TERNARY = {
    "clamp": lambda x, lo, hi: np.minimum(np.maximum(x, lo), hi),
    "mix": lambda a, b, t: a + (b - a) * t,
    "fma": lambda a, b, c: a * b + c,
    "smoothstep": lambda e0, e1, x: (lambda t: t * t * (3 - 2 * t))(np.clip((x - e0) / (e1 - e0), 0, 1)),
}
# Domains where each function is well conditioned.
DOMAIN = {
    "asin": (-0.99, 0.99),
    "acos": (-0.99, 0.99),
    "log": (0.01, 100),
    "log2": (0.01, 100),
    "log10": (0.01, 100),
    "sqrt": (0.0, 100),
    "rsqrt": (0.01, 100),
    "sinh": (-5, 5),
    "cosh": (-5, 5),
    "exp": (-10, 10),
    "exp2": (-10, 10),
    "tan": (-1.4, 1.4),
    "pow": ((0.1, 10), (-3, 3)),
    "fmod": ((-50, 50), (0.5, 7)),
}
MATH_SRC = "#include <metal_stdlib>\nusing namespace metal;\n" + "".join(
    [
        f"kernel void m_{f}(const device float* x [[buffer(0)]], device float* out [[buffer(1)]],"
        f" uint i [[thread_position_in_grid]]) {{ out[i] = {f}(x[i]); }}\n"
        for f in UNARY
    ]
    + [
        f"kernel void m_{f}(const device float* x [[buffer(0)]], const device float* y [[buffer(1)]],"
        f" device float* out [[buffer(2)]], uint i [[thread_position_in_grid]]) {{ out[i] = {f}(x[i], y[i]); }}\n"
        for f in BINARY
    ]
    + [
        f"kernel void m_{f}(const device float* x [[buffer(0)]], const device float* y [[buffer(1)]],"
        f" const device float* z [[buffer(2)]], device float* out [[buffer(3)]],"
        f" uint i [[thread_position_in_grid]]) {{ out[i] = {f}(x[i], y[i], z[i]); }}\n"
        for f in TERNARY
    ]
    + [
        """
kernel void m_vector(const device float4* x [[buffer(0)]], device float4* out [[buffer(1)]],
                     uint i [[thread_position_in_grid]]) {
    float4 v = x[i];
    out[3 * i + 0] = sqrt(fabs(v)) + sin(v);
    out[3 * i + 1] = clamp(v, -0.5f, 0.5f);
    out[3 * i + 2] = normalize(v);
}
kernel void m_constants(device float* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    out[0] = M_PI_F;
    out[1] = M_E_F;
    out[2] = FLT_MAX;
    out[3] = INFINITY;
    out[4] = as_type<float>(0x3f800000u);
    out[5] = float(as_type<uint>(1.0f) >> 23);
}
"""
    ]
)


def _domain(name, k=0):
    d = DOMAIN.get(name, (-20, 20))
    return d[k] if isinstance(d[0], tuple) else d


def _inputs(name, arity, n, rng):
    out = []
    for k in range(arity):
        lo, hi = _domain(name, k)
        out.append(rng.uniform(lo, hi, n).astype(np.float32))
    if name in ("clamp", "smoothstep"):  # lo < hi
        out[1], out[2] = np.minimum(out[1], out[2]), np.maximum(out[1], out[2]) + 0.5
        if name == "smoothstep":
            out = [out[1], out[2], out[0]]
    if name == "mix":
        out[2] = rng.uniform(0, 1, n).astype(np.float32)
    if name in ("floor", "ceil", "trunc", "round", "rint", "fract", "sign"):
        out[0][:8] = [0.5, -0.5, 1.5, -1.5, 2.0, -2.0, 0.0, 2.5]
    return out


ALL_MATH = [(f, 1) for f in UNARY] + [(f, 2) for f in BINARY] + [(f, 3) for f in TERNARY]
REFERENCE = {**UNARY, **BINARY, **TERNARY}


@pytest.mark.parametrize("fast_math", [False, True], ids=["precise", "fast"])
@pytest.mark.parametrize("name,arity", ALL_MATH, ids=[f for f, _ in ALL_MATH])
def test_math_function(device, name, arity, fast_math, rng):
    n = 512
    args = _inputs(name, arity, n, rng)
    out = np.full(n, np.nan, np.float32)
    device.compile(MATH_SRC, fast_math=fast_math).function(f"m_{name}")(n, *args, out)
    expected = REFERENCE[name](*[a.astype(np.float64) for a in args])
    # Float32 rounding of the inputs' own size: sums with cancellation (mix, fma) are exact
    # only to a few ulp of their largest term.
    scale = max(1.0, max(float(np.abs(a).max()) for a in args)) if name in ("mix", "fma") else 1.0
    if fast_math:
        # Fast math on GPUs trades accuracy for speed (e.g. sin within 2^-13 absolute).
        atol = 2e-4 if device.backend == "cpu" else 1e-3
        np.testing.assert_allclose(out, expected, rtol=2e-3, atol=atol * scale, err_msg=name)
    else:
        np.testing.assert_allclose(out, expected, rtol=4e-6, atol=2e-7 * scale, err_msg=name)


def test_math_on_vectors(device, rng):
    n = 100
    x = rng.uniform(-3, 3, (n, 4)).astype(np.float32)
    out = np.zeros((n, 3, 4), np.float32)
    device.compile(MATH_SRC, fast_math=False).m_vector(n, x, out)
    x64 = x.astype(np.float64)
    np.testing.assert_allclose(out[:, 0], np.sqrt(np.abs(x64)) + np.sin(x64), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(out[:, 1], np.clip(x, -0.5, 0.5))
    np.testing.assert_allclose(out[:, 2], x64 / np.linalg.norm(x64, axis=1, keepdims=True), rtol=1e-5, atol=1e-6)


def test_math_constants_and_as_type(device):
    out = np.zeros(6, np.float32)
    device.compile(MATH_SRC).m_constants(1, out)
    assert out[0] == np.float32(np.pi)
    assert out[1] == np.float32(np.e)
    assert out[2] == np.finfo(np.float32).max
    assert out[3] == np.inf
    assert out[4] == 1.0
    assert out[5] == 127.0


# ---- helpers, structs, namespaces, comments, preprocessor -----------------------------------

PROGRAM_SRC = """#include <metal_stdlib>;
using namespace metal;

// A line comment.
/* A block comment
   over several lines, with a fake kernel: kernel void nope(device float* x [[buffer(0)]]) {} */

#define SQUARE(x) ((x) * (x))
#define N_COEFFS 4

namespace geo {
struct Point {
    float x;
    float y;
};

inline float dist2(Point a, Point b) {
    return SQUARE(a.x - b.x) + SQUARE(a.y - b.y);
}

namespace detail {
inline Point midpoint(Point a, Point b) { return Point{(a.x + b.x) * 0.5f, (a.y + b.y) * 0.5f}; }
}  // namespace detail
}  // namespace geo

struct Particle {
    float3 pos;     // 16 bytes: MSL float3
    float mass;     // at offset 16
    int id;
    uint flags;
};

struct Transform {
    float4 scale;
    float2 shift;
    uint count;
};

constant float kCoeffs[N_COEFFS] = {1.0f, 0.5f, 0.25f, 0.125f};

// A helper that writes through a thread-space reference.
static void accumulate(thread float& acc, float v) { acc += v; }

template <typename T>
T cube(T v) { return v * v * v; }

float poly(float x) {
    float acc = 0.0f;
    float p = 1.0f;
    for (int k = 0; k < N_COEFFS; ++k) {
        accumulate(acc, kCoeffs[k] * p);
        p *= x;
    }
    return acc;
}

kernel void use_helpers(const device float2* pts [[buffer(0)]],   // points
                        device float* out [[buffer(1)]],          /* results */
                        constant geo::Point& origin [[buffer(2)]],
                        uint i [[thread_position_in_grid]]) {
    geo::Point p = {pts[i].x, pts[i].y};
    geo::Point m = geo::detail::midpoint(p, origin);
    out[4 * i + 0] = geo::dist2(p, origin);
    out[4 * i + 1] = m.x + m.y;
    out[4 * i + 2] = poly(pts[i].x);
    out[4 * i + 3] = cube(pts[i].y) + float(cube(2));
}

kernel void particles(const device Particle* ps [[buffer(0)]], constant Transform& t [[buffer(1)]],
                      device float4* out [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    Particle q = ps[i];
    float3 s = q.pos * t.scale.xyz;
    out[i] = float4(s.x + t.shift.x, s.y + t.shift.y, q.mass * float(q.id), float(q.flags + t.count));
}

kernel void control_flow(const device int* a [[buffer(0)]], device int* out [[buffer(1)]],
                         uint i [[thread_position_in_grid]]) {
    int v = a[i];
    int r = 0;
    if (v < 0) {
        r = -1;
    } else if (v == 0) {
        r = 100;
    } else {
        int k = 0;
        while (v > 1 && k < 64) {        // Collatz steps
            v = (v % 2 == 0) ? v / 2 : 3 * v + 1;
            ++k;
        }
        r = k;
    }
    switch (a[i] & 3) {
        case 0: r += 1000; break;
        case 1: r += 2000; break;
        default: r += 3000; break;
    }
    int local[4];
    for (int k = 0; k < 4; ++k) local[k] = k * a[i];
    do { r += local[3]; } while (false);
    out[i] = r;
}

namespace kernels {
kernel void in_namespace(device uint* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    out[i] = i * 7u;
}
}  // namespace kernels

[[kernel]] void attribute_spelling(device uint* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    out[i] = i + 5u;
}

kernel void implicit_index(device float* a, device float* b, uint i [[thread_position_in_grid]]) {
    b[i] = a[i] + 0.5f;   // no [[buffer(n)]]: indices 0 and 1 in order
}

kernel void constant_pointer(constant float* coeffs [[buffer(0)]], const device float* x [[buffer(1)]],
                             device float* out [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    out[i] = coeffs[0] + coeffs[1] * x[i] + coeffs[2] * x[i] * x[i];
}
"""

PARTICLE_DTYPE = np.dtype(
    {"names": ["pos", "mass", "id", "flags"], "formats": [("<f4", 3), "<f4", "<i4", "<u4"], "offsets": [0, 16, 20, 24], "itemsize": 32}
)
TRANSFORM_DTYPE = np.dtype(
    {"names": ["scale", "shift", "count"], "formats": [("<f4", 4), ("<f4", 2), "<u4"], "offsets": [0, 16, 24], "itemsize": 32}
)


def test_helpers_structs_namespaces(device, rng):
    lib = device.compile(PROGRAM_SRC, fast_math=False)
    n = 100
    pts = rng.uniform(-2, 2, (n, 2)).astype(np.float32)
    origin = np.array((0.5, -1.0), dtype=[("x", "<f4"), ("y", "<f4")])[()]
    out = np.zeros((n, 4), np.float32)
    lib.use_helpers(n, pts, out, origin)
    ox, oy = np.float32(0.5), np.float32(-1.0)
    x, y = pts[:, 0], pts[:, 1]
    np.testing.assert_allclose(out[:, 0], (x - ox) ** 2 + (y - oy) ** 2, rtol=1e-6)
    np.testing.assert_allclose(out[:, 1], (x + ox) * 0.5 + (y + oy) * 0.5, rtol=1e-6, atol=1e-7)
    x64 = x.astype(np.float64)
    np.testing.assert_allclose(out[:, 2], 1 + 0.5 * x64 + 0.25 * x64**2 + 0.125 * x64**3, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(out[:, 3], y.astype(np.float64) ** 3 + 8, rtol=1e-6, atol=1e-6)


def test_structs_with_vector_members_msl_layout(device, rng):
    lib = device.compile(PROGRAM_SRC, fast_math=False)
    sizes = {p["name"]: p["element_size"] for p in lib.particles.params if p["kind"] != "builtin"}
    assert sizes["ps"] == PARTICLE_DTYPE.itemsize == 32
    assert sizes["t"] == TRANSFORM_DTYPE.itemsize == 32
    n = 40
    ps = np.zeros(n, PARTICLE_DTYPE)
    ps["pos"] = rng.uniform(-1, 1, (n, 3))
    ps["mass"] = rng.uniform(1, 2, n)
    ps["id"] = np.arange(n)
    ps["flags"] = np.arange(n) * 3
    t = np.zeros((), TRANSFORM_DTYPE)
    t["scale"] = [2.0, 3.0, 4.0, 99.0]
    t["shift"] = [0.5, -0.5]
    t["count"] = 10
    out = np.zeros((n, 4), np.float32)
    lib.particles(n, ps, t[()], out)
    np.testing.assert_allclose(out[:, 0], ps["pos"][:, 0] * 2 + 0.5, rtol=1e-6)
    np.testing.assert_allclose(out[:, 1], ps["pos"][:, 1] * 3 - 0.5, rtol=1e-6)
    np.testing.assert_allclose(out[:, 2], ps["mass"] * ps["id"], rtol=1e-6)
    np.testing.assert_array_equal(out[:, 3], (ps["flags"] + 10).astype(np.float32))
    # A struct of the wrong size (packed, no float3 padding) is refused.
    packed = np.zeros(n, [("pos", "<f4", 3), ("mass", "<f4"), ("id", "<i4"), ("flags", "<u4")])
    with pytest.raises(mc.ArgumentError):
        lib.particles(n, ps, packed[0], out)


def test_control_flow(device):
    a = np.array([-3, 0, 1, 2, 3, 6, 7, 27, 97, 12, 15], np.int32)
    out = np.zeros(len(a), np.int32)
    device.compile(PROGRAM_SRC).control_flow(len(a), a, out)

    def model(v0):
        if v0 < 0:
            r = -1
        elif v0 == 0:
            r = 100
        else:
            v, k = v0, 0
            while v > 1 and k < 64:
                v = v // 2 if v % 2 == 0 else 3 * v + 1
                k += 1
            r = k
        r += {0: 1000, 1: 2000}.get(v0 & 3, 3000)
        return r + 3 * v0

    assert out.tolist() == [model(int(v)) for v in a]


def test_kernel_in_namespace(device):
    lib = device.compile(PROGRAM_SRC)
    names = [n for n in lib.function_names if n.endswith("in_namespace")]
    assert len(names) == 1, lib.function_names
    out = np.zeros(10, np.uint32)
    lib.function(names[0])(10, out)
    np.testing.assert_array_equal(out, np.arange(10) * 7)


def test_comments_do_not_declare_kernels(device):
    lib = device.compile(PROGRAM_SRC)
    assert "nope" not in lib
    assert "use_helpers" in lib and "attribute_spelling" in lib and "implicit_index" in lib


def test_kernel_attribute_spelling(device):
    out = np.zeros(6, np.uint32)
    device.compile(PROGRAM_SRC).attribute_spelling(6, out)
    np.testing.assert_array_equal(out, np.arange(6) + 5)


def test_implicit_buffer_indices(device):
    a = np.arange(5, dtype=np.float32)
    b = np.zeros(5, np.float32)
    device.compile(PROGRAM_SRC).implicit_index(5, a, b)
    np.testing.assert_array_equal(b, a + 0.5)


def test_constant_address_space_pointer(device):
    coeffs = np.array([1.0, -2.0, 0.5], np.float32)
    x = np.linspace(-3, 3, 61, dtype=np.float32)
    out = np.zeros_like(x)
    device.compile(PROGRAM_SRC, fast_math=False).constant_pointer(len(x), coeffs, x, out)
    np.testing.assert_allclose(out, 1 - 2 * x.astype(np.float64) + 0.5 * x.astype(np.float64) ** 2, rtol=1e-6, atol=1e-6)


def test_image_like_2d_kernel(device):
    src = """
#include <metal_stdlib>
using namespace metal;
kernel void blur_x(const device float* img [[buffer(0)]], device float* out [[buffer(1)]],
                   uint2 gid [[thread_position_in_grid]], uint2 size [[threads_per_grid]]) {
    uint x = gid.x, y = gid.y, w = size.x;
    uint l = x > 0 ? x - 1 : x;
    uint r = x + 1 < w ? x + 1 : x;
    out[y * w + x] = (img[y * w + l] + img[y * w + x] + img[y * w + r]) / 3.0f;
}
"""
    h, w = 37, 53
    img = np.random.default_rng(3).random((h, w), dtype=np.float32)
    out = np.zeros_like(img)
    device.compile(src, fast_math=False).blur_x((w, h), img, out, threadgroup=(16, 8))
    padded = np.concatenate([img[:, :1], img, img[:, -1:]], axis=1)
    expected = (padded[:, :-2] + padded[:, 1:-1] + padded[:, 2:]) / np.float32(3)
    np.testing.assert_allclose(out, expected, rtol=1e-6)
