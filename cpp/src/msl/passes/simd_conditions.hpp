// For CUDA: conditions whose lanes must run together again before the code they choose calls a
// SIMD-group function. A condition that itself branches (`(p ? q : r) ? simd_or(x) : y`,
// `p || q`) can leave an NVIDIA warp's lanes in several groups that enter the chosen code apart,
// each a SIMD-group call of its own (fuzz seed 30001 #45 on an H100: a simd_or in a conditional
// whose condition was a conditional saw part of its lanes); Apple GPUs run the lanes of a branch
// together, as MSL says.
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

#include "msl/analysis/simd_callers.hpp"
#include "msl/lex/lexer.hpp"

namespace metalcall::msl {

/**
 * The conditions [first, last] to evaluate with the lanes that start them and rejoin those lanes
 * after: a conditional's condition where a branch may call a SIMD-group function; the left
 * operand of `&&` or `||` where the right one may; an if, while, do or for condition that holds
 * a conditional, `&&` or `||` where the statement's body may. The translator writes
 * `metal::mtl_rt::joined_t{metal::mtl_rt::branch_lanes(), (` before and `)}.value` after
 * (metal_sync.h). Inside function bodies only; a condition whose extent is unclear (a lambda
 * in it, a directive) is left as written.
 */
std::vector<std::pair<std::size_t, std::size_t>> simd_joined_conditions(const std::vector<Token>& t,
                                                                        const SimdCallers& callers);

}  // namespace metalcall::msl
