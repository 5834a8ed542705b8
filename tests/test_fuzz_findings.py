"""Defects the differential fuzzer (tools/msl_fuzz) found, each as a minimal kernel checked
against NumPy on every device.

- half arithmetic kept in float between operations (clang >= 16's excess precision for
  _Float16 on x86-64): `a * b + c` was rounded once, not after each operation;
- fma of half and bfloat rounded twice (fmaf, then to half): one ulp off near ties;
- thread-local arrays and vectors indexed at run time in kernels run as a vectorised loop
  (clang's `omp simd` gave all lanes of a vector one copy: another thread's values);
- madhi's addition and the SIMD-group integer sums and products overflowed as signed C++
  arithmetic (undefined, and optimised on: madhi(x, 1, INT_MIN) gave -1, not INT_MAX);
  MSL's GPUs wrap;
- integers converted to bfloat through float rounded twice (2^24 + 2^16 + 1 gave 2^24).
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

HALF_SRC = """
#include <metal_stdlib>
using namespace metal;
kernel void fma_free(const device half* a [[buffer(0)]], const device half* b [[buffer(1)]],
                     const device half* c [[buffer(2)]], device half* out [[buffer(3)]],
                     device half4* out4 [[buffer(4)]], uint i [[thread_position_in_grid]]) {
    out[i] = a[i] * b[i] + c[i];
    half4 x = half4(a[i], b[i], c[i], a[i]);
    out4[i] = x * x.yzxy - x.zxyz;
}
"""

WRAP_SRC = """
#include <metal_stdlib>
using namespace metal;
kernel void madhi_wraps(const device int* a [[buffer(0)]], device int* out [[buffer(1)]],
                        device int4* out4 [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    const int m = -2147483647 - 1;
    out[i] = madhi(a[i], 1, m);
    out4[i] = madhi(int4(1, 1, 1, a[i]), int4(1), int4(7, 1, 7, m));
}
kernel void simd_sums_wrap(const device int* a [[buffer(0)]], device int* sum [[buffer(1)]],
                           device int* prefix [[buffer(2)]], device int* product [[buffer(3)]],
                           uint i [[thread_position_in_grid]]) {
    sum[i] = simd_sum(a[i]);
    prefix[i] = simd_prefix_inclusive_sum(a[i]);
    product[i] = simd_product(a[i] | 1);
}
"""


def wrap32(x: np.ndarray) -> np.ndarray:
    return ((x.astype(np.int64) + 2**31) % 2**32 - 2**31).astype(np.int32)


def test_half_rounds_every_operation(device):
    rng = np.random.default_rng(7)
    n = 4096
    a, b, c = (rng.standard_normal(n).astype(np.float16) for _ in range(3))
    out = np.zeros(n, np.float16)
    out4 = np.zeros((n, 4), np.float16)
    device.compile(HALF_SRC, fast_math=False).fma_free(n, a, b, c, out, out4.view(np.uint8))
    np.testing.assert_array_equal(out.view(np.uint16), (a * b + c).view(np.uint16))
    x = np.stack([a, b, c, a], axis=1)
    expected = x * x[:, [1, 2, 0, 1]] - x[:, [2, 0, 1, 2]]
    np.testing.assert_array_equal(out4.view(np.uint16), expected.view(np.uint16))


def test_madhi_wraps(device):
    a = np.array([-5, -1, 0, 3, 2**31 - 1, -(2**31)] * 6, dtype=np.int32)
    n = len(a)
    out = np.zeros(n, np.int32)
    out4 = np.zeros((n, 4), np.int32)
    device.compile(WRAP_SRC, fast_math=False).madhi_wraps(n, a, out, out4.view(np.uint8))
    high = (a.astype(np.int64) * 1) >> 32
    np.testing.assert_array_equal(out, wrap32(high - 2**31))
    np.testing.assert_array_equal(out4[:, 3], wrap32(high - 2**31))
    np.testing.assert_array_equal(out4[:, 0], np.full(n, 7, np.int32))


def test_simd_integer_sums_wrap(device):
    rng = np.random.default_rng(3)
    n = 128
    a = rng.integers(2**30, 2**31 - 1, n).astype(np.int32)  # every SIMD-group's sum overflows
    sums, prefixes, products = (np.zeros(n, np.int32) for _ in range(3))
    lib = device.compile(WRAP_SRC, fast_math=False)
    lib.simd_sums_wrap(n, a, sums, prefixes, products, threadgroup=64)
    groups = a.reshape(-1, 32).astype(np.int64)
    np.testing.assert_array_equal(sums, np.repeat(wrap32(groups.sum(axis=1)), 32))
    np.testing.assert_array_equal(prefixes, wrap32(np.cumsum(groups, axis=1).ravel()))
    odd = (groups | 1).astype(object)
    expected = []
    for row in odd:
        p = 1
        for v in row:
            p = (p * int(v)) % 2**32
        expected.append(p - 2**32 if p >= 2**31 else p)
    np.testing.assert_array_equal(products, np.repeat(np.array(expected, np.int32), 32))


FMA_SRC = """
#include <metal_stdlib>
using namespace metal;
kernel void fma_half(const device half* a [[buffer(0)]], const device half* b [[buffer(1)]],
                     const device half* c [[buffer(2)]], device half* out [[buffer(3)]],
                     uint i [[thread_position_in_grid]]) {
    out[i] = fma(a[i], b[i], c[i]);
}
kernel void fma_bfloat(const device bfloat* a [[buffer(0)]], const device bfloat* b [[buffer(1)]],
                       const device bfloat* c [[buffer(2)]], device bfloat* out [[buffer(3)]],
                       uint i [[thread_position_in_grid]]) {
    out[i] = fma(a[i], b[i], c[i]);
}
"""


def nearest(q: Fraction, digits: int, min_exp: int) -> float:
    """q rounded to `digits` significant bits (ties to even), subnormal below 2**min_exp."""
    if q == 0:
        return 0.0
    sign, q = (-1.0 if q < 0 else 1.0), abs(q)
    e = q.numerator.bit_length() - q.denominator.bit_length()
    if Fraction(2) ** e > q:
        e -= 1
    scale = Fraction(2) ** (digits - 1 - max(e, min_exp))
    m, rest = divmod(q * scale, 1)
    if rest > Fraction(1, 2) or (rest == Fraction(1, 2) and m % 2):
        m += 1
    return sign * float(m / scale)


def near_tie_operands(rng, n: int, mantissa: int, tiny: float):
    """a * b on (or next to) a tie of the type, plus a c far below it."""
    a = 1 + rng.integers(0, 2**mantissa, n) / 2**mantissa
    b = 1 + rng.integers(0, 2**mantissa, n) / 2**mantissa
    c = rng.choice([-1.0, 1.0], n) * tiny * rng.integers(1, 2**mantissa, n) / 2**mantissa
    return a, b, c


def test_fma_of_half_and_bfloat_rounds_once(device):
    rng = np.random.default_rng(11)
    n = 1 << 14
    lib = device.compile(FMA_SRC, fast_math=False)
    a, b, c = (x.astype(np.float16) for x in near_tie_operands(rng, n, 10, 2.0**-20))
    out = np.zeros(n, np.float16)
    lib.fma_half(n, a, b, c, out)
    exact = [nearest(Fraction(float(x)) * Fraction(float(y)) + Fraction(float(z)), 11, -14) for x, y, z in zip(a, b, c)]
    np.testing.assert_array_equal(out, np.array(exact, dtype=np.float16))

    def to_bfloat(x):  # exact: every value below has at most 8 significant bits
        return (np.asarray(x, dtype=np.float32).view(np.uint32) >> 16).astype(np.uint16)

    ab, bb, cb = near_tie_operands(rng, n, 7, 2.0**-60)
    a16, b16, c16 = to_bfloat(ab), to_bfloat(bb), to_bfloat(cb)
    out16 = np.zeros(n, np.uint16)
    lib.fma_bfloat(n, a16.view(np.uint8), b16.view(np.uint8), c16.view(np.uint8), out16.view(np.uint8))
    value = lambda bits: (bits.astype(np.uint32) << 16).view(np.float32)  # noqa: E731
    exact = [nearest(Fraction(float(x)) * Fraction(float(y)) + Fraction(float(z)), 8, -126)
             for x, y, z in zip(value(a16), value(b16), value(c16))]
    np.testing.assert_array_equal(value(out16), np.array(exact, dtype=np.float32))


LOCAL_STORAGE_SRC = """
#include <metal_stdlib>
using namespace metal;
kernel void temporary_vector(const device int* a [[buffer(0)]], device int* out [[buffer(1)]],
                             uint gid [[thread_position_in_grid]], uint lid [[thread_position_in_threadgroup]],
                             uint sgid [[simdgroup_index_in_threadgroup]]) {
    out[gid] = int(uint(a[gid]) << uint2(lid, sgid)[sgid]);
}
kernel void local_array(const device int* a [[buffer(0)]], device int* out [[buffer(1)]],
                        uint gid [[thread_position_in_grid]]) {
    int t[4] = {int(gid), a[gid], int(gid) * 3, 7};
    out[gid] = t[a[gid] & 3];
}
kernel void local_array_written(const device int* a [[buffer(0)]], device int* out [[buffer(1)]],
                                uint gid [[thread_position_in_grid]]) {
    int t[4] = {0, 0, 0, 0};
    for (int k = 0; k < 4; ++k) t[(k + a[gid]) & 3] += k * int(gid);
    out[gid] = t[gid & 3] - t[(gid + 1) & 3];
}
kernel void pointer_to_local(const device int* a [[buffer(0)]], device int* out [[buffer(1)]],
                             uint gid [[thread_position_in_grid]]) {
    int4 v = int4(int(gid), a[gid], 5, -int(gid));
    thread int* p = (thread int*)&v;  // the vector's storage (a component has no address in MSL)
    out[gid] = p[a[gid] & 3] + v[gid & 3];
}
"""


def test_local_storage_indexed_at_run_time(device):
    n = 256
    rng = np.random.default_rng(5)
    a = rng.integers(-50, 50, n).astype(np.int32)
    gid = np.arange(n)
    lib = device.compile(LOCAL_STORAGE_SRC, fast_math=False)
    out = np.zeros(n, np.int32)

    lib.temporary_vector(n, np.full(n, -1, np.int32), out, threadgroup=64)
    lid, sgid = gid % 64, (gid % 64) // 32
    counts = np.where(sgid == 0, lid, sgid)
    np.testing.assert_array_equal(out, wrap32((np.uint64(0xFFFFFFFF) << counts.astype(np.uint64)) & 0xFFFFFFFF))

    lib.local_array(n, a, out)
    table = np.stack([gid, a, gid * 3, np.full(n, 7)], axis=1)
    np.testing.assert_array_equal(out, table[gid, a & 3])

    lib.local_array_written(n, a, out)
    t = np.zeros((n, 4), np.int64)
    for k in range(4):
        t[gid, (k + a) & 3] += k * gid
    np.testing.assert_array_equal(out, t[gid, gid & 3] - t[gid, (gid + 1) & 3])

    lib.pointer_to_local(n, a, out)
    v = np.stack([gid, a, np.full(n, 5), -gid], axis=1)
    np.testing.assert_array_equal(out, v[gid, a & 3] + v[gid, gid & 3])


# Open defects (reported; tools/msl_fuzz/workarounds.py steers the generator around them).
# Strict xfails on the CPU backend: when a fix lands they pass, and the mark must go.

CHAR_ELEMENT_SRC = """
#include <metal_stdlib>
using namespace metal;
kernel void char_element(const device char4* v [[buffer(0)]], device char* out [[buffer(1)]],
                         uint i [[thread_position_in_grid]]) {
    char c = char(3);
    out[i] = hadd(c, v[i][i % 4u]) + max(c, v[i].y);
}
"""

DIVERGENT_SIMD_SRC = """
#include <metal_stdlib>
using namespace metal;
kernel void divergent_quad(const device int* a [[buffer(0)]], device int* out [[buffer(1)]],
                           device uint* shuffled [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    int v = a[i];
    if ((a[i] & 3) == 1) {
        v = quad_and(v);
    }
    shuffled[i] = simd_shuffle_rotate_up(1u, ushort(29u));
    out[i] = v;
}
"""


def test_char_vector_components_are_char(device):
    """A char4's components were signed char while a scalar char is char: hadd(c, v.x) found no
    template (two types for one T). Vectors of char now hold char (signed, as scalars are)."""
    n = 64
    v = np.arange(4 * n, dtype=np.int8).reshape(n, 4) - 100
    out = np.zeros(n, np.int8)
    device.compile(CHAR_ELEMENT_SRC, fast_math=False).char_element(n, v.view(np.uint8), out)
    i = np.arange(n)
    component = v[i, i % 4].astype(np.int64)
    expected = ((3 + component) >> 1) + np.maximum(3, v[:, 1].astype(np.int64))
    np.testing.assert_array_equal(out, expected.astype(np.int8))


def test_simd_function_in_divergent_control_flow(device):
    # Fixed: the CPU's lanes meet at each call's site (tests/conformance/test_divergent_simd.py).
    n = 64
    a = (np.arange(n) * 5 + 3).astype(np.int32)
    out = np.zeros(n, np.int32)
    shuffled = np.zeros(n, np.uint32)
    device.compile(DIVERGENT_SIMD_SRC, fast_math=False).divergent_quad(n, a, out, shuffled, threadgroup=64)
    np.testing.assert_array_equal(shuffled, np.ones(n, np.uint32))
    quads = a.reshape(-1, 4)
    expected = quads.copy()
    for q, row in enumerate(quads):
        taking = (row & 3) == 1
        if taking.any():
            expected[q][taking] = np.bitwise_and.reduce(row[taking])
    np.testing.assert_array_equal(out, expected.ravel())


# Found by compiling the fuzzer's CUDA translations with NVRTC 13.5 (CUDA 13.0 headers, no GPU
# here): a half converted to char or ulong did not link (ptxas: unresolved
# __half::operator char() / operator unsigned long()), and a program-scope half initialised
# by a conversion (`half(INFINITY)`) is "dynamic initialization" for NVRTC. Run on every device.

HALF_CONVERSIONS_SRC = """
#include <metal_stdlib>
using namespace metal;
constant half big = half(INFINITY);
constant half table[3] = {-1.5h, half(2.25f), half(65504.0f)};
kernel void half_to_integers(const device half* h [[buffer(0)]], device char* c [[buffer(1)]],
                             device uchar* uc [[buffer(2)]], device short* s [[buffer(3)]],
                             device ushort* us [[buffer(4)]], device int* i [[buffer(5)]],
                             device uint* ui [[buffer(6)]], device long* l [[buffer(7)]],
                             device ulong* ul [[buffer(8)]], device half* t [[buffer(9)]],
                             uint gid [[thread_position_in_grid]]) {
    half x = h[gid];
    c[gid] = char(x);
    uc[gid] = uchar(abs(x));
    s[gid] = short(x);
    us[gid] = ushort(abs(x));
    i[gid] = int(x);
    ui[gid] = uint(abs(x));
    l[gid] = long(x);
    ul[gid] = ulong(abs(x));
    t[gid] = isinf(big) ? table[gid % 3u] : half(0.0h);
}
"""


def test_half_to_every_integer_type_and_half_constants(device):
    n = 96
    h = np.linspace(-120.0, 120.0, n).astype(np.float16)
    outs = [np.zeros(n, dt) for dt in (np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32, np.int64, np.uint64)]
    t = np.zeros(n, np.float16)
    device.compile(HALF_CONVERSIONS_SRC, fast_math=False).half_to_integers(n, h, *outs, t)
    x = h.astype(np.float64)
    truncated, magnitude = np.trunc(x), np.trunc(np.abs(x))
    for out, source in zip(outs, [truncated, magnitude] * 4):
        np.testing.assert_array_equal(out, source.astype(out.dtype))
    np.testing.assert_array_equal(t, np.array([-1.5, 2.25, 65504.0], np.float16)[np.arange(n) % 3])


HALF_FUNCTION_CONSTANTS_SRC = """
#include <metal_stdlib>
using namespace metal;
constant half fc_scale [[function_constant(0)]];
constant half fc_unset [[function_constant(1)]];
constant half scale = is_function_constant_defined(fc_scale) ? fc_scale : half(1);
constant float third = 1.0f / 3.0f;
constant half rounded[3] = {half(third), static_cast<half>(third * 2.0f), half(-(third + 65000.0f))};
kernel void half_constants(const device half* x [[buffer(0)]], device half* y [[buffer(1)]],
                           uint gid [[thread_position_in_grid]]) {
    y[gid] = x[gid] * scale + rounded[gid % 3u] + (is_function_constant_defined(fc_unset) ? fc_unset : half(0));
}
"""


@pytest.mark.parametrize("scale", [0.1, -2.5, float("inf")])
def test_half_function_constants_and_converted_program_scope_constants(device, scale):
    # Found on CUDA (seed 1000, program 112 and ten more): a half function constant, or a
    # program-scope half made by converting a named constant, needed dynamic initialisation
    # there (CUDA's __half(float) is not constexpr), so the program did not compile.
    n = 30
    x = np.linspace(-4.0, 4.0, n).astype(np.float16)
    y = np.zeros(n, np.float16)
    lib = device.compile(HALF_FUNCTION_CONSTANTS_SRC, fast_math=False)
    lib.function("half_constants", constants={"fc_scale": scale})(n, x, y)
    third = np.float32(1.0) / np.float32(3.0)
    table = np.array([third, third * np.float32(2.0), -(third + np.float32(65000.0))], np.float32).astype(np.float16)
    with np.errstate(invalid="ignore", over="ignore"):
        expected = (x * np.float16(scale) + table[np.arange(n) % 3]).astype(np.float16)
    np.testing.assert_array_equal(y, expected)


INT_TO_BFLOAT_SRC = """
#include <metal_stdlib>
using namespace metal;
kernel void from_long(const device long* a [[buffer(0)]], device bfloat* out [[buffer(1)]],
                      uint i [[thread_position_in_grid]]) {
    bfloat implicit = a[i];
    out[4 * i] = bfloat(a[i]);
    out[4 * i + 1] = implicit;
    out[4 * i + 2] = bfloat(1.0f) * a[i];
    out[4 * i + 3] = bfloat3(long3(a[i], 0, 1)).x;
}
kernel void from_ulong(const device ulong* a [[buffer(0)]], device bfloat* out [[buffer(1)]],
                       uint i [[thread_position_in_grid]]) {
    out[2 * i] = static_cast<bfloat>(a[i]);
    out[2 * i + 1] = a[i] + bfloat(0.0f);
}
kernel void from_int(const device int* a [[buffer(0)]], device packed_bfloat3* out [[buffer(1)]],
                     uint i [[thread_position_in_grid]]) {
    out[i] = bfloat3(int3(a[i], a[i] >> 1, 1));
}
kernel void from_uint(const device uint* a [[buffer(0)]], device bfloat2* out [[buffer(1)]],
                      uint i [[thread_position_in_grid]]) {
    out[i] = bfloat2(uint2(a[i]));
}
"""


def near_bfloat_ties(rng, n: int, top: int) -> list[int]:
    """Integers below 2**top at, next to and far from the ties of bfloat's 8 significant bits
    (2**24 + 2**16 + 1 rounded to float first is a tie, and then went down)."""
    values = [2**24 + 2**16 + 1, 2**24 + 2**16, 2**24 + 2**16 - 1, 2**31 - 1, 2**top - 1]
    while len(values) < n:
        s = int(rng.integers(17, top - 8))
        base = int(rng.integers(2**7, 2**8)) << s
        values.append(base + (1 << (s - 1)) + int(rng.choice([-1, 0, 1, 2**(s - 9), -(2**(s - 9))])))
    return values


def test_integers_to_bfloat_round_once(device):
    """long 3,134,505,340,649,865,217 became the bfloat after its nearest (seed 3000,
    program 461): integers went to float, then to bfloat, rounding twice."""
    rng = np.random.default_rng(13)
    lib = device.compile(INT_TO_BFLOAT_SRC, fast_math=False)
    value = lambda bits: (bits.astype(np.uint32) << 16).view(np.float32)  # noqa: E731
    exact = lambda v: nearest(Fraction(int(v)), 8, -126)  # noqa: E731

    longs = near_bfloat_ties(rng, 256, 63)
    signed = np.array(longs[:128] + [-v for v in longs[128:]] + [-(2**63)], dtype=np.int64)
    out = np.zeros(4 * len(signed), np.uint16)
    lib.from_long(len(signed), signed, out.view(np.uint8))
    np.testing.assert_array_equal(value(out).reshape(-1, 4), np.repeat([[exact(v)] for v in signed], 4, axis=1))

    unsigned = np.array(near_bfloat_ties(rng, 256, 64) + [2**64 - 1], dtype=np.uint64)
    out = np.zeros(2 * len(unsigned), np.uint16)
    lib.from_ulong(len(unsigned), unsigned, out.view(np.uint8))
    np.testing.assert_array_equal(value(out).reshape(-1, 2), np.repeat([[exact(v)] for v in unsigned], 2, axis=1))

    ints = np.array(near_bfloat_ties(rng, 256, 31) + [-(2**31)], dtype=np.int64)
    ints[::2] *= -1
    ints = ints.astype(np.int32)
    out = np.zeros(3 * len(ints), np.uint16)
    lib.from_int(len(ints), ints, out.view(np.uint8))
    np.testing.assert_array_equal(value(out).reshape(-1, 3), [[exact(v), exact(int(v) >> 1), 1.0] for v in ints])

    uints = np.array(near_bfloat_ties(rng, 256, 32), dtype=np.uint32)
    out = np.zeros(2 * len(uints), np.uint16)
    lib.from_uint(len(uints), uints, out.view(np.uint8))
    np.testing.assert_array_equal(value(out).reshape(-1, 2), np.repeat([[exact(v)] for v in uints], 2, axis=1))


PRODUCT_SHADOW_SRC = """
#include <metal_stdlib>
using namespace metal;
kernel void after_products(const device float* x [[buffer(0)]], const device ulong* u [[buffer(1)]],
                           device int* out [[buffer(2)]], device half* h [[buffer(3)]],
                           uint i [[thread_position_in_grid]]) {
    int w = 3;
    w /= (w * w);
    int a = 2;
    bool odd = (a & w) != 0;
    half v = 1.0h;
    v /= (v * v);
    w = x[i];
    a = x[i] * 2.0f;
    v = u[i];
    out[2 * i] = w;
    out[2 * i + 1] = odd ? 0 : a;
    h[i] = v;
}
"""


BFLOAT_COMPARE_SRC = """
kernel void compares(const device uint* a [[buffer(0)]], const device int* b [[buffer(1)]],
                     device int* out [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    const bfloat t = bfloat(2080374784.0f);
    const bfloat s = bfloat(65534);
    out[6 * i + 0] = a[i] > t;
    out[6 * i + 1] = t <= a[i];
    out[6 * i + 2] = a[i] == t;
    out[6 * i + 3] = (s > b[i]) ? 1 : 0;
    out[6 * i + 4] = b[i] != s;
    out[6 * i + 5] = b[i] >= s;
}
"""


def test_comparisons_of_bfloat_and_integers_round_the_integer(device):
    """`u > bfloat(x)` compares u rounded to bfloat, as MSL's usual arithmetic conversions do for
    `u + bfloat(x)` (fuzz seeds 29208 #871 and 29204 #800 on the CPU and CUDA: u was compared as
    a float, so 2080374800 > bfloat(2080374784) was true where MSL has it false)."""
    a = np.array([2080374784, 2080374800, 2080374784 + 2**22, 2084569088, 2088763391, 0, 2**32 - 1, 2080000000],
                 np.uint32)
    b = np.array([65535, 65536, 65537, 65534, 65791, 65792, 65280, -65536], np.int32)
    out = np.zeros(6 * len(a), np.int32)
    device.compile(BFLOAT_COMPARE_SRC, fast_math=False).compares(len(a), a, b, out)
    value = lambda v: float(nearest(Fraction(int(v)), 8, -126))  # noqa: E731
    t, s = value(2080374784), value(65534)
    want = np.array([[value(x) > t, t <= value(x), value(x) == t, s > value(y), value(y) != s, value(y) >= s]
                     for x, y in zip(a, b)], np.int32)
    np.testing.assert_array_equal(out.reshape(-1, 6), want)

def test_products_in_parentheses_declare_nothing(device):
    """`(w * w)` and `(a & w)` read as declarations of a pointer or reference w (`T* w`) hid w's
    type from the conversion pass (seed 26102, program 709): the assignments after them went
    unconverted, a float out of int's range became INT_MIN instead of saturating (CPU) and
    `v = u[i]` of a half from a ulong did not compile on CUDA (an ambiguous operator=)."""
    x = np.array([5e9, -5e9, np.nan, 7.75, -1e10, 3e9], np.float32)
    u = np.array([3, 65504, 70000, 2**63, 1, 0], np.uint64)
    out = np.zeros(2 * len(x), np.int32)
    h = np.zeros(len(x), np.float16)
    device.compile(PRODUCT_SHADOW_SRC).after_products(len(x), x, u, out, h)
    info = np.iinfo(np.int32)
    saturate = lambda v: 0 if np.isnan(v) else max(info.min, min(info.max, int(np.trunc(v))))  # noqa: E731
    np.testing.assert_array_equal(out[0::2], [saturate(v) for v in x])
    np.testing.assert_array_equal(out[1::2], [saturate(np.float32(v) * np.float32(2)) for v in x])
    with np.errstate(over="ignore"):  # 70000 and 2^63 round to infinity, as in MSL
        np.testing.assert_array_equal(h, u.astype(np.float16))


PROGRAM_SCOPE_SHADOW_SRC = """
#include <metal_stdlib>
using namespace metal;
constant half scale = 2.0h;
constant int three = 3;
struct Widen {
    half operator()(ulong u, float f) const {
        half v = 1.0h;
        v = (uchar(0) * (scale * v));
        v = u;
        int w = 1;
        w = (three * w);
        w = f;
        return v + half(w & 1);
    }
};
kernel void after_constant_products(const device float* x [[buffer(0)]], const device ulong* u [[buffer(1)]],
                                    device int* out [[buffer(2)]], device half* h [[buffer(3)]],
                                    uint i [[thread_position_in_grid]]) {
    int w = 3;
    w = (three * w);
    w = x[i];
    half v = 1.0h;
    v = (uchar(0) * (scale * v));
    v = u[i];
    out[i] = w;
    h[2 * i] = v;
    h[2 * i + 1] = Widen()(u[i], x[i]);
}
kernel void same_names_other_types(device float* v [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    float w = 2.0f;
    v[i] = w * three;
}
"""


def test_products_with_program_scope_constants_declare_nothing(device):
    """`(scale * v)` with scale a program-scope constant read as a declaration of a pointer v
    (seed 28103, programs 488 and 622): the assignments after it went unconverted, `v = u` of a
    half from a ulong did not compile on CUDA (an ambiguous operator=) and an int from a float
    out of its range was not saturated (CPU). So in a functor's operator(), whose locals were
    read as the program scope's, where another kernel declares the same name with another type."""
    x = np.array([5e9, -5e9, np.nan, 7.75, -1e10, 3e9], np.float32)
    u = np.array([3, 65504, 70000, 2**63, 1, 0], np.uint64)
    out = np.zeros(len(x), np.int32)
    h = np.zeros(2 * len(x), np.float16)
    device.compile(PROGRAM_SCOPE_SHADOW_SRC).after_constant_products(len(x), x, u, out, h)
    info = np.iinfo(np.int32)
    saturate = lambda v: 0 if np.isnan(v) else max(info.min, min(info.max, int(np.trunc(v))))  # noqa: E731
    np.testing.assert_array_equal(out, [saturate(v) for v in x])
    with np.errstate(over="ignore"):  # 70000 and 2^63 round to infinity, as in MSL
        halves = u.astype(np.float16)
        np.testing.assert_array_equal(h[0::2], halves)
        odd = np.array([saturate(v) & 1 for v in x], np.float16)
        np.testing.assert_array_equal(h[1::2], (halves + odd).astype(np.float16))


HALF_FROM_LONG_SRC = """
#include <metal_stdlib>
using namespace metal;
template <typename T>
T widened(ulong u, T start) {
    T v = start;
    v = (u % 100000ul) + 1ul;
    return v;
}
template <typename T>
T literal_long(T start) {
    T v = start;
    v = 40000ul;
    return v;
}
struct Count {
    ushort m0;
    ulong operator()(half h, ulong u) const { return u + ulong(m0) + ulong(h); }
};
kernel void half_from_long(const device ulong* u [[buffer(0)]], device half* h [[buffer(1)]],
                           uint i [[thread_position_in_grid]]) {
    h[4 * i] = (as_type<long>(half4(half(-INFINITY))) & 0l) + long(u[i] % 100000ul);
    h[4 * i + 1] = widened(u[i], half(0));
    h[4 * i + 2] = Count{ushort(2)}(half(1), u[i] % 100000ul);
    h[4 * i + 3] = literal_long(half(0));
}
"""


def test_halves_assigned_from_longs(device):
    """A half assigned a long or ulong (seeds 28200 #534, 28205 #539 and #610, 28207 #506): CUDA's
    __half has no operator= for them and its others tie, so the translation converts the value
    first. It did not where the value held a `half(...)` of its own (the conversion's wrap gave
    way to that name's rewrite), nor in a template whose T is half (a long literal too: seed 28507
    #644), nor for a functor's ulong."""
    u = np.array([0, 1, 7, 2047, 65504, 99999, 2**40 + 3, 2**63 + 11], np.uint64)
    h = np.zeros(4 * len(u), np.float16)
    device.compile(HALF_FROM_LONG_SRC).half_from_long(len(u), u, h)
    r = u % np.uint64(100000)
    with np.errstate(over="ignore"):  # 65504 and more round as MSL rounds them: to infinity past 65519
        np.testing.assert_array_equal(h[0::4], r.astype(np.float16))
        np.testing.assert_array_equal(h[1::4], (r + np.uint64(1)).astype(np.float16))
        np.testing.assert_array_equal(h[2::4], (r + np.uint64(3)).astype(np.float16))
    np.testing.assert_array_equal(h[3::4], np.full(len(u), 40000, np.float16))


BRACED_CALL_SHUFFLE_SRC = """
#include <metal_stdlib>
using namespace metal;
struct Add {
    int k;
    int operator()(int v) const { return v + k; }
};
kernel void braced_call_shuffle(const device int* x [[buffer(0)]], device int* out [[buffer(1)]],
                                uint lane [[thread_index_in_simdgroup]], uint gid [[thread_position_in_grid]]) {
    int v = Add{3}((x[gid] > 0 ? 1 : 2) + int(simd_shuffle_rotate_down(lane, ushort(28u))));
    out[gid] = v;
}
"""


def test_shuffles_after_a_conditional_in_a_braced_temporarys_call(device):
    """A shuffle after a conditional in the arguments of `Add{3}(...)` (seed 28601 #592): the
    pass that evaluates such a shuffle before its statement took the temporary's `}` for the
    statement's start and wrote its declaration inside the expression (no compile)."""
    x = np.arange(-32, 32, dtype=np.int32)
    out = np.zeros(64, np.int32)
    k = device.compile(BRACED_CALL_SHUFFLE_SRC).braced_call_shuffle
    k(64, x, out, threadgroup=64)
    w = k.thread_execution_width
    lane = np.arange(64) % w
    np.testing.assert_array_equal(out, 3 + np.where(x > 0, 1, 2) + (lane + 28) % w)
