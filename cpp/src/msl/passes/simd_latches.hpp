// For the CPU target: a SIMD-group rendezvous at the end of every iteration of a loop that may
// call a SIMD-group function (docs/design.md, "SIMD-group functions"). The fibers' rendezvous
// lets the lanes at the earliest line of the source go first; a lane going round a loop again
// would otherwise come back to an earlier line and run ahead of the lanes still in the
// iteration it left (a branch taken by other lanes in each iteration), or several iterations
// ahead where it skips the SIMD-group calls. Waiting at the loop's last line puts it behind them.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "msl/analysis/simd_callers.hpp"
#include "msl/lex/lexer.hpp"

namespace metalcall::msl {

/** Text to write before and after tokens: a latch in each such loop's step or condition. */
struct LatchEdits {
  std::map<std::size_t, std::string> before, after;
};

/** The names whose call is a SIMD-group rendezvous on the CPU (SIMD-group matrices are used by
 * the whole SIMD-group, so their loops need none): for SimdCallers. */
bool is_simd_call_name(const std::string& id);

/**
 * The for/while/do loops whose body names a SIMD- or quad-group function, simdgroup_barrier or
 * a function, lambda or functor of the source that may call one (`callers`, built with
 * is_simd_call_name): `for (a; b; c)` gets
 * `metal::mtl_rt::simd_latch(__builtin_LINE() + d), c`, `while (c)` and `do … while (c)` get
 * `(metal::mtl_rt::simd_latch(__builtin_LINE() + d), c)`, d the lines from there to the loop's
 * last token. A range-based for is left alone.
 */
LatchEdits simd_latch_edits(const std::vector<Token>& t, const SimdCallers& callers);

}  // namespace metalcall::msl
