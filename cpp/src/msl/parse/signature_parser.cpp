// The kernel-signature parser (reflection): kernels, their parameter tables and the
// function constants of a token stream, with the token positions the translator needs.
// The parser's state is in signature_walk.hpp; template kernels and one parameter's
// declaration are parsed in kernel_templates.cpp and kernel_params.cpp.
#include "msl/parse/signature_parser.hpp"
#include "msl/parse/signature_walk.hpp"
#include "msl/parse/resource_params.hpp"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>

#include "metalcall/errors.hpp"
#include "msl/analysis/msl_rules.hpp"
#include "msl/parse/integer_expression.hpp"
#include "msl/parse/template_deduction.hpp"
#include "msl/lex/token_text.hpp"

namespace metalcall::msl {

namespace {

// The scope a `{` opens, when a namespace or a class opens it: `lo` for `namespace lo {`, `a::b`
// for `namespace a::b {`, `S` for `struct alignas(16) S : Base {`; empty for other blocks.
std::string scope_opened(const std::vector<Token>& t, std::size_t open) {
  auto opens_scope = [](const Token& k) {
    return k.is_identifier("namespace") || k.is_identifier("struct") || k.is_identifier("class") ||
           k.is_identifier("union");
  };
  std::size_t kw = open;
  for (std::size_t back = 0; kw > 0 && back < 64; ++back) {
    const Token& k = t[--kw];
    if (k.is(";") || k.is("{") || k.is("}")) return {};
    if (opens_scope(k)) break;
  }
  if (kw == open || !opens_scope(t[kw]) || kw + 1 >= open) return {};
  std::string name;
  if (t[kw].is_identifier("namespace")) {
    for (std::size_t k = kw + 1; k < open; ++k) name += t[k].text;
    return name;
  }
  int depth = 0;  // inside alignas(...), [[...]] or <...>
  for (std::size_t k = kw + 1; k < open; ++k) {
    const Token& x = t[k];
    if (x.is("(") || x.is("[") || x.is("<")) ++depth;
    else if (x.is(")") || x.is("]") || x.is(">")) --depth;
    else if (depth == 0 && x.is(":")) break;  // the base classes
    else if (depth == 0 && x.kind == TokenKind::identifier && x.text != "final" && x.text != "alignas") name = x.text;
  }
  return name;
}

}  // namespace

void SignatureParser::collect_aliases() {
  // The namespaces and classes open at each token, with the brace depth each closes at, so that
  // an alias is also kept by its qualified name (`lo::real`), which names one declaration.
  std::vector<std::pair<std::string, int>> scopes;
  int depth = 0;
  auto record = [this](const std::string& key, const std::string& target) {
    const auto [it, added] = aliases_.emplace(key, target);
    if (!added && it->second != target) it->second = kAmbiguousAlias;
  };
  for (std::size_t i = 0; i < t_.size(); ++i) {
    if (t_[i].is("{")) {
      ++depth;
      std::string scope = scope_opened(t_, i);
      if (!scope.empty()) scopes.emplace_back(std::move(scope), depth);
      continue;
    }
    if (t_[i].is("}")) {
      if (!scopes.empty() && scopes.back().second == depth) scopes.pop_back();
      --depth;
      continue;
    }
    if (i + 2 >= t_.size()) continue;
    std::string name, target;
    std::size_t j = i;
    if (t_[i].is_identifier("typedef")) {
      for (j = i + 1; j < t_.size() && !t_[j].is(";"); ++j) {}
      if (j >= t_.size() || j < i + 3 || t_[j - 1].kind != TokenKind::identifier) continue;
      name = t_[j - 1].text;
      for (std::size_t k = i + 1; k + 1 < j; ++k) target += (target.empty() ? "" : " ") + t_[k].text;
    } else if (t_[i].is_identifier("using") && t_[i + 1].kind == TokenKind::identifier && t_[i + 2].is("=")) {
      name = t_[i + 1].text;
      for (j = i + 3; j < t_.size() && !t_[j].is(";"); ++j) target += (target.empty() ? "" : " ") + t_[j].text;
    } else {
      continue;
    }
    // A pointer or reference type's tokens, for kernel parameters declared with the alias.
    {
      const bool is_typedef = t_[i].is_identifier("typedef");
      const std::size_t from = is_typedef ? i + 1 : i + 3, to = is_typedef ? j - 1 : j;
      bool indirect = false;
      for (std::size_t k = from; k < to; ++k) indirect = indirect || t_[k].is("*") || t_[k].is("&");
      if (indirect) {
        IndirectAlias alias;
        for (std::size_t k = from; k < to; ++k) alias.target.push_back(k);
        if (!is_typedef && i >= 2 && t_[i - 1].is(">")) {  // `template <class T> using cref = constant T&;`
          std::size_t open = i - 1;
          for (int d = 0; open > 0; --open) {
            if (t_[open].is(">")) ++d;
            else if (t_[open].is("<") && --d == 0) break;
          }
          if (open > 0 && t_[open - 1].is_identifier("template")) alias.parameters = template_parameter_names(open);
        }
        const auto [it, added] = indirect_aliases_.emplace(name, alias);
        if (!added) it->second.target.clear();  // declared twice: left as written
      }
    }
    for (const char* prefix : {"metal :: ", "const "})
      if (target.rfind(prefix, 0) == 0) target = target.substr(std::string(prefix).size());
    // The bare name is C++'s scopes aside (a namespace's, a struct's, a function's, a using-
    // directive): one two declarations give different types stays unresolved, an unknown type,
    // rather than the last one's. `namespace lo { typedef half real; }` with a struct's `typedef
    // float real;` packed 1.5 for `constant real& x` as a float's 4 bytes into a half, which read 0.
    record(name, target);
    if (scopes.empty()) continue;
    std::string qualified;
    for (const auto& scope : scopes) qualified += scope.first + "::";
    record(qualified + name, target);
  }
}

bool SignatureParser::expand_indirect_alias(std::vector<std::size_t>& type) const {
  for (std::size_t n = 0; n < type.size(); ++n) {
    if (t_[type[n]].kind != TokenKind::identifier) continue;
    const auto found = indirect_aliases_.find(t_[type[n]].text);
    if (found == indirect_aliases_.end() || found->second.target.empty()) continue;
    const IndirectAlias& alias = found->second;
    // Its template arguments, `cref<float>`: one token list each.
    std::vector<std::vector<std::size_t>> args;
    std::size_t end = n + 1;
    if (!alias.parameters.empty()) {
      if (end >= type.size() || !t_[type[end]].is("<")) return false;
      int depth = 0;
      args.emplace_back();
      for (; end < type.size(); ++end) {
        const Token& k = t_[type[end]];
        if (k.is("<") && depth++ == 0) continue;
        if (k.is(">") && --depth == 0) break;
        if (k.is(">>") && (depth -= 2) <= 0) return false;  // `cref<W<float>>`: not read here
        if (depth == 1 && k.is(",")) args.emplace_back();
        else args.back().push_back(type[end]);
      }
      if (end >= type.size() || args.size() != alias.parameters.size()) return false;
      ++end;
    }
    std::vector<std::size_t> expanded;
    for (std::size_t k : alias.target) {
      std::size_t p = 0;
      while (p < alias.parameters.size() && !t_[k].is_identifier(alias.parameters[p].c_str())) ++p;
      if (p < alias.parameters.size()) expanded.insert(expanded.end(), args[p].begin(), args[p].end());
      else expanded.push_back(k);
    }
    // `lo::P`, `::P`: the scope's names go with the alias; a template's member
    // (`typename W<T>::P`) may be another type for each T: left as written.
    std::size_t first = n;
    while (first >= 2 && t_[type[first - 1]].is("::") && t_[type[first - 2]].kind == TokenKind::identifier) first -= 2;
    if (first >= 1 && t_[type[first - 1]].is("::")) {
      if (first != 1) continue;
      first = 0;
    }
    std::vector<std::size_t> out(type.begin(), type.begin() + first);
    out.insert(out.end(), expanded.begin(), expanded.end());
    out.insert(out.end(), type.begin() + end, type.end());
    type = std::move(out);
    return true;
  }
  return false;
}

std::string SignatureParser::resolve_alias(std::string type) const {
  if (type.rfind("::", 0) == 0) type = type.substr(2);  // `::lo::real`
  for (int hops = 0; hops < 16; ++hops) {
    auto it = aliases_.find(type);
    // `Outer::real` where the source does not say `Outer` is a scope (a template's member, a base
    // class's): the alias `real`, where only one declaration names it.
    const std::size_t colons = type.rfind("::");
    if (it == aliases_.end() && colons != std::string::npos) it = aliases_.find(type.substr(colons + 2));
    if (it == aliases_.end() || it->second == kAmbiguousAlias) break;
    type = it->second;
  }
  return type;
}

ParsedSource SignatureParser::run() {
  collect_aliases();
  collect_enums();
  ParsedSource out;
  for (std::size_t i = 0; i < t_.size(); ++i) {
    if (!starts_kernel(i)) continue;
    out.kernel_keywords.push_back(i);
    ParsedKernel k;
    switch (parse_kernel(i, k)) {
      case Kind::definition:
        out.kernels.push_back(std::move(k));
        i = out.kernels.back().body_close;
        break;
      case Kind::template_definition:
        i = k.body_close;
        templates_.emplace(k.function_name, std::move(k));
        break;
      case Kind::instantiation:
        i = k.declaration_end;
        out.kernels.push_back(std::move(k));
        break;
    }
  }
  // MSL: kernel names in a library are unique, and a kernel's name is its unqualified one
  // (Metal's host API finds one declared in a namespace by that name alone).
  std::set<std::string> seen;
  for (const auto& k : out.kernels) {
    if (!seen.insert(k.info.name).second)
      throw error_at(src_, t_[k.name_token],
                     "redefinition of kernel '" + k.info.name +
                         "' (a library's functions are named without their namespace, so kernels in two "
                         "namespaces need two names)");
  }
  out.function_constants = parse_function_constants();
  return out;
}

bool SignatureParser::member_access(std::size_t i) const {
  return i > 0 && (t_[i - 1].is(".") || t_[i - 1].is("->") || t_[i - 1].is("::"));
}

bool SignatureParser::starts_kernel(std::size_t i) const {
  if (t_[i].is_identifier("kernel") && !member_access(i)) return !(i > 0 && t_[i - 1].is("["));
  return i + 4 < t_.size() && t_[i].is("[") && t_[i + 1].is("[") && t_[i + 2].is_identifier("kernel") &&
         (t_[i + 3].is("]") || t_[i + 3].is(","));
}

std::size_t SignatureParser::matching(std::size_t open, const char* open_text, const char* close_text) const {
  int depth = 0;
  for (std::size_t i = open; i < t_.size(); ++i) {
    if (t_[i].is(open_text)) ++depth;
    else if (t_[i].is(close_text) && --depth == 0) return i;
  }
  fail(open, std::string("no matching '") + close_text + "'");
}

std::size_t SignatureParser::parse_attributes(std::size_t i, std::vector<Attribute>& out) const {
  const std::size_t close = matching(i, "[", "]");
  if (close == 0 || !t_[close - 1].is("]")) fail(i, "malformed attribute");
  std::size_t j = i + 2;
  while (j < close - 1) {
    if (t_[j].is(",")) {
      ++j;
      continue;
    }
    Attribute a;
    a.token = j;
    // Namespaced attributes (gnu::x) keep their full name.
    while (j < close - 1 && !t_[j].is("(") && !t_[j].is(",")) a.name += t_[j++].text;
    if (j < close - 1 && t_[j].is("(")) {
      const std::size_t end = matching(j, "(", ")");
      std::string arg;
      for (std::size_t k = j + 1; k < end; ++k) {
        if (t_[k].is(",")) {
          a.args.push_back(arg);
          arg.clear();
        } else {
          arg += t_[k].text;
        }
      }
      a.args.push_back(arg);
      j = end + 1;
    }
    out.push_back(std::move(a));
  }
  return close + 1;
}

int SignatureParser::integer_argument(const Attribute& a) const {
  long value = 0;
  if (a.args.size() != 1 || !integer_expression(a.args[0], value) || value < 0 || value > 999999999) {
    fail(a.token, "[[" + a.name + "(...)]] needs an integer literal index");
  }
  return static_cast<int>(value);
}

int SignatureParser::max_threads_argument(const Attribute& a) const {
  long value = 0;
  return a.args.size() == 1 && integer_expression(a.args[0], value) ? integer_argument(a) : 0;
}

void SignatureParser::note_max_threads(const Attribute& a, ParsedKernel& k) const {
  k.info.declared_max_threads = max_threads_argument(a);
  k.max_threads_text = !k.info.declared_max_threads && a.args.size() == 1 ? a.args[0] : std::string();
}

int SignatureParser::resolve_max_threads(const std::string& text, int depth) const {
  long value = 0;
  if (integer_expression(text, value)) return value > 0 && value <= 999999999 ? static_cast<int>(value) : 0;
  if (depth > 8) return 0;
  std::string out;
  for (std::size_t i = 0; i < text.size();) {
    const char c = text[i];
    if (!(std::isalpha(static_cast<unsigned char>(c)) || c == '_')) {
      out += c;
      ++i;
      continue;
    }
    std::size_t j = i;
    while (j < text.size() && (std::isalnum(static_cast<unsigned char>(text[j])) || text[j] == '_')) ++j;
    const std::string word = text.substr(i, j - i);
    const bool suffix = i > 0 && std::isdigit(static_cast<unsigned char>(text[i - 1]));  // `32u`
    i = j;
    if (suffix) {
      out += word;
      continue;
    }
    if (text.compare(i, 2, "::") == 0) {  // `Cfg::threads`: the member's own declaration decides
      i += 2;
      continue;
    }
    // The one declaration `... constexpr/constant ... word = init;` of the source (two: unknown).
    std::string init;
    int found = 0;
    for (std::size_t k = 1; k + 1 < t_.size(); ++k) {
      if (!t_[k].is_identifier(word.c_str()) || !t_[k + 1].is("=")) continue;
      bool constant = false;
      std::size_t b = k;
      while (b > 0 && !t_[b - 1].is(";") && !t_[b - 1].is("{") && !t_[b - 1].is("}") && !t_[b - 1].is("(") &&
             !t_[b - 1].is(",")) {
        --b;
        constant = constant || t_[b].is_identifier("constexpr") || t_[b].is_identifier("constant");
      }
      if (!constant) continue;
      std::string here;
      for (std::size_t e = k + 2; e < t_.size() && !t_[e].is(";") && !t_[e].is(","); ++e) here += t_[e].text;
      if (found && here != init) return 0;
      init = here;
      found = 1;
    }
    if (!found) return 0;
    const int v = resolve_max_threads(init, depth + 1);
    if (!v) return 0;
    out += "(" + std::to_string(v) + ")";
  }
  return resolve_max_threads(out, depth + 1);
}

std::string SignatureParser::unquote(const std::string& s) {
  if (s.size() < 2 || s.front() != '"' || s.back() != '"') return s;
  std::string out;
  bool inside = false;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '"') inside = !inside;
    else if (inside && s[i] == '\\' && i + 1 < s.size()) out += s[++i];
    else if (inside) out += s[i];
  }
  return out;
}

SignatureParser::Kind SignatureParser::parse_kernel(std::size_t start, ParsedKernel& k) {
  k.keyword_token = start;
  std::size_t i = start;
  std::vector<Attribute> attrs;
  // Attributes written before the kernel keyword belong to the function.
  for (std::size_t b = start; b >= 2 && t_[b - 1].is("]") && t_[b - 2].is("]");) {
    int depth = 0;
    std::size_t open = b - 1;
    for (; open > 0; --open) {
      if (t_[open].is("]")) ++depth;
      else if (t_[open].is("[") && --depth == 0) break;
    }
    parse_attributes(open, attrs);
    if (open == 0) break;
    b = open;
  }
  bool template_parameters = false;
  const std::size_t template_token = template_before(start, &template_parameters);
  if (t_[i].is("[")) i = parse_attributes(i, attrs);
  else ++i;
  while (i < t_.size() && t_[i].is("[")) i = parse_attributes(i, attrs);
  // MLX's spelling of an instantiation: `template [[host_name("x")]] [[kernel]]
  // decltype(f<float>) f<float>;` — the type comes from the template itself.
  const bool decltype_instantiation = template_token != std::string::npos && !template_parameters &&
                                      i < t_.size() && t_[i].is_identifier("decltype");
  // ggml's: `template [[host_name("x")]] kernel kernel_unary_t kernel_unary_impl<float>;`,
  // the function type a typedef of decltype(...).
  const bool typedef_instantiation = template_token != std::string::npos && !template_parameters &&
                                     i + 1 < t_.size() && t_[i].kind == TokenKind::identifier &&
                                     !t_[i].is_identifier("void") && t_[i + 1].kind == TokenKind::identifier;
  if (decltype_instantiation) {
    if (i + 1 >= t_.size() || !t_[i + 1].is("(")) fail(i, "expected decltype(...)");
    i = matching(i + 1, "(", ")") + 1;
  } else if (typedef_instantiation) {
    ++i;
  } else {
    if (i >= t_.size() || !t_[i].is_identifier("void")) fail(i, "a kernel function must return void");
    ++i;
  }
  while (i < t_.size() && t_[i].is("[")) i = parse_attributes(i, attrs);
  if (i >= t_.size() || t_[i].kind != TokenKind::identifier) fail(i, "expected the kernel's name");
  k.name_token = i;
  k.function_name = t_[i].text;
  k.info.name = t_[i].text;
  k.info.line = t_[i].line;
  ++i;
  for (const auto& a : attrs) {
    if (a.name == "max_total_threads_per_threadgroup") note_max_threads(a, k);
    if (a.name == "host_name") {
      if (a.args.size() != 1 || unquote(a.args[0]).empty()) fail(a.token, "[[host_name(\"name\")]] needs a name");
      k.info.name = unquote(a.args[0]);
    }
  }

  if (template_token != std::string::npos && !template_parameters) {
    return parse_instantiation(template_token, i, k);
  }
  if (i >= t_.size() || !t_[i].is("(")) fail(i, "expected '(' after the kernel's name");
  const std::size_t close = matching(i, "(", ")");
  std::vector<std::string> template_names;
  if (template_parameters) {
    template_names = template_parameter_names(template_token + 1);
    template_defaults_[start] = template_parameter_defaults(template_token + 1);
  }
  parse_params(i + 1, close, k, template_names);
  i = close + 1;
  while (i < t_.size() && !t_[i].is("{") && !t_[i].is(";")) {
    if (t_[i].is("[")) i = parse_attributes(i, attrs);
    else ++i;
  }
  if (i >= t_.size() || t_[i].is(";")) fail(k.name_token, "kernel '" + k.info.name + "' is declared but not defined");
  k.body_open = i;
  k.body_close = matching(i, "{", "}");
  for (const auto& a : attrs)
    if (a.name == "max_total_threads_per_threadgroup") note_max_threads(a, k);
  // A named constant's value is known now; a template parameter's only per instantiation.
  if (!k.info.declared_max_threads && !k.max_threads_text.empty() && !template_parameters)
    k.info.declared_max_threads = resolve_max_threads(k.max_threads_text);
  return template_parameters ? Kind::template_definition : Kind::definition;
}

std::vector<FunctionConstantDecl> SignatureParser::parse_function_constants() const {
  std::vector<FunctionConstantDecl> out;
  std::set<int> indices;
  int parens = 0;
  for (std::size_t i = 0; i + 2 < t_.size(); ++i) {
    if (t_[i].is("(")) ++parens;
    else if (t_[i].is(")")) --parens;
    if (!(t_[i].is("[") && t_[i + 1].is("[") && t_[i + 2].is_identifier("function_constant"))) continue;
    // Inside a parameter list the attribute names the bool constant that decides whether the
    // parameter exists (`const device bool* mask [[function_constant(has_mask)]]`), a use.
    if (parens > 0) continue;
    std::vector<Attribute> attrs;
    parse_attributes(i, attrs);
    FunctionConstantDecl c;
    c.attribute_token = i;
    c.index = integer_argument(attrs.front());
    if (i == 0 || t_[i - 1].kind != TokenKind::identifier) fail(i, "[[function_constant]] must follow a constant's name");
    c.name = t_[i - 1].text;
    std::size_t j = i - 1;
    while (j > 0 && !t_[j].is_identifier("constant") && !t_[j].is(";") && !t_[j].is("}") && !t_[j].is("{")) --j;
    if (!t_[j].is_identifier("constant")) fail(i - 1, "a function constant is declared `constant T name [[function_constant(i)]];`");
    c.constant_token = j;
    std::string type_name;
    for (std::size_t k = j + 1; k + 1 < i; ++k) {
      if (t_[k].is_identifier("const") || t_[k].is_identifier("constexpr")) continue;  // MLX: `static constant constexpr const`
      c.type_tokens.push_back(k);
      type_name += (type_name.empty() ? "" : " ") + t_[k].text;
    }
    c.type_name = type_name;
    // Through aliases, as a parameter's type (`typedef half real_t;`, `lo::real`): Metal takes them.
    std::string spelled;
    for (std::size_t k : c.type_tokens) spelled += (spelled.empty() || t_[k].kind != TokenKind::identifier ||
                                                    spelled.back() == ':' ? "" : " ") + t_[k].text;
    if (spelled.rfind("metal::", 0) == 0) spelled = spelled.substr(7);
    const std::string resolved = resolve_alias(spelled);
    classify_type(resolved, &c.scalar, &c.vector_width);
    // MSL's function constants are scalars or vectors (ushort2, float4, bool3 ...); a packed
    // vector is a storage layout, which MTLDataType has no constant type for.
    if (c.scalar == ScalarType::unknown || resolved.rfind("packed_", 0) == 0) {
      fail(i - 1, "function constant '" + c.name + "' must have a scalar or vector type (bool, int, uint, float, "
                  "half, …, or a vector of them such as ushort2 or float4)");
    }
    if (!indices.insert(c.index).second) fail(i, "function constant index " + std::to_string(c.index) + " is used twice");
    out.push_back(std::move(c));
  }
  return out;
}

void SignatureParser::assign_implicit_indices(ParsedKernel& k) {
  for (const auto& p : k.params) k.info.params.push_back(p.info);
  for (const auto& p : k.info.params)
    if (p.binding == kDeferredBinding) return;
  try {
    finalize_bindings(k.info);
  } catch (const CompileError&) {
    for (const auto& p : k.params) {
      for (const auto& q : k.params) {
        if (&p != &q && p.info.binding >= 0 && p.info.binding == q.info.binding &&
            binding_table(p.info.kind) == binding_table(q.info.kind) &&
            p.info.kind != ParamKind::builtin && q.info.kind != ParamKind::builtin)
          fail(q.name_token, std::string("index ") + std::to_string(q.info.binding) + " is bound twice in kernel '" +
                                 k.info.name + "'");
      }
    }
    throw;
  }
  for (std::size_t i = 0; i < k.params.size(); ++i) k.params[i].info.binding = k.info.params[i].binding;
}

void finalize_bindings(KernelInfo& kernel) {
  std::set<int> used_tables[4];
  for (const auto& p : kernel.params) {
    if (p.binding < 0 || p.kind == ParamKind::builtin) continue;
    auto& used = used_tables[binding_table(p.kind)];
    // An array of N textures takes N indices.
    for (int i = 0; i < std::max(1, p.texture_count); ++i) {
      if (!used.insert(p.binding + i).second) {
        throw CompileError("source.metal:" + std::to_string(p.line) + ":" + std::to_string(p.column) + ": error: index " +
                               std::to_string(p.binding + i) + " is bound twice in kernel '" + kernel.name + "'",
                           "", p.line, p.column);
      }
    }
  }
  for (auto& p : kernel.params) {
    if (p.binding >= 0 || p.kind == ParamKind::builtin) continue;
    auto& used = used_tables[binding_table(p.kind)];
    const int count = std::max(1, p.texture_count);
    int next = 0;
    auto free_from = [&](int first) {
      for (int i = 0; i < count; ++i)
        if (used.count(first + i)) return false;
      return true;
    };
    while (!free_from(next)) ++next;
    p.binding = next;
    for (int i = 0; i < count; ++i) used.insert(next + i);
  }
  // Metal's argument tables (msl_rules.hpp): an index given by an expression, or given
  // implicitly to the 32nd buffer, is checked here once it is known.
  // Each kind against its own table (textures and samplers were held to the buffers' 31 entries
  // until session 23, so [[texture(31)]] was refused); an array of N textures takes N indices.
  for (const auto& p : kernel.params) {
    if (p.kind == ParamKind::builtin) continue;
    int limit = kMaxBufferIndex;
    const char* table = "buffer";
    if (p.kind == ParamKind::threadgroup_memory) limit = kMaxThreadgroupIndex, table = "threadgroup memory";
    else if (p.kind == ParamKind::texture) limit = kMaxTextureIndex, table = "texture";
    else if (p.kind == ParamKind::sampler) limit = kMaxSamplerIndex, table = "sampler";
    const int last = p.binding + std::max(1, p.texture_count) - 1;
    if (last > limit) {
      throw CompileError("source.metal:" + std::to_string(p.line) + ":" + std::to_string(p.column) + ": error: '" +
                             p.name + "' is bound to index " + std::to_string(last) + ", but Metal's " + table +
                             " argument table has indices 0 to " + std::to_string(limit) +
                             " [MSL rule: argument indices within Metal's limits]",
                         "", p.line, p.column);
    }
  }
}

namespace {

// MSL's template spelling of a vector, `vec<float, 4>` or `packed_vec<half, 2>` (metal:: before
// either name or the component is dropped): its component and width, as `float4` gives them.
// Without it such parameters had no element type, and a float64 or int32 array bound to
// `device const vec<float, 4>*` was reinterpreted silently.
bool classify_template_vector(const std::string& type_name, ScalarType* scalar, int* vector_width) {
  std::string s;
  for (char c : type_name)
    if (c != ' ') s += c;
  for (const char* prefix : {"metal::", "packed_", "metal::"})
    if (s.rfind(prefix, 0) == 0) s = s.substr(std::string(prefix).size());
  if (s.rfind("vec<", 0) != 0 || s.back() != '>') return false;  // rfind: s is not empty
  const std::size_t comma = s.rfind(',');
  if (comma == std::string::npos || comma + 3 != s.size() || s[comma + 1] < '2' || s[comma + 1] > '4') return false;
  std::string component = s.substr(4, comma - 4);
  if (component.rfind("metal::", 0) == 0) component = component.substr(7);
  const ScalarType c = scalar_type_from_name(component);
  if (c == ScalarType::unknown) return false;
  *scalar = c;
  *vector_width = s[comma + 1] - '0';
  return true;
}

// MSL's atomic types, `atomic_uint` or `atomic<uint>` (metal:: before either name or the value type
// dropped): the value type they hold, so that an array bound to `device atomic_uint*` is checked as
// one bound to `device uint*` is. Without it a float32 or int64 array bound to a histogram's
// counters was reinterpreted silently.
ScalarType atomic_value_type(const std::string& type_name) {
  std::string s = type_name;
  if (s.rfind("metal::", 0) == 0) s = s.substr(7);
  if (s.rfind("atomic_", 0) == 0) return scalar_type_from_name(s.substr(7));
  if (s.rfind("atomic", 0) != 0) return ScalarType::unknown;
  std::size_t open = 6;
  while (open < s.size() && s[open] == ' ') ++open;
  if (open >= s.size() || s[open] != '<' || s.back() != '>') return ScalarType::unknown;
  std::string inner = s.substr(open + 1, s.size() - open - 2);
  while (!inner.empty() && inner.front() == ' ') inner.erase(inner.begin());
  while (!inner.empty() && inner.back() == ' ') inner.pop_back();
  if (inner.rfind("metal::", 0) == 0) inner = inner.substr(7);
  return scalar_type_from_name(inner);
}

}  // namespace

void classify_type(const std::string& type_name, ScalarType* scalar, int* vector_width) {
  std::string base = type_name;
  // The other spellings of MSL's vector types: `vec<uint, 3>` (`vec<uint,3>` here) and <simd/simd.h>'s
  // simd_uint3 / vector_uint3, one type with uint3 in MSL.
  if (base.rfind("vec<", 0) == 0) {
    std::string v;  // the reflection joins tokens with spaces before names: `vec< uint,3>`
    for (char c : base)
      if (c != ' ') v += c;
    if (v.size() > 7 && v.back() == '>' && v[v.size() - 3] == ',' && v[v.size() - 2] >= '2' && v[v.size() - 2] <= '4')
      base = v.substr(4, v.size() - 7) + v[v.size() - 2];
  }
  for (const char* prefix : {"simd_", "vector_"})
    if (base.rfind(prefix, 0) == 0 && !base.empty() && base.back() >= '2' && base.back() <= '4')
      base = base.substr(std::string(prefix).size());
  if (base.rfind("packed_", 0) == 0) base = base.substr(7);
  *vector_width = 1;
  *scalar = scalar_type_from_name(base);
  if (*scalar == ScalarType::unknown && classify_template_vector(type_name, scalar, vector_width)) return;
  if (*scalar == ScalarType::unknown && !base.empty() && base.back() >= '2' && base.back() <= '4') {
    *scalar = scalar_type_from_name(base.substr(0, base.size() - 1));
    if (*scalar != ScalarType::unknown) *vector_width = base.back() - '0';
  }
}

void classify_element_type(const std::string& type_name, ScalarType* scalar, int* vector_width) {
  const ScalarType atomic = atomic_value_type(type_name);
  if (atomic == ScalarType::unknown) return classify_type(type_name, scalar, vector_width);
  *scalar = atomic;
  *vector_width = 1;
}

ParsedSource parse_source(const std::vector<Token>& tokens, const std::string& source) {
  return SignatureParser(tokens, source).run();
}

}  // namespace metalcall::msl
