// The source's code that may call a SIMD-group function (see simd_callers.hpp).
#include "msl/analysis/simd_callers.hpp"

#include <utility>

#include "msl/analysis/call_graph.hpp"  // matching
#include "msl/analysis/operands.hpp"    // opening_bracket
#include "msl/analysis/statements.hpp"  // kNone

namespace metalcall::msl {

namespace {

using statements::kNone;

bool is_qualifier(const Token& k) {
  return k.is_identifier("const") || k.is_identifier("volatile") || k.is_identifier("thread") ||
         k.is_identifier("device") || k.is_identifier("threadgroup") || k.is_identifier("constant") ||
         k.is_identifier("noexcept") || k.is_identifier("override") || k.is_identifier("final") ||
         k.is_identifier("mutable") || k.is_identifier("constexpr");
}

bool is_statement_keyword(const Token& k) {
  return k.is_identifier("if") || k.is_identifier("for") || k.is_identifier("while") || k.is_identifier("switch") ||
         k.is_identifier("catch") || k.is_identifier("return") || k.is_identifier("sizeof") ||
         k.is_identifier("alignof") || k.is_identifier("decltype") || k.is_identifier("static_assert");
}

// The first token before `{` at j that is not a qualifier or a trailing return type (`-> T`).
std::size_t before_qualifiers(const std::vector<Token>& t, std::size_t j) {
  std::size_t k = j;
  while (k > 0 && is_qualifier(t[k - 1])) --k;
  // `-> T`: back to the arrow when one comes before any `)` or statement boundary.
  for (std::size_t m = k; m > 0; --m) {
    const Token& b = t[m - 1];
    if (b.is("->")) {
      k = m - 1;
      while (k > 0 && is_qualifier(t[k - 1])) --k;
      break;
    }
    if (b.is(")") || b.is(";") || b.is("{") || b.is("}")) break;
  }
  return k;
}

}  // namespace

bool lambda_body(const std::vector<Token>& t, std::size_t j, std::size_t* intro) {
  if (j == 0 || j >= t.size() || !t[j].is("{")) return false;
  const std::size_t k = before_qualifiers(t, j);
  if (k == 0) return false;
  std::size_t close = k - 1;  // the introducer's `]` or the parameters' `)`
  if (t[close].is(")")) {
    const std::size_t open = opening_bracket(t, close);
    if (open == kNone || open == 0) return false;
    close = open - 1;
  }
  if (!t[close].is("]")) return false;
  const std::size_t square = opening_bracket(t, close);
  if (square == kNone) return false;
  // `a[3] {…}` or `f()[i] {`: a subscript, not a lambda's introducer.
  if (square > 0) {
    const Token& b = t[square - 1];
    if ((b.kind == TokenKind::identifier && !b.is_identifier("return")) || b.is("]") || b.is(")")) return false;
  }
  if (intro) *intro = close;
  return true;
}

SimdCallers::SimdCallers(const std::vector<Token>& t, std::function<bool(const std::string&)> is_simd)
    : t_(t), is_simd_(std::move(is_simd)) {
  find_bodies();
  for (bool changed = true; changed;) {
    changed = false;
    for (std::size_t b = 0; b < bodies_.size(); ++b) {
      CallableBody& body = bodies_[b];
      if (body.reaches || !mentions(body.open + 1, body.close)) continue;
      body.reaches = changed = true;
      if (!body.name.empty()) names_.insert(body.name);
      if (!functor_of_[b].empty() && types_.insert(functor_of_[b]).second) add_objects(functor_of_[b]);
    }
  }
}

void SimdCallers::find_bodies() {
  for (std::size_t j = 1; j < t_.size(); ++j) {
    if (!t_[j].is("{")) continue;
    CallableBody body;
    body.open = j;
    body.close = matching(t_, j);
    if (body.close >= t_.size()) continue;
    std::string functor;
    std::size_t intro = kNone;
    if (lambda_body(t_, j, &intro)) {
      body.intro = intro;
      body.params = t_[intro + 1].is("(") ? intro + 1 : kNone;
      for (std::size_t k = body.params == kNone ? intro + 1 : matching(t_, body.params) + 1; k < j; ++k)
        if (t_[k].is_identifier("constexpr")) body.is_constexpr = true;
      const std::size_t square = opening_bracket(t_, intro);
      if (square != kNone && square >= 2 && t_[square - 1].is("=") && t_[square - 2].kind == TokenKind::identifier)
        body.name = t_[square - 2].text;
    } else {
      const std::size_t k = before_qualifiers(t_, j);
      if (k == 0 || !t_[k - 1].is(")")) continue;
      const std::size_t open = opening_bracket(t_, k - 1);
      if (open == kNone || open == 0) continue;
      std::size_t name = open - 1;
      if (t_[name].is(")") && name >= 2 && t_[name - 1].is("(") && t_[name - 2].is_identifier("operator")) {
        name -= 2;  // operator()
      } else if (t_[name].kind != TokenKind::identifier || is_statement_keyword(t_[name])) {
        continue;
      } else if (name > 0 && (t_[name - 1].is(",") || t_[name - 1].is(":"))) {
        continue;  // a constructor's member initializer `: x(a) {`
      } else {
        std::size_t k = name;  // `operator const T() {`: a conversion function, which takes no parameter
        while (k > 0 && (t_[k - 1].is_identifier("const") || t_[k - 1].is_identifier("volatile"))) --k;
        if (k > 0 && t_[k - 1].is_identifier("operator")) continue;
      }
      body.params = open;
      body.intro = kNone;
      if (!t_[name].is_identifier("operator")) body.name = t_[name].text;
      // What its declaration says: kernel (an entry point), constexpr.
      for (std::size_t b = name; b-- > 0;) {
        const Token& d = t_[b];
        if (d.is(";") || d.is("{") || d.is("}") || d.kind == TokenKind::directive) break;
        if (d.is_identifier("kernel") || d.is_identifier("vertex") || d.is_identifier("fragment")) body.kernel = true;
        if (d.is_identifier("constexpr") || d.is_identifier("consteval")) body.is_constexpr = true;
      }
      // An operator()'s struct: `struct NAME … {` around it.
      if (t_[name].is_identifier("operator")) {
        std::size_t depth = 0, b = name;
        while (b-- > 0 && !(t_[b].is("{") && depth == 0))
          if (t_[b].is("}")) ++depth;
          else if (t_[b].is("{")) --depth;
        for (std::size_t s = b; b != kNone && s-- > 0 && !t_[s].is(";") && !t_[s].is("{") && !t_[s].is("}");)
          if ((t_[s].is_identifier("struct") || t_[s].is_identifier("class")) && t_[s + 1].kind == TokenKind::identifier)
            functor = t_[s + 1].text;
      }
      for (std::size_t q = matching(t_, open) + 1; q < j; ++q)
        if (t_[q].is_identifier("constexpr")) body.is_constexpr = true;
    }
    bodies_.push_back(std::move(body));
    functor_of_.push_back(std::move(functor));
  }
}

// The objects of a functor type: `T name`, `const T& name`, `thread T* name` … and the type itself.
void SimdCallers::add_objects(const std::string& type) {
  for (std::size_t k = 0; k + 1 < t_.size(); ++k) {
    if (!t_[k].is_identifier(type.c_str())) continue;
    std::size_t m = k + 1;
    while (m < t_.size() && (t_[m].is("&") || t_[m].is("*") || t_[m].is("&&") || is_qualifier(t_[m]))) ++m;
    if (m + 1 >= t_.size() || t_[m].kind != TokenKind::identifier) continue;
    const Token& after = t_[m + 1];
    if (after.is(";") || after.is("=") || after.is("{") || after.is("(") || after.is(",") || after.is(")") ||
        after.is("["))
      names_.insert(t_[m].text);
  }
}

bool SimdCallers::calls(std::size_t j) const {
  const Token& k = t_[j];
  if (k.kind != TokenKind::identifier) return false;
  if (is_simd_(k.text) || types_.count(k.text)) return true;
  return names_.count(k.text) && j + 1 < t_.size() && (t_[j + 1].is("(") || t_[j + 1].is("<"));
}

bool SimdCallers::mentions(std::size_t begin, std::size_t end) const {
  for (std::size_t j = begin; j < end && j < t_.size(); ++j)
    if (calls(j)) return true;
  return false;
}

}  // namespace metalcall::msl
