// The rule "no recursion" (see recursion.hpp).
#include "msl/analysis/recursion.hpp"

#include <algorithm>
#include <map>
#include <set>

#include "msl/analysis/implementation_rules.hpp"
#include "msl/errors/source_errors.hpp"

namespace metalcall::msl {

namespace {

constexpr const char* kRule = "no recursion";

bool is_reserved(const std::string& id) {
  return id.size() > 1 && id[0] == '_' && (id[1] == '_' || (id[1] >= 'A' && id[1] <= 'Z'));
}

// The identifiers of the comma-separated pieces of [from, to) at bracket depth 0: each
// piece's last identifier before a `=` (a template parameter's name, a lambda parameter's).
std::vector<std::string> piece_names(const std::vector<Token>& t, std::size_t from, std::size_t to) {
  std::vector<std::string> names;
  std::string last;
  bool defaulted = false;
  int depth = 0;
  for (std::size_t k = from; k <= to && k < t.size(); ++k) {
    if (k < to && (t[k].is("(") || t[k].is("[") || t[k].is("{") || t[k].is("<"))) ++depth;
    else if (k < to && (t[k].is(")") || t[k].is("]") || t[k].is("}") || t[k].is(">"))) --depth;
    if (k == to || (depth == 0 && t[k].is(","))) {
      names.push_back(last);
      last.clear();
      defaulted = false;
    } else if (depth == 0 && t[k].is("=")) {
      defaulted = true;
    } else if (depth == 0 && !defaulted && t[k].kind == TokenKind::identifier) {
      last = t[k].text;
    }
  }
  return names;
}

// `template <class T, int N>` before the declaration whose name is at `name`: T, N.
std::vector<std::string> template_parameters(const std::vector<Token>& t, std::size_t name) {
  std::size_t s = name;
  int depth = 0;
  while (s > 0) {
    const Token& b = t[s - 1];
    if (b.is(")") || b.is("]")) ++depth;
    else if (b.is("(") || b.is("[")) --depth;
    else if (depth == 0 && (b.is(";") || b.is("{") || b.is("}"))) break;
    --s;
  }
  for (std::size_t k = s; k + 1 < name; ++k) {
    if (!t[k].is_identifier("template") || !t[k + 1].is("<")) continue;
    int angle = 0;
    for (std::size_t j = k + 1; j < name; ++j) {
      if (t[j].is("<")) ++angle;
      else if (t[j].is(">")) --angle;
      else if (t[j].is(">>")) angle -= 2;
      if (angle <= 0) return piece_names(t, k + 2, j);
    }
  }
  return {};
}

// The comma-separated pieces between the parentheses at `open` and its match: their number,
// and how many hold a `=` (a default) or are `...`; `()` and `(void)` have none.
struct ListShape {
  std::size_t pieces = 0, defaulted = 0;
  bool variadic = false;
};
ListShape list_shape(const std::vector<Token>& t, std::size_t open) {
  ListShape shape;
  if (open >= t.size() || !t[open].is("(")) return shape;
  int depth = 0;
  bool empty = true, defaulted = false, dots = false;
  std::size_t first = open + 1;
  for (std::size_t k = open + 1; k < t.size(); ++k) {
    const bool end = depth == 0 && (t[k].is(")") || t[k].is(","));
    if (end) {
      const bool only_void = k == first + 1 && t[first].is_identifier("void") && t[k].is(")") && shape.pieces == 0;
      if (!empty && !only_void) {
        ++shape.pieces;
        shape.defaulted += defaulted ? 1 : 0;
        shape.variadic = shape.variadic || dots;
      }
      if (t[k].is(")")) break;
      empty = true, defaulted = false, dots = false, first = k + 1;
      continue;
    }
    if (t[k].is("(") || t[k].is("[") || t[k].is("{") || t[k].is("<")) ++depth;
    else if (t[k].is(")") || t[k].is("]") || t[k].is("}") || t[k].is(">")) --depth;
    else if (t[k].is(">>")) depth -= 2;
    if (depth == 0 && t[k].is("=")) defaulted = true;
    if (t[k].is("...")) dots = true;
    empty = false;
  }
  return shape;
}

class RecursionChecker {
 public:
  RecursionChecker(const std::vector<Token>& t, const std::string& source, const DeclaredNames& names)
      : t_(t), src_(source), names_(names) {
    // The scopes (class or namespace names) that define each function name, for `X::f(…)`.
    std::vector<std::pair<std::string, std::pair<std::size_t, std::size_t>>> scopes;  // name, braces
    for (const ClassBody& c : class_bodies(t_))
      if (!c.name.empty()) scopes.push_back({c.name, {c.open, c.close}});
    for (std::size_t i = 0; i + 2 < t_.size(); ++i)
      if (t_[i].is_identifier("namespace") && t_[i + 1].kind == TokenKind::identifier && t_[i + 2].is("{"))
        scopes.push_back({t_[i + 1].text, {i + 2, matching(t_, i + 2)}});
    for (const auto& f : names_.definitions) {
      ++definitions_by_name_[f.name];
      for (const auto& [scope, braces] : scopes)
        if (braces.first < f.name_token && f.name_token < braces.second) defining_scopes_[f.name].insert(scope);
      // `R::f(…) {` out of its class: R defines f too.
      if (f.name_token >= 2 && t_[f.name_token - 1].is("::") && t_[f.name_token - 2].kind == TokenKind::identifier)
        defining_scopes_[f.name].insert(t_[f.name_token - 2].text);
    }
    enclosing_.assign(t_.size(), nullptr);
    for (const auto& f : names_.definitions)
      for (std::size_t k = f.body_open; k <= f.body_close && k < t_.size(); ++k)
        if (!enclosing_[k]) enclosing_[k] = &f;
  }

  void run() {
    check_function_objects();
    check_self_applied_lambdas();
    // The call graph among the source's functions, every call site kept for the message.
    std::map<std::string, std::vector<std::pair<std::string, std::size_t>>> calls;  // caller → (callee, token)
    for (const auto& f : names_.definitions) {
      if (f.is_constexpr) continue;  // evaluated by the compiler (a static_assert's fib(10)), not at run time
      const std::vector<std::string> own = template_parameters(t_, f.name_token);
      for (std::size_t k = f.body_open + 1; k < f.body_close && k < t_.size(); ++k) {
        if (enclosing_[k] != &f) continue;
        if (calls_function(k, own) && takes_arguments_of(k)) calls[f.name].emplace_back(t_[k].text, k);
      }
    }
    // A self-call of a name defined once, or a call to a function from which the caller is
    // reachable again. A name defined more than once (overloads) may call its other overloads:
    // its self-calls are not counted.
    auto counts = [&](const std::string& from, const std::string& to) {
      return !(from == to && definitions_by_name_[from] > 1);
    };
    auto reaches = [&](const std::string& from, const std::string& target) {
      std::set<std::string> seen;
      std::vector<std::string> stack = {from};
      while (!stack.empty()) {
        const std::string n = stack.back();
        stack.pop_back();
        if (!seen.insert(n).second) continue;
        for (const auto& [callee, at] : calls[n]) {
          (void)at;
          if (!counts(n, callee)) continue;
          if (callee == target) return true;
          stack.push_back(callee);
        }
      }
      return false;
    };
    for (const auto& f : names_.definitions) {
      for (const auto& [callee, at] : calls[f.name]) {
        const bool self = callee == f.name && counts(f.name, callee);
        if (self || (callee != f.name && reaches(callee, f.name)))
          throw rule_error(src_, t_[at],
                           "function '" + f.name + "' is recursive" +
                               (self ? std::string() : " (through '" + callee + "')") +
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
  std::vector<const FunctionDefinition*> enclosing_;

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
      if (piece_names(t_, k + 2, close) != own) return false;
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
      if (b.is("->")) return at >= 2 && t_[at - 2].is_identifier("this");
      return at >= 5 && t_[at - 2].is(")") && t_[at - 3].is_identifier("this") && t_[at - 4].is("*") &&
             t_[at - 5].is("(");
    }
    if (b.is("::")) {  // `::f(`, or `X::f(` where X is a class or namespace that defines an f
      if (at < 2 || t_[at - 2].kind != TokenKind::identifier) return !(at >= 2 && t_[at - 2].is(">"));
      const auto scopes = defining_scopes_.find(x.text);
      return scopes != defining_scopes_.end() && scopes->second.count(t_[at - 2].text);
    }
    return at == k;  // `template f<T>(` with nothing before it is no call
  }

  // A function object that calls itself: in an `operator()` of class C, `(*this)(…)`,
  // `this->operator()(…)`, `operator()(…)`, `C(…)(…)` / `C{…}(…)`, or a variable of class C
  // called (`C r; r(…)`).
  void check_function_objects() const {
    for (const ClassBody& c : class_bodies(t_)) {
      for (std::size_t k = c.open + 1; k + 4 < c.close; ++k) {
        if (!(t_[k].is_identifier("operator") && t_[k + 1].is("(") && t_[k + 2].is(")") && t_[k + 3].is("("))) continue;
        if (k > 0 && (t_[k - 1].is(".") || t_[k - 1].is("->"))) continue;
        std::size_t open = matching(t_, k + 3) + 1;  // past the parameters: qualifiers, then the body
        while (open < c.close && !t_[open].is("{") && !t_[open].is(";")) open = t_[open].is("(") ? matching(t_, open) + 1 : open + 1;
        if (open >= c.close || !t_[open].is("{")) continue;
        const std::size_t close = matching(t_, open);
        // Variables of its own class in the body (`R r;`, `const R r{};`): calling one is a call of itself.
        std::set<std::string> own_objects;
        for (std::size_t j = open + 1; j + 1 < close; ++j)
          if (!c.name.empty() && t_[j].is_identifier(c.name.c_str()) && t_[j + 1].kind == TokenKind::identifier &&
              !(j > 0 && (t_[j - 1].is("::") || t_[j - 1].is(".") || t_[j - 1].is("->"))))
            own_objects.insert(t_[j + 1].text);
        for (std::size_t j = open + 1; j + 4 < close; ++j) {
          if (t_[j].kind == TokenKind::identifier && own_objects.count(t_[j].text) && t_[j + 1].is("(") &&
              !(t_[j - 1].is(".") || t_[j - 1].is("->") || t_[j - 1].is_identifier(c.name.c_str())))
            refuse(j, "the function object's operator() calls an object of its own class: MSL does not support "
                      "recursive function calls");
          const bool star_this = t_[j].is("(") && t_[j + 1].is("*") && t_[j + 2].is_identifier("this") &&
                                 t_[j + 3].is(")") && t_[j + 4].is("(");
          const bool named = t_[j].is_identifier("operator") && t_[j + 1].is("(") && t_[j + 2].is(")") &&
                             t_[j + 3].is("(") && (t_[j - 1].is("->") ? t_[j - 2].is_identifier("this") : !t_[j - 1].is("."));
          bool made = false;  // `C(…)(…)`, `C{…}(…)`: a new object of its class, called
          if (!c.name.empty() && t_[j].is_identifier(c.name.c_str()) && (t_[j + 1].is("(") || t_[j + 1].is("{"))) {
            const std::size_t after = matching(t_, j + 1) + 1;
            made = after < close && t_[after].is("(");
          }
          if (star_this || named || made)
            refuse(j, "the function object's operator() calls itself: MSL does not support recursive function calls");
        }
        k = close;
      }
    }
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
      const std::vector<std::string> params = piece_names(t_, captures_end + 2, params_end);
      for (std::size_t j = open + 1; j + 1 < close; ++j) {
        if (t_[j].kind != TokenKind::identifier || !t_[j + 1].is("(")) continue;
        const std::string& p = t_[j].text;
        if (p.empty() || std::find(params.begin(), params.end(), p) == params.end()) continue;
        // One of the arguments is the parameter itself: `self(self, …)`, `f(n, f)`.
        const std::size_t args_end = matching(t_, j + 1);
        for (std::size_t a = j + 2; a < args_end; ++a) {
          if (t_[a].is_identifier(p.c_str()) && (t_[a - 1].is("(") || t_[a - 1].is(",")) &&
              (t_[a + 1].is(",") || t_[a + 1].is(")")))
            refuse(j, "the lambda calls itself through its parameter '" + p +
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
