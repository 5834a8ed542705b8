// What the translator learns from the token stream before it writes anything
// (see source_analysis.hpp).
#include "msl/analysis/source_analysis.hpp"

#include <functional>
#include <set>

#include "msl/lex/token_text.hpp"

namespace metalcall::msl {

std::map<std::size_t, std::string> swizzle_member_accessors(const std::vector<Token>& t) {
  struct Class {
    std::string name;
    std::vector<std::string> bases;    // the names in its base list
    std::vector<std::string> members;  // its own members named like swizzles
    std::size_t close = 0;
  };
  std::vector<Class> classes;
  std::vector<int> code;
  for (std::size_t i = 0; i + 1 < t.size(); ++i) {
    if (!(t[i].is_identifier("struct") || t[i].is_identifier("class") || t[i].is_identifier("union"))) continue;
    std::size_t open = i + 1;
    while (open < t.size() && !t[open].is("{") && !t[open].is(";") && !t[open].is("(")) ++open;
    if (open >= t.size() || !t[open].is("{")) continue;
    Class c;
    // `struct D : public B, C<T> {`: the name before the ':', then each base's last name
    // outside template arguments.
    int angle = 0;
    bool in_bases = false;
    std::string last;
    for (std::size_t k = i + 1; k < open; ++k) {
      if (t[k].is("<")) ++angle;
      else if (t[k].is(">")) --angle;
      else if (t[k].is(">>")) angle -= 2;
      else if (angle == 0 && t[k].is(":") && !in_bases) {
        c.name = last, in_bases = true, last.clear();
      } else if (angle == 0 && t[k].is(",") && in_bases) {
        if (!last.empty()) c.bases.push_back(last);
        last.clear();
      } else if (angle == 0 && t[k].kind == TokenKind::identifier && !t[k].is_identifier("public") &&
                 !t[k].is_identifier("private") && !t[k].is_identifier("protected") &&
                 !t[k].is_identifier("virtual") && !t[k].is_identifier("final") && !t[k].is_identifier("alignas")) {
        last = t[k].text;
      }
    }
    if (in_bases && !last.empty()) c.bases.push_back(last);
    if (!in_bases) c.name = last;
    int depth = 0;
    c.close = open;
    for (std::size_t j = open; j < t.size(); ++j) {
      if (t[j].is("{")) ++depth;
      else if (t[j].is("}") && --depth == 0) {
        c.close = j;
        break;
      } else if (depth == 1 && t[j].kind == TokenKind::identifier && j + 1 < t.size() &&
                 (t[j + 1].is(";") || t[j + 1].is(",") || t[j + 1].is("[") || t[j + 1].is("=") ||
                  t[j + 1].is(":")) &&
                 is_swizzle(t[j].text, &code)) {
        c.members.push_back(t[j].text);
      }
    }
    classes.push_back(std::move(c));
  }
  // A class's members named like swizzles and its bases' (theirs after its own, which hide
  // them): a derived class's own accessor hid its base's, so `d.xy` of a base's member did not
  // compile beside a derived `rgb` before 2026-12-05.
  std::function<void(const std::string&, std::set<std::string>&, std::vector<std::string>&)> collect =
      [&](const std::string& name, std::set<std::string>& seen, std::vector<std::string>& out) {
        if (name.empty() || !seen.insert(name).second) return;
        for (const Class& c : classes) {
          if (c.name != name) continue;
          for (const auto& m : c.members) out.push_back(m);
          for (const auto& b : c.bases) collect(b, seen, out);
          return;
        }
      };
  std::map<std::size_t, std::string> struct_accessors;  // closing brace → accessors
  for (const Class& c : classes) {
    std::vector<std::string> members = c.members;
    std::set<std::string> seen = {c.name};
    int bases_with_members = 0;
    for (const auto& b : c.bases) {
      const std::size_t before = members.size();
      collect(b, seen, members);
      bases_with_members += members.size() > before ? 1 : 0;
    }
    // Only its bases' members, from one base: that base's accessor serves (inherited).
    if (c.members.empty() && bases_with_members < 2) continue;
    std::string accessors;
    std::set<std::string> codes;
    for (const char* qualifier : {"", "const "}) {
      accessors += std::string(" template <int mtl_code> ") + qualifier + "auto& mtl_swz() " + qualifier + "{";
      codes.clear();
      for (const auto& m : members) {
        if (!codes.insert(swizzle_code(m)).second) continue;  // hidden by the class's own
        accessors += " if constexpr (mtl_code == " + swizzle_code(m) + ") return this->" + m + "; else";
      }
      accessors += " return *this; }";
    }
    accessors += " template <int mtl_code> auto& mtl_swz_ref() { return mtl_swz<mtl_code>(); }";
    struct_accessors[c.close] = accessors;
  }
  return struct_accessors;
}

std::set<std::string> swizzle_named_functions(const std::vector<Token>& t) {
  std::set<std::string> names;
  std::vector<int> code;
  for (std::size_t i = 0; i + 1 < t.size(); ++i)
    if (t[i].kind == TokenKind::identifier && t[i + 1].is("(") &&
        !(i > 0 && (t[i - 1].is(".") || t[i - 1].is("->"))) && is_swizzle(t[i].text, &code))
      names.insert(t[i].text);
  return names;
}

namespace {

bool is_assignment_op(const Token& k) {
  static const char* const ops[] = {"=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>="};
  for (const char* op : ops)
    if (k.is(op)) return true;
  return false;
}

// The bracket matching the one at i, scanning in `step`'s direction; t.size() where none does.
std::size_t matching_bracket(const std::vector<Token>& t, std::size_t i, int step) {
  const bool square = t[i].is("[") || t[i].is("]");
  const char* open = square ? (step > 0 ? "[" : "]") : (step > 0 ? "(" : ")");
  const char* close = square ? (step > 0 ? "]" : "[") : (step > 0 ? ")" : "(");
  int depth = 0;
  for (std::size_t k = i; k < t.size(); k += step) {
    if (t[k].is(open)) ++depth;
    else if (t[k].is(close) && --depth == 0) return k;
    if (k == 0 && step < 0) break;
  }
  return t.size();
}

}  // namespace

bool swizzle_is_written(const std::vector<Token>& t, std::size_t name) {
  // After it: the rest of the chain (`.xy`, `->m`, `[k]`), then what ends it.
  std::size_t j = name + 1;
  while (j < t.size()) {
    if ((t[j].is(".") || t[j].is("->")) && j + 1 < t.size() && t[j + 1].kind == TokenKind::identifier) {
      j += 2;
    } else if (t[j].is("[")) {
      j = matching_bracket(t, j, 1);
      if (j < t.size()) ++j;
    } else {
      break;
    }
  }
  if (j < t.size() && (is_assignment_op(t[j]) || t[j].is("++") || t[j].is("--"))) return true;
  // Before it: the chain's first token (`o[i].v`, `(*p)`, `f(x)`, `s->v`), then a prefix ++ or --.
  if (name < 2) return false;
  std::size_t start = name - 1;  // the `.` or `->`
  while (start > 0) {
    const Token& b = t[start - 1];
    if (b.is("]") || b.is(")")) {
      const std::size_t open = matching_bracket(t, start - 1, -1);
      if (open >= t.size()) return false;
      start = open;
    } else if (b.kind == TokenKind::identifier) {
      --start;
      if (start > 0 && (t[start - 1].is(".") || t[start - 1].is("->") || t[start - 1].is("::"))) --start;
      else break;
    } else {
      break;
    }
  }
  return start > 0 && (t[start - 1].is("++") || t[start - 1].is("--"));
}

std::vector<KernelScope> kernel_scopes(const std::vector<Token>& t, const std::vector<ParsedKernel>& kernels) {
  std::vector<KernelScope> scopes;
  std::size_t next_kernel = 0;
  struct Open {
    std::string name;  // "" for an unnamed namespace
    bool is_inline;
    std::size_t close;
  };
  std::vector<Open> stack;  // the open namespaces
  for (std::size_t i = 0; i < t.size() && next_kernel < kernels.size(); ++i) {
    while (!stack.empty() && i > stack.back().close) stack.pop_back();
    if (t[i].is_identifier("namespace") && i + 1 < t.size()) {
      std::size_t j = i + 1;
      std::string name;
      while (j < t.size() && !t[j].is("{") && !t[j].is(";") && !t[j].is("=")) name += t[j++].text;
      if (j < t.size() && t[j].is("{")) {
        int depth = 0;
        std::size_t k = j;
        for (; k < t.size(); ++k) {
          if (t[k].is("{")) ++depth;
          else if (t[k].is("}") && --depth == 0) break;
        }
        stack.push_back({name, i > 0 && t[i - 1].is_identifier("inline"), k});
        i = j;
      }
      continue;
    }
    if (i == kernels[next_kernel].keyword_token) {
      KernelScope s;
      for (const auto& n : stack) {
        // An unnamed namespace's names are visible from the one around it (and reopening it
        // would give the entry point internal linkage).
        if (n.name.empty()) continue;
        s.call_name += "::" + n.name;
        s.opens += std::string(n.is_inline ? "inline " : "") + "namespace " + n.name + " { ";
        s.closes += "} ";
      }
      s.call_name += "::" + kernels[next_kernel].function_name;
      scopes.push_back(std::move(s));
      ++next_kernel;
    }
  }
  while (scopes.size() < kernels.size()) scopes.push_back({"::" + kernels[scopes.size()].function_name, "", ""});
  return scopes;
}

bool defines_static_member(const std::vector<Token>& t, std::size_t i) {
  int depth = 0;
  for (std::size_t j = i + 1; j < t.size(); ++j) {
    const Token& k = t[j];
    if (k.is("<") || k.is("(")) ++depth;
    else if (k.is(">") || k.is(")")) --depth;
    else if (k.is(">>")) depth -= 2;
    else if (depth == 0 && (k.is(";") || k.is("=") || k.is(",") || k.is("[") || k.is("{")))
      return j >= 2 && t[j - 1].kind == TokenKind::identifier && t[j - 2].is("::");
  }
  return false;
}

std::pair<std::size_t, std::size_t> declaration_initializer(const std::vector<Token>& t, std::size_t i) {
  int depth = 0;
  std::size_t eq = 0;
  for (std::size_t j = i + 1; j < t.size(); ++j) {
    const Token& k = t[j];
    if (k.is("(") || k.is("[") || k.is("{")) ++depth;
    else if (k.is(")") || k.is("]") || k.is("}")) --depth;
    else if (depth == 0 && k.is("=") && !eq) eq = j;
    else if (depth == 0 && (k.is(";") || k.is(","))) return eq ? std::make_pair(eq, j) : std::make_pair(std::size_t(0), std::size_t(0));
    if (depth < 0) break;
  }
  return {0, 0};
}

namespace {

// The function named before the call or declaration parenthesis that encloses token j
// (`f(`, `f<T>(`), or "".
std::string enclosing_callee(const std::vector<Token>& t, std::size_t j) {
  int depth = 0;
  for (std::size_t k = j; k-- > 0;) {
    if (t[k].is(")") || t[k].is("]") || t[k].is("}")) ++depth;
    else if (t[k].is("[") || t[k].is("{")) {
      if (--depth < 0) return "";
    } else if (t[k].is("(") && --depth < 0) {
      std::size_t n = k;
      if (n > 0 && t[n - 1].is(">")) {  // skip a template argument list
        int angles = 0;
        while (n-- > 0) {
          if (t[n].is(">")) ++angles;
          else if (t[n].is("<") && --angles == 0) break;
        }
      }
      return n > 0 && t[n - 1].kind == TokenKind::identifier ? t[n - 1].text : "";
    }
  }
  return "";
}

}  // namespace

std::set<std::string> bit_field_names(const std::vector<Token>& t) {
  // `TYPE name : WIDTH ;` or `, name : WIDTH ,`: WIDTH any constant expression (`N`, `2 * K`,
  // a template's parameter), up to the `;` or `,` at its own depth. Not a label, a case, a
  // class's base (`struct A : B`), an enum's type, a range-for (its `)` comes first) nor a
  // conditional's `:` (the token before the name is `?`).
  static const auto& not_types = *new std::set<std::string>{"case", "struct", "class", "union", "enum", "goto", "return"};
  std::set<std::string> names;
  for (std::size_t k = 1; k + 2 < t.size(); ++k) {
    if (t[k].kind != TokenKind::identifier || !t[k + 1].is(":")) continue;
    const Token& before = t[k - 1];
    if (!(before.is(",") || (before.kind == TokenKind::identifier && !not_types.count(before.text)))) continue;
    int depth = 0;
    for (std::size_t j = k + 2; j < t.size(); ++j) {
      const Token& w = t[j];
      if (w.is("(") || w.is("[") || w.is("<")) ++depth;
      else if (w.is(")") || w.is("]") || w.is(">")) --depth;
      else if (w.is(">>")) depth -= 2;
      else if (w.is("{") || w.is("}") || w.is("?")) break;
      if (depth < 0) break;
      if (depth == 0 && (w.is(";") || w.is(","))) {
        if (j > k + 2) names.insert(t[k].text);
        break;
      }
    }
  }
  return names;
}

std::set<std::string> pointer_reference_functions(const std::vector<Token>& t) {
  std::set<std::string> functions;
  for (std::size_t k = 0; k + 1 < t.size(); ++k) {
    if (!t[k].is("*")) continue;
    const std::size_t amp = t[k + 1].is_identifier("const") ? k + 2 : k + 1;
    if (amp < t.size() && t[amp].is("&")) {
      const std::string f = enclosing_callee(t, k);
      if (!f.empty()) functions.insert(f);
    }
  }
  return functions;
}

bool passed_to(const std::vector<Token>& t, std::size_t open, std::size_t close, const std::string& name,
               const std::set<std::string>& functions) {
  if (functions.empty()) return false;
  for (std::size_t j = open + 1; j < close && j + 1 < t.size(); ++j) {
    if (t[j].kind != TokenKind::identifier || t[j].text != name) continue;
    if (!(t[j - 1].is("(") || t[j - 1].is(",")) || !(t[j + 1].is(",") || t[j + 1].is(")"))) continue;
    if (functions.count(enclosing_callee(t, j))) return true;
  }
  return false;
}

}  // namespace metalcall::msl
