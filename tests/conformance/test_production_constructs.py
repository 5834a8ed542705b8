"""MSL constructs that production kernel libraries rely on (issue P1.6 point 4, the MLX
compile survey in docs/msl-corpus.md), each in a kernel of our own checked against NumPy:
template kernels overloaded by their template parameter lists, template parameter lists
that end in `>>`, explicit instantiations whose template arguments are deduced from their
parameter list, bfloat arithmetic that stays bfloat (MSL's usual arithmetic conversions),
unsuffixed floating literals that are float, metal::uniform<T>, member functions
qualified `const threadgroup`, `coherent(...)` buffer qualifiers, function constants declared
`static constant constexpr const`, is_integral<bool> (true, as in C++), the
product operator of SIMD-group matrices, `device const void*` buffers (ggml), macros in loop pragmas (`#pragma unroll
(MIN(a, b))`, expanded as Apple's compiler expands them), and compound assignments to the
elements of a threadgroup pointer of a template's type made by a cast (ggml's flash attention:
`so4[j*PV4 + i] *= ms` with `threadgroup o4_t* so4 = (threadgroup o4_t*)(shmem + ...)`, which
did not compile on CUDA)."""

from __future__ import annotations

import numpy as np
import pytest

from mcconf import KernelSet, assert_close, assert_equal, bfloat_rounded

KS = KernelSet([
    # Two template kernels of one name, told apart by their template parameter lists.
    (["povl_scale_f", "povl_shift_f"], """
template <typename T, int K>
[[kernel]] void povl(device const T* x [[buffer(0)]], device T* y [[buffer(1)]], uint i [[thread_position_in_grid]]) {
    y[i] = x[i] * T(K);
}
template <typename T, typename U, int K, bool NEG = false>
[[kernel]] void povl(device const T* x [[buffer(0)]], device U* y [[buffer(1)]], uint i [[thread_position_in_grid]]) {
    y[i] = U(x[i]) + U(NEG ? -K : K);
}
template [[host_name("povl_scale_f")]] [[kernel]] decltype(povl<float, 3>) povl<float, 3>;
template [[host_name("povl_shift_f")]] [[kernel]] decltype(povl<float, float, 7, true>) povl<float, float, 7, true>;
"""),
    # A template parameter list closed by `>>` (the last default is a template), the
    # default taken, and the parameters' types deduced from the instantiation's list.
    (["pdd_max_i", "pdd_min_i", "pdd_vec_2"], """
template <typename T> struct pdd_max { T operator()(T a, T b) const { return a > b ? a : b; } };
template <typename T> struct pdd_min { T operator()(T a, T b) const { return a < b ? a : b; } };
template <int N> struct pdd_params { int stride; int offset[N]; };
template <typename T, typename Op = pdd_max<T>>
[[kernel]] void pdd(device const T* a [[buffer(0)]], device const T* b [[buffer(1)]], device T* c [[buffer(2)]],
                    uint i [[thread_position_in_grid]]) {
    c[i] = Op()(a[i], b[i]);
}
template <typename T, int N>
[[kernel]] void pdd_vec(device const T* a [[buffer(0)]], device T* c [[buffer(1)]],
                        constant pdd_params<N>* p [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    T s = T(0);
    for (int k = 0; k < N; ++k) s += a[i * p->stride + p->offset[k]];
    c[i] = s;
}
template [[host_name("pdd_max_i")]] [[kernel]] decltype(pdd<int>) pdd<int>;
template [[host_name("pdd_min_i")]] [[kernel]] decltype(pdd<int, pdd_min<int>>) pdd<int, pdd_min<int>>;
template [[host_name("pdd_vec_2")]] [[kernel]] void pdd_vec(device const float* a [[buffer(0)]],
    device float* c [[buffer(1)]], constant pdd_params<2>* p [[buffer(2)]], uint i [[thread_position_in_grid]]);
"""),
    """
static_assert(is_same_v<decltype(bfloat(1.0f) + bfloat(2.0f)), bfloat>, "bfloat + bfloat is bfloat");
static_assert(is_same_v<decltype(bfloat(1.0f) * 2), bfloat>, "bfloat * int is bfloat");
static_assert(is_same_v<decltype(bfloat(1.0f) * 2.0f), float>, "bfloat * float is float");
static_assert(is_same_v<decltype(-bfloat(1.0f)), bfloat>, "-bfloat is bfloat");
struct pbf_mask { int v; operator bool() const { return v != 0; } };
kernel void pbf_arith(device const float* a [[buffer(0)]], device const float* b [[buffer(1)]],
                      device float* out [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    bfloat x = bfloat(a[i]), y = bfloat(b[i]);
    bfloat s = x + y;
    out[5 * i] = float(a[i] > 0.0f ? x : x * y);  // both arms bfloat: not ambiguous
    out[5 * i + 1] = float(s);
    out[5 * i + 2] = x * 3.0f;  // float arithmetic, no rounding to bfloat
    out[5 * i + 3] = float(-x / y);
    const pbf_mask m = {int(i % 3)};
    s = m;  // a class converting to bool, assigned as to a builtin type
    out[5 * i + 4] = float(s);
}
""",
    """
struct plit_pair { float a; float b; plit_pair(float a_, float b_) : a(a_), b(b_) {} };
kernel void plit_float(device const float* x [[buffer(0)]], device float* out [[buffer(1)]],
                       uint i [[thread_position_in_grid]]) {
    auto h = 0.1 * x[i];  // float in MSL (no double): float arithmetic
    static_assert(is_same_v<decltype(h), float>, "an unsuffixed literal is a float");
    plit_pair p = {1e-1 * x[i], 2. + x[i]};  // no narrowing from double
    out[3 * i] = h;
    out[3 * i + 1] = p.a;
    out[3 * i + 2] = p.b;
}
""",
    """
static_assert(is_integral_v<bool> && is_integral_v<uchar> && !is_integral_v<float> && is_arithmetic_v<bool>, "C++ traits");
template <typename T> enable_if_t<is_integral_v<T>, T> pint_pick(T a, T b) { return a ^ b; }
template <typename T> enable_if_t<!is_integral_v<T>, T> pint_pick(T a, T b) { return isnan(a) ? a : max(a, b); }
kernel void pint_bool(device const uchar* a [[buffer(0)]], device const float* x [[buffer(1)]],
                      device float* out [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    const bool b = a[i] != 0;
    out[i] = float(pint_pick(b, true)) + pint_pick(x[i], 0.0f);  // bool takes the integral overload
}
""",
    """
kernel void psgm_product(device const float* in [[buffer(0)]], device float* out [[buffer(1)]]) {
    simdgroup_float8x8 a, b, c;
    simdgroup_load(a, in);
    simdgroup_load(b, in + 64);
    simdgroup_load(c, in + 128);
    simdgroup_float8x8 r = (a * b) * c;  // operator*: the matrix product
    simdgroup_store(r, out);
}
""",
    """
#define PLOOP_MIN(x, y) ((x) < (y) ? (x) : (y))
#define PLOOP_N 6
kernel void ploop_pragma(device const float* x [[buffer(0)]], device float* out [[buffer(1)]],
                         uint i [[thread_position_in_grid]]) {
    float s = 0.0f;
#pragma unroll (PLOOP_MIN(PLOOP_N / 2, 4))
    for (int k = 0; k < PLOOP_N; ++k) s += x[i * PLOOP_N + k];
#pragma clang loop unroll_count(PLOOP_MIN(2, PLOOP_N))
    for (int k = 0; k < 2; ++k) s *= 2.0f;
    out[i] = s;
}
""",
    # Pragmas in macros through the _Pragma operator (MLX's STEEL_PRAGMA_UNROLL), several on a
    # line and one written directly, each taking its own line in the translation.
    r"""
#define PSTEEL_UNROLL _Pragma("clang loop unroll(full)")
#define PSTEEL_NO_UNROLL _Pragma("clang loop unroll(disable)")
#define PQUIET _Pragma("clang diagnostic push") _Pragma("clang diagnostic ignored \"-Wunused-variable\"")
#define PLOUD _Pragma("clang diagnostic pop")
PQUIET
kernel void psteel_pragma(device const float* x [[buffer(0)]], device float* out [[buffer(1)]],
                          uint i [[thread_position_in_grid]]) {
    float s = 0.0f, unused = 1.0f;
    PSTEEL_UNROLL for (int k = 0; k < 6; ++k) s += x[i * 6 + k];
    PSTEEL_NO_UNROLL
    for (int k = 0; k < 2; ++k) { _Pragma("unroll") for (int j = 0; j < 3; ++j) s += 1.0f; } out[i] = s;
}
PLOUD
""",
    """
struct pmem_flag {
    int v;
    bool on() thread { return v != 0; }
    bool on() const threadgroup { return v != 0; }
    bool on() const device { return v != 0; }
};
kernel void pmem_uniform(device const int* x [[buffer(0)]], coherent(device) device int* out [[buffer(1)]],
                         constant int& total [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    const uniform<int> step = make_uniform(4);
    const uniform<int> blocks = total / step;  // int / uniform<int>
    pmem_flag f = {x[i]};
    out[i] = f.on() ? blocks * step + int(i) : -int(step);
}
""",
])

# Sets of their own: a set with function constants builds when a kernel is first asked
# for, so a kernel that fails there would take the others with it; and checked mode does
# not take pointers to void (yet).
KS_FC = KernelSet([
    """
static constant constexpr const int pfc_k [[function_constant(7)]];  // MLX's spelling
kernel void pfc_static(device int* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    out[i] = pfc_k * int(i);
}
""",
])
KS_VOID = KernelSet([
    """
kernel void pvoid_rows(device const void* src [[buffer(0)]], device void* dst [[buffer(1)]],
                       constant ulong& row_bytes [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    device const float* row = (device const float*)((device const char*)src + i * row_bytes);
    ((device float*)dst)[i] = row[0] + row[1];
}
""",
])


def test_template_kernels_overloaded_by_parameter_list(device):
    x = np.arange(16, dtype=np.float32)
    y = np.zeros(16, np.float32)
    KS.get(device, "povl_scale_f")(16, x, y)
    assert_equal(y, x * 3)
    KS.get(device, "povl_shift_f")(16, x, y)
    assert_equal(y, x - 7)


def test_template_defaults_closed_by_shift_token_and_deduced_instantiation(device, rng):
    a = rng.integers(-50, 50, 32).astype(np.int32)
    b = rng.integers(-50, 50, 32).astype(np.int32)
    c = np.zeros(32, np.int32)
    KS.get(device, "pdd_max_i")(32, a, b, c)
    assert_equal(c, np.maximum(a, b))
    KS.get(device, "pdd_min_i")(32, a, b, c)
    assert_equal(c, np.minimum(a, b))
    v = rng.standard_normal(64).astype(np.float32)
    out = np.zeros(16, np.float32)
    KS.get(device, "pdd_vec_2")(16, v, out, np.array([4, 1, 3], np.int32))
    assert_equal(out, v[1::4] + v[3::4])


def test_bfloat_arithmetic_stays_bfloat(device, rng):
    a = rng.standard_normal(64).astype(np.float32) * 10
    b = rng.standard_normal(64).astype(np.float32) + 3
    out = np.zeros(320, np.float32)
    KS.get(device, "pbf_arith")(64, a, b, out)
    x, y = bfloat_rounded(a), bfloat_rounded(b)
    assert_equal(out[0::5], np.where(a > 0, x, bfloat_rounded(x * y)))
    assert_equal(out[1::5], bfloat_rounded(x + y))
    assert_equal(out[2::5], x * np.float32(3))
    assert_equal(out[3::5], bfloat_rounded(-x / y))
    assert_equal(out[4::5], (np.arange(64) % 3 != 0).astype(np.float32))


def test_unsuffixed_literals_are_float(device, rng):
    x = rng.standard_normal(256).astype(np.float32) * 1000
    out = np.zeros(768, np.float32)
    KS.get(device, "plit_float")(256, x, out)
    assert_equal(out[0::3], np.float32(0.1) * x)  # float products, not double ones rounded
    assert_equal(out[1::3], np.float32(0.1) * x)
    assert_equal(out[2::3], np.float32(2) + x)


def test_uniform_member_qualifiers_and_coherent(device):
    x = np.array([0, 1] * 8, np.int32)
    out = np.zeros(16, np.int32)
    KS.get(device, "pmem_uniform")(16, x, out, np.int32(30))
    assert_equal(out, np.where(x != 0, 28 + np.arange(16), -4))


def test_bool_is_integral(device, rng):
    a = (np.arange(32) % 3 == 0).astype(np.uint8)
    x = rng.standard_normal(32).astype(np.float32)
    out = np.zeros(32, np.float32)
    KS.get(device, "pint_bool")(32, a, x, out)
    assert_equal(out, (a == 0).astype(np.float32) + np.maximum(x, 0))


def test_static_constexpr_function_constant(device):
    out = np.zeros(8, np.int32)
    KS_FC.get(device, "pfc_static", {"pfc_k": 5})(8, out)
    assert_equal(out, 5 * np.arange(8))


def test_simdgroup_matrix_product_operator(device, rng):
    m = rng.standard_normal((3, 8, 8)).astype(np.float32)
    out = np.zeros(64, np.float32)
    KS.get(device, "psgm_product")(32, m.ravel(), out, threadgroup=32)
    expect = (m[0].astype(np.float64) @ m[1]) @ m[2]
    assert_close(out.reshape(8, 8), expect, rtol=1e-4, atol=1e-4)


def test_macros_in_loop_pragmas(device, rng):
    x = rng.standard_normal(96).astype(np.float32)
    out = np.zeros(16, np.float32)
    KS.get(device, "ploop_pragma")(16, x, out)
    assert_close(out, x.reshape(16, 6).sum(1) * 4, rtol=1e-5)


def test_pragma_operator_in_macros(device, rng):
    x = rng.standard_normal(96).astype(np.float32)
    out = np.zeros(16, np.float32)
    KS.get(device, "psteel_pragma")(16, x, out)
    assert_close(out, x.reshape(16, 6).sum(1) + 6, rtol=1e-5)


def test_void_pointer_buffers(device, rng):
    x = rng.standard_normal((8, 4)).astype(np.float32)
    out = np.zeros(8, np.float32)
    KS_VOID.get(device, "pvoid_rows")(8, x, out, np.uint64(16))
    assert_equal(out, x[:, 0] + x[:, 1])


KS_CAST_COMPOUND = KernelSet([
    """
template <typename O4>
void scale_rows(threadgroup half* shmem, uint lid, O4 ms) {
    threadgroup O4* so4 = (threadgroup O4*)(shmem + 4);
    so4[lid] *= ms;
    so4[lid] += O4(1);
}
kernel void pcast_compound(device const float* x [[buffer(0)]], device float* out [[buffer(1)]],
                           uint lid [[thread_position_in_threadgroup]]) {
    threadgroup half shmem[4 + 32 * 4];
    threadgroup half4* s4 = (threadgroup half4*)(shmem + 4);
    s4[lid] = half4(x[4 * lid], x[4 * lid + 1], x[4 * lid + 2], x[4 * lid + 3]);
    scale_rows<half4>(shmem, lid, half4(0.5h, 2.0h, -1.0h, 0.25h));
    const half4 r = s4[lid];
    out[4 * lid] = r.x;
    out[4 * lid + 1] = r.y;
    out[4 * lid + 2] = r.z;
    out[4 * lid + 3] = r.w;
}
""",
])


def test_compound_assignments_through_cast_threadgroup_pointers(device, rng):
    x = rng.integers(-64, 64, 128).astype(np.float32)  # exact in half, and after the scaling
    out = np.zeros(128, np.float32)
    KS_CAST_COMPOUND.get(device, "pcast_compound")(32, x, out, threadgroup=32)
    scale = np.tile(np.array([0.5, 2.0, -1.0, 0.25], np.float32), 32)
    assert_equal(out, x * scale + 1)
