// metalcall MSL prelude: the `metal_stdlib` that translated kernels include
// for the CPU (host C++) and CUDA (NVRTC) backends. It includes no system
// header, so it compiles under NVRTC and keeps each kernel's compile fast.
//
// Parts: NVRTC parses every header of a kernel's prelude (about 0.2 s for all of them), so the
// CUDA backend defines METALCALL_PRELUDE_PARTS and METALCALL_PART_<NAME> for the parts whose
// names the translated kernel spells, and their dependencies
// (backends/translated/prelude_parts.cpp): a kernel of float scalars compiles only the
// headers marked "Always" (and metal_type_traits.h, which metal_stop.h includes). Without
// METALCALL_PRELUDE_PARTS (the CPU backend) every part is in. The parts keep the order of the
// whole prelude, and none declares an overload of another part's names.
#pragma once
#if !defined(METALCALL_PRELUDE_PARTS)
#define METALCALL_PART_HALF 1
#define METALCALL_PART_VECTOR 1
#define METALCALL_PART_BASE 1
#define METALCALL_PART_MATH 1
#define METALCALL_PART_MATRIX 1
#define METALCALL_PART_SYNC 1
#define METALCALL_PART_ATOMIC 1
#define METALCALL_PART_SIMD 1
#define METALCALL_PART_SGMATRIX 1
#define METALCALL_PART_APPLE 1
#define METALCALL_PART_TEXTURE 1
#endif
// Always: ---------------------------------------------------------------------------------------
#include "metal_config.h"      // METAL_FUNC, fixed-width ints, traits
#include "metal_scalars.h"     // mtl_uint ... (the scalar names)
#include "metal_negation.h"    // unary minus as the CUDA translation writes it
#if METALCALL_PART_HALF  // ----------------------------------------------------------------------
#include "metal_half.h"        // half, bfloat
#include "metal_conversion.h"  // float to int/uint/long/ulong as MSL converts
#endif
#if METALCALL_PART_VECTOR  // (needs HALF) -------------------------------------------------------
#include "metal_type_traits.h"  // is_same_v ..., is_convertible
#include "metal_conditional.h"  // c ? bfloat : float, as MSL types it
#include "metal_vector.h"      // vec<T, N>, packed_vec<T, N>, swizzles, operators
#include "metal_vector_traits.h"  // is_integral<int4>, is_vector, vec_elements, make_scalar ...
#include "metal_types.h"       // mtl_float4 ... names, layout checks
#endif
#if METALCALL_PART_BASE  // (needs VECTOR) -------------------------------------------------------
#include "metal_address_space.h"  // pointers tagged by address space (overloads by address space)
#include "metal_unaligned.h"  // what casts to pointers give: accesses that tolerate any alignment
#include "metal_limits.h"      // as_type, numeric_limits, M_PI_F, FLT_MAX ...
#include "metal_indirect_args.h"  // MTLDrawPrimitivesIndirectArguments ..., tessellation factors
#endif
#if METALCALL_PART_MATH  // (needs BASE) ---------------------------------------------------------
#include "metal_math.h"        // math and common functions, fast::, precise::
#include "metal_double.h"      // double overloads (a CPU/CUDA extension: Metal has no double)
#include "metal_geometric.h"   // dot, cross, length, normalize ...
#include "metal_integer.h"     // clz, popcount, addsat, mulhi, extract_bits ...
#include "metal_builtins_cuda.h"  // __builtin_ctz/clz/popcount for NVRTC, which lacks them (CUDA only)
#include "metal_relational.h"  // all, any, select, isnan ...
#include "metal_pack.h"        // pack_float_to_unorm4x8, unpack_snorm2x16_to_float ...
#endif
#if METALCALL_PART_MATRIX  // (needs MATH) -------------------------------------------------------
#include "metal_matrix.h"      // floatCxR, matrix products, transpose, determinant
#include "metal_simd_types.h"  // <simd/simd.h>'s names: simd_float4, vector_float4, matrix_float4x4 ...
#endif
// Always: ---------------------------------------------------------------------------------------
#include "metal_array.h"       // metal::array<T, N>
#include "metal_logging.h"     // os_log (messages discarded)
#include "metal_uniform.h"     // uniform<T>, make_uniform
#include "metal_poison.h"      // threadgroup memory filled with 0xFF per group (METALCALL_POISON_THREADGROUP)
#if METALCALL_PART_SYNC  // (needs BASE) ---------------------------------------------------------
#include "metal_sync.h"        // barriers; with their parts, atomics and SIMD-group functions
#include "metal_regions.h"     // kernels run as regions between barriers (CPU only)
#endif
#if METALCALL_PART_TEXTURE  // (needs MATH, ATOMIC) ----------------------------------------------
#include "metal_texture.h"     // textures and samplers
#endif
#include "metal_stop.h"        // the stop check on every loop (Ctrl-C, timeouts)
#include "metal_assert.h"      // assert(c): no effect, as Apple's by default (last: no header may redefine it)
