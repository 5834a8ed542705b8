// metalcall MSL prelude: the type names of Apple's <simd/simd.h> as MSL has them (simd_float4,
// vector_float4, matrix_float4x4, simd_packed_float4 ...): headers shared between the host
// and MSL declare their structs with these (MetalPetal, Apple's samples).
#pragma once
#include "metal_types.h"
#include "metal_matrix.h"

#define METAL_SIMD_VECTOR_NAMES(S)                                       \
  typedef mtl_##S##2 simd_##S##2;                                        \
  typedef mtl_##S##3 simd_##S##3;                                        \
  typedef mtl_##S##4 simd_##S##4;                                        \
  typedef mtl_##S##2 vector_##S##2;                                      \
  typedef mtl_##S##3 vector_##S##3;                                      \
  typedef mtl_##S##4 vector_##S##4;                                      \
  typedef mtl_packed_##S##2 simd_packed_##S##2;                          \
  typedef mtl_packed_##S##4 simd_packed_##S##4;
METAL_SIMD_VECTOR_NAMES(char)
METAL_SIMD_VECTOR_NAMES(uchar)
METAL_SIMD_VECTOR_NAMES(short)
METAL_SIMD_VECTOR_NAMES(ushort)
METAL_SIMD_VECTOR_NAMES(int)
METAL_SIMD_VECTOR_NAMES(uint)
METAL_SIMD_VECTOR_NAMES(long)
METAL_SIMD_VECTOR_NAMES(ulong)
METAL_SIMD_VECTOR_NAMES(half)
METAL_SIMD_VECTOR_NAMES(float)
#undef METAL_SIMD_VECTOR_NAMES

#define METAL_SIMD_MATRIX_NAME(S, C, R)            \
  typedef mtl_##S##C##x##R simd_##S##C##x##R;      \
  typedef mtl_##S##C##x##R matrix_##S##C##x##R;
#define METAL_SIMD_MATRIX_NAMES(S)                                                             \
  METAL_SIMD_MATRIX_NAME(S, 2, 2) METAL_SIMD_MATRIX_NAME(S, 2, 3) METAL_SIMD_MATRIX_NAME(S, 2, 4) \
  METAL_SIMD_MATRIX_NAME(S, 3, 2) METAL_SIMD_MATRIX_NAME(S, 3, 3) METAL_SIMD_MATRIX_NAME(S, 3, 4) \
  METAL_SIMD_MATRIX_NAME(S, 4, 2) METAL_SIMD_MATRIX_NAME(S, 4, 3) METAL_SIMD_MATRIX_NAME(S, 4, 4)
METAL_SIMD_MATRIX_NAMES(float)
METAL_SIMD_MATRIX_NAMES(half)
#undef METAL_SIMD_MATRIX_NAMES
#undef METAL_SIMD_MATRIX_NAME
