"""Loops run in strips keep their meaning (P2.4 item 4: the stop check's cost). On the CPU the
translator runs a loop that counts in strips of at most 4096 iterations with the stop check
once per strip (msl/passes/loop_strips.hpp): a strip ends on the loop's own variable where the
loop counts one by one (so the strip's loop vectorises), else on a counter; a `break` leaves
the strip with a flag that leaves the loop too; other loops check a counter each iteration. These kernels exercise every exit (break, continue, return,
breaks of nested loops and switches), counting up and down, near the ends of each integer
type, loops that write their own variable, and loops longer than a strip, against the same
loops run in Python. CUDA runs its innermost loops in strips of 1024 (a loop with a loop inside,
a `do` loop and a loop whose condition has effects check a counter each iteration there); the
same kernels built with METALCALL_LOOP_STOP_CHECKS=0 (no checks, no strips) give the same
values."""

from __future__ import annotations

import numpy as np
import pytest

SOURCE = r"""
#include <metal_stdlib>
using namespace metal;

constexpr int triangle(int n) { int s = 0; for (int k = 0; k < n; ++k) s += k; return s; }
constexpr int first_square_over(int x) {
    for (int k = 0; k < 100; ++k) { if (k * k > x) return k; }
    return -1;
}
constant int kTriangle = triangle(100);
constant int kFirstSquare = first_square_over(5000);

uint find_first(const device uint* a, uint n, uint value) {
    for (uint k = 0; k < n; ++k)
        if (a[k] == value) return k;
    return n;
}

kernel void exits(const device uint* a [[buffer(0)]], device long* out [[buffer(1)]],
                  constant uint& n [[buffer(2)]], constant uint& stop_at [[buffer(3)]],
                  uint tid [[thread_position_in_grid]]) {
    long sum = 0;
    uint last = 0;
    for (uint k = 0; k < n; ++k) {          // up, continue and break
        if (k % 7u == 3u) continue;
        if (k == stop_at) break;
        sum += long(a[k]);
        last = k;
    }
    out[0] = sum;
    out[1] = last;
    long down = 0;
    for (int k = int(n) - 1; k >= 0; --k) {  // down to 0 inclusive, signed
        if (uint(k) == stop_at) break;
        down += long(a[k]) * (k & 3);
    }
    out[2] = down;
    uint j = 0, x = 0;
    while (j < n) {                           // while with break
        if (a[j] == stop_at) break;
        x ^= a[j] + j;
        ++j;
    }
    out[3] = x;
    out[4] = j;
    uint m = 0;
    for (;;) {                                // no condition: only the break ends it
        if (m >= n || m == stop_at) break;
        ++m;
    }
    out[5] = m;
    long nested = 0;
    for (uint p = 0; p < 3u; ++p) {           // an inner break leaves the inner loop only
        for (uint q = p; q < n; q += 1u) {
            if (q == stop_at) break;
            switch (a[q] & 3u) {
                case 0: nested += 1; break;   // the switch's break
                case 1: continue;
                default: nested += p + 2;
            }
        }
        nested *= 3;
    }
    out[6] = nested;
    out[7] = find_first(a, n, stop_at);       // return from inside the loop
    long mirrored = 0;
    for (uint k = 0; n > k; k++) mirrored += a[k] >> 3;   // n > k: the same as k < n
    out[8] = mirrored;
    long own = 0;
    for (uint k = 0; k < n; ++k) {            // the body steps the variable too
        if (a[k] % 3u == 0u) ++k;
        own += k;
    }
    out[9] = own;
    out[10] = kTriangle;
    out[11] = kFirstSquare;
}

kernel void type_ends(device long* out [[buffer(0)]], constant uint& span [[buffer(1)]],
                      uint tid [[thread_position_in_grid]]) {
    long count = 0;
    for (uint k = 0xFFFFFFFFu - span; k < 0xFFFFFFFFu; ++k) count += k & 1u;     // up to uint's end
    out[0] = count;
    count = 0;
    for (int k = 0x7FFFFFFF - int(span); k <= 0x7FFFFFFF - 1; ++k) count += 1;  // <= near int's end
    out[1] = count;
    count = 0;
    for (int k = int(0x80000000u) + int(span); k > int(0x80000000u); --k) count += k & 7;  // down to int's start
    out[2] = count;
    count = 0;
    for (long k = 0x7FFFFFFFFFFFFFFFl - long(span); k < 0x7FFFFFFFFFFFFFFFl; k++) count += 2;
    out[3] = count;
    count = 0;
    for (ulong k = ulong(span); k > 0ul; k -= 1) count += long(k % 5ul);         // down to 0, exclusive
    out[4] = count;
    count = 0;
    for (uchar c = uchar(250); c != uchar(4); ++c) count += c;                   // wraps: not counted
    out[5] = count;
    count = 0;
    for (ushort s = 0; s < ushort(span); ++s) count += s;                         // promoted comparison
    out[6] = count;
    count = 0;
    for (int k = -int(span); k < int(span); k++) count += k * k;
    out[7] = count;
    count = 0;
    for (uint k = 0; k <= span; ++k) count += 1;                                  // unsigned <=
    out[8] = count;
}
"""


def exits_reference(a: np.ndarray, n: int, stop_at: int) -> list[int]:
    a = [int(v) for v in a]
    out = [0] * 12
    s, last = 0, 0
    for k in range(n):
        if k % 7 == 3:
            continue
        if k == stop_at:
            break
        s += a[k]
        last = k
    out[0], out[1] = s, last
    down = 0
    for k in range(n - 1, -1, -1):
        if k == stop_at:
            break
        down += a[k] * (k & 3)
    out[2] = down
    j, x = 0, 0
    while j < n:
        if a[j] == stop_at:
            break
        x ^= (a[j] + j) & 0xFFFFFFFF
        j += 1
    out[3], out[4] = x, j
    m = 0
    while not (m >= n or m == stop_at):
        m += 1
    out[5] = m
    nested = 0
    for p in range(3):
        for q in range(p, n):
            if q == stop_at:
                break
            r = a[q] & 3
            if r == 0:
                nested += 1
            elif r == 1:
                continue
            else:
                nested += p + 2
        nested *= 3
    out[6] = nested
    out[7] = next((k for k in range(n) if a[k] == stop_at), n)
    out[8] = sum(v >> 3 for v in a[:n])
    own, k = 0, 0
    while k < n:
        if a[k] % 3 == 0:
            k += 1
        own += k
        k += 1
    out[9] = own
    out[10] = sum(range(100))
    out[11] = next(k for k in range(100) if k * k > 5000)
    return out


def type_ends_reference(span: int) -> list[int]:
    out = [0] * 9
    out[0] = sum(k & 1 for k in range(0xFFFFFFFF - span, 0xFFFFFFFF))
    out[1] = span
    int_min = -(2**31)
    out[2] = sum(k & 7 for k in range(int_min + span, int_min, -1))
    out[3] = 2 * span
    out[4] = sum(k % 5 for k in range(span, 0, -1))
    out[5] = sum(c % 256 for c in range(250, 256 + 4))
    out[6] = sum(range(span % 65536))
    out[7] = sum(k * k for k in range(-span, span))
    out[8] = span + 1
    return out


# Strips are 4096 iterations long on the CPU and 1024 on CUDA: both ends of both.
@pytest.mark.parametrize("n, stop_at", [(0, 0), (1, 5), (100, 2**32 - 1), (1023, 1000), (1024, 1024), (1025, 1024),
                                        (2049, 2048), (4095, 4000), (4096, 4096), (4097, 4096), (10000, 9000),
                                        (10000, 2**32 - 1), (12289, 8193)])
def test_every_exit_of_a_strip_mined_loop(device, n, stop_at):
    rng = np.random.default_rng(n + stop_at)
    a = rng.integers(0, 1 << 20, max(n, 1), dtype=np.uint32)
    if n > 2:
        a[n // 2] = stop_at & 0xFFFFFFFF  # the while loop's and find_first's value, halfway
    lib = device.compile(SOURCE)
    out = np.zeros(12, np.int64)
    lib.exits(1, a, out, np.uint32(n), np.uint32(stop_at))
    assert out.tolist() == exits_reference(a, n, stop_at)


@pytest.mark.parametrize("span", [1, 10, 1023, 1024, 1025, 4095, 4096, 4097, 9000])
def test_loops_at_the_ends_of_their_types(device, span):
    lib = device.compile(SOURCE)
    out = np.zeros(9, np.int64)
    lib.type_ends(1, out, np.uint32(span))
    assert out.tolist() == type_ends_reference(span)


# Random counting loops (every integer type, up and down, <, <=, >, >=, near the type's ends,
# with continue, break and return at random iterations, longer than a strip), seeded.
_TYPES = {"int": (-2**31, 2**31 - 1), "uint": (0, 2**32 - 1), "long": (-2**63, 2**63 - 1),
          "ulong": (0, 2**64 - 1), "short": (-2**15, 2**15 - 1), "ushort": (0, 2**16 - 1)}


def _random_loop(rng, i):
    t = rng.choice(sorted(_TYPES))
    lo, hi = _TYPES[t]
    up = rng.random() < 0.6
    op = rng.choice(["<", "<="] if up else [">", ">="])
    n = rng.choice([0, 1, 5, 1023, 1024, 1025, 4095, 4096, 4097, 9000, 12289])
    near = rng.random() < 0.3
    if up:
        start = hi - n - 2 if near else (rng.randint(-5000, 5000) if lo < 0 else rng.randint(0, 5000))
        bound = start + n
    else:
        start = lo + n + 2 if near else rng.randint(n, n + 5000)
        bound = start - n
    step = rng.choice(["++v", "v++", "v += 1"] if up else ["--v", "v--", "v -= 1"])
    suffix = {"uint": "u", "ushort": "u", "ulong": "ul", "long": "l"}.get(t, "")
    brk = rng.choice([None, rng.randint(0, max(n, 1))])
    cont = rng.choice([None, 3, 7])
    ret = rng.choice([None, None, rng.randint(0, max(n, 1))])
    body = []
    if cont:
        body.append(f"if ((c & 7) == {cont}) {{ ++c; continue; }}")
    if brk is not None:
        body.append(f"if (c == {brk}u) break;")
    if ret is not None:
        body.append(f"if (c == {ret}u) return s * 3 + c;")
    body.append("s += ulong(v) * 7u + c; ++c;")
    source = (f"ulong f{i}() {{ ulong s = 0; uint c = 0;\n"
              f"  for ({t} v = {t}({start}{suffix}); v {op} {t}({bound}{suffix}); {step}) {{ {' '.join(body)} }}\n"
              f"  return s * 5 + c; }}")
    m = 2**64
    s = c = 0
    v = start
    while v < bound if op == "<" else v <= bound if op == "<=" else v > bound if op == ">" else v >= bound:
        if cont and (c & 7) == cont:
            c += 1
        else:
            if brk is not None and c == brk:
                break
            if ret is not None and c == ret:
                return source, (s * 3 + c) % m
            s, c = (s + (v % m) * 7 + c) % m, c + 1
        v = v + 1 if up else v - 1
    return source, (s * 5 + c) % m


@pytest.mark.parametrize("seed", [1, 2])
def test_random_counting_loops(device, seed):
    import random

    rng = random.Random(seed)
    loops = [_random_loop(rng, i) for i in range(40)]
    src = ("#include <metal_stdlib>\nusing namespace metal;\n" + "\n".join(s for s, _ in loops) +
           "\nkernel void k(device ulong* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {\n" +
           "\n".join(f"  out[{i}] = f{i}();" for i in range(len(loops))) + "\n}\n")
    out = np.zeros(len(loops), np.uint64)
    device.compile(src).k(1, out)
    assert [int(x) for x in out] == [want for _, want in loops]


# Loop shapes beyond counting loops: a grid-stride loop, loops that write their own variable or
# their bound, `for (;;)` left by return, `while` with continue, `do` loops (with continue and
# break), a loop around an inner loop, a condition with an effect (not strip-mined), a short loop
# of a literal count, each in a thread of its own, against Python.
SHAPES = r"""
#include <metal_stdlib>
using namespace metal;
uint first_over(const device uint* a, uint n, uint limit) {
    for (uint k = 0;; ++k) {
        if (k >= n) return n;
        if (a[k] > limit) return k;
    }
}
kernel void shapes(const device uint* a [[buffer(0)]], device ulong* out [[buffer(1)]],
                   constant uint& n [[buffer(2)]], uint t [[thread_position_in_grid]],
                   uint threads [[threads_per_grid]]) {
    ulong r = 0;
    if (t < 4u) {                              // a grid-stride loop over the first four threads
        for (uint k = t; k < n; k += 4u) r += ulong(a[k]) * (k + 1u);
    } else if (t == 4u) {                      // the body moves the variable and the bound
        uint m = n;
        for (uint k = 0; k < m; ++k) {
            if (a[k] % 5u == 0u) k += 2u;
            if (a[k % n] % 7u == 0u && m > 0u) --m;
            r = r * 31u + k;
        }
    } else if (t == 5u) {
        r = first_over(a, n, 0xFFF00u);        // for (;;), left by return
    } else if (t == 6u) {                      // while with continue
        uint k = 0;
        while (k < n) {
            uint v = a[k++];
            if (v & 1u) continue;
            r += v;
        }
    } else if (t == 7u) {                      // do with continue and break
        uint k = 0;
        do {
            if (k >= n) break;
            if (a[k] % 3u == 0u) { k += 2u; continue; }
            r ^= ulong(a[k]) << (k & 15u);
            ++k;
        } while (k < n);
    } else if (t == 8u) {                      // a loop around an inner loop
        for (uint k = 0; k < n; k += 97u)
            for (uint j = k; j < min(k + 97u, n); ++j) r += a[j] & 0xFFu;
    } else if (t == 9u) {                      // a condition with an effect: checked each iteration
        uint k = 0;
        while (k++ < n) r += a[k - 1u] >> 4;
    } else if (t == 10u) {                     // a short loop of a literal count
        for (uint k = 0; k < 16u; ++k) r += a[k % max(n, 1u)] * k;
    } else if (t == 11u) {                     // counting down by more than one
        for (int k = int(n) - 1; k >= 0; k -= 3) r = r * 3u + uint(k);
    }
    out[t] = r;
}
"""


def shapes_reference(a, n):
    a = [int(v) for v in a]
    m64 = 2**64
    out = [0] * 12
    for t in range(4):
        out[t] = sum(a[k] * (k + 1) for k in range(t, n, 4)) % m64
    r, k, m = 0, 0, n
    while k < m:
        if a[k] % 5 == 0:
            k += 2
        if a[k % n] % 7 == 0 and m > 0:
            m -= 1
        r = (r * 31 + k) % m64
        k += 1
    out[4] = r
    out[5] = next((k for k in range(n) if a[k] > 0xFFF00), n)
    out[6] = sum(v for v in a[:n] if not v & 1)
    r, k = 0, 0
    while True:
        if k >= n:
            break
        if a[k] % 3 == 0:
            k += 2
        else:
            r ^= a[k] << (k & 15)
            k += 1
        if not k < n:
            break
    out[7] = r
    out[8] = sum(v & 0xFF for v in a[:n])
    out[9] = sum(v >> 4 for v in a[:n])
    out[10] = sum(a[k % max(n, 1)] * k for k in range(16))
    r = 0
    for k in range(n - 1, -1, -3):
        r = (r * 3 + k) % m64
    out[11] = r
    return out


# defines: the target's strips; strips of 1, 3 or 1024 iterations (METALCALL_LOOP_STRIP, a prelude
# option for tests: many strip ends); no checks and no strips (METALCALL_LOOP_STOP_CHECKS=0).
VARIANTS = {"strips": None, "strips of 1": {"METALCALL_LOOP_STRIP": "1"}, "strips of 3": {"METALCALL_LOOP_STRIP": "3"},
            "strips of 1024": {"METALCALL_LOOP_STRIP": "1024"}, "no checks": {"METALCALL_LOOP_STOP_CHECKS": "0"}}


@pytest.mark.parametrize("n", [1, 5, 1023, 1025, 4097, 9001])
@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_loop_shapes_in_strips(device, n, variant):
    rng = np.random.default_rng(n)
    a = rng.integers(0, 1 << 20, n + 2, dtype=np.uint32)  # k may step two past the end in shape 4
    a[n // 2] = 0xFFFFF  # first_over's find
    lib = device.compile(SHAPES, defines=VARIANTS[variant])
    out = np.zeros(12, np.uint64)
    lib.shapes(12, a, out, np.uint32(n))
    assert [int(x) for x in out] == shapes_reference(a, n)


@pytest.mark.parametrize("n, stop_at", [(0, 0), (2, 1), (7, 6), (100, 50), (1025, 1024), (4097, 4096)])
@pytest.mark.parametrize("variant", ["strips of 1", "strips of 3", "no checks"])
def test_every_exit_in_short_strips_and_none(device, n, stop_at, variant):
    rng = np.random.default_rng(n + stop_at)
    a = rng.integers(0, 1 << 20, max(n, 1), dtype=np.uint32)
    if n > 2:
        a[n // 2] = stop_at & 0xFFFFFFFF
    lib = device.compile(SOURCE, defines=VARIANTS[variant])
    out = np.zeros(12, np.int64)
    lib.exits(1, a, out, np.uint32(n), np.uint32(stop_at))
    assert out.tolist() == exits_reference(a, n, stop_at)


@pytest.mark.parametrize("span", [1, 2, 3, 4, 10])
@pytest.mark.parametrize("variant", ["strips of 1", "strips of 3"])
def test_type_ends_in_short_strips(device, span, variant):
    lib = device.compile(SOURCE, defines=VARIANTS[variant])
    out = np.zeros(9, np.int64)
    lib.type_ends(1, out, np.uint32(span))
    assert out.tolist() == type_ends_reference(span)


# Steps other than one (`k += step`, `k -= step` of a variable held by value, as a grid-stride
# loop's `k += threads`): the strip ends `step * L` on where that stays inside the type, else it
# counts. Near the ends of the types, up and down, with a step computed in the kernel.
STRIDES = r"""
#include <metal_stdlib>
using namespace metal;
kernel void strides(device long* out [[buffer(0)]], constant uint& span [[buffer(1)]],
                    constant uint& step_in [[buffer(2)]], uint t [[thread_position_in_grid]]) {
    const uint step = step_in;
    long count = 0;
    for (uint k = 0xFFFFFFFFu - span * step; k < 0xFFFFFFFFu; k += step) count += k & 7u;
    out[0] = count;
    count = 0;
    const int istep = int(step);
    for (int k = int(0x80000000u) + int(span) * istep; k > int(0x80000000u); k -= istep) count += k & 7;
    out[1] = count;
    count = 0;
    const long lstep = long(step);
    for (long k = -long(span) * lstep; k < long(span) * lstep; k += lstep) count += k;
    out[2] = count;
    count = 0;
    const uint twice = step * 2u;
    for (uint k = 0; k < span * twice; k += twice) { if (k % 3u == 1u) continue; count += k; }
    out[3] = count;
    count = 0;
    for (int k = 0; k <= int(span) * istep; k += istep) { if (k == 40 * istep) break; count += k; }
    out[4] = count;
}
"""


def strides_reference(span, step):
    out = [0] * 5
    out[0] = sum(k & 7 for k in range(0xFFFFFFFF - span * step, 0xFFFFFFFF, step))
    int_min = -(2**31)
    out[1] = sum(k & 7 for k in range(int_min + span * step, int_min, -step))
    out[2] = sum(range(-span * step, span * step, step))
    out[3] = sum(k for k in range(0, span * 2 * step, 2 * step) if k % 3 != 1)
    out[4] = sum(k for k in range(0, span * step + 1, step) if k < 40 * step)
    return out


@pytest.mark.parametrize("span, step", [(1, 1), (3, 2), (1023, 7), (1025, 3), (5000, 2), (9000, 1)])
@pytest.mark.parametrize("variant", ["strips", "strips of 3", "no checks"])
def test_strides_in_strips(device, span, step, variant):
    lib = device.compile(STRIDES, defines=VARIANTS[variant])
    out = np.zeros(5, np.int64)
    lib.strides(1, out, np.uint32(span), np.uint32(step))
    assert out.tolist() == strides_reference(span, step)


# Grid-stride loops (`for (uint k = t; k < n; k += step)`): on the CPU such a loop stays as written
# and checks its counter only when short_run (metal_stop.h) cannot bound it to 4096 iterations
# before it starts (unsigned, step > 0, n <= step * 4096 for `<`, n < step * 4096 for `<=`, k +
# step inside the type); on CUDA it runs in strips. Bounds on both sides of those limits, a step
# at the limit of the type, `<=`, a continue and a break, a 64-bit variable: the same values as
# Python's loops either way.
GRID_STRIDES = r"""
#include <metal_stdlib>
using namespace metal;
kernel void grid_strides(device ulong* out [[buffer(0)]], constant uint& n [[buffer(1)]],
                         constant uint& step_in [[buffer(2)]], uint t [[thread_position_in_grid]]) {
    const uint step = step_in;
    ulong count = 0;
    for (uint k = t; k < n; k += step) count += k;
    out[0] = count;
    count = 0;
    for (uint k = t; k <= n; k += step) { if (k % 5u == 2u) continue; count += k ^ 3u; }
    out[1] = count;
    count = 0;
    const ulong lstep = ulong(step);
    for (ulong k = ulong(t); k < ulong(n) * 3ul; k += lstep) { if (k == 7ul * lstep) break; count += k; }
    out[2] = count;
    count = 0;
    for (uint k = t + 1u; k < n; k += step) count += 1;
    out[3] = count;
}
"""


def grid_strides_reference(n, step):
    out = [0] * 4
    out[0] = sum(range(0, n, step))
    out[1] = sum(k ^ 3 for k in range(0, n + 1, step) if k % 5 != 2)
    out[2] = sum(k for k in range(0, n * 3, step) if k < 7 * step)
    out[3] = len(range(1, n, step))
    return out


@pytest.mark.parametrize("step", [1, 3, 1048575, 1048576])
@pytest.mark.parametrize("edge", [0, 5, "limit-1", "limit", "limit+1"])
@pytest.mark.parametrize("variant", ["strips", "strips of 3", "no checks"])
def test_grid_stride_loops(device, step, edge, variant):
    n = {0: 0, 5: 5, "limit-1": step * 4096 - 1, "limit": step * 4096, "limit+1": step * 4096 + 1}[edge]
    if n * 3 >= 2**64 or n > 2**32 - 2 - step:
        pytest.skip("the loop as written would wrap its variable")
    lib = device.compile(GRID_STRIDES, defines=VARIANTS[variant])
    out = np.zeros(4, np.uint64)
    lib.grid_strides(1, out, np.uint32(n), np.uint32(step))
    assert out.tolist() == grid_strides_reference(n, step)


def test_strips_leave_kernels_a_plain_loop(device):
    """A loop in strips makes no kernel wait for its other threads: the strip's helper once lived
    in the prelude's runtime namespace, whose name marks synchronising code, so every kernel with
    a counted loop ran its threads as fibers on the CPU (4-100x slower than the plain loop)."""
    # Metal's backends do not say how threads run (the GPU runs them in hardware): None there.
    expected = None if device.backend in ("metal", "metal-sim") else False
    for source in (SOURCE, SHAPES, STRIDES):
        lib = device.compile(source)
        for name in lib.function_names:
            assert getattr(lib, name).threads_synchronise is expected, name


# Bounded strips: where a counting loop's bound cannot change while it runs (a literal, a value the
# function never writes, data in the constant address space, a constant struct's member, sums of
# those), the strip tests `v OP min(x, end)` alone (metal_stop.h's loop_strip::within), one exit
# test as in the loop as written. Bounds that can change (device data the loop writes, a local the
# loop writes) keep the loop's own test in every strip. Up and down, `<=`, `>=`, steps, breaks.
BOUNDED = r"""
#include <metal_stdlib>
using namespace metal;
struct Limits { uint n; int lo; };
kernel void bounded(device long* out [[buffer(0)]], device uint* moving [[buffer(1)]],
                    constant uint& n [[buffer(2)]], constant Limits& lim [[buffer(3)]],
                    uint t [[thread_position_in_grid]], uint threads [[threads_per_grid]]) {
    long s = 0;
    for (uint k = 0; k < n; ++k) s += k ^ 5u;
    out[0] = s;
    s = 0;
    for (int k = int(n); k >= lim.lo; --k) s += k * 3;
    out[1] = s;
    s = 0;
    const uint half_n = n / 2u;
    for (uint k = 1; k <= half_n + 3u; ++k) s += k & 6u;
    out[2] = s;
    s = 0;
    for (long k = 0; k < 5000; ++k) s += k % 7;
    out[3] = s;
    s = 0;
    for (uint k = t; k < lim.n; k += threads) s += k;
    out[4] = s;
    s = 0;
    for (uint k = 0; k < n - 2u; k += 3u) { if (k > 6000u) break; s += k; }
    out[5] = s;
    s = 0;
    for (uint k = 0; k < moving[0]; ++k) { if (k == 9u) moving[0] = 20u; s += k; }  // a bound the loop moves
    out[6] = s;
    s = 0;
    uint m = n;
    for (uint k = 0; k < m; ++k) { if (k == 4u) m = 11u; s += k; }  // a local the loop writes
    out[7] = s;
    s = 0;
    for (short k = 0; k < short(lim.lo + 40); ++k) s += k;  // a bound of a promoted type: the strip counts
    out[8] = s;
}
"""


def bounded_reference(n, lo, limits_n):
    out = [0] * 9
    out[0] = sum(k ^ 5 for k in range(n))
    out[1] = sum(k * 3 for k in range(n, lo - 1, -1))
    out[2] = sum(k & 6 for k in range(1, n // 2 + 4))
    out[3] = sum(k % 7 for k in range(5000))
    out[4] = sum(range(0, limits_n))
    out[5] = sum(k for k in range(0, max(n - 2, 0), 3) if k <= 6000)
    k, bound, s = 0, 30, 0  # moving[0] starts at 30
    while k < bound:
        if k == 9:
            bound = 20
        s += k
        k += 1
    out[6] = s
    k, bound, s = 0, n, 0
    while k < bound:
        if k == 4:
            bound = 11
        s += k
        k += 1
    out[7] = s
    out[8] = sum(range(0, lo + 40))
    return out


@pytest.mark.parametrize("n, lo", [(3, 0), (1000, -20), (5000, 17), (9001, -3)])
@pytest.mark.parametrize("variant", ["strips", "strips of 1", "strips of 3", "no checks"])
def test_bounded_strips(device, n, lo, variant):
    lib = device.compile(BOUNDED, defines=VARIANTS[variant])
    out = np.zeros(9, np.int64)
    moving = np.array([30], np.uint32)
    limits = np.array([(n + 7, lo)], dtype=[("n", np.uint32), ("lo", np.int32)])
    lib.bounded(1, out, moving, np.uint32(n), limits)
    assert out.tolist() == bounded_reference(n, lo, n + 7)
