// Tokenizer for MSL: the C++17 tokens the target's compiler will see (line splices
// anywhere, raw strings, digraphs and alternative tokens as their primary spellings,
// literals with prefixes and suffixes). Comments are dropped; preprocessor directives
// are kept whole, one token each (splices removed, comments as blanks), so that the
// translator can pass them through.
#pragma once

#include <string>
#include <vector>

namespace metalcall::msl {

enum class TokenKind { identifier, number, string, character, punct, directive };

struct Token {
  TokenKind kind;
  std::string text;
  int line;    // 1-based, in the user's source
  int column;  // 1-based
  bool is(const char* s) const { return text == s; }
  bool is_identifier(const char* s) const { return kind == TokenKind::identifier && text == s; }
};

/**
 * Throws CompileError on an unterminated comment, string or character literal, and on
 * what g++ and clang would lex differently or the front end cannot follow: a literal
 * suffix not starting with one '_', '$' in a name, a backslash outside a literal.
 * With `linemarkers`, the source is preprocessor output: `# N "file"` and `#line N`
 * set the line numbers of what follows (so tokens carry the user's lines) and are
 * dropped.
 */
std::vector<Token> tokenize(const std::string& source, bool linemarkers = false);

}  // namespace metalcall::msl
