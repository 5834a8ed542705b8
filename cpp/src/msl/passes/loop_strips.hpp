// Loop strip-mining for the CPU target, so that the stop check every loop gets
// (loop_stops.hpp) costs once per 4096 iterations instead of every iteration, and the
// loop's own iterations stay free of it: a check in a loop keeps the compiler from
// vectorising that loop (a call and a volatile load in its body), which made loop-heavy
// kernels (metalcall.numpy's linear algebra) 5-10x slower.
//
//     for (init; cond; inc) body
//  -> for (init; cond; ) { for (unsigned __metalcall_strip_N = 0u;
//                                __metalcall_strip_N < 4096u && (cond); ++__metalcall_strip_N, inc) body }
//
//     while (cond) body
//  -> while (cond) { for (unsigned __metalcall_strip_N = 0u; __metalcall_strip_N < 4096u && (cond);
//                         ++__metalcall_strip_N) body }
//
// The outer loop gets the stop check; the inner one (its name says so) does not. The same
// iterations run in the same order: each still tests cond, runs body, then inc. Only loops
// where that holds are rewritten: cond is evaluated once more at each strip's start and at
// the end, so it must have no side effects (no assignment, increment or call other than
// conversions and a few pure functions); a `break` in the body would leave only the inner
// loop, so such loops keep the check on every iteration (as do `do` loops, loops after a
// `#pragma`, and `for` loops without a condition or an increment).
#pragma once

#include <vector>

#include "msl/lex/lexer.hpp"

namespace metalcall::msl {

/** The tokens with every loop that can be strip-mined rewritten as above. */
std::vector<Token> strip_mine_loops(const std::vector<Token>& t);

/** True for the `for` at i when it is the inner loop of a strip (loop_stops leaves it unchecked). */
bool is_strip_loop(const std::vector<Token>& t, std::size_t i);

}  // namespace metalcall::msl
