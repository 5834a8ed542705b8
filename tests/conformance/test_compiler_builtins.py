"""The integer builtins of Apple's clang that production MSL calls (MLX's fft.h and
hadamard.h: `__builtin_ctz`, in constant expressions too): ctz, clz and popcount in their
int, long and long long forms, `__builtin_expect` and `__builtin_assume`, checked against
Python's integers on every device (docs/msl-rules.md). Other builtins stay refused."""

from __future__ import annotations

import numpy as np
import pytest

import metalcall as mc
from mcconf import HEADER, KernelSet, assert_equal

KS = KernelSet([
    (["bi_bits32"], """
kernel void bi_bits32(const device uint* x [[buffer(0)]], device int* out [[buffer(1)]],
                      uint i [[thread_position_in_grid]]) {
    uint v = x[i];
    out[3 * i + 0] = __builtin_ctz(v);
    out[3 * i + 1] = __builtin_clz(v);
    out[3 * i + 2] = __builtin_popcount(v);
}
"""),
    (["bi_bits64"], """
kernel void bi_bits64(const device ulong* x [[buffer(0)]], device int* out [[buffer(1)]],
                      uint i [[thread_position_in_grid]]) {
    ulong v = x[i];
    out[6 * i + 0] = __builtin_ctzl(v);
    out[6 * i + 1] = __builtin_clzl(v);
    out[6 * i + 2] = __builtin_popcountl(v);
    out[6 * i + 3] = __builtin_ctzll(v);
    out[6 * i + 4] = __builtin_clzll(v);
    out[6 * i + 5] = __builtin_popcountll(v);
}
"""),
    # As MLX's fft.h writes it: in constant expressions of a template's parameter.
    (["bi_constexpr_8", "bi_constexpr_64"], """
template <int R>
kernel void bi_constexpr(device int* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    constexpr short power = __builtin_ctz(R);
    constexpr int lead = __builtin_clz(uint(R));
    constexpr int ones = __builtin_popcount(uint(R - 1));
    static_assert(power >= 0 && lead >= 0 && ones >= 0, "constant expressions");
    out[3 * i + 0] = power;
    out[3 * i + 1] = lead;
    out[3 * i + 2] = ones;
}
template [[host_name("bi_constexpr_8")]] kernel void bi_constexpr<8>(device int*, uint);
template [[host_name("bi_constexpr_64")]] kernel void bi_constexpr<64>(device int*, uint);
"""),
    (["bi_hints"], """
kernel void bi_hints(const device int* x [[buffer(0)]], device int* out [[buffer(1)]],
                     uint i [[thread_position_in_grid]]) {
    int v = x[i];
    __builtin_assume(i < 0x7fffffffu);
    if (__builtin_expect(v < 0, 0)) out[i] = -v;
    else out[i] = v * 2;
}
"""),
])


def ctz(v, bits):
    return (v & -v).bit_length() - 1 if v else bits


def clz(v, bits):
    return bits - v.bit_length()


def test_bits32(device, rng):
    x = rng.integers(1, 2**32, size=64, dtype=np.uint64).astype(np.uint32)
    x[:4] = [1, 0x80000000, 0xFFFFFFFF, 0x00010000]  # edges (0 is undefined, as in clang)
    out = np.zeros(3 * x.size, np.int32)
    KS.get(device, "bi_bits32")(x.size, x, out)
    want = [f(int(v)) for v in x for f in (lambda v: ctz(v, 32), lambda v: clz(v, 32), lambda v: bin(v).count("1"))]
    assert_equal(out, np.array(want, np.int32))


def test_bits64(device, rng):
    x = rng.integers(1, 2**63, size=64, dtype=np.uint64) * np.uint64(2) + rng.integers(0, 2, 64).astype(np.uint64)
    x[:5] = [1, 2**63, 2**64 - 1, 2**40, 0x00000001_00000000]
    x[x == 0] = 3
    out = np.zeros(6 * x.size, np.int32)
    KS.get(device, "bi_bits64")(x.size, x, out)
    per = [ctz, clz, lambda v, bits: bin(v).count("1")]
    want = [f(int(v), 64) for v in x for f in per + per]
    assert_equal(out, np.array(want, np.int32))


@pytest.mark.parametrize("r", [8, 64])
def test_constant_expressions(device, r):
    out = np.zeros(6, np.int32)
    KS.get(device, f"bi_constexpr_{r}")(2, out)
    assert_equal(out, np.array([ctz(r, 32), clz(r, 32), bin(r - 1).count("1")] * 2, np.int32))


def test_expect_and_assume(device, rng):
    x = rng.integers(-1000, 1000, size=100, dtype=np.int32)
    out = np.zeros_like(x)
    KS.get(device, "bi_hints")(x.size, x, out)
    assert_equal(out, np.where(x < 0, -x, 2 * x))


@pytest.mark.parametrize("builtin", ["__builtin_trap();", "__builtin_memcpy(y, y + 1, 4);",
                                     "y[0] = __builtin_ffs(int(i));", "y[0] = __builtin_parity(i);"])
def test_other_builtins_refused(device, builtin):
    src = HEADER + ("kernel void bi_refused(device float* y [[buffer(0)]], uint i [[thread_position_in_grid]]) {\n"
                    f"    {builtin}\n}}\n")
    name = builtin.split("(")[0].split()[-1]
    with pytest.raises(mc.CompileError, match=rf"'{name}' is a compiler builtin, not part of the Metal standard "
                                             r"library.*no compiler builtins"):
        device.compile(src)
