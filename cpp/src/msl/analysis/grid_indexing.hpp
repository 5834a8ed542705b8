// Which buffers a kernel indexes by its thread position on every thread, so that a
// call can check, in unchecked mode, that each such buffer holds the whole grid.
#pragma once

#include <string>
#include <vector>

#include "msl/lex/lexer.hpp"
#include "msl/parse/signature_parser.hpp"

namespace metalcall::msl {

/**
 * The names of `kernel`'s pointer parameters that every thread indexes as `name[gid]`,
 * where `gid` is its scalar [[thread_position_in_grid]]: only in the simplest kernels,
 * whose body is straight-line code (no if, loops, ?:, &&, ||, return, goto, switch) and
 * never changes `gid` or the pointer. Such a kernel touches elements 0..grid.x-1.
 */
std::vector<std::string> grid_indexed_buffers(const std::vector<Token>& t, const ParsedKernel& kernel);

}  // namespace metalcall::msl
