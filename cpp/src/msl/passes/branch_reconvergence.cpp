// Branch bodies holding a threadgroup barrier, for the CUDA target (see branch_reconvergence.hpp).
#include "msl/passes/branch_reconvergence.hpp"

#include "msl/analysis/call_graph.hpp"  // matching

namespace metalcall::msl {

namespace {

bool punct(const std::vector<Token>& t, std::size_t i, const char* s) {
  return i < t.size() && t[i].kind == TokenKind::punct && t[i].is(s);
}

// The `{` of the body after `if (...)` / `if constexpr (...)` / `else`, or t.size().
std::size_t body_of(const std::vector<Token>& t, std::size_t keyword) {
  if (t[keyword].is_identifier("else")) return punct(t, keyword + 1, "{") ? keyword + 1 : t.size();
  std::size_t open = keyword + 1;
  if (open < t.size() && t[open].is_identifier("constexpr")) ++open;
  if (!punct(t, open, "(")) return t.size();
  const std::size_t close = matching(t, open);
  return punct(t, close + 1, "{") ? close + 1 : t.size();
}

// Whether every lane entering the body [open, close] reaches each of its barriers and its end:
// it has a barrier, each barrier sits at the body's top level or in `for` loops (the
// conditional statements and `?:` that could skip one are refused), and nothing leaves early.
bool rejoinable(const std::vector<Token>& t, std::size_t open, std::size_t close) {
  bool barrier = false;
  for (std::size_t i = open + 1; i < close; ++i) {
    const Token& k = t[i];
    if (k.is_identifier("return") || k.is_identifier("break") || k.is_identifier("continue") ||
        k.is_identifier("goto"))
      return false;
    if (k.is_identifier("threadgroup_barrier")) barrier = true;
  }
  if (!barrier) return false;
  // A barrier inside a nested if/else/while/do/switch or after a `?` is not reached by every lane.
  for (std::size_t i = open + 1; i < close; ++i) {
    const Token& k = t[i];
    const bool conditional = k.is_identifier("if") || k.is_identifier("else") || k.is_identifier("while") ||
                             k.is_identifier("do") || k.is_identifier("switch") || punct(t, i, "?");
    if (!conditional) continue;
    // The statement it governs: up to the matching `}` of its first brace, or its `;`.
    std::size_t end = i + 1;
    while (end < close && !punct(t, end, "{") && !punct(t, end, ";")) {
      end = punct(t, end, "(") || punct(t, end, "[") ? matching(t, end) + 1 : end + 1;
    }
    if (punct(t, end, "{")) end = matching(t, end);
    for (std::size_t j = i; j <= end && j < close; ++j)
      if (t[j].is_identifier("threadgroup_barrier")) return false;
  }
  return true;
}

}  // namespace

std::vector<std::pair<std::size_t, std::size_t>> barrier_branch_bodies(const std::vector<Token>& t) {
  std::vector<std::pair<std::size_t, std::size_t>> out;
  for (std::size_t i = 0; i < t.size(); ++i) {
    if (!t[i].is_identifier("if") && !t[i].is_identifier("else")) continue;
    if (t[i].is_identifier("else") && i + 1 < t.size() && t[i + 1].is_identifier("if")) continue;  // `else if`: the if
    const std::size_t open = body_of(t, i);
    if (open >= t.size()) continue;
    const std::size_t close = matching(t, open);
    if (close < t.size() && rejoinable(t, open, close)) out.emplace_back(open, close);
  }
  return out;
}

}  // namespace metalcall::msl
