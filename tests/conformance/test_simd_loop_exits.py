"""Leaving a loop that holds SIMD-group functions or barriers by the other exits: `return {}` and
`return {a, b}` of an aggregate from a helper's loop, braced lists of other kinds (nested braces,
a float2 from the constant 0, a metal::array, a lambda's `-> int2`, members', a template's T), the
kernel's own `return` from its loop and from an inner loop calling none after SIMD-group code,
a `break` before a line holding two SIMD-group calls (and a conditional whose two arms each hold
one), a `break` out of a loop holding a threadgroup barrier that the whole threadgroup takes
together, a `continue` past a barrier's loop in a loop of SIMD-group calls, and SIMD-group calls
the CPU's line order leaves unranked (a template instance, a call through a member access) on one
line with another one, in the other arm of a conditional. (`goto` is not
MSL: the front end refuses it, tests/reliability/test_refused_constructs.py.)

MSL: a SIMD-group function acts on the lanes that reach that call together, and lanes that have
left (returned, broken out) take no part in later calls; after the loop the lanes still running
meet again. Each kernel is checked against a NumPy model of those semantics, per SIMD-group, on
every device and at the pipeline's own SIMD-group width.
"""

from __future__ import annotations

import numpy as np
import pytest

from mcconf import KernelSet, assert_equal

PREAMBLE = """
struct Pair { int a; int b; };

// Calls that passes/simd_line_order gives no rank (a template instance, a member access): on
// one line with another SIMD-group call, in the other arm of a conditional.
template <class T> T tsum(T v) { return simd_sum(v); }
struct Acc {
    int k;
    int sum(int v) const { return simd_sum(v) + k; }
};

// Lanes leave at the iteration of their n with an empty or a braced aggregate.
Pair walk_pair(int v, int n) {
    int acc = 0;
    for (int k = 0; k < 4; ++k) {
        if (k == n) {
            if (v < 0) return {};
            return {acc, simd_sum(1)};
        }
        acc += simd_sum(v);
    }
    return {acc + 1, -1};
}

int2 walk_vec(int v, int n) {
    for (int k = 0; k < 4; ++k) {
        const int m = simd_max(v + k);
        if (k == n) return {};
        if (k + 1 == n) return {m, simd_min(v)};
    }
    return {7, simd_sum(1)};
}

// Braced lists of other kinds returned from loops: nested braces beside an empty list, a float2
// from the constant 0 and a sum, a metal::array, a lambda's `-> int2`, members defined in and
// outside their struct, a template returning T.
struct Outer { Pair p; int c; };

Outer walk_nested(int v, int n) {
    int acc = 0;
    for (int k = 0; k < 4; ++k) {
        if (k == n) {
            if (v < 0) return {};
            return {{acc, simd_sum(1)}, simd_max(v)};
        }
        acc += simd_sum(v);
    }
    return {{acc, -1}, -2};
}

METAL_FUNC float2 walk_float(int v, int n) {
    for (int k = 0; k < 4; ++k)
        if (k == n) return {0, simd_sum(float(v))};
    return {1, simd_min(float(v))};
}

metal::array<int, 3> walk_array(int v, int n) {
    for (int k = 0; k < 4; ++k) {
        const int m = simd_max(v);
        if (k == n) return {m, simd_sum(1), simd_min(v)};
    }
    return {};
}

struct Walker {
    int base;
    Pair walk(int v, int n) const {
        for (int k = 0; k < 4; ++k)
            if (k == n) return {base + k, simd_sum(v)};
        return {base, 0};
    }
    Pair walk_out(int v, int n) const;
};

Pair Walker::walk_out(int v, int n) const {
    for (int k = 3; k >= 0; --k)
        if (k == n) return {base - k, simd_max(v)};
    return {};
}

template <class T>
T walk_template(T v, int n) {
    for (int k = 0; k < 4; ++k)
        if (k == n) return {simd_sum(v.x), simd_min(v.y)};
    return {};
}
"""

KS = KernelSet([
    """
kernel void le_return_braces(device const int* x [[buffer(0)]], device int* out [[buffer(1)]],
                             uint i [[thread_position_in_grid]]) {
    const int v = x[i];
    const Pair p = walk_pair(v, abs(v) % 5);
    const int2 q = walk_vec(v, abs(v) % 6);
    const int after = simd_sum(1);
    out[4 * i + 0] = p.a;
    out[4 * i + 1] = p.b;
    out[4 * i + 2] = q.x * 1000 + q.y;
    out[4 * i + 3] = after;
}
""",
    """
kernel void le_return_braced_kinds(device const int* x [[buffer(0)]], device int* out [[buffer(1)]],
                                   uint i [[thread_position_in_grid]]) {
    const int v = x[i];
    const int n = abs(v) % 5;
    auto counted = [&](int m) -> int2 {
        for (int k = 0; k < 4; ++k)
            if (k + 1 == m) return {k, simd_prefix_exclusive_sum(1)};
        return {-1, simd_sum(1)};
    };
    const Outer o = walk_nested(v, n);
    const float2 f = walk_float(v, n);
    const metal::array<int, 3> a = walk_array(v, n);
    const int2 c = counted(n);
    const Walker w{100};
    const Pair p = w.walk(v, n), q = w.walk_out(v, (n + 2) % 5);
    const int2 t = walk_template(int2(v, 2 * v), (n + 1) % 5);
    const int row[16] = {o.p.a, o.p.b, o.c, int(f.x), int(f.y), a[0], a[1], a[2], c.x, c.y, p.a, p.b, q.a, q.b, t.x, t.y};
    for (int k = 0; k < 16; ++k) out[16 * i + k] = row[k];
}
""",
    """
kernel void le_kernel_return(device const int* x [[buffer(0)]], device int* out [[buffer(1)]],
                             uint i [[thread_position_in_grid]]) {
    const int v = x[i];
    const int n = abs(v) % 5;
    int acc = 0;
    out[4 * i + 2] = -1;
    for (int k = 0; k < 4; ++k) {
        if (k == n) {
            out[4 * i + 0] = acc;
            out[4 * i + 1] = simd_sum(1);
            out[4 * i + 3] = -1;
            return;
        }
        acc += simd_sum(v) + simd_max(k);
    }
    out[4 * i + 0] = acc;
    out[4 * i + 1] = simd_sum(1);
    out[4 * i + 2] = simd_min(v);
    out[4 * i + 3] = simd_prefix_exclusive_sum(1);
}
""",
    """
kernel void le_return_through_inner_loop(device const int* x [[buffer(0)]], device int* out [[buffer(1)]],
                                         uint i [[thread_position_in_grid]]) {
    const int v = x[i];
    const int n = abs(v) % 5;
    int acc = 0;
    for (int k = 0; k < 4; ++k) {
        if (k == n) {
            const int left = simd_sum(1);
            for (int j = 0; j < 2; ++j)
                if (j == 1) {
                    out[2 * i + 0] = acc;
                    out[2 * i + 1] = left;
                    return;
                }
        }
        acc += simd_sum(v);
    }
    out[2 * i + 0] = acc;
    out[2 * i + 1] = simd_sum(1);
}
""",
    """
kernel void le_break_then_one_line(device const int* x [[buffer(0)]], device int* out [[buffer(1)]],
                                   uint i [[thread_position_in_grid]]) {
    const int v = x[i];
    const int n = abs(v) % 5;
    int acc = 0;
    for (int k = 0; k < 4; ++k) {
        if (k == n) break;
        acc += simd_sum(v) * 100 + simd_sum(1);
    }
    out[4 * i + 0] = acc;
    out[4 * i + 1] = simd_sum(acc) + simd_max(v);
    out[4 * i + 2] = (v > 0) ? simd_sum(v) : simd_min(v);
    out[4 * i + 3] = simd_sum(1);
}
""",
    """
kernel void le_break_from_barrier_loop(device const int* x [[buffer(0)]], device int* out [[buffer(1)]],
                                       uint i [[thread_position_in_grid]], uint lid [[thread_position_in_threadgroup]],
                                       uint group [[threadgroup_position_in_grid]]) {
    threadgroup int shared[64];
    const int v = x[i];
    const int rounds = int(group % 3u) + 1;  // the same for the whole threadgroup
    int acc = 0;
    for (int k = 0; k < 4; ++k) {
        if (k == rounds) break;
        shared[lid] = v + k;
        threadgroup_barrier(mem_flags::mem_threadgroup);
        acc += shared[63 - lid];
        threadgroup_barrier(mem_flags::mem_threadgroup);
        if (k + 1 == 3) break;
    }
    out[4 * i + 0] = acc;
    int part = 0;
    for (int k = 0; k < 3; ++k) {
        if ((v + k) % 2 == 0) continue;
        part += simd_sum(1);
    }
    out[4 * i + 1] = part;
    out[4 * i + 2] = simd_sum(v);
    out[4 * i + 3] = rounds;
}
""",
    """
kernel void le_unranked_calls_on_one_line(device const int* x [[buffer(0)]], device int* out [[buffer(1)]],
                                          uint i [[thread_position_in_grid]]) {
    const int v = x[i];
    const bool c = v > 0;
    Acc a{1000};
    out[4 * i + 0] = c ? tsum<int>(v) : simd_prefix_exclusive_sum(1);
    out[4 * i + 1] = c ? a.sum(v) : simd_max(v);
    out[4 * i + 2] = (c ? tsum<int>(1) : simd_min(v)) + simd_sum(1);
    out[4 * i + 3] = simd_sum(1);
}
""",
], preamble=PREAMBLE)

N = 256  # 4 threadgroups of 64


def _walk_pair(v):
    n = np.abs(v) % 5
    a = np.zeros(len(v), np.int64)
    b = np.zeros(len(v), np.int64)
    acc = np.zeros(len(v), np.int64)
    left = np.zeros(len(v), bool)
    for k in range(4):
        at = ~left & (n == k)
        a[at] = np.where(v[at] < 0, 0, acc[at])
        b[at & (v >= 0)] = (at & (v >= 0)).sum()
        left |= at
        run = ~left
        acc[run] += v[run].sum()
    a[~left], b[~left] = acc[~left] + 1, -1
    return a, b


def _walk_vec(v):
    n = np.abs(v) % 6
    out = np.zeros(len(v), np.int64)
    left = np.zeros(len(v), bool)
    for k in range(4):
        run = ~left
        m = (v[run] + k).max() if run.any() else 0
        at = run & (n == k)
        out[at] = 0
        left |= at
        nxt = ~left & (n == k + 1)
        if nxt.any():
            out[nxt] = m * 1000 + v[nxt].min()
        left |= nxt
    rest = ~left
    out[rest] = 7 * 1000 + rest.sum()
    return out


def _return_braces(v, w):
    a, b = _walk_pair(v)
    return np.stack([a, b, _walk_vec(v), np.full(w, w)], 1)


def _leaving(n, iterations):
    """Per iteration k (in order): the lanes whose n leaves the loop there."""
    left = np.zeros(len(n), bool)
    for k in iterations:
        at = ~left & (n == k)
        yield k, at, ~left
        left |= at


def _return_braced_kinds(v, w):
    n = np.abs(v) % 5
    out = np.zeros((w, 16), np.int64)
    acc = np.zeros(w, np.int64)
    for k, at, run in _leaving(n, range(4)):  # walk_nested
        pos = at & (v >= 0)
        out[pos, 0], out[pos, 1] = acc[pos], pos.sum()
        out[pos, 2] = v[pos].max() if pos.any() else 0
        stay = run & ~at
        acc[stay] += v[stay].sum()
    rest = n == 4
    out[rest, 0], out[rest, 1], out[rest, 2] = acc[rest] + 0, -1, -2
    for k, at, _ in _leaving(n, range(4)):  # walk_float
        out[at, 4] = v[at].sum()
    out[rest, 3], out[rest, 4] = 1, v[rest].min() if rest.any() else 0
    for k, at, run in _leaving(n, range(4)):  # walk_array
        if at.any():
            out[at, 5], out[at, 6], out[at, 7] = v[run].max(), at.sum(), v[at].min()
    for k, at, _ in _leaving(n - 1, range(4)):  # counted (the lambda)
        out[at, 8], out[at, 9] = k, np.cumsum(at)[at] - 1
    out[n == 0, 8], out[n == 0, 9] = -1, (n == 0).sum()
    for k, at, _ in _leaving(n, range(4)):  # Walker::walk
        out[at, 10], out[at, 11] = 100 + k, v[at].sum()
    out[rest, 10] = 100
    for k, at, _ in _leaving((n + 2) % 5, range(3, -1, -1)):  # Walker::walk_out
        out[at, 12], out[at, 13] = 100 - k, v[at].max() if at.any() else 0
    for k, at, _ in _leaving((n + 1) % 5, range(4)):  # walk_template
        out[at, 14], out[at, 15] = v[at].sum(), 2 * v[at].min() if at.any() else 0
    return out


def _kernel_return(v, w):
    n = np.abs(v) % 5
    acc = np.zeros(w, np.int64)
    out = np.zeros((w, 4), np.int64)
    out[:, 2] = -1
    left = np.zeros(w, bool)
    for k in range(4):
        at = ~left & (n == k)
        out[at, 0] = acc[at]
        out[at, 1] = at.sum()
        out[at, 3] = -1
        left |= at
        run = ~left
        if run.any():
            acc[run] += v[run].sum() + k
    rest = ~left
    if rest.any():
        out[rest, 0] = acc[rest]
        out[rest, 1] = rest.sum()
        out[rest, 2] = v[rest].min()
        out[rest, 3] = np.cumsum(rest)[rest] - 1
    return out


def _return_through_inner_loop(v, w):
    n = np.abs(v) % 5
    out = np.zeros((w, 2), np.int64)
    acc = np.zeros(w, np.int64)
    for k, at, run in _leaving(n, range(5)):
        out[at, 0], out[at, 1] = acc[at], at.sum()
        stay = run & ~at
        acc[stay] += v[stay].sum()
    return out


def _break_then_one_line(v, w):
    n = np.abs(v) % 5
    acc = np.zeros(w, np.int64)
    for k in range(4):
        run = n > k
        if run.any():
            acc[run] += v[run].sum() * 100 + run.sum()
    pos = v > 0
    arms = np.where(pos, v[pos].sum() if pos.any() else 0, v[~pos].min() if (~pos).any() else 0)
    return np.stack([acc, np.full(w, acc.sum() + v.max()), arms, np.full(w, w)], 1)


def _unranked_calls_on_one_line(v, w):
    c = v > 0
    pre = np.cumsum(~c) - ~c
    pos = v[c].sum() if c.any() else 0
    return np.stack([np.where(c, pos, pre), np.where(c, pos + 1000, v[~c].max() if (~c).any() else 0),
                     np.where(c, c.sum(), v[~c].min() if (~c).any() else 0) + w, np.full(w, w)], 1)


def _per_simd_group(model):
    def whole(x, w):
        return np.concatenate([model(v, w) for v in x.astype(np.int64).reshape(-1, w)])
    return whole


def _break_from_barrier_loop(x, w):
    x = x.astype(np.int64)
    out = np.zeros((N, 4), np.int64)
    for g in range(N // 64):
        v = x[64 * g:64 * (g + 1)]
        rounds = min(g % 3 + 1, 3)
        out[64 * g:64 * (g + 1), 0] = sum(v[::-1] + k for k in range(rounds))
        out[64 * g:64 * (g + 1), 3] = g % 3 + 1
    for s in range(N // w):
        v = x[w * s:w * (s + 1)]
        part = np.zeros(w, np.int64)
        for k in range(3):
            m = (v + k) % 2 != 0
            part[m] += m.sum()
        out[w * s:w * (s + 1), 1] = part
        out[w * s:w * (s + 1), 2] = v.sum()
    return out


CASES = {
    "le_return_braces": _per_simd_group(_return_braces),
    "le_return_braced_kinds": _per_simd_group(_return_braced_kinds),
    "le_kernel_return": _per_simd_group(_kernel_return),
    "le_return_through_inner_loop": _per_simd_group(_return_through_inner_loop),
    "le_break_then_one_line": _per_simd_group(_break_then_one_line),
    "le_break_from_barrier_loop": _break_from_barrier_loop,
    "le_unranked_calls_on_one_line": _per_simd_group(_unranked_calls_on_one_line),
}


def test_every_kernel_is_in_the_table():
    assert set(CASES) == set(KS.kernel_names)


@pytest.mark.parametrize("name", list(CASES))
def test_loop_exits_match_the_model(device, rng, name):
    x = rng.integers(-60, 61, N).astype(np.int32)
    kern = KS.get(device, name)
    expected = CASES[name](x, kern.thread_execution_width).astype(np.int32)
    out = np.full(expected.size, -99, np.int32)
    kern((N, 1, 1), x, out, threadgroup=(64, 1, 1))
    assert_equal(out.reshape(expected.shape), expected)
