// How deep a source may nest (see nesting_limits.hpp). One linear walk.
#include "msl/analysis/nesting_limits.hpp"

#include <string>
#include <vector>

#include "msl/errors/source_errors.hpp"

namespace metalcall::msl {

namespace {

constexpr const char* kRule = "nesting within the compiler's limits";

bool opens(const Token& t) { return t.kind == TokenKind::punct && (t.is("(") || t.is("[") || t.is("{")); }
bool closes(const Token& t) { return t.kind == TokenKind::punct && (t.is(")") || t.is("]") || t.is("}")); }

bool control_with_condition(const Token& t) {
  return t.kind == TokenKind::identifier && (t.is("for") || t.is("while") || t.is("if") || t.is("switch"));
}

// Tokens that may add a level to an expression tree: every punctuator but the openers, the
// statement ends and `::` (a comma in a call or a `>` of a template argument list is counted
// though it nests nothing: the count bounds the depth from above), and `else` (an `else if`
// chain nests).
bool may_nest(const Token& t) {
  if (t.kind == TokenKind::identifier) return t.is("else");
  return t.kind == TokenKind::punct && !t.is("(") && !t.is("[") && !t.is("{") && !t.is("}") && !t.is(";") &&
         !t.is("::");
}

}  // namespace

void check_nesting(const std::vector<Token>& t, const std::string& source) {
  int brackets = 0;
  int statements = 0;    // control statements in a row, each the body of the last
  int conditionals = 0;  // `?` since the statement began
  // Per brace level, what may nest since its statement (or initializer element) began: a
  // block or an initializer inside an expression counts apart, and the expression goes on after.
  std::vector<long> operators = {0};
  std::vector<char> inner;  // the open brackets, innermost last; 'L' for an initializer list's brace
  for (std::size_t i = 0; i < t.size(); ++i) {
    const bool punct = t[i].kind == TokenKind::punct;
    const bool in_list = !inner.empty() && inner.back() == 'L';
    if (punct && (t[i].is(";") || (t[i].is(",") && in_list))) {
      operators.back() = 0;  // a statement or an initializer element ends
    } else if (may_nest(t[i]) && ++operators.back() > kMaxOperators) {
      throw rule_error(source, t[i], "more than " + std::to_string(kMaxOperators) +
                                     " operators in one statement (deeper, the translation verifier's stack would "
                                     "not hold its tree); split it", kRule);
    }
    if (punct && t[i].is("{")) operators.push_back(0);
    if (punct && t[i].is("}") && operators.size() > 1) {
      operators.pop_back();
      // A brace that no expression goes on after (a function's body, a class, a block statement:
      // the next token is a name other than `else`, a brace, a directive or the end) ends what
      // its level counted: 40,000 one-line kernels are no deep tree.
      const Token* next = i + 1 < t.size() ? &t[i + 1] : nullptr;
      if (!next || next->kind == TokenKind::directive || next->is("}") || next->is("{") ||
          (next->kind == TokenKind::identifier && !next->is("else")))
        operators.back() = 0;
    }
    if (opens(t[i])) {
      // A brace after `=`, `(`, `return`, or after `{` or `,` in a list, opens an initializer
      // list (its elements are siblings: a table of 100,000 numbers is no deep tree); any
      // other brace, a block's or `float2{...}`'s, counts its commas.
      const Token* before = i > 0 ? &t[i - 1] : nullptr;
      const bool list = t[i].is("{") && before &&
                        (before->is("=") || before->is("(") || before->is_identifier("return") ||
                         ((before->is("{") || before->is(",")) && in_list));
      inner.push_back(list ? 'L' : t[i].text[0]);
    }
    if (closes(t[i]) && !inner.empty()) inner.pop_back();
    if (opens(t[i]) && ++brackets > kMaxNesting) {
      throw rule_error(source, t[i], "brackets nested deeper than 256 levels (clang, Apple's Metal compiler "
                                     "included, stops there too)", kRule);
    }
    if (closes(t[i]) && brackets > 0) --brackets;
    if (t[i].kind == TokenKind::punct && (t[i].is(";") || t[i].is("{") || t[i].is("}"))) conditionals = 0;
    if (t[i].kind == TokenKind::punct && t[i].is("?") && ++conditionals > kMaxNesting) {
      throw rule_error(source, t[i], "more than 256 conditional operators in one statement; split it", kRule);
    }
    // Where a statement's body starts: after a control statement's `(...)`, or `do` / `else`.
    std::size_t body = t.size();
    if (control_with_condition(t[i]) && i + 1 < t.size() && t[i + 1].is("(")) {
      int depth = 0;
      std::size_t j = i + 1;
      for (; j < t.size(); ++j) {
        if (opens(t[j])) ++depth;
        if (closes(t[j]) && --depth == 0) break;
      }
      body = j + 1;
    } else if (t[i].kind == TokenKind::identifier && (t[i].is("do") || t[i].is("else"))) {
      body = i + 1;
    } else {
      continue;
    }
    if (body >= t.size()) continue;
    const bool else_if = t[i].is("else") && t[body].is_identifier("if");  // a sequence, not nesting
    const bool nested = control_with_condition(t[body]) || t[body].is_identifier("do");
    statements = nested && !else_if ? statements + 1 : 0;
    if (statements >= kMaxNesting) {  // this body is the 257th statement of the nest
      throw rule_error(source, t[body], "statements nested deeper than 256 levels without braces", kRule);
    }
  }
}

}  // namespace metalcall::msl
