// Loop nests of SIMD-group matrix products, for the CUDA target (see product_nests.hpp).
#include "msl/product_nests.hpp"

#include <set>

#include "msl/accumulator_elements.hpp"
#include "msl/call_graph.hpp"

namespace metalcall::msl {

namespace {

enum Role { kRow = 0, kColumn = 1, kReduction = 2 };

// `for ( T v = begin ; v < end ; ++v )`: the indices of its parts.
struct Loop {
  std::size_t keyword, open, var, begin_end /* the first ';' */, less, end_end /* the second ';' */, close;
};

bool is_pragma(const Token& k) {
  if (k.kind != TokenKind::directive) return false;
  const std::size_t p = k.text.find_first_not_of("# \t");
  return p != std::string::npos && k.text.compare(p, 6, "pragma") == 0;
}

// The first `;` at bracket depth 0 in [i, e), or e.
std::size_t semicolon(const std::vector<Token>& t, std::size_t i, std::size_t e) {
  int depth = 0;
  for (; i < e; ++i) {
    if (t[i].is("(") || t[i].is("[") || t[i].is("{")) ++depth;
    else if (t[i].is(")") || t[i].is("]") || t[i].is("}")) --depth;
    else if (t[i].is(";") && depth == 0) return i;
  }
  return e;
}

bool parse_loop(const std::vector<Token>& t, std::size_t i, Loop& loop) {
  if (i + 1 >= t.size() || !t[i].is_identifier("for") || !t[i + 1].is("(")) return false;
  loop.keyword = i;
  loop.open = i + 1;
  loop.close = matching(t, i + 1);
  if (loop.close >= t.size()) return false;
  // The type: identifiers and `::`, then the variable and `=`.
  std::size_t k = i + 2;
  while (k < loop.close && (t[k].kind == TokenKind::identifier || t[k].is("::"))) ++k;
  if (k - (i + 2) < 2 || !t[k].is("=") || t[k - 1].kind != TokenKind::identifier) return false;
  loop.var = k - 1;
  loop.begin_end = semicolon(t, k + 1, loop.close);
  if (loop.begin_end == loop.close || loop.begin_end == k + 1) return false;
  const std::string& v = t[loop.var].text;
  const std::size_t c = loop.begin_end + 1;
  if (c + 2 >= loop.close || !t[c].is_identifier(v.c_str()) || !t[c + 1].is("<")) return false;
  loop.less = c + 1;
  loop.end_end = semicolon(t, c + 2, loop.close);
  if (loop.end_end == loop.close || loop.end_end == c + 2) return false;
  // The step: ++v, v++ or v += 1.
  const std::size_t s = loop.end_end + 1, n = loop.close - s;
  if (n == 2) return (t[s].is("++") && t[s + 1].is_identifier(v.c_str())) || (t[s].is_identifier(v.c_str()) && t[s + 1].is("++"));
  return n == 3 && t[s].is_identifier(v.c_str()) && t[s + 1].is("+=") && t[s + 2].is("1");
}

// Whether [b, e) is an expression that calls nothing (but sizeof), changes nothing and
// names none of `banned`; `named` gets the identifiers it names.
bool plain_expression(const std::vector<Token>& t, std::size_t b, std::size_t e, const std::set<std::string>& banned,
                      std::set<std::string>* named = nullptr) {
  static const auto& changes =
      *new std::set<std::string>{"=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>=", "++", "--", ","};
  if (b >= e) return false;
  for (std::size_t i = b; i < e; ++i) {
    const Token& k = t[i];
    if (k.kind == TokenKind::directive || k.kind == TokenKind::string || k.kind == TokenKind::character) return false;
    if (k.kind == TokenKind::punct && (changes.count(k.text) || k.is("{") || k.is("}") || k.is(";"))) return false;
    if (k.kind != TokenKind::identifier) continue;
    if (i + 1 < e && t[i + 1].is("(") && !k.is("sizeof")) return false;  // a call
    if (banned.count(k.text)) return false;
    if (named) named->insert(k.text);
  }
  return true;
}

}  // namespace

std::map<std::size_t, std::string> product_nest_edits(const std::vector<Token>& t,
                                                     const std::function<bool(std::size_t)>& touched) {
  std::map<std::size_t, std::string> edits;
  for (std::size_t first = 0; first < t.size(); ++first) {
    // The loops, each the whole body of the one before (braces and #pragma lines between).
    std::vector<Loop> loops;
    std::vector<std::size_t> between;  // braces and pragmas between the loops
    std::size_t pos = first, braces = 0;
    Loop loop;
    while (loops.size() < 3 && parse_loop(t, pos, loop)) {
      loops.push_back(loop);
      pos = loop.close + 1;
      while (pos < t.size() && (is_pragma(t[pos]) || t[pos].is("{"))) {
        if (t[pos].is("{")) ++braces;
        between.push_back(pos++);
      }
    }
    if (loops.empty()) continue;
    // The body: simdgroup_multiply_accumulate(X[..], a, b, X[..]);
    std::size_t call = pos;
    if (call + 2 < t.size() && t[call].is_identifier("metal") && t[call + 1].is("::")) call += 2;
    if (call + 1 >= t.size() || !t[call].is_identifier("simdgroup_multiply_accumulate") || !t[call + 1].is("(")) continue;
    std::size_t args[5];
    args[0] = call + 2;
    bool four = true;
    for (int a = 0; a < 4 && four; ++a) {
      const std::size_t end = argument_end(t, args[a]);
      if (end >= t.size() || end == args[a] || (a < 3 ? !t[end].is(",") : !t[end].is(")"))) four = false;
      args[a + 1] = end + 1;
    }
    if (!four) continue;
    const std::size_t x_end = args[1] - 1, a_end = args[2] - 1, b_end = args[3] - 1, close = args[4] - 1;
    if (!is_element(t, args[0], x_end) || !same_tokens(t, args[0], x_end, args[3], close)) continue;
    std::size_t last = close + 1;  // the `;`, then the braces that close
    if (last >= t.size() || !t[last].is(";")) continue;
    std::vector<std::size_t> closing;
    bool closed = true;
    for (std::size_t k = 0; k < braces && closed; ++k) {
      if (last + 1 + k < t.size() && t[last + 1 + k].is("}")) closing.push_back(last + 1 + k);
      else closed = false;
    }
    if (!closed) continue;
    const std::size_t end = closing.empty() ? last : closing.back();

    // Roles: subscripts of X (a whole subscript each), names in a and in b.
    std::set<std::string> vars;
    for (const Loop& l : loops) vars.insert(t[l.var].text);
    if (vars.size() != loops.size()) continue;
    const std::string& array = t[args[0]].text;
    std::set<std::string> banned = vars;
    banned.insert(array);
    bool ok = true;
    for (const Loop& l : loops)
      ok = ok && plain_expression(t, l.var + 2, l.begin_end, banned) && plain_expression(t, l.less + 1, l.end_end, banned);
    std::map<std::string, int> in_x;  // a loop variable → how many subscripts of X it is
    for (std::size_t s = args[0] + 1; ok && s < x_end; s = matching(t, s) + 1) {
      const std::size_t e = matching(t, s);
      if (e == s + 2 && vars.count(t[s + 1].text)) ++in_x[t[s + 1].text];
      else ok = plain_expression(t, s + 1, e, vars);
    }
    std::set<std::string> in_a, in_b, no_array{array};
    ok = ok && plain_expression(t, args[1], a_end, no_array, &in_a) && plain_expression(t, args[2], b_end, no_array, &in_b);
    if (!ok) continue;
    std::vector<int> roles;
    int count[3] = {0, 0, 0};
    for (const Loop& l : loops) {
      const std::string& v = t[l.var].text;
      const int x = in_x.count(v) ? in_x[v] : 0;
      const bool a = in_a.count(v) != 0, b = in_b.count(v) != 0;
      int role = -1;
      if (x == 1 && a && !b) role = kRow;
      else if (x == 1 && b && !a) role = kColumn;
      else if (x == 0 && a && b) role = kReduction;
      if (role < 0) break;
      roles.push_back(role);
      ++count[role];
    }
    if (roles.size() != loops.size() || count[kRow] != 1 || count[kColumn] > 1 || count[kReduction] > 1) continue;
    bool untouched = true;
    for (std::size_t k = first; k <= end && untouched; ++k) untouched = !touched(k);
    if (!untouched) continue;

    // The edits. Each loop `for ( T v = begin ; v < end ; ++v )` becomes the declarations
    // `T v = begin ; const auto mtl_nest_endN = end ;` inside one block; the call takes
    // their ranges (the roles missing from the nest get one-element ranges) and three
    // lambdas of the loop variables, in the loops' order.
    std::string ranges, params;
    int missing[3] = {1, 1, 1};
    for (std::size_t q = 0; q < loops.size(); ++q) {
      const Loop& l = loops[q];
      const std::string& v = t[l.var].text, e = "mtl_nest_end" + std::to_string(q);
      edits[l.keyword] = q == 0 ? "{" : "";
      edits[l.open] = "";
      edits[l.begin_end + 1] = "";
      edits[l.less] = "const auto " + e + " =";
      for (std::size_t k = l.end_end + 1; k <= l.close; ++k) edits[k] = "";
      ranges += "metal::mtl_sgm::nest_range(" + v + ", " + e + "), ";
      params += std::string(q ? ", " : "") + "decltype(" + v + ") " + v;
      missing[roles[q]] = 0;
    }
    for (int r = 0; r < 3; ++r)
      if (missing[r]) {
        roles.push_back(r);
        ranges += "metal::mtl_sgm::nest_range(0, 1), ";
        params += ", int";
      }
    for (std::size_t k : between) edits[k] = "";
    for (std::size_t k : closing) edits[k] = "";
    for (std::size_t k = first; k-- > 0 && is_pragma(t[k]);) edits[k] = "";  // it would apply to no loop
    const std::string lambda = "[&](" + params + ") -> decltype(auto) { return ";
    for (std::size_t k = pos; k <= call + 1; ++k) edits[k] = "";
    edits[pos] = "metal::mtl_sgm::product_nest<" + std::to_string(roles[0]) + ", " + std::to_string(roles[1]) + ", " +
                 std::to_string(roles[2]) + ">(" + ranges + lambda;
    edits[x_end] = "; }, " + lambda;
    edits[a_end] = "; }, " + lambda;
    for (std::size_t k = b_end; k < close; ++k) edits[k] = "";
    edits[close] = "; })";
    edits[last] = "; }";
    first = end;
  }
  return edits;
}

}  // namespace metalcall::msl
