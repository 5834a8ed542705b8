// The source's own names for types and where each holds (type_scopes.hpp).
#include "msl/passes/type_scopes.hpp"

#include "msl/analysis/call_graph.hpp"  // matching

namespace metalcall::msl {

namespace {

// The `>` closing the template parameter list opening at `<` t[open] (brackets skipped; `>>`
// closes two), or t.size().
std::size_t angle_close(const std::vector<Token>& t, std::size_t open) {
  int depth = 0;
  for (std::size_t k = open; k < t.size(); ++k) {
    if (t[k].is("(") || t[k].is("[") || t[k].is("{")) {
      k = matching(t, k);
      if (k >= t.size()) return t.size();
    } else if (t[k].is("<")) {
      ++depth;
    } else if (t[k].is(">") || t[k].is(">>")) {
      depth -= t[k].is(">") ? 1 : 2;
      if (depth <= 0) return depth == 0 ? k : t.size();
    } else if (t[k].is(";") || t[k].is(")") || t[k].is("]") || t[k].is("}")) {
      return t.size();
    }
  }
  return t.size();
}

// The end of the declaration from t[b]: past the body `{...}` it opens, or at its `;`.
std::size_t declaration_end(const std::vector<Token>& t, std::size_t b) {
  for (std::size_t k = b; k < t.size(); ++k) {
    if (t[k].is("{")) {
      const std::size_t e = matching(t, k);
      return e < t.size() ? e + 1 : t.size();
    }
    if (t[k].is("(") || t[k].is("[")) {
      k = matching(t, k);
      if (k >= t.size()) return t.size();
    } else if (t[k].is(";") || t[k].is("}")) {
      return k;
    }
  }
  return t.size();
}

}  // namespace

TypeScopes::TypeScopes(const std::vector<Token>& t) : t_(t) {
  // The block enclosing each token: the `}` ending it (t.size() at program scope).
  std::vector<std::size_t> block_end(t.size(), t.size()), inner(t.size(), t.size()), open;
  std::vector<std::size_t> close_of(t.size(), t.size());
  for (std::size_t k = 0; k < t.size(); ++k) {
    if (!open.empty()) inner[k] = open.back();
    if (t[k].is("{")) {
      open.push_back(k);
    } else if (t[k].is("}") && !open.empty()) {
      close_of[open.back()] = k;
      open.pop_back();
    }
  }
  for (std::size_t k = 0; k < t.size(); ++k)
    if (inner[k] < t.size()) block_end[k] = close_of[inner[k]];
  for (std::size_t k = 0; k + 2 < t.size(); ++k) {
    if (t[k].is_identifier("template") && t[k + 1].is("<")) {
      const std::size_t close = angle_close(t, k + 1);
      if (close >= t.size()) continue;
      const std::size_t end = declaration_end(t, close + 1);
      // `typename U`, `class U = float`; not `typename... Us` (a pack) nor `template <...> class X`.
      std::size_t item = k + 2;
      for (std::size_t j = k + 2; j <= close; ++j) {
        if (t[j].is("<")) {
          j = angle_close(t, j);
          if (j >= close) break;
          continue;
        }
        if (t[j].is("(") || t[j].is("[")) {
          j = matching(t, j);
          continue;
        }
        if (j < close && !t[j].is(",")) continue;
        if (item + 1 < j && (t[item].is_identifier("typename") || t[item].is_identifier("class")) &&
            t[item + 1].kind == TokenKind::identifier)
          scopes_.push_back({close + 1, end, t[item + 1].text, ""});
        item = j + 1;
      }
      continue;
    }
    // `typedef unsigned int idx_t;`, `using acc_t = U;`: type words only (no `::`, `<`, `*`).
    if (t[k].is_identifier("typedef")) {
      std::size_t semi = k + 1;
      while (semi < t.size() && t[semi].kind == TokenKind::identifier) ++semi;
      if (semi >= t.size() || !t[semi].is(";") || semi < k + 3) continue;
      scopes_.push_back({semi, block_end[k], t[semi - 1].text, t[semi - 2].text});
    } else if (t[k].is_identifier("using") && t[k + 1].kind == TokenKind::identifier && t[k + 2].is("=")) {
      std::size_t semi = k + 3;
      while (semi < t.size() && t[semi].kind == TokenKind::identifier) ++semi;
      if (semi >= t.size() || !t[semi].is(";") || semi < k + 4) continue;
      scopes_.push_back({semi, block_end[k], t[k + 1].text, t[semi - 1].text});
    }
  }
  for (std::size_t s = 0; s < scopes_.size(); ++s) by_name_[scopes_[s].name].push_back(static_cast<int>(s));
}

int TypeScopes::find(const std::string& name, std::size_t i) const {
  const auto it = by_name_.find(name);
  if (it == by_name_.end()) return -1;
  int best = -1;
  for (const int s : it->second)
    if (scopes_[s].begin <= i && i < scopes_[s].end && (best < 0 || scopes_[s].begin >= scopes_[best].begin)) best = s;
  return best;
}

int TypeScopes::scope_at(std::size_t i) const {
  return i < t_.size() && t_[i].kind == TokenKind::identifier ? find(t_[i].text, i) : -1;
}

bool TypeScopes::may_be(int id, bool (*accepts)(const std::string&), int depth) const {
  if (id < 0 || depth > 8) return false;
  const Scope& s = scopes_[id];
  if (s.target.empty()) return true;
  if (accepts(s.target)) return true;
  return may_be(find(s.target, s.begin > 0 ? s.begin - 1 : 0), accepts, depth + 1);
}

bool TypeScopes::may_be(std::size_t i, bool (*accepts)(const std::string&)) const {
  return may_be(scope_at(i), accepts, 0);
}

}  // namespace metalcall::msl
