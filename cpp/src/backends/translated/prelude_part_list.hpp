// The parts of the MSL prelude (msl/prelude/metal_stdlib.h): their names, headers and the parts
// they need. Read by the build's scan of the headers (prelude_parts_scan.hpp) and by the
// selection of a kernel's parts (prelude_parts.cpp).
#pragma once

#include <vector>

namespace metalcall::translated {

// The parts of metal_stdlib.h, in its order: their headers and the parts they need.
// Every other header is in every prelude (kAlways).
struct Part {
  const char* name;
  std::vector<const char*> headers;
  std::vector<const char*> needs;
};

inline const std::vector<Part>& parts_table() {
  static const auto& parts = *new std::vector<Part>{
      {"HALF", {"metal_half.h", "metal_half_cuda.h", "metal_conversion.h"}, {}},
      {"VECTOR",
       {"metal_conditional.h", "metal_division.h", "metal_vector.h", "metal_vector_traits.h",
        "metal_types.h"},
       {"HALF"}},
      {"BASE", {"metal_address_space.h", "metal_unaligned.h", "metal_limits.h", "metal_indirect_args.h"}, {"VECTOR"}},
      {"MATH",
       {"metal_math.h", "metal_double.h", "metal_geometric.h", "metal_integer.h", "metal_builtins_cuda.h",
        "metal_relational.h", "metal_pack.h"},
       {"BASE"}},
      {"MATRIX", {"metal_matrix.h", "metal_simd_types.h"}, {"MATH"}},
      {"SYNC", {"metal_sync.h", "metal_regions.h"}, {"BASE"}},
      {"ATOMIC", {"metal_atomic.h"}, {"SYNC"}},
      {"SIMD", {"metal_simdgroup.h"}, {"SYNC", "MATH"}},
      {"SGMATRIX",
       {"metal_simdgroup_matrix.h", "metal_simdgroup_matrix_ops.h", "metal_simdgroup_fill.h",
        "metal_simdgroup_matrix_cuda.h", "metal_simdgroup_mma_cuda.h", "metal_simdgroup_nest_cuda.h"},
       {"SIMD"}},
      {"APPLE", {"metal_apple_internals.h"}, {"SIMD"}},
      {"TEXTURE",
       {"metal_texture.h", "metal_texture_sampling.h", "metal_texture_types.h", "metal_texture_formats.h", "metal_texture_atomic.h",
        "metal_texture_layered.h", "metal_texture_ms.h"},
       {"MATH", "ATOMIC"}},
  };
  return parts;
}

}  // namespace metalcall::translated
