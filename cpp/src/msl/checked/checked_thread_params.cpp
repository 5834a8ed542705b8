// Checked mode: `thread T*` parameters and the calls that pass to template ones (see
// checked_thread_params.hpp; metal_checked.h has thread_arg).
#include "msl/checked/checked_thread_params.hpp"

#include "msl/checked/checked_mode.hpp"
#include "msl/lex/token_text.hpp"
#include "msl/parse/function_declarators.hpp"

#include <optional>

namespace metalcall::msl {

namespace {

constexpr std::size_t npos = std::string::npos;

// The names a `template <…>` list starting at the '<' at i declares (`typename T`, `int N`).
void template_parameter_names(const std::vector<Token>& t, std::size_t i, std::set<std::string>& names) {
  int depth = 0;
  bool in_default = false;
  for (std::size_t j = i; j < t.size(); ++j) {
    if (t[j].is("<") || t[j].is("(")) ++depth;
    else if (t[j].is(">") || t[j].is(")")) {
      if (--depth == 0) return;
    } else if (t[j].is(">>")) {
      if ((depth -= 2) <= 0) return;
    }
    if (depth == 1 && t[j].is(",")) in_default = false;
    if (depth == 1 && t[j].is("=")) in_default = true;
    const Token& n = t[j + 1];
    if (depth == 1 && !in_default && t[j].kind == TokenKind::identifier &&
        (n.is(",") || n.is(">") || n.is(">>") || n.is("=")))
      names.insert(t[j].text);
  }
}

// The template parameter names of the declaration whose parameter list opens at `open`
// (`template <typename T> T f(…)`: {T}); none for a function that is no template.
std::set<std::string> own_template_parameters(const std::vector<Token>& t, std::size_t open) {
  std::set<std::string> names;
  std::size_t b = open;
  while (b > 0 && !(t[b - 1].is(";") || t[b - 1].is("{") || t[b - 1].is("}") || t[b - 1].kind == TokenKind::directive))
    --b;
  for (std::size_t j = b; j + 1 < open; ++j)
    if (t[j].is_identifier("template") && t[j + 1].is("<")) template_parameter_names(t, j + 1, names);
  return names;
}

// A parameter `[const] SPACE T (SIGIL name)[E1][E2]…` starting at i, SIGIL '&' (an array
// reference) or '*' (a pointer to rows). `kind` is the kind the space's checked arrays have
// (metal_checked.h): 0 threadgroup, 1 private, 2 a struct's member (device), 3 constant data.
struct ArrayDeclarator {
  char kind = 0;
  bool is_const = false;           // a `const` anywhere, or the constant space
  std::vector<std::size_t> element;  // the element type's tokens, without const and the space
  std::size_t name = npos, end = npos;  // end: the ',' or ')' after the last extent
  std::vector<std::string> extents;
};

std::optional<ArrayDeclarator> array_declarator_parameter(const std::vector<Token>& t, std::size_t i, const char* sigil) {
  if (i == 0 || !(t[i - 1].is("(") || t[i - 1].is(","))) return std::nullopt;
  ArrayDeclarator d;
  std::size_t j = i;
  while (j < t.size() && t[j].is_identifier("const")) d.is_const = true, ++j;
  if (j >= t.size()) return std::nullopt;
  d.kind = t[j].is_identifier("threadgroup") ? '0' : t[j].is_identifier("thread") ? '1'
           : t[j].is_identifier("device")    ? '2' : t[j].is_identifier("constant") ? '3' : 0;
  if (!d.kind) return std::nullopt;
  d.is_const = d.is_const || d.kind == '3';
  for (++j; j < t.size() && (t[j].kind == TokenKind::identifier || t[j].is("::")); ++j) {
    if (t[j].is_identifier("const")) d.is_const = true;
    else d.element.push_back(j);
  }
  if (d.element.empty() || j + 4 >= t.size() || !t[j].is("(") || !t[j + 1].is(sigil) ||
      t[j + 2].kind != TokenKind::identifier || !t[j + 3].is(")") || !t[j + 4].is("["))
    return std::nullopt;
  d.name = j + 2;
  d.end = j + 4;
  d.extents = array_extents(t, d.end);
  if (d.extents.empty() || d.end >= t.size() || !(t[d.end].is(",") || t[d.end].is(")"))) return std::nullopt;
  return d;
}

// Whether tokens [from, to) of the parameter at i name its function's own template parameters:
// those would not deduce through the checked type, so the parameter stays as it is.
bool names_own_template_parameter(const std::vector<Token>& t, std::size_t i, std::size_t from, std::size_t to) {
  std::size_t open = i - 1;
  for (int depth = 0; open > 0; --open) {
    if (t[open].is(")")) ++depth;
    else if (t[open].is("(") && depth-- == 0) break;
  }
  const std::set<std::string> own = own_template_parameters(t, open);
  for (std::size_t k = from; k < to; ++k)
    if (own.count(t[k].text)) return true;
  return false;
}

// The checked array type of a declarator's rows: `metal::mtl_checked_array<T, (E), kind>` nested
// once per extent (constant data's arrays have const elements).
std::string checked_rows(const std::vector<Token>& t, const ArrayDeclarator& d) {
  std::string row = (d.kind == '3' ? "const " : "") + type_text(t, d.element, false);
  for (auto it = d.extents.rbegin(); it != d.extents.rend(); ++it)
    row = "metal::mtl_checked_array<" + row + ", (" + *it + "), " + d.kind + ">";
  return row;
}


// A `thread` pointer parameter: the '(' of its list, its position in it, whether its
// element type names the function's own template parameters, and is const.
struct ThreadParameter {
  std::size_t open = npos;  // npos: no parameter
  int position = 0;
  bool deduced = false, is_const = false;
};

ThreadParameter thread_parameter(const std::vector<Token>& t, std::size_t i, std::size_t star) {
  ThreadParameter none, p;
  if (i == 0 || !(t[i - 1].is("(") || t[i - 1].is(","))) return none;
  std::size_t j = star + 1;
  while (j < t.size() && (t[j].is_identifier("const") || t[j].is_identifier("restrict") ||
                          t[j].is_identifier("__restrict") || t[j].is_identifier("__restrict__")))
    ++j;
  const bool named = j < t.size() && t[j].kind == TokenKind::identifier;
  if (named) ++j;
  if (j >= t.size() || !(t[j].is(",") || t[j].is(")") || t[j].is("="))) return none;
  // The '(' that opens the list: a function's (its name before it) or a lambda's.
  int depth = 0;
  for (std::size_t k = i; k-- > 0;) {
    if (t[k].is(")") || t[k].is("]") || t[k].is("}")) {
      ++depth;
    } else if (t[k].is("(") || t[k].is("[") || t[k].is("{")) {
      if (depth-- == 0) {
        p.open = t[k].is("(") ? k : npos;
        break;
      }
    } else if (depth == 0 && t[k].is(",")) {
      ++p.position;
    } else if (t[k].is(";")) {
      break;
    }
  }
  if (p.open == npos || p.open == 0) return none;
  static const auto& not_functions = *new std::set<std::string>{"return", "sizeof", "alignof", "decltype", "if", "while",
                                                      "for", "switch", "static_assert", "noexcept"};
  const Token& f = t[p.open - 1];
  if (!((f.kind == TokenKind::identifier && !not_functions.count(f.text)) || f.is("]") || follows_operator_name(t, p.open) ||
        follows_template_arguments(t, p.open) || follows_function_pointer(t, p.open)))
    return none;
  if (!named && t[j].is(")")) {  // `void f(thread float*);` (not a cast `(thread float*)x`)
    if (i - 1 == p.open && (j + 1 >= t.size() || !(t[j + 1].is(";") || t[j + 1].is("{")))) return none;
  }
  const std::set<std::string> own = own_template_parameters(t, p.open);
  for (std::size_t k = i; k < star; ++k) {
    p.deduced = p.deduced || (t[k].kind == TokenKind::identifier && own.count(t[k].text));
    p.is_const = p.is_const || t[k].is_identifier("const") || t[k].is_identifier("constant");
  }
  return p;
}

// If tokens from i are `[const|volatile] SPACE TYPE [const] *`: the '*' (and the address
// space in *space); else npos.
std::size_t pointer_star(const std::vector<Token>& t, std::size_t i, std::string* space) {
  std::size_t j = i;
  while (j < t.size() && (t[j].is_identifier("const") || t[j].is_identifier("volatile"))) ++j;
  if (j >= t.size() || !(t[j].is_identifier("thread") || t[j].is_identifier("device") ||
                         t[j].is_identifier("constant") || t[j].is_identifier("threadgroup")))
    return npos;
  *space = t[j].text;
  int depth = 0;
  for (++j; j < t.size(); ++j) {
    if (t[j].is("<")) ++depth;
    else if (t[j].is(">")) --depth;
    else if (t[j].is(">>")) depth -= 2;
    else if (depth == 0 && t[j].is("*")) return j;
    else if (depth == 0 && (t[j].is("&") || t[j].is(";") || t[j].is(",") || t[j].is(")") || t[j].is("=") ||
                            t[j].is("{") || t[j].is("[") || t[j].is("(")))
      return npos;
  }
  return npos;
}

// The '>' that closes the template argument list opened by the '<' at i, when it is one
// (followed by `(`, `{`, `::`, `,`, `)`), else npos (a less-than).
std::size_t template_close(const std::vector<Token>& t, std::size_t i) {
  int angles = 0, parens = 0;
  for (std::size_t j = i; j < t.size(); ++j) {
    const Token& c = t[j];
    if (c.is("(") || c.is("[")) ++parens;
    else if (c.is(")") || c.is("]")) {
      if (--parens < 0) return npos;
    } else if (c.is(";") || c.is("{") || c.is("}")) {
      return npos;
    } else if (parens == 0 && c.is("<")) {
      ++angles;
    } else if (parens == 0 && (c.is(">") || c.is(">>"))) {
      angles -= c.is(">") ? 1 : 2;
      if (angles <= 0) {
        if (angles < 0 || j + 1 >= t.size()) return npos;
        const Token& n = t[j + 1];
        return n.is("(") || n.is("{") || n.is("::") || n.is(",") || n.is(")") ? j : npos;
      }
    }
  }
  return npos;
}

// The '(' after the name at j (and its template arguments, if any), else npos.
std::size_t paren_after_name(const std::vector<Token>& t, std::size_t j) {
  std::size_t open = j + 1;
  if (open < t.size() && t[open].is("<")) {
    const std::size_t close = template_close(t, open);
    if (close == npos) return npos;
    open = close + 1;
  }
  return open < t.size() && t[open].is("(") ? open : npos;
}

// The arguments of the call whose '(' is at open: [first, end) token ranges; empty when
// the list looks like a declaration's (two names in a row: `int a`).
std::vector<std::pair<std::size_t, std::size_t>> call_arguments(const std::vector<Token>& t, std::size_t open) {
  std::vector<std::pair<std::size_t, std::size_t>> args;
  std::size_t first = open + 1;
  int depth = 0;
  for (std::size_t j = open + 1; j < t.size(); ++j) {
    const Token& c = t[j];
    if (c.is("(") || c.is("[") || c.is("{")) {
      ++depth;
    } else if (c.is(")") || c.is("]") || c.is("}")) {
      if (depth-- == 0) {
        if (j > first) args.emplace_back(first, j);
        return args;
      }
    } else if (c.is("<") && j > 0 && t[j - 1].kind == TokenKind::identifier) {
      const std::size_t close = template_close(t, j);
      if (close != npos) j = close;
    } else if (depth == 0 && c.is(",")) {
      args.emplace_back(first, j);
      first = j + 1;
    } else if (depth == 0 && c.kind == TokenKind::identifier && t[j - 1].kind == TokenKind::identifier) {
      return {};  // `int a`: a declaration's parameters
    } else if (c.is(";")) {
      return {};
    }
  }
  return {};
}

// True when the declaration whose parameter list opens at `open` takes at `position` what a
// call's argument wrapped in thread_arg still reaches as before: no parameter there, or one
// of a type that names no pointer, array or template parameter of its own (`float x`,
// `short2 dims`, `thread frag_type& r`): thread_arg passes what is neither an array nor a
// pointer through unchanged, and such a parameter took no pointer or array before either.
// (Not `device float* p`, which thread_arg_const would make const, nor `P p`, `thread T& r`,
// `thread float (&a)[4]`, which deduce from or bind the argument as it is.)
bool takes_wrapped_argument(const std::vector<Token>& t, std::size_t open, int position) {
  const std::set<std::string> own = own_template_parameters(t, open);
  int depth = 0, at = 0;
  for (std::size_t j = open + 1; j < t.size(); ++j) {
    const Token& c = t[j];
    const bool here = depth == 0 && at == position;
    if (here && (c.is("*") || c.is_identifier("auto") || (c.kind == TokenKind::identifier && own.count(c.text))))
      return false;
    if (c.is("(") || c.is("[") || c.is("{") || c.is("<")) {
      if (here && (c.is("(") || c.is("["))) return false;
      ++depth;
    } else if (c.is(")") || c.is("]") || c.is("}") || c.is(">")) {
      if (depth-- == 0) return true;
    } else if (c.is(">>")) {
      depth -= 2;
    } else if (depth == 0 && c.is(",")) {
      ++at;
    } else if (c.is(";")) {
      return false;
    }
  }
  return false;
}

}  // namespace

std::set<std::string> function_template_names(const std::vector<Token>& t) {
  std::set<std::string> names;
  for (std::size_t i = 0; i + 1 < t.size(); ++i) {
    if (!t[i].is_identifier("template") || !t[i + 1].is("<")) continue;
    // The declaration after the template list: a function if a name is followed by
    // '(' (at the list's level) before any `struct`/`class`, `{`, `;` or `=`.
    int depth = 0;
    std::size_t j = i + 1;
    for (; j < t.size(); ++j) {
      if (t[j].is("<")) ++depth;
      else if (t[j].is(">") && --depth == 0) break;
      else if (t[j].is(">>") && (depth -= 2) <= 0) break;
    }
    depth = 0;
    for (++j; j < t.size(); ++j) {
      const Token& c = t[j];
      if (c.is_identifier("struct") || c.is_identifier("class") || c.is_identifier("union") || c.is("{") ||
          c.is(";") || c.is("=") || c.is_identifier("using"))
        break;
      if (c.is("<")) ++depth;
      else if (c.is(">")) --depth;
      else if (c.is(">>")) depth -= 2;
      else if (depth == 0 && c.is("(") && t[j - 1].kind == TokenKind::identifier) {
        names.insert(t[j - 1].text);
        break;
      }
    }
  }
  return names;
}

bool is_checked_thread_parameter(const std::vector<Token>& t, std::size_t i, std::size_t star) {
  return thread_parameter(t, i, star).open != npos;
}

DeducedArguments deduced_thread_arguments(const std::vector<Token>& t) {
  // Device, constant and threadgroup pointer parameters too: `const device T* p` deduces T
  // only from a const checked pointer, `threadgroup T* p` none from a checked array.
  struct Found {
    std::size_t first, open;
    int position;
    bool is_const;
    std::string space;
  };
  std::vector<Found> params;
  std::map<std::size_t, std::set<int>> by_declaration;  // '(' of a parameter list → positions
  for (std::size_t i = 1; i < t.size(); ++i) {
    std::string space;
    const std::size_t star = pointer_star(t, i, &space);
    if (star == npos) continue;
    const ThreadParameter p = thread_parameter(t, i, star);
    if (p.open == npos || !p.deduced || t[p.open - 1].kind != TokenKind::identifier) continue;
    bool is_volatile = false;  // mtl_checked<volatile T>: left as it is
    for (std::size_t k = i; k < star; ++k) is_volatile = is_volatile || t[k].is_identifier("volatile");
    if (is_volatile) continue;
    params.push_back({i, p.open, p.position, p.is_const, space});
    by_declaration[p.open].insert(p.position);
  }
  DeducedArguments result;
  if (params.empty()) return result;
  // Every declaration of each name ('(' of its parameter list; a declaration has a type
  // before its name: `T f(`, `float S::f(`) and the calls.
  static const auto& keywords = *new std::set<std::string>{"return", "else", "do", "case", "throw"};
  std::set<std::string> names;
  for (const Found& f : params) names.insert(t[f.open - 1].text);
  std::map<std::string, std::vector<std::size_t>> declarations, calls;
  for (std::size_t j = 0; j + 1 < t.size(); ++j) {
    if (t[j].kind != TokenKind::identifier || !names.count(t[j].text)) continue;
    const bool declaration = j > 0 && ((t[j - 1].kind == TokenKind::identifier && !keywords.count(t[j - 1].text)) ||
                                       (t[j - 1].is("::") && j > 2 && t[j - 2].kind == TokenKind::identifier &&
                                        t[j - 3].kind == TokenKind::identifier));
    const std::size_t open = paren_after_name(t, j);
    if (open == npos) continue;
    (declaration || by_declaration.count(open) ? declarations : calls)[t[j].text].push_back(open);
  }
  // A position is wrapped when every declaration of the name (overloads, specialisations)
  // has a deduced pointer there in one address space, or a parameter that takes the wrapped
  // argument as it took the argument (`float f(float x)` beside `template <class T> T
  // f(thread T* p)`); const when every deduced one is const.
  std::map<std::string, std::map<int, bool>> wrapped;
  for (const Found& f : params) {
    const std::string& name = t[f.open - 1].text;
    bool everywhere = true;
    for (std::size_t open : declarations[name])
      everywhere = everywhere && (by_declaration[open].count(f.position) || takes_wrapped_argument(t, open, f.position));
    for (const Found& g : params)
      if (t[g.open - 1].text == name && g.position == f.position && g.space != f.space) everywhere = false;
    if (!everywhere) continue;
    auto it = wrapped[name].find(f.position);
    wrapped[name][f.position] = (it == wrapped[name].end() || it->second) && f.is_const;
  }
  for (const auto& [name, opens] : calls) {
    auto w = wrapped.find(name);
    if (w == wrapped.end()) continue;
    for (std::size_t open : opens) {
      const auto args = call_arguments(t, open);
      for (const auto& [position, is_const] : w->second) {
        if (position >= static_cast<int>(args.size())) continue;
        const auto [first, end] = args[position];
        result.before[first] += is_const ? "metal::mtl_rt::thread_arg_const(" : "metal::mtl_rt::thread_arg(";
        result.before[end] = ")" + result.before[end];
      }
    }
  }
  return result;
}

std::map<std::size_t, std::pair<std::size_t, std::string>> array_reference_parameters(const std::vector<Token>& t) {
  std::map<std::size_t, std::pair<std::size_t, std::string>> found;
  for (std::size_t i = 1; i + 1 < t.size(); ++i) {
    // (`device` and `constant` references did not compile before 2026-12-05.)
    const std::optional<ArrayDeclarator> d = array_declarator_parameter(t, i, "&");
    // An extent naming the function's own template parameter is deduced (`short N` would not
    // deduce from the checked array's extent); the element type deduces through the reference.
    if (!d || names_own_template_parameter(t, i, d->name + 2, d->end)) continue;
    // `const T (&v)[N]` → `const mtl_checked_array<T, …>& v` (the array's type has no const).
    found[i] = {d->end - 1, (d->is_const ? "const " : "") + checked_rows(t, *d) + "& " + t[d->name].text};
  }
  return found;
}

DeducedArrayReferences deduced_array_references(const std::vector<Token>& t) {
  DeducedArrayReferences out;
  std::map<std::size_t, std::set<int>> by_declaration;  // a declaration's '(' → positions
  for (std::size_t i = 1; i + 1 < t.size(); ++i) {
    if (!(t[i - 1].is("(") || t[i - 1].is(","))) continue;
    std::size_t j = i;
    bool is_const = false, arguments = false;
    while (j < t.size() && t[j].is_identifier("const")) is_const = true, ++j;
    if (j >= t.size() || !(t[j].is_identifier("thread") || t[j].is_identifier("constant") ||
                           t[j].is_identifier("threadgroup") || t[j].is_identifier("device")))
      continue;
    is_const = is_const || t[j].is_identifier("constant");
    // The view's kind, which its faults name: 0 threadgroup, 1 private (also a `thread const T
    // (&)[N]`, which said "constant array" before 2026-12-05), 3 constant.
    const char* kind = t[j].is_identifier("threadgroup") ? "<0>" : t[j].is_identifier("thread") ? "<1>"
                       : t[j].is_identifier("device")    ? "<2>" : "<3>";
    std::vector<std::size_t> element;
    for (++j; j < t.size() && (t[j].kind == TokenKind::identifier || t[j].is("::") || t[j].is("<")); ++j) {
      if (t[j].is("<")) {  // `vec<T, V>`: its arguments
        const std::size_t close = template_close(t, j);
        if (close == npos) break;
        for (; j < close; ++j) element.push_back(j);
        arguments = true;
      }
      if (t[j].is_identifier("const")) is_const = true;
      else element.push_back(j);
    }
    if (element.empty() || j + 4 >= t.size() || !t[j].is("(") || !t[j + 1].is("&") ||
        t[j + 2].kind != TokenKind::identifier || !t[j + 3].is(")") || !t[j + 4].is("["))
      continue;
    const std::size_t name = j + 2;
    std::size_t end = j + 4;
    const std::vector<std::string> extents = array_extents(t, end);
    if (extents.empty() || end >= t.size() || !(t[end].is(",") || t[end].is(")"))) continue;
    std::size_t open = i - 1;
    int position = 0;
    for (int depth = 0, angle = 0; open > 0; --open) {  // (`vec<T, V> a, …`: no ',' of the list's)
      if (t[open].is(")")) ++depth;
      else if (t[open].is("(") && depth-- == 0) break;
      else if (t[open].is(">") || t[open].is(">>")) angle += t[open].is(">") ? 1 : 2;
      else if (t[open].is("<")) --angle;
      else if (depth == 0 && angle == 0 && t[open].is(",")) ++position;
    }
    const std::set<std::string> own = own_template_parameters(t, open);
    bool deduced = false;
    for (std::size_t k = j + 4; k < end; ++k) deduced = deduced || own.count(t[k].text) > 0;
    if ((!deduced && !arguments) || own.empty() || open == 0 || t[open - 1].kind != TokenKind::identifier) continue;
    const std::string raw = "mtl_raw_" + t[name].text;
    // Every extent (`(&t)[R][C]`: raw_array gives a 2-D checked array's elements as `float[R][C]`,
    // and checked_view the nested checked arrays over them; before 2026-12-05 only one extent).
    std::string dims;
    for (const std::string& e : extents) dims += "[" + e + "]";
    out.params[i] = {end - 1, (is_const ? "const " : "") + type_text(t, element, false) + " (&" + raw + ")" + dims};
    by_declaration[open].insert(position);
    std::size_t close = end;  // the list's ')', then the body's '{' (none for a declaration)
    for (int depth = 0; close < t.size() && !(depth == 0 && t[close].is(")")); ++close) {
      if (t[close].is("(")) ++depth;
      else if (t[close].is(")")) --depth;
    }
    for (std::size_t k = close + 1, depth = 0; k < t.size() && !(depth == 0 && t[k].is(";")); ++k) {
      if (t[k].is("(")) ++depth;
      else if (t[k].is(")")) --depth;
      if (depth == 0 && t[k].is("{")) {
        out.before[k + 1] += "auto& " + t[name].text + " = metal::mtl_rt::checked_view" + kind +
                             "(" + raw + "); ";
        break;
      }
    }
  }
  if (by_declaration.empty()) return out;
  // The calls: each position that every declaration of the name has (the others take it as it was).
  std::map<std::string, std::vector<std::size_t>> declarations, calls;
  std::set<std::string> names;
  for (const auto& [open, positions] : by_declaration) names.insert(t[open - 1].text);
  for (std::size_t j = 1; j + 1 < t.size(); ++j) {
    if (t[j].kind != TokenKind::identifier || !names.count(t[j].text) || t[j - 1].is(".") || t[j - 1].is("->")) continue;
    const std::size_t open = paren_after_name(t, j);
    if (open == npos) continue;
    const bool declaration = by_declaration.count(open) || (t[j - 1].kind == TokenKind::identifier &&
                                                            !t[j - 1].is_identifier("return") && !t[j - 1].is_identifier("else"));
    (declaration ? declarations : calls)[t[j].text].push_back(open);
  }
  for (const auto& [name, opens] : calls) {
    std::set<int> everywhere;
    bool first = true;
    for (std::size_t open : declarations[name]) {
      auto it = by_declaration.find(open);
      const std::set<int> here = it == by_declaration.end() ? std::set<int>{} : it->second;
      if (first) everywhere = here;
      else for (auto p = everywhere.begin(); p != everywhere.end();) p = here.count(*p) ? std::next(p) : everywhere.erase(p);
      first = false;
    }
    for (std::size_t open : opens) {
      const auto args = call_arguments(t, open);
      for (int position : everywhere) {
        if (position >= static_cast<int>(args.size())) continue;
        out.calls[args[position].first] += "metal::mtl_rt::raw_array(";
        out.calls[args[position].second] = ")" + out.calls[args[position].second];
      }
    }
  }
  return out;
}

// `thread auto* p` of a generic lambda: `auto&& mtl_arg_p`, and the body starts with
// `auto p = metal::mtl_rt::thread_arg(mtl_arg_p);` (the argument as a checked pointer).
AutoPointerParameters auto_pointer_parameters(const std::vector<Token>& t) {
  AutoPointerParameters out;
  for (std::size_t i = 1; i + 1 < t.size(); ++i) {
    if (!(t[i - 1].is("(") || t[i - 1].is(","))) continue;
    std::string space;
    const std::size_t star = pointer_star(t, i, &space);
    if (star == npos) continue;
    // Only `auto` with qualifiers and the address space before the '*'.
    bool is_auto = false, other = false, is_const = space == "constant";
    for (std::size_t k = i; k < star; ++k) {
      if (t[k].is_identifier("auto")) is_auto = true;
      else if (t[k].is_identifier("const")) is_const = true;
      else if (!(t[k].is_identifier("volatile") || t[k].is_identifier(space.c_str()))) other = true;
    }
    if (other) continue;
    std::size_t name = star + 1;
    if (!is_auto || name + 1 >= t.size() || t[name].kind != TokenKind::identifier ||
        !(t[name + 1].is(",") || t[name + 1].is(")")))
      continue;
    const ThreadParameter p = thread_parameter(t, i, star);
    if (p.open == npos || !t[p.open - 1].is("]")) continue;  // a lambda's
    int depth = 0;
    std::size_t body = p.open;
    for (; body < t.size(); ++body) {
      if (t[body].is("(")) ++depth;
      else if (t[body].is(")")) --depth;
      else if (depth == 0 && (t[body].is("{") || t[body].is(";"))) break;
    }
    if (body + 1 >= t.size() || !t[body].is("{")) continue;
    const std::string arg = "mtl_arg_" + t[name].text;
    out.params[i] = {name, "auto&& " + arg};
    out.before[body + 1] += "auto " + t[name].text + " = metal::mtl_rt::thread_arg" + (is_const ? "_const" : "") +
                            "(" + arg + "); ";
  }
  return out;
}

// `thread U dst[TN]` parameters (a pointer in C++, MLX's gemv): `metal::mtl_checked<U> dst`,
// a checked pointer, which U deduces from (a private array is passed as array_arg(t)).
std::map<std::size_t, std::pair<std::size_t, std::string>> array_pointer_parameters(const std::vector<Token>& t) {
  std::map<std::size_t, std::pair<std::size_t, std::string>> found;
  for (std::size_t i = 1; i + 1 < t.size(); ++i) {
    if (!(t[i - 1].is("(") || t[i - 1].is(","))) continue;
    std::size_t j = i;
    bool is_const = false;
    while (j < t.size() && t[j].is_identifier("const")) is_const = true, ++j;
    if (j >= t.size() || !t[j].is_identifier("thread")) continue;
    std::vector<std::size_t> element;
    for (++j; j < t.size() && (t[j].kind == TokenKind::identifier || t[j].is("::")); ++j) {
      if (t[j].is_identifier("const")) is_const = true;
      else element.push_back(j);
    }
    // The last name is the parameter's; one extent, then the list goes on or ends.
    if (element.size() < 2 || j >= t.size() || !t[j].is("[")) continue;
    const std::size_t name = element.back();
    element.pop_back();
    if (t[name].kind != TokenKind::identifier) continue;
    std::size_t end = j;
    const std::vector<std::string> extents = array_extents(t, end);
    if (extents.size() != 1 || end >= t.size() || !(t[end].is(",") || t[end].is(")") || t[end].is("="))) continue;
    found[i] = {end - 1, "metal::mtl_checked<" + std::string(is_const ? "const " : "") + type_text(t, element, false) +
                             "> " + t[name].text};
  }
  // `const device T* inputs[N]` (MLX's per_thread_row_reduce; a pointer to checked pointers in
  // C++, whose index no bounds covered before 2026-12-03): a checked pointer to checked pointers,
  // `metal::mtl_checked<metal::mtl_checked<const T>> inputs`, which an array of pointers passed
  // whole converts to (array_arg).
  for (std::size_t i = 1; i + 1 < t.size(); ++i) {
    if (!(t[i - 1].is("(") || t[i - 1].is(","))) continue;
    std::size_t j = i;
    if (t[j].is_identifier("thread")) ++j;  // the array's own address space
    std::string space;
    const std::size_t star = pointer_star(t, j, &space);
    if (star == npos || space == "thread") continue;
    std::size_t name = star + 1;
    bool const_pointer = false;
    while (name < t.size() && t[name].is_identifier("const")) const_pointer = true, ++name;
    if (name + 2 >= t.size() || t[name].kind != TokenKind::identifier || !t[name + 1].is("[") || t[name + 2].is("["))
      continue;  // (not an attribute: `device float* out [[buffer(0)]]`)
    std::size_t end = name + 1;
    const std::vector<std::string> extents = array_extents(t, end);
    if (extents.size() != 1 || end >= t.size() || !(t[end].is(",") || t[end].is(")"))) continue;
    bool is_const = space == "constant";
    std::vector<std::size_t> element;
    for (std::size_t k = j; k < star; ++k) {
      if (t[k].is_identifier("const")) is_const = true;
      else if (!(t[k].is_identifier(space.c_str()) || t[k].is_identifier("volatile"))) element.push_back(k);
      if (t[k].is_identifier("volatile")) element.clear(), k = star;  // (left as it is)
    }
    if (element.empty()) continue;
    found[i] = {end - 1, "metal::mtl_checked<" + std::string(const_pointer ? "const " : "") + "metal::mtl_checked<" +
                             (is_const ? "const " : "") + type_text(t, element, false) + ">> " + t[name].text};
  }
  // `threadgroup float (*t)[8]` (a pointer to rows, any space; `f(tile)` passes a 2-D array):
  // a checked pointer to checked rows, `metal::mtl_checked<metal::mtl_checked_array<float, (8),
  // 0>> t`, which the array converts to (its rows counted) and whose rows check their index.
  // The rows' kind is the one the space's arrays have: 0 threadgroup, 1 private, 2 a struct's
  // member (device), 3 constant. (The host compiler refused such a call before 2026-12-05.) One
  // whose element or extents name the function's template parameters is deduced_row_pointers'
  // (they would not deduce through the conversion).
  for (std::size_t i = 1; i + 1 < t.size(); ++i) {
    const std::optional<ArrayDeclarator> d = array_declarator_parameter(t, i, "*");
    if (!d || names_own_template_parameter(t, i, i, d->end)) continue;
    found[i] = {d->end - 1, "metal::mtl_checked<" + std::string(d->is_const ? "const " : "") + checked_rows(t, *d) +
                                "> " + t[d->name].text};
  }
  return found;
}

// `template <int C> void f(thread float (*t)[C])`, `template <class T> void g(device T (*rows)[4])`:
// `metal::mtl_checked_rows<float[C], 1, false> t` (its raw row type deduces C and T; before
// 2026-12-05 such a parameter did not compile in checked mode), and each call of a name whose
// every declaration has one at that position passes `metal::mtl_rt::rows_arg<1, false>(x)`.
DeducedRowPointers deduced_row_pointers(const std::vector<Token>& t) {
  DeducedRowPointers out;
  std::map<std::size_t, std::map<int, std::string>> by_declaration;  // '(' → position → "K, Const"
  for (std::size_t i = 1; i + 1 < t.size(); ++i) {
    const std::optional<ArrayDeclarator> d = array_declarator_parameter(t, i, "*");
    if (!d || !names_own_template_parameter(t, i, i, d->end)) continue;
    std::string raw = type_text(t, d->element, false);
    for (const std::string& e : d->extents) raw += "[" + e + "]";
    const std::string kind = std::string(1, d->kind) + ", " + (d->is_const ? "true" : "false");
    out.params[i] = {d->end - 1, "metal::mtl_checked_rows<" + raw + ", " + kind + "> " + t[d->name].text};
    std::size_t open = i - 1;
    int position = 0;
    for (int depth = 0, angle = 0; open > 0; --open) {
      if (t[open].is(")")) ++depth;
      else if (t[open].is("(") && depth-- == 0) break;
      else if (t[open].is(">") || t[open].is(">>")) angle += t[open].is(">") ? 1 : 2;
      else if (t[open].is("<")) --angle;
      else if (depth == 0 && angle == 0 && t[open].is(",")) ++position;
    }
    if (open > 0 && t[open - 1].kind == TokenKind::identifier) by_declaration[open][position] = kind;
  }
  if (by_declaration.empty()) return out;
  std::set<std::string> names;
  for (const auto& [open, positions] : by_declaration) names.insert(t[open - 1].text);
  std::map<std::string, std::vector<std::size_t>> declarations, calls;
  for (std::size_t j = 1; j + 1 < t.size(); ++j) {
    if (t[j].kind != TokenKind::identifier || !names.count(t[j].text) || t[j - 1].is(".") || t[j - 1].is("->")) continue;
    const std::size_t open = paren_after_name(t, j);
    if (open == npos) continue;
    const bool declaration = by_declaration.count(open) || (t[j - 1].kind == TokenKind::identifier &&
                                                            !t[j - 1].is_identifier("return") && !t[j - 1].is_identifier("else"));
    (declaration ? declarations : calls)[t[j].text].push_back(open);
  }
  for (const auto& [name, opens] : calls) {
    // The positions every declaration of the name has, with one kind (others take the argument as it is).
    std::map<int, std::string> everywhere;
    bool first = true;
    for (std::size_t open : declarations[name]) {
      auto it = by_declaration.find(open);
      const std::map<int, std::string> here = it == by_declaration.end() ? std::map<int, std::string>{} : it->second;
      if (first) everywhere = here;
      for (auto p = everywhere.begin(); p != everywhere.end();) {
        auto h = here.find(p->first);
        p = h != here.end() && h->second == p->second ? std::next(p) : everywhere.erase(p);
      }
      first = false;
    }
    for (std::size_t open : opens) {
      const auto args = call_arguments(t, open);
      for (const auto& [position, kind] : everywhere) {
        if (position >= static_cast<int>(args.size())) continue;
        out.calls[args[position].first] += "metal::mtl_rt::rows_arg<" + kind + ">(";
        out.calls[args[position].second] = ")" + out.calls[args[position].second];
      }
    }
  }
  return out;
}

}  // namespace metalcall::msl
