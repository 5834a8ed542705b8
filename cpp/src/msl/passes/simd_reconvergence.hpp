// For CUDA: the points where a warp's lanes must run together again before a SIMD-group
// function. Apple GPUs reconverge a SIMD-group at the end of structured control flow; NVIDIA
// GPUs since Volta need not, and the prelude's SIMD-group functions act on the lanes running
// together at that moment (__activemask()). After a loop whose trip count differs between lanes
// (`for (i = lane; i < n; i += 32)`), a simd_sum or simd_prefix_inclusive_sum saw part of the
// warp on the H200 (fuzz seed 1001 program 63; metalcall.numpy's eigh, docs/numpy.md).
#pragma once

#include <cstddef>
#include <vector>

#include "msl/lex/lexer.hpp"

namespace metalcall::msl {

/** A block that gets rejoins: its `{`, and the last token of each statement to rejoin after. */
struct RejoinBlock {
  std::size_t open = 0;
  std::vector<std::size_t> after;
};

/**
 * The function bodies, and blocks inside them (a switch's braced cases too), that no lane
 * leaves early (no `return`, no `break` or `continue` of an enclosing loop, no `goto`, but for
 * the block's last statement), with their if/for/while/do/switch
 * statements (and blocks holding one, and statements holding a `?:`, `&&` or `||`) that hold no threadgroup barrier and are followed, in the block, by code that may
 * call a SIMD-group function (a SIMD- or quad-group name, or a function of the source that
 * may call one). The
 * translator writes `const unsigned mtl_rejoin_N = metal::mtl_rt::branch_lanes();` after the
 * `{` and `metal::mtl_rt::rejoin(mtl_rejoin_N);` after each such statement.
 */
std::vector<RejoinBlock> simd_rejoin_points(const std::vector<Token>& t);

}  // namespace metalcall::msl
