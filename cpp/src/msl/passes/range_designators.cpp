// GNU range designators of local arrays, rewritten as a zero initializer and a loop
// (see range_designators.hpp).
#include "msl/passes/range_designators.hpp"

namespace metalcall::msl {

namespace {

// The index of the bracket that closes the one at `open`, or t.size().
std::size_t closing(const std::vector<Token>& t, std::size_t open) {
  int depth = 0;
  for (std::size_t i = open; i < t.size(); ++i) {
    if (t[i].kind != TokenKind::punct) continue;
    if (t[i].is("(") || t[i].is("[") || t[i].is("{")) ++depth;
    if (t[i].is(")") || t[i].is("]") || t[i].is("}")) {
      if (--depth == 0) return i;
    }
  }
  return t.size();
}

bool punct(const std::vector<Token>& t, std::size_t i, const char* s) {
  return i < t.size() && t[i].kind == TokenKind::punct && t[i].is(s);
}

}  // namespace

std::map<std::size_t, std::map<std::size_t, std::string>> range_designator_rewrites(const std::vector<Token>& t) {
  std::map<std::size_t, std::map<std::size_t, std::string>> out;
  for (std::size_t open = 2; open + 1 < t.size(); ++open) {
    // `NAME [...] = {` then `[`: the declarator's name is before its first bracket.
    if (!punct(t, open, "{") || !punct(t, open - 1, "=") || !punct(t, open - 2, "]") || !punct(t, open + 1, "["))
      continue;
    std::size_t first = open - 2;  // walk back over `[N]` and `[N][M]`
    while (punct(t, first, "]")) {
      int depth = 0;
      std::size_t k = first;
      for (; k > 0; --k) {
        if (punct(t, k, "]")) ++depth;
        if (punct(t, k, "[") && --depth == 0) break;
      }
      if (k == 0) break;
      first = k - 1;
    }
    if (t[first].kind != TokenKind::identifier) continue;
    const std::size_t lb = open + 1, rb = closing(t, lb), close = closing(t, open);
    if (rb >= t.size() || close >= t.size() || !punct(t, rb + 1, "=") || !punct(t, close + 1, ";")) continue;
    std::size_t dots = t.size();
    for (std::size_t k = lb + 1; k < rb; k = punct(t, k, "(") || punct(t, k, "[") ? closing(t, k) + 1 : k + 1)
      if (punct(t, k, "...")) dots = k;
    if (dots == t.size()) continue;
    bool single = true;  // no second designator or element after VALUE
    for (std::size_t k = rb + 2; k < close; k = punct(t, k, "(") || punct(t, k, "[") || punct(t, k, "{") ? closing(t, k) + 1 : k + 1)
      if (punct(t, k, ",")) single = false;
    if (!single) continue;
    const std::string& name = t[first].text;
    auto& edits = out[open];
    edits[open] = "{}; for (int mtl_range_i = (";
    edits[lb] = "";
    edits[dots] = "); mtl_range_i <= (";
    edits[rb] = "); ++mtl_range_i) " + name + "[mtl_range_i]";
    edits[close] = "";
  }
  return out;
}

}  // namespace metalcall::msl
