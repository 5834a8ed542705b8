// MSL keywords used as names (see keyword_names.hpp).
#include "msl/analysis/keyword_names.hpp"

#include <set>

#include "msl/analysis/call_graph.hpp"
#include "msl/errors/source_errors.hpp"

namespace metalcall::msl {

namespace {

const char* what_keyword(const std::string& id) {
  if (id == "kernel" || id == "vertex" || id == "fragment") return "a function qualifier";
  return "an address space";
}

// As a qualifier a keyword comes before a type (a name, `::`), a declarator (`float device* p`)
// or an attribute list (`kernel [[max_total_threads_per_threadgroup(64)]] void f`).
bool qualifies_what_follows(const std::vector<Token>& t, std::size_t i) {
  if (i + 1 >= t.size()) return false;
  const Token& n = t[i + 1];
  if (n.kind == TokenKind::identifier || n.is("::") || n.is("*") || n.is("&") || n.is("&&") ||
      (n.is("[") && i + 2 < t.size() && t[i + 2].is("[")))
    return true;
  // A parenthesised declarator: `device SSBO* constant (&ssbos)[2]`, a reference to an array of
  // pointers stored in constant space, and its abstract form in a cast, `constant B* constant (&)[8]`
  // (SPIRV-Cross's argument buffers). A call of a function named so (`kernel(x)`) has no `*` or `&` there.
  return n.is("(") && i + 2 < t.size() && (t[i + 2].is("*") || t[i + 2].is("&") || t[i + 2].is("&&"));
}

// `float get() const device {`, `S& operator=(const thread S&) thread = default;`: qualifiers of
// a member function's object, after its parameter list.
bool qualifies_member_function(const std::vector<Token>& t, std::size_t i) {
  static const auto& qualifiers = *new std::set<std::string>{"const", "volatile", "noexcept"};
  std::size_t k = i;
  while (k > 0 && t[k - 1].kind == TokenKind::identifier && (qualifiers.count(t[k - 1].text) || is_msl_keyword(t[k - 1].text)))
    --k;
  return k > 0 && t[k - 1].is(")");
}

}  // namespace

bool is_msl_keyword(const std::string& id) {
  static const auto& words = *new std::set<std::string>{"kernel",      "vertex",      "fragment",
                                                        "device",      "constant",    "thread",
                                                        "threadgroup", "threadgroup_imageblock", "ray_data",
                                                        "object_data"};
  return words.count(id) != 0;
}

void check_keyword_names(const std::vector<Token>& t, const std::string& source) {
  for (std::size_t i = 0; i < t.size(); ++i) {
    if (t[i].is("[") && i + 1 < t.size() && t[i + 1].is("[")) {  // attributes: [[kernel]] is one
      i = matching(t, i);
      continue;
    }
    if (t[i].kind != TokenKind::identifier || !is_msl_keyword(t[i].text)) continue;
    // A member or qualified name (`s.device`, `N::thread`): its declaration is where it is refused.
    if (i > 0 && (t[i - 1].is(".") || t[i - 1].is("->") || t[i - 1].is("::"))) continue;
    if (qualifies_what_follows(t, i) || qualifies_member_function(t, i)) continue;
    // MSL 3.2's `coherent(device) device uint* p`.
    if (i >= 2 && t[i - 1].is("(") && t[i - 2].is_identifier("coherent") && i + 1 < t.size() && t[i + 1].is(")"))
      continue;
    throw rule_error(source, t[i],
                     "'" + t[i].text + "' is a keyword of MSL (" + what_keyword(t[i].text) +
                         "): it cannot name a variable, parameter, function, member or type",
                     "keywords are not names");
  }
}

}  // namespace metalcall::msl
