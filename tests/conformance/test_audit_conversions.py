"""Edge semantics the MSL specification states for conversions and for a few exact functions,
checked on every device against NumPy (audit of wrong answers given without an error).

* A NaN converted to an integer is 0 (specification section 8.6, "When converting a
  floating-point type to an integer type, if the floating-point value is NaN, the resulting
  integer is 0", and "fast math does not change the accuracy of conversion operations"); in-range
  values round toward zero. Out of range the specification leaves the value undefined; Apple's
  and NVIDIA's GPUs saturate to int, uint, long and ulong's minimum or maximum (a negative value
  to an unsigned type gives 0), and so does the CPU backend (x86's cvttss2si gives INT_MIN for
  both: the CPU translation conditions the argument, metal_conversion.h), in every form the
  translation sees (docs/design.md, "Known limits" says which it does not).
* Precise rsqrt is correctly rounded (table 8.1); `1.0f / sqrtf(x)` was one ulp off for about a
  quarter of all floats.
* fmin/fmax (and min/max of floats) "return y if y < x, otherwise x" and "y if x < y, otherwise
  x" (table 6.4): fmin(+0.0, -0.0) is +0.0; the CPU backend returned the second zero.
"""

from __future__ import annotations

import numpy as np
import pytest

from mcconf import KernelSet, assert_equal

INT_TYPES = [("char", np.int8), ("uchar", np.uint8), ("short", np.int16), ("ushort", np.uint16),
             ("int", np.int32), ("uint", np.uint32), ("long", np.int64), ("ulong", np.uint64)]

# One kernel per integer type: a plain cast, an implicit conversion, a vector conversion, and the
# same value through half and bfloat (NaN stays NaN there; in-range values below are exact in both).
CONVERT = """
kernel void to_{T}(const device float* x [[buffer(0)]], device {T}* out [[buffer(1)]],
                   uint i [[thread_position_in_grid]]) {{
    float v = x[i];
    device {T}* o = out + 6 * i;
    o[0] = {T}(v);
    {T} implicit_value = v;
    o[1] = implicit_value;
    o[2] = {T}4(float4(v)).w;
    o[3] = {T}(half(v));
    o[4] = {T}(bfloat(v));
    o[5] = static_cast<{T}>(v);
}}
"""
SNIPPETS = [CONVERT.format(T=t) for t, _ in INT_TYPES]
KS_FAST = KernelSet(SNIPPETS)
KS_PRECISE = KernelSet([s.replace("kernel void to_", "kernel void precise_to_") for s in SNIPPETS], fast_math=False)

NANS = np.array([0x7FC00000, 0xFFC00000, 0x7F800001, 0x7FFFFFFF, 0xFFFFFFFF], np.uint32).view(np.float32)
# In range of every type (uchar included) and exact in half and bfloat: truncated toward zero.
IN_RANGE = np.array([0.0, -0.0, 0.5, 0.75, 1.5, 2.75, 3.5, 7.875, 100.5, 126.5], np.float32)
SIGNED_IN_RANGE = np.array([-0.5, -0.75, -1.5, -2.75, -7.875, -100.5, -127.5], np.float32)


@pytest.mark.parametrize("fast_math", [True, False], ids=["fast-math", "precise"])
@pytest.mark.parametrize("name,dtype", INT_TYPES, ids=[t for t, _ in INT_TYPES])
def test_nan_converts_to_integer_zero(device, name, dtype, fast_math):
    """float, half and bfloat NaN (quiet, signalling, negative) to every integer type is 0, by
    cast, implicit conversion, static_cast and vector conversion; in-range values truncate (the
    CPU backend gave x86's INT_MIN, 0xffffffff ... for int, uint, long and ulong)."""
    values = np.concatenate([NANS, IN_RANGE] + ([SIGNED_IN_RANGE] if np.issubdtype(dtype, np.signedinteger) else []))
    out = np.full(6 * values.size, 77, dtype)
    ks = KS_FAST if fast_math else KS_PRECISE
    ks.get(device, f"to_{name}" if fast_math else f"precise_to_{name}")(values.size, values, out)
    expected = np.trunc(np.where(np.isnan(values), np.float32(0), values)).astype(dtype)
    assert_equal(out.reshape(values.size, 6), np.repeat(expected[:, None], 6, axis=1),
                 err_msg=f"{name}: rows are {values.tolist()}; columns T(v), implicit, T4(float4), T(half), T(bfloat), static_cast")


# Out of range, each form of conversion the CPU translation conditions (metal_conversion.h), and a
# NaN: explicit casts, a declaration, `=` to an element, a component or a struct's member, a
# vector's conversion, a return, a function's and a lambda's argument, compound assignments
# (computed in float, then converted), a ternary, and the same value through half and bfloat. (The
# four kernels share one source: the token walk reads a member's or a lambda's type by its name
# across the file, so each type's have their own names.)
SATURATE = """
struct holder_of_{T} {{ {T} member_{T}; }};
{T} returned_as_{T}(float v) {{ return v; }}
void passed_as_{T}({T} p, device {T}* o) {{ *o = p; }}
kernel void saturate_to_{T}(const device float* x [[buffer(0)]], device {T}* out [[buffer(1)]],
                            uint i [[thread_position_in_grid]]) {{
    float v = x[i];
    device {T}* o = out + {COLUMNS} * i;
    o[0] = {T}(v);
    {T} declared = v;
    o[1] = declared;
    o[2] = v;
    o[3] = {T}4(float4(v)).w;
    o[4] = {T}2(v, v).y;
    o[5] = static_cast<{T}>(v);
    o[6] = ({T})v;
    o[7] = ({T})(v * 1.0f);
    o[8] = returned_as_{T}(v);
    passed_as_{T}(v, o + 9);
    {T} sum = 0;
    sum += v;
    o[10] = sum;
    {T} product = 1;
    product *= v;
    o[11] = product;
    {T} chosen = i < 1000000u ? v : 0.0f;
    o[12] = chosen;
    {T}4 w = {T}4(7);
    w.y = v;
    o[13] = w.y;
    thread {T} local[2] = {{0, 0}};
    local[1] = v;
    o[14] = local[1];
    holder_of_{T} holder;
    holder.member_{T} = v;
    o[15] = holder.member_{T};
    auto lambda_of_{T} = []({T} p) {{ return p; }};
    o[16] = lambda_of_{T}(v);
    o[17] = {T}(half(v));
    o[18] = {T}(bfloat(v));
}}
"""
SATURATE_COLUMNS = ["T(v)", "T d = v", "o[k] = v", "T4(float4(v))", "T2(v, v)", "static_cast", "(T)v",
                    "(T)(v * 1.0f)", "return", "argument", "k += v", "k *= v", "ternary", "w.y = v",
                    "thread array element", "s.member = v", "lambda argument", "T(half(v))", "T(bfloat(v))"]
WIDE_TYPES = [("int", np.int32), ("uint", np.uint32), ("long", np.int64), ("ulong", np.uint64)]
KS_SATURATE = KernelSet([SATURATE.format(T=t, COLUMNS=len(SATURATE_COLUMNS)) for t, _ in WIDE_TYPES])


def _bfloat(x):
    """float32 rounded to bfloat (nearest even) and back; NaN stays NaN."""
    u = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    r = (((u + 0x7FFF + ((u >> 16) & 1)) >> 16) << 16).astype(np.uint32).view(np.float32)
    return np.where(np.isnan(x), np.float32(np.nan), r)


def _saturated(values, dtype):
    """MSL's GPUs' conversion: NaN 0, truncated toward zero, clamped to the type's range."""
    info = np.iinfo(dtype)
    out = []
    for v in np.asarray(values, np.float64):
        if np.isnan(v):
            out.append(0)
        elif v >= info.max:  # +inf and all beyond (no float lies between max and 2^bits)
            out.append(int(info.max))
        elif v <= info.min:
            out.append(int(info.min))
        else:
            out.append(int(np.trunc(v)))
    return np.array(out, dtype)


@pytest.mark.parametrize("name,dtype", WIDE_TYPES, ids=[t for t, _ in WIDE_TYPES])
def test_out_of_range_saturates(device, name, dtype):
    """±1e10, ±1e30, ±inf and the floats just inside and just beyond the range of int, uint, long
    and ulong saturate to the type's minimum or maximum, a negative value to an unsigned type
    gives 0, and a NaN 0, in every form of conversion (Apple's and NVIDIA's GPUs saturate; x86
    gives the minimum)."""
    bits = np.iinfo(dtype).bits
    signed = np.issubdtype(dtype, np.signedinteger)
    top = np.float32(2.0 ** (bits - 1 if signed else bits))
    below_top = np.nextafter(top, np.float32(0))
    edges = [top, below_top, np.nextafter(top, np.float32(np.inf))]
    if signed:
        edges += [-top, np.nextafter(-top, np.float32(-np.inf)), np.nextafter(-top, np.float32(0))]
    values = np.array([1e10, -1e10, 1e30, -1e30, np.inf, -np.inf, np.nan, -1.5, -0.5, 1.5, 65504.0, 70000.0,
                       -70000.0, 2147483520.0, 2147483648.0, -2147483648.0, 4294967040.0, 4294967296.0]
                      + edges, np.float32)
    out = np.full(len(SATURATE_COLUMNS) * values.size, 77, dtype)
    KS_SATURATE.get(device, f"saturate_to_{name}")(values.size, values, out)
    with np.errstate(over="ignore"):
        through_half = values.astype(np.float16).astype(np.float32)
    expected = np.repeat(_saturated(values, dtype)[:, None], len(SATURATE_COLUMNS), axis=1)
    expected[:, -2] = _saturated(through_half, dtype)
    expected[:, -1] = _saturated(_bfloat(values), dtype)
    assert_equal(out.reshape(values.size, len(SATURATE_COLUMNS)), expected,
                 err_msg=f"{name}: rows are {values.tolist()}; columns {SATURATE_COLUMNS}")


# double (a CPU and CUDA extension: Metal has none) converts the same way.
KS_DOUBLE = KernelSet(["""
kernel void double_to_int_and_long(const device float* x [[buffer(0)]], device long* out [[buffer(1)]],
                                   uint i [[thread_position_in_grid]]) {
    double d = double(x[i]) * 1e10;
    out[2 * i] = int(d);
    long l = d * 1e10;
    out[2 * i + 1] = l;
}
"""])


def test_double_out_of_range_saturates(device):
    """A double NaN to int and long is 0, out of range saturated (not on Metal, which has no double)."""
    if device.backend == "metal":
        pytest.skip("Metal has no double")
    x = np.array([np.nan, 1.0, -1.0, 0.1, 1e-12, -0.5, 3e-9], np.float32)
    out = np.full(2 * x.size, 77, np.int64)
    KS_DOUBLE.get(device, "double_to_int_and_long")(x.size, x, out)
    d = x.astype(np.float64) * 1e10
    expected = np.stack([_saturated(d, np.int32).astype(np.int64), _saturated(d * 1e10, np.int64)], axis=1)
    assert_equal(out.reshape(x.size, 2), expected)


# Conversions in constant expressions stay constant (the CPU translation's int_arg is constexpr):
# an array's bound from a float constant, and a constant's value.
KS_CONSTANT_CONVERSIONS = KernelSet(["""
constant int BOUND = int(3.7f * 2.0f);
constant uint THIRD = uint(BOUND * 0.5f);
kernel void constant_float_conversions(const device float* x [[buffer(0)]], device int* out [[buffer(1)]],
                                       uint i [[thread_position_in_grid]]) {
    float a[BOUND];
    for (int k = 0; k < BOUND; ++k) a[k] = x[i] * float(k);
    static_assert(BOUND == 7 && THIRD == 3, "int(3.7f * 2.0f) is 7, uint(7 * 0.5f) 3");
    out[2 * i] = int(a[BOUND - 1]);
    out[2 * i + 1] = BOUND * 100 + int(THIRD);
}
"""])


def test_conversions_in_constant_expressions(device):
    x = np.array([1.5, -2.25, np.nan, 1e10], np.float32)
    out = np.zeros(2 * x.size, np.int32)
    KS_CONSTANT_CONVERSIONS.get(device, "constant_float_conversions")(x.size, x, out)
    expected = np.stack([_saturated(x * np.float32(6), np.int32), np.full(x.size, 703, np.int32)], axis=1)
    assert_equal(out.reshape(x.size, 2), expected)


# Compound assignments in constexpr functions stay constant expressions (the translation cannot
# tell `s += k` of two ints from `s += f` and writes both through int_ref, which must be constexpr:
# a program-scope constant from such a function was a load-time initialiser, refused).
KS_CONSTEXPR_COMPOUND = KernelSet(['''
constexpr int accumulate(int n) { int s = 0; for (int k = 0; k < n; ++k) { s += k; s *= 1; } s -= 1; s /= 2; return s; }
constexpr int halves(int n) { int s = 0; for (int k = 0; k < n; ++k) s += 0.75f; return s; }
constexpr long widened(int n) { long s = 1; for (int k = 0; k < n; ++k) s *= 2.5f; return s; }
constant int kAccumulated = accumulate(10);
constant int kHalves = halves(4);
constant long kWidened = widened(3);
kernel void constexpr_compound_assignments(device long* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    int a[kAccumulated];
    static_assert(kAccumulated == 22 && kHalves == 0 && kWidened == 12, "(45 - 1) / 2; int(0 + 0.75f) each time; long(1 * 2.5f), then 5, then 12");
    for (int k = 0; k < kAccumulated; ++k) a[k] = k;
    out[3 * i] = a[kAccumulated - 1] + long(i);
    out[3 * i + 1] = kHalves;
    out[3 * i + 2] = kWidened;
}
'''])


def test_compound_assignments_in_constexpr_functions(device):
    out = np.zeros(3 * 4, np.int64)
    KS_CONSTEXPR_COMPOUND.get(device, "constexpr_compound_assignments")(4, out)
    assert_equal(out.reshape(4, 3), np.array([[21 + i, 0, 12] for i in range(4)], np.int64))


KS_EXACT = KernelSet([
    """
kernel void rsqrt_of(const device float* x [[buffer(0)]], device float* out [[buffer(1)]],
                     uint i [[thread_position_in_grid]]) {
    out[2 * i] = rsqrt(x[i]);
    out[2 * i + 1] = precise::rsqrt(x[i]);
}
""",
    """
kernel void zeros_minmax(const device float4* x [[buffer(0)]], const device float4* y [[buffer(1)]],
                         device float4* out [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    float4 a = x[i], b = y[i];
    out[4 * i + 0] = fmin(a, b);
    out[4 * i + 1] = fmax(a, b);
    out[4 * i + 2] = float4(min(a.x, b.x), max(a.x, b.x), min(a.y, b.y), max(a.y, b.y));
    out[4 * i + 3] = float4(clamp(a.x, b.x, 1.0f), fmin3(a.x, b.x, 1.0f), fmax3(a.x, b.x, -1.0f), 0.0f);
}
""",
], fast_math=False)


def test_precise_rsqrt_is_correctly_rounded(device):
    """Without fast math rsqrt is correctly rounded (table 8.1): every 61st float of [1, 4) (both
    exponent parities), scaled by powers of 4 (exact: the inverse root scales by powers of 2)
    down to subnormals and up to 2^126. The reference rounds an 80-bit inverse root once to float."""
    base = np.arange(0x3F800000, 0x40800000, 61, dtype=np.uint32).view(np.float32)
    x = np.concatenate([base * np.float32(4.0) ** k for k in (-70, -64, -10, 0, 5, 62)]).astype(np.float32)
    assert np.all(x > 0) and np.all(np.isfinite(x))
    out = np.zeros(2 * x.size, np.float32)
    KS_EXACT.get(device, "rsqrt_of")(x.size, x, out)
    ref = (np.longdouble(1) / np.sqrt(x.astype(np.longdouble))).astype(np.float32)
    assert np.array_equal(ref, (1.0 / np.sqrt(x.astype(np.float64))).astype(np.float32))  # both roundings agree
    got = out.reshape(x.size, 2)
    for col, what in ((0, "rsqrt"), (1, "precise::rsqrt")):
        wrong = np.nonzero(got[:, col] != ref)[0]
        assert wrong.size == 0, f"{what} not correctly rounded for {wrong.size} of {x.size} inputs, e.g. " \
                                f"x={x[wrong[:3]].tolist()}: {got[wrong[:3], col].tolist()} != {ref[wrong[:3]].tolist()}"


KS_FAST_RSQRT = KernelSet(["""
kernel void rsqrt_fast_math(const device float* x [[buffer(0)]], device float* out [[buffer(1)]],
                     uint i [[thread_position_in_grid]]) {
    out[2 * i] = rsqrt(x[i]);
    out[2 * i + 1] = precise::rsqrt(x[i]);
}
"""], fast_math=True)


def test_rsqrt_under_fast_math(device):
    """In a fast-math library (the default) rsqrt may be off by more (the CPU takes 1/sqrt in float
    there, ten times faster than the correctly rounded form): within 2 ulp; precise::rsqrt stays
    correctly rounded."""
    x = np.arange(0x3F800000, 0x40800000, 977, dtype=np.uint32).view(np.float32)
    out = np.zeros(2 * x.size, np.float32)
    KS_FAST_RSQRT.get(device, "rsqrt_fast_math")(x.size, x, out)
    ref = (1.0 / np.sqrt(x.astype(np.float64))).astype(np.float32)
    got = out.reshape(x.size, 2)
    ulps = np.abs(got[:, 0].view(np.int32).astype(np.int64) - ref.view(np.int32).astype(np.int64))
    assert ulps.max() <= 2
    assert np.array_equal(got[:, 1], ref)


def test_fmin_fmax_of_signed_zeros_follow_the_specification(device):
    """fmin(x, y) "returns y if y < x, otherwise x", fmax "y if x < y, otherwise x" (table 6.4),
    so of +0.0 and -0.0 both return x (min/max of floats are fmin/fmax; clamp is fmin(fmax()))."""
    zeros = [(0.0, -0.0), (-0.0, 0.0), (0.0, 0.0), (-0.0, -0.0)]
    x = np.array([[a for a, _ in zeros]], np.float32)
    y = np.array([[b for _, b in zeros]], np.float32)
    out = np.full((4, 4), 9.0, np.float32)
    KS_EXACT.get(device, "zeros_minmax")(1, x, y, out)

    def fmin(a, b):
        return b if (b < a or np.isnan(a)) else a

    def fmax(a, b):
        return b if (a < b or np.isnan(a)) else a

    xa, ya = x[0], y[0]
    f32 = np.float32
    expected = np.array([
        [fmin(a, b) for a, b in zip(xa, ya)],
        [fmax(a, b) for a, b in zip(xa, ya)],
        [fmin(xa[0], ya[0]), fmax(xa[0], ya[0]), fmin(xa[1], ya[1]), fmax(xa[1], ya[1])],
        [fmin(fmax(xa[0], ya[0]), f32(1)), fmin(xa[0], fmin(ya[0], f32(1))), fmax(xa[0], fmax(ya[0], f32(-1))), 0.0],
    ], np.float32)
    # compare bits: the sign of a zero is the point
    assert_equal(out.view(np.uint32), expected.view(np.uint32),
                 err_msg=f"rows: fmin, fmax, min/max, clamp/fmin3/fmax3 of x={xa.tolist()}, y={ya.tolist()}")
