// Rules that tie a kernel's built-in inputs to each other (MSL specification, notes on kernel
// function input attributes): Metal's compiler refuses a kernel whose position and size inputs
// mix scalars and vectors or vector widths, and one declaring both SIMD-width inputs.
#pragma once

#include <string>
#include <vector>

#include "msl/lex/lexer.hpp"
#include "msl/parse/signature_parser.hpp"

namespace metalcall::msl {

/** Throws a rule CompileError at the first parameter of `params` (one kernel's) that breaks them. */
void check_builtin_agreement(const std::vector<Token>& t, const std::string& source,
                             const std::vector<ParsedParam>& params);

}  // namespace metalcall::msl
