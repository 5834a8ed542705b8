"""Constructs that compiled on the CPU and failed on CUDA in the GPU survey of the second corpus
(ik_llama.cpp, SPIRV-Cross, naga, metal-flash-attention: docs/msl-corpus.md), each in a kernel
of our own checked against NumPy on every device:

* program-scope tables of half vectors given as braced lists of half literals
  (ik_llama's `constexpr constant static half2 kvalues_iq2kl_h[32] = {{-63.h, -23.h}, ...}`),
  a shorter list (`{1.h}` zeroes the rest), a table of two dimensions and a constexpr local;
* MSL's scalar `all(bool)` and `any(bool)`, unqualified, in a kernel and in a template
  (SPIRV-Cross's spvSubgroupAllEqual), beside the vector forms;
* a class template specialised for `vec<float, N>` with a `uint N` (SPIRV-Cross's
  SpvHalfTypeSelector behind spvQuantizeToF16): the vector's size deduced into a uint;
* atomics through casts that stay in one address space, which the front end took for casts
  between two: a `threadgroup uint` declared in the kernel (`(threadgroup atomic_uint*)&n`,
  SPIRV-Cross's atomic.comp) and a device object reached through a pointer member of a
  struct in another space (`(device atomic_uint*)&regs.ptr->i`, its buffer-address tests);
* `fence()` of a read_write texture, called through a template (SPIRV-Cross's spvImageFence),
  between a thread's write and its read of the same texel;
* `constant T&` parameters of 16 KiB (SPIRV-Cross's padded arrays, block-name-alias-global):
  two of them overflowed CUDA's 32 KiB of kernel parameters, where a `constant T&` could take
  its value; values over Metal's 4 KiB of inline bytes now come in a buffer, from a host array
  or a Buffer, beside a small one by value;
* the address of a float3 pointer made from an integer, as an integer again
  (`reinterpret_cast<ulong>(q) + i * 12`, SPIRV-Cross's ptr-access-chain-custom-array-stride): the
  pointer is the prelude's unaligned pointer class there, which reinterpret_cast does not take;
* atomics on a texel of a read_write `texturecube` (MSL 4, SPIRV-Cross's image-cube-atomic), with
  a scalar operand as SPIRV-Cross writes it.
"""

from __future__ import annotations

import numpy as np
import pytest

from mcconf import KernelSet

KS = KernelSet([
    """
constexpr constant static half2 cs_pairs[6] = {
    {-63.h, -23.h}, {-63.h, 13.h}, {-40.h, -63.h}, {1.h, 1.h}, {0.5h, -0.25h}, {28.h, 47.h},
};
constant half4 cs_short = {1.5h};
constant half3 cs_grid[2][2] = {{{1.h, 2.h, 3.h}, {4.h, 5.h, 6.h}}, {{7, 8, 9}, {-1.h, -2.h, -3.h}}};
constant packed_half3 cs_packed[2] = {{0.125h, 2.h, -8.h}, {3.h, 5.h, 7.h}};
kernel void cs_half_tables(const device uchar* idx [[buffer(0)]], device float4* out [[buffer(1)]],
                           uint i [[thread_position_in_grid]]) {
    constexpr half2 local = {0.75h, -1.h};
    constant const half2& p = *(constant const half2*)(cs_pairs + idx[i]);
    const half3 g = cs_grid[i & 1][(i >> 1) & 1];
    out[i] = float4(float(p.x), float(p.y), float(cs_short[i & 3]) + float(local[i & 1]),
                    float(g.x) + float(g.y) * float(g.z) + float(half3(cs_packed[i & 1]).y));
}
""",
    """
template <typename F> struct cs_half_of;
template <> struct cs_half_of<float> { using H = half; };
template <uint N> struct cs_half_of<vec<float, N>> { using H = vec<half, N>; };
template <typename F, typename H = typename cs_half_of<F>::H>
F cs_quantize(F f) {
    H h = H(f);
    h = select(copysign(H(0), h), h, isnormal(h) || isinf(h) || isnan(h));
    return F(h);
}
kernel void cs_quantize_to_half(device float* s [[buffer(0)]], device float2* v2 [[buffer(1)]],
                                device float4* v4 [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    s[i] = cs_quantize(s[i]);
    v2[i] = cs_quantize(v2[i]);
    v4[i] = cs_quantize(v4[i]);
}
""",
    """
kernel void cs_threadgroup_scalar_atomics(device uint* out [[buffer(0)]], uint lid [[thread_position_in_threadgroup]],
                                          uint group [[threadgroup_position_in_grid]]) {
    threadgroup uint count;
    if (lid == 0) count = 10u * (group + 1);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    atomic_fetch_add_explicit((threadgroup atomic_uint*)&count, lid, memory_order_relaxed);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (lid == 0) out[group] = count;
}
""",
    """
struct cs_cell { uint i; uint hits; };
struct cs_regs { device cs_cell* ptr; uint pick; };
kernel void cs_member_pointer_atomics(device cs_cell* cells [[buffer(0)]], uint i [[thread_position_in_grid]]) {
    cs_regs r;
    r.ptr = cells;
    r.pick = i & 3;
    atomic_fetch_add_explicit((device atomic_uint*)&r.ptr[r.pick].i, 1u, memory_order_relaxed);
    atomic_fetch_add_explicit((device atomic_uint*)&(r.ptr + r.pick)->hits, i, memory_order_relaxed);
}
""",
    """
template <typename ImageT> void cs_image_fence(ImageT img) { img.fence(); }
kernel void cs_texture_fence(texture2d<float, access::read_write> t [[texture(0)]], device float4* seen [[buffer(0)]],
                             uint2 p [[thread_position_in_grid]]) {
    const float4 v = t.read(p);
    t.write(v * 2.0f + 1.0f, p);
    cs_image_fence(t);
    t.fence();
    seen[p.y * 5 + p.x] = t.read(p);
}
""",
    """
template <typename T, int stride> struct cs_padded { T data; char padding[stride - sizeof(T)]; };
struct cs_pair { int a; int b; };
struct cs_table { cs_padded<cs_pair, 16> data[1024]; };
struct cs_small { int scale; int add; };
kernel void cs_large_constants(constant cs_table& t [[buffer(0)]], constant cs_table& u [[buffer(1)]],
                               constant cs_small& s [[buffer(2)]], device int2* out [[buffer(3)]],
                               uint i [[thread_position_in_grid]]) {
    out[i] = int2(t.data[i].data.a * s.scale + u.data[1023 - i].data.b, t.data[i].data.b + s.add);
}
""",
    """
kernel void cs_pointer_bits(device float* buf [[buffer(0)]], const device float* add [[buffer(1)]],
                            uint i [[thread_position_in_grid]]) {
    device float3* q = reinterpret_cast<device float3*>(reinterpret_cast<ulong>(buf));
    *reinterpret_cast<device packed_float3*>(reinterpret_cast<ulong>(q) + i * 12) =
        float3(*reinterpret_cast<device packed_float3*>(reinterpret_cast<ulong>(q) + i * 12)) + add[i];
}
""",
    """
kernel void cs_cube_atomics(texturecube<uint, access::read_write> c [[texture(0)]], device uint* old [[buffer(0)]],
                            uint3 g [[thread_position_in_grid]]) {
    old[(g.z * 4 + g.y) * 4 + g.x] = c.atomic_fetch_add(g.xy, g.z, 10u).x;
    c.atomic_fetch_max(g.xy, g.z, uint4(g.x * 100u));
}
""",
    """
template <typename T> bool cs_all_equal(T v, T w) { return all(v == w); }
template <typename T> bool cs_any_less(T v, T w) { return any(v < w); }
kernel void cs_scalar_all_any(const device int* x [[buffer(0)]], device int* out [[buffer(1)]],
                              uint i [[thread_position_in_grid]]) {
    const int v = x[i];
    const int2 w = int2(v, v - 2);
    out[i] = int(all(v > 0)) + 2 * int(any(v < -3)) + 4 * int(cs_all_equal(v, 3)) + 8 * int(cs_any_less(v, 1))
           + 16 * int(all(w > 0)) + 32 * int(any(w == 0)) + 64 * int(metal::all(v != 5));
}
""",
])


def test_half_tables(device):
    idx = np.array([0, 1, 2, 3, 4, 5, 5, 0], np.uint8)
    out = np.zeros((8, 4), np.float32)
    KS.get(device, "cs_half_tables")(8, idx, out)
    pairs = np.array([[-63, -23], [-63, 13], [-40, -63], [1, 1], [0.5, -0.25], [28, 47]], np.float32)
    short = np.array([1.5, 0, 0, 0], np.float32)
    grid = np.array([[[1, 2, 3], [4, 5, 6]], [[7, 8, 9], [-1, -2, -3]]], np.float32)
    packed_y = np.array([2, 5], np.float32)
    local = np.array([0.75, -1], np.float32)
    i = np.arange(8)
    g = grid[i & 1, (i >> 1) & 1]
    expected = np.stack([pairs[idx, 0], pairs[idx, 1], short[i & 3] + local[i & 1],
                         g[:, 0] + g[:, 1] * g[:, 2] + packed_y[i & 1]], axis=1)
    np.testing.assert_array_equal(out, expected)


def test_scalar_all_any(device):
    x = np.array([-5, -4, -3, 0, 1, 2, 3, 5, 7, 100], np.int32)
    out = np.zeros_like(x)
    KS.get(device, "cs_scalar_all_any")(x.size, x, out)
    w0, w1 = x, x - 2
    expected = ((x > 0) * 1 + (x < -3) * 2 + (x == 3) * 4 + (x < 1) * 8 + ((w0 > 0) & (w1 > 0)) * 16
                + ((w0 == 0) | (w1 == 0)) * 32 + (x != 5) * 64)
    np.testing.assert_array_equal(out, expected)


def test_quantize_to_half(device):
    values = np.array([1 / 3, -70000.0, 1e-6, -3e-7, 65504.0, 6.2e-5, -0.0, 2.5e-38], np.float32)
    s = values.copy()
    v2 = np.stack([values, -values], axis=1).copy()
    v4 = np.stack([values, -values, values * 7, values / 9], axis=1).astype(np.float32)
    want = [x.copy() for x in (s, v2, v4)]
    KS.get(device, "cs_quantize_to_half")(values.size, s, v2, v4)
    for got, x in zip((s, v2, v4), want):
        with np.errstate(over="ignore"):  # -70000 rounds to -inf, as in MSL
            h = x.astype(np.float16)
        normal = (np.abs(h) >= np.finfo(np.float16).tiny) | np.isinf(h) | np.isnan(h)
        np.testing.assert_array_equal(got, np.where(normal, h, np.copysign(np.float16(0), h)).astype(np.float32))


def test_threadgroup_scalar_atomics(device):
    out = np.zeros(3, np.uint32)
    KS.get(device, "cs_threadgroup_scalar_atomics")(96, out, threadgroup=32)
    np.testing.assert_array_equal(out, 10 * np.arange(1, 4) + sum(range(32)))


def test_member_pointer_atomics(device):
    cells = np.zeros((4, 2), np.uint32)
    KS.get(device, "cs_member_pointer_atomics")(64, cells)
    i = np.arange(64)
    np.testing.assert_array_equal(cells[:, 0], np.bincount(i & 3, minlength=4))
    np.testing.assert_array_equal(cells[:, 1], np.bincount(i & 3, weights=i, minlength=4).astype(np.uint32))


def test_texture_fence(device, rng):
    raw = rng.uniform(-2, 2, (3, 5, 4)).astype(np.float32)
    t = device.texture_from(raw)
    seen = np.zeros((15, 4), np.float32)
    KS.get(device, "cs_texture_fence")((5, 3), seen, textures=[t])
    np.testing.assert_array_equal(np.asarray(t), raw * 2 + 1)
    np.testing.assert_array_equal(seen.reshape(3, 5, 4), raw * 2 + 1)


def test_large_constant_references(device, rng):
    t = rng.integers(-1000, 1000, (1024, 4)).astype(np.int32)
    u = rng.integers(-1000, 1000, (1024, 4)).astype(np.int32)
    small = np.array([3, -7], np.int32)
    out = np.zeros((1024, 2), np.int32)
    k = KS.get(device, "cs_large_constants")
    k(1024, t, device.buffer(u), small, out)
    np.testing.assert_array_equal(out[:, 0], t[:, 0] * 3 + u[::-1, 1])
    np.testing.assert_array_equal(out[:, 1], t[:, 1] - 7)
    k(1024, device.buffer(t), u, small, out)  # the other way round
    np.testing.assert_array_equal(out[:, 0], t[:, 0] * 3 + u[::-1, 1])


def test_pointer_bits(device, rng):
    if device.checked:
        pytest.skip("checked mode's buffer pointers are bounds-checked objects, which reinterpret_cast<ulong> "
                    "does not take (a limit of checked mode before this class: docs/msl-corpus.md, Left)")
    buf = rng.standard_normal((7, 3)).astype(np.float32)
    add = rng.standard_normal(7).astype(np.float32)
    want = buf + add[:, None]
    KS.get(device, "cs_pointer_bits")(7, buf, add)
    np.testing.assert_array_equal(buf, want)


def test_cube_atomics(device, rng):
    start = rng.integers(0, 1000, (6, 4, 4, 1)).astype(np.uint32)
    cube = device.texture((4, 4), "r32uint", type="texturecube")
    cube.level(0)[...] = start
    old = np.zeros(96, np.uint32)
    KS.get(device, "cs_cube_atomics")((4, 4, 6), old, textures=[cube])
    np.testing.assert_array_equal(old.reshape(6, 4, 4), start[..., 0])
    x = np.arange(4, dtype=np.uint32)[None, None, :]
    np.testing.assert_array_equal(np.asarray(cube)[..., 0], np.maximum(start[..., 0] + 10, x * 100))
