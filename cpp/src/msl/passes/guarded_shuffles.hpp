// Shuffles under a lane test, evaluated by every lane that reaches the test. MSL leaves a
// shuffle from an inactive lane undefined; Apple GPUs read the source lane's register, so the
// Hillis-Steele scan `if (lane >= 1) x += simd_shuffle_up(x, 1);` gets lane 0's x there
// (AppleNumericalComputing's prefix sums verify against the CPU at distance 0 on M1). The fibers
// had no value for a lane that skipped the call and returned the caller's own: silent wrong sums.
#pragma once

#include <vector>

#include "msl/lex/lexer.hpp"

namespace metalcall::msl {

/**
 * Rewrites `if (COND) S;` and `if (COND) { S1; S2; ... }` (no else), where each S is an
 * expression statement and COND has no side effects, hoisting the SIMD- or quad-group shuffles
 * and broadcasts of plain values (names, integer literals and arithmetic: nothing that can fault
 * or change state) that no earlier statement of the body names: `{ const auto mtl_shuffled_N =
 * CALL; ... if (COND) { S1'; ... } }`, each call replaced by its value. The lanes that skip the
 * body then take part in the shuffle, which reads their values as the hardware reads its
 * registers (radix sorts scan four counters so: AppleNumericalComputing's radix_sort.metal).
 * Lanes whose source is active get the same value as before.
 */
void hoist_guarded_shuffles(std::vector<Token>& t);

/**
 * The same for a shuffle of plain values in a branch of a conditional or after `&&` / `||`
 * (`v += lane >= k ? simd_shuffle_up(v, k) : 0;`): a statement, or the unbraced body of an if,
 * loop or else, in which nothing before the call changes state (no call, step or nested
 * assignment) becomes `const auto mtl_branch_shuffled_N = CALL; STATEMENT'` (braced as a body),
 * so that every lane reaching the statement takes part in the shuffle, as Apple GPUs read a lane
 * that took the other branch. Lanes whose source took this branch get the same value as before.
 */
void hoist_conditional_shuffles(std::vector<Token>& t);

}  // namespace metalcall::msl
