// The memory rules (see memory_rules.hpp): C variadics, address-space casts, as_type of pointers.
// Token by token, like the other rules: a variable's address space is read from its declaration
// (a parameter, a local, a program-scope constant, through `auto`, a typedef or `using` alias,
// an integer initialised from a pointer); an operand whose space the tokens do not show is let
// through (the compiler and, on the checked device, the bounds of every buffer still apply).
#include "msl/analysis/memory_rules.hpp"

#include <map>
#include <set>

#include "msl/analysis/call_graph.hpp"
#include "msl/errors/source_errors.hpp"

namespace metalcall::msl {

namespace {

enum class Space { unknown, thread, device, threadgroup, constant };

Space space_word(const Token& tok) {
  if (tok.kind != TokenKind::identifier) return Space::unknown;
  if (tok.text == "thread") return Space::thread;
  if (tok.text == "device") return Space::device;
  if (tok.text == "threadgroup") return Space::threadgroup;
  if (tok.text == "constant") return Space::constant;
  return Space::unknown;
}

const char* space_name(Space s) {
  switch (s) {
    case Space::thread: return "thread";
    case Space::device: return "device";
    case Space::threadgroup: return "threadgroup";
    case Space::constant: return "constant";
    default: return "?";
  }
}

bool is_integer_word(const std::string& w) {
  static const auto& words = *new std::set<std::string>{
      "int", "uint", "long", "ulong", "short", "ushort", "char", "uchar", "unsigned", "signed", "size_t",
      "ptrdiff_t", "intptr_t", "uintptr_t", "int64_t", "uint64_t", "int32_t", "uint32_t", "int16_t", "uint16_t",
      "int8_t", "uint8_t", "const", "volatile"};
  return words.count(w) > 0;
}

// What a type spelled by tokens [a, b) is, as far as these rules care.
struct TypeInfo {
  bool is_type = false;  // only type tokens (names, qualifiers, `::`, template arguments, `*`, `&`)
  Space space = Space::unknown;
  bool pointer = false, reference = false, integer = false, is_auto = false;
  bool integer_reference = false;  // `constant ulong&`: names an integer
};

// A variable, as its declaration shows it.
struct Var {
  Space storage = Space::unknown;  // where it lives (a reference: what it names)
  Space pointee = Space::unknown;  // a pointer's or an array's memory; an integer made from a pointer: that pointer's
  bool pointer = false, array = false, integer = false;
};

class MemoryRules {
 public:
  MemoryRules(const std::vector<Token>& t, const std::string& source, bool checked)
      : t_(t), src_(source), checked_(checked) {}

  void run() {
    check_variadics();
    read_aliases();
    for (std::size_t i = 0; i + 2 < t_.size(); ++i) {
      if (!t_[i].is_identifier("as_type") || !t_[i + 1].is("<")) continue;
      const std::size_t close = angle_close(i + 1);
      const TypeInfo type = type_of(i + 2, close);
      if (type.pointer || type.reference)
        throw rule_error(src_, t_[i], "as_type reinterprets the bits of scalars and vectors, not pointers: a pointer "
                                      "made from bits points where no address space says", "as_type of scalars and vectors");
    }
    const DeclaredNames names = declared_names(t_);
    read_program_constants();
    for (const FunctionDefinition& f : names.definitions) {
      vars_ = globals_;
      std::size_t open = f.name_token + 1;
      if (open < t_.size() && t_[open].is("<")) open = angle_close(open) + 1;
      if (open < t_.size() && t_[open].is("(") && matching(t_, open) < f.body_open) read_parameters(open);
      walk_body(f.body_open, f.body_close);
    }
  }

 private:
  const std::vector<Token>& t_;
  const std::string& src_;
  const bool checked_;  // checked mode: no pointer from an integer in any address space
  std::map<std::string, TypeInfo> aliases_;  // aliases of pointer and reference types with a space
  std::map<std::string, Var> globals_, vars_;

  [[noreturn]] void refuse(std::size_t at, const std::string& why) const {
    throw rule_error(src_, t_[at], why, "no address-space casts");
  }

  std::size_t angle_close(std::size_t open) const { return angle_closing(t_, open); }

  // `f(int n, ...)`, `f(...)`, `f(int n...)`, `[](...)`: a C variadic parameter list. A pack
  // (`Ts... xs`, `f(xs...)`, `sizeof...(Ts)`, folds) has a pattern before its `...`.
  void check_variadics() const {
    for (std::size_t i = 1; i + 1 < t_.size(); ++i) {
      if (!t_[i].is("...") || !t_[i + 1].is(")")) continue;
      const Token& b = t_[i - 1];
      const bool bare = b.is("(") || b.is(",");
      const bool after_parameter = b.kind == TokenKind::identifier && !is_keyword(b.text) && i >= 2 &&
                                   (t_[i - 2].kind == TokenKind::identifier || t_[i - 2].is("*") || t_[i - 2].is("&")) &&
                                   !t_[i - 2].is_identifier("return");
      if (bare || after_parameter)
        throw rule_error(src_, t_[i], "a C variadic function ('...' parameters) is not MSL: its arguments are read "
                                      "past what the call passed; use a fixed parameter list or a variadic template",
                         "no variadic functions");
    }
  }

  TypeInfo type_of(std::size_t a, std::size_t b) const {
    TypeInfo ti;
    if (a >= b || b > t_.size()) return ti;
    bool only_integer = true;
    int angles = 0;
    // A pointer to a pointer's space is the one written between its '*' and the '*' before it:
    // `device float* thread* pp` points into thread memory (before 2026-12-03 read as device).
    // (A reference to a pointer keeps its pointee's: `*reinterpret_cast<constant T* const device&>(x)`
    // is constant memory.)
    Space segment = Space::unknown;
    bool declarator = false;
    for (std::size_t j = a; j < b; ++j) {
      const Token& x = t_[j];
      if (x.is("<")) ++angles;
      else if (x.is(">")) --angles;
      else if (x.is(">>")) angles -= 2;
      else if (angles > 0) continue;  // template arguments say nothing of this type's space
      else if (x.is_identifier("decltype") && j + 1 < b && t_[j + 1].is("(")) {
        // `decltype(p)` of a variable the declarations show: its type.
        const std::size_t c = matching(t_, j + 1);
        const auto v = c == j + 3 ? vars_.find(t_[j + 2].text) : vars_.end();
        if (v == vars_.end() || !v->second.pointer) return TypeInfo{};
        ti.pointer = true;
        if (ti.space == Space::unknown) ti.space = v->second.pointee;
        only_integer = false;
        j = c;
      } else if (x.is("*")) {
        ti.pointer = true;
        if (declarator) ti.space = segment;  // a pointer to a pointer
        declarator = true;
        segment = Space::unknown;
      } else if (x.is("&") || x.is("&&")) {
        ti.reference = true;
      } else if (x.is("::")) {
      } else if (x.kind == TokenKind::identifier) {
        if (const Space s = space_word(x); s != Space::unknown) {
          if (ti.space == Space::unknown) ti.space = s;
          if (segment == Space::unknown) segment = s;
          continue;
        }
        if (x.text == "auto") ti.is_auto = true;
        if (const auto alias = aliases_.find(x.text); alias != aliases_.end()) {
          ti.space = alias->second.space;
          ti.pointer = ti.pointer || alias->second.pointer;
          declarator = declarator || alias->second.pointer;  // `thread P* pp`: a pointer to P
          ti.reference = ti.reference || alias->second.reference;
        }
        if (!is_integer_word(x.text)) only_integer = false;
      } else {
        return TypeInfo{};
      }
    }
    ti.is_type = angles == 0;
    ti.integer = only_integer && !ti.pointer && !ti.reference;
    ti.integer_reference = only_integer && !ti.pointer && ti.reference;
    return ti;
  }

  // `typedef device float* P;`, `using P = device float*;`: P carries the space.
  void read_aliases() {
    for (std::size_t i = 0; i + 2 < t_.size(); ++i) {
      std::size_t a = 0, b = 0, name = 0;
      if (t_[i].is_identifier("typedef")) {
        std::size_t end = i + 1;
        while (end < t_.size() && !t_[end].is(";") && !t_[end].is("(") && !t_[end].is("[")) ++end;
        if (end >= t_.size() || !t_[end].is(";")) continue;
        a = i + 1, b = end - 1, name = end - 1;
      } else if (t_[i].is_identifier("using") && t_[i + 1].kind == TokenKind::identifier && t_[i + 2].is("=")) {
        std::size_t end = i + 3;
        while (end < t_.size() && !t_[end].is(";")) ++end;
        a = i + 3, b = end, name = i + 1;
      } else {
        continue;
      }
      const TypeInfo ti = type_of(a, b);
      if (ti.is_type && ti.space != Space::unknown && (ti.pointer || ti.reference)) aliases_[t_[name].text] = ti;
    }
  }

  // `constant float k[4] = {…};` at file scope.
  void read_program_constants() {
    int depth = 0;
    for (std::size_t i = 0; i + 1 < t_.size(); ++i) {
      if (t_[i].is("{")) ++depth;
      else if (t_[i].is("}")) --depth;
      else if (depth == 0 && t_[i].is_identifier("constant") && (i == 0 || t_[i - 1].is(";") || t_[i - 1].is("}"))) {
        std::size_t j = i + 1;
        while (j < t_.size() && !t_[j].is("=") && !t_[j].is("[") && !t_[j].is(";")) ++j;
        if (j < t_.size() && j > i + 1 && t_[j - 1].kind == TokenKind::identifier) {
          const TypeInfo ti = type_of(i, j - 1);
          if (ti.pointer || ti.reference) continue;
          Var v;
          v.storage = Space::constant;
          v.array = t_[j].is("[");
          if (v.array) v.pointee = Space::constant;
          globals_[t_[j - 1].text] = v;
        }
      }
    }
  }

  void record(const std::string& name, const Var& v) {
    const auto it = vars_.find(name);
    if (it == vars_.end() || globals_.count(name)) {
      vars_[name] = v;
    } else if (it->second.storage != v.storage || it->second.pointee != v.pointee) {
      it->second = Var{};  // declared twice, differently (shadowing): unknown
    }
  }

  // A declaration [a, b): its name and what its type says; `init` the first token of its
  // initializer (or b). Returns false when [a, b) is not one.
  bool declaration(std::size_t a, std::size_t b, std::size_t& init) {
    static const auto& statements = *new std::set<std::string>{"return", "case", "goto", "delete", "throw", "else", "do",
                                                      "typedef", "using", "namespace", "break", "continue",
                                                      "static_assert", "template", "friend", "operator"};
    if (a >= b || (t_[a].kind == TokenKind::identifier && statements.count(t_[a].text))) return false;
    std::size_t stop = a;
    while (stop < b && !t_[stop].is("=") && !t_[stop].is("{") && !t_[stop].is("(") &&
           !(t_[stop].is("[")) && !t_[stop].is(",") && !t_[stop].is(":"))
      ++stop;
    if (stop == a || stop - a < 2) return false;
    const Token& name = t_[stop - 1];
    if (name.kind != TokenKind::identifier || is_keyword(name.text) || space_word(name) != Space::unknown) return false;
    const TypeInfo ti = type_of(a, stop - 1);
    if (!ti.is_type) return false;
    init = stop < b && t_[stop].is("=") ? stop + 1 : b;
    Var v;
    v.array = stop < b && t_[stop].is("[") && !(stop + 1 < b && t_[stop + 1].is("["));
    if (ti.pointer) {
      v.pointer = true;
      v.storage = Space::thread;
      v.pointee = ti.space;
      if (ti.space != Space::unknown && init < b) {
        const Space from = space_of(init, b);
        if (from != Space::unknown && from != ti.space)
          refuse(stop, "'" + name.text + "' is a " + std::string(space_name(ti.space)) + " pointer initialised with a " +
                           space_name(from) + " address: MSL converts no pointer between address spaces");
      }
    } else if (ti.reference) {
      v.storage = ti.space;
      v.integer = ti.integer_reference;
      if (ti.space != Space::unknown && init < b) {
        const Space from = lvalue_space(init, b);
        if (from != Space::unknown && from != ti.space)
          refuse(stop, "'" + name.text + "' is a " + std::string(space_name(ti.space)) + " reference bound to " +
                           space_name(from) + " memory: MSL converts no reference between address spaces");
      }
    } else if (ti.is_auto && init < b) {
      const Space from = space_of(init, b);
      if (from != Space::unknown) v.pointer = true, v.storage = Space::thread, v.pointee = from;
    } else if (ti.integer && !v.array) {
      v.integer = true;
      v.storage = ti.space != Space::unknown ? ti.space : Space::thread;  // `threadgroup uint n;`
      if (init < b) v.pointee = space_of(init, b);
    } else {
      v.storage = ti.space != Space::unknown ? ti.space : Space::thread;
      if (v.array) v.pointee = v.storage;
    }
    record(name.text, v);
    return true;
  }

  void read_parameters(std::size_t open) {
    const std::size_t close = matching(t_, open);
    std::size_t start = open + 1;
    int depth = 0;
    for (std::size_t j = open + 1; j <= close && j < t_.size(); ++j) {
      if (j < close && (t_[j].is("(") || t_[j].is("[") || t_[j].is("{") || t_[j].is("<"))) ++depth;
      else if (j < close && (t_[j].is(")") || t_[j].is("]") || t_[j].is("}") || t_[j].is(">"))) --depth;
      else if (j == close || (depth == 0 && t_[j].is(","))) {
        std::size_t init;
        declaration(start, j, init);
        start = j + 1;
      }
    }
  }

  // A cast whose target type may name another address space. const_cast changes none in MSL
  // (Metal's compiler refuses `const_cast<device float&>(c)` of a constant c), so one that
  // does is refused as the others are; it wrote `constant` Buffers and program-scope constants
  // on every mode before 2026-12-05.
  static bool named_cast(const Token& x) {
    return x.is_identifier("static_cast") || x.is_identifier("reinterpret_cast") || x.is_identifier("const_cast");
  }

  // The address space of the memory an address expression [a, b) points into, or unknown.
  Space space_of(std::size_t a, std::size_t b) const {
    std::size_t i = a;
    while (i < b) {
      const Token& x = t_[i];
      if (x.is("(")) {
        const std::size_t c = matching(t_, i);
        if (c >= b) return Space::unknown;
        const TypeInfo ti = type_of(i + 1, c);
        const bool cast = ti.is_type && c + 1 < b && starts_operand(c + 1);
        if (!cast) return space_of(i + 1, c);
        if (ti.pointer) return ti.space;
        if (!ti.integer) return Space::unknown;
        i = c + 1;  // an integer made from a pointer keeps its space
        continue;
      }
      if (named_cast(x) && i + 1 < b && t_[i + 1].is("<")) {
        const std::size_t close = angle_close(i + 1);
        if (close + 1 >= b || !t_[close + 1].is("(")) return Space::unknown;
        const TypeInfo ti = type_of(i + 2, close);
        if (ti.pointer) return ti.space;
        if (!ti.integer) return Space::unknown;
        return space_of(close + 2, matching(t_, close + 1));
      }
      if (x.kind == TokenKind::identifier && is_integer_word(x.text) && i + 1 < b && t_[i + 1].is("("))
        return space_of(i + 2, matching(t_, i + 1));  // ulong(&x)
      if (x.is("&") && i + 1 < b && t_[i + 1].kind == TokenKind::identifier) {
        const auto v = vars_.find(t_[i + 1].text);
        if (v == vars_.end()) return Space::unknown;
        const bool indexed = i + 2 < b && (t_[i + 2].is("[") || t_[i + 2].is("->"));
        // A later `[` or `->` may go through a member pointer (`&regs.ptr->i`, SPIRV-Cross's
        // buffer addresses: a device object reached from a constant one): its space is not known here.
        for (std::size_t j = indexed ? (t_[i + 2].is("[") ? matching(t_, i + 2) + 1 : i + 3) : i + 2; j < b; ++j) {
          if (t_[j].is("(")) break;
          if (t_[j].is("[") || t_[j].is("->")) return Space::unknown;
        }
        if (indexed) return v->second.pointer || v->second.array ? v->second.pointee : Space::unknown;
        return v->second.storage;
      }
      if (x.kind == TokenKind::identifier && !(i + 1 < b && (t_[i + 1].is("(") || t_[i + 1].is("::")))) {
        const auto v = vars_.find(x.text);
        if (v == vars_.end() || (i + 1 < b && (t_[i + 1].is(".") || t_[i + 1].is("->") || t_[i + 1].is("["))))
          return Space::unknown;
        return v->second.pointer || v->second.array || v->second.integer ? v->second.pointee : Space::unknown;
      }
      return Space::unknown;
    }
    return Space::unknown;
  }

  // The address space of the object an lvalue [a, b) names (`x`, `*p`, `p[i]`, `x.m`), or unknown.
  Space lvalue_space(std::size_t a, std::size_t b) const {
    if (a < b && t_[a].is("*")) return space_of(a + 1, b);
    if (a >= b || t_[a].kind != TokenKind::identifier) return Space::unknown;
    const auto v = vars_.find(t_[a].text);
    if (v == vars_.end()) return Space::unknown;
    if (a + 1 < b && (t_[a + 1].is("[") || t_[a + 1].is("->")))
      return v->second.pointer || v->second.array ? v->second.pointee : Space::unknown;
    return v->second.storage;
  }

  bool starts_operand(std::size_t j) const {
    const Token& x = t_[j];
    return x.kind == TokenKind::identifier || x.kind == TokenKind::number || x.is("&") || x.is("(") || x.is("*");
  }

  // The end of the statement or argument an operand at `a` belongs to.
  std::size_t operand_end(std::size_t a, std::size_t limit) const {
    for (std::size_t j = a; j < limit; ++j) {
      if (t_[j].is("(") || t_[j].is("[") || t_[j].is("{")) j = matching(t_, j);
      else if (t_[j].is(";") || t_[j].is(",") || t_[j].is(")") || t_[j].is("]") || t_[j].is("}")) return j;
    }
    return limit;
  }

  // True when the operand [a, b) is an integer the tokens show: a literal other than the null
  // pointer's 0, a variable, parameter or reference of integer type, a conversion to one, or
  // arithmetic on those with no pointer or array among its terms.
  bool integer_operand(std::size_t a, std::size_t b) const {
    while (a < b && (t_[a].is("+") || t_[a].is("-") || t_[a].is("~"))) ++a;
    if (a >= b) return false;
    for (std::size_t j = a; j < b; ++j) {  // a pointer or array term makes it pointer arithmetic
      if (t_[j].is("(") || t_[j].is("[")) {
        j = matching(t_, j);
        continue;
      }
      if (t_[j].is("?")) {  // `c ? x : y`: what its branches are (the condition is any scalar)
        int depth = 0;
        for (std::size_t k = j + 1; k < b; ++k) {
          if (t_[k].is("(") || t_[k].is("[")) k = matching(t_, k);
          else if (t_[k].is("?")) ++depth;
          else if (t_[k].is(":") && depth-- == 0) return integer_operand(j + 1, k);
        }
        return false;
      }
      const auto v = t_[j].kind == TokenKind::identifier ? vars_.find(t_[j].text) : vars_.end();
      if (v != vars_.end() && (v->second.pointer || v->second.array) && !(j > a && (t_[j - 1].is(".") || t_[j - 1].is("->"))))
        return false;
    }
    const Token& x = t_[a];
    if (x.kind == TokenKind::number) return !(b == a + 1 && (x.text == "0" || x.text == "0u" || x.text == "0U"));
    if (x.is_identifier("sizeof") || x.is_identifier("alignof")) return true;
    if (x.is("(")) {
      const std::size_t c = matching(t_, a);
      if (c >= b) return false;
      const TypeInfo ti = type_of(a + 1, c);
      if (ti.is_type && c + 1 < b && starts_operand(c + 1)) return ti.integer;  // `(ulong)x`
      return c + 1 == b ? integer_operand(a + 1, c) : integer_operand(a + 1, c) && !t_[c + 1].is("[");
    }
    if ((x.is_identifier("static_cast") || x.is_identifier("reinterpret_cast")) && a + 1 < b && t_[a + 1].is("<"))
      return type_of(a + 2, angle_close(a + 1)).integer;
    if (x.kind == TokenKind::identifier && is_integer_word(x.text) && a + 1 < b && t_[a + 1].is("(")) return true;
    if (x.kind != TokenKind::identifier) return false;
    const auto v = vars_.find(x.text);
    if (v == vars_.end() || !v->second.integer || v->second.array) return false;
    return !(a + 1 < b && (t_[a + 1].is("(") || t_[a + 1].is(".") || t_[a + 1].is("->") || t_[a + 1].is("[")));
  }

  void check_cast(std::size_t at, const TypeInfo& target, std::size_t a, std::size_t b) const {
    if (target.space != Space::unknown && (target.pointer || target.reference)) {
      // An integer made from an address of another space is that cast (`(device float*)(ulong)&x`).
      const Space from = target.pointer ? space_of(a, b) : lvalue_space(a, b);
      if (from != Space::unknown && from != target.space)
        refuse(at, std::string("a cast from ") + space_name(from) + " to " + space_name(target.space) +
                       (target.pointer ? " pointer" : " reference") +
                       ": MSL converts no pointer or reference between address spaces (Metal's compiler refuses it)");
    }
    // Thread and threadgroup memory have no addresses as integers. A device or constant pointer
    // may come from one in MSL (a GPU address: SPIRV-Cross's buffer device addresses,
    // `reinterpret_cast<device T*>(ulong)`), which the unchecked devices take (kernel source is
    // trusted code there) and checked mode refuses: a checked pointer's bounds come from a
    // Buffer, a variable or another pointer, and an integer has none (the prelude's checked
    // pointers refuse the integers the tokens do not show, metal_checked.h).
    const bool private_space = target.space == Space::thread || target.space == Space::threadgroup;
    if (target.pointer && (private_space || checked_) && integer_operand(a, b)) {
      const std::string spelled = target.space == Space::unknown ? "" : std::string(space_name(target.space)) + " ";
      throw rule_error(src_, t_[at], "a " + spelled + "pointer made from an integer: " +
                                         (private_space ? "only device and constant memory have addresses as integers "
                                                          "(GPU addresses); thread and threadgroup pointers come from "
                                                          "variables and other pointers"
                                                        : "checked mode takes no integer as an address (it has no "
                                                          "bounds); pointers come from buffers, variables and other "
                                                          "pointers, and Device(\"cpu\") without checked=True takes "
                                                          "GPU addresses"),
                       "no pointers from integers");
    }
  }

  void walk_body(std::size_t open, std::size_t close) {
    for (std::size_t i = open + 1; i < close && i < t_.size(); ++i) {
      const Token& x = t_[i];
      const Token& before = t_[i - 1];
      if (before.is(";") || before.is("{") || before.is("}") || (before.is("(") && i >= 2 && t_[i - 2].is_identifier("for"))) {
        const std::size_t end = operand_end(i, close);
        std::size_t init;
        declaration(i, end, init);
      }
      if (x.is("(") && !(before.kind == TokenKind::identifier && !is_keyword(before.text)) && !before.is("]") &&
          !before.is(")") && !before.is_identifier("sizeof") && !before.is_identifier("alignof") &&
          !before.is_identifier("decltype")) {
        const std::size_t c = matching(t_, i);
        if (c + 1 < close && starts_operand(c + 1)) {
          const TypeInfo ti = type_of(i + 1, c);
          if (ti.is_type) check_cast(i, ti, c + 1, operand_end(c + 1, close));
        }
      } else if (x.kind == TokenKind::identifier && i + 1 < close && t_[i + 1].is("(") && !before.is(".") &&
                 !before.is("->") && (aliases_.count(x.text) || x.is_identifier("decltype"))) {
        // `P(addr)` for an alias P of a pointer type, `decltype(p)(addr)`: functional casts.
        std::size_t type_end = i + 1;
        if (x.is_identifier("decltype")) type_end = matching(t_, i + 1) + 1;
        if (type_end < close && t_[type_end].is("(")) {
          const TypeInfo ti = type_of(i, type_end);
          if (ti.is_type) check_cast(i, ti, type_end + 1, matching(t_, type_end));
        }
      } else if (named_cast(x) && i + 1 < close && t_[i + 1].is("<")) {
        const std::size_t gt = angle_close(i + 1);
        if (gt + 1 < close && t_[gt + 1].is("(")) check_cast(i, type_of(i + 2, gt), gt + 2, matching(t_, gt + 1));
      }
    }
  }
};

}  // namespace

void check_memory_rules(const std::vector<Token>& t, const std::string& source, bool checked) {
  MemoryRules(t, source, checked).run();
}

}  // namespace metalcall::msl
