// Device-to-threadgroup copies as asynchronous copies, for the CUDA target (see async_copies.hpp).
#include "msl/passes/async_copies.hpp"

#include "msl/analysis/call_graph.hpp"

namespace metalcall::msl {

namespace {

// `( SPACE [const] T * )` at i: the index one past its `)`, and T's token index; 0 if not.
std::size_t pointer_cast(const std::vector<Token>& t, std::size_t i, const char* space, std::size_t& type) {
  if (i + 4 >= t.size() || !t[i].is("(") || !t[i + 1].is_identifier(space)) return 0;
  std::size_t k = i + 2;
  if (t[k].is_identifier("const")) ++k;
  if (k + 2 >= t.size() || t[k].kind != TokenKind::identifier || !t[k + 1].is("*") || !t[k + 2].is(")")) return 0;
  type = k;
  return k + 3;
}

// The index one past the `)` matching the `(` at i, or 0.
std::size_t past_parenthesis(const std::vector<Token>& t, std::size_t i) {
  if (i >= t.size() || !t[i].is("(")) return 0;
  const std::size_t close = matching(t, i);
  return close < t.size() ? close + 1 : 0;
}

}  // namespace

std::map<std::size_t, std::string> async_copy_edits(const std::vector<Token>& t) {
  std::map<std::size_t, std::string> edits;
  for (std::size_t i = 1; i + 1 < t.size(); ++i) {
    if (!t[i].is("*") || !(t[i - 1].is(";") || t[i - 1].is("{") || t[i - 1].is("}") || t[i - 1].is(")"))) continue;
    std::size_t dst_type = 0, src_type = 0;
    const std::size_t dst_cast_end = pointer_cast(t, i + 1, "threadgroup", dst_type);
    if (!dst_cast_end) continue;
    const std::size_t dst_end = past_parenthesis(t, dst_cast_end);
    if (!dst_end || dst_end + 1 >= t.size() || !t[dst_end].is("=") || !t[dst_end + 1].is("*")) continue;
    const std::size_t src_cast_end = pointer_cast(t, dst_end + 2, "device", src_type);
    if (!src_cast_end || t[src_type].text != t[dst_type].text) continue;
    const std::size_t src_end = past_parenthesis(t, src_cast_end);
    if (!src_end || src_end >= t.size() || !t[src_end].is(";")) continue;
    edits[i] = "metal::mtl_rt::mtl_async_copy(";
    edits[dst_end] = ",";
    edits[dst_end + 1] = "";
    edits[src_end] = ");";
  }
  return edits;
}

}  // namespace metalcall::msl
