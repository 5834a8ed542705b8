// Integer literal branches of conditionals, found for the CUDA target (see conditional_literals.hpp).
#include "msl/conditional_literals.hpp"

#include <cctype>

namespace metalcall::msl {

namespace {

bool punct(const std::vector<Token>& t, std::size_t i, const char* s) {
  return i < t.size() && t[i].kind == TokenKind::punct && t[i].is(s);
}

// An unsuffixed decimal or hexadecimal integer literal (`0`, `16`, `0xff`).
bool int_literal(const std::vector<Token>& t, std::size_t i) {
  if (i >= t.size() || t[i].kind != TokenKind::number) return false;
  const std::string& s = t[i].text;
  std::size_t k = 0;
  const bool hex = s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
  if (hex) k = 2;
  for (; k < s.size(); ++k)
    if (!(hex ? std::isxdigit(static_cast<unsigned char>(s[k])) : std::isdigit(static_cast<unsigned char>(s[k])))) return false;
  return true;
}

// Whether the token after a third operand ends it (so the operand is that one token).
bool ends_operand(const std::vector<Token>& t, std::size_t i) {
  return i >= t.size() || punct(t, i, ")") || punct(t, i, "]") || punct(t, i, "}") || punct(t, i, ";") ||
         punct(t, i, ",") || punct(t, i, ":");
}

// The `:` that matches the `?` at q (same bracket depth, nested conditionals skipped), or t.size().
std::size_t matching_colon(const std::vector<Token>& t, std::size_t q) {
  int depth = 0, nested = 0;
  for (std::size_t i = q + 1; i < t.size(); ++i) {
    if (t[i].kind != TokenKind::punct) continue;
    if (t[i].is("(") || t[i].is("[") || t[i].is("{")) ++depth;
    else if (t[i].is(")") || t[i].is("]") || t[i].is("}")) {
      if (--depth < 0) return t.size();
    } else if (depth == 0 && t[i].is(";")) {
      return t.size();
    } else if (depth == 0 && t[i].is("?")) {
      ++nested;
    } else if (depth == 0 && t[i].is(":")) {
      if (nested == 0) return i;
      --nested;
    }
  }
  return t.size();
}

}  // namespace

std::set<std::size_t> conditional_int_literals(const std::vector<Token>& t) {
  std::set<std::size_t> out;
  for (std::size_t q = 0; q < t.size(); ++q) {
    if (!punct(t, q, "?")) continue;
    const std::size_t colon = matching_colon(t, q);
    if (colon >= t.size()) continue;
    const bool second = colon == q + 2 && int_literal(t, q + 1);
    const bool third = int_literal(t, colon + 1) && ends_operand(t, colon + 2);
    const bool second_number = colon == q + 2 && t[q + 1].kind == TokenKind::number;
    const bool third_number = colon + 1 < t.size() && t[colon + 1].kind == TokenKind::number && ends_operand(t, colon + 2);
    if (second && !third_number) out.insert(q + 1);
    if (third && !second_number) out.insert(colon + 1);
  }
  return out;
}

}  // namespace metalcall::msl
