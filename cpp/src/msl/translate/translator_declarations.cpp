// The Translator's questions about declarations and operators: which `*` declares a
// pointer (and to which address space), which `/` divides integers, which call picks an
// address-space overload; and which kernels a per-kernel translation leaves out.
#include "msl/translate/translator_walk.hpp"

#include "msl/analysis/call_graph.hpp"
#include "msl/parse/function_declarators.hpp"

namespace metalcall::msl {

namespace {

// True when the parameter's type names its memory const (`const device T*`, `constant T&`):
// a `const` or `constant` before the top-level '*' or '&'.
bool read_only_memory(const std::vector<Token>& t, const std::vector<std::size_t>& type, std::size_t top) {
  for (std::size_t idx : type) {
    if (idx >= top) break;
    if (t[idx].is_identifier("const") || t[idx].is_identifier("constant")) return true;
  }
  return false;
}

bool is_restrict(const Token& tok) {
  return tok.is_identifier("restrict") || tok.is_identifier("__restrict") || tok.is_identifier("__restrict__");
}

}  // namespace

std::set<std::size_t> Translator::buffer_pointer_tokens() const {
  std::set<std::size_t> stars;
  const std::set<std::string> functions = pointer_reference_functions(t_);
  std::map<std::size_t, bool> by_reference;
  for (const auto& k : kernels_)
    for (const auto& p : k.params) {
      // A parameter declared through an alias: its '*' is the alias's, shared by other uses.
      if (p.info.kind != ParamKind::buffer || !p.spelled_tokens.empty()) continue;
      // Not one the kernel passes to a `T*&` parameter: that reference cannot bind a restrict pointer.
      auto seen = by_reference.find(p.name_token);  // instantiations share their template's parameters
      if (seen == by_reference.end())
        seen = by_reference.emplace(p.name_token, passed_to(t_, k.body_open, k.body_close, t_[p.name_token].text, functions)).first;
      if (seen->second) continue;
      for (auto it = p.type_tokens.rbegin(); it != p.type_tokens.rend(); ++it) {
        if (!t_[*it].is("*")) continue;
        const std::size_t next = *it + 1;
        // Read-only memory only (see writable_restricts).
        if (!(next < t_.size() && is_restrict(t_[next])) && read_only_memory(t_, p.type_tokens, *it)) stars.insert(*it);
        break;
      }
    }
  return stars;
}

std::set<std::size_t> Translator::writable_restricts() const {
  std::set<std::size_t> found;
  for (const auto& k : kernels_)
    for (const auto& p : k.params) {
      if (p.info.kind != ParamKind::buffer && p.info.kind != ParamKind::reference) continue;
      for (auto it = p.type_tokens.rbegin(); it != p.type_tokens.rend(); ++it) {
        if (!t_[*it].is("*") && !t_[*it].is("&")) continue;
        const std::size_t next = *it + 1;
        if (next < t_.size() && is_restrict(t_[next]) && !read_only_memory(t_, p.type_tokens, *it)) found.insert(next);
        break;
      }
    }
  return found;
}

bool Translator::is_division(std::size_t i) const {
  const Token& tok = t_[i];
  if (!(tok.is("/") || tok.is("%") || tok.is("/=") || tok.is("%="))) return false;
  if (i > 0 && t_[i - 1].is_identifier("operator")) return false;
  std::vector<int> swz;
  if ((tok.is("/=") || tok.is("%=")) && i >= 2 && (t_[i - 2].is(".") || t_[i - 2].is("->")) &&
      is_swizzle(t_[i - 1].text, &swz))
    return false;
  return true;
}

std::string Translator::guarded_division(const std::string& op, bool bit_field) {
  if (op == "/") return "/ metal::mtl_rt::idiv_tag() /";
  if (op == "%") return "% metal::mtl_rt::imod_tag() %";
  if (op == "/=") return bit_field ? "/= metal::mtl_rt::idiv_wide_rhs() =" : "/= metal::mtl_rt::idiv_rhs() =";
  return bit_field ? "%= metal::mtl_rt::imod_wide_rhs() =" : "%= metal::mtl_rt::imod_rhs() =";
}

bool Translator::emit_space_overload(std::size_t& i) {
  auto p = space_overloads_.params.find(i);
  if (p != space_overloads_.params.end()) {
    emit(p->second.second, t_[i], true);
    i = p->second.first;
    return true;
  }
  auto a = space_overloads_.args.find(i);
  if (a == space_overloads_.args.end()) return false;
  emit(a->second, t_[i], false);
  return true;
}

bool Translator::is_address_space(const Token& t) {
  return t.is_identifier("device") || t.is_identifier("constant") || t.is_identifier("threadgroup");
}

std::size_t Translator::address_space_pointer_end(std::size_t i) const {
  std::size_t j = i;
  while (j < t_.size() && (t_[j].is_identifier("const") || t_[j].is_identifier("volatile") || coherent_at(j)))
    j += coherent_at(j) ? 4 : 1;
  // `thread` pointers too: checked mode is the only caller.
  auto space = [](const Token& t) { return is_address_space(t) || t.is_identifier("thread"); };
  if (j >= t_.size() || !space(t_[j])) return std::string::npos;
  if (j != i && i > 0 && space(t_[i - 1])) return std::string::npos;
  int depth = 0;
  for (++j; j < t_.size(); ++j) {
    const Token& t = t_[j];
    // `device decltype(x)* p`: the type decltype names (its parentheses were read as the end of
    // the type, and the pointer stayed a plain one in checked mode before 2026-12-03).
    if (t.is("(") && t_[j - 1].is_identifier("decltype")) {
      j = matching(t_, j);
      continue;
    }
    if (t.is("<")) ++depth;
    else if (t.is(">")) --depth;
    else if (t.is(">>")) depth -= 2;
    else if (depth == 0 && t.is("*")) return j;
    else if (depth == 0 && (t.is("&") || t.is(";") || t.is(",") || t.is(")") || t.is("=") || t.is("{") ||
                            t.is("[") || t.is("(")))
      return std::string::npos;
    // `W<device float> w`: the space of a template's argument, which ends before any '*' (read
    // on past the '>' into the declarations after it before 2026-12-03).
    if (depth < 0) return std::string::npos;
  }
  return std::string::npos;
}

bool Translator::coherent_at(std::size_t j) const {
  return j + 3 < t_.size() && t_[j].is_identifier("coherent") && t_[j + 1].is("(") && t_[j + 3].is(")");
}

bool Translator::thread_pointer(std::size_t i, std::size_t star) const {
  for (std::size_t j = i; j < star; ++j)
    if (t_[j].is_identifier("thread")) return true;
  return false;
}

bool Translator::declares_variable(std::size_t star) const {
  std::size_t j = star + 1;
  while (j < t_.size() && t_[j].is_identifier("const")) ++j;
  return j + 1 < t_.size() && t_[j].kind == TokenKind::identifier && (t_[j + 1].is("=") || t_[j + 1].is(";"));
}

bool Translator::names_alias(std::size_t i, std::size_t star) const {
  std::size_t j = star + 1;
  while (j < t_.size() && t_[j].is_identifier("const")) ++j;
  return j < t_.size() && t_[j].is(";") && i >= 3 && t_[i - 1].is("=") && t_[i - 2].kind == TokenKind::identifier &&
         t_[i - 3].is_identifier("using");
}

bool Translator::returns_pointer(std::size_t i, std::size_t star) const {
  std::size_t j = star + 1;
  while (j < t_.size() && t_[j].is_identifier("const")) ++j;
  // `operator thread T*()`: a conversion's type, what the conversion returns.
  const bool conversion = i > 0 && t_[i - 1].is_identifier("operator") && j < t_.size() && t_[j].is("(");
  // `auto f(…) -> thread T*` (a lambda's too): a trailing return type.
  const bool trailing = i > 0 && t_[i - 1].is("->") && j < t_.size() && (t_[j].is("{") || t_[j].is(";"));
  if (!conversion && !trailing && (j >= t_.size() || declarator_parameters(t_, j) == std::string::npos)) return false;
  for (std::size_t k = i; k-- > 0;) {
    const Token& b = t_[k];
    if (b.is(";") || b.is("{") || b.is("}") || b.is(")") || b.is(":") || b.kind == TokenKind::directive) break;
    if (b.is_identifier("constexpr")) return false;
  }
  return true;
}

bool Translator::declares_pointer_reference(std::size_t star) const {
  std::size_t j = star + 1;
  while (j < t_.size() && t_[j].is_identifier("const")) ++j;
  if (j + 2 >= t_.size() || !t_[j].is("&") || t_[j + 1].kind != TokenKind::identifier) return false;
  const Token& after = t_[j + 2];
  return after.is("=") || after.is(";") || after.is(",") || after.is(")");
}

std::string Translator::element_text(std::size_t i, std::size_t star) const {
  std::vector<std::size_t> tokens;
  bool is_const = false, is_volatile = false;
  for (std::size_t j = i; j < star; ++j) {
    if (coherent_at(j)) {
      j += 3;
      continue;
    }
    if (t_[j].is_identifier("thread")) continue;
    if (is_address_space(t_[j])) {
      is_const = is_const || t_[j].is_identifier("constant");  // constant memory is read-only
      continue;
    }
    if (t_[j].is_identifier("const")) {
      is_const = true;
      continue;
    }
    if (t_[j].is_identifier("volatile")) {
      is_volatile = true;
      continue;
    }
    tokens.push_back(j);
  }
  return std::string(is_const ? "const " : "") + (is_volatile ? "volatile " : "") + type_text(t_, tokens, false);
}

bool Translator::emits_kernel(std::size_t i) const {
  return only_kernels_.empty() ||
         std::find(only_kernels_.begin(), only_kernels_.end(), kernels_[i].info.name) != only_kernels_.end();
}

// A left-out kernel's body still compiles when it stays in the unit (a non-template
// kernel's statements are checked even if nothing calls it): a Metal specialisation of
// another function never sees it. The body goes only when provably unused: its
// definition is `name ( ... ) {`, no kept kernel shares it, and `name` appears nowhere
// else but in instantiation declarations (which the translation leaves out).
std::vector<std::pair<std::size_t, std::size_t>> Translator::dropped_kernel_bodies() const {
  std::vector<std::pair<std::size_t, std::size_t>> dropped;
  if (only_kernels_.empty()) return dropped;
  std::set<std::size_t> kept, candidates;
  for (std::size_t i = 0; i < kernels_.size(); ++i) (emits_kernel(i) ? kept : candidates).insert(kernels_[i].body_open);
  // How often each identifier appears outside instantiation declarations, and the directives' text.
  std::vector<std::pair<std::size_t, std::size_t>> instantiations;
  for (const auto& k : kernels_)
    if (k.instantiation) instantiations.emplace_back(k.declaration_begin, k.declaration_end);
  std::sort(instantiations.begin(), instantiations.end());
  std::map<std::string, std::size_t> uses;
  std::string directives;
  auto range = instantiations.begin();
  for (std::size_t j = 0; j < t_.size(); ++j) {
    while (range != instantiations.end() && range->second < j) ++range;
    if (range != instantiations.end() && j >= range->first) continue;
    if (t_[j].kind == TokenKind::identifier) ++uses[t_[j].text];
    else if (t_[j].kind == TokenKind::directive) directives += t_[j].text + "\n";
  }
  for (std::size_t open : candidates) {
    if (kept.count(open) || open == 0 || open >= t_.size() || !t_[open].is("{") || !t_[open - 1].is(")")) continue;
    const std::size_t close = matching(t_, open);
    std::size_t paren = open - 1;  // back to the parameter list's '('
    for (int depth = 0; paren > 0; --paren) {
      if (t_[paren].is(")")) ++depth;
      else if (t_[paren].is("(") && --depth == 0) break;
    }
    if (close >= t_.size() || paren == 0 || t_[paren - 1].kind != TokenKind::identifier) continue;
    const std::string& name = t_[paren - 1].text;
    // Only its own definition names it; no macro may spell a call to it.
    if (uses[name] == 1 && directives.find(name) == std::string::npos) dropped.emplace_back(open, close);
  }
  return dropped;
}

void Translator::block_lambda_conversions() {
  for (std::size_t close : empty_lambda_introducers(t_)) text_before_[close] += kUnreadCapture;
}

}  // namespace metalcall::msl
