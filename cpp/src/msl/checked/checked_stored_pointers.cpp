// Checked mode's stored pointers (see checked_stored_pointers.hpp).
#include "msl/checked/checked_stored_pointers.hpp"

#include <set>

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
  for (std::size_t k = a; k < b; ++k)
    out += (out.empty() || t[k].is("::") || t[k - 1].is("::") || t[k].is("*") || t[k].is(">") || t[k - 1].is("<") ? "" : " ") +
           t[k].text;
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
  if (pointees.empty()) return;
  std::vector<Token> out;
  out.reserve(t.size() + pointees.size());
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
    if (pointees.count(i) && star < t.size() && t[star].is("*") && !spelled_space)
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
