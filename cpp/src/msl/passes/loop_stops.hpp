// A stop check on every loop of the user's code, so that a running kernel can be stopped
// (Ctrl-C, Completion.wait(timeout=...), kernel_timeout=): MSL has no goto and no recursion,
// so every unbounded run goes around some loop. The check is a prelude macro per target
// (metal_stop.h): on the CPU one load of the process's stop word per iteration (once per
// strip where loop_strips.hpp strip-mined the loop); on CUDA a counter, and every 1024th
// iteration of the loop's nest a load of the device's stop word (a loop in strips checks at
// the start of every strip but the first, __METALCALL_STRIP_CHECK, and nothing in the strip).
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "msl/lex/lexer.hpp"

namespace metalcall::msl {

/**
 * Text to write before tokens (index → text), so that each `for`, `while` and `do` loop
 * becomes
 *
 *     { __METALCALL_LOOP_STATE(n) for (...) { __METALCALL_LOOP_CHECK(n) body } }
 *
 * and, for a loop nested in another loop of the same function (not across a lambda's or a
 * local class's body), `__METALCALL_LOOP_NESTED(outer, n)` after it, inside its block: its
 * count goes to the outer loop's counter as it ends (a `break` passes there too), so a nest
 * of short loops checks as often as one long loop (CUDA; nothing on the CPU).
 *
 * (an unbraced body gets braces; a `#pragma` before the loop stays right before it). Text
 * that ends a statement goes before the token after it, so that other rewrites of that
 * token cannot drop it. Loops whose keyword or body brace `touched(i)` says another
 * rewrite changes (CUDA's SIMD-group product nests, which the prelude runs) stay as they are.
 */
std::map<std::size_t, std::string> loop_stop_edits(const std::vector<Token>& t,
                                                   const std::function<bool(std::size_t)>& touched);


}  // namespace metalcall::msl
