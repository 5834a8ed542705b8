// Checked mode's analysis of the token stream (see checked_mode.hpp).
#include "msl/checked/checked_mode.hpp"

#include <set>

#include "msl/lex/token_text.hpp"
#include "msl/parse/type_names.hpp"

namespace metalcall::msl {

// A '{' at i opens a namespace (or an extern "C" block).
bool opens_namespace(const std::vector<Token>& t, std::size_t i) {
  std::size_t j = i;
  while (j > 0) {
    --j;
    if (t[j].is_identifier("namespace")) return true;
    if (t[j].kind == TokenKind::identifier || t[j].is("::")) continue;
    if (t[j].kind == TokenKind::string && j > 0 && t[j - 1].is_identifier("extern")) return true;
    return false;
  }
  return false;
}

// The extent texts of `[a][b]…` from token j (a '['); j moves past the last ']'.
std::vector<std::string> array_extents(const std::vector<Token>& t, std::size_t& j) {
  std::vector<std::string> extents;
  while (j < t.size() && t[j].is("[")) {
    int depth = 0;
    std::string extent;
    std::size_t k = j;
    for (; k < t.size(); ++k) {
      if (t[k].is("[")) {
        if (depth++ == 0) continue;
      } else if (t[k].is("]") && --depth == 0) {
        break;
      }
      extent += (is_renamed_type(t[k].text) ? renamed_type(t[k].text) : t[k].text) + " ";
    }
    extents.push_back(extent);
    j = k + 1;
  }
  return extents;
}

// In an initializer, the '>' closing the '<' at lt (`vec<int, 2>(1, 2)`: its ',' separates no
// declarators), before limit and the statement's end; else lt itself (a comparison, `a < b`).
// Reading a comparison as template arguments (`a < b, y = c > d`) keeps that ',' as it is:
// the statement's declarators stay what C++ makes of them.
std::size_t initializer_template_close(const std::vector<Token>& t, std::size_t lt, std::size_t limit) {
  int angle = 0, depth = 0;
  for (std::size_t j = lt; j < t.size() && j < limit; ++j) {
    if (t[j].is("(") || t[j].is("[") || t[j].is("{")) {
      ++depth;
    } else if (t[j].is(")") || t[j].is("]") || t[j].is("}")) {
      if (--depth < 0) return lt;
    } else if (t[j].is(";")) {
      return lt;
    } else if (depth == 0 && t[j].is("<")) {
      ++angle;
    } else if (depth == 0 && (t[j].is(">") || t[j].is(">>"))) {
      angle -= t[j].is(">") ? 1 : 2;
      if (angle <= 0) return j;
    }
  }
  return lt;
}

namespace {

bool statement_boundary(const Token& b) {
  return b.is(";") || b.is("{") || b.is("}") || b.kind == TokenKind::directive;
}
// The token at j ends what comes before a declaration: a statement's end, or the ':' of an
// access specifier (`public: float a[4];`).
bool boundary_at(const std::vector<Token>& t, std::size_t j) {
  if (statement_boundary(t[j])) return true;
  return t[j].is(":") && j > 0 &&
         (t[j - 1].is_identifier("public") || t[j - 1].is_identifier("private") || t[j - 1].is_identifier("protected"));
}

// The '(' at j opens a `for` statement, whose init-statement may declare (`for (float b[2] = {…}; …)`).
bool opens_for_init(const std::vector<Token>& t, std::size_t j) {
  return t[j].is("(") && j > 0 && t[j - 1].is_identifier("for");
}
// A declaration starts after the token at j: a statement's boundary or a `for (`.
bool declaration_start_after(const std::vector<Token>& t, std::size_t j) {
  return boundary_at(t, j) || opens_for_init(t, j);
}

const char* const kNoExtent = "': give its extents and a braced initializer that spells out each row";
const char* const kOneStatement =
    "' declared together with others in one statement: declare it in a statement of its own";

// The initializer after the `=` at d.end: which braces to write twice (those of the
// array's own levels: the checked array is a struct around its elements), a string to
// wrap, the count for an empty first extent, and d.after (the `;` or `,` after it).
// Null, or why it cannot be checked.
const char* read_initializer(const std::vector<Token>& t, CheckedArray& d) {
  std::size_t j = d.end + 1;
  if (j < t.size() && t[j].kind == TokenKind::string && d.extents.size() == 1) {  // char s[6] = "hello";
    d.wrap_first = j;
    while (j + 1 < t.size() && t[j + 1].kind == TokenKind::string) ++j;
    d.wrap_last = j;
    d.after = j + 1;
    if (d.after >= t.size() || !(t[d.after].is(";") || t[d.after].is(","))) return kNoExtent;
    return d.extents[0].empty() ? kNoExtent : nullptr;
  }
  if (j >= t.size() || !t[j].is("{")) return kNoExtent;
  const int dims = static_cast<int>(d.extents.size());
  std::vector<bool> list;  // per open brace: an element list of the array's (not `float2{…}`)
  int depth = 0;           // open list braces
  long long items = 0;     // top-level elements
  bool all_braced = true, item_open = false;
  int parens = 0;  // open ( and [ in the top-level list (`float2(1, 2)` is one element)
  for (; j < t.size(); ++j) {
    const Token& c = t[j];
    if (depth == 1 && list.size() == 1 && !c.is("}") && !c.is(",") && !item_open) {
      item_open = true;
      ++items;
      all_braced = all_braced && c.is("{");
    }
    if (list.size() == 1 && (c.is("(") || c.is("["))) ++parens;
    if (list.size() == 1 && (c.is(")") || c.is("]"))) --parens;
    if (c.is(",") && list.size() == 1 && parens == 0) item_open = false;
    if (c.is("{")) {
      const Token& b = t[j - 1];
      const bool is_list = depth < dims && list.size() == static_cast<std::size_t>(depth) &&
                           (b.is("=") || b.is("{") || b.is(","));
      list.push_back(is_list);
      if (is_list) {
        d.doubled_braces.push_back(j);
        ++depth;
      }
    } else if (c.is("}")) {
      if (list.empty()) return kNoExtent;
      if (list.back()) {
        d.doubled_braces.push_back(j);
        --depth;
      }
      list.pop_back();
      if (list.empty()) break;
    }
  }
  if (j >= t.size() || j + 1 >= t.size() || !(t[j + 1].is(";") || t[j + 1].is(","))) return kNoExtent;
  d.after = j + 1;
  if (d.extents[0].empty()) {
    if (dims > 1 && !all_braced) return kNoExtent;  // `float t[][2] = {1, 2, 3}`: rows not spelled out
    d.extents[0] = std::to_string(items) + " ";
  }
  return nullptr;
}

// `float a[4], b[4], x;` (a, the first, in d; the ',' after it at comma): one statement per
// declarator, so that each array gets its own checked type: d.split_commas says what each
// ',' becomes, the later arrays go to found. False for a form it does not know.
bool split_declarators(const std::vector<Token>& t, CheckedArray& d, std::size_t comma, std::size_t first,
                       std::map<std::size_t, CheckedArray>& found) {
  std::string qualifiers;  // repeated for each declarator (`constant` is written `const`)
  for (std::size_t q = first; q < d.begin; ++q)
    if (!t[q].is_identifier("thread")) qualifiers += (t[q].is_identifier("constant") ? "const" : t[q].text) + " ";
  const std::string type = type_text(t, d.type, false) + " ";
  // A `thread` pointer declarator (`thread float a[4], *q;`) is a checked pointer, as in a
  // statement of its own: `; metal::mtl_checked<float> q;`.
  bool thread_pointers = false, plain_qualifiers = true;
  for (std::size_t q = first; q < comma && !t[q].is("="); ++q) thread_pointers = thread_pointers || t[q].is_identifier("thread");
  for (std::size_t q = first; q < d.begin; ++q)
    plain_qualifiers = plain_qualifiers && (t[q].is_identifier("thread") || t[q].is_identifier("const") || t[q].is_identifier("volatile"));
  std::map<std::size_t, std::string> commas;
  std::vector<CheckedArray> later;
  while (comma < t.size() && t[comma].is(",")) {
    std::size_t name = comma + 1;
    // `*q`, `*const q`: a pointer declarator (`float a[4], *q;`); `&r`: a reference (plain).
    std::vector<std::size_t> stars;
    bool reference = false;
    while (name < t.size() && !reference &&
           (t[name].is("*") || t[name].is("&") || (!stars.empty() && t[name].is_identifier("const")))) {
      if (t[name].is("*")) stars.push_back(name);
      reference = t[name].is("&");
      ++name;
    }
    if (reference && name < t.size() && t[name].is("[")) return false;
    if (name + 1 >= t.size() || t[name].kind != TokenKind::identifier) return false;
    std::size_t j = name + 1;
    const bool pointer_array = !stars.empty() && t[j].is("[");  // `*q[2]`: stays plain, as on its own
    if (pointer_array) {
      array_extents(t, j);
      if (j >= t.size()) return false;
    }
    if (t[j].is("[")) {
      CheckedArray e;
      e.begin = e.name = name;
      e.type = d.type;
      e.kind = d.kind;
      e.extents = array_extents(t, j);
      for (std::size_t x = 1; x < e.extents.size(); ++x)
        if (e.extents[x].empty()) return false;
      if (j >= t.size() || !(t[j].is(";") || t[j].is("=") || t[j].is(","))) return false;
      e.end = j;
      if (t[j].is("=")) {
        if (read_initializer(t, e)) return false;
        j = e.after;
      } else if (e.extents[0].empty()) {
        return false;
      }
      commas[comma] = "; " + qualifiers;  // the array writes its type itself
      later.push_back(std::move(e));
    } else {
      if (t[j].is("=")) {  // a variable's initializer: to the next ',' or ';' of the statement
        int depth = 0;
        for (++j; j < t.size(); ++j) {
          if (t[j].is("(") || t[j].is("[") || t[j].is("{")) ++depth;
          else if (t[j].is(")") || t[j].is("]") || t[j].is("}")) --depth;
          else if (depth == 0 && (t[j].is(",") || t[j].is(";"))) break;
          else if (depth == 0 && t[j].is("<")) j = initializer_template_close(t, j, t.size());  // `x = vec<int, 2>(…)`
        }
      }
      if (j >= t.size() || !(t[j].is(",") || t[j].is(";"))) return false;
      // (`**q`, or with `static`: a plain pointer, as a `thread` pointer parameter of a template stays.)
      if (stars.size() == 1 && thread_pointers && plain_qualifiers && !pointer_array && !reference) {
        commas[comma] = "; metal::mtl_checked<" + qualifiers + type + ">";
        commas[stars.front()] = " ";  // (a `const` after it stays: `mtl_checked<float> const r`)
      } else {
        commas[comma] = "; " + qualifiers + type;
      }
    }
    comma = j;
  }
  if (comma >= t.size() || !t[comma].is(";")) return false;
  d.split_commas = std::move(commas);
  for (auto& e : later) found[e.begin] = std::move(e);
  return true;
}

// Words that end a declaration's type when walking back from its name.
bool is_statement_keyword(const std::string& word) {
  static const auto& words = *new std::set<std::string>{
      "return", "case", "default", "goto", "else", "do", "typedef", "using", "static", "constexpr", "extern",
      "threadgroup", "constant", "device", "thread_local", "friend", "operator", "template", "new", "delete",
      "sizeof", "throw", "if", "while", "for", "switch", "break", "continue", "alignas", "decltype", "struct",
      "class", "union", "enum", "public", "private", "protected", "namespace"};
  return words.count(word) > 0;
}

enum class Split { not_a_declaration, split, cannot_split };

// True when the '{' at i opens statements or members (a function's or a lambda's body, a block,
// a class or a namespace), not a braced list (`float2 v = {x * y, w[k]}`, `return {…}`,
// `T{…}`, a member initialiser `m{…}`), whose ',' separates values, not declarators.
bool opens_statements(const std::vector<Token>& t, std::size_t i) {
  if (i == 0) return true;
  const Token& b = t[i - 1];
  // After `)` (a body, `if (…) {`), `;`, `}`, a label's or a case's ':' and the qualifiers
  // after a member function's parameters (`) const thread {`).
  if (b.is(")") || b.is(";") || b.is("}") || b.is(":") || b.kind == TokenKind::directive) return true;
  static const auto& after = *new std::set<std::string>{
      "else", "do", "try", "const", "volatile", "thread", "device", "constant", "threadgroup", "noexcept",
      "mutable", "override", "final"};
  if (b.kind == TokenKind::identifier && after.count(b.text)) return true;
  if (b.is("{")) return opens_statements(t, i - 1);  // a block in a block; `{{…}}` a nested list
  if (opens_namespace(t, i)) return true;
  // `struct S<int> : B {`: a class's body, found by its keyword.
  for (std::size_t k = i; k > 0;) {
    --k;
    if (t[k].is(";") || t[k].is("{") || t[k].is("}") || t[k].is("(") || t[k].is(")") || t[k].is("=")) break;
    if (t[k].is_identifier("struct") || t[k].is_identifier("class") || t[k].is_identifier("union") ||
        t[k].is_identifier("enum"))
      return true;
  }
  return false;
}

// `float x, t[4];`, `float *q, t[4];` (the array at `name`, after a declarator that is not
// an array): from the statement's start, its type and the first declarator, then
// split_declarators as for an array first; the statement's ',' rewrites go with the first
// array. not_a_declaration where the statement is not a local declaration this knows (an
// expression: `f(a, t[i])`), cannot_split where it is one with a declarator split_declarators
// does not know (`float x, t[4], (*p)[4];`).
Split split_after_scalar(const std::vector<Token>& t, std::size_t name, int kind,
                         std::map<std::size_t, CheckedArray>& found) {
  constexpr Split no = Split::not_a_declaration;
  std::size_t first = name;
  int depth = 0;  // brackets of initializers (`float x = f(a, b), t[4];`)
  while (first > 0) {
    const Token& b = t[first - 1];
    if (b.is(")") || b.is("]") || b.is("}")) {
      if (b.is("}") && depth == 0) break;
      ++depth;
    } else if (b.is("(") || b.is("[") || b.is("{")) {
      if (depth == 0) break;
      --depth;
    } else if (depth == 0 && boundary_at(t, first - 1)) {
      break;
    }
    --first;
  }
  // Declarators follow a statement's start; after an open bracket, values do (a call's
  // arguments `mul(a * b, w[k])`, a parameter list, a braced list), except in `for (`, whose
  // declarators cannot be split into statements.
  const bool for_init = first > 0 && opens_for_init(t, first - 1);
  if (first > 0 && (t[first - 1].is("(") || t[first - 1].is("["))) {
    if (!for_init) return no;
  } else if (first > 0 && t[first - 1].is("{") && !opens_statements(t, first - 1)) {
    return no;
  }
  // The type: [const|thread|volatile…] names, `::` and template arguments, then the first declarator's name.
  std::size_t j = first;
  while (j < name && (t[j].is_identifier("const") || t[j].is_identifier("thread") || t[j].is_identifier("volatile"))) ++j;
  CheckedArray head;
  head.begin = j;
  head.kind = kind;
  std::size_t type_end = name;  // a pointer declarator's '*' (`float *q, t[4];`), else the name
  while (j < name) {
    if (t[j].kind == TokenKind::identifier && j + 1 < name && (t[j + 1].is("=") || t[j + 1].is(","))) break;
    if (t[j].is("*") && j > head.begin) {
      type_end = j;
      while (j < name && (t[j].is("*") || t[j].is_identifier("const"))) ++j;
      if (j + 1 >= name || t[j].kind != TokenKind::identifier || !(t[j + 1].is("=") || t[j + 1].is(","))) return no;
      break;
    }
    if (t[j].is("<")) {  // template arguments: to the matching '>'
      int angle = 0;
      for (; j < name; ++j) {
        if (t[j].is("<")) ++angle;
        else if (t[j].is(">")) --angle;
        else if (t[j].is(">>")) angle -= 2;
        if (angle <= 0) break;
      }
      if (angle != 0) return no;
      ++j;
      continue;
    }
    if (!(t[j].is("::") || t[j].is_identifier("const") || t[j].is_identifier("volatile") ||
          (t[j].kind == TokenKind::identifier && !is_statement_keyword(t[j].text))))
      return no;
    ++j;
  }
  if (j >= name || j == head.begin) return no;
  if (type_end == name) type_end = j;
  for (std::size_t k = head.begin; k < type_end; ++k)
    if (!t[k].is_identifier("thread")) head.type.push_back(k);
  // The first declarator's initializer, to the ',' of the statement.
  std::size_t comma = j + 1;
  if (t[comma].is("=")) {
    int level = 0;
    for (++comma; comma < name; ++comma) {
      if (t[comma].is("(") || t[comma].is("[") || t[comma].is("{")) ++level;
      else if (t[comma].is(")") || t[comma].is("]") || t[comma].is("}")) --level;
      else if (level == 0 && t[comma].is(",")) break;
      else if (level == 0 && t[comma].is("<")) comma = initializer_template_close(t, comma, name);  // `x = vec<int, 2>(…)`
    }
  }
  if (comma >= name || !t[comma].is(",")) return no;
  if (for_init) return Split::cannot_split;
  if (!split_declarators(t, head, comma, first, found)) return Split::cannot_split;
  auto array = found.find(name);
  if (array == found.end()) return no;
  array->second.split_commas.insert(head.split_commas.begin(), head.split_commas.end());
  return Split::split;
}

// `[thread] [const] SPACE TYPE [const] * [const] name[N]…` at a statement's start (SPACE:
// device, constant or threadgroup; a `thread` before it is the array's own): an array of checked
// pointers, whose index is checked as any array's (before 2026-12-03 it stayed a C array, and
// `ps[k]` read a pointer and its bounds from anywhere). False when the name at i is not one;
// else d has the type's first token, the '*', and why it is refused, if it is.
bool pointer_array(const std::vector<Token>& t, std::size_t i, bool namespace_scope, CheckedArray& d) {
  std::size_t star = i;
  while (star > 0 && (t[star - 1].is_identifier("const") || t[star - 1].is_identifier("constant"))) --star;
  if (star < 2 || !t[star - 1].is("*")) return false;
  d.const_pointer = star != i;
  d.pointer_star = --star;
  bool space = false, storage = false;
  int angle = 0;
  std::size_t k = star;
  for (; k > 0; --k) {
    const Token& b = t[k - 1];
    if (angle == 0 && boundary_at(t, k - 1)) break;
    if (b.is(">") || b.is(">>")) {
      angle += b.is(">") ? 1 : 2;
    } else if (b.is("<")) {
      if (--angle < 0) return false;
    } else if (angle == 0 && b.kind == TokenKind::identifier) {
      if (b.is_identifier("device") || b.is_identifier("constant") || b.is_identifier("threadgroup")) space = true;
      else if (b.is_identifier("static") || b.is_identifier("constexpr")) storage = true;
      else if (is_statement_keyword(b.text)) return false;
    } else if (angle == 0 && !b.is("::")) {
      return false;
    }
  }
  if (!space || k == star) return false;
  d.begin = k;
  d.name = i;
  std::size_t j = i + 1;
  d.extents = array_extents(t, j);
  d.end = j;
  const char* why = nullptr;
  for (std::size_t e = 1; e < d.extents.size(); ++e)
    if (d.extents[e].empty()) why = kNoExtent;
  if (j >= t.size() || !(t[j].is(";") || t[j].is("=") || t[j].is(","))) why = kNoExtent;
  else if (!why && t[j].is("=")) why = read_initializer(t, d);
  else if (!why && d.extents[0].empty()) why = kNoExtent;
  if (!why && t[t[j].is("=") ? d.after : j].is(",")) why = kOneStatement;
  if (why) {
    d.refused = "checked mode cannot bounds-check the array of pointers '" + t[i].text + why +
                ", or compile it without checked=True";
  } else if (namespace_scope || storage) {
    d.refused = "checked mode cannot bounds-check the array of pointers '" + t[i].text +
                "' outside a function's or a struct's body (or static): declare it in one, or compile it "
                "without checked=True";
  }
  return true;
}

}  // namespace

// Checked mode: `T name[N]…;` (or `T name[N] = {…};`) declared in a function body
// or a struct, found syntactically: the type runs back to the statement's start,
// only names, `::`, `const` and template arguments. Before the type: `constant`,
// `constexpr`, `static` (constant data: a lookup table, also at program scope).
// Pointer arrays stay plain; what cannot be checked is refused (CheckedArray::refused).
std::map<std::size_t, CheckedArray> find_checked_arrays(const std::vector<Token>& t) {
  static const auto& storage = *new std::set<std::string>{"static", "constexpr", "constant"};
  std::map<std::size_t, CheckedArray> found;
  std::vector<int> scopes;  // per open brace: 0 namespace, 1 function or block, 2 struct
  for (std::size_t i = 0; i + 1 < t.size(); ++i) {
    if (t[i].is("{")) {
      int kind = opens_namespace(t, i) ? 0 : 1;
      for (std::size_t k = i; k > 0 && kind == 1;) {
        --k;
        if (t[k].is(";") || t[k].is("{") || t[k].is("}") || t[k].is(")")) break;
        if (t[k].is_identifier("struct") || t[k].is_identifier("class") || t[k].is_identifier("union")) kind = 2;
      }
      scopes.push_back(kind);
      continue;
    }
    if (t[i].is("}")) {
      if (!scopes.empty()) scopes.pop_back();
      continue;
    }
    const bool namespace_scope = scopes.empty() || scopes.back() == 0;
    if (t[i].kind != TokenKind::identifier || !t[i + 1].is("[") || (i > 0 && (t[i - 1].is(".") || t[i - 1].is("->")))) continue;
    if (is_statement_keyword(t[i].text)) continue;  // `device T* operator [] (size_t i)`: no array's name
    if (i + 2 < t.size() && t[i + 2].is("[")) continue;  // an attribute
    CheckedArray d;
    if (pointer_array(t, i, namespace_scope, d)) {
      d.kind = !namespace_scope && scopes.back() == 2 ? 2 : 1;
      found[d.begin] = std::move(d);
      continue;
    }
    d.name = i;
    std::size_t k = i;
    bool ok = true;
    while (k > 0) {
      const Token& b = t[k - 1];
      if (declaration_start_after(t, k - 1) || (b.kind == TokenKind::identifier && storage.count(b.text))) break;
      if (b.is(">") || b.is(">>")) {  // template arguments: back to the matching '<'
        int depth = 0;
        while (k > 0) {
          const Token& c = t[k - 1];
          if (c.is(">")) ++depth;
          else if (c.is(">>")) depth += 2;
          else if (c.is("<")) --depth;
          else if (c.is(";") || c.is("{") || c.is("}")) break;
          --k;
          if (depth <= 0) break;
        }
        if (depth != 0) ok = false;
        continue;
      }
      if (b.is("::") || (b.kind == TokenKind::identifier && !is_statement_keyword(b.text))) {
        --k;
        continue;
      }
      ok = false;
      break;
    }
    // Storage qualifiers before the type (`constexpr constant`, `static const`, …).
    bool constant_data = false;
    for (std::size_t q = k; ok && q > 0 && !declaration_start_after(t, q - 1); --q) {
      const Token& b = t[q - 1];
      if (b.kind == TokenKind::identifier && storage.count(b.text)) constant_data = true;
      else if (!b.is_identifier("const") && !b.is_identifier("thread")) ok = false;
    }
    if (!ok && k == i && t[i - 1].is(",") && !namespace_scope && !found.count(i)) {
      if (split_after_scalar(t, i, scopes.back() == 2 ? 2 : 1, found) == Split::cannot_split) {  // `float x, t[4];`
        d.begin = i;
        d.refused = "checked mode cannot bounds-check the array '" + t[i].text + kOneStatement +
                    ", or compile it without checked=True";
        found[i] = std::move(d);
      }
      continue;
    }
    // `float S<6>::table[8]`: a static member's definition, checked like its declaration
    // (constant data); the qualifier starts at qualified.
    std::size_t qualified = i;
    while (ok && qualified > k && t[qualified - 1].is("::")) {
      std::size_t q = qualified - 1;
      if (q > k && t[q - 1].is(">")) {
        int depth = 0;
        do {
          --q;
          if (t[q].is(">")) ++depth;
          else if (t[q].is("<")) --depth;
        } while (q > k && depth > 0);
      }
      if (q == k || t[q - 1].kind != TokenKind::identifier) break;
      qualified = q - 1;
    }
    if (!ok || k == i || (qualified == i && t[i - 1].is("::"))) continue;
    if ((namespace_scope || qualified != i) && !constant_data) continue;
    if (qualified == k) continue;
    d.kind = constant_data ? 3 : scopes.back() == 2 ? 2 : 1;
    d.begin = k;
    for (std::size_t j = k; j < qualified; ++j)
      if (!t[j].is_identifier("thread")) d.type.push_back(j);
    for (std::size_t j = qualified; j < i; ++j) d.qualifier += t[j].text;
    if (d.type.empty()) continue;
    std::size_t j = i + 1;
    d.extents = array_extents(t, j);
    if (j >= t.size() || d.extents.empty()) continue;
    for (std::size_t e = 1; e < d.extents.size(); ++e)
      if (d.extents[e].empty()) ok = false;
    if (!ok || !(t[j].is(";") || t[j].is("=") || t[j].is(","))) continue;
    d.end = j;
    const char* why = t[j].is("=") ? read_initializer(t, d) : d.extents[0].empty() ? kNoExtent : nullptr;
    const std::size_t after = t[j].is("=") ? d.after : j;
    if (!why && t[after].is(",")) {
      std::size_t first = k;
      while (first > 0 && !declaration_start_after(t, first - 1)) --first;
      // (A `for`'s declarators cannot become statements of their own.)
      if ((first > 0 && opens_for_init(t, first - 1)) || !split_declarators(t, d, after, first, found)) why = kOneStatement;
    }
    if (why) {
      d.refused = "checked mode cannot bounds-check the array '" + t[i].text + why +
                  ", or compile it without checked=True";
    }
    found[k] = std::move(d);
  }
  // Constant data has const elements (`mtl_checked_array<const float, …>`), however the
  // source spells it: `static constexpr constant float v[2]` in a class and `constant
  // constexpr const float S::v[2];` outside it must declare the same type.
  for (auto& [first, d] : found) {
    if (d.kind != 3) continue;
    int angle = 0;
    bool is_const = false;
    for (std::size_t k : d.type) {
      if (t[k].is("<")) ++angle;
      else if (t[k].is(">")) --angle;
      else if (t[k].is(">>")) angle -= 2;
      is_const = is_const || (angle == 0 && t[k].is_identifier("const"));
    }
    d.const_element = !is_const;
  }
  return found;
}

// Checked mode: `&s` in a kernel's body, for its parameter `constant T& s`, becomes a checked pointer over the argument's bytes, so that
// `(&s)[1]` faults instead of reading past them.
std::map<std::size_t, std::string> find_checked_addresses(const std::vector<Token>& t,
                                                           const std::vector<ParsedKernel>& kernels) {
  std::map<std::size_t, std::string> found;
  for (const auto& k : kernels) {
    for (const auto& p : k.params) {
      // (Not a by-value one: its address is a `thread` pointer, which stays plain.)
      if (p.info.kind != ParamKind::reference) continue;
      const std::string what = "argument '" + p.info.name + "' (buffer(" + std::to_string(p.info.binding) + "))";
      const std::string count =
          "metal::mtl_rt::launch->arg_bytes[" + std::to_string(p.info.position) + "] / sizeof(" + p.info.name + ")";
      for (std::size_t i = k.body_open + 1; i + 1 < k.body_close; ++i) {
        if (!t[i].is("&") || !t[i + 1].is_identifier(p.info.name.c_str())) continue;
        const Token& before = t[i - 1];
        const bool binary = before.kind == TokenKind::identifier || before.kind == TokenKind::number ||
                            before.is(")") || before.is("]");
        const Token& after = t[i + 2];
        if (binary || after.is(".") || after.is("->") || after.is("[") || after.is("(") || after.is("::")) continue;
        found[i] = "metal::mtl_rt::checked_address(" + p.info.name + ", " + count + ", \"" + what + "\")";
      }
    }
  }
  return found;
}

namespace {

// The name token of the template whose argument list holds the pointer type [i, star]
// (`elem<const device float*>`: `elem`), or npos (a cast's, a parameter list's, none).
std::size_t enclosing_template(const std::vector<Token>& t, std::size_t i, std::size_t star) {
  if (star + 1 >= t.size() || !(t[star + 1].is(">") || t[star + 1].is(">>") || t[star + 1].is(","))) return std::string::npos;
  static const auto& casts = *new std::set<std::string>{"static_cast", "reinterpret_cast", "const_cast", "as_type", "bit_cast"};
  int depth = 0;
  for (std::size_t j = i; j-- > 0;) {
    if (t[j].is(">") || t[j].is(")") || t[j].is("]")) {
      ++depth;
    } else if (t[j].is(">>")) {
      depth += 2;
    } else if (t[j].is("(") || t[j].is("[")) {
      if (depth-- == 0) return std::string::npos;  // a parameter list (`f(device float*, int)`)
    } else if (t[j].is("<")) {
      if (depth-- > 0) continue;
      const bool named = j > 0 && t[j - 1].kind == TokenKind::identifier && !casts.count(t[j - 1].text);
      return named ? j - 1 : std::string::npos;
    } else if (t[j].is(";") || t[j].is("{") || t[j].is("}")) {
      return std::string::npos;
    }
  }
  return std::string::npos;
}

}  // namespace

bool in_specialization_pattern(const std::vector<Token>& t, std::size_t i, std::size_t star) {
  const std::size_t name = enclosing_template(t, i, star);
  if (name == std::string::npos || name < 2) return false;
  const Token& key = t[name - 1];
  return (key.is_identifier("struct") || key.is_identifier("class") || key.is_identifier("union")) && t[name - 2].is(">");
}

// Every template argument that is a pointer type is a checked pointer (W<device float*> w,
// metal::array<thread float*, 2>, traits asked of a pointer type alike: what they are asked of is
// a checked pointer in this translation); before 2026-12-03 they stayed plain pointers, whose
// accesses (`w.p[at]`) no bounds covered.
bool is_template_argument(const std::vector<Token>& t, std::size_t i, std::size_t star) {
  return enclosing_template(t, i, star) != std::string::npos;
}

}  // namespace metalcall::msl
