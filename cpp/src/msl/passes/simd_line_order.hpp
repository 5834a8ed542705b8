// For the CPU target: the order of the SIMD-group rendezvous of one source line. Lanes meet at a
// site, the line of a SIMD-group function's call and the function, and the lanes at the lowest
// site go first (docs/design.md, "SIMD-group functions"). Two calls on one line in different
// arms of a conditional, `(c ? x : simd_prefix_exclusive_sum(k)) == 1 ? v : simd_sum(1u)`, were
// ordered by the function alone: the lanes at the simd_sum went first and summed without the
// lanes still at the prefix sum, which then met their simd_sum alone (fuzz seed 9206, program
// 108). A line's calls are ordered as they complete, by their closing parentheses.
#pragma once

#include <cstddef>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "msl/lex/lexer.hpp"

namespace metalcall::msl {

/**
 * On each line with two or more such calls, each call of a SIMD- or quad-group function, of
 * `simdgroup_barrier` or `threadgroup_barrier` (`metal::mtl_rt::simd_at(__builtin_LINE(), k)`)
 * and of a function or lambda of the source in `framed` (simd_frames.hpp), or of the operator() of
 * a struct in `framed_functors` through a temporary (`F{s}(x)`, `F(s)(x)`) or an object declared
 * `F name{...}`, `F name = ...` or `F name;` (fuzz seed 31003, program 419: `F0{sh0}(c ? quad_or(k) : 1u, lid)` kept rank 0 and
 * its lanes met before those still at the quad_or; simd_frames.hpp;
 * `metal::mtl_rt::simd_caller(__builtin_LINE(), k)`) gets that last argument, k its rank on the
 * line by its closing parenthesis (at most 14). Calls written over several lines, as template
 * instances or through a member access, and a barrier without its flags keep their default
 * (k = 0). The text goes before the
 * call's `)`: {index of the `)`, text}.
 */
std::map<std::size_t, std::string> simd_line_order_edits(const std::vector<Token>& t, const std::set<std::string>& framed,
                                                         const std::set<std::string>& framed_functors = {});

}  // namespace metalcall::msl
