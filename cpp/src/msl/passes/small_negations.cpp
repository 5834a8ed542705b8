// Unary minus through the prelude for the CUDA target (small_negations.hpp).
#include "msl/passes/small_negations.hpp"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <map>
#include <set>
#include <string>

#include "msl/analysis/call_graph.hpp"  // matching

namespace metalcall::msl {

bool is_narrow_type_name(const std::string& s) {
  static const auto& names = *new std::set<std::string>{"char", "uchar", "short", "ushort", "int8_t", "uint8_t",
                                                   "int16_t", "uint16_t"};
  return names.count(s) > 0;
}

namespace {

// A token after which `-` is unary: an operator, an opening bracket, a separator or a keyword
// that starts an expression. Not `)` (a cast or an operand), `]`, `}`, a name or a literal.
bool starts_operand(const Token& p) {
  static const auto& keywords = *new std::set<std::string>{"return", "else", "do", "co_return", "throw"};
  if (p.kind == TokenKind::identifier) return keywords.count(p.text) > 0;
  if (p.kind != TokenKind::punct) return false;
  static const auto& closers = *new std::set<std::string>{")", "]", "}", "++", "--", ">", ">>", "::", ".", "->"};
  return !closers.count(p.text);
}

bool is_name(const Token& k) {
  static const auto& not_names = *new std::set<std::string>{"sizeof", "alignof", "new", "delete", "this", "true", "false",
                                                   "nullptr", "operator", "template", "typename", "decltype",
                                                   "static_cast", "reinterpret_cast", "const_cast", "dynamic_cast"};
  return k.kind == TokenKind::identifier && !not_names.count(k.text);
}

// The end of the postfix chain from i (calls, subscripts, members, ++/--), or t.size() where
// the chain is not plain.
std::size_t postfix_end(const std::vector<Token>& t, std::size_t i) {
  while (i < t.size()) {
    if (t[i].is("(") || t[i].is("[")) {
      const std::size_t close = matching(t, i);
      if (close >= t.size()) return t.size();
      i = close + 1;
    } else if ((t[i].is(".") || t[i].is("->")) && i + 1 < t.size() && t[i + 1].kind == TokenKind::identifier) {
      i += 2;
      if (i < t.size() && t[i].is("<")) return t.size();  // .template f<...> or a comparison
    } else if (t[i].is("++") || t[i].is("--")) {
      ++i;
    } else {
      return i;
    }
  }
  return i;
}

// `static_cast<T>(x)`, `as_type<T>(x)` (and the other named casts) from the cast's name at b:
// the token after its `)`, or t.size() where the type is not plain (names, `::`, `*`, numbers,
// `,` and nested `<>`).
std::size_t named_cast_end(const std::vector<Token>& t, std::size_t b) {
  static const auto& casts = *new std::set<std::string>{"static_cast", "reinterpret_cast", "const_cast", "as_type"};
  if (!casts.count(t[b].text) || b + 1 >= t.size() || !t[b + 1].is("<")) return t.size();
  int depth = 0;
  for (std::size_t k = b + 1; k < t.size(); ++k) {
    if (t[k].is("<")) ++depth;
    else if (t[k].is(">")) --depth;
    else if (t[k].is(">>")) depth -= 2;
    else if (!(t[k].kind == TokenKind::identifier || t[k].kind == TokenKind::number || t[k].is("::") ||
               t[k].is("*") || t[k].is(",")))
      return t.size();
    if (depth < 0) return t.size();
    if (depth == 0) return k + 1 < t.size() && t[k + 1].is("(") ? postfix_end(t, k + 1) : t.size();
  }
  return t.size();
}

// The end of the operand of a minus at i (a unary minus, or a binary one after a zero), or
// t.size() where it is not plainly delimited.
std::size_t operand_end(const std::vector<Token>& t, std::size_t i) {
  const std::size_t b = i + 1;
  if (b >= t.size()) return t.size();
  if (is_name(t[b])) {
    // A macro's constant (INFINITY, FLT_MAX, ...): a float, not worth NVRTC's warnings. A name
    // in capitals before `(` or `{` is a function or a type (`-F{a}(x)`).
    if (std::all_of(t[b].text.begin(), t[b].text.end(), [](char c) { return !std::islower(static_cast<unsigned char>(c)); }) &&
        !(b + 1 < t.size() && (t[b + 1].is("(") || t[b + 1].is("{"))))
      return t.size();
    std::size_t k = b + 1;
    while (k + 1 < t.size() && t[k].is("::") && t[k + 1].kind == TokenKind::identifier) k += 2;
    if (k < t.size() && t[k].is("<")) return named_cast_end(t, b);  // else a template's arguments, or a comparison
    // `-S{a, b}(x)`, `-S{a}.m`: a braced temporary of a type is part of the operand (after a
    // name in an expression, `{` opens nothing else); the calls and members follow it.
    if (k < t.size() && t[k].is("{")) {
      k = matching(t, k);
      if (k >= t.size()) return t.size();
      ++k;
    }
    return postfix_end(t, k);
  }
  if (t[b].is("(")) {
    const std::size_t close = matching(t, b);
    if (close + 1 >= t.size()) return t.size();
    const Token& n = t[close + 1];
    // `(T)x`, `(T)-x`, `(a) - b`: a cast or not, the operand is unclear.
    if (n.kind == TokenKind::identifier || n.kind == TokenKind::number || n.kind == TokenKind::character ||
        n.kind == TokenKind::string || n.is("-") || n.is("+") || n.is("!") || n.is("~") || n.is("*") ||
        n.is("&") || n.is("{"))
      return t.size();
    return postfix_end(t, close + 1);
  }
  if (t[b].kind == TokenKind::identifier) return named_cast_end(t, b);  // static_cast<T>(x) ...
  return t.size();  // a literal, or another operator
}

bool is_integer_zero(const Token& k) {
  if (k.kind != TokenKind::number || k.text.empty() || k.text[0] != '0') return false;
  std::size_t j = k.text.size() > 1 && (k.text[1] == 'x' || k.text[1] == 'X') ? 2 : 1;
  while (j < k.text.size() && k.text[j] == '0') ++j;
  while (j < k.text.size() && std::strchr("uUlL", k.text[j])) ++j;
  return j == k.text.size();
}

// An integer type of MSL a zero is converted to: `short(0)`, `(ushort)0`, `short3(0)`.
bool is_integer_type_name(const std::string& s) {
  static const auto& names = *new std::set<std::string>{"char", "uchar", "short", "ushort", "int", "uint", "long",
                                                   "ulong", "int8_t", "uint8_t", "int16_t", "uint16_t", "int32_t",
                                                   "uint32_t", "int64_t", "uint64_t", "unsigned", "signed"};
  if (names.count(s)) return true;
  const std::size_t n = s.size();
  return n > 1 && (s[n - 1] == '2' || s[n - 1] == '3' || s[n - 1] == '4') && names.count(s.substr(0, n - 1)) &&
         s != "unsigned2";
}

// The first token of a zero ending just before i (`0`, `(0)`, `short(0)`, `(short)0`,
// `(short)(0)`), or t.size().
std::size_t zero_before(const std::vector<Token>& t, std::size_t i) {
  if (i < 1) return t.size();
  if (is_integer_zero(t[i - 1])) {
    if (i >= 4 && t[i - 2].is(")") && t[i - 4].is("(") && is_integer_type_name(t[i - 3].text)) return i - 4;  // (T)0
    return i - 1;
  }
  if (i >= 3 && t[i - 1].is(")") && is_integer_zero(t[i - 2]) && t[i - 3].is("(")) {  // (0), T(0), (T)(0)
    if (i >= 4 && t[i - 4].kind == TokenKind::identifier && is_integer_type_name(t[i - 4].text)) return i - 4;
    if (i >= 6 && t[i - 4].is(")") && t[i - 6].is("(") && is_integer_type_name(t[i - 5].text)) return i - 6;
    return i - 3;
  }
  return t.size();
}

// A token after which an additive expression starts as a whole operand: `(`, `,`, `=`, `?`,
// `return`... and the operators that bind less tightly than `-`, not `>`/`>>` (which may
// close a template's arguments).
bool starts_additive(const Token& p) {
  static const auto& after = *new std::set<std::string>{
      "(", "[", "{", ",", ";", "?", ":", "=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>=",
      "<<", "<", "<=", ">=", "==", "!=", "&", "^", "|", "&&", "||"};
  if (p.kind == TokenKind::identifier) return p.text == "return";
  return p.kind == TokenKind::punct && after.count(p.text);
}

// char2 ... ushort4 and their packed forms: vectors whose components are char or short.
// Whether s names a vector (packed or not) of a scalar type `scalar` says yes to: short2, packed_half3.
template <class Scalar> bool is_vector_of(const std::string& s, Scalar&& scalar) {
  const std::string base = s.rfind("packed_", 0) == 0 ? s.substr(7) : s;
  return base.size() > 1 && (base.back() == '2' || base.back() == '3' || base.back() == '4') &&
         scalar(base.substr(0, base.size() - 1));
}

bool is_narrow_vector_name(const std::string& s) { return is_vector_of(s, is_narrow_type_name); }
bool is_half_name(const std::string& s) { return s == "half"; }
bool is_half_vector_name(const std::string& s) { return is_vector_of(s, is_half_name); }

// Whether a token names components of a vector: x, yz, rgba (the letters of one set).
bool is_swizzle(const Token& k) {
  if (k.kind != TokenKind::identifier || k.text.size() > 4) return false;
  const bool xyzw = k.text.find_first_not_of("xyzw") == std::string::npos;
  return xyzw || k.text.find_first_not_of("rgba") == std::string::npos;
}

// The argument from open to its `)`: a literal (`5`, `-1`, `'a'`) or nothing is left as written.
bool is_literal_argument(const std::vector<Token>& t, std::size_t open, std::size_t close) {
  std::size_t k = open + 1;
  if (k < close && (t[k].is("-") || t[k].is("+"))) ++k;
  return k + 1 >= close && (k >= close || t[k].kind == TokenKind::number || t[k].kind == TokenKind::character);
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

bool is_literal_range(const std::vector<Token>& t, std::size_t b, std::size_t e) {
  if (b < e && (t[b].is("-") || t[b].is("+"))) ++b;
  return b + 1 == e && (t[b].kind == TokenKind::number || t[b].kind == TokenKind::character);
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

// Names declared with a type of a kind (char and short; half): `short v`, `const ushort w =
// ...`, parameters (`short p`); and those declared as pointers to or arrays of them (`device
// short* out`, `threadgroup char tg[64]`, `short a[4]`), whose elements are. `other`: the names
// declared with any other type; a name in both is neither.
struct TypedNames {
  std::set<std::string> values, elements, other;
};

TypedNames names_of_type(const std::vector<Token>& t, bool (*is_type)(const std::string&), std::size_t lo,
                         std::size_t hi, const std::vector<bool>* skip) {
  TypedNames n;
  static const auto& not_types = *new std::set<std::string>{"return", "case", "goto", "else", "do", "sizeof",
                                                      "new", "delete", "throw", "typename", "using", "namespace",
                                                      "struct", "class", "enum", "union", "template", "operator"};
  for (std::size_t i = std::max<std::size_t>(lo, 1); i + 1 < hi; ++i) {
    if (t[i].kind != TokenKind::identifier || (skip && (*skip)[i])) continue;
    const Token& p = t[i - 1];
    const bool after_member = i > 1 && (t[i - 2].is(".") || t[i - 2].is("->") || t[i - 2].is("::"));
    if (p.kind == TokenKind::identifier && !not_types.count(p.text) && !after_member) {
      if (is_type(p.text) && (i < 2 || !t[i - 2].is("::"))) {
        (t[i + 1].is("[") ? n.elements : n.values).insert(t[i].text);
      } else {
        n.other.insert(t[i].text);
      }
    } else if ((p.is("*") || p.is("&")) && i > 1 && t[i - 2].kind == TokenKind::identifier) {
      // `short* p`, `device short* p`, `thread short& r`: after the type, a pointer's elements
      // or a reference; after another type, not ours (`a * b` is no declaration).
      if (is_type(t[i - 2].text)) {
        (p.is("*") ? n.elements : n.values).insert(t[i].text);
      } else if (i > 2 && (t[i - 3].kind == TokenKind::identifier || t[i - 3].is(";") || t[i - 3].is("{") ||
                           t[i - 3].is("}") || t[i - 3].is("(") || t[i - 3].is(","))) {
        n.other.insert(t[i].text);
      }
    }
  }
  for (const auto& name : n.other) {
    n.values.erase(name);
    n.elements.erase(name);
  }
  for (const auto& name : n.values) n.elements.erase(name);
  return n;
}

// The names of one type kind, function by function: a name a function declares (its parameters
// and locals) is read from that function's declarations, any other from the program-scope
// ones (struct members, constants). A file's kernels often share parameter names of different
// types (`device short* out` here, `device float* out` there).
class ScopedNames {
 public:
  ScopedNames(const std::vector<Token>& t, bool (*is_type)(const std::string&)) : owner_(t.size(), 0) {
    std::vector<bool> inside(t.size(), false);
    for (std::size_t i = 1; i + 1 < t.size(); ++i) {
      if (t[i].kind != TokenKind::identifier || !t[i + 1].is("(") || t[i - 1].kind != TokenKind::identifier) continue;
      const std::size_t close = matching(t, i + 1);
      std::size_t open = close + 1;
      while (open < t.size() && t[open].kind == TokenKind::identifier) ++open;  // const, thread, ...
      if (close >= t.size() || open >= t.size() || !t[open].is("{")) continue;
      const std::size_t end = matching(t, open);
      if (end >= t.size()) continue;
      scopes_.push_back(names_of_type(t, is_type, i + 1, end + 1, nullptr));
      for (std::size_t k = i + 1; k <= end; ++k) {
        owner_[k] = scopes_.size();
        inside[k] = true;
      }
      i = end;
    }
    global_ = names_of_type(t, is_type, 0, t.size(), &inside);
  }
  // Whether the name at token i (its declarations' kind seen from there) is a value or the
  // elements of the type kind.
  bool value(std::size_t i, const std::string& name) const { return pick(i, name).values.count(name) > 0; }
  bool elements(std::size_t i, const std::string& name) const { return pick(i, name).elements.count(name) > 0; }

 private:
  const TypedNames& pick(std::size_t i, const std::string& name) const {
    if (owner_[i]) {
      const TypedNames& local = scopes_[owner_[i] - 1];
      if (local.values.count(name) || local.elements.count(name) || local.other.count(name)) return local;
    }
    return global_;
  }
  std::vector<std::size_t> owner_;  // token -> 1 + its function's index in scopes_, or 0
  std::vector<TypedNames> scopes_;
  TypedNames global_;
};

// The first token of the function definition's return type before the name at i, whose
// parameters open at i + 1 and whose body follows them; false unless it is a char or short.
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

bool returns_narrow(const std::vector<Token>& t, std::size_t name) {
  return name > 0 && t[name - 1].kind == TokenKind::identifier && is_narrow_type_name(t[name - 1].text) &&
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

// Wraps of the implicit conversions to char and short that the tokens show (see the header).
void implicit_narrowings(const std::vector<Token>& t, std::vector<NarrowingWrap>& out) {
  const ScopedNames names(t, is_narrow_type_name);
  const ScopedNames halves(t, is_half_name);
  const ScopedNames vectors(t, is_narrow_vector_name);
  const ScopedNames half_vectors(t, is_half_vector_name);
  const char* arg = "metal::mtl_rt::narrow_arg(";
  const char* ref = "metal::mtl_rt::narrow_ref(";
  auto wrap_value = [&](std::size_t eq, bool commas) {  // `= EXPR;`
    const std::size_t b = eq + 1, e = expression_end(t, b, commas);
    if (e < t.size() && b < e && !t[b].is("{") && !is_literal_range(t, b, e)) out.push_back({b, e, arg});
  };
  for (std::size_t i = 1; i + 1 < t.size(); ++i) {
    const Token& k = t[i];
    if (k.kind != TokenKind::identifier) continue;
    // `short v = EXPR;` (not `constant`, `constexpr` or `static` data: a constant expression)
    if (is_narrow_type_name(t[i - 1].text) && t[i + 1].is("=")) {
      std::size_t d = i - 1;
      if (d > 0 && t[d - 1].is_identifier("const")) --d;
      if (d > 0 && (t[d - 1].is_identifier("constant") || t[d - 1].is_identifier("constexpr") ||
                    t[d - 1].is_identifier("static")))
        continue;
      wrap_value(i + 1, false);
      continue;
    }
    if (!starts_statement(t[i - 1])) continue;
    // `v = EXPR;`, `v op= EXPR;`, `out[i] = EXPR;`, `s.m op= EXPR;`, `p->m[j] = EXPR;`: a chain of
    // members and subscripts whose last part is a narrow name or an element of one.
    // A char or short vector's components count as such a name (`v.x = EXPR`, `v[k] -= EXPR`,
    // `out[i].y *= EXPR`; `v.xy = EXPR`, whose int scalar is broadcast after narrow_arg).
    std::size_t after = i, last = i;
    bool narrow = false, half = false, several_components = false;
    while (after < t.size()) {
      if (t[after].kind != TokenKind::identifier) break;
      last = after++;
      narrow = names.value(last, t[last].text);
      half = halves.value(last, t[last].text);
      bool vector = vectors.value(last, t[last].text);
      bool half_vector = half_vectors.value(last, t[last].text);
      if (after < t.size() && t[after].is("[")) {
        narrow = names.elements(last, t[last].text) || vector;
        half = halves.elements(last, t[last].text) || half_vector;
        vector = vectors.elements(last, t[last].text);
        half_vector = half_vectors.elements(last, t[last].text);
        after = matching(t, after);
        if (after >= t.size()) break;
        ++after;
        if (after < t.size() && t[after].is("[")) {  // a[i][j]: the component of a vector element only
          narrow = vector;
          half = half_vector;
          vector = half_vector = false;
          after = matching(t, after);
          if (after >= t.size()) break;
          ++after;
        }
      }
      if (vector && after + 1 < t.size() && t[after].is(".") && is_swizzle(t[after + 1])) {
        narrow = true;
        half = false;
        several_components = t[after + 1].text.size() > 1;
        after += 2;
        break;
      }
      // A half vector's component (`v.y = x`, `v[k] = x`): a half, as above (a swizzle of
      // several components is a vector, assigned through its own operator).
      if (half_vector && after + 1 < t.size() && t[after].is(".") && is_swizzle(t[after + 1])) {
        narrow = false;
        half = t[after + 1].text.size() == 1;
        after += 2;
        break;
      }
      if (after + 1 < t.size() && (t[after].is(".") || t[after].is("->"))) {
        ++after;
        continue;
      }
      break;
    }
    if (half && after < t.size() && t[after].is("=")) {
      // `h = x` of a long: CUDA's __half has no operator=(long), and its others tie
      // (`out[i] = as_type<ulong>(v)` into a half buffer did not compile: fuzz seed 9401).
      const std::size_t e = expression_end(t, after + 1, false);
      if (e < t.size() && after + 1 < e) out.push_back({after + 1, e, "metal::mtl_rt::half_arg("});
      continue;
    }
    if (!narrow || after >= t.size()) continue;
    if (t[after].is("=")) {
      wrap_value(after, false);
    } else if (is_compound_assignment(t[after]) && expression_end(t, after + 1, false) < t.size()) {
      // `v.xy op= EXPR`: a swizzle of several components is a proxy, no reference narrow_ref can
      // take (NVRTC found no match: fuzz seed 3 on the H200); its operand is narrowed instead, and
      // the vector operator keeps the result's components.
      if (several_components)
        wrap_value(after, false);
      else
        out.push_back({i, after, ref});
    }
  }
  // A call's argument where every function of that name the source defines takes a char or
  // short there (`twice(x * short(-1))` for `short twice(short p)`).
  std::map<std::string, std::vector<bool>> narrow_params;
  std::set<std::string> unclear;
  for (std::size_t i = 1; i + 1 < t.size(); ++i) {
    if (t[i].kind != TokenKind::identifier || !t[i + 1].is("(") || t[i - 1].is_identifier("return") ||
        t[i - 1].is_identifier("else") || (i > 1 && t[i - 2].is("::")) ||
        !(t[i - 1].kind == TokenKind::identifier || (t[i - 1].is(">") && has_body(t, i))))
      continue;
    const std::size_t close = matching(t, i + 1);
    if (close + 1 >= t.size() || !(t[close + 1].is("{") || t[close + 1].is(";") || t[close + 1].kind == TokenKind::identifier))
      continue;
    std::vector<bool> params;
    for_each_list_item(t, i + 1, close, [&](std::size_t b, std::size_t e) {
      if (b < e && t[b].is_identifier("const")) ++b;
      params.push_back(b + 2 == e && is_narrow_type_name(t[b].text) && t[b + 1].kind == TokenKind::identifier);
    });
    auto [it, fresh] = narrow_params.emplace(t[i].text, params);
    if (!fresh && it->second != params) unclear.insert(t[i].text);
  }
  // A lambda's parameters, under the name it is stored in: `auto f = [&](short p) {...};`.
  for (std::size_t i = 1; i + 3 < t.size(); ++i) {
    if (t[i].kind != TokenKind::identifier || !t[i + 1].is("=") || !t[i + 2].is("[")) continue;
    const std::size_t capture_end = matching(t, i + 2);
    if (capture_end + 1 >= t.size() || !t[capture_end + 1].is("(")) continue;
    const std::size_t close = matching(t, capture_end + 1);
    if (close >= t.size()) continue;
    std::vector<bool> params;
    for_each_list_item(t, capture_end + 1, close, [&](std::size_t b, std::size_t e) {
      if (b < e && t[b].is_identifier("const")) ++b;
      params.push_back(b + 2 == e && is_narrow_type_name(t[b].text) && t[b + 1].kind == TokenKind::identifier);
    });
    auto [it, fresh] = narrow_params.emplace(t[i].text, params);
    if (!fresh && it->second != params) unclear.insert(t[i].text);
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
      std::vector<bool> params;
      for_each_list_item(t, k + 1, close, [&](std::size_t b, std::size_t e) {
        if (b < e && t[b].is_identifier("const")) ++b;
        params.push_back(b + 2 == e && is_narrow_type_name(t[b].text) && t[b + 1].kind == TokenKind::identifier);
      });
      auto [it, fresh] = narrow_params.emplace(t[i].text, params);
      if (!fresh && it->second != params) unclear.insert(t[i].text);
    }
  }
  for (std::size_t i = 1; i + 1 < t.size(); ++i) {
    const auto fn = narrow_params.find(t[i].text);
    if (fn == narrow_params.end() || unclear.count(t[i].text) || !t[i + 1].is("(")) continue;
    if (t[i - 1].kind == TokenKind::identifier && !t[i - 1].is_identifier("return")) continue;  // its definition
    if (t[i - 1].is(".") || t[i - 1].is("->") || t[i - 1].is("::") || t[i - 1].is("~") || has_body(t, i)) continue;
    const std::size_t close = matching(t, i + 1);
    if (close >= t.size() || (t[i - 1].is(">") && close + 1 < t.size() && t[close + 1].is(";"))) continue;  // `S<T> f(...);`
    if (close + 1 < t.size() && t[close + 1].is(":") && !t[i - 1].is("?")) continue;  // a constructor's `) : a(x)`
    std::size_t index = 0;
    for_each_list_item(t, i + 1, close, [&](std::size_t b, std::size_t e) {
      if (index < fn->second.size() && fn->second[index] && b < e && !is_literal_range(t, b, e)) out.push_back({b, e, arg});
      ++index;
    });
  }
  // `return EXPR;` in a function returning a char or short, outside the lambdas in it.
  for (std::size_t i = 1; i + 1 < t.size(); ++i) {
    if (t[i].kind != TokenKind::identifier || !t[i + 1].is("(") || !returns_narrow(t, i) || is_constexpr(t, i)) continue;
    std::size_t close = matching(t, i + 1);
    if (close >= t.size()) continue;
    std::size_t open = close + 1;
    while (open < t.size() && t[open].kind == TokenKind::identifier) ++open;  // const, thread, ...
    if (open >= t.size() || !t[open].is("{")) continue;
    const std::size_t end = matching(t, open);
    if (end >= t.size()) continue;
    bool lambda = false;
    for (std::size_t k = open + 1; k + 1 < end && !lambda; ++k) lambda = t[k].is("]") && (t[k + 1].is("(") || t[k + 1].is("{"));
    if (!lambda)
      for (std::size_t k = open + 1; k < end; ++k)
        if (t[k].is_identifier("return")) wrap_value(k, false);
    i = end;
  }
  // `return EXPR;` in a lambda (or function) whose trailing return type is a char or short:
  // `[&](int p) -> short { return p * -1; }`, but none holding a lambda of its own.
  for (std::size_t i = 0; i + 2 < t.size(); ++i) {
    if (!t[i].is("->") || !is_narrow_type_name(t[i + 1].text) || !t[i + 2].is("{") || i == 0) continue;
    std::size_t before = i - 1;
    while (before > 0 && t[before].kind == TokenKind::identifier) --before;  // mutable, const, noexcept
    if (!t[before].is(")")) continue;
    const std::size_t end = matching(t, i + 2);
    if (end >= t.size()) continue;
    bool lambda = false;
    for (std::size_t k = i + 3; k + 1 < end && !lambda; ++k) lambda = t[k].is("]") && (t[k + 1].is("(") || t[k + 1].is("{"));
    if (!lambda)
      for (std::size_t k = i + 3; k < end; ++k)
        if (t[k].is_identifier("return")) wrap_value(k, false);
  }
}

}  // namespace

std::vector<NarrowingWrap> narrowing_wraps(const std::vector<Token>& t) {
  std::vector<NarrowingWrap> out;
  for (const auto& [open, close] : narrowing_casts(t)) out.push_back({open + 1, close, "metal::mtl_rt::narrow_arg("});
  implicit_narrowings(t, out);
  return out;
}

std::vector<std::pair<std::size_t, std::size_t>> narrowing_casts(const std::vector<Token>& t) {
  std::vector<std::pair<std::size_t, std::size_t>> out;
  auto add = [&](std::size_t open) {
    if (open >= t.size() || !t[open].is("(")) return;
    const std::size_t close = matching(t, open);
    if (close >= t.size() || is_literal_argument(t, open, close)) return;
    // `uchar (&a)[4]`, `char (*f)(int)`: a declarator, not a conversion
    if (close + 1 < t.size() && (t[close + 1].is("[") || t[close + 1].is("("))) return;
    out.emplace_back(open, close);
  };
  for (std::size_t i = 0; i + 1 < t.size(); ++i) {
    if (t[i].kind != TokenKind::identifier) continue;
    // After `::`, `.` or `->` a member; after a name other than `return` a declaration
    // (`thread uchar (&a)[4]`, `const short (x)`).
    const bool qualified = i > 0 && (t[i - 1].is("::") || t[i - 1].is(".") || t[i - 1].is("->") ||
                                     (t[i - 1].kind == TokenKind::identifier && t[i - 1].text != "return"));
    if (is_narrow_type_name(t[i].text) && !qualified) {
      if (t[i + 1].is("(")) add(i + 1);                                                   // short(x)
      else if (i > 0 && t[i - 1].is("(") && t[i + 1].is(")") && i + 2 < t.size()) add(i + 2);  // (short)(x)
    } else if (t[i].text == "static_cast" && i + 4 < t.size() && t[i + 1].is("<") && is_narrow_type_name(t[i + 2].text) &&
               t[i + 3].is(">")) {
      add(i + 4);  // static_cast<short>(x)
    }
  }
  return out;
}

std::vector<std::pair<std::size_t, std::size_t>> zero_subtractions(const std::vector<Token>& t) {
  std::vector<std::pair<std::size_t, std::size_t>> out;
  for (std::size_t i = 2; i + 1 < t.size(); ++i) {
    if (!t[i].is("-")) continue;
    const std::size_t z = zero_before(t, i);
    if (z == 0 || z >= t.size() || !starts_additive(t[z - 1])) continue;
    const std::size_t e = operand_end(t, i);
    if (e >= t.size()) continue;
    out.emplace_back(i, e);
  }
  return out;
}

std::vector<std::pair<std::size_t, std::size_t>> small_negations(const std::vector<Token>& t) {
  std::vector<std::pair<std::size_t, std::size_t>> out;
  for (std::size_t i = 1; i + 1 < t.size(); ++i) {
    if (!t[i].is("-") || !starts_operand(t[i - 1])) continue;
    if (t[i - 1].is_identifier("case") || t[i - 1].is_identifier("sizeof")) continue;
    const std::size_t e = operand_end(t, i);
    if (e >= t.size()) continue;
    out.emplace_back(i, e);
  }
  return out;
}

}  // namespace metalcall::msl
