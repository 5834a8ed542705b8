// The MSL tokenizer (see lexer.hpp). It must cut the source into exactly the tokens the
// target's C++ compiler will see, or a construct hidden from the front end (an `asm` inside
// what it took for a string) reaches that compiler unchecked: phases 1-2 first
// (line_splices.hpp), then C++17's preprocessing tokens by maximal munch, raw strings,
// digraphs and alternative tokens included. Where g++ and clang lex differently (a literal
// suffix that does not start with '_'), the source is refused.
#include "msl/lex/lexer.hpp"

#include <algorithm>
#include <cctype>
#include <cstring>

#include "metalcall/errors.hpp"
#include "msl/errors/front_end_stop.hpp"
#include "msl/lex/line_splices.hpp"

namespace metalcall::msl {

namespace {

constexpr const char* kByteOrderMark = "\xEF\xBB\xBF";  // UTF-8's

bool ident_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }
bool digit(char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }
bool blank(char c) { return c == ' ' || c == '\t' || c == '\f' || c == '\v'; }

// C++17's punctuators, longest first within each first character (maximal munch). Digraphs
// are here too; canonical() gives the spelling the rest of the front end reads.
const char* const kPunctuators[] = {"%:%:", "<<=", ">>=", "...", "->*", "->", "::", "++", "--", "<<", ">>", "<=",
                                    ">=", "==", "!=", "&&", "||", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=",
                                    "##", ".*", "<:", ":>", "<%", "%>", "%:"};

// Digraphs and alternative tokens mean exactly their primary spellings ([lex.digraph]).
const char* canonical(const std::string& spelling) {
  // Most tokens are none of them: a look at the length and first character settles those
  // (the list is compared for every identifier and punctuator of a 400 KB prelude).
  if (spelling.size() < 2 || spelling.size() > 6 || !std::strchr("<:%abcnox", spelling[0])) return nullptr;
  static const std::pair<const char*, const char*> kAlternatives[] = {
      {"<:", "["}, {":>", "]"}, {"<%", "{"}, {"%>", "}"}, {"%:", "#"}, {"%:%:", "##"},
      {"and", "&&"}, {"and_eq", "&="}, {"bitand", "&"}, {"bitor", "|"}, {"compl", "~"}, {"not", "!"},
      {"not_eq", "!="}, {"or", "||"}, {"or_eq", "|="}, {"xor", "^"}, {"xor_eq", "^="}};
  for (const auto& [alt, primary] : kAlternatives)
    if (spelling == alt) return primary;
  return nullptr;
}

bool is_raw_prefix(const std::string& w) { return w == "R" || w == "u8R" || w == "uR" || w == "UR" || w == "LR"; }
bool is_quote_prefix(const std::string& w) { return w == "u8" || w == "u" || w == "U" || w == "L"; }

// The line number a `# 12 "file" 1` or `#line 12` directive sets, or -1.
int linemarker_line(const std::string& directive) {
  std::size_t i = directive.find_first_not_of(" \t", 1);
  if (i == std::string::npos) return -1;
  if (directive.compare(i, 4, "line") == 0) i = directive.find_first_not_of(" \t", i + 4);
  if (i == std::string::npos || !digit(directive[i])) return -1;
  long n = 0;
  while (i < directive.size() && digit(directive[i]) && n < 100000000) n = n * 10 + (directive[i++] - '0');
  return static_cast<int>(n);
}

class Lexer {
 public:
  Lexer(const std::string& source, bool linemarkers)
      : src_(source), s_(splice_lines(source)), starts_(line_starts(source)), linemarkers_(linemarkers) {}

  std::vector<Token> run() {
    const std::string& s = s_.text;
    out_.reserve(s.size() / 8);  // about one token per 5-10 characters of code
    bool line_start = true;  // only blanks and comments since the last line end
    // A UTF-8 byte order mark opening the file (editors on Windows write one) is no
    // character of the source, as clang (Apple's compiler) reads it; it was refused as a
    // non-ASCII character until 2026-12-05.
    std::size_t k = s.compare(0, 3, kByteOrderMark) == 0 ? 3 : 0;
    while (k < s.size()) {
      const char c = s[k];
      if (c == '\n') {
        line_start = true;
        ++k;
        poll_front_end_stop();
        continue;
      }
      if (blank(c)) {
        ++k;
        continue;
      }
      if (c == '/' && peek(k + 1) == '/') {
        k = line_end(k);
        continue;
      }
      if (c == '/' && peek(k + 1) == '*') {  // a comment is one blank: `line_start` stays as it is
        k = comment_end(k);
        continue;
      }
      // `#` or `%:` first on a line starts a directive; `##` and `%:%:` there do not.
      if (line_start && ((c == '#' && peek(k + 1) != '#') ||
                         (c == '%' && peek(k + 1) == ':' && !(peek(k + 2) == '%' && peek(k + 3) == ':')))) {
        k = directive(k);
        continue;
      }
      line_start = false;
      k = token(k);
    }
    return std::move(out_);
  }

 private:
  const std::string& src_;
  SplicedSource s_;
  std::vector<std::size_t> starts_;
  bool linemarkers_;
  int line_shift_ = 0;  // linemarkers: the user's line minus the physical one
  std::vector<Token> out_;

  char peek(std::size_t k) const { return k < s_.text.size() ? s_.text[k] : '\0'; }

  // Line and column (1-based) of spliced position k in the user's source.
  std::pair<int, int> where(std::size_t k) const {
    const std::size_t offset = s_.at[k];
    const std::size_t line = std::upper_bound(starts_.begin(), starts_.end(), offset) - starts_.begin();
    return {static_cast<int>(line), static_cast<int>(offset - starts_[line - 1] + 1)};
  }

  [[noreturn]] void fail(const std::string& what, std::size_t k) const {
    const auto [line, column] = where(k);
    const int l = line + line_shift_;
    throw CompileError("source.metal:" + std::to_string(l) + ":" + std::to_string(column) + ": error: " + what, "", l,
                       column, linemarkers_ ? std::string() : physical_line(src_, line));
  }

  void push(TokenKind kind, std::string text, std::size_t k) {
    const auto [line, column] = where(k);
    out_.push_back({kind, std::move(text), line + line_shift_, column});
  }

  std::size_t line_end(std::size_t k) const {
    const std::size_t e = s_.text.find('\n', k);
    return e == std::string::npos ? s_.text.size() : e;
  }

  std::size_t comment_end(std::size_t k) const {
    const std::size_t e = s_.text.find("*/", k + 2);
    if (e == std::string::npos) fail("unterminated /* comment", k);
    return e + 2;
  }

  // The token starting at k (not a blank, comment or directive); returns where it ends.
  std::size_t token(std::size_t k) {
    const std::string& s = s_.text;
    const char c = s[k];
    if (ident_start(c)) {
      std::size_t j = k;
      while (j < s.size() && ident_char(s[j])) ++j;
      const std::string word = s.substr(k, j - k);
      if (peek(j) == '"' && is_raw_prefix(word)) return raw_string(k, j);
      if ((peek(j) == '"' || peek(j) == '\'') && is_quote_prefix(word)) return quoted(k, j, true);
      if (peek(j) == '$') fail("'$' is not allowed in identifiers", j);
      if (const char* primary = canonical(word)) push(TokenKind::punct, primary, k);
      else push(TokenKind::identifier, word, k);
      return j;
    }
    if (digit(c) || (c == '.' && digit(peek(k + 1)))) return number(k);
    if (c == '"' || c == '\'') return quoted(k, k, true);
    if (c == '\\') fail("stray '\\' (universal character names are not supported outside literals)", k);
    if (c == '$') fail("'$' is not allowed in identifiers", k);
    if (!std::ispunct(static_cast<unsigned char>(c))) {
      fail(std::string("unexpected character '") + (static_cast<unsigned char>(c) < 0x80 ? std::string(1, c) : "non-ASCII") + "'", k);
    }
    return punctuator(k);
  }

  std::size_t punctuator(std::size_t k) {
    const std::string& s = s_.text;
    std::string p(1, s[k]);
    for (const char* candidate : kPunctuators) {
      if (candidate[0] == s[k] && s.compare(k, std::strlen(candidate), candidate) == 0) {
        p = candidate;
        break;
      }
    }
    // [lex.pptoken]: `<::` not followed by ':' or '>' is `<` then `::` (so `a<::b>` works).
    if (p == "<:" && peek(k + 2) == ':' && peek(k + 3) != ':' && peek(k + 3) != '>') p = "<";
    const char* primary = canonical(p);
    push(TokenKind::punct, primary ? primary : p, k);
    return k + p.size();
  }

  // A pp-number ([lex.ppnumber]) from k: digits, identifier characters, '.', `e+`-style signs,
  // and a digit separator `'` only before a digit or a letter. Returns its end.
  std::size_t number_end(std::size_t k) const {
    const std::string& s = s_.text;
    std::size_t j = k + 1;
    while (j < s.size()) {
      const char d = s[j];
      if (ident_char(d) || d == '.') {
        ++j;
      } else if ((d == '+' || d == '-') && (s[j - 1] == 'e' || s[j - 1] == 'E' || s[j - 1] == 'p' || s[j - 1] == 'P')) {
        ++j;
      } else if (d == '\'' && j + 1 < s.size() && ident_char(s[j + 1])) {
        j += 2;
      } else {
        break;
      }
    }
    return j;
  }

  std::size_t number(std::size_t k) {
    const std::size_t j = number_end(k);
    push(TokenKind::number, s_.text.substr(k, j - k), k);
    return j;
  }

  // A string or character literal from k (its prefix) with its opening quote at q; with
  // `strict`, an unterminated one is an error (in a directive it is a lone character).
  // Returns the end, past a user-defined suffix; npos when not terminated and not strict.
  std::size_t quoted(std::size_t k, std::size_t q, bool strict) {
    const std::string& s = s_.text;
    const char quote = s[q];
    std::size_t j = q + 1;
    while (j < s.size() && s[j] != quote && s[j] != '\n') j += (s[j] == '\\' && j + 1 < s.size() && s[j + 1] != '\n') ? 2 : 1;
    if (j >= s.size() || s[j] != quote) {
      if (!strict) return std::string::npos;
      fail(quote == '"' ? "unterminated string literal" : "unterminated character literal", k);
    }
    j = suffix_end(j + 1);
    if (strict) push(quote == '"' ? TokenKind::string : TokenKind::character, s.substr(k, j - k), k);
    return j;
  }

  // After a literal: its user-defined suffix, if any. g++ and clang agree only on suffixes
  // that start with one '_'; any other letter touching a literal is refused.
  std::size_t suffix_end(std::size_t j) const {
    if (!ident_start(peek(j))) return j;
    if (peek(j) != '_' || peek(j + 1) == '_')
      fail("a literal's suffix must start with a single '_' (or put a blank between the literal and the name)", j);
    while (ident_char(peek(j))) ++j;
    return j;
  }

  // R"delim( ... )delim": phases 1 and 2 are undone inside ([lex.pptoken]/3.1), so the body is
  // read from the user's source itself. k: the prefix, q: the opening quote (spliced text).
  std::size_t raw_string(std::size_t k, std::size_t q, bool emit = true) {
    const std::string& src = src_;
    std::size_t i = s_.at[q] + 1;  // in the user's source
    std::string delimiter;
    while (i < src.size() && src[i] != '(') {
      const char d = src[i];
      if (d == ' ' || d == ')' || d == '\\' || d == '"' || std::iscntrl(static_cast<unsigned char>(d)) ||
          static_cast<unsigned char>(d) >= 0x80 || delimiter.size() == 16)
        fail("invalid raw string delimiter (at most 16 characters, no blanks, backslashes or parentheses)", k);
      delimiter += src[i++];
    }
    if (i >= src.size()) fail("unterminated raw string literal", k);
    const std::string close = ")" + delimiter + "\"";
    const std::size_t end = src.find(close, i + 1);
    if (end == std::string::npos) fail("unterminated raw string literal", k);
    const std::size_t after = end + close.size();  // in the user's source
    // Back to the spliced text: the first position at or after `after`, then any suffix.
    const std::size_t back = std::lower_bound(s_.at.begin(), s_.at.end(), after) - s_.at.begin();
    const std::size_t j = suffix_end(back);
    if (emit) {
      push(TokenKind::string,
           s_.text.substr(k, q - k) + src.substr(s_.at[q], after - s_.at[q]) + s_.text.substr(back, j - back), k);
    }
    return j;
  }

  // A directive from its '#' (or `%:`) at k to the line end that is not inside a comment or a
  // raw string, as one token: comments become a blank, splices are gone, `%:` is '#'. Its
  // literals and numbers are read as in code, so that a `//` inside one is not a comment.
  std::size_t directive(std::size_t k) {
    const std::string& s = s_.text;
    std::string text = "#";
    std::size_t j = k + (s[k] == '#' ? 1 : 2);
    while (j < s.size() && s[j] != '\n') {
      const char c = s[j];
      if (c == '/' && peek(j + 1) == '/') {
        j = line_end(j);
        break;
      }
      if (c == '/' && peek(j + 1) == '*') {
        j = comment_end(j);
        text += ' ';
        continue;
      }
      std::size_t end = j + 1;
      if (ident_start(c)) {
        std::size_t q = j;
        while (q < s.size() && ident_char(s[q])) ++q;
        const std::string word = s.substr(j, q - j);
        end = q;
        if (peek(q) == '"' && is_raw_prefix(word)) {
          end = raw_string(j, q, false);
          text += word + src_.substr(s_.at[q], s_.at[end] - s_.at[q]);
          j = end;
          continue;
        }
        if ((peek(q) == '"' || peek(q) == '\'') && is_quote_prefix(word)) {
          const std::size_t e = quoted(j, q, false);
          end = e == std::string::npos ? q + 1 : e;  // unterminated: the quote is one character there
        }
      } else if (digit(c) || (c == '.' && digit(peek(j + 1)))) {
        end = number_end(j);
      } else if (c == '"' || c == '\'') {
        const std::size_t e = quoted(j, j, false);
        end = e == std::string::npos ? j + 1 : e;
      }
      text += s.substr(j, end - j);
      j = end;
    }
    while (text.size() > 1 && blank(text.back())) text.pop_back();
    const int marked = linemarkers_ ? linemarker_line(text) : -1;
    if (marked >= 0) {
      // The line after this marker is line `marked` of the user's source.
      line_shift_ = marked - (where(j).first + 1);
      return j;
    }
    push(TokenKind::directive, text, k);
    return j;
  }
};

}  // namespace

std::vector<Token> tokenize(const std::string& src, bool linemarkers) { return Lexer(src, linemarkers).run(); }

}  // namespace metalcall::msl
