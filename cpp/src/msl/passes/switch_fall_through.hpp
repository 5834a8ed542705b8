// For CUDA: switches whose cases lanes reach on more than one path, written as a chain of guarded
// blocks where such a case may call a SIMD-group function. MSL's SIMD-group functions act on the
// lanes that reach them together: in `case 7: {...} default: { v = simd_or(x); }` the lanes that
// ran case 7 and those that jumped to `default`; in `case 3: case 5: { v = quad_sum(x); }` the
// lanes of both labels. Apple GPUs run them together there; NVIDIA GPUs need not: a __syncwarp at
// the label did not bring them together (the compiler gave the two paths their own copies of the
// code after it: fuzz seed 26102 #91 on an H100), and the lanes of labels 3 and 5, compared one
// after the other, entered the case apart (28800 #266). Written without labels,
//
//   { const unsigned L = branch_lanes(); const auto V = (cond); unsigned S = V == (7) ? 0u : 1u;
//     if (S <= 0u) { ... S = 2u; }  rejoin(L);  if (S <= 1u) { v = simd_or(x); } }
//
// every lane that entered passes each rejoin, and each guarded block has one copy.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "msl/analysis/simd_callers.hpp"
#include "msl/lex/lexer.hpp"

namespace metalcall::msl {

/**
 * The edits (token -> its text, "" to drop it) that write such a switch as guarded blocks.
 * A switch is rewritten where its body may call a SIMD-group function (`callers`), a case other
 * than the last may fall through or a case of several labels or `default` may call one, and its
 * shape allows it: labels only at its top level, each
 * a constant of integer literals, character literals and names (not `renamed_type`s: their
 * text would need translating); no code before the first label; no `return`, `goto` or
 * preprocessor line in it; every `break` of the switch and `continue` of the enclosing loop
 * the last statement of its case (or of that case's last block); and no declaration at a
 * case's top level but the last case's (its block would scope it). `taken(i)`: another rewrite owns token i.
 * Each `break` becomes a selector past every case; each `continue` also sets a flag that
 * continues the loop after the chain; a `[[fallthrough]]` is dropped (C++ allows it in a switch only).
 */
std::map<std::size_t, std::string> switch_fall_through_edits(const std::vector<Token>& t, const SimdCallers& callers,
                                                             const std::function<bool(const std::string&)>& renamed_type,
                                                             const std::function<bool(std::size_t)>& taken);

}  // namespace metalcall::msl
