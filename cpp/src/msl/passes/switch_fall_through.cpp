// Switches whose cases fall through, written as guarded blocks for the CUDA target (see
// switch_fall_through.hpp).
#include "msl/passes/switch_fall_through.hpp"

#include <cctype>
#include <set>
#include <utility>

#include "msl/analysis/call_graph.hpp"  // matching
#include "msl/analysis/statements.hpp"

namespace metalcall::msl {

namespace {

using statements::is_control_keyword;
using statements::is_loop_keyword;

// An integer literal as the target reads it too (no `h`, `f` or `.`: those a translation rewrites).
bool integer_literal(const std::string& s) {
  if (s.empty() || !std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  const bool hex = s.size() > 1 && (s[1] == 'x' || s[1] == 'X');
  for (char c : s)
    if (!(std::isdigit(static_cast<unsigned char>(c)) || c == 'u' || c == 'U' || c == 'l' || c == 'L' || c == '\'' ||
          (hex && std::isxdigit(static_cast<unsigned char>(c))) || (hex && (c == 'x' || c == 'X'))))
      return false;
  return true;
}

struct Label {
  std::size_t first = 0, colon = 0;  // `case`/`default`, its `:`
  bool is_default = false;
  std::string value;  // a case's constant, as written
};

struct Case {
  std::vector<Label> labels;
  std::vector<std::pair<std::size_t, std::size_t>> statements;  // first and last tokens
};

class Rewrite {
 public:
  Rewrite(const std::vector<Token>& t, const SimdCallers& callers, const std::function<bool(const std::string&)>& renamed,
          const std::function<bool(std::size_t)>& taken)
      : t_(t), callers_(callers), renamed_(renamed), taken_(taken) {}

  std::map<std::size_t, std::string> run() {
    for (std::size_t i = 0; i + 1 < t_.size(); ++i)
      if (t_[i].is_identifier("switch") && t_[i + 1].is("(")) rewrite(i);
    return std::move(out_);
  }

 private:
  // The last token of the statement at i, or kNone.
  std::size_t end_of(std::size_t i) const { return statement_end(t_, i); }

  // The label at j (`case` or `default`) up to its `:`, or false where it is not one this pass writes.
  bool label(std::size_t j, std::size_t close, Label& l) const {
    l.first = j;
    l.is_default = t_[j].is_identifier("default");
    std::size_t depth = 0, pending = 0, k = j + 1;
    for (; k < close; ++k) {
      const Token& x = t_[k];
      if (x.is("(")) ++depth;
      else if (x.is(")") && depth > 0) --depth;
      else if (x.is("?")) ++pending;
      else if (depth == 0 && x.is(":")) {
        if (pending == 0) break;
        --pending;
      }
      if (l.is_default) return false;  // `default` then anything but its `:`
      const bool ok = (x.kind == TokenKind::number && integer_literal(x.text)) || x.kind == TokenKind::character ||
                      (x.kind == TokenKind::identifier && !renamed_(x.text)) ||
                      (x.kind == TokenKind::punct && !x.is("...") && !x.is("{") && !x.is("}") && !x.is(";") &&
                       !x.is("[") && !x.is("]"));
      if (!ok) return false;
      l.value += (l.value.empty() ? "" : " ") + x.text;
    }
    if (k >= close || (!l.is_default && l.value.empty())) return false;
    l.colon = k;
    return true;
  }

  // Whether a statement at a case's top level may stand in a block of its own: not a
  // declaration (which the case after it could use).
  bool not_a_declaration(std::size_t f) const {
    const Token& k = t_[f];
    if (k.is("{") || k.is(";") || is_control_keyword(k) || k.is_identifier("break") || k.is_identifier("continue")) return true;
    if (k.is("[") && f + 1 < t_.size() && t_[f + 1].is("[")) return true;  // [[fallthrough]];
    if (k.is("++") || k.is("--") || k.is("*") || k.is("(")) return true;
    if (k.kind != TokenKind::identifier || f + 1 >= t_.size()) return false;
    static const auto& after_name = *new std::set<std::string>{"=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=",
                                                               "<<=", ">>=", "(", "[", ".", "->", "++", "--"};
    return after_name.count(t_[f + 1].text) > 0;
  }

  // The `break` or `continue` that ends the statement [f, e] (itself, or its block's last
  // statement's), or kNone.
  std::size_t final_exit(std::size_t f, std::size_t e) const {
    if ((t_[f].is_identifier("break") || t_[f].is_identifier("continue")) && f + 1 == e) return f;
    if (!t_[f].is("{") || e != matching(t_, f)) return statements::kNone;
    std::size_t last = statements::kNone, last_end = statements::kNone;
    for (std::size_t j = f + 1; j < e;) {
      const std::size_t end = end_of(j);
      if (end == statements::kNone || end >= e) return statements::kNone;
      last = j;
      last_end = end;
      j = end + 1;
    }
    return last == statements::kNone ? statements::kNone : final_exit(last, last_end);
  }

  // Whether [b, e] holds what the rewrite cannot keep: return, goto, a directive, a label of this
  // switch below its top level, or a `break`/`continue` of it or its loop not in `finals`.
  // ours: labels met are this switch's (not a nested switch's); top: [b, e] is its body.
  bool blocked(std::size_t b, std::size_t e, const std::set<std::size_t>& finals, bool breaks, bool continues,
               bool ours, bool top) const {
    std::size_t depth = 0;
    for (std::size_t j = b; j <= e; ++j) {
      const Token& k = t_[j];
      if (k.kind == TokenKind::directive || k.is_identifier("return") || k.is_identifier("goto")) return true;
      if (k.is("{")) ++depth;
      if (k.is("}") && depth > 0) --depth;
      if ((k.is_identifier("case") || k.is_identifier("default")) && ours && !(top && depth == 0)) return true;
      if (is_loop_keyword(k) || k.is_identifier("switch")) {  // its breaks (and a loop's continues) are its own
        const std::size_t end = end_of(j);
        if (end == statements::kNone || end > e) return true;
        const bool nested_switch = k.is_identifier("switch");
        if (blocked(j + 1, end, finals, false, continues && nested_switch, ours && !nested_switch, false)) return true;
        j = end;
        continue;
      }
      if ((k.is_identifier("break") && breaks) || (k.is_identifier("continue") && continues))
        if (!finals.count(j)) return true;
    }
    return false;
  }

  void rewrite(std::size_t sw) {
    const std::size_t close_paren = matching(t_, sw + 1);
    if (close_paren + 1 >= t_.size() || !t_[close_paren + 1].is("{")) return;
    for (std::size_t j = sw + 2; j < close_paren; ++j)
      if (t_[j].is(";") || t_[j].is("{")) return;  // an init-statement, a braced or lambda condition
    const std::size_t open = close_paren + 1, close = matching(t_, open);
    if (close >= t_.size() || !callers_.mentions(open, close)) return;
    // The cases: labels, then the statements up to the next label.
    std::vector<Case> cases;
    std::size_t declaring = 0;  // 1 + the last case with a declaration at its top level
    bool after_label = false;
    for (std::size_t j = open + 1; j < close;) {
      if (t_[j].is_identifier("case") || t_[j].is_identifier("default")) {
        Label l;
        if (!label(j, close, l)) return;
        if (!after_label) cases.emplace_back();
        cases.back().labels.push_back(l);
        after_label = true;
        j = l.colon + 1;
        continue;
      }
      if (cases.empty()) return;
      if (!not_a_declaration(j)) declaring = cases.size();  // fine in the last case: nothing follows its block
      const std::size_t end = end_of(j);
      if (end == statements::kNone || end >= close) return;
      cases.back().statements.emplace_back(j, end);
      after_label = false;
      j = end + 1;
    }
    if (cases.empty() || (declaring != 0 && declaring != cases.size())) return;
    // The breaks and continues that end a case, and whether a case but the last falls through.
    std::set<std::size_t> finals;
    bool falls = false, continues = false;
    for (std::size_t c = 0; c < cases.size(); ++c) {
      const auto& s = cases[c].statements;
      const std::size_t exit = s.empty() ? statements::kNone : final_exit(s.back().first, s.back().second);
      if (exit != statements::kNone) {
        finals.insert(exit);
        continues = continues || t_[exit].is_identifier("continue");
      } else if (c + 1 < cases.size()) {
        falls = true;
      }
    }
    // A case that lanes reach on paths of their own: several labels, or `default` (every value
    // no label names), with code that may call a SIMD-group function.
    bool shared = false;
    for (const Case& c : cases) {
      const bool paths = c.labels.size() > 1 || c.labels.front().is_default;
      shared = shared || (paths && !c.statements.empty() &&
                          callers_.mentions(c.statements.front().first, c.statements.back().second + 1));
    }
    if (!(falls || shared) || blocked(open + 1, close - 1, finals, true, true, true, true)) return;
    // `[[fallthrough]]` (`[[clang::fallthrough]]`) belongs in a switch: dropped with its labels.
    std::vector<std::size_t> attributes;
    for (std::size_t j = open + 1; j + 4 < close; ++j) {
      if (t_[j].is_identifier("switch")) {  // a nested switch keeps its own
        const std::size_t end = end_of(j);
        if (end == statements::kNone) return;
        j = end;
        continue;
      }
      if (!t_[j].is("[") || !t_[j + 1].is("[")) continue;
      std::size_t k = j + 2;
      if (k + 2 < close && t_[k].is_identifier("clang") && t_[k + 1].is("::")) k += 2;
      if (!t_[k].is_identifier("fallthrough") || !t_[k + 1].is("]") || !t_[k + 2].is("]")) continue;
      for (std::size_t a = j; a <= k + 2; ++a) attributes.push_back(a);
      j = k + 2;
    }
    std::vector<std::size_t> edited = {sw, open, close};
    edited.insert(edited.end(), attributes.begin(), attributes.end());
    edited.insert(edited.end(), finals.begin(), finals.end());
    for (const Case& c : cases)
      for (const Label& l : c.labels)
        for (std::size_t j = l.first; j <= l.colon; ++j) edited.push_back(j);
    for (std::size_t j : edited)
      if (taken_(j)) return;

    const std::string n = std::to_string(sw);
    const std::string lanes = "mtl_switch_lanes_" + n, value = "mtl_switch_value_" + n,
                      selector = "mtl_switch_case_" + n, flag = "mtl_switch_continue_" + n;
    const std::string past = std::to_string(cases.size()) + "u";
    std::string select, fallback = past;
    for (std::size_t c = 0; c < cases.size(); ++c)
      for (const Label& l : cases[c].labels) {
        if (l.is_default) fallback = std::to_string(c) + "u";
        else select += value + " == (" + l.value + ") ? " + std::to_string(c) + "u : ";
      }
    out_[sw] = "{ const unsigned " + lanes + " = metal::mtl_rt::branch_lanes(); const auto " + value + " = ";
    out_[open] = "; unsigned " + selector + " = " + select + fallback + ";" + (continues ? " bool " + flag + " = false;" : "");
    for (std::size_t c = 0; c < cases.size(); ++c) {
      const auto& labels = cases[c].labels;
      for (const Label& l : labels)
        for (std::size_t j = l.first; j <= l.colon; ++j) out_[j] = "";
      if (c > 0) out_[labels.front().first] = " } metal::mtl_rt::rejoin(" + lanes + "); ";
      out_[labels.back().colon] = " if (" + selector + " <= " + std::to_string(c) + "u) { ";
    }
    for (std::size_t a : attributes) out_[a] = "";
    for (std::size_t f : finals)
      out_[f] = t_[f].is_identifier("break") ? selector + " = " + past
                                             : "(" + flag + " = true, " + selector + " = " + past + ")";
    out_[close] = " }" + (continues ? " if (" + flag + ") continue;" : std::string()) + " }";
  }

  const std::vector<Token>& t_;
  const SimdCallers& callers_;
  const std::function<bool(const std::string&)>& renamed_;
  const std::function<bool(std::size_t)>& taken_;
  std::map<std::size_t, std::string> out_;
};

}  // namespace

std::map<std::size_t, std::string> switch_fall_through_edits(const std::vector<Token>& t, const SimdCallers& callers,
                                                             const std::function<bool(const std::string&)>& renamed_type,
                                                             const std::function<bool(std::size_t)>& taken) {
  return Rewrite(t, callers, renamed_type, taken).run();
}

}  // namespace metalcall::msl
