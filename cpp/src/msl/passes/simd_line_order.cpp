// The order of one line's SIMD-group rendezvous, for the CPU target (see simd_line_order.hpp).
#include "msl/passes/simd_line_order.hpp"

#include <algorithm>
#include <utility>

#include "msl/analysis/call_graph.hpp"  // matching

namespace metalcall::msl {

namespace {

// The prelude's functions whose last parameter is the call's place (metal_simdgroup.h's
// METALCALL_GROUP_FUNCTIONS, for simd_ and quad_, and the barriers of metal_sync.h).
bool takes_place(const std::string& id) {
  static const auto& group = *new std::set<std::string>{
      "sum", "product", "min", "max", "and", "or", "xor", "prefix_inclusive_sum", "prefix_exclusive_sum",
      "prefix_inclusive_product", "prefix_exclusive_product", "broadcast", "shuffle", "shuffle_up", "shuffle_down",
      "shuffle_xor", "shuffle_rotate_down", "shuffle_rotate_up", "ballot", "active_threads_mask", "all", "any",
      "is_first", "broadcast_first"};
  if (id == "simdgroup_barrier" || id == "threadgroup_barrier") return true;
  if (id.rfind("simd_", 0) == 0) return group.count(id.substr(5)) > 0;
  if (id.rfind("quad_", 0) == 0) return group.count(id.substr(5)) > 0;
  return false;
}

}  // namespace

std::map<std::size_t, std::string> simd_line_order_edits(const std::vector<Token>& t, const std::set<std::string>& framed,
                                                         const std::set<std::string>& framed_functors) {
  // Per line: (the call's `)`, whether it is the prelude's).
  std::map<int, std::vector<std::pair<std::size_t, bool>>> lines;
  // Calls of a framed functor's operator(): `F{s}(`, `F(s)(`, and `name(` of an object `F name`.
  std::set<std::string> objects;
  for (std::size_t j = 0; j + 2 < t.size(); ++j)
    if (t[j].kind == TokenKind::identifier && framed_functors.count(t[j].text) && t[j + 1].kind == TokenKind::identifier &&
        (t[j + 2].is("{") || t[j + 2].is("=") || t[j + 2].is(";")))  // (`F name(` may declare a function)
      objects.insert(t[j + 1].text);
  for (std::size_t j = 0; j + 1 < t.size(); ++j) {
    if (t[j].kind == TokenKind::identifier && framed_functors.count(t[j].text) && (t[j + 1].is("{") || t[j + 1].is("(")) &&
        !(j > 0 && (t[j - 1].is(".") || t[j - 1].is("->") || t[j - 1].is("::")))) {
      const std::size_t made = matching(t, j + 1);  // the temporary's `}` or `)`; its call's `(` next
      if (made + 1 < t.size() && t[made + 1].is("(")) {
        const std::size_t close = matching(t, made + 1);
        if (close < t.size() && t[close].line == t[j].line) lines[t[j].line].emplace_back(close, false);
      }
      continue;
    }
    if (t[j].kind == TokenKind::identifier && objects.count(t[j].text) && t[j + 1].is("(") &&
        !(j > 0 && (t[j - 1].is(".") || t[j - 1].is("->") || t[j - 1].kind == TokenKind::identifier))) {
      const std::size_t close = matching(t, j + 1);
      if (close < t.size() && t[close].line == t[j].line) lines[t[j].line].emplace_back(close, false);
      continue;
    }
    if (t[j].kind != TokenKind::identifier || !t[j + 1].is("(")) continue;
    const bool prelude = takes_place(t[j].text);
    if (!prelude && !framed.count(t[j].text)) continue;
    if (j > 0 && (t[j - 1].is(".") || t[j - 1].is("->"))) continue;
    if (j > 0 && t[j - 1].is("::") && !(j > 1 && t[j - 2].is_identifier("metal") && prelude)) continue;
    // A declaration or definition is no call: `void f(`, `T f(...) {`, `vec<T, 2> f(...) const`.
    if (j > 0 && t[j - 1].kind == TokenKind::identifier && !t[j - 1].is_identifier("return") &&
        !t[j - 1].is_identifier("else") && !t[j - 1].is_identifier("do"))
      continue;
    const std::size_t close = matching(t, j + 1);
    if (close >= t.size() || t[close].line != t[j].line) continue;
    if (close == j + 2 && t[j].text.find("barrier") != std::string::npos) continue;  // its flags come first
    if (close + 1 < t.size() && (t[close + 1].is("{") || t[close + 1].is("->") || t[close + 1].is_identifier("const") ||
                                 t[close + 1].is_identifier("mutable")))
      continue;
    lines[t[j].line].emplace_back(close, prelude);
  }
  std::map<std::size_t, std::string> out;
  for (auto& [line, calls] : lines) {
    if (calls.size() < 2) continue;
    std::sort(calls.begin(), calls.end());
    for (std::size_t k = 0; k < calls.size(); ++k) {
      const auto [close, prelude] = calls[k];
      const bool empty = t[close - 1].is("(");
      out[close] = std::string(empty ? "" : ", ") + (prelude ? "metal::mtl_rt::simd_at" : "metal::mtl_rt::simd_caller") +
                   "(__builtin_LINE(), " + std::to_string(std::min<std::size_t>(k, 14)) + "u)";
    }
  }
  return out;
}

}  // namespace metalcall::msl
