// Rejoin points before SIMD-group functions after divergent control flow, for the CUDA target
// (see simd_reconvergence.hpp).
#include "msl/passes/simd_reconvergence.hpp"

#include <set>
#include <string>
#include <utility>

#include "msl/analysis/call_graph.hpp"         // matching
#include "msl/analysis/simd_callers.hpp"
#include "msl/analysis/statements.hpp"
#include "msl/analysis/sync_reachability.hpp"  // is_synchronising_name

namespace metalcall::msl {

namespace {

using statements::is_control_keyword;
bool is_loop_or_switch(const Token& k) { return statements::is_loop_keyword(k) || k.is_identifier("switch"); }

class Rejoins {
 public:
  explicit Rejoins(const std::vector<Token>& t)
      : t_(t), callers_(t, [](const std::string& id) { return is_synchronising_name(id) && id != "threadgroup_barrier"; }) {
    // Every function, functor and lambda body of the source but constexpr ones (no __activemask
    // there; a lambda given rejoins calls a SIMD-group function after them, so it is no constant
    // expression either).
    for (const CallableBody& b : callers_.bodies())
      if (!b.is_constexpr) bodies_.push_back(b.open);
  }

  std::vector<RejoinBlock> run() {
    for (std::size_t open : bodies_) block(open);
    return std::move(out_);
  }

 private:
  // The last token of the statement that starts at i, or t_.size().
  std::size_t statement_end(std::size_t i) const {
    const std::size_t e = msl::statement_end(t_, i);
    return e == statements::kNone ? t_.size() : e;
  }

  bool lambda_body(std::size_t j) const { return msl::lambda_body(t_, j); }

  // Whether a lane may leave [b, e] other than at its end: return, goto, or a break or continue
  // not inside a loop (or, for break, a switch) of the range.
  bool leaves(std::size_t b, std::size_t e) const {
    for (std::size_t j = b; j <= e && j < t_.size(); ++j) {
      const Token& k = t_[j];
      if (k.is("{") && lambda_body(j)) {  // its returns leave the lambda only
        j = matching(t_, j);
        continue;
      }
      if (k.is_identifier("return") || k.is_identifier("goto")) return true;
      if (k.is_identifier("break") || k.is_identifier("continue")) return true;
      if (is_loop_or_switch(k)) {
        const std::size_t end = statement_end(j);
        if (end >= t_.size()) return true;
        // Inside: only return and goto leave the range (a `continue` in a switch leaves a loop
        // of the range or of an enclosing one: counted as leaving to be safe).
        for (std::size_t m = j + 1; m <= end; ++m)
          if (t_[m].is("{") && lambda_body(m)) m = matching(t_, m);
          else if (t_[m].is_identifier("return") || t_[m].is_identifier("goto") ||
              (k.is_identifier("switch") && t_[m].is_identifier("continue")))
            return true;
        j = end;
      }
    }
    return false;
  }

  // The `{` of the blocks a statement at i governs: itself, or a control statement's bodies.
  std::vector<std::size_t> bodies(std::size_t i) const {
    std::vector<std::size_t> out;
    if (i >= t_.size()) return out;
    const Token& k = t_[i];
    if (k.is("{")) {
      out.push_back(i);
      return out;
    }
    std::size_t body = t_.size();
    if (k.is_identifier("do")) {
      body = i + 1;
    } else if (k.is_identifier("if") || k.is_identifier("for") || k.is_identifier("while")) {
      std::size_t open = i + 1;
      if (open < t_.size() && t_[open].is_identifier("constexpr")) ++open;
      if (open < t_.size() && t_[open].is("(")) body = matching(t_, open) + 1;
    }
    if (k.is_identifier("switch")) return case_bodies(i);
    if (body >= t_.size()) return out;
    for (std::size_t b : bodies(body)) out.push_back(b);
    if (k.is_identifier("if")) {
      const std::size_t end = statement_end(body);
      if (end + 1 < t_.size() && t_[end + 1].is_identifier("else"))
        for (std::size_t b : bodies(end + 2)) out.push_back(b);
    }
    return out;
  }

  // The blocks a switch's cases govern: `case 1: { ... }`, `default: for (...) { ... }`. The
  // switch's body itself gets no rejoins (its labels are not statements, and the lanes at its
  // `{` are every case's); a braced case is a block like any other.
  std::vector<std::size_t> case_bodies(std::size_t i) const {
    std::vector<std::size_t> out;
    const std::size_t close_paren = i + 1 < t_.size() && t_[i + 1].is("(") ? matching(t_, i + 1) : t_.size();
    const std::size_t open = close_paren + 1;
    if (open >= t_.size() || !t_[open].is("{")) return out;
    const std::size_t close = matching(t_, open);
    if (close >= t_.size()) return out;
    for (std::size_t j = open + 1; j < close;) {
      if (t_[j].kind == TokenKind::directive) {
        ++j;
        continue;
      }
      if (t_[j].is_identifier("case") || t_[j].is_identifier("default")) {  // past the label's `:`
        std::size_t depth = 0, pending_colons = 0;
        for (++j; j < close; ++j) {
          if (t_[j].is("(") || t_[j].is("[") || t_[j].is("{")) ++depth;
          else if ((t_[j].is(")") || t_[j].is("]") || t_[j].is("}")) && depth > 0) --depth;
          else if (depth == 0 && t_[j].is("?")) ++pending_colons;
          else if (depth == 0 && t_[j].is(":")) {
            if (pending_colons == 0) break;
            --pending_colons;
          }
        }
        ++j;
        continue;
      }
      const std::size_t end = statement_end(j);
      if (end >= close) break;
      for (std::size_t b : bodies(j)) out.push_back(b);
      j = end + 1;
    }
    return out;
  }

  bool mentions(std::size_t b, std::size_t e, bool (Rejoins::*what)(std::size_t) const) const {
    for (std::size_t j = b; j < e && j < t_.size(); ++j)
      if ((this->*what)(j)) return true;
    return false;
  }
  bool control(std::size_t j) const { return is_control_keyword(t_[j]); }
  bool branch(std::size_t j) const { return t_[j].is_identifier("if") || t_[j].is_identifier("switch"); }
  bool conditional(std::size_t j) const {
    return t_[j].kind == TokenKind::punct && (t_[j].is("?") || t_[j].is("&&") || t_[j].is("||"));
  }
  // A threadgroup barrier waits for every thread itself: not a reason to rejoin.
  bool may_synchronise(std::size_t j) const { return callers_.calls(j); }
  bool barrier(std::size_t j) const { return t_[j].is_identifier("threadgroup_barrier"); }

  void block(std::size_t open) {
    if (!visited_.insert(open).second) return;
    const std::size_t close = matching(t_, open);
    if (close >= t_.size()) return;
    // A `return` that is the block's last statement leaves with every lane that reaches it.
    std::size_t last = open + 1;
    for (std::size_t i = open + 1; i < close;) {
      if (t_[i].kind == TokenKind::directive) {
        ++i;
        continue;
      }
      last = i;
      i = statement_end(i) + 1;
    }
    // Likewise a final `break` or `continue`: the lanes that reach it leave together.
    const bool final_exit = last < close && (t_[last].is_identifier("return") || t_[last].is_identifier("break") ||
                                             t_[last].is_identifier("continue"));
    const bool rejoinable = !leaves(open + 1, final_exit ? last - 1 : close - 1);
    RejoinBlock found;
    found.open = open;
    bool barrier_skipped = false;  // after a branch holding a barrier: no rejoins (see below)
    for (std::size_t i = open + 1; i < close;) {
      if (t_[i].kind == TokenKind::directive) {
        ++i;
        continue;
      }
      const std::size_t end = statement_end(i);
      if (end >= close) break;
      // Blocks inside this statement get their own rejoins (a switch's: those of its cases).
      for (std::size_t body : bodies(i)) block(body);
      // A statement that may diverge: if/for/while/do/switch, a block holding one, or one that
      // branches inside an expression (`?:`, `&&`, `||`: NVIDIA GPUs need not rejoin the lanes
      // of a conditional's branches at its end; fuzz seed 30001 #45).
      const bool diverges = is_control_keyword(t_[i]) || (t_[i].is("{") && mentions(i + 1, end, &Rejoins::control)) ||
                            mentions(i, end, &Rejoins::conditional);
      const bool holds_barrier = mentions(i, end + 1, &Rejoins::barrier);
      if (rejoinable && diverges && !holds_barrier && !barrier_skipped &&
          mentions(end + 1, close, &Rejoins::may_synchronise))
        found.after.push_back(end);
      // A branch holding a barrier that lanes may skip (MLX's gemv_t): those lanes run ahead, and a
      // rejoin of the block's lanes after it would wait for the lanes held at the barrier, which
      // wait for them (test_divergent_barriers.py's branch_barrier_reduce hung on an H100).
      // The branch may lie inside the statement (a loop or block holding it): any if or switch there.
      if (holds_barrier && mentions(i, end + 1, &Rejoins::branch)) barrier_skipped = true;
      i = end + 1;
    }
    if (!found.after.empty()) out_.push_back(std::move(found));
  }

  const std::vector<Token>& t_;
  SimdCallers callers_;  // the functions, lambdas and functors that may call a SIMD-group function
  std::vector<std::size_t> bodies_;
  std::set<std::size_t> visited_;
  std::vector<RejoinBlock> out_;
};

}  // namespace

std::vector<RejoinBlock> simd_rejoin_points(const std::vector<Token>& t) { return Rejoins(t).run(); }

}  // namespace metalcall::msl
