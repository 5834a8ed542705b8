"""SIMD-group functions reached through calls after divergent control flow: lanes that leave a
loop holding a SIMD-group call early (`break`, the loop's condition, `return` from a helper,
`continue` then `break`, nested loops, `do`/`while`, loops in lambdas and functors) and then call a helper,
a lambda or a functor defined on an earlier line that calls a SIMD-group function; SIMD-group
calls on the way out of a loop (before a `break`, in the value a helper, a void function or a
lambda returns from it), which act on the lanes leaving in that iteration only; lanes that
skip an `if` holding one and then call such a helper; one helper called from both branches of
an `if` and from two `switch` cases; a helper holding a threadgroup barrier after such a loop;
loops that call a lambda or functor holding a SIMD-group
call in some iterations only. MSL: a SIMD-group function acts on the lanes that reach that
call together; after a loop or a branch the lanes run together again, and a function called
from two branches runs once per branch. Each kernel is checked against a NumPy model of those
semantics (per SIMD-group, the active lanes of each call), on every device and at the
pipeline's own SIMD-group width. The CPU backend meets lanes by line inside their calls
(docs/design.md, "SIMD-group functions"): each SIMD-group call is on a line of its own."""

from __future__ import annotations

import numpy as np
import pytest

from mcconf import KernelSet, assert_equal

PREAMBLE = """
// The active lanes' count and sum, from a helper defined before every kernel.
int tally(int v) {
    const int n = simd_sum(1);
    return n * 10000 + simd_sum(v);
}

struct MinTally {
    int scale;
    int operator()(int a) const {
        const int n = simd_sum(1);
        return n * scale + simd_min(a);
    }
};

// A functor whose loop lanes leave after different counts.
struct Climb {
    int operator()(int a, int n) const {
        int acc = 0;
        for (int k = 0; k < 4; ++k) {
            if (k >= n) break;
            acc += simd_min(a - k);
        }
        return acc;
    }
};

// A functor whose own loop lanes leave after different counts, then a SIMD-group call after it:
// every lane that called it (on CUDA its body gets the rejoin a function's gets).
struct AfterLoop {
    int operator()(int a, int n) const {
        int acc = 0;
        for (int k = 0; k < n; ++k) acc += k + 1;
        return acc + simd_sum(a) * 100;
    }
};

// A helper named as a template argument (ggml's dispatch functions): its type is used, so the
// CPU backend leaves its signature alone.
int sum_of(int v) {
    return simd_sum(v);
}
typedef decltype(sum_of) sum_fn_t;
template <sum_fn_t fn>
int apply_to(int v) {
    return fn(v);
}

// A helper holding a threadgroup barrier: another thread's value, once every thread wrote its own.
int exchanged(threadgroup int* shared, int v, uint lid) {
    shared[lid] = v;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    return shared[63 - lid];
}

// Lanes return from inside the loop, at the iteration of their n, through a void function.
void put(device int* o, int value) {
    *o = value;
}
void walk_put(device int* o, int v, int n) {
    for (int k = 0; k < 4; ++k) {
        if (k == n)
            return put(o, simd_sum(v) + k);
    }
    *o = 7;
}

// Lanes return from inside the loop, at the iteration of their n.
int walk(int v, int n) {
    int acc = 0;
    for (int k = 0; k < 4; ++k) {
        if (k == n) {
            return acc + simd_sum(1) * 1000;
        }
        acc += simd_sum(v);
    }
    return acc + 1;
}
"""

KS = KernelSet([
    """
kernel void dc_loops_inside_callables(device const int* x [[buffer(0)]], device int* out [[buffer(1)]],
                                      uint i [[thread_position_in_grid]]) {
    const int v = x[i];
    auto g = [&](int a, int n) {
        int acc = 0;
        for (int k = 0; k < n; ++k) acc += 2 * k;
        return acc + simd_max(a) * 1000;
    };
    out[2 * i + 0] = AfterLoop()(v, abs(v) % 5);
    out[2 * i + 1] = g(v, abs(v) % 7);
}
""",
    """
kernel void dc_break_lambda(device const int* x [[buffer(0)]], device int* out [[buffer(1)]],
                            uint i [[thread_position_in_grid]]) {
    const int v = x[i];
    auto f = [&](int a) {
        const int n = simd_sum(1);
        return n * 10000 + simd_sum(a);
    };
    const int n = abs(v) % 5;
    int acc = 0;
    for (int k = 0; k < 4; ++k) {
        if (k == n) break;
        acc += simd_sum(v + k);
    }
    out[2 * i + 0] = acc;
    out[2 * i + 1] = f(v);
}
""",
    """
kernel void dc_condition_helper(device const int* x [[buffer(0)]], device int* out [[buffer(1)]],
                                uint i [[thread_position_in_grid]]) {
    const int v = x[i];
    const int n = abs(v) % 5;
    int acc = 0;
    for (int k = 0; k < n; ++k) {
        acc += simd_max(v - k);
    }
    out[2 * i + 0] = acc;
    out[2 * i + 1] = tally(v);
}
""",
    """
kernel void dc_continue_break_functor(device const int* x [[buffer(0)]], device int* out [[buffer(1)]],
                                      uint i [[thread_position_in_grid]]) {
    const int v = x[i];
    const int n = abs(v) % 5;
    const MinTally t{1000};
    int k = 0, acc = 0;
    while (k < 6) {
        ++k;
        if ((k + v) % 3 == 0) continue;
        if (k > n) break;
        acc += simd_prefix_exclusive_sum(k);
    }
    out[2 * i + 0] = acc;
    out[2 * i + 1] = t(v);
}
""",
    """
kernel void dc_do_while_helper(device const int* x [[buffer(0)]], device int* out [[buffer(1)]],
                               uint i [[thread_position_in_grid]]) {
    const int v = x[i];
    auto f = [&](int a) {
        const int n = simd_sum(1);
        return n * 10000 + simd_sum(a);
    };
    const int n = abs(v) % 5;
    int j = 0, acc = 0;
    do {
        if (j >= n) break;
        acc += tally(v + j);
        ++j;
    } while (j < 3);
    out[2 * i + 0] = acc;
    out[2 * i + 1] = f(v);
}
""",
    """
kernel void dc_nested_loops(device const int* x [[buffer(0)]], device int* out [[buffer(1)]],
                            uint i [[thread_position_in_grid]]) {
    const int v = x[i];
    auto f = [&](int a) {
        const int n = simd_sum(1);
        return n * 10000 + simd_sum(a);
    };
    const int n = abs(v) % 5;
    int acc = 0, g = 0;
    for (int o = 0; o < 3; ++o) {
        for (int k = 0; k < 4; ++k) {
            if (k + o >= n) break;
            acc += simd_sum(k + o);
        }
        g += f(o);
    }
    out[2 * i + 0] = acc;
    out[2 * i + 1] = g + tally(v);
}
""",
    """
kernel void dc_return_in_helper(device const int* x [[buffer(0)]], device int* out [[buffer(1)]],
                                uint i [[thread_position_in_grid]]) {
    const int v = x[i];
    const int n = abs(v) % 5;
    out[2 * i + 0] = walk(v, n);
    out[2 * i + 1] = tally(v);
}
""",
    """
kernel void dc_simd_then_break(device const int* x [[buffer(0)]], device int* out [[buffer(1)]],
                               uint i [[thread_position_in_grid]]) {
    const int v = x[i];
    const int n = abs(v) % 5;
    int acc = 0, left = -1;
    for (int k = 0; k < 4; ++k) {
        if (k == n) {
            const int count = simd_sum(1);
            left = count * 1000 + simd_min(v);
            break;
        }
        acc += simd_sum(v);
    }
    out[2 * i + 0] = acc;
    out[2 * i + 1] = left;
}
""",
    """
kernel void dc_return_from_loops_in_void_and_lambda(device const int* x [[buffer(0)]], device int* out [[buffer(1)]],
                                                    uint i [[thread_position_in_grid]]) {
    const int v = x[i];
    const int n = abs(v) % 5;
    auto first = [&](int a, int m) {
        for (int k = 0; k < 4; ++k)
            if (k == m) return simd_max(a) + k;
        return -1;
    };
    walk_put(out + 2 * i, v, n);
    out[2 * i + 1] = first(v, 4 - n);
}
""",
    """
kernel void dc_loop_in_lambda(device const int* x [[buffer(0)]], device int* out [[buffer(1)]],
                              uint i [[thread_position_in_grid]]) {
    const int v = x[i];
    auto count = [&](int a) {
        const int n = simd_sum(1);
        return n * 10000 + simd_sum(a);
    };
    auto scan = [&](int a, int n) {
        int acc = 0;
        for (int k = 0; k < 4; ++k) {
            if (k >= n) break;
            acc += simd_max(a + k);
        }
        return acc;
    };
    const int s = scan(v, abs(v) % 5);
    out[2 * i + 0] = s;
    out[2 * i + 1] = count(v);
}
""",
    """
kernel void dc_loop_in_functor(device const int* x [[buffer(0)]], device int* out [[buffer(1)]],
                               uint i [[thread_position_in_grid]]) {
    const int v = x[i];
    const Climb c;
    const int s = c(v, abs(v) % 5);
    out[2 * i + 0] = s;
    out[2 * i + 1] = tally(v);
}
""",
    """
kernel void dc_function_as_argument(device const int* x [[buffer(0)]], device int* out [[buffer(1)]],
                                    uint i [[thread_position_in_grid]]) {
    const int v = x[i];
    out[2 * i + 0] = apply_to<sum_of>(v);
    out[2 * i + 1] = sum_of(v + 1);
}
""",
    """
kernel void dc_loop_then_barrier_helper(device const int* x [[buffer(0)]], device int* out [[buffer(1)]],
                                        uint i [[thread_position_in_grid]],
                                        uint lid [[thread_position_in_threadgroup]]) {
    threadgroup int shared[64];
    const int v = x[i];
    int acc = 0;
    for (int k = 0; k < abs(v) % 5; ++k) {
        acc += simd_sum(1);
    }
    out[2 * i + 0] = acc;
    out[2 * i + 1] = exchanged(shared, v, lid);
}
""",
    """
kernel void dc_if_then_helper(device const int* x [[buffer(0)]], device int* out [[buffer(1)]],
                              uint i [[thread_position_in_grid]]) {
    const int v = x[i];
    int a = 0;
    if (v > 0) {
        a = simd_sum(v);
    }
    out[2 * i + 0] = a;
    out[2 * i + 1] = tally(v);
}
""",
    """
kernel void dc_helper_in_both_branches(device const int* x [[buffer(0)]], device int* out [[buffer(1)]],
                                       uint i [[thread_position_in_grid]]) {
    const int v = x[i];
    auto f = [&](int a) {
        const int n = simd_sum(1);
        return n * 10000 + simd_sum(a);
    };
    int r, s;
    if (v % 2 == 0) {
        r = tally(v);
    } else {
        r = -tally(v + 1);
    }
    switch (abs(v) % 3) {
    case 0:
        s = f(v);
        break;
    case 1:
        s = f(2 * v);
        break;
    default:
        s = 7;
        break;
    }
    out[2 * i + 0] = r;
    out[2 * i + 1] = s;
}
""",
    """
kernel void dc_calls_skipped_per_iteration(device const int* x [[buffer(0)]], device int* out [[buffer(1)]],
                                           uint i [[thread_position_in_grid]], uint l [[thread_index_in_simdgroup]],
                                           uint w [[threads_per_simdgroup]]) {
    const int v = x[i];
    auto f = [&](int a) {
        return simd_sum(a);
    };
    const MinTally t{100};
    int a = 0, b = 0;
    for (int k = 0; k < 4; ++k)
        if (int(l) < (k + 1) * int(w / 4))
            a += f(v) * (k + 1);
    for (int k = 0; k < 4; ++k) {
        if (int(l) >= k * int(w / 4)) {
            b += t(v + k);
        }
    }
    out[2 * i + 0] = a;
    out[2 * i + 1] = b;
}
""",
], preamble=PREAMBLE)

N = 256  # 4 threadgroups of 64


def _tally(v, m):
    """tally() / the lambdas' count and sum over the lanes m."""
    return m.sum() * 10000 + v[m].sum()


def _exclusive_count(mask):
    return np.cumsum(mask) - mask


def _all(v):
    return np.full(len(v), _tally(v, v == v))


# NumPy models of one SIMD-group: (its lanes' values v, the width w) -> (w, 2), the kernel's two
# outputs per lane.


def _loops_inside_callables(v, w):
    n5, n7 = np.abs(v) % 5, np.abs(v) % 7
    return np.stack([n5 * (n5 + 1) // 2 + 100 * v.sum(), n7 * (n7 - 1) + 1000 * v.max()], 1)


def _break_then_lambda(v, w):
    n = np.abs(v) % 5
    acc = np.zeros(w, np.int64)
    for k in range(4):
        m = n > k
        acc[m] += (v[m] + k).sum()
    return np.stack([acc, _all(v)], 1)


def _condition_then_helper(v, w):
    n = np.abs(v) % 5
    acc = np.zeros(w, np.int64)
    for k in range(5):
        m = n > k
        if m.any():
            acc[m] += (v[m] - k).max()
    return np.stack([acc, _all(v)], 1)


def _continue_and_break_then_functor(v, w):
    n = np.abs(v) % 5
    acc = np.zeros(w, np.int64)
    alive = np.ones(w, bool)
    for k in range(1, 7):
        cont = np.fmod(k + v, 3) == 0
        brk = alive & ~cont & (k > n)
        m = alive & ~cont & ~brk
        acc[m] += k * _exclusive_count(m)[m]
        alive &= ~brk
    return np.stack([acc, np.full(w, w * 1000 + v.min())], 1)


def _do_while_break_then_lambda(v, w):
    n = np.abs(v) % 5
    acc = np.zeros(w, np.int64)
    for j in range(3):
        m = n > j
        if m.any():
            acc[m] += _tally(v + j, m)
    return np.stack([acc, _all(v)], 1)


def _nested_loops_then_lambda_and_helper(v, w):
    n = np.abs(v) % 5
    acc = np.zeros(w, np.int64)
    g = np.zeros(w, np.int64)
    for o in range(3):
        for k in range(4):
            m = k + o < n
            acc[m] += (k + o) * m.sum()
        g += w * 10000 + o * w
    return np.stack([acc, g + _all(v)], 1)


def _return_from_loop_in_helper_then_helper(v, w):
    n = np.abs(v) % 5
    acc = np.zeros(w, np.int64)
    r = np.zeros(w, np.int64)
    for k in range(4):
        back = n == k
        r[back] = acc[back] + back.sum() * 1000
        m = n > k
        acc[m] += v[m].sum()
    r[n == 4] = acc[n == 4] + 1
    return np.stack([r, _all(v)], 1)


def _simd_then_break(v, w):
    n = np.abs(v) % 5
    acc = np.zeros(w, np.int64)
    left = np.full(w, -1, np.int64)
    for k in range(4):
        m = n == k
        if m.any():
            left[m] = m.sum() * 1000 + v[m].min()
        m = n > k
        acc[m] += v[m].sum()
    return np.stack([acc, left], 1)


def _return_from_loops_in_void_and_lambda(v, w):
    n = np.abs(v) % 5
    put = np.full(w, 7, np.int64)
    first = np.full(w, -1, np.int64)
    for k in range(4):
        m = n == k
        put[m] = v[m].sum() + k
        m = 4 - n == k
        if m.any():
            first[m] = v[m].max() + k
    return np.stack([put, first], 1)


def _loop_then_lanes(combine):
    """A loop whose lanes leave after abs(v) % 5 iterations, each adding combine(active values + k
    or - k), then tally() of all lanes (the lambda and functor loops)."""
    def model(v, w):
        n = np.abs(v) % 5
        acc = np.zeros(w, np.int64)
        for k in range(4):
            m = n > k
            if m.any():
                acc[m] += combine(v[m], k)
        return np.stack([acc, _all(v)], 1)
    return model


def _template_argument(v, w):
    return np.stack([np.full(w, v.sum()), np.full(w, (v + 1).sum())], 1)


def _if_skipped_then_helper(v, w):
    pos = v > 0
    return np.stack([np.where(pos, v[pos].sum(), 0), _all(v)], 1)


def _one_helper_from_both_branches(v, w):
    even = np.fmod(v, 2) == 0
    r = np.where(even, _tally(v, even), -_tally(v + 1, ~even))
    case = np.abs(v) % 3
    s = np.where(case == 0, _tally(v, case == 0), np.where(case == 1, _tally(2 * v, case == 1), 7))
    return np.stack([r, s], 1)


def _lambda_and_functor_skipped_in_some_iterations(v, w):
    lane = np.arange(w)
    a = np.zeros(w, np.int64)
    b = np.zeros(w, np.int64)
    for k in range(4):
        m = lane < (k + 1) * (w // 4)
        a[m] += v[m].sum() * (k + 1)
        m = lane >= k * (w // 4)
        b[m] += m.sum() * 100 + (v[m] + k).min()
    return np.stack([a, b], 1)


def _per_simd_group(model):
    def whole(x, w):
        return np.concatenate([model(v, w) for v in x.astype(np.int64).reshape(-1, w)])
    return whole


def _loop_then_helper_with_barrier(x, w):
    """The barrier in the helper waits for the lanes still in the loop (fuzz seed 9002 program
    260): the loop's count per lane, then the value of the mirror thread of the threadgroup."""
    want = np.zeros((N, 2), np.int64)
    for g, v in enumerate(x.astype(np.int64).reshape(-1, w)):
        n = np.abs(v) % 5
        want[g * w:(g + 1) * w, 0] = [sum(int((n > k).sum()) for k in range(m)) for m in n]
    want[:, 1] = x.reshape(-1, 64)[:, ::-1].reshape(-1)
    return want


# kernel -> model of the whole dispatch: (x, the pipeline's SIMD-group width) -> (N, 2)
CASES = {
    "dc_break_lambda": _per_simd_group(_break_then_lambda),
    "dc_condition_helper": _per_simd_group(_condition_then_helper),
    "dc_continue_break_functor": _per_simd_group(_continue_and_break_then_functor),
    "dc_do_while_helper": _per_simd_group(_do_while_break_then_lambda),
    "dc_nested_loops": _per_simd_group(_nested_loops_then_lambda_and_helper),
    "dc_return_in_helper": _per_simd_group(_return_from_loop_in_helper_then_helper),
    "dc_simd_then_break": _per_simd_group(_simd_then_break),
    "dc_return_from_loops_in_void_and_lambda": _per_simd_group(_return_from_loops_in_void_and_lambda),
    "dc_loop_in_lambda": _per_simd_group(_loop_then_lanes(lambda a, k: (a + k).max())),
    "dc_loop_in_functor": _per_simd_group(_loop_then_lanes(lambda a, k: (a - k).min())),
    "dc_function_as_argument": _per_simd_group(_template_argument),
    "dc_loop_then_barrier_helper": _loop_then_helper_with_barrier,
    "dc_if_then_helper": _per_simd_group(_if_skipped_then_helper),
    "dc_helper_in_both_branches": _per_simd_group(_one_helper_from_both_branches),
    "dc_calls_skipped_per_iteration": _per_simd_group(_lambda_and_functor_skipped_in_some_iterations),
    "dc_loops_inside_callables": _per_simd_group(_loops_inside_callables),
}


@pytest.fixture
def x(rng):
    return rng.integers(-60, 61, N).astype(np.int32)


def test_every_kernel_is_in_the_table():
    assert set(CASES) == set(KS.kernel_names)


@pytest.mark.parametrize("name", list(CASES))
def test_kernel_matches_model(device, x, name):
    kern = KS.get(device, name)
    out = np.full(2 * N, -99, np.int32)
    kern((N, 1, 1), x, out, threadgroup=(64, 1, 1))
    w = kern.thread_execution_width
    assert_equal(out.reshape(N, 2), CASES[name](x, w).astype(np.int32))
