// Loop strip-mining for the CPU target (see loop_strips.hpp).
#include "msl/passes/loop_strips.hpp"

#include <map>
#include <optional>
#include <regex>
#include <set>
#include <string>

#include "msl/analysis/call_graph.hpp"  // matching
#include "msl/analysis/statements.hpp"  // statement_end

namespace metalcall::msl {

namespace {

constexpr const char* kStripPrefix = "__metalcall_strip_";
constexpr const char* kBreakPrefix = "__metalcall_break_";
constexpr const char* kShortFlag = "__metalcall_short";

bool punct(const std::vector<Token>& t, std::size_t i, const char* s) {
  return i < t.size() && t[i].kind == TokenKind::punct && t[i].is(s);
}

bool any_of(const Token& tok, std::initializer_list<const char*> texts) {
  for (const char* s : texts)
    if (tok.is(s)) return true;
  return false;
}

// Functions a loop condition may call: conversions, vector constructors and pure functions.
bool pure_callee(const std::string& name) {
  // Never destroyed (tests/reliability/test_exit_safe_statics.py).
  static const auto& functions =
      *new std::set<std::string>{"min",   "max",   "clamp", "abs",   "absdiff", "select", "length",
                                 "dot",   "popcount", "size", "all", "any",     "isnan",  "isinf",
                                 "floor", "ceil",  "trunc", "round", "fabs",    "fmin",   "fmax"};
  static const auto& conversion = *new std::regex("(u?(char|short|int|long)|float|half|bfloat|bool|size_t)[234]?");
  return functions.count(name) || std::regex_match(name, conversion);
}

// True when evaluating tokens [first, last) twice is the same as once: no assignment,
// increment, block, string or call other than pure_callee's, and no comma outside a call.
bool side_effect_free(const std::vector<Token>& t, std::size_t first, std::size_t last) {
  static const auto& operators =
      *new std::set<std::string>{"<", ">", "<=", ">=", "==", "!=", "&&", "||", "!", "+", "-", "*", "/", "%", "&",
                                 "|", "^", "~", "<<", ">>", "(", ")", "[", "]", ".", "->", "::", "?", ":", ","};
  if (first >= last) return false;
  int call_depth = 0;  // parentheses opened by a call (commas allowed inside)
  std::vector<bool> opened_by_call;
  for (std::size_t k = first; k < last; ++k) {
    const Token& tok = t[k];
    switch (tok.kind) {
      case TokenKind::identifier:
        if (punct(t, k + 1, "(") && !pure_callee(tok.text)) return false;
        break;
      case TokenKind::number:
      case TokenKind::character:
        break;
      case TokenKind::punct:
        if (!operators.count(tok.text)) return false;
        if (tok.is("(")) {
          const bool call = k > first && t[k - 1].kind == TokenKind::identifier;
          opened_by_call.push_back(call);
          call_depth += call;
        } else if (tok.is(")")) {
          if (opened_by_call.empty()) return false;
          call_depth -= opened_by_call.back();
          opened_by_call.pop_back();
        } else if (tok.is(",") && call_depth == 0) {
          return false;
        }
        break;
      default:
        return false;  // strings, directives
    }
  }
  return opened_by_call.empty();
}

// The `break`s of the loop whose body is [first, last]: those outside every loop and switch
// nested in it. nullopt when the body has a `goto` (which MSL refuses anyway) or a statement
// it cannot follow.
std::optional<std::vector<std::size_t>> own_breaks(const std::vector<Token>& t, std::size_t first, std::size_t last) {
  std::vector<std::size_t> breaks;
  for (std::size_t k = first; k <= last && k < t.size(); ++k) {
    const Token& tok = t[k];
    if (tok.is_identifier("goto")) return std::nullopt;
    if (tok.is_identifier("break")) {
      breaks.push_back(k);
    } else if (tok.is_identifier("for") || tok.is_identifier("while") || tok.is_identifier("do") ||
               tok.is_identifier("switch")) {
      const std::size_t end = statement_end(t, k);  // their breaks are theirs
      if (end >= t.size() || end > last) return std::nullopt;
      k = end;
    }
  }
  return breaks;
}

// True when every use of `v` in [first, last] reads it: no assignment or increment, no
// address taken, no reference bound to it (alone as an argument or an initialiser).
bool only_read(const std::vector<Token>& t, std::size_t first, std::size_t last, const std::string& v) {
  for (std::size_t k = first; k <= last && k < t.size(); ++k) {
    if (t[k].kind != TokenKind::identifier || t[k].text != v) continue;
    const Token* prev = k > 0 ? &t[k - 1] : nullptr;
    const Token* next = k + 1 < t.size() ? &t[k + 1] : nullptr;
    if (prev && prev->kind == TokenKind::punct && any_of(*prev, {".", "->"})) continue;  // a member named v
    if (next && next->kind == TokenKind::punct &&
        any_of(*next, {"=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>=", "++", "--"}))
      return false;
    if (prev && prev->kind == TokenKind::punct && any_of(*prev, {"++", "--", "&"})) return false;
    const bool alone_after = prev && prev->kind == TokenKind::punct && any_of(*prev, {"(", ",", "{", "="});
    const bool alone_before = next && next->kind == TokenKind::punct && any_of(*next, {")", ",", "}", ";"});
    if (alone_after && alone_before) {
      // `x = v;` reads v; `T& r = v;`, `f(v)` and `T& r{v}` may bind a reference to it.
      if (!prev->is("=")) return false;
      if (k >= 3 && t[k - 3].kind == TokenKind::punct && any_of(t[k - 3], {"&", "&&"})) return false;
    }
  }
  return true;
}

// A loop `for (T v = ...; v OP x; ++v)` (or x OP' v, or --v): the strip can end on v itself
// (metal::mtl_strip::loop_strip in the prelude's metal_stop.h), which keeps its loop vectorisable.
struct CountedLoop {
  int op;                     // 0 `<`, 1 `<=`, 2 `>`, 3 `>=`
  std::string variable;
  std::size_t x_first, x_last;  // x's tokens [x_first, x_last)
  std::string step;             // "" for steps of one, else the step of `v += step` (`-=` counting down)
  bool fixed_bound = false;     // x cannot change while the loop runs: the strip tests `v OP min(x, end)`
};

// True when `name`, named at `use`, is a variable of its function held by value: declared
// after a type name (not after `&` or `*`), its address never taken and never written from its
// declaration to `last`, so that nothing but its own name changes it and nothing does.
bool plain_value(const std::vector<Token>& t, const std::string& name, std::size_t use, std::size_t last) {
  std::size_t decl = use;
  while (decl-- > 0) {
    if (!t[decl].is_identifier(name.c_str()) || decl < 2) continue;
    if (!punct(t, decl + 1, "=") && !punct(t, decl + 1, ";") && !punct(t, decl + 1, ",") && !punct(t, decl + 1, ")") &&
        !punct(t, decl + 1, "[") && !punct(t, decl + 1, "{"))
      continue;  // a use
    const Token& prev = t[decl - 1];
    // `T* v` or `T& v` (a declaration: T after a statement's start, a `(`, a `,` or a qualifier), not `a * v`.
    const bool after_type = (t[decl - 2].kind == TokenKind::identifier || punct(t, decl - 2, ">")) &&
                            (decl < 3 || t[decl - 3].kind == TokenKind::identifier ||
                             (t[decl - 3].kind == TokenKind::punct && any_of(t[decl - 3], {"(", ",", ";", "{", "}", ">", "::"})));
    if (prev.kind == TokenKind::punct && any_of(prev, {"&", "&&", "*"}) && after_type) return false;  // T& v, T* v
    if (prev.kind != TokenKind::identifier || prev.is_identifier("return") || prev.is_identifier("case")) continue;
    if (punct(t, decl + 1, "[") && !punct(t, decl + 2, "[")) return false;  // an array, not [[attribute]]
    break;
  }
  if (decl >= use) return false;
  for (std::size_t k = decl + 1; k <= last && k < t.size(); ++k)
    if (t[k].is_identifier(name.c_str()) && k > 0 && punct(t, k - 1, "&") &&
        !(k > 1 && (t[k - 2].kind == TokenKind::identifier || t[k - 2].kind == TokenKind::number ||
                    punct(t, k - 2, ")") || punct(t, k - 2, "]"))))
      return false;  // &name: its address taken (a binary & has an operand before it)
  return only_read(t, decl + 1, last, name);
}

// True when `name`, named at `use`, is declared as a reference to the constant address space
// (`constant T& name`, a kernel's or a function's parameter): read-only to every thread.
bool constant_reference(const std::vector<Token>& t, const std::string& name, std::size_t use) {
  for (std::size_t decl = use; decl-- > 1;) {
    if (!t[decl].is_identifier(name.c_str())) continue;
    if (!punct(t, decl + 1, ")") && !punct(t, decl + 1, ",") && !punct(t, decl + 1, "[") && !punct(t, decl + 1, "=") &&
        !punct(t, decl + 1, ";") && !punct(t, decl + 1, "{"))
      continue;
    const Token& prev = t[decl - 1];
    const bool declared = prev.kind == TokenKind::identifier || punct(t, decl - 1, "&") || punct(t, decl - 1, "*") ||
                          punct(t, decl - 1, ">");
    if (!declared || prev.is_identifier("return")) continue;  // a use: the declaration lies further back
    if (!punct(t, decl - 1, "&")) return false;               // the nearest declaration: not a reference
    for (std::size_t k = decl - 1; k-- > 0 && decl - k < 12;) {
      if (t[k].is_identifier("constant")) return true;
      if (t[k].kind == TokenKind::punct && any_of(t[k], {"(", ",", ";", "{", "}"})) return false;
    }
    return false;
  }
  return false;
}

// True when the tokens [first, last) (a loop's bound x) cannot change while the loop runs:
// literals, arithmetic, values the function holds and never writes nor takes the address of
// (plain_value) and constant-address-space references and their members; never `v` itself.
bool fixed_expression(const std::vector<Token>& t, std::size_t first, std::size_t last, const std::string& v,
                      std::size_t body_last) {
  static const auto& operators = *new std::set<std::string>{"+", "-", "*", "/", "%", "<<", ">>", "&", "|", "^", "~",
                                                            "(", ")", "."};
  if (first >= last) return false;
  for (std::size_t k = first; k < last; ++k) {
    const Token& tok = t[k];
    if (tok.kind == TokenKind::number) continue;
    if (tok.kind == TokenKind::punct) {
      if (!operators.count(tok.text)) return false;
      if (tok.is("*") && (k == first || t[k - 1].kind == TokenKind::punct)) return false;  // a dereference
      if (tok.is("&") && (k == first || t[k - 1].kind == TokenKind::punct)) return false;  // an address
      continue;
    }
    if (tok.kind != TokenKind::identifier || tok.text == v || punct(t, k + 1, "(")) return false;
    if (k > first && punct(t, k - 1, ".")) continue;  // a member of a constant reference (below)
    // A member's base: constant data only (only_read does not see a member's assignment).
    if (punct(t, k + 1, ".") ? !constant_reference(t, tok.text, k)
                             : !plain_value(t, tok.text, k, body_last) && !constant_reference(t, tok.text, k))
      return false;
  }
  return true;
}

std::optional<CountedLoop> counted_loop(const std::vector<Token>& t, std::size_t init_first, std::size_t init_last,
                                        std::size_t cond_first, std::size_t cond_last, std::size_t inc_first,
                                        std::size_t inc_last, std::size_t body_first, std::size_t body_last,
                                        bool strided) {
  // The condition: one comparison at the top level, one side a lone identifier.
  std::size_t op_at = cond_last;
  int depth = 0;
  for (std::size_t k = cond_first; k < cond_last; ++k) {
    const Token& tok = t[k];
    if (tok.kind != TokenKind::punct) continue;
    if (any_of(tok, {"(", "[", "{"})) ++depth;
    else if (any_of(tok, {")", "]", "}"})) --depth;
    else if (depth == 0 && any_of(tok, {"<", "<=", ">", ">="})) {
      if (op_at != cond_last) return std::nullopt;
      op_at = k;
    } else if (depth == 0 && any_of(tok, {"&&", "||", "?", ":", "==", "!=", "&", "|", "^", ",", "="})) {
      return std::nullopt;
    }
  }
  if (op_at == cond_last || op_at == cond_first || op_at + 1 == cond_last) return std::nullopt;
  const std::string& op_text = t[op_at].text;
  int op = op_text == "<" ? 0 : op_text == "<=" ? 1 : op_text == ">" ? 2 : 3;
  CountedLoop loop{op, "", 0, 0, ""};
  if (op_at == cond_first + 1 && t[cond_first].kind == TokenKind::identifier) {
    loop.variable = t[cond_first].text;
    loop.x_first = op_at + 1;
    loop.x_last = cond_last;
  } else if (op_at + 2 == cond_last && t[op_at + 1].kind == TokenKind::identifier) {
    loop.variable = t[op_at + 1].text;
    loop.x_first = cond_first;
    loop.x_last = op_at;
    loop.op = op ^ 2;  // x < v is v > x
  } else {
    return std::nullopt;
  }
  const std::string& v = loop.variable;
  // The step: ++v, v++, --v, v--, v += 1, v -= 1, counting the way the comparison goes.
  int step = 0;
  const std::size_t n = inc_last - inc_first;
  if (n == 2 && t[inc_first].is_identifier(v.c_str()) && punct(t, inc_first + 1, "++")) step = 1;
  else if (n == 2 && punct(t, inc_first, "++") && t[inc_first + 1].is_identifier(v.c_str())) step = 1;
  else if (n == 2 && t[inc_first].is_identifier(v.c_str()) && punct(t, inc_first + 1, "--")) step = -1;
  else if (n == 2 && punct(t, inc_first, "--") && t[inc_first + 1].is_identifier(v.c_str())) step = -1;
  else if (n == 3 && t[inc_first].is_identifier(v.c_str()) && t[inc_first + 2].kind == TokenKind::number &&
           (t[inc_first + 2].text == "1" || t[inc_first + 2].text == "1u" || t[inc_first + 2].text == "1U"))
    step = punct(t, inc_first + 1, "+=") ? 1 : punct(t, inc_first + 1, "-=") ? -1 : 0;
  // Or v += e, v -= e with e a literal or a variable held by value that nothing writes (`k +=
  // threads` of a grid-stride loop): the strip ends e * L steps on where e > 0 (metal_stop.h).
  if (strided && step == 0 && n >= 3 && t[inc_first].is_identifier(v.c_str()) &&
      (punct(t, inc_first + 1, "+=") || punct(t, inc_first + 1, "-="))) {
    bool plain = true;
    for (std::size_t k = inc_first + 2; k < inc_last && plain; ++k) {
      const Token& tok = t[k];
      if (tok.kind == TokenKind::number) continue;
      if (tok.kind == TokenKind::identifier)
        plain = tok.text != v && plain_value(t, tok.text, inc_first, body_last);
      else
        plain = tok.kind == TokenKind::punct && any_of(tok, {"+", "-", "*", "/", "(", ")"}) &&
                !(tok.is("*") && (k == inc_first + 2 || t[k - 1].kind == TokenKind::punct));  // no dereference
    }
    if (plain && side_effect_free(t, inc_first + 2, inc_last)) {
      step = punct(t, inc_first + 1, "+=") ? 1 : -1;
      for (std::size_t k = inc_first + 2; k < inc_last; ++k) loop.step += t[k].text + " ";
    }
  }
  if (step == 0 || (step > 0) != (loop.op <= 1)) return std::nullopt;
  // v is declared by the loop (so nothing before it holds a reference to it), as a value:
  // `T v = ...` with no `&` or `*` in the declaration.
  if (init_last - init_first < 3 || t[init_first].is_identifier(v.c_str())) return std::nullopt;
  bool declared = false;
  for (std::size_t k = init_first; k < init_last && !declared; ++k) {
    if (t[k].kind == TokenKind::punct && any_of(t[k], {"&", "&&", "*", "[", "(", "=", ","})) return std::nullopt;
    declared = t[k].is_identifier(v.c_str()) && k > init_first && t[k - 1].kind == TokenKind::identifier &&
               (punct(t, k + 1, "=") || punct(t, k + 1, "{"));
  }
  if (!declared || !only_read(t, body_first, body_last, v) || !only_read(t, cond_first, cond_last, v))
    return std::nullopt;
  loop.fixed_bound = fixed_expression(t, loop.x_first, loop.x_last, v, body_last);
  return loop;
}

// True when the body [first, last] holds no loop and nothing that works across a SIMD-group or
// threadgroup (CUDA's rewrites of those, product nests and lanes rejoined after divergent
// branches, see the loops as written).
bool innermost(const std::vector<Token>& t, std::size_t first, std::size_t last) {
  for (std::size_t k = first; k <= last && k < t.size(); ++k) {
    const Token& tok = t[k];
    if (tok.kind != TokenKind::identifier) continue;
    if (tok.is_identifier("for") || tok.is_identifier("while") || tok.is_identifier("do")) return false;
    if (tok.text.rfind("simd", 0) == 0 || tok.text.rfind("quad_", 0) == 0 || tok.text.rfind("threadgroup_barrier", 0) == 0)
      return false;
  }
  return true;
}

// A decimal or hexadecimal integer literal of at most 1024 (a strip's length on CUDA).
bool short_count(const Token& tok) {
  if (tok.kind != TokenKind::number) return false;
  std::size_t used = 0;
  unsigned long long value = 0;
  try {
    value = std::stoull(tok.text, &used, 0);
  } catch (...) {
    return false;
  }
  const std::string suffix = tok.text.substr(used);
  return value <= 1024 && suffix.find_first_not_of("uUlL") == std::string::npos;
}

// The type of a stepped loop's variable (`for (T v = ...; v OP x; v += e)`, counting up) whose run
// the CPU can bound before it starts (metal_stop.h, short_run): x cannot change while it runs and
// e can be evaluated ahead of the loop (no division: the loop evaluates e only after an iteration).
// T is spelled as the loop spells it, plain names only (no qualifier, no `auto`).
std::optional<std::string> short_loop_type(const std::vector<Token>& t, std::size_t init_first, std::size_t init_last,
                                           const CountedLoop& loop) {
  if (!loop.fixed_bound || loop.op > 1 || loop.step.empty()) return std::nullopt;
  if (loop.step.find('/') != std::string::npos || loop.step.find('%') != std::string::npos) return std::nullopt;
  std::string type;
  for (std::size_t k = init_first; k < init_last; ++k) {
    if (t[k].is_identifier(loop.variable.c_str())) return type.empty() ? std::nullopt : std::optional<std::string>(type);
    const bool name = t[k].kind == TokenKind::identifier &&
                      !any_of(t[k], {"const", "volatile", "static", "constexpr", "register", "auto", "thread",
                                     "thread_local", "inline", "typename"});
    if (!name && !punct(t, k, "::")) return std::nullopt;
    type += t[k].text + " ";
  }
  return std::nullopt;
}

}  // namespace

bool is_short_loop(const std::vector<Token>& t, std::size_t i) {
  if (!t[i].is_identifier("for") || !punct(t, i - 1, ";")) return false;
  for (std::size_t k = i - 1; k-- > 0;) {
    if (punct(t, k, "{")) return k + 3 < i && t[k + 1].is_identifier("const") && t[k + 2].is_identifier("bool") &&
                                 t[k + 3].is_identifier(kShortFlag);
    if (punct(t, k, ";") || punct(t, k, "}")) return false;
  }
  return false;
}

std::size_t strip_of(const std::vector<Token>& t, std::size_t body) {
  if (!punct(t, body, "{")) return t.size();
  std::size_t k = body + 1;
  if (k + 4 < t.size() && t[k].is_identifier("bool") && t[k + 1].kind == TokenKind::identifier &&
      t[k + 1].text.rfind(kBreakPrefix, 0) == 0)
    k += 5;  // bool __metalcall_break_N = false ;
  return k < t.size() && is_strip_loop(t, k) ? k : t.size();
}

bool is_strip_loop(const std::vector<Token>& t, std::size_t i) {
  if (!t[i].is_identifier("for") || !punct(t, i + 1, "(")) return false;
  for (std::size_t k = i + 2; k < t.size() && !punct(t, k, ";"); ++k)
    if (t[k].kind == TokenKind::identifier && t[k].text.rfind(kStripPrefix, 0) == 0) return true;
  return false;
}

std::vector<Token> strip_mine_loops(const std::vector<Token>& t, bool innermost_only) {
  std::map<std::size_t, std::vector<Token>> before;   // inserted before token i (opening text)
  std::map<std::size_t, std::vector<Token>> closing;  // inserted before token i, ahead of `before`
  std::map<std::size_t, std::vector<Token>> replaced;  // token i written as these
  std::set<std::size_t> dropped;
  std::set<std::size_t> do_whiles;
  // Tokens of `text`, placed at `at` (the lexer's spelling rules: no comments, plain C++).
  auto tokens_of = [](const std::string& text, const Token& at) {
    std::vector<Token> out = tokenize(text);
    for (Token& tok : out) {
      tok.line = at.line;
      tok.column = at.column;
    }
    return out;
  };
  auto text_of = [&t](std::size_t first, std::size_t last) {
    std::string s;
    for (std::size_t k = first; k < last; ++k) s += t[k].text + " ";
    return s;
  };
  for (std::size_t i = 0; i + 1 < t.size(); ++i) {
    const bool is_for = t[i].is_identifier("for"), is_while = t[i].is_identifier("while");
    if (t[i].is_identifier("do")) {
      const std::size_t body_end = statement_end(t, i + 1);  // the do-while's `while` follows it
      if (body_end + 1 < t.size()) do_whiles.insert(body_end + 1);
      continue;
    }
    if ((!is_for && !is_while) || do_whiles.count(i) || !punct(t, i + 1, "(")) continue;
    if (i > 0 && t[i - 1].kind == TokenKind::directive) continue;  // `#pragma unroll` keeps its loop
    const std::size_t close = matching(t, i + 1);
    if (close >= t.size() || close + 1 >= t.size() || t[close + 1].kind == TokenKind::directive) continue;
    const std::size_t body_end = statement_end(t, close + 1);
    if (body_end >= t.size()) continue;
    const auto breaks = own_breaks(t, close + 1, body_end);
    if (!breaks) continue;
    // The header's parts: for (init; cond; inc) or while (cond).
    std::size_t init_first = i + 2, init_last = i + 2;
    std::size_t cond_first = i + 2, cond_last = close, inc_first = close, inc_last = close;
    if (is_for) {
      std::vector<std::size_t> semicolons;
      for (std::size_t k = i + 2; k < close; ++k) {
        if (punct(t, k, "(") || punct(t, k, "[") || punct(t, k, "{")) k = matching(t, k);
        else if (punct(t, k, ";")) semicolons.push_back(k);
      }
      if (semicolons.size() != 2) continue;  // a range-based for, or an odd header
      init_last = semicolons[0];
      cond_first = semicolons[0] + 1;
      cond_last = semicolons[1];
      inc_first = semicolons[1] + 1;
      inc_last = close;
    }
    const bool endless = cond_first == cond_last;  // for (;;): the strip has no condition
    if (!endless && !side_effect_free(t, cond_first, cond_last)) continue;
    // Innermost loops only (on both targets): a loop with a loop inside checks its nest's counter
    // each iteration (metal_stop.h), which costs nothing beside its inner loop and sees the inner
    // loops' strips (a strip-mined outer loop would check once per strip of its own: 4096 runs
    // of its inner loops between checks).
    if (!innermost(t, close + 1, body_end)) continue;
    const std::string cond = endless ? "" : text_of(cond_first, cond_last);
    const std::string name = kStripPrefix + std::to_string(i);
    const std::string flag = kBreakPrefix + std::to_string(i);
    const auto counted = is_for && !endless ? counted_loop(t, init_first, init_last, cond_first, cond_last, inc_first,
                                                           inc_last, close + 1, body_end, /*strided=*/true)
                                            : std::nullopt;
    // Strides end on their variable on CUDA only, where NVRTC then compiles the strip as the loop
    // as written; on the CPU neither a strip's entry nor a counter is cheap beside a short
    // grid-stride loop's few iterations (bench_stop_checks.py: c = a * b as a loop, +14 to +20%
    // with clang). There such a loop stays as written and counts only when short_run cannot
    // bound it before it starts: `{ const bool __metalcall_short = short_run<T, ...>(x, e); for
    // ... }`, and its check (__METALCALL_LOOP_CHECK_SHORT, loop_stops.cpp) tests the flag,
    // which the compiler takes out of the loop (one copy of it without the counter).
    if (!innermost_only && counted && !counted->step.empty()) {
      if (const auto type = short_loop_type(t, init_first, init_last, *counted)) {
        const std::string x = text_of(counted->x_first, counted->x_last), e = counted->step;
        const std::string flag_text = std::string("{ const bool ") + kShortFlag + " = metal :: mtl_strip :: short_run < " +
                                      std::to_string(counted->op) + " , " + *type + " , decltype ( " + x + " ) , decltype ( metal :: mtl_declval < " + *type +
                                      " > ( ) + ( " + e + " ) ) > ( ( " + x + " ) , ( " + e + " ) ) ; ";
        auto& opening = before[i];
        for (const Token& tok : tokens_of(flag_text, t[i])) opening.push_back(tok);
        auto& ends = closing[body_end + 1];
        const auto tail = tokens_of("}", t[body_end]);
        ends.insert(ends.begin(), tail.begin(), tail.end());
      }
      continue;
    }
    // On the CPU only loops that count run in strips: a strip that ends on a counter has two
    // exits, which neither g++ nor clang vectorises, so it would only add a strip's cost to the
    // loop's; the loop checks a counter instead (metal_stop.h).
    if (!innermost_only && !counted) continue;
    // A short loop of a constant count (CUDA): unrolled in full, its counter folds away as it is.
    if (innermost_only && counted && counted->x_last == counted->x_first + 1 && short_count(t[counted->x_first]))
      continue;
    std::string head = "{ ";
    if (!breaks->empty()) head += "bool " + flag + " = false ; ";
    if (counted) {
      const std::string x = text_of(counted->x_first, counted->x_last);
      head += "for ( metal :: mtl_strip :: loop_strip < " + std::to_string(counted->op) + " , decltype ( " +
              counted->variable + " ) , decltype ( " + x + " )" +
              (counted->step.empty() ? "" : " , decltype ( " + counted->variable + " + ( " + counted->step + " ) )") +
              " > " + name + " ( " + (counted->fixed_bound ? "metal :: mtl_strip :: upto_t ( ) , " : "") +
              counted->variable + (counted->step.empty() ? "" : " , ( " + counted->step + " )") +
              (counted->fixed_bound ? " , ( " + x + " ) ) ; " + name + " . within ( " + counted->variable + " ) ; "
                                    : " ) ; ( " + cond + " ) && " + name + " . next ( " + counted->variable + " ) ; ");
    } else {
      head += "for ( unsigned " + name + " = 0u ; __METALCALL_STRIP_MORE ( " + name + " )" +
              (endless ? "" : " && ( " + cond + " )") + " ; ++ " + name + (inc_first < inc_last ? " , " : " ");
    }
    for (std::size_t k = inc_first; k < inc_last; ++k) {
      head += t[k].text + " ";
      dropped.insert(k);  // the increment moves to the inner loop
    }
    head += ") ";
    const Token& at = t[close];
    auto& opening = before[close + 1];
    for (const Token& tok : tokens_of(head, at)) opening.push_back(tok);
    // A break leaves the strip with the flag set, and the flag leaves the loop: every exit
    // of the loop as written (break, return; continue stays in the strip) leaves both.
    for (std::size_t b : *breaks) replaced[b] = tokens_of("{ " + flag + " = true ; break ; }", t[b]);
    // Inner loops registered later close first: their text goes ahead of this one's.
    auto& ends = closing[body_end + 1];
    const auto tail = tokens_of((breaks->empty() ? "" : "if ( " + flag + " ) break ; ") + std::string("}"), t[body_end]);
    ends.insert(ends.begin(), tail.begin(), tail.end());
  }
  if (before.empty()) return t;
  // Inserted tokens take columns after the token they follow, so that they print apart.
  std::vector<Token> out;
  out.reserve(t.size() + before.size() * 32);
  auto append = [&out](Token tok) {
    if (!out.empty() && tok.line == out.back().line && tok.column <= out.back().column)
      tok.column = out.back().column + static_cast<int>(out.back().text.size()) + 1;
    out.push_back(std::move(tok));
  };
  for (std::size_t i = 0; i <= t.size(); ++i) {
    if (auto c = closing.find(i); c != closing.end())
      for (const Token& tok : c->second) append(tok);
    if (auto b = before.find(i); b != before.end())
      for (const Token& tok : b->second) append(tok);
    if (i == t.size() || dropped.count(i)) continue;
    if (auto r = replaced.find(i); r != replaced.end())
      for (const Token& tok : r->second) append(tok);
    else
      out.push_back(t[i]);
  }
  return out;
}

}  // namespace metalcall::msl
