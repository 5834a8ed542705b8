// Checked mode's union checks (see checked_unions.hpp): the names of a union's data members,
// read from the tokens, each asserted by the compiler through decltype.
#include "msl/checked/checked_unions.hpp"

#include <set>

#include "msl/analysis/call_graph.hpp"
#include "msl/analysis/implementation_rules.hpp"

namespace metalcall::msl {

namespace {

// A '{' that opens a member function's body (after its parameters, qualifiers or initializers).
bool opens_function_body(const std::vector<Token>& t, std::size_t open) {
  if (open == 0) return false;
  const Token& b = t[open - 1];
  return b.is(")") || b.is_identifier("const") || b.is_identifier("noexcept") || b.is_identifier("override") ||
         b.is_identifier("final") || b.is_identifier("volatile") || b.is_identifier("device") ||
         b.is_identifier("thread") || b.is_identifier("threadgroup") || b.is_identifier("constant");
}

bool opens_class(const Token& k) {
  return k.is_identifier("struct") || k.is_identifier("class") || k.is_identifier("union");
}

// The data members declared in the class body (open, close): a declarator's name is the
// identifier before its `;`, `,`, `[`, `=`, `{` or bit-field `:`; initializers, parentheses,
// member functions and statements that declare no data member are skipped, and an anonymous
// struct's or union's members belong to the body around it.
void data_members(const std::vector<Token>& t, std::size_t open, std::size_t close, std::vector<std::string>& names) {
  static const auto& skipped = *new std::set<std::string>{"using", "typedef", "static", "friend", "template",
                                                          "static_assert", "enum", "constexpr", "operator"};
  bool skip_statement = false, in_initializer = false, first = true;
  int angles = 0;
  for (std::size_t k = open + 1; k < close && k < t.size(); ++k) {
    const Token& x = t[k];
    if (x.is(";")) {
      skip_statement = in_initializer = false, first = true, angles = 0;
      continue;
    }
    if (first && (x.is_identifier("public") || x.is_identifier("private") || x.is_identifier("protected"))) {
      ++k;  // the access specifier's ':'
      continue;
    }
    if (first && x.kind == TokenKind::identifier && skipped.count(x.text)) skip_statement = true;
    first = false;
    if (x.is("(") || x.is("[")) {
      const bool declares_function = x.is("(") && !in_initializer;
      const std::size_t end = matching(t, k);
      if (x.is("[") && !in_initializer && !skip_statement && k > 0 && t[k - 1].kind == TokenKind::identifier &&
          !(k + 1 < t.size() && t[k + 1].is("[")) && angles == 0)
        names.push_back(t[k - 1].text);  // `ulong u[4]`
      if (declares_function) skip_statement = true;  // a member function (or a constructor)
      k = end;
      continue;
    }
    if (x.is("{")) {
      const std::size_t end = matching(t, k);
      if (opens_function_body(t, k)) {
        skip_statement = in_initializer = false, first = true, angles = 0;  // no ';' after a function body
      } else if (k > 0 && (opens_class(t[k - 1]) || (k > 1 && opens_class(t[k - 2])))) {
        // A nested class: its members are the union's only when it is anonymous and declares
        // no member itself (`struct { T a; T b; };`).
        const bool anonymous = opens_class(t[k - 1]);
        if (anonymous && end + 1 < t.size() && t[end + 1].is(";")) data_members(t, k, end, names);
      } else if (!skip_statement && !in_initializer && k > 0 && t[k - 1].kind == TokenKind::identifier && angles == 0) {
        names.push_back(t[k - 1].text);  // `T p{…}`
        in_initializer = true;
      }
      k = end;
      continue;
    }
    if (x.is("<") && k > 0 && t[k - 1].kind == TokenKind::identifier && !in_initializer) ++angles;
    else if (x.is(">") && angles > 0) --angles;
    else if (x.is(">>") && angles > 0) angles = angles > 1 ? angles - 2 : 0;
    if (skip_statement || angles > 0) continue;
    if (x.is(",")) {
      in_initializer = false;
      continue;
    }
    if (in_initializer) continue;
    if (x.kind != TokenKind::identifier || is_keyword(x.text) || k + 1 >= t.size()) continue;
    const Token& n = t[k + 1];
    if (k > 0 && (t[k - 1].is("::") || t[k - 1].is("."))) continue;
    if (n.is(";") || n.is(",") || n.is("=") || n.is(":")) {
      names.push_back(x.text);
      if (n.is("=") || n.is(":")) in_initializer = true;  // an initializer, a bit-field's width
    }
  }
}

}  // namespace

std::map<std::size_t, std::string> union_member_checks(const std::vector<Token>& t) {
  std::map<std::size_t, std::string> out;
  for (const ClassBody& c : class_bodies(t)) {
    if (!c.is_union) continue;
    std::vector<std::string> names;
    data_members(t, c.open, c.close, names);
    std::string text;
    for (const std::string& n : names)
      text += " static_assert(!metal::mtl_rt::holds_bounds<decltype(" + n + ")>::value, \"a union member that holds a "
              "pointer ('" + n + "') makes it from its other members' bits (checked mode: a checked pointer's base and "
              "bounds) [MSL rule: checked mode stays on]\");";
    if (!text.empty()) out[c.close] += text;
  }
  return out;
}

}  // namespace metalcall::msl
