// metalcall MSL prelude: the type names of Apple's <simd/simd.h> as MSL has them (simd_float4,
// vector_float4, matrix_float4x4, simd_packed_float4 ...): headers shared between the host
// and MSL declare their structs with these (MetalPetal, Apple's samples).
#pragma once
#include "metal_types.h"
#include "metal_matrix.h"

// (Each pasted name keeps a literal suffix, as CUDA's prelude parts read the shapes: prelude_parts.cpp.)
#define METAL_SIMD_VECTOR_NAMES(S, T)                    \
  typedef metal::vec<T, 2> simd_##S##2;                  \
  typedef metal::vec<T, 3> simd_##S##3;                  \
  typedef metal::vec<T, 4> simd_##S##4;                  \
  typedef metal::vec<T, 2> vector_##S##2;                \
  typedef metal::vec<T, 3> vector_##S##3;                \
  typedef metal::vec<T, 4> vector_##S##4;                \
  typedef metal::packed_vec<T, 2> simd_packed_##S##2;    \
  typedef metal::packed_vec<T, 4> simd_packed_##S##4;
METAL_SIMD_VECTOR_NAMES(char, char)
METAL_SIMD_VECTOR_NAMES(uchar, unsigned char)
METAL_SIMD_VECTOR_NAMES(short, short)
METAL_SIMD_VECTOR_NAMES(ushort, unsigned short)
METAL_SIMD_VECTOR_NAMES(int, int)
METAL_SIMD_VECTOR_NAMES(uint, unsigned int)
METAL_SIMD_VECTOR_NAMES(long, long)
METAL_SIMD_VECTOR_NAMES(ulong, unsigned long)
METAL_SIMD_VECTOR_NAMES(half, metal::mtl_half)
METAL_SIMD_VECTOR_NAMES(float, float)
#undef METAL_SIMD_VECTOR_NAMES

#define METAL_SIMD_MATRIX_NAMES(S, T)                                                                   \
  typedef metal::matrix<T, 2, 2> simd_##S##2x2; typedef metal::matrix<T, 2, 2> matrix_##S##2x2;         \
  typedef metal::matrix<T, 2, 3> simd_##S##2x3; typedef metal::matrix<T, 2, 3> matrix_##S##2x3;         \
  typedef metal::matrix<T, 2, 4> simd_##S##2x4; typedef metal::matrix<T, 2, 4> matrix_##S##2x4;         \
  typedef metal::matrix<T, 3, 2> simd_##S##3x2; typedef metal::matrix<T, 3, 2> matrix_##S##3x2;         \
  typedef metal::matrix<T, 3, 3> simd_##S##3x3; typedef metal::matrix<T, 3, 3> matrix_##S##3x3;         \
  typedef metal::matrix<T, 3, 4> simd_##S##3x4; typedef metal::matrix<T, 3, 4> matrix_##S##3x4;         \
  typedef metal::matrix<T, 4, 2> simd_##S##4x2; typedef metal::matrix<T, 4, 2> matrix_##S##4x2;         \
  typedef metal::matrix<T, 4, 3> simd_##S##4x3; typedef metal::matrix<T, 4, 3> matrix_##S##4x3;         \
  typedef metal::matrix<T, 4, 4> simd_##S##4x4; typedef metal::matrix<T, 4, 4> matrix_##S##4x4;
METAL_SIMD_MATRIX_NAMES(float, float)
METAL_SIMD_MATRIX_NAMES(half, metal::mtl_half)
#undef METAL_SIMD_MATRIX_NAMES

// Their C++ spellings, `simd::float4`, `simd::float4x4` (and `simd::dot` ...): headers shared with
// C++ hosts declare `struct Uniforms { simd::float4x4 mvp; simd::float3 eye; }` (undeclared
// identifier 'simd' before 2026-12-05). The names are MSL's own, as the host's simd:: types are
// laid out as MSL's.
namespace simd {
using namespace ::metal;
}
