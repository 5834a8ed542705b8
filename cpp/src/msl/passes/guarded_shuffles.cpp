// Shuffles under a lane test hoisted ahead of it (guarded_shuffles.hpp).
#include "msl/passes/guarded_shuffles.hpp"

#include <algorithm>
#include <set>
#include <string>

#include "msl/analysis/call_graph.hpp"

namespace metalcall::msl {

namespace {

bool is_shuffle(const std::string& name) {
  static const auto& names = *new std::set<std::string>{
      "simd_shuffle",          "simd_shuffle_up",          "simd_shuffle_down",      "simd_shuffle_xor",
      "simd_shuffle_rotate_up", "simd_shuffle_rotate_down", "simd_broadcast",         "quad_shuffle",
      "quad_shuffle_up",       "quad_shuffle_down",        "quad_shuffle_xor",       "quad_shuffle_rotate_up",
      "quad_shuffle_rotate_down", "quad_broadcast"};
  return names.count(name) > 0;
}

bool is_scalar_type(const std::string& name) {
  static const auto& names = *new std::set<std::string>{"bool", "char", "uchar", "short", "ushort", "int", "uint",
                                                        "long", "ulong", "half", "float", "size_t", "uint16_t",
                                                        "uint32_t", "int16_t", "int32_t"};
  return names.count(name) > 0;
}

bool is_assignment(const Token& t) {
  static const auto& ops = *new std::set<std::string>{"=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>="};
  return t.kind == TokenKind::punct && ops.count(t.text) > 0;
}

bool is_statement_keyword(const Token& t) {
  static const auto& words = *new std::set<std::string>{"if", "else", "for", "while", "do", "switch", "return", "break",
                                                        "continue", "goto", "case", "default", "threadgroup_barrier"};
  return t.kind == TokenKind::identifier && words.count(t.text) > 0;
}

// [b, e) reads values only: names, numbers, operators, casts to scalar types; no call, index,
// dereference, assignment or step. `index` allows `a[i]` (a condition reads memory anyway).
bool pure(const std::vector<Token>& t, std::size_t b, std::size_t e, bool index) {
  for (std::size_t j = b; j < e; ++j) {
    const Token& x = t[j];
    if (x.kind == TokenKind::string || x.kind == TokenKind::character || x.kind == TokenKind::directive) return false;
    if (is_assignment(x) || x.is("++") || x.is("--") || x.is("->") || x.is("{") || x.is("?") || x.is(":") ||
        x.is("::") || x.is(";"))
      return false;
    if (x.is("[") && !index) return false;
    if (x.is("*") || x.is("&")) {  // binary only: after a value
      if (j == b || !(t[j - 1].kind == TokenKind::identifier || t[j - 1].kind == TokenKind::number ||
                      t[j - 1].is(")") || t[j - 1].is("]")))
        return false;
    }
    if (x.is("(") && j > b && (t[j - 1].kind == TokenKind::identifier || t[j - 1].is(">")) &&
        !is_scalar_type(t[j - 1].text))
      return false;
    if (x.kind == TokenKind::number && x.text.find_first_of(".eEpP") != std::string::npos &&
        x.text.rfind("0x", 0) != 0)
      return false;  // integer literals only: no literal rewrite to follow
  }
  return true;
}

}  // namespace

void hoist_guarded_shuffles(std::vector<Token>& t) {
  std::vector<Token> out;
  out.reserve(t.size());
  std::size_t copied = 0, serial = 0;
  for (std::size_t i = 0; i + 1 < t.size(); ++i) {
    if (!t[i].is_identifier("if") || !t[i + 1].is("(") || (i > 0 && t[i - 1].is("#"))) continue;
    const std::size_t close = matching(t, i + 1);
    if (close + 1 >= t.size() || !pure(t, i + 2, close, true)) continue;
    // The body's statements [s, e] (e its `;`), and the last token of the if statement.
    std::size_t s = close + 1, last = 0;
    const bool braced = t[s].is("{");
    if (braced) {
      last = matching(t, s);
      ++s;
    }
    std::vector<std::pair<std::size_t, std::size_t>> statements;
    bool simple = s < t.size();
    while (simple && s < t.size() && (braced ? s < last : statements.empty())) {
      if (is_statement_keyword(t[s]) || t[s].is("{") || t[s].is(";")) {
        simple = false;
        break;
      }
      std::size_t e = s;
      int assignments = 0;
      for (int depth = 0; e < t.size(); ++e) {
        const Token& x = t[e];
        if (x.is("(") || x.is("[")) ++depth;
        else if (x.is(")") || x.is("]")) --depth;
        else if (x.is("{") || x.is("}") || is_statement_keyword(x) || x.is("++") || x.is("--")) simple = false;
        else if (is_assignment(x) && (depth > 0 || ++assignments > 1)) simple = false;
        else if (depth == 0 && x.is(";")) break;
        if (!simple) break;
      }
      if (!simple || e >= t.size()) {
        simple = false;
        break;
      }
      statements.push_back({s, e});
      s = e + 1;
    }
    if (!simple || statements.empty() || (braced && s != last)) continue;
    if (!braced) last = statements.back().second;
    if (last + 1 < t.size() && t[last + 1].is_identifier("else")) continue;
    // The shuffles of plain values that no earlier statement of the body may change: names
    // left of its assignment, or passed to a call other than a shuffle (a reference may change).
    std::vector<std::pair<std::size_t, std::size_t>> calls;  // [first token, `)`]
    std::set<std::string> earlier;
    for (std::size_t m = 0; m < statements.size(); ++m) {
      if (m > 0) {
        const std::size_t b = statements[m - 1].first, e = statements[m - 1].second;
        std::size_t assignment = e;
        for (std::size_t j = b, depth = 0; j < e; ++j) {
          if (t[j].is("(") || t[j].is("[")) ++depth;
          else if (t[j].is(")") || t[j].is("]")) --depth;
          else if (depth == 0 && is_assignment(t[j])) assignment = j;
        }
        std::vector<bool> in_call;  // per open parenthesis: inside a call's arguments
        for (std::size_t j = b; j < e; ++j) {
          if (t[j].is("(") || t[j].is("[")) {
            const bool call = t[j].is("(") && t[j - 1].kind == TokenKind::identifier && !is_shuffle(t[j - 1].text) &&
                              !is_scalar_type(t[j - 1].text);
            in_call.push_back(call || (!in_call.empty() && in_call.back()));
          } else if ((t[j].is(")") || t[j].is("]")) && !in_call.empty()) {
            in_call.pop_back();
          } else if (t[j].kind == TokenKind::identifier && (j < assignment || (!in_call.empty() && in_call.back()))) {
            earlier.insert(t[j].text);
          }
        }
      }
      for (std::size_t j = statements[m].first; j < statements[m].second; ++j) {
        if (t[j].kind != TokenKind::identifier || !is_shuffle(t[j].text) || !t[j + 1].is("(")) continue;
        if (t[j - 1].is(".") || t[j - 1].is("->")) continue;
        const std::size_t first = t[j - 1].is("::") && j >= 2 && t[j - 2].is_identifier("metal") ? j - 2 : j;
        if (first != j && (t[first - 1].is("::") || t[first - 1].is("."))) continue;
        const std::size_t rparen = matching(t, j + 1);
        bool fresh = true;
        for (std::size_t a = j + 2; a < rparen; ++a) fresh = fresh && !earlier.count(t[a].text);
        if (fresh && pure(t, j + 2, rparen, false)) calls.push_back({first, rparen});
        j = rparen;
      }
    }
    if (calls.empty()) continue;
    out.insert(out.end(), t.begin() + copied, t.begin() + i);
    // New tokens on the if's line, at columns a space apart (the translation separates tokens
    // by their columns), and after the copied call's.
    const Token& at = t[i];
    int cursor = at.column;
    auto add = [&](TokenKind kind, const std::string& text, const Token& where) {
      out.push_back(Token{kind, text, where.line, cursor});
      cursor += int(text.size()) + 1;
    };
    add(TokenKind::punct, "{", at);
    std::vector<std::string> names;
    for (const auto& [first, rparen] : calls) {
      names.push_back("mtl_shuffled_" + std::to_string(serial++));
      add(TokenKind::identifier, "const", at);
      add(TokenKind::identifier, "auto", at);
      add(TokenKind::identifier, names.back(), at);
      add(TokenKind::punct, "=", at);
      out.insert(out.end(), t.begin() + first, t.begin() + rparen + 1);
      cursor = std::max(cursor, t[rparen].column + 2);
      add(TokenKind::punct, ";", t[rparen]);
    }
    std::size_t next = 0;
    for (std::size_t j = i; j <= last; ++j) {
      if (next < calls.size() && j == calls[next].first) {
        out.push_back(Token{TokenKind::identifier, names[next], t[j].line, t[j].column});
        j = calls[next++].second;
        continue;
      }
      out.push_back(t[j]);
    }
    out.push_back(Token{TokenKind::punct, "}", t[last].line, t[last].column + 1});
    copied = last + 1;
    i = last;
  }
  if (copied == 0) return;
  out.insert(out.end(), t.begin() + copied, t.end());
  t = std::move(out);
}

}  // namespace metalcall::msl
