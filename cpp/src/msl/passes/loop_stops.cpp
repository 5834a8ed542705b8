// A stop check on every loop (see loop_stops.hpp).
#include "msl/passes/loop_stops.hpp"

#include <limits>
#include <set>

#include "msl/analysis/call_graph.hpp"  // matching
#include "msl/analysis/statements.hpp"
#include "msl/passes/loop_strips.hpp"

namespace metalcall::msl {

namespace {

using statements::close_of;
using statements::kNone;
using statements::punct;

bool is_pragma(const Token& k) {
  if (k.kind != TokenKind::directive) return false;
  const std::size_t p = k.text.find_first_not_of("# \t");
  return p != std::string::npos && k.text.compare(p, 6, "pragma") == 0;
}

// One loop of the source, as loop_stop_edits sees it.
struct Loop {
  std::size_t keyword;     // `for`, `while` or `do`
  std::size_t body;        // the body's first token (past pragmas)
  std::size_t body_end;    // its last token
  bool edited;             // gets a check (not handed to the prelude)
};

// True when the `{` at `open` opens a block statement of the function it is in: the body of
// an if/for/while/switch/do/else, or a block after a statement or a label. Not a lambda's or
// a local class's body, nor an initializer list.
bool statement_block(const std::vector<Token>& t, std::size_t open) {
  if (open == 0) return false;
  const Token& prev = t[open - 1];
  if (prev.kind == TokenKind::directive) return true;
  if (prev.is_identifier("else") || prev.is_identifier("do")) return true;
  if (prev.kind != TokenKind::punct) return false;
  if (prev.is(";") || prev.is("{") || prev.is("}")) return true;
  if (prev.is(":")) return open >= 2 && (t[open - 2].kind == TokenKind::identifier || t[open - 2].kind == TokenKind::number ||
                                         t[open - 2].kind == TokenKind::character);  // a label or a case
  if (!prev.is(")")) return false;
  // The `(` of that `)`: a statement's header when an if/for/while/switch keyword precedes it.
  std::size_t depth = 0, k = open - 1;
  for (;; --k) {
    if (t[k].kind == TokenKind::punct && t[k].is(")")) ++depth;
    else if (t[k].kind == TokenKind::punct && t[k].is("(") && --depth == 0) break;
    if (k == 0) return false;
  }
  if (k == 0) return false;
  const Token& head = t[k - 1];
  if (head.is_identifier("constexpr")) return k >= 2 && t[k - 2].is_identifier("if");
  return head.is_identifier("if") || head.is_identifier("for") || head.is_identifier("while") ||
         head.is_identifier("switch");
}

// True when the token at `inner` lies in `outer`'s body within the same function: every
// bracket between them is a block statement, so the inner loop sees the outer loop's locals.
bool in_same_function_body(const std::vector<Token>& t, const Loop& outer, std::size_t inner) {
  if (inner < outer.body || inner > outer.body_end) return false;
  std::vector<std::size_t> open;  // brackets opened after the body's first token, still open at `inner`
  for (std::size_t k = outer.body + 1; k < inner; ++k) {
    if (t[k].kind != TokenKind::punct) continue;
    if (t[k].is("(") || t[k].is("[") || t[k].is("{")) open.push_back(k);
    else if ((t[k].is(")") || t[k].is("]") || t[k].is("}")) && !open.empty()) open.pop_back();
  }
  for (std::size_t k : open)
    if (!t[k].is("{") || !statement_block(t, k)) return false;
  return true;
}

}  // namespace

std::map<std::size_t, std::string> loop_stop_edits(const std::vector<Token>& t,
                                                   const std::function<bool(std::size_t)>& touched) {
  // Per token: the text that ends statements before it (closing braces), then the text
  // that opens new ones, each in source order; joined at the end.
  std::map<std::size_t, std::string> closing, opening;
  std::set<std::size_t> do_whiles;  // the `while` of each do-while: not a loop of its own
  // The loops whose bodies may still hold later ones, innermost last: a loop whose body has
  // ended holds none (searching every loop so far made 16,000 loops in a row quadratic).
  std::vector<Loop> loops;
  for (std::size_t i = 0; i < t.size(); ++i) {
    const Token& k = t[i];
    const bool is_do = k.is_identifier("do");
    if (!is_do && !k.is_identifier("for") && !k.is_identifier("while")) continue;
    if (do_whiles.count(i)) continue;
    if (is_strip_loop(t, i)) continue;  // a strip's inner loop: its outer loop checks between strips
    std::size_t body = i + 1;
    if (!is_do) {
      const std::size_t close = close_of(t, i + 1);
      if (close == kNone) continue;
      body = close + 1;
    }
    const std::size_t body_first = body;  // an unbraced body's braces go before its pragmas
    while (body < t.size() && t[body].kind == TokenKind::directive) ++body;
    const std::size_t body_end = statement_end(t, body);
    const std::size_t end = is_do ? statement_end(t, i) : body_end;
    if (body_end == kNone || end == kNone || end + 1 >= t.size()) continue;
    if (is_do) do_whiles.insert(body_end + 1);
    const bool edited = !touched(i) && !touched(body);  // else handed whole to the prelude (product nests)
    // The innermost loop whose body holds this one, when in the same function: the nest's
    // counter it adds its iterations to (CUDA), so that a nest of short loops checks as often
    // as one long loop does.
    while (!loops.empty() && loops.back().body_end < i) loops.pop_back();
    const Loop* outer = nullptr;
    for (auto it = loops.rbegin(); it != loops.rend() && !outer; ++it)
      if (i >= it->body && i <= it->body_end) outer = &*it;
    const bool nested = outer && outer->edited && in_same_function_body(t, *outer, i);
    const std::string outer_name = nested ? "__metalcall_loop_" + std::to_string(outer->keyword) : "";
    loops.push_back(Loop{i, body, body_end, edited});
    if (!edited) continue;
    std::size_t start = i;
    while (start > 0 && is_pragma(t[start - 1])) --start;  // a pragma must stay right before its loop
    const std::string name = "__metalcall_loop_" + std::to_string(i);
    opening[start] += "{ __METALCALL_LOOP_STATE(" + name + ") ";
    // A loop that ends where an outer one does is inside it: its closing text goes first.
    const std::string exit = (nested ? " __METALCALL_LOOP_NESTED(" + outer_name + ", " + name + ")" : "") + " }";
    // A loop in strips checks once per strip (loop_strips.hpp, metal_stop.h).
    // A CPU grid-stride loop that short_run bounds checks only when its flag says it may run long.
    const char* check = strip_of(t, body) < t.size() ? " __METALCALL_STRIP_CHECK("
                        : is_short_loop(t, i)        ? " __METALCALL_LOOP_CHECK_SHORT("
                                                     : " __METALCALL_LOOP_CHECK(";
    if (punct(t, body, "{")) {
      opening[body + 1] += check + name + ") ";
      closing[end + 1] = exit + closing[end + 1];
    } else {
      opening[body_first] += std::string("{") + check + name + ") ";
      if (is_do) {
        closing[body_end + 1] = " }" + closing[body_end + 1];
        closing[end + 1] = exit + closing[end + 1];
      } else {
        closing[end + 1] = " }" + exit + closing[end + 1];
      }
    }
  }
  std::map<std::size_t, std::string> edits;
  for (const auto& [index, text] : closing) edits[index] = text;
  for (const auto& [index, text] : opening) edits[index] += text;
  // A directive must start its line: text written before one ends with a line break.
  for (auto& [index, text] : edits)
    if (t[index].kind == TokenKind::directive) text += "\n";
  return edits;
}

}  // namespace metalcall::msl
