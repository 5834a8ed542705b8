// Overloads that differ only in address space (`f(device float*)` and
// `f(threadgroup float*)`): the targets drop address spaces, so such overloads would
// collide. Their pointer parameters become metal::mtl_space_ptr<T, SPACE>, and at
// calls to them an argument that is a plain variable is tagged with the address space
// of its declaration (metal::mtl_space<SPACE>(x)), so C++ overload resolution picks
// the overload MSL would (metal_address_space.h).
#include "msl/passes/address_space_overloads.hpp"

#include <algorithm>
#include <set>

#include "msl/analysis/implementation_rules.hpp"  // class_bodies
#include "msl/lex/token_text.hpp"

namespace metalcall::msl {

namespace {

// The prelude's numbers: metal_address_space.h.
int space_of(const Token& tok) {
  if (tok.kind != TokenKind::identifier) return -1;
  if (tok.text == "thread") return 0;
  if (tok.text == "device") return 1;
  if (tok.text == "threadgroup") return 2;
  if (tok.text == "constant") return 3;
  return -1;
}

bool is_keyword(const std::string& s) {
  static const auto& k = *new std::set<std::string>{"if", "for", "while", "switch", "return", "sizeof", "do", "else",
                                          "case", "new", "delete", "throw", "alignof", "decltype", "static_assert"};
  return k.count(s) != 0;
}

// True when token k can end a type before a declared name (`float x`, `T* x`, `vec<T,2> x`).
bool ends_type(const Token& tok) {
  return (tok.kind == TokenKind::identifier && !is_keyword(tok.text)) || tok.is("*") || tok.is("&") || tok.is(">");
}

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
};

struct Function {
  std::size_t name;
  std::size_t start = 0, end = 0;  // the whole declaration (template header and body included)
  std::vector<Param> params;
  std::string key;     // name and parameter types without address spaces
  std::string spaces;  // the parameters' address spaces
};

Param parse_param(const std::vector<Token>& t, std::size_t begin, std::size_t end) {
  Param p{begin, end, 0, -1, {}, false};
  for (std::size_t j = begin; j < end; ++j)
    if (t[j].is("=")) {
      p.end = j;
      break;
    }
  std::size_t name_end = p.end;
  if (name_end > p.begin + 1 && t[name_end - 1].kind == TokenKind::identifier && ends_type(t[name_end - 2])) --name_end;
  int depth = 0;
  for (std::size_t j = p.begin; j < name_end; ++j) {
    if (t[j].is("<")) ++depth;
    else if (t[j].is(">")) --depth;
    else if (depth == 0 && t[j].is("*")) p.star = j;
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
    // the declaration's are: "out-of-line definition does not match" before 2026-12-05).
    const bool qualified = i >= 3 && t[i - 1].is("::") && t[i - 2].kind == TokenKind::identifier && ends_type(t[i - 3]) &&
                           !t[i - 3].is_identifier("return");
    if (!op && (t[i].kind != TokenKind::identifier || is_keyword(t[i].text) || !(ends_type(t[i - 1]) || qualified)))
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
    if (t[after].is("{")) {
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

// The address space written in the declaration of the object named at `use` (a reference,
// pointer, array or value declared `device S& a`, `threadgroup T tg[N]`, `device T* p`), and
// whether it is a pointer; -1 when the declaration names none (a member, a local: left untagged).
int written_space(const std::vector<Token>& t, std::size_t use, bool* pointer) {
  const std::string& name = t[use].text;
  for (std::size_t k = use; k-- > 1;) {
    if (t[k].text != name || t[k].kind != TokenKind::identifier || !ends_type(t[k - 1]) || k + 1 >= t.size()) continue;
    if (t[k - 1].is("&") && (k < 2 || !ends_type(t[k - 2]) || t[k - 2].is("&"))) continue;  // `f(&a, …)`: a use
    const Token& next = t[k + 1];
    if (!(next.is("[") || next.is("=") || next.is(";") || next.is(",") || next.is(")"))) continue;
    int depth = 0, space = -1;
    // An array (not an [[attribute]]): subscripts reach into it as into a pointer.
    *pointer = next.is("[") && !(k + 2 < t.size() && t[k + 2].is("["));
    for (std::size_t j = k; j-- > 0;) {
      if (t[j].is(")") || t[j].is("]")) ++depth;
      else if (t[j].is("(") || t[j].is("[")) {
        if (--depth < 0) break;
      } else if (depth == 0 && (t[j].is(";") || t[j].is("{") || t[j].is("}") || t[j].is(","))) break;
      if (t[j].is("*")) *pointer = true;
      if (t[j].is_identifier("auto")) return -1;
      if (space_of(t[j]) >= 0) space = space_of(t[j]);
    }
    return space;
  }
  return -1;
}

// Whether the object named at `use` is declared as a thread-local value: a local variable or
// array, or a parameter by value, whose declaration names no address space and is no pointer,
// reference, `auto`, `static` or `constexpr` (program-scope objects and class members are not:
// their space is `constant`'s or the object's). `&t` of `float t;` was passed untagged, so
// `ld(&t)` called `ld(device float*)` beside `ld(thread float*)` until 2026-12-05.
bool thread_value(const std::vector<Token>& t, std::size_t use, const std::vector<ClassBody>& classes) {
  const std::string& name = t[use].text;
  for (std::size_t k = use; k-- > 1;) {
    if (t[k].text != name || t[k].kind != TokenKind::identifier || !ends_type(t[k - 1]) || k + 1 >= t.size()) continue;
    const Token& next = t[k + 1];
    if (!(next.is("[") || next.is("=") || next.is(";") || next.is(",") || next.is(")") || next.is("{"))) continue;
    if ((t[k - 1].is("&") || t[k - 1].is("*")) && (k < 2 || !ends_type(t[k - 2]) || t[k - 2].is("&"))) continue;  // `f(&a, …)`: a use
    if (t[k - 1].is("&") || t[k - 1].is("*")) return false;  // a pointer or reference
    int depth = 0;
    std::size_t j = k;
    bool parameter = false;
    while (j-- > 0) {
      if (t[j].is(")") || t[j].is("]") || t[j].is(">")) ++depth;
      else if (t[j].is("[") || t[j].is("<")) --depth;
      else if (t[j].is("(")) {
        if (--depth < 0) {
          parameter = true;
          break;
        }
      } else if (depth == 0 && (t[j].is(";") || t[j].is("{") || t[j].is("}") || t[j].is(","))) {
        parameter = t[j].is(",") && depth == 0;
        break;
      }
      if (depth == 0 && (space_of(t[j]) >= 0 || t[j].is("*") || t[j].is("&") || t[j].is("&&") ||
                         t[j].is_identifier("auto") || t[j].is_identifier("static") || t[j].is_identifier("constexpr")))
        return false;
    }
    if (parameter) {  // a piece of a list: a parameter only if the list is a function's
      int d = 0;
      for (; j < t.size() && j > 0; --j) {
        if (t[j].is(")")) ++d;
        else if (t[j].is("(") && d-- == 0) break;
      }
      if (j == 0 || t[j - 1].kind != TokenKind::identifier) return false;
      return true;  // a function's (or a `for`'s, an `if`'s) own variable
    }
    // A statement in a function's body: some brace encloses it, and not a class's or a namespace's.
    int braces = 0;
    for (std::size_t m = j + 1; m-- > 0;) {
      if (t[m].is("}")) ++braces;
      else if (t[m].is("{") && braces-- == 0) {
        for (const ClassBody& c : classes)
          if (c.open == m) return false;
        if (m >= 2 && t[m - 2].is_identifier("namespace")) return false;
        if (m >= 1 && t[m - 1].is_identifier("namespace")) return false;
        return true;
      }
    }
    return false;
  }
  return false;
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

}  // namespace

SpaceOverloads address_space_overloads(const std::vector<Token>& t) {
  SpaceOverloads out;
  const std::vector<Function> fns = functions(t);
  std::map<std::string, std::set<std::string>> variants;  // key → distinct address-space signatures
  for (const auto& f : fns) variants[f.key].insert(f.spaces);
  std::map<std::string, std::vector<bool>> const_params;  // name → which parameters point to const
  std::set<std::size_t> definitions;
  // Overloads whose address spaces are only on references (`operator+=(thread complex_t<T>&, …)`
  // and `(device complex_t<T>&, …)`): a C++ reference binds to any object, so the first serves all.
  std::map<std::string, bool> pointers;  // key → some overload has a pointer in an address space
  for (const auto& f : fns)
    for (const auto& p : f.params) pointers[f.key] = pointers[f.key] || (p.space >= 0 && p.star != 0);
  std::set<std::string> kept;
  for (const auto& f : fns) {
    if (variants[f.key].size() < 2 || pointers[f.key]) continue;
    if (!kept.insert(f.key).second) out.skip.emplace_back(f.start, f.end);
  }
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
  const std::vector<ClassBody> classes = class_bodies(t);
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
