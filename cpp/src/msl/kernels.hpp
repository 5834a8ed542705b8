// Finds the kernel functions of a token stream and parses their signatures into
// the reflection table (DESIGN.md §3), keeping token positions for the translator.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "metalcall/reflection.hpp"
#include "metalcall/errors.hpp"
#include "msl/lexer.hpp"

namespace metalcall::msl {

struct ParsedParam {
  ParamInfo info;
  std::vector<std::size_t> type_tokens;  // the declared type, qualifiers included
  std::size_t name_token = 0;
};

struct ParsedKernel {
  KernelInfo info;
  std::size_t keyword_token = 0;  // `kernel` (or the `[[` of [[kernel]])
  std::size_t name_token = 0;
  std::size_t body_open = 0, body_close = 0;  // the braces of the body
  std::vector<ParsedParam> params;
};

/** Every kernel defined in `tokens`. Throws CompileError for malformed signatures. */
std::vector<ParsedKernel> parse_kernels(const std::vector<Token>& tokens, const std::string& source);

/** The text of line `line` (1-based) of `source`, for error messages. */
std::string source_line(const std::string& source, int line);

/** A CompileError at a token of the user's source. */
CompileError error_at(const std::string& source, const Token& token, const std::string& message);

}  // namespace metalcall::msl
