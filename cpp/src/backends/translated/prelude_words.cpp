// The words of C++ text (see prelude_words.hpp).
#include "backends/translated/prelude_words.hpp"

#include <cctype>

namespace metalcall::translated {

bool word_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }
bool word_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }

std::vector<std::string_view> tokens(std::string_view s) {
  std::vector<std::string_view> out;
  bool line_start = true;
  std::size_t i = 0;
  while (i < s.size()) {
    const char c = s[i];
    if (c == '\n') {
      line_start = true;
      ++i;
    } else if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') {
      ++i;
    } else if (c == '/' && i + 1 < s.size() && s[i + 1] == '/') {
      while (i < s.size() && s[i] != '\n') ++i;
    } else if (c == '/' && i + 1 < s.size() && s[i + 1] == '*') {
      const std::size_t e = s.find("*/", i + 2);
      i = e == std::string_view::npos ? s.size() : e + 2;
    } else if (c == '"' || c == '\'') {
      ++i;
      while (i < s.size() && s[i] != c && s[i] != '\n') i += s[i] == '\\' ? 2 : 1;
      ++i;
      line_start = false;
    } else if (c == '#' && line_start) {
      std::size_t e = i;
      while (e < s.size() && s[e] != '\n') {
        if (s[e] == '\\' && e + 1 < s.size() && s[e + 1] == '\n') ++e;
        else if (s[e] == '/' && e + 1 < s.size() && s[e + 1] == '/') break;  // a comment ends it
        ++e;
      }
      out.push_back(s.substr(i, e - i));
      while (e < s.size() && s[e] != '\n') ++e;
      i = e;
    } else if (word_char(c)) {
      std::size_t e = i;
      while (e < s.size() && word_char(s[e])) ++e;
      out.push_back(s.substr(i, e - i));
      i = e;
      line_start = false;
    } else {
      out.push_back(s.substr(i, 1));
      ++i;
      line_start = false;
    }
  }
  return out;
}

bool is_identifier(std::string_view t) { return !t.empty() && word_start(t[0]); }

}  // namespace metalcall::translated
