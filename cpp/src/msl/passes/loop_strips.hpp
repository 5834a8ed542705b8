// Loop strip-mining for the CPU target, so that the stop check every loop gets
// (loop_stops.hpp) costs once per 4096 iterations instead of every iteration, and the
// loop's own iterations stay free of it: a check in a loop keeps the compiler from
// vectorising that loop (a call and a volatile load in its body), which made loop-heavy
// kernels (metalcall.numpy's linear algebra) 5-10x slower.
//
//     for (init; cond; inc) body
//  -> for (init; cond; ) { [bool __metalcall_break_N = false;]
//                          for (STRIP; (cond) && NEXT; inc) body'
//                          [if (__metalcall_break_N) break;] }
//
//     while (cond) body        (and for (init; ; inc), with no condition in the strip)
//  -> while (cond) { ... for (unsigned __metalcall_strip_N = 0u; __metalcall_strip_N < 4096u && (cond);
//                             ++__metalcall_strip_N) body' ... }
//
// The strip: where the loop counts one by one (`for (T v = ...; v OP x; ++v)`, OP one of
// < <= > >=, --v going down, v written nowhere in the body), it ends on v itself
// (metal::mtl_rt::loop_strip<OP, decltype(v), decltype(x)> in metal_stop.h: `v < end`, end 4096
// steps on), so that its loop has one exit test on its induction variable, which g++
// vectorises (a second counter in the exit test makes a loop g++ does not vectorise); else a
// counter (`s < 4096u && (cond)`, `++s`). body' is body with each `break` of this loop written
// `{ __metalcall_break_N = true; break; }`: the flag leaves the outer loop too.
//
// The outer loop gets the stop check; the inner one (its name says so) does not. The same
// iterations run in the same order: each still tests cond, runs body, then inc, and each
// strip runs at least one iteration while cond holds. Exits: a `break` leaves both loops
// (the flag), `return` leaves both by itself, `continue` goes to inc in the strip as in the
// loop; MSL has no `goto` (a body with one is left alone). cond is evaluated once more at
// each strip's start, so it must have no side effects (no assignment, increment or call
// other than conversions and a few pure functions). `do` loops and loops after a `#pragma`
// keep the check on every iteration.
#pragma once

#include <vector>

#include "msl/lex/lexer.hpp"

namespace metalcall::msl {

/** The tokens with every loop that can be strip-mined rewritten as above. */
std::vector<Token> strip_mine_loops(const std::vector<Token>& t);

/** True for the `for` at i when it is the inner loop of a strip (loop_stops leaves it unchecked). */
bool is_strip_loop(const std::vector<Token>& t, std::size_t i);

}  // namespace metalcall::msl
