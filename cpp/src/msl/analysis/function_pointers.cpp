// No run-time function pointers (see function_pointers.hpp). Token level: a function is a name
// the source defines with a body (DeclaredNames::functions); a name that the source also
// declares as a variable somewhere is left alone where it could be that variable.
#include "msl/analysis/function_pointers.hpp"

#include <set>

#include "msl/analysis/implementation_rules.hpp"
#include "msl/errors/source_errors.hpp"

namespace metalcall::msl {

namespace {

constexpr const char* kRule = "no function pointers";

class FunctionPointerChecker {
 public:
  FunctionPointerChecker(const std::vector<Token>& t, const std::string& source, const DeclaredNames& names)
      : t_(t), src_(source), names_(names) {
    for (std::size_t k = 0; k + 1 < t_.size(); ++k)
      if (declares_variable(k)) variables_.insert(t_[k].text);
    for (std::size_t k = 0; k + 3 < t_.size(); ++k)  // `auto l = [`…: a lambda held by a variable
      if (t_[k].is_identifier("auto") && t_[k + 1].kind == TokenKind::identifier && t_[k + 2].is("=") && lambda_at(k + 3))
        lambdas_.insert(t_[k + 1].text);
  }

  void run() {
    find_function_type_aliases();
    for (std::size_t i = 0; i < t_.size(); ++i) {
      const Token& x = t_[i];
      if (x.is(".*") || x.is("->*") || (x.is("::") && i + 1 < t_.size() && t_[i + 1].is("*")))
        refuse(i, "pointers to members are not MSL");
      if ((x.is("+") || x.is("*")) && unary_at(i) && (lambda_at(i + 1) || on_lambda_variable(i)))
        refuse(i, "'" + x.text + "' before a lambda converts it to a function pointer, which MSL does not have; "
                  "call the lambda, or pass it as an object");
      if (x.is("&")) check_address_of(i);
      if (x.is_identifier("decltype")) check_decltype(i);
      if (x.kind != TokenKind::identifier) continue;
      if (aliases_.count(x.text) && !alias_statement_.count(i) && !inside_template_parameters(i) &&
          !explicit_instantiation(i))
        refuse(i, "'" + x.text + "' is a function or function pointer type: only template parameters may have it "
                  "(a variable, parameter or cast of it would be a run-time function pointer)");
      if (is_function(x.text)) check_value_use(i);
    }
  }

 private:
  const std::vector<Token>& t_;
  const std::string& src_;
  const DeclaredNames& names_;
  std::set<std::string> variables_;       // names the source declares as variables somewhere
  std::set<std::string> lambdas_;         // variables initialised with a lambda (`auto l = [](…){…};`)
  std::set<std::string> aliases_;         // aliases of function and function pointer types
  std::set<std::size_t> alias_statement_;  // the tokens of their own declarations

  [[noreturn]] void refuse(std::size_t i, const std::string& message) const {
    throw rule_error(src_, t_[i], message, kRule);
  }

  bool is_function(const std::string& n) const { return names_.functions.count(n) && !names_.types.count(n); }

  // `TYPE name =`, `TYPE name;`, `TYPE name[`, `TYPE name,` `TYPE name)` (a parameter)...
  bool declares_variable(std::size_t k) const {
    if (t_[k].kind != TokenKind::identifier || k == 0) return false;
    const Token& next = t_[k + 1];
    if (!(next.is("=") || next.is(";") || next.is(",") || next.is("[") || next.is("{") || next.is(")") || next.is(":")))
      return false;
    const Token& b = t_[k - 1];
    // A later declarator of a list, `float re, im;` / `int a, b = 2;` (not an argument: those
    // end with `,` or `)`).
    if (b.is(",") && (next.is(";") || next.is("=") || next.is("["))) return true;
    static const auto& not_types = *new std::set<std::string>{"return", "case", "else", "do", "goto", "sizeof",
                                                              "alignof", "decltype", "typename", "struct", "class",
                                                              "union", "enum", "namespace", "using", "template"};
    if (b.is("*") || b.is("&") || b.is("&&")) {  // `T* p`, `T& r`, not `= &f` or `(&f`
      if (k < 2) return false;
      const Token& bb = t_[k - 2];
      return (bb.kind == TokenKind::identifier || bb.is(">") || bb.is("*") || bb.is("&")) &&
             !not_types.count(bb.text);
    }
    return (b.kind == TokenKind::identifier && !not_types.count(b.text)) || b.is(">");
  }

  // `+l`, `*l` on a variable holding a lambda (not `+l(x)`): its conversion to a function pointer.
  bool on_lambda_variable(std::size_t i) const {
    if (i + 1 >= t_.size() || t_[i + 1].kind != TokenKind::identifier || !lambdas_.count(t_[i + 1].text)) return false;
    return !(i + 2 < t_.size() && (t_[i + 2].is("(") || t_[i + 2].is(".") || t_[i + 2].is("[")));
  }

  // Whether the `+` or `*` at i is unary (`a + [](…){…}(x)` adds a lambda's result).
  bool unary_at(std::size_t i) const {
    if (i == 0) return true;
    const Token& b = t_[i - 1];
    return !(b.kind == TokenKind::identifier && !is_keyword(b.text)) && b.kind != TokenKind::number && !b.is(")") &&
           !b.is("]");
  }

  // `[captures](…)…{` or `[captures]{`: a lambda (not an attribute `[[`, not a subscript).
  bool lambda_at(std::size_t i) const {
    if (i >= t_.size() || !t_[i].is("[") || (i + 1 < t_.size() && t_[i + 1].is("["))) return false;
    const std::size_t close = matching(t_, i);
    return close + 1 < t_.size() && (t_[close + 1].is("(") || t_[close + 1].is("{"));
  }

  // The first token of the statement holding token i.
  std::size_t statement_start(std::size_t i) const {
    int depth = 0;
    std::size_t s = i;
    while (s > 0) {
      const Token& b = t_[s - 1];
      if (b.is(")") || b.is("]")) ++depth;
      else if (b.is("(") || b.is("[")) {
        if (depth == 0) break;
        --depth;
      } else if (depth == 0 && (b.is(";") || b.is("{") || b.is("}") || b.kind == TokenKind::directive)) {
        break;
      }
      --s;
    }
    return s;
  }

  // In `template [[host_name("k")]] [[kernel]] T k<float>;`: an explicit instantiation names
  // a function's type, it makes no pointer.
  bool explicit_instantiation(std::size_t i) const {
    const std::size_t s = statement_start(i);
    return t_[s].is_identifier("template") && !(s + 1 < t_.size() && t_[s + 1].is("<"));
  }

  // Inside `template < … >` of the statement's template header.
  bool inside_template_parameters(std::size_t i) const {
    std::size_t s = i;
    while (s > 0 && !(t_[s - 1].is(";") || t_[s - 1].is("{") || t_[s - 1].is("}"))) --s;
    for (std::size_t k = s; k < i; ++k) {
      if (!t_[k].is_identifier("template") || k + 1 >= i || !t_[k + 1].is("<")) continue;
      int angle = 0;
      for (std::size_t j = k + 1; j <= i; ++j) {
        if (t_[j].is("<")) ++angle;
        else if (t_[j].is(">")) --angle;
        else if (t_[j].is(">>")) angle -= 2;
        if (angle <= 0) break;
        if (j == i) return true;
      }
    }
    return false;
  }

  // Inside a template's argument list (`apply<twice>`, `f<int, &g>`): compile time.
  bool inside_template_arguments(std::size_t i) const {
    int depth = 0, angle = 0;
    for (std::size_t k = i; k > 0; --k) {
      const Token& b = t_[k - 1];
      if (b.is(")") || b.is("]") || b.is("}")) ++depth;
      else if (b.is("(") || b.is("[") || b.is("{")) {
        if (depth == 0) return false;
        --depth;
      } else if (depth == 0 && b.is(">")) {
        ++angle;
      } else if (depth == 0 && b.is("<")) {
        if (angle == 0) return k >= 2 && t_[k - 2].kind == TokenKind::identifier;
        --angle;
      } else if (depth == 0 && (b.is(";") || b.is("="))) {
        return false;
      }
    }
    return false;
  }

  // From a name at i (maybe `A::B::f`), the index after it and its template arguments.
  std::size_t after_name(std::size_t i) const {
    std::size_t j = i + 1;
    while (j + 1 < t_.size() && t_[j].is("::") && t_[j + 1].kind == TokenKind::identifier) j += 2;
    if (j < t_.size() && t_[j].is("<")) {
      int angle = 0;
      for (std::size_t k = j; k < t_.size() && k < j + 64; ++k) {
        if (t_[k].is("<")) ++angle;
        else if (t_[k].is(">")) --angle;
        else if (t_[k].is(">>")) angle -= 2;
        else if (t_[k].is(";") || t_[k].is("{")) break;
        if (angle <= 0) return k + 1;
      }
    }
    return j;
  }

  // `&f`, `&S::f`, `&f<T>`: the address of a function (not `&f(x)`, the address of a result).
  void check_address_of(std::size_t i) {
    std::size_t n = i + 1;
    if (n < t_.size() && t_[n].is("::")) ++n;
    if (n >= t_.size() || t_[n].kind != TokenKind::identifier) return;
    std::size_t last = n;
    while (last + 2 < t_.size() && t_[last + 1].is("::") && t_[last + 2].kind == TokenKind::identifier) last += 2;
    const bool qualified = last != n;
    if (!is_function(t_[last].text) || (!qualified && variables_.count(t_[last].text))) return;
    const std::size_t after = after_name(last);
    if (after < t_.size() && (t_[after].is("(") || t_[after].is("[") || t_[after].is(".") || t_[after].is("->")))
      return;
    if (inside_template_arguments(i)) return;
    refuse(i, "'&" + t_[last].text + "' takes the address of a function: MSL has no function pointers outside "
              "[[visible]] function tables");
  }

  // `decltype(f)`: a function's type, what a cast to a function pointer is spelled with.
  // `template [[host_name("k")]] [[kernel]] decltype(k<float>) k<float>;` (an explicit
  // instantiation, MLX's instantiate_kernel) only names it, and so may an alias (ggml's
  // `typedef decltype(kernel_repeat<float>) kernel_repeat_t;`), whose uses are checked.
  void check_decltype(std::size_t i) {
    if (i + 2 >= t_.size() || !t_[i + 1].is("(") || t_[i + 2].kind != TokenKind::identifier) return;
    const std::size_t name = i + 2;
    if (!is_function(t_[name].text) || variables_.count(t_[name].text)) return;
    const std::size_t after = after_name(name);
    if (after >= t_.size() || !t_[after].is(")")) return;  // decltype(f(x)): a call's type
    const std::size_t s = statement_start(i);
    if (explicit_instantiation(i) || t_[s].is_identifier("typedef") || t_[s].is_identifier("using")) return;
    refuse(i, "'decltype(" + t_[name].text + ")' is a function's type: MSL has no function pointers to cast to");
  }

  // A function's name as a value: `auto p = f;`, `g(f)`, `return f;` (it decays to a pointer).
  void check_value_use(std::size_t i) {
    const std::string& n = t_[i].text;
    std::size_t first = i;  // the start of a qualified name
    while (first >= 2 && t_[first - 1].is("::") && t_[first - 2].kind == TokenKind::identifier) first -= 2;
    if (first >= 1 && t_[first - 1].is("::")) --first;
    if (first == 0) return;
    const Token& before = t_[first - 1];
    if (before.is(".") || before.is("->") || before.is("&") || before.is("~")) return;  // a member; `&f` above
    const std::size_t after = after_name(i);
    if (after >= t_.size()) return;
    const Token& next = t_[after];
    if (!(next.is(")") || next.is(",") || next.is(";") || next.is("?") || next.is(":") || next.is("}"))) return;
    // `(f)(x)`, `(ns::f)(x)`: a call of the parenthesised name (the idiom that keeps a function-like
    // macro of the same name from expanding), no pointer kept.
    if (before.is("(") && next.is(")") && after + 1 < t_.size() && t_[after + 1].is("(")) return;
    if (!(before.is("=") || before.is("(") || before.is(",") || before.is("?") || before.is(":") ||
          before.is_identifier("return") || before.is("{")))
      return;
    if (first == i && variables_.count(n)) return;  // maybe that variable
    if (before.is("(") && first >= 2 &&
        (t_[first - 2].is_identifier("decltype") || t_[first - 2].is_identifier("sizeof") ||
         t_[first - 2].is_identifier("alignof")))
      return;  // decltype(f): check_decltype
    if (inside_template_arguments(i) || inside_template_parameters(i)) return;
    refuse(i, "the function '" + n + "' used as a value becomes a function pointer, which MSL does not have; call "
              "it, or pass a function object");
  }

  // `using A = R (*)(…);`, `using A = R(…);`, `typedef R (*A)(…);`, `typedef R A(…);` and
  // aliases of those: types only template parameters may have (`typedef T (*A)[N];`, a pointer to
  // an array, is none of them).
  void find_function_type_aliases() {
    for (bool grew = true; grew;) {
      grew = false;
      for (std::size_t i = 0; i + 2 < t_.size(); ++i) {
        std::string alias;
        std::size_t begin = i, end = i;
        if (t_[i].is_identifier("using") && t_[i + 1].kind == TokenKind::identifier && t_[i + 2].is("=")) {
          alias = t_[i + 1].text;
          begin = i + 3;
        } else if (t_[i].is_identifier("typedef")) {
          begin = i + 1;
        } else {
          continue;
        }
        end = begin;
        while (end < t_.size() && !t_[end].is(";")) end = t_[end].is("(") || t_[end].is("{") ? matching(t_, end) + 1 : end + 1;
        if (end >= t_.size()) continue;
        bool function_type = false;
        std::string typedef_name;
        int angle = 0;
        for (std::size_t k = begin; k < end; ++k) {
          if (t_[k].kind == TokenKind::identifier && aliases_.count(t_[k].text)) function_type = true;
          if (t_[k].is("<")) ++angle;
          else if (t_[k].is(">")) --angle;
          else if (t_[k].is(">>")) angle -= 2;
          if (t_[k].is("{")) {
            k = matching(t_, k);
            continue;
          }
          if (!t_[k].is("(") || k == begin) continue;
          const Token& b = t_[k - 1];
          if (b.is_identifier("decltype")) {  // `decltype(f<T>)`: a function's type
            const std::size_t after = k + 1 < end ? after_name(k + 1) : end;
            if (t_[k + 1].kind == TokenKind::identifier && is_function(t_[k + 1].text) && after < end && t_[after].is(")"))
              function_type = true;
            typedef_name = after + 1 < end && t_[after + 1].kind == TokenKind::identifier ? t_[after + 1].text : "";
            k = matching(t_, k);
            continue;
          }
          if (angle > 0 || b.is_identifier("sizeof") || b.is_identifier("alignof") || b.is_identifier("alignas") ||
              b.is_identifier("noexcept") || b.is_identifier("__attribute__")) {  // `} __attribute__((packed)) S;`
            k = matching(t_, k);
            continue;
          }
          const std::size_t close = matching(t_, k);
          // `T (*A)[N]`, `T (*)[N]`, `T (&A)[N]`: a pointer or reference to an array, no function
          // (`T (*F(int))[N]`, a function returning one, has a parameter list inside).
          bool inner_parameters = false;
          for (std::size_t q = k + 1; q < close; ++q) inner_parameters = inner_parameters || t_[q].is("(");
          if (close + 1 < end && t_[close + 1].is("[") && k + 1 < close && !inner_parameters &&
              (t_[k + 1].is("*") || t_[k + 1].is("&") || t_[k + 1].is("&&"))) {
            k = close;
            continue;
          }
          // `R (*A)(…)` / `R (*)(…)` / `R A(…)` / `R(…)`: a parameter list after a declarator or type.
          if (close + 1 < end && t_[close + 1].is("(")) {
            function_type = true;
            for (std::size_t q = k + 1; q < close; ++q)
              if (t_[q].kind == TokenKind::identifier) typedef_name = t_[q].text;
          } else if (b.kind == TokenKind::identifier || b.is(">") || b.is("*") || b.is("&")) {
            function_type = true;
            if (!alias.size() && b.kind == TokenKind::identifier) typedef_name = b.text;
          }
          k = close;
        }
        if (alias.empty()) alias = typedef_name;
        if (!function_type || alias.empty() || aliases_.count(alias)) continue;
        aliases_.insert(alias);
        for (std::size_t k = i; k <= end; ++k) alias_statement_.insert(k);
        grew = true;
      }
    }
  }
};

}  // namespace

void check_function_pointers(const std::vector<Token>& t, const std::string& source, const DeclaredNames& names) {
  FunctionPointerChecker(t, source, names).run();
}

}  // namespace metalcall::msl
