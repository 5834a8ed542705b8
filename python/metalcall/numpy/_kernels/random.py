"""Counter-based random numbers: Philox4x32-10 (Salmon et al., SC'11) as MSL.

Element e of a call draws from the Philox block at counter + e // per_block (a 64-bit counter
in the first two words of the 4x32 counter, the 64-bit seed as the key); blocks_used() says how
far a call advances the counter. Uniforms and integers are exact integer arithmetic, so they
are bit-identical on every backend; normals go through log, sqrt, cos and sin, so backends may
differ in the last bits of those functions.

Layout of the words of one block (w0..w3):
  uniform float16/float32, integers with high - low <= 2**32: 4 per block, element e uses w[e % 4];
  uniform float64, integers with a wider range: 2 per block from (w0, w1) and (w2, w3), high word first;
  normal float16/float32: 4 per block, Box-Muller on (w0, w1) -> e % 4 in {0, 1}, (w2, w3) -> {2, 3};
  normal float64: 2 per block, Box-Muller on the 53-bit uniforms of (w0, w1) and (w2, w3),
  with float-precision log/sin/cos (the MSL library of the CPU and CUDA backends has no double
  transcendental functions).
"""

from __future__ import annotations

from typing import Any

import numpy as np

import metalcall as mc

from . import cache

_PHILOX = """
inline uint4 philox(uint2 ctr, uint2 key) {
  uint4 c = uint4(ctr.x, ctr.y, 0u, 0u);
  uint2 k = key;
  for (uint r = 0; r < 10; ++r) {
    const uint hi0 = mulhi(0xD2511F53u, c.x), lo0 = 0xD2511F53u * c.x;
    const uint hi1 = mulhi(0xCD9E8D57u, c.z), lo1 = 0xCD9E8D57u * c.z;
    c = uint4(hi1 ^ c.y ^ k.x, lo1, hi0 ^ c.w ^ k.y, lo0);
    k += uint2(0x9E3779B9u, 0xBB67AE85u);
  }
  return c;
}
inline uint4 block(ulong counter, ulong seed, uint b) {
  const ulong ctr = counter + b;
  return philox(uint2(uint(ctr), uint(ctr >> 32)), uint2(uint(seed), uint(seed >> 32)));
}
inline float u24(uint w) { return float(w >> 8) * 5.960464477539063e-08f; }
"""

_HEAD = ("kernel void rnd(device {T}* out [[buffer(0)]], constant ulong& seed [[buffer(1)]],\n"
         "    constant ulong& counter [[buffer(2)]], constant uint& count [[buffer(3)]]{extra},\n"
         "    uint e [[thread_position_in_grid]]) {{\n"
         "  if (e >= count) return;\n")


def per_block(kind: str, dtype: Any, low: int = 0, high: int = 1) -> int:
    """Elements drawn from one Philox block."""
    dt = np.dtype(dtype)
    if kind == "integers":
        return 4 if int(high) - int(low) <= 1 << 32 else 2
    return 2 if dt.itemsize == 8 else 4


def blocks_used(kind: str, count: int, dtype: Any, low: int = 0, high: int = 1) -> int:
    """How far a call of `count` elements advances the counter."""
    p = per_block(kind, dtype, low, high)
    return -(-int(count) // p)


def _words(wide: bool) -> str:
    if wide:
        return ("  const uint4 w = block(counter, seed, e / 2);\n"
                "  const ulong v = (e & 1) ? ((ulong(w.z) << 32) | w.w) : ((ulong(w.x) << 32) | w.y);\n")
    return ("  const uint4 w = block(counter, seed, e / 4);\n"
            "  const uint q = e & 3;\n"
            "  const uint v = q == 0 ? w.x : q == 1 ? w.y : q == 2 ? w.z : w.w;\n")


def _launch(dev: mc.Device, source: str, out: mc.Buffer, seed: int, counter: int, count: int,
            *extra: Any) -> mc.Buffer:
    if count:
        k = cache.kernel(dev, source, "rnd", fast_math=False)
        cache.launch(k, count, out, int(seed) & ((1 << 64) - 1), int(counter) & ((1 << 64) - 1), count, *extra)
    return out


def uniform(dev: mc.Device, seed: int, counter: int, count: int, dtype: Any = np.float64) -> mc.Buffer:
    """`count` floats in [0, 1): 24 random bits for float32, 11 for float16, 53 for float64."""
    dt = np.dtype(dtype)
    T = cache.msl_type(dt)
    if dt.kind != "f":
        raise mc.ArgumentError(f"uniform needs a floating dtype, got {dt}")
    if dt.itemsize == 8:
        body = _words(True) + "  out[e] = double(v >> 11) * 1.1102230246251565e-16;\n}\n"
    elif dt.itemsize == 4:
        body = _words(False) + "  out[e] = u24(v);\n}\n"
    else:
        body = _words(False) + "  out[e] = half(float(v >> 21) * 0.00048828125f);\n}\n"
    src = cache.header() + _PHILOX + _HEAD.format(T=T, extra="") + body
    return _launch(dev, src, cache.empty(dev, count, dt), seed, counter, count)


def normal(dev: mc.Device, seed: int, counter: int, count: int, dtype: Any = np.float64) -> mc.Buffer:
    """`count` standard normal floats by Box-Muller: u1 in (0, 1], u2 in [0, 1),
    r = sqrt(-2 log u1), pairs (r cos 2 pi u2, r sin 2 pi u2)."""
    dt = np.dtype(dtype)
    T = cache.msl_type(dt)
    if dt.kind != "f":
        raise mc.ArgumentError(f"normal needs a floating dtype, got {dt}")
    if dt.itemsize == 8:
        body = ("  const uint4 w = block(counter, seed, e / 2);\n"
                "  const double u1 = double(((ulong(w.x) << 32 | w.y) >> 11) + 1) * 1.1102230246251565e-16;\n"
                "  const double u2 = double((ulong(w.z) << 32 | w.w) >> 11) * 1.1102230246251565e-16;\n"
                "  // log, sin and cos in float: the CPU/CUDA MSL library has no double versions (and\n"
                "  // Metal has no double at all), so float64 normals carry float's precision.\n"
                "  const float r = sqrt(-2.0f * log(float(u1))), a = 6.2831853f * float(u2);\n"
                "  out[e] = double((e & 1) ? r * sin(a) : r * cos(a));\n}\n")
    else:
        body = ("  const uint4 w = block(counter, seed, e / 4);\n"
                "  const uint q = e & 3;\n"
                "  const uint w1 = q < 2 ? w.x : w.z, w2 = q < 2 ? w.y : w.w;\n"
                "  const float u1 = float((w1 >> 8) + 1) * 5.960464477539063e-08f, u2 = u24(w2);\n"
                "  const float r = sqrt(-2.0f * log(u1)), a = 6.2831853f * u2;\n"
                f"  out[e] = {T}((q & 1) ? r * sin(a) : r * cos(a));\n}}\n")
    src = cache.header() + _PHILOX + _HEAD.format(T=T, extra="") + body
    return _launch(dev, src, cache.empty(dev, count, dt), seed, counter, count)


def integers(dev: mc.Device, seed: int, counter: int, count: int, low: int, high: int,
             dtype: Any = np.int64) -> mc.Buffer:
    """`count` integers in [low, high): low + (w * range) >> 32 from one 32-bit word when the
    range fits 32 bits, else low + (64-bit word % range). Both are deterministic maps (no
    rejection), with a bias below range / 2**32 (resp. range / 2**64)."""
    dt = np.dtype(dtype)
    T = cache.msl_type(dt)
    low, high = int(low), int(high)
    if dt.kind not in "iu":
        raise mc.ArgumentError(f"integers needs an integer dtype, got {dt}")
    if high <= low:
        raise mc.ArgumentError(f"integers needs low < high, got low={low}, high={high}")
    info = np.iinfo(dt)
    if low < info.min or high - 1 > info.max:
        raise mc.ArgumentError(f"integers: [{low}, {high}) does not fit {dt}")
    span = high - low
    if span <= 1 << 32:
        body = _words(False) + f"  out[e] = {T}(long(low) + long((ulong(v) * span) >> 32));\n}}\n"
    else:
        body = _words(True) + f"  out[e] = {T}(long(ulong(low) + (span == 0 ? v : v % span)));\n}}\n"
    extra = ",\n    constant long& low [[buffer(4)]], constant ulong& span [[buffer(5)]]"
    src = cache.header() + _PHILOX + _HEAD.format(T=T, extra=extra) + body
    # A span of 2**64 (the whole of int64/uint64) is passed as 0: every 64-bit word is in range.
    return _launch(dev, src, cache.empty(dev, count, dt), seed, counter, count, low, span & ((1 << 64) - 1))
