// Translation phases 1 and 2 (see line_splices.hpp).
#include "msl/lex/line_splices.hpp"

namespace metalcall::msl {

namespace {
// Blanks that may stand between a splice's backslash and its line end: g++ and clang both
// take `\ ` + newline as a splice (with a warning), so the front end must too.
bool horizontal_blank(char c) { return c == ' ' || c == '\t' || c == '\f' || c == '\v'; }
}  // namespace

std::size_t line_end_length(const std::string& s, std::size_t i) {
  if (i >= s.size()) return 0;
  if (s[i] == '\n') return 1;
  if (s[i] == '\r') return i + 1 < s.size() && s[i + 1] == '\n' ? 2 : 1;
  return 0;
}

SplicedSource splice_lines(const std::string& s) {
  SplicedSource out;
  out.text.reserve(s.size());
  out.at.reserve(s.size() + 1);
  for (std::size_t i = 0; i < s.size();) {
    if (s[i] == '\\') {
      std::size_t j = i + 1;
      while (j < s.size() && horizontal_blank(s[j])) ++j;
      if (const std::size_t n = line_end_length(s, j)) {
        i = j + n;  // a splice: the next line continues this one
        continue;
      }
    }
    if (const std::size_t n = line_end_length(s, i)) {
      out.text += '\n';
      out.at.push_back(i);
      i += n;
      continue;
    }
    out.text += s[i];
    out.at.push_back(i);
    ++i;
  }
  out.at.push_back(s.size());
  return out;
}

std::vector<std::size_t> line_starts(const std::string& s) {
  std::vector<std::size_t> starts = {0};
  for (std::size_t i = 0; i < s.size();) {
    if (const std::size_t n = line_end_length(s, i)) {
      i += n;
      starts.push_back(i);
    } else {
      ++i;
    }
  }
  return starts;
}

std::string physical_line(const std::string& s, int line) {
  const std::vector<std::size_t> starts = line_starts(s);
  if (line < 1 || static_cast<std::size_t>(line) > starts.size()) return {};
  const std::size_t begin = starts[line - 1];
  std::size_t end = begin;
  while (end < s.size() && !line_end_length(s, end)) ++end;
  return s.substr(begin, end - begin);
}

}  // namespace metalcall::msl
