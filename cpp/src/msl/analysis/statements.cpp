// Where statements end (see statements.hpp).
#include "msl/analysis/statements.hpp"

#include "msl/analysis/call_graph.hpp"  // matching

namespace metalcall::msl {

namespace statements {

bool punct(const std::vector<Token>& t, std::size_t i, const char* s) {
  return i < t.size() && t[i].kind == TokenKind::punct && t[i].is(s);
}

bool is_loop_keyword(const Token& k) { return k.is_identifier("for") || k.is_identifier("while") || k.is_identifier("do"); }

bool is_control_keyword(const Token& k) {
  return is_loop_keyword(k) || k.is_identifier("if") || k.is_identifier("switch");
}

std::size_t close_of(const std::vector<Token>& t, std::size_t open) {
  if (!punct(t, open, "(")) return kNone;
  const std::size_t close = matching(t, open);
  return close < t.size() ? close : kNone;
}

}  // namespace statements

namespace {

using statements::close_of;
using statements::kNone;
using statements::punct;

// The `;` that ends an expression or declaration statement starting at `i`, skipping
// brackets (lambdas, initializer lists, a local struct's body), or kNone.
std::size_t semicolon_from(const std::vector<Token>& t, std::size_t i) {
  for (; i < t.size(); ++i) {
    if (punct(t, i, ";")) return i;
    if (punct(t, i, "(") || punct(t, i, "[") || punct(t, i, "{")) {
      i = matching(t, i);
      if (i >= t.size()) return kNone;
    } else if (punct(t, i, ")") || punct(t, i, "]") || punct(t, i, "}")) {
      return kNone;  // the statement's block ended first: not a statement we know
    }
  }
  return kNone;
}

}  // namespace

std::size_t statement_end(const std::vector<Token>& t, std::size_t i) {
  while (i < t.size() && t[i].kind == TokenKind::directive) ++i;  // `#pragma unroll` before a loop
  while (punct(t, i, "[") && punct(t, i + 1, "[")) {              // [[likely]]
    i = matching(t, i);
    if (i >= t.size()) return kNone;
    ++i;
  }
  if (i >= t.size()) return kNone;
  const Token& k = t[i];
  if (punct(t, i, "{")) {
    const std::size_t close = matching(t, i);
    return close < t.size() ? close : kNone;
  }
  if (k.is_identifier("if")) {
    std::size_t open = i + 1;
    if (open < t.size() && t[open].is_identifier("constexpr")) ++open;
    const std::size_t close = close_of(t, open);
    if (close == kNone) return kNone;
    const std::size_t then_end = statement_end(t, close + 1);
    if (then_end == kNone) return kNone;
    if (then_end + 1 < t.size() && t[then_end + 1].is_identifier("else")) return statement_end(t, then_end + 2);
    return then_end;
  }
  if (k.is_identifier("for") || k.is_identifier("while") || k.is_identifier("switch")) {
    const std::size_t close = close_of(t, i + 1);
    return close == kNone ? kNone : statement_end(t, close + 1);
  }
  if (k.is_identifier("do")) {
    const std::size_t body_end = statement_end(t, i + 1);
    if (body_end == kNone || body_end + 1 >= t.size() || !t[body_end + 1].is_identifier("while")) return kNone;
    const std::size_t close = close_of(t, body_end + 2);
    return close != kNone && punct(t, close + 1, ";") ? close + 1 : kNone;
  }
  if (k.is_identifier("else") || k.is_identifier("case") || k.is_identifier("default")) return kNone;
  return semicolon_from(t, i);
}

}  // namespace metalcall::msl
