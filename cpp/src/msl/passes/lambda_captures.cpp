// Empty lambda introducers (lambda_captures.hpp).
#include "msl/passes/lambda_captures.hpp"

namespace metalcall::msl {

std::vector<std::size_t> empty_lambda_introducers(const std::vector<Token>& t) {
  std::vector<std::size_t> found;
  for (std::size_t i = 1; i + 2 < t.size(); ++i) {
    if (!t[i].is("[") || !t[i + 1].is("]") || !(t[i + 2].is("(") || t[i + 2].is("{"))) continue;
    // After a name, a literal, `)`, `]` or `>` the `[` subscripts or declares an array (`a[] {…}`);
    // `return []…` and `co_return` are lambdas.
    const Token& b = t[i - 1];
    const bool operand_before = (b.kind == TokenKind::identifier && !b.is_identifier("return")) ||
                                b.kind == TokenKind::number || b.kind == TokenKind::string || b.is(")") ||
                                b.is("]") || b.is(">");
    if (!operand_before) found.push_back(i + 1);
  }
  return found;
}

}  // namespace metalcall::msl
