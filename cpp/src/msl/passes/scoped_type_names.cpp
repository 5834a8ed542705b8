// Names declared with a kind of type, function by function (see scoped_type_names.hpp).
#include "msl/passes/scoped_type_names.hpp"

#include <algorithm>

#include "msl/analysis/call_graph.hpp"  // matching

namespace metalcall::msl {

namespace {

void add_typed(std::map<std::string, std::string>& names, const std::string& name, const std::string& type) {
  auto [it, fresh] = names.emplace(name, type);
  if (!fresh && it->second != type) it->second.clear();
}

// Whether the token at i is in a typedef (`typedef half4 T;`: T is a type).
bool in_typedef(const std::vector<Token>& t, std::size_t i) {
  for (std::size_t k = i; k-- > 0;) {
    if (t[k].is(";") || t[k].is("{") || t[k].is("}") || t[k].kind == TokenKind::directive) return false;
    if (t[k].is_identifier("typedef")) return true;
  }
  return false;
}

// variables: names known to be variables (the program scope's, for a function's scan); the
// names this scan finds declared as variables are added.
TypedNames names_of_type(const std::vector<Token>& t, const TypeTest& is_type, std::size_t lo, std::size_t hi,
                         const std::vector<bool>* skip, std::set<std::string>& variables) {
  TypedNames n;
  static const auto& not_types = *new std::set<std::string>{"return", "case", "goto", "else", "do", "sizeof",
                                                      "new", "delete", "throw", "typename", "using", "namespace",
                                                      "struct", "class", "enum", "union", "template", "operator"};
  for (std::size_t i = std::max<std::size_t>(lo, 1); i + 1 < hi; ++i) {
    if (t[i].kind != TokenKind::identifier || (skip && (*skip)[i])) continue;
    const Token& p = t[i - 1];
    const Token& q = t[i + 1];
    if (((p.kind == TokenKind::identifier && !not_types.count(p.text)) || p.is("*") || p.is("&")) &&
        (q.is("=") || q.is(";") || q.is(",") || q.is(")") || q.is("[") || q.is("{") || q.is(":")) &&
        !in_typedef(t, i))
      variables.insert(t[i].text);
    const bool after_member = i > 1 && (t[i - 2].is(".") || t[i - 2].is("->") || t[i - 2].is("::"));
    if (p.kind == TokenKind::identifier && !not_types.count(p.text) && !after_member) {
      if (is_type.is(i - 1) && (i < 2 || !t[i - 2].is("::"))) {
        add_typed(t[i + 1].is("[") ? n.elements : n.values, t[i].text, is_type.name(i - 1));
      } else {
        n.other.insert(t[i].text);
      }
    } else if ((p.is("*") || p.is("&")) && i > 1 && t[i - 2].kind == TokenKind::identifier) {
      // `short* p`, `device short* p`, `thread short& r`: after the type, a pointer's elements
      // or a reference; after another type, not ours (`a * b` is no declaration). A name declared
      // before as a variable is no type: `(v * w)`, `(v & w)` are expressions, and taking them for
      // declarations of w hid w's own type (`half w; w /= (w * w); w = 5ul;` left the assignment
      // unconverted: an ambiguous __half operator= on CUDA, fuzz seed 26102 #709), and so a
      // program-scope constant (`w = (uchar(0) * (g1 * w))`, fuzz seed 28103 #488).
      if (variables.count(t[i - 2].text)) continue;
      if (is_type.is(i - 2)) {
        add_typed(p.is("*") ? n.elements : n.values, t[i].text, is_type.name(i - 2));
      } else if (i > 2 && (t[i - 3].kind == TokenKind::identifier || t[i - 3].is(";") || t[i - 3].is("{") ||
                           t[i - 3].is("}") || t[i - 3].is("(") || t[i - 3].is(","))) {
        n.other.insert(t[i].text);
      }
    }
  }
  for (const auto& name : n.other) {
    n.values.erase(name);
    n.elements.erase(name);
  }
  for (const auto& [name, type] : n.values) n.elements.erase(name);
  return n;
}

// The `(` of the parameters of a function whose name is at i (`T f(`, `T operator()(`, `T
// operator+=(`, `bool operator==(`, `operator float(`), or t.size(). An operator's own tokens:
// `()`, `[]`, or the punctuators before its `(`.
std::size_t parameters_of(const std::vector<Token>& t, std::size_t i) {
  if (t[i].kind != TokenKind::identifier || t[i - 1].kind != TokenKind::identifier) return t.size();
  if (t[i].is_identifier("operator")) {
    std::size_t k = i + 1;
    if (k + 1 < t.size() && ((t[k].is("(") && t[k + 1].is(")")) || (t[k].is("[") && t[k + 1].is("]")))) k += 2;
    else
      while (k < t.size() && t[k].kind == TokenKind::punct && !t[k].is("(")) ++k;
    return k < t.size() && t[k].is("(") ? k : t.size();
  }
  return t[i + 1].is("(") ? i + 1 : t.size();
}

}  // namespace

ScopedNames::ScopedNames(const std::vector<Token>& t, const TypeTest& is_type) : owner_(t.size(), 0) {
  std::vector<bool> inside(t.size(), false);
  std::vector<std::pair<std::size_t, std::size_t>> bodies;  // a function's parameters' `(`, its `}`
  for (std::size_t i = 1; i + 1 < t.size(); ++i) {
    const std::size_t params = parameters_of(t, i);
    if (params >= t.size()) continue;
    const std::size_t close = matching(t, params);
    std::size_t open = close + 1;
    while (open < t.size() && t[open].kind == TokenKind::identifier) ++open;  // const, thread, ...
    if (close >= t.size() || open >= t.size() || !t[open].is("{")) continue;
    const std::size_t end = matching(t, open);
    if (end >= t.size()) continue;
    bodies.emplace_back(params, end);
    for (std::size_t k = params; k <= end; ++k) {
      owner_[k] = bodies.size();
      inside[k] = true;
    }
    i = end;
  }
  // The program scope's first: its variables (constants) are no types in a function either.
  std::set<std::string> program_variables;
  global_ = names_of_type(t, is_type, 0, t.size(), &inside, program_variables);
  for (const auto& [params, end] : bodies) {
    std::set<std::string> variables = program_variables;
    scopes_.push_back(names_of_type(t, is_type, params, end + 1, nullptr, variables));
  }
}

}  // namespace metalcall::msl
