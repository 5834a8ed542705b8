// Integer literals that are a whole branch of a conditional (`c ? h : 0`): the CUDA target
// wraps them, since `c ? h : 0` with h a CUDA __half is ambiguous (it converts both ways).
#pragma once

#include <cstddef>
#include <set>
#include <vector>

#include "msl/lexer.hpp"

namespace metalcall::msl {

/**
 * The indices of unsuffixed integer literal tokens that are the whole second or third
 * operand of a `?:` whose other operand is not a number. The CUDA translator writes them
 * as `metal::mtl_rt::int_literal{N}` (metal_half_cuda.h), which takes the other
 * operand's type: `c ? h : 0` is half, as MSL's usual arithmetic conversions make it.
 */
std::set<std::size_t> conditional_int_literals(const std::vector<Token>& t);

}  // namespace metalcall::msl
