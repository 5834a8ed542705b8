"""Braced temporaries of a user's types in expressions: a functor built and called at once,
`F{a, b}(x)`, under unary minus, `~`, `!` and `+`, members and subscripts of a temporary, in
initializer lists, as arguments of functions and templates and in conditionals, each checked
against NumPy on every device.

The differential fuzzer's CUDA campaign at 168b857 (seeds 9200-9206, 13 programs, and CI's
seed 3, program 87) wrote `-F0{m}(x)`: the CUDA translation's unary minus through the prelude
(msl/passes/small_negations.hpp) took the operand to end at the type's name, `(neg -F0){m}(x)`,
and NVRTC refused it ("type name is not allowed"); a type named in capitals (`-F{m}(x)`) was
taken for a macro's constant. A short functor's result negated through it must still wrap
-(-32768) to -32768 once converted back."""

from __future__ import annotations

import numpy as np

from mcconf import KernelSet, assert_equal

KS = KernelSet([
    """
struct F {
    int m;
    int operator()(int a) const { return a * 3 + m; }
    int operator()(int a, int b) const { return a - b * m; }
};
struct Sh {
    short m;
    short operator()(short a) const { return short(a + m); }
};
struct P {
    int x;
    int y;
    int sum() const { return x + y; }
    int operator[](int k) const { return k == 0 ? x : y; }
};
namespace ns {
struct G {
    uint m;
    uint operator()(uint a) const { return a ^ m; }
};
}
template <typename T>
struct W {
    T m;
    T operator()(T a) const { return a * m; }
};

int negated_call(int a, int b) { return -F{b}(a); }
template <typename T, typename A>
A apply(T f, A x) { return f(x); }

kernel void braced_temporaries(const device int* in [[buffer(0)]], const device short* sh [[buffer(1)]],
                               device int* out [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    int a = in[i];
    int b = (a & 7) + 1;
    short s = sh[i];
    device int* o = out + 32 * i;
    o[0] = F{b}(a);
    o[1] = -F{b}(a);
    o[2] = ~F{b}(a, 2);
    o[3] = !F{b}(a, a) ? 1 : 0;
    o[4] = +F{b}(a);
    o[5] = -P{a, b}.x + -P{a, b}.sum();
    o[6] = -P{a, b}[1];
    o[7] = -F{-F{b}(a)}(b);
    int list[4] = {F{b}(a), -F{b}(a, 1), ~F{1}(b), -P{b, a}.sum()};
    for (int k = 0; k < 4; ++k) o[8 + k] = list[k];
    P p = {-F{b}(a), F{b}(-a)};
    o[12] = p.x;
    o[13] = p.y;
    o[14] = max(-F{b}(a), F{2}(b));
    o[15] = int(as_type<uint>(-F{b}(a)) >> 1u);
    o[16] = static_cast<int>(-ns::G{uint(b)}(uint(a)));
    o[17] = (a & 1) ? -F{b}(a) : F{b}(-a);
    o[18] = -W<int>{b}(a);
    o[19] = negated_call(a, b);
    o[20] = int(short(-Sh{short(1)}(s)));
    o[21] = (short(-Sh{short(1)}(s)) < short(1)) ? 2 : 3;
    o[22] = in[F{b}(a, a) & 7];
    int v = a;
    v -= -F{b}(a);
    o[23] = v;
    o[24] = -int2{a, b}.y;
    o[25] = -(F{b})(a);
    P q = P{0, 0};
    q = P{-F{b}(a), F{b}(a)};
    o[26] = q.x;
    o[27] = q.y;
    o[28] = apply(F{b}, -a);
    o[29] = (a > 0) ? F{b}(a) : 0;
    o[30] = int(apply<Sh>(Sh{short(2)}, s));
    o[31] = -vec<int, 2>{a, b}.x;
}
""",
])

WIDTH = 32


def expected(a: np.ndarray, s: np.ndarray) -> np.ndarray:
    a = a.astype(np.int64)
    b = (a & 7) + 1
    s = s.astype(np.int64)

    def i32(v):
        return (np.asarray(v, np.int64) & 0xFFFFFFFF).astype(np.uint32).view(np.int32).astype(np.int64)

    def i16(v):
        return (np.asarray(v, np.int64) & 0xFFFF).astype(np.uint16).view(np.int16).astype(np.int64)

    f1 = 3 * a + b  # F{b}(a)
    bumped = i16(s + 1)  # Sh{1}(s), a short
    e = np.zeros((len(a), WIDTH), np.int64)
    e[:, 0] = f1
    e[:, 1] = -f1
    e[:, 2] = ~(a - 2 * b)
    e[:, 3] = (a - a * b) == 0
    e[:, 4] = f1
    e[:, 5] = -a - (a + b)
    e[:, 6] = -b
    e[:, 7] = -(3 * b - f1)
    e[:, 8] = f1
    e[:, 9] = -(a - b)
    e[:, 10] = ~(3 * b + 1)
    e[:, 11] = -(b + a)
    e[:, 12] = -f1
    e[:, 13] = -3 * a + b
    e[:, 14] = np.maximum(-f1, 3 * b + 2)
    e[:, 15] = (-f1 & 0xFFFFFFFF) >> 1  # as_type<uint>, then >> 1u
    e[:, 16] = i32(-((a & 0xFFFFFFFF) ^ b))
    e[:, 17] = np.where(a & 1, -f1, -3 * a + b)
    e[:, 18] = -(a * b)
    e[:, 19] = -f1
    e[:, 20] = i16(-bumped)
    e[:, 21] = np.where(i16(-bumped) < 1, 2, 3)
    e[:, 22] = 0  # filled by the caller: in[(a - a*b) & 7]
    e[:, 23] = a + f1
    e[:, 24] = -b
    e[:, 25] = -f1
    e[:, 26] = -f1
    e[:, 27] = f1
    e[:, 28] = -3 * a + b
    e[:, 29] = np.where(a > 0, f1, 0)
    e[:, 30] = i16(s + 2)
    e[:, 31] = -a
    return e


def test_braced_temporaries_in_expressions(device):
    a = np.array([0, 1, -1, 7, -8, 12345, -54321, 999999, -1000000, 6, 2, -3, 100, -100, 77, 5], np.int32)
    s = np.array([32767, -32768, 0, -1, 100, -2, 32766, 1, 32767, 5, -32767, 7, 0, 3, 32767, -9], np.int16)
    out = np.zeros((len(a), WIDTH), np.int32)
    KS.get(device, "braced_temporaries")(len(a), a, s, out)
    exp = expected(a, s)
    w = a.astype(np.int64)
    exp[:, 22] = a[((w - w * ((w & 7) + 1)) & 7)]
    assert_equal(out, exp.astype(np.int32))
