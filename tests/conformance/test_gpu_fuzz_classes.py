"""Classes of constructs behind the differential fuzzer's CUDA-only mismatches (docs/design.md,
"GPU campaigns so far"), each checked against NumPy on every device.

abs and absdiff of the most negative 8- and 16-bit integers: MSL wraps |-32768| to -32768 (a
short), so `short(absdiff(x, short(0))) >= 0` is false for x = -32768 (fuzz seed 1001, program
8, where CUDA took it as true)."""

from __future__ import annotations

import numpy as np

from mcconf import KernelSet, assert_equal

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
])


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
