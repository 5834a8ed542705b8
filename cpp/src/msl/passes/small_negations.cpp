// Unary minus through the prelude for the CUDA target (small_negations.hpp).
#include "msl/passes/small_negations.hpp"

#include <algorithm>
#include <cctype>
#include <set>
#include <string>

#include "msl/analysis/call_graph.hpp"  // matching

namespace metalcall::msl {

namespace {

// A token after which `-` is unary: an operator, an opening bracket, a separator or a keyword
// that starts an expression. Not `)` (a cast or an operand), `]`, `}`, a name or a literal.
bool starts_operand(const Token& p) {
  static const auto& keywords = *new std::set<std::string>{"return", "else", "do", "co_return", "throw"};
  if (p.kind == TokenKind::identifier) return keywords.count(p.text) > 0;
  if (p.kind != TokenKind::punct) return false;
  static const auto& closers = *new std::set<std::string>{")", "]", "}", "++", "--", ">", ">>", "::", ".", "->"};
  return !closers.count(p.text);
}

bool is_name(const Token& k) {
  static const auto& not_names = *new std::set<std::string>{"sizeof", "alignof", "new", "delete", "this", "true", "false",
                                                   "nullptr", "operator", "template", "typename", "decltype",
                                                   "static_cast", "reinterpret_cast", "const_cast", "dynamic_cast"};
  return k.kind == TokenKind::identifier && !not_names.count(k.text);
}

// The end of the postfix chain from i (calls, subscripts, members, ++/--), or t.size() where
// the chain is not plain.
std::size_t postfix_end(const std::vector<Token>& t, std::size_t i) {
  while (i < t.size()) {
    if (t[i].is("(") || t[i].is("[")) {
      const std::size_t close = matching(t, i);
      if (close >= t.size()) return t.size();
      i = close + 1;
    } else if ((t[i].is(".") || t[i].is("->")) && i + 1 < t.size() && t[i + 1].kind == TokenKind::identifier) {
      i += 2;
      if (i < t.size() && t[i].is("<")) return t.size();  // .template f<...> or a comparison
    } else if (t[i].is("++") || t[i].is("--")) {
      ++i;
    } else {
      return i;
    }
  }
  return i;
}

}  // namespace

std::vector<std::pair<std::size_t, std::size_t>> small_negations(const std::vector<Token>& t) {
  std::vector<std::pair<std::size_t, std::size_t>> out;
  for (std::size_t i = 1; i + 1 < t.size(); ++i) {
    if (!t[i].is("-") || !starts_operand(t[i - 1])) continue;
    if (t[i - 1].is_identifier("case") || t[i - 1].is_identifier("sizeof")) continue;
    std::size_t b = i + 1, e = t.size();
    if (is_name(t[b])) {
      // A macro's constant (INFINITY, FLT_MAX, ...): a float, not worth NVRTC's warnings.
      if (std::all_of(t[b].text.begin(), t[b].text.end(), [](char c) { return !std::islower(static_cast<unsigned char>(c)); }) &&
          !(b + 1 < t.size() && t[b + 1].is("(")))
        continue;
      std::size_t k = b + 1;
      while (k + 1 < t.size() && t[k].is("::") && t[k + 1].kind == TokenKind::identifier) k += 2;
      if (k < t.size() && t[k].is("<")) continue;  // a template's arguments, or a comparison
      e = postfix_end(t, k);
    } else if (t[b].is("(")) {
      const std::size_t close = matching(t, b);
      if (close + 1 >= t.size()) continue;
      const Token& n = t[close + 1];
      // `(T)x`, `(T)-x`, `(a) - b`: a cast or not, the operand is unclear.
      if (n.kind == TokenKind::identifier || n.kind == TokenKind::number || n.kind == TokenKind::character ||
          n.kind == TokenKind::string || n.is("-") || n.is("+") || n.is("!") || n.is("~") || n.is("*") ||
          n.is("&") || n.is("{"))
        continue;
      e = postfix_end(t, close + 1);
    } else {
      continue;  // a literal, or another operator
    }
    if (e >= t.size()) continue;
    out.emplace_back(i, e);
  }
  return out;
}

}  // namespace metalcall::msl
