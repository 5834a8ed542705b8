// The shapes of declarations' lists (see declaration_lists.hpp).
#include "msl/analysis/declaration_lists.hpp"

namespace metalcall::msl {

std::vector<std::string> piece_names(const std::vector<Token>& t, std::size_t from, std::size_t to) {
  std::vector<std::string> names;
  std::string last;
  bool defaulted = false;
  int depth = 0;
  for (std::size_t k = from; k <= to && k < t.size(); ++k) {
    if (k < to && (t[k].is("(") || t[k].is("[") || t[k].is("{") || t[k].is("<"))) ++depth;
    else if (k < to && (t[k].is(")") || t[k].is("]") || t[k].is("}") || t[k].is(">"))) --depth;
    if (k == to || (depth == 0 && t[k].is(","))) {
      names.push_back(last);
      last.clear();
      defaulted = false;
    } else if (depth == 0 && t[k].is("=")) {
      defaulted = true;
    } else if (depth == 0 && !defaulted && t[k].kind == TokenKind::identifier) {
      last = t[k].text;
    }
  }
  return names;
}

std::vector<std::string> template_parameters(const std::vector<Token>& t, std::size_t name) {
  std::size_t s = name;
  int depth = 0;
  while (s > 0) {
    const Token& b = t[s - 1];
    if (b.is(")") || b.is("]")) ++depth;
    else if (b.is("(") || b.is("[")) --depth;
    else if (depth == 0 && (b.is(";") || b.is("{") || b.is("}"))) break;
    --s;
  }
  for (std::size_t k = s; k + 1 < name; ++k) {
    if (!t[k].is_identifier("template") || !t[k + 1].is("<")) continue;
    int angle = 0;
    for (std::size_t j = k + 1; j < name; ++j) {
      if (t[j].is("<")) ++angle;
      else if (t[j].is(">")) --angle;
      else if (t[j].is(">>")) angle -= 2;
      if (angle <= 0) return piece_names(t, k + 2, j);
    }
  }
  return {};
}

ListShape list_shape(const std::vector<Token>& t, std::size_t open) {
  ListShape shape;
  if (open >= t.size() || !t[open].is("(")) return shape;
  int depth = 0;
  bool empty = true, defaulted = false, dots = false;
  std::size_t first = open + 1;
  for (std::size_t k = open + 1; k < t.size(); ++k) {
    const bool end = depth == 0 && (t[k].is(")") || t[k].is(","));
    if (end) {
      const bool only_void = k == first + 1 && t[first].is_identifier("void") && t[k].is(")") && shape.pieces == 0;
      if (!empty && !only_void) {
        ++shape.pieces;
        shape.defaulted += defaulted ? 1 : 0;
        shape.variadic = shape.variadic || dots;
      }
      if (t[k].is(")")) break;
      empty = true, defaulted = false, dots = false, first = k + 1;
      continue;
    }
    if (t[k].is("(") || t[k].is("[") || t[k].is("{") || t[k].is("<")) ++depth;
    else if (t[k].is(")") || t[k].is("]") || t[k].is("}") || t[k].is(">")) --depth;
    else if (t[k].is(">>")) depth -= 2;
    if (depth == 0 && t[k].is("=")) defaulted = true;
    if (t[k].is("...")) dots = true;
    empty = false;
  }
  return shape;
}

}  // namespace metalcall::msl
