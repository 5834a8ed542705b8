// The operands around an expression's `?:`, `&&` and `||`, found in the tokens: where a
// conditional's condition starts, where its third operand or a logical operator's right
// operand ends. For the passes that rewrite around them (conditional_literals, simd_conditions).
#pragma once

#include <cstddef>
#include <vector>

#include "msl/lex/lexer.hpp"

namespace metalcall::msl {

/** The bracket opening the one at `close` (`)`, `]` or `}`), or statements::kNone. */
std::size_t opening_bracket(const std::vector<Token>& t, std::size_t close);

/** The `:` that matches the `?` at q (same bracket depth, nested conditionals skipped), or t.size(). */
std::size_t matching_colon(const std::vector<Token>& t, std::size_t q);

/**
 * The end of a conditional's third operand that starts at `from`: the first `)`, `]`, `}`,
 * `;`, `,` at its depth, or a `:` not its own nested conditional's; t.size() when none.
 */
std::size_t third_operand_end(const std::vector<Token>& t, std::size_t from);

/**
 * The first token of the left operand of the `?`, `&&` or `||` at `op`: back to an assignment,
 * `,`, `;`, `?`, `:`, an open bracket, a statement's keyword or the `)` of a control statement's
 * condition, and for `&&` an `||` too (brackets, calls and braced temporaries `S{…}` inside).
 * statements::kNone where that is unclear: an empty operand, a directive, a lambda.
 */
std::size_t left_operand_start(const std::vector<Token>& t, std::size_t op);

/**
 * One past the last token of the right operand of the `&&` or `||` at `op`: the next `||`
 * (for `&&`, `&&` too), `?`, `:`, `,`, `;`, assignment or closing bracket at its depth;
 * t.size() when none.
 */
std::size_t right_operand_end(const std::vector<Token>& t, std::size_t op);

}  // namespace metalcall::msl
