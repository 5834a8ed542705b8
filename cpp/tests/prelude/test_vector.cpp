// Vectors as translated kernels use them: mtl_ names, swizzles rewritten to
// mtl_swizzle / mtl_swizzle_ref, MSL constructors and operators.
#include "metal_stdlib.h"
#include "check.h"

#include <type_traits>

using namespace metal;

// What the generated entry point does with builtin arguments (unsigned ints).
static void entry_point_constructions(unsigned int x, unsigned int y, unsigned int z) {
  mtl_uint a = mtl_uint(x);
  mtl_ushort b = mtl_ushort(x);
  int c = int(x);
  mtl_uint2 d = mtl_uint2(x, y);
  mtl_uint3 e = mtl_uint3(x, y, z);
  mtl_ushort2 f = mtl_ushort2(x, y);
  mtl_ushort3 g = mtl_ushort3(x, y, z);
  mtl_int2 h = mtl_int2(x, y);
  mtl_int3 i = mtl_int3(x, y, z);
  mtl_uint3 j = mtl_uint3(x);
  CHECK(a == 7 && b == 7 && c == 7);
  CHECK(d.x == 7 && d.y == 8);
  CHECK(e.x == 7 && e.y == 8 && e.z == 9);
  CHECK(f.x == 7 && f.y == 8 && g.z == 9);
  CHECK(h.y == 8 && i.z == 9 && j.y == 7);
}

static void constructors() {
  mtl_float4 a = mtl_float4(1.0f);
  CHECK(a.x == 1 && a.y == 1 && a.z == 1 && a.w == 1);
  mtl_float4 b = mtl_float4(1.0f, 2.0f, 3.0f, 4.0f);
  CHECK(b.x == 1 && b.y == 2 && b.z == 3 && b.w == 4);
  CHECK(b.r == 1 && b.g == 2 && b.b == 3 && b.a == 4);
  mtl_float4 c = mtl_float4(b.template mtl_swizzle<0, 1>(), 5, 6);  // float4(v.xy, 5, 6)
  CHECK(c.x == 1 && c.y == 2 && c.z == 5 && c.w == 6);
  mtl_float2 v2 = mtl_float2(7, 8);
  mtl_float3 d = mtl_float3(v2, 0);
  CHECK(d.x == 7 && d.y == 8 && d.z == 0);
  mtl_float4 e = mtl_float4(1, v2, 2.5);
  CHECK(e.x == 1 && e.y == 7 && e.z == 8 && e.w == 2.5f);
  mtl_float4 f = mtl_float4(v2, v2);
  CHECK(f.z == 7 && f.w == 8);
  mtl_float4 g = mtl_float4(d, 9.0f);
  CHECK(g.w == 9);
  mtl_float4 zero = mtl_float4();
  CHECK(zero.x == 0 && zero.w == 0);
  mtl_float4 braced = {1, 2, 3, 4};
  CHECK(braced.w == 4);
  mtl_float2 pts[2] = {{1, 2}, {3, 4}};
  CHECK(pts[1].y == 4);
  mtl_float4 broadcast = 3.0f;  // MSL allows scalar -> vector
  CHECK(broadcast.y == 3);

  // Conversions between component types are explicit.
  mtl_int3 i3 = mtl_int3(1, -2, 3);
  mtl_float3 f3 = mtl_float3(i3);
  CHECK(f3.y == -2.0f);
  mtl_int4 back = mtl_int4(mtl_float4(1.7f, -1.7f, 2.5f, 0.0f));
  CHECK(back.x == 1 && back.y == -1 && back.z == 2);
  mtl_uchar4 u8 = mtl_uchar4(mtl_uint4(255, 256, 1, 0));
  CHECK(u8.x == 255 && u8.y == 0 && u8.z == 1);
  mtl_half4 h4 = mtl_half4(b);
  CHECK(float(h4.w) == 4.0f);
  mtl_float4 from_half = mtl_float4(h4);
  CHECK(from_half.z == 3.0f);
  static_assert(!std::is_convertible<mtl_int3, mtl_float3>::value, "int3 -> float3 must be explicit");
  static_assert(std::is_convertible<mtl_packed_float3, mtl_float3>::value, "packed -> vector is implicit");
  static_assert(std::is_convertible<mtl_float3, mtl_packed_float3>::value, "vector -> packed is implicit");
  static_assert(std::is_trivially_copyable<mtl_float4>::value, "vectors are trivially copyable");
  static_assert(std::is_trivial<mtl_float3>::value, "vectors have a trivial default constructor");

  // Packed types.
  mtl_packed_float3 p = mtl_packed_float3(1, 2, 3);
  mtl_float3 up = p;
  mtl_packed_float3 p2 = up * 2.0f;
  CHECK(up.z == 3 && p2.z == 6);
  mtl_float3 sum = p + up;  // packed + aligned
  CHECK(sum.y == 4);
  CHECK(p[2] == 3 && p.y == 2);

  // constexpr construction (needed for CUDA __constant__ data).
  constexpr mtl_float4 k = mtl_float4(1, 2, 3, 4);
  constexpr mtl_float4 k2 = mtl_float4(mtl_float2(1, 2), mtl_float2(3, 4));
  constexpr mtl_int2 k3 = mtl_int2(5);
  static_assert(k.w == 4 && k2.z == 3 && k3.y == 5, "constexpr vectors");
}

static void indexing_and_members() {
  mtl_int4 v = mtl_int4(10, 20, 30, 40);
  for (int i = 0; i < 4; ++i) CHECK(v[i] == 10 * (i + 1));
  v[2] = 7;
  CHECK(v.z == 7 && v.b == 7);
  v.w = 1;
  CHECK(v[3] == 1);
  v.r = 5;
  CHECK(v.x == 5);
  mtl_uint idx = 1;
  CHECK(v[idx] == 20);
  const mtl_int4 cv = v;
  CHECK(cv[0] == 5);
}

static void swizzles() {
  mtl_float4 v = mtl_float4(1, 2, 3, 4);
  mtl_float3 zyx = v.template mtl_swizzle<2, 1, 0>();  // v.zyx
  CHECK(zyx.x == 3 && zyx.y == 2 && zyx.z == 1);
  mtl_float4 xxxx = v.template mtl_swizzle<0, 0, 0, 0>();  // v.xxxx (read may repeat)
  CHECK(xxxx.w == 1);
  mtl_float2 ba = v.template mtl_swizzle<2, 3>();  // v.ba
  CHECK(ba.x == 3 && ba.y == 4);
  mtl_float2 chained = v.template mtl_swizzle<3, 2, 1>().template mtl_swizzle<0, 2>();  // v.wzy.xz
  CHECK(chained.x == 4 && chained.y == 2);
  float single = v.template mtl_swizzle<1, 3>().y;  // v.yw.y
  CHECK(single == 4);

  mtl_float4 w = v;
  w.template mtl_swizzle_ref<0, 1>() = mtl_float2(9, 8);  // w.xy = float2(9, 8)
  CHECK(w.x == 9 && w.y == 8 && w.z == 3 && w.w == 4);
  w.template mtl_swizzle_ref<3, 0>() = w.template mtl_swizzle<0, 3>();  // w.wx = w.xw (swap)
  CHECK(w.x == 4 && w.w == 9);
  w.template mtl_swizzle_ref<1, 2>() += mtl_float2(1, 1);  // w.yz += float2(1)
  CHECK(w.y == 9 && w.z == 4);
  w.template mtl_swizzle_ref<1, 2>() *= 2.0f;  // w.yz *= 2.0f
  CHECK(w.y == 18 && w.z == 8);
  w.template mtl_swizzle_ref<0, 1, 2>() = 0.5f;  // w.rgb = 0.5 (broadcast)
  CHECK(w.x == 0.5f && w.y == 0.5f && w.z == 0.5f && w.w == 9);
  mtl_packed_float3 pk = mtl_packed_float3(1, 2, 3);
  w.template mtl_swizzle_ref<2, 1, 0>() = pk;  // w.zyx = packed value
  CHECK(w.x == 3 && w.z == 1);
  mtl_float2 chain = w.template mtl_swizzle_ref<0, 1>() = mtl_float2(6, 7);  // a = w.xy = ...
  CHECK(chain.x == 6 && chain.y == 7 && w.y == 7);

  mtl_int4 iv = mtl_int4(1, 2, 3, 4);
  iv.template mtl_swizzle_ref<0, 3>() <<= 2;
  CHECK(iv.x == 4 && iv.w == 16);
  iv.template mtl_swizzle_ref<1, 2>() -= mtl_int2(2, 3);
  CHECK(iv.y == 0 && iv.z == 0);

  // Swizzle of an array element and of an rvalue.
  mtl_float4 arr[2] = {mtl_float4(1), mtl_float4(2)};
  arr[1].template mtl_swizzle_ref<2, 3>() = mtl_float2(5, 6);
  CHECK(arr[1].z == 5 && arr[1].w == 6);
  // Swizzle template arguments hold commas: parenthesize inside macro arguments.
  CHECK(((arr[0] + arr[1]).template mtl_swizzle<3, 2>().x == 7));
}

// Comma-free spelling (mtl_swz<1 digits>), usable inside macro arguments.
static void comma_free_swizzles() {
  mtl_float4 v = mtl_float4(1, 2, 3, 4);
  CHECK(v.template mtl_swz<1210>().x == 3 && v.template mtl_swz<113>().y == 4);
  CHECK(same_vec(v.template mtl_swz<10123>(), v, 4));
  CHECK(same_vec(v.template mtl_swz<1300>(), mtl_float3(4, 1, 1), 3));
  v.template mtl_swz_ref<130>() = mtl_float2(7, 8);  // v.wx = ...
  CHECK(v.w == 7 && v.x == 8);
  v.template mtl_swz_ref<112>() += 1.0f;  // v.yz += 1
  CHECK(v.y == 3 && v.z == 4);
}

static void operators() {
  mtl_float4 a = mtl_float4(1, 2, 3, 4), b = mtl_float4(4, 3, 2, 1);
  CHECK(same_vec(a + b, mtl_float4(5), 4));
  CHECK(same_vec(a - b, mtl_float4(-3, -1, 1, 3), 4));
  CHECK(same_vec(a * b, mtl_float4(4, 6, 6, 4), 4));
  CHECK(same_vec(a / mtl_float4(2), mtl_float4(0.5f, 1, 1.5f, 2), 4));
  CHECK(same_vec(2.0f * a, mtl_float4(2, 4, 6, 8), 4));
  CHECK(same_vec(a * 2.0f, mtl_float4(2, 4, 6, 8), 4));
  CHECK(same_vec(a * 2, mtl_float4(2, 4, 6, 8), 4));  // int literal with float vector
  CHECK(same_vec(1 - a, mtl_float4(0, -1, -2, -3), 4));
  CHECK(same_vec(a / 2, mtl_float4(0.5f, 1, 1.5f, 2), 4));
  CHECK(same_vec(-a, mtl_float4(-1, -2, -3, -4), 4));
  CHECK(same_vec(+a, a, 4));
  mtl_float4 c = a;
  c += b;
  c -= 1.0f;
  c *= 2;
  c /= mtl_float4(2);
  CHECK(same_vec(c, mtl_float4(4), 4));
  mtl_float4 d = a;
  CHECK(same_vec(d++, a, 4) && same_vec(d, a + 1, 4));
  CHECK(same_vec(--d, a, 4));

  mtl_int4 i = mtl_int4(7, -7, 12, 5), j = mtl_int4(2, 2, 5, 3);
  CHECK(same_vec(i % j, mtl_int4(1, -1, 2, 2), 4));
  CHECK(same_vec(i / j, mtl_int4(3, -3, 2, 1), 4));
  CHECK(same_vec(i & 3, mtl_int4(3, 1, 0, 1), 4));
  CHECK(same_vec(i | j, mtl_int4(7, -5, 13, 7), 4));
  CHECK(same_vec(i ^ j, mtl_int4(5, -5, 9, 6), 4));
  CHECK(same_vec(~mtl_int2(0, -1), mtl_int2(-1, 0), 2));
  CHECK(same_vec(mtl_uint2(1, 2) << 3, mtl_uint2(8, 16), 2));
  CHECK(same_vec(mtl_uint2(64, 8) >> mtl_uint2(3, 1), mtl_uint2(8, 4), 2));
  mtl_uint4 u = mtl_uint4(1);
  u <<= 4;
  u |= 1;
  u %= 10;
  CHECK(same_vec(u, mtl_uint4(7), 4));

  // Integer vectors keep their type (ushort4 + ushort4 is a ushort4, wrapping).
  mtl_ushort4 s = mtl_ushort4(65535, 1, 2, 3);
  auto s2 = s + mtl_ushort4(1);
  static_assert(std::is_same<decltype(s2), mtl_ushort4>::value, "ushort4 + ushort4 stays ushort4");
  CHECK(s2.x == 0 && s2.y == 2);
  auto s3 = s * 2;
  static_assert(std::is_same<decltype(s3), mtl_ushort4>::value, "ushort4 * int stays ushort4");
  mtl_uchar4 c4 = mtl_uchar4(250, 1, 2, 3);
  c4 += 10;
  CHECK(c4.x == 4 && c4.y == 11);
  mtl_char4 sc = mtl_char4(-1, -128, 127, 0);
  CHECK(sc.x < 0 && sc.y == -128);  // MSL char is signed everywhere

  // Comparisons give bool vectors; && || ! work on them.
  mtl_bool4 lt = a < b;
  static_assert(std::is_same<decltype(lt), mtl_bool4>::value, "comparison gives boolN");
  CHECK(lt.x && lt.y && !lt.z && !lt.w);
  CHECK(same_vec(a == mtl_float4(1, 0, 3, 0), mtl_bool4(true, false, true, false), 4));
  CHECK(same_vec(a != 2.0f, mtl_bool4(true, false, true, true), 4));
  CHECK(same_vec(a >= 3, mtl_bool4(false, false, true, true), 4));
  CHECK(same_vec(2 < a, mtl_bool4(false, false, true, true), 4));
  CHECK(same_vec(!lt, mtl_bool4(false, false, true, true), 4));
  CHECK(same_vec(lt && mtl_bool4(true, false, true, false), mtl_bool4(true, false, false, false), 4));
  CHECK(same_vec(lt || mtl_bool4(false, false, true, false), mtl_bool4(true, true, true, false), 4));
  CHECK(same_vec(not(lt), !lt, 4));

  // half vectors.
  mtl_half4 h = mtl_half4(mtl_half(1.0f), mtl_half(2.0f), mtl_half(0.5f), mtl_half(4.0f));
  mtl_half4 h2 = h * mtl_half(2.0f) + mtl_half(1.0f);
  CHECK(float(h2.x) == 3 && float(h2.z) == 2);
  mtl_half4 h3 = h * 2.0f;
  CHECK(float(h3.w) == 8);
}

static void bfloat_vectors() {
  mtl_bfloat b = 1.5f;
  CHECK(float(b) == 1.5f);
  mtl_bfloat4 v = mtl_bfloat4(1.0f, 2.0f, 3.0f, 4.0f);
  mtl_bfloat4 w = v * 2.0f + v;
  CHECK(float(w.w) == 12.0f);
  mtl_float4 f = mtl_float4(w);
  CHECK(f.x == 3.0f);
}

int main() {
  entry_point_constructions(7, 8, 9);
  constructors();
  indexing_and_members();
  swizzles();
  comma_free_swizzles();
  operators();
  bfloat_vectors();
  return finish("test_vector");
}
