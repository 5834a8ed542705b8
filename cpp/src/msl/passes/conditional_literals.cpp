// The conditionals the CUDA target rewrites: integer literal branches and branches of mixed
// types (see conditional_literals.hpp).
#include "msl/passes/conditional_literals.hpp"

#include "msl/analysis/operands.hpp"         // matching_colon, third_operand_end
#include "msl/analysis/source_analysis.hpp"  // bit_field_names

#include <cctype>
#include <string>

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
  // An int's value only: a larger literal is a long or unsigned, which int_literal (taken as an
  // int beside a small integer, metal_conditional.h) would truncate.
  const std::size_t digits = s.size() - (hex ? 2 : 0);
  if (digits > 10) return false;
  return std::stoull(s, nullptr, 0) <= 2147483647ull;
}

// Whether the token after a third operand ends it (so the operand is that one token).
bool ends_operand(const std::vector<Token>& t, std::size_t i) {
  return i >= t.size() || punct(t, i, ")") || punct(t, i, "]") || punct(t, i, "}") || punct(t, i, ";") ||
         punct(t, i, ",") || punct(t, i, ":");
}

// Whether the branches [first, last) can be copied into the macro's arguments unchanged.
bool wrappable(const std::vector<Token>& t, std::size_t first, std::size_t last, std::size_t colon) {
  if (first >= last || t[first].is_identifier("throw") || t[colon + 1].is_identifier("throw")) return false;
  int depth = 0, angles = 0, questions = 0;
  for (std::size_t i = first; i < last; ++i) {
    const Token& k = t[i];
    if (k.kind == TokenKind::directive || (i > first && k.line < t[i - 1].line)) return false;
    if (k.kind != TokenKind::punct) continue;
    // A braced temporary `S{a, b}` copies as it is (the macro's parentheses keep its commas);
    // a lambda does not (none in decltype), nor an attribute `[[...]]`.
    if (k.is("]") && i + 1 < last && (t[i + 1].is("(") || t[i + 1].is("{"))) return false;
    if (k.is("{") && !(i > first && t[i - 1].kind == TokenKind::identifier && !t[i - 1].is_identifier("mutable") &&
                       !t[i - 1].is_identifier("noexcept") && !t[i - 1].is_identifier("constexpr")))
      return false;
    if (k.is("[") && i + 1 < last && t[i + 1].is("[")) return false;
    if (k.is("?") && ++questions > 4) return false;
    if (k.is("(") || k.is("[")) ++depth;
    if (k.is(")") || k.is("]")) --depth;
    // In the third branch, a `>` with no `<` before it may close a template argument list
    // (`A<c ? 1 : 2>`), so the branch's end is unknown.
    if (i > colon && depth == 0) {
      if (k.is("<")) ++angles;
      if (k.is(">")) --angles;
      if (k.is(">>")) angles -= 2;
      if (angles < 0) return false;
    }
  }
  return true;
}

bool names_any(const std::vector<Token>& t, std::size_t first, std::size_t last, const std::set<std::string>& names) {
  for (std::size_t i = first; i < last; ++i)
    if (t[i].kind == TokenKind::identifier && names.count(t[i].text)) return true;
  return false;
}

}  // namespace

ConditionalArms conditional_arms(const std::vector<Token>& t) {
  ConditionalArms out;
  // A reference cannot bind a bit-field member: a conditional with one in a branch is left as written.
  const std::set<std::string> bit_fields = bit_field_names(t);
  for (std::size_t q = 0; q < t.size(); ++q) {
    if (!punct(t, q, "?")) continue;
    const std::size_t colon = matching_colon(t, q);
    if (colon >= t.size() || colon == q + 1) continue;
    const std::size_t end = third_operand_end(t, colon + 1);
    if (end >= t.size() || end == colon + 1 || !wrappable(t, q + 1, end, colon)) continue;
    if (!bit_fields.empty() && names_any(t, q + 1, end, bit_fields)) continue;
    out.before[q + 1] += "METALCALL_COND_ARMS((";
    out.colons.insert(colon);
    out.before[end] += "))";
  }
  return out;
}

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
