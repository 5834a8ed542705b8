// Reserved names declared as variables (reserved_names.hpp).
#include "msl/analysis/reserved_names.hpp"

#include "msl/analysis/stdlib_names.hpp"

namespace metalcall::msl {

namespace {

bool is_reserved(const std::string& id) {
  return id.size() > 1 && id[0] == '_' && (id[1] == '_' || (id[1] >= 'A' && id[1] <= 'Z'));
}

// A token that can end the type of a declaration (`int __i0`, `uint3 __id`, `T* __p`, `vec<T, 2> __v`).
bool ends_type(const Token& tok) {
  static const auto& not_types = *new std::set<std::string>{
      "return", "case", "goto", "else", "do", "sizeof", "alignof", "typename", "class", "struct", "union",
      "enum", "namespace", "using", "operator", "throw", "new", "delete", "co_return", "co_yield", "co_await"};
  if (tok.kind == TokenKind::identifier) return !not_types.count(tok.text);
  return tok.is("*") || tok.is("&") || tok.is("&&") || tok.is(">");
}

// What may follow a declared name: an initialiser, the end of the declaration, an array's
// bound or an attribute (`[[thread_position_in_threadgroup]]`), a braced initialiser, a bit
// field or a range-for's colon.
bool follows_declarator(const Token& tok) {
  return tok.is("=") || tok.is(";") || tok.is(",") || tok.is(")") || tok.is("[") || tok.is("{") || tok.is(":");
}

}  // namespace

std::set<std::string> declared_reserved_variables(const std::vector<Token>& t) {
  std::set<std::string> out;
  for (std::size_t i = 1; i + 1 < t.size(); ++i) {
    const Token& tok = t[i];
    if (tok.kind != TokenKind::identifier || !is_reserved(tok.text) || out.count(tok.text)) continue;
    if (!ends_type(t[i - 1]) || !follows_declarator(t[i + 1])) continue;
    // The standard library's and Apple's own names (`__HAVE_BFLOAT__`, `__metal_*`) stay as they are.
    if (prelude_reserved_names().count(tok.text) || stdlib_names().count(tok.text) ||
        prelude_identifiers().count(tok.text) || tok.text.rfind("__metal_", 0) == 0 || tok.text.rfind("__METAL_", 0) == 0)
      continue;
    out.insert(tok.text);
  }
  return out;
}

}  // namespace metalcall::msl
