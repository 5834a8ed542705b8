// For the CPU target: the calls a fiber is in, so that a SIMD-group rendezvous inside a function
// of the source counts where the function is called from (docs/design.md, "SIMD-group
// functions"). Lanes meet by line, the lanes at the earliest line going first; a helper's or a
// lambda's lines are where it is written, often above the kernel, so lanes that had left a loop
// or skipped a branch and then called it went before the lanes still behind them, and lanes of
// two branches calling one helper met as one. With the calls' lines first, the order is the
// order of the code as if every call were written out in place.
#pragma once

#include <cstddef>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "msl/analysis/simd_callers.hpp"
#include "msl/lex/lexer.hpp"

namespace metalcall::msl {

/** Text to write before and after tokens, and the names whose every body takes the caller's
 * line (a call of one may pass it: simd_line_order.hpp). */
struct FrameEdits {
  std::map<std::size_t, std::string> before, after;
  std::set<std::string> framed;
  std::set<std::string> framed_functors;  // structs whose operator() takes the caller's line
};

/**
 * Each function, lambda and operator() of the source that may call a SIMD-group function or a
 * threadgroup barrier (`callers`: a barrier's site is ordered with the SIMD-group ones) (not a
 * kernel, not constexpr, not declared apart from its definition, not named other than in a call
 * (a template argument, `decltype(f<T>)`: its type must stay), without a parameter pack or
 * `(void)`) gets a last parameter `metal::mtl_rt::simd_caller mtl_caller =
 * metal::mtl_rt::simd_caller(__builtin_LINE())` (its caller's line) and, first in its body,
 * `metal::mtl_rt::simd_frame mtl_frame(mtl_caller);`, which holds that line in the fiber's calls
 * while the body runs (prelude/metal_sync.h). `mtl_caller` may be given explicitly:
 * `metal::mtl_rt::simd_caller(line, order)` (simd_line_order.hpp).
 */
FrameEdits simd_frame_edits(const std::vector<Token>& t, const SimdCallers& callers);

}  // namespace metalcall::msl
