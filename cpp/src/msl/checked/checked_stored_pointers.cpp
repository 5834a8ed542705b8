// Checked mode's stored pointers (see checked_stored_pointers.hpp).
#include "msl/checked/checked_stored_pointers.hpp"

#include <set>

#include "msl/analysis/call_graph.hpp"
#include "msl/checked/checked_mode.hpp"

namespace metalcall::msl {

namespace {

constexpr std::size_t npos = std::string::npos;

bool is_space(const Token& x) {
  return x.is_identifier("device") || x.is_identifier("constant") || x.is_identifier("threadgroup") ||
         x.is_identifier("thread");
}
bool is_cv(const Token& x) { return x.is_identifier("const") || x.is_identifier("volatile"); }
bool is_restrict(const Token& x) {
  return x.is_identifier("restrict") || x.is_identifier("__restrict") || x.is_identifier("__restrict__");
}

// The type parameters of the `template <typename T, class U, int N>` list whose '<' is at open
// ({T, U}), and the '>' closing it (in *close).
std::set<std::string> type_parameters(const std::vector<Token>& t, std::size_t open, std::size_t* close) {
  std::set<std::string> names;
  int depth = 0;
  std::size_t j = open;
  for (; j + 1 < t.size(); ++j) {
    if (t[j].is("<") || t[j].is("(")) ++depth;
    else if (t[j].is(">") || t[j].is(")")) --depth;
    else if (t[j].is(">>")) depth -= 2;
    if (depth <= 0) break;
    if (depth == 1 && (t[j].is_identifier("typename") || t[j].is_identifier("class")) &&
        t[j + 1].kind == TokenKind::identifier && j + 2 < t.size() &&
        (t[j + 2].is(",") || t[j + 2].is(">") || t[j + 2].is(">>") || t[j + 2].is("=")))
      names.insert(t[j + 1].text);
  }
  *close = j;
  return names;
}

// The last token of the declaration that starts at i (a function's body's '}', a class's ';').
std::size_t declaration_end(const std::vector<Token>& t, std::size_t i) {
  int depth = 0;
  for (std::size_t j = i; j < t.size(); ++j) {
    if (t[j].is("(") || t[j].is("[") || t[j].is("{")) {
      ++depth;
    } else if (t[j].is(")") || t[j].is("]") || t[j].is("}")) {
      if (--depth == 0 && t[j].is("}")) return j + 1 < t.size() && t[j + 1].is(";") ? j + 1 : j;
      if (depth < 0) return j;
    } else if (depth == 0 && t[j].is(";")) {
      return j;
    }
  }
  return t.size();
}

// The first token of the type whose pointer's '*' is at star (back over names, `::`, cv and
// space words, template arguments), and whether an address space is among them.
std::size_t type_start(const std::vector<Token>& t, std::size_t star, bool& space) {
  static const auto& keywords = *new std::set<std::string>{
      "return", "case", "else", "do", "typedef", "using", "static", "constexpr", "sizeof", "operator", "new", "delete",
      "throw", "if", "while", "for", "switch", "struct", "class", "union", "enum", "public", "private", "protected"};
  space = false;
  std::size_t k = star;
  int angle = 0;
  while (k > 0) {
    const Token& b = t[k - 1];
    if (b.is(">") || b.is(">>")) {
      angle += b.is(">") ? 1 : 2;
    } else if (b.is("<")) {
      if (angle == 0) break;
      --angle;
    } else if (angle == 0) {
      if (b.kind == TokenKind::identifier) {
        if (keywords.count(b.text)) break;
        space = space || is_space(b);
      } else if (!b.is("::")) {
        break;
      }
    } else if (b.is(";") || b.is("{") || b.is("}")) {
      break;
    }
    --k;
  }
  return k;
}

std::string spelled(const std::vector<Token>& t, std::size_t a, std::size_t b) {
  std::string out;
  for (std::size_t k = a; k < b; ++k) {
    // not the `thread` spell_template_pointer_spaces wrote (where the next token stands)
    if (t[k].is_identifier("thread") && k + 1 < b && t[k + 1].line == t[k].line && t[k + 1].column == t[k].column) continue;
    out += (out.empty() || t[k].is("::") || t[k - 1].is("::") || t[k].is("*") || t[k].is(">") || t[k - 1].is("<") ? "" : " ") +
           t[k].text;
  }
  return out;
}

// The token after the first declarator of the declaration whose type's pointer '*' is at star
// (`device float* const p = f(a, b)`: the ',' or ';' after it), or npos where it is no
// declarator (a parameter, a cast, a template's argument).
std::size_t after_first_declarator(const std::vector<Token>& t, std::size_t start, std::size_t star) {
  if (start > 0) {
    const Token& b = t[start - 1];
    const bool statement = b.is(";") || b.is("{") || b.is("}") || b.is(":") || b.kind == TokenKind::directive ||
                           (b.is("(") && start > 1 && t[start - 2].is_identifier("for"));
    if (!statement) return npos;
  }
  std::size_t j = star + 1;
  while (j < t.size() && (is_cv(t[j]) || is_restrict(t[j]))) ++j;
  if (j + 1 >= t.size() || t[j].kind != TokenKind::identifier) return npos;
  ++j;
  if (t[j].is("=")) {
    int depth = 0;
    for (++j; j < t.size(); ++j) {
      if (t[j].is("(") || t[j].is("[") || t[j].is("{")) ++depth;
      else if (t[j].is(")") || t[j].is("]") || t[j].is("}")) --depth;
      else if (depth == 0 && (t[j].is(",") || t[j].is(";"))) break;
      else if (depth == 0 && t[j].is("<")) j = initializer_template_close(t, j, t.size());  // `f<P, Q>(x)`
      if (depth < 0) return npos;
    }
  }
  return j < t.size() && (t[j].is(",") || t[j].is(";")) ? j : npos;
}

// After the ',' at comma: another declarator that is an array (`float *q, t[4];`: checked
// mode's array walk splits such a statement, checked_mode.cpp).
bool declares_array_later(const std::vector<Token>& t, std::size_t comma) {
  int depth = 0;
  for (std::size_t j = comma + 1; j + 1 < t.size(); ++j) {
    if (t[j].is("(") || t[j].is("{")) ++depth;
    else if (t[j].is(")") || t[j].is("}")) --depth;
    else if (depth == 0 && t[j].is(";")) return false;
    if (depth < 0) return false;
    if (depth == 0 && t[j].kind == TokenKind::identifier && t[j + 1].is("[") &&
        (t[j - 1].is(",") || t[j - 1].is("*") || t[j - 1].is_identifier("const")))
      return true;
  }
  return false;
}

}  // namespace

namespace {

// The names of aliases whose target names an address space and no pointer (`using F = device
// float;`, `typedef constant S C;`): `F* p` is a pointer whose space the alias carries.
std::set<std::string> spaced_alias_names(const std::vector<Token>& t) {
  std::set<std::string> names;
  for (std::size_t i = 0; i + 3 < t.size(); ++i) {
    std::size_t a = 0, b = 0, name = 0;
    if (t[i].is_identifier("using") && t[i + 1].kind == TokenKind::identifier && t[i + 2].is("=")) {
      a = i + 3;
      for (b = a; b < t.size() && !t[b].is(";") && !t[b].is("{"); ++b) {}
      name = i + 1;
    } else if (t[i].is_identifier("typedef")) {
      a = i + 1;
      for (b = a; b < t.size() && !t[b].is(";") && !t[b].is("{") && !t[b].is("("); ++b) {}
      if (b <= a + 1 || t[b - 1].kind != TokenKind::identifier) continue;
      name = --b;
    } else {
      continue;
    }
    if (b >= t.size()) continue;
    bool space = false, star = false;
    for (std::size_t k = a; k < b; ++k) {
      space = space || is_space(t[k]);
      star = star || t[k].is("*") || t[k].is("&");
    }
    if (space && !star) names.insert(t[name].text);
  }
  return names;
}

// The token after the type whose first token is at k, when that type is a pointer's pointee
// (`decltype(x)*`, `typename X::type*`, `X::type*`, `W<T>*`): the '*'; else npos. The type's
// tokens: names, `::`, balanced template arguments and decltype's parentheses.
std::size_t pointee_star(const std::vector<Token>& t, std::size_t k) {
  std::size_t j = k;
  if (j < t.size() && t[j].is_identifier("typename")) ++j;
  bool qualified = false, templated = false;
  for (; j < t.size(); ++j) {
    const Token& x = t[j];
    if (x.is_identifier("decltype") && j + 1 < t.size() && t[j + 1].is("(")) {
      j = matching(t, j + 1);
      qualified = true;
    } else if (x.is("<") && j > k) {
      int depth = 0;
      for (; j < t.size(); ++j) {
        if (t[j].is("(") || t[j].is("[")) j = matching(t, j);
        else if (t[j].is("<")) ++depth;
        else if (t[j].is(">") && --depth == 0) break;
        else if (t[j].is(">>") && (depth -= 2) <= 0) break;
        else if (t[j].is(";") || t[j].is("{") || t[j].is("}")) return std::string::npos;
      }
      if (j >= t.size() || depth < 0) return std::string::npos;
      templated = true;
    } else if (x.is("::")) {
      qualified = true;
    } else if (x.kind != TokenKind::identifier || is_space(x)) {
      break;
    }
  }
  while (j < t.size() && is_cv(t[j])) ++j;
  if (j >= t.size() || !t[j].is("*") || !(qualified || templated || t[k].is_identifier("typename"))) return std::string::npos;
  return j;
}

// A pointer type at [k, star] stands where a type does: a declaration's start, a cast's
// parentheses or a template's arguments; not an expression's product (`x = S::k * y`).
bool in_type_position(const std::vector<Token>& t, std::size_t k, std::size_t star) {
  if (t[k].is_identifier("typename") || (t[k].is_identifier("decltype"))) return true;
  if (k == 0) return true;
  const Token& b = t[k - 1];
  std::size_t n = star + 1;
  while (n < t.size() && (is_cv(t[n]) || is_restrict(t[n]))) ++n;
  if (n >= t.size()) return false;
  if (b.is(";") || b.is("{") || b.is("}") || b.is_identifier("static") || b.is_identifier("constexpr"))
    return t[n].kind == TokenKind::identifier && n + 1 < t.size() &&
           (t[n + 1].is("=") || t[n + 1].is(";") || t[n + 1].is(",") || t[n + 1].is("[") || t[n + 1].is("{") ||
            t[n + 1].is("("));  // a function's result (`X::type* get(…)`)
  if (b.is("(") || b.is(",")) {  // a cast's type or a parameter (`for (X::type* p = …`, `f(W<T>* p)`)
    if (t[n].is(")")) return b.is("(");
    return t[n].kind == TokenKind::identifier && n + 1 < t.size() &&
           (t[n + 1].is(",") || t[n + 1].is(")") || t[n + 1].is("=") || t[n + 1].is("["));
  }
  if (b.is("<")) return t[n].is(">") || t[n].is(">>") || t[n].is(",");
  return false;
}

}  // namespace

void spell_template_pointer_spaces(std::vector<Token>& t) {
  // Each template's type parameters, in its declaration only (a matrix named T elsewhere stays a value).
  std::set<std::size_t> pointees;
  for (std::size_t i = 0; i + 1 < t.size(); ++i) {
    if (!t[i].is_identifier("template") || !t[i + 1].is("<")) continue;
    std::size_t close = 0;
    const std::set<std::string> params = type_parameters(t, i + 1, &close);
    if (params.empty()) continue;
    const std::size_t end = declaration_end(t, close + 1);
    for (std::size_t k = close + 1; k < end && k + 1 < t.size(); ++k)
      if (t[k].kind == TokenKind::identifier && params.count(t[k].text)) pointees.insert(k);
  }
  // `auto* p = out;` and `const auto* q = &x;`: `auto` deduces the space with the type in MSL
  // (device float), so `thread` is written before it and the rewrite makes the checked pointer
  // its initializer's (a host compiler error before 2026-12-03: `auto*` took no checked pointer).
  for (std::size_t k = 0; k + 1 < t.size(); ++k)
    if (t[k].is_identifier("auto")) pointees.insert(k);
  // Pointees whose space a type carries rather than the tokens before the '*' (each a plain
  // pointer before 2026-12-03, which a checked pointer converted to): `decltype(x)* p`,
  // `typename X::type* p`, `X::type* p` of `using type = device float;`, `W<T>* p`, and an
  // alias of a type with its space (`using F = device float; F* p`).
  const std::set<std::string> spaced_aliases = spaced_alias_names(t);
  std::set<std::size_t> types;  // first tokens of such pointees
  for (std::size_t k = 0; k + 1 < t.size(); ++k) {
    const Token& x = t[k];
    if (x.kind != TokenKind::identifier || is_space(x) || is_cv(x)) continue;
    if (k > 0 && (t[k - 1].is("::") || t[k - 1].is(".") || t[k - 1].is("->") || t[k - 1].is_identifier("typename")))
      continue;  // inside a longer name
    std::size_t star = std::string::npos;
    if (spaced_aliases.count(x.text)) {
      std::size_t j = k + 1;
      while (j < t.size() && is_cv(t[j])) ++j;
      if (j < t.size() && t[j].is("*") && !(j + 1 < t.size() && t[j + 1].is("::"))) star = j;
    } else if (!x.is_identifier("operator") && !x.is_identifier("return") && !x.is_identifier("sizeof")) {
      star = pointee_star(t, k);
    }
    if (star != std::string::npos && (spaced_aliases.count(x.text) || in_type_position(t, k, star))) types.insert(k);
  }
  if (pointees.empty() && types.empty()) return;
  std::vector<Token> out;
  out.reserve(t.size() + pointees.size() + types.size());
  for (std::size_t i = 0; i < t.size(); ++i) {
    const Token& x = t[i];
    std::size_t star = i + 1;
    while (star < t.size() && is_cv(t[star])) ++star;
    bool spelled_space = false;
    std::size_t k = i;
    while (k > 0 && is_cv(t[k - 1])) --k;
    if (k > 0) {
      const Token& b = t[k - 1];
      spelled_space = is_space(b) || b.is("::") || b.is(".") || b.is("->") || b.is_identifier("typename") ||
                      b.is_identifier("struct") || b.is_identifier("class");
    }
    if (types.count(i) && !(k > 0 && is_space(t[k - 1])))
      out.push_back(Token{TokenKind::identifier, "thread", x.line, x.column});
    else if (pointees.count(i) && star < t.size() && t[star].is("*") && !spelled_space)
      out.push_back(Token{TokenKind::identifier, "thread", x.line, x.column});
    out.push_back(x);
  }
  t = std::move(out);
}

RefusedPointer refused_stored_pointer(const std::vector<Token>& t) {
  RefusedPointer refused;
  for (std::size_t star = 1; star < t.size(); ++star) {
    if (!t[star].is("*")) continue;
    bool space = false;
    const std::size_t start = type_start(t, star, space);
    if (!space || start == star) continue;
    std::size_t j = star + 1;
    while (j < t.size() && (is_cv(t[j]) || is_space(t[j]) || is_restrict(t[j]))) ++j;
    if (j < t.size() && t[j].is("*")) {
      refused.at = star;
      refused.message = "checked mode cannot bounds-check a pointer to a pointer ('" + spelled(t, start, j + 1) +
                        "'): a pointer copied through it would have no bounds; index an array of pointers instead, "
                        "or compile it without checked=True";
      return refused;
    }
    // `auto*& r = p;` and `auto* f(…) {`: a reference or a function's result deduced as a pointer,
    // which the host compiler cannot deduce from a checked pointer (a raw error before 2026-12-03).
    bool deduced = false;
    for (std::size_t k = start; k < star; ++k) deduced = deduced || t[k].is_identifier("auto");
    const bool reference = j < t.size() && t[j].is("&");
    const bool call = j + 1 < t.size() && t[j].kind == TokenKind::identifier && t[j + 1].is("(");
    std::size_t body = call ? matching(t, j + 1) + 1 : npos;
    while (body < t.size() && is_cv(t[body])) ++body;
    const bool result = body < t.size() && t[body].is("{");
    if (deduced && (reference || result)) {
      refused.at = star;
      refused.message = std::string("checked mode cannot deduce ") +
                        (reference ? "a reference to a pointer" : "a function's pointer result") + " from '" +
                        spelled(t, start, star + 1) + "': write the pointer's type ('device float*" +
                        (reference ? "& r'" : " f(…)'") + "), or compile it without checked=True";
      return refused;
    }
    const std::size_t comma = after_first_declarator(t, start, star);
    if (comma == npos || !t[comma].is(",") || declares_array_later(t, comma)) continue;
    std::size_t name = comma + 1;
    while (name < t.size() && (t[name].is("*") || t[name].is("&") || is_cv(t[name]))) ++name;
    refused.at = name < t.size() ? name : comma;
    refused.message = "checked mode cannot bounds-check '" + (name < t.size() ? t[name].text : std::string(",")) +
                      "', declared after the pointer '" + spelled(t, start, star + 1) +
                      "' in one statement: declare it in a statement of its own, or compile it without checked=True";
    return refused;
  }
  return refused;
}

}  // namespace metalcall::msl
