"""Language features: structs as buffer elements (NumPy structured dtypes with MSL
alignment) and as `constant Params&`, templates with [[host_name]] instantiations,
function constants (by name and index, is_function_constant_defined), constexpr,
program-scope constants, namespaces, helper functions, static_assert, enums, control
flow, [[max_total_threads_per_threadgroup(N)]], metal_* headers, defines= macros."""

from __future__ import annotations

import numpy as np
import pytest

import metalcall as mc
from mcconf import (KernelSet, assert_close, assert_equal, compile_once, register_source, run_isolated,
                    written_for_32_lanes)

KS = KernelSet([
    # struct elements with float3 members (16-byte aligned)
    """
struct Particle {
    float3 pos;
    float3 vel;
    float mass;
    uint id;
};
static_assert(sizeof(Particle) == 48, "float3 members are 16 bytes");
kernel void l_particles(device Particle* ps [[buffer(0)]], constant float& dt [[buffer(1)]],
                        uint i [[thread_position_in_grid]]) {
    Particle p = ps[i];
    p.vel.y -= 9.81f * dt;
    p.pos += p.vel * dt;
    p.mass *= 0.5f;
    p.id = p.id * 2 + 1;
    ps[i] = p;
}
""",
    # constant Params& with a float2 member (8-byte aligned) and packed_float3
    """
struct Params {
    float scale;
    int offset;
    float2 center;
    uint count;
    packed_float3 tint;
};
kernel void l_params(constant Params& p [[buffer(0)]], device float4* out [[buffer(1)]],
                     uint i [[thread_position_in_grid]]) {
    float2 d = float2(float(i), float(int(i) + p.offset)) - p.center;
    out[i] = float4(d * p.scale, float(p.count), p.tint.x + p.tint.y + p.tint.z);
}
""",
    # struct with member functions and operators
    """
struct Complex {
    float re;
    float im;
    Complex operator*(Complex o) const { return {re * o.re - im * o.im, re * o.im + im * o.re}; }
    Complex operator+(Complex o) const { return {re + o.re, im + o.im}; }
    float norm2() const { return re * re + im * im; }
};
inline Complex cpow(Complex z, int n) {
    Complex r = {1.0f, 0.0f};
    for (int k = 0; k < n; ++k) r = r * z;
    return r;
}
kernel void l_complex(const device float2* z [[buffer(0)]], device float2* out [[buffer(1)]],
                      device float* norms [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    Complex c = {z[i].x, z[i].y};
    Complex w = cpow(c, 3) + c;
    out[i] = float2(w.re, w.im);
    norms[i] = w.norm2();
}
""",
    # template kernel with host_name instantiations
    """
template <typename T>
kernel void axpy(const device T* x [[buffer(0)]], device T* y [[buffer(1)]],
                 constant T& a [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    y[i] = a * x[i] + y[i];
}
template [[host_name("axpy_float")]] kernel void axpy<float>(const device float*, device float*, constant float&, uint);
template [[host_name("axpy_int")]] kernel void axpy<int>(const device int*, device int*, constant int&, uint);
template [[host_name("axpy_half")]] kernel void axpy<half>(const device half*, device half*, constant half&, uint);
""",
    # templated helpers, non-type template parameters, specialization
    """
template <typename T, int N>
T dot_n(thread const T* a, thread const T* b) {
    T s = T(0);
    for (int k = 0; k < N; ++k) s += a[k] * b[k];
    return s;
}
template <typename T> struct Limits { static T lo() { return T(0); } };
template <> struct Limits<int> { static int lo() { return -100; } };
kernel void l_template_helpers(const device float* a [[buffer(0)]], const device int* b [[buffer(1)]],
                               device float* of [[buffer(2)]], device int* oi [[buffer(3)]],
                               uint i [[thread_position_in_grid]]) {
    float fa[4];
    int ia[3];
    for (int k = 0; k < 4; ++k) fa[k] = a[4 * i + k];
    for (int k = 0; k < 3; ++k) ia[k] = b[3 * i + k];
    of[i] = dot_n<float, 4>(fa, fa);
    oi[i] = max(dot_n<int, 3>(ia, ia), Limits<int>::lo()) + int(Limits<float>::lo());
}
""",
    # templated kernel with a non-type template parameter
    """
template <uint K>
kernel void sum_k(const device float* in [[buffer(0)]], device float* out [[buffer(1)]],
                  uint i [[thread_position_in_grid]]) {
    float s = 0.0f;
    for (uint k = 0; k < K; ++k) s += in[i * K + k];
    out[i] = s;
}
template [[host_name("sum_2")]] kernel void sum_k<2>(const device float*, device float*, uint);
template [[host_name("sum_8")]] kernel void sum_k<8>(const device float*, device float*, uint);
""",
    # namespaces, using-declarations, nested namespaces, overloads
    """
namespace util {
constexpr float kScale = 3.0f;
inline float sq(float x) { return x * x; }
inline int sq(int x) { return x * x; }
namespace inner {
inline float cube(float x) { return x * sq(x); }
}
}  // namespace util
using util::sq;
kernel void l_namespaces(const device float* a [[buffer(0)]], device float* out [[buffer(1)]],
                         device int* oi [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    out[i] = sq(a[i]) * util::kScale + util::inner::cube(a[i]);
    oi[i] = sq(int(i));
}
""",
    # program-scope constants, constexpr functions, static_assert, constant arrays
    """
constant float kWeights[5] = {0.0625f, 0.25f, 0.375f, 0.25f, 0.0625f};
constexpr constant int kTaps = 5;
constant float3 kLuma = float3(0.2126f, 0.7152f, 0.0722f);
constexpr int fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
static_assert(fib(10) == 55, "constexpr evaluation");
static_assert(sizeof(float4) == 16 && alignof(float3) == 16, "vector layout");
kernel void l_constants(const device float* in [[buffer(0)]], device float* out [[buffer(1)]],
                        device float* luma [[buffer(2)]], constant uint& n [[buffer(3)]],
                        uint i [[thread_position_in_grid]]) {
    float s = 0.0f;
    for (int k = 0; k < kTaps; ++k) {
        int j = clamp(int(i) + k - kTaps / 2, 0, int(n) - 1);
        s += kWeights[k] * in[j];
    }
    constexpr int f = fib(7);
    out[i] = s + float(f);
    luma[i] = dot(kLuma, float3(in[i], 1.0f, 2.0f));
}
""",
    # enum class, switch, while, do-while, break/continue, thread arrays through helpers
    """
enum class Op : int { Add = 0, Mul = 1, Max = 2, Collatz = 3 };
inline void fill(thread int* arr, int n, int v) { for (int k = 0; k < n; ++k) arr[k] = v + k; }
inline int total(thread const int* arr, int n) { int s = 0; for (int k = 0; k < n; ++k) s += arr[k]; return s; }
kernel void l_control(const device int* a [[buffer(0)]], const device int* ops [[buffer(1)]],
                      device int* out [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    int x = a[i];
    int r = 0;
    switch (Op(ops[i] & 3)) {
        case Op::Add: r = x + 10; break;
        case Op::Mul: r = x * 3; break;
        case Op::Max: r = max(x, 50); break;
        case Op::Collatz: {
            int steps = 0;
            int v = max(x, 1);
            while (v != 1) {
                v = (v % 2 == 0) ? v / 2 : 3 * v + 1;
                ++steps;
            }
            r = steps;
            break;
        }
        default: r = -1;
    }
    int arr[6];
    fill(arr, 6, x % 7);
    int k = 0;
    do {
        if (arr[k] % 2 == 0) { ++k; continue; }
        r += arr[k];
        ++k;
    } while (k < 6);
    out[i] = r + total(arr, 6) * 0;
}
""",
    # device pointer arithmetic, reinterpreting buffers, typedef / using aliases
    """
typedef float4 color_t;
using index_t = uint;
inline void store_scaled(device float* dst, index_t k, float v) { *(dst + k) = 2.0f * v; }
kernel void l_pointers(const device float* raw [[buffer(0)]], device float* out [[buffer(1)]],
                       index_t i [[thread_position_in_grid]]) {
    const device color_t* px = reinterpret_cast<const device color_t*>(raw);
    color_t c = px[i];
    const device float* row = raw + 4 * i;
    store_scaled(out, 2 * i, c.x + row[3]);
    device float* o = &out[2 * i + 1];
    *o = c.y * c.z;
}
""",
    # constant address-space pointer arrays (lights) and structs in constant memory
    """
struct Light { float3 pos; float intensity; };
kernel void l_lights(const device float3* pts [[buffer(0)]], constant Light* lights [[buffer(1)]],
                     constant uint& nlights [[buffer(2)]], device float* out [[buffer(3)]],
                     uint i [[thread_position_in_grid]]) {
    float3 p = pts[i];
    float s = 0.0f;
    for (uint k = 0; k < nlights; ++k) {
        float3 d = lights[k].pos - p;
        s += lights[k].intensity / (1.0f + dot(d, d));
    }
    out[i] = s;
}
""",
    # [[max_total_threads_per_threadgroup(N)]]
    """
[[max_total_threads_per_threadgroup(64)]]
kernel void l_max_threads(device uint* out [[buffer(0)]], uint i [[thread_position_in_grid]],
                          uint lid [[thread_position_in_threadgroup]]) {
    out[i] = lid;
}
""",
    # preprocessor: object- and function-like macros, #if, and __METAL_VERSION__
    """
#define SQR(x) ((x) * (x))
#define LERP(a, b, t) ((a) + ((b) - (a)) * (t))
#define BLOCK 4
kernel void l_macros(const device float* a [[buffer(0)]], device float* out [[buffer(1)]],
                     uint i [[thread_position_in_grid]]) {
#if BLOCK == 4 && defined(SQR)
    out[i] = SQR(a[i] + 1.0f) + LERP(0.0f, 10.0f, 0.5f);
#else
    out[i] = -1.0f;
#endif
}
""",
    # the Metal compiler predefines __METAL_VERSION__ (e.g. 310 for MSL 3.1)
    """
kernel void l_metal_version(device uint* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {
#if defined(__METAL_VERSION__) && __METAL_VERSION__ >= 200
    out[i] = 1;
#else
    out[i] = 0;
#endif
}
""",
    # overloads that differ only in address space (as MSL allows)
    """
inline float load_scaled(const device float* p, uint i) { return p[i] * 2.0f; }
inline float load_scaled(const thread float* p, uint i) { return p[i] * 3.0f; }
inline float load_scaled(const threadgroup float* p, uint i) { return p[i] * 5.0f; }
kernel void l_addrspace_overload(const device float* in [[buffer(0)]], device float* out [[buffer(1)]],
                                 uint i [[thread_position_in_grid]], uint lid [[thread_position_in_threadgroup]]) {
    threadgroup float tg[64];
    float local[1] = {in[i]};
    tg[lid] = in[i];
    threadgroup_barrier(mem_flags::mem_threadgroup);
    out[i] = load_scaled(in, i) + load_scaled(local, 0) + load_scaled(tg, lid);
}
""",
    # <cstdint>-style names, size_t, #pragma unroll, local 2-D arrays with initializers
    """
kernel void l_stdint_unroll(const device uint32_t* in [[buffer(0)]], device uint64_t* out [[buffer(1)]],
                            device int16_t* o16 [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    const int m[2][3] = {{1, 2, 3}, {4, 5, 6}};
    uint64_t acc = 0;
    #pragma unroll
    for (int r = 0; r < 2; ++r) {
        #pragma unroll(3)
        for (int c = 0; c < 3; ++c) acc += uint64_t(in[i]) * uint64_t(m[r][c]);
    }
    size_t idx = size_t(i);
    out[idx] = acc << 8;
    o16[idx] = int16_t(int32_t(in[i] & 0xffffu) - 32768);
}
""",
    # constant float4x4& / constant float4& arguments
    """
kernel void l_matref(const device float4* pts [[buffer(0)]], constant float4x4& mvp [[buffer(1)]],
                     constant float4& tint [[buffer(2)]], device float4* out [[buffer(3)]],
                     uint i [[thread_position_in_grid]]) {
    out[i] = mvp * pts[i] + tint * pts[i].w;
}
""",
    # metal::array (metal_array header, part of metal_stdlib)
    """
kernel void l_metal_array(const device float4* pts [[buffer(0)]], device float* out [[buffer(1)]],
                          uint i [[thread_position_in_grid]]) {
    metal::array<float, 4> w = {0.1f, 0.2f, 0.3f, 0.4f};
    float s = 0.0f;
    for (uint k = 0; k < w.size(); ++k) s += w[k] * pts[i][k];
    out[i] = s;
}
""",
    # nested structs with half, bool, arrays and ushort members (MSL alignment rules)
    """
struct Inner { half2 h; bool flag; };
struct Outer { float4 a; Inner in; float b[3]; ushort s; };
static_assert(sizeof(Inner) == 8 && alignof(Inner) == 4, "Inner layout: half2 is 4-byte aligned");
static_assert(sizeof(Outer) == 48 && alignof(Outer) == 16, "Outer layout");
kernel void l_nested_struct(device Outer* items [[buffer(0)]], device float* out [[buffer(1)]],
                            uint i [[thread_position_in_grid]]) {
    Outer o = items[i];
    float s = o.a.x + o.a.w + float(o.in.h.x) + float(o.in.h.y) + (o.in.flag ? 100.0f : 0.0f);
    for (int k = 0; k < 3; ++k) s += o.b[k] * float(k + 1);
    out[i] = s + float(o.s);
    items[i].in.flag = !o.in.flag;
    items[i].s = ushort(o.s + 1);
    items[i].b[2] = s;
}
""",
    # buffer indices declared out of order and with gaps: arguments bind by index order
    """
kernel void l_buffer_order(device float* out [[buffer(5)]], const device float* b [[buffer(2)]],
                           const device float* a [[buffer(0)]], constant float& s [[buffer(3)]],
                           uint i [[thread_position_in_grid]]) {
    out[i] = a[i] * s + b[i];
}
""",
    # struct with constructors, default member initializers and const methods; a
    # program-scope constant struct; local arrays of vectors
    """
struct Ray {
    float3 o;
    float3 d;
    float tmax = 100.0f;
    Ray(float3 origin, float3 dir) : o(origin), d(normalize(dir)) {}
    float3 at(float t) const { return o + d * min(t, tmax); }
};
struct Tint { float3 rgb; float gain; };
constant Tint kTint = {float3(0.5f, 1.0f, 2.0f), 3.0f};
kernel void l_ctor_struct(const device float4* dirs [[buffer(0)]], device float4* out [[buffer(1)]],
                          uint i [[thread_position_in_grid]]) {
    const float3 corners[4] = {float3(0.0f), float3(1.0f, 0.0f, 0.0f), float3(0.0f, 1.0f, 0.0f), float3(0.0f, 0.0f, 1.0f)};
    Ray r(corners[i % 4], dirs[i].xyz);
    out[i] = float4(r.at(dirs[i].w) * kTint.rgb, kTint.gain + r.tmax);
}
"""
])

# Function constants (one library, specialised per call of lib.function)
FC = KernelSet([
    """
constant bool use_square [[function_constant(0)]];
constant float fc_scale [[function_constant(1)]];
constant int fc_mode [[function_constant(2)]];
constant bool has_mode = is_function_constant_defined(fc_mode);
constant uint fc_taps [[function_constant(3)]];
constant bool has_taps = is_function_constant_defined(fc_taps);

kernel void l_fc(const device float* in [[buffer(0)]], device float* out [[buffer(1)]],
                 uint i [[thread_position_in_grid]]) {
    float x = in[i];
    float y = use_square ? x * x : x;
    y *= fc_scale;
    if (has_mode) y += float(fc_mode) * 1000.0f;
    if (has_taps) {
        for (uint k = 1; k < fc_taps; ++k) y += float(k);
    }
    out[i] = y;
}
""",
    # the "optional function constant with a default" idiom
    """
constant int fc_block [[function_constant(5)]];
constant int block_size = is_function_constant_defined(fc_block) ? fc_block : 8;
constant bool fc_relu [[function_constant(6)]];
constant bool do_relu = is_function_constant_defined(fc_relu) && fc_relu;
kernel void l_fc_defaults(const device float* in [[buffer(0)]], device float* out [[buffer(1)]],
                          uint i [[thread_position_in_grid]]) {
    float s = 0.0f;
    for (int k = 0; k < block_size; ++k) s += in[i * block_size + k];
    out[i] = do_relu ? max(s, 0.0f) : s;
}
"""
])


# a source that spells metal:: everywhere instead of `using namespace metal;`
NOUSING = KernelSet([
    """
kernel void l_no_using(const device metal::float4* in [[buffer(0)]], device float* out [[buffer(1)]],
                       device metal::atomic_uint* cnt [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    metal::float4 v = in[i];
    out[i] = metal::dot(v, v) + metal::clamp(v.x, 0.0f, 1.0f) + metal::fast::sqrt(metal::abs(v.y))
             + metal::precise::sin(v.z);
    metal::atomic_fetch_add_explicit(cnt, 1u, metal::memory_order_relaxed);
}
""",
], header="#include <metal_stdlib>\n")


# Spellings from real code bases: CUDA ports with macro barriers, Apple-sample enums as
# buffer indices, MLX-style [[kernel]] templates instantiated through macros, kernels
# generated by macros, disabled code under #if 0.
PP = KernelSet([
    """
#define __syncthreads() threadgroup_barrier(mem_flags::mem_threadgroup)
#define BLOCK 128
kernel void l_cuda_port(const device float* in [[buffer(0)]], device float* out [[buffer(1)]],
                        uint tid [[thread_position_in_threadgroup]], uint bid [[threadgroup_position_in_grid]]) {
    threadgroup float sdata[BLOCK];
    const uint i = bid * BLOCK + tid;
    sdata[tid] = in[i];
    __syncthreads();
    for (uint s = BLOCK / 2; s > 0; s >>= 1) {
        if (tid < s) sdata[tid] += sdata[tid + s];
        __syncthreads();
    }
    if (tid == 0) out[bid] = sdata[0];
}
""",
    """
typedef enum AAPLBufferIndex {
    AAPLBufferIndexInput = 0,
    AAPLBufferIndexOutput = 1,
    AAPLBufferIndexScale = 2,
} AAPLBufferIndex;
kernel void l_enum_indices(const device float* in [[buffer(AAPLBufferIndexInput)]],
                           device float* out [[buffer(AAPLBufferIndexOutput)]],
                           constant float& scale [[buffer(AAPLBufferIndexScale)]],
                           uint i [[thread_position_in_grid]]) {
    out[i] = in[i] * scale;
}
""",
    (["l_macro_indices"], """
#define IDX_IN 0
#define IDX_OUT 1
kernel /* a comment */ void l_macro_indices(const device float* in [[ buffer( IDX_IN ) ]],
                                            device float* out [[ buffer(IDX_OUT) ]],   // spaced attributes
                                            uint i [[ thread_position_in_grid ]]) {
    out[i] = in[i] + 1.0f;
}
"""),
    (["l_attr_kernel"], """
[[kernel]] void l_attr_kernel(device const float* src [[buffer(0)]], device float* dst [[buffer(1)]],
                              uint index [[thread_position_in_grid]]) {
    dst[index] = src[index] * 3.0f;
}
"""),
    (["l_mlx_copy_float32", "l_mlx_copy_int32"], """
template <typename T>
[[kernel]] void mlx_copy(device const T* src [[buffer(0)]], device T* dst [[buffer(1)]],
                         uint index [[thread_position_in_grid]]) {
    dst[index] = src[index] * T(2);
}
template [[host_name("l_mlx_copy_float32")]] [[kernel]] decltype(mlx_copy<float>) mlx_copy<float>;
template [[host_name("l_mlx_copy_int32")]] [[kernel]] decltype(mlx_copy<int>) mlx_copy<int>;
"""),
    (["l_mlx_macro_float32", "l_mlx_macro_int32"], """
template <typename T>
[[kernel]] void mlx_scale(device const T* src [[buffer(0)]], device T* dst [[buffer(1)]],
                          uint index [[thread_position_in_grid]]) {
    dst[index] = src[index] + T(5);
}
#define instantiate_scale(tname, type)                                   \
  template [[host_name("l_mlx_macro_" #tname)]] [[kernel]] decltype(mlx_scale<type>) \
      mlx_scale<type>;
instantiate_scale(float32, float)
instantiate_scale(int32, int)
"""),
    (["l_macro_square", "l_macro_negate"], """
#define UNARY_KERNEL(NAME, EXPR)                                                           \
    kernel void NAME(const device float* in [[buffer(0)]], device float* out [[buffer(1)]], \
                     uint i [[thread_position_in_grid]]) {                                  \
        const float x = in[i];                                                              \
        out[i] = (EXPR);                                                                    \
    }
UNARY_KERNEL(l_macro_square, x * x)
UNARY_KERNEL(l_macro_negate, -x)
"""),
    (["l_if0"], """
#if 0
// the old texture version, kept for reference
kernel void l_if0_old(texture2d<float, access::read> in [[texture(0)]],
                      texture2d<float, access::write> out [[texture(1)]], uint2 gid [[thread_position_in_grid]]) {
    out.write(in.read(gid) * 2.0f, gid);
}
#endif
kernel void l_if0(const device float* in [[buffer(0)]], device float* out [[buffer(1)]],
                  uint i [[thread_position_in_grid]]) {
    out[i] = in[i] * 2.0f;
}
"""),
])

# one kernel name, two signatures chosen by a host-side define
VARIANT_SRC = register_source("""
#include <metal_stdlib>
using namespace metal;
#if VARIANT == 1
kernel void l_variant(device float* a [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    a[i] += 1.0f;
}
#else
kernel void l_variant(const device float* a [[buffer(0)]], device float* b [[buffer(1)]],
                      uint i [[thread_position_in_grid]]) {
    b[i] = a[i] * 3.0f;
}
#endif
""", kernel_names=["l_variant"])

# Separate-header includes (no metal_stdlib)
HEADERS_SRC = register_source("""
#include <metal_math>
#include <metal_common>
#include <metal_geometric>
#include <metal_integer>
#include <metal_relational>
#include <metal_atomic>
#include <metal_simdgroup>
using namespace metal;
kernel void l_headers(const device float* a [[buffer(0)]], device float* out [[buffer(1)]],
                      device atomic_uint* cnt [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    float x = a[i];
    float s = simd_sum(x);
    out[2 * i + 0] = sin(x) + clamp(x, 0.0f, 1.0f) + length(float2(x, 1.0f));
    out[2 * i + 1] = s + float(popcount(i)) + (isnan(x) ? 100.0f : 0.0f);
    atomic_fetch_add_explicit(cnt, 1u, memory_order_relaxed);
}
""")

# defines= macros: the same source specialised by the host
DEFINES_SRC = register_source("""
#include <metal_stdlib>
using namespace metal;
#ifndef RADIUS
#error "RADIUS must be defined"
#endif
kernel void l_defines(const device float* in [[buffer(0)]], device float* out [[buffer(1)]],
                      constant uint& n [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    float s = 0.0f;
    for (int k = -RADIUS; k <= RADIUS; ++k) {
        int j = clamp(int(i) + k, 0, int(n) - 1);
        s += in[j];
    }
#ifdef USE_MEAN
    s /= float(2 * RADIUS + 1);
#endif
    out[i] = s * SCALE;
}
""")

N = 256


def test_struct_buffer(device, rng):
    dt = np.dtype({"names": ["pos", "vel", "mass", "id"],
                   "formats": [("<f4", 4), ("<f4", 4), "<f4", "<u4"],
                   "offsets": [0, 16, 32, 36], "itemsize": 48})
    ps = np.zeros(N, dt)
    ps["pos"][:, :3] = rng.standard_normal((N, 3))
    ps["vel"][:, :3] = rng.standard_normal((N, 3))
    ps["mass"] = rng.uniform(1, 2, N)
    ps["id"] = np.arange(N)
    ref = ps.copy()
    KS.get(device, "l_particles")(N, ps, 0.1)
    vel = ref["vel"][:, :3].copy()
    vel[:, 1] -= np.float32(9.81) * np.float32(0.1)
    assert_close(ps["vel"][:, :3], vel, rtol=1e-6, atol=1e-6)
    assert_close(ps["pos"][:, :3], ref["pos"][:, :3] + vel * np.float32(0.1), rtol=1e-5, atol=1e-6)
    assert_equal(ps["mass"], ref["mass"] * np.float32(0.5))
    assert_equal(ps["id"], ref["id"] * 2 + 1)


PARAMS_DT = np.dtype({"names": ["scale", "offset", "center", "count", "tint"],
                      "formats": ["<f4", "<i4", ("<f4", 2), "<u4", ("<f4", 3)],
                      "offsets": [0, 4, 8, 16, 20], "itemsize": 32})


def test_constant_struct_param(device):
    p = np.zeros((), PARAMS_DT)
    p["scale"] = 0.5
    p["offset"] = -7
    p["center"] = [3.0, 4.0]
    p["count"] = 42
    p["tint"] = [0.25, 0.5, 1.0]
    out = np.zeros((N, 4), np.float32)
    KS.get(device, "l_params")(N, p[()], out)
    i = np.arange(N, dtype=np.float32)
    exp = np.stack([(i - 3) * 0.5, (i - 7 - 4) * 0.5, np.full(N, 42.0), np.full(N, 1.75)], 1)
    assert_close(out, exp)


def test_struct_methods(device, rng):
    z = rng.uniform(-1, 1, (N, 2)).astype(np.float32)
    out = np.zeros((N, 2), np.float32)
    norms = np.zeros(N, np.float32)
    KS.get(device, "l_complex")(N, z, out, norms)
    c = z[:, 0].astype(np.complex128) + 1j * z[:, 1]
    w = c ** 3 + c
    assert_close(out, np.stack([w.real, w.imag], 1), rtol=1e-5, atol=1e-6)
    assert_close(norms, np.abs(w) ** 2, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("suffix,dtype,a", [("float", np.float32, 1.5), ("int", np.int32, 3), ("half", np.float16, 0.5)])
def test_template_kernel(device, rng, suffix, dtype, a):
    if dtype == np.int32:
        x = rng.integers(-1000, 1000, N).astype(dtype)
        y = rng.integers(-1000, 1000, N).astype(dtype)
    else:
        x = rng.uniform(-2, 2, N).astype(dtype)
        y = rng.uniform(-2, 2, N).astype(dtype)
    y0 = y.copy()
    KS.get(device, f"axpy_{suffix}")(N, x, y, dtype(a))
    exp = dtype(a) * x + y0
    if dtype == np.int32:
        assert_equal(y, exp)
    else:
        assert_close(y, exp, rtol=2e-3 if dtype == np.float16 else 1e-6, atol=2e-3 if dtype == np.float16 else 1e-6)


def test_template_helpers(device, rng):
    a = rng.standard_normal(4 * N).astype(np.float32)
    b = rng.integers(-20, 20, 3 * N).astype(np.int32)
    of = np.zeros(N, np.float32)
    oi = np.zeros(N, np.int32)
    KS.get(device, "l_template_helpers")(N, a, b, of, oi)
    assert_close(of, (a.reshape(N, 4).astype(np.float64) ** 2).sum(1), rtol=1e-5)
    assert_equal(oi, np.maximum((b.reshape(N, 3) ** 2).sum(1), -100).astype(np.int32))


@pytest.mark.parametrize("k", [2, 8])
def test_template_nontype_parameter(device, rng, k):
    x = rng.standard_normal(N * k).astype(np.float32)
    out = np.zeros(N, np.float32)
    KS.get(device, f"sum_{k}")(N, x, out)
    assert_close(out, x.reshape(N, k).astype(np.float64).sum(1), rtol=1e-5, atol=1e-5)


def test_namespaces(device, rng):
    a = rng.standard_normal(N).astype(np.float32)
    out = np.zeros(N, np.float32)
    oi = np.zeros(N, np.int32)
    KS.get(device, "l_namespaces")(N, a, out, oi)
    A = a.astype(np.float64)
    assert_close(out, A * A * 3 + A ** 3, rtol=1e-5, atol=1e-6)
    assert_equal(oi, (np.arange(N) ** 2).astype(np.int32))


def test_program_scope_constants(device, rng):
    x = rng.standard_normal(N).astype(np.float32)
    out = np.zeros(N, np.float32)
    luma = np.zeros(N, np.float32)
    KS.get(device, "l_constants")(N, x, out, luma, N)
    w = np.array([0.0625, 0.25, 0.375, 0.25, 0.0625])
    idx = np.clip(np.arange(N)[:, None] + np.arange(5) - 2, 0, N - 1)
    assert_close(out, (x[idx] * w).sum(1) + 13, rtol=1e-5, atol=1e-5)
    assert_close(luma, 0.2126 * x + 0.7152 + 0.0722 * 2, rtol=1e-5, atol=1e-6)


def collatz(v):
    v = max(v, 1)
    s = 0
    while v != 1:
        v = v // 2 if v % 2 == 0 else 3 * v + 1
        s += 1
    return s


def test_control_flow(device, rng):
    a = rng.integers(-50, 200, N).astype(np.int32)
    ops = rng.integers(0, 4, N).astype(np.int32)
    out = np.zeros(N, np.int32)
    KS.get(device, "l_control")(N, a, ops, out)
    exp = []
    for x, op in zip(a.tolist(), ops.tolist()):
        r = [x + 10, x * 3, max(x, 50), collatz(x)][op]
        base = int(np.fmod(x, 7))
        r += sum(v for v in range(base, base + 6) if v % 2 != 0)
        exp.append(r)
    assert_equal(out, np.array(exp, np.int32))


def test_pointers_and_aliases(device, rng):
    raw = rng.standard_normal(4 * N).astype(np.float32)
    out = np.zeros(2 * N, np.float32)
    KS.get(device, "l_pointers")(N, raw, out)
    c = raw.reshape(N, 4)
    exp = np.stack([2 * (c[:, 0] + c[:, 3]), c[:, 1] * c[:, 2]], 1).ravel()
    assert_close(out, exp, rtol=1e-6, atol=1e-6)


def test_constant_struct_array(device, rng):
    pts = np.zeros((N, 4), np.float32)
    pts[:, :3] = rng.standard_normal((N, 3))
    light_dt = np.dtype({"names": ["pos", "intensity"], "formats": [("<f4", 3), "<f4"],
                         "offsets": [0, 16], "itemsize": 32})
    lights = np.zeros(3, light_dt)
    lights["pos"] = rng.standard_normal((3, 3))
    lights["intensity"] = [1.0, 2.0, 0.5]
    out = np.zeros(N, np.float32)
    KS.get(device, "l_lights")(N, pts, lights, 3, out)
    d = lights["pos"][None, :, :].astype(np.float64) - pts[:, None, :3]
    exp = (lights["intensity"][None, :] / (1 + (d * d).sum(2))).sum(1)
    assert_close(out, exp, rtol=1e-5, atol=1e-6)


def test_max_total_threads(device):
    k = KS.get(device, "l_max_threads")
    assert k.max_total_threads_per_threadgroup <= 64
    out = np.zeros(256, np.uint32)
    k(256, out, threadgroup=64)
    assert_equal(out, np.tile(np.arange(64, dtype=np.uint32), 4))
    with pytest.raises(mc.ArgumentError):
        k(256, out, threadgroup=128)


def test_macros(device, rng):
    a = rng.standard_normal(N).astype(np.float32)
    out = np.zeros(N, np.float32)
    KS.get(device, "l_macros")(N, a, out)
    assert_close(out, (a + 1) ** 2 + 5, rtol=1e-5, atol=1e-6)


def test_metal_version_macro(device):
    ok = np.zeros(8, np.uint32)
    KS.get(device, "l_metal_version")(8, ok)
    assert_equal(ok, np.ones(8, np.uint32))


@pytest.mark.parametrize("constants", [
    {"use_square": True, "fc_scale": 2.0},
    {0: False, 1: 0.5, 2: 3},
    {"use_square": True, 1: -1.0, "fc_mode": 7, "fc_taps": 4},
], ids=["by-name", "by-index", "mixed-all-defined"])
def test_function_constants(device, rng, constants):
    x = rng.uniform(-2, 2, N).astype(np.float32)
    out = np.zeros(N, np.float32)
    FC.get(device, "l_fc", constants=constants)(N, x, out)
    get = lambda name, idx, default=None: constants.get(name, constants.get(idx, default))  # noqa: E731
    y = x.astype(np.float64) ** 2 if get("use_square", 0) else x.astype(np.float64)
    y = y * get("fc_scale", 1)
    mode = get("fc_mode", 2)
    if mode is not None:
        y = y + mode * 1000.0
    taps = get("fc_taps", 3)
    if taps is not None:
        y = y + sum(range(1, taps))
    assert_close(out, y, rtol=1e-5, atol=1e-4)


def test_metal_headers(device, rng):
    lib = compile_once(device, HEADERS_SRC)
    n = 64
    a = rng.uniform(-1, 2, n).astype(np.float32)
    out = np.zeros(2 * n, np.float32)
    cnt = np.zeros(1, np.uint32)
    written_for_32_lanes(lib.l_headers)(n, a, out, cnt, threadgroup=64)
    A = a.astype(np.float64)
    s = np.repeat(A.reshape(-1, 32).sum(1), 32)
    pc = np.array([bin(i).count("1") for i in range(n)])
    exp = np.stack([np.sin(A) + np.clip(A, 0, 1) + np.sqrt(A * A + 1), s + pc], 1).ravel()
    assert_close(out, exp, rtol=1e-5, atol=1e-5)
    assert cnt[0] == n


@pytest.mark.parametrize("defines,radius,mean,scale", [
    ({"RADIUS": 1, "SCALE": "1.0f"}, 1, False, 1.0),
    ({"RADIUS": 3, "SCALE": "0.5f", "USE_MEAN": 1}, 3, True, 0.5),
])
def test_defines(device, rng, defines, radius, mean, scale):
    lib = compile_once(device, DEFINES_SRC, defines=defines)
    x = rng.standard_normal(N).astype(np.float32)
    out = np.zeros(N, np.float32)
    lib.l_defines(N, x, out, N)
    idx = np.clip(np.arange(N)[:, None] + np.arange(-radius, radius + 1), 0, N - 1)
    s = x[idx].astype(np.float64).sum(1)
    if mean:
        s /= 2 * radius + 1
    assert_close(out, s * scale, rtol=1e-5, atol=1e-5)


def test_defines_missing_macro_is_a_compile_error(device):
    with pytest.raises(mc.CompileError):
        compile_once(device, DEFINES_SRC, defines={"SCALE": "1.0f"})


def test_address_space_overloads(device, rng):
    n = 128
    x = rng.standard_normal(n).astype(np.float32)
    out = np.zeros(n, np.float32)
    KS.get(device, "l_addrspace_overload")(n, x, out, threadgroup=64)
    assert_close(out, x * 10, rtol=1e-6, atol=1e-6)


def test_stdint_names_and_unroll(device, rng):
    x = rng.integers(0, 2**32, N, dtype=np.uint64).astype(np.uint32)
    out = np.zeros(N, np.uint64)
    o16 = np.zeros(N, np.int16)
    KS.get(device, "l_stdint_unroll")(N, x, out, o16)
    assert_equal(out, (x.astype(np.uint64) * np.uint64(21)) << np.uint64(8))
    assert_equal(o16, ((x & 0xFFFF).astype(np.int64) - 32768).astype(np.int16))


def test_constant_matrix_and_vector_references(device, rng):
    pts = rng.standard_normal((N, 4)).astype(np.float32)
    M = rng.standard_normal((4, 4)).astype(np.float32)  # row-major math matrix
    tint = np.array([1.0, 0.5, 0.25, 0.0], np.float32)
    out = np.zeros((N, 4), np.float32)
    KS.get(device, "l_matref")(N, pts, np.ascontiguousarray(M.T), tint, out)  # columns in memory
    exp = pts.astype(np.float64) @ M.T.astype(np.float64) + tint * pts[:, 3:].astype(np.float64)
    assert_close(out, exp, rtol=1e-5, atol=1e-5)


def test_metal_array(device, rng):
    pts = rng.standard_normal((N, 4)).astype(np.float32)
    out = np.zeros(N, np.float32)
    KS.get(device, "l_metal_array")(N, pts, out)
    assert_close(out, pts.astype(np.float64) @ np.array([0.1, 0.2, 0.3, 0.4]), rtol=1e-5, atol=1e-6)


def test_fully_qualified_names(device, rng):
    x = rng.standard_normal((N, 4)).astype(np.float32)
    out = np.zeros(N, np.float32)
    cnt = np.zeros(1, np.uint32)
    NOUSING.get(device, "l_no_using")(N, x, out, cnt)
    X = x.astype(np.float64)
    exp = (X * X).sum(1) + np.clip(X[:, 0], 0, 1) + np.sqrt(np.abs(X[:, 1])) + np.sin(X[:, 2])
    assert_close(out, exp, rtol=1e-4, atol=1e-4)
    assert cnt[0] == N


def test_nested_struct_layout(device, rng):
    inner = np.dtype({"names": ["h", "flag"], "formats": [("<f2", 2), "?"], "offsets": [0, 4], "itemsize": 8})
    outer = np.dtype({"names": ["a", "in", "b", "s"], "formats": [("<f4", 4), inner, ("<f4", 3), "<u2"],
                      "offsets": [0, 16, 24, 36], "itemsize": 48})
    items = np.zeros(N, outer)
    items["a"] = rng.standard_normal((N, 4))
    items["in"]["h"] = rng.uniform(-1, 1, (N, 2))
    items["in"]["flag"] = rng.random(N) < 0.5
    items["b"] = rng.standard_normal((N, 3))
    items["s"] = rng.integers(0, 60000, N)
    ref = items.copy()
    out = np.zeros(N, np.float32)
    KS.get(device, "l_nested_struct")(N, items, out)
    h = ref["in"]["h"].astype(np.float64)
    s = (ref["a"][:, 0] + ref["a"][:, 3] + h[:, 0] + h[:, 1] + 100.0 * ref["in"]["flag"]
         + ref["b"].astype(np.float64) @ np.array([1.0, 2.0, 3.0]))
    assert_close(out, s + ref["s"], rtol=1e-5, atol=1e-4)
    assert_equal(items["in"]["flag"], ~ref["in"]["flag"])
    assert_equal(items["s"], (ref["s"] + 1).astype(np.uint16))
    assert_close(items["b"][:, 2], s, rtol=1e-5, atol=1e-4)
    assert_equal(items["a"], ref["a"])


def test_buffer_index_order(device, rng):
    a = rng.standard_normal(N).astype(np.float32)
    b = rng.standard_normal(N).astype(np.float32)
    out = np.zeros(N, np.float32)
    KS.get(device, "l_buffer_order")(N, a, b, 2.0, out)  # buffer(0), buffer(2), buffer(3), buffer(5)
    assert_close(out, a * 2 + b, rtol=1e-6, atol=1e-6)


def test_struct_constructors(device, rng):
    d = rng.standard_normal((N, 4)).astype(np.float32)
    d[:, 3] = rng.uniform(0, 200, N)
    out = np.zeros((N, 4), np.float32)
    KS.get(device, "l_ctor_struct")(N, d, out)
    corners = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]], np.float64)[np.arange(N) % 4]
    D = d[:, :3].astype(np.float64)
    D /= np.linalg.norm(D, axis=1, keepdims=True)
    p = corners + D * np.minimum(d[:, 3:].astype(np.float64), 100)
    exp = np.concatenate([p * [0.5, 1.0, 2.0], np.full((N, 1), 103.0)], 1)
    assert_close(out, exp, rtol=1e-5, atol=1e-4)



def test_cuda_style_barrier_macro(device, rng):
    n = 1024
    x = rng.standard_normal(n).astype(np.float32)
    out = np.zeros(n // 128, np.float32)
    # in a child process: a barrier the CPU backend does not see can crash the process
    src = PP.source([PP.index_of("l_cuda_port")])
    _, out = run_isolated(device, src, "l_cuda_port", n, x, out, threadgroup=128)
    assert_close(out, x.reshape(-1, 128).astype(np.float64).sum(1), rtol=1e-5, atol=1e-4)


def test_enum_buffer_indices(device, rng):
    x = rng.standard_normal(N).astype(np.float32)
    out = np.zeros(N, np.float32)
    PP.get(device, "l_enum_indices")(N, x, out, 2.5)
    assert_close(out, x * np.float32(2.5))


def test_macro_buffer_indices_and_spacing(device, rng):
    x = rng.standard_normal(N).astype(np.float32)
    out = np.zeros(N, np.float32)
    PP.get(device, "l_macro_indices")(N, x, out)
    assert_close(out, x + 1)


def test_kernel_attribute_spelling(device, rng):
    x = rng.standard_normal(N).astype(np.float32)
    out = np.zeros(N, np.float32)
    PP.get(device, "l_attr_kernel")(N, x, out)
    assert_close(out, x * 3)


@pytest.mark.parametrize("name,dtype", [("l_mlx_copy_float32", np.float32), ("l_mlx_copy_int32", np.int32)])
def test_mlx_style_decltype_instantiation(device, rng, name, dtype):
    x = (rng.standard_normal(N) * 100).astype(dtype)
    out = np.zeros(N, dtype)
    PP.get(device, name)(N, x, out)
    assert_equal(out, (x * 2).astype(dtype))


@pytest.mark.parametrize("name,dtype", [("l_mlx_macro_float32", np.float32), ("l_mlx_macro_int32", np.int32)])
def test_mlx_style_macro_instantiation(device, rng, name, dtype):
    x = (rng.standard_normal(N) * 100).astype(dtype)
    out = np.zeros(N, dtype)
    PP.get(device, name)(N, x, out)
    assert_equal(out, (x + 5).astype(dtype))


def test_kernels_defined_by_a_macro(device, rng):
    x = rng.standard_normal(N).astype(np.float32)
    out = np.zeros(N, np.float32)
    PP.get(device, "l_macro_square")(N, x, out)
    assert_close(out, x * x)
    PP.get(device, "l_macro_negate")(N, x, out)
    assert_equal(out, -x)


def test_code_under_if_0_is_ignored(device, rng):
    x = rng.standard_normal(N).astype(np.float32)
    out = np.zeros(N, np.float32)
    PP.get(device, "l_if0")(N, x, out)
    assert_equal(out, x * 2)


@pytest.mark.parametrize("variant", [1, 2])
def test_kernel_signature_chosen_by_define(device, rng, variant):
    lib = compile_once(device, VARIANT_SRC, defines={"VARIANT": variant})
    x = rng.standard_normal(N).astype(np.float32)
    if variant == 1:
        a = x.copy()
        lib.l_variant(N, a)
        assert_equal(a, x + 1)
    else:
        b = np.zeros(N, np.float32)
        lib.l_variant(N, x, b)
        assert_close(b, x * 3)



@pytest.mark.parametrize("constants,block,relu", [(None, 8, False), ({"fc_block": 4}, 4, False),
                                                  ({5: 2, "fc_relu": True}, 2, True)])
def test_function_constant_defaults(device, rng, constants, block, relu):
    n = 64
    x = rng.standard_normal(n * block).astype(np.float32)
    out = np.zeros(n, np.float32)
    k = FC.get(device, "l_fc_defaults", constants=constants) if constants else FC.get(device, "l_fc_defaults")
    k(n, x, out)
    s = x.reshape(n, block).astype(np.float64).sum(1)
    assert_close(out, np.maximum(s, 0) if relu else s, rtol=1e-5, atol=1e-5)


# Constructors' member initializer lists: the last entry's `(x) {` is followed by the body but
# defines no function (read as a function `im`, the members `float re, im;` were refused as
# function pointers before). One entry after `:`, entries after `,`, braces, a qualified and a
# templated base, noexcept, a constructor after `public:`, and a member named like a source function.
INIT_LIST_SRC = """#include <metal_stdlib>
using namespace metal;
inline float scale(float v) { return v * 10.0f; }
struct Complex { float re, im; Complex(float r, float m) : re(r), im(m) {} };
struct One { float v; One(float x) : v(x) {} };
namespace geo { struct Base { float b; Base(float x) : b(x) {} }; }
template <typename T> struct TBase { T t; TBase(T x) : t{x} {} };
struct Derived : geo::Base, TBase<int> {
    float offset, scale;
    Derived(float x, int y) noexcept : geo::Base(x), TBase<int>(y), offset{x + 1.0f}, scale(::scale(x)) {}
};
class Access { public: Access(float x) : w(x * 2.0f) {} float get() const { return w; } private: float w; };
kernel void l_init_lists(const device float* x [[buffer(0)]], device float* out [[buffer(1)]],
                         uint i [[thread_position_in_grid]]) {
    Complex c(x[i], 1.0f);
    One o(x[i] * 3.0f);
    Derived d(x[i], int(i));
    Access a(x[i]);
    device float* r = out + 8 * i;
    r[0] = c.re; r[1] = c.im; r[2] = o.v; r[3] = d.b; r[4] = float(d.t); r[5] = d.offset; r[6] = d.scale;
    r[7] = a.get();
}
"""


def test_member_initializer_lists(device, rng):
    x = rng.standard_normal(N).astype(np.float32)
    out = np.zeros((N, 8), np.float32)
    compile_once(device, INIT_LIST_SRC).l_init_lists(N, x, out)
    exp = np.stack([x, np.ones(N), x * np.float32(3), x, np.arange(N), x + np.float32(1), x * np.float32(10),
                    x * np.float32(2)], 1).astype(np.float32)
    assert_equal(out, exp)


# A function called through its parenthesised name, `(f)(x)` (the idiom that keeps a function-like
# macro of the same name from expanding): a call, not a function pointer (refused as one before, by
# the front end and by the translation verifier's AST check).
PAREN_CALL_SRC = """#include <metal_stdlib>
using namespace metal;
namespace ops { inline float cube(float v) { return v * v * v; } }
inline float twice(float v) { return 2.0f * v; }
#define twice(v) (v)
kernel void l_paren_calls(const device float* x [[buffer(0)]], device float* out [[buffer(1)]],
                          uint i [[thread_position_in_grid]]) {
    decltype((twice)(1.0f)) a = (twice)(x[i]);
    out[i] = a + (ops::cube)(x[i]) + twice(x[i]) + float(sizeof((twice)(x[i])));
}
"""


def test_parenthesised_function_calls(device, rng):
    x = rng.standard_normal(N).astype(np.float32)
    out = np.zeros(N, np.float32)
    compile_once(device, PAREN_CALL_SRC).l_paren_calls(N, x, out)
    assert_close(out, 2 * x + x * x * x + x + 4, rtol=1e-6, atol=1e-6)
