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

// Paren depth of each token within its innermost brace (a `;` of a for header is at 1).
std::vector<int> paren_levels(const std::vector<Token>& t) {
  std::vector<int> level(t.size(), 0), stack{0};
  for (std::size_t i = 0; i < t.size(); ++i) {
    const Token& x = t[i];
    if (x.is("{")) {
      level[i] = stack.back();
      stack.push_back(0);
    } else if (x.is("}")) {
      if (stack.size() > 1) stack.pop_back();
      level[i] = stack.back();
    } else if (x.is("(") || x.is("[")) {
      level[i] = stack.back()++;
    } else if (x.is(")") || x.is("]")) {
      level[i] = --stack.back();
    } else {
      level[i] = stack.back();
    }
  }
  return level;
}

// The `)` at `k` closes an if, while or for header (the statement after it is its body).
bool closes_header(const std::vector<Token>& t, std::size_t k) {
  if (!t[k].is(")")) return false;
  for (std::size_t j = k, depth = 0; j-- > 0;) {
    if (t[j].is(")")) ++depth;
    else if (t[j].is("(") && depth-- == 0)
      return j > 0 && (t[j - 1].is_identifier("if") || t[j - 1].is_identifier("while") || t[j - 1].is_identifier("for"));
  }
  return false;
}

// A shuffle of plain values after a conditional or short-circuit operator of its statement, whose
// tokens before it change nothing (no call, step or nested assignment): its [first, `)`] and the
// statement's [start, `;`], or nothing.
struct ConditionalShuffle {
  std::size_t first = 0, rparen = 0, start = 0, end = 0;
  bool body = false;  // the statement is the unbraced body of an if, while, for, else or do
};

bool conditional_shuffle_at(const std::vector<Token>& t, const std::vector<int>& level, std::size_t j,
                            ConditionalShuffle& c) {
  if (t[j].kind != TokenKind::identifier || !is_shuffle(t[j].text) || j + 1 >= t.size() || !t[j + 1].is("(") || j < 2)
    return false;
  if (t[j - 1].is(".") || t[j - 1].is("->")) return false;
  c.first = t[j - 1].is("::") && t[j - 2].is_identifier("metal") ? j - 2 : j;
  if (c.first < 2 || t[c.first - 1].is("::") || t[c.first - 1].is(".")) return false;
  c.rparen = matching(t, j + 1);
  if (c.rparen >= t.size() || !pure(t, j + 2, c.rparen, false)) return false;
  // A branch: a conditional or a short-circuit operator of the statement precedes the call.
  bool branch = false;
  std::size_t k = c.first;
  while (k-- > 0) {
    const Token& x = t[k];
    // A braced temporary the statement calls or reads (`F{s}(...)`, `S{a}.m`) is no statement's
    // end: the statement starts before it (not hoisted: fuzz seed 28601 #592 put the hoist there).
    if (level[k] == 0 && x.is("}") && (t[k + 1].is("(") || t[k + 1].is(".") || t[k + 1].is("->") || t[k + 1].is("[")))
      return false;
    if (level[k] == 0 && (x.is(";") || x.is("{") || x.is("}"))) break;
    if (level[k] == 0 && (x.is_identifier("else") || x.is_identifier("do") || closes_header(t, k))) {
      c.body = true;
      break;
    }
    branch = branch || x.is("?") || x.is("&&") || x.is("||");
  }
  if (!branch || k + 1 >= c.first) return false;
  c.start = k + 1;
  if (level[c.start] != 0 || (is_statement_keyword(t[c.start]) && !t[c.start].is_identifier("return"))) return false;
  for (std::size_t a = c.start; a < c.first; ++a) {
    const Token& x = t[a];
    if (x.is("++") || x.is("--") || x.is("{") || x.is("}") || (is_assignment(x) && level[a] != 0)) return false;
    if (x.is("(") && a > c.start && t[a - 1].kind == TokenKind::identifier && !is_scalar_type(t[a - 1].text) &&
        !is_shuffle(t[a - 1].text))
      return false;
  }
  for (c.end = c.rparen + 1; c.end < t.size() && !(level[c.end] == 0 && t[c.end].is(";")); ++c.end)
    if (t[c.end].is("{") || t[c.end].is("}")) return false;
  return c.end < t.size();
}

}  // namespace

void hoist_conditional_shuffles(std::vector<Token>& t) {
  std::size_t serial = 0;
  for (std::size_t j = 0; j < t.size(); ++j) {
    const std::vector<int> level = paren_levels(t);  // again after each rewrite: rare, and small sources
    ConditionalShuffle c;
    for (; j < t.size() && !conditional_shuffle_at(t, level, j, c); ++j) {
    }
    if (j >= t.size()) break;
    std::vector<Token> out(t.begin(), t.begin() + c.start);
    const Token& at = t[c.start];
    int cursor = at.column;
    auto add = [&](TokenKind kind, const std::string& text) {
      out.push_back(Token{kind, text, at.line, cursor});
      cursor += int(text.size()) + 1;
    };
    if (c.body) add(TokenKind::punct, "{");
    const std::string name = "mtl_branch_shuffled_" + std::to_string(serial++);
    add(TokenKind::identifier, "const");
    add(TokenKind::identifier, "auto");
    add(TokenKind::identifier, name);
    add(TokenKind::punct, "=");
    out.insert(out.end(), t.begin() + c.first, t.begin() + c.rparen + 1);
    out.push_back(Token{TokenKind::punct, ";", t[c.rparen].line, t[c.rparen].column + 1});
    out.insert(out.end(), t.begin() + c.start, t.begin() + c.first);
    out.push_back(Token{TokenKind::identifier, name, t[c.first].line, t[c.first].column});
    out.insert(out.end(), t.begin() + c.rparen + 1, t.begin() + c.end + 1);
    if (c.body) out.push_back(Token{TokenKind::punct, "}", t[c.end].line, t[c.end].column + 1});
    const std::size_t resume = out.size();
    out.insert(out.end(), t.begin() + c.end + 1, t.end());
    t = std::move(out);
    j = resume - 1;
  }
}

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
        // `my::simd_shuffle(…)`, `Q::simd_broadcast(…)`: the source's own function, not MSL's (its
        // hoisted copy was written `my::mtl_shuffled_0`, a CompileError, before 2026-12-05).
        if (t[first - 1].is("::") || t[first - 1].is(".")) continue;
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
