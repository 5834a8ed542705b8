// Library calls qualified where the target declares the same function (see library_calls.hpp).
#include "msl/passes/library_calls.hpp"

namespace metalcall::msl {

namespace {

// Words after which `NAME(` is an expression, not a declaration.
bool expression_keyword(const Token& x) {
  return x.is("return") || x.is("else") || x.is("case") || x.is("do") || x.is("co_return") || x.is("throw");
}

}  // namespace

void qualify_library_calls(std::vector<Token>& t, const std::set<std::string>& names) {
  if (names.empty()) return;
  std::set<std::string> declared;
  for (std::size_t i = 1; i + 1 < t.size(); ++i)
    if (t[i].kind == TokenKind::identifier && names.count(t[i].text) && t[i + 1].is("(") &&
        ((t[i - 1].kind == TokenKind::identifier && !expression_keyword(t[i - 1])) || t[i - 1].is(">")))
      declared.insert(t[i].text);
  for (std::size_t i = 0; i + 1 < t.size(); ++i) {
    if (t[i].kind != TokenKind::identifier || !names.count(t[i].text) || declared.count(t[i].text) || !t[i + 1].is("("))
      continue;
    if (i > 0 && (t[i - 1].is(".") || t[i - 1].is("->") || t[i - 1].is("::"))) continue;
    t[i].text = "metal::" + t[i].text;
  }
}

}  // namespace metalcall::msl
