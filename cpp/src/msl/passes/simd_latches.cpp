// Loop latches for the CPU's SIMD-group rendezvous (see simd_latches.hpp).
#include "msl/passes/simd_latches.hpp"

#include "msl/analysis/call_graph.hpp"  // matching
#include "msl/analysis/statements.hpp"  // statement_end

namespace metalcall::msl {

namespace {

class Latches {
 public:
  Latches(const std::vector<Token>& t, const SimdCallers& callers) : t_(t), callers_(callers) {
    for (std::size_t k = 1; k < t_.size(); ++k)
      if (t_[k].is("{") && t_[k - 1].is_identifier("do")) do_bodies_[matching(t_, k)] = k;
  }

  LatchEdits run() {
    for (std::size_t i = 0; i < t_.size(); ++i) {
      const Token& k = t_[i];
      if (k.is_identifier("for")) for_loop(i);
      else if (k.is_identifier("while")) while_loop(i);
    }
    return std::move(out_);
  }

 private:
  bool mentions_simd(std::size_t b, std::size_t e) const { return callers_.mentions(b, e); }

  std::string latch(std::size_t at, std::size_t last) const {
    const int d = t_[last].line - t_[at].line;
    return "metal::mtl_rt::simd_latch(__builtin_LINE() + " + std::to_string(d < 0 ? 0 : d) + ")";
  }

  void for_loop(std::size_t i) {
    const std::size_t open = i + 1;
    if (open >= t_.size() || !t_[open].is("(")) return;
    const std::size_t close = matching(t_, open);
    if (close >= t_.size()) return;
    // The two `;` of the head at its own depth (none: a range-based for).
    std::size_t second = 0;
    int depth = 0, semis = 0;
    for (std::size_t j = open + 1; j < close; ++j) {
      if (t_[j].is("(") || t_[j].is("[") || t_[j].is("{")) ++depth;
      else if (t_[j].is(")") || t_[j].is("]") || t_[j].is("}")) --depth;
      else if (depth == 0 && t_[j].is(";") && ++semis == 2) second = j;
    }
    if (!second) return;
    const std::size_t last = statement_end(t_, close + 1);
    if (last >= t_.size() || !mentions_simd(close + 1, last + 1)) return;
    const std::size_t step = second + 1;
    if (step == close) out_.before[close] += latch(close, last);
    else out_.before[step] += latch(step, last) + ", ";
  }

  void while_loop(std::size_t i) {
    const std::size_t open = i + 1;
    if (open >= t_.size() || !t_[open].is("(")) return;
    const std::size_t close = matching(t_, open);
    if (close >= t_.size()) return;
    std::size_t body_begin, last;
    // `} while (c);` closes a do loop: its body is the block before.
    if (i > 0 && t_[i - 1].is("}") && is_do_body_end(i - 1, body_begin)) {
      last = close + 1;
    } else {
      body_begin = close + 1;
      last = statement_end(t_, body_begin);
    }
    if (last >= t_.size() || !mentions_simd(body_begin, i > body_begin ? i : last + 1)) return;
    out_.after[open] += "(" + latch(open, last) + ", ";
    out_.before[close] += ")";
  }

  // Whether the `}` at j ends the body of `do { … }` (and where the body begins).
  bool is_do_body_end(std::size_t j, std::size_t& begin) const {
    const auto found = do_bodies_.find(j);
    if (found == do_bodies_.end()) return false;
    begin = found->second;
    return true;
  }

  const std::vector<Token>& t_;
  const SimdCallers& callers_;
  std::map<std::size_t, std::size_t> do_bodies_;  // `}` of a do loop's body -> its `{`
  LatchEdits out_;
};

}  // namespace

bool is_simd_call_name(const std::string& id) {
  return id.rfind("simd_", 0) == 0 || id.rfind("quad_", 0) == 0 || id.rfind("__metal_simd_", 0) == 0 ||
         id == "simdgroup_barrier";
}

LatchEdits simd_latch_edits(const std::vector<Token>& t, const SimdCallers& callers) {
  return Latches(t, callers).run();
}

}  // namespace metalcall::msl
