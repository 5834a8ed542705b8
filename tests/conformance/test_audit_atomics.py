"""Audit of atomics, fences and barriers against the MSL specification (section 6.15, "Atomic
Functions"; 6.9 "Synchronization and SIMD-Group Functions"), on every device the fixture gives.

* Every operation (store, load, exchange, compare_exchange_weak with `expected` updated on failure,
  fetch_add/sub/and/or/xor/min/max) on atomic_int and atomic_uint, in device memory (contended by
  every thread of many threadgroups) and in threadgroup memory (one object a group); counts that
  must be exact (sums, folds, extremes, permutations of the returned old values).
* Wraparound at the ends of int and uint, min/max signedness, atomic_float sums of integers
  (exact in any order), atomic_bool, compare-exchange loops (a float accumulate, a ticket
  counter whose tickets must be unique and dense).
* Atomics passed to helpers by pointer and reference in each address space, arrays of atomics,
  atomics in structs, `device atomic_uint*` cast from `device uint*`, MLX's atomic.h shapes.
* Fences and barriers: every flag combination MSL allows compiles, message passing inside a
  threadgroup across a barrier, a "last threadgroup" reduction across threadgroups ordered by
  a fence and an atomic ticket; invalid MSL refused with CompileError.
* Checked mode: an out-of-bounds atomic is an ExecutionError, as a load or store is.
* Arguments: an array bound to an atomic parameter must hold the atomic's value type.
* Texture atomics only on r32uint / r32sint textures; a barrier's arguments checked in every CPU
  execution mode (regions and fibers); SIMD-group-aggregated atomics (stream compaction).

References are NumPy and Python integers, computed from the inputs only.
"""

from __future__ import annotations

import numpy as np
import pytest

import metalcall as mc
from mcconf import HEADER, KernelSet, assert_equal

# ---------------------------------------------------------------------------------------------
# Every read-modify-write on atomic_int and atomic_uint, device and threadgroup memory
# ---------------------------------------------------------------------------------------------

OPS = ["add", "sub", "and", "or", "xor", "min", "max", "exchange"]
INT_TYPES = [("int", np.int32), ("uint", np.uint32)]

# One slot per operation; every thread applies every operation to its slot with its own value and
# keeps what the call returned. Slot 8 is a ticket counter made of a compare-exchange loop.
DEVICE_OPS = """
kernel void dev_ops_{T}(const device {T}* x [[buffer(0)]], device atomic_{T}* a [[buffer(1)]],
                        device {T}* old [[buffer(2)]], uint i [[thread_position_in_grid]]) {{
    {T} v = x[i];
    device {T}* o = old + 9 * i;
    o[0] = atomic_fetch_add_explicit(&a[0], v, memory_order_relaxed);
    o[1] = atomic_fetch_sub_explicit(&a[1], v, memory_order_relaxed);
    o[2] = atomic_fetch_and_explicit(&a[2], v, memory_order_relaxed);
    o[3] = atomic_fetch_or_explicit(&a[3], v, memory_order_relaxed);
    o[4] = atomic_fetch_xor_explicit(&a[4], v, memory_order_relaxed);
    o[5] = atomic_fetch_min_explicit(&a[5], v, memory_order_relaxed);
    o[6] = atomic_fetch_max_explicit(&a[6], v, memory_order_relaxed);
    o[7] = atomic_exchange_explicit(a + 7, v, memory_order_relaxed);
    {T} e = atomic_load_explicit(&a[8], memory_order_relaxed);
    while (!atomic_compare_exchange_weak_explicit(&a[8], &e, e + {T}(1), memory_order_relaxed,
                                                  memory_order_relaxed)) {{
    }}
    o[8] = e;
}}
"""

# The same in threadgroup memory: slots set from `init` by one thread, a barrier, the operations,
# a barrier, then one thread copies the group's slots out.
GROUP_OPS = """
kernel void tg_ops_{T}(const device {T}* x [[buffer(0)]], const device {T}* init [[buffer(1)]],
                       device {T}* final_ [[buffer(2)]], device {T}* old [[buffer(3)]],
                       uint i [[thread_position_in_grid]], uint lid [[thread_index_in_threadgroup]],
                       uint g [[threadgroup_position_in_grid]]) {{
    threadgroup atomic_{T} a[9];
    if (lid == 0) {{
        for (int k = 0; k < 9; ++k) atomic_store_explicit(&a[k], init[k], memory_order_relaxed);
    }}
    threadgroup_barrier(mem_flags::mem_threadgroup);
    {T} v = x[i];
    device {T}* o = old + 9 * i;
    o[0] = atomic_fetch_add_explicit(&a[0], v, memory_order_relaxed);
    o[1] = atomic_fetch_sub_explicit(&a[1], v, memory_order_relaxed);
    o[2] = atomic_fetch_and_explicit(&a[2], v, memory_order_relaxed);
    o[3] = atomic_fetch_or_explicit(&a[3], v, memory_order_relaxed);
    o[4] = atomic_fetch_xor_explicit(&a[4], v, memory_order_relaxed);
    o[5] = atomic_fetch_min_explicit(&a[5], v, memory_order_relaxed);
    o[6] = atomic_fetch_max_explicit(&a[6], v, memory_order_relaxed);
    o[7] = atomic_exchange_explicit(a + 7, v, memory_order_relaxed);
    {T} e = atomic_load_explicit(&a[8], memory_order_relaxed);
    while (!atomic_compare_exchange_weak_explicit(&a[8], &e, e + {T}(1), memory_order_relaxed,
                                                  memory_order_relaxed)) {{
    }}
    o[8] = e;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (lid < 9) final_[9 * g + lid] = atomic_load_explicit(&a[lid], memory_order_relaxed);
}}
"""

KS_OPS = KernelSet([DEVICE_OPS.format(T=t) for t, _ in INT_TYPES] + [GROUP_OPS.format(T=t) for t, _ in INT_TYPES])


def _wrap(v: int, dtype) -> int:
    bits = np.dtype(dtype).itemsize * 8
    v %= 1 << bits
    if np.issubdtype(dtype, np.signedinteger) and v >> (bits - 1):
        v -= 1 << bits
    return v


def _apply(op: str, a: int, v: int, dtype) -> int:
    """The new value of an atomic holding `a` after operation `op` with `v` (Python integers)."""
    if op == "add":
        return _wrap(a + v, dtype)
    if op == "sub":
        return _wrap(a - v, dtype)
    if op == "and":
        return _wrap(a & v, dtype)
    if op == "or":
        return _wrap(a | v, dtype)
    if op == "xor":
        return _wrap(a ^ v, dtype)
    if op == "min":
        return min(a, v)
    if op == "max":
        return max(a, v)
    return v  # exchange


def _edge_values(rng, dtype, n):
    info = np.iinfo(dtype)
    x = rng.integers(info.min, info.max, n, dtype=np.int64, endpoint=True).astype(dtype)
    edges = [info.min, info.max, 0, 1, info.max - 1, info.min + 1] + ([-1, -2] if info.min < 0 else [2**31, 2**31 - 1])
    x[: len(edges)] = np.array(edges, dtype=np.int64).astype(dtype)
    return x


def _inits(dtype):
    info = np.iinfo(dtype)
    # add and sub start near the ends, so that their sums wrap
    return [info.max - 3, info.min + 3, _wrap(-1, dtype), 0, 0x5A5A5A5A, info.max, info.min, 7, info.max - 100]


def _check_chain(op, init, final, olds, xs, dtype, what):
    """Each read-modify-write returned the value before it: with the operations in the atomic's
    modification order, each one's old value is the previous one's new value. So the old values
    with the final value are the initial value with every new value (as multisets), and the final
    value is the fold of all the operations (every operation here is commutative, but for exchange)."""
    news = [_apply(op, int(o), int(v), dtype) for o, v in zip(olds, xs)]
    assert sorted([int(o) for o in olds] + [int(final)]) == sorted([int(init)] + news), f"{what}: {op}'s returned values"
    if op == "exchange":
        assert int(final) in {int(v) for v in xs}, what
        return
    acc = int(init)
    for v in xs:
        acc = _apply(op, acc, int(v), dtype)
    assert int(final) == acc, f"{what}: {op} final {final} != {acc}"


@pytest.mark.parametrize("name,dtype", INT_TYPES, ids=[t for t, _ in INT_TYPES])
def test_every_rmw_device_contended(device, rng, name, dtype):
    """Every thread of 16 threadgroups updates the same nine device atomics; the returned old values
    form the modification order's chain and the ticket counter hands out 0..n-1 once each."""
    n = 2048
    x = _edge_values(rng, dtype, n)
    init = np.array([_wrap(v, dtype) for v in _inits(dtype)[:8]] + [0], dtype)
    a = init.copy()
    old = np.zeros(9 * n, dtype)
    KS_OPS.get(device, f"dev_ops_{name}")(n, x, a, old, threadgroup=128)
    old = old.reshape(n, 9)
    for k, op in enumerate(OPS):
        _check_chain(op, init[k], a[k], old[:, k], x, dtype, f"device {name}")
    assert_equal(np.sort(old[:, 8]), np.arange(n).astype(dtype))
    assert a[8] == n


@pytest.mark.parametrize("name,dtype", INT_TYPES, ids=[t for t, _ in INT_TYPES])
def test_every_rmw_threadgroup(device, rng, name, dtype):
    """The same in threadgroup memory: each group of 64 threads has its own nine atomics."""
    n, tg = 1024, 64
    x = _edge_values(rng, dtype, n)
    init = np.array([_wrap(v, dtype) for v in _inits(dtype)[:8]] + [0], dtype)
    final = np.zeros(9 * (n // tg), dtype)
    old = np.zeros(9 * n, dtype)
    KS_OPS.get(device, f"tg_ops_{name}")(n, x, init, final, old, threadgroup=tg)
    old = old.reshape(n // tg, tg, 9)
    final = final.reshape(n // tg, 9)
    xs = x.reshape(n // tg, tg)
    for g in range(n // tg):
        for k, op in enumerate(OPS):
            _check_chain(op, init[k], final[g, k], old[g, :, k], xs[g], dtype, f"threadgroup {name} group {g}")
        assert_equal(np.sort(old[g, :, 8]), np.arange(tg).astype(dtype))
        assert final[g, 8] == tg


# ---------------------------------------------------------------------------------------------
# atomic_float, atomic_bool, compare-exchange's `expected`
# ---------------------------------------------------------------------------------------------

KS_VALUES = KernelSet([
    # atomic_float in device and threadgroup memory: add, sub, exchange, load/store and a
    # compare-exchange accumulate loop (integer values: every order of the sums is exact)
    """
kernel void float_sums(const device float* x [[buffer(0)]], device atomic_float* d [[buffer(1)]],
                       device float* tg_out [[buffer(2)]], device float* swapped [[buffer(3)]],
                       uint i [[thread_position_in_grid]], uint lid [[thread_index_in_threadgroup]],
                       uint g [[threadgroup_position_in_grid]]) {
    float v = x[i];
    atomic_fetch_add_explicit(&d[0], v, memory_order_relaxed);
    atomic_fetch_sub_explicit(&d[1], v, memory_order_relaxed);
    float e = atomic_load_explicit(&d[2], memory_order_relaxed);
    while (!atomic_compare_exchange_weak_explicit(&d[2], &e, e + 2.0f * v, memory_order_relaxed,
                                                  memory_order_relaxed)) {
    }
    swapped[i] = atomic_exchange_explicit(&d[3], v, memory_order_relaxed);
    threadgroup atomic_float t[2];
    if (lid == 0) {
        atomic_store_explicit(&t[0], 0.0f, memory_order_relaxed);
        atomic_store_explicit(&t[1], 1000.0f, memory_order_relaxed);
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    atomic_fetch_add_explicit(&t[0], v, memory_order_relaxed);
    float te = atomic_load_explicit(&t[1], memory_order_relaxed);
    while (!atomic_compare_exchange_weak_explicit(&t[1], &te, te - v, memory_order_relaxed, memory_order_relaxed)) {
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (lid < 2) tg_out[2 * g + lid] = atomic_load_explicit(&t[lid], memory_order_relaxed);
}
""",
    # signed zeros: x - v is x + (-v), so -0.0 - 0.0 stays -0.0 (and -0.0 + 0.0 is +0.0)
    """
kernel void float_zero_signs(device atomic_float* a [[buffer(0)]], const device float* v [[buffer(1)]],
                             device float* old [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    if (i % 2 == 0) old[i] = atomic_fetch_sub_explicit(&a[i], v[i], memory_order_relaxed);
    else old[i] = atomic_fetch_add_explicit(&a[i], v[i], memory_order_relaxed);
}
""",
    # atomic_bool: a flag every thread sets, one that only the first finder claims, load and store
    """
kernel void bool_flags(const device int* x [[buffer(0)]], device atomic_bool* flags [[buffer(1)]],
                       device atomic_uint* claims [[buffer(2)]], device bool* seen [[buffer(3)]],
                       uint i [[thread_position_in_grid]], uint lid [[thread_index_in_threadgroup]],
                       uint g [[threadgroup_position_in_grid]]) {
    int v = x[i];
    if (v == 7) atomic_store_explicit(&flags[0], true, memory_order_relaxed);
    if (v == 3 && !atomic_exchange_explicit(&flags[1], true, memory_order_relaxed))
        atomic_fetch_add_explicit(&claims[0], 1u, memory_order_relaxed);
    bool expected = false;
    if (v == 5 && atomic_compare_exchange_weak_explicit(&flags[2], &expected, true, memory_order_relaxed,
                                                        memory_order_relaxed))
        atomic_fetch_add_explicit(&claims[1], 1u, memory_order_relaxed);
    threadgroup atomic_bool any_negative;
    if (lid == 0) atomic_store_explicit(&any_negative, false, memory_order_relaxed);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (v < 0) atomic_store_explicit(&any_negative, true, memory_order_relaxed);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (lid == 0) seen[g] = atomic_load_explicit(&any_negative, memory_order_relaxed);
}
""",
    # compare-exchange alone: the result, `expected` after the call (the object's value on
    # failure), the object after it; through a helper deducing the value type, per type
    (["cas_int", "cas_uint", "cas_float", "cas_bool"], """
template <typename T, typename A>
void cas_one(device A* a, device T* expected, const device T* desired, device int* ok, uint i) {
    T e = expected[i];
    ok[i] = atomic_compare_exchange_weak_explicit(&a[i], &e, desired[i], memory_order_relaxed, memory_order_relaxed);
    expected[i] = e;
}
kernel void cas_int(device atomic_int* a [[buffer(0)]], device int* e [[buffer(1)]], const device int* d [[buffer(2)]],
                    device int* ok [[buffer(3)]], uint i [[thread_position_in_grid]]) { cas_one(a, e, d, ok, i); }
kernel void cas_uint(device atomic_uint* a [[buffer(0)]], device uint* e [[buffer(1)]], const device uint* d [[buffer(2)]],
                     device int* ok [[buffer(3)]], uint i [[thread_position_in_grid]]) { cas_one(a, e, d, ok, i); }
kernel void cas_float(device atomic_float* a [[buffer(0)]], device float* e [[buffer(1)]],
                      const device float* d [[buffer(2)]], device int* ok [[buffer(3)]],
                      uint i [[thread_position_in_grid]]) { cas_one(a, e, d, ok, i); }
kernel void cas_bool(device atomic_bool* a [[buffer(0)]], device bool* e [[buffer(1)]], const device bool* d [[buffer(2)]],
                     device int* ok [[buffer(3)]], uint i [[thread_position_in_grid]]) { cas_one(a, e, d, ok, i); }
"""),
])


def test_atomic_float_sums_exact(device, rng):
    """atomic_float add, sub, exchange and a compare-exchange accumulate loop, device and threadgroup:
    integer values whose sums stay below 2^24 are exact in every order."""
    n, tg = 2048, 128
    x = rng.integers(-500, 500, n).astype(np.float32)
    d = np.array([0.0, 100.0, -3.0, 0.5], np.float32)
    tg_out = np.zeros(2 * (n // tg), np.float32)
    swapped = np.zeros(n, np.float32)
    KS_VALUES.get(device, "float_sums")(n, x, d, tg_out, swapped, threadgroup=tg)
    s = x.astype(np.int64).sum()
    assert_equal(d[:3], np.array([s, 100 - s, -3 + 2 * s], np.float32))
    assert_equal(np.sort(np.concatenate([swapped, d[3:]])), np.sort(np.concatenate([x, [0.5]]).astype(np.float32)))
    blocks = x.reshape(-1, tg).astype(np.int64).sum(1)
    assert_equal(tg_out.reshape(-1, 2), np.stack([blocks, 1000 - blocks], 1).astype(np.float32))


def test_atomic_float_signed_zeros(device):
    """fetch_sub subtracts (x - v), fetch_add adds: the signs of zero results are IEEE's."""
    a = np.array([-0.0, -0.0, 0.0, 0.0, -0.0, 0.0, 1.0, 1.0], np.float32)
    v = np.array([0.0, 0.0, 0.0, -0.0, -0.0, -0.0, 1.0, -1.0], np.float32)
    old = np.zeros(8, np.float32)
    KS_VALUES.get(device, "float_zero_signs")(8, a, v, old)
    a0 = np.array([-0.0, -0.0, 0.0, 0.0, -0.0, 0.0, 1.0, 1.0], np.float32)
    expected = np.where(np.arange(8) % 2 == 0, a0 - v, a0 + v).astype(np.float32)
    assert_equal(np.signbit(a), np.signbit(expected))
    assert_equal(a, expected)
    assert_equal(np.signbit(old), np.signbit(a0))


def test_atomic_bool_flags(device, rng):
    n, tg = 4096, 256
    x = rng.integers(-2, 100, n).astype(np.int32)
    x[x == 7] = 8
    x[[10, 3000]] = 7
    x[x < 0] = 50
    x[[5, 700]] = -1  # group 0 and group 2 only
    flags = np.zeros(3, np.bool_)
    claims = np.zeros(2, np.uint32)
    seen = np.zeros(n // tg, np.bool_)
    KS_VALUES.get(device, "bool_flags")(n, x, flags, claims, seen, threadgroup=tg)
    assert_equal(flags, np.array([True, (x == 3).any(), (x == 5).any()]))
    assert_equal(claims, np.array([int((x == 3).any()), int((x == 5).any())], np.uint32))
    assert_equal(seen, (x.reshape(-1, tg) < 0).any(1))


CAS_CASES = {
    "int": (np.int32, [5, -5, 2**31 - 1, -2**31, 0, 7], [5, 5, 2**31 - 1, 2**31 - 1, 0, -7]),
    "uint": (np.uint32, [5, 2**32 - 1, 0, 2**31, 9, 1], [5, 2**32 - 1, 1, 2**31, 10, 1]),
    # bitwise comparison, as C++'s compare_exchange: -0.0 is not 0.0, a NaN matches its own bits
    "float": (np.float32, [0.0, 0.0, np.nan, 1.5, -np.inf, 3.0], [0.0, -0.0, np.nan, 1.5, np.inf, 2.0]),
    "bool": (np.bool_, [False, True, False, True], [False, False, True, True]),
}


@pytest.mark.parametrize("name", list(CAS_CASES))
def test_compare_exchange_updates_expected(device, name):
    """compare_exchange_weak returns whether it stored `desired`; `expected` is the object's value
    afterwards in either case (updated on failure); the object changes only on success. A weak
    compare-exchange may fail spuriously, which these invariants allow for, but never where the
    values differ."""
    dtype, current, expected = CAS_CASES[name]
    a = np.array(current, dtype)
    e = np.array(expected, dtype)
    desired = (np.arange(len(current)) % 2 == 0).astype(dtype) if dtype == np.bool_ else np.arange(
        40, 40 + len(current)).astype(dtype)
    ok = np.full(len(current), -1, np.int32)
    KS_VALUES.get(device, f"cas_{name}")(len(current), a, e, desired, ok)
    cur = np.array(current, dtype)
    same_bits = cur.view(np.uint8).reshape(len(cur), -1) == np.array(expected, dtype).view(np.uint8).reshape(len(cur), -1)
    equal = same_bits.all(1)
    assert set(ok.tolist()) <= {0, 1}
    assert not ok[~equal].any(), "succeeded where the values differ"
    assert_equal(e.view(np.uint8), cur.view(np.uint8))  # the object's value before, bit for bit
    assert_equal(a.view(np.uint8), np.where(ok.astype(bool), desired, cur).astype(dtype).view(np.uint8))
    assert ok[equal].all(), "failed where the values match (spurious failures of a weak compare-exchange are not expected here)"


# ---------------------------------------------------------------------------------------------
# Atomics reached through helpers, references, arrays, structs, casts and aliases
# ---------------------------------------------------------------------------------------------

PACKED = """
// Packed atomics in the shape of MLX's atomic.h: the types Metal has atomics for use them; narrower
// ones update their lane of a 32-bit word through a compare-exchange loop on the union's bits.
#pragma METAL internals : enable
template <typename T>
constexpr constant bool pk_native = _disjunction<is_same<T, int>, is_same<T, uint>, is_same<T, float>>::value;
#pragma METAL internals : disable
template <typename T, typename = void> struct pk_atomic { atomic<uint> val; };
template <typename T> struct pk_atomic<T, enable_if_t<pk_native<T>>> { atomic<T> val; };
template <typename T> constexpr constant uint pk_lanes = sizeof(uint) / sizeof(T);
template <typename T> union pk_word { T val[pk_lanes<T>]; uint bits; };
template <typename T, enable_if_t<pk_native<T>, bool> = true>
METAL_FUNC bool pk_cas(device pk_atomic<T>* object, thread T* expected, T val, uint offset) {
    return atomic_compare_exchange_weak_explicit(&(object[offset].val), expected, val, memory_order_relaxed,
                                                 memory_order_relaxed);
}
template <typename T, enable_if_t<!pk_native<T>, bool> = true>
METAL_FUNC bool pk_cas(device pk_atomic<T>* object, thread uint* expected, uint val, uint offset) {
    return atomic_compare_exchange_weak_explicit(&(object[offset].val), expected, val, memory_order_relaxed,
                                                 memory_order_relaxed);
}
struct pk_add {
    template <typename T> static bool condition(T, T) { return true; }
    template <typename T> T operator()(T a, T b) { return a + b; }
};
struct pk_max {
    template <typename T> static bool condition(T a, T b) { return a > b; }
    template <typename T> T operator()(T a, T b) { return max(a, b); }
};
template <typename T, typename Op, enable_if_t<!pk_native<T>, bool> = true>
METAL_FUNC void pk_update(device pk_atomic<T>* object, T update, uint offset) {
    uint word = offset / pk_lanes<T>, lane = offset % pk_lanes<T>;
    pk_word<T> expected;
    expected.bits = atomic_load_explicit(&(object[word].val), memory_order_relaxed);
    while (Op::condition(update, expected.val[lane])) {
        pk_word<T> next = expected;
        next.val[lane] = Op()(update, expected.val[lane]);
        if (pk_cas<T>(object, &(expected.bits), next.bits, word)) break;
    }
}
template <typename T, typename Op, enable_if_t<pk_native<T>, bool> = true>
METAL_FUNC void pk_update(device pk_atomic<T>* object, T update, uint offset) {
    T expected = atomic_load_explicit(&(object[offset].val), memory_order_relaxed);
    while (Op::condition(update, expected) && !pk_cas(object, &expected, Op()(update, expected), offset)) {
    }
}
template <typename T>
kernel void pk_scatter_add(const device T* upd [[buffer(0)]], const device uint* idx [[buffer(1)]],
                           device pk_atomic<T>* out [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    pk_update<T, pk_add>(out, upd[i], idx[i]);
}
template <typename T>
kernel void pk_scatter_max(const device T* upd [[buffer(0)]], const device uint* idx [[buffer(1)]],
                           device pk_atomic<T>* out [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    pk_update<T, pk_max>(out, upd[i], idx[i]);
}
"""
PACKED_TYPES = [("half", np.float16, -4, 4), ("short", np.int16, -50, 50), ("char", np.int8, -3, 3),
                ("uchar", np.uint8, 0, 255), ("float", np.float32, -100, 100), ("int", np.int32, -1000, 1000)]
PACKED_INSTANCES = "".join(
    f'template [[host_name("pk_{op}_{t}")]] kernel void pk_scatter_{op}<{t}>(const device {t}*, const device uint*, '
    f"device pk_atomic<{t}>*, uint);\n" for t, *_ in PACKED_TYPES for op in ("add", "max"))

KS_PLACES = KernelSet([
    (["pk_" + op + "_" + t for t, *_ in PACKED_TYPES for op in ("add", "max")], PACKED + PACKED_INSTANCES),
    # helpers by pointer and reference in each address space, a template deducing T from atomic<T>,
    # 2-D threadgroup arrays of atomics, a struct of atomics in threadgroup memory, a lambda, a
    # conditional choosing the object, aliases of the atomic types, a half value to atomic_float
    """
using counter_t = atomic_uint;
typedef metal::atomic<int> signed_counter;
struct pl_stats { atomic_uint n; atomic_int lo; float pad[3]; atomic_float sum; };
template <typename T> T pl_bump(device atomic<T>* a, T v) { return atomic_fetch_add_explicit(a, v, memory_order_relaxed); }
template <typename T> void pl_lower(threadgroup atomic<T>& a, T v) { atomic_fetch_min_explicit(&a, v, memory_order_relaxed); }
void pl_count(threadgroup atomic_uint* row, uint k) { atomic_fetch_add_explicit(row + k, 1u, memory_order_relaxed); }
void pl_count_ref(device counter_t& c) { atomic_fetch_add_explicit(&c, 1u, memory_order_relaxed); }
kernel void pl_helpers(const device int* x [[buffer(0)]], device counter_t* hist [[buffer(1)]],
                       device signed_counter* s [[buffer(2)]], device uint* out [[buffer(3)]],
                       device float* fout [[buffer(4)]], uint i [[thread_position_in_grid]],
                       uint lid [[thread_index_in_threadgroup]], uint g [[threadgroup_position_in_grid]]) {
    threadgroup atomic_uint h2[4][8];
    threadgroup pl_stats st;
    if (lid < 32) atomic_store_explicit(&h2[lid / 8][lid % 8], 0u, memory_order_relaxed);
    if (lid == 0) {
        atomic_store_explicit(&st.n, 0u, metal::memory_order_relaxed);
        atomic_store_explicit(&st.lo, INT_MAX, memory_order_relaxed);
        atomic_store_explicit(&st.sum, 0.0f, memory_order_relaxed);
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    int v = x[i];
    threadgroup atomic_uint* row = h2[v & 3];
    auto add_one = [&](threadgroup atomic_uint& c) { atomic_fetch_add_explicit(&c, 1u, memory_order_relaxed); };
    if (v & 64) add_one(row[(v >> 2) & 7]);
    else pl_count(row, (v >> 2) & 7);
    pl_bump(&hist[(v >> 5) & 15], 1u);
    pl_bump(s, v);
    pl_lower(st.lo, v);
    atomic_fetch_add_explicit(v < 0 ? &st.n : &hist[16], 1u, memory_order_relaxed);
    pl_count_ref(hist[17]);
    atomic_fetch_add_explicit(&st.sum, half(v & 7), memory_order_relaxed);
    atomic_fetch_add_explicit(&hist[18], -1, memory_order_relaxed);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (lid < 32) out[g * 34 + lid] = atomic_load_explicit(&h2[lid / 8][lid % 8], memory_order_relaxed);
    if (lid == 0) {
        out[g * 34 + 32] = atomic_load_explicit(&st.n, memory_order_relaxed);
        out[g * 34 + 33] = uint(atomic_load_explicit(&st.lo, memory_order_relaxed));
        fout[g] = atomic_load_explicit(&st.sum, memory_order_relaxed);
    }
}
""",
    # a device struct holding an array of atomics and a plain member; `device uint*` cast to
    # atomics (llama.cpp, SPIRV-Cross), a `[[threadgroup(0)]]` array of atomics, volatile objects
    """
struct pl_hist { atomic_uint bins[8]; atomic_int total; uint untouched; };
kernel void pl_structs(const device int* x [[buffer(0)]], device pl_hist& h [[buffer(1)]],
                       device pl_hist* hs [[buffer(2)]], device uint* raw [[buffer(3)]],
                       threadgroup atomic_uint* tg [[threadgroup(0)]], device uint* tg_out [[buffer(4)]],
                       volatile device atomic_int* vol [[buffer(5)]], uint i [[thread_position_in_grid]],
                       uint lid [[thread_index_in_threadgroup]], uint g [[threadgroup_position_in_grid]]) {
    int v = x[i];
    if (lid < 4) atomic_store_explicit(&tg[lid], 0u, memory_order_relaxed);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    atomic_fetch_add_explicit(&h.bins[v & 7], 1u, memory_order_relaxed);
    atomic_fetch_add_explicit(&h.total, v, memory_order_relaxed);
    atomic_fetch_max_explicit(&hs[v & 1].total, v, memory_order_relaxed);
    atomic_fetch_add_explicit((device atomic_uint*)&raw[v & 3], 1u, memory_order_relaxed);
    atomic_fetch_or_explicit(reinterpret_cast<device atomic_uint*>(raw) + 4, 1u << (v & 31), memory_order_relaxed);
    device atomic_uint* as_atomics = (device atomic_uint*)(raw + 5);
    atomic_fetch_xor_explicit(as_atomics, uint(v), memory_order_relaxed);
    atomic_fetch_add_explicit(&tg[v & 3], 1u, memory_order_relaxed);
    atomic_fetch_sub_explicit(vol, 1, memory_order_relaxed);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (lid < 4) tg_out[4 * g + lid] = atomic_load_explicit(&tg[lid], memory_order_relaxed);
}
""",
])


@pytest.mark.parametrize("name,dtype,lo,hi", PACKED_TYPES, ids=[t[0] for t in PACKED_TYPES])
def test_packed_atomics_mlx_shape(device, rng, name, dtype, lo, hi):
    """Scatter-add and scatter-max through MLX-shaped packed atomics: half, short, char and uchar
    lanes of a 32-bit word updated by compare-exchange on the union's bits (`&(expected.bits)`),
    float and int natively; neighbours in the same word are never disturbed."""
    n, m = 3000, 10
    idx = rng.integers(0, m, n).astype(np.uint32)
    upd = rng.integers(lo, hi, n).astype(dtype)
    out = np.zeros(m + 2, dtype)  # two lanes past the last index: must stay 0
    KS_PLACES.get(device, f"pk_add_{name}")(n, upd, idx, out)
    exp = np.zeros(m + 2, np.int64)
    np.add.at(exp, idx, upd.astype(np.int64))
    exp_t = exp.astype(dtype) if np.issubdtype(dtype, np.integer) else exp.astype(np.float64).astype(dtype)
    if np.issubdtype(dtype, np.integer):  # wrapping sums, as the kernel's `a + b` in T wraps
        info = np.iinfo(dtype)
        exp_t = ((exp - info.min) % (1 << (8 * np.dtype(dtype).itemsize)) + info.min).astype(dtype)
    assert_equal(out, exp_t)
    init = np.full(m + 2, lo, dtype)
    KS_PLACES.get(device, f"pk_max_{name}")(n, upd, idx, init)
    mx = np.full(m + 2, lo, np.float64)
    np.maximum.at(mx, idx, upd.astype(np.float64))
    assert_equal(init, mx.astype(dtype))


def test_atomics_through_helpers_and_aliases(device, rng):
    n, tg = 1024, 128
    groups = n // tg
    x = rng.integers(-1000, 1000, n).astype(np.int32)
    hist = np.zeros(19, np.uint32)
    s = np.zeros(1, np.int32)
    out = np.zeros(groups * 34, np.uint32)
    fout = np.zeros(groups, np.float32)
    KS_PLACES.get(device, "pl_helpers")(n, x, hist, s, out, fout, threadgroup=tg)
    assert_equal(hist[:16], np.bincount((x >> 5) & 15, minlength=16).astype(np.uint32))
    assert_equal(hist[16:], np.array([(x >= 0).sum(), n, (-n) % 2**32], np.uint32))
    assert s[0] == x.sum()
    out = out.reshape(groups, 34)
    for g in range(groups):
        b = x[g * tg:(g + 1) * tg]
        h2 = np.zeros((4, 8), np.int64)
        np.add.at(h2, (b & 3, (b >> 2) & 7), 1)
        assert_equal(out[g, :32], h2.ravel().astype(np.uint32))
        assert out[g, 32] == (b < 0).sum()
        assert out[g, 33].view(np.int32) == b.min()
        assert fout[g] == (b & 7).sum()


def test_atomics_in_structs_and_casts(device, rng):
    n, tg = 1024, 64
    x = rng.integers(-10**6, 10**6, n).astype(np.int32)
    h = np.zeros(10, np.uint32)  # bins[8], total, untouched
    h[9] = 0xDEADBEEF
    hs = np.zeros(20, np.uint32)
    hs[8] = hs[18] = np.int32(-2**31).view(np.uint32)
    raw = np.zeros(6, np.uint32)
    tg_out = np.zeros(4 * (n // tg), np.uint32)
    vol = np.array([5], np.int32)
    KS_PLACES.get(device, "pl_structs")(n, x, h, hs, raw, tg_out, vol, threadgroup=tg,
                                        threadgroup_memory=[16])
    assert_equal(h[:8], np.bincount(x & 7, minlength=8).astype(np.uint32))
    assert h[8].view(np.int32) == np.int32(x.sum())
    assert h[9] == 0xDEADBEEF
    assert hs[8].view(np.int32) == x[(x & 1) == 0].max() and hs[18].view(np.int32) == x[(x & 1) == 1].max()
    assert not hs[:8].any() and not hs[10:18].any()
    assert_equal(raw[:4], np.bincount(x & 3, minlength=4).astype(np.uint32))
    orm = 0
    xorm = 0
    for v in x.tolist():
        orm |= 1 << (v & 31)
        xorm ^= v & 0xFFFFFFFF
    assert raw[4] == orm and raw[5] == xorm
    for g in range(n // tg):
        assert_equal(tg_out[4 * g:4 * g + 4], np.bincount(x[g * tg:(g + 1) * tg] & 3, minlength=4).astype(np.uint32))
    assert vol[0] == 5 - n


# ---------------------------------------------------------------------------------------------
# Fences and barriers
# ---------------------------------------------------------------------------------------------

KS_SYNC = KernelSet([
    # every flag combination a barrier takes, and fences of every order and scope, compile and
    # keep a threadgroup's message passing: a value written before a barrier is read by another
    # thread after it (threadgroup memory, device memory, both)
    """
kernel void sync_exchange(device int* scratch [[buffer(0)]], device int* out [[buffer(1)]],
                          uint i [[thread_position_in_grid]], uint lid [[thread_index_in_threadgroup]],
                          uint tg [[threads_per_threadgroup]], uint g [[threadgroup_position_in_grid]]) {
    threadgroup int t[64];
    t[lid] = int(i) * 3 + 1;
    scratch[i] = int(i) * 5 - 2;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    int a = t[(lid + 1) % tg];
    threadgroup_barrier(mem_flags::mem_device);
    int b = scratch[g * tg + (lid + 7) % tg];
    threadgroup_barrier(mem_flags::mem_device | mem_flags::mem_threadgroup);
    t[lid] = -a;
    scratch[i] = -b;
    atomic_thread_fence(mem_flags::mem_threadgroup, memory_order_seq_cst, thread_scope_threadgroup);
    threadgroup_barrier(mem_flags::mem_threadgroup | mem_flags::mem_device | mem_flags::mem_texture);
    int c = t[tg - 1 - lid] + scratch[g * tg + (tg - 1 - lid)];
    threadgroup_barrier(mem_flags::mem_none);
    threadgroup_barrier(mem_flags::mem_texture);
    atomic_thread_fence(mem_flags::mem_device, memory_order_acq_rel, thread_scope_device);
    atomic_thread_fence(mem_flags::mem_device | mem_flags::mem_threadgroup, memory_order_release);
    atomic_thread_fence(mem_flags::mem_threadgroup, memory_order_acquire, thread_scope_simdgroup);
    atomic_thread_fence(mem_flags::mem_none, memory_order_relaxed, thread_scope_thread);
    simdgroup_barrier(mem_flags::mem_none);
    simdgroup_barrier(mem_flags::mem_threadgroup);
    simdgroup_barrier(mem_flags::mem_device);
    metal::threadgroup_barrier(metal::mem_flags::mem_threadgroup);
    out[i] = a + 1000 * c;
}
""",
    # the "last threadgroup" reduction: each group writes its partial sum, fences, takes a ticket;
    # the group that takes the last one sums every partial (other groups' device writes)
    """
kernel void sync_last_group(const device float* x [[buffer(0)]], device float* partial [[buffer(1)]],
                            device atomic_uint* ticket [[buffer(2)]], device float* total [[buffer(3)]],
                            device uint* last_group [[buffer(4)]],
                            uint i [[thread_position_in_grid]], uint lid [[thread_index_in_threadgroup]],
                            uint g [[threadgroup_position_in_grid]], uint ng [[threadgroups_per_grid]],
                            uint tg [[threads_per_threadgroup]]) {
    threadgroup float s[128];
    threadgroup bool last;
    s[lid] = x[i];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    for (uint k = tg / 2; k > 0; k >>= 1) {
        if (lid < k) s[lid] += s[lid + k];
        threadgroup_barrier(mem_flags::mem_threadgroup);
    }
    if (lid == 0) {
        partial[g] = s[0];
        atomic_thread_fence(mem_flags::mem_device, memory_order_seq_cst, thread_scope_device);
        last = atomic_fetch_add_explicit(ticket, 1u, memory_order_relaxed) == ng - 1;
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (last) {
        atomic_thread_fence(mem_flags::mem_device, memory_order_seq_cst, thread_scope_device);
        float acc = 0.0f;
        for (uint k = lid; k < ng; k += tg) acc += partial[k];
        s[lid] = acc;
        threadgroup_barrier(mem_flags::mem_threadgroup);
        if (lid == 0) {
            float t = 0.0f;
            for (uint k = 0; k < tg; ++k) t += s[k];
            total[0] = t;
            last_group[0] = g;
        }
    }
}
""",
    # a threadgroup ticket kept across a barrier (compaction into threadgroup memory), and a
    # 256-bin threadgroup histogram initialised by a strided loop, merged with device atomics
    """
kernel void sync_compact(const device int* x [[buffer(0)]], device int* out [[buffer(1)]],
                         device uint* counts [[buffer(2)]], device atomic_uint* hist [[buffer(3)]],
                         uint i [[thread_position_in_grid]], uint lid [[thread_index_in_threadgroup]],
                         uint tg [[threads_per_threadgroup]], uint g [[threadgroup_position_in_grid]]) {
    threadgroup atomic_uint n;
    threadgroup int buf[128];
    threadgroup atomic_uint local[256];
    for (uint k = lid; k < 256; k += tg) atomic_store_explicit(&local[k], 0u, memory_order_relaxed);
    if (lid == 0) atomic_store_explicit(&n, 0u, memory_order_relaxed);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    int v = x[i];
    atomic_fetch_add_explicit(&local[v & 255], 1u, memory_order_relaxed);
    if (v > 0) buf[atomic_fetch_add_explicit(&n, 1u, memory_order_relaxed)] = v;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    uint total = atomic_load_explicit(&n, memory_order_relaxed);
    if (lid < total) out[g * tg + lid] = buf[lid];
    if (lid == 0) counts[g] = total;
    for (uint k = lid; k < 256; k += tg) {
        uint c = atomic_load_explicit(&local[k], memory_order_relaxed);
        if (c) atomic_fetch_add_explicit(&hist[k], c, memory_order_relaxed);
    }
}
""",
])


def test_barriers_and_fences_pass_messages(device):
    n, tg = 512, 64
    scratch = np.zeros(n, np.int32)
    out = np.zeros(n, np.int32)
    KS_SYNC.get(device, "sync_exchange")(n, scratch, out, threadgroup=tg)
    i = np.arange(n)
    g, lid = i // tg, i % tg
    a = (g * tg + (lid + 1) % tg) * 3 + 1
    b = (g * tg + (lid + 7) % tg) * 5 - 2
    mirror = g * tg + (tg - 1 - lid)
    c = -a[mirror] - b[mirror]
    assert_equal(out, (a + 1000 * c).astype(np.int32))


def test_last_threadgroup_reduction(device, rng):
    n, tg = 128 * 48, 128
    x = rng.integers(-100, 100, n).astype(np.float32)
    partial = np.zeros(n // tg, np.float32)
    ticket = np.zeros(1, np.uint32)
    total = np.zeros(1, np.float32)
    last = np.full(1, 999, np.uint32)
    KS_SYNC.get(device, "sync_last_group")(n, x, partial, ticket, total, last, threadgroup=tg)
    assert ticket[0] == n // tg
    assert_equal(partial, x.reshape(-1, tg).astype(np.int64).sum(1).astype(np.float32))
    assert total[0] == x.astype(np.int64).sum()
    assert last[0] < n // tg


def test_threadgroup_ticket_across_barrier(device, rng):
    n, tg = 128 * 8, 128
    x = rng.integers(-300, 300, n).astype(np.int32)
    out = np.zeros(n, np.int32)
    counts = np.zeros(n // tg, np.uint32)
    hist = np.zeros(256, np.uint32)
    KS_SYNC.get(device, "sync_compact")(n, x, out, counts, hist, threadgroup=tg)
    for g in range(n // tg):
        b = x[g * tg:(g + 1) * tg]
        keep = np.sort(b[b > 0])
        assert counts[g] == len(keep)
        assert_equal(np.sort(out[g * tg:g * tg + len(keep)]), keep)
    assert_equal(hist, np.bincount(x & 255, minlength=256).astype(np.uint32))


# ---------------------------------------------------------------------------------------------
# What MSL refuses: functions an atomic type does not have, atomics of other value types
# ---------------------------------------------------------------------------------------------

INVALID = {
    # MSL has fetch_add/sub for atomic_float, no other fetch-and-modify (MLX's atomic.h writes its
    # own float min/max "since it does not [have] atomic_fetch_min_explicit")
    "float_min": ("device atomic_float* a", "atomic_fetch_min_explicit(a, 1.0f, memory_order_relaxed);"),
    "float_max": ("device atomic_float* a", "atomic_fetch_max_explicit(a, 1.0f, memory_order_relaxed);"),
    "float_and": ("device atomic_float* a", "atomic_fetch_and_explicit(a, 1.0f, memory_order_relaxed);"),
    "float_xor": ("threadgroup atomic_float* a [[threadgroup(0)]]",
                  "atomic_fetch_xor_explicit(a, 1.0f, memory_order_relaxed);"),
    # atomic_bool: store, load, exchange and compare-exchange only
    "bool_add": ("device atomic_bool* a", "atomic_fetch_add_explicit(a, true, memory_order_relaxed);"),
    "bool_or": ("device atomic_bool* a", "atomic_fetch_or_explicit(a, true, memory_order_relaxed);"),
    "bool_and": ("device atomic_bool* a", "atomic_fetch_and_explicit(a, false, memory_order_relaxed);"),
    "bool_max": ("device atomic_bool* a", "atomic_fetch_max_explicit(a, true, memory_order_relaxed);"),
    # 64-bit atomics: atomic_min/max_explicit only
    "ulong_add": ("device atomic_ulong* a", "atomic_fetch_add_explicit(a, 1ul, memory_order_relaxed);"),
    "ulong_fetch_max": ("device atomic_ulong* a", "atomic_fetch_max_explicit(a, 1ul, memory_order_relaxed);"),
    "ulong_or": ("device atomic<ulong>* a", "atomic_fetch_or_explicit(a, 1ul, memory_order_relaxed);"),
    # no atomic type holds half, short, char or a vector
    "half": ("device atomic<half>* a", "atomic_store_explicit(a, half(1), memory_order_relaxed);"),
    "short": ("device atomic<short>* a", "atomic_fetch_add_explicit(a, short(1), memory_order_relaxed);"),
    "uchar": ("device atomic<uchar>* a", "atomic_exchange_explicit(a, uchar(1), memory_order_relaxed);"),
    "uint2": ("device atomic<uint2>* a", "atomic_store_explicit(a, uint2(1), memory_order_relaxed);"),
    # a plain pointer is no atomic
    "plain_pointer": ("device uint* a", "atomic_fetch_add_explicit(a, 1u, memory_order_relaxed);"),
}

# Their valid neighbours, which must still compile and run.
VALID = {
    "float_add_sub": ("device atomic_float* a", "atomic_fetch_add_explicit(a, 1.0f, memory_order_relaxed); "
                      "atomic_fetch_sub_explicit(a, 0.5f, memory_order_relaxed);"),
    "bool_all": ("device atomic_bool* a", "bool e = false; atomic_compare_exchange_weak_explicit(a, &e, true, "
                 "memory_order_relaxed, memory_order_relaxed); atomic_exchange_explicit(a, e, memory_order_relaxed); "
                 "atomic_store_explicit(a, !atomic_load_explicit(a, memory_order_relaxed), memory_order_relaxed);"),
    "ulong_min_max": ("device atomic_ulong* a", "atomic_max_explicit(a, 7ul, memory_order_relaxed); "
                      "atomic_min_explicit(a + 1, 7ul, memory_order_relaxed);"),
    "int_all": ("device atomic_int* a", "atomic_fetch_and_explicit(a, 3, memory_order_relaxed); "
                "atomic_fetch_or_explicit(a, 8, memory_order_relaxed); atomic_fetch_xor_explicit(a, 1, memory_order_relaxed); "
                "atomic_fetch_min_explicit(a, 100, memory_order_relaxed); atomic_fetch_max_explicit(a, -100, memory_order_relaxed);"),
}


def _one_kernel(param: str, body: str) -> str:
    return HEADER + f"kernel void k({param} [[buffer(0)]]) {{ {body} }}\n".replace(
        "[[threadgroup(0)]] [[buffer(0)]]", "[[threadgroup(0)]]")


@pytest.mark.parametrize("case", list(INVALID))
def test_invalid_atomics_refused(device, case):
    """Atomic functions a type does not have in MSL, and atomic types MSL does not have, are a
    CompileError at the user's line, as Metal's compiler refuses them (before: the CPU backends
    compiled them, CUDA refused some with an NVRTC error)."""
    param, body = INVALID[case]
    with pytest.raises(mc.CompileError) as err:
        device.compile(_one_kernel(param, body)).function("k")
    assert err.value.line == 3, str(err.value)


@pytest.mark.parametrize("case", list(VALID))
def test_valid_neighbours_compile(device, case):
    if case == "ulong_min_max" and device.backend == "metal-sim" and not any(
            f"({fam}" in device.name for fam in ("apple8", "apple9")):
        pytest.skip("64-bit atomics: Apple8 Macs and Apple9 GPUs only (test_atomics64.py)")
    param, body = VALID[case]
    dtype = {"float_add_sub": np.float32, "bool_all": np.bool_, "ulong_min_max": np.uint64, "int_all": np.int32}[case]
    a = np.array([5, 9], dtype)
    device.compile(_one_kernel(param, body)).function("k")(1, a)
    expected = {"float_add_sub": [5.5, 9], "bool_all": [False, True], "ulong_min_max": [7, 7],
                "int_all": [max(min(((5 & 3) | 8) ^ 1, 100), -100), 9]}[case]
    assert_equal(a, np.array(expected, dtype))


# ---------------------------------------------------------------------------------------------
# Arguments: an atomic parameter's array must hold the atomic's value type
# ---------------------------------------------------------------------------------------------

SPELLINGS = [("atomic_uint", np.uint32), ("atomic_int", np.int32), ("atomic_float", np.float32),
             ("atomic_bool", np.bool_), ("atomic<uint>", np.uint32), ("metal::atomic<int>", np.int32),
             ("metal::atomic_float", np.float32), ("volatile atomic_uint", np.uint32), ("atomic<unsigned int>", np.uint32),
             ("at_alias", np.int32)]
KS_BIND = KernelSet([
    f"""
kernel void bind_{k}(device {spelling}* a [[buffer(0)]], uint i [[thread_position_in_grid]]) {{
    atomic_store_explicit(&a[i], {"true" if dtype == np.bool_ else "3"}, memory_order_relaxed);
}}
""" for k, (spelling, dtype) in enumerate(SPELLINGS)] + [
    """
template <typename T>
kernel void bind_tpl(device atomic<T>* a [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    atomic_fetch_add_explicit(&a[i], T(3), memory_order_relaxed);
}
template [[host_name("bind_tpl_float")]] kernel void bind_tpl<float>(device atomic<float>*, uint);
template [[host_name("bind_tpl_uint")]] kernel void bind_tpl<uint>(device atomic<uint>*, uint);
"""], preamble="typedef atomic<int> at_alias;\n")

OTHER = {np.uint32: np.float32, np.int32: np.uint32, np.float32: np.int32, np.bool_: np.int8}


@pytest.mark.parametrize("k", range(len(SPELLINGS)), ids=[s for s, _ in SPELLINGS])
def test_atomic_parameter_checks_element_type(device, k):
    """An array bound to `device atomic_uint*` must hold uint32, as one bound to `device uint*`
    must (an ArgumentError names both; raw bytes, .view(np.uint8), still bind). Before, any
    array bound, and a float32 array given to a histogram's counters was reinterpreted silently."""
    spelling, dtype = SPELLINGS[k]
    fn = KS_BIND.get(device, f"bind_{k}")
    a = np.zeros(4, dtype)
    fn(4, a)
    assert_equal(a, np.full(4, True if dtype == np.bool_ else 3, dtype))
    wrong = np.zeros(4, OTHER[dtype])
    with pytest.raises(mc.ArgumentError, match="elements but the kernel reads"):
        fn(4, wrong)
    assert not wrong.any()
    raw = np.zeros(4 * np.dtype(dtype).itemsize, np.uint8)
    fn(4, raw)
    assert_equal(raw.view(dtype), np.full(4, True if dtype == np.bool_ else 3, dtype))


@pytest.mark.parametrize("name,dtype", [("float", np.float32), ("uint", np.uint32)])
def test_atomic_template_parameter_checks_element_type(device, name, dtype):
    fn = KS_BIND.get(device, f"bind_tpl_{name}")
    a = np.ones(3, dtype)
    fn(3, a)
    assert_equal(a, np.full(3, 4, dtype))
    with pytest.raises(mc.ArgumentError, match="elements but the kernel reads"):
        fn(3, np.zeros(3, OTHER[dtype]))


# ---------------------------------------------------------------------------------------------
# Checked mode: an atomic out of bounds is caught as a load or store is
# ---------------------------------------------------------------------------------------------

OOB = {
    "index": ("device atomic_uint* a", "atomic_fetch_add_explicit(&a[j], 1u, memory_order_relaxed);", "'a'"),
    "offset": ("device atomic_uint* a", "atomic_fetch_min_explicit(a + j, 1u, memory_order_relaxed);", "'a'"),
    "cast_element": ("device uint* a", "atomic_fetch_add_explicit((device atomic_uint*)&a[j], 1u, memory_order_relaxed);", "'a'"),
    "cast_base": ("device uint* a", "device atomic_uint* p = (device atomic_uint*)a; "
                  "atomic_fetch_or_explicit(&p[j], 1u, memory_order_relaxed);", "'a'"),
    "load": ("device atomic_uint* a", "uint v = atomic_load_explicit(&a[j], memory_order_relaxed); "
             "atomic_store_explicit(&a[0], v, memory_order_relaxed);", "'a'"),
    "cas": ("device atomic_uint* a", "uint e = 0; atomic_compare_exchange_weak_explicit(&a[j], &e, 1u, "
            "memory_order_relaxed, memory_order_relaxed);", "'a'"),
    "exchange_float": ("device atomic_float* a", "atomic_exchange_explicit(&a[j], 1.0f, memory_order_relaxed);", "'a'"),
    "struct_member": ("device at_box& a", "atomic_fetch_add_explicit(&a.c[j], 1u, memory_order_relaxed);",
                      "struct array member"),
    "helper": ("device atomic_uint* a", "at_bump(a, j);", "'a'"),
    "threadgroup_array": ("device atomic_uint* a", "threadgroup atomic_uint t[4]; "
                          "atomic_store_explicit(&t[j], 1u, memory_order_relaxed);", "threadgroup array"),
}
OOB_PREAMBLE = HEADER + """struct at_box { atomic_uint c[4]; };
void at_bump(device atomic_uint* p, uint j) { atomic_fetch_add_explicit(p + j, 1u, memory_order_relaxed); }
"""


@pytest.mark.parametrize("case", list(OOB))
def test_checked_mode_catches_atomics_out_of_bounds(case):
    dev = mc.Device("cpu", checked=True)
    param, body, where = OOB[case]
    src = OOB_PREAMBLE + f"kernel void k({param} [[buffer(0)]], constant uint& j [[buffer(1)]]) {{ {body} }}\n"
    fn = dev.compile(src).function("k")
    dtype = np.float32 if "float" in param else np.uint32
    a = np.zeros(4, dtype)
    fn(1, a, 3)  # the last element: in bounds
    for j in (4, 1000):
        a = np.zeros(4, dtype)
        with pytest.raises(mc.ExecutionError, match="out of bounds") as err:
            fn(1, a, j)
        assert where in str(err.value)
        assert not a.any()


# ---------------------------------------------------------------------------------------------
# Texture atomics: r32uint and r32sint textures only
# ---------------------------------------------------------------------------------------------

KS_TEXTURE = KernelSet([
    """
kernel void tx_add_uint(texture2d<uint, access::read_write> t [[texture(0)]], device uint* old [[buffer(0)]],
                        uint2 p [[thread_position_in_grid]]) {
    old[p.y * 2 + p.x] = t.atomic_fetch_add(p, 5u).x;
}
""",
    """
kernel void tx_min_int(texture2d<int, access::read_write> t [[texture(0)]], device int* old [[buffer(0)]],
                       uint2 p [[thread_position_in_grid]]) {
    old[p.y * 2 + p.x] = t.atomic_fetch_min(p, -7).x;
}
""",
])


CUDA_NO_FAULT = pytest.mark.xfail(reason="CUDA backend: a texture atomic on another format than r32uint/r32sint "
                                          "does nothing (no fault channel on CUDA)", strict=True)


@pytest.mark.parametrize("fmt", ["r32uint", "r32sint"] + [
    pytest.param(f, marks=CUDA_NO_FAULT) for f in ("r16uint", "r8uint", "rg32uint", "rgba32uint", "r16sint", "rgba32sint")])
def test_texture_atomics_need_r32_formats(device, fmt):
    """Metal has texture atomics on r32uint and r32sint textures only (MTLTextureUsageShaderAtomic
    takes no other format): on another format the call is an ExecutionError naming the texture.
    Before, r16uint and r8uint did nothing and returned zeros; rg32uint and rgba32uint acted on the
    first channel."""
    signed = "sint" in fmt
    fn = KS_TEXTURE.get(device, "tx_min_int" if signed else "tx_add_uint")
    t = device.texture((2, 2), fmt)
    np.asarray(t)[...] = 3
    old = np.full(4, 99, np.int32 if signed else np.uint32)
    if fmt in ("r32uint", "r32sint"):
        fn((2, 2), old, textures=[t])
        assert_equal(old, np.full(4, 3, old.dtype))
        assert_equal(np.asarray(t)[..., 0], np.full((2, 2), -7 if signed else 8))
        return
    with pytest.raises(mc.ExecutionError, match=r"texture\(0\): texture atomics need an r32uint or r32sint texture"):
        fn((2, 2), old, textures=[t])
    assert_equal(np.asarray(t), np.full(np.asarray(t).shape, 3))


# ---------------------------------------------------------------------------------------------
# A barrier's arguments are checked whichever way the CPU runs the kernel
# ---------------------------------------------------------------------------------------------

# The same barrier at the top of a kernel's body (the CPU runs it as regions between barriers)
# and inside a branch (fibers).
BARRIER_SHAPES = {
    "top_level": "t[l] = a[l]; BAR; a[l] = t[l ^ 1];",
    "in_loop": "for (int r = 0; r < 2; ++r) { t[l] = a[l] + uint(r); BAR; a[l] = t[l ^ 1]; BAR; }",
    "in_branch": "t[l] = a[l]; if (a[0] < 100u) { BAR; } a[l] = t[l ^ 1];",
}
BAD_BARRIERS = ["threadgroup_barrier(2)", "threadgroup_barrier(1.5f)", "threadgroup_barrier(true)",
                "threadgroup_barrier(mem_flags::mem_device, memory_order_relaxed)"]


def _barrier_kernel(shape: str, barrier: str) -> str:
    return HEADER + ("kernel void k(device uint* a [[buffer(0)]], uint l [[thread_index_in_threadgroup]]) {\n"
                     "    threadgroup uint t[64];\n    " + BARRIER_SHAPES[shape].replace("BAR", barrier) + "\n}\n")


@pytest.mark.parametrize("shape", list(BARRIER_SHAPES))
@pytest.mark.parametrize("barrier", BAD_BARRIERS)
def test_barrier_arguments_checked(device, shape, barrier):
    """threadgroup_barrier takes mem_flags: an int, a float, a bool or a second argument is a
    CompileError at its line. Before, the CPU's regions (a barrier at the top of the body or in a
    loop every thread runs) dropped the arguments unread, so these compiled there and only
    there."""
    with pytest.raises(mc.CompileError) as err:
        device.compile(_barrier_kernel(shape, barrier)).function("k")
    assert err.value.line == 5, str(err.value)


@pytest.mark.parametrize("shape", list(BARRIER_SHAPES))
@pytest.mark.parametrize("flags", ["mem_flags::mem_threadgroup", "metal::mem_flags::mem_none",
                                   "mem_flags::mem_device | mem_flags::mem_threadgroup",
                                   "mem_flags::mem_threadgroup | mem_flags::mem_texture | mem_flags::mem_device"])
def test_barrier_flags_accepted(device, shape, flags):
    a = np.arange(64, dtype=np.uint32)
    device.compile(_barrier_kernel(shape, f"threadgroup_barrier({flags})")).function("k")(64, a, threadgroup=64)
    expected = np.arange(64, dtype=np.uint32)
    for r in range(2 if shape == "in_loop" else 1):
        expected = (expected + (r if shape == "in_loop" else 0))[np.arange(64) ^ 1]
    assert_equal(a, expected.astype(np.uint32))


# ---------------------------------------------------------------------------------------------
# SIMD-group-aggregated atomics (one atomic per SIMD-group, offsets from prefix sums)
# ---------------------------------------------------------------------------------------------

KS_AGGREGATED = KernelSet([
    """
kernel void agg_compact(const device int* x [[buffer(0)]], device int* out [[buffer(1)]],
                        device atomic_uint* counter [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    int v = x[i];
    uint pred = v > 0 ? 1u : 0u;
    uint offset = simd_prefix_exclusive_sum(pred);
    uint total = simd_sum(pred);
    uint base = 0;
    if (simd_is_first()) base = atomic_fetch_add_explicit(counter, total, memory_order_relaxed);
    base = simd_broadcast_first(base);
    if (pred) out[base + offset] = v;
}
""",
    """
kernel void agg_compact_tg(const device int* x [[buffer(0)]], device int* out [[buffer(1)]],
                           device atomic_uint* counter [[buffer(2)]], uint i [[thread_position_in_grid]],
                           uint lane [[thread_index_in_simdgroup]], uint lid [[thread_index_in_threadgroup]]) {
    threadgroup atomic_uint tcount;
    threadgroup uint tbase;
    if (lid == 0) atomic_store_explicit(&tcount, 0u, memory_order_relaxed);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    int v = x[i];
    uint pred = v > 0 ? 1u : 0u;
    uint offset = simd_prefix_exclusive_sum(pred);
    uint total = simd_sum(pred);
    uint sbase = 0;
    if (lane == 0) sbase = atomic_fetch_add_explicit(&tcount, total, memory_order_relaxed);
    sbase = simd_shuffle(sbase, 0);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (lid == 0) tbase = atomic_fetch_add_explicit(counter, atomic_load_explicit(&tcount, memory_order_relaxed),
                                                    memory_order_relaxed);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (pred) out[tbase + sbase + offset] = v;
}
""",
])


@pytest.mark.parametrize("name", ["agg_compact", "agg_compact_tg"])
def test_simdgroup_aggregated_compaction(device, rng, name):
    """Stream compaction with one atomic per SIMD-group (and per threadgroup): the leader's
    fetch_add result broadcast, each lane at its exclusive prefix; a partial last threadgroup."""
    n = 4096 + 40
    x = rng.integers(-5, 5, n).astype(np.int32)
    out = np.zeros(n, np.int32)
    counter = np.zeros(1, np.uint32)
    KS_AGGREGATED.get(device, name)(n, x, out, counter, threadgroup=128)
    keep = np.sort(x[x > 0])
    assert counter[0] == len(keep)
    assert_equal(np.sort(out[:len(keep)]), keep)
    assert not out[len(keep):].any()
