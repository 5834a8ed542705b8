// Pointer types without an address space (see pointer_spaces.hpp).
#include "msl/analysis/pointer_spaces.hpp"

#include <set>

#include "msl/analysis/call_graph.hpp"  // matching
#include "msl/analysis/implementation_rules.hpp"
#include "msl/errors/source_errors.hpp"

namespace metalcall::msl {

namespace {

bool is_space_word(const std::string& w) {
  return w == "device" || w == "constant" || w == "thread" || w == "threadgroup" || w == "threadgroup_imageblock" ||
         w == "ray_data" || w == "object_data";
}

// bool, int, half4, ulong3, float3x4, packed_float3, bfloat2, uint8_t, size_t, void, ...
bool is_builtin_type_word(std::string w) {
  static const auto& scalars = *new std::set<std::string>{
      "bool", "char", "uchar", "short", "ushort", "int", "uint", "long", "ulong", "half", "float", "bfloat",
      "double", "unsigned", "signed", "void", "size_t", "ptrdiff_t", "intptr_t", "uintptr_t", "int8_t", "uint8_t",
      "int16_t", "uint16_t", "int32_t", "uint32_t", "int64_t", "uint64_t"};
  if (scalars.count(w)) return true;
  if (w.rfind("packed_", 0) == 0) w = w.substr(7);
  const auto width = [](char c) { return c >= '2' && c <= '4'; };
  if (w.size() >= 4 && w[w.size() - 2] == 'x' && width(w.back()) && width(w[w.size() - 3]))
    w = w.substr(0, w.size() - 3);  // a matrix: floatNxM, halfNxM
  else if (!w.empty() && width(w.back()))
    w.pop_back();  // a vector
  else
    return false;
  return w != "void" && w != "size_t" && scalars.count(w) && w.find('_') == std::string::npos;
}

bool is_qualifier(const std::string& w) { return w == "const" || w == "volatile"; }

class PointerSpaces {
 public:
  PointerSpaces(const std::vector<Token>& t, const std::string& source) : t_(t), src_(source) {}

  void run() {
    bodies_ = class_bodies(t_);
    read_template_parameters();
    read_template_scopes();
    read_class_names();
    read_variable_scopes();
    read_aliases();
    for (std::size_t i = 1; i < t_.size(); ++i) {
      if (!t_[i].is("*")) continue;
      std::size_t j = i;
      while (j > 0) {
        if (in_run(t_[j - 1]) || qualifies_name(j - 1)) --j;
        else if (const std::size_t a = attribute_before(j); a != j) j = a;
        else break;
      }
      // `Outer<T>::half4*`: a member of a class template's instance (its space comes before it).
      if (t_[j].is("::") && j > 0 && t_[j - 1].is(">")) continue;
      // `s.S * x`, `p->S * x`: a member's value, not a type.
      if (j > 0 && (t_[j - 1].is(".") || t_[j - 1].is("->"))) continue;
      // A builtin type's name is no value: right before a '*' it is the pointee of a pointer type,
      // refused where it declares or converts something (a type trait's argument touches no memory).
      if (builtin_without_space(j, i) && declares_or_converts(j, i))
        throw rule_error(src_, t_[i],
                         "a pointer type names its address space in MSL ('device', 'constant', 'threadgroup' or "
                         "'thread' before the type): '" + spelled(j, i) + "*' has none",
                         "pointers name their address space");
    }
  }

 private:
  const std::vector<Token>& t_;
  const std::string& src_;
  // Names of types without a space: builtin ones' aliases (`typedef float real;`), the classes,
  // unions and enums the source declares and their aliases (`using P = S*;`), not a template's
  // parameters (`T*` with T = `device float` names its space).
  std::set<std::string> aliases_;
  std::set<std::string> template_parameters_;
  // Every alias by its scope, `Class::name` (a member) or `::name` (the rest), and those of them
  // without a space: a member alias is its class's name, not every struct's (`S::type*` of
  // `struct S { using type = device float; }` was refused for another struct's `typedef float
  // type;` until 2026-12-03).
  std::vector<ClassBody> bodies_;
  std::set<std::string> scoped_aliases_, scoped_without_space_;
  // Each template's parameters (`template <int B, class T>`: B, T) and the tokens of the
  // declaration they govern, where they hide a class of the same name (`struct B {…};
  // template <int B> float f(float x) { return x * (B * 2); }`: B is the value there, and
  // `(B * C)` was refused as a pointer type `B*` until 2026-12-05).
  struct TemplateScope {
    std::size_t begin, end;
    std::set<std::string> names;
  };
  std::vector<TemplateScope> template_scopes_;

  // The scope that names the token at k: its qualifier (`S::type`), else the innermost class
  // body around it; "" for the rest.
  std::string scope_of(std::size_t k) const {
    if (k >= 2 && t_[k - 1].is("::") && t_[k - 2].kind == TokenKind::identifier) return t_[k - 2].text;
    const ClassBody* inner = nullptr;
    for (const ClassBody& c : bodies_)
      if (c.open < k && k < c.close && (!inner || c.open > inner->open)) inner = &c;
    return inner ? inner->name : std::string();
  }
  void read_alias(std::size_t name, bool without_space) {
    const std::string scoped = scope_of(name) + "::" + t_[name].text;
    scoped_aliases_.insert(scoped);
    if (!without_space) return;
    scoped_without_space_.insert(scoped);
    aliases_.insert(t_[name].text);
  }
  // The name at k is a type without a space: a builtin one, or an alias or class of the source
  // that has none, read in its scope where that scope declares an alias of the name (else any
  // alias of it: a derived class's, or a member's outside its class).
  bool names_type_without_space(std::size_t k) const {
    const std::string& n = t_[k].text;
    if (is_builtin_type_word(n)) return true;
    if (!aliases_.count(n) || template_parameter_at(k)) return false;
    const std::string scoped = scope_of(k) + "::" + n;
    if (scoped_aliases_.count(scoped)) return scoped_without_space_.count(scoped) != 0;
    if (!(k > 0 && t_[k - 1].is("::")) && scoped_aliases_.count("::" + n)) return scoped_without_space_.count("::" + n) != 0;
    return true;
  }

  bool in_run(const Token& x) const {
    if (x.kind != TokenKind::identifier) return x.is("::");
    return is_space_word(x.text) || is_builtin_type_word(x.text) || aliases_.count(x.text) || is_qualifier(x.text) ||
           x.text == "metal" || x.text == "struct" || x.text == "class" || x.text == "union" || x.text == "enum" ||
           x.text == "typename";  // `device typename X::type*`: the space before it (refused before 2026-12-03)
  }
  // Where a GNU attribute ending right before token k starts (`threadgroup __attribute__((aligned(16)))
  // float4*`: tinygrad's casts of its threadgroup arrays), else k.
  std::size_t attribute_before(std::size_t k) const {
    if (k < 4 || !t_[k - 1].is(")") || !t_[k - 2].is(")")) return k;
    for (std::size_t m = k - 1, depth = 0; m-- > 0;) {
      if (t_[m].is(")")) ++depth;
      else if (t_[m].is("(") && depth-- == 0) {
        // m opens the outer pair: `__attribute__ ( ( ... ) )`
        return m > 0 && t_[m - 1].is_identifier("__attribute__") && t_[m + 1].is("(") ? m - 1 : k;
      } else if (t_[m].is(";") || t_[m].is("{") || t_[m].is("}")) {
        return k;
      }
    }
    return k;
  }
  // A namespace's or a class's name before `::` (`n::S* p`).
  bool qualifies_name(std::size_t k) const {
    return t_[k].kind == TokenKind::identifier && k + 1 < t_.size() && t_[k + 1].is("::");
  }

  // Tokens [a, b) name a builtin type (or an alias of one) and no address space.
  bool builtin_without_space(std::size_t a, std::size_t b) const {
    bool type_word = false;
    for (std::size_t k = a; k < b; ++k) {
      if (is_space_word(t_[k].text)) return false;
      // (a class's name before `::` is no pointee: `S::type*` is its member's)
      type_word = type_word || (t_[k].kind == TokenKind::identifier && !(k + 1 < b && t_[k + 1].is("::")) &&
                                names_type_without_space(k));
    }
    return type_word;
  }

  // The pointer type at [run, star] declares (`float* q`, `using P = int*;`, an unnamed
  // parameter) or converts (`(float*)x`, `static_cast<float*>(x)`); not a template's argument
  // (`remove_pointer_t<const int*>`, `is_same_v<int*, T>`).
  bool declares_or_converts(std::size_t run, std::size_t star) const {
    std::size_t k = star;
    while (k < t_.size() && (t_[k].is("*") || t_[k].is("&") || is_qualifier(t_[k].text) || t_[k].is("__restrict") ||
                             t_[k].is("restrict")))
      ++k;
    if (k >= t_.size()) return false;
    const Token& next = t_[k];
    if (next.kind == TokenKind::identifier || next.is(";") || next.is(")")) return true;
    if (!next.is(">") && !next.is(">>") && !next.is(",")) return false;
    // Inside <...>: a cast's type is refused, a template's argument is not; inside (...): a parameter.
    int parens = 0, angles = 0;
    for (std::size_t m = run; m-- > 0;) {
      const Token& x = t_[m];
      if (x.is(")")) ++parens;
      else if (x.is("(") && parens-- == 0) return true;
      else if (x.is(">")) ++angles;
      else if (x.is(">>")) angles += 2;
      else if (x.is("<") && angles-- == 0)
        return m > 0 && (t_[m - 1].is_identifier("static_cast") || t_[m - 1].is_identifier("reinterpret_cast") ||
                         t_[m - 1].is_identifier("const_cast"));
      else if (x.is(";") || x.is("{") || x.is("}")) return false;
    }
    return false;
  }

  std::string spelled(std::size_t a, std::size_t b) const {
    std::string out;
    for (std::size_t k = a; k < b; ++k) out += (out.empty() || t_[k].is("::") || t_[k - 1].is("::") ? "" : " ") + t_[k].text;
    return out;
  }

  // The names `template <typename T, class U>` lists declare (not their defaults).
  void read_template_parameters() {
    for (std::size_t i = 0; i + 2 < t_.size(); ++i) {
      if (!t_[i].is_identifier("template") || !t_[i + 1].is("<")) continue;
      int depth = 0;
      for (std::size_t j = i + 1; j + 1 < t_.size(); ++j) {
        if (t_[j].is("<") || t_[j].is("(")) ++depth;
        else if (t_[j].is(">") || t_[j].is(")")) --depth;
        else if (t_[j].is(">>")) depth -= 2;
        if (depth <= 0) break;
        if (depth == 1 && (t_[j].is_identifier("typename") || t_[j].is_identifier("class")) &&
            t_[j + 1].kind == TokenKind::identifier)
          template_parameters_.insert(t_[j + 1].text);
      }
    }
  }

  // Whether the name at k is a template's parameter, or a variable, in whose scope k is (not a
  // member reached through a scope, `X::B`, nor an elaborated `struct B`).
  bool template_parameter_at(std::size_t k) const {
    if (k > 0 && t_[k - 1].is("::")) return false;
    // `struct S* p` names the class whatever hides it.
    if (k > 0 && (t_[k - 1].is_identifier("struct") || t_[k - 1].is_identifier("class") ||
                  t_[k - 1].is_identifier("union") || t_[k - 1].is_identifier("enum")))
      return false;
    for (const TemplateScope& s : template_scopes_)
      if (s.begin < k && k < s.end && s.names.count(t_[k].text)) return true;
    return false;
  }

  // `template <…>` headers: their parameters' names (each piece's last name before a default)
  // and the declaration after the `>`, up to its first `;` or the `}` closing its first `{`.
  void read_template_scopes() {
    for (std::size_t i = 0; i + 2 < t_.size(); ++i) {
      if (!t_[i].is_identifier("template") || !t_[i + 1].is("<")) continue;
      TemplateScope scope{i, t_.size(), {}};
      int depth = 0;
      std::size_t close = i + 1;
      std::string last;
      bool defaulted = false;
      for (std::size_t j = i + 1; j < t_.size(); ++j) {
        const Token& x = t_[j];
        if (x.is("<") || x.is("(") || x.is("[") || x.is("{")) ++depth;
        else if (x.is(">") || x.is(")") || x.is("]") || x.is("}")) --depth;
        else if (x.is(">>")) depth -= 2;
        if (depth <= 0 || (depth == 1 && x.is(","))) {
          if (!last.empty()) scope.names.insert(last);
          last.clear();
          defaulted = false;
          if (depth <= 0) {
            close = j;
            break;
          }
        } else if (depth == 1 && x.is("=")) {
          defaulted = true;
        } else if (depth == 1 && !defaulted && x.kind == TokenKind::identifier) {
          last = x.text;
        }
      }
      if (scope.names.empty()) continue;  // `template <>`: a specialisation declares none
      for (std::size_t j = close + 1, d = 0; j < t_.size(); ++j) {
        if (t_[j].is("(") || t_[j].is("[") || t_[j].is("{")) ++d;
        else if (t_[j].is(")") || t_[j].is("]") || t_[j].is("}")) {
          if (d == 0 || (--d == 0 && t_[j].is("}"))) {
            scope.end = j;
            break;
          }
        } else if (d == 0 && t_[j].is(";")) {
          scope.end = j;
          break;
        }
      }
      template_scopes_.push_back(std::move(scope));
    }
  }

  // Variables, parameters and members named like a class of the source hide it from their
  // declaration to the end of their block, function or class (`struct scale {…}; float f(float
  // scale, float x) { return scale * x; }`: a product, refused as a pointer type `scale*` before
  // 2026-12-05). A declaration: the name after a type's last token (a name, `>`, `&`, `*`) and
  // before `=`, `;`, `,`, `)`, `[` or `{`, in no typedef or alias.
  void read_variable_scopes() {
    static const auto& not_types = *new std::set<std::string>{
        "return", "else", "case", "struct", "class", "union", "enum", "typename", "using", "typedef",
        "namespace", "goto", "new", "delete", "throw", "sizeof", "operator", "template", "do"};
    for (std::size_t k = 1; k + 1 < t_.size(); ++k) {
      const Token& x = t_[k];
      if (x.kind != TokenKind::identifier || !aliases_.count(x.text) || is_builtin_type_word(x.text)) continue;
      const Token& before = t_[k - 1];
      const Token& after = t_[k + 1];
      const bool type_end = (before.kind == TokenKind::identifier && !not_types.count(before.text) &&
                             !is_qualifier(before.text) && !is_space_word(before.text)) ||
                            before.is(">") || before.is("&") || before.is("&&") || before.is("*");
      if (!type_end || !(after.is("=") || after.is(";") || after.is(",") || after.is(")") || after.is("[") ||
                         after.is("{")))
        continue;
      if (after.is("{") && (before.kind == TokenKind::identifier && (before.is_identifier("final"))))
        continue;
      // `x & S;`, `a * S)`: an expression's operand, not a declarator, unless a type precedes.
      if ((before.is("&") || before.is("&&") || before.is("*")) &&
          !(k >= 2 && (t_[k - 2].kind == TokenKind::identifier || t_[k - 2].is(">")) &&
            (k < 3 || !(t_[k - 3].is("=") || t_[k - 3].is("(") || t_[k - 3].is(",") || t_[k - 3].is("return")))))
        continue;
      // In a typedef or alias declaration the name is the type's own (`typedef struct S S;`).
      bool alias = false;
      for (std::size_t j = k; j-- > 0;) {
        if (t_[j].is(";") || t_[j].is("{") || t_[j].is("}")) break;
        if (t_[j].is_identifier("typedef") || t_[j].is_identifier("using") || t_[j].is_identifier("friend")) alias = true;
      }
      if (alias) continue;
      // Its scope: the innermost unclosed `(` or `{` before it. A parameter's runs on to the end of
      // the function's body; a member's is its class body.
      int depth = 0;
      std::size_t open = t_.size();
      for (std::size_t j = k; j-- > 0;) {
        if (t_[j].is(")") || t_[j].is("}") || t_[j].is("]")) ++depth;
        else if ((t_[j].is("(") || t_[j].is("{") || t_[j].is("[")) && depth-- == 0) {
          open = j;
          break;
        }
      }
      std::size_t end = t_.size();
      if (open < t_.size() && !t_[open].is("[")) {
        end = matching(t_, open);
        if (t_[open].is("(")) {  // a parameter: to the end of the body after the list, if one follows
          std::size_t b = end + 1;
          while (b < t_.size() && !t_[b].is("{") && !t_[b].is(";") && !t_[b].is("}")) ++b;
          if (b < t_.size() && t_[b].is("{")) end = matching(t_, b);
        }
      }
      template_scopes_.push_back({k, end, {x.text}});
    }
  }

  // `struct S {`, `class C : B {`, `union U;`, `enum class E : int {`: the names of the types the
  // source declares (a template's `class T` is a parameter: a ',', '>' or '=' follows it).
  void read_class_names() {
    for (std::size_t i = 0; i + 2 < t_.size(); ++i) {
      if (!(t_[i].is_identifier("struct") || t_[i].is_identifier("class") || t_[i].is_identifier("union") ||
            t_[i].is_identifier("enum")))
        continue;
      const Token& name = t_[i + 1];
      const Token& next = t_[i + 2];
      if (name.kind != TokenKind::identifier || is_space_word(name.text) || template_parameters_.count(name.text)) continue;
      if (next.is("{") || next.is(":") || next.is(";") || next.is_identifier("final") || next.is("<"))
        aliases_.insert(name.text);
    }
  }

  // The alias's target [a, b) names no space of its own: none at its top level, or one before a
  // '*' (`using P = device float*;`: a pointer, whose own pointer needs a space); not read for a
  // target that may carry one (a template's parameter, `typename X::type`, `decltype(…)`).
  bool alias_without_space(std::size_t a, std::size_t b) const {
    int depth = 0;
    bool space = false;
    for (std::size_t k = a; k < b; ++k) {
      const Token& x = t_[k];
      if (x.is("<") || x.is("(")) ++depth;
      else if (x.is(">") || x.is(")")) --depth;
      else if (x.is(">>")) depth -= 2;
      if (template_parameters_.count(x.text) || x.is_identifier("typename") || x.is_identifier("decltype")) return false;
      if (depth == 0 && is_space_word(x.text)) space = true;
      if (depth == 0 && x.is("*")) space = false;
    }
    return !space;
  }

  // `typedef const float real;` and `using real = float;`: an alias of a builtin type with no
  // space and no '*' (the pointer's own '*' is read where it is written); `using P = S*;` and
  // `typedef S T;` of a class type, with or without a '*'.
  void read_aliases() {
    for (std::size_t i = 0; i + 3 < t_.size(); ++i) {
      std::size_t a = 0, b = 0, name = 0;
      if (t_[i].is_identifier("typedef")) {
        a = i + 1;
        b = a;
        while (b < t_.size() && in_run(t_[b])) ++b;
        if (b == a || b + 1 >= t_.size() || t_[b].kind != TokenKind::identifier || !t_[b + 1].is(";")) continue;
        name = b;
      } else if (t_[i].is_identifier("using") && t_[i + 1].kind == TokenKind::identifier && t_[i + 2].is("=")) {
        name = i + 1;
        a = i + 3;
        b = a;
        while (b < t_.size() && in_run(t_[b])) ++b;
        if (b == a || b >= t_.size() || !t_[b].is(";")) continue;
      } else {
        continue;
      }
      read_alias(name, builtin_without_space(a, b));
    }
    // Aliases of the classes' types (and of their pointers), to a fixed point: `typedef S T;
    // using P = T*;`. (Not an alias template's: its parameters may carry a space.)
    for (bool more = true; more;) {
      more = false;
      for (std::size_t i = 0; i + 3 < t_.size(); ++i) {
        std::size_t a = 0, b = 0, name = 0;
        if (t_[i].is_identifier("typedef")) {
          a = i + 1;
          for (b = a; b < t_.size() && !t_[b].is(";") && !t_[b].is("{") && !t_[b].is("("); ++b) {}
          if (b >= t_.size() || !t_[b].is(";") || b - a < 2 || t_[b - 1].kind != TokenKind::identifier) continue;
          name = --b;
        } else if (t_[i].is_identifier("using") && t_[i + 1].kind == TokenKind::identifier && t_[i + 2].is("=") &&
                   !(i > 0 && t_[i - 1].is(">"))) {
          name = i + 1;
          a = i + 3;
          for (b = a; b < t_.size() && !t_[b].is(";") && !t_[b].is("{"); ++b) {}
          if (b >= t_.size() || !t_[b].is(";")) continue;
        } else {
          continue;
        }
        if (scoped_without_space_.count(scope_of(name) + "::" + t_[name].text) || template_parameters_.count(t_[name].text))
          continue;
        bool names_class = false;
        for (std::size_t k = a; k < b; ++k) names_class = names_class || aliases_.count(t_[k].text) || t_[k].is("*");
        if (names_class && alias_without_space(a, b)) {
          read_alias(name, true);
          more = true;
        }
      }
    }
  }
};

}  // namespace

void check_pointer_spaces(const std::vector<Token>& t, const std::string& source) { PointerSpaces(t, source).run(); }

}  // namespace metalcall::msl
