// Unary minus and the arguments of conversions to char, short and half through the prelude
// for the CUDA target (small_negations.hpp).
#include "msl/passes/small_negations.hpp"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <map>
#include <set>
#include <string>

#include "msl/analysis/call_graph.hpp"  // matching
#include "msl/passes/conversion_sites.hpp"

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

bool is_half_name(const std::string& s) { return s == "half"; }

}  // namespace

std::vector<NarrowingWrap> narrowing_wraps(const std::vector<Token>& t) {
  std::vector<NarrowingWrap> out;
  using Form = ConversionSite::Form;
  for (const auto& s : conversion_sites(t, is_narrow_type_name)) {
    if (s.form == Form::compound && !s.several_components && !s.bit_field)
      out.push_back({s.target_first, s.target_end, "metal::mtl_rt::narrow_ref("});
    else if (!s.literal)
      out.push_back({s.first, s.end, "metal::mtl_rt::narrow_arg("});
  }
  // `h = x` of a long: CUDA's __half has no operator=(long), and its others tie
  // (`out[i] = as_type<ulong>(v)` into a half buffer did not compile: fuzz seed 9401).
  for (const auto& s : conversion_sites(t, is_half_name))
    if (s.form == Form::assignment && !s.several_components) out.push_back({s.first, s.end, "metal::mtl_rt::half_arg("});
  return out;
}

std::size_t unary_operand_end(const std::vector<Token>& t, std::size_t i) { return operand_end(t, i); }

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
