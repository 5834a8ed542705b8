// The rule "no recursion" (see recursion.hpp).
#include "msl/analysis/recursion.hpp"

#include <algorithm>
#include <map>
#include <set>

#include "msl/analysis/constexpr_self_calls.hpp"
#include "msl/analysis/declaration_lists.hpp"
#include "msl/analysis/implementation_rules.hpp"
#include "msl/analysis/stdlib_names.hpp"
#include "msl/errors/source_errors.hpp"
#include "msl/parse/type_names.hpp"

namespace metalcall::msl {

namespace {

constexpr const char* kRule = "no recursion";

bool is_reserved(const std::string& id) {
  return id.size() > 1 && id[0] == '_' && (id[1] == '_' || (id[1] >= 'A' && id[1] <= 'Z'));
}

class RecursionChecker {
 public:
  RecursionChecker(const std::vector<Token>& t, const std::string& source, const DeclaredNames& names)
      : t_(t), src_(source), names_(names) {
    // The scopes (class or namespace names) that define each function name, for `X::f(…)`.
    std::vector<std::pair<std::string, std::pair<std::size_t, std::size_t>>> scopes;  // name, braces
    class_bodies_ = class_bodies(t_);
    for (const ClassBody& c : class_bodies_)
      if (!c.name.empty()) scopes.push_back({c.name, {c.open, c.close}});
    for (std::size_t i = 0; i + 2 < t_.size(); ++i)
      if (t_[i].is_identifier("namespace") && t_[i + 1].kind == TokenKind::identifier && t_[i + 2].is("{"))
        scopes.push_back({t_[i + 1].text, {i + 2, matching(t_, i + 2)}});
    scopes_ = scopes;
    for (const auto& f : names_.definitions) {
      ++definitions_by_name_[f.name];
      for (const auto& [scope, braces] : scopes)
        if (braces.first < f.name_token && f.name_token < braces.second) defining_scopes_[f.name].insert(scope);
      // `R::f(…) {` out of its class: R defines f too.
      if (f.name_token >= 2 && t_[f.name_token - 1].is("::") && t_[f.name_token - 2].kind == TokenKind::identifier)
        defining_scopes_[f.name].insert(t_[f.name_token - 2].text);
    }
    // `using G = R;` and `typedef R G;` (R a class, perhaps `R<…>`): G names R's scope.
    for (std::size_t i = 0; i + 4 < t_.size(); ++i) {
      if (t_[i].is_identifier("using") && t_[i + 1].kind == TokenKind::identifier && t_[i + 2].is("=") &&
          t_[i + 3].kind == TokenKind::identifier && (t_[i + 4].is(";") || t_[i + 4].is("<")))
        aliases_[t_[i + 1].text] = t_[i + 3].text;
      // `namespace M = N;`, `namespace M = A::N;`: M names N's scope.
      if (t_[i].is_identifier("namespace") && t_[i + 1].kind == TokenKind::identifier && t_[i + 2].is("=")) {
        std::size_t k = i + 3;
        while (k + 1 < t_.size() && (t_[k].kind == TokenKind::identifier || t_[k].is("::")) && !t_[k + 1].is(";")) ++k;
        if (k + 1 < t_.size() && t_[k].kind == TokenKind::identifier && t_[k + 1].is(";")) aliases_[t_[i + 1].text] = t_[k].text;
      }
      if (t_[i].is_identifier("typedef") && t_[i + 1].kind == TokenKind::identifier) {
        std::size_t k = i + 2;
        if (k < t_.size() && t_[k].is("<")) {
          const std::size_t close = angle_close(k);
          if (close == std::string::npos) continue;
          k = close + 1;
        }
        if (k + 1 < t_.size() && t_[k].kind == TokenKind::identifier && t_[k + 1].is(";"))
          aliases_[t_[k].text] = t_[i + 1].text;
      }
    }
    enclosing_.assign(t_.size(), nullptr);
    for (const auto& f : names_.definitions)
      for (std::size_t k = f.body_open; k <= f.body_close && k < t_.size(); ++k)
        if (!enclosing_[k]) enclosing_[k] = &f;
    read_function_objects();
  }

  void run() {
    check_function_objects();
    check_self_applied_lambdas();
    // The call graph among the source's functions, one node per definition, every call site kept
    // for the message. A node's scope is the class or namespace that defines it (`R` for `R::f`
    // out of its class); a call reaches the definitions of its name in the scope the tokens show
    // (`X::f(`, `obj.f(` of a class the tokens show, `this->f(`, an unqualified `f(` in a scope
    // that defines an f), else every definition of the name. Before 2026-12-05 nodes were names:
    // `A::f` calling `h` calling `B::f` was refused as recursion through f.
    std::vector<const FunctionDefinition*> all;
    for (const auto& f : names_.definitions) all.push_back(&f);
    for (const auto& f : function_objects_) all.push_back(&f);
    std::vector<std::string> scope(all.size());
    std::map<std::pair<std::string, std::string>, int> per_scope;  // (name, scope) → definitions
    for (std::size_t d = 0; d < all.size(); ++d) {
      scope[d] = scope_of_definition(*all[d]);
      ++per_scope[{all[d]->name, scope[d]}];
    }
    std::vector<std::vector<std::pair<std::size_t, std::size_t>>> edges(all.size());  // → (callee, token)
    for (std::size_t d = 0; d < all.size(); ++d) {
      const FunctionDefinition& f = *all[d];
      if (f.is_constexpr) continue;  // evaluated by the compiler (a static_assert's fib(10)), not at run time
      // Its own template parameters, and those of the class template it is defined in (`h<T>(`
      // in a member of `template <class T> struct G` calls the same instantiation).
      std::vector<std::string> own = template_parameters(t_, f.name_token);
      for (const ClassBody& c : class_bodies_)
        if (c.open < f.name_token && f.name_token < c.close && !c.name.empty())
          for (const std::string& p : class_template_parameters(c.name)) own.push_back(p);
      auto add = [&](const std::string& name, const std::string* in, std::size_t k) {
        for (std::size_t e = 0; e < all.size(); ++e) {
          if (all[e]->name != name || (in && scope[e] != *in)) continue;
          // Overloads (a name defined more than once in one scope) may call each other.
          if (name == f.name && scope[e] == scope[d] && per_scope[{name, scope[d]}] > 1) continue;
          edges[d].emplace_back(e, k);
        }
      };
      for (std::size_t k = f.body_open + 1; k < f.body_close && k < t_.size(); ++k) {
        if (enclosing_[k] != &f) continue;
        if (calls_function(k, own) && takes_arguments_of(k) && !peels_its_pack(f, k) && !deduces_a_part(f, k) &&
            !deduces_in_a_constexpr_branch(t_, f.name_token, f.body_open, f.body_close, k,
                                           template_parameters(t_, f.name_token))) {
          bool known = false;
          const std::string in = call_scope(k, scope[d], &known);
          add(t_[k].text, known ? &in : nullptr, k);
        }
        const std::string object = function_object_called(k, f);
        if (!object.empty()) add(object, nullptr, k);
      }
    }
    auto reaches = [&](std::size_t from, std::size_t target) {
      std::vector<bool> seen(all.size());
      std::vector<std::size_t> stack = {from};
      while (!stack.empty()) {
        const std::size_t n = stack.back();
        stack.pop_back();
        if (seen[n]) continue;
        seen[n] = true;
        for (const auto& [callee, at] : edges[n]) {
          (void)at;
          if (callee == target) return true;
          stack.push_back(callee);
        }
      }
      return false;
    };
    for (std::size_t d = 0; d < all.size(); ++d) {
      for (const auto& [callee, at] : edges[d]) {
        const bool self = callee == d;
        if (self || reaches(callee, d))
          throw rule_error(src_, t_[at],
                           "function '" + all[d]->name + "' is recursive" +
                               (self ? std::string() : " (through '" + all[callee]->name + "')") +
                               ": MSL does not support recursive function calls",
                           kRule);
      }
    }
  }

 private:
  const std::vector<Token>& t_;
  const std::string& src_;
  const DeclaredNames& names_;
  std::map<std::string, std::set<std::string>> defining_scopes_;  // function name → classes, namespaces
  std::map<std::string, int> definitions_by_name_;
  std::vector<std::pair<std::string, std::pair<std::size_t, std::size_t>>> scopes_;  // name, braces

  // The class or namespace whose braces hold f's name (the innermost), or its qualifier out of
  // its class (`R` of `float R::f() {`); "" at namespace scope.
  std::string scope_of_definition(const FunctionDefinition& f) const {
    const std::size_t n = f.name_token;
    if (f.name.size() > 12 && f.name.compare(f.name.size() - 12, 12, "::operator()") == 0)
      return f.name.substr(0, f.name.size() - 12);
    if (n >= 2 && t_[n - 1].is("::") && t_[n - 2].kind == TokenKind::identifier) return resolved(t_[n - 2].text);
    if (n >= 2 && t_[n - 1].is("::") && t_[n - 2].is(">")) {
      const std::size_t o = opening_of(n - 2);
      if (o != std::string::npos && o > 0 && t_[o - 1].kind == TokenKind::identifier) return resolved(t_[o - 1].text);
    }
    std::string inner;
    std::size_t open = 0;
    for (const auto& [name, braces] : scopes_)
      if (braces.first < n && n < braces.second && braces.first >= open) inner = name, open = braces.first;
    return resolved(inner);
  }

  // The scope a call at k names (`X::f(`: X; `::f(`: ""; `obj.f(`: obj's class; `this->f(`: the
  // caller's; an unqualified `f(` in a caller whose scope defines an f: that scope), and whether
  // the tokens show one.
  std::string call_scope(std::size_t k, const std::string& caller, bool* known) const {
    *known = true;
    const std::size_t at = k >= 2 && t_[k - 1].is_identifier("template") ? k - 1 : k;
    const Token* b = at > 0 ? &t_[at - 1] : nullptr;
    if (b && b->is("::")) {
      if (at < 2 || (t_[at - 2].kind != TokenKind::identifier && !t_[at - 2].is(">"))) return "";
      const std::string x = type_ending_at(at - 2);
      *known = !x.empty();
      return x;
    }
    if (b && (b->is(".") || b->is("->"))) {
      if ((b->is("->") && at >= 2 && t_[at - 2].is_identifier("this")) ||
          (b->is(".") && at >= 5 && t_[at - 2].is(")") && t_[at - 3].is_identifier("this") && t_[at - 4].is("*") &&
           t_[at - 5].is("(")))
        return caller;
      const FunctionDefinition* f = enclosing_[k];
      const std::string type = at >= 2 ? class_of_object(at - 2, f ? f->name_token : 0) : "";
      *known = !type.empty();
      return type;
    }
    if (!caller.empty() && scope_defines(caller, t_[k].text)) return caller;
    *known = false;
    return "";
  }
  std::vector<const FunctionDefinition*> enclosing_;
  std::map<std::string, std::string> aliases_;  // G → R for `using G = R;`, `typedef R G;`
  std::vector<ClassBody> class_bodies_;
  // Each class's `operator()` with a body, as a node of the call graph named `C::operator()`:
  // a cycle through it (`operator()` calling `g`, `g` calling `C{}(…)`) is recursion too
  // (accepted before 2026-12-05: only an operator() calling itself was seen).
  std::vector<FunctionDefinition> function_objects_;

  void read_function_objects() {
    for (const ClassBody& c : class_bodies_) {
      if (c.name.empty()) continue;
      for (std::size_t k = c.open + 1; k + 4 < c.close; ++k) {
        if (t_[k].is("{")) {  // a member's body: not the class's own operator()
          k = matching(t_, k);
          continue;
        }
        if (!(t_[k].is_identifier("operator") && t_[k + 1].is("(") && t_[k + 2].is(")") && t_[k + 3].is("("))) continue;
        std::size_t open = matching(t_, k + 3) + 1;
        while (open < c.close && !t_[open].is("{") && !t_[open].is(";")) open = t_[open].is("(") ? matching(t_, open) + 1 : open + 1;
        if (open >= c.close || !t_[open].is("{")) continue;
        function_objects_.push_back({resolved(c.name) + "::operator()", k, open, matching(t_, open), false});
        ++definitions_by_name_[function_objects_.back().name];  // two classes of one name: as overloads
        k = function_objects_.back().body_close;
      }
    }
    for (const FunctionDefinition& f : function_objects_)  // its body is its own, not an enclosing function's
      for (std::size_t k = f.body_open; k <= f.body_close && k < t_.size(); ++k) enclosing_[k] = &f;
  }

  // The node `C::operator()` of the function object called at k (in f's body), or "": a temporary
  // `C{…}(…)`, `C(…)(…)`, `C<T>{…}(…)`, or an object whose class the tokens show (`C c; c(…)`),
  // called directly or through `.operator()(…)`.
  std::string function_object_called(std::size_t k, const FunctionDefinition& f) const {
    if (function_objects_.empty() || k == 0 || k + 1 >= t_.size()) return "";
    std::size_t call = k + 1;
    if ((t_[call].is(".") || t_[call].is("->")) && call + 4 < t_.size() && t_[call + 1].is_identifier("operator") &&
        t_[call + 2].is("(") && t_[call + 3].is(")"))
      call += 4;
    if (!t_[call].is("(")) return "";
    std::string type;
    if (t_[k].is(")") || t_[k].is("}")) {
      const std::size_t o = opening_of(k);
      if (o == std::string::npos || o == 0) return "";
      type = type_ending_at(o - 1);
    } else if (t_[k].kind == TokenKind::identifier && !t_[k - 1].is(".") && !t_[k - 1].is("->") && !t_[k - 1].is("::")) {
      if (names_type(t_[k].text)) return "";  // `C(…)`: a constructor
      type = class_of_object(k, f.name_token);
    }
    if (type.empty()) return "";
    const std::string node = type + "::operator()";
    for (const FunctionDefinition& g : function_objects_)
      if (g.name == node) return node;
    return "";
  }

  std::string resolved(const std::string& name) const {
    std::string n = name;
    for (int hops = 0; hops < 8; ++hops) {  // alias chains, never a cycle's loop
      const auto a = aliases_.find(n);
      if (a == aliases_.end()) break;
      n = a->second;
    }
    return n;
  }

  bool scope_defines(const std::string& scope, const std::string& function) const {
    const auto scopes = defining_scopes_.find(function);
    return scopes != defining_scopes_.end() && scopes->second.count(resolved(scope));
  }

  // The index of the bracket opening the one that closes at `close` (`)` `}` `]` `>`), or npos.
  std::size_t opening_of(std::size_t close) const {
    const std::string closer = t_[close].text;
    const std::string opener = closer == ")" ? "(" : closer == "}" ? "{" : closer == "]" ? "[" : "<";
    int depth = 0;
    for (std::size_t k = close + 1; k-- > 0;) {
      if (t_[k].is(closer.c_str())) ++depth;
      else if (t_[k].is(opener.c_str()) && --depth == 0) return k;
      if (close - k > 4096) break;
    }
    return std::string::npos;
  }

  // The template parameters of the class template `name` (`template <class T, int N> struct name`).
  std::vector<std::string> class_template_parameters(const std::string& name) const {
    for (const ClassBody& c : class_bodies_) {
      if (c.name != name) continue;
      for (std::size_t k = c.open; k-- > 0 && c.open - k < 64;)
        if (t_[k].is_identifier(name.c_str())) return template_parameters(t_, k);
    }
    return {};
  }

  // The class named by the type that ends at `last` (`R`, `R<…>`, `ns::R`), or "". `R<A…>` is R
  // only with R's own template parameters as its arguments (R<T> inside R): another
  // instantiation (`Sum<N - 1>`) is another class, whose recursion the compiler bounds.
  std::string type_ending_at(std::size_t last) const {
    if (t_[last].is(">")) {
      const std::size_t open = opening_of(last);
      if (open == std::string::npos || open == 0 || t_[open - 1].kind != TokenKind::identifier) return "";
      for (std::size_t j = open + 1; j < last; ++j)
        if (!(t_[j].kind == TokenKind::identifier || t_[j].is(","))) return "";
      const std::string name = resolved(t_[open - 1].text);
      const std::vector<std::string> own = class_template_parameters(name);
      if (own.empty() || piece_names(t_, open + 1, last) != own) return "";
      return name;
    }
    return t_[last].kind == TokenKind::identifier && !is_keyword(t_[last].text) ? resolved(t_[last].text) : "";
  }

  // The class of the object whose expression ends at `end`: a temporary `R(…)`, `R{…}`,
  // `R<…>{…}`, or a variable (or parameter) the enclosing function declares as `R r`, `R& r`,
  // `const R* r`, …; "" when the tokens do not show it.
  std::string class_of_object(std::size_t end, std::size_t from) const {
    if (t_[end].is(")") || t_[end].is("}")) {
      const std::size_t open = opening_of(end);
      return open == std::string::npos || open == 0 ? "" : type_ending_at(open - 1);
    }
    if (t_[end].kind != TokenKind::identifier) return "";
    const std::string& name = t_[end].text;
    for (std::size_t d = end; d-- > from;) {
      if (!t_[d].is_identifier(name.c_str()) || d + 1 >= t_.size()) continue;
      const Token& after = t_[d + 1];
      if (!(after.is(";") || after.is("=") || after.is("{") || after.is("(") || after.is(",") || after.is(")")))
        continue;
      std::size_t k = d;
      while (k > from && (t_[k - 1].is("&") || t_[k - 1].is("&&") || t_[k - 1].is("*") ||
                          t_[k - 1].is_identifier("const") || t_[k - 1].is_identifier("thread") ||
                          t_[k - 1].is_identifier("device") || t_[k - 1].is_identifier("constant") ||
                          t_[k - 1].is_identifier("threadgroup")))
        --k;
      if (k == d && !(k > from && (t_[k - 1].kind == TokenKind::identifier || t_[k - 1].is(">")))) continue;
      if (k > from) {
        const std::string type = type_ending_at(k - 1);
        if (!type.empty()) return type;
      }
    }
    return "";
  }

  // Whether the call at k of f's own name passes f's pack expanded (`r...`) and fewer other
  // arguments than f takes beside its pack (`T a, R... r` calling `f(r...)`): a variadic template
  // peeling its first argument, whose callee takes fewer arguments, so is another instantiation,
  // as `f<N - 1>()` is (a CompileError, "function 'f' is recursive", before 2026-12-05). A call
  // that passes as many (`f(a, r...)`) calls f itself and stays an edge.
  bool peels_its_pack(const FunctionDefinition& f, std::size_t k) const {
    if (t_[k].text != f.name) return false;
    std::size_t params = f.name_token + 1;
    if (params < t_.size() && t_[params].is("<")) {
      const std::size_t close = angle_close(params);
      if (close == std::string::npos) return false;
      params = close + 1;
    }
    std::size_t open = k + 1;
    if (open < t_.size() && t_[open].is("<")) return false;  // explicit arguments: read as written
    const ListShape own = list_shape(t_, params), passed = list_shape(t_, open);
    return own.variadic && passed.variadic && passed.pieces < own.pieces;
  }

  // Whether the call at k of f's own name, with no template arguments written, passes for a
  // parameter whose type names f's template parameters (`T v`, `vec<T, N> v`) a part of that
  // parameter: an element `v[i]`, or a member `v.m` (`v.a.b`) that is no swizzle of two or
  // more components. A part's type differs from the whole's, so it deduces another
  // instantiation, which the compiler bounds as it does `f<N - 1>()` (C++17's `if constexpr
  // (is_scalar_v<T>) return v; else return hsum(v[0]) + …`: refused as recursion before
  // 2026-12-05). Not a part: `v[i].next` or `v.kids[i]` (a pointer member may be of T's type
  // again), `v.xy` (a float2's own type), a member function's result.
  // (Only f's own template parameters are deduced: a class template's T is fixed in its members.)
  bool deduces_a_part(const FunctionDefinition& f, std::size_t k) const {
    const std::vector<std::string> own = template_parameters(t_, f.name_token);
    if (t_[k].text != f.name || own.empty() || k + 1 >= t_.size() || !t_[k + 1].is("(")) return false;
    if (k > 0 && (t_[k - 1].is("::") || t_[k - 1].is(".") || t_[k - 1].is("->"))) return false;
    std::size_t params = f.name_token + 1;
    if (params < t_.size() && t_[params].is("<")) return false;  // a specialisation's own arguments
    if (params >= t_.size() || !t_[params].is("(")) return false;
    // The parameters: for each, its name and whether its type names one of `own`.
    std::vector<std::pair<std::string, bool>> declared;
    {
      const std::size_t close = matching(t_, params);
      std::size_t piece = params + 1;
      int depth = 0;
      for (std::size_t j = params + 1; j <= close && j < t_.size(); ++j) {
        if (j < close && (t_[j].is("(") || t_[j].is("[") || t_[j].is("{") || t_[j].is("<"))) ++depth;
        else if (j < close && (t_[j].is(")") || t_[j].is("]") || t_[j].is("}") || t_[j].is(">"))) --depth;
        else if (j < close && t_[j].is(">>")) depth -= 2;
        if (j < close && !(depth == 0 && t_[j].is(","))) continue;
        std::string name;
        bool templated = false;
        std::size_t end = j;
        for (std::size_t m = piece; m < j; ++m)
          if (t_[m].is("=")) { end = m; break; }
        for (std::size_t m = piece; m < end; ++m) {
          if (t_[m].kind != TokenKind::identifier) continue;
          if (m + 1 == end) name = t_[m].text;
          else if (std::find(own.begin(), own.end(), t_[m].text) != own.end()) templated = true;
        }
        declared.emplace_back(name, templated);
        piece = j + 1;
      }
    }
    const std::size_t open = k + 1, close = matching(t_, open);
    std::size_t piece = open + 1, n = 0;
    int depth = 0;
    for (std::size_t j = open + 1; j <= close && j < t_.size(); ++j) {
      if (j < close && (t_[j].is("(") || t_[j].is("[") || t_[j].is("{"))) ++depth;
      else if (j < close && (t_[j].is(")") || t_[j].is("]") || t_[j].is("}"))) --depth;
      if (j < close && !(depth == 0 && t_[j].is(","))) continue;
      if (n < declared.size() && declared[n].second && piece + 1 < j && t_[piece].is_identifier(declared[n].first.c_str())) {
        if (t_[piece + 1].is("[") && matching(t_, piece + 1) + 1 == j) return true;
        std::size_t m = piece + 1;
        bool members = true;
        while (m < j && members) {
          members = t_[m].is(".") && m + 1 < j && t_[m + 1].kind == TokenKind::identifier && !is_swizzle(t_[m + 1].text);
          m += 2;
        }
        if (members && m == j) return true;
      }
      piece = j + 1;
      ++n;
    }
    return false;
  }

  // `xy`, `rgba`, `wzyx`: a swizzle of two or more components (a vector, perhaps of v's own type).
  static bool is_swizzle(const std::string& m) {
    if (m.size() < 2 || m.size() > 4) return false;
    const bool xyzw = m.find_first_not_of("xyzw") == std::string::npos;
    const bool rgba = m.find_first_not_of("rgba") == std::string::npos;
    return xyzw || rgba;
  }

  // Whether some definition of the name called at k takes as many arguments as the call
  // passes: a call that none can take calls another function of that name (TNN's
  // `kernel void abs(…4 parameters…)` calling metal's `abs(x)`).
  bool takes_arguments_of(std::size_t k) const {
    std::size_t open = k + 1;
    if (open < t_.size() && t_[open].is("<")) {
      const std::size_t close = angle_close(open);
      if (close == std::string::npos) return true;
      open = close + 1;
    }
    const std::size_t passed = list_shape(t_, open).pieces;
    for (const auto& f : names_.definitions) {
      if (f.name != t_[k].text) continue;
      std::size_t params = f.name_token + 1;
      if (params < t_.size() && t_[params].is("<")) {
        const std::size_t close = angle_close(params);
        if (close == std::string::npos) return true;
        params = close + 1;
      }
      if (params >= t_.size() || !t_[params].is("(")) return true;  // not read here: count it
      const ListShape shape = list_shape(t_, params);
      if (shape.variadic || (passed <= shape.pieces && passed + shape.defaulted >= shape.pieces)) return true;
    }
    return false;
  }

  [[noreturn]] void refuse(std::size_t i, const std::string& message) const {
    throw rule_error(src_, t_[i], message, kRule);
  }

  // The `>` closing the template arguments that open at k, or npos.
  std::size_t angle_close(std::size_t k) const {
    int angle = 0;
    for (std::size_t j = k; j < t_.size() && j < k + 64; ++j) {
      if (t_[j].is("<")) ++angle;
      else if (t_[j].is(">")) --angle;
      else if (t_[j].is(">>")) angle -= 2;
      else if (t_[j].is(";") || t_[j].is("{") || t_[j].is("}")) return std::string::npos;
      if (angle == 0) return j;
      if (angle < 0) return std::string::npos;
    }
    return std::string::npos;
  }

  // Whether the identifier at k calls a function of the source by its name: `f(`, `X::f(`
  // (X a class or namespace of the source that defines an f: not a template parameter,
  // which may be any class), `::f(`, `this->f(`, `(*this).f(`, or `f<A…>(`
  // whose arguments are the caller's own template parameters `own`.
  bool calls_function(std::size_t k, const std::vector<std::string>& own) const {
    const Token& x = t_[k];
    if (x.kind != TokenKind::identifier || !names_.functions.count(x.text) || is_keyword(x.text) || is_reserved(x.text) ||
        k + 1 >= t_.size())
      return false;
    if (t_[k + 1].is("<")) {
      const std::size_t close = angle_close(k + 1);
      if (close == std::string::npos || close + 1 >= t_.size() || !t_[close + 1].is("(") || own.empty()) return false;
      for (const std::string& n : piece_names(t_, k + 2, close))
        if (std::find(own.begin(), own.end(), n) == own.end()) return false;
      for (std::size_t j = k + 2; j < close; ++j)  // only the names themselves, not T* or N - 1
        if (!(t_[j].kind == TokenKind::identifier || t_[j].is(","))) return false;
    } else if (!t_[k + 1].is("(")) {
      return false;
    }
    // `X::template f<T>(`, `this->template f<T>(`: the qualifier before `template`.
    const std::size_t at = k >= 2 && t_[k - 1].is_identifier("template") ? k - 1 : k;
    if (at == 0) return true;
    const Token& b = t_[at - 1];
    if (b.is(".") || b.is("->")) {
      if (b.is("->") && at >= 2 && t_[at - 2].is_identifier("this")) return true;
      if (b.is(".") && at >= 5 && t_[at - 2].is(")") && t_[at - 3].is_identifier("this") && t_[at - 4].is("*") &&
          t_[at - 5].is("("))
        return true;
      // An object whose class the tokens show (`R().f(`, `R{}.f(`, `R r; r.f(`, `R* p; p->f(`),
      // and that class defines an f.
      if (at < 2) return false;
      const FunctionDefinition* f = enclosing_[k];
      const std::string type = class_of_object(at - 2, f ? f->name_token : 0);
      return !type.empty() && scope_defines(type, x.text);
    }
    if (b.is("::")) {  // `::f(`, or `X::f(` / `X<…>::f(` where X is a class or namespace that defines an f
      if (at < 2) return true;
      if (t_[at - 2].kind != TokenKind::identifier && !t_[at - 2].is(">")) return true;
      const std::string scope = type_ending_at(at - 2);
      return !scope.empty() && scope_defines(scope, x.text);
    }
    // An unqualified call of a name the Metal standard library has too may be the library's
    // overload, which only the argument types tell (SPIRV-Cross's `transpose(spvStorageMatrix m)`
    // returns `transpose(matrix<T, C, R>(m))`, MLX's `simd_shuffle_down(complex64_t, …)` returns the
    // library's shuffles of its parts): not counted as the function calling itself.
    if (at == k && prelude_functions().count(x.text)) return false;
    return at == k;  // `template f<T>(` with nothing before it is no call
  }

  // A function object that calls itself: in an `operator()` of class C, `(*this)(…)`,
  // `this->operator()(…)`, `operator()(…)`, `C(…)(…)` / `C{…}(…)`, or a variable of class C
  // called (`C r; r(…)`).
  void check_function_objects() const {
    for (const ClassBody& c : class_bodies_) {
      for (std::size_t k = c.open + 1; k + 4 < c.close; ++k) {
        if (!(t_[k].is_identifier("operator") && t_[k + 1].is("(") && t_[k + 2].is(")") && t_[k + 3].is("("))) continue;
        if (k > 0 && (t_[k - 1].is(".") || t_[k - 1].is("->"))) continue;
        std::size_t open = matching(t_, k + 3) + 1;  // past the parameters: qualifiers, then the body
        while (open < c.close && !t_[open].is("{") && !t_[open].is(";")) open = t_[open].is("(") ? matching(t_, open) + 1 : open + 1;
        if (open >= c.close || !t_[open].is("{")) continue;
        const std::size_t close = matching(t_, open);
        // Objects of its own class called (`R r; r(…)`, `R& s = *this; s(…)`, `R{}(…)`, `R<T>()(…)`,
        // `r.operator()(…)`): calls of itself, as are `(*this)(…)`, `this->operator()(…)`, `operator()(…)`.
        const std::string own = resolved(c.name);
        for (std::size_t j = open + 1; j + 4 < close; ++j) {
          const bool star_this = t_[j].is("(") && t_[j + 1].is("*") && t_[j + 2].is_identifier("this") &&
                                 t_[j + 3].is(")") && t_[j + 4].is("(");
          const bool named = t_[j].is_identifier("operator") && t_[j + 1].is("(") && t_[j + 2].is(")") &&
                             t_[j + 3].is("(") && (t_[j - 1].is("->") ? t_[j - 2].is_identifier("this") : !t_[j - 1].is("."));
          if (star_this || named)
            refuse(j, "the function object's operator() calls itself: MSL does not support recursive function calls");
          if (own.empty()) continue;
          // The object's expression ends at j: called directly, or through `.operator()`.
          std::size_t call = j + 1;
          if ((t_[call].is(".") || t_[call].is("->")) && t_[call + 1].is_identifier("operator") &&
              call + 4 < close && t_[call + 2].is("(") && t_[call + 3].is(")"))
            call += 4;
          if (!t_[call].is("(")) continue;
          const bool object_end = t_[j].kind == TokenKind::identifier || t_[j].is(")") || t_[j].is("}");
          if (!object_end || (t_[j].kind == TokenKind::identifier && (t_[j - 1].is(".") || t_[j - 1].is("->"))))
            continue;
          if (t_[j].is(")") && call == j + 1) {  // `R(…)(…)` is a temporary called; `f(…)(…)` is not ours to judge
            const std::size_t o = opening_of(j);
            if (o == std::string::npos || o == 0 || type_ending_at(o - 1) != own) continue;
          }
          if (t_[j].kind == TokenKind::identifier && t_[j].text == c.name) continue;  // `R(…)`: a constructor
          if ((t_[j].is(")") || t_[j].is("}")) && qualified_elsewhere(j, c)) continue;
          if (t_[j].kind == TokenKind::identifier && qualified_elsewhere_at(declared_type_at(j, open), c)) continue;
          if (class_of_object(j, open) == own)
            refuse(j, "the function object's operator() calls an object of its own class: MSL does not support "
                      "recursive function calls");
        }
        k = close;
      }
    }
  }

  // The last token of the type that declares the variable named at `use` in [from, use) (`F` of
  // `a::F f;`, `const thread F& g = …`), or 0 when none does.
  std::size_t declared_type_at(std::size_t use, std::size_t from) const {
    for (std::size_t d = use; d-- > from + 1;) {
      if (!t_[d].is_identifier(t_[use].text.c_str()) || d + 1 >= t_.size()) continue;
      const Token& after = t_[d + 1];
      if (!(after.is(";") || after.is("=") || after.is("{") || after.is("(") || after.is(",") || after.is(")"))) continue;
      std::size_t k = d;
      while (k > from + 1 && (t_[k - 1].is("&") || t_[k - 1].is("*") || t_[k - 1].is_identifier("const") ||
                              t_[k - 1].is_identifier("thread")))
        --k;
      if (t_[k - 1].kind == TokenKind::identifier && !is_keyword(t_[k - 1].text)) return k - 1;
    }
    return 0;
  }

  // Whether the temporary whose braces or parentheses close at `end` names its class through a
  // namespace that does not hold class c: `a::F{}(x)` in `namespace b { struct F { operator()… } }`
  // is another F (refused as F calling itself before 2026-12-05).
  bool qualified_elsewhere(std::size_t end, const ClassBody& c) const {
    const std::size_t o = opening_of(end);
    if (o == std::string::npos || o < 3) return false;
    std::size_t name = o - 1;
    if (t_[name].is(">")) {
      const std::size_t a = opening_of(name);
      if (a == std::string::npos || a < 3) return false;
      name = a - 1;
    }
    return qualified_elsewhere_at(name, c);
  }

  // Whether the class name at `name` is qualified by a namespace that does not hold class c.
  bool qualified_elsewhere_at(std::size_t name, const ClassBody& c) const {
    if (name < 2 || !t_[name - 1].is("::") || t_[name - 2].kind != TokenKind::identifier) return false;
    const std::string& q = t_[name - 2].text;
    if (resolved(q) == resolved(c.name)) return false;
    for (std::size_t i = 0; i + 2 < t_.size(); ++i)
      if (t_[i].is_identifier("namespace") && t_[i + 1].is_identifier(q.c_str()) && t_[i + 2].is("{") &&
          i + 2 < c.open && c.open < matching(t_, i + 2))
        return false;
    return true;
  }

  // A type of MSL, C++ or the source (struct, alias, template parameter): `uchar(p)` is a cast.
  bool names_type(const std::string& id) const {
    return is_keyword(id) || is_renamed_type(id) || names_.types.count(id) > 0;
  }

  // A lambda applied to itself: `[](auto self, int n) { … self(self, n - 1) … }`.
  void check_self_applied_lambdas() const {
    for (std::size_t i = 0; i + 1 < t_.size(); ++i) {
      if (!t_[i].is("[") || t_[i + 1].is("[") || (i > 0 && t_[i - 1].is("["))) continue;
      if (i > 0 && (t_[i - 1].kind == TokenKind::identifier || t_[i - 1].is(")") || t_[i - 1].is("]"))) continue;
      const std::size_t captures_end = matching(t_, i);
      if (captures_end + 1 >= t_.size() || !t_[captures_end + 1].is("(")) continue;
      const std::size_t params_end = matching(t_, captures_end + 1);
      std::size_t open = params_end + 1;
      while (open < t_.size() && !t_[open].is("{") && !t_[open].is(";")) ++open;
      if (open >= t_.size() || !t_[open].is("{")) continue;
      const std::size_t close = matching(t_, open);
      // Each parameter, and the copies and references of one in the body (`auto t = self;`,
      // `auto& t{self}`), by the parameter they are. Type names are never parameters: an
      // unnamed parameter's piece ends in its type, and `x & uchar(p)` is a cast, not
      // `auto& uchar(p)` (a refusal of valid kernels, found by tools/msl_fuzz).
      std::map<std::string, std::string> params;
      for (const std::string& p : piece_names(t_, captures_end + 2, params_end))
        if (!p.empty() && !names_type(p)) params[p] = p;
      for (std::size_t j = open + 2; j + 3 < close; ++j) {
        if (t_[j].kind != TokenKind::identifier || names_type(t_[j].text) ||
            !(t_[j + 1].is("=") || t_[j + 1].is("{") || t_[j + 1].is("(")))
          continue;
        const auto of = params.find(t_[j + 2].text);
        if (t_[j + 2].kind != TokenKind::identifier || of == params.end()) continue;
        const bool declared = t_[j - 1].is_identifier("auto") ||
                              ((t_[j - 1].is("&") || t_[j - 1].is("&&")) && t_[j - 2].is_identifier("auto"));
        if (declared && (t_[j + 3].is(";") || t_[j + 3].is("}") || t_[j + 3].is(")")))
          params[t_[j].text] = of->second;
      }
      auto param_of = [&](const Token& tok) -> std::string {
        const auto p = tok.kind == TokenKind::identifier ? params.find(tok.text) : params.end();
        return p == params.end() ? std::string() : p->second;
      };
      auto is_param = [&](const Token& tok) { return !param_of(tok).empty(); };
      for (std::size_t j = open + 1; j + 1 < close; ++j) {
        if (!is_param(t_[j]) || t_[j - 1].is(".") || t_[j - 1].is("->") || t_[j - 1].is("::")) continue;
        std::size_t call = j + 1;  // `p(…)`, or `p.operator()(…)`
        if (t_[call].is(".") && call + 4 < close && t_[call + 1].is_identifier("operator") && t_[call + 2].is("(") &&
            t_[call + 3].is(")"))
          call += 4;
        if (!t_[call].is("(")) continue;
        // One of the arguments is the lambda again: `self(self, …)`, `f(n, f)`, `t(t, …)`.
        const std::size_t args_end = matching(t_, call);
        for (std::size_t a = call + 1; a < args_end; ++a) {
          if (param_of(t_[a]) == param_of(t_[j]) && (t_[a - 1].is("(") || t_[a - 1].is(",")) &&
              (t_[a + 1].is(",") || t_[a + 1].is(")")))
            refuse(j, "the lambda calls itself through its parameter '" + t_[j].text +
                          "': MSL does not support recursive function calls");
        }
      }
    }
  }
};

}  // namespace

void check_recursion(const std::vector<Token>& t, const std::string& source, const DeclaredNames& names) {
  RecursionChecker(t, source, names).run();
}

}  // namespace metalcall::msl
