// Checked mode's local pointer-to-array variables and casts to pointer-to-array types
// (`thread float (*r)[4] = m;`, `(device float (*)[4])p`): checked pointers to checked rows.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "msl/lex/lexer.hpp"

namespace metalcall::msl {

/** What the translator writes for each token of such declarations and casts (an empty text drops
 *  the token): the type becomes `metal::mtl_checked<metal::mtl_checked_array<float, (4), 1>>`, the
 *  rows' kind the space's (0 threadgroup, 1 thread, 2 device, 3 constant), as for a pointer-to-array
 *  parameter. `refused_at`/`refused` name what checked mode cannot write (a CompileError). */
struct ArrayPointerRewrites {
  std::map<std::size_t, std::string> replace;
  std::size_t refused_at = std::string::npos;
  std::string refused;
};
ArrayPointerRewrites array_pointer_rewrites(const std::vector<Token>& t);

}  // namespace metalcall::msl
