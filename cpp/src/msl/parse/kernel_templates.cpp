// Template kernels: their parameter lists and defaults, and the explicit instantiations
// (`template [[host_name("x")]] [[kernel]] void f<float>(...)`) that make them kernels.
#include "msl/parse/signature_walk.hpp"

#include <algorithm>
#include <cctype>

#include "metalcall/errors.hpp"
#include "msl/analysis/msl_rules.hpp"
#include "msl/lex/token_text.hpp"
#include "msl/parse/integer_expression.hpp"
#include "msl/parse/resource_params.hpp"
#include "msl/parse/template_deduction.hpp"

namespace metalcall::msl {

namespace {

// A template argument's token: kClosingAngle (the second '>' of a `>>`, `= Cfg<T, N>>`) is '>'.
// (Read as t[size_t(-1)] before 2026-12-05: a default argument ending in `>>` used in a kernel
// parameter's type, `device typename C::acc_t* y`, threw bad_alloc or length_error at random.)
const std::string& argument_token(const std::vector<Token>& t, std::size_t tok) {
  static const auto& closing = *new std::string(">");
  return tok == kClosingAngle ? closing : t[tok].text;
}

// `type` with each identifier that names a template parameter replaced by its argument's tokens.
std::string substitute_arguments(const std::string& type,
                                 const std::vector<std::pair<std::string, std::vector<std::size_t>>>& arguments,
                                 const std::vector<Token>& t) {
  std::string out;
  for (std::size_t i = 0; i < type.size();) {
    const char c = type[i];
    if (!(std::isalpha(static_cast<unsigned char>(c)) || c == '_')) {
      out += c;
      ++i;
      continue;
    }
    std::size_t j = i;
    while (j < type.size() && (std::isalnum(static_cast<unsigned char>(type[j])) || type[j] == '_')) ++j;
    const std::string word = type.substr(i, j - i);
    bool replaced = false;
    for (const auto& [name, tokens] : arguments) {
      if (name != word || replaced) continue;
      for (std::size_t tok : tokens) out += argument_token(t, tok);
      replaced = true;
    }
    if (!replaced) out += word;
    i = j;
  }
  return out;
}

}  // namespace

std::size_t SignatureParser::template_before(std::size_t start, bool* with_parameters) const {
  std::size_t b = start;
  while (b >= 2 && t_[b - 1].is("]") && t_[b - 2].is("]")) {
    int depth = 0;
    std::size_t open = b - 1;
    for (; open > 0; --open) {
      if (t_[open].is("]")) ++depth;
      else if (t_[open].is("[") && --depth == 0) break;
    }
    b = open;
  }
  if (b >= 1 && t_[b - 1].is_identifier("template")) {
    *with_parameters = false;
    return b - 1;
  }
  if (b >= 1 && (t_[b - 1].is(">") || t_[b - 1].is(">>"))) {  // `typename C = Less<T>>`
    int depth = 0;
    for (std::size_t j = b - 1; j > 0; --j) {
      if (t_[j].is(">")) ++depth;
      else if (t_[j].is(">>")) depth += 2;
      else if (t_[j].is("<") && --depth == 0) {
        if (t_[j - 1].is_identifier("template")) {
          *with_parameters = true;
          return j - 1;
        }
        break;
      }
    }
  }
  return std::string::npos;
}

std::vector<std::string> SignatureParser::template_parameter_names(std::size_t open) const {
  std::vector<std::string> names;
  int depth = 0, parens = 0;
  std::string last;
  bool defaulted = false, pointer_name = false;
  for (std::size_t j = open; j < t_.size(); ++j) {
    const Token& t = t_[j];
    if (t.is("(")) {
      ++parens;
    } else if (t.is(")")) {
      --parens;
    } else if (parens > 0) {
      if (depth == 1 && parens == 1 && !defaulted && !pointer_name && t.kind == TokenKind::identifier &&
          t_[j - 1].is("*")) {
        last = t.text;
        pointer_name = true;
      }
    } else if (t.is("<")) {
      if (depth++ == 0) continue;
    } else if (t.is(">") || t.is(">>")) {
      depth -= t.is(">") ? 1 : 2;
      if (depth <= 0) {
        if (!last.empty()) names.push_back(last);
        break;
      }
    } else if (depth == 1 && t.is(",")) {
      if (!last.empty()) names.push_back(last);
      last.clear();
      defaulted = pointer_name = false;
      continue;
    } else if (depth == 1 && t.is("=")) {
      defaulted = true;
    } else if (depth == 1 && !defaulted && !pointer_name && t.kind == TokenKind::identifier) {
      last = t.text;
    }
  }
  return names;
}

std::vector<std::vector<std::size_t>> SignatureParser::template_parameter_defaults(std::size_t open) const {
  std::vector<std::vector<std::size_t>> defaults(1);
  int depth = 0;
  bool defaulted = false;
  for (std::size_t j = open; j < t_.size(); ++j) {
    const Token& t = t_[j];
    if (t.is("<") || t.is("(")) {
      if (depth++ == 0) continue;
    } else if (t.is(">") || t.is(")") || t.is(">>")) {
      depth -= t.is(">>") ? 2 : 1;
      if (t.is(">>") && depth == 0 && defaulted) defaults.back().push_back(kClosingAngle);  // `= Less<T>>`
      if (depth <= 0) break;
    } else if (depth == 1 && t.is(",")) {
      defaults.emplace_back();
      defaulted = false;
      continue;
    } else if (depth == 1 && t.is("=")) {
      defaulted = true;
      continue;
    }
    if (defaulted) defaults.back().push_back(j);
  }
  return defaults;
}

std::vector<std::vector<std::size_t>> SignatureParser::explicit_arguments(std::size_t i, std::size_t* last) const {
  std::vector<std::vector<std::size_t>> args(1);
  int depth = 0;
  std::size_t j = i;
  for (; j < t_.size(); ++j) {
    const Token& t = t_[j];
    if (t.is("<") || t.is("(")) {
      if (depth++ == 0) continue;
    } else if (t.is(">") || t.is(")")) {
      if (--depth == 0) break;
    } else if (t.is(">>")) {
      depth -= 2;
      if (depth == 0) args.back().push_back(kClosingAngle);  // `f<vec<float, 2>>`
      if (depth <= 0) break;
    } else if (depth == 1 && t.is(",")) {
      args.emplace_back();
      continue;
    }
    args.back().push_back(j);
  }
  *last = j;
  if (args.size() == 1 && args[0].empty()) args.clear();  // f<>
  return args;
}

bool SignatureParser::fill_defaults(const ParsedKernel& tmpl, std::vector<std::vector<std::size_t>>& args, std::string* why) const {
  const auto& names = template_names_.at(tmpl.keyword_token);
  const auto defaults = template_defaults_.find(tmpl.keyword_token);
  while (defaults != template_defaults_.end() && args.size() < names.size() && args.size() < defaults->second.size() &&
         !defaults->second[args.size()].empty()) {
    std::vector<std::size_t> filled;
    for (std::size_t d : defaults->second[args.size()]) {
      std::size_t earlier = 0;
      while (d != kClosingAngle && earlier < args.size() && !t_[d].is_identifier(names[earlier].c_str())) ++earlier;
      if (d != kClosingAngle && earlier < args.size()) filled.insert(filled.end(), args[earlier].begin(), args[earlier].end());
      else filled.push_back(d);
    }
    args.push_back(std::move(filled));
  }
  if (args.size() == names.size()) return true;
  *why = "'" + tmpl.function_name + "' takes " + std::to_string(names.size()) + " template argument(s), " +
         std::to_string(args.size()) + " given";
  return false;
}

bool SignatureParser::deduce(const ParsedKernel& tmpl, std::size_t open, std::vector<std::vector<std::size_t>>& args,
            std::string* why) const {
  std::vector<std::vector<std::size_t>> pattern, deduced;
  for (const auto& p : tmpl.params) pattern.push_back(p.spelled_tokens.empty() ? p.type_tokens : p.spelled_tokens);
  const auto& names = template_names_.at(tmpl.keyword_token);
  if (!deduce_template_arguments(t_, pattern, parameter_types(t_, open), names, deduced)) {
    *why = "the parameters of this instantiation do not match those of the template kernel '" + tmpl.function_name + "'";
    return false;
  }
  args.clear();
  for (auto& d : deduced) {
    if (d.empty()) break;
    args.push_back(std::move(d));
  }
  return true;
}

SignatureParser::Kind SignatureParser::parse_instantiation(std::size_t template_token, std::size_t i, ParsedKernel& k) {
  const auto [first, last] = templates_.equal_range(k.function_name);
  if (first == last) {
    fail(k.name_token, "'" + k.function_name + "' is not a template kernel defined above this instantiation");
  }
  if (i >= t_.size() || !(t_[i].is("<") || t_[i].is("("))) fail(i, "expected the template arguments of '" + k.function_name + "'");
  std::size_t j = i;
  const bool deduced = t_[i].is("(");
  const std::vector<std::vector<std::size_t>> given = deduced ? std::vector<std::vector<std::size_t>>{} : explicit_arguments(i, &j);
  // The first template of that name (in source order) whose parameters the arguments fit.
  const ParsedKernel* found = nullptr;
  std::vector<std::vector<std::size_t>> args;
  std::string problem;
  for (auto it = first; it != last && !found; ++it) {
    std::string why;
    args = given;
    bool fits = !deduced || deduce(it->second, i, args, &why);
    const std::size_t written = args.size();
    fits = fits && fill_defaults(it->second, args, &why);
    if (fits) {
      found = &it->second;
      k.explicit_arguments = written;
    } else if (problem.empty()) {
      problem = why;
    }
  }
  if (!found) fail(i, problem);
  const ParsedKernel& tmpl = *found;
  const auto& names = template_names_.at(tmpl.keyword_token);
  const std::size_t end = [&] {
    for (std::size_t e = j; e < t_.size(); ++e)
      if (t_[e].is(";")) return e;
    fail(j, "expected ';' after the template instantiation");
  }();
  k.instantiation = true;
  k.declaration_begin = template_token;
  k.declaration_end = end;
  k.body_open = tmpl.body_open;
  k.body_close = tmpl.body_close;
  for (std::size_t a = 0; a < names.size(); ++a) k.template_arguments.emplace_back(names[a], args[a]);
  if (k.info.name == k.function_name) {
    fail(k.name_token, "a template kernel instantiation needs [[host_name(\"name\")]] to be callable");
  }
  // The template's parameters with its arguments substituted.
  k.params = tmpl.params;
  k.info.params.clear();
  for (auto& p : k.params) {
    std::string type_name;
    for (const auto& [name, tokens] : k.template_arguments) {
      if (p.info.type_name != name) continue;
      for (std::size_t t : tokens) type_name += (type_name.empty() ? "" : " ") + argument_token(t_, t);
    }
    if (!type_name.empty()) {
      p.info.type_name = type_name;
      // Through the source's aliases and enums, as a parameter spelled with the argument's type is.
      const std::string underlying = p.info.kind == ParamKind::builtin ? "" : enum_underlying(type_name);
      classify_element_type(underlying.empty() ? resolve_alias(type_name) : underlying, &p.info.scalar,
                            &p.info.vector_width);
      p.info.matrix_scalar = matrix_component(resolve_alias(type_name));
    } else if (p.info.scalar == ScalarType::unknown && p.info.kind != ParamKind::texture) {
      // A parameter inside the type (`device const vec<T, 4>*`): its element type once the
      // arguments replace it, so that a float array bound for vec<half, 4> is refused.
      const std::string resolved = resolve_alias(substitute_arguments(p.info.type_name, k.template_arguments, t_));
      classify_element_type(resolved, &p.info.scalar, &p.info.vector_width);
      p.info.matrix_scalar = matrix_component(resolved);  // `constant matrix<T, 4, 4>&`
    }
    k.info.params.push_back(p.info);
  }
  if (!k.info.declared_max_threads) k.info.declared_max_threads = tmpl.info.declared_max_threads;
  // MLX's `max_total_threads_per_threadgroup(WM * WN * 32)`: the limit of these arguments
  // (left out before 2026-12-05, so the automatic threadgroup could exceed it).
  if (!k.info.declared_max_threads && !tmpl.max_threads_text.empty())
    k.info.declared_max_threads = resolve_max_threads(substitute_arguments(tmpl.max_threads_text, k.template_arguments, t_));
  return Kind::instantiation;
}

}  // namespace metalcall::msl
