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
 * Rewrites `if (COND) S;` and `if (COND) { S; }` (no else), where S is one expression statement
 * that calls SIMD- or quad-group shuffles or broadcasts on plain values (names, integer literals
 * and arithmetic: nothing that can fault or change state), and COND has no side effects, to
 * `{ const auto mtl_shuffled_N = CALL; ... if (COND) S'; }` with each call replaced by its
 * value in S': the lanes that skip S then take part in the shuffle, which reads their values
 * as the hardware reads its registers. Lanes whose source is active get the same value as
 * before.
 */
void hoist_guarded_shuffles(std::vector<Token>& t);

}  // namespace metalcall::msl
