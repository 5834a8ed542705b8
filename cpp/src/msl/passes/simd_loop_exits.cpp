// The exits of loops that may call a SIMD-group function, for the CUDA target (see simd_loop_exits.hpp).
#include "msl/passes/simd_loop_exits.hpp"

#include <set>
#include <string>
#include <utility>

#include "msl/analysis/call_graph.hpp"  // matching
#include "msl/analysis/statements.hpp"

namespace metalcall::msl {

namespace {

constexpr const char* kStay = " if (metal::mtl_rt::stay_in_loop()) ";

bool is_loop(const Token& k) { return k.is_identifier("for") || k.is_identifier("while") || k.is_identifier("do"); }

class Exits {
 public:
  Exits(const std::vector<Token>& t, const SimdCallers& callers) : t_(t), callers_(callers) {}

  std::vector<LoopExit> run() {
    for (std::size_t i = 0; i < t_.size(); ++i) {
      if (!is_loop(t_[i])) continue;
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
      } else if (is_loop(k)) {  // its exits are its own (a return there: found with that loop, if it calls one)
        const std::size_t end = statement_end(t_, j);
        if (end == statements::kNone) return;
        j = end;
      } else if (k.is_identifier("switch")) {
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

  // `return;`, a braced list (no variable takes its type) and a value that calls no SIMD-group
  // function leave as they are, through stay_in_loop; another value is evaluated first.
  void add_return(std::size_t ret, std::size_t semicolon) {
    if (ret + 1 == semicolon || t_[ret + 1].is("{") || !callers_.mentions(ret + 1, semicolon)) {
      add(LoopExit{ret, semicolon, std::string("{") + kStay, "", " }"});
    } else if (returns_void(ret)) {
      add(LoopExit{ret, semicolon, "", "{", std::string(kStay) + "return; }"});
    } else {
      const std::string value = "mtl_exit_" + std::to_string(ret);
      add(LoopExit{ret, semicolon, "", "{ auto&& " + value + " =", std::string(kStay) + "return " + value + "; }"});
    }
  }

  // Whether the innermost function or lambda around token j is declared to return void.
  bool returns_void(std::size_t j) const {
    const CallableBody* in = nullptr;
    for (const CallableBody& b : callers_.bodies())
      if (b.open < j && j < b.close && (!in || b.open > in->open)) in = &b;
    if (!in || in->params == statements::kNone) return false;  // `[...] { ... }`: deduced
    if (in->intro != statements::kNone) {  // a lambda: `-> void`
      for (std::size_t k = matching(t_, in->params) + 1; k + 1 < in->open; ++k)
        if (t_[k].is("->") && t_[k + 1].is_identifier("void")) return true;
      return false;
    }
    std::size_t name = in->params - 1;  // `void f(`; `void operator()(`
    if (t_[name].is(")") && name >= 2 && t_[name - 2].is_identifier("operator")) name -= 2;
    while (name >= 2 && t_[name - 1].is("::") && t_[name - 2].kind == TokenKind::identifier) name -= 2;  // `void S::f(`
    return name > 0 && t_[name - 1].is_identifier("void");
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
