"""Classes of constructs behind the differential fuzzer's CUDA-only mismatches (docs/design.md,
"GPU campaigns so far"), each checked against NumPy on every device.

abs and absdiff of the most negative 8- and 16-bit integers: MSL wraps |-32768| to -32768 (a
short), so `short(absdiff(x, short(0))) >= 0` is false for x = -32768 (fuzz seed 1001, program
8, where CUDA took it as true).

SIMD-group functions after a loop whose trip count differs between lanes: MSL's SIMD-group is
whole again after structured control flow (Apple GPUs reconverge it); CUDA's warp need not, and
a simd_prefix_inclusive_sum there counted part of it (fuzz seed 1001, program 63).

A struct with half members assigned whole from a braced temporary (`out[i] = S{..., -0.5166h}`):
on CUDA the temporary was stored byte by byte and a computed half lost its low byte (fuzz seed
1001, program 501: -0.5166015625 stored as -0.5); the same byte of a half through as_type
(`char(as_type<int>(half2(v)))`, seed 3, program 263), and through a pointer made by a cast of
its address (`uchar(((thread ushort*)&h)[0])`: the H200 read 0xB5EC as 0xB500).

Negation of a char or short (fuzz seeds 7100-7114, 6 programs): MSL promotes `-x` to int and
wraps `short(-x)` of -32768 back to -32768; NVVM narrowed the negation to PTX's neg.s16 and
the H200 then took the result as +32768 (`int(short(-x))` 32768, `short(-x) < 1` false), the
class of abs above; the same for `-ushort2` converted to `short2`.

Conditionals in a lambda of a const member function (fuzz seeds 7102 and 7114, 3 programs):
`[&](...) { return false ? m1 : -0.125f; }` reading a member did not compile on CUDA (the
translation's cast of each branch to decltype((m1)), which NVRTC gives without the const).

`step(e, x) * -1.0f` (fuzz seed 7104, program 565): NVVM folds it into a select of -0.0 and
-1.0, which ptxas (NVRTC 13.5, sm_90) compiles as an integer select and I2F: +0.0 where MSL
gives -0.0.

`min3`/`max3` of a negated integer (fuzz seeds 7100, 7103, 7112, 7113): ptxas of CUDA 12 fuses the
two signed min or max into a 3-input VIMNMX3 and drops a negation of its first or second
operand: `min3(int(-uint(x)), y, z)` took x on the H200; hand-written `min(min(x, -y), z)` the same
(CUDA's global min(int, int) won the call; SASS of NVRTC 13.0.88).

A short negated by another spelling, and the int absdiff (fuzz seeds 9200-9205, 4 programs):
ptxas of CUDA 12.9/13.0 takes a `neg.s16` result as still sign-extended and an `abs.s32` result
as never negative. `-static_cast<short>(x)`, `short(0) - x` and `ushort3(65535) * v` (a multiply
by -1 once folded) of -32768 read as +32768; `int(absdiff(INT_MIN, 0)) % d` lost its sign.

A SIMD-group shuffle of a value narrowed from a wider one that is still used (fuzz seed 27101,
program 714): `out[i] = simd_shuffle_xor(short(x[i]), 1); wide[i] = x[i] | 1` with x a long
stored bits 16-31 of x[i] as zeros on the H200. The prelude packed the short into a zeroed
32-bit word for __shfl_sync, and ptxas (sm_90) built that pack in place over the register that
still held x[i]'s low half (its SASS: PRMT R2, R2, 0x5410, RZ). The same pack in as_type
(fuzz seed 28101, program 28): `as_type<uint>(short2(v, short(-14713)))` of a long v put -14713
into bits 16-31 of v itself, and `v < 1` was then false for v = 0. Shuffles and as_type now
make the words of 1- and 2-byte integers by widening each part."""

from __future__ import annotations

import numpy as np
import pytest

from mcconf import KernelSet, assert_equal, written_for_32_lanes

KS = KernelSet([
    """
kernel void small_abs(const device short* x [[buffer(0)]], const device short* y [[buffer(1)]],
                      device int* out [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    short v = x[i];
    char c = char(v >> 8);
    out[10 * i + 0] = (short(absdiff(v, short(0))) >= short(0)) ? 1 : 0;
    out[10 * i + 1] = abs(v) >= short(0) ? 1 : 0;
    out[10 * i + 2] = short(abs(v));
    out[10 * i + 3] = absdiff(v, short(0));
    out[10 * i + 4] = (short(absdiff(v, y[i])) >= short(0)) ? 1 : 0;
    out[10 * i + 5] = abs(c) >= char(0) ? 1 : 0;
    out[10 * i + 6] = (char(absdiff(c, char(0))) >= char(0)) ? 1 : 0;
    out[10 * i + 7] = int(abs(short2(v, short(-v))).x);
    out[10 * i + 8] = absdiff(v, short(y[i] - short(1)));
    out[10 * i + 9] = int(abs(c));
}
""",
    """
uint lane_sum(uint lane, uint n) {
    uint acc = 0;
    for (uint i = lane; i < n; i += 32) acc += i;  // lanes below n % 32 run once more
    return simd_sum(acc);
}
kernel void simd_after_divergence(device uint* out [[buffer(0)]], device atomic_uint* count [[buffer(1)]],
                                  constant uint& n [[buffer(2)]], uint lane [[thread_index_in_simdgroup]],
                                  uint gid [[thread_position_in_grid]]) {
    uint acc = 0;
    for (uint i = lane; i < n; i += 32) acc += i;
    out[8 * gid + 0] = simd_prefix_inclusive_sum(1u);
    out[8 * gid + 1] = simd_sum(acc);
    for (uint k = 0; k < (lane / 3u) & 7u; ++k) {
        if ((gid ^ k) & 1u) atomic_fetch_add_explicit(count, 1u, memory_order_relaxed);
        else acc += k;
    }
    out[8 * gid + 2] = simd_prefix_exclusive_sum(lane);
    out[8 * gid + 3] = simd_shuffle(lane * 3u, ushort(31 - lane));
    out[8 * gid + 4] = lane_sum(lane, n);
    uint total = 0;
    for (uint r = 0; r < 3; ++r) {  // the same count in every lane; a divergent loop inside
        uint part = 0;
        for (uint i = lane; i < n + r; i += 32) part += 1u;
        total += simd_sum(part);
    }
    out[8 * gid + 5] = total;
    out[8 * gid + 6] = uint(simd_all(lane < 32u)) + 2u * uint(simd_any(lane == 31u));
    out[8 * gid + 7] = simd_max(acc);
}
""",
    """
struct Mixed { int a; half h; int b; half g; };
struct Pair { half x; float y; };
Pair pair_of(half x, float y) { return Pair{x, y}; }
kernel void struct_temporaries(const device half* in [[buffer(0)]], device Mixed* m [[buffer(1)]],
                               device Pair* p [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    m[2 * i] = Mixed{int(i), in[i], -int(i), (-0.5166015625h)};
    if (i % 2 == 0) m[2 * i + 1] = Mixed{7, -in[i], 8, in[i] * 2.0h};
    else m[2 * i + 1] = Mixed{9, in[i] + 1.0h, 10, half(float(in[i]) * 0.25f)};
    p[i] = pair_of(-in[i], float(in[i]));
}
""",
    """
kernel void half_bytes(const device int* in [[buffer(0)]], device char* lo [[buffer(1)]],
                       device uchar* bytes [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    threadgroup char staged[64];
    half2 h = half2(int2(in[i], in[i] + 1));
    staged[i % 64] = char(as_type<int>(h));
    lo[i] = staged[i % 64];
    half hn = -half(float(in[i]) * 0.37f);
    bytes[2 * i] = uchar(as_type<ushort>(hn));
    bytes[2 * i + 1] = uchar(as_type<ushort>(hn) >> 8);
}
""",
    """
kernel void half_bytes_through_pointers(const device int* in [[buffer(0)]], device uchar* bytes [[buffer(1)]],
                                        device ushort* words [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    half h = -half(float(in[i]) * 0.37f);
    bytes[4 * i] = uchar(((thread ushort*)&h)[0]);
    bytes[4 * i + 1] = ((thread uchar*)&h)[1];
    half2 v = half2(h * 2.0h, h + 1.0h);
    thread const uchar* b = reinterpret_cast<thread const uchar*>(&v);
    bytes[4 * i + 2] = b[0];
    bytes[4 * i + 3] = b[3];
    words[i] = uchar(reinterpret_cast<thread ushort*>(&v)[1]) | (ushort(((thread char*)&v)[1]) << 8);
}
""",
    """
kernel void small_negations(const device short* x [[buffer(0)]], device int* out [[buffer(1)]],
                            uint i [[thread_position_in_grid]]) {
    short v = x[i];
    char c = char(v >> 8);
    ushort u = ushort(v);
    out[12 * i + 0] = int(short(-v));
    out[12 * i + 1] = (short(-v) < short(1)) ? 2 : 3;
    out[12 * i + 2] = short(-x[i]) % short(7);
    out[12 * i + 3] = int(char(-c));
    out[12 * i + 4] = (char(-c) < char(0)) ? 1 : 0;
    out[12 * i + 5] = int(short2(-ushort2(u, ushort(1))).x);
    out[12 * i + 6] = int(short(absdiff(short(-v), short(0))));
    out[12 * i + 7] = -v;
    out[12 * i + 8] = int(short(i % 2 ? -v : v));
    out[12 * i + 9] = int(short(-(v)) >> 4);
    out[12 * i + 10] = int(-short2(v, v).y < 0);
    out[12 * i + 11] = int(ushort(-u));
}
""",
    """
struct Scaled {
    int m0;
    float m1;
    int operator()(int p) const {
        auto f = [&](int q) { return int((false ? m1 : (-0.125f)) * 8.0f) + (q > 0 ? m0 : q); };
        auto g = [&](uint q) { return absdiff(q | 1u, ((p > 0 ? 4294967295u : uint(m0)) << 21u) >> 20u); };
        return f(p) + int(g(uint(p)));
    }
};
kernel void lambda_conditionals(const device int* x [[buffer(0)]], device int* out [[buffer(1)]],
                                uint i [[thread_position_in_grid]]) {
    out[i] = Scaled{x[i] * 2, float(x[i])}(x[i]);
}
""",
    """
kernel void negated_steps(const device float* x [[buffer(0)]], const device float* y [[buffer(1)]],
                          device float* f [[buffer(2)]], device half* h [[buffer(3)]],
                          uint i [[thread_position_in_grid]]) {
    f[3 * i + 0] = step(x[i], y[i]) * (-1.0f);
    f[3 * i + 1] = -step(x[i], y[i]);
    f[3 * i + 2] = step(x[i], y[i]) * (-4.0f);
    h[2 * i + 0] = step(half(x[i]), half(y[i])) * (-1.0h);
    h[2 * i + 1] = -step(half(x[i]), half(y[i]));
}
""",
    """
kernel void min3_of_negations(const device int* x [[buffer(0)]], const device int* y [[buffer(1)]],
                              const device int* z [[buffer(2)]], device int* o [[buffer(3)]],
                              device int4* o4 [[buffer(4)]], device short* os [[buffer(5)]],
                              device uint* ou [[buffer(6)]], uint i [[thread_position_in_grid]]) {
    o[3 * i + 0] = min3(x[i], int(-uint(y[i])), z[i]);
    o[3 * i + 1] = max3(int(-uint(x[i])), y[i], z[i]);
    o[3 * i + 2] = min3(-y[i], x[i], z[i]);
    o4[i] = min3(int4(y[i], x[i], 2, z[i]).gabb, int4(uint4(0u) - uint4(uint(y[i]))), int4(z[i]));
    os[i] = max3(short(x[i]), short(-short(y[i])), short(z[i]));
    ou[i] = min3(uint(x[i]), 0u - uint(y[i]), uint(z[i]));
}
""",
    """
kernel void min_of_negations(const device int* x [[buffer(0)]], const device int* y [[buffer(1)]],
                             const device int* z [[buffer(2)]], device int* o [[buffer(3)]],
                             device int4* o4 [[buffer(4)]], device short* os [[buffer(5)]],
                             uint i [[thread_position_in_grid]]) {
    o[5 * i + 0] = min(min(x[i], -y[i]), z[i]);
    o[5 * i + 1] = max(max(-x[i], y[i]), z[i]);
    o[5 * i + 2] = min(-y[i], min(x[i], z[i]));
    o[5 * i + 3] = max(max(x[i], int(0u - uint(y[i]))), z[i]);
    o[5 * i + 4] = clamp(-x[i], y[i], max(y[i], z[i]));
    o4[i] = min(min(int4(x[i]), -int4(y[i], z[i], x[i], 1)), int4(z[i]));
    os[i] = max(max(short(-short(x[i])), short(y[i])), short(z[i]));
}
""",
    """
kernel void narrow_negations(const device short* x [[buffer(0)]], const device int* w [[buffer(1)]],
                             const device int* d [[buffer(2)]], device int* out [[buffer(3)]],
                             uint i [[thread_position_in_grid]]) {
    short v = x[i];
    char c = char(v >> 8);
    ushort u = ushort(v);
    int k = d[i];
    out[16 * i + 0] = short(short(0) - v) / k;
    out[16 * i + 1] = int(absdiff(short(3), short((short(0) - v))));
    out[16 * i + 2] = hadd(short(0), short(-static_cast<short>(v)));
    out[16 * i + 3] = int(short(-as_type<short>(u))) / k;
    out[16 * i + 4] = short3(ushort3(ushort(65535)) * ushort3(u)).z / k;
    out[16 * i + 5] = short3(short3(0) - short3(v)).y / k;
    out[16 * i + 6] = short((short)0 - v) < short(1) ? 1 : 0;
    out[16 * i + 7] = int(absdiff(w[i], 0)) % k;
    out[16 * i + 8] = int(absdiff(w[i], 0)) < 0 ? 1 : 0;
    out[16 * i + 9] = int(absdiff(w[i], 5));
    out[16 * i + 10] = int(absdiff(5, w[i]));
    ushort2 p = ushort2(u, u) * ushort2(u, ushort(65535));
    out[16 * i + 11] = p.x;
    out[16 * i + 12] = p.y;
    out[16 * i + 13] = short2(short2(v, short(7)) * short2(v, v)).x / k;
    out[16 * i + 14] = char(char(0) - c) / k;
    out[16 * i + 15] = char2(uchar2(uchar(255)) * uchar2(uchar(c))).x / k;
}
""",
    """
kernel void narrow_conversions(const device short* x [[buffer(0)]], const device int* d [[buffer(1)]],
                               device int* out [[buffer(2)]], uint i [[thread_position_in_grid]],
                               uint n [[threads_per_grid]]) {
    short v = x[i];
    int k = d[i];
    short z = short(k & 0);
    char c = char(v >> 8);
    out[8 * i + 0] = short(v * short(-1)) / k;
    out[8 * i + 1] = short(v / short(-1)) / k;
    out[8 * i + 2] = short(z - v) / k;
    out[8 * i + 3] = (short)(v * -1) / k;
    out[8 * i + 4] = static_cast<short>(z - v) < short(1) ? 1 : 0;
    out[8 * i + 5] = char(c * char(-1)) / k;
    out[8 * i + 6] = int(ushort(v * short(-1))) / k;
    out[8 * i + 7] = int(short(long(v) * -1l)) / k;
    out[8 * n + 2 * i] = short3(v * -1).y / k;
    out[8 * n + 2 * i + 1] = short2(v, z - v).y / k;
}
""",
])



# (kernel suffix, MSL type, the value made from the long x, NumPy's value of it)
NARROWED = [
    ("short", "short", "short(x)", lambda x: x.astype(np.int16)),
    ("ushort", "ushort", "ushort(x)", lambda x: x.astype(np.uint16)),
    ("char", "char", "char(x)", lambda x: x.astype(np.int8)),
    ("uchar", "uchar", "(uchar)(x >> 3)", lambda x: (x >> 3).astype(np.uint8)),
    ("bool", "bool", "bool(x & 1l)", lambda x: (x & 1) != 0),
    ("half", "half", "as_type<half>(ushort(x))", lambda x: x.astype(np.uint16).view(np.float16)),
    ("char2", "char2", "char2(char(x), char(x >> 8))",
     lambda x: np.stack([x.astype(np.int8), (x >> 8).astype(np.int8)], axis=1)),
    ("short3", "short3", "short3(short(x), short(x >> 16), short(x >> 40))",
     lambda x: np.stack([x.astype(np.int16), (x >> 16).astype(np.int16), (x >> 40).astype(np.int16),
                         np.zeros(len(x), np.int16)], axis=1)),
]
AS_TYPE_KS = KernelSet([
    """
kernel void as_type_of_narrowed(const device long* in [[buffer(0)]], device uint* words [[buffer(1)]],
                                device int* below_one [[buffer(2)]], device long* wide [[buffer(3)]],
                                uint gid [[thread_position_in_grid]]) {
    long v = in[gid];
    words[3 * gid + 0] = as_type<uint>(short2(v, short(-14713)));
    words[3 * gid + 1] = as_type<uint>(uchar4(v, uchar(5), v >> 8, uchar(253)));
    words[3 * gid + 2] = as_type<uint>(ushort2(ushort(7), v >> 3));
    below_one[gid] = int(v < 1);
    wide[gid] = v;
}
""",
])
NARROW_KS = KernelSet([f"""
kernel void shuffle_narrowed_{name}(const device long* in [[buffer(0)]], device {t}* narrow [[buffer(1)]],
                                    device long* wide [[buffer(2)]], uint gid [[thread_position_in_grid]]) {{
    long x = in[gid];
    narrow[gid] = simd_shuffle_xor({make}, ushort(1));
    wide[gid] = x | 1l;
}}
""" for name, t, make, _ in NARROWED])

def test_abs_of_the_most_negative_small_integers(device):
    x = np.array([-32768, -32767, -5, 0, 7, 32767, -256, -32513, 1, -1], np.int16)
    y = np.zeros_like(x)
    out = np.zeros((len(x), 10), np.int32)
    KS.get(device, "small_abs")(len(x), x, y, out)
    w = x.astype(np.int64)
    c = (x >> 8).astype(np.int8)
    wrap16 = np.abs(w).astype(np.uint16).view(np.int16).astype(np.int64)  # |x| as a short: -32768 stays
    wrap8 = np.abs(c.astype(np.int64)).astype(np.uint8).view(np.int8).astype(np.int64)
    exp = np.stack([
        wrap16 >= 0,
        wrap16 >= 0,
        wrap16,
        np.abs(w),                               # absdiff: the unsigned |x - 0|
        wrap16 >= 0,
        wrap8 >= 0,
        wrap8 >= 0,
        wrap16,
        np.abs(w + 1),                           # |x - (0 - 1)| as a ushort
        wrap8,
    ], axis=1).astype(np.int32)
    assert_equal(out, exp)


def test_simd_group_functions_after_divergent_loops(device):
    groups, n = 2, 45  # 45 = 32 + 13: lanes 0-12 run the strided loops once more
    out = np.zeros((32 * groups, 8), np.uint32)
    count = np.zeros(1, np.uint32)
    k = written_for_32_lanes(KS.get(device, "simd_after_divergence"))  # lanes, strides and model: 32 wide
    k(32 * groups, out, count, np.uint32(n), threadgroup=32 * groups)
    lane = np.arange(32 * groups) % 32
    acc = np.array([sum(range(l, n, 32)) for l in range(32)], np.int64)
    # acc then grows by the k of the second loop's lanes that took the else branch
    gid = np.arange(32 * groups)
    acc_after = np.array([acc[g % 32] + sum(k for k in range(((g % 32) // 3) & 7) if not ((g ^ k) & 1))
                          for g in gid])
    exp = np.zeros_like(out, np.int64)
    exp[:, 0] = lane + 1
    exp[:, 1] = acc.sum()
    exp[:, 2] = lane * (lane - 1) // 2
    exp[:, 3] = (31 - lane) * 3
    exp[:, 4] = acc.sum()
    exp[:, 5] = n + (n + 1) + (n + 2)
    exp[:, 6] = 3
    exp[:, 7] = [acc_after[(g // 32) * 32:(g // 32) * 32 + 32].max() for g in gid]
    assert_equal(out, exp.astype(np.uint32))


MIXED = np.dtype([("a", "<i4"), ("h", "<f2"), ("_1", "<u2"), ("b", "<i4"), ("g", "<f2"), ("_2", "<u2")])
PAIR = np.dtype([("x", "<f2"), ("_", "<u2"), ("y", "<f4")])


def test_struct_temporaries_with_half_members(device):
    h = np.array([1.5, -3.623046875, 0.5166015625, 12.0, -0.0009765625, 1000.0, 0.333251953125, -7.75],
                 np.float16)
    n = len(h)
    m = np.zeros(2 * n, MIXED)
    p = np.zeros(n, PAIR)
    KS.get(device, "struct_temporaries")(n, h, m, p)
    i = np.arange(n)
    assert_equal(m["a"][0::2], i)
    assert_equal(m["h"][0::2].view(np.uint16), h.view(np.uint16))
    assert_equal(m["b"][0::2], -i)
    assert_equal(m["g"][0::2].view(np.uint16), np.full(n, np.float16(-0.5166015625).view(np.uint16)))
    even = i % 2 == 0
    assert_equal(m["a"][1::2], np.where(even, 7, 9))
    assert_equal(m["b"][1::2], np.where(even, 8, 10))
    h2 = np.where(even, -h, (h.astype(np.float32) + 1).astype(np.float16))
    g2 = np.where(even, (h.astype(np.float32) * 2).astype(np.float16), (h.astype(np.float32) * 0.25).astype(np.float16))
    assert_equal(m["h"][1::2].view(np.uint16), h2.astype(np.float16).view(np.uint16))
    assert_equal(m["g"][1::2].view(np.uint16), g2.astype(np.float16).view(np.uint16))
    assert_equal(p["x"].view(np.uint16), (-h).view(np.uint16))
    assert_equal(p["y"], h.astype(np.float32))


def test_bytes_of_computed_halves(device):
    v = np.array([1, 3, 7, 33, 101, 1023, 2049, 30001, -5, -77, 12345, 999], np.int32)
    n = len(v)
    lo = np.zeros(n, np.int8)
    out = np.zeros(2 * n, np.uint8)
    KS.get(device, "half_bytes")(n, v, lo, out, threadgroup=n)
    hx = v.astype(np.float16).view(np.uint16)
    assert_equal(lo, (hx & 0xFF).astype(np.uint8).view(np.int8))
    hn = -(v.astype(np.float32) * np.float32(0.37)).astype(np.float16)
    assert_equal(out, hn.view(np.uint8))


def test_bytes_of_computed_halves_through_cast_pointers(device):
    v = np.array([1, 3, 7, 33, 101, 1023, 2049, 30001, -5, -77, 12345, 999], np.int32)
    n = len(v)
    out = np.zeros((n, 4), np.uint8)
    words = np.zeros(n, np.uint16)
    KS.get(device, "half_bytes_through_pointers")(n, v, out, words)
    h = -(v.astype(np.float32) * np.float32(0.37)).astype(np.float16)
    hb = h.view(np.uint16)
    x = (h.astype(np.float32) * 2).astype(np.float16).view(np.uint16)
    y = (h.astype(np.float32) + 1).astype(np.float16).view(np.uint16)
    assert_equal(out, np.stack([hb & 0xFF, hb >> 8, x & 0xFF, y >> 8], axis=1).astype(np.uint8))
    assert_equal(words, ((y & 0xFF) | ((x >> 8) << 8)).astype(np.uint16))


def _wrap(v, bits):
    """v (int64) converted to a signed integer of `bits` bits, as C++ and MSL convert."""
    dt = {8: (np.uint8, np.int8), 16: (np.uint16, np.int16), 32: (np.uint32, np.int32)}[bits]
    return (np.asarray(v, np.int64) & ((1 << bits) - 1)).astype(dt[0]).view(dt[1]).astype(np.int64)


def test_negation_of_small_integers(device):
    x = np.array([-32768, -32767, -5, 0, 7, 32767, -256, -32513, 1, -1, -32640, 128], np.int16)
    out = np.zeros((len(x), 12), np.int32)
    KS.get(device, "small_negations")(len(x), x, out)
    w = x.astype(np.int64)
    c = (x >> 8).astype(np.int8).astype(np.int64)
    u = x.view(np.uint16).astype(np.int64)
    neg = _wrap(-w, 16)  # short(-x): -(-32768) wraps to -32768
    i = np.arange(len(x))
    exp = np.stack([
        neg,
        np.where(neg < 1, 2, 3),
        np.fmod(neg, 7),                   # C's %: the sign of the dividend
        _wrap(-c, 8),
        _wrap(-c, 8) < 0,
        _wrap(-u, 16),                     # -ushort2 stays a ushort2, then a short2
        _wrap(np.abs(neg), 16),            # absdiff(short(-x), 0): a ushort, made a short
        -w,                                # -x alone is an int: 32768
        np.where(i % 2 == 1, neg, w),
        neg >> 4,
        -w < 0,                            # -short2(...).y: the component promotes to int
        (-u) & 0xFFFF,
    ], axis=1)
    assert_equal(out, exp.astype(np.int32))


def test_conditionals_in_lambdas_of_const_member_functions(device):
    x = np.array([0, 1, -1, 5, -7, 1000, -2048, 123456], np.int32)
    out = np.zeros_like(x)
    KS.get(device, "lambda_conditionals")(len(x), x, out)
    p = x.astype(np.int64)
    f = -1 + np.where(p > 0, 2 * p, p)                # int(-0.125f * 8) = -1, then q > 0 ? m0 : q
    top = np.where(p > 0, 0xFFFFFFFF, (2 * p) & 0xFFFFFFFF)
    shifted = ((top << 21) & 0xFFFFFFFF) >> 20
    g = np.abs(((p & 0xFFFFFFFF) | 1) - shifted)      # absdiff of uints
    assert_equal(out, _wrap(f + g, 32).astype(np.int32))


def test_negated_steps_keep_the_sign_of_zero(device):
    x = np.array([0.0, 1.0, -1.0, 2.5, 3.0, -0.0, 7.0, 0.5], np.float32)
    y = np.array([1.0, 0.0, -1.0, 2.0, 3.5, 0.0, -7.0, 0.25], np.float32)
    f = np.zeros((len(x), 3), np.float32)
    h = np.zeros((len(x), 2), np.float16)
    KS.get(device, "negated_steps")(len(x), x, y, f, h)
    s = np.where(y < x, np.float32(0.0), np.float32(1.0))  # step(edge, x): 0 below the edge
    exp = np.stack([s * np.float32(-1.0), -s, s * np.float32(-4.0)], axis=1).astype(np.float32)
    assert_equal(f.view(np.uint32), exp.view(np.uint32))  # -0.0 and +0.0 differ here
    sh = s.astype(np.float16)
    assert_equal(h.view(np.uint16), np.stack([sh * np.float16(-1.0), -sh], axis=1).view(np.uint16))


# Operands of min/max of negations: INT_MIN + 1 and 2^30 beside small values of both signs.
NEGATION_INPUTS = (np.array([5, -5, 0, 1073741824, -2147483647, 7, 100, -1], np.int32),
                   np.array([-5, 1073741824, 3, -7, 1, -2147483647, 0, 2], np.int32),
                   np.array([-1, -1, 2, 8, 0, 9, -100, 3], np.int32))


def test_min3_and_max3_of_negations(device):
    x, y, z = NEGATION_INPUTS
    n = len(x)
    o = np.zeros((n, 3), np.int32)
    o4 = np.zeros((n, 4), np.int32)
    os_ = np.zeros(n, np.int16)
    ou = np.zeros(n, np.uint32)
    KS.get(device, "min3_of_negations")(n, x, y, z, o, o4, os_, ou)
    X, Y, Z = (a.astype(np.int64) for a in (x, y, z))
    ny = _wrap(-Y, 32)
    exp = np.stack([np.minimum(np.minimum(X, ny), Z), np.maximum(np.maximum(_wrap(-X, 32), Y), Z),
                    np.minimum(np.minimum(ny, X), Z)], axis=1)
    assert_equal(o, exp.astype(np.int32))
    first = np.stack([X, Z, np.full(n, 2), np.full(n, 2)], axis=1)  # int4(y, x, 2, z).gabb
    exp4 = np.minimum(np.minimum(first, ny[:, None]), Z[:, None])
    assert_equal(o4, exp4.astype(np.int32))
    s = lambda v: _wrap(v, 16)
    assert_equal(os_, np.maximum(np.maximum(s(X), s(-s(Y))), s(Z)).astype(np.int16))
    u = lambda v: np.asarray(v, np.int64) & 0xFFFFFFFF
    assert_equal(ou, np.minimum(np.minimum(u(X), u(-Y)), u(Z)).astype(np.uint32))


def test_min_and_max_of_negations(device):
    """Hand-written `min(min(x, -y), z)`: CUDA's global min(int, int) won the call, and ptxas of
    CUDA 13.0 (the H200's NVRTC 13.0.88) fused the two signed mins into a VIMNMX3 without the
    negation of y (its SASS), as it did min3's; metal::min now compares biased unsigned there."""
    x, y, z = NEGATION_INPUTS
    n = len(x)
    o = np.zeros((n, 5), np.int32)
    o4 = np.zeros((n, 4), np.int32)
    os_ = np.zeros(n, np.int16)
    KS.get(device, "min_of_negations")(n, x, y, z, o, o4, os_)
    X, Y, Z = (a.astype(np.int64) for a in (x, y, z))
    exp = np.stack([np.minimum(np.minimum(X, -Y), Z), np.maximum(np.maximum(-X, Y), Z), np.minimum(-Y, np.minimum(X, Z)),
                    np.maximum(np.maximum(X, _wrap(-Y, 32)), Z), np.clip(-X, Y, np.maximum(Y, Z))], axis=1)
    assert_equal(o, exp.astype(np.int32))
    negs = -np.stack([Y, Z, X, np.ones(n, np.int64)], axis=1)
    assert_equal(o4, np.minimum(np.minimum(X[:, None], negs), Z[:, None]).astype(np.int32))
    s = lambda v: _wrap(v, 16)
    assert_equal(os_, np.maximum(np.maximum(s(-s(X)), s(Y)), s(Z)).astype(np.int16))


def _cdiv(a, b):
    """C's integer division: the quotient rounded toward zero."""
    q = np.abs(a) // np.abs(b)
    return np.where((a < 0) != (b < 0), -q, q)


def test_narrow_negations_and_int_absdiff(device):
    x = np.array([-32768, -32767, -5, 0, 7, 32767, -256, -32513, 1, -1, -32640, 16384], np.int16)
    w = np.array([-2147483648, 2147483647, -1, 0, 7, -7, -2147483643, 5, 1 << 30, -(1 << 30), 6, -2147483647],
                 np.int32)
    d = np.array([1, 3, 7, 2, 5, 1, 9, 4, 3, 1, 6, 2], np.int32)
    out = np.zeros((len(x), 16), np.int32)
    KS.get(device, "narrow_negations")(len(x), x, w, d, out)
    v, k, W = x.astype(np.int64), d.astype(np.int64), w.astype(np.int64)
    c = (x >> 8).astype(np.int8).astype(np.int64)
    u = x.view(np.uint16).astype(np.int64)
    neg = _wrap(-v, 16)  # short(0) - v as a short: -(-32768) wraps to -32768
    mag = _wrap(np.abs(W), 32)  # absdiff(w, 0) as an int: 2^31 is INT_MIN
    exp = np.stack([
        _cdiv(neg, k),
        np.abs(3 - neg),
        neg >> 1,                          # hadd(0, y): (0 + y) >> 1
        _cdiv(neg, k),
        _cdiv(neg, k),                     # 65535 * u wraps to -u in a ushort
        _cdiv(neg, k),
        neg < 1,
        mag - _cdiv(mag, k) * k,           # C's %: the sign of the dividend
        mag < 0,
        _wrap(np.abs(W - 5), 32),
        _wrap(np.abs(W - 5), 32),
        (u * u) & 0xFFFF,                  # ushort2 products wrap in 16 bits
        (-u) & 0xFFFF,
        _cdiv(_wrap(v * v, 16), k),
        _cdiv(_wrap(-c, 8), k),
        _cdiv(_wrap(-c, 8), k),            # 255 * c wraps to -c in a uchar
    ], axis=1)
    assert_equal(out, exp.astype(np.int32))


def test_narrow_conversions_of_negations(device):
    x = np.array([-32768, -32767, -5, 0, 7, 32767, -256, -32513, 1, -1, -32640, 16384], np.int16)
    d = np.array([1, 3, 7, 2, 5, 1, 9, 4, 3, 1, 6, 2], np.int32)
    out = np.zeros(10 * len(x), np.int32)
    KS.get(device, "narrow_conversions")(len(x), x, d, out)
    vectors = out[8 * len(x):].reshape(len(x), 2)
    out = out[:8 * len(x)].reshape(len(x), 8)
    v, k = x.astype(np.int64), d.astype(np.int64)
    c = (x >> 8).astype(np.int8).astype(np.int64)
    neg = _wrap(-v, 16)
    exp = np.stack([
        _cdiv(neg, k), _cdiv(neg, k), _cdiv(neg, k), _cdiv(neg, k),
        neg < 1,
        _cdiv(_wrap(-c, 8), k),
        _cdiv((-v) & 0xFFFF, k),           # a ushort: 32768 for -(-32768)
        _cdiv(neg, k),
    ], axis=1)
    assert_equal(out, exp.astype(np.int32))
    assert_equal(vectors, np.stack([_cdiv(neg, k), _cdiv(neg, k)], axis=1).astype(np.int32))  # short3(v * -1), short2(v, z - v)



@pytest.mark.parametrize("name", [n for n, *_ in NARROWED])
def test_shuffles_of_values_narrowed_from_wider_ones(device, name):
    _, _, _, numpy_value = next(r for r in NARROWED if r[0] == name)
    rng = np.random.default_rng(27101)
    x = rng.integers(np.iinfo(np.int64).min, np.iinfo(np.int64).max, 64, dtype=np.int64, endpoint=True)
    want = numpy_value(x)
    narrow = np.zeros_like(want)
    wide = np.zeros(len(x), np.int64)
    NARROW_KS.get(device, f"shuffle_narrowed_{name}")(len(x), x, narrow, wide, threadgroup=32)
    assert_equal(wide, x | 1)
    want = want[np.arange(len(x)) ^ 1]  # lane i reads lane i ^ 1
    if name == "short3":  # a short3 takes 8 bytes: the 4th element is padding, not compared
        narrow, want = narrow[:, :3], want[:, :3]
    if name == "half":  # NaN payloads compared bit for bit
        narrow, want = narrow.view(np.uint16), want.view(np.uint16)
    assert_equal(narrow, want)


def test_as_type_of_values_narrowed_from_wider_ones(device):
    rng = np.random.default_rng(28101)
    x = np.concatenate([np.zeros(8, np.int64), np.array([1, -1, 65535, 65536, -65536, 2**40], np.int64),
                        rng.integers(-2**62, 2**62, 50, dtype=np.int64)])
    words = np.zeros(3 * len(x), np.uint32)
    below = np.zeros(len(x), np.int32)
    wide = np.zeros(len(x), np.int64)
    AS_TYPE_KS.get(device, "as_type_of_narrowed")(len(x), x, words, below, wide)
    assert_equal(wide, x)
    assert_equal(below, (x < 1).astype(np.int32))
    u = x.view(np.uint64)
    lo16, lo8 = (u & 0xFFFF).astype(np.uint32), (u & 0xFF).astype(np.uint32)
    want = np.stack([
        lo16 | (np.uint32(np.uint16(np.int16(-14713))) << np.uint32(16)),
        lo8 | (np.uint32(5) << np.uint32(8)) | (((u >> np.uint64(8)) & np.uint64(0xFF)).astype(np.uint32) << np.uint32(16))
        | (np.uint32(253) << np.uint32(24)),
        np.uint32(7) | (((u >> np.uint64(3)) & np.uint64(0xFFFF)).astype(np.uint32) << np.uint32(16)),
    ], axis=1)
    assert_equal(words.reshape(len(x), 3), want)


# SIMD-group reductions of 8- and 16-bit vectors (fuzz seed 29209 #454 on an H100: a
# simd_product of a short4 whose last element, 57 in every lane, gave 57^24 where 32 lanes give
# 57^32, every element of sout wrong): products, sums and maxima wrap as the element type does.
SMALL_REDUCE_KS = KernelSet(["""
kernel void small_int_reductions(device const short* in0 [[buffer(0)]], device int* out [[buffer(1)]],
                                 uint gid [[thread_position_in_grid]]) {
    const short4 p = simd_product(short4(gid, in0[(255u - (gid % 256u))], in0[((gid ^ 2u) % 256u)], uchar(57)));
    const short4 s = simd_sum(short4(in0[gid], short(gid), short(3), uchar(200)));
    const ushort2 m = simd_max(ushort2(ushort(in0[gid]), ushort(gid * 977u)));
    const char4 c = simd_product(char4(char(in0[gid]), char(3), char(gid | 1u), char(-1)));
    for (int k = 0; k < 4; ++k) {
        out[14 * gid + k] = p[k];
        out[14 * gid + 4 + k] = s[k];
        out[14 * gid + 10 + k] = c[k];
    }
    out[14 * gid + 8] = m.x;
    out[14 * gid + 9] = m.y;
}
"""])


def _wrapped_product(values, bits):
    r = 1
    for v in values:
        r = (r * int(v)) & ((1 << bits) - 1)
    return int(_wrap(r, bits))


def test_reductions_of_small_integer_vectors(device):
    n = 256
    x = np.random.default_rng(29209).integers(-32768, 32768, n).astype(np.int16)
    out = np.zeros(14 * n, np.int32)
    kern = SMALL_REDUCE_KS.get(device, "small_int_reductions")
    kern(n, x, out, threadgroup=128)
    w = kern.thread_execution_width
    gid = np.arange(n, dtype=np.int64)
    xi = x.astype(np.int64)
    columns = {
        "p": np.stack([gid, xi[255 - gid % 256], xi[(gid ^ 2) % 256], np.full(n, 57)], axis=1),
        "s": np.stack([xi, _wrap(gid, 16), np.full(n, 3), np.full(n, 200)], axis=1),
        "m": np.stack([xi & 0xFFFF, (gid * 977) & 0xFFFF], axis=1),
        "c": np.stack([_wrap(xi, 8), np.full(n, 3), _wrap(gid | 1, 8), np.full(n, -1)], axis=1),
    }
    want = np.zeros((n, 14), np.int64)
    for g in range(0, n, w):
        rows = slice(g, g + w)
        for k in range(4):
            want[rows, k] = _wrapped_product(columns["p"][rows, k], 16)
            want[rows, 4 + k] = _wrap(columns["s"][rows, k].sum(), 16)
            want[rows, 10 + k] = _wrapped_product(columns["c"][rows, k], 8)
        want[rows, 8:10] = columns["m"][rows].max(axis=0)
    assert_equal(out.reshape(n, 14), want.astype(np.int32))
