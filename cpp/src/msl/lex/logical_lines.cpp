// Translation phases 1 to 3 (see logical_lines.hpp).
#include "msl/lex/logical_lines.hpp"

#include <cctype>

namespace metalcall::msl {

namespace {

constexpr const char* kByteOrderMark = "\xEF\xBB\xBF";  // UTF-8's

bool identifier_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$' || static_cast<unsigned char>(c) >= 0x80;
}

// Phase 2 on the fly: characters read past the line splices before them; the splices read
// count the lines the current logical line has joined.
class Reader {
 public:
  explicit Reader(const std::string& text) : s_(text) {}

  bool done() {
    skip_splices();
    return i_ >= s_.size();
  }
  /** The character `k` places ahead, splices skipped; '\0' past the end. */
  char peek(std::size_t k = 0) const {
    std::size_t j = i_;
    for (std::size_t m = 0;; ++m, ++j) {
      while (const std::size_t n = splice_length(j)) j += n;
      if (j >= s_.size()) return '\0';
      if (m == k) return s_[j];
    }
  }
  char take() {
    skip_splices();
    return s_[i_++];
  }
  /**
   * A raw string from its opening quote, as written (no splices joined) to its end; "" (and
   * nothing read) when the quote does not open one (`R"` then a delimiter and '(').
   */
  std::string take_raw_string() {
    skip_splices();
    if (i_ >= s_.size() || s_[i_] != '"') return "";
    std::size_t open = i_ + 1;
    while (open < s_.size() && open - i_ <= 17 && s_[open] != '(' && s_[open] != ')' && s_[open] != '\\' &&
           s_[open] != '"' && !std::isspace(static_cast<unsigned char>(s_[open])))
      ++open;
    if (open >= s_.size() || s_[open] != '(') return "";
    const std::string close = ")" + s_.substr(i_ + 1, open - i_ - 1) + "\"";
    std::size_t end = s_.find(close, open + 1);
    end = end == std::string::npos ? s_.size() : end + close.size();
    std::string raw = s_.substr(i_, end - i_);
    i_ = end;
    return raw;
  }
  /** The newlines of the splices joined since the last call. */
  int joined() {
    const int n = joined_;
    joined_ = 0;
    return n;
  }
  void join_newline() { ++joined_; }

 private:
  // A splice at j: a backslash, maybe blanks (g++ and clang take them, as the lexer does:
  // line_splices.hpp), then the line end; its length, or 0.
  std::size_t splice_length(std::size_t j) const {
    if (j >= s_.size() || s_[j] != '\\') return 0;
    std::size_t e = j + 1;
    while (e < s_.size() && (s_[e] == ' ' || s_[e] == '\t' || s_[e] == '\f' || s_[e] == '\v')) ++e;
    return e < s_.size() && s_[e] == '\n' ? e + 1 - j : 0;
  }
  void skip_splices() {
    while (const std::size_t n = splice_length(i_)) {
      i_ += n;
      ++joined_;
    }
  }
  const std::string& s_;
  std::size_t i_ = 0;
  int joined_ = 0;
};

// Whether the logical line `out` ends in opened with `#` or `%:` (blanks and comments before it).
bool in_directive(const std::string& out) {
  const std::size_t start = out.find_last_of('\n') == std::string::npos ? 0 : out.find_last_of('\n') + 1;
  const std::size_t first = out.find_first_not_of(" \t\f\v", start);
  return first != std::string::npos && (out[first] == '#' || out.compare(first, 2, "%:") == 0);
}

// The next character that is not a blank (splices skipped), '\0' at the end.
char first_after_blanks(const Reader& r) {
  for (std::size_t k = 0;; ++k) {
    const char c = r.peek(k);
    if (c != ' ' && c != '\t' && c != '\f' && c != '\v') return c;
  }
}

bool raw_prefix(const std::string& identifier) {
  return identifier == "R" || identifier == "u8R" || identifier == "uR" || identifier == "UR" || identifier == "LR";
}

}  // namespace

std::string logical_lines(const std::string& source) {
  // Phase 1: line ends; a byte order mark opening the file dropped (the preprocessor reads
  // this text after macros of its own, where clang would take the mark for a stray character).
  std::string text;
  text.reserve(source.size());
  for (std::size_t i = source.compare(0, 3, kByteOrderMark) == 0 ? 3 : 0; i < source.size(); ++i) {
    if (source[i] != '\r') {
      text += source[i];
      continue;
    }
    text += '\n';
    if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
  }
  std::string out;
  out.reserve(text.size());
  Reader r(text);
  int pending = 0;  // lines the current logical line has joined (splices, block comments)
  while (!r.done()) {
    const char c = r.peek();
    // Line splices just read, between tokens here. Outside a directive, where a blank keeps
    // the tokens on either side apart, their line ends stay in place, as the comments' below:
    // `x = \<newline> __LINE__` is the second line, as clang expands it (the first until
    // 2026-12-05). Not before a `#` or `%:`, which would then open a directive.
    if (const int splices = r.joined()) {
      const bool apart = c == ' ' || c == '\t' || (!out.empty() && (out.back() == ' ' || out.back() == '\t'));
      if (apart && c != '#' && c != '%' && c != '\n' && !in_directive(out)) out.append(static_cast<std::size_t>(splices), '\n');
      else pending += splices;
    }
    if (c == '\n') {
      r.take();
      pending += r.joined();
      out += '\n';
      out.append(static_cast<std::size_t>(pending), '\n');
      pending = 0;
      continue;
    }
    if (c == '/' && r.peek(1) == '/') {  // a line comment, to the end of the logical line
      while (!r.done() && r.peek() != '\n') r.take();
      out += ' ';
      continue;
    }
    if (c == '/' && r.peek(1) == '*') {  // a block comment: one space, its lines joined
      pending += r.joined();
      r.take();
      r.take();
      while (!r.done() && !(r.peek() == '*' && r.peek(1) == '/')) {
        if (r.take() == '\n') r.join_newline();
      }
      if (!r.done()) {
        r.take();
        r.take();
      }
      out += ' ';
      // Outside a directive, the comment's line ends stay where they are, so that the code
      // after it keeps its line (`*/ x = __LINE__;` said the comment's first line, and errors
      // there pointed at it, until 2026-12-05). Not before a `#` or `%:`, which would then
      // open a directive that clang does not see.
      const int inside = r.joined();
      const char next = first_after_blanks(r);
      if (!in_directive(out) && next != '#' && next != '%') out.append(static_cast<std::size_t>(inside), '\n');
      else pending += inside;
      continue;
    }
    if (c == '"' || c == '\'') {  // a literal, kept; not closed on its line: it ends there
      out += r.take();
      while (!r.done() && r.peek() != '\n') {
        const char d = r.take();
        out += d;
        if (d == '\\' && !r.done() && r.peek() != '\n') out += r.take();
        else if (d == c) break;
      }
      continue;
    }
    if (identifier_char(c) && !std::isdigit(static_cast<unsigned char>(c))) {
      std::string identifier;
      while (!r.done() && identifier_char(r.peek())) identifier += r.take();
      out += identifier;
      if (raw_prefix(identifier)) out += r.take_raw_string();
      continue;
    }
    if (std::isdigit(static_cast<unsigned char>(c)) || (c == '.' && std::isdigit(static_cast<unsigned char>(r.peek(1))))) {
      // A pp-number: digit separators (1'000) and exponent signs are part of it.
      out += r.take();
      while (!r.done()) {
        const char d = r.peek();
        const char prev = out.back();
        if (identifier_char(d) || d == '.') out += r.take();
        else if (d == '\'' && identifier_char(r.peek(1))) out += r.take();
        else if ((d == '+' || d == '-') && (prev == 'e' || prev == 'E' || prev == 'p' || prev == 'P')) out += r.take();
        else break;
      }
      continue;
    }
    out += r.take();
  }
  pending += r.joined();
  if (pending > 0) out.append(static_cast<std::size_t>(pending) + (out.empty() || out.back() == '\n' ? 0 : 1), '\n');
  return out;
}

}  // namespace metalcall::msl
