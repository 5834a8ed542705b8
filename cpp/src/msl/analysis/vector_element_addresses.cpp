// Addresses of vector components (see vector_element_addresses.hpp). Token by token: a name's
// type is read from its declarations in the function (parameters and locals; a name declared
// twice with different types there is unknown) and from the source's struct members and aliases.
#include "msl/analysis/vector_element_addresses.hpp"

#include <map>
#include <regex>
#include <set>

#include "msl/analysis/call_graph.hpp"
#include "msl/analysis/implementation_rules.hpp"
#include "msl/analysis/keyword_names.hpp"
#include "msl/errors/source_errors.hpp"

namespace metalcall::msl {

namespace {

// What a declaration or an expression is, as far as this rule cares.
struct Shape {
  enum Kind { unknown, other, vector, matrix, klass } kind = unknown;
  std::string class_name;  // the struct's name, for klass
  int indirections = 0;  // array dimensions and pointers that `[]` (or `*`, `->`) take off
  bool pointer = false;  // the outermost indirection is a pointer (`->` applies)
  bool component = false;  // a vector's component (or swizzle): no object, no address
  bool operator==(const Shape& o) const {
    return kind == o.kind && class_name == o.class_name && indirections == o.indirections && pointer == o.pointer;
  }
};

bool is_vector_word(const std::string& w) {
  static const std::regex re("(packed_)?(bool|char|uchar|short|ushort|int|uint|long|ulong|half|float|bfloat)[234]");
  return std::regex_match(w, re);
}

bool is_matrix_word(const std::string& w) {
  static const std::regex re("(half|float|bfloat)[234]x[234]");
  return std::regex_match(w, re);
}

bool is_swizzle(const std::string& m) {
  if (m.empty() || m.size() > 4) return false;
  const bool xyzw = m.find_first_not_of("xyzw") == std::string::npos;
  const bool rgba = m.find_first_not_of("rgba") == std::string::npos;
  return xyzw || rgba;
}

class VectorElementAddresses {
 public:
  VectorElementAddresses(const std::vector<Token>& t, const std::string& source) : t_(t), src_(source) {}

  void run() {
    read_aliases();
    for (const ClassBody& c : class_bodies(t_))
      if (!c.name.empty() && c.close < t_.size()) classes_.insert(c.name);
    for (const ClassBody& c : class_bodies(t_))
      if (!c.name.empty() && c.close < t_.size()) read_members(c);
    const DeclaredNames names = declared_names(t_);
    for (const FunctionDefinition& f : names.definitions) {
      vars_.clear();
      std::size_t open = f.name_token + 1;
      if (open < t_.size() && t_[open].is("<")) open = angle_close(open) + 1;
      if (open < t_.size() && t_[open].is("(") && matching(t_, open) < f.body_open) read_list(open, matching(t_, open));
      walk_body(f.body_open, f.body_close);
    }
  }

 private:
  const std::vector<Token>& t_;
  const std::string& src_;
  std::map<std::string, Shape> aliases_;
  std::set<std::string> classes_;
  std::map<std::string, std::map<std::string, Shape>> members_;  // class → member → shape
  std::map<std::string, Shape> vars_;

  std::size_t angle_close(std::size_t open) const { return angle_closing(t_, open); }

  // The shape of the type spelled by [a, b) (qualifiers, one base name, `*`s, a trailing `&`);
  // `reference` says whether it ends in `&`, `constant` whether its object is const.
  Shape type_shape(std::size_t a, std::size_t b, bool* reference = nullptr, bool* is_const = nullptr) const {
    static const auto& ignored = *new std::set<std::string>{"const", "volatile", "static", "constexpr", "inline",
                                                             "metal", "typename", "struct", "class", "restrict",
                                                             "__restrict", "__restrict__"};
    Shape s;
    std::string base;
    bool base_seen = false, template_base = false;
    if (reference) *reference = false;
    if (is_const) *is_const = false;
    for (std::size_t j = a; j < b; ++j) {
      const Token& x = t_[j];
      if (x.is("::")) continue;
      if (x.is("*")) {
        ++s.indirections;
        s.pointer = true;
        continue;
      }
      if (x.is("&")) {
        if (reference) *reference = true;
        continue;
      }
      if (x.is("<") && base_seen) {  // `vec<float, 4>`, `matrix<half, 2, 2>`
        j = angle_close(j);
        template_base = true;
        continue;
      }
      if (x.kind != TokenKind::identifier) return Shape{};
      if (x.text == "const" && is_const && s.indirections == 0) *is_const = true;
      if (x.text == "auto" && !base_seen) {  // `auto& r = v.x`: a reference all the same
        base_seen = true;
        continue;
      }
      if (ignored.count(x.text) || is_msl_keyword(x.text)) continue;
      if (base_seen) {
        // `unsigned int`, `long long`: words of one scalar type; anything else is not a type we know.
        if (s.kind == Shape::other) continue;
        return Shape{};
      }
      base = x.text;
      base_seen = true;
      if (x.text == "vec" || x.text == "packed_vec") s.kind = Shape::vector;
      else if (x.text == "matrix") s.kind = Shape::matrix;
      else if (is_vector_word(x.text)) s.kind = Shape::vector;
      else if (is_matrix_word(x.text)) s.kind = Shape::matrix;
      else if (classes_.count(x.text)) s.kind = Shape::klass, s.class_name = x.text;
      else if (const auto al = aliases_.find(x.text); al != aliases_.end()) {
        const int ind = s.indirections;
        s = al->second;
        s.indirections += ind;
      } else if (is_keyword(x.text) && x.text != "auto") s.kind = Shape::other;  // int, float, bool, ...
      else if (x.text == "uint" || x.text == "ushort" || x.text == "uchar" || x.text == "ulong" || x.text == "half" ||
               x.text == "bfloat" || x.text == "size_t")
        s.kind = Shape::other;
      else return Shape{};
    }
    if (template_base && !(base == "vec" || base == "packed_vec" || base == "matrix")) return Shape{};
    return base_seen ? s : Shape{};
  }

  // `typedef float4 F;`, `using V = vec<half, 2>;`
  void read_aliases() {
    for (std::size_t i = 0; i + 2 < t_.size(); ++i) {
      std::size_t a = 0, b = 0, name = 0;
      if (t_[i].is_identifier("typedef")) {
        std::size_t end = i + 1;
        while (end < t_.size() && !t_[end].is(";") && !t_[end].is("(") && !t_[end].is("[") && !t_[end].is("{")) ++end;
        if (end >= t_.size() || !t_[end].is(";") || t_[end - 1].kind != TokenKind::identifier) continue;
        a = i + 1, b = end - 1, name = end - 1;
      } else if (t_[i].is_identifier("using") && t_[i + 1].kind == TokenKind::identifier && t_[i + 2].is("=")) {
        std::size_t end = i + 3;
        while (end < t_.size() && !t_[end].is(";")) ++end;
        a = i + 3, b = end, name = i + 1;
      } else {
        continue;
      }
      Shape s = type_shape(a, b);
      const auto it = aliases_.find(t_[name].text);
      if (it != aliases_.end() && !(it->second == s)) s = Shape{};  // two aliases of one name: unknown
      aliases_[t_[name].text] = s;
    }
  }

  void record(std::map<std::string, Shape>& into, const std::string& name, const Shape& s) {
    const auto it = into.find(name);
    if (it == into.end()) into[name] = s;
    else if (!(it->second == s)) it->second = Shape{};  // declared twice, differently: unknown
  }

  // A declaration [a, b) (`float4 v = …`, `thread float& r = v.x`, `device half4* p`, `float4 a[3]`,
  // `float4 u, *w;`): records each name's shape; checks a reference's binding. Returns false when
  // [a, b) declares nothing this rule reads.
  bool declaration(std::size_t a, std::size_t b, std::map<std::string, Shape>& into, bool check_bindings) {
    static const auto& statements = *new std::set<std::string>{"return", "case", "goto", "delete", "throw", "else", "do",
                                                               "typedef", "using", "namespace", "break", "continue",
                                                               "static_assert", "template", "friend", "operator", "if",
                                                               "while", "for", "switch", "sizeof"};
    if (a >= b || t_[a].kind != TokenKind::identifier || statements.count(t_[a].text)) return false;
    std::size_t stop = a;
    int angles = 0;
    while (stop < b) {
      const Token& x = t_[stop];
      if (x.is("<")) ++angles;
      else if (x.is(">") && angles > 0) --angles;
      else if (x.is(">>") && angles > 0) angles = angles > 1 ? angles - 2 : 0;
      else if (angles == 0 && (x.is("=") || x.is("{") || x.is("(") || (x.is("[")) || x.is(",") || x.is(":") || x.is(";")))
        break;
      ++stop;
    }
    if (stop < a + 2) return false;
    const std::size_t name = stop - 1;
    if (t_[name].kind != TokenKind::identifier || is_keyword(t_[name].text)) return false;
    std::size_t type_end = name;  // `float4 *p`: the declarator's `*`s are the type's too
    bool reference = false, is_const = false;
    const Shape base = type_shape(a, type_end, &reference, &is_const);
    Shape s = base;
    std::size_t j = stop;
    while (j < b && t_[j].is("[") && !(j + 1 < b && t_[j + 1].is("["))) {  // an array's dimensions
      ++s.indirections;
      s.pointer = false;
      j = matching(t_, j) + 1;
    }
    record(into, t_[name].text, s);
    if (check_bindings && reference && !is_const && base.indirections == 0 && j < b && t_[j].is("=")) {
      const std::size_t end = declarator_end(j + 1, b);
      std::size_t after = 0;
      const Shape bound = postfix_shape(j + 1, end, &after);
      if (bound.component && after == end)
        throw rule_error(src_, t_[name],
                         "'" + t_[name].text + "' is a non-const reference bound to a vector's component: a component "
                         "is no object in MSL (clang: \"non-const reference cannot bind to vector element\"); copy "
                         "it, or bind a const reference",
                         "no addresses of vector components");
    }
    // `float4 u = …, *w, z[2];`: more declarators of the base type (pointers and references their own).
    while (j < b) {
      j = declarator_end(j, b);
      if (j >= b || !t_[j].is(",")) break;
      std::size_t k = j + 1;
      Shape more = base;
      while (k < b && (t_[k].is("*") || t_[k].is("&") || t_[k].is_identifier("const"))) {
        if (t_[k].is("*")) ++more.indirections, more.pointer = true;
        ++k;
      }
      if (k >= b || t_[k].kind != TokenKind::identifier) break;
      const std::size_t n = k++;
      while (k < b && t_[k].is("[")) {
        ++more.indirections;
        more.pointer = false;
        k = matching(t_, k) + 1;
      }
      record(into, t_[n].text, more);
      j = k;
    }
    return true;
  }

  // The `,` or `;` (or b) that ends the declarator whose tokens start at j.
  std::size_t declarator_end(std::size_t j, std::size_t b) const {
    for (; j < b; ++j) {
      if (t_[j].is("(") || t_[j].is("[") || t_[j].is("{")) j = matching(t_, j);
      else if (t_[j].is(",") || t_[j].is(";")) return j;
    }
    return b;
  }

  // The end of the argument or parameter whose tokens start at j: the `,` or `;` after it, or the
  // bracket that closes its list (or b).
  std::size_t argument_end(std::size_t j, std::size_t b) const {
    for (; j < b; ++j) {
      if (t_[j].is("(") || t_[j].is("[") || t_[j].is("{")) j = matching(t_, j);
      else if (t_[j].is(",") || t_[j].is(";") || t_[j].is(")") || t_[j].is("]") || t_[j].is("}")) return j;
    }
    return b;
  }

  // A parameter list `( … )`, each parameter's attributes (`[[buffer(0)]]`) left out.
  void read_list(std::size_t open, std::size_t close) {
    std::size_t start = open + 1;
    for (std::size_t j = open + 1; j <= close && j < t_.size(); ++j) {
      if (j < close && (t_[j].is("(") || t_[j].is("{") || (t_[j].is("[") && !(j + 1 < close && t_[j + 1].is("["))))) {
        j = matching(t_, j);
      } else if (j < close && t_[j].is("[") && t_[j + 1].is("[")) {
        std::size_t end = matching(t_, j);
        if (start < j) parameter(start, j);
        start = std::string::npos;
        j = end;
      } else if (j < close && t_[j].is("<")) {
        j = angle_close(j);
      } else if (j == close || t_[j].is(",")) {
        if (start != std::string::npos && start < j) parameter(start, j);
        start = j + 1;
      }
    }
  }

  void parameter(std::size_t a, std::size_t b) {
    std::size_t end = b;
    for (std::size_t k = a; k < b; ++k)
      if (t_[k].is("=")) end = k;  // a default argument
    declaration(a, end, vars_, false);
  }

  void read_members(const ClassBody& c) {
    auto& members = members_[c.name];
    std::size_t start = c.open + 1;
    for (std::size_t j = c.open + 1; j < c.close; ++j) {
      if (t_[j].is("{") || t_[j].is("(") || t_[j].is("[")) {
        const bool body = t_[j].is("{");
        j = matching(t_, j);
        if (body) start = j + 1;  // a member function's body (or a nested class's)
      } else if (t_[j].is(";")) {
        bool function = false;
        for (std::size_t k = start; k < j && !t_[k].is("="); ++k) function = function || t_[k].is("(");
        if (!function) declaration(start, j + 1, members, false);
        start = j + 1;
      } else if (t_[j].is(":") && j > start && (t_[j - 1].is_identifier("public") || t_[j - 1].is_identifier("private") ||
                                                 t_[j - 1].is_identifier("protected"))) {
        start = j + 1;
      }
    }
  }

  // The shape of the postfix expression at [a, b): a name, `(…)`, `*p`, then `[i]`, `.m`, `->m`.
  // `*after` is the token after what was read.
  Shape postfix_shape(std::size_t a, std::size_t b, std::size_t* after) const {
    *after = a;
    if (a >= b) return Shape{};
    Shape s;
    std::size_t j = a;
    if (t_[j].is("(")) {
      const std::size_t c = matching(t_, j);
      if (c >= b) return Shape{};
      std::size_t inner_end = 0;
      s = postfix_shape(j + 1, c, &inner_end);
      if (inner_end != c) s = Shape{};
      j = c + 1;
    } else if (t_[j].is("*")) {
      std::size_t inner_end = 0;
      s = postfix_shape(j + 1, b, &inner_end);
      *after = inner_end;
      if (s.component || s.indirections == 0) return Shape{};
      --s.indirections;
      s.pointer = false;
      return s;
    } else if (t_[j].kind == TokenKind::identifier && !is_keyword(t_[j].text)) {
      if (j + 1 < b && t_[j + 1].is("::")) return Shape{};
      const auto v = vars_.find(t_[j].text);
      if (v != vars_.end()) s = v->second;
      ++j;
    } else {
      return Shape{};
    }
    while (j < b) {
      if (t_[j].is("[")) {
        const std::size_t c = matching(t_, j);
        if (c >= b) break;
        if (s.indirections > 0) --s.indirections, s.pointer = false;
        else if (s.kind == Shape::vector) s.component = true;
        else if (s.kind == Shape::matrix) s.kind = Shape::vector;
        else s = Shape{};
        j = c + 1;
      } else if ((t_[j].is(".") || t_[j].is("->")) && j + 1 < b && t_[j + 1].kind == TokenKind::identifier) {
        if (t_[j].is("->")) {
          if (s.indirections != 1 || !s.pointer) s = Shape{};
          else --s.indirections, s.pointer = false;
        } else if (s.indirections != 0) {
          s = Shape{};
        }
        const std::string& m = t_[j + 1].text;
        if (s.kind == Shape::vector && is_swizzle(m)) {
          s.component = true;
        } else if (s.kind == Shape::klass && !s.component) {
          const auto c = members_.find(s.class_name);
          const auto mm = c == members_.end() ? std::map<std::string, Shape>::const_iterator{} : c->second.find(m);
          s = c != members_.end() && mm != c->second.end() ? mm->second : Shape{};
        } else {
          s = Shape{};
        }
        j += 2;
      } else {
        break;
      }
    }
    *after = j;
    return s;
  }

  // Whether the `&` at i is unary (an address), not a binary and or a reference declarator.
  bool unary_ampersand(std::size_t i) const {
    if (i == 0) return true;
    const Token& b = t_[i - 1];
    if (b.kind == TokenKind::identifier) return b.is_identifier("return") || b.is_identifier("case");
    if (b.kind == TokenKind::number || b.kind == TokenKind::string || b.kind == TokenKind::character) return false;
    if (b.is(")")) return i >= 2 && (t_[i - 2].is("*") || t_[i - 2].is("&"));  // a cast: `(thread float*)&v.y`
    return !(b.is("]") || b.is(">") || b.is("++") || b.is("--"));
  }

  // Whether tokens from i may declare a name: a word, then not at once what ends a declaration's
  // type (`x,`, `f(`, `a[`, `v =`, `p)`): the quick test that keeps long argument lists linear.
  bool may_declare(std::size_t i, std::size_t close) const {
    if (t_[i].kind != TokenKind::identifier || i + 1 >= close) return false;
    const Token& n = t_[i + 1];
    return !(n.is(",") || n.is("(") || n.is("[") || n.is("=") || n.is(")") || n.is("]") || n.is("}") || n.is(";") ||
             n.is("{") || n.is(":") || n.is("."));
  }

  void walk_body(std::size_t open, std::size_t close) {
    for (std::size_t i = open + 1; i < close && i < t_.size(); ++i) {
      const Token& before = t_[i - 1];
      if (before.is(";") || before.is("{") || before.is("}")) {  // a statement: read whole
        std::size_t end = i;
        int depth = 0;
        for (; end < close; ++end) {
          const Token& x = t_[end];
          if (x.is("(") || x.is("[") || x.is("{")) ++depth;
          else if (x.is(")") || x.is("]") || x.is("}")) {
            if (--depth < 0) break;
          } else if (depth == 0 && x.is(";")) break;
        }
        declaration(i, end, vars_, true);
      } else if ((before.is("(") || before.is(",")) && may_declare(i, close)) {
        // After `(` or `,` (a lambda's or a for's parameter, a call's argument): up to the next
        // `,`, `;` or the closing bracket. Read only where a declaration may start, so that a
        // statement of n arguments costs n steps, not n² (60,000 commas took minutes before
        // 2026-12-06: the whole statement was scanned again after each one).
        declaration(i, argument_end(i, close), vars_, true);
      }
      if (t_[i].is("&") && unary_ampersand(i)) {
        std::size_t after = 0;
        const Shape s = postfix_shape(i + 1, close, &after);
        if (s.component)
          throw rule_error(src_, t_[i],
                           "the address of a vector's component ('&" + spelled(i + 1, after) +
                               "'): a component is no object in MSL (clang: \"address of vector element requested\"); "
                               "copy it to a variable, or take the vector's address",
                           "no addresses of vector components");
      }
    }
  }

  std::string spelled(std::size_t a, std::size_t b) const {
    std::string s;
    for (std::size_t k = a; k < b && k < t_.size(); ++k) s += t_[k].text;
    return s;
  }
};

}  // namespace

void check_vector_element_addresses(const std::vector<Token>& t, const std::string& source) {
  VectorElementAddresses(t, source).run();
}

}  // namespace metalcall::msl
