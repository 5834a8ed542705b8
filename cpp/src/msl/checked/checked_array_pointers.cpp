// Checked mode: local pointer-to-array variables and casts to pointer-to-array types (see
// checked_array_pointers.hpp; metal_checked.h has the rows' conversions).
#include "msl/checked/checked_array_pointers.hpp"

#include "msl/analysis/call_graph.hpp"
#include "msl/checked/checked_mode.hpp"
#include "msl/lex/token_text.hpp"

#include <optional>
#include <set>

namespace metalcall::msl {

namespace {

constexpr std::size_t npos = std::string::npos;

// `[const] SPACE [const] T (*name)[E1][E2]…` (name optional, for a cast's type) from token i.
struct RowPointerType {
  char kind = 0;  // the rows' kind: '0' threadgroup, '1' thread, '2' device, '3' constant
  bool is_const = false;
  bool const_pointer = false;  // `(* const r)[4]`
  bool reference = false;      // `(*&r)[4]`: a reference to the pointer
  std::vector<std::size_t> element;
  std::size_t open = npos, name = npos, last = npos;  // the '(' before '*', the name, the last ']'
  std::vector<std::string> extents;
};

std::optional<RowPointerType> row_pointer_type(const std::vector<Token>& t, std::size_t i) {
  RowPointerType d;
  std::size_t j = i;
  while (j < t.size() && t[j].is_identifier("const")) d.is_const = true, ++j;
  if (j >= t.size()) return std::nullopt;
  d.kind = t[j].is_identifier("threadgroup") ? '0' : t[j].is_identifier("thread") ? '1'
           : t[j].is_identifier("device")    ? '2' : t[j].is_identifier("constant") ? '3' : 0;
  if (!d.kind) return std::nullopt;
  d.is_const = d.is_const || d.kind == '3';
  for (++j; j < t.size() && (t[j].kind == TokenKind::identifier || t[j].is("::") || t[j].is("<")); ++j) {
    if (t[j].is("<")) {  // `vec<float, 4>`: its arguments
      const std::size_t close = initializer_template_close(t, j, t.size());
      if (close == j) return std::nullopt;
      for (; j < close; ++j) d.element.push_back(j);
    }
    if (t[j].is_identifier("const")) d.is_const = true;
    else d.element.push_back(j);
  }
  if (d.element.empty() || j + 2 >= t.size() || !t[j].is("(") || !t[j + 1].is("*")) return std::nullopt;
  d.open = j;
  j += 2;
  while (j < t.size() && t[j].is_identifier("const")) d.const_pointer = true, ++j;
  if (j < t.size() && t[j].is("&")) d.reference = true, ++j;
  if (j < t.size() && t[j].kind == TokenKind::identifier) d.name = j++;
  if (j + 1 >= t.size() || !t[j].is(")") || !t[j + 1].is("[")) return std::nullopt;
  std::size_t end = j + 1;
  d.extents = array_extents(t, end);
  if (d.extents.empty()) return std::nullopt;
  d.last = end - 1;
  return d;
}

// `metal::mtl_checked<metal::mtl_checked_array<float, (4), 1>>`: constant data's rows have const elements.
std::string checked_type(const std::vector<Token>& t, const RowPointerType& d) {
  std::string row = (d.kind == '3' ? "const " : "") + type_text(t, d.element, false);
  for (auto it = d.extents.rbegin(); it != d.extents.rend(); ++it)
    row = "metal::mtl_checked_array<" + row + ", (" + *it + "), " + d.kind + ">";
  return std::string(d.const_pointer ? "const " : "") + "metal::mtl_checked<" + (d.is_const ? "const " : "") + row +
         ">" + (d.reference ? "&" : "");
}

// `SPACE T (*` followed by what row_pointer_type does not read: a function returning a pointer to
// an array (`(*rows(…))[4]`), an array of them (`(*a[2])[4]`), `(* constant p)[3]`.
bool unread_row_pointer_declarator(const std::vector<Token>& t, std::size_t i) {
  std::size_t j = i;
  while (j < t.size() && t[j].is_identifier("const")) ++j;
  if (j >= t.size() || !(t[j].is_identifier("threadgroup") || t[j].is_identifier("thread") ||
                         t[j].is_identifier("device") || t[j].is_identifier("constant")))
    return false;
  for (++j; j < t.size() && (t[j].kind == TokenKind::identifier || t[j].is("::")); ++j) {
  }
  if (j + 1 >= t.size() || !t[j].is("(") || !t[j + 1].is("*")) return false;
  const std::size_t close = matching(t, j);
  return close + 1 < t.size() && t[close + 1].is("[");
}

void drop(std::map<std::size_t, std::string>& replace, std::size_t from, std::size_t to) {
  for (std::size_t k = from; k <= to; ++k) replace[k] = "";
}

// Whether a declaration starts at i: after a statement, a block's brace, or a `for (`.
bool starts_statement(const std::vector<Token>& t, std::size_t i) {
  if (i == 0) return false;
  const Token& p = t[i - 1];
  return p.is(";") || p.is("{") || p.is("}") || (p.is("(") && i >= 2 && t[i - 2].is_identifier("for"));
}

// The ',' or ';' that ends the initializer starting at j (npos: none).
std::size_t initializer_end(const std::vector<Token>& t, std::size_t j) {
  for (int depth = 0; j < t.size(); ++j) {
    if (t[j].is("(") || t[j].is("[") || t[j].is("{")) ++depth;
    else if (t[j].is(")") || t[j].is("]") || t[j].is("}")) --depth;
    else if (t[j].is("<")) j = initializer_template_close(t, j, t.size());
    else if (depth == 0 && (t[j].is(",") || t[j].is(";"))) return j;
    if (depth < 0) return npos;
  }
  return npos;
}

}  // namespace

// Whether tokens [from, to] name a parameter of the template header that starts the statement
// holding i (`template <int C> float f(thread float (*)[C], int);`).
bool names_template_parameter(const std::vector<Token>& t, std::size_t i, std::size_t from, std::size_t to) {
  std::size_t s = i;
  for (int depth = 0; s > 0; --s) {
    const Token& b = t[s - 1];
    if (b.is(")") || b.is("]")) ++depth;
    else if ((b.is("(") || b.is("[")) && depth > 0) --depth;
    else if (depth == 0 && (b.is(";") || b.is("{") || b.is("}"))) break;
  }
  if (s + 1 >= t.size() || !t[s].is_identifier("template") || !t[s + 1].is("<")) return false;
  std::set<std::string> parameters;
  int angle = 0;
  for (std::size_t k = s + 1; k < i; ++k) {
    if (t[k].is("<")) ++angle;
    else if (t[k].is(">")) --angle;
    else if (t[k].is(">>")) angle -= 2;
    if (angle <= 0) break;
    if (t[k].kind == TokenKind::identifier && k + 1 < t.size() && (t[k + 1].is(",") || t[k + 1].is(">") || t[k + 1].is("=")))
      parameters.insert(t[k].text);
  }
  for (std::size_t k = from; k <= to; ++k)
    if (t[k].kind == TokenKind::identifier && parameters.count(t[k].text)) return true;
  return false;
}

// `reinterpret_cast<Rows>(p)` of such an alias: `static_cast`, as for the spelled-out type.
void cast_to_aliases(const std::vector<Token>& t, const std::set<std::string>& aliases, ArrayPointerRewrites& out) {
  for (std::size_t i = 0; i + 3 < t.size(); ++i)
    if ((t[i].is_identifier("reinterpret_cast") || t[i].is_identifier("const_cast")) && t[i + 1].is("<") &&
        aliases.count(t[i + 2].text) && (t[i + 3].is(">") || t[i + 3].is("<")))
      out.replace[i] = "static_cast";
}

ArrayPointerRewrites array_pointer_rewrites(const std::vector<Token>& t) {
  ArrayPointerRewrites out;
  std::set<std::string> aliases;  // of pointer-to-array types
  for (std::size_t i = 1; i + 1 < t.size(); ++i) {
    if (t[i].kind != TokenKind::identifier || out.replace.count(i)) continue;
    const std::optional<RowPointerType> d = row_pointer_type(t, i);
    if (!d) {
      if ((starts_statement(t, i) || t[i - 1].is("(") || t[i - 1].is(",") || t[i - 1].is_identifier("static") ||
           t[i - 1].is_identifier("typedef")) && unread_row_pointer_declarator(t, i)) {
        out.refused_at = i;
        out.refused = "checked mode: this declarator of a pointer to an array (a function returning one, an array "
                      "of them, a pointer qualified by an address space) has no checked form; use a pointer-to-array "
                      "variable or parameter (`thread float (*r)[4]`) [MSL rule: checked mode stays on]";
        return out;
      }
      continue;
    }
    const std::size_t after = d->last + 1;
    // `using Rows = device float (*)[2];`, `template <int C> using R = thread float (*)[C];`,
    // `typedef device float (*Rows)[2];`: the alias names the checked type.
    if (d->name == npos && t[i - 1].is("=") && i >= 3 && t[i - 3].is_identifier("using") && after < t.size() &&
        t[after].is(";")) {
      out.replace[i] = checked_type(t, *d);
      drop(out.replace, i + 1, d->last);
      aliases.insert(t[i - 2].text);
      continue;
    }
    if (d->name != npos && t[i - 1].is_identifier("typedef")) {
      if (after >= t.size() || !t[after].is(";")) {  // `typedef … (*A)[2], (*B)[3];`: unread, so refused
        out.refused_at = i - 1;
        out.refused = "checked mode: a typedef of a pointer to an array with more declarators has no checked form; "
                      "give each alias a typedef of its own [MSL rule: checked mode stays on]";
        return out;
      }
      out.replace[i] = checked_type(t, *d) + " " + t[d->name].text;
      drop(out.replace, i + 1, d->last);
      aliases.insert(t[d->name].text);
      continue;
    }
    if (d->name == npos) {
      // A type without a name: a cast's (`(device float (*)[4])p`, `static_cast<…>(p)`;
      // reinterpret_cast and const_cast become static_cast: the checked pointer converts by a
      // constructor), a template's argument (`f<device float (*)[2]>(…)`, a checked pointer as
      // `W<device float*>` is) or an unnamed parameter's.
      const bool opens = t[i - 1].is("(") || t[i - 1].is("<") || t[i - 1].is(",");
      const bool closes = after < t.size() && (t[after].is(")") || t[after].is(">") || t[after].is(","));
      if (!opens || !closes) continue;
      // An unnamed parameter of a function template's declaration whose rows name its template
      // parameters: the named one is deduced_row_pointers' (checked_thread_params), whose calls
      // need every declaration to read the same.
      if (!t[i - 1].is("<") && names_template_parameter(t, i, i, d->last)) {
        out.refused_at = i;
        out.refused = "checked mode: an unnamed pointer-to-array parameter whose element or extents are the "
                      "function template's parameters has no checked form; name the parameter (`thread float "
                      "(*t)[C]`) [MSL rule: checked mode stays on]";
        return out;
      }
      if (t[i - 1].is("<") && i >= 2 && (t[i - 2].is_identifier("reinterpret_cast") || t[i - 2].is_identifier("const_cast")))
        out.replace[i - 2] = "static_cast";
      out.replace[i] = checked_type(t, *d);
      drop(out.replace, i + 1, d->last);
      continue;
    }
    // A parameter that is a reference to a pointer to rows (`void next(thread float (*&p)[4])`): a
    // reference to the checked pointer (the other pointer-to-array parameters are
    // checked_thread_params').
    if (d->reference && (t[i - 1].is("(") || t[i - 1].is(",")) && after < t.size() &&
        (t[after].is(")") || t[after].is(",") || t[after].is("="))) {
      out.replace[i] = checked_type(t, *d) + " " + t[d->name].text;
      drop(out.replace, i + 1, d->last);
      continue;
    }
    if (d->reference && starts_statement(t, i)) {  // (another rewrite claims its tokens: not written)
      out.refused_at = i;
      out.refused = "checked mode: a local reference to a pointer to an array (`thread float (*&q)[4] = r;`) has "
                    "no checked form; use the pointer itself, or pass it to a `(*&p)[4]` parameter [MSL rule: "
                    "checked mode stays on]";
      return out;
    }
    if (t[i - 1].is_identifier("static") && d->name != npos) {
      out.refused_at = i - 1;
      out.refused = "checked mode: a static pointer to an array has no checked form (its checked pointer would be "
                    "built at run time, once for every thread); declare it without 'static' [MSL rule: checked mode "
                    "stays on]";
      return out;
    }
    if (!starts_statement(t, i) || after >= t.size() || !(t[after].is("=") || t[after].is(";") || t[after].is(",")))
      continue;
    // A local variable, then any more declarators of the list (`(*s)[4] = m + 1`).
    out.replace[i] = checked_type(t, *d) + " " + t[d->name].text;
    drop(out.replace, i + 1, d->last);
    std::size_t j = after;
    std::vector<std::string> extents = d->extents;
    while (j < t.size() && !t[j].is(";")) {
      if (t[j].is("=")) {
        j = initializer_end(t, j + 1);
        if (j == npos) break;
        continue;
      }
      if (!t[j].is(",")) break;
      // Another declarator: a pointer to rows too (else checked mode cannot write the list).
      const std::size_t open = j + 1;
      std::size_t end = open + 4;
      if (end >= t.size() || !t[open].is("(") || !t[open + 1].is("*") || t[open + 2].kind != TokenKind::identifier ||
          !t[open + 3].is(")") || !t[end].is("[")) {
        out.refused_at = open < t.size() ? open : j;
        out.refused = "checked mode: a declaration of a pointer to an array (`thread float (*r)[4]`) with another "
                      "kind of declarator in its list has no checked form; declare the pointer to an array in a "
                      "declaration of its own [MSL rule: checked mode stays on]";
        return out;
      }
      RowPointerType next = *d;
      next.extents = array_extents(t, end);
      if (next.extents == extents) {
        out.replace[open] = t[open + 2].text;
      } else {  // other extents: a declaration of its own (`; metal::mtl_checked<…> s`)
        out.replace[j] = "; " + checked_type(t, next) + " " + t[open + 2].text;
        out.replace[open] = "";
      }
      drop(out.replace, open + 1, end - 1);
      j = end;
    }
  }
  cast_to_aliases(t, aliases, out);
  return out;
}

}  // namespace metalcall::msl
