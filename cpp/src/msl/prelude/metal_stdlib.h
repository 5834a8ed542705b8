// metalcall MSL prelude: the `metal_stdlib` that translated kernels include
// for the CPU (host C++) and CUDA (NVRTC) backends. It includes no system
// header, so it compiles under NVRTC and keeps each kernel's compile fast.
#pragma once
#include "metal_config.h"      // METAL_FUNC, fixed-width ints, traits
#include "metal_half.h"        // half, bfloat
#include "metal_type_traits.h"  // is_same_v ..., is_convertible
#include "metal_conditional.h"  // c ? bfloat : float, as MSL types it
#include "metal_vector.h"      // vec<T, N>, packed_vec<T, N>, swizzles, operators
#include "metal_vector_traits.h"  // is_integral<int4>, is_vector, vec_elements, make_scalar ...
#include "metal_types.h"       // mtl_float4 ... names, layout checks
#include "metal_address_space.h"  // pointers tagged by address space (overloads by address space)
#include "metal_unaligned.h"  // what casts to pointers give: accesses that tolerate any alignment
#include "metal_limits.h"      // as_type, numeric_limits, M_PI_F, FLT_MAX ...
#include "metal_math.h"        // math and common functions, fast::, precise::
#include "metal_double.h"      // double overloads (a CPU/CUDA extension: Metal has no double)
#include "metal_geometric.h"   // dot, cross, length, normalize ...
#include "metal_integer.h"     // clz, popcount, addsat, mulhi, extract_bits ...
#include "metal_builtins_cuda.h"  // __builtin_ctz/clz/popcount for NVRTC, which lacks them (CUDA only)
#include "metal_relational.h"  // all, any, select, isnan ...
#include "metal_matrix.h"      // floatCxR, matrix products, transpose, determinant
#include "metal_array.h"       // metal::array<T, N>
#include "metal_logging.h"     // os_log (messages discarded)
#include "metal_uniform.h"     // uniform<T>, make_uniform
#include "metal_sync.h"        // barriers, SIMD-group functions, atomics (later)
#include "metal_texture.h"     // textures and samplers
#include "metal_stop.h"        // the stop check on every loop (Ctrl-C, timeouts)
#include "metal_assert.h"      // assert(c): no effect, as Apple's by default (last: no header may redefine it)
