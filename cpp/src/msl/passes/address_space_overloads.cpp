// Overloads that differ only in address space (`f(device float*)` and
// `f(threadgroup float*)`): the targets drop address spaces, so such overloads would
// collide. Their pointer parameters become metal::mtl_space_ptr<T, SPACE>, and at
// calls to them an argument that is a plain variable is tagged with the address space
// of its declaration (metal::mtl_space<SPACE>(x)), so C++ overload resolution picks
// the overload MSL would (metal_address_space.h). Overloads by the address space of a
// reference take a leading tag of those spaces, and calls pass their arguments' spaces
// (reference_overloads below).
#include "msl/passes/address_space_overloads.hpp"

#include <algorithm>
#include <set>

#include "msl/analysis/call_graph.hpp"            // matching
#include "msl/analysis/implementation_rules.hpp"  // class_bodies
#include "msl/errors/source_errors.hpp"
#include "msl/passes/argument_spaces.hpp"
#include "msl/passes/declared_spaces.hpp"
#include "msl/lex/token_text.hpp"

namespace metalcall::msl {

namespace {

using namespace declared_spaces;

std::size_t matching_close(const std::vector<Token>& t, std::size_t open) {
  int depth = 0;
  for (std::size_t j = open; j < t.size(); ++j) {
    if (t[j].is("(")) ++depth;
    else if (t[j].is(")") && --depth == 0) return j;
  }
  return t.size();
}

// The parameters (or arguments) between the parentheses at open..close, as token ranges.
std::vector<std::pair<std::size_t, std::size_t>> split_list(const std::vector<Token>& t, std::size_t open,
                                                            std::size_t close) {
  std::vector<std::pair<std::size_t, std::size_t>> out;
  int depth = 0;
  std::size_t begin = open + 1;
  for (std::size_t j = open + 1; j < close; ++j) {
    if (t[j].is("(") || t[j].is("[") || t[j].is("{") || t[j].is("<")) ++depth;
    else if (t[j].is(")") || t[j].is("]") || t[j].is("}") || t[j].is(">")) --depth;
    else if (t[j].is(">>")) depth -= 2;
    else if (depth == 0 && t[j].is(",")) {
      out.emplace_back(begin, j);
      begin = j + 1;
    }
  }
  if (begin < close) out.emplace_back(begin, close);
  return out;
}

struct Param {
  std::size_t begin, end;  // tokens [begin, end), default argument excluded
  std::size_t star = 0;    // the pointer's '*' (0: not a pointer)
  int space = -1;
  std::string shape;       // the type without address spaces and name
  bool pointee_const = false;
  bool reference = false;  // `device const float& p` (a pointer's `*` comes first: `device float* thread& p` is none)
  bool defaulted = false;
};

struct Function {
  std::size_t name;
  std::size_t start = 0, end = 0;  // the whole declaration (template header and body included)
  std::vector<Param> params;
  std::string key;     // name and parameter types without address spaces
  std::string spaces;  // the parameters' address spaces
  std::size_t open = 0;     // the parameter list's '('
  std::size_t body = 0;     // the body's '{' (0: a declaration alone)
  bool is_operator = false;
  bool qualified = false;   // `S::f(…)`, `ns::f(…)`
  std::size_t qualifier = 0;  // where a qualified name's `A::B::` starts
};

Param parse_param(const std::vector<Token>& t, std::size_t begin, std::size_t end) {
  Param p{begin, end, 0, -1, {}, false, false, false};
  for (std::size_t j = begin; j < end; ++j)
    if (t[j].is("=")) {
      p.end = j;
      p.defaulted = true;
      break;
    }
  std::size_t name_end = p.end;
  if (name_end > p.begin + 1 && t[name_end - 1].kind == TokenKind::identifier && ends_type(t[name_end - 2])) --name_end;
  int depth = 0;
  for (std::size_t j = p.begin; j < name_end; ++j) {
    if (t[j].is("<")) ++depth;
    else if (t[j].is(">")) --depth;
    else if (depth == 0 && t[j].is("*")) p.star = j;
    else if (depth == 0 && !p.star && (t[j].is("&") || t[j].is("&&"))) p.reference = true;
    if (depth == 0 && !p.star && t[j].is_identifier("const")) p.pointee_const = true;
    const int s = space_of(t[j]);
    if (s >= 0) p.space = s;
    else p.shape += t[j].text + " ";
  }
  return p;
}

std::vector<Function> functions(const std::vector<Token>& t) {
  std::vector<Function> out;
  for (std::size_t i = 1; i + 1 < t.size(); ++i) {
    if (!t[i + 1].is("(")) continue;
    // `operator+=(...)`: the name is the operator's token.
    const bool op = i >= 2 && t[i - 1].is_identifier("operator") && t[i].kind == TokenKind::punct && ends_type(t[i - 2]);
    // `void S::f(…) {`: a member defined out of its class (its parameters must be rewritten as
    // the declaration's are: "out-of-line definition does not match" before 2026-12-05), or
    // `void A::B::f(…) {`, a function of a namespace (key_by_namespace tells them apart).
    std::size_t q = i;  // back over `A::B::`
    while (q >= 2 && t[q - 1].is("::") && t[q - 2].kind == TokenKind::identifier) q -= 2;
    const bool qualified = q < i && q >= 1 && ends_type(t[q - 1]) && !t[q - 1].is_identifier("return");
    if (!op && (t[i].kind != TokenKind::identifier || declared_spaces::is_keyword(t[i].text) ||
                !(ends_type(t[i - 1]) || qualified)))
      continue;
    if (t[i - 1].is_identifier("return") || t[i - 1].is_identifier("kernel")) continue;
    const std::size_t close = matching_close(t, i + 1);
    std::size_t after = close + 1;
    while (after < t.size() && (t[after].is_identifier("const") || t[after].is_identifier("thread") ||
                                t[after].is_identifier("device") || t[after].is_identifier("threadgroup")))
      ++after;
    if (after >= t.size() || !(t[after].is("{") || t[after].is(";"))) continue;
    Function f{i, 0, 0, {}, {}, {}};
    f.key = (op ? "operator" : "") + t[i].text + "(";
    f.start = i;
    while (f.start > 0 && !t[f.start - 1].is(";") && !t[f.start - 1].is("{") && !t[f.start - 1].is("}") &&
           !(t[f.start - 1].is(":") && f.start >= 2 &&
             (t[f.start - 2].text == "public" || t[f.start - 2].text == "private" || t[f.start - 2].text == "protected")))
      --f.start;
    f.end = after;
    f.open = i + 1;
    f.is_operator = op;
    f.qualified = qualified;
    f.qualifier = q;
    if (t[after].is("{")) {
      f.body = after;
      int depth = 0;
      for (; f.end < t.size(); ++f.end) {
        if (t[f.end].is("{")) ++depth;
        else if (t[f.end].is("}") && --depth == 0) break;
      }
    }
    for (const auto& [b, e] : split_list(t, i + 1, close)) {
      f.params.push_back(parse_param(t, b, e));
      f.key += f.params.back().shape + ",";
      f.spaces += char('0' + f.params.back().space + 1);
    }
    out.push_back(std::move(f));
  }
  return out;
}

// The address space of the variable named at token `use`, from its nearest
// declaration before it: a pointer or array declared with an address space has
// that space, one declared without is thread-local; -1 when unknown or not a pointer.
int declared_space(const std::vector<Token>& t, std::size_t use) {
  const std::string& name = t[use].text;
  for (std::size_t k = use; k-- > 1;) {
    if (t[k].text != name || t[k].kind != TokenKind::identifier || !ends_type(t[k - 1]) || k + 1 >= t.size()) continue;
    const Token& next = t[k + 1];
    if (!(next.is("[") || next.is("=") || next.is(";") || next.is(",") || next.is(")"))) continue;
    int depth = 0, space = -1;
    bool pointer = next.is("[") && !(k + 2 < t.size() && t[k + 2].is("["));  // an array, not [[attribute]]
    for (std::size_t j = k; j-- > 0;) {
      if (t[j].is(")") || t[j].is("]")) ++depth;
      else if (t[j].is("(") || t[j].is("[")) {
        if (--depth < 0) break;
      } else if (depth == 0 && (t[j].is(";") || t[j].is("{") || t[j].is("}") || t[j].is(","))) break;
      if (t[j].is("*")) pointer = true;
      if (t[j].is_identifier("auto")) return -1;
      if (space_of(t[j]) >= 0) space = space_of(t[j]);
    }
    // (A reference or value in an address space, `constant uint& k`, is no pointer: untagged.)
    if (!pointer) return -1;
    return space >= 0 ? space : 0;
  }
  return -1;
}

// `&x.m[i].n`, `&p->m`, `&p[i]`: an address taken of a member or element of the object named
// right after the `&`, through member accesses and subscripts only, or of the object itself
// (`&a`, naga's `threadgroup atomic_uint& a` kernel parameter); the name's token, or 0.
std::size_t address_root(const std::vector<Token>& t, std::size_t b, std::size_t e, bool* derefs) {
  if (e < b + 2 || !t[b].is("&") || t[b + 1].kind != TokenKind::identifier) return 0;
  *derefs = e > b + 2 && (t[b + 2].is("->") || t[b + 2].is("["));
  for (std::size_t j = b + 2; j < e;) {
    if ((t[j].is(".") || t[j].is("->")) && j + 1 < e && t[j + 1].kind == TokenKind::identifier) {
      j += 2;
    } else if (t[j].is("[")) {
      int depth = 0;
      std::size_t k = j;
      for (; k < e; ++k) {
        if (t[k].is("[")) ++depth;
        else if (t[k].is("]") && --depth == 0) break;
      }
      if (k >= e) return 0;
      j = k + 1;
    } else {
      return 0;
    }
  }
  return b + 1;
}

// --- Overloads by the address space of reference parameters -------------------------------
// `float rd(device const float& p)` beside `float rd(thread const float& p)`: a C++ reference
// binds any object, so the targets cannot tell them apart by type. Where their bodies are the
// same (MLX's complex `operator+=` for each space) the first serves all; where they differ,
// each declaration takes first a tag type of its reference parameters' spaces
// (metal::mtl_ref_spaces<1>, metal_address_space.h) and each call passes the spaces of its
// arguments (metal::mtl_ref_call<1>{}), read from their forms (argument_spaces.hpp); a call whose
// argument's space the translator cannot read is a CompileError, never a guess.

std::string body_text(const std::vector<Token>& t, const Function& f) {
  return f.body ? body_as_targets_see_it(t, f.body, f.end) : std::string();
}

// Whether token `at` lies where functions are declared: file scope, a namespace's or a class's
// braces, not a function's body (where `a * rd(t);` reads like a declaration).
bool at_declaration_scope(const std::vector<Token>& t, std::size_t at, const std::vector<ClassBody>& classes) {
  int depth = 0;
  for (std::size_t m = at; m-- > 0;) {
    if (t[m].is("}")) {
      ++depth;
    } else if (t[m].is("{") && depth-- == 0) {
      for (const ClassBody& c : classes)
        if (c.open == m) return true;
      return (m >= 1 && (t[m - 1].is_identifier("namespace") || t[m - 1].kind == TokenKind::string)) ||
             (m >= 2 && t[m - 2].is_identifier("namespace"));
    }
  }
  return true;
}

bool in_class(const Function& f, const std::vector<ClassBody>& classes) {
  for (const ClassBody& c : classes)
    if (c.open < f.name && f.name < c.close) return true;
  return false;
}

// Each function's namespace goes into its key, so that `A::put` and `C::put` overloads are never
// taken for overloads of each other: the namespaces around its declaration, then those its
// qualifier names (`void A::B::put(…) {` defines a function of A::B, declared in its braces).
// A qualifier that names no namespace of the source is a class's (a member defined out of its
// class, merged with its declarations below); one that names a namespace makes a free function, whose
// overloads by reference spaces are tagged as any (before 2026-12-06 such out-of-line definitions
// were taken for members: declarations vanished, "redefinition of 'put'").
void key_by_namespace(const std::vector<Token>& t, std::vector<Function>& fns) {
  std::vector<std::pair<std::size_t, std::size_t>> bodies;  // named namespaces' braces
  std::set<std::string> names;
  for (std::size_t i = 0; i + 2 < t.size(); ++i)
    if (t[i].is_identifier("namespace") && t[i + 1].kind == TokenKind::identifier && t[i + 2].is("{")) {
      bodies.push_back({i + 2, matching(t, i + 2)});
      names.insert(t[i + 1].text);
    }
  for (Function& f : fns) {
    std::string scope;
    for (const auto& [open, close] : bodies)  // in source order: outer namespaces first
      if (open < f.name && f.name < close) scope += t[open - 1].text + "::";
    if (f.qualified) {
      bool namespaces = true;
      for (std::size_t j = f.qualifier; j < f.name; j += 2) namespaces = namespaces && names.count(t[j].text);
      for (std::size_t j = f.qualifier; j < f.name; j += 2)
        if (names.count(t[j].text)) scope += t[j].text + "::";
      f.qualified = !namespaces;
    }
    f.key = scope + f.key;
  }
}

// One set of free functions overloaded only by reference spaces, with different bodies.
struct TaggedSet {
  std::vector<std::size_t> positions;  // the parameters in an address space
  std::size_t fewest = 0, most = 0;    // how many arguments a call may pass
};

// The argument's text as written, for messages.
std::string tokens_text(const std::vector<Token>& t, std::size_t b, std::size_t e, const std::string& source) {
  if (e > b && t[b].line == t[e - 1].line && t[e - 1].column >= t[b].column) {
    const std::string line = source_line(source, t[b].line);
    const std::size_t from = static_cast<std::size_t>(t[b].column - 1);
    const std::size_t to = static_cast<std::size_t>(t[e - 1].column - 1) + t[e - 1].text.size();
    if (to <= line.size() && line.compare(from, t[b].text.size(), t[b].text) == 0) return line.substr(from, to - from);
  }
  std::string text;
  for (std::size_t j = b; j < e; ++j) {
    const bool word = t[j].kind == TokenKind::identifier || t[j].kind == TokenKind::number;
    if (j > b && word && (t[j - 1].kind == TokenKind::identifier || t[j - 1].kind == TokenKind::number)) text += " ";
    text += t[j].text;
    if (t[j].is(",")) text += " ";
  }
  return text;
}

void reference_overloads(const std::vector<Token>& t, const std::string& source, const std::vector<Function>& fns,
                         std::map<std::string, std::set<std::string>>& variants, std::map<std::string, bool>& pointers,
                         const std::vector<ClassBody>& classes, SpaceOverloads& out) {
  std::map<std::string, std::vector<const Function*>> sets;  // key → its declarations, in order
  for (const auto& f : fns)
    if (variants[f.key].size() >= 2 && !pointers[f.key] && at_declaration_scope(t, f.name, classes))
      sets[f.key].push_back(&f);
  std::map<std::string, std::vector<TaggedSet>> tagged;  // function name → its tagged sets
  std::set<std::size_t> declared;                        // the names of their declarations
  for (const auto& [key, decls] : sets) {
    bool member = false, same = true;
    const Function* first_body = nullptr;
    for (const Function* f : decls) {
      member = member || f->qualified || in_class(*f, classes);
      if (!f->body) continue;
      if (!first_body) first_body = f;
      else same = same && body_text(t, *f) == body_text(t, *first_body);
    }
    // Members (in their class or defined out of it) are merged, not tagged: different bodies are
    // refused, here for definitions out of the class, which this_address_space does not see as members.
    if (member && !same) {
      const Function& f = *decls.back();
      throw error_at(source, t[f.name], member_overload_message(t[f.name].text));
    }
    if (member || same) {
      // The first prototype and the first definition stay: `void S::f(device float&) {`, defined
      // out of its class after `void f(device float&); void f(thread float&);`, was left out with
      // every declaration but the first, and the kernel referred to an undefined S::f.
      bool prototype_kept = false, definition_kept = false;
      for (const Function* f : decls) {
        bool& kept = f->body ? definition_kept : prototype_kept;
        if (kept) out.skip.emplace_back(f->start, f->end);
        kept = true;
      }
      continue;
    }
    const Function& f0 = *decls.front();
    if (f0.is_operator)
      throw error_at(source, t[f0.name],
                     "'operator" + t[f0.name].text +
                         "' is overloaded by the address space of a reference parameter with different bodies: the "
                         "CPU and CUDA backends cannot tell which one an operator expression calls (give the overloads "
                         "one body, or name them as functions)");
    TaggedSet set;
    for (std::size_t n = 0; n < f0.params.size(); ++n) {
      bool spaced = false;
      for (const Function* f : decls) spaced = spaced || (f->params[n].reference && f->params[n].space >= 0);
      if (spaced) set.positions.push_back(n);
      if (!f0.params[n].defaulted) set.fewest = n + 1;
    }
    set.most = f0.params.size();
    for (const Function* f : decls) {
      std::string tag = "metal::mtl_ref_spaces<";
      for (std::size_t n = 0; n < set.positions.size(); ++n)
        tag += (n ? ", " : "") + std::to_string(std::max(0, f->params[set.positions[n]].space));
      out.tags[f->open] = tag + ">, ";
      declared.insert(f->name);
    }
    tagged[t[f0.name].text].push_back(set);
  }
  if (tagged.empty()) return;
  // Other functions of such a name taking as many arguments take any tag: every call of that
  // many arguments passes one.
  for (const auto& f : fns) {
    auto sets_of = tagged.find(t[f.name].text);
    if (sets_of == tagged.end() || declared.count(f.name) || !at_declaration_scope(t, f.name, classes) ||
        f.qualified || in_class(f, classes))
      continue;
    std::size_t fewest = 0;
    for (std::size_t n = 0; n < f.params.size(); ++n)
      if (!f.params[n].defaulted) fewest = n + 1;
    for (const TaggedSet& s : sets_of->second)
      if (fewest <= s.most && s.fewest <= f.params.size()) {
        out.tags[f.open] = "metal::mtl_ref_any, ";
        declared.insert(f.name);
        break;
      }
  }
  const ArgumentSpaces spaces(t, classes);
  for (std::size_t i = 0; i + 1 < t.size(); ++i) {
    if (t[i].kind != TokenKind::identifier || declared.count(i)) continue;
    auto sets_of = tagged.find(t[i].text);
    if (sets_of == tagged.end() || (i > 0 && (t[i - 1].is(".") || t[i - 1].is("->")))) continue;
    std::size_t open = i + 1;
    if (t[open].is("<")) {  // `rd<float>(x)`
      int depth = 0;
      for (; open < t.size(); ++open) {
        if (t[open].is("<")) ++depth;
        else if (t[open].is(">") && --depth == 0) break;
        else if (t[open].is(">>") && (depth -= 2) <= 0) break;
        else if (t[open].is(";") || t[open].is("{")) break;
      }
      ++open;
    }
    if (open >= t.size() || !t[open].is("(")) continue;
    const auto args = split_list(t, open, matching_close(t, open));
    const TaggedSet* set = nullptr;
    for (const TaggedSet& s : sets_of->second)
      if (args.size() >= s.fewest && args.size() <= s.most) {
        if (set && set->positions != s.positions)
          throw error_at(source, t[i],
                         "cannot tell which address-space overload of '" + t[i].text +
                             "' is called: two sets of its overloads by the address space of a reference take " +
                             std::to_string(args.size()) + " arguments");
        set = &s;
      }
    if (!set) continue;
    std::string tag = "metal::mtl_ref_call<";
    for (std::size_t n = 0; n < set->positions.size(); ++n) {
      const std::size_t at = set->positions[n];
      int space = 0;  // a default argument: a temporary
      if (at < args.size()) {
        const ArgumentSpace a = spaces.of(args[at].first, args[at].second);
        if (a.space < 0 || a.pointer)
          throw error_at(source, t[args[at].first],
                         "cannot tell which address-space overload of '" + t[i].text + "' is called: argument " +
                             std::to_string(at + 1) + " (`" + tokens_text(t, args[at].first, args[at].second, source) +
                             "`) is " + (a.pointer ? std::string("a pointer or an array") : a.why) +
                             " [rule: a call of functions overloaded by the address space of a reference needs "
                             "each such argument's space from its form: a variable, `p[i]`, `*p`, `p->m`, a "
                             "member or element of those, or a temporary]");
        space = a.space;
      }
      tag += (n ? ", " : "") + std::to_string(space);
    }
    out.tags[open] = tag + ">{}, ";
  }
}

}  // namespace

std::string body_as_targets_see_it(const std::vector<Token>& t, std::size_t from, std::size_t to) {
  std::string body;
  for (std::size_t j = from; j <= to && j < t.size(); ++j) {
    if (space_of(t[j]) >= 0) continue;
    std::string text = t[j].text;
    if (text.rfind("__metalcall_", 0) == 0)
      while (!text.empty() && text.back() >= '0' && text.back() <= '9') text.pop_back();
    body += text + " ";
  }
  return body;
}

std::string member_overload_message(const std::string& name) {
  return "'" + name +
         "' (a member function or constructor) is overloaded by the address space of a reference parameter with "
         "different bodies: the CPU and CUDA backends cannot tell which one a call means (give the overloads one "
         "body, or name them apart)";
}

SpaceOverloads address_space_overloads(const std::vector<Token>& t, const std::string& source) {
  SpaceOverloads out;
  std::vector<Function> fns = functions(t);
  key_by_namespace(t, fns);
  std::map<std::string, std::set<std::string>> variants;  // key → distinct address-space signatures
  for (const auto& f : fns) variants[f.key].insert(f.spaces);
  std::map<std::string, std::vector<bool>> const_params;  // name → which parameters point to const
  std::set<std::size_t> definitions;
  // Overloads whose address spaces are only on references (`operator+=(thread complex_t<T>&, …)`
  // and `(device complex_t<T>&, …)`): a C++ reference binds to any object, so the first serves all.
  std::map<std::string, bool> pointers;  // key → some overload has a pointer in an address space
  for (const auto& f : fns)
    for (const auto& p : f.params) pointers[f.key] = pointers[f.key] || (p.space >= 0 && p.star != 0);
  const std::vector<ClassBody> classes = class_bodies(t);
  reference_overloads(t, source, fns, variants, pointers, classes, out);
  for (const auto& f : fns) {
    if (variants[f.key].size() < 2 || !pointers[f.key]) continue;
    std::vector<bool>& consts = const_params[t[f.name].text];
    consts.resize(std::max(consts.size(), f.params.size()));
    definitions.insert(f.name);
    for (std::size_t n = 0; n < f.params.size(); ++n) {
      const Param& p = f.params[n];
      if (p.pointee_const || p.space == 3) consts[n] = true;
      if (p.space < 0 || p.star == 0) continue;
      std::vector<std::size_t> element;
      for (std::size_t j = p.begin; j < p.star; ++j)
        if (space_of(t[j]) < 0) element.push_back(j);
      std::string elem = type_text(t, element, false);
      if (p.space == 3 && elem.rfind("const", 0) != 0) elem = "const " + elem;  // constant data is read-only
      out.params[p.begin] = {p.star, "metal::mtl_space_ptr<" + elem + ", " + std::to_string(p.space) + ">"};
    }
  }
  if (const_params.empty()) return out;
  // Names of such overloads that are member functions (defined in a class's braces): a call
  // through an object (`a.add(sh, l)`) is tagged too. Untagged, a threadgroup array passed to
  // `add(const threadgroup float*)` beside `add(const device float*)` became the device
  // overload's (a silent wrong result; a CompileError in checked mode) before 2026-12-05.
  std::set<std::string> members;
  for (std::size_t i = 0; i + 1 < t.size(); ++i) {
    if (!(t[i].is_identifier("struct") || t[i].is_identifier("class") || t[i].is_identifier("union"))) continue;
    std::size_t open = i + 1;
    while (open < t.size() && !t[open].is("{") && !t[open].is(";") && !t[open].is("(")) ++open;
    if (open >= t.size() || !t[open].is("{")) continue;
    int depth = 0;
    for (std::size_t j = open; j < t.size(); ++j) {
      if (t[j].is("{")) ++depth;
      else if (t[j].is("}") && --depth == 0) break;
      else if (depth == 1 && definitions.count(j)) members.insert(t[j].text);
    }
  }
  for (std::size_t i = 0; i + 1 < t.size(); ++i) {
    if (t[i].kind != TokenKind::identifier || !t[i + 1].is("(") || definitions.count(i)) continue;
    auto consts = const_params.find(t[i].text);
    if (consts == const_params.end() ||
        (i > 0 && (t[i - 1].is(".") || t[i - 1].is("->")) && !members.count(t[i].text)))
      continue;
    const auto args = split_list(t, i + 1, matching_close(t, i + 1));
    for (std::size_t n = 0; n < args.size(); ++n) {
      const auto [b, e] = args[n];
      const bool to_const_param = n < consts->second.size() && consts->second[n];
      bool derefs = false, pointer = false;
      if (const std::size_t root = address_root(t, b, e, &derefs)) {
        // The address of a part of an object in a known address space has that space (a
        // template's T is deduced from it: naga's atomics helpers take `device A*` and `threadgroup A*`).
        const int s = written_space(t, root, &pointer);
        if (s >= 0 && pointer == derefs)
          out.wraps.push_back({{b, e - 1}, "metal::mtl_space<" + std::to_string(s) + ", " +
                                               (s == 3 || to_const_param ? "true" : "false") + ">("});
        else if (s < 0 && !t[b + 2 < e ? b + 2 : b].is("->") && thread_value(t, root, classes))
          out.wraps.push_back({{b, e - 1}, std::string("metal::mtl_space<0, ") + (to_const_param ? "true" : "false") + ">("});
        continue;
      }
      if (e != b + 1 || t[b].kind != TokenKind::identifier) continue;
      const int s = declared_space(t, b);
      // Pointers to const where the overloads take them, so templates deduce their T.
      const bool to_const = s == 3 || to_const_param;
      if (s >= 0) out.args[b] = "metal::mtl_space<" + std::to_string(s) + ", " + (to_const ? "true" : "false") + ">(" + t[b].text + ")";
    }
  }
  return out;
}

}  // namespace metalcall::msl
