// The operands around `?:`, `&&` and `||` (see operands.hpp).
#include "msl/analysis/operands.hpp"

#include "msl/analysis/call_graph.hpp"  // matching
#include "msl/analysis/statements.hpp"  // kNone, is_control_keyword

namespace metalcall::msl {

namespace {

using statements::kNone;

bool is_assignment(const Token& k) {
  if (k.kind != TokenKind::punct) return false;
  for (const char* op : {"=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>="})
    if (k.is(op)) return true;
  return false;
}

// Keywords that end an operand scanned backwards: what comes before them is another statement.
bool is_statement_start(const Token& k) {
  return k.is_identifier("return") || k.is_identifier("case") || k.is_identifier("else") || k.is_identifier("do") ||
         k.is_identifier("goto") || k.is_identifier("throw") || k.is_identifier("co_return");
}

}  // namespace

std::size_t opening_bracket(const std::vector<Token>& t, std::size_t close) {
  const char* shut = t[close].is(")") ? ")" : t[close].is("]") ? "]" : "}";
  const char* open = t[close].is(")") ? "(" : t[close].is("]") ? "[" : "{";
  std::size_t depth = 0;
  for (std::size_t k = close + 1; k-- > 0;) {
    if (t[k].kind != TokenKind::punct) continue;
    if (t[k].is(shut)) ++depth;
    else if (t[k].is(open) && --depth == 0) return k;
  }
  return kNone;
}

namespace {

// From `from`, the first `:` at its bracket depth that no nested conditional of the range takes;
// a closing bracket below that depth or a `;` (for a third operand, a `,` too) ends the range:
// matching_colon gives t.size() there, third_operand_end that token.
std::size_t scan_to_colon(const std::vector<Token>& t, std::size_t from, bool third_operand) {
  int depth = 0, nested = 0;
  for (std::size_t i = from; i < t.size(); ++i) {
    if (t[i].kind != TokenKind::punct) continue;
    if (t[i].is("(") || t[i].is("[") || t[i].is("{")) {
      ++depth;
    } else if (t[i].is(")") || t[i].is("]") || t[i].is("}")) {
      if (--depth < 0) return third_operand ? i : t.size();
    } else if (depth == 0 && (t[i].is(";") || (third_operand && t[i].is(",")))) {
      return third_operand ? i : t.size();
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

std::size_t matching_colon(const std::vector<Token>& t, std::size_t q) { return scan_to_colon(t, q + 1, false); }

std::size_t third_operand_end(const std::vector<Token>& t, std::size_t from) { return scan_to_colon(t, from, true); }

std::size_t left_operand_start(const std::vector<Token>& t, std::size_t op) {
  const bool for_and = t[op].is("&&");
  std::size_t j = op;  // the operand's first token so far
  bool after_block = false;
  while (j > 0) {
    const std::size_t p = j - 1;
    const Token& k = t[p];
    if (k.kind == TokenKind::directive) return kNone;
    if (k.kind == TokenKind::identifier && is_statement_start(k)) break;
    if (k.kind != TokenKind::punct) {
      j = p;
      continue;
    }
    if (k.is(")") || k.is("]")) {
      const std::size_t o = opening_bracket(t, p);
      if (o == kNone) return kNone;
      // `if (c) x ? …`: the condition of a control statement ends the operand.
      if (k.is(")") && o > 0 && (statements::is_control_keyword(t[o - 1]) || t[o - 1].is_identifier("constexpr"))) break;
      j = o;
      continue;
    }
    if (k.is("}")) {
      const std::size_t o = opening_bracket(t, p);
      if (o == kNone) return kNone;
      // A braced temporary `S{…}` or `T<…>{…}` is part of the operand; any other block ends it.
      if (o > 0 && ((t[o - 1].kind == TokenKind::identifier && !is_statement_start(t[o - 1])) || t[o - 1].is(">"))) {
        j = o;
        continue;
      }
      after_block = true;
      break;
    }
    if (k.is("(") || k.is("[") || k.is("{") || k.is(";") || k.is(",") || k.is("?") || k.is(":") || is_assignment(k))
      break;
    if (for_and && k.is("||")) break;
    j = p;
  }
  if (j >= op) return kNone;
  // After a block that is no temporary, an operand opening with what only continues one (a
  // lambda called at once, `[&] { … }() ? …`) is not told apart: left alone.
  if (after_block && (t[j].is("(") || t[j].is("[") || t[j].is(".") || t[j].is("->"))) return kNone;
  return j;
}

std::size_t right_operand_end(const std::vector<Token>& t, std::size_t op) {
  const bool for_and = t[op].is("&&");
  for (std::size_t j = op + 1; j < t.size(); ++j) {
    const Token& k = t[j];
    if (k.kind != TokenKind::punct) continue;
    if (k.is("(") || k.is("[") || k.is("{")) {
      j = matching(t, j);
      if (j >= t.size()) return t.size();
      continue;
    }
    if (k.is(")") || k.is("]") || k.is("}") || k.is(";") || k.is(",") || k.is("?") || k.is(":") || k.is("||") ||
        (for_and && k.is("&&")) || is_assignment(k))
      return j;
  }
  return t.size();
}

}  // namespace metalcall::msl
