// Render-stage functions left out (render_functions.hpp).
#include "msl/passes/render_functions.hpp"

#include <utility>

namespace metalcall::msl {

namespace {

bool is_stage(const Token& tok) {
  return tok.is_identifier("vertex") || tok.is_identifier("fragment") || tok.is_identifier("mesh") ||
         tok.is_identifier("object");
}

std::size_t matching(const std::vector<Token>& t, std::size_t open) {
  const std::string o = t[open].text;
  const std::string c = o == "(" ? ")" : o == "[" ? "]" : "}";
  int depth = 0;
  for (std::size_t j = open; j < t.size(); ++j) {
    if (t[j].text == o && t[j].kind == TokenKind::punct) ++depth;
    else if (t[j].text == c && t[j].kind == TokenKind::punct && --depth == 0) return j;
  }
  return t.size();
}

struct Range {
  std::size_t first, last;
};

// The render-stage functions: `[[attrs]] vertex TYPE NAME(PARAMS) [[attrs]] { BODY }` (or `;`),
// or with the stage as an attribute, `[[vertex]] TYPE NAME(...)`, at the start of a declaration.
std::vector<Range> render_functions(const std::vector<Token>& t) {
  std::vector<Range> out;
  for (std::size_t i = 0; i + 2 < t.size(); ++i) {
    const bool attribute = t[i].is("[") && t[i + 1].is("[") && is_stage(t[i + 2]) && i + 4 < t.size() &&
                           t[i + 3].is("]") && t[i + 4].is("]");
    if (!attribute && !(is_stage(t[i]) && t[i + 1].kind == TokenKind::identifier)) continue;
    // At the start of a declaration, after any attribute groups (`[[early_fragment_tests]] fragment`).
    std::size_t first = i;
    while (first >= 2 && t[first - 1].is("]") && t[first - 2].is("]")) {
      std::size_t open = first - 2;
      int depth = 0;
      for (; open > 0; --open) {
        if (t[open].is("]")) ++depth;
        else if (t[open].is("[") && --depth == 0) break;
      }
      if (open == 0 || !t[open - 1].is("[")) break;
      first = open - 1;
    }
    if (first > 0 && !(t[first - 1].is(";") || t[first - 1].is("}") || t[first - 1].is("{") ||
                       t[first - 1].kind == TokenKind::directive))
      continue;
    // TYPE NAME( : the parameters open before any ; { = of another kind of declaration.
    std::size_t open = (attribute ? i + 5 : i + 1);
    while (open < t.size() && !t[open].is("(") && !t[open].is(";") && !t[open].is("{") && !t[open].is("=")) ++open;
    if (open >= t.size() || !t[open].is("(") || open == 0 || t[open - 1].kind != TokenKind::identifier) continue;
    std::size_t end = matching(t, open);
    while (end < t.size() && !t[end].is("{") && !t[end].is(";")) ++end;
    if (end >= t.size()) continue;
    if (t[end].is("{")) end = matching(t, end);
    if (end >= t.size()) continue;
    out.push_back({first, end});
    i = end;
  }
  return out;
}

}  // namespace

void drop_render_functions(std::vector<Token>& t) {
  const std::vector<Range> ranges = render_functions(t);
  if (ranges.empty()) return;
  std::vector<Token> kept;
  kept.reserve(t.size());
  std::size_t next = 0;
  for (const Range& r : ranges) {
    for (std::size_t j = next; j < r.first; ++j) kept.push_back(std::move(t[j]));
    next = r.last + 1;
  }
  for (std::size_t j = next; j < t.size(); ++j) kept.push_back(std::move(t[j]));
  t = std::move(kept);
}

}  // namespace metalcall::msl
