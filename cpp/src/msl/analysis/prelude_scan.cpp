// Reading the names the prelude declares from its text (see prelude_scan.hpp). Run at build
// time by cpp/build_tools/prelude_names_main.cpp; the library holds its result as a table.
#include "msl/analysis/prelude_scan.hpp"

#include <cctype>
#include <map>
#include <vector>

#include "msl/analysis/call_graph.hpp"
#include "msl/lex/lexer.hpp"

namespace metalcall::msl {

namespace {

bool word_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

struct Macro {
  std::vector<std::string> params;
  std::vector<std::vector<std::string>> pastes;  // `a##P##_sum`: its pieces
};

// `#define NAME(P, W) ... P##_sum ...`: the parameters and the pasted names of the body.
bool parse_macro(const std::string& directive, std::string* name, Macro* m) {
  std::size_t p = directive.find("define");
  if (p == std::string::npos) return false;
  p = directive.find_first_not_of(" \t", p + 6);
  std::size_t e = p;
  while (e < directive.size() && word_char(directive[e])) ++e;
  if (p == std::string::npos || e == p || e >= directive.size() || directive[e] != '(') return false;
  *name = directive.substr(p, e - p);
  const std::size_t close = directive.find(')', e);
  if (close == std::string::npos) return false;
  std::string param;
  for (std::size_t k = e + 1; k <= close; ++k) {
    if (word_char(directive[k])) param += directive[k];
    else if ((directive[k] == ',' || directive[k] == ')') && !param.empty()) m->params.push_back(param), param.clear();
  }
  for (std::size_t k = close + 1; k < directive.size();) {
    if (!word_char(directive[k])) {
      ++k;
      continue;
    }
    std::vector<std::string> pieces;
    std::size_t j = k;
    for (;;) {
      std::size_t w = j;
      while (w < directive.size() && word_char(directive[w])) ++w;
      pieces.push_back(directive.substr(j, w - j));
      if (directive.compare(w, 2, "##") != 0) {
        j = w;
        break;
      }
      j = w + 2;
    }
    if (pieces.size() > 1) m->pastes.push_back(pieces);
    k = j;
  }
  return true;
}

// Names the prelude declares through its own macros: the pasted names of each
// invocation (`METALCALL_GROUP_FUNCTIONS(simd, 32)` declares simd_sum...) and the
// plain-name arguments (`METAL_CLASSIFY(isnan, ...)` declares isnan).
void add_macro_names(const std::vector<Token>& t, std::map<std::string, Macro>& macros, std::set<std::string>& names,
                     std::set<std::string>& pasted_names) {
  for (const Token& x : t) {
    std::string name;
    Macro m;
    if (x.kind == TokenKind::directive && parse_macro(x.text, &name, &m)) macros[name] = m;
  }
  for (std::size_t i = 0; i + 1 < t.size(); ++i) {
    auto it = macros.find(t[i].text);
    if (t[i].kind != TokenKind::identifier || it == macros.end() || !t[i + 1].is("(")) continue;
    const std::size_t close = matching(t, i + 1);
    std::vector<std::string> args;
    std::string arg;
    bool plain = true;
    for (std::size_t k = i + 2; k <= close && k < t.size(); ++k) {
      if (k == close || t[k].is(",")) {
        args.push_back(plain ? arg : "");
        arg.clear();
        plain = true;
      } else if (t[k].kind == TokenKind::identifier && arg.empty()) {
        arg = t[k].text;
      } else {
        plain = false;
      }
    }
    for (const auto& a : args)
      if (!a.empty()) names.insert(a);
    for (const auto& pieces : it->second.pastes) {
      std::string pasted;
      for (const auto& piece : pieces) {
        std::string value = piece;
        for (std::size_t p = 0; p < it->second.params.size() && p < args.size(); ++p)
          if (piece == it->second.params[p]) value = args[p];
        pasted += value;
      }
      names.insert(pasted);
      // Reserved ones (`__builtin_##f`, `__metal_##f`) stay out: which of those a kernel may name is
      // the reserved-name rule's (prelude_reserved_names).
      const bool reserved = pasted.size() > 1 && pasted[0] == '_' && (pasted[1] == '_' || (pasted[1] >= 'A' && pasted[1] <= 'Z'));
      if (!pasted.empty() && !reserved) pasted_names.insert(pasted);
    }
  }
}

}  // namespace

PreludeNames scan_prelude(const char* const* texts, std::size_t count) {
  PreludeNames n;
  std::map<std::string, Macro> macros;
  for (std::size_t i = 0; i < count; ++i) {
    const std::vector<Token> tokens = tokenize(texts[i]);
    for (const Token& x : tokens)
      if (x.kind == TokenKind::identifier) n.identifiers.insert(x.text);
    const DeclaredNames d = declared_names(tokens);
    for (const auto* group : {&d.functions, &d.prototypes, &d.types, &d.macros, &d.others})
      n.all.insert(group->begin(), group->end());
    n.macros.insert(d.macros.begin(), d.macros.end());
    for (const auto* group : {&d.functions, &d.types, &d.macros}) n.declared.insert(group->begin(), group->end());
    // The names its macros paste are definitions too (`METALCALL_GROUP_FUNCTIONS(simd, …)` defines
    // simd_sum …): a source's own overload of one may call the library's (recursion.cpp).
    add_macro_names(tokens, macros, n.all, n.declared);
  }
  return n;
}

}  // namespace metalcall::msl
