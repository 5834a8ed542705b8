// Designated initializers written positionally (designated_initializers.hpp).
#include "msl/passes/designated_initializers.hpp"

#include <map>
#include <set>
#include <string>

#include "msl/analysis/call_graph.hpp"

namespace metalcall::msl {

namespace {

struct Member {
  std::string name;
  bool has_default = false;  // `int a = 5;`, `int a{5};`
};

// Each `struct S { ... }` (or class) of the source: its data members in order. A struct with a
// base, a constructor or a member that cannot be read plainly is left out, and so is a name two
// structs have.
std::map<std::string, std::vector<Member>> plain_structs(const std::vector<Token>& t) {
  std::map<std::string, std::vector<Member>> out;
  std::set<std::string> seen, ambiguous;
  for (std::size_t i = 0; i + 2 < t.size(); ++i) {
    if (!(t[i].is_identifier("struct") || t[i].is_identifier("class")) || t[i + 1].kind != TokenKind::identifier ||
        !t[i + 2].is("{"))
      continue;
    const std::string name = t[i + 1].text;
    const std::size_t close = matching(t, i + 2);
    if (close >= t.size()) continue;
    std::vector<Member> members;
    bool plain = true;
    std::size_t s = i + 3;
    for (std::size_t j = s; j < close && plain; ++j) {
      if (t[j].is("[") && j + 1 < close && t[j + 1].is("[")) {  // attributes
        j = matching(t, j);
        continue;
      }
      if (t[j].is("{") || t[j].is("(")) {
        // a default member initialiser `{...}`, or a member function / constructor
        if (t[j].is("(")) plain = false;
        j = matching(t, j);
        continue;
      }
      if (t[j].is(":") || t[j].is_identifier("struct") || t[j].is_identifier("union") ||
          t[j].is_identifier("template") || t[j].is_identifier("using") || t[j].is_identifier("typedef") ||
          t[j].is_identifier("static") || t[j].is_identifier("operator"))
        plain = false;
      if (!t[j].is(";")) continue;
      // [s, j): one member declaration; its declarators split at top-level commas
      std::size_t d = s;
      int depth = 0;
      for (std::size_t k = s; k <= j && plain; ++k) {
        if (t[k].is("(") || t[k].is("[") || t[k].is("{") || t[k].is("<")) ++depth;
        else if (t[k].is(")") || t[k].is("]") || t[k].is("}") || t[k].is(">")) --depth;
        if (k < j && !(depth == 0 && t[k].is(","))) continue;
        Member m;
        for (std::size_t q = d; q < k; ++q) {
          if (t[q].is("=") || t[q].is("{")) {
            m.has_default = true;
            break;
          }
          if (t[q].is("[")) break;
          if (t[q].kind == TokenKind::identifier) m.name = t[q].text;
        }
        if (m.name.empty()) plain = false;
        members.push_back(m);
        d = k + 1;
      }
      s = j + 1;
    }
    if (seen.count(name)) ambiguous.insert(name);  // two structs of one name (namespaces): left alone
    seen.insert(name);
    if (plain && !members.empty()) out[name] = members;
  }
  for (const std::string& name : ambiguous) out.erase(name);
  return out;
}

// One round: the outermost lists (a list inside a rewritten one waits for the next round).
bool rewrite_outermost(std::vector<Token>& t, const std::map<std::string, std::vector<Member>>& structs) {
  std::vector<Token> out;
  std::size_t copied = 0;
  for (std::size_t i = 0; i + 4 < t.size(); ++i) {
    if (t[i].kind != TokenKind::identifier || !t[i + 1].is("{") || !t[i + 2].is(".") ||
        t[i + 3].kind != TokenKind::identifier || !t[i + 4].is("="))
      continue;
    const auto found = structs.find(t[i].text);
    if (found == structs.end() || (i > 0 && (t[i - 1].is("struct") || t[i - 1].is("class")))) continue;
    const std::vector<Member>& members = found->second;
    const std::size_t close = matching(t, i + 1);
    if (close >= t.size()) continue;
    // The items `.name = value`, each [value first, value end).
    std::vector<std::pair<std::size_t, std::pair<std::size_t, std::size_t>>> items;  // member, value range
    bool ok = true;
    std::size_t next_member = 0;
    for (std::size_t j = i + 2; j < close && ok;) {
      if (!t[j].is(".") || j + 2 >= close || t[j + 1].kind != TokenKind::identifier || !t[j + 2].is("=")) {
        ok = false;
        break;
      }
      std::size_t m = next_member;
      while (m < members.size() && members[m].name != t[j + 1].text) ++m;
      if (m == members.size()) {
        ok = false;
        break;
      }
      for (std::size_t skipped = next_member; skipped < m; ++skipped) ok = ok && !members[skipped].has_default;
      std::size_t e = j + 3;
      for (int depth = 0; e < close; ++e) {
        if (t[e].is("(") || t[e].is("[") || t[e].is("{")) ++depth;
        else if (t[e].is(")") || t[e].is("]") || t[e].is("}")) --depth;
        else if (depth == 0 && t[e].is(",")) break;
      }
      items.push_back({m, {j + 3, e}});
      next_member = m + 1;
      j = e < close ? e + 1 : e;
    }
    if (!ok || items.empty()) continue;
    out.insert(out.end(), t.begin() + copied, t.begin() + i + 2);  // S {
    std::size_t member = 0;
    for (std::size_t k = 0; k < items.size(); ++k) {
      const auto& [m, range] = items[k];
      const Token& at = t[range.first];
      for (; member < m; ++member) {  // a skipped member: {}
        out.push_back(Token{TokenKind::punct, "{", at.line, at.column});
        out.push_back(Token{TokenKind::punct, "}", at.line, at.column + 1});
        out.push_back(Token{TokenKind::punct, ",", at.line, at.column + 2});
      }
      out.insert(out.end(), t.begin() + range.first, t.begin() + range.second);
      if (k + 1 < items.size()) out.push_back(t[range.second]);  // its comma
      member = m + 1;
    }
    out.push_back(t[close]);
    copied = close + 1;
    i = close;
  }
  if (copied == 0) return false;
  out.insert(out.end(), t.begin() + copied, t.end());
  t = std::move(out);
  return true;
}

}  // namespace

void positional_designated_initializers(std::vector<Token>& t) {
  const std::map<std::string, std::vector<Member>> structs = plain_structs(t);
  for (int round = 0; round < 16 && !structs.empty() && rewrite_outermost(t, structs); ++round) {}
}

}  // namespace metalcall::msl
