// For CUDA: the `if`/`else` branch bodies whose lanes must meet again at the body's end.
// NVIDIA GPUs since Volta do not bring a warp's lanes back together after a branch that holds
// a CTA barrier (docs/design.md, CUDA backend); Apple GPUs do, and MSL code relies on it.
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

#include "msl/lex/lexer.hpp"

namespace metalcall::msl {

/**
 * The braces (`{` index, `}` index) of each branch body that calls threadgroup_barrier
 * where every lane that entered reaches it (at the body's top level, or in `for` loops
 * there) and that no lane can leave early (no return, break, continue or goto inside).
 * The translator writes `const unsigned mtl_lanes_N = metal::mtl_rt::branch_lanes();`
 * after the `{` and `metal::mtl_rt::rejoin(mtl_lanes_N);` before the `}`. Other bodies are
 * left alone: a lane waiting at the rejoin while a warp-mate waits at a barrier would hang.
 */
std::vector<std::pair<std::size_t, std::size_t>> barrier_branch_bodies(const std::vector<Token>& t);

}  // namespace metalcall::msl
