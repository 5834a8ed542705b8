// Checked mode: raw addresses in function bodies rewritten as checked pointers (see
// checked_addresses.hpp).
#include "msl/checked/checked_addresses.hpp"

#include "msl/checked/checked_mode.hpp"
#include "msl/lex/token_text.hpp"

namespace metalcall::msl {

namespace {

// Scopes by their '{': 0 namespace, 1 function body or block, 2 class, 3 an initializer
// outside functions (`constant S s = {&x};`: left alone).
int brace_kind(const std::vector<Token>& t, std::size_t i, const std::vector<int>& open) {
  const int outer = open.empty() ? 0 : open.back();
  if (outer == 3) return 3;
  if (opens_namespace(t, i)) return 0;
  for (std::size_t k = i; k > 0;) {
    --k;
    if (t[k].is(";") || t[k].is("{") || t[k].is("}") || t[k].is(")")) break;
    if (t[k].is_identifier("struct") || t[k].is_identifier("class") || t[k].is_identifier("union")) return 2;
  }
  if (outer != 1 && i > 0 && t[i - 1].is("=")) return 3;
  return 1;
}

// True when the '>' at i closes a template's arguments (`vec<int, 2> &r`): a '<' opens
// before it in the statement, at its bracket level. Else it compares (`q > &t[0]`).
bool closes_template(const std::vector<Token>& t, std::size_t i) {
  int depth = 0;
  for (std::size_t j = i; j-- > 0;) {
    if (t[j].is(")") || t[j].is("]")) {
      ++depth;
    } else if (t[j].is("(") || t[j].is("[")) {
      if (depth-- == 0) return false;
    } else if (t[j].is("{") || t[j].is("}") || t[j].is(";")) {
      return false;
    } else if (depth == 0 && t[j].is("<")) {
      return true;
    }
  }
  return false;
}

// True when the '&' at i takes an address (not `a & b`, not a reference declarator).
bool is_unary(const std::vector<Token>& t, std::size_t i) {
  if (i == 0) return false;
  const Token& p = t[i - 1];
  if (p.is_identifier("return")) return true;
  if (p.is(")")) return i > 1 && t[i - 2].is("*");  // a cast to a pointer: `(device uint*)&p[i]`
  // After '*': `*&x` where that '*' is itself unary, not `thread float* &r` (a reference to a pointer).
  if (p.is("*")) return is_unary(t, i - 1);
  // After '>': a comparison (`q > &t[0]`), not the end of a template's arguments (`vec<int, 2> &r`).
  if (p.is(">")) return !closes_template(t, i - 1);
  // After an operator or a statement's start; not after an operand's end (`]`, a postfix
  // `++`: `i++ & m` is always binary).
  return p.kind == TokenKind::punct && !(p.is("]") || p.is(">>") || p.is("++") || p.is("--") ||
                                         p.is(".") || p.is("->") || p.is("::"));
}

// The innermost bracket open at i (its index), or npos at the statement's level.
std::size_t open_bracket(const std::vector<Token>& t, std::size_t i) {
  int depth = 0;
  for (std::size_t j = i; j-- > 0;) {
    if (t[j].is(")") || t[j].is("]")) {
      ++depth;
    } else if (t[j].is("(") || t[j].is("[")) {
      if (depth-- == 0) return j;
    } else if (t[j].is("{") || t[j].is("}") || t[j].is(";")) {
      return std::string::npos;
    }
  }
  return std::string::npos;
}

// Whether the token at i stands in the template argument list of a function template
// (`apply<…, here, …>`), at that list's own level of parentheses and brackets.
bool in_template_arguments(const std::vector<Token>& t, std::size_t i, const std::set<std::string>& templates) {
  int depth = 0;
  for (std::size_t j = i; j-- > 0;) {
    if (t[j].is(")") || t[j].is("]")) {
      ++depth;
    } else if (t[j].is("(") || t[j].is("[")) {
      if (depth-- == 0) return false;
    } else if (t[j].is("<") && depth == 0) {
      return j > 0 && t[j - 1].kind == TokenKind::identifier && templates.count(t[j - 1].text);
    } else if (t[j].is(";") || t[j].is("{") || t[j].is("}")) {
      return false;
    }
  }
  return false;
}

bool starts_name(const Token& tok) {
  static const char* const kNot[] = {"operator", "sizeof", "alignof", "new", "delete", "const", "volatile",
                                     "static_cast", "reinterpret_cast", "const_cast", "as_type", "decltype",
                                     "typename", "template", "return", "thread", "device", "constant", "threadgroup"};
  if (tok.kind != TokenKind::identifier) return false;
  for (const char* k : kNot)
    if (tok.text == k) return false;
  return true;
}

// The ']' matching the '[' at i, or npos (also for a comma at its top level: `t[a, b]`).
std::size_t subscript_end(const std::vector<Token>& t, std::size_t i) {
  int depth = 0;
  for (std::size_t j = i; j < t.size(); ++j) {
    if (t[j].is("[") || t[j].is("(") || t[j].is("{")) ++depth;
    else if (t[j].is(")") || t[j].is("}")) --depth;
    else if (t[j].is("]") && --depth == 0) return j;
    else if (depth == 1 && t[j].is(",")) return std::string::npos;
    else if (t[j].is(";")) return std::string::npos;
  }
  return std::string::npos;
}

// The ')' matching the '(' at i, or npos.
std::size_t call_end(const std::vector<Token>& t, std::size_t i) {
  int depth = 0;
  for (std::size_t j = i; j < t.size(); ++j) {
    if (t[j].is("(") || t[j].is("[") || t[j].is("{")) ++depth;
    else if ((t[j].is(")") || t[j].is("]") || t[j].is("}")) && --depth == 0) return t[j].is(")") ? j : std::string::npos;
    else if (t[j].is(";")) return std::string::npos;
  }
  return std::string::npos;
}

// The last token of the operand of a unary `*` starting at k: a name and its `.m`, `->m`,
// `[…]` and calls (`*p`, `*s.rows[i]`, `*f(x)`), or a parenthesized expression (`*(p + 1)`);
// npos for another form.
std::size_t dereferenced_end(const std::vector<Token>& t, std::size_t k) {
  if (k >= t.size()) return std::string::npos;
  if (t[k].is("(")) return call_end(t, k);
  if (!starts_name(t[k])) return std::string::npos;
  while (k + 1 < t.size()) {
    const Token& n = t[k + 1];
    if ((n.is(".") || n.is("->")) && k + 2 < t.size() && t[k + 2].kind == TokenKind::identifier) {
      k += 2;
    } else if (n.is("[") || n.is("(")) {
      const std::size_t end = n.is("[") ? subscript_end(t, k + 1) : call_end(t, k + 1);
      if (end == std::string::npos) return std::string::npos;
      k = end;
    } else {
      break;
    }
  }
  return k;
}

// True when `this` at i is used as a pointer value (`auto p = this;`, `f(this)`, `return this;`,
// `(this)[k]`): not `this->m`, `*this`, a lambda's capture, a named cast's operand (implementation
// rules allow only CRTP's `static_cast<const thread D*>(this)->f()`), nor sizeof's.
bool this_as_pointer(const std::vector<Token>& t, std::size_t i) {
  if (i == 0 || i + 1 >= t.size()) return false;
  const Token& prev = t[i - 1];
  const Token& next = t[i + 1];
  if (next.is("->") || prev.is("*")) return false;
  const std::size_t bracket = open_bracket(t, i);
  if (bracket != std::string::npos && t[bracket].is("[") && (prev.is("[") || prev.is(",")) &&
      (next.is("]") || next.is(",")))
    return false;
  if (bracket != std::string::npos && bracket > 0 && t[bracket].is("(") &&
      (t[bracket - 1].is_identifier("sizeof") || t[bracket - 1].is_identifier("alignof")))
    return false;
  if (prev.is("(") && next.is(")") && i >= 2 && t[i - 2].is(">")) {
    int depth = 0;
    for (std::size_t k = i - 2; k > 0; --k) {
      if (t[k].is(">")) ++depth;
      else if (t[k].is(">>")) depth += 2;
      else if (t[k].is("<") && --depth == 0) {
        const Token& c = t[k - 1];
        if (c.is_identifier("static_cast") || c.is_identifier("reinterpret_cast") || c.is_identifier("const_cast") ||
            c.is_identifier("dynamic_cast"))
          return false;
        break;
      }
    }
  }
  return true;
}

// `&(*p).m`, `&(*this).a[0]`, `&(*p)->m` (the unary '*' at k, after one '('): a member of what p
// points to, which the parenthesized operand's rewrite takes as `&p->m` (a raw pointer before
// 2026-12-05: `(&(*this).a[0])[k]` wrote anywhere).
bool member_of_dereference(const std::vector<Token>& t, std::size_t k, std::size_t parens) {
  const std::size_t end = dereferenced_end(t, k + 1);
  return parens == 1 && end != std::string::npos && end + 2 < t.size() && t[end + 1].is(")") &&
         (t[end + 2].is(".") || t[end + 2].is("->"));
}

}  // namespace

AddressRewrites find_address_rewrites(const std::vector<Token>& t, const std::set<std::size_t>& handled,
                                      const std::set<std::string>& function_templates) {
  AddressRewrites out;
  std::vector<int> open;
  for (std::size_t i = 0; i + 1 < t.size(); ++i) {
    if (t[i].is("{")) {
      open.push_back(brace_kind(t, i, open));
      continue;
    }
    if (t[i].is("}")) {
      if (!open.empty()) open.pop_back();
      continue;
    }
    // `this` as a pointer value: a checked pointer to the object, this_address(*this) (one
    // element, or the Buffer it lies in). A plain pointer before 2026-12-05: `auto p = this;
    // p[k]`, `(this)[k]`, `f(this)` into a deduced `T*` reached memory beside the object.
    if (t[i].is_identifier("this") && !open.empty() && open.back() == 1 && this_as_pointer(t, i)) {
      out.replace[i] = "metal::mtl_rt::this_address(*this)";
      continue;
    }
    if (!t[i].is("&") || open.empty() || open.back() != 1 || handled.count(i) || !is_unary(t, i)) continue;
    const std::size_t bracket = open_bracket(t, i);
    if (bracket != std::string::npos && t[bracket].is("[")) continue;  // a lambda's capture (`[=, &x]`)
    // A function template's argument (`apply<&twice>`, `both<0, &f, &g>`): a function's address,
    // no memory's.
    if (in_template_arguments(t, i, function_templates)) continue;
    // (An argument a function template deduces its T from, `f(&x)` for `template <class T> void
    // f(T p)`, is the checked pointer too: before 2026-12-03 it stayed raw, so that `thread T* p`
    // deduced T from it, and T was a plain pointer there, `p[k]` unchecked.)
    // The operand: a name, then `.m`, `->m`, `[…]` and calls (`&f()[i]`, `&s.row(j)[i]`: an
    // element of what they return), in parentheses or not (`&(x)`, `&(t[i])`). A call's result
    // itself (`&s.at(j)`, `&f(v)`: a reference whose bounds only its callee knows) is
    // variable_address's: the Buffer or threadgroup memory it lies in, else one element (a
    // plain pointer before 2026-12-03, which `(&f(v))[k]` walked anywhere).
    bool call_last = false;
    std::size_t k = i + 1, parens = 0;
    while (k < t.size() && t[k].is("(")) ++k, ++parens;
    if (k < t.size() && t[k].is("*") && !member_of_dereference(t, k, parens)) {
      // `&*p`, `&(*p)`, `&*(p + 1)`: the pointer itself, written deref_address(p) (a checked
      // pointer or array keeps its bounds; anything else is `&*p` as C++ takes it).
      const std::size_t end = dereferenced_end(t, k + 1);
      if (end == std::string::npos || end + 1 + parens >= t.size()) continue;
      bool closed = true;
      for (std::size_t p = 1; p <= parens; ++p) closed = closed && t[end + p].is(")");
      const Token& after = t[end + 1 + parens];
      if (!closed || after.is("(") || after.is("::") || after.is("<") || after.is("++") || after.is("--") ||
          after.is("=") || after.is(".") || after.is("->") || after.is("["))
        continue;
      for (std::size_t p = 1; p <= parens; ++p) out.replace[i + p] = out.replace[end + p] = "";
      if (end == k + 1 && t[end].is_identifier("this")) {  // `&*this`, `&(*this)`: as `this` itself
        out.replace[i] = "metal::mtl_rt::this_address(";
      } else {
        out.replace[i] = "metal::mtl_rt::deref_address(";
        out.replace[k] = "";
      }
      out.before[end + 1] += ")";
      continue;
    }
    std::vector<std::pair<std::size_t, std::size_t>> subscripts;  // the trailing ones: '[' and ']'
    // From the operand's first part at k: its members, subscripts and calls (k moves to the last).
    auto walk = [&] {
      bool ok = true;
      while (ok && k + 1 < t.size()) {
        const Token& n = t[k + 1];
        if ((n.is(".") || n.is("->")) && k + 2 < t.size() && t[k + 2].kind == TokenKind::identifier) {
          std::vector<int> swz;
          if (is_swizzle(t[k + 2].text, &swz)) ok = false;  // a vector's components: no address to take
          subscripts.clear();
          k += 2;
          call_last = false;
        } else if (n.is("[")) {
          const std::size_t end = subscript_end(t, k + 1);
          if (end == std::string::npos || end == k + 2) ok = false;  // `t[]`, `t[a, b]`
          else subscripts.emplace_back(k + 1, end);
          k = end;
          call_last = false;
        } else if (n.is("(") && t[k].kind == TokenKind::identifier) {
          const std::size_t end = call_end(t, k + 1);
          if (end == std::string::npos) ok = false;
          subscripts.clear();
          k = end;
          call_last = true;
        } else {
          break;
        }
      }
      return ok;
    };
    bool ok = k < t.size() && starts_name(t[k]) && walk() && k + 1 + parens < t.size();
    for (std::size_t p = 1; ok && p <= parens; ++p) ok = t[k + p].is(")");
    if (!ok) {
      // `&(v + 1)[0]`, `&(c ? a : b)`: a parenthesized expression and its members and subscripts
      // (a raw pointer before 2026-12-03, which `(&(v + 1)[0])[k]` walked anywhere).
      if (parens == 0) continue;
      k = call_end(t, i + 1);
      parens = 0;
      subscripts.clear();
      call_last = false;
      if (k == std::string::npos || !walk() || k + 1 >= t.size()) continue;
      const Token& next = t[k + 1];  // not a cast's type (`&(float&)x`)
      if (next.kind != TokenKind::punct || next.is("(") || next.is("{")) continue;
    }
    if ((call_last && !subscripts.empty()) || k + 1 + parens >= t.size()) continue;
    const Token& after = t[k + 1 + parens];
    // (`float a, &r = a;`: a reference declarator, not an address.)
    if (after.is("(") || after.is("::") || after.is("<") || after.is("++") || after.is("--") || after.is("=") ||
        after.is(".") || after.is("->") || after.is("["))
      continue;
    // The parentheses go: `&(t[i])` is element_address(t, i).
    for (std::size_t p = 1; p <= parens; ++p) out.replace[i + p] = out.replace[k + p] = "";
    if (subscripts.empty()) {
      out.replace[i] = "metal::mtl_rt::variable_address(";
      out.before[k + 1] += ")";
      continue;
    }
    out.replace[i] = "metal::mtl_rt::element_address(";
    for (std::size_t s = 0; s < subscripts.size(); ++s) {
      out.replace[subscripts[s].first] = ", ";
      out.replace[subscripts[s].second] = s + 1 == subscripts.size() ? ")" : "";
    }
  }
  return out;
}

std::map<std::size_t, std::string> array_arguments(const std::vector<Token>& t, std::set<std::string> names,
                                                   const std::set<std::size_t>& literals) {
  // `threadgroup T name[N]…;`: the name before the first '[' of the declaration.
  for (std::size_t i = 0; i < t.size(); ++i) {
    if (!t[i].is_identifier("threadgroup")) continue;
    for (std::size_t j = i + 1; j + 1 < t.size(); ++j) {
      if (t[j].is("*") || t[j].is("&") || t[j].is(";") || t[j].is("(") || t[j].is(")") || t[j].is("=") ||
          t[j].is(",") || t[j].is("{"))
        break;
      if (t[j].kind == TokenKind::identifier && t[j + 1].is("[") && !(j + 2 < t.size() && t[j + 2].is("["))) {
        names.insert(t[j].text);
        break;
      }
    }
  }
  static const auto& not_calls = *new std::set<std::string>{"sizeof", "alignof", "decltype", "static_assert", "if",
                                                            "while", "for", "switch", "return", "noexcept", "alignas"};
  std::map<std::size_t, std::string> before;
  for (std::size_t i = 1; i + 1 < t.size(); ++i) {
    if (t[i].kind != TokenKind::identifier || !names.count(t[i].text)) continue;
    if (!(t[i - 1].is("(") || t[i - 1].is(",")) || !(t[i + 1].is(",") || t[i + 1].is(")"))) continue;
    const std::size_t open = open_bracket(t, i);
    if (open == std::string::npos || open == 0 || !t[open].is("(")) continue;
    const Token& callee = t[open - 1];
    if (!((callee.kind == TokenKind::identifier && !not_calls.count(callee.text)) || callee.is(">"))) continue;
    before[i] += "metal::mtl_rt::array_arg(";
    before[i + 1] += ")";
  }
  // `c ? t : 0`, `c ? 0 : t` (the literal an int_literal): the array as the checked pointer it
  // decays to, which the literal converts to as a null one (else both became raw pointers).
  for (std::size_t lit : literals) {
    std::size_t name = std::string::npos;
    if (lit >= 3 && t[lit - 1].is(":") && t[lit - 3].is("?")) {
      name = lit - 2;
    } else if (lit >= 1 && lit + 3 < t.size() && t[lit - 1].is("?") && t[lit + 1].is(":")) {
      const Token& end = t[lit + 3];
      if (end.is(";") || end.is(")") || end.is(",") || end.is("]") || end.is("}")) name = lit + 2;
    }
    if (name == std::string::npos || t[name].kind != TokenKind::identifier || !names.count(t[name].text)) continue;
    before[name] += "metal::mtl_rt::branch_pointer(";
    before[name + 1] = ")" + before[name + 1];
  }
  return before;
}

bool is_pointer_cast(const std::vector<Token>& t, std::size_t i, std::size_t star) {
  if (i < 2 || star + 2 >= t.size()) return false;
  if (t[i - 1].is("<")) {
    const Token& c = t[i - 2];
    return (c.is_identifier("static_cast") || c.is_identifier("reinterpret_cast") || c.is_identifier("const_cast")) &&
           t[star + 1].is(">") && t[star + 2].is("(");
  }
  // `(T*)x`: not a parameter list (`void f(thread float*)`, `sizeof(thread float*)`), and an
  // operand follows.
  if (!t[i - 1].is("(") || !t[star + 1].is(")")) return false;
  const Token& before = t[i - 2];
  if (before.kind == TokenKind::identifier && !before.is_identifier("return")) return false;
  const Token& next = t[star + 2];
  return next.kind == TokenKind::identifier || next.kind == TokenKind::number || next.is("&") || next.is("(") ||
         next.is("*") || next.is("::");
}

std::map<std::size_t, std::string> pointer_specialization_twins(const std::vector<Token>& t) {
  std::map<std::size_t, std::string> out;
  std::set<std::string> done;
  for (std::size_t i = 0; i + 10 < t.size(); ++i) {
    if (!t[i].is_identifier("template") || !t[i + 1].is("<") ||
        !(t[i + 2].is_identifier("typename") || t[i + 2].is_identifier("class")) ||
        t[i + 3].kind != TokenKind::identifier || !t[i + 4].is(">") ||
        !(t[i + 5].is_identifier("struct") || t[i + 5].is_identifier("class")) ||
        t[i + 6].kind != TokenKind::identifier || !t[i + 7].is("<"))
      continue;
    const std::string& param = t[i + 3].text;
    const std::string& name = t[i + 6].text;
    // The argument: qualifiers, an address space, the parameter, one '*'.
    std::string cv;
    bool has_param = false, has_star = false, ok = true;
    std::size_t j = i + 8;
    for (; j < t.size() && !t[j].is(">") && ok; ++j) {
      if (t[j].is_identifier("const") || t[j].is_identifier("volatile")) {
        if (cv.find(t[j].text) == std::string::npos) cv += t[j].text + " ";
      } else if (t[j].is_identifier("device") || t[j].is_identifier("thread") || t[j].is_identifier("threadgroup")) {
      } else if (t[j].is_identifier("constant")) {
        if (cv.find("const") == std::string::npos) cv += "const ";
      } else if (t[j].is_identifier(param.c_str()) && !has_param && !has_star) {
        has_param = true;
      } else if (t[j].is("*") && has_param && !has_star) {
        has_star = true;
      } else {
        ok = false;
      }
    }
    if (!ok || !has_star || j + 1 >= t.size() || !(t[j + 1].is("{") || t[j + 1].is(":"))) continue;
    std::size_t open = j + 1;
    while (open < t.size() && !t[open].is("{") && !t[open].is(";")) ++open;
    if (open >= t.size() || !t[open].is("{")) continue;
    int depth = 0;
    std::size_t close = open;
    for (; close < t.size(); ++close) {
      if (t[close].is("{")) ++depth;
      else if (t[close].is("}") && --depth == 0) break;
    }
    if (close + 1 >= t.size() || !t[close + 1].is(";") || !done.insert(name + "<" + cv + ">").second) continue;
    // After the `;` (the next token may start a left-out address-space duplicate).
    const std::string base = name + "<" + cv + param + "*>";
    out[close + 1] = "; template <typename " + param + "> struct " + name + "<metal::mtl_checked<" + cv + param +
                     ">> : " + base + " {}; template <typename " + param + ", typename A_> struct " + name +
                     "<metal::mtl_checked_array_arg<" + cv + param + ", A_>> : " + base + " {};";
  }
  return out;
}

}  // namespace metalcall::msl
