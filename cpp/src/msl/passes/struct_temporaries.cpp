// Struct temporaries assigned whole, through a named copy, for the CUDA target (see
// struct_temporaries.hpp).
#include "msl/passes/struct_temporaries.hpp"

#include <set>

#include "msl/analysis/call_graph.hpp"  // matching

namespace metalcall::msl {

StructAssignments struct_temporary_assignments(const std::vector<Token>& t,
                                               const std::function<bool(std::size_t)>& touched) {
  StructAssignments out;
  std::set<std::string> structs;
  for (std::size_t i = 0; i + 2 < t.size(); ++i)
    if ((t[i].is_identifier("struct") || t[i].is_identifier("class")) && t[i + 1].kind == TokenKind::identifier &&
        (t[i + 2].is("{") || t[i + 2].is(":")))
      structs.insert(t[i + 1].text);
  if (structs.empty()) return out;
  // The source's functions that return one of them by value: `S make(...)`.
  std::set<std::string> makers;
  for (std::size_t i = 1; i + 1 < t.size(); ++i)
    if (t[i].kind == TokenKind::identifier && t[i + 1].is("(") && structs.count(t[i - 1].text) &&
        !(i >= 2 && (t[i - 2].is(".") || t[i - 2].is("->"))))
      makers.insert(t[i].text);
  for (std::size_t eq = 2; eq + 2 < t.size(); ++eq) {
    if (!t[eq].is("=") || t[eq + 1].kind != TokenKind::identifier) continue;
    const std::string& name = t[eq + 1].text;
    // `S{...}`, `S(...)` or `make(...)` with make returning an S.
    const bool braced = structs.count(name) && t[eq + 2].is("{");
    const bool called = (structs.count(name) || makers.count(name)) && t[eq + 2].is("(");
    if (!braced && !called) continue;
    const std::size_t close = matching(t, eq + 2);
    if (close + 1 >= t.size() || !t[close + 1].is(";")) continue;
    // Back over the designator: name ([...] | .member | ->member)*.
    std::size_t s = eq;
    bool ok = true;
    while (ok) {
      const Token& p = t[s - 1];
      if (p.is("]")) {
        int depth = 0;
        std::size_t k = s - 1;
        for (; k > 0; --k) {
          if (t[k].is("]")) ++depth;
          else if (t[k].is("[") && --depth == 0) break;
        }
        s = k;
      } else if (p.kind == TokenKind::identifier && s >= 2 && (t[s - 2].is(".") || t[s - 2].is("->"))) {
        s -= 2;
      } else if (p.kind == TokenKind::identifier) {
        s -= 1;
        break;
      } else {
        ok = false;
      }
      if (s < 2) ok = false;
    }
    if (!ok || s == 0) continue;
    const Token& before = t[s - 1];
    if (!(before.is(";") || before.is("{") || before.is("}") || before.is(")") || before.is(":") ||
          before.is_identifier("else") || before.kind == TokenKind::directive))
      continue;
    if (before.is("}")) {  // a block's end, not a struct's (`struct A {...} a = A{...};` declares a)
      std::size_t open = s - 1;
      for (int depth = 0; open > 0; --open) {
        if (t[open].is("}")) ++depth;
        else if (t[open].is("{") && --depth == 0) break;
      }
      const Token& head = t[open > 0 ? open - 1 : 0];
      if (!(head.is(")") || head.is(";") || head.is("{") || head.is("}") || head.is_identifier("else") ||
            head.is_identifier("do")))
        continue;
    }
    // The tokens this rewrite writes at: the `=` and the `;` (text before the first token stays).
    if (touched(eq) || touched(close + 1)) continue;
    out.before[s] = "metal::mtl_rt::assign_whole(";
    out.replace[eq] = ",";
    out.before_end[close + 1] = ")";
  }
  return out;
}

}  // namespace metalcall::msl
