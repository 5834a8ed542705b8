// Loop strip-mining, so that the stop check every loop gets (loop_stops.hpp) runs once per
// strip of L iterations (the prelude's __METALCALL_STRIP_LENGTH: 4096 on the CPU, 1024 on
// CUDA) and the strip's own iterations stay free of it. A check in a loop keeps the CPU's
// compiler from vectorising that loop (a call and a volatile load in its body), which made
// loop-heavy kernels (metalcall.numpy's linear algebra) 5-10x slower, and NVRTC from unrolling
// it (the FMA recurrence as a loop ran at half speed on the H200).
//
//     for (init; cond; inc) body
//  -> for (init; cond; ) { [bool __metalcall_break_N = false;]
//                          for (STRIP; (cond) && NEXT; inc) body'
//                          [if (__metalcall_break_N) break;] }
//
//     while (cond) body        (and for (init; ; inc), with no condition in the strip)
//  -> while (cond) { ... for (unsigned __metalcall_strip_N = 0u;
//                             __METALCALL_STRIP_MORE(__metalcall_strip_N) && (cond);
//                             ++__metalcall_strip_N) body' ... }
//
// The strip: where the loop counts one by one (`for (T v = ...; v OP x; ++v)`, OP one of
// < <= > >=, --v going down, v written nowhere in the body), it ends on v itself
// (metal::mtl_strip::loop_strip<OP, decltype(v), decltype(x)> in metal_stop.h: `v < end`, end L
// steps on), so that its loop has one exit test on its induction variable, which g++
// vectorises (a second counter in the exit test makes a loop g++ does not vectorise) and
// whose trip count NVRTC computes (it unrolls the strip as it unrolls the loop as written).
// On CUDA a step other than one (`v += e`, `v -= e`, e a literal or a variable held by value that the
// function never writes and whose address it never takes: a grid-stride loop's `k += threads`)
// ends the strip e * L steps on, where e > 0 and that end lies inside v's type (else the
// strip counts: v could wrap within it). Other loops end their strip on a counter
// (`s < L && (cond)`, `++s`). body' is body with each `break` of this loop
// written `{ __metalcall_break_N = true; break; }`: the flag leaves the outer loop too.
//
// The outer loop gets the stop check; the inner one (its name says so) does not. The same
// iterations run in the same order: each still tests cond, runs body, then inc, and each
// strip runs at least one iteration while cond holds. Exits: a `break` leaves both loops
// (the flag), `return` leaves both by itself, `continue` goes to inc in the strip as in the
// loop; MSL has no `goto` (a body with one is left alone). cond is evaluated once more at
// each strip's start, so it must have no side effects (no assignment, increment or call
// other than conversions and a few pure functions). `do` loops and loops after a `#pragma`
// keep the check on every iteration (a counter, metal_stop.h). Only innermost loops run in
// strips, on both targets (an outer loop checks its nest's counter, which sees its inner loops'
// strips). Where x cannot change while the loop runs (a literal, a value the function never
// writes, constant-address-space data), the strip tests `v OP min(x, end)` alone
// (loop_strip::within): one exit test, as the loop's own. On the CPU only loops that
// count (`counted_loop`) run in strips: a strip that ends on a counter has two exits, which no
// host compiler vectorises, so it would only cost each entry of a short loop more. On CUDA
// only innermost loops run in strips (counter strips too: NVRTC unrolls them): a loop with
// a loop inside checks its nest's counter each iteration (loop_stops.hpp), which costs little
// beside the inner loop and keeps a nest of short loops checking every ~1024 iterations.
#pragma once

#include <vector>

#include "msl/lex/lexer.hpp"

namespace metalcall::msl {

/**
 * The tokens with every loop that can be strip-mined rewritten as above. `innermost_only`
 * (CUDA): only loops whose body holds no loop and no SIMD-group or barrier function, and not
 * counted loops up to a literal of at most 1024 (unrolled in full, their counter check folds).
 */
std::vector<Token> strip_mine_loops(const std::vector<Token>& t, bool innermost_only = false);

/** The index of the strip's inner `for` when the body starting at `body` is a strip's outer loop's, else t.size(). */
std::size_t strip_of(const std::vector<Token>& t, std::size_t body);

/** True for the `for` at i when it is the inner loop of a strip (loop_stops leaves it unchecked). */
bool is_strip_loop(const std::vector<Token>& t, std::size_t i);

/** True for the `for` at i when it follows its `__metalcall_short` flag (a CPU grid-stride loop, above). */
bool is_short_loop(const std::vector<Token>& t, std::size_t i);

}  // namespace metalcall::msl
