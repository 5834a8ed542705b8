// How the barrier-region planner reads tokens (see barrier_region_reading.hpp).
#include "msl/passes/barrier_region_reading.hpp"

#include <regex>

#include "msl/analysis/call_graph.hpp"  // matching
#include "msl/analysis/statements.hpp"  // statement_end

namespace metalcall::msl::regions {

bool punct(const std::vector<Token>& t, std::size_t i, const char* s) {
  return i < t.size() && t[i].kind == TokenKind::punct && t[i].is(s);
}

bool one_of(const Token& tok, std::initializer_list<const char*> texts) {
  for (const char* s : texts)
    if (tok.is(s)) return true;
  return false;
}

bool assignment(const Token& tok) {
  return tok.kind == TokenKind::punct &&
         one_of(tok, {"=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>="});
}

// Builtins whose value differs between the threads of a group (recomputed in each region).
bool per_thread(Builtin b) {
  switch (b) {
    case Builtin::thread_position_in_grid:
    case Builtin::thread_position_in_threadgroup:
    case Builtin::thread_index_in_threadgroup:
    case Builtin::thread_index_in_simdgroup:
    case Builtin::simdgroup_index_in_threadgroup:
    case Builtin::thread_index_in_quadgroup:
    case Builtin::quadgroup_index_in_threadgroup:
      return true;
    default:
      return false;
  }
}

// Functions a uniform expression may call: conversions, vector constructors and pure functions.
bool pure_callee(const std::string& name) {
  // Never destroyed (tests/reliability/test_exit_safe_statics.py).
  static const auto& functions = *new std::set<std::string>{
      "min",  "max",   "clamp", "abs",   "absdiff", "select", "popcount", "clz",  "ctz",  "all",  "any",
      "floor", "ceil", "trunc", "round", "fabs",    "fmin",   "fmax",     "sizeof", "alignof", "mulhi"};
  return functions.count(name) || scalar_or_vector_type(name);
}

bool scalar_or_vector_type(const std::string& name) {
  static const auto& types =  // never destroyed, as above
      *new std::regex("(u?(char|short|int|long)|float|half|bfloat|bool|size_t|unsigned|signed)[234]?");
  return std::regex_match(name, types);
}

// Statements the planner does not follow: their kernels keep the fibers.
bool refused_start(const Token& tok) {
  return tok.kind == TokenKind::identifier &&
         one_of(tok, {"decltype", "typename", "using", "typedef", "struct", "class", "union", "enum", "template",
                      "static_assert", "goto", "case", "default", "asm", "namespace", "else", "throw", "try"});
}

bool statement_keyword(const Token& tok) {
  return tok.kind == TokenKind::identifier &&
         one_of(tok, {"if", "for", "while", "do", "switch", "return", "break", "continue"});
}

std::size_t postfix_end(const std::vector<Token>& t, std::size_t k) {
  for (;;) {
    if ((punct(t, k + 1, ".") || punct(t, k + 1, "->")) && k + 2 < t.size() && t[k + 2].kind == TokenKind::identifier)
      k += 2;
    else if (punct(t, k + 1, "[") && matching(t, k + 1) < t.size())
      k = matching(t, k + 1);
    else
      return k;
  }
}

// The `>` closing the template argument list that opens at `open`, or kNone.
std::size_t angle_end(const std::vector<Token>& t, std::size_t open, std::size_t last) {
  int depth = 0;
  for (std::size_t k = open; k < last; ++k) {
    if (punct(t, k, "<")) {
      ++depth;
    } else if (punct(t, k, ">")) {
      if (--depth == 0) return k;
    } else if (punct(t, k, "(") || punct(t, k, "[")) {
      k = matching(t, k);
      if (k >= last) return kNone;
    } else if (punct(t, k, ";") || punct(t, k, "{") || punct(t, k, ">>")) {
      return kNone;
    }
  }
  return kNone;
}

// `T name [N] = init, name2 ... ;` over [first, last] (last: the `;`), or nullopt when the
// statement does not have that shape (an expression statement, or a declaration the planner
// does not follow).
std::optional<Declaration> parse_declaration(const std::vector<Token>& t, std::size_t first, std::size_t last) {
  Declaration d;
  d.type_first = first;
  std::size_t name = kNone;
  for (std::size_t k = first; k < last && name == kNone; ++k) {
    const Token& tok = t[k];
    if (tok.kind == TokenKind::identifier) {
      const bool ends = punct(t, k + 1, "=") || punct(t, k + 1, ";") || punct(t, k + 1, "[") ||
                        punct(t, k + 1, "{") || punct(t, k + 1, "(") || punct(t, k + 1, ",");
      if (!ends) continue;
      const bool after_type = k > first && (t[k - 1].kind == TokenKind::identifier || punct(t, k - 1, ">") ||
                                            punct(t, k - 1, "*") || punct(t, k - 1, "&") || punct(t, k - 1, "&&"));
      if (!after_type || statement_keyword(t[first])) return std::nullopt;
      name = k;
    } else if (punct(t, k, "<")) {
      k = angle_end(t, k, last);
      if (k == kNone) return std::nullopt;
    } else if (!(punct(t, k, "::") || punct(t, k, "*") || punct(t, k, "&") || punct(t, k, "&&"))) {
      return std::nullopt;
    }
  }
  if (name == kNone) return std::nullopt;
  d.type_last = name;
  for (std::size_t k = first; k < name; ++k) {
    const Token& tok = t[k];
    if (tok.kind == TokenKind::punct && one_of(tok, {"*", "&", "&&"})) d.indirect = true;
    if (tok.kind != TokenKind::identifier) continue;
    d.is_const = d.is_const || tok.is("const");
    d.is_constexpr = d.is_constexpr || tok.is("constexpr");
    d.is_static = d.is_static || tok.is("static") || tok.is("thread_local") || tok.is("extern");
    d.is_threadgroup = d.is_threadgroup || tok.is("threadgroup");
    d.is_volatile = d.is_volatile || tok.is("volatile");
    d.is_auto = d.is_auto || tok.is("auto");
  }
  std::size_t k = name;
  bool indirect = false;  // the declarator about to be read has its own `*` or `&`
  for (;;) {
    Declarator dd;
    dd.name = k;
    dd.indirect = indirect;
    std::size_t j = k + 1;
    dd.suffix_first = j;
    while (punct(t, j, "[")) {
      j = matching(t, j);
      if (j >= last) return std::nullopt;
      ++j;
    }
    dd.suffix_last = j;
    if (punct(t, j, "=")) {
      std::size_t e = j + 1;
      for (; e < last && !punct(t, e, ","); ++e)
        if (punct(t, e, "(") || punct(t, e, "[") || punct(t, e, "{")) {
          e = matching(t, e);
          if (e >= last) return std::nullopt;
        }
      if (e == j + 1) return std::nullopt;
      dd.init_first = j + 1;
      dd.init_last = e;
      j = e;
    } else if (punct(t, j, "{") || punct(t, j, "(")) {
      const std::size_t close = matching(t, j);
      if (close >= last) return std::nullopt;
      dd.init_first = j;
      dd.init_last = close + 1;
      j = close + 1;
    } else {
      dd.init_first = dd.init_last = j;
    }
    d.declarators.push_back(dd);
    if (j == last) break;
    if (!punct(t, j, ",")) return std::nullopt;
    ++j;
    indirect = false;
    while (j < last && (punct(t, j, "*") || punct(t, j, "&") || punct(t, j, "&&") || t[j].is_identifier("const"))) {
      indirect = true;
      ++j;
    }
    if (j >= last || t[j].kind != TokenKind::identifier) return std::nullopt;
    k = j;
  }
  return d;
}

// The functions of the source with a parameter of non-const reference type (`thread uint& x`):
// a name passed alone to one of them may be changed by it. A parameter list is a parenthesis
// after a name (not a statement keyword) and before `{`, `;`, `const`, `->` or an attribute.
std::set<std::string> mutable_reference_functions(const std::vector<Token>& t) {
  std::set<std::string> names;
  std::vector<std::size_t> opens;
  for (std::size_t k = 0; k < t.size(); ++k) {
    if (punct(t, k, "(")) {
      opens.push_back(k);
      continue;
    }
    if (punct(t, k, ")") && !opens.empty()) {
      opens.pop_back();
      continue;
    }
    if (!(punct(t, k, "&") || punct(t, k, "&&")) || opens.empty() || k < 2 || k + 2 >= t.size()) continue;
    if (t[k + 1].kind != TokenKind::identifier || !(punct(t, k + 2, ",") || punct(t, k + 2, ")"))) continue;
    const bool after_type = t[k - 1].kind == TokenKind::identifier || punct(t, k - 1, ">");
    if (!after_type || t[k - 1].is_identifier("const") || t[k - 2].is_identifier("const")) continue;
    const std::size_t open = opens.back();
    if (open == 0 || t[open - 1].kind != TokenKind::identifier || statement_keyword(t[open - 1])) continue;
    const std::size_t close = matching(t, open);
    const bool declares = close + 1 >= t.size() || t[close + 1].is("{") || t[close + 1].is(";") ||
                          t[close + 1].is("->") || t[close + 1].is("[") || t[close + 1].is_identifier("const") ||
                          t[close + 1].is_identifier("noexcept") || t[close + 1].is(",");
    if (declares) names.insert(t[open - 1].text);
  }
  return names;
}

// `threadgroup_barrier(...);` (or metal::threadgroup_barrier): its name's token, or kNone.
std::size_t barrier_statement(const std::vector<Token>& t, std::size_t first, std::size_t last) {
  std::size_t k = first;
  if (punct(t, k, "::")) ++k;
  if (t[k].is_identifier("metal") && punct(t, k + 1, "::")) k += 2;
  if (!t[k].is_identifier("threadgroup_barrier") || !punct(t, k + 1, "(")) return kNone;
  const std::size_t close = matching(t, k + 1);
  return close + 1 == last && punct(t, last, ";") ? k : kNone;
}

// A barrier's arguments name only mem_flags and its enumerators (and literals): the region
// written for them passes them to mtl_regions::barrier_arguments at the group's scope, so
// that they are type-checked as the fibers' threadgroup_barrier would (before, regions dropped
// them: `threadgroup_barrier(2)` compiled only in this mode). Other names (a thread's local)
// leave the kernel to the fibers.
bool plain_barrier_arguments(const std::vector<Token>& t, std::size_t name) {
  const std::size_t close = matching(t, name + 1);
  for (std::size_t k = name + 2; k < close; ++k)
    if (t[k].kind == TokenKind::identifier &&
        !one_of(t[k], {"metal", "mem_flags", "mem_none", "mem_device", "mem_threadgroup", "mem_texture",
                        "mem_threadgroup_imageblock", "mem_objectdata"}))
      return false;
  return true;
}

bool holds_barrier(const std::vector<Token>& t, std::size_t first, std::size_t last) {
  for (std::size_t k = first; k <= last; ++k)
    if (t[k].is_identifier("threadgroup_barrier")) return true;
  return false;
}

// break or continue in [first, last] that would leave the enclosing group loop (or, at the
// top level, the threads' loop): those outside nested loops (and, for break, switches).
bool leaves(const std::vector<Token>& t, std::size_t first, std::size_t last, bool in_switch) {
  for (std::size_t k = first; k <= last; ++k) {
    const Token& tok = t[k];
    if (tok.is_identifier("continue")) return true;
    if (tok.is_identifier("break") && !in_switch) return true;
    if (tok.is_identifier("for") || tok.is_identifier("while") || tok.is_identifier("do")) {
      const std::size_t end = statement_end(t, k);
      if (end == kNone || end > last) return true;
      k = end;
    } else if (tok.is_identifier("switch")) {
      const std::size_t end = statement_end(t, k);
      if (end == kNone || end > last) return true;
      if (leaves(t, k + 1, end, true)) return true;
      k = end;
    }
  }
  return false;
}

// A `return` in [first, last] inside a loop nested there (it would become that loop's `continue`).
bool return_in_loop(const std::vector<Token>& t, std::size_t first, std::size_t last) {
  for (std::size_t k = first; k <= last; ++k) {
    const Token& tok = t[k];
    if (tok.is_identifier("for") || tok.is_identifier("while") || tok.is_identifier("do")) {
      const std::size_t end = statement_end(t, k);
      if (end == kNone || end > last) return true;
      for (std::size_t j = k; j <= end; ++j)
        if (t[j].is_identifier("return")) return true;
      k = end;
    }
  }
  return false;
}

// Whether token k (a use of a name) has its address taken: a unary `&` before it.
bool address_taken(const std::vector<Token>& t, std::size_t k) {
  if (k == 0 || !punct(t, k - 1, "&")) return false;
  if (k < 2) return true;
  const Token& p = t[k - 2];
  return !(p.kind == TokenKind::identifier || p.kind == TokenKind::number || punct(t, k - 2, ")") ||
           punct(t, k - 2, "]"));
}

// A group local must be one nothing writes but by its name: a scalar or vector (an array's
// name passes as a pointer, a struct's members may be arrays or functions), else a const
// object or one in constant memory.
bool unwritable_but_by_name(const std::vector<Token>& t, const Declaration& d) {
  bool by_name = !d.indirect;
  for (std::size_t k = d.type_first; k < d.type_last; ++k) {
    const Token& tok = t[k];
    if (tok.is_identifier("constant") || tok.is_identifier("const") || tok.is_identifier("constexpr")) return true;
    if (tok.kind == TokenKind::identifier && !one_of(tok, {"thread", "metal"}) && !scalar_or_vector_type(tok.text))
      by_name = false;
  }
  for (const Declarator& dd : d.declarators) by_name = by_name && !dd.indirect && dd.suffix_first == dd.suffix_last;
  return by_name;
}

// An expression statement the planner can tell from a declaration.
bool expression_statement(const std::vector<Token>& t, std::size_t first, std::size_t last) {
  const Token& tok = t[first];
  if (tok.kind == TokenKind::number || tok.kind == TokenKind::string || tok.kind == TokenKind::character)
    return true;
  if (tok.kind == TokenKind::punct) return one_of(tok, {"(", "*", "++", "--", "!", "~", "-", "+", ";"});
  if (tok.kind != TokenKind::identifier) return false;
  std::size_t k = first;
  while (t[k].kind == TokenKind::identifier && punct(t, k + 1, "::") && k + 2 < last) k += 2;
  if (t[k].kind != TokenKind::identifier) return false;
  if (punct(t, k + 1, "<")) {
    const std::size_t close = angle_end(t, k + 1, last);
    return close != kNone && punct(t, close + 1, "(");
  }
  const Token& next = t[k + 1];
  return assignment(next) || (next.kind == TokenKind::punct && one_of(next, {"(", "[", ".", "->", "++", "--", ";"}));
}

// The use of a name at k (to e, its members and elements) may bind a non-const reference to
// it: `T& r = name;` (or `r{name}`, `r(name)`), or an argument alone in a call while the source
// has non-const reference parameters.
bool binds_reference(const std::vector<Token>& t, std::size_t body_open, const std::set<std::string>& mutable_references,
                     std::size_t k, std::size_t e) {
  const bool alone_before = punct(t, e + 1, ")") || punct(t, e + 1, ",") || punct(t, e + 1, "}") ||
                            punct(t, e + 1, ";");
  if (!alone_before) return false;
  if ((punct(t, k - 1, "=") || punct(t, k - 1, "{") || punct(t, k - 1, "(")) && k >= 3 &&
      (punct(t, k - 3, "&") || punct(t, k - 3, "&&")))
    return true;
  if (mutable_references.empty() || !(punct(t, k - 1, "(") || punct(t, k - 1, ",")) ||
      !(punct(t, e + 1, ")") || punct(t, e + 1, ",")))
    return false;
  // The call it is an argument of: its callee's name, or unknown (a template's `>`).
  int depth = 0;
  for (std::size_t j = k; j-- > body_open;) {
    if (punct(t, j, ")") || punct(t, j, "]") || punct(t, j, "}")) {
      ++depth;
    } else if (punct(t, j, "(") || punct(t, j, "[") || punct(t, j, "{")) {
      if (depth-- > 0) continue;
      if (!punct(t, j, "(")) return false;  // an initializer list or an index
      if (j == 0 || t[j - 1].kind != TokenKind::identifier) return true;
      return mutable_references.count(t[j - 1].text) > 0;
    }
  }
  return true;
}

}  // namespace metalcall::msl::regions
