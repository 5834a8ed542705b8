// Conditions evaluated by lanes that rejoin before the SIMD-group code they choose (CUDA; see
// simd_conditions.hpp).
#include "msl/passes/simd_conditions.hpp"

#include <set>

#include "msl/analysis/call_graph.hpp"  // matching
#include "msl/analysis/operands.hpp"
#include "msl/analysis/statements.hpp"  // kNone, statement_end

namespace metalcall::msl {

namespace {

using statements::kNone;

class Conditions {
 public:
  Conditions(const std::vector<Token>& t, const SimdCallers& callers) : t_(t), callers_(callers) {}

  std::vector<std::pair<std::size_t, std::size_t>> run() {
    for (const CallableBody& b : callers_.bodies())
      if (!b.is_constexpr && b.close < t_.size()) scan(b.open + 1, b.close);
    return std::move(out_);
  }

 private:
  void add(std::size_t first, std::size_t last) {
    if (first == kNone || first > last || last >= t_.size()) return;
    if (seen_.insert({first, last}).second) out_.emplace_back(first, last);  // a lambda's body is scanned twice
  }

  bool branches(std::size_t begin, std::size_t end) const {
    for (std::size_t j = begin; j < end && j < t_.size(); ++j)
      if (t_[j].kind == TokenKind::punct && (t_[j].is("?") || t_[j].is("&&") || t_[j].is("||"))) return true;
    return false;
  }

  // The `(` and `)` of a control statement's condition at k, and the statement's end.
  void control(std::size_t k) {
    std::size_t open = k + 1;
    if (open < t_.size() && t_[open].is_identifier("constexpr")) return;  // decided when compiled
    if (open >= t_.size() || !t_[open].is("(")) return;
    const std::size_t close = matching(t_, open);
    if (close >= t_.size()) return;
    const std::size_t end = statement_end(t_, k);
    if (end == kNone || !callers_.mentions(close + 1, end + 1)) return;
    if (t_[k].is_identifier("for")) {  // the condition between the two `;` of the header
      std::size_t first = kNone, second = kNone;
      for (std::size_t j = open + 1; j < close; ++j) {
        if (t_[j].is("(") || t_[j].is("[") || t_[j].is("{")) j = matching(t_, j);
        else if (t_[j].is(";")) (first == kNone ? first : second) = j;
      }
      if (second != kNone && second > first + 1 && branches(first + 1, second)) add(first + 1, second - 1);
      return;
    }
    // An if or switch with an init-statement or a declaration as its condition is left alone.
    for (std::size_t j = open + 1; j < close; ++j) {
      if (t_[j].is("(") || t_[j].is("[") || t_[j].is("{")) j = matching(t_, j);
      else if (t_[j].is(";") || t_[j].is("=")) return;
    }
    if (branches(open + 1, close)) add(open + 1, close - 1);
  }

  // `do … while (c);`: its condition chooses whether the body runs again.
  void do_condition(std::size_t k) {
    const std::size_t end = statement_end(t_, k);
    if (end == kNone || end < 4 || !t_[end - 1].is(")")) return;
    const std::size_t open = opening_bracket(t_, end - 1);
    if (open == kNone || open == 0 || !t_[open - 1].is_identifier("while")) return;
    if (callers_.mentions(k + 1, open) && branches(open + 1, end - 1)) add(open + 1, end - 2);
  }

  void scan(std::size_t begin, std::size_t end) {
    for (std::size_t j = begin; j < end; ++j) {
      const Token& k = t_[j];
      if (k.is_identifier("if") || k.is_identifier("while") || k.is_identifier("for")) {
        // A do loop's `while` is its condition (do_condition), not a loop of its own.
        if (!(k.is_identifier("while") && j > 0 && t_[j - 1].is("}") && follows_do(j - 1))) control(j);
        continue;
      }
      if (k.is_identifier("do")) {
        do_condition(j);
        continue;
      }
      if (k.kind != TokenKind::punct) continue;
      if (k.is("?")) {
        const std::size_t colon = matching_colon(t_, j);
        if (colon >= t_.size()) continue;
        const std::size_t arms_end = third_operand_end(t_, colon + 1);
        if (callers_.mentions(j + 1, arms_end)) add(left_operand_start(t_, j), j - 1);
      } else if (k.is("&&") || k.is("||")) {
        if (callers_.mentions(j + 1, right_operand_end(t_, j))) add(left_operand_start(t_, j), j - 1);
      }
    }
  }

  // Whether the block closed at `close` is a do loop's body.
  bool follows_do(std::size_t close) const {
    const std::size_t open = opening_bracket(t_, close);
    return open != kNone && open > 0 && t_[open - 1].is_identifier("do");
  }

  const std::vector<Token>& t_;
  const SimdCallers& callers_;
  std::vector<std::pair<std::size_t, std::size_t>> out_;
  std::set<std::pair<std::size_t, std::size_t>> seen_;
};

}  // namespace

std::vector<std::pair<std::size_t, std::size_t>> simd_joined_conditions(const std::vector<Token>& t,
                                                                        const SimdCallers& callers) {
  return Conditions(t, callers).run();
}

}  // namespace metalcall::msl
