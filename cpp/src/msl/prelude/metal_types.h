// metalcall MSL prelude: MSL's type names as the translator spells them.
// The translator renames every MSL builtin type X to mtl_X (uint -> mtl_uint,
// float4 -> mtl_float4, packed_half3 -> mtl_packed_half3) so that they cannot
// clash with CUDA's own float4/uint3. MSL allows both `float4` and
// `metal::float4`, so each name is declared in metal and made global.
#pragma once
#include "metal_scalars.h"
#include "metal_vector.h"

namespace metal {
#define METAL_VECTOR_NAMES(S, T)                                                              \
  typedef vec<T, 2> mtl_##S##2;                                                               \
  typedef vec<T, 3> mtl_##S##3;                                                               \
  typedef vec<T, 4> mtl_##S##4;                                                               \
  typedef packed_vec<T, 2> mtl_packed_##S##2;                                                 \
  typedef packed_vec<T, 3> mtl_packed_##S##3;                                                 \
  typedef packed_vec<T, 4> mtl_packed_##S##4;
METAL_VECTOR_NAMES(bool, bool)
METAL_VECTOR_NAMES(char, char)  // as a scalar char (signed: -fsigned-char), so that hadd(c, v.x) deduces one T
METAL_VECTOR_NAMES(uchar, unsigned char)
METAL_VECTOR_NAMES(short, short)
METAL_VECTOR_NAMES(ushort, unsigned short)
METAL_VECTOR_NAMES(int, int)
METAL_VECTOR_NAMES(uint, unsigned int)
METAL_VECTOR_NAMES(long, long)
METAL_VECTOR_NAMES(ulong, unsigned long)
METAL_VECTOR_NAMES(half, mtl_half)
METAL_VECTOR_NAMES(float, float)
METAL_VECTOR_NAMES(bfloat, mtl_bfloat)
#undef METAL_VECTOR_NAMES
}  // namespace metal

#define METAL_GLOBAL_VECTOR_NAMES(S) \
  using metal::mtl_##S##2;           \
  using metal::mtl_##S##3;           \
  using metal::mtl_##S##4;           \
  using metal::mtl_packed_##S##2;    \
  using metal::mtl_packed_##S##3;    \
  using metal::mtl_packed_##S##4;
METAL_GLOBAL_VECTOR_NAMES(bool)
METAL_GLOBAL_VECTOR_NAMES(char)
METAL_GLOBAL_VECTOR_NAMES(uchar)
METAL_GLOBAL_VECTOR_NAMES(short)
METAL_GLOBAL_VECTOR_NAMES(ushort)
METAL_GLOBAL_VECTOR_NAMES(int)
METAL_GLOBAL_VECTOR_NAMES(uint)
METAL_GLOBAL_VECTOR_NAMES(long)
METAL_GLOBAL_VECTOR_NAMES(ulong)
METAL_GLOBAL_VECTOR_NAMES(half)
METAL_GLOBAL_VECTOR_NAMES(float)
METAL_GLOBAL_VECTOR_NAMES(bfloat)
#undef METAL_GLOBAL_VECTOR_NAMES

// MSL layout (buffers are shared with the host and with Metal itself).
static_assert(sizeof(mtl_float2) == 8 && alignof(mtl_float2) == 8, "float2 layout");
static_assert(sizeof(mtl_float3) == 16 && alignof(mtl_float3) == 16, "float3 layout");
static_assert(sizeof(mtl_float4) == 16 && alignof(mtl_float4) == 16, "float4 layout");
static_assert(sizeof(mtl_packed_float3) == 12 && alignof(mtl_packed_float3) == 4, "packed_float3 layout");
static_assert(sizeof(mtl_half3) == 8 && alignof(mtl_half3) == 8, "half3 layout");
static_assert(sizeof(mtl_packed_half3) == 6 && alignof(mtl_packed_half3) == 2, "packed_half3 layout");
static_assert(sizeof(mtl_uchar4) == 4 && alignof(mtl_uchar4) == 4, "uchar4 layout");
static_assert(sizeof(mtl_char3) == 4 && alignof(mtl_char3) == 4, "char3 layout");
static_assert(sizeof(mtl_bool2) == 2 && alignof(mtl_bool2) == 2, "bool2 layout");
static_assert(sizeof(mtl_int3) == 16 && alignof(mtl_int3) == 16, "int3 layout");
static_assert(sizeof(mtl_long3) == 32 && alignof(mtl_long3) == 32, "long3 layout");
static_assert(sizeof(mtl_bfloat4) == 8 && alignof(mtl_bfloat4) == 8, "bfloat4 layout");
