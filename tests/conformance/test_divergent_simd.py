"""SIMD-group and quad-group functions called by part of a SIMD-group: inside if/else, switch
cases, loops that lanes leave after different counts (break, continue, do/while), branches
that change from one iteration to the next, and after some lanes returned. MSL: a SIMD-group
function acts on the SIMD-group's active threads, those that reach it together (the lanes of a
branch; a quad function, those of its quad); after the branch or loop the lanes run together
again. Each kernel is checked against a NumPy model of those semantics (per SIMD-group, the
active lanes of each call), on every device and at the pipeline's own SIMD-group width. Each
SIMD-group call is on a line of its own, as the CPU backend meets lanes by line
(docs/design.md, "SIMD-group functions")."""

from __future__ import annotations

import numpy as np
import pytest

from mcconf import KernelSet, assert_equal

KS = KernelSet([
    """
kernel void dv_if_else(device const int* x [[buffer(0)]], device int* out [[buffer(1)]],
                       uint i [[thread_position_in_grid]]) {
    const int v = x[i];
    int a, b;
    if (v % 3 == 0) {
        a = simd_sum(v);
        b = simd_prefix_exclusive_sum(1);
    } else {
        a = simd_max(v);
        b = int(uint(ulong(simd_ballot(v > 0))));
    }
    out[4 * i + 0] = a;
    out[4 * i + 1] = b;
    out[4 * i + 2] = simd_sum(1);
    out[4 * i + 3] = simd_prefix_inclusive_sum(v);
}
""",
    """
kernel void dv_switch(device const int* x [[buffer(0)]], device int* out [[buffer(1)]],
                      uint i [[thread_position_in_grid]]) {
    const int v = x[i];
    int r;
    switch (v & 3) {
    case 0:
        r = simd_min(v);
        break;
    case 1:
        r = simd_prefix_inclusive_sum(v);
        break;
    case 2:
        r = int(popcount(uint(ulong(simd_active_threads_mask()))));
        break;
    default:
        r = simd_broadcast_first(v);
        break;
    }
    out[2 * i + 0] = r;
    out[2 * i + 1] = simd_sum(r);
}
""",
    """
kernel void dv_switch_case_loops(device const int* x [[buffer(0)]], device int* out [[buffer(1)]],
                                 uint i [[thread_position_in_grid]]) {
    const int v = x[i];
    int a = 0, b = 0;
    switch (v & 1) {
    case 0: {
        for (int k = 0; k < abs(v) % 5; ++k) {
            a += k + 1;
        }
        b = simd_sum(a);
    } break;
    default: {
        int k = 0;
        while (k < abs(v) % 7) {
            k += 2;
        }
        a = k;
        b = simd_prefix_inclusive_sum(a);
        break;
    }
    }
    out[2 * i + 0] = a;
    out[2 * i + 1] = b;
}
""",
    """
kernel void dv_switch_fall_through(device const int* x [[buffer(0)]], device int* out [[buffer(1)]],
                                   uint i [[thread_position_in_grid]]) {
    const int v = x[i];
    int a = 0, b = 0;
    switch (v & 3) {
    case 1:
        a = simd_prefix_exclusive_sum(1);
        break;
    case 3: {
        a = v * 2;
    }
    case 2:
        b = simd_sum(v);
    default:
        a += int(uint(ulong(simd_ballot(v > 0))) & 0xFFFFu);
        break;
    }
    out[2 * i + 0] = a;
    out[2 * i + 1] = b;
}
""",
    """
enum dv_pick { dv_pick_a = -1, dv_pick_b = 5 };
kernel void dv_switch_fall_through_shapes(device const int* x [[buffer(0)]], device int* out [[buffer(1)]],
                                          uint i [[thread_position_in_grid]]) {
    const int v = x[i];
    int a = 0, b = 0;
    for (int k = 0; k < 3; ++k) {
        switch ((v + k) % 4) {
        case dv_pick_a:
        case dv_pick_b - 3:
            a += simd_sum(1);
        default:
            b += simd_sum(v);
            if ((v & 8) == 0) { a += 1; }
            continue;
        case 0: {
            a += simd_prefix_exclusive_sum(2);
            break;
        }
        case 1:
            switch (v & 1) { case 0: a += 100; break; default: a += simd_min(v); }
            b += 1;
            [[fallthrough]];
        case 3:
            b += simd_max(v & 0xff);
        }
        a += 10 * k;
    }
    out[2 * i + 0] = a;
    out[2 * i + 1] = b;
}
""",
    """
kernel void dv_for_counts(device const int* x [[buffer(0)]], device int* out [[buffer(1)]],
                          uint i [[thread_position_in_grid]]) {
    const int v = x[i];
    const int n = abs(v) % 6;
    int acc = 0;
    for (int k = 0; k < n; ++k) {
        acc += simd_sum(v + k);
    }
    out[2 * i + 0] = acc;
    out[2 * i + 1] = simd_sum(acc);
}
""",
    """
kernel void dv_branch_per_iteration(device const int* x [[buffer(0)]], device int* out [[buffer(1)]],
                                    uint i [[thread_position_in_grid]], uint l [[thread_index_in_simdgroup]],
                                    uint w [[threads_per_simdgroup]]) {
    const int v = x[i];
    int a = 0, b = 0;
    for (int k = 0; k < 4; ++k) {
        if (int(l) < k * int(w / 4)) {
            a += simd_sum(v);
        } else {
            b += simd_max(v + k);
        }
    }
    out[2 * i + 0] = a;
    out[2 * i + 1] = b;
}
""",
    """
kernel void dv_skip_iterations(device const int* x [[buffer(0)]], device int* out [[buffer(1)]],
                               uint i [[thread_position_in_grid]], uint l [[thread_index_in_simdgroup]],
                               uint w [[threads_per_simdgroup]]) {
    const int v = x[i];
    int a = 0;
    for (int k = 0; k < 4; ++k)
        if (int(l) < (k + 1) * int(w / 4))
            a += simd_sum(v) * (k + 1);
    out[i] = a;
}
""",
    """
kernel void dv_while_break_continue(device const int* x [[buffer(0)]], device int* out [[buffer(1)]],
                                    uint i [[thread_position_in_grid]]) {
    const int v = x[i];
    const int n = abs(v) % 5;
    int k = 0, acc = 0;
    while (true) {
        ++k;
        if (k > n) break;
        if ((k + v) % 2 == 0) continue;
        acc += simd_prefix_exclusive_sum(k);
    }
    int j = 0, m = 0;
    do {
        m += simd_sum(1);
        ++j;
    } while (j < n);
    out[3 * i + 0] = acc;
    out[3 * i + 1] = m;
    out[3 * i + 2] = simd_sum(k);
}
""",
    """
kernel void dv_early_return(device const int* x [[buffer(0)]], device int* out [[buffer(1)]],
                            uint i [[thread_position_in_grid]]) {
    const int v = x[i];
    if (v < 0) {
        out[3 * i + 0] = -1;
        out[3 * i + 1] = -1;
        out[3 * i + 2] = -1;
        return;
    }
    out[3 * i + 0] = simd_sum(v);
    out[3 * i + 1] = int(uint(ulong(simd_active_threads_mask())));
    out[3 * i + 2] = simd_is_first() ? 1 : 0;
}
""",
    """
kernel void dv_shuffles(device const int* x [[buffer(0)]], device int* out [[buffer(1)]],
                        uint i [[thread_position_in_grid]], uint l [[thread_index_in_simdgroup]]) {
    const int v = x[i];
    const uint positive = uint(ulong(simd_ballot(v > 0)));
    int r, s = -7, t = -7;
    if (l % 2 == 0) {
        r = simd_shuffle_xor(v, 2);
    } else {
        r = simd_shuffle(v, ushort(l ^ 4));
    }
    if (l >= 8) {
        s = simd_shuffle_down(v, 8);
    }
    if (v > 0) {
        t = simd_broadcast(v, ushort(ctz(positive)));
    }
    out[3 * i + 0] = r;
    out[3 * i + 1] = s;
    out[3 * i + 2] = t;
}
""",
    """
kernel void dv_quads(device const int* x [[buffer(0)]], device int* out [[buffer(1)]],
                     uint i [[thread_position_in_grid]], ushort q [[thread_index_in_quadgroup]]) {
    const int v = x[i];
    int a, b = -7;
    if (q % 2 == 0 || v > 10) {
        a = quad_sum(v);
    } else {
        a = quad_min(v) - 1000;
    }
    if (q < 2) {
        b = quad_shuffle_xor(v, 1) + quad_prefix_exclusive_sum(1) * 100;
    }
    out[2 * i + 0] = a;
    out[2 * i + 1] = b;
}
""",
    """
kernel void dv_switch_shared_cases(device const int* x [[buffer(0)]], device int* out [[buffer(1)]],
                                   uint i [[thread_position_in_grid]]) {
    const int v = x[i];
    int a = -5, b = -6;
    switch (v & 15) {
    case 4:
    case 6:
    case 13:
        a = simd_sum(1);
        b = simd_prefix_exclusive_sum(v);
        break;
    case 0:
    case 1:
    case 9:
        a = quad_sum(v);
        b = quad_prefix_inclusive_sum(1);
        break;
    case 3:
    case 5:
        a = int(popcount(uint(ulong(simd_active_threads_mask()))));
        b = simd_max(v);
        break;
    case 11:
        a = simd_min(v);
        break;
    default:
        int s = simd_sum(v);
        a = s;
        b = quad_prefix_inclusive_sum(2);
        break;
    }
    out[2 * i + 0] = a;
    out[2 * i + 1] = b;
}
""",
    """
kernel void dv_short_circuits(device const int* x [[buffer(0)]], device int* out [[buffer(1)]],
                              uint i [[thread_position_in_grid]]) {
    int a = -5, b = -6;
    if (x[i] > 20 || x[(i * 7u) % 256u] < -20) {
        a = simd_sum(1);
        b = quad_prefix_inclusive_sum(x[i]);
    }
    if (x[i] % 3 != 0 && x[(i * 5u + 3u) % 256u] > 0) {
        a += simd_prefix_exclusive_sum(1) * 1000;
    }
    out[2 * i + 0] = a;
    out[2 * i + 1] = b;
}
""",
    """
kernel void dv_conditional_operators(device const int* x [[buffer(0)]], device int* out [[buffer(1)]],
                                     uint i [[thread_position_in_grid]]) {
    const int v = x[i];
    const int u = x[(i * 7u) % 256u];
    int a = ((v % 3 == 0) ? (u < 10) : (v > u))
        ? simd_xor(v)
        : simd_or(v);
    int b = (v > 20 || u < -20)
        ? simd_sum(1)
        : simd_prefix_exclusive_sum(1);
    bool c = (v % 2 == 0)
        && simd_any(u > 40);
    bool d = (v > 50)
        || simd_all(u > -50);
    out[4 * i + 0] = a;
    out[4 * i + 1] = b;
    out[4 * i + 2] = int(c);
    out[4 * i + 3] = int(d);
}
""",
])

N = 256  # 4 threadgroups of 64


def _groups(x, w):
    """Each SIMD-group's values (threadgroups of 64 hold whole SIMD-groups at every width)."""
    return x.reshape(-1, w)


def _run(device, name, x, per_thread):
    kern = KS.get(device, name)
    out = np.full(N * per_thread, -99, np.int32)
    kern((N, 1, 1), x, out, threadgroup=(64, 1, 1))
    return kern.thread_execution_width, out.reshape(N, per_thread)


@pytest.fixture
def x(rng):
    return rng.integers(-60, 61, N).astype(np.int32)


def _exclusive_count(mask):
    return np.cumsum(mask) - mask


def test_if_else(device, x):
    w, got = _run(device, "dv_if_else", x, 4)
    want = np.zeros((N, 4), np.int64)
    for g, v in enumerate(_groups(x.astype(np.int64), w)):
        rows = slice(g * w, (g + 1) * w)
        t = v % 3 == 0
        f = ~t
        bits = sum(1 << j for j in range(w) if f[j] and v[j] > 0) & 0xFFFFFFFF
        want[rows, 0] = np.where(t, v[t].sum() if t.any() else 0, v[f].max() if f.any() else 0)
        want[rows, 1] = np.where(t, _exclusive_count(t), bits - (1 << 32) * (bits >= 1 << 31))
        want[rows, 2] = w
        want[rows, 3] = np.cumsum(v)
    assert_equal(got, want.astype(np.int32))


def test_switch_cases(device, x):
    w, got = _run(device, "dv_switch", x, 2)
    want = np.zeros((N, 2), np.int64)
    for g, v in enumerate(_groups(x.astype(np.int64), w)):
        rows = slice(g * w, (g + 1) * w)
        case = v & 3
        r = np.zeros(w, np.int64)
        for c in range(4):
            m = case == c
            if not m.any():
                continue
            if c == 0:
                r[m] = v[m].min()
            elif c == 1:
                r[m] = np.cumsum(v[m])
            elif c == 2:
                r[m] = m.sum()
            else:
                r[m] = v[np.argmax(m)]
        want[rows, 0] = r
        want[rows, 1] = r.sum()
    assert_equal(got, want.astype(np.int32))


def test_cases_of_several_labels(device, x):
    """A case of several labels (and `default`, which many values reach) runs its lanes together:
    the lanes of case 3 and case 5 at one simd_max, of 0, 1 and 9 at one quad_sum (fuzz seed 28800
    #266 on an H100: a quad_prefix_inclusive_sum in `case 3: case 5:` saw part of the quad, the
    lanes of each label reaching the case on a path of their own)."""
    w, got = _run(device, "dv_switch_shared_cases", x, 2)
    want = np.zeros((N, 2), np.int64)
    groups = {0: (4, 6, 13), 1: (0, 1, 9), 2: (3, 5), 3: (11,)}
    for g, v in enumerate(_groups(x.astype(np.int64), w)):
        rows = slice(g * w, (g + 1) * w)
        label = v & 15
        a = np.full(w, -5, np.int64)
        b = np.full(w, -6, np.int64)
        taken = np.zeros(w, bool)
        for c, labels in groups.items():
            m = np.isin(label, labels)
            taken |= m
            if not m.any():
                continue
            if c == 0:
                a[m] = m.sum()
                b[m] = _exclusive_count(np.where(m, v, 0))[m]
            elif c == 1:
                for q in range(0, w, 4):
                    mq = m[q:q + 4]
                    a[q:q + 4][mq] = v[q:q + 4][mq].sum()
                    b[q:q + 4][mq] = np.cumsum(mq)[mq]
            elif c == 2:
                a[m] = m.sum()
                b[m] = v[m].max()
            else:
                a[m] = v[m].min()
        d = ~taken
        if d.any():
            a[d] = v[d].sum()
            for q in range(0, w, 4):
                dq = d[q:q + 4]
                b[q:q + 4][dq] = 2 * np.cumsum(dq)[dq]
        want[rows, 0] = a
        want[rows, 1] = b
    assert_equal(got, want.astype(np.int32))


def test_short_circuit_conditions(device, x):
    """An `if` whose condition is `p || q` or `p && q` of loads runs its lanes together, whichever
    operand decided it."""
    w, got = _run(device, "dv_short_circuits", x, 2)
    xi = x.astype(np.int64)
    idx = np.arange(N)
    first = (xi > 20) | (xi[(idx * 7) % 256] < -20)
    second = (np.fmod(xi, 3) != 0) & (xi[(idx * 5 + 3) % 256] > 0)
    want = np.zeros((N, 2), np.int64)
    for g in range(N // w):
        sl = slice(g * w, (g + 1) * w)
        v, f, s = xi[sl], first[sl], second[sl]
        a = np.where(f, f.sum(), -5)
        b = np.full(w, -6, np.int64)
        for q in range(0, w, 4):
            fq = f[q:q + 4]
            b[q:q + 4][fq] = np.cumsum(np.where(fq, v[q:q + 4], 0))[fq]
        a[s] += _exclusive_count(s)[s] * 1000
        want[sl, 0] = a
        want[sl, 1] = b
    assert_equal(got, want.astype(np.int32))


def test_conditional_operators(device, x):
    """SIMD-group functions in a conditional's branches and in the right operand of `&&` and `||`
    act on the lanes that chose them, also where the condition branches itself (a conditional of
    conditionals: fuzz seed 30001 #45, where a simd_or saw part of its lanes on an H100)."""
    w, got = _run(device, "dv_conditional_operators", x, 4)
    xi = x.astype(np.int64)
    u_all = xi[(np.arange(N) * 7) % 256]
    want = np.zeros((N, 4), np.int64)
    for g in range(N // w):
        sl = slice(g * w, (g + 1) * w)
        v, u = xi[sl], u_all[sl]
        first = np.where(v % 3 == 0, u < 10, v > u)
        want[sl, 0] = np.where(first, np.bitwise_xor.reduce(v[first]) if first.any() else 0,
                               np.bitwise_or.reduce(v[~first]) if (~first).any() else 0)
        second = (v > 20) | (u < -20)
        want[sl, 1] = np.where(second, second.sum(), _exclusive_count(~second))
        even = v % 2 == 0
        want[sl, 2] = even & bool((u[even] > 40).any())
        big = v > 50
        want[sl, 3] = big | bool((u[~big] > -50).all())
    assert_equal(got, want.astype(np.int32))


def test_cases_falling_through(device, x):
    """Lanes falling from one case into the next meet the lanes that jumped there: case 3's lanes
    and case 2's at simd_sum, those and the default's at simd_ballot (fuzz seed 26102 #91, shrunk
    on an H200: `case 7: {} default: { v = simd_or(x); }` saw part of the lanes on CUDA)."""
    w, got = _run(device, "dv_switch_fall_through", x, 2)
    want = np.zeros((N, 2), np.int64)
    for g, v in enumerate(_groups(x.astype(np.int64), w)):
        rows = slice(g * w, (g + 1) * w)
        case = v & 3
        a = np.zeros(w, np.int64)
        b = np.zeros(w, np.int64)
        one = case == 1
        a[one] = _exclusive_count(one)[one]
        a[case == 3] = 2 * v[case == 3]
        summed = (case == 3) | (case == 2)
        b[summed] = v[summed].sum()
        balloted = summed | (case == 0)
        bits = sum(1 << j for j in range(w) if balloted[j] and v[j] > 0) & 0xFFFF
        a[balloted] += bits
        want[rows, 0] = a
        want[rows, 1] = b
    assert_equal(got, want.astype(np.int32))



def test_cases_falling_through_in_a_loop(device, x):
    """Cases falling through with the shapes a switch takes: labels naming enumerators and
    negative values, `default` in the middle, a `continue` of the loop ending a case, a braced
    case ending in `break`, a nested switch, and a case falling into the next after it
    (`[[fallthrough]]`). The
    lanes of each case meet those falling into it (on CUDA the switch is written as guarded
    blocks with the lanes rejoined between them, msl/passes/switch_fall_through.hpp)."""
    w, got = _run(device, "dv_switch_fall_through_shapes", x, 2)
    want = np.zeros((N, 2), np.int64)
    for g, v in enumerate(_groups(x.astype(np.int64), w)):
        rows = slice(g * w, (g + 1) * w)
        a = np.zeros(w, np.int64)
        b = np.zeros(w, np.int64)
        for k in range(3):
            r = np.fmod(v + k, 4)  # C's %: the dividend's sign
            first = (r == -1) | (r == 2)
            a[first] += first.sum()
            defaulted = first | (r == -3) | (r == -2)  # default: the lanes falling into it too
            b[defaulted] += v[defaulted].sum()
            a[defaulted & ((v & 8) == 0)] += 1
            zero = r == 0
            a[zero] += 2 * _exclusive_count(zero)[zero]
            one = r == 1
            odd = one & ((v & 1) == 1)
            a[one & ~odd] += 100
            if odd.any():
                a[odd] += v[odd].min()
            b[one] += 1
            last = one | (r == 3)
            if last.any():
                b[last] += (v[last] & 0xFF).max()
            a[~defaulted] += 10 * k  # the default's lanes continued the loop
        want[rows, 0] = a
        want[rows, 1] = b
    assert_equal(got, want.astype(np.int32))

def test_loops_inside_switch_cases(device, x):
    """A loop whose trip count differs between lanes, inside a braced case, then a SIMD-group
    function in the same case: it sees every lane of the case (on CUDA the lanes are rejoined
    after the loop inside the case, as after a loop anywhere else)."""
    w, got = _run(device, "dv_switch_case_loops", x, 2)
    want = np.zeros((N, 2), np.int64)
    for g, v in enumerate(_groups(x.astype(np.int64), w)):
        rows = slice(g * w, (g + 1) * w)
        even = (v & 1) == 0
        n = np.where(even, np.abs(v) % 5, np.abs(v) % 7)
        a = np.where(even, n * (n + 1) // 2, (n + 1) // 2 * 2)
        b = np.where(even, a[even].sum(), 0)
        b[~even] = np.cumsum(a[~even])
        want[rows, 0] = a
        want[rows, 1] = b
    assert_equal(got, want.astype(np.int32))


def test_loop_left_after_different_counts(device, x):
    w, got = _run(device, "dv_for_counts", x, 2)
    want = np.zeros((N, 2), np.int64)
    for g, v in enumerate(_groups(x.astype(np.int64), w)):
        rows = slice(g * w, (g + 1) * w)
        n = np.abs(v) % 6
        acc = np.zeros(w, np.int64)
        for k in range(6):
            m = n > k
            if m.any():
                acc[m] += (v[m] + k).sum()
        want[rows, 0] = acc
        want[rows, 1] = acc.sum()
    assert_equal(got, want.astype(np.int32))


def test_branch_changing_per_iteration(device, x):
    w, got = _run(device, "dv_branch_per_iteration", x, 2)
    want = np.zeros((N, 2), np.int64)
    lane = np.arange(w)
    for g, v in enumerate(_groups(x.astype(np.int64), w)):
        rows = slice(g * w, (g + 1) * w)
        a = np.zeros(w, np.int64)
        b = np.zeros(w, np.int64)
        for k in range(4):
            m = lane < k * (w // 4)
            if m.any():
                a[m] += v[m].sum()
            if (~m).any():
                b[~m] += (v[~m] + k).max()
        want[rows, 0], want[rows, 1] = a, b
    assert_equal(got, want.astype(np.int32))


def test_lanes_skipping_iterations(device, x):
    # The lanes that skip the call in an iteration must not run into the next one's.
    w, got = _run(device, "dv_skip_iterations", x, 1)
    want = np.zeros(N, np.int64)
    lane = np.arange(w)
    for g, v in enumerate(_groups(x.astype(np.int64), w)):
        a = np.zeros(w, np.int64)
        for k in range(4):
            m = lane < (k + 1) * (w // 4)
            a[m] += v[m].sum() * (k + 1)
        want[g * w:(g + 1) * w] = a
    assert_equal(got[:, 0], want.astype(np.int32))


def test_while_break_continue_and_do_while(device, x):
    w, got = _run(device, "dv_while_break_continue", x, 3)
    want = np.zeros((N, 3), np.int64)
    for g, v in enumerate(_groups(x.astype(np.int64), w)):
        rows = slice(g * w, (g + 1) * w)
        n = np.abs(v) % 5
        acc = np.zeros(w, np.int64)
        for k in range(1, 6):
            m = (k <= n) & ((k + v) % 2 != 0)
            acc[m] += k * _exclusive_count(m)[m]
        m_total = np.zeros(w, np.int64)
        for j in range(5):
            m = (j == 0) | (j < n)
            m_total[m] += m.sum()
        want[rows, 0] = acc
        want[rows, 1] = m_total
        want[rows, 2] = (n + 1).sum()
    assert_equal(got, want.astype(np.int32))


def test_after_early_return(device, x):
    w, got = _run(device, "dv_early_return", x, 3)
    want = np.full((N, 3), -1, np.int64)
    for g, v in enumerate(_groups(x.astype(np.int64), w)):
        rows = np.arange(g * w, (g + 1) * w)
        m = v >= 0
        if not m.any():
            continue
        bits = sum(1 << j for j in range(w) if m[j]) & 0xFFFFFFFF
        want[rows[m], 0] = v[m].sum()
        want[rows[m], 1] = bits - (1 << 32) * (bits >= 1 << 31)
        want[rows[m], 2] = 0
        want[rows[np.argmax(m)], 2] = 1
    assert_equal(got, want.astype(np.int32))


def test_shuffles_among_active_lanes(device, x):
    w, got = _run(device, "dv_shuffles", x, 3)
    want = np.full((N, 3), -7, np.int64)
    lane = np.arange(w)
    for g, v in enumerate(_groups(x.astype(np.int64), w)):
        rows = np.arange(g * w, (g + 1) * w)
        even = lane % 2 == 0
        want[rows, 0] = np.where(even, v[(lane ^ 2) % w], v[(lane ^ 4) % w])
        hi = lane >= 8
        want[rows[hi], 1] = np.where(lane[hi] + 8 < w, v[np.minimum(lane[hi] + 8, w - 1)], v[hi])
        pos = v > 0
        if pos.any():
            want[rows[pos], 2] = v[np.argmax(pos)]
    if w < 8:
        pytest.skip("needs 8 lanes")
    assert_equal(got, want.astype(np.int32))


def test_quad_functions_in_branches(device, x):
    w, got = _run(device, "dv_quads", x, 2)
    want = np.full((N, 2), -7, np.int64)
    for q0 in range(0, N, 4):
        v = x[q0:q0 + 4].astype(np.int64)
        ql = np.arange(4)
        t = (ql % 2 == 0) | (v > 10)
        want[q0 + ql[t], 0] = v[t].sum()
        if (~t).any():
            want[q0 + ql[~t], 0] = v[~t].min() - 1000
        lo = ql < 2
        want[q0 + ql[lo], 1] = v[ql[lo] ^ 1] + _exclusive_count(lo)[lo] * 100
    assert_equal(got, want.astype(np.int32))
