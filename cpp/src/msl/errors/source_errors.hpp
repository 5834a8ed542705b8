// CompileErrors that point at the user's source: the text of a line, and an
// error at a token with the line and a caret under its column.
#pragma once

#include <string>

#include "metalcall/errors.hpp"
#include "msl/lex/lexer.hpp"

namespace metalcall::msl {

/** The text of line `line` (1-based) of `source`, for error messages. */
std::string source_line(const std::string& source, int line);

/** A CompileError at a token of the user's source. */
CompileError error_at(const std::string& source, const Token& token, const std::string& message);

/**
 * A CompileError for source that breaks an MSL rule (docs/msl-rules.md): the message
 * ends with "[MSL rule: <rule>]" so that the rule is named the same way everywhere.
 */
CompileError rule_error(const std::string& source, const Token& token, const std::string& message,
                        const std::string& rule);

}  // namespace metalcall::msl
