// Loop nests of SIMD-group matrix products, for the CUDA target (see product_nests.hpp).
#include "msl/passes/product_nests.hpp"

#include <set>

#include "msl/passes/accumulator_elements.hpp"
#include "msl/analysis/call_graph.hpp"

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

// `ulong2`, `uint2`, …: a vector type, whose constructor a load's origin calls.
bool is_vector_constructor(const std::string& name) {
  static const auto& scalars = *new std::set<std::string>{"char", "uchar", "short", "ushort", "int", "uint", "long", "ulong"};
  return name.size() > 1 && (name.back() == '2' || name.back() == '3' || name.back() == '4') &&
         scalars.count(name.substr(0, name.size() - 1)) != 0;
}

// Whether [b, e) is an expression that calls nothing (but sizeof and vector constructors), changes nothing and
// names none of `banned`; `named` gets the identifiers it names.
bool plain_expression(const std::vector<Token>& t, std::size_t b, std::size_t e, const std::set<std::string>& banned,
                      std::set<std::string>* named = nullptr) {
  static const auto& changes =
      *new std::set<std::string>{"=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>=", "++", "--"};
  if (b >= e) return false;
  int depth = 0;  // commas only between a constructor's arguments
  for (std::size_t i = b; i < e; ++i) {
    const Token& k = t[i];
    if (k.kind == TokenKind::directive || k.kind == TokenKind::string || k.kind == TokenKind::character) return false;
    if (k.kind == TokenKind::punct && (changes.count(k.text) || k.is("{") || k.is("}") || k.is(";"))) return false;
    if (k.is("(") || k.is("[")) ++depth;
    else if (k.is(")") || k.is("]")) --depth;
    else if (k.is(",") && depth == 0) return false;
    if (k.kind != TokenKind::identifier) continue;
    if (i + 1 < e && t[i + 1].is("(") && !k.is("sizeof") && !is_vector_constructor(k.text)) return false;  // a call
    if (banned.count(k.text)) return false;
    if (named) named->insert(k.text);
  }
  return true;
}

// A nest's loops and the tokens around them.
struct Nest {
  std::vector<Loop> loops;
  std::set<std::string> vars;        // the loop variables' names
  std::vector<std::size_t> between;  // braces and pragmas between the loops
  std::vector<std::size_t> closing;  // the braces that close them, after the body
  std::size_t body = 0;              // the body's first token
  std::size_t end = 0;               // the nest's last token
};

// The loops starting at `first`, each the whole body of the one before (braces and #pragma
// lines between), up to three; the body starts at nest.body.
bool parse_loops(const std::vector<Token>& t, std::size_t first, Nest& nest) {
  std::size_t pos = first;
  Loop loop;
  while (nest.loops.size() < 3 && parse_loop(t, pos, loop)) {
    nest.loops.push_back(loop);
    nest.vars.insert(t[loop.var].text);
    pos = loop.close + 1;
    while (pos < t.size() && (is_pragma(t[pos]) || t[pos].is("{"))) nest.between.push_back(pos++);
  }
  nest.body = pos;
  return !nest.loops.empty();
}

// The braces that close the nest's opening ones right after the body's `;` at `last`;
// sets nest.end.
bool parse_closing(const std::vector<Token>& t, std::size_t last, Nest& nest) {
  nest.closing.clear();
  if (last >= t.size() || !t[last].is(";")) return false;
  std::size_t braces = 0;
  for (std::size_t k : nest.between) braces += t[k].is("{") ? 1 : 0;
  for (std::size_t k = 0; k < braces; ++k) {
    if (last + 1 + k >= t.size() || !t[last + 1 + k].is("}")) return false;
    nest.closing.push_back(last + 1 + k);
  }
  nest.end = nest.closing.empty() ? last : nest.closing.back();
  return true;
}

// The call's arguments' bounds: args[0] the first token of the first, args[k + 1] one past
// the `,` or `)` that ends argument k; false unless there are `count` (at least `min`).
bool parse_arguments(const std::vector<Token>& t, std::size_t open, std::vector<std::size_t>& args, std::size_t min,
                     std::size_t max) {
  args.assign(1, open + 1);
  while (args.size() <= max) {
    const std::size_t end = argument_end(t, args.back());
    if (end >= t.size() || end == args.back()) return false;
    args.push_back(end + 1);
    if (t[end].is(")")) return args.size() - 1 >= min;
    if (!t[end].is(",")) return false;
  }
  return false;
}

// The edits of a nest's loops: `for ( T v = begin ; v < end ; ++v )` becomes the
// declarations `T v = begin ; const auto mtl_nest_endN = end ;` inside one block. Returns
// the call's ranges (`nest_range(v, mtl_nest_endN), `) and the lambdas' parameters, with
// one-element ranges and `int` parameters for the `extra` roles the nest lacks.
void loop_edits(const std::vector<Token>& t, std::size_t first, const Nest& nest, std::size_t extra,
                std::map<std::size_t, std::string>& edits, std::string& ranges, std::string& params) {
  for (std::size_t q = 0; q < nest.loops.size(); ++q) {
    const Loop& l = nest.loops[q];
    const std::string& v = t[l.var].text, e = "mtl_nest_end" + std::to_string(q);
    edits[l.keyword] = q == 0 ? "{" : "";
    edits[l.open] = "";
    edits[l.begin_end + 1] = "";
    edits[l.less] = "const auto " + e + " =";
    for (std::size_t k = l.end_end + 1; k <= l.close; ++k) edits[k] = "";
    ranges += "metal::mtl_sgm::nest_range(" + v + ", " + e + "), ";
    params += std::string(q ? ", " : "") + "decltype(" + v + ") " + v;
  }
  for (std::size_t r = 0; r < extra; ++r) {
    ranges += "metal::mtl_sgm::nest_range(0, 1), ";
    params += ", int";
  }
  for (std::size_t k : nest.between) edits[k] = "";
  for (std::size_t k : nest.closing) edits[k] = "";
  for (std::size_t k = first; k-- > 0 && is_pragma(t[k]);) edits[k] = "";  // it would apply to no loop
}

// Whether the loop variables have distinct names and every loop's bounds are plain
// expressions naming neither a loop variable nor `array`.
bool plain_bounds(const std::vector<Token>& t, const Nest& nest, const std::string& array) {
  if (nest.vars.size() != nest.loops.size()) return false;
  std::set<std::string> banned = nest.vars;
  banned.insert(array);
  for (const Loop& l : nest.loops)
    if (!plain_expression(t, l.var + 2, l.begin_end, banned) || !plain_expression(t, l.less + 1, l.end_end, banned))
      return false;
  return true;
}

bool untouched(std::size_t first, std::size_t end, const std::function<bool(std::size_t)>& touched) {
  for (std::size_t k = first; k <= end; ++k)
    if (touched(k)) return false;
  return true;
}

// The name of the call at `pos` (`metal::` allowed): its index, or t.size().
std::size_t call_name(const std::vector<Token>& t, std::size_t pos, const char* name) {
  std::size_t call = pos;
  if (call + 2 < t.size() && t[call].is_identifier("metal") && t[call + 1].is("::")) call += 2;
  if (call + 1 >= t.size() || !t[call].is_identifier(name) || !t[call + 1].is("(")) return t.size();
  return call;
}

// `simdgroup_multiply_accumulate(X[..], a, b, X[..]);` as the nest's body (see the header).
bool product_body(const std::vector<Token>& t, std::size_t first, Nest& nest,
                  const std::function<bool(std::size_t)>& touched, std::map<std::size_t, std::string>& edits) {
  const std::size_t call = call_name(t, nest.body, "simdgroup_multiply_accumulate");
  std::vector<std::size_t> args;
  if (call == t.size() || !parse_arguments(t, call + 1, args, 4, 4)) return false;
  const std::size_t x_end = args[1] - 1, a_end = args[2] - 1, b_end = args[3] - 1, close = args[4] - 1;
  if (!is_element(t, args[0], x_end) || !same_tokens(t, args[0], x_end, args[3], close)) return false;
  if (!parse_closing(t, close + 1, nest)) return false;

  // Roles: subscripts of X (a whole subscript each), names in a and in b.
  const std::string& array = t[args[0]].text;
  if (!plain_bounds(t, nest, array)) return false;
  const std::set<std::string>& vars = nest.vars;
  std::map<std::string, int> in_x;  // a loop variable → how many subscripts of X it is
  for (std::size_t s = args[0] + 1; s < x_end; s = matching(t, s) + 1) {
    const std::size_t e = matching(t, s);
    if (e == s + 2 && vars.count(t[s + 1].text)) ++in_x[t[s + 1].text];
    else if (!plain_expression(t, s + 1, e, vars)) return false;
  }
  std::set<std::string> in_a, in_b, no_array{array};
  if (!plain_expression(t, args[1], a_end, no_array, &in_a) || !plain_expression(t, args[2], b_end, no_array, &in_b))
    return false;
  std::vector<int> roles;
  int count[3] = {0, 0, 0};
  for (const Loop& l : nest.loops) {
    const std::string& v = t[l.var].text;
    const int x = in_x.count(v) ? in_x[v] : 0;
    const bool a = in_a.count(v) != 0, b = in_b.count(v) != 0;
    int role = -1;
    if (x == 1 && a && !b) role = kRow;
    else if (x == 1 && b && !a) role = kColumn;
    else if (x == 0 && a && b) role = kReduction;
    if (role < 0) return false;
    roles.push_back(role);
    ++count[role];
  }
  if (count[kRow] != 1 || count[kColumn] > 1 || count[kReduction] > 1) return false;
  if (!untouched(first, nest.end, touched)) return false;

  // The call takes the loops' ranges (the roles missing from the nest get one-element
  // ranges) and three lambdas of the loop variables, in the loops' order.
  std::string ranges, params;
  for (int r = 0; r < 3; ++r)
    if (!count[r]) roles.push_back(r);
  loop_edits(t, first, nest, 3 - nest.loops.size(), edits, ranges, params);
  const std::string lambda = "[&](" + params + ") -> decltype(auto) { return ";
  for (std::size_t k = nest.body; k <= call + 1; ++k) edits[k] = "";
  edits[nest.body] = "metal::mtl_sgm::product_nest<" + std::to_string(roles[0]) + ", " + std::to_string(roles[1]) +
                     ", " + std::to_string(roles[2]) + ">(" + ranges + lambda;
  edits[x_end] = "; }, " + lambda;
  edits[a_end] = "; }, " + lambda;
  for (std::size_t k = b_end; k < close; ++k) edits[k] = "";
  edits[close] = "; })";
  edits[close + 1] = "; }";
  return true;
}

// `simdgroup_load(M[..], source[, elements_per_row[, origin[, transpose]]]);` as the nest's
// body: M[..] an element (its subscripts call and change nothing: is_element), the other
// arguments plain expressions that do not name M.
bool load_body(const std::vector<Token>& t, std::size_t first, Nest& nest,
               const std::function<bool(std::size_t)>& touched, std::map<std::size_t, std::string>& edits) {
  const std::size_t call = call_name(t, nest.body, "simdgroup_load");
  std::vector<std::size_t> args;
  if (call == t.size() || !parse_arguments(t, call + 1, args, 2, 5)) return false;
  const std::size_t close = args.back() - 1;
  if (!is_element(t, args[0], args[1] - 1) || !parse_closing(t, close + 1, nest)) return false;
  const std::set<std::string> no_matrix{t[args[0]].text};
  if (!plain_bounds(t, nest, t[args[0]].text)) return false;
  for (std::size_t a = 1; a + 1 < args.size(); ++a)
    if (!plain_expression(t, args[a], args[a + 1] - 1, no_matrix)) return false;
  if (!untouched(first, nest.end, touched)) return false;

  // load_nest(ranges, lambda of the loop variables giving the call's arguments).
  std::string ranges, params;
  loop_edits(t, first, nest, 3 - nest.loops.size(), edits, ranges, params);
  for (std::size_t k = nest.body; k <= call + 1; ++k) edits[k] = "";
  edits[nest.body] = "metal::mtl_sgm::load_nest(" + ranges + "[&](" + params + ") { return metal::mtl_sgm::load_args(";
  edits[close] = "); })";
  edits[close + 1] = "; }";
  return true;
}

}  // namespace

std::map<std::size_t, std::string> product_nest_edits(const std::vector<Token>& t,
                                                     const std::function<bool(std::size_t)>& touched) {
  std::map<std::size_t, std::string> edits;
  for (std::size_t first = 0; first < t.size(); ++first) {
    Nest nest;
    if (!parse_loops(t, first, nest)) continue;
    if (product_body(t, first, nest, touched, edits) || load_body(t, first, nest, touched, edits)) first = nest.end;
  }
  return edits;
}

}  // namespace metalcall::msl
