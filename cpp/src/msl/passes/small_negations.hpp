// Unary minus through the prelude, for the CUDA target: `-x` written
// `(metal::mtl_rt::neg_tag{} -x)` (metal_negation.h), which negates a char, short or bool
// (and their unsigned kinds) through a 32-bit neg the optimiser cannot see into. NVVM narrows
// `short(-x)` to PTX's neg.s16, and on the H200 the code after it took -(-32768) as +32768
// where MSL wraps it to -32768 (`short(-x) < 1` false, `int(short(-x))` 32768: fuzz seeds
// 7104-7114, the class of abs.s16 in metal_math.h). Other types negate as written.
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

#include "msl/lex/lexer.hpp"

namespace metalcall::msl {

/**
 * (the `-` token, the token after its operand) of each unary minus whose operand is plainly
 * delimited: a name or a parenthesised expression followed by calls, subscripts, members and
 * postfix ++/--. Left as written: a literal operand, a name in capitals (a macro's constant),
 * an operand starting with another operator, a name followed by `<` (a template or a
 * comparison), a parenthesised operand followed by what could make it a cast, a `-` after `)`
 * (a cast or a binary minus) or after `case`/`sizeof`, and a `-` after a `>` that may close a
 * template's arguments.
 */
std::vector<std::pair<std::size_t, std::size_t>> small_negations(const std::vector<Token>& t);

}  // namespace metalcall::msl
