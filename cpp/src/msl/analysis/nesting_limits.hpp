// How deep a source may nest, checked on its tokens before any analysis or pass runs. The
// front end's walks follow nesting (a loop's body, a conditional's third operand): a source
// nested thousands deep made them quadratic (4,000 nested `for (;;)` took 17 s, 100,000 would
// take hours) in the calling process, where no compile limit applies. The limits are the
// compiler's own: clang, Apple's Metal compiler included, stops at 256 nested brackets.
#pragma once

#include <string>
#include <vector>

#include "msl/lex/lexer.hpp"

namespace metalcall::msl {

/** The deepest nesting a source may have, of each kind below. */
constexpr int kMaxNesting = 256;
/**
 * The most operators one statement may hold. A flat chain is as deep a tree as it is long, and
 * the translation verifier's stack (msl/verify/verifier_stack.hpp) holds about 1.2 million
 * levels; the host compiler, at its usual 8 MiB stack, stops far sooner (60,000 `+ 1`).
 */
constexpr long kMaxOperators = 100000;

/**
 * CompileError ("[MSL rule: nesting within the compiler's limits]") at the first token that
 * nests deeper than kMaxNesting: brackets ( [ {; statements whose bodies are statements of
 * the same kind without braces (`for (;;) for (;;) ...`, `do do ...`, `if (a) if (b) ...`;
 * `else if` chains are sequences, not nesting); conditional operators in one statement; and
 * more than kMaxOperators operators (punctuators but brackets, `;` and `::`, and `else`) in
 * one statement, a block or an initializer element counted apart.
 */
void check_nesting(const std::vector<Token>& tokens, const std::string& source);

}  // namespace metalcall::msl
