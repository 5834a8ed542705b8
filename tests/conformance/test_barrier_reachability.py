"""Barriers, SIMD- and quad-group functions and SIMD-group matrices reached only through
another construct: a functor's operator(), a member, static member or template function,
a template struct, a lambda (generic, or capturing and returned), an operator overload
(member and free), a conversion operator, a constructor with member initializers, a macro,
nested namespaces, a reference to a functor, a trailing return type, a template kernel's
[[host_name]] instantiation. Each kernel must run in the mode that honours them (the CPU
backend's fibers: `Kernel.threads_synchronise` is True) and give NumPy's results; kernels
that reach none keep the plain loop (False). Issue P2.0, item 1."""

from __future__ import annotations

import numpy as np
import pytest

import metalcall as mc
from mcconf import KernelSet, assert_close, assert_equal, compile_once, register_source, written_for_32_lanes

TG = 64  # threads per threadgroup in every call
N = 256  # threads in every call: four whole threadgroups, eight SIMD-groups

# Every helper and member has a name of its own, so that no kernel here reaches a barrier
# through a name another snippet declares (the analysis matches names, over-approximating):
# compiled together, each kernel still runs in the mode its own code calls for.
KS = KernelSet([
    # a functor's operator() (the repro)
    """
struct BrTgSum {
    threadgroup float* shared;
    METAL_FUNC float operator()(float v, uint tid, uint n) {
        shared[tid] = v;
        threadgroup_barrier(mem_flags::mem_threadgroup);
        float s = 0.0f;
        for (uint i = 0; i < n; ++i) s += shared[i];
        threadgroup_barrier(mem_flags::mem_threadgroup);
        return s;
    }
};
kernel void br_functor(const device float* a [[buffer(0)]], device float* out [[buffer(1)]],
                       uint gid [[thread_position_in_grid]], uint lid [[thread_index_in_threadgroup]],
                       uint tgn [[threads_per_threadgroup]]) {
    threadgroup float scratch[64];
    BrTgSum sum{scratch};
    out[gid] = sum(a[gid], lid, tgn);
}
""",
    # a functor called through a reference, inside a template helper
    """
struct BrRefSum {
    threadgroup float* cells;
    float operator()(float v, uint tid, uint n) const {
        cells[tid] = v;
        threadgroup_barrier(mem_flags::mem_threadgroup);
        float s = 0.0f;
        for (uint i = 0; i < n; ++i) s += cells[i];
        threadgroup_barrier(mem_flags::mem_threadgroup);
        return s;
    }
};
template <class F> float br_invoke(thread const F& f, float v, uint tid, uint n) { return f(v, tid, n); }
kernel void br_functor_reference(const device float* a [[buffer(0)]], device float* out [[buffer(1)]],
                                 uint gid [[thread_position_in_grid]], uint lid [[thread_index_in_threadgroup]],
                                 uint tgn [[threads_per_threadgroup]]) {
    threadgroup float scratch[64];
    BrRefSum made{scratch};
    thread const BrRefSum& ref = made;
    out[gid] = br_invoke(ref, a[gid], lid, tgn);
}
""",
    # a member function
    """
struct BrReducer {
    threadgroup float* slots;
    float reduce(float v, uint tid, uint n) {
        slots[tid] = v;
        threadgroup_barrier(mem_flags::mem_threadgroup);
        float s = 0.0f;
        for (uint i = 0; i < n; ++i) s += slots[i];
        threadgroup_barrier(mem_flags::mem_threadgroup);
        return s;
    }
};
kernel void br_member(const device float* a [[buffer(0)]], device float* out [[buffer(1)]],
                      uint gid [[thread_position_in_grid]], uint lid [[thread_index_in_threadgroup]],
                      uint tgn [[threads_per_threadgroup]]) {
    threadgroup float scratch[64];
    BrReducer r{scratch};
    out[gid] = r.reduce(a[gid], lid, tgn);
}
""",
    # a static member function
    """
struct BrBlock {
    static float total(threadgroup float* m, float v, uint tid, uint n) {
        m[tid] = v;
        threadgroup_barrier(mem_flags::mem_threadgroup);
        float s = 0.0f;
        for (uint i = 0; i < n; ++i) s += m[i];
        threadgroup_barrier(mem_flags::mem_threadgroup);
        return s;
    }
};
kernel void br_static_member(const device float* a [[buffer(0)]], device float* out [[buffer(1)]],
                             uint gid [[thread_position_in_grid]], uint lid [[thread_index_in_threadgroup]],
                             uint tgn [[threads_per_threadgroup]]) {
    threadgroup float scratch[64];
    out[gid] = BrBlock::total(scratch, a[gid], lid, tgn);
}
""",
    # a template function
    """
template <typename T> T br_group_total(threadgroup T* m, T v, uint tid, uint n) {
    m[tid] = v;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    T s = T(0);
    for (uint i = 0; i < n; ++i) s += m[i];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    return s;
}
kernel void br_template_function(const device float* a [[buffer(0)]], device float* out [[buffer(1)]],
                                 uint gid [[thread_position_in_grid]], uint lid [[thread_index_in_threadgroup]],
                                 uint tgn [[threads_per_threadgroup]]) {
    threadgroup float scratch[64];
    out[gid] = br_group_total(scratch, a[gid], lid, tgn);
}
""",
    # a template struct's static member, through an alias
    """
template <typename T, uint N> struct BrTiled {
    static T run(threadgroup T* m, T v, uint tid) {
        m[tid] = v;
        threadgroup_barrier(mem_flags::mem_threadgroup);
        T s = T(0);
        for (uint i = 0; i < N; ++i) s += m[i];
        threadgroup_barrier(mem_flags::mem_threadgroup);
        return s;
    }
};
using BrTiled64 = BrTiled<float, 64>;
kernel void br_template_struct(const device float* a [[buffer(0)]], device float* out [[buffer(1)]],
                               uint gid [[thread_position_in_grid]], uint lid [[thread_index_in_threadgroup]]) {
    threadgroup float scratch[64];
    out[gid] = BrTiled64::run(scratch, a[gid], lid);
}
""",
    # a template functor, the kernel a template instantiated with it by [[host_name]]
    """
struct BrOpSum {
    threadgroup float* pool;
    float operator()(float v, uint tid, uint n) const {
        pool[tid] = v;
        threadgroup_barrier(mem_flags::mem_threadgroup);
        float s = 0.0f;
        for (uint i = 0; i < n; ++i) s += pool[i];
        threadgroup_barrier(mem_flags::mem_threadgroup);
        return s;
    }
};
template <typename Op>
kernel void br_templated(const device float* a [[buffer(0)]], device float* out [[buffer(1)]],
                         uint gid [[thread_position_in_grid]], uint lid [[thread_index_in_threadgroup]],
                         uint tgn [[threads_per_threadgroup]]) {
    threadgroup float scratch[64];
    Op op{scratch};
    out[gid] = op(a[gid], lid, tgn);
}
template [[host_name("br_templated_sum")]] kernel void br_templated<BrOpSum>(
    const device float*, device float*, uint, uint, uint);
""",
    # a generic lambda in a helper
    """
template <typename T> T br_lane_total(T v) {
    auto f = [](auto x) { return simd_sum(x); };
    return f(v);
}
kernel void br_generic_lambda(const device float* a [[buffer(0)]], device float* out [[buffer(1)]],
                              uint gid [[thread_position_in_grid]]) {
    out[gid] = br_lane_total(a[gid]);
}
""",
    # a capturing lambda made by a helper and called by the kernel
    """
inline auto br_make_summer(threadgroup float* m, uint n) {
    return [m, n](float v, uint tid) {
        m[tid] = v;
        threadgroup_barrier(mem_flags::mem_threadgroup);
        float s = 0.0f;
        for (uint i = 0; i < n; ++i) s += m[i];
        threadgroup_barrier(mem_flags::mem_threadgroup);
        return s;
    };
}
kernel void br_lambda_captured(const device float* a [[buffer(0)]], device float* out [[buffer(1)]],
                               uint gid [[thread_position_in_grid]], uint lid [[thread_index_in_threadgroup]],
                               uint tgn [[threads_per_threadgroup]]) {
    threadgroup float scratch[64];
    auto summer = br_make_summer(scratch, tgn);
    out[gid] = summer(a[gid], lid);
}
""",
    # a member operator+ that calls simd_sum
    """
struct BrWarpVal {
    float lane_value;
    BrWarpVal operator+(BrWarpVal o) const { return BrWarpVal{simd_sum(lane_value) + o.lane_value}; }
};
kernel void br_member_operator(const device float* a [[buffer(0)]], device float* out [[buffer(1)]],
                               uint gid [[thread_position_in_grid]]) {
    BrWarpVal p{a[gid]}, q{1.0f};
    out[gid] = (p + q).lane_value;
}
""",
    # a constructor (with member initializers) that waits at barriers
    """
struct BrStaged {
    float staged_total;
    BrStaged(threadgroup float* m, float v, uint tid, uint n) : staged_total(0.0f) {
        m[tid] = v;
        threadgroup_barrier(mem_flags::mem_threadgroup);
        for (uint i = 0; i < n; ++i) staged_total += m[i];
        threadgroup_barrier(mem_flags::mem_threadgroup);
    }
};
kernel void br_constructor(const device float* a [[buffer(0)]], device float* out [[buffer(1)]],
                           uint gid [[thread_position_in_grid]], uint lid [[thread_index_in_threadgroup]],
                           uint tgn [[threads_per_threadgroup]]) {
    threadgroup float scratch[64];
    BrStaged staged(scratch, a[gid], lid, tgn);
    out[gid] = staged.staged_total;
}
""",
    # a functor that a macro defines
    """
#define BR_DEFINE_GROUP_SUM(Name)                                        \\
    struct Name {                                                        \\
        threadgroup float* bins;                                         \\
        float operator()(float v, uint tid, uint n) {                    \\
            bins[tid] = v;                                               \\
            threadgroup_barrier(mem_flags::mem_threadgroup);             \\
            float s = 0.0f;                                              \\
            for (uint i = 0; i < n; ++i) s += bins[i];                   \\
            threadgroup_barrier(mem_flags::mem_threadgroup);             \\
            return s;                                                    \\
        }                                                                \\
    };
BR_DEFINE_GROUP_SUM(BrMacroSum)
kernel void br_macro(const device float* a [[buffer(0)]], device float* out [[buffer(1)]],
                     uint gid [[thread_position_in_grid]], uint lid [[thread_index_in_threadgroup]],
                     uint tgn [[threads_per_threadgroup]]) {
    threadgroup float scratch[64];
    BrMacroSum s{scratch};
    out[gid] = s(a[gid], lid, tgn);
}
""",
    # nested namespaces, a trailing return type
    """
namespace br_outer { namespace inner {
inline auto group_sum(threadgroup float* m, float v, uint tid, uint n) -> float {
    m[tid] = v;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    float s = 0.0f;
    for (uint i = 0; i < n; ++i) s += m[i];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    return s;
}
} }
kernel void br_nested_namespace(const device float* a [[buffer(0)]], device float* out [[buffer(1)]],
                                uint gid [[thread_position_in_grid]], uint lid [[thread_index_in_threadgroup]],
                                uint tgn [[threads_per_threadgroup]]) {
    threadgroup float scratch[64];
    out[gid] = br_outer::inner::group_sum(scratch, a[gid], lid, tgn);
}
""",
    # SIMD-group functions, each in a functor
    """
struct BrSimdSum {
    float operator()(float v) const { return simd_sum(v); }
};
kernel void br_simd_sum(const device float* a [[buffer(0)]], device float* out [[buffer(1)]],
                        uint gid [[thread_position_in_grid]]) {
    out[gid] = BrSimdSum()(a[gid]);
}
""",
    """
struct BrShuffle {
    ushort from_lane;
    float operator()(float v) const { return simd_shuffle(v, from_lane); }
};
kernel void br_simd_shuffle(const device float* a [[buffer(0)]], device float* out [[buffer(1)]],
                            uint gid [[thread_position_in_grid]], ushort lane [[thread_index_in_simdgroup]]) {
    BrShuffle s{ushort((lane + 5) % 32)};
    out[gid] = s(a[gid]);
}
""",
    """
struct BrPrefix {
    float operator()(float v) const { return simd_prefix_exclusive_sum(v); }
};
kernel void br_simd_prefix(const device float* a [[buffer(0)]], device float* out [[buffer(1)]],
                           uint gid [[thread_position_in_grid]]) {
    BrPrefix p;
    out[gid] = p(a[gid]);
}
""",
    """
struct BrQuad {
    float operator()(float v) const { return quad_sum(v) + 100.0f * quad_shuffle(v, 0); }
};
kernel void br_quad(const device float* a [[buffer(0)]], device float* out [[buffer(1)]],
                    uint gid [[thread_position_in_grid]]) {
    out[gid] = BrQuad{}(a[gid]);
}
""",
    # SIMD-group matrices in a functor: an 8x8 product per SIMD-group
    """
struct BrTile {
    void operator()(const device float* x, const device float* y, device float* z) const {
        simdgroup_float8x8 ma, mb, mc;
        simdgroup_load(ma, x, 8);
        simdgroup_load(mb, y, 8);
        simdgroup_multiply(mc, ma, mb);
        simdgroup_store(mc, z, 8);
    }
};
kernel void br_simdgroup_matrix(const device float* x [[buffer(0)]], const device float* y [[buffer(1)]],
                                device float* z [[buffer(2)]], uint sg [[simdgroup_index_in_threadgroup]],
                                uint group [[threadgroup_position_in_grid]], uint sgs [[simdgroups_per_threadgroup]]) {
    const uint tile = group * sgs + sg;
    BrTile()(x + 64 * tile, y + 64 * tile, z + 64 * tile);
}
""",
])

# A conversion operator, on its own: today's name matching read `operator float()` as a
# function named `float`, which every kernel beside it mentions.
KS_CONVERSION = KernelSet([
    """
struct BrLaneTotal {
    float own;
    operator float() const { return simd_sum(own); }
};
kernel void br_conversion(const device float* a [[buffer(0)]], device float* out [[buffer(1)]],
                          uint gid [[thread_position_in_grid]]) {
    float r = BrLaneTotal{a[gid]};
    out[gid] = r;
}
""",
])

# A namespace-scope operator overload is called with no name the kernel must mention: on
# its own, since the analysis then runs every kernel of its source as fibers.
FREE_OPERATOR_SRC = register_source("""#include <metal_stdlib>
using namespace metal;
struct BrLane { float x; };
BrLane operator+(BrLane p, BrLane q) { return BrLane{simd_sum(p.x) + q.x}; }
kernel void br_free_operator(const device float* a [[buffer(0)]], device float* out [[buffer(1)]],
                             uint gid [[thread_position_in_grid]]) {
    out[gid] = (BrLane{a[gid]} + BrLane{1.0f}).x;
}
""")

# Kernels that reach no barrier, beside one that does: they keep the plain loop.
PLAIN_SRC = register_source("""#include <metal_stdlib>
using namespace metal;
struct BrPlainSum {
    threadgroup float* shared;
    float operator()(float v, uint tid) {
        shared[tid] = v;
        threadgroup_barrier(mem_flags::mem_threadgroup);
        return shared[0];
    }
};
struct BrScale {
    float factor;
    float operator()(float v) const { return v * factor; }
};
inline float br_twice(float v) { return 2.0f * v; }
kernel void br_plain_axpy(const device float* x [[buffer(0)]], device float* y [[buffer(1)]],
                          constant float& alpha [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    y[i] = alpha * x[i] + y[i];
}
kernel void br_plain_functor(const device float* x [[buffer(0)]], device float* y [[buffer(1)]],
                             uint i [[thread_position_in_grid]]) {
    y[i] = BrScale{3.0f}(br_twice(x[i]));
}
kernel void br_syncing(const device float* x [[buffer(0)]], device float* y [[buffer(1)]],
                       uint i [[thread_position_in_grid]], uint lid [[thread_index_in_threadgroup]]) {
    threadgroup float scratch[64];
    BrPlainSum s{scratch};
    y[i] = s(x[i], lid);
}
""")


def values(seed: int, n: int = N) -> np.ndarray:
    """Small integers as float32: every sum below is exact."""
    return np.random.default_rng(seed).integers(-8, 9, n).astype(np.float32)


def per_block(x: np.ndarray, width: int, fn) -> np.ndarray:
    return np.concatenate([fn(b) for b in x.reshape(-1, width)]).astype(np.float32)


def assert_mode(kernel: mc.Kernel, synchronises: bool) -> None:
    """The mode the backend chose (None: the backend does not say, as on Metal)."""
    if kernel.threads_synchronise is not None:
        assert kernel.threads_synchronise is synchronises, f"{kernel.name}: threads_synchronise"


def group_sums(x):
    return per_block(x, TG, lambda b: np.full(b.size, b.sum()))


GROUP_SUM_KERNELS = ["br_functor", "br_functor_reference", "br_member", "br_static_member", "br_template_function",
                     "br_template_struct", "br_templated_sum", "br_lambda_captured", "br_constructor", "br_macro",
                     "br_nested_namespace"]


@pytest.mark.parametrize("name", GROUP_SUM_KERNELS)
def test_threadgroup_barrier_through(device, name):
    a = values(1)
    out = np.zeros(N, np.float32)
    kernel = KS.get(device, name)
    assert_mode(kernel, True)
    kernel(N, a, out, threadgroup=TG)
    assert_equal(out, group_sums(a))


SIMD_MODELS = {
    "br_generic_lambda": lambda b: np.full(32, b.sum()),
    "br_member_operator": lambda b: np.full(32, b.sum()) + 1.0,
    "br_conversion": lambda b: np.full(32, b.sum()),
    "br_simd_sum": lambda b: np.full(32, b.sum()),
    "br_simd_shuffle": lambda b: b[(np.arange(32) + 5) % 32],
    "br_simd_prefix": lambda b: np.concatenate([[0.0], np.cumsum(b)[:-1]]),
    "br_quad": lambda b: np.concatenate([np.full(4, q.sum()) + 100.0 * q[0] for q in b.reshape(-1, 4)]),
}


@pytest.mark.parametrize("name", sorted(SIMD_MODELS))
def test_simdgroup_function_through(device, name):
    a = values(2)
    out = np.zeros(N, np.float32)
    kernel = written_for_32_lanes((KS_CONVERSION if name == "br_conversion" else KS).get(device, name))
    assert_mode(kernel, True)
    kernel(N, a, out, threadgroup=TG)
    assert_equal(out, per_block(a, 32, SIMD_MODELS[name]))


def test_simdgroup_matrix_through_functor(device):
    tiles = 4  # two threadgroups of two SIMD-groups
    x = values(3, 64 * tiles)
    y = values(4, 64 * tiles)
    z = np.zeros(64 * tiles, np.float32)
    kernel = KS.get(device, "br_simdgroup_matrix")
    assert_mode(kernel, True)
    kernel(32 * tiles, x, y, z, threadgroup=64)
    expected = np.matmul(x.reshape(tiles, 8, 8), y.reshape(tiles, 8, 8)).reshape(-1)
    assert_equal(z, expected)


def test_free_operator_overload(device):
    a = values(5)
    out = np.zeros(N, np.float32)
    kernel = written_for_32_lanes(compile_once(device, FREE_OPERATOR_SRC)["br_free_operator"])
    assert_mode(kernel, True)
    kernel(N, a, out, threadgroup=TG)
    assert_equal(out, per_block(a, 32, lambda b: np.full(32, b.sum()) + 1.0))


def test_kernels_reaching_no_barrier_keep_the_plain_loop(device):
    lib = compile_once(device, PLAIN_SRC)
    x = values(6)
    y = values(7)
    assert_mode(lib.br_plain_axpy, False)
    assert_mode(lib.br_plain_functor, False)
    assert_mode(lib.br_syncing, True)
    out = y.copy()
    lib.br_plain_axpy(N, x, out, np.float32(0.5), threadgroup=TG)
    assert_equal(out, np.float32(0.5) * x + y)
    lib.br_plain_functor(N, x, out, threadgroup=TG)
    assert_equal(out, 6.0 * x)
    lib.br_syncing(N, x, out, threadgroup=TG)
    assert_equal(out, np.repeat(x[::TG], TG))


def test_numpy_elementwise_kernels_keep_the_plain_loop(device, monkeypatch):
    """metalcall.numpy's fused elementwise kernels reach no barrier: the plain loop."""
    import metalcall.numpy as mnp
    from metalcall.numpy import _runtime

    used = []
    compiled = _runtime.kernel

    def recording(*args):
        used.append(compiled(*args))
        return used[-1]

    monkeypatch.setattr(_runtime, "kernel", recording)
    x = np.linspace(0.5, 4.0, 1000, dtype=np.float32)
    a = mnp.asarray(x, device=device)
    got = mnp.to_numpy(mnp.where(a > 2.0, mnp.sqrt(a * 2.0 + 1.0) - a, mnp.exp(-a)))
    assert_close(got, np.where(x > 2.0, np.sqrt(x * 2.0 + 1.0) - x, np.exp(-x)), rtol=1e-6, atol=1e-7)
    assert used
    for kernel in used:
        assert_mode(kernel, False)
