// Conversions to a kind of type that the tokens show (conversion_sites.hpp).
#include "msl/passes/conversion_sites.hpp"

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <string>

#include "msl/analysis/call_graph.hpp"       // matching
#include "msl/analysis/declaration_lists.hpp"  // template_parameters
#include "msl/analysis/source_analysis.hpp"  // bit_field_names
#include "msl/passes/small_negations.hpp"  // unary_operand_end
#include "msl/passes/scoped_type_names.hpp"
#include "msl/passes/type_scopes.hpp"

namespace metalcall::msl {

namespace {

// Whether s names a vector (packed or not) whose component type `kind` says yes to: short2, packed_half3.
bool is_vector_of(const std::string& s, TypeKind kind) {
  const std::string base = s.rfind("packed_", 0) == 0 ? s.substr(7) : s;
  return base.size() > 1 && (base.back() == '2' || base.back() == '3' || base.back() == '4') &&
         kind(base.substr(0, base.size() - 1));
}


bool is_scalar_type_name(const std::string& s) {
  static const auto& names = *new std::set<std::string>{"bool", "char", "uchar", "short", "ushort", "int", "uint",
                                                   "long", "ulong", "half", "float", "bfloat", "double"};
  return names.count(s) > 0;
}

// The component type of a vector's name: short of short4 and packed_short3.
std::string component_type(const std::string& vector) {
  const std::string base = vector.rfind("packed_", 0) == 0 ? vector.substr(7) : vector;
  return base.substr(0, base.size() - 1);
}

bool is_type_word(const Token& k) {
  static const auto& words = *new std::set<std::string>{"unsigned", "signed", "long", "short", "int", "char"};
  return k.kind == TokenKind::identifier && words.count(k.text) > 0;
}

// The type's words ending at the token at last: `unsigned int`, `long long`, `short`.
std::string type_words(const std::vector<Token>& t, std::size_t last) {
  std::string type = t[last].text;
  for (std::size_t k = last; k-- > 0 && is_type_word(t[k]);) type = t[k].text + " " + type;
  return type;
}

// Whether a token names components of a vector: x, yz, rgba (the letters of one set).
bool is_swizzle(const Token& k) {
  if (k.kind != TokenKind::identifier || k.text.size() > 4) return false;
  const bool xyzw = k.text.find_first_not_of("xyzw") == std::string::npos;
  return xyzw || k.text.find_first_not_of("rgba") == std::string::npos;
}

bool is_empty_argument(std::size_t open, std::size_t close) { return open + 1 >= close; }

bool is_literal_range(const std::vector<Token>& t, std::size_t b, std::size_t e) {
  if (b < e && (t[b].is("-") || t[b].is("+"))) ++b;
  return b + 1 == e && (t[b].kind == TokenKind::number || t[b].kind == TokenKind::character);
}

// The end of the expression from b: the `;` (or, with commas, a `,`) at its own depth, or
// t.size() where a bracket closes first or the file ends.
std::size_t expression_end(const std::vector<Token>& t, std::size_t b, bool commas) {
  for (std::size_t k = b; k < t.size(); ++k) {
    // A brace only as a braced temporary `S{a, b}`: after `)` it opens a lambda's or a
    // function's body (`template <short N = 3> short f() {`), not an initialiser's part.
    if (t[k].is("{") && (k == 0 || t[k - 1].kind != TokenKind::identifier)) return t.size();
    if (t[k].is("(") || t[k].is("[") || t[k].is("{")) {
      k = matching(t, k);
      if (k >= t.size()) return t.size();
    } else if (t[k].is(";") || (commas && t[k].is(","))) {
      return k;
    } else if (t[k].is(")") || t[k].is("]") || t[k].is("}") || t[k].is(",")) {
      return t.size();
    }
  }
  return t.size();
}

bool is_compound_assignment(const Token& k) {
  static const auto& ops = *new std::set<std::string>{"+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>="};
  return k.kind == TokenKind::punct && ops.count(k.text) > 0;
}

// A token after which a statement starts.
bool starts_statement(const Token& p) {
  return p.is(";") || p.is("{") || p.is("}") || p.is(")") || p.is(":") || p.is_identifier("else") ||
         p.is_identifier("do");
}


// Calls item(begin, end) for each comma-separated part of the bracketed list from t[open] to
// its match t[close], skipping nested brackets (a bracket that runs past close ends the walk).
template <class Item>
void for_each_list_item(const std::vector<Token>& t, std::size_t open, std::size_t close, Item&& item) {
  std::size_t start = open + 1;
  for (std::size_t k = open + 1; k <= close; ++k) {
    if (t[k].is("(") || t[k].is("[") || t[k].is("{")) {
      k = matching(t, k);
      if (k >= close) break;
      continue;
    }
    if (k < close && !t[k].is(",")) continue;
    item(start, k);
    start = k + 1;
  }
}

// Whether the name at `name`, a function's whose parameters follow, returns a type of the kind.
bool returns_kind(const std::vector<Token>& t, std::size_t name, const TypeTest& kind) {
  return name > 0 && t[name - 1].kind == TokenKind::identifier && kind.is(name - 1) &&
         (name < 2 || !(t[name - 2].is("::") || t[name - 2].is(".")));
}

// Whether the name at i, its parameters opening at i + 1, has a body: `) const {`.
bool has_body(const std::vector<Token>& t, std::size_t i) {
  std::size_t k = matching(t, i + 1);
  if (k >= t.size()) return false;
  ++k;
  while (k < t.size() && t[k].kind == TokenKind::identifier) ++k;  // const, thread, noexcept
  return k < t.size() && t[k].is("{");
}

// Whether the declaration whose name is at i says `constexpr` (constant-evaluated: nothing for
// NVVM to narrow, and NVRTC parsed a wrapped template call there as a type: candle's reduce.metal).
bool is_constexpr(const std::vector<Token>& t, std::size_t i) {
  for (std::size_t k = i; k-- > 0 && i - k < 16;) {
    if (t[k].is(";") || t[k].is("{") || t[k].is("}")) return false;
    if (t[k].is_identifier("constexpr")) return true;
  }
  return false;
}

// A parameter of the kind: `short p`, `const uint q` (its type's words), or "" where the
// parameter is of another type (or not plainly one type and a name).
std::string parameter_type(const std::vector<Token>& t, std::size_t b, std::size_t e, const TypeTest& kind) {
  if (b < e && t[b].is_identifier("const")) ++b;
  if (e < b + 2 || t[e - 1].kind != TokenKind::identifier || !kind.is(e - 2)) return "";
  for (std::size_t k = b; k + 1 < e; ++k)  // `unsigned int p`: every token before the name a type word
    if (t[k].kind != TokenKind::identifier) return "";
  const std::string words = type_words(t, e - 2);
  return std::count(words.begin(), words.end(), ' ') + 2 == static_cast<long>(e - b) ? kind.name(e - 2) : "";
}

class Finder {
 public:
  Finder(const std::vector<Token>& t, TypeKind kind_name, const TypeScopes* own, std::vector<ConversionSite>& out)
      : t(t), own(own), kind{[this, kind_name](std::size_t k) { return of_kind(k, kind_name); },
                             [this, kind_name](std::size_t k) { return type_at(k, kind_name); }},
        out(out), names(t, kind), vectors(t, words_test([kind_name](const std::string& s) { return is_vector_of(s, kind_name); })),
        any_vectors(t, words_test([](const std::string& s) { return is_vector_of(s, is_scalar_type_name); })),
        bit_fields_(bit_field_names(t)) {}

  void casts();
  void declarations_and_assignments();
  void arguments();
  void returns();

 private:
  // `= EXPR;` from the `=` at eq, a site where it is plainly delimited.
  void value(ConversionSite::Form form, std::size_t eq, const std::string& type, std::size_t target_first = 0) {
    const std::size_t b = eq + 1, e = expression_end(t, b, false);
    if (e >= t.size() || b >= e || t[b].is("{")) return;
    ConversionSite s(form, b, e);
    s.type = type;
    s.literal = is_literal_range(t, b, e);
    s.bit_field = names_bit_field(b, e);
    if (form == ConversionSite::Form::assignment) {
      s.target_first = target_first;
      s.target_end = eq;
    }
    out.push_back(s);
  }
  void assignment(std::size_t i);
  void parameters_of(const std::string& name, std::size_t open, std::size_t close,
                     const std::vector<std::string>& deduced = {});

  // Whether token k names a type of the kind: one of its names, or (own) a template parameter or
  // an alias that may stand for one there (not a member: `S::U`, `s.U`).
  bool of_kind(std::size_t k, TypeKind kind_name) const {
    if (k >= t.size() || t[k].kind != TokenKind::identifier) return false;
    if (kind_name(t[k].text)) return true;
    if (!own || (k > 0 && (t[k - 1].is("::") || t[k - 1].is(".") || t[k - 1].is("->")))) return false;
    return own->may_be(k, kind_name);
  }
  // The type at token k as a site records it: its words, or its name with its scope (`U@3`:
  // conversion_sites keeps a site of it only where that scope holds).
  std::string type_at(std::size_t k, TypeKind kind_name) const {
    if (kind_name(t[k].text) || !own) return type_words(t, k);
    return t[k].text + "@" + std::to_string(own->scope_at(k));
  }
  TypeTest words_test(std::function<bool(const std::string&)> f) const {
    return {[this, f](std::size_t k) { return f(t[k].text); }, [this](std::size_t k) { return type_words(t, k); }};
  }
  void declarators(std::size_t i, const std::string& type);

  const std::vector<Token>& t;
  const TypeScopes* own;
  TypeTest kind;
  std::vector<ConversionSite>& out;
  // Whether tokens [b, e) name a bit-field member.
  bool names_bit_field(std::size_t b, std::size_t e) const {
    for (std::size_t k = b; k < e; ++k)
      if (t[k].kind == TokenKind::identifier && bit_fields_.count(t[k].text)) return true;
    return false;
  }

  const ScopedNames names, vectors, any_vectors;
  std::set<std::string> bit_fields_;
  std::map<std::string, std::vector<std::string>> params_;  // each parameter's type, "" if not of the kind
  std::set<std::string> unclear_;                           // overloads differ in which parameters are
};

void Finder::casts() {
  auto add = [&](std::size_t open, const std::string& type) {
    if (open >= t.size() || !t[open].is("(")) return;
    const std::size_t close = matching(t, open);
    if (close >= t.size() || is_empty_argument(open, close)) return;
    // `uchar (&a)[4]`, `char (*f)(int)`: a declarator, not a conversion
    if (close + 1 < t.size() && (t[close + 1].is("[") || t[close + 1].is("("))) return;
    // `U(a, b)` of a template parameter U: a constructor's arguments (float2), not one value
    bool several = false;
    for_each_list_item(t, open, close, [&](std::size_t, std::size_t e) { several = several || e < close; });
    if (several) return;
    ConversionSite s(ConversionSite::Form::cast, open + 1, close);
    s.type = type;
    s.literal = is_literal_range(t, open + 1, close);
    s.bit_field = names_bit_field(open + 1, close);
    out.push_back(s);
  };
  for (std::size_t i = 0; i + 1 < t.size(); ++i) {
    if (t[i].kind != TokenKind::identifier) continue;
    if (t[i].text == "static_cast" && i + 4 < t.size() && t[i + 1].is("<")) {
      // static_cast<short>(x), static_cast<unsigned int>(x)
      std::size_t last = i + 2;
      while (last + 1 < t.size() && is_type_word(t[last]) && is_type_word(t[last + 1])) ++last;
      if (last + 2 < t.size() && t[last + 1].is(">") && kind.is(last) && (last == i + 2 || is_type_word(t[last])))
        add(last + 2, kind.name(last));
      continue;
    }
    if (!kind.is(i)) continue;
    // The type's first word: `unsigned` of `(unsigned int)x`.
    std::size_t d = i;
    if (is_type_word(t[i]))
      while (d > 0 && is_type_word(t[d - 1])) --d;
    // After `::`, `.` or `->` a member; after a name other than `return` a declaration
    // (`thread uchar (&a)[4]`, `const short (x)`).
    const bool qualified = d > 0 && (t[d - 1].is("::") || t[d - 1].is(".") || t[d - 1].is("->") ||
                                     (t[d - 1].kind == TokenKind::identifier && t[d - 1].text != "return"));
    if (qualified) continue;
    const std::string type = kind.name(i);
    if (t[i + 1].is("(")) {
      if (d == i) add(i + 1, type);  // short(x) (`unsigned int(x)` is no C++)
    } else if (d > 0 && t[d - 1].is("(") && t[i + 1].is(")") && i + 2 < t.size()) {
      if (t[i + 2].is("(")) {
        add(i + 2, type);  // (short)(x)
      } else if (d > 1 && !(t[d - 2].kind == TokenKind::identifier && !t[d - 2].is_identifier("return")) &&
                 !t[d - 2].is(")") && !t[d - 2].is("]") && !t[d - 2].is(">")) {
        // (short)x, (short)a[i].y, (short)f(x): the operand a unary minus would have (not after
        // a name or a bracket, where `(T)` is a parameter list: `f(int) const`)
        const std::size_t e = unary_operand_end(t, i + 1);
        if (e < t.size()) {
          ConversionSite s(ConversionSite::Form::cast, i + 2, e);
          s.type = type;
          s.bit_field = names_bit_field(i + 2, e);
          out.push_back(s);
        }
      }
    }
  }
}

// `v = EXPR;`, `v op= EXPR;`, `out[i] = EXPR;`, `s.m op= EXPR;`, `p->m[j] = EXPR;` from the
// statement's first token at i: a chain of members and subscripts whose last part is a name of
// the kind or an element of one. A vector's components count as such a name (`v.x = EXPR`,
// `v[k] -= EXPR`, `out[i].y *= EXPR`; `v.xy = EXPR`, several components).
void Finder::assignment(std::size_t i) {
  std::size_t after = i, last = i;
  const std::string* type = nullptr;
  bool several_components = false;
  while (after < t.size()) {
    if (t[after].kind != TokenKind::identifier) break;
    last = after++;
    type = names.value(last, t[last].text);
    const std::string* vector = vectors.value(last, t[last].text);
    bool any_vector = any_vectors.value(last, t[last].text);
    std::string component;
    if (vector && !vector->empty()) component = component_type(*vector);
    if (after < t.size() && t[after].is("[")) {
      type = names.elements(last, t[last].text);
      if (vector) type = &component;
      vector = vectors.elements(last, t[last].text);
      any_vector = any_vectors.elements(last, t[last].text);
      if (vector && !vector->empty()) component = component_type(*vector);
      after = matching(t, after);
      if (after >= t.size()) break;
      ++after;
      if (after < t.size() && t[after].is("[")) {  // a[i][j]: the component of a vector element only
        type = vector ? &component : nullptr;
        vector = nullptr;
        any_vector = false;
        after = matching(t, after);
        if (after >= t.size()) break;
        ++after;
      }
    }
    if (any_vector && after + 1 < t.size() && t[after].is(".") && is_swizzle(t[after + 1])) {
      // a component (or several) of a vector: of the kind where the vector's are
      type = vector ? &component : nullptr;
      several_components = t[after + 1].text.size() > 1;
      after += 2;
      break;
    }
    if (after + 1 < t.size() && (t[after].is(".") || t[after].is("->"))) {
      ++after;
      continue;
    }
    break;
  }
  if (!type || after >= t.size()) return;
  if (t[after].is("=")) {
    const std::size_t before = out.size();
    value(ConversionSite::Form::assignment, after, *type, i);
    if (out.size() > before) out.back().several_components = several_components;
  } else if (is_compound_assignment(t[after])) {
    const std::size_t e = expression_end(t, after + 1, false);
    if (e >= t.size() || after + 1 >= e) return;
    ConversionSite s(ConversionSite::Form::compound, after + 1, e);
    s.target_first = i;
    s.target_end = after;
    s.type = *type;
    s.literal = is_literal_range(t, after + 1, e);
    s.several_components = several_components;
    s.bit_field = names_bit_field(i, after + 1);
    out.push_back(s);
  }
}

void Finder::declarations_and_assignments() {
  for (std::size_t i = 1; i + 1 < t.size(); ++i) {
    // `*p = EXPR;`, `*p op= EXPR;` through a pointer to the kind (`*out = sum;`)
    if (t[i].is("*") && starts_statement(t[i - 1]) && i + 2 < t.size() && t[i + 1].kind == TokenKind::identifier) {
      const std::string* type = names.elements(i + 1, t[i + 1].text);
      if (type && t[i + 2].is("=")) {
        value(ConversionSite::Form::assignment, i + 2, *type, i);
      } else if (type && is_compound_assignment(t[i + 2])) {
        const std::size_t e = expression_end(t, i + 3, false);
        if (e < t.size() && i + 3 < e) {
          ConversionSite s(ConversionSite::Form::compound, i + 3, e);
          s.target_first = i;
          s.target_end = i + 2;
          s.type = *type;
          s.literal = is_literal_range(t, i + 3, e);
          out.push_back(s);
        }
      }
      continue;
    }
    if (t[i].kind != TokenKind::identifier) continue;
    // `short v = EXPR;`, `int a = x, b = y;` (not `constant`, `constexpr` or `static` data: a
    // constant expression)
    if (kind.is(i - 1) && (t[i + 1].is("=") || t[i + 1].is(","))) {
      std::size_t d = i - 1;
      while (d > 0 && is_type_word(t[d - 1])) --d;  // `unsigned int v`
      if (d > 0 && t[d - 1].is_identifier("const")) --d;
      if (d > 0 && (t[d - 1].is_identifier("constant") || t[d - 1].is_identifier("constexpr") ||
                    t[d - 1].is_identifier("static")))
        continue;
      // Not a template's parameter (`template <typename T, int Rows = Cols> struct S {...};`,
      // where the walk would take the struct for a braced temporary) nor a function's.
      if (d > 0 && (t[d - 1].is("<") || t[d - 1].is(","))) continue;
      declarators(i, kind.name(i - 1));
      continue;
    }
    if (starts_statement(t[i - 1])) assignment(i);
  }
}

// From the declarator whose name is at i: `= EXPR` to its `,` or `;`, and the declarators after
// it (`int a = x, b, c = y;`), up to a `,` that may be a template's (`f<int, T>(x)`) or that
// parameters follow (`int a, int b`).
void Finder::declarators(std::size_t i, const std::string& type) {
  while (i + 2 < t.size()) {
    std::size_t e = i + 1;
    if (t[i + 1].is("=")) {
      const std::size_t b = i + 2;
      e = expression_end(t, b, true);
      if (e >= t.size() || b >= e || t[b].is("{")) return;
      if (t[e].is(","))
        for (std::size_t k = b; k < e; ++k)
          if (t[k].is("<")) return;
      ConversionSite s(ConversionSite::Form::declaration, b, e);
      s.type = type;
      s.literal = is_literal_range(t, b, e);
      s.bit_field = names_bit_field(b, e);
      out.push_back(s);
    }
    if (!t[e].is(",") || e + 2 >= t.size() || t[e + 1].kind != TokenKind::identifier ||
        !(t[e + 2].is("=") || t[e + 2].is(",") || t[e + 2].is(";")))
      return;
    i = e + 1;
  }
}

// `deduced`: the function template's own parameters. A parameter of such a type (`T v` of
// `template <class T> float f(T v)`) takes its argument's type rather than converting it: the
// T a call deduces is not the T of the scope the call is in (`f(v + 0.5f)` in f<int> calls
// f<float>; written `int_arg<T>(v + 0.5f)` it called f<int> again until 2026-12-05).
void Finder::parameters_of(const std::string& name, std::size_t open, std::size_t close,
                           const std::vector<std::string>& deduced) {
  std::vector<std::string> params;
  for_each_list_item(t, open, close, [&](std::size_t b, std::size_t e) {
    const std::string type = parameter_type(t, b, e, kind);  // `T@3`: T in the scope it holds
    const std::string bare = type.substr(0, type.find('@'));
    params.push_back(std::find(deduced.begin(), deduced.end(), bare) != deduced.end() ? "" : type);
  });
  auto [it, fresh] = params_.emplace(name, params);
  if (fresh) return;
  if (it->second.size() != params.size()) {
    unclear_.insert(name);
    return;
  }
  for (std::size_t k = 0; k < params.size(); ++k) {
    if (it->second[k].empty() != params[k].empty()) unclear_.insert(name);
    if (it->second[k] != params[k]) it->second[k] = params[k].empty() ? "" : " ";  // of the kind, types differ
  }
}

// A call's argument where every function of that name the source defines takes one of the
// kind there (`twice(x * short(-1))` for `short twice(short p)`).
void Finder::arguments() {
  for (std::size_t i = 1; i + 1 < t.size(); ++i) {
    if (t[i].kind != TokenKind::identifier || !t[i + 1].is("(") || t[i - 1].is_identifier("return") ||
        t[i - 1].is_identifier("else") || (i > 1 && t[i - 2].is("::")) ||
        !(t[i - 1].kind == TokenKind::identifier || (t[i - 1].is(">") && has_body(t, i))))
      continue;
    const std::size_t close = matching(t, i + 1);
    if (close + 1 >= t.size() || !(t[close + 1].is("{") || t[close + 1].is(";") || t[close + 1].kind == TokenKind::identifier))
      continue;
    parameters_of(t[i].text, i + 1, close, template_parameters(t, i));
  }
  // A lambda's parameters, under the name it is stored in: `auto f = [&](short p) {...};`.
  for (std::size_t i = 1; i + 3 < t.size(); ++i) {
    if (t[i].kind != TokenKind::identifier || !t[i + 1].is("=") || !t[i + 2].is("[")) continue;
    const std::size_t capture_end = matching(t, i + 2);
    if (capture_end + 1 >= t.size() || !t[capture_end + 1].is("(")) continue;
    const std::size_t close = matching(t, capture_end + 1);
    if (close >= t.size()) continue;
    parameters_of(t[i].text, capture_end + 1, close);
  }
  // A struct's constructor, under the struct's name: `struct P { short a; P(short x) : a(x) {} };`
  // then `P(x * -1)`.
  for (std::size_t i = 1; i + 1 < t.size(); ++i) {
    if (!(t[i - 1].is_identifier("struct") || t[i - 1].is_identifier("class")) || t[i].kind != TokenKind::identifier)
      continue;
    std::size_t open = i + 1;
    while (open < t.size() && !t[open].is("{") && !t[open].is(";") && !t[open].is("(")) ++open;  // `: Base`
    if (open >= t.size() || !t[open].is("{")) continue;
    const std::size_t end = matching(t, open);
    for (std::size_t k = open + 1; k + 1 < end && end < t.size(); ++k) {
      if (!t[k].is_identifier(t[i].text.c_str()) || !t[k + 1].is("(") || t[k - 1].is("~")) continue;
      const std::size_t close = matching(t, k + 1);
      if (close + 1 >= end || !(t[close + 1].is(":") || t[close + 1].is("{"))) continue;
      parameters_of(t[i].text, k + 1, close);
    }
  }
  for (std::size_t i = 1; i + 1 < t.size(); ++i) {
    const auto fn = params_.find(t[i].text);
    if (fn == params_.end() || unclear_.count(t[i].text) || !t[i + 1].is("(")) continue;
    if (t[i - 1].kind == TokenKind::identifier && !t[i - 1].is_identifier("return")) continue;  // its definition
    if (t[i - 1].is(".") || t[i - 1].is("->") || t[i - 1].is("::") || t[i - 1].is("~") || has_body(t, i)) continue;
    const std::size_t close = matching(t, i + 1);
    if (close >= t.size() || (t[i - 1].is(">") && close + 1 < t.size() && t[close + 1].is(";"))) continue;  // `S<T> f(...);`
    if (close + 1 < t.size() && t[close + 1].is(":") && !t[i - 1].is("?")) continue;  // a constructor's `) : a(x)`
    std::size_t index = 0;
    for_each_list_item(t, i + 1, close, [&](std::size_t b, std::size_t e) {
      if (index < fn->second.size() && !fn->second[index].empty() && b < e) {
        ConversionSite s(ConversionSite::Form::argument, b, e);
        s.type = fn->second[index] == " " ? "" : fn->second[index];
        s.literal = is_literal_range(t, b, e);
        s.bit_field = names_bit_field(b, e);
        out.push_back(s);
      }
      ++index;
    });
  }
}

void Finder::returns() {
  // `return EXPR;` in a function returning one of the kind, outside the lambdas in it.
  for (std::size_t i = 1; i + 1 < t.size(); ++i) {
    if (t[i].kind != TokenKind::identifier || !t[i + 1].is("(") || !returns_kind(t, i, kind) || is_constexpr(t, i)) continue;
    std::size_t close = matching(t, i + 1);
    if (close >= t.size()) continue;
    std::size_t open = close + 1;
    while (open < t.size() && t[open].kind == TokenKind::identifier) ++open;  // const, thread, ...
    if (open >= t.size() || !t[open].is("{")) continue;
    const std::size_t end = matching(t, open);
    if (end >= t.size()) continue;
    bool lambda = false;
    for (std::size_t k = open + 1; k + 1 < end && !lambda; ++k) lambda = t[k].is("]") && (t[k + 1].is("(") || t[k + 1].is("{"));
    const std::string type = kind.name(i - 1);
    if (!lambda)
      for (std::size_t k = open + 1; k < end; ++k)
        if (t[k].is_identifier("return")) value(ConversionSite::Form::returned, k, type);
    i = end;
  }
  // `return EXPR;` in a lambda (or function) whose trailing return type is of the kind:
  // `[&](int p) -> short { return p * -1; }`, but none holding a lambda of its own.
  for (std::size_t i = 0; i + 2 < t.size(); ++i) {
    if (!t[i].is("->") || !kind.is(i + 1) || !t[i + 2].is("{") || i == 0) continue;
    std::size_t before = i - 1;
    while (before > 0 && t[before].kind == TokenKind::identifier) --before;  // mutable, const, noexcept
    if (!t[before].is(")")) continue;
    const std::size_t end = matching(t, i + 2);
    if (end >= t.size()) continue;
    bool lambda = false;
    for (std::size_t k = i + 3; k + 1 < end && !lambda; ++k) lambda = t[k].is("]") && (t[k + 1].is("(") || t[k + 1].is("{"));
    if (!lambda)
      for (std::size_t k = i + 3; k < end; ++k)
        if (t[k].is_identifier("return")) value(ConversionSite::Form::returned, k, kind.name(i + 1));
  }
}

}  // namespace

std::vector<ConversionSite> conversion_sites(const std::vector<Token>& t, TypeKind kind, bool own_types) {
  std::vector<ConversionSite> out;
  const TypeScopes scopes(t);
  Finder finder(t, kind, own_types ? &scopes : nullptr, out);
  finder.casts();
  finder.declarations_and_assignments();
  finder.arguments();
  finder.returns();
  // Not a pack's expansion (`f(r...)`: int_arg takes one value, and the pack may be empty).
  out.erase(std::remove_if(out.begin(), out.end(), [&t](const ConversionSite& s) { return t[s.end - 1].is("..."); }),
            out.end());
  if (!own_types) return out;
  // A type of the source's own (`U@3`) holds only in its scope: a site elsewhere (`b.value = v`
  // of a member declared `U value;` in a template, outside it) says no type.
  for (auto& s : out) {
    const std::size_t at = s.type.rfind('@');
    if (at == std::string::npos) continue;
    const int id = std::stoi(s.type.substr(at + 1));
    s.type = scopes.holds(id, s.first) && scopes.holds(id, s.target_first ? s.target_first : s.first) ? s.type.substr(0, at) : "";
  }
  return out;
}

}  // namespace metalcall::msl
