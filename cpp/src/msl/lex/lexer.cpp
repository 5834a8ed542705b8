// The MSL tokenizer (see lexer.hpp).
#include "msl/lex/lexer.hpp"

#include <cctype>
#include <cstring>

#include "metalcall/errors.hpp"

namespace metalcall::msl {

namespace {

bool ident_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// Longest first, so that "<<=" wins over "<<" and "<".
const char* const kPunctuators[] = {"<<=", ">>=", "...", "->", "::", "++", "--", "<<", ">>", "<=", ">=", "==", "!=",
                                    "&&", "||", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "##"};

std::string line_text(const std::string& src, int line) {
  int current = 1;
  std::size_t start = 0;
  for (std::size_t i = 0; i < src.size() && current < line; ++i) {
    if (src[i] == '\n') {
      ++current;
      start = i + 1;
    }
  }
  const std::size_t end = src.find('\n', start);
  return src.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

}  // namespace

namespace {
// The line number a `# 12 "file" 1` or `#line 12` directive sets, or -1.
int linemarker_line(const std::string& directive) {
  std::size_t i = directive.find_first_not_of(" \t", 1);
  if (i == std::string::npos) return -1;
  if (directive.compare(i, 4, "line") == 0) i = directive.find_first_not_of(" \t", i + 4);
  if (i == std::string::npos || !std::isdigit(static_cast<unsigned char>(directive[i]))) return -1;
  long n = 0;
  while (i < directive.size() && std::isdigit(static_cast<unsigned char>(directive[i])) && n < 100000000)
    n = n * 10 + (directive[i++] - '0');
  return static_cast<int>(n);
}
}  // namespace

std::vector<Token> tokenize(const std::string& src, bool linemarkers) {
  std::vector<Token> out;
  std::size_t i = 0;
  int line = 1, column = 1;
  bool line_start = true;  // only whitespace so far on this line
  auto advance = [&](std::size_t n) {
    for (std::size_t k = 0; k < n && i < src.size(); ++k, ++i) {
      if (src[i] == '\n') {
        ++line;
        column = 1;
        line_start = true;
      } else {
        ++column;
      }
    }
  };
  auto fail = [&](const std::string& what, int l, int c) {
    throw CompileError("source.metal:" + std::to_string(l) + ":" + std::to_string(c) + ": error: " + what, "", l, c,
                       line_text(src, l));
  };

  while (i < src.size()) {
    const char c = src[i];
    if (c == '\n' || c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') {
      advance(1);
      continue;
    }
    if (c == '\\' && i + 1 < src.size() && (src[i + 1] == '\n' || (src[i + 1] == '\r' && i + 2 < src.size() && src[i + 2] == '\n'))) {
      advance(src[i + 1] == '\n' ? 2 : 3);  // line continuation outside a directive
      line_start = false;
      continue;
    }
    if (c == '/' && i + 1 < src.size() && src[i + 1] == '/') {
      while (i < src.size() && src[i] != '\n') advance(1);
      continue;
    }
    if (c == '/' && i + 1 < src.size() && src[i + 1] == '*') {
      const int l = line, col = column;
      const std::size_t end = src.find("*/", i + 2);
      if (end == std::string::npos) fail("unterminated /* comment", l, col);
      const bool was_line_start = line_start;
      advance(end + 2 - i);
      // A comment does not end "only whitespace so far" when it sits on one line.
      if (was_line_start && line == l) line_start = true;
      continue;
    }
    const int tok_line = line, tok_col = column;
    if (c == '#' && line_start) {
      // A whole directive, continuation lines included, as one token.
      std::size_t j = i;
      std::string text;
      while (j < src.size() && src[j] != '\n') {
        if (src[j] == '\\' && j + 1 < src.size() && src[j + 1] == '\n') {
          text += "\\\n";
          j += 2;
          continue;
        }
        if (src[j] == '/' && j + 1 < src.size() && src[j + 1] == '/') {
          while (j < src.size() && src[j] != '\n') ++j;
          break;
        }
        text += src[j++];
      }
      while (!text.empty() && (text.back() == ' ' || text.back() == '\t' || text.back() == '\r')) text.pop_back();
      advance(j - i);
      const int marked = linemarkers ? linemarker_line(text) : -1;
      if (marked >= 0) {
        line = marked - 1;  // the newline ending the marker brings it to `marked`
        continue;
      }
      out.push_back({TokenKind::directive, text, tok_line, tok_col});
      continue;
    }
    line_start = false;
    if (ident_start(c)) {
      std::size_t j = i;
      while (j < src.size() && ident_char(src[j])) ++j;
      out.push_back({TokenKind::identifier, src.substr(i, j - i), tok_line, tok_col});
      advance(j - i);
      continue;
    }
    if (std::isdigit(static_cast<unsigned char>(c)) || (c == '.' && i + 1 < src.size() && std::isdigit(static_cast<unsigned char>(src[i + 1])))) {
      // A pp-number: digits, letters, '.', '_', and exponent signs.
      std::size_t j = i + 1;
      while (j < src.size()) {
        const char d = src[j];
        if (ident_char(d) || d == '.' || d == '\'') {
          ++j;
        } else if ((d == '+' || d == '-') && (src[j - 1] == 'e' || src[j - 1] == 'E' || src[j - 1] == 'p' || src[j - 1] == 'P')) {
          ++j;
        } else {
          break;
        }
      }
      out.push_back({TokenKind::number, src.substr(i, j - i), tok_line, tok_col});
      advance(j - i);
      continue;
    }
    if (c == '"' || c == '\'') {
      std::size_t j = i + 1;
      while (j < src.size() && src[j] != c && src[j] != '\n') j += (src[j] == '\\') ? 2 : 1;
      if (j >= src.size() || src[j] != c) fail(c == '"' ? "unterminated string literal" : "unterminated character literal", tok_line, tok_col);
      out.push_back({c == '"' ? TokenKind::string : TokenKind::character, src.substr(i, j + 1 - i), tok_line, tok_col});
      advance(j + 1 - i);
      continue;
    }
    std::string punct(1, c);
    for (const char* p : kPunctuators) {
      const std::size_t n = std::strlen(p);
      if (src.compare(i, n, p) == 0) {
        punct = p;
        break;
      }
    }
    if (!std::ispunct(static_cast<unsigned char>(c))) {
      fail(std::string("unexpected character '") + (static_cast<unsigned char>(c) < 0x80 ? std::string(1, c) : "non-ASCII") + "'", tok_line, tok_col);
    }
    out.push_back({TokenKind::punct, punct, tok_line, tok_col});
    advance(punct.size());
  }
  return out;
}

}  // namespace metalcall::msl
