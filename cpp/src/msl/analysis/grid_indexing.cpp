// grid_indexed_buffers(): a token scan of a kernel body for `buffer[gid]` on a path every
// thread takes. Conservative: anything that could skip or move the access gives no answer.
#include "msl/analysis/grid_indexing.hpp"

#include <algorithm>

namespace metalcall::msl {

namespace {

// Tokens that make a body more than straight-line code.
bool branches(const Token& t) {
  static const char* const kWords[] = {"if", "else", "for", "while", "do", "switch", "case", "return",
                                       "goto", "break", "continue", "try", "throw", "co_return", "co_await"};
  if (t.kind == TokenKind::identifier) {
    return std::any_of(std::begin(kWords), std::end(kWords), [&](const char* w) { return t.text == w; });
  }
  // A directive left in the body (#if after preprocessing would be gone; anything else: unsure).
  return t.kind == TokenKind::directive || (t.kind == TokenKind::punct && (t.is("?") || t.is("&&") || t.is("||")));
}

bool modifies(const std::vector<Token>& t, std::size_t i, std::size_t end) {
  static const char* const kAfter[] = {"=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>=", "++", "--"};
  if (i + 1 < end && t[i + 1].kind == TokenKind::punct &&
      std::any_of(std::begin(kAfter), std::end(kAfter), [&](const char* op) { return t[i + 1].text == op; })) {
    return true;
  }
  // ++x, --x, and &x (a pointer to it could change it).
  return i > 0 && t[i - 1].kind == TokenKind::punct && (t[i - 1].is("++") || t[i - 1].is("--") || t[i - 1].is("&"));
}

}  // namespace

std::vector<std::string> grid_indexed_buffers(const std::vector<Token>& t, const ParsedKernel& kernel) {
  std::vector<std::string> out;
  std::string gid;
  for (const auto& p : kernel.params) {
    if (p.info.kind == ParamKind::builtin && p.info.builtin == Builtin::thread_position_in_grid &&
        p.info.builtin_width == 1) {
      gid = p.info.name;
    }
  }
  const std::size_t begin = kernel.body_open + 1, end = kernel.body_close;
  if (gid.empty() || kernel.body_open >= kernel.body_close || end > t.size()) return out;
  for (std::size_t i = begin; i < end; ++i) {
    if (branches(t[i])) return out;
    if (t[i].kind == TokenKind::identifier && t[i].text == gid && modifies(t, i, end)) return out;
  }
  for (const auto& p : kernel.params) {
    if (p.info.kind != ParamKind::buffer) continue;
    bool indexed = false, changed = false;
    for (std::size_t i = begin; i < end; ++i) {
      if (t[i].kind != TokenKind::identifier || t[i].text != p.info.name) continue;
      // A member of something else (s.name, s->name, ns::name) is another entity.
      if (i > begin && t[i - 1].kind == TokenKind::punct && (t[i - 1].is(".") || t[i - 1].is("->") || t[i - 1].is("::"))) {
        continue;
      }
      if (modifies(t, i, end)) changed = true;
      if (i + 3 < end && t[i + 1].is("[") && t[i + 2].kind == TokenKind::identifier && t[i + 2].text == gid &&
          t[i + 3].is("]")) {
        indexed = true;
      }
    }
    if (indexed && !changed) out.push_back(p.info.name);
  }
  return out;
}

}  // namespace metalcall::msl
