// Deducing a template kernel's arguments from an instantiation's parameter list
// (see template_deduction.hpp).
#include "msl/parse/template_deduction.hpp"

namespace metalcall::msl {

namespace {

bool opens(const Token& tok) { return tok.is("(") || tok.is("[") || tok.is("{") || tok.is("<"); }
bool closes(const Token& tok) { return tok.is(")") || tok.is("]") || tok.is("}") || tok.is(">"); }

// True when tokens [b, e) nest evenly: a whole template argument, not part of one.
bool balanced(const std::vector<Token>& t, const std::vector<std::size_t>& tokens, std::size_t b, std::size_t e) {
  int depth = 0;
  for (std::size_t k = b; k < e; ++k) {
    if (opens(t[tokens[k]])) ++depth;
    else if (closes(t[tokens[k]]) && --depth < 0) return false;
    else if (t[tokens[k]].is(">>") && (depth -= 2) < 0) return false;
  }
  return depth == 0;
}

class Matcher {
 public:
  Matcher(const std::vector<Token>& t, const std::vector<std::string>& names, std::vector<std::vector<std::size_t>>& bound)
      : t_(t), names_(names), bound_(bound) {}

  // Pattern tokens p[pi...] against given tokens g[gi...]; bindings are undone on failure.
  bool match(const std::vector<std::size_t>& p, std::size_t pi, const std::vector<std::size_t>& g, std::size_t gi) {
    if (pi == p.size()) return gi == g.size();
    const int name = name_index(t_[p[pi]]);
    if (name < 0) return gi < g.size() && t_[p[pi]].text == t_[g[gi]].text && match(p, pi + 1, g, gi + 1);
    std::vector<std::size_t>& slot = bound_[static_cast<std::size_t>(name)];
    if (!slot.empty()) {  // bound by an earlier parameter: the same tokens again
      if (g.size() - gi < slot.size()) return false;
      for (std::size_t k = 0; k < slot.size(); ++k)
        if (t_[slot[k]].text != t_[g[gi + k]].text) return false;
      return match(p, pi + 1, g, gi + slot.size());
    }
    for (std::size_t e = gi + 1; e <= g.size(); ++e) {
      if (!balanced(t_, g, gi, e)) continue;
      slot.assign(g.begin() + static_cast<std::ptrdiff_t>(gi), g.begin() + static_cast<std::ptrdiff_t>(e));
      if (match(p, pi + 1, g, e)) return true;
    }
    slot.clear();
    return false;
  }

 private:
  const std::vector<Token>& t_;
  const std::vector<std::string>& names_;
  std::vector<std::vector<std::size_t>>& bound_;

  int name_index(const Token& tok) const {
    if (tok.kind != TokenKind::identifier) return -1;
    for (std::size_t n = 0; n < names_.size(); ++n)
      if (names_[n] == tok.text) return static_cast<int>(n);
    return -1;
  }
};

}  // namespace

std::vector<std::vector<std::size_t>> parameter_types(const std::vector<Token>& t, std::size_t open) {
  std::vector<std::vector<std::size_t>> out(1);
  int depth = 0;
  for (std::size_t j = open; j < t.size(); ++j) {
    const Token& tok = t[j];
    if (tok.is("[") && j + 1 < t.size() && t[j + 1].is("[")) {  // [[attribute]]: skipped
      int d = 0;
      for (; j < t.size(); ++j) {
        if (t[j].is("[")) ++d;
        else if (t[j].is("]") && --d == 0) break;
      }
      continue;
    }
    if (opens(tok)) {
      if (depth++ == 0) continue;
    } else if (closes(tok)) {
      if (--depth == 0) break;
    } else if (tok.is(">>")) {
      depth -= 2;
    } else if (depth == 1 && tok.is(",")) {
      out.emplace_back();
      continue;
    }
    out.back().push_back(j);
  }
  if (out.size() == 1 && out[0].empty()) out.clear();  // f()
  for (auto& p : out) {
    while (p.size() >= 3 && t[p.back()].is("]")) {  // `int64_t strides[3]`: the extent goes
      std::size_t b = p.size() - 1;
      while (b > 0 && !t[p[b]].is("[")) --b;
      p.resize(b);
    }
    if (p.size() >= 2 && t[p.back()].kind == TokenKind::identifier) p.pop_back();  // the name
  }
  return out;
}

bool deduce_template_arguments(const std::vector<Token>& t, const std::vector<std::vector<std::size_t>>& pattern,
                               const std::vector<std::vector<std::size_t>>& given, const std::vector<std::string>& names,
                               std::vector<std::vector<std::size_t>>& deduced) {
  deduced.assign(names.size(), {});
  if (pattern.size() != given.size()) return false;
  Matcher m(t, names, deduced);
  for (std::size_t n = 0; n < pattern.size(); ++n)
    if (!m.match(pattern[n], 0, given[n], 0)) return false;
  return true;
}

}  // namespace metalcall::msl
