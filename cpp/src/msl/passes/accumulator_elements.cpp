// Accumulators named as array elements, for the CUDA target (see accumulator_elements.hpp).
#include "msl/passes/accumulator_elements.hpp"

#include <set>

namespace metalcall::msl {

std::size_t argument_end(const std::vector<Token>& t, std::size_t i) {
  int depth = 0;
  for (; i < t.size(); ++i) {
    if (t[i].is("(") || t[i].is("[") || t[i].is("{")) ++depth;
    else if (t[i].is(")") || t[i].is("]") || t[i].is("}")) {
      if (depth == 0) return i;
      --depth;
    } else if (t[i].is(",") && depth == 0) {
      return i;
    }
  }
  return i;
}

bool is_element(const std::vector<Token>& t, std::size_t b, std::size_t e) {
  if (e - b < 4 || t[b].kind != TokenKind::identifier || !t[b + 1].is("[") || !t[e - 1].is("]")) return false;
  // Never destroyed: a translation may run while the process exits.
  static const auto& changes =
      *new std::set<std::string>{"=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>=", "++", "--", ","};
  int depth = 0;
  for (std::size_t i = b + 1; i < e; ++i) {
    const Token& k = t[i];
    if (k.kind == TokenKind::punct && changes.count(k.text)) return false;
    if (k.kind == TokenKind::identifier && i + 1 < e && t[i + 1].is("(")) return false;  // a call
    if (k.kind == TokenKind::directive || k.kind == TokenKind::string) return false;
    if (k.is("[")) ++depth;
    else if (k.is("]")) --depth;
    if (depth == 0 && i + 1 < e && !t[i + 1].is("[")) return false;  // something after a subscript
  }
  return depth == 0;
}

bool same_tokens(const std::vector<Token>& t, std::size_t b1, std::size_t e1, std::size_t b2, std::size_t e2) {
  if (e1 - b1 != e2 - b2) return false;
  for (std::size_t i = 0; i < e1 - b1; ++i)
    if (t[b1 + i].kind != t[b2 + i].kind || t[b1 + i].text != t[b2 + i].text) return false;
  return true;
}

std::map<std::size_t, std::string> accumulator_element_edits(const std::vector<Token>& t) {
  std::map<std::size_t, std::string> edits;
  for (std::size_t i = 0; i + 1 < t.size(); ++i) {
    if (!t[i].is_identifier("simdgroup_multiply_accumulate") || !t[i + 1].is("(")) continue;
    // Not a member, a declaration's name or a qualified name other than metal::'s.
    if (i > 0 && (t[i - 1].is(".") || t[i - 1].is("->") || t[i - 1].kind == TokenKind::identifier)) continue;
    if (i > 1 && t[i - 1].is("::") && !t[i - 2].is_identifier("metal")) continue;
    std::size_t bounds[5];
    bounds[0] = i + 2;
    bool four = true;
    for (int a = 0; a < 4 && four; ++a) {
      const std::size_t end = argument_end(t, bounds[a]);
      if (end >= t.size() || end == bounds[a] || (a < 3 ? !t[end].is(",") : !t[end].is(")"))) four = false;
      bounds[a + 1] = end + (a < 3 ? 1 : 0);
    }
    if (!four) continue;
    const std::size_t d_end = bounds[1] - 1, c_begin = bounds[3], c_end = bounds[4];
    if (!is_element(t, bounds[0], d_end) || !same_tokens(t, bounds[0], d_end, c_begin, c_end)) continue;
    std::size_t name = i;
    if (i > 1 && t[i - 1].is("::")) {  // metal::simdgroup_multiply_accumulate
      name = i - 2;
      edits[i - 1] = edits[i] = "";
    }
    edits[name] = "metal::mtl_sgm::multiply_accumulate_element";
    edits[i + 1] = "(" + t[bounds[0]].text + ", ";
    for (std::size_t k = c_begin - 1; k < c_end; ++k) edits[k] = "";  // `, X[..]`
  }
  return edits;
}

}  // namespace metalcall::msl
