// Self-calls under `if constexpr` that deduce another instantiation (see constexpr_self_calls.hpp).
#include "msl/analysis/constexpr_self_calls.hpp"

#include <algorithm>
#include <utility>

#include "msl/analysis/call_graph.hpp"  // matching

namespace metalcall::msl {

namespace {

bool names_one_of(const std::vector<Token>& t, std::size_t b, std::size_t e, const std::vector<std::string>& own) {
  for (std::size_t j = b; j < e && j < t.size(); ++j)
    if (t[j].kind == TokenKind::identifier && std::find(own.begin(), own.end(), t[j].text) != own.end()) return true;
  return false;
}

// The pieces of the list whose '(' is at `open`, split at its top-level commas: [begin, end).
// Angle brackets nest only in a parameter list (`vec<T, 2> v`); in arguments `<` compares.
std::vector<std::pair<std::size_t, std::size_t>> pieces(const std::vector<Token>& t, std::size_t open, bool angles) {
  std::vector<std::pair<std::size_t, std::size_t>> out;
  const std::size_t close = matching(t, open);
  std::size_t begin = open + 1;
  int depth = 0;
  for (std::size_t j = open + 1; j < close; ++j) {
    if (t[j].is("(") || t[j].is("[") || t[j].is("{") || (angles && t[j].is("<"))) ++depth;
    else if (t[j].is(")") || t[j].is("]") || t[j].is("}") || (angles && t[j].is(">"))) --depth;
    else if (angles && t[j].is(">>")) depth -= 2;
    else if (depth == 0 && t[j].is(",")) {
      out.emplace_back(begin, j);
      begin = j + 1;
    }
  }
  if (begin < close) out.emplace_back(begin, close);
  return out;
}

// The last token of the statement that starts at s (a block, an `if` with its `else`, a loop,
// or an expression statement up to its ';').
std::size_t statement_end(const std::vector<Token>& t, std::size_t s, std::size_t limit) {
  if (s >= limit) return limit;
  if (t[s].is("{")) return matching(t, s);
  if (t[s].is_identifier("if") || t[s].is_identifier("for") || t[s].is_identifier("while")) {
    std::size_t open = s + 1;
    if (open < limit && t[open].is_identifier("constexpr")) ++open;
    if (open >= limit || !t[open].is("(")) return limit;
    const std::size_t then_end = statement_end(t, matching(t, open) + 1, limit);
    if (t[s].is_identifier("if") && then_end + 1 < limit && t[then_end + 1].is_identifier("else"))
      return statement_end(t, then_end + 2, limit);
    return then_end;
  }
  for (std::size_t j = s; j < limit; ++j) {
    if (t[j].is("(") || t[j].is("[") || t[j].is("{")) j = matching(t, j);
    else if (t[j].is(";")) return j;
  }
  return limit;
}

}  // namespace

bool deduces_in_a_constexpr_branch(const std::vector<Token>& t, std::size_t name_token, std::size_t body_open,
                                   std::size_t body_close, std::size_t call, const std::vector<std::string>& own) {
  if (own.empty() || call + 1 >= t.size() || !t[call + 1].is("(") || t[call].text != t[name_token].text) return false;
  if (call > 0 && (t[call - 1].is("::") || t[call - 1].is(".") || t[call - 1].is("->"))) return false;
  const std::size_t params = name_token + 1;
  if (params >= t.size() || !t[params].is("(")) return false;  // a specialisation's own arguments
  // An argument, for a parameter whose type names `own`, that is not that parameter itself.
  const auto declared = pieces(t, params, true), passed = pieces(t, call + 1, false);
  bool expression = false;
  for (std::size_t n = 0; n < declared.size() && n < passed.size() && !expression; ++n) {
    std::size_t end = declared[n].second;
    for (std::size_t m = declared[n].first; m < end; ++m)
      if (t[m].is("=")) end = m;
    if (end <= declared[n].first + 1 || t[end - 1].kind != TokenKind::identifier ||
        !names_one_of(t, declared[n].first, end - 1, own))
      continue;
    const auto [b, e] = passed[n];
    expression = !(e == b + 1 && t[b].text == t[end - 1].text);
  }
  if (!expression) return false;
  // A branch of an `if constexpr` on `own` that holds the call.
  for (std::size_t i = body_open + 1; i + 2 < body_close; ++i) {
    if (!t[i].is_identifier("if") || !t[i + 1].is_identifier("constexpr") || !t[i + 2].is("(")) continue;
    const std::size_t close = matching(t, i + 2);
    if (!names_one_of(t, i + 3, close, own)) continue;
    const std::size_t then_end = statement_end(t, close + 1, body_close);
    if (close < call && call <= then_end) return true;
    if (then_end + 1 < body_close && t[then_end + 1].is_identifier("else") && then_end + 1 < call &&
        call <= statement_end(t, then_end + 2, body_close))
      return true;
  }
  return false;
}

}  // namespace metalcall::msl
