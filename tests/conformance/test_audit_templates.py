"""Fidelity audit of the C++ production MSL is written in: templates, metaprogramming and classes
(MSL 3.2 is C++14-based, spec §1.5; `if constexpr` and fold expressions are the CPU's C++17
leniencies, docs/msl-rules.md). Kernels written as MLX, ggml, candle and PyTorch's MPS kernels
write them, each value checked against NumPy or Python on every device the fixture gives.

Bugs this file found (each test says what was wrong before 2026-12-05):
- a struct's members named `xyz` and `rgb` (two swizzle spellings of one code) read the same
  member; a member function named like a swizzle (`p.xy()`, `p.bar()`, `f.bar<3>()`), and a
  base class's swizzle-named member beside a derived class's own, did not compile;
- a class's own `operator/=` / `operator%=` was bypassed by the CPU's division guard
  (`a = a / b` instead), or did not compile where the class had no matching `operator/`;
- member functions overloaded by the address space of a pointer parameter, called through an
  object (`a.add(sh, l)`), took a threadgroup array for the device overload (silent);
- checked mode refused CRTP's `static_cast<const thread D*>(this)`;
- the recursion rule refused a variadic template peeling its pack (`f(T a, R... r)` calling
  `f(r...)`, another instantiation);
- a kernel parameter declared with an alias of a pointer or reference type (`typedef device
  float* P`, `using R = constant S&`, `template <class T> using cref = constant T&`) was taken for a
  value of the pointer's own bytes, or did not compile;
- a default template argument closed by `>>` used in a kernel parameter's type read a token
  out of bounds (bad_alloc or length_error at random).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import metalcall as mc
from mcconf import HEADER, KernelSet, assert_close, assert_equal

X = (np.arange(16, dtype=np.float32) - 5.5)
XI = np.arange(16, dtype=np.int32) - 5
IDX = np.arange(16)

# ---------------------------------------------------------------------------
# Constructs that were already right (kept: every one can fail)
# ---------------------------------------------------------------------------

KS_OK = KernelSet([
    # Non-type template parameters of every integral type, bool, size_t and two enum kinds.
    (["at_nt_f", "at_nt_i"], """
enum class at_op : uchar { add = 1, mul = 7 };
enum at_plain { AT_P0 = 3, AT_P1 = 9 };
template <typename T, char C, uchar UC, short S, ushort US, int I, uint U, long L, ulong UL, bool B, at_op O,
          at_plain P, size_t Z>
kernel void at_nt(device const T* x [[buffer(0)]], device T* y [[buffer(1)]], uint i [[thread_position_in_grid]]) {
    T acc = x[i];
    acc += T(C) + T(UC) + T(S) + T(US) + T(I) + T(U % 1000u) + T(L % 100) + T(UL % 1000ul) + T(B ? 1 : 0) + T(Z);
    if (O == at_op::mul) acc *= T(uchar(O)); else acc += T(uchar(O));
    y[i] = acc + T(int(P));
}
template [[host_name("at_nt_f")]] [[kernel]] decltype(at_nt<float, -3, 200, -300, 60000, -70000, 4000000123u, -9000000000007l,
    18000000000000000123ul, true, at_op::mul, AT_P1, 5>) at_nt<float, -3, 200, -300, 60000, -70000, 4000000123u,
    -9000000000007l, 18000000000000000123ul, true, at_op::mul, AT_P1, 5>;
template [[host_name("at_nt_i")]] [[kernel]] decltype(at_nt<int, 'a', 'b', 1, 2, 3, 4u, 5l, 6ul, false, at_op::add, AT_P0,
    sizeof(float4)>) at_nt<int, 'a', 'b', 1, 2, 3, 4u, 5l, 6ul, false, at_op::add, AT_P0, sizeof(float4)>;
"""),
    # Partial and full specialisation, SFINAE overloads, conditional_t, template template
    # parameters, variadic folds, constexpr functions, dependent names, CRTP by reference,
    # if constexpr with auto returns, decltype(auto) returning a reference.
    """
template <typename T, int N> struct at_acc { static T run(T v) { return v * T(N); } };
template <typename T> struct at_acc<T, 0> { static T run(T v) { return -v; } };
template <> struct at_acc<int, 2> { static int run(int v) { return v + 1000; } };
template <typename T> struct at_acc<vec<T, 2>, 3> { static vec<T, 2> run(vec<T, 2> v) { return v.yx; } };
template <typename T, typename enable_if<is_floating_point_v<T>, int>::type = 0> T at_sf(T v) { return v * T(0.5); }
template <typename T, metal::enable_if_t<is_integral_v<T> && is_signed_v<T>, int> = 0> T at_sf(T v) { return v - T(1); }
template <typename T> metal::enable_if_t<is_same_v<T, uint>, T> at_sf(T v) { return v << 2; }
template <typename T> using at_wide = conditional_t<(sizeof(T) < 4), int, conditional_t<is_floating_point_v<T>, float, long>>;
template <typename T> struct at_twice { static T f(T v) { return v + v; } };
template <template <typename> class Op, typename T> T at_apply(T v) { return Op<T>::f(v); }
template <typename... Ts> auto at_sum(Ts... v) { return (v + ... + 0); }
template <int... Ns> struct at_count { static constexpr int value = sizeof...(Ns); static constexpr int total = (Ns + ...); };
constexpr int at_fact(int n) { int r = 1; for (int k = 2; k <= n; ++k) r *= k; return r; }
static_assert(at_fact(5) == 120 && at_count<1, 2, 3>::value == 3 && at_count<1, 2, 3>::total == 6, "");
template <typename T> struct at_holder { using type = T; template <int N> static T scaled(T v) { return v * T(N); } };
template <typename H> typename H::type at_dep(typename H::type v) { return H::template scaled<3>(v); }
template <typename D> struct at_base { float go(float v) const { return static_cast<const thread D&>(*this).impl(v) + 1.0f; } };
struct at_der : at_base<at_der> { float impl(float v) const { return v * 10.0f; } };
template <typename T> auto at_pick(T v) { if constexpr (is_integral_v<T>) return v / 2; else return v * T(2); }
template <typename T> decltype(auto) at_first(thread T& a) { return (a[0]); }
kernel void at_meta(device const float* x [[buffer(0)]], device float* y [[buffer(1)]], uint i [[thread_position_in_grid]]) {
    float v = x[i];
    device float* r = y + 14 * i;
    r[0] = at_acc<float, 4>::run(v); r[1] = at_acc<float, 0>::run(v); r[2] = float(at_acc<int, 2>::run(int(i)));
    float2 p = at_acc<float2, 3>::run(float2(v, v + 1)); r[3] = p.x - p.y;
    r[4] = at_sf(v); r[5] = float(at_sf(int(i))); r[6] = float(at_sf(uint(i)));
    at_wide<short> w1 = 40000; at_wide<half> w2 = 1; at_wide<ulong> w3 = 1l << 40;
    r[7] = float(w1 + w2) + float(w3 >> 38) + float(sizeof(at_wide<char>) + sizeof(at_wide<float>));
    r[8] = at_apply<at_twice>(v); r[9] = at_sum(v, 1.0f, 2.0f, int(i)); r[10] = float(at_fact(int(i % 6u)));
    r[11] = at_dep<at_holder<float>>(v); at_der d; r[12] = d.go(v) + float(at_pick(int(i))) + at_pick(v);
    float4 arr = float4(v, 1, 2, 3); at_first(arr) = 42.0f; r[13] = arr.x + arr.y + float(at_count<4, 5>::total);
}
""",
    # Classes: constexpr constructors with defaults, arithmetic, compound, subscript, call and
    # conversion operators, hidden friends, member functions in each address space, nested
    # types, enum class with an underlying type, unions, static constexpr members, multiple
    # inheritance, references to structs in each space.
    """
struct at_v2 {
    float a, b;
    constexpr at_v2(float a_ = 1.0f, float b_ = 2.0f) : a(a_), b(b_) {}
    at_v2 operator+(at_v2 o) const { return at_v2(a + o.a, b + o.b); }
    at_v2& operator+=(at_v2 o) { a += o.a; b += o.b; return *this; }
    at_v2 operator-() const { return at_v2(-a, -b); }
    float operator[](int k) const { return k == 0 ? a : b; }
    thread float& operator[](int k) { return k == 0 ? a : b; }
    float operator()(float s) const { return a * s + b; }
    explicit operator float() const { return a * b; }
    operator int2() const { return int2(int(a), int(b)); }
    friend at_v2 operator*(float s, at_v2 v) { return at_v2(s * v.a, s * v.b); }
    friend bool operator==(at_v2 p, at_v2 q) { return p.a == q.a && p.b == q.b; }
    float dsum() const device { return a + b + 100.0f; }
    float tsum() const thread { return a + b; }
    float csum() const constant { return a - b; }
    void bump() threadgroup { a += 1.0f; }
    static constexpr int kTag = 17;
    enum Kind : short { Small = -2, Big = 5 };
    struct Inner { int q = 3; };
};
enum class at_mode : ushort { Lo = 65535, Hi = 1 };
union at_bits { float f; uint u; };
struct at_b1 { float s = 0.25f; float scale(float v) const { return v * s; } };
struct at_b2 { int off = 4; };
struct at_derived : at_b1, at_b2 { at_derived() { s = 3.0f; } float all(float v) const { return scale(v) + float(off); } };
constant at_v2 at_kc[2] = { at_v2(5.0f, 1.0f), at_v2(7.0f, 3.0f) };
float at_by_ref(thread const at_v2& t, device const at_v2& d, constant at_v2& c, threadgroup const at_v2& g) {
    return t.a + 10.0f * d.a + 100.0f * c.a + 1000.0f * g.a;
}
kernel void at_cls(device const float* x [[buffer(0)]], device float* y [[buffer(1)]], device at_v2* dv [[buffer(2)]],
                   uint i [[thread_position_in_grid]], uint l [[thread_index_in_threadgroup]]) {
    threadgroup at_v2 tg[16];
    float v = x[i];
    at_v2 p(v), q(v, v), r;
    at_v2 s = p + q; s += r; s = -s;
    device float* o = y + 16 * i;
    o[0] = s[0]; o[1] = s[1]; s[1] = 9.0f; o[2] = s.b;
    o[3] = q(2.0f); o[4] = float(q);
    int2 c = p; o[5] = float(c.x + c.y);
    o[6] = (2.0f * p).a + ((p == at_v2(v)) ? 1000.0f : 0.0f);
    o[7] = dv[i].dsum(); o[8] = r.tsum(); o[9] = at_kc[i & 1].csum();
    o[10] = float(at_v2::kTag + at_v2::Big + at_v2::Small + at_v2::Inner{}.q);
    o[11] = float(ushort(at_mode::Lo)) + float(is_same_v<underlying_type_t<at_mode>, ushort>);
    at_bits b; b.f = v; o[12] = float(b.u >> 23);
    at_derived d; o[13] = d.all(v);
    tg[l] = at_v2(v, 0.0f); tg[l].bump();
    o[14] = at_by_ref(p, dv[i], at_kc[1], tg[l]);
    device at_v2& dr = dv[i]; dr.b += 1.0f; o[15] = dv[i].b;
}
""",
    # Statements: range-for over metal::array (by value and by reference), switch with
    # [[fallthrough]], comma expressions in for, lambdas (by value, by reference, init-capture,
    # mutable, generic, immediately invoked, a namespace-scope constexpr one, `this`),
    # constexpr local arrays indexed by a loop variable, #pragma unroll and _Pragma.
    """
constexpr auto at_sq = [](float v) { return v * v; };
template <typename F> float at_twice_f(F f, float v) { return f(f(v)); }
struct at_scaler { float k; float run(float v) const { auto g = [this](float z) { return z * k; }; return g(v); } };
kernel void at_stmt(device const float* x [[buffer(0)]], device float* y [[buffer(1)]], uint i [[thread_position_in_grid]]) {
    float v = x[i];
    device float* o = y + 12 * i;
    metal::array<float, 4> arr = {v, 1.0f, 2.0f, 3.0f};
    float s = 0; for (float e : arr) s += e;
    for (thread auto& e : arr) e *= 2.0f;
    o[0] = s + arr[3] + float(arr.size());
    int acc = 0;
    switch (i % 4) {
        case 0: acc += 1; [[fallthrough]];
        case 1: acc += 10;
        case 2: acc += 100; break;
        default: acc = -1;
    }
    o[1] = float(acc);
    int t = 0; for (int a = 0, b = 10; a < b; ++a, --b) t += a * b;
    o[2] = float(t);
    float m = 3.0f;
    auto byval = [=](float z) { return z * m; };
    auto byref = [&](float z) { m += z; };
    byref(1.0f); o[3] = byval(v) + m;
    o[4] = at_sq(v) + at_twice_f([](float z) { return z + 1.0f; }, v);
    constexpr int tbl[5] = {3, 1, 4, 1, 5};
    int u = 0;
    #pragma unroll
    for (int k = 0; k < 5; ++k) u += tbl[k] * k;
    _Pragma("unroll 2") for (int k = 0; k < 4; ++k) u += k;
    o[5] = float(u);
    auto gen = [](auto a, auto b) { return a + b; };
    o[6] = gen(v, 1.0f) + float(gen(2, 3));
    int counter = 0;
    auto inc = [counter]() mutable { return ++counter; };
    inc(); o[7] = float(inc()) + float(counter);
    auto init = [s2 = v * 2.0f, k = 1](float z) { return s2 + z + float(k); };
    o[8] = init(0.5f) + [v](float z) { return v - z; }(1.0f);
    at_scaler sc{4.0f}; o[9] = sc.run(v);
    auto add_to = [](thread auto& ref, auto val) { ref += val; };
    float a2 = 1; add_to(a2, v); add_to(a2, 2.0f); o[10] = a2;
    int cnt = 0; for (uint k = 0; k < 3; ++k) { if (k == 1) continue; cnt += (k, 2); }
    o[11] = float(cnt);
}
""",
    # X-macros, token pasting, stringising into host names, variadic macros, language-version
    # tests (the default language is MSL 3.2: __METAL_VERSION__ 320, __HAVE_BFLOAT__).
    (["unary_neg_float", "unary_neg_int", "unary_sq_float", "unary_sq_int", "unary_absv_float", "unary_absv_int",
      "at_kernel_scale_f32"], """
#define AT_UNARY(X) X(neg, -v) X(sq, v * v) X(absv, metal::abs(v))
#define AT_DEFINE(name, expr) struct at_op_##name { template <typename T> T operator()(T v) const { return expr; } };
AT_UNARY(AT_DEFINE)
#undef AT_DEFINE
template <typename T, typename Op>
kernel void at_unary(device const T* x [[buffer(0)]], device T* y [[buffer(1)]], uint i [[thread_position_in_grid]]) {
    y[i] = Op()(x[i]);
}
#define AT_INSTANTIATE(name, expr) \\
    template [[host_name("unary_" #name "_float")]] [[kernel]] decltype(at_unary<float, at_op_##name>) at_unary<float, at_op_##name>; \\
    template [[host_name("unary_" #name "_int")]] [[kernel]] decltype(at_unary<int, at_op_##name>) at_unary<int, at_op_##name>;
AT_UNARY(AT_INSTANTIATE)
#define AT_KERNEL_NAME(a, b) at_kernel_##a##_##b
#define AT_LOG(...) /* nothing */
#define AT_FIRST(a, ...) a
kernel void AT_KERNEL_NAME(scale, f32)(device const float* x [[buffer(0)]], device float* y [[buffer(1)]],
                                       uint i [[thread_position_in_grid]]) {
    AT_LOG("hello", i, 3);
    float f = AT_FIRST(2.0f, 3.0f, 4.0f);
#if defined(__METAL_VERSION__) && __METAL_VERSION__ >= 310
    f += 100.0f;
#endif
#if __HAVE_BFLOAT__
    f += float(bfloat(x[i])) * 0.0f + 1000.0f;
#endif
    y[i] = x[i] * f;
}
"""),
    # MLX's reduction idioms: `static constexpr constant U init` members of operator structs,
    # a Limits<U> specialised for float, N_READS defaulted, instantiation through macros.
    (["row_reduce_Max_float32", "row_reduce_Max_int32", "row_reduce_Sum_int16", "row_reduce_Max_uint8"], """
template <typename U> struct at_limits {
    static const constant U max = metal::numeric_limits<U>::max();
    static const constant U min = metal::numeric_limits<U>::lowest();
};
template <> struct at_limits<float> {
    static constexpr constant float max = metal::numeric_limits<float>::infinity();
    static constexpr constant float min = -metal::numeric_limits<float>::infinity();
};
template <typename U> struct Max {
    static constexpr constant U init = at_limits<U>::min;
    template <typename T> T operator()(T a, T b) { return a > b ? a : b; }
};
template <typename U> struct Sum { static constexpr constant U init = U(0); U operator()(U a, U b) { return a + b; } };
template <typename T, typename U, typename Op, int N_READS = 4>
[[kernel]] void at_row_reduce(const device T* in [[buffer(0)]], device U* out [[buffer(1)]],
                              const constant size_t& row [[buffer(2)]], uint gid [[thread_position_in_grid]]) {
    Op op;
    U total = Op::init;
    in += gid * row;
    for (size_t r = 0; r < row; r += N_READS) {
#pragma clang loop unroll(full)
        for (int k = 0; k < N_READS; ++k) total = op(total, static_cast<U>(in[r + k]));
    }
    out[gid] = total;
}
#define at_instantiate_kernel(name, func, ...) \\
  template [[host_name(name)]] [[kernel]] decltype(func<__VA_ARGS__>) func<__VA_ARGS__>;
#define at_instantiate_reduce(op, tname, itype, otype) \\
  at_instantiate_kernel("row_reduce_" #op "_" #tname, at_row_reduce, itype, otype, op<otype>)
at_instantiate_reduce(Max, float32, float, float)
at_instantiate_reduce(Max, int32, int, int)
at_instantiate_reduce(Sum, int16, short, int)
at_instantiate_reduce(Max, uint8, uchar, uchar)
"""),
    # Structs holding metal::array as kernel arguments, a class template's instance in a
    # `constant` reference, dependent names in parameter types (`typename Traits<T>::storage`).
    (["at_sk_f", "at_sk_h"], """
template <typename T> struct at_params { metal::array<T, 3> scale; int n; T bias; };
struct at_shape { metal::array<int, 4> dims; metal::array<float2, 2> pts; };
template <typename T> struct at_traits { using storage = T; using acc = float; static constexpr int width = 1; };
template <> struct at_traits<half> { using storage = half; using acc = float; static constexpr int width = 2; };
template <typename T>
kernel void at_sk(device const typename at_traits<T>::storage* x [[buffer(0)]], device float* y [[buffer(1)]],
                  constant at_params<T>& p [[buffer(2)]], constant at_shape& s [[buffer(3)]],
                  const constant metal::array<float, 2>& arr [[buffer(4)]], uint i [[thread_position_in_grid]]) {
    typename at_traits<T>::acc v = x[i];
    float acc = 0;
    for (auto e : p.scale) acc += float(e);
    y[4 * i + 0] = v * acc + float(p.bias) + float(p.n);
    int prod = 1; for (uint k = 0; k < s.dims.size(); ++k) prod *= s.dims[k];
    y[4 * i + 1] = float(prod) + s.pts[1].y;
    y[4 * i + 2] = arr[0] + arr[1] * 10 + float(at_traits<T>::width);
    y[4 * i + 3] = float(sizeof(at_params<T>));
}
template [[host_name("at_sk_f")]] [[kernel]] decltype(at_sk<float>) at_sk<float>;
template [[host_name("at_sk_h")]] [[kernel]] decltype(at_sk<half>) at_sk<half>;
"""),
])

LIMIT_TYPES = [("char", np.int8), ("uchar", np.uint8), ("short", np.int16), ("ushort", np.uint16), ("int", np.int32),
               ("uint", np.uint32), ("long", np.int64), ("ulong", np.uint64), ("half", np.float16),
               ("float", np.float32), ("bool", np.bool_)]
KS_LIMITS = KernelSet([f"""
kernel void at_lim_{t}(device {t}* y [[buffer(0)]], device int* z [[buffer(1)]], uint i [[thread_position_in_grid]]) {{
    using L = metal::numeric_limits<{t}>;
    y[0] = L::min(); y[1] = L::max(); y[2] = L::lowest(); y[3] = L::epsilon(); y[4] = L::round_error();
    y[5] = L::infinity(); y[6] = L::quiet_NaN(); y[7] = L::denorm_min();
    z[0] = L::digits; z[1] = L::digits10; z[2] = L::is_signed; z[3] = L::is_integer; z[4] = L::is_exact; z[5] = L::radix;
    z[6] = L::min_exponent; z[7] = L::max_exponent; z[8] = L::has_infinity; z[9] = L::has_quiet_NaN;
    z[10] = L::is_specialized; z[11] = L::max_digits10; z[12] = L::min_exponent10; z[13] = L::max_exponent10;
    z[14] = L::is_bounded; z[15] = L::is_modulo;
}}""" for t, _ in LIMIT_TYPES])


def test_template_parameters_of_every_integral_and_enum_type(device):
    y = np.zeros(16, np.float32)
    KS_OK.get(device, "at_nt_f")(16, X, y)
    # C++'s % truncates: -9000000000007 % 100 == -7
    assert_close(y, (X + (-3 + 200 - 300 + 60000 - 70000 + 123 - 7 + 123 + 1 + 5)) * 7 + 9)
    yi = np.zeros(16, np.int32)
    KS_OK.get(device, "at_nt_i")(16, XI, yi)
    assert_equal(yi, XI + 97 + 98 + 1 + 2 + 3 + 4 + 5 + 6 + 0 + 16 + 1 + 3)


def test_specialisation_sfinae_and_metaprogramming(device):
    y = np.zeros(16 * 14, np.float32)
    KS_OK.get(device, "at_meta")(16, X, y)
    fact = np.array([1, 1, 2, 6, 24, 120])[IDX % 6]
    expected = np.stack([X * 4, -X, IDX + 1000, np.ones(16), X * 0.5, IDX - 1, IDX << 2,
                         np.full(16, 40000 + 1 + 4 + 4 + 4), 2 * X, X + 3 + IDX, fact, 3 * X,
                         X * 10 + 1 + IDX // 2 + 2 * X, np.full(16, 43.0 + 9)], 1)
    assert_close(y.reshape(16, 14), expected)


def test_class_operators_members_and_spaces(device):
    y = np.zeros(256, np.float32)
    dv = np.stack([X, X * 2], 1).astype(np.float32).ravel()
    KS_OK.get(device, "at_cls")(16, X, y, dv, threadgroup=16)
    d0 = X
    d1 = X * 2
    expected = np.stack([-(X + X + 1), -(2 + X + 2), np.full(16, 9.0), X * 2 + X, X * X, np.trunc(X) + 2, 2 * X + 1000,
                         d0 + d1 + 100, np.full(16, 3.0), np.where(IDX % 2 == 0, 4.0, 4.0), np.full(16, 23.0),
                         np.full(16, 65536.0), (X.view(np.uint32) >> 23).astype(np.float32), X * 3 + 4,
                         X + 10 * d0 + 700 + 1000 * (X + 1), d1 + 1], 1)
    assert_close(y.reshape(16, 16), expected)
    assert_close(dv.reshape(16, 2)[:, 1], d1 + 1)


def test_statements_and_lambdas(device):
    y = np.zeros(16 * 12, np.float32)
    KS_OK.get(device, "at_stmt")(16, X, y)
    sw = np.array([111, 110, 100, -1])[IDX % 4]
    t = sum(a * (10 - a) for a in range(5))
    expected = np.stack([X + 6 + 6 + 4, sw, np.full(16, t), X * 3 + 4, X * X + X + 2, np.full(16, 1 + 8 + 3 + 20 + 6.0),
                         X + 1 + 5, np.full(16, 2.0), 2 * X + 1.5 + X - 1, 4 * X, 1 + X + 2, np.full(16, 4.0)], 1)
    assert_close(y.reshape(16, 12), expected)


@pytest.mark.parametrize("name,fn", [("neg", lambda v: -v), ("sq", lambda v: v * v), ("absv", np.abs)])
def test_x_macros_and_pasted_names(device, name, fn):
    y = np.zeros(16, np.float32)
    KS_OK.get(device, f"unary_{name}_float")(16, X, y)
    assert_close(y, fn(X))
    yi = np.zeros(16, np.int32)
    KS_OK.get(device, f"unary_{name}_int")(16, XI, yi)
    assert_equal(yi, fn(XI))
    y = np.zeros(16, np.float32)
    KS_OK.get(device, "at_kernel_scale_f32")(16, X, y)
    assert_close(y, X * 1102)


@pytest.mark.parametrize("name,itype,otype,fn", [("Max_float32", np.float32, np.float32, np.max),
                                                 ("Max_int32", np.int32, np.int32, np.max),
                                                 ("Sum_int16", np.int16, np.int32, np.sum),
                                                 ("Max_uint8", np.uint8, np.uint8, np.max)])
def test_mlx_style_reduction_operators(device, rng, name, itype, otype, fn):
    if itype == np.float32:
        data = (rng.standard_normal((8, 16)) * 100).astype(itype)
    else:
        data = rng.integers(np.iinfo(itype).min, np.iinfo(itype).max, (8, 16), endpoint=True).astype(itype)
    out = np.zeros(8, otype)
    KS_OK.get(device, "row_reduce_" + name)(8, data.ravel(), out, np.array([16], np.uint64))
    wide = np.float64 if otype == np.float32 else np.int64
    assert_equal(out, fn(data.astype(wide), axis=1).astype(otype))


@pytest.mark.parametrize("name,dtype,size,width", [("at_sk_f", np.float32, 20, 1), ("at_sk_h", np.float16, 16, 2)])
def test_struct_arguments_holding_metal_arrays(device, name, dtype, size, width):
    if dtype == np.float32:
        rec = np.zeros(1, np.dtype([("scale", np.float32, 3), ("n", np.int32), ("bias", np.float32)]))
    else:
        rec = np.zeros(1, np.dtype([("scale", np.float16, 3), ("pad", np.uint16), ("n", np.int32), ("bias", np.float16),
                                    ("pad2", np.uint16)]))
    rec["scale"] = [1, 2, 3]
    rec["n"] = 7
    rec["bias"] = 0.5
    shape = np.zeros(1, np.dtype([("dims", np.int32, 4), ("pts", np.float32, 4)]))
    shape["dims"] = [2, 3, 4, 5]
    shape["pts"] = [1, 2, 3, 4]
    y = np.zeros(64, np.float32)
    KS_OK.get(device, name)(16, X.astype(dtype), y, rec.view(np.uint8), shape.view(np.uint8),
                            np.array([1.5, 2.5], np.float32))
    expected = np.stack([X * 6 + 7.5, np.full(16, 124.0), np.full(16, 26.5 + width), np.full(16, float(size))], 1)
    assert_close(y.reshape(16, 4), expected)


@pytest.mark.parametrize("name,dtype", LIMIT_TYPES, ids=[t for t, _ in LIMIT_TYPES])
def test_numeric_limits_of_each_type(device, name, dtype):
    """<metal_limits> against NumPy's finfo/iinfo (and C++'s numeric_limits for bool)."""
    y = np.zeros(8, dtype)
    z = np.zeros(16, np.int32)
    KS_LIMITS.get(device, f"at_lim_{name}")(1, y, z)
    if dtype in (np.float16, np.float32):
        fi = np.finfo(dtype)
        expected = np.array([fi.smallest_normal, fi.max, fi.min, fi.eps, 0.5, np.inf, np.nan, fi.smallest_subnormal], dtype)
        half = dtype == np.float16
        ints = [fi.nmant + 1, fi.precision, 1, 0, 0, 2, fi.minexp + 1, fi.maxexp, 1, 1, 1, 5 if half else 9,
                -4 if half else -37, 4 if half else 38, 1, 0]
        assert np.array_equal(y, expected, equal_nan=True), (y, expected)
    elif dtype == np.bool_:
        assert_equal(y, np.array([False, True, False, False, False, False, False, False]))
        ints = [1, 0, 0, 1, 1, 2, 0, 0, 0, 0, 1, 0, 0, 0, 1, 0]
    else:
        ii = np.iinfo(dtype)
        signed = ii.min < 0
        digits = ii.bits - 1 if signed else ii.bits
        assert_equal(y, np.array([ii.min, ii.max, ii.min, 0, 0, 0, 0, 0], dtype))
        ints = [digits, int(digits * math.log10(2)), int(signed), 1, 1, 2, 0, 0, 0, 0, 1, 0, 0, 0, 1, int(not signed)]
    assert_equal(z, np.array(ints, np.int32))


# A threadgroup tree reduction as a kernel template whose threadgroup array and accumulator type
# come from a configuration class (a default template argument): the regions and the fibers.
KS_TRED = KernelSet([(["at_tred_f32", "at_tred_h64", "at_tred_i16"], """
template <typename T, int BS> struct at_cfg {
    static constexpr int TILE = BS;
    using acc_t = conditional_t<is_same_v<T, half>, float, T>;
};
template <typename T, int BS, typename C = at_cfg<T, BS> >
kernel void at_tred(device const T* x [[buffer(0)]], device typename C::acc_t* y [[buffer(1)]],
                    uint gid [[threadgroup_position_in_grid]], uint lid [[thread_index_in_threadgroup]]) {
    threadgroup typename C::acc_t sh[C::TILE];
    sh[lid] = static_cast<typename C::acc_t>(x[gid * BS + lid]);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    for (uint s = BS / 2; s > 0; s >>= 1) {
        if (lid < s) sh[lid] += sh[lid + s];
        threadgroup_barrier(mem_flags::mem_threadgroup);
    }
    if (lid == 0) y[gid] = sh[0];
}
template [[host_name("at_tred_f32")]] kernel void at_tred<float, 32>(device const float*, device float*, uint, uint);
template [[host_name("at_tred_h64")]] [[kernel]] decltype(at_tred<half, 64>) at_tred<half, 64>;
template [[host_name("at_tred_i16")]] [[kernel]] decltype(at_tred<int, 16>) at_tred<int, 16>;
""")])


@pytest.mark.parametrize("regions", [True, False], ids=["regions", "fibers"])
@pytest.mark.parametrize("name,dtype,block", [("at_tred_f32", np.float32, 32), ("at_tred_h64", np.float16, 64),
                                              ("at_tred_i16", np.int32, 16)])
def test_templated_threadgroup_reduction(device, rng, regions, name, dtype, block):
    ks = KS_TRED if regions else KS_TRED.with_defines({"METALCALL_BARRIER_REGIONS": "0"})
    if dtype == np.int32:
        data = rng.integers(-1000, 1000, block * 8).astype(dtype)
    else:
        data = (rng.standard_normal(block * 8) * 4).astype(dtype)
    out = np.zeros(8, np.int32 if dtype == np.int32 else np.float32)
    ks.get(device, name)(block * 8, data, out, threadgroup=block)
    assert_close(out, data.astype(np.float64).reshape(8, block).sum(1), rtol=1e-5, atol=1e-3)


# ---------------------------------------------------------------------------
# Bugs found by this audit
# ---------------------------------------------------------------------------

KS_FIXED = KernelSet([
    # Members named like swizzles: `xyz` and `rgb` had one code (mtl_swz<1012>), so both names
    # read the first of them (a silent wrong value where their types match); `xy()` and `bar()`
    # were rewritten to swizzle calls and did not compile.
    """
struct at_particle { float3 xyz; float3 rgb; float2 xy; float2 rg; float ba; };
struct at_point {
    float x, y;
    float2 xy() const { return float2(x, y); }
    float bar() const { return x * 2.0f; }
    float aa;
};
kernel void at_swizzle_names(device const float* x [[buffer(0)]], device float* y [[buffer(1)]],
                             uint i [[thread_position_in_grid]]) {
    float v = x[i];
    at_particle p;
    p.xyz = float3(v, 1, 2); p.rgb = float3(10, 20, 30); p.xy = float2(3, 4); p.rg = float2(5, 6); p.ba = 7;
    thread at_particle* pp = &p;
    device float* o = y + 8 * i;
    o[0] = p.xyz.x; o[1] = p.rgb.x + pp->rgb.z; o[2] = p.xy.y; o[3] = pp->rg.y + p.ba;
    at_point q{v, 3, 4};
    o[4] = q.xy().x + q.xy().y; o[5] = q.bar(); o[6] = q.aa; o[7] = float3(v, 1, 2).bgr.x;
}
""",
    # Swizzle-named members of base classes beside a derived class's own: the derived class's
    # accessor hid its base's (`d.xy` of B's member beside D's `rgb`: "no viable overloaded '='").
    """
struct at_sb { float2 xy; float zz; };
struct at_sd : at_sb { float3 rgb; };
struct at_se : public at_sd { float2 xy; };
struct at_sc { float2 ab; };
struct at_sm : at_sb, at_sc { };
template <typename T> struct at_sv { vec<T, 3> xyz; T w; };
template <typename T> struct at_svd : at_sv<T> { T rg; };
kernel void at_swizzle_bases(device const float* x [[buffer(0)]], device float* y [[buffer(1)]],
                             uint i [[thread_position_in_grid]]) {
    at_sd d; d.xy = float2(x[i], 1); d.zz = 5; d.rgb = float3(7, 8, 9);
    at_se e; e.xy = float2(100, 200); e.at_sb::xy = float2(1, 2); e.rgb = float3(0);
    at_sm m; m.xy = float2(3, 4); m.ab = float2(5, 6);
    at_svd<float> vd; vd.xyz = float3(1, 2, x[i]); vd.rg = 7;
    device float* o = y + 5 * i;
    o[0] = d.xy.x + d.xy.y; o[1] = d.rgb.z + d.zz; o[2] = e.xy.y + e.at_sb::xy.y; o[3] = m.xy.x + m.ab.y;
    o[4] = vd.xyz.z + vd.rg + vd.xyz.zyx.z;
}
""",
    # Member functions overloaded by the address space of a pointer parameter, called through an
    # object: the arguments were not tagged with their space, so the threadgroup array went to the
    # device overload (a silent wrong sum on the CPU; a CompileError in checked mode).
    """
struct at_acc2 {
    float s = 0;
    void add(const device float* p, uint k) { s += p[k]; }
    void add(const threadgroup float* p, uint k) { s += p[k] * 10.0f; }
    void add(const thread float* p, uint k);
    template <typename T> T pick(const device T* p) const { return p[0]; }
    template <typename T> T pick(const constant T* p) const { return p[0] + T(1000); }
};
void at_acc2::add(const thread float* p, uint k) { s += p[k] * 100.0f; }
kernel void at_space_members(device const float* x [[buffer(0)]], constant float* c [[buffer(1)]],
                             device float* y [[buffer(2)]], uint i [[thread_position_in_grid]],
                             uint l [[thread_index_in_threadgroup]]) {
    threadgroup float sh[16];
    sh[l] = x[i] * 2.0f;
    float loc[1] = {x[i] * 3.0f};
    at_acc2 a;
    thread at_acc2* pa = &a;
    a.add(x, i); a.add(sh, l); pa->add(loc, 0u);
    y[2 * i] = a.s;
    y[2 * i + 1] = a.pick(x) + pa->pick(c);
}
""",
    # Out-of-class definitions of a class template's members (a member template, an operator, a
    # constructor), a nested class template, a conversion template, a friend, inheriting
    # constructors and `using Base::f`, a defaulted template template parameter. `f.bar<3>()`
    # (a member template spelled like an rgba swizzle) was a swizzle, "no member named 'mtl_swz'".
    """
template <typename T> struct at_foo {
    T v;
    template <int N> T bar() const;
    at_foo operator+(at_foo o) const;
    at_foo(T a);
    static constexpr int k = 7;
    template <typename U> struct inner { U u; T t; U sum() const { return u + U(t); } };
    template <typename U> operator U() const { return U(v * T(2)); }
};
template <typename T> template <int N> T at_foo<T>::bar() const { return v * T(N); }
template <typename T> at_foo<T> at_foo<T>::operator+(at_foo<T> o) const { return at_foo<T>(v + o.v); }
template <typename T> at_foo<T>::at_foo(T a) : v(a) {}
template <typename T> T at_peek(const thread at_foo<T>& f) { return f.v; }
float at_peek(const thread at_foo<float>& f) { return f.v + 0.5f; }
struct at_base2 { float s; at_base2(float a) : s(a) {} float f() const { return s; } float f(int k) const { return s * float(k); } };
struct at_der2 : at_base2 { using at_base2::at_base2; using at_base2::f; float f(float z) const { return z; } };
template <typename T, template <typename> class C = at_foo> T at_make_twice(T a) { C<T> c(a); return (c + c).v; }
kernel void at_out_of_class(device const float* x [[buffer(0)]], device float* y [[buffer(1)]],
                            uint i [[thread_position_in_grid]]) {
    float v = x[i];
    at_foo<float> f(v);
    device float* o = y + 7 * i;
    o[0] = f.bar<3>() + f.template bar<1>();
    o[1] = (f + at_foo<float>(1.0f)).v;
    o[2] = float(at_foo<float>::k) + at_foo<float>::inner<int>{2, v}.sum();
    int iv = f; o[3] = float(iv);
    o[4] = at_peek(f);
    at_der2 d(v); o[5] = d.f() + d.f(2) + d.f(0.25f);
    o[6] = at_make_twice(v);
}
""",
    # A class's own compound division: `s /= 2` called `s = s / 2` through the division guard.
    """
struct at_stat {
    float v; int n;
    thread at_stat& operator/=(float s) { v = v / s; n += 1; return *this; }
    thread at_stat& operator%=(int m) { v = v + float(m); n += 10; return *this; }
    at_stat operator/(float s) const { return {v / s, n}; }
};
struct at_only_compound { float v; thread at_only_compound& operator/=(float s) { v = v / s + 1000.0f; return *this; } };
kernel void at_compound_division(device const float* x [[buffer(0)]], device float* y [[buffer(1)]],
                                 device int* z [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    at_stat s{x[i], 0};
    s /= 2.0f; s /= 4.0f; s %= 3;
    y[3 * i] = s.v; z[i] = s.n;
    at_only_compound c{x[i]}; c /= 2.0f; y[3 * i + 1] = c.v;
    int4 q = int4(int(i), 7, -9, 0); q /= int4(2, 3, 4, 5); q %= int4(3, 2, 5, 7);
    y[3 * i + 2] = float(q.x * 1000 + q.y * 100 + q.z * 10 + q.w);
}
""",
    # CRTP through `this`: the reference form was allowed, the pointer form refused in checked mode.
    """
template <typename D> struct at_crtp {
    float twice(float v) const { return 2.0f * static_cast<const thread D*>(this)->impl(v); }
    float once(float v) const { return static_cast<const thread D*>(this)->impl(v); }
};
struct at_crtp_sq : at_crtp<at_crtp_sq> { float k; float impl(float v) const { return v * v + k; } };
kernel void at_crtp_pointer(device const float* x [[buffer(0)]], device float* y [[buffer(1)]],
                            uint i [[thread_position_in_grid]]) {
    at_crtp_sq s; s.k = 1.0f;
    y[2 * i] = s.twice(x[i]); y[2 * i + 1] = s.once(x[i]);
}
""",
    # A variadic template peeling its first argument (each call another instantiation).
    """
template <typename T, typename... R> T at_add_all(T a, R... r) {
    if constexpr (sizeof...(R) == 0) return a; else return a + at_add_all(r...);
}
template <typename T, typename... R> T at_max_all(T a, R... r) {
    if constexpr (sizeof...(R) == 0) return a; else return metal::max(a, at_max_all<R...>(r...));
}
kernel void at_variadic_peel(device const float* x [[buffer(0)]], device float* y [[buffer(1)]],
                             uint i [[thread_position_in_grid]]) {
    y[2 * i] = at_add_all(x[i], 1.0f, 2.0f, 3.0f);
    y[2 * i + 1] = at_max_all(x[i], -1.0f, 0.25f);
}
""",
    # Kernel parameters declared with aliases of pointer and reference types.
    """
typedef device float* at_fptr;
using at_cfptr = const device float*;
template <typename T> using at_cref = const constant T&;
struct at_scale { float s; float b; };
using at_scale_ref = constant at_scale&;
typedef device float& at_fref;
namespace at_ns { typedef device int* iptr; }
kernel void at_alias_params(at_cfptr x [[buffer(0)]], at_fptr y [[buffer(1)]], at_cref<float> k [[buffer(2)]],
                            at_scale_ref sc [[buffer(3)]], at_fref total [[buffer(4)]], at_ns::iptr n [[buffer(5)]],
                            uint i [[thread_position_in_grid]]) {
    y[i] = x[i] * k * sc.s + sc.b;
    n[i] = int(i) * 2;
    if (i == 0) total = k + sc.b;
}
""",
    # The same aliases in a template kernel's parameters, instantiated three ways.
    (["at_alias_tk_f", "at_alias_tk_h", "at_alias_tk_i"], """
template <typename T> using at_dptr = device T*;
template <typename T> using at_cptr = const device T*;
template <typename T> using at_tref = const constant T&;
template <typename T>
kernel void at_alias_tk(at_cptr<T> x [[buffer(0)]], at_dptr<T> y [[buffer(1)]], at_tref<T> s [[buffer(2)]],
                        uint i [[thread_position_in_grid]]) { y[i] = x[i] * s; }
template [[host_name("at_alias_tk_f")]] [[kernel]] decltype(at_alias_tk<float>) at_alias_tk<float>;
template [[host_name("at_alias_tk_h")]] kernel void at_alias_tk(at_cptr<half> x, at_dptr<half> y, at_tref<half> s, uint i);
template [[host_name("at_alias_tk_i")]] kernel void at_alias_tk<int>(at_cptr<int>, at_dptr<int>, at_tref<int>, uint);
"""),
])


def test_members_named_like_swizzles(device):
    y = np.zeros(16 * 8, np.float32)
    KS_FIXED.get(device, "at_swizzle_names")(16, X, y)
    expected = np.stack([X, np.full(16, 40.0), np.full(16, 4.0), np.full(16, 13.0), X + 3, 2 * X, np.full(16, 4.0),
                         np.full(16, 2.0)], 1)
    assert_equal(y.reshape(16, 8), expected.astype(np.float32))


def test_swizzle_named_members_of_base_classes(device):
    y = np.zeros(16 * 5, np.float32)
    KS_FIXED.get(device, "at_swizzle_bases")(16, X, y)
    expected = np.stack([X + 1, np.full(16, 14.0), np.full(16, 202.0), np.full(16, 9.0), X + 8], 1)
    assert_equal(y.reshape(16, 5), expected.astype(np.float32))


def test_member_functions_overloaded_by_pointer_address_space(device):
    y = np.zeros(32, np.float32)
    KS_FIXED.get(device, "at_space_members")(16, X, np.array([7.0], np.float32), y, threadgroup=16)
    assert_close(y.reshape(16, 2), np.stack([X + 20 * X + 300 * X, np.full(16, X[0] + 1007)], 1))


def test_out_of_class_members_and_a_member_template_named_like_a_swizzle(device):
    y = np.zeros(16 * 7, np.float32)
    KS_FIXED.get(device, "at_out_of_class")(16, X, y)
    expected = np.stack([4 * X, X + 1, 7 + 2 + np.trunc(X), np.trunc(2 * X), X + 0.5, X + 2 * X + 0.25, 2 * X], 1)
    assert_close(y.reshape(16, 7), expected)


def test_a_class_keeps_its_compound_division(device):
    y = np.zeros(48, np.float32)
    z = np.zeros(16, np.int32)
    KS_FIXED.get(device, "at_compound_division")(16, X, y, z)
    y = y.reshape(16, 3)
    assert_close(y[:, 0], X / 2 / 4 + 3)
    assert_equal(z, np.full(16, 12, np.int32))  # two divisions and one remainder by the class's own operators
    assert_close(y[:, 1], X / 2 + 1000)
    # int4 still divides through the guard's path, truncating: -9 / 4 == -2
    qx = (IDX // 2) % 3
    assert_equal(y[:, 2], (qx * 1000 + 0 * 100 + (-2) * 10 + 0).astype(np.float32))


def test_crtp_static_cast_of_this(device):
    y = np.zeros(32, np.float32)
    KS_FIXED.get(device, "at_crtp_pointer")(16, X, y)
    assert_close(y.reshape(16, 2), np.stack([2 * (X * X + 1), X * X + 1], 1))


def test_variadic_template_peeling_its_pack(device):
    y = np.zeros(32, np.float32)
    KS_FIXED.get(device, "at_variadic_peel")(16, X, y)
    assert_close(y.reshape(16, 2), np.stack([X + 6, np.maximum(X, 0.25)], 1))


def test_kernel_parameters_declared_with_pointer_and_reference_aliases(device):
    y = np.zeros(16, np.float32)
    total = np.zeros(4, np.float32)
    n = np.zeros(16, np.int32)
    KS_FIXED.get(device, "at_alias_params")(16, X, y, np.array([2.0], np.float32), np.array([3.0, 0.5], np.float32),
                                            total, n)
    assert_close(y, X * 6 + 0.5)
    assert_equal(n, (IDX * 2).astype(np.int32))
    assert total[0] == 2.5


@pytest.mark.parametrize("suffix,dtype", [("f", np.float32), ("h", np.float16), ("i", np.int32)])
def test_alias_parameters_of_a_template_kernel(device, suffix, dtype):
    x = np.arange(16).astype(dtype)
    y = np.zeros(16, dtype)
    kernel = KS_FIXED.get(device, "at_alias_tk_" + suffix)
    kernel(16, x, y, np.array([3], dtype))
    assert_equal(y, (x * 3).astype(dtype))
    if dtype != np.float32:  # the element type is the alias's argument: a float array is refused
        with pytest.raises(mc.ArgumentError):
            kernel(16, x.astype(np.float32), y, np.array([3], dtype))


def test_pointer_alias_parameter_is_a_bounded_buffer(device):
    """Before, `at_fptr y [[buffer(1)]]` was a value parameter of the pointer's own 8 bytes (32 in
    checked mode: a checked pointer's base and bounds taken from the caller's bytes). Now it is a
    buffer of floats, whose length bounds the kernel's writes in checked mode."""
    if not getattr(device, "checked", False):
        pytest.skip("bounds are checked mode's")
    kernel = KS_FIXED.get(device, "at_alias_params")
    with pytest.raises(mc.ExecutionError, match="out of bounds"):
        kernel(16, X, np.zeros(2, np.float32), np.array([2.0], np.float32), np.array([3.0, 0.5], np.float32),
               np.zeros(1, np.float32), np.zeros(16, np.int32))


def test_recursion_through_a_pack_is_still_refused(device):
    """A variadic template calling itself with as many arguments calls itself: still refused."""
    src = HEADER + """
template <typename T, typename... R> T at_same(T a, R... r) { return a + at_same(a, r...); }
kernel void at_rec(device float* x [[buffer(0)]], uint i [[thread_position_in_grid]]) { x[i] = at_same(x[i], 1.0f); }
"""
    with pytest.raises(mc.CompileError, match="recursi"):
        device.compile(src)


def test_checked_mode_still_refuses_arithmetic_past_this(device):
    """The CRTP cast is allowed; a cast of `this` to void or another type, and indexing past it, are not."""
    if not getattr(device, "checked", False):
        pytest.skip("checked mode's rule")
    for body in ["return static_cast<const thread D*>(this)[1 << 20].impl(v);",
                 "return ((const thread D*)this)->impl(v);",
                 "return reinterpret_cast<const thread D*>(this)->impl(v);",
                 "return static_cast<const thread D*>(static_cast<const thread void*>(this))->impl(v);",
                 "auto p = static_cast<const thread D*>(this); return p[1 << 20].impl(v);"]:
        src = HEADER + """
template <typename D> struct at_b { float go(float v) const { BODY } };
struct at_d : at_b<at_d> { float impl(float v) const { return v; } };
kernel void at_k(device float* x [[buffer(0)]], uint i [[thread_position_in_grid]]) { at_d d; x[i] = d.go(x[i]); }
""".replace("BODY", body)
        with pytest.raises(mc.CompileError):
            device.compile(src)


@pytest.mark.parametrize("attempt", range(4))
def test_default_template_argument_closed_by_shift_token_in_a_parameter_type(device, attempt):
    """`typename C = at_cfg<T, BS>>` (closed by `>>`) used in `device typename C::acc_t* y`: the
    instantiation read the second '>' as token number size_t(-1) (bad_alloc, length_error or a
    compile by luck); each attempt is another source, so another heap."""
    src = HEADER + f"""
template <typename T, int BS> struct at_cfg2 {{ using acc_t = T; }};
template <typename T, int BS, typename C = at_cfg2<T, BS>>
kernel void at_shift(device const T* x [[buffer(0)]], device typename C::acc_t* y [[buffer(1)]],
                     uint i [[thread_position_in_grid]]) {{ y[i] = x[i] * T({attempt + 1}); }}
template [[host_name("at_shift_f")]] [[kernel]] decltype(at_shift<float, 32>) at_shift<float, 32>;
"""
    y = np.zeros(16, np.float32)
    device.compile(src).function("at_shift_f")(16, X, y)
    assert_close(y, X * (attempt + 1))


GENERIC_DIVISION = HEADER + """
template <typename T> struct at_w {
    T v;
    template <typename U CONSTRAINT> at_w operator/(U u) const { return at_w{v / T(u)}; }
};
kernel void at_generic_div(device const float* x [[buffer(0)]], device float* y [[buffer(1)]],
                           uint i [[thread_position_in_grid]]) {
    at_w<float> w{x[i]};
    y[i] = (w / 4).v + (w / 2.0f).v;
}
"""


@pytest.mark.parametrize("constraint", ["", ", metal::enable_if_t<metal::is_arithmetic_v<U>, int> = 0"],
                         ids=["unconstrained", "constrained"])
def test_operator_template_taking_any_divisor(device, request, constraint):
    if not constraint and device.backend in ("cpu", "metal-sim"):  # the simulator runs the CPU's translation
        request.applymarker(pytest.mark.xfail(
            strict=True, reason="the CPU translation: an operator template taking any right operand ties with the "
                                "division guard's operator/(const T&, idiv_tag) (docs/design.md, CPU runtime limits)"))
    y = np.zeros(16, np.float32)
    device.compile(GENERIC_DIVISION.replace("CONSTRAINT", constraint)).function("at_generic_div")(16, X, y)
    assert_close(y, X / 4 + X / 2)


TEMPLATE_CONVERSION = HEADER + """
template <typename T> T at_to(float f) { return static_cast<T>(f); }
kernel void at_template_conversion(device const float* x [[buffer(0)]], device int* y [[buffer(1)]],
                                   uint i [[thread_position_in_grid]]) {
    y[2 * i] = int(x[i]);           // spelled: MSL's conversion (NaN 0, saturated)
    y[2 * i + 1] = at_to<int>(x[i]);  // through a template parameter
}
"""


def test_float_to_int_through_a_template_parameter(device):
    """MLX's `static_cast<U>(in[i])` with U = int: a NaN gives 0 and an out-of-range float
    saturates through a template parameter as through `int(x)` (the CPU gave x86's INT_MIN before
    the token walk read template parameters: test_audit_casts.py)."""
    x = np.array([1e10, -1e10, np.nan, 3.7, -3.7], np.float32)
    y = np.zeros(10, np.int32)
    device.compile(TEMPLATE_CONVERSION).function("at_template_conversion")(5, x, y)
    expected = np.array([2**31 - 1, -2**31, 0, 3, -3], np.int32)
    assert_equal(y.reshape(5, 2)[:, 0], expected)
    assert_equal(y.reshape(5, 2)[:, 1], expected)


DEDUCED_SELF_CALL = HEADER + """
template <typename T> auto at_hsum(T v) {
    if constexpr (metal::is_vector_v<T>) {
        auto s = at_hsum(v[0]);
        for (int k = 1; k < metal::vec_elements<T>::value; ++k) s += at_hsum(v[k]);
        return s;
    } else {
        return v;
    }
}
kernel void at_deduced_self_call(device const float* x [[buffer(0)]], device float* y [[buffer(1)]],
                                 uint i [[thread_position_in_grid]]) {
    y[i] = at_hsum(float4(x[i], 1, 2, 3)) + at_hsum(x[i]);
}
"""


def test_if_constexpr_dispatch_calling_another_instantiation(device):
    """at_hsum<float4> calling at_hsum(v[k]), at_hsum<float>: another instantiation (refused as
    recursion before 2026-12-05; test_audit_frontend.py has the other spellings)."""
    y = np.zeros(16, np.float32)
    device.compile(DEDUCED_SELF_CALL).function("at_deduced_self_call")(16, X, y)
    assert_close(y, 2 * X + 6)
