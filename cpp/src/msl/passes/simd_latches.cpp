// Loop latches for the CPU's SIMD-group rendezvous (see simd_latches.hpp).
#include "msl/passes/simd_latches.hpp"

#include <set>

#include "msl/analysis/call_graph.hpp"  // matching

namespace metalcall::msl {

namespace {

// The names whose call is a SIMD-group rendezvous on the CPU (SIMD-group matrices are used by
// the whole SIMD-group, so their loops need none).
bool is_simd_call_name(const std::string& id) {
  return id.rfind("simd_", 0) == 0 || id.rfind("quad_", 0) == 0 || id.rfind("__metal_simd_", 0) == 0 ||
         id == "simdgroup_barrier";
}

bool is_control(const Token& k) {
  return k.is_identifier("if") || k.is_identifier("for") || k.is_identifier("while") || k.is_identifier("do") ||
         k.is_identifier("switch") || k.is_identifier("return") || k.is_identifier("sizeof");
}

class Latches {
 public:
  explicit Latches(const std::vector<Token>& t) : t_(t) {
    // Functions of the source (`name (...) … {`) that may reach a SIMD-group call, by name, to a fixed point.
    std::vector<std::pair<std::string, std::size_t>> bodies;
    for (std::size_t i = 1; i + 1 < t_.size(); ++i) {
      if (!t_[i].is("(") || t_[i - 1].kind != TokenKind::identifier || is_control(t_[i - 1])) continue;
      std::size_t j = matching(t_, i) + 1;
      while (j < t_.size() && t_[j].kind == TokenKind::identifier) ++j;  // const, thread, noexcept …
      if (j < t_.size() && t_[j].is("{")) bodies.emplace_back(t_[i - 1].text, j);
    }
    for (std::size_t k = 1; k < t_.size(); ++k)
      if (t_[k].is("{") && t_[k - 1].is_identifier("do")) do_bodies_[matching(t_, k)] = k;
    for (bool changed = true; changed;) {
      changed = false;
      for (const auto& [name, open] : bodies) {
        if (functions_.count(name)) continue;
        if (mentions_simd(open, matching(t_, open))) functions_.insert(name), changed = true;
      }
    }
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
  bool mentions_simd(std::size_t b, std::size_t e) const {
    for (std::size_t j = b; j < e && j < t_.size(); ++j) {
      const Token& k = t_[j];
      if (k.kind != TokenKind::identifier) continue;
      if (is_simd_call_name(k.text) || (functions_.count(k.text) && j + 1 < t_.size() && t_[j + 1].is("(")))
        return true;
    }
    return false;
  }

  // The last token of the statement starting at i.
  std::size_t statement_end(std::size_t i) const {
    if (i >= t_.size()) return t_.size();
    const Token& k = t_[i];
    if (k.is("{")) return matching(t_, i);
    if (k.is_identifier("do")) {
      std::size_t e = statement_end(i + 1) + 2;  // the body; then `while (...) ;`
      if (e < t_.size() && t_[e].is("(")) e = matching(t_, e) + 1;
      return e;
    }
    if (k.is_identifier("if") || k.is_identifier("for") || k.is_identifier("while") || k.is_identifier("switch")) {
      std::size_t open = i + 1;
      if (open < t_.size() && t_[open].is_identifier("constexpr")) ++open;
      if (open >= t_.size() || !t_[open].is("(")) return t_.size();
      std::size_t e = statement_end(matching(t_, open) + 1);
      if (k.is_identifier("if") && e + 1 < t_.size() && t_[e + 1].is_identifier("else")) e = statement_end(e + 2);
      return e;
    }
    int depth = 0;
    for (std::size_t j = i; j < t_.size(); ++j) {
      if (t_[j].is("(") || t_[j].is("[") || t_[j].is("{")) ++depth;
      else if (t_[j].is(")") || t_[j].is("]") || t_[j].is("}")) --depth;
      else if (depth == 0 && t_[j].is(";")) return j;
    }
    return t_.size();
  }

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
    const std::size_t last = statement_end(close + 1);
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
      last = statement_end(body_begin);
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
  std::set<std::string> functions_;
  std::map<std::size_t, std::size_t> do_bodies_;  // `}` of a do loop's body -> its `{`
  LatchEdits out_;
};

}  // namespace

LatchEdits simd_latch_edits(const std::vector<Token>& t) { return Latches(t).run(); }

}  // namespace metalcall::msl
