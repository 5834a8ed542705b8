// GNU range designators in a local array's initializer (`float s[N] = { [0 ... N-1] = 0.0f };`,
// ggml): found here, and rewritten as a loop by the translator for compilers without them (NVRTC).
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "msl/lex/lexer.hpp"

namespace metalcall::msl {

/**
 * For each `NAME[...] = { [FIRST ... LAST] = VALUE };` (one designator, the whole
 * initializer), keyed by the index of its `{`: the replacement text of the tokens
 * that change (token index → text; "" drops the token). The result reads
 * `NAME[...] = {}; for (int i = (FIRST); i <= (LAST); ++i) NAME[i] = VALUE;` — valid
 * in a function body only, so the translator applies it there.
 */
std::map<std::size_t, std::map<std::size_t, std::string>> range_designator_rewrites(const std::vector<Token>& t);

}  // namespace metalcall::msl
