// What a declaration says of an object's address space (see declared_spaces.hpp).
#include "msl/passes/declared_spaces.hpp"

#include <set>

namespace metalcall::msl::declared_spaces {

// The prelude's numbers: metal_address_space.h.
int space_of(const Token& tok) {
  if (tok.kind != TokenKind::identifier) return -1;
  if (tok.text == "thread") return 0;
  if (tok.text == "device") return 1;
  if (tok.text == "threadgroup") return 2;
  if (tok.text == "constant") return 3;
  return -1;
}

bool is_keyword(const std::string& s) {
  static const auto& k = *new std::set<std::string>{"if", "for", "while", "switch", "return", "sizeof", "do", "else",
                                          "case", "new", "delete", "throw", "alignof", "decltype", "static_assert"};
  return k.count(s) != 0;
}

// True when token k can end a type before a declared name (`float x`, `T* x`, `vec<T,2> x`).
bool ends_type(const Token& tok) {
  return (tok.kind == TokenKind::identifier && !is_keyword(tok.text)) || tok.is("*") || tok.is("&") || tok.is(">");
}

// The address space written in the declaration of the object named at `use` (a reference,
// pointer, array or value declared `device S& a`, `threadgroup T tg[N]`, `device T* p`), and
// whether it is a pointer; -1 when the declaration names none (a member, a local: left untagged).
int written_space(const std::vector<Token>& t, std::size_t use, bool* pointer) {
  const std::string& name = t[use].text;
  for (std::size_t k = use; k-- > 1;) {
    if (t[k].text != name || t[k].kind != TokenKind::identifier || !ends_type(t[k - 1]) || k + 1 >= t.size()) continue;
    if ((t[k - 1].is("&") || t[k - 1].is("*")) && (k < 2 || !ends_type(t[k - 2]) || t[k - 2].is("&")))
      continue;  // `f(&a, …)`, `rd(*p)`: a use
    const Token& next = t[k + 1];
    if (!(next.is("[") || next.is("=") || next.is(";") || next.is(",") || next.is(")"))) continue;
    int depth = 0, space = -1;
    // An array (not an [[attribute]]): subscripts reach into it as into a pointer.
    *pointer = next.is("[") && !(k + 2 < t.size() && t[k + 2].is("["));
    for (std::size_t j = k; j-- > 0;) {
      if (t[j].is(")") || t[j].is("]")) ++depth;
      else if (t[j].is("(") || t[j].is("[")) {
        if (--depth < 0) break;
      } else if (depth == 0 && (t[j].is(";") || t[j].is("{") || t[j].is("}") || t[j].is(","))) break;
      if (t[j].is("*")) *pointer = true;
      if (t[j].is_identifier("auto")) return -1;
      if (space_of(t[j]) >= 0) space = space_of(t[j]);
    }
    return space;
  }
  return -1;
}

// Whether the object named at `use` is declared as a thread-local value: a local variable or
// array, or a parameter by value, whose declaration names no address space and is no pointer,
// reference, `auto`, `static` or `constexpr` (program-scope objects and class members are not:
// their space is `constant`'s or the object's). `&t` of `float t;` was passed untagged, so
// `ld(&t)` called `ld(device float*)` beside `ld(thread float*)` until 2026-12-05.
bool thread_value(const std::vector<Token>& t, std::size_t use, const std::vector<ClassBody>& classes) {
  const std::string& name = t[use].text;
  for (std::size_t k = use; k-- > 1;) {
    if (t[k].text != name || t[k].kind != TokenKind::identifier || !ends_type(t[k - 1]) || k + 1 >= t.size()) continue;
    const Token& next = t[k + 1];
    if (!(next.is("[") || next.is("=") || next.is(";") || next.is(",") || next.is(")") || next.is("{"))) continue;
    if ((t[k - 1].is("&") || t[k - 1].is("*")) && (k < 2 || !ends_type(t[k - 2]) || t[k - 2].is("&"))) continue;  // `f(&a, …)`: a use
    if (t[k - 1].is("&") || t[k - 1].is("*")) return false;  // a pointer or reference
    int depth = 0;
    std::size_t j = k;
    bool parameter = false;
    while (j-- > 0) {
      if (t[j].is(")") || t[j].is("]") || t[j].is(">")) ++depth;
      else if (t[j].is("[") || t[j].is("<")) --depth;
      else if (t[j].is("(")) {
        if (--depth < 0) {
          parameter = true;
          break;
        }
      } else if (depth == 0 && (t[j].is(";") || t[j].is("{") || t[j].is("}") || t[j].is(","))) {
        parameter = t[j].is(",") && depth == 0;
        break;
      }
      if (depth == 0 && (space_of(t[j]) >= 0 || t[j].is("*") || t[j].is("&") || t[j].is("&&") ||
                         t[j].is_identifier("auto") || t[j].is_identifier("static") || t[j].is_identifier("constexpr")))
        return false;
    }
    if (parameter) {  // a piece of a list: a parameter only if the list is a function's
      int d = 0;
      for (; j < t.size() && j > 0; --j) {
        if (t[j].is(")")) ++d;
        else if (t[j].is("(") && d-- == 0) break;
      }
      if (j == 0 || t[j - 1].kind != TokenKind::identifier) return false;
      return true;  // a function's (or a `for`'s, an `if`'s) own variable
    }
    // A statement in a function's body: some brace encloses it, and not a class's or a namespace's.
    int braces = 0;
    for (std::size_t m = j + 1; m-- > 0;) {
      if (t[m].is("}")) ++braces;
      else if (t[m].is("{") && braces-- == 0) {
        for (const ClassBody& c : classes)
          if (c.open == m) return false;
        if (m >= 2 && t[m - 2].is_identifier("namespace")) return false;
        if (m >= 1 && t[m - 1].is_identifier("namespace")) return false;
        return true;
      }
    }
    return false;
  }
  return false;
}

}  // namespace metalcall::msl::declared_spaces
