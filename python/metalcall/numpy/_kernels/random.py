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

# One thread per Philox block: the ten rounds on scalar words (64-bit products rather than
# mulhi, so the CPU backend's compiler vectorises the thread loop), then up to four outputs.
_HEAD = """
kernel void rnd(device {T}* out [[buffer(0)]], constant ulong& seed [[buffer(1)]],
    constant ulong& counter [[buffer(2)]], constant uint& count [[buffer(3)]]{extra},
    uint b [[thread_position_in_grid]]) {{
  const ulong ctr = counter + b;
  uint c0 = uint(ctr), c1 = uint(ctr >> 32), c2 = 0u, c3 = 0u;
  uint k0 = uint(seed), k1 = uint(seed >> 32);
  for (uint r = 0; r < 10; ++r) {{
    const ulong p0 = ulong(0xD2511F53u) * c0, p1 = ulong(0xCD9E8D57u) * c2;
    const uint n0 = uint(p1 >> 32) ^ c1 ^ k0, n2 = uint(p0 >> 32) ^ c3 ^ k1;
    c1 = uint(p1); c3 = uint(p0); c0 = n0; c2 = n2;
    k0 += 0x9E3779B9u; k1 += 0xBB67AE85u;
  }}
  const uint e = b * {per};
"""


def _emit(per: int, value: str) -> str:
    """Stores out[e + q] = value(q) for the words of this block, `w` naming the q-th word
    (32-bit: c0..c3; 64-bit: c0:c1, c2:c3)."""
    words = ["c0", "c1", "c2", "c3"] if per == 4 else ["((ulong(c0) << 32) | c1)", "((ulong(c2) << 32) | c3)"]
    return "".join(f"  if (e + {q} < count) out[e + {q}] = {value.replace('W', words[q])};\n"
                   for q in range(per)) + "}\n"


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


def _launch(dev: mc.Device, source: str, out: mc.Buffer, seed: int, counter: int, count: int, per: int,
            *extra: Any) -> mc.Buffer:
    if count:
        k = cache.kernel(dev, source, "rnd", fast_math=False)
        cache.launch(k, -(-count // per), out, int(seed) & ((1 << 64) - 1), int(counter) & ((1 << 64) - 1),
                     count, *extra)
    return out


def uniform(dev: mc.Device, seed: int, counter: int, count: int, dtype: Any = np.float64) -> mc.Buffer:
    """`count` floats in [0, 1): 24 random bits for float32, 11 for float16, 53 for float64."""
    dt = np.dtype(dtype)
    T = cache.msl_type(dt)
    if dt.kind != "f":
        raise mc.ArgumentError(f"uniform needs a floating dtype, got {dt}")
    if dt.itemsize == 8:
        per, body = 2, _emit(2, "double(W >> 11) * %r" % 2.0**-53)
    elif dt.itemsize == 4:
        per, body = 4, _emit(4, "float(W >> 8) * %rf" % 2.0**-24)
    else:
        per, body = 4, _emit(4, "half(float(W >> 21) * %rf)" % 2.0**-11)
    src = cache.header() + _HEAD.format(T=T, extra="", per=per) + body
    return _launch(dev, src, cache.empty(dev, count, dt), seed, counter, count, per)


def normal(dev: mc.Device, seed: int, counter: int, count: int, dtype: Any = np.float64) -> mc.Buffer:
    """`count` standard normal floats by Box-Muller: u1 in (0, 1], u2 in [0, 1),
    r = sqrt(-2 log u1), pairs (r cos 2 pi u2, r sin 2 pi u2)."""
    dt = np.dtype(dtype)
    T = cache.msl_type(dt)
    if dt.kind != "f":
        raise mc.ArgumentError(f"normal needs a floating dtype, got {dt}")
    if dt.itemsize == 8:
        # log, sin and cos in float: the CPU/CUDA MSL library has no double versions (and Metal
        # has no double at all), so float64 normals carry float's precision.
        body = ("  const double u1 = double((((ulong(c0) << 32) | c1) >> 11) + 1) * %r;\n"
                "  const double u2 = double(((ulong(c2) << 32) | c3) >> 11) * %r;\n"
                "  const float r = sqrt(-2.0f * log(float(u1))), a = 6.2831853f * float(u2);\n"
                "  if (e < count) out[e] = double(r * cos(a));\n"
                "  if (e + 1 < count) out[e + 1] = double(r * sin(a));\n}\n") % (2.0**-53, 2.0**-53)
        per = 2
    else:
        body = "".join(
            f"  {{ const float u1 = float((c{2 * h} >> 8) + 1) * {2.0**-24!r}f, u2 = float(c{2 * h + 1} >> 8) * {2.0**-24!r}f;\n"
            "    const float r = sqrt(-2.0f * log(u1)), a = 6.2831853f * u2;\n"
            f"    if (e + {2 * h} < count) out[e + {2 * h}] = {T}(r * cos(a));\n"
            f"    if (e + {2 * h + 1} < count) out[e + {2 * h + 1}] = {T}(r * sin(a)); }}\n" for h in range(2)) + "}\n"
        per = 4
    src = cache.header() + _HEAD.format(T=T, extra="", per=per) + body
    return _launch(dev, src, cache.empty(dev, count, dt), seed, counter, count, per)


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
        per, body = 4, _emit(4, f"{T}(long(low) + long((ulong(W) * span) >> 32))")
    else:
        per, body = 2, _emit(2, f"{T}(long(ulong(low) + (span == 0 ? W : W % span)))")
    extra = ",\n    constant long& low [[buffer(4)]], constant ulong& span [[buffer(5)]]"
    src = cache.header() + _HEAD.format(T=T, extra=extra, per=per) + body
    # A span of 2**64 (the whole of int64/uint64) is passed as 0: every 64-bit word is in range.
    return _launch(dev, src, cache.empty(dev, count, dt), seed, counter, count, per, low,
                   span & ((1 << 64) - 1))
