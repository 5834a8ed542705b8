// For CUDA: the exits of loops that may call a SIMD-group function. Code on a path that only
// leaves a loop (`if (k == n) { return acc + simd_sum(1); }`, `{ x = simd_sum(v); break; }`)
// is outside the loop for the compiler: lanes that leave in different iterations reach that one
// copy, and NVIDIA GPUs ran it with all of them together (27 lanes where MSL's call acts on the
// 10 that left in that iteration: tests/conformance/test_divergent_simd_calls.py's
// dc_return_in_helper on the H200). Apple GPUs run it in the iteration the lanes left in.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "msl/analysis/simd_callers.hpp"
#include "msl/lex/lexer.hpp"

namespace metalcall::msl {

/** A `break` or `return` statement that leaves a loop, and what the translator writes around it. */
struct LoopExit {
  std::size_t first = 0;  // `break` or `return`
  std::size_t last = 0;   // its `;`
  std::string before;     // text before `first`
  std::string replace;    // the text of `first`, where it is replaced ("" if not)
  std::string after;      // text after `last`
};

/**
 * The exits of each loop (for, while, do) whose text may call a SIMD-group function (`callers`):
 * its `break`s (not a nested loop's or switch's) and the `return`s in it (not a lambda's). Each
 * leaves only if the opaque `metal::mtl_rt::stay_in_loop()` says so (it always does):
 * `{ if (...) break; }`; a returned value that may call one is evaluated first,
 * `{ auto&& mtl_exit_N = EXPR; if (...) return mtl_exit_N; }`, a braced list into a variable of
 * the return type the function or lambda declares (written as type_text writes it),
 * `{ Pair mtl_exit_N = {a, simd_sum(b)}; if (...) return mtl_exit_N; }`, or in a function
 * declared void `{ EXPR; if (...) return; }`. The path to the exit can then continue the loop,
 * so the compiler keeps its code, and the value's, in the iteration: the SIMD-group functions
 * there act on the lanes leaving in that iteration.
 */
std::vector<LoopExit> simd_loop_exits(const std::vector<Token>& t, const SimdCallers& callers);

}  // namespace metalcall::msl
