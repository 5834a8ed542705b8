// Function declarators (see function_declarators.hpp).
#include "msl/parse/function_declarators.hpp"

#include <string>

namespace metalcall::msl {

namespace {

constexpr std::size_t npos = std::string::npos;

// After `operator` at j: the token after the operator's symbol (`()`, `[]` and `->` included),
// or npos for a conversion (`operator thread T*`), whose name is a type.
std::size_t after_operator_symbol(const std::vector<Token>& t, std::size_t j) {
  const std::size_t s = j + 1;
  if (s >= t.size() || t[s].kind != TokenKind::punct) return npos;
  if ((t[s].is("(") || t[s].is("[")) && s + 1 < t.size() && t[s + 1].is(t[s].is("(") ? ")" : "]")) return s + 2;
  return s + 1;
}

}  // namespace

std::size_t declarator_parameters(const std::vector<Token>& t, std::size_t j) {
  while (j < t.size()) {
    if (t[j].is_identifier("operator")) {
      const std::size_t open = after_operator_symbol(t, j);
      return open < t.size() && t[open].is("(") ? open : npos;
    }
    if (t[j].is("~")) ++j;  // a destructor
    if (j >= t.size() || t[j].kind != TokenKind::identifier) return npos;
    std::size_t k = j + 1;
    if (k < t.size() && t[k].is("<")) {  // `A<B, C>::`: to the matching '>'
      int depth = 0;
      for (; k < t.size(); ++k) {
        if (t[k].is("<") || t[k].is("(")) ++depth;
        else if (t[k].is(">") || t[k].is(")")) --depth;
        else if (t[k].is(">>")) depth -= 2;
        else if (t[k].is(";") || t[k].is("{") || t[k].is("}")) return npos;
        if (depth <= 0) break;
      }
      if (depth != 0) return npos;
      ++k;  // (then `::`, or `(`: an explicit specialisation, `template <> T* f<float>(`)
    }
    if (k < t.size() && t[k].is("::")) {
      j = k + 1;
      continue;
    }
    return k < t.size() && t[k].is("(") ? k : npos;
  }
  return npos;
}

bool follows_operator_name(const std::vector<Token>& t, std::size_t open) {
  for (std::size_t back = 2; back <= 3 && back <= open; ++back)
    if (t[open - back].is_identifier("operator") && after_operator_symbol(t, open - back) == open) return true;
  return false;
}

bool follows_template_arguments(const std::vector<Token>& t, std::size_t open) {
  if (open < 3 || !t[open - 1].is(">")) return false;
  int depth = 0;
  for (std::size_t k = open - 1; k > 0; --k) {
    if (t[k].is(">") || t[k].is(")")) ++depth;
    else if (t[k].is(">>")) depth += 2;
    else if (t[k].is("<") || t[k].is("(")) --depth;
    else if (t[k].is(";") || t[k].is("{") || t[k].is("}")) return false;
    if (depth == 0) return t[k].is("<") && t[k - 1].kind == TokenKind::identifier;
  }
  return false;
}

bool follows_function_pointer(const std::vector<Token>& t, std::size_t open) {
  if (open < 3 || !t[open - 1].is(")")) return false;
  std::size_t k = open - 2;
  if (t[k].kind == TokenKind::identifier) --k;  // `(*name)`
  return k >= 1 && (t[k].is("*") || t[k].is("&")) && t[k - 1].is("(");
}

}  // namespace metalcall::msl
