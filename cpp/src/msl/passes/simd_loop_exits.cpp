// The exits of loops that may call a SIMD-group function, for the CUDA target (see simd_loop_exits.hpp).
#include "msl/passes/simd_loop_exits.hpp"

#include <set>
#include <string>
#include <utility>

#include "msl/analysis/call_graph.hpp"  // matching
#include "msl/analysis/statements.hpp"
#include "msl/lex/token_text.hpp"
#include "msl/passes/small_negations.hpp"  // is_narrow_type_name

namespace metalcall::msl {

namespace {

constexpr const char* kStay = " if (metal::mtl_rt::stay_in_loop()) ";

using statements::is_loop_keyword;

class Exits {
 public:
  Exits(const std::vector<Token>& t, const SimdCallers& callers) : t_(t), callers_(callers) {}

  std::vector<LoopExit> run() {
    for (std::size_t i = 0; i < t_.size(); ++i) {
      if (!is_loop_keyword(t_[i])) continue;
      const std::size_t end = statement_end(t_, i);
      if (end == statements::kNone || !callers_.mentions(i, end + 1)) continue;
      std::size_t body = i + 1;  // a do loop's body; a for or while loop's follows its `(...)`
      if (!t_[i].is_identifier("do")) {
        if (body >= t_.size() || !t_[body].is("(")) continue;
        body = matching(t_, body) + 1;
      }
      scan(body, end, true);
    }
    return std::move(out_);
  }

 private:
  // The loop exits in [b, e]: returns, and breaks where `breaks` (not inside a switch).
  void scan(std::size_t b, std::size_t e, bool breaks) {
    for (std::size_t j = b; j <= e && j < t_.size(); ++j) {
      const Token& k = t_[j];
      if (k.is("{") && lambda_body(t_, j)) {  // its returns leave the lambda only
        j = matching(t_, j);
      } else if (k.is_identifier("return")) {
        const std::size_t last = statement_end(t_, j);
        if (last == statements::kNone || last > e) return;
        add_return(j, last);
        j = last;
      } else if (k.is_identifier("break") && breaks && j + 1 <= e && t_[j + 1].is(";")) {
        add(LoopExit{j, j + 1, std::string("{") + kStay, "", " }"});
        ++j;
      } else if (is_loop_keyword(k) || k.is_identifier("switch")) {  // its breaks are its own; its returns leave this loop too
        const std::size_t end = statement_end(t_, j);
        if (end == statements::kNone) return;
        scan(j + 1, end, false);
        j = end;
      }
    }
  }

  void add(LoopExit e) {
    if (seen_.insert(e.first).second) out_.push_back(std::move(e));
  }

  // `return;` and a value that calls no SIMD-group function leave as they are, through
  // stay_in_loop; another value is evaluated first: a braced list into a variable of the declared
  // return type (copy-list-initialization, as `return {...};` does), an expression into a
  // reference, a void function's call as a statement. (A braced list in a function whose return
  // type these tokens do not show leaves as it is.)
  void add_return(std::size_t ret, std::size_t semicolon) {
    const bool calls = callers_.mentions(ret + 1, semicolon);
    const std::vector<std::size_t> type = calls ? return_type(ret) : std::vector<std::size_t>{};
    const std::string value = "mtl_exit_" + std::to_string(ret);
    const std::string leave = std::string(kStay) + "return " + value + "; }";
    if (!calls || (t_[ret + 1].is("{") && type.empty())) {
      add(LoopExit{ret, semicolon, std::string("{") + kStay, "", " }"});
    } else if (t_[ret + 1].is("{")) {
      add(LoopExit{ret, semicolon, "", "{ " + type_text(t_, type, false) + " " + value + " =", leave});
    } else if (type.size() == 1 && t_[type[0]].is_identifier("void")) {
      add(LoopExit{ret, semicolon, "", "{", std::string(kStay) + "return; }"});
    } else if (type.size() == 1 && is_narrow_type_name(t_[type[0]].text)) {
      // A char or short returned: through narrow_arg, as small_negations writes such a return
      // (NVVM's neg.s16), which leaves this one alone since its `return` is rewritten here.
      add(LoopExit{ret, semicolon, "", "{ auto&& " + value + " =",
                   std::string(kStay) + "return metal::mtl_rt::narrow_arg(" + value + "); }"});
    } else {
      add(LoopExit{ret, semicolon, "", "{ auto&& " + value + " =", leave});
    }
  }

  // The return type that the innermost function or lambda around token j declares: its tokens
  // (`Pair`, `const thread T&`, `metal::array<int, 3>`, a lambda's or a function's `-> int2`);
  // none where it is deduced (`[&] {`, `[&](int a) {`, `auto f()`) or the tokens do not show it.
  std::vector<std::size_t> return_type(std::size_t j) const {
    const CallableBody* in = nullptr;
    for (const CallableBody& b : callers_.bodies())
      if (b.open < j && j < b.close && (!in || b.open > in->open)) in = &b;
    if (!in || in->params == statements::kNone) return {};
    std::size_t first = statements::kNone, last = in->open - 1;
    for (std::size_t k = matching(t_, in->params) + 1; k < in->open && first == statements::kNone; ++k)
      if (t_[k].is("->")) first = k + 1;  // `-> T {`
    if (first == statements::kNone) {
      if (in->intro != statements::kNone) return {};  // a lambda's, deduced
      const std::size_t name = function_name(in->params);
      if (name == statements::kNone) return {};
      if (t_[name].is_identifier("operator") && !t_[name + 1].is("(") && t_[name + 1].kind != TokenKind::punct) {
        first = name + 1;  // `operator int2()`: a conversion function's type
        last = in->params - 1;
      } else {
        last = name - 1;
        first = type_start(last);
      }
    }
    std::vector<std::size_t> type;
    for (std::size_t k = first; k <= last && first != statements::kNone; ++k) {
      if (t_[k].is_identifier("auto")) return {};
      type.push_back(k);
    }
    return type;
  }

  // The first token of the name of the function whose parameters open at `params` (`f`, `S::f`,
  // `S<T>::f`, `operator+`, `operator()`, `operator int2`), or kNone.
  std::size_t function_name(std::size_t params) const {
    std::size_t name = params - 1;
    for (std::size_t k = params; k-- > 0 && params - k <= 4;)
      if (t_[k].is_identifier("operator")) name = k;
    const auto before_arguments = [this](std::size_t close) {  // `S` of `S<T>`
      const std::size_t open = angle_open(close);
      return open == statements::kNone || open == 0 ? statements::kNone : open - 1;
    };
    if (t_[name].is(">") || t_[name].is(">>")) name = before_arguments(name);  // an explicit specialization
    while (name != statements::kNone && name >= 2 && t_[name - 1].is("::")) {
      name -= 2;
      if (t_[name].is(">")) name = before_arguments(name);
    }
    return name;
  }

  // The first token of the return type that ends at `last`: back past names, `::`, template
  // arguments, `decltype(...)`, `*` and `&`, to a specifier (static, inline, METAL_FUNC, ...), an
  // attribute, a template header or the declaration before; kNone if none is there.
  std::size_t type_start(std::size_t last) const {
    static const auto& specifiers = *new std::set<std::string>{"static",  "inline",   "constexpr",  "consteval",
                                                               "extern",  "friend",   "virtual",    "explicit",
                                                               "METAL_FUNC", "kernel", "__inline__"};
    std::size_t k = last + 1;
    while (k > 0) {
      const Token& b = t_[k - 1];
      if (b.is(">") || b.is(">>")) {
        const std::size_t open = angle_open(k - 1);
        if (open == statements::kNone || open == 0 || t_[open - 1].is_identifier("template")) break;
        k = open;
      } else if (b.is(")")) {
        const std::size_t open = opening(k - 1);
        if (open == statements::kNone || open == 0 || !t_[open - 1].is_identifier("decltype")) break;
        k = open - 1;
      } else if ((b.kind == TokenKind::identifier && !specifiers.count(b.text)) || b.is("::") || b.is("*") ||
                 b.is("&") || b.is("&&")) {
        --k;
      } else {
        break;
      }
    }
    return k <= last ? k : statements::kNone;
  }

  // The `<` of the template arguments that close at `close` (`>` or `>>`), or kNone.
  std::size_t angle_open(std::size_t close) const {
    std::size_t depth = 0;
    for (std::size_t k = close + 1; k-- > 0;) {
      if (t_[k].is(">")) ++depth;
      else if (t_[k].is(">>")) depth += 2;
      else if (t_[k].is("<") && --depth == 0) return k;
      else if (t_[k].is(")")) k = opening(k) == statements::kNone ? 0 : opening(k);
      else if (t_[k].is(";") || t_[k].is("{") || t_[k].is("}")) break;
    }
    return statements::kNone;
  }

  // The `(` of the `)` at `close`, or kNone.
  std::size_t opening(std::size_t close) const {
    std::size_t depth = 0;
    for (std::size_t k = close + 1; k-- > 0;) {
      if (t_[k].is(")")) ++depth;
      else if (t_[k].is("(") && --depth == 0) return k;
    }
    return statements::kNone;
  }

  const std::vector<Token>& t_;
  const SimdCallers& callers_;
  std::set<std::size_t> seen_;
  std::vector<LoopExit> out_;
};

}  // namespace

std::vector<LoopExit> simd_loop_exits(const std::vector<Token>& t, const SimdCallers& callers) {
  return Exits(t, callers).run();
}

}  // namespace metalcall::msl
