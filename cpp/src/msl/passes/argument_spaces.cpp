// The address space of an argument expression (see argument_spaces.hpp).
#include "msl/passes/argument_spaces.hpp"

#include <algorithm>

#include "msl/passes/declared_spaces.hpp"

namespace metalcall::msl {

namespace {

using namespace declared_spaces;

constexpr std::size_t npos = static_cast<std::size_t>(-1);

ArgumentSpace unknown(std::string why) { return {-1, false, std::move(why)}; }
ArgumentSpace object_in(int space) { return {space, false, {}}; }
ArgumentSpace temporary() { return object_in(0); }  // temporaries live in thread memory

bool opens(const Token& tok) { return tok.is("(") || tok.is("[") || tok.is("{"); }
bool closes(const Token& tok) { return tok.is(")") || tok.is("]") || tok.is("}"); }

std::size_t closing(const std::vector<Token>& t, std::size_t open) {
  int depth = 0;
  for (std::size_t j = open; j < t.size(); ++j) {
    if (opens(t[j])) ++depth;
    else if (closes(t[j]) && --depth == 0) return j;
  }
  return t.size();
}

bool is_assignment(const Token& tok) {
  static const char* const ops[] = {"=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>="};
  return tok.kind == TokenKind::punct && std::any_of(std::begin(ops), std::end(ops), [&](const char* o) { return tok.is(o); });
}

bool is_binary(const Token& tok) {
  static const char* const ops[] = {"+", "-", "*", "/", "%", "<<", ">>", "<", ">", "<=", ">=", "==", "!=",
                                    "&", "|", "^", "&&", "||"};
  return tok.kind == TokenKind::punct && std::any_of(std::begin(ops), std::end(ops), [&](const char* o) { return tok.is(o); });
}

// Whether a token ends an operand, so that an operator after it is binary (`a - b`, not `-b`).
bool ends_operand(const Token& tok) {
  if (tok.kind == TokenKind::identifier) return !is_keyword(tok.text);
  return tok.kind == TokenKind::number || tok.kind == TokenKind::character || tok.is(")") || tok.is("]");
}

bool is_cast_keyword(const std::string& s) {
  return s == "static_cast" || s == "reinterpret_cast" || s == "const_cast" || s == "as_type" || s == "bit_cast";
}

// MSL's scalar, vector and matrix type names (`float`, `half4`, `packed_uint3`, `float3x4`).
bool is_builtin_type(std::string s) {
  static const char* const others[] = {"size_t", "ptrdiff_t", "int8_t", "uint8_t", "int16_t", "uint16_t", "int32_t",
                                       "uint32_t", "int64_t", "uint64_t", "unsigned", "signed", "vec", "matrix",
                                       "packed_vec"};
  if (std::any_of(std::begin(others), std::end(others), [&](const char* o) { return s == o; })) return true;
  if (s.rfind("packed_", 0) == 0) s = s.substr(7);
  if (s.size() >= 3 && s[s.size() - 2] == 'x' && s.back() >= '2' && s.back() <= '4') s.resize(s.size() - 2);
  if (!s.empty() && s.back() >= '2' && s.back() <= '4') s.pop_back();
  static const char* const scalars[] = {"bool", "char", "uchar", "short", "ushort", "int", "uint", "long",
                                        "ulong", "half", "float", "bfloat", "double"};
  return std::any_of(std::begin(scalars), std::end(scalars), [&](const char* o) { return s == o; });
}

}  // namespace

ArgumentSpaces::ArgumentSpaces(const std::vector<Token>& t, const std::vector<ClassBody>& classes)
    : t_(t), classes_(classes) {
  for (std::size_t i = 0; i + 1 < t.size(); ++i) {
    const Token& tok = t[i];
    if ((tok.is_identifier("struct") || tok.is_identifier("class") || tok.is_identifier("union") ||
         tok.is_identifier("typename") || tok.is_identifier("enum")) &&
        t[i + 1].kind == TokenKind::identifier)
      type_names_.push_back(t[i + 1].text);
    if (tok.is_identifier("using") && t[i + 1].kind == TokenKind::identifier && i + 2 < t.size() && t[i + 2].is("="))
      type_names_.push_back(t[i + 1].text);
    if (tok.is_identifier("typedef")) {
      std::size_t j = i + 1;
      while (j < t.size() && !t[j].is(";")) ++j;
      if (j < t.size() && t[j - 1].kind == TokenKind::identifier) type_names_.push_back(t[j - 1].text);
    }
    if (tok.is_identifier("operator") && t[i + 1].is("[")) subscript_operators_ = true;
  }
}

bool ArgumentSpaces::is_type_name(const std::string& name) const {
  return is_builtin_type(name) || std::find(type_names_.begin(), type_names_.end(), name) != type_names_.end();
}

// The '>' closing a template argument list opened at `open`, before `e`; npos when `<` is a comparison.
std::size_t ArgumentSpaces::angle_close(std::size_t open, std::size_t e) const {
  int depth = 0;
  for (std::size_t j = open; j < e; ++j) {
    if (t_[j].is("<")) ++depth;
    else if (t_[j].is(">") && --depth == 0) return j;
    else if (t_[j].is(">>") && (depth -= 2) <= 0) return j;
    else if (opens(t_[j])) j = closing(t_, j);
    else if (t_[j].is(";") || t_[j].is("&&") || t_[j].is("||")) return npos;
  }
  return npos;
}

ArgumentSpace ArgumentSpaces::of(std::size_t b, std::size_t e) const {
  while (e > b + 1 && t_[b].is("(") && closing(t_, b) == e - 1) ++b, --e;
  if (b >= e) return unknown("empty");
  std::size_t comma = npos, assign = npos, question = npos, binary = npos;
  for (std::size_t j = b; j < e; ++j) {
    if (opens(t_[j])) {
      j = closing(t_, j);
      continue;
    }
    if (t_[j].is("<") && j > b && t_[j - 1].kind == TokenKind::identifier) {  // `vec<float, 4>(…)`
      const std::size_t close = angle_close(j, e);
      if (close != npos && close + 1 < e && (t_[close + 1].is("(") || t_[close + 1].is("{") || t_[close + 1].is("::"))) {
        j = close;
        continue;
      }
    }
    if (t_[j].is(",")) comma = j;
    else if (is_assignment(t_[j]) && assign == npos) assign = j;
    else if (t_[j].is("?") && question == npos) question = j;
    else if (is_binary(t_[j]) && binary == npos && j > b && ends_operand(t_[j - 1])) binary = j;
  }
  if (comma != npos) return of(comma + 1, e);
  if (assign != npos) return of(b, assign);  // an assignment designates its left side
  if (question != npos) {
    int nested = 0;
    std::size_t colon = npos;
    for (std::size_t j = question + 1; j < e && colon == npos; ++j) {
      if (opens(t_[j])) j = closing(t_, j);
      else if (t_[j].is("?")) ++nested;
      else if (t_[j].is(":") && nested-- == 0) colon = j;
    }
    if (colon == npos) return unknown("a conditional the translator does not read");
    const ArgumentSpace a = of(question + 1, colon), c = of(colon + 1, e);
    if (a.space < 0) return a;
    if (c.space < 0) return c;
    if (a.space != c.space || a.pointer != c.pointer) return unknown("a conditional of two address spaces");
    return a;
  }
  if (binary != npos) {
    // `p + i`, `x - 1` of a pointer: a pointer into its space; any other arithmetic: a value.
    if (t_[binary].is("+") || t_[binary].is("-")) {
      const ArgumentSpace left = of(b, binary);
      if (left.space >= 0 && left.pointer) return left;
    }
    return temporary();
  }
  const Token& first = t_[b];
  if (first.is("-") || first.is("+") || first.is("!") || first.is("~") || first.is_identifier("sizeof") ||
      first.is_identifier("alignof"))
    return temporary();
  if (first.is("++") || first.is("--")) return of(b + 1, e);
  if (first.is("*")) {
    const ArgumentSpace p = of(b + 1, e);
    if (p.space < 0) return p;
    if (!p.pointer) return unknown("a dereference of something the translator does not read as a pointer");
    return object_in(p.space);
  }
  if (first.is("&")) return unknown("an address");
  if (first.kind == TokenKind::number || first.kind == TokenKind::character)
    return e == b + 1 ? temporary() : unknown("an unrecognised form");
  if (first.kind == TokenKind::string) return unknown("a string literal");
  if (first.is("(")) {  // a C-style cast (`(float)x`, `(device float*)p`) or `(p + i)->m`
    const std::size_t close = closing(t_, b);
    bool type = close > b + 1 && (is_type_name(t_[b + 1].text) || t_[b + 1].is_identifier("const") ||
                                  space_of(t_[b + 1]) >= 0);
    bool pointer = false;
    for (std::size_t j = b + 1; j < close && type; ++j) {
      pointer = pointer || t_[j].is("*") || t_[j].is("&") || t_[j].is("&&");
      type = t_[j].kind == TokenKind::identifier || t_[j].kind == TokenKind::number || t_[j].is("*") ||
             t_[j].is("&") || t_[j].is("&&") || t_[j].is("::") || t_[j].is("<") || t_[j].is(">") || t_[j].is(",");
    }
    if (type) return pointer ? unknown("a cast to a pointer or reference type") : temporary();
  }
  return postfix(b, e);
}

// A name and what follows it: `x`, `ns::x`, `p[i].m`, `p->m[j]`, `float4(v)`, `f(x)`.
ArgumentSpace ArgumentSpaces::postfix(std::size_t b, std::size_t e) const {
  if (t_[b].is("(")) {  // `(p + i)->m`, `(*p).m`
    const std::size_t close = closing(t_, b);
    return close < e ? members(of(b + 1, close), close + 1, e) : unknown("an unrecognised form");
  }
  std::size_t root = b;
  if (t_[root].is("::")) ++root;
  while (root + 2 < e && t_[root].kind == TokenKind::identifier && t_[root + 1].is("::")) root += 2;
  if (root >= e || t_[root].kind != TokenKind::identifier) return unknown("an unrecognised form");
  const std::string& name = t_[root].text;
  if (name == "this") return unknown("`this`, whose address space is the caller's object's");
  if (name == "true" || name == "false" || name == "nullptr") return temporary();
  std::size_t k = root + 1;
  if (is_cast_keyword(name) && k < e && t_[k].is("<")) {
    const std::size_t close = angle_close(k, e);
    for (std::size_t j = k; j < close && j < e; ++j)
      if (t_[j].is("*") || t_[j].is("&") || t_[j].is("&&")) return unknown("a cast to a pointer or reference type");
    return temporary();
  }
  if (is_type_name(name) && k < e && (t_[k].is("(") || t_[k].is("{") || t_[k].is("<")))
    return temporary();  // `float(x)`, `S{a, b}`, `vec<float, 4>(x)`: a value
  if (k < e && t_[k].is("<")) {
    const std::size_t close = angle_close(k, e);
    if (close != npos && close + 1 < e && t_[close + 1].is("(")) return unknown("a call's result");
  }
  if (k < e && t_[k].is("(")) return unknown("a call's result");
  return members(variable(root), k, e);
}

// What postfix operators from k to e make of `cur`: elements, members, pointees.
ArgumentSpace ArgumentSpaces::members(ArgumentSpace cur, std::size_t k, std::size_t e) const {
  while (cur.space >= 0 && k < e) {
    if (t_[k].is("[")) {
      if (!cur.pointer && subscript_operators_)
        return unknown("a subscript of an object whose class may define operator[]");
      cur.pointer = false;  // an element of an array, a vector or a pointer's pointee
      k = closing(t_, k) + 1;
    } else if ((t_[k].is(".") || t_[k].is("->")) && k + 1 < e && t_[k + 1].kind == TokenKind::identifier) {
      if (t_[k].is(".") == cur.pointer) return unknown("a member access the translator does not read");
      cur.pointer = false;
      bool pointer = false;  // a pointer member (`device float* p;`) points into its own space
      const int space = written_space(t_, k + 1, &pointer);
      if (space >= 0 && pointer) cur = {space, true, {}};
      k += 2;
    } else if (t_[k].is("(")) {
      return unknown("a call's result");
    } else if ((t_[k].is("++") || t_[k].is("--")) && k + 1 == e) {
      return temporary();
    } else {
      return unknown("an unrecognised form");
    }
  }
  return cur;
}

// A variable's space from its declaration.
ArgumentSpace ArgumentSpaces::variable(std::size_t at) const {
  bool pointer = false;
  const int space = written_space(t_, at, &pointer);
  if (space >= 0) return {space, pointer, {}};
  if (thread_value(t_, at, classes_)) return object_in(0);
  // `auto v = x[i];`, `for (auto v : a)`: a copy, in thread memory.
  for (std::size_t k = at; k-- > 1;) {
    if (t_[k].text != t_[at].text || !ends_type(t_[k - 1]) || k + 1 >= t_.size()) continue;
    if (t_[k - 1].is_identifier("auto") && (t_[k + 1].is("=") || t_[k + 1].is("{") || t_[k + 1].is(":")))
      return object_in(0);
    if (t_[k + 1].is("=") || t_[k + 1].is("{") || t_[k + 1].is(":") || t_[k + 1].is(";") || t_[k + 1].is("["))
      break;  // the nearest declaration is another kind
  }
  return unknown("`" + t_[at].text +
                 "`, whose declaration names no address space the translator reads (a class member, a reference "
                 "or pointer without one)");
}

}  // namespace metalcall::msl
