// Statements of a token stream: where one ends. Shared by the passes that rewrite around
// statements (loop_stops, loop_strips, simd_latches, simd_reconvergence).
#pragma once

#include <cstddef>
#include <limits>
#include <vector>

#include "msl/lex/lexer.hpp"

namespace metalcall::msl {

namespace statements {

constexpr std::size_t kNone = std::numeric_limits<std::size_t>::max();

/** Whether token i is the punctuator s. */
bool punct(const std::vector<Token>& t, std::size_t i, const char* s);

/** The `)` matching the `(` at `open`, or kNone. */
std::size_t close_of(const std::vector<Token>& t, std::size_t open);

/** Whether k is `for`, `while` or `do`. */
bool is_loop_keyword(const Token& k);

/** Whether k begins a control statement: a loop's keyword, `if` or `switch`. */
bool is_control_keyword(const Token& k);

}  // namespace statements

/**
 * The index of the last token of the statement that starts at `first` (past pragmas and
 * `[[attributes]]`): a block's `}`, an if/else's, a loop's or a switch's last token, a do
 * loop's `;`, an expression or declaration statement's `;`; statements::kNone where it is
 * not one (a `case` label, an unbalanced bracket).
 */
std::size_t statement_end(const std::vector<Token>& t, std::size_t first);

}  // namespace metalcall::msl
