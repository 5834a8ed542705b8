// Loop strip-mining for the CPU target (see loop_strips.hpp).
#include "msl/passes/loop_strips.hpp"

#include <map>
#include <regex>
#include <set>
#include <string>

#include "msl/analysis/call_graph.hpp"      // matching
#include "msl/passes/loop_stops.hpp"        // statement_end

namespace metalcall::msl {

namespace {

constexpr const char* kStripPrefix = "__metalcall_strip_";
constexpr const char* kStripLength = "4096u";

bool punct(const std::vector<Token>& t, std::size_t i, const char* s) {
  return i < t.size() && t[i].kind == TokenKind::punct && t[i].is(s);
}

// Functions a loop condition may call: conversions, vector constructors and pure functions.
bool pure_callee(const std::string& name) {
  // Never destroyed (tests/reliability/test_exit_safe_statics.py).
  static const auto& functions =
      *new std::set<std::string>{"min",   "max",   "clamp", "abs",   "absdiff", "select", "length",
                                 "dot",   "popcount", "size", "all", "any",     "isnan",  "isinf",
                                 "floor", "ceil",  "trunc", "round", "fabs",    "fmin",   "fmax"};
  static const auto& conversion = *new std::regex("(u?(char|short|int|long)|float|half|bfloat|bool|size_t)[234]?");
  return functions.count(name) || std::regex_match(name, conversion);
}

// True when evaluating tokens [first, last) twice is the same as once: no assignment,
// increment, block, string or call other than pure_callee's, and no comma outside a call.
bool side_effect_free(const std::vector<Token>& t, std::size_t first, std::size_t last) {
  static const auto& operators =
      *new std::set<std::string>{"<", ">", "<=", ">=", "==", "!=", "&&", "||", "!", "+", "-", "*", "/", "%", "&",
                                 "|", "^", "~", "<<", ">>", "(", ")", "[", "]", ".", "->", "::", "?", ":", ","};
  if (first >= last) return false;
  int call_depth = 0;  // parentheses opened by a call (commas allowed inside)
  std::vector<bool> opened_by_call;
  for (std::size_t k = first; k < last; ++k) {
    const Token& tok = t[k];
    switch (tok.kind) {
      case TokenKind::identifier:
        if (punct(t, k + 1, "(") && !pure_callee(tok.text)) return false;
        break;
      case TokenKind::number:
      case TokenKind::character:
        break;
      case TokenKind::punct:
        if (!operators.count(tok.text)) return false;
        if (tok.is("(")) {
          const bool call = k > first && t[k - 1].kind == TokenKind::identifier;
          opened_by_call.push_back(call);
          call_depth += call;
        } else if (tok.is(")")) {
          if (opened_by_call.empty()) return false;
          call_depth -= opened_by_call.back();
          opened_by_call.pop_back();
        } else if (tok.is(",") && call_depth == 0) {
          return false;
        }
        break;
      default:
        return false;  // strings, directives
    }
  }
  return opened_by_call.empty();
}

// True when the body [first, last] holds a `break` (of this loop or of a nested switch or
// loop: either way the rewrite is left alone).
bool has_break(const std::vector<Token>& t, std::size_t first, std::size_t last) {
  for (std::size_t k = first; k <= last && k < t.size(); ++k)
    if (t[k].is_identifier("break") || t[k].is_identifier("goto")) return true;
  return false;
}

Token made(const Token& at, TokenKind kind, const std::string& text) { return Token{kind, text, at.line, at.column}; }

}  // namespace

bool is_strip_loop(const std::vector<Token>& t, std::size_t i) {
  return i + 3 < t.size() && t[i].is_identifier("for") && punct(t, i + 1, "(") && t[i + 2].is_identifier("unsigned") &&
         t[i + 3].text.rfind(kStripPrefix, 0) == 0;
}

std::vector<Token> strip_mine_loops(const std::vector<Token>& t) {
  std::map<std::size_t, std::vector<Token>> before;  // inserted before token i (opening text)
  std::map<std::size_t, std::vector<Token>> closing;  // inserted before token i, ahead of `before`
  std::set<std::size_t> dropped;
  std::set<std::size_t> do_whiles;
  for (std::size_t i = 0; i + 1 < t.size(); ++i) {
    const bool is_for = t[i].is_identifier("for"), is_while = t[i].is_identifier("while");
    if (t[i].is_identifier("do")) {
      const std::size_t body_end = statement_end(t, i + 1);  // the do-while's `while` follows it
      if (body_end + 1 < t.size()) do_whiles.insert(body_end + 1);
      continue;
    }
    if ((!is_for && !is_while) || do_whiles.count(i) || !punct(t, i + 1, "(")) continue;
    if (i > 0 && t[i - 1].kind == TokenKind::directive) continue;  // `#pragma unroll` keeps its loop
    const std::size_t close = matching(t, i + 1);
    if (close >= t.size() || close + 1 >= t.size() || t[close + 1].kind == TokenKind::directive) continue;
    const std::size_t body_end = statement_end(t, close + 1);
    if (body_end >= t.size() || has_break(t, close + 1, body_end)) continue;
    // The header's parts: for (init; cond; inc) or while (cond).
    std::size_t cond_first = i + 2, cond_last = close, inc_first = close, inc_last = close;
    if (is_for) {
      std::vector<std::size_t> semicolons;
      for (std::size_t k = i + 2; k < close; ++k) {
        if (punct(t, k, "(") || punct(t, k, "[") || punct(t, k, "{")) k = matching(t, k);
        else if (punct(t, k, ";")) semicolons.push_back(k);
      }
      if (semicolons.size() != 2) continue;  // a range-based for, or an odd header
      cond_first = semicolons[0] + 1;
      cond_last = semicolons[1];
      inc_first = semicolons[1] + 1;
      inc_last = close;
      if (inc_first == inc_last) continue;
    }
    if (!side_effect_free(t, cond_first, cond_last)) continue;
    const Token& at = t[close];
    const std::string name = kStripPrefix + std::to_string(i);
    std::vector<Token> head = {made(at, TokenKind::punct, "{"),         made(at, TokenKind::identifier, "for"),
                               made(at, TokenKind::punct, "("),         made(at, TokenKind::identifier, "unsigned"),
                               made(at, TokenKind::identifier, name),   made(at, TokenKind::punct, "="),
                               made(at, TokenKind::number, "0u"),       made(at, TokenKind::punct, ";"),
                               made(at, TokenKind::identifier, name),   made(at, TokenKind::punct, "<"),
                               made(at, TokenKind::number, kStripLength), made(at, TokenKind::punct, "&&"),
                               made(at, TokenKind::punct, "(")};
    for (std::size_t k = cond_first; k < cond_last; ++k) head.push_back(t[k]);
    for (const char* s : {")", ";", "++"}) head.push_back(made(at, TokenKind::punct, s));
    head.push_back(made(at, TokenKind::identifier, name));
    if (is_for) {
      head.push_back(made(at, TokenKind::punct, ","));
      for (std::size_t k = inc_first; k < inc_last; ++k) {
        head.push_back(t[k]);
        dropped.insert(k);  // the increment moves to the inner loop
      }
    }
    head.push_back(made(at, TokenKind::punct, ")"));
    auto& opening = before[close + 1];
    opening.insert(opening.end(), head.begin(), head.end());
    // Inner loops registered later close first: their `}` goes ahead of this one's.
    auto& ends = closing[body_end + 1];
    ends.insert(ends.begin(), made(t[body_end], TokenKind::punct, "}"));
  }
  if (before.empty()) return t;
  // Inserted tokens take columns after the token they follow, so that they print apart.
  std::vector<Token> out;
  out.reserve(t.size() + before.size() * 24);
  auto append = [&out](Token tok) {
    if (!out.empty() && tok.line == out.back().line && tok.column <= out.back().column)
      tok.column = out.back().column + static_cast<int>(out.back().text.size()) + 1;
    out.push_back(std::move(tok));
  };
  for (std::size_t i = 0; i <= t.size(); ++i) {
    if (auto c = closing.find(i); c != closing.end())
      for (const Token& tok : c->second) append(tok);
    if (auto b = before.find(i); b != before.end())
      for (const Token& tok : b->second) append(tok);
    if (i < t.size() && !dropped.count(i)) out.push_back(t[i]);
  }
  return out;
}

}  // namespace metalcall::msl
